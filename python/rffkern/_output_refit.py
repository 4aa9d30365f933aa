"""The closing fit of RFFNetClassifier's output layer (``refit_coef``) on fixed trained features.

For fixed relevances, frequencies and phases the features ``Z = z(theta * x)`` are fixed, and the
classifier's objective in its output weights ``B``,

    sum_i w_i loss(y_i, Z_i B) / sum_i w_i + alpha * ||B||^2,

is an L2-penalised logistic (one output) or softmax (one output per class) regression: convex,
solved here by L-BFGS with its analytic gradient (``fit_output_layer``; the loss and gradient come
from the compiled :func:`rffkern.kernels.logistic_loss_grad` for one output,
:func:`rffkern.kernels.softmax_loss_grad` for several, and two matrix products per block of rows
for many, ``SOFTMAX_GEMM_MIN_OUTPUTS``). The penalty comes from
the data (``choose_output_penalty``): penalties of a grid are fitted on training rows and scored
by the log-loss of held-out rows (from 4000 rows or 64 classes on, on float32 copies of the
features, ``SEARCH_DTYPE``; the kept fit on every row runs in float64).

L-BFGS runs in whitened coordinates, ``B = P U`` with ``P = V diag(1 / sqrt(e + 2 alpha)) V.T``
from the eigendecomposition ``V diag(e) V.T`` of ``sum_i w_i c_i z_i z_i^T``, the features' second
moments weighted by each row's curvature ``c_i`` of the loss at the fit's starting point: ``p (1 -
p)`` for the logistic loss, ``(1 - sum_k p_k^2) / (m - 1)`` for the softmax (the mean of the
nonzero eigenvalues of its Hessian ``diag(p) - p p^T``: ``1 / m`` at logits 0). ``e + 2 alpha``
approximates the objective's curvature along each eigenvector, so that the number of iterations
depends much less on the conditioning of the features. The fits start from RFFNet's trained
output weights, whose predictions are often confident: there the curvature is far below its value
at logits 0 (``1 / 4``), most of all where the classes separate. Weighting by the curvature at the
start halves the iterations and the time or better where classes nearly separate, and the solutions
are at least as accurate (docs/design_notes.rst).
"""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
from scipy.linalg import eigh
from scipy.linalg.blas import dsyrk, ssyrk
from scipy.optimize import minimize
from scipy.special import expit, log_softmax

from rffkern._linalg import single_threaded_blas
from rffkern._losses import mean_loss
from rffkern._validation import resolve_n_threads
from rffkern._losses import logistic_loss_grad_unchecked, softmax_loss_grad_unchecked

__all__ = ["fit_output_layer", "choose_output_penalty", "OUTPUT_ALPHAS"]

#: ``RFFNetClassifier(refit_coef=True)``'s penalties on ``||B||^2``: half decades from 1e-6 to 1e-1
#: (RFFNet's default ``alpha`` is 1e-4).
OUTPUT_ALPHAS = tuple(float(a) for a in np.logspace(-6, -1, 11))
#: L-BFGS's tolerance on the largest component of the whitened gradient. Looser ones stop early
#: enough at small penalties to act as a regulariser of their own, which the validation loss then
#: rewards; 1e-5 chooses the same penalties as 1e-6 in half to two thirds of the time
#: (docs/design_notes.rst).
OUTPUT_TOL = 1e-5
#: The rotated features ``Z V`` (an n x s x s product, once per fold) are formed for fewer rows than
#: this many per output; above, every evaluation multiplies by V instead (two s x s x m products
#: more). A fold's fits take some hundreds of evaluations, so the rotation pays below a few hundred
#: rows per output (docs/design_notes.rst).
ROTATE_ROWS_PER_OUTPUT = 500
#: From this many outputs on, the softmax loss and gradient are two matrix products per block of
#: rows (``_SoftmaxProducts``) instead of the compiled kernel, whose register blocking serves a
#: few outputs: its cost per output grows with the output count, while a BLAS product keeps its
#: rate. They cross near 32 outputs; at 64 the products took 0.63-0.76x of the kernel's time on
#: 1000 and 4000 rows of 1000 features, float32 and float64, at 1000 outputs 0.30-0.45x (one
#: thread, ``python bench/bench_closing_fit.py``, docs/benchmarks.rst). A closing fit is hundreds
#: of evaluations: with 1000 classes on 3000 rows it took 233 s of RFFNetClassifier's 263 s fit
#: with the kernel, 63 s with the products and the float32 search. Problems with fewer outputs
#: keep the kernel, and their results.
SOFTMAX_GEMM_MIN_OUTPUTS = 64
#: The rows of one product: the blocks go to the threads and their gradients are summed in block
#: order, so that the fit does not depend on the thread count (a multi-threaded BLAS product
#: does: not bitwise), and a block's n x m softmax stays a few MB.
SOFTMAX_BLOCK_ROWS = 1024
#: The penalty search (``choose_output_penalty``) fits its folds on float32 copies of the features
#: (products at twice the speed and half the memory traffic; the losses, residuals and L-BFGS stay in
#: float64); the fit on every row, the one kept, runs on the float64 features. The search chooses
#: the penalties of a float64 one and takes 15-40% less time (docs/design_notes.rst) ...
SEARCH_DTYPE = np.float32
#: ... but only from this many rows on: on digits (1437 rows) ``rffkern.fit`` made one test error
#: more on 4 of 10 bench splits with the float32 search (and none fewer; seeds 0-9,
#: ``bench_realdata_s19small.json`` against ``s18small_merged.json``; a tighter final tolerance
#: moved the errors about without fixing them), and a small fit saves only a second or two. From
#: ``SOFTMAX_GEMM_MIN_OUTPUTS`` outputs on the search runs in float32 whatever the rows: each
#: evaluation is then two n x s x m products, in float32 at 0.55x of float64's time, and a search
#: of hundreds of them saves tens of seconds with 1000 classes (the same penalty and test accuracy
#: on 200 and 1000 classes as the float64 search, ``bench/bench_closing_fit.py``).
FLOAT32_SEARCH_MIN_ROWS = 4000
#: Every evaluation of the objective is one compiled pass over the rows: the logits, the losses
#: and the gradient, while each row is in the L1 cache (:func:`rffkern.kernels.logistic_loss_grad`
#: for one output, :func:`rffkern.kernels.softmax_loss_grad` for several), where two matrix
#: products (``Z @ A``, then ``Z.T @ G``) read ``Z`` from memory twice: the closing fit is up to
#: twice as fast and finds the same penalties (docs/design_notes.rst). The fits run their BLAS
#: calls on one thread (``fit_output_layer``): they alternate with the compiled loss's OpenMP region
#: every evaluation, the idle threads of a multi-threaded OpenBLAS spin between them, and its split
#: reductions would make the solution depend on the thread count.


def _normalised_weights(n, sample_weight):
    if sample_weight is None:
        return np.full(n, 1.0 / n)
    w = np.asarray(sample_weight, dtype=np.float64)
    return w / w.sum()


def _curvatures(Z, kind, coef):
    """Each row's curvature of the loss in its logits ``Z @ coef``: ``p (1 - p)`` for "logistic",
    the mean nonzero eigenvalue ``(1 - sum_k p_k^2) / (m - 1)`` of the softmax's ``diag(p) - p p^T``
    for "softmax" (m >= 2 outputs)."""
    coef = np.asarray(coef)
    F = (Z @ coef.astype(Z.dtype, copy=False)).astype(np.float64, copy=False)
    if kind == "logistic":
        p = expit(F[:, 0])
        return p * (1.0 - p)
    P = np.exp(log_softmax(F, axis=1))
    return (1.0 - np.einsum("ij,ij->i", P, P)) / max(coef.shape[1] - 1, 1)


class _Whitening:
    """The eigendecomposition of the features' second moments weighted by the rows' curvatures at a
    starting point, which preconditions the fits.

    It depends on the rows only through ``V`` and the eigenvalues: a fold's whitening also
    preconditions the fit on every row (the closing fit's last one), whose second moments differ
    little from those of its 90%, and the other penalties' fits of a path (only the iteration count
    could change, never the solution).
    """

    @single_threaded_blas
    def __init__(self, Z, kind, sample_weight, coef):
        p = _normalised_weights(Z.shape[0], sample_weight) * _curvatures(Z, kind, coef)
        Zp = Z * np.sqrt(p).astype(Z.dtype, copy=False)[:, None]  # C order: its transpose is the Fortran array BLAS reads
        syrk = ssyrk if Z.dtype == np.float32 else dsyrk
        M = syrk(1.0, Zp.T, trans=0, lower=0).astype(np.float64, copy=False)  # Zp.T @ Zp, the upper triangle
        self.evals, self.V = eigh(M, lower=False, check_finite=False, driver="evd")
        np.maximum(self.evals, 0.0, out=self.evals)  # round-off can make tiny eigenvalues negative
        self._rotated = None

    def rotated(self, Z):
        """``Z @ V``, kept for the last ``Z`` it was asked for (the fits of one fold share it)."""
        if self._rotated is None or self._rotated[0] is not Z:
            self._rotated = (Z, Z @ self.V.astype(Z.dtype, copy=False))
        return self._rotated[1]

    def scales(self, alpha):
        """``1 / sqrt(e + 2 alpha)`` per eigenvector: ``B = V diag(scales) U``."""
        return 1.0 / np.sqrt(self.evals + 2.0 * alpha)


class _SoftmaxProducts:
    """The weighted softmax cross-entropy of ``F = X @ coef`` and its gradient ``X.T @ R``, by
    matrix products, for many outputs (``SOFTMAX_GEMM_MIN_OUTPUTS``).

    ``R_ik = w_i (softmax(F_i)_k sum_l Y_il - Y_ik)``, the compiled kernel's definitions. The rows
    go in blocks of ``SOFTMAX_BLOCK_ROWS``, ``n_threads`` blocks at a time, each block's two
    products on one BLAS thread; the blocks' losses and gradients are summed in block order, so
    the result does not depend on the thread count. The softmax runs in float64 in buffers kept
    across evaluations (fresh n x m arrays every evaluation cost more in page faults than the
    exponentials), the products in X's dtype.
    """

    def __init__(self, X, Y, w, n_threads):
        self.X, self.Y, self.w = X, Y, w
        self.Yw = Y * w[:, None]
        self.w_mass = w * Y.sum(axis=1)
        n, m = Y.shape
        self.starts = list(range(0, n, SOFTMAX_BLOCK_ROWS))
        self.threads = max(1, min(n_threads, len(self.starts)))
        rows = min(n, SOFTMAX_BLOCK_ROWS)
        self.F = [np.empty((rows, m)) for _ in range(self.threads)]
        self.F_dt = self.F if X.dtype == np.float64 else [np.empty((rows, m), X.dtype) for _ in self.F]
        self.G = [np.empty((X.shape[1], m), X.dtype) for _ in self.F]

    def _block(self, slot, start, coef):
        """The loss of rows [start, start + SOFTMAX_BLOCK_ROWS); their gradient into G[slot]."""
        rows = slice(start, start + SOFTMAX_BLOCK_ROWS)
        X, Y, w = self.X[rows], self.Y[rows], self.w[rows]
        F, F_dt = self.F[slot][:X.shape[0]], self.F_dt[slot][:X.shape[0]]
        np.matmul(X, coef, out=F_dt)
        if F_dt is not F:
            F[...] = F_dt
        F -= F.max(axis=1, keepdims=True)
        shifted_target = np.einsum("ij,ij->i", Y, F)  # sum_k Y_ik (F_ik - max_l F_il)
        np.exp(F, out=F)
        total = F.sum(axis=1)
        w_mass = self.w_mass[rows]
        value = float(w_mass @ np.log(total) - w @ shifted_target)
        F *= (w_mass / total)[:, None]
        F -= self.Yw[rows]
        if F_dt is not F:
            F_dt[...] = F
        np.matmul(X.T, F_dt, out=self.G[slot])
        return value

    def __call__(self, coef):
        coef = np.ascontiguousarray(coef, dtype=self.X.dtype)
        value, grad = 0.0, np.zeros(self.G[0].shape)
        pool = ThreadPoolExecutor(self.threads) if self.threads > 1 else None
        run = map if pool is None else pool.map
        try:
            for first in range(0, len(self.starts), self.threads):
                wave = self.starts[first:first + self.threads]
                for slot, v in enumerate(run(self._block, range(len(wave)), wave, [coef] * len(wave))):
                    value += v
                    grad += self.G[slot]
        finally:
            if pool is not None:
                pool.shutdown()
        return value, grad


@single_threaded_blas
def fit_output_layer(Z, Y, kind, alpha, sample_weight=None, coef=None, *, whitening=None,
                     tol=OUTPUT_TOL, max_iter=1000, n_threads=None):
    """Minimise the closing fit's objective at one penalty by L-BFGS in whitened coordinates.

    Parameters
    ----------
    Z : ndarray of shape (n, s)
        The trained features, float64.
    Y : ndarray of shape (n, m)
        0/1 targets: one column for "logistic", one-hot rows for "softmax".
    kind : {"logistic", "softmax"}
    alpha : float
        Penalty on ``||coef||^2`` (positive).
    sample_weight : ndarray of shape (n,) or None, default=None
    coef : ndarray of shape (s, m) or None, default=None
        Starting point (zeros when None).
    whitening : _Whitening or None, default=None
        The preconditioner of these rows and weights, when already computed; else that of the
        rows' curvatures at ``coef``.
    tol : float, default=OUTPUT_TOL
        L-BFGS's tolerance on the largest component of the whitened gradient.
    max_iter : int, default=1000
        L-BFGS iterations at most.
    n_threads : int or None, default=None
        Threads of the compiled loss, or blocks of rows multiplied at once, as ``n_jobs``; the
        result does not depend on it.

    Returns
    -------
    coef : ndarray of shape (s, m)
    n_iter : int
    """
    s, m = Z.shape[1], Y.shape[1]
    if kind == "logistic" and m != 1:
        raise ValueError(f"the closing fit's logistic loss has one output, got {m}")
    start = np.zeros((s, m)) if coef is None else np.asarray(coef, dtype=np.float64)
    white = whitening or _Whitening(Z, kind, sample_weight, start)
    d = white.scales(alpha)[:, None]
    V = white.V
    dt = Z.dtype
    p = _normalised_weights(Z.shape[0], sample_weight)[:, None]

    # B = V D U: ||B||^2 = ||D U||^2 (V orthogonal) and the logits are Z V D U, in one of two orders
    rotate = Z.shape[0] < ROTATE_ROWS_PER_OUTPUT * m
    # one pass over the rows forms the logits, the losses and the gradient (the compiled logistic
    # loss for one output, the softmax cross-entropy for several): two matrix products read the
    # n x s features twice
    X = np.ascontiguousarray(white.rotated(Z) if rotate else Z)
    w = np.ascontiguousarray(p[:, 0])
    threads = resolve_n_threads(n_threads)
    if kind == "logistic":
        y = np.ascontiguousarray(Y[:, 0], dtype=np.float64)

        def loss_and_pullback(DU):  # the mean loss, and its gradient in D U
            value, g = logistic_loss_grad_unchecked(X, y, (DU if rotate else V @ DU)[:, 0].astype(dt), w, threads)
            return value, (g if rotate else V.T @ g)[:, None]
    elif m >= SOFTMAX_GEMM_MIN_OUTPUTS:
        products = _SoftmaxProducts(X, np.ascontiguousarray(Y, dtype=np.float64), w, threads)

        def loss_and_pullback(DU):
            value, g = products(DU if rotate else V @ DU)
            return value, (g if rotate else V.T @ g)
    else:
        Yc = np.ascontiguousarray(Y, dtype=np.float64)

        def loss_and_pullback(DU):  # the kernel takes and returns the transposes (m x s)
            # (V D U).T as D U.T V.T: an m x s x s product, 1.6x faster than s x s x m at m = 10, s = 1000
            coef_t = DU.T if rotate else DU.T @ V.T
            value, g_t = softmax_loss_grad_unchecked(X, Yc, np.ascontiguousarray(coef_t, dtype=dt), w, threads)
            return value, (g_t if rotate else g_t @ V).T

    def objective(u):
        DU = d * u.reshape(s, m)
        value, pulled = loss_and_pullback(DU)
        return value + alpha * float(np.sum(DU * DU)), (d * pulled + 2.0 * alpha * d * DU).ravel()

    # L-BFGS is invariant under the rotation V: these iterates are those of B = P U' with the
    # symmetric P = V D V.T (U' = V U)
    result = minimize(objective, ((V.T @ start) / d).ravel(), jac=True, method="L-BFGS-B",
                      options={"maxiter": max_iter, "gtol": tol})
    return V @ (d * result.x.reshape(s, m)), int(result.nit)


def choose_output_penalty(Z, Y, kind, folds, alphas, start, sample_weight=None, coef=None, *,
                          tol=OUTPUT_TOL, n_threads=None):
    """The penalty of least held-out log-loss, searched outwards from ``start`` on ``alphas``.

    Every penalty is fitted on the training rows of each fold and scored by the weighted
    cross-entropy of the fold's held-out rows, summed over the folds (each fold's loss weighted
    by its held-out weight). The search starts at the grid point nearest ``start`` (RFFNet's own
    ``alpha``, for which the trained ``coef`` nearly solves the problem already: the first fit is
    short) and walks towards larger penalties until the loss rises, then, unless a larger penalty
    was better than the start (the valley then lies above it), towards smaller ones until it
    rises; every fit warm-starts from its neighbour's. On a loss curve with one valley (as on
    every data set tried) this finds the grid's best penalty with 2 to 5 fits per fold.

    Parameters
    ----------
    Z : ndarray of shape (n, s)
    Y : ndarray of shape (n, m)
    kind : {"logistic", "softmax"}
    folds : list of (ndarray, ndarray)
        (training rows, held-out rows) index pairs.
    alphas : sequence of float
    start : float
    sample_weight : ndarray of shape (n,) or None, default=None
    coef : ndarray of shape (s, m) or None, default=None
        Warm start of the first fit of every fold.
    tol : float, default=OUTPUT_TOL
    n_threads : int or None, default=None
        As in :func:`fit_output_layer`.

    Returns
    -------
    alpha : float
    coef : ndarray of shape (s, m)
        The first fold's solution at ``alpha`` (a warm start for a fit on every row).
    whitening : _Whitening
        The first fold's preconditioner (it serves the fit on every row as well).
    """
    alphas = np.sort(np.asarray(alphas, dtype=np.float64))
    start_coef = np.zeros((Z.shape[1], Y.shape[1])) if coef is None else coef
    in_float32 = Z.shape[0] >= FLOAT32_SEARCH_MIN_ROWS or Y.shape[1] >= SOFTMAX_GEMM_MIN_OUTPUTS
    dtype = SEARCH_DTYPE if in_float32 else np.float64
    parts = []
    for train, held_out in folds:
        w_tr = None if sample_weight is None else sample_weight[train]
        w_ho = None if sample_weight is None else sample_weight[held_out]
        share = float(len(held_out)) if w_ho is None else float(w_ho.sum())
        Z_train = Z[train].astype(dtype, copy=False)
        parts.append((Z_train, Y[train], w_tr, Z[held_out].astype(dtype, copy=False), Y[held_out], w_ho,
                      share, _Whitening(Z_train, kind, w_tr, start_coef)))

    def score(alpha, starts):
        fitted, total = [], 0.0
        for (Zt, Yt, wt, Zh, Yh, wh, share, whitening), B0 in zip(parts, starts):
            B, _ = fit_output_layer(Zt, Yt, kind, alpha, wt, B0, whitening=whitening, tol=tol,
                                    n_threads=n_threads)
            fitted.append(B)
            total += share * mean_loss(Zh @ B.astype(Zh.dtype, copy=False), Yh, kind, wh)
        return total, fitted

    first = int(np.argmin(np.abs(np.log(alphas) - np.log(start))))
    loss0, fits0 = score(alphas[first], [coef] * len(parts))
    best_loss, best_i, best_fits = loss0, first, fits0
    for step in (1, -1):
        if step == -1 and best_i > first:  # one valley, and it lies above the start
            break
        prev, fits, i = loss0, fits0, first + step
        while 0 <= i < alphas.size:
            loss, fits = score(alphas[i], fits)
            if loss < best_loss:
                best_loss, best_i, best_fits = loss, i, fits
            if loss > prev:
                break
            prev, i = loss, i + step
    return float(alphas[best_i]), best_fits[0], parts[0][-1]
