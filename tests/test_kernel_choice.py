"""The Matérn kernel, the sampling schemes and ``kernel="auto"`` in the estimators: RFFRidge (and the
classifier), RFFNet (in memory and on Dask) and ``rffkern.fit``.

The samplers themselves (densities, exact kernels, approximation error) are tested in
tests/test_kernel_sampling.py; here, that each estimator draws what the samplers draw, that
"auto" keeps the Matérn kernel where the data are rough and the Gaussian where they are smooth,
and that the model it keeps is the one the fixed kernel gives.
"""
import numpy as np
import pytest

import rffkern
from rffkern import RFFNetRegressor, RFFRidge, RFFRidgeClassifier
from rffkern._sampling import draw_map, radial_draw, radial_frequencies
from rffkern.ridge import AUTO_MATERN_NUS


def _rough(n=600, seed=0):
    """|x| sums: kinks, which a once-differentiable (Matérn 1.5) kernel fits better than the Gaussian."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(-2, 2, (n, 2))
    return X, np.abs(X[:, 0]) + np.abs(X[:, 1] - 0.5) + 0.05 * rng.standard_normal(n)


def _smooth(n=600, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-2, 2, (n, 2))
    return X, np.sin(X[:, 0]) * np.cos(X[:, 1]) + 0.05 * rng.standard_normal(n)


@pytest.mark.parametrize("sampling", ["random", "qmc", "orthogonal"])
@pytest.mark.parametrize("kernel", ["gaussian", "matern"])
def test_ridge_draws_the_samplers_map(kernel, sampling):
    """weights_ * length_scale_ and offsets_ are draw_map's unit-scale draw from the same seed."""
    X, y = _smooth(200)
    m = RFFRidge(64, kernel=kernel, nu=2.5, sampling=sampling, standardize=True, random_state=3).fit(X, y)
    W, b = draw_map(kernel, 2, 64, 1.0, np.random.default_rng(3), nu=2.5, sampling=sampling)
    np.testing.assert_allclose(m.weights_ * m.length_scale_, W, rtol=1e-13)
    np.testing.assert_array_equal(m.offsets_, b)
    assert (m.kernel_, m.nu_) == (kernel, 2.5 if kernel == "matern" else None)
    assert m.kernel_errors_ is None


def test_auto_keeps_a_matern_kernel_on_rough_data_and_equals_its_fixed_fit():
    X, y = _rough()
    auto = RFFRidge(300, kernel="auto", standardize=True, random_state=0).fit(X, y)
    assert auto.kernel_ == "matern" and auto.nu_ in AUTO_MATERN_NUS
    assert set(auto.kernel_errors_) == {("gaussian", None)} | {("matern", nu) for nu in AUTO_MATERN_NUS}
    assert auto.kernel_errors_[("matern", auto.nu_)] < auto.kernel_errors_[("gaussian", None)]
    # the same draw (the Gaussian's directions and phases, the Matérn radii from a child generator)
    # and the same widths: the fixed kernel's model
    fixed = RFFRidge(300, kernel="matern", nu=auto.nu_, standardize=True, random_state=0).fit(X, y)
    assert fixed.length_scale_ == auto.length_scale_ and fixed.alpha_ == auto.alpha_
    np.testing.assert_array_equal(fixed.weights_, auto.weights_)
    np.testing.assert_allclose(auto.predict(X), fixed.predict(X), rtol=0, atol=1e-12)
    assert auto.width_errors_ == pytest.approx(fixed.width_errors_, rel=1e-12)


def test_auto_keeps_the_gaussian_on_smooth_data_bit_for_bit():
    """Where no Matérn kernel is better by one standard error the model is the Gaussian default's,
    with the same random stream (the Matérn radii come from a child generator)."""
    X, y = _smooth()
    auto = RFFRidge(300, kernel="auto", random_state=0).fit(X, y)
    gauss = RFFRidge(300, random_state=0).fit(X, y)
    assert (auto.kernel_, auto.nu_) == ("gaussian", None)
    np.testing.assert_array_equal(auto.coef_, gauss.coef_)
    np.testing.assert_array_equal(auto.weights_, gauss.weights_)
    assert auto.standardize_ == gauss.standardize_ and auto.length_scale_ == gauss.length_scale_


def test_auto_matern_candidates_share_the_gaussian_draw():
    G, b, v = radial_draw(3, 50, np.random.default_rng(1))
    for nu in AUTO_MATERN_NUS:
        W, b_nu = draw_map("matern", 3, 50, 1.0, np.random.default_rng(1), nu=nu)
        np.testing.assert_array_equal(W, radial_frequencies("matern", G, v, nu))
        np.testing.assert_array_equal(b_nu, b)
        # the same directions: each column a positive multiple of the Gaussian one
        ratio = W / G
        np.testing.assert_allclose(ratio, ratio[:1].repeat(3, axis=0), rtol=1e-12)
        assert np.all(ratio > 0)


def test_auto_classifier_and_partial_fit():
    X, y = _rough(400)
    labels = (y > np.median(y)).astype(int)
    clf = RFFRidgeClassifier(200, kernel="auto", random_state=0).fit(X, labels)
    assert clf.kernel_ in ("gaussian", "matern") and len(clf.kernel_errors_) == 1 + len(AUTO_MATERN_NUS)
    assert clf.score(X, labels) > 0.9
    # partial_fit cannot compare: the Gaussian, as the documentation says
    streamed = RFFRidge(100, kernel="auto", random_state=0).partial_fit(X[:200], y[:200]).partial_fit(X[200:], y[200:])
    assert (streamed.kernel_, streamed.nu_, streamed.kernel_errors_) == ("gaussian", None, None)


@pytest.mark.parametrize("params, match", [
    ({"kernel": "matern", "nu": 0.0}, "nu"),
    ({"kernel": "matern", "nu": -1.5}, "nu"),
    ({"kernel": "matern", "nu": float("inf")}, "nu"),
    ({"kernel": "bessel"}, "kernel"),
    ({"sampling": "sobol"}, "sampling"),
    ({"kernel": "laplace", "sampling": "orthogonal"}, "radial"),
    ({"kernel": "cauchy", "sampling": "orthogonal"}, "radial"),
])
@pytest.mark.parametrize("cls", [RFFRidge, RFFNetRegressor])
def test_bad_kernel_settings_are_refused(cls, params, match):
    X, y = _smooth(50)
    with pytest.raises(ValueError, match=match):
        cls(16, max_iter=1, **params).fit(X, y) if cls is RFFNetRegressor else cls(16, **params).fit(X, y)


@pytest.mark.parametrize("sampling", ["random", "qmc"])
def test_rffnet_draws_the_samplers_map_and_learns_with_matern(sampling):
    X, y = _rough(400)
    net = RFFNetRegressor(100, kernel="matern", nu=1.5, sampling=sampling, max_iter=1, early_stopping=False,
                          refit_coef=False, random_state=2).fit(X, y)
    W, b = draw_map("matern", 2, 100, 1.0, np.random.default_rng(2), np.float32, nu=1.5, sampling=sampling)
    np.testing.assert_array_equal(net.weights_, W)
    np.testing.assert_array_equal(net.offsets_, b)
    trained = RFFNetRegressor(100, kernel="matern", nu=1.5, sampling=sampling, max_iter=30, random_state=2).fit(X, y)
    assert trained.score(X, y) > 0.95


def test_fit_takes_the_kernel_of_the_width_search():
    X, y = _rough(500)
    model = rffkern.fit(X, y, random_state=0, max_iter=5)
    report = model.selection_report_
    assert report["kernel"] == "matern" and report["nu"] in AUTO_MATERN_NUS
    assert set(report["kernel_errors"]) == {"gaussian"} | {f"matern(nu={nu:g})" for nu in AUTO_MATERN_NUS}
    # every later stage uses it: the returned model, ridge or RFFNet
    kernel = getattr(model, "kernel_", None) or model.kernel
    assert kernel == "matern" and (getattr(model, "nu_", None) or model.nu) == report["nu"]
    fixed = rffkern.fit(X, y, random_state=0, max_iter=5, kernel="gaussian")
    assert fixed.selection_report_["kernel"] == "gaussian" and fixed.selection_report_["kernel_errors"] is None


@pytest.mark.parametrize("kwargs, match", [({"kernel": "rbf"}, "kernel must be"), ({"kernel": "matern", "nu": -1}, "nu")])
def test_fit_refuses_bad_kernel_settings(kwargs, match):
    X, y = _smooth(60)
    with pytest.raises(ValueError, match=match):
        rffkern.fit(X, y, **kwargs)


def test_dask_ridge_matern_equals_in_memory(synchronous):
    da = pytest.importorskip("dask.array")
    X, y = _rough(300)
    Xd, yd = da.from_array(X, chunks=100), da.from_array(y, chunks=100)
    kw = dict(kernel="matern", nu=2.5, sampling="qmc", alpha=[1e-3, 1e-2, 1e-1], random_state=0)
    on_dask = RFFRidge(64, **kw).fit(Xd, yd)
    in_memory = RFFRidge(64, **kw).fit(X, y)
    assert on_dask.length_scale_ == pytest.approx(in_memory.length_scale_, rel=1e-12) and on_dask.alpha_ == in_memory.alpha_
    np.testing.assert_allclose(on_dask.weights_, in_memory.weights_, rtol=1e-12)
    np.testing.assert_allclose(on_dask.predict(X), in_memory.predict(X), rtol=0, atol=1e-9)


@pytest.mark.parametrize("make, kernel", [(_rough, "matern"), (_smooth, "gaussian")])
def test_dask_ridge_auto_chooses_as_in_memory(synchronous, make, kernel):
    """The same comparison in passes over the chunks: the same kernel, errors, width and model."""
    da = pytest.importorskip("dask.array")
    X, y = make(600)
    kw = dict(kernel="auto", standardize=True, alpha=[1e-5, 1e-4, 1e-3, 1e-2], random_state=0)
    on_dask = RFFRidge(300, **kw).fit(da.from_array(X, chunks=200), da.from_array(y, chunks=200))
    in_memory = RFFRidge(300, **kw).fit(X, y)
    assert on_dask.kernel_ == in_memory.kernel_ == kernel and on_dask.nu_ == in_memory.nu_
    assert set(on_dask.kernel_errors_) == set(in_memory.kernel_errors_)
    for key, error in in_memory.kernel_errors_.items():
        assert on_dask.kernel_errors_[key] == pytest.approx(error, rel=1e-9)
    assert on_dask.length_scale_ == pytest.approx(in_memory.length_scale_, rel=1e-12) and on_dask.alpha_ == in_memory.alpha_
    np.testing.assert_allclose(on_dask.predict(X), in_memory.predict(X), rtol=0, atol=1e-9)


@pytest.mark.parametrize("cls", ["EERFRegressor", "EERFClassifier"])
def test_eerf_matern_candidates_are_the_gaussian_draw_with_student_t_radii(cls):
    X, y = _rough(300)
    if cls == "EERFClassifier":
        y = (y > np.median(y)).astype(int)
    kw = dict(n_candidates=40, length_scale=1.0, standardize=True, random_state=4)
    gauss = getattr(rffkern, cls)(40, **kw).fit(X, y)
    matern = getattr(rffkern, cls)(40, kernel="matern", nu=1.5, **kw).fit(X, y)
    # every candidate is kept: the same directions and phases, other radii (the order is by energy)
    def by_phase(model):
        order = np.argsort(model.offsets_)
        return model.offsets_[order], model.weights_[:, order]
    (bg, Wg), (bm, Wm) = by_phase(gauss), by_phase(matern)
    np.testing.assert_array_equal(bg, bm)
    ratio = Wm / Wg
    np.testing.assert_allclose(ratio, ratio[:1].repeat(2, axis=0), rtol=1e-10)
    assert np.all(ratio > 0) and not np.allclose(ratio, 1.0)
    assert matern.score(X, y) > 0.9
