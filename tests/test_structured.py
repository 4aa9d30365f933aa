"""Structured maps: FWHT, Fastfood, SORF, ORF against the maths and the NumPy reference."""
import pickle
import threading

import numpy as np
import pytest
import scipy.linalg
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from sklearn.base import clone
from sklearn.utils.estimator_checks import parametrize_with_checks

import rffkern
from rffkern import RandomFourierFeatures, _core
import structured_reference as ref
from rffkern._sampling import exact_kernel
from rffkern.structured import (
    Fastfood,
    OrthogonalRandomFeatures,
    StructuredOrthogonalFeatures,
    block_size,
    fastfood_features,
    fwht,
    sorf_features,
)

MAPS = [Fastfood, StructuredOrthogonalFeatures, OrthogonalRandomFeatures]
# tolerance on Z / scale (|cos| <= 1) for compiled vs float64 reference
FEATURE_TOL = {np.float64: 1e-9, np.float32: 1e-3}


# ---- FWHT ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("k", range(0, 9))
@pytest.mark.parametrize("normalized", [False, True])
def test_fwht_equals_hadamard_matrix(k, normalized, dtype):
    rng = np.random.default_rng(k)
    n = 2**k
    H = scipy.linalg.hadamard(n).astype(np.float64)
    if normalized:
        H /= np.sqrt(n)
    X = rng.standard_normal((5, n)).astype(dtype)
    tol = 1e-12 if dtype == np.float64 else 1e-5
    Y = fwht(X, normalized=normalized, n_threads=2)
    assert Y.dtype == dtype and Y.shape == X.shape
    np.testing.assert_allclose(Y, X.astype(np.float64) @ H.T, rtol=tol, atol=tol * np.sqrt(n))
    # a 1-D vector is one row
    np.testing.assert_array_equal(fwht(X[0], normalized=normalized), Y[0])


@pytest.mark.parametrize("k", [3, 10, 12, 13, 14, 15, 17, 19, 20])
def test_fwht_bitwise_equals_reference_butterfly(k, dtype):
    # lengths below, at and beyond the in-cache size, including the cache-blocked path
    rng = np.random.default_rng(k)
    n_rows = 3 if k <= 15 else 1
    X = rng.standard_normal((n_rows, 2**k)).astype(dtype)
    X0 = X.copy()
    for normalized in (False, True):
        Y = fwht(X, normalized=normalized, n_threads=2)
        np.testing.assert_array_equal(Y, ref.fwht(X, normalized=normalized))
    np.testing.assert_array_equal(X, X0)  # the input is never modified


@pytest.mark.parametrize("k,dtype", [(22, np.float64), (24, np.float32)])
def test_fwht_very_long_rows_against_closed_form(k, dtype):
    # H[i, j] = (-1)^popcount(i & j): the transform of 3 e_a - 2 e_b is known in closed form
    n = 2**k
    a, b = 12345, n - 7
    x = np.zeros(n, dtype)
    x[a], x[b] = 3.0, -2.0
    i = np.arange(n, dtype=np.uint32)

    def column(j):
        return 1 - 2 * (np.bitwise_count(i & np.uint32(j)) & 1).astype(np.int8)

    expected = (3 * column(a) - 2 * column(b)).astype(dtype)
    np.testing.assert_array_equal(fwht(x, n_threads=1), expected)


@pytest.mark.parametrize("k", [0, 1, 4, 7, 10])
def test_fwht_involution(k, dtype):
    # H H = 2^k I exactly in floating point for the identity (all partial sums are small integers)
    n = 2**k
    HH = fwht(fwht(np.eye(n, dtype=dtype)))
    np.testing.assert_array_equal(HH, n * np.eye(n, dtype=dtype))
    x = np.random.default_rng(1).standard_normal((2, n)).astype(dtype)
    tol = 1e-12 if dtype == np.float64 else 1e-5
    np.testing.assert_allclose(fwht(fwht(x, normalized=True), normalized=True), x, atol=tol)


def test_fwht_inplace_and_out(dtype):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((4, 256)).astype(dtype)
    expected = fwht(X)
    out = np.empty_like(X)
    assert fwht(X, out=out) is out
    np.testing.assert_array_equal(out, expected)
    Y = X.copy()
    assert fwht(Y, out=Y) is Y  # in place
    np.testing.assert_array_equal(Y, expected)
    # an output that overlaps the input only partly: computed from a private copy
    buf = rng.standard_normal(5 * 256).astype(dtype)
    src = buf[:4 * 256].reshape(4, 256)
    want = fwht(src.copy())
    dst = buf[256:].reshape(4, 256)
    fwht(src, out=dst)
    np.testing.assert_array_equal(dst, want)


def test_fwht_threads_bitwise_and_integers():
    rng = np.random.default_rng(3)
    X = rng.standard_normal((37, 2048))
    np.testing.assert_array_equal(fwht(X, n_threads=1), fwht(X, n_threads=2))
    Xi = rng.integers(-5, 5, (3, 16))
    Y = fwht(Xi)
    assert Y.dtype == np.float64
    np.testing.assert_array_equal(Y, Xi @ scipy.linalg.hadamard(16).T)
    assert fwht(np.empty((0, 8))).shape == (0, 8)


def test_fwht_bad_input():
    with pytest.raises(ValueError, match="power-of-two"):
        fwht(np.ones(12))
    with pytest.raises(ValueError, match="power-of-two"):
        fwht(np.ones((2, 0)))
    with pytest.raises(ValueError, match="NaN"):
        fwht(np.array([1.0, np.nan]))
    with pytest.raises(ValueError, match="NaN"):
        fwht(np.array([1.0, np.inf]))
    with pytest.raises(TypeError, match="complex"):
        fwht(np.ones(4, dtype=complex))
    with pytest.raises(TypeError, match="numeric"):
        fwht(np.array(["a", "b"]))
    with pytest.raises(ValueError, match="1-D or 2-D"):
        fwht(np.ones((2, 2, 2)))
    with pytest.raises(TypeError, match="dtype"):
        fwht(np.ones(4), out=np.empty(4, np.float32))
    with pytest.raises(ValueError, match="shape"):
        fwht(np.ones(4), out=np.empty(8))
    with pytest.raises(ValueError, match="n_jobs == 0"):
        fwht(np.ones(4), n_threads=0)
    # the compiled layer checks too (never trusts its caller)
    with pytest.raises(ValueError, match="power-of-two"):
        _core.fwht_inplace(np.ones((1, 6)), False, 1)
    with pytest.raises(ValueError, match="overlap"):
        a = np.ones(24)
        _core.fwht(a[:16].reshape(2, 8), a[8:].reshape(2, 8), False, 1)


def test_fwht_releases_gil_and_agrees_across_python_threads():
    rng = np.random.default_rng(5)
    X = rng.standard_normal((64, 4096))
    expected = fwht(X, n_threads=1)
    results = [None] * 4

    def work(i):
        results[i] = fwht(X, n_threads=1)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for r in results:
        np.testing.assert_array_equal(r, expected)


# ---- the feature maps against the NumPy reference -------------------------------------------
def _reference_of(model, X):
    s = model.offsets_.shape[0]
    u = None if model.pair else model.offsets_
    if isinstance(model, Fastfood):
        return ref.fastfood_features(X, model.signs_, model.permutation_, model.gaussian_,
                                     model.scaling_, u, length_scale=model.length_scale,
                                     n_frequencies=s, pair=model.pair)
    if isinstance(model, StructuredOrthogonalFeatures):
        return ref.sorf_features(X, model.diagonals_, u, length_scale=model.length_scale,
                                 n_frequencies=s, pair=model.pair, radial=model.radial_)
    Z = X.astype(np.float64) @ model.weights_
    if model.pair:
        return np.sqrt(1.0 / s) * np.hstack([np.cos(Z), np.sin(Z)])
    return np.sqrt(2.0 / s) * np.cos(Z + model.offsets_)


def _largest_phase(model, X):
    """max |W x| over the rows of X: a phase's rounding error grows with its size (the heavy-tailed
    Matérn radii at small nu give phases of thousands)."""
    if isinstance(model, Fastfood):
        V = ref.fastfood_projections(X, model.signs_, model.permutation_, model.gaussian_,
                                     model.scaling_, model.length_scale)
    elif isinstance(model, StructuredOrthogonalFeatures):
        V = ref.sorf_projections(X, model.diagonals_, model.length_scale, radial=model.radial_)
    else:
        V = X.astype(np.float64) @ model.weights_
    return float(np.abs(V).max(initial=0.0))


@st.composite
def map_cases(draw):
    n = draw(st.integers(1, 6))
    d = draw(st.integers(1, 40))
    dtype = draw(st.sampled_from([np.float64, np.float32]))
    X = draw(hnp.arrays(dtype, (n, d), elements=st.floats(-2, 2, width=32)))
    pair = draw(st.booleans())
    n_components = draw(st.integers(1, 150)) * (2 if pair else 1)
    length_scale = draw(st.sampled_from([0.5, 1.0, 3.0]))
    seed = draw(st.integers(0, 2**31 - 1))
    threads = draw(st.sampled_from([1, 2]))
    kernel = draw(st.sampled_from(["gaussian", "matern"]))
    nu = draw(st.sampled_from([0.5, 1.5, 3.7]))
    return X, pair, n_components, length_scale, seed, threads, kernel, nu


@pytest.mark.parametrize("cls", MAPS)
@given(case=map_cases())
def test_maps_equal_reference(cls, case):
    X, pair, n_components, length_scale, seed, threads, kernel, nu = case
    model = cls(n_components=n_components, kernel=kernel, length_scale=length_scale, nu=nu, pair=pair,
                random_state=seed, n_jobs=threads).fit(X)
    Z = model.transform(X)
    assert Z.dtype == X.dtype and Z.shape == (X.shape[0], n_components)
    R = _reference_of(model, X)
    # FEATURE_TOL holds for phases up to ~1000
    tol = FEATURE_TOL[X.dtype.type] * (1.0 + _largest_phase(model, X) / 1000.0)
    np.testing.assert_allclose(Z / model.scale_, R / model.scale_, rtol=0, atol=tol)
    # one and two threads give the same bits
    np.testing.assert_array_equal(Z, clone(model).set_params(n_jobs=3 - threads).fit(X).transform(X))


@pytest.mark.parametrize("pair", [False, True])
def test_structured_maps_are_linear_maps_with_the_stated_weights(pair, dtype):
    # a third route: the dense fused kernel on the map written out as a d x s matrix
    rng = np.random.default_rng(7)
    X = rng.standard_normal((9, 13)).astype(dtype)
    for model in (Fastfood(50, pair=pair, length_scale=2.0, random_state=1),
                  StructuredOrthogonalFeatures(50, pair=pair, length_scale=2.0, random_state=1),
                  Fastfood(50, kernel="matern", pair=pair, length_scale=2.0, random_state=1),
                  StructuredOrthogonalFeatures(50, kernel="matern", pair=pair, length_scale=2.0,
                                               random_state=1)):
        model.fit(X)
        s = model.offsets_.shape[0]
        if isinstance(model, Fastfood):
            W = ref.fastfood_weights(13, model.signs_, model.permutation_, model.gaussian_,
                                     model.scaling_, 2.0, s)
        else:
            W = ref.sorf_weights(13, model.diagonals_, 2.0, s, radial=model.radial_)
        Z_dense = rffkern.kernels.features(X, W, None if pair else model.offsets_, pair=pair)
        np.testing.assert_allclose(model.transform(X) / model.scale_, Z_dense / model.scale_,
                                   atol=FEATURE_TOL[dtype])


def test_theta_scales_the_input_before_the_transform(dtype):
    rng = np.random.default_rng(2)
    X = rng.standard_normal((6, 10)).astype(dtype)
    theta = rng.uniform(0.1, 2.0, 10)
    ff = Fastfood(40, random_state=0).fit(X)
    args = (ff.signs_, ff.permutation_, ff.gaussian_, ff.scaling_, ff.offsets_)
    np.testing.assert_allclose(fastfood_features(X, *args, theta=theta),
                               fastfood_features((X * theta).astype(dtype), *args),
                               atol=FEATURE_TOL[dtype])
    np.testing.assert_allclose(fastfood_features(X, *args, theta=theta),
                               ref.fastfood_features(X, *args, theta=theta),
                               atol=FEATURE_TOL[dtype])
    so = StructuredOrthogonalFeatures(40, random_state=0).fit(X)
    np.testing.assert_allclose(sorf_features(X, so.diagonals_, so.offsets_, theta=theta),
                               ref.sorf_features(X, so.diagonals_, so.offsets_, theta=theta),
                               atol=FEATURE_TOL[dtype])


def test_large_blocks_use_the_cache_blocked_transform():
    # d = 9000 -> p = 16384 (beyond the in-cache FWHT size in float64)
    rng = np.random.default_rng(4)
    X = rng.standard_normal((3, 9000)) * 0.01
    for cls in (Fastfood, StructuredOrthogonalFeatures):
        model = cls(n_components=20000, length_scale=1.0, random_state=0).fit(X)
        assert model.block_size_ == 16384
        np.testing.assert_allclose(model.transform(X), _reference_of(model, X), atol=1e-10)


# ---- the maths of each map ------------------------------------------------------------------
def test_frequency_laws_of_the_maps():
    d = p = 64
    X = np.zeros((1, d))
    # SORF: each block is sqrt(p)/sigma times an orthogonal matrix
    so = StructuredOrthogonalFeatures(2 * p, length_scale=2.0, random_state=0).fit(X)
    W = ref.sorf_weights(d, so.diagonals_, 2.0, 2 * p)
    for t in range(2):
        Wt = W[:, t * p:(t + 1) * p]
        np.testing.assert_allclose(Wt.T @ Wt, (p / 4.0) * np.eye(p), atol=1e-10)
    # ORF: each block of d frequencies is exactly orthogonal, lengths chi_d / sigma
    orf = OrthogonalRandomFeatures(40 * d, length_scale=2.0, random_state=0).fit(X)
    Wo = orf.weights_
    G = Wo[:, :d].T @ Wo[:, :d]
    np.testing.assert_allclose(G - np.diag(np.diag(G)), 0, atol=1e-10)
    # Fastfood: row norms are exactly the chi_p draws over sigma (S = chi / ||G||), and in every
    # map the squared lengths have the chi^2_d mean d / sigma^2 (40 blocks: a 1% standard error)
    ff = Fastfood(40 * p, length_scale=2.0, random_state=0).fit(X)
    Wf = ref.fastfood_weights(d, ff.signs_, ff.permutation_, ff.gaussian_, ff.scaling_, 2.0, 40 * p)
    chi = ff.scaling_ * np.linalg.norm(ff.gaussian_, axis=1, keepdims=True)
    np.testing.assert_allclose(np.linalg.norm(Wf, axis=0), chi.ravel() / 2.0, rtol=1e-10)
    for Wm in (Wf, Wo):
        assert abs(np.mean((Wm**2).sum(0)) / (d / 4.0) - 1) < 0.05


# ---- statistics: kernel approximation ----------------------------------------------------------
def test_kernel_approximation_comparable_to_dense_rff():
    # Fixed seeds. Relative Frobenius error of Z Z^T against the exact Gaussian kernel, averaged
    # over 6 draws; n = 200, d = 64 (p = 64, no padding), s = 512, sigma = 8. Measured ratios of
    # the error to dense RFF's at the same feature count (phase form): Fastfood 1.18, SORF 0.86,
    # ORF 0.83. Pair form ([cos, sin] with s/2 frequencies) vs dense RFF's phase form: RFF 0.95,
    # SORF 0.51, ORF 0.59, Fastfood 1.24 (Fastfood's frequencies within a block are dependent, so
    # its pair form gains nothing over its phase form).
    rng = np.random.default_rng(0)
    X = rng.standard_normal((200, 64))
    sigma, s = 8.0, 512
    K = exact_kernel("gaussian", X, X, sigma)

    def err(cls, pair=False):
        e = []
        for seed in range(6):
            Z = cls(n_components=s, length_scale=sigma, pair=pair, random_state=seed).fit_transform(X)
            e.append(np.linalg.norm(Z @ Z.T - K) / np.linalg.norm(K))
        return np.mean(e)

    base = err(RandomFourierFeatures)
    assert base < 0.15
    ratios = {cls.__name__: err(cls) / base for cls in MAPS}
    pair_ratios = {cls.__name__: err(cls, pair=True) / base
                   for cls in MAPS + [RandomFourierFeatures]}
    assert ratios["Fastfood"] < 1.35, ratios
    assert ratios["StructuredOrthogonalFeatures"] < 1.0, ratios
    assert ratios["OrthogonalRandomFeatures"] < 1.0, ratios
    # the [cos, sin] pair beats cos with a random phase for i.i.d. and orthogonal frequencies
    assert pair_ratios["RandomFourierFeatures"] < 1.0, pair_ratios
    assert pair_ratios["StructuredOrthogonalFeatures"] < 0.7, pair_ratios
    assert pair_ratios["OrthogonalRandomFeatures"] < 0.7, pair_ratios
    assert pair_ratios["Fastfood"] < 1.4, pair_ratios


def test_sorf_bias_falls_with_the_block_size_not_with_d():
    # SORF's bias is set by the block p (Yu et al. 2016): at d = 5 with sign diagonals drawn by
    # hand, the mean of Z Z^T over 8 maps of 8192 [cos, sin] pairs misses K by 0.098 at p = 8 and
    # 0.014 at p = 64 (the Monte Carlo error of the mean is about 0.004 on the largest entry).
    rng = np.random.default_rng(0)
    X = rng.standard_normal((40, 5))
    sigma, s = np.sqrt(5.0), 8192
    K = exact_kernel("gaussian", X, X, sigma)

    def bias(p):
        draws = np.random.default_rng(1).choice([-1.0, 1.0], size=(8, s // p, 3, p))
        Zs = [sorf_features(X, D, length_scale=sigma, n_frequencies=s, pair=True) for D in draws]
        return np.abs(np.mean([Z @ Z.T for Z in Zs], axis=0) - K).max()

    small, padded = bias(8), bias(64)
    assert small > 0.08 and padded < 0.03, (small, padded)


def test_sorf_at_small_d_converges_like_dense_rff():
    # d = 5 is padded to p = 64, so the error keeps shrinking with the feature count; with p = 8
    # it stopped at the bias (max error 0.15 at 4096 and at 16384 features). Measured here:
    # RFF 0.109 / 0.025, SORF 0.088 / 0.022 at 1024 / 16384 features.
    rng = np.random.default_rng(0)
    X = rng.standard_normal((100, 5))
    sigma = np.sqrt(5.0)
    K = exact_kernel("gaussian", X, X, sigma)

    def err(cls, s):
        Z = cls(n_components=s, length_scale=sigma, random_state=0).fit_transform(X)
        return np.abs(Z @ Z.T - K).max()

    assert StructuredOrthogonalFeatures(8).fit(X).block_size_ == 64
    few, many = err(StructuredOrthogonalFeatures, 1024), err(StructuredOrthogonalFeatures, 16384)
    assert many < 0.6 * few, (few, many)
    assert many < 1.5 * err(RandomFourierFeatures, 16384), many


# ---- estimator conventions ---------------------------------------------------------------------
@pytest.mark.parametrize("cls", MAPS)
def test_estimator_conventions(cls):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((20, 7))
    m = cls(n_components=33, random_state=3, n_jobs=1).fit(X)
    Z = m.transform(X)
    assert Z.shape == (20, 33)
    np.testing.assert_array_equal(Z, cls(n_components=33, random_state=3, n_jobs=2).fit(X).transform(X))
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(m)).transform(X), Z)
    Z32 = m.transform(X.astype(np.float32))
    assert Z32.dtype == np.float32
    np.testing.assert_allclose(Z32, Z, atol=1e-4)
    if cls is not OrthogonalRandomFeatures:
        # SORF pads small inputs further, to its least-biased block size
        assert m.block_size_ == (64 if cls is StructuredOrthogonalFeatures else 8)
    with pytest.raises(ValueError, match="even"):
        cls(n_components=5, pair=True).fit(X)
    with pytest.raises(ValueError, match="NaN|infinity"):
        m.transform(np.where(X > 1, np.nan, X))
    with pytest.raises(ValueError, match="features"):
        m.transform(X[:, :5])
    with pytest.raises(ValueError):
        cls(n_components=0).fit(X)
    with pytest.raises(ValueError):
        cls(length_scale=-1.0).fit(X)


def test_map_functions_bad_input():
    X = np.ones((2, 3))
    ff = Fastfood(8, random_state=0).fit(X)
    args = [ff.signs_, ff.permutation_, ff.gaussian_, ff.scaling_, ff.offsets_]
    with pytest.raises(ValueError, match="permutation of"):
        bad = ff.permutation_.copy()
        bad[0, 0] = bad[0, 1]
        fastfood_features(X, args[0], bad, *args[2:])
    with pytest.raises(TypeError, match="integer"):
        fastfood_features(X, args[0], ff.permutation_.astype(float), *args[2:])
    with pytest.raises(ValueError, match="block size"):
        fastfood_features(np.ones((2, 9)), *args)
    with pytest.raises(ValueError, match=r"\+1 and -1"):
        fastfood_features(X, args[0] * 2, *args[1:])
    with pytest.raises(ValueError, match="power of two"):
        sorf_features(X, np.ones((1, 3, 6)))
    with pytest.raises(ValueError, match="NaN"):
        sorf_features(np.array([[np.nan, 1.0]]), np.ones((1, 3, 2)))
    with pytest.raises(ValueError, match="exceeds"):
        sorf_features(X, np.ones((1, 3, 4)), n_frequencies=5)
    with pytest.raises(ValueError, match=r"radial must have shape \(1, 4\)"):
        sorf_features(X, np.ones((1, 3, 4)), radial=np.ones((2, 4)))
    with pytest.raises(ValueError, match="radial contains NaN"):
        sorf_features(X, np.ones((1, 3, 4)), radial=np.full((1, 4), np.nan))
    with pytest.raises(ValueError, match="radial must hold radius factors >= 0"):
        sorf_features(X, np.ones((1, 3, 4)), radial=-np.ones((1, 4)))
    assert block_size(1) == 1 and block_size(5) == 8 and block_size(8) == 8


@parametrize_with_checks([Fastfood(n_components=20, random_state=0),
                          StructuredOrthogonalFeatures(n_components=20, random_state=0),
                          OrthogonalRandomFeatures(n_components=20, random_state=0)])
def test_sklearn_compatible(estimator, check):
    check(estimator)


@pytest.mark.parametrize("isa", ["baseline", "avx2"])
def test_every_instruction_set_agrees(isa):
    # the per-ISA builds (portable SSE2 baseline, AVX2) give the same FWHT bits and the same
    # features up to the vector cos implementation
    rng = np.random.default_rng(11)
    X = rng.standard_normal((5, 100))
    ff = Fastfood(300, random_state=0).fit(X)
    so = StructuredOrthogonalFeatures(300, pair=True, random_state=0).fit(X)
    sm = StructuredOrthogonalFeatures(300, kernel="matern", random_state=0).fit(X)  # the radial path
    V = rng.standard_normal((3, 2**15)).astype(np.float32)
    want = (fwht(V), ff.transform(X), so.transform(X), sm.transform(X))
    try:
        _core.set_isa(isa)
    except ValueError:
        pytest.skip(f"this CPU lacks {isa}")
    try:
        got = (fwht(V), ff.transform(X), so.transform(X), sm.transform(X))
    finally:
        _core.set_isa("auto")
    np.testing.assert_array_equal(got[0], want[0])
    for g, w in zip(got[1:], want[1:]):
        np.testing.assert_allclose(g, w, atol=1e-12)
