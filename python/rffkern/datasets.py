"""Synthetic regression problems of the RFFNet and SRFF papers (ALGORITHMS.md section 3).

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
=========  ====  ============================================  ==================

Unlike the RFFNet reference code's ``jse2`` (which reuses the design's random stream as the noise,
so that its noise equals ``0.1 * x1``), the noise here is always independent of ``X``.
"""
from __future__ import annotations

import numpy as np

from rffkern._validation import as_generator, check_positive_float, check_positive_int

__all__ = ["make_gse1", "make_gse2", "make_jse2", "make_jse3", "SUPPORTS"]

#: True supports (0-based column indices) of every generator, by name.
SUPPORTS = {
    "gse1": np.array([0, 2, 6, 7, 8]),
    "gse2": np.array([10, 11, 12, 13, 14]),
    "jse2": np.array([0, 1]),
    "jse3": np.array([0, 1]),
}


def _setup(n_samples, noise, random_state):
    n_samples = check_positive_int(n_samples, "n_samples")
    noise = check_positive_float(noise, "noise", allow_zero=True)
    return n_samples, noise, as_generator(random_state)


def _finish(name, X, f, noise, rng):
    y = f + noise * rng.standard_normal(X.shape[0])
    return X, y, SUPPORTS[name].copy()


def make_gse1(n_samples=1000, *, noise=0.1, random_state=None):
    """gse1: ``y = sin((x1 + x3)^2) * sin(x7 * x8 * x9) + noise * eps`` with 18 N(0, 1) features.

    Parameters
    ----------
    n_samples : int, default=1000
    noise : float, default=0.1
        Standard deviation of the additive Gaussian noise.
    random_state : None, int, numpy.random.Generator or RandomState, default=None

    Returns
    -------
    X : ndarray of shape (n_samples, 18)
    y : ndarray of shape (n_samples,)
    support : ndarray of shape (5,)
        ``[0, 2, 6, 7, 8]``, the 0-based indices of x1, x3, x7, x8, x9.
    """
    n, noise, rng = _setup(n_samples, noise, random_state)
    X = rng.standard_normal((n, 18))
    f = np.sin((X[:, 0] + X[:, 2]) ** 2) * np.sin(X[:, 6] * X[:, 7] * X[:, 8])
    return _finish("gse1", X, f, noise, rng)


def make_gse2(n_samples=1000, *, noise=0.1, random_state=None):
    """gse2: ``y = log((x11 + ... + x15)^2) + noise * eps`` with 100 N(0, 1) features.

    Parameters
    ----------
    n_samples : int, default=1000
    noise : float, default=0.1
    random_state : None, int, numpy.random.Generator or RandomState, default=None

    Returns
    -------
    X : ndarray of shape (n_samples, 100)
    y : ndarray of shape (n_samples,)
    support : ndarray of shape (5,)
        ``[10, 11, 12, 13, 14]``.
    """
    n, noise, rng = _setup(n_samples, noise, random_state)
    X = rng.standard_normal((n, 100))
    f = np.log(X[:, 10:15].sum(axis=1) ** 2)
    return _finish("gse2", X, f, noise, rng)


def make_jse2(n_samples=1000, *, noise=0.1, random_state=None):
    """jse2: ``y = x1^3 + x2^3 + noise * eps`` with 10 AR(1)-correlated features.

    ``x ~ N(0, S)`` with ``S_ij = 0.5^|i-j|``.

    Parameters
    ----------
    n_samples : int, default=1000
    noise : float, default=0.1
    random_state : None, int, numpy.random.Generator or RandomState, default=None

    Returns
    -------
    X : ndarray of shape (n_samples, 10)
    y : ndarray of shape (n_samples,)
    support : ndarray of shape (2,)
        ``[0, 1]``.
    """
    n, noise, rng = _setup(n_samples, noise, random_state)
    d = 10
    idx = np.arange(d)
    cov = 0.5 ** np.abs(idx[:, None] - idx[None, :])
    X = rng.standard_normal((n, d)) @ np.linalg.cholesky(cov).T
    f = X[:, 0] ** 3 + X[:, 1] ** 3
    return _finish("jse2", X, f, noise, rng)


def make_jse3(n_samples=1000, *, noise=0.1, random_state=None):
    """jse3: ``y = x1 * x2 + noise * eps`` with 10 N(0, 1) features.

    Parameters
    ----------
    n_samples : int, default=1000
    noise : float, default=0.1
    random_state : None, int, numpy.random.Generator or RandomState, default=None

    Returns
    -------
    X : ndarray of shape (n_samples, 10)
    y : ndarray of shape (n_samples,)
    support : ndarray of shape (2,)
        ``[0, 1]``.
    """
    n, noise, rng = _setup(n_samples, noise, random_state)
    X = rng.standard_normal((n, 10))
    f = X[:, 0] * X[:, 1]
    return _finish("jse3", X, f, noise, rng)
