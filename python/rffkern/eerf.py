"""Energy-based exploration of random features (EERF, Shahrampour, Beirami & Tarokh 2018).

Shahrampour, Beirami & Tarokh 2018, "On data-dependent random features for improved generalization
in supervised learning"; see docs/user_guide/eerf.rst. Draw ``M0`` candidate features from the kernel's data-independent
distribution, score each on a subsample of ``N0`` points by

    S(omega, b) = (1/N0) sum_n y_n phi(x_n; omega, b)

keep the ``M`` candidates with the largest ``|S|`` (each with its own offset), then fit ridge
(regression) or a ridge / logistic classifier on those M features. By default (not the paper) the
Gaussian width is searched: the candidates are drawn once at unit width and scored, selected and
fitted at a few multiples of the paper's k-NN width, and the width of least exact leave-one-out
error is kept (``length_scale="knn"`` is the paper's single width).

For the Gaussian kernel ``phi = cos(omega . x + b)`` and the scores of all candidates are
``Z.T Y / N0``. They come from one call of the compiled :func:`rffkern.kernels.loss_and_grad` with
zero coefficients (the squared-loss coefficient gradient is then exactly ``-Z.T Y / N0``), which
costs O(N0 M0 (d + m)) and memory O(M0 m); :func:`rffkern.kernels.gram` would give the same vector
as its second output but would also build the M0 x M0 Gram, O(N0 M0^2), which is wasted here.

The arc-cosine features ``phi = max(omega . x, 0)^q`` (q = 0, 1, 2; Cho & Saul) have no compiled
kernel: they are computed in NumPy, block by block of rows (memory O(block * M)), for scoring,
Gram and prediction alike. The linear kernel's candidates are the input coordinates themselves.
"""
from __future__ import annotations

import numbers
import time
from typing import Any, Sequence

import numpy as np
from numpy.typing import ArrayLike, NDArray
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
from sklearn.linear_model import LogisticRegression, LogisticRegressionCV
from sklearn.preprocessing import LabelBinarizer
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted, validate_data

from rffkern._dask import is_dask_array, map_rows
from rffkern._dask_eerf import fit_eerf
from rffkern._constraints import COMPONENTS, NU, IntInterval, N_JOBS, RealSequence
from rffkern._data import TargetScaler, labels_from_decision, relative_sample_weight
from rffkern._inputs import fit_input_scaling, scaled_inputs, set_input_scaling
from rffkern._calibration import ConformalSetMixin, calibration_rows, class_codes, class_scores, loo_decisions, tempered_log_proba, temperature_of
from rffkern._posterior import PosteriorRegressorMixin, uncertainty_docstring
from rffkern._ridge_solvers import FourierFeatureMap, as_alpha_list, fit_ridge_map
from rffkern._progress import ProgressLog
from rffkern._eerf_core import (FOURIER_KERNELS, ArcCosineMap, ColumnMap, draw_candidates, eerf_scores, fit_widths, knn_length_scale,
                                scoring_targets, store_ridge, store_top)
from rffkern._sampling import DEFAULT_NU
from rffkern._typing import RandomStateLike
from rffkern._validation import as_generator, check_class_labels, resolve_n_threads
from rffkern._selection import DEFAULT_ALPHAS
from rffkern.ridge import choose_standardization, resolve_standardization

# eerf_scores and knn_length_scale live in rffkern._eerf_core (shared with the Dask fit) and are
# public here
__all__ = ["EERFRegressor", "EERFClassifier", "eerf_scores", "knn_length_scale"]

EERF_KERNELS = ("gaussian", "matern", "arccos0", "arccos1", "arccos2", "linear")


class _EERFBase(BaseEstimator):
    training_time_: float  # declared for type checkers only
    width_errors_: list[float] | None
    selection_errors_: NDArray[np.float64] | None
    _parameter_constraints = {
        "n_components": [COMPONENTS],
        "n_candidates": [COMPONENTS, None],
        "n_subsample": [IntInterval(1, None, closed="left"), None],
        "kernel": [StrOptions(set(EERF_KERNELS))],
        "nu": [NU],
        "length_scale": [Interval(numbers.Real, 0, None, closed="neither"), RealSequence(0, closed="neither"),
                         StrOptions({"auto", "knn"})],
        "alpha": [Interval(numbers.Real, 0, None, closed="left"), RealSequence(0, closed="left")],
        "alpha_selection": [StrOptions({"loo", "gcv", "validation"})],
        "standardize": ["boolean", StrOptions({"auto", "global", "quantile"})],
        "robust_inputs": ["boolean"],
        "random_state": ["random_state", np.random.Generator],
        "n_jobs": N_JOBS,
        "verbose": ["verbose"],
    }

    def __init__(self, n_components: int = 1000, *, n_candidates: int | None = None,
                 n_subsample: int | None = None, kernel: str = "gaussian", nu: float = DEFAULT_NU,
                 length_scale: float | str = "auto",
                 alpha: float | Sequence[float] = DEFAULT_ALPHAS, alpha_selection: str = "loo",
                 standardize: bool | str = "auto", robust_inputs: bool = True, random_state: RandomStateLike = None,
                 n_jobs: int | None = None, verbose: int = 0) -> None:
        self.n_components = n_components
        self.n_candidates = n_candidates
        self.n_subsample = n_subsample
        self.kernel = kernel
        self.nu = nu
        self.length_scale = length_scale
        self.alpha = alpha
        self.alpha_selection = alpha_selection
        self.standardize = standardize
        self.robust_inputs = robust_inputs
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.verbose = verbose

    def _log(self, stage, i, n, text):
        """One progress line (rffkern._progress format), timed from the start of the fit."""
        self._progress.step(stage, i, n, text)

    def _prepare(self, X, Y, rng, sample_weight=None):
        """The input standardization (``standardize="auto"``: :func:`rffkern.ridge.choose_standardization`
        on the targets ``Y`` the ridge fits, with a seed that leaves ``rng``'s stream as it was);
        returns the standardized X."""
        self._progress = ProgressLog(self, self.verbose)  # the first step of every fit
        self.standardize_, self.standardize_errors_ = resolve_standardization(self.standardize, X, Y, sample_weight,
                                                                              rng, self.n_jobs, self.robust_inputs)
        if self.standardize == "auto":
            self._log("standardize", 1, 1, f"{self.standardize_!r} (probe ridge)")
        set_input_scaling(self, fit_input_scaling(X, sample_weight, self.standardize_, self.robust_inputs))
        return self._transform_input(X)

    def _transform_input(self, X):
        return scaled_inputs(self, X)

    def _candidates(self, Xs, T, rng, sample_weight=None):
        """Draw the scoring subsample and the M0 candidates at unit width
        (:func:`rffkern._eerf_core.draw_candidates`); the widths to compare.

        With ``sample_weight`` only the rows of positive weight take part (N0 and the subsample are
        drawn among them, so zero weights equal dropping the rows) and the scores are weighted
        means ``sum_n w_n y_n phi(x_n) / sum_n w_n`` over the subsample. Returns the scoring rows
        and targets (with weights: times the rows' weights over their mean on the subsample) and the
        :class:`~rffkern._eerf_core.Candidates`."""
        if sample_weight is not None and not (sample_weight > 0).all():
            keep_rows = np.flatnonzero(sample_weight > 0)
            Xs, T, sample_weight = np.ascontiguousarray(Xs[keep_rows]), T[keep_rows], sample_weight[keep_rows]
        w = sample_weight
        drawn = draw_candidates(self, Xs.shape[0], Xs.shape[1], rng,
                                lambda positions: (Xs[positions], None if w is None else w[positions]))
        rows = drawn.rows
        Xsub = Xs if rows is None else np.ascontiguousarray(Xs[rows])
        Tsub = T if rows is None else T[rows]
        if w is not None:  # the weighted mean: eerf_scores divides by the row count
            wsub = w if rows is None else w[rows]
            Tsub = Tsub * (wsub / wsub.mean())[:, None]
        return Xsub, Tsub, drawn

    def _keep(self, Xsub, Tsub, W0, b0, width):
        """Score the candidates ``W0 / width`` on the subsample and keep the top M."""
        W = None if W0 is None else (W0 if width is None else W0 / width)
        S = eerf_scores(Xsub, Tsub, W, b0, kernel=self.kernel,
                        n_threads=resolve_n_threads(self.n_jobs)).astype(np.float64)
        store_top(self, S, W, b0, width)

    def _select_and_fit(self, Xs, T, Y, rng, ravel, sample_weight=None, ridge=True):
        """The candidates, then for each width the selection and the ridge fit; the width of least
        selection error (LOO by default) is kept (:func:`rffkern._eerf_core.fit_widths`).
        ``ridge=False`` (the logistic solver) with one width skips the ridge fit."""
        t0 = time.perf_counter()
        Xsub, Tsub, drawn = self._candidates(Xs, T, rng, sample_weight)
        times = [time.perf_counter() - t0, 0.0]  # selecting, fitting the ridge
        fit_ridge = ridge or len(drawn.widths) > 1

        def fit_width(width, split_rng, several):
            t1 = time.perf_counter()
            self._keep(Xsub, Tsub, drawn.W0, drawn.b0, width)
            times[0] += time.perf_counter() - t1
            self._log_select()
            if not fit_ridge:
                return None
            error = self._fit_ridge(Xs, Y, split_rng, ravel, sample_weight, score_single=several)
            times[1] += self.training_time_
            return error

        fit_widths(self, drawn.widths, drawn.base, fit_width, rng)
        self.preprocessing_time_ = times[0]
        if fit_ridge:
            self.training_time_ = times[1]
        if self.widths_ is not None:
            self._log("width", 2, 2, f"chose length_scale {self.length_scale_:.4g}, alpha {self.alpha_:.3g}")

    def _log_select(self):
        self._log("select", 1, 2, f"candidates {self.n_candidates_}, kept {self.n_components}, scoring rows "
                  f"{self.n_subsample_}, length_scale {self.length_scale_}")

    def _map(self):
        if self.kernel in FOURIER_KERNELS:
            return FourierFeatureMap(self.weights_, self.offsets_, self.scale_, False, resolve_n_threads(self.n_jobs))
        if self.kernel == "linear":
            return ColumnMap(self.support_)
        return ArcCosineMap(self.weights_, int(self.kernel[-1]), self.scale_)

    def _fit_ridge(self, Xs, Y, rng, ravel, sample_weight=None, score_single=False):
        """The ridge on the kept features; its least selection error in the units of the scaled
        targets (:func:`rffkern._eerf_core.store_ridge`)."""
        t0 = time.perf_counter()
        fitted = fit_ridge_map(self._map(), Xs, Y.astype(Xs.dtype), as_alpha_list(self.alpha), fit_intercept=True,
                               selection=self.alpha_selection, validation_fraction=0.1, rng=rng,
                               score_single=score_single, sample_weight=sample_weight)
        # (its Gram statistics: the classifier's temperature, then dropped); back to the caller's
        # units (identity unless the regressor scaled its targets)
        error = store_ridge(self, fitted, getattr(self, "_target_scale", (1.0, 0.0)), ravel)
        self.training_time_ = time.perf_counter() - t0
        self._log("ridge", 2, 2, f"alpha {self.alpha_:.3g}, alphas searched {len(as_alpha_list(self.alpha))}")
        return error

    def _decision(self, X):
        check_is_fitted(self)
        X = validate_data(self, X, dtype=[np.float64, np.float32], reset=False)
        Xs = self._transform_input(X)
        coef = self.coef_.reshape(self.coef_.shape[0], -1)
        F = self._map().predict(Xs, coef) + np.asarray(self.intercept_, Xs.dtype)
        return F[:, 0] if self.coef_.ndim == 1 else F


_DOC_PARAMS = """
    Parameters
    ----------
    n_components : int, default=1000
        M, the number of features kept (<= n_features for the linear kernel). The paper's
        experiments keep up to a few hundred; 1000 (the size of the usual kernel-approximation
        baselines) is the default because 100 lost to scikit-learn's Nystroem(1000) + RidgeCV by
        50 % to 500 % on cpu_act, elevators, kin40k, digits, mnist and w8a
        (``bench/bench_realdata.py``, 4000 training rows) while fitting in a tenth of its time.
    n_candidates : int or None, default=None
        M0, the candidates drawn; None gives the paper's rule of thumb 10 M (ignored for "linear",
        whose candidates are the d input coordinates).
    n_subsample : int or None, default=None
        N0, the scoring subsample; None gives ``min(N, max(0.1 N, 1000))``.
    kernel : {"gaussian", "matern", "arccos0", "arccos1", "arccos2", "linear"}, default="gaussian"
        Gaussian ``cos(omega . x + b)`` with ``omega ~ N(0, I / sigma^2)``; Matérn the same
        features with ``omega`` from the Matérn spectral density (a multivariate Student t with
        ``2 nu`` degrees of freedom over sigma; :class:`rffkern.RandomFourierFeatures`); arc-cosine
        of order q ``max(omega . x, 0)^q`` with ``omega ~ N(0, I)``; linear: input coordinates.
    nu : float, default=1.5
        The Matérn smoothness (``kernel="matern"`` only; > 0).
    length_scale : float, sequence of float, "auto" or "knn", default="auto"
        The length scale sigma of the Gaussian (or Matérn) kernel. "knn" is the paper's rule: the mean distance
        to the 50th nearest neighbour, on a subsample of at most 2000 scoring rows. "auto" (not the
        paper's) compares ``EXTENDED_WIDTH_FACTORS`` = (0.5, 1, 2, 4) times that width, extended by halving
        (doubling) while the smallest (largest) is the best, within ``WIDTH_LIMITS`` = (0.5, 16)
        times it; a sequence compares the given widths. Each width scores the same candidates
        (drawn once at unit width), keeps its own top M and costs one streamed Gram plus the alpha
        search; the width of least selection error (exact LOO by default) is kept. The rule alone
        was off by a factor of 2 to 4 on several data sets (cpu_act, elevators and w8a want wider
        widths, kin40k a narrower one).
    alpha : float or sequence of float, default=rffkern.ridge.DEFAULT_ALPHAS
        Ridge penalty of the final fit (``||y - Z c||^2 + alpha ||c||^2``); a sequence is searched
        as in :class:`rffkern.RFFRidge` (over the penalties the Gram resolves: on float32 rows,
        none below about 1.2e-7 times the row count). The default is RFFRidge's: 23 values from
        1e-8 to 1e3 (regression: in units of the scaled targets), chosen by exact leave-one-out.
    alpha_selection : {"loo", "gcv", "validation"}, default="loo"
        How a sequence of alphas is searched: exact leave-one-out, generalised cross-validation or
        a held-out split, as in :class:`rffkern.RFFRidge`.
    standardize : {"auto", True, "global", "quantile", False}, default="auto"
        How X is centred and scaled first (sigma is in the scaled units): True, each input by its
        own deviation (the paper's setting); "global", all by one pooled deviation, which keeps
        the inputs' relative spreads (pixels); "auto", the one that
        :func:`rffkern.ridge.choose_standardization` keeps (an ``RFFRidge(500)`` at its defaults on
        at most 3000 rows: True unless "global" has the lower leave-one-out error by more than one
        standard error); on Dask arrays the probe runs on
        at most ``PROBE_ROWS`` rows gathered from X. False: X as given. The choice is
        ``standardize_``; the pooled deviation serves pixels (:doc:`/design_notes`).
        "quantile": each heavy-tailed input (not two-valued, a
        training row more than 5 deviations from its mean) mapped to normal scores by
        scikit-learn's ``QuantileTransformer`` (``input_quantiles_``), then as True; "auto"
        compares it too (where such inputs exist, with ``robust_inputs``; not on Dask arrays).
    robust_inputs : bool, default=True
        Keep rows far from the training data near it: a two-valued input
        (a one-hot level, a flag) is scaled by half the gap between its values rather than by its
        deviation (a rare level then lies 2 from the common one, not 30 deviations out); at
        predict each input is clipped to its training range (``x_min_``, ``x_max_``), as trees do
        implicitly; and ``standardize="auto"`` also tries "quantile" where an input is
        heavy-tailed. A finite random-feature model does not fall back to its mean far from the
        data as the exact kernel does, and answered such rows absurdly. False: the plain
        standardization.
    random_state : int, Generator, RandomState or None, default=None
        Seed or generator of every random draw; the same value gives the same model whatever
        ``n_jobs``.
    n_jobs : int or None, default=None
        Threads of the compiled kernels (None: OpenMP's current limit, -1: all usable cores).
        The fitted model does not depend on it.
    verbose : int, default=0
        1 prints a line after the selection and after the final fit.
"""

_DOC_ATTRS = """
    Attributes
    ----------
    weights_ : ndarray of shape (n_features_in_, n_components) or None
        The kept frequencies (None for the linear kernel).
    offsets_ : ndarray of shape (n_components,) or None
        Their own phases (Gaussian and Matérn kernels only).
    support_ : ndarray
        Kept input columns (linear kernel only).
    scores_ : ndarray of shape (n_components,)
        ``|S|`` of the kept candidates (root of the summed squared scores for several outputs).
    scale_ : float
        ``sqrt(2 / M)``.
    coef_, intercept_, alpha_, selection_errors_ : ndarray, float or None
        The final ridge fit: coefficients, intercept, chosen alpha and the alpha search's errors.
    length_scale_ : float or None
        The sigma used (None for the arc-cosine and linear kernels).
    widths_, width_errors_ : list of float or None
        The widths compared, in the order tried, and the least selection error (over the alphas)
        of each, in y's units (compared in the units of the scaled targets, so a y near the float
        limit, whose errors overflow to inf, chooses as y does); None when one width is used.
    n_candidates_, n_subsample_ : int
        M0 and N0 as used.
    preprocessing_time_, training_time_ : float
        Seconds spent scoring and selecting candidates, and fitting the final model.
    standardize_ : {True, "global", False}
        The standardization used.
    standardize_errors_ : dict or None
        ``standardize="auto"``: the probe ridge's ``standardize_errors_`` (None where the two
        standardizations are one, or with another ``standardize``).
    x_mean_, x_scale_ : ndarray of shape (n_features_in_,)
        The standardisation of X; the inputs constant on the training rows have an infinite scale:
        they standardize to 0 on every row.
    x_min_, x_max_ : ndarray of shape (n_features_in_,) or None
        The training range each input is clipped to at predict (None with ``robust_inputs=False``).
    input_quantiles_ : sklearn.preprocessing.QuantileTransformer or None
        With ``standardize_="quantile"``: the normal scores of the heavy-tailed inputs
        ``quantile_columns_`` (None otherwise).
"""


class EERFRegressor(PosteriorRegressorMixin, RegressorMixin, _EERFBase):
    __doc__ = ("""Ridge regression on EERF-selected random features (Shahrampour et al. 2018).

    The scoring target is ``(y - mean(y)) / max|y - mean(y)|``, which lies in [-1, 1] as the paper
    asks; centring keeps the constant direction (omega near 0) from using up a feature slot.
    Several outputs are scored by the sum of their squared scores.
""" + _DOC_PARAMS.replace("    random_state", """    normalize_y : bool, default=True
        Centre and scale each output (:class:`rffkern._data.TargetScaler`) before the ridge fit, so
        ``alpha`` is in units of the scaled targets; ``coef_``, ``intercept_`` and the predictions
        are in y's units. False fits y as it is (the paper).
    random_state""", 1) + _DOC_ATTRS + """
    Examples
    --------
    >>> from rffkern import EERFRegressor
    >>> from rffkern.datasets import make_jse3
    >>> X, y, support = make_jse3(100, random_state=0)
    >>> model = EERFRegressor(n_components=20, random_state=0).fit(X, y)
    >>> model.weights_.shape, model.predict(X[:3]).shape
    ((10, 20), (3,))
""")

    _parameter_constraints = {**_EERFBase._parameter_constraints, "normalize_y": ["boolean"]}

    def __init__(self, n_components: int = 1000, *, n_candidates: int | None = None,
                 n_subsample: int | None = None, kernel: str = "gaussian", nu: float = DEFAULT_NU,
                 length_scale: float | str = "auto",
                 alpha: float | Sequence[float] = DEFAULT_ALPHAS, alpha_selection: str = "loo",
                 standardize: bool | str = "auto", robust_inputs: bool = True, normalize_y: bool = True,
                 random_state: RandomStateLike = None,
                 n_jobs: int | None = None, verbose: int = 0) -> None:
        super().__init__(n_components, n_candidates=n_candidates, n_subsample=n_subsample, kernel=kernel, nu=nu,
                         length_scale=length_scale, alpha=alpha, alpha_selection=alpha_selection,
                         standardize=standardize, robust_inputs=robust_inputs, random_state=random_state, n_jobs=n_jobs, verbose=verbose)
        self.normalize_y = normalize_y

    def fit(self, X: ArrayLike, y: ArrayLike, sample_weight: ArrayLike | None = None) -> EERFRegressor:
        """Select the features on a subsample of (X, y), then fit ridge on all of it.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training data.
        y : array-like of shape (n_samples,) or (n_samples, n_outputs)
            Real-valued targets.
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative weight of each sample (None: all 1). Weighted: the standardisation, the
            target scaling, the candidates' scores (weighted means over the scoring subsample,
            which is drawn among the rows of positive weight, so zero weights equal dropped rows)
            and the final ridge fit with its alpha search (weighted Gram, weighted LOO, GCV or
            held-out error). The weights are relative: divided by their mean over the rows of
            positive weight, so that weights ``c w`` fit the model of ``w`` and equal weights the
            model of none. Integer weights give the objective of the rows repeated at ``alpha``
            times their mean positive weight; the subsample and the alpha search's left-out rows
            stay those of the given rows. The width rules count a row's relative weight as its
            copies (the neighbours of the rule are weighted). With a Dask ``X``, ``sample_weight``
            may be a Dask array (any row chunks) or array-like; the fit equals this one up to the
            order of floating-point sums.

        Returns
        -------
        self
            The fitted estimator.

        Examples
        --------
        >>> from rffkern import EERFRegressor
        >>> from rffkern.datasets import make_jse3
        >>> X, y, support = make_jse3(100, random_state=0)
        >>> EERFRegressor(n_components=20, random_state=0).fit(X, y).scores_.shape
        (20,)
        """
        if is_dask_array(X):  # exact distributed fit on the workers
            return fit_eerf(self, X, y, sample_weight, choose_standardization)
        self._validate_params()
        X, y = validate_data(self, X, y, dtype=[np.float64, np.float32], multi_output=True, y_numeric=True)
        w = relative_sample_weight(sample_weight, X.shape[0])[0]
        scaler = TargetScaler(self.normalize_y).fit(y.reshape(X.shape[0], -1), w)
        Y = scaler.transform(y.reshape(X.shape[0], -1))
        self.y_mean_, self.y_scale_ = scaler.mean_, scaler.scale_
        self._target_scale = (scaler.scale_, scaler.mean_)
        rng = as_generator(self.random_state)
        Xs = self._prepare(X, Y, rng, w)
        T = scoring_targets(Y, w)
        top = np.abs(T if w is None else T[w > 0]).max(0)
        T /= np.where(top > 0, top, 1.0)
        try:
            self._select_and_fit(Xs, T, Y, rng, ravel=y.ndim == 1, sample_weight=w)
        finally:
            del self._target_scale
        self._keep_posterior(Xs, y.reshape(X.shape[0], -1), w)
        self._progress.close()
        return self

    def _keep_posterior(self, Xs, Y, w):
        """Keep the ridge's statistics (the Bayesian linear model of ``predict(X,
        return_std=True)``) and ``predict_interval``'s scores from rows of the fit (standardized
        ``Xs``, targets ``Y`` in y's units; at most ``CALIBRATION_ROWS`` drawn)."""
        self._posterior_stats = self.__dict__.pop("_ridge_stats")
        rows = calibration_rows(Xs.shape[0], w)
        self._store_conformity(self._map().features(Xs[rows]), np.asarray(Y)[rows], None if w is None else w[rows])

    def _ridge_state(self):
        stats = self.__dict__.get("_posterior_stats")
        if stats is None:
            raise ValueError("EERFRegressor's uncertainty needs the statistics of an in-memory fit")
        return stats, self.alpha_, True, self.y_scale_

    def _features(self, X):
        """The features of X as ``predict`` maps them."""
        check_is_fitted(self)
        X = validate_data(self, X, dtype=[np.float64, np.float32], reset=False)
        return self._map().features(self._transform_input(X))

    @uncertainty_docstring
    def predict(self, X: ArrayLike, return_std: bool = False, return_cov: bool = False) -> Any:
        """Predict from the selected features, and optionally the predictive uncertainty.

        With ``return_std`` or ``return_cov``: the uncertainty of the ridge on the selected
        features, the Bayesian linear model of :meth:`rffkern.RFFRidge.predict`.

        {parameters}

        Examples
        --------
        >>> from rffkern import EERFRegressor
        >>> from rffkern.datasets import make_jse3
        >>> X, y, support = make_jse3(100, random_state=0)
        >>> EERFRegressor(n_components=20, random_state=0).fit(X, y).predict(X[:3]).shape
        (3,)
        """
        return self._predict_with_uncertainty(X, return_std, return_cov)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.multi_output = True
        return tags


class EERFClassifier(ConformalSetMixin, ClassifierMixin, _EERFBase):
    __doc__ = ("""Classifier on EERF-selected random features (Shahrampour et al. 2018).

    Binary labels are scored as centred ``+-1``; several classes by the sum over classes of the
    squared scores of the centred one-vs-rest indicators. The final model is a ridge classifier
    (``solver="ridge"``: closed form from the streamed Gram, as :class:`rffkern.RFFRidgeClassifier`)
    or scikit-learn's ``LogisticRegression`` with ``C = 1 / alpha`` on the M selected features
    (``solver="logistic"``; this materialises the n x M feature matrix; a sequence of alphas is
    searched by ``LogisticRegressionCV``, 3 folds, log-loss). Several widths are compared by the
    ridge classifier's selection error on the +-1 targets whatever the solver; the logistic model is
    then fitted at the chosen width.
""" + _DOC_PARAMS.replace("    standardize", """    solver : {"ridge", "logistic"}, default="ridge"
        The final model: a ridge classifier on the streamed Gram matrix, or logistic regression.
    standardize""") + _DOC_ATTRS + """    classes_ : ndarray of shape (n_classes,)
        The class labels.
    temperature_ : float or None
        :meth:`predict_proba`'s ``softmax(temperature_ * decision)``: with ``solver="ridge"`` the
        temperature of least log-loss of the exact leave-one-out decision values of (at most 2000
        of) the training rows; 1.0 with ``solver="logistic"`` (the logistic model's own
        probabilities).

    Examples
    --------
    >>> from rffkern import EERFClassifier
    >>> from rffkern.datasets import make_jse3
    >>> X, _, _ = make_jse3(100, random_state=0)
    >>> y = (X[:, 0] * X[:, 1] > 0).astype(int)
    >>> clf = EERFClassifier(n_components=20, random_state=0).fit(X, y)
    >>> clf.predict(X[:3])
    array([0, 1, 0])
""")

    _parameter_constraints = {**_EERFBase._parameter_constraints,
                              "solver": [StrOptions({"ridge", "logistic"})]}

    def __init__(self, n_components: int = 1000, *, n_candidates: int | None = None,
                 n_subsample: int | None = None, kernel: str = "gaussian", nu: float = DEFAULT_NU,
                 length_scale: float | str = "auto",
                 alpha: float | Sequence[float] = DEFAULT_ALPHAS, alpha_selection: str = "loo",
                 solver: str = "ridge", standardize: bool | str = "auto", robust_inputs: bool = True, random_state: RandomStateLike = None,
                 n_jobs: int | None = None, verbose: int = 0) -> None:
        super().__init__(n_components, n_candidates=n_candidates, n_subsample=n_subsample, kernel=kernel, nu=nu,
                         length_scale=length_scale, alpha=alpha, alpha_selection=alpha_selection,
                         standardize=standardize, robust_inputs=robust_inputs, random_state=random_state, n_jobs=n_jobs, verbose=verbose)
        self.solver = solver

    def fit(self, X: ArrayLike, y: ArrayLike, sample_weight: ArrayLike | None = None) -> EERFClassifier:
        """Select the features on a subsample of (X, y), then fit the classifier on all of it.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training data.
        y : array-like of shape (n_samples,)
            Class labels.
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative weight of each sample (None: all 1). Weighted: the standardisation, the
            centring of the scoring targets, the candidates' scores (weighted means over the
            scoring subsample, which is drawn among the rows of positive weight) and the final fit:
            ``solver="ridge"`` with its alpha search as in :class:`rffkern.RFFRidgeClassifier`
            (the weights multiply the squared errors),
            ``solver="logistic"`` through scikit-learn's ``sample_weight`` (its cross-validation
            folds are those of the given rows). The weights are relative, as in
            :meth:`EERFRegressor.fit`: weights ``c w`` fit the model of ``w``. With a Dask ``X``,
            ``sample_weight`` may be a Dask array (any row chunks) or array-like; the fit equals this
            one up to the order of floating-point sums (``solver="ridge"`` only: ``"logistic"`` is
            not fitted on Dask arrays).

        Returns
        -------
        self
            The fitted estimator.

        Examples
        --------
        >>> from rffkern import EERFClassifier
        >>> from rffkern.datasets import make_jse3
        >>> X, _, _ = make_jse3(100, random_state=0)
        >>> y = (X[:, 0] * X[:, 1] > 0).astype(int)
        >>> EERFClassifier(n_components=20, random_state=0).fit(X, y).classes_
        array([0, 1])
        """
        if is_dask_array(X):  # exact distributed fit on the workers
            return fit_eerf(self, X, y, sample_weight, choose_standardization)
        self._validate_params()
        X, y = validate_data(self, X, y, dtype=[np.float64, np.float32])
        w = relative_sample_weight(sample_weight, X.shape[0])[0]
        check_class_labels(y)
        binarizer = LabelBinarizer(neg_label=-1, pos_label=1).fit(y)
        self.classes_ = binarizer.classes_
        if len(self.classes_) < 2:
            raise ValueError(
                f"the classifier needs samples of at least 2 classes; got {len(self.classes_)} class")
        Y = binarizer.transform(y).astype(np.float64)
        rng = as_generator(self.random_state)
        Xs = self._prepare(X, Y, rng, w)
        self._select_and_fit(Xs, scoring_targets(Y, w), Y, rng, ravel=Y.shape[1] == 1, sample_weight=w,
                             ridge=self.solver == "ridge")
        if self.solver == "logistic":
            alphas = as_alpha_list(self.alpha)
            t0 = time.perf_counter()
            Z = self._map().features(Xs)
            Cs = [1.0 / a if a > 0 else 1e12 for a in alphas]
            if len(alphas) == 1:
                logistic = LogisticRegression(C=Cs[0], max_iter=1000).fit(Z, y, sample_weight=w)
                chosen = alphas[0]
            else:  # 3-fold stratified cross-validation of the log-loss over the alphas
                logistic = LogisticRegressionCV(Cs=Cs, cv=3, scoring="neg_log_loss", max_iter=1000).fit(Z, y, sample_weight=w)
                chosen = alphas[Cs.index(float(np.atleast_1d(logistic.C_)[0]))]
            coef = logistic.coef_.T.astype(np.float64)
            self.coef_ = coef[:, 0] if coef.shape[1] == 1 else coef
            self.intercept_ = (float(logistic.intercept_[0]) if coef.shape[1] == 1
                               else logistic.intercept_.astype(np.float64))
            self.alpha_ = float(chosen)
            self.selection_errors_ = None
            self.training_time_ = time.perf_counter() - t0
            self._temperature = 1.0  # the logistic model's own probabilities: the softmax of its logits
        else:
            self._store_temperature(Xs, Y, w)
        self.__dict__.pop("_ridge_stats", None)
        self._progress.close()
        return self

    @property
    def temperature_(self) -> float | None:
        """:meth:`predict_proba`'s temperature (see the class's Attributes).

        Examples
        --------
        >>> from rffkern import EERFClassifier
        >>> from rffkern.datasets import make_jse3
        >>> X, _, _ = make_jse3(100, random_state=0)
        >>> y = (X[:, 0] * X[:, 1] > 0).astype(int)
        >>> round(EERFClassifier(n_components=20, random_state=0).fit(X, y).temperature_, 2)
        3.26
        """
        if "_temperature" not in self.__dict__:
            raise AttributeError("temperature_ exists once the classifier is fitted")
        return self._temperature

    def _store_temperature(self, Xs, Y, sample_weight=None):
        """``temperature_`` from the exact leave-one-out decision values of (at most
        ``CALIBRATION_ROWS`` of) the rows ``Xs`` (standardized) of the ridge fit, +-1 targets ``Y``,
        as :class:`rffkern.RFFRidgeClassifier`'s."""
        Y = np.asarray(Y, np.float64)
        fmap = self._map()

        def loo_scores(rows, w):
            loo = loo_decisions(self._ridge_stats, fmap, Xs[rows], Y[rows], self.alpha_, True, w)
            return class_scores(loo)

        self._temperature, self._set_scores = temperature_of(
            class_codes(Y), loo_scores, calibration_rows(Xs.shape[0], sample_weight), sample_weight)

    def decision_function(self, X: ArrayLike) -> NDArray[np.floating]:
        """Decision values of the final linear model on the selected features.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            The samples (a Dask array is processed lazily, block by block).

        Returns
        -------
        ndarray of shape (n_samples,) or (n_samples, n_classes)
            One value per sample for two classes (positive: ``classes_[1]``), else one per class.

        Examples
        --------
        >>> from rffkern import EERFClassifier
        >>> from rffkern.datasets import make_jse3
        >>> X, _, _ = make_jse3(100, random_state=0)
        >>> y = (X[:, 0] * X[:, 1] > 0).astype(int)
        >>> EERFClassifier(n_components=20, random_state=0).fit(X, y).decision_function(X[:3]).shape
        (3,)
        """
        if is_dask_array(X):
            return map_rows(self.decision_function, X)
        return self._decision(X)

    def predict(self, X: ArrayLike) -> NDArray[Any]:
        """Predict class labels.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            The samples (a Dask array is processed lazily, block by block).

        Returns
        -------
        ndarray of shape (n_samples,)
            Labels from ``classes_``.

        Examples
        --------
        >>> from rffkern import EERFClassifier
        >>> from rffkern.datasets import make_jse3
        >>> X, _, _ = make_jse3(100, random_state=0)
        >>> y = (X[:, 0] * X[:, 1] > 0).astype(int)
        >>> EERFClassifier(n_components=20, random_state=0).fit(X, y).predict(X[:3])
        array([0, 1, 0])
        """
        if is_dask_array(X):
            return map_rows(self.predict, X)
        D = self.decision_function(X)  # first: it raises NotFittedError before classes_ exists
        return labels_from_decision(self.classes_, D)

    def predict_proba(self, X: ArrayLike) -> NDArray[np.float64]:
        """Class probabilities.

        ``solver="logistic"``: the logistic model's. ``solver="ridge"``: ``softmax(temperature_ *
        decision)`` over the classes (for two classes ``sigmoid(temperature_ *
        decision_function(X))`` for ``classes_[1]``), the one temperature fitted by log-loss to the
        exact leave-one-out decision values of (at most 2000 of) the training rows, as
        :meth:`rffkern.RFFRidgeClassifier.predict_proba`. Either way the most probable class is
        the one :meth:`predict` returns.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            The samples (a Dask array is processed lazily, block by block).

        Returns
        -------
        ndarray of shape (n_samples, n_classes)
            Probabilities of ``classes_``; every row sums to 1.

        Examples
        --------
        >>> from rffkern import EERFClassifier
        >>> from rffkern.datasets import make_jse3
        >>> X, _, _ = make_jse3(100, random_state=0)
        >>> y = (X[:, 0] * X[:, 1] > 0).astype(int)
        >>> clf = EERFClassifier(n_components=20, solver="logistic", alpha=1.0, random_state=0).fit(X, y)
        >>> clf.predict_proba(X[:2]).round(2)
        array([[0.83, 0.17],
               [0.45, 0.55]])
        >>> EERFClassifier(n_components=20, random_state=0).fit(X, y).predict_proba(X[:2]).round(2)
        array([[0.9 , 0.1 ],
               [0.46, 0.54]])
        """
        if is_dask_array(X):
            return map_rows(self.predict_proba, X)
        return np.exp(self._log_proba(X, "predict_proba"))

    def predict_log_proba(self, X: ArrayLike) -> NDArray[np.float64]:
        """Logarithm of :meth:`predict_proba`.

        Computed as a log-softmax: finite where the probability underflows to 0.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            The samples (a Dask array is processed lazily, block by block).

        Returns
        -------
        ndarray of shape (n_samples, n_classes)
            Log-probabilities of ``classes_``.

        Examples
        --------
        >>> from rffkern import EERFClassifier
        >>> from rffkern.datasets import make_jse3
        >>> X, _, _ = make_jse3(100, random_state=0)
        >>> y = (X[:, 0] * X[:, 1] > 0).astype(int)
        >>> EERFClassifier(n_components=20, random_state=0).fit(X, y).predict_log_proba(X[:1]).shape
        (1, 2)
        """
        if is_dask_array(X):
            return map_rows(self.predict_log_proba, X)
        return self._log_proba(X, "predict_log_proba")

    def _log_proba(self, X, method):
        """``log_softmax(temperature_ * decision)`` over the classes (``method`` names the caller)."""
        D = self.decision_function(X)  # first: it raises NotFittedError before the temperature exists
        return tempered_log_proba(self, class_scores(D), method)

    def __setstate__(self, state):
        super().__setstate__(state)
        if "coef_" in state and "_temperature" not in state and state.get("solver") == "logistic":
            # pickled by an rffkern without temperature_: the logistic model's own probabilities
            self._temperature = 1.0
