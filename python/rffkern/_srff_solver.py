"""SRFF's algorithm, written once for rows in memory and on Dask: the lambda grid and the kernel
width rules, the ridge step, FISTA on the relevances, the alternating loop for one lambda, the
start of the lambda path and the path itself.

The algorithm sees the data only through an object of data terms (the rows it fits, or the
held-out rows), each method one pass over those rows:

* ``gram(gamma)``: ``(Z.T W Z, Z.T W y, y.T W y, sum(w))`` of the features ``Z = cos((X * gamma) W + b)``
  (``w`` the row weights, 1 without them; the last result kept for the same gamma);
* ``evaluate(a, values, grads)``: the mean losses ``h(g)`` at the points ``values`` and the pairs
  ``(h(g), dh/dg)`` at the points ``grads``;
* ``errors(gamma, coefs)``: the mean squared errors of the columns of ``coefs`` and the mean squared
  target (the path's start); ``error(a, gamma)``: the mean squared error of one model;
* ``lookahead`` and ``batch``: how FISTA groups its evaluations (below); ``progress()``: a suffix
  for the progress lines.

:class:`ArrayTerms` holds rows in memory (one compiled pass each); ``rffkern._dask_srff`` sums the
same terms over the chunks of a Dask array (one reduction each).
"""
from __future__ import annotations

import numpy as np

from rffkern import kernels
from rffkern._data import holdout_split
from rffkern._linalg import RidgeEigen, ridge_solve, simplex_projection, stall
from rffkern._progress import ProgressLog
from rffkern._sampling import (knn_distances, median_distance, weighted_knn_blocks, weighted_median,
                               weighted_median_distance)

__all__ = ["GRID_EXPONENTS", "PATH_EXPONENTS", "ArrayTerms", "median_knn_distance", "weighted_median_knn_distance",
           "srff_alpha_grid", "alpha_grid", "length_scale_rule", "weighted_gram", "weighted_loss_and_grad",
           "ridge_from_gram", "ridge_step", "fista", "fista_gamma", "fit_lambda", "srff_fit_path",
           "path_start_index", "path_start", "validation_split", "fit_alphas", "y_too_large"]

#: The exponents of the paper's lambda grid (50 values).
GRID_EXPONENTS = np.round(np.arange(-9.8, 0.0 + 1e-9, 0.2), 10)
#: ``alpha=None``'s path: every second exponent of the paper's grid (25 values, 0.4 decades apart).
PATH_EXPONENTS = GRID_EXPONENTS[::2]


def median_knn_distance(X, n_neighbors=20, max_samples=2000, rng=None):
    """Median distance to the ``n_neighbors`` nearest neighbours (the paper's kernel width rule),
    on a random subsample of at most ``max_samples`` rows."""
    dist = knn_distances(X, n_neighbors, max_samples, rng)
    value = 0.0 if dist is None else float(np.median(dist))
    return value if value > 0 else 1.0


def weighted_median_knn_distance(X, sample_weight, n_neighbors=20, max_samples=2000, rng=None):
    """:func:`median_knn_distance` with positive row weights, integer weights counting as repeated
    rows: the median of every query's ``k = min(n_neighbors, sum(w) - 1)`` neighbour distances
    (:func:`rffkern._sampling.weighted_knn_blocks`), each query counted ``w_i`` times; for integer
    weights and at most ``max_samples`` rows, exactly the rule on the repeated rows. The median of
    an even count is the mean of the two middle values, as :func:`numpy.median`; other weights
    interpolate the same formula. A total weight below 2: the unweighted rule of the rows."""
    X = np.asarray(X, np.float64)
    w = np.asarray(sample_weight, np.float64)
    if X.shape[0] > max_samples:
        rng = np.random.default_rng(0) if rng is None else rng
        pick = rng.choice(X.shape[0], max_samples, replace=False)
        X, w = X[pick], w[pick]
    k = min(float(n_neighbors), float(w.sum()) - 1.0)
    if k < 1:
        return median_knn_distance(X, n_neighbors, max_samples, rng)
    values, counts = [], []
    for own, D, C in weighted_knn_blocks(X, w, k):
        C = C * w[own][:, None]
        keep = C > 0
        values.append(D[keep])
        counts.append(C[keep])
    return weighted_median(np.concatenate(values), np.concatenate(counts))


def length_scale_rule(rule, Xs, sample_weight, rng):
    """``length_scale="auto"`` (the median heuristic) or ``"knn"`` (the paper's rule) on the
    standardised rows ``Xs`` (positive ``sample_weight`` or None), subsampled to 2000 rows by ``rng``."""
    if rule == "auto":
        return median_distance(Xs, rng=rng) if sample_weight is None else weighted_median_distance(Xs, sample_weight,
                                                                                                     rng=rng)
    if sample_weight is None:
        return median_knn_distance(Xs, rng=rng)
    return weighted_median_knn_distance(Xs, sample_weight, rng=rng)


def alpha_grid(top, exponents):
    """``top * 10^e`` for each exponent, ``top`` the squared spectral norm of the (weighted,
    standardised) X; ``10^e`` when that norm is 0 (every input constant: the penalties would all be 0)."""
    return (top if top > 0 else 1.0) * 10.0 ** np.asarray(exponents, np.float64)


def srff_alpha_grid(X, exponents=GRID_EXPONENTS):
    """``||X.T X||_2 * 10^e`` for each exponent (X as the estimator sees it: standardised); ``10^e``
    when that norm is 0 (every input constant: the penalties would all be 0)."""
    return alpha_grid(np.linalg.norm(np.asarray(X, np.float64), 2) ** 2, exponents)


def validation_split(est, n, rng):
    """The held-out split of ``n`` rows that chooses lambda: sorted (train, validation) indices."""
    n_val = int(round(est.validation_fraction * n))
    if n_val < 1 or n - n_val < 2:
        raise ValueError(f"choosing lambda needs a validation split; validation_fraction="
                         f"{est.validation_fraction} of {n} sample(s) leaves too few")
    return holdout_split(n, n_val, rng)


def y_too_large():
    """The error for targets whose centred sum of squares overflows (``normalize_y=False``)."""
    return ValueError("y is too large in magnitude: the sum of squares of the centred targets, "
                      "on which SRFF's objective and gradient are built, overflows float64; "
                      "divide y by its scale first or use normalize_y=True")


# ---------------------------------------------------------------------------------------------
# The data terms on rows in memory: every pass over the data is one compiled kernel call.
# ---------------------------------------------------------------------------------------------
_BLOCK_ROWS = 2048


def weighted_gram(X, directions, b, y, gamma, sample_weight, n_threads):
    """``(Z.T diag(w) Z, Z.T diag(w) y)`` of the features ``Z = cos((X * gamma) W + b)``, by row blocks."""
    M = directions.shape[1]
    G, Zty = np.zeros((M, M)), np.zeros(M)
    for i in range(0, X.shape[0], _BLOCK_ROWS):
        wb = sample_weight[i:i + _BLOCK_ROWS]
        Z = kernels.features(X[i:i + _BLOCK_ROWS], directions, b, theta=gamma, scale=1.0, n_threads=n_threads)
        Zw = Z * np.sqrt(wb)[:, None]
        G += Zw.T @ Zw
        Zty += Z.T @ (wb * y[i:i + _BLOCK_ROWS])
    return G, Zty


def weighted_loss_and_grad(X, y, directions, b, a, gamma, sample_weight, want_grad=True, n_threads=None):
    """``h(gamma) = sum_i w_i (f_i - y_i)^2 / (2 sum_i w_i)`` with ``f = cos((X * gamma) W + b) a``
    and its gradient in gamma, from compiled passes (:func:`rffkern.kernels.loss_and_grad` takes
    no row weights).

    The squared loss's gamma-gradient, ``(1/n) sum_i (f_i - t_i) df_i/dgamma``, is linear in the
    residuals; the targets ``t = f - w (f - y)`` make them ``w_i (f_i - y_i)``, so one pass of
    :func:`rffkern.kernels.predict` (f and the value) and one of ``loss_and_grad`` on ``t`` (scaled
    by ``n / sum(w)``) give the weighted gradient exactly, up to round-off.
    """
    n, total = X.shape[0], float(sample_weight.sum())
    f = kernels.predict(X, directions, b, a, theta=gamma, scale=1.0, n_threads=n_threads)
    r = f - y
    value = 0.5 * float(sample_weight @ (r * r)) / total
    if not want_grad:
        return value, None
    _, _, grad = kernels.loss_and_grad(X, f - sample_weight * r, directions, b, a, theta=gamma, loss="squared",
                                       scale=1.0, n_threads=n_threads)
    return value, grad * (n / total)


class GramCache:
    """``gram(gamma)`` from ``compute_gram``, the last result kept: a lambda of the path starts from
    the gamma the previous one ended on, and the first from the gamma of the path's start."""

    _last: tuple | None = None

    def compute_gram(self, gamma) -> tuple:
        """``(G, Z.T y, y.y, n)`` at ``gamma`` (each kind of terms computes it its own way)."""
        raise NotImplementedError

    def gram(self, gamma) -> tuple:
        if self._last is not None and np.array_equal(self._last[0], gamma):
            return self._last[1]
        out = self.compute_gram(gamma)
        self._last = (np.array(gamma, copy=True), out)
        return out


class ArrayTerms(GramCache):
    """SRFF's data terms (see the module's docstring) on rows in memory: the standardised ``X``,
    the scaled targets ``y`` and positive ``sample_weight`` (None: 1 each).

    FISTA asks for the gradient at the next point only once it needs it (``lookahead=False``) and
    for one backtracking candidate at a time (``batch=1``): on one machine a pass costs compute,
    not a round trip, so nothing is evaluated that the iteration may not use.
    """

    lookahead = False
    batch = 1

    def __init__(self, X, y, directions, b, n_threads=1, sample_weight=None):
        self.X, self.y, self.W, self.b, self.n_threads, self.w = X, y, directions, b, n_threads, sample_weight

    def total(self):
        """The rows' total weight (their count without weights)."""
        return self.X.shape[0] if self.w is None else float(self.w.sum())

    def compute_gram(self, gamma):
        if self.w is None:
            G, Zty = kernels.gram(self.X, self.W, self.b, self.y, theta=gamma, scale=1.0, n_threads=self.n_threads)
            return G, Zty, float(self.y @ self.y), self.X.shape[0]
        G, Zty = weighted_gram(self.X, self.W, self.b, self.y, gamma, self.w, self.n_threads)
        return G, Zty, float(self.w @ (self.y * self.y)), float(self.w.sum())

    def _loss(self, a, g, want_grad):
        if self.w is not None:
            return weighted_loss_and_grad(self.X, self.y, self.W, self.b, a, g, self.w, want_grad, self.n_threads)
        v, _, grad = kernels.loss_and_grad(self.X, self.y, self.W, self.b, a, theta=g, loss="squared", scale=1.0,
                                           want_theta=want_grad, n_threads=self.n_threads)
        return v, grad

    def evaluate(self, a, values=(), grads=()):
        return [self._loss(a, g, False)[0] for g in values], [self._loss(a, g, True) for g in grads]

    def errors(self, gamma, coefs):
        F = kernels.features(self.X, self.W, self.b, theta=gamma, scale=1.0, n_threads=self.n_threads) @ coefs
        errors = np.average((F - self.y[:, None]) ** 2, axis=0, weights=self.w)
        return errors, float(np.average(self.y**2, weights=self.w))

    def error(self, a, gamma):
        pred = kernels.predict(self.X, self.W, self.b, a, theta=gamma, scale=1.0, n_threads=self.n_threads)
        return float(np.average((pred - self.y) ** 2, weights=self.w))

    def progress(self):
        return ""


# ---------------------------------------------------------------------------------------------
# The two steps and the loops, on any data terms.
# ---------------------------------------------------------------------------------------------

def ridge_from_gram(sums, lam):
    """``a = (G + n lam I)^{-1} Z.T y`` and the objective ``(1/2n)||y - Za||^2 + lam/2 ||a||^2``
    from the sums ``(G, Z.T y, y.y, n)`` of :meth:`ArrayTerms.gram` (n the total weight)."""
    G, Zty, yy, n = sums
    a = ridge_solve(G, Zty, n * lam)
    rss = float(yy - 2 * a @ Zty + a @ G @ a)
    return a, max(rss, 0.0) / (2 * n) + 0.5 * lam * float(a @ a)


def ridge_step(X, y, directions, b, gamma, lam, n_threads, sample_weight=None):
    """``a = (Z.T Z + n lam I)^{-1} Z.T y`` and the objective ``(1/2n)||y - Za||^2 + lam/2 ||a||^2``;
    with ``sample_weight`` the weighted sums, n the total weight."""
    return ridge_from_gram(ArrayTerms(X, y, directions, b, n_threads, sample_weight).gram(gamma), lam)


def _overflowed():
    return ValueError("the SRFF objective or its gamma-gradient overflowed (they grow like y^2): "
                      "y is too large in magnitude for float64; divide it by its scale first")


def _backtrack(terms, a, v_pt, f_v, g_v, step, radius, active, x_prev, momentum):
    """The step that FISTA's quadratic upper bound accepts, halving from ``step``: ``(x, h(x),
    step, (h, grad) at the next extrapolated point x + momentum (x - x_prev), or None)``. The first
    candidate is evaluated alone, with the gradient at its next point when ``terms.lookahead``;
    after a rejection ``terms.batch`` halvings at a time (a pass on Dask is a round trip: the
    halvings the bound would try next cost one together)."""
    batch = 1
    while True:
        steps = [step * 0.5**k for k in range(batch)]
        xs = [simplex_projection(v_pt - s * g_v, radius, active) for s in steps]
        nexts = [x + momentum * (x - x_prev) for x in xs] if batch == 1 and terms.lookahead else []
        fs, pairs = terms.evaluate(a, values=xs, grads=nexts)
        for k, (s, x, f_x) in enumerate(zip(steps, xs, fs)):
            diff = x - v_pt
            if f_x <= f_v + g_v @ diff + (diff @ diff) / (2 * s) or s < 1e-12:
                return x, f_x, s, pairs[k] if pairs else None
        step = steps[-1] * 0.5
        batch = terms.batch


def fista(terms, a, gamma, radius, *, step_init=100.0, max_iter=100, tol=1e-5, window=5, active=None):
    """FISTA with backtracking on the data terms' mean loss ``h(g)`` over the simplex of ``radius``
    (with ``active``, a boolean mask, over its face: the other entries stay 0), from ``gamma``.

    Each iteration takes the gradient at the extrapolated point and halves ``step`` until the
    quadratic upper bound holds; the candidates and the accepted iterates do not depend on how
    ``terms`` groups the evaluations. Returns the iterate with the smallest ``h`` seen, the
    number of iterations and the last accepted step.
    """
    x_prev = gamma.copy()
    v_pt = gamma.copy()
    t = 1.0
    step = float(step_init)
    _, (pending,) = terms.evaluate(a, grads=[gamma])
    best_x, best_f = gamma.copy(), pending[0]
    hist = [best_f]
    it = 0
    for it in range(1, max_iter + 1):
        f_v, g_v = pending if pending is not None else terms.evaluate(a, grads=[v_pt])[1][0]
        if not (np.isfinite(f_v) and np.isfinite(g_v).all()):
            raise _overflowed()
        t_next = 0.5 * (1.0 + np.sqrt(1.0 + 4.0 * t * t))
        momentum = (t - 1.0) / t_next
        x, f_x, step, pending = _backtrack(terms, a, v_pt, f_v, g_v, step, radius, active, x_prev, momentum)
        v_pt = x + momentum * (x - x_prev)
        x_prev, t = x, t_next
        if f_x < best_f:
            best_x, best_f = x.copy(), f_x
        hist.append(f_x)
        if stall(hist, window, tol):
            break
    return best_x, it, step


def fista_gamma(X, y, directions, b, a, gamma, radius, *, step_init=100.0, max_iter=100, tol=1e-5,
                window=5, n_threads=1, sample_weight=None, active=None):
    """:func:`fista` on rows in memory: ``h(g) = (1/2n)||y - Z(g) a||^2`` (with ``sample_weight``:
    the weighted mean, :func:`weighted_loss_and_grad`). Returns the iterate with the smallest
    ``h`` seen, the number of iterations and the last accepted step (:func:`srff_fit_path` starts
    the next gamma step from twice that step)."""
    return fista(ArrayTerms(X, y, directions, b, n_threads, sample_weight), a, gamma, radius, step_init=step_init,
                 max_iter=max_iter, tol=tol, window=window, active=active)


def fit_lambda(terms, lam, gamma0, *, max_iter=1000, max_inner_iter=100, tol=1e-5, window=5, step_init=100.0,
               verbose=0, gamma_start=None, carry_step=True):
    """Alternate the ridge step and the gamma step for one lambda on the data terms; returns (a,
    gamma, objective history). See :func:`srff_fit_path`."""
    radius = float(gamma0.sum())
    active = gamma0 > 0
    if not active.any():
        max_iter = 0
    gamma = (gamma0 if gamma_start is None else gamma_start).copy()
    hist = []
    a = None
    step = float(step_init)
    log = verbose if isinstance(verbose, ProgressLog) else ProgressLog("SRFFRegressor", verbose)
    for it in range(max_iter):
        a, J = ridge_from_gram(terms.gram(gamma), lam)
        hist.append(J)
        log.step("outer iteration", it + 1, max_iter, f"lambda {lam:.4g}, objective {J:.6g}{terms.progress()}",
                 level=2)
        if stall(hist, window, tol):
            return a, gamma, hist
        gamma, _, last_step = fista(terms, a, gamma, radius, step_init=step, max_iter=max_inner_iter, tol=tol,
                                    window=window, active=active)
        if carry_step:
            step = min(float(step_init), 2.0 * last_step)
    a, J = ridge_from_gram(terms.gram(gamma), lam)
    hist.append(J)
    return a, gamma, hist


def srff_fit_path(X, y, directions, b, lam, gamma0, *, max_iter=1000, max_inner_iter=100, tol=1e-5,
                  window=5, step_init=100.0, n_threads=1, verbose=0, gamma_start=None, sample_weight=None,
                  carry_step=True):
    """Alternate the ridge step and the gamma step for one lambda; returns (a, gamma, objective history).

    The first gamma step's backtracking starts from ``step_init``; with ``carry_step`` each later
    one starts from twice the previous one's last accepted step (at most ``step_init``), which
    saves the halvings from ``step_init`` down to the step the objective accepts at every outer
    iteration; ``carry_step=False`` restarts every gamma step from ``step_init`` (the reference code).

    The simplex has the size of ``gamma0`` and holds its support (an input where ``gamma0`` is 0,
    one constant on the training rows, stays at 0; when every input is, there is no gamma step);
    the iterations start from ``gamma_start`` (a warm start, e.g. the previous lambda's gamma on a
    path) or from ``gamma0``. ``sample_weight`` (positive, or None) weights the squared errors of
    both steps.
    """
    return fit_lambda(ArrayTerms(X, y, directions, b, n_threads, sample_weight), lam, gamma0, max_iter=max_iter,
                      max_inner_iter=max_inner_iter, tol=tol, window=window, step_init=step_init, verbose=verbose,
                      gamma_start=gamma_start, carry_step=carry_step)


def path_start_index(train, held_out, gamma0, lambdas):
    """:func:`path_start` on data terms: one Gram pass on the training rows, one pass of held-out
    errors for every lambda."""
    G, Zty, _, n = train.gram(gamma0)
    eig = RidgeEigen(G, Zty.reshape(-1, 1))
    coefs = np.hstack([eig.coef(n * lam) for lam in lambdas])
    errors, null = held_out.errors(gamma0, coefs)
    gain = null - errors
    if not np.isfinite(gain).all() or gain.max() <= 0:
        return 0
    first = int(np.nonzero(gain >= 0.1 * gain.max())[0][0])
    # where the initial features explain little at any lambda (few relevant inputs among many),
    # the 10 % mark falls on the flat stretch: never start more than 3 steps above ridge's best
    return max(first - 1, int(np.argmin(errors)) - 3, 0)


def path_start(Xtr, ytr, Xva, yva, directions, b, gamma0, lambdas, n_threads, wtr=None, wva=None):
    """Index (into ``lambdas``, sorted from large to small) where the path starts.

    The held-out MSE of plain ridge on the initial features (gamma = gamma0) for every lambda, from
    one Gram pass and one eigendecomposition: lambdas so large that this ridge fit is the constant
    give the same error as the mean, and a path started there would stop early on that flat stretch.
    The start is one grid step above the first lambda that achieves a tenth of the best improvement
    over the mean, and at most three steps above the lambda of the least error. ``wtr`` and ``wva``
    (sample weights of the two splits, or None) weight the fit and the errors.
    """
    return path_start_index(ArrayTerms(Xtr, ytr, directions, b, n_threads, wtr),
                            ArrayTerms(Xva, yva, directions, b, n_threads, wva), gamma0, lambdas)


def _fit_one(est, terms, lam, log, gamma_start=None):
    return fit_lambda(terms, lam, est._gamma0(est.n_features_in_), max_iter=est.max_iter,
                      max_inner_iter=est.max_inner_iter, tol=est.tol, window=est.stall_window,
                      step_init=est.step_init, verbose=log, gamma_start=gamma_start)


def _fit_lambda_path(est, train, held_out, alphas, log):
    """The warm-started lambda path on the training terms; returns the best (a, gamma, hist, lambda)."""
    start = path_start_index(train, held_out, est._gamma0(est.n_features_in_), alphas)
    errors = np.full(alphas.size, np.nan)
    best_err, best_fit, since_best = np.inf, None, 0
    gamma = None
    for k in range(start, alphas.size):
        lam = float(alphas[k])
        a, gamma, hist = _fit_one(est, train, lam, log, gamma_start=gamma)
        est.n_outer_iter_total_ += len(hist)
        errors[k] = held_out.error(a, gamma)
        log.step("lambda", k + 1, alphas.size, f"lambda {lam:.4g}, outer iterations {len(hist)}, validation MSE "
                 f"{errors[k] * np.float64(est.y_scale_) ** 2:.5g}{train.progress()}")
        if errors[k] < best_err:
            best_err, best_fit, since_best = errors[k], (a, gamma, hist, lam), 0
        else:
            since_best += 1
            if since_best >= est.n_iter_no_change:
                break
    with np.errstate(over="ignore"):  # y near 1e300: the MSE in its units is inf, the choice is not
        est.validation_errors_ = errors * np.float64(est.y_scale_) ** 2
    est.path_start_ = start
    return best_fit


def fit_alphas(est, alphas, data, log):
    """Fit ``SRFFRegressor`` ``est`` for the lambdas ``alphas`` (any order): one lambda on every
    row, or the path on the training split (then, with ``refit``, the chosen lambda on every row).

    ``data.terms(rows)`` fits the target scaling on ``"all"`` or ``"train"`` rows (setting
    ``est.y_mean_`` and ``est.y_scale_``) and returns their data terms; ``data.terms("val")`` the
    held-out rows' in the scaling of the training rows. Sets the fitted attributes of the chosen
    model (the closing ridge, ``refit_components``, is the caller's); returns its gamma.
    """
    alphas = alphas[np.argsort(-alphas, kind="stable")]
    est.alphas_ = alphas
    est.n_outer_iter_total_ = 0
    if alphas.size == 1:
        a, gamma, hist = _fit_one(est, data.terms("all"), float(alphas[0]), log)
        est.n_outer_iter_total_ = len(hist)
        est.validation_errors_ = None
        best = float(alphas[0])
    else:
        train = data.terms("train")
        a, gamma, hist, best = _fit_lambda_path(est, train, data.terms("val"), alphas, log)
        if est.refit:
            a, gamma, hist = _fit_one(est, data.terms("all"), best, log, gamma_start=gamma)
            est.n_outer_iter_total_ += len(hist)
    est.alpha_ = best
    est.coef_, est.gamma_, est.objective_ = a, gamma, hist
    est.intercept_ = est.y_mean_
    est.refit_alpha_ = None
    est.n_iter_ = len(hist)
    total = gamma.sum()
    est.feature_importances_ = gamma / total if total > 0 else np.zeros(gamma.size)  # (every input constant)
    return gamma
