"""``standardize="auto"`` on Dask arrays: the probe ridge's choice, as on one machine.

The probe (``rffkern.ridge.choose_standardization``) runs on at most ``PROBE_ROWS`` rows gathered
from the Dask array. Pixels (digits) take one pooled deviation, inputs in different units each
their own; the choice does not depend on the chunks; the rest of the fit is the fit with the chosen
standardization given (the probe's seed comes from a copy of the generator). On Dask's
synchronous scheduler (conftest's ``synchronous``: the probe's rows and choice do not depend on
the scheduler; the fits on the cluster are tests/test_dask_weights.py's and test_dask_fits.py's),
every wait with a time limit.
"""
import numpy as np
import pytest

da = pytest.importorskip("dask.array")

from sklearn.datasets import load_digits  # noqa: E402

from _time_limit import call_with_time_limit  # noqa: E402
from rffkern import (AdaptiveRFFClassifier, AdaptiveRFFRegressor, EERFClassifier, EERFRegressor,  # noqa: E402
                     RFFNetClassifier, RFFNetRegressor, RFFRidge, RFFRidgeClassifier)
from rffkern._dask import probe_standardization  # noqa: E402
from rffkern.ridge import choose_standardization  # noqa: E402

TIMEOUT = 120

X_DIGITS, Y_DIGITS = load_digits(return_X_y=True)
X_DIGITS, Y_DIGITS = X_DIGITS[:900], Y_DIGITS[:900]

CLASSIFIERS = {
    "ridge": lambda **kw: RFFRidgeClassifier(200, random_state=0, **kw),
    "eerf": lambda **kw: EERFClassifier(50, random_state=0, **kw),
    "adaptive": lambda **kw: AdaptiveRFFClassifier(16, n_iter=3, random_state=0, **kw),
    # (a closing fit of 200 features, not 1000: the choice comes before training, and the closing
    # softmax fit of 10 classes was 3/4 of the time)
    "rffnet": lambda **kw: RFFNetClassifier(64, max_iter=2, random_state=0, refit_components=200, **kw),
}
REGRESSORS = {
    "ridge": lambda **kw: RFFRidge(200, random_state=0, **kw),
    "eerf": lambda **kw: EERFRegressor(50, random_state=0, **kw),
    "adaptive": lambda **kw: AdaptiveRFFRegressor(16, n_iter=3, random_state=0, **kw),
    "rffnet": lambda **kw: RFFNetRegressor(64, max_iter=2, random_state=0, **kw),
}


def _fit(estimator, X, y):
    return call_with_time_limit(TIMEOUT, estimator.fit, X, y)


def _units(n=900, seed=0):
    """Two relevant inputs in units a thousand times apart, and a noise input."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 3)) * np.array([1.0, 1000.0, 30.0])
    y = np.sin(2 * X[:, 0]) + np.cos(X[:, 1] / 500.0) + 0.05 * rng.standard_normal(n)
    return X, y


@pytest.mark.parametrize("name", list(CLASSIFIERS))
def test_pixels_pool_as_on_one_machine(synchronous, name):
    make = CLASSIFIERS[name]
    single = make().fit(X_DIGITS, Y_DIGITS)
    dist = _fit(make(), da.from_array(X_DIGITS, chunks=(250, 64)), da.from_array(Y_DIGITS, chunks=250))
    assert single.standardize_ == dist.standardize_ == "global"
    assert set(dist.standardize_errors_) == {True, "global"}
    assert dist.standardize_errors_["global"] < dist.standardize_errors_[True]
    # the pooled scale: one value for every varying pixel (inf or 1 for the constant ones)
    pooled = dist.x_scale_[np.isfinite(dist.x_scale_) & (dist.x_scale_ != 1.0)]
    assert pooled.size > 40 and np.ptp(pooled) <= 1e-12 * pooled[0]


@pytest.mark.parametrize("name", list(REGRESSORS))
def test_inputs_in_different_units_keep_their_own_deviation(synchronous, name):
    X, y = _units()
    dist = _fit(REGRESSORS[name](), da.from_array(X, chunks=(200, 3)), da.from_array(y, chunks=200))
    assert dist.standardize_ is True and set(dist.standardize_errors_) == {True, "global"}
    assert dist.standardize_errors_[True] < dist.standardize_errors_["global"]


@pytest.mark.parametrize("name", ["eerf", "adaptive"])
def test_the_rest_of_the_fit_is_that_of_the_choice_given(synchronous, name):
    """The probe draws from a copy of the generator: "auto" that pools is "global"'s fit."""
    make = CLASSIFIERS[name]
    Xd, yd = da.from_array(X_DIGITS, chunks=(300, 64)), da.from_array(Y_DIGITS, chunks=300)
    auto = _fit(make(), Xd, yd)
    given = _fit(make(standardize="global"), Xd, yd)
    assert auto.standardize_ == given.standardize_ == "global" and given.standardize_errors_ is None
    np.testing.assert_array_equal(auto.coef_, given.coef_)
    np.testing.assert_array_equal(auto.predict(X_DIGITS), given.predict(X_DIGITS))


def _probe_rows(monkeypatch, probe_rows):
    """Set ``PROBE_ROWS``; the list that receives the row count of every probe."""
    import rffkern._selection as selection
    import rffkern.rffnet as rffnet
    import rffkern.ridge as ridge

    monkeypatch.setattr(ridge, "PROBE_ROWS", probe_rows)
    monkeypatch.setattr(selection, "PROBE_ROWS", probe_rows)
    seen = []
    original = ridge.choose_standardization

    def spy(X, Y, *args, **kwargs):
        seen.append(X.shape[0])
        return original(X, Y, *args, **kwargs)

    monkeypatch.setattr(ridge, "choose_standardization", spy)
    monkeypatch.setattr(rffnet, "choose_standardization", spy)
    return seen


def test_the_choice_does_not_depend_on_the_chunks_and_gathers_at_most_probe_rows(synchronous, monkeypatch):
    seen = _probe_rows(monkeypatch, 400)  # fewer rows than X: a random subset is gathered
    results = [_fit(RFFRidgeClassifier(200, random_state=3), da.from_array(X_DIGITS, chunks=(rows, 64)),
                    da.from_array(Y_DIGITS, chunks=rows)) for rows in (900, 170)]
    assert seen == [400, 400]
    assert results[0].standardize_ == results[1].standardize_
    assert results[0].standardize_errors_ == results[1].standardize_errors_


def test_no_probe_for_one_spread_or_a_given_choice(synchronous):
    X, y = _units()
    X_one = X / X.std(axis=0)  # standardized already: the two standardizations are one
    est = RFFRidge(100, random_state=0)
    moments_one = _moments(X_one, y)
    assert probe_standardization(est, _rows(X_one, y, 300), moments_one, 3, np.random.default_rng(0),
                                 choose_standardization) == (True, None)
    est.set_params(standardize=True)
    assert probe_standardization(est, _rows(X, y, 300), _moments(X, y), 3, np.random.default_rng(0),
                                 choose_standardization) is None
    # a given width: True, as on one machine (no probe)
    fitted = _fit(RFFRidge(100, length_scale=2.0, random_state=0), da.from_array(X, chunks=300),
                  da.from_array(y, chunks=300))
    assert fitted.standardize_ is True and fitted.standardize_errors_ is None


def _moments(X, y):
    from rffkern._dask import Moments

    return Moments(np.hstack([X, y[:, None]]))


def _rows(X, y, chunk):
    from rffkern._dask import DaskRows

    return DaskRows(da.from_array(X, chunks=chunk), da.from_array(y, chunks=chunk))


def test_rffnet_probes_its_training_rows_only(synchronous, monkeypatch):
    """RFFNet holds out validation rows in every chunk: the probe drops them (as in memory, where
    it sees the training rows); without early stopping it keeps every drawn row."""
    from types import SimpleNamespace

    from rffkern._dask_rffnet import _ChunkContext

    # the filter: chunk by chunk, the rows the chunk's split trains on
    even = SimpleNamespace(split=lambda i, m: (np.arange(0, m, 2), np.arange(1, m, 2)))
    rows = np.array([0, 1, 4, 5, 9, 10, 11, 17])
    kept = _ChunkContext.training_rows(even, rows, (5, 5, 8))  # chunks start at 0, 5, 10
    # local indices 0, 1, 4 | 0, 4 | 0, 1, 7: the even ones stay
    np.testing.assert_array_equal(kept, [0, 4, 5, 9, 10])

    seen = _probe_rows(monkeypatch, 400)
    Xd, yd = da.from_array(X_DIGITS, chunks=(300, 64)), da.from_array(Y_DIGITS, chunks=300)
    # (a closing fit of 200 features, not 1000: the probe comes before training)
    _fit(RFFNetClassifier(64, max_iter=1, refit_components=200, random_state=0), Xd, yd)
    _fit(RFFNetClassifier(64, max_iter=1, refit_components=200, early_stopping=False, random_state=0), Xd, yd)
    assert 300 < seen[0] < 400 and seen[1] == 400


def test_too_few_rows_left_to_probe_keep_their_own_deviation(synchronous):
    """A filter that leaves fewer than two rows: nothing to compare, True (no crash)."""
    X, y = _units(40)
    est = RFFRidge(50, random_state=0)
    got = probe_standardization(est, _rows(X, y, 20), _moments(X, y), 3, np.random.default_rng(0),
                                choose_standardization, keep=lambda rows: rows[:1])
    assert got == (True, None)
