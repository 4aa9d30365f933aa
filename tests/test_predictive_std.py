"""RFFRidge's predictive uncertainty (``predict(X, return_std=True / return_cov=True)``) against a
direct NumPy Bayesian linear regression on the same features, its coverage on data of known
noise, and its refusals."""
import numpy as np
import pytest

from rffkern import RFFRidge, RFFRidgeClassifier


def _data(n=300, seed=0, noise=0.3, outputs=1):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-2, 2, (n, 2))
    F = np.column_stack([np.sin(2 * X[:, 0] + k) + 0.5 * X[:, 1] for k in range(outputs)])
    Y = F + noise * rng.standard_normal(F.shape)
    return X, (Y[:, 0] if outputs == 1 else Y)


def _numpy_posterior(model, X, y, X_new, w=None):
    """Mean and predictive std of the Bayesian linear model on the model's own features, in NumPy:
    a flat prior on the intercept, N(0, s2 / alpha I) on the coefficients, s2 = RSS / (n - dof - 1)."""
    features = lambda A: model._map().features(model._standardized(A)).astype(np.float64)  # noqa: E731
    Z, Zn = features(X), features(X_new)
    w = np.ones(len(Z)) if w is None else w / w.mean()
    Y = np.asarray(y, np.float64).reshape(len(Z), -1)
    mean_y, scale_y = model._target_scaler.mean_, model._target_scaler.scale_
    Ys = (Y - mean_y) / scale_y
    n = w.sum()
    mu, ybar = w @ Z / n, w @ Ys / n
    Zc, Yc = Z - mu, Ys - ybar
    A = Zc.T @ (w[:, None] * Zc) + model.alpha_ * np.eye(Z.shape[1])
    C = np.linalg.solve(A, Zc.T @ (w[:, None] * Yc))
    R = Yc - Zc @ C
    dof = np.trace(np.linalg.solve(A, Zc.T @ (w[:, None] * Zc)))
    s2 = (w @ R**2) / (n - dof - 1) * scale_y**2
    D = Zn - mu
    latent = np.einsum("ij,ij->i", D, np.linalg.solve(A, D.T).T) + 1.0 / n
    mean = (ybar + D @ C) * scale_y + mean_y
    return mean, np.sqrt(s2[None, :] * (1.0 + latent)[:, None])


@pytest.mark.parametrize("outputs", [1, 3])
@pytest.mark.parametrize("weighted", [False, True])
def test_std_equals_a_numpy_bayesian_linear_regression(outputs, weighted):
    X, y = _data(outputs=outputs)
    w = np.random.default_rng(1).uniform(0.2, 2.0, len(X)) if weighted else None
    model = RFFRidge(80, random_state=0).fit(X, y, sample_weight=w)
    X_new = np.random.default_rng(2).uniform(-3, 3, (40, 2))
    mean, std = model.predict(X_new, return_std=True)
    ref_mean, ref_std = _numpy_posterior(model, X, y, X_new, w)
    shape = (40,) if outputs == 1 else (40, outputs)
    assert mean.shape == std.shape == shape
    np.testing.assert_allclose(mean, ref_mean.reshape(shape), rtol=1e-8, atol=1e-10)  # the posterior mean is predict
    np.testing.assert_allclose(std, ref_std.reshape(shape), rtol=1e-8)
    np.testing.assert_array_equal(mean, model.predict(X_new))


def test_cov_diagonal_is_the_variance_and_it_is_symmetric():
    X, y = _data()
    model = RFFRidge(60, random_state=0).fit(X, y)
    X_new = np.random.default_rng(3).uniform(-2, 2, (25, 2))
    _, std = model.predict(X_new, return_std=True)
    mean, cov = model.predict(X_new, return_cov=True)
    assert cov.shape == (25, 25)
    np.testing.assert_allclose(np.diag(cov), std**2, rtol=1e-10)
    np.testing.assert_allclose(cov, cov.T, rtol=0, atol=1e-12)
    assert np.linalg.eigvalsh(cov).min() > 0
    _, cov3 = RFFRidge(60, random_state=0).fit(X, np.column_stack([y, 2 * y])).predict(X_new, return_cov=True)
    assert cov3.shape == (25, 25, 2)
    np.testing.assert_allclose(cov3[:, :, 1], 4 * cov3[:, :, 0], rtol=1e-8)


def test_coverage_of_known_noise_over_seeds():
    """The share of fresh rows with |y - mean| <= 1.645 std, over 20 seeds of 400 training rows and
    2000 test rows of noise sd 0.3: within binomial error (4 standard errors) of 0.90."""
    hits, total = 0, 0
    for seed in range(20):
        X, y = _data(400, seed)
        Xt, yt = _data(2000, seed + 100)
        mean, std = RFFRidge(150, random_state=seed).fit(X, y).predict(Xt, return_std=True)
        hits += int(np.sum(np.abs(yt - mean) <= 1.645 * std))
        total += len(yt)
    share = hits / total
    assert abs(share - 0.90) < 4 * np.sqrt(0.9 * 0.1 / total) + 0.01, share


def test_dask_std_is_lazy_and_equals_in_memory(synchronous):
    da = pytest.importorskip("dask.array")
    X, y = _data()
    model = RFFRidge(60, random_state=0).fit(X, y)
    mean, std = model.predict(da.from_array(X, chunks=100), return_std=True)
    assert isinstance(std, da.Array) and std.chunks == ((100, 100, 100),)
    ref_mean, ref_std = model.predict(X, return_std=True)
    np.testing.assert_array_equal(mean.compute(), ref_mean)
    np.testing.assert_allclose(std.compute(), ref_std, rtol=1e-13)  # (row blocks: another summation order)
    with pytest.raises(ValueError, match="return_cov needs in-memory X"):
        model.predict(da.from_array(X, chunks=100), return_cov=True)


def test_refusals():
    X, y = _data(80)
    model = RFFRidge(20, random_state=0).fit(X, y)
    with pytest.raises(ValueError, match="at most one of return_std and return_cov"):
        model.predict(X, return_std=True, return_cov=True)
    clf = RFFRidgeClassifier(20, random_state=0).fit(X, y > 0)
    with pytest.raises(TypeError, match="return_std"):
        clf.predict(X, return_std=True)


@pytest.mark.parametrize("outputs", [1, 2])
def test_sample_y_converges_to_the_posterior_of_f(outputs):
    """Over 4000 drawn functions, the mean of sample_y is predict (to 4 standard errors) and its
    covariance the posterior covariance of f: predict's covariance less the noise on the diagonal."""
    X, y = _data(200, outputs=outputs)
    model = RFFRidge(40, random_state=0).fit(X, y)
    X_new = np.random.default_rng(4).uniform(-2, 2, (6, 2))
    draws = model.sample_y(X_new, 4000, random_state=1)
    mean, cov = model.predict(X_new, return_cov=True)
    noise = np.atleast_1d(model.noise_variance_)
    shape = (6, 4000) if outputs == 1 else (6, outputs, 4000)
    assert draws.shape == shape
    D = draws.reshape(6, -1, 4000)
    M, C = mean.reshape(6, -1), cov.reshape(6, 6, -1)
    for k in range(D.shape[1]):
        latent = C[:, :, k] - noise[k] * np.eye(6)
        se = np.sqrt(np.diag(latent) / 4000)
        assert np.all(np.abs(D[:, k].mean(axis=1) - M[:, k]) < 4 * se)
        np.testing.assert_allclose(np.cov(D[:, k]), latent, rtol=0.1, atol=0.05 * np.diag(latent).max())


def test_a_drawn_function_is_the_same_at_every_input_and_call():
    X, y = _data(150)
    model = RFFRidge(30, random_state=0).fit(X, y)
    f = model.sample_functions(3, random_state=7)
    X_new = np.random.default_rng(5).uniform(-2, 2, (10, 2))
    together = f(X_new)
    one_by_one = np.vstack([f(X_new[i:i + 1]) for i in range(10)])
    np.testing.assert_allclose(together, one_by_one, rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(model.sample_y(X_new, 3, random_state=7), together)
    assert f.coef_.shape == (3, 30) and f.intercept_.shape == (3,)
    # each draw is a linear model on the same features as the fit
    Z = model._map().features(model._standardized(X_new)).astype(np.float64)
    np.testing.assert_allclose(together, Z @ f.coef_.T + f.intercept_, rtol=1e-12, atol=1e-12)
    with pytest.raises(ValueError, match="n_samples"):
        model.sample_functions(0)
