"""Dask arrays in and out (issue 11), on a loopback LocalCluster of 2 worker processes.

Lazy transform/predict of row-chunked Dask arrays for every estimator, the exact distributed
RFFRidge fit against the single-machine one, the refusal of column-chunked input, and a worker
killed in the middle of a fit. Every wait on the cluster has a time limit.
"""
import concurrent.futures
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")

from _time_limit import call_with_time_limit  # noqa: E402
from rffkern import (EERFClassifier, EERFRegressor, Fastfood, OrthogonalRandomFeatures,  # noqa: E402
                     RandomFourierFeatures, RFFNetClassifier, RFFNetRegressor, RFFRidge, RFFRidgeClassifier,
                     SRFFRegressor, StructuredOrthogonalFeatures)
from rffkern.adaptive import AdaptiveRFFClassifier, AdaptiveRFFRegressor  # noqa: E402

TIMEOUT = 60  # seconds, for every compute / result


def _compute(client, arr):
    return client.compute(arr).result(timeout=TIMEOUT)


def _in_thread(fn, *args):
    """Run ``fn(*args)`` (e.g. a fit, which computes on the cluster itself) with a time limit, on
    this thread (tests/_time_limit.py)."""
    return call_with_time_limit(TIMEOUT, fn, *args)


def _regression(n, d, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    y = np.sin(2 * X[:, 0]) + X[:, 1] ** 2 + 0.1 * rng.standard_normal(n)
    return X, y


def test_import_does_not_import_dask():
    code = "import rffkern, sys; print(any(m.split('.')[0] in ('dask', 'distributed') for m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=TIMEOUT)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"


X_SMALL, Y_SMALL = _regression(400, 5)
LABELS_2 = (Y_SMALL > np.median(Y_SMALL)).astype(int)
LABELS_3 = np.digitize(Y_SMALL, np.quantile(Y_SMALL, [1 / 3, 2 / 3]))
CASES = [
    (RandomFourierFeatures(64, random_state=0), None, "transform"),
    (Fastfood(64, random_state=0), None, "transform"),
    (StructuredOrthogonalFeatures(64, random_state=0), None, "transform"),
    (OrthogonalRandomFeatures(64, random_state=0), None, "transform"),
    (RFFRidge(64, random_state=0), Y_SMALL, "predict"),
    (RFFRidgeClassifier(64, random_state=0), LABELS_3, "decision_function"),
    (RFFRidgeClassifier(64, random_state=0), LABELS_2, "predict"),
    (RFFRidgeClassifier(64, random_state=0), LABELS_3, "predict_proba"),
    (RFFNetRegressor(32, max_iter=2, n_restarts=1, random_state=0), Y_SMALL, "predict"),
    (RFFNetClassifier(32, max_iter=2, n_restarts=1, random_state=0), LABELS_3, "predict_proba"),
    (RFFNetClassifier(32, max_iter=2, n_restarts=1, random_state=0), LABELS_2, "decision_function"),
    (SRFFRegressor(32, max_iter=2, random_state=0), Y_SMALL, "predict"),
    (EERFRegressor(16, random_state=0), Y_SMALL, "predict"),
    (EERFClassifier(16, solver="logistic", alpha=1.0, random_state=0), LABELS_3, "predict_proba"),
    (AdaptiveRFFRegressor(16, n_iter=3, random_state=0), Y_SMALL, "predict"),
    (AdaptiveRFFClassifier(16, n_iter=3, random_state=0), LABELS_2, "decision_function"),
    (AdaptiveRFFClassifier(16, n_iter=3, random_state=0), LABELS_3, "predict"),
]


@pytest.mark.parametrize("estimator, y, method", CASES,
                         ids=[f"{type(e).__name__}-{m}-{i}" for i, (e, _, m) in enumerate(CASES)])
def test_row_methods_are_lazy_and_equal_numpy(client, estimator, y, method):
    estimator.fit(X_SMALL, y)
    Xd = da.from_array(X_SMALL, chunks=(150, X_SMALL.shape[1]))
    expected = getattr(estimator, method)(X_SMALL)
    assert isinstance(expected, np.ndarray)  # NumPy in, NumPy out
    with distributed.get_task_stream(client) as stream:
        out = getattr(estimator, method)(Xd)
    assert isinstance(out, da.Array)
    assert stream.data == []  # nothing ran on the cluster
    assert out.shape == expected.shape and out.dtype == expected.dtype
    assert out.chunks[0] == Xd.chunks[0]
    got = _compute(client, out)
    if expected.dtype.kind == "f":
        np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)
    else:
        np.testing.assert_array_equal(got, expected)


def test_column_chunked_input_is_refused(client):
    Xd = da.from_array(X_SMALL, chunks=(200, 2))
    rff = RandomFourierFeatures(16, random_state=0).fit(X_SMALL)
    with pytest.raises(ValueError, match="rechunk to 5 columns"):
        rff.transform(Xd)
    with pytest.raises(ValueError, match="rechunk to 5 columns"):
        RFFRidge(16, random_state=0).fit(Xd, Y_SMALL)


def test_unfitted_or_wrong_width_fails_at_once(client):
    Xd = da.from_array(X_SMALL, chunks=(200, 5))
    with pytest.raises(Exception, match="not fitted"):
        RFFRidge(16).predict(Xd)
    model = RFFRidge(16, alpha=1.0, length_scale=1.0, random_state=0).fit(X_SMALL, Y_SMALL)
    with pytest.raises(ValueError, match="features"):
        model.predict(da.from_array(X_SMALL[:, :4], chunks=(200, 4)))


def _relative(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return float(np.max(np.abs(a - b)) / max(np.max(np.abs(b)), np.finfo(float).tiny))


def test_distributed_ridge_fit_equals_single_machine(client):
    X, y = _regression(20000, 10)
    Y = np.c_[y, X[:, 2] * 1e5]                        # two targets of very different scales
    Xd = da.from_array(X, chunks=(2300, 10))           # uneven last chunk
    params = dict(length_scale=3.0, alpha=1e-3, alpha_selection="gcv", random_state=0)
    single = RFFRidge(300, **params).fit(X, Y)
    dist = _in_thread(RFFRidge(300, **params).fit, Xd, da.from_array(Y, chunks=(5000, 2)))
    for name in ("coef_", "intercept_", "x_mean_", "x_scale_"):
        assert _relative(getattr(dist, name), getattr(single, name)) <= 1e-10, name
    assert dist.n_samples_seen_ == 20000 and dist.n_features_in_ == 10
    assert _relative(_compute(client, dist.predict(Xd)), single.predict(X)) <= 1e-10


def test_distributed_ridge_gives_an_input_constant_on_every_row_importance_zero(client):
    X, y = _regression(4000, 6)
    X[:, 4] = 2.5  # constant over every chunk
    params = dict(length_scale=3.0, alpha=1e-3, alpha_selection="gcv", random_state=0)
    dist = _in_thread(RFFRidge(200, **params).fit, da.from_array(X, chunks=(900, 6)), da.from_array(y, chunks=900))
    single = RFFRidge(200, **params).fit(X, y)
    assert dist.feature_importances_[4] == 0 and single.feature_importances_[4] == 0
    assert np.count_nonzero(dist.feature_importances_) == 5
    # and, as on one machine, it standardizes to 0 on every row: another value moves nothing
    assert np.isinf(dist.x_scale_[4]) and np.isinf(single.x_scale_[4]) and dist.x_mean_[4] == 2.5
    moved = X.copy()
    moved[:, 4] = -7.0
    np.testing.assert_array_equal(dist.predict(moved), dist.predict(X))
    assert _relative(dist.predict(X), single.predict(X)) <= 1e-10


def test_distributed_global_standardization_equals_single_machine(client):
    """standardize="global" (one pooled deviation) from the chunk moments; "auto" is each input by
    its own deviation with a given width (with a searched one, the probe ridge decides)."""
    X, y = _regression(5000, 6, seed=4)
    X[:, 1] *= 40.0
    Xd = da.from_array(X, chunks=(1100, 6))
    params = dict(length_scale=3.0, alpha=1e-3, alpha_selection="gcv", random_state=0, standardize="global")
    single = RFFRidge(200, **params).fit(X, y)
    dist = _in_thread(RFFRidge(200, **params).fit, Xd, y)
    assert dist.standardize_ == single.standardize_ == "global"
    assert np.ptp(single.x_scale_) == 0
    for name in ("x_mean_", "x_scale_"):
        assert _relative(getattr(dist, name), getattr(single, name)) <= 1e-12, name
    # (alpha=1e-3 on a 40x wider input: the coefficients are large, and the intercept's sum
    # cancels to 1e-9 of their round-off)
    assert _relative(dist.coef_, single.coef_) <= 1e-9
    assert _relative(_compute(client, dist.predict(Xd)), single.predict(X)) <= 1e-8
    # (the importances come from a sample of the rows on Dask: close, in the same units)
    np.testing.assert_allclose(dist.feature_importances_, single.feature_importances_, atol=0.01)
    # "auto" with a given width: True, as on one machine (the width is in units of each input's
    # own deviation); with a searched width the probe ridge's choice (tests/test_dask_standardize_auto.py)
    auto = _in_thread(RFFRidge(200, length_scale=3.0, random_state=0).fit, Xd, y)
    assert auto.standardize_ is True and auto.standardize_errors_ is None


def test_distributed_selection_equals_single_machine(client):
    """A fixed width, the alpha list by LOO (a second distributed pass) and by GCV (from the Gram)."""
    X, y = _regression(6000, 6, seed=1)
    Xd = da.from_array(X, chunks=(1000, 6))
    for selection in ("loo", "gcv"):
        single = RFFRidge(200, length_scale=3.0, alpha_selection=selection, random_state=0).fit(X, y)
        dist = _in_thread(RFFRidge(200, length_scale=3.0, alpha_selection=selection, random_state=0).fit, Xd, y)
        assert dist.alpha_ == single.alpha_
        assert _relative(dist.selection_errors_, single.selection_errors_) <= 1e-10


def test_distributed_classifier_fit_equals_single_machine(client):
    X, y = _regression(8000, 6, seed=2)
    labels = np.array(["low", "mid", "high"])[np.digitize(y, np.quantile(y, [1 / 3, 2 / 3]))]
    Xd = da.from_array(X, chunks=(1500, 6))
    params = dict(length_scale=2.0, alpha=1e-2, random_state=0)
    single = RFFRidgeClassifier(200, **params).fit(X, labels)
    dist = _in_thread(RFFRidgeClassifier(200, **params).fit, Xd, da.from_array(labels, chunks=1500))
    np.testing.assert_array_equal(dist.classes_, single.classes_)
    assert _relative(dist.coef_, single.coef_) <= 1e-10
    assert _relative(dist.intercept_, single.intercept_) <= 1e-10
    np.testing.assert_array_equal(_compute(client, dist.predict(Xd)), single.predict(X))
    # predict_proba's temperature from the gathered sample's leave-one-out decisions (the single
    # machine's from 2000 random rows: other rows, a close temperature)
    assert dist.temperature_ == pytest.approx(single.temperature_, rel=0.15)
    np.testing.assert_allclose(_compute(client, dist.predict_proba(Xd)).sum(axis=1), 1.0, rtol=1e-12)


def test_default_fit_on_dask_is_close_to_single_machine(client):
    """length_scale="auto" and the alpha list by LOO: the median heuristic's sample differs, so the
    two models differ a little; their predictions must agree closely."""
    X, y = _regression(6000, 5, seed=3)
    single = RFFRidge(200, random_state=0).fit(X, y)
    dist = _in_thread(RFFRidge(200, random_state=0).fit, da.from_array(X, chunks=(1000, 5)), y)
    assert len(dist.width_errors_) == 3
    assert 0.8 < dist.length_scale_ / single.length_scale_ < 1.25
    resid = np.std(single.predict(X) - y)
    assert np.std(dist.predict(X) - single.predict(X)) < 0.2 * resid


def test_width_rule_standard_errors_from_chunk_sums_equal_those_of_the_rows():
    """The distributed fit's one-standard-error width rule works from per-chunk sums of products of
    the rows' squared LOO residuals; the standard errors equal those of the rows on one machine."""
    from rffkern._dask import Block
    from rffkern._dask_ridge import chunk_loo, paired_standard_errors
    from rffkern._ridge_solvers import GramStats, LooPass, fit_ridge_map
    from rffkern._selection import DEFAULT_ALPHAS, paired_standard_error

    X, y = _regression(700, 4, seed=5)
    est = RFFRidge(80, random_state=0)
    unit = est._draw_map(4, np.random.default_rng(0))
    est._use_scaling(True, est._scalings(X))
    est._target_scaler = est._make_target_scaler().fit(y[:, None])
    Xs, Ys = est._standardized(X), est._target_scaler.transform(y[:, None])
    widths = [0.8, 1.6, 3.2]
    stats = [GramStats(est._map(unit / w).n_out, 1, Xs.dtype).add(est._map(unit / w), Xs, Ys) for w in widths]
    passes = [LooPass(s, DEFAULT_ALPHAS, True) for s in stats]
    parts = [chunk_loo((est, [unit / w for w in widths], passes, True), Block(X[i:i + 200], y[i:i + 200], None, None, i // 200))
             for i in range(0, 700, 200)]
    sums = {k: sum(p[k] for p in parts) for k in parts[0]}
    alpha_index = [int(np.argmin(r)) for r in sums["sse"].reshape(len(widths), -1)]
    chunked = paired_standard_errors(sums, stats, alpha_index, 1)
    fits = [fit_ridge_map(est._map(unit / w), Xs, Ys, DEFAULT_ALPHAS, return_row_losses=True) for w in widths]
    best = int(np.argmin([f[3].min() for f in fits]))
    rows = [paired_standard_error(f[5][0], fits[best][5][0]) for f in fits]
    assert [DEFAULT_ALPHAS.index(f[2]) for f in fits] == alpha_index
    assert chunked[best] == 0.0 and min(rows[:best] + rows[best + 1:]) > 0
    np.testing.assert_allclose(chunked, rows, rtol=1e-8, atol=1e-15)


@pytest.mark.filterwarnings("ignore:Sending large graph")  # three 1000 x 1000 LOO passes
def test_auto_width_on_dask_follows_the_one_se_rule_like_one_machine(client):
    """Below SAMPLE_ROWS rows both fits see the same median distance, so they compare the same
    widths: on breast_cancer's split of seed 1 the least LOO error is at 0.5x, within one standard
    error of 1x, and both keep 1x."""
    from sklearn.datasets import load_breast_cancer
    from sklearn.model_selection import train_test_split

    X, y = load_breast_cancer(return_X_y=True)
    X, _, y, _ = train_test_split(X, y, test_size=0.2, random_state=1, stratify=y)
    single = RFFRidgeClassifier(random_state=1).fit(X, y)
    dist = _in_thread(RFFRidgeClassifier(random_state=1).fit, da.from_array(X, chunks=(100, 30)),
                      da.from_array(y, chunks=100))
    assert int(np.argmin(dist.width_errors_)) == 0
    np.testing.assert_allclose(dist.width_errors_, single.width_errors_, rtol=1e-8)
    assert dist.length_scale_ == pytest.approx(single.length_scale_, rel=1e-12)


@pytest.mark.filterwarnings("ignore:Sending large graph")  # the NumPy data, persisted once
def test_fit_survives_a_killed_worker(client):
    """A worker process SIGKILLed while the Gram pass runs: Dask recomputes its chunks, and the model
    is bit for bit the undisturbed distributed fit (the reduction tree has a fixed shape)."""
    X, y = _regression(120000, 20, seed=4)
    Xd = client.persist(da.from_array(X, chunks=(5000, 20)))  # the chunks live on the workers
    distributed.wait(Xd, timeout=TIMEOUT)
    params = dict(length_scale=4.0, alpha=1e-3, alpha_selection="gcv", random_state=0)
    pids = client.run(os.getpid, nanny=False)
    pool = concurrent.futures.ThreadPoolExecutor(1)
    try:
        # (on a worker thread like the disturbed fit, which must run beside this thread's watch:
        # the same BLAS threading on the client, tests/_time_limit.py)
        undisturbed = pool.submit(RFFRidge(400, **params).fit, Xd, y).result(timeout=TIMEOUT)
        future = pool.submit(RFFRidge(400, **params).fit, Xd, y)
        victim, deadline = None, time.monotonic() + TIMEOUT
        while victim is None and time.monotonic() < deadline and not future.done():
            for worker, keys in client.processing().items():
                if any(str(k).startswith("chunk_grams") for k in keys):
                    victim = worker
            time.sleep(0.02)
        assert victim is not None, "the Gram pass was never seen running"
        os.kill(pids[victim], signal.SIGKILL)
        assert not future.done()
        disturbed = future.result(timeout=TIMEOUT)
    finally:
        pool.shutdown(wait=False)
        # the cluster is the session's: the nanny's restart is waited for here, pass or fail, so
        # that later tests find both workers
        client.wait_for_workers(2, timeout=TIMEOUT)
    np.testing.assert_array_equal(disturbed.coef_, undisturbed.coef_)
    np.testing.assert_array_equal(disturbed.intercept_, undisturbed.intercept_)
