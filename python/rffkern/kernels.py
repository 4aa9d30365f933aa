"""The fused cosine-feature kernels, validated and called on NumPy arrays (docs/kernels.rst).

With ``U = (X * theta) @ weights + offsets`` and ``Z = scale * cos(U)`` (or, with ``pair=True``,
``Z = scale * [cos(U), sin(U)]``), every kernel computes ``U`` tile by tile inside the compiled
core and never materialises it:

=================  ===========================================================================
``features``       ``Z`` itself (n x s, or n x 2s for the pair form)
``predict``        ``Z @ coef`` without storing ``Z`` (memory O(tile))
``gram``           ``Z.T @ Z`` and ``Z.T @ Y`` streamed over row blocks, never storing ``Z``
``loss_and_grad``  mean loss of ``f = Z @ coef`` and its gradients in ``coef`` and ``theta``
``train_epoch``    one pass of mini-batch Adam/SGD + prox steps, all inside the core
=================  ===========================================================================

and, on features already formed (RFFNetClassifier's closing fit, where the relevances are fixed):

======================  ======================================================================
``logistic_loss_grad``  weighted logistic loss of ``f = Z @ coef`` and its gradient, one pass
``softmax_loss_grad``   weighted softmax cross-entropy of ``F = Z @ coef`` and its gradient, one pass
======================  ======================================================================

The computation dtype is that of ``X`` (float32 stays float32; integers become float64); the other
arrays are converted to it. The GIL is released during the computation. ``n_threads`` follows
scikit-learn's ``n_jobs``: None = all usable cores, -1 = all, 0 is an error. Every kernel returns
the same bits whatever the thread count.

Inputs that mostly take one value per column (one-hot and bag-of-words columns, pixels: a9a, w8a,
MNIST) can be passed as well as :class:`CenteredRows` (``rows=``): ``features``, ``predict``,
``gram``, ``loss_and_grad`` and ``train_epoch`` then compute ``U`` from the stored entries only, in
O(nnz s + d s) per block of rows instead of O(n d s), with the same result up to rounding.

Host arrays of other libraries exposing ``__dlpack__`` (PyTorch CPU tensors, JAX arrays) are taken
without a copy, and the results come back as arrays of the first argument's kind (``_dlpack.py``);
the kernels are not differentiable (``rffkern.torch`` is).

Pure-NumPy equivalents of every function, written for clarity, are the test oracle (``tests/reference.py``); the package never imports them.
"""
from __future__ import annotations

import numbers
import weakref
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, DTypeLike, NDArray
from typing import Any

from rffkern import _core, _dlpack
from rffkern._sampling import default_scale
from rffkern._losses import logistic_loss_grad_unchecked, softmax_loss_grad_unchecked
from rffkern._validation import (
    check_array_2d,
    float_dtype_of,
    check_matrix,
    check_out,
    check_positive_float,
    check_positive_int,
    check_scale,
    check_vector,
    refuse_sparse,
    resolve_n_threads,
)

__all__ = [
    "default_scale",
    "features",
    "predict",
    "gram",
    "loss_and_grad",
    "adam_prox_step",
    "sgd_prox_step",
    "train_epoch",
    "logistic_loss_grad",
    "softmax_loss_grad",
    "AdamState",
    "TrainingDivergedError",
    "MAX_LEARNING_RATE",
    "CenteredRows",
    "centered_rows",
    "LOSSES",
    "fwht",
    "fastfood_features",
    "sorf_features",
    "block_size",
]

LOSSES = ("squared", "logistic", "softmax")

#: The largest ``learning_rate`` of the optimiser steps. An Adam step moves every parameter by
#: about ``learning_rate``; relevances or coefficients of 10^6 make the phases ``x theta w`` mere
#: noise, and larger steps (1e300 was accepted) overflow them to NaN within an epoch.
MAX_LEARNING_RATE = 1e6

#: :func:`centered_rows` keeps a dense ``X`` whose share of entries away from their column's center
#: is above this: the sparse rows still pay at 30% of the entries stored, no longer at 50%
#: (docs/kernels.rst, docs/design_notes.rst).
CENTERED_ROWS_MAX_DENSITY = 0.3
#: The center of each column is its lower median over at most this many leading rows.
CENTER_ROWS = 256


@dataclass(frozen=True, eq=False)
class CenteredRows:
    """The rows of ``X`` held as ``X = center + S`` with ``S`` sparse (CSR, entries ``X - center``).

    Where most entries of each column equal one value (the zeros of one-hot or bag-of-words
    columns, blank pixels, after standardization), the kernels given ``rows=`` compute
    ``U = (X * theta) @ W + b`` as ``S (theta W) + (b + (center * theta) @ W)``: O(nnz(S) s + d s)
    work per block of rows instead of O(n d s). The result equals the dense computation up to
    rounding (the sums run in another order). Build one with :func:`centered_rows` or
    :meth:`from_dense`; it must describe the ``X`` passed with it: passed with any other array
    than the one it was built from, its values are compared with X's (one O(n d) pass, then that
    array is remembered too) and a mismatch raises ``ValueError``. An array changed in place after
    the rows were built from it is not detected.

    Parameters
    ----------
    indptr : ndarray of int64 of shape (n_samples + 1,)
        Row ``i``'s entries are ``indices[indptr[i]:indptr[i + 1]]``; ``indptr[0] = 0``.
    indices : ndarray of int32 of shape (nnz,)
        Column of each stored entry, increasing within a row.
    values : ndarray of shape (nnz,)
        ``X[i, j] - center[j]``, in X's dtype.
    center : ndarray of shape (n_features,)
        The value each column mostly takes.
    shape : tuple of int
        ``X.shape``.

    Examples
    --------
    >>> import numpy as np
    >>> from rffkern import kernels
    >>> X = np.array([[0.0, 1.0, 0.0], [2.0, 0.0, 0.0], [0.0, 0.0, 0.0]])
    >>> rows = kernels.CenteredRows.from_dense(X)
    >>> rows.indptr, rows.indices, rows.values
    (array([0, 1, 2, 2]), array([1, 0], dtype=int32), array([1., 2.]))
    >>> W, b = np.ones((3, 2)), np.zeros(2)
    >>> bool(np.allclose(kernels.features(X, W, b, rows=rows), kernels.features(X, W, b)))
    True
    """

    indptr: NDArray[np.int64]
    indices: NDArray[np.int32]
    values: NDArray[np.floating]
    center: NDArray[np.floating]
    shape: tuple[int, int]

    def __post_init__(self):
        # the arrays as the compiled kernels take them (a copy only where needed); the column
        # indices and the row offsets are checked there, once per call
        shape = tuple(int(v) for v in self.shape)
        if len(shape) != 2 or min(shape) < 0:
            raise ValueError(f"shape must be (n_samples, n_features), got {self.shape}")
        values = np.ascontiguousarray(refuse_sparse(self.values, "values"))
        if values.dtype.kind not in "biuf" or values.ndim != 1:
            raise TypeError(f"values must be a 1-D real array, got {values.dtype} with shape {values.shape}")
        values = values.astype(float_dtype_of(values), copy=False)
        indptr = np.ascontiguousarray(self.indptr, dtype=np.int64)
        indices = np.ascontiguousarray(self.indices, dtype=np.int32)
        if indptr.shape != (shape[0] + 1,) or indices.shape != values.shape or indptr[-1] != values.size:
            raise ValueError(f"indptr must have n_samples + 1 = {shape[0] + 1} entries ending at the "
                             f"{values.size} stored values, one index per value")
        center = check_vector(self.center, "center", shape[1], values.dtype)
        if not np.isfinite(values).all():
            raise ValueError("values contains NaN or infinity")
        for name, v in (("indptr", indptr), ("indices", indices), ("values", values), ("center", center),
                        ("shape", shape)):
            object.__setattr__(self, name, v)

    @classmethod
    def from_dense(cls, X: ArrayLike, center: ArrayLike | None = None) -> CenteredRows:
        """The centered rows of a dense ``X``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Finite values; float32 stays float32, other dtypes become float64.
        center : array-like of shape (n_features,), default=None
            The value subtracted from each column; None: each column's lower median over its
            first ``CENTER_ROWS`` rows (a value the column takes: its zero, for a mostly-zero one).

        Returns
        -------
        CenteredRows
            The entries of ``X`` that differ from their column's center.

        Examples
        --------
        >>> import numpy as np
        >>> from rffkern import kernels
        >>> rows = kernels.CenteredRows.from_dense(np.array([[5.0, 1.0], [5.0, 0.0], [4.0, 0.0]]))
        >>> rows.center, rows.indptr, rows.indices, rows.values
        (array([5., 0.]), array([0, 1, 1, 2]), array([1, 0], dtype=int32), array([ 1., -1.]))
        """
        X = check_array_2d(X, "X", min_rows=1)
        center = _column_centers(X) if center is None else check_vector(center, "center", X.shape[1], X.dtype)
        return cls._of_checked(X, center)

    @classmethod
    def _of_checked(cls, X: NDArray[np.floating], center: NDArray[np.floating]) -> CenteredRows:
        """:meth:`from_dense` of an ``X`` already validated, with its center in X's dtype."""
        stored = X != center
        indptr = np.zeros(X.shape[0] + 1, np.int64)
        np.cumsum(stored.sum(axis=1), out=indptr[1:])
        rows_i, cols = np.nonzero(stored)
        values = (X[rows_i, cols] - center[cols]).astype(X.dtype, copy=False)
        rows = cls(indptr, cols.astype(np.int32), np.ascontiguousarray(values), center, X.shape)
        rows._remember(X)
        return rows

    @classmethod
    def from_csr(cls, X: Any) -> CenteredRows:
        """The rows of a scipy.sparse matrix or array as they are stored, about a zero center.

        Parameters
        ----------
        X : scipy.sparse matrix or array of shape (n_samples, n_features)
            Converted to CSR if needed; its stored values are the entries (explicit zeros and
            duplicates included: duplicates add up, as in ``X.toarray()``). float32 stays
            float32, other dtypes become float64. X is not densified.

        Returns
        -------
        CenteredRows
            The entries of ``X``, the center all zeros.

        Examples
        --------
        >>> import numpy as np
        >>> import scipy.sparse as sp
        >>> from rffkern import kernels
        >>> rows = kernels.CenteredRows.from_csr(sp.csr_array(np.array([[0.0, 3.0], [1.0, 0.0]])))
        >>> rows.indptr, rows.indices, rows.values, rows.center
        (array([0, 1, 2]), array([1, 0], dtype=int32), array([3., 1.]), array([0., 0.]))
        """
        import scipy.sparse as sp

        if not sp.issparse(X):
            raise TypeError(f"X must be a scipy.sparse matrix or array, got {type(X).__name__}")
        X = X.tocsr()
        if X.shape[1] > np.iinfo(np.int32).max:
            raise ValueError(f"X has {X.shape[1]} columns; at most 2**31 - 1 are supported")
        dtype = float_dtype_of(X.data)
        return cls(X.indptr, X.indices, X.data.astype(dtype, copy=False), np.zeros(X.shape[1], dtype), X.shape)

    @property
    def dtype(self) -> np.dtype:
        """The computation dtype: that of ``values``.

        Examples
        --------
        >>> import numpy as np
        >>> from rffkern import kernels
        >>> kernels.CenteredRows.from_dense(np.eye(2, dtype=np.float32)).dtype
        dtype('float32')
        """
        return self.values.dtype

    @property
    def density(self) -> float:
        """The share of stored entries, ``nnz / (n_samples * n_features)``.

        Examples
        --------
        >>> import numpy as np
        >>> from rffkern import kernels
        >>> kernels.CenteredRows.from_dense(np.eye(4)).density
        0.25
        """
        n, d = self.shape
        return float(self.indices.size) / max(n * d, 1)

    def _for(self, X: NDArray[np.floating]) -> tuple:
        """The tuple the compiled kernels take, for the validated ``X`` it describes."""
        if tuple(X.shape) != tuple(self.shape):
            raise ValueError(f"rows describe an X of shape {tuple(self.shape)}, but X has shape {X.shape}")
        if not self._describes(X):
            raise ValueError("rows do not hold X's values: they were built from another array; pass "
                             "rows=kernels.centered_rows(X) of the X given with them")
        return self._arrays(X.dtype)

    def _remember(self, X: NDArray[np.floating]) -> None:
        # a weak reference: the rows must not keep a caller's array alive
        object.__setattr__(self, "_source", weakref.ref(X))

    def _describes(self, X: NDArray[np.floating]) -> bool:
        """Whether X is the array the rows were built from or checked against, or has their values.

        Rows whose indices or offsets are broken pass here: the compiled kernels name that error."""
        source = getattr(self, "_source", None)
        if source is not None and source() is X:
            return True
        if not self._well_formed():
            return True
        if not self._holds_values_of(X):
            return False
        self._remember(X)
        return True

    def _well_formed(self) -> bool:
        idx, ptr = self.indices, self.indptr
        return (ptr[0] == 0 and bool(np.all(np.diff(ptr) >= 0))
                and (idx.size == 0 or (idx.min() >= 0 and idx.max() < self.shape[1])))

    def _holds_values_of(self, X: NDArray[np.floating]) -> bool:
        """``X - center == S`` block by block; to float32 rounding where X's dtype is not the rows'."""
        import scipy.sparse as sp

        S = sp.csr_array((self.values, self.indices, self.indptr), shape=self.shape)
        tol = 0.0 if X.dtype == self.dtype else 4 * float(np.finfo(np.float32).eps)
        step = max(1, 2**20 // max(self.shape[1], 1))
        for r0 in range(0, self.shape[0], step):
            block = X[r0:r0 + step]
            gap = block - self.center - S[r0:r0 + step].toarray()
            if gap.any() if tol == 0.0 else np.any(np.abs(gap) > tol * (np.abs(block) + np.abs(self.center))):
                return False
        return True

    def __getstate__(self) -> dict:
        # the weak reference to the source array does not pickle; the copy checks values instead
        state = dict(self.__dict__)
        state.pop("_source", None)
        return state

    def _arrays(self, dtype: np.dtype) -> tuple:
        """(indptr, indices, values, center), the floats in ``dtype``."""
        return self.indptr, self.indices, self.values.astype(dtype, copy=False), self.center.astype(dtype, copy=False)


def centered_rows(X: ArrayLike, max_density: float | None = None) -> CenteredRows | None:
    """:meth:`CenteredRows.from_dense` of ``X`` where few of its entries differ from their center.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
        Finite values; float32 stays float32, other dtypes become float64.
    max_density : float, default=None
        The largest share of stored entries kept; None: ``CENTERED_ROWS_MAX_DENSITY`` (0.3).

    Returns
    -------
    CenteredRows or None
        None where more than ``max_density`` of the entries differ from their column's center:
        keep ``X`` dense there, where the dense kernels are as fast or faster.

    Examples
    --------
    >>> import numpy as np
    >>> from rffkern import kernels
    >>> kernels.centered_rows(np.eye(10)).density
    0.1
    >>> kernels.centered_rows(np.arange(20.0).reshape(10, 2)) is None
    True
    """
    limit = CENTERED_ROWS_MAX_DENSITY if max_density is None else float(max_density)
    X = check_array_2d(X, "X", min_rows=1)
    center = _column_centers(X)
    head = X[:CENTER_ROWS]
    if np.count_nonzero(head != center) > 2 * limit * head.size:
        return None  # dense from its first rows on: not worth a pass over every row
    rows = CenteredRows._of_checked(X, center)
    return rows if rows.density <= limit else None


def _column_centers(X):
    """Each column's lower median over its first ``CENTER_ROWS`` rows: a value the column takes."""
    head = X[:CENTER_ROWS]
    k = (head.shape[0] - 1) // 2
    return np.partition(head, k, axis=0)[k]


def _rows_arg(rows, X):
    if rows is None:
        return None
    if not isinstance(rows, CenteredRows):
        raise TypeError(f"rows must be a kernels.CenteredRows or None, got {type(rows).__name__}")
    return rows._for(X)


def _x_and_rows(X, rows):
    """The (X, rows) arguments of the compiled features / predict / gram, where X may itself be a
    CenteredRows: then (None, its arrays)."""
    if not isinstance(X, CenteredRows):
        return X, _rows_arg(rows, X)
    if rows is not None:
        raise TypeError("X is already a CenteredRows: pass the rows as X or as rows=, not both")
    return None, X._arrays(X.dtype)


def _on_device(*arrays):
    """True when some argument is a CUDA device array (``__cuda_array_interface__``: CuPy, PyTorch)."""
    return any(a is not None and hasattr(a, "__cuda_array_interface__") for a in arrays)


def _cuda_backend():
    # imported on first use with a device array only: NumPy callers never load it (nor cupy/torch)
    from rffkern import _cuda_backend

    return _cuda_backend


# the phase bound of the dense map: d terms of |x theta| |W|, doubled for the centered rows'
# split x = center + (x - center)
_DENSE_GAIN = 2.0


def _prepare_map(X, weights, offsets, theta, scale, pair, *, X_name="X", min_rows=1):
    """(X, W, b, theta, scale, pair), checked and in X's dtype; X may be a CenteredRows (features,
    predict, gram), whose ``shape`` and ``dtype`` then stand for the array's."""
    if isinstance(X, CenteredRows):
        if X.shape[0] < min_rows or X.shape[1] == 0:
            raise ValueError(f"{X_name} has shape {X.shape}; at least {min_rows} row(s) and 1 feature required")
    else:
        X = check_array_2d(X, X_name, min_rows=min_rows, allow_empty=min_rows == 0)
    dtype = X.dtype
    W = np.asarray(refuse_sparse(weights, "weights"))
    if W.ndim != 2:
        raise ValueError(f"weights must be 2-D (n_features, n_components), got shape {W.shape}")
    if W.shape[0] != X.shape[1]:
        raise ValueError(
            f"{X_name} has {X.shape[1]} features but weights has {W.shape[0]} rows (one per feature)"
        )
    if W.shape[1] < 1:
        raise ValueError("weights must have at least one column (n_components >= 1)")
    W = check_matrix(W, "weights", W.shape, dtype)
    s = W.shape[1]
    b = None if offsets is None else check_vector(offsets, "offsets", s, dtype)
    th = None if theta is None else check_vector(theta, "theta", X.shape[1], dtype)
    if scale is None:
        scale = default_scale(s, pair)
    else:
        scale = check_scale(scale)
    with np.errstate(over="ignore"):
        if not np.isfinite(dtype.type(scale)):
            raise ValueError(f"scale={scale} overflows {dtype} (the computation dtype)")
    _check_phase_range(X, th, _DENSE_GAIN * X.shape[1] * _abs_max(W), b, dtype)
    return X, W, b, th, float(scale), bool(pair)


def _abs_max(a) -> float:
    """max |a| as a Python float (0 for an empty or absent array); two passes, no temporary."""
    if a is None or a.size == 0:
        return 0.0
    return float(max(a.max(), -a.min()))


def _check_phase_range(X, theta, gain: float, offsets, dtype) -> None:
    """Refuse inputs whose phases ``U = (x * theta) W + b`` can overflow ``dtype``.

    ``gain`` bounds ``max |U - b| / max |x * theta|`` over the kernel's intermediate sums (d max|W|
    for the dense map); the bound is checked in float64, so a phase is refused only where it can
    pass dtype's largest value. Past it the kernels' sums are inf and cos(inf) is NaN."""
    x_max = (_abs_max(X.values) + _abs_max(X.center) if isinstance(X, CenteredRows)
             else _abs_max(X))
    th_max = 1.0 if theta is None else _abs_max(theta)
    bound = gain * x_max * th_max + _abs_max(offsets)
    limit = float(np.finfo(dtype).max)
    if not bound < limit:
        raise ValueError(
            f"the phases (X * theta) @ weights + offsets can overflow {np.dtype(dtype)}: max |X| is "
            f"{x_max:.3g}, and with the weights, theta and offsets given they can reach {bound:.3g} "
            f"(at most {limit:.3g}); rescale X (standardize it) or the weights")


def features(X: ArrayLike | CenteredRows, weights: ArrayLike, offsets: ArrayLike | None = None, *,
             theta: ArrayLike | None = None, scale: float | None = None, pair: bool = False,
             out: NDArray[np.floating] | None = None, n_threads: int | None = None,
             rows: CenteredRows | None = None) -> NDArray[np.floating]:
    """Random cosine features ``scale * cos((X * theta) @ weights + offsets)``.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features) or CenteredRows
        Input rows. float32 stays float32; other dtypes become float64. A :class:`CenteredRows`
        (e.g. :meth:`CenteredRows.from_csr` of a scipy.sparse matrix) is read as the rows it
        holds, never densified.
    weights : array-like of shape (n_features, n_components)
        The frequencies ``W`` (one column per feature).
    offsets : array-like of shape (n_components,) or None
        The phases ``b``; None means zero.
    theta : array-like of shape (n_features,), default=None
        ARD scales multiplying each input feature; None means all ones.
    scale : float, default=None
        ``c``; None gives ``sqrt(2/s)`` (or ``sqrt(1/s)`` with ``pair=True``).
    pair : bool, default=False
        Use ``[cos U, sin U]`` (2 * n_components features) instead of ``cos U``.
    out : ndarray, default=None
        C-contiguous buffer of the result's shape and dtype, reused instead of allocating.
    n_threads : int, default=None
        Threads of the compiled kernel, as scikit-learn's ``n_jobs``: None = OpenMP's current
        limit, -1 = all usable cores; 0 is an error. The result does not depend on it.
    rows : CenteredRows, default=None
        ``X``'s centered sparse rows (:func:`centered_rows`): computed from them, the same result
        up to rounding, faster where few entries differ from their column's center.

    Returns
    -------
    ndarray of shape (n_samples, n_components) or (n_samples, 2 * n_components)
        Or an array of the caller's kind on its device when ``X`` is a CuPy array or a PyTorch
        CUDA tensor (``n_threads`` is then ignored); every array argument must then be on the device.

    Examples
    --------
    >>> import numpy as np
    >>> from rffkern import kernels
    >>> X = np.arange(6.0).reshape(3, 2) / 4
    >>> W = np.array([[1.0, 0.5, -1.0], [0.0, 2.0, 1.0]])
    >>> b = np.array([0.0, 1.0, 2.0])
    >>> kernels.features(X, W, b).round(3)
    array([[ 0.816,  0.058, -0.513],
           [ 0.717, -0.755, -0.513],
           [ 0.441, -0.534, -0.513]])
    >>> kernels.features(X, W, b, pair=True).shape
    (3, 6)
    """
    if _dlpack.any_foreign(X, weights, offsets, theta, out):
        return _dlpack.call(features, "X", **locals())  # the parameters as passed
    if _on_device(X, weights, offsets, theta, out):
        return _cuda_backend().features(X, weights, offsets, theta=theta, scale=scale, pair=pair, out=out)
    X, W, b, th, scale, pair = _prepare_map(X, weights, offsets, theta, scale, pair)
    shape = (X.shape[0], W.shape[1] * (2 if pair else 1))
    out = np.empty(shape, X.dtype) if out is None else check_out(out, "out", shape, X.dtype)
    Xa, rows_arg = _x_and_rows(X, rows)
    _core.features(Xa, W, b, th, X.dtype.type(scale), pair, out, resolve_n_threads(n_threads), rows_arg)
    return out


def predict(X: ArrayLike | CenteredRows, weights: ArrayLike, offsets: ArrayLike | None, coef: ArrayLike, *,
            theta: ArrayLike | None = None, scale: float | None = None, pair: bool = False,
            out: NDArray[np.floating] | None = None, n_threads: int | None = None,
            rows: CenteredRows | None = None) -> NDArray[np.floating]:
    """``features(X, ...) @ coef`` without storing the features.

    Memory is O(tile): the features of a block of rows are reduced against ``coef`` as they are
    computed. Device arrays (CuPy, PyTorch CUDA) run the CUDA kernel, as in :func:`features`.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features) or CenteredRows
        Input rows. float32 stays float32; other dtypes become float64. A :class:`CenteredRows`
        (e.g. :meth:`CenteredRows.from_csr` of a scipy.sparse matrix) is read as the rows it
        holds, never densified.
    weights : array-like of shape (n_features, n_components)
        The frequencies ``W`` (one column per feature).
    offsets : array-like of shape (n_components,) or None
        The phases ``b``; None means zero.
    coef : array-like of shape (n_out,) or (n_out, n_outputs)
        Coefficients, one row per feature (``n_out`` = n_components, or twice that with
        ``pair=True``).
    theta : array-like of shape (n_features,), default=None
        ARD scales multiplying each input feature; None means all ones.
    scale : float, default=None
        ``c``; None gives ``sqrt(2/s)`` (or ``sqrt(1/s)`` with ``pair=True``).
    pair : bool, default=False
        Use ``[cos U, sin U]`` (2 * n_components features) instead of ``cos U``.
    out : ndarray, default=None
        C-contiguous buffer of the result's shape and dtype, reused instead of allocating.
    n_threads : int, default=None
        Threads of the compiled kernel, as scikit-learn's ``n_jobs``: None = OpenMP's current
        limit, -1 = all usable cores; 0 is an error. The result does not depend on it.
    rows : CenteredRows, default=None
        ``X``'s centered sparse rows (:func:`centered_rows`): computed from them, the same result
        up to rounding, faster where few entries differ from their column's center.

    Returns
    -------
    ndarray of shape (n_samples,) or (n_samples, n_outputs)
        ``Z @ coef``, 1-D when ``coef`` is 1-D.

    Examples
    --------
    >>> import numpy as np
    >>> from rffkern import kernels
    >>> X = np.arange(6.0).reshape(3, 2) / 4
    >>> W = np.array([[1.0, 0.5, -1.0], [0.0, 2.0, 1.0]])
    >>> b = np.array([0.0, 1.0, 2.0])
    >>> kernels.predict(X, W, b, np.ones(3)).round(3)
    array([ 0.361, -0.551, -0.605])
    """
    if _dlpack.any_foreign(X, weights, offsets, coef, theta, out):
        return _dlpack.call(predict, "X", **locals())  # the parameters as passed
    if _on_device(X, weights, offsets, coef, theta, out):
        return _cuda_backend().predict(X, weights, offsets, coef, theta=theta, scale=scale, pair=pair,
                                       out=out)
    X, W, b, th, scale, pair = _prepare_map(X, weights, offsets, theta, scale, pair)
    n_out = W.shape[1] * (2 if pair else 1)
    coef_arr = np.asarray(refuse_sparse(coef, "coef"))
    ravel = coef_arr.ndim == 1
    if ravel:
        coef_arr = coef_arr.reshape(-1, 1)
    C = check_matrix(coef_arr, "coef", (n_out, None), X.dtype)
    shape = (X.shape[0], C.shape[1])
    if out is None:
        buf = np.empty(shape, X.dtype)
    elif ravel:
        buf = check_out(out, "out", (X.shape[0],), X.dtype).reshape(shape)
    else:
        buf = check_out(out, "out", shape, X.dtype)
    Xa, rows_arg = _x_and_rows(X, rows)
    _core.predict(Xa, W, b, th, X.dtype.type(scale), pair, C, buf, resolve_n_threads(n_threads), rows_arg)
    if out is not None:
        return out
    return buf[:, 0] if ravel else buf


def gram(X: ArrayLike | CenteredRows, weights: ArrayLike, offsets: ArrayLike | None = None,
         Y: ArrayLike | None = None, *, theta: ArrayLike | None = None, scale: float | None = None,
         pair: bool = False, out: NDArray[np.floating] | None = None,
         out_zty: NDArray[np.floating] | None = None, accumulate: bool = False, n_threads: int | None = None,
         rows: CenteredRows | None = None,
         ) -> NDArray[np.floating] | tuple[NDArray[np.floating], NDArray[np.floating]]:
    """``Z.T @ Z`` and, if ``Y`` is given, ``Z.T @ Y``, streamed over row blocks of X.

    Memory is O(s^2 + tile), never O(n s). Every entry is summed in the same order whatever the
    thread count. With ``accumulate=True`` the results are added to ``out`` / ``out_zty`` (which
    must then be given), so a Gram matrix can be built chunk by chunk.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features) or CenteredRows
        Input rows. float32 stays float32; other dtypes become float64. A :class:`CenteredRows`
        is read as the rows it holds, never densified (as in :func:`features`).
    weights : array-like of shape (n_features, n_components)
        The frequencies ``W`` (one column per feature).
    offsets : array-like of shape (n_components,) or None
        The phases ``b``; None means zero.
    Y : array-like of shape (n_samples,) or (n_samples, n_outputs), default=None
        Targets; when given, ``Z.T @ Y`` is computed in the same pass.
    theta : array-like of shape (n_features,), default=None
        ARD scales multiplying each input feature; None means all ones.
    scale : float, default=None
        ``c``; None gives ``sqrt(2/s)`` (or ``sqrt(1/s)`` with ``pair=True``).
    pair : bool, default=False
        Use ``[cos U, sin U]`` (2 * n_components features) instead of ``cos U``.
    out : ndarray of shape (n_out, n_out), default=None
        Buffer for ``Z.T @ Z`` (required with ``accumulate=True``).
    out_zty : ndarray, default=None
        Buffer for ``Z.T @ Y``, of shape (n_out,) for 1-D ``Y`` (required with
        ``accumulate=True`` and ``Y``).
    accumulate : bool, default=False
        Add to ``out`` / ``out_zty`` instead of overwriting them.
    n_threads : int, default=None
        Threads of the compiled kernel, as scikit-learn's ``n_jobs``: None = OpenMP's current
        limit, -1 = all usable cores; 0 is an error. The result does not depend on it.
    rows : CenteredRows, default=None
        ``X``'s centered sparse rows (:func:`centered_rows`): each row's ``U`` is formed from its
        stored entries, the same result up to rounding; the rank updates of ``G`` cost as before.

    Returns
    -------
    ndarray of shape (n_out, n_out), or tuple of two ndarrays
        ``G = Z.T @ Z``; or the tuple ``(G, ZtY)`` when ``Y`` is given, ``ZtY`` of shape (n_out,) for
        1-D ``Y``. Device arrays (CuPy, PyTorch CUDA) run the CUDA kernel, as in :func:`features`.

    Examples
    --------
    >>> import numpy as np
    >>> from rffkern import kernels
    >>> X = np.arange(6.0).reshape(3, 2) / 4
    >>> W = np.array([[1.0, 0.5, -1.0], [0.0, 2.0, 1.0]])
    >>> b = np.array([0.0, 1.0, 2.0])
    >>> G, ZtY = kernels.gram(X, W, b, np.ones(3))
    >>> G.shape, ZtY.round(3)
    ((3, 3), array([ 1.974, -1.231, -1.539]))
    >>> bool(np.allclose(G, kernels.features(X, W, b).T @ kernels.features(X, W, b)))
    True
    """
    if _dlpack.any_foreign(X, weights, offsets, Y, theta, out, out_zty):
        return _dlpack.call(gram, "X", **locals())  # the parameters as passed
    if _on_device(X, weights, offsets, Y, theta, out, out_zty):
        return _cuda_backend().gram(X, weights, offsets, Y, theta=theta, scale=scale, pair=pair, out=out,
                                    out_zty=out_zty, accumulate=accumulate)
    X, W, b, th, scale, pair = _prepare_map(X, weights, offsets, theta, scale, pair, min_rows=0)
    n_out = W.shape[1] * (2 if pair else 1)
    dtype = X.dtype
    if accumulate and out is None:
        raise ValueError("accumulate=True needs out= (the running Gram matrix)")
    G = np.empty((n_out, n_out), dtype) if out is None else check_out(out, "out", (n_out, n_out), dtype)
    Xa, rows_arg = _x_and_rows(X, rows)
    if Y is None:
        if out_zty is not None:
            raise ValueError("out_zty is Z.T @ Y's buffer: it needs Y (got Y=None)")
        _core.gram(Xa, W, b, th, dtype.type(scale), pair, None, G, None, bool(accumulate),
                   resolve_n_threads(n_threads), rows_arg)
        return G
    Y_arr = np.asarray(refuse_sparse(Y, "Y"))
    ravel = Y_arr.ndim == 1
    if ravel:
        Y_arr = Y_arr.reshape(-1, 1)
    if Y_arr.ndim != 2 or Y_arr.shape[0] != X.shape[0]:
        raise ValueError(f"Y must have {X.shape[0]} rows (one per sample of X), got shape {np.shape(Y)}")
    Yc = check_matrix(Y_arr, "Y", (X.shape[0], None), dtype)
    zshape = (n_out, Yc.shape[1])
    if accumulate and out_zty is None:
        raise ValueError("accumulate=True with Y needs out_zty= (the running Z.T @ Y)")
    if out_zty is None:
        ZtY = np.empty(zshape, dtype)
    elif ravel:
        ZtY = check_out(out_zty, "out_zty", (n_out,), dtype).reshape(zshape)
    else:
        ZtY = check_out(out_zty, "out_zty", zshape, dtype)
    _core.gram(Xa, W, b, th, dtype.type(scale), pair, Yc, G, ZtY, bool(accumulate),
               resolve_n_threads(n_threads), rows_arg)
    if out_zty is not None:
        return G, out_zty
    return G, (ZtY[:, 0] if ravel else ZtY)


def _check_targets(Y, n, loss, dtype, n_outputs=None):
    Y_arr = np.asarray(refuse_sparse(Y, "Y"))
    if Y_arr.ndim == 1:
        Y_arr = Y_arr.reshape(-1, 1)
    if Y_arr.ndim != 2 or Y_arr.shape[0] != n:
        raise ValueError(f"Y must have {n} rows (one per sample of X), got shape {np.shape(Y)}")
    Yc = check_matrix(Y_arr, "Y", (n, n_outputs), dtype)
    if loss == "logistic" and not np.all((Yc == 0) | (Yc == 1)):
        raise ValueError("the logistic loss needs targets in {0, 1}")
    if loss == "softmax" and (np.any(Yc < 0) or not np.allclose(Yc.sum(axis=1), 1, atol=1e-4)):
        raise ValueError("the softmax loss needs one-hot (or probability) target rows summing to 1")
    return Yc


#: loss_and_grad's losses: the training losses and "linear" (``y . f``, whose gradient in ``f`` is
#: ``y``: the backward pass of ``f = Z @ coef`` for any upstream gradient ``y``; rffkern.torch).
_GRADIENT_LOSSES = LOSSES + ("linear",)


def _check_loss(loss, allowed=LOSSES):
    if loss not in allowed:
        raise ValueError(f"loss must be one of {allowed}, got {loss!r}")
    return loss


def loss_and_grad(X: ArrayLike, Y: ArrayLike, weights: ArrayLike, offsets: ArrayLike | None, coef: ArrayLike,
                  *, theta: ArrayLike | None = None, loss: str = "squared", scale: float | None = None,
                  pair: bool = False, want_theta: bool = True, out_coef: NDArray[np.floating] | None = None,
                  out_theta: NDArray[np.floating] | None = None, n_threads: int | None = None,
                  rows: CenteredRows | None = None,
                  ) -> tuple[float, NDArray[np.floating], NDArray[np.floating] | None]:
    """Mean loss of ``f = Z @ coef`` and its gradients, in one fused forward/backward pass.

    Losses per sample (``f`` and ``y`` rows of n_outputs values):
    ``squared`` 1/2 sum (f - y)^2; ``logistic`` sum log(1 + e^f) - y f with y in {0, 1};
    ``softmax`` -sum y log softmax(f) with one-hot y; ``linear`` sum y f with any finite y, whose
    gradient in ``f`` is ``y``: with ``Y`` an upstream gradient ``dL/df``, ``n`` times the returned
    gradients are ``dL/dcoef`` and ``dL/dtheta`` (the backward pass of :func:`predict`, as
    :mod:`rffkern.torch` uses it).

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
        Input rows. float32 stays float32; other dtypes become float64.
    Y : array-like of shape (n_samples,) or (n_samples, n_outputs)
        Targets: real values (squared), 0/1 (logistic), one-hot rows (softmax), or the upstream
        gradient (linear).
    weights : array-like of shape (n_features, n_components)
        The frequencies ``W`` (one column per feature).
    offsets : array-like of shape (n_components,) or None
        The phases ``b``; None means zero.
    coef : array-like of shape (n_out,) or (n_out, n_outputs)
        Coefficients, one row per feature.
    theta : array-like of shape (n_features,), default=None
        ARD scales multiplying each input feature; None means all ones.
    loss : {"squared", "logistic", "softmax", "linear"}, default="squared"
        The loss (see above).
    scale : float, default=None
        ``c``; None gives ``sqrt(2/s)`` (or ``sqrt(1/s)`` with ``pair=True``).
    pair : bool, default=False
        Use ``[cos U, sin U]`` (2 * n_components features) instead of ``cos U``.
    want_theta : bool, default=True
        Compute the gradient in ``theta`` (skipped, and returned as None, when False).
    out_coef : ndarray, default=None
        Buffer of ``coef``'s shape for the coefficient gradient (reused, never copied).
    out_theta : ndarray of shape (n_features,), default=None
        Buffer for the ``theta`` gradient.
    n_threads : int, default=None
        Threads of the compiled kernel, as scikit-learn's ``n_jobs``: None = OpenMP's current
        limit, -1 = all usable cores; 0 is an error. The result does not depend on it.
    rows : CenteredRows, default=None
        ``X``'s centered sparse rows (:func:`centered_rows`): computed from them, the same result
        up to rounding, faster where few entries differ from their column's center.

    Returns
    -------
    loss : float
        The mean loss over the samples.
    grad_coef : ndarray of coef's shape
        The gradient in ``coef``.
    grad_theta : ndarray of shape (n_features,) or None
        The gradient in the ARD scales ``theta`` (ones when ``theta`` is None); None when
        ``want_theta=False``.

    Examples
    --------
    >>> import numpy as np
    >>> from rffkern import kernels
    >>> X = np.arange(6.0).reshape(3, 2) / 4
    >>> W = np.array([[1.0, 0.5, -1.0], [0.0, 2.0, 1.0]])
    >>> b = np.array([0.0, 1.0, 2.0])
    >>> loss, grad_coef, grad_theta = kernels.loss_and_grad(X, np.ones(3), W, b, np.zeros(3))
    >>> round(loss, 3), grad_coef.round(3), grad_theta
    (0.5, array([-0.658,  0.41 ,  0.513]), array([0., 0.]))
    """
    if _dlpack.any_foreign(X, Y, weights, offsets, coef, theta, out_coef, out_theta):
        return _dlpack.call(loss_and_grad, "X", **locals())  # the parameters as passed
    _check_loss(loss, _GRADIENT_LOSSES)
    X, W, b, th, scale, pair = _prepare_map(X, weights, offsets, theta, scale, pair)
    n_out = W.shape[1] * (2 if pair else 1)
    coef_arr = np.asarray(refuse_sparse(coef, "coef"))
    ravel = coef_arr.ndim == 1
    C = check_matrix(coef_arr.reshape(-1, 1) if ravel else coef_arr, "coef", (n_out, None), X.dtype)
    Yc = _check_targets(Y, X.shape[0], loss, X.dtype, C.shape[1])
    if out_coef is None:
        grad_coef = np.empty_like(C)
    else:
        grad_coef = check_out(out_coef, "out_coef", coef_arr.shape, X.dtype).reshape(C.shape)
    grad_theta = None
    if want_theta:
        grad_theta = (np.empty(X.shape[1], X.dtype) if out_theta is None
                      else check_out(out_theta, "out_theta", (X.shape[1],), X.dtype))
    value = _core.loss_and_grad(X, Yc, W, b, th, X.dtype.type(scale), pair, C, loss, grad_coef,
                                grad_theta, resolve_n_threads(n_threads), _rows_arg(rows, X))
    if out_coef is not None:
        grad_coef = out_coef
    elif ravel:
        grad_coef = grad_coef[:, 0]
    return float(value), grad_coef, grad_theta


def logistic_loss_grad(Z: ArrayLike, y: ArrayLike, coef: ArrayLike, sample_weight: ArrayLike | None = None, *,
                       n_threads: int | None = None) -> tuple[float, NDArray[np.float64]]:
    """Weighted logistic loss of the logits ``f = Z @ coef`` and its gradient, in one pass over ``Z``.

    ``loss = sum_i w_i (log(1 + exp(f_i)) - y_i f_i)`` and
    ``grad = sum_i w_i (sigmoid(f_i) - y_i) Z_i``: two matrix-vector products (``Z @ coef``, then
    ``Z.T @ r``) would read ``Z`` from memory twice, this kernel reads each row once (the closing
    fit of :class:`~rffkern.RFFNetClassifier` evaluates it some hundreds of times on fixed
    features). The logits are formed in ``Z``'s dtype, the loss and residuals in float64; the
    gradient is summed in ``Z``'s dtype over each block of 256 rows and in float64 over the blocks.

    Parameters
    ----------
    Z : array-like of shape (n_samples, n_features)
        The features. float32 stays float32; other dtypes become float64.
    y : array-like of shape (n_samples,)
        Targets in {0, 1}.
    coef : array-like of shape (n_features,)
        Coefficients (converted to ``Z``'s dtype).
    sample_weight : array-like of shape (n_samples,), default=None
        Row weights ``w_i`` (finite; any sign); None: 1 each.
    n_threads : int, default=None
        Threads of the compiled kernel, as scikit-learn's ``n_jobs``. The result does not depend
        on it.

    Returns
    -------
    loss : float
        The weighted sum of the per-row losses.
    grad : ndarray of shape (n_features,), float64
        Its gradient in ``coef``.

    Examples
    --------
    >>> import numpy as np
    >>> from rffkern import kernels
    >>> Z = np.array([[1.0, 0.0], [0.0, 2.0], [1.0, 1.0]])
    >>> loss, grad = kernels.logistic_loss_grad(Z, [1.0, 0.0, 1.0], np.zeros(2))
    >>> round(loss, 4), grad
    (2.0794, array([-1. ,  0.5]))
    """
    if _dlpack.any_foreign(Z, y, coef, sample_weight):
        return _dlpack.call(logistic_loss_grad, "Z", **locals())  # the parameters as passed
    Zc = check_array_2d(Z, "Z")
    n, s = Zc.shape
    yc = check_vector(y, "y", n, np.float64)
    if not np.all((yc == 0) | (yc == 1)):
        raise ValueError("the logistic loss needs targets y in {0, 1}")
    c = check_vector(coef, "coef", s, Zc.dtype)
    w = np.ones(n) if sample_weight is None else check_vector(sample_weight, "sample_weight", n, np.float64)
    return logistic_loss_grad_unchecked(Zc, yc, c, w, resolve_n_threads(n_threads))


def softmax_loss_grad(Z: ArrayLike, Y: ArrayLike, coef: ArrayLike, sample_weight: ArrayLike | None = None, *,
                      n_threads: int | None = None) -> tuple[float, NDArray[np.float64]]:
    """Weighted softmax cross-entropy of the logits ``F = Z @ coef`` and its gradient, in one pass over ``Z``.

    ``loss = sum_i w_i sum_k Y_ik (lse(F_i) - F_ik)``, with ``lse`` the log-sum-exp over the
    outputs, and ``grad = Z.T @ R`` with ``R_ik = w_i (softmax(F_i)_k sum_l Y_il - Y_ik)``: the
    multinomial counterpart of :func:`logistic_loss_grad`. Two matrix products (``Z @ coef``, then
    ``Z.T @ R``) would read ``Z`` from memory twice, this kernel reads each row once, forming its
    logits for blocks of rows and outputs in registers (the closing fit of
    :class:`~rffkern.RFFNetClassifier` with three or more classes evaluates it some hundreds of
    times on fixed features). The logits are formed in ``Z``'s dtype, the losses and residuals in
    float64; the gradient is summed in ``Z``'s dtype over each block of 256 rows and in float64
    over the blocks.

    Parameters
    ----------
    Z : array-like of shape (n_samples, n_features)
        The features. float32 stays float32; other dtypes become float64.
    Y : array-like of shape (n_samples, n_outputs)
        Targets: one-hot rows, or any non-negative weights of the outputs (at least 2 outputs).
    coef : array-like of shape (n_features, n_outputs)
        Coefficients (converted to ``Z``'s dtype).
    sample_weight : array-like of shape (n_samples,), default=None
        Row weights ``w_i`` (finite; any sign); None: 1 each.
    n_threads : int, default=None
        Threads of the compiled kernel, as scikit-learn's ``n_jobs``. The result does not depend
        on it.

    Returns
    -------
    loss : float
        The weighted sum of the per-row cross-entropies.
    grad : ndarray of shape (n_features, n_outputs), float64
        Its gradient in ``coef``.

    Examples
    --------
    >>> import numpy as np
    >>> from rffkern import kernels
    >>> Z = np.array([[1.0, 0.0], [0.0, 2.0]])
    >>> loss, grad = kernels.softmax_loss_grad(Z, np.eye(2), np.zeros((2, 2)))
    >>> round(loss, 4), grad
    (1.3863, array([[-0.5,  0.5],
           [ 1. , -1. ]]))
    """
    if _dlpack.any_foreign(Z, Y, coef, sample_weight):
        return _dlpack.call(softmax_loss_grad, "Z", **locals())  # the parameters as passed
    Zc = check_array_2d(Z, "Z")
    n, s = Zc.shape
    Yc = check_matrix(Y, "Y", (n, None), np.float64)
    if Yc.shape[1] < 2:
        raise ValueError(f"the softmax loss needs at least 2 outputs (columns of Y), got {Yc.shape[1]}; "
                         "use logistic_loss_grad for one")
    if np.any(Yc < 0):
        raise ValueError("the softmax loss needs non-negative targets Y (one-hot rows or class weights)")
    c = check_matrix(coef, "coef", (s, Yc.shape[1]), Zc.dtype)
    w = np.ones(n) if sample_weight is None else check_vector(sample_weight, "sample_weight", n, np.float64)
    loss, grad_t = softmax_loss_grad_unchecked(Zc, Yc, np.ascontiguousarray(c.T), w, resolve_n_threads(n_threads))
    return loss, grad_t.T.copy()


def _check_step_params(learning_rate: float, beta1: float, beta2: float, eps: float, l2: float, l1: float,
                       l2_name: str = "l2", l1_name: str = "l1") -> None:
    if check_positive_float(learning_rate, "learning_rate") > MAX_LEARNING_RATE:
        raise ValueError(f"learning_rate must be at most MAX_LEARNING_RATE = {MAX_LEARNING_RATE:g} (a step "
                         f"moves each parameter by about learning_rate), got {learning_rate!r}")
    for name, v in (("beta1", beta1), ("beta2", beta2)):
        if isinstance(v, bool) or not isinstance(v, numbers.Real) or not 0 <= v < 1:
            raise ValueError(f"{name} must be in [0, 1), got {v!r}")
    check_positive_float(eps, "eps")
    check_positive_float(l2, l2_name, allow_zero=True)
    check_positive_float(l1, l1_name, allow_zero=True)


def _check_inplace(arr, name, dtype=None, shape=None):
    refuse_sparse(arr, name)
    if not isinstance(arr, np.ndarray):
        raise TypeError(f"{name} must be a numpy.ndarray (it is updated in place)")
    if arr.dtype not in (np.float32, np.float64) or (dtype is not None and arr.dtype != dtype):
        raise TypeError(f"{name} must have dtype {dtype or 'float32 or float64'}, got {arr.dtype}")
    if shape is not None and arr.shape != shape:
        raise ValueError(f"{name} must have shape {shape}, got {arr.shape}")
    if not arr.flags.c_contiguous or not arr.flags.writeable:
        raise ValueError(f"{name} must be a writeable C-contiguous array (it is updated in place)")
    if not np.isfinite(arr).all():
        raise ValueError(f"{name} contains NaN or infinity")
    return arr


def adam_prox_step(param: NDArray[np.floating], grad: ArrayLike, m: NDArray[np.floating],
                   v: NDArray[np.floating], step: int, *, learning_rate: float = 1e-3, beta1: float = 0.9,
                   beta2: float = 0.999, eps: float = 1e-8, l2: float = 0.0, l1: float = 0.0,
                   n_threads: int | None = None) -> NDArray[np.floating]:
    """One bias-corrected Adam step on ``param`` (in place), then the proximal maps.

    ``l2 > 0``: prox of ``l2 * ||param||^2``, ``param /= 1 + 2 * l2 * learning_rate``;
    ``l1 > 0``: soft-threshold by ``l1 * learning_rate``.

    Parameters
    ----------
    param : ndarray
        A float32 or float64 C-contiguous array, updated in place.
    grad : array-like of param's shape
        The gradient at ``param``.
    m : ndarray of param's shape and dtype
        Adam's first moment, updated in place.
    v : ndarray of param's shape and dtype
        Adam's second moment (>= 0), updated in place.
    step : int
        The 1-based step number (for the bias correction).
    learning_rate : float, default=1e-3
        Step size, in (0, :data:`MAX_LEARNING_RATE`].
    beta1 : float, default=0.9
        Decay of the first moment, in [0, 1).
    beta2 : float, default=0.999
        Decay of the second moment, in [0, 1).
    eps : float, default=1e-8
        Added to the root of the second moment.
    l2 : float, default=0.0
        Strength of the l2 (ridge) proximal map.
    l1 : float, default=0.0
        Strength of the l1 (soft-threshold) proximal map.
    n_threads : int, default=None
        Threads of the compiled kernel, as scikit-learn's ``n_jobs``: None = OpenMP's current
        limit, -1 = all usable cores; 0 is an error. The result does not depend on it.

    Returns
    -------
    ndarray
        ``param``, updated.

    Examples
    --------
    >>> import numpy as np
    >>> from rffkern.kernels import adam_prox_step
    >>> p, m, v = np.ones(3), np.zeros(3), np.zeros(3)
    >>> adam_prox_step(p, np.array([1.0, -1.0, 0.0]), m, v, 1, learning_rate=0.1).round(3)
    array([0.9, 1.1, 1. ])
    """
    if _dlpack.any_foreign(param, grad, m, v):
        return _dlpack.call(adam_prox_step, "param", **locals())  # the parameters as passed
    _check_inplace(param, "param")
    for name, a in (("m", m), ("v", v)):
        _check_inplace(a, name, param.dtype, param.shape)
    g = check_matrix(np.asarray(refuse_sparse(grad, "grad")).reshape(1, -1), "grad", (1, param.size), param.dtype)
    if np.shape(grad) != param.shape:
        raise ValueError(f"grad must have param's shape {param.shape}, got {np.shape(grad)}")
    if np.any(v < 0):
        raise ValueError("v must be >= 0 (Adam's second moment is a running mean of squares)")
    check_positive_int(step, "step")
    _check_step_params(learning_rate, beta1, beta2, eps, l2, l1)
    _core.adam_prox_step(param, g.reshape(param.shape), m, v, int(step), learning_rate, beta1, beta2,
                         eps, l2, l1, resolve_n_threads(n_threads))
    return param


def sgd_prox_step(param: NDArray[np.floating], grad: ArrayLike, *, learning_rate: float = 1e-3, l2: float = 0.0,
                  l1: float = 0.0, n_threads: int | None = None) -> NDArray[np.floating]:
    """``param -= learning_rate * grad`` in place, then the same proximal maps as Adam.

    Parameters
    ----------
    param : ndarray
        A float32 or float64 C-contiguous array, updated in place.
    grad : array-like of param's shape
        The gradient at ``param``.
    learning_rate : float, default=1e-3
        Step size, in (0, :data:`MAX_LEARNING_RATE`].
    l2 : float, default=0.0
        Strength of the l2 proximal map (``param /= 1 + 2 * l2 * learning_rate``).
    l1 : float, default=0.0
        Strength of the l1 proximal map (soft-threshold by ``l1 * learning_rate``).
    n_threads : int, default=None
        Threads of the compiled kernel, as scikit-learn's ``n_jobs``: None = OpenMP's current
        limit, -1 = all usable cores; 0 is an error. The result does not depend on it.

    Returns
    -------
    ndarray
        ``param``, updated.

    Examples
    --------
    >>> import numpy as np
    >>> from rffkern.kernels import sgd_prox_step
    >>> sgd_prox_step(np.ones(3), np.array([1.0, -1.0, 0.0]), learning_rate=0.5, l1=0.2)
    array([0.4, 1.4, 0.9])
    """
    if _dlpack.any_foreign(param, grad):
        return _dlpack.call(sgd_prox_step, "param", **locals())  # the parameters as passed
    _check_inplace(param, "param")
    g = check_matrix(np.asarray(refuse_sparse(grad, "grad")).reshape(1, -1), "grad", (1, param.size), param.dtype)
    if np.shape(grad) != param.shape:
        raise ValueError(f"grad must have param's shape {param.shape}, got {np.shape(grad)}")
    _check_step_params(learning_rate, 0.9, 0.999, 1e-8, l2, l1)
    _core.sgd_prox_step(param, g.reshape(param.shape), learning_rate, l2, l1, resolve_n_threads(n_threads))
    return param


class TrainingDivergedError(ValueError):
    """An epoch of :func:`train_epoch` gave a non-finite loss, parameter or Adam moment.

    ``theta``, ``coef`` and the :class:`AdamState` are restored to their values before the epoch.
    Lower ``learning_rate``, or standardize ``X`` and ``Y`` (targets of very large magnitude make
    the squared loss overflow).

    Examples
    --------
    >>> from rffkern import kernels
    >>> issubclass(kernels.TrainingDivergedError, ValueError)
    True
    """


class AdamState:
    """Adam moments for (coef, theta) and the step counter, kept across epochs and partial fits.

    Parameters
    ----------
    coef_shape : tuple of int
        Shape of the coefficients ``(n_out, n_outputs)``.
    n_features : int
        Length of ``theta``.
    dtype : numpy dtype
        Float32 or float64, the dtype of ``coef`` and ``theta``.

    Attributes
    ----------
    m_coef, v_coef : ndarray of shape coef_shape
        First and second moments of the coefficients.
    m_theta, v_theta : ndarray of shape (n_features,)
        First and second moments of ``theta``.
    step : int
        Steps taken so far.

    Examples
    --------
    >>> import numpy as np
    >>> from rffkern.kernels import AdamState
    >>> state = AdamState((6, 1), 2, np.float64)
    >>> state.m_coef.shape, state.v_theta.shape, state.step
    ((6, 1), (2,), 0)
    """

    def __init__(self, coef_shape: tuple[int, ...], n_features: int, dtype: DTypeLike) -> None:
        self.m_coef = np.zeros(coef_shape, dtype)
        self.v_coef = np.zeros(coef_shape, dtype)
        self.m_theta = np.zeros(n_features, dtype)
        self.v_theta = np.zeros(n_features, dtype)
        self.step = 0


def train_epoch(X: NDArray[np.floating], Y: NDArray[np.floating], order: ArrayLike, weights: ArrayLike,
                offsets: ArrayLike | None, theta: NDArray[np.floating], coef: NDArray[np.floating],
                state: AdamState, *, batch_size: int = 32, loss: str = "squared", solver: str = "adam",
                learning_rate: float = 1e-3, beta1: float = 0.9, beta2: float = 0.999, eps: float = 1e-8,
                l2_coef: float = 0.0, l1_theta: float = 0.0, update_coef: bool = True,
                update_theta: bool = True, scale: float | None = None, check_finite: bool = True,
                n_threads: int | None = None, theta_moment: str = "coordinate",
                rows: CenteredRows | None = None) -> float:
    """One pass of mini-batch steps over ``X[order]``, entirely inside the core (GIL released).

    Batches are consecutive chunks of ``order`` of ``batch_size`` rows (the last may be smaller);
    each takes the fused loss/gradient and one Adam (``solver="adam"``) or SGD (``"sgd"``) step on
    ``coef`` (then the prox of ``l2_coef * ||coef||^2``) and ``theta`` (then, if ``l1_theta > 0``,
    soft-thresholding).

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features)
        C-contiguous, of ``theta``'s dtype (not copied; validate it once per fit).
    Y : ndarray of shape (n_samples, n_outputs)
        C-contiguous targets of ``theta``'s dtype.
    order : array-like of int of shape (n_order,)
        Row indices of X in the order they are visited.
    weights : array-like of shape (n_features, n_components)
        The frequencies ``W``.
    offsets : array-like of shape (n_components,) or None
        The phases ``b``; None means zero.
    theta : ndarray of shape (n_features,)
        ARD scales, updated in place.
    coef : ndarray of shape (n_components, n_outputs)
        Coefficients, updated in place.
    state : AdamState
        Adam moments and step counter, updated in place (SGD only advances the counter).
    batch_size : int, default=32
        Rows per mini-batch.
    loss : {"squared", "logistic", "softmax", "linear"}, default="squared"
        The loss, as in :func:`loss_and_grad`.
    solver : {"adam", "sgd"}, default="adam"
        The step rule.
    learning_rate : float, default=1e-3
        Step size, in (0, :data:`MAX_LEARNING_RATE`].
    beta1 : float, default=0.9
        Adam's first-moment decay, in [0, 1).
    beta2 : float, default=0.999
        Adam's second-moment decay, in [0, 1).
    eps : float, default=1e-8
        Adam's denominator offset.
    l2_coef : float, default=0.0
        The l2 penalty on ``coef`` (applied by its proximal map).
    l1_theta : float, default=0.0
        The l1 penalty on ``theta`` (soft-thresholding).
    update_coef : bool, default=True
        Whether ``coef`` is trained.
    update_theta : bool, default=True
        Whether ``theta`` is trained.
    scale : float, default=None
        ``c``; None gives ``sqrt(2/s)``.
    check_finite : bool, default=True
        Scan X and Y for NaN/infinity (False for callers that validated them once).
    n_threads : int, default=None
        Threads of the compiled kernel, as scikit-learn's ``n_jobs``: None = OpenMP's current
        limit, -1 = all usable cores; 0 is an error. The result does not depend on it.
    theta_moment : {"coordinate", "shared"}, default="coordinate"
        Adam's second moment of ``theta``: one per coordinate (Adam), or "shared": one for the
        whole ``theta`` block, the running mean of ``mean_j g_j^2`` (every entry of
        ``state.v_theta`` then holds it), so that the step of ``theta_j`` is proportional to
        ``g_j / RMS_j(g_j)`` and coordinates with small gradients move little. Ignored by SGD.
    rows : CenteredRows, default=None
        ``X``'s centered sparse rows (:func:`centered_rows`): computed from them, the same result
        up to rounding, faster where few entries differ from their column's center.

    Returns
    -------
    float
        The mean of the batch losses (each evaluated before its step).

    Raises
    ------
    TrainingDivergedError
        The epoch left a non-finite loss, parameter or moment; ``theta``, ``coef`` and ``state``
        are then restored to their values before it.
    ValueError
        Invalid arguments, among them ``learning_rate`` above :data:`MAX_LEARNING_RATE`, or
        inputs whose phases can overflow the dtype.

    Examples
    --------
    >>> import numpy as np
    >>> from rffkern import kernels
    >>> rng = np.random.default_rng(0)
    >>> X, y = rng.normal(size=(40, 2)), rng.normal(size=(40, 1))
    >>> W, b = rng.normal(size=(2, 8)), rng.uniform(0, 2 * np.pi, 8)
    >>> theta, coef = np.ones(2), np.zeros((8, 1))
    >>> state = kernels.AdamState(coef.shape, 2, np.float64)
    >>> loss = kernels.train_epoch(X, y, np.arange(40), W, b, theta, coef, state, batch_size=10)
    >>> state.step, bool(np.isfinite(loss))
    (4, True)
    """
    if _dlpack.any_foreign(X, Y, order, weights, offsets, theta, coef):
        return _dlpack.call(train_epoch, "X", **locals())  # the parameters as passed
    _check_loss(loss)
    if solver not in ("adam", "sgd"):
        raise ValueError(f"solver must be 'adam' or 'sgd', got {solver!r}")
    if theta_moment not in ("coordinate", "shared"):
        raise ValueError(f"theta_moment must be 'coordinate' or 'shared', got {theta_moment!r}")
    dtype = theta.dtype if isinstance(theta, np.ndarray) else None
    _check_inplace(theta, "theta")
    dtype = theta.dtype
    _check_inplace(coef, "coef", dtype)
    if coef.ndim != 2:
        raise ValueError(f"coef must be 2-D (n_components, n_outputs), got shape {coef.shape}")
    for name, a, shp in (("state.m_coef", state.m_coef, coef.shape), ("state.v_coef", state.v_coef, coef.shape),
                         ("state.m_theta", state.m_theta, theta.shape),
                         ("state.v_theta", state.v_theta, theta.shape)):
        _check_inplace(a, name, dtype, shp)
    if np.any(state.v_coef < 0) or np.any(state.v_theta < 0):
        raise ValueError("state.v_coef and state.v_theta must be >= 0 (Adam's second moments)")
    for name, a in (("X", X), ("Y", Y)):
        refuse_sparse(a, name)
        if not (isinstance(a, np.ndarray) and a.dtype == dtype and a.ndim == 2 and a.flags.c_contiguous):
            raise TypeError(f"{name} must be a C-contiguous 2-D {dtype} array (validate it once per fit)")
        if check_finite and not np.isfinite(a).all():
            raise ValueError(f"{name} contains NaN or infinity")
    order = np.asarray(refuse_sparse(order, "order"))
    if order.dtype.kind not in "iu":
        raise TypeError(f"order must be an integer array of row indices, got dtype {order.dtype}")
    order = np.ascontiguousarray(order, dtype=np.int64)
    if order.ndim != 1:
        raise ValueError("order must be 1-D")
    if order.size and (order.min() < 0 or order.max() >= X.shape[0]):
        raise ValueError(f"order holds indices outside [0, {X.shape[0]})")
    batch_size = check_positive_int(batch_size, "batch_size")
    _check_step_params(learning_rate, beta1, beta2, eps, l2_coef, l1_theta, "l2_coef", "l1_theta")
    W = check_matrix(weights, "weights", (X.shape[1], coef.shape[0]), dtype)
    b = None if offsets is None else check_vector(offsets, "offsets", W.shape[1], dtype)
    _check_phase_range(X, theta, _DENSE_GAIN * X.shape[1] * _abs_max(W), b, dtype)
    scale = default_scale(W.shape[1]) if scale is None else check_scale(scale)
    rows_arg = _rows_arg(rows, X)
    updated = (theta, coef, state.m_coef, state.v_coef, state.m_theta, state.v_theta)
    before = [a.copy() for a in updated]
    mean_loss, step = _core.train_epoch(
        X, Y, order, batch_size, W, b, theta, dtype.type(scale), coef, loss, solver == "adam",
        learning_rate, beta1, beta2, eps, l2_coef, l1_theta, bool(update_coef), bool(update_theta),
        state.m_coef, state.v_coef, state.m_theta, state.v_theta, int(state.step),
        resolve_n_threads(n_threads), shared_theta_moment=theta_moment == "shared", rows=rows_arg)
    if not (np.isfinite(mean_loss) and all(np.isfinite(a).all() for a in updated)):
        for a, old in zip(updated, before):
            a[...] = old
        raise TrainingDivergedError(
            f"the epoch diverged (non-finite loss, parameters or Adam moments) at learning_rate="
            f"{learning_rate:g}; theta, coef and state are left as they were before it: lower "
            "learning_rate, or standardize X and Y")
    state.step = int(step)
    return float(mean_loss)


# ---- structured transforms (docs/user_guide/feature_maps.rst: Le, Sarlos & Smola 2013, Fastfood;
# Yu et al. 2016, Orthogonal Random Features) -------------------------------------------------------
def block_size(n_features: int) -> int:
    """The block size p of the structured maps: the smallest power of two >= ``n_features``.

    Parameters
    ----------
    n_features : int
        The input dimension (>= 1).

    Returns
    -------
    int
        The smallest power of two that is at least ``n_features``.

    Examples
    --------
    >>> from rffkern.kernels import block_size
    >>> block_size(5), block_size(8)
    (8, 8)
    """
    n_features = check_positive_int(n_features, "n_features")
    return 1 << (n_features - 1).bit_length()


def _is_power_of_two(v: int) -> bool:
    return v >= 1 and v & (v - 1) == 0


def fwht(x: ArrayLike, normalized: bool = False, out: NDArray[np.floating] | None = None, *,
         n_threads: int | None = None) -> NDArray[np.floating]:
    """Fast Walsh-Hadamard transform of a vector, or of every row of a matrix.

    ``fwht(x) == scipy.linalg.hadamard(len) @ x`` for a vector (Sylvester ordering), unnormalised
    (``H @ H = len * I``) unless ``normalized`` (then divided by ``sqrt(len)``, an orthogonal
    transform). The result is bitwise that of the textbook radix-2 butterfly in the same precision
    (``tests/structured_reference.py``), whatever the thread count.

    Parameters
    ----------
    x : array-like of shape (length,) or (n_rows, length)
        ``length`` must be a power of two. float32 stays float32; integers become float64.
    normalized : bool, default=False
        Divide by ``sqrt(length)`` (the orthogonal transform).
    out : ndarray, default=None
        C-contiguous array of ``x``'s shape and working dtype. ``out=x`` transforms in place.
    n_threads : int, default=None
        Rows are split over threads (None: OpenMP's current limit, -1: all usable cores).

    Returns
    -------
    ndarray of the same shape as ``x``
        The transform.

    Raises
    ------
    TypeError
        Complex, non-numeric input, or ``out`` of the wrong dtype.
    ValueError
        Length not a power of two, not 1-D/2-D, NaN or infinity.

    Examples
    --------
    >>> from rffkern import fwht
    >>> fwht([1.0, 0.0, 1.0, 0.0])
    array([2., 2., 0., 0.])
    >>> fwht([1.0, 1.0], normalized=True).round(4)
    array([1.4142, 0.    ])
    """
    if _dlpack.any_foreign(x, out):
        return _dlpack.call(fwht, "x", **locals())  # the parameters as passed
    arr = np.asarray(refuse_sparse(x, "x"))
    if arr.dtype.kind == "c":
        raise TypeError(f"x is complex ({arr.dtype}); fwht needs real-valued input")
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"x must be numeric, got dtype {arr.dtype}")
    if arr.ndim not in (1, 2):
        raise ValueError(f"x must be 1-D or 2-D (rows are transformed), got shape {arr.shape}")
    length = arr.shape[-1]
    if not _is_power_of_two(length):
        raise ValueError(f"the Walsh-Hadamard transform needs a power-of-two length, got {length}")
    dtype = np.float32 if arr.dtype == np.float32 else np.float64
    threads = resolve_n_threads(n_threads)
    src = np.ascontiguousarray(arr, dtype=dtype)
    if not np.isfinite(src).all():
        raise ValueError("x contains NaN or infinity")
    if out is None:
        out = np.empty(src.shape, dtype)
    else:
        check_out(out, "out", src.shape, dtype)
    src2, out2 = src.reshape(-1, length), out.reshape(-1, length)
    if np.shares_memory(src2, out2):
        if src2.ctypes.data == out2.ctypes.data:
            _core.fwht_inplace(out2, bool(normalized), threads)
            return out
        src2 = src2.copy()  # partial overlap: transform from a private copy
    _core.fwht(src2, out2, bool(normalized), threads)
    return out


def _check_map_input(X, p):
    X = check_array_2d(X, "X")
    if X.shape[1] > p:
        raise ValueError(f"X has {X.shape[1]} features, more than the block size {p}")
    return X


def _check_frequencies(n_frequencies, n_blocks, p, offsets=None, pair=False):
    if n_blocks < 1:
        raise ValueError("the structured map has 0 blocks; at least one block of draws is required")
    if pair and offsets is not None:
        raise ValueError("offsets are not used with pair=True (the features are [cos V x, sin V x]); "
                         "pass offsets=None")
    if n_frequencies is None:
        # the phases fix the count when given; otherwise every row of every block is used
        return n_blocks * p if offsets is None or pair else len(np.atleast_1d(offsets))
    n_frequencies = check_positive_int(n_frequencies, "n_frequencies")
    if n_frequencies > n_blocks * p:
        raise ValueError(
            f"n_frequencies={n_frequencies} exceeds n_blocks * p = {n_blocks * p}")
    return n_frequencies


def _phase_and_out(X, offsets, theta, s, pair, out):
    dtype = X.dtype
    b = None
    if not pair and offsets is not None:
        b = check_vector(offsets, "offsets", s, dtype)
    th = None if theta is None else check_vector(theta, "theta", X.shape[1], dtype)
    shape = (X.shape[0], 2 * s if pair else s)
    out = np.empty(shape, dtype) if out is None else check_out(out, "out", shape, dtype)
    return b, th, out


def fastfood_features(X: ArrayLike, signs: ArrayLike, permutation: ArrayLike, gaussian: ArrayLike,
                      scaling: ArrayLike, offsets: ArrayLike | None = None, *, length_scale: float = 1.0,
                      n_frequencies: int | None = None, pair: bool = False, theta: ArrayLike | None = None,
                      out: NDArray[np.floating] | None = None, n_threads: int | None = None,
                      ) -> NDArray[np.floating]:
    """Fastfood random features (Le, Sarlos & Smola 2013), computed by the fused compiled kernel.

    Per block t of size p (X zero-padded to p columns): ``V_t x = 1/(sigma sqrt(p)) S_t H G_t
    Pi_t H B_t x`` with H the unnormalised Walsh-Hadamard transform and ``(Pi y)_j = y[perm_j]``;
    the features are ``sqrt(2/s) cos(V x + u)`` or, with ``pair=True``,
    ``s^(-1/2) [cos V x, sin V x]``, for the first ``s = n_frequencies`` rows of V. The estimator
    :class:`rffkern.Fastfood` draws the blocks and calls this function.

    Parameters
    ----------
    X : array-like of shape (n_samples, d)
        Input rows, ``d <= p``. float32 stays float32; other dtypes become float64.
    signs : array-like of shape (n_blocks, p)
        B, entries +-1.
    permutation : array-like of int of shape (n_blocks, p)
        Pi, each row a permutation of 0..p-1.
    gaussian : array-like of shape (n_blocks, p)
        G, standard normal draws.
    scaling : array-like of shape (n_blocks, p)
        S, chi_p draws divided by the norm of the block's G.
    offsets : array-like of shape (n_frequencies,), default=None
        The phases u (phase form only; None means zero phases).
    length_scale : float, default=1.0
        The Gaussian kernel's length scale sigma.
    n_frequencies : int, default=None
        The number of rows s <= n_blocks * p used; None means ``len(offsets)`` in the phase form
        with offsets given, else every row of every block (n_blocks * p).
    pair : bool, default=False
        Return ``[cos V x, sin V x]`` (2s columns) instead of ``cos(V x + u)``.
    theta : array-like of shape (d,), default=None
        ARD scales multiplying X's columns before the transform.
    out : ndarray, default=None
        C-contiguous buffer of the result's shape and dtype, reused instead of allocating.
    n_threads : int, default=None
        Threads of the compiled kernel, as scikit-learn's ``n_jobs``: None = OpenMP's current
        limit, -1 = all usable cores; 0 is an error. The result does not depend on it.

    Returns
    -------
    ndarray of shape (n_samples, s) or (n_samples, 2 s)
        The features, in X's dtype.

    Examples
    --------
    >>> import numpy as np
    >>> from rffkern import kernels
    >>> rng = np.random.default_rng(0)
    >>> signs = rng.choice([-1.0, 1.0], size=(1, 4))
    >>> perm = rng.permutation(4)[None, :]
    >>> gauss = rng.normal(size=(1, 4))
    >>> scaling = np.sqrt(rng.chisquare(4, size=(1, 4))) / np.linalg.norm(gauss)
    >>> Z = kernels.fastfood_features(rng.normal(size=(5, 3)), signs, perm, gauss, scaling, pair=True)
    >>> Z.shape
    (5, 8)
    """
    if _dlpack.any_foreign(X, signs, permutation, gaussian, scaling, offsets, theta, out):
        return _dlpack.call(fastfood_features, "X", **locals())  # the parameters as passed
    sg = np.asarray(refuse_sparse(signs, "signs"))
    if sg.ndim != 2 or not _is_power_of_two(sg.shape[1]):
        raise ValueError(f"signs must have shape (n_blocks, p) with p a power of two, got {sg.shape}")
    n_blocks, p = sg.shape
    X = _check_map_input(X, p)
    dtype = X.dtype
    sg = check_matrix(sg, "signs", (n_blocks, p), dtype)
    if not np.all(np.abs(sg) == 1):
        raise ValueError("signs must hold only +1 and -1")
    perm = np.asarray(refuse_sparse(permutation, "permutation"))
    if perm.dtype.kind not in "iu":
        raise TypeError(f"permutation must be an integer array, got dtype {perm.dtype}")
    if perm.shape != (n_blocks, p):
        raise ValueError(f"permutation must have shape {(n_blocks, p)}, got {perm.shape}")
    perm = np.ascontiguousarray(perm, dtype=np.int64)
    if not np.array_equal(np.sort(perm, axis=1), np.broadcast_to(np.arange(p), perm.shape)):
        raise ValueError("every row of permutation must be a permutation of 0..p-1")
    G = check_matrix(gaussian, "gaussian", (n_blocks, p), dtype)
    S = check_matrix(scaling, "scaling", (n_blocks, p), np.float64)
    sigma = check_positive_float(length_scale, "length_scale")
    s = _check_frequencies(n_frequencies, n_blocks, p, offsets, pair)
    b, th, out = _phase_and_out(X, offsets, theta, s, pair, out)
    S_eff = np.ascontiguousarray(S / (sigma * np.sqrt(p)), dtype=dtype)
    # H (B x) sums the d inputs, H (G Pi .) p of those, then S scales
    _check_phase_range(X, th, X.shape[1] * p * _abs_max(G) * max(1.0, _abs_max(S_eff)), b, dtype)
    scale = default_scale(s, bool(pair))
    _core.fastfood_features(X, sg, perm, G, S_eff, b, th, s, dtype.type(scale), bool(pair), out,
                            resolve_n_threads(n_threads))
    return out


def sorf_features(X: ArrayLike, diagonals: ArrayLike, offsets: ArrayLike | None = None, *,
                  length_scale: float = 1.0, n_frequencies: int | None = None, pair: bool = False,
                  theta: ArrayLike | None = None, out: NDArray[np.floating] | None = None,
                  n_threads: int | None = None, radial: ArrayLike | None = None) -> NDArray[np.floating]:
    """Structured orthogonal random features (SORF, Yu et al. 2016), fused compiled kernel.

    Per block t (X zero-padded to p columns): ``W_t x = sqrt(p)/sigma Hn D1_t Hn D2_t Hn D3_t x``
    with Hn the normalised Walsh-Hadamard transform (``Hn Hn = I``), then the same output forms as
    :func:`fastfood_features`. With ``radial`` given, row j of block t is multiplied by
    ``radial[t, j]``: ``W_t x = sqrt(p)/sigma R_t Hn D1_t Hn D2_t Hn D3_t x``, which gives each
    frequency a radius of its own (the Matérn kernel's radial law). The estimator
    :class:`rffkern.StructuredOrthogonalFeatures` draws the diagonals (and the radial factors) and
    calls this function.

    Parameters
    ----------
    X : array-like of shape (n_samples, d)
        Input rows, ``d <= p``. float32 stays float32; other dtypes become float64.
    diagonals : array-like of shape (n_blocks, 3, p)
        ``diagonals[t] = (D1, D2, D3)``, Rademacher (+-1) draws.
    offsets : array-like of shape (n_frequencies,), default=None
        The phases (phase form only; None means zero phases).
    length_scale : float, default=1.0
        The Gaussian kernel's length scale sigma.
    n_frequencies : int, default=None
        The number of rows s <= n_blocks * p used; None as in :func:`fastfood_features`.
    pair : bool, default=False
        Return ``[cos W x, sin W x]`` (2s columns) instead of ``cos(W x + b)``.
    theta : array-like of shape (d,), default=None
        ARD scales multiplying X's columns before the transform.
    out : ndarray, default=None
        C-contiguous buffer of the result's shape and dtype, reused instead of allocating.
    n_threads : int, default=None
        Threads of the compiled kernel, as scikit-learn's ``n_jobs``: None = OpenMP's current
        limit, -1 = all usable cores; 0 is an error. The result does not depend on it.
    radial : array-like of shape (n_blocks, p), default=None
        Per-frequency radius factors R (finite, >= 0); None means all ones (the Gaussian kernel's
        SORF map, whose rows all have the norm ``sqrt(p)/sigma``).

    Returns
    -------
    ndarray of shape (n_samples, s) or (n_samples, 2 s)
        The features, in X's dtype.

    Examples
    --------
    >>> import numpy as np
    >>> from rffkern import kernels
    >>> rng = np.random.default_rng(0)
    >>> diagonals = rng.choice([-1.0, 1.0], size=(2, 3, 4))
    >>> offsets = rng.uniform(0, 2 * np.pi, size=6)
    >>> kernels.sorf_features(rng.normal(size=(5, 3)), diagonals, offsets, n_frequencies=6).shape
    (5, 6)

    Radius factors of one (the default) change nothing:

    >>> X = rng.normal(size=(5, 3))
    >>> bool(np.array_equal(kernels.sorf_features(X, diagonals, radial=np.ones((2, 4))),
    ...                     kernels.sorf_features(X, diagonals)))
    True
    """
    if _dlpack.any_foreign(X, diagonals, offsets, theta, out, radial):
        return _dlpack.call(sorf_features, "X", **locals())  # the parameters as passed
    D = np.asarray(refuse_sparse(diagonals, "diagonals"))
    if D.ndim != 3 or D.shape[1] != 3 or not _is_power_of_two(D.shape[2]):
        raise ValueError(
            f"diagonals must have shape (n_blocks, 3, p) with p a power of two, got {D.shape}")
    n_blocks, _, p = D.shape
    X = _check_map_input(X, p)
    dtype = X.dtype
    if D.dtype.kind not in "biuf":
        raise TypeError(f"diagonals must be numeric, got dtype {D.dtype}")
    D = np.ascontiguousarray(D, dtype=dtype)
    if not np.all(np.abs(D) == 1):
        raise ValueError("diagonals must hold only +1 and -1")
    sigma = check_positive_float(length_scale, "length_scale")
    s = _check_frequencies(n_frequencies, n_blocks, p, offsets, pair)
    R = None
    if radial is not None:
        R = check_matrix(radial, "radial", (n_blocks, p), dtype)
        if np.any(R < 0):
            raise ValueError("radial must hold radius factors >= 0")
    b, th, out = _phase_and_out(X, offsets, theta, s, pair, out)
    # (sqrt(p)/sigma) * p^(-3/2) folds the three normalisations of Hn into one factor
    freq_scale = 1.0 / (sigma * p)
    # the first unnormalised H sums the d inputs, each later one p entries of the last
    gain = freq_scale * (1.0 if R is None else max(1.0, _abs_max(R)))
    _check_phase_range(X, th, X.shape[1] * p * p * max(1.0, gain), b, dtype)
    scale = default_scale(s, bool(pair))
    _core.sorf_features(X, D, b, th, s, dtype.type(freq_scale), dtype.type(scale), bool(pair), out,
                        resolve_n_threads(n_threads), R)
    return out
