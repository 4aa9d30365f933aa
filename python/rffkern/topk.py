"""TopK feature selection on RFFNet relevances (Algorithm 3 of the RFFNet paper).

:func:`topk_selection` scores the nested sets of the most relevant features of a fitted RFFNet model
on held-out data; :class:`TopKSelector` wraps it as a scikit-learn feature selector.
"""
from __future__ import annotations

import copy
import numbers
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike
from sklearn.base import BaseEstimator, MetaEstimatorMixin, clone
from sklearn.feature_selection import SelectorMixin
from sklearn.metrics import roc_auc_score
from sklearn.utils._param_validation import HasMethods, Interval
from sklearn.utils.validation import check_is_fitted, validate_data

from rffkern._api import task_of_target
from rffkern._losses import class_probabilities
from rffkern._selection import paired_standard_error
from rffkern._typing import RandomStateLike
from rffkern._validation import as_generator
from rffkern._data import check_sample_weight
from rffkern.rffnet import RFFNetClassifier, RFFNetRegressor

__all__ = ["TopKResult", "topk_selection", "TopKSelector"]


@dataclass
class TopKResult:
    """What :func:`topk_selection` found.

    Attributes
    ----------
    selected : ndarray of int
        Indices of the selected features, most relevant first.
    support : ndarray of bool, shape (n_features,)
    order : ndarray of int, shape (n_features,)
        All features by decreasing ``|theta|`` per unit of their own deviation (the paper's
        relevances; ties by index).
    scores : ndarray of shape (n_features,)
        ``scores[i]``: held-out score of the model keeping the ``i + 1`` most relevant features
        (-MSE for regression, ROC AUC for classification; higher is better).
    n_selected : int
    relevances : ndarray of shape (n_features,)
        The thresholded relevances (zeros outside the selection).
    estimator : RFFNetRegressor or RFFNetClassifier
        A copy of the fitted model with the thresholded relevances (its ``feature_importances_``
        those of the thresholded model, over the selection rows).
    """

    selected: np.ndarray
    support: np.ndarray
    order: np.ndarray
    scores: np.ndarray
    n_selected: int
    relevances: np.ndarray
    estimator: object


def _topk_score(estimator, F, y, sample_weight=None):
    if isinstance(estimator, RFFNetClassifier):
        idx = np.searchsorted(estimator.classes_, y)
        if np.unique(y).size < 2:
            raise ValueError("the selection set holds a single class; ROC AUC is undefined")
        if F.shape[1] == 1:
            return float(roc_auc_score(idx, F[:, 0], sample_weight=sample_weight))
        return float(roc_auc_score(idx, class_probabilities(F), multi_class="ovr",
                                   labels=np.arange(estimator.classes_.size), sample_weight=sample_weight))
    return -float(np.average(_squared_errors(F, y), weights=sample_weight))


def _squared_errors(F, y):
    """Each row's squared error (mean over the outputs) of the outputs ``F``: the regressor's TopK
    score is minus their (weighted) mean, the mean squared error."""
    Y = np.asarray(y, dtype=np.float64).reshape(F.shape[0], -1)
    return np.mean((Y - F) ** 2, axis=1)


def _row_losses(estimator, Xs, theta, y):
    """Each selection row's squared error with the relevances ``theta``."""
    return _squared_errors(estimator._raw_outputs(Xs, theta).astype(np.float64), y)


def _within_one_standard_error(estimator, Xs, order, scores, y, sample_weight):
    """Which nested sets of the regressor's TopK path score within one standard error of the best:
    of the mean of the per-row differences of their squared errors to the best set's. The sets are
    scored row by row up to the first such one, which alone is marked (the rule needs no more)."""

    theta = estimator.relevances_
    best = int(np.argmax(scores))
    masked = np.zeros_like(theta)
    masked[order[:best + 1]] = theta[order[:best + 1]]
    base = _row_losses(estimator, Xs, masked, y)
    within = np.zeros(scores.size, bool)
    masked = np.zeros_like(theta)
    for i, j in enumerate(order[:best]):
        masked[j] = theta[j]
        se = paired_standard_error(_row_losses(estimator, Xs, masked, y), base, sample_weight)
        if np.isfinite(se) and scores[i] >= scores[best] - se:
            within[i] = True
            break
    return within


#: Relative tolerance under which two TopK scores tie. The l1 prox leaves some irrelevant
#: relevances at 1e-6 to 1e-5 of the largest instead of 0; keeping one such feature can
#: "improve" the score by about 1e-5 relative (docs/design_notes.rst), and TopK would select it.
#: No selection set can tell such differences apart: the relative standard error of a mean
#: squared error over m rows is about sqrt(2 / m) (1.4e-3 at a million rows), and of a ROC AUC
#: larger still.
TIE_RTOL = 1e-4


def topk_selection(estimator: RFFNetRegressor | RFFNetClassifier, X: ArrayLike, y: ArrayLike,
                   sample_weight: ArrayLike | None = None) -> TopKResult:
    """Run TopK (Algorithm 3 of the RFFNet paper): score the nested sets of most relevant features.

    For ``i = 1..d`` the model keeps its ``i`` largest ``|theta_j|`` (per unit of each input's own
    deviation; the other relevances set to zero, no refit)
    and is scored on the held-out selection set ``(X, y)``; the set with the best
    score (the smallest such set on ties, scores within a relative ``TIE_RTOL`` = 1e-4 of each
    other, far below what a selection set can resolve, counting as tied) is selected. For
    regression the smallest set whose mean squared error is within one standard error of the
    best set's (of the mean of the per-row differences) is selected: a larger set is taken only
    on evidence (``bench/bench_rffnet_paper.py --quick``: TopK's false discovery rate on gse2
    0.23 -> 0.14, the true discoveries the same on all four regression problems). Not for
    classification, whose ROC AUC is not a mean over rows.

    Parameters
    ----------
    estimator : fitted RFFNetRegressor or RFFNetClassifier
        The model whose relevances ``|theta|`` rank the features.
    X : array-like of shape (n_samples, n_features)
        Held-out selection data (not used for fitting the estimator).
    y : array-like of shape (n_samples,) or (n_samples, n_outputs)
        Targets of the selection data.
    sample_weight : array-like of shape (n_samples,), default=None
        Non-negative weights of the selection rows: the scores are the weighted MSE / ROC AUC.

    Returns
    -------
    TopKResult
        The selected features, the score path and a copy of the model with the thresholded
        relevances.

    Examples
    --------
    >>> from rffkern import topk_selection
    >>> from rffkern import RFFNetRegressor
    >>> from rffkern.datasets import make_jse3
    >>> X, y, support = make_jse3(300, random_state=0)  # y depends on columns 0 and 1
    >>> net = RFFNetRegressor(n_components=50, learning_rate=0.01, max_iter=100, n_restarts=1,
    ...                       random_state=0)
    >>> net = net.fit(X[:200], y[:200])
    >>> result = topk_selection(net, X[200:], y[200:])
    >>> result.n_selected, sorted(result.selected.tolist())
    (2, [0, 1])
    """
    if not isinstance(estimator, (RFFNetRegressor, RFFNetClassifier)):
        raise TypeError(f"estimator must be an RFFNetRegressor or RFFNetClassifier, got {type(estimator).__name__}")
    check_is_fitted(estimator, "relevances_")
    X = validate_data(estimator, X, dtype=estimator.relevances_.dtype, ensure_all_finite=True,
                      reset=False, order="C")
    y = np.asarray(y)
    if y.shape[0] != X.shape[0]:
        raise ValueError(f"X has {X.shape[0]} samples but y has {y.shape[0]}")
    if isinstance(estimator, RFFNetRegressor):
        y = np.asarray(y, dtype=np.float64)
        if not np.isfinite(y).all():
            raise ValueError("y contains NaN or infinity")
    if sample_weight is not None:
        sample_weight = check_sample_weight(sample_weight, X.shape[0])
    Xs = estimator._standardized(X)
    theta = estimator.relevances_
    d = theta.size
    order = np.argsort(-estimator._relevance_magnitudes(), kind="stable")
    scores = np.empty(d)
    masked = np.zeros_like(theta)
    for i, j in enumerate(order):
        masked[j] = theta[j]
        scores[i] = _topk_score(estimator, estimator._raw_outputs(Xs, masked).astype(np.float64), y,
                                sample_weight)
    # The smallest set whose score ties the best one (within a relative TIE_RTOL): a relevance of
    # 1e-6 (what the l1 prox can leave of an irrelevant feature) would otherwise "improve" it in
    # its 6th digit. For regression also within one standard error of the per-row differences.
    best = scores.max()
    tied = scores >= best - TIE_RTOL * max(abs(best), 1e-12)
    if isinstance(estimator, RFFNetRegressor):
        tied |= _within_one_standard_error(estimator, Xs, order, scores, y, sample_weight)
    k = int(np.flatnonzero(tied)[0]) + 1
    relevances = np.zeros_like(theta)
    relevances[order[:k]] = theta[order[:k]]
    thresholded = copy.deepcopy(estimator)
    thresholded.relevances_ = relevances
    thresholded._store_derivative_norms(Xs, sample_weight)  # of the thresholded model, on these rows
    support = np.zeros(d, bool)
    support[order[:k]] = True
    return TopKResult(selected=order[:k].copy(), support=support, order=order, scores=scores,
                      n_selected=k, relevances=relevances, estimator=thresholded)


class TopKSelector(SelectorMixin, MetaEstimatorMixin, BaseEstimator):
    """Feature selection by RFFNet relevances and TopK (a scikit-learn transformer).

    ``fit`` splits off ``selection_fraction`` of the data, fits a clone of ``estimator`` on the rest,
    then runs :func:`topk_selection` on the held-out part. ``transform`` keeps the selected columns.

    Parameters
    ----------
    estimator : RFFNetRegressor, RFFNetClassifier or None, default=None
        None picks one from the target with :func:`rffkern._api.task_of_target` (default
        parameters, the selector's ``random_state``).
    selection_fraction : float, default=0.2
        Share of the samples held out to score the nested feature sets.
    random_state : int, Generator, RandomState or None, default=None
        The split (and the default estimator's seed).

    Attributes
    ----------
    estimator_ : RFFNetRegressor or RFFNetClassifier
        The fitted estimator with the thresholded relevances.
    scores_ : ndarray of shape (n_features_in_,)
        The TopK score path (see :class:`TopKResult`).
    ranking_ : ndarray of shape (n_features_in_,)
        Features by decreasing relevance.
    n_features_selected_ : int
        Number of selected features.
    support_ : ndarray of bool of shape (n_features_in_,)
        Mask of the selected features.
    result_ : TopKResult
        Everything :func:`topk_selection` returned.
    n_features_in_ : int
        Number of features seen during fit.

    Examples
    --------
    >>> from rffkern import TopKSelector
    >>> from rffkern import RFFNetRegressor
    >>> from rffkern.datasets import make_jse3
    >>> X, y, support = make_jse3(300, random_state=0)  # y depends on columns 0 and 1
    >>> net = RFFNetRegressor(n_components=50, learning_rate=0.01, max_iter=30, n_restarts=1,
    ...                       random_state=0)
    >>> selector = TopKSelector(net, random_state=0).fit(X, y)
    >>> selector.get_support(indices=True)
    array([0, 1])
    >>> selector.transform(X).shape
    (300, 2)
    """

    _parameter_constraints = {
        "estimator": [HasMethods(["fit", "predict"]), None],
        "selection_fraction": [Interval(numbers.Real, 0, 1, closed="neither")],
        "random_state": ["random_state", np.random.Generator],
    }

    def __init__(self, estimator: RFFNetRegressor | RFFNetClassifier | None = None, *, selection_fraction: float = 0.2,
                 random_state: RandomStateLike = None) -> None:
        self.estimator = estimator
        self.selection_fraction = selection_fraction
        self.random_state = random_state

    def fit(self, X: ArrayLike, y: ArrayLike, sample_weight: ArrayLike | None = None) -> TopKSelector:
        """Fit the estimator on part of (X, y) and select features on the rest.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training data, split into a fitting and a held-out selection part.
        y : array-like of shape (n_samples,) or (n_samples, n_outputs)
            Targets (classes for a classifier).
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative weights, passed to the estimator's ``fit`` for the fitting rows and to
            :func:`topk_selection` (weighted scores) for the selection rows.

        Returns
        -------
        self
            The fitted selector.

        Examples
        --------
        >>> from rffkern import TopKSelector
        >>> from rffkern import RFFNetRegressor
        >>> from rffkern.datasets import make_jse3
        >>> X, y, support = make_jse3(300, random_state=0)  # y depends on columns 0 and 1
        >>> net = RFFNetRegressor(n_components=50, learning_rate=0.01, max_iter=30, n_restarts=1,
        ...                       random_state=0)
        >>> TopKSelector(net, random_state=0).fit(X, y).n_features_selected_
        2
        """
        self._validate_params()
        X, y = validate_data(self, X, y, dtype=[np.float64, np.float32], multi_output=True,
                             ensure_all_finite=True)
        if sample_weight is not None:
            sample_weight = check_sample_weight(sample_weight, X.shape[0])
        rng = as_generator(self.random_state)
        if self.estimator is None:
            seed = int(rng.integers(2**31 - 1))
            est = (RFFNetClassifier(random_state=seed) if task_of_target(y) == "classification"
                   else RFFNetRegressor(random_state=seed))
        else:
            est = clone(self.estimator)
            if not isinstance(est, (RFFNetRegressor, RFFNetClassifier)):
                raise TypeError("estimator must be an RFFNetRegressor or RFFNetClassifier")
        n = X.shape[0]
        n_sel = int(np.ceil(self.selection_fraction * n))
        if n - n_sel < 2 or n_sel < 2:
            raise ValueError(f"n_samples={n} is too small for selection_fraction={self.selection_fraction}")
        perm = rng.permutation(n)
        sel, fit_idx = np.sort(perm[:n_sel]), np.sort(perm[n_sel:])
        if sample_weight is None:
            est.fit(X[fit_idx], y[fit_idx])
            result = topk_selection(est, X[sel], y[sel])
        else:
            est.fit(X[fit_idx], y[fit_idx], sample_weight=sample_weight[fit_idx])
            result = topk_selection(est, X[sel], y[sel], sample_weight=sample_weight[sel])
        self.estimator_ = result.estimator
        self.scores_ = result.scores
        self.ranking_ = result.order
        self.n_features_selected_ = result.n_selected
        self.support_ = result.support
        self.result_ = result
        return self

    def _get_support_mask(self):
        check_is_fitted(self, "support_")
        return self.support_

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.required = True
        return tags
