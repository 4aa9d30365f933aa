"""The ridge family on Dask rows (:mod:`rffkern._dask`): ``RFFRidge`` / ``RFFRidgeClassifier``
(:func:`fit_ridge`) and the ridge on any feature map (:func:`fit_ridge_map`, the closing and
feature-selection fits of EERF, SRFF and RFFNet).

:func:`fit_ridge`: one pass for the weighted column statistics (standardization, target scaling,
finiteness) and a small row sample (median heuristic); one pass of per-chunk :class:`GramStats`
for every candidate width, reduced by a binary tree on the workers; for
``alpha_selection="loo"`` one more pass of per-chunk leave-one-out sums (:class:`LooPass`); the
O(s^3) solves on the client, with the same code as one machine.
"""
from __future__ import annotations

import copy

import numpy as np

from rffkern._dask import DaskRows, head_sample, prepare_input, probe_standardization
from rffkern._calibration import calibration_rows
from rffkern._data import holdout_split
from rffkern._linalg import RidgeEigen
from rffkern._ridge_solvers import GramStats, LooPass, as_alpha_list, choose_alpha, gram_errors, solve_ridge
from rffkern._selection import one_se_kernel, one_se_width
from rffkern._validation import as_generator

__all__ = ["fit_ridge", "fit_ridge_map", "Inputs", "ScaledTargets", "SignTargets", "paired_standard_errors"]


# -- RFFRidge ---------------------------------------------------------------------------------------

def _ridge_targets(est, yb, dtype):
    """The scaled targets of a chunk, as ``fit`` makes them on one machine."""
    from sklearn.base import is_classifier

    Y = est._targets(yb) if is_classifier(est) else yb.reshape(yb.shape[0], -1)
    return est._target_scaler.transform(Y.astype(dtype)).astype(dtype)


def chunk_grams(ctx, block):
    """Per candidate map (its frequencies: a width, or a kernel at a width), the :class:`GramStats`
    of a chunk."""
    est, weights, n_targets = ctx
    Xs, Ys = est._standardized(block.X), _ridge_targets(est, block.y, block.X.dtype)
    return [GramStats(est._map(W).n_out, n_targets, Xs.dtype).add(est._map(W), Xs, Ys, block.w) for W in weights]


def chunk_loo(ctx, block):
    """The (weighted) LOO sums of a chunk per candidate map and alpha, shape (n_maps * n_alphas,),
    under "sse"; with ``moments`` (the one-standard-error rules) also the sums that give the
    standard errors of paired differences (:func:`paired_standard_errors`): ``w2`` the sum of the
    squared weights, ``w2R`` of the squared weights times every row's squared residuals, ``w2RR``
    of their products over every pair of (map, alpha)."""
    est, weights, passes, moments = ctx
    Xs, Ys = est._standardized(block.X), _ridge_targets(est, block.y, block.X.dtype)
    if not moments:
        return {"sse": np.concatenate([p.sse(est._map(W), Xs, Ys, block.w) for W, p in zip(weights, passes)])}
    rows = [np.empty((Xs.shape[0], p.inv.shape[0])) for p in passes]
    sse = np.concatenate([p.sse(est._map(W), Xs, Ys, block.w, row_out=r) for W, p, r in zip(weights, passes, rows)])
    R = np.hstack(rows)
    w2 = np.ones(Xs.shape[0]) if block.w is None else block.w ** 2
    return {"sse": sse, "w2": float(w2.sum()), "w2R": w2 @ R, "w2RR": (R * w2[:, None]).T @ R}


def paired_standard_errors(sums, stats, alpha_index, n_targets, base=None):
    """Per candidate map, the standard error of the (weighted) mean per-row difference of its
    squared LOO residuals (at its chosen alpha, averaged over the targets, in y's units) to those of
    the map ``base`` (None: the one of least error): from the chunk sums of :func:`chunk_loo`
    (``moments=True``), as one machine computes it from the rows
    (:func:`rffkern._selection.paired_standard_error`) up to rounding."""
    n_alphas = sums["sse"].shape[0] // len(stats)
    cols = [k * n_alphas + a for k, a in enumerate(alpha_index)]
    units = [s.target_scale ** 2 / n_targets for s in stats]  # a row's residual sum -> its loss in y's units
    total, w2 = float(stats[0].n), float(sums["w2"])
    means = [sums["sse"][c] * u / total for c, u in zip(cols, units)]
    best = int(np.argmin(means)) if base is None else base
    k_eff = total * total / w2 if w2 > 0 else 0.0
    cb, ub = cols[best], units[best]
    out = []
    for k, (c, u) in enumerate(zip(cols, units)):
        mean_d = means[k] - means[best]
        s1 = u * sums["w2R"][c] - ub * sums["w2R"][cb]
        s2 = u * u * sums["w2RR"][c, c] + ub * ub * sums["w2RR"][cb, cb] - 2.0 * u * ub * sums["w2RR"][c, cb]
        spread = max(s2 - 2.0 * mean_d * s1 + mean_d * mean_d * w2, 0.0)  # sum_i w_i^2 (d_i - mean)^2
        out.append(float(np.sqrt(spread / total**2 * k_eff / (k_eff - 1))) if k_eff > 1 else float("nan"))
    return out


def fit_ridge(est, X, y, sample_weight=None, choose=None):
    """Fit ``RFFRidge`` / ``RFFRidgeClassifier`` ``est`` on Dask arrays X (chunked by rows) and y,
    with ``sample_weight`` (array-like, Dask array or None) as the in-memory ``fit`` takes it.

    The same model as ``est.fit(X.compute(), y.compute(), sample_weight)`` up to the order of
    floating-point sums (the tests hold it to 1e-10 relative in float64), except where the
    single-machine fit samples rows: the median heuristic and ``feature_importances_`` use the
    first rows of randomly chosen chunks. ``alpha_selection="validation"`` (a held-out split) is
    refused. ``choose``: the standardization probe of ``standardize="auto"``
    (:func:`rffkern.ridge.choose_standardization`).
    """
    from sklearn.base import is_classifier

    est._validate_params()
    for name in ("_stats", "_first_chunk_constant", "feature_names_in_"):  # (a previous fit's)
        est.__dict__.pop(name, None)
    classifier = is_classifier(est)
    X, y = prepare_input(X, y, type(est).__name__, classifier)
    alphas = as_alpha_list(est.alpha)
    if est.alpha_selection == "validation" and (len(alphas) > 1 or isinstance(est.length_scale, str)):
        raise ValueError("alpha_selection='validation' is not supported on Dask arrays; use 'loo' or 'gcv'")
    rows = DaskRows(X, y, sample_weight)
    n_targets = _set_targets(est, y, classifier)
    est.n_features_in_ = d = X.shape[1]
    rng = as_generator(est.random_state)
    unit = est._draw_map(d, rng)  # the same draws as one machine
    probe_rng = copy.deepcopy(rng)  # the probe's seed, before the sample's draws (which depend on the chunks)
    sample = head_sample(X, rng, y, rows.w)
    moments, (sample,) = rows.moments(not classifier, (sample,))
    X_sample, y_sample, w_sample = _relative_sample(sample, rows)
    est._varying_inputs = ~moments.constant()[:d]  # the inputs that vary over all rows (importances)
    # "auto" with a searched width: the probe ridge on at most PROBE_ROWS gathered rows (RFFRidge.fit
    # compares the two standardizations in its own width search, which here would take passes over
    # every row); with a given width, True (a width in the units of each input's own deviation)
    probe = None
    if len(est._geometries()) > 1:
        probe = probe_standardization(est, rows, moments, d, probe_rng, choose, est.classes_ if classifier else None)
    moments.scale_inputs(est, d, probe)
    est._column_scale = moments.input_standardization(d, True, est.robust_inputs).scale  # the importances' units
    _set_target_scaler(est, moments, d, n_targets)
    Xs_sample = est._standardized(X_sample)
    widths = est._candidate_widths(Xs_sample, rng, w_sample)
    rng.integers(2**32 - 1)  # the held-out split's seed on one machine: keeps the later draws the same
    passes = _width_passes(est, rows, unit, widths, alphas, n_targets)
    unit, (stats, errors_per_width, sse) = _compare_kernels(est, rows, widths, alphas, n_targets, passes)
    ravel = n_targets == 1 if classifier else y.ndim == 1
    _choose_width(est, widths, alphas, stats, errors_per_width, sse, n_targets, ravel)
    est.weights_ = unit / est.length_scale_
    est._units = {}
    est._stats.weight_unit = rows.weight_unit
    est._store_derivative_norms(Xs_sample, w_sample, rng=rng)
    if classifier:  # predict_proba's temperature, from the sample's leave-one-out decisions
        est._store_calibration(Xs_sample, est._targets(np.asarray(y_sample).reshape(-1)), w_sample)
    else:  # predict_interval's scores, from the rows the in-memory fit takes: the same intervals
        X_rows, y_rows, w_rows = calibration_sample(X, y, rows)
        est._store_calibration(est._standardized(X_rows), y_rows.reshape(y_rows.shape[0], -1), w_rows)
    return est


def calibration_sample(X, y, rows):
    """The rows of :func:`rffkern._calibration.calibration_rows` of the Dask rows (X, y) gathered
    on the client, with their relative weights (None without): those the in-memory fit takes."""
    import dask

    w = None
    if rows.weighted:
        (w,) = dask.compute(rows.w)
        w = np.asarray(w, np.float64) / rows.weight_unit
    idx = calibration_rows(rows.n, w)
    # one task per chunk that holds some of them, returning those rows only: a chunk's memory at a
    # time per thread, as the fit's passes (a fancy index of the collection held several chunks)
    starts = np.cumsum((0,) + rows.chunks)
    take = dask.delayed(_take_rows, pure=True)
    parts = []
    for i, (xb, yb) in enumerate(zip(rows.x_blocks, rows.y_blocks)):
        local = idx[(idx >= starts[i]) & (idx < starts[i + 1])] - starts[i]
        if local.size:
            parts.append(take(xb, yb, local))
    gathered = rows.compute(*parts)
    X_rows = np.concatenate([np.asarray(g[0]) for g in gathered])
    y_rows = np.concatenate([np.asarray(g[1]) for g in gathered])
    return X_rows, y_rows, None if w is None else w[idx]


def _take_rows(X_block, y_block, local):
    return np.asarray(X_block)[local], np.asarray(y_block)[local]


def _relative_sample(sample, rows):
    """The head sample's (X, y, relative weights or None)."""
    X_sample, y_sample, w_sample = (np.asarray(a) if a is not None else None for a in sample)
    if w_sample is not None:
        w_sample = w_sample.astype(np.float64) / rows.weight_unit
    return X_sample, y_sample, w_sample


def _set_targets(est, y, classifier):
    """The classes of a classifier; the number of target columns."""
    import dask.array as da
    from sklearn.utils.multiclass import check_classification_targets

    if not classifier:
        return 1 if y.ndim == 1 else y.shape[1]
    classes = da.unique(y).compute()
    check_classification_targets(classes)
    est._set_classes(classes)
    return 1 if len(est.classes_) == 2 else len(est.classes_)


def _set_target_scaler(est, moments, d, n_targets):
    est._target_scaler = est._make_target_scaler()
    if est._target_scaler.normalize:
        mean, scale = moments.mean_and_scale()
        est._target_scaler.mean_, est._target_scaler.scale_ = mean[d:], scale[d:]
    else:
        est._target_scaler.mean_, est._target_scaler.scale_ = np.zeros(n_targets), np.ones(n_targets)


def _width_passes(est, rows, unit, widths, alphas, n_targets):
    """The passes of every width (:func:`_map_passes`), with the sums of the one-standard-error
    rule for ``length_scale="auto"`` (or ``kernel="auto"``, which compares kernels at one of them)."""
    one_se = len(widths) > 1 and "auto" in (est.length_scale, est.kernel)
    return _map_passes(est, rows, [unit / w for w in widths], alphas, n_targets, one_se)


def _map_passes(est, rows, weights, alphas, n_targets, one_se):
    """The Gram pass of every candidate map (``weights``: its frequencies); the LOO pass (with the
    sums of the one-standard-error rules with ``one_se``) or GCV where there is a choice.
    ``(stats, errors per map, LOO sums)``."""
    (stats,) = rows.compute(rows.reduce(chunk_grams, (est, weights, n_targets)))
    score = len(alphas) > 1 or len(weights) > 1
    if score and est.alpha_selection == "loo":
        passes = [LooPass(s, alphas, est.fit_intercept) for s in stats]
        (sse,) = rows.compute(rows.reduce(chunk_loo, (est, weights, passes, one_se)))
        per_map = sse["sse"].reshape(len(weights), len(alphas))
        return stats, [e / (s.n * n_targets) for e, s in zip(per_map, stats)], sse if one_se else None
    if score:
        return stats, [gram_errors(s, alphas, est.fit_intercept, est.alpha_selection) for s in stats], None
    return stats, [None], None


def _compare_kernels(est, rows, widths, alphas, n_targets, gaussian):
    """``kernel="auto"`` as :meth:`rffkern.ridge.RFFRidge._compare_kernels` on one machine: from the
    Gaussian's width ``passes``, its width of least error; one pass more for the Matérn candidates
    there beside the Gaussian (their paired standard errors to it); the kept kernel
    (:func:`rffkern._selection.one_se_kernel`) at every width where a Matérn one is kept.
    Returns ``(unit-width frequencies, passes)`` of the kept kernel."""
    unit_of = est._units
    if est.kernel != "auto":
        return unit_of[(est.kernel_, est.nu_)], gaussian
    _, _, errors = _alpha_fits(alphas, gaussian[0], gaussian[1], est.alpha_selection)
    at = int(np.argmin(errors))
    candidates = est._kernel_candidates()[1:]
    weights = [unit_of[("gaussian", None)] / widths[at]] + [unit_of[c] / widths[at] for c in candidates]
    stats, errors_per_map, sums = _map_passes(est, rows, weights, alphas, n_targets, True)
    _, alpha_index, probe_errors = _alpha_fits(alphas, stats, errors_per_map, est.alpha_selection)
    ses = paired_standard_errors(sums, stats, alpha_index, n_targets, base=0)[1:] if sums is not None else \
        [np.nan] * len(candidates)
    est.kernel_errors_ = {("gaussian", None): errors[at], **dict(zip(candidates, probe_errors[1:]))}
    kept = one_se_kernel(errors[at], probe_errors[1:], ses)
    if kept is None:
        return unit_of[("gaussian", None)], gaussian
    est.kernel_, est.nu_ = candidates[kept]
    return unit_of[candidates[kept]], _width_passes(est, rows, unit_of[candidates[kept]], widths, alphas, n_targets)


def _alpha_fits(alphas, stats, errors_per_width, selection="loo"):
    """Per width, ``(alpha, errors, stats)`` at its chosen alpha; the alphas' indices; the least errors."""
    fits, alpha_index, least = [], [], []
    for s, errors in zip(stats, errors_per_width):
        alpha = alphas[0]
        if errors is not None:
            alpha, errors = choose_alpha(alphas, errors, s, selection)
        alpha_index.append(list(alphas).index(alpha))
        least.append(np.inf if errors is None else float(np.min(errors)))
        fits.append((alpha, errors, s))
    return fits, alpha_index, least


def _choose_width(est, widths, alphas, stats, errors_per_width, sse, n_targets, ravel):
    """alpha per width, then the width (least error, or the one-standard-error rule from ``sse``'s
    sums); stores the solution."""
    fits, alpha_index, est.width_errors_ = _alpha_fits(alphas, stats, errors_per_width, est.alpha_selection)
    if sse is not None and isinstance(est.length_scale, str) and est.length_scale == "auto":
        pick = one_se_width(est.width_errors_, paired_standard_errors(sse, stats, alpha_index, n_targets))
    else:
        pick = int(np.argmin(est.width_errors_))
    alpha, errors, s = fits[pick]
    # as the in-memory fit (rffkern.fit's RFFNet start)
    est._width_search = {est.standardize_: ([float(v) for v in widths], list(est.width_errors_))}
    est.length_scale_ = widths[pick]
    est._store(*solve_ridge(s, alpha, est.fit_intercept), alpha, errors, s, ravel=ravel)


# -- the ridge on a feature map ---------------------------------------------------------------------

class Inputs:
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


class ScaledTargets:
    """``TargetScaler.transform`` of a regression chunk, (n, m) float64."""

    def __init__(self, scaler):
        self.scaler = scaler

    def __call__(self, yb):
        yb = np.asarray(yb, np.float64)
        return self.scaler.transform(yb.reshape(yb.shape[0], -1))


class SignTargets:
    """``LabelBinarizer(neg_label=-1, pos_label=1)`` of a label chunk (EERF), (n, m) float64."""

    def __init__(self, binarizer):
        self.binarizer = binarizer

    def __call__(self, yb):
        return self.binarizer.transform(np.asarray(yb)).astype(np.float64)


def _map_inputs(ctx, block):
    """A chunk's (X, Y, w) of the rows of its mask, as the single-machine fit passes them."""
    Xs, Y = ctx["inputs"](block.X, block.y)
    return block.masked(Xs, Y.astype(Xs.dtype), block.w)


def _chunk_map_gram(ctx, block):
    Xs, Y = ctx["inputs"](block.X, block.y)
    Y = Y.astype(Xs.dtype)
    out = []
    for sel in ctx["split"](block.mask):
        Xr, Yr, wr = (A if A is None or sel is None else np.ascontiguousarray(A[sel]) for A in (Xs, Y, block.w))
        out.append(GramStats(ctx["fmap"].n_out, Y.shape[1], Xs.dtype).add(ctx["fmap"], Xr, Yr, wr)
                   if Xr.shape[0] else None)
    return out


def _chunk_map_loo(ctx, block):
    Xs, Y, w = _map_inputs(ctx, block)
    return ctx["loo"].sse(ctx["fmap"], Xs, Y, w) if Xs.shape[0] else None


def _chunk_map_validation(ctx, block):
    Xv, Yv, wv = _map_inputs(ctx, block)
    if not Xv.shape[0]:
        return None
    coefs, offsets, scale, m = ctx["coefs"], ctx["offsets"], ctx["target_scale"], Yv.shape[1]
    F = ctx["fmap"].predict(Xv, coefs).astype(np.float64) + offsets
    R = F - np.tile(Yv.astype(np.float64) / scale, coefs.shape[1] // m)
    per_row = (R**2).reshape(Xv.shape[0], -1, m).mean(axis=2)
    return (per_row.sum(axis=0) if wv is None else wv @ per_row), (Xv.shape[0] if wv is None else float(wv.sum()))


def _no_split(mask):
    return [None]


def _train_val_split(mask):
    return [~mask, mask]


def _mask_split(mask):
    return [mask]


def fit_ridge_map(rows, fmap, inputs, alphas, selection, validation_fraction, rng, fit_intercept=True,
                  score_single=False, mask="all"):
    """``rffkern._ridge_solvers.fit_ridge_map`` on :class:`DaskRows` ``rows``, with their weights:
    the same tuple ``(coef, intercept, alpha, errors, stats)``. ``inputs(Xb, yb)`` gives a chunk's
    (X, Y) as the single-machine fit passes them; ``mask`` names the rows fitted (``"all"``, or a
    mask set on ``rows``; not with ``selection="validation"``)."""
    ctx = {"fmap": fmap, "inputs": inputs, "split": _no_split if mask == "all" else _mask_split}
    if (len(alphas) > 1 or score_single) and selection == "validation":
        return _fit_map_validation(rows, ctx, alphas, validation_fraction, rng, fit_intercept)
    ((stats,),) = rows.compute(rows.reduce(_chunk_map_gram, ctx, mask=mask))
    if len(alphas) == 1 and not score_single:
        return (*solve_ridge(stats, alphas[0], fit_intercept), alphas[0], None, stats)
    if selection == "loo":
        lctx = {**ctx, "loo": LooPass(stats, alphas, fit_intercept)}
        (sse,) = rows.compute(rows.reduce(_chunk_map_loo, lctx, mask=mask))
        errors = sse / (stats.n * (stats.ZtY.shape[1] - 1))
    else:
        errors = gram_errors(stats, alphas, fit_intercept, selection)
    best, errors = choose_alpha(alphas, errors, stats, selection)
    return (*solve_ridge(stats, best, fit_intercept), best, errors, stats)


def _fit_map_validation(rows, ctx, alphas, validation_fraction, rng, fit_intercept):
    """The held-out choice of alpha: the Gram of the training rows, the validation rows' squared
    errors for every alpha, then the solution on every row."""
    n = rows.n
    n_val = int(round(validation_fraction * n))
    if n_val < 1 or n - n_val < 1:
        raise ValueError(f"validation_fraction={validation_fraction} leaves no training or validation "
                         f"sample out of {n}")
    _, va = holdout_split(n, n_val, rng)
    mask = np.zeros(n, bool)
    mask[va] = True
    rows.set_mask("ridge_val", mask)
    ctx["split"] = _train_val_split
    ((stats, stats_val),) = rows.compute(rows.reduce(_chunk_map_gram, ctx, mask="ridge_val"))
    G, ZtY, mu, ybar, _ = stats.centred(fit_intercept)
    eig = RidgeEigen(G, ZtY)
    coefs = np.hstack([eig.coef(a) for a in alphas])
    m = ZtY.shape[1]
    offsets = np.concatenate([ybar - mu @ coefs[:, i * m:(i + 1) * m] for i in range(len(alphas))])
    vctx = {**ctx, "coefs": coefs, "offsets": offsets, "target_scale": stats.target_scale}
    ((sse, total),) = rows.compute(rows.reduce(_chunk_map_validation, vctx, mask="ridge_val"))
    if not total > 0:
        raise ValueError("every held-out sample has zero sample_weight; use alpha_selection='loo' or 'gcv'")
    best, errors = choose_alpha(alphas, sse / total, stats)
    stats = stats.merge(stats_val) if stats_val is not None else stats
    return (*solve_ridge(stats, best, fit_intercept), best, errors, stats)
