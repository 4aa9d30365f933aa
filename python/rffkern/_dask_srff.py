"""SRFF on Dask rows (:mod:`rffkern._dask`): :func:`fit_srff`.

Pass 1 column statistics of X, a gather for the k-NN width, pass 2 the d x d Gram of the
standardised X (the lambda grid) and the target statistics on the training rows; then the
alternating minimisation with the whole loop on the client and every data term on the workers:
each ridge step is one pass (Gram ``Z.T Z``, ``Z.T y`` of the current gamma; the last Gram is
reused when the next lambda starts from the same gamma), FISTA one pass for the starting loss and
gradient, then one per iteration whose first backtracking step is accepted (the candidate's loss
is evaluated with the loss and gamma-gradient at the extrapolated point that follows it) and one
more per rejection (four halvings a pass); the lambda path one Gram and one held-out pass for its
start, one held-out pass per lambda. Passes: ``2 + inner`` per outer iteration when no step is
rejected (the single-machine fit makes ``2 + 2 * inner``).

The iterative fit re-reads X on every pass: persist it (``X = X.persist()``) when it fits in the
workers' memory.
"""
from __future__ import annotations

import numpy as np

from rffkern._dask import DaskRows, Moments, prepare_input, sample_rows
from rffkern._dask_ridge import Inputs, fit_ridge_map
from rffkern._data import holdout_split
from rffkern._inputs import set_input_scaling
from rffkern._linalg import RidgeEigen, ridge_solve, simplex_projection, stall
from rffkern._progress import ProgressLog
from rffkern._ridge_solvers import FourierFeatureMap
from rffkern._validation import as_generator, resolve_n_threads

__all__ = ["fit_srff"]

#: Step halvings of SRFF's FISTA backtracking evaluated in one pass after the first one fails.
BACKTRACK_BATCH = 4


class _VectorTargets:
    """SRFF's targets of a chunk: ``(y - mean) / scale`` (1-D float64), the scaler fitted on the
    training rows, as ``SRFFRegressor._scale_targets`` and the held-out targets make them."""

    def __init__(self, mean, scale):
        self.mean, self.scale = float(mean), float(scale)

    def __call__(self, yb):
        return (np.asarray(yb, np.float64) - self.mean) / self.scale


class _SRFFClosingInputs:
    """A chunk's ``(X_std * gamma, (y - y_mean) / y_scale)`` for SRFF's closing ridge, as
    ``SRFFRegressor._closing_ridge`` makes them."""

    def __init__(self, inputs, gamma, mean, scale):
        self.inputs, self.gamma, self.mean, self.scale = inputs, gamma, float(mean), float(scale)

    def __call__(self, Xb, yb):
        Xr = np.ascontiguousarray(self.inputs.x(Xb) * self.gamma)
        return Xr, ((np.asarray(yb, np.float64) - self.mean) / self.scale).reshape(-1, 1)


def _srff_rows(ctx, block):
    """A chunk's standardised X and targets, restricted to ``ctx["rows"]`` (all, train or val)."""
    Xb, yb, mb = block.X, block.y, block.mask
    Xs = ctx["inputs"].x(Xb)
    y = ctx["targets"](yb)
    sel = None if ctx["rows"] == "all" else (~mb if ctx["rows"] == "train" else mb)
    if sel is not None:
        Xs, y = np.ascontiguousarray(Xs[sel]), y[sel]
    return Xs, y


def _chunk_srff(ctx, block):
    from rffkern import kernels

    Xb, yb, mb = block.X, block.y, block.mask
    X, y = _srff_rows(ctx, block)
    nb = X.shape[0]
    if not nb:
        return None
    op, W, b, th = ctx["op"], ctx["W"], ctx["b"], ctx["n_threads"]
    if op == "xgram":
        return X.T @ X
    if op == "y_moments":
        return Moments(y.reshape(-1, 1))
    if op == "gram":
        G, Zty = kernels.gram(X, W, b, y, theta=ctx["gamma"], scale=1.0, n_threads=th)
        return G, Zty, float(y @ y), nb
    if op == "eval":  # losses at ctx["values"], losses and gamma-gradients at ctx["grads"], times nb
        a = ctx["a"]
        values = [kernels.loss_and_grad(X, y, W, b, a, theta=g, loss="squared", scale=1.0, want_theta=False,
                                        n_threads=th)[0] * nb for g in ctx["values"]]
        grads = []
        for g in ctx["grads"]:
            v, _, gt = kernels.loss_and_grad(X, y, W, b, a, theta=g, loss="squared", scale=1.0, n_threads=th)
            grads.append((v * nb, gt * nb))
        return values, grads, nb
    if op == "val_sse":  # held-out squared errors of (coef, gamma) pairs
        return np.array([float(((kernels.predict(X, W, b, a, theta=g, scale=1.0, n_threads=th) - y) ** 2).sum())
                         for a, g in ctx["models"]])
    if op == "path_start":
        F = kernels.features(X, W, b, theta=ctx["gamma"], scale=1.0, n_threads=th) @ ctx["coefs"]
        return ((F - y[:, None]) ** 2).sum(0), float((y**2).sum()), nb
    raise ValueError(f"unknown SRFF pass {op!r}")


class _SRFFOps:
    """The data terms of SRFF's alternating minimisation, each one pass over the chosen rows."""

    def __init__(self, data, inputs, weights, offsets, n_threads):
        self.data, self.inputs = data, inputs
        self.base = {"inputs": inputs, "W": weights, "b": offsets, "n_threads": n_threads}
        self.targets = {}
        self._gram_cache = None

    def run(self, rows, op, **kw):
        ctx = {**self.base, "targets": self.targets[rows], "rows": rows, "op": op, **kw}
        (out,) = self.data.compute(self.data.reduce(_chunk_srff, ctx, mask="srff_val"))
        return out

    def gram(self, rows, gamma):
        """``(Z.T Z, Z.T y, y.y, n)``; the last one is reused for the same rows and gamma (the
        single-machine path recomputes it: same numbers)."""
        cache = self._gram_cache
        if cache is not None and cache[0] == rows and np.array_equal(cache[1], gamma):
            return cache[2]
        out = self.run(rows, "gram", gamma=gamma)
        self._gram_cache = (rows, gamma.copy(), out)
        return out

    def ridge_step(self, rows, gamma, lam):
        """``ridge_step`` of :mod:`rffkern.srff` from the reduced Gram."""
        G, Zty, yy, n = self.gram(rows, gamma)
        a = ridge_solve(G, Zty, n * lam)
        rss = float(yy - 2 * a @ Zty + a @ G @ a)
        return a, max(rss, 0.0) / (2 * n) + 0.5 * lam * float(a @ a)

    def evaluate(self, rows, a, values=(), grads=()):
        """Mean losses at ``values`` and (mean loss, gamma-gradient) at ``grads``, one pass."""
        vals, grs, n = self.run(rows, "eval", a=a, values=list(values), grads=list(grads))
        return [v / n for v in vals], [(v / n, g / n) for v, g in grs]


def _srff_fista(ops, rows, a, gamma, radius, *, step_init, max_iter, tol, window, active=None):
    """``fista_gamma`` of :mod:`rffkern.srff`, the same iterates, on distributed data.

    The backtracking's first candidate is evaluated together with the loss and gradient at the
    extrapolated point that follows it, so an iteration whose first step is accepted costs one
    pass; after a rejection up to ``BACKTRACK_BATCH`` halvings are evaluated in one pass.
    """
    x_prev = gamma.copy()
    v_pt = gamma.copy()
    t = 1.0
    step = float(step_init)
    _, ((best_f, g0),) = ops.evaluate(rows, a, grads=[gamma])   # value(gamma) = value at v_pt
    best_x = gamma.copy()
    pending = (best_f, g0)
    hist = [best_f]
    it = 0
    for it in range(1, max_iter + 1):
        if pending is None:
            _, (pending,) = ops.evaluate(rows, a, grads=[v_pt])
        f_v, g_v = pending
        pending = None
        if not (np.isfinite(f_v) and np.isfinite(g_v).all()):
            raise ValueError("the SRFF objective or its gamma-gradient overflowed (they grow like y^2): "
                             "y is too large in magnitude for float64; divide it by its scale first")
        t_next = 0.5 * (1.0 + np.sqrt(1.0 + 4.0 * t * t))
        batch, found = 1, None
        while found is None:
            steps = [step * 0.5**k for k in range(batch)]
            xs = [simplex_projection(v_pt - s * g_v, radius, active) for s in steps]
            nexts = [x + ((t - 1.0) / t_next) * (x - x_prev) for x in xs] if batch == 1 else []
            fs, ahead = ops.evaluate(rows, a, values=xs, grads=nexts)
            for k, (s, x, f_x) in enumerate(zip(steps, xs, fs)):
                step = s
                diff = x - v_pt
                if f_x <= f_v + g_v @ diff + (diff @ diff) / (2 * step) or step < 1e-12:
                    found = (x, f_x, ahead[k] if ahead else None)
                    break
            else:
                step *= 0.5
                batch = BACKTRACK_BATCH
        x, f_x, pending = found
        v_pt = x + ((t - 1.0) / t_next) * (x - x_prev)
        x_prev, t = x, t_next
        if f_x < best_f:
            best_x, best_f = x.copy(), f_x
        hist.append(f_x)
        if stall(hist, window, tol):
            break
    return best_x, it, step


def _srff_fit_one(est, ops, rows, lam, gamma_start=None, log=None):
    """``srff_fit_path`` of :mod:`rffkern.srff` on distributed data: (a, gamma, objective history)."""
    gamma0 = est._gamma0(ops.data.d)
    radius = float(gamma0.sum())
    active = gamma0 > 0  # srff_fit_path's support: inputs constant on the training rows stay at 0
    gamma = (gamma0 if gamma_start is None else gamma_start).copy()
    hist = []
    a = None
    step = float(est.step_init)
    for it in range(est.max_iter if active.any() else 0):
        a, J = ops.ridge_step(rows, gamma, lam)
        hist.append(J)
        log.step("outer iteration", it + 1, est.max_iter, f"lambda {lam:.4g}, objective {J:.6g}, "
                 f"data passes {ops.data.passes}", level=2)
        if stall(hist, est.stall_window, est.tol):
            return a, gamma, hist
        gamma, _, last_step = _srff_fista(ops, rows, a, gamma, radius, step_init=step,
                                          max_iter=est.max_inner_iter, tol=est.tol, window=est.stall_window,
                                          active=active)
        step = min(float(est.step_init), 2.0 * last_step)   # srff_fit_path's carry_step
    a, J = ops.ridge_step(rows, gamma, lam)
    hist.append(J)
    return a, gamma, hist


def _srff_path_start(est, ops, lambdas, n_train):
    """``path_start`` of :mod:`rffkern.srff`: one Gram pass on the training rows, one pass of
    held-out errors for every lambda."""
    gamma0 = est._gamma0(ops.data.d)
    G, Zty, _, _ = ops.gram("train", gamma0)
    eig = RidgeEigen(G, Zty.reshape(-1, 1))
    coefs = np.hstack([eig.coef(n_train * lam) for lam in lambdas])
    sse, yy, n_val = ops.run("val", "path_start", gamma=gamma0, coefs=coefs)
    errors = sse / n_val
    null = yy / n_val
    gain = null - errors
    if not np.isfinite(gain).all() or gain.max() <= 0:
        return 0
    first = int(np.nonzero(gain >= 0.1 * gain.max())[0][0])
    return max(first - 1, int(np.argmin(errors)) - 3, 0)


def _srff_target_scaler(est, moments):
    """``SRFFRegressor._scale_targets`` from the reduced moments of the targets (1 column)."""
    mean, scale = moments.mean_and_scale()
    if not est.normalize_y:
        with np.errstate(over="ignore"):
            overflows = not np.isfinite(moments.m2[0] * moments.scale[0] ** 2)
        if overflows:
            raise ValueError("y is too large in magnitude: the sum of squares of the centred targets, "
                             "on which SRFF's objective and gradient are built, overflows float64; "
                             "divide y by its scale first or use normalize_y=True")
        mean, scale = np.zeros(1), np.ones(1)
    est.y_mean_, est.y_scale_ = float(mean[0]), float(scale[0])
    return _VectorTargets(est.y_mean_, est.y_scale_)


def fit_srff(est, X, y):
    """Fit ``SRFFRegressor`` ``est`` on Dask arrays X (chunked by rows) and y (1-D).

    The alternating minimisation runs on the client; every data term is reduced over the chunks
    on the workers: the ridge step's Gram ``Z.T Z`` and ``Z.T y``, FISTA's losses and
    gamma-gradients (sums over rows), the held-out errors of the lambda path, the d x d Gram behind
    the default lambda grid. The k-NN width sample and the held-out split are those of
    ``est.fit(X.compute(), y.compute())`` (same generator, same draws).

    Parameters
    ----------
    est : SRFFRegressor
        The estimator; its hyper-parameters are validated here and its fitted attributes set.
    X : dask.array.Array of shape (n_samples, n_features)
        Chunked by rows only (every row whole in one chunk); known chunk sizes.
    y : dask.array.Array or array-like of shape (n_samples,)
        Numeric targets, one output. Rechunked to X's row chunks.

    Returns
    -------
    est : SRFFRegressor
        Fitted, with the attributes of the single-machine fit.

    Raises
    ------
    ValueError
        NaN or infinity in X or y, column-chunked X, 2-D y, mismatched lengths, a validation
        split that leaves too few rows, or a bad hyper-parameter.
    """
    from rffkern._sampling import median_distance
    from rffkern.srff import PATH_EXPONENTS, median_knn_distance

    est._validate_params()
    name = type(est).__name__
    est.__dict__.pop("feature_names_in_", None)
    X, y = prepare_input(X, y, name, False, float_dtypes=(np.float64,))
    if y.ndim != 1:
        raise ValueError(f"{name} fits one target: y must be 1-D, got shape {y.shape}")
    data = DaskRows(X, y)
    n, d = data.n, data.d
    log = ProgressLog(est, est.verbose)
    moments, _ = data.moments(True)
    est.n_features_in_ = d
    set_input_scaling(est, moments.input_standardization(d, bool(est.standardize), est.robust_inputs))
    inputs = Inputs(est.x_mean_, est.x_scale_, None, cast="float64")
    rng = as_generator(est.random_state)
    if est.length_scale in ("auto", "knn"):
        sample = inputs.x(data.gather_x(sample_rows(n, 2000, rng)))
        rule = median_distance if est.length_scale == "auto" else median_knn_distance
        est.length_scale_ = rule(sample, rng=rng)   # <= 2000 rows: draws nothing
    else:
        est.length_scale_ = float(est.length_scale)
    est.weights_ = rng.standard_normal((d, est.n_components))
    est.offsets_ = rng.uniform(0.0, 2.0 * np.pi, est.n_components)
    n_alphas = PATH_EXPONENTS.size if est.alpha is None else np.atleast_1d(est.alpha).size
    if n_alphas > 1:
        n_val = int(round(est.validation_fraction * n))
        if n_val < 1 or n - n_val < 2:
            raise ValueError(f"choosing lambda needs a validation split; validation_fraction="
                             f"{est.validation_fraction} of {n} sample(s) leaves too few")
        tr, va = holdout_split(n, n_val, rng)
        mask = np.zeros(n, bool)
        mask[va] = True
        data.set_mask("srff_val", mask)
    else:
        data.set_mask("srff_val", None)
    ops = _SRFFOps(data, inputs, est.weights_, est.offsets_, resolve_n_threads(est.n_jobs))
    ops.targets["all"] = _VectorTargets(0.0, 1.0)
    ops.targets["train"] = ops.targets["all"]
    want = []
    if est.alpha is None:
        want.append(data.reduce(_chunk_srff, {**ops.base, "targets": ops.targets["all"], "rows": "all",
                                              "op": "xgram"}, mask="srff_val"))
    if n_alphas > 1:
        want.append(data.reduce(_chunk_srff, {**ops.base, "targets": _VectorTargets(0.0, 1.0), "rows": "train",
                                              "op": "y_moments"}, mask="srff_val"))
    got = list(data.compute(*want)) if want else []
    if est.alpha is None:
        top = float(np.linalg.eigvalsh(got.pop(0))[-1])   # ||Xs||_2^2
        top = top if top > 0 else 1.0                       # (srff_alpha_grid: every input constant)
        alphas = top * 10.0 ** np.asarray(PATH_EXPONENTS, np.float64)
    else:
        alphas = np.atleast_1d(np.asarray(est.alpha, np.float64))
    alphas = alphas[np.argsort(-alphas, kind="stable")]
    est.alphas_ = alphas
    est.n_outer_iter_total_ = 0
    y_all = moments.columns(d)
    if alphas.size == 1:
        ops.targets["all"] = _srff_target_scaler(est, y_all)
        a, gamma, hist = _srff_fit_one(est, ops, "all", float(alphas[0]), log=log)
        est.n_outer_iter_total_ = len(hist)
        est.validation_errors_ = None
        best = float(alphas[0])
    else:
        ops.targets["train"] = ops.targets["val"] = _srff_target_scaler(est, got.pop(0))
        a, gamma, hist, best = _srff_fit_lambda_path(est, ops, alphas, n - n_val, log)
        if est.refit:
            ops.targets["all"] = _srff_target_scaler(est, y_all)
            a, gamma, hist = _srff_fit_one(est, ops, "all", best, gamma_start=gamma, log=log)
            est.n_outer_iter_total_ += len(hist)
    est.alpha_ = best
    est.coef_, est.gamma_, est.objective_ = a, gamma, hist
    est.intercept_ = est.y_mean_
    est.refit_alpha_ = None
    if est.refit_components is not None:  # the closing ridge on every row, as the single-machine fit
        from rffkern._rffnet_training import REFIT_ALPHAS

        W, b, scale = est._closing_map(n, rng)
        fmap = FourierFeatureMap(W, b, scale, n_threads=resolve_n_threads(est.n_jobs))
        closing = _SRFFClosingInputs(inputs, gamma, est.y_mean_, est.y_scale_)
        coef, intercept, alpha, _, _ = fit_ridge_map(data, fmap, closing, REFIT_ALPHAS, "loo", 0.1, rng)
        est._set_closing(W, b, scale, coef, intercept, alpha)
    est.n_iter_ = len(hist)
    total = gamma.sum()
    est.feature_importances_ = gamma / total if total > 0 else np.zeros(d)  # (every input constant)
    est._n_dask_passes = data.passes
    return est


def _srff_fit_lambda_path(est, ops, alphas, n_train, log):
    """``SRFFRegressor._fit_path`` on distributed data: the best (a, gamma, hist, lambda)."""
    start = _srff_path_start(est, ops, alphas, n_train)
    errors = np.full(alphas.size, np.nan)
    best_err, best_fit, since_best = np.inf, None, 0
    gamma = None
    for k in range(start, alphas.size):
        lam = float(alphas[k])
        a, gamma, hist = _srff_fit_one(est, ops, "train", lam, gamma_start=gamma, log=log)
        est.n_outer_iter_total_ += len(hist)
        sse = ops.run("val", "val_sse", models=[(a, gamma)])
        errors[k] = float(sse[0]) / (ops.data.n - n_train)
        log.step("lambda", k + 1, alphas.size, f"lambda {lam:.4g}, outer iterations {len(hist)}, validation MSE "
                 f"{errors[k] * np.float64(est.y_scale_) ** 2:.5g}, data passes {ops.data.passes}")
        if errors[k] < best_err:
            best_err, best_fit, since_best = errors[k], (a, gamma, hist, lam), 0
        else:
            since_best += 1
            if since_best >= est.n_iter_no_change:
                break
    with np.errstate(over="ignore"):
        est.validation_errors_ = errors * np.float64(est.y_scale_) ** 2
    est.path_start_ = start
    return best_fit

