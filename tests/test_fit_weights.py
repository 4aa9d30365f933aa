"""``rffkern.fit(X, y, sample_weight=...)``: weights reach every stage, rows of weight 0 take no
part, the scale of the weights does not matter, bad weights and parameters fail up front."""
import numpy as np
import pytest

import reference
import rffkern
from rffkern import _api
from rffkern._fit_options import fit_options
from rffkern.ridge import RFFRidge


@pytest.fixture
def small_search(monkeypatch):
    monkeypatch.setattr(_api, "SEARCH_ROWS", 300)
    monkeypatch.setattr(_api, "SEARCH_COMPONENTS", 60)


def _corrupted(n=700, seed=0):
    """A smooth target on raw inputs of mixed scales, a third of its rows corrupted (``bad``), and
    clean test rows."""
    rng = np.random.default_rng(seed)
    scales = np.array([1.0, 10.0, 100.0, 1.0])
    X = rng.standard_normal((n, 4)) * scales
    y = np.sin(X[:, 0]) + X[:, 1] / 10 + 0.05 * rng.standard_normal(n)
    bad = rng.random(n) < 1 / 3
    y_bad = y + np.where(bad, 20.0 * rng.standard_normal(n), 0.0)
    X_test = rng.standard_normal((1000, 4)) * scales
    return X, y_bad, bad, X_test, np.sin(X_test[:, 0]) + X_test[:, 1] / 10


def test_rows_of_weight_zero_take_no_part(small_search):
    """The same model as without those rows: they are dropped before the split, and the rest weigh
    alike (equal weights are none)."""
    X, y, bad, _, _ = _corrupted()
    w = np.where(bad, 0.0, 2.5)
    weighted = rffkern.fit(X, y, sample_weight=w, random_state=0, max_iter=15)
    clean = rffkern.fit(X[~bad], y[~bad], random_state=0, max_iter=15)
    np.testing.assert_array_equal(weighted.predict(X), clean.predict(X))
    assert weighted.selection_report_["zero_weight_rows"] == bad.sum()
    assert not weighted.selection_report_["weighted"]
    labels = np.where(y > 0, "up", "down")
    labels_bad = np.where(bad, "noise", labels)  # a class only rows of weight 0 hold: not learned
    model = rffkern.fit(X, labels_bad, sample_weight=np.where(bad, 0.0, 1.0), random_state=0, max_iter=10,
                        task="classification")
    clean = rffkern.fit(X[~bad], labels[~bad], random_state=0, max_iter=10)
    assert list(model.classes_) == ["down", "up"]
    np.testing.assert_array_equal(model.predict(X), clean.predict(X))


def test_equal_weights_fit_the_unweighted_model(small_search):
    X, y, _, _, _ = _corrupted(400, seed=1)
    plain = rffkern.fit(X, y, random_state=0, max_iter=10)
    for w in (3.0, np.full(len(y), 0.25)):
        model = rffkern.fit(X, y, sample_weight=w, random_state=0, max_iter=10)
        np.testing.assert_array_equal(model.predict(X), plain.predict(X))


def test_the_scale_of_the_weights_does_not_matter(small_search):
    """Weights are taken in units of their mean: times 4 (exact in floating point) the same model."""
    X, y, bad, _, _ = _corrupted(500, seed=2)
    w = np.where(bad, 0.01, 1.0) * np.random.default_rng(0).uniform(0.5, 2.0, len(y))
    one = rffkern.fit(X, y, sample_weight=w, random_state=0, max_iter=10)
    four = rffkern.fit(X, y, sample_weight=4.0 * w, random_state=0, max_iter=10)
    assert one.selection_report_["weighted"]
    np.testing.assert_array_equal(one.predict(X), four.predict(X))


@pytest.mark.parametrize("lead", [-np.inf, np.inf])
def test_weights_reach_the_returned_model(small_search, monkeypatch, lead):
    """Down-weighted corrupted rows: whichever model is returned (RFFNet with LEAD_STANDARD_ERRORS
    -inf, the ridge with +inf) predicts the clean target, which the unweighted fit cannot."""
    monkeypatch.setattr(_api, "LEAD_STANDARD_ERRORS", lead)
    X, y, bad, X_test, y_test = _corrupted()
    w = np.where(bad, 1e-4, 1.0)
    w_before = w.copy()
    model = rffkern.fit(X, y, sample_weight=w, random_state=0, max_iter=30)
    np.testing.assert_array_equal(w, w_before)  # the caller's weights are not modified
    assert model.selection_report_["chosen"] == ("rffnet" if lead < 0 else "ridge")
    plain = rffkern.fit(X, y, random_state=0, max_iter=30)
    assert model.score(X_test, y_test) > 0.95
    assert plain.score(X_test, y_test) < 0.6


def test_weighted_classifier_closes_on_the_held_out_rows_with_their_weights():
    """The closing logistic fit again on the training and added rows, each with its weight: the
    gradient of the weighted objective over all of them vanishes."""
    X, y, _, _, _ = _corrupted(500, seed=3)
    labels = (y > 0).astype(int)
    w = np.random.default_rng(1).uniform(0.2, 3.0, len(y))
    net = rffkern.RFFNetClassifier(n_components=40, refit_components=120, max_iter=15, random_state=0)
    with fit_options(net, keep_closing_stats=True):
        net.fit(X[:400], labels[:400], sample_weight=w[:400])
    net._closing_fit_add_rows(X[400:], labels[400:], w[400:])
    Z = net._trained_features(net._standardized(X))
    coef = net.coef_.astype(np.float64)
    _, grad = reference.closing_fit_objective(Z, labels[:, None].astype(float), "logistic", net.refit_alpha_, coef, w)
    _, unweighted = reference.closing_fit_objective(Z, labels[:, None].astype(float), "logistic", net.refit_alpha_,
                                                    coef)
    assert np.abs(grad).max() < 1e-5 < np.abs(unweighted).max()


def test_weighted_regressor_closes_on_the_held_out_rows_with_their_weights():
    """The closing ridge with the added rows, each with its weight: that of every row at once (the
    weights relative to the mean weight of the rows fit was given, as fit's own)."""
    from rffkern._ridge_solvers import FourierFeatureMap, fit_ridge_map
    X, y, _, _, _ = _corrupted(500, seed=4)
    w = np.random.default_rng(2).uniform(0.2, 3.0, len(y))
    net = rffkern.RFFNetRegressor(n_components=40, refit_components=120, max_iter=15, random_state=0)
    with fit_options(net, keep_closing_stats=True):
        net.fit(X[:400], y[:400], sample_weight=w[:400])
    net._closing_fit_add_rows(X[400:], y[400:], w[400:])
    trained_intercept, y_scale = net._trained_map[3], net.y_scale_
    Xr = net._standardized(X).astype(np.float64) * net.relevances_.astype(np.float64)
    Yr = (y.reshape(-1, 1) - trained_intercept) / y_scale
    fmap = FourierFeatureMap(net.weights_.astype(np.float64), net.offsets_.astype(np.float64), float(net.scale_))
    coef, intercept, _, _, _ = fit_ridge_map(fmap, Xr, Yr, [net.refit_alpha_], sample_weight=w / w[:400].mean())
    np.testing.assert_allclose(net.coef_, coef, rtol=2e-3, atol=1e-4 * np.abs(coef).max())
    np.testing.assert_allclose(net.intercept_, trained_intercept + intercept * y_scale, rtol=1e-5)


def test_weighted_lead():
    """The weighted mean difference and its standard error: the unweighted ones for equal weights,
    unchanged by a common factor, and the standard error of a weighted mean of independent rows."""
    rng = np.random.default_rng(0)
    a, b = rng.random(50), rng.random(50)
    plain = _api._lead(a, b)
    np.testing.assert_allclose(_api._lead(a, b, np.full(50, 3.0)), plain, rtol=1e-12)
    w = rng.uniform(0.1, 2.0, 50)
    mean, se = _api._lead(a, b, w)
    np.testing.assert_allclose(_api._lead(a, b, 7.0 * w), (mean, se), rtol=1e-12)
    a, b, w = _api.without_the_deciding_row(a, b, w)  # (the row of the largest weighted difference left out)
    d = b - a
    assert mean == pytest.approx(np.average(d, weights=w))
    k = w.sum() ** 2 / (w @ w)
    assert se == pytest.approx(np.sqrt(np.sum(w**2 * (d - mean) ** 2) * k / (k - 1)) / w.sum())
    assert np.isnan(_api._lead(a[:1], b[:1], w[:1])[1])


@pytest.mark.parametrize("w, error, match", [
    (-np.ones(60), ValueError, "negative"),
    (np.full(60, np.nan), ValueError, "NaN"),
    (np.ones(59), ValueError, r"shape \(60,\)"),
    (np.zeros(60), ValueError, "sums to zero"),
    (np.array(["a"] * 60), TypeError, "numeric"),
])
def test_bad_weights_are_refused(w, error, match):
    X, y, _, _, _ = _corrupted(60)
    with pytest.raises(error, match=match):
        rffkern.fit(X, y, sample_weight=w)


def test_zero_weight_rows_must_still_be_valid():
    X, y, _, _, _ = _corrupted(60)
    X[0, 0] = np.nan
    w = np.ones(60)
    w[0] = 0.0
    with pytest.raises(ValueError, match="NaN"):
        rffkern.fit(X, y, sample_weight=w)


def test_too_few_weighted_rows_are_refused():
    X, y, _, _, _ = _corrupted(60)
    w = np.zeros(60)
    w[:3] = 1.0
    with pytest.raises(ValueError, match="too small"):
        rffkern.fit(X, y, sample_weight=w)


def test_rffnet_parameters_are_checked_before_any_fit(monkeypatch):
    """A misspelt or invalid RFFNet parameter fails at once, not after the width search."""
    def no_fit(*args, **kwargs):
        raise AssertionError("a model was fitted before the parameters were checked")
    monkeypatch.setattr(RFFRidge, "fit", no_fit)
    X, y, _, _, _ = _corrupted(60)
    with pytest.raises(TypeError, match="n_compnents"):
        rffkern.fit(X, y, n_compnents=10)
    with pytest.raises(ValueError, match="max_iter"):
        rffkern.fit(X, y, max_iter=0)


@pytest.mark.parametrize("classify", [False, True])
def test_weighted_fit_does_not_depend_on_the_thread_count(small_search, classify):
    """Both RFFNet variants (55 inputs) train side by side on two threads, weighted: the model of
    one thread."""
    X, y, bad, _, _ = _corrupted(400, seed=5)
    X = np.column_stack([X, np.random.default_rng(5).standard_normal((400, 51))])
    target = (y > 0).astype(int) if classify else y
    w = np.where(bad, 0.1, 1.0)
    one = rffkern.fit(X, target, sample_weight=w, random_state=0, n_jobs=1, max_iter=8)
    two = rffkern.fit(X, target, sample_weight=w, random_state=0, n_jobs=2, max_iter=8)
    assert set(one.selection_report_["rffnet_variant_scores"]) == {"sparse", "dense"}
    assert two.selection_report_["rffnet_variant_scores"] == one.selection_report_["rffnet_variant_scores"]
    np.testing.assert_array_equal(two.predict(X), one.predict(X))


def test_weighted_multi_output_regression(small_search):
    X, y, bad, X_test, y_test = _corrupted(500, seed=6)
    Y = np.column_stack([y, 3.0 * y + 100.0])
    model = rffkern.fit(X, Y, sample_weight=np.where(bad, 0.0, 1.0), random_state=0, max_iter=20)
    assert model.predict(X_test).shape == (1000, 2)
    assert model.score(X_test, np.column_stack([y_test, 3.0 * y_test + 100.0])) > 0.9
