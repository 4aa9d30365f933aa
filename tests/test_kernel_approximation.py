"""Statistical test: RandomFourierFeatures approximates the exact kernel, error ~ 1/sqrt(s).

For each kernel (gaussian, laplace, cauchy) and each form (phase cos(Wx + b), pair [cos, sin]),
Z Z^T is compared with ``rffkern._sampling.exact_kernel`` on 80 points in 3-D (pairwise
distances spread the kernel values over (0, 1]).  Errors are averaged over 4 fixed seeds.

Stated bounds (each entry of Z Z^T is a mean of s i.i.d. terms of variance <= 1, so its error
has standard deviation <= 1/sqrt(s)):
- mean |error| ratio between s and 16 s: in [2.5, 6] (the theory says 4), for s = 64 and 256;
- max |error| ratio between s and 16 s: in [2, 8];
- at s = 4096 frequencies: mean |error| < 0.015 and max |error| < 0.08 (1/sqrt(4096) = 0.0156);
- pair form: the diagonal of Z Z^T is exactly 1 (cos^2 + sin^2), and the pair form's mean error
  is not larger than the phase form's at the same number of frequencies (it has lower variance).
"""
from __future__ import annotations

import numpy as np
import pytest

from rffkern import RandomFourierFeatures
from rffkern._sampling import KERNELS, exact_kernel

SEEDS = (0, 1, 2, 3)
SIZES = (64, 256, 1024, 4096)  # numbers of frequencies


@pytest.fixture(scope="module")
def points():
    rng = np.random.default_rng(2024)
    return rng.normal(scale=0.6, size=(80, 3))


def _errors(X, kernel, length_scale, n_freq, pair, dtype=np.float64):
    K = exact_kernel(kernel, X, X, length_scale)
    means, maxes = [], []
    for seed in SEEDS:
        rff = RandomFourierFeatures(2 * n_freq if pair else n_freq, kernel=kernel,
                                    length_scale=length_scale, pair=pair, random_state=seed, n_jobs=2)
        Z = rff.fit_transform(X.astype(dtype)).astype(np.float64)
        E = np.abs(Z @ Z.T - K)
        means.append(E.mean())
        maxes.append(E.max())
    return float(np.mean(means)), float(np.mean(maxes))


@pytest.fixture(scope="module")
def error_table(points):
    """(kernel, pair, length_scale) -> {s: (mean error, max error)}"""
    table = {}
    for kernel in KERNELS:
        for pair in (False, True):
            for ls in (1.0, 0.7):
                table[kernel, pair, ls] = {s: _errors(points, kernel, ls, s, pair) for s in SIZES}
    return table


def test_exact_kernel_values(points):
    X = points[:5]
    D = X[:, None, :] - X[None, :, :]
    np.testing.assert_allclose(exact_kernel("gaussian", X, X, 2.0), np.exp(-(D**2).sum(-1) / 8), rtol=1e-14)
    np.testing.assert_allclose(exact_kernel("laplace", X, X, 2.0), np.exp(-np.abs(D).sum(-1) / 2), rtol=1e-14)
    np.testing.assert_allclose(exact_kernel("cauchy", X, X, 2.0), np.prod(1 / (1 + D**2 / 4), -1), rtol=1e-14)


@pytest.mark.parametrize("ls", [1.0, 0.7])
@pytest.mark.parametrize("pair", [False, True], ids=["phase", "pair"])
@pytest.mark.parametrize("kernel", KERNELS)
def test_error_shrinks_like_one_over_sqrt_s(error_table, kernel, pair, ls):
    errs = error_table[kernel, pair, ls]
    for s in (64, 256):
        mean_ratio = errs[s][0] / errs[16 * s][0]
        max_ratio = errs[s][1] / errs[16 * s][1]
        assert 2.5 <= mean_ratio <= 6.0, f"{kernel} pair={pair}: mean error ratio s={s} vs {16 * s}: {mean_ratio:.2f} {errs}"
        assert 2.0 <= max_ratio <= 8.0, f"{kernel} pair={pair}: max error ratio s={s} vs {16 * s}: {max_ratio:.2f} {errs}"
    # monotone in s
    means = [errs[s][0] for s in SIZES]
    assert all(a > b for a, b in zip(means, means[1:])), means
    mean4096, max4096 = errs[4096]
    assert mean4096 < 0.015, f"{kernel} pair={pair}: mean error at s=4096 is {mean4096:.4f}"
    assert max4096 < 0.08, f"{kernel} pair={pair}: max error at s=4096 is {max4096:.4f}"


@pytest.mark.parametrize("kernel", KERNELS)
def test_pair_form_has_lower_error(error_table, kernel):
    for s in SIZES:
        assert error_table[kernel, True, 1.0][s][0] <= 1.05 * error_table[kernel, False, 1.0][s][0]


@pytest.mark.parametrize("kernel", KERNELS)
def test_pair_form_diagonal_is_one(points, kernel):
    Z = RandomFourierFeatures(200, kernel=kernel, pair=True, random_state=0).fit_transform(points)
    np.testing.assert_allclose(np.einsum("ij,ij->i", Z, Z), 1.0, rtol=0, atol=1e-12)


@pytest.mark.parametrize("kernel", KERNELS)
def test_wrong_length_scale_is_detected(points, kernel):
    """The test can fail: frequencies drawn for another length-scale miss the exact kernel."""
    K = exact_kernel(kernel, points, points, 1.0)
    Z = RandomFourierFeatures(4096, kernel=kernel, length_scale=2.0, random_state=0).fit_transform(points)
    assert np.abs(Z @ Z.T - K).mean() > 0.05


def test_float32_approximates_as_well(points):
    """float32 features carry rounding ~1e-6, far below the Monte-Carlo error."""
    m64, _ = _errors(points, "gaussian", 1.0, 1024, False, np.float64)
    m32, _ = _errors(points, "gaussian", 1.0, 1024, False, np.float32)
    assert abs(m32 - m64) < 1e-3 * m64 + 1e-5
