"""Shared helpers of the kernel tests: Hypothesis strategies, error bounds, ISA switching.

Tolerance model (used by every compiled-vs-reference comparison)
----------------------------------------------------------------
The reference is evaluated in float64 on the *same* (possibly float32) input values, so it is
exact to ~1e-15.  Every comparison is normwise, relative to the size of the compared quantity:
``|actual - expected| <= TOL[dtype] * (max|expected| + 1e-3 * max(magnitude))`` for every entry,
where ``magnitude`` is the worst-case rounding magnitude of the computation (the same computation
on absolute values: ``|X theta| @ |W| + |b| + 1`` for the phases, propagated through each
kernel), which only matters when the result is small through cancellation.  The elementwise
optimiser steps are checked entry by entry (``TOL * magnitude``).  Both add the smallest
normal number of the dtype (results in the subnormal range may flush to zero).  ``TOL`` comes from
tests/conftest.py:
float64 1e-10, float32 2e-4 (about 3000 ulp of float32: libmvec cosf is accurate to ~4 ulp and
a phase of size |U| carries ~|U| ulp of error).  Measured: float32 results are within
~1e-2 * TOL (normwise) of the reference, float64 within ~1e-4 * TOL.  A bug (wrong row, wrong column, missing offset,
wrong scale, wrong sign...) gives an O(1) relative error and fails these bounds.
"""
from __future__ import annotations

import contextlib

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import reference
from rffkern import _core

DTYPES = [np.float64, np.float32]
DTYPE_IDS = ["f64", "f32"]

# Same numbers as tests/conftest.py's TOLERANCE (imported there by pytest, repeated here so the
# helpers can be imported without conftest); a test in test_kernels_reference checks they agree.
TOL = {np.float64: 1e-10, np.float32: 2e-4}

# Arrays up to this many entries are drawn element by element by hypothesis.extra.numpy; larger
# ones are drawn from a Hypothesis-chosen seed, with a Hypothesis-drawn patch of values (which
# includes the bounds and 0) written over a random block, so that shrinking still works.
HNP_MAX = 400


def core_has_openmp():
    """Whether the core calls an OpenMP runtime (the RFFKERN_OPENMP=OFF build does not, and reports
    max_threads() == 1 whatever the environment): its import table names omp_get_max_threads."""
    with open(_core.__file__, "rb") as f:
        return b"\x00omp_get_max_threads\x00" in f.read()  # the dynamic symbol, not a docstring


def available_isas():
    """Every instruction set this CPU can run (as accepted by ``_core.set_isa``)."""
    isas = []
    current = _core.active_isa()
    try:
        for name in ("baseline", "avx2", "avx512"):
            try:
                _core.set_isa(name)
            except ValueError:
                continue
            isas.append(name)
    finally:
        _core.set_isa("auto")
    assert _core.active_isa() == current or current is None
    return isas


@contextlib.contextmanager
def isa(name):
    """Run the compiled kernels with instruction set ``name``; always restores "auto"."""
    _core.set_isa(name)
    try:
        yield
    finally:
        _core.set_isa("auto")


def _width(dtype):
    return 32 if np.dtype(dtype) == np.float32 else 64


@st.composite
def float_arrays(draw, dtype, shape, lo, hi):
    """A finite array of ``shape`` with entries in [lo, hi] (exactly representable in dtype)."""
    shape = tuple(int(v) for v in shape)
    size = int(np.prod(shape)) if shape else 1
    elements = st.floats(lo, hi, width=_width(dtype), allow_nan=False, allow_infinity=False)
    if size <= HNP_MAX:
        return draw(hnp.arrays(dtype, shape, elements=elements))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    arr = rng.uniform(lo, hi, size).astype(dtype)
    patch = draw(hnp.arrays(dtype, draw(st.integers(1, 16)), elements=elements))
    start = draw(st.integers(0, size - len(patch)))
    arr[start:start + len(patch)] = patch
    return arr.reshape(shape)


@st.composite
def map_problem(draw, dtype, *, max_n=600, max_d=12, max_s=70, theta=None, offsets=None,
                pair=None, min_n=1):
    """A cosine map (X, W, b, theta, pair).  ``theta``/``offsets``/``pair``: None = draw."""
    n = draw(st.one_of(st.just(min_n), st.integers(min_n, max_n)))
    d = draw(st.one_of(st.just(1), st.integers(1, max_d)))
    s = draw(st.one_of(st.just(1), st.integers(1, max_s)))
    X = draw(float_arrays(dtype, (n, d), -3.0, 3.0))
    W = draw(float_arrays(dtype, (d, s), -2.0, 2.0))
    use_b = draw(st.booleans()) if offsets is None else offsets
    use_t = draw(st.booleans()) if theta is None else theta
    b = draw(float_arrays(dtype, (s,), 0.0, 6.25)) if use_b else None
    th = draw(float_arrays(dtype, (d,), -2.0, 2.0)) if use_t else None
    pr = draw(st.booleans()) if pair is None else pair
    return X, W, b, th, pr


def f64(a):
    return None if a is None else np.asarray(a, dtype=np.float64)


def phase_magnitude(X, W, b=None, theta=None):
    """``|X theta| @ |W| + |b| + 1`` in float64: the size of the phases U (plus one)."""
    Xs = np.abs(f64(X)) if theta is None else np.abs(f64(X) * f64(theta))
    U = Xs @ np.abs(f64(W)) + 1.0
    return U if b is None else U + np.abs(f64(b))


def feature_magnitude(X, W, b=None, theta=None, pair=False, scale=None):
    """Bound on the rounding of every feature: |c| (|U| + 1), repeated for the sin half."""
    s = W.shape[1]
    c = reference.default_scale(s, pair) if scale is None else scale
    M = abs(c) * phase_magnitude(X, W, b, theta)
    return np.hstack([M, M]) if pair else M


# Weight of the worst-case rounding magnitude in the normwise bound (see assert_within).
CANCEL = 1e-3


def assert_within(actual, expected, magnitude, dtype, what="", elementwise=False):
    """Compare a compiled result with the float64 reference.

    Normwise (default): ``|actual - expected| <= TOL[dtype] * (max|expected| + CANCEL * max(magnitude))``
    for every entry, i.e. relative to the size of the compared quantity; the second term (the
    worst-case rounding magnitude of the computation, scaled down by CANCEL = 1e-3) only matters
    when the result is tiny through cancellation.  Elementwise (for the elementwise optimiser
    steps): ``|actual - expected| <= TOL[dtype] * magnitude`` entry by entry.
    """
    actual = np.asarray(actual, dtype=np.float64)
    expected = np.asarray(expected, dtype=np.float64)
    assert actual.shape == expected.shape, f"{what}: shape {actual.shape} != {expected.shape}"
    magnitude = np.broadcast_to(np.asarray(magnitude, dtype=np.float64), expected.shape)
    if elementwise:
        bound = TOL[dtype] * magnitude
    else:
        size = np.max(np.abs(expected)) if expected.size else 0.0
        scale = size + CANCEL * (np.max(magnitude) if magnitude.size else 0.0)
        bound = np.full(expected.shape, TOL[dtype] * scale)
    # plus the smallest normal number of dtype: subnormal results may flush to zero
    bound = bound + np.finfo(dtype).tiny
    err = np.abs(actual - expected)
    bad = ~(err <= bound)
    if bad.any():
        i = np.unravel_index(np.argmax(np.where(bad, err / np.maximum(bound, 1e-300), 0)), err.shape)
        raise AssertionError(
            f"{what}: {int(bad.sum())} of {err.size} entries out of tolerance; worst at {i}: "
            f"actual {actual[i]!r}, expected {expected[i]!r}, |diff| {err[i]:.3g} > bound {bound[i]:.3g}"
        )


def loss_targets(rng, loss, n, m, dtype):
    """Valid targets for ``loss``: real for squared, {0, 1} for logistic, one-hot for softmax."""
    if loss == "squared":
        return rng.uniform(-2, 2, (n, m)).astype(dtype)
    if loss == "logistic":
        return rng.integers(0, 2, (n, m)).astype(dtype)
    Y = np.zeros((n, m), dtype)
    Y[np.arange(n), rng.integers(0, m, n)] = 1
    return Y


def loss_grad_magnitudes(X, Y, W, b, theta, coef, loss, pair, scale=None):
    """Rounding bounds (float64 arrays) for (loss, grad_coef, grad_theta) of loss_and_grad.

    First-order propagation of the feature bound M through the reference's chain rule, on
    absolute values: outputs Fm = M |C|; the loss derivative g is 1-Lipschitz in each output
    (softmax: in the sum of the outputs' errors), so its error is Gm = Fm (row sums for
    softmax); dL/dcoef = Z^T g / n gives (M^T |g| + |Z|^T Gm) / n; dL/dU = c sin(U) (g C^T) gives
    M (|g| |C|^T) + |Z| (Gm |C|^T), and dL/dtheta = sum_i X_ij (dL/dU W^T)_ij / n.
    """
    n, s = X.shape[0], W.shape[1]
    C = np.abs(f64(coef)).reshape(coef.shape[0], -1)
    Y2 = f64(Y).reshape(n, -1)
    M = feature_magnitude(X, W, b, theta, pair, scale)
    Z = reference.features(f64(X), f64(W), f64(b), theta=f64(theta), scale=scale, pair=pair)
    F = Z @ f64(coef).reshape(coef.shape[0], -1)
    per_sample, g = reference.loss_values(F, Y2, loss)
    Fm = M @ C
    Gm = np.broadcast_to(Fm.sum(1, keepdims=True), Fm.shape) if loss == "softmax" else Fm
    g = np.abs(g)
    loss_mag = np.mean(np.abs(per_sample) + (g * Fm).sum(1) + Fm.sum(1))
    gcoef = (M.T @ g + np.abs(Z).T @ Gm) / n
    dU = M * (g @ C.T) + np.abs(Z) * (Gm @ C.T)
    if pair:
        dU = dU[:, :s] + dU[:, s:]
    gtheta = (np.abs(f64(X)) * (dU @ np.abs(f64(W)).T)).sum(axis=0) / n
    gcoef = gcoef if coef.ndim == 2 else gcoef[:, 0]
    return loss_mag, gcoef, gtheta
