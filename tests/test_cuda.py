"""The CUDA backend: device kernels against the NumPy reference, and its error paths.

Tests marked ``gpu`` need an NVIDIA GPU, the ``RFFKERN_CUDA=ON`` build (``rffkern._cuda``) and
CuPy or PyTorch with CUDA; they skip cleanly otherwise. They hold the device kernels to the CPU
kernels' tolerances (tests/_helpers.py: 1e-10 float64, 2e-4 float32, relative to the compared
quantity). The other tests run everywhere: the backend's error paths with stand-in objects that
expose ``__cuda_array_interface__`` (nothing is dereferenced), and the compiled module's argument
checks when it is built (they run before any device is touched).
"""
from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import reference
import rffkern
from _helpers import DTYPE_IDS, DTYPES, assert_within, f64, feature_magnitude, float_arrays, map_problem
from rffkern import kernels

dtypes = pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)


class FakeDeviceArray:
    """Looks like a device array to the backend (interface v3); its pointer is never dereferenced."""

    def __init__(self, shape, typestr="<f4", ptr=0x7F0000000000, strides=None, read_only=False, mask=None):
        self.shape = tuple(shape)
        self.ndim = len(self.shape)
        self.__cuda_array_interface__ = {"shape": self.shape, "typestr": typestr, "data": (ptr, read_only),
                                         "strides": strides, "version": 3, "mask": mask, "stream": 1}


def _without_cuda_module(monkeypatch):
    monkeypatch.delattr(rffkern, "_cuda", raising=False)
    monkeypatch.setitem(sys.modules, "rffkern._cuda", None)  # import now raises ImportError


# ---- CPU-only: the error paths ------------------------------------------------------------
def test_numpy_callers_never_import_the_cuda_backend():
    code = (
        "import sys, numpy as np, rffkern\n"
        "from rffkern import kernels\n"
        "X = np.ones((3, 2)); W = np.ones((2, 4))\n"
        "kernels.features(X, W); kernels.predict(X, W, None, np.ones(4)); kernels.gram(X, W, None, np.ones(3))\n"
        "bad = [m for m in ('rffkern._cuda_backend', 'rffkern._cuda', 'cupy', 'torch') if m in sys.modules]\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.parametrize("kernel", ["features", "predict", "gram"])
def test_device_array_without_the_cuda_build_is_a_clear_runtime_error(monkeypatch, kernel):
    _without_cuda_module(monkeypatch)
    X, W = FakeDeviceArray((5, 3)), FakeDeviceArray((3, 4))
    with pytest.raises(RuntimeError, match="rffkern was built without CUDA"):
        if kernel == "features":
            kernels.features(X, W)
        elif kernel == "predict":
            kernels.predict(X, W, None, FakeDeviceArray((4,)))
        else:
            kernels.gram(X, W)


def test_no_visible_device_is_a_clear_runtime_error(monkeypatch):
    class NoDevice:
        @staticmethod
        def device_count():
            return 0

    monkeypatch.setattr(rffkern, "_cuda", NoDevice, raising=False)
    monkeypatch.setitem(sys.modules, "rffkern._cuda", NoDevice)
    with pytest.raises(RuntimeError, match="no CUDA device"):
        kernels.features(FakeDeviceArray((5, 3)), FakeDeviceArray((3, 4)))


def test_mixed_host_and_device_arrays_are_a_type_error_naming_them(monkeypatch):
    _without_cuda_module(monkeypatch)  # the mix is refused before the build is even looked at
    X = FakeDeviceArray((5, 3))
    with pytest.raises(TypeError, match=r"mixed host and device arrays: X is on the GPU .* weights, offsets are"):
        kernels.features(X, np.ones((3, 4), np.float32), np.zeros(4, np.float32))
    with pytest.raises(TypeError, match=r"weights is on the GPU .* X is on the host"):
        kernels.features(np.ones((5, 3)), FakeDeviceArray((3, 4)))
    with pytest.raises(TypeError, match=r"coef .* on the host"):
        kernels.predict(X, FakeDeviceArray((3, 4)), None, np.ones(4))
    with pytest.raises(TypeError, match=r"Y is on the host"):
        kernels.gram(X, FakeDeviceArray((3, 4)), None, np.ones(5))


def test_device_arrays_of_an_unknown_library_are_refused(monkeypatch):
    class OneDevice:
        @staticmethod
        def device_count():
            return 1

    monkeypatch.setattr(rffkern, "_cuda", OneDevice, raising=False)
    monkeypatch.setitem(sys.modules, "rffkern._cuda", OneDevice)
    with pytest.raises(TypeError, match="CuPy arrays or PyTorch"):
        kernels.features(FakeDeviceArray((5, 3)), FakeDeviceArray((3, 4)))


def test_descriptors_refuse_strided_masked_and_read_only_outputs():
    from rffkern import _cuda_backend as cb

    assert cb.describe(FakeDeviceArray((2, 3), ptr=16), "X") == (16, (2, 3), "<f4")
    assert cb.describe(FakeDeviceArray((2, 3), strides=(12, 4)), "X")[1] == (2, 3)
    assert cb.describe(FakeDeviceArray((1, 3), strides=(999, 4)), "X")[1] == (1, 3)  # size-1 dims: any stride
    with pytest.raises(TypeError, match="X must be a C-contiguous"):
        cb.describe(FakeDeviceArray((2, 3), strides=(4, 8)), "X")
    with pytest.raises(TypeError, match="masked"):
        cb.describe(FakeDeviceArray((2, 3), mask=object()), "X")
    with pytest.raises(TypeError, match="out is a read-only"):
        cb.describe(FakeDeviceArray((2, 3), read_only=True), "out", writable=True)


def _cuda_module_or_skip():
    try:
        from rffkern import _cuda
    except ImportError:
        pytest.skip("rffkern was built without CUDA (RFFKERN_CUDA=OFF)")
    return _cuda


def test_cuda_module_checks_descriptors_before_touching_a_device():
    _cuda = _cuda_module_or_skip()
    X, W, out = (1 << 20, (2, 3), "<f4"), (2 << 20, (3, 4), "<f4"), (3 << 20, (2, 4), "<f4")
    with pytest.raises(TypeError, match="weights must have typestr <f4"):
        _cuda.features(X, (W[0], W[1], "<f8"), None, None, 1.0, False, out, 0)
    with pytest.raises(TypeError, match="X must have dtype float32 or float64"):
        _cuda.features((X[0], X[1], "<i8"), W, None, None, 1.0, False, out, 0)
    with pytest.raises(ValueError, match="X has 3 features but weights has 2 rows"):
        _cuda.features(X, (W[0], (2, 4), "<f4"), None, None, 1.0, False, out, 0)
    with pytest.raises(ValueError, match=r"out must have shape \(2, 8\)"):
        _cuda.features(X, W, None, None, 1.0, True, out, 0)
    with pytest.raises(ValueError, match="out overlaps X"):
        _cuda.features(X, W, None, None, 1.0, False, (X[0] + 8, (2, 4), "<f4"), 0)
    with pytest.raises(ValueError, match="out_zty is required"):
        _cuda.gram(X, W, None, None, 1.0, False, (4 << 20, (2, 1), "<f4"), (5 << 20, (4, 4), "<f4"), None,
                   False, None, 0)
    assert _cuda.gram_workspace_bytes(1000, 3, 4, False, 1, "<f4") > 0
    assert _cuda.device_count() >= 0


# ---- GPU: device kernels against the reference --------------------------------------------
gpu = pytest.mark.gpu


def _cupy_lib():
    cupy = pytest.importorskip("cupy")
    try:
        if cupy.cuda.runtime.getDeviceCount() == 0:
            pytest.skip("CuPy sees no CUDA device")
    except Exception as exc:  # no driver
        pytest.skip(f"CuPy cannot reach a CUDA device: {exc}")
    return cupy.asarray, cupy.asnumpy, lambda: cupy.cuda.Device().synchronize()


def _torch_lib():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("PyTorch sees no CUDA device")
    return (lambda a: torch.as_tensor(a, device="cuda"), lambda t: t.cpu().numpy(), torch.cuda.synchronize)


@pytest.fixture(scope="module", params=["cupy", "torch"])
def lib(request):
    _cuda = _cuda_module_or_skip()
    if _cuda.device_count() == 0:
        pytest.skip("no CUDA device")
    return _cupy_lib() if request.param == "cupy" else _torch_lib()


def _dev(lib, a):
    return None if a is None else lib[0](a)


scales = st.one_of(st.none(), st.floats(0.25, 3.0))


@gpu
@dtypes
@settings(max_examples=30)
@given(data=st.data())
def test_features_match_reference(lib, dtype, data):
    X, W, b, th, pair = data.draw(map_problem(dtype))
    scale = data.draw(scales)
    Z = kernels.features(_dev(lib, X), _dev(lib, W), _dev(lib, b), theta=_dev(lib, th), scale=scale, pair=pair)
    assert type(Z) is type(_dev(lib, X))
    Zh = lib[1](Z)
    assert Zh.dtype == dtype and Zh.shape == (X.shape[0], W.shape[1] * (2 if pair else 1))
    expected = reference.features(f64(X), f64(W), f64(b), theta=f64(th), scale=scale, pair=pair)
    assert_within(Zh, expected, feature_magnitude(X, W, b, th, pair, scale), dtype, "cuda features")


@gpu
@dtypes
@settings(max_examples=30)
@given(data=st.data())
def test_predict_matches_reference(lib, dtype, data):
    X, W, b, th, pair = data.draw(map_problem(dtype))
    n_out = W.shape[1] * (2 if pair else 1)
    one_d = data.draw(st.booleans())
    m = 1 if one_d else data.draw(st.integers(1, 9))  # > 4 outputs: several output groups
    coef = data.draw(float_arrays(dtype, (n_out,) if one_d else (n_out, m), -2.0, 2.0))
    F = lib[1](kernels.predict(_dev(lib, X), _dev(lib, W), _dev(lib, b), _dev(lib, coef), theta=_dev(lib, th),
                               pair=pair))
    assert F.dtype == dtype and F.shape == ((X.shape[0],) if one_d else (X.shape[0], m))
    expected = reference.predict(f64(X), f64(W), f64(b), f64(coef), theta=f64(th), pair=pair)
    assert_within(F, expected, feature_magnitude(X, W, b, th, pair) @ np.abs(f64(coef)), dtype, "cuda predict")


@gpu
@dtypes
@settings(max_examples=30)
@given(data=st.data())
def test_gram_matches_reference(lib, dtype, data):
    X, W, b, th, pair = data.draw(map_problem(dtype))
    M = feature_magnitude(X, W, b, th, pair)
    Y = data.draw(st.one_of(st.none(), float_arrays(dtype, (X.shape[0], data.draw(st.integers(1, 4))), -3.0, 3.0)))
    got = kernels.gram(_dev(lib, X), _dev(lib, W), _dev(lib, b), _dev(lib, Y), theta=_dev(lib, th), pair=pair)
    if Y is None:
        G = lib[1](got)
        assert_within(G, reference.gram(f64(X), f64(W), f64(b), theta=f64(th), pair=pair), M.T @ M, dtype, "G")
    else:
        G, ZtY = (lib[1](a) for a in got)
        eG, eZtY = reference.gram(f64(X), f64(W), f64(b), f64(Y), theta=f64(th), pair=pair)
        assert_within(G, eG, M.T @ M, dtype, "cuda gram G")
        assert_within(ZtY, eZtY, M.T @ np.abs(f64(Y)), dtype, "cuda gram ZtY")
    assert np.array_equal(G, G.T), "the Gram matrix must be exactly symmetric"


@gpu
@dtypes
@pytest.mark.parametrize("pair", [False, True], ids=["phase", "pair"])
def test_large_shapes_span_tiles_chunks_and_slices(lib, dtype, pair):
    # n spans two gram chunks (2^24 / n_out rows each), s and d are multiples of no tile, and the
    # phases reach |U| ~ 100 (cos/sin range reduction); predict with 6 outputs spans two groups.
    rng = np.random.default_rng(1)
    n, d, s = 17000, 37, 1100 if not pair else 600
    X = rng.uniform(-1, 1, (n, d)).astype(dtype)
    W = rng.standard_normal((d, s)).astype(dtype) * dtype(4)
    b = rng.uniform(0, 2 * np.pi, s).astype(dtype)
    th = rng.uniform(0.5, 1.5, d).astype(dtype)
    Y = rng.standard_normal((n, 3)).astype(dtype)
    coef = rng.standard_normal((s * (2 if pair else 1), 6)).astype(dtype)
    dX, dW, db, dth = (_dev(lib, a) for a in (X, W, b, th))
    M = feature_magnitude(X, W, b, th, pair)
    Zref = reference.features(f64(X), f64(W), f64(b), theta=f64(th), pair=pair)
    assert_within(lib[1](kernels.features(dX, dW, db, theta=dth, pair=pair)), Zref, M, dtype, "features")
    F = lib[1](kernels.predict(dX, dW, db, _dev(lib, coef), theta=dth, pair=pair))
    assert_within(F, Zref @ f64(coef), M @ np.abs(f64(coef)), dtype, "predict")
    G, ZtY = (lib[1](a) for a in kernels.gram(dX, dW, db, _dev(lib, Y), theta=dth, pair=pair))
    assert_within(G, Zref.T @ Zref, M.T @ M, dtype, "gram G")
    assert_within(ZtY, Zref.T @ f64(Y), M.T @ np.abs(f64(Y)), dtype, "gram ZtY")
    assert np.array_equal(G, G.T)
    # accumulate: the second half added to the first half's Gram matrix equals the whole
    h = n // 2
    G1, Z1 = kernels.gram(_dev(lib, X[:h]), dW, db, _dev(lib, Y[:h]), theta=dth, pair=pair)
    kernels.gram(_dev(lib, X[h:]), dW, db, _dev(lib, Y[h:]), theta=dth, pair=pair, out=G1, out_zty=Z1,
                 accumulate=True)
    assert_within(lib[1](G1), Zref.T @ Zref, M.T @ M, dtype, "accumulated G")
    assert_within(lib[1](Z1), Zref.T @ f64(Y), M.T @ np.abs(f64(Y)), dtype, "accumulated ZtY")


@gpu
def test_results_are_bitwise_reproducible(lib):
    rng = np.random.default_rng(2)
    X, W = _dev(lib, rng.standard_normal((5000, 20))), _dev(lib, rng.standard_normal((20, 300)))
    Y = _dev(lib, rng.standard_normal((5000, 2)))
    first = [lib[1](a) for a in kernels.gram(X, W, None, Y)]
    again = [lib[1](a) for a in kernels.gram(X, W, None, Y)]
    assert all(np.array_equal(a, b) for a, b in zip(first, again))


@gpu
def test_gram_with_no_rows_is_zero_or_unchanged(lib):
    W = _dev(lib, np.ones((3, 5)))
    G = kernels.gram(_dev(lib, np.ones((0, 3))), W)
    assert np.array_equal(lib[1](G), np.zeros((5, 5)))
    G2 = _dev(lib, np.full((5, 5), 2.0))
    kernels.gram(_dev(lib, np.ones((0, 3))), W, out=G2, accumulate=True)
    assert np.array_equal(lib[1](G2), np.full((5, 5), 2.0))


@gpu
def test_out_of_memory_is_a_clean_error_and_the_next_call_works(lib):
    # a Gram matrix far beyond the device's memory: the caller's library refuses the allocation
    # (CuPy: OutOfMemoryError, a MemoryError; PyTorch: torch.cuda.OutOfMemoryError); afterwards a
    # normal call must succeed
    rng = np.random.default_rng(3)
    X = _dev(lib, rng.standard_normal((10, 2)))
    with pytest.raises((MemoryError, RuntimeError), match="(?i)out of memory|memory"):
        kernels.gram(X, _dev(lib, rng.standard_normal((2, 400_000))))  # G would take 1.28 TB
    Z = lib[1](kernels.features(X, _dev(lib, np.ones((2, 3)))))
    assert Z.shape == (10, 3) and np.isfinite(Z).all()


@gpu
@dtypes
@pytest.mark.parametrize("s", [70, 132], ids=["s70", "s132"])  # scalar and 16-byte store paths
def test_every_output_element_is_written(lib, dtype, s):
    # outputs given as NaN-filled buffers: a skipped row, column, tile edge or output group would
    # leave a NaN behind (n, d, s and m are multiples of none of the tile sizes)
    rng = np.random.default_rng(5)
    n, d = 300, 13
    X, W = rng.uniform(-1, 1, (n, d)).astype(dtype), rng.standard_normal((d, s)).astype(dtype)
    b, Y = rng.uniform(0, 6, s).astype(dtype), rng.standard_normal((n, 3)).astype(dtype)
    dX, dW, db = (_dev(lib, a) for a in (X, W, b))

    def poisoned(shape):
        return _dev(lib, np.full(shape, np.nan, dtype))

    for pair in (False, True):
        n_out = s * (2 if pair else 1)
        M = feature_magnitude(X, W, b, None, pair)
        Zref = reference.features(f64(X), f64(W), f64(b), pair=pair)
        Z = poisoned((n, n_out))
        kernels.features(dX, dW, db, pair=pair, out=Z)
        assert_within(lib[1](Z), Zref, M, dtype, "features into a poisoned buffer")
        for m in (1, 3):  # one output, and two output groups of the multi-output kernel
            coef = rng.standard_normal((n_out, m)).astype(dtype)
            F = poisoned((n, m))
            kernels.predict(dX, dW, db, _dev(lib, coef), pair=pair, out=F)
            assert_within(lib[1](F), Zref @ f64(coef), M @ np.abs(f64(coef)), dtype, "predict, poisoned")
        G, ZtY = poisoned((n_out, n_out)), poisoned((n_out, 3))
        kernels.gram(dX, dW, db, _dev(lib, Y), pair=pair, out=G, out_zty=ZtY)
        assert_within(lib[1](G), Zref.T @ Zref, M.T @ M, dtype, "gram G, poisoned")
        assert_within(lib[1](ZtY), Zref.T @ f64(Y), M.T @ np.abs(f64(Y)), dtype, "gram ZtY, poisoned")


@gpu
def test_integer_device_input_is_computed_in_float64(lib):
    X = np.arange(12).reshape(4, 3) - 5
    W = np.random.default_rng(6).standard_normal((3, 5))
    Z = lib[1](kernels.features(_dev(lib, X), _dev(lib, W)))
    assert Z.dtype == np.float64
    assert_within(Z, reference.features(f64(X), W), feature_magnitude(f64(X), W), np.float64, "int X")


@gpu
def test_torch_graph_capture_records_every_kernel_on_the_callers_stream():
    # A CUDA graph records only work enqueued on the capturing stream: after X changes in place, a
    # replay must give the new results (a kernel launched on another stream would have run once,
    # during the capture, or broken the capture)
    torch = pytest.importorskip("torch")
    _cuda = _cuda_module_or_skip()
    if not torch.cuda.is_available() or _cuda.device_count() == 0:
        pytest.skip("PyTorch sees no CUDA device")
    rng = np.random.default_rng(7)
    n, d, s = 700, 9, 130
    X = torch.as_tensor(rng.uniform(-1, 1, (n, d)), device="cuda")
    W, b = (torch.as_tensor(a, device="cuda") for a in (rng.standard_normal((d, s)), rng.uniform(0, 6, s)))
    coef, Y = (torch.as_tensor(a, device="cuda") for a in (rng.standard_normal(s), rng.standard_normal((n, 2))))
    Z, F = torch.empty(n, s, dtype=torch.float64, device="cuda"), torch.empty(n, dtype=torch.float64, device="cuda")
    G, ZtY = (torch.empty(*shape, dtype=torch.float64, device="cuda") for shape in ((s, s), (s, 2)))

    def run():
        kernels.features(X, W, b, out=Z)
        kernels.predict(X, W, b, coef, out=F)
        kernels.gram(X, W, b, Y, out=G, out_zty=ZtY)

    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        run()  # warm-up outside the capture, as PyTorch asks
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, capture_error_mode="relaxed"):
        run()
    X2 = rng.uniform(-2, 2, (n, d))
    X.copy_(torch.as_tensor(X2, device="cuda"))
    graph.replay()
    torch.cuda.synchronize()
    Wh, bh, ch, Yh = (t.cpu().numpy() for t in (W, b, coef, Y))
    M = feature_magnitude(X2, Wh, bh)
    Zref = reference.features(X2, Wh, bh)
    assert_within(Z.cpu().numpy(), Zref, M, np.float64, "features replayed")
    assert_within(F.cpu().numpy(), Zref @ ch, M @ np.abs(ch), np.float64, "predict replayed")
    assert_within(G.cpu().numpy(), Zref.T @ Zref, M.T @ M, np.float64, "gram replayed")
    assert_within(ZtY.cpu().numpy(), Zref.T @ Yh, M.T @ np.abs(Yh), np.float64, "gram ZtY replayed")
