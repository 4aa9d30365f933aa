"""feature_importances_ of RFFNet (and of whatever rffkern.fit returns): the root mean square of the
fitted function's partial derivatives over the training rows, per unit of each input's own
deviation, checked against finite differences of predict / decision_function."""
import copy
import pickle

import numpy as np
import pytest

import rffkern
from rffkern import RFFNetClassifier, RFFNetRegressor, topk_selection
from rffkern.datasets import make_jse3


def _outputs(model, X):
    f = model.decision_function(X) if hasattr(model, "classes_") else model.predict(X)
    return np.asarray(f, np.float64).reshape(X.shape[0], -1)


def _own_deviations(model):
    """Each input's own deviation over the model's training rows (1 for raw units)."""
    if getattr(model, "standardize_", False) is False:
        return np.ones(model.n_features_in_)
    if hasattr(model, "relevances_"):  # RFFNet: x_scale_ is pooled with "global"
        ratio = getattr(model, "_deviation_ratio", None)
        return model.x_scale_ * (1.0 if ratio is None else ratio)
    return model.x_scale_ * model._own_deviation_ratio()  # the ridge


def _finite_difference_importances(model, X, sample_weight=None):
    """sqrt(weighted mean_i sum_m (df_m/dx_ij)^2) by central differences, times each input's own
    deviation over the training rows (standardized fits), scaled to [0, 1]."""
    X = np.asarray(X, np.float64)
    if getattr(model, "x_min_", None) is not None:
        # the derivatives of the fitted function at the rows as the model reads them (clipped to its
        # training range), not of the clipped function, whose differences at the range's ends are halved
        X = np.clip(X, model.x_min_, model.x_max_)
        model = copy.copy(model)
        model.x_min_ = model.x_max_ = None
    sd = np.sqrt(np.cov(X, rowvar=False, aweights=sample_weight, bias=True).diagonal())
    g = np.empty(X.shape[1])
    for j in range(X.shape[1]):
        h = 1e-5 * (sd[j] if sd[j] > 0 else 1.0)
        E = np.zeros(X.shape[1])
        E[j] = h
        D = (_outputs(model, X + E) - _outputs(model, X - E)) / (2 * h)
        g[j] = np.sqrt(np.average(np.sum(D ** 2, axis=1), weights=sample_weight))
    g = g * _own_deviations(model)
    return g / g.max()


def _scaled_data(n=300, seed=0):
    X, y, _ = make_jse3(n, random_state=seed)
    return X * np.array([1, 10, 0.1, 1000, 1, 1, 1, 1, 1, 1.0]), y


@pytest.mark.parametrize("standardize", [True, "global", False])
def test_regressor_importances_are_the_rms_partial_derivatives(standardize):
    X, y = _scaled_data()
    m = RFFNetRegressor(n_components=40, max_iter=3, dtype="float64", standardize=standardize,
                        random_state=0).fit(X, y)
    expected = _finite_difference_importances(m, X)
    np.testing.assert_allclose(m.feature_importances_, expected, rtol=1e-4, atol=1e-7)
    # and they survive pickling
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(m)).feature_importances_, m.feature_importances_)


@pytest.mark.parametrize("n_classes", [2, 3])
def test_classifier_importances_are_the_rms_partial_derivatives_of_the_logits(n_classes):
    X, y = _scaled_data(360)
    labels = np.digitize(y, np.quantile(y, np.linspace(0, 1, n_classes + 1)[1:-1]))
    m = RFFNetClassifier(n_components=40, max_iter=3, dtype="float64", random_state=0).fit(X, labels)
    np.testing.assert_allclose(m.feature_importances_, _finite_difference_importances(m, X), rtol=1e-4, atol=1e-7)


def test_weighted_importances_average_with_the_weights():
    X, y = _scaled_data()
    w = np.random.default_rng(1).integers(0, 4, X.shape[0]).astype(float)
    m = RFFNetRegressor(n_components=40, max_iter=3, dtype="float64", random_state=0).fit(X, y, sample_weight=w)
    expected = _finite_difference_importances(m, X, sample_weight=w)
    np.testing.assert_allclose(m.feature_importances_, expected, rtol=1e-4, atol=1e-7)


def test_partial_fit_importances_are_those_of_the_last_rows():
    X, y = _scaled_data(400)
    m = RFFNetRegressor(n_components=40, dtype="float64", standardize=False, random_state=0)
    m.partial_fit(X[:200], y[:200]).partial_fit(X[200:], y[200:])
    expected = _finite_difference_importances(m, X[200:])
    np.testing.assert_allclose(m.feature_importances_, expected, rtol=1e-4, atol=1e-7)


def test_a_smooth_relevant_input_ranks_alone():
    """y = sin(x0) among 3 standard normal inputs: the function's slopes single x0 out, where the
    relevances (inverse length scales) do not (measured |relevances_| scaled [0.96, 1, 0.95]: an
    irrelevant input's relevance has no gradient to leave its start)."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 3))
    y = np.sin(X[:, 0]) + 0.1 * rng.normal(size=300)
    imp = RFFNetRegressor(random_state=0).fit(X, y).feature_importances_
    assert imp[0] == 1.0 and imp[1:].max() < 0.2  # measured [1, 0.058, 0.041]


def test_topk_importances_are_those_of_the_thresholded_model():
    X, y, support = make_jse3(600, random_state=0)
    m = RFFNetRegressor(n_components=60, max_iter=20, dtype="float64", random_state=0).fit(X[:400], y[:400])
    before = m.feature_importances_.copy()
    result = topk_selection(m, X[400:], y[400:])
    imp = result.estimator.feature_importances_
    assert np.all(imp[~result.support] == 0) and imp.max() == 1.0
    np.testing.assert_allclose(imp, _finite_difference_importances(result.estimator, X[400:]), rtol=1e-4, atol=1e-7)
    np.testing.assert_array_equal(m.feature_importances_, before)  # the original is untouched


@pytest.mark.parametrize("classify", [False, True])
def test_fit_reports_the_derivative_norms_of_the_model_it_returns(classify):
    X, y, _ = make_jse3(500, random_state=2)
    X = X * np.array([1, 10, 0.1, 1000, 1, 1, 1, 1, 1, 1.0])
    w = np.random.default_rng(0).uniform(0.5, 2.0, X.shape[0])
    if classify:
        y = (y > np.median(y)).astype(int)
    model = rffkern.fit(X, y, sample_weight=w, random_state=0, dtype="float64")  # (for the differences)
    # over every row of the fit (fewer than 2000: none drawn), with its weights
    expected = _finite_difference_importances(model, X, sample_weight=w)
    np.testing.assert_allclose(model.feature_importances_, expected, rtol=1e-3, atol=1e-6)
    assert sorted(np.argsort(-model.feature_importances_)[:2].tolist()) == [0, 1]


def test_a_variant_fit_does_not_skip_its_importances_later():
    X, y, _ = make_jse3(300, random_state=0)
    model = rffkern.fit(X, y, random_state=0)
    assert "_fit_options" not in model.__dict__  # (rffkern.fit's options were for its own fits)
    refit = copy.deepcopy(model).fit(X, y)
    assert refit.feature_importances_.max() == 1.0


def test_importances_do_not_depend_on_the_thread_counts():
    from threadpoolctl import threadpool_limits

    X, y = _scaled_data(400)
    out = []
    for n_jobs, blas in ((1, 1), (2, 2), (3, 1)):
        with threadpool_limits(limits=blas, user_api="blas"):
            out.append(RFFNetRegressor(n_components=40, max_iter=3, random_state=0, n_jobs=n_jobs)
                       .fit(X, y).feature_importances_)
    np.testing.assert_allclose(out, np.broadcast_to(out[0], np.shape(out)), rtol=1e-6, atol=1e-9)


def test_a_model_pickled_before_the_derivative_norms_reports_its_relevances():
    X, y = _scaled_data(200)
    m = RFFNetRegressor(n_components=40, max_iter=3, random_state=0).fit(X, y)
    old = pickle.loads(pickle.dumps(m))
    del old._derivative_norms  # as unpickled from an rffkern whose importances were |theta|
    r = m._relevance_magnitudes()
    np.testing.assert_array_equal(old.feature_importances_, r / r.max())
    m._derivative_norms = None  # computation skipped (rffkern.fit's variants): no importances
    assert not hasattr(m, "feature_importances_")


@pytest.mark.parametrize("make", [lambda: RFFNetRegressor(n_components=40, dtype="float64", random_state=0),
                                  lambda: rffkern.RFFRidge(40, random_state=0)])
def test_partial_fit_computes_the_importances_when_read_not_per_chunk(make, monkeypatch):
    """partial_fit keeps its rows; the derivative norms are computed once, when read or pickled."""
    from rffkern import _importances

    X, y = _scaled_data(600)
    calls = []
    real = _importances.rms_partial_derivatives
    monkeypatch.setattr(_importances, "rms_partial_derivatives", lambda *a, **k: calls.append(1) or real(*a, **k))
    module = __import__(type(make()).__module__, fromlist=["rms_partial_derivatives"])
    monkeypatch.setattr(module, "rms_partial_derivatives", _importances.rms_partial_derivatives)
    m = make()
    for start in range(0, 600, 200):
        m.partial_fit(X[start:start + 200], y[start:start + 200])
    assert calls == []
    first = m.feature_importances_.copy()
    assert calls == [1]
    np.testing.assert_array_equal(m.feature_importances_, first)
    assert calls == [1]
    m.partial_fit(X[:200], y[:200])
    restored = pickle.loads(pickle.dumps(m))  # the pickle holds the importances, not the rows
    assert calls == [1, 1] and "_summary_rows" not in vars(restored)
    np.testing.assert_allclose(restored.feature_importances_, _finite_difference_importances(m, X[:200]),
                               rtol=1e-4, atol=1e-7)
