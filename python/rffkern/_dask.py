"""Dask arrays in and out (the optional ``rffkern[dask]`` extra).

* :func:`map_rows`: ``transform`` / ``predict`` / ``predict_proba`` / ``decision_function`` of a Dask
  array chunked by rows is the NumPy method applied to every chunk, lazily (``map_blocks``): no
  compute, nothing gathered on the client.
* :func:`fit_ridge`: the exact distributed fit of ``RFFRidge`` / ``RFFRidgeClassifier``. One pass for
  the column statistics (standardization, target scaling, finiteness) and a small row sample (median
  heuristic); one pass of per-chunk :class:`GramStats` for every candidate width, reduced by a binary
  tree of :meth:`GramStats.merge` on the workers; for ``alpha_selection="loo"`` one more pass of
  per-chunk leave-one-out sums (:class:`LooPass`); the O(s^3) solves on the client, with the same
  code as one machine. Everything runs on Dask's current scheduler (a ``distributed.Client`` when
  one is active), so a lost worker's chunks are recomputed by Dask.
* The exact distributed fits of EERF, SRFF and adaptive RFF build on these pieces in
  :mod:`rffkern._dask_fits`.

Dask is imported only once a Dask array has been seen: ``import rffkern`` works without it.
"""
from __future__ import annotations

import copy
import math

import numpy as np

from rffkern._data import power_of_two_scale
from rffkern._inputs import column_range, merge_ranges, scaling_from_statistics, set_input_scaling
from rffkern._selection import one_se_width
from rffkern._ridge_solvers import GramStats, LooPass, as_alpha_list, choose_alpha, gcv_errors, solve_ridge
from rffkern._validation import as_generator

__all__ = ["is_dask_array", "map_rows", "fit_ridge", "refuse_dask_weights", "refuse_quantile"]

#: Rows of the sample behind the median heuristic and ``feature_importances_`` (as on one machine).
SAMPLE_ROWS = 2000
#: The sample is spread over at most this many randomly chosen chunks.
SAMPLE_CHUNKS = 16


def is_dask_array(X):
    """True for a ``dask.array.Array``; dask is not imported for anything else."""
    if not type(X).__module__.startswith("dask"):
        return False
    import dask.array as da
    return isinstance(X, da.Array)


def _row_chunked(X, method):
    """X itself when it is 2-D with every row whole in one chunk; a clear ValueError otherwise."""
    if X.ndim != 2:
        raise ValueError(f"{method} expects a 2-D Dask array (n_samples, n_features), got shape {X.shape}")
    if len(X.chunks[1]) > 1:
        raise ValueError(
            f"{method} needs whole rows in every chunk, but X of shape {X.shape} is chunked along its "
            f"columns ({X.chunks[1]}): rechunk to {X.shape[1]} columns, X.rechunk({{1: {X.shape[1]}}})")
    return X


def map_rows(fn, X):
    """``fn`` (a NumPy row-wise method, e.g. ``estimator.predict``) on every row chunk of X, lazily.

    The output's shape and dtype are read off ``fn`` on one row of zeros, run here at once: that
    also raises ``NotFittedError`` or the wrong-feature-count ``ValueError`` now, as NumPy input
    would, instead of inside the workers at compute time. Returns a ``dask.array.Array`` with X's
    row chunks: (n,) or (n, n_out).
    """
    import dask

    X = _row_chunked(X, getattr(fn, "__name__", "this method"))
    probe = np.asarray(fn(np.zeros((1, X.shape[1]), X.dtype)))
    # the estimator travels once per worker as one key of the graph, not once per task
    fn_key = dask.delayed(fn, pure=False)
    if probe.ndim == 1:
        return X.map_blocks(_apply, fn_key, drop_axis=1, dtype=probe.dtype,
                            meta=np.empty((0,), probe.dtype))
    return X.map_blocks(_apply, fn_key, chunks=(X.chunks[0], probe.shape[1:]), dtype=probe.dtype,
                        meta=np.empty((0,) * probe.ndim, probe.dtype))


def _apply(block, fn):
    return fn(block)


# -- distributed ridge fit ------------------------------------------------------------------------

class _Moments:
    """Column count, mean and sum of squared deviations of a chunk, mergeable (Chan et al.).

    Each chunk is divided by its power-of-two column scale first (as :func:`mean_and_scale` does);
    merging brings both to the larger scale exactly, so values near the float limits do not overflow.
    """

    def __init__(self, A):
        A = np.asarray(A, np.float64)
        self.n = A.shape[0]
        self.finite = bool(np.isfinite(A).all())
        self.scale = power_of_two_scale(A, axis=0) if self.finite else np.ones(A.shape[1])
        if self.n == 0 or not self.finite:
            self.mean, self.m2 = np.zeros(A.shape[1]), np.zeros(A.shape[1])
            self.lo, self.lo2, self.hi = column_range(A[:0])
        else:
            As = A / self.scale
            self.mean = As.mean(0)
            self.m2 = ((As - self.mean) ** 2).sum(0)
            self.lo, self.lo2, self.hi = column_range(A)  # (which columns are constant or two-valued)

    def merged(self, other):
        out = copy.copy(self)
        out.finite = self.finite and other.finite
        out.n = self.n + other.n
        out.scale = np.maximum(self.scale, other.scale)
        ra, rb = self.scale / out.scale, other.scale / out.scale
        ma, mb = self.mean * ra, other.mean * rb
        delta = mb - ma
        if out.n:
            out.mean = ma + delta * (other.n / out.n)
            out.m2 = self.m2 * ra**2 + other.m2 * rb**2 + delta**2 * (self.n * other.n / out.n)
        out.lo, out.lo2, out.hi = merge_ranges((self.lo, self.lo2, self.hi), (other.lo, other.lo2, other.hi))
        return out

    def constant(self):
        """The columns that hold one value on every row (none without rows)."""
        return self.lo == self.hi

    def mean_and_scale(self):
        """As :func:`rffkern._data.mean_and_scale` of all rows (zero deviations replaced by 1; a
        constant column's value as its mean)."""
        constant = self.constant()
        sd = np.where(constant, 0.0, np.sqrt(self.m2 / max(self.n, 1)) * self.scale)
        return np.where(constant, self.lo, self.mean * self.scale), np.where(sd > 0, sd, 1.0)

    def input_standardization(self, d, standardize=True, robust=False, ignore_constant=True):
        """:func:`rffkern._inputs.scaling_from_statistics` of the first ``d`` columns (the inputs)
        of all rows: as :func:`rffkern._inputs.fit_input_scaling` in memory (an infinite scale for
        the constant inputs with ``ignore_constant``)."""
        constant = self.constant()[:d]
        sd = np.where(constant, 0.0, np.sqrt(self.m2[:d] / max(self.n, 1)) * self.scale[:d])
        mean = np.where(constant, self.lo[:d], self.mean[:d] * self.scale[:d])
        ranges = (self.lo[:d], self.lo2[:d], self.hi[:d])
        return scaling_from_statistics(mean, np.where(sd > 0, sd, 1.0), constant, ranges, standardize, robust,
                                       ignore_constant)

    def scale_inputs(self, est, d, probe=None):
        """Set ``est``'s ``standardize_`` and ``standardize_errors_`` (for ``"auto"``, ``probe``:
        :func:`probe_standardization`'s result, or True without one) and its input treatment
        (``x_mean_``, ``x_scale_``, the clipping range) from the moments of the first ``d``
        columns, as the estimator's ``fit`` does (inputs constant on every row standardize to 0;
        "global": one pooled deviation)."""
        if est.standardize == "auto":
            est.standardize_, est.standardize_errors_ = probe if probe is not None else (True, None)
        else:
            est.standardize_, est.standardize_errors_ = est.standardize, None
        refuse_quantile(est.standardize_)
        set_input_scaling(est, self.input_standardization(d, est.standardize_, est.robust_inputs))


def refuse_dask_weights(sample_weight):
    """A ``ValueError`` for ``sample_weight`` on Dask arrays (the fits that do not take it there)."""
    if sample_weight is not None:
        raise ValueError("sample_weight is not supported when X is a Dask array; fit on a NumPy array, "
                         "or repeat rows in place of integer weights")


def refuse_quantile(standardize):
    """A ``ValueError`` for ``standardize="quantile"`` on Dask arrays."""
    if standardize == "quantile":
        raise ValueError("standardize='quantile' needs the order statistics of every row and is not supported "
                         "when X is a Dask array; use standardize='auto', True or 'global' (or fit on a NumPy array)")


def probe_standardization(est, X, y, moments, d, rng, classes=None, keep=None):
    """``(standardize_, standardize_errors_)`` of ``standardize="auto"`` on Dask arrays: the
    in-memory rule (:func:`rffkern.ridge.choose_standardization`, an ``RFFRidge(PROBE_COMPONENTS)``
    at its defaults comparing each input's own deviation with one pooled deviation) on at most
    ``PROBE_ROWS`` rows drawn at random from all of X and gathered on the client; ``(True, None)``
    without a comparison where the varying inputs have one spread (``moments`` of every row).

    The rows are drawn with a seed from a copy of ``rng`` (the estimator's draws stay those of any
    other ``standardize``), so the choice depends on neither the chunks nor the scheduler. The
    probe's targets are ``y`` for regression (the probe scales them itself) and the +-1 indicators
    of ``classes`` for labels. ``keep`` (sorted row indices -> the ones to keep), if given, drops
    drawn rows, such as RFFNet's validation rows. Not for other ``standardize`` values: returns None.
    """
    if est.standardize != "auto":
        return None
    from rffkern._data import one_spread
    from rffkern.ridge import PROBE_ROWS, choose_standardization

    constant = moments.constant()[:d]
    if one_spread(moments.mean_and_scale()[1][:d], constant):
        return True, None
    import dask

    seed = int(copy.deepcopy(rng).integers(2**32 - 1))
    n = X.shape[0]
    rows = np.arange(n) if n <= PROBE_ROWS else np.sort(np.random.default_rng(seed).choice(n, PROBE_ROWS,
                                                                                            replace=False))
    if keep is not None:
        rows = keep(rows)
    if rows.size < 2:  # nothing to compare on (as a probe that cannot fit in memory)
        return True, None
    # one at a time: in one graph the workers held many more chunks at once (an out-of-core fit's
    # peak memory: 43 MB against 8 MB, tests/test_dask_outofcore.py's data)
    (X_rows,), (y_rows,) = dask.compute(X[rows]), dask.compute(y[rows])
    if classes is None:
        Y = np.asarray(y_rows, np.float64).reshape(len(rows), -1)
    else:
        from sklearn.preprocessing import label_binarize
        Y = label_binarize(np.asarray(y_rows), classes=np.asarray(classes), neg_label=-1, pos_label=1)
        Y = Y.astype(np.float64)
    return choose_standardization(np.asarray(X_rows, np.float64), Y, None, seed, est.n_jobs, est.robust_inputs,
                                  quantile=False)


def _tree_reduce(parts, combine):
    """A binary tree of ``combine`` over delayed ``parts`` (log2(n) levels, run on the workers)."""
    import dask

    combine = dask.delayed(combine, pure=True)
    while len(parts) > 1:
        parts = [combine(parts[i], parts[i + 1]) if i + 1 < len(parts) else parts[i]
                 for i in range(0, len(parts), 2)]
    return parts[0]


def _merge_moments(a, b):
    return a.merged(b)


def _merge_gram_lists(a, b):
    # copies: a task's input may be held by its worker and reused if the task is recomputed
    return [copy.deepcopy(x).merge(y) for x, y in zip(a, b)]


def _add_arrays(a, b):
    return a + b


def _ridge_targets(est, yb, dtype):
    """The scaled targets of a chunk, as ``fit`` makes them on one machine."""
    from sklearn.base import is_classifier

    Y = est._targets(yb) if is_classifier(est) else yb.reshape(yb.shape[0], -1)
    return est._target_scaler.transform(Y.astype(dtype)).astype(dtype)


def _chunk_moments(Xb, yb, with_targets):
    A = Xb.astype(np.float64)
    if with_targets:
        A = np.hstack([A, np.asarray(yb, Xb.dtype).reshape(yb.shape[0], -1).astype(np.float64)])
    return _Moments(A)


def _chunk_grams(est, unit, widths, n_targets, Xb, yb):
    Xs, Ys = est._standardized(Xb), _ridge_targets(est, yb, Xb.dtype)
    return [GramStats(est._map(unit / w).n_out, n_targets, Xs.dtype).add(est._map(unit / w), Xs, Ys)
            for w in widths]


def _chunk_loo(est, unit, widths, passes, Xb, yb, moments=False):
    """The LOO sums of a chunk per width and alpha, shape (n_widths, n_alphas); with ``moments``
    also the sums of products of the rows' squared residuals over every (width, alpha) pair, for
    the standard errors of the width rule: one array (1 + n_widths * n_alphas, n_widths * n_alphas),
    its first row the sums, so that chunks add up as arrays."""
    Xs, Ys = est._standardized(Xb), _ridge_targets(est, yb, Xb.dtype)
    if not moments:
        return np.array([p.sse(est._map(unit / w), Xs, Ys) for w, p in zip(widths, passes)])
    rows = [np.empty((Xs.shape[0], p.inv.shape[0])) for p in passes]
    sse = np.concatenate([p.sse(est._map(unit / w), Xs, Ys, row_out=r) for w, p, r in zip(widths, passes, rows)])
    R = np.hstack(rows)
    return np.vstack([sse[None, :], R.T @ R])


def _paired_standard_errors(sums, products, stats, alpha_index, n_targets):
    """Per width, the standard error of the mean per-row difference of its squared LOO residuals
    (at its chosen alpha, averaged over the targets, in y's units) to those of the width of least
    error: from the chunk sums of :func:`_chunk_loo` (``moments=True``), as one machine computes it
    from the rows (:func:`rffkern.ridge.paired_standard_error`) up to rounding."""
    n_alphas = sums.shape[0] // len(stats)
    cols = [k * n_alphas + a for k, a in enumerate(alpha_index)]
    unit = [s.target_scale ** 2 / n_targets for s in stats]  # a row's R2 sum -> its loss in y's units
    means = [sums[c] * u for c, u in zip(cols, unit)]
    n = stats[0].rows
    best = int(np.argmin([m / n for m in means]))
    out = []
    for k, (c, u) in enumerate(zip(cols, unit)):
        cb, ub = cols[best], unit[best]
        sum_d = means[k] - means[best]
        sum_d2 = products[c, c] * u * u + products[cb, cb] * ub * ub - 2.0 * products[c, cb] * u * ub
        var = max(sum_d2 - sum_d * sum_d / n, 0.0) / (n - 1) if n > 1 else float("nan")
        out.append(float(np.sqrt(var / n)))
    return out


def _aligned_targets(y, X):
    """y as a Dask array with X's row chunks."""
    import dask.array as da

    if any(math.isnan(c) for c in X.chunks[0]):
        raise ValueError("X has unknown chunk sizes; call X.compute_chunk_sizes() first")
    if not is_dask_array(y):
        y = np.asarray(y)
        if y.shape[:1] != X.shape[:1]:
            raise ValueError(f"X has {X.shape[0]} samples but y has {y.shape[0] if y.ndim else 0}")
        return da.from_array(y, chunks=(X.chunks[0],) + y.shape[1:])
    if y.shape[:1] != X.shape[:1]:
        raise ValueError(f"X has {X.shape[0]} samples but y has {y.shape[0] if y.ndim else 0}")
    return y.rechunk((X.chunks[0],) + y.shape[1:])


def _head_sample(X, rng, y=None):
    """At most SAMPLE_ROWS rows: the first rows of chunks taken in a random order, from at most
    SAMPLE_CHUNKS of them when the chunks are large enough (lazy); with ``y`` (a Dask array chunked
    by rows as X), ``(X rows, y rows)``, the same rows of each."""
    import dask.array as da

    sizes = X.chunks[0]
    per = math.ceil(SAMPLE_ROWS / min(len(sizes), SAMPLE_CHUNKS))
    picked, total = [], 0
    for i in rng.permutation(len(sizes)):
        take = min(sizes[i], per, SAMPLE_ROWS - total)
        if take > 0:
            picked.append((int(i), take))
            total += take
        if total >= SAMPLE_ROWS:
            break

    def rows(A):
        return da.concatenate([A.blocks[i][:take] for i, take in picked]) if picked else A[:0]

    return rows(X) if y is None else (rows(X), rows(y))


def fit_ridge(est, X, y):
    """Fit ``RFFRidge`` / ``RFFRidgeClassifier`` ``est`` on Dask arrays X (chunked by rows) and y.

    The same model as ``est.fit(X.compute(), y.compute())`` up to the order of floating-point sums
    (the tests hold it to 1e-10 relative in float64), except where the single-machine fit samples
    rows: the median heuristic and ``feature_importances_`` use the first rows of randomly chosen
    chunks. ``alpha_selection="validation"`` (a held-out split) is refused.
    """
    import dask
    import dask.array as da
    from sklearn.base import is_classifier
    from sklearn.utils.multiclass import check_classification_targets

    est._validate_params()
    est.__dict__.pop("_stats", None)  # a previous fit's Gram need not travel to the workers
    est.__dict__.pop("_first_chunk_constant", None)  # (a previous partial_fit's: this fit sees every row)
    est.__dict__.pop("feature_names_in_", None)
    X = _row_chunked(X, "fit")
    if X.dtype not in (np.float32, np.float64):
        X = X.astype(np.float64)
    y = _aligned_targets(y, X)
    alphas = as_alpha_list(est.alpha)
    classifier = is_classifier(est)
    if est.alpha_selection == "validation" and (len(alphas) > 1 or isinstance(est.length_scale, str)):
        raise ValueError("alpha_selection='validation' is not supported on Dask arrays; use 'loo' or 'gcv'")
    if classifier:
        if y.ndim != 1:
            raise ValueError(f"y must be 1-D class labels, got shape {y.shape}")
        classes = da.unique(y).compute()
        check_classification_targets(classes)
        est._set_classes(classes)
        n_targets = 1 if len(est.classes_) == 2 else len(est.classes_)
    else:
        if y.ndim not in (1, 2) or y.dtype.kind not in "biuf":
            raise ValueError(f"y must be numeric of shape (n,) or (n, n_targets), got {y.dtype} {y.shape}")
        n_targets = 1 if y.ndim == 1 else y.shape[1]
    ravel = n_targets == 1 if classifier else y.ndim == 1
    est.n_features_in_ = X.shape[1]

    rng = as_generator(est.random_state)
    unit = est._draw_map(X.shape[1], rng)  # the same draws as one machine
    x_blocks, y_blocks = list(X.to_delayed().ravel()), list(y.to_delayed().ravel())
    moments = _tree_reduce([dask.delayed(_chunk_moments, pure=True)(xb, yb, not classifier)
                            for xb, yb in zip(x_blocks, y_blocks)], _merge_moments)
    probe_rng = copy.deepcopy(rng)  # the probe's seed, before the sample's draws (which depend on the chunks)
    moments, (sample, y_sample) = dask.compute(moments, _head_sample(X, rng, y))
    if not moments.finite:
        raise ValueError("Input X or y contains NaN or infinity.")
    mean, scale = moments.mean_and_scale()
    d = X.shape[1]
    est._varying_inputs = ~moments.constant()[:d]  # the inputs that vary over all rows (importances)
    # "auto" with a searched width: the probe ridge on at most PROBE_ROWS gathered rows (RFFRidge.fit
    # compares the two standardizations in its own width search, which here would take passes over
    # every row); with a given width, True (a width in the units of each input's own deviation)
    probe = None
    if len(est._geometries()) > 1:
        probe = probe_standardization(est, X, y, moments, d, probe_rng, est.classes_ if classifier else None)
    moments.scale_inputs(est, d, probe)
    est._column_scale = moments.input_standardization(d, True, est.robust_inputs).scale  # the importances' units
    est._target_scaler = est._make_target_scaler()
    if est._target_scaler.normalize:
        est._target_scaler.mean_, est._target_scaler.scale_ = mean[d:], scale[d:]
    else:
        est._target_scaler.mean_, est._target_scaler.scale_ = np.zeros(n_targets), np.ones(n_targets)
    Xs_sample = est._standardized(sample)
    widths = est._candidate_widths(Xs_sample, rng)
    rng.integers(2**32 - 1)  # the held-out split's seed on one machine: keeps the later draws the same

    est_key = dask.delayed(est, pure=False)  # now with the standardization and the target scaler
    unit_key = dask.delayed(unit, pure=False)
    stats = _tree_reduce([dask.delayed(_chunk_grams, pure=True)(est_key, unit_key, widths, n_targets, xb, yb)
                          for xb, yb in zip(x_blocks, y_blocks)], _merge_gram_lists)
    (stats,) = dask.compute(stats)

    score = len(alphas) > 1 or len(widths) > 1
    # length_scale="auto": the one-standard-error width rule needs the spread of the per-row losses
    one_se = isinstance(est.length_scale, str) and est.length_scale == "auto" and len(widths) > 1
    products = None
    if score and est.alpha_selection == "loo":
        passes = [LooPass(s, alphas, est.fit_intercept) for s in stats]
        passes_key = dask.delayed(passes, pure=False, traverse=False)  # s x s each: one key, not per task
        sse = _tree_reduce([dask.delayed(_chunk_loo, pure=True)(est_key, unit_key, widths, passes_key, xb, yb,
                                                                one_se)
                            for xb, yb in zip(x_blocks, y_blocks)], _add_arrays)
        (sse,) = dask.compute(sse)
        if one_se:
            products, sse = sse[1:], sse[0]
            flat_sse, sse = sse, sse.reshape(len(widths), len(alphas))
        errors_per_width = [e / (s.n * n_targets) for e, s in zip(sse, stats)]
    elif score:
        errors_per_width = [gcv_errors(s, alphas, est.fit_intercept) for s in stats]
    else:
        errors_per_width = [None]

    fits, alpha_index = [], []
    est.width_errors_ = []
    for width, s, errors in zip(widths, stats, errors_per_width):
        alpha = alphas[0]
        if errors is not None:
            alpha, errors = choose_alpha(alphas, errors, s)
        alpha_index.append(list(alphas).index(alpha))
        error = np.inf if errors is None else float(np.min(errors))
        est.width_errors_.append(error)
        fits.append((alpha, errors, s))
    if products is not None:
        pick = one_se_width(est.width_errors_, _paired_standard_errors(flat_sse, products, stats, alpha_index,
                                                                       n_targets))
    else:
        pick = int(np.argmin(est.width_errors_))
    alpha, errors, s = fits[pick]
    # as the in-memory fit (rffkern.fit's RFFNet start)
    est._width_search = {est.standardize_: ([float(v) for v in widths], list(est.width_errors_))}
    est.length_scale_ = widths[pick]
    out = (*solve_ridge(s, alpha, est.fit_intercept), alpha, errors, s)
    est.weights_ = unit / est.length_scale_
    est._store(*out, ravel=ravel)
    est._store_derivative_norms(Xs_sample, rng=rng)
    if classifier:  # predict_proba's temperature, from the sample's leave-one-out decisions
        est._store_calibration(Xs_sample, est._targets(np.asarray(y_sample).reshape(-1)))
    return est
