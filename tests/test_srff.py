"""SRFF: simplex projection against brute force, the gamma gradient and one outer step against the NumPy
oracle (datadep_reference), support recovery on gse2, estimator checks, bad input."""
import itertools

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from sklearn.utils.estimator_checks import check_estimator

import datadep_reference as ref
from rffkern import kernels
from rffkern._linalg import simplex_projection
from rffkern.datasets import make_gse2
from rffkern.srff import SRFFRegressor, fista_gamma, ridge_step, srff_alpha_grid


def _brute_force_projection(v, radius):
    """Try every support S: on S the projection is v - tau with tau fixing the sum; keep the closest
    feasible point (the projection onto a convex set is unique)."""
    best, best_dist = None, np.inf
    for k in range(1, v.size + 1):
        for S in itertools.combinations(range(v.size), k):
            S = list(S)
            x = np.zeros_like(v)
            x[S] = v[S] - (v[S].sum() - radius) / k
            if np.all(x >= -1e-12):
                dist = np.sum((x - v) ** 2)
                if dist < best_dist - 1e-15:
                    best, best_dist = x, dist
    return best


@given(arrays(np.float64, st.integers(1, 6), elements=st.floats(-5, 5)), st.floats(0.1, 10))
def test_simplex_projection_matches_brute_force(v, radius):
    p = simplex_projection(v, radius)
    assert np.all(p >= 0)
    np.testing.assert_allclose(p.sum(), radius, rtol=1e-10)
    np.testing.assert_allclose(p, _brute_force_projection(v, radius), atol=1e-9)


def test_simplex_projection_fixed_points_and_errors():
    x = np.array([0.2, 0.0, 0.8])
    np.testing.assert_allclose(simplex_projection(x, 1.0), x)
    np.testing.assert_allclose(simplex_projection(np.zeros(4), 2.0), np.full(4, 0.5))
    with pytest.raises(ValueError):
        simplex_projection(x, 0.0)


def _problem(seed=0, n=200, d=6, D=40):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = np.sin(X[:, 0] + X[:, 1]) + 0.1 * rng.normal(size=n)
    directions, b = rng.normal(size=(d, D)), rng.uniform(0, 2 * np.pi, D)
    gamma = rng.uniform(0.2, 1.0, d)
    return X, y - y.mean(), directions, b, gamma


def test_gamma_gradient_is_the_kernel_theta_gradient():
    X, y, directions, b, gamma = _problem()
    a = np.random.default_rng(1).normal(size=directions.shape[1]) * 0.3
    value, _, grad = kernels.loss_and_grad(X, y, directions, b, a, theta=gamma, scale=1.0)
    ref_value, ref_grad = ref.srff_objective_and_grad(X, y, directions, b, a, gamma)
    np.testing.assert_allclose(value, ref_value, rtol=1e-10)
    np.testing.assert_allclose(grad, ref_grad, rtol=1e-8, atol=1e-12)
    # and the written-out gradient is the derivative (central differences)
    step = 1e-6

    def h(g):
        return ref.srff_objective_and_grad(X, y, directions, b, a, g)[0]

    fd = [(h(gamma + step * e) - h(gamma - step * e)) / (2 * step) for e in np.eye(len(gamma))]
    np.testing.assert_allclose(ref_grad, fd, rtol=1e-5, atol=1e-8)


def test_outer_step_matches_numpy_reference():
    X, y, directions, b, gamma = _problem(seed=2)
    lam = 1e-3
    a, J = ridge_step(X, y, directions, b, gamma, lam, n_threads=1)
    g_new, _ = fista_gamma(X, y, directions, b, a, gamma, gamma.sum(), n_threads=1)
    a_ref, g_ref = ref.srff_outer_step(X, y, directions, b, gamma, lam, gamma.sum())
    np.testing.assert_allclose(a, a_ref, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(g_new, g_ref, rtol=1e-7, atol=1e-10)
    np.testing.assert_allclose(g_new.sum(), gamma.sum())
    # the gamma step does not increase the loss
    h_new = ref.srff_objective_and_grad(X, y, directions, b, a, g_new)[0]
    assert h_new <= ref.srff_objective_and_grad(X, y, directions, b, a, gamma)[0] + 1e-12


def test_alpha_grid_is_the_papers():
    X = np.random.default_rng(0).normal(size=(50, 3))
    grid = srff_alpha_grid(X)
    assert grid.size == 50
    np.testing.assert_allclose(grid[-1], np.linalg.norm(X, 2) ** 2)
    np.testing.assert_allclose(grid[0] / grid[-1], 10**-9.8)


def test_recovers_gse2_support():
    """gse2 (d = 100, support 10..14), n = 800, D = 100, lambda = ||X'X|| 1e-3: fixed seeds; the five
    largest relevances are the support and the test MSE beats the mean predictor by >= 20 %."""
    X, y, support = make_gse2(1300, random_state=3)
    m = SRFFRegressor(100, alpha=srff_alpha_grid((X[:800] - X[:800].mean(0)) / X[:800].std(0), [-3])[0],
                      max_iter=100, random_state=0, n_jobs=1).fit(X[:800], y[:800])
    np.testing.assert_array_equal(np.sort(np.argsort(-m.gamma_)[:5]), support)
    assert np.mean((m.predict(X[800:]) - y[800:]) ** 2) < 0.8 * np.var(y[800:])
    np.testing.assert_allclose(m.feature_importances_.sum(), 1.0)
    np.testing.assert_allclose(m.gamma_.sum(), 100 / m.length_scale_)


def test_validation_grid_and_determinism():
    X, y, _ = make_gse2(150, random_state=0)
    kw = dict(alpha=[1e-3, 1e-1], max_iter=4, max_inner_iter=5, random_state=0)
    a = SRFFRegressor(20, n_jobs=1, **kw).fit(X, y)
    b = SRFFRegressor(20, n_jobs=2, **kw).fit(X, y)
    assert a.validation_errors_.shape == (2,)
    assert a.alpha_ in (1e-3, 1e-1)
    np.testing.assert_allclose(a.gamma_, b.gamma_, rtol=1e-10)
    np.testing.assert_allclose(a.predict(X), b.predict(X), rtol=1e-9)


def test_bad_input():
    X, y, _ = make_gse2(40, random_state=0)
    with pytest.raises(ValueError):
        SRFFRegressor(10, alpha=[0.1, -1.0]).fit(X, y)
    with pytest.raises(ValueError):
        SRFFRegressor(10, alpha=0.1, max_iter=0).fit(X, y)
    Xn = X.copy()
    Xn[1, 1] = np.inf
    with pytest.raises(ValueError):
        SRFFRegressor(10, alpha=0.1).fit(Xn, y)
    with pytest.raises(ValueError, match="validation"):
        SRFFRegressor(10, alpha=[0.1, 1.0]).fit(X[:2], y[:2])


def test_sklearn_estimator_checks():
    check_estimator(SRFFRegressor(20, alpha=0.1, max_iter=3, max_inner_iter=5, random_state=0, n_jobs=1))
