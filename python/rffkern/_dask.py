"""Dask arrays in and out (the optional ``rffkern[dask]`` extra): the rows every distributed fit
is written on.

* :func:`map_rows`: ``transform`` / ``predict`` / ``predict_proba`` / ``decision_function`` of a Dask
  array chunked by rows is the NumPy method applied to every chunk, lazily (``map_blocks``): no
  compute, nothing gathered on the client.
* :class:`DaskRows`: X, y and the relative sample weights of a fit, chunked by rows. A pass over
  them is a function of one :class:`Block` (a chunk's rows, its weights and a row mask) that runs
  on the workers; the partial results are merged by a binary tree on the workers (:func:`add`), and
  the client receives one small result per pass (moments, a Gram, a score vector). The client runs
  the single-machine code on it, with the same random draws in the same order.
* :class:`Moments`: weighted column moments and ranges, mergeable (the standardization, the target
  scaling, the inputs constant on every row of positive weight).

The fits built on these pieces: :mod:`rffkern._dask_ridge` (RFFRidge and the ridge on any feature
map), :mod:`rffkern._dask_eerf`, :mod:`rffkern._dask_srff`, :mod:`rffkern._dask_adaptive` and
:mod:`rffkern._dask_rffnet`. Everything runs on Dask's current scheduler (a ``distributed.Client``
when one is active), so a lost worker's chunks are recomputed by Dask.

Dask is imported only once a Dask array has been seen: ``import rffkern`` works without it.
"""
from __future__ import annotations

import copy
import math
from dataclasses import dataclass

import numpy as np

from rffkern import _selection as selection
from rffkern._data import one_spread, power_of_two_scale
from rffkern._inputs import column_range, merge_ranges, scaling_from_statistics, set_input_scaling

__all__ = ["is_dask_array", "map_rows", "DaskRows", "Block", "Moments", "add", "tree_reduce", "row_chunked",
           "aligned_rows", "prepare_input", "head_sample", "sample_rows", "probe_standardization",
           "refuse_quantile"]

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


def row_chunked(X, method):
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
    row chunks: (n,), (n, n_out) or (n, n_out, k).
    """
    import dask

    X = row_chunked(X, getattr(fn, "__name__", "this method"))
    probe = np.asarray(fn(np.zeros((1, X.shape[1]), X.dtype)))
    # the estimator travels once per worker as one key of the graph, not once per task
    fn_key = dask.delayed(fn, pure=False)
    if probe.ndim == 1:
        return X.map_blocks(_apply, fn_key, drop_axis=1, dtype=probe.dtype,
                            meta=np.empty((0,), probe.dtype))
    if probe.ndim == 2:
        return X.map_blocks(_apply, fn_key, chunks=(X.chunks[0], probe.shape[1:]), dtype=probe.dtype,
                            meta=np.empty((0,) * probe.ndim, probe.dtype))
    return X.map_blocks(_apply, fn_key, new_axis=list(range(2, probe.ndim)),  # (n, n_out, 2): intervals
                        chunks=(X.chunks[0],) + tuple((k,) for k in probe.shape[1:]), dtype=probe.dtype,
                        meta=np.empty((0,) * probe.ndim, probe.dtype))


def _apply(block, fn):
    return fn(block)


# -- mergeable statistics -------------------------------------------------------------------------

class Moments:
    """Column weight, mean and sum of squared deviations of a chunk, mergeable (Chan et al.), and
    the columns' ranges over the rows of positive weight.

    ``sample_weight`` (relative, or None for 1 each) weights the mean and the deviation as
    :func:`rffkern._data.mean_scale_constant` does; ``n`` counts the rows, ``total`` their weight.
    Each chunk is divided by its power-of-two column scale first; merging brings both to the
    larger scale exactly, so values near the float limits do not overflow.
    """

    def __init__(self, A, sample_weight=None):
        A = np.asarray(A, np.float64)
        w = None if sample_weight is None else np.asarray(sample_weight, np.float64)
        self.n = A.shape[0]
        self.total = float(self.n if w is None else w.sum())
        self.finite = bool(np.isfinite(A).all())
        self.scale = power_of_two_scale(A, axis=0) if self.finite else np.ones(A.shape[1])
        positive = A if w is None else A[w > 0]
        if not self.total > 0 or not self.finite:
            self.mean, self.m2 = np.zeros(A.shape[1]), np.zeros(A.shape[1])
            self.lo, self.lo2, self.hi = column_range(A[:0])
        else:
            As = A / self.scale
            self.mean = As.mean(0) if w is None else np.average(As, axis=0, weights=w)
            self.m2 = ((As - self.mean) ** 2).sum(0) if w is None else w @ (As - self.mean) ** 2
            self.lo, self.lo2, self.hi = column_range(positive)  # (the constant and two-valued columns)

    def merged(self, other):
        out = copy.copy(self)
        out.finite = self.finite and other.finite
        out.n = self.n + other.n
        out.total = self.total + other.total
        out.scale = np.maximum(self.scale, other.scale)
        ra, rb = self.scale / out.scale, other.scale / out.scale
        ma, mb = self.mean * ra, other.mean * rb
        delta = mb - ma
        if out.total > 0:
            out.mean = ma + delta * (other.total / out.total)
            out.m2 = self.m2 * ra**2 + other.m2 * rb**2 + delta**2 * (self.total * other.total / out.total)
        out.lo, out.lo2, out.hi = merge_ranges((self.lo, self.lo2, self.hi), (other.lo, other.lo2, other.hi))
        return out

    def constant(self):
        """The columns that hold one value on every row of positive weight (none without rows)."""
        return self.lo == self.hi

    def columns(self, start, stop=None):
        """The moments of columns ``start:stop`` only (e.g. the targets after the inputs)."""
        out = copy.copy(self)
        part = slice(start, stop)
        out.mean, out.m2, out.scale = self.mean[part], self.m2[part], self.scale[part]
        out.lo, out.lo2, out.hi = self.lo[part], self.lo2[part], self.hi[part]
        return out

    def deviation(self):
        """The (weighted) population deviation of every column, 0 for a constant one."""
        return np.where(self.constant(), 0.0, np.sqrt(self.m2 / max(self.total, np.finfo(float).tiny)) * self.scale)

    def mean_and_scale(self):
        """As :func:`rffkern._data.mean_and_scale` of all rows (zero deviations replaced by 1; a
        constant column's value as its mean)."""
        sd = self.deviation()
        return np.where(self.constant(), self.lo, self.mean * self.scale), np.where(sd > 0, sd, 1.0)

    def input_standardization(self, d, standardize=True, robust=False, ignore_constant=True):
        """:func:`rffkern._inputs.scaling_from_statistics` of the first ``d`` columns (the inputs)
        of all rows: as :func:`rffkern._inputs.fit_input_scaling` in memory (an infinite scale for
        the constant inputs with ``ignore_constant``)."""
        inputs = self.columns(0, d)
        mean, scale = inputs.mean_and_scale()
        return scaling_from_statistics(mean, scale, inputs.constant(), (inputs.lo, inputs.lo2, inputs.hi),
                                       standardize, robust, ignore_constant)

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


class WeightSums:
    """What the relative weights need of the caller's weights: the largest, the least, the sum of
    the positive ones over the largest, and their count; mergeable. Checks the weights as
    :func:`rffkern._data.check_sample_weight` does."""

    def __init__(self, w):
        w = np.asarray(w, np.float64)
        if not np.isfinite(w).all():
            raise ValueError("sample_weight contains NaN or infinity")
        if (w < 0).any():
            raise ValueError(f"sample_weight must be non-negative; got {int((w < 0).sum())} negative weight(s)")
        positive = w[w > 0]
        self.top = float(positive.max()) if positive.size else 0.0
        self.least = float(w.min()) if w.size else np.inf
        self.sum = float(np.sum(positive / self.top)) if positive.size else 0.0
        self.count = int(positive.size)

    def merged(self, other):
        out = copy.copy(self)
        out.top = max(self.top, other.top)
        if out.top > 0:
            out.sum = (self.sum * (self.top / out.top) if self.top else 0.0) + \
                (other.sum * (other.top / out.top) if other.top else 0.0)
        out.least, out.count = min(self.least, other.least), self.count + other.count
        return out

    def unit(self):
        """The mean positive weight, as :func:`rffkern._data.relative_sample_weight` takes it."""
        if not self.count:
            raise ValueError("sample_weight sums to zero: at least one sample needs a positive weight")
        return self.top * (self.sum / self.count)


# -- passes over the rows ---------------------------------------------------------------------------

def tree_reduce(parts, combine):
    """A binary tree of ``combine`` over delayed ``parts`` (log2(n) levels, run on the workers)."""
    import dask

    combine = dask.delayed(combine, pure=True)
    while len(parts) > 1:
        parts = [combine(parts[i], parts[i + 1]) if i + 1 < len(parts) else parts[i]
                 for i in range(0, len(parts), 2)]
    return parts[0]


def add(a, b):
    """Sum of two partial results: arrays and numbers add, objects with ``merge`` (``GramStats``)
    or ``merged`` (:class:`Moments`) merge, tuples, lists and dicts add item by item, None is the
    empty sum."""
    if a is None:
        return b
    if b is None:
        return a
    if hasattr(a, "merge"):
        return copy.deepcopy(a).merge(b)  # a copy: a task's input may be reused on recomputation
    if hasattr(a, "merged"):
        return a.merged(b)
    if isinstance(a, dict):
        return {k: add(a[k], b[k]) for k in a}
    if isinstance(a, (tuple, list)):
        return type(a)(add(x, y) for x, y in zip(a, b))
    return a + b


@dataclass
class Block:
    """One chunk of a pass: its rows ``X`` and ``y``, their relative weights ``w`` (None: 1 each),
    the chunk's row ``mask`` (None: every row) and its ``index`` among the chunks."""

    X: np.ndarray
    y: np.ndarray
    w: np.ndarray | None
    mask: np.ndarray | None
    index: int

    def masked(self, *arrays):
        """Each of ``arrays`` (this chunk's rows, or None) restricted to the mask's rows
        (contiguous); the whole arrays without a mask."""
        if self.mask is None:
            return arrays if len(arrays) > 1 else arrays[0]
        out = tuple(None if A is None else np.ascontiguousarray(A[self.mask]) for A in arrays)
        return out if len(out) > 1 else out[0]

    def weights(self):
        """The weights of the mask's rows (None: 1 each)."""
        return self.masked(self.w)


def _run_block(fn, shared, xb, yb, wb, unit, mb, index):
    w = None if wb is None else np.asarray(wb, np.float64) / unit
    return fn(shared, Block(xb, yb, w, mb, index))


class DaskRows:
    """X and y chunked by rows, with the fit's relative sample weights, boolean row masks, and one
    reduction per pass (:meth:`reduce`). ``sample_weight`` (array-like or Dask array, None for 1
    each) is checked and made relative at once (one pass over it), as
    :func:`rffkern._data.relative_sample_weight` makes it in memory."""

    def __init__(self, X, y, sample_weight=None):
        self.X, self.y = X, y
        self.x_blocks = list(X.to_delayed().ravel())
        self.y_blocks = list(y.to_delayed().ravel())
        self.chunks = tuple(int(c) for c in X.chunks[0])
        self.n, self.d = int(X.shape[0]), int(X.shape[1])
        self.masks = {"all": [None] * len(self.chunks)}
        self._held = {}
        self.passes = 0
        self.w, self.weight_unit, self.w_blocks = None, 1.0, [None] * len(self.chunks)
        if sample_weight is not None:
            self._set_weights(sample_weight)

    def _set_weights(self, sample_weight):
        import dask

        w = aligned_rows(sample_weight, self.X, "sample_weight")
        if w.dtype.kind not in "biuf":
            raise TypeError(f"sample_weight must be numeric, got dtype {w.dtype}")
        if w.ndim != 1:
            raise ValueError(f"sample_weight must have shape ({self.n},) (one weight per sample), got shape {w.shape}")
        sums = tree_reduce([dask.delayed(WeightSums, pure=True)(b) for b in w.to_delayed().ravel()], add)
        (sums,) = dask.compute(sums)
        self.weight_unit = sums.unit()
        if sums.least == sums.top == self.weight_unit:  # all equal: the model of no weights
            return
        self.w = w
        self.w_blocks = list(w.to_delayed().ravel())

    @property
    def weighted(self):
        return self.w is not None

    def set_mask(self, name, mask):
        """Persist a boolean row mask with X's row chunks (``None``: every row)."""
        import dask.array as da

        if mask is None:
            self.masks[name] = [None] * len(self.chunks)
        else:
            m = da.from_array(np.asarray(mask, bool), chunks=(self.chunks,)).persist()
            self._held[name] = m  # holds the persisted chunks (futures) for the passes to come
            self.masks[name] = list(m.to_delayed().ravel())

    def reduce(self, fn, shared, *, mask="all"):
        """Delayed sum over the chunks of ``fn(shared, block)`` (a tree of :func:`add`)."""
        import dask

        from dask.base import tokenize

        key = dask.delayed(shared, pure=False, traverse=False)  # one key: travels once per worker
        part = dask.delayed(_run_block, pure=True)
        parts = []
        for i, args in enumerate(zip(self.x_blocks, self.y_blocks, self.w_blocks, self.masks[mask])):
            xb, yb, wb, mb = args
            # the task named after the chunk function (the dashboard's and the tests' view of a pass)
            name = f"{fn.__name__}-{tokenize(fn, key, *args, self.weight_unit, i)}"
            parts.append(part(fn, key, xb, yb, wb, self.weight_unit, mb, i, dask_key_name=name))
        return tree_reduce(parts, add)

    def compute(self, *delayed):
        import dask

        self.passes += 1
        return dask.compute(*delayed)

    def moments(self, with_y, extra=()):
        """Pass 1: the weighted :class:`Moments` of X (and y's columns after X's), finiteness;
        plus ``extra`` delayed values. A ``ValueError`` for NaN or infinity."""
        (moments, *rest) = self.compute(self.reduce(_chunk_moments, with_y), *extra)
        if not moments.finite:
            raise ValueError("Input X or y contains NaN or infinity.")
        return moments, rest

    def gather(self, rows):
        """``(X[rows], y[rows], w[rows] or None)`` on the client, rows in the given order (at most
        a few thousand); the weights relative."""
        # one array at a time: in one graph the workers held many more chunks at once (an
        # out-of-core fit's peak memory: 43 MB against 8 MB, tests/test_dask_outofcore.py's data)
        X_rows, y_rows = _gather_one(self.X, rows), _gather_one(self.y, rows)
        if self.w is None:
            return X_rows, y_rows, None
        return X_rows, y_rows, _gather_one(self.w, rows).astype(np.float64) / self.weight_unit

    def gather_x(self, rows):
        """``X[rows]`` on the client (at most a few thousand rows)."""
        return _gather_one(self.X, rows)

    def positive_rows(self):
        """The indices of the rows of positive weight (all rows without weights)."""
        import dask.array as da

        return np.arange(self.n) if self.w is None else np.asarray(da.flatnonzero(self.w > 0).compute())


def _gather_one(A, rows):
    """``A[rows]`` (rows in the given order) as a NumPy array on the client."""
    import dask

    rows = np.asarray(rows, np.intp)
    if rows.size == 0:
        return np.empty((0,) + A.shape[1:], A.dtype)
    (out,) = dask.compute(A[rows])
    return np.asarray(out)


def _chunk_moments(with_y, block):
    A = np.asarray(block.X, np.float64)
    if with_y:
        A = np.hstack([A, np.asarray(block.y, np.float64).reshape(A.shape[0], -1)])
    return Moments(A, block.w)


def aligned_rows(v, X, name="y"):
    """``v`` (y or sample_weight: a Dask array, an array-like or a scalar weight) as a Dask array
    with X's row chunks."""
    import dask.array as da

    if any(math.isnan(c) for c in X.chunks[0]):
        raise ValueError("X has unknown chunk sizes; call X.compute_chunk_sizes() first")
    if not is_dask_array(v):
        v = np.asarray(v)
        if name == "sample_weight" and v.ndim == 0:  # one weight for every sample
            v = np.full(X.shape[0], v)
        if v.shape[:1] != X.shape[:1]:
            raise ValueError(f"X has {X.shape[0]} samples but {name} has {v.shape[0] if v.ndim else 0}")
        return da.from_array(v, chunks=(X.chunks[0],) + v.shape[1:])
    if v.shape[:1] != X.shape[:1]:
        raise ValueError(f"X has {X.shape[0]} samples but {name} has {v.shape[0] if v.ndim else 0}")
    return v.rechunk((X.chunks[0],) + v.shape[1:])


def prepare_input(X, y, name, classifier, float_dtypes=(np.float32, np.float64)):
    """X row-chunked with a float dtype, y aligned to its chunks, both checked for shape."""
    X = row_chunked(X, "fit")
    if X.ndim != 2 or X.shape[0] < 1 or X.shape[1] < 1:
        raise ValueError(f"{name}.fit needs a non-empty 2-D X, got shape {X.shape}")
    if X.dtype not in float_dtypes:
        if X.dtype.kind not in "biuf":
            raise ValueError(f"X must be numeric, got dtype {X.dtype}")
        X = X.astype(np.float64)
    y = aligned_rows(y, X)
    if classifier:
        if y.ndim != 1:
            raise ValueError(f"y must be 1-D class labels, got shape {y.shape}")
    elif y.ndim not in (1, 2) or y.dtype.kind not in "biuf":
        raise ValueError(f"y must be numeric of shape (n,) or (n, n_targets), got {y.dtype} {y.shape}")
    return X, y


def sample_rows(n, max_samples, rng, within=None):
    """The rows the single-machine width rules subsample: ``rng.choice`` of ``max_samples`` out of
    ``n`` (of the rows ``within`` when given), drawn exactly as :func:`rffkern._sampling.knn_distances`
    and :func:`~rffkern._sampling.median_distance` draw them; all rows when there are few."""
    base = np.arange(n) if within is None else within
    if base.size > max_samples:
        return base[rng.choice(base.size, max_samples, replace=False)]
    return base


def head_sample(X, rng, *others):
    """At most SAMPLE_ROWS rows: the first rows of chunks taken in a random order, from at most
    SAMPLE_CHUNKS of them when the chunks are large enough (lazy); with ``others`` (Dask arrays
    chunked by rows as X, or None), a tuple of the same rows of X and of each."""
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
        if A is None:
            return None
        return da.concatenate([A.blocks[i][:take] for i, take in picked]) if picked else A[:0]

    return rows(X) if not others else (rows(X),) + tuple(rows(A) for A in others)


# -- the standardization ----------------------------------------------------------------------------

def refuse_quantile(standardize):
    """A ``ValueError`` for ``standardize="quantile"`` on Dask arrays."""
    if standardize == "quantile":
        raise ValueError("standardize='quantile' needs the order statistics of every row and is not supported "
                         "when X is a Dask array; use standardize='auto', True or 'global' (or fit on a NumPy array)")


def probe_standardization(est, rows, moments, d, rng, choose, classes=None, keep=None):
    """``(standardize_, standardize_errors_)`` of ``standardize="auto"`` on Dask rows: the
    in-memory rule ``choose`` (:func:`rffkern.ridge.choose_standardization`, an
    ``RFFRidge(PROBE_COMPONENTS)`` at its defaults comparing each input's own deviation with one
    pooled deviation) on at most ``PROBE_ROWS`` rows of positive weight drawn at random from all of
    ``rows`` (a :class:`DaskRows`) and gathered on the client; ``(True, None)`` without a
    comparison where the varying inputs have one spread (``moments`` of every row).

    The rows are drawn as ``choose`` draws them in memory, with a seed from a copy of ``rng`` (the
    estimator's draws stay those of any other ``standardize``), so the choice depends on neither
    the chunks nor the scheduler. The probe's targets are ``y`` for regression (the probe scales
    them itself) and the +-1 indicators of ``classes`` for labels. ``keep`` (sorted row indices ->
    the ones to keep), if given, drops drawn rows, such as RFFNet's validation rows. Not for other
    ``standardize`` values: returns None.
    """
    if est.standardize != "auto":
        return None
    inputs = moments.columns(0, d)
    if one_spread(inputs.mean_and_scale()[1], inputs.constant()):
        return True, None
    seed = int(copy.deepcopy(rng).integers(2**32 - 1))
    candidates = rows.positive_rows()
    drawn = candidates
    if candidates.size > selection.PROBE_ROWS:  # (read when called: the tests lower it)
        drawn = np.sort(np.random.default_rng(seed).choice(candidates, selection.PROBE_ROWS, replace=False))
    if keep is not None:
        drawn = keep(drawn)
    if drawn.size < 2:  # nothing to compare on (as a probe that cannot fit in memory)
        return True, None
    X_rows, y_rows, w_rows = rows.gather(drawn)
    if classes is None:
        Y = np.asarray(y_rows, np.float64).reshape(len(drawn), -1)
    else:
        from sklearn.preprocessing import label_binarize
        Y = label_binarize(np.asarray(y_rows), classes=np.asarray(classes), neg_label=-1, pos_label=1)
        Y = Y.astype(np.float64)
    return choose(np.asarray(X_rows, np.float64), Y, w_rows, seed, est.n_jobs, est.robust_inputs, quantile=False)


def class_counts(y):
    """The classes of the labels ``y`` (a Dask array) and their counts, delayed."""
    import dask.array as da

    return da.unique(y, return_counts=True)


def check_labels(classes, name):
    """As the in-memory classifiers check their labels: classification targets of 2 classes or more."""
    from sklearn.utils.multiclass import check_classification_targets

    check_classification_targets(classes)
    if len(classes) < 2:
        raise ValueError(f"the classifier needs samples of at least 2 classes; got {len(classes)} class")
