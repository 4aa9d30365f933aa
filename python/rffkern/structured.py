"""Structured random feature maps as estimators: Fastfood, SORF and ORF (docs/user_guide/feature_maps.rst).

The compiled transforms they run on (:func:`rffkern.kernels.fwht`,
:func:`rffkern.kernels.fastfood_features`, :func:`rffkern.kernels.sorf_features`) live with the
other kernels in :mod:`rffkern.kernels`.

* :class:`Fastfood`, :class:`StructuredOrthogonalFeatures`, :class:`OrthogonalRandomFeatures` --
  scikit-learn transformers approximating the Gaussian or the Matérn kernel (the kernels whose
  spectral density is radial: a frequency is a direction times a radius, and these maps structure
  the directions), with the conventions of :class:`rffkern.RandomFourierFeatures`.

The input dimension d is zero-padded to the block size p = 2^ceil(log2 d) (at least 64 for SORF,
whose bias shrinks with p); ``n_components`` need not be a multiple of p (the last block is
truncated). Random draws are made in Python with a NumPy Generator; the pure-NumPy equivalents
are the test oracle ``tests/structured_reference.py``.
"""
from __future__ import annotations

import numbers

import numpy as np
from numpy.typing import ArrayLike, NDArray
from sklearn.base import BaseEstimator, ClassNamePrefixFeaturesOutMixin, TransformerMixin
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted, validate_data

from rffkern import kernels
from rffkern._constraints import COMPONENTS, N_JOBS, NU
from rffkern._dask import is_dask_array, map_rows
from rffkern._sampling import (DEFAULT_NU, RADIAL_KERNELS, child_generator, draw_map, draw_offsets,
                               frequency_count, matern_radial_factor)
from rffkern._typing import RandomStateLike
from rffkern._validation import as_generator, resolve_n_threads
from rffkern.kernels import block_size, fastfood_features, fwht, sorf_features

# The smallest SORF block. SORF's kernel bias is set by the block size p more than by d: the
# entries of sqrt(p) Hn D1 Hn D2 Hn D3 are far from Gaussian for small p, and max |E[Z Z^T] - K|
# falls roughly like 0.7 / p (docs/benchmarks.rst). Zero-padding x keeps ||x - y|| and so the
# kernel, and costs nothing per output feature at p = 64, so smaller inputs are padded to it.
_SORF_MIN_BLOCK = 64

__all__ = [
    "fwht",
    "fastfood_features",
    "sorf_features",
    "block_size",
    "Fastfood",
    "StructuredOrthogonalFeatures",
    "OrthogonalRandomFeatures",
]


# ---- estimators ---------------------------------------------------------------------------------
class _StructuredBase(ClassNamePrefixFeaturesOutMixin, TransformerMixin, BaseEstimator):
    _parameter_constraints = {
        "n_components": [COMPONENTS],
        "kernel": [StrOptions(set(RADIAL_KERNELS))],
        "length_scale": [Interval(numbers.Real, 0, None, closed="neither")],
        "nu": [NU],
        "pair": ["boolean"],
        "random_state": ["random_state", np.random.Generator],
        "n_jobs": N_JOBS,
    }

    def __init__(self, n_components: int = 100, *, kernel: str = "gaussian", length_scale: float = 1.0,
                 nu: float = DEFAULT_NU, pair: bool = False, random_state: RandomStateLike = None,
                 n_jobs: int | None = None) -> None:
        self.n_components = n_components
        self.kernel = kernel
        self.length_scale = length_scale
        self.nu = nu
        self.pair = pair
        self.random_state = random_state
        self.n_jobs = n_jobs

    def _start_fit(self, X):
        self._validate_params()
        n_freq = frequency_count(self.n_components, self.pair)
        X = validate_data(self, X, dtype=[np.float64, np.float32], ensure_all_finite=True)
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
    """Fastfood approximation of the Gaussian or Matérn kernel (Le, Sarlos & Smola 2013).

    The input is zero-padded to p = 2^ceil(log2 d) features; each block of p frequencies is
    ``V_t = 1/(sigma sqrt(p)) S_t H G_t Pi_t H B_t`` (H the unnormalised Walsh-Hadamard matrix, B
    random signs, Pi a random permutation, G Gaussian, S chi_p draws over ||G_t||), so the rows
    of V have the norm law of Gaussian frequencies; for the Matérn kernel S is further multiplied
    by the Student t radius factor, which gives the rows the Matérn kernel's radial law.
    ``transform`` costs O(s log p) per sample and O(s) memory for the map (no s x d matrix),
    computed by one fused compiled kernel.

    Parameters
    ----------
    n_components : int, default=100
        Number of output features (need not be a multiple of p).
    kernel : {"gaussian", "matern"}, default="gaussian"
        gaussian ``exp(-|x-y|^2 / (2 sigma^2))``; matern ``2^(1-nu) / Gamma(nu) z^nu K_nu(z)``
        with ``z = sqrt(2 nu) |x-y| / sigma`` (scikit-learn's
        :class:`~sklearn.gaussian_process.kernels.Matern`), whose frequencies are the Gaussian
        kernel's with each radius multiplied by ``sqrt(2 nu / g)``, g a chi-square(2 nu) draw (a
        multivariate Student t law). The kernels whose spectral density is not radial (laplace,
        cauchy) have no structured map: use :class:`rffkern.RandomFourierFeatures`.
    length_scale : float, default=1.0
        The kernel's length scale sigma.
    nu : float, default=1.5
        The Matérn smoothness, a finite float > 0 (used by ``kernel="matern"`` only, checked
        whatever the kernel): 0.5 is the exponential kernel, 1.5 and 2.5 give once and twice
        differentiable functions.
    pair : bool, default=False
        Use ``n_components // 2`` frequencies, each giving ``[cos, sin]`` (no random phase, lower
        variance); ``n_components`` must then be even.
    random_state : int, Generator, RandomState or None, default=None
        Seed or generator of the random draws; the same value gives the same map whatever
        ``n_jobs``.
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
        chi_p draws divided by the norm of the block's ``gaussian_`` row; for the Matérn kernel
        also multiplied by ``sqrt(2 nu / g)``, g chi-square(2 nu) draws.
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

    def fit(self, X: ArrayLike, y: object = None) -> Fastfood:
        """Draw the Fastfood blocks for X's number of features.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training rows; only their number of features (and dtype) is used.
        y : None
            Ignored; present for the scikit-learn API.

        Returns
        -------
        self
            The fitted transformer.

        Examples
        --------
        >>> import numpy as np
        >>> from rffkern import Fastfood
        >>> X = np.random.default_rng(0).standard_normal((5, 3))
        >>> Fastfood(n_components=16, random_state=0).fit(X).signs_.shape
        (4, 4)
        """
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
        if self.kernel == "matern":
            # the radius factors come from a child generator: the Gaussian map's stream stays as it was
            uniforms = child_generator(rng).uniform(size=(n_blocks, p))
            self.scaling_ = self.scaling_ * matern_radial_factor(self.nu, uniforms)
        return self

    def transform(self, X: ArrayLike) -> NDArray[np.floating]:
        """Map X to its random features; float32 input stays float32.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            The rows to map (a Dask array is mapped lazily, block by block).

        Returns
        -------
        ndarray of shape (n_samples, n_components)
            The features, in X's floating dtype.

        Examples
        --------
        >>> import numpy as np
        >>> from rffkern import Fastfood
        >>> X = np.random.default_rng(0).standard_normal((5, 3))
        >>> Fastfood(n_components=16, random_state=0).fit(X).transform(X).shape
        (5, 16)
        """
        if is_dask_array(X):
            return map_rows(self.transform, X)
        X = self._check_transform_input(X)
        n_freq = self.offsets_.shape[0]
        return fastfood_features(
            X, self.signs_, self.permutation_, self.gaussian_, self.scaling_,
            None if self.pair else self.offsets_, length_scale=self.length_scale,
            n_frequencies=n_freq, pair=self.pair, n_threads=resolve_n_threads(self.n_jobs))


class StructuredOrthogonalFeatures(_StructuredBase):
    """Structured orthogonal random features (SORF, Yu et al. 2016) for the Gaussian or Matérn kernel.

    The input is zero-padded to p = max(2^ceil(log2 d), 64) features; each block of p frequencies
    is ``W_t = sqrt(p)/sigma Hn D1 Hn D2 Hn D3`` with Hn the normalised Walsh-Hadamard matrix and
    D_i random sign diagonals: near-orthogonal frequencies at O(s log p) cost per sample, computed
    by one fused compiled kernel. Every row of ``W_t`` has the norm ``sqrt(p)/sigma``, the typical
    radius of p-dimensional Gaussian frequencies; the Matérn kernel's radii spread far more (a
    Student t law), so for it each row j is multiplied by ``radial_[t, j]``, a draw of the
    p-dimensional Matérn radius (chi_p times ``sqrt(2 nu / g)``, g chi-square(2 nu)) over
    ``sqrt(p)``.

    SORF is biased: its frequencies have the Gaussian law only as p grows, and the bias is set by
    p more than by d (zero-padding x leaves the kernel unchanged). The largest ``|E[Z Z^T] - K|``
    is about 0.7 / p (0.11-0.12 at p = 8, 0.04 at p = 16, 0.01 at p = 64, for sigma = sqrt(d); see
    docs/benchmarks.rst), so inputs with d < 64 are padded to p = 64. The remaining bias of
    about 0.01 is below the Monte Carlo error up to about 10^4 features; beyond that, or where an
    unbiased estimate matters, use :class:`OrthogonalRandomFeatures` or
    :class:`rffkern.RandomFourierFeatures`.

    Parameters
    ----------
    n_components : int, default=100
        Number of output features.
    kernel : {"gaussian", "matern"}, default="gaussian"
        As in :class:`Fastfood`.
    length_scale : float, default=1.0
        The kernel's length scale sigma.
    nu : float, default=1.5
        The Matérn smoothness, as in :class:`Fastfood`.
    pair : bool, default=False
        Use ``n_components // 2`` frequencies, each giving ``[cos, sin]``; ``n_components`` must
        then be even.
    random_state : int, Generator, RandomState or None, default=None
        Seed or generator of the random draws; the same value gives the same map whatever
        ``n_jobs``.
    n_jobs : int or None, default=None
        Threads of the compiled kernel, as in :class:`Fastfood`.

    Attributes
    ----------
    block_size_ : int
        p, at least 64.
    diagonals_ : ndarray of shape (n_blocks, 3, p)
        ``(D1, D2, D3)`` of each block, entries +-1.
    radial_ : ndarray of shape (n_blocks, p) or None
        The Matérn kernel's per-frequency radius factors (the ``radial`` argument of
        :func:`rffkern.kernels.sorf_features`); None for the Gaussian kernel.
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

    def fit(self, X: ArrayLike, y: object = None) -> StructuredOrthogonalFeatures:
        """Draw the sign diagonals for X's number of features.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training rows; only their number of features (and dtype) is used.
        y : None
            Ignored; present for the scikit-learn API.

        Returns
        -------
        self
            The fitted transformer.

        Examples
        --------
        >>> import numpy as np
        >>> from rffkern import StructuredOrthogonalFeatures
        >>> X = np.random.default_rng(0).standard_normal((5, 3))
        >>> StructuredOrthogonalFeatures(n_components=16, random_state=0).fit(X).diagonals_.shape
        (1, 3, 64)
        """
        X, rng, n_freq = self._start_fit(X)
        p = max(block_size(X.shape[1]), _SORF_MIN_BLOCK)
        n_blocks = -(-n_freq // p)
        self.block_size_ = p
        self.diagonals_ = rng.integers(0, 2, size=(n_blocks, 3, p)).astype(np.float64) * 2.0 - 1.0
        self.offsets_ = self._draw_offsets(n_freq, rng)
        self.radial_ = None
        if self.kernel == "matern":
            # one child generator for the radii, so the Gaussian map's stream stays as it was
            child = child_generator(rng)
            chi = np.sqrt(child.chisquare(p, size=(n_blocks, p)))
            factors = matern_radial_factor(self.nu, child.uniform(size=(n_blocks, p)))
            self.radial_ = chi * factors / np.sqrt(p)
        return self

    def transform(self, X: ArrayLike) -> NDArray[np.floating]:
        """Map X to its random features; float32 input stays float32.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            The rows to map (a Dask array is mapped lazily, block by block).

        Returns
        -------
        ndarray of shape (n_samples, n_components)
            The features, in X's floating dtype.

        Examples
        --------
        >>> import numpy as np
        >>> from rffkern import StructuredOrthogonalFeatures
        >>> X = np.random.default_rng(0).standard_normal((5, 3))
        >>> StructuredOrthogonalFeatures(n_components=16, random_state=0).fit(X).transform(X).shape
        (5, 16)
        """
        if is_dask_array(X):
            return map_rows(self.transform, X)
        X = self._check_transform_input(X)
        n_freq = self.offsets_.shape[0]
        return sorf_features(
            X, self.diagonals_, None if self.pair else self.offsets_,
            length_scale=self.length_scale, n_frequencies=n_freq, pair=self.pair,
            n_threads=resolve_n_threads(self.n_jobs), radial=self.radial_)


class OrthogonalRandomFeatures(_StructuredBase):
    """Orthogonal random features (ORF, Yu et al. 2016) for the Gaussian or Matérn kernel.

    Frequencies come in blocks of d exactly orthogonal directions (QR of a Gaussian matrix with the
    sign fix, so Q is Haar distributed) with chi_d lengths (times the Student t radius factor for
    the Matérn kernel), over sigma; the features are then the dense fused kernel's
    ``sqrt(2/s) cos(X W + b)`` (or the pair form). Lower kernel-approximation error than i.i.d.
    frequencies at O(s d) cost. The same map as
    ``RandomFourierFeatures(sampling="orthogonal")``.

    Parameters
    ----------
    n_components : int, default=100
        Number of output features.
    kernel : {"gaussian", "matern"}, default="gaussian"
        As in :class:`Fastfood`.
    length_scale : float, default=1.0
        The kernel's length scale sigma.
    nu : float, default=1.5
        The Matérn smoothness, as in :class:`Fastfood`.
    pair : bool, default=False
        Use ``n_components // 2`` frequencies, each giving ``[cos, sin]``; ``n_components`` must
        then be even.
    random_state : int, Generator, RandomState or None, default=None
        Seed or generator of the random draws; the same value gives the same map whatever
        ``n_jobs``.
    n_jobs : int or None, default=None
        Threads of the compiled kernel, as in :class:`Fastfood`.

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

    def fit(self, X: ArrayLike, y: object = None) -> OrthogonalRandomFeatures:
        """Draw the orthogonal frequency blocks for X's number of features.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training rows; only their number of features (and dtype) is used.
        y : None
            Ignored; present for the scikit-learn API.

        Returns
        -------
        self
            The fitted transformer.

        Examples
        --------
        >>> import numpy as np
        >>> from rffkern import OrthogonalRandomFeatures
        >>> X = np.random.default_rng(0).standard_normal((5, 3))
        >>> OrthogonalRandomFeatures(n_components=16, random_state=0).fit(X).weights_.shape
        (3, 16)
        """
        X, rng, n_freq = self._start_fit(X)
        self.weights_, b = draw_map(self.kernel, X.shape[1], n_freq, self.length_scale, rng, nu=self.nu,
                                    sampling="orthogonal", offsets=not self.pair)
        self.offsets_ = np.zeros(n_freq) if self.pair else b
        return self

    def transform(self, X: ArrayLike) -> NDArray[np.floating]:
        """Map X to its random features; float32 input stays float32.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            The rows to map (a Dask array is mapped lazily, block by block).

        Returns
        -------
        ndarray of shape (n_samples, n_components)
            The features, in X's floating dtype.

        Examples
        --------
        >>> import numpy as np
        >>> from rffkern import OrthogonalRandomFeatures
        >>> X = np.random.default_rng(0).standard_normal((5, 3))
        >>> OrthogonalRandomFeatures(n_components=16, random_state=0).fit(X).transform(X).shape
        (5, 16)
        """
        if is_dask_array(X):
            return map_rows(self.transform, X)
        X = self._check_transform_input(X)
        W = self.weights_.astype(X.dtype, copy=False)
        b = None if self.pair else self.offsets_.astype(X.dtype, copy=False)
        return kernels.features(X, W, b, scale=self.scale_, pair=self.pair,
                                n_threads=resolve_n_threads(self.n_jobs))
