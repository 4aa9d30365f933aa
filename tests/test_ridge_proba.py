"""RFFRidgeClassifier.predict_proba: softmax(temperature_ * decision), the temperature fitted to
the exact leave-one-out decision values of training rows (rffkern._calibration)."""
import pickle

import numpy as np
import pytest
from scipy.special import expit, log_softmax
from sklearn.datasets import make_classification

import rffkern
from rffkern import RFFRidgeClassifier, _api
from rffkern._calibration import loo_decisions

# (not clipped: a row left out may lie outside the other rows' range)
FIXED = dict(n_components=30, alpha=0.3, length_scale=2.0, standardize=False, random_state=0, robust_inputs=False)


def _data(n=80, n_classes=2, seed=0):
    X, y = make_classification(n, 4, n_informative=3, n_redundant=0, n_classes=n_classes,
                               n_clusters_per_class=1, flip_y=0.1, random_state=seed)
    return X, y


@pytest.mark.parametrize("n_classes", [2, 3])
@pytest.mark.parametrize("weighted", [False, True])
def test_loo_decisions_are_those_of_the_fit_without_the_row(n_classes, weighted):
    X, y = _data(n_classes=n_classes)
    rows = np.array([0, 7, 33, 79])
    w = None
    if weighted:
        # the rows left out weigh the mean of the others: the fit without one of them has the same
        # weight unit (its mean weight), so its penalty is the full fit's
        w = np.random.default_rng(1).uniform(0.5, 3.0, X.shape[0])
        w[rows] = np.delete(w, rows).mean()
    clf = RFFRidgeClassifier(**FIXED).fit(X, y, sample_weight=w)
    Y = clf._target_scaler.transform(clf._targets(y[rows]))
    # (the Gram holds the weights relative to their mean)
    loo = loo_decisions(clf._stats, clf._map(), X[rows], Y, clf.alpha_, True, None if w is None else w[rows] / w.mean())
    for k, i in enumerate(rows):
        keep = np.arange(X.shape[0]) != i
        out = RFFRidgeClassifier(**FIXED).fit(X[keep], y[keep], sample_weight=None if w is None else w[keep])
        np.testing.assert_allclose(loo[k], np.ravel(out.decision_function(X[i:i + 1])), rtol=1e-8, atol=1e-10)


@pytest.mark.parametrize("n_classes", [2, 4])
def test_probabilities_are_the_tempered_softmax_of_the_decisions(n_classes):
    X, y = _data(300, n_classes)
    clf = RFFRidgeClassifier(n_components=100, random_state=0).fit(X[:200], y[:200])
    P = clf.predict_proba(X[200:])
    D = clf.decision_function(X[200:])
    assert P.shape == (100, n_classes) and clf.temperature_ > 0
    np.testing.assert_allclose(P.sum(axis=1), 1.0, rtol=1e-12)
    np.testing.assert_array_equal(clf.classes_[P.argmax(axis=1)], clf.predict(X[200:]))
    if n_classes == 2:
        np.testing.assert_allclose(P[:, 1], expit(clf.temperature_ * D), rtol=1e-12)
    else:
        np.testing.assert_allclose(np.log(P), log_softmax(clf.temperature_ * D, axis=1), rtol=1e-10)
    np.testing.assert_allclose(clf.predict_log_proba(X[200:]), np.log(P), rtol=1e-10)
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(clf)).predict_proba(X[200:]), P)


def _log_loss(P, y, classes):
    return -float(np.mean(np.log(P[np.arange(len(y)), np.searchsorted(classes, y)])))


@pytest.mark.parametrize("n_classes", [2, 3])
def test_the_temperature_is_that_of_least_leave_one_out_log_loss_and_it_transfers(n_classes):
    X, y = _data(2400, n_classes, seed=3)
    clf = RFFRidgeClassifier(300, random_state=0).fit(X[:1200], y[:1200])
    T = clf.temperature_

    def loss(t, rows, D):
        D = np.column_stack([np.zeros(len(D)), D]) if D.ndim == 1 else D
        return -float(np.mean(log_softmax(t * D, axis=1)[np.arange(len(rows)), np.searchsorted(clf.classes_, y[rows])]))

    rows = np.arange(1200)
    Y = clf._target_scaler.transform(clf._targets(y[rows]))
    loo = np.squeeze(loo_decisions(clf._stats, clf._map(), clf._standardized(X[rows]), Y, clf.alpha_, True))
    assert loss(T, rows, loo) <= min(loss(T * 0.95, rows, loo), loss(T * 1.05, rows, loo))
    # on new rows the fitted temperature is within 0.01 of the best one in hindsight (10% label noise)
    test = np.arange(1200, 2400)
    D = clf.decision_function(X[test])
    best = min(loss(t, test, D) for t in T * np.linspace(0.3, 3.0, 28))
    assert _log_loss(clf.predict_proba(X[test]), y[test], clf.classes_) <= best + 0.01
    # and the training decisions (no rows left out) would be overconfident: a larger temperature
    fitted = np.squeeze(clf.decision_function(X[rows]))
    assert min(np.linspace(0.1, 3, 30) * T, key=lambda t: loss(t, rows, fitted)) > T


def test_partial_fit_recalibrates_on_each_chunk_of_two_classes():
    X, y = _data(400)
    clf = RFFRidgeClassifier(n_components=60, random_state=0)
    one = np.flatnonzero(y[:100] == 1)
    with pytest.raises(ValueError, match="at least two classes"):
        clf.partial_fit(X[one], y[one], classes=[0, 1]).predict_proba(X[:3])
    clf.partial_fit(X[100:250], y[100:250])
    first = clf.temperature_
    assert first > 0
    zeros = 250 + np.flatnonzero(y[250:] == 0)
    clf.partial_fit(X[zeros], y[zeros])  # a chunk of one class: the temperature stays
    assert clf.temperature_ == first
    clf.partial_fit(X[250:], y[250:])
    assert clf.temperature_ != first and np.isfinite(clf.predict_proba(X[:5])).all()


def test_rows_of_weight_zero_do_not_calibrate():
    X, y = _data(300)
    w = np.ones(300)
    w[:100] = 0
    a = RFFRidgeClassifier(n_components=60, random_state=0).fit(X, y, sample_weight=w)
    flipped = y.copy()
    flipped[:100] = 1 - flipped[:100]  # the weight-0 rows' labels do not matter
    b = RFFRidgeClassifier(n_components=60, random_state=0).fit(X, flipped, sample_weight=w)
    assert a.temperature_ == pytest.approx(b.temperature_, rel=1e-9)


@pytest.mark.parametrize("force_ridge", [True, False])
def test_fit_returns_a_classifier_with_probabilities_either_way(monkeypatch, force_ridge):
    if force_ridge:
        monkeypatch.setattr(_api, "LEAD_STANDARD_ERRORS", 1e9)
    X, y = _data(400, 3)
    model = rffkern.fit(X, y, random_state=0)
    assert (model.selection_report_["chosen"] == "ridge") == force_ridge
    P = model.predict_proba(X[:50])
    np.testing.assert_allclose(P.sum(axis=1), 1.0, rtol=1e-12)
    np.testing.assert_array_equal(model.classes_[P.argmax(axis=1)], model.predict(X[:50]))
    if force_ridge:  # calibrated on every row of the returned model
        assert model.temperature_ > 0


def test_the_temperature_does_not_depend_on_the_thread_counts():
    from threadpoolctl import threadpool_limits

    X, y = _data(600, 3)
    temps, probs = [], []
    for n_jobs, blas in ((1, 1), (2, 2), (3, 1)):
        with threadpool_limits(limits=blas, user_api="blas"):
            clf = RFFRidgeClassifier(n_components=200, random_state=0, n_jobs=n_jobs).fit(X, y)
        temps.append(clf.temperature_)
        probs.append(clf.predict_proba(X[:50]))
    np.testing.assert_allclose(temps, temps[0], rtol=1e-10)
    np.testing.assert_allclose(probs, np.broadcast_to(probs[0], np.shape(probs)), rtol=1e-9, atol=1e-15)


def test_a_model_pickled_before_the_temperature_asks_for_a_refit():
    X, y = _data(200)
    clf = RFFRidgeClassifier(n_components=40, random_state=0).fit(X, y)
    old = pickle.loads(pickle.dumps(clf))
    del old._temperature  # as unpickled from an rffkern without predict_proba on the ridge
    np.testing.assert_array_equal(old.predict(X[:5]), clf.predict(X[:5]))
    with pytest.raises(ValueError, match="pickled by an earlier rffkern.*fit it again"):
        old.predict_proba(X[:5])


def test_partial_fit_calibrates_when_read_from_the_last_chunk_of_two_classes():
    """The temperature is computed when read (not per chunk), from the last chunk that held two
    classes: a later chunk of one class does not lose it, read or not in between."""
    import copy

    X, y = _data(600)
    ones = 300 + np.flatnonzero(y[300:] == 1)
    read = RFFRidgeClassifier(n_components=60, random_state=0)
    read.partial_fit(X[:300], y[:300], classes=[0, 1])
    first = read.temperature_
    read.partial_fit(X[ones], y[ones])
    assert read.temperature_ == first  # read in between: kept
    unread = RFFRidgeClassifier(n_components=60, random_state=0)
    unread.partial_fit(X[:300], y[:300], classes=[0, 1]).partial_fit(X[ones], y[ones])
    assert "_summary_rows" in vars(unread)  # nothing computed yet
    # not read in between: the first chunk's rows, against the model with both chunks
    expected = copy.deepcopy(read)
    expected._store_calibration(read._standardized(X[:300]), read._targets(y[:300]))
    assert unread.temperature_ == pytest.approx(expected.temperature_, rel=1e-12) and unread.temperature_ > 0
    np.testing.assert_array_equal(unread.predict(X[:20]), read.predict(X[:20]))
