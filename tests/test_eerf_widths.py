"""EERF's default width search (issue 10): multiples of the paper's k-NN width compared by the exact
LOO error, extended at the edge of the grid; ``length_scale="knn"`` keeps the paper's single width."""
import numpy as np
import pytest

from rffkern._selection import EXTENDED_WIDTH_FACTORS as WIDTH_FACTORS
from rffkern._selection import WIDTH_LIMITS, next_width
from rffkern.eerf import EERFClassifier, EERFRegressor


def _smooth(n=600, d=5, seed=0, noise=0.1):
    """A nearly linear target: it wants a kernel much wider than the 50-NN distance."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    return X, X[:, 0] + 0.5 * X[:, 1] + noise * rng.normal(size=n)


def _wiggly(n=600, d=2, seed=0):
    """A high-frequency target: it wants a narrow kernel."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    return X, np.sin(6 * X[:, 0]) * np.cos(6 * X[:, 1]) + 0.05 * rng.normal(size=n)


def test_next_width_extends_only_at_the_edge():
    base = 1.0
    widths = [0.5, 1.0, 2.0, 4.0]
    assert next_width(widths, [3.0, 2.0, 1.0, 0.5], base) == 8.0      # largest best: double
    assert next_width(widths, [0.5, 2.0, 1.0, 3.0], base) is None     # WIDTH_LIMITS[0] = 0.5
    assert next_width([1.0, 2.0, 4.0], [0.5, 2.0, 1.0], base) == 0.5  # smallest best: halve
    assert next_width(widths, [3.0, 0.5, 1.0, 3.0], base) is None     # inside: stop
    assert next_width([0.5, 1, 2, 4, 8, 16], [6, 5, 4, 3, 2, 1], base) is None   # WIDTH_LIMITS[1]
    assert WIDTH_LIMITS == (0.5, 16.0)


def test_default_searches_widths_and_keeps_the_least_loo_error():
    X, y = _smooth()
    m = EERFRegressor(50, random_state=0, n_jobs=1).fit(X, y)
    knn = m.widths_[1]  # the grid starts at WIDTH_FACTORS times the k-NN width
    np.testing.assert_allclose(m.widths_[:len(WIDTH_FACTORS)], [knn * f for f in WIDTH_FACTORS])
    assert len(m.width_errors_) == len(m.widths_)
    assert m.length_scale_ == m.widths_[int(np.argmin(m.width_errors_))]
    # the smooth target pushes the search past the grid's widest width, doubling while it improves
    assert m.length_scale_ > WIDTH_FACTORS[-1] * knn
    assert max(m.widths_) <= WIDTH_LIMITS[1] * knn * (1 + 1e-12)
    # the kept model is the single-width fit at the chosen width: same features, alpha, coefficients
    alone = EERFRegressor(50, length_scale=m.length_scale_, random_state=0, n_jobs=1).fit(X, y)
    np.testing.assert_allclose(np.min(alone.selection_errors_), np.min(m.width_errors_), rtol=1e-9)
    assert alone.alpha_ == m.alpha_


def test_width_search_follows_the_target():
    """The same inputs, a smooth and a wiggly target: the chosen widths differ by 4x or more, and
    the search beats the paper's single k-NN width on held-out rows for the smooth one."""
    X, y_smooth = _smooth(n=800, d=2)
    _, y_wiggly = _wiggly(n=800, d=2)
    wide = EERFRegressor(50, random_state=0, n_jobs=1).fit(X[:600], y_smooth[:600])
    narrow = EERFRegressor(50, random_state=0, n_jobs=1).fit(X[:600], y_wiggly[:600])
    assert wide.length_scale_ >= 4 * narrow.length_scale_
    paper = EERFRegressor(50, length_scale="knn", random_state=0, n_jobs=1).fit(X[:600], y_smooth[:600])
    assert paper.widths_ is None and paper.width_errors_ is None
    assert wide.score(X[600:], y_smooth[600:]) > paper.score(X[600:], y_smooth[600:])


def test_knn_rule_is_the_old_single_width_and_a_sequence_is_searched():
    X, y = _smooth(n=300)
    paper = EERFRegressor(20, length_scale="knn", random_state=3, n_jobs=1).fit(X, y)
    searched = EERFRegressor(20, random_state=3, n_jobs=1).fit(X, y)
    assert paper.length_scale_ == pytest.approx(searched.widths_[1])   # factor 1 of the grid
    given = EERFRegressor(20, length_scale=[0.5, 2.0, 8.0], random_state=3, n_jobs=1).fit(X, y)
    assert given.widths_ == [0.5, 2.0, 8.0]   # a given list is not extended
    assert given.length_scale_ == given.widths_[int(np.argmin(given.width_errors_))]
    with pytest.raises(ValueError, match="length_scale"):
        EERFRegressor(20, length_scale=[1.0, -1.0]).fit(X, y)
    with pytest.raises(ValueError, match="length_scale"):
        EERFRegressor(20, length_scale="median").fit(X, y)


def test_classifier_width_search_and_logistic_solver():
    X, y = _smooth(n=400)
    labels = (y > 0).astype(int)
    ridge = EERFClassifier(30, random_state=0, n_jobs=1).fit(X, labels)
    logistic = EERFClassifier(30, solver="logistic", alpha=1.0, random_state=0, n_jobs=1).fit(X, labels)
    assert len(ridge.widths_) >= len(WIDTH_FACTORS)
    assert logistic.length_scale_ == logistic.widths_[int(np.argmin(logistic.width_errors_))]
    assert ridge.score(X, labels) > 0.9 and logistic.score(X, labels) > 0.9


def test_default_size_is_1000_with_10_m_candidates():
    X, y = _smooth(n=300, d=3)
    m = EERFRegressor(random_state=0, length_scale=1.0, n_jobs=1).fit(X, y)
    assert m.weights_.shape == (3, 1000) and m.n_candidates_ == 10000
