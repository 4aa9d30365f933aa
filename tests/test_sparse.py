"""scipy.sparse input: RandomFourierFeatures maps it (as scikit-learn's RBFSampler does); every
other entry point refuses it with a TypeError that names sparse input and ``.toarray()``."""
from __future__ import annotations

import inspect
import tracemalloc

import numpy as np
import pytest
import scipy.sparse as sp

import rffkern
from rffkern import RandomFourierFeatures, kernels

SPARSE_MESSAGE = r"(?i)sparse.*toarray\(\)"


def _sparse_X(n=120, d=12, density=0.3, seed=0, dtype=np.float64):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) * (rng.random((n, d)) < density)
    return X.astype(dtype)


# ------------------------------------------------------------------ RandomFourierFeatures accepts
SPARSE_FORMATS = [sp.csr_matrix, sp.csc_matrix, sp.coo_matrix, sp.csr_array, sp.csc_array]


@pytest.mark.parametrize("fmt", SPARSE_FORMATS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("kernel", ["gaussian", "laplace", "cauchy"])
@pytest.mark.parametrize("pair", [False, True], ids=["phase", "pair"])
def test_rff_sparse_equals_dense_float64(fmt, kernel, pair):
    X = _sparse_X()
    rff = RandomFourierFeatures(40, kernel=kernel, pair=pair, length_scale=0.7, random_state=3)
    rff.fit(fmt(X))
    dense = RandomFourierFeatures(40, kernel=kernel, pair=pair, length_scale=0.7, random_state=3).fit(X)
    np.testing.assert_array_equal(rff.weights_, dense.weights_)  # fit draws the same from a sparse X
    Xs = fmt(X)
    Z = rff.transform(Xs)
    assert isinstance(Z, np.ndarray) and Z.dtype == np.float64 and Z.shape == (X.shape[0], 40)
    np.testing.assert_allclose(Z, rff.transform(X), rtol=0, atol=1e-12)
    # and the defining formula, written out
    U = X @ rff.weights_
    expected = (np.hstack([np.cos(U), np.sin(U)]) * np.sqrt(1 / 20) if pair
                else np.cos(U + rff.offsets_) * np.sqrt(2 / 40))
    np.testing.assert_allclose(Z, expected, rtol=0, atol=1e-12)
    np.testing.assert_array_equal(Xs.toarray(), X)  # the caller's matrix is untouched


def test_rff_sparse_float32_stays_float32():
    X = _sparse_X(dtype=np.float32)
    rff = RandomFourierFeatures(30, random_state=0).fit(sp.csr_matrix(X))
    assert rff.weights_.dtype == np.float32
    Z = rff.transform(sp.csr_matrix(X))
    assert Z.dtype == np.float32
    np.testing.assert_allclose(Z, rff.transform(X), rtol=0, atol=2e-6)


def test_rff_sparse_pair_form_matches_the_dense_input():
    X = _sparse_X(n=121)
    rff_pair = RandomFourierFeatures(16, pair=True, random_state=1).fit(X)
    np.testing.assert_allclose(rff_pair.transform(sp.csr_matrix(X)), rff_pair.transform(X), rtol=0, atol=1e-12)


def test_rff_sparse_same_bits_whatever_the_thread_count():
    X = sp.csr_matrix(_sparse_X(n=1200))
    for pair in (False, True):
        results = [RandomFourierFeatures(32, pair=pair, random_state=5, n_jobs=n_jobs).fit(X).transform(X)
                   for n_jobs in (1, 2, 3)]
        for Z in results[1:]:
            np.testing.assert_array_equal(Z, results[0])


def test_rff_sparse_counts_duplicates_and_explicit_zeros_as_toarray_does():
    X = sp.coo_matrix((np.array([1.0, 2.0, 0.0, -1.5]), (np.array([0, 0, 1, 2]), np.array([1, 1, 0, 2]))),
                      shape=(3, 4))
    assert not sp.csr_matrix(X).has_canonical_format or X.nnz == 4
    rff = RandomFourierFeatures(16, random_state=2).fit(X)
    np.testing.assert_allclose(rff.transform(X), rff.transform(X.toarray()), rtol=0, atol=1e-12)


def test_rff_sparse_is_never_densified():
    # X would take 40 MB dense; Z takes 0.25 MB: the peak must stay far below X's dense size
    rng = np.random.default_rng(0)
    X = sp.random(2000, 2500, density=0.002, format="csr", random_state=rng)
    rff = RandomFourierFeatures(16, random_state=0).fit(X)
    tracemalloc.start()
    try:
        Z = rff.transform(X)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    dense_bytes = X.shape[0] * X.shape[1] * 8
    assert peak < dense_bytes / 10, (peak, dense_bytes)
    np.testing.assert_allclose(Z[:5], rff.transform(X[:5].toarray()), rtol=0, atol=1e-12)


def test_rff_sparse_checks():
    X = _sparse_X()
    rff = RandomFourierFeatures(8, random_state=0).fit(sp.csr_matrix(X))
    with pytest.raises(ValueError, match="features"):
        rff.transform(sp.csr_matrix(X[:, :5]))
    bad = sp.csr_matrix(X)
    bad.data[0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        rff.transform(bad)
    with pytest.raises(ValueError, match="NaN"):
        RandomFourierFeatures(8).fit(bad)


def test_rff_sparse_in_a_pipeline():
    from sklearn.linear_model import Ridge
    from sklearn.pipeline import make_pipeline

    X = _sparse_X(n=200)
    y = np.sin(X[:, 0]) + X[:, 1]
    dense = make_pipeline(RandomFourierFeatures(50, random_state=0), Ridge(alpha=1e-3)).fit(X, y)
    sparse = make_pipeline(RandomFourierFeatures(50, random_state=0), Ridge(alpha=1e-3)).fit(sp.csr_matrix(X), y)
    np.testing.assert_allclose(sparse.predict(sp.csr_matrix(X)), dense.predict(X), rtol=0, atol=1e-9)


# ----------------------------------------------------------------- every other estimator refuses
ESTIMATORS = [name for name in rffkern.__all__
              if inspect.isclass(getattr(rffkern, name)) and name != "RandomFourierFeatures"]
FAST = {"n_components": 8, "max_iter": 2, "n_iter": 2, "n_outer": 1, "n_inner": 2}
METHODS = ("predict", "predict_proba", "decision_function", "transform", "score")


def _data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 4))
    y = X[:, 0] + 0.1 * rng.normal(size=60)
    return X, y, (y > 0).astype(int)


def _make(name):
    est = getattr(rffkern, name)()
    params = est.get_params()
    est.set_params(**{k: v for k, v in FAST.items() if k in params})
    return est


def test_every_public_estimator_is_covered():
    assert set(ESTIMATORS) >= {"RFFNetRegressor", "RFFNetClassifier", "RFFRidge", "RFFRidgeClassifier",
                               "SRFFRegressor", "EERFRegressor", "EERFClassifier", "AdaptiveRFFRegressor",
                               "AdaptiveRFFClassifier", "Fastfood", "StructuredOrthogonalFeatures",
                               "OrthogonalRandomFeatures", "TopKSelector"}


@pytest.mark.parametrize("name", ESTIMATORS)
def test_estimators_refuse_sparse(name):
    X, y, labels = _data()
    target = labels if "Classifier" in name else y
    with pytest.raises(TypeError, match=SPARSE_MESSAGE):
        _make(name).fit(sp.csr_matrix(X), target)
    fitted = _make(name).fit(X, target)
    checked = 0
    for method in METHODS:
        if not hasattr(fitted, method):
            continue
        args = (sp.csr_matrix(X), target) if method == "score" else (sp.csr_matrix(X),)
        if name == "TopKSelector" and method == "transform":
            # column selection is as simple on CSR as on a dense array: kept sparse, as in sklearn
            out = fitted.transform(args[0])
            assert sp.issparse(out)
            np.testing.assert_array_equal(out.toarray(), fitted.transform(X))
            continue
        with pytest.raises(TypeError, match=SPARSE_MESSAGE):
            getattr(fitted, method)(*args)
        checked += 1
    assert checked >= 1 or name == "TopKSelector"  # a selector has transform only


def test_one_call_fit_and_topk_selection_refuse_sparse():
    X, y, _ = _data()
    with pytest.raises(TypeError, match=SPARSE_MESSAGE):
        rffkern.fit(sp.csr_matrix(X), y)
    with pytest.raises(TypeError, match=SPARSE_MESSAGE):
        rffkern.fit(X, sp.csr_matrix(y.reshape(-1, 1)))
    net = rffkern.RFFNetRegressor(n_components=8, max_iter=2, random_state=0).fit(X, y)
    with pytest.raises(TypeError, match=SPARSE_MESSAGE):
        rffkern.topk_selection(net, sp.csr_matrix(X), y)


# ------------------------------------------------------------- every kernel function refuses
def _kernel_calls():
    """For each public array function of rffkern.kernels: valid dense arguments."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(10, 4))
    W = rng.normal(size=(4, 6))
    b = rng.uniform(0, 6, size=6)
    coef = rng.normal(size=6)
    Y = rng.normal(size=(10, 1))
    p, n_blocks = 4, 2
    return {
        "features": (kernels.features, dict(X=X, weights=W, offsets=b)),
        "predict": (kernels.predict, dict(X=X, weights=W, offsets=b, coef=coef)),
        "gram": (kernels.gram, dict(X=X, weights=W, offsets=b, Y=Y)),
        "loss_and_grad": (kernels.loss_and_grad, dict(X=X, Y=Y, weights=W, offsets=b, coef=coef)),
        "adam_prox_step": (kernels.adam_prox_step, dict(param=coef.copy(), grad=coef, m=np.zeros(6),
                                                        v=np.zeros(6), step=1)),
        "sgd_prox_step": (kernels.sgd_prox_step, dict(param=coef.copy(), grad=coef)),
        "train_epoch": (kernels.train_epoch, dict(
            X=X, Y=Y, order=np.arange(10), weights=W, offsets=b, theta=np.ones(4),
            coef=np.zeros((6, 1)), state=kernels.AdamState((6, 1), 4, np.float64))),
        "fwht": (kernels.fwht, dict(x=rng.normal(size=(3, 8)))),
        "centered_rows": (kernels.centered_rows, dict(X=X)),
        "fastfood_features": (kernels.fastfood_features, dict(
            X=X, signs=rng.choice([-1.0, 1.0], size=(n_blocks, p)),
            permutation=np.stack([rng.permutation(p) for _ in range(n_blocks)]),
            gaussian=rng.normal(size=(n_blocks, p)), scaling=np.ones((n_blocks, p)))),
        "sorf_features": (kernels.sorf_features, dict(
            X=X, diagonals=rng.choice([-1.0, 1.0], size=(n_blocks, 3, p)), radial=np.ones((n_blocks, p)))),
        "logistic_loss_grad": (kernels.logistic_loss_grad, dict(
            Z=rng.normal(size=(10, 6)), y=(np.arange(10) % 2).astype(float), coef=coef,
            sample_weight=np.ones(10))),
        "softmax_loss_grad": (kernels.softmax_loss_grad, dict(
            Z=rng.normal(size=(10, 6)), Y=np.eye(3)[np.arange(10) % 3], coef=np.zeros((6, 3)),
            sample_weight=np.ones(10))),
    }


def test_every_kernel_function_is_covered():
    array_functions = {n for n in kernels.__all__ if callable(getattr(kernels, n))} - {
        "default_scale", "block_size", "AdamState", "CenteredRows",  # from_csr takes sparse input
        "TrainingDivergedError"}  # (an exception class, not a function of arrays)
    assert array_functions == set(_kernel_calls())


def _sparse_cases():
    cases = []
    for fname, (_, kwargs) in _kernel_calls().items():
        for arg, value in kwargs.items():
            if isinstance(value, np.ndarray) and value.ndim <= 2:  # scipy.sparse is 2-D
                cases.append((fname, arg))
    return cases


@pytest.mark.parametrize("fname, arg", _sparse_cases())
def test_kernel_functions_refuse_sparse(fname, arg):
    func, kwargs = _kernel_calls()[fname]
    func(**kwargs)  # the dense call is valid
    func, kwargs = _kernel_calls()[fname]
    value = kwargs[arg]
    kwargs[arg] = sp.csr_matrix(value if value.ndim == 2 else value.reshape(1, -1))
    with pytest.raises(TypeError, match=arg + r" is a scipy\.sparse csr_matrix.*toarray\(\)"):
        func(**kwargs)


def test_structured_fwht_refuses_sparse():
    with pytest.raises(TypeError, match=SPARSE_MESSAGE):
        rffkern.fwht(sp.csr_matrix(np.ones((2, 8))))
