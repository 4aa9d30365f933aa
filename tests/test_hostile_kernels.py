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
