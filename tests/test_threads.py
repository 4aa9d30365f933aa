"""Threads: the GIL is released during the kernels, concurrent calls agree with serial ones, and
every kernel gives the same bits whatever n_threads (the core's promise)."""
from __future__ import annotations

import os
import statistics
import sys
import threading
import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rffkern import RandomFourierFeatures, kernels
from _helpers import DTYPES, available_isas, isa, loss_targets, map_problem


def _big_problem(dtype=np.float64, n=20000, d=64, s=400, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)).astype(dtype)
    W = rng.normal(size=(d, s)).astype(dtype)
    b = rng.uniform(0, 2 * np.pi, s).astype(dtype)
    return X, W, b


def _run_concurrently(fns):
    """Start one Python thread per callable at the same time; return (wall time, results)."""
    results = [None] * len(fns)
    barrier = threading.Barrier(len(fns) + 1)

    def worker(i):
        barrier.wait()
        results[i] = fns[i]()

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(len(fns))]
    for t in threads:
        t.start()
    barrier.wait()
    t0 = time.perf_counter()
    for t in threads:
        t.join()
    return time.perf_counter() - t0, results


def _ticks_during(fn):
    """(ticks, seconds): how often a pure-Python thread advanced while ``fn`` ran in this thread."""
    stop, inside = threading.Event(), threading.Event()
    ticks = [0]

    def ticker():
        while not stop.is_set():
            if inside.is_set():
                ticks[0] += 1

    t = threading.Thread(target=ticker)
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-4)  # hand the GIL over quickly, so only a held GIL can starve the ticker
    t.start()
    try:
        time.sleep(0.01)
        inside.set()
        t0 = time.perf_counter()
        fn()
        dt = time.perf_counter() - t0
        inside.clear()
    finally:
        sys.setswitchinterval(old)
        stop.set()
        t.join()
    return ticks[0], dt


def test_gil_is_released_during_features():
    """A pure-Python thread keeps running while another thread is inside kernels.features.

    Self-calibrated, so robust to machine load: the ticker's rate during features is compared
    with its rate during a C call that holds the GIL (builtin sum over a range) measured in the
    same test; released, the rate is ~100x higher (measured), the bound asks for 10x."""
    X, W, b = _big_problem(n=15000)
    rates = []
    for _ in range(3):
        released = _ticks_during(lambda: kernels.features(X, W, b, n_threads=1))
        held = _ticks_during(lambda: sum(range(3_000_000)))
        rates.append((released[0] / released[1], held[0] / held[1]))
        if rates[-1][0] > 10 * rates[-1][1]:
            break
    assert any(r > 10 * h for r, h in rates), \
        f"ticker rate (per s) during features vs during a GIL-holding call: {rates}"


def test_two_python_threads_run_features_concurrently():
    """Two concurrent single-threaded calls take clearly less than twice one call, and agree
    bitwise with the serial result.

    Wall time of the two concurrent calls < 1.6 x one call (2x = serialised), the one-call
    baseline (median of 3) measured in the same attempt, up to 3 attempts.  Outputs go to
    preallocated out= buffers so that page faults (serialised per process by the OS) do not blur
    the measure.  When every attempt fails *and* other work holds a core (load average >= usable
    cores + 1, this process counting for one: no core is free to run the second thread; with one
    other test suite running on 2 cores the ratios were 1.8-2.0) the timing part is skipped, not
    failed;
    test_gil_is_released_during_features holds the GIL contract whatever the load.
    """
    cores = len(os.sched_getaffinity(0))
    if cores < 2:
        pytest.skip("needs 2 cores")
    X, W, b = _big_problem(n=8000)
    serial = kernels.features(X, W, b, n_threads=1)
    outs = [np.zeros_like(serial) for _ in range(2)]
    call = [lambda i=i: kernels.features(X, W, b, n_threads=1, out=outs[i]) for i in range(2)]
    ratios = []
    for _ in range(3):
        one = statistics.median(_run_concurrently([call[0]])[0] for _ in range(3))
        both, res = _run_concurrently(call)
        for r in res:
            assert np.array_equal(r, serial), "a concurrent call differs from the serial result"
        ratios.append(both / one)
        if ratios[-1] < 1.6:
            break
    if min(ratios) >= 1.6 and os.getloadavg()[0] >= cores + 1:
        pytest.skip(f"machine saturated (load {os.getloadavg()[0]:.1f} on {cores} cores): "
                    f"concurrent/one ratios {ratios} not meaningful")
    assert min(ratios) < 1.6, f"two concurrent calls took {ratios} x one call (serialised?)"


@pytest.mark.parametrize("dtype", DTYPES, ids=["f64", "f32"])
def test_concurrent_calls_of_every_kernel_agree_with_serial(dtype):
    """Four Python threads, each running a different kernel with 2 OpenMP threads, at once."""
    X, W, b = _big_problem(dtype, n=3000, d=10, s=70, seed=1)
    rng = np.random.default_rng(2)
    coef = rng.normal(size=(70, 3)).astype(dtype)
    Y = rng.normal(size=(3000, 3)).astype(dtype)
    calls = [
        lambda: kernels.features(X, W, b, pair=True, n_threads=2),
        lambda: kernels.predict(X, W, b, coef, n_threads=2),
        lambda: kernels.gram(X, W, b, Y, n_threads=2),
        lambda: kernels.loss_and_grad(X, Y, W, b, coef, n_threads=2),
    ]
    serial = [c() for c in calls]
    for _ in range(2):
        _, res = _run_concurrently(calls * 2)
        for got, want in zip(res, serial * 2):
            got = got if isinstance(got, tuple) else (got,)
            want = want if isinstance(want, tuple) else (want,)
            for g, w in zip(got, want):
                assert np.array_equal(np.asarray(g), np.asarray(w))


# ---- same bits whatever the thread count ---------------------------------------------------------
def _all_kernels(X, Y, W, b, th, pair, coef, loss, n_threads):
    Z = kernels.features(X, W, b, theta=th, pair=pair, n_threads=n_threads)
    labels = (np.arange(X.shape[0]) % 2).astype(np.float64)
    return [
        Z,
        kernels.predict(X, W, b, coef, theta=th, pair=pair, n_threads=n_threads),
        *kernels.gram(X, W, b, Y, theta=th, pair=pair, n_threads=n_threads),
        *kernels.loss_and_grad(X, Y, W, b, coef, theta=th, loss=loss, pair=pair, n_threads=n_threads),
        *kernels.logistic_loss_grad(Z, labels, coef[:, 0], np.linspace(0.5, 1.5, X.shape[0]), n_threads=n_threads),
        *kernels.softmax_loss_grad(Z, np.eye(3)[np.arange(X.shape[0]) % 3], coef[:, :1] * [1, -1, 2],
                                   np.linspace(0.5, 1.5, X.shape[0]), n_threads=n_threads),
    ]


def _assert_bitwise(a, b, what):
    for i, (x, y) in enumerate(zip(a, b)):
        assert np.array_equal(np.asarray(x), np.asarray(y)), f"{what}: output {i} differs"


@settings(max_examples=25)
@given(data=st.data())
def test_every_kernel_is_bitwise_identical_for_1_2_and_3_threads(data):
    dtype = data.draw(st.sampled_from(DTYPES))
    X, W, b, th, pair = data.draw(map_problem(dtype, max_n=900))
    loss = data.draw(st.sampled_from(kernels.LOSSES))
    m = data.draw(st.integers(2, 3))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    coef = rng.normal(size=(W.shape[1] * (2 if pair else 1), m)).astype(dtype)
    Y = loss_targets(rng, loss, X.shape[0], m, dtype)
    one = _all_kernels(X, Y, W, b, th, pair, coef, loss, 1)
    for t in (2, 3):
        _assert_bitwise(one, _all_kernels(X, Y, W, b, th, pair, coef, loss, t), f"n_threads=1 vs {t}")


@pytest.mark.parametrize("isa_name", available_isas())
@pytest.mark.parametrize("dtype", DTYPES, ids=["f64", "f32"])
def test_bitwise_identical_across_threads_large(isa_name, dtype):
    """Sizes where the work is really split: several row blocks and column panels."""
    X, W, b = _big_problem(dtype, n=2100, d=9, s=131, seed=4)
    rng = np.random.default_rng(5)
    th = rng.uniform(0.5, 1.5, 9).astype(dtype)
    for pair in (False, True):
        coef = rng.normal(size=(131 * (2 if pair else 1), 3)).astype(dtype)
        for loss in kernels.LOSSES:
            Y = loss_targets(rng, loss, 2100, 3, dtype)
            with isa(isa_name):
                one = _all_kernels(X, Y, W, b, th, pair, coef, loss, 1)
                two = _all_kernels(X, Y, W, b, th, pair, coef, loss, 2)
            _assert_bitwise(one, two, f"{isa_name} pair={pair} {loss}")


@pytest.mark.parametrize("solver", ["adam", "sgd"])
def test_train_epoch_is_bitwise_identical_for_1_and_2_threads(solver):
    rng = np.random.default_rng(6)
    n, d, s, m = 1500, 6, 50, 2
    X, W = rng.normal(size=(n, d)), rng.normal(size=(d, s))
    b = rng.uniform(0, 2 * np.pi, s)
    Y = loss_targets(rng, "softmax", n, m, np.float64)
    order = rng.permutation(n)
    out = []
    for t in (1, 2):
        theta, coef = np.ones(d), np.zeros((s, m))
        state = kernels.AdamState((s, m), d, np.float64)
        loss = kernels.train_epoch(X, Y, order, W, b, theta, coef, state, batch_size=300, loss="softmax",
                                   solver=solver, learning_rate=0.01, l2_coef=1e-3, l1_theta=1e-3,
                                   n_threads=t)
        out.append([loss, theta, coef, state.m_coef, state.v_coef, state.m_theta, state.v_theta])
    _assert_bitwise(out[0], out[1], f"train_epoch {solver}")


# ---- the estimator: same random_state -> same model whatever n_jobs -------------------------------
@pytest.mark.parametrize("kernel", ["gaussian", "laplace", "cauchy", "matern"])
@pytest.mark.parametrize("pair", [False, True], ids=["phase", "pair"])
@pytest.mark.parametrize("dtype", DTYPES, ids=["f64", "f32"])
def test_rff_same_random_state_same_bits_for_any_n_jobs(kernel, pair, dtype):
    X = np.random.default_rng(0).normal(size=(1200, 7)).astype(dtype)
    fits = [RandomFourierFeatures(150, kernel=kernel, pair=pair, random_state=42, n_jobs=j).fit(X)
            for j in (1, 2, None, -1)]
    Zs = [f.transform(X) for f in fits]
    for f, Z in zip(fits[1:], Zs[1:]):
        assert np.array_equal(f.weights_, fits[0].weights_)
        assert np.array_equal(f.offsets_, fits[0].offsets_)
        assert np.array_equal(Z, Zs[0])
    # a different seed gives a different map (so the check above is not vacuous)
    other = RandomFourierFeatures(150, kernel=kernel, pair=pair, random_state=43, n_jobs=1).fit(X)
    assert not np.array_equal(other.weights_, fits[0].weights_)


def test_rff_generator_random_state_is_reproducible():
    X = np.random.default_rng(0).normal(size=(50, 3))
    a = RandomFourierFeatures(20, random_state=np.random.default_rng(7), n_jobs=1).fit_transform(X)
    b = RandomFourierFeatures(20, random_state=np.random.default_rng(7), n_jobs=2).fit_transform(X)
    assert np.array_equal(a, b)


@pytest.mark.parametrize("n_classes", [2, 3])
def test_classifier_closing_fit_is_the_same_for_any_blas_thread_count(n_classes):
    """The closing logistic / softmax fit runs its BLAS calls on one thread (they alternate with
    the compiled loss's OpenMP region every L-BFGS evaluation: a multi-threaded OpenBLAS made
    rffkern.fit on digits 2x slower on 2 cores, and its split reductions changed the solution with
    the thread count: 2.5e-5 on this problem's softmax coefficients)."""
    from threadpoolctl import threadpool_limits

    from rffkern import RFFNetClassifier
    from rffkern.datasets import make_jse3

    X, y, _ = make_jse3(1500, random_state=3)
    labels = np.digitize(y, [-0.5, 0.5]) if n_classes == 3 else (y > 0).astype(int)
    coefs = []
    for blas_threads in (1, 2):
        with threadpool_limits(limits=blas_threads, user_api="blas"):
            model = RFFNetClassifier(n_components=60, max_iter=5, random_state=0, n_jobs=2).fit(X, labels)
        coefs.append(model.coef_)
    np.testing.assert_array_equal(coefs[0], coefs[1])



def test_one_blas_thread_contexts_of_concurrent_threads_restore_the_callers_setting(monkeypatch):
    """The BLAS limit is process-wide: two threads' contexts entered and left interleaved (A in, B
    in, A out, B out) set it once, at A's entry, and restore it once, at B's exit (each limiting
    and restoring by itself, B's exit restored the limit A had set: one thread for good). The
    limiter is recorded here (OpenBLAS 0.3.31 ignores a limit set from a thread other than the main
    one once the main one has set any); the main thread's real setting is checked after."""
    import threading

    from threadpoolctl import threadpool_info, threadpool_limits

    from rffkern import _linalg

    events = []

    class Limiter:
        def restore_original_limits(self):
            events.append("restore")

    class Controller:
        def limit(self, limits, user_api):
            events.append(f"limit {user_api} to {limits}")
            return Limiter()

    monkeypatch.setattr(_linalg, "_controller", lambda: Controller())
    a_in, b_in, a_out = threading.Event(), threading.Event(), threading.Event()

    def a():
        with _linalg.one_blas_thread():
            events.append("A in")
            a_in.set()
            b_in.wait(10)
        events.append("A out")
        a_out.set()

    def b():
        a_in.wait(10)
        with _linalg.one_blas_thread():
            events.append("B in")
            b_in.set()
            a_out.wait(10)
        events.append("B out")

    threads = [threading.Thread(target=a), threading.Thread(target=b)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(20)
    assert events == ["limit blas to 1", "A in", "B in", "A out", "restore", "B out"]
    monkeypatch.undo()

    def blas_threads():
        return sorted({lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"})

    with threadpool_limits(limits=2, user_api="blas"):
        before = blas_threads()
        with _linalg.one_blas_thread():
            with _linalg.one_blas_thread():
                assert blas_threads() == [1]
            assert blas_threads() == [1]
        assert blas_threads() == before
