"""EERF on Dask rows (:mod:`rffkern._dask`): :func:`fit_eerf`.

Pass 1 the weighted column statistics (standardisation, target scaling, the scoring target's
range over the rows of positive weight, the classes' weights, finiteness); a gather of at most
2000 rows for the k-NN width; pass 2 the energy scores ``Phi.T (w T)`` of the ``M0`` candidates on
the scoring rows of every chunk (summed, divided by the scoring rows' weight on the client); the
top-M selection on the client; pass 3 the weighted :class:`~rffkern._ridge_solvers.GramStats` of
the M kept features (train and validation rows separately for ``alpha_selection="validation"``);
pass 4 only for an alpha list with ``"loo"`` (leave-one-out sums) or ``"validation"`` (held-out
squared errors). 3 to 4 passes per width: ``length_scale="auto"`` repeats passes 2 to 4 for each
width of the search (4 to 7 widths, the candidates drawn once), so ``1 + 3 * widths`` passes with
LOO.

The random draws are those of the single-machine fit, in the same order
(:func:`rffkern._eerf_core.draw_candidates` and :func:`~rffkern._eerf_core.fit_widths` serve both):
where it uses a random subset of rows (the scoring subsample among the rows of positive weight,
the k-NN width rule, the held-out split of ``alpha_selection="validation"``), the client draws the
same row indices and the workers select those rows of their chunks through a boolean mask
persisted with the data's chunks, or the few rows of the width rule are gathered.
"""
from __future__ import annotations

import copy
import time

import numpy as np
from sklearn.base import is_classifier
from sklearn.preprocessing import LabelBinarizer

from rffkern._calibration import calibration_rows
from rffkern._dask import DaskRows, check_labels, prepare_input, probe_standardization
from rffkern._dask_ridge import Inputs, ScaledTargets, SignTargets, fit_ridge_map
from rffkern._data import TargetScaler
from rffkern._eerf_core import draw_candidates, eerf_scores, fit_widths, store_ridge, store_top
from rffkern._progress import ProgressLog
from rffkern._ridge_solvers import as_alpha_list
from rffkern._validation import as_generator, resolve_n_threads

__all__ = ["fit_eerf"]


class ClassWeights:
    """The classes of a chunk of labels and the total relative weight of each (its row count
    without weights); mergeable, so that one pass gives the classes and the weighted means of the
    +-1 indicators."""

    def __init__(self, labels, w=None):
        self.classes, inverse = np.unique(np.asarray(labels), return_inverse=True)
        self.totals = np.bincount(inverse.ravel(), weights=w, minlength=self.classes.size).astype(np.float64)

    def merged(self, other):
        out = copy.copy(self)
        out.classes, inverse = np.unique(np.concatenate([self.classes, other.classes]), return_inverse=True)
        out.totals = np.bincount(inverse.ravel(), weights=np.concatenate([self.totals, other.totals]),
                                 minlength=out.classes.size).astype(np.float64)
        return out


def _chunk_class_weights(_, block):
    return ClassWeights(block.y, block.w)


def _chunk_scores(ctx, block):
    """``Phi.T (w T)`` of the chunk's scoring rows (the weighted sum of the scores), and their
    total weight (their count without weights)."""
    Xs, Y = ctx["inputs"](block.X, block.y)
    Xs, Y, w = block.masked(Xs, Y, block.w)
    if not Xs.shape[0]:
        return None
    T = (Y - ctx["t_mean"]) / ctx["t_scale"]
    if w is not None:
        T = T * w[:, None]
    S = eerf_scores(Xs, T, ctx["W"], ctx["b0"], kernel=ctx["kernel"], n_threads=ctx["n_threads"])
    return S.astype(np.float64) * Xs.shape[0], (Xs.shape[0] if w is None else float(w.sum()))


class _Fit:
    """One Dask fit's rows, targets and input scaling, as the in-memory fit holds them."""

    def __init__(self, est, data, targets, t_mean, t_scale, target_scale, ravel, log):
        self.est, self.data, self.log = est, data, log
        self.t_mean, self.t_scale, self.target_scale, self.ravel = t_mean, t_scale, target_scale, ravel
        self.inputs = Inputs(est.x_mean_, est.x_scale_, targets)
        # the rows EERF scores: those of positive weight (None: every row)
        self.positive = data.positive_rows() if data.weighted else None

    def global_rows(self, positions):
        """The rows of the data at ``positions`` among the rows of positive weight (None: all of them)."""
        if self.positive is None:
            return positions
        return self.positive if positions is None else self.positive[positions]

    def knn_sample(self, positions):
        """The standardized rows and relative weights of the k-NN width rule, gathered."""
        X_rows, _, w_rows = self.data.gather(self.global_rows(positions))
        return self.inputs.x(X_rows), w_rows

    def draw(self, rng):
        """The candidates, and the mask of the scoring rows on the workers."""
        est, data = self.est, self.data
        n_rows = data.n if self.positive is None else self.positive.size
        drawn = draw_candidates(est, n_rows, data.d, rng, self.knn_sample)
        rows = self.global_rows(drawn.rows)
        mask = None
        if rows is not None:
            mask = np.zeros(data.n, bool)
            mask[rows] = True
        data.set_mask("score", mask)
        return drawn

    def select(self, drawn, width):
        """Score the candidates at ``width`` over the chunks and keep the top M."""
        est = self.est
        W = None if drawn.W0 is None else (drawn.W0 if width is None else drawn.W0 / width)
        ctx = {"inputs": self.inputs, "t_mean": self.t_mean, "t_scale": self.t_scale, "W": W, "b0": drawn.b0,
               "kernel": est.kernel, "n_threads": resolve_n_threads(est.n_jobs)}
        ((S, total),) = self.data.compute(self.data.reduce(_chunk_scores, ctx, mask="score"))
        store_top(est, S / total, W, drawn.b0, width)
        self.log.step("select", 1, 2, f"candidates {est.n_candidates_}, kept {est.n_components}, scoring rows "
                      f"{est.n_subsample_}, length_scale {est.length_scale_}")

    def ridge(self, split_rng, several):
        """The weighted ridge on the kept features, reduced over the chunks; its least selection
        error in the units of the scaled targets."""
        est, alphas = self.est, as_alpha_list(self.est.alpha)
        fitted = fit_ridge_map(self.data, est._map(), self.inputs, alphas, est.alpha_selection, 0.1, split_rng,
                               score_single=several)
        error = store_ridge(est, fitted, self.target_scale, self.ravel)
        self.log.step("ridge", 2, 2, f"alpha {est.alpha_:.3g}, alphas searched {len(alphas)}, "
                      f"data passes {self.data.passes}")
        return error

    def fit(self, rng):
        """The candidates, then every width's selection and ridge; the timings."""
        t0 = time.perf_counter()
        drawn = self.draw(rng)
        times = [time.perf_counter() - t0, 0.0]  # selecting, fitting the ridge

        def fit_width(width, split_rng, several):
            t1 = time.perf_counter()
            self.select(drawn, width)
            t2 = time.perf_counter()
            error = self.ridge(split_rng, several)
            times[0] += t2 - t1
            times[1] += time.perf_counter() - t2
            return error

        fit_widths(self.est, drawn.widths, drawn.base, fit_width, rng)
        self.est.preprocessing_time_, self.est.training_time_ = times

    def store_temperature(self):
        """The classifier's temperature from the in-memory fit's calibration rows, gathered."""
        est = self.est
        n_rows = self.data.n if self.positive is None else self.positive.size
        X_rows, y_rows, w_rows = self.data.gather(self.global_rows(calibration_rows(n_rows)))
        est._store_temperature(*self.inputs(X_rows, y_rows), w_rows)


def _classifier_targets(est, data):
    """Pass 1 of a classifier: the moments of X, the classes and their weights; ``(moments,
    targets, the weighted mean of the +-1 columns, ravel)``."""
    moments, (weights,) = data.moments(False, (data.reduce(_chunk_class_weights, None),))
    check_labels(weights.classes, type(est).__name__)
    binarizer = LabelBinarizer(neg_label=-1, pos_label=1).fit(weights.classes)
    est.classes_ = binarizer.classes_
    two = len(weights.classes) == 2
    total = weights.totals.sum()
    pos = weights.totals[1:] if two else weights.totals
    return moments, SignTargets(binarizer), (2.0 * pos - total) / total, two


def _regressor_targets(est, data, y):
    """Pass 1 of a regressor: the moments of X and y; ``(moments, targets, the scoring targets'
    mean and scale, ravel)`` with the target scaling of the in-memory fit."""
    d = data.d
    moments, _ = data.moments(True)
    y_min, y_max = moments.lo[d:], moments.hi[d:]  # over the rows of positive weight
    mean, scale = moments.mean_and_scale()
    scaler = TargetScaler(est.normalize_y)
    if est.normalize_y:
        scaler.mean_, scaler.scale_ = mean[d:], scale[d:]
    else:
        scaler.mean_, scaler.scale_ = np.zeros(mean.size - d), np.ones(mean.size - d)
    est.y_mean_, est.y_scale_ = scaler.mean_, scaler.scale_
    t_mean = (mean[d:] - scaler.mean_) / scaler.scale_   # the weighted mean of the scaled targets
    low, high = (y_min - scaler.mean_) / scaler.scale_, (y_max - scaler.mean_) / scaler.scale_
    peak = np.maximum(high - t_mean, t_mean - low)       # max |Y - mean| per output
    return moments, ScaledTargets(scaler), (t_mean, np.where(peak > 0, peak, 1.0)), y.ndim == 1


def fit_eerf(est, X, y, sample_weight, choose):
    """Fit ``EERFRegressor`` / ``EERFClassifier`` ``est`` on Dask arrays X (chunked by rows) and y,
    with ``sample_weight`` as the in-memory ``fit`` takes it.

    The same model as ``est.fit(X.compute(), y.compute(), sample_weight)`` up to the order of
    floating-point sums: the same scoring rows (among the rows of positive weight), candidates,
    k-NN width sample and held-out split (drawn on the client from the same generator), the
    weighted energy scores summed over the chunks, the kept features' weighted Gram statistics
    reduced on the workers, alpha chosen from them as on one machine. The classifier's
    ``solver="logistic"`` (scikit-learn's iterative solver on the n x M features) is refused.

    Parameters
    ----------
    est : EERFRegressor or EERFClassifier
        The estimator; its hyper-parameters are validated here and its fitted attributes set.
    X : dask.array.Array of shape (n_samples, n_features)
        Chunked by rows only (every row whole in one chunk); known chunk sizes.
    y : dask.array.Array or array-like of shape (n_samples,) or (n_samples, n_targets)
        Numeric targets (regressor) or class labels (classifier). Rechunked to X's row chunks.
    sample_weight : dask.array.Array, array-like, float or None
        Non-negative weights of the rows (None: equal), rechunked to X's row chunks and made
        relative as on one machine.
    choose : callable
        The standardization probe of ``standardize="auto"``
        (:func:`rffkern.ridge.choose_standardization`).

    Returns
    -------
    est : EERFRegressor or EERFClassifier
        Fitted, with the attributes of the single-machine fit.

    Raises
    ------
    ValueError
        NaN or infinity in X or y, bad weights, column-chunked X, mismatched lengths, fewer than 2
        classes, ``solver='logistic'``, or a bad hyper-parameter (as on one machine).
    """
    est._validate_params()
    classifier = is_classifier(est)
    if classifier and est.solver != "ridge":
        raise ValueError(f"solver={est.solver!r} is not supported on Dask arrays: only the closed-form "
                         f"solver='ridge' is fitted from distributed statistics")
    est.__dict__.pop("feature_names_in_", None)
    log = ProgressLog(est, est.verbose)
    X, y = prepare_input(X, y, type(est).__name__, classifier)
    data = DaskRows(X, y, sample_weight)
    if classifier:
        moments, targets, t_mean, ravel = _classifier_targets(est, data)
        t_scale, target_scale = 1.0, (1.0, 0.0)
    else:
        moments, targets, (t_mean, t_scale), ravel = _regressor_targets(est, data, y)
        target_scale = (est.y_scale_, est.y_mean_)
    est.n_features_in_ = data.d
    rng = as_generator(est.random_state)
    probe = probe_standardization(est, data, moments, data.d, rng, choose, est.classes_ if classifier else None)
    moments.scale_inputs(est, data.d, probe)
    if probe is not None:
        log.step("standardize", 1, 1, f"{est.standardize_!r} (probe ridge)")
    fit = _Fit(est, data, targets, t_mean, t_scale, target_scale, ravel, log)
    fit.fit(rng)
    if classifier:  # predict_proba's temperature
        fit.store_temperature()
    del est._ridge_stats
    est._n_dask_passes = data.passes
    return est
