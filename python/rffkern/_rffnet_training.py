"""RFFNet's training loop: initial relevances, starts, epochs, early stopping.

Algorithm 1 of Otto & Izbicki, "RFFNet: Large-Scale Interpretable Kernel Methods via Random Fourier
Features"; see docs/user_guide/rffnet.rst.

The estimators in :mod:`rffkern.rffnet` own the parameters and the fitted attributes; this module
owns how they are trained. Every epoch of mini-batch Adam/SGD + prox steps is one call of the
compiled :func:`rffkern.kernels.train_epoch` (GIL released); Python draws the permutations,
evaluates the validation loss once per epoch, keeps the best checkpoint and applies the
learning-rate schedule.

The settings that the in-memory fit (:mod:`rffkern.rffnet`, which re-exports them) and the
data-parallel one (:mod:`rffkern._dask_rffnet`) both read live here too: the starts of ``n_init``
and the closing ridge's penalties and size (SRFF's closing ridge reads those as well).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from rffkern import kernels
from rffkern._losses import mean_loss
from rffkern._progress import ProgressLog
from rffkern._sampling import median_distance

# learning_rate_schedule="adaptive": on each plateau of n_iter_no_change epochs the learning rate
# is divided by LR_DECAY, at most MAX_LR_DECAYS times; the next plateau stops the training. (A fit under
# ``FitOptions(max_lr_decays=...)``, as rffkern.fit runs its variants, sets the count.)
LR_DECAY = 5.0
MAX_LR_DECAYS = 3
#: ``RFFNetRegressor(refit_coef=True)``'s penalties for the closing ridge on the trained features
#: (targets centred and scaled), chosen by exact leave-one-out: half decades from 1e-8 to 1e4.
REFIT_ALPHAS = tuple(float(a) for a in np.logspace(-8, 4, 25))
#: The closing fit's features are at most this many per row (its Gram's rank is at most the rows).
CLOSING_COMPONENTS_PER_ROW = 2


def constant_init(X):
    """The paper's "Constant" initial relevances: ``(max_i X_ij - min_i X_ij) / d`` per feature.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features)

    Returns
    -------
    theta : ndarray of shape (n_features,), X's dtype
    """
    X = np.asarray(X)
    return ((X.max(axis=0) - X.min(axis=0)) / X.shape[1]).astype(X.dtype, copy=False)


# init="median": theta_j = MEDIAN_INIT_FACTOR / (median distance between rows), the same for every j.
MEDIAN_INIT_FACTOR = 3.0


def median_init(X):
    """Isotropic initial relevances ``3 / l`` with ``l`` the median distance between rows of X
    (a fixed subsample of at most 2000 rows; the estimator's random stream is not used).

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features)
        Standardized training rows.

    Returns
    -------
    theta : ndarray of shape (n_features,), X's dtype
    """
    X = np.asarray(X)
    return np.full(X.shape[1], MEDIAN_INIT_FACTOR / median_distance(X), dtype=X.dtype)


def lasso_init(X, Y, sample_weight=None):
    """The paper's "Regressor" initial relevances: Lasso coefficients of Y on X.

    The Lasso penalty is chosen by 3-fold cross-validation on a short path (LassoCV); with several
    outputs (one-hot classes, multi-output regression) theta_j is the root sum of squares of the
    per-output coefficients of feature j.
    """
    from sklearn.linear_model import LassoCV

    coefs = []
    for k in range(Y.shape[1]):
        model = LassoCV(cv=3, alphas=20)
        model.fit(X.astype(np.float64), Y[:, k].astype(np.float64), sample_weight=sample_weight)
        coefs.append(model.coef_)
    C = np.asarray(coefs)
    theta = C[0] if C.shape[0] == 1 else np.sqrt((C**2).sum(axis=0))
    return theta.astype(X.dtype)


def epoch_order(rng, n, sample_weight=None):
    """The rows one pass visits, in order: a permutation of ``range(n)``, or, with sample weights,
    ``n`` rows drawn independently with probability ``w_i / sum(w)``.

    Weighted draws rather than weights inside the compiled mini-batch gradient: the expected
    gradient of a batch is then exactly that of the weighted mean loss, whatever the batch (a
    weighted batch mean would be biased, an unnormalised one would change the step size with the
    scale of the weights); rows of weight 0 cost nothing; and the unweighted path is untouched (the
    same permutations, the same bits). Rows of integer weight ``k`` are visited as often as ``k``
    copies of the row, in expectation.
    """
    if sample_weight is None:
        return rng.permutation(n)
    return rng.choice(n, size=n, p=sample_weight / sample_weight.sum())


class TrainingState:
    """Adam moments (one set per block for the PALM solvers); pickled with the estimator."""

    def __init__(self, coef_shape, n_features, dtype, palm):
        self.joint = kernels.AdamState(coef_shape, n_features, dtype)
        self.theta_block = kernels.AdamState(coef_shape, n_features, dtype) if palm else None


@dataclass
class EpochRunner:
    """The fixed pieces of one fit: the feature map, the loss and the optimiser settings."""

    weights: np.ndarray
    offsets: np.ndarray
    scale: float
    loss: str
    solver: str
    batch_size: int
    alpha: float
    relevance_penalty: float
    n_threads: int
    # the centered sparse rows (kernels.centered_rows) of the standardized arrays seen, by id: built
    # once per array of a fit (the training and the validation rows), None where an array is too
    # dense for them to pay
    _rows_seen: dict = field(default_factory=dict, init=False, repr=False)

    def rows(self, Xs):
        """``kernels.centered_rows(Xs)`` (or None), remembered for the same array object."""
        seen = self._rows_seen.get(id(Xs))
        if seen is None or seen[0] is not Xs:
            if len(self._rows_seen) >= 4:
                self._rows_seen.clear()
            seen = self._rows_seen[id(Xs)] = (Xs, kernels.centered_rows(Xs) if Xs.shape[0] else None)
        return seen[1]

    @property
    def palm(self):
        return self.solver.startswith("palm")

    def run(self, Xs, Y, theta, coef, state, rng, learning_rate, sample_weight=None):
        """One epoch on (Xs, Y): adam/sgd = one joint pass; palm-* = a pass on B, then one on theta.

        A pass visits the rows in a random permutation; with ``sample_weight`` it instead visits
        ``n`` rows drawn with replacement with probability ``w_i / sum(w)``, so that every mini-batch
        gradient is an unbiased estimate of the gradient of the weighted mean loss
        ``sum_i w_i loss_i / sum_i w_i`` (see :func:`epoch_order`).

        Returns the mean mini-batch loss of the (last) pass, NaN for a pass that diverged (the
        kernel then leaves that pass's parameters and moments as they were before it).
        """
        common = dict(batch_size=self.batch_size, loss=self.loss, learning_rate=learning_rate,
                      l2_coef=self.alpha, l1_theta=self.relevance_penalty, scale=self.scale,
                      n_threads=self.n_threads,
                      solver="sgd" if self.solver.endswith("sgd") else "adam", check_finite=False,
                      theta_moment="shared" if self.solver == "shared-adam" else "coordinate",
                      rows=self.rows(Xs))
        n = Xs.shape[0]
        try:
            if self.palm:
                kernels.train_epoch(Xs, Y, epoch_order(rng, n, sample_weight), self.weights, self.offsets,
                                    theta, coef, state.joint, update_theta=False, **common)
                return kernels.train_epoch(Xs, Y, epoch_order(rng, n, sample_weight), self.weights,
                                           self.offsets, theta, coef, state.theta_block, update_coef=False,
                                           **common)
            return kernels.train_epoch(Xs, Y, epoch_order(rng, n, sample_weight), self.weights, self.offsets,
                                       theta, coef, state.joint, **common)
        except kernels.TrainingDivergedError:
            return float("nan")

    def outputs(self, Xs, theta, coef):
        """f = Z @ B on standardized Xs, without the intercept."""
        return kernels.predict(Xs, self.weights, self.offsets, coef, theta=theta, scale=self.scale,
                               n_threads=self.n_threads, rows=self.rows(Xs))

    def mean_loss(self, Xs, Y, theta, coef, sample_weight=None):
        """Mean per-sample loss (no penalty) of (theta, coef), one fused pass (weighted mean with
        ``sample_weight``, from the outputs)."""
        if sample_weight is not None:
            return mean_loss(self.outputs(Xs, theta, coef), Y, self.loss, sample_weight)
        value, _, _ = kernels.loss_and_grad(Xs, Y, self.weights, self.offsets, coef, theta=theta,
                                            loss=self.loss, scale=self.scale, want_theta=False,
                                            n_threads=self.n_threads, rows=self.rows(Xs))
        return value


def zero_constant_relevances(theta, constant):
    """Set (in place) the relevances of the inputs that are constant on the training rows to 0.

    Standardized, such an input is 0 on every training row: its gradient is 0, no update moves
    its relevance (Adam's, the shared-moment step and PALM's are all 0 at a zero gradient, and the
    prox keeps 0 at 0), and from any other start it would stay wherever it started: a constant
    input would rank above the informative ones in ``feature_importances_`` (it did, at 0.78 of
    the largest with RFFNetRegressor's defaults, beside five noise inputs at 0.53-0.63). At 0 it
    also leaves the model unchanged where a later row varies in it.
    """
    theta[np.asarray(constant, dtype=bool)] = 0
    return theta


def initial_relevances(init, runner, Xs, Y, coef, state, rng, *, n_restarts, restart_iter,
                       learning_rate, sample_weight=None):
    """theta to start from, and the (coef, state) to continue with (``init="restarter"`` replaces them).

    An array is used as the initial theta. "constant", "regressor" and an array leave ``coef`` and
    ``state`` as given; "restarter" trains
    ``n_restarts`` perturbed copies for ``restart_iter`` epochs each and continues from the one
    with the lowest training loss (its theta, B and optimiser moments).
    """
    if not isinstance(init, str):  # the caller's initial relevances
        return np.ascontiguousarray(np.asarray(init, dtype=Xs.dtype)), coef
    theta = constant_init(Xs if sample_weight is None else Xs[sample_weight > 0])
    if init == "median":
        theta = median_init(Xs if sample_weight is None else Xs[sample_weight > 0])
    elif init == "regressor":
        Yc = Y - np.average(Y, axis=0, weights=sample_weight).astype(Y.dtype)
        theta = lasso_init(Xs, Yc, sample_weight)
    elif init == "restarter":
        d = Xs.shape[1]
        best = None
        for _ in range(n_restarts):
            cand = (theta + rng.standard_normal(d) / np.sqrt(d)).astype(theta.dtype)
            cand_coef = coef.copy()
            cand_state = TrainingState(coef.shape, d, theta.dtype, runner.palm)
            diverged = False
            for _ in range(restart_iter):
                diverged = not np.isfinite(runner.run(Xs, Y, cand, cand_coef, cand_state, rng,
                                                      learning_rate, sample_weight))
                if diverged:
                    break
            if diverged:
                continue  # a diverged restart is discarded
            value = runner.mean_loss(Xs, Y, cand, cand_coef, sample_weight)
            if np.isfinite(value) and (best is None or value < best[0]):
                best = (value, cand, cand_coef, cand_state)
        if best is None:
            raise ValueError("every restart of init='restarter' diverged; lower learning_rate")
        _, theta, coef, winner = best
        state.joint, state.theta_block = winner.joint, winner.theta_block
    return np.ascontiguousarray(theta), coef


@dataclass
class Schedule:
    """Where the early stopping and learning-rate schedule of one training stand, carried from one
    :func:`train_epochs` call to the next (the starts of ``n_init`` continue in a second call). The
    data-parallel training on Dask (:mod:`rffkern._dask_rffnet`) keeps one per start as well."""

    learning_rate: float
    best_value: float = np.inf
    best: tuple | None = None  # the checkpoint (theta, coef) of the best epoch
    no_improve: int = 0
    n_decays: int = 0
    stopped: bool = False  # early stopping ended the training
    diverged: bool = False

    def least_loss(self):
        """The least monitored loss so far; inf for a training that diverged before any."""
        return np.inf if self.diverged and self.best is None else self.best_value

    def observe(self, value, tol, theta, coef, checkpoint):
        """Record an epoch's monitored loss; True where it improved on the best by more than
        ``tol`` (then ``(theta, coef)`` are copied as the best checkpoint, with ``checkpoint``)."""
        if value < self.best_value - tol:
            self.best_value = value
            self.no_improve = 0
            if checkpoint:
                self.best = (theta.copy(), coef.copy())
            return True
        self.no_improve += 1
        return False

    def after_plateau(self, patience, adaptive, max_decays, early_stopping):
        """After ``patience`` epochs without improvement: lower the learning rate by ``LR_DECAY``
        (``adaptive``, at most ``max_decays`` times), else stop (``early_stopping``). Returns
        "lowered", "stopped" or None."""
        if self.no_improve < patience:
            return None
        if adaptive and self.n_decays < max_decays:
            self.learning_rate /= LR_DECAY
            self.n_decays += 1
            self.no_improve = 0
            return "lowered"
        if early_stopping:
            self.stopped = True
            return "stopped"
        return None


#: ``n_init="auto"``: this many starts (each its own draw of the map and of B, trained
#: ``START_EPOCHS`` epochs; the ``N_INIT_FINALISTS`` of least validation loss train as many more,
#: and the better goes on) where the l1 relevance
#: penalty is on and there are at least ``N_INIT_MIN_FEATURES`` inputs, else one. The penalty
#: holds a relevance at 0 unless its gradient beats it, and the gradient of an input that acts
#: through an even function or an interaction vanishes to first order as its relevance goes to 0:
#: among many noise inputs one unlucky start loses such an input in its first epochs and never
#: recovers it. Five starts find all five relevant inputs of ``make_hd5`` on every seed where one
#: start misses some, for about 1.25x the fit time; below 100 inputs they cost 12-29% more time for
#: no consistent gain (docs/design_notes.rst, docs/user_guide/rffnet.rst).
N_INIT_AUTO = 5
N_INIT_MIN_FEATURES = 100
START_EPOCHS = 5
N_INIT_FINALISTS = 2


def best_of_starts(n_starts, train, epochs, more, n_finalists):
    """The two rounds of ``n_init``: every start trains ``epochs`` epochs, the ``n_finalists`` of
    least monitored loss ``more`` epochs on top, and the least of those is kept (the first of equal
    losses).

    ``train(k, count)`` trains start ``k`` (creating it on its first call) for ``count`` more
    epochs and returns its least monitored loss (:meth:`Schedule.least_loss`). Returns the first
    round's losses and the index of the start kept.
    """
    losses = np.array([train(k, epochs) for k in range(n_starts)])
    finalists = [int(i) for i in np.argsort(losses, kind="stable")[:n_finalists]]
    final = {k: train(k, more) if more > 0 else losses[k] for k in finalists}
    return losses, min(finalists, key=final.__getitem__)


def train_epochs(est, runner, Xs, Y, w, Xs_val, Y_val, w_val, rng, *, max_epochs, monitor,
                 schedule=None, finish=True):
    """Run up to ``max_epochs`` epochs on ``est.relevances_`` / ``est.coef_`` (updated in place).

    Appends to the estimator's curves (``loss_curve_``, ``validation_loss_curve_``,
    ``validation_scores_``) and counters (``n_iter_``, ``t_``); with ``monitor``, tracks the best
    epoch (validation loss, else training loss), applies the learning-rate schedule and early
    stopping, sets ``best_epoch_`` / ``learning_rate_`` and restores the best checkpoint.
    ``w`` and ``w_val`` are the sample weights of the training and validation rows (or None): the
    epochs draw rows in proportion to ``w`` and the validation loss and score are ``w_val``-weighted.

    ``schedule`` continues a training where an earlier call left it (a new one starts at
    ``est.learning_rate``); with ``finish=False`` the best checkpoint is not restored, no error is
    raised for a diverged training, and the training can go on in a later call. Returns the
    :class:`Schedule`.
    """
    theta, coef = est.relevances_, est.coef_
    sched = Schedule(float(est.learning_rate)) if schedule is None else schedule
    max_decays = est._fit_options.max_lr_decays
    max_decays = MAX_LR_DECAYS if max_decays is None else max_decays
    log = ProgressLog(est, est.verbose)
    epoch_total = est.n_iter_ + max_epochs  # epochs are numbered over the model's life
    for _ in range(0 if sched.stopped or sched.diverged else max_epochs):
        train_loss = runner.run(Xs, Y, theta, coef, est._state, rng, sched.learning_rate, w)
        est.n_iter_ += 1
        est.t_ += Xs.shape[0]
        est.loss_curve_.append(train_loss)
        sched.diverged = (not np.isfinite(train_loss) or not np.isfinite(coef).all()
                          or not np.isfinite(theta).all())
        val_loss = None
        if Xs_val is not None and not sched.diverged:
            F = runner.outputs(Xs_val, theta, coef)
            val_loss = mean_loss(F, Y_val, runner.loss, w_val)
            est.validation_loss_curve_.append(val_loss)
            est.validation_scores_.append(est._score_outputs(F, Y_val, w_val))
        if sched.diverged:
            log.event(f"training diverged at epoch {est.n_iter_}: non-finite loss or parameters")
            break
        if monitor:
            value = val_loss if val_loss is not None else train_loss
            if sched.observe(value, est.tol, theta, coef, est.checkpoint):
                est.best_epoch_ = est.n_iter_
        if log.enabled():
            details = f"train loss {train_loss:.6g}"
            if val_loss is not None:
                details += f", validation loss {val_loss:.6g}"
            log.step("epoch", est.n_iter_, epoch_total, details)
        if not monitor:
            continue
        change = sched.after_plateau(est.n_iter_no_change, est.learning_rate_schedule == "adaptive", max_decays,
                                     est.early_stopping)
        if change == "lowered":
            log.event(f"learning rate lowered to {sched.learning_rate:.3g} after {est.n_iter_no_change} "
                      "epochs without improvement")
        elif change == "stopped":
            log.event(f"early stopping: no improvement for {sched.no_improve} epochs; best epoch "
                      f"{est.best_epoch_}")
            break
    if not finish:
        return sched
    if sched.diverged and sched.best is None:
        raise ValueError(
            "RFFNet training diverged (non-finite loss or parameters): lower learning_rate, or "
            "check the scale of X (standardize=True) and of y (targets of very large magnitude "
            "make the squared loss overflow)")
    if monitor:
        est.learning_rate_ = float(sched.learning_rate)
    if sched.best is not None:
        theta[...] = sched.best[0]
        coef[...] = sched.best[1]
    return sched


#: :func:`stratified_subset` takes at least this many rows of each class (all of a smaller one).
CLOSING_MIN_CLASS_ROWS = 20


def stratified_subset(labels, size, rng):
    """About ``size`` sorted row indices, drawn without replacement: each class's share of
    ``size`` (at least ``CLOSING_MIN_CLASS_ROWS``, at most its rows) from its rows."""
    classes, inverse, counts = np.unique(labels, return_inverse=True, return_counts=True)
    take = np.minimum(counts, np.maximum(np.round(size * counts / labels.size).astype(np.int64),
                                         CLOSING_MIN_CLASS_ROWS))
    return np.sort(np.concatenate([rng.choice(np.flatnonzero(inverse == k), take[k], replace=False)
                                   for k in range(classes.size)]))


#: ``RFFNetRegressor(refit_coef=True)``'s penalties for the closing ridge on the trained features
#: (targets centred and scaled), chosen by exact leave-one-out: half decades from 1e-8 to 1e4.
REFIT_ALPHAS = tuple(float(a) for a in np.logspace(-8, 4, 25))
#: The closing fit's features are at most this many per row (its Gram's rank is at most the rows).
CLOSING_COMPONENTS_PER_ROW = 2


def r2_from_sums(sse, sst):
    """The mean over outputs of ``1 - SSE / SST`` from the per-output sums, as r2_score scores
    them: 1 for a constant output (``SST == 0``) fitted exactly, 0 for one fitted otherwise."""
    safe = sst > 0
    r2 = np.where(safe, 1.0 - sse / np.where(safe, sst, 1.0), np.where(sse > 0, 0.0, 1.0))
    return float(np.mean(r2))


def check_initial_relevances(init, d):
    theta = np.asarray(init)
    if theta.dtype.kind not in "iuf" or theta.shape != (d,) or not np.isfinite(theta).all():
        raise ValueError(f"init as an array must hold {d} finite initial relevances (one per feature), "
                         f"got shape {theta.shape} and dtype {theta.dtype}")


def training_targets(Y, intercept, scale, dtype):
    """(Y - intercept) / scale in the training dtype, refused when its squares would overflow it
    (the training loss would be infinite)."""
    T = (np.asarray(Y, dtype=np.float64) - intercept.astype(np.float64)) / scale.astype(np.float64)
    largest = float(np.abs(T).max(initial=0.0))
    limit = float(np.sqrt(np.finfo(dtype).max))
    if not largest < limit:
        raise ValueError(
            f"y holds values up to {largest:.3g} in magnitude (after centring): their squares "
            f"overflow {dtype} (the training dtype; |y| must stay below {limit:.3g}). Use "
            "normalize_y=True, rescale y, or use dtype='float64'")
    return np.ascontiguousarray(T, dtype=dtype)
