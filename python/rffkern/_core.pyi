"""Type stub of the compiled core ``rffkern._core`` (csrc/bindings/*.cpp).

Private: the validated public API is :mod:`rffkern.kernels`. Every array
argument is a C-contiguous ``float32`` or ``float64`` NumPy array of one
common dtype (``permutation`` and ``order`` are ``int64``); the bindings
refuse anything that would need a copy (``TypeError``) and any output
overlapping an input (``ValueError``). Arguments typed ``... | None`` accept
``None``. Kept in sync with the bindings by ``tests/test_stub.py``.
"""
from typing import Any, Optional, SupportsFloat

from numpy.typing import NDArray

# dtypes are checked at run time by the bindings (a TypeError naming the argument)
_Float = NDArray[Any]  # float32 or float64
_Index = NDArray[Any]  # int64
# X's centered sparse rows: (indptr int64, indices int32, values, center or None)
_Rows = Optional[tuple[_Index, NDArray[Any], _Float, Optional[_Float]]]

# bind_cos_kernels.cpp
def features(
    X: _Float,
    weights: _Float,
    offsets: Optional[_Float],
    theta: Optional[_Float],
    scale: SupportsFloat,
    pair: bool,
    out: _Float,
    n_threads: int,
    rows: _Rows = ...,
) -> None: ...
def predict(
    X: _Float,
    weights: _Float,
    offsets: Optional[_Float],
    theta: Optional[_Float],
    scale: SupportsFloat,
    pair: bool,
    coef: _Float,
    out: _Float,
    n_threads: int,
    rows: _Rows = ...,
) -> None: ...
def gram(
    X: _Float,
    weights: _Float,
    offsets: Optional[_Float],
    theta: Optional[_Float],
    scale: SupportsFloat,
    pair: bool,
    Y: Optional[_Float],
    out: _Float,
    out_zty: Optional[_Float],
    accumulate: bool,
    n_threads: int,
    rows: _Rows = ...,
) -> None: ...
def loss_and_grad(
    X: _Float,
    Y: _Float,
    weights: _Float,
    offsets: Optional[_Float],
    theta: Optional[_Float],
    scale: SupportsFloat,
    pair: bool,
    coef: _Float,
    loss: str,
    out_coef: _Float,
    out_theta: Optional[_Float],
    n_threads: int,
    rows: _Rows = ...,
) -> float: ...
def train_epoch(
    X: _Float,
    Y: _Float,
    order: _Index,
    batch_size: int,
    weights: _Float,
    offsets: Optional[_Float],
    theta: _Float,
    scale: SupportsFloat,
    coef: _Float,
    loss: str,
    adam: bool,
    learning_rate: SupportsFloat,
    beta1: SupportsFloat,
    beta2: SupportsFloat,
    eps: SupportsFloat,
    l2_coef: SupportsFloat,
    l1_theta: SupportsFloat,
    update_coef: bool,
    update_theta: bool,
    m_coef: _Float,
    v_coef: _Float,
    m_theta: _Float,
    v_theta: _Float,
    step: int,
    n_threads: int,
    shared_theta_moment: bool = ...,
    rows: _Rows = ...,
) -> tuple[float, int]: ...

# bind_linear_loss.cpp (y, Y, w and out are float64 whatever Z's dtype)
def logistic_loss_grad(
    Z: _Float,
    coef: _Float,
    y: _Float,
    w: _Float,
    out: _Float,
    n_threads: int,
) -> float: ...
def softmax_loss_grad(
    Z: _Float,
    coef_t: _Float,
    Y: _Float,
    w: _Float,
    out: _Float,
    n_threads: int,
) -> float: ...

# bind_optim.cpp
def adam_prox_step(
    param: _Float,
    grad: _Float,
    m: _Float,
    v: _Float,
    step: int,
    learning_rate: SupportsFloat,
    beta1: SupportsFloat,
    beta2: SupportsFloat,
    eps: SupportsFloat,
    l2: SupportsFloat,
    l1: SupportsFloat,
    n_threads: int,
) -> None: ...
def sgd_prox_step(
    param: _Float,
    grad: _Float,
    learning_rate: SupportsFloat,
    l2: SupportsFloat,
    l1: SupportsFloat,
    n_threads: int,
) -> None: ...

# bind_runtime.cpp
def active_isa() -> str: ...
def have_libmvec() -> bool: ...
def set_isa(name: str) -> None: ...
def max_threads() -> int: ...
def num_procs() -> int: ...

# bind_structured.cpp
def fwht_inplace(X: _Float, normalized: bool, n_threads: int) -> None: ...
def fwht(X: _Float, out: _Float, normalized: bool, n_threads: int) -> None: ...
def fastfood_features(
    X: _Float,
    signs: _Float,
    permutation: _Index,
    gaussian: _Float,
    scaling: _Float,
    offsets: Optional[_Float],
    theta: Optional[_Float],
    n_frequencies: int,
    scale: SupportsFloat,
    pair: bool,
    out: _Float,
    n_threads: int,
) -> None: ...
def sorf_features(
    X: _Float,
    diagonals: _Float,
    offsets: Optional[_Float],
    theta: Optional[_Float],
    n_frequencies: int,
    freq_scale: SupportsFloat,
    scale: SupportsFloat,
    pair: bool,
    out: _Float,
    n_threads: int,
    radial: Optional[_Float] = None,
) -> None: ...
