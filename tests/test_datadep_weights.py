"""sample_weight of the data-dependent feature methods (EERF, SRFF)."""
import numpy as np
import pytest

from rffkern import EERFClassifier, EERFRegressor


def _data(n=120, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 4))
    y = np.sin(X[:, 0]) + X[:, 1] ** 2 + 0.1 * rng.standard_normal(n)
    w = rng.integers(0, 4, n).astype(float)
    return X, y, w


def _unit(w):
    """The weights' unit: their mean over the rows of positive weight (the estimators fit on
    ``w / unit``, so integer weights give the model of the rows repeated at ``alpha * unit``)."""
    return float(np.mean(w[w > 0]))


def _kw(kernel):
    kw = dict(n_components=3 if kernel == "linear" else 20, kernel=kernel, random_state=0)
    if kernel == "gaussian":
        kw["length_scale"] = 1.5
    return kw


@pytest.mark.parametrize("kernel", ["gaussian", "arccos1", "linear"])
def test_eerf_integer_weights_equal_repeated_rows(kernel):
    # every row is scored (n <= N0) and one alpha: no draw depends on the row count
    X, y, w = _data()
    rep = np.repeat(np.arange(len(y)), w.astype(int))
    a = EERFRegressor(alpha=0.1, **_kw(kernel)).fit(X, y, sample_weight=w)
    b = EERFRegressor(alpha=0.1 * _unit(w), **_kw(kernel)).fit(X[rep], y[rep])
    np.testing.assert_allclose(a.scores_, b.scores_, rtol=1e-8)
    np.testing.assert_allclose(a.x_mean_, b.x_mean_, rtol=1e-8, atol=1e-12)
    np.testing.assert_allclose(a.y_scale_, b.y_scale_, rtol=1e-8)
    np.testing.assert_allclose(a.predict(X), b.predict(X), rtol=1e-8, atol=1e-10)


def test_eerf_defaults_with_integer_weights_equal_repeated_rows():
    # the k-NN rule (weighted neighbours) and the default width search at one penalty: at the
    # weighted fit's width, the model of the rows repeated at the penalty alpha * unit (the width
    # rules count a row's copies in units of the mean weight, so they choose their own widths; a
    # searched penalty is chosen by leaving each row out with all its weight, as scikit-learn's
    # RidgeCV, where the repeated rows are left out one copy at a time:
    # test_ridge.py::test_weighted_loo_leaves_each_row_out_with_its_weight)
    X, y, w = _data()
    rep = np.repeat(np.arange(len(y)), w.astype(int))
    for length_scale in ("knn", "auto"):
        kw = dict(n_components=20, length_scale=length_scale, random_state=0)
        a = EERFRegressor(alpha=0.1, **kw).fit(X, y, sample_weight=w)
        b = EERFRegressor(**dict(kw, alpha=0.1 * _unit(w), length_scale=a.length_scale_)).fit(X[rep], y[rep])
        np.testing.assert_allclose(a.predict(X), b.predict(X), rtol=1e-5, atol=1e-7)


def test_weighted_knn_rule_with_fractional_weights():
    # k = 3. Row 0: 1.5 copies of itself at 0, then 2.5 of row 1 at distance 1 (cumulative 4 >= 3)
    # -> 1; row 1 likewise -> 1; row 2 (weight 1: no copies): 2.5 at distance 2, 5 at 3 -> 3
    from rffkern._eerf_core import weighted_knn_length_scale
    X = np.array([[0.0], [1.0], [3.0]])
    rng = np.random.default_rng(0)
    w = np.array([2.5, 2.5, 1.0])
    assert weighted_knn_length_scale(X, w, rng, n_neighbors=3) == pytest.approx(
        np.average([1.0, 1.0, 3.0], weights=w))
    # k = min(n_neighbors, 6 - 1) = 5: row 0 reaches 5 at distance 3, row 1 at 2, row 2 at 3
    assert weighted_knn_length_scale(X, w, rng, n_neighbors=50) == pytest.approx(
        np.average([3.0, 2.0, 3.0], weights=w))


@pytest.mark.parametrize("solver", ["ridge", "logistic"])
def test_eerf_classifier_integer_weights_equal_repeated_rows(solver):
    X, _, w = _data()
    y = (X[:, 0] * X[:, 1] > 0).astype(int)
    rep = np.repeat(np.arange(len(y)), w.astype(int))
    kw = dict(n_components=20, random_state=0, length_scale=1.5, solver=solver)
    a = EERFClassifier(alpha=0.1, **kw).fit(X, y, sample_weight=w)
    b = EERFClassifier(alpha=0.1 * _unit(w), **kw).fit(X[rep], y[rep])
    np.testing.assert_allclose(a.scores_, b.scores_, rtol=1e-8)
    tol = 1e-8 if solver == "ridge" else 1e-4  # lbfgs stops at its own tolerance
    np.testing.assert_allclose(a.decision_function(X), b.decision_function(X), rtol=tol, atol=tol)


@pytest.mark.parametrize("n_subsample", [None, 40])
def test_eerf_zero_weights_equal_dropped_rows(n_subsample):
    # the scoring subsample is drawn among the rows of positive weight, and the LOO alpha search
    # weights every row's error: zero weights drop rows even with a subsample and a searched alpha
    X, y, w = _data(300)
    keep = w > 0
    kw = dict(n_components=15, n_subsample=n_subsample, alpha=[1e-3, 1e-1, 1.0, 10.0], random_state=3)
    a = EERFRegressor(**kw).fit(X, y, sample_weight=w)
    b = EERFRegressor(**kw).fit(X[keep], y[keep], sample_weight=w[keep])
    assert a.alpha_ == b.alpha_
    assert a.n_subsample_ == b.n_subsample_
    np.testing.assert_allclose(a.length_scale_, b.length_scale_, rtol=1e-10)
    np.testing.assert_allclose(a.weights_, b.weights_, rtol=1e-10)
    np.testing.assert_allclose(a.predict(X), b.predict(X), rtol=1e-8, atol=1e-10)


def test_eerf_uniform_weights_equal_no_weights():
    X, y, _ = _data()
    kw = dict(n_components=15, n_subsample=60, random_state=1)
    a = EERFRegressor(**kw).fit(X, y, sample_weight=np.ones(len(y)))
    b = EERFRegressor(**kw).fit(X, y)
    assert a.alpha_ == b.alpha_
    np.testing.assert_allclose(a.scores_, b.scores_, rtol=1e-10)
    np.testing.assert_allclose(a.predict(X), b.predict(X), rtol=1e-10, atol=1e-12)
    # weights are relative (divided by their mean): equal weights of any value are no weights at
    # the same penalty
    kw = dict(n_components=15, n_subsample=60, random_state=1, length_scale=1.5)
    scaled = EERFRegressor(alpha=0.5, **kw).fit(X, y, sample_weight=np.full(len(y), 2.5))
    plain = EERFRegressor(alpha=0.5, **kw).fit(X, y)
    np.testing.assert_allclose(scaled.scores_, plain.scores_, rtol=1e-10)
    np.testing.assert_allclose(scaled.predict(X), plain.predict(X), rtol=1e-8, atol=1e-10)


def test_eerf_scores_are_weighted_means():
    # scores_ computed directly: |sum_n w_n t_n cos(x_n . omega + b)| / sum_n w_n, with t the
    # weighted-centred scaled target divided by its largest magnitude over rows of positive weight
    X, y, w = _data()
    model = EERFRegressor(n_components=10, length_scale=1.5, random_state=0).fit(X, y, sample_weight=w)
    Xs = (X - model.x_mean_) / model.x_scale_
    ys = (y - model.y_mean_) / model.y_scale_
    t = ys - np.average(ys, weights=w)
    t /= np.abs(t[w > 0]).max()
    S = (w * t) @ np.cos(Xs @ model.weights_ + model.offsets_) / w.sum()
    np.testing.assert_allclose(model.scores_, np.abs(S), rtol=1e-10)
    # the weights matter: unweighted scores differ
    plain = EERFRegressor(n_components=10, length_scale=1.5, random_state=0).fit(X, y)
    assert not np.allclose(plain.predict(X), model.predict(X))


@pytest.mark.parametrize("Est", [EERFRegressor, EERFClassifier])
@pytest.mark.parametrize("bad, match", [
    (np.ones(5), "sample_weight"), (-np.ones(120), "sample_weight"),
    (np.full(120, np.nan), "sample_weight"), (np.zeros(120), "sample_weight"),
    (np.ones((120, 2)), "sample_weight")])
def test_eerf_bad_weights(Est, bad, match):
    X, y, _ = _data()
    if Est is EERFClassifier:
        y = (y > np.median(y)).astype(int)
    with pytest.raises(ValueError, match=match):
        Est(n_components=5, random_state=0).fit(X, y, sample_weight=bad)


def test_eerf_weights_leave_caller_arrays_alone():
    X, y, w = _data()
    copies = X.copy(), y.copy(), w.copy()
    EERFRegressor(n_components=5, random_state=0).fit(X, y, sample_weight=w)
    EERFClassifier(n_components=5, random_state=0, solver="logistic", alpha=1.0).fit(
        X, (y > 0).astype(int), sample_weight=w)
    for a, b in zip((X, y, w), copies):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("Est", [EERFRegressor, EERFClassifier])
def test_eerf_dask_with_weights_fits_the_weighted_model(Est):
    # (tests/test_dask_weights.py compares every fitted array on a cluster; here Dask's local scheduler)
    da = pytest.importorskip("dask.array")
    X, y, w = _data()
    if Est is EERFClassifier:
        y = (y > 0).astype(int)
    single = Est(n_components=5, random_state=0).fit(X, y, sample_weight=w)
    dist = Est(n_components=5, random_state=0).fit(da.from_array(X, chunks=40), da.from_array(y, chunks=40),
                                                   sample_weight=w)
    np.testing.assert_allclose(dist.coef_, single.coef_, rtol=1e-9, atol=1e-12)
    assert dist.length_scale_ == pytest.approx(single.length_scale_, rel=1e-12)


# ------------------------------------------------------------------------------------- SRFF
from rffkern import SRFFRegressor, kernels  # noqa: E402
from rffkern.srff import weighted_loss_and_grad, weighted_median_knn_distance  # noqa: E402


def test_srff_weighted_gamma_gradient():
    # unit weights: the compiled mean loss and gamma-gradient; integer weights: those of repeated
    # rows; and a central finite difference of the weighted loss
    rng = np.random.default_rng(0)
    X, y = rng.standard_normal((90, 3)), rng.standard_normal(90)
    W, b = rng.standard_normal((3, 25)), rng.uniform(0, 2 * np.pi, 25)
    a, g = rng.standard_normal(25), rng.uniform(0.2, 1.0, 3)
    v, _, gt = kernels.loss_and_grad(X, y, W, b, a, theta=g, loss="squared", scale=1.0)
    v1, g1 = weighted_loss_and_grad(X, y, W, b, a, g, np.ones(90))
    np.testing.assert_allclose(v1, v, rtol=1e-12)
    np.testing.assert_allclose(g1, gt, rtol=1e-10, atol=1e-12)
    w = rng.integers(1, 4, 90).astype(float)
    rep = np.repeat(np.arange(90), w.astype(int))
    vr, _, gr = kernels.loss_and_grad(X[rep], y[rep], W, b, a, theta=g, loss="squared", scale=1.0)
    vw, gw = weighted_loss_and_grad(X, y, W, b, a, g, w)
    np.testing.assert_allclose(vw, vr, rtol=1e-12)
    np.testing.assert_allclose(gw, gr, rtol=1e-10, atol=1e-12)
    w = rng.uniform(0.1, 3.0, 90)
    _, gw = weighted_loss_and_grad(X, y, W, b, a, g, w)
    h = 1e-6
    fd = [(weighted_loss_and_grad(X, y, W, b, a, g + h * e, w, False)[0]
           - weighted_loss_and_grad(X, y, W, b, a, g - h * e, w, False)[0]) / (2 * h) for e in np.eye(3)]
    np.testing.assert_allclose(gw, fd, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("length_scale", [1.0, "auto"])
def test_srff_integer_weights_equal_repeated_rows(length_scale):
    # one lambda (no held-out split, whose draw depends on the row count); the paper's model: the
    # closing ridge (refit_components) chooses its penalty by leave-one-out, which leaves out a
    # row of weight k where the repeated rows leave out one of k copies (its weighted sums are
    # checked in test_srff.py::test_closing_ridge_is_the_exact_ridge_on_its_features). SRFF's
    # objective is a weighted mean (its lambda needs no unit); its median heuristic counts a
    # row's copies in units of the mean weight: "auto" is compared at the weighted fit's width
    X, y, w = _data(100)
    w[w == 0] = 1  # zero weights are dropped rows: tested below
    rep = np.repeat(np.arange(len(y)), w.astype(int))
    kw = dict(n_components=30, alpha=0.01, max_iter=5, length_scale=length_scale, random_state=0,
              refit_components=None)
    a = SRFFRegressor(**kw).fit(X, y, sample_weight=w)
    b = SRFFRegressor(**dict(kw, length_scale=a.length_scale_)).fit(X[rep], y[rep])
    np.testing.assert_allclose(a.length_scale_, b.length_scale_, rtol=1e-12)
    np.testing.assert_allclose(a.gamma_, b.gamma_, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(a.objective_, b.objective_, rtol=1e-8)
    np.testing.assert_allclose(a.predict(X), b.predict(X), rtol=1e-8, atol=1e-10)


def test_srff_zero_weights_drop_rows_and_uniform_weights_change_nothing():
    X, y, w = _data(150)
    keep = w > 0
    kw = dict(n_components=30, max_iter=4, max_inner_iter=5, random_state=0)  # the lambda path
    a = SRFFRegressor(**kw).fit(X, y, sample_weight=w)
    b = SRFFRegressor(**kw).fit(X[keep], y[keep], sample_weight=w[keep])
    assert a.alpha_ == b.alpha_
    np.testing.assert_array_equal(a.predict(X), b.predict(X))
    u = SRFFRegressor(**kw).fit(X, y, sample_weight=np.ones(len(y)))
    p = SRFFRegressor(**kw).fit(X, y)
    assert u.alpha_ == p.alpha_
    np.testing.assert_allclose(u.predict(X), p.predict(X), rtol=1e-8, atol=1e-10)
    # the weights matter
    assert not np.allclose(a.predict(X), SRFFRegressor(**kw).fit(X, y).predict(X))


def test_srff_weighted_objective_computed_directly():
    # objective_[-1] is (1/2 sum w)(sum_i w_i (y_i - f_i)^2) + lambda/2 ||a||^2 in scaled units,
    # f the model of the alternating fit (the paper's: the closing ridge's coef_ is another model)
    X, y, w = _data(80)
    w = w + 0.5
    model = SRFFRegressor(n_components=20, alpha=0.02, max_iter=3, random_state=0,
                          refit_components=None).fit(X, y, sample_weight=w)
    Xs = (X - model.x_mean_) / model.x_scale_
    ys = (y - model.y_mean_) / model.y_scale_
    f = np.cos((Xs * model.gamma_) @ model.weights_ + model.offsets_) @ model.coef_
    J = 0.5 * (w @ (ys - f) ** 2) / w.sum() + 0.5 * 0.02 * model.coef_ @ model.coef_
    np.testing.assert_allclose(model.objective_[-1], J, rtol=1e-8)
    np.testing.assert_allclose(model.y_mean_, np.average(y, weights=w), rtol=1e-12)


def test_weighted_median_knn_rule_equals_repeated_rows():
    from rffkern.srff import median_knn_distance
    rng = np.random.default_rng(2)
    X = rng.standard_normal((40, 3))
    w = rng.integers(1, 4, 40).astype(float)
    rep = np.repeat(np.arange(40), w.astype(int))
    for k in (1, 5, 20):
        assert weighted_median_knn_distance(X, w, k) == pytest.approx(median_knn_distance(X[rep], k), rel=1e-12)


@pytest.mark.parametrize("bad", [np.ones(5), -np.ones(120), np.full(120, np.inf), np.zeros(120)])
def test_srff_bad_weights(bad):
    X, y, _ = _data()
    with pytest.raises(ValueError, match="sample_weight"):
        SRFFRegressor(n_components=5, alpha=0.1, max_iter=2, random_state=0).fit(X, y, sample_weight=bad)


def test_srff_weights_leave_caller_arrays_alone_in_memory_and_on_dask():
    X, y, w = _data()
    copies = X.copy(), y.copy(), w.copy()
    single = SRFFRegressor(n_components=5, max_iter=2, random_state=0).fit(X, y, sample_weight=w)
    for a, b in zip((X, y, w), copies):
        np.testing.assert_array_equal(a, b)
    dask = pytest.importorskip("dask")
    da = pytest.importorskip("dask.array")
    with dask.config.set(scheduler="synchronous"):  # (tests/test_dask_weights.py: on a cluster, to 1e-10)
        dist = SRFFRegressor(n_components=5, max_iter=2, random_state=0).fit(
            da.from_array(X, chunks=(40, X.shape[1])), da.from_array(y, chunks=40), sample_weight=w)
    for a, b in zip((X, y, w), copies):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_allclose(dist.gamma_, single.gamma_, rtol=1e-10)
