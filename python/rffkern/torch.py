"""PyTorch autograd over the fused cosine kernels, and a random Fourier feature layer.

``import rffkern`` never imports torch; this module does (``pip install rffkern[torch]``).

With ``U = (X * theta) @ weights + offsets`` and ``Z = scale * cos(U)`` (the package's map,
:func:`rffkern.kernels.features`):

* :func:`fourier_predict` is ``Z @ coef``. A CPU forward pass that a backward pass will follow
  (grad mode, an input requiring grad) runs the compiled ``features(pair=True)`` kernel, one pass
  for ``[Z, scale * sin U]``, keeps that pair (2 n s values, as a plain PyTorch layer keeps O(n s))
  and forms ``Z @ coef`` and every gradient from it by PyTorch's BLAS, without recomputing ``U``.
  Any other forward pass (no_grad, inference, a pair of more than 2^25 values) runs the compiled
  ``predict`` kernel, which never stores ``Z``; its backward pass to ``coef`` and ``theta`` is one
  compiled ``loss_and_grad(loss="linear")`` call on the upstream gradient, again without ``Z``.
* :func:`fourier_features` is ``Z`` itself, from the compiled ``features`` kernel.
* Gradients to ``X``, ``weights`` and ``offsets`` (asked for only where those require grad, e.g.
  :class:`RandomFourierLayer` with ``learn_frequencies=True`` or a layer placed after another),
  when :func:`fourier_predict` kept no pair or the backward pass builds a graph
  (``create_graph=True``), and every gradient of :func:`fourier_features`, are formed with PyTorch
  operations from ``U`` (O(n s) memory, as a plain PyTorch layer).

CPU tensors are shared with the kernels without a copy (``tensor.numpy()``, the memory that
``np.from_dlpack`` would share; non-contiguous tensors are made contiguous first), float32 or
float64, the GIL released during each kernel. CUDA tensors run the forward kernels of the CUDA build
(``rffkern._cuda``) and their backward pass with PyTorch operations; without that build they are
refused with a ``TypeError``. As in PyTorch, and unlike :mod:`rffkern.kernels`, inputs are not
checked for NaN or overflowing phases: they propagate to the outputs.
"""
from __future__ import annotations

import math
import numbers
from typing import Any

import numpy as np
import torch

from rffkern import _core
from rffkern._sampling import DEFAULT_NU, check_kernel, default_scale, draw_map
from rffkern._validation import as_generator, check_positive_int, resolve_n_threads

__all__ = ["fourier_features", "fourier_predict", "RandomFourierLayer"]

_FLOATS = (torch.float32, torch.float64)


def _host(t: torch.Tensor) -> np.ndarray:
    """The tensor's memory as a C-contiguous NumPy array, shared (a copy only if not contiguous)."""
    return t.detach().contiguous().numpy()


def _host_or_none(t: torch.Tensor | None) -> np.ndarray | None:
    return None if t is None else _host(t)


def _useful_threads(n_threads: int, X: torch.Tensor, s: int) -> int:
    """At most one thread per 2^18 multiply-adds of the forward pass, the rule loss_and_grad applies
    inside: a mini-batch too small to share gives every thread a barrier and little work, and a
    barrier on a busy machine can wait a whole scheduler time slice (milliseconds)."""
    return max(1, min(n_threads, (X.shape[0] * X.shape[1] * s) >> 18))


def _scale_of(dtype: torch.dtype, scale: float) -> float:
    # the scale rounded to the computation dtype first, as rffkern.kernels passes it
    return float(np.float32(scale)) if dtype == torch.float32 else float(scale)


def _backward_with_torch(X, theta, coef, weights, offsets, scale, grad_z, needs):
    """Gradients (X, theta, coef, weights, offsets) from ``dL/dZ`` (``grad_z``) by PyTorch ops.

    ``coef`` None: the features form, ``grad_z`` is then the upstream gradient itself; otherwise
    ``grad_z`` is the upstream ``dL/dF`` (n x m) and ``dL/dZ = dL/dF @ coef.T``."""
    need_x, need_theta, need_coef, need_w, need_b = needs
    Xt = X if theta is None else X * theta
    U = Xt @ weights if offsets is None else torch.addmm(offsets, Xt, weights)
    grad_coef = None
    if coef is not None:
        if need_coef:
            grad_coef = (scale * torch.cos(U)).T @ grad_z
        grad_z = grad_z @ coef.T
    H = -scale * torch.sin(U) * grad_z  # dL/dU
    HW = H @ weights.T if (need_x or need_theta) else None
    grad_x = (HW if theta is None else HW * theta) if need_x else None
    grad_theta = (HW * X).sum(0) if need_theta and theta is not None else None
    grad_w = Xt.T @ H if need_w else None
    grad_b = H.sum(0) if need_b and offsets is not None else None
    return grad_x, grad_theta, grad_coef, grad_w, grad_b


def _backward_from_pair(X, theta, coef, weights, pair, grad_out, needs):
    """Gradients (X, theta, coef, weights, offsets) of ``F = Z @ coef`` from the forward pass's
    ``pair = [scale cos U, scale sin U]`` (n x 2s), by PyTorch's BLAS: no phase is recomputed.

    ``dL/dU = H = -scale sin U * (grad_out @ coef.T)``. With one output and only ``theta`` to reach
    (the layer's usual case), ``H @ W.T = -grad_out * (scale sin U @ (W * coef.T).T)``: the one
    n x s x d product, and no pass over an n x s matrix besides it and ``dL/dcoef``."""
    need_x, need_theta, need_coef, need_w, need_b = needs
    s = weights.shape[1]
    cos_u, sin_u = pair[:, :s], pair[:, s:]
    grad_coef = cos_u.T @ grad_out if need_coef else None
    grad_x = grad_theta = grad_w = grad_b = None
    need_hw = need_x or (need_theta and theta is not None)
    if coef.shape[1] == 1 and not (need_w or need_b):
        if need_hw:
            HW = torch.mm(sin_u, (weights * coef.T).T)
            HW *= grad_out
            HW.neg_()
            grad_x = (HW if theta is None else HW * theta) if need_x else None
            if need_theta and theta is not None:
                grad_theta = (HW * X).sum(0)
    else:
        H = sin_u * (grad_out @ coef.T)
        H.neg_()
        HW = H @ weights.T if need_hw else None
        grad_x = (HW if theta is None else HW * theta) if need_x else None
        grad_theta = (HW * X).sum(0) if need_theta and theta is not None else None
        grad_w = (X if theta is None else X * theta).T @ H if need_w else None
        grad_b = H.sum(0) if need_b else None
    return grad_x, grad_theta, grad_coef, grad_w, grad_b


# A CPU forward pass of fourier_predict (or of the layer) that will be differentiated keeps the pair
# features [scale cos U, scale sin U] (one compiled ``features(pair=True)`` call: the phase product
# and a vectorised sincos), and its output and backward pass are PyTorch (BLAS) products on them:
# two n x d x s products per step, as plain PyTorch, instead of three (``predict``, then
# ``loss_and_grad``, which recomputes U). Measured against the two compiled calls on the layer's
# step (float32, 1 thread, s 300 and 1000, batch 8 to 512; docs/user_guide/torch.rst): faster or
# level at every size with d 10 to 100 (up to 1.4x at batch 512, d 100), and within the machine's
# noise either way at d 2 and 5, so no size rule. It holds 2 n s values until the backward pass
# (O(n s), as plain PyTorch); past this many the two compiled calls run instead, in O(tile) memory.
_PAIR_MAX_VALUES = 1 << 25  # 128 MiB in float32


class _FusedPredict(torch.autograd.Function):
    """``F = scale cos((X * theta) @ W + b) @ coef`` (coef 2-D), forward and backward compiled.

    ``keep_pair`` (:func:`_keep_pair`): the forward pass keeps the pair features and both passes
    run on them (:func:`_backward_from_pair`); otherwise ``predict`` and ``loss_and_grad``."""

    @staticmethod
    def forward(ctx, X, theta, coef, weights, offsets, scale, n_threads, keep_pair=False):
        ctx.scale, ctx.n_threads = scale, n_threads
        if X.is_cuda:
            ctx.save_for_backward(X, theta, coef, weights, offsets, None)
            return _cuda_kernels().predict(X.detach(), weights.detach(), _detach(offsets), coef.detach(),
                                           theta=_detach(theta), scale=scale)
        if keep_pair and X.shape[0]:
            s = weights.shape[1]
            pair = torch.empty((X.shape[0], 2 * s), dtype=X.dtype)
            _core.features(_host(X), _host(weights), _host_or_none(offsets), _host_or_none(theta), scale, True,
                           pair.numpy(), n_threads, None)
            ctx.save_for_backward(X, theta, coef, weights, offsets, pair)  # freed with the graph
            return torch.mm(pair[:, :s], coef.detach())
        ctx.save_for_backward(X, theta, coef, weights, offsets, None)
        C = _host(coef)
        out = np.empty((X.shape[0], C.shape[1]), C.dtype)
        if X.shape[0]:
            _core.predict(_host(X), _host(weights), _host_or_none(offsets), _host_or_none(theta), scale, False,
                          C, out, n_threads, None)
        return torch.from_numpy(out)

    @staticmethod
    def backward(ctx, grad_out):
        X, theta, coef, weights, offsets, pair = ctx.saved_tensors
        needs = ctx.needs_input_grad[:5]
        # create_graph (grad mode on here): the routes below, whose PyTorch-op gradients (X, weights,
        # offsets) are themselves differentiable; the pair features are a constant to autograd
        if pair is not None and not torch.is_grad_enabled():
            return (*_backward_from_pair(X, theta, coef, weights, pair, grad_out, needs), None, None, None)
        if X.is_cuda or needs[0] or needs[3] or needs[4] or X.shape[0] == 0:
            return (*_backward_with_torch(X, theta, coef, weights, offsets, ctx.scale, grad_out, needs),
                    None, None, None)
        C = _host(coef)
        grad_coef = np.empty_like(C)
        grad_theta = np.empty(X.shape[1], C.dtype) if needs[1] and theta is not None else None
        # the linear loss mean_i grad_out_i . F_i: its gradients are those of the upstream loss / n
        _core.loss_and_grad(_host(X), _host(grad_out), _host(weights), _host_or_none(offsets),
                            _host_or_none(theta), ctx.scale, False, C, "linear", grad_coef, grad_theta,
                            ctx.n_threads, None)
        # scaled by n and wrapped in NumPy: a PyTorch op costs several microseconds at these sizes
        n = X.shape[0]
        grad_coef *= n
        if grad_theta is not None:
            grad_theta *= n
        return (None, None if grad_theta is None else torch.from_numpy(grad_theta),
                torch.from_numpy(grad_coef) if needs[2] else None, None, None, None, None, None)


def _keep_pair(X: torch.Tensor, s: int, *tensors) -> bool:
    """Whether a forward pass keeps the pair features: on the CPU, with rows, at most
    ``_PAIR_MAX_VALUES`` of them, and a backward pass to come (grad mode, an input requiring grad)."""
    return (0 < 2 * X.shape[0] * s <= _PAIR_MAX_VALUES and not X.is_cuda and torch.is_grad_enabled()
            and any(t is not None and t.requires_grad for t in (X, *tensors)))


class _FusedFeatures(torch.autograd.Function):
    """``Z = scale cos((X * theta) @ W + b)``: compiled forward, PyTorch backward."""

    @staticmethod
    def forward(ctx, X, theta, weights, offsets, scale, n_threads):
        ctx.save_for_backward(X, theta, weights, offsets)
        ctx.scale = scale
        if X.is_cuda:
            return _cuda_kernels().features(X.detach(), weights.detach(), _detach(offsets),
                                            theta=_detach(theta), scale=scale)
        out = torch.empty((X.shape[0], weights.shape[1]), dtype=X.dtype)
        if X.shape[0]:
            _core.features(_host(X), _host(weights), _host_or_none(offsets), _host_or_none(theta), scale, False,
                           out.numpy(), n_threads, None)
        return out

    @staticmethod
    def backward(ctx, grad_out):
        X, theta, weights, offsets = ctx.saved_tensors
        n_x, n_theta, n_w, n_b = ctx.needs_input_grad[:4]
        gx, gt, _, gw, gb = _backward_with_torch(X, theta, None, weights, offsets, ctx.scale, grad_out,
                                                 (n_x, n_theta, False, n_w, n_b))
        return gx, gt, gw, gb, None, None


def _detach(t):
    return None if t is None else t.detach()


def _cuda_kernels():
    """rffkern.kernels for CUDA tensors: the CUDA build's forward kernels, or a TypeError."""
    from rffkern import _cuda_backend, kernels

    try:
        _cuda_backend.load_cuda_module()
    except RuntimeError as exc:
        raise TypeError(f"X is a CUDA tensor, but {exc}; or move the tensors to the CPU (tensor.cpu())") from exc
    return kernels


# ---- validation of the functional forms ----------------------------------------------------------
def _check_x(X) -> torch.Tensor:
    if not isinstance(X, torch.Tensor):
        raise TypeError(f"X must be a torch.Tensor, got {type(X).__name__} (rffkern.kernels takes NumPy arrays)")
    if X.dtype not in _FLOATS:
        if X.dtype.is_floating_point or X.dtype.is_complex:
            raise TypeError(f"X must be float32 or float64, got {X.dtype}")
        X = X.to(torch.float64)  # integers and booleans, as rffkern.kernels does
    if X.dim() != 2:
        raise ValueError(f"X must be 2-D (n_samples, n_features), got shape {tuple(X.shape)}")
    if X.device.type not in ("cpu", "cuda"):
        raise TypeError(f"X is on device {X.device}; rffkern runs CPU tensors (and CUDA tensors with its CUDA build)")
    if X.is_cuda:
        _cuda_kernels()
    return X


def _like_x(value, name: str, X: torch.Tensor, shape: tuple) -> torch.Tensor:
    """``value`` as a tensor of X's dtype on X's device (a differentiable cast), with ``shape``."""
    if isinstance(value, torch.Tensor):
        if value.device != X.device:
            raise TypeError(f"{name} is on {value.device} but X is on {X.device}; move them to one device")
        t = value.to(X.dtype)
    else:
        t = torch.as_tensor(np.asarray(value), dtype=X.dtype, device=X.device)
    if tuple(t.shape) != shape:
        raise ValueError(f"{name} must have shape {shape}, got {tuple(t.shape)}")
    return t


def _map_inputs(X, weights, offsets, theta):
    X = _check_x(X)
    d = X.shape[1]
    W_shape = tuple(weights.shape) if hasattr(weights, "shape") else np.shape(weights)
    if len(W_shape) != 2 or W_shape[0] != d or W_shape[1] < 1:
        raise ValueError(f"weights must have shape ({d}, n_components) for X's {d} features, got {W_shape}")
    W = _like_x(weights, "weights", X, (d, W_shape[1]))
    b = None if offsets is None else _like_x(offsets, "offsets", X, (W_shape[1],))
    th = None if theta is None else _like_x(theta, "theta", X, (d,))
    return X, W, b, th


def _scale_and_threads(X, s, scale, n_threads):
    scale = default_scale(s) if scale is None else float(scale)
    if not (math.isfinite(scale) and scale > 0):
        raise ValueError(f"scale must be a finite positive number, got {scale}")
    return _scale_of(X.dtype, scale), _useful_threads(resolve_n_threads(n_threads), X, s)


def fourier_features(X: torch.Tensor, weights: Any, offsets: Any = None, theta: Any = None, *,
                     scale: float | None = None, n_threads: int | None = None) -> torch.Tensor:
    """Differentiable random cosine features ``scale * cos((X * theta) @ weights + offsets)``.

    Parameters
    ----------
    X : torch.Tensor of shape (n_samples, n_features)
        Input rows, float32 or float64 (integers become float64), on the CPU (or on CUDA with the
        CUDA build).
    weights : tensor or array-like of shape (n_features, n_components)
        The frequencies ``W``; cast to X's dtype.
    offsets : tensor or array-like of shape (n_components,), default=None
        The phases ``b``; None means zero.
    theta : tensor or array-like of shape (n_features,), default=None
        ARD relevances multiplying each input; None means all ones.
    scale : float, default=None
        ``c``; None gives ``sqrt(2 / n_components)``.
    n_threads : int, default=None
        Threads of the compiled kernel, as scikit-learn's ``n_jobs`` (ignored on CUDA).

    Returns
    -------
    torch.Tensor of shape (n_samples, n_components)
        The features, differentiable in every tensor argument that requires grad.

    Examples
    --------
    >>> import torch
    >>> from rffkern.torch import fourier_features
    >>> X = torch.arange(6.0, dtype=torch.float64).reshape(3, 2) / 4
    >>> W = torch.tensor([[1.0, 0.5, -1.0], [0.0, 2.0, 1.0]], dtype=torch.float64)
    >>> fourier_features(X, W, torch.tensor([0.0, 1.0, 2.0])).round(decimals=3)
    tensor([[ 0.8160,  0.0580, -0.5130],
            [ 0.7170, -0.7550, -0.5130],
            [ 0.4410, -0.5340, -0.5130]], dtype=torch.float64)
    """
    X, W, b, th = _map_inputs(X, weights, offsets, theta)
    scale, n_threads = _scale_and_threads(X, W.shape[1], scale, n_threads)
    return _FusedFeatures.apply(X, th, W, b, scale, n_threads)


def fourier_predict(X: torch.Tensor, weights: Any, offsets: Any, coef: Any, theta: Any = None, *,
                    scale: float | None = None, n_threads: int | None = None) -> torch.Tensor:
    """Differentiable ``fourier_features(X, ...) @ coef``.

    A CPU pass to be differentiated keeps ``[Z, scale * sin U]`` (2 n_samples n_components values)
    for its backward pass, as a plain PyTorch layer keeps O(n s); under ``torch.no_grad``, with no
    input requiring grad, or past 2^25 such values, the features are never stored.

    Parameters
    ----------
    X : torch.Tensor of shape (n_samples, n_features)
        Input rows, float32 or float64 (integers become float64), on the CPU (or on CUDA with the
        CUDA build).
    weights : tensor or array-like of shape (n_features, n_components)
        The frequencies ``W``; cast to X's dtype.
    offsets : tensor or array-like of shape (n_components,) or None
        The phases ``b``; None means zero.
    coef : tensor or array-like of shape (n_components,) or (n_components, n_outputs)
        The readout.
    theta : tensor or array-like of shape (n_features,), default=None
        ARD relevances multiplying each input; None means all ones.
    scale : float, default=None
        ``c``; None gives ``sqrt(2 / n_components)``.
    n_threads : int, default=None
        Threads of the compiled kernels, as scikit-learn's ``n_jobs`` (ignored on CUDA).

    Returns
    -------
    torch.Tensor of shape (n_samples,) or (n_samples, n_outputs)
        ``Z @ coef``, 1-D when ``coef`` is; differentiable in every tensor argument that requires
        grad.

    Examples
    --------
    >>> import torch
    >>> from rffkern.torch import fourier_predict
    >>> X = torch.arange(6.0, dtype=torch.float64).reshape(3, 2) / 4
    >>> W = torch.tensor([[1.0, 0.5, -1.0], [0.0, 2.0, 1.0]], dtype=torch.float64)
    >>> coef = torch.ones(3, dtype=torch.float64, requires_grad=True)
    >>> F = fourier_predict(X, W, [0.0, 1.0, 2.0], coef)
    >>> F.detach().round(decimals=3)
    tensor([ 0.3610, -0.5510, -0.6050], dtype=torch.float64)
    >>> F.sum().backward()
    >>> coef.grad.shape
    torch.Size([3])
    """
    X, W, b, th = _map_inputs(X, weights, offsets, theta)
    s = W.shape[1]
    C = coef if isinstance(coef, torch.Tensor) else np.asarray(coef)
    if len(C.shape) not in (1, 2):
        raise ValueError(f"coef must be 1-D or 2-D, got shape {tuple(C.shape)}")
    ravel = len(C.shape) == 1
    C = _like_x(C, "coef", X, (s,) if ravel else (s, C.shape[1]))
    scale, n_threads = _scale_and_threads(X, s, scale, n_threads)
    C = C.unsqueeze(1) if ravel else C
    F = _FusedPredict.apply(X, th, C, W, b, scale, n_threads, _keep_pair(X, s, th, C, W, b))
    return F.squeeze(1) if ravel else F


# ---- the layer ----------------------------------------------------------------------------------
class RandomFourierLayer(torch.nn.Module):
    """A random Fourier feature layer with learnable ARD relevances, on the fused kernels.

    ``forward(X)`` is ``Z @ coef + bias`` with ``Z = sqrt(2 / n_components) * cos((X * relevances)
    @ weights + offsets)`` (or ``Z`` itself when ``out_features`` is None). ``weights`` and
    ``offsets`` are drawn as :class:`rffkern.RandomFourierFeatures` draws them, for a unit length
    scale; the relevances start at ``1 / length_scale``, so the layer's features at initialisation
    are those of ``RandomFourierFeatures(length_scale=length_scale)`` (up to rounding) and a learned
    relevance is an inverse length scale: near zero, the input is ignored.

    Parameters
    ----------
    in_features : int
        Inputs per sample.
    n_components : int, default=100
        Random features ``s``.
    kernel : {"gaussian", "laplace", "cauchy", "matern"}, default="gaussian"
        The kernel whose spectral density the frequencies are drawn from (as in
        :class:`rffkern.RandomFourierFeatures`).
    length_scale : float or array-like of shape (in_features,), default=1.0
        The initial length scale(s); the relevances start at its inverse.
    nu : float, default=1.5
        Matérn smoothness (``kernel="matern"`` only).
    learn_relevances : bool, default=True
        Train the relevances (a parameter; else a buffer).
    learn_frequencies : bool, default=False
        Train ``weights`` and ``offsets`` too (parameters; else buffers). Their gradients are
        formed with PyTorch operations, not by the fused kernels.
    out_features : int, default=None
        Outputs of the linear readout ``coef`` (initialised uniform in ``±1/sqrt(n_components)``,
        as ``torch.nn.Linear``); None: the layer returns the features.
    bias : bool, default=True
        Add a learnable output bias (with ``out_features`` only), zero at first.
    random_state : int, numpy Generator or None, default=None
        Seeds the draws of ``weights``, ``offsets`` and ``coef`` (NumPy).
    n_threads : int, default=None
        Threads of the compiled kernels, as scikit-learn's ``n_jobs``; fewer on small batches (one
        per 2^18 multiply-adds of the forward pass).
    dtype : torch.dtype, default=None
        The parameters' dtype, float32 or float64; None: ``torch.get_default_dtype()``.

    Examples
    --------
    >>> import torch
    >>> from rffkern.torch import RandomFourierLayer
    >>> layer = RandomFourierLayer(3, 64, out_features=1, random_state=0)
    >>> X = torch.randn(8, 3)
    >>> loss = layer(X).square().mean()
    >>> loss.backward()
    >>> layer.relevances.grad.shape, layer.coef.grad.shape
    (torch.Size([3]), torch.Size([64, 1]))
    """

    def __init__(self, in_features: int, n_components: int = 100, *, kernel: str = "gaussian",
                 length_scale: Any = 1.0, nu: float = DEFAULT_NU, learn_relevances: bool = True,
                 learn_frequencies: bool = False, out_features: int | None = None, bias: bool = True,
                 random_state: Any = None, n_threads: int | None = None, dtype: torch.dtype | None = None):
        super().__init__()
        self.in_features = check_positive_int(in_features, "in_features")
        self.n_components = check_positive_int(n_components, "n_components")
        self.out_features = None if out_features is None else check_positive_int(out_features, "out_features")
        self.kernel = check_kernel(kernel)
        self.n_threads = n_threads
        resolve_n_threads(n_threads)  # refuse a bad value now, not at the first forward pass
        dtype = torch.get_default_dtype() if dtype is None else dtype
        if dtype not in _FLOATS:
            raise TypeError(f"dtype must be torch.float32 or torch.float64, got {dtype}")
        rng = as_generator(random_state)
        W, b = draw_map(kernel, in_features, n_components, 1.0, rng, np.float64, nu=nu)
        self.scale = default_scale(n_components)
        self._add("relevances", torch.as_tensor(1.0 / _length_scales(length_scale, in_features), dtype=dtype),
                  learn_relevances)
        self._add("weights", torch.as_tensor(W, dtype=dtype), learn_frequencies)
        self._add("offsets", torch.as_tensor(b, dtype=dtype), learn_frequencies)
        if self.out_features is not None:
            bound = 1.0 / math.sqrt(n_components)
            coef = rng.uniform(-bound, bound, (n_components, self.out_features))
            self.coef = torch.nn.Parameter(torch.as_tensor(coef, dtype=dtype))
            self.bias = torch.nn.Parameter(torch.zeros(self.out_features, dtype=dtype)) if bias else None
        else:
            self.register_parameter("coef", None)
            self.register_parameter("bias", None)

    def _add(self, name, value, learnable):
        if learnable:
            self.register_parameter(name, torch.nn.Parameter(value))
        else:
            self.register_buffer(name, value)

    def forward(self, X: torch.Tensor) -> torch.Tensor:
        """The layer's outputs (or features) for the rows of ``X``.

        Parameters
        ----------
        X : torch.Tensor of shape (n_samples, in_features)
            Cast to the layer's dtype.

        Returns
        -------
        torch.Tensor of shape (n_samples, out_features) or (n_samples, n_components)
            ``Z @ coef + bias``, or ``Z`` when ``out_features`` is None.

        Examples
        --------
        >>> import torch
        >>> from rffkern.torch import RandomFourierLayer
        >>> RandomFourierLayer(3, 16, random_state=0)(torch.zeros(2, 3)).shape
        torch.Size([2, 16])
        """
        if not isinstance(X, torch.Tensor) or X.dim() != 2 or X.shape[1] != self.in_features:
            raise ValueError(f"X must be a 2-D tensor with {self.in_features} columns, got "
                             f"{tuple(X.shape) if isinstance(X, torch.Tensor) else type(X).__name__}")
        dtype = self.weights.dtype
        X = X.to(dtype)
        if X.is_cuda:
            _cuda_kernels()
        scale = _scale_of(dtype, self.scale)
        n_threads = _useful_threads(resolve_n_threads(self.n_threads), X, self.n_components)
        if self.out_features is None:
            return _FusedFeatures.apply(X, self.relevances, self.weights, self.offsets, scale, n_threads)
        F = _FusedPredict.apply(X, self.relevances, self.coef, self.weights, self.offsets, scale, n_threads,
                                _keep_pair(X, self.n_components, self.relevances, self.coef, self.weights,
                                           self.offsets))
        return F if self.bias is None else F + self.bias

    def extra_repr(self) -> str:
        """The layer's sizes and kernel, for ``repr``.

        Returns
        -------
        str
            ``in_features, n_components, out_features, kernel``.

        Examples
        --------
        >>> from rffkern.torch import RandomFourierLayer
        >>> RandomFourierLayer(3, 16, out_features=1)
        RandomFourierLayer(in_features=3, n_components=16, out_features=1, kernel='gaussian')
        """
        return (f"in_features={self.in_features}, n_components={self.n_components}, "
                f"out_features={self.out_features}, kernel={self.kernel!r}")


def _length_scales(length_scale, d):
    ls = np.broadcast_to(np.asarray(length_scale, dtype=np.float64), (d,))
    if not np.all(np.isfinite(ls) & (ls > 0)):
        raise ValueError(f"length_scale must be positive and finite, got {length_scale!r}")
    return ls
