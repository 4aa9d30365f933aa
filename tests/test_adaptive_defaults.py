"""Adaptive RFF's data-driven defaults (issue 10): the initial width by exact LOO, early stopping on
held-out rows with the final lambda searched there, the final lambda by exact LOO without it."""
import numpy as np
import pytest

from rffkern._selection import EXTENDED_WIDTH_FACTORS as WIDTH_FACTORS
from rffkern.adaptive import FINAL_ALPHAS, AdaptiveRFFRegressor
from rffkern._sampling import median_distance


def _target(n, noise, seed=0, d=3):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    f = np.sin(2 * X[:, 0]) + 0.5 * X[:, 1] ** 2
    return X, f + noise * f.std() * rng.normal(size=n)


@pytest.mark.parametrize("early_stopping", [True, False])
def test_noisy_problem_gets_a_larger_final_penalty(early_stopping):
    """The same inputs and signal, noise 0.01 vs 3 times the signal's sd: the noisy fit's lambda is
    at least 100 times the clean one's (measured: 1e-8 / 1e-7 against 0.1 / 1)."""
    kw = dict(n_components=64, n_iter=20, early_stopping=early_stopping, random_state=0, n_jobs=1)
    clean = AdaptiveRFFRegressor(**kw).fit(*_target(400, 0.01))
    noisy = AdaptiveRFFRegressor(**kw).fit(*_target(400, 3.0))
    assert noisy.alpha_ >= 100 * clean.alpha_
    assert clean.alpha_ in FINAL_ALPHAS and noisy.alpha_ in FINAL_ALPHAS
    if not early_stopping:
        assert clean.loo_errors_.shape == (len(FINAL_ALPHAS),)
        assert clean.alpha_ == FINAL_ALPHAS[int(np.argmin(clean.loo_errors_))]


def test_early_stopping_keeps_the_checked_frequencies_of_least_held_out_error():
    X, y = _target(500, 1.0)
    every = 3
    m = AdaptiveRFFRegressor(32, n_iter=10 * every, keep_frequency_history=every, random_state=1,
                             n_jobs=1).fit(X, y)
    # a check before the first iteration and after every n_iter // 10
    assert m.validation_errors_.shape == (11,)
    best = int(np.argmin(m.validation_errors_))
    assert m.best_iteration_ == best * every
    np.testing.assert_array_equal(m.frequencies_, m.frequency_history_[best])
    # the paper's run keeps the last frequencies of a chain on every row
    paper = AdaptiveRFFRegressor(32, n_iter=10 * every, early_stopping=False, final_alpha=None,
                                 random_state=1, n_jobs=1).fit(X, y)
    assert paper.best_iteration_ == 10 * every and paper.validation_errors_ is None
    assert paper.alpha_ == 1e-3


def test_early_stopping_beats_the_whole_chain_on_noisy_data():
    """Noise twice the signal's sd (the best held-out R^2 is 0.2), 300 rows: the whole chain with
    lambda = 1e-3 overfits (measured held-out R^2 -2.47); the default stops at the initial
    frequencies with lambda 0.32 (measured 0.036)."""
    X, y = _target(900, 2.0, seed=2)
    kw = dict(n_components=128, n_iter=40, random_state=0, n_jobs=1)
    default = AdaptiveRFFRegressor(**kw).fit(X[:300], y[:300])
    paper = AdaptiveRFFRegressor(early_stopping=False, final_alpha=None, init_scale="median", **kw).fit(X[:300], y[:300])
    assert paper.score(X[300:], y[300:]) < -1.0 < 0.0 < default.score(X[300:], y[300:])


def test_initial_width_is_the_least_loo_error_of_the_grid():
    X, y = _target(400, 0.1)
    m = AdaptiveRFFRegressor(32, n_iter=0, random_state=0, n_jobs=1).fit(X, y)
    Xs = (X - X.mean(0)) / X.std(0)
    median_scale = 1.0 / median_distance(Xs, rng=np.random.default_rng(0))
    np.testing.assert_allclose(m.init_scales_[:len(WIDTH_FACTORS)], [median_scale / f for f in WIDTH_FACTORS])
    assert len(m.init_scale_errors_) == len(m.init_scales_)
    assert m.init_scale_ == m.init_scales_[int(np.argmin(m.init_scale_errors_))]


def test_initial_width_search_extends_past_the_grid():
    """A nearly linear target wants a width beyond 4 times the median: the search doubles it."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 3))
    y = X[:, 0] + 0.5 * X[:, 1] + 0.01 * rng.normal(size=400)
    m = AdaptiveRFFRegressor(32, n_iter=0, random_state=0, n_jobs=1).fit(X, y)
    median_scale = m.init_scales_[1]
    assert len(m.init_scales_) > len(WIDTH_FACTORS)
    assert m.init_scale_ < median_scale / WIDTH_FACTORS[-1]     # wider than the grid's widest
    single = AdaptiveRFFRegressor(32, n_iter=0, init_scale="median", random_state=0, n_jobs=1).fit(X, y)
    assert single.init_scale_errors_ is None and single.init_scale_ == pytest.approx(median_scale)


def test_bad_validation_fraction():
    X, y = _target(4, 0.1)
    with pytest.raises(ValueError, match="validation_fraction"):
        AdaptiveRFFRegressor(8, n_iter=2, validation_fraction=0.1).fit(X, y)
    with pytest.raises(ValueError, match="validation_fraction"):
        AdaptiveRFFRegressor(8, validation_fraction=1.5).fit(X, y)
    with pytest.raises(ValueError, match="final_alpha"):
        AdaptiveRFFRegressor(8, final_alpha=[0.1, -1.0]).fit(X, y)
