"""EERF on Dask rows (:mod:`rffkern._dask`): :func:`fit_eerf`.

Pass 1 the column statistics (standardisation, target scaling, the scoring target's range, class
counts, finiteness); a gather of at most 2000 rows for the k-NN width; pass 2 the energy scores
``Phi.T T`` of the ``M0`` candidates on the scoring rows of every chunk (summed, divided by
``N0`` on the client); the top-M selection on the client; pass 3 the
:class:`~rffkern._ridge_solvers.GramStats` of the M kept features (train and validation rows
separately for ``alpha_selection="validation"``); pass 4 only for an alpha list with ``"loo"``
(leave-one-out sums) or ``"validation"`` (held-out squared errors). 3 to 4 passes per width:
``length_scale="auto"`` repeats passes 2 to 4 for each width of the search (4 to 7 widths, the
candidates drawn once), so ``1 + 3 * widths`` passes with LOO.

Where the single-machine fit uses a random subset of rows (the scoring subsample, the k-NN width
rule, the held-out split of ``alpha_selection="validation"``), the client draws the same row
indices from the same generator and the workers select those rows of their chunks through a
boolean mask persisted with the data's chunks, or the few rows of the width rule are gathered.
"""
from __future__ import annotations

import time

import numpy as np

from rffkern._calibration import calibration_rows
from rffkern._dask import DaskRows, check_labels, class_counts, prepare_input, probe_standardization, sample_rows
from rffkern._dask_ridge import Inputs, ScaledTargets, SignTargets, fit_ridge_map
from rffkern._data import TargetScaler
from rffkern._progress import ProgressLog
from rffkern._ridge_solvers import as_alpha_list
from rffkern._selection import EXTENDED_WIDTH_FACTORS, search_widths, width_extension
from rffkern._validation import as_generator, resolve_n_threads

__all__ = ["fit_eerf"]


def _chunk_scores(ctx, block):
    from rffkern.eerf import eerf_scores

    Xb, yb, mb = block.X, block.y, block.mask
    Xs, Y = ctx["inputs"](Xb, yb)
    if mb is not None:
        Xs, Y = np.ascontiguousarray(Xs[mb]), Y[mb]
    if not Xs.shape[0]:
        return None
    T = (Y - ctx["t_mean"]) / ctx["t_scale"]
    S = eerf_scores(Xs, T, ctx["W0"], ctx["b0"], kernel=ctx["kernel"], n_threads=ctx["n_threads"])
    return S.astype(np.float64) * Xs.shape[0]


def fit_eerf(est, X, y, choose):
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
    X, y = prepare_input(X, y, name, classifier)
    data = DaskRows(X, y)
    n, d = data.n, data.d
    if classifier:
        moments, ((classes, counts),) = data.moments(False, (class_counts(y),))
        check_labels(classes, name)
        binarizer = LabelBinarizer(neg_label=-1, pos_label=1).fit(classes)
        est.classes_ = binarizer.classes_
        targets = SignTargets(binarizer)
        pos = counts[1:] if len(classes) == 2 else counts
        t_mean = (2.0 * pos - n) / n            # the mean of the +-1 columns, as Y.mean(0)
        t_scale = 1.0
        ravel = len(classes) == 2
    else:
        moments, _ = data.moments(True)
        y_min, y_max = moments.lo[d:], moments.hi[d:]
        mean, scale = moments.mean_and_scale()
        scaler = TargetScaler(est.normalize_y)
        if est.normalize_y:
            scaler.mean_, scaler.scale_ = mean[d:], scale[d:]
        else:
            scaler.mean_, scaler.scale_ = np.zeros(mean.size - d), np.ones(mean.size - d)
        est.y_mean_, est.y_scale_ = scaler.mean_, scaler.scale_
        targets = ScaledTargets(scaler)
        t_mean = (mean[d:] - scaler.mean_) / scaler.scale_   # Y.mean(0) of the scaled targets
        low, high = (y_min - scaler.mean_) / scaler.scale_, (y_max - scaler.mean_) / scaler.scale_
        peak = np.maximum(high - t_mean, t_mean - low)       # max |Y - mean| per output
        t_scale = np.where(peak > 0, peak, 1.0)
        ravel = y.ndim == 1
    est.n_features_in_ = d
    rng = as_generator(est.random_state)
    probe = probe_standardization(est, data, moments, d, rng, choose, est.classes_ if classifier else None)
    moments.scale_inputs(est, d, probe)
    if probe is not None:
        log.step("standardize", 1, 1, f"{est.standardize_!r} (probe ridge)")
    inputs = Inputs(est.x_mean_, est.x_scale_, targets)

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
                sample = inputs.x(data.gather_x(sample_rows(n, 2000, rng, rows)))
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
        coef, intercept, alpha, errors, est._ridge_stats = fit_ridge_map(data, est._map(), inputs, alphas,
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
        Xs_rows, Y_rows = inputs(*data.gather(calibration_rows(n))[:2])
        est._store_temperature(Xs_rows, Y_rows)
    del est._ridge_stats
    est._n_dask_passes = data.passes
    return est



