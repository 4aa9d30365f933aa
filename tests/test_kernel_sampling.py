"""The Matérn kernel and the sampling schemes of the feature maps: each sampler against its density,
the exact kernel against scikit-learn and an independent oracle, Z Z^T against the exact kernel,
quasi-Monte Carlo against Monte Carlo, determinism, and the values that are refused.

Fixed seeds and stated bounds throughout. The laws tested (unit length scale, then divided by it):

- Matérn(nu) frequencies are a multivariate Student t with 2 nu degrees of freedom, so
  ``|w|^2 l^2 / d`` follows an F(d, 2 nu) law (a chi-square(d) / d over an independent
  chi-square(2 nu) / (2 nu)). The structured maps' frequencies live in the padded dimension p and
  follow F(p, 2 nu) there.
- QMC: each coordinate of a scrambled Sobol' set of n = 2^k points has exactly one point in each
  of the n intervals [i/n, (i+1)/n), so a coordinate mapped through an inverse CDF F^-1 has a
  Kolmogorov-Smirnov distance to F of at most 1/n: a bound that any other law (or scale) misses.
"""
from __future__ import annotations

import numpy as np
import pytest
from scipy import stats
from sklearn.gaussian_process.kernels import Matern

import reference
import structured_reference as ref
from rffkern import (Fastfood, OrthogonalRandomFeatures, RandomFourierFeatures,
                     StructuredOrthogonalFeatures)
from rffkern._sampling import RADIAL_KERNELS, check_nu, draw_map, exact_kernel

STRUCTURED = (OrthogonalRandomFeatures, StructuredOrthogonalFeatures, Fastfood)
# every (kernel, sampling) pair a map accepts
PAIRS = [(k, s) for k in ("gaussian", "laplace", "cauchy", "matern") for s in ("random", "qmc", "orthogonal")
         if s != "orthogonal" or k in RADIAL_KERNELS]


@pytest.fixture(scope="module")
def points():
    # pairwise distances ~1.5 length scales: kernel values spread over (0, 1], and the Matérn
    # kernels of different nu differ by 0.02-0.08 on average
    return np.random.default_rng(2024).normal(scale=0.6, size=(60, 3))


def _mean_error(model, X, K):
    Z = model.fit_transform(X)
    return float(np.abs(Z @ Z.T - K).mean())


# ---- the samplers against their densities ------------------------------------------------------
@pytest.mark.parametrize("nu", [0.5, 1.5, 2.5, 3.7])
def test_matern_frequencies_follow_the_student_t_law(nu):
    """|w|^2 l^2 / d ~ F(d, 2 nu): KS test on 4000 frequencies, and the test rejects nu / 2."""
    d, ls = 3, 2.0
    W = RandomFourierFeatures(4000, kernel="matern", nu=nu, length_scale=ls,
                              random_state=0).fit(np.zeros((1, d))).weights_
    stat = (W**2).sum(0) * ls**2 / d
    assert stats.kstest(stat, stats.f(d, 2 * nu).cdf).pvalue > 1e-3
    assert stats.kstest(stat, stats.f(d, nu).cdf).pvalue < 1e-6  # the test can fail: half the nu


@pytest.mark.parametrize("kernel, law", [("gaussian", stats.norm), ("laplace", stats.cauchy),
                                         ("cauchy", stats.laplace)])
def test_qmc_marginals_follow_the_inverse_cdf_law(kernel, law):
    """Each coordinate of w l, and the phases over 2 pi, are stratified samples of their laws."""
    n, d, ls = 1024, 4, 0.5
    rff = RandomFourierFeatures(n, kernel=kernel, length_scale=ls, sampling="qmc",
                                random_state=3).fit(np.zeros((1, d)))
    for row in rff.weights_ * ls:
        assert stats.kstest(row, law.cdf).statistic <= 1.0 / n + 1e-9
    assert stats.kstest(rff.offsets_ / (2 * np.pi), stats.uniform.cdf).statistic <= 1.0 / n + 1e-9
    # another scale is far outside the bound
    assert stats.kstest(rff.weights_[0] * ls, law(scale=1.2).cdf).statistic > 5.0 / n


def test_qmc_matern_frequencies_follow_the_student_t_law():
    n, d, ls, nu = 1024, 3, 2.0, 1.5
    W = RandomFourierFeatures(n, kernel="matern", nu=nu, length_scale=ls, sampling="qmc",
                              random_state=0).fit(np.zeros((1, d))).weights_
    stat = (W**2).sum(0) * ls**2 / d
    assert stats.kstest(stat, stats.f(d, 2 * nu).cdf).pvalue > 0.05
    assert stats.kstest(stat, stats.f(d, nu).cdf).pvalue < 1e-6


def _structured_frequencies(model, d):
    if isinstance(model, OrthogonalRandomFeatures):
        return model.weights_
    s = model.offsets_.shape[0]
    if isinstance(model, Fastfood):
        return ref.fastfood_weights(d, model.signs_, model.permutation_, model.gaussian_,
                                    model.scaling_, model.length_scale, s)
    return ref.sorf_weights(d, model.diagonals_, model.length_scale, s, radial=model.radial_)


@pytest.mark.parametrize("cls", STRUCTURED)
@pytest.mark.parametrize("nu", [0.5, 2.5])
def test_structured_matern_radii_follow_the_radial_law(cls, nu):
    """d = p = 64 (no padding): |w|^2 l^2 / p ~ F(p, 2 nu) over 32 blocks; nu / 2 is rejected."""
    p, ls = 64, 2.0
    model = cls(32 * p, kernel="matern", nu=nu, length_scale=ls, random_state=1).fit(np.zeros((1, p)))
    stat = (_structured_frequencies(model, p) ** 2).sum(0) * ls**2 / p
    assert stats.kstest(stat, stats.f(p, 2 * nu).cdf).pvalue > 1e-3
    assert stats.kstest(stat, stats.f(p, nu).cdf).pvalue < 1e-6


# ---- the exact kernel --------------------------------------------------------------------------
@pytest.mark.parametrize("nu", [0.5, 1.5, 2.5, 0.3, 0.7, 3.7, 10.0])
def test_exact_matern_kernel_is_scikit_learns(nu):
    rng = np.random.default_rng(5)
    X, Y = rng.normal(size=(30, 4)), rng.normal(size=(20, 4))
    Y[:3] = X[:3]  # distance 0, where K_nu has a pole and the kernel is 1
    ls = 1.7
    K = exact_kernel("matern", X, Y, ls, nu)
    # (scikit-learn evaluates distance 0 at distance eps: 1 - 3e-10 for nu = 0.3)
    np.testing.assert_allclose(K, Matern(length_scale=ls, nu=nu)(X, Y), rtol=1e-10, atol=1e-9)
    np.testing.assert_allclose(K, reference.matern_kernel(X, Y, ls, nu), rtol=1e-10, atol=1e-14)
    assert np.all(K[np.arange(3), np.arange(3)] == 1.0)


def test_exact_matern_kernel_limits():
    """nu = 0.5 is the exponential kernel; a large nu tends to the Gaussian kernel."""
    X = np.random.default_rng(6).normal(size=(25, 3))
    D = np.sqrt(((X[:, None] - X[None]) ** 2).sum(-1))
    np.testing.assert_allclose(exact_kernel("matern", X, X, 1.3, 0.5), np.exp(-D / 1.3), rtol=1e-14)
    gauss = exact_kernel("gaussian", X, X, 1.3)
    assert np.abs(exact_kernel("matern", X, X, 1.3, 200.0) - gauss).max() < 5e-3
    assert np.abs(exact_kernel("matern", X, X, 1.3, 2.5) - gauss).max() > 0.03


# ---- Z Z^T against the exact kernel ------------------------------------------------------------
_BOUND = 0.016  # mean |error| at s = 4096 over 2 seeds; Monte Carlo gives ~0.010, QMC less


@pytest.mark.parametrize("kernel, sampling", PAIRS)
def test_features_converge_to_the_exact_kernel(points, kernel, sampling):
    """Mean |Z Z^T - K| < 0.016 at s = 4096; for the Matérn kernel the same features are >= 3
    times further from the kernel of another nu (a wrong density fails the bound)."""
    K = exact_kernel(kernel, points, points, 1.0, 1.5)
    errors = [_mean_error(RandomFourierFeatures(4096, kernel=kernel, sampling=sampling, random_state=seed,
                                                n_jobs=1), points, K) for seed in (0, 1)]
    assert np.mean(errors) < _BOUND, errors
    if kernel == "matern":
        K_wrong = exact_kernel("matern", points, points, 1.0, 0.5)
        wrong = _mean_error(RandomFourierFeatures(4096, kernel=kernel, sampling=sampling, random_state=0,
                                                  n_jobs=1), points, K_wrong)
        assert wrong > 3 * _BOUND, wrong


@pytest.mark.parametrize("cls", STRUCTURED)
def test_structured_matern_maps_converge_to_the_exact_kernel(points, cls):
    K = exact_kernel("matern", points, points, 1.0, 1.5)
    errors = [_mean_error(cls(4096, kernel="matern", random_state=seed, n_jobs=1), points, K)
              for seed in (0, 1)]
    assert np.mean(errors) < _BOUND, errors
    K_wrong = exact_kernel("matern", points, points, 1.0, 0.5)
    assert _mean_error(cls(4096, kernel="matern", random_state=0, n_jobs=1), points, K_wrong) > 3 * _BOUND


@pytest.mark.parametrize("kernel", ["gaussian", "laplace", "cauchy", "matern"])
def test_qmc_error_is_below_monte_carlo(points, kernel):
    """s = 1024, 4 seeds: measured QMC / MC mean-error ratios 0.15 (gaussian), 0.63 (laplace),
    0.28 (cauchy), 0.41 (matern 1.5); the bound is 0.8."""
    K = exact_kernel(kernel, points, points, 1.0, 1.5)

    def error(sampling):
        return np.mean([_mean_error(RandomFourierFeatures(1024, kernel=kernel, sampling=sampling,
                                                          random_state=seed, n_jobs=1), points, K)
                        for seed in range(4)])

    assert error("qmc") < 0.8 * error("random")


# ---- determinism and shared draws --------------------------------------------------------------
@pytest.mark.parametrize("kernel, sampling", PAIRS)
def test_the_map_is_a_function_of_random_state(kernel, sampling):
    X = np.zeros((2, 5))

    def fit(seed, pair=False):
        return RandomFourierFeatures(64, kernel=kernel, sampling=sampling, pair=pair,
                                     random_state=seed).fit(X)

    a, b, c = fit(7), fit(7), fit(8)
    np.testing.assert_array_equal(a.weights_, b.weights_)
    np.testing.assert_array_equal(a.offsets_, b.offsets_)
    assert not np.array_equal(a.weights_, c.weights_)
    np.testing.assert_array_equal(fit(7, pair=True).weights_, fit(7, pair=True).weights_)


@pytest.mark.parametrize("cls", STRUCTURED)
def test_structured_matern_maps_are_functions_of_random_state(cls):
    X = np.random.default_rng(0).normal(size=(4, 5))
    Z = [cls(40, kernel="matern", nu=nu, random_state=seed).fit_transform(X)
         for seed, nu in ((3, 2.5), (3, 2.5), (4, 2.5), (3, 0.5))]
    np.testing.assert_array_equal(Z[0], Z[1])
    assert not np.allclose(Z[0], Z[2]) and not np.allclose(Z[0], Z[3])


@pytest.mark.parametrize("sampling", ["random", "orthogonal"])
def test_matern_maps_share_the_gaussian_maps_directions_and_phases(sampling):
    """A Matérn map is the Gaussian map of the same random_state with each frequency rescaled,
    and the Gaussian map is what it was before the Matérn kernel existed."""
    X = np.zeros((1, 4))
    g = RandomFourierFeatures(50, sampling=sampling, random_state=2).fit(X)
    m = RandomFourierFeatures(50, kernel="matern", nu=0.7, sampling=sampling, random_state=2).fit(X)
    np.testing.assert_array_equal(g.offsets_, m.offsets_)
    ratio = m.weights_ / g.weights_
    np.testing.assert_allclose(ratio, np.broadcast_to(ratio[0], ratio.shape), rtol=1e-12)
    assert np.all(ratio > 0)


def test_orthogonal_sampling_is_orthogonal_random_features():
    X = np.zeros((1, 6))
    for kernel in RADIAL_KERNELS:
        a = RandomFourierFeatures(40, kernel=kernel, sampling="orthogonal", length_scale=1.5, random_state=9).fit(X)
        b = OrthogonalRandomFeatures(40, kernel=kernel, length_scale=1.5, random_state=9).fit(X)
        np.testing.assert_array_equal(a.weights_, b.weights_)
        np.testing.assert_array_equal(a.offsets_, b.offsets_)


def test_structured_gaussian_maps_draw_no_radius():
    X = np.zeros((1, 5))
    assert StructuredOrthogonalFeatures(16, random_state=0).fit(X).radial_ is None
    g = Fastfood(16, random_state=0).fit(X)
    m = Fastfood(16, kernel="matern", random_state=0).fit(X)
    for name in ("signs_", "permutation_", "gaussian_", "offsets_"):
        np.testing.assert_array_equal(getattr(g, name), getattr(m, name))
    assert not np.array_equal(g.scaling_, m.scaling_)


# ---- refused values ----------------------------------------------------------------------------
BAD_NU = [0, -1, np.nan, np.inf, True, "1.5", None]
ALL_MAPS = (RandomFourierFeatures,) + STRUCTURED


@pytest.mark.parametrize("cls", ALL_MAPS)
@pytest.mark.parametrize("nu", BAD_NU, ids=repr)
def test_bad_nu_is_refused_naming_it(cls, nu):
    with pytest.raises(ValueError, match=r"'nu' parameter .* must be a finite float > 0"):
        cls(8, kernel="matern", nu=nu).fit(np.zeros((2, 3)))


@pytest.mark.parametrize("nu", BAD_NU, ids=repr)
def test_the_samplers_refuse_a_bad_nu(nu):
    with pytest.raises(ValueError, match="nu must be a finite real number > 0"):
        check_nu(nu)
    with pytest.raises(ValueError, match="nu must be"):
        draw_map("matern", 3, 8, 1.0, np.random.default_rng(0), nu=nu)


def test_bad_sampling_values_are_refused_naming_them():
    X = np.zeros((2, 3))
    with pytest.raises(ValueError, match=r"'sampling' parameter .* must be a str among"):
        RandomFourierFeatures(8, sampling="sobol").fit(X)
    for kernel in ("laplace", "cauchy"):
        with pytest.raises(ValueError, match=r"sampling='orthogonal' needs a radial spectral density.*"
                                             + kernel + r".*'random' or 'qmc'"):
            RandomFourierFeatures(8, kernel=kernel, sampling="orthogonal").fit(X)
    for cls in STRUCTURED:
        with pytest.raises(ValueError, match=r"'kernel' parameter .* must be a str among"):
            cls(8, kernel="laplace").fit(X)


def test_qmc_beyond_the_sobol_dimension_is_refused():
    X = np.zeros((2, 21201))
    with pytest.raises(ValueError, match=r"sampling='qmc' draws Sobol' points in at most 21201 dimensions"):
        RandomFourierFeatures(8, sampling="qmc").fit(X)
    # the same map in the pair form, without the phase's coordinate, fits
    assert RandomFourierFeatures(8, kernel="laplace", sampling="qmc", pair=True,
                                 random_state=0).fit(X).weights_.shape == (21201, 4)
