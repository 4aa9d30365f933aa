"""``rffkern.fit``: the staged search (width on a subset, penalty by LOO on every row, the held-out
rows added to the chosen ridge) and its progress lines."""
import re

import numpy as np
import pytest

import reference
import rffkern
from rffkern import _api
from rffkern._fit_options import fit_options
from rffkern.datasets import make_jse3
from rffkern.ridge import RFFRidge, RFFRidgeClassifier


@pytest.fixture
def small_search(monkeypatch):
    """Subsets smaller than the test data, so that every stage runs on a fast problem."""
    monkeypatch.setattr(_api, "SEARCH_ROWS", 300)
    monkeypatch.setattr(_api, "SEARCH_COMPONENTS", 60)


def test_verbose_prints_the_five_stages(small_search, capsys):
    X, y, _ = make_jse3(800, random_state=0)
    rffkern.fit(X, y, random_state=0, verbose=1, max_iter=2)
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 5
    for i, line in enumerate(lines, 1):
        assert re.fullmatch(rf"\[rffkern\.fit\] stage {i}/5: .+ \(elapsed \d+\.\d\d s\)", line), line
    assert re.search(r"width search on 300 rows, 60 features: kernel (gaussian|matern\(nu=[\d.]+\)), "
                     r"standardize (True|'global'), length_scale [\d.e+-]+, "
                     r"validation score", lines[1])
    assert re.search(r"RFFNet \(dense 2 epochs [\d.]+\): validation score", lines[2])
    assert re.search(r"stage 4/5: ridge on every training row(: not needed|, 1000 features)", lines[3])
    assert re.search(r"stage 5/5: chose (rffnet|ridge) \(RFFNet's lead in held-out loss over the (width search's )?"
                     r"ridge: [+-]\d\.\d{4} \+- \d\.\d{4}; it needs more than 1 standard error\)", lines[4])
    model = rffkern.fit(X, y, random_state=0, verbose=2, max_iter=2)
    inner = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("[RFFRidge] width")]
    # the width search's three widths, "global" standardization's median one (its two others if it
    # was better) and the two Matérn kernels at the least-error width (the kept one's two others if
    # one was better), then the full ridge's one width if it was needed
    counts = [tuple(int(v) for v in re.match(r"\[RFFRidge\] width (\d+)/(\d+)", ln).groups()) for ln in inner]
    report = model.selection_report_
    full = [(1, 1)] if "ridge" in report["validation_scores"] else []
    n_search = 6 + 2 * (report["standardize"] == "global") + 2 * (report["kernel"] == "matern")
    assert [c[0] for c in counts] == list(range(1, n_search + 1)) + [c[0] for c in full]
    assert counts[n_search - 1] == (n_search, n_search) and counts[n_search:] == full
    assert set(report["kernel_errors"]) == {"gaussian", "matern(nu=1.5)", "matern(nu=2.5)"}
    rffkern.fit(X, y, random_state=0, max_iter=2)
    assert capsys.readouterr().out == ""


def test_the_dense_variant_starts_from_the_pooled_kernel_where_the_search_kept_it(monkeypatch):
    """Pixel-like inputs: the width search keeps one pooled deviation ("global"); the dense RFFNet
    variant starts from relevances sd_j / (c w) (its kernel on inputs standardized each by its own
    deviation is the search's), the per-input start elsewhere."""
    import rffkern._api as api
    from rffkern import RFFNetRegressor
    from rffkern._inputs import fit_input_scaling

    starts = []

    class Recording(RFFNetRegressor):
        def fit(self, X, y, sample_weight=None):
            starts.append(np.array(self.init))
            return super().fit(X, y, sample_weight)

    monkeypatch.setattr(api, "RFFNetRegressor", Recording)
    rng = np.random.default_rng(0)
    p = np.r_[np.full(8, 0.5), np.geomspace(0.005, 0.05, 40)]
    # pixels inked at intensities (two-valued ones are scaled alike by robust_inputs: one unit for all)
    X = (rng.random((700, p.size)) < p) * np.round(rng.uniform(0.5, 1.0, (700, p.size)), 2)
    y = np.sin(1.2 * X[:, :8] @ np.linspace(0.5, 1.5, 8)) + 0.05 * rng.normal(size=700)
    model = rffkern.fit(X, y, random_state=0, max_iter=3)
    report = model.selection_report_
    assert report["standardize"] == "global" and report["rffnet_dense_start"] == "pooled"
    assert len(starts) == 1  # 48 inputs: the dense variant only
    # the pooled start: the inputs' own deviations over one pooled deviation, over one width
    # (taken on the search's rows, 80% of these: the rare inputs' deviations move)
    # (each input's own scale as RFFNet takes it: its deviation, half its gap where two-valued)
    ratio = starts[0] / starts[0].max()
    sd = fit_input_scaling(X, None, True).scale  # (on every row: the search's are 80% of them)
    assert np.corrcoef(ratio, sd)[0, 1] > 0.9
    np.testing.assert_allclose(ratio[:8], 1.0, rtol=0.1)
    starts.clear()
    X2, y2, _ = make_jse3(700, random_state=0)
    report = rffkern.fit(X2, y2, random_state=0, max_iter=3).selection_report_
    assert report["standardize"] is True and report["rffnet_dense_start"] == "per-input"
    np.testing.assert_array_equal(starts[0], np.full(X2.shape[1], 1.0 / report["rffnet_init_width"]))


def test_the_chosen_ridge_holds_every_row(small_search):
    X, y, _ = make_jse3(800, random_state=1)
    # RFFNet stopped after one epoch, without its closing fit, loses to the width search's ridge:
    # the full ridge is fitted, wins and takes the held-out rows
    model = rffkern.fit(X, y, random_state=0, max_iter=1, refit_coef=False)
    assert model.selection_report_["chosen"] == "ridge" and isinstance(model, RFFRidge)
    scores = model.selection_report_["validation_scores"]
    assert scores["rffnet"] <= scores["width_search"] and scores["ridge"] >= scores["rffnet"]
    assert model.n_samples_seen_ == 800
    assert set(model.selection_report_["fit_times"]) == {"width_search", "ridge", "rffnet", "ridge_refit"}
    # the model of all rows at the chosen width and penalty: the Gram of the 640 training rows plus
    # that of the 160 held-out ones, i.e. a one-width one-alpha fit with the training rows' scaling
    refit = RFFRidge(length_scale=model.length_scale_, alpha=model.alpha_,
                     random_state=model.random_state)
    assert model.score(X, y) > 0.9
    # importances are skipped in the intermediate fits, computed for the returned model over every
    # row (not over the held-out ones that partial_fit added)
    assert sorted(np.argsort(-model.feature_importances_)[:2].tolist()) == [0, 1]
    reported = model.feature_importances_.copy()
    model._store_derivative_norms(model._standardized(X), rng=np.random.default_rng(0))
    np.testing.assert_array_equal(model.feature_importances_, reported)
    assert model.alpha_ in RFFRidge().alpha and model.length_scale_ > 0
    assert refit.get_params()["alpha"] == model.alpha_
    again = rffkern.fit(X, y, random_state=0, max_iter=1, refit_coef=False)
    np.testing.assert_array_equal(again.predict(X), model.predict(X))  # deterministic


def test_classification_through_the_staged_search(small_search):
    X, y, _ = make_jse3(900, random_state=2)
    labels = np.array(["low", "mid", "high"])[np.digitize(y, np.quantile(y, [1 / 3, 2 / 3]))]
    # RFFNet after one epoch without its closing fit loses: the ridge path is exercised
    model = rffkern.fit(X, labels, random_state=0, max_iter=1, refit_coef=False)
    assert isinstance(model, RFFRidgeClassifier) and model.n_samples_seen_ == 900
    assert set(model.classes_) == {"low", "mid", "high"}
    assert np.mean(model.predict(X) == labels) > 0.7
    assert sorted(np.argsort(-model.feature_importances_)[:2].tolist()) == [0, 1]


def test_rffnet_stage_trains_both_variants_and_keeps_the_better(small_search, monkeypatch):
    X, y, _ = make_jse3(600, random_state=3)
    few = rffkern.fit(X, y, random_state=0, max_iter=3).selection_report_  # 10 inputs < 50
    assert list(few["rffnet_variant_scores"]) == ["dense"] and few["rffnet_variant"] == "dense"
    monkeypatch.setattr(_api, "SPARSE_MIN_FEATURES", 10)
    model = rffkern.fit(X, y, random_state=0, max_iter=3)
    report = model.selection_report_
    scores = report["rffnet_variant_scores"]
    assert set(scores) == set(_api.RFFNET_VARIANTS) == {"sparse", "dense"}
    assert scores["sparse"] != scores["dense"]  # two different trainings
    assert report["rffnet_variant"] == max(scores, key=scores.get)
    assert report["validation_scores"]["rffnet"] == max(scores.values())
    # parameters that fix what tells the variants apart leave one run
    one = rffkern.fit(X, y, random_state=0, max_iter=3, solver="adam", relevance_penalty=0.0,
                      learning_rate=1e-3).selection_report_
    assert list(one["rffnet_variant_scores"]) == ["sparse"]
    assert one["rffnet_variant_scores"]["sparse"] == scores["dense"]  # = the paper's run above
    assert few["rffnet_variant_scores"]["dense"] == scores["dense"]


def test_returned_rffnet_regressor_closes_on_the_held_out_rows_too(small_search):
    X, y, _ = make_jse3(700, random_state=4)
    model = rffkern.fit(X, y * 1000.0 + 5.0, random_state=0, max_iter=20)
    assert model.selection_report_["chosen"] == "rffnet" and "rffnet_refit" in model.selection_report_["fit_times"]
    assert not hasattr(model, "_closing_stats") and "_fit_options" not in model.__dict__
    # the same as a closing ridge on every row at the chosen penalty, with the trained relevances
    from rffkern._ridge_solvers import FourierFeatureMap, fit_ridge_map
    trained_intercept, y_scale = model._trained_map[3], model.y_scale_
    Xr = model._standardized(X).astype(np.float64) * model.relevances_.astype(np.float64)
    Yr = ((y * 1000.0 + 5.0).reshape(-1, 1) - trained_intercept) / y_scale
    fmap = FourierFeatureMap(model.weights_.astype(np.float64), model.offsets_.astype(np.float64),
                             float(model.scale_))
    coef, intercept, _, _, _ = fit_ridge_map(fmap, Xr, Yr, [model.refit_alpha_])
    np.testing.assert_allclose(model.coef_, coef, rtol=2e-3, atol=1e-4 * np.abs(coef).max())
    np.testing.assert_allclose(model.intercept_, trained_intercept + intercept * y_scale, rtol=1e-5)


@pytest.mark.parametrize("n_classes", [2, 3])
def test_returned_rffnet_classifier_closes_on_the_held_out_rows_too(n_classes):
    """The closing logistic / softmax fit again on the training and the held-out rows, at the
    chosen penalty: its gradient over all of them vanishes."""

    X, y, _ = make_jse3(500, random_state=5)
    labels = np.digitize(y, np.quantile(y, np.linspace(0, 1, n_classes + 1)[1:-1]))
    net = rffkern.RFFNetClassifier(n_components=40, refit_components=120, max_iter=20, random_state=0)
    with fit_options(net, keep_closing_stats=True):
        net.fit(X[:400], labels[:400])
    before = net.coef_.copy()
    net._closing_fit_add_rows(X[400:], labels[400:])
    assert not hasattr(net, "_closing_stats") and not np.array_equal(net.coef_, before)
    Z = net._trained_features(net._standardized(X))
    Y = (labels[:, None] == np.arange(n_classes)).astype(float)
    Y = Y[:, 1:] if n_classes == 2 else Y
    kind = "logistic" if n_classes == 2 else "softmax"
    _, grad = reference.closing_fit_objective(Z, Y, kind, net.refit_alpha_, net.coef_.astype(np.float64))
    _, grad_before = reference.closing_fit_objective(Z, Y, kind, net.refit_alpha_, before.astype(np.float64))
    assert np.abs(grad).max() < 1e-3 * np.abs(grad_before).max() + 1e-6


def test_classifier_rffnet_trains_on_a_capped_subset_and_closes_on_every_row(small_search, monkeypatch):
    """Above NET_MAX_ROWS_CLASSIFICATION training rows RFFNet learns its relevances on a stratified
    subset; the returned model's closing fit then holds every row (its gradient over all of them
    vanishes), and the result is still deterministic."""
    monkeypatch.setattr(_api, "NET_MAX_ROWS_CLASSIFICATION", 300)
    X, y, _ = make_jse3(900, random_state=6)
    labels = np.digitize(y, np.quantile(y, [1 / 3, 2 / 3]))
    model = rffkern.fit(X, labels, random_state=0, max_iter=15, n_components=40, refit_components=120)
    report = model.selection_report_
    assert report["chosen"] == "rffnet" and isinstance(model, rffkern.RFFNetClassifier)
    assert 280 <= report["rffnet_rows"] <= 320  # about the cap, each class in proportion
    assert model.t_ <= model.n_iter_ * 320  # the epochs ran over the subset only
    Z = model._trained_features(model._standardized(X))
    Y = (labels[:, None] == np.arange(3)).astype(float)
    _, grad = reference.closing_fit_objective(Z, Y, "softmax", model.refit_alpha_, model.coef_.astype(np.float64))
    assert np.abs(grad).max() < 1e-5
    again = rffkern.fit(X, labels, random_state=0, max_iter=15, n_components=40, refit_components=120)
    np.testing.assert_array_equal(again.coef_, model.coef_)
    np.testing.assert_array_equal(again.relevances_, model.relevances_)


def test_rows_to_add_respects_the_closing_cap(monkeypatch):
    monkeypatch.setattr(_api, "CLOSING_MAX_ROWS", 500)
    X = np.arange(2000.0).reshape(-1, 1)
    y = np.repeat([0, 1], 1000)
    idx_tr, idx_val = np.arange(1600), np.arange(1600, 2000)
    idx_net = np.arange(0, 1600, 16)  # 100 rows
    Xa, ya, wa = _api._rows_to_add(X, y, None, idx_tr, idx_net, idx_val, np.random.default_rng(0))
    assert 0 < Xa.shape[0] <= 500 - 100 + 40  # about the room left (each class at least 20 rows)
    assert set(Xa[:, 0].astype(int)) >= set(idx_val)  # every held-out row joins
    assert not set(Xa[:, 0].astype(int)) & set(idx_net)  # no trained row twice
    monkeypatch.setattr(_api, "CLOSING_MAX_ROWS", 50_000)
    Xa, _, wa = _api._rows_to_add(X, y, None, idx_tr, idx_net, idx_val, np.random.default_rng(0))
    assert sorted(Xa[:, 0].astype(int)) == sorted(set(range(2000)) - set(idx_net)) and wa is None
    Xa, ya, wa = _api._rows_to_add(X, y, X[:, 0] + 1.0, idx_tr, idx_net, idx_val, np.random.default_rng(0))
    np.testing.assert_array_equal(wa, Xa[:, 0] + 1.0)  # each row with its own weight
    w = np.full(2000, 4.0)
    w[idx_val] = 2.0
    _, _, wa = _api._rows_to_add(X, y, w, idx_tr, idx_net, idx_val, np.random.default_rng(0))
    # in the caller's units: RFFNet, trained on rows that weigh alike (4 each) as unweighted, divides
    # them by that unit (its closing fit's rows then weigh 1 and 0.5)
    assert set(wa) == {4.0, 2.0}
    from rffkern._data import relative_sample_weight
    assert set(relative_sample_weight(wa, wa.size, unit=4.0)[0]) == {1.0, 0.5}


def test_rffnet_starts_from_the_searched_width_of_least_loo_error():
    """rffkern.fit's RFFNet starts from the width of least LOO error among those the search compared
    (what RFFRidge picks from an explicit list of those widths), not the ridge's one-SE choice."""
    from rffkern._api import _least_error_width
    X, y, _ = make_jse3(400, random_state=2)
    auto = RFFRidge(200, random_state=0).fit(X, y)
    widths, errors = auto._width_search[True]  # RFFNet's inputs: each standardized by its own deviation
    listed = RFFRidge(200, length_scale=widths, random_state=0).fit(X, y)
    np.testing.assert_allclose(listed.width_errors_, errors)
    assert _least_error_width(auto) == listed.length_scale_
    model = rffkern.fit(X, y, random_state=0, max_iter=50)  # (5 epochs: no clear lead, the ridge returned)
    report = model.selection_report_
    assert report["chosen"] == "rffnet"
    np.testing.assert_array_equal(model.init, np.full(X.shape[1], 1.0 / report["rffnet_init_width"]))


@pytest.mark.parametrize("classify", [False, True])
def test_variants_side_by_side_give_the_sequential_model(small_search, monkeypatch, classify):
    """With two threads or more the two RFFNet variants train side by side (each on its share of
    the threads, BLAS on one): the same model as one after the other, and the caller's n_jobs on it."""
    import rffkern._validation as validation

    monkeypatch.setattr(_api, "SPARSE_MIN_FEATURES", 10)
    X, y, _ = make_jse3(600, random_state=3)
    if classify:
        y = np.digitize(y, [-0.5, 0.5])
    one = rffkern.fit(X, y, random_state=0, max_iter=3, n_jobs=1)
    real = validation.resolve_n_threads
    # two threads even on one core
    monkeypatch.setattr(validation, "resolve_n_threads", lambda n: 2 if n == 2 else real(n))
    import concurrent.futures

    pools = []

    class Spy(concurrent.futures.ThreadPoolExecutor):
        def __init__(self, n):
            pools.append(n)
            super().__init__(n)
    monkeypatch.setattr(_api, "ThreadPoolExecutor", Spy)
    two = rffkern.fit(X, y, random_state=0, max_iter=3, n_jobs=2)
    assert pools == [2]  # the side-by-side path ran
    assert two.selection_report_["rffnet_variant_scores"] == one.selection_report_["rffnet_variant_scores"]
    assert two.selection_report_["chosen"] == one.selection_report_["chosen"]
    np.testing.assert_array_equal(two.predict(X), one.predict(X))
    assert two.get_params()["n_jobs"] == 2


def test_validation_losses_order_models_as_their_scores():
    """The per-row losses of the model choice average to 1 - R^2 (per output, then over them) and
    to 1 - accuracy, the scores' orders."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((200, 3))
    Y = np.column_stack([X[:, 0] + 0.3 * rng.standard_normal(200), 100.0 * X[:, 1] ** 2])
    reg = RFFRidge(50, random_state=0).fit(X[:150], Y[:150])
    losses = _api._validation_losses(reg, X[150:], Y[150:], classify=False)
    assert losses.shape == (50,)
    np.testing.assert_allclose(losses.mean(), 1.0 - reg.score(X[150:], Y[150:]), rtol=1e-12)
    labels = np.where(X[:, 0] > 0, "a", "b")
    clf = RFFRidgeClassifier(50, random_state=0).fit(X[:150], labels[:150])
    losses = _api._validation_losses(clf, X[150:], labels[150:], classify=True)
    np.testing.assert_allclose(losses.mean(), 1.0 - clf.score(X[150:], labels[150:]))
    assert set(np.unique(losses)) <= {0.0, 1.0}
    mean, se = _api._lead(np.array([0.0, 1.0, 0.0, 0.0]), np.array([1.0, 1.0, 1.0, 0.0]))
    assert mean == 0.5 and se == pytest.approx(np.std([1, 0, 1, 0], ddof=1) / 2)


def test_rffnet_is_returned_only_with_a_clear_lead(small_search, monkeypatch):
    """RFFNet wins only by more than LEAD_STANDARD_ERRORS standard errors of the per-row loss
    differences; short of that the full ridge is fitted and returned."""
    X, y, _ = make_jse3(600, random_state=3)
    model = rffkern.fit(X, y, random_state=0, max_iter=50)
    report = model.selection_report_
    lead = report["rffnet_lead"]
    assert report["chosen"] == "rffnet" and lead["mean"] > lead["standard_error"] > 0
    assert lead["over"] == ("ridge" if "ridge" in report["validation_scores"] else "width_search")
    monkeypatch.setattr(_api, "LEAD_STANDARD_ERRORS", 1e6)  # no lead is clear enough
    strict = rffkern.fit(X, y, random_state=0, max_iter=50)
    report = strict.selection_report_
    assert report["chosen"] == "ridge" and isinstance(strict, RFFRidge)
    assert "ridge" in report["validation_scores"] and report["rffnet_lead"]["over"] == "ridge"
    assert report["validation_scores"]["rffnet"] == model.selection_report_["validation_scores"]["rffnet"]
    assert strict.n_samples_seen_ == 600


def test_text_inputs_are_refused_by_column():
    """A text column is refused naming it and its first non-number; numbers held as text or
    objects are taken."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((60, 3)).astype(object)
    X[7, 1] = "red"
    with pytest.raises(ValueError, match=r"X column 1 is not numeric \(value 'red'\).*OneHotEncoder"):
        rffkern.fit(X, rng.standard_normal(60), random_state=0)
    as_text = rng.standard_normal((60, 2)).astype(str)
    model = rffkern.fit(as_text, rng.standard_normal(60), random_state=0, max_iter=3)
    assert model.n_features_in_ == 2


class _Frame:
    """The two things of a DataFrame that rffkern.fit reads: ``columns`` and the array."""

    def __init__(self, columns, values):
        self.columns, self._values = columns, values

    def __array__(self, dtype=None, copy=None):
        return np.asarray(self._values, dtype=dtype)


def test_a_frame_text_column_is_refused_by_name():
    rng = np.random.default_rng(0)
    values = np.column_stack([rng.standard_normal(60), rng.choice(["red", "blue"], 60)]).astype(object)
    values[:, 0] = values[:, 0].astype(float)
    with pytest.raises(ValueError, match="X column 'colour' is not numeric"):
        rffkern.fit(_Frame(["size", "colour"], values), rng.standard_normal(60), random_state=0)


def test_a_dataframe_text_column_is_refused_by_name():
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"size": rng.standard_normal(60), "colour": rng.choice(["red", "blue"], 60)})
    with pytest.raises(ValueError, match="X column 'colour' is not numeric"):
        rffkern.fit(frame, rng.standard_normal(60), random_state=0)


def test_many_classes_on_few_rows_fit_without_a_regression_warning(recwarn):
    """rffkern.fit's held-out rows join the ridge or RFFNet's closing fit as a chunk of known
    classes: scikit-learn's "more classes than half the rows" warning does not apply to them."""
    rng = np.random.default_rng(0)
    y = np.repeat(np.arange(20), 6)
    X = rng.standard_normal((120, 3)) + y[:, None]
    model = rffkern.fit(X, y, random_state=0, max_iter=5)
    assert set(model.classes_) == set(range(20))
    assert not [w for w in recwarn if "unique classes" in str(w.message)]
    chunk = RFFRidgeClassifier(50, random_state=0).partial_fit(X[:10], y[:10], classes=np.arange(20))
    assert not [w for w in recwarn if "unique classes" in str(w.message)]
    assert chunk.classes_.size == 20


def test_rffnet_lowers_its_learning_rate_once_in_fit():
    """``FIT_LR_DECAYS``: the variants stop at their second plateau (RFFNet alone at its fourth:
    here it lowers the step size twice and runs all 100 epochs); the returned model forgets the
    override (a later fit of it is RFFNet's own)."""
    X, y, _ = make_jse3(1500, random_state=0)
    model = rffkern.fit(X, y, random_state=0)
    assert model.selection_report_["chosen"] == "rffnet"
    assert model.learning_rate_ == pytest.approx(model.learning_rate / 5)
    assert model.n_iter_ < model.max_iter
    assert "_fit_options" not in model.__dict__
    alone = rffkern.RFFNetRegressor(**model.get_params()).fit(X, y)
    assert alone.learning_rate_ < model.learning_rate_


def test_dask_arrays_are_refused_with_the_way_forward():
    """np.asarray would gather a Dask array on this machine unasked: fit says what to do instead."""
    da = pytest.importorskip("dask.array")
    X, y, _ = make_jse3(60, random_state=0)
    with pytest.raises(TypeError, match=r"Dask array as X.*RFFRidge.*X.compute\(\)"):
        rffkern.fit(da.from_array(X, chunks=30), y)
    with pytest.raises(TypeError, match="Dask array as y"):
        rffkern.fit(X, da.from_array(y, chunks=30))


@pytest.mark.parametrize("n", [4, 5, 7])
def test_the_smallest_data_sets_fit_without_warnings(n):
    """With 4 or 5 rows one row is held out, whose R^2 is undefined: the comparison finds no lead
    (the ridge is kept) and scikit-learn's UndefinedMetricWarning stays inside rffkern.fit."""
    import warnings

    rng = np.random.default_rng(0)
    X = rng.normal(size=(n, 3))
    y = X[:, 0] + 0.1 * rng.normal(size=n)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model = rffkern.fit(X, y, random_state=0)
    report = model.selection_report_
    assert np.isfinite(model.predict(X)).all()
    if n - int(np.ceil(0.2 * n)) == n - 1:  # one held-out row
        assert np.isnan(report["validation_scores"]["width_search"])
        assert report["chosen"] == "ridge"


def test_a_dataframe_fit_keeps_its_column_names():
    """Fitted on a DataFrame, the returned model has ``feature_names_in_``: predicting on the same
    columns does not warn that it was "fitted without feature names", other columns are refused."""
    import warnings
    pd = pytest.importorskip("pandas")
    X, y, _ = make_jse3(300, random_state=2)
    frame = pd.DataFrame(X, columns=[f"x{j}" for j in range(X.shape[1])])
    for target in (y, (y > 0).astype(int)):
        model = rffkern.fit(frame, target, random_state=0, max_iter=5)
        assert list(model.feature_names_in_) == list(frame.columns)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            on_frame = model.predict(frame)
        with pytest.warns(UserWarning, match="does not have valid feature names"):  # scikit-learn's
            np.testing.assert_array_equal(on_frame, model.predict(X))
        with pytest.raises(ValueError, match="feature names"):
            model.predict(frame[frame.columns[::-1]])
    numbered = rffkern.fit(pd.DataFrame(X), y, random_state=0, max_iter=5)  # integer column names
    assert not hasattr(numbered, "feature_names_in_")


def test_targets_near_the_float_limits_give_the_model_of_unit_targets(small_search):
    """y times 1e300 or 1e-300: the same choice, held-out scores and importances as y, and no
    overflow (its squares overflowed into an inf error, a NaN score and NaN importances)."""
    import warnings

    X, y, _ = make_jse3(300, random_state=1)
    models = {}
    for c in (1.0, 1e300, 1e-300):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            models[c] = rffkern.fit(X, y * c, random_state=0)
    base = models[1.0].selection_report_
    for c in (1e300, 1e-300):
        report = models[c].selection_report_
        assert report["chosen"] == base["chosen"]
        for key, score in base["validation_scores"].items():
            assert report["validation_scores"][key] == pytest.approx(score, rel=1e-9)
        np.testing.assert_allclose(models[c].feature_importances_, models[1.0].feature_importances_, rtol=1e-6)
        np.testing.assert_allclose(models[c].predict(X[:20]) / c, models[1.0].predict(X[:20]), rtol=1e-6)
    # the ridge's coefficients are in the targets' units
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        huge = RFFRidge(100, random_state=0).fit(X, y * 1e300).feature_importances_
    np.testing.assert_allclose(huge, RFFRidge(100, random_state=0).fit(X, y).feature_importances_, rtol=1e-6)


def test_a_constant_integer_target_is_one_class_with_the_way_out():
    X = np.random.default_rng(0).normal(size=(60, 3))
    with pytest.raises(ValueError, match=r"single value \(1\.0\).*one class.*task='regression'"):
        rffkern.fit(X, np.ones(60), random_state=0)
    with pytest.raises(ValueError, match=r"single value \('a'\).*needs at least 2$"):
        rffkern.fit(X, np.array(["a"] * 60), random_state=0)
    model = rffkern.fit(X, np.ones(60), task="regression", random_state=0)
    np.testing.assert_allclose(model.predict(X), 1.0)


def test_bad_inputs_are_named_as_rffkern_fit_s():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 3))
    X_nan = X.copy()
    X_nan[5, 1] = np.nan
    with pytest.raises(ValueError, match="Input X contains NaN.\nrffkern.fit does not accept missing values"):
        rffkern.fit(X_nan, X[:, 0], random_state=0)
    mixed = np.array([1 if v > 0 else "neg" for v in X[:, 0]], dtype=object)
    with pytest.raises(ValueError, match=r"y mixes text and other labels \(e.g. 'neg' and 1\)"):
        rffkern.fit(X, mixed, random_state=0)
    np.testing.assert_array_equal(X_nan[5, 1], np.nan)  # the caller's array as it was


def test_a_column_of_class_labels_is_the_label_vector(small_search):
    """labels[:, None] (or a one-column DataFrame): the model of the 1-D labels, with scikit-learn's
    DataConversionWarning, as its estimators give; it built an n x n array in the comparison of
    the held-out losses (3.4 GB at 50,000 rows), then failed with a matmul shape error. Several
    label columns are refused."""
    from sklearn.exceptions import DataConversionWarning

    X, y, _ = make_jse3(300, random_state=2)
    labels = np.array(["low", "high"])[(y > np.median(y)).astype(int)]
    plain = rffkern.fit(X, labels, random_state=0, max_iter=2)
    for column in (labels[:, None], (y > np.median(y)).astype(int)[:, None]):
        with pytest.warns(DataConversionWarning, match="column-vector y"):
            model = rffkern.fit(X, column, random_state=0, max_iter=2)
        assert model.predict(X).shape == (300,)
        if column.dtype.kind == "U":
            np.testing.assert_array_equal(model.predict(X), plain.predict(X))
    with pytest.raises(ValueError, match=r"one class label per sample \(a 1-D y\), got y of shape \(300, 2\)"):
        rffkern.fit(X, np.c_[labels, labels], task="classification", random_state=0)
