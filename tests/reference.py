"""Pure-NumPy reference of every compiled kernel, written for clarity rather than speed.

The test oracle: it lives under tests/, imports nothing from rffkern, and the package never imports it.

Each function mirrors the one of the same name in :mod:`rffkern.kernels` (same arguments, same
results up to floating-point rounding); the tests compare the two under Hypothesis. Nothing here
validates input: the reference assumes well-formed arrays.
"""
from __future__ import annotations

import numpy as np



def default_scale(n_components, pair=False):
    """sqrt(2/s) for the phase form, sqrt(1/s) for the pair form."""
    return float(np.sqrt((1.0 if pair else 2.0) / n_components))


def pre_activation(X, weights, offsets=None, theta=None):
    """U = (X * theta) @ W + b."""
    Xs = X if theta is None else X * theta
    U = Xs @ weights
    return U if offsets is None else U + offsets


def features(X, weights, offsets=None, *, theta=None, scale=None, pair=False):
    """Z = c cos(U), or c [cos U, sin U] with ``pair=True``."""
    if scale is None:
        scale = default_scale(weights.shape[1], pair)
    U = pre_activation(X, weights, offsets, theta)
    if pair:
        return scale * np.hstack([np.cos(U), np.sin(U)])
    return scale * np.cos(U)


def predict(X, weights, offsets, coef, *, theta=None, scale=None, pair=False):
    """F = Z @ coef."""
    return features(X, weights, offsets, theta=theta, scale=scale, pair=pair) @ coef


def gram(X, weights, offsets=None, Y=None, *, theta=None, scale=None, pair=False):
    """Z.T @ Z, and (Z.T @ Z, Z.T @ Y) when Y is given."""
    Z = features(X, weights, offsets, theta=theta, scale=scale, pair=pair)
    if Y is None:
        return Z.T @ Z
    return Z.T @ Z, Z.T @ Y


def loss_values(F, Y, loss):
    """Per-sample loss and its derivative dl/df for outputs F and targets Y (both n x m)."""
    if loss == "squared":
        return 0.5 * ((F - Y) ** 2).sum(axis=1), F - Y
    if loss == "logistic":
        return (np.logaddexp(0.0, F) - Y * F).sum(axis=1), 1.0 / (1.0 + np.exp(-F)) - Y
    if loss == "softmax":
        shift = F.max(axis=1, keepdims=True)
        lse = shift + np.log(np.exp(F - shift).sum(axis=1, keepdims=True))
        return (Y * (lse - F)).sum(axis=1), np.exp(F - lse) * Y.sum(axis=1, keepdims=True) - Y
    if loss == "linear":
        return (Y * F).sum(axis=1), Y
    raise ValueError(f"unknown loss {loss!r}")


def logistic_loss_grad(Z, y, coef, w=None):
    """Weighted sum of the logistic losses of f = Z @ coef, and its gradient in coef."""
    w = np.ones(Z.shape[0]) if w is None else w
    F = (Z @ coef)[:, None]
    per_row, dF = loss_values(F, y[:, None], "logistic")
    return float(w @ per_row), Z.T @ (w * dF[:, 0])


def softmax_loss_grad(Z, Y, coef, w=None):
    """Weighted sum of the softmax cross-entropies of F = Z @ coef, and its gradient in coef."""
    w = np.ones(Z.shape[0]) if w is None else w
    per_row, dF = loss_values(Z @ coef, Y, "softmax")
    return float(w @ per_row), Z.T @ (w[:, None] * dF)


def closing_fit_objective(Z, Y, kind, alpha, coef, w=None):
    """RFFNetClassifier's closing-fit objective, the weighted mean cross-entropy ("logistic": one
    output, or "softmax") of F = Z @ coef plus alpha ||coef||^2, and its gradient in coef."""
    p = np.full(Z.shape[0], 1.0 / Z.shape[0]) if w is None else np.asarray(w, np.float64) / np.sum(w)
    per_row, dF = loss_values(Z @ coef, Y, kind)
    return float(p @ per_row + alpha * np.sum(coef * coef)), Z.T @ (p[:, None] * dF) + 2.0 * alpha * coef


def loss_and_grad(X, Y, weights, offsets, coef, *, theta=None, loss="squared", scale=None, pair=False):
    """Mean loss L of f = Z coef and (L, dL/dcoef, dL/dtheta), by the chain rule written out:

    dL/dcoef = Z.T g / n with g = dl/df, and with dL/dU = g coef.T * dZ/dU,
    dL/dtheta_j = (1/n) sum_i X_ij sum_k W_jk dL/dU_ik.
    """
    n, s = X.shape[0], weights.shape[1]
    if scale is None:
        scale = default_scale(s, pair)
    ravel = coef.ndim == 1
    C = coef.reshape(-1, 1) if ravel else coef
    Y2 = Y.reshape(n, -1)
    U = pre_activation(X, weights, offsets, theta)
    Z = scale * (np.hstack([np.cos(U), np.sin(U)]) if pair else np.cos(U))
    per_sample, g = loss_values(Z @ C, Y2, loss)
    grad_coef = Z.T @ g / n
    gZ = g @ C.T
    if pair:
        dU = scale * (-np.sin(U) * gZ[:, :s] + np.cos(U) * gZ[:, s:])
    else:
        dU = -scale * np.sin(U) * gZ
    grad_theta = (X * (dU @ weights.T)).sum(axis=0) / n
    return per_sample.mean(), (grad_coef[:, 0] if ravel else grad_coef), grad_theta


def adam_prox_step(param, grad, m, v, step, *, learning_rate=1e-3, beta1=0.9, beta2=0.999, eps=1e-8,
                   l2=0.0, l1=0.0):
    """Returns the new (param, m, v) of one bias-corrected Adam step followed by the proxes."""
    m = beta1 * m + (1 - beta1) * grad
    v = beta2 * v + (1 - beta2) * grad**2
    m_hat = m / (1 - beta1**step)
    v_hat = v / (1 - beta2**step)
    p = param - learning_rate * m_hat / (np.sqrt(v_hat) + eps)
    return prox(p, learning_rate, l2, l1), m, v


def adam_shared_prox_step(param, grad, m, v, step, *, learning_rate=1e-3, beta1=0.9, beta2=0.999,
                          eps=1e-8, l2=0.0, l1=0.0):
    """Adam with one second moment for the block: every v_j tracks the block's mean of grad**2."""
    m = beta1 * m + (1 - beta1) * grad
    v = beta2 * v + (1 - beta2) * np.mean(grad**2)
    m_hat = m / (1 - beta1**step)
    v_hat = v / (1 - beta2**step)
    p = param - learning_rate * m_hat / (np.sqrt(v_hat) + eps)
    return prox(p, learning_rate, l2, l1), m, v


def sgd_prox_step(param, grad, *, learning_rate=1e-3, l2=0.0, l1=0.0):
    return prox(param - learning_rate * grad, learning_rate, l2, l1)


def prox(p, learning_rate, l2=0.0, l1=0.0):
    """prox of l2 ||p||^2 (p / (1 + 2 l2 lr)) followed by soft-thresholding by l1 lr."""
    p = p / (1 + 2 * l2 * learning_rate)
    if l1 > 0:
        p = np.sign(p) * np.maximum(np.abs(p) - l1 * learning_rate, 0.0)
    return p


def centered_rows(X, center):
    """The CSR arrays of :class:`rffkern.kernels.CenteredRows`, row by row: the entries of each row
    that differ from their column's center, in column order, as ``X[i, j] - center[j]``."""
    indptr, indices, values = [0], [], []
    for row in X:
        cols = [j for j in range(X.shape[1]) if row[j] != center[j]]
        indices += cols
        values += [row[j] - center[j] for j in cols]
        indptr.append(len(indices))
    return np.array(indptr, np.int64), np.array(indices, np.int32), np.array(values, X.dtype)


def train_epoch(X, Y, order, weights, offsets, theta, coef, state, *, batch_size=32, loss="squared",
                solver="adam", learning_rate=1e-3, beta1=0.9, beta2=0.999, eps=1e-8, l2_coef=0.0,
                l1_theta=0.0, update_coef=True, update_theta=True, scale=None, theta_moment="coordinate"):
    """The mini-batch loop of :func:`rffkern.kernels.train_epoch`; returns (mean loss, theta, coef).

    ``state`` is a dict with m_coef, v_coef, m_theta, v_theta and step; it is updated.
    """
    theta, coef = theta.copy(), coef.copy()
    losses = []
    for start in range(0, len(order), batch_size):
        idx = order[start:start + batch_size]
        value, g_coef, g_theta = loss_and_grad(X[idx], Y[idx], weights, offsets, coef, theta=theta,
                                               loss=loss, scale=scale)
        losses.append(value)
        state["step"] += 1
        t = state["step"]
        if solver == "adam":
            if update_coef:
                coef, state["m_coef"], state["v_coef"] = adam_prox_step(
                    coef, g_coef, state["m_coef"], state["v_coef"], t, learning_rate=learning_rate,
                    beta1=beta1, beta2=beta2, eps=eps, l2=l2_coef)
            if update_theta:
                step_theta = adam_shared_prox_step if theta_moment == "shared" else adam_prox_step
                theta, state["m_theta"], state["v_theta"] = step_theta(
                    theta, g_theta, state["m_theta"], state["v_theta"], t, learning_rate=learning_rate,
                    beta1=beta1, beta2=beta2, eps=eps, l1=l1_theta)
        else:
            if update_coef:
                coef = sgd_prox_step(coef, g_coef, learning_rate=learning_rate, l2=l2_coef)
            if update_theta:
                theta = sgd_prox_step(theta, g_theta, learning_rate=learning_rate, l1=l1_theta)
    return float(np.mean(losses)) if losses else 0.0, theta, coef


def matern_kernel(X, Y, length_scale, nu):
    """The Matérn kernel ``k(r) = 2^(1-nu) / Gamma(nu) z^nu K_nu(z)``, ``z = sqrt(2 nu) r / l``,
    ``k(0) = 1`` (Rasmussen & Williams 2006, eq. 4.14), with the closed forms of eqs. 4.16-4.17
    for nu = 1/2, 3/2 and 5/2 and the Bessel function ``scipy.special.kv`` otherwise."""
    from scipy.special import gamma, kv

    r = np.sqrt(((X[:, None, :] - Y[None, :, :]) ** 2).sum(-1)) / length_scale
    if nu == 0.5:
        return np.exp(-r)
    if nu == 1.5:
        a = np.sqrt(3.0) * r
        return (1.0 + a) * np.exp(-a)
    if nu == 2.5:
        a = np.sqrt(5.0) * r
        return (1.0 + a + a**2 / 3.0) * np.exp(-a)
    z = np.sqrt(2.0 * nu) * r
    with np.errstate(invalid="ignore"):  # 0 * inf at z = 0, where k is 1
        k = 2.0 ** (1.0 - nu) / gamma(nu) * z**nu * kv(nu, z)
    return np.where(z == 0, 1.0, k)
