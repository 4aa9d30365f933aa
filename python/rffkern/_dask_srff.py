"""SRFF on Dask rows (:mod:`rffkern._dask`): :func:`fit_srff`.

The algorithm is :mod:`rffkern._srff_solver`'s, on data terms summed over the chunks
(:class:`DaskTerms`). Pass 1 the weighted column statistics of X and y (one more, with weights, for
the rows of positive weight), a gather for the width rule, pass 2 the d x d Gram of the
standardised X (the lambda grid) and the target statistics of the training rows; then the
alternating minimisation with the whole loop on the client and every data term on the workers:
each ridge step is one pass (the Gram ``Z.T W Z``, ``Z.T W y`` of the current gamma; the last Gram
is reused when the next lambda starts from the same gamma), FISTA one pass for the starting loss
and gradient, then one per iteration whose first backtracking step is accepted (the candidate's
loss is evaluated with the loss and gamma-gradient at the extrapolated point that follows it) and
one more per rejection (four halvings a pass); the lambda path one Gram and one held-out pass for
its start, one held-out pass per lambda. Passes: ``2 + inner`` per outer iteration when no step is
rejected (the single-machine fit makes ``2 + 2 * inner`` compiled passes).

The iterative fit re-reads X on every pass: persist it (``X = X.persist()``) when it fits in the
workers' memory.
"""
from __future__ import annotations

import numpy as np

from rffkern._dask import DaskRows, Moments, prepare_input, sample_rows
from rffkern._dask_ridge import Inputs, fit_ridge_map
from rffkern._inputs import set_input_scaling
from rffkern._progress import ProgressLog
from rffkern._rffnet_training import REFIT_ALPHAS
from rffkern._ridge_solvers import FourierFeatureMap
from rffkern._srff_solver import (PATH_EXPONENTS, ArrayTerms, GramCache, alpha_grid, fit_alphas, length_scale_rule,
                                  validation_split, y_too_large)
from rffkern._validation import as_generator, resolve_n_threads

__all__ = ["fit_srff", "DaskTerms"]

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
    """A chunk's standardised X, targets and relative weights (None: 1 each) on ``ctx["rows"]``
    (all, train or val), without the rows of zero weight (the in-memory fit drops them)."""
    Xs, y, w = ctx["inputs"].x(block.X), ctx["targets"](block.y), block.w
    sel = None if ctx["rows"] == "all" else (~block.mask if ctx["rows"] == "train" else block.mask)
    if w is not None:
        sel = w > 0 if sel is None else sel & (w > 0)
    if sel is not None:
        Xs, y, w = np.ascontiguousarray(Xs[sel]), y[sel], None if w is None else w[sel]
    return Xs, y, w


def _chunk_srff(ctx, block):
    """One pass's sum over a chunk: a data term of :class:`ArrayTerms` on the chunk's rows, its
    means multiplied by the rows' weight (the client divides the sums by the total)."""
    X, y, w = _srff_rows(ctx, block)
    if not X.shape[0]:
        return None
    op = ctx["op"]
    if op == "xgram":
        return X.T @ X if w is None else (X * w[:, None]).T @ X
    if op == "y_moments":
        return Moments(y.reshape(-1, 1), w)
    terms = ArrayTerms(X, y, ctx["W"], ctx["b"], ctx["n_threads"], w)
    weight = terms.total()
    if op == "gram":
        return terms.compute_gram(ctx["gamma"])
    if op == "eval":
        values, grads = terms.evaluate(ctx["a"], ctx["values"], ctx["grads"])
        return [v * weight for v in values], [(v * weight, g * weight) for v, g in grads], weight
    if op == "errors":  # the path's start
        errors, null = terms.errors(ctx["gamma"], ctx["coefs"])
        return errors * weight, null * weight, weight
    if op == "error":
        return terms.error(ctx["a"], ctx["gamma"]) * weight, weight
    raise ValueError(f"unknown SRFF pass {op!r}")


class _Passes:
    """The passes of one fit: ``run(rows, targets, op, **kw)`` reduces :func:`_chunk_srff` over
    the chunks (rows ``"all"``, ``"train"`` or ``"val"`` of the held-out mask)."""

    def __init__(self, data, inputs, weights, offsets, n_threads):
        self.data = data
        self.base = {"inputs": inputs, "W": weights, "b": offsets, "n_threads": n_threads}

    def delayed(self, rows, targets, op, **kw):
        ctx = {**self.base, "targets": targets, "rows": rows, "op": op, **kw}
        return self.data.reduce(_chunk_srff, ctx, mask="srff_val")

    def run(self, rows, targets, op, **kw):
        (out,) = self.data.compute(self.delayed(rows, targets, op, **kw))
        return out


class DaskTerms(GramCache):
    """SRFF's data terms (:mod:`rffkern._srff_solver`) on the rows ``rows`` of a Dask fit, with
    the targets ``targets``: each one pass, the chunks' sums divided by the total weight.

    FISTA evaluates its first backtracking candidate together with the gradient at the next
    extrapolated point (``lookahead``) and ``BACKTRACK_BATCH`` halvings at a time after a
    rejection: a pass is a round trip to the workers, and an accepted first step (the common case)
    then costs one pass per iteration instead of two.
    """

    lookahead = True
    batch = BACKTRACK_BATCH

    def __init__(self, passes, rows, targets):
        self.passes, self.rows, self.targets = passes, rows, targets

    def _run(self, op, **kw):
        return self.passes.run(self.rows, self.targets, op, **kw)

    def compute_gram(self, gamma):
        return self._run("gram", gamma=gamma)

    def evaluate(self, a, values=(), grads=()):
        vals, pairs, total = self._run("eval", a=a, values=list(values), grads=list(grads))
        return [v / total for v in vals], [(v / total, g / total) for v, g in pairs]

    def errors(self, gamma, coefs):
        sse, null, total = self._run("errors", gamma=gamma, coefs=coefs)
        return sse / total, null / total

    def error(self, a, gamma):
        sse, total = self._run("error", a=a, gamma=gamma)
        return float(sse / total)

    def progress(self):
        return f", data passes {self.passes.data.passes}"


class _DaskData:
    """The rows of a Dask fit as :func:`rffkern._srff_solver.fit_alphas` takes them: ``terms(rows)``
    sets the target scaling of ``"all"`` rows (from pass 1's moments) or of the ``"train"`` rows
    (``train_moments``) and returns their :class:`DaskTerms`; ``"val"`` in the training rows' scaling."""

    def __init__(self, est, passes, all_moments):
        self.est, self.passes, self.all_moments = est, passes, all_moments
        self.train_moments = None

    def terms(self, rows):
        if rows != "val":
            _set_target_scale(self.est, self.all_moments if rows == "all" else self.train_moments)
        return DaskTerms(self.passes, rows, _VectorTargets(self.est.y_mean_, self.est.y_scale_))


def _set_target_scale(est, moments):
    """``SRFFRegressor._scale_targets`` from the reduced (weighted) moments of the targets."""
    mean, scale = moments.mean_and_scale()
    if not est.normalize_y:
        with np.errstate(over="ignore"):
            overflows = not np.isfinite(moments.m2[0] * moments.scale[0] ** 2)
        if overflows:
            raise y_too_large()
        mean, scale = np.zeros(1), np.ones(1)
    est.y_mean_, est.y_scale_ = float(mean[0]), float(scale[0])


def _length_scale(est, data, inputs, positive, rng):
    """The width rule on the rows (of positive weight) that the in-memory rule subsamples, gathered
    here; it draws nothing more on at most 2000 rows."""
    if est.length_scale not in ("auto", "knn"):
        return float(est.length_scale)
    X_rows, _, w_rows = data.gather(sample_rows(positive.size, 2000, rng, within=positive))
    return length_scale_rule(est.length_scale, inputs.x(X_rows), w_rows, rng)


def fit_srff(est, X, y, sample_weight=None):
    """Fit ``SRFFRegressor`` ``est`` on Dask arrays X (chunked by rows) and y (1-D), with
    ``sample_weight`` (array-like, Dask array or None) as the in-memory ``fit`` takes it.

    The alternating minimisation runs on the client; every data term is reduced over the chunks
    on the workers: the ridge step's Gram ``Z.T W Z`` and ``Z.T W y``, FISTA's losses and
    gamma-gradients (sums over rows), the held-out errors of the lambda path, the d x d Gram behind
    the default lambda grid. The width sample and the held-out split are those of
    ``est.fit(X.compute(), y.compute(), sample_weight)`` (same generator, same draws, over the
    rows of positive weight), so the model is the same up to the order of floating-point sums.

    Parameters
    ----------
    est : SRFFRegressor
        The estimator; its hyper-parameters are validated here and its fitted attributes set.
    X : dask.array.Array of shape (n_samples, n_features)
        Chunked by rows only (every row whole in one chunk); known chunk sizes.
    y : dask.array.Array or array-like of shape (n_samples,)
        Numeric targets, one output. Rechunked to X's row chunks.
    sample_weight : dask.array.Array, array-like, float or None
        Non-negative row weights (rechunked to X's row chunks), relative to their mean positive
        weight; rows of zero weight are left out.

    Returns
    -------
    est : SRFFRegressor
        Fitted, with the attributes of the single-machine fit.

    Raises
    ------
    ValueError
        NaN or infinity in X or y, column-chunked X, 2-D y, mismatched lengths, bad weights, a
        validation split that leaves too few rows, or a bad hyper-parameter.
    """
    est._validate_params()
    name = type(est).__name__
    est.__dict__.pop("feature_names_in_", None)
    X, y = prepare_input(X, y, name, False, float_dtypes=(np.float64,))
    if y.ndim != 1:
        raise ValueError(f"{name} fits one target: y must be 1-D, got shape {y.shape}")
    data = DaskRows(X, y, sample_weight)
    d = data.d
    log = ProgressLog(est, est.verbose)
    moments, _ = data.moments(True)
    est.n_features_in_ = d
    set_input_scaling(est, moments.input_standardization(d, bool(est.standardize), est.robust_inputs))
    inputs = Inputs(est.x_mean_, est.x_scale_, None, cast="float64")
    rng = as_generator(est.random_state)
    positive = data.positive_rows()   # the rows the in-memory fit keeps
    est.length_scale_ = _length_scale(est, data, inputs, positive, rng)
    est.weights_ = rng.standard_normal((d, est.n_components))
    est.offsets_ = rng.uniform(0.0, 2.0 * np.pi, est.n_components)
    n_alphas = PATH_EXPONENTS.size if est.alpha is None else np.atleast_1d(est.alpha).size
    mask = None
    if n_alphas > 1:
        mask = np.zeros(data.n, bool)
        mask[positive[validation_split(est, positive.size, rng)[1]]] = True
    data.set_mask("srff_val", mask)
    passes = _Passes(data, inputs, est.weights_, est.offsets_, resolve_n_threads(est.n_jobs))
    split = _DaskData(est, passes, moments.columns(d))
    want = {}
    if est.alpha is None:
        want["xgram"] = passes.delayed("all", _VectorTargets(0.0, 1.0), "xgram")
    if n_alphas > 1:
        want["y_moments"] = passes.delayed("train", _VectorTargets(0.0, 1.0), "y_moments")
    got = dict(zip(want, data.compute(*want.values()))) if want else {}
    if est.alpha is None:
        alphas = alpha_grid(float(np.linalg.eigvalsh(got["xgram"])[-1]), PATH_EXPONENTS)  # ||W^1/2 Xs||_2^2
    else:
        alphas = np.atleast_1d(np.asarray(est.alpha, np.float64))
    split.train_moments = got.get("y_moments")
    gamma = fit_alphas(est, alphas, split, log)
    if est.refit_components is not None:  # the closing ridge on every row, as the single-machine fit
        W, b, scale = est._closing_map(positive.size, rng)
        fmap = FourierFeatureMap(W, b, scale, n_threads=resolve_n_threads(est.n_jobs))
        closing = _SRFFClosingInputs(inputs, gamma, est.y_mean_, est.y_scale_)
        coef, intercept, alpha, _, _ = fit_ridge_map(data, fmap, closing, REFIT_ALPHAS, "loo", 0.1, rng)
        est._set_closing(W, b, scale, coef, intercept, alpha)
    est._n_dask_passes = data.passes
    return est
