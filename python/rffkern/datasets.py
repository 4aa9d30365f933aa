"""Synthetic regression problems of the RFFNet and SRFF papers.

Otto & Izbicki, "RFFNet: Large-Scale Interpretable Kernel Methods via Random Fourier Features"
(gse1, gse2, jse2, jse3; docs/user_guide/rffnet.rst) and Gregorová, Ramapuram, Kalousis &
Marchand-Maillet 2018, "Large-scale nonlinear variable selection via kernel random features" (se3;
docs/user_guide/srff.rst).

Every generator draws the design ``X`` and then independent Gaussian noise ``noise * N(0, 1)`` from
one :class:`numpy.random.Generator` seeded by ``random_state``, and returns ``(X, y, support)``
where ``support`` holds the 0-based indices of the features ``y`` depends on. The papers number
features from 1: their ``x_1`` is column 0 here.

=========  ====  ============================================  ==================
name       d     target                                        support (0-based)
=========  ====  ============================================  ==================
``gse1``   18    sin((x1 + x3)^2) * sin(x7 x8 x9)               0, 2, 6, 7, 8
``gse2``   100   log((x11 + x12 + x13 + x14 + x15)^2)           10, 11, 12, 13, 14
``jse2``   10    x1^3 + x2^3, x ~ N(0, S), S_ij = 0.5^|i-j|     0, 1
``jse3``   10    x1 * x2                                        0, 1
``hd5``    1000  sin(x1) + sin(x2) + x3 x4 + x5^2               0, 1, 2, 3, 4
``se3``    1000  10 (z1^2 + z2^2) exp(-2 (z1^2 + z2^2)),        0, ..., 9
                 x1..x5 = z1 + N(0, 0.1^2), x6..x10 = z2 + ...
=========  ====  ============================================  ==================

``hd5`` is a high-dimensional support-recovery problem (5 relevant features among ``n_features``,
1000 by default); ``se3`` is the SRFF paper's SE3 (10 relevant features that come in two groups of
five noisy copies of two latent variables, among 1000 built the same way from 200 latents).

Unlike the RFFNet reference code's ``jse2`` (which reuses the design's random stream as the noise,
so that its noise equals ``0.1 * x1``), the noise here is always independent of ``X``.
"""
from __future__ import annotations

import numpy as np

from rffkern._typing import Dataset, RandomStateLike
from rffkern._validation import as_generator, check_positive_float, check_positive_int

__all__ = ["make_gse1", "make_gse2", "make_jse2", "make_jse3", "make_hd5", "make_se3", "SUPPORTS"]

#: True supports (0-based column indices) of every generator, by name.
SUPPORTS = {
    "gse1": np.array([0, 2, 6, 7, 8]),
    "gse2": np.array([10, 11, 12, 13, 14]),
    "jse2": np.array([0, 1]),
    "jse3": np.array([0, 1]),
    "hd5": np.arange(5),
    "se3": np.arange(10),
}


def _setup(n_samples, noise, random_state):
    n_samples = check_positive_int(n_samples, "n_samples")
    noise = check_positive_float(noise, "noise", allow_zero=True)
    return n_samples, noise, as_generator(random_state)


def _finish(name, X, f, noise, rng):
    y = f + noise * rng.standard_normal(X.shape[0])
    return X, y, SUPPORTS[name].copy()


def make_gse1(n_samples: int = 1000, *,
              noise: float = 0.1, random_state: RandomStateLike = None) -> Dataset:
    """Make gse1: ``y = sin((x1 + x3)^2) * sin(x7 * x8 * x9) + noise * eps`` with 18 N(0, 1) features.

    Parameters
    ----------
    n_samples : int, default=1000
        Number of samples.
    noise : float, default=0.1
        Standard deviation of the additive Gaussian noise.
    random_state : None, int, numpy.random.Generator or RandomState, default=None
        Seed or generator of the draws (design first, then noise).

    Returns
    -------
    X : ndarray of shape (n_samples, 18)
        The design.
    y : ndarray of shape (n_samples,)
        The noisy target.
    support : ndarray of shape (5,)
        ``[0, 2, 6, 7, 8]``, the 0-based indices of x1, x3, x7, x8, x9.

    Examples
    --------
    >>> from rffkern.datasets import make_gse1
    >>> X, y, support = make_gse1(50, random_state=0)
    >>> X.shape, y.shape
    ((50, 18), (50,))
    >>> print(support)
    [0 2 6 7 8]
    """
    n, noise, rng = _setup(n_samples, noise, random_state)
    X = rng.standard_normal((n, 18))
    f = np.sin((X[:, 0] + X[:, 2]) ** 2) * np.sin(X[:, 6] * X[:, 7] * X[:, 8])
    return _finish("gse1", X, f, noise, rng)


def make_gse2(n_samples: int = 1000, *,
              noise: float = 0.1, random_state: RandomStateLike = None) -> Dataset:
    """Make gse2: ``y = log((x11 + ... + x15)^2) + noise * eps`` with 100 N(0, 1) features.

    Parameters
    ----------
    n_samples : int, default=1000
        Number of samples.
    noise : float, default=0.1
        Standard deviation of the additive Gaussian noise.
    random_state : None, int, numpy.random.Generator or RandomState, default=None
        Seed or generator of the draws (design first, then noise).

    Returns
    -------
    X : ndarray of shape (n_samples, 100)
        The design.
    y : ndarray of shape (n_samples,)
        The noisy target.
    support : ndarray of shape (5,)
        ``[10, 11, 12, 13, 14]``.

    Examples
    --------
    >>> from rffkern.datasets import make_gse2
    >>> X, y, support = make_gse2(50, random_state=0)
    >>> X.shape, y.shape
    ((50, 100), (50,))
    >>> print(support)
    [10 11 12 13 14]
    """
    n, noise, rng = _setup(n_samples, noise, random_state)
    X = rng.standard_normal((n, 100))
    f = np.log(X[:, 10:15].sum(axis=1) ** 2)
    return _finish("gse2", X, f, noise, rng)


def make_jse2(n_samples: int = 1000, *,
              noise: float = 0.1, random_state: RandomStateLike = None) -> Dataset:
    """Make jse2: ``y = x1^3 + x2^3 + noise * eps`` with 10 AR(1)-correlated features.

    ``x ~ N(0, S)`` with ``S_ij = 0.5^|i-j|``.

    Parameters
    ----------
    n_samples : int, default=1000
        Number of samples.
    noise : float, default=0.1
        Standard deviation of the additive Gaussian noise.
    random_state : None, int, numpy.random.Generator or RandomState, default=None
        Seed or generator of the draws (design first, then noise).

    Returns
    -------
    X : ndarray of shape (n_samples, 10)
        The design.
    y : ndarray of shape (n_samples,)
        The noisy target.
    support : ndarray of shape (2,)
        ``[0, 1]``.

    Examples
    --------
    >>> from rffkern.datasets import make_jse2
    >>> X, y, support = make_jse2(50, random_state=0)
    >>> X.shape, y.shape
    ((50, 10), (50,))
    >>> print(support)
    [0 1]
    """
    n, noise, rng = _setup(n_samples, noise, random_state)
    d = 10
    idx = np.arange(d)
    cov = 0.5 ** np.abs(idx[:, None] - idx[None, :])
    X = rng.standard_normal((n, d)) @ np.linalg.cholesky(cov).T
    f = X[:, 0] ** 3 + X[:, 1] ** 3
    return _finish("jse2", X, f, noise, rng)


def make_jse3(n_samples: int = 1000, *,
              noise: float = 0.1, random_state: RandomStateLike = None) -> Dataset:
    """Make jse3: ``y = x1 * x2 + noise * eps`` with 10 N(0, 1) features.

    Parameters
    ----------
    n_samples : int, default=1000
        Number of samples.
    noise : float, default=0.1
        Standard deviation of the additive Gaussian noise.
    random_state : None, int, numpy.random.Generator or RandomState, default=None
        Seed or generator of the draws (design first, then noise).

    Returns
    -------
    X : ndarray of shape (n_samples, 10)
        The design.
    y : ndarray of shape (n_samples,)
        The noisy target.
    support : ndarray of shape (2,)
        ``[0, 1]``.

    Examples
    --------
    >>> from rffkern.datasets import make_jse3
    >>> X, y, support = make_jse3(50, random_state=0)
    >>> X.shape, y.shape
    ((50, 10), (50,))
    >>> print(support)
    [0 1]
    """
    n, noise, rng = _setup(n_samples, noise, random_state)
    X = rng.standard_normal((n, 10))
    f = X[:, 0] * X[:, 1]
    return _finish("jse3", X, f, noise, rng)


def make_hd5(n_samples: int = 5000, *, n_features: int = 1000,
             noise: float = 0.5, random_state: RandomStateLike = None) -> Dataset:
    """Make hd5: ``y = sin(x1) + sin(x2) + x3 x4 + x5^2 + noise * eps``, 5 of ``n_features`` relevant.

    Five relevant features (two additive, one interaction, one even function) hidden among many
    irrelevant ones: a kernel with one shared width over all features sees an almost flat signal,
    so the learner has to find the relevant coordinates.

    Parameters
    ----------
    n_samples : int, default=5000
        Number of samples.
    n_features : int, default=1000
        Number of features, at least 5.
    noise : float, default=0.5
        Standard deviation of the additive Gaussian noise.
    random_state : None, int, numpy.random.Generator or RandomState, default=None
        Seed or generator of the draws (design first, then noise).

    Returns
    -------
    X : ndarray of shape (n_samples, n_features)
        The design.
    y : ndarray of shape (n_samples,)
        The noisy target.
    support : ndarray of shape (5,)
        ``[0, 1, 2, 3, 4]``.

    Examples
    --------
    >>> from rffkern.datasets import make_hd5
    >>> X, y, support = make_hd5(50, n_features=20, random_state=0)
    >>> X.shape, y.shape
    ((50, 20), (50,))
    >>> print(support)
    [0 1 2 3 4]
    """
    n, noise, rng = _setup(n_samples, noise, random_state)
    d = check_positive_int(n_features, "n_features", minimum=5)
    X = rng.standard_normal((n, d))
    f = np.sin(X[:, 0]) + np.sin(X[:, 1]) + X[:, 2] * X[:, 3] + X[:, 4] ** 2
    return _finish("hd5", X, f, noise, rng)


def make_se3(n_samples: int = 5000, *,
             noise: float = 0.01, random_state: RandomStateLike = None) -> Dataset:
    """Make SE3 of the SRFF paper: ``y = 10 (z1^2 + z2^2) exp(-2 (z1^2 + z2^2)) + noise * eps``.

    1000 features in 200 groups of five: group ``g`` holds five copies of a latent ``z_g ~ N(0, 1)``
    each perturbed by independent ``N(0, 0.1^2)`` noise; only the first two groups (columns 0-9)
    drive ``y``. (The paper writes the noise as ``N(0, 0.01)``; it is read here as the standard
    deviation, as for the other generators.)

    Parameters
    ----------
    n_samples : int, default=5000
        Number of samples.
    noise : float, default=0.01
        Standard deviation of the additive Gaussian noise.
    random_state : None, int, numpy.random.Generator or RandomState, default=None
        Seed or generator of the draws (design first, then noise).

    Returns
    -------
    X : ndarray of shape (n_samples, 1000)
        The design.
    y : ndarray of shape (n_samples,)
        The noisy target.
    support : ndarray of shape (10,)
        ``[0, ..., 9]``.

    Examples
    --------
    >>> from rffkern.datasets import make_se3
    >>> X, y, support = make_se3(50, random_state=0)
    >>> X.shape, y.shape
    ((50, 1000), (50,))
    >>> print(support)
    [0 1 2 3 4 5 6 7 8 9]
    """
    n, noise, rng = _setup(n_samples, noise, random_state)
    Z = rng.standard_normal((n, 200))
    X = np.repeat(Z, 5, axis=1) + 0.1 * rng.standard_normal((n, 1000))
    r2 = Z[:, 0] ** 2 + Z[:, 1] ** 2
    f = 10.0 * r2 * np.exp(-2.0 * r2)
    return _finish("se3", X, f, noise, rng)

