"""Inputs constant on the training rows: exact standardization, and every estimator ignores them.

The training rows say nothing about how the target depends on such an input. Standardized as
before (mean and deviation), a kernel model still moved wherever a later row took another value
there: a test row with another value moved RFFRidge's predictions by up to 2.8 (y of unit scale)
and flipped RFFRidgeClassifier's label on 64% of the rows. Every estimator now standardizes such
inputs to 0 on every row (an infinite ``x_scale_``; RFFNet gives them relevance 0).
"""
import warnings

import numpy as np
import pytest

import rffkern
from rffkern import (AdaptiveRFFClassifier, AdaptiveRFFRegressor, EERFClassifier, EERFRegressor,
                     RFFNetClassifier, RFFNetRegressor, RFFRidge, RFFRidgeClassifier, SRFFRegressor)
from rffkern._data import constant_columns, mean_and_scale, mean_scale_constant
from rffkern._inputs import fit_input_scaling


def _data(n=300, value=0.3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4)) * [1.0, 2.0, 0.5, 3.0] + 1.0
    X[:, 2] = value  # constant; 0.3 has no exact mean in float64 (300 rows of it sum to 89.99999...)
    y = np.sin(2 * X[:, 0]) + 0.3 * X[:, 1] + 0.05 * rng.normal(size=n)
    return X, y


def test_a_constant_column_standardizes_to_zero_exactly():
    A = np.column_stack([np.full(600, 0.3), np.arange(600.0)])
    assert A[:, 0].mean() != 0.3  # the rounding the standardization must not turn into a scale
    mean, scale = mean_and_scale(A)
    assert mean[0] == 0.3 and scale[0] == 1.0
    np.testing.assert_array_equal((A[:, 0] - mean[0]) / scale[0], 0.0)
    np.testing.assert_allclose([mean[1], scale[1]], [A[:, 1].mean(), A[:, 1].std()], rtol=1e-15)
    # a row of weight 0 does not make a column vary, nor set its value
    B = np.vstack([A, [[7.0, 1.0]]])
    w = np.r_[np.ones(600), 0.0]
    np.testing.assert_array_equal(constant_columns(B, w), [True, False])
    np.testing.assert_array_equal(constant_columns(B), [False, False])
    scaling = fit_input_scaling(B, w)
    mean, scale = scaling.mean, scaling.scale
    assert mean[0] == 0.3 and scale[0] == np.inf and np.isfinite(scale[1])
    assert scaling.x_max[0] == 0.3  # (the clipping range: the rows of positive weight)
    np.testing.assert_array_equal(mean_scale_constant(B, w)[2], [True, False])
    assert constant_columns(np.empty((0, 3))).tolist() == [False] * 3


REGRESSORS = [RFFRidge(100, random_state=0, n_jobs=1),
              RFFNetRegressor(n_components=30, max_iter=5, random_state=0, n_jobs=1),
              SRFFRegressor(20, max_iter=3, max_inner_iter=5, random_state=0, n_jobs=1),
              EERFRegressor(30, random_state=0, n_jobs=1),
              AdaptiveRFFRegressor(30, n_iter=5, random_state=0, n_jobs=1)]
CLASSIFIERS = [RFFRidgeClassifier(100, random_state=0, n_jobs=1),
               RFFNetClassifier(n_components=30, max_iter=5, random_state=0, n_jobs=1),
               EERFClassifier(30, random_state=0, n_jobs=1),
               AdaptiveRFFClassifier(30, n_iter=5, random_state=0, n_jobs=1)]


@pytest.mark.parametrize("est", REGRESSORS + CLASSIFIERS, ids=lambda e: type(e).__name__)
def test_every_estimator_ignores_an_input_constant_on_the_training_rows(est):
    X, y = _data()
    target = (y > np.median(y)).astype(int) if est in CLASSIFIERS else y
    model = est.fit(X, target)
    moved = X.copy()
    moved[:, 2] = np.linspace(-50.0, 50.0, X.shape[0])
    np.testing.assert_array_equal(model.predict(moved), model.predict(X))
    if est in CLASSIFIERS:
        scores = "predict_proba" if hasattr(model, "predict_proba") else "decision_function"
        np.testing.assert_array_equal(getattr(model, scores)(moved), getattr(model, scores)(X))
    if hasattr(model, "relevances_"):
        assert model.relevances_[2] == 0
    else:
        assert model.x_scale_[2] == np.inf and np.isfinite(np.delete(model.x_scale_, 2)).all()
    if hasattr(model, "feature_importances_"):
        assert model.feature_importances_[2] == 0
    if not hasattr(model, "relevances_"):
        # nor does the model depend on the constant's value: another one gives the same model
        other = X.copy()
        other[:, 2] = 0.7
        np.testing.assert_array_equal(type(est)(**est.get_params()).fit(other, target).predict(X),
                                      model.predict(X))


def test_srff_keeps_a_constant_input_out_of_the_simplex():
    """gamma_ of the constant input is 0, and the simplex of the others has their size: d - 1
    inputs over the length scale (the constant one took 0.68 of it, second of six, before)."""
    X, y = _data()
    model = SRFFRegressor(20, max_iter=5, random_state=0, n_jobs=1).fit(X, y)
    assert model.gamma_[2] == 0 and (np.delete(model.gamma_, 2) >= 0).all()
    assert model.gamma_.sum() == pytest.approx(3 / model.length_scale_, rel=1e-10)
    assert np.argmax(model.gamma_) == 0
    # with every input constant there is nothing to learn: the mean, no gamma step, and the default
    # path's penalties stay positive (they are scaled by ||Xs||^2, which is 0: all were 0, with
    # divisions by zero)
    for alpha in (0.1, None):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            flat = SRFFRegressor(20, max_iter=3, alpha=alpha, random_state=0, n_jobs=1).fit(np.ones((50, 3)), y[:50])
        np.testing.assert_array_equal(flat.gamma_, 0.0)
        np.testing.assert_array_equal(flat.feature_importances_, 0.0)
        assert flat.alpha_ > 0
        np.testing.assert_allclose(flat.predict(np.zeros((5, 3))), y[:50].mean(), rtol=1e-6)


def test_fit_ignores_an_input_constant_on_its_rows_whatever_it_returns():
    X, y = _data(400)
    for target in (y, (y > np.median(y)).astype(int)):
        model = rffkern.fit(X, target, random_state=0, max_iter=5)
        moved = X.copy()
        moved[:, 2] = -3.0
        np.testing.assert_array_equal(model.predict(moved), model.predict(X))
    ridge = RFFRidge(100, random_state=0).fit(X[:300], y[:300])
    ridge.partial_fit(X[300:], y[300:])  # rffkern.fit's way of adding the held-out rows
    moved = X.copy()
    moved[:, 2] = -3.0
    np.testing.assert_array_equal(ridge.predict(moved), ridge.predict(X))


def test_rffnet_standardizes_an_input_of_tiny_but_real_variation():
    """Constant means one value on every row, not a small deviation: an input in units of 1e-13
    (here a copy of the informative x0) is standardized by its deviation and learned (it was taken
    for constant below a deviation of 1e-12, scaled by 1 and given relevance 0)."""
    X, y = _data()
    X[:, 3] = X[:, 0] * 1e-13
    model = RFFNetRegressor(n_components=30, max_iter=5, early_stopping=False, random_state=0,
                            n_jobs=1).fit(X, y)
    assert model.x_scale_[3] == pytest.approx(X[:, 3].std(), rel=1e-6)
    assert model.relevances_[3] != 0 and model.relevances_[2] == 0


@pytest.mark.parametrize("block", [1, 7, 1 << 20])
def test_standardized_rows_in_blocks_equals_one_pass(monkeypatch, block):
    # float64 arithmetic then the cast, block by block: the one-pass result, for any block size
    import rffkern._data as data

    rng = np.random.default_rng(0)
    X = rng.normal(size=(50, 4)) * [1, 1e3, 1e-3, 1] + [0, 1e12, 0, -5]
    mean, scale = X.mean(0), X.std(0)
    monkeypatch.setattr(data, "_STANDARDIZE_BLOCK_VALUES", block)
    expected = ((X - mean) / scale).astype(np.float32)
    before = X.copy()
    for Xin in (X, np.asfortranarray(X)):
        Z = data.standardized_rows(Xin, mean, scale, np.float32)
        assert Z.dtype == np.float32 and Z.flags.c_contiguous
        np.testing.assert_array_equal(Z, expected)
    np.testing.assert_array_equal(data.standardized_rows(X, mean, scale, np.float64), (X - mean) / scale)
    np.testing.assert_array_equal(X, before)
    assert np.isfinite(expected).all() and np.ptp(expected[:, 1]) > 1  # the offset column kept its spread
