"""Losses of raw model outputs, for validation curves and early stopping (the training losses
themselves are computed inside the compiled kernels)."""
from __future__ import annotations

import numpy as np
from scipy.special import expit, log_softmax, softmax

from rffkern import _core


def mean_loss(F, Y, loss, sample_weight=None) -> float:
    """Mean per-sample loss of outputs ``F`` against targets ``Y`` (both n x m), in float64.

    squared: ``1/2 sum_o (f_o - y_o)^2``; logistic: ``sum_o log(1 + e^f_o) - y_o f_o``;
    softmax: ``-sum_o y_o log softmax(f)_o`` -- the per-sample losses of the compiled kernels.
    With ``sample_weight`` (n,), their weighted mean ``sum_i w_i loss_i / sum_i w_i``.
    """
    F = np.asarray(F, dtype=np.float64)
    Y = np.asarray(Y, dtype=np.float64)
    if loss == "squared":
        per_sample = 0.5 * ((F - Y) ** 2).sum(axis=1)
    elif loss == "logistic":
        per_sample = (np.logaddexp(0.0, F) - Y * F).sum(axis=1)
    elif loss == "softmax":
        per_sample = -(Y * log_softmax(F, axis=1)).sum(axis=1)
    else:
        raise ValueError(f"unknown loss {loss!r}")
    if sample_weight is not None:
        return float(np.average(per_sample, weights=sample_weight))
    return float(per_sample.mean())


def class_probabilities(F) -> np.ndarray:
    """Probabilities from logits: one column -> [1 - sigmoid, sigmoid]; several -> softmax."""
    F = np.asarray(F, dtype=np.float64)
    if F.shape[1] == 1:
        p = expit(F[:, 0])
        return np.column_stack([1.0 - p, p])
    return softmax(F, axis=1)


def logistic_loss_grad_unchecked(Z, y, coef, w, n_threads):
    """:func:`rffkern.kernels.logistic_loss_grad` on arrays already checked: Z C-contiguous float32/float64, coef
    (s,) of Z's dtype, y and w (n,) C-contiguous float64, n_threads resolved."""
    grad = np.empty(Z.shape[1])
    return float(_core.logistic_loss_grad(Z, coef, y, w, grad, n_threads)), grad


def softmax_loss_grad_unchecked(Z, Y, coef_t, w, n_threads):
    """:func:`rffkern.kernels.softmax_loss_grad` on arrays already checked: Z C-contiguous float32/float64, coef_t
    the coefficients transposed, (m, s) C-contiguous of Z's dtype, Y (n, m) and w (n,)
    C-contiguous float64, n_threads resolved. Returns the loss and the transposed gradient (m, s)."""
    grad_t = np.empty(coef_t.shape)
    return float(_core.softmax_loss_grad(Z, coef_t, Y, w, grad_t, n_threads)), grad_t
