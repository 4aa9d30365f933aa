"""RFFNet ``sample_weight`` (rows drawn in proportion to their weights, weighted statistics and
validation) and ``warm_start`` (fit continues from the fitted model)."""
import numpy as np
import pytest

from rffkern import RFFNetClassifier, RFFNetRegressor, TopKSelector
from rffkern._losses import mean_loss
from rffkern._rffnet_training import epoch_order
from rffkern.datasets import make_jse3


def _small(**kw):
    return dict(dict(n_components=30, max_iter=4, random_state=0, n_jobs=1), **kw)


@pytest.mark.parametrize("cls", [RFFNetRegressor, RFFNetClassifier])
def test_constant_weights_fit_exactly_as_no_weights(cls):
    X, y, _ = make_jse3(300, random_state=0)
    if cls is RFFNetClassifier:
        y = y > 0
    plain = cls(**_small()).fit(X, y)
    for w in (np.ones(300), np.full(300, 2.5)):
        weighted = cls(**_small()).fit(X, y, sample_weight=w)
        np.testing.assert_array_equal(weighted.coef_, plain.coef_)
        np.testing.assert_array_equal(weighted.relevances_, plain.relevances_)


def test_epoch_order_draws_rows_in_proportion_to_their_weights():
    rng = np.random.default_rng(0)
    w = np.array([0.0, 1.0, 2.0, 3.0, 0.0, 4.0])
    counts = np.zeros(6)
    for _ in range(2000):
        order = epoch_order(rng, 6, w)
        assert order.shape == (6,)
        counts += np.bincount(order, minlength=6)
    assert counts[0] == counts[4] == 0  # a row of weight 0 is never visited
    # Integer weights k visit a row as often as k copies of it would, in expectation: 12000 draws,
    # multinomial standard deviation <= 55 draws, tolerance 4 of them (220 of 1200..4800).
    np.testing.assert_allclose(counts, 12000 * w / w.sum(), atol=220)
    np.testing.assert_array_equal(np.sort(epoch_order(np.random.default_rng(1), 6)), np.arange(6))


def test_weighted_loss_equals_the_loss_of_repeated_rows():
    rng = np.random.default_rng(0)
    F, Y = rng.standard_normal((20, 1)), rng.standard_normal((20, 1))
    w = rng.integers(0, 4, 20)
    rep = np.repeat(np.arange(20), w)
    for loss, T in (("squared", Y), ("logistic", (Y > 0).astype(float))):
        assert mean_loss(F, T, loss, w) == pytest.approx(mean_loss(F[rep], T[rep], loss), rel=1e-12)


def _conflicting_targets(n, seed):
    """Each x appears twice, with y = +1 and y = -1; the +1 row weighs 3 where x0 > 0. The weighted
    least-squares optimum is 0.5 where x0 > 0 (0 elsewhere); the unweighted one is 0 everywhere."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 2))
    XX = np.vstack([X, X])
    y = np.concatenate([np.ones(n), -np.ones(n)])
    w = np.concatenate([np.where(X[:, 0] > 0, 3, 1), np.ones(n, int)])
    return XX, y, w


def test_integer_weights_match_repeated_rows_at_convergence():
    X, y, w = _conflicting_targets(300, 0)
    rep = np.repeat(np.arange(y.size), w)
    kw = dict(n_components=50, learning_rate=1e-2, max_iter=40, early_stopping=False,
              random_state=0, n_jobs=1, dtype="float64", refit_coef=False)  # the weighted epochs alone
    weighted = RFFNetRegressor(**kw).fit(X, y, sample_weight=w)
    repeated = RFFNetRegressor(**kw).fit(X[rep], y[rep])
    plain = RFFNetRegressor(**kw).fit(X, y)
    T = np.random.default_rng(1).standard_normal((400, 2))
    pos = T[:, 0] > 0.3
    neg = T[:, 0] < -0.3
    for model in (weighted, repeated):
        p = model.predict(T)
        # Tolerance 0.12 on the two region means (optimum 0.5 and 0); the unweighted fit is near 0.
        assert p[pos].mean() == pytest.approx(0.5, abs=0.12)
        assert p[neg].mean() == pytest.approx(0.0, abs=0.12)
    assert abs(weighted.predict(T)[pos].mean() - repeated.predict(T)[pos].mean()) < 0.12
    assert abs(plain.predict(T)[pos].mean()) < 0.12
    # The statistics are those of the repeated rows (weighted mean and deviation).
    np.testing.assert_allclose(weighted.intercept_, repeated.intercept_, rtol=1e-12)
    np.testing.assert_allclose(weighted.y_scale_, repeated.y_scale_, rtol=1e-12)
    np.testing.assert_allclose(weighted.x_mean_, repeated.x_mean_, rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(weighted.x_scale_, repeated.x_scale_, rtol=1e-10)


@pytest.mark.parametrize("early_stopping", [False, True])
def test_zero_weight_rows_are_ignored(early_stopping):
    X, y, _ = make_jse3(400, random_state=0)
    rng = np.random.default_rng(1)
    Xbad = np.vstack([X, 50 * rng.standard_normal((100, X.shape[1]))])
    ybad = np.concatenate([y, np.full(100, 1e4)])  # would wreck the fit and its statistics
    w = np.concatenate([np.ones(400), np.zeros(100)])
    kw = _small(max_iter=30, learning_rate=1e-2, early_stopping=early_stopping, dtype="float64")
    clean = RFFNetRegressor(**kw, refit_coef=False).fit(X, y)
    weighted = RFFNetRegressor(**kw, refit_coef=False).fit(Xbad, ybad, sample_weight=w)
    polluted = RFFNetRegressor(**kw, refit_coef=False).fit(Xbad, ybad)
    T, yT, _ = make_jse3(500, random_state=5)
    assert weighted.score(T, yT) > clean.score(T, yT) - 0.15
    assert weighted.score(T, yT) > 0.5 > polluted.score(T, yT)
    if not early_stopping:  # same rows for the statistics: the clean ones
        np.testing.assert_allclose(weighted.intercept_, clean.intercept_, rtol=1e-10)
        np.testing.assert_allclose(weighted.x_scale_, clean.x_scale_, rtol=1e-10)


def test_classifier_and_partial_fit_and_topk_take_weights():
    X, y, _ = make_jse3(300, random_state=0)
    labels = y > 0
    w = np.where(labels, 5.0, 1.0)
    clf = RFFNetClassifier(**_small(max_iter=10, learning_rate=1e-2)).fit(X, labels, sample_weight=w)
    plain = RFFNetClassifier(**_small(max_iter=10, learning_rate=1e-2)).fit(X, labels)
    # Up-weighting the positive class moves predictions towards it.
    assert clf.predict_proba(X)[:, 1].mean() > plain.predict_proba(X)[:, 1].mean()
    clf.partial_fit(X, labels, sample_weight=w)
    reg = RFFNetRegressor(**_small()).partial_fit(X, y, sample_weight=w)
    reg.partial_fit(X, y, sample_weight=w)
    assert reg.n_iter_ == 2
    sel = TopKSelector(RFFNetRegressor(**_small()), random_state=0).fit(X, y, sample_weight=w)
    assert sel.n_features_selected_ >= 1


@pytest.mark.parametrize("bad, match", [
    (-np.ones(50), "sample_weight"),
    (np.r_[np.nan, np.ones(49)], "sample_weight"),
    (np.r_[np.inf, np.ones(49)], "sample_weight"),
    (np.ones(49), "sample_weight"),
    (np.ones((50, 2)), "sample_weight"),
    (np.zeros(50), "sample_weight"),
])
@pytest.mark.parametrize("cls", [RFFNetRegressor, RFFNetClassifier])
def test_bad_weights_raise_naming_sample_weight(cls, bad, match):
    X, y, _ = make_jse3(50, random_state=0)
    if cls is RFFNetClassifier:
        y = y > 0
    with pytest.raises(ValueError, match=match):
        cls(**_small()).fit(X, y, sample_weight=bad)
    with pytest.raises(ValueError, match=match):
        cls(**_small()).partial_fit(X, y, **({"classes": [False, True]} if cls is RFFNetClassifier else {}),
                                    sample_weight=bad)


def test_weights_zero_on_a_split_are_refused():
    X, y, _ = make_jse3(50, random_state=0)
    w = np.zeros(50)
    w[0] = 1.0  # one positive row: one of the two splits has none
    with pytest.raises(ValueError, match="sample_weight is zero on every row"):
        RFFNetRegressor(**_small()).fit(X, y, sample_weight=w)


# ------------------------------------------------------------------ warm_start
@pytest.mark.parametrize("cls", [RFFNetRegressor, RFFNetClassifier])
def test_warm_start_continues_where_fit_stopped(cls):
    X, y, _ = make_jse3(300, random_state=0)
    if cls is RFFNetClassifier:
        y = y > 0
    kw = _small(early_stopping=False, checkpoint=False, learning_rate=1e-2)
    kw["refit_coef"] = False  # a refitted B is where a warm start would continue from
    once = cls(**dict(kw, max_iter=10)).fit(X, y)
    twice = cls(**dict(kw, max_iter=5), warm_start=True).fit(X, y)
    first_theta = twice.relevances_.copy()
    twice.fit(X, y)
    # 5 + 5 epochs continue the same generator, theta, B and Adam moments: the 10-epoch fit, bit for bit.
    assert twice.n_iter_ == 10 and len(twice.loss_curve_) == 10
    np.testing.assert_array_equal(twice.relevances_, once.relevances_)
    np.testing.assert_array_equal(twice.coef_, once.coef_)
    assert not np.array_equal(first_theta, twice.relevances_)
    # warm_start=False starts anew.
    cold = cls(**dict(kw, max_iter=5)).fit(X, y)
    cold.fit(X, y)
    assert cold.n_iter_ == 5
    np.testing.assert_array_equal(cold.relevances_, cls(**dict(kw, max_iter=5)).fit(X, y).relevances_)


def test_warm_start_with_early_stopping_and_bad_input():
    X, y, _ = make_jse3(300, random_state=0)
    est = RFFNetRegressor(**_small(max_iter=3, warm_start=True)).fit(X, y)
    W = est.weights_.copy()
    est.fit(X, y)
    assert est.n_iter_ == 6 and len(est.validation_loss_curve_) == 6
    n = est.n_components  # the same trained feature map (the closing ridge draws its extra features anew)
    np.testing.assert_array_equal(est.weights_[:, :n], W[:, :n])
    assert 1 <= est.best_epoch_ <= 6
    with pytest.raises(ValueError, match="features"):
        est.fit(X[:, :5], y)
    est.set_params(n_components=10)
    with pytest.raises(ValueError, match="n_components"):
        est.fit(X, y)
    clf = RFFNetClassifier(**_small(max_iter=2, warm_start=True)).fit(X, y > 0)
    with pytest.raises(ValueError, match="labels not in classes_"):
        clf.fit(X, np.where(y > 0, "a", "b"))


def test_non_numeric_weights_are_a_type_error():
    X, y, _ = make_jse3(50, random_state=0)
    with pytest.raises(TypeError, match="sample_weight must be numeric"):
        RFFNetRegressor(**_small()).fit(X, y, sample_weight=np.array(["a"] * 50))


def test_the_closing_check_takes_as_many_effective_rows_as_unweighted():
    from rffkern.rffnet import CLOSING_CHECK_ROWS, closing_check_rows

    rng = np.random.default_rng(0)
    n = 10_000
    plain = closing_check_rows(n, rng)
    assert plain.size == CLOSING_CHECK_ROWS
    np.testing.assert_array_equal(closing_check_rows(n, rng, np.full(n, 0.37)), plain)  # equal weights: the same rows
    w = rng.pareto(1.5, n) + 0.1  # heavy-tailed: few effective rows
    effective = w.sum() ** 2 / (w @ w)
    rows = closing_check_rows(n, rng, w)
    assert rows.size == min(n, int(np.ceil(CLOSING_CHECK_ROWS * n / effective * (1 - 1e-12)))) > CLOSING_CHECK_ROWS
    assert np.all(np.diff(rows) > 0)
    np.testing.assert_array_equal(closing_check_rows(500, rng, w[:500]), np.arange(500))
