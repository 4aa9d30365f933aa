"""The uncertainty of every regressor whose predictions are a ridge on features (RFFRidge; the ridge
of EERF, the closing ridges of SRFF and RFFNet, and rffkern.fit's model): predictive std against a
direct NumPy Bayesian linear regression on the model's own features, the evidence against a
direct Gaussian density, conformal intervals (coverage over many seeds, refusals), Dask, MAPIE."""
import numpy as np
import pytest
from scipy.stats import multivariate_normal

import rffkern
from rffkern import EERFRegressor, RFFNetRegressor, RFFRidge, RFFRidgeClassifier, SRFFRegressor

pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")


def _data(n=300, seed=0, noise=0.3, d=3, scale=1.0, shift=0.0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-2, 2, (n, d)) * np.array([1.0, 100.0, 0.01])[:d]
    f = np.sin(2 * X[:, 0]) + 0.005 * X[:, 1]
    return X, scale * (f + noise * rng.standard_normal(n)) + shift


def _bayes(Z, y, alpha, Z_new, intercept=True):
    """Mean and predictive std of ``y = b + (z - mean z) c + e`` in NumPy: flat prior on b,
    ``c ~ N(0, s2 / alpha I)``, ``s2 = RSS / (n - dof - 1)``; without ``intercept``, of
    ``y - mean y = z c + e`` with ``s2 = RSS / (n - dof)`` (the adaptive sampler's amplitudes)."""
    n = len(Z)
    mu, ybar = (Z.mean(0), y.mean()) if intercept else (np.zeros(Z.shape[1]), y.mean())
    Zc = Z - mu
    A = Zc.T @ Zc + alpha * np.eye(Z.shape[1])
    c = np.linalg.solve(A, Zc.T @ (y - ybar))
    dof = np.trace(np.linalg.solve(A, Zc.T @ Zc))
    s2 = np.sum((y - ybar - Zc @ c) ** 2) / (n - dof - intercept)
    D = Z_new - mu
    latent = np.einsum("ij,ij->i", D, np.linalg.solve(A, D.T).T) + intercept / n
    return ybar + D @ c, np.sqrt(s2 * (1 + latent))


QUICK = {
    "eerf": lambda: EERFRegressor(n_components=40, random_state=0),
    "srff": lambda: SRFFRegressor(n_components=20, alpha=0.03, max_iter=5, refit_components=60, random_state=0),
    "rffnet": lambda: RFFNetRegressor(n_components=30, max_iter=5, refit_components=60, random_state=0),
    "ridge": lambda: RFFRidge(60, random_state=0),
    "adaptive": lambda: rffkern.AdaptiveRFFRegressor(n_components=16, n_iter=20, random_state=0),
}


@pytest.mark.parametrize("name", sorted(QUICK))
def test_std_equals_numpy_bayesian_linear_model(name):
    X, y = _data(scale=1e4, shift=5e5)  # raw units: the targets' scaling must cancel
    model = QUICK[name]().fit(X, y)
    X_new = _data(n=7, seed=1)[0]
    mean, std = model.predict(X_new, return_std=True)
    alpha = model.refit_alpha_ if name in ("srff", "rffnet") else model.alpha_ * (len(y) if name == "adaptive" else 1)
    ref_mean, ref_std = _bayes(model._features(X).astype(np.float64), y, alpha,
                               model._features(X_new).astype(np.float64), intercept=name != "adaptive")
    np.testing.assert_allclose(mean, model.predict(X_new), rtol=0, atol=1e-9 * 1e4)
    np.testing.assert_allclose(mean, ref_mean, rtol=1e-6)
    np.testing.assert_allclose(std, ref_std, rtol=1e-6)
    # return_cov's diagonal is the variance; function draws average to the mean
    _, cov = model.predict(X_new, return_cov=True)
    np.testing.assert_allclose(np.sqrt(np.diag(cov)), std, rtol=1e-10)
    draws = model.sample_y(X_new, 4000, random_state=0)
    latent_sd = np.sqrt(std**2 - model.noise_variance_)
    assert np.all(np.abs(draws.mean(1) - mean) < 5 * latent_sd / np.sqrt(4000))


def _direct_evidence(Z, y, alpha):
    """log p(y) with the intercept integrated out (flat prior: the n - 1 contrasts of y orthogonal
    to the ones vector) and c ~ N(0, s2 / alpha I), at the s2 that maximizes it."""
    n = len(y)
    H = np.linalg.qr(np.column_stack([np.ones(n), np.eye(n)[:, : n - 1]]))[0][:, 1:].T  # (n-1, n) contrasts
    yh, Zh = H @ y, H @ Z
    K = np.eye(n - 1) + Zh @ Zh.T / alpha
    s2 = yh @ np.linalg.solve(K, yh) / (n - 1)
    return multivariate_normal(np.zeros(n - 1), s2 * K).logpdf(yh)


def test_log_marginal_likelihood_equals_direct_density():
    X, y = _data(n=120, scale=50.0, shift=7.0)
    model = RFFRidge(30, random_state=0).fit(X, y)
    Z = model._features(X).astype(np.float64)
    assert model.log_marginal_likelihood() == pytest.approx(_direct_evidence(Z, y, model.alpha_), rel=1e-8)


def test_evidence_selection_picks_the_largest_evidence():
    X, y = _data(n=200)
    alphas = [1e-4, 1e-2, 1.0, 30.0]
    chosen = RFFRidge(50, alpha=alphas, alpha_selection="evidence", length_scale=1.0, random_state=0).fit(X, y)
    evidence = [RFFRidge(50, alpha=a, length_scale=1.0, random_state=0).fit(X, y).log_marginal_likelihood()
                for a in alphas]
    assert chosen.alpha_ == alphas[int(np.argmax(evidence))]
    # its selection errors are the negative log evidence per row (the rows less one), y's units
    np.testing.assert_allclose(chosen.selection_errors_, -np.array(evidence) / (len(y) - 1), rtol=1e-8)
    # partial_fit searches by it too
    part = RFFRidge(50, alpha=alphas, alpha_selection="evidence", length_scale=1.0, random_state=0)
    assert part.partial_fit(X, y).alpha_ == chosen.alpha_


def test_interval_coverage_over_seeds():
    """Known noise, 20 seeds x 1000 test rows: the mean coverage of 90% intervals within about four
    standard errors (calibration and test noise) of 0.9, for both conformity scores."""
    hits = {"normalized": [], "jackknife": []}
    for seed in range(20):
        X, y = _data(n=500, seed=seed)
        X_test, y_test = _data(n=1000, seed=100 + seed)
        model = RFFRidge(60, random_state=seed).fit(X, y)
        for method in hits:
            lo, hi = model.predict_interval(X_test, coverage=0.9, method=method).T
            hits[method].append(np.mean((y_test >= lo) & (y_test <= hi)))
    for method, h in hits.items():
        assert abs(np.mean(h) - 0.9) < 0.012, (method, np.mean(h))


def test_interval_shapes_dask_and_multi_output():
    da = pytest.importorskip("dask.array")
    X, y = _data(n=300)
    Y = np.column_stack([y, 10 * y])
    model = RFFRidge(40, random_state=0).fit(X, Y)
    bounds = model.predict_interval(X[:5], coverage=0.8)
    assert bounds.shape == (5, 2, 2)
    np.testing.assert_allclose(bounds[:, 1] - model.predict(X[:5])[:, 1, None],
                               10 * (bounds[:, 0] - model.predict(X[:5])[:, 0, None]), rtol=1e-6)
    lazy = model.predict_interval(da.from_array(X, chunks=100), coverage=0.8)
    assert isinstance(lazy, da.Array)
    np.testing.assert_allclose(lazy.compute(), model.predict_interval(X, coverage=0.8))
    # a model fitted on Dask rows: the in-memory fit's std and intervals (its scores from the same
    # rows), the std lazy; weighted too
    w = np.random.default_rng(1).uniform(0, 2, len(y))
    w[::7] = 0
    for weights in (None, w):
        dask_w = None if weights is None else da.from_array(weights, chunks=100)
        fitted = RFFRidge(40, random_state=0).fit(da.from_array(X, chunks=100), da.from_array(y, chunks=100),
                                                  sample_weight=dask_w)
        memory = RFFRidge(40, random_state=0).fit(X, y, sample_weight=weights)
        np.testing.assert_allclose(fitted.predict_interval(X[:5]), memory.predict_interval(X[:5]), rtol=1e-8)
        mean, std = fitted.predict(da.from_array(X, chunks=100), return_std=True)
        assert isinstance(std, da.Array)
        np.testing.assert_allclose(std.compute(), memory.predict(X, return_std=True)[1], rtol=1e-8)


def test_rffkern_fit_model_has_intervals():
    X, y = _data(n=400)
    model = rffkern.fit(X, y, random_state=0, max_iter=5)
    lo, hi = model.predict_interval(X[:10]).T
    mean, std = model.predict(X[:10], return_std=True)
    assert np.all(lo < mean) and np.all(mean < hi) and np.all(std > 0)


def test_partial_fit_updates_the_posterior_and_scores():
    X, y = _data(n=400)
    model = RFFRidge(40, random_state=0, length_scale=1.0)
    model.partial_fit(X[:200], y[:200])
    first = model.predict(X[:3], return_std=True)[1]
    model.partial_fit(X[200:], y[200:])
    full = RFFRidge(40, random_state=0, length_scale=1.0, alpha=model.alpha_)
    full.partial_fit(X[:200], y[:200]).partial_fit(X[200:], y[200:])
    np.testing.assert_allclose(model.predict(X[:3], return_std=True)[1], full.predict(X[:3], return_std=True)[1])
    assert not np.allclose(first, model.predict(X[:3], return_std=True)[1])
    assert model.predict_interval(X[:3]).shape == (3, 2)


@pytest.mark.parametrize("coverage, error, match", [
    (0.0, ValueError, r"coverage must be in \(0, 1\)"), (1.0, ValueError, r"coverage must be in \(0, 1\)"),
    (1.5, ValueError, "coverage"), ("0.9", TypeError, "coverage"), (True, TypeError, "coverage"),
    (0.99, ValueError, "needs at least 99 rows"),
])
def test_interval_refusals(coverage, error, match):
    X, y = _data(n=40)
    model = RFFRidge(20, random_state=0).fit(X, y)
    with pytest.raises(error, match=match):
        model.predict_interval(X[:2], coverage=coverage)


def test_refusals_name_the_problem():
    X, y = _data(n=100)
    with pytest.raises(ValueError, match="method must be one of"):
        RFFRidge(20, random_state=0).fit(X, y).predict_interval(X[:2], method="plus")
    with pytest.raises(ValueError, match="closing ridge"):
        RFFNetRegressor(n_components=10, max_iter=2, refit_coef=False, random_state=0).fit(X, y).predict(
            X[:2], return_std=True)
    with pytest.raises(ValueError, match="closing ridge"):
        SRFFRegressor(n_components=10, alpha=0.03, max_iter=2, refit_components=None,
                      random_state=0).fit(X, y).predict_interval(X[:2])
    classifier = RFFRidgeClassifier(20, random_state=0).fit(X, y > 0)
    with pytest.raises(TypeError, match="return_std"):
        classifier.predict(X[:2], return_std=True)


def test_inside_mapie():
    """MAPIE's split-conformal and cross-conformal regressors take the estimators as they are."""
    regression = pytest.importorskip("mapie.regression")
    X, y = _data(n=600)
    X_test, y_test = _data(n=400, seed=5)
    split = regression.SplitConformalRegressor(RFFRidge(60, random_state=0), confidence_level=0.9, prefit=False)
    split.fit(X[:400], y[:400]).conformalize(X[400:], y[400:])
    _, bounds = split.predict_interval(X_test)
    assert 0.8 < np.mean((y_test >= bounds[:, 0, 0]) & (y_test <= bounds[:, 1, 0])) < 0.97
    cross = regression.CrossConformalRegressor(EERFRegressor(n_components=30, random_state=0), confidence_level=0.9,
                                               cv=3, method="plus")
    _, bounds = cross.fit_conformalize(X, y).predict_interval(X_test)
    assert 0.8 < np.mean((y_test >= bounds[:, 0, 0]) & (y_test <= bounds[:, 1, 0])) < 0.99


def _classes(n, seed):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-2, 2, (n, 3))
    codes = np.digitize(np.sin(2 * X[:, 0]) + X[:, 1] + 0.7 * rng.standard_normal(n), [-1, 0, 1])
    return X, np.array(["low", "mid", "high", "top"])[codes]


@pytest.mark.parametrize("cls, kwargs", [
    (RFFRidgeClassifier, {"n_components": 60}),
    (rffkern.EERFClassifier, {"n_components": 40}),
    (rffkern.AdaptiveRFFClassifier, {"n_components": 16, "n_iter": 20}),
])
def test_prediction_sets_cover(cls, kwargs):
    """Over 6 seeds x 1000 test rows the sets hold the true class about 90% of the time (at least
    nominal up to noise; conformal sets over-cover a little with discrete scores), and a higher
    coverage gives sets at least as large."""
    hits, sizes = [], []
    for seed in range(6):
        X, y = _classes(600, seed)
        X_test, y_test = _classes(1000, 50 + seed)
        model = cls(random_state=seed, **kwargs).fit(X, y)
        sets = model.predict_set(X_test, coverage=0.9)
        assert sets.shape == (1000, 4) and sets.dtype == bool
        hits.append(sets[np.arange(1000), np.searchsorted(model.classes_, y_test)].mean())
        sizes.append(sets.sum(1).mean())
        assert np.all(model.predict_set(X_test, coverage=0.97).sum(1) >= sets.sum(1))
    assert 0.885 < np.mean(hits) < 0.94, hits
    assert 1.0 < np.mean(sizes) < 4.0


def test_prediction_set_dask_and_refusals():
    da = pytest.importorskip("dask.array")
    X, y = _classes(300, 0)
    model = RFFRidgeClassifier(40, random_state=0).fit(X, y)
    lazy = model.predict_set(da.from_array(X, chunks=100))
    np.testing.assert_array_equal(lazy.compute(), model.predict_set(X))
    with pytest.raises(ValueError, match=r"coverage must be in \(0, 1\)"):
        model.predict_set(X[:2], coverage=1.2)
    with pytest.raises(ValueError, match="needs at least"):
        RFFRidgeClassifier(20, random_state=0).fit(X[:30], y[:30]).predict_set(X[:2], coverage=0.99)


def test_pickle_keeps_the_uncertainty_not_the_cache():
    import pickle

    X, y = _data(n=200)
    model = RFFRidge(40, random_state=0).fit(X, y)
    bounds, std = model.predict_interval(X[:4]), model.predict(X[:4], return_std=True)[1]
    restored = pickle.loads(pickle.dumps(model))
    assert "_posterior_cache" not in restored.__dict__  # (an s x s factor, recomputed on use)
    np.testing.assert_array_equal(restored.predict_interval(X[:4]), bounds)
    np.testing.assert_array_equal(restored.predict(X[:4], return_std=True)[1], std)
