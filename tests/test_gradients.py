"""Gradients of loss_and_grad agree with central finite differences of the reference loss.

float64, central differences with step h = 1e-5 (truncation error O(h^2) ~ 1e-10, rounding
~ 1e-16 / h ~ 1e-11): the analytic gradient (reference and compiled) must match the finite
difference to 1e-6 relative to the gradient's max-norm (plus 1e-9 absolute).  Every loss, phase
and pair forms, with and without theta (None means the gradient at theta = 1) and offsets,
1-D and 2-D coef.
"""
from __future__ import annotations

import zlib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import reference
from rffkern import kernels
from _helpers import loss_targets

H = 1e-5
RTOL = 1e-6


def _loss(X, Y, W, b, coef, theta, loss, pair):
    return reference.loss_and_grad(X, Y, W, b, coef, theta=theta, loss=loss, pair=pair)[0]


def finite_difference_grads(X, Y, W, b, coef, theta, loss, pair):
    gc = np.zeros_like(coef)
    for idx in np.ndindex(coef.shape):
        cp, cm = coef.copy(), coef.copy()
        cp[idx] += H
        cm[idx] -= H
        gc[idx] = (_loss(X, Y, W, b, cp, theta, loss, pair) - _loss(X, Y, W, b, cm, theta, loss, pair)) / (2 * H)
    th0 = np.ones(X.shape[1]) if theta is None else theta
    gt = np.zeros(X.shape[1])
    for j in range(X.shape[1]):
        tp, tm = th0.copy(), th0.copy()
        tp[j] += H
        tm[j] -= H
        gt[j] = (_loss(X, Y, W, b, coef, tp, loss, pair) - _loss(X, Y, W, b, coef, tm, loss, pair)) / (2 * H)
    return gc, gt


def assert_grad_close(analytic, fd, what):
    tol = RTOL * max(np.max(np.abs(fd)), 1.0) + 1e-9
    err = np.max(np.abs(np.asarray(analytic) - fd))
    assert err <= tol, f"{what}: max |analytic - finite difference| = {err:.3g} > {tol:.3g}"


def _problem(rng, loss, pair, with_theta, with_offsets, one_d, n=37, d=4, s=9, m=3):
    X = rng.normal(size=(n, d))
    W = rng.normal(size=(d, s))
    b = rng.uniform(0, 2 * np.pi, s) if with_offsets else None
    theta = rng.uniform(-1.5, 1.5, d) if with_theta else None
    m = 1 if one_d else m
    coef = rng.normal(size=(s * (2 if pair else 1), m))
    Y = loss_targets(rng, loss, n, m, np.float64)
    if one_d:
        coef, Y = coef[:, 0], Y[:, 0]
    return X, Y, W, b, coef, theta


@pytest.mark.parametrize("loss", kernels.LOSSES)
@pytest.mark.parametrize("pair", [False, True], ids=["phase", "pair"])
@pytest.mark.parametrize("with_theta", [False, True], ids=["theta_none", "theta"])
@pytest.mark.parametrize("with_offsets", [False, True], ids=["no_b", "b"])
def test_gradients_match_finite_differences(loss, pair, with_theta, with_offsets):
    rng = np.random.default_rng(zlib.crc32(repr((loss, pair, with_theta, with_offsets)).encode()))
    for one_d in ([False] if loss == "softmax" else [False, True]):
        X, Y, W, b, coef, theta = _problem(rng, loss, pair, with_theta, with_offsets, one_d)
        fd_c, fd_t = finite_difference_grads(X, Y, W, b, coef, theta, loss, pair)
        _, rc, rt = reference.loss_and_grad(X, Y, W, b, coef, theta=theta, loss=loss, pair=pair)
        _, kc, kt = kernels.loss_and_grad(X, Y, W, b, coef, theta=theta, loss=loss, pair=pair, n_threads=2)
        # the finite differences are not trivially zero (a vacuous comparison)
        assert np.max(np.abs(fd_c)) > 1e-3 and np.max(np.abs(fd_t)) > 1e-3
        assert_grad_close(rc, fd_c, f"reference {loss} d/dcoef")
        assert_grad_close(rt, fd_t, f"reference {loss} d/dtheta")
        assert_grad_close(kc, fd_c, f"compiled {loss} d/dcoef")
        assert_grad_close(kt, fd_t, f"compiled {loss} d/dtheta")


def test_explicit_scale_gradients():
    """A non-default scale c (the RFFNet reference code uses c = 1) enters both gradients."""
    rng = np.random.default_rng(4)
    X, Y, W, b, coef, theta = _problem(rng, "squared", False, True, True, False)

    def L(c, t):
        return reference.loss_and_grad(X, Y, W, b, c, theta=t, loss="squared", scale=1.0)[0]

    _, kc, kt = kernels.loss_and_grad(X, Y, W, b, coef, theta=theta, loss="squared", scale=1.0)
    e = np.zeros_like(theta)
    e[2] = H
    fd = (L(coef, theta + e) - L(coef, theta - e)) / (2 * H)
    assert abs(kt[2] - fd) <= RTOL * max(abs(fd), 1) + 1e-9
    E = np.zeros_like(coef)
    E[3, 1] = H
    fd = (L(coef + E, theta) - L(coef - E, theta)) / (2 * H)
    assert abs(kc[3, 1] - fd) <= RTOL * max(abs(fd), 1) + 1e-9


@settings(max_examples=15)
@given(
    loss=st.sampled_from(kernels.LOSSES),
    pair=st.booleans(),
    n=st.integers(1, 300),
    d=st.integers(1, 5),
    s=st.integers(1, 13),
    seed=st.integers(0, 2**32 - 1),
)
def test_gradients_match_finite_differences_hypothesis(loss, pair, n, d, s, seed):
    rng = np.random.default_rng(seed)
    X, Y, W, b, coef, theta = _problem(rng, loss, pair, True, True, False, n=n, d=d, s=s, m=2)
    fd_c, fd_t = finite_difference_grads(X, Y, W, b, coef, theta, loss, pair)
    _, kc, kt = kernels.loss_and_grad(X, Y, W, b, coef, theta=theta, loss=loss, pair=pair, n_threads=2)
    assert_grad_close(kc, fd_c, f"compiled {loss} d/dcoef")
    assert_grad_close(kt, fd_t, f"compiled {loss} d/dtheta")


# ---- the reference itself against the maths written out by hand ----------------------------------
def test_reference_losses_are_the_documented_formulas():
    rng = np.random.default_rng(12)
    F = rng.normal(size=(9, 3)) * 3
    Y = rng.normal(size=(9, 3))
    per, g = reference.loss_values(F, Y, "squared")
    np.testing.assert_allclose(per, 0.5 * ((F - Y) ** 2).sum(1), rtol=1e-14)
    np.testing.assert_allclose(g, F - Y, rtol=1e-14)
    Yb = (Y > 0).astype(float)
    per, g = reference.loss_values(F, Yb, "logistic")
    np.testing.assert_allclose(per, (np.log(1 + np.exp(F)) - Yb * F).sum(1), rtol=1e-12)
    np.testing.assert_allclose(g, 1 / (1 + np.exp(-F)) - Yb, rtol=1e-12, atol=1e-15)
    Yh = np.eye(3)[rng.integers(0, 3, 9)]
    P = np.exp(F) / np.exp(F).sum(1, keepdims=True)
    per, g = reference.loss_values(F, Yh, "softmax")
    np.testing.assert_allclose(per, -(Yh * np.log(P)).sum(1), rtol=1e-12)
    np.testing.assert_allclose(g, P - Yh, rtol=1e-12, atol=1e-15)


def test_logistic_and_softmax_do_not_overflow():
    """Outputs of +-800 (exp overflows float64): finite loss and gradient, compiled and reference."""
    X = np.array([[1.0], [-1.0]])
    W = np.zeros((1, 1))
    b = np.zeros(1)
    for loss, Y, coef in (("logistic", np.array([[0.0], [1.0]]), np.array([[800.0]])),
                          ("softmax", np.array([[0.0, 1.0], [1.0, 0.0]]), np.array([[800.0, -800.0]]))):
        for fn in (reference.loss_and_grad, kernels.loss_and_grad):
            value, gc, gt = fn(X, Y, W, b, coef, loss=loss, scale=1.0)
            assert np.isfinite(value) and np.all(np.isfinite(gc)) and np.all(np.isfinite(gt))
            # rows: f = 800 (y = 0) and f = 800 (y = 1) -> (800 + 0) / 2; softmax (1600 + 0) / 2
            assert abs(value - (400.0 if loss == "logistic" else 800.0)) < 1e-9 * 1600


def test_first_adam_step_moves_by_learning_rate_times_sign():
    """Step 1: m_hat = g and v_hat = g^2, so the update is -lr * g / (|g| + eps); then the proxes."""
    g = np.array([2.0, -0.5, 1e-3, 0.0])
    for fn in ("reference", "kernels"):
        p, m, v = np.ones(4), np.zeros(4), np.zeros(4)
        if fn == "reference":
            p, m, v = reference.adam_prox_step(p, g, m, v, 1, learning_rate=0.1, eps=1e-8)
        else:
            kernels.adam_prox_step(p, g, m, v, 1, learning_rate=0.1, eps=1e-8)
        np.testing.assert_allclose(p, 1 - 0.1 * g / (np.abs(g) + 1e-8), rtol=1e-12)
        np.testing.assert_allclose(m, 0.1 * g, rtol=1e-12)
        np.testing.assert_allclose(v, 0.001 * g**2, rtol=1e-12)
    # l2 prox divides by 1 + 2 l2 lr, then l1 soft-thresholds by l1 lr
    p = np.array([1.0, -1.0, 0.05, -0.05])
    kernels.sgd_prox_step(p, np.zeros(4), learning_rate=0.5, l2=1.0, l1=0.2)
    np.testing.assert_allclose(p, [0.5 - 0.1, -0.5 + 0.1, 0.0, 0.0], rtol=1e-12)
