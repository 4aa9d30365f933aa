"""RFFNet (Otto & Izbicki): interpretable ARD kernel learners trained on the fused kernels.

The model is ``f(x) = scale * cos((x * theta) @ W + b) @ B`` (a one-hidden-layer cosine network
with fixed random frequencies ``W`` and phases ``b``), fitted by minimising

    (1/n) sum_i loss(y_i, f(x_i)) + alpha * ||B||^2 + relevance_penalty * ||theta||_1

over the output weights ``B`` and the unconstrained ARD relevances ``theta`` with proximal
mini-batch Adam (by default with one second moment for the whole ``theta`` block) or SGD
(Otto & Izbicki, "RFFNet: Large-Scale Interpretable Kernel Methods via Random Fourier Features";
docs/user_guide/rffnet.rst; the paper leaves ``theta`` unpenalised). ``|theta_j|`` measures how
much feature ``j`` matters: the kernel approximated is ``k(theta * (x - x'))``.

This module holds the two estimators (parameters, targets, fitted attributes, prediction); the
training loop is in :mod:`rffkern._rffnet_training` and TopK feature selection in
:mod:`rffkern.topk`.
"""
from __future__ import annotations

import copy
import numbers
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import LabelEncoder
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted, column_or_1d, validate_data

from rffkern import kernels
from rffkern._constraints import COMPONENTS, NU
from rffkern._dask import head_sample, is_dask_array, map_rows
from rffkern._dask_rffnet import fit_rffnet
from rffkern._importances import DeferredSummaries, importance_rows, rms_partial_derivatives
from rffkern._data import (check_first_chunk, constant_columns, mean_and_scale, mean_scale_constant,
                           power_of_two_scale, relative_sample_weight, standardized_rows, warn_newly_varying_inputs)
from rffkern._inputs import fit_input_scaling, guarded_inputs, set_input_scaling, widen_input_range
from rffkern._losses import class_probabilities
from rffkern._linalg import single_threaded_blas
from rffkern._output_refit import OUTPUT_ALPHAS, choose_output_penalty, fit_output_layer
from rffkern._calibration import calibration_rows
from rffkern._posterior import PosteriorRegressorMixin, uncertainty_docstring
from rffkern._progress import ProgressLog
from rffkern._ridge_solvers import FourierFeatureMap, fit_ridge_map, solve_ridge
from rffkern._rffnet_training import (  # the n_init and closing-ridge settings too: rffkern.rffnet.START_EPOCHS etc.
    CLOSING_COMPONENTS_PER_ROW,
    N_INIT_AUTO,
    N_INIT_FINALISTS,
    N_INIT_MIN_FEATURES,
    REFIT_ALPHAS,
    START_EPOCHS,
    EpochRunner,
    Schedule,
    TrainingState,
    best_of_starts,
    check_initial_relevances,
    constant_init,
    initial_relevances,
    r2_from_sums,
    stratified_subset,
    train_epochs,
    training_targets,
    zero_constant_relevances,
)
from rffkern._sampling import DEFAULT_NU, KERNELS, SAMPLINGS, check_sampling, draw_map, widen_map
from rffkern._selection import pick_width
from rffkern._typing import RandomStateLike
from rffkern._validation import as_generator, check_class_labels, check_label_chunk, resolve_n_threads
from rffkern.ridge import choose_standardization, resolve_standardization

__all__ = ["RFFNetRegressor", "RFFNetClassifier", "constant_init"]

SOLVERS = ("adam", "shared-adam", "palm-adam", "sgd", "palm-sgd")
INITS = ("constant", "median", "regressor", "restarter")
#: X is validated in either precision as given (no cast): it reaches the training dtype only once
#: standardized in float64 (:func:`~rffkern._data.standardized_rows`).
_INPUT_DTYPES = (np.float64, np.float32)


# The per-epoch validation scores (``validation_scores_``), in a few NumPy lines: scikit-learn's
# r2_score and accuracy_score check their inputs for ~0.5 ms a call, which on small data cost more
# than the epoch's validation pass (cpu_act, 100 epochs: 0.05 s of a 1.3 s rffkern.fit).
def _r2(Y, F, sample_weight=None):
    """``sklearn.metrics.r2_score(Y, F, sample_weight)``: the mean over outputs of ``1 - SSE / SST``
    (1 for a constant output fitted exactly, 0 for one fitted otherwise; NaN for one row)."""
    Y, F = np.asarray(Y, np.float64), np.asarray(F, np.float64)
    if Y.shape[0] < 2:
        return float("nan")
    w = np.ones((Y.shape[0], 1)) if sample_weight is None else np.asarray(sample_weight, np.float64)[:, None]
    sse = (w * (Y - F) ** 2).sum(axis=0)
    sst = (w * (Y - np.average(Y, axis=0, weights=w[:, 0])) ** 2).sum(axis=0)  # as r2_score rounds it
    return r2_from_sums(sse, sst)


def _accuracy(labels, predicted, sample_weight=None):
    """``sklearn.metrics.accuracy_score(labels, predicted, sample_weight=sample_weight)``."""
    return float(np.average(labels == predicted, weights=sample_weight))


class _BaseRFFNet(DeferredSummaries, BaseEstimator):
    """Shared fitting machinery of :class:`RFFNetRegressor` and :class:`RFFNetClassifier`."""

    x_mean_: NDArray[np.float64]  # declared for type checkers only (set by _set_input_scaling)
    _weight_unit: float  # the mean weight of the first fit's rows: the unit of later weights

    _parameter_constraints = {
        "n_components": [COMPONENTS],
        "alpha": [Interval(numbers.Real, 0, None, closed="left")],
        "kernel": [StrOptions(set(KERNELS))],
        "nu": [NU],
        "sampling": [StrOptions(set(SAMPLINGS))],
        "init": [StrOptions(set(INITS)), "array-like"],
        "n_restarts": [Interval(numbers.Integral, 1, None, closed="left")],
        "restart_iter": [Interval(numbers.Integral, 1, None, closed="left")],
        "n_init": [Interval(numbers.Integral, 1, None, closed="left"), StrOptions({"auto"})],
        "solver": [StrOptions(set(SOLVERS))],
        "learning_rate": [Interval(numbers.Real, 0, kernels.MAX_LEARNING_RATE, closed="right")],
        "learning_rate_schedule": [StrOptions({"constant", "adaptive"})],
        "batch_size": [Interval(numbers.Integral, 1, None, closed="left")],
        "max_iter": [Interval(numbers.Integral, 1, None, closed="left")],
        "early_stopping": ["boolean"],
        "validation_fraction": [Interval(numbers.Real, 0, 1, closed="neither")],
        "n_iter_no_change": [Interval(numbers.Integral, 1, None, closed="left")],
        "tol": [Interval(numbers.Real, 0, None, closed="left")],
        "checkpoint": ["boolean"],
        "standardize": ["boolean", StrOptions({"auto", "global", "quantile"})],
        "robust_inputs": ["boolean"],
        "feature_scale": [Interval(numbers.Real, 0, None, closed="neither"), StrOptions({"rff"})],
        "dtype": [StrOptions({"float32", "float64"})],
        "random_state": ["random_state", np.random.Generator],
        "n_jobs": [numbers.Integral, None],
        "verbose": ["verbose"],
        "warm_start": ["boolean"],
        "relevance_penalty": [Interval(numbers.Real, 0, None, closed="left")],
        "refit_coef": ["boolean"],
        "refit_components": [Interval(numbers.Integral, 1, None, closed="left"), None],
    }

    # Subclasses set these.
    _loss_kind: str | None = None
    # set by fit; declared for type checkers (partial_fit reads them before fit's assignments)
    intercept_: NDArray[np.float64]
    y_scale_: NDArray[np.float64]
    _rng: np.random.Generator
    start_losses_: NDArray[np.float64] | None
    _epochs_in_dropped_starts: int = 0  # n_init's dropped starts (set with start_losses_)

    def __init__(self, n_components: int = 300, *, alpha: float = 1e-4, kernel: str = "gaussian",
                 nu: float = DEFAULT_NU, sampling: str = "random", init: str | ArrayLike = "median", n_restarts: int = 10, restart_iter: int = 10,
                 n_init: int | str = "auto",
                 solver: str = "shared-adam", learning_rate: float = 3e-3, learning_rate_schedule: str = "adaptive",
                 batch_size: int = 32, max_iter: int = 100, early_stopping: bool = True,
                 validation_fraction: float = 0.1, n_iter_no_change: int = 10, tol: float = 0.0,
                 checkpoint: bool = True, standardize: bool | str = "auto", robust_inputs: bool = True, feature_scale: float | str = 1.0,
                 dtype: str = "float32", random_state: RandomStateLike = None, n_jobs: int | None = None,
                 verbose: int = 0, warm_start: bool = False, relevance_penalty: float = 0.1,
                 refit_coef: bool = True, refit_components: int | None = 1000) -> None:
        self.n_components = n_components
        self.alpha = alpha
        self.kernel = kernel
        self.nu = nu
        self.sampling = sampling
        self.init = init
        self.n_restarts = n_restarts
        self.restart_iter = restart_iter
        self.n_init = n_init
        self.solver = solver
        self.learning_rate = learning_rate
        self.learning_rate_schedule = learning_rate_schedule
        self.batch_size = batch_size
        self.max_iter = max_iter
        self.early_stopping = early_stopping
        self.validation_fraction = validation_fraction
        self.n_iter_no_change = n_iter_no_change
        self.tol = tol
        self.checkpoint = checkpoint
        self.standardize = standardize
        self.robust_inputs = robust_inputs
        self.feature_scale = feature_scale
        self.dtype = dtype
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.verbose = verbose
        self.warm_start = warm_start
        self.relevance_penalty = relevance_penalty
        self.refit_coef = refit_coef
        self.refit_components = refit_components

    # ------------------------------------------------------------------ hooks for the subclasses
    def _encode_targets(self, y, first_call, classes=None):
        """(validated y, float targets Y of shape (n, n_outputs), loss name)."""
        raise NotImplementedError

    def _score_outputs(self, F, Y, sample_weight=None):
        """A higher-is-better validation score from raw outputs F and encoded targets Y."""
        raise NotImplementedError

    # ------------------------------------------------------------------ small helpers
    def _scale_value(self):
        if isinstance(self.feature_scale, str):  # "rff"
            return kernels.default_scale(self.n_components)
        return float(self.feature_scale)

    def _standardized(self, X):
        """X standardized with the training statistics (in float64; zeros and ones without
        standardization, which leave X as it is), then in the fitted dtype (always a new array)."""
        return standardized_rows(guarded_inputs(self, X), self.x_mean_, self.x_scale_, self.relevances_.dtype)

    def _runner(self):
        """The compiled epoch with the fitted map and the current optimiser settings."""
        return EpochRunner(weights=self.weights_, offsets=self.offsets_, scale=self.scale_,
                           loss=self._loss, solver=self.solver, batch_size=self.batch_size,
                           alpha=self.alpha, relevance_penalty=self.relevance_penalty,
                           n_threads=resolve_n_threads(self.n_jobs))

    def _raw_outputs(self, Xs, theta=None):
        """f = Z @ B for standardized Xs (n, n_outputs), plus the intercept."""
        F = kernels.predict(Xs, self.weights_, self.offsets_, self.coef_,
                            theta=self.relevances_ if theta is None else theta,
                            scale=self.scale_, n_threads=resolve_n_threads(self.n_jobs))
        return F * self.y_scale_ + self.intercept_

    @property
    def _palm(self):
        return self.solver.startswith("palm")

    # ------------------------------------------------------------------ fitting
    def _validate_input(self, X, y, reset):
        # float64 or float32 as given: X is cast to the training dtype once standardized
        X, y = validate_data(self, X, y, dtype=_INPUT_DTYPES, ensure_all_finite=True, multi_output=True,
                             y_numeric=self._loss_kind == "regression", reset=reset, order="C")
        return X, y

    @single_threaded_blas
    def _fit(self, X, y, *, incremental, classes=None, sample_weight=None):
        fitted = hasattr(self, "relevances_")
        if is_dask_array(X) and not incremental:  # data-parallel on the Dask workers
            return self._fit_dask(X, y, sample_weight, fitted)
        # partial_fit after a fit, and fit with warm_start after a fit, go on from the fitted model
        first_call = not fitted or not (incremental or self.warm_start)
        if first_call or not incremental:
            self._validate_params()
        X, y = self._validate_input(X, y, reset=first_call)
        dtype = np.dtype(self.dtype)
        # relative weights (None when equal): the training loss is their weighted mean, and the
        # closing ridge's penalty and later partial_fit chunks are in units of this fit's mean weight
        weights, unit = relative_sample_weight(sample_weight, X.shape[0], None if first_call else self._weight_unit)
        self._weight_unit = unit
        if first_call and incremental:
            check_first_chunk(X, weights, type(self).__name__)
        y, Y, self._loss = self._encode_targets(y, first_call, classes)
        Y = np.asarray(Y, dtype=np.float64)  # cast to the training dtype once centred and scaled
        if not first_call:
            return self._fit_further(X, y, Y, weights, dtype, incremental)
        return self._fit_first(X, y, Y, weights, dtype, incremental)

    def _fit_dask(self, X, y, sample_weight, fitted):
        """The data-parallel fit on the Dask workers (:func:`rffkern._dask_rffnet.fit_rffnet`)."""
        if sample_weight is not None or (self.warm_start and fitted):
            raise ValueError("sample_weight and warm_start are not supported when X is a Dask array "
                             "(the data-parallel fit starts anew with unit weights)")
        self._trained_map = None
        self._weight_unit = 1.0  # (unweighted)
        self.__dict__.pop("_first_chunk_constant", None)  # (a previous partial_fit's)
        fit_rffnet(self, X, y, choose_standardization)  # with the regressor's closing fit, not the classifier's
        # the importances over at most IMPORTANCE_ROWS rows from randomly chosen chunks (as
        # the ridge's on Dask arrays; a fixed generator: the estimator's stream is left as it was)
        sample = np.asarray(head_sample(X, np.random.default_rng(0)).compute())
        self._store_derivative_norms(self._standardized(sample))
        return self

    def _fit_further(self, X, y, Y, weights, dtype, incremental):
        """partial_fit after a fit, or fit with warm_start after a fit: from the fitted map,
        statistics, (theta, B) and optimiser state."""
        self._restore_trained_map()
        self._check_partial_fit_params(dtype)
        widen_input_range(self, X, weights)
        Xs = self._standardized(X)
        Y = training_targets(Y, self.intercept_, self.y_scale_, dtype)
        if incremental:
            self._first_chunk_constant = warn_newly_varying_inputs(
                getattr(self, "_first_chunk_constant", None), self.x_mean_, X, weights, type(self).__name__,
                stacklevel=6)  # (the caller of partial_fit, through _fit_further)
            train_epochs(self, self._runner(), Xs, Y, weights, None, None, None, self._rng,
                         max_epochs=1, monitor=False)
            self.refit_alpha_ = None  # B has moved on from any closing fit
            self._defer_summaries(Xs, Y, weights)  # over this call's rows, computed when read
            return self
        # fit(warm_start=True): max_iter more epochs, a new validation split from the
        # estimator's generator, the schedule restarting at learning_rate.
        use_validation = self.early_stopping
        X_tr, Y_tr, w_tr, X_va, Y_va, w_va = self._split(self._rng, Xs, Y, y, weights, use_validation)
        self.learning_rate_ = float(self.learning_rate)
        train_epochs(self, self._runner(), X_tr, Y_tr, w_tr, X_va, Y_va, w_va, self._rng,
                     max_epochs=self.max_iter, monitor=True)
        self._after_training(X_tr, Y_tr, w_tr, X_va, Y_va, w_va)
        self._store_derivative_norms(Xs, weights)
        return self

    def _draw_map(self, d, n_frequencies, rng, dtype):
        """``(W, b)`` for unit relevances: the kernel's frequencies (``sampling``) and the phases."""
        check_sampling(self.kernel, self.sampling)
        return draw_map(self.kernel, d, n_frequencies, 1.0, rng, dtype, nu=self.nu, sampling=self.sampling)

    def _fit_first(self, X, y, Y, weights, dtype, incremental):
        """fit, or partial_fit's first call: new draws, statistics and training."""
        # The draws come in a fixed order (W, b, B, [validation split], [restarts], one permutation
        # per pass) so that partial_fit's first call reproduces fit(max_iter=1, early_stopping=False).
        rng = as_generator(self.random_state)
        d = X.shape[1]
        self._trained_map = None
        self.weights_, self.offsets_ = self._draw_map(d, self.n_components, rng, dtype)
        bound = 1.0 / np.sqrt(self.n_components)  # torch.nn.Linear's default, as in the reference code
        coef = rng.uniform(-bound, bound, (self.n_components, Y.shape[1])).astype(dtype)
        self.scale_ = self._scale_value()

        use_validation = self.early_stopping and not incremental
        X_train, Y_train, w_train, X_val, Y_val, w_val = self._split(rng, X, Y, y, weights, use_validation)

        # Standardization and centring statistics come from the training part only (weighted by
        # sample_weight: a row of weight 0 does not count, a row of weight k counts k times).
        X64 = np.asarray(X_train, dtype=np.float64)
        if self.standardize:
            # "auto": the probe ridge's choice (a seed from a copy of rng: the draws below are those
            # of any other standardize)
            log = ProgressLog(self, self.verbose)
            self.standardize_, self.standardize_errors_ = resolve_standardization(
                self.standardize, X64, Y_train, w_train, rng, self.n_jobs, self.robust_inputs)
            if self.standardize == "auto":
                log.step("standardize", 1, 1, f"{self.standardize_!r} (probe ridge)")
        else:
            self.standardize_, self.standardize_errors_ = False, None
        constant = constant_columns(X64, w_train) if self.standardize else np.zeros(d, dtype=bool)
        self._set_input_scaling(X64, w_train)
        if X_val is not None:  # (clipped to the range of every row given, the validation rows' too)
            widen_input_range(self, X_val, w_val)
        self._first_chunk_constant = constant if incremental else None  # (fit: the constant inputs are left out)
        self.relevances_ = np.ones(d, dtype)  # _standardized reads its dtype
        Xs_train = self._standardized(X_train)
        Xs_val = None if X_val is None else self._standardized(X_val)
        intercept, y_scale = self._target_statistics(Y_train, w_train)
        self.intercept_, self.y_scale_ = intercept, y_scale  # float64: y in the caller's units
        if not isinstance(self.init, str):
            check_initial_relevances(self.init, d)
        Y_train = training_targets(Y_train, self.intercept_, self.y_scale_, dtype)
        Y_val = None if Y_val is None else training_targets(Y_val, self.intercept_, self.y_scale_, dtype)

        def start(generator, coef, theta=None):
            """Initial relevances (``theta`` where given), fresh optimiser moments and curves."""
            self._state = TrainingState(coef.shape, d, dtype, self._palm)
            runner = self._runner()
            if theta is None:
                self.relevances_, self.coef_ = initial_relevances(
                    self.init, runner, Xs_train, Y_train, coef, self._state, generator,
                    n_restarts=self.n_restarts, restart_iter=self.restart_iter,
                    learning_rate=self.learning_rate, sample_weight=w_train)
            else:
                self.relevances_, self.coef_ = theta.copy(), coef
            zero_constant_relevances(self.relevances_, constant)
            self.loss_curve_ = []
            self.validation_loss_curve_ = []
            self.validation_scores_ = []
            self.n_iter_ = 0
            self.learning_rate_ = float(self.learning_rate)
            self.best_epoch_ = None
            self.t_ = 0
            return runner

        runner = start(rng, coef)
        data = (Xs_train, Y_train, w_train, Xs_val, Y_val, w_val)
        n_starts = 1 if incremental else self._n_starts(d, Xs_val is not None)
        schedule = None
        self.start_losses_ = None
        if n_starts > 1:
            runner, rng, schedule = self._best_start(n_starts, start, runner, rng, data)
        self._rng = rng
        train_epochs(self, runner, Xs_train, Y_train, w_train, Xs_val, Y_val, w_val, rng,
                     max_epochs=1 if incremental else self.max_iter - self.n_iter_, monitor=not incremental,
                     schedule=schedule)
        if not incremental:
            self._after_training(Xs_train, Y_train, w_train, Xs_val, Y_val, w_val)
        else:
            self.refit_alpha_ = None  # partial_fit keeps B as trained
        # over every row given (training and validation), with the fitted map and weights
        if incremental:  # partial_fit's first call: computed when read
            self._defer_summaries(self._standardized(X), Y, weights)
        else:
            self._store_derivative_norms(self._standardized(X), weights)
        return self

    def _n_starts(self, n_features, validation):
        """The starts ``n_init`` asks for ("auto": ``N_INIT_AUTO`` with the l1 relevance penalty, a
        validation split and at least ``N_INIT_MIN_FEATURES`` inputs, else 1)."""
        if self.n_init != "auto":
            return int(self.n_init)
        sparse_high_dim = self.relevance_penalty > 0 and n_features >= N_INIT_MIN_FEATURES
        return N_INIT_AUTO if sparse_high_dim and validation else 1

    def _best_start(self, n_starts, start, runner, rng, data):
        """Train ``n_starts`` starts for ``START_EPOCHS`` epochs each, the ``N_INIT_FINALISTS`` of
        least monitored loss (validation, else training) as many more, and keep the better of
        those: the first start is the map already drawn, the others
        draw their own (W, b, B) from generators seeded by ``rng``. Leaves the winner's map,
        parameters, moments and curves on the estimator; returns its runner, generator and
        :class:`Schedule`, to continue from. ``start_losses_`` records each start's loss."""
        d, s, dtype = self.relevances_.shape[0], self.n_components, self.relevances_.dtype
        seeds = rng.integers(np.iinfo(np.int64).max, size=n_starts - 1)
        restarter = isinstance(self.init, str) and self.init == "restarter"
        theta0 = None if restarter else self.relevances_.copy()  # the others start there too
        epochs = min(START_EPOCHS, self.max_iter)
        log = ProgressLog(self, self.verbose)
        names = ("weights_", "offsets_", "relevances_", "coef_", "_state", "loss_curve_",
                 "validation_loss_curve_", "validation_scores_", "n_iter_", "t_", "best_epoch_",
                 "learning_rate_")
        Xs, Y, w, Xs_val, Y_val, w_val = data
        kind = "validation" if Xs_val is not None else "training"
        # per start: its estimator attributes, runner, generator and schedule
        starts: list[tuple[dict[str, Any], Any, np.random.Generator, Schedule]] = []

        def train(k, count):
            nonlocal runner
            if k == len(starts):  # a new start: the first one's map is the one already drawn
                generator, schedule = rng, None
                if k:
                    generator = np.random.default_rng(seeds[k - 1])
                    self.weights_, self.offsets_ = self._draw_map(d, s, generator, dtype)
                    bound = 1.0 / np.sqrt(s)
                    coef = generator.uniform(-bound, bound, self.coef_.shape).astype(dtype)
                    runner = start(generator, coef, theta0)
            else:
                attrs, runner, generator, schedule = starts[k]
                for name, value in attrs.items():
                    setattr(self, name, value)
            schedule = train_epochs(self, runner, Xs, Y, w, Xs_val, Y_val, w_val, generator, max_epochs=count,
                                    monitor=True, schedule=schedule, finish=False)
            entry = ({name: getattr(self, name) for name in names}, runner, generator, schedule)
            if k == len(starts):
                starts.append(entry)
                log.event(f"start {k + 1}/{n_starts}: least {kind} loss {schedule.least_loss():.6g} in {count} epochs")
            else:
                starts[k] = entry
                log.event(f"start {k + 1}: least {kind} loss {schedule.least_loss():.6g} after {self.n_iter_} epochs")
            return schedule.least_loss()

        # a second round: the best N_INIT_FINALISTS starts train START_EPOCHS more epochs (a start
        # that has found some relevant inputs may still find the others), the best goes on
        self.start_losses_, k = best_of_starts(n_starts, train, epochs, min(START_EPOCHS, self.max_iter - epochs),
                                               N_INIT_FINALISTS)
        # the dropped starts' epochs (not in n_iter_: the demo's throughput counts them)
        self._epochs_in_dropped_starts = sum(entry[0]["n_iter_"] for i, entry in enumerate(starts) if i != k)
        attrs, runner, generator, schedule = starts[k]
        for name, value in attrs.items():
            setattr(self, name, value)
        log.event(f"continuing from start {k + 1}")
        return runner, generator, schedule

    def _restore_trained_map(self):
        """Put back the trained (W, b, B, intercept) that a closing fit replaced: training continues
        from them."""
        trained = getattr(self, "_trained_map", None)
        if trained is not None:
            self.weights_, self.offsets_, self.coef_, self.intercept_, self.relevances_ = trained
            self._trained_map = None
            self.refit_alpha_ = None

    def _closing_map(self, n_rows):
        """The feature map of the closing fit: the trained frequencies, plus new draws of the same
        kernel up to ``refit_components`` (at most ``CLOSING_COMPONENTS_PER_ROW * n_rows``).

        Returns ``(weights, offsets)`` in float64; the trained (W, b, B, intercept, theta) are kept
        for :meth:`_restore_trained_map` (a ``warm_start`` fit or ``partial_fit`` continues training
        from them).
        """
        self._trained_map = (self.weights_, self.offsets_, self.coef_, self.intercept_, self.relevances_)
        W = self.weights_.astype(np.float64)
        b = self.offsets_.astype(np.float64)
        if self.refit_components is None:
            return W, b
        # the estimator's stream (later splits and epochs) stays as it was
        return widen_map(self.kernel, W, b, min(self.refit_components, CLOSING_COMPONENTS_PER_ROW * n_rows),
                         self._rng, self.nu)

    def _after_training(self, Xs_train, Y_train, w_train, Xs_val, Y_val, w_val):
        """A hook run after the epochs of ``fit`` (not ``partial_fit``): the closing fit of B
        (``refit_coef``)."""

    def _trained_features(self, Xs, out=None):
        """``z(theta * x)`` of standardized rows with the fitted map, in float64 (n, s); into
        ``out`` (C-contiguous float64) when given."""
        X64 = Xs.astype(np.float64)
        return kernels.features(X64, self.weights_.astype(np.float64),
                                self.offsets_.astype(np.float64), theta=self.relevances_.astype(np.float64),
                                scale=float(self.scale_), out=out, n_threads=resolve_n_threads(self.n_jobs),
                                rows=kernels.centered_rows(X64) if X64.shape[0] else None)

    def _split(self, rng, X, Y, y, weights, use_validation):
        """(X_train, Y_train, w_train, X_val, Y_val, w_val): the early-stopping split, or all rows
        for training (validation parts None) without it. Weights follow their rows (None stays None)."""
        n = X.shape[0]
        if not use_validation:
            return X, Y, weights, None, None, None
        n_val = int(np.ceil(self.validation_fraction * n))
        if n - n_val < 2:
            raise ValueError(
                f"n_samples={n} is too small for validation_fraction={self.validation_fraction}: "
                f"{n_val} validation sample(s) would leave {n - n_val} for training (at least 2 "
                "needed); pass more samples or early_stopping=False")
        val_idx, train_idx = self._validation_split(rng, n, n_val, y)
        w_train = w_val = None
        if weights is not None:
            w_train, w_val = weights[train_idx], weights[val_idx]
            for part, w in (("training", w_train), ("validation", w_val)):
                if not w.sum() > 0:
                    raise ValueError(
                        f"sample_weight is zero on every row of the {part} split "
                        f"(validation_fraction={self.validation_fraction}); give positive weight to "
                        "more rows or use early_stopping=False")
        return X[train_idx], Y[train_idx], w_train, X[val_idx], Y[val_idx], w_val

    def _target_statistics(self, Y_train, sample_weight=None):
        """(intercept, scale) per output: the model is trained on (Y - intercept) / scale."""
        return np.zeros(Y_train.shape[1]), np.ones(Y_train.shape[1])

    def _validation_split(self, rng, n, n_val, y):
        """(validation, training) row indices, sorted: the first n_val rows of a permutation."""
        perm = rng.permutation(n)
        return np.sort(perm[:n_val]), np.sort(perm[n_val:])

    def _check_partial_fit_params(self, dtype):
        if self.relevances_.dtype != dtype:
            raise ValueError(f"dtype changed between partial_fit calls ({self.relevances_.dtype} -> {dtype})")
        if self.coef_.shape[0] != self.n_components:
            raise ValueError("n_components changed since the first partial_fit call")
        palm = self._state.theta_block is not None
        if palm != self._palm:
            raise ValueError("solver changed between a PALM and a joint solver since the first fit call")

    def _set_input_scaling(self, X, sample_weight):
        """The input treatment of the resolved ``standardize_`` from the training rows X (float64:
        see ``standardized_rows``; a constant input's own value as its mean and scale 1: it is 0
        on every training row; any input that varies keeps its deviation, however small)."""
        _, sd, constant = mean_scale_constant(X, sample_weight)
        self._use_input_scaling(fit_input_scaling(X, sample_weight, self.standardize_, self.robust_inputs,
                                                  ignore_constant=False), sd, constant)

    def _use_input_scaling(self, scaling, sd, constant):
        """Store ``scaling`` (:class:`rffkern._inputs.InputScaling`), and the factor from the pooled
        units to each input's own deviation ``sd`` (0 for the ``constant`` inputs) for
        :meth:`_relevance_magnitudes` (None but with "global")."""
        set_input_scaling(self, scaling)
        self._deviation_ratio = None
        if self.standardize_ == "global":
            self._deviation_ratio = np.where(constant, 0.0, sd / scaling.scale)

    def _relevance_magnitudes(self):
        """``|relevances_|`` per unit of each input's own deviation: as fitted with
        ``standardize_`` True (or False: raw units); with "global" times each input's deviation
        over the pooled one, so that an input that rarely varies (a border pixel) does not rank
        by its relevance per pooled unit alone, and the ranking does not depend on the choice."""
        r = np.abs(self.relevances_.astype(np.float64))
        ratio = getattr(self, "_deviation_ratio", None)
        return r if ratio is None else r * ratio

    # ------------------------------------------------------------------ public API
    def _store_summaries(self, Xs, Y, sample_weight=None):
        self._store_derivative_norms(Xs, sample_weight)

    def _store_derivative_norms(self, Xs, sample_weight=None):
        """``feature_importances_`` before scaling: the root mean square of the partial derivatives
        of the fitted outputs (summed over outputs: the logits for the classifier) over standardized
        rows ``Xs`` (at most ``IMPORTANCE_ROWS`` of them, drawn by a fixed generator; weighted by
        ``sample_weight``), per unit of each input's own deviation. ``rffkern.fit`` trains its
        variants under ``FitOptions(summaries=False)`` and computes them for the model it returns
        (on mnist_test10k, 10 classes and 784 inputs, each computation costs ~0.6 s)."""
        self.__dict__.pop("_summary_rows", None)  # (rows a partial_fit kept: superseded)
        if not self._fit_options.summaries:
            self._derivative_norms = None
            return
        rows, row_w = importance_rows(Xs, sample_weight)
        norms = rms_partial_derivatives(rows, self.weights_, self.offsets_, self.coef_, scale=self.scale_,
                                        theta=self.relevances_, row_weights=row_w,
                                        n_threads=resolve_n_threads(self.n_jobs))
        ratio = getattr(self, "_deviation_ratio", None)
        self._derivative_norms = norms if ratio is None else norms * ratio

    @property
    def feature_importances_(self) -> NDArray[np.float64]:
        """Relevance of each feature: the RMS of the fitted function's slope along it, in [0, 1].

        ``sqrt(mean_i (df/dx_ij)^2)`` over the rows of the last ``fit`` / ``partial_fit`` call (at
        most 2000 of them, drawn at random; weighted by ``sample_weight``), summed over outputs (the
        classifier's logits), per unit of each input's own deviation: the empirical norm of the
        partial derivatives, as ``RFFRidge.feature_importances_``. It is 0 where f does not
        depend on an input, whatever its relevance: ``relevances_`` are the inverse length scales
        the paper ranks (and :func:`rffkern.topk_selection` still does), and an input the function
        ignores can keep a large one (y = sin(x0) among 3 inputs, 300 rows: ``|relevances_|`` scaled
        [0.96, 1, 0.95], these [1, 0.06, 0.04]; measurements in ``rffkern/_importances.py``). All
        zeros when every relevance is zero.

        Examples
        --------
        >>> from rffkern import RFFNetRegressor
        >>> from rffkern.datasets import make_jse3
        >>> X, y, support = make_jse3(100, random_state=0)
        >>> model = RFFNetRegressor(n_components=20, max_iter=2, random_state=0).fit(X, y)
        >>> float(model.feature_importances_.max())
        1.0
        """
        check_is_fitted(self, "relevances_")
        self._resolve_summaries()
        if "_derivative_norms" not in self.__dict__:  # pickled by an earlier rffkern: what it reported, |theta|
            norms = self._relevance_magnitudes()
        else:
            norms = self._derivative_norms
        if norms is None:
            raise AttributeError("feature_importances_ was not computed for this fit")
        top = norms.max() if norms.size else 0.0
        return norms / top if top > 0 else norms

    def _decision_outputs(self, X, theta=None):
        check_is_fitted(self, "relevances_")
        # The fitted dtype, not self.dtype: set_params after fit must not change the arithmetic.
        X = validate_data(self, X, dtype=_INPUT_DTYPES, ensure_all_finite=True, reset=False,
                          order="C")
        return self._raw_outputs(self._standardized(X), theta).astype(np.float64)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.required = True
        return tags


class RFFNetRegressor(PosteriorRegressorMixin, RegressorMixin, _BaseRFFNet):
    """RFFNet regression: ARD random-Fourier-feature network with squared loss.

    Fits ``f(x) = c * cos(((x - mean) / sd * theta) @ W + b) @ B + intercept`` by proximal
    mini-batch Adam (or SGD, or their block-alternating PALM variants) on the squared loss
    ``(1/2n) sum ||y_i - f(x_i)||^2 + alpha ||B||^2 + relevance_penalty ||theta||_1``, with early
    stopping and checkpointing on a validation split. The paper's algorithm (unpenalised theta,
    Adam, constant initial relevances) is ``solver="adam", init="constant", learning_rate=1e-3,
    relevance_penalty=0``; the defaults differ for high-dimensional inputs (see
    ``relevance_penalty``). ``relevances_`` (theta) ranks the features.

    Parameters
    ----------
    n_components : int, default=300
        Number of random features ``s``.
    alpha : float, default=1e-4
        Penalty ``lambda`` on ``||B||^2``, applied as a proximal step after each update.
    kernel : {"gaussian", "laplace", "cauchy", "matern"}, default="gaussian"
        Spectral density the frequencies ``W`` are drawn from (for unit relevances); see
        :class:`rffkern.RandomFourierFeatures`. The relevances act on the inputs, so "matern" is
        the Matérn kernel with one length scale per input (ARD), as "gaussian" is the Gaussian's.
    nu : float, default=1.5
        The Matérn kernel's smoothness (``kernel="matern"`` only; > 0).
    sampling : {"random", "qmc", "orthogonal"}, default="random"
        How ``W`` is drawn (:class:`rffkern.RandomFourierFeatures`); the closing fit's extra
        frequencies (``refit_components``) are drawn at random.
    init : {"median", "constant", "regressor", "restarter"} or array-like of shape (n_features,), default="median"
        Initial relevances: an array of them (e.g. ``1 / length_scale`` of a tuned isotropic kernel,
        as :func:`rffkern.fit` does); "median": ``3 / l`` for every feature, ``l`` the median
        distance between (standardized) training rows, so that the initial kernel argument
        ``theta * (x - x')`` has about the same spread whatever d; "constant" (the paper's
        default): ``(max - min) / d`` per feature of the (standardized) training data, which
        shrinks like 1/d where ``3 / l`` shrinks like 1/sqrt(d): in high dimension it starts from
        an almost flat kernel, on which even functions and interactions of a feature give its
        relevance a gradient of second order only; "regressor": Lasso coefficients (LassoCV, 3
        folds); "restarter": the best of ``n_restarts`` draws ``N(constant, I/d)`` each trained
        ``restart_iter`` epochs (training continues from the winner).
    n_restarts : int, default=10
        Number of random initial relevances tried by ``init="restarter"``.
    restart_iter : int, default=10
        Epochs per restart of ``init="restarter"``.
    n_init : int or "auto", default="auto"
        Starts of the training (not in the paper): each draws its own frequencies, phases and
        output weights, starts from the same ``init`` and trains ``START_EPOCHS`` (5) epochs; the
        two of least validation loss (training loss without early stopping) train 5 more, their
        early stopping and schedule going on, and the one of least loss over all its epochs goes on
        training (from its state: its best epoch may be one of the first 5); the others are dropped
        (``start_losses_``). "auto": 5 starts where ``relevance_penalty > 0``,
        early stopping is on and there are at least 100 inputs, else 1. The l1 penalty holds a
        relevance at 0 unless its gradient beats it, and the gradient of an input that acts through
        an even function or an interaction vanishes as its relevance goes to 0: among many noise
        inputs an unlucky start loses such an input in its first epochs and never finds it again.
        Five starts cost about 1.25 times the fit time and find such inputs where one start can
        miss them (:doc:`/user_guide/rffnet`).
    solver : {"shared-adam", "adam", "palm-adam", "sgd", "palm-sgd"}, default="shared-adam"
        Joint steps on (B, theta), or, for ``palm-*``, every epoch is a pass of steps on B followed
        by a pass on theta (each with its own Adam moments). "adam" is the paper's solver.
        "shared-adam" (not in the paper) steps on B as Adam does but gives theta one Adam
        second-moment estimate for the whole block (the running mean of ``mean_j g_j^2``): the
        step of ``theta_j`` is proportional to ``g_j / RMS_j(g_j)``, so relevances whose gradients
        are small beside the others' move little, where Adam moves every ``theta_j`` by about
        ``learning_rate`` per step whatever its gradient and the relevances of irrelevant features
        drift (which in high dimension adds up to a rough kernel). Together with
        ``relevance_penalty`` it holds them at 0.
    learning_rate : float, default=3e-3
        Initial step size of Adam/SGD (the prox on B uses the current step size), at most
        :data:`rffkern.kernels.MAX_LEARNING_RATE`. The authors' code uses 1e-3 (with
        ``solver="adam"``).
    learning_rate_schedule : {"adaptive", "constant"}, default="adaptive"
        "constant" keeps ``learning_rate`` and, with early stopping, stops at the first plateau of
        ``n_iter_no_change`` epochs without improvement (the paper's Algorithm 1). "adaptive"
        (the paper is silent on schedules) instead divides the step size by 5 at each such
        plateau, at most 3 times, and stops at the next one (or after ``max_iter`` epochs). The
        plateau is measured on the validation loss, or on the training loss without early
        stopping (then the training never stops early). Smaller late steps let the noisy
        mini-batch iterates settle, which lowers the validation error on the paper's jse3 and
        gse1 problems.
    batch_size : int, default=32
        Rows per mini-batch.
    max_iter : int, default=100
        Maximum number of epochs.
    early_stopping : bool, default=True
        Hold out ``validation_fraction`` of the data and stop after ``n_iter_no_change`` epochs
        without a validation-loss decrease larger than ``tol`` (after the last learning-rate
        decrease of the "adaptive" schedule). With False, all data is used for training and all
        ``max_iter`` epochs run.
    validation_fraction : float, default=0.1
        Share of the rows held out for early stopping.
    n_iter_no_change : int, default=10
        Epochs without improvement that make a plateau (see ``learning_rate_schedule``).
    tol : float, default=0.0
        Minimum decrease counted as an improvement (0: any strict decrease, as in the paper).
    checkpoint : bool, default=True
        Restore the (B, theta) of the best epoch (by validation loss, or training loss without
        early stopping) at the end.
    standardize : {"auto", True, "global", "quantile", False}, default="auto"
        Centre X and scale each input by its own training deviation (True), or every input by one
        pooled deviation, the root mean square of the inputs' deviations ("global": inputs in
        one unit, such as pixels, keep their relative spread, and the relevances compare in that
        unit), or neither (False). "auto" keeps the one that
        ``RFFRidge(PROBE_COMPONENTS, standardize="auto")`` keeps on at most ``PROBE_ROWS`` training
        rows (:func:`rffkern.ridge.choose_standardization`; True where the inputs share one
        deviation, as the RFFNet paper's simulations, whose fits are then those of True).
        "global" suits pixels (:doc:`/design_notes`). On Dask arrays the probe
        runs on the training rows among at most ``PROBE_ROWS`` rows drawn from X. "quantile": each heavy-tailed input (not two-valued, a
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
    feature_scale : float or "rff", default=1.0
        The constant ``c``: 1.0 as in the authors' code (the defaults of ``alpha`` and
        ``learning_rate`` were tuned for it), or "rff" for ``sqrt(2 / n_components)``.
    dtype : {"float32", "float64"}, default="float32"
        Precision of the training (float32, as in the reference code, is about twice as fast).
    random_state : int, Generator, RandomState or None, default=None
        Controls W, b, the initial B, the validation split and the shuffling.
    n_jobs : int or None, default=None
        Threads of the compiled kernels (None: OpenMP's current limit). The core itself runs a
        mini-batch on fewer threads when it holds too little work to pay for the per-batch
        barriers (batches of 32 run on one thread). The fitted model is bitwise identical for any
        value.
    verbose : int, default=0
        Print one line per epoch with the training and validation loss (the
        :class:`rffkern._progress.ProgressLog` format), and the schedule's events.
    warm_start : bool, default=False
        When True and the estimator is already fitted, :meth:`fit` continues from the fitted
        model instead of starting anew: the same frequencies ``W``, phases ``b``, standardization
        and target statistics, relevances, coefficients and Adam moments; it runs up to
        ``max_iter`` more epochs (a new validation split drawn from the estimator's generator,
        the learning-rate schedule restarting at ``learning_rate``) and appends to the curves;
        ``n_iter_`` and ``best_epoch_`` count epochs over the model's life. Parameters that define
        the fitted model (``n_components``, ``dtype``, PALM or joint ``solver``) must not change;
        ``kernel``, ``init``, ``standardize``, ``fit_intercept``, ``normalize_y`` and
        ``feature_scale`` keep their fitted effect. The data must have the same features (and,
        for the classifier, only known classes).
    relevance_penalty : float, default=0.1
        ``mu``: an l1 penalty ``mu * ||theta||_1`` on the relevances, applied like the penalty on
        B as a proximal step after each update (soft-thresholding by ``learning_rate * mu``); 0,
        the paper's objective, leaves theta unpenalised. With the Adam solvers, whose steps are
        normalised, ``mu`` is a threshold in units of the normalised step: with "shared-adam" a
        relevance stays at 0 unless its averaged gradient exceeds about ``mu`` times the root mean
        square of the relevance gradients; with "adam" unless its gradient keeps its sign
        consistently enough across mini-batches. With SGD the threshold is in gradient units.

        The defaults ``solver="shared-adam", init="median", learning_rate=3e-3,
        relevance_penalty=0.1`` depart from the paper's (``"adam"``, ``"constant"``, 1e-3, 0),
        which the options keep: the defaults find the relevant features of ``make_hd5`` where the
        paper's settings miss most of them, and lower the error on the paper's problems
        (:doc:`/user_guide/rffnet`).
    fit_intercept : bool, default=True
        Centre y by its training mean (stored in ``intercept_``). The kernels have no output bias;
        False reproduces the paper exactly.
    normalize_y : bool, default=True
        Train on targets divided by their training standard deviation (per output, stored in
        ``y_scale_``; the root mean square without ``fit_intercept``), so that ``alpha``,
        ``learning_rate`` and the stopping rule mean the same for y in any unit; predictions are in
        y's units. False trains on y as given (the paper), where targets of large magnitude make
        the default step sizes far too small.
    refit_coef : bool, default=True
        After the epochs of :meth:`fit`, refit the output weights B and the intercept by ridge
        regression on the trained features ``z(theta * x)`` of every row (training and validation
        parts), with the penalty chosen by exact leave-one-out among ``REFIT_ALPHAS`` (1e-8 to 1e4,
        targets scaled): for fixed relevances the squared loss is a ridge problem solved exactly,
        and its penalty then comes from the data (the paper's lambda is fixed). One Gram pass of
        s features, in float64: on most regression sets of the benchmarks it lowers the test
        error, at 20-40% more fit time (:doc:`/design_notes`). False
        keeps B as trained (the paper); ``partial_fit`` never refits; a fit on Dask arrays runs
        the closing ridge with distributed passes; a ``warm_start`` fit or ``partial_fit``
        continues training from the trained W, b, B, intercept and relevances (the closing ridge is
        run again at the end of a ``warm_start`` fit). Before the closing ridge the learned
        kernel's overall width is checked: the relevances as trained and divided by 2 and by 4
        (``CLOSING_WIDTH_FACTORS``), each scored by exact leave-one-out on at most 2000 rows with
        the trained features, and the factor nearest 1 within one standard error of the least kept
        (``closing_width_factor_``): training starts narrow and may stop early on few rows before
        the kernel has widened (:doc:`/user_guide/rffnet`).
    refit_components : int or None, default=1000
        Features of the closing ridge (``refit_coef``): the ``n_components`` trained ones plus new
        draws of the same kernel at the learned relevances, up to this many (at most two per
        training row); None or at most ``n_components``: the trained features only. The relevances
        are learned with ``n_components`` features, whose cost is paid every epoch; the closing
        ridge's features are paid once (one Gram pass), so the model gets the capacity of a
        1000-feature kernel machine with the learned ARD kernel at a fraction of the cost of
        training with 1000 features (3.5x the training time on kin40k: :doc:`/user_guide/rffnet`).

    Attributes
    ----------
    relevances_ : ndarray of shape (n_features_in_,)
        theta, the ARD relevances (sign irrelevant). An input constant on the training rows has
        relevance 0 (with ``standardize=True``): nothing can be learned about it, and a value it
        takes only in later rows does not move the predictions.
    feature_importances_ : ndarray of shape (n_features_in_,)
        The root mean square of ``df/dx_j`` over the training rows (at most 2000), per unit of
        each input's own deviation, scaled to [0, 1] (``relevances_``, not this, is the paper's
        ranking).
    coef_ : ndarray of shape (n_map, n_outputs)
        B. ``n_map`` is ``n_components``, or the closing ridge's feature count
        (``refit_components``, at most two per row) when that is larger.
    weights_ : ndarray of shape (n_features_in_, n_map)
        W, the fixed frequencies (the trained ones first).
    offsets_ : ndarray of shape (n_map,)
        b, the fixed phases.
    intercept_ : ndarray of shape (n_outputs,)
        The training mean of y (zeros with ``fit_intercept=False``), or the closing ridge's.
    y_scale_ : ndarray of shape (n_outputs,)
        The target scale the model was trained in (ones with ``normalize_y=False``).
    standardize_ : {True, "global", False}
        The standardization used.
    standardize_errors_ : dict or None
        ``standardize="auto"``: the probe ridge's ``standardize_errors_`` (None where the two
        standardizations are one, or with another ``standardize``).
    x_mean_, x_scale_ : ndarray of shape (n_features_in_,)
        Standardization statistics (zeros and ones with ``standardize=False``), in float64 whatever
        ``dtype``: X is standardized in float64 before its cast to the training dtype, so an input
        with a large offset (a time stamp, 1e12 + x) keeps its variation.
    x_min_, x_max_ : ndarray of shape (n_features_in_,) or None
        The training range each input is clipped to at predict (None with ``robust_inputs=False``).
    input_quantiles_ : sklearn.preprocessing.QuantileTransformer or None
        With ``standardize_="quantile"``: the normal scores of the heavy-tailed inputs
        ``quantile_columns_`` (None otherwise).
    scale_ : float
        c.
    n_iter_ : int
        Epochs run (including later ``partial_fit`` calls).
    learning_rate_ : float
        The step size at the end of ``fit`` (``learning_rate`` divided by the adaptive schedule's
        decreases). ``partial_fit`` always steps with ``learning_rate``.
    loss_curve_ : list of float
        Mean mini-batch training loss per epoch (``1/2 ||y - f||^2`` per sample, without penalty).
    validation_loss_curve_ : list of float
        Validation loss per epoch (same units), when early stopping is on.
    validation_scores_ : list of float
        Validation R^2 per epoch, when early stopping is on.
    refit_alpha_ : float or None
        The penalty of the closing ridge (``refit_coef``); None without it, and after
        :meth:`partial_fit` (which trains B on).
    closing_width_factor_ : float or None
        The closing check's factor (1, 2 or 4, ``refit_coef``): ``relevances_`` are the trained ones
        divided by it (the kernel that many times as wide). None without the closing ridge, and
        after :meth:`partial_fit`.
    best_epoch_ : int or None
        1-based epoch whose parameters were kept (None after ``partial_fit`` only).
    start_losses_ : ndarray of shape (n_starts,) or None
        With more than one start (``n_init``): each start's least validation loss (training loss
        without early stopping) in its first ``START_EPOCHS`` epochs; the two least trained as
        many more and the better went on (its epochs are counted in ``n_iter_`` and the curves,
        the others' are not). None with one start.
    n_features_in_ : int
        Number of features seen during fit.

    Examples
    --------
    >>> import numpy as np
    >>> from rffkern import RFFNetRegressor
    >>> from rffkern.datasets import make_jse3
    >>> X, y, support = make_jse3(300, random_state=0)  # y depends on columns 0 and 1
    >>> model = RFFNetRegressor(n_components=50, learning_rate=0.01, max_iter=30, random_state=0)
    >>> model = model.fit(X, y)
    >>> sorted(np.argsort(-model.feature_importances_)[:2].tolist())
    [0, 1]
    >>> bool(model.score(X, y) > 0.9)
    True
    """

    _loss_kind = "regression"
    _parameter_constraints = {**_BaseRFFNet._parameter_constraints, "fit_intercept": ["boolean"],
                              "normalize_y": ["boolean"]}

    def __init__(self, n_components: int = 300, *, alpha: float = 1e-4, kernel: str = "gaussian",
                 nu: float = DEFAULT_NU, sampling: str = "random", init: str | ArrayLike = "median", n_restarts: int = 10, restart_iter: int = 10,
                 n_init: int | str = "auto",
                 solver: str = "shared-adam", learning_rate: float = 3e-3, learning_rate_schedule: str = "adaptive",
                 batch_size: int = 32, max_iter: int = 100, early_stopping: bool = True,
                 validation_fraction: float = 0.1, n_iter_no_change: int = 10, tol: float = 0.0,
                 checkpoint: bool = True, standardize: bool | str = "auto", robust_inputs: bool = True, feature_scale: float | str = 1.0,
                 dtype: str = "float32", random_state: RandomStateLike = None, n_jobs: int | None = None,
                 verbose: int = 0, warm_start: bool = False, relevance_penalty: float = 0.1,
                 fit_intercept: bool = True, normalize_y: bool = True, refit_coef: bool = True,
                 refit_components: int | None = 1000) -> None:
        super().__init__(
            n_components, alpha=alpha, kernel=kernel, nu=nu, sampling=sampling, init=init, n_restarts=n_restarts,
            restart_iter=restart_iter, n_init=n_init, solver=solver, learning_rate=learning_rate,
            learning_rate_schedule=learning_rate_schedule, batch_size=batch_size, max_iter=max_iter,
            early_stopping=early_stopping,
            validation_fraction=validation_fraction, n_iter_no_change=n_iter_no_change, tol=tol,
            checkpoint=checkpoint, standardize=standardize, robust_inputs=robust_inputs, feature_scale=feature_scale, dtype=dtype,
            random_state=random_state, n_jobs=n_jobs, verbose=verbose, warm_start=warm_start,
            relevance_penalty=relevance_penalty, refit_coef=refit_coef, refit_components=refit_components)
        self.fit_intercept = fit_intercept
        self.normalize_y = normalize_y

    def _after_training(self, Xs_train, Y_train, w_train, Xs_val, Y_val, w_val):
        """``refit_coef``: B and the intercept by ridge on the trained features of every row,
        the penalty by exact leave-one-out over ``REFIT_ALPHAS`` (in float64)."""
        self.refit_alpha_ = self.closing_width_factor_ = None
        if not self.refit_coef:
            return

        parts = [Xs_train] if Xs_val is None else [Xs_train, Xs_val]
        Xr = np.concatenate(parts).astype(np.float64) * self.relevances_.astype(np.float64)
        Yr = np.concatenate([Y_train] if Y_val is None else [Y_train, Y_val]).astype(np.float64)
        w = None
        if w_train is not None:
            w = np.concatenate([w_train] if w_val is None else [w_train, w_val]).astype(np.float64)
        W, b = self._closing_map(Xr.shape[0])
        rows = self._closing_check_rows(Xr.shape[0], w)
        factor = self._check_closing_width(Xr[rows], Yr[rows], None if w is None else w[rows])
        Xr /= factor  # (a power of two: exactly the rows times the relevances now kept)
        fmap = FourierFeatureMap(W, b, float(self.scale_), n_threads=resolve_n_threads(self.n_jobs))
        coef, intercept, alpha, _, stats = fit_ridge_map(fmap, Xr, Yr, REFIT_ALPHAS, fit_intercept=self.fit_intercept,
                                                         selection="loo", sample_weight=w)
        if self._fit_options.keep_closing_stats:  # for _closing_fit_add_rows (rffkern.fit)
            self._closing_stats = stats
        dtype = self.coef_.dtype
        self.weights_ = np.ascontiguousarray(W, dtype=dtype)
        self.offsets_ = np.ascontiguousarray(b, dtype=dtype)
        self._set_closing_solution(coef, intercept)
        self.refit_alpha_ = float(alpha)
        self._keep_posterior(stats, fmap, Xr, Yr, w)

    def _keep_posterior(self, stats, fmap, Xr, Yr, w):
        """Keep the closing ridge's statistics (the Bayesian linear model of ``predict(X,
        return_std=True)``) and ``predict_interval``'s scores from rows of the closing fit (its
        units: standardized inputs times the relevances, targets ``(y - trained intercept) /
        y_scale_``; at most ``CALIBRATION_ROWS`` of them drawn)."""
        self._posterior_stats = stats
        self.__dict__.pop("_posterior_cache", None)
        rows = calibration_rows(Xr.shape[0], w)
        Y = self._trained_intercept() + np.asarray(Yr, np.float64)[rows] * self.y_scale_
        self._store_conformity(fmap.features(np.asarray(Xr[rows], np.float64)), Y, None if w is None else w[rows])

    def _ridge_state(self):
        stats = self.__dict__.get("_posterior_stats")
        if stats is None:
            raise ValueError(f"{type(self).__name__}'s uncertainty comes from its closing ridge: fit it with "
                             "refit_coef=True (the default); partial_fit and a warm start's training drop it")
        return stats, self.refit_alpha_, self.fit_intercept, self.y_scale_

    def _ridge_solution(self):
        coef = np.asarray(self.coef_, np.float64) * np.asarray(self.y_scale_, np.float64)
        return coef, np.atleast_1d(np.asarray(self.intercept_, np.float64))

    def _features(self, X):
        """The closing ridge's features of X (as ``predict`` maps them), float64."""
        check_is_fitted(self, "relevances_")
        X = validate_data(self, X, dtype=_INPUT_DTYPES, ensure_all_finite=True, reset=False, order="C")
        return self._trained_features(self._standardized(X))

    def _decision(self, X):
        F = self._decision_outputs(X)
        return F[:, 0] if self._y_1d else F

    def _single_output(self):
        return self._y_1d

    def _restore_trained_map(self):
        if getattr(self, "_trained_map", None) is not None:  # training goes on from theta as trained
            self.closing_width_factor_ = None
            for name in ("_posterior_stats", "_posterior_cache", "_conformity"):  # (B moves on)
                self.__dict__.pop(name, None)
        super()._restore_trained_map()

    def _closing_check_rows(self, n, sample_weight=None):
        """The rows among ``n`` of the closing width check (:func:`closing_check_rows`, which leaves
        the estimator's stream as it was); the Dask fit reads them here too."""
        return closing_check_rows(n, self._rng, sample_weight)

    def _check_closing_width(self, Xr, Y, w):
        """The closing check of the learned kernel's width (:func:`closing_width_factor`) on these
        rows (standardized, times the relevances; their scaled targets): divides ``relevances_`` by
        the factor kept, stored in ``closing_width_factor_``, and returns it."""
        trained = self._trained_map
        assert trained is not None, "only after _closing_map"
        log = ProgressLog(self, self.verbose)  # (its elapsed time: the check's)
        factor, errors = closing_width_factor(Xr, Y, w, trained[0], trained[1], self.scale_,
                                              resolve_n_threads(self.n_jobs))
        self.closing_width_factor_ = factor
        if factor != 1.0:
            self.relevances_ = self.relevances_ / np.asarray(factor, self.relevances_.dtype)
        if errors is not None:
            shown = ", ".join(f"{f:g}x {e:.4g}" for f, e in zip(CLOSING_WIDTH_FACTORS, errors))
            log.event(f"closing width check (LOO mse, targets scaled: {shown}): kernel {factor:g}x as wide "
                      "as trained")
        return factor

    def _set_closing_solution(self, coef, intercept):
        """B and the intercept from the closing ridge's solution (in the trained target units)."""
        dtype = self.coef_.dtype
        self.coef_ = np.ascontiguousarray(coef, dtype=dtype)
        trained_intercept = self._trained_intercept()
        self.intercept_ = trained_intercept + np.asarray(intercept, dtype=np.float64) * self.y_scale_

    def _trained_intercept(self):
        """The intercept as trained (the closing ridge's targets are centred on it)."""
        trained = self._trained_map
        assert trained is not None, "only after _closing_map"
        return trained[3]

    def _closing_fit_add_rows(self, X, y, sample_weight=None):
        """Add rows (with their ``sample_weight``, in the caller's units: ``fit``'s weights' unit
        divides them too) to the closing ridge at its chosen penalty and solve again: the model of
        the training rows and these. For :func:`rffkern.fit`, whose held-out rows join the
        returned model this way (one Gram pass
        over them and one solve; the relevances, the map and the penalty stay). Needs
        ``FitOptions(keep_closing_stats=True)`` in ``fit``; returns self."""
        stats = self.__dict__.pop("_closing_stats", None)
        if stats is None:
            raise RuntimeError("no closing-fit statistics kept (fit under FitOptions(keep_closing_stats=True))")
        X = validate_data(self, X, dtype=_INPUT_DTYPES, ensure_all_finite=True, reset=False,
                          order="C")
        widen_input_range(self, X, sample_weight)  # (the model's rows: read as given, not clipped)
        Y = np.asarray(y, dtype=np.float64).reshape(X.shape[0], -1)
        Xr = self._standardized(X).astype(np.float64) * self.relevances_.astype(np.float64)
        Yr = (Y - self._trained_intercept()) / self.y_scale_
        fmap = FourierFeatureMap(self.weights_.astype(np.float64), self.offsets_.astype(np.float64),
                                 float(self.scale_), n_threads=resolve_n_threads(self.n_jobs))
        w = relative_sample_weight(sample_weight, X.shape[0], self._weight_unit)[0]
        stats.add(fmap, Xr, Yr, w)
        self._set_closing_solution(*solve_ridge(stats, self.refit_alpha_, self.fit_intercept))
        self._keep_posterior(stats, fmap, Xr, Yr, w)  # (these rows' scores: they are in the fit too)
        return self

    def _encode_targets(self, y, first_call, classes=None):
        y = np.asarray(y)
        if first_call:
            self._y_1d = y.ndim == 1
        elif (y.ndim == 1) != self._y_1d:
            raise ValueError("y must keep its number of dimensions between partial_fit calls")
        Y = y.reshape(-1, 1) if y.ndim == 1 else y
        if not first_call and Y.shape[1] != self.coef_.shape[1]:
            raise ValueError(f"y has {Y.shape[1]} outputs but the model was fitted with {self.coef_.shape[1]}")
        return y, Y, "squared"

    def _target_statistics(self, Y_train, sample_weight=None):
        mean, sd = mean_and_scale(np.asarray(Y_train, dtype=np.float64), sample_weight)
        intercept = mean if self.fit_intercept else np.zeros(Y_train.shape[1])
        if not self.normalize_y:
            return intercept, np.ones(Y_train.shape[1])
        if not self.fit_intercept:  # scale by the root mean square, about 0
            p2 = power_of_two_scale(Y_train, axis=0)
            sd = np.sqrt(np.average((Y_train / p2) ** 2, axis=0, weights=sample_weight))
            sd = np.where(sd > 0, sd * p2, 1.0)
        return intercept, sd

    def _score_outputs(self, F, Y, sample_weight=None):
        return _r2(Y, F, sample_weight)

    def fit(self, X: ArrayLike, y: ArrayLike, sample_weight: ArrayLike | None = None) -> RFFNetRegressor:
        """Fit the model (new W, b and initial state from ``random_state``, unless ``warm_start``).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training data.
        y : array-like of shape (n_samples,) or (n_samples, n_outputs)
            Real-valued targets.
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative weights (finite, positive sum). The training objective becomes the
            weighted mean loss ``sum_i w_i loss_i / sum_i w_i`` (plus the penalty), and the
            closing ridge is fitted on the weights divided by their mean positive weight, so only
            the weights' ratios matter and constant weights fit exactly as None does. Each epoch
            visits ``n_samples`` rows drawn with probability proportional to the weights (an
            unbiased mini-batch gradient of that objective; a row of weight 0 is never seen); the
            standardization and target statistics are weighted, and so are the validation loss
            and score that early stopping watches. Rows of integer weight ``k`` act as ``k``
            copies of the row in expectation (not bit for bit: the draws differ).

        Returns
        -------
        self
            The fitted estimator.

        Examples
        --------
        >>> from rffkern import RFFNetRegressor
        >>> from rffkern.datasets import make_jse3
        >>> X, y, support = make_jse3(100, random_state=0)
        >>> model = RFFNetRegressor(n_components=20, max_iter=5, random_state=0)
        >>> model.fit(X, y).relevances_.shape
        (10,)
        """
        return self._fit(X, y, incremental=False, sample_weight=sample_weight)

    def partial_fit(self, X: ArrayLike, y: ArrayLike, sample_weight: ArrayLike | None = None) -> RFFNetRegressor:
        """Run one pass of mini-batch steps over the chunk ``(X, y)``.

        The first call draws W, b and the initial state exactly as :meth:`fit` does with
        ``early_stopping=False`` and takes the standardization statistics and intercept from this
        first chunk (they stay fixed afterwards, so it needs at least
        ``rffkern._data.MIN_FIRST_CHUNK_ROWS`` (10) rows of positive weight, else a ``ValueError``;
        a later chunk that varies in an input constant on the first one warns, ``UserWarning``:
        that input is taken in raw units); there is no validation split or early stopping.
        So ``partial_fit(X, y)`` once equals ``fit(X, y)`` with ``max_iter=1,
        early_stopping=False``. A call after :meth:`fit` continues from the fitted state.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            A chunk of training data.
        y : array-like of shape (n_samples,) or (n_samples, n_outputs)
            Real-valued targets of the chunk.
        sample_weight : array-like of shape (n_samples,), default=None
            Weights of the chunk's rows, as in :meth:`fit`: the pass draws ``n_samples`` rows of
            the chunk with probability proportional to them (relative within the chunk); the
            first call's statistics are weighted. The weights are in units of the first call's
            (or ``fit``'s) mean positive weight.

        Returns
        -------
        self
            The fitted estimator.

        Examples
        --------
        >>> from rffkern import RFFNetRegressor
        >>> from rffkern.datasets import make_jse3
        >>> X, y, support = make_jse3(100, random_state=0)
        >>> model = RFFNetRegressor(n_components=20, max_iter=5, random_state=0)
        >>> for epoch in range(3):
        ...     model = model.partial_fit(X, y)
        >>> model.n_iter_
        3
        """
        return self._fit(X, y, incremental=True, sample_weight=sample_weight)

    @uncertainty_docstring
    def predict(self, X: ArrayLike, return_std: bool = False, return_cov: bool = False) -> Any:
        """Predict the targets, and optionally their predictive uncertainty.

        With ``return_std`` or ``return_cov``: the uncertainty of the closing ridge
        (``refit_coef``) on the learned features, the Bayesian linear model of
        :meth:`rffkern.RFFRidge.predict` (the learned map held fixed).

        {parameters}

        Examples
        --------
        >>> from rffkern import RFFNetRegressor
        >>> from rffkern.datasets import make_jse3
        >>> X, y, support = make_jse3(100, random_state=0)
        >>> model = RFFNetRegressor(n_components=20, max_iter=5, random_state=0)
        >>> model.fit(X, y).predict(X[:3]).shape
        (3,)
        """
        return self._predict_with_uncertainty(X, return_std, return_cov)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.multi_output = True
        return tags


class RFFNetClassifier(ClassifierMixin, _BaseRFFNet):
    """RFFNet classification: ARD random-Fourier-feature network with cross-entropy loss.

    Two classes use the binary logistic loss on one output ``f`` (``P(classes_[1]) =
    sigmoid(f)``); this is the same model as the reference code's 2-output softmax (whose logit
    difference is ``f``) with half the output weights. More classes use the softmax cross-entropy on
    one output per class. There is no output bias. Parameters are those of
    :class:`RFFNetRegressor` (without ``fit_intercept``); the early-stopping validation split is
    stratified by class (each class contributes its share, up to one row, and keeps at least one
    training row); ``validation_scores_`` holds the validation accuracy per epoch.

    Parameters
    ----------
    n_components : int, default=300
        Number of random features ``s``.
    alpha : float, default=1e-4
        Penalty ``lambda`` on ``||B||^2``, applied as a proximal step after each update.
    kernel, nu, sampling : object
        The kernel and how ``W`` is drawn, as in :class:`RFFNetRegressor`.
    init : {"median", "constant", "regressor", "restarter"} or array-like of shape (n_features,), default="median"
        Initial relevances, as in :class:`RFFNetRegressor` ("constant" is the paper's). For
        classes, "regressor" fits the Lasso on the 0/1 class indicators.
    n_restarts : int, default=10
        Number of random initial relevances tried by ``init="restarter"``.
    restart_iter : int, default=10
        Epochs per restart of ``init="restarter"``.
    n_init : int or "auto", default="auto"
        Starts of the training, the best two after ``START_EPOCHS`` epochs trained as many more
        and the better kept, as in :class:`RFFNetRegressor` ("auto": 5 with the l1 relevance
        penalty, early stopping and at least 100 inputs, else 1).
    solver : {"shared-adam", "adam", "palm-adam", "sgd", "palm-sgd"}, default="shared-adam"
        As in :class:`RFFNetRegressor` ("adam" is the paper's solver).
    learning_rate : float, default=3e-3
        Initial step size of Adam/SGD, as in :class:`RFFNetRegressor` (the authors' code: 1e-3).
    learning_rate_schedule : {"adaptive", "constant"}, default="adaptive"
        "constant" keeps ``learning_rate`` and, with early stopping, stops at the first plateau of
        ``n_iter_no_change`` epochs without improvement (the paper's Algorithm 1). "adaptive"
        (the paper is silent on schedules) instead divides the step size by 5 at each such
        plateau, at most 3 times, and stops at the next one (or after ``max_iter`` epochs). The
        plateau is measured on the validation loss, or on the training loss without early
        stopping (then the training never stops early). Smaller late steps let the noisy
        mini-batch iterates settle, which lowers the validation error on the paper's jse3 and
        gse1 problems.
    batch_size : int, default=32
        Rows per mini-batch.
    max_iter : int, default=100
        Maximum number of epochs.
    early_stopping : bool, default=True
        Hold out ``validation_fraction`` of the data and stop after ``n_iter_no_change`` epochs
        without a validation-loss decrease larger than ``tol`` (after the last learning-rate
        decrease of the "adaptive" schedule). With False, all data is used for training and all
        ``max_iter`` epochs run.
    validation_fraction : float, default=0.1
        Share of the rows held out for early stopping.
    n_iter_no_change : int, default=10
        Epochs without improvement that make a plateau (see ``learning_rate_schedule``).
    tol : float, default=0.0
        Minimum decrease counted as an improvement (0: any strict decrease, as in the paper).
    checkpoint : bool, default=True
        Restore the (B, theta) of the best epoch (by validation loss, or training loss without
        early stopping) at the end.
    standardize : {"auto", True, "global", "quantile", False}, default="auto"
        Centre X and scale each input by its own training deviation (True), or every input by one
        pooled deviation, the root mean square of the inputs' deviations ("global": inputs in
        one unit, such as pixels, keep their relative spread, and the relevances compare in that
        unit), or neither (False). "auto" keeps the one that
        ``RFFRidge(PROBE_COMPONENTS, standardize="auto")`` keeps on at most ``PROBE_ROWS`` training
        rows (:func:`rffkern.ridge.choose_standardization`; True where the inputs share one
        deviation, as the RFFNet paper's simulations, whose fits are then those of True).
        "global" suits pixels (:doc:`/design_notes`). On Dask arrays the probe
        runs on the training rows among at most ``PROBE_ROWS`` rows drawn from X. "quantile": each heavy-tailed input (not two-valued, a
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
    feature_scale : float or "rff", default=1.0
        The constant ``c``: 1.0 as in the authors' code (the defaults of ``alpha`` and
        ``learning_rate`` were tuned for it), or "rff" for ``sqrt(2 / n_components)``.
    dtype : {"float32", "float64"}, default="float32"
        Precision of the training (float32, as in the reference code, is about twice as fast).
    random_state : int, Generator, RandomState or None, default=None
        Controls W, b, the initial B, the validation split and the shuffling.
    n_jobs : int or None, default=None
        Threads of the compiled kernels (None: OpenMP's current limit). The core itself runs a
        mini-batch on fewer threads when it holds too little work to pay for the per-batch
        barriers (batches of 32 run on one thread). The fitted model is bitwise identical for any
        value.
    verbose : int, default=0
        Print one line per epoch with the training and validation loss (and accuracy).
    warm_start : bool, default=False
        Continue from the fitted model on :meth:`fit`, as in :class:`RFFNetRegressor`.
    relevance_penalty : float, default=0.1
        The l1 penalty on the relevances, as in :class:`RFFNetRegressor` (the paper: 0).
    refit_coef : bool, default=True
        After the epochs of :meth:`fit`, keep the relevances, ``W`` and ``b`` and refit the
        output weights B alone: for fixed features ``z(theta * x)`` the training objective
        ``sum_i w_i loss_i / sum_i w_i + alpha' ||B||^2`` is an L2-penalised logistic (two
        classes) or softmax regression, convex, solved by L-BFGS (whitened by the features'
        second moments, warm-started from the trained B) on every row, training and validation
        parts. Its penalty ``alpha'`` comes from the data (the paper's lambda is fixed): each of
        ``OUTPUT_ALPHAS`` (half decades from 1e-6 to 1e-1), searched outwards from ``alpha``
        until the score worsens, is fitted on the training part and scored by the cross-entropy
        of the early-stopping validation part; without early stopping, by 3-fold
        cross-validation over interleaved rows (row i in fold i mod 3). The model keeps the
        paper's form (no output bias; predict, predict_proba and decision_function all come
        from the refitted ``coef_``). It stores the n x s features in float64 while it runs (and
        float32 copies of the fold's rows for the penalty search, which fits in float32 from 4000
        rows on); above
        ``CLOSING_MAX_ROWS`` (50,000) rows it fits on a random subset of that many, stratified
        by class (which costs little accuracy and saves most of the time and memory:
        :doc:`/design_notes`).
        It lowers the test error on most classification sets of the benchmarks at a median 65%
        more fit time (:doc:`/user_guide/rffnet`). False keeps B as trained (the
        paper); ``partial_fit`` never refits (a fit on Dask arrays does, on the client: see
        :doc:`/user_guide/dask`); a ``warm_start`` fit or ``partial_fit`` continues training
        from the trained W, b and B.
    refit_components : int or None, default=1000
        Features of the closing fit (``refit_coef``): the ``n_components`` trained ones plus new
        draws of the same kernel at the learned relevances, up to this many (at most two per
        row; the new features' weights start at 0); None or at most ``n_components``: the
        trained features only. More features lower the test error on mnist_test10k, digits and
        higgs_subset, at 2-6x the time of the closing fit on the trained features (the L-BFGS fits
        scale with the feature count; :doc:`/design_notes`).

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        The class labels.
    relevances_, feature_importances_, weights_, offsets_, x_mean_, x_scale_, scale_, n_iter_,
    loss_curve_, validation_loss_curve_, validation_scores_, best_epoch_, start_losses_, n_features_in_ : object
        As in :class:`RFFNetRegressor`.
    refit_alpha_ : float or None
        The penalty of the closing fit (``refit_coef``); None without it, and after
        :meth:`partial_fit` (which trains B on).
    coef_ : ndarray of shape (n_map, 1) for two classes, else (n_map, n_classes)
        B, the output weights. ``n_map`` is ``n_components``, or the closing fit's feature count
        (``refit_components``, at most two per row) when that is larger; ``weights_`` and
        ``offsets_`` have ``n_map`` columns too (the trained ones first).
    intercept_ : ndarray of zeros
        There is no output bias.

    Examples
    --------
    >>> import numpy as np
    >>> from rffkern import RFFNetClassifier
    >>> from rffkern.datasets import make_jse3
    >>> X, _, _ = make_jse3(300, random_state=0)
    >>> y = (X[:, 0] * X[:, 1] > 0).astype(int)  # depends on columns 0 and 1
    >>> clf = RFFNetClassifier(n_components=50, learning_rate=0.01, max_iter=30, random_state=0)
    >>> clf = clf.fit(X, y)
    >>> sorted(np.argsort(-clf.feature_importances_)[:2].tolist())
    [0, 1]
    >>> bool(clf.score(X, y) > 0.9)
    True
    """

    _loss_kind = "classification"

    def _closing_subset(self, labels):
        """The rows of the closing fit among those of ``labels``: None for all of them, or above
        ``CLOSING_MAX_ROWS`` a stratified random subset of that many (sorted indices; the stream
        draws only here). The Dask fit takes its rows here too."""
        if labels.size <= CLOSING_MAX_ROWS:
            return None
        return stratified_subset(labels, CLOSING_MAX_ROWS, self._rng)

    def _after_training(self, Xs_train, Y_train, w_train, Xs_val, Y_val, w_val):
        """``refit_coef``: B by L2-penalised logistic / softmax regression on the trained features
        of every row, the penalty by the held-out log-loss over ``OUTPUT_ALPHAS`` (searched in float32 from
        4000 rows on, the kept fit in float64)."""
        self.refit_alpha_ = None
        if not self.refit_coef:
            return

        kind = self._loss
        n_rows = Xs_train.shape[0] + (0 if Xs_val is None else Xs_val.shape[0])
        W, b = self._closing_map(n_rows)
        start = np.zeros((W.shape[1], self.coef_.shape[1]))  # the new features' weights start at 0
        start[:self.coef_.shape[0]] = self.coef_
        self.weights_ = np.ascontiguousarray(W, dtype=self.weights_.dtype)
        self.offsets_ = np.ascontiguousarray(b, dtype=self.offsets_.dtype)
        Xs = Xs_train if Xs_val is None else np.concatenate([Xs_train, Xs_val])
        Y = np.concatenate([Y_train] if Y_val is None else [Y_train, Y_val]).astype(np.float64)
        w = None
        if w_train is not None:
            w = np.concatenate([w_train] if w_val is None else [w_train, w_val]).astype(np.float64)
        n_train = Xs_train.shape[0]
        keep = self._closing_subset(Y.argmax(axis=1) if Y.shape[1] > 1 else Y[:, 0])
        if keep is not None:
            Xs, Y, w = Xs[keep], Y[keep], None if w is None else w[keep]
            n_train = int(np.count_nonzero(keep < n_train))
        Z = self._trained_features(Xs)
        rows = np.arange(Z.shape[0])
        if Xs_val is not None:  # the early-stopping split
            folds = [(rows[:n_train], rows[n_train:])]
        else:  # no held-out rows: 3 interleaved folds (row i in fold i mod 3; no random draw)
            folds = [(rows[rows % N_REFIT_FOLDS != k], rows[rows % N_REFIT_FOLDS == k])
                     for k in range(min(N_REFIT_FOLDS, Z.shape[0]))]
            folds = [(tr, ho) for tr, ho in folds if tr.size and (w is None or w[tr].sum() > 0 and w[ho].sum() > 0)]
        if folds:
            alpha, coef, whitening = choose_output_penalty(Z, Y, kind, folds, OUTPUT_ALPHAS, self.alpha, w, start,
                                                           n_threads=self.n_jobs)
        else:  # no rows to hold out: the estimator's own penalty (at least the grid's smallest)
            alpha, coef, whitening = max(float(self.alpha), OUTPUT_ALPHAS[0]), start, None
        coef, _ = fit_output_layer(Z, Y, kind, alpha, w, coef, whitening=whitening, n_threads=self.n_jobs)
        self.coef_ = np.ascontiguousarray(coef, dtype=self.coef_.dtype)
        self.refit_alpha_ = float(alpha)
        if self._fit_options.keep_closing_stats and keep is None:  # for _closing_fit_add_rows (all the rows)
            self._closing_stats = (Z, Y, w, whitening, coef)

    def _closing_fit_add_rows(self, X, y, sample_weight=None):
        """Fit the closing logistic / softmax regression again on the training rows and these (with
        their ``sample_weight``, in the caller's units: ``fit``'s weights' unit divides them too),
        at its chosen penalty, from its solution (the
        relevances and the map stay). For :func:`rffkern.fit`, whose held-out rows join the
        returned model this way. Needs ``FitOptions(keep_closing_stats=True)`` in ``fit``; returns self."""

        kept = self.__dict__.pop("_closing_stats", None)
        if kept is None:
            raise RuntimeError("no closing-fit rows kept (fit under FitOptions(keep_closing_stats=True))")
        Z, Y, w, whitening, coef = kept
        X = validate_data(self, X, dtype=_INPUT_DTYPES, ensure_all_finite=True, reset=False,
                          order="C")
        widen_input_range(self, X, sample_weight)  # (the model's rows: read as given, not clipped)
        _, Y_new, _ = self._encode_targets(y, first_call=False)
        # the new rows' features straight into the joint array (one allocation, no second copy:
        # fresh memory costs ~0.6 s per 260 MB on first touch here)
        Z_all = np.empty((Z.shape[0] + X.shape[0], Z.shape[1]))
        Z_all[:Z.shape[0]] = Z
        del kept, Z
        self._trained_features(self._standardized(X), out=Z_all[Z_all.shape[0] - X.shape[0]:])
        Z = Z_all
        Y = np.concatenate([Y, np.asarray(Y_new, dtype=np.float64)])
        w_new = relative_sample_weight(sample_weight, X.shape[0], self._weight_unit)[0]
        if w is not None or w_new is not None:  # (unweighted rows weigh 1 beside weighted ones)
            w = np.concatenate([np.ones(Z.shape[0] - X.shape[0]) if w is None else w,
                                np.ones(X.shape[0]) if w_new is None else w_new])
        coef, _ = fit_output_layer(Z, Y, self._loss, self.refit_alpha_, w, coef, whitening=whitening,
                                   n_threads=self.n_jobs)
        self.coef_ = np.ascontiguousarray(coef, dtype=self.coef_.dtype)
        return self

    def _encode_targets(self, y, first_call, classes=None):
        y = np.asarray(y)
        if y.ndim == 2 and y.shape[1] == 1:
            y = column_or_1d(y, warn=True)
        if y.ndim != 1:
            raise ValueError(f"y must be 1-D (one label per sample) for RFFNetClassifier, got shape {y.shape}")
        if first_call and classes is None:
            check_class_labels(y)
        else:  # the classes are given or known: a small chunk of many is no regression target
            check_label_chunk(y)
        if first_call:
            labels = np.unique(y) if classes is None else np.unique(np.asarray(classes))
            if labels.size < 2:
                raise ValueError(
                    f"RFFNetClassifier needs samples of at least 2 classes; got 1 class ({labels[0]!r})")
            self.classes_ = labels
            self._encoder = LabelEncoder().fit(labels)
        elif classes is not None and not np.array_equal(np.unique(np.asarray(classes)), self.classes_):
            raise ValueError("classes must be the same in every partial_fit call")
        unknown = np.setdiff1d(y, self.classes_)
        if unknown.size:
            raise ValueError(f"y contains labels not in classes_: {unknown[:5]!r}")
        codes = self._encoder.transform(y)
        k = self.classes_.size
        if k == 2:
            return y, codes.reshape(-1, 1).astype(np.float64), "logistic"
        Y = np.zeros((y.size, k))
        Y[np.arange(y.size), codes] = 1.0
        return y, Y, "softmax"

    def _validation_split(self, rng, n, n_val, y):
        """(validation, training) row indices, sorted, stratified by class when every class can be.

        scikit-learn's ``train_test_split(stratify=)`` needs at least 2 samples of every class and
        room for one sample of each class on both sides; when the data cannot give that, the split
        is a plain random one.
        """
        codes = self._encoder.transform(y)
        counts = np.bincount(codes)
        k = counts.size
        stratify = codes if counts.min() >= 2 and min(n_val, n - n_val) >= k else None
        seed = int(rng.integers(2**32 - 1))
        train_idx, val_idx = train_test_split(np.arange(n), test_size=n_val, stratify=stratify,
                                              random_state=seed)
        return np.sort(val_idx), np.sort(train_idx)

    def _score_outputs(self, F, Y, sample_weight=None):
        if Y.shape[1] == 1:
            return _accuracy(Y[:, 0] > 0.5, F[:, 0] > 0, sample_weight)
        return _accuracy(Y.argmax(axis=1), F.argmax(axis=1), sample_weight)

    def fit(self, X: ArrayLike, y: ArrayLike, sample_weight: ArrayLike | None = None) -> RFFNetClassifier:
        """Fit the classifier.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training data.
        y : array-like of shape (n_samples,)
            Class labels (at least two distinct).
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative weights; the weighted mean cross-entropy is minimised (rows drawn in
            proportion to the weights each epoch) and early stopping watches the weighted
            validation loss and accuracy. See :meth:`RFFNetRegressor.fit`.

        Returns
        -------
        self
            The fitted estimator.

        Examples
        --------
        >>> from rffkern import RFFNetClassifier
        >>> from rffkern.datasets import make_jse3
        >>> X, _, _ = make_jse3(100, random_state=0)
        >>> y = (X[:, 0] * X[:, 1] > 0).astype(int)
        >>> clf = RFFNetClassifier(n_components=20, max_iter=5, random_state=0)
        >>> clf.fit(X, y).classes_
        array([0, 1])
        """
        return self._fit(X, y, incremental=False, sample_weight=sample_weight)

    def partial_fit(self, X: ArrayLike, y: ArrayLike, classes: ArrayLike | None = None,
                    sample_weight: ArrayLike | None = None) -> RFFNetClassifier:
        """Run one pass of mini-batch steps over the chunk; see :meth:`RFFNetRegressor.partial_fit`.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            A chunk of training data.
        y : array-like of shape (n_samples,)
            Class labels of the chunk.
        classes : array-like of shape (n_classes,), default=None
            All the classes; required on the first call unless that chunk holds every class.
        sample_weight : array-like of shape (n_samples,), default=None
            Weights of the chunk's rows, as in :meth:`RFFNetRegressor.partial_fit`.

        Returns
        -------
        self
            The fitted estimator.

        Examples
        --------
        >>> from rffkern import RFFNetClassifier
        >>> from rffkern.datasets import make_jse3
        >>> X, _, _ = make_jse3(100, random_state=0)
        >>> y = (X[:, 0] * X[:, 1] > 0).astype(int)
        >>> clf = RFFNetClassifier(n_components=20, max_iter=5, random_state=0)
        >>> clf.partial_fit(X, y, classes=[0, 1]).n_iter_
        1
        """
        return self._fit(X, y, incremental=True, classes=classes, sample_weight=sample_weight)

    def decision_function(self, X: ArrayLike) -> NDArray[np.floating]:
        """Compute the logits.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            The samples (a Dask array is processed lazily, block by block).

        Returns
        -------
        ndarray of shape (n_samples,) or (n_samples, n_classes)
            One logit per sample for two classes (positive favours ``classes_[1]``), else one per class.

        Examples
        --------
        >>> from rffkern import RFFNetClassifier
        >>> from rffkern.datasets import make_jse3
        >>> X, _, _ = make_jse3(100, random_state=0)
        >>> y = (X[:, 0] * X[:, 1] > 0).astype(int)
        >>> clf = RFFNetClassifier(n_components=20, max_iter=5, random_state=0)
        >>> clf.fit(X, y).decision_function(X[:3]).shape
        (3,)
        """
        if is_dask_array(X):
            return map_rows(self.decision_function, X)
        F = self._decision_outputs(X)
        return F[:, 0] if F.shape[1] == 1 else F

    def predict_proba(self, X: ArrayLike) -> NDArray[np.floating]:
        """Compute the class probabilities.

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
        >>> from rffkern import RFFNetClassifier
        >>> from rffkern.datasets import make_jse3
        >>> X, _, _ = make_jse3(100, random_state=0)
        >>> y = (X[:, 0] * X[:, 1] > 0).astype(int)
        >>> clf = RFFNetClassifier(n_components=20, max_iter=5, random_state=0)
        >>> import numpy as np
        >>> P = clf.fit(X, y).predict_proba(X[:3])
        >>> P.shape, bool(np.allclose(P.sum(axis=1), 1))
        ((3, 2), True)
        """
        if is_dask_array(X):
            return map_rows(self.predict_proba, X)
        return class_probabilities(self._decision_outputs(X))

    def predict_log_proba(self, X: ArrayLike) -> NDArray[np.floating]:
        """Compute the logarithm of :meth:`predict_proba`.

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
        >>> from rffkern import RFFNetClassifier
        >>> from rffkern.datasets import make_jse3
        >>> X, _, _ = make_jse3(100, random_state=0)
        >>> y = (X[:, 0] * X[:, 1] > 0).astype(int)
        >>> clf = RFFNetClassifier(n_components=20, max_iter=5, random_state=0)
        >>> clf.fit(X, y).predict_log_proba(X[:3]).shape
        (3, 2)
        """
        with np.errstate(divide="ignore"):
            return np.log(self.predict_proba(X))

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
        >>> from rffkern import RFFNetClassifier
        >>> from rffkern.datasets import make_jse3
        >>> X, _, _ = make_jse3(100, random_state=0)
        >>> y = (X[:, 0] * X[:, 1] > 0).astype(int)
        >>> clf = RFFNetClassifier(n_components=20, max_iter=5, random_state=0)
        >>> clf.fit(X, y).predict(X[:3]).shape
        (3,)
        """
        if is_dask_array(X):
            return map_rows(self.predict, X)
        F = self._decision_outputs(X)
        idx = (F[:, 0] > 0).astype(int) if F.shape[1] == 1 else F.argmax(axis=1)
        return self.classes_[idx]


# The closing fits' width check and row cap are read here when the estimators run (the Dask fit
# reaches them through the estimator: _closing_check_rows, _check_closing_width, _closing_subset).

#: ``RFFNetRegressor(refit_coef=True)`` checks the learned kernel's overall width before its closing
#: ridge: the relevances divided by each of these factors (the kernel 1, 2 and 4 times as wide), each
#: at its best penalty among ``REFIT_ALPHAS`` by exact leave-one-out on at most
#: ``CLOSING_CHECK_ROWS`` rows (a random subset) with the trained features, and the factor nearest 1
#: whose error is within one standard error of the least kept (:func:`rffkern.ridge.one_se_width`,
#: the ridge's own width rule): the relevances move only on evidence. RFFNet starts narrow
#: (``init="median"``: 3 / median distance, which gives the relevances a gradient in high
#: dimension) and early stopping can end the training on a few hundred rows before the kernel has
#: widened. The check repairs diabetes and keeps the trained kernel on the larger regression sets.
#: Not for the classifier: on the ridge's +-1 targets the same check widens digits' kernel and
#: raises its test error (docs/design_notes.rst).
CLOSING_WIDTH_FACTORS = (1.0, 2.0, 4.0)
CLOSING_CHECK_ROWS = 2000


def closing_width_factor(Xr, Y, sample_weight, weights, offsets, scale, n_threads=None):
    """``(factor, errors)``: the width factor of ``CLOSING_WIDTH_FACTORS`` that the regressor's
    closing check keeps, and each factor's leave-one-out error (scaled targets, at its best penalty).

    Parameters
    ----------
    Xr : ndarray of shape (n, d)
        Standardized rows times the relevances, float64 (at most ``CLOSING_CHECK_ROWS`` of them).
    Y : ndarray of shape (n, m)
        Their training targets (centred, scaled), float64.
    sample_weight : ndarray of shape (n,) or None
    weights, offsets : ndarray
        The trained frequencies (d, s) and offsets (s,).
    scale : float
        The feature scale ``c``.
    n_threads : int or None, default=None
    """
    if Xr.shape[0] < 3:  # no leave-one-out error to compare on
        return 1.0, None
    W, b = np.asarray(weights, np.float64), np.asarray(offsets, np.float64)
    errors, losses = [], []
    for factor in CLOSING_WIDTH_FACTORS:
        fmap = FourierFeatureMap(W / factor, b, float(scale), n_threads=n_threads)
        res = fit_ridge_map(fmap, Xr, Y, REFIT_ALPHAS, selection="loo", sample_weight=sample_weight,
                            return_row_losses=True)
        errors.append(float(np.min(res[3])))
        losses.append(res[5])
    return CLOSING_WIDTH_FACTORS[pick_width(errors, losses, CLOSING_WIDTH_FACTORS)], errors


def closing_check_rows(n, rng, sample_weight=None):
    """The rows (sorted indices among ``n``) of the closing width check: all of them, or
    ``CLOSING_CHECK_ROWS`` drawn with a seed from a copy of ``rng`` (the estimator's later draws
    stay what they would be without the check).

    With ``sample_weight``, as many more rows as the weights leave fewer effective ones (Kish's
    ``(sum w)^2 / sum w^2`` of the n rows), so that the check's weighted leave-one-out errors are
    as steady as on ``CLOSING_CHECK_ROWS`` equal rows: on cal_housing weighted by population,
    2000 rows let the check widen a kernel that every row keeps (docs/design_notes.rst).
    """
    target = CLOSING_CHECK_ROWS
    if sample_weight is not None:
        w = np.asarray(sample_weight, np.float64)
        total, squares = float(w.sum()), float(np.dot(w, w))
        if squares > 0:  # (equal weights: exactly CLOSING_CHECK_ROWS, whatever the round-off)
            target = max(target, int(np.ceil(CLOSING_CHECK_ROWS * n * squares / (total * total) * (1 - 1e-12))))
    if n <= target:
        return np.arange(n)
    seed = int(copy.deepcopy(rng).integers(2**32 - 1))
    return np.sort(np.random.default_rng(seed).choice(n, target, replace=False))


#: ``RFFNetClassifier(refit_coef=True)``'s closing fit holds the n x s features of its rows (8 kB per
#: row in float64 at 1000 features, plus float32 copies for the penalty search): above this many
#: rows it fits on a random subset of this many, stratified by class (each class in proportion, at
#: least ``CLOSING_MIN_CLASS_ROWS`` rows or all of its own, :func:`rffkern._rffnet_training.stratified_subset`), split as the rows are (early-stopping
#: training and validation parts). On 200,000 rows the cap costs 0.0002 of test accuracy and saves
#: more than half the time and two thirds of the memory (docs/design_notes.rst); without a cap the
#: memory grows by about 20 kB per row: a million rows would take some 20 GB.
CLOSING_MAX_ROWS = 50_000


#: ``RFFNetClassifier(refit_coef=True)`` without an early-stopping split scores the penalties of its
#: closing fit by cross-validation over this many interleaved folds of the training rows.
N_REFIT_FOLDS = 3
