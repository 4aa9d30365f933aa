"""Pure-NumPy reference of the structured maps (docs/user_guide/feature_maps.rst), written for clarity.

Test oracle, never imported by the package. Every function here follows the maths step by step and is the yardstick the compiled kernels of
:mod:`rffkern.structured` are tested against:

* :func:`fwht` -- the textbook radix-2 butterfly (stages h = 1, 2, 4, ... with ``(a + b, a - b)``);
  the compiled transform is bitwise equal to it in the same precision.
* :func:`fastfood_features` -- ``V x = 1/(sigma sqrt(p)) S H G Pi H B x`` with the unnormalised H.
* :func:`sorf_features` -- ``W x = sqrt(p)/sigma Hn D1 Hn D2 Hn D3 x`` with the normalised Hn,
  each row times its radius factor ``R`` when one is given (the Matérn kernel's radii).
* :func:`fastfood_weights` / :func:`sorf_weights` -- the same maps as explicit d x s matrices, so
  that ``cos(X @ W + b)`` is a third, independent route to the features.
"""
from __future__ import annotations

import numpy as np

__all__ = [
    "fwht",
    "fastfood_features",
    "sorf_features",
    "fastfood_weights",
    "sorf_weights",
]


def fwht(x, normalized=False):
    """Walsh-Hadamard transform of the last axis of ``x`` (length a power of two).

    The butterflies run in the working precision of ``x`` (float32 stays float32), stage by stage
    for h = 1, 2, ..., len/2, each computing ``(a + b, a - b)``. ``normalized`` multiplies by
    ``1/sqrt(len)`` at the end (one rounding).
    """
    x = np.array(x, dtype=np.result_type(np.asarray(x).dtype, np.float32), copy=True)
    length = x.shape[-1]
    if length < 1 or length & (length - 1):
        raise ValueError(f"length must be a power of two, got {length}")
    lead = x.shape[:-1]
    h = 1
    while h < length:
        y = x.reshape(lead + (length // (2 * h), 2, h))
        a = y[..., 0, :].copy()
        b = y[..., 1, :].copy()
        y[..., 0, :] = a + b
        y[..., 1, :] = a - b
        h *= 2
    if normalized:
        x *= x.dtype.type(1.0 / np.sqrt(float(length)))
    return x


def _padded(X, p, theta=None):
    X = np.asarray(X, dtype=np.float64)
    if theta is not None:
        X = X * np.asarray(theta, dtype=np.float64)
    out = np.zeros((X.shape[0], p))
    out[:, : X.shape[1]] = X
    return out


def _cos_output(V, offsets, n_frequencies, pair):
    """V (n, n_blocks * p) of frequencies -> features with the default scale."""
    if n_frequencies is None:
        n_frequencies = V.shape[1] if offsets is None or pair else len(offsets)
    V = V[:, :n_frequencies]
    if pair:
        c = np.sqrt(1.0 / n_frequencies)
        return np.hstack([c * np.cos(V), c * np.sin(V)])
    c = np.sqrt(2.0 / n_frequencies)
    return c * np.cos(V + (0.0 if offsets is None else np.asarray(offsets, dtype=np.float64)))


def fastfood_projections(X, signs, permutation, gaussian, scaling, length_scale, theta=None):
    """``V_t x`` for every block t, concatenated: shape (n, n_blocks * p), in float64.

    Block t: ``(1/(sigma sqrt(p))) * S_t * H(G_t * Pi_t(H(B_t * x)))`` with ``(Pi y)_j = y[perm_j]``
    and H the unnormalised transform.
    """
    signs = np.asarray(signs, dtype=np.float64)
    n_blocks, p = signs.shape
    xp = _padded(X, p, theta)
    blocks = []
    for t in range(n_blocks):
        v = fwht(xp * signs[t])
        v = v[:, np.asarray(permutation[t])] * np.asarray(gaussian[t], dtype=np.float64)
        v = fwht(v)
        v = v * np.asarray(scaling[t], dtype=np.float64) / (length_scale * np.sqrt(p))
        blocks.append(v)
    return np.hstack(blocks)


def fastfood_features(X, signs, permutation, gaussian, scaling, offsets=None, *, length_scale=1.0,
                      n_frequencies=None, pair=False, theta=None):
    """Fastfood features ``sqrt(2/s) cos(Vx + u)`` or ``s^(-1/2) [cos Vx, sin Vx]`` (float64)."""
    V = fastfood_projections(X, signs, permutation, gaussian, scaling, length_scale, theta)
    return _cos_output(V, offsets, n_frequencies, pair)


def sorf_projections(X, diagonals, length_scale, theta=None, radial=None):
    """``W_t x = (sqrt(p)/sigma) R_t Hn D1 Hn D2 Hn D3 x`` for every block, shape (n, n_blocks * p);
    ``R_t = radial[t]`` elementwise, or 1 when ``radial`` is None."""
    diagonals = np.asarray(diagonals, dtype=np.float64)
    n_blocks, _, p = diagonals.shape
    xp = _padded(X, p, theta)
    blocks = []
    for t in range(n_blocks):
        d1, d2, d3 = diagonals[t]
        v = fwht(xp * d3, normalized=True)
        v = fwht(v * d2, normalized=True)
        v = fwht(v * d1, normalized=True)
        v = v * (np.sqrt(p) / length_scale)
        if radial is not None:
            v = v * np.asarray(radial[t], dtype=np.float64)
        blocks.append(v)
    return np.hstack(blocks)


def sorf_features(X, diagonals, offsets=None, *, length_scale=1.0, n_frequencies=None, pair=False,
                  theta=None, radial=None):
    """SORF features, same output forms as :func:`fastfood_features` (float64)."""
    V = sorf_projections(X, diagonals, length_scale, theta, radial)
    return _cos_output(V, offsets, n_frequencies, pair)


def fastfood_weights(d, signs, permutation, gaussian, scaling, length_scale, n_frequencies):
    """The Fastfood map as a dense (d, n_frequencies) matrix W with ``V x = W.T x``."""
    return fastfood_projections(np.eye(d), signs, permutation, gaussian, scaling,
                                length_scale)[:, :n_frequencies]


def sorf_weights(d, diagonals, length_scale, n_frequencies, radial=None):
    """The SORF map as a dense (d, n_frequencies) matrix."""
    return sorf_projections(np.eye(d), diagonals, length_scale, radial=radial)[:, :n_frequencies]
