"""The pieces of EERF (:mod:`rffkern.eerf`) that its in-memory fit and its Dask fit
(:mod:`rffkern._dask_eerf`) share: the feature maps of the kernels without a compiled one, the
candidates' energy scores, the k-NN width rules (weighted and not), the scoring targets, the
draw of the scoring subsample and of the candidates, the top-M selection, the ridge fit's
attributes and the width search.

Both fits draw their random numbers through :func:`draw_candidates` and :func:`fit_widths`, so
the Dask fit draws what the in-memory fit draws, in the same order; each supplies only how its
rows are read (in memory, or gathered from the workers) and how the scores and the ridge are
computed (on one array, or reduced over the chunks).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rffkern import kernels
from rffkern._sampling import child_generator, knn_distances, matern_radial_factor, weighted_knn_blocks

#: The kernels of cosine features ``cos(omega . x + b)``: frequencies from the spectral density, a width.
FOURIER_KERNELS = ("gaussian", "matern")
from rffkern._selection import EXTENDED_WIDTH_FACTORS, search_widths, width_extension

__all__ = ["ArcCosineMap", "ColumnMap", "eerf_scores", "knn_length_scale", "weighted_knn_length_scale",
           "candidate_count", "scoring_targets", "Candidates", "draw_candidates", "knn_width", "store_top",
           "store_ridge", "fit_widths", "WIDTH_FITTED", "KNN_ROWS"]

#: The most rows the k-NN width rule is computed on (a random subsample of the scoring rows).
KNN_ROWS = 2000
BLOCK_ROWS = 2048
#: What a width's selection and ridge fit set (kept for the width of least selection error).
WIDTH_FITTED = ("length_scale_", "weights_", "offsets_", "scores_", "scale_", "coef_",
                 "intercept_", "alpha_", "selection_errors_", "_ridge_stats")


class ArcCosineMap:
    """``scale * max(X @ W, 0)^q`` (``q = 0``: the step function), computed in NumPy by row blocks."""

    def __init__(self, weights, order, scale):
        self.weights, self.order, self.scale = weights, int(order), float(scale)
        self.n_out = weights.shape[1]

    def block(self, Xb):
        U = Xb @ self.weights.astype(Xb.dtype, copy=False)
        if self.order == 0:
            Z = (U > 0).astype(Xb.dtype)
        else:
            np.maximum(U, 0, out=U)
            Z = U if self.order == 1 else U * U
        Z *= self.scale
        return Z

    def features(self, X):
        if not X.shape[0]:
            return np.empty((0, self.n_out), X.dtype)
        return np.vstack([self.block(X[i:i + BLOCK_ROWS]) for i in range(0, X.shape[0], BLOCK_ROWS)])

    def gram(self, X, Y, out=None, out_zty=None, accumulate=False):
        G = out if out is not None else np.zeros((self.n_out, self.n_out), X.dtype)
        ZtY = out_zty if out_zty is not None else np.zeros((self.n_out, Y.shape[1]), X.dtype)
        if not accumulate:
            G[...] = 0
            ZtY[...] = 0
        for i in range(0, X.shape[0], BLOCK_ROWS):
            Zb = self.block(X[i:i + BLOCK_ROWS])
            G += Zb.T @ Zb
            ZtY += Zb.T @ Y[i:i + BLOCK_ROWS]
        return G, ZtY

    def predict(self, X, coef):
        coef = np.asarray(coef, X.dtype)
        out = np.empty((X.shape[0], coef.shape[1]), X.dtype)
        for i in range(0, X.shape[0], BLOCK_ROWS):
            out[i:i + BLOCK_ROWS] = self.block(X[i:i + BLOCK_ROWS]) @ coef
        return out


class ColumnMap:
    """The linear kernel's features: selected input columns ``X[:, support]``."""

    def __init__(self, support):
        self.support = np.asarray(support)
        self.n_out = self.support.size

    def features(self, X):
        return np.ascontiguousarray(X[:, self.support])

    def gram(self, X, Y, out=None, out_zty=None, accumulate=False):
        Z = self.features(X)
        G, ZtY = Z.T @ Z, Z.T @ Y.astype(X.dtype, copy=False)
        if out is None:
            return G, ZtY
        if accumulate:
            out += G
            out_zty += ZtY
        else:
            out[...] = G
            out_zty[...] = ZtY
        return out, out_zty

    def predict(self, X, coef):
        return self.features(X) @ np.asarray(coef, X.dtype)


def eerf_scores(X, T, weights, offsets=None, *, kernel="gaussian", n_threads=None):
    """Empirical scores ``S = Phi.T T / N0`` of every candidate column of ``weights``, shape (M0, m).

    ``T`` holds the scoring targets (n, m). For ``kernel="gaussian"`` ``Phi = cos(X W + b)`` and the
    scores come from one compiled :func:`rffkern.kernels.loss_and_grad` pass (zero coefficients);
    for the arc-cosine kernels they are accumulated in NumPy by row blocks; for ``"linear"``
    ``weights`` is ignored and the candidates are the columns of X.
    """
    n = X.shape[0]
    T = np.asarray(T, X.dtype).reshape(n, -1)
    if kernel in FOURIER_KERNELS:
        zero = np.zeros((weights.shape[1], T.shape[1]), X.dtype)
        _, grad, _ = kernels.loss_and_grad(X, T, weights.astype(X.dtype, copy=False),
                                           offsets.astype(X.dtype, copy=False), zero, loss="squared",
                                           scale=1.0, want_theta=False, n_threads=n_threads)
        return -grad
    if kernel == "linear":
        return X.T @ T / n
    fmap = ArcCosineMap(weights, int(kernel[-1]), 1.0)
    S = np.zeros((weights.shape[1], T.shape[1]), X.dtype)
    for i in range(0, n, BLOCK_ROWS):
        S += fmap.block(X[i:i + BLOCK_ROWS]).T @ T[i:i + BLOCK_ROWS]
    return S / n


def knn_length_scale(X, n_neighbors=50, max_samples=2000, rng=None):
    """Mean distance to the ``n_neighbors``-th nearest neighbour on a subsample (the paper's sigma rule)."""
    dist = knn_distances(X, n_neighbors, max_samples, rng)
    value = 0.0 if dist is None else float(dist[:, -1].mean())
    return value if value > 0 else 1.0


def candidate_count(kernel, n_candidates, n_components, n_features):
    """How many candidate features EERF scores: every input coordinate for the linear kernel (of
    which it keeps ``n_components``), else ``n_candidates`` (default ten per feature kept); a
    ``ValueError`` where that leaves fewer than ``n_components``."""
    if kernel == "linear":
        if n_components > n_features:
            raise ValueError(f"the linear kernel selects input coordinates: n_components={n_components} > "
                             f"n_features={n_features}")
        return n_features
    count = n_candidates or 10 * n_components
    if count < n_components:
        raise ValueError(f"n_candidates={count} must be >= n_components={n_components}")
    return count


def scoring_targets(Y, sample_weight):
    """The centred scoring targets: ``Y`` minus its (weighted) column means; rows of zero weight
    are centred too but take no part in the mean."""
    if sample_weight is None:
        return Y - Y.mean(0)
    return Y - np.average(Y, axis=0, weights=sample_weight)


def weighted_knn_length_scale(X, sample_weight, rng, n_neighbors=50, max_samples=2000):
    """:func:`knn_length_scale` of rows with positive weights ``sample_weight``, integer weights
    counting as repeated rows (:func:`rffkern._sampling.weighted_knn_blocks`).

    On a subsample of at most ``max_samples`` rows (drawn as :func:`knn_distances` draws it), the
    k-th neighbour distance of row i is the least distance at which the cumulative weight of its
    neighbours reaches ``k = min(n_neighbors, sum(w) - 1)``, and the rule's value is the
    ``w``-weighted mean of these distances. With integer weights this is the rule on the repeated
    rows exactly (the subsample aside). A total weight below 2 leaves no neighbour to count: the
    unweighted rule of the rows is used then.
    """
    X = np.asarray(X, np.float64)
    w = np.asarray(sample_weight, np.float64)
    if X.shape[0] > max_samples:
        pick = rng.choice(X.shape[0], max_samples, replace=False)
        X, w = X[pick], w[pick]
    k = min(float(n_neighbors), float(w.sum()) - 1.0)
    if k < 1:
        return knn_length_scale(X, n_neighbors, max_samples, rng)
    kth = np.empty(X.shape[0])
    for own, D, C in weighted_knn_blocks(X, w, k):
        last = D.shape[1] - 1 - np.argmax(C[:, ::-1] > 0, axis=1)  # the farthest counted neighbour
        kth[own] = D[np.arange(D.shape[0]), last]
    value = float(np.average(kth, weights=w))
    return value if value > 0 and np.isfinite(value) else 1.0



@dataclass
class Candidates:
    """What :func:`draw_candidates` draws: the scoring subsample ``rows`` (sorted positions among
    the scoring rows; None: all of them), the unit-width candidates ``W0`` (None for the linear
    kernel) and phases ``b0`` (Gaussian kernel only), the widths to compare (``[None]`` for the
    kernels without one) and the k-NN width ``base`` the search may extend around (None: no
    extension)."""

    rows: np.ndarray | None
    W0: np.ndarray | None
    b0: np.ndarray | None
    widths: list
    base: float | None


def knn_width(n_rows, sample_of, rng, max_samples=KNN_ROWS):
    """The paper's k-NN width (:func:`knn_length_scale`, or :func:`weighted_knn_length_scale` with
    weights) of at most ``max_samples`` of ``n_rows`` rows, drawn from ``rng`` as
    :func:`rffkern._sampling.knn_distances` draws them; ``sample_of(positions)`` returns those rows
    (standardized, in the given order) and their relative weights (None: no weights).

    The rows are drawn here rather than inside the rule, so that the caller reads only the rows
    the rule uses (the Dask fit gathers them from the workers)."""
    pick = rng.choice(n_rows, max_samples, replace=False) if n_rows > max_samples else np.arange(n_rows)
    X, w = sample_of(pick)
    if w is None:
        return knn_length_scale(X, max_samples=max_samples, rng=rng)
    return weighted_knn_length_scale(X, w, rng, max_samples=max_samples)


def draw_candidates(est, n_rows, n_features, rng, sample_of):
    """The scoring subsample and the candidates of the EERF estimator ``est``, drawn from ``rng``:
    sets ``n_subsample_`` and ``n_candidates_`` and returns :class:`Candidates`.

    ``n_rows`` counts the rows that may be scored (those of positive weight); ``sample_of(positions)``
    returns the standardized rows at these positions among them, and their relative weights (None
    without weights), for the k-NN width (``length_scale="auto"`` or ``"knn"``; called at most once,
    with at most :data:`KNN_ROWS` positions)."""
    est.n_subsample_ = min(n_rows, est.n_subsample or max(int(0.1 * n_rows), 1000))
    rows = np.sort(rng.choice(n_rows, est.n_subsample_, replace=False)) if est.n_subsample_ < n_rows else None
    est.n_candidates_ = candidate_count(est.kernel, est.n_candidates, est.n_components, n_features)
    if est.kernel == "linear":
        return Candidates(rows, None, None, [None], None)
    widths, base = [None], None
    if est.kernel in FOURIER_KERNELS:
        if not isinstance(est.length_scale, str):
            widths = [float(v) for v in np.atleast_1d(est.length_scale)]
        else:  # the k-NN width of the scoring subsample
            knn = knn_width(est.n_subsample_, lambda pick: sample_of(pick if rows is None else rows[pick]), rng)
            widths = [knn] if est.length_scale == "knn" else [knn * f for f in EXTENDED_WIDTH_FACTORS]
            base = None if est.length_scale == "knn" else knn
    W0 = rng.standard_normal((n_features, est.n_candidates_))
    b0 = rng.uniform(0.0, 2.0 * np.pi, est.n_candidates_) if est.kernel in FOURIER_KERNELS else None
    if est.kernel == "matern":  # the Gaussian draw with Student t radii (rffkern._sampling.radial_draw's rule)
        W0 *= matern_radial_factor(est.nu, child_generator(rng).uniform(size=est.n_candidates_))
    return Candidates(rows, W0, b0, widths, base)


def store_top(est, S, W, b0, width):
    """Keep the M candidates of largest energy from the scores ``S`` (M0, m) of the candidates
    ``W`` (phases ``b0``) at ``width``: ``est``'s fitted selection attributes."""
    M = est.n_components
    energy = (S**2).sum(axis=1)  # |S|^2 for one output, summed squared scores for several
    # stable: ties keep the draw order, so results do not depend on the sort implementation
    keep = np.argsort(-energy, kind="stable")[:M]
    est.length_scale_ = width
    est.scores_ = np.sqrt(energy[keep])
    if est.kernel == "linear":
        est.support_ = np.sort(keep)
        est.weights_ = est.offsets_ = None
        est.scale_ = 1.0
    else:
        est.weights_ = np.ascontiguousarray(W[:, keep])  # W is drawn unless linear
        est.offsets_ = None if b0 is None else b0[keep]
        est.scale_ = float(np.sqrt(2.0 / M))


def store_ridge(est, fitted, target_scale, ravel):
    """``est``'s ridge attributes from ``fitted``, the ``(coef, intercept, alpha, errors, stats)`` of
    a ridge fit on the scaled targets, brought back to y's units by ``target_scale`` (``(scale,
    mean)``; ``(1.0, 0.0)`` for the classifier's +-1 targets). The Gram statistics stay as
    ``_ridge_stats`` (the classifier's temperature reads them). Returns the least selection error in
    the units of the scaled targets (finite where y's overflow), or None without a search."""
    coef, intercept, alpha, errors, est._ridge_stats = fitted
    y_scale, y_mean = target_scale
    coef, intercept = coef * y_scale, intercept * y_scale + y_mean
    est.coef_ = coef[:, 0] if ravel else coef
    est.intercept_ = float(intercept[0]) if ravel else intercept
    est.alpha_ = float(alpha)
    est.selection_errors_ = None if errors is None else errors * np.mean(np.square(y_scale))
    return None if errors is None else float(np.min(errors))


def fit_widths(est, widths, base, fit_width, rng):
    """Select and fit at every width of the search, keep the width of least selection error.

    ``fit_width(width, split_rng, several)`` scores and keeps the candidates at ``width`` and, where
    ``several`` widths are compared, fits the ridge with the held-out split of ``split_rng`` and
    returns its least selection error (in the units of the scaled targets). One width: fitted
    once with ``rng`` itself; ``widths_`` and ``width_errors_`` are None. Several: one held-out
    split seed drawn from ``rng`` serves every width (they are compared on the same rows), the
    search extends around the k-NN width ``base`` (:func:`rffkern._selection.width_extension`),
    and the attributes :data:`WIDTH_FITTED` of the best width are restored."""
    if len(widths) == 1:
        est.widths_ = est.width_errors_ = None
        fit_width(widths[0], rng, False)
        return
    split_seed = int(rng.integers(2**32 - 1))
    best: list = []
    width_errors: list[float] = []

    def error_of(width):
        error = fit_width(width, np.random.default_rng(split_seed), True)
        width_errors.append(float(np.min(est.selection_errors_)))
        if not best or error < best[0]:
            best[:] = [error, {k: getattr(est, k) for k in WIDTH_FITTED}]
        return error

    est.widths_, _ = search_widths(widths, width_extension(base), error_of)
    est.width_errors_ = width_errors
    for k, v in best[1].items():
        setattr(est, k, v)
