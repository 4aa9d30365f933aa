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
    """Binary inputs in one unit ("pixels"): y depends on 8 inputs active on half the rows; 40
    rarely active ones (0.5% to 5% of the rows) are noise, which standardizing each input blows up
    (~10 where active)."""
    rng = np.random.default_rng(seed)
    p = np.r_[np.full(8, 0.5), np.geomspace(0.005, 0.05, 40)]
    X = (rng.random((n, p.size)) < p).astype(float)
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
    assert set(auto.standardize_errors_) == {True, "global"}
    forced = {g: clone(est).set_params(standardize=g).fit(X, target) for g in (True, "global")}
    other = "global" if kept is True else True
    assert _error(forced[kept], X_test, y_test) < _error(forced[other], X_test, y_test)
    if not isinstance(est, (RFFRidge, RFFRidgeClassifier)):
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


def test_choose_standardization_weights_are_repeated_rows_and_the_rows_are_capped(monkeypatch):
    X, y = _one_unit_inputs(300, 3)
    w = np.random.default_rng(1).integers(0, 3, size=300)
    weighted = choose_standardization(X, y[:, None], w.astype(float), 5)
    repeated = choose_standardization(np.repeat(X, w, axis=0), np.repeat(y, w)[:, None], None, 5)
    assert weighted[0] == repeated[0]
    for key in (True, "global"):
        assert weighted[1][key] == pytest.approx(repeated[1][key], rel=1e-8)
    import rffkern.ridge as ridge
    seen = []
    fit = ridge.RFFRidge.fit
    monkeypatch.setattr(ridge.RFFRidge, "fit", lambda self, X, y, sample_weight=None: seen.append(len(X)) or
                        fit(self, X, y, sample_weight))
    choose_standardization(np.tile(X, (12, 1)), np.tile(y, 12)[:, None], None, 0)
    assert seen == [PROBE_ROWS]
