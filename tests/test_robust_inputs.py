"""Robust inputs (``robust_inputs=True``, the default of every estimator): predictions stay sane
outside the training data, with a synthetic generator of each failure mode seen on real data: an
outlying test row, a heavy-tailed input, rare one-hot levels, and count targets."""
import warnings

import numpy as np
import pytest

import rffkern
from rffkern import (AdaptiveRFFRegressor, EERFRegressor, RFFNetRegressor, RFFRidge, RFFRidgeClassifier,
                     SRFFRegressor)
from rffkern._api import TaskWarning, _lead, explain_task, few_rows_carry, without_the_deciding_row


def smooth_rows(n, d=4, seed=0):
    """A near-noiseless smooth target of d standardized inputs: the fit interpolates."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = np.sin(X[:, 0]) + 0.5 * X[:, 1] ** 2 + 0.01 * rng.normal(size=n)
    return X, y


def far_out(X, z, column=0):
    """X with one input moved to z deviations from its mean."""
    X = X.copy()
    X[:, column] = X[:, column].mean() + z * X[:, column].std()
    return X


def heavy_tailed_rows(n, seed=0):
    """A log-normal input (a population count) the target depends on through its logarithm, beside
    two normal ones: a few rows lie many deviations out."""
    rng = np.random.default_rng(seed)
    pop = np.exp(rng.normal(10, 1.5, n))
    X = np.column_stack([pop, rng.normal(size=n), rng.normal(size=n)])
    y = np.log(pop) + np.sin(X[:, 1]) + 0.1 * rng.normal(size=n)
    return X, y


def rare_level_rows(n, seed=0):
    """Smooth inputs and one-hot levels, one of them on 3 rows (~25 deviations out when scaled by
    its deviation)."""
    rng = np.random.default_rng(seed)
    X, y = smooth_rows(n, 3, seed)
    level = np.zeros(n)
    level[rng.choice(n, 3, replace=False)] = 1.0
    common = (rng.random(n) < 0.5).astype(float)
    return np.column_stack([X, common, level]), y + 0.3 * common


REGRESSORS = {
    "ridge": lambda **kw: RFFRidge(300, random_state=0, **kw),
    "rffnet": lambda **kw: RFFNetRegressor(100, max_iter=30, random_state=0, **kw),
    "eerf": lambda **kw: EERFRegressor(200, random_state=0, **kw),
    "srff": lambda **kw: SRFFRegressor(50, max_iter=5, random_state=0, **kw),
    "adaptive": lambda **kw: AdaptiveRFFRegressor(64, n_iter=10, random_state=0, **kw),
}


@pytest.mark.parametrize("name", sorted(REGRESSORS))
def test_far_out_rows_stay_in_the_training_range(name):
    X, y = smooth_rows(400)
    model = REGRESSORS[name]().fit(X, y)
    lo, hi = y.min(), y.max()
    for z in (5.0, 20.0, 100.0, -100.0):
        pred = model.predict(far_out(X[:50], z))
        assert np.all(pred >= lo - (hi - lo) / 2) and np.all(pred <= hi + (hi - lo) / 2), (z, pred.min(), pred.max())
        # clipped: the answer at the training range's end
        edge = far_out(X[:50], 0.0)
        edge[:, 0] = X[:, 0].max() if z > 0 else X[:, 0].min()
        np.testing.assert_allclose(pred, model.predict(edge), rtol=1e-6, atol=1e-9)


def test_far_out_rows_without_robust_inputs_leave_the_range():
    # the failure the default prevents: a near-interpolating ridge far from its rows
    X, y = smooth_rows(400)
    model = RFFRidge(300, alpha=1e-8, random_state=0, robust_inputs=False).fit(X, y)
    pred = model.predict(far_out(X[:50], 100.0))
    assert not np.allclose(pred, model.predict(far_out(X[:50], 101.0)))  # not clipped: moves on


def test_two_valued_inputs_are_scaled_by_half_their_gap():
    X, y = rare_level_rows(600)
    model = RFFRidge(200, random_state=0, standardize=True).fit(X, y)
    np.testing.assert_allclose(model.x_scale_[3:], [0.5, 0.5])
    Xs = model._standardized(X)
    assert np.abs(Xs[:, 3:]).max() <= 2.0
    plain = RFFRidge(200, random_state=0, standardize=True, robust_inputs=False).fit(X, y)
    assert np.abs(plain._standardized(X)[:, 4]).max() > 10  # a rare level's deviations


def test_heavy_tailed_input_is_mapped_to_normal_scores():
    X, y = heavy_tailed_rows(1500)
    Xt, yt = heavy_tailed_rows(600, seed=1)
    model = RFFRidge(300, random_state=0).fit(X, y)
    assert model.standardize_ == "quantile"
    assert model.quantile_columns_.tolist() == [0]
    assert set(model.standardize_errors_) == {True, "global", "quantile"}
    plain = RFFRidge(300, random_state=0, robust_inputs=False).fit(X, y)
    assert plain.standardize_ in (True, "global")
    assert model.score(Xt, yt) > plain.score(Xt, yt) + 0.05


def test_quantile_is_not_tried_without_heavy_tails():
    X, y = smooth_rows(400)
    model = RFFRidge(200, random_state=0).fit(X, y)
    assert set(model.standardize_errors_ or {}) <= {True, "global"}
    assert model.input_quantiles_ is None


@pytest.mark.parametrize("name", ["eerf", "rffnet", "adaptive"])
def test_standardize_quantile_serves_every_estimator(name):
    X, y = heavy_tailed_rows(800)
    model = REGRESSORS[name](standardize="quantile").fit(X, y)
    assert model.quantile_columns_.tolist() == [0]
    assert np.isfinite(model.predict(X[:10] * 1e3)).all()


def test_robust_inputs_false_is_the_plain_standardization():
    X, y = rare_level_rows(300)
    model = RFFRidge(100, random_state=0, standardize=True, robust_inputs=False).fit(X, y)
    np.testing.assert_allclose(model.x_scale_, X.std(axis=0))
    assert model.x_min_ is None and model.input_quantiles_ is None


def test_partial_fit_widens_the_range():
    X, y = smooth_rows(400)
    model = RFFRidge(100, alpha=1e-3, random_state=0)
    model.partial_fit(X[:200], y[:200])
    model.partial_fit(X[200:], y[200:])
    np.testing.assert_array_equal(model.x_min_, X.min(axis=0))
    np.testing.assert_array_equal(model.x_max_, X.max(axis=0))


def test_the_caller_array_is_not_modified_by_clipping():
    X, y = smooth_rows(300)
    model = RFFRidge(100, random_state=0).fit(X, y)
    test = far_out(X[:10], 50.0)
    before = test.copy()
    model.predict(test)
    np.testing.assert_array_equal(test, before)


def test_float32_inputs_are_clipped_too():
    X, y = smooth_rows(300)
    model = RFFRidgeClassifier(100, random_state=0).fit(X.astype(np.float32), y > 0.5)
    assert model.predict(far_out(X[:10], 1e30).astype(np.float32)).shape == (10,)


# ------------------------------------------------------------------ rffkern.fit
def test_one_outlying_held_out_row_does_not_decide():
    rng = np.random.default_rng(0)
    ridge = rng.random(200) * 0.1
    net = ridge - 0.01 + 0.005 * rng.normal(size=200)  # lower on most rows ...
    net[7] = 500.0  # ... but one absurd answer
    mean, se = _lead(net, ridge)
    assert mean > se  # the net still leads: the one row does not decide
    assert np.mean(ridge - net) < 0  # (as it would with that row)
    lucky = ridge + 0.01 + 0.005 * rng.normal(size=200)  # higher on most rows ...
    lucky[3] = -500.0  # ... and one row far better
    mean, se = _lead(lucky, ridge)
    assert mean < 0
    kept = without_the_deciding_row(net, ridge, np.ones(200))
    assert kept[0].size == 199 and kept[0].max() < 1.0 and kept[2].size == 199


def test_fit_compares_with_the_full_ridge_on_a_heavy_tailed_target():
    """A count whose few large values carry the signal: the search's ridge on a subset of rows does
    not stand in for the ridge on every row."""
    rng = np.random.default_rng(0)
    n = 5000
    pop = np.exp(rng.normal(9, 1.5, n))
    X = np.column_stack([pop, rng.normal(size=n)])
    y = rng.poisson(pop * 1e-4 * np.exp(0.3 * X[:, 1])).astype(float)
    model = rffkern.fit(X, y, random_state=0, max_iter=5)
    assert "ridge" in model.selection_report_["validation_scores"]


def test_few_rows_carry_the_target_only_for_a_heavy_tail():
    rng = np.random.default_rng(0)
    normal = rng.normal(size=20000)
    count = rng.poisson(np.exp(rng.normal(9, 1.5, 20000)) * 1e-4).astype(float)
    assert not few_rows_carry(normal) and not few_rows_carry(np.exp(0.5 * normal))
    assert few_rows_carry(count)
    assert few_rows_carry(np.column_stack([normal, count]))  # any output column
    assert not few_rows_carry(np.ones(100))  # constant: no variance to carry
    assert few_rows_carry(np.r_[np.zeros(99), 1.0])  # one row of a hundred: the top row


def test_fit_on_a_heavy_tailed_input_uses_normal_scores():
    X, y = heavy_tailed_rows(1200)
    model = rffkern.fit(X, y, random_state=0, max_iter=10)
    assert model.selection_report_["standardize"] == "quantile"
    assert model.input_quantiles_ is not None  # ridge or RFFNet: both take the scores
    Xt, _ = heavy_tailed_rows(200, seed=2)
    pred = model.predict(far_out(Xt, 1e6))
    assert np.all(np.abs(pred) < 10 * np.abs(y).max())


# ------------------------------------------------------------------ the task rule
@pytest.mark.parametrize("y, task, guessed", [
    (np.repeat([0, 1, 2, 3, 5, 8, 13], [700, 150, 80, 40, 20, 8, 2]), "regression", True),  # counts with gaps
    (np.repeat(np.arange(12, 19), [30, 5, 10, 4, 20, 5, 6]), "regression", True),  # years of schooling 12..18
    (np.repeat(np.arange(0, 14), [720, 150, 60, 30, 15, 9, 6, 4, 3, 2, 1, 1, 1, 1]), "regression", True),
    (np.repeat(np.arange(1, 11), [2, 5, 10, 30, 60, 80, 50, 20, 6, 3]), "regression", True),  # ratings 1..10
    (np.repeat(np.arange(10), [98, 113, 103, 101, 98, 89, 96, 103, 97, 101]), "classification", False),  # digits
    (np.arange(150) % 3, "classification", False),
    (np.array([0, 1] * 50), "classification", False),
])
def test_task_rule_regresses_counts(y, task, guessed):
    from rffkern._api import task_rule

    got, reason, unsure = task_rule(y)
    assert (got, unsure) == (task, guessed) and reason
    assert explain_task(y) == (got, reason)


def test_fit_warns_when_the_task_rule_guesses():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 3))
    y = np.minimum(rng.poisson(np.exp(X[:, 0])), 13)
    with pytest.warns(TaskWarning, match=r"fitting regression; pass task='classification'"):
        model = rffkern.fit(X, y, random_state=0, max_iter=5)
    assert not hasattr(model, "classes_")
    with warnings.catch_warnings():
        warnings.simplefilter("error", TaskWarning)
        rffkern.fit(X, y, task="regression", random_state=0, max_iter=5)
