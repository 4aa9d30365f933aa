"""RFFNet's training loop: initial relevances, epochs, early stopping.

Algorithm 1 of Otto & Izbicki, "RFFNet: Large-Scale Interpretable Kernel Methods via Random Fourier
Features"; see docs/user_guide/rffnet.rst.

The estimators in :mod:`rffkern.rffnet` own the parameters and the fitted attributes; this module
owns how they are trained. Every epoch of mini-batch Adam/SGD + prox steps is one call of the
compiled :func:`rffkern.kernels.train_epoch` (GIL released); Python draws the permutations,
evaluates the validation loss once per epoch, keeps the best checkpoint and applies the
learning-rate schedule.
"""
from __future__ import annotations

import sys
import time
from dataclasses import dataclass

import numpy as np

from rffkern import kernels
from rffkern._losses import mean_loss

# learning_rate_schedule="adaptive": on each plateau of n_iter_no_change epochs the learning rate
# is divided by LR_DECAY, at most MAX_LR_DECAYS times; the next plateau stops the training.
LR_DECAY = 5.0
MAX_LR_DECAYS = 3


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


def lasso_init(X, Y):
    """The paper's "Regressor" initial relevances: Lasso coefficients of Y on X.

    The Lasso penalty is chosen by 3-fold cross-validation on a short path (LassoCV); with several
    outputs (one-hot classes, multi-output regression) theta_j is the root sum of squares of the
    per-output coefficients of feature j.
    """
    from sklearn.linear_model import LassoCV

    coefs = []
    for k in range(Y.shape[1]):
        model = LassoCV(cv=3, alphas=20)
        model.fit(X.astype(np.float64), Y[:, k].astype(np.float64))
        coefs.append(model.coef_)
    C = np.asarray(coefs)
    theta = C[0] if C.shape[0] == 1 else np.sqrt((C**2).sum(axis=0))
    return theta.astype(X.dtype)


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
    n_threads: int

    @property
    def palm(self):
        return self.solver.startswith("palm")

    def run(self, Xs, Y, theta, coef, state, rng, learning_rate):
        """One epoch on (Xs, Y): adam/sgd = one joint pass; palm-* = a pass on B, then one on theta.

        Returns the mean mini-batch loss of the (last) pass.
        """
        common = dict(batch_size=self.batch_size, loss=self.loss, learning_rate=learning_rate,
                      l2_coef=self.alpha, scale=self.scale, n_threads=self.n_threads,
                      solver="sgd" if self.solver.endswith("sgd") else "adam", check_finite=False)
        n = Xs.shape[0]
        if self.palm:
            kernels.train_epoch(Xs, Y, rng.permutation(n), self.weights, self.offsets, theta, coef,
                                state.joint, update_theta=False, **common)
            return kernels.train_epoch(Xs, Y, rng.permutation(n), self.weights, self.offsets, theta,
                                       coef, state.theta_block, update_coef=False, **common)
        return kernels.train_epoch(Xs, Y, rng.permutation(n), self.weights, self.offsets, theta, coef,
                                   state.joint, **common)

    def outputs(self, Xs, theta, coef):
        """f = Z @ B on standardized Xs, without the intercept."""
        return kernels.predict(Xs, self.weights, self.offsets, coef, theta=theta, scale=self.scale,
                               n_threads=self.n_threads)

    def mean_loss(self, Xs, Y, theta, coef):
        """Mean per-sample loss (no penalty) of (theta, coef), one fused pass."""
        value, _, _ = kernels.loss_and_grad(Xs, Y, self.weights, self.offsets, coef, theta=theta,
                                            loss=self.loss, scale=self.scale, want_theta=False,
                                            n_threads=self.n_threads)
        return value


def initial_relevances(init, runner, Xs, Y, coef, state, rng, *, n_restarts, restart_iter,
                       learning_rate):
    """theta to start from, and the (coef, state) to continue with (``init="restarter"`` replaces them).

    An array is used as the initial theta. "constant", "regressor" and an array leave ``coef`` and
    ``state`` as given; "restarter" trains
    ``n_restarts`` perturbed copies for ``restart_iter`` epochs each and continues from the one
    with the lowest training loss (its theta, B and optimiser moments).
    """
    if not isinstance(init, str):  # the caller's initial relevances
        return np.ascontiguousarray(np.asarray(init, dtype=Xs.dtype)), coef
    theta = constant_init(Xs)
    if init == "regressor":
        theta = lasso_init(Xs, Y - Y.mean(axis=0))
    elif init == "restarter":
        d = Xs.shape[1]
        best = None
        for _ in range(n_restarts):
            cand = (theta + rng.standard_normal(d) / np.sqrt(d)).astype(theta.dtype)
            cand_coef = coef.copy()
            cand_state = TrainingState(coef.shape, d, theta.dtype, runner.palm)
            for _ in range(restart_iter):
                runner.run(Xs, Y, cand, cand_coef, cand_state, rng, learning_rate)
                if not (np.isfinite(cand).all() and np.isfinite(cand_coef).all()):
                    break  # a diverged restart is discarded (the kernels refuse non-finite input)
            if not (np.isfinite(cand).all() and np.isfinite(cand_coef).all()):
                continue
            value = runner.mean_loss(Xs, Y, cand, cand_coef)
            if np.isfinite(value) and (best is None or value < best[0]):
                best = (value, cand, cand_coef, cand_state)
        if best is None:
            raise ValueError("every restart of init='restarter' diverged; lower learning_rate")
        _, theta, coef, winner = best
        state.joint, state.theta_block = winner.joint, winner.theta_block
    return np.ascontiguousarray(theta), coef


def train_epochs(est, runner, Xs, Y, Xs_val, Y_val, rng, *, max_epochs, monitor):
    """Run up to ``max_epochs`` epochs on ``est.relevances_`` / ``est.coef_`` (updated in place).

    Appends to the estimator's curves (``loss_curve_``, ``validation_loss_curve_``,
    ``validation_scores_``) and counters (``n_iter_``, ``t_``); with ``monitor``, tracks the best
    epoch (validation loss, else training loss), applies the learning-rate schedule and early
    stopping, sets ``best_epoch_`` / ``learning_rate_`` and restores the best checkpoint.
    """
    theta, coef = est.relevances_, est.coef_
    best_value = np.inf
    best = None
    no_improve = 0
    lr = est.learning_rate
    n_decays = 0
    diverged = False
    for _ in range(max_epochs):
        tic = time.perf_counter()
        train_loss = runner.run(Xs, Y, theta, coef, est._state, rng, lr)
        est.n_iter_ += 1
        est.t_ += Xs.shape[0]
        est.loss_curve_.append(train_loss)
        diverged = not np.isfinite(train_loss) or not np.isfinite(coef).all() or not np.isfinite(theta).all()
        val_loss = None
        if Xs_val is not None and not diverged:
            F = runner.outputs(Xs_val, theta, coef)
            val_loss = mean_loss(F, Y_val, runner.loss)
            est.validation_loss_curve_.append(val_loss)
            est.validation_scores_.append(est._score_outputs(F, Y_val))
        if diverged:
            if est.verbose:
                print(f"Epoch {est.n_iter_}: training diverged (non-finite loss or parameters)",
                      file=sys.stdout)
            break
        if monitor:
            value = val_loss if val_loss is not None else train_loss
            if value < best_value - est.tol:
                best_value = value
                est.best_epoch_ = est.n_iter_
                no_improve = 0
                if est.checkpoint:
                    best = (theta.copy(), coef.copy())
            else:
                no_improve += 1
        if est.verbose:
            line = f"Epoch {est.n_iter_:4d}: train loss {train_loss:.6g}"
            if val_loss is not None:
                line += f", validation loss {val_loss:.6g}"
            line += f" ({time.perf_counter() - tic:.3f} s)"
            print(line, file=sys.stdout, flush=True)
        if (monitor and no_improve >= est.n_iter_no_change
                and est.learning_rate_schedule == "adaptive" and n_decays < MAX_LR_DECAYS):
            lr /= LR_DECAY
            n_decays += 1
            no_improve = 0
            if est.verbose:
                print(f"Learning rate lowered to {lr:.3g} (no improvement for "
                      f"{est.n_iter_no_change} epochs)", file=sys.stdout, flush=True)
        elif monitor and est.early_stopping and no_improve >= est.n_iter_no_change:
            if est.verbose:
                print(f"Early stopping: no improvement for {no_improve} epochs; best epoch "
                      f"{est.best_epoch_}", file=sys.stdout, flush=True)
            break
    if diverged and best is None:
        raise ValueError(
            "RFFNet training diverged (non-finite loss or parameters): lower learning_rate, or "
            "check the scale of X (standardize=True) and of y (targets of very large magnitude "
            "make the squared loss overflow)")
    if monitor:
        est.learning_rate_ = float(lr)
    if best is not None:
        theta[...] = best[0]
        coef[...] = best[1]
