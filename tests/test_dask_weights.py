"""``sample_weight`` on Dask arrays (issue 41): the distributed RFFRidge, EERF, SRFF and adaptive RFF
fits with weights equal the in-memory fits with the same weights. One setting of each estimator fits
on a loopback LocalCluster of 2 worker processes, the other settings on Dask's synchronous
scheduler (conftest's ``scheduler``: a Dask fit is the same bits on any scheduler, and the
cluster's round trips cost more than these fits). Every wait on the cluster has a time limit.
"""
import numpy as np
import pytest

da = pytest.importorskip("dask.array")
pytest.importorskip("distributed")  # the loopback cluster (conftest.py's client)

from _time_limit import call_with_time_limit  # noqa: E402
from rffkern import (AdaptiveRFFClassifier, AdaptiveRFFRegressor, EERFClassifier, EERFRegressor,  # noqa: E402
                     RFFRidge, RFFRidgeClassifier, SRFFRegressor)

TIMEOUT = 120  # seconds, for every fit
RTOL = 1e-10
RIDGE_FITTED = ("coef_", "intercept_", "alpha_", "length_scale_", "selection_errors_", "width_errors_", "x_mean_",
                "x_scale_", "x_min_", "x_max_")


def _fit(estimator, *args):
    return call_with_time_limit(TIMEOUT, estimator.fit, *args)


def _relative(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    assert a.shape == b.shape
    scale = np.max(np.abs(b[np.isfinite(b)])) if np.isfinite(b).any() else 1.0
    same_inf = np.array_equal(np.isfinite(a), np.isfinite(b)) and np.array_equal(a[~np.isfinite(a)], b[~np.isfinite(b)])
    assert same_inf
    return float(np.max(np.abs(a - b)[np.isfinite(b)], initial=0.0) / max(scale, np.finfo(float).tiny))


def _assert_same(dist, single, names):
    for name in names:
        got, want = getattr(dist, name), getattr(single, name)
        if want is None:
            assert got is None, name
        else:
            assert _relative(got, want) <= RTOL, (name, _relative(got, want))


def _data(n, d, seed=0, noise=0.1):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d)) * np.linspace(1, 30, d) + np.arange(d)
    y = np.sin(2 * X[:, 0]) + (X[:, 1] / 10) ** 2 + noise * rng.standard_normal(n) + 5
    w = rng.uniform(0.0, 3.0, n) * 7.5
    w[rng.random(n) < 0.1] = 0.0  # rows of zero weight: left out of the ranges and the median
    return X, y, w


@pytest.mark.parametrize("scheduler, params", [
    ("cluster", dict(length_scale=3.0, alpha_selection="gcv", alpha=[1e-3, 1e-2, 1e-1])),  # (1e-5: coef_ to 4e-10 only)
    ("sync", dict(length_scale=[1.5, 3.0])),                          # two widths by weighted LOO
    ("sync", dict(standardize="global", length_scale=3.0)),
    ("sync", dict(length_scale="auto", standardize=True)),            # the one-standard-error rule, weighted
], ids=["gcv", "loo-widths", "global", "auto-width"], indirect=["scheduler"])
def test_weighted_ridge_on_dask_equals_in_memory(scheduler, params):
    X, y, w = _data(1500, 5)
    params = {"n_components": 120, "random_state": 0, **params}
    single = RFFRidge(**params).fit(X, y, sample_weight=w)
    dist = _fit(RFFRidge(**params), da.from_array(X, chunks=(400, 5)), da.from_array(y, chunks=400),
                da.from_array(w, chunks=300))  # the weights' own chunks: realigned to X's
    _assert_same(dist, single, RIDGE_FITTED)
    assert dist._stats.weight_unit == pytest.approx(single._stats.weight_unit, rel=1e-12)
    np.testing.assert_allclose(dist.feature_importances_, single.feature_importances_, rtol=1e-8, atol=1e-12)


def test_weighted_ridge_classifier_on_dask_equals_in_memory(client):
    X, y, w = _data(1200, 4, seed=1)
    labels = np.array(["a", "b", "c"])[np.digitize(y, np.quantile(y, [1 / 3, 2 / 3]))]
    params = dict(n_components=100, length_scale=2.0, random_state=0)
    single = RFFRidgeClassifier(**params).fit(X, labels, sample_weight=w)
    dist = _fit(RFFRidgeClassifier(**params), da.from_array(X, chunks=(350, 4)), labels, w)  # NumPy weights
    _assert_same(dist, single, ("coef_", "intercept_", "alpha_", "x_mean_", "x_scale_"))
    np.testing.assert_allclose(dist.predict_proba(X), single.predict_proba(X), rtol=1e-8)


@pytest.mark.parametrize("w, message", [
    (np.r_[-1.0, np.ones(299)], "non-negative"),
    (np.r_[np.nan, np.ones(299)], "NaN or infinity"),
    (np.zeros(300), "sums to zero"),
    (np.ones(299), "samples but sample_weight has"),
    (np.ones((300, 2)), "one weight per sample"),
])
def test_bad_weights_on_dask_are_refused(client, w, message):
    X, y, _ = _data(300, 3)
    with pytest.raises(ValueError, match=message):
        _fit(RFFRidge(20, length_scale=1.0), da.from_array(X, chunks=(100, 3)), y, w)


SRFF_FITTED = ("gamma_", "coef_", "intercept_", "alpha_", "alphas_", "objective_", "length_scale_", "y_mean_",
               "y_scale_", "x_mean_", "x_scale_", "x_min_", "x_max_", "refit_alpha_")


def _assert_same_srff(dist, single):
    _assert_same(dist, single, SRFF_FITTED)
    assert (dist.n_iter_, dist.n_outer_iter_total_) == (single.n_iter_, single.n_outer_iter_total_)
    if single.validation_errors_ is None:
        assert dist.validation_errors_ is None
        return
    assert dist.path_start_ == single.path_start_
    skipped = np.isnan(single.validation_errors_)  # lambdas the path did not reach
    np.testing.assert_array_equal(np.isnan(dist.validation_errors_), skipped)
    assert _relative(dist.validation_errors_[~skipped], single.validation_errors_[~skipped]) <= RTOL


@pytest.mark.parametrize("params", [
    dict(alpha=1e-3, max_iter=3, max_inner_iter=4),
    dict(alpha=1e-3, max_iter=2, max_inner_iter=3, length_scale="knn"),              # the weighted k-NN width
    dict(alpha=[1e-2, 1e-3, 1e-4], max_iter=3, max_inner_iter=3),                     # the path, held-out split
], ids=["one-lambda", "knn-width", "path"])
def test_weighted_srff_on_dask_equals_in_memory(synchronous, params):
    # (SRFF's weighted fit on the cluster: the path with the closing ridge, below)
    _weighted_srff_equals_in_memory(params)


def test_weighted_srff_default_grid_on_dask_equals_in_memory(synchronous):
    # the default grid with refit: ~200 passes (on the cluster, 18 s of round trips)
    _weighted_srff_equals_in_memory(dict(max_iter=2, max_inner_iter=2, n_iter_no_change=1, refit=True,
                                         normalize_y=False))


def _weighted_srff_equals_in_memory(params):
    X, y, w = _data(1500, 5)
    params = {"n_components": 30, "random_state": 0, "refit_components": None, **params}
    single = SRFFRegressor(**params).fit(X, y, sample_weight=w)
    dist = _fit(SRFFRegressor(**params), da.from_array(X, chunks=(400, 5)), da.from_array(y, chunks=400),
                da.from_array(w, chunks=300))  # the weights' own chunks: realigned to X's
    _assert_same_srff(dist, single)


def test_weighted_srff_closing_ridge_on_dask_equals_in_memory(client):  # (on the cluster)
    # y's noise keeps the closing ridge's leave-one-out penalty away from 1e-8, where its 1000
    # features amplify the round-off of the chunked sums (1e-8 relative in coef_ at 0.1 noise)
    X, y, w = _data(1200, 4, seed=2, noise=1.0)
    params = dict(n_components=30, alpha=[1e-2, 1e-4], max_iter=2, max_inner_iter=3, refit=True, random_state=0)
    single = SRFFRegressor(**params).fit(X, y, sample_weight=w)
    dist = _fit(SRFFRegressor(**params), da.from_array(X, chunks=(350, 4)), da.from_array(y, chunks=350), w)
    assert single.coef_.shape == (1000,) and single.refit_alpha_ is not None
    _assert_same_srff(dist, single)
    assert _relative(dist.predict(X), single.predict(X)) <= RTOL


# -- EERF -------------------------------------------------------------------------------------------

EERF_FITTED = ("weights_", "offsets_", "scores_", "coef_", "intercept_", "alpha_", "selection_errors_", "width_errors_",
               "length_scale_", "n_subsample_", "n_candidates_", "x_mean_", "x_scale_", "x_min_", "x_max_", "scale_")


def _assert_same_eerf(dist, single, names):
    _assert_same(dist, single, names)
    assert dist.widths_ == single.widths_ or np.allclose(dist.widths_, single.widths_, rtol=RTOL, atol=0)
    assert dist.standardize_ == single.standardize_


@pytest.mark.parametrize("scheduler, n, params", [
    ("cluster", 1500, dict()),                                    # k-NN widths searched by weighted LOO
    ("sync", 2600, dict(length_scale="knn", n_subsample=2300)),   # the weighted rule on 2000 of the scoring rows
    ("sync", 1500, dict(length_scale=2.0, alpha_selection="validation", alpha=[1e-3, 1e-2, 1e-1, 1.0])),
    ("sync", 1500, dict(kernel="arccos1", alpha=[1e-3, 1e-1], alpha_selection="gcv", normalize_y=False)),
    ("sync", 1500, dict(kernel="linear", n_components=3, standardize="global")),
], ids=["auto", "knn-subsample", "validation", "arccos1", "linear"], indirect=["scheduler"])
def test_weighted_eerf_regressor_on_dask_equals_in_memory(scheduler, n, params):
    X, y, w = _data(n, 5, seed=3)
    params = {"n_components": 25, "random_state": 0, **params}
    single = EERFRegressor(**params).fit(X, y, sample_weight=w)
    dist = _fit(EERFRegressor(**params), da.from_array(X, chunks=(400, 5)), da.from_array(y, chunks=400),
                da.from_array(w, chunks=350))  # the weights' own chunks: realigned to X's
    names = EERF_FITTED + ("y_mean_", "y_scale_") + (("support_",) if params.get("kernel") == "linear" else ())
    _assert_same_eerf(dist, single, names)
    assert single.n_subsample_ == min(params.get("n_subsample", 1000), int((w > 0).sum()))  # zero weights: not scored
    np.testing.assert_allclose(dist.predict(X), single.predict(X), rtol=RTOL, atol=RTOL * 10)
    if params.get("kernel") != "linear":  # (the weights change the model: the test compares weighted fits)
        assert _relative(EERFRegressor(**params).fit(X, y).scores_, single.scores_) > 1e-3


@pytest.mark.parametrize("scheduler, n_classes", [("sync", 2), ("cluster", 3)], ids=["2", "3"], indirect=["scheduler"])
def test_weighted_eerf_classifier_on_dask_equals_in_memory(scheduler, n_classes):
    X, y, w = _data(1400, 4, seed=4)
    cuts = np.quantile(y, [1 / 2] if n_classes == 2 else [1 / 3, 2 / 3])
    labels = np.array(["a", "b", "c"])[np.digitize(y, cuts)]
    params = dict(n_components=20, random_state=0, alpha=[1e-3, 1e-2, 1e-1, 1.0])
    single = EERFClassifier(**params).fit(X, labels, sample_weight=w)
    dist = _fit(EERFClassifier(**params), da.from_array(X, chunks=(300, 4)), da.from_array(labels, chunks=500),
                w)  # NumPy weights
    np.testing.assert_array_equal(dist.classes_, single.classes_)
    _assert_same_eerf(dist, single, EERF_FITTED)
    assert _relative(dist.temperature_, single.temperature_) <= 1e-8
    np.testing.assert_allclose(dist.predict_proba(X), single.predict_proba(X), rtol=1e-8, atol=1e-12)


def test_eerf_logistic_stays_refused_on_dask_with_weights(client):
    X, y, w = _data(300, 3)
    with pytest.raises(ValueError, match="solver='logistic' is not supported on Dask"):
        _fit(EERFClassifier(10, solver="logistic"), da.from_array(X, chunks=(100, 3)), y > 5, w)
    with pytest.raises(ValueError, match="non-negative"):
        _fit(EERFRegressor(10), da.from_array(X, chunks=(100, 3)), y, -w)


# -- adaptive RFF -----------------------------------------------------------------------------------

ADAPTIVE_FITTED = ("frequencies_", "coef_", "amplitudes_", "alpha_", "init_scale_", "init_scales_",
                   "init_scale_errors_", "validation_errors_", "gcv_errors_", "loo_errors_", "best_iteration_",
                   "proposal_covariance_", "x_mean_", "x_scale_", "x_min_", "x_max_", "y_mean_")


def _assert_same_chain(dist, single):
    _assert_same(dist, single, ADAPTIVE_FITTED)
    np.testing.assert_array_equal(dist.history_["acceptance"], single.history_["acceptance"])
    assert _relative(dist.history_["proposal_mse"], single.history_["proposal_mse"]) <= RTOL
    assert dist.history_["n_resamples"] == single.history_["n_resamples"]


# The final_alpha grid stops at 1e-5: at FINAL_ALPHAS' 1e-8 (3e-8 chosen on a classifier here) the
# solve's conditioning turns the order of the chunk sums into 1e-10 relative in coef_
# (test_dask_fits.py holds the unweighted fits at the full grid to 1e-8).
FINALS = (1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1.0)


@pytest.mark.parametrize("scheduler, params", [
    ("cluster", dict(final_alpha=FINALS)),                       # probe, width search, held-out checks
    ("sync", dict(early_stopping=False, final_alpha=FINALS)),    # exact LOO over final_alpha
    ("sync", dict(early_stopping=False, final_alpha=None, alpha=[1e-3, 1e-2, 1e-1], normalize_y=False,
                  init_scale="median")),                         # GCV at the first and the last frequencies
    ("sync", dict(early_stopping=False, final_alpha=None, resample=True, resample_threshold=0.95, init_scale=1.0)),
], ids=["default", "loo", "gcv", "resample"], indirect=["scheduler"])
def test_weighted_adaptive_on_dask_equals_in_memory(scheduler, params):
    X, y, w = _data(1500, 4, seed=3)
    params = {"n_components": 12, "n_iter": 4, "random_state": 0, **params}
    single = AdaptiveRFFRegressor(**params).fit(X, y, sample_weight=w)
    dist = _fit(AdaptiveRFFRegressor(**params), da.from_array(X, chunks=(400, 4)), da.from_array(y, chunks=400),
                da.from_array(w, chunks=300))  # the weights' own chunks: realigned to X's
    _assert_same_chain(dist, single)
    _assert_same(dist, single, ("y_scale_",))
    assert not np.array_equal(single.coef_, AdaptiveRFFRegressor(**params).fit(X, y).coef_)  # the weights count


@pytest.mark.parametrize("scheduler, n_classes", [("sync", 2), ("cluster", 3)], ids=["2", "3"], indirect=["scheduler"])
def test_weighted_adaptive_classifier_on_dask_equals_in_memory(scheduler, n_classes):
    X, y, w = _data(1200, 4, seed=4)
    labels = np.digitize(y, np.quantile(y, np.arange(1, n_classes) / n_classes))
    params = dict(n_components=10, n_iter=3, random_state=1, final_alpha=FINALS)
    single = AdaptiveRFFClassifier(**params).fit(X, labels, sample_weight=w)
    dist = _fit(AdaptiveRFFClassifier(**params), da.from_array(X, chunks=(350, 4)), labels, w)  # NumPy weights
    np.testing.assert_array_equal(dist.classes_, single.classes_)
    _assert_same_chain(dist, single)
    assert _relative(dist.temperature_, single.temperature_) <= RTOL
    np.testing.assert_allclose(dist.predict_proba(X), single.predict_proba(X), rtol=1e-9)


@pytest.mark.parametrize("w, message", [
    (np.r_[-1.0, np.ones(299)], "non-negative"),
    (np.zeros(300), "sums to zero"),
    (np.ones(299), "samples but sample_weight has"),
])
def test_bad_weights_on_dask_are_refused_by_adaptive_rff(client, w, message):
    X, y, _ = _data(300, 3)
    with pytest.raises(ValueError, match=message):
        _fit(AdaptiveRFFRegressor(8, n_iter=2), da.from_array(X, chunks=(100, 3)), y, w)


# -- any estimator ----------------------------------------------------------------------------------

@pytest.mark.parametrize("make", [
    lambda: RFFRidge(80, length_scale=2.0, random_state=0),
    lambda: EERFRegressor(15, length_scale=2.0, random_state=0),
    lambda: SRFFRegressor(20, alpha=[1e-2, 1e-3], max_iter=2, max_inner_iter=2, refit_components=None,
                          random_state=0),
    lambda: AdaptiveRFFRegressor(8, n_iter=3, random_state=0),
], ids=["ridge", "eerf", "srff", "adaptive"])
def test_equal_or_scaled_weights_on_dask_fit_the_unweighted_model(synchronous, make):
    """Weights are relative: one weight for every row (a scalar) fits the unweighted model, bit for
    bit, and weights times a power of two the model of the weights."""
    X, y, w = _data(900, 3, seed=5)
    Xd = da.from_array(X, chunks=(300, 3))
    plain, equal = _fit(make(), Xd, y), _fit(make(), Xd, y, 4.0)
    weighted, scaled = _fit(make(), Xd, y, w), _fit(make(), Xd, y, da.from_array(8.0 * w, chunks=250))
    np.testing.assert_array_equal(equal.coef_, plain.coef_)
    np.testing.assert_array_equal(scaled.coef_, weighted.coef_)
    assert not np.array_equal(weighted.coef_, plain.coef_)
