"""EERF: scores against NumPy (and against gram's Z.T Y), the selection rule replayed from the seed,
beating plain RFF at equal M, estimator checks, bad input."""
import numpy as np
import pytest
from sklearn.base import clone
from sklearn.utils.estimator_checks import check_estimator

from rffkern import kernels
from rffkern.eerf import ArcCosineMap, EERFClassifier, EERFRegressor, eerf_scores, knn_length_scale
from rffkern.ridge import RFFRidge, RFFRidgeClassifier


def _numpy_phi(X, W, b, kernel):
    U = X @ W
    if kernel == "gaussian":
        return np.cos(U + b)
    q = int(kernel[-1])
    return (U > 0).astype(float) if q == 0 else np.maximum(U, 0) ** q


@pytest.mark.parametrize("kernel", ["gaussian", "arccos0", "arccos1", "arccos2"])
def test_scores_match_numpy(kernel):
    rng = np.random.default_rng(0)
    X, T = rng.normal(size=(300, 4)), rng.uniform(-1, 1, size=(300, 2))
    W, b = rng.normal(size=(4, 50)), rng.uniform(0, 2 * np.pi, 50)
    S = eerf_scores(X, T, W, b if kernel == "gaussian" else None, kernel=kernel, n_threads=1)
    np.testing.assert_allclose(S, _numpy_phi(X, W, b, kernel).T @ T / 300, rtol=1e-9, atol=1e-12)
    if kernel == "gaussian":  # the same numbers as gram's second output / N0
        _, ZtY = kernels.gram(X, W, b, T, scale=1.0)
        np.testing.assert_allclose(S, ZtY / 300, rtol=1e-9, atol=1e-12)


def test_linear_scores_are_input_correlations():
    rng = np.random.default_rng(1)
    X, t = rng.normal(size=(100, 6)), rng.uniform(-1, 1, size=(100, 1))
    np.testing.assert_allclose(eerf_scores(X, t, None, kernel="linear"), X.T @ t / 100)


def test_arccos_map_blocks_match_numpy():
    rng = np.random.default_rng(2)
    X, W, Y = rng.normal(size=(5000, 3)), rng.normal(size=(3, 7)), rng.normal(size=(5000, 2))
    fmap = ArcCosineMap(W, 1, 0.5)
    Z = 0.5 * np.maximum(X @ W, 0)
    G, ZtY = fmap.gram(X, Y)
    np.testing.assert_allclose(G, Z.T @ Z, rtol=1e-10)
    np.testing.assert_allclose(ZtY, Z.T @ Y, rtol=1e-10)
    np.testing.assert_allclose(fmap.predict(X, np.ones((7, 1))), Z.sum(1, keepdims=True), rtol=1e-10)


def test_selection_keeps_the_top_scores_replayed_from_the_seed():
    """n <= 1000 so N0 = n (no subsample draw) and sigma is fixed: the candidates are the first two
    draws of the seeded Generator, which the test replays."""
    rng = np.random.default_rng(3)
    X = rng.normal(size=(400, 3))
    y = np.sin(2 * X[:, 0]) + 0.1 * rng.normal(size=400)
    m = EERFRegressor(10, n_candidates=60, length_scale=0.7, random_state=11, n_jobs=1).fit(X, y)
    assert m.n_subsample_ == 400 and m.n_candidates_ == 60
    replay = np.random.default_rng(11)
    W0 = replay.standard_normal((3, 60)) / 0.7
    b0 = replay.uniform(0, 2 * np.pi, 60)
    Xs = (X - X.mean(0)) / X.std(0)
    t = y - y.mean()
    t /= np.abs(t).max()
    S = np.abs(np.cos(Xs @ W0 + b0).T @ t / 400)
    keep = np.argsort(-S)[:10]
    np.testing.assert_allclose(m.weights_, W0[:, keep])
    np.testing.assert_allclose(m.offsets_, b0[keep])
    np.testing.assert_allclose(m.scores_, S[keep], rtol=1e-9)
    assert np.all(np.diff(m.scores_) <= 0)


def test_multiclass_scores_are_summed_squares():
    rng = np.random.default_rng(4)
    X = rng.normal(size=(300, 2))
    y = np.minimum((np.arctan2(X[:, 1], X[:, 0]) + np.pi) // (2 * np.pi / 3), 2).astype(int)
    m = EERFClassifier(8, n_candidates=40, length_scale=1.0, random_state=5, n_jobs=1).fit(X, y)
    Xs = (X - X.mean(0)) / X.std(0)
    T = np.where(y[:, None] == np.arange(3), 1.0, -1.0)
    T -= T.mean(0)
    S = np.cos(Xs @ m.weights_ + m.offsets_).T @ T / 300
    np.testing.assert_allclose(m.scores_, np.sqrt((S**2).sum(1)), rtol=1e-9)


def _target(seed, n=3000):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 5))
    y = np.cos(2 * X[:, 0] + 1.5 * X[:, 1]) + 0.5 * np.sin(3 * X[:, 2]) + 0.1 * rng.normal(size=n)
    return X, y


def test_beats_plain_rff_at_equal_m():
    """Three seeds, M = 20, same sigma and alphas: EERF's test MSE is below plain RFF ridge's on
    every seed (measured margins ~ 35 %), and its classifier's accuracy is higher."""
    alphas = [1e-3, 1e-2, 1e-1, 1.0]
    for seed in range(3):
        X, y = _target(seed)
        e = EERFRegressor(20, alpha=alphas, random_state=seed, n_jobs=1).fit(X[:1500], y[:1500])
        Xs_tr, Xs_te = e._transform_input(X[:1500]), e._transform_input(X[1500:])
        r = RFFRidge(20, alpha=alphas, length_scale=e.length_scale_, random_state=seed).fit(Xs_tr, y[:1500])
        assert np.mean((e.predict(X[1500:]) - y[1500:]) ** 2) < 0.9 * np.mean((r.predict(Xs_te) - y[1500:]) ** 2)
        yc = (y > 0).astype(int)
        ec = EERFClassifier(20, random_state=seed, n_jobs=1).fit(X[:1500], yc[:1500])
        rc = RFFRidgeClassifier(20, length_scale=ec.length_scale_, random_state=seed).fit(Xs_tr, yc[:1500])
        assert ec.score(X[1500:], yc[1500:]) > rc.score(Xs_te, yc[1500:])


@pytest.mark.parametrize("kernel", ["arccos0", "arccos1", "arccos2"])
def test_arccos_kernels_fit(kernel):
    X, y = _target(0, n=600)
    m = EERFRegressor(30, kernel=kernel, alpha=[0.01, 1.0], random_state=0).fit(X, y)
    assert m.score(X, y) > 0.05


def test_linear_kernel_selects_the_relevant_inputs():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(500, 8))
    y = 2 * X[:, 1] - 1.5 * X[:, 5] + 0.1 * rng.normal(size=500)
    m = EERFRegressor(2, kernel="linear", alpha=0.01, random_state=0).fit(X, y)
    np.testing.assert_array_equal(m.support_, [1, 5])
    assert m.weights_ is None and m.score(X, y) > 0.99


def test_logistic_solver_and_predict_proba():
    X, y = _target(1, n=800)
    yc = (y > 0).astype(int)
    m = EERFClassifier(30, solver="logistic", random_state=0).fit(X, yc)
    P = m.predict_proba(X)
    np.testing.assert_allclose(P.sum(1), 1.0)
    np.testing.assert_array_equal(m.classes_[P.argmax(1)], m.predict(X))
    # the ridge solver has them too (tempered decision values: tests/test_classifier_proba.py)
    P = EERFClassifier(30, random_state=0).fit(X, yc).predict_proba(X)
    np.testing.assert_allclose(P.sum(1), 1.0)


def test_knn_length_scale_rule():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 2))
    d = np.sqrt(((X[:, None] - X[None]) ** 2).sum(-1))
    expected = np.sort(d, axis=1)[:, 50].mean()  # column 0 is the point itself
    np.testing.assert_allclose(knn_length_scale(X), expected, rtol=1e-10)


def test_bad_input():
    X, y = _target(0, n=100)
    with pytest.raises(ValueError, match="n_features"):
        EERFRegressor(10, kernel="linear").fit(X, y)
    with pytest.raises(ValueError, match="n_candidates"):
        EERFRegressor(10, n_candidates=5).fit(X, y)
    with pytest.raises(ValueError):
        EERFRegressor(10, kernel="poly").fit(X, y)
    Xn = X.copy()
    Xn[3, 0] = np.nan
    with pytest.raises(ValueError):
        EERFRegressor(10).fit(Xn, y)
    with pytest.raises(ValueError):
        EERFClassifier(10, solver="logistic", alpha=[1.0, -2.0]).fit(X, y > 0)


def test_logistic_solver_searches_an_alpha_list():
    """solver="logistic" with several alphas (the default is a list) chooses one by 3-fold CV."""
    X, y = _target(0, n=300)
    m = EERFClassifier(10, solver="logistic", alpha=[1e-2, 1.0, 100.0], random_state=0).fit(X, y > 0)
    assert m.alpha_ in (1e-2, 1.0, 100.0)


@pytest.mark.parametrize("est", [
    EERFRegressor(20, random_state=0, n_jobs=1),
    EERFRegressor(20, kernel="arccos1", random_state=0, n_jobs=1),
    EERFClassifier(20, random_state=0, n_jobs=1),
    EERFClassifier(20, solver="logistic", alpha=1.0, random_state=0, n_jobs=1),  # one alpha: the checks refit it ~100 times
], ids=["EERFRegressor", "EERFRegressor-arccos1", "EERFClassifier", "EERFClassifier-logistic"])
def test_sklearn_estimator_checks(est):
    # weights are relative (divided by their mean positive weight, so that their units do not
    # matter): integer weights give the model of the rows repeated at the penalty alpha times that
    # mean (test_datadep_weights.py), not at alpha, as the check expects
    expected = {"check_sample_weight_equivalence_on_dense_data": "weights are relative to their mean"}
    check_estimator(clone(est), expected_failed_checks=expected)
