"""Host arrays of other libraries (PyTorch CPU tensors, JAX arrays) in :mod:`rffkern.kernels`, via DLPack.

A kernel given such an array reads it through ``np.from_dlpack`` (no copy for a CPU array; a
strided one is then made contiguous by the kernel's usual conversion, as a strided NumPy array
is), runs on NumPy, and hands its new arrays back through the first argument's library
(``torch.from_dlpack``, ``jax.numpy.from_dlpack``): the memory NumPy allocated is shared, not
copied. An ``out=`` buffer or an array updated in place comes back as the object the caller
passed. Nothing here imports torch or jax: the library is the one that made the caller's array.
"""
from __future__ import annotations

import sys
from typing import Any, Callable

import numpy as np

# DLPack's device types of host memory (kDLCPU, kDLCUDAHost: pinned host memory)
_HOST_DEVICES = (1, 3)


def is_foreign(obj) -> bool:
    """True for a non-NumPy array that exposes ``__dlpack__`` and is not a CUDA device array."""
    return (obj is not None and not isinstance(obj, np.ndarray) and hasattr(obj, "__dlpack__")
            and not hasattr(obj, "__cuda_array_interface__"))


def any_foreign(*arrays) -> bool:
    """Whether some argument needs :func:`call` (one type test per NumPy or absent argument)."""
    for a in arrays:
        if a is not None and type(a) is not np.ndarray and is_foreign(a):
            return True
    return False


def _type_name(obj) -> str:
    return f"{type(obj).__module__}.{type(obj).__qualname__}"


def as_numpy(obj, name: str) -> np.ndarray:
    """``obj``'s memory as a NumPy array (a view, never a copy), or a TypeError saying why not."""
    device = obj.__dlpack_device__()[0] if hasattr(obj, "__dlpack_device__") else 1
    if int(device) not in _HOST_DEVICES:
        raise TypeError(f"{name} ({_type_name(obj)}) is on DLPack device type {int(device)}, not in host "
                        "memory: rffkern's CPU kernels read host arrays (CuPy arrays and PyTorch CUDA "
                        "tensors go to the CUDA build)")
    try:
        return np.from_dlpack(obj)
    except (BufferError, RuntimeError, TypeError) as exc:
        raise TypeError(
            f"{name} ({_type_name(obj)}) cannot be shared with NumPy through DLPack: {exc}. The kernels "
            "of rffkern.kernels are not differentiable: pass tensor.detach(), or use rffkern.torch for "
            "gradients") from exc


def _from_dlpack_of(obj) -> Callable[[np.ndarray], Any]:
    """The ``from_dlpack`` of the library that made ``obj`` (its array namespace, else its module)."""
    namespace = getattr(obj, "__array_namespace__", None)
    if namespace is not None and hasattr(namespace(), "from_dlpack"):
        return namespace().from_dlpack
    root = sys.modules.get(type(obj).__module__.split(".")[0])
    convert = getattr(root, "from_dlpack", None)
    if convert is None:
        raise TypeError(f"cannot return arrays of the kind of {_type_name(obj)}: its library has no "
                        "from_dlpack; pass a NumPy array (np.from_dlpack(x))")
    return convert


def call(kernel: Callable[..., Any], lead: str, **kwargs) -> Any:
    """``kernel(**kwargs)`` with every foreign array read as NumPy; its new arrays returned as arrays
    of the kind of ``kwargs[lead]`` (the kernel's X) when that is foreign, else as NumPy."""
    views: list[tuple[np.ndarray, Any]] = []

    def convert(value, name):
        if not is_foreign(value):
            return value
        view = as_numpy(value, name)
        views.append((view, value))
        return view

    result = kernel(**{name: convert(value, name) for name, value in kwargs.items()})
    to_caller = _from_dlpack_of(kwargs[lead]) if is_foreign(kwargs[lead]) else None

    def back(value):
        if isinstance(value, tuple):
            return tuple(back(v) for v in value)
        if not isinstance(value, np.ndarray):
            return value
        for view, original in views:
            if value is view:
                return original  # an out= buffer or an array updated in place: the caller's own
        return value if to_caller is None else to_caller(value)

    return back(result)
