"""Bad input gives a clear ValueError/TypeError naming the problem; good but unusual input
(integers, Fortran order, strided views, read-only arrays) is accepted and gives the right result;
the caller's arrays are never modified."""
from __future__ import annotations

import numpy as np
import pytest

import reference
from rffkern import RandomFourierFeatures, kernels

N, D, S, M = 23, 3, 7, 2


def make_args(dtype=np.float64, seed=0):
    rng = np.random.default_rng(seed)
    return {
        "X": rng.normal(size=(N, D)).astype(dtype),
        "weights": rng.normal(size=(D, S)).astype(dtype),
        "offsets": rng.uniform(0, 2 * np.pi, S).astype(dtype),
        "theta": rng.uniform(0.5, 1.5, D).astype(dtype),
        "coef": rng.normal(size=(S, M)).astype(dtype),
        "Y": rng.normal(size=(N, M)).astype(dtype),
    }


CALLS = {
    "features": lambda a, **kw: kernels.features(a["X"], a["weights"], a["offsets"], theta=a["theta"], **kw),
    "predict": lambda a, **kw: kernels.predict(a["X"], a["weights"], a["offsets"], a["coef"],
                                               theta=a["theta"], **kw),
    "gram": lambda a, **kw: kernels.gram(a["X"], a["weights"], a["offsets"], a["Y"], theta=a["theta"], **kw),
    "loss_and_grad": lambda a, **kw: kernels.loss_and_grad(a["X"], a["Y"], a["weights"], a["offsets"],
                                                           a["coef"], theta=a["theta"], **kw),
}
USES = {
    "features": ("X", "weights", "offsets", "theta"),
    "predict": ("X", "weights", "offsets", "theta", "coef"),
    "gram": ("X", "weights", "offsets", "theta", "Y"),
    "loss_and_grad": ("X", "weights", "offsets", "theta", "coef", "Y"),
}
KERNEL_ARGS = [(k, a) for k, used in USES.items() for a in used]
KA_IDS = [f"{k}-{a}" for k, a in KERNEL_ARGS]


def _flat(result):
    """The arrays of a kernel's result (tuples flattened, floats as 0-d arrays)."""
    if isinstance(result, tuple):
        return [np.asarray(r) for r in result if r is not None]
    return [np.asarray(result)]


def assert_same_result(r1, r2):
    for a, b in zip(_flat(r1), _flat(r2)):
        assert a.dtype == b.dtype
        assert np.array_equal(a, b), "results differ"


# ---- NaN / inf -----------------------------------------------------------------------------------
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf], ids=["nan", "inf", "-inf"])
@pytest.mark.parametrize("kernel,arg", KERNEL_ARGS, ids=KA_IDS)
def test_non_finite_values_are_refused(kernel, arg, bad):
    a = make_args()
    a[arg] = a[arg].copy()
    a[arg].flat[a[arg].size // 2] = bad
    with pytest.raises(ValueError, match=rf"^{arg} contains NaN or infinity"):
        CALLS[kernel](a)


def test_non_finite_scale_is_refused():
    a = make_args()
    for bad in (np.nan, np.inf):
        with pytest.raises(ValueError, match="scale must be finite"):
            CALLS["features"](a, scale=bad)


def test_scale_that_overflows_the_dtype_is_refused():
    a = {k: v.astype(np.float32) for k, v in make_args().items()}
    with pytest.raises(ValueError, match="scale"):
        CALLS["features"](a, scale=1e39)


def test_non_numeric_scale_is_refused_with_a_clear_message():
    with pytest.raises(TypeError, match="scale"):
        CALLS["features"](make_args(), scale="large")


# ---- ndim and shapes -----------------------------------------------------------------------------
WRONG_NDIM = {
    "X": [lambda x: x[0], lambda x: x[None]],
    "weights": [lambda w: w[:, 0], lambda w: w[None]],
    "offsets": [lambda b: b[None, :], lambda b: np.float64(b[0])],
    "theta": [lambda t: t[None, :]],
    "coef": [lambda c: c[None]],
    "Y": [lambda y: y[None]],
}


@pytest.mark.parametrize("kernel,arg", KERNEL_ARGS, ids=KA_IDS)
def test_wrong_ndim_is_refused(kernel, arg):
    for change in WRONG_NDIM[arg]:
        a = make_args()
        a[arg] = change(a[arg])
        with pytest.raises(ValueError, match=rf"^{arg} must"):
            CALLS[kernel](a)


def test_X_ndim_message_suggests_reshape():
    with pytest.raises(ValueError, match=r"X must be 2-D .*got 1-D.*reshape"):
        kernels.features(np.ones(3), np.ones((1, 2)))


MISMATCH = {
    "weights": (lambda w: np.vstack([w, w[:1]]), r"X has 3 features but weights has 4 rows"),
    "offsets": (lambda b: b[:-1], r"offsets must have shape \(7,\), got \(6,\)"),
    "theta": (lambda t: np.append(t, 1.0), r"theta must have shape \(3,\), got \(4,\)"),
    "coef": (lambda c: c[:-1], r"coef must have shape \(7, \*\), got \(6, 2\)"),
    "Y": (lambda y: y[:-1], r"Y must have 23 rows"),
}


@pytest.mark.parametrize("kernel,arg", [ka for ka in KERNEL_ARGS if ka[1] != "X"],
                         ids=[i for i, ka in zip(KA_IDS, KERNEL_ARGS) if ka[1] != "X"])
def test_mismatched_shapes_are_refused(kernel, arg):
    a = make_args()
    change, msg = MISMATCH[arg]
    a[arg] = change(a[arg])
    with pytest.raises(ValueError, match=msg):
        CALLS[kernel](a)


def test_loss_and_grad_Y_with_other_number_of_outputs():
    a = make_args()
    a["Y"] = a["Y"][:, :1]
    with pytest.raises(ValueError, match=r"Y must have shape \(23, 2\)"):
        CALLS["loss_and_grad"](a)


def test_pair_coef_needs_2s_rows():
    a = make_args()
    with pytest.raises(ValueError, match=r"coef must have shape \(14, \*\)"):
        kernels.predict(a["X"], a["weights"], a["offsets"], a["coef"], pair=True)


# ---- dtypes --------------------------------------------------------------------------------------
@pytest.mark.parametrize("kernel,arg", KERNEL_ARGS, ids=KA_IDS)
def test_complex_is_refused(kernel, arg):
    a = make_args()
    a[arg] = a[arg] + 0j
    with pytest.raises(TypeError, match=rf"^{arg} (is complex|must be numeric)"):
        CALLS[kernel](a)


@pytest.mark.parametrize("kind", ["str", "object", "datetime"])
@pytest.mark.parametrize("kernel,arg", KERNEL_ARGS, ids=KA_IDS)
def test_non_numeric_is_refused(kernel, arg, kind):
    a = make_args()
    if kind == "str":
        a[arg] = a[arg].astype(str)
    elif kind == "object":
        a[arg] = a[arg].astype(object)
    else:
        a[arg] = np.zeros(a[arg].shape, "datetime64[s]")
    with pytest.raises(TypeError, match=rf"^{arg} must be numeric"):
        CALLS[kernel](a)


@pytest.mark.parametrize("kernel", list(CALLS))
def test_integers_are_converted_to_float64(kernel):
    a = make_args()
    rng = np.random.default_rng(1)
    a["X"] = rng.integers(-3, 4, (N, D))
    a["weights"] = rng.integers(-2, 3, (D, S)).astype(np.int32)
    a["offsets"] = rng.integers(0, 6, S).astype(np.int8)
    a["theta"] = rng.integers(1, 3, D).astype(np.uint16)
    if kernel == "loss_and_grad":
        a["Y"] = rng.integers(0, 2, (N, M))
    fa = {k: v.astype(np.float64) for k, v in a.items()}
    got, want = CALLS[kernel](a), CALLS[kernel](fa)
    assert all(r.dtype == np.float64 for r in _flat(got) if r.ndim)
    assert_same_result(got, want)


def test_bool_input_is_converted():
    X = np.array([[True, False], [False, True]])
    W = np.ones((2, 3))
    assert_same_result(kernels.features(X, W), kernels.features(X.astype(float), W))


@pytest.mark.parametrize("kernel", list(CALLS))
def test_computation_dtype_is_that_of_X(kernel):
    """float32 X: the other arrays (float64 or int) are converted to float32; float64 X with
    float32 weights computes in float64."""
    a = make_args()
    a32 = dict(a, X=a["X"].astype(np.float32))
    for r in _flat(CALLS[kernel](a32)):
        if r.ndim:
            assert r.dtype == np.float32
    mixed = dict(a, weights=a["weights"].astype(np.float32))
    ref = dict(a, weights=a["weights"].astype(np.float32).astype(np.float64))
    assert_same_result(CALLS[kernel](mixed), CALLS[kernel](ref))


# ---- empty input ---------------------------------------------------------------------------------
@pytest.mark.parametrize("kernel", ["features", "predict", "loss_and_grad"])
def test_no_samples_is_refused(kernel):
    a = make_args()
    a["X"], a["Y"] = a["X"][:0], a["Y"][:0]
    with pytest.raises(ValueError, match=r"X has 0 sample\(s\); at least 1 required"):
        CALLS[kernel](a)


def test_gram_of_no_samples_is_zero():
    """gram allows an empty chunk (it is built chunk by chunk): the result is exactly zero."""
    a = make_args()
    G, ZtY = kernels.gram(a["X"][:0], a["weights"], a["offsets"], a["Y"][:0])
    assert G.shape == (S, S) and ZtY.shape == (S, M)
    assert not G.any() and not ZtY.any()


@pytest.mark.parametrize("kernel", ["features", "predict", "loss_and_grad"])
def test_no_features_is_refused(kernel):
    a = make_args()
    a["X"], a["weights"], a["theta"] = a["X"][:, :0], a["weights"][:0], a["theta"][:0]
    with pytest.raises(ValueError, match=r"X has 0 features; at least 1 required"):
        CALLS[kernel](a)


def test_gram_with_no_features_is_the_map_of_the_offsets():
    """gram validates X with allow_empty (for empty row chunks), which also lets d = 0 through:
    then U = b and the result must still be the reference's (noted in the report: features,
    predict and loss_and_grad refuse d = 0)."""
    a = make_args()
    X, W = a["X"][:, :0], a["weights"][:0]
    G, ZtY = kernels.gram(X, W, a["offsets"], a["Y"])
    eG, eZtY = reference.gram(X, W, a["offsets"], a["Y"])
    np.testing.assert_allclose(G, eG, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(ZtY, eZtY, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("kernel", list(CALLS))
def test_no_components_is_refused(kernel):
    a = make_args()
    a["weights"], a["offsets"], a["coef"] = a["weights"][:, :0], a["offsets"][:0], a["coef"][:0]
    with pytest.raises(ValueError, match=r"weights must have at least one column"):
        CALLS[kernel](a)


# ---- memory layout: accepted, same result --------------------------------------------------------
def _layouts(arr):
    yield "fortran", np.asfortranarray(arr)
    big = np.repeat(np.repeat(arr, 2, axis=0), 2, axis=-1) if arr.ndim == 2 else np.repeat(arr, 2)
    yield "strided", big[::2, ::2] if arr.ndim == 2 else big[::2]
    yield "reversed", arr[::-1].copy()[::-1]
    ro = arr.copy()
    ro.flags.writeable = False
    yield "read-only", ro


@pytest.mark.parametrize("kernel,arg", KERNEL_ARGS, ids=KA_IDS)
def test_non_contiguous_fortran_and_read_only_inputs_give_the_same_result(kernel, arg):
    a = make_args()
    want = CALLS[kernel](a)
    for name, arr in _layouts(a[arg]):
        np.testing.assert_array_equal(arr, a[arg])
        if name in ("fortran", "strided") and arr.ndim == 2:
            assert not arr.flags.c_contiguous
        got = CALLS[kernel](dict(a, **{arg: arr}))
        assert_same_result(got, want)


# ---- out= buffers --------------------------------------------------------------------------------
def _bad_outs(shape, dtype):
    other = np.float32 if dtype == np.float64 else np.float64
    ro = np.empty(shape, dtype)
    ro.flags.writeable = False
    wide = np.empty(shape[:-1] + (2 * shape[-1],), dtype)
    yield TypeError, r"must have dtype", np.empty(shape, other)
    yield TypeError, r"must be a numpy.ndarray", np.empty(shape, dtype).tolist()
    yield ValueError, r"must have shape", np.empty(shape[:-1] + (shape[-1] + 1,), dtype)
    yield ValueError, r"must be C-contiguous", wide[..., ::2]
    if len(shape) == 2 and shape[0] > 1 and shape[1] > 1:
        yield ValueError, r"must be C-contiguous", np.empty(shape, dtype, order="F")
    yield ValueError, r"is read-only", ro


OUTS = {
    "features": [("out", (N, S))],
    "predict": [("out", (N, M))],
    "gram": [("out", (S, S)), ("out_zty", (S, M))],
    "loss_and_grad": [("out_coef", (S, M)), ("out_theta", (D,))],
}


@pytest.mark.parametrize("dtype", [np.float64, np.float32], ids=["f64", "f32"])
@pytest.mark.parametrize("kernel,name,shape", [(k, n, s) for k, v in OUTS.items() for n, s in v],
                         ids=[f"{k}-{n}" for k, v in OUTS.items() for n, _ in v])
def test_bad_out_buffers_are_refused(kernel, name, shape, dtype):
    a = {k: v.astype(dtype) for k, v in make_args().items()}
    for exc, msg, buf in _bad_outs(shape, dtype):
        before = np.array(buf, copy=True) if isinstance(buf, np.ndarray) else None
        with pytest.raises(exc, match=rf"^{name} {msg}"):
            CALLS[kernel](a, **{name: buf})
        if before is not None:
            assert np.array_equal(before, buf, equal_nan=True), "a refused buffer was written to"


@pytest.mark.parametrize("kernel,name,shape", [(k, n, s) for k, v in OUTS.items() for n, s in v],
                         ids=[f"{k}-{n}" for k, v in OUTS.items() for n, _ in v])
def test_good_out_buffers_are_used(kernel, name, shape):
    a = make_args()
    want = CALLS[kernel](a)
    buf = np.full(shape, np.nan)
    got = CALLS[kernel](a, **{name: buf})
    assert any(r is buf for r in (got if isinstance(got, tuple) else (got,)))
    assert_same_result(got, want)


def test_accumulate_needs_out():
    a = make_args()
    with pytest.raises(ValueError, match="accumulate=True needs out="):
        kernels.gram(a["X"], a["weights"], accumulate=True)
    with pytest.raises(ValueError, match="accumulate=True with Y needs out_zty="):
        kernels.gram(a["X"], a["weights"], None, a["Y"], out=np.zeros((S, S)), accumulate=True)


# ---- n_threads -----------------------------------------------------------------------------------
@pytest.mark.parametrize("kernel", list(CALLS))
def test_n_threads(kernel):
    a = make_args()
    with pytest.raises(ValueError, match=r"n_jobs == 0 has no meaning"):
        CALLS[kernel](a, n_threads=0)
    for bad in (1.5, "2", True):
        with pytest.raises(TypeError, match=r"n_jobs must be an int or None"):
            CALLS[kernel](a, n_threads=bad)
    want = CALLS[kernel](a, n_threads=1)
    for ok in (None, -1, -5, 3, np.int64(2)):
        assert_same_result(CALLS[kernel](a, n_threads=ok), want)


# ---- losses and targets --------------------------------------------------------------------------
def test_loss_names_and_targets():
    a = make_args()
    args = (a["X"], a["Y"], a["weights"], a["offsets"], a["coef"])
    names = r"\('squared', 'logistic', 'softmax', 'linear'\)"  # loss_and_grad's losses: training + linear
    with pytest.raises(ValueError, match=rf"loss must be one of {names}, got 'hinge'"):
        kernels.loss_and_grad(*args, loss="hinge")
    with pytest.raises(ValueError, match=r"logistic loss needs targets in \{0, 1\}"):
        kernels.loss_and_grad(*args, loss="logistic")
    with pytest.raises(ValueError, match=r"softmax loss needs one-hot"):
        kernels.loss_and_grad(*args, loss="softmax")
    onehot = np.zeros((N, M))
    onehot[:, 0] = 1
    onehot[0] = [2.0, -1.0]  # sums to 1 but negative
    with pytest.raises(ValueError, match=r"softmax loss needs one-hot"):
        kernels.loss_and_grad(a["X"], onehot, a["weights"], a["offsets"], a["coef"], loss="softmax")


# ---- optimiser steps -----------------------------------------------------------------------------
def _adam(p=None, g=None, m=None, v=None, step=1, **kw):
    p = np.ones(5) if p is None else p
    shape = np.shape(p)
    return kernels.adam_prox_step(p, np.ones(shape) if g is None else g,
                                  np.zeros(shape) if m is None else m,
                                  np.zeros(shape) if v is None else v, step, **kw)


def test_optimizer_step_validation():
    with pytest.raises(TypeError, match=r"param must be a numpy.ndarray"):
        _adam(p=[1.0, 2.0])
    with pytest.raises(TypeError, match=r"param must have dtype float32 or float64"):
        _adam(p=np.ones(5, int))
    with pytest.raises(TypeError, match=r"m must have dtype float64"):
        _adam(m=np.zeros(5, np.float32))
    with pytest.raises(ValueError, match=r"v must have shape \(5,\)"):
        _adam(v=np.zeros(4))
    ro = np.ones(5)
    ro.flags.writeable = False
    with pytest.raises(ValueError, match=r"param must be a writeable C-contiguous"):
        _adam(p=ro)
    with pytest.raises(ValueError, match=r"m must be a writeable C-contiguous"):
        _adam(m=np.zeros(10)[::2])
    with pytest.raises(ValueError, match=r"grad must have param's shape|grad must have shape"):
        _adam(g=np.ones(4))
    with pytest.raises(ValueError, match=r"grad must have param's shape"):
        _adam(p=np.ones((5, 1)), g=np.ones(5), m=np.zeros((5, 1)), v=np.zeros((5, 1)))
    with pytest.raises(ValueError, match=r"grad contains NaN or infinity"):
        _adam(g=np.array([1, np.nan, 0, 0, 0.0]))
    with pytest.raises(TypeError, match=r"grad is complex"):
        _adam(g=np.ones(5) * 1j)
    with pytest.raises(ValueError, match=r"step must be >= 1"):
        _adam(step=0)
    with pytest.raises(TypeError, match=r"step must be an int"):
        _adam(step=1.0)
    for kw, msg in [({"learning_rate": 0.0}, "learning_rate must be finite and > 0"),
                    ({"learning_rate": np.inf}, "learning_rate must be finite and > 0"),
                    ({"beta1": 1.0}, r"beta1 must be in \[0, 1\)"),
                    ({"beta2": -0.1}, r"beta2 must be in \[0, 1\)"),
                    ({"eps": 0.0}, "eps must be finite and > 0"),
                    ({"l2": -1.0}, "l2 must be finite and >= 0"),
                    ({"l1": np.nan}, "l1 must be finite and >= 0"),
                    ({"n_threads": 0}, "n_jobs == 0")]:
        with pytest.raises(ValueError, match=msg):
            _adam(**kw)
    with pytest.raises(TypeError, match="learning_rate must be a real number"):
        _adam(learning_rate="fast")
    with pytest.raises(TypeError, match=r"param must be a numpy.ndarray"):
        kernels.sgd_prox_step([1.0], np.ones(1))
    with pytest.raises(ValueError, match=r"grad must have param's shape"):
        kernels.sgd_prox_step(np.ones(3), np.ones((3, 1)))
    with pytest.raises(ValueError, match=r"learning_rate must be finite and > 0"):
        kernels.sgd_prox_step(np.ones(3), np.ones(3), learning_rate=-1.0)


def test_optimizer_step_converts_grad_and_leaves_it_alone():
    p = np.ones(4, np.float32)
    g = np.array([1, -2, 3, 0])  # int: converted to param's dtype
    g0 = g.copy()
    kernels.sgd_prox_step(p, g, learning_rate=0.5)
    np.testing.assert_array_equal(p, np.array([0.5, 2.0, -0.5, 1.0], np.float32))
    assert np.array_equal(g, g0)


def test_optimizer_step_refuses_non_finite_param():
    with pytest.raises(ValueError, match="param contains NaN or infinity"):
        _adam(p=np.array([1.0, np.nan, 0, 0, 0]))
    with pytest.raises(ValueError, match="m contains NaN or infinity"):
        _adam(m=np.array([0, 0, np.inf, 0, 0.0]))
    with pytest.raises(ValueError, match="v contains NaN or infinity"):
        _adam(v=np.array([0, 0, 0, 0, np.nan]))
    with pytest.raises(ValueError, match="param contains NaN or infinity"):
        kernels.sgd_prox_step(np.array([np.inf, 1.0]), np.ones(2))


def test_adam_refuses_negative_second_moment():
    with pytest.raises(ValueError, match="v must be >= 0|v .*negative"):
        _adam(v=np.array([-1.0, 0, 0, 0, 0]))


# ---- train_epoch ---------------------------------------------------------------------------------
def _epoch_args(dtype=np.float64):
    a = make_args(dtype)
    return dict(X=a["X"], Y=a["Y"], order=np.arange(N), weights=a["weights"], offsets=a["offsets"],
                theta=a["theta"].copy(), coef=a["coef"].copy(), state=kernels.AdamState((S, M), D, dtype))


def _epoch(**over):
    e = _epoch_args()
    kw = {k: v for k, v in over.items() if k not in e}
    e.update({k: v for k, v in over.items() if k in e})
    return kernels.train_epoch(e["X"], e["Y"], e["order"], e["weights"], e["offsets"], e["theta"],
                               e["coef"], e["state"], **kw)


def test_train_epoch_validation():
    a = _epoch_args()
    cases = [
        (dict(loss="hinge"), ValueError, "loss must be one of"),
        (dict(solver="lbfgs"), ValueError, "solver must be 'adam' or 'sgd'"),
        (dict(batch_size=0), ValueError, "batch_size must be >= 1"),
        (dict(batch_size=2.0), TypeError, "batch_size must be an int"),
        (dict(order=np.array([0, N])), ValueError, r"order holds indices outside \[0, 23\)"),
        (dict(order=np.array([-1])), ValueError, r"order holds indices outside"),
        (dict(order=np.zeros((2, 2), int)), ValueError, "order must be 1-D"),
        (dict(X=np.asfortranarray(a["X"])), TypeError, "X must be a C-contiguous 2-D float64 array"),
        (dict(X=a["X"].astype(np.float32)), TypeError, "X must be a C-contiguous 2-D float64 array"),
        (dict(Y=a["Y"][:, 0]), TypeError, "Y must be a C-contiguous 2-D float64 array"),
        (dict(Y=a["Y"][:-1]), ValueError, r"Y must have shape \(23, 2\)"),
        (dict(Y=a["Y"][:, :1].copy()), ValueError, r"Y must have shape \(23, 2\)"),
        (dict(theta=a["theta"][:-1]), ValueError, r"theta must have shape|state.m_theta must have shape"),
        (dict(theta=list(a["theta"])), TypeError, "theta must be a numpy.ndarray"),
        (dict(coef=a["coef"][:, 0].copy()), ValueError, "coef must be 2-D"),
        (dict(coef=a["coef"].astype(np.float32)), TypeError, "coef must have dtype float64"),
        (dict(weights=a["weights"][:, :-1]), ValueError, r"weights must have shape \(3, 7\)"),
        (dict(offsets=a["offsets"][:-1]), ValueError, r"offsets must have shape \(7,\)"),
        (dict(weights=np.where(a["weights"] > 0, np.inf, a["weights"])), ValueError, "weights contains NaN"),
        (dict(state=kernels.AdamState((S, M + 1), D, np.float64)), ValueError, r"state.m_coef must have shape"),
        (dict(learning_rate=0.0), ValueError, "learning_rate must be finite and > 0"),
        (dict(l1_theta=-1.0), ValueError, "l1_theta must be finite and >= 0"),
        (dict(l2_coef=np.inf), ValueError, "l2_coef must be finite and >= 0"),
        (dict(n_threads=0), ValueError, "n_jobs == 0"),
    ]
    for over, exc, msg in cases:
        with pytest.raises(exc, match=msg):
            _epoch(**over)


def test_train_epoch_names_its_own_regularisation_arguments():
    with pytest.raises(ValueError, match="l1_theta must be finite"):
        _epoch(l1_theta=-1.0)


def test_train_epoch_refuses_non_finite_parameters():
    a = _epoch_args()
    th = a["theta"].copy()
    th[0] = np.nan
    with pytest.raises(ValueError, match="theta contains NaN or infinity"):
        _epoch(theta=th)
    c = a["coef"].copy()
    c[-1, -1] = -np.inf
    with pytest.raises(ValueError, match="coef contains NaN or infinity"):
        _epoch(coef=c)
    state = kernels.AdamState((S, M), D, np.float64)
    state.v_coef[0, 0] = np.nan
    with pytest.raises(ValueError, match=r"state.v_coef contains NaN or infinity"):
        _epoch(state=state)


# ---- inputs are never modified -------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [np.float64, np.float32], ids=["f64", "f32"])
@pytest.mark.parametrize("kernel", list(CALLS))
@pytest.mark.parametrize("variant", ["plain", "pair", "no_theta_no_offsets"])
def test_kernels_never_modify_their_inputs(kernel, dtype, variant):
    a = {k: v.astype(dtype) for k, v in make_args(seed=3).items()}
    kw = {}
    if variant == "pair":
        kw["pair"] = True
        a["coef"] = np.vstack([a["coef"], a["coef"]])
    if variant == "no_theta_no_offsets":
        a["theta"] = a["offsets"] = None
    before = {k: None if v is None else v.copy() for k, v in a.items()}
    CALLS[kernel](a, n_threads=2, **kw)
    for k, v in a.items():
        if v is not None:
            assert np.array_equal(v, before[k]), f"{kernel} modified {k}"


def test_mixed_dtype_inputs_are_not_modified():
    """A float64 weights array given with float32 X is converted, never cast in place."""
    a = make_args()
    X32 = a["X"].astype(np.float32)
    W0 = a["weights"].copy()
    kernels.features(X32, a["weights"])
    assert a["weights"].dtype == np.float64 and np.array_equal(a["weights"], W0)


def test_gram_accumulate_does_not_modify_inputs():
    a = make_args()
    before = {k: v.copy() for k, v in a.items()}
    G, ZtY = np.zeros((S, S)), np.zeros((S, M))
    kernels.gram(a["X"], a["weights"], a["offsets"], a["Y"], theta=a["theta"], out=G, out_zty=ZtY,
                 accumulate=True)
    for k, v in a.items():
        assert np.array_equal(v, before[k]), k


def test_optimizer_steps_and_train_epoch_modify_only_their_parameters():
    rng = np.random.default_rng(9)
    p, g = rng.normal(size=6), rng.normal(size=6)
    g0 = g.copy()
    kernels.adam_prox_step(p, g, np.zeros(6), np.zeros(6), 1, l1=0.1)
    kernels.sgd_prox_step(p, g, l2=0.1)
    assert np.array_equal(g, g0)
    for solver in ("adam", "sgd"):
        e = _epoch_args()
        order = rng.integers(0, N, 40)
        keep = {k: e[k].copy() for k in ("X", "Y", "weights", "offsets")}
        o0 = order.copy()
        th0, c0 = e["theta"].copy(), e["coef"].copy()
        kernels.train_epoch(e["X"], e["Y"], order, e["weights"], e["offsets"], e["theta"], e["coef"],
                            e["state"], batch_size=8, solver=solver, learning_rate=0.01)
        for k, v in keep.items():
            assert np.array_equal(e[k], v), f"train_epoch modified {k}"
        assert np.array_equal(order, o0), "train_epoch modified order"
        assert not np.array_equal(e["theta"], th0) and not np.array_equal(e["coef"], c0), \
            "train_epoch must update theta and coef in place"


# ---- RandomFourierFeatures -----------------------------------------------------------------------
@pytest.mark.parametrize("params,exc,msg", [
    (dict(n_components=0), ValueError, r"'n_components' parameter .* must be an int in the range \[1, 1099511627776\]"),
    (dict(n_components=-3), ValueError, r"'n_components' parameter"),
    (dict(n_components=2.5), TypeError, r"'n_components' parameter"),
    (dict(kernel="rbf"), ValueError, r"'kernel' parameter .* must be a str among"),
    (dict(kernel=None), ValueError, r"'kernel' parameter"),
    (dict(length_scale=0.0), ValueError, r"'length_scale' parameter .* range \(0.0, inf\)"),
    (dict(length_scale=-1.0), ValueError, r"'length_scale' parameter"),
    (dict(length_scale=np.inf), ValueError, r"'length_scale' parameter"),
    (dict(length_scale=np.nan), ValueError, r"'length_scale' parameter"),
    (dict(length_scale="1"), TypeError, r"'length_scale' parameter"),
    (dict(nu=0.0), ValueError, r"'nu' parameter .* must be a finite float > 0"),
    (dict(nu=np.inf), ValueError, r"'nu' parameter"),
    (dict(nu=True), ValueError, r"'nu' parameter"),
    (dict(sampling="sobol"), ValueError, r"'sampling' parameter .* must be a str among"),
    (dict(kernel="cauchy", sampling="orthogonal"), ValueError, r"sampling='orthogonal' needs a radial"),
    (dict(pair="yes"), ValueError, r"'pair' parameter"),
    (dict(pair=True, n_components=5), ValueError, r"n_components must be even with pair=True"),
    (dict(random_state=-1), ValueError, r"'random_state' parameter"),
    (dict(random_state="seed"), ValueError, r"'random_state' parameter"),
    (dict(n_jobs=1.5), TypeError, r"'n_jobs' parameter"),
])
def test_rff_bad_hyperparameters(params, exc, msg):
    X = np.random.default_rng(0).normal(size=(6, 2))
    with pytest.raises(exc, match=msg):
        RandomFourierFeatures(**{"n_components": 4, **params}).fit(X)


def test_rff_n_jobs_zero_is_refused_by_fit_transform():
    X = np.random.default_rng(0).normal(size=(6, 2))
    with pytest.raises(ValueError, match=r"n_jobs == 0"):
        RandomFourierFeatures(4, n_jobs=0).fit_transform(X)


def test_rff_n_jobs_zero_is_refused_by_fit():
    X = np.random.default_rng(0).normal(size=(6, 2))
    with pytest.raises(ValueError, match=r"n_jobs"):
        RandomFourierFeatures(4, n_jobs=0).fit(X)


def test_rff_bad_data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(6, 2))
    rff = RandomFourierFeatures(4, random_state=0)
    for bad in (np.nan, np.inf):
        Xb = X.copy()
        Xb[2, 1] = bad
        with pytest.raises(ValueError, match=r"Input (X )?contains (NaN|infinity)"):
            rff.fit(Xb)
        with pytest.raises(ValueError, match=r"Input (X )?contains (NaN|infinity)"):
            RandomFourierFeatures(4, random_state=0).fit(X).transform(Xb)
    with pytest.raises(ValueError, match=r"Expected 2D array, got 1D array"):
        rff.fit(X[0])
    with pytest.raises(ValueError, match=r"0 sample\(s\)"):
        rff.fit(X[:0])
    with pytest.raises(ValueError, match=r"0 feature\(s\)"):
        rff.fit(X[:, :0])
    with pytest.raises(ValueError, match=r"Complex data not supported"):
        rff.fit(X + 1j)
    with pytest.raises(ValueError, match=r"could not convert string to float"):
        rff.fit(np.array([["a", "b"]]))
    rff.fit(X)
    with pytest.raises(ValueError, match=r"X has 3 features, but RandomFourierFeatures is expecting 2"):
        rff.transform(rng.normal(size=(4, 3)))


def test_rff_integers_fortran_and_strided_input():
    rng = np.random.default_rng(0)
    Xi = rng.integers(-3, 4, (9, 3))
    rff = RandomFourierFeatures(8, random_state=0).fit(Xi)
    Z = rff.transform(Xi)
    assert Z.dtype == np.float64
    assert np.array_equal(Z, rff.transform(Xi.astype(np.float64)))
    Xf = Xi.astype(np.float64)
    assert np.array_equal(rff.transform(np.asfortranarray(Xf)), Z)
    big = np.repeat(Xf, 2, axis=1)
    assert np.array_equal(rff.transform(big[:, ::2]), Z)


@pytest.mark.parametrize("dtype", [np.float64, np.float32], ids=["f64", "f32"])
@pytest.mark.parametrize("pair", [False, True], ids=["phase", "pair"])
def test_rff_never_modifies_its_input(dtype, pair):
    X = np.random.default_rng(0).normal(size=(40, 3)).astype(dtype)
    X0 = X.copy()
    rff = RandomFourierFeatures(10, pair=pair, random_state=0, n_jobs=2)
    rff.fit(X)
    assert np.array_equal(X, X0)
    W0, b0 = rff.weights_.copy(), rff.offsets_.copy()
    rff.transform(X)
    rff.fit_transform(X)
    Xf = np.asfortranarray(X)
    rff.transform(Xf)
    assert np.array_equal(X, X0) and np.array_equal(Xf, X0)
    assert np.array_equal(rff.weights_, W0) and np.array_equal(rff.offsets_, b0)
    rff.transform(X.astype(np.float32 if dtype == np.float64 else np.float64))
    assert rff.weights_.dtype == W0.dtype and np.array_equal(rff.weights_, W0)
