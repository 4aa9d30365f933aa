"""The kernels on centered sparse rows (kernels.CenteredRows) equal the NumPy reference on X.

X is drawn with each column mostly at one value (its "center": 0 or any other number), so that the
stored entries are few, many or none; the kernels given ``rows=`` must compute what the reference
computes on the dense X (the same tolerances as tests/test_kernels_reference.py), return the same
bits for 1 and 2 threads, and refuse rows that do not fit X.
"""
from __future__ import annotations

import pickle

import numpy as np
import pytest
import scipy.sparse
from hypothesis import given, settings
from hypothesis import strategies as st

import reference
from rffkern import kernels
from _helpers import (
    DTYPE_IDS,
    DTYPES,
    assert_within,
    f64,
    feature_magnitude,
    float_arrays,
    loss_grad_magnitudes,
    loss_targets,
)
from test_kernels_reference import _check_train_epoch, _state

dtypes = pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)


@st.composite
def centered_problem(draw, dtype, *, max_n=300, max_d=12, max_s=50, pair=None):
    """(X, rows, W, b, theta, pair): X's columns at a per-column value except a drawn share of
    entries; rows with the automatic or a given center."""
    n = draw(st.integers(1, max_n))
    d = draw(st.integers(1, max_d))
    s = draw(st.integers(1, max_s))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    centers = np.where(rng.random(d) < 0.5, 0.0, rng.uniform(-2, 2, d))
    share = draw(st.sampled_from([0.0, 0.05, 0.3, 1.0]))
    X = np.where(rng.random((n, d)) < share, rng.uniform(-3, 3, (n, d)), centers).astype(dtype)
    W = draw(float_arrays(dtype, (d, s), -2.0, 2.0))
    b = draw(float_arrays(dtype, (s,), 0.0, 6.25)) if draw(st.booleans()) else None
    th = draw(float_arrays(dtype, (d,), -2.0, 2.0)) if draw(st.booleans()) else None
    given_center = draw(st.booleans())
    rows = kernels.CenteredRows.from_dense(X, center=centers if given_center else None)
    pr = draw(st.booleans()) if pair is None else pair
    return X, rows, W, b, th, pr


@dtypes
@given(data=st.data())
def test_rows_hold_the_entries_away_from_the_center(dtype, data):
    X, rows, *_ = data.draw(centered_problem(dtype))
    indptr, indices, values = reference.centered_rows(X, rows.center)
    assert rows.shape == X.shape
    assert rows.indptr.dtype == np.int64 and rows.indices.dtype == np.int32 and rows.values.dtype == dtype
    assert np.array_equal(rows.indptr, indptr)
    assert np.array_equal(rows.indices, indices)
    assert np.array_equal(rows.values, values)
    assert rows.density == indices.size / X.size


@dtypes
@pytest.mark.parametrize("n_threads", [1, 2], ids=["1thread", "2threads"])
@settings(max_examples=40)
@given(data=st.data())
def test_features_and_predict_on_rows(dtype, n_threads, data):
    X, rows, W, b, th, pair = data.draw(centered_problem(dtype))
    Z = kernels.features(X, W, b, theta=th, pair=pair, n_threads=n_threads, rows=rows)
    expected = reference.features(f64(X), f64(W), f64(b), theta=f64(th), pair=pair)
    assert Z.dtype == dtype
    assert_within(Z, expected, feature_magnitude(X, W, b, th, pair), dtype, "features on rows")
    coef = data.draw(float_arrays(dtype, (Z.shape[1], 2), -2.0, 2.0))
    F = kernels.predict(X, W, b, coef, theta=th, pair=pair, n_threads=n_threads, rows=rows)
    assert_within(F, expected @ f64(coef), feature_magnitude(X, W, b, th, pair) @ np.abs(f64(coef)), dtype,
                  "predict on rows")


@dtypes
@pytest.mark.parametrize("n_threads", [1, 2], ids=["1thread", "2threads"])
@settings(max_examples=40)
@given(data=st.data())
def test_gram_on_rows(dtype, n_threads, data):
    """max_n 600 spans several 256-row blocks of the Gram's rank updates."""
    X, rows, W, b, th, pair = data.draw(centered_problem(dtype, max_n=600))
    M = feature_magnitude(X, W, b, th, pair)
    Y = data.draw(float_arrays(dtype, (X.shape[0], 2), -3.0, 3.0)) if data.draw(st.booleans()) else None
    as_x = data.draw(st.booleans())  # the rows passed as X, or beside it
    res = kernels.gram(rows if as_x else X, W, b, Y, theta=th, pair=pair, n_threads=n_threads,
                       rows=None if as_x else rows)
    expected = reference.gram(f64(X), f64(W), f64(b), f64(Y), theta=f64(th), pair=pair)
    G, ZtY = res if Y is not None else (res, None)
    eG, eZtY = expected if Y is not None else (expected, None)
    assert G.dtype == dtype
    assert_within(G, eG, M.T @ M, dtype, "gram on rows")
    assert np.array_equal(G, G.T)
    if Y is not None:
        assert_within(ZtY, eZtY, M.T @ np.abs(f64(Y)), dtype, "gram ZtY on rows")


@dtypes
@pytest.mark.parametrize("n_threads", [1, 2], ids=["1thread", "2threads"])
@settings(max_examples=40)
@given(data=st.data())
def test_loss_and_grad_on_rows(dtype, n_threads, data):
    X, rows, W, b, th, pair = data.draw(centered_problem(dtype, max_n=600))
    loss = data.draw(st.sampled_from(kernels.LOSSES))
    m = data.draw(st.integers(2 if loss == "softmax" else 1, 3))
    coef = data.draw(float_arrays(dtype, (W.shape[1] * (2 if pair else 1), m), -2.0, 2.0))
    Y = loss_targets(np.random.default_rng(0), loss, X.shape[0], m, dtype)
    value, gc, gt = kernels.loss_and_grad(X, Y, W, b, coef, theta=th, loss=loss, pair=pair,
                                          n_threads=n_threads, rows=rows)
    ev, egc, egt = reference.loss_and_grad(f64(X), f64(Y), f64(W), f64(b), f64(coef), theta=f64(th),
                                           loss=loss, pair=pair)
    lm, gcm, gtm = loss_grad_magnitudes(X, Y, W, b, th, coef, loss, pair)
    assert_within(value, ev, lm, dtype, f"{loss} loss on rows")
    assert_within(gc, egc, gcm, dtype, f"{loss} grad_coef on rows")
    assert_within(gt, egt, gtm, dtype, f"{loss} grad_theta on rows")


@dtypes
@pytest.mark.parametrize("n_threads", [1, 2], ids=["1thread", "2threads"])
@settings(max_examples=40)
@given(data=st.data())
def test_train_epoch_on_rows(dtype, n_threads, data):
    X, rows, W, b, _, _ = data.draw(centered_problem(dtype, max_d=6, max_s=40, pair=False))
    n, d = X.shape
    s = W.shape[1]
    th = data.draw(float_arrays(dtype, (d,), -2.0, 2.0))
    loss = data.draw(st.sampled_from(kernels.LOSSES))
    m = data.draw(st.integers(2 if loss == "softmax" else 1, 3))
    coef = data.draw(float_arrays(dtype, (s, m), -1.0, 1.0))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    Y = loss_targets(rng, loss, n, m, dtype)
    order = rng.integers(0, n, data.draw(st.integers(1, 2 * n)))  # repeats, any order
    state = _state((s, m), d, dtype, rng, step=data.draw(st.integers(0, 50)))
    kw = dict(batch_size=data.draw(st.sampled_from([1, 7, 32, 300])), loss=loss,
              solver=data.draw(st.sampled_from(["adam", "sgd"])), learning_rate=data.draw(st.floats(1e-3, 0.05)),
              eps=data.draw(st.floats(1e-2, 1e-1)), l1_theta=data.draw(st.sampled_from([0.0, 0.05])),
              update_theta=data.draw(st.booleans()),
              theta_moment=data.draw(st.sampled_from(["coordinate", "shared"])))
    _check_train_epoch(X, Y, order, W, b, th, coef, state, dtype, n_threads, rows=rows, **kw)


@dtypes
def test_rows_give_the_same_bits_for_any_thread_count(dtype):
    rng = np.random.default_rng(1)
    n, d, s = 700, 40, 130
    X = np.where(rng.random((n, d)) < 0.1, rng.normal(size=(n, d)), 0.5).astype(dtype)
    W, b = rng.normal(size=(d, s)).astype(dtype), rng.uniform(0, 6, s).astype(dtype)
    th, Y = rng.uniform(0.5, 1.5, d).astype(dtype), rng.normal(size=(n, 2)).astype(dtype)
    coef = rng.normal(size=(s, 2)).astype(dtype) * 0.1
    rows = kernels.centered_rows(X)
    assert rows is not None and np.all(rows.center == dtype(0.5))

    def run(n_threads):
        Z = kernels.features(X, W, b, theta=th, rows=rows, n_threads=n_threads)
        F = kernels.predict(X, W, b, coef, theta=th, rows=rows, n_threads=n_threads)
        G, ZtY = kernels.gram(X, W, b, Y, theta=th, rows=rows, n_threads=n_threads)
        _, gc, gt = kernels.loss_and_grad(X, Y, W, b, coef, theta=th, rows=rows, n_threads=n_threads)
        t, c = th.copy(), coef.copy()
        kernels.train_epoch(X, Y, np.arange(n), W, b, t, c, kernels.AdamState(c.shape, d, dtype),
                            batch_size=300, l1_theta=0.01, rows=rows, n_threads=n_threads)
        return Z, F, G, ZtY, gc, gt, t, c

    for a, b_ in zip(run(1), run(2)):
        assert np.array_equal(a, b_)


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int64], ids=["f64", "f32", "int"])
def test_features_and_predict_of_a_scipy_sparse_matrix_without_densifying(dtype):
    import scipy.sparse as sp

    rng = np.random.default_rng(3)
    X = sp.random(500, 60, density=0.05, format="csc", random_state=rng, dtype=np.float64)
    X.data = np.round(X.data * 10).astype(dtype) if dtype == np.int64 else X.data.astype(dtype)
    X = X.astype(dtype)
    rows = kernels.CenteredRows.from_csr(X)
    work = np.float32 if dtype == np.float32 else np.float64
    assert rows.dtype == work and rows.shape == X.shape and np.all(rows.center == 0)
    W, b = rng.normal(size=(60, 40)).astype(work), rng.uniform(0, 6, 40).astype(work)
    dense = X.toarray().astype(work)
    tol = 1e-12 if work == np.float64 else 2e-5
    for pair in (False, True):
        Z = kernels.features(rows, W, None if pair else b, pair=pair)
        assert Z.dtype == work
        np.testing.assert_allclose(Z, kernels.features(dense, W, None if pair else b, pair=pair), rtol=0, atol=tol)
    coef = rng.normal(size=40).astype(work)
    np.testing.assert_allclose(kernels.predict(rows, W, b, coef), kernels.predict(dense, W, b, coef),
                               rtol=0, atol=40 * tol)
    with pytest.raises(TypeError, match="scipy.sparse"):
        kernels.CenteredRows.from_csr(dense)


def test_centered_rows_only_where_sparse_enough():
    assert kernels.centered_rows(np.eye(10)).density == pytest.approx(0.1)
    assert kernels.centered_rows(np.eye(10), max_density=0.05) is None
    assert kernels.centered_rows(np.arange(20.0).reshape(10, 2)) is None
    X = np.eye(4, dtype=np.float32)
    assert kernels.CenteredRows.from_dense(X).values.dtype == np.float32
    X_before = X.copy()
    kernels.CenteredRows.from_dense(X)
    assert np.array_equal(X, X_before)


def test_rows_that_do_not_fit_x_are_refused():
    rng = np.random.default_rng(0)
    X = np.where(rng.random((20, 5)) < 0.2, 1.0, 0.0)
    W, b = rng.normal(size=(5, 8)), rng.uniform(0, 6, 8)
    rows = kernels.CenteredRows.from_dense(X)
    with pytest.raises(ValueError, match="shape"):
        kernels.features(X[:10], W, b, rows=rows)
    with pytest.raises(TypeError, match="CenteredRows"):
        kernels.features(X, W, b, rows=(rows.indptr, rows.indices, rows.values, rows.center))
    bad = kernels.CenteredRows(rows.indptr, rows.indices.copy(), rows.values, rows.center, X.shape)
    bad.indices[0] = 5
    with pytest.raises(ValueError, match="outside"):
        kernels.features(X, W, b, rows=bad)
    with pytest.raises(ValueError, match="outside"):
        kernels.gram(X, W, b, rows=bad)
    with pytest.raises(ValueError, match="shape"):
        kernels.gram(X[:10], W, b, rows=rows)
    bad = kernels.CenteredRows(rows.indptr.copy(), rows.indices, rows.values, rows.center, X.shape)
    bad.indptr[1] = bad.indptr[2] + 1  # decreasing from row 1 to row 2
    with pytest.raises(ValueError, match="indptr"):
        kernels.predict(X, W, b, np.ones(8), rows=bad)
    with pytest.raises(ValueError, match="indptr"):
        kernels.CenteredRows(rows.indptr[:-1], rows.indices, rows.values, rows.center, X.shape)
    with pytest.raises(ValueError, match="NaN"):
        kernels.CenteredRows(rows.indptr, rows.indices, np.full(rows.values.shape, np.nan), rows.center, X.shape)
    with pytest.raises(TypeError, match="real"):
        kernels.CenteredRows(rows.indptr, rows.indices, rows.values.astype(str), rows.center, X.shape)
    with pytest.raises(TypeError, match="not both"):
        kernels.features(rows, W, b, rows=rows)
    with pytest.raises(TypeError):  # the gradient kernels take the dense X, the rows as rows=
        kernels.loss_and_grad(rows, np.ones(20), W, b, np.ones(8))
    with pytest.raises(ValueError, match="shape"):
        kernels.CenteredRows.from_dense(X, center=np.zeros(4))
    with pytest.raises(ValueError, match="NaN"):
        kernels.CenteredRows.from_dense(np.full((2, 2), np.nan))


def test_rows_of_another_array_are_refused():
    # rows built from X and passed with a Y of the same shape were used as they were: every kernel
    # silently computed X's result
    rng = np.random.default_rng(0)
    X, Y = (np.where(rng.random((30, 6)) < 0.2, 1.0, 0.0) for _ in range(2))
    W, b = rng.normal(size=(6, 8)), rng.uniform(0, 6, 8)
    rows = kernels.centered_rows(X)
    theta, coef = np.ones(6), np.zeros((8, 1))
    calls = [lambda Z: kernels.features(Z, W, b, rows=rows),
             lambda Z: kernels.predict(Z, W, b, np.ones(8), rows=rows),
             lambda Z: kernels.gram(Z, W, b, rows=rows),
             lambda Z: kernels.loss_and_grad(Z, np.ones(30), W, b, np.ones(8), rows=rows),
             lambda Z: kernels.train_epoch(Z, np.ones((30, 1)), np.arange(30), W, b, theta, coef,
                                           kernels.AdamState((8, 1), 6, np.float64), rows=rows)]
    for call in calls:
        with pytest.raises(ValueError, match="another array"):
            call(Y)
    assert np.array_equal(theta, np.ones(6)) and not coef.any()
    # the same values in another array, another dtype or through a pickled copy are accepted
    expected = kernels.features(X, W, b)
    np.testing.assert_allclose(kernels.features(X.copy(), W, b, rows=rows), expected, atol=1e-12)
    np.testing.assert_allclose(kernels.features(X.astype(np.float32), W, b, rows=rows), expected, atol=1e-5)
    copied = pickle.loads(pickle.dumps(rows))
    np.testing.assert_allclose(kernels.features(X, W, b, rows=copied), expected, atol=1e-12)
    with pytest.raises(ValueError, match="another array"):
        kernels.features(Y, W, b, rows=copied)
    csr_rows = kernels.CenteredRows.from_csr(scipy.sparse.csr_array(X))
    np.testing.assert_allclose(kernels.features(X, W, b, rows=csr_rows), expected, atol=1e-12)
    with pytest.raises(ValueError, match="another array"):
        kernels.features(Y, W, b, rows=csr_rows)


def test_rffnet_trains_the_same_model_on_rows(monkeypatch):
    """RFFNet on one-hot-like inputs (trained on their centered rows) against the same fit with the
    rows switched off (every kernel on the dense X): float64 training, equal to rounding."""
    from rffkern import RFFNetClassifier

    rng = np.random.default_rng(0)
    X = (rng.random((400, 30)) < 0.08).astype(np.float64)
    y = (X[:, 0] + X[:, 1] + 0.3 * rng.normal(size=400) > 0.5).astype(int)
    params = dict(n_components=64, max_iter=5, dtype="float64", random_state=0)
    on_rows = RFFNetClassifier(**params).fit(X, y)
    assert kernels.centered_rows(X) is not None  # RFFNet's standardized rows are as sparse
    monkeypatch.setattr(kernels, "CENTERED_ROWS_MAX_DENSITY", -1.0)
    assert kernels.centered_rows(X) is None
    dense = RFFNetClassifier(**params).fit(X, y)
    assert on_rows.n_iter_ == dense.n_iter_
    np.testing.assert_allclose(on_rows.relevances_, dense.relevances_, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(on_rows.decision_function(X), dense.decision_function(X), rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("name", ["RFFRidge", "EERFRegressor", "AdaptiveRFFRegressor"])
def test_closed_form_estimators_fit_the_same_model_on_rows(monkeypatch, name):
    """The ridge family's feature map and the adaptive chain pass the centered rows of one-hot-like
    inputs to ``gram`` / ``features`` / ``predict`` (counted below); the model is the one fitted
    with the rows switched off, to rounding."""
    import rffkern

    rng = np.random.default_rng(0)
    X = (rng.random((400, 30)) < 0.08).astype(np.float64)
    y = X[:, 0] + X[:, 1] * X[:, 2] + 0.1 * rng.normal(size=400)
    params = dict(n_components=40, random_state=0)
    if name == "AdaptiveRFFRegressor":
        params.update(n_components=16, n_iter=8)
    made = []
    real = kernels.centered_rows

    def counting(X_, max_density=None):
        rows = real(X_, max_density)
        made.append(rows is not None)
        return rows

    monkeypatch.setattr(kernels, "centered_rows", counting)
    on_rows = getattr(rffkern, name)(**params).fit(X, y)
    assert any(made)
    monkeypatch.setattr(kernels, "CENTERED_ROWS_MAX_DENSITY", -1.0)
    made.clear()
    dense = getattr(rffkern, name)(**params).fit(X, y)
    assert not any(made)
    np.testing.assert_allclose(on_rows.predict(X), dense.predict(X), rtol=1e-7, atol=1e-9)
