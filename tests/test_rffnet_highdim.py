"""RFFNet in high dimension: support recovery on make_hd5 at reduced sizes and the defaults (the
full-size problem, d=1000 and n=5000, is a benchmark, not a test), the l1 penalty on the
relevances (``relevance_penalty``), the shared-moment Adam (``solver="shared-adam"``) and the
dimension-aware initial relevances (``init="median"``)."""
import numpy as np
import pytest

from rffkern import RFFNetRegressor
from rffkern._rffnet_training import MEDIAN_INIT_FACTOR, median_init
from rffkern._sampling import median_distance
from rffkern.datasets import make_hd5, make_jse3


def test_support_recovery_in_high_dimension_at_a_reduced_size():
    # y = sin(x0) + sin(x1) + x2 x3 + x4^2 + 0.5 eps among 50 features: the five relevances are the
    # five largest, including the interaction and the even term (whose relevance gradients vanish
    # to first order on a flat kernel), and the held-out RMSE is near the noise (0.5; the mean
    # predicts with RMSE ~2).
    X, y, support = make_hd5(2000, n_features=50, random_state=2)
    model = RFFNetRegressor(random_state=2, n_jobs=1).fit(X[:1500], y[:1500])
    top = np.argsort(-np.abs(model.relevances_))[:5]
    assert set(top.tolist()) == set(support.tolist())
    rmse = np.sqrt(np.mean((model.predict(X[1500:]) - y[1500:]) ** 2))
    assert rmse < 0.8 < y[1500:].std() / 2


@pytest.mark.parametrize("seed", [0, 1, 5])
def test_support_recovery_at_the_defaults_with_200_features(seed):
    # make_hd5 with d=200 and n=3000 (the benchmark bench/rffnet_highdim.py runs d=1000, n=5000):
    # at the defaults (shared-moment Adam, median-width start, relevance_penalty=0.1) the five
    # relevant features are the five largest relevances, every irrelevant one is below a tenth
    # of the smallest of them, and the held-out RMSE is near the noise (0.5; the mean predicts
    # with RMSE ~2). The paper's settings (solver="adam", init="constant", learning_rate=1e-3,
    # relevance_penalty=0) leave irrelevant relevances at 0.3 to 4 times the smallest relevant
    # one on these seeds and find 3 of the five on seed 0. With one start (n_init=1) seeds 3 and
    # 5 miss some of the five (below); the default's five starts find them on seeds 0-7.
    X, y, support = make_hd5(3500, n_features=200, random_state=seed)
    model = RFFNetRegressor(random_state=seed, n_jobs=1).fit(X[:3000], y[:3000])
    r = np.abs(model.relevances_)
    assert set(np.argsort(-r)[:5].tolist()) == set(support.tolist())
    assert np.delete(r, support).max() < 0.1 * r[support].min()
    rmse = np.sqrt(np.mean((model.predict(X[3000:]) - y[3000:]) ** 2))
    assert rmse < 0.6


def test_several_starts_find_the_support_where_one_start_loses_it():
    # make_hd5, d=200, n=3000, seed 3: the one start loses the interaction x2 x3 and x4^2 in its
    # first epochs (an irrelevant relevance ends 150 times the smallest relevant one, held-out RMSE
    # 1.56); the default n_init="auto" trains 5 starts for 5 epochs each and goes on from the one
    # of least validation loss, which has found all five.
    X, y, support = make_hd5(3500, n_features=200, random_state=3)
    one = RFFNetRegressor(random_state=3, n_jobs=1, n_init=1).fit(X[:3000], y[:3000])
    assert set(np.argsort(-np.abs(one.relevances_))[:5].tolist()) != set(support.tolist())
    model = RFFNetRegressor(random_state=3, n_jobs=1).fit(X[:3000], y[:3000])
    assert model.start_losses_.shape == (5,)
    r = np.abs(model.relevances_)
    assert set(np.argsort(-r)[:5].tolist()) == set(support.tolist())
    assert np.delete(r, support).max() < 0.1 * r[support].min()
    rmse = np.sqrt(np.mean((model.predict(X[3000:]) - y[3000:]) ** 2))
    assert rmse < 0.6 < np.sqrt(np.mean((one.predict(X[3000:]) - y[3000:]) ** 2))


def test_relevance_penalty_holds_irrelevant_relevances_at_zero():
    X, y, _ = make_jse3(600, random_state=0)  # y = x0 x1 among 10 features
    kw = dict(n_components=50, learning_rate=1e-2, max_iter=50, random_state=0, n_jobs=1,
              solver="adam", init="constant")  # the paper's solver and start
    free = RFFNetRegressor(**kw, relevance_penalty=0.0).fit(X, y)
    sparse = RFFNetRegressor(**kw, relevance_penalty=0.5).fit(X, y)
    assert np.count_nonzero(free.relevances_[2:]) == 8  # unpenalised: they drift, never exactly 0
    np.testing.assert_array_equal(sparse.relevances_[2:], 0.0)
    assert np.all(np.abs(sparse.relevances_[:2]) > 0.1)
    assert sparse.score(X, y) > 0.9
    with pytest.raises(ValueError, match="relevance_penalty"):
        RFFNetRegressor(relevance_penalty=-1.0).fit(X, y)


def test_median_init_is_three_over_the_median_distance():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((300, 40))
    theta = median_init(X.astype(np.float32))
    assert theta.dtype == np.float32 and theta.shape == (40,)
    np.testing.assert_allclose(theta, MEDIAN_INIT_FACTOR / median_distance(X), rtol=1e-5)
    # In d dimensions the median distance of standardized data is about sqrt(2 d): the initial
    # relevances shrink like 1/sqrt(d), not like the paper's (max - min) / d.
    assert theta[0] == pytest.approx(3 / np.sqrt(80), rel=0.1)
    # The estimator starts from it: one epoch at a negligible step leaves it in place.
    est = RFFNetRegressor(n_components=20, init="median", learning_rate=1e-9, max_iter=1,
                          early_stopping=False, random_state=0, n_jobs=1, refit_coef=False).fit(X, X[:, 0])
    Xs = (X - X.mean(0)) / X.std(0)
    np.testing.assert_allclose(est.relevances_, MEDIAN_INIT_FACTOR / median_distance(Xs), rtol=1e-4)
