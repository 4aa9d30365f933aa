"""
EERF against plain random features at equal feature count
=========================================================

Energy-based exploration of random features (:class:`~rffkern.EERFRegressor`, see
:doc:`/user_guide/eerf`) draws ten times more candidate frequencies than it keeps and keeps those
whose features correlate most with the target (the score
:math:`\\hat S(\\omega, b) = \\frac{1}{N_0}\\sum_n y_n \\cos(\\omega^\\top x_n + b)`). Plain random
features (:class:`~rffkern.RFFRidge`) keep the first ``M`` draws. Both fit the same ridge on
``M`` features with the same penalty search, so the gap between the curves is what the data-
dependent selection buys: most where few features are affordable.
"""
import os

import matplotlib.pyplot as plt
import numpy as np
from sklearn.model_selection import train_test_split

import rffkern
from rffkern.datasets import make_jse2

FAST = bool(os.environ.get("RFFKERN_DOCS_FAST") or os.environ.get("CI"))
n_samples = 4000 if FAST else 10000
feature_counts = [5, 10, 20, 40, 80, 160]
seeds = range(3 if FAST else 5)

X, y, _ = make_jse2(n_samples, random_state=0)
X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.25, random_state=0)
sd = y_test.std()


def rmse(model):
    return np.sqrt(np.mean((model.predict(X_test) - y_test) ** 2)) / sd


# %%
# Both use the same kernel width: EERF's rule (mean distance to the 50th nearest neighbour).
width = rffkern.EERFRegressor(10, length_scale="knn", random_state=0).fit(X_train, y_train).length_scale_
results = {"EERF": [], "plain RFF": []}
for m in feature_counts:
    results["EERF"].append(np.mean([rmse(rffkern.EERFRegressor(m, length_scale=width, random_state=s)
                                         .fit(X_train, y_train)) for s in seeds]))
    results["plain RFF"].append(np.mean([rmse(rffkern.RFFRidge(m, length_scale=width, random_state=s)
                                              .fit(X_train, y_train)) for s in seeds]))
    print(f"M={m:4d}  EERF {results['EERF'][-1]:.3f}  plain RFF {results['plain RFF'][-1]:.3f}")

fig, ax = plt.subplots(figsize=(6, 4))
for name, values in results.items():
    ax.loglog(feature_counts, values, marker="o", label=name)
ax.set_xlabel("number of random features M")
ax.set_ylabel("test RMSE / sd(y)")
ax.set_title(r"jse2: $y = x_1^3 + x_2^3 + \varepsilon$, Gaussian kernel")
ax.legend()
fig.tight_layout()
plt.show()
