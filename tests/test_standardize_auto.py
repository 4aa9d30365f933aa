"""standardize="auto": each input by its own deviation, or every input by one pooled deviation
("global") where an exact leave-one-out comparison says so (RFFRidge natively, EERF and adaptive
RFF through rffkern.ridge.choose_standardization), on data where each is right."""
import numpy as np
import pytest
from sklearn.base import clone

from rffkern import (AdaptiveRFFClassifier, AdaptiveRFFRegressor, EERFClassifier, EERFRegressor, RFFRidge,
                     RFFRidgeClassifier)
from rffkern.ridge import PROBE_ROWS, choose_standardization


def _one_unit_inputs(n, seed):
    """Inputs in one unit ("pixels", inked at intensities 0.5 to 1): y depends on 8 inputs active
    on half the rows; 40 rarely active ones (0.5% to 5% of the rows) are noise, which
    standardizing each input blows up (~10 where active). (Two-valued inputs would not tell the
    two apart: robust_inputs scales each by half its gap, one unit for all.)"""
    rng = np.random.default_rng(seed)
    p = np.r_[np.full(8, 0.5), np.geomspace(0.005, 0.05, 40)]
    X = (rng.random((n, p.size)) < p) * np.round(rng.uniform(0.5, 1.0, (n, p.size)), 2)
    y = np.sin(1.2 * X[:, :8] @ np.linspace(0.5, 1.5, 8)) + 0.05 * rng.normal(size=n)
    return X, y


def _mixed_unit_inputs(n, seed):
    """y depends on input 0; inputs 1-2 are noise in units 300 times larger."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3)) * np.array([1.0, 300.0, 300.0])
    y = np.sin(2.0 * X[:, 0]) + 0.05 * rng.normal(size=n)
    return X, y


def _labels(y):
    return (y > np.median(y)).astype(int)


ESTIMATORS = [EERFRegressor(100, random_state=0, n_jobs=1), EERFClassifier(100, random_state=0, n_jobs=1),
              AdaptiveRFFRegressor(32, n_iter=10, random_state=0, n_jobs=1),
              AdaptiveRFFClassifier(32, n_iter=10, random_state=0, n_jobs=1),
              RFFRidge(200, random_state=0, n_jobs=1), RFFRidgeClassifier(200, random_state=0, n_jobs=1)]


def _name(est):
    return type(est).__name__


def _error(model, X, y):
    if _name(model).endswith("Classifier"):
        return float(np.mean(model.predict(X) != _labels(y)))
    return float(np.sqrt(np.mean((model.predict(X) - y) ** 2)))


@pytest.mark.parametrize("est", ESTIMATORS, ids=_name)
@pytest.mark.parametrize("make, kept", [(_one_unit_inputs, "global"), (_mixed_unit_inputs, True)],
                         ids=["one-unit", "mixed-units"])
def test_auto_keeps_the_standardization_that_predicts_better(est, make, kept):
    X, y = make(600, 0)
    X_test, y_test = make(2000, 1)
    target = _labels(y) if _name(est).endswith("Classifier") else y
    auto = clone(est).fit(X, target)
    assert auto.standardize_ == kept
    assert {True, "global"} <= set(auto.standardize_errors_)  # (and "quantile": rarely inked inputs are heavy-tailed)
    forced = {g: clone(est).set_params(standardize=g).fit(X, target) for g in (True, "global")}
    other = "global" if kept is True else True
    assert _error(forced[kept], X_test, y_test) < _error(forced[other], X_test, y_test)
    if isinstance(est, (RFFRidge, RFFRidgeClassifier)):
        # the ridge compares them itself: the kept one's errors are the lower, its widths searched
        assert auto.standardize_errors_[kept] < auto.standardize_errors_[other]
        assert len(auto.width_errors_) == 3
        assert _error(auto, X_test, y_test) <= 1.05 * _error(forced[kept], X_test, y_test)
    else:
        # the probe leaves the estimator's random stream alone: "auto" is the kept one's model
        np.testing.assert_array_equal(auto.predict(X_test), forced[kept].predict(X_test))
        assert forced[kept].standardize_errors_ is None


def test_choose_standardization_skips_the_comparison_where_the_two_are_one():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 1))
    assert choose_standardization(X, X[:, :1] ** 2, None, 0) == (True, None)
    B = (rng.random((200, 3)) < 0.5).astype(float)
    B[:, 1] = 1 - B[:, 0]  # equal deviations: one pooled deviation is each input's own
    B[:, 2] = B[:, 0]
    assert choose_standardization(B, B[:, :1], None, 0) == (True, None)
    # too few rows to compare: True
    assert choose_standardization(X[:2] * [[1.0]], X[:2], None, 0)[0] is True


def test_choose_standardization_weights_and_the_rows_are_capped(monkeypatch):
    """Weighted: rows of weight 0 are dropped rows, and the weights' units hardly matter: the
    probe's leave-one-out leaves each row out with all its weight; only the weighted median
    distance, which counts weights as repetitions (a row's pairs with itself at distance 0), moves
    with them (here the errors by 0.3% at weights times 4)."""
    X, y = _one_unit_inputs(300, 3)
    w = np.random.default_rng(1).integers(0, 3, size=300).astype(float)
    weighted = choose_standardization(X, y[:, None], w, 5)
    keep = w > 0
    dropped = choose_standardization(X[keep], y[keep, None], w[keep], 5)
    scaled = choose_standardization(X, y[:, None], 4.0 * w, 5)
    for other, rel in ((dropped, 1e-8), (scaled, 1e-2)):
        assert weighted[0] == other[0]
        for key in (True, "global"):
            assert weighted[1][key] == pytest.approx(other[1][key], rel=rel)
    import rffkern.ridge as ridge
    seen = []
    fit = ridge.RFFRidge.fit
    monkeypatch.setattr(ridge.RFFRidge, "fit", lambda self, X, y, sample_weight=None: seen.append(len(X)) or
                        fit(self, X, y, sample_weight))
    choose_standardization(np.tile(X, (12, 1)), np.tile(y, 12)[:, None], None, 0)
    assert seen == [PROBE_ROWS]


def test_global_standardization_pools_the_deviations_and_ignores_constant_inputs():
    X, y = _one_unit_inputs(400, 2)
    X = np.c_[X, np.full(400, 3.0)]  # constant: still standardized to 0 on every row
    model = RFFRidge(100, random_state=0, standardize="global").fit(X, y)
    sd = X[:, :-1].std(axis=0)
    np.testing.assert_allclose(model.x_scale_[:-1], np.sqrt(np.mean(sd**2)), rtol=1e-12)
    assert np.isinf(model.x_scale_[-1]) and model.feature_importances_[-1] == 0
    moved = X.copy()
    moved[:, -1] = -4.0
    np.testing.assert_array_equal(model.predict(moved), model.predict(X))
    # scale-free: X in other units gives the same model
    big = RFFRidge(100, random_state=0, standardize="global").fit(X * 1000.0, y)
    np.testing.assert_allclose(big.predict(X * 1000.0), model.predict(X), rtol=1e-8, atol=1e-10)


def test_auto_standardization_is_per_input_for_a_given_width_and_partial_fit():
    X, y = _one_unit_inputs(300, 3)
    given = RFFRidge(50, length_scale=2.0, random_state=0, robust_inputs=False).fit(X, y)
    assert given.standardize_ is True and given.standardize_errors_ is None
    np.testing.assert_allclose(given.x_scale_, X.std(axis=0), rtol=1e-12)
    streamed = RFFRidge(50, random_state=0).partial_fit(X[:150], y[:150])
    # (pixel-like inputs: some are constant on the first chunk and vary later, which it says)
    with pytest.warns(UserWarning, match="were constant on the first chunk"):
        streamed.partial_fit(X[150:], y[150:])
    assert streamed.standardize_ is True and streamed.standardize_errors_ is None


@pytest.mark.parametrize("standardize", [True, "global"])
def test_importances_are_per_unit_of_each_inputs_own_deviation_whatever_the_standardization(standardize):
    """The importances are the root mean square over the rows of df/dx_j times x_j's own deviation
    (central differences of predict on the raw inputs), whatever the standardization."""
    X, y = _one_unit_inputs(300, 5)
    X[:, 8] *= 7.0  # one input in another unit
    # (not clipped: the differences at the rows of largest and least value leave the range)
    model = RFFRidge(100, random_state=0, standardize=standardize, robust_inputs=False).fit(X, y)
    sd, h = X.std(axis=0), 1e-5
    slopes = np.empty_like(X)
    for j in range(X.shape[1]):
        up, down = X.copy(), X.copy()
        up[:, j] += h * sd[j]
        down[:, j] -= h * sd[j]
        slopes[:, j] = (model.predict(up) - model.predict(down)) / (2 * h)
    rms = np.sqrt(np.mean(slopes**2, axis=0))
    np.testing.assert_allclose(model.feature_importances_, rms / rms.max(), rtol=1e-5, atol=1e-7)


def test_inputs_of_one_spread_make_no_comparison():
    """X standardized already (deviations equal to round-off): "global" is "True" again, so the
    ridge fits its three widths only and the probe of EERF / adaptive RFF is not fitted (without
    robust_inputs, whose "quantile" candidate the rarely inked inputs would call for)."""
    X, y = _one_unit_inputs(400, 6)
    X = (X - X.mean(0)) / X.std(0)
    assert np.ptp(X.std(0)) > 0  # (round-off)
    model = RFFRidge(100, random_state=0, robust_inputs=False).fit(X, y)
    assert model.standardize_ is True and model.standardize_errors_ is None
    assert len(model.width_errors_) == 3
    assert choose_standardization(X, y[:, None], None, 0, robust_inputs=False) == (True, None)
    eerf = EERFRegressor(50, random_state=0, n_jobs=1, robust_inputs=False).fit(X, y)
    assert eerf.standardize_ is True and eerf.standardize_errors_ is None
