"""Closed-form ridge regression on random Fourier features: the plain-RFF baseline.

The model is ``f(x) = z(x) @ coef + intercept`` with ``z`` a random cosine map. It is fitted from
the streamed Gram matrix ``Z.T Z`` and the cross products ``Z.T [1, Y]`` (one pass of
:func:`rffkern.kernels.gram`), so memory is O(s^2) whatever the number of samples; the n x s
feature matrix is never formed. The intercept is handled by centring the Gram matrix with the mean
feature ``Z.T 1 / n`` that comes out of the same pass.

A list of ``alpha`` values is searched by

* ``"loo"``: exact leave-one-out error through the eigendecomposition ``G = V diag(e) V.T`` of the
  centred Gram: the LOO residual of sample i is ``(y_i - f_i) / (1 - h_ii)`` with
  ``h_ii = 1/n + sum_j (z_i - mu) v_j)^2 / (e_j + alpha)``; one extra blocked pass over X gives every
  alpha at once (memory O(block * s)).
* ``"gcv"``: generalised cross-validation from the Gram alone (no extra pass; used by
  ``partial_fit``).
* ``"validation"``: a held-out fraction; the predictions of every alpha come from one
  :func:`rffkern.kernels.predict` pass, then the held-out Gram is added to the training Gram and the
  model is refitted on all data with the chosen alpha.
"""
from __future__ import annotations

import numbers

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
from sklearn.preprocessing import LabelBinarizer
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from rffkern import kernels
from rffkern._constraints import IntInterval, N_JOBS, RealSequence
from rffkern._data import labels_from_decision
from rffkern._ridge_solvers import (FourierFeatureMap, GramStats, as_alpha_list, choose_alpha, fit_ridge_map,
                                   gcv_errors, solve_ridge)
from rffkern._sampling import KERNELS, draw_frequencies, draw_offsets, frequency_count
from rffkern._validation import as_generator, resolve_n_threads

__all__ = ["RFFRidge", "RFFRidgeClassifier"]


class _RFFRidgeBase(BaseEstimator):
    _parameter_constraints = {
        "n_components": [IntInterval(1, None, closed="left")],
        "alpha": [Interval(numbers.Real, 0, None, closed="left"), RealSequence(0, closed="left")],
        "kernel": [StrOptions(set(KERNELS))],
        "length_scale": [Interval(numbers.Real, 0, None, closed="neither")],
        "pair": ["boolean"],
        "fit_intercept": ["boolean"],
        "alpha_selection": [StrOptions({"loo", "gcv", "validation"})],
        "validation_fraction": [Interval(numbers.Real, 0, 1, closed="neither")],
        "random_state": ["random_state", np.random.Generator],
        "n_jobs": N_JOBS,
    }

    def __init__(self, n_components=100, *, alpha=1.0, kernel="gaussian", length_scale=1.0, pair=False,
                 fit_intercept=True, alpha_selection="loo", validation_fraction=0.1, random_state=None,
                 n_jobs=None):
        self.n_components = n_components
        self.alpha = alpha
        self.kernel = kernel
        self.length_scale = length_scale
        self.pair = pair
        self.fit_intercept = fit_intercept
        self.alpha_selection = alpha_selection
        self.validation_fraction = validation_fraction
        self.random_state = random_state
        self.n_jobs = n_jobs

    # -- the random map -------------------------------------------------------------------------
    def _draw_map(self, n_features, rng):
        n_freq = frequency_count(self.n_components, self.pair)
        self.weights_ = draw_frequencies(self.kernel, n_features, n_freq, self.length_scale, rng, np.float64)
        self.offsets_ = np.zeros(n_freq) if self.pair else draw_offsets(n_freq, rng)
        self.scale_ = kernels.default_scale(n_freq, self.pair)

    def _map(self):
        return FourierFeatureMap(self.weights_, None if self.pair else self.offsets_, self.scale_, self.pair,
                         resolve_n_threads(self.n_jobs))

    def _store(self, coef, intercept, alpha, errors, stats, ravel):
        self.coef_ = coef[:, 0] if ravel else coef
        self.intercept_ = (float(intercept[0]) if ravel else intercept) if self.fit_intercept else (
            0.0 if ravel else np.zeros(coef.shape[1]))
        self.alpha_ = float(alpha)
        self.selection_errors_ = errors
        self._stats = stats
        self.n_samples_seen_ = stats.n

    def _fit_targets(self, X, Y, ravel):
        self._validate_params()
        alphas = as_alpha_list(self.alpha)
        rng = as_generator(self.random_state)
        self._draw_map(X.shape[1], rng)
        out = fit_ridge_map(self._map(), X, Y, alphas, fit_intercept=self.fit_intercept,
                            selection=self.alpha_selection,
                            validation_fraction=self.validation_fraction, rng=rng)
        self._store(*out, ravel=ravel)
        return self

    def _partial_fit_targets(self, X, Y, ravel, first):
        alphas = as_alpha_list(self.alpha)
        if first:
            self._validate_params()
            if len(alphas) > 1 and self.alpha_selection == "validation":
                raise ValueError("partial_fit cannot hold out validation data; use alpha_selection='gcv' "
                                 "(or 'loo', which partial_fit replaces by GCV)")
            self._draw_map(X.shape[1], as_generator(self.random_state))
            self._stats = GramStats(self._map().n_out, Y.shape[1], X.dtype)
        elif Y.shape[1] != self._stats.ZtY.shape[1] - 1:
            raise ValueError(f"y has {Y.shape[1]} outputs, the model was started with "
                             f"{self._stats.ZtY.shape[1] - 1}")
        stats = self._stats.add(self._map(), X, Y)
        if len(alphas) == 1:
            best, errors = alphas[0], None
        else:
            best, errors = choose_alpha(alphas, gcv_errors(stats, alphas, self.fit_intercept), stats)
        coef, intercept = solve_ridge(stats, best, self.fit_intercept)
        self._store(coef, intercept, best, errors, stats, ravel)
        return self

    def _decision(self, X):
        check_is_fitted(self)
        X = validate_data(self, X, dtype=[np.float64, np.float32], reset=False)
        coef = self.coef_.reshape(self.coef_.shape[0], -1)
        F = self._map().predict(X, coef)
        F = F + np.asarray(self.intercept_, X.dtype)
        return F[:, 0] if self.coef_.ndim == 1 else F


class RFFRidge(RegressorMixin, _RFFRidgeBase):
    """Ridge regression on random Fourier features, solved in closed form from the streamed Gram.

    Minimises ``||y - Z coef - intercept||^2 + alpha ||coef||^2`` (scikit-learn's ``Ridge``
    convention) with ``Z = sqrt(2/s) cos(X W + b)``, ``W`` from the kernel's spectral density.

    Parameters
    ----------
    n_components : int, default=100
        Number of random features s (even with ``pair=True``).
    alpha : float or sequence of float, default=1.0
        Ridge penalty; a sequence is searched with ``alpha_selection``.
    kernel : {"gaussian", "laplace", "cauchy"}, default="gaussian"
    length_scale : float, default=1.0
    pair : bool, default=False
        ``[cos, sin]`` features of ``n_components // 2`` frequencies.
    fit_intercept : bool, default=True
    alpha_selection : {"loo", "gcv", "validation"}, default="loo"
        How a list of alphas is searched (exact leave-one-out, generalised CV, or a held-out split).
        ``partial_fit`` always uses GCV for lists.
    validation_fraction : float, default=0.1
        Held-out share for ``alpha_selection="validation"``.
    random_state : int, Generator, RandomState or None, default=None
    n_jobs : int or None, default=None
        Threads of the compiled kernels.

    Attributes
    ----------
    weights_ : ndarray of shape (n_features_in_, n_frequencies)
    offsets_ : ndarray of shape (n_frequencies,)
    scale_ : float
    coef_ : ndarray of shape (n_components,) or (n_components, n_targets)
    intercept_ : float or ndarray of shape (n_targets,)
    alpha_ : float
        The alpha used (the selected one for a list).
    selection_errors_ : ndarray of shape (n_alphas,) or None
        Mean squared LOO / GCV / validation error of each alpha.
    n_samples_seen_ : int
    n_features_in_ : int
    """

    def fit(self, X, y):
        """Fit on X (n_samples, n_features) and y (n_samples,) or (n_samples, n_targets)."""
        X, y = validate_data(self, X, y, dtype=[np.float64, np.float32], multi_output=True, y_numeric=True)
        Y = y.reshape(X.shape[0], -1).astype(X.dtype, copy=False)
        return self._fit_targets(X, Y, ravel=y.ndim == 1)

    def partial_fit(self, X, y):
        """Add a chunk to the running Gram (``kernels.gram(accumulate=True)``) and re-solve."""
        first = not hasattr(self, "coef_")
        X, y = validate_data(self, X, y, dtype=[np.float64, np.float32], multi_output=True,
                             y_numeric=True, reset=first)
        Y = y.reshape(X.shape[0], -1)
        return self._partial_fit_targets(X, Y, y.ndim == 1, first)

    def predict(self, X):
        """``z(X) @ coef_ + intercept_``, computed without storing the features."""
        return self._decision(X)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.multi_output = True
        return tags


class RFFRidgeClassifier(ClassifierMixin, _RFFRidgeBase):
    """Ridge classifier on random Fourier features: ridge regression on ``{-1, +1}`` one-vs-rest targets.

    Same parameters as :class:`RFFRidge`; ``predict`` returns the class with the largest decision
    value (the sign for two classes).

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    coef_ : ndarray of shape (n_components,) for two classes, else (n_components, n_classes)
    intercept_, alpha_, selection_errors_, weights_, offsets_, scale_, n_features_in_ : see RFFRidge
    """

    def _targets(self, y):
        Y = self._binarizer.transform(y).astype(np.float64)
        return Y

    def fit(self, X, y):
        """Fit on X (n_samples, n_features) and class labels y (n_samples,)."""
        X, y = validate_data(self, X, y, dtype=[np.float64, np.float32])
        check_classification_targets(y)
        self._binarizer = LabelBinarizer(neg_label=-1, pos_label=1).fit(y)
        self.classes_ = self._binarizer.classes_
        if len(self.classes_) < 2:
            raise ValueError(
                f"the classifier needs samples of at least 2 classes; got {len(self.classes_)} class")
        Y = self._targets(y)
        return self._fit_targets(X, Y.astype(X.dtype), ravel=Y.shape[1] == 1)

    def partial_fit(self, X, y, classes=None):
        """Add a chunk to the running Gram; ``classes`` (all labels) is required on the first call."""
        first = not hasattr(self, "coef_")
        X, y = validate_data(self, X, y, dtype=[np.float64, np.float32], reset=first)
        check_classification_targets(y)
        if first:
            if classes is None:
                raise ValueError("classes must be passed on the first call to partial_fit")
            self._binarizer = LabelBinarizer(neg_label=-1, pos_label=1).fit(np.asarray(classes))
            self.classes_ = self._binarizer.classes_
            if len(self.classes_) < 2:
                raise ValueError(f"classes must hold at least 2 labels; got {len(self.classes_)} class")
        if not np.isin(y, self.classes_).all():
            raise ValueError(f"y holds labels outside classes_ {self.classes_}")
        Y = self._targets(y)
        return self._partial_fit_targets(X, Y.astype(X.dtype), Y.shape[1] == 1, first)

    def decision_function(self, X):
        """Decision values: (n_samples,) for two classes, else (n_samples, n_classes)."""
        return self._decision(X)

    def predict(self, X):
        D = self.decision_function(X)  # first: it raises NotFittedError before classes_ exists
        return labels_from_decision(self.classes_, D)
