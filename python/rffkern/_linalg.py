"""Small dense linear algebra shared by the closed-form learners (ridge, SRFF, EERF, adaptive RFF).

Everything here works on the s x s Gram matrix ``G = Z.T Z`` and the s x m cross products
``Z.T Y``; nothing touches the n x s feature matrix. Costs are O(s^3) at most.
"""
from __future__ import annotations

import contextlib
import functools
import threading
from typing import Any, Callable, Iterator, TypeVar, cast

import numpy as np
from scipy.linalg import LinAlgError, cho_factor, cho_solve, eigh
from threadpoolctl import ThreadpoolController

__all__ = ["ridge_solve", "RidgeEigen", "one_blas_thread", "simplex_projection", "stall"]


@functools.lru_cache(maxsize=1)
def _controller():
    return ThreadpoolController()


_one_thread_lock = threading.Lock()
_one_thread_users = 0
_one_thread_limiter: Any = None


@contextlib.contextmanager
def one_blas_thread() -> Iterator[None]:
    """A context in which BLAS and LAPACK run on one thread, the caller's setting restored after.

    The limit is process-wide (OpenBLAS has no per-thread setting), so the contexts of concurrent
    Python threads (a fit on each, or RFFNet's variants side by side) are counted: the first to
    enter sets it, the last to leave restores the setting the first one found. Each limiting and
    restoring by itself, interleaved across threads, could leave BLAS on one thread for good (two
    fits: the later one's exit restoring the 1 that the earlier one had set).
    """
    global _one_thread_users, _one_thread_limiter
    with _one_thread_lock:
        if _one_thread_users == 0:
            _one_thread_limiter = _controller().limit(limits=1, user_api="blas")
        _one_thread_users += 1
    try:
        yield
    finally:
        with _one_thread_lock:
            _one_thread_users -= 1
            if _one_thread_users == 0:
                _one_thread_limiter.restore_original_limits()
                _one_thread_limiter = None


_F = TypeVar("_F", bound=Callable[..., Any])


def single_threaded_blas(fn: _F) -> _F:
    """Run ``fn`` with one BLAS thread.

    The factorisations here are O(s^3) on s <= a few thousand, where LAPACK's many panel
    synchronisations make a multi-threaded OpenBLAS slower, not faster, and much slower under
    load. The in-memory fits of the ridge and RFFNet estimators and ``rffkern.fit`` run whole
    under it too: their BLAS calls are small or spread over threads by the caller (the
    leave-one-out pass), and a multi-threaded OpenBLAS's idle threads spin beside the compiled
    kernels that follow. The fits are then up to 1.8x faster on small data sets and give
    the same models (docs/design_notes.rst).
    """
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        with one_blas_thread():
            return fn(*args, **kwargs)
    return cast(_F, wrapper)


@single_threaded_blas
def ridge_solve(G, ZtY, alpha):
    """Solve ``(G + alpha I) coef = ZtY`` by Cholesky (an eigen-solve if G + alpha I is singular).

    ``G`` is symmetric positive semi-definite and is not modified.
    """
    s = G.shape[0]
    A = G + alpha * np.eye(s, dtype=G.dtype)
    try:
        return cho_solve(cho_factor(A, lower=True, check_finite=False), ZtY, check_finite=False)
    except LinAlgError:
        # alpha == 0 with rank-deficient features: the minimum-norm least-squares solution.
        return np.linalg.lstsq(A, ZtY, rcond=None)[0].astype(G.dtype, copy=False)


class RidgeEigen:
    """The ridge path of one Gram matrix: ``G = V diag(e) V.T`` once, then any alpha in O(s^2 m).

    Parameters
    ----------
    G : ndarray of shape (s, s)
        ``Z.T Z`` (centred features when an intercept is fitted).
    ZtY : ndarray of shape (s, m)
    """

    @single_threaded_blas
    def __init__(self, G, ZtY):
        # divide and conquer ("evd"): 15% faster than the default "evr" at s=1000 on one thread
        self.evals, self.V = eigh(G.astype(np.float64), check_finite=False, driver="evd")
        np.maximum(self.evals, 0.0, out=self.evals)  # round-off can make tiny eigenvalues negative
        self.VtZtY = self.V.T @ ZtY.astype(np.float64)

    def coef(self, alpha):
        """``(G + alpha I)^{-1} ZtY``."""
        return self.V @ (self.VtZtY / (self.evals + alpha)[:, None])

    def rss(self, alpha, yty):
        """Training residual sum of squares per output, from ``yty = diag(Y.T Y)`` (centred)."""
        d = self.evals + alpha
        c = self.VtZtY
        # ||y - Z a||^2 = y'y - 2 a'Z'y + a'G a with a = V diag(1/d) c
        return yty - 2 * ((c**2) / d[:, None]).sum(0) + ((c**2) * (self.evals / d**2)[:, None]).sum(0)

    def dof(self, alpha):
        """Effective degrees of freedom ``trace(Z (G + alpha I)^{-1} Z.T)``."""
        return float((self.evals / (self.evals + alpha)).sum())

    def log_evidence(self, alpha, yty, n_eff):
        """Log marginal likelihood per output of ``y = Z c + e``, ``c ~ N(0, s2 / alpha I)``,
        ``e ~ N(0, s2 I)``, at the noise variance ``s2`` that maximizes it: ``-(n_eff log(2 pi s2) +
        sum_j log(1 + e_j / alpha) + n_eff) / 2`` with ``s2 = Q / n_eff`` and ``Q = y'y - c' (G +
        alpha I)^-1 c`` (Woodbury: ``y' (I + Z Z' / alpha)^-1 y``), ``n_eff`` the rows less one for a
        flat-prior intercept (integrated out by centring)."""
        q = np.maximum(yty - ((self.VtZtY**2) / (self.evals + alpha)[:, None]).sum(0), 1e-300)
        logdet = float(np.log1p(self.evals / alpha).sum())
        s2 = q / n_eff
        return -0.5 * (n_eff * np.log(2.0 * np.pi * s2) + logdet + n_eff)

    def gcv(self, alpha, yty, n, extra_dof=0.0, rows=None):
        """Generalised cross-validation error per output: ``(RSS / n) / (1 - dof / rows)^2``, ``n``
        the (weighted) row count of the sums and ``rows`` the number of rows (default ``n``)."""
        rows = n if rows is None else rows
        denom = max(1.0 - (self.dof(alpha) + extra_dof) / rows, 1e-12)
        return self.rss(alpha, yty) / n / denom**2


def simplex_projection(v, radius=1.0, active=None):
    """Euclidean projection of ``v`` onto ``{x >= 0, sum(x) = radius}`` by sorting (O(d log d)).

    With ``active`` (a boolean mask), onto the face ``{x >= 0, sum(x) = radius, x = 0 off
    active}``: the entries off it are 0, the others the projection of theirs.

    With ``u`` the entries sorted in decreasing order and ``rho`` the largest index with
    ``u_rho - (sum_{j<=rho} u_j - radius) / rho > 0``, the projection is ``max(v - tau, 0)`` with
    ``tau = (sum_{j<=rho} u_j - radius) / rho`` (Held, Wolfe & Crowder; Duchi et al. 2008).
    """
    v = np.asarray(v, dtype=np.float64)
    if active is not None:
        out = np.zeros_like(v)
        out[active] = simplex_projection(v[active], radius)
        return out
    if radius <= 0:
        raise ValueError(f"radius must be > 0, got {radius}")
    if not np.isfinite(v).all():
        raise ValueError("cannot project a vector holding NaN or infinity onto the simplex")
    u = np.sort(v)[::-1]
    css = np.cumsum(u) - radius
    ks = np.arange(1, v.size + 1)
    candidates = np.nonzero(u - css / ks > 0)[0]
    if not candidates.size:
        # rho = 0 always qualifies in exact arithmetic (u_1 - (u_1 - radius) = radius); it is lost
        # only when radius is below the rounding of the entries (|v| ~ 1e16 radius or more). The
        # projection does not change when a constant is added to v: shift the largest entry to 0.
        return simplex_projection(v - u[0], radius)
    rho = candidates[-1]
    tau = css[rho] / (rho + 1)
    return np.maximum(v - tau, 0.0)


def stall(history, window, tol):
    """True when the relative decrease over the last ``window`` values is below ``tol``."""
    if len(history) <= window:
        return False
    old, new = history[-window - 1], history[-1]
    return abs(old - new) <= tol * max(abs(old), np.finfo(float).tiny)
