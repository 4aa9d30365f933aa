"""``sample_weight`` of adaptive RFF in memory: equal weights give the unweighted model bit for
bit, weights ``c w`` the model of ``w``, integer weights the model of the rows repeated and a zero
weight that of the row dropped (at the hyper-parameters where that holds exactly: see below), and
bad weights are refused.

Where repeating rows is not the same as weighting them: the exact leave-one-out and GCV errors
leave a row out with all its weight (the repeated rows would be left out one copy at a time), the
held-out split of ``early_stopping`` draws among the given rows of positive weight (not among
copies), the standardization probe of ``standardize="auto"`` scores its rows by LOO, and the
median heuristic counts relative weights as copies. The integer-weight tests fix those choices
(``early_stopping=False``, one ``alpha``, ``final_alpha=None``, ``standardize=True``, a given
``init_scale``); the zero-weight tests keep them all, since each leaves a row of zero weight out.
"""
import numpy as np
import pytest
from rffkern.adaptive import GCV_ALPHAS, AdaptiveRFFClassifier, AdaptiveRFFRegressor

FITTED = ("frequencies_", "coef_", "amplitudes_", "alpha_", "init_scale_", "x_mean_", "x_scale_", "y_mean_",
          "proposal_covariance_")
FIXED = dict(early_stopping=False, final_alpha=None, alpha=1e-3, standardize=True)


def _data(n=160, d=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d)) * np.array([1.0, 3.0, 0.5])[:d] + 1.0
    y = np.sin(2 * X[:, 0]) + 0.3 * X[:, 1] + 0.1 * rng.standard_normal(n)
    return X, y, rng


def _labels(y, n_classes):
    return np.digitize(y, np.quantile(y, np.arange(1, n_classes) / n_classes))


def _assert_same(a, b, rtol=0.0, names=FITTED):
    """The fitted attributes ``names`` and the chain's history of ``a`` and ``b``: equal bit for bit
    (``rtol=0``) or to ``rtol``; the acceptance history always bit for bit."""
    for name in names + ("validation_errors_", "loo_errors_", "gcv_errors_"):
        got, want = getattr(a, name), getattr(b, name)
        assert (got is None) == (want is None), name
        if want is None:
            continue
        if rtol == 0.0:
            np.testing.assert_array_equal(got, want, err_msg=name)
        else:
            np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol, err_msg=name)
    np.testing.assert_array_equal(a.history_["acceptance"], b.history_["acceptance"])
    if rtol == 0.0:
        np.testing.assert_array_equal(a.history_["proposal_mse"], b.history_["proposal_mse"])
    else:
        np.testing.assert_allclose(a.history_["proposal_mse"], b.history_["proposal_mse"], rtol=rtol)


@pytest.mark.parametrize("make, target", [
    (lambda: AdaptiveRFFRegressor(16, n_iter=5, random_state=0), None),
    (lambda: AdaptiveRFFRegressor(16, n_iter=5, random_state=0, **FIXED, init_scale="median"), None),
    (lambda: AdaptiveRFFClassifier(16, n_iter=5, random_state=0), 3),
], ids=["defaults", "fixed", "classifier"])
def test_equal_weights_fit_the_unweighted_model_bit_for_bit(make, target):
    X, y, _ = _data()
    if target is not None:
        y = _labels(y, target)
    plain = make().fit(X, y)
    for w in (2.5, np.full(X.shape[0], 0.3)):
        weighted = make().fit(X, y, sample_weight=w)
        _assert_same(weighted, plain)
        if target is not None:
            assert weighted.temperature_ == plain.temperature_


@pytest.mark.parametrize("make, target", [
    (lambda: AdaptiveRFFRegressor(16, n_iter=5, random_state=0), None),           # held-out checks, width search
    (lambda: AdaptiveRFFRegressor(16, n_iter=5, random_state=0, early_stopping=False), None),  # final LOO
    (lambda: AdaptiveRFFRegressor(16, n_iter=5, random_state=0, early_stopping=False, final_alpha=None,
                                  alpha=GCV_ALPHAS), None),                         # GCV
    (lambda: AdaptiveRFFClassifier(16, n_iter=5, random_state=0), 2),
], ids=["defaults", "loo", "gcv", "classifier"])
def test_scaled_weights_fit_the_model_of_the_weights(make, target):
    X, y, rng = _data(seed=1)
    if target is not None:
        y = _labels(y, target)
    w = rng.uniform(0.0, 2.0, X.shape[0])
    w[rng.random(X.shape[0]) < 0.15] = 0.0
    base = make().fit(X, y, sample_weight=w)
    # a power of two scales the weights and their mean exactly: the same relative weights
    _assert_same(make().fit(X, y, sample_weight=4.0 * w), base)
    # another factor: the relative weights differ in their last bits, which GCV's lambda of 1e-8
    # amplifies to ~1e-9 in coef_
    _assert_same(make().fit(X, y, sample_weight=3.7e5 * w), base, rtol=1e-7)
    # and the weights matter: another model than the unweighted one
    assert not np.array_equal(make().fit(X, y).coef_, base.coef_)


@pytest.mark.parametrize("make, target", [
    (lambda **kw: AdaptiveRFFRegressor(16, n_iter=6, random_state=0, **FIXED, **kw), None),
    (lambda **kw: AdaptiveRFFRegressor(16, n_iter=6, random_state=0, **FIXED, normalize_y=False, **kw), None),
    (lambda **kw: AdaptiveRFFClassifier(16, n_iter=6, random_state=0, **FIXED, **kw), 3),
], ids=["regressor", "not-normalized", "classifier"])
@pytest.mark.parametrize("init_scale", [0.7, 1.0])
def test_integer_weights_fit_the_model_of_the_repeated_rows(make, target, init_scale):
    """One alpha, no final search, no held-out split, a given standardization and initial scale:
    the weighted sums are those of the repeated rows (divided by the mean positive weight, which
    divides the penalty's ``N`` too), and the random draws do not depend on the row count; rows of
    weight 0 are dropped. (The median heuristic counts each row's *relative* weight as its copies,
    as RFFRidge's does: the median of the repeated rows where the mean positive weight is 1.)"""
    X, y, rng = _data(seed=2)
    if target is not None:
        y = _labels(y, target)
    w = rng.integers(0, 4, X.shape[0])
    weighted = make(init_scale=init_scale).fit(X, y, sample_weight=w)
    repeated = make(init_scale=init_scale).fit(np.repeat(X, w, axis=0), np.repeat(y, w))
    _assert_same(weighted, repeated, rtol=1e-9)


@pytest.mark.parametrize("make, target", [
    (lambda: AdaptiveRFFRegressor(16, n_iter=5, random_state=0), None),
    (lambda: AdaptiveRFFRegressor(16, n_iter=5, random_state=0, early_stopping=False, standardize=True), None),
    (lambda: AdaptiveRFFRegressor(16, n_iter=5, random_state=0, early_stopping=False, standardize=True,
                                  final_alpha=None, alpha=GCV_ALPHAS, init_scale="median"), None),
    (lambda: AdaptiveRFFClassifier(16, n_iter=5, random_state=0, early_stopping=False, standardize=True), 2),
    (lambda: AdaptiveRFFClassifier(16, n_iter=5, random_state=0), 3),
], ids=["defaults", "loo-width-search", "gcv", "classifier", "classifier-defaults"])
def test_a_zero_weight_equals_the_row_dropped(make, target):
    """The standardization probe, the median heuristic, the ranges, the width search's and the
    final exact LOO errors, GCV (its row count is that of the rows of positive weight) and early
    stopping's held-out split (drawn among the rows of positive weight) all leave the rows of zero
    weight out. (More rows than features, so that both fits score LOO from the Gram.)"""
    X, y, rng = _data(n=200, seed=3)
    if target is not None:
        y = _labels(y, target)
    keep = rng.random(X.shape[0]) > 0.2
    X[~keep] *= 50.0  # far away: they would move the standardization, ranges and median were they counted
    weighted = make().fit(X, y, sample_weight=keep.astype(float))
    dropped = make().fit(X[keep], y[keep])
    _assert_same(weighted, dropped, rtol=1e-8)
    for name in ("init_scales_", "init_scale_errors_", "x_min_", "x_max_"):
        a, b = getattr(weighted, name), getattr(dropped, name)
        assert (a is None) == (b is None), name
        if a is not None:
            np.testing.assert_allclose(a, b, rtol=1e-8, err_msg=name)
    if target is not None:
        np.testing.assert_allclose(weighted.temperature_, dropped.temperature_, rtol=1e-6)


@pytest.mark.parametrize("w, error, message", [
    (np.r_[-1.0, np.ones(159)], ValueError, "non-negative"),
    (np.r_[np.nan, np.ones(159)], ValueError, "NaN or infinity"),
    (np.r_[np.inf, np.ones(159)], ValueError, "NaN or infinity"),
    (np.zeros(160), ValueError, "sums to zero"),
    (np.ones(159), ValueError, "one weight per sample"),
    (np.ones((160, 2)), ValueError, "one weight per sample"),
    (np.array(["a"] * 160), TypeError, "numeric"),
], ids=["negative", "nan", "inf", "all-zero", "length", "2-D", "strings"])
@pytest.mark.parametrize("cls", [AdaptiveRFFRegressor, AdaptiveRFFClassifier])
def test_bad_weights_are_refused(cls, w, error, message):
    X, y, _ = _data()
    if cls is AdaptiveRFFClassifier:
        y = _labels(y, 2)
    with pytest.raises(error, match=message):
        cls(8, n_iter=2, random_state=0).fit(X, y, sample_weight=w)


def test_early_stopping_needs_rows_of_positive_weight_on_both_sides():
    """The held-out split is drawn among the rows of positive weight: too few of them to split."""
    X, y, _ = _data()
    w = np.zeros(X.shape[0])
    w[:2] = 1.0
    with pytest.raises(ValueError, match="out of the 2 samples of positive sample_weight"):
        AdaptiveRFFRegressor(8, n_iter=2, random_state=0).fit(X, y, sample_weight=w)
    AdaptiveRFFRegressor(8, n_iter=2, random_state=0, early_stopping=False).fit(X, y, sample_weight=w)
