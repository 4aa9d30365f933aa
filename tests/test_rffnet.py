"""RFFNet estimators: the compiled training loop against a pure-NumPy reference of Algorithm 1/2,
scikit-learn compatibility, reproducibility across thread counts, recovery of the true support,
partial_fit, TopK and input validation."""
import pickle
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.datasets import make_blobs, make_moons
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline
from sklearn.utils.estimator_checks import parametrize_with_checks

import rffkern
import reference
from rffkern._fit_options import fit_options
from rffkern._importances import rms_partial_derivatives
from rffkern._sampling import draw_frequencies, draw_offsets
from rffkern.datasets import make_gse2, make_jse2, make_jse3
from rffkern import RFFNetClassifier, RFFNetRegressor, TopKSelector, topk_selection
from rffkern.rffnet import N_INIT_AUTO, N_INIT_FINALISTS, N_INIT_MIN_FEATURES, START_EPOCHS, constant_init
from rffkern.topk import TIE_RTOL


# ------------------------------------------------------------------ NumPy reference of the fit
# The paper's solver, initial relevances and unpenalised theta (the defaults differ).
PAPER_SOLVER = dict(solver="adam", init="constant", relevance_penalty=0.0)


def _ref_epoch(Xs, Y, W, b, theta, coef, states, rng, *, solver, lr, alpha, batch, loss, scale, mu=0.0):
    """One epoch as the estimator defines it, on reference.train_epoch."""
    kw = dict(batch_size=batch, loss=loss, solver="sgd" if solver.endswith("sgd") else "adam",
              learning_rate=lr, l2_coef=alpha, l1_theta=mu, scale=scale,
              theta_moment="shared" if solver == "shared-adam" else "coordinate")
    n = Xs.shape[0]
    if solver.startswith("palm"):
        _, theta, coef = reference.train_epoch(Xs, Y, rng.permutation(n), W, b, theta, coef, states[0],
                                               update_theta=False, **kw)
        value, theta, coef = reference.train_epoch(Xs, Y, rng.permutation(n), W, b, theta, coef,
                                                   states[1], update_coef=False, **kw)
    else:
        value, theta, coef = reference.train_epoch(Xs, Y, rng.permutation(n), W, b, theta, coef,
                                                   states[0], **kw)
    return value, theta, coef


def _new_states(s, m, d):
    return [dict(m_coef=np.zeros((s, m)), v_coef=np.zeros((s, m)), m_theta=np.zeros(d),
                 v_theta=np.zeros(d), step=0) for _ in range(2)]


def reference_fit(X, y, *, n_components, seed, solver="adam", lr=1e-3, alpha=1e-4, batch=32,
                  max_iter=5, early_stopping=True, validation_fraction=0.1, n_iter_no_change=10,
                  init="constant", n_restarts=3, restart_iter=2, scale=1.0, schedule="constant",
                  normalize_y=True, relevance_penalty=0.0):
    """Algorithm 1/2 of RFFNet for squared loss in plain NumPy (float64), same random draws.

    ``schedule="adaptive"``: each plateau of ``n_iter_no_change`` epochs divides the learning rate
    by 5 (at most 3 times) instead of stopping; the plateau after the third decrease stops.
    """
    rng = np.random.default_rng(seed)
    n, d = X.shape
    s = n_components
    Y = y.reshape(n, -1).astype(np.float64)
    W = rng.standard_normal((d, s))
    b = rng.uniform(0.0, 2 * np.pi, s)
    coef = rng.uniform(-1 / np.sqrt(s), 1 / np.sqrt(s), (s, Y.shape[1]))
    if early_stopping:
        n_val = int(np.ceil(validation_fraction * n))
        perm = rng.permutation(n)
        val, tr = np.sort(perm[:n_val]), np.sort(perm[n_val:])
    else:
        tr, val = np.arange(n), None
    mu, sd = X[tr].mean(0), X[tr].std(0)
    Xs = (X[tr] - mu) / sd
    y_mean = Y[tr].mean(0)
    y_sd = Y[tr].std(0) if normalize_y else np.ones(Y.shape[1])
    Yt = (Y[tr] - y_mean) / y_sd
    theta = (Xs.max(0) - Xs.min(0)) / d
    states = _new_states(s, Y.shape[1], d)
    common = dict(solver=solver, lr=lr, alpha=alpha, batch=batch, loss="squared", scale=scale,
                  mu=relevance_penalty)
    if init == "restarter":
        best = None
        for _ in range(n_restarts):
            cand, c_coef, c_states = theta + rng.standard_normal(d) / np.sqrt(d), coef.copy(), _new_states(s, Y.shape[1], d)
            for _ in range(restart_iter):
                _, cand, c_coef = _ref_epoch(Xs, Yt, W, b, cand, c_coef, c_states, rng, **common)
            value = reference.loss_and_grad(Xs, Yt, W, b, c_coef, theta=cand, scale=scale)[0]
            if best is None or value < best[0]:
                best = (value, cand, c_coef, c_states)
        _, theta, coef, states = best
    losses, val_losses, best_val, best_params, best_epoch, stall = [], [], np.inf, None, None, 0
    decays = 0
    for epoch in range(max_iter):
        value, theta, coef = _ref_epoch(Xs, Yt, W, b, theta, coef, states, rng, **common)
        losses.append(value)
        monitored = value
        if val is not None:
            Xv = (X[val] - mu) / sd
            F = reference.predict(Xv, W, b, coef, theta=theta, scale=scale)
            monitored = 0.5 * ((F - (Y[val] - y_mean) / y_sd) ** 2).sum(1).mean()
            val_losses.append(monitored)
        if monitored < best_val:
            best_val, best_params, best_epoch, stall = monitored, (theta.copy(), coef.copy()), epoch + 1, 0
        else:
            stall += 1
        if schedule == "adaptive" and stall >= n_iter_no_change and decays < 3:
            common["lr"] /= 5.0
            decays += 1
            stall = 0
        elif early_stopping and stall >= n_iter_no_change:
            break
    theta, coef = best_params
    return dict(theta=theta, coef=coef, losses=losses, val_losses=val_losses, best_epoch=best_epoch,
                W=W, b=b, intercept=y_mean, y_scale=y_sd, lr=common["lr"])


@settings(max_examples=12)
@given(n=st.integers(12, 60), d=st.integers(1, 5), s=st.integers(1, 12), batch=st.integers(1, 16),
       solver=st.sampled_from(["adam", "shared-adam", "palm-adam", "sgd", "palm-sgd"]),
       early_stopping=st.booleans(), seed=st.integers(0, 2**20),
       schedule=st.sampled_from(["constant", "adaptive"]), mu=st.sampled_from([0.0, 0.2]))
def test_fit_matches_numpy_reference(n, d, s, batch, solver, early_stopping, seed, schedule, mu):
    data = np.random.default_rng(seed + 1)
    X = data.standard_normal((n, d)) * data.uniform(0.5, 3, d) + data.standard_normal(d)
    y = np.sin(X[:, 0]) + 0.1 * data.standard_normal(n)
    lr = 1e-2 if solver.endswith("adam") else 5e-2
    est = RFFNetRegressor(refit_coef=False, n_components=s, batch_size=batch, solver=solver, learning_rate=lr,
                          learning_rate_schedule=schedule, max_iter=6, early_stopping=early_stopping,
                          n_iter_no_change=1, dtype="float64", random_state=seed, n_jobs=1,
                          init="constant", relevance_penalty=mu, standardize=True).fit(X, y)  # as the reference
    ref = reference_fit(X, y, n_components=s, seed=seed, solver=solver, lr=lr, batch=batch,
                        max_iter=6, early_stopping=early_stopping, n_iter_no_change=1,
                        schedule=schedule, relevance_penalty=mu)
    assert est.learning_rate_ == pytest.approx(ref["lr"], rel=1e-15)
    np.testing.assert_allclose(est.weights_, ref["W"], rtol=0, atol=0)
    np.testing.assert_allclose(est.loss_curve_, ref["losses"], rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(est.validation_loss_curve_, ref["val_losses"], rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(est.relevances_, ref["theta"], rtol=1e-8, atol=1e-11)
    np.testing.assert_allclose(est.coef_, ref["coef"], rtol=1e-8, atol=1e-11)
    np.testing.assert_allclose(est.intercept_, ref["intercept"], rtol=1e-12)
    np.testing.assert_allclose(est.y_scale_, ref["y_scale"], rtol=1e-12)
    assert est.best_epoch_ == ref["best_epoch"]


@pytest.mark.parametrize("early_stopping", [True, False])
def test_adaptive_schedule_matches_numpy_reference(early_stopping):
    # A setting where all three decreases happen (the property test above reaches them rarely).
    X, y, _ = make_jse3(120, random_state=1)
    kw = dict(n_components=12, batch_size=16, learning_rate=0.1, max_iter=12, n_iter_no_change=1,
              early_stopping=early_stopping, **PAPER_SOLVER)
    est = RFFNetRegressor(refit_coef=False, **kw, dtype="float64", random_state=4, n_jobs=1,
                          standardize=True).fit(X, y)
    ref = reference_fit(X, y, n_components=12, seed=4, lr=0.1, batch=16, max_iter=12,
                        n_iter_no_change=1, early_stopping=early_stopping, schedule="adaptive")
    assert est.learning_rate_ == pytest.approx(0.1 / 125) and ref["lr"] == pytest.approx(0.1 / 125)
    assert est.n_iter_ == len(ref["losses"]) == (8 if early_stopping else 12)
    np.testing.assert_allclose(est.loss_curve_, ref["losses"], rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(est.relevances_, ref["theta"], rtol=1e-8, atol=1e-11)
    np.testing.assert_allclose(est.coef_, ref["coef"], rtol=1e-8, atol=1e-11)


def test_restarter_matches_numpy_reference():
    X, y, _ = make_jse3(80, random_state=5)
    kw = dict(n_components=10, init="restarter", n_restarts=3, restart_iter=2, max_iter=3,
              learning_rate=1e-2, dtype="float64", random_state=7, n_jobs=1, batch_size=16,
              solver="adam", relevance_penalty=0.0, standardize=True)
    est = RFFNetRegressor(refit_coef=False, **kw).fit(X, y)
    ref = reference_fit(X, y, n_components=10, seed=7, init="restarter", n_restarts=3, restart_iter=2,
                        max_iter=3, lr=1e-2, batch=16)
    np.testing.assert_allclose(est.relevances_, ref["theta"], rtol=1e-8, atol=1e-11)
    np.testing.assert_allclose(est.coef_, ref["coef"], rtol=1e-8, atol=1e-11)


def test_constant_init_formula():
    X = np.array([[0.0, 1.0, 5.0], [2.0, -1.0, 5.0], [1.0, 3.0, 5.0]])
    np.testing.assert_allclose(constant_init(X), [2 / 3, 4 / 3, 0.0])


def test_regressor_init_uses_lasso_coefficients():
    from sklearn.linear_model import LassoCV

    X, _, _ = make_jse3(300, random_state=0)
    y = 2 * X[:, 3] + 0.1 * np.random.default_rng(0).standard_normal(300)
    est = RFFNetRegressor(n_components=20, init="regressor", max_iter=1, learning_rate=1e-12,
                          early_stopping=False, dtype="float64", random_state=0, standardize=True,
                          refit_coef=False).fit(X, y)  # (the closing fit may widen the kernel)
    # One epoch at a negligible learning rate leaves theta at the Lasso solution.
    Xs = (X - X.mean(0)) / X.std(0)
    lasso = LassoCV(cv=3, alphas=20).fit(Xs, (y - y.mean()) / y.std())  # on the scaled targets
    np.testing.assert_allclose(est.relevances_, lasso.coef_, atol=1e-6)
    assert np.argmax(np.abs(est.relevances_)) == 3


# ------------------------------------------------------------------ scikit-learn compatibility
def _expected_failed_checks(estimator):
    # sample_weight is honoured in expectation (rows drawn in proportion to their weights), not
    # bit for bit: integer weights and repeated rows give different random draws.
    return {"check_sample_weight_equivalence_on_dense_data":
            "stochastic training: weights are matched in expectation, not bit for bit"}


@parametrize_with_checks([
    RFFNetRegressor(random_state=0),
    RFFNetClassifier(random_state=0),
    TopKSelector(RFFNetRegressor(n_components=30, max_iter=5, random_state=0), random_state=0),
], expected_failed_checks=_expected_failed_checks)
def test_sklearn_estimator_checks(estimator, check):
    check(estimator)


def test_pipeline_and_grid_search():
    X, y, _ = make_jse3(300, random_state=1)
    pipe = make_pipeline(TopKSelector(RFFNetRegressor(n_components=50, max_iter=20, learning_rate=1e-2,
                                                      random_state=0), random_state=0),
                         RFFNetRegressor(n_components=50, max_iter=20, random_state=0))
    pipe.fit(X, y)
    assert pipe.predict(X).shape == (300,)
    grid = GridSearchCV(RFFNetRegressor(n_components=40, max_iter=10, random_state=0),
                        {"alpha": [1e-4, 1e-1]}, cv=2).fit(X, y)
    assert grid.best_params_["alpha"] in (1e-4, 1e-1)


# ------------------------------------------------------------------ reproducibility
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("solver", ["adam", "palm-sgd"])
def test_same_model_for_any_n_jobs(dtype, solver):
    X, y, _ = make_jse2(1500, random_state=3)
    kw = dict(n_components=200, max_iter=4, dtype=dtype, solver=solver, random_state=11)
    one = RFFNetRegressor(n_jobs=1, **kw).fit(X, y)
    two = RFFNetRegressor(n_jobs=2, **kw).fit(X, y)
    np.testing.assert_array_equal(one.relevances_, two.relevances_)
    np.testing.assert_array_equal(one.coef_, two.coef_)
    np.testing.assert_array_equal(one.loss_curve_, two.loss_curve_)
    np.testing.assert_array_equal(one.predict(X), two.predict(X))
    again = RFFNetRegressor(n_jobs=2, **kw).fit(X, y)
    np.testing.assert_array_equal(again.relevances_, two.relevances_)
    other = RFFNetRegressor(n_jobs=1, **{**kw, "random_state": 12}).fit(X, y)
    assert not np.array_equal(other.relevances_, one.relevances_)
    assert one.relevances_.dtype == np.dtype(dtype)


def test_classifier_same_model_for_any_n_jobs():
    X, y = make_moons(400, noise=0.2, random_state=0)
    kw = dict(n_components=100, max_iter=3, random_state=0)
    a = RFFNetClassifier(n_jobs=1, **kw).fit(X, y)
    b = RFFNetClassifier(n_jobs=2, **kw).fit(X, y)
    np.testing.assert_array_equal(a.relevances_, b.relevances_)
    np.testing.assert_array_equal(a.predict_proba(X), b.predict_proba(X))


# ------------------------------------------------------------------ several starts (n_init)
def test_n_init_goes_on_from_the_start_of_least_validation_loss():
    X, y, _ = make_jse2(600, random_state=0)
    kw = dict(n_components=30, learning_rate=1e-2, random_state=3, n_jobs=1, refit_coef=False)
    one = RFFNetRegressor(max_iter=START_EPOCHS + 4, n_init=1, **kw).fit(X, y)
    assert one.start_losses_ is None
    est = RFFNetRegressor(max_iter=START_EPOCHS + 4, n_init=4, **kw).fit(X, y)
    assert est.start_losses_.shape == (4,) and np.all(np.isfinite(est.start_losses_))
    assert len(set(est.start_losses_.tolist())) == 4  # four draws, not one start four times
    # the curves are the winner's from its first epoch: after START_EPOCHS its least validation
    # loss was among the N_INIT_FINALISTS least of all starts (tol=0: the least is the tracked best),
    # which trained on (here the 4 epochs left)
    assert est.n_iter_ == len(est.loss_curve_) == len(est.validation_loss_curve_) == START_EPOCHS + 4
    finalists = np.sort(est.start_losses_)[:N_INIT_FINALISTS]
    assert min(est.validation_loss_curve_[:START_EPOCHS]) in finalists
    # the early-stopping state carries over: the best epoch and checkpoint span both phases
    assert est.best_epoch_ == int(np.argmin(est.validation_loss_curve_)) + 1
    again = RFFNetRegressor(max_iter=START_EPOCHS + 4, n_init=4, **{**kw, "n_jobs": 2}).fit(X, y)
    np.testing.assert_array_equal(again.relevances_, est.relevances_)
    np.testing.assert_array_equal(again.coef_, est.coef_)
    np.testing.assert_array_equal(again.start_losses_, est.start_losses_)
    # only max_iter epochs in all: each start runs at most that many
    short = RFFNetRegressor(max_iter=2, n_init=3, **kw).fit(X, y)
    assert short.n_iter_ == 2 and short.start_losses_.shape == (3,)


def test_n_init_second_round_keeps_each_starts_best_epoch_from_the_first():
    # a case whose best epoch is early: every start's validation loss rises after epoch 1 or 2.
    # Each finalist's second round continues its own schedule, so a start is ranked by its least
    # loss over all its epochs, and the kept model is that best epoch's (an earlier version began
    # the second round afresh: it kept start 3's epoch 6, 0.529, over start 4's epoch 2, 0.491)
    rng = np.random.default_rng(0)
    X = rng.standard_normal((600, 120))
    y = np.sin(X[:, 0]) + X[:, 1] * X[:, 2] + 0.1 * rng.standard_normal(600)
    est = RFFNetRegressor(n_components=64, max_iter=START_EPOCHS + 2, n_init=4, tol=0.0, random_state=1,
                          n_jobs=1, refit_coef=False).fit(X, y)
    curve = np.asarray(est.validation_loss_curve_)
    assert est.best_epoch_ == int(np.argmin(curve)) + 1 <= START_EPOCHS
    assert curve.min() == est.start_losses_.min()  # the first round's best start, still the best


def test_best_of_starts_ranks_the_finalists_by_their_loss_after_the_second_round():
    from rffkern._rffnet_training import best_of_starts

    first = [0.5, 0.3, 0.4, 0.3, np.inf]  # start 4 diverged
    second = {1: 0.29, 2: 0.2, 3: 0.25}
    calls = []

    def train(k, count):
        calls.append((k, count))
        return first[k] if len(calls) <= len(first) else second[k]

    losses, kept = best_of_starts(5, train, 5, 3, 2)
    np.testing.assert_array_equal(losses, first)
    # the two least after the first round (the first of equal losses first) train on; 2 does not
    assert calls == [(k, 5) for k in range(5)] + [(1, 3), (3, 3)] and kept == 3
    calls.clear()
    assert best_of_starts(5, train, 5, 0, 2)[1] == 1  # no epochs left: the first round decides


def test_n_init_auto_runs_several_starts_only_for_the_l1_penalty_on_many_inputs():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((80, N_INIT_MIN_FEATURES))
    y = X[:, 0] + 0.1 * rng.standard_normal(80)
    kw = dict(n_components=8, max_iter=1, random_state=0, n_jobs=1, refit_coef=False)
    assert RFFNetRegressor(**kw).fit(X, y).start_losses_.shape == (N_INIT_AUTO,)
    assert RFFNetRegressor(**kw).fit(X[:, 1:], y).start_losses_ is None  # fewer inputs
    assert RFFNetRegressor(relevance_penalty=0.0, **kw).fit(X, y).start_losses_ is None
    assert RFFNetRegressor(early_stopping=False, **kw).fit(X, y).start_losses_ is None
    # asked for, without a validation split: the starts are ranked by their training loss
    est = RFFNetRegressor(early_stopping=False, n_init=2, **kw).fit(X, y)
    assert est.start_losses_.shape == (2,) and min(est.loss_curve_) == est.start_losses_.min()
    assert RFFNetClassifier(**kw).fit(X, y > 0).start_losses_.shape == (N_INIT_AUTO,)
    # partial_fit trains one start
    assert RFFNetRegressor(n_init=3, **kw).partial_fit(X, y).start_losses_ is None
    for bad in (0, "all", 1.5):
        with pytest.raises(ValueError, match="n_init"):
            RFFNetRegressor(n_init=bad, **kw).fit(X, y)


@pytest.mark.parametrize("init", ["array", "restarter", "constant"])
def test_n_init_with_every_start_rule(init):
    X, y, _ = make_jse2(300, random_state=1)
    start = np.full(X.shape[1], 0.3) if init == "array" else init
    kw = dict(n_components=20, max_iter=3, init=start, n_restarts=2, restart_iter=1, n_init=2,
              random_state=0, n_jobs=1)
    est = RFFNetRegressor(**kw).fit(X, y)
    assert est.start_losses_.shape == (2,) and np.all(np.isfinite(est.predict(X)))
    # warm_start continues the kept start (one start: the map is fixed)
    est.set_params(warm_start=True, max_iter=2).fit(X, y)
    assert est.n_iter_ == 5
    clf = RFFNetClassifier(**kw).fit(X, y > np.median(y))
    assert clf.start_losses_.shape == (2,)


def test_n_init_when_every_start_diverges_the_error_is_one_starts():
    X, y, _ = make_jse2(300, random_state=0)
    for n_init in (1, 3):
        with pytest.raises(ValueError, match="training diverged"):
            RFFNetRegressor(20, solver="sgd", learning_rate=1e3, n_init=n_init, max_iter=5,
                            random_state=0, n_jobs=1).fit(X, y)


# ------------------------------------------------------------------ recovery (fixed seeds)
def _top(est, k):
    return set(np.argsort(-est.feature_importances_, kind="stable")[:k].tolist())


def test_recovers_jse3_support():
    X, y, support = make_jse3(3000, random_state=0)
    est = RFFNetRegressor(random_state=0).fit(X, y)
    assert _top(est, 2) == set(support.tolist())
    X_test, y_test, _ = make_jse3(1000, random_state=1)
    # x1*x2 has variance 1; with noise 0.01 a fitted model does far better than the mean.
    assert np.mean((est.predict(X_test) - y_test) ** 2) < 0.05


def test_recovers_gse2_support():
    X, y, support = make_gse2(3000, random_state=0)
    est = RFFNetRegressor(random_state=0).fit(X, y)
    assert _top(est, 5) == set(support.tolist())
    X_test, y_test, _ = make_gse2(1000, random_state=1)
    # Var(y) = pi^2/2 ~ 4.9; the paper's RFFNet reaches 1.87 at n = 5000.
    assert np.mean((est.predict(X_test) - y_test) ** 2) < 2.5


def test_topk_ignores_leftover_relevances():
    # Seed 1 leaves feature 5's relevance at 4.7e-6 (the largest 0.45); keeping it "improves" the
    # selection MSE by 1.2e-5 relative, a tie under TIE_RTOL (under the former 1e-6 it was selected).
    X, y, support = make_jse3(3000, random_state=2)
    X_sel, y_sel, _ = make_jse3(600, random_state=3)
    est = RFFNetRegressor(random_state=1).fit(X, y)
    assert np.count_nonzero(est.relevances_) > support.size  # a leftover is there to ignore
    result = topk_selection(est, X_sel, y_sel)
    assert sorted(result.selected.tolist()) == sorted(support.tolist())
    assert result.scores.max() > result.scores[1]  # the leftover's set scores higher, by a tie


def test_large_offsets_survive_float32_training():
    # Standardized in float64 before the cast to the float32 training dtype: a column of 1e12 + x
    # (|x| ~ 2000) cast first would hold multiples of 65536 only (R^2 -0.001 before the fix).
    rng = np.random.default_rng(0)
    Z = rng.uniform(-2, 2, (1200, 3))
    y = np.sin(2 * Z[:, 0]) + Z[:, 1] ** 2 + 0.1 * rng.normal(size=1200)
    X = Z * 1000
    kw = dict(max_iter=30, random_state=0)
    near = RFFNetRegressor(**kw).fit(X[:1000], y[:1000])
    far = RFFNetRegressor(**kw).fit(X[:1000] + 1e12, y[:1000] + 1e9)
    assert far.x_mean_.dtype == np.float64 and far.intercept_.dtype == np.float64
    assert far.score(X[1000:] + 1e12, y[1000:] + 1e9) > 0.9
    np.testing.assert_allclose(far.predict(X[1000:] + 1e12) - 1e9, near.predict(X[1000:]), atol=0.05)
    # and inputs beyond float32's range (|x| ~ 1e200) standardize before the cast (a ValueError before)
    huge = RFFNetRegressor(**kw).fit(X[:1000] * 1e197, y[:1000])
    np.testing.assert_allclose(huge.predict(X[1000:] * 1e197), near.predict(X[1000:]), atol=0.05)
    # float32 X stays as given (its own precision), and the caller's arrays are untouched
    X32 = X[:1000].astype(np.float32)
    before = X32.copy()
    RFFNetRegressor(**kw).fit(X32, y[:1000])
    np.testing.assert_array_equal(X32, before)


def test_standardize_auto_pools_inputs_of_one_unit(capsys):
    # pixels: the probe ridge keeps one pooled deviation, and the fit is standardize="global"'s
    from sklearn.datasets import load_digits

    X, y = load_digits(return_X_y=True)
    X, y = X[:800], y[:800]
    auto = RFFNetClassifier(max_iter=5, random_state=0, verbose=1).fit(X, y)
    assert "[RFFNetClassifier] standardize 1/1: 'global' (probe ridge)" in capsys.readouterr().out
    assert auto.standardize_ == "global" and {True, "global"} <= set(auto.standardize_errors_)
    assert auto.standardize_errors_["global"] < auto.standardize_errors_[True]
    pooled = RFFNetClassifier(max_iter=5, random_state=0, standardize="global").fit(X, y)
    assert pooled.standardize_errors_ is None
    np.testing.assert_array_equal(auto.relevances_, pooled.relevances_)
    np.testing.assert_array_equal(auto.coef_, pooled.coef_)
    # every varying input is divided by one deviation (the root mean square of theirs), the
    # constant ones (border pixels) by 1, and their relevance is 0
    varying = auto.x_scale_ != 1.0
    assert np.ptp(auto.x_scale_[varying]) == 0 and 1 < auto.x_scale_[varying][0] < 16
    # (each input by its own deviation: the plain one, not robust_inputs' half gap of two-valued pixels)
    own = RFFNetClassifier(max_iter=5, random_state=0, standardize=True, robust_inputs=False).fit(X, y)
    np.testing.assert_allclose(auto.x_scale_[varying][0], np.sqrt(np.mean(own.x_scale_[varying] ** 2)), rtol=1e-12)
    assert np.all(auto.relevances_[~varying] == 0)
    # importances (the derivative norms) and TopK's order (the relevances) per unit of each input's
    # own deviation, as with True: in the pooled units times each input's deviation over the pooled one
    ratio = np.where(varying, own.x_scale_ / auto.x_scale_, 0.0)
    pooled_norms = rms_partial_derivatives(auto._standardized(X), auto.weights_, auto.offsets_, auto.coef_,
                                           scale=auto.scale_, theta=auto.relevances_)
    np.testing.assert_allclose(auto.feature_importances_, pooled_norms * ratio / np.max(pooled_norms * ratio),
                               rtol=1e-10)
    expected = np.abs(auto.relevances_.astype(np.float64)) * ratio
    result = topk_selection(auto, X[600:], y[600:])
    np.testing.assert_array_equal(result.order, np.argsort(-expected, kind="stable"))


def test_standardize_auto_keeping_each_deviation_is_standardize_true():
    # inputs in different units: the probe keeps True, and the fit is True's bit for bit (the
    # probe's seed comes from a copy of the generator)
    X, y, _ = make_jse3(800, random_state=0)
    X = X * np.array([1, 100, 1, 1, 1, 1, 1, 1, 1, 1e-3])
    auto = RFFNetRegressor(max_iter=5, random_state=0).fit(X, y)
    assert auto.standardize_ is True and set(auto.standardize_errors_) == {True, "global"}
    own = RFFNetRegressor(max_iter=5, random_state=0, standardize=True).fit(X, y)
    assert own.standardize_ is True and own.standardize_errors_ is None
    np.testing.assert_array_equal(auto.relevances_, own.relevances_)
    np.testing.assert_array_equal(auto.coef_, own.coef_)
    none = RFFNetRegressor(max_iter=5, random_state=0, standardize=False).fit(X, y)
    assert none.standardize_ is False
    np.testing.assert_array_equal(none.x_mean_, 0) and np.testing.assert_array_equal(none.x_scale_, 1)
    with pytest.raises(ValueError, match="standardize"):
        RFFNetRegressor(standardize="pooled").fit(X, y)


def test_topk_regression_keeps_the_smallest_set_within_one_standard_error():
    """For regression TopK keeps the smallest nested set whose held-out MSE is within one standard
    error (of the mean per-row difference of squared errors) of the best set's: here the best set
    adds an irrelevant feature to the true two by less than that."""
    import copy

    X, y, _ = make_jse3(700, random_state=0)  # y depends on columns 0 and 1
    net = RFFNetRegressor(random_state=0, n_jobs=1, max_iter=30).fit(X[:400], y[:400])
    Xs, ys = X[400:], y[400:]
    result = topk_selection(net, Xs, ys)
    losses = []
    for i in range(X.shape[1]):
        model = copy.deepcopy(net)
        model.relevances_ = np.where(np.isin(np.arange(X.shape[1]), result.order[:i + 1]), net.relevances_, 0)
        losses.append((model.predict(Xs) - ys) ** 2)
    losses = np.array(losses)
    np.testing.assert_allclose(result.scores, -losses.mean(axis=1), rtol=1e-5)
    best = int(np.argmin(losses.mean(axis=1)))
    se = np.std(losses - losses[best], axis=1, ddof=1) / np.sqrt(ys.size)
    expected = int(np.flatnonzero(losses.mean(axis=1) <= losses[best].mean() + se)[0]) + 1
    assert result.n_selected == expected == 2 < best + 1  # the rule moved the choice
    assert sorted(result.selected.tolist()) == [0, 1]


def test_topk_selects_the_true_support():
    X, y, support = make_jse3(3000, random_state=2)
    X_sel, y_sel, _ = make_jse3(600, random_state=3)
    est = RFFNetRegressor(random_state=0).fit(X, y)
    before = est.relevances_.copy()
    result = topk_selection(est, X_sel, y_sel)
    assert set(result.selected.tolist()) == set(support.tolist())
    assert result.scores.shape == (10,) and result.n_selected == 2
    # the two-feature set has the best score, up to the tie tolerance (1e-4 relative: the
    # penalised fit leaves irrelevant relevances at 0 or ~1e-6, whose effect is negligible)
    assert result.scores[1] >= result.scores.max() - TIE_RTOL * abs(result.scores.max())
    assert result.scores[0] < result.scores[1] - 0.5
    # The path is the score of the thresholded model: recompute one entry by hand.
    masked = np.zeros_like(est.relevances_)
    masked[result.order[:1]] = est.relevances_[result.order[:1]]
    thr = pickle.loads(pickle.dumps(est))
    thr.relevances_ = masked
    np.testing.assert_allclose(result.scores[0], -np.mean((thr.predict(X_sel) - y_sel) ** 2), rtol=1e-6)
    np.testing.assert_array_equal(result.estimator.relevances_ != 0, result.support)
    np.testing.assert_array_equal(est.relevances_, before)  # the caller's model is untouched

    sel = TopKSelector(RFFNetRegressor(random_state=0), random_state=0).fit(X, y)
    assert set(np.flatnonzero(sel.get_support()).tolist()) == set(support.tolist())
    assert sel.transform(X).shape == (3000, 2)


# ------------------------------------------------------------------ classification
def test_moons_classification():
    X, y = make_moons(600, noise=0.15, random_state=0)
    labels = np.array(["left", "right"])[y]
    est = RFFNetClassifier(random_state=0, learning_rate=1e-2).fit(X[:400], labels[:400])
    assert list(est.classes_) == ["left", "right"]
    assert est.coef_.shape == (800, 1)  # the closing fit: 300 trained + 500 new features (two per row)
    proba = est.predict_proba(X[400:])
    np.testing.assert_allclose(proba.sum(1), 1)
    assert est.decision_function(X[400:]).shape == (200,)
    np.testing.assert_array_equal(est.predict(X[400:]), est.classes_[(proba[:, 1] > 0.5).astype(int)])
    assert np.mean(est.predict(X[400:]) == labels[400:]) > 0.9
    X_sel, y_sel = make_moons(300, noise=0.15, random_state=1)
    result = topk_selection(est, X_sel, np.array(["left", "right"])[y_sel])
    assert result.scores.max() > 0.95  # AUC


def _replay_classifier_split(seed, d, s, n, n_val, y):
    """The classifier's validation split, replayed from its draws: W, b, B, then the split seed."""
    from sklearn.model_selection import train_test_split

    rng = np.random.default_rng(seed)
    draw_frequencies("gaussian", d, s, 1.0, rng, np.float32)
    draw_offsets(s, rng, np.float32)
    rng.uniform(-1, 1, (s, 1))
    split_seed = int(rng.integers(2**32 - 1))
    train, val = train_test_split(np.arange(n), test_size=n_val, stratify=y, random_state=split_seed)
    return np.sort(val), np.sort(train)


def test_classifier_uses_the_stratified_split():
    # 90/10 classes, 10% validation: the standardization statistics come from the training part,
    # which must be scikit-learn's stratified split (18 + 2 validation rows).
    X, _ = make_blobs(200, centers=[[0, 0], [3, 3]], random_state=0)
    y = (np.arange(200) < 20).astype(int)
    est = RFFNetClassifier(n_components=10, max_iter=2, random_state=2).fit(X, y)
    val, train = _replay_classifier_split(2, 2, 10, 200, 20, y)
    assert np.bincount(y[val]).tolist() == [18, 2]
    np.testing.assert_allclose(est.x_mean_, X[train].astype(np.float32).mean(0, dtype=np.float64),
                               rtol=1e-6)


@pytest.mark.parametrize("counts", [[1, 30], [2, 2, 40]])
def test_classifier_split_falls_back_when_a_class_cannot_be_stratified(counts):
    # a class with one sample (or more classes than validation rows) cannot be stratified:
    # the split is then a plain random one, and the fit still works
    y = np.repeat(np.arange(len(counts)), counts)
    X = np.random.default_rng(0).standard_normal((y.size, 3))
    est = RFFNetClassifier(n_components=10, max_iter=2, random_state=0).fit(X, y)
    assert est.n_iter_ >= 1 and np.isfinite(est.coef_).all()


def test_multiclass_softmax():
    X, y = make_blobs(600, centers=3, n_features=4, random_state=0)
    est = RFFNetClassifier(random_state=0, learning_rate=1e-2, max_iter=30).fit(X, y)
    assert est.coef_.shape == (1000, 3)  # the closing fit's 300 trained + 700 new features
    proba = est.predict_proba(X)
    assert proba.shape == (600, 3)
    np.testing.assert_allclose(proba.sum(1), 1)
    assert est.decision_function(X).shape == (600, 3)
    assert est.score(X, y) > 0.9


def test_rffkern_fit_picks_the_task():
    from rffkern import RFFRidge, RFFRidgeClassifier

    X, y, _ = make_jse3(300, random_state=0)
    kw = dict(max_iter=2, random_state=0)
    assert isinstance(rffkern.fit(X, y, **kw), (RFFNetRegressor, RFFRidge))
    assert isinstance(rffkern.fit(X, (y > 0).astype(int), **kw), (RFFNetClassifier, RFFRidgeClassifier))
    assert isinstance(rffkern.fit(X, np.column_stack([y, -y]), **kw), (RFFNetRegressor, RFFRidge))
    model = rffkern.fit(X, (y > 0).astype(int), task="regression", **kw)
    assert isinstance(model, (RFFNetRegressor, RFFRidge)) and model.selection_report_["reason"] == "task="
    with pytest.raises(ValueError, match="multilabel"):
        rffkern.fit(X, np.column_stack([y > 0, y > 1]).astype(int))
    with pytest.raises(ValueError, match="task"):
        rffkern.fit(X, y, task="ranking")


def test_rffkern_fit_keeps_rffnet_only_where_it_validates_better():
    # gse2 (5 relevant of 100 features): the isotropic ridge explains nothing, RFFNet's relevances
    # find the support; jse3 (x1 x2 among 10) is a smooth low-dimensional target the tuned ridge fits
    X, y, support = make_gse2(3000, random_state=0)
    model = rffkern.fit(X, y, random_state=0)
    report = model.selection_report_
    assert report["chosen"] == "rffnet" and isinstance(model, RFFNetRegressor)
    # the width search's ridge is far behind, so the full ridge was not even fitted
    assert report["validation_scores"]["rffnet"] > report["validation_scores"]["width_search"] + 0.3
    assert "ridge" not in report["validation_scores"] and report["fit_times"]["ridge"] == 0.0
    assert set(np.argsort(-model.feature_importances_)[:5]) == set(support.tolist())
    X, y, _ = make_jse3(1500, random_state=0)
    model = rffkern.fit(X, y, random_state=0)
    scores = model.selection_report_["validation_scores"]
    candidates = {k: v for k, v in scores.items() if k in ("ridge", "rffnet")}  # the models fitted
    assert model.selection_report_["chosen"] == max(candidates, key=candidates.get)
    assert sorted(np.argsort(-model.feature_importances_)[:2].tolist()) == [0, 1]


@pytest.mark.parametrize("y, task", [
    (np.arange(100) % 3, "classification"),             # few integer labels
    (np.arange(100) % 28 + 1, "regression"),            # abalone-like counts: 28 distinct
    ((np.arange(100) % 28 + 1).astype(float), "regression"),  # the same counts stored as floats
    (np.linspace(0, 1, 100), "regression"),
    (np.array(["a", "b"] * 50), "classification"),
    (np.arange(100) % 2 == 0, "classification"),
    (np.array([1.0, 2.0] * 50), "classification"),      # integer-valued floats, two values
])
def test_task_rule_follows_what_users_mean(y, task):
    from rffkern._api import explain_task

    got, reason = explain_task(y)
    assert got == task and reason


def test_multi_output_regression():
    X, y, _ = make_jse3(500, random_state=0)
    Y = np.column_stack([y, X[:, 2]])
    est = RFFNetRegressor(n_components=100, max_iter=20, random_state=0).fit(X, Y)
    assert est.coef_.shape == (1000, 2) and est.intercept_.shape == (2,)  # the closing ridge's 1000 features
    assert est.predict(X).shape == (500, 2)
    assert est.score(X, Y) > 0.5


# ------------------------------------------------------------------ partial_fit
@pytest.mark.parametrize("solver", ["adam", "palm-adam"])
def test_partial_fit_once_equals_one_epoch_of_fit(solver):
    X, y, _ = make_jse3(700, random_state=4)
    kw = dict(n_components=64, solver=solver, random_state=3, dtype="float64")
    fitted = RFFNetRegressor(refit_coef=False, max_iter=1, early_stopping=False, **kw).fit(X, y)
    streamed = RFFNetRegressor(refit_coef=False, **kw).partial_fit(X, y)
    np.testing.assert_array_equal(fitted.relevances_, streamed.relevances_)
    np.testing.assert_array_equal(fitted.coef_, streamed.coef_)
    assert streamed.n_iter_ == 1 and streamed.loss_curve_ == fitted.loss_curve_
    # Further chunks keep training (and keep the first chunk's standardization).
    mean = streamed.x_mean_.copy()
    streamed.partial_fit(X[:300], y[:300])
    assert streamed.n_iter_ == 2 and not np.array_equal(fitted.coef_, streamed.coef_)
    np.testing.assert_array_equal(mean, streamed.x_mean_)
    # Chunked training of a larger-than-memory stream improves the fit.
    for _ in range(10):
        streamed.partial_fit(X, y)
    assert streamed.loss_curve_[-1] < streamed.loss_curve_[0]


def test_classifier_partial_fit_needs_all_classes():
    X, y = make_blobs(300, centers=3, random_state=0)
    est = RFFNetClassifier(n_components=32, random_state=0)
    est.partial_fit(X[y < 2], y[y < 2], classes=[0, 1, 2])
    assert list(est.classes_) == [0, 1, 2]
    est.partial_fit(X, y)
    with pytest.raises(ValueError, match="classes"):
        est.partial_fit(X, y, classes=[0, 1])
    with pytest.raises(ValueError, match="not in classes_"):
        est.partial_fit(X, y + 5)


def test_pickle_round_trip_continues_identically():
    X, y, _ = make_jse3(400, random_state=0)
    est = RFFNetRegressor(n_components=50, max_iter=3, random_state=0).fit(X, y)
    copy = pickle.loads(pickle.dumps(est))
    np.testing.assert_array_equal(copy.predict(X), est.predict(X))
    est.partial_fit(X, y)
    copy.partial_fit(X, y)
    np.testing.assert_array_equal(copy.coef_, est.coef_)


# ------------------------------------------------------------------ training-loop behaviour
def test_early_stopping_and_checkpointing():
    X, y, _ = make_jse3(600, random_state=0)
    kw = dict(n_components=50, max_iter=200, n_iter_no_change=3, learning_rate=0.05, random_state=0,
              dtype="float64", learning_rate_schedule="constant")
    est = RFFNetRegressor(**kw).fit(X, y)
    curve = np.array(est.validation_loss_curve_)
    assert est.n_iter_ < 200 and len(curve) == est.n_iter_ == len(est.loss_curve_)
    assert est.best_epoch_ == np.argmin(curve) + 1
    assert est.n_iter_ == est.best_epoch_ + 3
    assert len(est.validation_scores_) == est.n_iter_
    assert est.learning_rate_ == 0.05
    no_ckpt = RFFNetRegressor(**{**kw, "checkpoint": False}).fit(X, y)
    assert no_ckpt.n_iter_ == est.n_iter_
    assert not np.array_equal(no_ckpt.coef_, est.coef_)


def test_adaptive_schedule_lowers_the_rate_on_plateaus(capsys):
    X, y, _ = make_jse3(600, random_state=0)
    kw = dict(n_components=50, max_iter=200, n_iter_no_change=3, learning_rate=0.05, random_state=0,
              dtype="float64")
    const = RFFNetRegressor(**kw, learning_rate_schedule="constant").fit(X, y)
    adapt = RFFNetRegressor(**kw, verbose=1).fit(X, y)  # "adaptive" is the default
    lowered = [ln for ln in capsys.readouterr().out.splitlines()
               if ln.startswith("[RFFNetRegressor] learning rate lowered")]
    assert len(lowered) == 3 and adapt.learning_rate_ == pytest.approx(0.05 / 125)
    # Identical up to the first plateau, then the adaptive run keeps training at smaller steps
    # (stopping at the plateau after its third decrease) and ends with a lower validation loss.
    k = const.n_iter_
    np.testing.assert_array_equal(adapt.loss_curve_[:k], const.loss_curve_)
    assert 3 * 3 + const.best_epoch_ + 3 <= adapt.n_iter_ < 200
    assert min(adapt.validation_loss_curve_) < min(const.validation_loss_curve_)
    # Without early stopping the plateaus are measured on the training loss and never stop it.
    full = RFFNetRegressor(**{**kw, "max_iter": 40}, early_stopping=False).fit(X, y)
    assert full.n_iter_ == 40


def test_verbose_prints_one_line_per_epoch(capsys):
    X, y, _ = make_jse3(200, random_state=0)
    RFFNetRegressor(n_components=20, max_iter=3, verbose=1, random_state=0).fit(X, y)
    lines = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("[RFFNetRegressor] epoch")]
    assert len(lines) == 3 and "train loss" in lines[0] and "validation loss" in lines[0]
    assert lines[0].startswith("[RFFNetRegressor] epoch 1/3: ")


def test_attributes_and_options():
    X, y, _ = make_jse3(300, random_state=0)
    X_copy, y_copy = X.copy(), y.copy()
    est = RFFNetRegressor(n_components=40, max_iter=3, random_state=0, kernel="laplace",
                          feature_scale="rff", standardize=False, fit_intercept=False,
                          refit_components=None).fit(X, y)
    np.testing.assert_array_equal(X, X_copy)
    np.testing.assert_array_equal(y, y_copy)
    assert est.weights_.shape == (10, 40) and est.offsets_.shape == (40,)
    assert est.scale_ == pytest.approx(np.sqrt(2 / 40))
    np.testing.assert_array_equal(est.intercept_, 0)
    np.testing.assert_array_equal(est.x_mean_, 0)
    fi = est.feature_importances_  # (their values: tests/test_rffnet_importances.py)
    assert fi.max() == 1.0 and fi.min() >= 0
    f32 = RFFNetRegressor(n_components=40, max_iter=2, random_state=0).fit(X, y)
    assert f32.coef_.dtype == np.float32 and f32.predict(X).dtype == np.float64


def test_divergence_is_reported():
    X, y, _ = make_jse3(200, random_state=0)
    with pytest.raises(ValueError, match="diverged"):
        RFFNetRegressor(n_components=20, max_iter=3, solver="sgd", learning_rate=1e6,
                        random_state=0).fit(X, y * 1e10)
    # above kernels.MAX_LEARNING_RATE the step size itself is refused
    with pytest.raises(ValueError, match="learning_rate"):
        RFFNetRegressor(n_components=20, max_iter=3, learning_rate=1e30).fit(X, y)


@pytest.mark.parametrize("dtype, factor", [("float32", 1e30), ("float64", 1e300)])
def test_targets_whose_squares_overflow_are_named(dtype, factor):
    # the message names y (not X) and the dtype; before, float32 said "Y contains NaN" and
    # float64 "diverged ... standardize X"
    X, y, _ = make_jse3(200, random_state=0)
    with pytest.raises(ValueError, match=rf"y holds values up to .*overflow {dtype}"):
        RFFNetRegressor(n_components=20, max_iter=2, dtype=dtype, normalize_y=False,
                        random_state=0).fit(X, y * factor)
    # with the default normalize_y=True the same targets train in their own scale
    est = RFFNetRegressor(n_components=20, max_iter=2, dtype=dtype, random_state=0).fit(X, y * factor)
    pred = est.predict(X)
    assert np.isfinite(pred).all() and np.abs(pred).max() < 10 * np.abs(y * factor).max()


# ------------------------------------------------------------------ bad input
def test_bad_input_errors():
    X, y, _ = make_jse3(100, random_state=0)
    Xn = X.copy()
    Xn[3, 2] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        RFFNetRegressor().fit(Xn, y)
    with pytest.raises(ValueError, match="NaN|infinity"):
        RFFNetRegressor().fit(X, np.where(np.arange(100) == 5, np.inf, y))
    with pytest.raises(ValueError, match="1 class"):
        RFFNetClassifier().fit(X, np.zeros(100))
    with pytest.raises(ValueError, match="inconsistent|samples"):
        RFFNetRegressor().fit(X, y[:50])
    with pytest.raises(ValueError):
        RFFNetRegressor().fit(X, y.reshape(10, 10, 1))
    with pytest.raises(ValueError, match="1-D"):
        RFFNetClassifier().fit(X, np.column_stack([y > 0, y > 1]).astype(int))
    with pytest.raises(ValueError, match="too small for validation_fraction"):
        RFFNetRegressor().fit(X[:2], y[:2])
    RFFNetRegressor(n_components=5, max_iter=1, early_stopping=False).fit(X[:2], y[:2])
    est = RFFNetRegressor(n_components=5, max_iter=1).fit(X, y)
    with pytest.raises(ValueError, match="features"):
        est.predict(X[:, :5])
    with pytest.raises((TypeError, ValueError), match="string|numeric"):
        RFFNetRegressor().fit(np.array([["a"] * 3] * 4), np.arange(4.0))


@pytest.mark.parametrize("param, value", [
    ("n_components", 0), ("alpha", -1.0), ("learning_rate", 0.0), ("batch_size", 0),
    ("solver", "lbfgs"), ("init", "zeros"), ("kernel", "rbf"), ("dtype", "float16"),
    ("validation_fraction", 1.0), ("n_iter_no_change", 0), ("feature_scale", -1.0),
    ("max_iter", 0), ("n_jobs", 1.5),
])
def test_bad_hyper_parameters(param, value):
    X, y, _ = make_jse3(50, random_state=0)
    with pytest.raises(ValueError, match=param):
        RFFNetRegressor(**{param: value}).fit(X, y)


def test_n_jobs_zero_is_an_error():
    X, y, _ = make_jse3(50, random_state=0)
    with pytest.raises(ValueError, match="n_jobs"):
        RFFNetRegressor(n_jobs=0, max_iter=1).fit(X, y)


def test_topk_bad_input():
    X, y, _ = make_jse3(200, random_state=0)
    est = RFFNetRegressor(n_components=20, max_iter=2, random_state=0).fit(X, y)
    with pytest.raises(TypeError):
        topk_selection(object(), X, y)
    with pytest.raises(ValueError, match="samples"):
        topk_selection(est, X, y[:10])
    clf = RFFNetClassifier(n_components=20, max_iter=2, random_state=0).fit(X, y > 0)
    with pytest.raises(ValueError, match="single class"):
        topk_selection(clf, X, np.ones(200, bool))


def test_restarter_with_every_restart_diverging_is_reported():
    X, y, _ = make_jse3(100, random_state=0)
    with pytest.raises(ValueError, match="diverged"):
        RFFNetRegressor(n_components=10, init="restarter", n_restarts=2, restart_iter=2, solver="sgd",
                        learning_rate=1e6, random_state=0).fit(X, y * 1e10)


def test_targets_in_any_unit_fit_alike():
    # y in the 1e5 range fits as well as y itself: the model trains on standardized targets
    X, y, _ = make_jse3(600, random_state=0)
    kw = dict(n_components=50, max_iter=15, dtype="float64", random_state=0, n_jobs=1)
    refit = RFFNetRegressor(**kw).fit(X, y)  # the closing ridge (refit_coef) is unit-free too
    np.testing.assert_allclose(RFFNetRegressor(**kw).fit(X, y * 1e5 + 3e5).predict(X),
                               refit.predict(X) * 1e5 + 3e5, rtol=1e-6, atol=1e-3)
    kw["refit_coef"] = False  # the trained B alone: what normalize_y changes
    base = RFFNetRegressor(**kw).fit(X, y)
    big = RFFNetRegressor(**kw).fit(X, y * 1e5 + 3e5)
    np.testing.assert_allclose(big.predict(X), base.predict(X) * 1e5 + 3e5, rtol=1e-6, atol=1e-3)
    raw = RFFNetRegressor(**kw, normalize_y=False).fit(X, y * 1e5 + 3e5)
    target = y * 1e5 + 3e5
    assert big.score(X, target) > raw.score(X, target) + 0.1


def test_refit_coef_is_the_exact_ridge_on_the_trained_features():
    """refit_coef: B and the intercept are the ridge solution on z(theta * x) at refit_alpha_, the
    penalty chosen from the data (a noisy target gets a larger one than a clean target)."""
    from rffkern.rffnet import REFIT_ALPHAS
    X, y, _ = make_jse3(400, random_state=0)
    kw = dict(n_components=40, max_iter=5, early_stopping=False, dtype="float64", random_state=0, n_jobs=1)
    model = RFFNetRegressor(**kw).fit(X, y)
    assert model.refit_alpha_ in REFIT_ALPHAS
    Xs = (X - model.x_mean_) / model.x_scale_
    Z = model.scale_ * np.cos((Xs * model.relevances_) @ model.weights_ + model.offsets_)
    Zc, yc = Z - Z.mean(0), y - y.mean()
    coef = np.linalg.solve(Zc.T @ Zc + model.refit_alpha_ * np.eye(Z.shape[1]), Zc.T @ yc)
    np.testing.assert_allclose(model.predict(X), Zc @ coef + y.mean(), rtol=1e-7, atol=1e-7)
    trained = RFFNetRegressor(**kw, refit_coef=False).fit(X, y)
    assert trained.refit_alpha_ is None
    # the same epochs (the closing check may have widened the kernel: theta divided by a power of 2)
    np.testing.assert_array_equal(trained.relevances_, model.relevances_ * model.closing_width_factor_)
    assert model.score(X, y) > trained.score(X, y)
    noisy = y + 3.0 * np.random.default_rng(1).standard_normal(y.size)
    assert RFFNetRegressor(**kw).fit(X, noisy).refit_alpha_ > model.refit_alpha_


def _hat_matrix_loo(Z, Y, alphas):
    """Per alpha, each row's squared leave-one-out residual of ridge on Z with an unpenalised
    intercept (mean over the outputs), from the hat matrix: ``r_i / (1 - H_ii)``."""
    A = np.hstack([np.ones((Z.shape[0], 1)), Z])
    out = []
    for alpha in alphas:
        H = A @ np.linalg.solve(A.T @ A + alpha * np.diag([0.0] + [1.0] * Z.shape[1]), A.T)
        R = (Y - H @ Y) / (1 - np.diag(H))[:, None]
        out.append(np.mean(R**2, axis=1))
    return np.array(out)


@settings(max_examples=15, deadline=None)
@given(n=st.integers(8, 50), d=st.integers(1, 4), s=st.integers(2, 20), m=st.integers(1, 2),
       spread=st.floats(0.3, 4.0), seed=st.integers(0, 2**31 - 1))
def test_closing_width_check_is_the_leave_one_out_error_of_each_wider_kernel(n, d, s, m, spread, seed):
    """closing_width_factor: each factor's error is the exact leave-one-out mean squared error of the
    ridge (unpenalised intercept) on the features of the kernel that many times as wide, at its best
    penalty, computed here from the hat matrix; the factor kept is the one nearest 1 whose error is
    within one standard error (of the mean per-row difference) of the least."""
    from rffkern.rffnet import CLOSING_WIDTH_FACTORS, REFIT_ALPHAS, closing_width_factor

    rng = np.random.default_rng(seed)
    Xr = spread * rng.standard_normal((n, d))
    Y = np.sin(Xr[:, :1] / 2) * np.arange(1, m + 1) + 0.1 * rng.standard_normal((n, m))
    W, b = rng.standard_normal((d, s)), rng.uniform(0, 2 * np.pi, s)
    factor, errors = closing_width_factor(Xr, Y, None, W, b, 1.0)
    best_rows = []
    for f, error in zip(CLOSING_WIDTH_FACTORS, errors):
        losses = _hat_matrix_loo(np.cos(Xr @ (W / f) + b), Y, REFIT_ALPHAS)
        k = int(np.argmin(losses.mean(axis=1)))
        assert error == pytest.approx(losses[k].mean(), rel=1e-5, abs=1e-10)
        best_rows.append(losses[k])
    least = int(np.argmin(errors))
    se = [np.std(r - best_rows[least], ddof=1) / np.sqrt(n) for r in best_rows]
    near = [j for j in range(len(errors)) if errors[j] <= errors[least] + se[j] + 1e-12]
    assert factor in [CLOSING_WIDTH_FACTORS[j] for j in near]
    assert factor == CLOSING_WIDTH_FACTORS[min(near)]  # nearest 1: the smallest factor of those


def test_closing_width_check_widens_where_the_trained_kernel_is_far_too_narrow():
    from rffkern.rffnet import closing_width_factor

    rng = np.random.default_rng(3)
    Xr = 2.0 * rng.standard_normal((80, 3))  # a kernel far too narrow for this smooth target
    Y = (np.sin(Xr[:, 0] / 4) + 0.05 * rng.standard_normal(80)).reshape(-1, 1)
    W, b = rng.standard_normal((3, 25)), rng.uniform(0, 2 * np.pi, 25)
    factor, errors = closing_width_factor(Xr, Y, None, W, b, 1.0)
    assert errors[0] > 2 * min(errors) and factor > 1.0  # far apart: the wider kernel is kept
    assert closing_width_factor(Xr[:2], Y[:2], None, W, b, 1.0) == (1.0, None)  # no LOO to compare


def test_closing_width_check_widens_a_kernel_trained_too_narrow_on_few_rows(monkeypatch):
    """RFFNetRegressor starts narrow (init="median") and on diabetes' 353 training rows early
    stopping ends the training before the kernel has widened: the closing check widens it (the
    relevances divided by the factor, their ranking unchanged), and the held-out error drops; on
    plenty of rows the learned kernel is kept as trained."""
    import rffkern.rffnet as rn
    from sklearn.datasets import load_diabetes
    from sklearn.model_selection import train_test_split

    X, y = load_diabetes(return_X_y=True)
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.2, random_state=0)
    model = RFFNetRegressor(random_state=0, n_jobs=1).fit(Xtr, ytr)
    assert model.closing_width_factor_ > 1.0
    np.testing.assert_array_equal(model.relevances_ * model.closing_width_factor_, model._trained_map[4])
    monkeypatch.setattr(rn, "CLOSING_WIDTH_FACTORS", (1.0,))
    as_trained = RFFNetRegressor(random_state=0, n_jobs=1).fit(Xtr, ytr)
    assert as_trained.closing_width_factor_ == 1.0
    np.testing.assert_array_equal(as_trained.relevances_, model._trained_map[4])  # the same training
    assert model.score(Xte, yte) > as_trained.score(Xte, yte) + 0.05
    monkeypatch.undo()
    X, y, _ = make_jse3(3000, random_state=0)
    assert RFFNetRegressor(random_state=0, n_jobs=1).fit(X, y).closing_width_factor_ == 1.0
    assert RFFNetRegressor(random_state=0, n_jobs=1, refit_coef=False).fit(X, y).closing_width_factor_ is None


def test_closing_ridge_adds_features_of_the_learned_kernel():
    """refit_components: the closing ridge uses the trained frequencies plus new draws of the same
    kernel (at most two per row); training, warm_start and partial_fit go on from the trained map."""
    X, y, _ = make_jse3(150, random_state=0)
    kw = dict(n_components=30, max_iter=4, early_stopping=False, dtype="float64", random_state=0, n_jobs=1)
    wide = RFFNetRegressor(**kw, refit_components=120).fit(X, y)
    trained = RFFNetRegressor(**kw, refit_coef=False).fit(X, y)
    narrow = RFFNetRegressor(**kw, refit_components=None).fit(X, y)
    assert wide.weights_.shape == (X.shape[1], 120) and wide.offsets_.shape == (120,) and wide.coef_.shape == (120, 1)
    assert narrow.weights_.shape == trained.weights_.shape == (X.shape[1], 30)
    np.testing.assert_array_equal(wide.weights_[:, :30], trained.weights_)
    np.testing.assert_array_equal(wide.relevances_ * wide.closing_width_factor_, trained.relevances_)
    # the new frequencies are standard normal draws (the Gaussian kernel at unit length scale)
    extra = RFFNetRegressor(**kw, refit_components=300).fit(X, y).weights_[:, 30:]
    assert abs(extra.mean()) < 0.05 and abs(extra.std() - 1.0) < 0.05
    assert RFFNetRegressor(**kw, refit_components=10_000).fit(X, y).weights_.shape[1] == 2 * X.shape[0]
    assert wide.score(X, y) > narrow.score(X, y)
    # continuing: from the trained (W, b, B), exactly as without the closing ridge
    for model in (wide, trained):
        model.partial_fit(X, y)
    np.testing.assert_array_equal(wide.weights_, trained.weights_)
    np.testing.assert_array_equal(wide.coef_, trained.coef_)
    np.testing.assert_array_equal(wide.relevances_, trained.relevances_)
    assert wide.refit_alpha_ is None
    warm = RFFNetRegressor(**kw, refit_components=120).fit(X, y).set_params(warm_start=True, max_iter=2).fit(X, y)
    cold = RFFNetRegressor(**kw, refit_coef=False).fit(X, y).set_params(warm_start=True, max_iter=2).fit(X, y)
    np.testing.assert_array_equal(warm.relevances_ * warm.closing_width_factor_, cold.relevances_)
    assert warm.weights_.shape[1] == 120 and warm.refit_alpha_ is not None
    with pytest.raises(ValueError, match="refit_components"):
        RFFNetRegressor(refit_components=0).fit(X, y)


def _trained_features(model, X):
    """z(theta * x) of the fitted classifier, by NumPy."""
    Xs = (X - model.x_mean_) / model.x_scale_
    return model.scale_ * np.cos((Xs * model.relevances_) @ model.weights_ + model.offsets_)


def _sklearn_logistic(Z, y, alpha, sample_weight=None):
    """scikit-learn's L2 logistic / multinomial fit without intercept at RFFNet's penalty: its
    ``0.5 ||B||^2 + C sum_i w_i loss_i`` is RFFNet's ``sum_i w_i loss_i / sum_i w_i + alpha ||B||^2``
    divided by ``2 alpha`` with ``C = 1 / (2 alpha sum_i w_i)``."""
    from sklearn.linear_model import LogisticRegression
    total = Z.shape[0] if sample_weight is None else float(np.sum(sample_weight))
    lr = LogisticRegression(C=1.0 / (2.0 * alpha * total), fit_intercept=False, tol=1e-12, max_iter=100000)
    return lr.fit(Z, y, sample_weight=sample_weight).coef_.T


@pytest.mark.parametrize("n_classes", [2, 3])
def test_classifier_refit_coef_is_the_penalised_cross_entropy_fit(n_classes):
    """refit_coef: with theta, W and b as trained, B is the L2-penalised logistic (two classes) or
    softmax regression on z(theta * x) of every row at refit_alpha_ (chosen on the validation
    split); the epochs are those of refit_coef=False."""
    from rffkern._output_refit import OUTPUT_ALPHAS
    X, y, _ = make_jse3(500, random_state=0)
    labels = np.digitize(y, np.quantile(y, np.linspace(0, 1, n_classes + 1)[1:-1]))
    kw = dict(n_components=30, max_iter=8, dtype="float64", random_state=0, n_jobs=1)
    model = RFFNetClassifier(**kw, refit_components=None).fit(X, labels)  # on the trained features
    trained = RFFNetClassifier(**kw, refit_coef=False).fit(X, labels)
    assert trained.refit_alpha_ is None and model.refit_alpha_ in OUTPUT_ALPHAS
    # the same epochs (the closing check may have widened the kernel: theta divided by a power of 2)
    np.testing.assert_array_equal(trained.relevances_, model.relevances_)
    # the closing fit's map: the trained frequencies plus new draws (refit_components, <= 2 per row)
    wide = RFFNetClassifier(**kw).fit(X, labels)
    assert wide.coef_.shape == (1000, trained.coef_.shape[1]) and wide.refit_alpha_ in OUTPUT_ALPHAS
    np.testing.assert_array_equal(wide.weights_[:, :30], trained.weights_)
    Zw = _trained_features(wide, X)
    Yw = (labels == 1).astype(float)[:, None] if n_classes == 2 else np.eye(n_classes)[labels]
    _, grad_w = reference.closing_fit_objective(Zw, Yw, "logistic" if n_classes == 2 else "softmax", wide.refit_alpha_, wide.coef_)
    assert np.abs(grad_w).max() < 1e-4  # the penalised fit on the wider map too
    assert not np.allclose(trained.coef_, model.coef_)
    np.testing.assert_array_equal(model.intercept_, 0.0)  # no output bias, as in training
    Z = _trained_features(model, X)
    expected = _sklearn_logistic(Z, labels, model.refit_alpha_)
    np.testing.assert_allclose(model.coef_, expected, rtol=1e-3, atol=1e-4 * np.abs(expected).max())
    Y = (labels == 1).astype(float)[:, None] if n_classes == 2 else np.eye(n_classes)[labels]
    _, grad = reference.closing_fit_objective(Z, Y, "logistic" if n_classes == 2 else "softmax", model.refit_alpha_, model.coef_)
    assert np.abs(grad).max() < 1e-4
    assert model.score(X, labels) >= trained.score(X, labels)


def test_classifier_penalty_search_in_float32_agrees_with_float64(monkeypatch):
    """The closing fit's penalty search runs on float32 copies of the features (SEARCH_DTYPE): it
    chooses the penalty a float64 search chooses, with fold solutions equal to float32 precision
    (relative to the solution), on both whitening paths (Z V formed, and not)."""
    import rffkern._output_refit as refit
    X, y, _ = make_jse3(600, random_state=3)
    model = RFFNetClassifier(n_components=40, max_iter=3, refit_coef=False, random_state=0, n_jobs=1).fit(X, y > 0)
    Z = _trained_features(model, X)
    rows = np.arange(600)
    folds = [(rows[:480], rows[480:])]
    for labels, rotate_rows in (((y > 0).astype(int), 500), (np.digitize(y, [-0.5, 0.5]), 1)):
        Y = np.eye(labels.max() + 1)[labels] if labels.max() > 1 else labels[:, None].astype(float)
        kind = "softmax" if Y.shape[1] > 1 else "logistic"
        monkeypatch.setattr(refit, "ROTATE_ROWS_PER_OUTPUT", rotate_rows)
        monkeypatch.setattr(refit, "FLOAT32_SEARCH_MIN_ROWS", 0)
        found = {}
        for dtype in (np.float64, np.float32):
            monkeypatch.setattr(refit, "SEARCH_DTYPE", dtype)
            found[dtype] = refit.choose_output_penalty(Z, Y, kind, folds, refit.OUTPUT_ALPHAS, 1e-4, None,
                                                       np.zeros((Z.shape[1], Y.shape[1])))
        assert found[np.float32][0] == found[np.float64][0]
        B32, B64 = found[np.float32][1], found[np.float64][1]
        assert B32.dtype == np.float64
        assert np.abs(B32 - B64).max() < 1e-3 * np.abs(B64).max()


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_softmax_products_are_the_compiled_softmax_loss_for_any_thread_count(monkeypatch, dtype):
    """The closing fit's matrix-product softmax (many outputs) computes the compiled kernel's loss
    and gradient, over blocks of rows summed in block order: the same bits for 1, 2 and 3 threads."""
    import rffkern._output_refit as refit
    from rffkern.kernels import softmax_loss_grad
    monkeypatch.setattr(refit, "SOFTMAX_BLOCK_ROWS", 64)  # 5 blocks, the last one short
    rng = np.random.default_rng(0)
    Z = (rng.standard_normal((300, 40)) / 4).astype(dtype)
    Y = np.eye(70)[rng.integers(0, 70, 300)]
    w, coef = rng.uniform(0.1, 2.0, 300), rng.standard_normal((40, 70))
    got = [refit._SoftmaxProducts(Z, Y, w, threads)(coef) for threads in (1, 2, 3)]
    for value, grad in got[1:]:
        assert value == got[0][0] and np.array_equal(grad, got[0][1])
    value, grad = got[0]
    expected_value, expected_grad = softmax_loss_grad(Z, Y, coef, w)
    rtol = 1e-12 if dtype == np.float64 else 1e-5
    assert grad.dtype == np.float64 and abs(value - expected_value) <= rtol * expected_value
    np.testing.assert_allclose(grad, expected_grad, rtol=0, atol=rtol * np.abs(expected_grad).max())


def test_closing_fit_with_many_classes_uses_matrix_products_and_stays_accurate(monkeypatch):
    """With 300 classes the closing softmax fit runs on matrix products (the compiled kernel, built
    for a few outputs, took 2-3.5x as long per evaluation from 128 outputs on, and the penalty
    search hundreds of evaluations: RFFNetClassifier on 1000 classes took 397 s): it solves the
    penalised problem as before and predicts held-out rows at least as well as a logistic
    regression on the standardized inputs. The time bound is loose: 3-10 s when written."""
    import time

    import rffkern._output_refit as refit
    from sklearn.datasets import make_classification
    from sklearn.linear_model import LogisticRegression
    from sklearn.preprocessing import StandardScaler

    def few_outputs_only(Z, Y, coef_t, w, n_threads):
        assert Y.shape[1] < 64, "the compiled softmax ran for hundreds of outputs"
        return compiled(Z, Y, coef_t, w, n_threads)

    compiled = refit.softmax_loss_grad_unchecked
    monkeypatch.setattr(refit, "softmax_loss_grad_unchecked", few_outputs_only)
    X, y = make_classification(n_samples=1200, n_features=10, n_informative=10, n_redundant=0, n_classes=300,
                               n_clusters_per_class=1, class_sep=3.0, random_state=0)
    train, test = np.arange(1200) % 4 != 0, np.arange(1200) % 4 == 0
    t0 = time.perf_counter()
    model = RFFNetClassifier(n_components=30, max_iter=5, refit_components=200, standardize=True, random_state=0,
                             n_jobs=1).fit(X[train], y[train])
    assert time.perf_counter() - t0 < 120
    Z = _trained_features(model, X[train])
    Y = (y[train][:, None] == model.classes_[None, :]).astype(float)
    _, grad = reference.closing_fit_objective(Z, Y, "softmax", model.refit_alpha_, model.coef_)
    assert np.abs(grad).max() < 1e-4
    scaler = StandardScaler().fit(X[train])
    logistic = LogisticRegression(max_iter=2000).fit(scaler.transform(X[train]), y[train])
    assert model.score(X[test], y[test]) >= logistic.score(scaler.transform(X[test]), y[test])  # 0.46 against 0.38


@pytest.mark.parametrize("solver", ["shared-adam", "adam", "sgd", "palm-adam", "palm-sgd"])
@pytest.mark.parametrize("init", ["median", "constant", "restarter", "given"])
def test_an_input_constant_on_the_training_rows_has_relevance_zero(solver, init):
    """Standardized, a constant input is 0 on every row and its gradient is 0: its relevance is set
    to 0 at the start and no solver moves it, so it ranks last in feature_importances_ (it stayed
    at its start, above the noise inputs, before)."""
    X, y, _ = make_jse3(300, random_state=0)
    X = np.column_stack([X[:, :4], np.full(300, -2.5), X[:, 4:]])
    start = np.full(X.shape[1], 0.3) if init == "given" else init
    for est in (RFFNetRegressor(40, solver=solver, init=start, max_iter=4, n_restarts=2, restart_iter=1,
                                random_state=0, n_jobs=1),
                RFFNetClassifier(40, solver=solver, init=start, max_iter=4, n_restarts=2, restart_iter=1,
                                 random_state=0, n_jobs=1)):
        est.fit(X, y if est._loss_kind == "regression" else y > 0)
        assert est.relevances_[4] == 0 and est.feature_importances_[4] == 0
        assert np.count_nonzero(est.relevances_) > 1


@pytest.mark.parametrize("start", [1e-6, 1e-5, 1e-4, 1e-2])
def test_classifier_penalty_search_finds_the_grid_minimum_with_the_fewest_fits(monkeypatch, start):
    """choose_output_penalty walks from ``start`` up the grid until the held-out loss rises, and down
    only when no larger penalty beat the start: on a loss curve with one valley it returns the
    grid's least held-out loss (computed here by fitting every penalty) and fits no penalty below
    the start when the valley lies above it."""
    import rffkern._output_refit as refit
    from rffkern._losses import mean_loss
    rng = np.random.default_rng(0)
    Z = rng.standard_normal((240, 60)) / np.sqrt(60)
    labels = ((Z[:, 0] + 0.8 * rng.standard_normal(240)) > 0).astype(float)[:, None]  # noisy: a large penalty wins
    folds = [(np.arange(160), np.arange(160, 240))]
    alphas = refit.OUTPUT_ALPHAS
    curve = [mean_loss(Z[160:] @ refit.fit_output_layer(Z[:160], labels[:160], "logistic", a)[0], labels[160:],
                       "logistic", None) for a in alphas]
    best = int(np.argmin(curve))
    assert all(np.diff(curve[:best + 1]) <= 0) and all(np.diff(curve[best:]) >= 0)  # one valley
    assert 0 < best < len(alphas) - 1
    fitted = []
    original = refit.fit_output_layer

    def counting(Zt, Yt, kind, alpha, *args, **kwargs):
        fitted.append(alpha)
        return original(Zt, Yt, kind, alpha, *args, **kwargs)

    monkeypatch.setattr(refit, "fit_output_layer", counting)
    alpha, _, _ = refit.choose_output_penalty(Z, labels, "logistic", folds, alphas, start)
    assert alpha == alphas[best]
    first = int(np.argmin(np.abs(np.log(alphas) - np.log(start))))
    if first < best:  # the valley above the start: up to one past it, nothing below
        assert fitted == list(alphas[first:best + 2])
    else:  # up one step (the loss rises), then down to one past the valley
        assert fitted[:2] == [alphas[first], alphas[first + 1]] and min(fitted) == alphas[max(best - 1, 0)]


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 6), st.integers(0, 2**31 - 1), st.floats(0.1, 8.0))
def test_closing_fit_curvatures_are_the_loss_hessians_mean_eigenvalue(m, seed, scale):
    """The preconditioner's row curvatures: p (1 - p) for the logistic loss; for the softmax the
    mean of the nonzero eigenvalues of diag(p) - p p^T (its Hessian in the logits, of rank m - 1)."""
    from rffkern._output_refit import _curvatures
    rng = np.random.default_rng(seed)
    Z = rng.standard_normal((7, 5))
    coef = scale * rng.standard_normal((5, m if m > 1 else 1))
    F = Z @ coef
    got = _curvatures(Z, "softmax" if m > 1 else "logistic", coef)
    if m == 1:
        p = 1.0 / (1.0 + np.exp(-F[:, 0]))
        np.testing.assert_allclose(got, p * (1 - p), rtol=1e-12, atol=1e-300)
        return
    for f, c in zip(F, got):
        p = np.exp(f - f.max()) / np.exp(f - f.max()).sum()
        eigs = np.linalg.eigvalsh(np.diag(p) - np.outer(p, p))
        assert abs(c - np.sort(eigs)[1:].mean()) <= 1e-12 + 1e-9 * c  # the largest m - 1


@pytest.mark.parametrize("n_classes", [2, 4])
def test_closing_fit_preconditioned_at_a_confident_start_solves_the_same_problem_in_fewer_steps(n_classes):
    """From confident output weights (as RFFNet's trained ones often are) the preconditioner of the
    rows' curvatures there leaves the solution as it is and shortens the fit several times over
    against that of logits 0 (curvature 1/4 for the logistic loss, 1/m for the softmax): 63 -> 11
    and 73 -> 14 iterations when written."""
    from rffkern._output_refit import _Whitening, fit_output_layer
    X, labels = make_blobs(400, n_features=6, centers=n_classes, cluster_std=1.0, random_state=1)
    rng = np.random.default_rng(0)
    W, b = rng.standard_normal((6, 300)) / 3.0, rng.uniform(0, 2 * np.pi, 300)
    Z = np.sqrt(2.0 / 300) * np.cos(X @ W + b)
    Y = (labels == 1).astype(float)[:, None] if n_classes == 2 else np.eye(n_classes)[labels]
    kind = "logistic" if n_classes == 2 else "softmax"
    alpha = 1e-5
    start, _ = fit_output_layer(Z, Y, kind, 1e-4, tol=1e-3)  # confident; the previous penalty of a path
    fits = {}
    for at, point in (("zero", np.zeros_like(start)), ("start", start)):
        white = _Whitening(Z, kind, None, point)
        fits[at] = fit_output_layer(Z, Y, kind, alpha, None, start, whitening=white, tol=1e-7, max_iter=20000)
    B0, n0 = fits["zero"]
    B1, n1 = fits["start"]
    f0, _ = reference.closing_fit_objective(Z, Y, kind, alpha, B0)
    f1, g1 = reference.closing_fit_objective(Z, Y, kind, alpha, B1)
    assert np.abs(g1).max() < 1e-7 and f1 <= f0 + 1e-12  # at least as near the solution (1.7e-7, 1.2e-7 at 1/4)
    np.testing.assert_allclose(B1, B0, atol=3e-3 * np.abs(B0).max())  # the problem is flat: 1.6e-3 apart
    assert 3 * n1 < n0, (n1, n0)


def test_stratified_subset_keeps_every_class_in_proportion():
    from rffkern._rffnet_training import CLOSING_MIN_CLASS_ROWS, stratified_subset
    labels = np.repeat([0, 1, 2], [9000, 990, 10])
    idx = stratified_subset(labels, 1000, np.random.default_rng(0))
    assert np.all(np.diff(idx) > 0)  # sorted, no repeats
    assert np.bincount(labels[idx]).tolist() == [900, 99, 10]  # the rare class whole (10 < 20 rows)
    few = stratified_subset(np.repeat([0, 1], [990, 10 * CLOSING_MIN_CLASS_ROWS]), 100, np.random.default_rng(0))
    assert np.bincount(np.repeat([0, 1], [990, 10 * CLOSING_MIN_CLASS_ROWS])[few]).tolist()[1] == CLOSING_MIN_CLASS_ROWS
    np.testing.assert_array_equal(idx, stratified_subset(labels, 1000, np.random.default_rng(0)))


@pytest.mark.parametrize("n_classes", [2, 3])
def test_classifier_closing_fit_on_a_row_subset_above_the_cap(monkeypatch, n_classes):
    """Above CLOSING_MAX_ROWS rows the closing fit fits a stratified subset: the stream draws it only
    then (a cap of exactly the row count changes nothing), the result is a penalised fit that
    predicts about as well as the fit on every row, and rffkern.fit keeps no rows to add."""
    import rffkern.rffnet as rn
    X, y, _ = make_jse3(900, random_state=4)
    labels = np.digitize(y, np.quantile(y, np.linspace(0, 1, n_classes + 1)[1:-1]))
    X_test, y_test, _ = make_jse3(2000, random_state=5)
    test_labels = np.digitize(y_test, np.quantile(y, np.linspace(0, 1, n_classes + 1)[1:-1]))
    kw = dict(n_components=30, max_iter=8, refit_components=200, random_state=0, n_jobs=1)
    full = RFFNetClassifier(**kw).fit(X, labels)
    monkeypatch.setattr(rn, "CLOSING_MAX_ROWS", 900)
    np.testing.assert_array_equal(RFFNetClassifier(**kw).fit(X, labels).coef_, full.coef_)
    monkeypatch.setattr(rn, "CLOSING_MAX_ROWS", 300)
    sub = RFFNetClassifier(**kw)
    with fit_options(sub, keep_closing_stats=True):
        sub.fit(X, labels)
    assert not hasattr(sub, "_closing_stats")  # nothing for rffkern.fit to add rows to
    np.testing.assert_array_equal(sub.relevances_, full.relevances_)  # the same epochs
    assert sub.refit_alpha_ is not None and not np.allclose(sub.coef_, full.coef_)
    # 300 of 900 rows: a little behind the fit on every row, far ahead of the trained B
    trained = RFFNetClassifier(**kw, refit_coef=False).fit(X, labels)
    assert sub.score(X_test, test_labels) > full.score(X_test, test_labels) - 0.08
    assert sub.score(X_test, test_labels) > trained.score(X_test, test_labels) + 0.1


def test_classifier_outputs_agree_after_refit():
    """predict, predict_proba, predict_log_proba and decision_function all come from coef_."""
    X, y, _ = make_jse3(400, random_state=1)
    for labels in ((y > 0).astype(int), np.digitize(y, [-0.5, 0.5])):
        model = RFFNetClassifier(n_components=30, max_iter=5, random_state=0).fit(X, labels)
        D, P = model.decision_function(X), model.predict_proba(X)
        logits = _trained_features(model, X.astype(np.float32)).astype(np.float64) @ model.coef_
        np.testing.assert_allclose(D, logits[:, 0] if logits.shape[1] == 1 else logits, rtol=1e-4, atol=1e-4)
        if D.ndim == 1:
            np.testing.assert_allclose(P[:, 1], 1.0 / (1.0 + np.exp(-D)), rtol=1e-12)
            assert np.array_equal(model.predict(X), model.classes_[(D > 0).astype(int)])
        else:
            np.testing.assert_allclose(P, np.exp(D) / np.exp(D).sum(1, keepdims=True), rtol=1e-10)
            assert np.array_equal(model.predict(X), model.classes_[D.argmax(1)])
        assert np.array_equal(model.predict(X), model.classes_[P.argmax(1)])
        np.testing.assert_allclose(model.predict_log_proba(X), np.log(P), rtol=1e-12)


def test_classifier_refit_respects_sample_weight():
    """Weighted rows: the closing fit minimises the weighted mean cross-entropy (integer weights act
    as repeated rows, zero weights as absent ones), here on the cross-validated path
    (early_stopping=False: 3 interleaved folds choose the penalty)."""
    X, y, _ = make_jse3(300, random_state=2)
    labels = (y > 0).astype(int)
    w = np.random.default_rng(0).integers(0, 4, size=300).astype(float)
    kw = dict(n_components=20, max_iter=5, early_stopping=False, dtype="float64", random_state=0, n_jobs=1)
    model = RFFNetClassifier(**kw).fit(X, labels, sample_weight=w)
    Z = _trained_features(model, X)
    np.testing.assert_allclose(model.coef_, _sklearn_logistic(Z, labels, model.refit_alpha_, w), rtol=1e-3,
                               atol=1e-4 * np.abs(model.coef_).max())
    unweighted = _sklearn_logistic(Z, labels, model.refit_alpha_)
    assert not np.allclose(model.coef_, unweighted, rtol=1e-2, atol=1e-3)


def test_classifier_refit_coef_false_is_the_trained_output_layer():
    """refit_coef=False keeps B as the epochs left it: one epoch of fit is partial_fit once, bit for
    bit (partial_fit never refits), and refit_alpha_ is None either way."""
    X, y, _ = make_jse3(400, random_state=3)
    labels = (y > 0).astype(int)
    kw = dict(n_components=30, random_state=1, dtype="float64")
    fitted = RFFNetClassifier(refit_coef=False, max_iter=1, early_stopping=False, **kw).fit(X, labels)
    streamed = RFFNetClassifier(**kw).partial_fit(X, labels)
    np.testing.assert_array_equal(fitted.coef_, streamed.coef_)
    np.testing.assert_array_equal(fitted.relevances_, streamed.relevances_)
    assert fitted.refit_alpha_ is None and streamed.refit_alpha_ is None
    refitted = RFFNetClassifier(max_iter=1, early_stopping=False, **kw).fit(X, labels)
    assert refitted.refit_alpha_ is not None and not np.array_equal(refitted.coef_, fitted.coef_)


@pytest.mark.parametrize("cls", [RFFNetRegressor, RFFNetClassifier])
def test_partial_fit_after_fit_forgets_the_closing_fit(cls):
    X, y, _ = make_jse3(200, random_state=0)
    if cls is RFFNetClassifier:
        y = y > 0
    est = cls(n_components=20, max_iter=3, random_state=0).fit(X, y)
    assert est.refit_alpha_ is not None
    assert est.partial_fit(X, y).refit_alpha_ is None  # B trained on from the refitted one


@given(n=st.integers(1, 40), m=st.integers(1, 3), weighted=st.booleans(), constant=st.booleans(),
       seed=st.integers(0, 2**31 - 1))
@settings(max_examples=60, deadline=None)
def test_epoch_scores_equal_scikit_learns(n, m, weighted, constant, seed):
    """The per-epoch validation scores (validation_scores_) are scikit-learn's r2_score and
    accuracy_score, computed without their input checks: weighted or not, several outputs, and a
    constant output (fitted exactly, or not)."""
    from sklearn.metrics import accuracy_score, r2_score

    from rffkern.rffnet import _accuracy, _r2
    rng = np.random.default_rng(seed)
    Y = rng.normal(size=(n, m))
    if constant:
        Y[:, 0] = 1.5
    F = Y + rng.normal(size=(n, m)) * rng.choice([0.0, 0.1, 3.0])
    w = rng.uniform(0.1, 2.0, n) if weighted else None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # scikit-learn's for one row (R^2 undefined: NaN)
        want = r2_score(Y, F, sample_weight=w)
    assert _r2(Y, F, w) == pytest.approx(want, rel=1e-12, abs=1e-12, nan_ok=True)
    labels, predicted = rng.integers(3, size=n), rng.integers(3, size=n)
    assert _accuracy(labels, predicted, w) == pytest.approx(accuracy_score(labels, predicted, sample_weight=w),
                                                            rel=1e-12, abs=1e-15)
