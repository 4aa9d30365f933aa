"""Exact distributed fits of EERF, SRFF and adaptive RFF on Dask arrays (issue 11).

Every fit on a row-chunked Dask array (uneven chunks) is compared with the single-machine fit of
the same data: every fitted array to 1e-10 relative in float64, every discrete choice (kept
features, alpha, path start, accepted proposals) equal. One setting of each estimator fits on a
loopback LocalCluster of 2 worker processes, the other settings on Dask's synchronous scheduler
(conftest's ``scheduler``: a Dask fit is the same bits on any scheduler, and the cluster's round
trips, ~90 ms a pass on the 2-core test machine, cost more than these fits). Every wait on the
cluster has a time limit.
"""
import numpy as np
import pytest

da = pytest.importorskip("dask.array")
pytest.importorskip("distributed")  # the loopback cluster (conftest.py's client)

from _time_limit import call_with_time_limit  # noqa: E402
from rffkern import EERFClassifier, EERFRegressor, SRFFRegressor  # noqa: E402
from rffkern._selection import EXTENDED_WIDTH_FACTORS as WIDTH_FACTORS  # noqa: E402
from rffkern.adaptive import (FINAL_ALPHAS, GCV_ALPHAS, AdaptiveRFFClassifier,  # noqa: E402
                              AdaptiveRFFRegressor)

TIMEOUT = 120  # seconds, for every fit / compute
RTOL = 1e-10


def _fit(estimator, X, y):
    """``estimator.fit(X, y)`` with a time limit (the fit computes on the cluster itself)."""
    return call_with_time_limit(TIMEOUT, estimator.fit, X, y)


def _relative(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    assert a.shape == b.shape
    if not b.size:
        return 0.0
    return float(np.max(np.abs(a - b)) / max(np.max(np.abs(b)), np.finfo(float).tiny))


def _assert_same(dist, single, names, rtol=None):
    rtol = RTOL if rtol is None else rtol
    for name in names:
        got, want = getattr(dist, name), getattr(single, name)
        if want is None:
            assert got is None, name
        elif isinstance(want, (str, bool, np.integer, int)) and not isinstance(want, float):
            assert got == want, name
        else:
            assert _relative(got, want) <= rtol, (name, _relative(got, want))


def _data(n, d, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d)) * np.linspace(1, 30, d) + np.arange(d)  # uneven column scales
    y = np.sin(2 * X[:, 0]) + (X[:, 1] / 10) ** 2 + 0.1 * rng.standard_normal(n) + 5
    return X, y


def _dask(X, rows=700):
    return da.from_array(X, chunks=(rows,) + X.shape[1:])


X_E, Y_E = _data(3000, 6)
LABELS_3 = np.array(["a", "b", "c"])[np.digitize(Y_E, np.quantile(Y_E, [1 / 3, 2 / 3]))]

EERF_FITTED = ("weights_", "offsets_", "scores_", "coef_", "intercept_", "alpha_", "selection_errors_", "width_errors_",
               "length_scale_", "n_subsample_", "n_candidates_", "x_mean_", "x_scale_", "scale_")


@pytest.mark.parametrize("scheduler, params, passes", [
    # passes per width: scores, Gram (+ LOO or held-out errors); plus one for the statistics
    ("cluster", dict(), 3),                                              # k-NN widths, 10 % scoring rows, LOO
    ("sync", dict(alpha_selection="gcv", n_subsample=2500), 2),          # > 2000 scoring rows: k-NN subsample
    ("sync", dict(alpha_selection="validation", normalize_y=False), 3),  # the held-out split
    ("sync", dict(length_scale="knn"), 3),                               # the paper's single k-NN width
    ("sync", dict(kernel="arccos1", alpha=0.1), 2),
    ("sync", dict(kernel="linear", n_components=4), 3),
], ids=["loo", "gcv", "validation", "knn", "arccos1", "linear"], indirect=["scheduler"])
def test_eerf_regressor_equals_single_machine(scheduler, params, passes):
    params = {"n_components": 25, "random_state": 0, **params}
    single = EERFRegressor(**params).fit(X_E, Y_E)
    dist = _fit(EERFRegressor(**params), _dask(X_E), _dask(Y_E, 1000))
    names = EERF_FITTED if params.get("kernel") != "linear" else EERF_FITTED + ("support_",)
    _assert_same(dist, single, names + ("y_mean_", "y_scale_"))
    assert dist.widths_ == single.widths_
    n_widths = 1 if single.widths_ is None else len(single.widths_)
    assert n_widths == 1 if ("length_scale" in params or "kernel" in params) else n_widths >= 4
    assert dist._n_dask_passes == 1 + passes * n_widths
    np.testing.assert_allclose(dist.predict(X_E), single.predict(X_E), rtol=RTOL, atol=RTOL * 10)


def test_eerf_regressor_two_outputs(synchronous):
    Y = np.c_[Y_E, 1e4 * X_E[:, 2]]
    single = EERFRegressor(20, alpha=[1e-3, 1e-1], random_state=1).fit(X_E, Y)
    dist = _fit(EERFRegressor(20, alpha=[1e-3, 1e-1], random_state=1), _dask(X_E, 900), Y)
    _assert_same(dist, single, EERF_FITTED)


@pytest.mark.parametrize("scheduler, labels", [("cluster", LABELS_3), ("sync", (Y_E > np.median(Y_E)).astype(int))],
                         ids=["3-class", "binary"], indirect=["scheduler"])
def test_eerf_classifier_equals_single_machine(scheduler, labels):
    single = EERFClassifier(20, random_state=0).fit(X_E, labels)
    dist = _fit(EERFClassifier(20, random_state=0), _dask(X_E), _dask(labels, 800))
    np.testing.assert_array_equal(dist.classes_, single.classes_)
    _assert_same(dist, single, EERF_FITTED)
    np.testing.assert_array_equal(dist.predict(X_E), single.predict(X_E))
    # predict_proba's temperature: the same leave-one-out rows, the distributed Gram
    np.testing.assert_allclose(dist.temperature_, single.temperature_, rtol=1e-6)
    np.testing.assert_allclose(dist.predict_proba(X_E), single.predict_proba(X_E), rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("make", [lambda: EERFRegressor(25, random_state=0, standardize="global"),
                                  lambda: AdaptiveRFFRegressor(16, n_iter=6, random_state=0, standardize="global")],
                         ids=["eerf", "adaptive"])
def test_global_standardization_equals_single_machine(synchronous, make):
    """standardize="global" (one pooled deviation) from the chunk moments; "auto" is each input by
    the probe ridge's choice, as on one machine."""
    single = make().fit(X_E, Y_E)
    dist = _fit(make(), _dask(X_E), _dask(Y_E, 1000))
    assert dist.standardize_ == single.standardize_ == "global"
    assert np.ptp(single.x_scale_) == 0
    _assert_same(dist, single, ("x_mean_", "x_scale_", "coef_", "intercept_" if hasattr(single, "scores_") else
                                "frequencies_"), rtol=1e-8)
    np.testing.assert_allclose(dist.predict(X_E), single.predict(X_E), rtol=1e-8, atol=1e-8)
    # "auto": the probe ridge on every row here (3000 = PROBE_ROWS), its seed from a copy of the
    # generator as on one machine: the same choice and probe errors (to round-off: the targets
    # reach the probe scaled on one machine, raw here; 2e-7 apart with two threads)
    auto = _fit(make().set_params(standardize="auto"), _dask(X_E), _dask(Y_E, 1000))
    auto_single = make().set_params(standardize="auto").fit(X_E, Y_E)
    assert auto.standardize_ == auto_single.standardize_
    assert set(auto.standardize_errors_) == {True, "global"}
    for key, value in auto_single.standardize_errors_.items():
        np.testing.assert_allclose(auto.standardize_errors_[key], value, rtol=1e-5)


def test_eerf_refuses_logistic_and_bad_input(client):
    with pytest.raises(ValueError, match="solver='logistic' is not supported on Dask"):
        EERFClassifier(10, solver="logistic").fit(_dask(X_E), LABELS_3)
    X_bad = X_E.copy()
    X_bad[1234, 2] = np.nan
    with pytest.raises(ValueError, match="NaN or infinity"):
        _fit(EERFRegressor(10), _dask(X_bad), Y_E)
    with pytest.raises(ValueError, match="at least 2 classes"):
        _fit(EERFClassifier(10), _dask(X_E), np.zeros(len(X_E), int))
    with pytest.raises(ValueError, match="samples"):
        EERFRegressor(10).fit(_dask(X_E), Y_E[:-1])


X_A, Y_A = _data(2500, 4, seed=1)
ADAPTIVE_FITTED = ("frequencies_", "coef_", "amplitudes_", "acceptance_rate_", "alpha_", "gcv_errors_",
                   "loo_errors_", "validation_errors_", "init_scale_errors_", "init_scales_", "best_iteration_",
                   "init_scale_", "proposal_covariance_", "x_mean_", "x_scale_", "y_mean_")
ADAPTIVE_RTOL = 1e-8
PAPER_ADAPTIVE = dict(early_stopping=False, final_alpha=None, init_scale="median")


@pytest.mark.parametrize("scheduler, params", [
    ("cluster", dict()),                                             # width grid, held-out early stopping
    ("sync", dict(early_stopping=False)),                            # width grid, LOO over final_alpha
    ("sync", PAPER_ADAPTIVE),
    ("sync", dict(PAPER_ADAPTIVE, alpha=GCV_ALPHAS, normalize_y=False)),  # GCV at the initial and final frequencies
    ("sync", dict(PAPER_ADAPTIVE, resample=True, resample_threshold=0.95, init_scale=1.0)),
], ids=["default", "loo", "paper", "gcv", "resample"], indirect=["scheduler"])
def test_adaptive_regressor_equals_single_machine(scheduler, params):
    params = {"n_components": 16, "n_iter": 6, "random_state": 0, **params}
    single = AdaptiveRFFRegressor(**params).fit(X_A, Y_A)
    dist = _fit(AdaptiveRFFRegressor(**params), _dask(X_A, 600), Y_A)
    # the held-out and LOO searches solve at lambdas down to 1e-8, whose conditioning turns the
    # different order of the chunk sums into relative differences near 1e-10
    _assert_same(dist, single, ADAPTIVE_FITTED + ("y_scale_",), rtol=ADAPTIVE_RTOL)
    np.testing.assert_array_equal(dist.history_["acceptance"], single.history_["acceptance"])
    assert _relative(dist.history_["proposal_mse"], single.history_["proposal_mse"]) <= RTOL
    assert dist.history_["n_resamples"] == single.history_["n_resamples"]
    # one pass of column statistics, one least-squares pass at the start, per iteration, per
    # resampling and at the end (GCV reuses the same statistics); a Gram and a LOO pass per initial
    # width of the grid and for the final LOO; a Gram and a prediction pass per held-out check
    passes = params["n_iter"] + 3 + dist.history_["n_resamples"]
    if params.get("init_scale", "auto") == "auto":
        passes += 2 * len(dist.init_scales_)
        assert len(dist.init_scales_) >= len(WIDTH_FACTORS)
    if params.get("early_stopping", True):
        passes += 2 * len(dist.validation_errors_)
        assert len(dist.validation_errors_) == params["n_iter"] + 1  # n_iter < 10: a check per iteration
    elif params.get("final_alpha", FINAL_ALPHAS) is not None:
        passes += 1
    assert dist._n_dask_passes == passes
    np.testing.assert_allclose(dist.predict(X_A), single.predict(X_A), rtol=ADAPTIVE_RTOL, atol=ADAPTIVE_RTOL)


@pytest.mark.parametrize("scheduler, n_classes", [("sync", 2), ("cluster", 3)], ids=["2", "3"], indirect=["scheduler"])
def test_adaptive_classifier_equals_single_machine(scheduler, n_classes):
    labels = np.digitize(Y_A, np.quantile(Y_A, np.arange(1, n_classes) / n_classes))
    single = AdaptiveRFFClassifier(12, n_iter=4, random_state=2).fit(X_A, labels)
    dist = _fit(AdaptiveRFFClassifier(12, n_iter=4, random_state=2), _dask(X_A, 800), _dask(labels, 500))
    np.testing.assert_array_equal(dist.classes_, single.classes_)
    _assert_same(dist, single, ADAPTIVE_FITTED, rtol=ADAPTIVE_RTOL)
    np.testing.assert_array_equal(dist.predict(X_A), single.predict(X_A))
    np.testing.assert_allclose(dist.temperature_, single.temperature_, rtol=1e-6)
    np.testing.assert_allclose(dist.predict_proba(X_A), single.predict_proba(X_A), rtol=1e-6, atol=1e-9)


X_S, Y_S = _data(1500, 4, seed=2)
SRFF_FITTED = ("gamma_", "weights_", "offsets_", "alpha_", "length_scale_", "objective_",
               "feature_importances_", "x_mean_", "x_scale_", "y_mean_", "y_scale_", "n_iter_",
               "n_outer_iter_total_", "refit_alpha_")
# the closing ridge (refit_components): 1000 features of 1500 rows at penalties down to 1e-8, the
# Gram summed by chunks amplifies round-off to ~2e-8 relative in its coefficients (measured)
SRFF_CLOSING_RTOL = 1e-6


@pytest.mark.parametrize("scheduler, params", [
    ("sync", dict(alpha=1e-3, max_iter=2, max_inner_iter=4)),
    ("cluster", dict(alpha=[1e-2, 1e-4], refit=True, normalize_y=False, max_iter=2, max_inner_iter=2)),
    ("sync", dict(max_iter=1, max_inner_iter=2, n_iter_no_change=1, length_scale=2.0)),   # the default grid
    ("sync", dict(alpha=[1e-2, 1e-4], max_iter=2, max_inner_iter=2, refit_components=None)),  # the paper's model
], ids=["one-lambda", "path-refit", "default-grid", "no-closing-ridge"], indirect=["scheduler"])
def test_srff_equals_single_machine(scheduler, params):
    params = {"n_components": 30, "random_state": 0, **params}
    single = SRFFRegressor(**params).fit(X_S, Y_S)
    dist = _fit(SRFFRegressor(**params), _dask(X_S, 400), _dask(Y_S, 400))
    _assert_same(dist, single, SRFF_FITTED + ("alphas_",))
    closing = params.get("refit_components", 1000) is not None
    assert single.coef_.shape == ((1000,) if closing else (30,))
    assert (single.refit_alpha_ is not None) == closing
    _assert_same(dist, single, ("coef_", "intercept_"), rtol=SRFF_CLOSING_RTOL if closing else RTOL)
    if single.validation_errors_ is not None:
        assert dist.path_start_ == single.path_start_
        np.testing.assert_array_equal(np.isnan(dist.validation_errors_), np.isnan(single.validation_errors_))
        ok = ~np.isnan(single.validation_errors_)
        assert _relative(dist.validation_errors_[ok], single.validation_errors_[ok]) <= RTOL
    tol = SRFF_CLOSING_RTOL if closing else RTOL
    np.testing.assert_allclose(dist.predict(X_S), single.predict(X_S), rtol=tol, atol=tol)


def test_srff_refuses_bad_input(client):
    with pytest.raises(ValueError, match="1-D"):
        SRFFRegressor(10, alpha=1e-3).fit(_dask(X_S), np.c_[Y_S, Y_S])
    y_bad = Y_S.copy()
    y_bad[7] = np.inf
    with pytest.raises(ValueError, match="NaN or infinity"):
        _fit(SRFFRegressor(10, alpha=1e-3), _dask(X_S), y_bad)
    with pytest.raises(ValueError, match="validation split"):
        _fit(SRFFRegressor(10, alpha=[1e-3, 1e-2], validation_fraction=0.0001), _dask(X_S[:100]), Y_S[:100])


def test_dask_fit_does_not_modify_inputs(synchronous):
    X, y = X_E.copy(), Y_E.copy()
    Xd = _dask(X)
    _fit(EERFRegressor(10, random_state=0), Xd, y)
    np.testing.assert_array_equal(X, X_E)
    np.testing.assert_array_equal(y, Y_E)


@pytest.mark.parametrize("make", [
    lambda: EERFRegressor(20, random_state=0),
    lambda: AdaptiveRFFRegressor(20, n_iter=3, random_state=0),
    lambda: SRFFRegressor(20, alpha=1e-3, max_iter=2, max_inner_iter=3, random_state=0),
], ids=["eerf", "adaptive", "srff"])
def test_an_input_constant_on_every_chunk_is_ignored_as_on_one_machine(synchronous, make):
    """Inputs constant over every chunk get an infinite x_scale_ (they standardize to 0 on every
    row) as in the single-machine fit, so another value at prediction moves nothing."""
    X, y = _data(1500, 4, seed=3)
    X[:, 1] = 0.3  # constant; its mean in float64 is not 0.3
    single = make().fit(X, y)
    dist = _fit(make(), _dask(X, 400), _dask(y, 400))
    assert np.isinf(single.x_scale_[1]) and np.isinf(dist.x_scale_[1])
    assert dist.x_mean_[1] == single.x_mean_[1] == 0.3
    _assert_same(dist, single, ("coef_",), rtol=SRFF_CLOSING_RTOL)
    moved = X.copy()
    moved[:, 1] = 9.0
    np.testing.assert_array_equal(dist.predict(moved), dist.predict(X))
    np.testing.assert_allclose(dist.predict(X), single.predict(X), rtol=SRFF_CLOSING_RTOL, atol=SRFF_CLOSING_RTOL)
