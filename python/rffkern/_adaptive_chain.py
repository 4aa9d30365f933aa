"""The algorithm of adaptive RFF (:mod:`rffkern.adaptive`), written once over an interface of rows.

Every least-squares problem of the fit is one of the pair features ``S = [cos XW, sin XW]``
(no intercept) with relative row weights ``w`` (None: 1 each): ``(S.T W S + lambda N I) beta =
S.T W Y`` with ``N`` the weighted row count, so that integer weights give the problem of the rows
repeated. Its sums (:class:`PairStats`) come from the rows in memory (:class:`RowsInMemory`) or
from a pass over Dask chunks (:mod:`rffkern._dask_adaptive`), which add them up; everything
after the sums -- the solves, GCV, the held-out errors, the Metropolis chain, the initial width
search, the final lambda, the classifier's temperature -- is the code below, the same for both.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.linalg import cholesky, eigh

from rffkern import kernels
from rffkern._calibration import class_codes, loo_outputs, temperature_of
from rffkern._data import holdout_split
from rffkern._linalg import RidgeEigen, ridge_solve
from rffkern._ridge_solvers import FourierFeatureMap, fit_ridge_map
from rffkern._sampling import median_distance, weighted_median_distance
from rffkern._selection import EXTENDED_WIDTH_FACTORS, next_width, search_widths
from rffkern._validation import resolve_n_threads

__all__ = ["GCV_ALPHAS", "FINAL_ALPHAS", "PROPOSAL_EIGEN_FLOOR", "PROPOSAL_FLOAT32_MIN_INPUTS", "PairStats",
           "pair_stats", "solve_pair", "gcv_choice", "gcv_lambda", "least_squares",
           "holdout_sums", "final_alpha_choice", "search_scales", "metropolis_accept", "amplitudes",
           "metropolis_step", "metropolis_update", "PairRows", "RowsInMemory", "Chain", "ChainStart",
           "chain_settings", "chain_start", "median_scale_of", "run_chain", "fit_chain", "class_temperature",
           "RunningCovariance"]

#: A list of lambdas (``(S.T S + lambda N I) beta = S.T y``) to search by GCV.
GCV_ALPHAS = tuple(float(a) for a in np.logspace(-8, 0, 9))
#: ``final_alpha``'s default: the final amplitudes' lambdas, 1e-8 to 10, searched by exact leave-one-out.
FINAL_ALPHAS = tuple(float(a) for a in np.logspace(-8, 1, 19))
#: Rows per block of the weighted pair Gram (features and BLAS products; O(block * K) memory).
WEIGHTED_BLOCK_ROWS = 2048


# -- the sums of one least-squares problem ----------------------------------------------------------

@dataclass
class PairStats:
    """The sums of a pair-feature least-squares problem: ``G = S.T W S``, ``SY = S.T W Y``, ``yty``
    the weighted sum of squares of each target, ``yy`` their total, ``total`` the weighted row
    count ``N`` and ``rows`` the rows of positive weight (GCV's row count). Sums of row chunks
    merge into those of all their rows (:meth:`merged`, a Dask reduction)."""

    G: np.ndarray
    SY: np.ndarray
    yty: np.ndarray
    yy: float
    total: float
    rows: int

    def merged(self, other):
        return PairStats(self.G + other.G, self.SY + other.SY, self.yty + other.yty, self.yy + other.yy,
                         self.total + other.total, self.rows + other.rows)


def pair_stats(X, Y, W, n_threads, sample_weight=None):
    """:class:`PairStats` of the rows (X, Y) for the frequencies ``W``, weighted by
    ``sample_weight`` (relative; None: 1 each). X may be the kernels' centered rows without
    weights. Unweighted: one compiled Gram pass; weighted: blocks of features and BLAS products
    in float64 (``(sqrt(w) S).T (sqrt(w) S)``), as :class:`rffkern._ridge_solvers.GramStats` adds
    weighted rows."""
    Y = np.ascontiguousarray(Y, dtype=X.dtype)
    Y2 = np.asarray(Y, np.float64) ** 2
    if sample_weight is None:
        G, SY = kernels.gram(X, W, None, Y, scale=1.0, pair=True, n_threads=n_threads)
        n = X.shape[0]
        return PairStats(G.astype(np.float64), SY.astype(np.float64), Y2.sum(0), float(Y2.sum()), float(n), n)
    w = np.asarray(sample_weight, np.float64)
    s = 2 * W.shape[1]
    G, SY = np.zeros((s, s)), np.zeros((s, Y.shape[1]))
    for start in range(0, X.shape[0], WEIGHTED_BLOCK_ROWS):
        stop = start + WEIGHTED_BLOCK_ROWS
        S = kernels.features(X[start:stop], W.astype(X.dtype), None, scale=1.0, pair=True,
                             n_threads=n_threads).astype(np.float64)
        Sw = S * np.sqrt(w[start:stop])[:, None]
        G += Sw.T @ Sw
        SY += S.T @ (np.asarray(Y[start:stop], np.float64) * w[start:stop, None])
    yty = w @ Y2
    return PairStats(G, SY, yty, float(yty.sum()), float(w.sum()), int(np.count_nonzero(w)))


def solve_pair(stats, lam, with_mse=False):
    """``beta = (G + lam N I)^{-1} SY`` of :class:`PairStats` ``stats``; with ``with_mse`` also the
    (weighted) training mean squared error per target entry, from the same sums
    (``||Y - S beta||_W^2 = Y.T W Y - 2 beta.T SY + beta.T G beta``)."""
    beta = ridge_solve(stats.G, stats.SY, lam * stats.total)
    if not with_mse:
        return beta
    rss = float(stats.yy - 2 * (beta * stats.SY).sum() + (beta * (stats.G @ beta)).sum())
    return beta, max(rss, 0.0) / (stats.total * stats.SY.shape[1])


def gcv_choice(stats, lambdas):
    """The lambda of least generalised cross-validation error of :class:`PairStats` ``stats`` and
    the errors of all: weighted sums over ``N``, and the rows of positive weight as the rows left
    out (:func:`rffkern._ridge_solvers.gcv_errors`). One eigendecomposition serves every lambda."""
    eig = RidgeEigen(stats.G, stats.SY)
    errors = np.array([eig.gcv(lam * stats.total, stats.yty, stats.total, rows=stats.rows).mean()
                       for lam in lambdas])
    errors = np.where(np.isfinite(errors), errors, np.inf)
    return float(lambdas[int(np.argmin(errors))]), errors


def gcv_lambda(X, Y, W, lambdas, n_threads, sample_weight=None):
    """The lambda of least generalised cross-validation error for the pair features of ``W``: one
    Gram pass and one eigendecomposition serve every lambda. Returns (lambda, errors)."""
    return gcv_choice(pair_stats(X, Y, W, n_threads, sample_weight), lambdas)


def least_squares(X, Y, W, lam, n_threads, with_mse=False, sample_weight=None):
    """``beta = (S.T S + lam N I)^{-1} S.T Y`` for pair features ``S = [cos XW, sin XW]`` (one gram pass).

    With ``with_mse=True`` also the training mean squared error per target entry, from the same
    Gram (``||Y - S beta||^2 = Y.T Y - 2 beta.T S.T Y + beta.T G beta``). ``sample_weight``
    (relative, or None) weights every sum, the MSE and ``N``.
    """
    return solve_pair(pair_stats(X, Y, W, n_threads, sample_weight), lam, with_mse)


def holdout_coefs(stats, lambdas):
    """The coefficients of every lambda side by side, (2K, m * n_lambdas), from one eigendecomposition."""
    eig = RidgeEigen(stats.G, stats.SY)
    return np.hstack([eig.coef(lam * stats.total) for lam in lambdas])


def holdout_sums(X_val, Y_val, W, coefs, n_lambdas, n_threads, sample_weight=None):
    """``(sse, count)`` of held-out rows: per lambda the (weighted) sum of their squared errors
    under the coefficients ``coefs`` (:func:`holdout_coefs`), and the (weighted) count of the
    entries summed; sums of row chunks add up to those of all rows."""
    F = kernels.predict(X_val, W.astype(X_val.dtype), None, coefs.astype(X_val.dtype), scale=1.0, pair=True,
                        n_threads=n_threads).astype(np.float64)
    R = F - np.tile(np.asarray(Y_val, np.float64), n_lambdas)
    R2 = (R**2).reshape(X_val.shape[0], n_lambdas, -1)
    if sample_weight is None:
        return R2.sum(axis=(0, 2)), float(R2.shape[0] * R2.shape[2])
    w = np.asarray(sample_weight, np.float64)
    return w @ R2.sum(axis=2), float(w.sum() * R2.shape[2])


def holdout_from_sums(sse, count):
    """The held-out mean squared error of every lambda from :func:`holdout_sums` (inf where it is
    not finite)."""
    errors = sse / count
    return np.where(np.isfinite(errors), errors, np.inf)


def final_alpha_choice(ridge_map, fmap, lambdas, n):
    """The final lambda by exact leave-one-out, through a ``ridge_map`` (:meth:`PairRows.ridge_map`
    of the rows in memory or on Dask): ``ridge_map(fmap, penalties)`` with the penalties ``lambda
    N``, ``N = n`` the weighted row count. Returns (lambda, beta, LOO errors or None)."""
    lambdas = [float(v) for v in lambdas]
    coef, _, _, errors, _ = ridge_map(fmap, [lam * n for lam in lambdas])
    lam = lambdas[0] if errors is None else lambdas[int(np.argmin(errors))]
    return lam, coef, errors


def search_scales(scales, median_scale, loo_error):
    """The initial frequency scales compared by ``init_scale="auto"`` and their errors
    ``loo_error(scale)``: ``scales`` in order, then, as :func:`rffkern._selection.next_width` extends
    EERF's widths, half (twice) the scale while the largest (smallest) is the best, within
    ``1 / WIDTH_LIMITS`` times ``median_scale``. Returns (scales, errors) as lists."""
    def extend(values, errors):  # in widths (1 / scale), EERF's rule around the median width
        extra = next_width([1.0 / v for v in values], errors, 1.0 / median_scale)
        return None if extra is None else 1.0 / extra

    return search_widths(scales, extend, loo_error)


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


def metropolis_step(X, Y, W, amp, zeta, u, *, delta, gamma, lam, omega_max=None, n_threads=1):
    """One Metropolis iteration on all K frequencies; returns (W, amp, beta_proposal, accepted, mse).

    ``zeta`` (K, d) are the proposal directions (already multiplied by the covariance factor) and
    ``u`` (K,) the uniforms of the test; the caller draws both, so a reference implementation can
    replay the same stream (the tests' ``datadep_reference.metropolis_step``).
    """
    rows = RowsInMemory(X, Y, n_threads)
    return metropolis_update(rows, W, amp, zeta, u, delta=delta, gamma=gamma, lam=lam, omega_max=omega_max)


def metropolis_update(rows, W, amp, zeta, u, *, delta, gamma, lam, omega_max=None):
    """:func:`metropolis_step` with the least squares of ``rows`` (a :class:`PairRows`)."""
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


# -- the rows -----------------------------------------------------------------------------------------

class PairRows:
    """The rows of the chain's (or the final) least-squares problems, as the algorithm sees them.

    A subclass gives :meth:`stats` (the :class:`PairStats` of its rows for frequencies ``W``),
    :meth:`validation_sums` (:func:`holdout_sums` of its held-out rows), :meth:`ridge_map` (the
    exact-LOO ridge of :func:`rffkern._ridge_solvers.fit_ridge_map` on its rows, no intercept) and
    the attributes ``total`` (the weighted row count ``N``) and ``n_threads``; :meth:`fit` and
    :meth:`holdout` follow from them.
    """

    total: float
    n_threads: int

    def stats(self, W):
        raise NotImplementedError

    def validation_sums(self, W, coefs, n_lambdas):
        raise NotImplementedError

    def ridge_map(self, fmap, penalties, score_single=False):
        raise NotImplementedError

    def fit(self, W, lam, with_mse=False):
        """:func:`solve_pair` of ``W`` at penalty ``lam``."""
        return solve_pair(self.stats(W), lam, with_mse)

    def holdout(self, W, lambdas):
        """The held-out errors of ``W`` fitted on these rows, for each penalty."""
        coefs = holdout_coefs(self.stats(W), lambdas)
        return holdout_from_sums(*self.validation_sums(W, coefs, len(lambdas)))

    def progress(self):
        """What the progress line adds (nothing in memory)."""
        return ""


class RowsInMemory(PairRows):
    """The rows (X, Y) in memory with their relative weights ``sample_weight`` (None: 1 each), and
    the held-out rows (X_val, Y_val) with theirs. ``gram_rows``: X as the unweighted Gram reads it
    (the kernels' centered sparse rows where X has few entries off their column's usual value)."""

    def __init__(self, X, Y, n_threads, X_val=None, Y_val=None, sample_weight=None, val_weight=None,
                 gram_rows=None):
        self.X, self.Y, self.n_threads, self.X_val, self.Y_val = X, Y, n_threads, X_val, Y_val
        self.w, self.w_val = sample_weight, val_weight
        self.gram_rows = X if gram_rows is None or sample_weight is not None else gram_rows
        self.total = float(X.shape[0] if sample_weight is None else np.sum(sample_weight))

    def stats(self, W):
        return pair_stats(self.gram_rows, self.Y, W, self.n_threads, self.w)

    def validation_sums(self, W, coefs, n_lambdas):
        return holdout_sums(self.X_val, self.Y_val, W, coefs, n_lambdas, self.n_threads, self.w_val)

    def ridge_map(self, fmap, penalties, score_single=False):
        return fit_ridge_map(fmap, self.X, self.Y, penalties, fit_intercept=False, selection="loo",
                             score_single=score_single, sample_weight=self.w)


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


@dataclass
class ChainStart:
    """The fit's settings and first draws (:func:`chain_start`): the initial scales to compare,
    the penalties of the chain (``lambdas``) and of the final fit (``finals``, or None), the unit
    frequencies ``W_unit`` (d, K), the held-out split ``(train, validation)`` of early stopping (or
    None), its lambda grid and the iterations between its checks."""

    scales: list
    median_scale: float | None
    lambdas: np.ndarray
    finals: np.ndarray | None
    W_unit: np.ndarray
    split: tuple | None
    grid: np.ndarray | None
    check_every: int


def chain_settings(est, n, d, median_scale, weighted=False):
    """The chain's settings from ``est``'s parameters for ``n`` rows (of positive weight, where
    ``weighted``) of ``d`` inputs: sets ``gamma_`` and ``step_``; returns ``(scales, lambdas,
    finals, n_val)``: the initial frequency scales to compare (from ``median_scale``, one over the
    median heuristic, for a searched ``init_scale``), the penalties of the chain and the final fit
    (None), and the held-out rows of early stopping (0 without)."""
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
            rows = f"the {n} samples of positive sample_weight" if weighted else f"n_samples={n}"
            raise ValueError(f"validation_fraction={est.validation_fraction} leaves no training or "
                             f"validation sample out of {rows}")
    return scales, lambdas, finals, n_val


def chain_start(est, n, d, median_scale, rng, positive=None):
    """:func:`chain_settings` and the draws that follow the median heuristic's: the unit
    frequencies, then (early stopping) the held-out split, among the rows ``positive`` (the
    indices of the rows of positive weight; None: all ``n`` rows), so that a row of zero weight
    is one dropped there too. A :class:`ChainStart`."""
    n_split = n if positive is None else positive.size
    scales, lambdas, finals, n_val = chain_settings(est, n_split, d, median_scale, positive is not None)
    W_unit = rng.standard_normal((d, est.n_components))
    if not est.early_stopping:
        return ChainStart(scales, median_scale, lambdas, finals, W_unit, None, None, 1)
    split = holdout_split(n_split, n_val, rng)
    if positive is not None:
        split = (positive[split[0]], positive[split[1]])
    grid = finals if finals is not None else lambdas
    return ChainStart(scales, median_scale, lambdas, finals, W_unit, split, grid, max(1, est.n_iter // 10))


def median_scale_of(Xs, sample_weight, rng):
    """One over the median heuristic of the standardized rows ``Xs``: the median pairwise distance
    (of at most 2000 rows drawn by ``rng``), weighted by the relative ``sample_weight`` over the
    rows of positive weight (:func:`rffkern._sampling.weighted_median_distance`)."""
    if sample_weight is None:
        return 1.0 / median_distance(Xs, rng=rng)
    return 1.0 / weighted_median_distance(Xs, sample_weight, rng)


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


# -- the fit after the draws ------------------------------------------------------------------------

def initial_frequencies(est, rows, start):
    """The chain's first frequencies, penalty and amplitudes on ``rows``: the lambda of ``alpha``
    (by GCV at the first scale where it is a list), the initial scale (``init_scale="auto"``: the
    least exact LOO error over each scale's ridge fits, :func:`search_scales`; sets
    ``init_scale_``, ``init_scales_`` and ``init_scale_errors_``), then the amplitudes there.
    Returns ``(W, lambda, amplitudes)``."""
    W_unit, scales, lambdas = start.W_unit, start.scales, start.lambdas
    W = W_unit * scales[0]
    est.init_scale_ = scales[0]
    est.init_scale_errors_ = est.init_scales_ = None
    stats = None
    if lambdas.size > 1:
        stats = rows.stats(W)
        lam = gcv_choice(stats, lambdas)[0]
    else:
        lam = float(lambdas[0])
    if len(scales) > 1:  # the initial width: least exact LOO error over the grid, on the chain's rows
        search = [v * rows.total for v in (start.finals if start.finals is not None else lambdas)]

        def loo_error(scale):
            fmap = FourierFeatureMap(W_unit * scale, None, 1.0, True, rows.n_threads)
            return float(np.min(rows.ridge_map(fmap, search, True)[3]))

        est.init_scales_, est.init_scale_errors_ = search_scales(scales, start.median_scale, loo_error)
        est.init_scale_ = est.init_scales_[int(np.argmin(est.init_scale_errors_))]
        W, stats = W_unit * est.init_scale_, None
    if stats is None:
        stats = rows.stats(W)
    return W, lam, amplitudes(solve_pair(stats, lam), W.shape[1])


def final_coefficients(est, rows, chain, lam, start):
    """``(W, lambda, beta, stats)`` after the chain, on every row (``rows``): the checked
    frequencies of least held-out error with early stopping, else the last ones, their penalty
    chosen by exact LOO over ``final_alpha`` or by GCV over ``alpha``; ``stats`` the
    :class:`PairStats` of ``W`` on every row where they were computed (else None). Sets
    ``best_iteration_``, ``gcv_errors_`` and ``loo_errors_``."""
    est.gcv_errors_ = est.loo_errors_ = None
    if est.early_stopping:  # the checked frequencies and lambda of least held-out error, all rows
        _, W, lam, est.best_iteration_ = chain.best
        stats = rows.stats(W)
        return W, lam, solve_pair(stats, lam), stats
    est.best_iteration_ = est.n_iter
    W = chain.W
    if start.finals is not None:  # exact LOO over final_alpha (one Gram pass, one LOO pass)
        fmap = FourierFeatureMap(W, None, 1.0, True, rows.n_threads)
        lam, beta, est.loo_errors_ = final_alpha_choice(rows.ridge_map, fmap, start.finals, rows.total)
        return W, lam, beta, None
    stats = rows.stats(W)
    if start.lambdas.size > 1:  # the final frequencies may want another penalty than the initial ones
        lam, est.gcv_errors_ = gcv_choice(stats, start.lambdas)
    return W, lam, solve_pair(stats, lam), stats


def fit_chain(est, start, chain_rows, all_rows, rng, log=None):
    """Adaptive RFF after its draws (:func:`chain_start`): the initial frequencies, the Metropolis
    chain on ``chain_rows`` (every row, or the training part of early stopping) and the final
    amplitudes on ``all_rows``; sets every fitted attribute of the chain and the amplitudes.
    Returns the final frequencies' :class:`PairStats` on every row, or None where the final fit
    did not compute them."""
    W, lam, amp = initial_frequencies(est, chain_rows, start)
    chain = run_chain(est, chain_rows, W, amp, lam, rng, start.grid, start.check_every, log)
    est.validation_errors_ = np.array(chain.validation_errors) if est.early_stopping else None
    W, lam, beta, stats = final_coefficients(est, all_rows, chain, lam, start)
    est.alpha_, est.frequencies_, est.coef_, est.amplitudes_ = lam, W, beta, amplitudes(beta, W.shape[1])
    est.acceptance_rate_ = float(np.mean(chain.acceptance)) if chain.acceptance else 0.0
    est.history_ = {"acceptance": np.array(chain.acceptance), "proposal_mse": np.array(chain.proposal_mse),
                    "n_resamples": chain.resamples}
    est.frequency_history_ = np.stack(chain.snapshots) if chain.snapshots else None
    est.proposal_covariance_ = chain.chol @ chain.chol.T
    est.n_iter_ = est.n_iter
    return stats


def class_temperature(est, stats, Xs, Yc, sample_weight=None):
    """A fitted classifier's ``temperature_`` and ``predict_set``'s scores
    (:func:`rffkern._calibration.temperature_of`): from the exact leave-one-out outputs of the rows
    ``(Xs, Yc)`` (standardized inputs, centred one-hot targets; relative weights
    ``sample_weight``) of its final least-squares fit, whose :class:`PairStats` over every row are
    ``stats`` (penalty ``alpha_ N``, no intercept); each row is left out with all its weight."""
    S = kernels.features(np.ascontiguousarray(Xs), est.frequencies_.astype(Xs.dtype), None, scale=1.0,
                         pair=True, n_threads=resolve_n_threads(est.n_jobs))
    zero = np.zeros(S.shape[1])

    def loo_scores(rows, w):  # the class outputs (one per class, both for two classes)
        return loo_outputs(stats.G, stats.SY, zero, 0.0, stats.total, S[rows], Yc[rows], est.alpha_ * stats.total,
                           False, w) + est.y_mean_

    return temperature_of(class_codes(Yc + est.y_mean_), loo_scores, np.arange(S.shape[0]), sample_weight)


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
