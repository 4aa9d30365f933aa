"""Probabilities of the ridge classifier (``RFFRidgeClassifier.predict_proba``).

The ridge classifier regresses +-1 one-vs-rest targets: its decision values ``D`` are no
probabilities. ``predict_proba`` is ``softmax(a D)`` over the classes (for two classes
``sigmoid(a D)``: the softmax of ``[0, a D]``), with one temperature ``a >= 0`` chosen to minimise
the log-loss of the *leave-one-out* decision values of training rows, which the ridge gives in
closed form (:func:`loo_decisions`): no held-out split, no refit, the probabilities of a model
that did not see the row (temperature scaling, Guo et al. 2017, on exact LOO outputs instead of a
validation set). One parameter and no per-class offset, so the most probable class is the
predicted one, and the argmax / the sign of ``D`` are unchanged.
"""
from __future__ import annotations

import numpy as np
from scipy.linalg import cho_factor, cho_solve
from scipy.optimize import minimize_scalar
from scipy.special import log_softmax

__all__ = ["CALIBRATION_ROWS", "TEMPERATURE_MAX", "loo_decisions", "fit_temperature"]

#: Training rows (drawn at random above it) whose leave-one-out decisions fit the temperature.
CALIBRATION_ROWS = 2000
#: The largest temperature searched: decision values of +-1 targets are O(1), and where the
#: leave-one-out decisions separate the classes the log-loss falls all the way to this bound.
TEMPERATURE_MAX = 1e3


def loo_decisions(stats, fmap, Xs, Y, alpha, fit_intercept, sample_weight=None):
    """Exact leave-one-out outputs ``(n, m)`` of rows of a ridge fit.

    Row ``i`` (with weight ``w_i``, 1 without weights) is left out with all its weight, as in the
    leave-one-out penalty search (:class:`rffkern._ridge_solvers.LooPass`): with the leverage
    ``h_i = w_i (z_i^T (G + alpha I)^{-1} z_i + 1 / sum w)`` (centred features, ``G`` their
    weighted Gram; no ``1 / sum w`` without intercept) and the fitted output ``f_i``, the fit
    without the row outputs ``y_i - (y_i - f_i) / (1 - h_i)`` there.

    Parameters
    ----------
    stats : GramStats
        The fit's Gram statistics (every row).
    fmap : feature map
        The map they were computed with.
    Xs : ndarray of shape (n, d)
        Standardized rows of the fit.
    Y : ndarray of shape (n, m)
        Their targets as added to ``stats`` (before its ``target_scale``).
    alpha : float
        The fit's penalty.
    fit_intercept : bool
    sample_weight : ndarray of shape (n,) or None, default=None
        These rows' weights in the fit.

    Returns
    -------
    ndarray of shape (n, m)
        The leave-one-out outputs, in the units of ``Y``.
    """
    G, ZtY, mu, ybar, _ = stats.centred(fit_intercept)
    factor = cho_factor(G + alpha * np.eye(G.shape[0]), lower=True, check_finite=False)
    Z = np.asarray(fmap.features(Xs), np.float64) - mu
    fitted = Z @ cho_solve(factor, ZtY, check_finite=False) + ybar
    h = np.einsum("ij,ji->i", Z, cho_solve(factor, Z.T, check_finite=False))
    if fit_intercept:
        h = h + 1.0 / stats.n
    if sample_weight is not None:
        h = h * np.asarray(sample_weight, np.float64)
    Yt = np.asarray(Y, np.float64).reshape(Z.shape[0], -1) / stats.target_scale
    loo = Yt - (Yt - fitted) / np.maximum(1.0 - h, 1e-12)[:, None]
    return loo * stats.target_scale


def fit_temperature(D, codes, sample_weight=None):
    """The temperature ``a`` in ``[0, TEMPERATURE_MAX]`` of least weighted log-loss of
    ``softmax(a D)`` for the classes ``codes`` (``D`` of shape (n, k); a convex function of ``a``,
    minimised by bounded Brent)."""
    D = np.asarray(D, np.float64)
    rows = np.arange(D.shape[0])

    def log_loss(a):
        return -float(np.average(log_softmax(a * D, axis=1)[rows, codes], weights=sample_weight))

    return float(minimize_scalar(log_loss, bounds=(0.0, TEMPERATURE_MAX), method="bounded",
                                 options={"xatol": 1e-6}).x)

