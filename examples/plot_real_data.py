"""
One call on real data: ``rffkern.fit``
======================================

:func:`rffkern.fit` takes raw ``X`` and ``y``, decides the task from ``y``, fits a tuned kernel
ridge machine (:class:`~rffkern.RFFRidge`: width and penalty by exact leave-one-out) and an
RFFNet started from that kernel, and returns the better of the two on a held-out 20%
(see :doc:`/user_guide/choosing`). Here on scikit-learn's bundled diabetes data (442 patients,
10 measurements, disease progression after one year), compared with a scikit-learn kernel
pipeline of the same family, ``StandardScaler + Nystroem + RidgeCV``.
"""
import time

import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_diabetes
from sklearn.kernel_approximation import Nystroem
from sklearn.linear_model import RidgeCV
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

import rffkern
from rffkern.plot import relevances

data = load_diabetes()   # NumPy arrays (as_frame=True would need pandas)
X, y = data.data, data.target
X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.2, random_state=0)

start = time.perf_counter()
model = rffkern.fit(X_train, y_train, random_state=0)
fit_seconds = time.perf_counter() - start
report = model.selection_report_
print(f"task: {report.get('task')}; chosen: {report['chosen']} ({type(model).__name__}); "
      f"fit in {fit_seconds:.1f} s")

# %%
# The baseline: Nystroem features of a Gaussian kernel with the median-heuristic width.
X_std = StandardScaler().fit_transform(X_train)
dist = np.sqrt(((X_std[:, None] - X_std[None]) ** 2).sum(-1))
gamma = 1 / (2 * np.median(dist[dist > 0]) ** 2)
baseline = make_pipeline(StandardScaler(), Nystroem(gamma=gamma, n_components=300, random_state=0),
                         RidgeCV(alphas=np.logspace(-4, 1, 12))).fit(X_train, (y_train - y_train.mean()))


def rmse(pred):
    return np.sqrt(np.mean((pred - y_test) ** 2))


print(f"test RMSE: rffkern.fit {rmse(model.predict(X_test)):.1f}, "
      f"Nystroem + RidgeCV {rmse(baseline.predict(X_test) + y_train.mean()):.1f}, "
      f"predicting the mean {rmse(np.full_like(y_test, y_train.mean())):.1f}")

# %%
# Which measurements matter: ``feature_importances_`` is the root mean square of the model's
# partial derivatives over the rows (RFFNet or ridge alike; scaled to [0, 1]).
fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4))
relevances(model, feature_names=list(data.feature_names), ax=ax1,
           title=f"diabetes: relevances ({report['chosen']})")
ax2.scatter(y_test, model.predict(X_test), s=10)
lims = [y.min(), y.max()]
ax2.plot(lims, lims, "k:", lw=1)
ax2.set_xlabel("measured progression")
ax2.set_ylabel("predicted")
ax2.set_title("held-out predictions")
fig.tight_layout()
plt.show()
