"""
RFFNet relevances recover the true support
==========================================

RFFNet learns one relevance :math:`\\theta_j` per input feature together with the weights of a
random-Fourier-feature network (see :doc:`/user_guide/rffnet`). On the paper's ``gse2`` problem
only 5 of the 100 features enter the target,
:math:`y = \\log((x_{11} + x_{12} + x_{13} + x_{14} + x_{15})^2) + \\varepsilon`. We fit
:class:`~rffkern.RFFNetRegressor`, draw its relevances with the true support in another colour,
then let :class:`~rffkern.TopKSelector` choose how many of the most relevant features to keep
from the held-out score of each nested set (the TopK path, Algorithm 3 of the paper).
"""
import os

import matplotlib.pyplot as plt

import rffkern
from rffkern.datasets import make_gse2
from rffkern.plot import relevances, topk_path

FAST = bool(os.environ.get("RFFKERN_DOCS_FAST") or os.environ.get("CI"))
n_samples = 4000 if FAST else 8000

X, y, support = make_gse2(n_samples, random_state=0)
print(f"{X.shape[0]} samples, {X.shape[1]} features, true support: {(support + 1).tolist()}")

# %%
# Relevances of one fit
# ---------------------
# ``feature_importances_`` are the root mean square of the fitted function's slope along each
# input, scaled to [0, 1]; ``relevances_`` are the learned inverse length scales (TopK's order).
model = rffkern.RFFNetRegressor(random_state=0).fit(X, y)
print(f"trained {model.n_iter_} epochs; most relevant:",
      (model.feature_importances_.argsort()[::-1][:5] + 1).tolist())

# %%
# TopK: how many features to keep
# --------------------------------
# The selector fits RFFNet on 80% of the rows, then scores the model keeping the ``k`` most
# relevant features (the other relevances set to zero, no refit) on the remaining 20%.
selector = rffkern.TopKSelector(rffkern.RFFNetRegressor(random_state=0), random_state=0).fit(X, y)
print("selected features:", (selector.ranking_[:selector.n_features_selected_] + 1).tolist())

# %%
# Left: the relevances of the single fit, true support in orange. Right: the held-out score of
# the ``k`` most relevant features of the selector's model, and the ``k`` it selected.
fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4))
relevances(model, top=20, support=support, ax=ax1, title="RFFNet relevances on gse2 (top 20 of 100)")
topk_path(selector, ax=ax2, title="TopK path (held-out -MSE)")
plt.show()
