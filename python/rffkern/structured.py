"""Structured random feature maps: FWHT, Fastfood, SORF and ORF (ALGORITHMS.md section 1).

* :func:`fwht` -- the fast Walsh-Hadamard transform of a vector or of every row of a matrix.
* :func:`fastfood_features`, :func:`sorf_features` -- the compiled, fused feature maps: per row and
  block the whole chain (signs, FWHT, permutation, Gaussian scaling, FWHT, scaling, cos) runs in a
  per-thread buffer of O(p) values, so the cost is O(s log p) per sample and no s x d matrix is
  ever formed.
* :class:`Fastfood`, :class:`StructuredOrthogonalFeatures`, :class:`OrthogonalRandomFeatures` --
  scikit-learn transformers approximating the Gaussian kernel, with the conventions of
  :class:`rffkern.RandomFourierFeatures`.

The input dimension d is zero-padded to the block size p = 2^ceil(log2 d); ``n_components`` need
not be a multiple of p (the last block is truncated). Random draws are made in Python with a NumPy
Generator; the pure-NumPy equivalents are the test oracle ``tests/structured_reference.py``.
"""
from __future__ import annotations

import numbers

import numpy as np
from sklearn.base import BaseEstimator, ClassNamePrefixFeaturesOutMixin, TransformerMixin
from sklearn.utils._param_validation import Interval
from sklearn.utils.validation import check_is_fitted, validate_data

from rffkern import _core, kernels
from rffkern._sampling import draw_offsets, orf_weights
from rffkern._validation import (
    as_generator,
    check_array_2d,
    check_matrix,
    check_out,
    check_positive_float,
    check_positive_int,
    check_vector,
    resolve_n_threads,
)

__all__ = [
    "fwht",
    "fastfood_features",
    "sorf_features",
    "block_size",
    "Fastfood",
    "StructuredOrthogonalFeatures",
    "OrthogonalRandomFeatures",
]


def block_size(n_features: int) -> int:
    """The block size p: the smallest power of two >= ``n_features``."""
    n_features = check_positive_int(n_features, "n_features")
    return 1 << (n_features - 1).bit_length()


def _is_power_of_two(v: int) -> bool:
    return v >= 1 and v & (v - 1) == 0


def fwht(x, normalized=False, out=None, *, n_threads=None):
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
    out : ndarray, optional
        C-contiguous array of ``x``'s shape and working dtype. ``out=x`` transforms in place.
    n_threads : int, default=None
        Rows are split over threads (None: all usable cores, -1: all).

    Returns
    -------
    ndarray of the same shape as ``x``

    Raises
    ------
    TypeError
        Complex, non-numeric input, or ``out`` of the wrong dtype.
    ValueError
        Length not a power of two, not 1-D/2-D, NaN or infinity.
    """
    arr = np.asarray(x)
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


def fastfood_features(X, signs, permutation, gaussian, scaling, offsets=None, *, length_scale=1.0,
                      n_frequencies=None, pair=False, theta=None, out=None, n_threads=None):
    """Fastfood random features (Le, Sarlos & Smola 2013), computed by the fused compiled kernel.

    Per block t of size p (X zero-padded to p columns): ``V_t x = 1/(sigma sqrt(p)) S_t H G_t
    Pi_t H B_t x`` with H the unnormalised Walsh-Hadamard transform and ``(Pi y)_j = y[perm_j]``;
    the features are ``sqrt(2/s) cos(V x + u)`` or, with ``pair=True``,
    ``s^(-1/2) [cos V x, sin V x]``, for the first ``s = n_frequencies`` rows of V.

    Parameters
    ----------
    X : array-like of shape (n_samples, d), d <= p
    signs : array-like of shape (n_blocks, p)
        B, entries +-1.
    permutation : array-like of int of shape (n_blocks, p)
        Pi, each row a permutation of 0..p-1.
    gaussian : array-like of shape (n_blocks, p)
        G, standard normal draws.
    scaling : array-like of shape (n_blocks, p)
        S, chi_p draws divided by the norm of the block's G.
    offsets : array-like of shape (n_frequencies,), default=None
        u (phase form only; None means zero phases).
    length_scale : float, default=1.0
    n_frequencies : int, default=None
        s <= n_blocks * p; None means ``len(offsets)`` in the phase form with offsets given, else
        every row of every block (n_blocks * p).
    pair : bool, default=False
    theta : array-like of shape (d,), default=None
        ARD scales multiplying X's columns before the transform.
    out : ndarray, optional
    n_threads : int, default=None

    Returns
    -------
    Z : ndarray of shape (n_samples, s) or (n_samples, 2 s), X's dtype
    """
    sg = np.asarray(signs)
    if sg.ndim != 2 or not _is_power_of_two(sg.shape[1]):
        raise ValueError(f"signs must have shape (n_blocks, p) with p a power of two, got {sg.shape}")
    n_blocks, p = sg.shape
    X = _check_map_input(X, p)
    dtype = X.dtype
    sg = check_matrix(sg, "signs", (n_blocks, p), dtype)
    if not np.all(np.abs(sg) == 1):
        raise ValueError("signs must hold only +1 and -1")
    perm = np.asarray(permutation)
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
    scale = kernels.default_scale(s, bool(pair))
    _core.fastfood_features(X, sg, perm, G, S_eff, b, th, s, dtype.type(scale), bool(pair), out,
                            resolve_n_threads(n_threads))
    return out


def sorf_features(X, diagonals, offsets=None, *, length_scale=1.0, n_frequencies=None, pair=False,
                  theta=None, out=None, n_threads=None):
    """Structured orthogonal random features (SORF, Yu et al. 2016), fused compiled kernel.

    Per block t (X zero-padded to p columns): ``W_t x = sqrt(p)/sigma Hn D1_t Hn D2_t Hn D3_t x``
    with Hn the normalised Walsh-Hadamard transform (``Hn Hn = I``), then the same output forms as
    :func:`fastfood_features`.

    Parameters
    ----------
    X : array-like of shape (n_samples, d), d <= p
    diagonals : array-like of shape (n_blocks, 3, p)
        ``diagonals[t] = (D1, D2, D3)``, Rademacher (+-1) draws.
    offsets, length_scale, n_frequencies, pair, theta, out, n_threads
        As in :func:`fastfood_features`.

    Returns
    -------
    Z : ndarray of shape (n_samples, s) or (n_samples, 2 s), X's dtype
    """
    D = np.asarray(diagonals)
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
    b, th, out = _phase_and_out(X, offsets, theta, s, pair, out)
    # (sqrt(p)/sigma) * p^(-3/2) folds the three normalisations of Hn into one factor
    freq_scale = 1.0 / (sigma * p)
    scale = kernels.default_scale(s, bool(pair))
    _core.sorf_features(X, D, b, th, s, dtype.type(freq_scale), dtype.type(scale), bool(pair), out,
                        resolve_n_threads(n_threads))
    return out


# ---- estimators ---------------------------------------------------------------------------------
class _StructuredBase(ClassNamePrefixFeaturesOutMixin, TransformerMixin, BaseEstimator):
    _parameter_constraints = {
        "n_components": [Interval(numbers.Integral, 1, None, closed="left")],
        "length_scale": [Interval(numbers.Real, 0, None, closed="neither")],
        "pair": ["boolean"],
        "random_state": ["random_state", np.random.Generator],
        "n_jobs": [numbers.Integral, None],
    }

    def __init__(self, n_components=100, *, length_scale=1.0, pair=False, random_state=None,
                 n_jobs=None):
        self.n_components = n_components
        self.length_scale = length_scale
        self.pair = pair
        self.random_state = random_state
        self.n_jobs = n_jobs

    def _start_fit(self, X):
        self._validate_params()
        if self.pair and self.n_components % 2:
            raise ValueError(
                f"n_components must be even with pair=True (each frequency gives a cos and a sin), "
                f"got {self.n_components}")
        X = validate_data(self, X, dtype=[np.float64, np.float32], ensure_all_finite=True)
        n_freq = self.n_components // 2 if self.pair else self.n_components
        self.scale_ = kernels.default_scale(n_freq, self.pair)
        self._n_features_out = self.n_components
        return X, as_generator(self.random_state), n_freq

    def _draw_offsets(self, n_freq, rng):
        return np.zeros(n_freq) if self.pair else draw_offsets(n_freq, rng)

    def _check_transform_input(self, X):
        check_is_fitted(self)
        return validate_data(self, X, dtype=[np.float64, np.float32], ensure_all_finite=True,
                             reset=False)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.transformer_tags.preserves_dtype = ["float64", "float32"]
        return tags


class Fastfood(_StructuredBase):
    """Fastfood approximation of the Gaussian kernel (Le, Sarlos & Smola 2013).

    The input is zero-padded to p = 2^ceil(log2 d) features; each block of p frequencies is
    ``V_t = 1/(sigma sqrt(p)) S_t H G_t Pi_t H B_t`` (H the unnormalised Walsh-Hadamard matrix, B
    random signs, Pi a random permutation, G Gaussian, S chi_p draws over ||G_t||), so the rows
    of V have the norm law of Gaussian frequencies. ``transform`` costs O(s log p) per sample and
    O(s) memory for the map (no s x d matrix), computed by one fused compiled kernel.

    Parameters
    ----------
    n_components : int, default=100
        Number of output features (need not be a multiple of p).
    length_scale : float, default=1.0
        sigma of the Gaussian kernel ``exp(-|x-y|^2 / (2 sigma^2))``.
    pair : bool, default=False
        Use ``n_components // 2`` frequencies, each giving ``[cos, sin]`` (no random phase, lower
        variance); ``n_components`` must then be even.
    random_state : int, Generator, RandomState or None, default=None
    n_jobs : int or None, default=None
        Threads of the compiled kernel (None: all usable cores, -1: all). The output does not
        depend on it.

    Attributes
    ----------
    block_size_ : int
        p.
    signs_ : ndarray of shape (n_blocks, p)
    permutation_ : ndarray of int64 of shape (n_blocks, p)
    gaussian_ : ndarray of shape (n_blocks, p)
    scaling_ : ndarray of shape (n_blocks, p)
        chi_p draws divided by the norm of the block's ``gaussian_`` row.
    offsets_ : ndarray of shape (n_frequencies,)
        Zeros in the pair form.
    scale_ : float
    n_features_in_ : int

    Examples
    --------
    >>> import numpy as np
    >>> from rffkern import Fastfood
    >>> X = np.random.default_rng(0).standard_normal((5, 10))
    >>> Fastfood(n_components=64, random_state=0).fit_transform(X).shape
    (5, 64)
    """

    def fit(self, X, y=None):
        """Draw the Fastfood blocks for X's number of features (X's values are not used)."""
        X, rng, n_freq = self._start_fit(X)
        p = block_size(X.shape[1])
        n_blocks = -(-n_freq // p)
        self.block_size_ = p
        self.signs_ = rng.integers(0, 2, size=(n_blocks, p)).astype(np.float64) * 2.0 - 1.0
        self.permutation_ = np.stack([rng.permutation(p) for _ in range(n_blocks)]).astype(np.int64)
        self.gaussian_ = rng.standard_normal((n_blocks, p))
        chi = np.sqrt(rng.chisquare(p, size=(n_blocks, p)))
        self.scaling_ = chi / np.linalg.norm(self.gaussian_, axis=1, keepdims=True)
        self.offsets_ = self._draw_offsets(n_freq, rng)
        return self

    def transform(self, X):
        """Map X (n_samples, n_features) to (n_samples, n_components); float32 stays float32."""
        X = self._check_transform_input(X)
        n_freq = self.offsets_.shape[0]
        return fastfood_features(
            X, self.signs_, self.permutation_, self.gaussian_, self.scaling_,
            None if self.pair else self.offsets_, length_scale=self.length_scale,
            n_frequencies=n_freq, pair=self.pair, n_threads=resolve_n_threads(self.n_jobs))


class StructuredOrthogonalFeatures(_StructuredBase):
    """Structured orthogonal random features (SORF, Yu et al. 2016) for the Gaussian kernel.

    The input is zero-padded to p = 2^ceil(log2 d) features; each block of p frequencies is
    ``W_t = sqrt(p)/sigma Hn D1 Hn D2 Hn D3`` with Hn the normalised Walsh-Hadamard matrix and D_i
    random sign diagonals: near-orthogonal frequencies at O(s log p) cost per sample, computed by
    one fused compiled kernel.

    Parameters
    ----------
    n_components : int, default=100
    length_scale : float, default=1.0
    pair : bool, default=False
    random_state : int, Generator, RandomState or None, default=None
    n_jobs : int or None, default=None
        See :class:`Fastfood`.

    Attributes
    ----------
    block_size_ : int
    diagonals_ : ndarray of shape (n_blocks, 3, p)
        ``(D1, D2, D3)`` of each block, entries +-1.
    offsets_ : ndarray of shape (n_frequencies,)
    scale_ : float
    n_features_in_ : int

    Examples
    --------
    >>> import numpy as np
    >>> from rffkern import StructuredOrthogonalFeatures
    >>> X = np.random.default_rng(0).standard_normal((5, 10)).astype(np.float32)
    >>> StructuredOrthogonalFeatures(n_components=40, random_state=0).fit_transform(X).dtype
    dtype('float32')
    """

    def fit(self, X, y=None):
        """Draw the sign diagonals for X's number of features (X's values are not used)."""
        X, rng, n_freq = self._start_fit(X)
        p = block_size(X.shape[1])
        n_blocks = -(-n_freq // p)
        self.block_size_ = p
        self.diagonals_ = rng.integers(0, 2, size=(n_blocks, 3, p)).astype(np.float64) * 2.0 - 1.0
        self.offsets_ = self._draw_offsets(n_freq, rng)
        return self

    def transform(self, X):
        """Map X (n_samples, n_features) to (n_samples, n_components); float32 stays float32."""
        X = self._check_transform_input(X)
        n_freq = self.offsets_.shape[0]
        return sorf_features(
            X, self.diagonals_, None if self.pair else self.offsets_,
            length_scale=self.length_scale, n_frequencies=n_freq, pair=self.pair,
            n_threads=resolve_n_threads(self.n_jobs))


class OrthogonalRandomFeatures(_StructuredBase):
    """Orthogonal random features (ORF, Yu et al. 2016) for the Gaussian kernel.

    Frequencies come in blocks of d exactly orthogonal directions (QR of a Gaussian matrix with the
    sign fix, so Q is Haar distributed) with chi_d lengths, over sigma; the features are then the
    dense fused kernel's ``sqrt(2/s) cos(X W + b)`` (or the pair form). Lower kernel-approximation
    error than i.i.d. frequencies at O(s d) cost.

    Parameters
    ----------
    n_components : int, default=100
    length_scale : float, default=1.0
    pair : bool, default=False
    random_state : int, Generator, RandomState or None, default=None
    n_jobs : int or None, default=None
        See :class:`Fastfood`.

    Attributes
    ----------
    weights_ : ndarray of shape (n_features_in_, n_frequencies)
    offsets_ : ndarray of shape (n_frequencies,)
    scale_ : float
    n_features_in_ : int

    Examples
    --------
    >>> import numpy as np
    >>> from rffkern import OrthogonalRandomFeatures
    >>> X = np.random.default_rng(0).standard_normal((5, 3))
    >>> OrthogonalRandomFeatures(n_components=8, pair=True, random_state=0).fit_transform(X).shape
    (5, 8)
    """

    def fit(self, X, y=None):
        """Draw the orthogonal frequency blocks for X's number of features."""
        X, rng, n_freq = self._start_fit(X)
        self.weights_ = orf_weights(X.shape[1], n_freq, self.length_scale, rng)
        self.offsets_ = self._draw_offsets(n_freq, rng)
        return self

    def transform(self, X):
        """Map X (n_samples, n_features) to (n_samples, n_components); float32 stays float32."""
        X = self._check_transform_input(X)
        W = self.weights_.astype(X.dtype, copy=False)
        b = None if self.pair else self.offsets_.astype(X.dtype, copy=False)
        return kernels.features(X, W, b, scale=self.scale_, pair=self.pair,
                                n_threads=resolve_n_threads(self.n_jobs))
