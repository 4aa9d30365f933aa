"""rffkern.torch (autograd over the fused kernels, RandomFourierLayer) and PyTorch tensors in
rffkern.kernels through DLPack."""
from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import rffkern  # noqa: E402
from rffkern import _dlpack, kernels  # noqa: E402
from rffkern.torch import RandomFourierLayer, fourier_features, fourier_predict  # noqa: E402


def _problem(n=7, d=3, s=5, m=2, dtype=torch.float64, seed=0):
    g = torch.Generator().manual_seed(seed)
    X = torch.randn(n, d, generator=g, dtype=dtype)
    W = torch.randn(d, s, generator=g, dtype=dtype)
    b = torch.rand(s, generator=g, dtype=dtype) * 6
    theta = torch.rand(d, generator=g, dtype=dtype) + 0.5
    coef = torch.randn(s, m, generator=g, dtype=dtype)
    return X, theta, coef, W, b


def test_import_rffkern_does_not_import_torch():
    code = "import sys, rffkern, rffkern.kernels; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


# ---- autograd -----------------------------------------------------------------------------------
@pytest.fixture(params=["pair", "compiled"])
def route(request, monkeypatch):
    """The two CPU routes of fourier_predict: the pair features kept by the forward pass, BLAS
    products on them in both passes; or (_PAIR_MAX_VALUES = 0, as for a batch past it) the compiled
    predict forward and loss_and_grad backward."""
    import rffkern.torch as rt

    if request.param == "compiled":
        monkeypatch.setattr(rt, "_PAIR_MAX_VALUES", 0)
    return request.param


@pytest.mark.parametrize("wrt", ["theta_coef", "all"], ids=["theta_coef", "every_input"])
def test_gradcheck_predict(wrt, route):
    """theta and coef only: the route's own backward; all: X, W, b as well (PyTorch ops from U on the
    compiled route)."""
    X, theta, coef, W, b = _problem()
    for t in (theta, coef) if wrt == "theta_coef" else (X, theta, coef, W, b):
        t.requires_grad_(True)
    assert torch.autograd.gradcheck(lambda *a: fourier_predict(a[0], a[3], a[4], a[2], a[1], n_threads=1),
                                    (X, theta, coef, W, b))


def test_gradcheck_predict_one_output_and_no_theta_or_offsets(route):
    X, _, coef, W, _ = _problem(m=1)
    coef = coef[:, 0].clone().requires_grad_(True)
    X.requires_grad_(True)
    assert torch.autograd.gradcheck(lambda X, c: fourier_predict(X, W, None, c, n_threads=1), (X, coef))


def test_gradcheck_features():
    X, theta, _, W, b = _problem()
    for t in (X, theta, W, b):
        t.requires_grad_(True)
    assert torch.autograd.gradcheck(lambda *a: fourier_features(a[0], a[2], a[3], a[1], n_threads=1), (X, theta, W, b))


@pytest.mark.parametrize("m", [1, 3])
def test_backward_routes_agree(m, monkeypatch):
    """The pair route, the compiled route (loss_and_grad) and PyTorch ops from U (X requiring grad on
    the compiled route) give the same gradients to theta and coef."""
    import rffkern.torch as rt

    X, theta, coef, W, b = _problem(n=300, d=6, s=40, m=m)
    G = torch.randn(300, m, dtype=torch.float64)
    grads = []
    for limit, x_grad in ((1 << 25, False), (1 << 25, True), (0, False), (0, True)):
        monkeypatch.setattr(rt, "_PAIR_MAX_VALUES", limit)
        t, c, x = theta.clone().requires_grad_(), coef.clone().requires_grad_(), X.clone().requires_grad_(x_grad)
        (fourier_predict(x, W, b, c, t) * G).sum().backward()
        grads.append((t.grad, c.grad) + ((x.grad,) if x_grad else ()))
    for other in grads[1:]:
        for got, want in zip(other, grads[0]):
            torch.testing.assert_close(got, want, rtol=1e-10, atol=1e-12)
    torch.testing.assert_close(grads[1][2], grads[3][2], rtol=1e-10, atol=1e-12)  # dL/dX of both routes


def test_pair_route_only_where_a_backward_pass_follows():
    """The pair features are kept for a CPU pass to be differentiated, within _PAIR_MAX_VALUES; a
    pass under no_grad, or without an input requiring grad, runs predict (O(tile) memory)."""
    import rffkern.torch as rt

    X, theta, coef, W, b = _problem(n=50, s=30)
    assert not rt._keep_pair(X, 30, theta, coef, W, b)
    theta.requires_grad_()
    assert rt._keep_pair(X, 30, theta, coef, W, b)
    assert not rt._keep_pair(X[:0], 30, theta, coef, W, b)
    assert not rt._keep_pair(X[:1].expand(1 << 20, 3), 30, theta, coef, W, b)  # past the memory limit
    with torch.no_grad():
        assert not rt._keep_pair(X, 30, theta, coef, W, b)
        F = fourier_predict(X, W, b, coef, theta)
    np.testing.assert_array_equal(F.numpy(), kernels.predict(X.numpy(), W.numpy(), b.numpy(), coef.numpy(),
                                                             theta=theta.detach().numpy()))


def test_double_backward_to_x():
    """create_graph=True: the backward pass to X is PyTorch ops from U, differentiable again."""
    X, theta, coef, W, b = _problem()
    X.requires_grad_(True)
    assert torch.autograd.gradgradcheck(lambda X: fourier_predict(X, W, b, coef, theta, n_threads=1), (X,))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["f32", "f64"])
def test_forward_equals_the_kernels(dtype, route):
    """The compiled route is the predict kernel itself; the pair route is torch.mm on the pair
    features (another summation order): equal to rounding."""
    X, theta, coef, W, b = _problem(n=50, d=4, s=30, dtype=dtype)
    args = [t.numpy() for t in (X, W, b)]
    F = fourier_predict(X, W, b, coef, theta.requires_grad_())
    assert F.dtype == dtype
    th = theta.detach().numpy()
    want = kernels.predict(*args, coef.numpy(), theta=th)
    if route == "compiled":
        np.testing.assert_array_equal(F.detach().numpy(), want)
    else:
        tol = 1e-5 if dtype == torch.float32 else 1e-13
        np.testing.assert_allclose(F.detach().numpy(), want, rtol=tol, atol=tol * np.abs(want).max())
    Z = fourier_features(X, W, b, theta)
    np.testing.assert_array_equal(Z.detach().numpy(), kernels.features(*args, theta=th))


def test_functional_refusals():
    X, theta, coef, W, b = _problem()
    with pytest.raises(TypeError, match="torch.Tensor"):
        fourier_predict(X.numpy(), W, b, coef)
    with pytest.raises(ValueError, match="weights must have shape"):
        fourier_predict(X, W.T, b, coef)
    with pytest.raises(ValueError, match="coef must have shape"):
        fourier_predict(X, W, b, coef[:-1])
    with pytest.raises(TypeError, match="device meta"):
        fourier_features(torch.empty(3, 3, device="meta"), W)


def test_cuda_tensors_without_the_cuda_build_are_refused():
    from rffkern import _cuda_backend
    from rffkern.torch import _cuda_kernels

    try:
        _cuda_backend.load_cuda_module()
    except RuntimeError:
        with pytest.raises(TypeError, match="CUDA tensor.*(without CUDA|no CUDA device)"):
            _cuda_kernels()
        if torch.cuda.is_available():  # a GPU but rffkern built without CUDA: a real tensor
            with pytest.raises(TypeError, match="CUDA tensor"):
                fourier_features(torch.ones(2, 3, device="cuda"), torch.ones(3, 4, device="cuda"))
    else:
        pytest.skip("rffkern._cuda is built and sees a GPU: tests/test_cuda.py covers it")


# ---- the layer ----------------------------------------------------------------------------------
def test_layer_draws_the_map_of_random_fourier_features():
    X = np.random.default_rng(1).normal(size=(20, 4))
    layer = RandomFourierLayer(4, 32, length_scale=2.0, random_state=3, dtype=torch.float64)
    Z = layer(torch.from_numpy(X)).detach().numpy()
    rff = rffkern.RandomFourierFeatures(32, length_scale=2.0, random_state=3).fit(X)
    np.testing.assert_allclose(Z, rff.transform(X), rtol=1e-12, atol=1e-12)
    assert [n for n, _ in layer.named_parameters()] == ["relevances"]
    assert {n for n, _ in layer.named_buffers()} == {"weights", "offsets"}


def test_layer_parameters_follow_its_switches():
    layer = RandomFourierLayer(3, 8, out_features=2, learn_relevances=False, learn_frequencies=True, bias=False)
    assert {n for n, _ in layer.named_parameters()} == {"weights", "offsets", "coef"}
    assert [n for n, _ in layer.named_buffers()] == ["relevances"]
    X = torch.randn(5, 3)
    layer(X).sum().backward()
    assert layer.weights.grad is not None and layer.offsets.grad is not None
    with pytest.raises(ValueError, match="3 columns"):
        layer(torch.randn(5, 4))
    with pytest.raises(ValueError, match="length_scale"):
        RandomFourierLayer(3, 8, length_scale=[1.0, 0.0, 1.0])


def test_layer_trains_in_a_pytorch_loop_and_finds_the_relevant_inputs():
    """y depends on inputs 0 and 1 of 5: the loss falls and their relevances end the largest."""
    torch.manual_seed(0)
    X = torch.rand(512, 5) * 4 - 2
    y = (torch.sin(2 * X[:, 0]) + X[:, 1] ** 2 / 2).unsqueeze(1)
    layer = RandomFourierLayer(5, 200, out_features=1, length_scale=2.0, random_state=0, n_threads=1)
    opt = torch.optim.Adam(layer.parameters(), lr=0.03)
    losses = []
    for epoch in range(40):
        for rows in torch.randperm(512).split(64):
            loss = torch.nn.functional.mse_loss(layer(X[rows]), y[rows])
            opt.zero_grad()
            loss.backward()
            opt.step()
        losses.append(loss.item())
    assert np.mean(losses[-5:]) < 0.2 * np.mean(losses[:2])
    rel = layer.relevances.detach().abs()
    assert rel[:2].min() > 2 * rel[2:].max(), rel


# ---- DLPack in rffkern.kernels ---------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["f32", "f64"])
def test_kernels_take_and_return_torch_tensors(dtype):
    X, theta, coef, W, b = _problem(n=20, dtype=dtype)
    want = kernels.predict(X.numpy(), W.numpy(), b.numpy(), coef.numpy(), theta=theta.numpy())
    got = kernels.predict(X, W, b, coef, theta=theta)
    assert isinstance(got, torch.Tensor) and got.dtype == dtype
    np.testing.assert_array_equal(got.numpy(), want)
    G, ZtY = kernels.gram(X, W, b, X[:, 0])
    assert isinstance(G, torch.Tensor) and isinstance(ZtY, torch.Tensor)
    strided = X.T.contiguous().T  # a column-major view: made contiguous, as NumPy's would be
    assert not strided.is_contiguous()
    want = kernels.features(X.numpy(), W.numpy(), b.numpy())
    np.testing.assert_array_equal(kernels.features(strided, W, b).numpy(), want)


def test_kernels_share_memory_with_tensors():
    X, _, _, W, b = _problem()
    out = torch.empty(7, 5, dtype=torch.float64)
    assert kernels.features(X, W, b, out=out) is out
    np.testing.assert_array_equal(out.numpy(), kernels.features(X.numpy(), W.numpy(), b.numpy()))
    param = torch.ones(4, dtype=torch.float64)
    assert kernels.sgd_prox_step(param, torch.ones(4, dtype=torch.float64), learning_rate=0.5) is param
    assert torch.equal(param, torch.full((4,), 0.5, dtype=torch.float64))
    made = np.arange(6.0)  # a new NumPy result goes back through torch.from_dlpack, not copied
    got = _dlpack.call(lambda x: made, "x", x=torch.zeros(1))
    assert isinstance(got, torch.Tensor) and np.shares_memory(got.numpy(), made)


def test_kernels_refuse_tensors_that_require_grad():
    X, _, _, W, b = _problem()
    with pytest.raises(TypeError, match="detach"):
        kernels.features(X.requires_grad_(), W, b)
