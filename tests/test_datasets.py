"""The synthetic generators of the RFFNet paper (Otto & Izbicki; docs/user_guide/rffnet.rst) against their formulas."""
import numpy as np
import pytest

from rffkern import datasets
from rffkern.datasets import make_gse1, make_gse2, make_hd5, make_jse2, make_jse3, make_se3

GENERATORS = {
    "gse1": (make_gse1, 18),
    "gse2": (make_gse2, 100),
    "jse2": (make_jse2, 10),
    "jse3": (make_jse3, 10),
    "hd5": (make_hd5, 1000),
    "se3": (make_se3, 1000),
}


@pytest.mark.parametrize("name", sorted(GENERATORS))
def test_shapes_support_and_determinism(name):
    make, d = GENERATORS[name]
    X, y, support = make(200, random_state=3)
    assert X.shape == (200, d) and y.shape == (200,)
    assert X.dtype == np.float64 and y.dtype == np.float64
    np.testing.assert_array_equal(support, datasets.SUPPORTS[name])
    X2, y2, _ = make(200, random_state=3)
    np.testing.assert_array_equal(X, X2)
    np.testing.assert_array_equal(y, y2)
    X3, _, _ = make(200, random_state=4)
    assert not np.array_equal(X, X3)
    # The returned support is a copy: mutating it does not change the module's table.
    support[0] = -1
    assert datasets.SUPPORTS[name][0] != -1


def _truth(name, X):
    if name == "gse1":
        return np.sin((X[:, 0] + X[:, 2]) ** 2) * np.sin(X[:, 6] * X[:, 7] * X[:, 8])
    if name == "gse2":
        return np.log((X[:, 10] + X[:, 11] + X[:, 12] + X[:, 13] + X[:, 14]) ** 2)
    if name == "jse2":
        return X[:, 0] ** 3 + X[:, 1] ** 3
    if name == "hd5":
        return np.sin(X[:, 0]) + np.sin(X[:, 1]) + X[:, 2] * X[:, 3] + X[:, 4] ** 2
    if name == "se3":
        raise AssertionError("se3's target depends on latents, not on X: see test_se3_structure")
    return X[:, 0] * X[:, 1]


@pytest.mark.parametrize("name", sorted(set(GENERATORS) - {"se3"}))
def test_noise_free_target_matches_the_formula(name):
    make, _ = GENERATORS[name]
    X, y, _ = make(300, noise=0.0, random_state=0)
    np.testing.assert_allclose(y, _truth(name, X), rtol=0, atol=1e-12)


@pytest.mark.parametrize("name", sorted(set(GENERATORS) - {"se3"}))
def test_noise_is_independent_gaussian_with_the_stated_scale(name):
    make, _ = GENERATORS[name]
    X, y, _ = make(20000 if name != "hd5" else 4000, noise=0.1, random_state=1)
    resid = y - _truth(name, X)
    # std of 20000 N(0, 0.01) draws: 0.1 within ~4 standard errors (0.1/sqrt(2*20000) = 5e-4).
    assert abs(resid.std() - 0.1) < (2.5e-3 if X.shape[0] == 20000 else 6e-3)
    # Independent of the design (the reference code's jse2 noise equals 0.1*x1: corr 1).
    for j in range(min(X.shape[1], 20)):
        assert abs(np.corrcoef(resid, X[:, j])[0, 1]) < 0.06


def test_design_distributions():
    X, _, _ = make_gse1(20000, random_state=2)
    np.testing.assert_allclose(X.mean(0), 0, atol=0.04)
    np.testing.assert_allclose(np.cov(X.T), np.eye(18), atol=0.05)
    X, _, _ = make_jse2(40000, random_state=2)
    idx = np.arange(10)
    np.testing.assert_allclose(np.cov(X.T), 0.5 ** np.abs(idx[:, None] - idx), atol=0.04)


@pytest.mark.parametrize("bad, err", [(dict(n_samples=0), ValueError), (dict(n_samples=2.5), TypeError),
                                      (dict(noise=-1.0), ValueError), (dict(noise=np.nan), ValueError),
                                      (dict(random_state="x"), TypeError)])
def test_bad_arguments(bad, err):
    kw = dict(n_samples=10)
    kw.update(bad)
    with pytest.raises(err):
        make_jse3(**kw)


def test_se3_structure():
    # five noisy copies (sd 0.1) of each latent; only the first two latents drive y
    X, y, support = make_se3(4000, noise=0.0, random_state=0)
    np.testing.assert_array_equal(support, np.arange(10))
    groups = X.reshape(4000, 200, 5)
    latent = groups.mean(axis=2)
    np.testing.assert_allclose((groups - latent[:, :, None]).std(), 0.1 * np.sqrt(4 / 5), rtol=0.02)
    r2 = latent[:, 0] ** 2 + latent[:, 1] ** 2
    # y from the group means equals the formula up to the copies' noise
    assert np.corrcoef(y, 10 * r2 * np.exp(-2 * r2))[0, 1] > 0.97
    assert abs(np.corrcoef(y, X[:, 10])[0, 1]) < 0.06
