"""Closed-form ridge regression on random Fourier features: the plain-RFF baseline.

The model is ``f(x) = z(x) @ coef + intercept`` with ``z`` a random cosine map. It is fitted from
the streamed Gram matrix ``Z.T Z`` and the cross products ``Z.T [1, Y]`` (one pass of
:func:`rffkern.kernels.gram`), so memory is O(s^2) whatever the number of samples; the n x s
feature matrix is never formed. The intercept is handled by centring the Gram matrix with the mean
feature ``Z.T 1 / n`` that comes out of the same pass.

A list of ``alpha`` values is searched by

* ``"loo"``: exact leave-one-out error through the eigendecomposition ``G = V diag(e) V.T`` of the
  centred Gram: the LOO residual of sample i is ``(y_i - f_i) / (1 - h_ii)`` with
  ``h_ii = 1/n + sum_j (z_i - mu) v_j)^2 / (e_j + alpha)``; one extra blocked pass over X gives every
  alpha at once (memory O(block * s)).
* ``"gcv"``: generalised cross-validation from the Gram alone (no extra pass; used by
  ``partial_fit``).
* ``"validation"``: a held-out fraction; the predictions of every alpha come from one
  :func:`rffkern.kernels.predict` pass, then the held-out Gram is added to the training Gram and the
  model is refitted on all data with the chosen alpha.
"""
from __future__ import annotations

import copy
import numbers
from typing import Any, Sequence

import numpy as np
from numpy.typing import ArrayLike, NDArray
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
from sklearn.preprocessing import LabelBinarizer
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted, validate_data

from rffkern import kernels
from rffkern._constraints import COMPONENTS, NU, IntInterval, N_JOBS, RealSequence
from rffkern._dask import is_dask_array, map_rows
from rffkern._dask_ridge import fit_ridge
from rffkern._calibration import (ConformalSetMixin, calibration_rows, class_codes, class_scores, loo_decisions, tempered_log_proba,
                                  temperature_of)
from rffkern._fit_options import fit_options
from rffkern._importances import DeferredSummaries, importance_rows, rms_partial_derivatives
from rffkern._data import (TargetScaler, check_first_chunk, labels_from_decision, mean_scale_constant, one_spread,
                           relative_sample_weight, standardizing, warn_newly_varying_inputs)
from rffkern._inputs import (fit_input_scaling, guarded_inputs, heavy_tailed_columns, set_input_scaling,
                             widen_input_range)
from rffkern._linalg import single_threaded_blas
from rffkern._posterior import PosteriorRegressorMixin, uncertainty_docstring
from rffkern._progress import ProgressLog
from rffkern._ridge_solvers import (FourierFeatureMap, GramStats, as_alpha_list, choose_alpha, fit_ridge_map,
                                   gram_errors, solve_ridge)
from rffkern._selection import (DEFAULT_ALPHAS, PROBE_COMPONENTS, PROBE_ROWS, STANDARDIZE_CHOICES,
                                WIDTH_FACTORS, one_se_geometry, one_se_kernel, paired_standard_error, pick_width)
from rffkern._sampling import (DEFAULT_NU, KERNELS, SAMPLINGS, check_nu, check_sampling, draw_map, frequency_count,
                               median_distance, radial_draw, radial_frequencies, weighted_median_distance)
from rffkern._typing import RandomStateLike
from rffkern._validation import (as_generator, check_class_labels, check_label_chunk, resolve_n_threads)

__all__ = ["RFFRidge", "RFFRidgeClassifier"]

#: The Matérn smoothness values ``kernel="auto"`` compares with the Gaussian kernel (the limit
#: nu -> inf): once and twice differentiable functions. Not 0.5 (the exponential kernel): on 17
#: real regression sets x 2 splits it had the highest test error of the four kernels on 23 of 34
#: and the lowest on 2 (bench/bench_kernel_families.py, docs/benchmarks.rst "Choosing the
#: kernel"), and each candidate costs a fit.
AUTO_MATERN_NUS = (1.5, 2.5)

def choose_standardization(X: NDArray[np.floating], Y: NDArray[np.floating],
                           sample_weight: NDArray[np.floating] | None, seed: int,
                           n_jobs: int | None = None, robust_inputs: bool = True,
                           quantile: bool = True) -> tuple[bool | str, dict | None]:
    """The input standardization of ``standardize="auto"`` for EERF and adaptive RFF: True (each
    input by its own deviation) or "global" (one pooled deviation), as an
    ``RFFRidge(PROBE_COMPONENTS)`` at its defaults keeps it on at most ``PROBE_ROWS`` rows drawn
    with ``seed``.

    Parameters
    ----------
    X : ndarray of shape (n, d)
        The raw inputs.
    Y : ndarray of shape (n, m)
        The targets as the estimator fits them (scaled, or +-1 class indicators).
    sample_weight : ndarray of shape (n,) or None
    seed : int
        Seed of the rows and of the probe's features.
    n_jobs : int or None, default=None
    robust_inputs : bool, default=True
        The estimator's ``robust_inputs``: the probe's too.
    quantile : bool, default=True
        Whether "quantile" is a candidate (with ``robust_inputs``; not on Dask arrays, whose rows
        are not sorted as a whole).

    Returns
    -------
    standardize : True, "global" or "quantile"
    errors : dict or None
        The probe's ``standardize_errors_`` (None where nothing was compared: one input, inputs
        of one spread, or a probe that could not fit, which keeps True).
    """
    X64 = np.asarray(X, dtype=np.float64)
    _, scale, constant = mean_scale_constant(X64, sample_weight)
    quantile = quantile and robust_inputs and bool(heavy_tailed_columns(X64, sample_weight).any())
    if one_spread(scale, constant) and not quantile:  # the standardizations are one: no probe to fit
        return True, None
    rows = np.arange(X.shape[0]) if sample_weight is None else np.flatnonzero(sample_weight > 0)
    rng = np.random.default_rng(seed)
    if rows.size > PROBE_ROWS:
        rows = np.sort(rng.choice(rows, PROBE_ROWS, replace=False))
    w = None if sample_weight is None else sample_weight[rows]
    probe = RFFRidge(PROBE_COMPONENTS, random_state=rng, n_jobs=n_jobs, robust_inputs=robust_inputs)
    try:
        with fit_options(probe, summaries=False, quantile_candidate=quantile):
            probe.fit(X[rows], Y[rows], sample_weight=w)
    except ValueError:  # too few rows to compare
        return True, None
    return probe.standardize_, probe.standardize_errors_


def resolve_standardization(standardize: bool | str, X: NDArray[np.floating], Y: NDArray[np.floating],
                            sample_weight: NDArray[np.floating] | None, rng: np.random.Generator,
                            n_jobs: int | None = None, robust_inputs: bool = True) -> tuple[bool | str, dict | None]:
    """``(standardize_, standardize_errors_)`` of an estimator with a ``standardize`` parameter:
    the one asked for, or for "auto" :func:`choose_standardization`'s, seeded from a copy of
    ``rng`` (the estimator's own draws stay what they would be with the kept one given)."""
    if standardize != "auto":
        return standardize, None
    seed = int(copy.deepcopy(rng).integers(2**32 - 1))
    return choose_standardization(X, Y, sample_weight, seed, n_jobs, robust_inputs)


class _RFFRidgeBase(DeferredSummaries, BaseEstimator):
    width_errors_: list[float] | None  # declared for type checkers only

    _parameter_constraints = {
        "n_components": [COMPONENTS],
        "alpha": [Interval(numbers.Real, 0, None, closed="left"), RealSequence(0, closed="left")],
        "kernel": [StrOptions(set(KERNELS) | {"auto"})],
        "nu": [NU],
        "sampling": [StrOptions(set(SAMPLINGS))],
        "length_scale": [Interval(numbers.Real, 0, None, closed="neither"), RealSequence(0, closed="neither"),
                         StrOptions({"auto", "median"})],
        "pair": ["boolean"],
        "fit_intercept": ["boolean"],
        "standardize": ["boolean", StrOptions({"auto", "global", "quantile"})],
        "robust_inputs": ["boolean"],
        "alpha_selection": [StrOptions({"loo", "gcv", "validation", "evidence"})],
        "validation_fraction": [Interval(numbers.Real, 0, 1, closed="neither")],
        "loo_rows": [IntInterval(1, None, closed="left"), None],
        "random_state": ["random_state", np.random.Generator],
        "n_jobs": N_JOBS,
        "verbose": ["verbose"],
    }

    def __init__(self, n_components: int = 1000, *, alpha: float | Sequence[float] = DEFAULT_ALPHAS,
                 kernel: str = "gaussian", nu: float = DEFAULT_NU, sampling: str = "random",
                 length_scale: float | str | Sequence[float] = "auto", pair: bool = False,
                 fit_intercept: bool = True, standardize: bool | str = "auto", robust_inputs: bool = True, alpha_selection: str = "loo",
                 validation_fraction: float = 0.1, loo_rows: int | None = None,
                 random_state: RandomStateLike = None, n_jobs: int | None = None, verbose: int = 0) -> None:
        self.n_components = n_components
        self.alpha = alpha
        self.kernel = kernel
        self.nu = nu
        self.sampling = sampling
        self.length_scale = length_scale
        self.pair = pair
        self.fit_intercept = fit_intercept
        self.standardize = standardize
        self.robust_inputs = robust_inputs
        self.alpha_selection = alpha_selection
        self.validation_fraction = validation_fraction
        self.loo_rows = loo_rows
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.verbose = verbose

    # -- the random map -------------------------------------------------------------------------
    def _kernel_candidates(self):
        """The ``(kernel, nu)`` pairs ``fit`` compares: the one asked for, or ("auto") the Gaussian
        and the Matérn kernels of ``AUTO_MATERN_NUS``; nu is None for the kernels without one."""
        if self.kernel == "auto":
            return [("gaussian", None)] + [("matern", nu) for nu in AUTO_MATERN_NUS]
        return [(self.kernel, check_nu(self.nu) if self.kernel == "matern" else None)]

    def _draw_map(self, n_features, rng):
        """Unit-width frequencies (divided by the chosen width later) and the phases. With
        ``kernel="auto"``: the Gaussian's, and every candidate's in ``_units`` (one shared draw,
        :func:`rffkern._sampling.radial_draw`: each Matérn map is the Gaussian one with other
        radii, so the comparison is on common random numbers)."""
        n_freq = frequency_count(self.n_components, self.pair)
        check_sampling("gaussian" if self.kernel == "auto" else self.kernel, self.sampling)
        candidates = self._kernel_candidates()
        if self.kernel == "auto":
            G, b, v = radial_draw(n_features, n_freq, rng, sampling=self.sampling, offsets=not self.pair)
            self._units = {c: radial_frequencies(c[0], G, v, c[1]) for c in candidates}
        else:
            unit, b = draw_map(self.kernel, n_features, n_freq, 1.0, rng, nu=self.nu, sampling=self.sampling,
                               offsets=not self.pair)
            self._units = {candidates[0]: unit}
        self.kernel_, self.nu_ = candidates[0]
        self.kernel_errors_ = None
        self.offsets_ = np.zeros(n_freq) if self.pair else b
        self.scale_ = kernels.default_scale(n_freq, self.pair)
        return self._units[candidates[0]]

    def _map(self, weights=None):
        return FourierFeatureMap(self.weights_ if weights is None else weights,
                                 None if self.pair else self.offsets_, self.scale_, self.pair,
                                 resolve_n_threads(self.n_jobs))

    def _candidate_widths(self, Xs, rng, sample_weight=None):
        """The widths to compare: the given one, the median heuristic, or ("auto") the median
        heuristic times WIDTH_FACTORS, chosen by the selection error. Rows of zero
        ``sample_weight`` take no part in the median."""
        if not isinstance(self.length_scale, str):
            return [float(v) for v in np.atleast_1d(self.length_scale)]
        if sample_weight is None:
            median = median_distance(Xs, rng=rng)
        else:
            median = weighted_median_distance(Xs, sample_weight, rng)
        if self.length_scale == "median":
            return [median]
        return [median * f for f in WIDTH_FACTORS]

    def _geometries(self):
        """The standardizations ``fit`` compares: both of ``STANDARDIZE_CHOICES`` for "auto" with a
        searched width ("auto" or "median"; a given width is in the units of inputs standardized
        each by its own deviation), else the one asked for."""
        if self.standardize == "auto":
            if not isinstance(self.length_scale, str):
                return [True]
            quantile = self.robust_inputs and self._fit_options.quantile_candidate
            return list(STANDARDIZE_CHOICES) + ["quantile"] * bool(quantile)
        return [self.standardize]

    def _scalings(self, X, sample_weight=None, ignore_constant=False):
        """``{standardization: InputScaling}`` for each of :meth:`_geometries`; with
        ``ignore_constant`` (``fit``, which sees every row) an infinite scale for the inputs
        constant on the rows (as :func:`rffkern._inputs.fit_input_scaling`), not in
        ``partial_fit``, whose later batches may vary in them. Also notes the varying inputs."""
        self._note_varying_inputs(X, sample_weight, first=True)
        geometries = self._geometries()
        if geometries == [False]:
            return {False: fit_input_scaling(X, sample_weight, False, self.robust_inputs)}
        own = fit_input_scaling(X, sample_weight, True, self.robust_inputs, ignore_constant)
        self._column_scale = own.scale  # the per-input scales: the importances' units
        if "global" in geometries and len(geometries) > 1:
            _, scale, constant = mean_scale_constant(X.astype(np.float64), sample_weight)
            if one_spread(scale, constant):  # "global" would be True again
                geometries.remove("global")
        if "quantile" in geometries and len(geometries) > 1:
            if not heavy_tailed_columns(X.astype(np.float64), sample_weight).any():  # it would be True again
                geometries.remove("quantile")
        return {g: own if g is True else fit_input_scaling(X, sample_weight, g, self.robust_inputs, ignore_constant)
                for g in geometries}

    def _use_scaling(self, geometry, scalings):
        self.standardize_ = geometry
        set_input_scaling(self, scalings[geometry])

    def _note_varying_inputs(self, X, sample_weight=None, first=False):
        """Record which inputs vary over the rows seen (of positive weight): the others' importance
        is 0 (:meth:`_store_derivative_norms`). ``partial_fit`` rows add to the record."""
        rows = X if sample_weight is None else X[np.asarray(sample_weight) > 0]
        if rows.shape[0] == 0:
            return
        lo, hi = rows.min(axis=0), rows.max(axis=0)
        if first or getattr(self, "_varying_inputs", None) is None:
            self._varying_inputs, self._first_values = hi > lo, np.asarray(lo, dtype=np.float64)
        else:
            self._varying_inputs = self._varying_inputs | (hi > lo) | (lo != self._first_values)

    def _standardized(self, X):
        X = guarded_inputs(self, X)
        if self.standardize_ is False:
            return X
        with standardizing():
            return ((X - self.x_mean_.astype(X.dtype)) / self.x_scale_.astype(X.dtype)).astype(X.dtype, copy=False)

    def _store(self, coef, intercept, alpha, errors, stats, ravel):
        scaler = self._target_scaler
        coef = coef * scaler.scale_
        intercept = intercept * scaler.scale_ + scaler.mean_ if self.fit_intercept else scaler.mean_
        self.coef_ = coef[:, 0] if ravel else coef
        self.intercept_ = float(intercept[0]) if ravel else intercept
        self.alpha_ = float(alpha)
        with np.errstate(over="ignore"):  # in the targets' units: inf for targets near 1e300
            if errors is None:
                self.selection_errors_ = None
            elif self.alpha_selection == "evidence":  # a log density per row: y's units shift it
                self.selection_errors_ = errors + float(np.mean(np.log(scaler.scale_)))
            else:
                self.selection_errors_ = errors * float(np.mean(scaler.scale_**2))
        self._stats = stats
        self.n_samples_seen_ = getattr(stats, "rows", stats.n)

    @single_threaded_blas
    def _fit_targets(self, X, Y, ravel, sample_weight=None):
        self._validate_params()
        log = ProgressLog(self, self.verbose)
        self.__dict__.pop("_first_chunk_constant", None)  # (a previous partial_fit's: fit sees every row)
        w, weight_unit = relative_sample_weight(sample_weight, X.shape[0])
        alphas = as_alpha_list(self.alpha)
        rng = as_generator(self.random_state)
        unit = self._draw_map(X.shape[1], rng)
        scalings = self._scalings(X, w, ignore_constant=True)
        geometries = list(scalings)
        self._target_scaler = self._make_target_scaler().fit(Y, w)
        Ys = self._target_scaler.transform(Y).astype(X.dtype)
        # each standardization's median from the same subsample draws (the stream goes on as after one)
        median_rng = copy.deepcopy(rng)
        Xs_of, widths_of = {}, {}
        for i, g in enumerate(geometries):
            self._use_scaling(g, scalings)
            Xs_of[g] = self._standardized(X)
            widths_of[g] = self._candidate_widths(Xs_of[g], rng if i == 0 else copy.deepcopy(median_rng), w)
        split_seed = int(rng.integers(2**32 - 1))  # one held-out split shared by every width
        auto = isinstance(self.length_scale, str) and self.length_scale == "auto"
        compare = len(geometries) > 1
        paired = auto or compare or self.kernel == "auto"  # (the rules that need per-row losses)
        mid = len(WIDTH_FACTORS) // 2 if auto else 0  # the median heuristic's place in the widths
        # candidate fits (more if "global" wins)
        planned = len(widths_of[geometries[0]]) + len(self._kernel_candidates()) + len(geometries) - 2
        how = {"loo": "LOO", "gcv": "GCV", "validation": "validation", "evidence": "-log evidence/row"}[
            self.alpha_selection]
        count = {"done": 0, "planned": planned}  # (more if "global" or a Matérn kernel wins)

        def evaluate(geometry, width, unit=unit, kernel=""):  # (fit_ridge_map's 5-tuple, row losses or None, error)
            res = fit_ridge_map(self._map(unit / width), Xs_of[geometry], Ys, alphas, fit_intercept=self.fit_intercept,
                                selection=self.alpha_selection, validation_fraction=self.validation_fraction,
                                rng=np.random.default_rng(split_seed), score_single=planned > 1,
                                sample_weight=w, loo_rows=self.loo_rows, return_row_losses=paired)
            out, rows = (res[:5], res[5]) if paired else (res, None)
            error = np.inf if out[3] is None else float(np.min(out[3]))
            count["done"] += 1
            detail = f"{kernel}length_scale {width:.4g}, alpha {out[2]:.3g}"
            if compare:
                detail = f"standardize {geometry!r}, " + detail
            if out[3] is not None:
                with np.errstate(over="ignore"):  # (targets near 1e300: shown as inf)
                    detail += f", {how} mse {error * float(np.mean(self._target_scaler.scale_**2)):.4g}"
            log.step("width", count["done"], count["planned"], detail + f" ({len(alphas)} alphas)")
            return out, rows, error

        # every width in the first standardization (each input by its own deviation with "auto"); the
        # second ("global") at its median width, and at its other widths only if better there than
        # the first's best by more than one standard error
        geometry = geometries[0]
        fits = [evaluate(geometry, width) for width in widths_of[geometry]]
        searched = {geometry: (widths_of[geometry], fits)}
        self.standardize_errors_ = None
        if compare:
            best = min(fits, key=lambda f: f[2])
            self.standardize_errors_ = {geometry: best[2]}
            winner = None  # the other standardization better than the first's best by one standard error
            for other in geometries[1:]:
                probe = evaluate(other, widths_of[other][mid])
                se = np.nan
                if best[1] is not None and probe[1] is not None and np.isfinite(best[2]) and np.isfinite(probe[2]):
                    se = paired_standard_error(probe[1][0], best[1][0], best[1][1])
                self.standardize_errors_[other] = probe[2]
                if one_se_geometry([best[2], probe[2]], se) and (winner is None or probe[2] < winner[1][2]):
                    winner = (other, probe)
            if winner is not None:
                geometry, probe = winner
                count["planned"] += len(widths_of[geometry]) - 1
                fits = [probe if j == mid else evaluate(geometry, width)
                        for j, width in enumerate(widths_of[geometry])]
                searched[geometry] = (widths_of[geometry], fits)
                self.standardize_errors_[geometry] = min(f[2] for f in fits)
        self._use_scaling(geometry, scalings)
        Xs, widths = Xs_of[geometry], widths_of[geometry]
        fits = self._compare_kernels(evaluate, geometry, widths, fits, count)
        searched[geometry] = (widths, fits)
        Xs_of = {}  # (the copies of X for the standardizations not kept are dropped)
        self.width_errors_ = [f[2] for f in fits]
        pick = pick_width(self.width_errors_, [f[1] for f in fits] if auto else None)
        # each searched standardization's widths and errors, for rffkern.fit (RFFNet's start, which
        # standardizes each input by its own deviation)
        self._width_search = {g: ([float(v) for v in ws], [f[2] for f in fs]) for g, (ws, fs) in searched.items()}
        self.length_scale_, out = widths[pick], fits[pick][0]
        self.weights_ = self._units[(self.kernel_, self.nu_)] / self.length_scale_
        self._units = {}
        self._store(*out, ravel=ravel)  # type: ignore[misc]  # out: fit_ridge_map's 5-tuple
        self._stats.weight_unit = weight_unit
        self._store_derivative_norms(Xs, w, rng)
        self._store_calibration(Xs, Y, w)
        chosen = f"standardize {geometry!r}, " if compare else ""
        log.event(f"chose {chosen}{self._kernel_name()}length_scale {self.length_scale_:.4g}, alpha {self.alpha_:.3g}")
        return self

    def _kernel_name(self):
        """``"kernel matern(nu=1.5), "`` for the progress lines of ``kernel="auto"``, else empty."""
        if self.kernel != "auto":
            return ""
        return f"kernel {self.kernel_}" + ("" if self.nu_ is None else f"(nu={self.nu_:g})") + ", "

    def _compare_kernels(self, evaluate, geometry, widths, fits, count):
        """``kernel="auto"``: each Matérn candidate at the Gaussian's width of least selection error
        (one fit each); one is kept by :func:`rffkern._selection.one_se_kernel` (lower than the
        Gaussian's least error by more than one standard error of their per-row difference) and
        then fitted at the other widths too. Sets ``kernel_``, ``nu_`` and ``kernel_errors_``;
        returns the kept kernel's fits (one per width)."""
        self.kernel_errors_ = None
        if self.kernel != "auto":
            return fits
        at = int(np.argmin([f[2] for f in fits]))
        gaussian, candidates = fits[at], self._kernel_candidates()[1:]
        probes, ses = [], []
        for candidate in candidates:
            self.kernel_, self.nu_ = candidate
            probe = evaluate(geometry, widths[at], self._units[candidate], self._kernel_name())
            paired = gaussian[1] is not None and probe[1] is not None and np.isfinite([probe[2], gaussian[2]]).all()
            probes.append(probe)
            ses.append(paired_standard_error(probe[1][0], gaussian[1][0], gaussian[1][1]) if paired else np.nan)
        self.kernel_errors_ = {("gaussian", None): gaussian[2], **{c: p[2] for c, p in zip(candidates, probes)}}
        kept = one_se_kernel(gaussian[2], [p[2] for p in probes], ses)
        self.kernel_, self.nu_ = ("gaussian", None) if kept is None else candidates[kept]
        if kept is None:
            return fits
        count["planned"] += len(widths) - 1
        return [probes[kept] if j == at else evaluate(geometry, width, self._units[candidates[kept]], self._kernel_name())
                for j, width in enumerate(widths)]

    def _own_deviation_ratio(self):
        """Each input's own deviation over its scale in ``x_scale_`` (0 for an input constant on
        the training rows): 1 with ``standardize_=True``; with "global" the factor from the pooled
        units to each input's own."""
        finite = np.isfinite(self.x_scale_)
        return np.where(finite, self._column_scale / np.where(finite, self.x_scale_, 1.0), 0.0)

    def _make_target_scaler(self):
        return TargetScaler(normalize=False)

    @single_threaded_blas
    def _partial_fit_targets(self, X, Y, ravel, first, sample_weight=None):
        alphas = as_alpha_list(self.alpha)
        # (getattr: statistics pickled before they kept a unit were in the caller's units)
        w, weight_unit = relative_sample_weight(sample_weight, X.shape[0],
                                                None if first else getattr(self._stats, "weight_unit", 1.0))
        if first:
            self._validate_params()
            if len(alphas) > 1 and self.alpha_selection == "validation":
                raise ValueError("partial_fit cannot hold out validation data; use alpha_selection='gcv' "
                                 "(or 'loo', which partial_fit replaces by GCV)")
            constant = check_first_chunk(X, w, type(self).__name__)
            rng = as_generator(self.random_state)
            unit = self._draw_map(X.shape[1], rng)
            # the first chunk fixes the standardization, the target scale and the width
            self._use_scaling(self._geometries()[0], self._scalings(X, w))
            self._target_scaler = self._make_target_scaler().fit(Y, w)
            self.length_scale_ = self._candidate_widths(self._standardized(X), rng, w)[len(WIDTH_FACTORS) // 2
                                                                                   if isinstance(self.length_scale, str)
                                                                                   and self.length_scale == "auto"
                                                                                   else 0]
            self.weights_ = unit / self.length_scale_
            self._units = {}
            self.width_errors_ = self.standardize_errors_ = self.kernel_errors_ = None
            self._stats = GramStats(self._map().n_out, Y.shape[1], X.dtype)
            self._stats.weight_unit = weight_unit
            self._first_chunk_constant = constant if self.standardize_ is not False else None
        elif Y.shape[1] != self._stats.ZtY.shape[1] - 1:
            raise ValueError(f"y has {Y.shape[1]} outputs, the model was started with "
                             f"{self._stats.ZtY.shape[1] - 1}")
        else:
            self._note_varying_inputs(X, w)
            self._first_chunk_constant = warn_newly_varying_inputs(
                getattr(self, "_first_chunk_constant", None), self.x_mean_, X, w, type(self).__name__)
            widen_input_range(self, X, w)
        Ys = self._target_scaler.transform(Y).astype(X.dtype)
        stats = self._stats.add(self._map(), self._standardized(X), Ys, w)
        if len(alphas) == 1:
            best, errors = alphas[0], None
        else:
            # (no rows to leave out: GCV, or the evidence, from the Gram alone)
            selection = "evidence" if self.alpha_selection == "evidence" else "gcv"
            best, errors = choose_alpha(alphas, gram_errors(stats, alphas, self.fit_intercept, selection), stats,
                                        selection)
        coef, intercept = solve_ridge(stats, best, self.fit_intercept)
        self._store(coef, intercept, best, errors, stats, ravel)
        self._defer_summaries(self._standardized(X), Y, w)  # computed when read
        ProgressLog(self, self.verbose).event(
            f"partial_fit: {stats.rows} rows seen, length_scale {self.length_scale_:.4g}, alpha {best:.3g}")
        return self

    @property
    def feature_importances_(self) -> NDArray[np.float64]:
        """Relevance of each input feature, scaled to [0, 1].

        The root mean square of ``df/dx_j`` over the training inputs (a subsample of at most 2000
        rows), per unit of each input's own deviation (whatever ``standardize_``, but False: raw
        units): the empirical norm of the partial derivatives, the relevance
        measure of nonparametric sparsity (Rosasco et al. 2013), zero when f does not depend on
        x_j, and for an input constant on every row seen (whose slope the data never explores). With
        several outputs (or classes) the squared derivatives are summed over them.

        Examples
        --------
        >>> import numpy as np
        >>> from rffkern import RFFRidge
        >>> from rffkern.datasets import make_jse3
        >>> X, y, support = make_jse3(200, random_state=0)
        >>> model = RFFRidge(n_components=100, random_state=0).fit(X, y)
        >>> np.argsort(-model.feature_importances_)[:2]
        array([0, 1])
        """
        check_is_fitted(self)
        self._resolve_summaries()
        if self._derivative_norms is None:
            raise AttributeError("feature_importances_ was not computed for this fit")
        return _scaled(self._derivative_norms)

    def _store_derivative_norms(self, Xs, sample_weight=None, rng=None):
        """``sqrt(mean_i (df/dx_ij)^2)`` on standardized inputs (summed over outputs; at most
        ``IMPORTANCE_ROWS`` rows, :func:`rffkern._importances.rms_partial_derivatives`), the mean
        weighted by ``sample_weight`` when given.

        A fit whose importances nobody will read (``rffkern.fit``'s width probe and the ridge it
        completes by ``partial_fit``) runs under ``FitOptions(summaries=False)``: on mnist (d = 784, 10 classes)
        each computation costs ~1 s, a third of the ridge's fit."""
        self.__dict__.pop("_summary_rows", None)  # (rows a partial_fit kept: superseded)
        if not self._fit_options.summaries:
            self._derivative_norms = None
            return
        rows, row_w = importance_rows(Xs, sample_weight, rng)
        norms = rms_partial_derivatives(rows, self.weights_, None if self.pair else self.offsets_, self.coef_,
                                        scale=self.scale_, pair=self.pair, row_weights=row_w,
                                        n_threads=resolve_n_threads(self.n_jobs))
        if self.standardize_ == "global":  # per unit of each input's own deviation, as with True
            norms = norms * self._own_deviation_ratio()
        # An input constant on every row seen: f's slope along it is that of random directions the
        # data never explores (a constant input ranked at 0.77 of the largest, the noise inputs at
        # 0.03-0.05): there is no variation of the data to attribute, its importance is 0
        varying = getattr(self, "_varying_inputs", None)
        if varying is None:  # (a fit that did not record them: the rows at hand decide)
            varying = rows.max(axis=0) > rows.min(axis=0)
        norms[~varying] = 0.0
        self._derivative_norms = norms

    def _store_calibration(self, Xs, Y, sample_weight=None):
        """The classifier's probability temperature (a no-op for the regressor)."""

    def _store_summaries(self, Xs, Y, sample_weight=None):
        self._store_derivative_norms(Xs, sample_weight)
        self._store_calibration(Xs, Y, sample_weight)

    def _decision(self, X):
        check_is_fitted(self)
        X = validate_data(self, X, dtype=[np.float64, np.float32], reset=False)
        coef = self.coef_.reshape(self.coef_.shape[0], -1)
        F = self._map().predict(self._standardized(X), coef)
        F = F + np.asarray(self.intercept_, X.dtype)
        return F[:, 0] if self.coef_.ndim == 1 else F


def _scaled(r):
    r = np.asarray(r, dtype=np.float64)
    top = r.max() if r.size else 0.0
    return r / top if top > 0 else r


class RFFRidge(PosteriorRegressorMixin, RegressorMixin, _RFFRidgeBase):
    """Ridge regression on random Fourier features, solved in closed form from the streamed Gram.

    Minimises ``||y - Z coef - intercept||^2 + alpha ||coef||^2`` (scikit-learn's ``Ridge``
    convention) with ``Z = sqrt(2/s) cos(X W + b)``, ``W`` from the kernel's spectral density.

    The defaults make a tuned kernel ridge machine from raw X and y in one call: X is centred and
    scaled (each input by its own deviation, or all by one pooled deviation where that is better:
    ``standardize="auto"``), y centred and scaled (predictions come back in y's units), the kernel
    width is chosen among 0.5, 1 and 2 times the median pairwise distance (the median itself unless
    another is better by more than one standard error) and the penalty among 23 values from 1e-8 to
    1e3, all by exact leave-one-out error -- each candidate costs one streamed Gram pass, one
    eigendecomposition and one LOO pass over X (four candidates, six when the pooled deviation wins).

    Parameters
    ----------
    n_components : int, default=1000
        Number of random features s (even with ``pair=True``).
    alpha : float or sequence of float, default=``DEFAULT_ALPHAS``
        Ridge penalty (in the units of the standardized targets with ``normalize_y=True``); a
        sequence is searched with ``alpha_selection``, over the penalties the Gram resolves: on
        float32 rows those of at least float32's eps times the Gram's trace (about 1.2e-7 times
        the row count), below which its rounding outweighs the penalty
        (:func:`rffkern._ridge_solvers.resolved_alphas`; float64 rows resolve the whole default).
    kernel : {"gaussian", "laplace", "cauchy", "matern", "auto"}, default="gaussian"
        The shift-invariant kernel whose spectral density the frequencies are drawn from (see
        :class:`rffkern.RandomFourierFeatures`). "auto": the Gaussian and the Matérn kernels of
        nu in ``AUTO_MATERN_NUS`` (1.5, 2.5) compared by the selection error that chooses the
        width and penalty, from one shared draw (each Matérn map is the Gaussian one with other
        radii): each Matérn kernel at the Gaussian's width of least error (in the kept
        standardization), kept only where its error is lower than the Gaussian's by more than one
        standard error of their per-row difference, and then fitted at the other widths too
        (``kernel_``, ``nu_``, ``kernel_errors_``). Two fits more, four where a Matérn kernel
        wins; ``partial_fit`` cannot compare and takes the Gaussian.
    nu : float, default=1.5
        The Matérn kernel's smoothness (``kernel="matern"`` only; > 0): 0.5 the exponential
        kernel, 1.5 and 2.5 once and twice differentiable functions, the Gaussian the limit.
    sampling : {"random", "qmc", "orthogonal"}, default="random"
        How the frequencies are drawn (see :class:`rffkern.RandomFourierFeatures`): independently,
        from a scrambled Sobol' set (a lower kernel-approximation error for the same number of
        features), or in orthogonal blocks (radial kernels: "gaussian", "matern", "auto").
    length_scale : float, sequence of float, "median" or "auto", default="auto"
        Kernel width in the units of the (standardized) inputs. "median": the median pairwise
        distance of a subsample of at most 2000 rows; "auto": 0.5, 1 and 2 times it, each at its
        best penalty, and the one nearest the median (1x) whose selection error is within one
        standard error of the least (of the mean per-row difference of the LOO or held-out losses
        to the best width's, ``rffkern.ridge.one_se_width``; with ``alpha_selection="gcv"``, which scores no
        row, the least); a sequence: the width of least selection error (so ``m * [0.5, 1, 2]``,
        ``m`` the ``length_scale_`` of a "median" fit, is the earlier "auto" rule of least error).
        The chosen value is ``length_scale_``. ``partial_fit`` cannot compare widths: it takes the
        first of a sequence, the median itself for "auto".
    pair : bool, default=False
        Use ``[cos, sin]`` features of ``n_components // 2`` frequencies.
    fit_intercept : bool, default=True
        Fit an unpenalised intercept (the Gram matrix is centred).
    standardize : {"auto", True, "global", "quantile", False}, default="auto"
        How the inputs are centred and scaled before the kernel (inputs constant on the training
        rows get an infinite scale in ``fit``: they standardize to 0 on every row). True: each by
        its own deviation, so that one width suits inputs in different units. "global": each
        centred, all divided by one pooled deviation (the root mean square of the varying inputs'),
        which keeps their relative spreads: inputs in one unit such as pixels, where standardizing
        each blows up the rarely varying ones. "auto": with a searched width (``length_scale``
        "auto" or "median"), True at its widths and "global" at its median heuristic width are
        compared by the selection error; "global" (then searched at its other widths too) is kept
        only if better than True's best by more than one standard error of the per-row difference
        (``rffkern.ridge.one_se_geometry``; by any amount with GCV). With a given width, in
        ``partial_fit``, on Dask arrays and where the varying inputs' deviations are equal (to
        1e-6 relative, as after a ``StandardScaler``: "global" is then True again) "auto" is True. False: X as given. The choice is
        ``standardize_``; "auto" keeps "global" on pixels (:doc:`/design_notes`). "quantile": each
        heavy-tailed input (not two-valued, a training row more than 5 deviations from its mean)
        mapped to normal scores by scikit-learn's ``QuantileTransformer`` (``input_quantiles_``),
        then as True; "auto" compares it too (where such inputs exist, with ``robust_inputs``; not
        on Dask arrays).
    robust_inputs : bool, default=True
        Keep rows far from the training data near it: a two-valued input
        (a one-hot level, a flag) is scaled by half the gap between its values rather than by its
        deviation (a rare level then lies 2 from the common one, not 30 deviations out); at
        predict each input is clipped to its training range (``x_min_``, ``x_max_``), as trees do
        implicitly; and ``standardize="auto"`` also tries "quantile" where an input is
        heavy-tailed. A finite random-feature model does not fall back to its mean far from the
        data as the exact kernel does, and answered such rows absurdly. False: the plain
        standardization.
    normalize_y : bool, default=True
        Centre and scale each target (regressor only); False fits y as given.
    alpha_selection : {"loo", "gcv", "validation", "evidence"}, default="loo"
        How a list of alphas (and the width) is searched: exact leave-one-out, generalised CV, a
        held-out split, or the largest log marginal likelihood of the ridge's Bayesian linear model
        (:meth:`RFFRidge.log_marginal_likelihood`, from the Gram alone: no pass over the rows).
        ``partial_fit`` uses GCV for lists ("evidence" where chosen).
    validation_fraction : float, default=0.1
        Held-out share for ``alpha_selection="validation"``.
    loo_rows : int or None, default=None
        With ``alpha_selection="loo"``: average the exact leave-one-out residuals of a random subset
        of at most this many rows (the model and its Gram still use every row), an unbiased
        estimate of the LOO error at a fraction of the cost of the LOO pass -- the pass over all n
        rows costs about twice a Gram pass. None: every row. Dask fits always score every row.
        Caution: at small penalties a few rows of leverage near 1 can dominate the mean LOO error,
        and a subset that misses them favours too small a penalty (seen on elevators with 2000 of
        10623 rows).
    random_state : int, Generator, RandomState or None, default=None
        Seed or generator of every random draw; the same value gives the same model whatever
        ``n_jobs``.
    n_jobs : int or None, default=None
        Threads of the compiled kernels (None: OpenMP's current limit, -1: all usable cores).
        The fitted model does not depend on it.
    verbose : int, default=0
        Print one line per candidate width (its chosen alpha and selection error) and the final
        choice, in the format of :class:`rffkern._progress.ProgressLog`.

    Attributes
    ----------
    length_scale_ : float
        The kernel width used (in the units of the standardized inputs).
    kernel_ : str
        The kernel used: ``kernel``, or the one ``kernel="auto"`` kept.
    nu_ : float or None
        The Matérn smoothness used (None for the other kernels).
    kernel_errors_ : dict or None
        ``kernel="auto"``: the least selection error of each kernel compared, by ``(kernel, nu)``
        (``("gaussian", None)``, ``("matern", 0.5)``, ...); None otherwise.
    width_errors_ : list of float or None
        The selection error of each candidate width (``length_scale="auto"``) in the kept
        standardization.
    standardize_ : {True, "global", False}
        The standardization used.
    standardize_errors_ : dict or None
        ``standardize="auto"``: the least selection error of each standardization compared
        (``{True: ..., "global": ...}``; "global"'s at its median width unless it was kept); None
        where nothing was compared.
    x_mean_, x_scale_ : ndarray of shape (n_features_in_,)
        The standardization (zeros and ones with ``standardize=False``; one value for every varying
        input with "global"); ``fit`` gives the inputs constant on the training rows an infinite
        scale: they standardize to 0 on every row.
    x_min_, x_max_ : ndarray of shape (n_features_in_,) or None
        The training range each input is clipped to at predict (None with ``robust_inputs=False``).
    input_quantiles_ : sklearn.preprocessing.QuantileTransformer or None
        With ``standardize_="quantile"``: the normal scores of the heavy-tailed inputs
        ``quantile_columns_`` (None otherwise).
    weights_ : ndarray of shape (n_features_in_, n_frequencies)
        The frequencies, for the standardized inputs and ``length_scale_``.
    offsets_ : ndarray of shape (n_frequencies,)
        The random phases (zeros with ``pair=True``).
    scale_ : float
        The feature scale ``c``.
    coef_ : ndarray of shape (n_components,) or (n_components, n_targets)
        The ridge coefficients, in y's units.
    intercept_ : float or ndarray of shape (n_targets,)
        The intercept, in y's units.
    alpha_ : float
        The alpha used (the selected one for a list).
    selection_errors_ : ndarray of shape (n_alphas,) or None
        Mean squared LOO / GCV / validation error of each alpha; with ``alpha_selection="evidence"``
        the negative log marginal likelihood per row (y's units).
    n_samples_seen_ : int
        Samples in the Gram matrix (grows with ``partial_fit``).
    n_features_in_ : int
        Number of features seen during fit.

    Examples
    --------
    >>> import numpy as np
    >>> from rffkern import RFFRidge
    >>> from rffkern.datasets import make_jse3
    >>> X, y, support = make_jse3(200, random_state=0)  # y = x1 * x2 + noise
    >>> model = RFFRidge(n_components=100, random_state=0).fit(X, y)
    >>> round(model.score(X, y), 2), model.alpha_
    (0.98, 0.0001)
    >>> np.argsort(-model.feature_importances_)[:2]
    array([0, 1])
    """

    _parameter_constraints = {**_RFFRidgeBase._parameter_constraints, "normalize_y": ["boolean"]}

    def __init__(self, n_components: int = 1000, *, alpha: float | Sequence[float] = DEFAULT_ALPHAS,
                 kernel: str = "gaussian", nu: float = DEFAULT_NU, sampling: str = "random",
                 length_scale: float | str | Sequence[float] = "auto", pair: bool = False,
                 fit_intercept: bool = True, standardize: bool | str = "auto", robust_inputs: bool = True, normalize_y: bool = True,
                 alpha_selection: str = "loo", validation_fraction: float = 0.1,
                 loo_rows: int | None = None, random_state: RandomStateLike = None,
                 n_jobs: int | None = None, verbose: int = 0) -> None:
        super().__init__(n_components, alpha=alpha, kernel=kernel, nu=nu, sampling=sampling, length_scale=length_scale,
                         pair=pair,
                         fit_intercept=fit_intercept, standardize=standardize, robust_inputs=robust_inputs,
                         alpha_selection=alpha_selection, validation_fraction=validation_fraction,
                         loo_rows=loo_rows, random_state=random_state, n_jobs=n_jobs, verbose=verbose)
        self.normalize_y = normalize_y

    def _make_target_scaler(self):
        return TargetScaler(normalize=self.normalize_y)

    def fit(self, X: ArrayLike, y: ArrayLike, sample_weight: ArrayLike | None = None) -> RFFRidge:
        """Fit the ridge model, choosing the width and the penalty.

        Dask arrays (X chunked by rows) are fitted on the workers: :func:`rffkern._dask_ridge.fit_ridge`.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training data.
        y : array-like of shape (n_samples,) or (n_samples, n_targets)
            Real-valued targets.
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative weights of the rows (not all zero), relative: divided by their mean over
            the rows of positive weight, so that weights ``c w`` fit the model of ``w`` and equal
            weights the model of none (the penalty means what it means without weights). They
            weight the squared errors of the fit, the standardization of X and y, the median
            heuristic (rows of zero weight are left out) and the selection errors: at one width
            and one penalty, integer weights give the model of the rows repeated that many times
            at ``alpha`` times their mean positive weight (up to round-off), a zero weight that of
            the row dropped. The leave-one-out (and GCV) errors that choose the width and penalty
            leave each row out with all its weight, as scikit-learn's ``RidgeCV`` (the rows
            repeated would be left out one copy at a time). With Dask arrays: a Dask array or an
            array-like, equal to the in-memory fit.

        Returns
        -------
        self
            The fitted estimator.

        Examples
        --------
        >>> from rffkern import RFFRidge
        >>> from rffkern.datasets import make_jse3
        >>> X, y, support = make_jse3(200, random_state=0)
        >>> model = RFFRidge(n_components=100, random_state=0)
        >>> model.fit(X, y).coef_.shape
        (100,)
        """
        if is_dask_array(X):
            return fit_ridge(self, X, y, sample_weight, choose_standardization)
        X, y = validate_data(self, X, y, dtype=[np.float64, np.float32], multi_output=True, y_numeric=True)
        Y = y.reshape(X.shape[0], -1).astype(X.dtype, copy=False)
        return self._fit_targets(X, Y, ravel=y.ndim == 1, sample_weight=sample_weight)

    def partial_fit(self, X: ArrayLike, y: ArrayLike, sample_weight: ArrayLike | None = None) -> RFFRidge:
        """Add a chunk to the running Gram (``kernels.gram(accumulate=True)``) and re-solve.

        The first chunk fixes the standardization, the target scale and the width (the median
        heuristic on it; "auto" cannot compare widths without a second pass), so it needs at least
        ``rffkern._data.MIN_FIRST_CHUNK_ROWS`` (10) rows of positive weight (else a
        ``ValueError``); a later chunk that varies in an input constant on the first one warns
        (``UserWarning``): that input is taken in raw units, not standardized.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            A chunk of training data.
        y : array-like of shape (n_samples,) or (n_samples, n_targets)
            Real-valued targets of the chunk.
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative weights of this chunk's rows, as in :meth:`fit` (the chunk's weights
            must not all be zero), relative to the first chunk's (or ``fit``'s) mean positive
            weight: chunks weighted ``c w`` fit the model of ``w``, and None is weight 1.

        Returns
        -------
        self
            The fitted estimator.

        Examples
        --------
        >>> from rffkern import RFFRidge
        >>> from rffkern.datasets import make_jse3
        >>> X, y, support = make_jse3(200, random_state=0)
        >>> model = RFFRidge(n_components=100, random_state=0)
        >>> for start in range(0, 200, 50):
        ...     model = model.partial_fit(X[start:start + 50], y[start:start + 50])
        >>> model.n_samples_seen_
        200
        """
        first = not hasattr(self, "coef_")
        X, y = validate_data(self, X, y, dtype=[np.float64, np.float32], multi_output=True,
                             y_numeric=True, reset=first)
        Y = y.reshape(X.shape[0], -1)
        return self._partial_fit_targets(X, Y, y.ndim == 1, first, sample_weight)

    @uncertainty_docstring
    def predict(self, X: ArrayLike, return_std: bool = False, return_cov: bool = False) -> Any:
        """Predict ``z(X) @ coef_ + intercept_``, and optionally its predictive uncertainty.

        The features are not stored. With ``return_std`` or ``return_cov`` the predictive
        uncertainty of the ridge's Bayesian linear model comes too (scikit-learn's
        ``GaussianProcessRegressor`` convention). The ridge is the posterior mean of ``f(x) = b + (z(x) - mean z) . c`` with the prior
        ``c ~ N(0, s2 / alpha_ I)``, a flat prior on ``b`` and Gaussian noise of variance ``s2``,
        estimated from the training residuals as ``RSS / (n - dof - 1)`` (``dof`` the ridge's
        effective degrees of freedom; with ``sample_weight``, per unit of relative weight). The
        predictive variance of a new ``y`` is ``s2 (1 + 1/n + (z - mean z)' (G_c + alpha_ I)^-1
        (z - mean z))``, ``G_c`` the centred Gram: the noise plus the posterior variance of ``f``
        (rffkern._posterior).

        {parameters}

        Examples
        --------
        >>> from rffkern import RFFRidge
        >>> from rffkern.datasets import make_jse3
        >>> X, y, support = make_jse3(200, random_state=0)
        >>> model = RFFRidge(n_components=100, random_state=0)
        >>> model.fit(X, y).predict(X[:3]).shape
        (3,)
        >>> mean, std = model.predict(X[:3], return_std=True)
        >>> std.shape, bool((std > 0).all())
        ((3,), True)
        """
        return self._predict_with_uncertainty(X, return_std, return_cov)

    def _ridge_state(self):
        return self._stats, self.alpha_, self.fit_intercept, self._target_scaler.scale_

    def _features(self, X):
        """The features of X as ``predict`` maps them."""
        check_is_fitted(self)
        X = validate_data(self, X, dtype=[np.float64, np.float32], reset=False)
        return self._map().features(self._standardized(X))

    def _store_calibration(self, Xs, Y, sample_weight=None):
        """The conformity scores of :meth:`predict_interval`: the leave-one-out residuals of these
        rows of the fit (at most ``CALIBRATION_ROWS`` drawn)."""
        rows = calibration_rows(Xs.shape[0], sample_weight)
        self._store_conformity(self._map().features(Xs[rows]), np.asarray(Y)[rows],
                               None if sample_weight is None else np.asarray(sample_weight)[rows])

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.multi_output = True
        return tags


class RFFRidgeClassifier(ConformalSetMixin, ClassifierMixin, _RFFRidgeBase):
    """Ridge classifier on random Fourier features: ridge regression on ``{-1, +1}`` one-vs-rest targets.

    The parameters are :class:`RFFRidge`'s (without ``normalize_y``); ``predict`` returns the
    class with the largest decision value (the sign for two classes).

    Parameters
    ----------
    n_components : int, default=1000
        Number of random features s (even with ``pair=True``).
    alpha : float or sequence of float, default=``DEFAULT_ALPHAS``
        Ridge penalty (on the +-1 targets); a sequence is searched with ``alpha_selection``, over
        the penalties the Gram resolves, as in :class:`RFFRidge`.
    kernel : {"gaussian", "laplace", "cauchy", "matern", "auto"}, default="gaussian"
        As in :class:`RFFRidge` ("auto" compares the kernels by the leave-one-out error of the
        +-1 targets).
    nu : float, default=1.5
        The Matérn kernel's smoothness, as in :class:`RFFRidge`.
    sampling : {"random", "qmc", "orthogonal"}, default="random"
        As in :class:`RFFRidge`.
    length_scale : float, sequence of float, "median" or "auto", default="auto"
        Kernel width in the units of the (standardized) inputs. "median": the median pairwise
        distance of a subsample of at most 2000 rows; "auto": of 0.5, 1 and 2 times it, the one
        nearest 1x whose selection error is within one standard error of the least, as in
        :class:`RFFRidge`; a sequence: the width of least selection error (the chosen value is
        ``length_scale_``).
    pair : bool, default=False
        Use ``[cos, sin]`` features of ``n_components // 2`` frequencies.
    fit_intercept : bool, default=True
        Fit an unpenalised intercept (the Gram matrix is centred).
    standardize : {"auto", True, "global", "quantile", False}, default="auto"
        How the inputs are centred and scaled, as in :class:`RFFRidge` ("auto": each input by its
        own deviation, or all by one pooled deviation where that has the lower leave-one-out error
        by more than one standard error; pixels such as digits and mnist take the pooled one). "quantile": each heavy-tailed input (not two-valued, a
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
    alpha_selection : {"loo", "gcv", "validation", "evidence"}, default="loo"
        How a list of alphas (and the width) is searched: exact leave-one-out, generalised CV, a
        held-out split, or the largest log marginal likelihood of the ridge's Bayesian linear model
        (:meth:`RFFRidge.log_marginal_likelihood`, from the Gram alone: no pass over the rows).
        ``partial_fit`` uses GCV for lists ("evidence" where chosen).
    validation_fraction : float, default=0.1
        Held-out share for ``alpha_selection="validation"``.
    loo_rows : int or None, default=None
        Score the leave-one-out error on a random subset of this many rows (None: every row), as
        in :class:`RFFRidge`.
    random_state : int, Generator, RandomState or None, default=None
        Seed or generator of every random draw; the same value gives the same model whatever
        ``n_jobs``.
    n_jobs : int or None, default=None
        Threads of the compiled kernels (None: OpenMP's current limit, -1: all usable cores).
        The fitted model does not depend on it.
    verbose : int, default=0
        Print one line per candidate width and the final choice, as in :class:`RFFRidge`.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        The class labels.
    coef_ : ndarray of shape (n_components,) for two classes, else (n_components, n_classes)
        The ridge coefficients of the +-1 one-vs-rest targets.
    intercept_, alpha_, selection_errors_, weights_, offsets_, scale_, n_features_in_ : object
        As in :class:`RFFRidge`.
    kernel_, nu_, kernel_errors_ : object
        As in :class:`RFFRidge`.
    length_scale_, width_errors_, standardize_, standardize_errors_, x_mean_, x_scale_ : object
        As in :class:`RFFRidge`.
    temperature_ : float or None
        :meth:`predict_proba`'s ``a`` in ``softmax(a * decision)``, of least log-loss of the exact
        leave-one-out decision values of (at most 2000) training rows; None before rows of two
        classes were seen.

    Examples
    --------
    >>> from rffkern import RFFRidgeClassifier
    >>> from rffkern.datasets import make_jse3
    >>> X, _, _ = make_jse3(200, random_state=0)
    >>> y = (X[:, 0] * X[:, 1] > 0).astype(int)
    >>> clf = RFFRidgeClassifier(n_components=100, random_state=0).fit(X, y)
    >>> clf.predict(X[:3]), round(clf.score(X, y), 2)
    (array([0, 1, 0]), 0.86)
    """

    def _set_classes(self, labels):
        """``classes_`` and the +-1 one-vs-rest encoder from the labels (fit's y, partial_fit's
        classes, or a Dask array's unique values)."""
        self._binarizer = LabelBinarizer(neg_label=-1, pos_label=1).fit(labels)
        self.classes_ = self._binarizer.classes_
        if len(self.classes_) < 2:
            raise ValueError(
                f"the classifier needs samples of at least 2 classes; got {len(self.classes_)} class")

    def _targets(self, y):
        Y = self._binarizer.transform(y).astype(np.float64)
        return Y

    def _store_calibration(self, Xs, Y, sample_weight=None):
        """``temperature_`` of :meth:`predict_proba` from the exact leave-one-out decision values of
        these rows of the fit (at most ``CALIBRATION_ROWS``), against their classes (+-1 targets
        ``Y``). Kept as it was where those rows hold a single class (a ``partial_fit`` chunk), and
        skipped with the importances (``FitOptions(summaries=False)``: ``rffkern.fit`` calibrates
        the model it returns)."""
        if not self._fit_options.summaries:
            self._temperature = None
            return
        Y, scaler = np.asarray(Y, np.float64), self._target_scaler

        def loo_scores(rows, w):
            loo = loo_decisions(self._stats, self._map(), Xs[rows], scaler.transform(Y[rows]), self.alpha_,
                                self.fit_intercept, w)
            return class_scores(scaler.inverse_transform(loo))

        temperature, set_scores = temperature_of(class_codes(Y), loo_scores,
                                                 calibration_rows(Xs.shape[0], sample_weight), sample_weight)
        if temperature is not None:  # (a chunk of one class keeps the earlier calibration)
            self._temperature, self._set_scores = temperature, set_scores
        else:
            self._temperature = self.__dict__.get("_temperature")

    def _defer_summaries(self, Xs, Y, sample_weight=None):
        if "_summary_rows" in self.__dict__ and np.unique(class_codes(Y)).size < 2:
            # a chunk of one class calibrates nothing: the rows kept (of two classes, maybe) first
            self._resolve_summaries()
        super()._defer_summaries(Xs, Y, sample_weight)

    @property
    def temperature_(self) -> float | None:
        """:meth:`predict_proba`'s temperature (see the class's Attributes).

        Examples
        --------
        >>> from rffkern import RFFRidgeClassifier
        >>> from rffkern.datasets import make_jse3
        >>> X, _, _ = make_jse3(200, random_state=0)
        >>> y = (X[:, 0] * X[:, 1] > 0).astype(int)
        >>> round(RFFRidgeClassifier(n_components=100, random_state=0).fit(X, y).temperature_, 2)
        2.26
        """
        self._resolve_summaries()
        if "_temperature" not in self.__dict__:
            raise AttributeError("temperature_ exists once the classifier is fitted")
        return self._temperature

    def fit(self, X: ArrayLike, y: ArrayLike, sample_weight: ArrayLike | None = None) -> RFFRidgeClassifier:
        """Fit the ridge classifier on the +-1 one-vs-rest encoding of y.

        Dask arrays are fitted as in :meth:`RFFRidge.fit`.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training data.
        y : array-like of shape (n_samples,)
            Class labels.
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative row weights, as in :meth:`RFFRidge.fit` (they weight the squared errors
            of the +-1 one-vs-rest targets). Dask arrays too.

        Returns
        -------
        self
            The fitted estimator.

        Examples
        --------
        >>> from rffkern import RFFRidgeClassifier
        >>> from rffkern.datasets import make_jse3
        >>> X, _, _ = make_jse3(200, random_state=0)
        >>> y = (X[:, 0] * X[:, 1] > 0).astype(int)
        >>> clf = RFFRidgeClassifier(n_components=100, random_state=0)
        >>> clf.fit(X, y).classes_
        array([0, 1])
        """
        if is_dask_array(X):
            return fit_ridge(self, X, y, sample_weight, choose_standardization)
        X, y = validate_data(self, X, y, dtype=[np.float64, np.float32])
        check_class_labels(y)
        self._set_classes(y)
        Y = self._targets(y)
        return self._fit_targets(X, Y.astype(X.dtype), ravel=Y.shape[1] == 1, sample_weight=sample_weight)

    def partial_fit(self, X: ArrayLike, y: ArrayLike, classes: ArrayLike | None = None,
                    sample_weight: ArrayLike | None = None) -> RFFRidgeClassifier:
        """Add a chunk to the running Gram and re-solve.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            A chunk of training data.
        y : array-like of shape (n_samples,)
            Class labels of the chunk.
        classes : array-like of shape (n_classes,), default=None
            Every class label; required on the first call, ignored afterwards.
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative weights of this chunk's rows, as in :meth:`fit`.

        Returns
        -------
        self
            The fitted estimator.

        Examples
        --------
        >>> from rffkern import RFFRidgeClassifier
        >>> from rffkern.datasets import make_jse3
        >>> X, _, _ = make_jse3(200, random_state=0)
        >>> y = (X[:, 0] * X[:, 1] > 0).astype(int)
        >>> clf = RFFRidgeClassifier(n_components=100, random_state=0)
        >>> clf = clf.partial_fit(X[:100], y[:100], classes=[0, 1]).partial_fit(X[100:], y[100:])
        >>> clf.n_samples_seen_
        200
        """
        first = not hasattr(self, "coef_")
        X, y = validate_data(self, X, y, dtype=[np.float64, np.float32], reset=first)
        check_label_chunk(y)  # (the classes are given: a small chunk of many is no regression target)
        if first:
            if classes is None:
                raise ValueError("classes must be passed on the first call to partial_fit")
            self._set_classes(np.asarray(classes))
        if not np.isin(y, self.classes_).all():
            raise ValueError(f"y holds labels outside classes_ {self.classes_}")
        Y = self._targets(y)
        return self._partial_fit_targets(X, Y.astype(X.dtype), Y.shape[1] == 1, first, sample_weight)

    def decision_function(self, X: ArrayLike) -> NDArray[np.floating]:
        """Compute the decision values of the ridge classifier.

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
        >>> from rffkern import RFFRidgeClassifier
        >>> from rffkern.datasets import make_jse3
        >>> X, _, _ = make_jse3(200, random_state=0)
        >>> y = (X[:, 0] * X[:, 1] > 0).astype(int)
        >>> clf = RFFRidgeClassifier(n_components=100, random_state=0)
        >>> clf.fit(X, y).decision_function(X[:3]).shape
        (3,)
        """
        if is_dask_array(X):
            return map_rows(self.decision_function, X)
        return self._decision(X)

    def predict(self, X: ArrayLike) -> NDArray[Any]:
        """Predict the class with the largest decision value.

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
        >>> from rffkern import RFFRidgeClassifier
        >>> from rffkern.datasets import make_jse3
        >>> X, _, _ = make_jse3(200, random_state=0)
        >>> y = (X[:, 0] * X[:, 1] > 0).astype(int)
        >>> clf = RFFRidgeClassifier(n_components=100, random_state=0)
        >>> clf.fit(X, y).predict(X[:3])
        array([0, 1, 0])
        """
        if is_dask_array(X):
            return map_rows(self.predict, X)
        D = self.decision_function(X)  # first: it raises NotFittedError before classes_ exists
        return labels_from_decision(self.classes_, D)

    def predict_proba(self, X: ArrayLike) -> NDArray[np.float64]:
        """Class probabilities: ``softmax(temperature_ * decision)`` over the classes.

        For two classes ``sigmoid(temperature_ * decision_function(X))`` for ``classes_[1]``. The
        one temperature is fitted at ``fit`` to the exact leave-one-out decision values of (at
        most 2000 of) the training rows by log-loss (temperature scaling on leave-one-out
        outputs, which the ridge gives in closed form: no held-out split; after ``partial_fit``
        it is refitted, when first needed, on the last chunk that held two or more classes). The
        most probable class is the one :meth:`predict` returns.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            The samples (a Dask array is processed lazily, block by block).

        Returns
        -------
        ndarray of shape (n_samples, n_classes)
            Probabilities of ``classes_``, each row summing to 1.

        Examples
        --------
        >>> from rffkern import RFFRidgeClassifier
        >>> from rffkern.datasets import make_jse3
        >>> X, _, _ = make_jse3(200, random_state=0)
        >>> y = (X[:, 0] * X[:, 1] > 0).astype(int)
        >>> clf = RFFRidgeClassifier(n_components=100, random_state=0).fit(X, y)
        >>> clf.predict_proba(X[:2]).round(2)
        array([[0.63, 0.37],
               [0.31, 0.69]])
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
            The samples.

        Returns
        -------
        ndarray of shape (n_samples, n_classes)
            Log-probabilities of ``classes_``.

        Examples
        --------
        >>> from rffkern import RFFRidgeClassifier
        >>> from rffkern.datasets import make_jse3
        >>> X, _, _ = make_jse3(200, random_state=0)
        >>> y = (X[:, 0] * X[:, 1] > 0).astype(int)
        >>> clf = RFFRidgeClassifier(n_components=100, random_state=0).fit(X, y)
        >>> clf.predict_log_proba(X[:1]).shape
        (1, 2)
        """
        if is_dask_array(X):
            return map_rows(self.predict_log_proba, X)
        return self._log_proba(X, "predict_log_proba")

    def _log_proba(self, X, method):
        """``log_softmax(temperature_ * decision)`` over the classes (``method`` names the caller)."""
        D = self.decision_function(X)  # first: it raises NotFittedError before the temperature exists
        self._resolve_summaries()
        return tempered_log_proba(self, class_scores(D), method)
