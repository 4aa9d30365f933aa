"""Hostile parameters and data for the feature maps and the data-dependent estimators: every bad
parameter is refused at fit with the parameter named, sizes beyond memory fail at once, and targets
or inputs near the float limits give a clear error or correct results, never a silent NaN."""
import time

import numpy as np
import pytest
from sklearn.base import clone

from rffkern import (AdaptiveRFFClassifier, AdaptiveRFFRegressor, EERFClassifier, EERFRegressor, Fastfood,
                     OrthogonalRandomFeatures, RandomFourierFeatures, RFFNetClassifier, RFFNetRegressor, RFFRidge,
                     RFFRidgeClassifier, SRFFRegressor, StructuredOrthogonalFeatures)
from rffkern._constraints import IntInterval
from rffkern._linalg import simplex_projection
from rffkern.datasets import make_gse1

TRANSFORMERS = [RandomFourierFeatures(16, random_state=0), Fastfood(16, random_state=0),
                StructuredOrthogonalFeatures(16, random_state=0), OrthogonalRandomFeatures(16, random_state=0)]
REGRESSORS = [RFFRidge(16, random_state=0), SRFFRegressor(8, alpha=0.1, max_iter=3, random_state=0),
              EERFRegressor(8, random_state=0), AdaptiveRFFRegressor(8, n_iter=3, random_state=0)]
CLASSIFIERS = [RFFRidgeClassifier(16, random_state=0), EERFClassifier(8, random_state=0),
               AdaptiveRFFClassifier(8, n_iter=3, random_state=0)]
ALL = TRANSFORMERS + REGRESSORS + CLASSIFIERS


def _name(est):
    return type(est).__name__


def _data(n=120):
    X, y, _ = make_gse1(n, random_state=0)
    return X, y


def _fit(est, X, y):
    if est in TRANSFORMERS:
        return est.fit(X)
    if est in CLASSIFIERS or _name(est).endswith("Classifier"):
        return est.fit(X, (y > np.median(y)).astype(int))
    return est.fit(X, y)


@pytest.mark.parametrize("est", ALL, ids=_name)
def test_n_jobs_zero_is_refused_at_fit(est):
    X, y = _data()
    with pytest.raises(ValueError, match=r"'n_jobs' parameter .*n_jobs == 0"):
        _fit(clone(est).set_params(n_jobs=0), X, y)
    _fit(clone(est).set_params(n_jobs=-1), X, y)


def _integer_parameters(est):
    return [name for name, constraints in est._parameter_constraints.items()
            if any(isinstance(c, IntInterval) for c in constraints)]


@pytest.mark.parametrize("est", ALL, ids=_name)
def test_bools_are_refused_for_integer_parameters_with_the_parameter_named(est):
    X, y = _data()
    names = _integer_parameters(est)
    assert "n_components" in names and "n_jobs" in names
    for name in names:
        for flag in (True, False, np.True_):
            with pytest.raises(ValueError, match=rf"'{name}' parameter of {_name(est)} must be .* Got"):
                _fit(clone(est).set_params(**{name: flag}), X, y)


@pytest.mark.parametrize("est", [e for e in ALL if "alpha" in e.get_params()], ids=_name)
@pytest.mark.parametrize("alpha", [[], [0.1, -1.0], [0.1, np.nan], [[0.1, 1.0]], ["a", "b"], [0.1, np.inf]])
def test_bad_alpha_lists_are_refused_with_the_parameter_named(est, alpha):
    X, y = _data()
    with pytest.raises(ValueError, match=r"'alpha' parameter"):
        _fit(clone(est).set_params(alpha=alpha), X, y)


@pytest.mark.parametrize("est", TRANSFORMERS, ids=_name)
def test_sizes_beyond_memory_fail_at_once(est):
    """ORF used to draw QR blocks for minutes before running out; every map now refuses at once."""
    X = np.random.default_rng(0).normal(size=(4, 64))
    t0 = time.perf_counter()
    with pytest.raises(MemoryError):
        clone(est).set_params(n_components=10**12).fit(X)
    assert time.perf_counter() - t0 < 10


def test_orthogonal_random_features_refuse_1e9_components_at_once():
    X = np.random.default_rng(0).normal(size=(4, 64))  # 64 x 1e9 float64: 512 GB
    t0 = time.perf_counter()
    with pytest.raises(MemoryError):
        OrthogonalRandomFeatures(n_components=10**9, random_state=0).fit(X)
    assert time.perf_counter() - t0 < 10


def test_srff_refuses_targets_whose_squares_overflow():
    X, y = _data()
    with pytest.raises(ValueError, match="y is too large in magnitude"):
        SRFFRegressor(8, max_iter=3, normalize_y=False, random_state=0).fit(X, y * 1e300)
    # the default scales the targets first, so the same y fits
    pred = SRFFRegressor(8, max_iter=3, random_state=0).fit(X, y * 1e300).predict(X)
    assert np.isfinite(pred).all()


def test_srff_with_large_but_finite_squares_gives_finite_predictions():
    """y * 1e150: the gamma step's input reaches 1e300, where the simplex projection's threshold
    search used to find no index (IndexError)."""
    X, y = _data()
    pred = SRFFRegressor(8, max_iter=3, random_state=0).fit(X, y * 1e150).predict(X)
    assert np.isfinite(pred).all()


def test_simplex_projection_of_huge_vectors():
    np.testing.assert_array_equal(simplex_projection(np.array([1e302, 3e301, -1e302]), 5.0), [5.0, 0.0, 0.0])
    with pytest.raises(ValueError, match="NaN or infinity"):
        simplex_projection(np.array([1.0, np.inf]), 1.0)


@pytest.mark.parametrize("est", [AdaptiveRFFRegressor(8, n_iter=3, random_state=0, n_jobs=1),
                                 EERFRegressor(8, random_state=0, n_jobs=1),
                                 RFFRidge(16, random_state=0, n_jobs=1)], ids=_name)
def test_targets_near_the_float_limit_give_scaled_predictions(est):
    """y * 1e300: the adaptive sampler's target standard deviation used to overflow (all-NaN
    predictions); the fit on y * 2^k is now the fit on y times 2^k, bit for bit."""
    X, y = _data()
    scale = 2.0**997
    plain = clone(est).fit(X, y).predict(X)
    big = clone(est).fit(X, y * scale).predict(X)
    assert np.isfinite(big).all()
    np.testing.assert_array_equal(big / scale, plain)
    big = clone(est).fit(X, y * 1e300).predict(X)
    np.testing.assert_allclose(big / 1e300, plain, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("Est", [RFFRidge, EERFRegressor])
@pytest.mark.parametrize("selection", ["loo", "gcv", "validation"])
def test_alpha_selection_with_targets_near_the_float_limit(Est, selection):
    """The selection errors of y * 1e300 overflow (they are reported as inf), but the alpha is
    chosen on exactly scaled targets: the same alpha and the same model as for y."""
    X, y = _data(200)
    kw = dict(alpha=[1e-3, 1e-1, 10.0], alpha_selection=selection, random_state=0, n_jobs=1)
    plain = Est(16, **kw).fit(X, y)
    big = Est(16, **kw).fit(X, y * 2.0**997)
    assert big.alpha_ == plain.alpha_
    assert not np.isnan(big.selection_errors_).any()
    np.testing.assert_array_equal(big.predict(X) / 2.0**997, plain.predict(X))


def test_ridge_partial_fit_with_targets_near_the_float_limit():
    X, y = _data(200)
    kw = dict(alpha=[1e-3, 1e-1, 10.0], alpha_selection="gcv", random_state=0, n_jobs=1)
    plain, big = RFFRidge(16, **kw), RFFRidge(16, **kw)
    for rows in (slice(0, 100), slice(100, 200)):
        plain.partial_fit(X[rows], y[rows])
        big.partial_fit(X[rows], y[rows] * 1e300)
    assert big.alpha_ == plain.alpha_
    assert not np.isnan(big.selection_errors_).any()
    np.testing.assert_allclose(big.predict(X) / 1e300, plain.predict(X), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("est", [SRFFRegressor(8, alpha=0.1, max_iter=3, random_state=0, n_jobs=1),
                                 EERFRegressor(8, random_state=0, n_jobs=1),
                                 AdaptiveRFFRegressor(8, n_iter=3, random_state=0, n_jobs=1),
                                 AdaptiveRFFClassifier(8, n_iter=3, random_state=0, n_jobs=1),
                                 EERFClassifier(8, random_state=0, n_jobs=1)], ids=_name)
def test_inputs_near_the_float_limit_are_standardised(est):
    """X * 2^997: the column standard deviations used to overflow to inf, so the standardised X was
    all zeros and the model constant; they are now computed on power-of-two-scaled columns."""
    X, y = _data()
    if _name(est).endswith("Classifier"):
        y = (y > np.median(y)).astype(int)
    scale = 2.0**997
    plain = clone(est).fit(X, y)
    big = clone(est).fit(X * scale, y)
    np.testing.assert_array_equal(big.x_scale_ / scale, plain.x_scale_)
    np.testing.assert_array_equal(big.predict(X * scale), plain.predict(X))


@pytest.mark.parametrize("est", REGRESSORS, ids=_name)
def test_no_silent_nan_for_inputs_near_the_float_limit(est):
    X, y = _data()
    pred = clone(est).fit(X * 1e300, y).predict(X * 1e300)
    assert np.isfinite(pred).all()


# every estimator that takes sample_weight
WEIGHTED = [RFFRidge(16, random_state=0, n_jobs=1), RFFRidgeClassifier(16, random_state=0, n_jobs=1),
            EERFRegressor(8, random_state=0, n_jobs=1), EERFClassifier(8, random_state=0, n_jobs=1),
            SRFFRegressor(8, max_iter=3, random_state=0, n_jobs=1),
            AdaptiveRFFRegressor(8, n_iter=3, random_state=0, n_jobs=1),
            AdaptiveRFFClassifier(8, n_iter=3, random_state=0, n_jobs=1),
            RFFNetRegressor(8, max_iter=3, random_state=0, n_jobs=1),
            RFFNetClassifier(8, max_iter=3, random_state=0, n_jobs=1)]


def _outputs(model, X):
    for method in ("decision_function", "predict_proba", "predict"):
        if hasattr(model, method):
            return getattr(model, method)(X)


@pytest.mark.parametrize("est", WEIGHTED, ids=_name)
def test_the_units_of_the_weights_do_not_change_the_model(est):
    """Weights c w fit the model of w, and equal weights of any value the model of none: weights of
    1e-20 used to fit RFFRidge at the penalty grid's floor (training R^2 0.00), weights x1e20 moved
    the predictions by up to 3 sd of y, and weights near 1e160 failed with "cannot convert float
    NaN to integer"."""
    X, y = _data()
    if _name(est).endswith("Classifier"):
        y = (y > np.median(y)).astype(int)
    w = np.random.default_rng(1).uniform(0.2, 3.0, len(y))
    base = _outputs(clone(est).fit(X, y, sample_weight=w), X)
    for c in (1e-20, 3.0, 1e20, 1e160):
        scaled = _outputs(clone(est).fit(X, y, sample_weight=c * w), X)
        np.testing.assert_allclose(scaled, base, rtol=1e-7, atol=1e-9 * np.abs(base).max(), err_msg=f"c={c}")
    plain = _outputs(clone(est).fit(X, y), X)
    for value in (1e-20, 3.0, 1e160):
        np.testing.assert_array_equal(_outputs(clone(est).fit(X, y, sample_weight=np.full(len(y), value)), X), plain)


@pytest.mark.parametrize("est", [RFFRidge(16, alpha=[1e-3, 1e-1, 10.0], alpha_selection="gcv", random_state=0,
                                          n_jobs=1),
                                 RFFRidgeClassifier(16, random_state=0, n_jobs=1),
                                 RFFNetRegressor(8, random_state=0, n_jobs=1)], ids=_name)
def test_partial_fit_weights_are_relative_to_the_first_chunk(est):
    """The first chunk's mean weight is the unit of every chunk's weights: chunks weighted c w fit
    the model of w."""
    X, y = _data(200)
    kw = {}
    if _name(est).endswith("Classifier"):
        y, kw = (y > np.median(y)).astype(int), {"classes": [0, 1]}
    w = np.random.default_rng(1).uniform(0.2, 3.0, len(y))
    fits = []
    for c in (1.0, 1e-20, 1e20):
        model = clone(est)
        for rows in (slice(0, 120), slice(120, 200)):
            model.partial_fit(X[rows], y[rows], sample_weight=c * w[rows], **kw)
        fits.append(_outputs(model, X))
    for scaled in fits[1:]:
        np.testing.assert_allclose(scaled, fits[0], rtol=1e-7, atol=1e-9 * np.abs(fits[0]).max())


@pytest.mark.parametrize("Est", [RFFRidge, EERFRegressor], ids=lambda c: c.__name__)
def test_float32_rows_choose_a_penalty_their_gram_resolves(Est):
    """Penalties below float32's resolution of the Gram (eps times its trace) are not searched: on
    500 noise-free rows in float32 both chose alpha 1e-8 and scored a test R^2 of 0.37 (RFFRidge)
    and -8.4 (EERFRegressor) where float64 scored 0.998 and 0.9999. float64 rows search every
    penalty of the default grid."""
    from rffkern.datasets import make_jse3

    X, y, _ = make_jse3(1500, noise=0.0, random_state=2)
    X32 = X.astype(np.float32)
    model = Est(random_state=0, n_jobs=1).fit(X32[:500], y[:500])
    # (the floor: eps * trace ~ 1.2e-7 * 500, the trace near the row count for these feature maps)
    assert model.alpha_ > 1e-5
    assert model.score(X32[500:], y[500:]) > 0.99
    assert Est(random_state=0, n_jobs=1).fit(X[:500], y[:500]).alpha_ < 1e-5


def test_resolved_penalties():
    from rffkern._ridge_solvers import GramStats, resolved_alphas

    for dtype, first in ((np.float32, 8), (np.float64, 0)):  # (float32: from 1e-4 > 6e-5)
        stats = GramStats(4, 1, dtype)
        stats.G[...] = np.diag([300.0, 100.0, 50.0, 50.0])  # trace 500
        resolved = resolved_alphas(list(np.logspace(-8, 3, 23)), stats)
        assert resolved.tolist() == [False] * first + [True] * (23 - first)
    assert resolved_alphas([1e-9, 1e-8], GramStats(4, 1, np.float32)).tolist() == [True, True]  # (an empty Gram)
    stats.G[...] = np.eye(4) * 1e12
    assert resolved_alphas([1e-9, 1e-8], stats).tolist() == [False, True]  # none resolved: the largest


PARTIAL = [RFFRidge(16, random_state=0, n_jobs=1), RFFRidgeClassifier(16, random_state=0, n_jobs=1),
           RFFNetRegressor(8, random_state=0, n_jobs=1), RFFNetClassifier(8, random_state=0, n_jobs=1)]


def _partial_fit(model, X, y, **kw):
    if _name(model).endswith("Classifier"):
        kw.setdefault("classes", [0, 1])
    return model.partial_fit(X, y, **kw)


@pytest.mark.parametrize("est", PARTIAL, ids=_name)
def test_a_first_partial_fit_chunk_too_small_for_its_statistics_is_refused(est):
    """The first chunk fixes the standardization, the target scale and the width for good: one
    row left RFFNetRegressor at a test R^2 of 0.01 after 20 passes over 400 rows (fit: 0.99), silently."""
    from rffkern._data import MIN_FIRST_CHUNK_ROWS

    X, y = _data()
    if _name(est).endswith("Classifier"):
        y = (y > np.median(y)).astype(int)
    few = MIN_FIRST_CHUNK_ROWS - 1
    with pytest.raises(ValueError, match=rf"first chunk has {few} row\(s\); it needs at least "
                                         rf"{MIN_FIRST_CHUNK_ROWS}.*fit\(X, y\) on the rows at hand"):
        _partial_fit(clone(est), X[:few], y[:few])
    w = np.r_[np.zeros(5), np.ones(len(y) - 5)]
    with pytest.raises(ValueError, match=rf"has {few - 5} row\(s\) of positive weight"):
        _partial_fit(clone(est), X[:few], y[:few], sample_weight=w[:few])
    model = _partial_fit(clone(est), X[:MIN_FIRST_CHUNK_ROWS], y[:MIN_FIRST_CHUNK_ROWS])
    _partial_fit(model, X[:1], y[:1])  # (later chunks: any size)
    fitted = clone(est).fit(X, y)
    _partial_fit(fitted, X[:1], y[:1])  # (after fit: fit's statistics)


@pytest.mark.parametrize("est", PARTIAL, ids=_name)
def test_an_input_constant_on_the_first_chunk_only_is_named_once(est):
    import warnings

    X, y = _data()
    if _name(est).endswith("Classifier"):
        y = (y > np.median(y)).astype(int)
    X = X.copy()
    X[:40, 1] = 0.5
    model = _partial_fit(clone(est), X[:40], y[:40])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _partial_fit(model, X[:40], y[:40])  # still constant: nothing to say
    with pytest.warns(UserWarning, match=r"input\(s\) \[1\] vary in this chunk but were constant on the first "
                                         r"chunk.*raw units") as record:
        _partial_fit(model, X[40:80], y[40:80])
    assert record[0].filename == __file__  # (the caller's line)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _partial_fit(model, X[80:], y[80:])  # named once


@pytest.mark.parametrize("est", REGRESSORS + CLASSIFIERS + [RFFNetRegressor(8, max_iter=2, random_state=0, n_jobs=1),
                                                            RFFNetClassifier(8, max_iter=2, random_state=0, n_jobs=1)],
                         ids=_name)
def test_inputs_beyond_what_the_standardization_represents_are_named_as_such(est):
    """Fitted on inputs near 1e308, -1.5e308 standardizes beyond the float range: that is what the
    error says (it said "X contains NaN or infinity", the overflowed result's check). With
    robust_inputs (the default) the row is clipped to the training range first and answered."""
    X = np.random.default_rng(0).uniform(0.5, 1.0, (60, 2)) * 1e308
    y = np.sin(X[:, 0] / 1e308)
    far = np.full((3, 2), -1.5e308)
    assert np.isfinite(_fit(clone(est), X, y).predict(far)).all()
    model = _fit(clone(est).set_params(robust_inputs=False), X, y)
    with pytest.raises(ValueError, match=r"X holds values too large for this model: standardized .* exceeds the "
                                         r"largest float"):
        model.predict(far)
    assert np.isfinite(model.predict(X)).all()


@pytest.mark.parametrize("est", ALL + [RFFNetRegressor(8, random_state=0), RFFNetClassifier(8, random_state=0)],
                         ids=_name)
def test_a_feature_count_beyond_any_memory_is_refused_with_the_parameter_named(est):
    """n_components=2**63 failed with NumPy's "Maximum allowed dimension exceeded"."""
    import rffkern

    X, y = _data()
    with pytest.raises(ValueError, match=r"'n_components' parameter of \w+ must be an int in the range \[1, "):
        _fit(clone(est).set_params(n_components=2**63), X, y)
    if "n_candidates" in est.get_params():
        with pytest.raises(ValueError, match=r"'n_candidates' parameter"):
            _fit(clone(est).set_params(n_candidates=2**63), X, y)
    if isinstance(est, RFFNetRegressor):
        with pytest.raises(ValueError, match=r"'n_components' parameter"):
            rffkern.fit(X, y, n_components=2**63)


@pytest.mark.parametrize("est", CLASSIFIERS + [RFFNetClassifier(8, max_iter=2, random_state=0)], ids=_name)
def test_labels_mixing_text_and_numbers_are_refused_with_the_way_out(est):
    """y = [1, 'a', 2, ...] as an object array: scikit-learn's check called it an "unknown label type"
    and suggested "a regression target with continuous values"."""
    X, _ = _data(60)
    y = np.array([1, "a", 2] * 20, dtype=object)
    match = r"y mixes text and other labels \(e.g. 'a' and 1\); give every class label one type, e.g. y.astype\(str\)"
    with pytest.raises(ValueError, match=match):
        clone(est).fit(X, y)
    if hasattr(est, "partial_fit"):
        with pytest.raises(ValueError, match=match):
            clone(est).partial_fit(X, y, classes=np.array([1, "a", 2], dtype=object))
    clone(est).fit(X, y.astype(str))
