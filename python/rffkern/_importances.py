"""Feature importances of a fitted random-feature model: the root mean square of its partial
derivatives over training rows (the ridge family's and RFFNet's ``feature_importances_``).

For ``f(x) = c * cos((theta * x) @ W + b) @ C`` (one column of ``C`` per output),

    df_m/dx_j = -c * theta_j * sum_k C_km sin(u_k) W_jk,        u = (theta * x) @ W + b,

and for the pair map ``c * [cos u, sin u] @ [C; C']`` (offsets 0),
``c * theta_j * sum_k (C'_km cos(u_k) - C_km sin(u_k)) W_jk``. The importance of input ``j`` is
``sqrt(mean_i sum_m (df_m/dx_ij)^2)``: the empirical norm of the partial derivatives, the
relevance measure of nonparametric sparsity (Rosasco et al. 2013). It is 0 when f does not depend
on ``x_j``, whatever a relevance or a frequency says: RFFNet's ``|theta_j|`` is the inverse length
scale of input ``j``, and an input the fitted function ignores can keep a large one (its
gradient is small, so it stays near its start). The derivative norms rank an ignored input last
where ``|theta|`` can put it first, find the same support on the synthetic problems, and agree
better with permutation importances on real data (docs/design_notes.rst).
"""
from __future__ import annotations

import numpy as np

from rffkern import kernels
from rffkern._fit_options import FitOptions
from rffkern._linalg import single_threaded_blas

__all__ = ["IMPORTANCE_ROWS", "DeferredSummaries", "capped_rows", "importance_rows", "rms_partial_derivatives"]

#: Rows of the training data (drawn at random above it) over which the derivatives are averaged.
IMPORTANCE_ROWS = 2000


def capped_rows(n, sample_weight=None, cap=IMPORTANCE_ROWS, rng=None):
    """Sorted indices of the rows of positive weight (all of them without weights), at most ``cap``
    of them drawn without replacement by ``rng`` (a fixed generator when None: the estimator's own
    stream is left as it was)."""
    rows = np.arange(n) if sample_weight is None else np.flatnonzero(np.asarray(sample_weight) > 0)
    if rows.size > cap:
        rng = np.random.default_rng(0) if rng is None else rng
        rows = np.sort(rng.choice(rows, cap, replace=False))
    return rows


def importance_rows(Xs, sample_weight=None, rng=None):
    """The rows (and their weights) the importances average over: :func:`capped_rows` of ``Xs``."""
    rows = capped_rows(Xs.shape[0], sample_weight, IMPORTANCE_ROWS, rng)
    return Xs[rows], None if sample_weight is None else np.asarray(sample_weight)[rows]


class DeferredSummaries:
    """``partial_fit`` keeps the rows (at most ``IMPORTANCE_ROWS``) that its summaries of the model
    -- the importances, and the ridge classifier's probability temperature -- are computed on, and
    computes them when one is read or the model pickled, not on every call: a per-chunk step that
    cost as much as the chunk's training, or more (docs/design_notes.rst).

    The estimator defines ``_store_summaries(Xs, Y, sample_weight)`` (computing them now; the
    rows are at most ``IMPORTANCE_ROWS``, so it draws none). A fit under
    ``FitOptions(summaries=False)`` (:func:`rffkern._fit_options.fit_options`) keeps none."""

    _fit_options = FitOptions()  # (an ordinary fit's; ``fit_options`` sets others)
    _derivative_norms: np.ndarray | None

    def _store_summaries(self, Xs, Y, sample_weight=None):
        raise NotImplementedError

    def _defer_summaries(self, Xs, Y, sample_weight=None):
        self._derivative_norms = None
        self.__dict__.pop("_summary_rows", None)
        if self._fit_options.summaries:
            rows = capped_rows(Xs.shape[0], sample_weight)
            self._summary_rows = (Xs[rows], np.asarray(Y)[rows],
                                  None if sample_weight is None else np.asarray(sample_weight)[rows])

    def _resolve_summaries(self):
        kept = self.__dict__.pop("_summary_rows", None)
        if kept is not None:
            self._store_summaries(*kept)

    def __getstate__(self):
        self._resolve_summaries()  # a pickle holds the summaries, not the rows
        return super().__getstate__()


@single_threaded_blas  # (as the fits that call it: see rffkern._linalg.single_threaded_blas)
def rms_partial_derivatives(rows, weights, offsets, coef, *, scale, pair=False, theta=None,
                            row_weights=None, n_threads=None):
    """``sqrt(mean_i sum_m (df_m/dx_ij)^2)`` per input ``j`` of ``f = features(rows, ...) @ coef``.

    Parameters
    ----------
    rows : ndarray of shape (n, d)
        The (standardized) inputs the model's map reads.
    weights : ndarray of shape (d, s)
    offsets : ndarray of shape (s,) or None
        Ignored with ``pair`` (whose phases are 0).
    coef : ndarray of shape (s, m), (2 s, m) with ``pair``, or 1-D for one output
    scale : float
        ``c``.
    pair : bool, default=False
        The map ``c [cos u, sin u]`` instead of ``c cos u``.
    theta : ndarray of shape (d,) or None, default=None
        Relevances multiplying the inputs (RFFNet's); None means ones.
    row_weights : ndarray of shape (n,) or None, default=None
        Weights of the mean over rows.
    n_threads : int or None, default=None
        Threads of the compiled feature map.

    Returns
    -------
    ndarray of shape (d,), float64
    """
    W = np.asarray(weights, dtype=np.float64)
    n_freq = W.shape[1]
    th = None if theta is None else np.asarray(theta, dtype=np.float64)
    # [cos u, sin u] at unit scale: offsets b give u = (theta * x) @ W + b
    Z = kernels.features(np.asarray(rows, dtype=np.float64), W,
                         None if pair or offsets is None else np.asarray(offsets, dtype=np.float64),
                         theta=th, scale=1.0, pair=True, n_threads=n_threads)
    cos_u, sin_u = Z[:, :n_freq], Z[:, n_freq:]
    C = np.asarray(coef, dtype=np.float64).reshape(np.shape(coef)[0], -1)
    # in units of the largest coefficient, squared and summed, then back: targets near 1e300 (the
    # ridge's coef_ is in their units) would overflow the squares into inf, and the importances into NaN
    c_max = float(np.max(np.abs(C))) if C.size else 0.0
    if not c_max > 0:
        return np.zeros(W.shape[0])
    C = C / c_max
    # the n x s x d products in float32 (0.6x the time of float64's; an importance needs no more
    # than a few digits; docs/design_notes.rst)
    Wt = np.ascontiguousarray(W.T, dtype=np.float32)
    total = np.zeros(W.shape[0])
    for m in range(C.shape[1]):
        du = -sin_u * C[:n_freq, m]
        if pair:
            du += cos_u * C[n_freq:, m]
        G = (du.astype(np.float32) @ Wt).astype(np.float64)
        total += np.average(G * G, axis=0, weights=row_weights)
    norms = np.sqrt(total) * (abs(float(scale)) * c_max)
    return norms if th is None else norms * np.abs(th)
