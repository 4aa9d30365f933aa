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

from typing import TYPE_CHECKING, Any, Callable

import numpy as np
from scipy.linalg import cholesky, solve_triangular
from scipy.optimize import minimize_scalar
from scipy.special import log_softmax

from rffkern._dask import is_dask_array, map_rows
from rffkern._importances import capped_rows
from rffkern._linalg import single_threaded_blas
from rffkern._posterior import check_coverage, conformal_quantile

__all__ = ["CALIBRATION_ROWS", "TEMPERATURE_MAX", "ConformalSetMixin", "calibration_rows", "class_codes",
           "class_scores", "loo_decisions", "loo_outputs", "fit_temperature", "tempered_log_proba", "temperature_of"]

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
    Yt = np.asarray(Y, np.float64).reshape(Xs.shape[0], -1) / stats.target_scale
    return loo_outputs(G, ZtY, mu, ybar, stats.n, fmap.features(Xs), Yt, alpha, fit_intercept,
                       sample_weight) * stats.target_scale


@single_threaded_blas
def loo_outputs(G, ZtY, mu, ybar, n, Z, Y, alpha, fit_intercept, sample_weight=None):
    """:func:`loo_decisions` from the fit's statistics themselves: ``G`` (s, s) and ``ZtY`` (s, m)
    of the fit's rows (centred where ``fit_intercept``, with their mean feature ``mu`` and target
    ``ybar``; zeros otherwise), ``n`` the fit's (weighted) row count, ``Z`` (k, s) the features of
    the rows left out (not centred) and ``Y`` (k, m) their targets, in the units of ``ZtY``."""
    # with G + alpha I = L L^T and A = L^{-1} Z^T: h = the columns' squared norms of A, and the fitted
    # outputs Z (G + alpha I)^{-1} ZtY = A^T L^{-1} ZtY -- one triangular solve with the rows, where
    # two (cho_solve) cost twice as much (EERFClassifier on higgs_subset, 2000 rows, s = 1000)
    L = cholesky(G + alpha * np.eye(G.shape[0]), lower=True, check_finite=False)
    A = solve_triangular(L, (np.asarray(Z, np.float64) - mu).T, lower=True, check_finite=False)
    fitted = A.T @ solve_triangular(L, ZtY, lower=True, check_finite=False) + ybar
    h = np.einsum("ij,ij->j", A, A)
    if fit_intercept:
        h = h + 1.0 / n
    if sample_weight is not None:
        h = h * np.asarray(sample_weight, np.float64)
    Y = np.asarray(Y, np.float64).reshape(Z.shape[0], -1)
    return Y - (Y - fitted) / np.maximum(1.0 - h, 1e-12)[:, None]


def temperature_of(codes, loo_scores, rows, sample_weight=None):
    """``(temperature, set scores)``: :func:`fit_temperature` of the class scores ``loo_scores(rows,
    w)`` of the leave-one-out outputs of ``rows`` (:func:`calibration_rows`) against their classes
    ``codes[rows]``, and the sorted conformity scores of ``predict_set`` (one minus the
    leave-one-out probability of the row's class, rows of positive weight); ``(None, None)`` where
    those rows hold a single class (nothing to calibrate)."""
    codes = np.asarray(codes)[rows]
    if np.unique(codes).size < 2:
        return None, None
    w = None if sample_weight is None else np.asarray(sample_weight, np.float64)[rows]
    scores = loo_scores(rows, w)
    temperature = fit_temperature(scores, codes, w)
    p_true = np.exp(log_softmax(temperature * scores, axis=1)[np.arange(codes.size), codes])
    keep = slice(None) if w is None else w > 0
    return temperature, np.sort(1.0 - p_true[keep])


def calibration_rows(n, sample_weight=None):
    """The rows whose leave-one-out outputs fit the temperature: at most ``CALIBRATION_ROWS`` of
    those of positive weight (a fixed draw)."""
    return capped_rows(n, sample_weight, CALIBRATION_ROWS)


def class_codes(Y):
    """Class indices of +-1 one-vs-rest targets (one column for two classes) or of one-hot ones."""
    Y = np.asarray(Y)
    return (Y[:, 0] > 0).astype(int) if Y.shape[1] == 1 else Y.argmax(axis=1)


def class_scores(D):
    """Decision values as one score per class: ``[0, D]`` for two classes (``sigmoid(a D)`` is the
    softmax of ``[0, a D]``), else ``D`` itself."""
    D = np.asarray(D, np.float64)
    return np.column_stack([np.zeros(D.shape[0]), D]) if D.ndim == 1 or D.shape[1] == 1 else D


def tempered_log_proba(estimator, scores, method):
    """``log_softmax(estimator._temperature * scores)`` over the classes, or a ``ValueError``
    naming ``method`` where the fit left no temperature (rows of one class only) or the model was
    pickled by an rffkern without one."""
    if "_temperature" not in estimator.__dict__:
        raise ValueError(f"{method} needs temperature_, which this model (pickled by an earlier rffkern) "
                         "lacks: fit it again")
    if estimator._temperature is None:
        raise ValueError(f"{method} needs the rows of at least two classes in a fit (or in one "
                         "partial_fit chunk) to calibrate its probabilities; none has been seen")
    return log_softmax(estimator._temperature * np.asarray(scores, np.float64), axis=1)


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



class ConformalSetMixin:
    """``predict_set`` of a classifier whose probabilities are calibrated on exact leave-one-out
    outputs (:func:`temperature_of` keeps the scores as ``_set_scores``)."""

    if TYPE_CHECKING:  # the classifier's
        predict_proba: Callable[[Any], np.ndarray]

    def predict_set(self, X, coverage=0.9):
        """Conformal prediction sets: the classes that hold the true one with the given coverage.

        The conformity score of a training row is one minus the probability its left-out model
        gives its class (``predict_proba``'s calibrated probabilities of the exact leave-one-out
        outputs, at most 2000 rows); a class is in a new row's set where its probability is at
        least one minus their ``ceil((k + 1) coverage)``-th smallest (split conformal on the
        leave-one-out rows, Sadinle et al. 2019's least-ambiguous sets). A set may be empty
        (no class is likely enough) or hold several (the model cannot tell them apart).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            The samples (a Dask array is processed lazily, block by block).
        coverage : float, default=0.9
            The share of new rows whose class the set should hold, in (0, 1).

        Returns
        -------
        ndarray of shape (n_samples, n_classes), dtype bool
            Whether each class of ``classes_`` is in each row's set.

        Examples
        --------
        >>> from rffkern import RFFRidgeClassifier
        >>> from rffkern.datasets import make_jse3
        >>> X, _, _ = make_jse3(300, random_state=0)
        >>> y = (X[:, 0] * X[:, 1] > 0).astype(int)
        >>> clf = RFFRidgeClassifier(n_components=100, random_state=0).fit(X, y)
        >>> clf.predict_set(X[:3], coverage=0.9).shape
        (3, 2)
        """
        coverage = check_coverage(coverage)
        if is_dask_array(X):
            return map_rows(lambda rows: self.predict_set(rows, coverage), X)
        proba = self.predict_proba(X)  # (first: NotFittedError, and the deferred calibration)
        scores = self.__dict__.get("_set_scores")
        if scores is None:
            raise ValueError(f"{type(self).__name__} holds no leave-one-out probabilities for prediction sets: "
                             "fit it on rows of at least two classes")
        threshold = 1.0 - conformal_quantile(np.asarray(scores)[:, None], coverage)[0]
        return proba >= threshold
