"""The compiled layer's own contract, called directly: thread clamping, the thread-count
reports, and the adapter's refusals (wrong dtype, non-contiguous, overlapping outputs)."""
import os
import subprocess
import sys

import numpy as np
import pytest

from _helpers import core_has_openmp
from rffkern import _core, kernels

HUGE_THREAD_COUNTS = [50000, 100000]


def _problem(dtype=np.float64, n=300, d=7, s=40, m=2, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d)).astype(dtype)
    W = rng.standard_normal((d, s)).astype(dtype)
    b = rng.uniform(0, 2 * np.pi, s).astype(dtype)
    th = rng.uniform(0.5, 1.5, d).astype(dtype)
    Y = rng.standard_normal((n, m)).astype(dtype)
    C = (0.1 * rng.standard_normal((s, m))).astype(dtype)
    return X, W, b, th, Y, C


def _core_results(n_threads, dtype=np.float64):
    """Every cosine kernel through _core directly (the argument lists kernels.py uses)."""
    X, W, b, th, Y, C = _problem(dtype)
    n, s, m = X.shape[0], W.shape[1], Y.shape[1]
    sc = dtype(np.sqrt(2 / s))
    Z = np.empty((n, s), dtype)
    _core.features(X, W, b, th, sc, False, Z, n_threads)
    F = np.empty((n, m), dtype)
    _core.predict(X, W, b, th, sc, False, C, F, n_threads)
    G, ZtY = np.empty((s, s), dtype), np.empty((s, m), dtype)
    _core.gram(X, W, b, th, sc, False, Y, G, ZtY, False, n_threads)
    gc, gt = np.empty((s, m), dtype), np.empty(X.shape[1], dtype)
    loss = _core.loss_and_grad(X, Y, W, b, th, sc, False, C, "squared", gc, gt, n_threads)
    theta, coef = th.copy(), C.copy()
    mc, vc, mt, vt = np.zeros_like(coef), np.zeros_like(coef), np.zeros_like(theta), np.zeros_like(theta)
    order = np.random.default_rng(1).permutation(n).astype(np.int64)
    mean_loss, step = _core.train_epoch(X, Y, order, 32, W, b, theta, sc, coef, "squared", True, 1e-2,
                                        0.9, 0.999, 1e-8, 1e-4, 1e-3, True, True, mc, vc, mt, vt, 0,
                                        n_threads)
    F2 = np.empty((n, 2 * 16), dtype)
    p = 16
    rng = np.random.default_rng(2)
    diag = rng.choice([-1.0, 1.0], size=(2, 3, p)).astype(dtype)
    _core.sorf_features(X, diag, None, None, 16, dtype(0.1), dtype(0.3), True, F2, n_threads)
    H = rng.standard_normal((5, 64)).astype(dtype)
    _core.fwht_inplace(H, True, n_threads)
    prm, grd = C.copy(), np.ones_like(C)
    am, av = np.zeros_like(C), np.zeros_like(C)
    _core.adam_prox_step(prm, grd, am, av, 1, 1e-2, 0.9, 0.999, 1e-8, 0.0, 0.0, n_threads)
    labels, rw, lg = (np.arange(n) % 2).astype(np.float64), np.linspace(0.5, 1.5, n), np.empty(s)
    lloss = _core.logistic_loss_grad(Z, np.ascontiguousarray(C[:, 0]), labels, rw, lg, n_threads)
    onehot, sg = np.eye(3)[np.arange(n) % 3], np.empty((3, s))
    sloss = _core.softmax_loss_grad(Z, np.ascontiguousarray((C[:, :1].T * [[1], [-1], [2]]).astype(dtype)),
                                    onehot, rw, sg, n_threads)
    return [Z, F, G, ZtY, gc, gt, np.array(loss), theta, coef, mc, vc, mt, vt, np.array(mean_loss),
            np.array(step), F2, H, prm, am, av, np.array(lloss), lg, np.array(sloss), sg]


@pytest.mark.parametrize("n_threads", HUGE_THREAD_COUNTS)
@pytest.mark.parametrize("dtype", [np.float64, np.float32], ids=["f64", "f32"])
def test_huge_thread_counts_via_core_are_clamped_and_bitwise_equal(n_threads, dtype):
    one = _core_results(1, dtype)
    many = _core_results(n_threads, dtype)
    for a, b in zip(one, many):
        assert a.tobytes() == b.tobytes()


@pytest.mark.parametrize("n_threads", HUGE_THREAD_COUNTS)
def test_huge_thread_counts_via_kernels_are_clamped_and_bitwise_equal(n_threads):
    X, W, b, th, Y, C = _problem()
    for fn in (lambda t: kernels.features(X, W, b, theta=th, n_threads=t),
               lambda t: kernels.predict(X, W, b, C, theta=th, n_threads=t),
               lambda t: kernels.gram(X, W, b, Y, theta=th, n_threads=t)[0],
               lambda t: kernels.loss_and_grad(X, Y, W, b, C, theta=th, n_threads=t)[1]):
        assert fn(1).tobytes() == fn(n_threads).tobytes()


def test_num_procs_and_max_threads_report_the_machine():
    assert _core.num_procs() >= 1
    assert _core.max_threads() >= 1
    if hasattr(os, "sched_getaffinity"):
        assert _core.num_procs() == len(os.sched_getaffinity(0))


def test_max_threads_follows_omp_num_threads():
    if not core_has_openmp():
        assert _core.max_threads() == 1
        pytest.skip("core built without OpenMP")
    code = "from rffkern import _core; print(_core.max_threads(), _core.num_procs())"
    for value in ("3", "2"):
        env = dict(os.environ, OMP_NUM_THREADS=value)
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                             check=True).stdout.split()
        assert out[0] == value  # more than num_procs is reported as set; the kernels clamp it
        assert int(out[1]) == _core.num_procs()


def test_max_threads_follows_threadpoolctl():
    threadpoolctl = pytest.importorskip("threadpoolctl")
    if not core_has_openmp():
        pytest.skip("core built without OpenMP")
    before = _core.max_threads()
    with threadpoolctl.threadpool_limits(1, user_api="openmp"):
        assert _core.max_threads() == 1
    assert _core.max_threads() == before


# ---- the adapter's refusals ----------------------------------------------------------------------
def _features_args(dtype=np.float64):
    X, W, b, th, _, _ = _problem(dtype)
    out = np.zeros((X.shape[0], W.shape[1]), dtype)
    return [X, W, b, th, dtype(0.2), False, out, 1]


@pytest.mark.parametrize("index,name", [(1, "weights"), (2, "offsets"), (3, "theta"), (6, "out")])
def test_dtype_mismatch_is_a_type_error_naming_the_argument(index, name):
    args = _features_args()
    args[index] = args[index].astype(np.float32)
    with pytest.raises(TypeError, match=rf"{name} must have dtype float64, got float32"):
        _core.features(*args)


def test_unsupported_leading_dtype_and_non_arrays_are_type_errors():
    args = _features_args()
    args[0] = args[0].astype(np.int64)
    with pytest.raises(TypeError, match="X must have dtype float32 or float64, got int64"):
        _core.features(*args)
    args = _features_args()
    args[1] = args[1].tolist()
    with pytest.raises(TypeError, match="weights must be a numpy.ndarray of dtype float64"):
        _core.features(*args)


def test_non_contiguous_arrays_are_refused_not_copied():
    args = _features_args()
    X = args[0]
    args[0] = np.asfortranarray(X)
    with pytest.raises(TypeError, match="X must be a C-contiguous float64 array"):
        _core.features(*args)
    args = _features_args()
    big = np.empty((args[6].shape[0], 2 * args[6].shape[1]))
    args[6] = big[:, ::2]
    with pytest.raises(TypeError, match="out must be a C-contiguous"):
        _core.features(*args)


def test_other_bindings_name_their_arguments():
    X, W, b, th, Y, C = _problem()
    with pytest.raises(TypeError, match="grad must have dtype float64"):
        _core.adam_prox_step(C.copy(), np.ones_like(C, dtype=np.float32), np.zeros_like(C),
                             np.zeros_like(C), 1, 1e-3, 0.9, 0.999, 1e-8, 0.0, 0.0, 1)
    with pytest.raises(TypeError, match="permutation must have dtype int64"):
        _core.fastfood_features(X, np.ones((1, 8)), np.zeros((1, 8), np.int32), np.ones((1, 8)),
                                np.ones((1, 8)), None, None, 8, 1.0, False, np.empty((X.shape[0], 8)), 1)
    with pytest.raises(TypeError, match="order must have dtype int64"):
        theta, coef = th.copy(), C.copy()
        _core.train_epoch(X, Y, np.arange(X.shape[0], dtype=np.int32), 32, W, b, theta, 0.2, coef,
                          "squared", True, 1e-3, 0.9, 0.999, 1e-8, 0.0, 0.0, True, True,
                          np.zeros_like(coef), np.zeros_like(coef), np.zeros_like(theta),
                          np.zeros_like(theta), 0, 1)


def test_logistic_loss_grad_binding_names_its_arguments():
    Z = np.ones((4, 3))
    y, w, c = np.zeros(4), np.ones(4), np.zeros(3)
    with pytest.raises(TypeError, match="coef must have dtype float64"):
        _core.logistic_loss_grad(Z, c.astype(np.float32), y, w, np.empty(3), 1)
    with pytest.raises(TypeError, match="y must have dtype float64"):
        _core.logistic_loss_grad(Z.astype(np.float32), c.astype(np.float32), y.astype(np.float32), w,
                                 np.empty(3), 1)
    with pytest.raises(ValueError, match="w must have shape"):
        _core.logistic_loss_grad(Z, c, y, np.ones(5), np.empty(3), 1)
    with pytest.raises(TypeError, match="Z must be a C-contiguous"):
        _core.logistic_loss_grad(np.ones((3, 4)).T, c, y, w, np.empty(3), 1)
    buf = np.zeros(7)
    with pytest.raises(ValueError, match="out overlaps w"):
        _core.logistic_loss_grad(Z, c, y, buf[:4], buf[3:6], 1)
    with pytest.raises(ValueError, match="at least one sample"):
        _core.logistic_loss_grad(np.ones((0, 3)), c, np.zeros(0), np.zeros(0), np.empty(3), 1)
    with pytest.raises(ValueError, match="n_threads"):
        _core.logistic_loss_grad(Z, c, y, w, np.empty(3), 0)


def test_softmax_loss_grad_binding_names_its_arguments():
    Z = np.ones((4, 3))
    Y, w, c_t = np.eye(2)[[0, 1, 1, 0]], np.ones(4), np.zeros((2, 3))
    with pytest.raises(TypeError, match="coef_t must have dtype float64"):
        _core.softmax_loss_grad(Z, c_t.astype(np.float32), Y, w, np.empty((2, 3)), 1)
    with pytest.raises(TypeError, match="Y must have dtype float64"):
        _core.softmax_loss_grad(Z.astype(np.float32), c_t.astype(np.float32), Y.astype(np.float32), w,
                                np.empty((2, 3)), 1)
    with pytest.raises(ValueError, match="coef_t must have shape"):
        _core.softmax_loss_grad(Z, np.zeros((2, 4)), Y, w, np.empty((2, 3)), 1)
    with pytest.raises(ValueError, match="Y must have shape"):
        _core.softmax_loss_grad(Z, c_t, np.eye(3)[[0, 1, 2, 0]], w, np.empty((2, 3)), 1)
    with pytest.raises(ValueError, match="out must have shape"):
        _core.softmax_loss_grad(Z, c_t, Y, w, np.empty((3, 2)), 1)
    with pytest.raises(TypeError, match="Z must be a C-contiguous"):
        _core.softmax_loss_grad(np.ones((3, 4)).T, c_t, Y, w, np.empty((2, 3)), 1)
    buf = np.zeros(10)
    with pytest.raises(ValueError, match="out overlaps w"):
        _core.softmax_loss_grad(Z, c_t, Y, buf[:4], buf[3:9].reshape(2, 3), 1)
    with pytest.raises(ValueError, match="at least one sample"):
        _core.softmax_loss_grad(np.ones((0, 3)), c_t, np.zeros((0, 2)), np.zeros(0), np.empty((2, 3)), 1)
    with pytest.raises(ValueError, match="n_threads"):
        _core.softmax_loss_grad(Z, c_t, Y, w, np.empty((2, 3)), 0)


def test_gram_out_aliasing_weights_is_refused():
    """d == s: a Gram buffer can be W itself; the kernel would read W while writing G."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((50, 6))
    W = rng.standard_normal((6, 6))
    with pytest.raises(ValueError, match="out overlaps weights"):
        _core.gram(X, W, None, None, 0.5, False, None, W, None, False, 1)


def test_zty_out_aliasing_y_is_refused():
    """n == s: ZtY (s x m) can be Y (n x m) itself."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((8, 3))
    W = rng.standard_normal((3, 8))
    Y = rng.standard_normal((8, 2))
    G = np.empty((8, 8))
    with pytest.raises(ValueError, match="out_zty overlaps Y"):
        _core.gram(X, W, None, None, 0.5, False, Y, G, Y, False, 1)


def test_partially_overlapping_outputs_are_refused():
    X, W, b, th, Y, C = _problem()
    n, s = X.shape[0], W.shape[1]
    buf = np.empty(n * s + 5)
    out = buf[5:].reshape(n, s)
    Xv = buf[: n * X.shape[1]].reshape(n, X.shape[1])  # X and out share the buffer's middle
    Xv[:] = X
    with pytest.raises(ValueError, match="out overlaps X"):
        _core.features(Xv, W, b, th, 0.2, False, out, 1)
    gc = np.empty_like(C)
    with pytest.raises(ValueError, match="out_coef overlaps out_theta"):
        _core.loss_and_grad(X, Y, W, b, th, 0.2, False, C, "squared", gc, gc.reshape(-1)[: X.shape[1]], 1)
    theta = th.copy()
    coef = C.copy()
    m_coef = np.zeros_like(coef)
    with pytest.raises(ValueError, match="v_coef overlaps m_coef|m_coef overlaps v_coef"):
        _core.train_epoch(X, Y, np.arange(n, dtype=np.int64), 32, W, b, theta, 0.2, coef, "squared", True,
                          1e-3, 0.9, 0.999, 1e-8, 0.0, 0.0, True, True, m_coef, m_coef,
                          np.zeros_like(theta), np.zeros_like(theta), 0, 1)
    p = np.ones(10)
    with pytest.raises(ValueError, match="param overlaps grad"):
        _core.sgd_prox_step(p, p, 1e-3, 0.0, 0.0, 1)
    a = np.ones(24)
    with pytest.raises(ValueError, match="out overlaps X"):
        _core.fwht(a[:16].reshape(2, 8), a[8:].reshape(2, 8), False, 1)


def test_refused_calls_leave_outputs_untouched():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((50, 6))
    W = rng.standard_normal((6, 6))
    W0 = W.copy()
    with pytest.raises(ValueError):
        _core.gram(X, W, None, None, 0.5, False, None, W, None, False, 1)
    assert np.array_equal(W, W0)
