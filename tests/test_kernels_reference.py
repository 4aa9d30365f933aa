"""Every compiled kernel equals the NumPy reference (tests/reference.py) under Hypothesis.

Shapes include n = 1, d = 1, s = 1 and sizes that are multiples of no tile or vector width
(s up to 70 spans several NR-column panels; n up to 600 spans several 256-row blocks of gram
and loss_and_grad).  Both dtypes, 1 and 2 threads.  Tolerance: see tests/_helpers.py
(elementwise ``TOL[dtype] * magnitude`` with TOL = 1e-10 for float64 and 2e-4 for float32, the
magnitude being the kernel evaluated on absolute values).
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import reference
from rffkern import kernels
from _helpers import (
    DTYPE_IDS,
    DTYPES,
    TOL,
    assert_within,
    available_isas,
    f64,
    feature_magnitude,
    float_arrays,
    isa,
    loss_grad_magnitudes,
    loss_targets,
    map_problem,
)

dtypes = pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
threads = pytest.mark.parametrize("n_threads", [1, 2], ids=["1thread", "2threads"])


def test_tolerance_table_is_conftests():
    import conftest

    assert TOL == conftest.TOLERANCE


def test_every_isa_of_this_cpu_is_listed():
    isas = available_isas()
    assert isas[0] == "baseline"
    with isa("auto"):
        from rffkern import _core

        assert _core.active_isa() in isas


# an explicit scale c (None = the default sqrt(2/s) or sqrt(1/s)); |c| >= 1e-3 so that it is a
# normal float32 (a subnormal c rounds to 0 in float32, which is not what is being tested)
scales = st.one_of(st.none(), st.just(1.0), st.just(0.0), st.floats(1e-3, 3.0), st.floats(-3.0, -1e-3))


# ---- features ------------------------------------------------------------------------------------
@dtypes
@threads
@given(data=st.data())
def test_features(dtype, n_threads, data):
    X, W, b, th, pair = data.draw(map_problem(dtype))
    scale = data.draw(scales)
    Z = kernels.features(X, W, b, theta=th, scale=scale, pair=pair, n_threads=n_threads)
    assert Z.dtype == dtype and Z.flags.c_contiguous
    assert Z.shape == (X.shape[0], W.shape[1] * (2 if pair else 1))
    expected = reference.features(f64(X), f64(W), f64(b), theta=f64(th), scale=scale, pair=pair)
    assert_within(Z, expected, feature_magnitude(X, W, b, th, pair, scale), dtype, "features")


@pytest.mark.parametrize("isa_name", available_isas())
@dtypes
def test_pair_features_sin_cos_are_accurate_to_a_few_ulp(isa_name, dtype):
    # U = x exactly (d = 1, W = 1, b = 0, scale 1), so cos and sin are checked alone, in ulp of
    # the dtype, against NumPy's float64 values of the same x: the fused sin/cos reduction of the
    # AVX2/AVX-512 builds, around multiples of pi/2 (where the reduction cancels), up to and past
    # the range where it hands over to libmvec (2^17 for float32, 2^30 for float64).
    rng = np.random.default_rng(0)
    limit = 2.0**17 if dtype == np.float32 else 2.0**30
    k = np.arange(-4000, 4000)
    x = np.concatenate([
        rng.uniform(-1, 1, 4000), rng.uniform(-100, 100, 4000),
        np.sign(rng.standard_normal(4000)) * np.exp(rng.uniform(0, np.log(4 * limit), 4000)),
        k * (np.pi / 2) + rng.uniform(-1e-3, 1e-3, k.size),
        [0.0, -0.0, np.pi / 4, -np.pi / 4, limit, -limit, 2 * limit, 1e-30],
    ]).astype(dtype)
    X = x[:, None]
    W = np.ones((1, 40), dtype)
    with isa(isa_name):
        Z = kernels.features(X, W, np.zeros(40, dtype), scale=1.0, pair=True)
    x64 = x.astype(np.float64)
    for got, exact in ((Z[:, :40], np.cos(x64)), (Z[:, 40:], np.sin(x64))):
        ulp = np.spacing(np.abs(exact).astype(dtype)).astype(np.float64)
        err = np.abs(got.astype(np.float64) - exact[:, None]) / ulp[:, None]
        assert err.max() <= 4.0, f"{err.max():.1f} ulp at x = {x[np.argmax(err.max(axis=1))]!r}"


@dtypes
@given(data=st.data())
def test_features_into_out(dtype, data):
    X, W, b, th, pair = data.draw(map_problem(dtype, max_n=40))
    out = np.full((X.shape[0], W.shape[1] * (2 if pair else 1)), np.nan, dtype)
    Z = kernels.features(X, W, b, theta=th, pair=pair, out=out, n_threads=2)
    assert Z is out
    expected = reference.features(f64(X), f64(W), f64(b), theta=f64(th), pair=pair)
    assert_within(out, expected, feature_magnitude(X, W, b, th, pair), dtype, "features out=")


# ---- predict -------------------------------------------------------------------------------------
@dtypes
@threads
@given(data=st.data())
def test_predict(dtype, n_threads, data):
    X, W, b, th, pair = data.draw(map_problem(dtype))
    n_out = W.shape[1] * (2 if pair else 1)
    one_d = data.draw(st.booleans())
    m = 1 if one_d else data.draw(st.integers(1, 5))
    coef = data.draw(float_arrays(dtype, (n_out,) if one_d else (n_out, m), -2.0, 2.0))
    F = kernels.predict(X, W, b, coef, theta=th, pair=pair, n_threads=n_threads)
    assert F.dtype == dtype
    assert F.shape == ((X.shape[0],) if one_d else (X.shape[0], m))
    expected = reference.predict(f64(X), f64(W), f64(b), f64(coef), theta=f64(th), pair=pair)
    mag = feature_magnitude(X, W, b, th, pair) @ np.abs(f64(coef))
    assert_within(F, expected, mag, dtype, "predict")


# ---- gram ----------------------------------------------------------------------------------------
@dtypes
@threads
@given(data=st.data())
def test_gram(dtype, n_threads, data):
    X, W, b, th, pair = data.draw(map_problem(dtype))
    M = feature_magnitude(X, W, b, th, pair)
    y_kind = data.draw(st.sampled_from(["none", "1d", "2d"]))
    if y_kind == "none":
        G = kernels.gram(X, W, b, theta=th, pair=pair, n_threads=n_threads)
        expected = reference.gram(f64(X), f64(W), f64(b), theta=f64(th), pair=pair)
        assert_within(G, expected, M.T @ M, dtype, "gram")
        return
    yshape = (X.shape[0],) if y_kind == "1d" else (X.shape[0], data.draw(st.integers(1, 4)))
    Y = data.draw(float_arrays(dtype, yshape, -3.0, 3.0))
    G, ZtY = kernels.gram(X, W, b, Y, theta=th, pair=pair, n_threads=n_threads)
    eG, eZtY = reference.gram(f64(X), f64(W), f64(b), f64(Y), theta=f64(th), pair=pair)
    assert G.dtype == dtype and ZtY.dtype == dtype
    assert_within(G, eG, M.T @ M, dtype, "gram G")
    assert_within(ZtY, eZtY, M.T @ np.abs(f64(Y)), dtype, "gram ZtY")
    assert np.array_equal(G, G.T), "the Gram matrix must be exactly symmetric"


@dtypes
@threads
@given(data=st.data())
def test_gram_accumulates_over_two_chunks(dtype, n_threads, data):
    X, W, b, th, pair = data.draw(map_problem(dtype, min_n=2))
    n = X.shape[0]
    cut = data.draw(st.integers(0, n))  # an empty chunk is allowed too
    with_y = data.draw(st.booleans())
    Y = data.draw(float_arrays(dtype, (n, 2), -3.0, 3.0)) if with_y else None
    n_out = W.shape[1] * (2 if pair else 1)
    G = np.zeros((n_out, n_out), dtype)
    ZtY = np.zeros((n_out, 2), dtype) if with_y else None
    for lo, hi in ((0, cut), (cut, n)):
        kernels.gram(X[lo:hi], W, b, None if Y is None else Y[lo:hi], theta=th, pair=pair, out=G,
                     out_zty=ZtY, accumulate=True, n_threads=n_threads)
    M = feature_magnitude(X, W, b, th, pair)
    res = reference.gram(f64(X), f64(W), f64(b), f64(Y), theta=f64(th), pair=pair)
    eG, eZtY = res if with_y else (res, None)
    assert_within(G, eG, M.T @ M, dtype, "accumulated gram G")
    if with_y:
        assert_within(ZtY, eZtY, M.T @ np.abs(f64(Y)), dtype, "accumulated gram ZtY")


def test_gram_accumulate_adds_to_the_previous_content():
    rng = np.random.default_rng(0)
    X, W = rng.normal(size=(30, 3)), rng.normal(size=(3, 5))
    G0 = rng.normal(size=(5, 5))
    G = G0.copy()
    kernels.gram(X, W, out=G, accumulate=True)
    np.testing.assert_allclose(G, G0 + reference.gram(X, W), rtol=1e-12, atol=1e-12)
    kernels.gram(X, W, out=G)  # accumulate=False overwrites
    np.testing.assert_allclose(G, reference.gram(X, W), rtol=1e-12, atol=1e-12)


# ---- loss_and_grad -------------------------------------------------------------------------------
@st.composite
def loss_problem(draw, dtype, loss=None, max_n=600):
    X, W, b, th, pair = draw(map_problem(dtype, max_n=max_n))
    loss = draw(st.sampled_from(kernels.LOSSES)) if loss is None else loss
    n_out = W.shape[1] * (2 if pair else 1)
    one_d = loss != "softmax" and draw(st.booleans())
    m = 1 if one_d else draw(st.integers(1 if loss != "softmax" else 2, 4))
    coef = draw(float_arrays(dtype, (n_out,) if one_d else (n_out, m), -2.0, 2.0))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    Y = loss_targets(rng, loss, X.shape[0], m, dtype)
    if one_d:
        Y = Y[:, 0]
    return X, Y, W, b, th, pair, coef, loss


@dtypes
@threads
@given(data=st.data())
def test_loss_and_grad(dtype, n_threads, data):
    X, Y, W, b, th, pair, coef, loss = data.draw(loss_problem(dtype))
    want_theta = data.draw(st.booleans())
    value, gc, gt = kernels.loss_and_grad(X, Y, W, b, coef, theta=th, loss=loss, pair=pair,
                                          want_theta=want_theta, n_threads=n_threads)
    ev, egc, egt = reference.loss_and_grad(f64(X), f64(Y), f64(W), f64(b), f64(coef), theta=f64(th),
                                           loss=loss, pair=pair)
    lm, gcm, gtm = loss_grad_magnitudes(X, Y, W, b, th, coef, loss, pair)
    assert isinstance(value, float)
    assert gc.dtype == dtype and gc.shape == coef.shape
    assert_within(value, ev, lm, dtype, f"{loss} loss")
    assert_within(gc, egc, gcm, dtype, f"{loss} grad_coef")
    if want_theta:
        assert gt.dtype == dtype and gt.shape == (X.shape[1],)
        assert_within(gt, egt, gtm, dtype, f"{loss} grad_theta")
    else:
        assert gt is None


@pytest.mark.parametrize("loss", kernels.LOSSES)
@pytest.mark.parametrize("pair", [False, True], ids=["phase", "pair"])
@pytest.mark.parametrize("with_theta", [False, True], ids=["no_theta", "theta"])
@pytest.mark.parametrize("with_offsets", [False, True], ids=["no_b", "b"])
def test_loss_and_grad_every_combination(loss, pair, with_theta, with_offsets):
    """Fixed-seed sweep so that each (loss, pair, theta, offsets) combination is certainly run,
    with 600 rows (three 256-row blocks) in float64 and float32."""
    rng = np.random.default_rng(7)
    n, d, s, m = 600, 5, 37, 3
    for dtype in DTYPES:
        X = rng.uniform(-2, 2, (n, d)).astype(dtype)
        W = rng.normal(size=(d, s)).astype(dtype)
        b = rng.uniform(0, 2 * np.pi, s).astype(dtype) if with_offsets else None
        th = rng.uniform(-1.5, 1.5, d).astype(dtype) if with_theta else None
        coef = rng.normal(size=(s * (2 if pair else 1), m)).astype(dtype)
        Y = loss_targets(rng, loss, n, m, dtype)
        got = kernels.loss_and_grad(X, Y, W, b, coef, theta=th, loss=loss, pair=pair, n_threads=2)
        exp = reference.loss_and_grad(f64(X), f64(Y), f64(W), f64(b), f64(coef), theta=f64(th),
                                      loss=loss, pair=pair)
        mags = loss_grad_magnitudes(X, Y, W, b, th, coef, loss, pair)
        for name, g, e, mag in zip(("loss", "grad_coef", "grad_theta"), got, exp, mags):
            assert_within(g, e, mag, dtype, f"{loss} {name} {np.dtype(dtype)}")


# ---- optimiser steps -----------------------------------------------------------------------------
param_shapes = st.one_of(
    st.tuples(st.integers(1, 80)),
    st.tuples(st.integers(1, 20), st.integers(1, 5)),
)


@dtypes
@threads
@given(data=st.data())
def test_adam_prox_step(dtype, n_threads, data):
    shape = data.draw(param_shapes)
    p = data.draw(float_arrays(dtype, shape, -3.0, 3.0))
    g = data.draw(float_arrays(dtype, shape, -3.0, 3.0))
    m = data.draw(float_arrays(dtype, shape, -1.0, 1.0))
    v = data.draw(float_arrays(dtype, shape, 0.0, 1.0))
    step = data.draw(st.integers(1, 1000))
    lr = data.draw(st.floats(1e-4, 0.5))
    beta1 = data.draw(st.one_of(st.just(0.0), st.floats(0.01, 0.99)))
    beta2 = data.draw(st.floats(0.5, 0.9999))
    eps = data.draw(st.floats(1e-3, 1e-1))
    reg = data.draw(st.sampled_from(["none", "l2", "l1", "both"]))
    l2 = data.draw(st.floats(0.0, 2.0)) if reg in ("l2", "both") else 0.0
    l1 = data.draw(st.floats(0.0, 2.0)) if reg in ("l1", "both") else 0.0
    ep, em, ev = reference.adam_prox_step(f64(p), f64(g), f64(m), f64(v), step, learning_rate=lr,
                                          beta1=beta1, beta2=beta2, eps=eps, l2=l2, l1=l1)
    P, Mo, Vo = p.copy(), m.copy(), v.copy()
    ret = kernels.adam_prox_step(P, g, Mo, Vo, step, learning_rate=lr, beta1=beta1, beta2=beta2,
                                 eps=eps, l2=l2, l1=l1, n_threads=n_threads)
    assert ret is P
    # elementwise: a few ulp of each intermediate (the moments, the Adam step, the prox)
    g64 = f64(g)
    m_mag = beta1 * np.abs(f64(m)) + (1 - beta1) * np.abs(g64)
    v_mag = beta2 * np.abs(f64(v)) + (1 - beta2) * g64**2
    assert_within(Mo, em, m_mag, dtype, "adam m", elementwise=True)
    assert_within(Vo, ev, v_mag, dtype, "adam v", elementwise=True)
    v_hat = ev / (1 - beta2**step)
    step_mag = lr * (np.abs(em) / (1 - beta1**step)) / (np.sqrt(v_hat) + eps)
    # the step's rounding plus its sensitivity to the rounding of v (d step / d v ~ step / (2 v))
    p_mag = np.abs(f64(p)) + step_mag * (1 + 0.5 * v_mag / np.maximum(ev, 1e-300) + 1) + lr * l1
    assert_within(P, ep, p_mag, dtype, "adam param", elementwise=True)


@dtypes
@threads
@given(data=st.data())
def test_sgd_prox_step(dtype, n_threads, data):
    shape = data.draw(param_shapes)
    p = data.draw(float_arrays(dtype, shape, -3.0, 3.0))
    g = data.draw(float_arrays(dtype, shape, -3.0, 3.0))
    lr = data.draw(st.floats(1e-4, 0.5))
    reg = data.draw(st.sampled_from(["none", "l2", "l1", "both"]))
    l2 = data.draw(st.floats(0.0, 2.0)) if reg in ("l2", "both") else 0.0
    l1 = data.draw(st.floats(0.0, 2.0)) if reg in ("l1", "both") else 0.0
    expected = reference.sgd_prox_step(f64(p), f64(g), learning_rate=lr, l2=l2, l1=l1)
    P = p.copy()
    assert kernels.sgd_prox_step(P, g, learning_rate=lr, l2=l2, l1=l1, n_threads=n_threads) is P
    assert_within(P, expected, np.abs(f64(p)) + lr * np.abs(f64(g)) + lr * l1, dtype, "sgd param",
                  elementwise=True)


def test_prox_steps_large_arrays_use_the_parallel_path():
    """Above 2**15 entries the steps run an OpenMP loop: still the reference, same bits for 1/2."""
    rng = np.random.default_rng(3)
    n = 70_001
    p, g = rng.normal(size=n), rng.normal(size=n)
    m, v = rng.normal(size=n) * 0.1, rng.uniform(0, 1, n)
    ep, em, ev = reference.adam_prox_step(p, g, m, v, 5, learning_rate=0.01, l2=0.3, l1=0.01)
    outs = []
    for t in (1, 2):
        P, Mo, Vo = p.copy(), m.copy(), v.copy()
        kernels.adam_prox_step(P, g, Mo, Vo, 5, learning_rate=0.01, l2=0.3, l1=0.01, n_threads=t)
        np.testing.assert_allclose(P, ep, rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(Mo, em, rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(Vo, ev, rtol=1e-12, atol=1e-14)
        S = p.copy()
        kernels.sgd_prox_step(S, g, learning_rate=0.05, l2=0.2, l1=0.02, n_threads=t)
        np.testing.assert_allclose(S, reference.sgd_prox_step(p, g, learning_rate=0.05, l2=0.2, l1=0.02),
                                   rtol=1e-12, atol=1e-14)
        outs.append((P, Mo, Vo, S))
    for a, b in zip(*outs):
        assert np.array_equal(a, b)


# ---- train_epoch ---------------------------------------------------------------------------------
def _state(coef_shape, d, dtype, rng=None, step=0):
    st_ = kernels.AdamState(coef_shape, d, dtype)
    if rng is not None:  # a warm state, as after earlier epochs
        st_.m_coef[...] = rng.normal(size=coef_shape) * 0.01
        st_.v_coef[...] = rng.uniform(0, 1e-3, coef_shape)
        st_.m_theta[...] = rng.normal(size=d) * 0.01
        st_.v_theta[...] = rng.uniform(0, 1e-3, d)
    st_.step = step
    return st_


def _ref_state(s):
    return {"m_coef": f64(s.m_coef).copy(), "v_coef": f64(s.v_coef).copy(),
            "m_theta": f64(s.m_theta).copy(), "v_theta": f64(s.v_theta).copy(), "step": s.step}


def _check_train_epoch(X, Y, order, W, b, theta, coef, state, dtype, n_threads, rows=None, **kw):
    """One compiled epoch (on ``rows`` when given: X's centered sparse rows) against the reference
    epoch on X."""
    rs = _ref_state(state)
    e_loss, e_theta, e_coef = reference.train_epoch(f64(X), f64(Y), order, f64(W), f64(b), f64(theta),
                                                    f64(coef), rs, **kw)
    th, C = theta.copy(), coef.copy()
    value = kernels.train_epoch(X, Y, order, W, b, th, C, state, n_threads=n_threads, rows=rows, **kw)
    nsteps = -(-len(order) // kw.get("batch_size", 32))
    assert state.step == rs["step"]
    # Each step's parameter change is bounded by lr * (1 + 1/eps) (Adam) or lr * |grad| (SGD); a
    # rounding of relative size TOL in the gradient perturbs it by at most that much per step.
    lr, eps = kw["learning_rate"], kw.get("eps", 1e-8)
    amp = (1 + 1 / eps) if kw.get("solver", "adam") == "adam" else 100.0
    lm = loss_grad_magnitudes(X[order], Y[order], W, b, e_theta, e_coef, kw["loss"], False)[0] if len(order) else 1.0
    assert_within(value, e_loss, 10 * lm * (1 + nsteps), dtype, "train_epoch mean loss")
    assert_within(th, e_theta, (1 + np.abs(e_theta)) * (1 + nsteps * lr * amp), dtype, "train_epoch theta")
    assert_within(C, e_coef, (1 + np.abs(e_coef)) * (1 + nsteps * lr * amp), dtype, "train_epoch coef")
    for name in ("m_coef", "v_coef", "m_theta", "v_theta"):
        assert_within(getattr(state, name), rs[name], 1 + np.abs(rs[name]) * nsteps, dtype, f"state.{name}")
    if not kw.get("update_theta", True):
        assert np.array_equal(th, theta), "update_theta=False must leave theta unchanged"
    if not kw.get("update_coef", True):
        assert np.array_equal(C, coef), "update_coef=False must leave coef unchanged"
    return th, C


@dtypes
@threads
@given(data=st.data())
def test_train_epoch(dtype, n_threads, data):
    X, W, b, th, _ = data.draw(map_problem(dtype, max_n=300, max_d=6, max_s=40, theta=True, pair=False))
    n, d = X.shape
    s = W.shape[1]
    loss = data.draw(st.sampled_from(kernels.LOSSES))
    m = data.draw(st.integers(2 if loss == "softmax" else 1, 3))
    coef = data.draw(float_arrays(dtype, (s, m), -1.0, 1.0))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    Y = loss_targets(rng, loss, n, m, dtype)
    kind = data.draw(st.sampled_from(["perm", "with_repeats", "subset"]))
    if kind == "perm":
        order = rng.permutation(n)
    elif kind == "with_repeats":
        order = rng.integers(0, n, data.draw(st.integers(1, 2 * n)))
    else:
        order = rng.permutation(n)[: data.draw(st.integers(0, n))]
    solver = data.draw(st.sampled_from(["adam", "sgd"]))
    flags = data.draw(st.sampled_from([(True, True), (True, False), (False, True)]))
    state = _state((s, m), d, dtype, rng if data.draw(st.booleans()) else None,
                   step=data.draw(st.integers(0, 50)))
    kw = dict(batch_size=data.draw(st.one_of(st.integers(1, 64), st.just(300))), loss=loss, solver=solver,
              learning_rate=data.draw(st.floats(1e-3, 0.05)), eps=data.draw(st.floats(1e-2, 1e-1)),
              l2_coef=data.draw(st.sampled_from([0.0, 0.5])), l1_theta=data.draw(st.sampled_from([0.0, 0.05])),
              update_coef=flags[0], update_theta=flags[1],
              theta_moment=data.draw(st.sampled_from(["coordinate", "shared"])))
    _check_train_epoch(X, Y, order, W, b, th, coef, state, dtype, n_threads, **kw)


@pytest.mark.parametrize("solver", ["adam", "sgd"])
@pytest.mark.parametrize("loss", kernels.LOSSES)
def test_train_epoch_default_hyperparameters_three_epochs(solver, loss):
    """float64, Adam's default eps = 1e-8, three consecutive epochs with the state carried over."""
    rng = np.random.default_rng(11)
    n, d, s, m = 700, 4, 29, 3
    X = rng.normal(size=(n, d))
    W = rng.normal(size=(d, s))
    b = rng.uniform(0, 2 * np.pi, s)
    theta = rng.uniform(0.5, 1.5, d)
    coef = rng.normal(size=(s, m)) * 0.3
    Y = loss_targets(rng, loss, n, m, np.float64)
    state = kernels.AdamState((s, m), d, np.float64)
    for epoch in range(3):
        order = rng.permutation(n)
        theta, coef = _check_train_epoch(X, Y, order, W, b, theta, coef, state, np.float64, 2,
                                         batch_size=300, loss=loss, solver=solver, learning_rate=1e-2,
                                         l2_coef=1e-3, l1_theta=1e-3)
    assert state.step == 9


# ---- logistic loss on given features (the classifier's closing fit) ------------------------------
@st.composite
def logistic_problem(draw, dtype):
    n, s = draw(st.integers(1, 600)), draw(st.integers(1, 70))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    Z = (rng.normal(size=(n, s)) * draw(st.sampled_from([0.1, 1.0, 5.0]))).astype(dtype)
    coef = rng.normal(size=s).astype(dtype)
    y = (rng.random(n) < 0.5).astype(np.float64)
    w = draw(st.sampled_from([None, "uniform", "signed"]))
    if w is not None:
        w = rng.uniform(0, 2, n) if w == "uniform" else rng.normal(size=n)
    return Z, y, coef, w


@dtypes
@threads
@given(data=st.data())
def test_logistic_loss_grad(dtype, n_threads, data):
    """One fused pass equals loss_values on Z @ coef; n up to 600 spans several 256-row chunks,
    s up to 70 every vector-width remainder; logits up to |f| ~ 40 (the loss's linear tails)."""
    Z, y, coef, w = data.draw(logistic_problem(dtype))
    value, grad = kernels.logistic_loss_grad(Z, y, coef, w, n_threads=n_threads)
    ev, eg = reference.logistic_loss_grad(f64(Z), y, f64(coef), w)
    aw = np.ones(len(y)) if w is None else np.abs(w)
    F = np.abs(f64(Z)) @ np.abs(f64(coef))  # the logits' magnitude: their round-off bounds the error
    assert isinstance(value, float) and grad.dtype == np.float64 and grad.shape == coef.shape
    assert_within(value, ev, aw @ (1.0 + F), dtype, "logistic loss")
    assert_within(grad, eg, np.abs(f64(Z)).T @ (aw * (1.0 + F)), dtype, "logistic grad")


def test_logistic_loss_grad_refuses_bad_input():
    Z = np.ones((3, 2))
    with pytest.raises(ValueError, match="targets y in"):
        kernels.logistic_loss_grad(Z, [0.0, 2.0, 1.0], np.zeros(2))
    with pytest.raises(ValueError, match="coef must have shape"):
        kernels.logistic_loss_grad(Z, [0.0, 1.0, 1.0], np.zeros(3))
    with pytest.raises(ValueError, match="sample_weight"):
        kernels.logistic_loss_grad(Z, [0.0, 1.0, 1.0], np.zeros(2), [1.0, np.nan, 1.0])
    with pytest.raises(ValueError, match="Z"):
        kernels.logistic_loss_grad(np.full((3, 2), np.inf), [0.0, 1.0, 1.0], np.zeros(2))
    with pytest.raises(ValueError):
        kernels.logistic_loss_grad(np.ones((0, 2)), [], np.zeros(2))
    Zc = Z.copy()
    kernels.logistic_loss_grad(Zc, [0.0, 1.0, 1.0], np.ones(2))
    np.testing.assert_array_equal(Zc, Z)  # the caller's arrays are never modified


@st.composite
def softmax_problem(draw, dtype, max_rows=600, features=(1, 70)):
    n, s, m = draw(st.integers(1, max_rows)), draw(st.integers(*features)), draw(st.integers(2, 11))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    Z = (rng.normal(size=(n, s)) * draw(st.sampled_from([0.1, 1.0, 5.0]))).astype(dtype)
    coef = rng.normal(size=(s, m)).astype(dtype)
    if draw(st.booleans()):
        Y = np.eye(m)[rng.integers(m, size=n)]  # one-hot rows, as in the closing fit
    else:
        Y = rng.uniform(0, 1, (n, m)) * (rng.random((n, m)) < 0.5)  # class weights, rows summing to anything
    w = draw(st.sampled_from([None, "uniform", "signed"]))
    if w is not None:
        w = rng.uniform(0, 2, n) if w == "uniform" else rng.normal(size=n)
    return Z, Y, coef, w


def assert_softmax_matches(Z, Y, coef, w, value, grad, dtype, what):
    ev, eg = reference.softmax_loss_grad(f64(Z), Y, f64(coef), w)
    aw = np.ones(len(Y)) if w is None else np.abs(w)
    F = np.abs(f64(Z)) @ np.abs(f64(coef)).sum(axis=1)  # bounds every logit's magnitude
    ysum = Y.sum(axis=1)
    assert isinstance(value, float) and grad.dtype == np.float64 and grad.shape == coef.shape
    assert_within(value, ev, aw @ (ysum * (1.0 + F)), dtype, f"{what} softmax loss")
    bound = np.abs(f64(Z)).T @ (aw * (1.0 + ysum) * (1.0 + F))
    assert_within(grad, eg, np.repeat(bound[:, None], coef.shape[1], axis=1), dtype, f"{what} softmax grad")


@dtypes
@threads
@given(data=st.data())
def test_softmax_loss_grad(dtype, n_threads, data):
    """One fused pass equals loss_values on Z @ coef; n up to 600 spans several 256-row chunks and
    every remainder of the row groups, s up to 70 every vector-width remainder, m from 2 to 11
    every remainder of the 4-output blocks; logits up to |F| ~ 40."""
    Z, Y, coef, w = data.draw(softmax_problem(dtype))
    value, grad = kernels.softmax_loss_grad(Z, Y, coef, w, n_threads=n_threads)
    assert_softmax_matches(Z, Y, coef, w, value, grad, dtype, "")


@dtypes
@threads
@given(data=st.data())
@settings(max_examples=25)
def test_softmax_loss_grad_over_several_column_panels(dtype, n_threads, data):
    """Passes of 16 rows add their gradient terms by panels of columns (at most 24 KB of the
    gradient and rows: 112-336 columns at 2-11 outputs, by dtype); s up to 1100 spans several panels and a
    short last one."""
    Z, Y, coef, w = data.draw(softmax_problem(dtype, max_rows=100, features=(200, 1100)))
    value, grad = kernels.softmax_loss_grad(Z, Y, coef, w, n_threads=n_threads)
    assert_softmax_matches(Z, Y, coef, w, value, grad, dtype, "panels")


def test_softmax_loss_grad_of_two_outputs_is_the_logistic_loss_of_their_difference():
    """Softmax over (0, f) is the logistic loss of f: the two kernels agree."""
    rng = np.random.default_rng(0)
    Z, c, w = rng.normal(size=(300, 9)), rng.normal(size=9), rng.uniform(size=300)
    y = (rng.random(300) < 0.4) * 1.0
    value, grad = kernels.softmax_loss_grad(Z, np.column_stack([1 - y, y]), np.column_stack([0 * c, c]), w)
    lvalue, lgrad = kernels.logistic_loss_grad(Z, y, c, w)
    assert value == pytest.approx(lvalue, rel=1e-12)
    np.testing.assert_allclose(grad[:, 1], lgrad, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(grad[:, 0], -lgrad, rtol=1e-10, atol=1e-12)


def test_softmax_loss_grad_refuses_bad_input():
    Z, Y = np.ones((3, 2)), np.eye(3)
    with pytest.raises(ValueError, match="at least 2 outputs"):
        kernels.softmax_loss_grad(Z, np.ones((3, 1)), np.zeros((2, 1)))
    with pytest.raises(ValueError, match="non-negative targets"):
        kernels.softmax_loss_grad(Z, -Y, np.zeros((2, 3)))
    with pytest.raises(ValueError, match="Y must have shape"):
        kernels.softmax_loss_grad(Z, np.eye(4), np.zeros((2, 4)))
    with pytest.raises(ValueError, match="coef must have shape"):
        kernels.softmax_loss_grad(Z, Y, np.zeros((2, 2)))
    with pytest.raises(ValueError, match="sample_weight"):
        kernels.softmax_loss_grad(Z, Y, np.zeros((2, 3)), [1.0, np.nan, 1.0])
    with pytest.raises(ValueError, match="Y"):
        kernels.softmax_loss_grad(Z, np.full((3, 3), np.nan), np.zeros((2, 3)))
    with pytest.raises(ValueError, match="Z"):
        kernels.softmax_loss_grad(np.full((3, 2), np.inf), Y, np.zeros((2, 3)))
    with pytest.raises(ValueError):
        kernels.softmax_loss_grad(np.ones((0, 2)), np.ones((0, 3)), np.zeros((2, 3)))
    Zc, Yc, cc = Z.copy(), Y.copy(), np.ones((2, 3))
    kernels.softmax_loss_grad(Zc, Yc, cc)
    np.testing.assert_array_equal(Zc, Z)  # the caller's arrays are never modified
    np.testing.assert_array_equal(Yc, Y)
    np.testing.assert_array_equal(cc, np.ones((2, 3)))


# ---- every instruction set -----------------------------------------------------------------------
@pytest.mark.parametrize("isa_name", available_isas())
@settings(max_examples=15)
@given(data=st.data())
def test_every_isa_matches_the_reference(isa_name, data):
    """features, predict, gram, loss_and_grad, logistic_loss_grad and softmax_loss_grad under each
    instruction set this CPU has."""
    dtype = data.draw(st.sampled_from(DTYPES))
    X, Y, W, b, th, pair, coef, loss = data.draw(loss_problem(dtype))
    n_threads = data.draw(st.sampled_from([1, 2]))
    eX, eY, eW, eb, eth, ec = f64(X), f64(Y), f64(W), f64(b), f64(th), f64(coef)
    M = feature_magnitude(X, W, b, th, pair)
    with isa(isa_name):
        Z = kernels.features(X, W, b, theta=th, pair=pair, n_threads=n_threads)
        F = kernels.predict(X, W, b, coef, theta=th, pair=pair, n_threads=n_threads)
        G, ZtY = kernels.gram(X, W, b, Y, theta=th, pair=pair, n_threads=n_threads)
        got = kernels.loss_and_grad(X, Y, W, b, coef, theta=th, loss=loss, pair=pair, n_threads=n_threads)
    assert_within(Z, reference.features(eX, eW, eb, theta=eth, pair=pair), M, dtype, f"{isa_name} features")
    assert_within(F, reference.predict(eX, eW, eb, ec, theta=eth, pair=pair), M @ np.abs(ec), dtype,
                  f"{isa_name} predict")
    eG, eZtY = reference.gram(eX, eW, eb, eY, theta=eth, pair=pair)
    assert_within(G, eG, M.T @ M, dtype, f"{isa_name} gram")
    assert_within(ZtY, eZtY, M.T @ np.abs(eY), dtype, f"{isa_name} gram ZtY")
    exp = reference.loss_and_grad(eX, eY, eW, eb, ec, theta=eth, loss=loss, pair=pair)
    for name, g, e, mag in zip(("loss", "grad_coef", "grad_theta"), got, exp,
                               loss_grad_magnitudes(X, Y, W, b, th, coef, loss, pair)):
        assert_within(g, e, mag, dtype, f"{isa_name} {loss} {name}")
    Zl, yl, cl, wl = data.draw(logistic_problem(dtype))
    with isa(isa_name):
        value, grad = kernels.logistic_loss_grad(Zl, yl, cl, wl, n_threads=n_threads)
    ev, eg = reference.logistic_loss_grad(f64(Zl), yl, f64(cl), wl)
    aw = np.ones(len(yl)) if wl is None else np.abs(wl)
    F = np.abs(f64(Zl)) @ np.abs(f64(cl))
    assert_within(value, ev, aw @ (1.0 + F), dtype, f"{isa_name} logistic loss")
    assert_within(grad, eg, np.abs(f64(Zl)).T @ (aw * (1.0 + F)), dtype, f"{isa_name} logistic grad")
    Zs, Ys, cs, ws = data.draw(softmax_problem(dtype))
    with isa(isa_name):
        value, grad = kernels.softmax_loss_grad(Zs, Ys, cs, ws, n_threads=n_threads)
    assert_softmax_matches(Zs, Ys, cs, ws, value, grad, dtype, isa_name)


@pytest.mark.parametrize("isa_name", available_isas())
def test_every_isa_train_epoch(isa_name):
    rng = np.random.default_rng(5)
    n, d, s, m = 300, 3, 31, 2
    X, W = rng.normal(size=(n, d)), rng.normal(size=(d, s))
    b, theta, coef = rng.uniform(0, 6, s), rng.uniform(0.5, 1.5, d), rng.normal(size=(s, m))
    Y = loss_targets(rng, "squared", n, m, np.float64)
    with isa(isa_name):
        _check_train_epoch(X, Y, rng.permutation(n), W, b, theta, coef, kernels.AdamState((s, m), d, np.float64),
                           np.float64, 2, batch_size=64, loss="squared", solver="adam", learning_rate=1e-2,
                           l2_coef=1e-2)


def test_isas_agree_with_each_other_closely():
    """baseline vs the best ISA: same maths, different vector widths; float64 to ~1e-12."""
    rng = np.random.default_rng(1)
    X, W, b = rng.normal(size=(333, 7)), rng.normal(size=(7, 53)), rng.uniform(0, 6, 53)
    res = {}
    for name in available_isas():
        with isa(name):
            res[name] = (kernels.features(X, W, b), kernels.gram(X, W, b))
    base = res["baseline"]
    for name, (Z, G) in res.items():
        np.testing.assert_allclose(Z, base[0], rtol=0, atol=1e-13)
        np.testing.assert_allclose(G, base[1], rtol=1e-12, atol=1e-12)


def test_float32_theta_gradient_on_a_cancelling_example_is_the_phase_rounding():
    """A float32 example (found by Hypothesis) where the SIMD builds' theta-gradient of the squared
    loss is 1.5x outside ``assert_within``'s normwise bound (|diff| 6.3e-7 against 4.2e-7, 1.3e-3
    relative; the baseline build 3.8e-7, inside), explained.

    The 8 columns of W are equal, so every feature has the one phase u = x.w = 1.4416488, and the
    residual F - y = -4.9e-4 is what is left of F = 0.547: the float32 rounding of u moves all 8
    features alike, and the cancellation turns it into ~1e-3 of the gradient (the bound scales
    the worst-case magnitude of such roundings down by CANCEL = 1e-3, for typical data). Each build
    rounds the 8-term dot product within an ulp or two of u (a float32 sum of 8 terms may be ~8
    ulps off): recomputed in float64 from u one float32 ulp below the rounded phase the gradient is
    the baseline build's, from one ulp above the AVX2 / AVX-512 builds', both to 1e-4 relative
    (measured; not asserted, another compiler may round otherwise). Asserted: every build's
    gradient lies between the float64 gradients at the phases within 2 ulps of float32(u), up to
    2e-4 relative (the float32 rounding of the remaining sum), and is within the first-order bound
    taken whole (``TOL * magnitude``, without CANCEL); the loss and the coefficients' gradient
    within ``assert_within``'s usual bound, as before.
    """
    f32 = np.float32
    X = np.array([[-1.0] + [1.0626472] * 7], dtype=f32)
    Y = np.array([0.54784673], dtype=f32)
    W = np.full((8, 8), 0.2239096, dtype=f32)
    coef = np.full(8, 1.0625, dtype=f32)
    exp = reference.loss_and_grad(f64(X), f64(Y), f64(W), None, f64(coef), theta=None, loss="squared",
                                  pair=False)
    u_exact = float((f64(X) @ f64(W))[0, 0])
    u32 = np.float32(u_exact)
    shifted = []
    for k in range(-2, 3):  # the exact gradient with the phase moved to float32(u) + k ulps, through b
        b = np.full(8, float(u32) + k * float(np.spacing(u32)) - u_exact)
        shifted.append(reference.loss_and_grad(f64(X), f64(Y), f64(W), b, f64(coef), theta=None, loss="squared",
                                               pair=False)[2])
    low, high = np.min(shifted, axis=0), np.max(shifted, axis=0)
    slack = 2e-4 * np.abs(exp[2])
    mags = loss_grad_magnitudes(X, Y, W, None, None, coef, "squared", False)
    for name in available_isas():
        with isa(name):
            got = kernels.loss_and_grad(X, Y, W, None, coef, theta=None, loss="squared", pair=False,
                                        n_threads=1)
        for what, value, e, mag in zip(("loss", "grad_coef"), got[:2], exp[:2], mags[:2]):
            assert_within(value, e, mag, f32, f"{name} squared {what}")  # inside the usual bound
        g = np.asarray(got[2], np.float64)
        assert np.all((g >= low - slack) & (g <= high + slack)), (name, g, low, high)
        assert np.all(np.abs(g - exp[2]) <= TOL[f32] * mags[2]), name
