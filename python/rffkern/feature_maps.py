"""Random Fourier feature maps as scikit-learn transformers."""
from __future__ import annotations

import numbers

import numpy as np
import scipy.sparse as sp
from numpy.typing import ArrayLike, NDArray
from sklearn.base import BaseEstimator, ClassNamePrefixFeaturesOutMixin, TransformerMixin
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted, validate_data

from rffkern import kernels
from rffkern._constraints import COMPONENTS, N_JOBS, NU
from rffkern._dask import is_dask_array, map_rows
from rffkern._sampling import DEFAULT_NU, KERNELS, SAMPLINGS, check_sampling, draw_map, frequency_count
from rffkern._typing import RandomStateLike
from rffkern._validation import as_generator, resolve_n_threads

__all__ = ["RandomFourierFeatures"]


class RandomFourierFeatures(ClassNamePrefixFeaturesOutMixin, TransformerMixin, BaseEstimator):
    """Random Fourier features of a shift-invariant kernel (Rahimi & Recht 2007).

    The features are computed by the fused compiled kernel (:func:`rffkern.kernels.features`):
    ``transform(X) == sqrt(2/s) * cos(X @ weights_ + offsets_)`` with ``s = n_components``, so that
    ``transform(X) @ transform(Y).T`` approximates the kernel matrix with error O(1/sqrt(s)).

    Parameters
    ----------
    n_components : int, default=100
        Number of output features.
    kernel : {"gaussian", "laplace", "cauchy", "matern"}, default="gaussian"
        gaussian ``exp(-|x-y|^2 / (2 length_scale^2))``, laplace ``exp(-|x-y|_1 / length_scale)``,
        cauchy ``prod_j 1 / (1 + (x_j-y_j)^2 / length_scale^2)``, matern
        ``2^(1-nu) / Gamma(nu) z^nu K_nu(z)`` with ``z = sqrt(2 nu) |x-y| / length_scale`` and
        K_nu the modified Bessel function of the second kind (scikit-learn's
        :class:`~sklearn.gaussian_process.kernels.Matern`); its frequencies follow a multivariate
        Student t law with ``2 nu`` degrees of freedom over ``length_scale``.
    length_scale : float, default=1.0
        The kernel's length scale (frequencies are drawn for scale 1 and divided by it).
    nu : float, default=1.5
        The Matérn smoothness, a finite float > 0 (used by ``kernel="matern"`` only, checked
        whatever the kernel): 0.5 is the exponential kernel ``exp(-|x-y| / length_scale)``, 1.5
        and 2.5 give once and twice differentiable functions, and the Gaussian kernel is the limit
        as nu grows.
    sampling : {"random", "qmc", "orthogonal"}, default="random"
        How the frequencies are drawn. "random": independent draws from the spectral density
        (Rahimi & Recht 2007). "qmc": a scrambled Sobol' set mapped through the density's inverse
        CDFs (Avron et al. 2016): still unbiased, with a lower approximation error for the same
        ``n_components``; refused when the map needs more Sobol' dimensions than scipy has
        (21201, counting n_features and up to two more coordinates, for the phase and the
        radius). "orthogonal": blocks of n_features exactly orthogonal directions with radii
        from the kernel's radial law (as :class:`rffkern.OrthogonalRandomFeatures`); only for
        the kernels whose spectral density is radial (gaussian, matern), refused for laplace and
        cauchy, whose densities are products over the coordinates.
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
    weights_ : ndarray of shape (n_features_in_, n_frequencies)
    offsets_ : ndarray of shape (n_frequencies,)
        Zeros in the pair form.
    scale_ : float
        The feature scale ``c`` (``sqrt(2/s)``, or ``sqrt(1/s)`` in the pair form).
    n_features_in_ : int
        Number of features seen during fit.

    See Also
    --------
    rffkern.OrthogonalRandomFeatures : Orthogonal frequency blocks, lower approximation error.
    rffkern.Fastfood : O(s log d) structured map for the Gaussian and Matérn kernels.

    Examples
    --------
    >>> import numpy as np
    >>> from rffkern import RandomFourierFeatures
    >>> X = np.random.default_rng(0).standard_normal((200, 3))
    >>> rff = RandomFourierFeatures(n_components=2000, random_state=0).fit(X)
    >>> Z = rff.transform(X)
    >>> Z.shape
    (200, 2000)
    >>> exact = np.exp(-0.5 * np.sum((X[:, None] - X[None]) ** 2, axis=-1))
    >>> bool(np.abs(Z @ Z.T - exact).max() < 0.15)
    True

    The Matérn kernel with quasi-Monte Carlo frequencies:

    >>> from sklearn.gaussian_process.kernels import Matern
    >>> rff = RandomFourierFeatures(2000, kernel="matern", nu=2.5, sampling="qmc", random_state=0)
    >>> Z = rff.fit_transform(X)
    >>> bool(np.abs(Z @ Z.T - Matern(length_scale=1.0, nu=2.5)(X)).max() < 0.15)
    True
    """

    _parameter_constraints = {
        "n_components": [COMPONENTS],
        "kernel": [StrOptions(set(KERNELS))],
        "length_scale": [Interval(numbers.Real, 0, None, closed="neither")],
        "nu": [NU],
        "sampling": [StrOptions(set(SAMPLINGS))],
        "pair": ["boolean"],
        "random_state": ["random_state", np.random.Generator],
        "n_jobs": N_JOBS,
    }

    def __init__(self, n_components: int = 100, *, kernel: str = "gaussian", length_scale: float = 1.0,
                 nu: float = DEFAULT_NU, sampling: str = "random", pair: bool = False,
                 random_state: RandomStateLike = None, n_jobs: int | None = None) -> None:
        self.n_components = n_components
        self.kernel = kernel
        self.length_scale = length_scale
        self.nu = nu
        self.sampling = sampling
        self.pair = pair
        self.random_state = random_state
        self.n_jobs = n_jobs

    def fit(self, X: ArrayLike | sp.spmatrix | sp.sparray, y: object = None) -> RandomFourierFeatures:
        """Draw the frequencies and phases for X's number of features.

        A ``sampling`` the kernel does not allow ("orthogonal" with laplace or cauchy), or "qmc"
        beyond the Sobol' dimension limit, is refused here with a ValueError naming it.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Training rows; only their number of features and dtype are used (float32 gives
            float32 frequencies, everything else float64). A scipy.sparse matrix or array is
            accepted as is (never densified).
        y : None
            Ignored; present for the scikit-learn API.

        Returns
        -------
        self
            The fitted transformer.

        Examples
        --------
        >>> import numpy as np
        >>> from rffkern import RandomFourierFeatures
        >>> X = np.random.default_rng(0).standard_normal((5, 3))
        >>> rff = RandomFourierFeatures(n_components=16, random_state=0).fit(X)
        >>> rff.weights_.shape, rff.offsets_.shape
        ((3, 16), (16,))
        """
        self._validate_params()
        check_sampling(self.kernel, self.sampling)
        n_freq = frequency_count(self.n_components, self.pair)
        X = validate_data(self, X, accept_sparse=("csr", "csc", "coo"), dtype=[np.float64, np.float32],
                          ensure_all_finite=True)
        rng = as_generator(self.random_state)
        self.weights_, b = draw_map(self.kernel, X.shape[1], n_freq, self.length_scale, rng, X.dtype,
                                    nu=self.nu, sampling=self.sampling, offsets=not self.pair)
        self.offsets_ = np.zeros(n_freq, X.dtype) if self.pair else b
        self.scale_ = kernels.default_scale(n_freq, self.pair)
        self._n_features_out = self.n_components
        return self

    def transform(self, X: ArrayLike | sp.spmatrix | sp.sparray) -> NDArray[np.floating]:
        """Map X to its random features; float32 input stays float32.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            The rows to map, through the fused compiled kernel. A scipy.sparse matrix or array
            (CSR, CSC or any format scipy converts to CSR) is read through its stored entries
            only (:meth:`rffkern.kernels.CenteredRows.from_csr`: O(nnz s) work, never
            densified); the result equals that for ``X.toarray()`` to rounding (1e-12 in
            float64), with the same bits whatever ``n_jobs``. A Dask array is mapped lazily,
            block by block.

        Returns
        -------
        ndarray of shape (n_samples, n_components)
            The features, in X's floating dtype; dense whatever the input.

        Examples
        --------
        >>> import numpy as np
        >>> from rffkern import RandomFourierFeatures
        >>> X = np.random.default_rng(0).standard_normal((5, 3)).astype(np.float32)
        >>> Z = RandomFourierFeatures(n_components=16, random_state=0).fit(X).transform(X)
        >>> Z.shape, Z.dtype
        ((5, 16), dtype('float32'))

        Sparse input gives the same features as its dense copy:

        >>> import scipy.sparse as sp
        >>> X = sp.random(100, 50, density=0.05, format="csr", random_state=0)
        >>> rff = RandomFourierFeatures(n_components=64, random_state=0).fit(X)
        >>> bool(np.allclose(rff.transform(X), rff.transform(X.toarray()), rtol=0, atol=1e-12))
        True
        """
        if is_dask_array(X):
            return map_rows(self.transform, X)
        check_is_fitted(self)
        X = validate_data(self, X, accept_sparse="csr", dtype=[np.float64, np.float32],
                          ensure_all_finite=True, reset=False)
        W = self.weights_.astype(X.dtype, copy=False)
        b = None if self.pair else self.offsets_.astype(X.dtype, copy=False)
        n_threads = resolve_n_threads(self.n_jobs)
        if sp.issparse(X):
            X = kernels.CenteredRows.from_csr(X)  # the compiled kernel on the stored entries
        return kernels.features(X, W, b, scale=self.scale_, pair=self.pair, n_threads=n_threads)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.transformer_tags.preserves_dtype = ["float64", "float32"]
        return tags

