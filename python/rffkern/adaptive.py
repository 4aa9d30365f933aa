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
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.linalg import cholesky, eigh
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
from sklearn.preprocessing import LabelBinarizer
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted, validate_data

from rffkern import kernels
from rffkern._dask import is_dask_array, map_rows
from rffkern._constraints import COMPONENTS, IntInterval, N_JOBS, RealSequence
from rffkern._data import TargetScaler, holdout_split, labels_from_decision, mean_and_scale
from rffkern._inputs import fit_input_scaling, scaled_inputs, set_input_scaling
from rffkern._calibration import calibration_rows, class_codes, loo_outputs, tempered_log_proba, temperature_of
from rffkern._linalg import RidgeEigen, ridge_solve, single_threaded_blas
from rffkern._progress import ProgressLog
from rffkern._ridge_solvers import FourierFeatureMap, fit_ridge_map
from rffkern._sampling import median_distance
from rffkern._selection import EXTENDED_WIDTH_FACTORS, next_width, search_widths
from rffkern._typing import RandomStateLike
from rffkern._validation import as_generator, check_class_labels, resolve_n_threads
from rffkern.ridge import choose_standardization, resolve_standardization

__all__ = ["AdaptiveRFFRegressor", "AdaptiveRFFClassifier", "metropolis_accept", "gcv_lambda", "RunningCovariance"]

#: A list of lambdas (``(S.T S + lambda N I) beta = S.T y``) to search by GCV.
GCV_ALPHAS = tuple(float(a) for a in np.logspace(-8, 0, 9))
#: ``init_scale="auto"`` compares the median-heuristic width times ``EXTENDED_WIDTH_FACTORS``
#: (frequency scales ``1 / (median distance * factor)``) at the initial frequencies.
#: ``final_alpha``'s default: the final amplitudes' lambdas, 1e-8 to 10, searched by exact leave-one-out.
FINAL_ALPHAS = tuple(float(a) for a in np.logspace(-8, 1, 19))


def final_alpha_choice(fit_ridge_map, fmap, lambdas, n):
    """The final lambda by exact leave-one-out, through a ``fit_ridge_map`` (the single-machine
    :func:`rffkern._ridge_solvers.fit_ridge_map` or the distributed one bound to its data):
    ``fit_ridge_map(fmap, penalties, score_single)`` with the penalties ``lambda N``. Returns
    (lambda, beta, LOO errors or None)."""
    lambdas = [float(v) for v in lambdas]
    coef, _, penalty, errors, _ = fit_ridge_map(fmap, [lam * n for lam in lambdas], False)
    lam = lambdas[0] if errors is None else lambdas[int(np.argmin(errors))]
    return lam, coef, errors


def gcv_lambda(X, Y, W, lambdas, n_threads):
    """The lambda of least generalised cross-validation error for the pair features of ``W``: one
    Gram pass and one eigendecomposition serve every lambda. Returns (lambda, errors)."""
    G, SY = kernels.gram(X, W, None, Y, scale=1.0, pair=True, n_threads=n_threads)
    eig = RidgeEigen(G.astype(np.float64), SY.astype(np.float64))
    n = X.shape[0]
    yty = (np.asarray(Y, np.float64) ** 2).sum(0)
    errors = np.array([eig.gcv(lam * n, yty, n).mean() for lam in lambdas])
    errors = np.where(np.isfinite(errors), errors, np.inf)
    return float(lambdas[int(np.argmin(errors))]), errors


def search_scales(scales, median_scale, loo_error):
    """The initial frequency scales compared by ``init_scale="auto"`` and their errors
    ``loo_error(scale)``: ``scales`` in order, then, as :func:`rffkern._selection.next_width` extends
    EERF's widths, half (twice) the scale while the largest (smallest) is the best, within
    ``1 / WIDTH_LIMITS`` times ``median_scale``. Returns (scales, errors) as lists."""
    def extend(values, errors):  # in widths (1 / scale), EERF's rule around the median width
        extra = next_width([1.0 / v for v in values], errors, 1.0 / median_scale)
        return None if extra is None else 1.0 / extra

    return search_widths(scales, extend, loo_error)


def holdout_errors(X, Y, X_val, Y_val, W, lambdas, n_threads):
    """Held-out mean squared error of the least-squares amplitudes of ``W`` fitted on (X, Y), for
    every lambda (one Gram pass, one eigendecomposition, one prediction pass)."""
    G, SY = kernels.gram(X, W, None, Y, scale=1.0, pair=True, n_threads=n_threads)
    eig = RidgeEigen(G.astype(np.float64), SY.astype(np.float64))
    n, m = X.shape[0], SY.shape[1]
    coefs = np.hstack([eig.coef(lam * n) for lam in lambdas])                      # (2K, m * n_lambdas)
    F = kernels.predict(X_val, W.astype(X_val.dtype), None, coefs.astype(X_val.dtype), scale=1.0, pair=True,
                        n_threads=n_threads).astype(np.float64)
    R = F - np.tile(np.asarray(Y_val, np.float64), len(lambdas))
    errors = (R**2).reshape(X_val.shape[0], len(lambdas), m).mean(axis=(0, 2))
    return np.where(np.isfinite(errors), errors, np.inf)


def metropolis_accept(amp_old, amp_new, gamma, u):
    """Boolean mask ``u_k < min(1, (amp_new_k / amp_old_k)^gamma)``, evaluated in log space.

    A zero old amplitude always accepts (the ratio is infinite, or undefined when both are zero).
    """
    amp_old = np.asarray(amp_old, np.float64)
    amp_new = np.asarray(amp_new, np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        log_ratio = gamma * (np.log(amp_new) - np.log(amp_old))
    log_ratio = np.where(amp_old == 0, np.inf, log_ratio)
    return np.log(u) < np.minimum(log_ratio, 0.0)


def amplitudes(beta, K):
    """``|beta_k|``: the norm of the cos and sin coefficients of frequency k over all outputs."""
    B = beta.reshape(2 * K, -1)
    return np.sqrt((B[:K] ** 2).sum(1) + (B[K:] ** 2).sum(1))


def least_squares(X, Y, W, lam, n_threads, with_mse=False):
    """``beta = (S.T S + lam N I)^{-1} S.T Y`` for pair features ``S = [cos XW, sin XW]`` (one gram pass).

    With ``with_mse=True`` also the training mean squared error per target entry, from the same
    Gram (``||Y - S beta||^2 = Y.T Y - 2 beta.T S.T Y + beta.T G beta``).
    """
    G, SY = kernels.gram(X, W, None, Y, scale=1.0, pair=True, n_threads=n_threads)
    G, SY = G.astype(np.float64), SY.astype(np.float64)
    beta = ridge_solve(G, SY, lam * X.shape[0])
    if not with_mse:
        return beta
    rss = float((np.asarray(Y, np.float64) ** 2).sum() - 2 * (beta * SY).sum() + (beta * (G @ beta)).sum())
    return beta, max(rss, 0.0) / Y.size


def metropolis_step(X, Y, W, amp, zeta, u, *, delta, gamma, lam, omega_max=None, n_threads=1):
    """One Metropolis iteration on all K frequencies; returns (W, amp, beta_proposal, accepted, mse).

    ``zeta`` (K, d) are the proposal directions (already multiplied by the covariance factor) and
    ``u`` (K,) the uniforms of the test; the caller draws both, so a reference implementation can
    replay the same stream (the tests' ``datadep_reference.metropolis_step``).
    """
    rows = RowsInMemory(X, Y, n_threads)
    return metropolis_update(rows, W, amp, zeta, u, delta=delta, gamma=gamma, lam=lam, omega_max=omega_max)


def metropolis_update(rows, W, amp, zeta, u, *, delta, gamma, lam, omega_max=None):
    """:func:`metropolis_step` with the least squares of ``rows`` (:class:`RowsInMemory`, or the
    same methods over Dask rows)."""
    K = W.shape[1]
    W_new = W + delta * zeta.T
    beta_new, mse = rows.fit(W_new, lam, with_mse=True)
    amp_new = amplitudes(beta_new, K)
    acc = metropolis_accept(amp, amp_new, gamma, u)
    if omega_max is not None:
        acc &= np.linalg.norm(W_new, axis=0) <= omega_max
    W = W.copy()
    W[:, acc] = W_new[:, acc]
    amp = np.where(acc, amp_new, amp)
    return W, amp, beta_new, acc, mse


class RowsInMemory:
    """The chain's least-squares fits on rows in memory: ``fit`` on (X, Y), ``holdout`` scored on
    (X_val, Y_val). :func:`rffkern._dask_adaptive.fit_adaptive` gives the chain the same methods over
    Dask rows."""

    def __init__(self, X, Y, n_threads, X_val=None, Y_val=None):
        self.X, self.Y, self.n_threads, self.X_val, self.Y_val = X, Y, n_threads, X_val, Y_val

    def fit(self, W, lam, with_mse=False):
        """:func:`least_squares` of ``W`` at penalty ``lam``."""
        return least_squares(self.X, self.Y, W, lam, self.n_threads, with_mse=with_mse)

    def holdout(self, W, lambdas):
        """:func:`holdout_errors` of ``W`` for each penalty."""
        return holdout_errors(self.X, self.Y, self.X_val, self.Y_val, W, lambdas, self.n_threads)

    def progress(self):
        """What the progress line adds (nothing in memory)."""
        return ""


@dataclass
class Chain:
    """What :func:`run_chain` leaves: the last frequencies, the best checkpoint (early stopping:
    ``(error, W, lambda, iteration)``), and the traces."""

    W: np.ndarray
    best: tuple | None
    validation_errors: list
    acceptance: list
    proposal_mse: list
    snapshots: list
    resamples: int
    chol: np.ndarray


def chain_settings(est, n, d, median_scale):
    """The chain's settings from ``est``'s parameters for ``n`` rows of ``d`` inputs: sets
    ``gamma_`` and ``step_``; returns ``(scales, lambdas, finals, n_val)``: the initial frequency
    scales to compare (from ``median_scale``, one over the median heuristic, for a searched
    ``init_scale``), the penalties of the chain and the final fit (None), and the held-out rows of
    early stopping (0 without)."""
    est.gamma_ = float(est.gamma) if est.gamma is not None else float(max(3 * d - 2, 1))
    est.step_ = 2.4**2 / d if est.step == "auto" else float(est.step)
    if median_scale is None:
        scales = [float(est.init_scale)]
    else:
        scales = [median_scale] if est.init_scale == "median" else [median_scale / f for f in EXTENDED_WIDTH_FACTORS]
    lambdas = np.atleast_1d(np.asarray(est.alpha, np.float64))
    finals = None if est.final_alpha is None else np.atleast_1d(np.asarray(est.final_alpha, np.float64))
    n_val = 0
    if est.early_stopping:
        n_val = int(round(est.validation_fraction * n))
        if n_val < 1 or n - n_val < 2:
            raise ValueError(f"validation_fraction={est.validation_fraction} leaves no training or "
                             f"validation sample out of n_samples={n}")
    return scales, lambdas, finals, n_val


def run_chain(est, rows, W, amp, lam, rng, grid=None, check_every=1, log=None):
    """Algorithm 2's chain of ``est.n_iter`` Metropolis iterations from frequencies ``W``
    (amplitudes ``amp``) at penalty ``lam``, on the least squares of ``rows``: the adaptive
    proposal covariance after the burn-in, resampling at low effective sample size, and with
    ``early_stopping`` a check of the held-out error over ``grid`` every ``check_every``
    iterations. One loop for the rows in memory and on Dask: the same draws from ``rng``."""
    K, d = W.shape[1], W.shape[0]
    best, val_errors = None, []
    if est.early_stopping:
        errs = rows.holdout(W, grid)
        val_errors.append(float(errs.min()))
        best = (val_errors[-1], W.copy(), float(grid[int(np.argmin(errs))]), 0)
    t0 = int(np.ceil(est.burn_in * est.n_iter))
    running = RunningCovariance(W)
    chol = np.eye(d)
    hist_acc, hist_mse, snapshots, resamples = [], [], [], 0
    if est.keep_frequency_history:
        snapshots.append(W.copy())
    for it in range(est.n_iter):
        zeta = rng.standard_normal((K, d)) @ chol.T
        u = rng.random(K)
        W, amp, _, acc, mse = metropolis_update(rows, W, amp, zeta, u, delta=est.step_, gamma=est.gamma_, lam=lam,
                                                omega_max=est.omega_max)
        hist_acc.append(float(acc.mean()))
        hist_mse.append(mse)
        if est.adaptive_covariance:
            running.update(W)
            if it + 1 >= t0:
                chol = running.proposal_factor(est.adaptive_covariance)
        if est.resample:
            ess = amp.sum() ** 2 / max((amp**2).sum(), np.finfo(float).tiny)
            if ess < est.resample_threshold * K:
                p = amp / amp.sum()
                W = W[:, np.sort(rng.choice(K, K, p=p))]
                amp = amplitudes(rows.fit(W, lam), K)
                resamples += 1
        if est.keep_frequency_history and (it + 1) % est.keep_frequency_history == 0:
            snapshots.append(W.copy())
        if est.early_stopping and ((it + 1) % check_every == 0 or it + 1 == est.n_iter):
            errs = rows.holdout(W, grid)
            val_errors.append(float(errs.min()))
            if val_errors[-1] < best[0]:  # type: ignore[index]  # set before the loop
                best = (val_errors[-1], W.copy(), float(grid[int(np.argmin(errs))]), it + 1)
        if log is not None and (it + 1) % max(1, est.n_iter // 10) == 0:
            log.step("iteration", it + 1, est.n_iter,
                     f"acceptance {hist_acc[-1]:.3f}, proposal training MSE {mse:.4g}{rows.progress()}")
    return Chain(W, best, val_errors, hist_acc, hist_mse, snapshots, resamples, chol)


#: Smallest eigenvalue of the guarded proposal covariance, relative to its mean eigenvalue (so its
#: condition number is at most ``d / PROPOSAL_EIGEN_FLOOR``).
PROPOSAL_EIGEN_FLOOR = 1e-2
#: From this many inputs on, the guarded proposal (:meth:`RunningCovariance.proposal_factor`, once
#: per iteration after the burn-in) is factored from a float32 eigendecomposition (LAPACK's divide
#: and conquer), as ``V diag(g)^(1/2)`` straight from its eigenvectors, instead of a float64 one
#: followed by forming ``V diag(g) V.T`` and its Cholesky factor: the same proposal distribution up to
#: float32 round-off (1e-7 of the largest eigenvalue, far below the floor of 1e-2 of the mean),
#: drawn through another square root. It halves the factorisation's time from 256 inputs on, where
#: that is a large part of the fit; below, it costs a millisecond or two per iteration either way,
#: and the chains stay those of the float64 construction, bit for bit (docs/design_notes.rst).
PROPOSAL_FLOAT32_MIN_INPUTS = 256


class RunningCovariance:
    """Running mean and covariance of every frequency seen so far (Algorithm 2's ``C``).

    Chan et al.'s pairwise update merges each iteration's K frequencies into the running mean and
    scatter, so the covariance is exact in one pass.
    """

    def __init__(self, W):
        d, K = W.shape
        self.count, self.mean = K, W.mean(1)
        self.scatter = np.cov(W, bias=True).reshape(d, d) * K

    def update(self, W):
        """Merge the K frequencies ``W`` (d, K) into the running statistics."""
        d, K = W.shape
        delta = W.mean(1) - self.mean
        total = self.count + K
        self.scatter = (self.scatter + np.cov(W, bias=True).reshape(d, d) * K
                        + np.outer(delta, delta) * self.count * K / total)
        self.mean = self.mean + delta * K / total
        self.count = total

    def proposal_factor(self, adaptive_covariance=True):
        """A square root ``L`` (``L @ L.T``) of the proposal covariance (proposals ``L @ N(0, I)``).

        ``adaptive_covariance="unscaled"`` is the paper's ``C`` itself. True (the guard) keeps the
        eigenvectors of ``C`` and the ratios of its eigenvalues, floored at
        ``PROPOSAL_EIGEN_FLOOR`` times their mean, but caps their mean at 1: the trace of the
        proposal covariance never exceeds that of Algorithm 1's ``N(0, I)``. Unguarded, the scale
        of ``C`` feeds back into the spread of the frequencies (a wider proposal accepts
        frequencies farther out, which widens ``C``) and diverges geometrically where the
        amplitudes do not decay (1-D targets with ``K`` larger than the spectrum needs).

        ``L`` is the Cholesky factor of that covariance (plus a jitter of 1e-10 of its mean
        eigenvalue), but for a guarded covariance of ``PROPOSAL_FLOAT32_MIN_INPUTS`` inputs or more,
        where it is ``V diag(g)^(1/2)`` from a float32 eigendecomposition (the same distribution
        of proposals).
        """
        d = self.mean.size
        cov = self.scatter / self.count
        cov = 0.5 * (cov + cov.T)
        if adaptive_covariance != "unscaled":
            single = d >= PROPOSAL_FLOAT32_MIN_INPUTS
            if single:
                ev32, V32 = eigh(cov.astype(np.float32), driver="evd", check_finite=False)
                ev, V = ev32.astype(np.float64), V32.astype(np.float64)
            else:
                ev, V = np.linalg.eigh(cov)
            ev = np.maximum(ev, 0.0)
            if not ev.mean() > 0:   # every frequency equal so far: Algorithm 1's N(0, I)
                return np.eye(d)
            guarded = np.maximum(ev / ev.mean(), PROPOSAL_EIGEN_FLOOR)
            guarded *= min(float(ev.mean()), 1.0) / guarded.mean()
            if not np.allclose(guarded, ev, rtol=1e-12, atol=0):   # else C as it is, bit for bit
                if single:  # V diag(g + jitter)^(1/2): its square is V diag(g) V.T plus the jitter below
                    return V * np.sqrt(guarded + (1e-10 * guarded.mean() + 1e-12))
                cov = (V * guarded) @ V.T
                cov = 0.5 * (cov + cov.T)
        cov = cov + (1e-10 * np.trace(cov) / d + 1e-12) * np.eye(d)
        return cholesky(cov, lower=True, check_finite=False)


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
    def _run(self, X, Y):
        """The Metropolis loop on standardised X and centred, scaled targets Y (n, m).

        Its BLAS / LAPACK calls (K x K solves and eigendecompositions) run on one thread: they
        alternate with the compiled Gram's OpenMP region every iteration, and the idle threads of
        a multi-threaded OpenBLAS spin between them and slow the Gram down (docs/design_notes.rst).
        """
        self._validate_params()
        n, d = X.shape
        K = self.n_components
        rng = as_generator(self.random_state)
        n_threads = resolve_n_threads(self.n_jobs)
        log = ProgressLog(self, self.verbose)
        self.standardize_, self.standardize_errors_ = resolve_standardization(self.standardize, X, Y, None, rng,
                                                                              self.n_jobs, self.robust_inputs)
        if self.standardize == "auto":
            log.step("standardize", 1, 1, f"{self.standardize_!r} (probe ridge)")
        set_input_scaling(self, fit_input_scaling(X, None, self.standardize_, self.robust_inputs))
        Xs = self._standardise(X)
        Y = np.ascontiguousarray(Y, dtype=Xs.dtype)
        median_scale = 1.0 / median_distance(Xs, rng=rng) if isinstance(self.init_scale, str) else None
        scales, lambdas, finals, n_val = chain_settings(self, n, d, median_scale)
        W_unit = rng.standard_normal((d, K))
        self.init_scale_ = scales[0]
        W = W_unit * self.init_scale_
        Xc, Yc = Xs, Y   # the rows of the chain: all of them, or the training part
        Xv = Yv = grid = None
        check_every = 1
        if self.early_stopping:
            tr, va = holdout_split(n, n_val, rng)
            Xc, Yc = np.ascontiguousarray(Xs[tr]), np.ascontiguousarray(Y[tr])
            Xv, Yv = np.ascontiguousarray(Xs[va]), Y[va]
            grid = finals if finals is not None else lambdas
            check_every = max(1, self.n_iter // 10)
        # the chain's rows as the kernels' centered sparse rows where few entries differ from their
        # column's usual value (one-hot columns, blank pixels): every Gram pass of the chain reads
        # them instead of the dense rows (kernels.gram takes either; the same values up to rounding)
        Xk = kernels.centered_rows(Xc)
        Xk = Xc if Xk is None else Xk
        if lambdas.size > 1:
            lam, _ = gcv_lambda(Xk, Yc, W, lambdas, n_threads)
        else:
            lam = float(lambdas[0])
        self.init_scale_errors_ = self.init_scales_ = None
        if len(scales) > 1:  # the initial width: least held-out (or exact LOO) error over the grid
            W = W_unit * self._search_initial_scale(Xc, Yc, W_unit, scales, median_scale,
                                                    finals if finals is not None else lambdas, n_threads)
        amp = amplitudes(least_squares(Xk, Yc, W, lam, n_threads), K)
        chain = run_chain(self, RowsInMemory(Xk, Yc, n_threads, Xv, Yv), W, amp, lam, rng, grid, check_every, log)
        W, best, val_errors = chain.W, chain.best, chain.validation_errors
        hist_acc, hist_mse, snapshots, resamples, chol = (chain.acceptance, chain.proposal_mse, chain.snapshots,
                                                          chain.resamples, chain.chol)
        self.validation_errors_ = np.array(val_errors) if self.early_stopping else None
        W, lam, beta = self._final_coefficients(Xs, Y, W, lam, best, lambdas, finals, n_threads)
        self.alpha_, self.frequencies_, self.coef_, self.amplitudes_ = lam, W, beta, amplitudes(beta, K)
        self.acceptance_rate_ = float(np.mean(hist_acc)) if hist_acc else 0.0
        self.history_ = {"acceptance": np.array(hist_acc), "proposal_mse": np.array(hist_mse),
                         "n_resamples": resamples}
        self.frequency_history_ = np.stack(snapshots) if snapshots else None
        self.proposal_covariance_ = chol @ chol.T
        self.n_iter_ = self.n_iter
        return self

    def _search_initial_scale(self, Xc, Yc, W_unit, scales, median_scale, penalties, n_threads):
        """``init_scale_`` of ``init_scale="auto"``: the frequency scale of least exact LOO error
        (each at its best of ``penalties``) over ``scales`` and :func:`search_scales`'s extension;
        sets ``init_scales_`` and ``init_scale_errors_``."""
        search = [v * Xc.shape[0] for v in penalties]

        def loo_error(scale):
            fmap = FourierFeatureMap(W_unit * scale, None, 1.0, True, n_threads)
            loo = fit_ridge_map(fmap, Xc, Yc, search, fit_intercept=False, selection="loo", score_single=True)[3]
            return float(np.min(loo))

        self.init_scales_, self.init_scale_errors_ = search_scales(scales, median_scale, loo_error)
        self.init_scale_ = self.init_scales_[int(np.argmin(self.init_scale_errors_))]
        return self.init_scale_

    def _final_coefficients(self, Xs, Y, W, lam, best, lambdas, finals, n_threads):
        """``(W, lambda, beta)`` after the chain, on every row: the checked frequencies of least
        held-out error with early stopping, else the last ones, their penalty chosen by exact LOO
        over ``final_alpha`` or by GCV."""
        self.gcv_errors_ = self.loo_errors_ = None
        if self.early_stopping:  # the checked frequencies and lambda of least held-out error, all rows
            _, W, lam, self.best_iteration_ = best
            beta = least_squares(Xs, Y, W, lam, n_threads)
        elif finals is not None:  # exact LOO over final_alpha (one Gram pass, one LOO pass)
            self.best_iteration_ = self.n_iter
            fmap = FourierFeatureMap(W, None, 1.0, True, n_threads)
            lam, beta, self.loo_errors_ = final_alpha_choice(
                lambda f, pens, intercept: fit_ridge_map(f, Xs, Y, pens, fit_intercept=intercept, selection="loo"),
                fmap, finals, Xs.shape[0])
        else:
            self.best_iteration_ = self.n_iter
            if lambdas.size > 1:  # the final frequencies may want another penalty than the initial ones
                lam, self.gcv_errors_ = gcv_lambda(Xs, Y, W, lambdas, n_threads)
            beta = least_squares(Xs, Y, W, lam, n_threads)
        return W, lam, beta

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


class AdaptiveRFFRegressor(RegressorMixin, _AdaptiveRFFBase):
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

    def fit(self, X: ArrayLike, y: ArrayLike) -> AdaptiveRFFRegressor:
        """Run the Metropolis sampler on (X, y) and solve the final amplitudes.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training data.
        y : array-like of shape (n_samples,) or (n_samples, n_outputs)
            Real-valued targets.

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
            from rffkern._dask_adaptive import fit_adaptive
            return fit_adaptive(self, X, y, choose_standardization)
        X, y = validate_data(self, X, y, dtype=[np.float64, np.float32], multi_output=True, y_numeric=True)
        Y = y.reshape(X.shape[0], -1)
        scaler = TargetScaler(self.normalize_y).fit(Y)
        if not self.normalize_y:  # still centred: the model has no intercept
            scaler.mean_ = mean_and_scale(np.asarray(Y, np.float64))[0]
        self.y_mean_, self.y_scale_ = scaler.mean_, scaler.scale_
        self._ravel = y.ndim == 1
        return self._run(X, scaler.transform(Y))

    def predict(self, X: ArrayLike) -> NDArray[Any]:
        """Predict from the sampled frequencies and amplitudes.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            The samples (a Dask array is processed lazily, block by block).

        Returns
        -------
        ndarray of shape (n_samples,) or (n_samples, n_outputs)
            The predictions, in y's units.

        Examples
        --------
        >>> from rffkern import AdaptiveRFFRegressor
        >>> from rffkern.datasets import make_jse3
        >>> X, y, support = make_jse3(100, random_state=0)
        >>> model = AdaptiveRFFRegressor(n_components=16, n_iter=10, random_state=0)
        >>> model.fit(X, y).predict(X[:3]).shape
        (3,)
        """
        if is_dask_array(X):
            return map_rows(self.predict, X)
        F = self._raw_predict(X) * self.y_scale_ + self.y_mean_
        return F[:, 0] if self._ravel else F

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.multi_output = True
        return tags


class AdaptiveRFFClassifier(ClassifierMixin, _AdaptiveRFFBase):
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

    def fit(self, X: ArrayLike, y: ArrayLike) -> AdaptiveRFFClassifier:
        """Run the Metropolis sampler on (X, one-hot y) and solve the final amplitudes.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training data.
        y : array-like of shape (n_samples,)
            Class labels.

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
            from rffkern._dask_adaptive import fit_adaptive
            return fit_adaptive(self, X, y, choose_standardization)
        X, y = validate_data(self, X, y, dtype=[np.float64, np.float32])
        check_class_labels(y)
        self.classes_ = np.unique(y)
        if len(self.classes_) < 2:
            raise ValueError(
                f"the classifier needs samples of at least 2 classes; got {len(self.classes_)} class")
        Y = LabelBinarizer().fit(self.classes_).transform(y).astype(np.float64)
        if Y.shape[1] == 1:
            Y = np.hstack([1 - Y, Y])
        self.y_mean_ = Y.mean(0)
        Yc = Y - self.y_mean_
        self._run(X, Yc)
        # predict_proba's temperature: the final amplitudes' Gram over every row (one more pass)
        Xs = self._standardise(X)
        W = self.frequencies_.astype(Xs.dtype)
        G, SY = kernels.gram(Xs, W, None, Yc.astype(Xs.dtype), scale=1.0, pair=True,
                             n_threads=resolve_n_threads(self.n_jobs))
        rows = calibration_rows(Xs.shape[0])
        self._store_temperature(G, SY, Xs.shape[0], Xs[rows], Yc[rows])
        return self

    def _store_temperature(self, G, SY, n, Xs, Yc):
        """``temperature_`` from the exact leave-one-out outputs of the rows ``(Xs, Yc)`` (standardized
        inputs, centred one-hot targets) of the final least-squares fit, whose pair-feature Gram
        ``G`` and ``S.T Yc`` over its ``n`` rows are given (penalty ``alpha_ * n``, no intercept)."""
        G, SY = np.asarray(G, np.float64), np.asarray(SY, np.float64)
        S = kernels.features(np.ascontiguousarray(Xs), self.frequencies_.astype(Xs.dtype), None, scale=1.0,
                             pair=True, n_threads=resolve_n_threads(self.n_jobs))

        def loo_scores(rows, w):  # the class outputs (one per class, both for two classes)
            zero = np.zeros(S.shape[1])
            return loo_outputs(G, SY, zero, 0.0, n, S[rows], Yc[rows], self.alpha_ * n, False) + self.y_mean_

        self._temperature = temperature_of(class_codes(Yc + self.y_mean_), loo_scores, np.arange(S.shape[0]))

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
