"""predict_proba of EERFClassifier (solver="ridge") and AdaptiveRFFClassifier: softmax(temperature_ *
class scores), the temperature fitted to the exact leave-one-out outputs of the training rows, as
RFFRidgeClassifier's (rffkern._calibration). Each temperature is checked against brute force: the
model refitted without each row, at the same features and penalty."""
import pickle

import numpy as np
import pytest
from scipy.special import expit
from sklearn.datasets import make_classification

from rffkern import AdaptiveRFFClassifier, EERFClassifier
from rffkern._calibration import class_codes, class_scores, fit_temperature
from rffkern._losses import class_probabilities


def _data(n=70, n_classes=2, seed=0):
    return make_classification(n, 4, n_informative=3, n_redundant=0, n_classes=n_classes,
                               n_clusters_per_class=1, flip_y=0.1, random_state=seed)


def _weighted_ridge(Z, Y, w, alpha, intercept):
    """argmin of sum_i w_i ||y_i - z_i B - b||^2 + alpha ||B||^2 (b = 0 without intercept)."""
    mz = np.average(Z, axis=0, weights=w) if intercept else np.zeros(Z.shape[1])
    my = np.average(Y, axis=0, weights=w) if intercept else np.zeros(Y.shape[1])
    Zc, Yc = Z - mz, Y - my
    B = np.linalg.solve(Zc.T @ (w[:, None] * Zc) + alpha * np.eye(Z.shape[1]), Zc.T @ (w[:, None] * Yc))
    return B, my - mz @ B


def _brute_loo(Z, Y, w, alpha, intercept):
    """Each row's output from the fit without it (all of its weight left out)."""
    out = np.empty_like(Y)
    for i in range(Z.shape[0]):
        keep = np.arange(Z.shape[0]) != i
        B, b = _weighted_ridge(Z[keep], Y[keep], w[keep], alpha, intercept)
        out[i] = Z[i] @ B + b
    return out


@pytest.mark.parametrize("n_classes", [2, 3])
@pytest.mark.parametrize("weighted", [False, True])
def test_eerf_temperature_is_fitted_to_brute_force_leave_one_out_decisions(n_classes, weighted):
    X, y = _data(n_classes=n_classes)
    w = np.random.default_rng(2).uniform(0.5, 3.0, len(y)) if weighted else None
    clf = EERFClassifier(15, alpha=0.3, length_scale=2.0, random_state=0).fit(X, y, sample_weight=w)
    Z = clf._map().features(clf._transform_input(X)).astype(np.float64)
    Y = np.where(y[:, None] == clf.classes_[None, :], 1.0, -1.0)
    Y = Y[:, 1:] if n_classes == 2 else Y
    # (the weights relative to their mean, as every estimator takes them)
    loo = _brute_loo(Z, Y, np.ones(len(y)) if w is None else w / w.mean(), clf.alpha_, True)
    expected = fit_temperature(class_scores(loo), class_codes(Y), w)
    assert clf.temperature_ > 0
    np.testing.assert_allclose(clf.temperature_, expected, rtol=1e-5)
    assert not hasattr(clf, "_ridge_stats")  # (the Gram statistics are not kept in the model)


@pytest.mark.parametrize("n_classes", [2, 3])
@pytest.mark.parametrize("params", [dict(), dict(early_stopping=False), dict(early_stopping=False, final_alpha=None)],
                         ids=["early-stopping", "final-alpha-loo", "gcv"])
def test_adaptive_temperature_is_fitted_to_brute_force_leave_one_out_outputs(n_classes, params):
    X, y = _data(90, n_classes, seed=1)
    clf = AdaptiveRFFClassifier(8, n_iter=5, random_state=0, **params).fit(X, y)
    Xs = clf._standardise(X)
    U = Xs @ clf.frequencies_
    S = np.hstack([np.cos(U), np.sin(U)])  # the pair features, no scale, no intercept
    onehot = (y[:, None] == clf.classes_[None, :]).astype(np.float64)
    Yc = onehot - clf.y_mean_
    n = len(y)
    B, _ = _weighted_ridge(S, Yc, np.ones(n), clf.alpha_ * n, False)
    np.testing.assert_allclose(S @ clf.coef_, S @ B, rtol=1e-6, atol=1e-8)  # the model is that ridge fit
    loo = _brute_loo(S, Yc, np.ones(n), clf.alpha_ * n, False) + clf.y_mean_
    expected = fit_temperature(loo, onehot.argmax(axis=1))
    np.testing.assert_allclose(clf.temperature_, expected, rtol=1e-5)


@pytest.mark.parametrize("make", [lambda: EERFClassifier(40, random_state=0),
                                  lambda: AdaptiveRFFClassifier(32, n_iter=20, random_state=0)],
                         ids=["eerf", "adaptive"])
@pytest.mark.parametrize("n_classes", [2, 4])
def test_probabilities_are_a_tempered_softmax_that_agrees_with_predict(make, n_classes):
    X, y = _data(400, n_classes, seed=3)
    clf = make().fit(X[:300], y[:300])
    P = clf.predict_proba(X[300:])
    assert P.shape == (100, n_classes) and clf.temperature_ > 0
    np.testing.assert_allclose(P.sum(axis=1), 1.0, rtol=1e-12)
    np.testing.assert_array_equal(clf.classes_[P.argmax(axis=1)], clf.predict(X[300:]))
    if n_classes == 2:
        np.testing.assert_allclose(P[:, 1], expit(clf.temperature_ * clf.decision_function(X[300:])), rtol=1e-10)
    np.testing.assert_allclose(clf.predict_log_proba(X[300:]), np.log(P), rtol=1e-10, atol=1e-12)
    restored = pickle.loads(pickle.dumps(clf))
    np.testing.assert_array_equal(restored.predict_proba(X[300:]), P)
    del restored.__dict__["_temperature"]  # as a model pickled by an earlier rffkern
    old = pickle.loads(pickle.dumps(restored))
    for method in ("predict_proba", "predict_log_proba"):
        with pytest.raises(ValueError, match=f"{method} needs temperature_, which this model \\(pickled by an earlier"):
            getattr(old, method)(X[300:])


def test_eerf_logistic_probabilities_are_the_logistic_models():
    X, y = _data(200, 3, seed=4)
    clf = EERFClassifier(20, solver="logistic", alpha=1.0, random_state=0).fit(X, y)
    assert clf.temperature_ == 1.0
    np.testing.assert_allclose(clf.predict_proba(X), class_probabilities(clf.decision_function(X)), rtol=1e-12)
    P = clf.predict_proba(X)
    del clf.__dict__["_temperature"]  # as pickled by an earlier rffkern: the logistic model needs none
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(clf)).predict_proba(X), P)


@pytest.mark.parametrize("make", [lambda: EERFClassifier(40, random_state=0),
                                  lambda: AdaptiveRFFClassifier(32, n_iter=20, random_state=0)],
                         ids=["eerf", "adaptive"])
def test_the_temperature_tempers_overconfidence_on_noisy_labels(make):
    """With 30% of the labels flipped, the leave-one-out temperature gives a held-out log-loss within
    0.02 of the best temperature in hindsight; the training outputs (nothing left out) would ask for
    a larger one."""
    X, y = make_classification(1600, 5, n_informative=3, n_redundant=0, flip_y=0.3, random_state=5)
    clf = make().fit(X[:800], y[:800])
    T = clf.temperature_
    S = class_scores(clf.decision_function(X[800:]))
    codes = np.searchsorted(clf.classes_, y[800:])

    def loss(t, scores, c):
        P = np.exp(t * scores - np.logaddexp.reduce(t * scores, axis=1)[:, None])
        return -float(np.mean(np.log(P[np.arange(len(c)), c])))

    best = min(loss(t, S, codes) for t in T * np.linspace(0.2, 3.0, 57))
    assert loss(T, S, codes) <= best + 0.02
    fitted = class_scores(clf.decision_function(X[:800]))
    train_codes = np.searchsorted(clf.classes_, y[:800])
    assert fit_temperature(fitted, train_codes) > T


@pytest.mark.parametrize("make", [lambda **k: EERFClassifier(40, random_state=0, **k),
                                  lambda **k: AdaptiveRFFClassifier(32, n_iter=10, random_state=0, **k)],
                         ids=["eerf", "adaptive"])
def test_the_probabilities_do_not_depend_on_the_thread_count(make):
    X, y = _data(300, 3, seed=6)
    one, two = make(n_jobs=1).fit(X, y), make(n_jobs=2).fit(X, y)
    assert one.temperature_ == two.temperature_
    np.testing.assert_array_equal(one.predict_proba(X), two.predict_proba(X))
