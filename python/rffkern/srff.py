"""Sparse random Fourier features (SRFF): Gregorová, Ramapuram, Kalousis & Marchand-Maillet 2018,
"Large-scale nonlinear variable selection via kernel random features"; see docs/user_guide/srff.rst.

The frequencies are ``omega_j = gamma * w_j``, with the directions ``w_j ~ N(0, I)`` drawn once and the
relevance vector ``gamma >= 0`` kept on the simplex ``{sum(gamma) = d / sigma}``. The model
``f(x) = sum_j a_j cos(w_j . (gamma * x) + b_j)`` (no ``sqrt(2/D)``, as in the reference port) is
fitted on standardised X and centred y by alternating

1. ``a = (Z.T Z + n lambda I)^{-1} Z.T y``: one :func:`rffkern.kernels.gram` pass with
   ``theta = gamma`` and a Cholesky solve;
2. ``gamma <- FISTA`` with backtracking on ``(1/2n) ||y - Z(gamma) a||^2`` projected on the
   simplex: each gradient is one :func:`rffkern.kernels.loss_and_grad` pass (the theta-gradient of
   the squared loss with ``theta = gamma``); the backtracking starts from twice the step the
   previous gamma step accepted.

Both loops stop when the objective stalls (relative change below ``tol`` over ``stall_window``
iterations) or at their iteration limits. ``lambda`` is chosen on a held-out split from the grid
``||X.T X||_2 * 10^e``, ``e in {-9.8, -9.6, ..., 0}``, walked as a path from large to small lambda:
each lambda starts from the previous one's gamma (warm start), the walk starts where ridge on the
initial features begins to explain the held-out targets (lambdas above that fit a constant), and it
stops when the held-out error has not improved for ``n_iter_no_change`` lambdas.

After the chosen model (``refit_components=1000``, not in the paper), the output coefficients and an
intercept are refitted by ridge on every row, on the trained features plus new draws of the same
kernel at the learned gamma, the penalty by exact leave-one-out (as RFFNet's closing ridge).

The algorithm is :mod:`rffkern._srff_solver`'s, on data terms of rows in memory here and of Dask
chunks in :mod:`rffkern._dask_srff`; the estimator owns the parameters and the fitted attributes.
"""
from __future__ import annotations

import numbers
from typing import Any, Sequence

import numpy as np
from numpy.typing import ArrayLike, NDArray
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted, validate_data

from rffkern import kernels
from rffkern._constraints import COMPONENTS, IntInterval, N_JOBS, RealSequence
from rffkern._dask import is_dask_array
from rffkern._dask_srff import fit_srff
from rffkern._data import TargetScaler, relative_sample_weight
from rffkern._inputs import fit_input_scaling, scaled_inputs, set_input_scaling
from rffkern._calibration import calibration_rows
from rffkern._linalg import simplex_projection
from rffkern._posterior import PosteriorRegressorMixin, uncertainty_docstring
from rffkern._progress import ProgressLog
from rffkern._rffnet_training import CLOSING_COMPONENTS_PER_ROW, REFIT_ALPHAS
from rffkern._ridge_solvers import FourierFeatureMap, fit_ridge_map
from rffkern._sampling import widen_map
from rffkern._srff_solver import (GRID_EXPONENTS, PATH_EXPONENTS, ArrayTerms, fista_gamma, fit_alphas,  # noqa: F401
                                  length_scale_rule, median_knn_distance, path_start, ridge_step, srff_alpha_grid,
                                  srff_fit_path, validation_split, weighted_loss_and_grad,
                                  weighted_median_knn_distance, y_too_large)
from rffkern._typing import RandomStateLike
from rffkern._validation import as_generator, resolve_n_threads

__all__ = ["SRFFRegressor", "srff_alpha_grid", "simplex_projection", "path_start"]


class _ArrayData:
    """The standardised rows of an in-memory fit as :func:`rffkern._srff_solver.fit_alphas` takes
    them: ``terms(rows)`` scales the targets of ``"all"`` rows or of the ``"train"`` split
    (``split`` set) and returns their data terms; ``"val"``: the held-out rows' terms in the
    training rows' scaling."""

    def __init__(self, est, Xs, y, w, n_threads):
        self.est, self.Xs, self.y, self.w, self.n_threads = est, Xs, y, w, n_threads
        self.split: tuple | None = None

    def _rows(self, rows):
        if rows == "all" or self.split is None:
            return self.Xs, self.y, self.w
        idx = self.split[0 if rows == "train" else 1]
        return np.ascontiguousarray(self.Xs[idx]), self.y[idx], None if self.w is None else self.w[idx]

    def terms(self, rows):
        X, y, w = self._rows(rows)
        est = self.est
        y = (y - est.y_mean_) / est.y_scale_ if rows == "val" else est._scale_targets(y, w)
        return ArrayTerms(X, y, est.weights_, est.offsets_, self.n_threads, w)


class SRFFRegressor(PosteriorRegressorMixin, RegressorMixin, BaseEstimator):
    """Sparse random Fourier features regression (Gregorová et al. 2018).

    Learns a kernel ridge model on ``n_components`` random features together with a relevance
    ``gamma_`` per input feature on the simplex; irrelevant inputs get ``gamma_j = 0``.

    A closing ridge on more features of the learned kernel (``refit_components``, not in the
    paper) gives the model the capacity of 1000 features for the training cost of 300.

    Raw X and y can be passed as they are: X is standardised (``standardize``), y centred and scaled
    (``normalize_y``), the kernel width follows the data (``length_scale="auto"``) and lambda is
    chosen on a held-out split along a warm-started path.

    Parameters
    ----------
    n_components : int, default=300
        Number of random features D.
    alpha : float, sequence of float or None, default=None
        The ridge penalty lambda (the solve uses ``n * lambda``). None searches every second value
        of the paper's grid :func:`srff_alpha_grid` (25 lambdas, 0.4 decades apart); a sequence is searched the same way: as a path from the
        largest to the smallest lambda on a held-out split, each lambda warm-started from the
        previous one's gamma, starting where ridge on the initial features first explains a tenth
        of what it can of the held-out targets (:func:`path_start`) and stopping after
        ``n_iter_no_change`` lambdas without a better held-out error.
    length_scale : float, "auto" or "knn", default="auto"
        The length scale sigma: gamma starts at ``1/sigma`` for every feature, so the simplex has size ``d / sigma``.
        "auto": the median pairwise distance between rows of the standardised X (subsample of 2000
        rows; the median heuristic of the scikit-learn kernel pipelines). This departs from the
        paper: its rule, "knn", the median distance to the 20 nearest neighbours (same subsample),
        gives a simplex 2 to 8 times larger on real data, too narrow a kernel that the relevance
        step can only redistribute, never widen (held-out RMSE / sd at 5000 training rows, seed 0:
        cpu_act 0.46 with "knn", 0.14 with "auto"; abalone 0.69 and 0.64). The reference port's
        ``sigma = 1`` is ``length_scale=1.0``. With ``sample_weight``, both rules count a row's
        relative weight (over the mean positive weight) as its copies.
    max_iter : int, default=30
        Limit of alternating (outer) iterations per lambda (the paper's reference code: 1000); on
        the warm-started path the next lambda goes on from where this one stopped.
    max_inner_iter : int, default=5
        Limit of FISTA iterations per gamma step (the paper's reference code: 100). Each outer
        iteration recomputes the coefficients, so an inexact gamma step is refined by the next one.
    tol : float, default=1e-3
        Relative objective change that counts as a stall (the paper's reference code: 1e-5). The
        defaults of ``max_inner_iter``, ``tol`` and ``n_iter_no_change`` (formerly 10, 1e-4, 4)
        were chosen on ``bench/bench_realdata.py`` (5000 training rows, seed 0): the fits take about
        half the time with the same or lower held-out error (cpu_act 22.7 s -> 12.7 s, RMSE / sd
        0.145 -> 0.132; elevators 21.6 s -> 7.9 s, 0.339 -> 0.312); the paper's behaviour is
        ``max_iter=1000, max_inner_iter=100, tol=1e-5``.
    stall_window : int, default=5
        Iterations over which the stall is measured (both loops).
    step_init : float, default=100.0
        Initial FISTA step, halved until the quadratic upper bound holds. The reference code starts
        every gamma step from it; here only the first of each lambda does, and each later one starts
        from twice the last step the previous one accepted (at most ``step_init``): the steps stay on
        the grid ``step_init / 2^k``, so the iterates are mostly the same, and each outer iteration
        skips the halvings down to the step the objective accepts (cpu_act, 1000 rows: 39 % fewer
        objective passes, nearly the same model). With ``normalize_y=True``
        the objective is that of the scaled targets, so this (and ``tol`` and lambda) mean the same
        whatever the units of y.
    n_iter_no_change : int, default=3
        The lambda path stops after this many lambdas without a lower held-out error.
    validation_fraction : float, default=0.2
        Held-out share for choosing lambda (when several are searched). The chosen model is the one
        trained on the rest, as in the paper's protocol, unless ``refit=True``.
    refit : bool, default=False
        Refit the chosen lambda on all the data (warm-started from the chosen gamma).
    standardize : bool, default=True
        Standardise X (mean 0, std 1 per feature) before fitting.
    robust_inputs : bool, default=True
        Keep rows far from the training data near it: a two-valued input
        (a one-hot level, a flag) is scaled by half the gap between its values rather than by its
        deviation (a rare level then lies 2 from the common one, not 30 deviations out); at
        predict each input is clipped to its training range (``x_min_``, ``x_max_``), as trees do
        implicitly; and ``standardize="auto"`` also tries "quantile" where an input is
        heavy-tailed. A finite random-feature model does not fall back to its mean far from the
        data as the exact kernel does, and answered such rows absurdly. False: the plain
        standardization.
    normalize_y : bool, default=True
        Centre y and divide it by its standard deviation before fitting (the predictions come back
        in y's units). ``False`` only centres y, as the paper does.
    random_state : int, Generator, RandomState or None, default=None
        Seed or generator of every random draw; the same value gives the same model whatever
        ``n_jobs``.
    n_jobs : int or None, default=None
        Threads of the compiled kernels (None: OpenMP's current limit, -1: all usable cores).
        The fitted model does not depend on it.
    verbose : int, default=0
        1 prints one line per lambda of the path, 2 also one line per outer iteration.
    refit_components : int or None, default=1000
        After the chosen model (this departs from the paper), refit the output coefficients and an
        intercept by ridge regression on the ``n_components`` trained features plus new draws of
        the same kernel at the learned ``gamma_`` (directions ``N(0, I)``, phases uniform), up to
        this many features (at most two per row), on every row (the training and the held-out
        ones; with sample weights, weighted), the penalty chosen by exact leave-one-out among
        RFFNet's ``REFIT_ALPHAS`` (1e-8 to 1e4, features scaled by ``sqrt(2 / s)``, targets
        scaled). ``gamma_`` is learned with ``n_components`` features, whose cost is paid at every
        iteration of the path; the closing ridge's are paid once (one Gram pass and one
        eigendecomposition), so the model gets the capacity of a 1000-feature kernel machine with
        the learned kernel. None: the paper's model (the chosen fit's coefficients on the trained
        features, ``intercept_ = y_mean_``); at most ``n_components``: the closing ridge on the
        trained features only. The new directions come from a child generator of
        ``random_state``, so every other draw is as without it. A fit on Dask arrays does the same
        with the distributed Gram and leave-one-out passes. The closing ridge costs a second or
        two on the benchmarks' data sets and lowers the test error on eight of their nine
        regression sets, most on kin40k; it runs on every row, the path's held-out ones included,
        because on the training rows alone it does worse (:doc:`/design_notes`).

    Attributes
    ----------
    gamma_ : ndarray of shape (n_features_in_,)
        Learned relevances (on standardised inputs), summing to ``d / length_scale``, ``d`` the
        number of inputs that vary on the training rows (the others' are 0).
    feature_importances_ : ndarray of shape (n_features_in_,)
        ``gamma_ / gamma_.sum()`` (zeros when no input varies).
    weights_ : ndarray of shape (n_features_in_, n_map)
        The directions ``w_j ~ N(0, I)``, drawn once; the frequencies are ``gamma_[:, None] * weights_``.
        ``n_map`` is ``n_components``, or the closing ridge's feature count (``refit_components``,
        at most two per row) when that is larger; the trained directions come first.
    offsets_ : ndarray of shape (n_map,)
        The random phases.
    coef_ : ndarray of shape (n_map,)
        In the units of the scaled targets (``predict`` multiplies by ``y_scale_``): the model is
        ``cos((x_std * gamma_) @ weights_ + offsets_) @ coef_ * y_scale_ + intercept_``.
    intercept_ : float
        ``y_mean_``, plus the closing ridge's intercept (in y's units) with ``refit_components``.
    refit_alpha_ : float or None
        The closing ridge's penalty (``refit_components``; None without it).
    alpha_ : float
        The chosen lambda.
    length_scale_ : float
        The sigma used.
    alphas_ : ndarray
        The lambdas searched, from the largest to the smallest.
    validation_errors_ : ndarray or None
        Held-out MSE (in y's units) per lambda of ``alphas_``; NaN for lambdas the path skipped
        (above its start or after it stopped).
    objective_ : list of float
        Objective after each ridge step of the chosen fit.
    n_iter_ : int
        Outer iterations of the chosen fit.
    n_outer_iter_total_ : int
        Outer iterations summed over the whole path.
    x_mean_, x_scale_ : ndarray of shape (n_features_in_,)
        The standardisation of X (zeros and ones with ``standardize=False``); the inputs constant
        on the training rows have an infinite scale: they standardize to 0 on every row, and their
        ``gamma_`` is 0.
    x_min_, x_max_ : ndarray of shape (n_features_in_,) or None
        The training range each input is clipped to at predict (None with ``robust_inputs=False``).
    input_quantiles_ : sklearn.preprocessing.QuantileTransformer or None
        With ``standardize_="quantile"``: the normal scores of the heavy-tailed inputs
        ``quantile_columns_`` (None otherwise).
    y_mean_, y_scale_ : float
        The scaling of y.

    Examples
    --------
    >>> import numpy as np
    >>> from rffkern import SRFFRegressor
    >>> from rffkern.datasets import make_jse3
    >>> X, y, support = make_jse3(300, random_state=0)  # y depends on columns 0 and 1
    >>> model = SRFFRegressor(n_components=50, random_state=0).fit(X, y)  # lambda on a held-out 20 %
    >>> sorted(np.argsort(-model.feature_importances_)[:2].tolist())
    [0, 1]
    >>> bool(model.score(X, y) > 0.9)
    True
    """

    validation_errors_: NDArray[np.float64] | None  # declared for type checkers only
    refit_alpha_: float | None

    _parameter_constraints = {
        "n_components": [COMPONENTS],
        "alpha": [Interval(numbers.Real, 0, None, closed="neither"), RealSequence(0, closed="neither"), None],
        "length_scale": [Interval(numbers.Real, 0, None, closed="neither"), StrOptions({"auto", "knn"})],
        "max_iter": [IntInterval(1, None, closed="left")],
        "max_inner_iter": [IntInterval(1, None, closed="left")],
        "tol": [Interval(numbers.Real, 0, None, closed="left")],
        "stall_window": [IntInterval(1, None, closed="left")],
        "step_init": [Interval(numbers.Real, 0, None, closed="neither")],
        "n_iter_no_change": [IntInterval(1, None, closed="left")],
        "validation_fraction": [Interval(numbers.Real, 0, 1, closed="neither")],
        "refit": ["boolean"],
        "standardize": ["boolean"],
        "robust_inputs": ["boolean"],
        "normalize_y": ["boolean"],
        "random_state": ["random_state", np.random.Generator],
        "n_jobs": N_JOBS,
        "verbose": ["verbose"],
        "refit_components": [Interval(numbers.Integral, 1, None, closed="left"), None],
    }

    def __init__(self, n_components: int = 300, *, alpha: float | Sequence[float] | None = None,
                 length_scale: float | str = "auto", max_iter: int = 30, max_inner_iter: int = 5,
                 tol: float = 1e-3, stall_window: int = 5, step_init: float = 100.0,
                 n_iter_no_change: int = 3, validation_fraction: float = 0.2, refit: bool = False,
                 standardize: bool = True, robust_inputs: bool = True, normalize_y: bool = True,
                 random_state: RandomStateLike = None, n_jobs: int | None = None,
                 verbose: int = 0, refit_components: int | None = 1000) -> None:
        self.n_components = n_components
        self.alpha = alpha
        self.length_scale = length_scale
        self.max_iter = max_iter
        self.max_inner_iter = max_inner_iter
        self.tol = tol
        self.stall_window = stall_window
        self.step_init = step_init
        self.n_iter_no_change = n_iter_no_change
        self.validation_fraction = validation_fraction
        self.refit = refit
        self.standardize = standardize
        self.robust_inputs = robust_inputs
        self.normalize_y = normalize_y
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.verbose = verbose
        self.refit_components = refit_components

    def _standardise(self, X):
        return scaled_inputs(self, X)

    def _gamma0(self, d):
        """``1 / length_scale_`` per input, 0 for the inputs constant on the training rows (an
        infinite ``x_scale_``: standardized to 0, they stay out of the simplex)."""
        return np.where(np.isinf(self.x_scale_[:d]), 0.0, 1.0 / self.length_scale_)

    def _scale_targets(self, y, sample_weight=None):
        """Fit the target scaler on y; returns the scaled (centred) targets."""
        if not self.normalize_y:
            y_centred = y - y.mean()
            with np.errstate(over="ignore"):
                y_overflows = not np.isfinite(y_centred @ y_centred)
            if y_overflows:
                raise y_too_large()
        scaler = TargetScaler(self.normalize_y).fit(y, sample_weight)
        self.y_mean_, self.y_scale_ = float(scaler.mean_[0]), float(scaler.scale_[0])
        return scaler.transform(y)

    def fit(self, X: ArrayLike, y: ArrayLike, sample_weight: ArrayLike | None = None) -> SRFFRegressor:
        """Fit the relevances and the ridge model, choosing lambda on a held-out split.

        Parameters
        ----------
        X : array-like or dask.array.Array of shape (n_samples, n_features)
            Training data. A Dask array (chunked by rows) is fitted with the data terms on the
            workers and the alternating minimisation here: the same model as the fit of the
            computed arrays, up to the order of floating-point sums.
        y : array-like or dask.array.Array of shape (n_samples,)
            Real-valued targets.
        sample_weight : array-like or dask.array.Array of shape (n_samples,), default=None
            Non-negative weight of each sample (None: all 1), relative: divided by their mean
            over the rows of positive weight, so that weights ``c w`` fit the model of ``w`` and
            equal weights the model of none. Rows of zero weight are dropped first; the others
            weight the standardisation, the target scaling, the objective's data term
            (``sum_i w_i (y_i - f(x_i))^2 / (2 sum_i w_i)``, in the coefficient step and in the
            gamma step), the lambda grid (``||X.T diag(w) X||_2``), the held-out error that
            chooses lambda and the closing ridge's sums and leave-one-out errors. The held-out
            split is drawn over the rows of positive weight, and ``length_scale="auto"`` counts a
            row's relative weight as its copies (the closing ridge's leave-one-out leaves out a
            row with all its weight, not one copy). A weighted fit costs more per
            iteration (two compiled passes per gamma-gradient, the Gram from blocks
            of features); on Dask arrays, one more pass to find the rows of positive weight.

        Returns
        -------
        self
            The fitted estimator.

        Examples
        --------
        >>> from rffkern import SRFFRegressor
        >>> from rffkern.datasets import make_jse3
        >>> X, y, support = make_jse3(100, random_state=0)
        >>> model = SRFFRegressor(n_components=20, alpha=0.03, max_iter=5, random_state=0)
        >>> model.fit(X, y).gamma_.shape
        (10,)
        """
        if is_dask_array(X):  # data terms on the workers, the alternating minimisation here
            return fit_srff(self, X, y, sample_weight)
        self._validate_params()
        self._log = ProgressLog(self, self.verbose)
        X, y = validate_data(self, X, y, dtype=np.float64, y_numeric=True)
        w = relative_sample_weight(sample_weight, X.shape[0])[0]
        if w is not None and not (w > 0).all():  # zero weights: the rows are dropped
            keep = w > 0
            X, y, w = X[keep], y[keep], w[keep]
        n, d = X.shape
        rng = as_generator(self.random_state)
        n_threads = resolve_n_threads(self.n_jobs)
        set_input_scaling(self, fit_input_scaling(X, w, bool(self.standardize), self.robust_inputs))
        Xs = np.ascontiguousarray(self._standardise(X))
        if self.length_scale in ("auto", "knn"):
            self.length_scale_ = length_scale_rule(self.length_scale, Xs, w, rng)
        else:
            self.length_scale_ = float(self.length_scale)
        self.weights_ = rng.standard_normal((d, self.n_components))
        self.offsets_ = rng.uniform(0.0, 2.0 * np.pi, self.n_components)
        if self.alpha is None:
            alphas = srff_alpha_grid(Xs if w is None else Xs * np.sqrt(w)[:, None], PATH_EXPONENTS)
        else:
            alphas = np.atleast_1d(np.asarray(self.alpha, np.float64))
        data = _ArrayData(self, Xs, y, w, n_threads)
        if alphas.size > 1:
            data.split = validation_split(self, n, rng)
        gamma = fit_alphas(self, alphas, data, self._log)
        if self.refit_components is not None:  # on every row: those of the path and the held-out ones
            self._closing_ridge(Xs, y, w, gamma, rng, n_threads)
        self._log.close()  # (progress bars of a path stopped early)
        return self

    def _closing_map(self, n_rows, rng):
        """The closing ridge's ``(weights, offsets, scale)``: the trained directions and phases, plus
        new draws up to ``refit_components`` (at most ``CLOSING_COMPONENTS_PER_ROW * n_rows``) from a
        child generator of ``rng`` (the draws of the fit itself stay as they were); the features
        are scaled by ``sqrt(2 / s)``, so that ``Z Z.T`` approximates the kernel matrix and the
        penalties mean what they mean for RFFNet's closing ridge."""
        W, b = widen_map("gaussian", self.weights_, self.offsets_,
                         min(self.refit_components, CLOSING_COMPONENTS_PER_ROW * n_rows), rng)
        return W, b, kernels.default_scale(W.shape[1])

    def _set_closing(self, W, b, scale, coef, intercept, alpha):
        """Store the closing ridge's map and solution (``coef`` of the scaled map, ``intercept`` in
        the units of the scaled targets)."""
        self.weights_, self.offsets_ = W, b
        self.coef_ = np.ascontiguousarray(np.asarray(coef, np.float64).reshape(-1) * scale)
        self.intercept_ = float(self.y_mean_ + float(np.asarray(intercept).reshape(-1)[0]) * self.y_scale_)
        self.refit_alpha_ = float(alpha)

    def _closing_ridge(self, Xs, y, w, gamma, rng, n_threads):
        """``refit_components``: the output coefficients and the intercept by ridge on the trained
        features plus new draws of the same kernel at the learned gamma (:meth:`_closing_map`),
        the penalty by exact leave-one-out over ``REFIT_ALPHAS``."""
        W, b, scale = self._closing_map(Xs.shape[0], rng)
        fmap = FourierFeatureMap(W, b, scale, n_threads=n_threads)
        Xr = np.ascontiguousarray(Xs * gamma)
        Yr = ((y - self.y_mean_) / self.y_scale_).reshape(-1, 1)
        coef, intercept, alpha, _, stats = fit_ridge_map(fmap, Xr, Yr, REFIT_ALPHAS, fit_intercept=True,
                                                         selection="loo", sample_weight=w)
        self._set_closing(W, b, scale, coef, intercept, alpha)
        # the uncertainty's statistics, and predict_interval's scores from rows of the fit
        self._posterior_stats, self._closing_scale = stats, scale
        rows = calibration_rows(Xr.shape[0], w)
        self._store_conformity(fmap.features(Xr[rows]), np.asarray(y, np.float64)[rows, None],
                               None if w is None else w[rows])

    def _ridge_state(self):
        stats = self.__dict__.get("_posterior_stats")
        if stats is None:
            raise ValueError("SRFFRegressor's uncertainty comes from its closing ridge: fit it in memory with "
                             "refit_components set (the default, 1000)")
        return stats, self.refit_alpha_, True, self.y_scale_

    def _ridge_solution(self):
        coef = np.asarray(self.coef_, np.float64)[:, None] / self._closing_scale * float(self.y_scale_)
        return coef, np.array([float(self.intercept_)])

    def _features(self, X):
        """The closing ridge's features of X (as ``predict`` maps them)."""
        check_is_fitted(self)
        X = validate_data(self, X, dtype=np.float64, reset=False)
        Xs = np.ascontiguousarray(self._standardise(X))
        return kernels.features(Xs, self.weights_, self.offsets_, theta=self.gamma_, scale=self._closing_scale,
                                n_threads=resolve_n_threads(self.n_jobs))

    def _decision(self, X):
        check_is_fitted(self)
        X = validate_data(self, X, dtype=np.float64, reset=False)
        Xs = np.ascontiguousarray(self._standardise(X))
        F = kernels.predict(Xs, self.weights_, self.offsets_, self.coef_, theta=self.gamma_, scale=1.0,
                            n_threads=resolve_n_threads(self.n_jobs))
        return F * self.y_scale_ + self.intercept_

    @uncertainty_docstring
    def predict(self, X: ArrayLike, return_std: bool = False, return_cov: bool = False) -> Any:
        """Predict, computing the features on the fly without storing them.

        With ``return_std`` or ``return_cov`` (``refit_components``): the uncertainty of the closing
        ridge, the Bayesian linear model of :meth:`rffkern.RFFRidge.predict` on the learned kernel's
        features.

        {parameters}

        Examples
        --------
        >>> from rffkern import SRFFRegressor
        >>> from rffkern.datasets import make_jse3
        >>> X, y, support = make_jse3(100, random_state=0)
        >>> model = SRFFRegressor(n_components=20, alpha=0.03, max_iter=5, random_state=0)
        >>> model.fit(X, y).predict(X[:3]).shape
        (3,)
        """
        return self._predict_with_uncertainty(X, return_std, return_cov)
