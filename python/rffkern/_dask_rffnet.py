"""RFFNet on Dask arrays: data-parallel training where the rows stay on the workers.

``RFFNetRegressor.fit`` / ``RFFNetClassifier.fit`` on a Dask array chunked by rows call
:func:`fit_rffnet`. The algorithm is local SGD with parameter averaging once per epoch:

* The chunks are split into ``n_shards`` contiguous groups (shards). In every epoch each shard
  runs the compiled epoch (:func:`rffkern.kernels.train_epoch`, mini-batch Adam/SGD + prox) over
  its chunks one after the other, in an order drawn for the epoch, starting from the same
  parameters (theta, B and the optimiser moments). A chunk's task standardizes and encodes its own
  rows, so only the parameters travel between tasks (on the same worker when the scheduler keeps
  a shard there).
* The shards' parameters and Adam moments are averaged on the client, weighted by the rows each
  trained on (the chains are submitted in waves of ``CHUNKS_PER_WAVE`` chunks per shard, so a
  worker never holds more than a few chunks: see the out-of-core test). The averaged model is
  evaluated on the held-out rows of every chunk (summed by a tree reduction on the workers): only
  parameters and a few sums travel, and the client runs the single-machine schedule (best-epoch
  checkpoint, adaptive learning rate, early stopping).

With one shard this is exactly sequential mini-batch training over the chunks (the model moves
from chunk to chunk); with ``K`` shards the ``K`` trajectories run in parallel and each epoch
would make about ``1/K`` of the sequential progress per epoch (each walks ``n/K`` rows, and the
average of their displacements is about one of them), so the shards step with ``K`` times the
learning rate (the linear scaling rule of large-batch training; ``learning_rate_`` reports the
unscaled rate). With 2 shards both rates reach the single-machine test R^2, and early stopping
fires sooner with the scaled one (docs/design_notes.rst); larger ``K`` is untested.

The held-out rows for early stopping are drawn per chunk (``ceil(validation_fraction * rows)``
of every chunk, by a seed drawn from ``random_state`` and the chunk's index; not stratified), so
they never leave their worker either. The model is determined by ``random_state``, the chunking
and ``n_shards`` (bit for bit, whichever worker runs which task, and whatever the thread count).

The regressor's closing fit (``refit_coef``: ridge on ``refit_components`` features of the
learned kernel, the penalty by exact leave-one-out) runs on every row with the distributed Gram
and leave-one-out passes of :mod:`rffkern._dask_ridge` (two passes more), as the single-machine
fit does; the check of the kernel's width before it runs on the client, on at most
``rffkern.rffnet.CLOSING_CHECK_ROWS`` rows gathered from the workers. The classifier's
(penalised logistic / softmax regression, whose L-BFGS passes over the features some hundreds of
times) runs on the client, on the rows gathered from the workers: every
row, or above ``rffkern.rffnet.CLOSING_MAX_ROWS`` (50,000) a stratified random subset of that many,
as a single-machine fit caps its closing fit; its penalty is chosen on 3 interleaved folds of them.

The number of shards is read from the Dask config key ``"rffkern.rffnet-shards"``
(``dask.config.set({"rffkern.rffnet-shards": 4})``); by default it is the number of workers of
the current ``distributed.Client`` (1 without one), capped by the number of chunks.

Also here: :func:`from_npy`, a Dask array over a ``.npy`` file that each task memory-maps, copies
its rows from and unmaps, so a worker's memory holds a few chunks, not the file.
"""
from __future__ import annotations

import copy
import dataclasses
import math
import time

import numpy as np
from sklearn.base import is_classifier
from sklearn.utils.multiclass import check_classification_targets

from rffkern._dask import DaskRows, Moments, aligned_rows, probe_standardization, refuse_quantile, row_chunked, tree_reduce
from rffkern._dask_ridge import fit_ridge_map
from rffkern._data import standardized_rows
from rffkern._losses import mean_loss
from rffkern._progress import ProgressLog
from rffkern._rffnet_training import (MAX_LR_DECAYS, N_INIT_FINALISTS, REFIT_ALPHAS, START_EPOCHS, EpochRunner,
                                      Schedule, TrainingState, best_of_starts, check_initial_relevances, median_init,
                                      r2_from_sums, training_targets, zero_constant_relevances)
from rffkern._ridge_solvers import FourierFeatureMap
from rffkern._validation import as_generator, resolve_n_threads

__all__ = ["fit_rffnet", "from_npy", "CONFIG_KEY"]

#: Dask config key for the number of shards (parallel trajectories) of the distributed fit.
CONFIG_KEY = "rffkern.rffnet-shards"
#: Chunks each shard trains on per graph submitted (bounds the chunks a worker holds at once).
CHUNKS_PER_WAVE = 4


# -- reading a .npy file out of core --------------------------------------------------------------

def from_npy(path, chunk_rows):
    """A Dask array over a 2-D ``.npy`` file, read chunk by chunk from a memory map.

    Every task opens the file with ``numpy.load(mmap_mode="r")``, copies its rows and drops the
    map, so the graph holds only the path (``dask.array.from_array`` of a ``numpy.memmap`` would
    pickle the whole file into it) and a worker's resident memory holds the chunks it is working on.

    Parameters
    ----------
    path : str or path-like
        A ``.npy`` file holding a C-ordered 2-D array (or a 1-D one, chunked the same way).
    chunk_rows : int
        Rows per chunk (the last chunk may be shorter).

    Returns
    -------
    dask.array.Array
        Of the file's shape and dtype, chunked by ``chunk_rows`` rows (all columns in one chunk).
    """
    import dask.array as da

    path = str(path)
    head = np.load(path, mmap_mode="r")
    shape, dtype = head.shape, head.dtype
    del head
    if len(shape) not in (1, 2) or shape[0] == 0:
        raise ValueError(f"from_npy expects a non-empty 1-D or 2-D array, got shape {shape}")
    if not (isinstance(chunk_rows, (int, np.integer)) and chunk_rows >= 1):
        raise ValueError(f"chunk_rows must be a positive integer, got {chunk_rows!r}")
    starts = list(range(0, shape[0], int(chunk_rows)))
    chunks = (tuple(min(int(chunk_rows), shape[0] - s) for s in starts),) + tuple((c,) for c in shape[1:])
    return da.map_blocks(_read_rows, path=path, dtype=dtype, chunks=chunks, meta=np.empty((0,) * len(shape), dtype))


def _read_rows(path, block_info=None):
    (start, stop) = block_info[None]["array-location"][0]
    mm = np.load(path, mmap_mode="r")
    try:
        return np.array(mm[start:stop])
    finally:
        mm._mmap.close()  # unmap now, not whenever the memmap is collected
        del mm


# -- what every chunk task needs ------------------------------------------------------------------

class _ChunkContext:
    """The fitted pieces a chunk task needs (small: the map, the statistics, the encoder)."""

    def __init__(self, est, runner, classifier, split_seed, dtype):
        self.runner = runner
        self.classifier = classifier
        self.split_seed = split_seed
        self.validation_fraction = est.validation_fraction
        self.dtype = dtype
        self.x_mean = self.x_scale = self.intercept = self.y_scale = None
        self.encoder = est._encoder if classifier else None
        self.n_classes = len(est.classes_) if classifier else None

    def standardize_as(self, est):
        """Standardize the rows and targets as the estimator's fitted statistics say."""
        self.x_mean, self.x_scale, self.intercept, self.y_scale = est.x_mean_, est.x_scale_, est.intercept_, est.y_scale_

    def targets(self, yb):
        """Float64 targets (one-hot / 0-1 codes for classifiers), shape (m, n_outputs)."""
        if not self.classifier:
            yb = np.asarray(yb, np.float64)
            return yb.reshape(yb.shape[0], -1)
        assert self.encoder is not None and self.n_classes is not None  # set for classifiers
        codes = self.encoder.transform(np.asarray(yb).ravel())
        if self.n_classes == 2:
            return codes.reshape(-1, 1).astype(np.float64)
        Y = np.zeros((codes.size, self.n_classes))
        Y[np.arange(codes.size), codes] = 1.0
        return Y

    def split(self, index, m):
        """(training rows, validation rows) of chunk ``index`` of ``m`` rows (sorted indices)."""
        if self.split_seed is None:
            return np.arange(m), np.arange(0)
        n_val = math.ceil(self.validation_fraction * m)
        perm = np.random.default_rng([self.split_seed, index]).permutation(m)
        return np.sort(perm[n_val:]), np.sort(perm[:n_val])

    def training_rows(self, rows, chunks):
        """The training rows among the sorted row indices ``rows`` of X with row chunks ``chunks``
        (:meth:`split` of each chunk they fall in)."""
        offsets = np.cumsum((0,) + tuple(chunks))
        kept = []
        for i in np.unique(np.searchsorted(offsets, rows, side="right") - 1):
            start, m = int(offsets[i]), int(chunks[i])
            local = rows[(rows >= start) & (rows < start + m)] - start
            kept.append(start + local[np.isin(local, self.split(int(i), m)[0])])
        return np.concatenate(kept) if kept else rows[:0]

    def prepared(self, index, Xb, yb, part):
        """Standardized X and training targets of one part ("train" / "val") of a chunk."""

        rows = self.split(index, Xb.shape[0])[0 if part == "train" else 1]
        Xs = standardized_rows(np.asarray(Xb)[rows], self.x_mean, self.x_scale, self.dtype)
        Y = training_targets(self.targets(np.asarray(yb)[rows]), self.intercept, self.y_scale, self.dtype)
        return np.ascontiguousarray(Xs), Y


# -- tasks ----------------------------------------------------------------------------------------

def _chunk_statistics(ctx, index, Xb, yb):
    """Moments of the training rows (X and, for regression, Y), their per-feature range, the
    validation targets' sums (for R^2), and label checks."""
    Xb = np.asarray(Xb)
    train, val = ctx.split(index, Xb.shape[0])
    Y = ctx.targets(yb)
    Xt = Xb[train].astype(np.float64)
    A = Xt if ctx.classifier else np.hstack([Xt, Y[train]])
    lo = Xt.min(0) if len(train) else np.full(Xb.shape[1], np.inf)
    hi = Xt.max(0) if len(train) else np.full(Xb.shape[1], -np.inf)
    finite = bool(np.isfinite(Xb).all()) and bool(np.isfinite(Y).all())
    lo_all = Xb.min(0).astype(np.float64) if Xb.shape[0] else np.full(Xb.shape[1], np.inf)
    hi_all = Xb.max(0).astype(np.float64) if Xb.shape[0] else np.full(Xb.shape[1], -np.inf)
    return dict(moments=Moments(A), lo=lo, hi=hi, lo_all=lo_all, hi_all=hi_all, finite=finite, n_val=len(val))


def _merge_statistics(a, b):
    return dict(moments=a["moments"].merged(b["moments"]), lo=np.minimum(a["lo"], b["lo"]),
                hi=np.maximum(a["hi"], b["hi"]), lo_all=np.minimum(a["lo_all"], b["lo_all"]),
                hi_all=np.maximum(a["hi_all"], b["hi_all"]), finite=a["finite"] and b["finite"],
                n_val=a["n_val"] + b["n_val"])


def _val_target_sums(ctx, index, Xb, yb):
    """Sum and sum of squares per output of the validation targets (training units)."""
    _, Y = ctx.prepared(index, Xb, yb, "val")
    Y = Y.astype(np.float64)
    return np.stack([Y.sum(0), (Y ** 2).sum(0)])


def _add(a, b):
    return a + b


class _Params:
    """theta, B, the optimiser state, and the rows / loss accumulated by a shard this epoch."""

    def __init__(self, theta, coef, state):
        self.theta, self.coef, self.state = theta, coef, state
        self.rows = 0
        self.loss_sum = 0.0


def _train_chunk(ctx, params, index, epoch_seed, learning_rate, Xb, yb):
    """One epoch of mini-batch steps on the training rows of one chunk, from a copy of params."""
    out = copy.deepcopy(params)  # a task must not modify its input (Dask may recompute it)
    Xs, Y = ctx.prepared(index, Xb, yb, "train")
    if Xs.shape[0] == 0:
        return out
    rng = np.random.default_rng([epoch_seed, index])
    loss = ctx.runner.run(Xs, Y, out.theta, out.coef, out.state, rng, learning_rate)
    out.rows += Xs.shape[0]
    out.loss_sum += float(loss) * Xs.shape[0]
    return out


def _average(*shards):
    """The row-weighted average of the shards' parameters and Adam moments (fixed order)."""
    shards = [s for s in shards if s.rows > 0] or list(shards[:1])
    w = np.array([s.rows for s in shards], np.float64)
    w = w / w.sum() if w.sum() > 0 else np.full(len(shards), 1.0 / len(shards))
    first = shards[0]

    def mean(get):
        acc = sum(wi * get(s).astype(np.float64) for wi, s in zip(w, shards))
        return np.ascontiguousarray(acc, dtype=get(first).dtype)

    theta, coef = mean(lambda s: s.theta), mean(lambda s: s.coef)
    state = copy.deepcopy(first.state)
    for block in ("joint", "theta_block"):
        target = getattr(state, block)
        if target is None:
            continue
        for name in ("m_coef", "v_coef", "m_theta", "v_theta"):
            setattr(target, name, mean(lambda s, b=block, a=name: getattr(getattr(s.state, b), a)))
        target.step = int(round(sum(wi * getattr(s.state, block).step for wi, s in zip(w, shards))))
    out = _Params(theta, coef, state)
    out.rows = int(sum(s.rows for s in shards))
    out.loss_sum = float(sum(s.loss_sum for s in shards))
    return out


def _validate_chunk(ctx, params, index, Xb, yb):
    """Loss sum, per-output squared errors and correct predictions of params on the chunk's
    validation rows: [loss_sum, n_correct, sse_1..sse_m]."""
    Xs, Y = ctx.prepared(index, Xb, yb, "val")
    m = Y.shape[1]
    if Xs.shape[0] == 0:
        return np.zeros(2 + m)
    F = ctx.runner.outputs(Xs, params.theta, params.coef).astype(np.float64)
    Y = Y.astype(np.float64)
    loss_sum = mean_loss(F, Y, ctx.runner.loss) * Xs.shape[0]
    if m == 1:
        correct = np.sum((Y[:, 0] > 0.5) == (F[:, 0] > 0))
    else:
        correct = np.sum(Y.argmax(1) == F.argmax(1))
    return np.concatenate([[loss_sum, correct], ((F - Y) ** 2).sum(0)])


# -- the fit ---------------------------------------------------------------------------------------

def _shared(obj):
    """obj as a task argument sent once: scattered to every worker of the current distributed
    client (kept there for the whole fit), else one key of the graph."""
    import dask

    try:
        from distributed import get_client
        client = get_client()
    except (ImportError, ValueError):
        return dask.delayed(obj, pure=False)
    if dask.config.get("scheduler", None) not in (None, "dask.distributed", "distributed"):
        return dask.delayed(obj, pure=False)  # another scheduler was chosen explicitly
    return client.scatter(obj, broadcast=True, hash=False)


def _default_shards(n_chunks):
    import dask

    n = dask.config.get(CONFIG_KEY, None)
    if n is None:
        try:
            from distributed import get_client
            n = len(get_client().scheduler_info()["workers"])
        except (ImportError, ValueError):
            n = 1
    if not (isinstance(n, (int, np.integer)) and not isinstance(n, bool) and n >= 1):
        raise ValueError(f"dask config {CONFIG_KEY!r} must be a positive integer, got {n!r}")
    return max(1, min(int(n), n_chunks))


def _shards(n_chunks, n_shards):
    """Contiguous groups of chunk indices, as even as possible."""
    bounds = np.linspace(0, n_chunks, n_shards + 1).round().astype(int)
    return [list(range(bounds[k], bounds[k + 1])) for k in range(n_shards) if bounds[k + 1] > bounds[k]]


class _DaskStart:
    """One start of the data-parallel training: its map (on the workers through ``ctx_key``), its
    parameters, its learning-rate schedule and early-stopping state, and its curves."""

    def __init__(self, weights, offsets, ctx_key, params, epoch_rng, learning_rate):
        self.weights, self.offsets, self.ctx_key, self.params = weights, offsets, ctx_key, params
        self.epoch_rng = epoch_rng
        self.schedule = Schedule(float(learning_rate))
        self.best_epoch = None
        self.n_iter = self.t = 0
        self.loss_curve: list = []
        self.validation_loss_curve: list = []
        self.validation_scores: list = []


class _DaskFit:
    """What every epoch of every start reads: the estimator and its progress log, the chunks, the
    shards, and the validation rows' count and target sums (None without a validation split)."""

    def __init__(self, est, log, ctx, blocks, groups, n_val, sst):
        self.est, self.log, self.ctx = est, log, ctx
        self.blocks, self.groups = blocks, groups
        self.n_val, self.sst = n_val, sst

    @property
    def use_validation(self):
        return self.sst is not None

    def score(self, val):
        """The validation score of an epoch from its :func:`_validate_chunk` sums: accuracy, or R^2."""
        if self.ctx.classifier:
            return float(val[1] / self.n_val)
        return r2_from_sums(val[2:], self.sst)


def _per_chunk(blocks, merge, func, *args):
    """``func(*args, index, Xb, yb)`` of every chunk, merged by a tree reduction on the workers and
    gathered."""
    import dask

    (total,) = dask.compute(tree_reduce([dask.delayed(func, pure=True)(*args, i, xb, yb)
                                         for i, (xb, yb) in enumerate(blocks)], merge))
    return total


def fit_rffnet(est, X, y, choose):
    """Fit ``RFFNetRegressor`` / ``RFFNetClassifier`` ``est`` on Dask arrays, data-parallel.

    Parameters
    ----------
    est : RFFNetRegressor or RFFNetClassifier
        Its parameters are used as in ``fit``; ``init`` must be ``"median"`` (the median distance
        is taken on the first at most 2000 rows), ``"constant"`` or an array (``"regressor"`` and
        ``"restarter"`` need the whole data set on one machine). ``n_init`` as in memory: the
        starts each train ``START_EPOCHS`` data-parallel epochs, the best two as many more, and
        the better goes on.
        ``n_jobs=None`` runs each task on one thread (Dask runs one task per worker thread);
        an integer is the compiled kernels' thread count inside every task.
    X : dask.array.Array of shape (n_samples, n_features)
        Chunked by rows only (whole rows in every chunk), known chunk sizes.
    y : dask.array.Array or array-like of shape (n_samples,) or (n_samples, n_outputs)
        Rechunked like X's rows.
    choose : callable
        The standardization rule of ``standardize="auto"`` (the probe ridge's choice), passed to
        :func:`rffkern._dask.probe_standardization`.

    Returns
    -------
    est : the estimator, fitted
        With the attributes of a single-machine fit (``loss_curve_`` holds the row-weighted mean
        training loss of the shards per epoch) and ``n_shards_``, the number of parallel
        trajectories used.

    Raises
    ------
    ValueError
        Non-finite values, fewer than 2 training rows, a column-chunked X, an unsupported
        ``init``, or targets that would overflow the training dtype.
    """
    X, y = _checked_inputs(est, X, y)
    dtype = np.dtype(est.dtype)
    classifier = is_classifier(est)
    log = ProgressLog(est, est.verbose)
    y, n_out = _encoded_targets(est, y, classifier)
    d = X.shape[1]
    est.n_features_in_ = d
    rng, coef, runner, split_seed = _draws(est, d, n_out, dtype)
    ctx = _ChunkContext(est, runner, classifier, split_seed, dtype)
    blocks = list(zip(X.to_delayed().ravel(), y.to_delayed().ravel()))  # (X block, y block) per chunk

    stats = _statistics(est, ctx, blocks, X.shape[0])
    constant = _standardize_inputs(est, ctx, X, y, stats, rng, choose, log)
    est.intercept_, est.y_scale_ = _target_scaling(est, stats["moments"], d, n_out, classifier)
    ctx.standardize_as(est)
    theta = _initial_relevances(est, X, stats, constant, dtype)

    ctx_key = _shared(ctx)  # sent again: it now holds the statistics
    use_validation = split_seed is not None and stats["n_val"] > 0
    sst = _validation_sst(blocks, ctx_key, stats["n_val"]) if use_validation else None
    fit = _DaskFit(est, log, ctx, blocks, _shards(len(blocks), _default_shards(len(blocks))), stats["n_val"], sst)
    est.n_shards_ = len(fit.groups)
    epoch_rng = np.random.default_rng(int(rng.integers(2**32 - 1)))
    est._rng = rng
    log.event(f"data-parallel fit: {len(blocks)} chunks in {len(fit.groups)} shard(s), "
              f"{stats['moments'].n} training rows, {stats['n_val']} validation rows")

    run = _DaskStart(est.weights_, est.offsets_, ctx_key, _Params(theta, np.ascontiguousarray(coef),
                     TrainingState(coef.shape, d, dtype, est._palm)), epoch_rng, est.learning_rate)
    run = _best_start(fit, run, rng, theta, n_out)
    _epochs(fit, run, est.max_iter - run.n_iter)
    _store_run(est, run)
    est.refit_alpha_ = None
    if est.refit_coef:
        (_closing_softmax if classifier else _closing_ridge)(est, X, y)
    return est


# -- the steps of the fit ---------------------------------------------------------------------------

def _checked_inputs(est, X, y):
    """X row-chunked and numeric, y aligned with its rows; the parameters validated as ``fit`` does."""
    est._validate_params()
    if isinstance(est.init, str) and est.init not in ("constant", "median"):
        raise ValueError(f"init={est.init!r} is not supported on Dask arrays (it needs all the rows on "
                         "one machine); use init='median', 'constant' or an array of initial relevances")
    est.__dict__.pop("feature_names_in_", None)
    X = row_chunked(X, "fit")
    if X.shape[0] == 0:
        raise ValueError("Found array with 0 sample(s) (shape=(0, ...)) while a minimum of 1 is required.")
    if X.dtype.kind not in "biuf":
        raise ValueError(f"X must be numeric, got dtype {X.dtype}")
    return X, aligned_rows(y, X)


def _encoded_targets(est, y, classifier):
    """(y, n_outputs): a classifier's labels 1-D, its classes and encoder fitted (one pass over y);
    a regressor's targets checked numeric. Sets the training loss."""
    import dask.array as da

    if classifier:
        if y.ndim == 2 and y.shape[1] == 1:
            y = y[:, 0]
        if y.ndim != 1:
            raise ValueError(f"y must be 1-D (one label per sample) for {type(est).__name__}, got shape {y.shape}")
        classes = da.unique(y).compute()
        check_classification_targets(classes)
        est._encode_targets(classes, first_call=True)  # classes_, the encoder, the 2-class check
        n_out = 1 if len(est.classes_) == 2 else len(est.classes_)
        est._loss = "logistic" if n_out == 1 else "softmax"
        return y, n_out
    if y.ndim not in (1, 2) or y.dtype.kind not in "biuf":
        raise ValueError(f"y must be numeric of shape (n,) or (n, n_outputs), got {y.dtype} {y.shape}")
    est._y_1d = y.ndim == 1
    est._loss = "squared"
    return y, 1 if y.ndim == 1 else y.shape[1]


def _draws(est, d, n_out, dtype):
    """The draws in the single-machine order: W and b (stored), B, then the split's seed (None
    without early stopping). Returns the generator, B, the epoch runner and the seed."""
    rng = as_generator(est.random_state)
    est.weights_, est.offsets_ = est._draw_map(d, est.n_components, rng, dtype)
    coef = _output_weights(est.n_components, n_out, rng, dtype)
    est.scale_ = est._scale_value()
    split_seed = int(rng.integers(2**32 - 1)) if est.early_stopping else None
    runner = EpochRunner(weights=est.weights_, offsets=est.offsets_, scale=est.scale_, loss=est._loss,
                         solver=est.solver, batch_size=est.batch_size, alpha=est.alpha,
                         relevance_penalty=est.relevance_penalty,
                         n_threads=1 if est.n_jobs is None else resolve_n_threads(est.n_jobs))
    return rng, coef, runner, split_seed


def _output_weights(n_components, n_out, rng, dtype):
    """Initial output weights B, uniform in +-1/sqrt(n_components) (as in memory)."""
    bound = 1.0 / np.sqrt(n_components)
    return rng.uniform(-bound, bound, (n_components, n_out)).astype(dtype)


def _statistics(est, ctx, blocks, n_samples):
    """Pass 1: the merged :func:`_chunk_statistics` of every chunk, checked finite and with at least
    2 training rows."""
    stats = _per_chunk(blocks, _merge_statistics, _chunk_statistics, _shared(ctx))
    if not stats["finite"]:
        raise ValueError("Input X or y contains NaN or infinity.")
    n_train = stats["moments"].n
    if n_train < 2:
        raise ValueError(f"n_samples={n_samples} leaves {n_train} training row(s) after holding out "
                         f"validation_fraction={est.validation_fraction} of every chunk (at least 2 "
                         "needed); pass more samples, larger chunks or early_stopping=False")
    return stats


def _standardize_inputs(est, ctx, X, y, stats, rng, choose, log):
    """The inputs' standardization from the training rows' moments (``"auto"``: the probe ridge's
    choice) and their clipping range, set on the estimator. Returns the mask of the inputs constant
    on the training rows (all False without standardization)."""
    d = X.shape[1]
    moments = stats["moments"]
    constant = moments.constant()[:d] if est.standardize else np.zeros(d, dtype=bool)
    if est.standardize:
        # "auto": the probe ridge on the training rows among at most PROBE_ROWS rows drawn from all
        # of X (in memory, at most PROBE_ROWS training rows), its seed from a copy of rng
        probe = probe_standardization(est, DaskRows(X, y), moments, d, rng, choose,
                                      est.classes_ if ctx.classifier else None,
                                      keep=lambda rows: ctx.training_rows(rows, X.chunks[0]))
        est.standardize_, est.standardize_errors_ = probe or (est.standardize, None)
        if probe is not None:
            log.step("standardize", 1, 1, f"{est.standardize_!r} (probe ridge)")
    else:
        est.standardize_, est.standardize_errors_ = False, None
    refuse_quantile(est.standardize_)
    # as RFFNet's in-memory fit (a constant input's scale 1)
    est._use_input_scaling(moments.input_standardization(d, est.standardize_, est.robust_inputs, ignore_constant=False),
                           moments.input_standardization(d, True, False, ignore_constant=False).scale,
                           constant)
    if est.x_min_ is not None:  # clipped to the range of every row, the validation rows' too (as in memory)
        est.x_min_, est.x_max_ = stats["lo_all"], stats["hi_all"]
    return constant


def _target_scaling(est, moments, d, n_out, classifier):
    """(intercept, y_scale) of the training targets: 0 and 1 for a classifier's codes; for a
    regressor the training rows' mean (``fit_intercept``) and deviation (``normalize_y``; without
    an intercept, the root mean square about 0)."""
    if classifier:
        return np.zeros(n_out), np.ones(n_out)
    mean, sd = moments.mean_and_scale()
    y_mean, y_sd = mean[d:], sd[d:]
    intercept = y_mean if est.fit_intercept else np.zeros(n_out)
    if not est.normalize_y:
        return intercept, np.ones(n_out)
    if est.fit_intercept:
        return intercept, y_sd
    raw_sd = np.sqrt(moments.m2 / moments.n) * moments.scale
    rms = np.sqrt(raw_sd[d:] ** 2 + y_mean ** 2)
    return intercept, np.where(rms > 0, rms, 1.0)


def _initial_relevances(est, X, stats, constant, dtype):
    """theta from ``init``, 0 for the inputs constant on the training rows."""
    d = X.shape[1]
    if isinstance(est.init, str) and est.init == "median":  # 3 / median distance, on the first (at most 2000) standardized rows
        head = np.asarray(X[:min(X.shape[0], 2000)].compute(), dtype=np.float64)
        theta = median_init(standardized_rows(head, est.x_mean_, est.x_scale_, dtype))
    elif isinstance(est.init, str):  # "constant": (max - min) / d of the standardized training rows
        theta = ((stats["hi"] - stats["lo"]) / est.x_scale_ / d).astype(dtype)
    else:
        check_initial_relevances(est.init, d)
        theta = np.asarray(est.init, dtype=dtype)
    return zero_constant_relevances(np.array(theta, dtype=dtype, order="C"), constant)


def _validation_sst(blocks, ctx_key, n_val):
    """Per output, the validation targets' sum of squares about their mean (R^2's denominator)."""
    sums = _per_chunk(blocks, _add, _val_target_sums, ctx_key)
    return sums[1] - sums[0] ** 2 / n_val


def _best_start(fit, run, rng, theta, n_out):
    """The start that trains on (``run`` itself with one start): as RFFNet's in-memory fit, the
    start of least monitored loss after START_EPOCHS epochs, then a second round of as many for the
    best N_INIT_FINALISTS. Sets ``start_losses_``."""
    est, log = fit.est, fit.log
    n_starts = est._n_starts(est.n_features_in_, fit.use_validation)
    est.start_losses_ = None
    if n_starts <= 1:
        return run
    seeds = rng.integers(np.iinfo(np.int64).max, size=n_starts - 1)
    runs = [run] + [_other_start(fit, seed, theta, n_out) for seed in seeds]
    kind = "validation" if fit.use_validation else "training"

    def train(k, count):
        _epochs(fit, runs[k], count)
        least = runs[k].schedule.least_loss()
        log.event(f"start {k + 1}/{n_starts}: least {kind} loss {least:.6g} after {runs[k].n_iter} epochs")
        return least

    est.start_losses_, k = best_of_starts(n_starts, train, min(START_EPOCHS, est.max_iter),
                                          min(START_EPOCHS, est.max_iter - START_EPOCHS), N_INIT_FINALISTS)
    est._epochs_in_dropped_starts = sum(r.n_iter for i, r in enumerate(runs) if i != k)
    log.event(f"continuing from start {k + 1}")
    return runs[k]


def _other_start(fit, seed, theta, n_out):
    """A further start of ``n_init``: its own draw of W, b and B from ``seed``, the same theta; its
    map reaches the workers in a copy of the chunk context."""
    est, ctx = fit.est, fit.ctx
    d, dtype = est.n_features_in_, ctx.dtype
    g = np.random.default_rng(seed)
    W, b = est._draw_map(d, est.n_components, g, dtype)
    B = _output_weights(est.n_components, n_out, g, dtype)
    ctx_k = copy.copy(ctx)
    ctx_k.runner = dataclasses.replace(ctx.runner, weights=W, offsets=b)
    return _DaskStart(W, b, _shared(ctx_k), _Params(theta.copy(), B, TrainingState(B.shape, d, dtype, est._palm)),
                      np.random.default_rng(int(g.integers(2**32 - 1))), est.learning_rate)


def _epochs(fit, run, count):
    """Up to ``count`` epochs of the start ``run`` (its map, parameters, schedule and curves)."""
    sched = run.schedule
    for _ in range(0 if sched.stopped or sched.diverged else count):
        tic = time.perf_counter()
        new = _shard_epoch(fit, run)
        # a second graph, not the same one: a chunk read for training is then released at once
        # instead of being held until the averaged model can be validated on it
        val = _per_chunk(fit.blocks, _add, _validate_chunk, run.ctx_key, _shared(new)) if fit.use_validation else None
        if not _record_epoch(fit, run, new, val, tic):
            break


def _shard_epoch(fit, run):
    """One epoch of every shard over its chunks (in an order drawn for the epoch) from the start's
    parameters, and the row-weighted average of the shards' ends."""
    import dask

    seed = int(run.epoch_rng.integers(2**32 - 1))
    order_rng = np.random.default_rng(seed)
    orders = [[int(i) for i in order_rng.permutation(group)] for group in fit.groups]
    learning_rate = run.schedule.learning_rate * len(fit.groups)  # the linear scaling rule
    ends = [run.params] * len(fit.groups)
    # Waves of CHUNKS_PER_WAVE chunks per shard, one graph each: within one graph the chunk reads
    # (tasks without dependencies) would run ahead of the sequential chain of training tasks and
    # hold a whole shard in memory; a wave holds at most CHUNKS_PER_WAVE of them.
    for w in range(0, max(map(len, orders)), CHUNKS_PER_WAVE):
        wave = []
        for order, end in zip(orders, ends):
            p = dask.delayed(end, pure=False, traverse=False)
            for i in order[w:w + CHUNKS_PER_WAVE]:
                xb, yb = fit.blocks[i]
                p = dask.delayed(_train_chunk, pure=True)(run.ctx_key, p, i, seed, learning_rate, xb, yb)
            wave.append(p)
        ends = list(dask.compute(*wave))
    return _average(*ends)


def _record_epoch(fit, run, new, val, tic):
    """The averaged parameters ``new`` become the start's, its curves grow by the epoch's losses and
    score (``val``: the :func:`_validate_chunk` sums, None without validation), and the schedule
    observes it. False when the training stops here (diverged, or early stopping)."""
    est, log, sched = fit.est, fit.log, run.schedule
    train_loss = new.loss_sum / max(new.rows, 1)
    run.params = _Params(new.theta, new.coef, new.state)
    run.n_iter += 1
    run.t += new.rows
    run.loss_curve.append(train_loss)
    sched.diverged = not (np.isfinite(train_loss) and np.isfinite(new.theta).all() and np.isfinite(new.coef).all())
    if sched.diverged:
        log.event(f"epoch {run.n_iter}: training diverged (non-finite loss or parameters)")
        return False
    val_loss = None
    if val is not None:
        val_loss = float(val[0] / fit.n_val)
        run.validation_loss_curve.append(val_loss)
        run.validation_scores.append(fit.score(val))
    value = val_loss if val_loss is not None else train_loss
    if sched.observe(value, est.tol, run.params.theta, run.params.coef, est.checkpoint):
        run.best_epoch = run.n_iter
    details = f"train loss {train_loss:.6g}"
    if val_loss is not None:
        details += f", validation loss {val_loss:.6g}"
    log.step("epoch", run.n_iter, est.max_iter, f"{details} ({time.perf_counter() - tic:.3f} s)")
    change = sched.after_plateau(est.n_iter_no_change, est.learning_rate_schedule == "adaptive",
                                 MAX_LR_DECAYS, est.early_stopping)
    if change == "lowered":
        log.event(f"learning rate lowered to {sched.learning_rate:.3g} (no improvement for "
                  f"{est.n_iter_no_change} epochs)")
    elif change == "stopped":
        log.event(f"early stopping: no improvement for {sched.no_improve} epochs; best epoch {run.best_epoch}")
        return False
    return True


def _store_run(est, run):
    """The fitted attributes from the start that trained on (its best checkpoint, where kept)."""
    if run.schedule.diverged and run.schedule.best is None:
        raise ValueError(
            "RFFNet training diverged (non-finite loss or parameters): lower learning_rate, or "
            "check the scale of X (standardize=True) and of y")
    est.weights_, est.offsets_ = run.weights, run.offsets
    est.loss_curve_, est.validation_loss_curve_ = run.loss_curve, run.validation_loss_curve
    est.validation_scores_, est.n_iter_, est.t_, est.best_epoch_ = run.validation_scores, run.n_iter, run.t, run.best_epoch
    est.learning_rate_ = float(run.schedule.learning_rate)
    est.relevances_, est.coef_ = run.params.theta, run.params.coef
    est._state = run.params.state
    if run.schedule.best is not None:
        est.relevances_, est.coef_ = run.schedule.best


def _closing_softmax(est, X, y):
    """``refit_coef`` of ``RFFNetClassifier`` on Dask arrays: the closing logistic / softmax fit on
    the client, on rows gathered from the workers -- every row, or above
    ``rffkern.rffnet.CLOSING_MAX_ROWS`` a stratified random subset of that many (as the
    single-machine fit caps its rows, ``RFFNetClassifier._closing_subset``; the labels are gathered
    to draw it) -- its penalty chosen on 3 interleaved folds of those rows, as a single-machine fit
    without an early-stopping split does.
    Its L-BFGS passes over the features some hundreds of times: on the workers that would be as
    many rounds of tasks."""
    labels = np.asarray(y.compute()).reshape(-1)
    keep = est._closing_subset(labels)
    if keep is not None:
        labels, X = labels[keep], X[keep]
    rows = np.asarray(X.compute())
    _, Y, _ = est._encode_targets(labels, first_call=False)
    est._after_training(est._standardized(rows), Y, None, None, None, None)


class _ClosingInputs:
    """A chunk's rows for the regressor's closing ridge, as ``RFFNetRegressor._after_training``
    makes them: X standardized in float64, cast to the training dtype, then float64 times the relevances; targets
    ``(y - intercept) / y_scale`` in the training dtype, then float64."""

    def __init__(self, est):
        self.x_mean, self.x_scale = est.x_mean_, est.x_scale_
        self.theta = est.relevances_.astype(np.float64)
        self.intercept, self.y_scale = est.intercept_, est.y_scale_
        self.dtype = est.relevances_.dtype

    def __call__(self, Xb, yb):

        Xr = standardized_rows(Xb, self.x_mean, self.x_scale, self.dtype).astype(np.float64)
        Xr *= self.theta
        Y = np.asarray(yb, np.float64).reshape(Xr.shape[0], -1)
        T = training_targets(Y, self.intercept, self.y_scale, self.dtype).astype(np.float64)
        return Xr, T


def _closing_ridge(est, X, y):
    """``refit_coef`` of ``RFFNetRegressor`` on Dask arrays: the closing ridge on every row, the map
    widened to ``refit_components`` and the penalty by exact leave-one-out over ``REFIT_ALPHAS``,
    with the distributed Gram and leave-one-out passes of the ridge family (two passes). Before it,
    the single-machine check of the kernel's width (``rffkern.rffnet.closing_width_factor``) on
    at most ``CLOSING_CHECK_ROWS`` rows drawn at random from every row (``_closing_check_rows``) and
    gathered on the client (X's rows, then y's: one graph each, as the standardization probe)."""
    import dask

    W, b = est._closing_map(X.shape[0])
    rows = est._closing_check_rows(X.shape[0])
    (X_rows,), (y_rows,) = dask.compute(X[rows]), dask.compute(y[rows])
    est._check_closing_width(*_ClosingInputs(est)(np.asarray(X_rows), np.asarray(y_rows)), None)
    fmap = FourierFeatureMap(W, b, float(est.scale_), n_threads=resolve_n_threads(est.n_jobs))
    inputs = _ClosingInputs(est)  # (the trained intercept: before the closing solution replaces it)
    coef, intercept, alpha, _, stats = fit_ridge_map(DaskRows(X, y), fmap, inputs, REFIT_ALPHAS, "loo", 0.1, est._rng)
    est.weights_ = np.ascontiguousarray(W, dtype=est.coef_.dtype)
    est.offsets_ = np.ascontiguousarray(b, dtype=est.coef_.dtype)
    est._set_closing_solution(coef, intercept)
    est.refit_alpha_ = float(alpha)
    # the uncertainty's statistics, and predict_interval's scores from the check's rows (in the fit)
    est._keep_posterior(stats, fmap, *inputs(np.asarray(X_rows), np.asarray(y_rows)), None)
