"""Adaptive random Fourier features with Metropolis sampling (Kammonen et al. 2020).

Kammonen, Kiessling, Plecháč, Sandberg & Szepessy 2020, "Adaptive random Fourier features with
Metropolis sampling"; see docs/user_guide/adaptive.rst.

The model is ``f(x) = sum_k a_k cos(omega_k . x) + b_k sin(omega_k . x)`` (the real form of
``sum_k beta_k exp(i omega_k . x)``), with amplitude ``|beta_k| = ||(a_k, b_k)||`` (and the norm over
all outputs for several targets, as the paper does for MNIST's ten one-vs-all problems). Given the
frequencies the amplitudes solve ``(S.T S + lambda N I) beta = S.T y``. Each Metropolis iteration

1. proposes ``omega'_k = omega_k + delta zeta_k`` for every k (``zeta ~ N(0, I)``, or
   ``N(0, C)`` with ``C`` the running covariance of all past frequencies after the burn-in:
   Algorithm 2; by default with the mean eigenvalue of ``C`` capped at 1 and its condition
   number bounded, see :meth:`RunningCovariance.proposal_factor`);
2. solves the least squares for all proposals at once: one :func:`rffkern.kernels.gram` pass
   (``pair=True``, ``scale=1``) and a Cholesky solve of size 2K;
3. accepts each ``omega'_k`` (with its ``beta'_k``) with probability
   ``min(1, (|beta'_k| / |beta_k|)^gamma)``, ``gamma = 3 d - 2`` by default.

After the last iteration the amplitudes are solved once more for the final frequencies. By default
(not the paper; ``early_stopping=False, final_alpha=None, init_scale="median"`` or ``1.0`` give the
paper's run) the initial width is chosen among a few multiples of the median heuristic by exact
LOO, the chain runs on 80 % of the rows, and the frequencies and final lambda are the checked ones
of least error on the held-out 20 %. Inputs and
targets are standardised first (the paper's Algorithm 3).
"""
from __future__ import annotations

import numbers
from typing import Any, Sequence

import numpy as np
from numpy.typing import ArrayLike, NDArray
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
from sklearn.preprocessing import LabelBinarizer
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted, validate_data

from rffkern import kernels
from rffkern._adaptive_chain import (FINAL_ALPHAS, GCV_ALPHAS, PROPOSAL_EIGEN_FLOOR, PROPOSAL_FLOAT32_MIN_INPUTS,
                                     RowsInMemory, RunningCovariance, amplitudes, chain_start, class_temperature,
                                     fit_chain, gcv_lambda, least_squares, median_scale_of, metropolis_accept,
                                     metropolis_step)
from rffkern._calibration import ConformalSetMixin, calibration_rows, tempered_log_proba
from rffkern._constraints import COMPONENTS, N_JOBS, IntInterval, RealSequence
from rffkern._dask import is_dask_array, map_rows
from rffkern._dask_adaptive import fit_adaptive
from rffkern._data import TargetScaler, labels_from_decision, mean_and_scale, relative_sample_weight
from rffkern._inputs import fit_input_scaling, scaled_inputs, set_input_scaling
from rffkern._linalg import single_threaded_blas
from rffkern._posterior import PosteriorRegressorMixin, uncertainty_docstring
from rffkern._progress import ProgressLog
from rffkern._ridge_solvers import GramStats
from rffkern._typing import RandomStateLike
from rffkern._validation import as_generator, check_class_labels, resolve_n_threads
from rffkern.ridge import choose_standardization, resolve_standardization

__all__ = ["AdaptiveRFFRegressor", "AdaptiveRFFClassifier", "metropolis_accept", "gcv_lambda", "RunningCovariance",
           "GCV_ALPHAS", "FINAL_ALPHAS", "PROPOSAL_EIGEN_FLOOR", "PROPOSAL_FLOAT32_MIN_INPUTS", "amplitudes",
           "least_squares", "metropolis_step"]


class _AdaptiveRFFBase(BaseEstimator):
    _parameter_constraints = {
        "n_components": [COMPONENTS],
        "n_iter": [IntInterval(0, None, closed="left")],
        "step": [Interval(numbers.Real, 0, None, closed="neither"), StrOptions({"auto"})],
        "gamma": [Interval(numbers.Real, 0, None, closed="neither"), None],
        "alpha": [Interval(numbers.Real, 0, None, closed="neither"), RealSequence(0, closed="neither")],
        "final_alpha": [Interval(numbers.Real, 0, None, closed="neither"), RealSequence(0, closed="neither"),
                        None],
        "early_stopping": ["boolean"],
        "validation_fraction": [Interval(numbers.Real, 0, 1, closed="neither")],
        "adaptive_covariance": ["boolean", StrOptions({"unscaled"})],
        "burn_in": [Interval(numbers.Real, 0, 1, closed="both")],
        "omega_max": [Interval(numbers.Real, 0, None, closed="neither"), None],
        "resample": ["boolean"],
        "resample_threshold": [Interval(numbers.Real, 0, 1, closed="both")],
        "init_scale": [Interval(numbers.Real, 0, None, closed="left"), StrOptions({"auto", "median"})],
        "standardize": [StrOptions({"auto", "global", "quantile"}), "boolean"],
        "robust_inputs": ["boolean"],
        "keep_frequency_history": [IntInterval(0, None, closed="left")],
        "random_state": ["random_state", np.random.Generator],
        "n_jobs": N_JOBS,
        "verbose": ["verbose"],
    }

    def __init__(self, n_components: int = 256, *, n_iter: int = 100, step: float | str = "auto",
                 gamma: float | None = None, alpha: float | Sequence[float] = 1e-3,
                 final_alpha: float | Sequence[float] | None = FINAL_ALPHAS, early_stopping: bool = True,
                 validation_fraction: float = 0.2,
                 adaptive_covariance: bool | str = True, burn_in: float = 0.1, omega_max: float | None = None,
                 resample: bool = False, resample_threshold: float = 0.5, init_scale: float | str = "auto",
                 standardize: bool | str = "auto", robust_inputs: bool = True,
                 keep_frequency_history: int = 0, random_state: RandomStateLike = None,
                 n_jobs: int | None = None, verbose: int = 0) -> None:
        self.n_components = n_components
        self.n_iter = n_iter
        self.step = step
        self.gamma = gamma
        self.alpha = alpha
        self.final_alpha = final_alpha
        self.early_stopping = early_stopping
        self.validation_fraction = validation_fraction
        self.adaptive_covariance = adaptive_covariance
        self.burn_in = burn_in
        self.omega_max = omega_max
        self.resample = resample
        self.resample_threshold = resample_threshold
        self.init_scale = init_scale
        self.standardize = standardize
        self.robust_inputs = robust_inputs
        self.keep_frequency_history = keep_frequency_history
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.verbose = verbose

    def _standardise(self, X):
        return scaled_inputs(self, X)

    @single_threaded_blas
    def _run(self, X, Y, sample_weight=None):
        """The Metropolis loop on X and centred, scaled targets Y (n, m), with the relative
        ``sample_weight`` (None: 1 each); returns the final frequencies' :class:`PairStats` on
        every standardised row, where the final fit computed them (else None).

        Its BLAS / LAPACK calls (K x K solves and eigendecompositions) run on one thread: they
        alternate with the compiled Gram's OpenMP region every iteration, and the idle threads of
        a multi-threaded OpenBLAS spin between them and slow the Gram down (docs/design_notes.rst).
        """
        self._validate_params()
        w = sample_weight
        n, d = X.shape
        rng = as_generator(self.random_state)
        n_threads = resolve_n_threads(self.n_jobs)
        log = ProgressLog(self, self.verbose)
        self.standardize_, self.standardize_errors_ = resolve_standardization(self.standardize, X, Y, w, rng,
                                                                              self.n_jobs, self.robust_inputs)
        if self.standardize == "auto":
            log.step("standardize", 1, 1, f"{self.standardize_!r} (probe ridge)")
        set_input_scaling(self, fit_input_scaling(X, w, self.standardize_, self.robust_inputs))
        Xs = self._standardise(X)
        Y = np.ascontiguousarray(Y, dtype=Xs.dtype)
        median_scale = median_scale_of(Xs, w, rng) if isinstance(self.init_scale, str) else None
        start = chain_start(self, n, d, median_scale, rng, None if w is None else np.flatnonzero(w > 0))
        Xc, Yc, wc = Xs, Y, w   # the rows of the chain: all of them, or the training part
        Xv = Yv = wv = None
        if start.split is not None:
            tr, va = start.split
            Xc, Yc = np.ascontiguousarray(Xs[tr]), np.ascontiguousarray(Y[tr])
            Xv, Yv = np.ascontiguousarray(Xs[va]), Y[va]
            wc, wv = (None, None) if w is None else (w[tr], w[va])
        # the chain's rows as the kernels' centered sparse rows where few entries differ from their
        # column's usual value (one-hot columns, blank pixels): every unweighted Gram pass of the
        # chain reads them instead of the dense rows (kernels.gram takes either; the same values up
        # to rounding)
        chain_rows = RowsInMemory(Xc, Yc, n_threads, Xv, Yv, wc, wv, gram_rows=kernels.centered_rows(Xc))
        return fit_chain(self, start, chain_rows, RowsInMemory(Xs, Y, n_threads, sample_weight=w), rng, log)

    def _raw_predict(self, X):
        check_is_fitted(self)
        X = validate_data(self, X, dtype=[np.float64, np.float32], reset=False)
        Xs = self._standardise(X)
        return kernels.predict(Xs, self.frequencies_.astype(Xs.dtype), None, self.coef_.astype(Xs.dtype),
                               scale=1.0, pair=True, n_threads=resolve_n_threads(self.n_jobs))


_DOC = """
    Parameters
    ----------
    n_components : int, default=256
        K, the number of frequencies (2K features ``[cos, sin]``).
    n_iter : int, default=100
        M, the Metropolis iterations.
    step : float or "auto", default="auto"
        The random-walk step delta; "auto" is Roberts & Rosenthal's ``2.4^2 / d``. Tune it on
        validation data as the paper does.
    gamma : float or None, default=None
        Exponent of the acceptance ratio; None gives ``3 d - 2``.
    alpha : float or sequence of float, default=1e-3
        The penalty lambda in ``(S.T S + lambda N I) beta = S.T y``. A sequence (e.g. ``GCV_ALPHAS``, 1e-8
        to 1) is searched by generalised cross-validation from the least-squares Gram (one
        eigendecomposition for all of them): once at the initial frequencies, for the Metropolis
        iterations, and (with ``final_alpha=None`` and ``early_stopping=False``) once at the final
        frequencies, for the returned amplitudes. Not the default: on cal_housing (3000 training
        rows) GCV at the final frequencies chose 1e-7 and the test RMSE/sd was 3.10 (training 0.43)
        against 0.52 with 1e-3; frequencies sampled on the rows they are scored on extrapolate
        badly.
    final_alpha : float, sequence of float or None, default=FINAL_ALPHAS
        The lambdas of the returned amplitudes (``FINAL_ALPHAS``: 19 values from 1e-8 to 10). With
        ``early_stopping`` they are searched by the held-out error at every check; without it by
        exact leave-one-out on every row at the final frequencies (one Gram pass and one LOO pass;
        :func:`rffkern._ridge_solvers.fit_ridge_map`). They are also the lambdas of the initial
        width search (``init_scale="auto"``). None keeps the chain's ``alpha`` (the paper).
    early_stopping : bool, default=True
        Not the paper: hold out ``validation_fraction`` of the rows, run the chain on the rest,
        and every ``max(1, n_iter // 10)`` iterations (and before the first) score the current
        frequencies on the held-out rows at every ``final_alpha``; the frequencies and lambda of
        least held-out error are kept and their amplitudes solved on every row. The whole chain
        with ``alpha=1e-3`` overfits small or noisy data: test RMSE/sd 1.55 against 0.81 for
        scikit-learn's kernel ridge on diabetes, 1.22 against 0.99 on online_news, where the
        initial frequencies (iteration 0) fit better than any later ones. False runs the chain on
        every row and keeps its last frequencies (the paper).
    validation_fraction : float, default=0.2
        The share of rows held out with ``early_stopping``.
    adaptive_covariance : bool or "unscaled", default=True
        Algorithm 2: after the burn-in, propose ``omega + step * zeta`` with ``zeta ~ N(0, C)``
        and ``C`` the covariance of all frequencies seen so far (Algorithm 1, ``N(0, I)``, when
        False). True guards ``C``: the mean of its eigenvalues is capped at 1 (the paper's initial
        ``C = I``, so the steps never exceed Algorithm 1's) and each is floored at 1e-2 of their
        mean; below the cap and above the floor it is the paper's ``C`` unchanged, and in 1-D,
        where ``C`` outgrows 1, Algorithm 1. "unscaled" is the paper's ``C`` itself; its scale
        feeds back into the spread of the frequencies and, where the amplitudes do not decay,
        diverges (frequencies near 1e14 after 100 iterations on ``sin(4x) + sin(11x)``) unless
        ``omega_max`` bounds it.
    burn_in : float, default=0.1
        Fraction of ``n_iter`` before the covariance is switched on.
    omega_max : float or None, default=None
        Proposals with ``||omega'|| > omega_max`` are rejected.
    resample : bool, default=False
        Multinomial resampling of the frequencies with ``p_k ~ |beta_k|`` whenever the effective
        sample size ``(sum |beta|)^2 / sum |beta|^2`` drops below ``resample_threshold * K``.
    resample_threshold : float, default=0.5
        Share of ``K`` the effective sample size must stay above (with ``resample=True``).
    init_scale : float, "auto" or "median", default="auto"
        Initial frequencies ``N(0, init_scale^2 I)`` (0 starts them all at the origin). "median"
        is the median heuristic: ``1 / median pairwise distance`` of the standardised X (subsample
        of 2000 rows), the Gaussian kernel of that width. "auto" compares that width times
        ``EXTENDED_WIDTH_FACTORS`` = (0.5, 1, 2, 4), extended by halving (doubling) the width while the
        smallest (largest) is the best, within 0.5 to 16 times the median width (EERF's rule,
        :func:`rffkern._selection.next_width`), (the same unit draw scaled) by the exact LOO error of
        their ridge fits on the chain's rows over the lambdas of ``final_alpha`` (one Gram and one
        LOO pass each; the initial frequencies do not depend on y, so the LOO error is an honest
        one) and starts the chain from the best; the Metropolis steps of ``2.4^2 / d`` rarely move
        the width far from its start (cpu_act: test RMSE/sd 0.36 from the median width, 0.27
        from twice it). The paper's ``N(0, I)`` is ``1.0``.
    standardize : {"auto", True, "global", "quantile", False}, default="auto"
        How X is centred and scaled: True, each input by its own deviation (the paper's
        standardisation); "global", all by one pooled deviation (pixels); "auto", the one
        :func:`rffkern.ridge.choose_standardization` keeps (an ``RFFRidge(500)`` at its defaults on
        at most 3000 rows: True unless "global" has the lower leave-one-out error by more than one
        standard error); on Dask arrays the probe runs on
        at most ``PROBE_ROWS`` rows gathered from X. False: X as given. The pooled deviation
        serves pixels (:doc:`/design_notes`). "quantile": each heavy-tailed input (not two-valued, a
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
    keep_frequency_history : int, default=0
        Keep a copy of the frequencies every this many iterations in ``frequency_history_``
        (0 keeps none; memory ``d K n_iter / keep_frequency_history``).
    random_state : int, Generator, RandomState or None, default=None
        Seed or generator of every random draw; the same value gives the same model whatever
        ``n_jobs``.
    n_jobs : int or None, default=None
        Threads of the compiled kernels (None: OpenMP's current limit, -1: all usable cores).
        The fitted model does not depend on it.
    verbose : int, default=0
        Print the acceptance rate ten times during the run.

    Attributes
    ----------
    frequencies_ : ndarray of shape (n_features_in_, n_components)
        The sampled frequencies (for standardised inputs).
    coef_ : ndarray of shape (2 * n_components, n_outputs)
        Amplitudes: cos coefficients then sin coefficients.
    amplitudes_ : ndarray of shape (n_components,)
        ``|beta_k|``, the norm of frequency k's coefficients (over all outputs).
    acceptance_rate_ : float
        Mean acceptance rate over the iterations.
    history_ : dict
        ``"acceptance"``: the acceptance rate of every iteration; ``"proposal_mse"``: the training
        MSE (standardised targets) of each iteration's proposed frequencies; ``"n_resamples"``.
    frequency_history_ : ndarray of shape (n_snapshots, n_features_in_, n_components) or None
        Snapshots of the frequencies (see ``keep_frequency_history``).
    proposal_covariance_ : ndarray of shape (n_features_in_, n_features_in_)
        The covariance of the last proposals.
    gamma_, step_, init_scale_, alpha_ : float
        The values used.
    gcv_errors_ : ndarray or None
        GCV error of every ``alpha`` at the final frequencies (``final_alpha=None`` and
        ``early_stopping=False`` with several alphas; else None).
    loo_errors_ : ndarray or None
        Exact LOO error (standardised targets) of every ``final_alpha`` at the final frequencies
        (``early_stopping=False`` with several ``final_alpha``; else None).
    validation_errors_ : ndarray or None
        With ``early_stopping``: the least held-out error (over ``final_alpha``) at each check,
        the initial frequencies first; else None.
    best_iteration_ : int
        The iteration whose frequencies were kept (``n_iter`` without early stopping).
    init_scales_, init_scale_errors_ : list of float or None
        The initial frequency scales compared by ``init_scale="auto"``, in the order tried, and
        the least LOO error (over the lambdas) of each; None for a single scale.
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


class AdaptiveRFFRegressor(PosteriorRegressorMixin, RegressorMixin, _AdaptiveRFFBase):
    __doc__ = """Regression with adaptive random Fourier features (Kammonen et al. 2020).

    Frequencies are sampled by a random-walk Metropolis chain whose acceptance favours large
    amplitudes, so the fitted model equidistributes its amplitudes. X is standardised, and y too
    with ``normalize_y=True`` (the paper's Algorithm 3).
""" + _DOC.replace("    random_state", """    normalize_y : bool, default=True
        Centre and scale each output (:class:`rffkern._data.TargetScaler`); False only centres it
        (lambda then acts on y in its own units).
    random_state""", 1) + """    y_mean_, y_scale_ : ndarray of shape (n_outputs,)
        The scaling of y.

    Examples
    --------
    >>> from rffkern import AdaptiveRFFRegressor
    >>> from rffkern.datasets import make_jse3
    >>> X, y, support = make_jse3(100, random_state=0)
    >>> model = AdaptiveRFFRegressor(n_components=16, n_iter=10, random_state=0).fit(X, y)
    >>> model.frequencies_.shape, model.coef_.shape
    ((10, 16), (32, 1))
"""

    _parameter_constraints = {**_AdaptiveRFFBase._parameter_constraints, "normalize_y": ["boolean"]}

    def __init__(self, n_components: int = 256, *, n_iter: int = 100, step: float | str = "auto",
                 gamma: float | None = None, alpha: float | Sequence[float] = 1e-3,
                 final_alpha: float | Sequence[float] | None = FINAL_ALPHAS, early_stopping: bool = True,
                 validation_fraction: float = 0.2,
                 adaptive_covariance: bool | str = True, burn_in: float = 0.1, omega_max: float | None = None,
                 resample: bool = False, resample_threshold: float = 0.5, init_scale: float | str = "auto",
                 standardize: bool | str = "auto", robust_inputs: bool = True,
                 keep_frequency_history: int = 0, normalize_y: bool = True,
                 random_state: RandomStateLike = None, n_jobs: int | None = None, verbose: int = 0) -> None:
        super().__init__(n_components, n_iter=n_iter, step=step, gamma=gamma, alpha=alpha, final_alpha=final_alpha,
                         early_stopping=early_stopping, validation_fraction=validation_fraction,
                         adaptive_covariance=adaptive_covariance, burn_in=burn_in, omega_max=omega_max,
                         resample=resample, resample_threshold=resample_threshold, init_scale=init_scale,
                         standardize=standardize, robust_inputs=robust_inputs,
                         keep_frequency_history=keep_frequency_history, random_state=random_state,
                         n_jobs=n_jobs, verbose=verbose)
        self.normalize_y = normalize_y

    def fit(self, X: ArrayLike, y: ArrayLike, sample_weight: ArrayLike | None = None) -> AdaptiveRFFRegressor:
        """Run the Metropolis sampler on (X, y) and solve the final amplitudes.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training data.
        y : array-like of shape (n_samples,) or (n_samples, n_outputs)
            Real-valued targets.
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative weights of the rows (not all zero), relative: divided by their mean over
            the rows of positive weight, so that weights ``c w`` fit the model of ``w`` and equal
            weights the model of none (the penalties mean what they mean without weights). They
            weight every least-squares problem (``(S.T W S + lambda N I) beta = S.T W y`` with
            ``N`` the sum of the relative weights; the chain's training MSE), the standardization
            of X and y, the median heuristic (each row counted as its relative weight in copies)
            and the input ranges (rows of zero weight are left out), GCV and the exact
            leave-one-out errors of the initial width and the final lambda (each row left out
            with all its weight, as scikit-learn's ``RidgeCV``), and the held-out errors of
            ``early_stopping``, whose held-out rows are drawn among the rows of positive weight.
            A zero weight gives the model of the row dropped (up to round-off). With
            ``early_stopping=False``, one ``alpha``, ``final_alpha=None``, a given ``init_scale``
            and a given standardization, integer weights give the model of the rows repeated that
            many times (up to round-off); the searches leave a row out with all its weight where
            the repeated rows would lose one copy. With Dask arrays: a Dask array or an
            array-like, equal to the in-memory fit.

        Returns
        -------
        self
            The fitted estimator.

        Examples
        --------
        >>> from rffkern import AdaptiveRFFRegressor
        >>> from rffkern.datasets import make_jse3
        >>> X, y, support = make_jse3(100, random_state=0)
        >>> model = AdaptiveRFFRegressor(n_components=16, n_iter=10, random_state=0)
        >>> bool(0 < model.fit(X, y).acceptance_rate_ < 1)
        True
        """
        if is_dask_array(X):  # least squares on the workers, the Metropolis chain here
            return fit_adaptive(self, X, y, choose_standardization, sample_weight)
        X, y = validate_data(self, X, y, dtype=[np.float64, np.float32], multi_output=True, y_numeric=True)
        w = relative_sample_weight(sample_weight, X.shape[0])[0]
        Y = y.reshape(X.shape[0], -1)
        scaler = TargetScaler(self.normalize_y).fit(Y, w)
        if not self.normalize_y:  # still centred: the model has no intercept
            scaler.mean_ = mean_and_scale(np.asarray(Y, np.float64), w)[0]
        self.y_mean_, self.y_scale_ = scaler.mean_, scaler.scale_
        self._ravel = y.ndim == 1
        Ys = scaler.transform(Y)
        stats = self._run(X, Ys, w)
        self._keep_posterior(stats, self._standardise(X), Ys, Y, w)
        return self

    def _keep_posterior(self, stats, Xs, Ys, Y, w):
        """The final amplitudes' sums (one more pass where the final fit did not keep them) as the
        Gram statistics of a ridge without intercept (the targets are centred), for ``predict(X,
        return_std=True)``, and ``predict_interval``'s scores from rows of the fit (at most
        ``CALIBRATION_ROWS``; ``Ys`` the scaled targets, ``Y`` in y's units)."""
        if stats is None:
            stats = RowsInMemory(Xs, Ys, resolve_n_threads(self.n_jobs), sample_weight=w).stats(self.frequencies_)
        gram = GramStats(stats.G.shape[0], stats.SY.shape[1], np.float64)
        gram.target_scale, gram.G, gram.n, gram.rows = 1.0, stats.G, stats.total, stats.rows
        gram.ZtY = np.column_stack([np.zeros(stats.G.shape[0]), stats.SY])
        gram.y_sq = np.asarray(stats.yty, np.float64)
        self._posterior_stats = gram
        rows = calibration_rows(Xs.shape[0], w)
        self._store_conformity(self._pair_features(Xs[rows]), np.asarray(Y, np.float64)[rows],
                               None if w is None else w[rows])

    def _ridge_state(self):
        stats = self.__dict__.get("_posterior_stats")
        if stats is None:
            raise ValueError("AdaptiveRFFRegressor's uncertainty needs the statistics of an in-memory fit")
        return stats, self.alpha_ * stats.n, False, self.y_scale_  # (the penalty lambda N of the amplitudes)

    def _ridge_solution(self):
        return np.asarray(self.coef_, np.float64) * self.y_scale_, np.asarray(self.y_mean_, np.float64).reshape(-1)

    def _pair_features(self, Xs):
        return kernels.features(np.ascontiguousarray(Xs), self.frequencies_.astype(Xs.dtype), None, scale=1.0,
                                pair=True, n_threads=resolve_n_threads(self.n_jobs))

    def _features(self, X):
        """The pair features of X as ``predict`` maps them."""
        check_is_fitted(self)
        X = validate_data(self, X, dtype=[np.float64, np.float32], reset=False)
        return self._pair_features(self._standardise(X))

    def _decision(self, X):
        F = self._raw_predict(X) * self.y_scale_ + self.y_mean_
        return F[:, 0] if self._ravel else F

    def _single_output(self):
        return self._ravel

    @uncertainty_docstring
    def predict(self, X: ArrayLike, return_std: bool = False, return_cov: bool = False) -> Any:
        """Predict from the sampled frequencies and amplitudes, and optionally the uncertainty.

        With ``return_std`` or ``return_cov``: the Bayesian linear model of the final amplitudes
        (the ridge ``(S.T S + lambda N I) beta = S.T y`` on the sampled frequencies' features, the
        targets centred, no intercept), as :meth:`rffkern.RFFRidge.predict`.

        {parameters}

        Examples
        --------
        >>> from rffkern import AdaptiveRFFRegressor
        >>> from rffkern.datasets import make_jse3
        >>> X, y, support = make_jse3(100, random_state=0)
        >>> model = AdaptiveRFFRegressor(n_components=16, n_iter=10, random_state=0)
        >>> model.fit(X, y).predict(X[:3]).shape
        (3,)
        """
        return self._predict_with_uncertainty(X, return_std, return_cov)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.multi_output = True
        return tags


class AdaptiveRFFClassifier(ConformalSetMixin, ClassifierMixin, _AdaptiveRFFBase):
    __doc__ = """Classification with adaptive random Fourier features (Kammonen et al. 2020).

    One least-squares problem per class on centred one-hot targets (the paper's MNIST setting); the
    Metropolis test uses the norm of frequency k's coefficients over all classes. ``predict``
    returns the class with the largest output.
""" + _DOC + """    classes_ : ndarray of shape (n_classes,)
        The class labels.
    y_mean_ : ndarray of shape (n_classes,)
        Means of the one-hot targets.
    temperature_ : float or None
        :meth:`predict_proba`'s ``softmax(temperature_ * outputs)``: the temperature of least
        log-loss of the exact leave-one-out outputs of (at most 2000 of) the training rows.

    Examples
    --------
    >>> from rffkern import AdaptiveRFFClassifier
    >>> from rffkern.datasets import make_jse3
    >>> X, _, _ = make_jse3(100, random_state=0)
    >>> y = (X[:, 0] * X[:, 1] > 0).astype(int)
    >>> clf = AdaptiveRFFClassifier(n_components=16, n_iter=10, random_state=0).fit(X, y)
    >>> clf.predict(X[:3])
    array([0, 0, 0])
"""

    def fit(self, X: ArrayLike, y: ArrayLike, sample_weight: ArrayLike | None = None) -> AdaptiveRFFClassifier:
        """Run the Metropolis sampler on (X, one-hot y) and solve the final amplitudes.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training data.
        y : array-like of shape (n_samples,)
            Class labels.
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative row weights, as in :meth:`AdaptiveRFFRegressor.fit` (they weight the
            squared errors of the centred one-hot targets, their means ``y_mean_`` and the
            log-loss of the temperature, fitted on rows of positive weight). Dask arrays too.

        Returns
        -------
        self
            The fitted estimator.

        Examples
        --------
        >>> from rffkern import AdaptiveRFFClassifier
        >>> from rffkern.datasets import make_jse3
        >>> X, _, _ = make_jse3(100, random_state=0)
        >>> y = (X[:, 0] * X[:, 1] > 0).astype(int)
        >>> clf = AdaptiveRFFClassifier(n_components=16, n_iter=10, random_state=0)
        >>> clf.fit(X, y).classes_
        array([0, 1])
        """
        if is_dask_array(X):  # least squares on the workers, the Metropolis chain here
            return fit_adaptive(self, X, y, choose_standardization, sample_weight)
        X, y = validate_data(self, X, y, dtype=[np.float64, np.float32])
        w = relative_sample_weight(sample_weight, X.shape[0])[0]
        check_class_labels(y)
        self.classes_ = np.unique(y)
        if len(self.classes_) < 2:
            raise ValueError(
                f"the classifier needs samples of at least 2 classes; got {len(self.classes_)} class")
        Y = LabelBinarizer().fit(self.classes_).transform(y).astype(np.float64)
        if Y.shape[1] == 1:
            Y = np.hstack([1 - Y, Y])
        self.y_mean_ = Y.mean(0) if w is None else np.average(Y, axis=0, weights=w)
        Yc = Y - self.y_mean_
        stats = self._run(X, Yc, w)
        # predict_proba's temperature: the final amplitudes' sums over every row (one more pass
        # where the final fit did not compute them)
        Xs = self._standardise(X)
        if stats is None:
            stats = RowsInMemory(Xs, Yc, resolve_n_threads(self.n_jobs), sample_weight=w).stats(self.frequencies_)
        rows = calibration_rows(Xs.shape[0], w)
        self._temperature, self._set_scores = class_temperature(self, stats, Xs[rows], Yc[rows],
                                                                None if w is None else w[rows])
        return self

    @property
    def temperature_(self) -> float | None:
        """:meth:`predict_proba`'s temperature (see the class's Attributes).

        Examples
        --------
        >>> from rffkern import AdaptiveRFFClassifier
        >>> from rffkern.datasets import make_jse3
        >>> X, _, _ = make_jse3(100, random_state=0)
        >>> y = (X[:, 0] * X[:, 1] > 0).astype(int)
        >>> clf = AdaptiveRFFClassifier(n_components=16, n_iter=10, random_state=0).fit(X, y)
        >>> round(clf.temperature_, 2)
        3.05
        """
        if "_temperature" not in self.__dict__:
            raise AttributeError("temperature_ exists once the classifier is fitted")
        return self._temperature

    def predict_proba(self, X: ArrayLike) -> NDArray[np.float64]:
        """Class probabilities: ``softmax(temperature_ * outputs)`` over the classes' outputs.

        For two classes ``sigmoid(temperature_ * decision_function(X))`` for ``classes_[1]``. The
        one temperature is fitted by log-loss to the exact leave-one-out outputs of (at most 2000
        of) the training rows, which the final least-squares fit gives in closed form (as
        :meth:`rffkern.RFFRidgeClassifier.predict_proba`). The most probable class is the one
        :meth:`predict` returns.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            The samples (a Dask array is processed lazily, block by block).

        Returns
        -------
        ndarray of shape (n_samples, n_classes)
            Probabilities of ``classes_``, each row summing to 1.

        Examples
        --------
        >>> from rffkern import AdaptiveRFFClassifier
        >>> from rffkern.datasets import make_jse3
        >>> X, _, _ = make_jse3(100, random_state=0)
        >>> y = (X[:, 0] * X[:, 1] > 0).astype(int)
        >>> clf = AdaptiveRFFClassifier(n_components=16, n_iter=10, random_state=0).fit(X, y)
        >>> clf.predict_proba(X[:2]).round(2)
        array([[0.63, 0.37],
               [0.59, 0.41]])
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
        >>> from rffkern import AdaptiveRFFClassifier
        >>> from rffkern.datasets import make_jse3
        >>> X, _, _ = make_jse3(100, random_state=0)
        >>> y = (X[:, 0] * X[:, 1] > 0).astype(int)
        >>> clf = AdaptiveRFFClassifier(n_components=16, n_iter=10, random_state=0).fit(X, y)
        >>> clf.predict_log_proba(X[:1]).shape
        (1, 2)
        """
        if is_dask_array(X):
            return map_rows(self.predict_log_proba, X)
        return self._log_proba(X, "predict_log_proba")

    def _log_proba(self, X, method):
        """``log_softmax(temperature_ * outputs)`` over the classes (``method`` names the caller)."""
        outputs = self._raw_predict(X) + self.y_mean_  # first: NotFittedError before the rest
        return tempered_log_proba(self, outputs, method)

    def decision_function(self, X: ArrayLike) -> NDArray[np.floating]:
        """Compute the outputs per class, or their difference for two classes.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            The samples (a Dask array is processed lazily, block by block).

        Returns
        -------
        ndarray of shape (n_samples,) or (n_samples, n_classes)
            For two classes ``output[1] - output[0]`` (positive: ``classes_[1]``), else one output per class.

        Examples
        --------
        >>> from rffkern import AdaptiveRFFClassifier
        >>> from rffkern.datasets import make_jse3
        >>> X, _, _ = make_jse3(100, random_state=0)
        >>> y = (X[:, 0] * X[:, 1] > 0).astype(int)
        >>> clf = AdaptiveRFFClassifier(n_components=16, n_iter=10, random_state=0)
        >>> clf.fit(X, y).decision_function(X[:3]).shape
        (3,)
        """
        if is_dask_array(X):
            return map_rows(self.decision_function, X)
        F = self._raw_predict(X) + self.y_mean_
        return F[:, 1] - F[:, 0] if len(self.classes_) == 2 else F

    def predict(self, X: ArrayLike) -> NDArray[Any]:
        """Predict the class with the largest output.

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
        >>> from rffkern import AdaptiveRFFClassifier
        >>> from rffkern.datasets import make_jse3
        >>> X, _, _ = make_jse3(100, random_state=0)
        >>> y = (X[:, 0] * X[:, 1] > 0).astype(int)
        >>> clf = AdaptiveRFFClassifier(n_components=16, n_iter=10, random_state=0)
        >>> clf.fit(X, y).predict(X[:3])
        array([0, 0, 0])
        """
        if is_dask_array(X):
            return map_rows(self.predict, X)
        D = self.decision_function(X)  # first: it raises NotFittedError before classes_ exists
        return labels_from_decision(self.classes_, D)
