"""Silent-wrong and unclear-error cases of the public kernel API found by a hostile run.

Each case used to return a wrong result, write NaN in place, or ignore an argument; each must now
raise a ValueError/TypeError that names the problem (and leave the caller's arrays untouched).
Overlapping output buffers are refused by the bindings (pybind_utils.hpp's require_disjoint, on the
buffers the kernel actually gets), with the public argument names.
"""
import numpy as np
import pytest

from rffkern import kernels


def _map(n=6, d=4, s=4, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((n, d)), rng.standard_normal((d, s)), rng.uniform(0, 6, s),
            rng.standard_normal((n, 2)))


def test_gram_refuses_an_out_buffer_aliasing_weights():
    # d == s: out=W used to be accepted and overwritten while being read (max error 4.9)
    X, W, b, _ = _map(d=4, s=4)
    W_before = W.copy()
    with pytest.raises(ValueError, match="out overlaps weights"):
        kernels.gram(X, W, b, out=W)
    np.testing.assert_array_equal(W, W_before)


def test_gram_refuses_out_zty_aliasing_y():
    # n == s: out_zty=Y used to be accepted (max error 2.2)
    X, W, b, _ = _map(n=4, d=3, s=4)
    Y = np.random.default_rng(1).standard_normal((4, 4))
    with pytest.raises(ValueError, match="out_zty overlaps Y"):
        kernels.gram(X, W, b, Y, out_zty=Y)


def test_features_and_predict_refuse_aliasing_out():
    X, W, b, _ = _map(n=4, d=4, s=4)
    with pytest.raises(ValueError, match="out overlaps X"):
        kernels.features(X, W, b, out=X)
    coef = np.ones((4, 4))
    with pytest.raises(ValueError, match="out overlaps coef"):
        kernels.predict(X, W, b, coef, out=coef)


def test_gram_out_zty_without_y_is_refused():
    X, W, b, _ = _map()
    with pytest.raises(ValueError, match="out_zty .* needs Y"):
        kernels.gram(X, W, b, out_zty=np.zeros((4, 2)))


def test_loss_and_grad_refuses_gradient_buffers_aliasing_inputs():
    X, W, b, Y = _map()
    coef = np.ones((4, 2))
    with pytest.raises(ValueError, match="out_coef overlaps coef"):
        kernels.loss_and_grad(X, Y, W, b, coef, out_coef=coef)


@pytest.mark.parametrize("where", ["X", "Y"])
def test_train_epoch_refuses_nan_data_and_leaves_parameters_untouched(where):
    X, W, b, Y = _map(n=10)
    data = {"X": X, "Y": Y}
    data[where] = data[where].copy()
    data[where][3, 0] = np.nan
    theta, coef = np.ones(4), np.zeros((4, 2))
    state = kernels.AdamState(coef.shape, 4, np.float64)
    with pytest.raises(ValueError, match=f"{where} contains NaN or infinity"):
        kernels.train_epoch(data["X"], data["Y"], np.arange(10), W, b, theta, coef, state)
    np.testing.assert_array_equal(theta, np.ones(4))
    np.testing.assert_array_equal(coef, np.zeros((4, 2)))
    assert state.step == 0


def test_train_epoch_refuses_float_order():
    # float indices used to be truncated silently
    X, W, b, Y = _map(n=10)
    state = kernels.AdamState((4, 2), 4, np.float64)
    with pytest.raises(TypeError, match="order must be an integer array"):
        kernels.train_epoch(X, Y, np.arange(10) + 0.7, W, b, np.ones(4), np.zeros((4, 2)), state)


@pytest.mark.parametrize("n, exc", [(0, ValueError), (-3, ValueError), (2.5, TypeError), (True, TypeError)])
def test_default_scale_refuses_non_positive_counts(n, exc):
    with pytest.raises(exc, match="n_components"):
        kernels.default_scale(n)


def test_structured_maps_refuse_ignored_offsets_and_empty_stacks():
    X = np.ones((3, 4))
    D = np.ones((1, 3, 4))
    with pytest.raises(ValueError, match="offsets are not used with pair=True"):
        kernels.sorf_features(X, D, np.zeros(4), pair=True)
    with pytest.raises(ValueError, match="0 blocks"):
        kernels.sorf_features(X, np.ones((0, 3, 4)))
    ones = np.ones((1, 4))
    perm = np.arange(4)[None, :]
    with pytest.raises(ValueError, match="offsets are not used with pair=True"):
        kernels.fastfood_features(X, ones, perm, ones, ones, np.zeros(4), pair=True)
    with pytest.raises(ValueError, match="0 blocks"):
        kernels.fastfood_features(X, np.ones((0, 4)), np.zeros((0, 4), int), np.ones((0, 4)),
                                  np.ones((0, 4)))


def test_phases_that_overflow_are_refused_by_every_map():
    # finite X near the float64 limit: x.w overflowed to inf and cos(inf) gave all-NaN features,
    # predictions, Gram matrices and losses
    X, W, b, Y = _map()
    X_huge = np.full_like(X, 1.7e308)
    state = kernels.AdamState((4, 2), 4, np.float64)
    calls = {"features": lambda Z: kernels.features(Z, W, b),
             "predict": lambda Z: kernels.predict(Z, W, b, np.ones(4)),
             "gram": lambda Z: kernels.gram(Z, W, b, Y),
             "loss_and_grad": lambda Z: kernels.loss_and_grad(Z, Y, W, b, np.ones((4, 2))),
             "train_epoch": lambda Z: kernels.train_epoch(Z, Y, np.arange(6), W, b, np.ones(4),
                                                          np.zeros((4, 2)), state),
             "sorf_features": lambda Z: kernels.sorf_features(Z, np.ones((1, 3, 4))),
             "fastfood_features": lambda Z: kernels.fastfood_features(
                 Z, np.ones((1, 4)), np.arange(4)[None, :], np.ones((1, 4)), np.ones((1, 4)))}
    for name, call in calls.items():
        with pytest.raises(ValueError, match="phases .* can overflow float64"):
            call(X_huge)
        result = call(X * 1e100 if name != "train_epoch" else X)
        assert all(np.isfinite(r).all() for r in (result if isinstance(result, tuple) else [result])), name
    with pytest.raises(ValueError, match="can overflow float32"):
        kernels.features(np.full((2, 4), 1e38, np.float32), W, b)
    rows = kernels.CenteredRows.from_dense(np.eye(4) * 1.7e308)
    with pytest.raises(ValueError, match="can overflow"):
        kernels.features(rows, W, b)


@pytest.mark.parametrize("learning_rate", [1e300, 1e7, np.inf, 0.0, -1e-3])
def test_train_epoch_refuses_learning_rates_out_of_range(learning_rate):
    # 1e300 was accepted and left non-finite parameters
    X, W, b, Y = _map(n=10)
    theta, coef = np.ones(4), np.zeros((4, 2))
    state = kernels.AdamState(coef.shape, 4, np.float64)
    with pytest.raises(ValueError, match="learning_rate must be"):
        kernels.train_epoch(X, Y, np.arange(10), W, b, theta, coef, state, learning_rate=learning_rate)
    with pytest.raises(ValueError, match="learning_rate must be"):
        kernels.adam_prox_step(np.ones(3), np.ones(3), np.zeros(3), np.zeros(3), 1,
                               learning_rate=learning_rate)
    np.testing.assert_array_equal(theta, np.ones(4))
    assert not coef.any() and state.step == 0


@pytest.mark.parametrize("solver", ["adam", "sgd"])
def test_a_diverging_epoch_raises_and_restores_the_parameters(solver):
    # targets of 1e200 overflow the squared loss: the epoch used to return inf and leave NaN in
    # theta, coef and the Adam moments
    X, W, b, Y = _map(n=10)
    theta, coef = np.ones(4), np.zeros((4, 2))
    state = kernels.AdamState(coef.shape, 4, np.float64)
    kernels.train_epoch(X, Y, np.arange(10), W, b, theta, coef, state, batch_size=5, solver=solver)
    saved = [a.copy() for a in (theta, coef, state.m_coef, state.v_coef, state.m_theta, state.v_theta)]
    with pytest.raises(kernels.TrainingDivergedError, match="diverged"):
        kernels.train_epoch(X, Y * 1e200, np.arange(10), W, b, theta, coef, state, batch_size=5,
                            solver=solver)
    for a, old in zip((theta, coef, state.m_coef, state.v_coef, state.m_theta, state.v_theta), saved):
        np.testing.assert_array_equal(a, old)
    assert state.step == 2
