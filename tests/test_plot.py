"""rffkern.plot: what each helper draws, its input checks, and that import rffkern stays free of
matplotlib."""
import subprocess
import sys

import numpy as np
import pytest

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

import rffkern  # noqa: E402
from rffkern import plot  # noqa: E402
from rffkern.datasets import make_jse3  # noqa: E402


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


def test_import_rffkern_does_not_import_matplotlib():
    code = "import sys, rffkern, rffkern.plot; print('matplotlib' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_relevances_orders_bars_and_colours_the_support():
    ax = plot.relevances([0.1, 0.9, 0.4, 0.7], ["a", "b", "c", "d"], support=[2, 3], top=3)
    assert [t.get_text() for t in ax.get_xticklabels()] == ["b", "d", "c"]
    assert [p.get_height() for p in ax.patches] == [0.9, 0.7, 0.4]
    colours = [matplotlib.colors.to_hex(p.get_facecolor()) for p in ax.patches]
    assert colours[0] != colours[1] and colours[1] == colours[2]
    assert ax.get_legend() is not None


def test_relevances_reads_a_fitted_model():
    X, y, _ = make_jse3(200, random_state=0)
    model = rffkern.RFFNetRegressor(n_components=20, max_iter=2, random_state=0).fit(X, y)
    ax = plot.relevances(model, support=np.array([True, True] + [False] * 8))
    heights = [p.get_height() for p in ax.patches]
    np.testing.assert_allclose(sorted(heights, reverse=True), np.sort(model.feature_importances_)[::-1])


@pytest.mark.parametrize("kwargs, match", [
    (dict(model=[[1.0, 2.0]]), "1-D"),
    (dict(model=[]), "non-empty"),
    (dict(model=[1.0, np.nan]), "NaN"),
    (dict(model=[1.0, 2.0], feature_names=["a"]), "feature names"),
    (dict(model=[1.0, 2.0], top=0), "top"),
    (dict(model=[1.0, 2.0], support=[2]), "support indices"),
    (dict(model=[1.0, 2.0], support=[True]), "boolean support"),
])
def test_relevances_rejects_bad_input(kwargs, match):
    with pytest.raises(ValueError, match=match):
        plot.relevances(**kwargs)


def test_topk_path_from_a_selector_and_from_scores():
    X, y, _ = make_jse3(300, random_state=0)
    selector = rffkern.TopKSelector(rffkern.RFFNetRegressor(n_components=20, max_iter=3, random_state=0),
                                    random_state=0).fit(X, y)
    ax = plot.topk_path(selector)
    np.testing.assert_allclose(ax.lines[0].get_ydata(), selector.scores_)
    assert ax.lines[1].get_xdata()[0] == selector.n_features_selected_
    ax = plot.topk_path([-3.0, -1.0, -2.0])
    assert len(ax.lines) == 1 and list(ax.lines[0].get_xdata()) == [1, 2, 3]


def test_kernel_approximation_draws_each_map_and_the_rate():
    ax = plot.kernel_approximation([10, 40, 160], {"RFF": [0.4, 0.2, 0.1], "ORF": [0.3, 0.15, 0.08]})
    assert [line.get_label() for line in ax.lines[:2]] == ["RFF", "ORF"]
    np.testing.assert_allclose(ax.lines[2].get_ydata(), [0.4, 0.2, 0.1])  # 0.4 * sqrt(10 / s)
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
    with pytest.raises(ValueError, match="2 values for 3 sizes"):
        plot.kernel_approximation([10, 40, 160], {"RFF": [0.4, 0.2]})
    with pytest.raises(ValueError, match="at least one"):
        plot.kernel_approximation([10], {})


def test_regularization_path_lines_and_errors():
    coefs = np.array([[1.0, 1.0, 1.0], [1.5, 1.0, 0.5], [2.5, 0.5, 0.0]])
    ax = plot.regularization_path([1.0, 0.1, 0.01], coefs, support=[0], errors=[np.nan, 2.0, 1.0],
                                  chosen=0.01)
    assert len(ax.lines) == 4  # three features and the chosen lambda
    np.testing.assert_allclose(ax.lines[0].get_ydata(), coefs[:, 0])
    assert ax.lines[0].get_linewidth() > ax.lines[1].get_linewidth()
    twin = [a for a in ax.figure.axes if a is not ax][0]
    np.testing.assert_allclose(twin.lines[0].get_ydata(), [2.0, 1.0])  # the NaN is left out
    with pytest.raises(ValueError, match="positive"):
        plot.regularization_path([1.0, 0.0], np.ones((2, 2)))
    with pytest.raises(ValueError, match="shape"):
        plot.regularization_path([1.0, 0.1], np.ones((3, 2)))


def test_frequency_histogram_of_a_model_and_of_an_array():
    rng = np.random.default_rng(0)
    x = rng.uniform(-2, 2, (300, 1))
    model = rffkern.AdaptiveRFFRegressor(16, n_iter=5, random_state=0).fit(x, np.sin(3 * x[:, 0]))
    ax = plot.frequency_histogram(model, bins=10, weighted=True)
    assert len(ax.patches) == 10
    heights = np.array([p.get_height() for p in ax.patches])
    widths = np.array([p.get_width() for p in ax.patches])
    assert np.isclose((heights * widths).sum(), 1.0)  # a density
    omega = rng.standard_normal((4, 200))  # several input features: histogram of the norms
    ax = plot.frequency_histogram(omega, spectrum=lambda r: r ** 3 * np.exp(-r ** 2 / 2), bins=15)
    grid, density = ax.lines[0].get_data()
    assert grid.min() >= 0 and np.isclose(getattr(np, "trapezoid", getattr(np, "trapz", None))(density, grid), 1.0)
    with pytest.raises(ValueError, match="amplitudes_"):
        plot.frequency_histogram(omega, weighted=True)
    with pytest.raises(ValueError, match="bins"):
        plot.frequency_histogram(omega, bins=0)
    with pytest.raises(ValueError, match="NaN"):
        plot.frequency_histogram(np.array([[np.inf, 1.0]]))


def test_helpers_draw_into_a_given_axes():
    fig, axes = plt.subplots(1, 2)
    assert plot.relevances([1.0, 2.0], ax=axes[0]) is axes[0]
    assert plot.kernel_approximation([1, 2], {"a": [1.0, 0.7]}, ax=axes[1]) is axes[1]
    assert len(fig.axes) == 2


def test_interval_band_draws_the_band_the_mean_and_the_draws():
    from rffkern import RFFRidge

    X = np.linspace(-3, 3, 150)[:, None]
    y = np.sin(X[:, 0]) + 0.2 * np.random.default_rng(0).standard_normal(150)
    model = RFFRidge(40, random_state=0).fit(X, y)
    ax = plot.interval_band(model, X[::-1], y[::-1], n_draws=2, coverage=0.8)
    lo, hi = model.predict_interval(X, coverage=0.8).T
    band = ax.collections[0].get_paths()[0].vertices
    assert np.isclose(band[:, 1].min(), lo.min()) and np.isclose(band[:, 1].max(), hi.max())
    np.testing.assert_allclose(ax.lines[0].get_ydata(), model.predict(X))  # sorted by the input
    assert len(ax.lines) == 3
    ax = plot.interval_band(model, X, band="std")
    assert len(ax.collections) == 1
    with pytest.raises(ValueError, match="band must be"):
        plot.interval_band(model, X, band="quantile")
    with pytest.raises(ValueError, match="feature must index"):
        plot.interval_band(model, X, feature=3)
