"""Energy-based exploration of random features (EERF, Shahrampour, Beirami & Tarokh 2018).

Shahrampour, Beirami & Tarokh 2018, "On data-dependent random features for improved generalization
in supervised learning"; see docs/user_guide/eerf.rst. Draw ``M0`` candidate features from the kernel's data-independent
distribution, score each on a subsample of ``N0`` points by

    S(omega, b) = (1/N0) sum_n y_n phi(x_n; omega, b)

keep the ``M`` candidates with the largest ``|S|`` (each with its own offset), then fit ridge
(regression) or a ridge / logistic classifier on those M features. By default (not the paper) the
Gaussian width is searched: the candidates are drawn once at unit width and scored, selected and
fitted at a few multiples of the paper's k-NN width, and the width of least exact leave-one-out
error is kept (``length_scale="knn"`` is the paper's single width).

For the Gaussian kernel ``phi = cos(omega . x + b)`` and the scores of all candidates are
``Z.T Y / N0``. They come from one call of the compiled :func:`rffkern.kernels.loss_and_grad` with
zero coefficients (the squared-loss coefficient gradient is then exactly ``-Z.T Y / N0``), which
costs O(N0 M0 (d + m)) and memory O(M0 m); :func:`rffkern.kernels.gram` would give the same vector
as its second output but would also build the M0 x M0 Gram, O(N0 M0^2), which is wasted here.

The arc-cosine features ``phi = max(omega . x, 0)^q`` (q = 0, 1, 2; Cho & Saul) have no compiled
kernel: they are computed in NumPy, block by block of rows (memory O(block * M)), for scoring,
Gram and prediction alike. The linear kernel's candidates are the input coordinates themselves.
"""
from __future__ import annotations

import numbers
import time
from typing import Any, Sequence

import numpy as np
from numpy.typing import ArrayLike, NDArray
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
from sklearn.linear_model import LogisticRegression, LogisticRegressionCV
from sklearn.preprocessing import LabelBinarizer
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted, validate_data

from rffkern import kernels
from rffkern._dask import is_dask_array, map_rows, refuse_dask_weights
from rffkern._constraints import COMPONENTS, IntInterval, N_JOBS, RealSequence
from rffkern._data import TargetScaler, labels_from_decision, relative_sample_weight
from rffkern._inputs import fit_input_scaling, scaled_inputs, set_input_scaling
from rffkern._calibration import calibration_rows, class_codes, class_scores, loo_decisions, tempered_log_proba, temperature_of
from rffkern._ridge_solvers import FourierFeatureMap, as_alpha_list, fit_ridge_map
from rffkern._progress import ProgressLog
from rffkern._sampling import knn_distances, weighted_knn_blocks
from rffkern._typing import RandomStateLike
from rffkern._validation import as_generator, check_class_labels, resolve_n_threads
from rffkern._selection import DEFAULT_ALPHAS, EXTENDED_WIDTH_FACTORS, search_widths, width_extension
from rffkern.ridge import choose_standardization, resolve_standardization

__all__ = ["EERFRegressor", "EERFClassifier", "eerf_scores", "knn_length_scale"]

EERF_KERNELS = ("gaussian", "arccos0", "arccos1", "arccos2", "linear")
_BLOCK_ROWS = 2048
#: What a width's selection and ridge fit set (kept for the width of least selection error).
WIDTH_FITTED = ("length_scale_", "weights_", "offsets_", "scores_", "scale_", "coef_",
                 "intercept_", "alpha_", "selection_errors_", "_ridge_stats")


class ArcCosineMap:
    """``scale * max(X @ W, 0)^q`` (``q = 0``: the step function), computed in NumPy by row blocks."""

    def __init__(self, weights, order, scale):
        self.weights, self.order, self.scale = weights, int(order), float(scale)
        self.n_out = weights.shape[1]

    def block(self, Xb):
        U = Xb @ self.weights.astype(Xb.dtype, copy=False)
        if self.order == 0:
            Z = (U > 0).astype(Xb.dtype)
        else:
            np.maximum(U, 0, out=U)
            Z = U if self.order == 1 else U * U
        Z *= self.scale
        return Z

    def features(self, X):
        if not X.shape[0]:
            return np.empty((0, self.n_out), X.dtype)
        return np.vstack([self.block(X[i:i + _BLOCK_ROWS]) for i in range(0, X.shape[0], _BLOCK_ROWS)])

    def gram(self, X, Y, out=None, out_zty=None, accumulate=False):
        G = out if out is not None else np.zeros((self.n_out, self.n_out), X.dtype)
        ZtY = out_zty if out_zty is not None else np.zeros((self.n_out, Y.shape[1]), X.dtype)
        if not accumulate:
            G[...] = 0
            ZtY[...] = 0
        for i in range(0, X.shape[0], _BLOCK_ROWS):
            Zb = self.block(X[i:i + _BLOCK_ROWS])
            G += Zb.T @ Zb
            ZtY += Zb.T @ Y[i:i + _BLOCK_ROWS]
        return G, ZtY

    def predict(self, X, coef):
        coef = np.asarray(coef, X.dtype)
        out = np.empty((X.shape[0], coef.shape[1]), X.dtype)
        for i in range(0, X.shape[0], _BLOCK_ROWS):
            out[i:i + _BLOCK_ROWS] = self.block(X[i:i + _BLOCK_ROWS]) @ coef
        return out


class ColumnMap:
    """The linear kernel's features: selected input columns ``X[:, support]``."""

    def __init__(self, support):
        self.support = np.asarray(support)
        self.n_out = self.support.size

    def features(self, X):
        return np.ascontiguousarray(X[:, self.support])

    def gram(self, X, Y, out=None, out_zty=None, accumulate=False):
        Z = self.features(X)
        G, ZtY = Z.T @ Z, Z.T @ Y.astype(X.dtype, copy=False)
        if out is None:
            return G, ZtY
        if accumulate:
            out += G
            out_zty += ZtY
        else:
            out[...] = G
            out_zty[...] = ZtY
        return out, out_zty

    def predict(self, X, coef):
        return self.features(X) @ np.asarray(coef, X.dtype)


def eerf_scores(X, T, weights, offsets=None, *, kernel="gaussian", n_threads=None):
    """Empirical scores ``S = Phi.T T / N0`` of every candidate column of ``weights``, shape (M0, m).

    ``T`` holds the scoring targets (n, m). For ``kernel="gaussian"`` ``Phi = cos(X W + b)`` and the
    scores come from one compiled :func:`rffkern.kernels.loss_and_grad` pass (zero coefficients);
    for the arc-cosine kernels they are accumulated in NumPy by row blocks; for ``"linear"``
    ``weights`` is ignored and the candidates are the columns of X.
    """
    n = X.shape[0]
    T = np.asarray(T, X.dtype).reshape(n, -1)
    if kernel == "gaussian":
        zero = np.zeros((weights.shape[1], T.shape[1]), X.dtype)
        _, grad, _ = kernels.loss_and_grad(X, T, weights.astype(X.dtype, copy=False),
                                           offsets.astype(X.dtype, copy=False), zero, loss="squared",
                                           scale=1.0, want_theta=False, n_threads=n_threads)
        return -grad
    if kernel == "linear":
        return X.T @ T / n
    fmap = ArcCosineMap(weights, int(kernel[-1]), 1.0)
    S = np.zeros((weights.shape[1], T.shape[1]), X.dtype)
    for i in range(0, n, _BLOCK_ROWS):
        S += fmap.block(X[i:i + _BLOCK_ROWS]).T @ T[i:i + _BLOCK_ROWS]
    return S / n


def knn_length_scale(X, n_neighbors=50, max_samples=2000, rng=None):
    """Mean distance to the ``n_neighbors``-th nearest neighbour on a subsample (the paper's sigma rule)."""
    dist = knn_distances(X, n_neighbors, max_samples, rng)
    value = 0.0 if dist is None else float(dist[:, -1].mean())
    return value if value > 0 else 1.0


def candidate_count(kernel, n_candidates, n_components, n_features):
    """How many candidate features EERF scores: every input coordinate for the linear kernel (of
    which it keeps ``n_components``), else ``n_candidates`` (default ten per feature kept); a
    ``ValueError`` where that leaves fewer than ``n_components``."""
    if kernel == "linear":
        if n_components > n_features:
            raise ValueError(f"the linear kernel selects input coordinates: n_components={n_components} > "
                             f"n_features={n_features}")
        return n_features
    count = n_candidates or 10 * n_components
    if count < n_components:
        raise ValueError(f"n_candidates={count} must be >= n_components={n_components}")
    return count


def _scoring_targets(Y, sample_weight):
    """The centred scoring targets: ``Y`` minus its (weighted) column means; rows of zero weight
    are centred too but take no part in the mean."""
    if sample_weight is None:
        return Y - Y.mean(0)
    return Y - np.average(Y, axis=0, weights=sample_weight)


def _weighted_knn_length_scale(X, sample_weight, rng, n_neighbors=50, max_samples=2000):
    """:func:`knn_length_scale` of rows with positive weights ``sample_weight``, integer weights
    counting as repeated rows (:func:`rffkern._sampling.weighted_knn_blocks`).

    On a subsample of at most ``max_samples`` rows (drawn as :func:`knn_distances` draws it), the
    k-th neighbour distance of row i is the least distance at which the cumulative weight of its
    neighbours reaches ``k = min(n_neighbors, sum(w) - 1)``, and the rule's value is the
    ``w``-weighted mean of these distances. With integer weights this is the rule on the repeated
    rows exactly (the subsample aside). A total weight below 2 leaves no neighbour to count: the
    unweighted rule of the rows is used then.
    """
    X = np.asarray(X, np.float64)
    w = np.asarray(sample_weight, np.float64)
    if X.shape[0] > max_samples:
        pick = rng.choice(X.shape[0], max_samples, replace=False)
        X, w = X[pick], w[pick]
    k = min(float(n_neighbors), float(w.sum()) - 1.0)
    if k < 1:
        return knn_length_scale(X, n_neighbors, max_samples, rng)
    kth = np.empty(X.shape[0])
    for own, D, C in weighted_knn_blocks(X, w, k):
        last = D.shape[1] - 1 - np.argmax(C[:, ::-1] > 0, axis=1)  # the farthest counted neighbour
        kth[own] = D[np.arange(D.shape[0]), last]
    value = float(np.average(kth, weights=w))
    return value if value > 0 and np.isfinite(value) else 1.0


class _EERFBase(BaseEstimator):
    training_time_: float  # declared for type checkers only
    width_errors_: list[float] | None
    selection_errors_: NDArray[np.float64] | None
    _parameter_constraints = {
        "n_components": [COMPONENTS],
        "n_candidates": [COMPONENTS, None],
        "n_subsample": [IntInterval(1, None, closed="left"), None],
        "kernel": [StrOptions(set(EERF_KERNELS))],
        "length_scale": [Interval(numbers.Real, 0, None, closed="neither"), RealSequence(0, closed="neither"),
                         StrOptions({"auto", "knn"})],
        "alpha": [Interval(numbers.Real, 0, None, closed="left"), RealSequence(0, closed="left")],
        "alpha_selection": [StrOptions({"loo", "gcv", "validation"})],
        "standardize": ["boolean", StrOptions({"auto", "global", "quantile"})],
        "robust_inputs": ["boolean"],
        "random_state": ["random_state", np.random.Generator],
        "n_jobs": N_JOBS,
        "verbose": ["verbose"],
    }

    def __init__(self, n_components: int = 1000, *, n_candidates: int | None = None,
                 n_subsample: int | None = None, kernel: str = "gaussian", length_scale: float | str = "auto",
                 alpha: float | Sequence[float] = DEFAULT_ALPHAS, alpha_selection: str = "loo",
                 standardize: bool | str = "auto", robust_inputs: bool = True, random_state: RandomStateLike = None,
                 n_jobs: int | None = None, verbose: int = 0) -> None:
        self.n_components = n_components
        self.n_candidates = n_candidates
        self.n_subsample = n_subsample
        self.kernel = kernel
        self.length_scale = length_scale
        self.alpha = alpha
        self.alpha_selection = alpha_selection
        self.standardize = standardize
        self.robust_inputs = robust_inputs
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.verbose = verbose

    def _log(self, stage, i, n, text):
        """One progress line (rffkern._progress format), timed from the start of the fit."""
        self._progress.step(stage, i, n, text)

    def _prepare(self, X, Y, rng, sample_weight=None):
        """The input standardization (``standardize="auto"``: :func:`rffkern.ridge.choose_standardization`
        on the targets ``Y`` the ridge fits, with a seed that leaves ``rng``'s stream as it was);
        returns the standardized X."""
        self._progress = ProgressLog(self, self.verbose)  # the first step of every fit
        self.standardize_, self.standardize_errors_ = resolve_standardization(self.standardize, X, Y, sample_weight,
                                                                              rng, self.n_jobs, self.robust_inputs)
        if self.standardize == "auto":
            self._log("standardize", 1, 1, f"{self.standardize_!r} (probe ridge)")
        set_input_scaling(self, fit_input_scaling(X, sample_weight, self.standardize_, self.robust_inputs))
        return self._transform_input(X)

    def _transform_input(self, X):
        return scaled_inputs(self, X)

    def _candidates(self, Xs, T, rng, sample_weight=None):
        """Draw the scoring subsample and the M0 candidates at unit width; the widths to compare.

        With ``sample_weight`` only the rows of positive weight take part (N0 and the subsample are
        drawn among them, so zero weights equal dropping the rows) and the scores are weighted
        means ``sum_n w_n y_n phi(x_n) / sum_n w_n`` over the subsample. Returns the scoring rows
        and targets, the unit-width candidates ``W0`` and phases ``b0`` (None where the kernel has
        none), the list of widths (``[None]`` for the kernels without one) and the k-NN width
        when the list may be extended (``length_scale="auto"``; else None)."""
        if sample_weight is not None and not (sample_weight > 0).all():
            keep_rows = np.flatnonzero(sample_weight > 0)
            Xs, T, sample_weight = np.ascontiguousarray(Xs[keep_rows]), T[keep_rows], sample_weight[keep_rows]
        n, d = Xs.shape
        M = self.n_components
        self.n_subsample_ = min(n, self.n_subsample or max(int(0.1 * n), 1000))
        rows = np.sort(rng.choice(n, self.n_subsample_, replace=False)) if self.n_subsample_ < n else None
        Xsub = Xs if rows is None else np.ascontiguousarray(Xs[rows])
        Tsub = T if rows is None else T[rows]
        if sample_weight is not None:  # the weighted mean: eerf_scores divides by the row count
            wsub = sample_weight if rows is None else sample_weight[rows]
            Tsub = Tsub * (wsub / wsub.mean())[:, None]
        b0: NDArray[np.float64] | None  # the candidates' phases (Gaussian kernel only)
        widths: list[float | None] = [None]
        base = None
        self.n_candidates_ = candidate_count(self.kernel, self.n_candidates, M, d)
        if self.kernel == "linear":
            W0 = b0 = None
        else:
            if self.kernel == "gaussian":
                if not isinstance(self.length_scale, str):
                    widths = [float(v) for v in np.atleast_1d(self.length_scale)]
                else:
                    if sample_weight is None:
                        knn = knn_length_scale(Xsub, rng=rng)
                    else:
                        knn = _weighted_knn_length_scale(
                            Xsub, sample_weight if rows is None else sample_weight[rows], rng)
                    widths = [knn] if self.length_scale == "knn" else [knn * f for f in EXTENDED_WIDTH_FACTORS]
                    base = None if self.length_scale == "knn" else knn
            W0 = rng.standard_normal((d, self.n_candidates_))
            b0 = rng.uniform(0.0, 2.0 * np.pi, self.n_candidates_) if self.kernel == "gaussian" else None
        return Xsub, Tsub, W0, b0, widths, base

    def _keep(self, Xsub, Tsub, W0, b0, width):
        """Score the candidates ``W0 / width`` on the subsample and keep the top M."""
        W = None if W0 is None else (W0 if width is None else W0 / width)
        S = eerf_scores(Xsub, Tsub, W, b0, kernel=self.kernel,
                        n_threads=resolve_n_threads(self.n_jobs)).astype(np.float64)
        self._store_top(S, W, b0, width)

    def _store_top(self, S, W, b0, width):
        """Keep the M candidates of largest energy from the scores ``S`` (M0, m) of the candidates
        ``W`` (phases ``b0``) at ``width``: the fitted selection attributes."""
        M = self.n_components
        energy = (S**2).sum(axis=1)  # |S|^2 for one output, summed squared scores for several
        # stable: ties keep the draw order, so results do not depend on the sort implementation
        keep = np.argsort(-energy, kind="stable")[:M]
        self.length_scale_ = width
        self.scores_ = np.sqrt(energy[keep])
        if self.kernel == "linear":
            self.support_ = np.sort(keep)
            self.weights_ = self.offsets_ = None
            self.scale_ = 1.0
        else:
            self.weights_ = np.ascontiguousarray(W[:, keep])  # W is drawn unless linear
            self.offsets_ = None if b0 is None else b0[keep]
            self.scale_ = float(np.sqrt(2.0 / M))

    def _select_and_fit(self, Xs, T, Y, rng, ravel, sample_weight=None, ridge=True):
        """The candidates, then for each width the selection and the ridge fit; the width of least
        selection error (LOO by default) is kept. ``ridge=False`` (the logistic solver) with one
        width skips the ridge fit."""
        t0 = time.perf_counter()
        Xsub, Tsub, W0, b0, widths, base = self._candidates(Xs, T, rng, sample_weight)
        select_time = time.perf_counter() - t0
        if len(widths) == 1:
            self.widths_ = self.width_errors_ = None
            self._keep(Xsub, Tsub, W0, b0, widths[0])
            self.preprocessing_time_ = time.perf_counter() - t0
            self._log_select()
            if ridge:
                self._fit_ridge(Xs, Y, rng, ravel, sample_weight)
            return
        split_seed = int(rng.integers(2**32 - 1))  # one held-out split shared by every width
        best: list = []
        width_errors: list[float] = []
        times = [select_time, 0.0]

        def error_of(width):
            t1 = time.perf_counter()
            self._keep(Xsub, Tsub, W0, b0, width)
            times[0] += time.perf_counter() - t1
            self._log_select()
            error = self._fit_ridge(Xs, Y, np.random.default_rng(split_seed), ravel, sample_weight,
                                    score_single=True)
            times[1] += self.training_time_
            width_errors.append(float(np.min(self.selection_errors_)))  # type: ignore[arg-type]
            if not best or error < best[0]:
                best[:] = [error, {k: getattr(self, k) for k in WIDTH_FITTED}]
            return error  # compared in the units of the scaled targets

        self.widths_, _ = search_widths(widths, width_extension(base), error_of)
        self.width_errors_ = width_errors
        for k, v in best[1].items():
            setattr(self, k, v)
        select_time, ridge_time = times
        self.preprocessing_time_, self.training_time_ = select_time, ridge_time
        self._log("width", 2, 2, f"chose length_scale {self.length_scale_:.4g}, alpha {self.alpha_:.3g}")

    def _log_select(self):
        self._log("select", 1, 2, f"candidates {self.n_candidates_}, kept {self.n_components}, scoring rows "
                  f"{self.n_subsample_}, length_scale {self.length_scale_}")

    def _map(self):
        if self.kernel == "gaussian":
            return FourierFeatureMap(self.weights_, self.offsets_, self.scale_, False, resolve_n_threads(self.n_jobs))
        if self.kernel == "linear":
            return ColumnMap(self.support_)
        return ArcCosineMap(self.weights_, int(self.kernel[-1]), self.scale_)

    def _fit_ridge(self, Xs, Y, rng, ravel, sample_weight=None, score_single=False):
        t0 = time.perf_counter()
        coef, intercept, alpha, errors, self._ridge_stats = fit_ridge_map(
            self._map(), Xs, Y.astype(Xs.dtype), as_alpha_list(self.alpha), fit_intercept=True,
            selection=self.alpha_selection, validation_fraction=0.1, rng=rng, score_single=score_single,
            sample_weight=sample_weight)  # (its Gram statistics: the classifier's temperature, then dropped)
        # back to the caller's units (identity unless the regressor scaled its targets)
        y_scale, y_mean = getattr(self, "_target_scale", (1.0, 0.0))
        coef, intercept = coef * y_scale, intercept * y_scale + y_mean
        self.coef_ = coef[:, 0] if ravel else coef
        self.intercept_ = float(intercept[0]) if ravel else intercept
        self.alpha_ = float(alpha)
        self.selection_errors_ = None if errors is None else errors * np.mean(np.square(y_scale))
        self.training_time_ = time.perf_counter() - t0
        self._log("ridge", 2, 2, f"alpha {self.alpha_:.3g}, alphas searched {len(as_alpha_list(self.alpha))}")
        # the least selection error in the units of the scaled targets (finite where y's overflow)
        return None if errors is None else float(np.min(errors))

    def _decision(self, X):
        check_is_fitted(self)
        X = validate_data(self, X, dtype=[np.float64, np.float32], reset=False)
        Xs = self._transform_input(X)
        coef = self.coef_.reshape(self.coef_.shape[0], -1)
        F = self._map().predict(Xs, coef) + np.asarray(self.intercept_, Xs.dtype)
        return F[:, 0] if self.coef_.ndim == 1 else F


_DOC_PARAMS = """
    Parameters
    ----------
    n_components : int, default=1000
        M, the number of features kept (<= n_features for the linear kernel). The paper's
        experiments keep up to a few hundred; 1000 (the size of the usual kernel-approximation
        baselines) is the default because 100 lost to scikit-learn's Nystroem(1000) + RidgeCV by
        50 % to 500 % on cpu_act, elevators, kin40k, digits, mnist and w8a
        (``bench/bench_realdata.py``, 4000 training rows) while fitting in a tenth of its time.
    n_candidates : int or None, default=None
        M0, the candidates drawn; None gives the paper's rule of thumb 10 M (ignored for "linear",
        whose candidates are the d input coordinates).
    n_subsample : int or None, default=None
        N0, the scoring subsample; None gives ``min(N, max(0.1 N, 1000))``.
    kernel : {"gaussian", "arccos0", "arccos1", "arccos2", "linear"}, default="gaussian"
        Gaussian ``cos(omega . x + b)`` with ``omega ~ N(0, I / sigma^2)``; arc-cosine of order q
        ``max(omega . x, 0)^q`` with ``omega ~ N(0, I)``; linear: input coordinates.
    length_scale : float, sequence of float, "auto" or "knn", default="auto"
        The length scale sigma of the Gaussian kernel. "knn" is the paper's rule: the mean distance
        to the 50th nearest neighbour, on a subsample of at most 2000 scoring rows. "auto" (not the
        paper's) compares ``EXTENDED_WIDTH_FACTORS`` = (0.5, 1, 2, 4) times that width, extended by halving
        (doubling) while the smallest (largest) is the best, within ``WIDTH_LIMITS`` = (0.5, 16)
        times it; a sequence compares the given widths. Each width scores the same candidates
        (drawn once at unit width), keeps its own top M and costs one streamed Gram plus the alpha
        search; the width of least selection error (exact LOO by default) is kept. The rule alone
        was off by a factor of 2 to 4 on several data sets (cpu_act, elevators and w8a want wider
        widths, kin40k a narrower one).
    alpha : float or sequence of float, default=rffkern.ridge.DEFAULT_ALPHAS
        Ridge penalty of the final fit (``||y - Z c||^2 + alpha ||c||^2``); a sequence is searched
        as in :class:`rffkern.RFFRidge` (over the penalties the Gram resolves: on float32 rows,
        none below about 1.2e-7 times the row count). The default is RFFRidge's: 23 values from
        1e-8 to 1e3 (regression: in units of the scaled targets), chosen by exact leave-one-out.
    alpha_selection : {"loo", "gcv", "validation"}, default="loo"
        How a sequence of alphas is searched: exact leave-one-out, generalised cross-validation or
        a held-out split, as in :class:`rffkern.RFFRidge`.
    standardize : {"auto", True, "global", "quantile", False}, default="auto"
        How X is centred and scaled first (sigma is in the scaled units): True, each input by its
        own deviation (the paper's setting); "global", all by one pooled deviation, which keeps
        the inputs' relative spreads (pixels); "auto", the one that
        :func:`rffkern.ridge.choose_standardization` keeps (an ``RFFRidge(500)`` at its defaults on
        at most 3000 rows: True unless "global" has the lower leave-one-out error by more than one
        standard error); on Dask arrays the probe runs on
        at most ``PROBE_ROWS`` rows gathered from X. False: X as given. The choice is
        ``standardize_``; the pooled deviation serves pixels (:doc:`/design_notes`).
        "quantile": each heavy-tailed input (not two-valued, a
        training row more than 5 deviations from its mean) mapped to normal scores by
        scikit-learn's ``QuantileTransformer`` (``input_quantiles_``), then as True; "auto"
        compares it too (where such inputs exist, with ``robust_inputs``; not on Dask arrays).
    robust_inputs : bool, default=True
        Keep rows far from the training data near it: a two-valued input
        (a one-hot level, a flag) is scaled by half the gap between its values rather than by its
        deviation (a rare level then lies 2 from the common one, not 30 deviations out); at
        predict each input is clipped to its training range (``x_min_``, ``x_max_``), as trees do
        implicitly; and ``standardize="auto"`` also tries "quantile" where an input is
        heavy-tailed. A finite random-feature model does not fall back to its mean far from the
        data as the exact kernel does, and answered such rows absurdly. False: the plain
        standardization.
    random_state : int, Generator, RandomState or None, default=None
        Seed or generator of every random draw; the same value gives the same model whatever
        ``n_jobs``.
    n_jobs : int or None, default=None
        Threads of the compiled kernels (None: OpenMP's current limit, -1: all usable cores).
        The fitted model does not depend on it.
    verbose : int, default=0
        1 prints a line after the selection and after the final fit.
"""

_DOC_ATTRS = """
    Attributes
    ----------
    weights_ : ndarray of shape (n_features_in_, n_components) or None
        The kept frequencies (None for the linear kernel).
    offsets_ : ndarray of shape (n_components,) or None
        Their own phases (Gaussian kernel only).
    support_ : ndarray
        Kept input columns (linear kernel only).
    scores_ : ndarray of shape (n_components,)
        ``|S|`` of the kept candidates (root of the summed squared scores for several outputs).
    scale_ : float
        ``sqrt(2 / M)``.
    coef_, intercept_, alpha_, selection_errors_ : ndarray, float or None
        The final ridge fit: coefficients, intercept, chosen alpha and the alpha search's errors.
    length_scale_ : float or None
        The sigma used (None for the arc-cosine and linear kernels).
    widths_, width_errors_ : list of float or None
        The widths compared, in the order tried, and the least selection error (over the alphas)
        of each, in y's units (compared in the units of the scaled targets, so a y near the float
        limit, whose errors overflow to inf, chooses as y does); None when one width is used.
    n_candidates_, n_subsample_ : int
        M0 and N0 as used.
    preprocessing_time_, training_time_ : float
        Seconds spent scoring and selecting candidates, and fitting the final model.
    standardize_ : {True, "global", False}
        The standardization used.
    standardize_errors_ : dict or None
        ``standardize="auto"``: the probe ridge's ``standardize_errors_`` (None where the two
        standardizations are one, or with another ``standardize``).
    x_mean_, x_scale_ : ndarray of shape (n_features_in_,)
        The standardisation of X; the inputs constant on the training rows have an infinite scale:
        they standardize to 0 on every row.
    x_min_, x_max_ : ndarray of shape (n_features_in_,) or None
        The training range each input is clipped to at predict (None with ``robust_inputs=False``).
    input_quantiles_ : sklearn.preprocessing.QuantileTransformer or None
        With ``standardize_="quantile"``: the normal scores of the heavy-tailed inputs
        ``quantile_columns_`` (None otherwise).
"""


class EERFRegressor(RegressorMixin, _EERFBase):
    __doc__ = ("""Ridge regression on EERF-selected random features (Shahrampour et al. 2018).

    The scoring target is ``(y - mean(y)) / max|y - mean(y)|``, which lies in [-1, 1] as the paper
    asks; centring keeps the constant direction (omega near 0) from using up a feature slot.
    Several outputs are scored by the sum of their squared scores.
""" + _DOC_PARAMS.replace("    random_state", """    normalize_y : bool, default=True
        Centre and scale each output (:class:`rffkern._data.TargetScaler`) before the ridge fit, so
        ``alpha`` is in units of the scaled targets; ``coef_``, ``intercept_`` and the predictions
        are in y's units. False fits y as it is (the paper).
    random_state""", 1) + _DOC_ATTRS + """
    Examples
    --------
    >>> from rffkern import EERFRegressor
    >>> from rffkern.datasets import make_jse3
    >>> X, y, support = make_jse3(100, random_state=0)
    >>> model = EERFRegressor(n_components=20, random_state=0).fit(X, y)
    >>> model.weights_.shape, model.predict(X[:3]).shape
    ((10, 20), (3,))
""")

    _parameter_constraints = {**_EERFBase._parameter_constraints, "normalize_y": ["boolean"]}

    def __init__(self, n_components: int = 1000, *, n_candidates: int | None = None,
                 n_subsample: int | None = None, kernel: str = "gaussian", length_scale: float | str = "auto",
                 alpha: float | Sequence[float] = DEFAULT_ALPHAS, alpha_selection: str = "loo",
                 standardize: bool | str = "auto", robust_inputs: bool = True, normalize_y: bool = True,
                 random_state: RandomStateLike = None,
                 n_jobs: int | None = None, verbose: int = 0) -> None:
        super().__init__(n_components, n_candidates=n_candidates, n_subsample=n_subsample, kernel=kernel,
                         length_scale=length_scale, alpha=alpha, alpha_selection=alpha_selection,
                         standardize=standardize, robust_inputs=robust_inputs, random_state=random_state, n_jobs=n_jobs, verbose=verbose)
        self.normalize_y = normalize_y

    def fit(self, X: ArrayLike, y: ArrayLike, sample_weight: ArrayLike | None = None) -> EERFRegressor:
        """Select the features on a subsample of (X, y), then fit ridge on all of it.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training data.
        y : array-like of shape (n_samples,) or (n_samples, n_outputs)
            Real-valued targets.
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative weight of each sample (None: all 1). Weighted: the standardisation, the
            target scaling, the candidates' scores (weighted means over the scoring subsample,
            which is drawn among the rows of positive weight, so zero weights equal dropped rows)
            and the final ridge fit with its alpha search (weighted Gram, weighted LOO, GCV or
            held-out error). The weights are relative: divided by their mean over the rows of
            positive weight, so that weights ``c w`` fit the model of ``w`` and equal weights the
            model of none. Integer weights give the objective of the rows repeated at ``alpha``
            times their mean positive weight; the subsample and the alpha search's left-out rows
            stay those of the given rows. The width rules count a row's relative weight as its
            copies (the neighbours of the rule are weighted). Not supported for a Dask ``X`` (``ValueError``).

        Returns
        -------
        self
            The fitted estimator.

        Examples
        --------
        >>> from rffkern import EERFRegressor
        >>> from rffkern.datasets import make_jse3
        >>> X, y, support = make_jse3(100, random_state=0)
        >>> EERFRegressor(n_components=20, random_state=0).fit(X, y).scores_.shape
        (20,)
        """
        if is_dask_array(X):  # exact distributed fit on the workers
            refuse_dask_weights(sample_weight)
            from rffkern._dask_eerf import fit_eerf
            return fit_eerf(self, X, y, choose_standardization)
        self._validate_params()
        X, y = validate_data(self, X, y, dtype=[np.float64, np.float32], multi_output=True, y_numeric=True)
        w = relative_sample_weight(sample_weight, X.shape[0])[0]
        scaler = TargetScaler(self.normalize_y).fit(y.reshape(X.shape[0], -1), w)
        Y = scaler.transform(y.reshape(X.shape[0], -1))
        self.y_mean_, self.y_scale_ = scaler.mean_, scaler.scale_
        self._target_scale = (scaler.scale_, scaler.mean_)
        rng = as_generator(self.random_state)
        Xs = self._prepare(X, Y, rng, w)
        T = _scoring_targets(Y, w)
        top = np.abs(T if w is None else T[w > 0]).max(0)
        T /= np.where(top > 0, top, 1.0)
        try:
            self._select_and_fit(Xs, T, Y, rng, ravel=y.ndim == 1, sample_weight=w)
        finally:
            del self._target_scale
        self.__dict__.pop("_ridge_stats", None)
        self._progress.close()
        return self

    def predict(self, X: ArrayLike) -> NDArray[Any]:
        """Predict from the selected features.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            The samples (a Dask array is processed lazily, block by block).

        Returns
        -------
        ndarray of shape (n_samples,) or (n_samples, n_outputs)
            The predictions, in y's units.

        Examples
        --------
        >>> from rffkern import EERFRegressor
        >>> from rffkern.datasets import make_jse3
        >>> X, y, support = make_jse3(100, random_state=0)
        >>> EERFRegressor(n_components=20, random_state=0).fit(X, y).predict(X[:3]).shape
        (3,)
        """
        if is_dask_array(X):
            return map_rows(self.predict, X)
        return self._decision(X)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.multi_output = True
        return tags


class EERFClassifier(ClassifierMixin, _EERFBase):
    __doc__ = ("""Classifier on EERF-selected random features (Shahrampour et al. 2018).

    Binary labels are scored as centred ``+-1``; several classes by the sum over classes of the
    squared scores of the centred one-vs-rest indicators. The final model is a ridge classifier
    (``solver="ridge"``: closed form from the streamed Gram, as :class:`rffkern.RFFRidgeClassifier`)
    or scikit-learn's ``LogisticRegression`` with ``C = 1 / alpha`` on the M selected features
    (``solver="logistic"``; this materialises the n x M feature matrix; a sequence of alphas is
    searched by ``LogisticRegressionCV``, 3 folds, log-loss). Several widths are compared by the
    ridge classifier's selection error on the +-1 targets whatever the solver; the logistic model is
    then fitted at the chosen width.
""" + _DOC_PARAMS.replace("    standardize", """    solver : {"ridge", "logistic"}, default="ridge"
        The final model: a ridge classifier on the streamed Gram matrix, or logistic regression.
    standardize""") + _DOC_ATTRS + """    classes_ : ndarray of shape (n_classes,)
        The class labels.
    temperature_ : float or None
        :meth:`predict_proba`'s ``softmax(temperature_ * decision)``: with ``solver="ridge"`` the
        temperature of least log-loss of the exact leave-one-out decision values of (at most 2000
        of) the training rows; 1.0 with ``solver="logistic"`` (the logistic model's own
        probabilities).

    Examples
    --------
    >>> from rffkern import EERFClassifier
    >>> from rffkern.datasets import make_jse3
    >>> X, _, _ = make_jse3(100, random_state=0)
    >>> y = (X[:, 0] * X[:, 1] > 0).astype(int)
    >>> clf = EERFClassifier(n_components=20, random_state=0).fit(X, y)
    >>> clf.predict(X[:3])
    array([0, 1, 0])
""")

    _parameter_constraints = {**_EERFBase._parameter_constraints,
                              "solver": [StrOptions({"ridge", "logistic"})]}

    def __init__(self, n_components: int = 1000, *, n_candidates: int | None = None,
                 n_subsample: int | None = None, kernel: str = "gaussian", length_scale: float | str = "auto",
                 alpha: float | Sequence[float] = DEFAULT_ALPHAS, alpha_selection: str = "loo",
                 solver: str = "ridge", standardize: bool | str = "auto", robust_inputs: bool = True, random_state: RandomStateLike = None,
                 n_jobs: int | None = None, verbose: int = 0) -> None:
        super().__init__(n_components, n_candidates=n_candidates, n_subsample=n_subsample, kernel=kernel,
                         length_scale=length_scale, alpha=alpha, alpha_selection=alpha_selection,
                         standardize=standardize, robust_inputs=robust_inputs, random_state=random_state, n_jobs=n_jobs, verbose=verbose)
        self.solver = solver

    def fit(self, X: ArrayLike, y: ArrayLike, sample_weight: ArrayLike | None = None) -> EERFClassifier:
        """Select the features on a subsample of (X, y), then fit the classifier on all of it.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training data.
        y : array-like of shape (n_samples,)
            Class labels.
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative weight of each sample (None: all 1). Weighted: the standardisation, the
            centring of the scoring targets, the candidates' scores (weighted means over the
            scoring subsample, which is drawn among the rows of positive weight) and the final fit:
            ``solver="ridge"`` with its alpha search as in :class:`rffkern.RFFRidgeClassifier`
            (the weights multiply the squared errors),
            ``solver="logistic"`` through scikit-learn's ``sample_weight`` (its cross-validation
            folds are those of the given rows). The weights are relative, as in
            :meth:`EERFRegressor.fit`: weights ``c w`` fit the model of ``w``. Not supported for a Dask
            ``X`` (``ValueError``).

        Returns
        -------
        self
            The fitted estimator.

        Examples
        --------
        >>> from rffkern import EERFClassifier
        >>> from rffkern.datasets import make_jse3
        >>> X, _, _ = make_jse3(100, random_state=0)
        >>> y = (X[:, 0] * X[:, 1] > 0).astype(int)
        >>> EERFClassifier(n_components=20, random_state=0).fit(X, y).classes_
        array([0, 1])
        """
        if is_dask_array(X):  # exact distributed fit on the workers
            refuse_dask_weights(sample_weight)
            from rffkern._dask_eerf import fit_eerf
            return fit_eerf(self, X, y, choose_standardization)
        self._validate_params()
        X, y = validate_data(self, X, y, dtype=[np.float64, np.float32])
        w = relative_sample_weight(sample_weight, X.shape[0])[0]
        check_class_labels(y)
        binarizer = LabelBinarizer(neg_label=-1, pos_label=1).fit(y)
        self.classes_ = binarizer.classes_
        if len(self.classes_) < 2:
            raise ValueError(
                f"the classifier needs samples of at least 2 classes; got {len(self.classes_)} class")
        Y = binarizer.transform(y).astype(np.float64)
        rng = as_generator(self.random_state)
        Xs = self._prepare(X, Y, rng, w)
        self._select_and_fit(Xs, _scoring_targets(Y, w), Y, rng, ravel=Y.shape[1] == 1, sample_weight=w,
                             ridge=self.solver == "ridge")
        if self.solver == "logistic":
            alphas = as_alpha_list(self.alpha)
            t0 = time.perf_counter()
            Z = self._map().features(Xs)
            Cs = [1.0 / a if a > 0 else 1e12 for a in alphas]
            if len(alphas) == 1:
                logistic = LogisticRegression(C=Cs[0], max_iter=1000).fit(Z, y, sample_weight=w)
                chosen = alphas[0]
            else:  # 3-fold stratified cross-validation of the log-loss over the alphas
                logistic = LogisticRegressionCV(Cs=Cs, cv=3, scoring="neg_log_loss", max_iter=1000).fit(Z, y, sample_weight=w)
                chosen = alphas[Cs.index(float(np.atleast_1d(logistic.C_)[0]))]
            coef = logistic.coef_.T.astype(np.float64)
            self.coef_ = coef[:, 0] if coef.shape[1] == 1 else coef
            self.intercept_ = (float(logistic.intercept_[0]) if coef.shape[1] == 1
                               else logistic.intercept_.astype(np.float64))
            self.alpha_ = float(chosen)
            self.selection_errors_ = None
            self.training_time_ = time.perf_counter() - t0
            self._temperature = 1.0  # the logistic model's own probabilities: the softmax of its logits
        else:
            self._store_temperature(Xs, Y, w)
        self.__dict__.pop("_ridge_stats", None)
        self._progress.close()
        return self

    @property
    def temperature_(self) -> float | None:
        """:meth:`predict_proba`'s temperature (see the class's Attributes).

        Examples
        --------
        >>> from rffkern import EERFClassifier
        >>> from rffkern.datasets import make_jse3
        >>> X, _, _ = make_jse3(100, random_state=0)
        >>> y = (X[:, 0] * X[:, 1] > 0).astype(int)
        >>> round(EERFClassifier(n_components=20, random_state=0).fit(X, y).temperature_, 2)
        3.26
        """
        if "_temperature" not in self.__dict__:
            raise AttributeError("temperature_ exists once the classifier is fitted")
        return self._temperature

    def _store_temperature(self, Xs, Y, sample_weight=None):
        """``temperature_`` from the exact leave-one-out decision values of (at most
        ``CALIBRATION_ROWS`` of) the rows ``Xs`` (standardized) of the ridge fit, +-1 targets ``Y``,
        as :class:`rffkern.RFFRidgeClassifier`'s."""
        Y = np.asarray(Y, np.float64)
        fmap = self._map()

        def loo_scores(rows, w):
            loo = loo_decisions(self._ridge_stats, fmap, Xs[rows], Y[rows], self.alpha_, True, w)
            return class_scores(loo)

        self._temperature = temperature_of(class_codes(Y), loo_scores, calibration_rows(Xs.shape[0], sample_weight),
                                           sample_weight)

    def decision_function(self, X: ArrayLike) -> NDArray[np.floating]:
        """Decision values of the final linear model on the selected features.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            The samples (a Dask array is processed lazily, block by block).

        Returns
        -------
        ndarray of shape (n_samples,) or (n_samples, n_classes)
            One value per sample for two classes (positive: ``classes_[1]``), else one per class.

        Examples
        --------
        >>> from rffkern import EERFClassifier
        >>> from rffkern.datasets import make_jse3
        >>> X, _, _ = make_jse3(100, random_state=0)
        >>> y = (X[:, 0] * X[:, 1] > 0).astype(int)
        >>> EERFClassifier(n_components=20, random_state=0).fit(X, y).decision_function(X[:3]).shape
        (3,)
        """
        if is_dask_array(X):
            return map_rows(self.decision_function, X)
        return self._decision(X)

    def predict(self, X: ArrayLike) -> NDArray[Any]:
        """Predict class labels.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            The samples (a Dask array is processed lazily, block by block).

        Returns
        -------
        ndarray of shape (n_samples,)
            Labels from ``classes_``.

        Examples
        --------
        >>> from rffkern import EERFClassifier
        >>> from rffkern.datasets import make_jse3
        >>> X, _, _ = make_jse3(100, random_state=0)
        >>> y = (X[:, 0] * X[:, 1] > 0).astype(int)
        >>> EERFClassifier(n_components=20, random_state=0).fit(X, y).predict(X[:3])
        array([0, 1, 0])
        """
        if is_dask_array(X):
            return map_rows(self.predict, X)
        D = self.decision_function(X)  # first: it raises NotFittedError before classes_ exists
        return labels_from_decision(self.classes_, D)

    def predict_proba(self, X: ArrayLike) -> NDArray[np.float64]:
        """Class probabilities.

        ``solver="logistic"``: the logistic model's. ``solver="ridge"``: ``softmax(temperature_ *
        decision)`` over the classes (for two classes ``sigmoid(temperature_ *
        decision_function(X))`` for ``classes_[1]``), the one temperature fitted by log-loss to the
        exact leave-one-out decision values of (at most 2000 of) the training rows, as
        :meth:`rffkern.RFFRidgeClassifier.predict_proba`. Either way the most probable class is
        the one :meth:`predict` returns.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            The samples (a Dask array is processed lazily, block by block).

        Returns
        -------
        ndarray of shape (n_samples, n_classes)
            Probabilities of ``classes_``; every row sums to 1.

        Examples
        --------
        >>> from rffkern import EERFClassifier
        >>> from rffkern.datasets import make_jse3
        >>> X, _, _ = make_jse3(100, random_state=0)
        >>> y = (X[:, 0] * X[:, 1] > 0).astype(int)
        >>> clf = EERFClassifier(n_components=20, solver="logistic", alpha=1.0, random_state=0).fit(X, y)
        >>> clf.predict_proba(X[:2]).round(2)
        array([[0.83, 0.17],
               [0.45, 0.55]])
        >>> EERFClassifier(n_components=20, random_state=0).fit(X, y).predict_proba(X[:2]).round(2)
        array([[0.9 , 0.1 ],
               [0.46, 0.54]])
        """
        if is_dask_array(X):
            return map_rows(self.predict_proba, X)
        return np.exp(self._log_proba(X, "predict_proba"))

    def predict_log_proba(self, X: ArrayLike) -> NDArray[np.float64]:
        """Logarithm of :meth:`predict_proba`.

        Computed as a log-softmax: finite where the probability underflows to 0.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            The samples (a Dask array is processed lazily, block by block).

        Returns
        -------
        ndarray of shape (n_samples, n_classes)
            Log-probabilities of ``classes_``.

        Examples
        --------
        >>> from rffkern import EERFClassifier
        >>> from rffkern.datasets import make_jse3
        >>> X, _, _ = make_jse3(100, random_state=0)
        >>> y = (X[:, 0] * X[:, 1] > 0).astype(int)
        >>> EERFClassifier(n_components=20, random_state=0).fit(X, y).predict_log_proba(X[:1]).shape
        (1, 2)
        """
        if is_dask_array(X):
            return map_rows(self.predict_log_proba, X)
        return self._log_proba(X, "predict_log_proba")

    def _log_proba(self, X, method):
        """``log_softmax(temperature_ * decision)`` over the classes (``method`` names the caller)."""
        D = self.decision_function(X)  # first: it raises NotFittedError before the temperature exists
        return tempered_log_proba(self, class_scores(D), method)

    def __setstate__(self, state):
        super().__setstate__(state)
        if "coef_" in state and "_temperature" not in state and state.get("solver") == "logistic":
            # pickled by an rffkern without temperature_: the logistic model's own probabilities
            self._temperature = 1.0
