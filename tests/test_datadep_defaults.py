"""Trustworthy defaults of the data-dependent estimators (SRFF, EERF, adaptive RFF): raw X and y in
any units give the same model, SRFF's default fit is fast and accurate, verbose lines share one
format."""
import re
import time

import numpy as np
import pytest
from sklearn.base import clone

from rffkern import (AdaptiveRFFClassifier, AdaptiveRFFRegressor, EERFClassifier, EERFRegressor,
                     SRFFRegressor)

REGRESSORS = [SRFFRegressor(30, max_iter=10, random_state=0, n_jobs=1),
              EERFRegressor(30, random_state=0, n_jobs=1),
              AdaptiveRFFRegressor(30, n_iter=10, random_state=0, n_jobs=1)]
CLASSIFIERS = [EERFClassifier(30, random_state=0, n_jobs=1),
               AdaptiveRFFClassifier(30, n_iter=10, random_state=0, n_jobs=1)]


def _name(est):
    return type(est).__name__


def _data(n=300, d=5, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) * np.array([1.0, 3.0, 0.5, 10.0, 2.0])[:d] + 5.0
    y = np.sin(X[:, 0]) + 0.3 * X[:, 1] + 0.05 * rng.normal(size=n)
    return X, y


@pytest.mark.parametrize("est", REGRESSORS, ids=_name)
def test_regressor_is_equivariant_in_the_units_of_y(est):
    """normalize_y=True (the default): fit(X, y * 1e5) predicts 1e5 * fit(X, y) up to rounding."""
    X, y = _data()
    plain = clone(est).fit(X, y).predict(X)
    big = clone(est).fit(X, y * 1e5).predict(X)
    np.testing.assert_allclose(big / 1e5, plain, rtol=1e-6, atol=1e-8 * np.abs(plain).max())


@pytest.mark.parametrize("est", REGRESSORS + CLASSIFIERS, ids=_name)
def test_estimator_is_invariant_to_the_units_of_x(est):
    """standardize + data-driven widths (the defaults): X * 1000 gives the same predictions."""
    X, y = _data()
    if _name(est).endswith("Classifier"):
        y = (y > np.median(y)).astype(int)
        plain = clone(est).fit(X, y).decision_function(X)
        big = clone(est).fit(X * 1000.0, y).decision_function(X * 1000.0)
    else:
        plain = clone(est).fit(X, y).predict(X)
        big = clone(est).fit(X * 1000.0, y).predict(X * 1000.0)
    np.testing.assert_allclose(big, plain, rtol=1e-6, atol=1e-8 * np.abs(plain).max())


def _sparse_problem(n, d=20, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) * 7.0 + 3.0  # raw, unscaled inputs
    Z = (X - 3.0) / 7.0
    y = 100.0 * (np.sin(1.5 * Z[:, 2]) + 0.5 * Z[:, 5] ** 2 + np.cos(Z[:, 11] + Z[:, 2])) \
        + 10.0 * rng.normal(size=n)
    return X, y, np.array([2, 5, 11])


def test_srff_default_fit_is_fast_accurate_and_finds_the_support():
    """n = 1000, d = 20, 3 relevant inputs, raw X and y (y in the hundreds): the default fit (path
    of lambdas with warm starts and early stopping) stays well under a minute (bound 60 s on a loaded
    2-core machine; measured ~30 s there, the path walking 16 lambdas), its three largest relevances are the support, and its test
    R^2 is above 0.8 (noise floor: R^2 ~ 0.97)."""
    X, y, support = _sparse_problem(2000)
    t0 = time.perf_counter()
    m = SRFFRegressor(random_state=0).fit(X[:1000], y[:1000])
    elapsed = time.perf_counter() - t0
    assert elapsed < 60
    np.testing.assert_array_equal(np.sort(np.argsort(-m.gamma_)[:3]), support)
    assert m.score(X[1000:], y[1000:]) > 0.8
    assert np.isnan(m.validation_errors_).any() or m.validation_errors_.size == m.alphas_.size
    assert np.all(np.diff(m.alphas_) < 0)  # the path runs from large to small lambda


def test_srff_path_is_deterministic_whatever_n_jobs():
    X, y, _ = _sparse_problem(400)
    a = SRFFRegressor(40, max_iter=10, random_state=0, n_jobs=1).fit(X, y)
    b = SRFFRegressor(40, max_iter=10, random_state=0, n_jobs=2).fit(X, y)
    assert a.alpha_ == b.alpha_
    np.testing.assert_allclose(a.predict(X), b.predict(X), rtol=1e-9)


LINE = re.compile(r"^\[(\w+)\] [\w ]+ \d+/\d+: .+ \(elapsed \d+\.\d\d s\)$")


@pytest.mark.parametrize("est", [SRFFRegressor(20, max_iter=3, random_state=0, n_jobs=1, verbose=1),
                                 EERFRegressor(20, random_state=0, n_jobs=1, verbose=1),
                                 AdaptiveRFFRegressor(20, n_iter=10, random_state=0, n_jobs=1, verbose=1)],
                         ids=_name)
def test_verbose_lines_share_one_format(est, capsys):
    X, y = _data(200)
    est.fit(X, y)
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines
    for line in lines:
        match = LINE.match(line)
        assert match, line
        assert match.group(1) == _name(est)
