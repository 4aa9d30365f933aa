"""Adaptive RFF on Dask rows (:mod:`rffkern._dask`): :func:`fit_adaptive`.

The algorithm is :mod:`rffkern._adaptive_chain`'s, on :class:`DaskPairRows`: every least-squares
problem is one pass of per-chunk :class:`~rffkern._adaptive_chain.PairStats` (the ``2K x 2K``
weighted Gram of the pair features, ``S.T W Y``, ``Y.T W Y`` and the weight totals) merged on the
workers, and the Metropolis chain (proposals, acceptance, covariance, resampling) runs on the
client with the same draws as the fit in memory. Passes: one of weighted column statistics (with
weights also one for the rows of positive weight, one for the weight totals and, for a
classifier, one for the class means), a gather for the median heuristic, then ``n_iter + 2`` least-squares passes plus one per resampling (one more for
GCV at the first scale of a searched ``init_scale``); plus a Gram and a LOO pass per initial
width of ``init_scale="auto"`` (on the chain's rows), a Gram and a held-out prediction pass per
check of ``early_stopping`` (the chain's rows through a persisted mask), or a Gram and a LOO pass
for the final lambda without it.

``X.dtype`` float32 runs the chunk kernels in float32 as on one machine, but the sums over chunks
differ from one machine's at float32 precision, which can change an accepted Metropolis proposal;
the exactness claim is for float64.
"""
from __future__ import annotations

import numpy as np
from sklearn.base import is_classifier
from sklearn.preprocessing import LabelBinarizer

from rffkern._adaptive_chain import (PairRows, chain_start, class_temperature, fit_chain, holdout_sums,
                                     median_scale_of, pair_stats)
from rffkern._calibration import calibration_rows
from rffkern._dask import (SAMPLE_ROWS, DaskRows, check_labels, class_counts, prepare_input, probe_standardization,
                           sample_rows)
from rffkern._dask_ridge import Inputs, fit_ridge_map
from rffkern._data import TargetScaler
from rffkern._progress import ProgressLog
from rffkern._validation import as_generator, resolve_n_threads

__all__ = ["fit_adaptive", "DaskPairRows"]


def _one_hot(binarizer, yb):
    """The classifier's one-hot targets of a label chunk (both columns for two classes), float64."""
    Y = binarizer.transform(np.asarray(yb)).astype(np.float64)
    return np.hstack([1 - Y, Y]) if Y.shape[1] == 1 else Y


class _CentredTargets:
    """Adaptive RFF's targets of a chunk: the regressor's scaled (or only centred) outputs, or the
    classifier's centred one-hot columns."""

    def __init__(self, scaler=None, binarizer=None, y_mean=None):
        self.scaler, self.binarizer, self.y_mean = scaler, binarizer, y_mean

    def __call__(self, yb):
        if self.scaler is not None:
            yb = np.asarray(yb, np.float64)
            return self.scaler.transform(yb.reshape(yb.shape[0], -1))
        return _one_hot(self.binarizer, yb) - self.y_mean


def _chunk_pair_stats(ctx, block):
    Xs, Y = ctx["inputs"](block.X, block.y)
    Xs, Y, w = block.masked(Xs, Y, block.w)
    if not Xs.shape[0]:
        return None
    return pair_stats(Xs, Y, ctx["W"], ctx["n_threads"], w)


def _chunk_holdout_sums(ctx, block):
    Xs, Y = ctx["inputs"](block.X, block.y)
    Xv, Yv, wv = block.masked(Xs, Y.astype(Xs.dtype), block.w)
    if not Xv.shape[0]:
        return None
    return holdout_sums(Xv, Yv, ctx["W"], ctx["coefs"], ctx["n_lambdas"], ctx["n_threads"], wv)


def _chunk_weight_totals(_, block):
    """The relative weights' sum over the chunk and over its mask's rows."""
    return np.array([block.w.sum(), block.weights().sum()])


def _chunk_class_sums(binarizer, block):
    """The weighted sums of a chunk's one-hot targets and its weight total."""
    return block.w @ _one_hot(binarizer, block.y), float(block.w.sum())


class DaskPairRows(PairRows):
    """:class:`rffkern._adaptive_chain.PairRows` on :class:`rffkern._dask.DaskRows` ``data``: the
    least squares on the rows of the mask ``mask`` (weighted row count ``total``), the held-out
    errors on those of ``val_mask``; each a pass over the chunks."""

    def __init__(self, data, inputs, n_threads, total, mask="all", val_mask=None):
        self.data, self.inputs, self.n_threads = data, inputs, n_threads
        self.total, self.mask, self.val_mask = total, mask, val_mask

    def stats(self, W):
        ctx = {"inputs": self.inputs, "W": W, "n_threads": self.n_threads}
        (out,) = self.data.compute(self.data.reduce(_chunk_pair_stats, ctx, mask=self.mask))
        return out

    def validation_sums(self, W, coefs, n_lambdas):
        ctx = {"inputs": self.inputs, "W": W, "coefs": coefs, "n_lambdas": n_lambdas, "n_threads": self.n_threads}
        (sums,) = self.data.compute(self.data.reduce(_chunk_holdout_sums, ctx, mask=self.val_mask))
        return sums

    def ridge_map(self, fmap, penalties, score_single=False):
        return fit_ridge_map(self.data, fmap, self.inputs, penalties, "loo", 0.1, None, fit_intercept=False,
                             score_single=score_single, mask=self.mask)

    def progress(self):
        return f", data passes {self.data.passes}"


def fit_adaptive(est, X, y, choose, sample_weight=None):
    """Fit ``AdaptiveRFFRegressor`` / ``AdaptiveRFFClassifier`` ``est`` on Dask arrays X and y.

    Every least-squares problem (the initial one, one per Metropolis iteration, one per
    resampling, the final one; GCV's lambda from the same statistics) is one pass of per-chunk
    ``2K x 2K`` pair-feature Grams reduced on the workers; the Metropolis chain (proposals,
    acceptance, adaptive covariance, resampling) runs on the client with the same draws as
    ``est.fit(X.compute(), y.compute(), sample_weight)``.

    ``est`` is validated here and its fitted attributes set; ``X`` (chunked by rows only, known
    chunk sizes), ``y`` (rechunked to X's rows) and ``sample_weight`` (Dask array, array-like,
    float or None) are taken as :func:`rffkern._dask_eerf.fit_eerf` takes them; ``choose`` is the
    standardization probe of ``standardize="auto"`` (:func:`rffkern.ridge.choose_standardization`).

    Returns
    -------
    est : AdaptiveRFFRegressor or AdaptiveRFFClassifier
        Fitted, with the attributes of the single-machine fit.

    Raises
    ------
    ValueError
        NaN or infinity in X or y, column-chunked X, mismatched lengths, fewer than 2 classes,
        bad weights, or a bad hyper-parameter.
    """
    est._validate_params()
    classifier = is_classifier(est)
    est.__dict__.pop("feature_names_in_", None)
    X, y = prepare_input(X, y, type(est).__name__, classifier)
    data = DaskRows(X, y, sample_weight)
    rng = as_generator(est.random_state)
    log = ProgressLog(est, est.verbose)
    inputs = _scale(est, data, y, classifier, choose, rng, log)
    n_threads = resolve_n_threads(est.n_jobs)
    positive = data.positive_rows() if data.weighted else None
    start = chain_start(est, data.n, data.d, _median_scale(est, data, inputs, rng, positive), rng, positive)
    chain_rows, all_rows = _pair_rows(data, inputs, n_threads, start)
    stats = fit_chain(est, start, chain_rows, all_rows, rng, log)
    if classifier:
        est._temperature, est._set_scores = _temperature(est, data, inputs, all_rows, stats, positive)
    est._n_dask_passes = data.passes
    return est


def _scale(est, data, y, classifier, choose, rng, log):
    """Pass 1 (weighted column moments; the classes), the target scaling or class means, and the
    input standardization (with the probe of ``standardize="auto"``); the chunks' :class:`Inputs`."""
    d = data.d
    if classifier:
        moments, ((classes, counts),) = data.moments(False, (class_counts(y),))
        check_labels(classes, type(est).__name__)
        est.classes_ = classes
        binarizer = LabelBinarizer().fit(classes)
        est.y_mean_ = _class_means(data, binarizer, counts)
        targets = _CentredTargets(binarizer=binarizer, y_mean=est.y_mean_)
    else:
        moments, _ = data.moments(True)
        mean, scale = moments.mean_and_scale()
        scaler = TargetScaler(est.normalize_y)
        scaler.mean_ = mean[d:]
        scaler.scale_ = scale[d:] if est.normalize_y else np.ones(mean.size - d)
        est.y_mean_, est.y_scale_ = scaler.mean_, scaler.scale_
        est._ravel = y.ndim == 1
        targets = _CentredTargets(scaler=scaler)
    est.n_features_in_ = d
    probe = probe_standardization(est, data, moments, d, rng, choose, est.classes_ if classifier else None)
    moments.scale_inputs(est, d, probe)
    if probe is not None:
        log.step("standardize", 1, 1, f"{est.standardize_!r} (probe ridge)")
    return Inputs(est.x_mean_, est.x_scale_, targets)


def _class_means(data, binarizer, counts):
    """The (weighted) means of the one-hot targets: the class counts over the rows without
    weights, one more pass with them."""
    if not data.weighted:
        return counts.astype(np.float64) / data.n
    ((sums, total),) = data.compute(data.reduce(_chunk_class_sums, binarizer))
    return sums / total


def _median_scale(est, data, inputs, rng, positive):
    """One over the median heuristic (``init_scale`` "auto" or "median", else None) of the rows
    the in-memory fit draws (at most ``SAMPLE_ROWS`` of those of positive weight), gathered."""
    if not isinstance(est.init_scale, str):
        return None
    if not data.weighted:
        sample = inputs.x(data.gather_x(sample_rows(data.n, SAMPLE_ROWS, rng)))
        return median_scale_of(sample, None, rng)   # <= SAMPLE_ROWS rows: draws nothing
    X_rows, _, w_rows = data.gather(sample_rows(data.n, SAMPLE_ROWS, rng, within=positive))
    return median_scale_of(inputs.x(X_rows), w_rows, rng)


def _pair_rows(data, inputs, n_threads, start):
    """The chain's rows (every row, or the training part of early stopping's split) and every row,
    as :class:`DaskPairRows`; the split's parts persisted as the masks "adaptive_train" and
    "adaptive_val"."""
    chain_mask, val_mask = "all", None
    chain_total = total = float(data.n)
    if start.split is not None:
        for name, part in zip(("adaptive_train", "adaptive_val"), start.split):
            mask = np.zeros(data.n, bool)
            mask[part] = True
            data.set_mask(name, mask)
        chain_mask, val_mask = "adaptive_train", "adaptive_val"
        chain_total = float(start.split[0].size)
    if data.weighted:  # the weighted row counts N of the penalties
        ((total, chain_total),) = data.compute(data.reduce(_chunk_weight_totals, None, mask=chain_mask))
    chain_rows = DaskPairRows(data, inputs, n_threads, float(chain_total), chain_mask, val_mask)
    return chain_rows, DaskPairRows(data, inputs, n_threads, float(total))


def _temperature(est, data, inputs, all_rows, stats, positive):
    """The classifier's ``temperature_`` from the rows the in-memory fit calibrates on
    (:func:`rffkern._calibration.calibration_rows`, drawn among the rows ``positive`` of positive
    weight, or all rows for None), gathered, and the final frequencies' sums over every row (one
    more pass where the final fit did not compute them)."""
    if stats is None:
        stats = all_rows.stats(est.frequencies_)
    within = None
    if positive is not None:  # (calibration_rows draws among the rows of positive weight)
        within = np.zeros(data.n, bool)
        within[positive] = True
    X_rows, y_rows, w_rows = data.gather(calibration_rows(data.n, within))
    Xs_rows, Yc_rows = inputs(X_rows, y_rows)
    return class_temperature(est, stats, Xs_rows, Yc_rows, w_rows)
