"""RandomFourierFeatures: scikit-learn conventions and its defining formula."""
from __future__ import annotations

import pickle

import numpy as np
import pytest
from scipy import stats
from sklearn.base import clone
from sklearn.kernel_approximation import RBFSampler
from sklearn.linear_model import Ridge
from sklearn.pipeline import make_pipeline
from sklearn.utils.estimator_checks import parametrize_with_checks

from rffkern import RandomFourierFeatures
from rffkern._sampling import KERNELS


# These sklearn checks set ``n_components = 1`` on the estimator before fitting; with pair=True
# an odd n_components is refused by design (each frequency gives a cos and a sin), so they cannot
# pass for the pair form.  They all pass for the phase form (the other two instances).
_PAIR_N_COMPONENTS_1 = "sets n_components=1, which pair=True refuses (needs an even count)"
PAIR_EXPECTED_FAILURES = {name: _PAIR_N_COMPONENTS_1 for name in (
    "check_dont_overwrite_parameters", "check_methods_sample_order_invariance",
    "check_methods_subset_invariance", "check_fit2d_1sample", "check_fit2d_1feature",
    "check_fit2d_predict1d")}


def _expected_failed_checks(estimator):
    return PAIR_EXPECTED_FAILURES if estimator.pair else {}


@parametrize_with_checks([
    RandomFourierFeatures(n_components=20, random_state=0),
    RandomFourierFeatures(n_components=20, kernel="laplace", pair=True, random_state=0, n_jobs=1),
    RandomFourierFeatures(n_components=20, kernel="cauchy", length_scale=0.5, random_state=0, n_jobs=2),
    RandomFourierFeatures(n_components=20, kernel="matern", nu=2.5, sampling="qmc", random_state=0),
], expected_failed_checks=_expected_failed_checks)
def test_sklearn_compatible(estimator, check):
    check(estimator)


def _X(dtype=np.float64, n=57, d=5, seed=0):
    return np.random.default_rng(seed).normal(size=(n, d)).astype(dtype)


@pytest.mark.parametrize("kernel", KERNELS)
@pytest.mark.parametrize("dtype", [np.float64, np.float32], ids=["f64", "f32"])
@pytest.mark.parametrize("n_components", [1, 7, 64, 301])
def test_transform_is_the_documented_formula(kernel, dtype, n_components):
    X = _X(dtype)
    rff = RandomFourierFeatures(n_components, kernel=kernel, length_scale=1.3, random_state=1).fit(X)
    assert rff.weights_.shape == (5, n_components) and rff.offsets_.shape == (n_components,)
    assert rff.weights_.dtype == dtype and rff.offsets_.dtype == dtype
    assert rff.n_features_in_ == 5
    Z = rff.transform(X)
    assert Z.dtype == dtype and Z.shape == (57, n_components)
    W, b = rff.weights_.astype(np.float64), rff.offsets_.astype(np.float64)
    expected = np.sqrt(2.0 / n_components) * np.cos(X.astype(np.float64) @ W + b)
    tol = 1e-12 if dtype == np.float64 else 2e-5 * np.sqrt(2.0 / n_components) * (1 + np.abs(X) @ np.abs(W)).max()
    np.testing.assert_allclose(Z, expected, rtol=0, atol=tol)
    assert np.all((rff.offsets_ >= 0) & (rff.offsets_ < 2 * np.pi + 1e-6))


@pytest.mark.parametrize("dtype", [np.float64, np.float32], ids=["f64", "f32"])
def test_pair_transform(dtype):
    """pair=True: n_components/2 frequencies, [cos, sin] with scale sqrt(2/n_components), no phase."""
    X = _X(dtype)
    rff = RandomFourierFeatures(10, pair=True, random_state=0).fit(X)
    assert rff.weights_.shape == (5, 5)
    assert not rff.offsets_.any()
    U = X.astype(np.float64) @ rff.weights_.astype(np.float64)
    expected = np.sqrt(2.0 / 10) * np.hstack([np.cos(U), np.sin(U)])
    Z = rff.transform(X)
    assert Z.dtype == dtype and Z.shape == (57, 10)
    np.testing.assert_allclose(Z, expected, rtol=0, atol=1e-12 if dtype == np.float64 else 1e-5)


@pytest.mark.parametrize("n_components", [1, 3, 101])
def test_pair_with_odd_n_components_is_refused(n_components):
    with pytest.raises(ValueError, match=r"n_components must be even with pair=True"):
        RandomFourierFeatures(n_components, pair=True).fit(_X())


def test_length_scale_divides_the_frequencies():
    X = _X()
    a = RandomFourierFeatures(30, kernel="gaussian", length_scale=1.0, random_state=5).fit(X)
    b = RandomFourierFeatures(30, kernel="gaussian", length_scale=4.0, random_state=5).fit(X)
    np.testing.assert_allclose(b.weights_, a.weights_ / 4.0, rtol=1e-15)
    np.testing.assert_array_equal(a.offsets_, b.offsets_)


@pytest.mark.parametrize("kernel", KERNELS)
def test_frequency_distributions(kernel):
    """The sampled frequencies follow the documented spectral densities (length_scale 2):
    gaussian N(0, 1/4), laplace Cauchy(0, 1/2) (median |w| = 1/2), cauchy Laplace(0, 1/2)
    (mean |w| = 1/2), matern (nu = 1.5) a Student t with 3 degrees of freedom over 2 per
    coordinate (median |w| = t_3's 75% quantile / 2 = 0.382; the coordinates of one frequency
    share its radius, so only the first is used).  Fixed seed; 60 000 draws (20 000 for matern),
    bounds of ~5 standard errors."""
    W = RandomFourierFeatures(20000, kernel=kernel, length_scale=2.0, random_state=0).fit(_X(n=3, d=3)).weights_
    w = W.ravel()
    if kernel == "gaussian":
        assert abs(w.std() - 0.5) < 0.01 and abs(w.mean()) < 0.01
    elif kernel == "laplace":
        assert abs(np.median(np.abs(w)) - 0.5) < 0.015
    elif kernel == "matern":
        assert abs(np.median(np.abs(W[0])) - stats.t(3).ppf(0.75) / 2) < 0.015
    else:
        assert abs(np.abs(w).mean() - 0.5) < 0.01 and abs(w.std() - np.sqrt(2) * 0.5) < 0.02


def test_dtype_follows_transform_input():
    X = _X()
    rff = RandomFourierFeatures(16, random_state=0).fit(X)
    Z32 = rff.transform(X.astype(np.float32))
    assert Z32.dtype == np.float32
    np.testing.assert_allclose(Z32, rff.transform(X), atol=2e-5)
    rff32 = RandomFourierFeatures(16, random_state=0).fit(X.astype(np.float32))
    assert rff32.transform(X).dtype == np.float64
    np.testing.assert_array_equal(rff32.weights_, rff.weights_.astype(np.float32))


def test_fit_does_not_use_the_values_of_X():
    a = RandomFourierFeatures(12, random_state=3).fit(_X(seed=0))
    b = RandomFourierFeatures(12, random_state=3).fit(_X(seed=1) * 100)
    np.testing.assert_array_equal(a.weights_, b.weights_)
    np.testing.assert_array_equal(a.offsets_, b.offsets_)


def test_random_state_none_gives_different_maps():
    X = _X()
    a = RandomFourierFeatures(12).fit(X).weights_
    b = RandomFourierFeatures(12).fit(X).weights_
    assert not np.array_equal(a, b)


def test_legacy_random_state_is_accepted_and_reproducible():
    X = _X()
    a = RandomFourierFeatures(12, random_state=np.random.RandomState(4)).fit_transform(X)
    b = RandomFourierFeatures(12, random_state=np.random.RandomState(4)).fit_transform(X)
    np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("pair", [False, True], ids=["phase", "pair"])
def test_pickle_round_trip(pair):
    X = _X()
    rff = RandomFourierFeatures(18, kernel="laplace", pair=pair, random_state=2).fit(X)
    clone_ = pickle.loads(pickle.dumps(rff))
    assert clone_.get_params() == rff.get_params()
    np.testing.assert_array_equal(clone_.weights_, rff.weights_)
    np.testing.assert_array_equal(clone_.transform(X), rff.transform(X))


def test_clone_and_params():
    rff = RandomFourierFeatures(34, kernel="cauchy", length_scale=0.3, pair=True, random_state=9, n_jobs=1)
    c = clone(rff)
    assert c.get_params() == rff.get_params()
    assert not hasattr(c, "weights_")
    assert set(rff.get_params()) == {"n_components", "kernel", "length_scale", "nu", "sampling", "pair",
                                     "random_state", "n_jobs"}
    c.set_params(n_components=8, pair=False)
    assert c.n_components == 8 and rff.n_components == 34
    with pytest.raises(TypeError):
        RandomFourierFeatures(10, "gaussian")  # parameters after n_components are keyword-only
    fitted = rff.fit(_X())
    np.testing.assert_array_equal(clone(fitted).fit(_X()).weights_, fitted.weights_)


def test_get_feature_names_out():
    rff = RandomFourierFeatures(4, random_state=0).fit(_X())
    names = rff.get_feature_names_out()
    assert list(names) == [f"randomfourierfeatures{i}" for i in range(4)]
    pr = RandomFourierFeatures(6, pair=True, random_state=0).fit(_X())
    assert len(pr.get_feature_names_out()) == 6


def test_not_fitted():
    from sklearn.exceptions import NotFittedError

    with pytest.raises(NotFittedError):
        RandomFourierFeatures(4).transform(_X())


def test_comparable_to_rbfsampler():
    """Same kernel as sklearn's RBFSampler(gamma) for length_scale = 1/sqrt(2 gamma): the kernel
    ridge fit on the features reaches a similar accuracy."""
    rng = np.random.default_rng(0)
    X = rng.uniform(-2, 2, (600, 2))
    y = np.sin(2 * X[:, 0]) * np.cos(X[:, 1])
    gamma = 0.5
    ours = make_pipeline(RandomFourierFeatures(400, length_scale=1 / np.sqrt(2 * gamma), random_state=0),
                         Ridge(alpha=1e-3)).fit(X[:400], y[:400])
    theirs = make_pipeline(RBFSampler(gamma=gamma, n_components=400, random_state=0),
                           Ridge(alpha=1e-3)).fit(X[:400], y[:400])
    err_ours = np.mean((ours.predict(X[400:]) - y[400:]) ** 2)
    err_theirs = np.mean((theirs.predict(X[400:]) - y[400:]) ** 2)
    assert err_ours < 0.01 and err_ours < 3 * err_theirs + 1e-3
