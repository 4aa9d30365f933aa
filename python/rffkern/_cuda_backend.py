"""The fused cosine kernels on CUDA device arrays (CuPy arrays, PyTorch CUDA tensors).

Imported only when :mod:`rffkern.kernels` is given an array that exposes
``__cuda_array_interface__``; it never imports cupy or torch itself: the outputs are allocated
with the module that owns the caller's ``X`` (already imported by the caller). The compiled side
is ``rffkern._cuda`` (built with ``RFFKERN_CUDA=ON``), which takes ``(ptr, shape, typestr)``
descriptors and a stream.

Rules, as on the CPU path: every array of one call lives on the same side (a mix of host and
device arrays is a ``TypeError`` naming them); the computation dtype is ``X``'s (float32 or
float64; integer ``X`` becomes float64); the small parameter arrays are converted to it on the
device by the caller's library; results come back as the caller's kind of array, on the device of
``X``. Work is enqueued on the caller's current stream (``cupy.cuda.get_current_stream()``,
``torch.cuda.current_stream()``) and nothing synchronises: like any CuPy / PyTorch operation, the
result is ready for later work on that stream. Unlike the CPU path, finiteness of ``X`` is not
checked (that would cost a reduction and a host round trip per call).
"""
from __future__ import annotations

import sys

import numpy as np

from rffkern._sampling import default_scale
from rffkern._validation import check_scale

_BUILD_HINT = (
    "rebuild it on a machine with the CUDA toolkit: "
    "pip install . -C cmake.define.RFFKERN_CUDA=ON (or pass NumPy arrays to use the CPU kernels)"
)


def is_device_array(obj) -> bool:
    """True for objects exposing ``__cuda_array_interface__`` (CuPy, PyTorch CUDA tensors, Numba)."""
    return obj is not None and hasattr(obj, "__cuda_array_interface__")


def any_device_array(*objs) -> bool:
    return any(is_device_array(o) for o in objs)


def _type_name(obj) -> str:
    t = type(obj)
    return f"{t.__module__}.{t.__qualname__}"


def check_same_side(**arrays):
    """TypeError when some of the given (non-None) arrays are device arrays and others are not."""
    device = [n for n, a in arrays.items() if a is not None and is_device_array(a)]
    host = [n for n, a in arrays.items() if a is not None and not is_device_array(a)]
    if device and host:
        d0, h0 = arrays[device[0]], arrays[host[0]]
        raise TypeError(
            f"mixed host and device arrays: {', '.join(device)} {'is' if len(device) == 1 else 'are'} on the "
            f"GPU ({_type_name(d0)}) but {', '.join(host)} {'is' if len(host) == 1 else 'are'} on the host "
            f"({_type_name(h0)}); move them to the same device (cupy.asarray / tensor.cuda()) or all to NumPy"
        )


def load_cuda_module():
    """rffkern._cuda, or a RuntimeError saying why the CUDA kernels cannot run."""
    try:
        from rffkern import _cuda  # type: ignore[attr-defined]  # built only with RFFKERN_CUDA=ON (no stub)
    except ImportError as exc:
        raise RuntimeError(
            "rffkern was built without CUDA (the module rffkern._cuda is missing), so device arrays "
            "cannot be used; " + _BUILD_HINT
        ) from exc
    if _cuda.device_count() == 0:
        raise RuntimeError("rffkern._cuda found no CUDA device (no GPU visible, or no NVIDIA driver)")
    return _cuda


# ---- the caller's array library --------------------------------------------------------------
class _ArrayKind:
    """How to allocate, convert and find the current stream for the library that owns X."""

    def __init__(self, X):
        root = type(X).__module__.split(".")[0]
        if root not in ("cupy", "torch"):
            raise TypeError(
                f"X is a device array of type {_type_name(X)}; rffkern returns CuPy arrays or PyTorch "
                "tensors: pass X as one of those (cupy.asarray(X) / torch.as_tensor(X, device='cuda'))"
            )
        self.root = root
        self.lib = sys.modules[root]  # already imported: the caller made X with it
        self.X = X

    def dtype_of(self, arr):
        if self.root == "cupy":
            return np.dtype(arr.dtype)
        return np.dtype(str(arr.dtype).replace("torch.", ""))

    def _lib_dtype(self, dtype):
        dtype = np.dtype(dtype)
        return dtype if self.root == "cupy" else getattr(self.lib, dtype.name)

    def convert(self, arr, dtype):
        """arr as a C-contiguous device array of dtype on X's device (copies only if needed)."""
        if self.root == "cupy":
            with self.lib.cuda.Device(self.X.device.id):
                return self.lib.ascontiguousarray(self.lib.asarray(arr, dtype=dtype))
        t = arr if isinstance(arr, self.lib.Tensor) else self.lib.as_tensor(arr)
        return t.to(device=self.X.device, dtype=self._lib_dtype(dtype)).contiguous()

    def empty(self, shape, dtype):
        if self.root == "cupy":
            with self.lib.cuda.Device(self.X.device.id):
                return self.lib.empty(shape, dtype=dtype)
        return self.lib.empty(shape, dtype=self._lib_dtype(dtype), device=self.X.device)

    def stream(self) -> int:
        if self.root == "cupy":
            with self.lib.cuda.Device(self.X.device.id):
                return int(self.lib.cuda.get_current_stream().ptr)
        return int(self.lib.cuda.current_stream(self.X.device).cuda_stream)


def _c_contiguous(shape, strides, itemsize) -> bool:
    if strides is None:
        return True
    expected = itemsize
    for dim, stride in zip(reversed(shape), reversed(strides)):
        if dim > 1 and stride != expected:
            return False
        expected *= dim
    return True


def describe(arr, name, *, writable=False):
    """The (ptr, shape, typestr) descriptor rffkern._cuda takes, from __cuda_array_interface__."""
    cai = arr.__cuda_array_interface__
    shape = tuple(int(v) for v in cai["shape"])
    typestr = cai["typestr"]
    ptr, read_only = cai["data"]
    if cai.get("mask") is not None:
        raise TypeError(f"{name} is a masked device array; masks are not supported")
    if not _c_contiguous(shape, cai.get("strides"), np.dtype(typestr).itemsize):
        raise TypeError(f"{name} must be a C-contiguous device array (it is used in place, never copied)")
    if writable and read_only:
        raise TypeError(f"{name} is a read-only device array; it is written to")
    return (int(ptr), shape, typestr)


# ---- validation shared by the kernels ---------------------------------------------------------
def _prepare(X, weights, offsets, theta, scale, pair, min_rows=1):
    kind = _ArrayKind(X)
    dtype = kind.dtype_of(X)
    if dtype not in (np.float32, np.float64):
        if dtype.kind not in "iub":
            raise TypeError(f"X must have a real floating or integer dtype, got {dtype}")
        dtype = np.dtype(np.float64)
    X = kind.convert(X, dtype)
    if X.ndim != 2:
        raise ValueError(f"X must be 2-D (n_samples, n_features), got shape {tuple(X.shape)}")
    if X.shape[0] < min_rows:
        raise ValueError(f"X has {X.shape[0]} rows; at least {min_rows} needed")
    W = kind.convert(weights, dtype)
    if W.ndim != 2:
        raise ValueError(f"weights must be 2-D (n_features, n_components), got shape {tuple(W.shape)}")
    if W.shape[0] != X.shape[1]:
        raise ValueError(f"X has {X.shape[1]} features but weights has {W.shape[0]} rows (one per feature)")
    if W.shape[1] < 1:
        raise ValueError("weights must have at least one column (n_components >= 1)")
    s = int(W.shape[1])
    b = None if offsets is None else kind.convert(offsets, dtype)
    if b is not None and tuple(b.shape) != (s,):
        raise ValueError(f"offsets must have shape ({s},), got {tuple(b.shape)}")
    th = None if theta is None else kind.convert(theta, dtype)
    if th is not None and tuple(th.shape) != (X.shape[1],):
        raise ValueError(f"theta must have shape ({X.shape[1]},), got {tuple(th.shape)}")
    scale = default_scale(s, pair) if scale is None else check_scale(scale)
    with np.errstate(over="ignore"):
        if not np.isfinite(dtype.type(scale)):
            raise ValueError(f"scale={scale} overflows {dtype} (the computation dtype)")
    return kind, dtype, X, W, b, th, float(scale), bool(pair)


def _desc(arr, name):
    return None if arr is None else describe(arr, name)


def _out_buffer(kind, out, name, shape, dtype):
    if out is None:
        return kind.empty(shape, dtype)
    if not is_device_array(out):
        raise TypeError(f"{name} must be a device array like X, got {_type_name(out)}")
    if tuple(out.shape) != tuple(shape) or kind.dtype_of(out) != dtype:
        raise ValueError(f"{name} must have shape {tuple(shape)} and dtype {dtype}, got shape "
                         f"{tuple(out.shape)} and dtype {kind.dtype_of(out)}")
    return out


# ---- the kernels ---------------------------------------------------------------------------
def features(X, weights, offsets=None, *, theta=None, scale=None, pair=False, out=None):
    """:func:`rffkern.kernels.features` on device arrays."""
    check_same_side(X=X, weights=weights, offsets=offsets, theta=theta, out=out)
    cuda = load_cuda_module()
    kind, dtype, X, W, b, th, scale, pair = _prepare(X, weights, offsets, theta, scale, pair)
    Z = _out_buffer(kind, out, "out", (X.shape[0], W.shape[1] * (2 if pair else 1)), dtype)
    cuda.features(describe(X, "X"), describe(W, "weights"), _desc(b, "offsets"), _desc(th, "theta"),
                  scale, pair, describe(Z, "out", writable=True), kind.stream())
    return Z


def predict(X, weights, offsets, coef, *, theta=None, scale=None, pair=False, out=None):
    """:func:`rffkern.kernels.predict` on device arrays."""
    check_same_side(X=X, weights=weights, offsets=offsets, coef=coef, theta=theta, out=out)
    cuda = load_cuda_module()
    kind, dtype, X, W, b, th, scale, pair = _prepare(X, weights, offsets, theta, scale, pair)
    n_out = W.shape[1] * (2 if pair else 1)
    C = kind.convert(coef, dtype)
    ravel = C.ndim == 1
    if ravel:
        C = C.reshape(-1, 1)
    if C.ndim != 2 or C.shape[0] != n_out:
        raise ValueError(f"coef must have shape ({n_out},) or ({n_out}, n_outputs), got {tuple(coef.shape)}")
    shape = (X.shape[0], C.shape[1])
    if out is not None and ravel:
        buf = _out_buffer(kind, out, "out", (X.shape[0],), dtype).reshape(shape)
    else:
        buf = _out_buffer(kind, out, "out", shape, dtype)
    cuda.predict(describe(X, "X"), describe(W, "weights"), _desc(b, "offsets"), _desc(th, "theta"),
                 scale, pair, describe(C, "coef"), describe(buf, "out", writable=True), kind.stream())
    if out is not None:
        return out
    return buf[:, 0] if ravel else buf


def gram(X, weights, offsets=None, Y=None, *, theta=None, scale=None, pair=False, out=None,
         out_zty=None, accumulate=False):
    """:func:`rffkern.kernels.gram` on device arrays.

    The device scratch (a chunk of ``Z`` and per-slice partial sums; ``rffkern._cuda.
    gram_workspace_bytes``) is allocated with the caller's library, so running out of device memory
    raises that library's out-of-memory error before any kernel is enqueued.
    """
    check_same_side(X=X, weights=weights, offsets=offsets, Y=Y, theta=theta, out=out, out_zty=out_zty)
    cuda = load_cuda_module()
    kind, dtype, X, W, b, th, scale, pair = _prepare(X, weights, offsets, theta, scale, pair, min_rows=0)
    n_out = W.shape[1] * (2 if pair else 1)
    if accumulate and out is None:
        raise ValueError("accumulate=True needs out= (the running Gram matrix)")
    G = _out_buffer(kind, out, "out", (n_out, n_out), dtype)
    Yc = ZtY = None
    ravel = False
    if Y is None:
        if out_zty is not None:
            raise ValueError("out_zty is Z.T @ Y's buffer: it needs Y (got Y=None)")
    else:
        Yc = kind.convert(Y, dtype)
        ravel = Yc.ndim == 1
        if ravel:
            Yc = Yc.reshape(-1, 1)
        if Yc.ndim != 2 or Yc.shape[0] != X.shape[0]:
            raise ValueError(f"Y must have {X.shape[0]} rows (one per sample of X), got shape {tuple(Y.shape)}")
        if accumulate and out_zty is None:
            raise ValueError("accumulate=True with Y needs out_zty= (the running Z.T @ Y)")
        zshape = (n_out, Yc.shape[1])
        if out_zty is not None and ravel:
            ZtY = _out_buffer(kind, out_zty, "out_zty", (n_out,), dtype).reshape(zshape)
        else:
            ZtY = _out_buffer(kind, out_zty, "out_zty", zshape, dtype)
    m = 0 if Yc is None else int(Yc.shape[1])
    nbytes = cuda.gram_workspace_bytes(int(X.shape[0]), int(X.shape[1]), int(W.shape[1]), pair, m,
                                       np.dtype(dtype).str)
    workspace = kind.empty((max(nbytes, 1),), np.uint8)
    cuda.gram(describe(X, "X"), describe(W, "weights"), _desc(b, "offsets"), _desc(th, "theta"), scale, pair,
              _desc(Yc, "Y"), describe(G, "out", writable=True),
              None if ZtY is None else describe(ZtY, "out_zty", writable=True), bool(accumulate),
              describe(workspace, "workspace", writable=True), kind.stream())
    # the workspace is freed (returned to the library's pool) when it goes out of scope here; both
    # CuPy and PyTorch order that release after the work already enqueued on the current stream
    if Y is None:
        return G
    if out_zty is not None:
        return G, out_zty
    return G, (ZtY[:, 0] if ravel else ZtY)  # type: ignore[index]  # ZtY is set whenever Y is given
