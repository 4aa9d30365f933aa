"""Adaptive RFF on Dask rows (:mod:`rffkern._dask`): :func:`fit_adaptive`.

Pass 1 column statistics, a gather for the median heuristic, then one pass per least-squares
problem: the ``2K x 2K`` Gram of the pair features, ``S.T Y`` and ``Y.T Y`` (GCV and the training
MSE come from the same reduced statistics). The Metropolis chain (:func:`rffkern.adaptive.run_chain`:
proposals, acceptance, covariance) runs on the client. Passes: ``n_iter + 3`` plus one per
resampling (the single-machine fit does ``n_iter + 2``, or ``n_iter + 4`` with GCV); plus a Gram
and a LOO pass per initial width of ``init_scale="auto"`` (on the chain's rows), a Gram and a
held-out prediction pass per check of ``early_stopping`` (the chain's least squares on the
training rows through a persisted mask), or a Gram and a LOO pass for the final lambda without
it.

``X.dtype`` float32 runs the chunk kernels in float32 as on one machine, but the sums over chunks
differ from one machine's at float32 precision, which can change an accepted Metropolis proposal;
the exactness claim is for float64.
"""
from __future__ import annotations

import numpy as np

from rffkern._calibration import calibration_rows
from rffkern._dask import DaskRows, check_labels, class_counts, prepare_input, probe_standardization, sample_rows
from rffkern._dask_ridge import Inputs, fit_ridge_map
from rffkern._data import TargetScaler, holdout_split
from rffkern._linalg import RidgeEigen, ridge_solve
from rffkern._progress import ProgressLog
from rffkern._ridge_solvers import FourierFeatureMap
from rffkern._validation import as_generator, resolve_n_threads

__all__ = ["fit_adaptive"]


def _chunk_pair_gram(ctx, block):
    from rffkern import kernels

    Xb, yb, mb = block.X, block.y, block.mask
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


def _chunk_pair_holdout(ctx, block):
    from rffkern import kernels

    Xb, yb, mb = block.X, block.y, block.mask
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


def fit_adaptive(est, X, y, choose):
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
    X, y = prepare_input(X, y, name, classifier)
    data = DaskRows(X, y)
    n, d = data.n, data.d
    if classifier:
        moments, ((classes, counts),) = data.moments(False, (class_counts(y),))
        check_labels(classes, name)
        est.classes_ = classes
        binarizer = LabelBinarizer().fit(classes)
        if len(classes) == 2:
            est.y_mean_ = np.array([counts[0], counts[1]], np.float64) / n
        else:
            est.y_mean_ = counts.astype(np.float64) / n
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
    log = ProgressLog(est, est.verbose)
    rng = as_generator(est.random_state)
    probe = probe_standardization(est, data, moments, d, rng, choose, est.classes_ if classifier else None)
    moments.scale_inputs(est, d, probe)
    if probe is not None:
        log.step("standardize", 1, 1, f"{est.standardize_!r} (probe ridge)")
    inputs = Inputs(est.x_mean_, est.x_scale_, targets)
    n_threads = resolve_n_threads(est.n_jobs)

    # _AdaptiveRFFBase._run, with every least-squares problem on reduced statistics
    K = est.n_components
    median_scale = None
    if isinstance(est.init_scale, str):
        sample = inputs.x(data.gather_x(sample_rows(n, 2000, rng)))
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
            loo = fit_ridge_map(data, fmap, inputs, search, "loo", 0.1, rng, fit_intercept=False, score_single=True,
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
            lambda f, pens, intercept: fit_ridge_map(data, f, inputs, pens, "loo", 0.1, rng,
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
        Xs_rows, Yc_rows = inputs(*data.gather(calibration_rows(n))[:2])
        est._store_temperature(G, SY, n, Xs_rows, Yc_rows)
    est._n_dask_passes = data.passes
    return est


