"""``loss_and_grad(loss="linear")``: the backward pass of ``predict`` for any upstream gradient.

With ``Y = dL/df`` given, the linear loss ``mean_i Y_i . f_i`` has gradient ``Y`` in ``f``, so
``n`` times its gradients are ``dL/dcoef`` and ``dL/dtheta`` (what :mod:`rffkern.torch`'s backward
calls). Held to the NumPy reference under Hypothesis, both dtypes, 1 and 2 threads; no torch needed.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import reference
from rffkern import kernels
from _helpers import DTYPE_IDS, DTYPES, assert_within, f64, float_arrays, loss_grad_magnitudes, map_problem


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("n_threads", [1, 2], ids=["1thread", "2threads"])
@given(data=st.data())
def test_linear_loss_matches_reference(dtype, n_threads, data):
    X, W, b, th, pair = data.draw(map_problem(dtype, max_n=300))
    n_out = W.shape[1] * (2 if pair else 1)
    m = data.draw(st.integers(1, 3))
    coef = data.draw(float_arrays(dtype, (n_out, m), -2.0, 2.0))
    upstream = data.draw(float_arrays(dtype, (X.shape[0], m), -3.0, 3.0))
    value, gc, gt = kernels.loss_and_grad(X, upstream, W, b, coef, theta=th, loss="linear", pair=pair,
                                          n_threads=n_threads)
    ev, egc, egt = reference.loss_and_grad(f64(X), f64(upstream), f64(W), f64(b), f64(coef), theta=f64(th),
                                           loss="linear", pair=pair)
    lm, gcm, gtm = loss_grad_magnitudes(X, upstream, W, b, th, coef, "linear", pair)
    assert_within(value, ev, lm, dtype, "linear loss")
    assert_within(gc, egc, gcm, dtype, "linear grad_coef")
    assert_within(gt, egt, gtm, dtype, "linear grad_theta")


def test_linear_loss_is_the_chain_rule_of_predict():
    """n * gradients = Z^T G and the theta gradient of sum(G * predict) by central differences."""
    rng = np.random.default_rng(3)
    X, W = rng.normal(size=(40, 3)), rng.normal(size=(3, 11))
    b, th, coef = rng.uniform(0, 6, 11), rng.uniform(0.5, 1.5, 3), rng.normal(size=(11, 2))
    G = rng.normal(size=(40, 2))
    _, gc, gt = kernels.loss_and_grad(X, G, W, b, coef, theta=th, loss="linear")
    np.testing.assert_allclose(40 * gc, kernels.features(X, W, b, theta=th).T @ G, rtol=1e-12, atol=1e-12)
    h = 1e-6
    for j in range(3):
        e = np.eye(3)[j] * h
        diff = (np.sum(G * kernels.predict(X, W, b, coef, theta=th + e))
                - np.sum(G * kernels.predict(X, W, b, coef, theta=th - e))) / (2 * h)
        assert abs(40 * gt[j] - diff) < 1e-6 * max(1.0, abs(diff))


def test_train_epoch_refuses_the_linear_loss():
    X, Y = np.ones((4, 2)), np.ones((4, 1))
    state = kernels.AdamState((3, 1), 2, np.float64)
    with pytest.raises(ValueError, match="loss must be one of"):
        kernels.train_epoch(X, Y, np.arange(4), np.ones((2, 3)), None, np.ones(2), np.zeros((3, 1)), state,
                            loss="linear")
