"""Exact distributed fits of EERF, SRFF and adaptive RFF on Dask arrays chunked by rows (issue 11).

Every pass over the data is a sum over row chunks: a function of one chunk runs on the workers
(:func:`_pass`), the partial sums are merged by a binary tree of additions on the workers, and the
client receives one small result per pass (a Gram, a score vector, a gradient). What the client
does with it is the single-machine code: the same random draws in the same order, the same solves,
the same decisions. The models therefore equal the single-machine fits up to the order of the
floating-point sums (the tests hold them to 1e-10 relative in float64).

Where the single-machine fit uses a random subset of rows (EERF's scoring subsample, the k-NN and
median-distance width rules, the held-out splits of EERF's ``alpha_selection="validation"`` and of
SRFF's lambda path), the client draws the same row indices from the same generator (they depend
only on the row count) and the workers select those rows of their chunks through a boolean mask
persisted with the data's chunks, or the few rows of the width rules (at most 2000) are gathered.

What runs where:

* EERF (:func:`fit_eerf`): pass 1 column statistics (standardisation, target scaling, the scoring
  target's range, class counts, finiteness); a gather of at most 2000 rows for the k-NN width;
  pass 2 the energy scores ``Phi.T T`` of the ``M0`` candidates on the scoring rows of every chunk
  (summed, divided by ``N0`` on the client); the top-M selection on the client; pass 3 the
  :class:`~rffkern._ridge_solvers.GramStats` of the M kept features (train and validation rows
  separately for ``alpha_selection="validation"``); pass 4 only for an alpha list with ``"loo"``
  (leave-one-out sums) or ``"validation"`` (held-out squared errors). 3 to 4 passes per width:
  ``length_scale="auto"`` repeats passes 2 to 4 for each width of the search (4 to 7 widths, the
  candidates drawn once), so ``1 + 3 * widths`` passes with LOO.
* SRFF (:func:`fit_srff`): pass 1 column statistics of X, a gather for the k-NN width, pass 2 the
  d x d Gram of the standardised X (the lambda grid) and the target statistics on the training
  rows; then the alternating minimisation with the whole loop on the client and every data term
  on the workers: each ridge step is one pass (Gram ``Z.T Z``, ``Z.T y`` of the current gamma; the
  last Gram is reused when the next lambda starts from the same gamma), FISTA one pass for the
  starting loss and gradient, then one per iteration whose first backtracking step is accepted
  (the candidate's loss is evaluated with the loss and gamma-gradient at the extrapolated point
  that follows it) and one more per rejection (four halvings a pass); the lambda path one Gram
  and one held-out pass for its start, one held-out pass per lambda. Passes: ``2 + inner``
  per outer iteration when no step is rejected (the single-machine fit makes ``2 + 2 * inner``).
* Adaptive RFF (:func:`fit_adaptive`): pass 1 column statistics, a gather for the median heuristic,
  then one pass per least-squares problem: the ``2K x 2K`` Gram of the pair features, ``S.T Y`` and
  ``Y.T Y`` (GCV and the training MSE come from the same reduced statistics). The Metropolis loop
  (proposals, acceptance, covariance) runs on the client. Passes: ``n_iter + 3`` plus one per
  resampling (the single-machine fit does ``n_iter + 2``, or ``n_iter + 4`` with GCV); plus a Gram
  and a LOO pass per initial width of ``init_scale="auto"`` (on the chain's rows), a Gram and a
  held-out prediction pass per check of ``early_stopping`` (the chain's least squares on the
  training rows through a persisted mask), or a Gram and a LOO pass for the final lambda without
  it.

The iterative fits re-read X on every pass: persist it (``X = X.persist()``) when it fits in the
workers' memory. ``X.dtype`` float32 runs the chunk kernels in float32 as on one machine, but the
sums over chunks differ from one machine's at float32 precision, which can change an accepted
Metropolis proposal; the exactness claim is for float64.
"""
from __future__ import annotations

import copy
import time

import numpy as np

from rffkern._dask import _Moments, _aligned_targets, _row_chunked, _tree_reduce, probe_standardization
from rffkern._data import TargetScaler, holdout_split
from rffkern._inputs import set_input_scaling
from rffkern._linalg import RidgeEigen, ridge_solve, simplex_projection, stall
from rffkern._progress import ProgressLog
from rffkern._calibration import calibration_rows
from rffkern._ridge_solvers import FourierFeatureMap, GramStats, LooPass, as_alpha_list, choose_alpha, gcv_errors, solve_ridge
from rffkern._selection import EXTENDED_WIDTH_FACTORS, search_widths, width_extension
from rffkern._validation import as_generator, resolve_n_threads

__all__ = ["fit_eerf", "fit_srff", "fit_adaptive"]

#: Step halvings of SRFF's FISTA backtracking evaluated in one pass after the first one fails.
BACKTRACK_BATCH = 4


# -- the pass machinery ---------------------------------------------------------------------------

def _add(a, b):
    """Sum of two partial results: arrays and numbers add, GramStats merge, tuples and lists add
    item by item, None is the empty sum."""
    if a is None:
        return b
    if b is None:
        return a
    if isinstance(a, GramStats):
        return copy.deepcopy(a).merge(b)  # a copy: a task's input may be reused on recomputation
    if isinstance(a, _Moments):
        return a.merged(b)
    if isinstance(a, (tuple, list)):
        return type(a)(_add(x, y) for x, y in zip(a, b))
    return a + b


class _Data:
    """The row blocks of X and y (delayed), the boolean row masks, and one reduction per pass."""

    def __init__(self, X, y):
        self.x_blocks = list(X.to_delayed().ravel())
        self.y_blocks = list(y.to_delayed().ravel())
        self.chunks = tuple(int(c) for c in X.chunks[0])
        self.n, self.d = int(X.shape[0]), int(X.shape[1])
        self.X = X
        self.masks = {"all": [None] * len(self.chunks)}
        self._held = {}
        self.passes = 0

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
        """Delayed sum over the chunks of ``fn(shared, Xb, yb, mb)`` (tree of :func:`_add`)."""
        import dask

        key = dask.delayed(shared, pure=False, traverse=False)  # one key: travels once per worker
        part = dask.delayed(fn, pure=True)
        parts = [part(key, xb, yb, mb) for xb, yb, mb in zip(self.x_blocks, self.y_blocks, self.masks[mask])]
        return _tree_reduce(parts, _add)

    def compute(self, *delayed):
        import dask

        self.passes += 1
        return dask.compute(*delayed)

    def gather_rows(self, rows, prepare):
        """``prepare(X[rows])`` on the client, rows in the given order (at most a few thousand)."""
        import dask

        rows = np.asarray(rows, np.intp)
        if rows.size == 0:
            return prepare(np.empty((0, self.d), self.X.dtype))
        (sample,) = dask.compute(self.X[rows])
        return prepare(np.asarray(sample))


def _select_rows(A, mb):
    return A if mb is None else A[mb]


def _prepare_input(X, y, name, classifier, float_dtypes=(np.float32, np.float64)):
    """X row-chunked with a float dtype, y aligned to its chunks, both checked for shape."""
    X = _row_chunked(X, "fit")
    if X.ndim != 2 or X.shape[0] < 1 or X.shape[1] < 1:
        raise ValueError(f"{name}.fit needs a non-empty 2-D X, got shape {X.shape}")
    if X.dtype not in float_dtypes:
        if X.dtype.kind not in "biuf":
            raise ValueError(f"X must be numeric, got dtype {X.dtype}")
        X = X.astype(np.float64)
    y = _aligned_targets(y, X)
    if classifier:
        if y.ndim != 1:
            raise ValueError(f"y must be 1-D class labels, got shape {y.shape}")
    elif y.ndim not in (1, 2) or y.dtype.kind not in "biuf":
        raise ValueError(f"y must be numeric of shape (n,) or (n, n_targets), got {y.dtype} {y.shape}")
    return X, y


def _chunk_moments(_, Xb, yb, mb, with_y):
    A = np.asarray(Xb, np.float64)
    if with_y:
        Yb = np.asarray(yb, np.float64).reshape(A.shape[0], -1)
        A = np.hstack([A, Yb])
        return _Moments(A), (Yb.min(0), Yb.max(0)) if Yb.shape[0] else None
    return _Moments(A), None


def _merge_moments(a, b):
    if a is None:
        return b
    if b is None:
        return a
    ma, ra = a
    mb, rb = b
    rng = ra if rb is None else rb if ra is None else (np.minimum(ra[0], rb[0]), np.maximum(ra[1], rb[1]))
    return ma.merged(mb), rng


def _moments(data, with_y, extra=()):
    """Pass 1: column moments of X (and y), y's range, finiteness; plus ``extra`` delayed values."""
    import dask

    fn = dask.delayed(_chunk_moments, pure=True)
    parts = [fn(None, xb, yb, None, with_y) for xb, yb in zip(data.x_blocks, data.y_blocks)]
    total = _tree_reduce(parts, _merge_moments)
    (moments, y_range), *rest = data.compute(total, *extra)
    if not moments.finite:
        raise ValueError("Input X or y contains NaN or infinity.")
    return moments, y_range, rest


def _class_counts(y):
    import dask.array as da

    return da.unique(y, return_counts=True)


def _check_labels(classes, name):
    from sklearn.utils.multiclass import check_classification_targets

    check_classification_targets(classes)
    if len(classes) < 2:
        raise ValueError(f"the classifier needs samples of at least 2 classes; got {len(classes)} class")


def _sample_rows(n, max_samples, rng, within=None):
    """The rows the single-machine width rules subsample: ``rng.choice`` of ``max_samples`` out of
    ``n`` (of the rows ``within`` when given), drawn exactly as :func:`rffkern._sampling.knn_distances`
    and :func:`~rffkern._sampling.median_distance` draw them; all rows when there are few."""
    base = np.arange(n) if within is None else within
    if base.size > max_samples:
        return base[rng.choice(base.size, max_samples, replace=False)]
    return base


# -- distributed ridge on a feature map (fit_ridge_map's twin) ------------------------------------

def _ridge_inputs(ctx, Xb, yb):
    Xs, Y = ctx["inputs"](Xb, yb)
    return Xs, Y.astype(Xs.dtype)


def _chunk_gram(ctx, Xb, yb, mb):
    Xs, Y = _ridge_inputs(ctx, Xb, yb)
    out = []
    for sel in ctx["split"](mb):
        Xr, Yr = _select_rows(Xs, sel), _select_rows(Y, sel)
        out.append(GramStats(ctx["fmap"].n_out, Y.shape[1], Xs.dtype).add(ctx["fmap"], Xr, Yr)
                   if Xr.shape[0] else None)
    return out


def _chunk_loo(ctx, Xb, yb, mb):
    Xs, Y = _ridge_inputs(ctx, Xb, yb)
    if mb is not None:
        Xs, Y = np.ascontiguousarray(Xs[mb]), Y[mb]
    if not Xs.shape[0]:
        return None
    return ctx["loo"].sse(ctx["fmap"], Xs, Y)


def _chunk_validation(ctx, Xb, yb, mb):
    Xs, Y = _ridge_inputs(ctx, Xb, yb)
    Xv, Yv = np.ascontiguousarray(Xs[mb]), Y[mb]
    if not Xv.shape[0]:
        return None
    coefs, offsets, scale, m = ctx["coefs"], ctx["offsets"], ctx["target_scale"], Y.shape[1]
    F = ctx["fmap"].predict(Xv, coefs).astype(np.float64) + offsets
    R = F - np.tile(Yv.astype(np.float64) / scale, coefs.shape[1] // m)
    return (R**2).reshape(Xv.shape[0], -1, m).sum(axis=(0, 2))


def _no_split(mb):
    return [None]


def _train_val_split(mb):
    return [~mb, mb]


def _mask_split(mb):
    return [mb]


def _fit_ridge_map(data, fmap, inputs, alphas, selection, validation_fraction, rng, fit_intercept=True,
                   score_single=False, mask="all"):
    """``rffkern._ridge_solvers.fit_ridge_map`` on distributed data: the same tuple
    ``(coef, intercept, alpha, errors, stats)``. ``inputs(Xb, yb)`` gives a chunk's (X, Y) as the
    single-machine fit passes them; ``mask`` names the rows fitted (``"all"``, or a mask set on
    ``data``; not with ``selection="validation"``)."""
    ctx = {"fmap": fmap, "inputs": inputs, "split": _no_split if mask == "all" else _mask_split}
    if (len(alphas) > 1 or score_single) and selection == "validation":
        n = data.n
        n_val = int(round(validation_fraction * n))
        if n_val < 1 or n - n_val < 1:
            raise ValueError(f"validation_fraction={validation_fraction} leaves no training or validation "
                             f"sample out of {n}")
        _, va = holdout_split(n, n_val, rng)
        mask = np.zeros(n, bool)
        mask[va] = True
        data.set_mask("ridge_val", mask)
        ctx["split"] = _train_val_split
        (pair,) = data.compute(data.reduce(_chunk_gram, ctx, mask="ridge_val"))
        stats, stats_val = pair
        G, ZtY, mu, ybar, _ = stats.centred(fit_intercept)
        eig = RidgeEigen(G, ZtY)
        coefs = np.hstack([eig.coef(a) for a in alphas])
        m = ZtY.shape[1]
        offsets = np.concatenate([ybar - mu @ coefs[:, i * m:(i + 1) * m] for i in range(len(alphas))])
        vctx = {**ctx, "coefs": coefs, "offsets": offsets, "target_scale": stats.target_scale}
        (sse,) = data.compute(data.reduce(_chunk_validation, vctx, mask="ridge_val"))
        best, errors = choose_alpha(alphas, sse / (n_val * m), stats)
        stats = stats.merge(stats_val) if stats_val is not None else stats
        return (*solve_ridge(stats, best, fit_intercept), best, errors, stats)
    ((stats,),) = data.compute(data.reduce(_chunk_gram, ctx, mask=mask))
    if len(alphas) == 1 and not score_single:
        return (*solve_ridge(stats, alphas[0], fit_intercept), alphas[0], None, stats)
    if selection == "loo":
        lctx = {**ctx, "loo": LooPass(stats, alphas, fit_intercept)}
        (sse,) = data.compute(data.reduce(_chunk_loo, lctx, mask=mask))
        errors = sse / (stats.n * (stats.ZtY.shape[1] - 1))
    else:
        errors = gcv_errors(stats, alphas, fit_intercept)
    best, errors = choose_alpha(alphas, errors, stats)
    return (*solve_ridge(stats, best, fit_intercept), best, errors, stats)


class _Inputs:
    """A chunk's standardised X and float64 targets, as the single-machine fit makes them.

    ``standardize``: ``((X - mean) / scale)`` cast back to X's dtype (``"keep"``, EERF and
    adaptive RFF) or left in float64 (``"float64"``, SRFF). ``targets`` maps the raw y chunk to
    the float64 target matrix (n, m).
    """

    def __init__(self, x_mean, x_scale, targets, cast="keep"):
        self.x_mean, self.x_scale, self.targets, self.cast = x_mean, x_scale, targets, cast

    def x(self, Xb):
        Xs = (Xb - self.x_mean) / self.x_scale
        if self.cast == "keep":
            Xs = Xs.astype(Xb.dtype, copy=False)
        return np.ascontiguousarray(Xs)

    def __call__(self, Xb, yb):
        return self.x(Xb), self.targets(yb)


class _ScaledTargets:
    """``TargetScaler.transform`` of a regression chunk, (n, m) float64."""

    def __init__(self, scaler):
        self.scaler = scaler

    def __call__(self, yb):
        yb = np.asarray(yb, np.float64)
        return self.scaler.transform(yb.reshape(yb.shape[0], -1))


class _SignTargets:
    """``LabelBinarizer(neg_label=-1, pos_label=1)`` of a label chunk (EERF), (n, m) float64."""

    def __init__(self, binarizer):
        self.binarizer = binarizer

    def __call__(self, yb):
        return self.binarizer.transform(np.asarray(yb)).astype(np.float64)


# -- EERF ------------------------------------------------------------------------------------------

def _chunk_scores(ctx, Xb, yb, mb):
    from rffkern.eerf import eerf_scores

    Xs, Y = ctx["inputs"](Xb, yb)
    if mb is not None:
        Xs, Y = np.ascontiguousarray(Xs[mb]), Y[mb]
    if not Xs.shape[0]:
        return None
    T = (Y - ctx["t_mean"]) / ctx["t_scale"]
    S = eerf_scores(Xs, T, ctx["W0"], ctx["b0"], kernel=ctx["kernel"], n_threads=ctx["n_threads"])
    return S.astype(np.float64) * Xs.shape[0]


def fit_eerf(est, X, y):
    """Fit ``EERFRegressor`` / ``EERFClassifier`` ``est`` on Dask arrays X (chunked by rows) and y.

    The same model as ``est.fit(X.compute(), y.compute())`` up to the order of floating-point sums:
    the same scoring rows, candidates, k-NN width sample and held-out split (drawn on the client
    from the same generator), the energy scores summed over the chunks, the kept features' Gram
    statistics reduced on the workers, alpha chosen from them as on one machine. The classifier's
    ``solver="logistic"`` (scikit-learn's iterative solver on the n x M features) is refused.

    Parameters
    ----------
    est : EERFRegressor or EERFClassifier
        The estimator; its hyper-parameters are validated here and its fitted attributes set.
    X : dask.array.Array of shape (n_samples, n_features)
        Chunked by rows only (every row whole in one chunk); known chunk sizes.
    y : dask.array.Array or array-like of shape (n_samples,) or (n_samples, n_targets)
        Numeric targets (regressor) or class labels (classifier). Rechunked to X's row chunks.

    Returns
    -------
    est : EERFRegressor or EERFClassifier
        Fitted, with the attributes of the single-machine fit.

    Raises
    ------
    ValueError
        NaN or infinity in X or y, column-chunked X, mismatched lengths, fewer than 2 classes,
        ``solver='logistic'``, or a bad hyper-parameter (as on one machine).
    """
    from sklearn.base import is_classifier
    from sklearn.preprocessing import LabelBinarizer

    from rffkern.eerf import WIDTH_FITTED, candidate_count, knn_length_scale

    est._validate_params()
    name = type(est).__name__
    classifier = is_classifier(est)
    if classifier and est.solver != "ridge":
        raise ValueError(f"solver={est.solver!r} is not supported on Dask arrays: only the closed-form "
                         f"solver='ridge' is fitted from distributed statistics")
    est.__dict__.pop("feature_names_in_", None)
    log = ProgressLog(est, est.verbose)
    X, y = _prepare_input(X, y, name, classifier)
    data = _Data(X, y)
    n, d = data.n, data.d
    if classifier:
        moments, _, ((classes, counts),) = _moments(data, False, (_class_counts(y),))
        _check_labels(classes, name)
        binarizer = LabelBinarizer(neg_label=-1, pos_label=1).fit(classes)
        est.classes_ = binarizer.classes_
        targets = _SignTargets(binarizer)
        pos = counts[1:] if len(classes) == 2 else counts
        t_mean = (2.0 * pos - n) / n            # the mean of the +-1 columns, as Y.mean(0)
        t_scale = 1.0
        ravel = len(classes) == 2
    else:
        moments, (y_min, y_max), _ = _moments(data, True)
        mean, scale = moments.mean_and_scale()
        scaler = TargetScaler(est.normalize_y)
        if est.normalize_y:
            scaler.mean_, scaler.scale_ = mean[d:], scale[d:]
        else:
            scaler.mean_, scaler.scale_ = np.zeros(mean.size - d), np.ones(mean.size - d)
        est.y_mean_, est.y_scale_ = scaler.mean_, scaler.scale_
        targets = _ScaledTargets(scaler)
        t_mean = (mean[d:] - scaler.mean_) / scaler.scale_   # Y.mean(0) of the scaled targets
        low, high = (y_min - scaler.mean_) / scaler.scale_, (y_max - scaler.mean_) / scaler.scale_
        peak = np.maximum(high - t_mean, t_mean - low)       # max |Y - mean| per output
        t_scale = np.where(peak > 0, peak, 1.0)
        ravel = y.ndim == 1
    est.n_features_in_ = d
    rng = as_generator(est.random_state)
    probe = probe_standardization(est, X, y, moments, d, rng, est.classes_ if classifier else None)
    moments.scale_inputs(est, d, probe)
    if probe is not None:
        log.step("standardize", 1, 1, f"{est.standardize_!r} (probe ridge)")
    inputs = _Inputs(est.x_mean_, est.x_scale_, targets)

    # the candidates: _EERFBase._candidates
    t0 = time.perf_counter()
    M = est.n_components
    widths: list = [None]
    base = None
    est.n_subsample_ = min(n, est.n_subsample or max(int(0.1 * n), 1000))
    rows = np.sort(rng.choice(n, est.n_subsample_, replace=False)) if est.n_subsample_ < n else None
    est.n_candidates_ = candidate_count(est.kernel, est.n_candidates, M, d)
    if est.kernel == "linear":
        W0 = b0 = None
    else:
        if est.kernel == "gaussian":
            if not isinstance(est.length_scale, str):
                widths = [float(v) for v in np.atleast_1d(est.length_scale)]
            else:
                sample = data.gather_rows(_sample_rows(n, 2000, rng, rows), inputs.x)
                knn = knn_length_scale(sample, rng=rng)  # <= 2000 rows: draws nothing
                widths = [knn] if est.length_scale == "knn" else [knn * f for f in EXTENDED_WIDTH_FACTORS]
                base = None if est.length_scale == "knn" else knn
        W0 = rng.standard_normal((d, est.n_candidates_))
        b0 = rng.uniform(0.0, 2.0 * np.pi, est.n_candidates_) if est.kernel == "gaussian" else None
    if rows is not None:
        mask = np.zeros(n, bool)
        mask[rows] = True
        data.set_mask("score", mask)
    else:
        data.set_mask("score", None)
    alphas = as_alpha_list(est.alpha)
    y_scale, y_mean = (1.0, 0.0) if classifier else (est.y_scale_, est.y_mean_)
    several = len(widths) > 1
    split_seed = int(rng.integers(2**32 - 1)) if several else None  # one held-out split for every width
    est.width_errors_ = [] if several else None
    times = [time.perf_counter() - t0, 0.0]
    best: list = []

    def error_of(width):
        # the selection: _EERFBase._keep with the scores summed over the chunks
        t1 = time.perf_counter()
        W = None if W0 is None else (W0 if width is None else W0 / width)
        ctx = {"inputs": inputs, "t_mean": t_mean, "t_scale": t_scale, "W0": W, "b0": b0, "kernel": est.kernel,
               "n_threads": resolve_n_threads(est.n_jobs)}
        (S,) = data.compute(data.reduce(_chunk_scores, ctx, mask="score"))
        est._store_top(S / est.n_subsample_, W, b0, width)
        times[0] += time.perf_counter() - t1
        log.step("select", 1, 2, f"candidates {est.n_candidates_}, kept {M}, scoring rows {est.n_subsample_}, "
                 f"length_scale {est.length_scale_}")

        # the ridge: _EERFBase._fit_ridge on reduced statistics
        t1 = time.perf_counter()
        split_rng = np.random.default_rng(split_seed) if several else rng
        coef, intercept, alpha, errors, est._ridge_stats = _fit_ridge_map(data, est._map(), inputs, alphas,
                                                                          est.alpha_selection, 0.1, split_rng,
                                                                          score_single=several)
        coef, intercept = coef * y_scale, intercept * y_scale + y_mean
        est.coef_ = coef[:, 0] if ravel else coef
        est.intercept_ = float(intercept[0]) if ravel else intercept
        est.alpha_ = float(alpha)
        est.selection_errors_ = None if errors is None else errors * np.mean(np.square(y_scale))
        times[1] += time.perf_counter() - t1
        log.step("ridge", 2, 2, f"alpha {est.alpha_:.3g}, alphas searched {len(alphas)}, data passes {data.passes}")
        if not several:
            return 0.0
        error = float(np.min(errors))  # in the units of the scaled targets, as on one machine
        est.width_errors_.append(float(np.min(est.selection_errors_)))
        if not best or error < best[0]:
            best[:] = [error, {k: getattr(est, k) for k in WIDTH_FITTED}]
        return error

    tried, _ = search_widths(widths, width_extension(base), error_of)
    est.widths_ = tried if several else None
    if best:
        for k, v in best[1].items():
            setattr(est, k, v)
    select_time, ridge_time = times
    est.preprocessing_time_, est.training_time_ = select_time, ridge_time
    if classifier:  # predict_proba's temperature: the in-memory fit's rows, gathered
        Xs_rows, Y_rows = _gather_xy(X, y, calibration_rows(n), inputs)
        est._store_temperature(Xs_rows, Y_rows)
    del est._ridge_stats
    est._n_dask_passes = data.passes
    return est


def _gather_xy(X, y, rows, inputs):
    """``inputs(X[rows], y[rows])`` on the client (at most a few thousand rows)."""
    import dask

    rows = np.asarray(rows, np.intp)
    Xr, yr = dask.compute(X[rows], y[rows])
    return inputs(np.asarray(Xr), np.asarray(yr))


# -- adaptive RFF ----------------------------------------------------------------------------------

def _chunk_pair_gram(ctx, Xb, yb, mb):
    from rffkern import kernels

    Xs, Y = ctx["inputs"](Xb, yb)
    if mb is not None:
        Xs, Y = np.ascontiguousarray(Xs[mb]), Y[mb]
    if not Xs.shape[0]:
        return None
    Y = np.ascontiguousarray(Y, dtype=Xs.dtype)
    G, SY = kernels.gram(Xs, ctx["W"].astype(Xs.dtype), None, Y, scale=1.0, pair=True,
                         n_threads=ctx["n_threads"])
    return G.astype(np.float64), SY.astype(np.float64), (Y.astype(np.float64) ** 2).sum(0)


class _CentredTargets:
    """Adaptive RFF's targets of a chunk: the regressor's scaled (or only centred) outputs, or the
    classifier's centred one-hot columns (both columns for two classes)."""

    def __init__(self, scaler=None, binarizer=None, y_mean=None):
        self.scaler, self.binarizer, self.y_mean = scaler, binarizer, y_mean

    def __call__(self, yb):
        if self.scaler is not None:
            yb = np.asarray(yb, np.float64)
            return self.scaler.transform(yb.reshape(yb.shape[0], -1))
        Y = self.binarizer.transform(np.asarray(yb)).astype(np.float64)
        if Y.shape[1] == 1:
            Y = np.hstack([1 - Y, Y])
        return Y - self.y_mean


def _chunk_pair_holdout(ctx, Xb, yb, mb):
    from rffkern import kernels

    Xs, Y = ctx["inputs"](Xb, yb)
    Xv, Yv = np.ascontiguousarray(Xs[mb]), Y[mb]
    if not Xv.shape[0]:
        return None
    coefs, n_lambdas = ctx["coefs"], ctx["n_lambdas"]
    F = kernels.predict(Xv, ctx["W"].astype(Xv.dtype), None, coefs.astype(Xv.dtype), scale=1.0, pair=True,
                        n_threads=ctx["n_threads"]).astype(np.float64)
    R = F - np.tile(np.asarray(Yv, np.float64), n_lambdas)
    return (R**2).reshape(Xv.shape[0], n_lambdas, -1).sum(axis=(0, 2))


class _PairLeastSquares:
    """The reduced statistics of one least-squares problem of adaptive RFF (one pass each), on the
    rows of the mask ``mask`` (``n`` of them)."""

    def __init__(self, data, inputs, n_threads, mask="all", n=None):
        self.data, self.inputs, self.n_threads = data, inputs, n_threads
        self.mask, self.n = mask, data.n if n is None else n

    def stats(self, W):
        (out,) = self.data.compute(self.data.reduce(
            _chunk_pair_gram, {"inputs": self.inputs, "W": W, "n_threads": self.n_threads}, mask=self.mask))
        return out

    def holdout(self, W, lambdas, mask, n_val):
        """``holdout_errors`` of :mod:`rffkern.adaptive`: fitted on this object's rows, scored on
        the ``n_val`` rows of ``mask``."""
        G, SY, _ = self.stats(W)
        eig = RidgeEigen(G, SY)
        coefs = np.hstack([eig.coef(lam * self.n) for lam in lambdas])
        ctx = {"inputs": self.inputs, "W": W, "coefs": coefs, "n_lambdas": len(lambdas),
               "n_threads": self.n_threads}
        (sse,) = self.data.compute(self.data.reduce(_chunk_pair_holdout, ctx, mask=mask))
        errors = sse / (n_val * SY.shape[1])
        return np.where(np.isfinite(errors), errors, np.inf)

    def solve(self, stats, lam, with_mse=False):
        """``least_squares`` of :mod:`rffkern.adaptive` from the reduced ``(G, S.T Y, Y.T Y)``."""
        G, SY, yty = stats
        n = self.n
        beta = ridge_solve(G, SY, lam * n)
        if not with_mse:
            return beta
        rss = float(yty.sum() - 2 * (beta * SY).sum() + (beta * (G @ beta)).sum())
        return beta, max(rss, 0.0) / (n * SY.shape[1])

    def gcv(self, stats, lambdas):
        """``gcv_lambda`` of :mod:`rffkern.adaptive` from the reduced statistics."""
        G, SY, yty = stats
        n = self.n
        eig = RidgeEigen(G, SY)
        errors = np.array([eig.gcv(lam * n, yty, n).mean() for lam in lambdas])
        errors = np.where(np.isfinite(errors), errors, np.inf)
        return float(lambdas[int(np.argmin(errors))]), errors


class _ChainRows:
    """:func:`rffkern.adaptive.run_chain`'s least squares on Dask rows: fits on the chain's rows of
    ``ls``, held-out errors on the ``n_val`` rows of the mask "adaptive_val"."""

    def __init__(self, ls, data, n_val):
        self.ls, self.data, self.n_val = ls, data, n_val

    def fit(self, W, lam, with_mse=False):
        return self.ls.solve(self.ls.stats(W), lam, with_mse=with_mse)

    def holdout(self, W, lambdas):
        return self.ls.holdout(W, lambdas, "adaptive_val", self.n_val)

    def progress(self):
        return f", data passes {self.data.passes}"


def fit_adaptive(est, X, y):
    """Fit ``AdaptiveRFFRegressor`` / ``AdaptiveRFFClassifier`` ``est`` on Dask arrays X and y.

    Every least-squares problem (the initial one, one per Metropolis iteration, one per
    resampling, the final one; GCV's lambda from the same statistics) is one pass of per-chunk
    ``2K x 2K`` pair-feature Grams reduced on the workers; the Metropolis chain (proposals,
    acceptance, adaptive covariance, resampling) runs on the client with the same draws as
    ``est.fit(X.compute(), y.compute())``.

    Parameters
    ----------
    est : AdaptiveRFFRegressor or AdaptiveRFFClassifier
        The estimator; its hyper-parameters are validated here and its fitted attributes set.
    X : dask.array.Array of shape (n_samples, n_features)
        Chunked by rows only (every row whole in one chunk); known chunk sizes.
    y : dask.array.Array or array-like of shape (n_samples,) or (n_samples, n_targets)
        Numeric targets (regressor) or class labels (classifier). Rechunked to X's row chunks.

    Returns
    -------
    est : AdaptiveRFFRegressor or AdaptiveRFFClassifier
        Fitted, with the attributes of the single-machine fit.

    Raises
    ------
    ValueError
        NaN or infinity in X or y, column-chunked X, mismatched lengths, fewer than 2 classes, or
        a bad hyper-parameter.
    """
    from sklearn.base import is_classifier
    from sklearn.preprocessing import LabelBinarizer

    from rffkern.adaptive import amplitudes, chain_settings, final_alpha_choice, run_chain, search_scales
    from rffkern._sampling import median_distance

    est._validate_params()
    name = type(est).__name__
    classifier = is_classifier(est)
    est.__dict__.pop("feature_names_in_", None)
    X, y = _prepare_input(X, y, name, classifier)
    data = _Data(X, y)
    n, d = data.n, data.d
    if classifier:
        moments, _, ((classes, counts),) = _moments(data, False, (_class_counts(y),))
        _check_labels(classes, name)
        est.classes_ = classes
        binarizer = LabelBinarizer().fit(classes)
        if len(classes) == 2:
            est.y_mean_ = np.array([counts[0], counts[1]], np.float64) / n
        else:
            est.y_mean_ = counts.astype(np.float64) / n
        targets = _CentredTargets(binarizer=binarizer, y_mean=est.y_mean_)
    else:
        moments, _, _ = _moments(data, True)
        mean, scale = moments.mean_and_scale()
        scaler = TargetScaler(est.normalize_y)
        scaler.mean_ = mean[d:]
        scaler.scale_ = scale[d:] if est.normalize_y else np.ones(mean.size - d)
        est.y_mean_, est.y_scale_ = scaler.mean_, scaler.scale_
        est._ravel = y.ndim == 1
        targets = _CentredTargets(scaler=scaler)
    est.n_features_in_ = d
    log = ProgressLog(est, est.verbose)
    rng = as_generator(est.random_state)
    probe = probe_standardization(est, X, y, moments, d, rng, est.classes_ if classifier else None)
    moments.scale_inputs(est, d, probe)
    if probe is not None:
        log.step("standardize", 1, 1, f"{est.standardize_!r} (probe ridge)")
    inputs = _Inputs(est.x_mean_, est.x_scale_, targets)
    n_threads = resolve_n_threads(est.n_jobs)

    # _AdaptiveRFFBase._run, with every least-squares problem on reduced statistics
    K = est.n_components
    median_scale = None
    if isinstance(est.init_scale, str):
        sample = data.gather_rows(_sample_rows(n, 2000, rng), inputs.x)
        median_scale = 1.0 / median_distance(sample, rng=rng)   # <= 2000 rows: draws nothing
    scales, lambdas, finals, n_val = chain_settings(est, n, d, median_scale)
    W_unit = rng.standard_normal((d, K))
    est.init_scale_ = scales[0]
    W = W_unit * est.init_scale_
    chain_mask, n_chain = "all", n   # the rows of the chain: all of them, or the training part
    grid, check_every = None, 1
    if est.early_stopping:
        _, va = holdout_split(n, n_val, rng)
        val_mask = np.zeros(n, bool)
        val_mask[va] = True
        data.set_mask("adaptive_val", val_mask)
        data.set_mask("adaptive_train", ~val_mask)
        chain_mask, n_chain = "adaptive_train", n - n_val
        grid = finals if finals is not None else lambdas
        check_every = max(1, est.n_iter // 10)
    ls = _PairLeastSquares(data, inputs, n_threads, chain_mask, n_chain)
    est.init_scale_errors_ = est.init_scales_ = None
    if len(scales) > 1:  # the initial width: least exact LOO error over the grid, on the chain's rows
        search = [v * n_chain for v in (finals if finals is not None else lambdas)]

        def loo_error(scale):
            fmap = FourierFeatureMap(W_unit * scale, None, 1.0, True, n_threads)
            loo = _fit_ridge_map(data, fmap, inputs, search, "loo", 0.1, rng, fit_intercept=False, score_single=True,
                                 mask=chain_mask)[3]
            return float(np.min(loo))

        est.init_scales_, est.init_scale_errors_ = search_scales(scales, median_scale, loo_error)
        est.init_scale_ = est.init_scales_[int(np.argmin(est.init_scale_errors_))]
        W = W_unit * est.init_scale_
    stats = ls.stats(W)
    lam = ls.gcv(stats, lambdas)[0] if lambdas.size > 1 else float(lambdas[0])
    amp = amplitudes(ls.solve(stats, lam), K)
    chain = run_chain(est, _ChainRows(ls, data, n_val), W, amp, lam, rng, grid, check_every, log)
    W, best, val_errors = chain.W, chain.best, chain.validation_errors
    hist_acc, hist_mse, snapshots, resamples, chol = (chain.acceptance, chain.proposal_mse, chain.snapshots,
                                                      chain.resamples, chain.chol)
    est.gcv_errors_ = est.loo_errors_ = None
    est.validation_errors_ = np.array(val_errors) if est.early_stopping else None
    ls_all = _PairLeastSquares(data, inputs, n_threads)
    stats = None  # the final frequencies' statistics over every row, where computed
    if est.early_stopping:  # the checked frequencies and lambda of least held-out error, all rows
        _, W, lam, est.best_iteration_ = best
        stats = ls_all.stats(W)
        beta = ls_all.solve(stats, lam)
    elif finals is not None:  # exact LOO over final_alpha
        est.best_iteration_ = est.n_iter
        fmap = FourierFeatureMap(W, None, 1.0, True, n_threads)
        lam, beta, est.loo_errors_ = final_alpha_choice(
            lambda f, pens, intercept: _fit_ridge_map(data, f, inputs, pens, "loo", 0.1, rng,
                                                      fit_intercept=intercept),
            fmap, finals, n)
    else:
        est.best_iteration_ = est.n_iter
        stats = ls_all.stats(W)
        if lambdas.size > 1:
            lam, est.gcv_errors_ = ls_all.gcv(stats, lambdas)
        beta = ls_all.solve(stats, lam)
    est.alpha_ = lam
    est.frequencies_ = W
    est.coef_ = beta
    est.amplitudes_ = amplitudes(beta, K)
    est.acceptance_rate_ = float(np.mean(hist_acc)) if hist_acc else 0.0
    est.history_ = {"acceptance": np.array(hist_acc), "proposal_mse": np.array(hist_mse),
                    "n_resamples": resamples}
    est.frequency_history_ = np.stack(snapshots) if snapshots else None
    est.proposal_covariance_ = chol @ chol.T
    est.n_iter_ = est.n_iter
    if classifier:  # predict_proba's temperature: the in-memory fit's rows, gathered
        G, SY, _ = ls_all.stats(W) if stats is None else stats
        Xs_rows, Yc_rows = _gather_xy(X, y, calibration_rows(n), inputs)
        est._store_temperature(G, SY, n, Xs_rows, Yc_rows)
    est._n_dask_passes = data.passes
    return est


# -- SRFF ------------------------------------------------------------------------------------------

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


def _srff_rows(ctx, Xb, yb, mb):
    """A chunk's standardised X and targets, restricted to ``ctx["rows"]`` (all, train or val)."""
    Xs = ctx["inputs"].x(Xb)
    y = ctx["targets"](yb)
    sel = None if ctx["rows"] == "all" else (~mb if ctx["rows"] == "train" else mb)
    if sel is not None:
        Xs, y = np.ascontiguousarray(Xs[sel]), y[sel]
    return Xs, y


def _chunk_srff(ctx, Xb, yb, mb):
    from rffkern import kernels

    X, y = _srff_rows(ctx, Xb, yb, mb)
    nb = X.shape[0]
    if not nb:
        return None
    op, W, b, th = ctx["op"], ctx["W"], ctx["b"], ctx["n_threads"]
    if op == "xgram":
        return X.T @ X
    if op == "y_moments":
        return _Moments(y.reshape(-1, 1))
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
    X, y = _prepare_input(X, y, name, False, float_dtypes=(np.float64,))
    if y.ndim != 1:
        raise ValueError(f"{name} fits one target: y must be 1-D, got shape {y.shape}")
    data = _Data(X, y)
    n, d = data.n, data.d
    log = ProgressLog(est, est.verbose)
    moments, _, _ = _moments(data, True)
    est.n_features_in_ = d
    set_input_scaling(est, moments.input_standardization(d, bool(est.standardize), est.robust_inputs))
    inputs = _Inputs(est.x_mean_, est.x_scale_, None, cast="float64")
    rng = as_generator(est.random_state)
    if est.length_scale in ("auto", "knn"):
        sample = data.gather_rows(_sample_rows(n, 2000, rng), inputs.x)
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
    y_all = _Moments(np.zeros((0, 1)))
    y_all.n, y_all.mean, y_all.m2, y_all.scale, y_all.finite = (moments.n, moments.mean[d:], moments.m2[d:],
                                                               moments.scale[d:], True)
    y_all.lo, y_all.hi = moments.lo[d:], moments.hi[d:]
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
        from rffkern.rffnet import REFIT_ALPHAS

        W, b, scale = est._closing_map(n, rng)
        fmap = FourierFeatureMap(W, b, scale, n_threads=resolve_n_threads(est.n_jobs))
        closing = _SRFFClosingInputs(inputs, gamma, est.y_mean_, est.y_scale_)
        coef, intercept, alpha, _, _ = _fit_ridge_map(data, fmap, closing, REFIT_ALPHAS, "loo", 0.1, rng)
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
