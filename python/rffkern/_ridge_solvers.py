"""The closed-form ridge machinery shared by RFFRidge and EERF: feature maps, streamed Gram sums,
and alpha selection by exact leave-one-out, GCV or a held-out split.

A *feature map* is any object with ``n_out`` and the three methods ``gram(X, Y, out=None,
out_zty=None, accumulate=False)``, ``features(X)`` and ``predict(X, coef)``:
:class:`FourierFeatureMap` runs them through the compiled kernels; EERF adds NumPy maps of its own.
The solvers below only ever call those three methods, so the n x s feature matrix is formed one
block of rows at a time at most.
"""
from __future__ import annotations

import copy
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from rffkern import kernels
from rffkern._data import holdout_split, power_of_two_scale
from rffkern._linalg import RidgeEigen, one_blas_thread, ridge_solve, single_threaded_blas
from rffkern._validation import resolve_n_threads

__all__ = ["FourierFeatureMap", "GramStats", "solve_ridge", "choose_alpha", "loo_errors", "LooPass", "KernelLoo",
           "gcv_errors", "fit_ridge_map", "as_alpha_list"]

_BLOCK_ROWS = 4096
#: Rows per block of the leave-one-out pass, which the map's threads share out (one block each
#: at a time, BLAS on one thread): small enough for two threads to balance on a few thousand rows,
#: large enough for each block's GEMMs to run near one core's peak. The threads are ours, not
#: BLAS's: OpenBLAS's idle threads spin after a product and slow the compiled kernel that follows
#: (docs/design_notes.rst).
_LOO_BLOCK_ROWS = 512
#: The leave-one-out pass multiplies in float32 when its products cost at least this many
#: multiply-adds (the Gram's rows x s^2: from 2000 rows at s = 500 or more) ...
FLOAT32_LOO_MIN_WORK = 5e8
#: ... and the Gram has at least this many rows per feature: with fewer, small penalties give rows of
#: leverage near 1, whose ``1 - h`` float32 cannot resolve (see :meth:`LooPass.sse`). Past both
#: thresholds float32 products take about a quarter off ``rffkern.fit``'s width search and choose
#: the same width and penalty (docs/design_notes.rst).
FLOAT32_LOO_MIN_ROWS_PER_FEATURE = 2


class FourierFeatureMap:
    """``z(x) = scale * cos(W.T x + b)`` (or the ``[cos, sin]`` pair form) through the compiled kernels.

    Rows that mostly hold one value per column (one-hot columns, blank pixels: a9a, w8a, mnist
    once standardized) go to the kernels as their centered sparse rows
    (:func:`rffkern.kernels.centered_rows`, at most ``CENTERED_ROWS_MAX_DENSITY`` of the entries
    stored; it decides from the first 256 rows, so a dense X costs a look at those only): ``U`` then
    costs O(nnz s) instead of O(n d s), the same values up to rounding.
    """

    def __init__(self, weights, offsets, scale, pair=False, n_threads=1):
        self.weights, self.offsets, self.scale, self.pair = weights, offsets, float(scale), bool(pair)
        self.n_threads = n_threads
        self.n_out = weights.shape[1] * (2 if pair else 1)

    def _args(self, X):
        W = self.weights.astype(X.dtype, copy=False)
        b = None if self.offsets is None else self.offsets.astype(X.dtype, copy=False)
        rows = kernels.centered_rows(X) if X.shape[0] > 0 else None
        return W, b, rows

    def gram(self, X, Y, out=None, out_zty=None, accumulate=False):
        W, b, rows = self._args(X)
        return kernels.gram(X, W, b, Y, scale=self.scale, pair=self.pair, out=out, out_zty=out_zty,
                            accumulate=accumulate, n_threads=self.n_threads, rows=rows)

    def features(self, X):
        W, b, rows = self._args(X)
        return kernels.features(X, W, b, scale=self.scale, pair=self.pair, n_threads=self.n_threads, rows=rows)

    def predict(self, X, coef):
        W, b, rows = self._args(X)
        return kernels.predict(X, W, b, np.asarray(coef, X.dtype), scale=self.scale, pair=self.pair,
                               n_threads=self.n_threads, rows=rows)


class GramStats:
    """Running sums for a ridge fit with intercept: ``Z.T Z``, ``Z.T [1, Y]``, ``n``, ``sum Y``, ``sum Y^2``.

    Stored in the dtype of the first chunk; the compiled kernel adds each chunk in place
    (``kernels.gram(accumulate=True)``). With sample weights ``w`` every sum is weighted
    (``Z.T diag(w) Z``, ``Z.T diag(w) [1, Y]``, ``n = sum w``, ...), so that integer weights give
    the sums of the rows repeated; ``rows`` counts the rows added whatever their weights.

    The targets are divided by ``target_scale``, the power of two at the first chunk's largest
    ``|y|``: exact, so every result is bit for bit the unscaled one times the scale, but sums of
    squares of targets near 1e300 no longer overflow. :func:`solve_ridge` and :func:`choose_alpha`
    give results in y's units; :func:`loo_errors` and :func:`gcv_errors` in units of the scale.
    """

    def __init__(self, n_out, n_targets, dtype):
        self.target_scale = None
        self.G = np.zeros((n_out, n_out), dtype)
        self.ZtY = np.zeros((n_out, n_targets + 1), dtype)
        self.n: float = 0  # the (weighted) row count
        self.rows = 0
        self.positive_rows = 0  # the rows of positive weight: GCV's row count
        # the caller's weight that counts 1 in these sums (the estimator's first fit's mean positive
        # weight, :func:`rffkern._data.relative_sample_weight`): a later chunk's weights are divided by it
        self.weight_unit = 1.0
        self.y_sum = np.zeros(n_targets)
        self.y_sq = np.zeros(n_targets)

    def add(self, fmap, X, Y, sample_weight=None):
        """Add the rows (X, Y) through the feature map ``fmap``.

        Unweighted rows go through the compiled ``gram`` kernel; weighted ones through blocks of
        features and BLAS (``(sqrt(w) Z).T (sqrt(w) Z)``), O(block * s) memory.

        Parameters
        ----------
        fmap : feature map
            See the module docstring.
        X : ndarray of shape (n, d)
        Y : ndarray of shape (n, m)
        sample_weight : ndarray of shape (n,) or None, default=None
            Non-negative row weights (already checked); every sum is weighted by them.

        Returns
        -------
        self : GramStats
        """
        if self.target_scale is None:
            self.target_scale = float(power_of_two_scale(Y))
        Y = Y / self.target_scale
        Ya = np.empty((X.shape[0], Y.shape[1] + 1), self.G.dtype)
        Ya[:, 0] = 1.0
        Ya[:, 1:] = Y
        if X.dtype != self.G.dtype:
            X = X.astype(self.G.dtype)
        Y64 = Y.astype(np.float64, copy=False)
        if sample_weight is None:
            fmap.gram(X, Ya, out=self.G, out_zty=self.ZtY, accumulate=True)
            self.n += X.shape[0]
            self.y_sum += Y64.sum(0)
            self.y_sq += (Y64**2).sum(0)
        else:
            w = np.asarray(sample_weight, dtype=np.float64)
            for start in range(0, X.shape[0], _BLOCK_ROWS):
                wb = w[start:start + _BLOCK_ROWS]
                Z = fmap.features(X[start:start + _BLOCK_ROWS])
                Zw = Z * np.sqrt(wb).astype(Z.dtype)[:, None]
                self.G += Zw.T @ Zw
                self.ZtY += Z.T @ (Ya[start:start + _BLOCK_ROWS] * wb.astype(Z.dtype)[:, None])
            self.n += float(w.sum())
            self.y_sum += w @ Y64
            self.y_sq += w @ (Y64**2)
        # (getattr: statistics pickled before the count existed had only positive weights in rows)
        self.positive_rows = (getattr(self, "positive_rows", self.rows)
                              + (X.shape[0] if sample_weight is None else int(np.count_nonzero(sample_weight))))
        self.rows += X.shape[0]
        return self

    def merge(self, other):
        """Add the sums of ``other`` (statistics of other rows, same map and targets) in place.

        The two target scales are powers of two, so the sums held at the smaller one are brought to
        the larger exactly (a multiplication by a power of two, short of underflow): merging the
        statistics of row chunks gives those of one pass over all rows, up to the order of the
        additions. ``other`` is not modified.
        """
        if other.G.shape != self.G.shape or other.ZtY.shape != self.ZtY.shape:
            raise ValueError(f"cannot merge Gram statistics of shapes {other.G.shape}, {other.ZtY.shape} "
                             f"into {self.G.shape}, {self.ZtY.shape}")
        if other.target_scale is None:
            return self
        if self.target_scale is None:
            self.target_scale = other.target_scale
        if other.target_scale > self.target_scale:
            ratio = self.target_scale / other.target_scale
            self.ZtY[:, 1:] *= ratio
            self.y_sum *= ratio
            self.y_sq *= ratio * ratio
            self.target_scale = other.target_scale
        ratio = other.target_scale / self.target_scale
        self.G += other.G
        self.ZtY[:, :1] += other.ZtY[:, :1]
        self.ZtY[:, 1:] += other.ZtY[:, 1:] * self.ZtY.dtype.type(ratio)
        self.n += other.n
        self.positive_rows = (getattr(self, "positive_rows", getattr(self, "rows", self.n))
                              + getattr(other, "positive_rows", getattr(other, "rows", other.n)))
        self.rows += getattr(other, "rows", other.n)
        self.y_sum += other.y_sum * ratio
        self.y_sq += other.y_sq * (ratio * ratio)
        return self

    def centred(self, fit_intercept):
        """(G, Z.T Y, mean feature, mean target, centred Y.T Y diagonal) in float64."""
        G = self.G.astype(np.float64)
        ZtY = self.ZtY[:, 1:].astype(np.float64)
        n = self.n if self.n > 0 else 1
        if not fit_intercept:
            return G, ZtY, np.zeros(G.shape[0]), np.zeros(ZtY.shape[1]), self.y_sq.copy()
        mu = self.ZtY[:, 0].astype(np.float64) / n
        ybar = self.y_sum / n
        Gc = G - n * np.outer(mu, mu)
        Gc = 0.5 * (Gc + Gc.T)
        return Gc, ZtY - n * np.outer(mu, ybar), mu, ybar, np.maximum(self.y_sq - n * ybar**2, 0.0)


def solve_ridge(stats, alpha, fit_intercept):
    """``(coef, intercept)`` of the ridge fit with penalty ``alpha``, in y's units."""
    G, ZtY, mu, ybar, _ = stats.centred(fit_intercept)
    coef = ridge_solve(G, ZtY, alpha)
    return coef * stats.target_scale, (ybar - mu @ coef) * stats.target_scale


#: A Gram accumulated in float32 (or float64) resolves a penalty of at least this many times its
#: dtype's eps times its trace (the sum of the rows' squared feature norms, at least its largest
#: eigenvalue): below, its rounding errors outweigh the penalty, and the fit and its leave-one-out
#: error follow them. Unfloored, ``EERFRegressor()`` on 500 noise-free float32 rows of make_jse3
#: picks alpha 1e-8 and a test R^2 of -8.4 (0.33-0.93 on other seeds), against 0.9999 in float64.
#: Floored at 0.1 / 1 / 10 times this, the worst test R^2 of 15 float32 fits (EERFRegressor and
#: RFFRidge, 500 and 1500 rows, noise 0 and 0.01, seeds 0-2; float64: 0.998-1.0) is 0.61 / 0.996 / 0.993.
PENALTY_RESOLUTION = 1.0


def resolved_alphas(alphas, stats):
    """Which penalties the Gram ``stats`` resolves (:data:`PENALTY_RESOLUTION`); the largest one
    where it resolves none."""
    alphas = np.asarray(alphas, np.float64)
    floor = PENALTY_RESOLUTION * np.finfo(stats.G.dtype).eps * float(np.trace(stats.G, dtype=np.float64))
    resolved = alphas >= floor
    return resolved if resolved.any() else alphas == alphas.max()


def choose_alpha(alphas, errors, stats, selection="loo"):
    """The alpha of least selection error among those the Gram resolves (:func:`resolved_alphas`),
    and the errors converted to y's units (inf where the mean squared error itself overflows, and
    for the penalties the Gram does not resolve). With ``selection="evidence"`` the errors are
    negative log densities per row (:func:`evidence_errors`), shifted by ``log target_scale``."""
    errors = np.where(resolved_alphas(alphas, stats), errors, np.inf)
    best = alphas[int(np.argmin(errors))]
    if selection == "evidence":
        return best, errors + np.log(stats.target_scale)
    return best, errors * stats.target_scale * stats.target_scale


def loo_errors(fmap, X, Y, stats, alphas, fit_intercept, sample_weight=None, row_out=None):
    """Mean squared leave-one-out error of every alpha (shape (n_alphas,)), one blocked pass over X,
    in units of ``stats.target_scale ** 2``.

    ``stats`` holds the Gram of the fit (all rows); (X, Y) are the rows whose exact LOO residuals
    are averaged -- all of them, or a random subset for an unbiased estimate of the mean.
    ``sample_weight`` (of those rows, or None) weights the average. ``row_out`` (n, n_alphas), if
    given, receives every row's squared LOO residuals (see :meth:`LooPass.sse`).
    """
    total = X.shape[0] if sample_weight is None else float(np.sum(sample_weight))
    sse = LooPass(stats, alphas, fit_intercept).sse(fmap, X, Y, sample_weight, row_out)
    return sse / (total * Y.shape[1])


class LooPass:
    """The leave-one-out pass of a Gram: its eigendecomposition once, then :meth:`sse` on any rows.

    :meth:`sse` of row chunks adds up to that of all rows (a distributed fit sends this object to
    the workers and sums their results).
    """

    def __init__(self, stats, alphas, fit_intercept):
        G, ZtY, self.mu, self.ybar, _ = stats.centred(fit_intercept)
        self.eig = RidgeEigen(G, ZtY)
        self.inv = 1.0 / (self.eig.evals[None, :] + np.asarray(alphas, np.float64)[:, None])  # (n_alphas, s)
        self.base_h = 1.0 / stats.n if fit_intercept else 0.0
        self.target_scale = stats.target_scale
        # decided by the whole fit's size, so that a pass split over chunks (Dask) multiplies alike
        s = self.inv.shape[1]
        large = (stats.rows * float(s) ** 2 >= FLOAT32_LOO_MIN_WORK
                 and stats.rows >= FLOAT32_LOO_MIN_ROWS_PER_FEATURE * s)
        self.work_dtype = np.float32 if large else np.float64

    def sse(self, fmap, X, Y, sample_weight=None, row_out=None):
        """Sum of the squared LOO residuals of the rows of (X, Y), per alpha, in blocks of rows.

        With ``sample_weight`` (n,) each row is left out with all its weight, as scikit-learn's
        ``RidgeCV`` does: its leverage is ``w_i z_i^T (G_w + alpha I)^{-1} z_i`` (plus ``w_i / sum w``
        for the intercept) with ``G_w`` the weighted Gram, and the residuals are summed weighted,
        ``sum_i w_i r_i^2``. Weights ``c w`` then give the errors of ``w`` at ``alpha / c`` exactly.
        (Leaving out one unit of weight instead, the repeated-rows reading, makes the choice depend
        on the weights' units: a row of weight below 1 is left out with more than it holds, one of
        weight 1000 with a thousandth of it; docs/design_notes.rst.)

        Parameters
        ----------
        fmap : feature map
            The map the Gram statistics were computed with.
        X : ndarray of shape (n, d)
        Y : ndarray of shape (n, m)
            Targets in the units the statistics were built from (before ``target_scale``).
        sample_weight : ndarray of shape (n,) or None, default=None
            Weights of these rows; None: 1 each.
        row_out : ndarray of shape (n, n_alphas) or None, default=None
            If given, filled with each row's squared LOO residual (summed over the targets,
            unweighted) for every alpha, the terms of the sum (no extra pass).

        Returns
        -------
        sse : ndarray of shape (n_alphas,)
        """
        eig, inv = self.eig, self.inv
        n_alphas, m = inv.shape[0], eig.VtZtY.shape[1]
        # every alpha's V.T coefficients side by side: F of all alphas is one GEMM per block
        M = (inv[:, :, None] * eig.VtZtY[None, :, :]).transpose(1, 0, 2).reshape(inv.shape[1], n_alphas * m)
        # On large passes the two products per block (Q = (Z - mu) V, an n x s x s GEMM, and Q M)
        # run in float32: they are the bulk of the pass (elevators, s = 1000: 1.39 s of a 3.9 s rffkern.fit) and
        # half as long. The LOO errors move by < 1e-5 relative where the penalty is not degenerate
        # (errors of the smallest penalties on abalone, dominated by rows of leverage ~1, differ
        # wildly in either precision) and the chosen penalty and width were the float64 ones on
        # elevators, kin40k, ccpp, cal_housing, abalone and mnist (RFFRidge(), 3 widths each).
        work = self.work_dtype
        V32, M32 = eig.V.astype(work), M.astype(work)
        inv32, mu32 = inv.T.astype(work), self.mu.astype(work)

        def block(bmap, start):  # the sum over rows [start, start + _LOO_BLOCK_ROWS)
            stop = start + _LOO_BLOCK_ROWS
            Zb = bmap.features(X[start:stop]).astype(work)                          # a fresh copy
            Zb -= mu32
            Q = Zb @ V32                                                             # (b, s)
            H = self.base_h + ((Q * Q) @ inv32).astype(np.float64)                  # (b, n_alphas)
            if sample_weight is not None:  # the whole row's leverage: all of its weight left out
                H *= np.asarray(sample_weight[start:stop], np.float64)[:, None]
            Yb = Y[start:stop].astype(np.float64) / self.target_scale - self.ybar    # (b, m)
            F = (Q @ M32).astype(np.float64).reshape(Q.shape[0], n_alphas, m)       # (b, n_alphas, m)
            R2 = (((Yb[:, None, :] - F) / np.maximum(1.0 - H, 1e-12)[:, :, None]) ** 2).sum(axis=2)
            if row_out is not None:
                row_out[start:start + R2.shape[0]] = R2
            if sample_weight is None:
                return R2.sum(axis=0)
            return np.asarray(sample_weight[start:stop], np.float64) @ R2

        # The blocks' products on the map's threads, each block on one (BLAS on one thread too, so
        # that no idle BLAS thread spins beside the next compiled kernel), summed in block order:
        # the same sums whatever the thread count. See ``_LOO_BLOCK_ROWS``.
        starts = range(0, X.shape[0], _LOO_BLOCK_ROWS)
        threads = getattr(fmap, "n_threads", None)  # (the NumPy maps of EERF have none: OpenMP's limit)
        threads = min(max(resolve_n_threads(None) if threads is None else int(threads), 1), len(starts))
        with one_blas_thread():
            if threads > 1:
                bmap = copy.copy(fmap)
                bmap.n_threads = 1
                with ThreadPoolExecutor(threads) as pool:
                    parts = list(pool.map(lambda start: block(bmap, start), starts))
            else:
                parts = [block(fmap, start) for start in starts]
        sse = np.zeros(n_alphas)
        for part in parts:
            sse += part
        return sse


class KernelLoo:
    """Exact leave-one-out errors of a fit with fewer rows than features, from the n x n matrix
    ``K = Zc Zc.T`` of the centred features instead of the s x s Gram.

    With ``K = U diag(e) U.T`` the hat matrix of penalty ``alpha`` is ``Zc (G + alpha I)^{-1} Zc.T =
    U diag(e / (e + alpha)) U.T``, plus ``1/n`` for the intercept: the numbers of :class:`LooPass`,
    for an n x n eigendecomposition and O(n^2 s) products where it takes an s x s one and O(n s^2).
    With twice as many features as rows (``RFFRidge()`` on diabetes) the s x s eigendecompositions
    are most of the fit (docs/design_notes.rst). The chosen penalty's coefficients still come from
    the Gram (:func:`solve_ridge`, one Cholesky factorisation): the kernel form's
    ``Zc.T (K + alpha I)^{-1} yc`` loses three more digits at alpha = 1e-8 (scikit-learn's
    sample-weight equivalence check). Unweighted rows only
    (``fit_ridge_map`` falls back to the Gram's path with sample weights or a subset of scored rows).

    Parameters
    ----------
    fmap : feature map
    X : ndarray of shape (n, d)
        The rows of the fit (every one of them).
    Y : ndarray of shape (n, m)
    stats : GramStats
        The Gram statistics of the same rows (for their target scale).
    fit_intercept : bool
    """

    @single_threaded_blas
    def __init__(self, fmap, X, Y, stats, fit_intercept):
        from scipy.linalg import eigh

        Z = np.array(fmap.features(X), dtype=np.float64)
        Yc = Y.astype(np.float64) / stats.target_scale
        n = Z.shape[0]
        if fit_intercept:
            # Centred rows are orthogonal to the ones vector, the null vector of Zc Zc.T: a
            # Householder reflection Q (Q 1 = -sqrt(n) e_1) takes them to rows 2..n, and the
            # eigendecomposition of those (n - 1 rows) leaves the intercept's direction exactly out.
            # (Its round-off eigenvalue e_1 ~ 1e-14, kept in, would make 1 - h wrong by e_1 / alpha:
            # 1e-5 relative at alpha = 1e-8 on 60 rows of 100 features.)
            Z -= Z.mean(axis=0)
            Yc -= Yc.mean(axis=0)
            v = np.ones(n)
            v[0] += np.sqrt(n)
            v /= np.linalg.norm(v)
            B = (Z - 2.0 * np.outer(v, v @ Z))[1:]
        else:
            B = Z
        evals, U = eigh(B @ B.T, check_finite=False, driver="evd")
        # eigenvalues below the round-off of the largest are zeros (duplicated rows) and count so
        evals[evals < B.shape[0] * np.finfo(np.float64).eps * max(evals.max(), 0.0)] = 0.0
        if fit_intercept:  # the eigenvectors back in the rows' coordinates: Q [0; U]
            U = np.vstack([np.zeros((1, U.shape[1])), U])
            U -= 2.0 * np.outer(v, v @ U)
        self.evals, self.U, self.UtY = evals, U, U.T @ Yc

    def errors(self, alphas, row_out=None):
        """Mean squared LOO residual per alpha (units of ``target_scale ** 2``, as
        :func:`loo_errors`); ``row_out`` (n, n_alphas) receives each row's squared residuals summed
        over the targets."""
        alphas = np.asarray(alphas, np.float64)
        n, m = self.U.shape[0], self.UtY.shape[1]
        # with keep = alpha / (e + alpha) = 1 - e / (e + alpha) the residuals are U diag(keep) U.T yc
        # and 1 - h = (U * U) keep (the squared rows of U sum to 1, or to 1 - 1/n with the
        # intercept, whose 1/n that is): no cancellation where h is near 1 (small penalties)
        keep = alphas[:, None] / (self.evals[None, :] + alphas[:, None])       # (n_alphas, k)
        one_minus_h = (self.U * self.U) @ keep.T                                # (n, n_alphas)
        R = (self.U @ (keep.T[:, :, None] * self.UtY[:, None, :]).reshape(self.U.shape[1], -1))
        R = R.reshape(n, alphas.size, m)
        R2 = ((R / np.maximum(one_minus_h, 1e-12)[:, :, None]) ** 2).sum(axis=2)
        if row_out is not None:
            row_out[...] = R2
        return R2.sum(axis=0) / (n * m)


def gcv_errors(stats, alphas, fit_intercept):
    """Generalised cross-validation error of every alpha, from the Gram alone, in units of
    ``stats.target_scale ** 2``: the (weighted) mean squared residual over ``(1 - dof / k)^2`` with
    ``k`` the rows of positive weight (the rows each left out, as in :meth:`LooPass.sse`: the
    weights' sum in its place made the choice depend on their units)."""
    G, ZtY, _, _, yty = stats.centred(fit_intercept)
    eig = RidgeEigen(G, ZtY)
    extra = 1.0 if fit_intercept else 0.0
    n = stats.n if stats.n > 0 else 1
    rows = getattr(stats, "positive_rows", n) or 1
    return np.array([eig.gcv(a, yty, n, extra, rows=rows).mean() for a in alphas])


def evidence_errors(stats, alphas, fit_intercept):
    """Negative log marginal likelihood per row and output of every alpha (the Bayesian linear
    model of :mod:`rffkern._posterior` at its best noise variance, :meth:`RidgeEigen.log_evidence`),
    from the Gram alone, for the targets in units of ``stats.target_scale``: lower is better, as for
    the other selection errors."""
    G, ZtY, _, _, yty = stats.centred(fit_intercept)
    eig = RidgeEigen(G, ZtY)
    n_eff = max(float(stats.n) - (1.0 if fit_intercept else 0.0), 1.0)
    return np.array([-eig.log_evidence(a, yty, n_eff).mean() / n_eff for a in alphas])


def gram_errors(stats, alphas, fit_intercept, selection):
    """The selection errors that need no pass over the rows: ``"evidence"``'s, else GCV's."""
    if selection == "evidence":
        return evidence_errors(stats, alphas, fit_intercept)
    return gcv_errors(stats, alphas, fit_intercept)


def _rows(A, idx):
    return A if A is None or idx is None else A[idx]


def fit_ridge_map(fmap, X, Y, alphas, *, fit_intercept=True, selection="loo", validation_fraction=0.1,
                  rng=None, score_single=False, sample_weight=None, loo_rows=None, return_row_losses=False):
    """Fit ridge on the map ``fmap`` for one or several alphas.

    Returns ``(coef, intercept, alpha, errors, stats)``: coef (s, m), intercept (m,), the chosen
    alpha, the selection errors per alpha (None for a single alpha unless ``score_single``, e.g. to
    compare maps) and the :class:`GramStats` of all the data (for later ``partial_fit``); with
    ``return_row_losses`` a sixth element, the per-row terms of the chosen alpha's error.

    Parameters
    ----------
    fmap : feature map
    X : ndarray of shape (n, d)
    Y : ndarray of shape (n, m)
    alphas : sequence of float
    fit_intercept : bool, default=True
    selection : {"loo", "gcv", "validation", "evidence"}, default="loo"
        ``"evidence"``: the largest log marginal likelihood (:func:`evidence_errors`).
    validation_fraction : float, default=0.1
        Held-out share for ``selection="validation"``.
    rng : numpy.random.Generator or None, default=None
        Draws the held-out split or the LOO subset (None: a Generator seeded with 0).
    score_single : bool, default=False
        Compute the selection error of a single alpha too.
    sample_weight : ndarray of shape (n,) or None, default=None
        Non-negative row weights (already checked): they weight every sum and every selection
        error.
    loo_rows : int or None, default=None
        With ``selection="loo"``, average the exact LOO residuals of a random subset of at most
        that many rows (the Gram still holds every row): an unbiased estimate of the LOO error at
        a fraction of the pass's cost, but a noisy one at small penalties (a few rows of leverage
        near 1 dominate the mean). None: every row.
    return_row_losses : bool, default=False
        Also return ``(losses, weights)``: the squared LOO (or held-out) error of each scored row
        at the chosen alpha (mean over the targets, in y's units squared; the chosen alpha's
        error is their ``weights``-weighted mean) and those rows' weights (None: equal), taken
        from the selection pass itself; None for GCV, which scores no row.

    Returns
    -------
    coef, intercept, alpha, errors, stats
        As above (and ``row_losses`` with ``return_row_losses``).
    """
    alphas = list(alphas)
    m = Y.shape[1]
    w = sample_weight
    if len(alphas) == 1 and not score_single:
        stats = GramStats(fmap.n_out, m, X.dtype).add(fmap, X, Y, w)
        coef, intercept = solve_ridge(stats, alphas[0], fit_intercept)
        return (coef, intercept, alphas[0], None, stats) + ((None,) if return_row_losses else ())
    rows = None  # per-row selection losses (n_scored, n_alphas) in units of target_scale**2, and weights
    if rng is None:
        rng = np.random.default_rng(0)
    if selection == "validation":
        n = X.shape[0]
        n_val = int(round(validation_fraction * n))
        if n_val < 1 or n - n_val < 1:
            raise ValueError(
                f"validation_fraction={validation_fraction} leaves no training or validation sample "
                f"out of {n}")
        tr, va = holdout_split(n, n_val, rng)
        stats = GramStats(fmap.n_out, m, X.dtype).add(fmap, X[tr], Y[tr], _rows(w, tr))
        G, ZtY, mu, ybar, _ = stats.centred(fit_intercept)
        eig = RidgeEigen(G, ZtY)
        coefs = np.hstack([eig.coef(a) for a in alphas])                    # (s, m * n_alphas)
        F = fmap.predict(X[va], coefs).astype(np.float64)
        F += np.concatenate([ybar - mu @ coefs[:, i * m:(i + 1) * m] for i in range(len(alphas))])
        R = F - np.tile(Y[va].astype(np.float64) / stats.target_scale, len(alphas))
        per_row = (R**2).reshape(n_val, len(alphas), m).mean(axis=2)
        if w is None:
            errors = per_row.mean(axis=0)
        else:
            w_va = w[va]
            if not w_va.sum() > 0:
                raise ValueError("every held-out sample has zero sample_weight; use alpha_selection='loo' or 'gcv'")
            errors = w_va @ per_row / w_va.sum()
        rows = (per_row, _rows(w, va))
        stats.add(fmap, X[va], Y[va], _rows(w, va))
    else:
        stats = GramStats(fmap.n_out, m, X.dtype).add(fmap, X, Y, w)
        if selection == "loo":
            idx = None
            if loo_rows is not None and X.shape[0] > loo_rows:
                idx = np.sort(rng.choice(X.shape[0], int(loo_rows), replace=False))
                if w is not None and not w[idx].sum() > 0:
                    idx = None
            n_scored = X.shape[0] if idx is None else idx.size
            row_out = np.empty((n_scored, len(alphas))) if return_row_losses else None
            if idx is None and w is None and 1 < X.shape[0] < fmap.n_out and min(alphas) > 0:
                errors = KernelLoo(fmap, X, Y, stats, fit_intercept).errors(alphas, row_out)  # fewer rows than features
            else:
                errors = loo_errors(fmap, _rows(X, idx), _rows(Y, idx), stats, alphas, fit_intercept, _rows(w, idx),
                                    row_out)
            if row_out is not None:
                rows = (row_out / m, _rows(w, idx))
        else:
            errors = gram_errors(stats, alphas, fit_intercept, selection)
    best, errors = choose_alpha(alphas, errors, stats, selection)
    i_best = alphas.index(best)  # (not argmin(errors): in y's units they may overflow)
    coef, intercept = solve_ridge(stats, best, fit_intercept)
    if not return_row_losses:
        return coef, intercept, best, errors, stats
    row_losses = None if rows is None else (rows[0][:, i_best] * stats.target_scale**2, rows[1])
    return coef, intercept, best, errors, stats, row_losses


def as_alpha_list(alpha):
    """The penalties as a list of floats, from a number or a sequence (their values are checked by
    the estimators' ``alpha`` constraint)."""
    if np.ndim(alpha) == 0:
        return [float(alpha)]
    return [float(a) for a in alpha]
