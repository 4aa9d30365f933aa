"""rffkern.onnx: onnxruntime's outputs of every exported model equal rffkern's own.

Tolerances, relative to the output's scale (the largest absolute value of the rffkern output):
``RTOL32`` for float32 graphs (the rounding of float32 phases and sums over the features:
measured 1e-7 to 8e-6 for the estimators, 1e-4 for the Laplace kernel's map, whose heavy-tailed
frequencies give large phases), ``RTOL64`` for float64 graphs (the normal scores' rational
approximation, 1e-9; at most 2e-13 without it). Probabilities: ``ATOL_PROBA32`` absolute. Labels: equal
wherever rffkern's two largest probabilities differ by more than the probability tolerance.
"""
from __future__ import annotations

import numpy as np
import pytest

skl2onnx = pytest.importorskip("skl2onnx")
ort = pytest.importorskip("onnxruntime")

from sklearn.exceptions import NotFittedError  # noqa: E402
from sklearn.pipeline import make_pipeline  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402

import rffkern as rk  # noqa: E402
import rffkern.onnx as rko  # noqa: E402

RTOL32, RTOL64, ATOL_PROBA32 = 2e-4, 1e-8, 2e-4
QUICK_NET = dict(n_components=30, max_iter=5)
QUICK_ADAPTIVE = dict(n_components=16, n_iter=5)


@pytest.fixture(scope="module")
def data():
    """Raw inputs of mixed scales and offsets, a target of scale 1e4, string labels."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((150, 4)) * [1.0, 100.0, 0.01, 1e3] + [0.0, 1e4, 0.0, 5.0]
    y = 1e4 * (np.sin(X[:, 0]) + np.cos((X[:, 1] - 1e4) / 100.0)) + 3e4
    y3 = np.array(["low", "mid", "high"])[np.digitize(y, np.quantile(y, [1 / 3, 2 / 3]))]
    y2 = np.where(y > np.median(y), "yes", "no")
    X_test = rng.standard_normal((60, 4)) * [1.0, 100.0, 0.01, 1e3] * 1.5 + [0.0, 1e4, 0.0, 5.0]  # some outside
    return X, y, y2, y3, X_test


def run(onx, X):
    session = ort.InferenceSession(onx.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, {session.get_inputs()[0].name: X})


def assert_close(actual, expected, rtol):
    expected = np.asarray(expected, np.float64).reshape(actual.shape[0], -1)
    assert actual.shape == expected.shape
    scale = np.abs(expected).max()
    np.testing.assert_allclose(actual, expected, rtol=0, atol=rtol * scale)


def assert_classifier(model, X, dtype=np.float32):
    label, proba = run(rko.to_onnx(model, X, dtype=dtype, options={"zipmap": False}), X.astype(dtype))
    expected = model.predict_proba(X)
    np.testing.assert_allclose(proba, expected, rtol=0, atol=ATOL_PROBA32 if dtype == np.float32 else 1e-10)
    top2 = np.sort(expected, axis=1)[:, -2:]
    clear = top2[:, 1] - top2[:, 0] > ATOL_PROBA32
    np.testing.assert_array_equal(label[clear], model.predict(X)[clear])
    assert clear.mean() > 0.9


# ---- the feature maps ------------------------------------------------------------------------------
MAPS = [
    (rk.RandomFourierFeatures, {}), (rk.RandomFourierFeatures, {"pair": True}),
    (rk.RandomFourierFeatures, {"kernel": "laplace"}),
    (rk.OrthogonalRandomFeatures, {}), (rk.OrthogonalRandomFeatures, {"pair": True}),
    (rk.Fastfood, {}), (rk.Fastfood, {"kernel": "matern", "pair": True}),
    (rk.StructuredOrthogonalFeatures, {}), (rk.StructuredOrthogonalFeatures, {"kernel": "matern", "pair": True}),
]


@pytest.mark.parametrize("cls,params", MAPS, ids=[f"{c.__name__}-{p}" for c, p in MAPS])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_feature_maps_transform(cls, params, dtype):
    X = np.random.default_rng(1).standard_normal((40, 5))
    fmap = cls(n_components=70, random_state=0, **params).fit(X)
    (Z,) = run(rko.to_onnx(fmap, X, dtype=dtype), X.astype(dtype))
    assert Z.dtype == dtype
    assert_close(Z, fmap.transform(X), RTOL32 if dtype == np.float32 else RTOL64)


# ---- regressors --------------------------------------------------------------------------------------
def regressors():
    return [
        rk.RFFRidge(60, random_state=0), rk.RFFRidge(60, pair=True, kernel="matern", random_state=0),
        rk.RFFNetRegressor(random_state=0, **QUICK_NET), rk.EERFRegressor(40, random_state=0),
        rk.EERFRegressor(40, kernel="arccos1", random_state=0), rk.EERFRegressor(3, kernel="linear", random_state=0),
        rk.AdaptiveRFFRegressor(random_state=0, **QUICK_ADAPTIVE),
        rk.SRFFRegressor(20, alpha=0.03, max_iter=5, random_state=0),
    ]


@pytest.mark.parametrize("model", regressors(), ids=lambda m: f"{type(m).__name__}-{getattr(m, 'kernel', '')}")
def test_regressors_predict_on_raw_inputs(model, data):
    X, y, _, _, X_test = data
    model.fit(X, y)
    for dtype, rtol in ((np.float32, RTOL32), (np.float64, RTOL64)):
        (F,) = run(rko.to_onnx(model, X, dtype=dtype), X_test.astype(dtype))
        assert F.dtype == dtype and F.shape == (X_test.shape[0], 1)
        # RFFNet computes in float32 itself (its weights_ are float32)
        assert_close(F, model.predict(X_test), rtol if not isinstance(model, rk.RFFNetRegressor) else RTOL32)


@pytest.mark.parametrize("model", [rk.RFFRidge(60, random_state=0), rk.RFFNetRegressor(random_state=0, **QUICK_NET),
                                   rk.EERFRegressor(40, random_state=0),
                                   rk.AdaptiveRFFRegressor(random_state=0, **QUICK_ADAPTIVE)],
                         ids=lambda m: type(m).__name__)
def test_multi_output_regression(model, data):
    X, y, _, _, X_test = data
    Y = np.column_stack([y, -0.5 * y + X[:, 0]])
    model.fit(X, Y)
    (F,) = run(rko.to_onnx(model, X), X_test.astype(np.float32))
    assert F.shape == (X_test.shape[0], 2)
    assert_close(F, model.predict(X_test), RTOL32)


def test_eerf_step_features_in_float64(data):
    # arccos0's features are steps: float32 phases near 0 may flip one, so it is checked in float64
    X, y, _, _, X_test = data
    model = rk.EERFRegressor(40, kernel="arccos0", random_state=0).fit(X, y)
    (F,) = run(rko.to_onnx(model, X, dtype=np.float64), X_test)
    assert_close(F, model.predict(X_test), RTOL64)


def test_quantile_inputs(data):
    X, y, _, _, X_test = data
    rng = np.random.default_rng(2)
    Xh = np.column_stack([X[:, :2], np.exp(2 * rng.standard_normal(len(X))), rng.standard_cauchy(len(X))])
    Xh_test = np.vstack([Xh[:20] * 1.01, Xh.min(axis=0), Xh.max(axis=0), X_test[:, :4] * [1, 1, 10, 1e-3]])
    model = rk.RFFRidge(60, standardize="quantile", random_state=0).fit(Xh, y)
    assert model.quantile_columns_ is not None and len(model.quantile_columns_) >= 1
    for dtype, rtol in ((np.float32, RTOL32), (np.float64, RTOL64)):
        (F,) = run(rko.to_onnx(model, Xh, dtype=dtype), Xh_test.astype(dtype))
        assert_close(F, model.predict(Xh_test), rtol)


# ---- classifiers --------------------------------------------------------------------------------------
def classifiers():
    return [
        rk.RFFRidgeClassifier(60, random_state=0), rk.RFFNetClassifier(random_state=0, **QUICK_NET),
        rk.EERFClassifier(40, random_state=0), rk.EERFClassifier(40, solver="logistic", alpha=1.0, random_state=0),
        rk.AdaptiveRFFClassifier(random_state=0, **QUICK_ADAPTIVE),
    ]


@pytest.mark.parametrize("model", classifiers(), ids=lambda m: f"{type(m).__name__}-{getattr(m, 'solver', '')}")
@pytest.mark.parametrize("n_classes", [2, 3])
def test_classifiers_labels_and_probabilities(model, n_classes, data):
    X, _, y2, y3, X_test = data
    model.fit(X, y2 if n_classes == 2 else y3)
    assert_classifier(model, X_test)


def test_classifier_in_float64_and_integer_labels(data):
    X, _, y2, _, X_test = data
    model = rk.RFFRidgeClassifier(60, random_state=0).fit(X, (y2 == "yes").astype(int) + 4)
    assert_classifier(model, X_test, np.float64)
    label, _ = run(rko.to_onnx(model, X), X_test.astype(np.float32))
    assert label.dtype == np.int64


def test_zipmap_as_for_scikit_learn_classifiers(data):
    X, _, _, y3, X_test = data
    model = rk.RFFRidgeClassifier(60, random_state=0).fit(X, y3)
    label, proba = run(rko.to_onnx(model, X), X_test.astype(np.float32))  # zipmap=True: a list of dicts
    assert set(proba[0]) == set(model.classes_)
    expected = model.predict_proba(X_test)
    got = np.array([[row[c] for c in model.classes_] for row in proba])
    np.testing.assert_allclose(got, expected, rtol=0, atol=ATOL_PROBA32)
    outputs = run(rko.to_onnx(model, X, options={"zipmap": "columns"}), X_test.astype(np.float32))
    assert len(outputs) == 1 + len(model.classes_)


# ---- pipelines ------------------------------------------------------------------------------------------
def test_pipelines(data):
    X, y, _, y3, X_test = data
    regression = make_pipeline(StandardScaler(), rk.RFFRidge(60, random_state=0)).fit(X, y)
    rko.register()
    (F,) = run(skl2onnx.to_onnx(regression, X[:1].astype(np.float32)), X_test.astype(np.float32))
    assert_close(F, regression.predict(X_test), RTOL32)
    features = make_pipeline(StandardScaler(), rk.Fastfood(64, random_state=0),
                             rk.RFFRidgeClassifier(40, random_state=0))
    assert_classifier(features.fit(X, y3), X_test)


# ---- errors and registration -----------------------------------------------------------------------------
@pytest.mark.parametrize("model", [rk.RFFRidge(10), rk.RFFRidgeClassifier(10), rk.Fastfood(8)],
                         ids=lambda m: type(m).__name__)
def test_unfitted_model_is_refused(model):
    rko.register()
    with pytest.raises(NotFittedError):
        skl2onnx.to_onnx(model, np.zeros((1, 3), np.float32))
    with pytest.raises(NotFittedError):
        rko.to_onnx(model, np.zeros((1, 3)))


def test_bad_arguments(data):
    X, y, _, _, _ = data
    with pytest.raises(TypeError, match="exports"):
        rko._describe(StandardScaler().fit(X))
    model = rk.RFFRidge(10, random_state=0).fit(X, y)
    with pytest.raises(ValueError, match="float32 or float64"):
        rko.to_onnx(model, X, dtype=np.int64)
    with pytest.raises(ValueError, match="2-D"):
        rko.to_onnx(model, X[0])
    with pytest.raises(TypeError, match="float or double"):
        skl2onnx.to_onnx(model, X[:1].astype(np.int64))


def test_register_is_idempotent():
    rko.register()
    rko.register()
    from skl2onnx._supported_operators import sklearn_operator_name_map

    assert all(sklearn_operator_name_map[cls] == f"Rffkern{cls.__name__}" for cls in rko.SUPPORTED)


def test_refused_opset(data):
    X, _, y2, _, _ = data
    with pytest.raises(ValueError, match="target_opset"):
        rko.to_onnx(rk.RFFRidgeClassifier(10, random_state=0).fit(X, y2), X, target_opset=12)


def test_nocl_gives_class_indices(data):
    X, _, _, y3, X_test = data
    model = rk.RFFRidgeClassifier(60, random_state=0).fit(X, y3)
    label, _ = run(rko.to_onnx(model, X, options={"zipmap": False, "nocl": True}), X_test.astype(np.float32))
    np.testing.assert_array_equal(model.classes_[label], model.predict(X_test))
