"""RFFRidge / RFFRidgeClassifier: closed forms against NumPy, alpha selection, partial_fit, estimator checks."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.base import clone
from sklearn.utils.estimator_checks import check_estimator

import reference
from rffkern._linalg import RidgeEigen, ridge_solve
from rffkern.datasets import make_jse3
from rffkern.ridge import RFFRidge, RFFRidgeClassifier


# The closed-form tests check the solver on X and y as given: no standardization, no target
# scaling, a fixed width (the defaults' data-driven parts are tested at the end of this file).
PLAIN = dict(standardize=False, normalize_y=False, length_scale=1.0)


def _data(n=120, d=4, seed=0, m=None):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = np.sin(X[:, 0]) + 0.5 * X[:, 1] ** 2 + 0.1 * rng.normal(size=n)
    if m:
        y = np.column_stack([y + k for k in range(m)])
    return X, y


def _numpy_ridge(Z, Y, alpha):
    mu, ybar = Z.mean(0), Y.mean(0)
    Zc = Z - mu
    coef = np.linalg.solve(Zc.T @ Zc + alpha * np.eye(Z.shape[1]), Zc.T @ (Y - ybar))
    return coef, ybar - mu @ coef


@pytest.mark.parametrize("pair", [False, True])
def test_fit_matches_numpy_closed_form(pair):
    X, y = _data()
    m = RFFRidge(30, alpha=0.3, pair=pair, random_state=1, **PLAIN).fit(X, y)
    Z = reference.features(X, m.weights_, None if pair else m.offsets_, scale=m.scale_, pair=pair)
    coef, intercept = _numpy_ridge(Z, y, 0.3)
    np.testing.assert_allclose(m.coef_, coef, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(m.intercept_, intercept, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(m.predict(X), Z @ coef + intercept, rtol=1e-8, atol=1e-10)


def test_no_intercept_and_multioutput():
    X, Y = _data(m=3)
    m = RFFRidge(20, alpha=0.1, fit_intercept=False, random_state=0, **PLAIN).fit(X, Y)
    Z = reference.features(X, m.weights_, m.offsets_, scale=m.scale_)
    np.testing.assert_allclose(m.coef_, np.linalg.solve(Z.T @ Z + 0.1 * np.eye(20), Z.T @ Y), rtol=1e-8)
    assert m.predict(X).shape == (X.shape[0], 3)
    assert np.all(m.intercept_ == 0)


def _brute_force_loo(Z, y, alphas):
    """Mean squared leave-one-out residual of ridge on the features Z, per alpha, by n refits."""
    errors = []
    for a in alphas:
        err = 0.0
        for i in range(len(y)):
            keep = np.arange(len(y)) != i
            coef, b = _numpy_ridge(Z[keep], y[keep], a)
            err += (y[i] - Z[i] @ coef - b) ** 2
        errors.append(err / len(y))
    return errors


@pytest.mark.parametrize("n, s", [(50, 15), (12, 30)], ids=["gram", "fewer-rows-than-features"])
def test_loo_is_exact_leave_one_out(n, s):
    # more rows than features: the Gram's eigendecomposition (LooPass); fewer: the n x n
    # kernel matrix's (KernelLoo)
    X, y = _data(n=n)
    alphas = [0.01, 0.3, 3.0]
    m = RFFRidge(s, alpha=alphas, alpha_selection="loo", random_state=2, **PLAIN).fit(X, y)
    brute = _brute_force_loo(reference.features(X, m.weights_, m.offsets_, scale=m.scale_), y, alphas)
    np.testing.assert_allclose(m.selection_errors_, brute, rtol=1e-7)
    assert m.alpha_ == alphas[int(np.argmin(brute))]


def _extended_precision_loo(Z, Y, alphas, fit_intercept):
    """The exact leave-one-out formula, ``(y_i - f_i) / (1 - h_ii)``, evaluated in long double
    (64-bit mantissa) by Gauss-Jordan elimination of ``G + alpha I``: the reference for the
    small penalties where float64 formulas lose digits to ``1 - h`` near 0."""
    Z, Y = Z.astype(np.longdouble), Y.astype(np.longdouble)
    n, s = Z.shape
    if fit_intercept:
        Z, Y = Z - Z.mean(0), Y - Y.mean(0)
    errors = []
    for a in alphas:
        A = Z.T @ Z + np.longdouble(a) * np.eye(s, dtype=np.longdouble)
        B = np.hstack([Z.T, Z.T @ Y])
        for k in range(s):
            B[k] /= A[k, k]
            A[k] /= A[k, k]
            f = A[:, k].copy()
            f[k] = 0
            A -= np.outer(f, A[k])
            B -= np.outer(f, B[k])
        h = (Z * B[:, :n].T).sum(1) + (np.longdouble(1) / n if fit_intercept else 0)
        R = (Y - Z @ B[:, n:]) / (1 - h)[:, None]
        errors.append(float((R**2).mean()))
    return np.array(errors)


@settings(max_examples=25)
@given(n=st.integers(2, 99), m=st.integers(1, 3), fit_intercept=st.booleans(), duplicates=st.booleans(),
       seed=st.integers(0, 2**16))
def test_kernel_loo_matches_the_gram_path_and_extended_precision(n, m, fit_intercept, duplicates, seed):
    """With fewer rows than features, fit_ridge_map's leave-one-out pass runs on the n x n matrix
    (KernelLoo): the Gram path's numbers where those are accurate (alpha >= 1e-4), and the
    extended-precision formula's down to alpha = 1e-8, where the Gram path loses digits."""
    from rffkern._ridge_solvers import FourierFeatureMap, KernelLoo, LooPass, fit_ridge_map
    rng = np.random.default_rng(seed)
    s, d = 100, 10
    X = rng.normal(size=(n, d))
    if duplicates and n >= 4:
        X[n // 2:n // 2 + 2] = X[0]  # rows equal to the first: exact zeros of n x n eigenvalues
    Y = np.column_stack([X @ rng.normal(size=d) + k for k in range(m)])
    # a wide kernel (length scale 8 on unit inputs): eigenvalues down to ~1e-12, h near 1 at small alpha
    fmap = FourierFeatureMap(rng.normal(size=(d, s)) / 8.0, rng.uniform(0, 2 * np.pi, s), np.sqrt(2.0 / s))
    alphas = [1e-8, 1e-6, 1e-4, 1e-2, 1.0, 100.0]
    coef, intercept, alpha, errors, stats = fit_ridge_map(fmap, X, Y, alphas, fit_intercept=fit_intercept)
    kernel = KernelLoo(fmap, X, Y, stats, fit_intercept).errors(alphas) * stats.target_scale**2
    np.testing.assert_array_equal(errors, kernel)  # the kernel path ran
    gram = LooPass(stats, alphas, fit_intercept).sse(fmap, X, Y) * stats.target_scale**2 / (n * m)
    np.testing.assert_allclose(errors[2:], gram[2:], rtol=1e-7)
    exact = _extended_precision_loo(fmap.features(X), Y, alphas, fit_intercept)
    np.testing.assert_allclose(errors, exact, rtol=1e-6)
    assert alpha == alphas[int(np.argmin(errors))]
    # the model is still the Gram's solution at that penalty
    Z = fmap.features(X)
    if fit_intercept:
        ref_coef, ref_intercept = _numpy_ridge(Z, Y, alpha)
    else:
        ref_coef, ref_intercept = np.linalg.solve(Z.T @ Z + alpha * np.eye(s), Z.T @ Y), np.zeros(m)
    np.testing.assert_allclose(Z @ coef + intercept, Z @ ref_coef + ref_intercept, rtol=1e-6, atol=1e-6)


def test_float32_loo_pass_is_leave_one_out_to_float32_accuracy(monkeypatch):
    """Large passes multiply in float32 (FLOAT32_LOO_MIN_WORK, with at least
    FLOAT32_LOO_MIN_ROWS_PER_FEATURE rows per feature): forced here on a small problem (60 rows, 25
    features), the errors still match brute-force leave-one-out closely and choose the same penalty."""
    from rffkern import _ridge_solvers
    monkeypatch.setattr(_ridge_solvers, "FLOAT32_LOO_MIN_WORK", 0.0)
    X, y = _data(n=60)
    alphas = [0.003, 0.1, 3.0]
    m = RFFRidge(25, alpha=alphas, alpha_selection="loo", random_state=4, **PLAIN).fit(X, y)
    brute = _brute_force_loo(reference.features(X, m.weights_, m.offsets_, scale=m.scale_), y, alphas)
    np.testing.assert_allclose(m.selection_errors_, brute, rtol=1e-4)
    assert not np.allclose(m.selection_errors_, brute, rtol=1e-12, atol=0)  # the float32 path ran
    assert m.alpha_ == alphas[int(np.argmin(brute))]


@pytest.mark.parametrize("weighted", [False, True])
def test_loo_pass_blocks_on_threads_give_the_same_sums(monkeypatch, weighted):
    """The leave-one-out pass shares its row blocks out to the map's threads: the same sums and
    per-row terms on one thread and on three (blocks of 16 rows here, the last one short), equal to
    brute-force leave-one-out, with BLAS's own thread limit as it was before the pass."""
    from threadpoolctl import threadpool_info

    from rffkern import _ridge_solvers
    from rffkern._ridge_solvers import FourierFeatureMap, GramStats, LooPass
    monkeypatch.setattr(_ridge_solvers, "_LOO_BLOCK_ROWS", 16)
    rng = np.random.default_rng(5)
    n, d, s = 150, 4, 30
    X = rng.normal(size=(n, d))
    Y = np.column_stack([np.sin(X[:, 0]), X[:, 1] * X[:, 2]]) + 0.1 * rng.normal(size=(n, 2))
    w = rng.uniform(0.5, 2.0, n) if weighted else None
    W, b = rng.normal(size=(d, s)), rng.uniform(0, 2 * np.pi, s)
    alphas = [1e-3, 0.1, 10.0]
    blas_before = [(lib["filepath"], lib["num_threads"]) for lib in threadpool_info()]
    runs = []
    for threads in (1, 3):
        fmap = FourierFeatureMap(W, b, np.sqrt(2.0 / s), n_threads=threads)
        stats = GramStats(fmap.n_out, 2, X.dtype).add(fmap, X, Y, w)
        rows = np.zeros((n, len(alphas)))
        runs.append((LooPass(stats, alphas, True).sse(fmap, X, Y, w, rows), rows, stats))
    assert [(lib["filepath"], lib["num_threads"]) for lib in threadpool_info()] == blas_before
    np.testing.assert_array_equal(runs[0][0], runs[1][0])
    np.testing.assert_array_equal(runs[0][1], runs[1][1])
    sse, rows, stats = runs[1]
    if not weighted:  # (each row left out with all its weight: the unweighted brute force)
        Z = reference.features(X, W, b, scale=np.sqrt(2.0 / s))
        brute = [np.mean([_brute_force_loo(Z, Y[:, j], [a])[0] for j in range(2)]) for a in alphas]
        np.testing.assert_allclose(sse * stats.target_scale**2 / (2 * n), brute, rtol=1e-7)
    np.testing.assert_allclose(sse, (rows if w is None else w[:, None] * rows).sum(axis=0), rtol=1e-12)


def test_gcv_matches_hat_matrix():
    X, y = _data(n=60)
    alphas = [0.05, 1.0]
    m = RFFRidge(12, alpha=alphas, alpha_selection="gcv", random_state=3, **PLAIN).fit(X, y)
    Z = reference.features(X, m.weights_, m.offsets_, scale=m.scale_)
    Zc, yc, n = Z - Z.mean(0), y - y.mean(), len(y)
    for a, got in zip(alphas, m.selection_errors_):
        H = Zc @ np.linalg.solve(Zc.T @ Zc + a * np.eye(12), Zc.T) + 1.0 / n
        r = y - H @ y
        np.testing.assert_allclose(got, (r @ r / n) / (1 - np.trace(H) / n) ** 2, rtol=1e-8)
    del yc


def test_validation_selection_refits_on_all_data():
    X, y = _data(n=200)
    m = RFFRidge(25, alpha=[1e-3, 1.0, 100.0], alpha_selection="validation", validation_fraction=0.25,
                 random_state=0, **PLAIN).fit(X, y)
    assert m.selection_errors_.shape == (3,)
    single = RFFRidge(25, alpha=m.alpha_, random_state=0, **PLAIN).fit(X, y)
    # the map is drawn first from the same seed, so the final fit equals a single-alpha fit
    np.testing.assert_allclose(m.coef_, single.coef_, rtol=1e-7, atol=1e-9)


def test_eigen_path_matches_direct_solve():
    rng = np.random.default_rng(0)
    A = rng.normal(size=(40, 8))
    G, ZtY = A.T @ A, A.T @ rng.normal(size=(40, 2))
    eig = RidgeEigen(G, ZtY)
    for a in (1e-3, 1.0):
        np.testing.assert_allclose(eig.coef(a), ridge_solve(G, ZtY, a), rtol=1e-8, atol=1e-10)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_partial_fit_equals_fit(dtype):
    X, y = _data(n=300)
    X = X.astype(dtype)
    full = RFFRidge(20, alpha=0.5, random_state=4, **PLAIN).fit(X, y)
    part = RFFRidge(20, alpha=0.5, random_state=4, **PLAIN)
    for chunk in np.array_split(np.arange(300), 4):
        part.partial_fit(X[chunk], y[chunk])
    tol = 1e-8 if dtype == np.float64 else 2e-3
    np.testing.assert_allclose(part.coef_, full.coef_, rtol=tol, atol=tol)
    assert part.n_samples_seen_ == 300
    assert full.predict(X).dtype == dtype


def test_partial_fit_alpha_list_uses_gcv_and_rejects_validation():
    X, y = _data(n=100)
    m = RFFRidge(10, alpha=[0.1, 1.0], random_state=0).partial_fit(X, y)
    assert m.selection_errors_.shape == (2,)
    with pytest.raises(ValueError, match="validation"):
        RFFRidge(10, alpha=[0.1, 1.0], alpha_selection="validation").partial_fit(X, y)


def test_same_result_whatever_n_jobs():
    X, y = _data(n=500)
    a = RFFRidge(40, alpha=[0.1, 1.0], random_state=0, n_jobs=1, **PLAIN).fit(X, y)
    b = RFFRidge(40, alpha=[0.1, 1.0], random_state=0, n_jobs=2, **PLAIN).fit(X, y)
    np.testing.assert_array_equal(a.coef_, b.coef_)


def test_classifier_binary_and_multiclass():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 2))
    yb = np.where(X[:, 0] ** 2 + X[:, 1] ** 2 > 1.2, "out", "in")
    clf = RFFRidgeClassifier(100, alpha=[0.01, 0.1, 1.0], random_state=0).fit(X, yb)
    assert clf.decision_function(X).shape == (300,)
    assert clf.score(X, yb) > 0.9
    ym = np.minimum((np.arctan2(X[:, 1], X[:, 0]) + np.pi) // (2 * np.pi / 3), 2).astype(int)
    clf = RFFRidgeClassifier(100, alpha=0.1, random_state=0).fit(X, ym)
    assert clf.decision_function(X).shape == (300, 3)
    assert clf.score(X, ym) > 0.85
    part = RFFRidgeClassifier(100, alpha=0.1, random_state=0)
    with pytest.raises(ValueError, match="classes"):
        part.partial_fit(X[:10], ym[:10])
    for chunk in np.array_split(np.arange(300), 3):
        part.partial_fit(X[chunk], ym[chunk], classes=[0, 1, 2, 3])
    assert part.classes_.tolist() == [0, 1, 2, 3]


def test_bad_input_and_no_mutation():
    X, y = _data(n=30)
    X0, y0 = X.copy(), y.copy()
    RFFRidge(10, alpha=[0.1, 1.0], random_state=0).fit(X, y)
    np.testing.assert_array_equal(X, X0)
    np.testing.assert_array_equal(y, y0)
    Xn = X.copy()
    Xn[0, 0] = np.nan
    with pytest.raises(ValueError):
        RFFRidge(10).fit(Xn, y)
    with pytest.raises(ValueError):
        RFFRidge(10, alpha=-1.0).fit(X, y)
    with pytest.raises(ValueError, match="empty"):
        RFFRidge(10, alpha=[]).fit(X, y)
    with pytest.raises(ValueError, match="even"):
        RFFRidge(11, pair=True).fit(X, y)
    m = RFFRidge(10).fit(X, y)
    with pytest.raises(ValueError):
        m.predict(X[:, :2])
    with pytest.raises(ValueError, match="2 classes"):
        RFFRidgeClassifier(10).fit(X, np.zeros(30))


@pytest.mark.parametrize("est", [
    # length_scale 4: the checks' regression data are 10-D standardised, where a unit length-scale
    # is too rough for the score > 0.5 the check asks for.
    RFFRidge(100, length_scale=4.0, random_state=0, n_jobs=1),
    RFFRidge(100, alpha=[0.1, 1.0], length_scale=4.0, random_state=0, n_jobs=1),
    RFFRidge(100, random_state=0, n_jobs=1),
    RFFRidgeClassifier(50, random_state=0, n_jobs=1),
], ids=["RFFRidge", "RFFRidge-alpha-list", "RFFRidge-defaults", "RFFRidgeClassifier"])
def test_sklearn_estimator_checks(est):
    # weights are relative (divided by their mean positive weight, so that their units do not
    # matter): integer weights give the model of the rows repeated at the penalty alpha times
    # that mean (test_integer_weights_equal_repeated_rows), not at alpha, as the check expects
    expected = {"check_sample_weight_equivalence_on_dense_data": "weights are relative to their mean"}
    check_estimator(clone(est), expected_failed_checks=expected)


# ------------------------------------------------------------------ data-driven defaults
def test_defaults_follow_the_scale_of_x_and_y():
    # raw X in other units and y in the 1e5 range fit as well as the unit-scale problem: the
    # standardization, the median width and the target scaling absorb both
    X, y = _data(n=400, d=5)
    base = RFFRidge(200, random_state=0).fit(X, y)
    big = RFFRidge(200, random_state=0).fit(X * 1000.0, y * 1e5)
    np.testing.assert_allclose(big.predict(X * 1000.0) / 1e5, base.predict(X), rtol=1e-6, atol=1e-6)
    assert big.length_scale_ == pytest.approx(base.length_scale_)
    assert base.score(X, y) > 0.9


def test_auto_width_picks_a_median_multiple_by_the_one_se_rule():
    from rffkern._sampling import median_distance

    X, y = _data(n=300, d=4, seed=1)
    m = RFFRidge(100, random_state=0).fit(X, y)
    assert len(m.width_errors_) == 3
    Xs = (X - X.mean(0)) / X.std(0)
    ratio = m.length_scale_ / median_distance(Xs, rng=np.random.default_rng(0))
    assert min((0.5, 1.0, 2.0), key=lambda f: abs(f - ratio)) == pytest.approx(ratio, rel=0.05)
    # the least LOO error, or a width nearer the median whose error is close to the least
    chosen = m.width_errors_[[0.5, 1.0, 2.0].index(round(ratio * 2) / 2)]
    assert chosen == min(m.width_errors_) or (round(ratio * 2) / 2 == 1.0 and chosen < 1.1 * min(m.width_errors_))
    # the chosen model equals a fit with that width given explicitly (same draws)
    fixed = RFFRidge(100, length_scale=m.length_scale_, random_state=0).fit(X, y)
    np.testing.assert_allclose(fixed.predict(X), m.predict(X), rtol=1e-10, atol=1e-10)


def test_one_se_rule_keeps_the_median_width_unless_another_is_better_beyond_noise():
    from rffkern._selection import one_se_width

    # factors 0.5, 1, 2; standard errors of the differences to the best (0 for the best itself)
    assert one_se_width([0.150, 0.152, 0.180], [0.0, 0.004, 0.01]) == 1    # 0.5x best by < 1 se
    assert one_se_width([0.140, 0.152, 0.180], [0.0, 0.004, 0.01]) == 0    # by 3 se
    assert one_se_width([0.180, 0.152, 0.150], [0.01, 0.004, 0.0]) == 1
    assert one_se_width([0.151, 0.160, 0.150], [0.002, 0.001, 0.0]) == 2   # a tie in distance: the smaller error
    assert one_se_width([0.150, 0.140, 0.150], [0.0, 0.0, 0.0]) == 1
    assert one_se_width([0.140, 0.152, 0.180], [0.0, float("nan"), 0.01]) == 0  # NaN: not eligible
    # a finer grid: the eligible width nearest the median on a log scale
    factors = (0.5, 2**-0.5, 1.0, 2**0.5, 2.0)
    assert one_se_width([0.150, 0.153, 0.170, 0.160, 0.2], [0.0, 0.004, 0.005, 0.005, 0.01], factors) == 1
    assert one_se_width([0.2, 0.1, 0.3], [0.0, 0.0, 0.0], factors=(2.0, 4.0, 1.0)) == 1  # the least error


def test_paired_standard_error_of_a_weighted_mean():
    """Unweighted: the sample standard error of the mean difference; weighted: that of a weighted
    mean of independent rows, the unweighted one for equal weights and unchanged by a common factor."""
    from rffkern._selection import paired_standard_error

    rng = np.random.default_rng(0)
    a, b = rng.exponential(size=40), rng.exponential(size=40)
    d = a - b
    assert paired_standard_error(a, b) == pytest.approx(np.std(d, ddof=1) / np.sqrt(40), rel=1e-12)
    assert paired_standard_error(a, b, np.full(40, 3.0)) == pytest.approx(paired_standard_error(a, b), rel=1e-12)
    w = rng.uniform(0.1, 3.0, size=40)
    se = paired_standard_error(a, b, w)
    assert paired_standard_error(a, b, 1e-6 * w) == pytest.approx(se, rel=1e-12)
    assert paired_standard_error(a, b, 1e6 * w) == pytest.approx(se, rel=1e-12)
    mean = np.average(d, weights=w)
    k = w.sum() ** 2 / (w @ w)
    assert se == pytest.approx(np.sqrt(np.sum(w**2 * (d - mean) ** 2) * k / (k - 1)) / w.sum(), rel=1e-12)
    zero = w.copy()
    zero[:5] = 0.0  # rows of weight 0 take no part
    assert paired_standard_error(a, b, zero) == pytest.approx(paired_standard_error(a[5:], b[5:], w[5:]), rel=1e-12)
    assert np.isnan(paired_standard_error(a[:1], b[:1]))
    assert np.isnan(paired_standard_error(a[:2], b[:2], np.array([1.0, 0.0])))


def test_auto_width_keeps_the_median_when_the_loo_minimum_is_within_noise():
    # breast_cancer, the 80/20 split of seed 1: the least LOO error is at 0.5x the median distance
    # (0.1477 against 0.1521 at 1x: 0.47 standard errors of the per-row difference, 0.0093), which
    # made 7 test errors against 2 at 1x; the rule keeps 1x
    from sklearn.datasets import load_breast_cancer
    from sklearn.model_selection import train_test_split

    X, y = load_breast_cancer(return_X_y=True)
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.2, random_state=1, stratify=y)
    auto = RFFRidgeClassifier(random_state=1).fit(Xtr, ytr)
    median = RFFRidgeClassifier(length_scale="median", random_state=1).fit(Xtr, ytr)
    assert int(np.argmin(auto.width_errors_)) == 0  # the least error alone would take 0.5x
    assert auto.length_scale_ == median.length_scale_
    np.testing.assert_array_equal(auto.predict(Xte), median.predict(Xte))
    assert auto.score(Xte, yte) > 0.97


def test_auto_width_leaves_the_median_when_another_width_is_clearly_better():
    # a fast-varying target on 1500 rows: 0.5x the median distance is better by many standard errors
    rng = np.random.default_rng(0)
    X = rng.uniform(-2, 2, size=(1500, 2))
    y = np.sin(6 * X[:, 0]) + 0.1 * rng.normal(size=1500)
    m = RFFRidge(300, random_state=0).fit(X, y)
    assert int(np.argmin(m.width_errors_)) == 0
    assert m.width_errors_[0] < 0.5 * m.width_errors_[1]
    assert m.length_scale_ == pytest.approx(0.5 * RFFRidge(300, length_scale="median", random_state=0)
                                            .fit(X, y).length_scale_, rel=1e-12)


def test_defaults_beat_the_old_fixed_defaults_on_a_rough_target():
    # the old defaults (100 features, alpha 1, width 1 on raw X) underfit badly
    rng = np.random.default_rng(0)
    X = rng.normal(size=(1500, 6)) * [1, 10, 100, 1, 1, 1]
    y = np.sin(X[:, 0] * 2) + np.cos(X[:, 1] / 5) + 0.05 * rng.normal(size=1500)
    old = RFFRidge(100, alpha=1.0, length_scale=1.0, standardize=False, normalize_y=False,
                   random_state=0).fit(X[:1000], y[:1000])
    new = RFFRidge(random_state=0).fit(X[:1000], y[:1000])
    # measured: new 0.84, old -0.10 (R^2 on the held-out third)
    assert new.score(X[1000:], y[1000:]) > 0.75 and old.score(X[1000:], y[1000:]) < 0.2


@pytest.mark.parametrize("pair", [False, True])
def test_feature_importances_are_the_rms_partial_derivatives(pair):
    # finite differences of the fitted function, on inputs as given (standardize off)
    X, y = _data(n=200, d=5, seed=3)
    # (inputs not clipped: the differences at the rows of largest and least value leave the range)
    m = RFFRidge(40, alpha=0.1, pair=pair, random_state=0, robust_inputs=False, **PLAIN).fit(X, y)
    eps = 1e-6
    g = np.empty(5)
    for j in range(5):
        E = np.zeros(5)
        E[j] = eps
        g[j] = np.sqrt(np.mean(((m.predict(X + E) - m.predict(X - E)) / (2 * eps)) ** 2))
    np.testing.assert_allclose(m.feature_importances_, g / g.max(), rtol=1e-5)


def test_feature_importances_find_the_relevant_inputs():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(800, 6))
    y = np.sin(2 * X[:, 0]) + X[:, 3] ** 2
    imp = RFFRidge(300, random_state=0).fit(X, y).feature_importances_
    assert set(np.argsort(-imp)[:2]) == {0, 3} and imp[[1, 2, 4, 5]].max() < 0.2


# ------------------------------------------------------------------ sample_weight
def _rel(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return float(np.max(np.abs(a - b)) / np.max(np.abs(b)))


@pytest.mark.parametrize("standardize", [True, "global"])
def test_integer_weights_equal_repeated_rows(standardize):
    """At one width and one penalty, weights 0..3 against the rows repeated that many times at the
    penalty times the mean positive weight (the weights are relative to it): the same
    standardization, target scale and model (the searched width and penalty are chosen by
    leaving each row out with all its weight: test_weighted_loo_leaves_each_row_out_with_its_weight)."""
    X, y = _data(n=150, d=4, seed=3)
    X[:, 2] *= 30.0  # the pooled scale differs from each input's own
    w = np.random.default_rng(0).integers(0, 4, size=150)
    params = dict(n_components=80, length_scale=2.0, random_state=0, standardize=standardize)
    weighted = RFFRidge(alpha=0.01, **params).fit(X, y, sample_weight=w)
    repeated = RFFRidge(alpha=0.01 * w[w > 0].mean(), **params).fit(np.repeat(X, w, axis=0), np.repeat(y, w))
    for name in ("coef_", "intercept_", "x_mean_", "x_scale_"):
        assert _rel(getattr(weighted, name), getattr(repeated, name)) <= 1e-8, name
    assert _rel(weighted.predict(X), repeated.predict(X)) <= 1e-8
    assert _rel(weighted.feature_importances_, repeated.feature_importances_) <= 1e-8


def test_weighted_loo_leaves_each_row_out_with_its_weight():
    """The LOO error of every penalty, weighted: each row refitted out with all its weight (brute
    force), the squared residuals averaged with the weights, as scikit-learn's RidgeCV scores."""
    from rffkern._ridge_solvers import FourierFeatureMap, fit_ridge_map

    X, y = _data(n=60, d=3, seed=7)
    w = np.random.default_rng(3).uniform(0.2, 3.0, size=60)
    rng = np.random.default_rng(0)
    W, b = rng.standard_normal((3, 40)), rng.uniform(0, 2 * np.pi, 40)
    fmap = FourierFeatureMap(W, b, np.sqrt(2 / 40))
    alphas = [1e-3, 1e-2, 0.1, 1.0]
    Y = y.reshape(-1, 1)
    _, _, _, errors, _ = fit_ridge_map(fmap, X, Y, alphas, sample_weight=w)
    brute = []
    for a in alphas:
        sq = []
        for i in range(60):
            keep = np.arange(60) != i
            coef, intercept, _, _, _ = fit_ridge_map(fmap, X[keep], Y[keep], [a], sample_weight=w[keep])
            sq.append(((fmap.predict(X[i:i + 1], coef) + intercept - Y[i]) ** 2).item())
        brute.append(np.average(sq, weights=w))
    np.testing.assert_allclose(errors, brute, rtol=1e-7)


@pytest.mark.parametrize("selection", ["loo", "gcv"])
def test_the_units_of_the_weights_do_not_change_the_model(selection):
    """Weights c w are w: the estimators fit on weights divided by their mean, so the same width,
    penalty and model whatever c (weights of 1e-20 chose the penalty grid's floor and a training
    R^2 of 0; leaving one unit of weight out instead of a row made weights in thousands choose
    alpha 3e-8 and a test R^2 of -79 on cal_housing)."""
    X, y = _data(n=200, d=4, seed=8)
    w = np.random.default_rng(4).uniform(0.5, 1.5, size=200)
    kw = dict(n_components=60, alpha_selection=selection, random_state=0)
    base = RFFRidge(**kw).fit(X, y, sample_weight=w)
    for c in (1e-20, 1e-3, 3.0, 1e20):
        scaled = RFFRidge(**kw).fit(X, y, sample_weight=c * w)
        assert scaled.standardize_ == base.standardize_ and scaled.alpha_ == base.alpha_
        assert scaled.length_scale_ == pytest.approx(base.length_scale_, rel=1e-12)
        np.testing.assert_allclose(scaled.width_errors_, base.width_errors_, rtol=1e-6)
        assert _rel(scaled.predict(X), base.predict(X)) <= 1e-7


def test_classifier_weights_equal_repeated_rows_and_zero_drops():
    X, y = _data(n=120, d=3, seed=4)
    labels = np.digitize(y, np.quantile(y, [0.33, 0.66]))
    w = np.random.default_rng(1).integers(0, 3, size=120)
    params = dict(n_components=60, random_state=0)
    fixed = dict(params, length_scale=2.0)  # (a searched alpha: each row left out with all its weight)
    weighted = RFFRidgeClassifier(alpha=0.1, **fixed).fit(X, labels, sample_weight=w)
    repeated = RFFRidgeClassifier(alpha=0.1 * w[w > 0].mean(), **fixed).fit(np.repeat(X, w, axis=0),
                                                                            np.repeat(labels, w))
    assert _rel(weighted.decision_function(X), repeated.decision_function(X)) <= 1e-8
    zero = w.copy()
    zero[:10] = 0
    keep = np.arange(120) >= 10
    dropped = RFFRidgeClassifier(**params).fit(X, labels, sample_weight=zero)
    removed = RFFRidgeClassifier(**params).fit(X[keep], labels[keep], sample_weight=w[keep])
    assert _rel(dropped.decision_function(X), removed.decision_function(X)) <= 1e-8


def test_zero_weight_drops_the_row_and_uniform_weights_change_nothing():
    X, y = _data(n=140, d=4, seed=5)
    w = np.ones(140)
    w[[3, 50, 77]] = 0.0
    keep = w > 0
    params = dict(n_components=70, random_state=0)
    zero = RFFRidge(**params).fit(X, y, sample_weight=w)
    dropped = RFFRidge(**params).fit(X[keep], y[keep])
    assert zero.length_scale_ == pytest.approx(dropped.length_scale_, rel=1e-12)
    assert _rel(zero.predict(X), dropped.predict(X)) <= 1e-8
    plain = RFFRidge(**params).fit(X, y)
    uniform = RFFRidge(**params).fit(X, y, sample_weight=np.ones(140))
    assert uniform.alpha_ == plain.alpha_ and uniform.length_scale_ == plain.length_scale_
    assert _rel(uniform.predict(X), plain.predict(X)) <= 1e-8
    # weights are relative to their mean: equal weights of any value are no weights
    fixed = dict(n_components=70, length_scale=2.0, random_state=0)
    scaled = RFFRidge(alpha=0.5, **fixed).fit(X, y, sample_weight=np.full(140, 2.5))
    assert _rel(scaled.predict(X), RFFRidge(alpha=0.5, **fixed).fit(X, y).predict(X)) <= 1e-8


def test_partial_fit_with_weights_equals_repeated_chunks():
    X, y = _data(n=200, d=3, seed=6)
    w = np.random.default_rng(2).integers(1, 4, size=200)
    # the first chunk's mean weight is the unit of every chunk's weights
    params = dict(n_components=50, length_scale=2.0, random_state=0)
    a, b = RFFRidge(alpha=0.1, **params), RFFRidge(alpha=0.1 * w[:120].mean(), **params)
    for rows in (slice(0, 120), slice(120, 200)):
        a.partial_fit(X[rows], y[rows], sample_weight=w[rows])
        b.partial_fit(np.repeat(X[rows], w[rows], axis=0), np.repeat(y[rows], w[rows]))
    assert _rel(a.predict(X), b.predict(X)) <= 1e-8
    assert a.n_samples_seen_ == 200 and b.n_samples_seen_ == int(w.sum())
    c = RFFRidgeClassifier(40, alpha=0.1, length_scale=2.0, random_state=0)
    labels = (y > np.median(y)).astype(int)
    c.partial_fit(X[:100], labels[:100], classes=[0, 1], sample_weight=w[:100])
    d = RFFRidgeClassifier(40, alpha=0.1 * w[:100].mean(), length_scale=2.0, random_state=0)
    d.partial_fit(np.repeat(X[:100], w[:100], axis=0), np.repeat(labels[:100], w[:100]), classes=[0, 1])
    assert _rel(c.decision_function(X), d.decision_function(X)) <= 1e-8


@pytest.mark.parametrize("weights, match", [
    (-np.ones(30), "sample_weight must be non-negative"),
    (np.r_[np.nan, np.ones(29)], "sample_weight contains NaN"),
    (np.r_[np.inf, np.ones(29)], "sample_weight contains NaN or infinity"),
    (np.ones(29), r"sample_weight must have shape \(30,\)"),
    (np.ones((30, 1)), r"sample_weight must have shape \(30,\)"),
    (np.zeros(30), "sample_weight sums to zero"),
    (-2.0, "sample_weight must be non-negative"),
])
@pytest.mark.parametrize("cls", [RFFRidge, RFFRidgeClassifier])
def test_bad_sample_weight_is_refused(cls, weights, match):
    X, y = _data(n=30, d=2)
    target = y if cls is RFFRidge else (y > 0).astype(int)
    original = np.array(weights, copy=True)
    with pytest.raises(ValueError, match=match):
        cls(20, random_state=0).fit(X, target, sample_weight=weights)
    with pytest.raises(ValueError, match=match):
        if cls is RFFRidge:
            cls(20, random_state=0).partial_fit(X, target, sample_weight=weights)
        else:
            cls(20, random_state=0).partial_fit(X, target, classes=[False, True], sample_weight=weights)
    np.testing.assert_array_equal(np.asarray(weights), original)  # the caller's array untouched


def test_loo_rows_scores_a_subset_and_keeps_the_model_of_all_rows():
    X, y = _data(n=600, d=3, seed=7)
    params = dict(n_components=60, length_scale=2.0, alpha=[1e-3, 1e-1, 10.0], random_state=0)
    full = RFFRidge(**params).fit(X, y)
    sub = RFFRidge(loo_rows=200, **params).fit(X, y)
    assert sub.n_samples_seen_ == 600
    assert not np.allclose(sub.selection_errors_, full.selection_errors_)  # other rows scored
    np.testing.assert_allclose(sub.selection_errors_, full.selection_errors_, rtol=0.5)
    assert RFFRidge(loo_rows=600, **params).fit(X, y).selection_errors_ == pytest.approx(full.selection_errors_)
    again = RFFRidge(**params).set_params(alpha=sub.alpha_).fit(X, y)
    np.testing.assert_allclose(sub.predict(X), again.predict(X), rtol=1e-10, atol=1e-12)


# ------------------------------------------------------------------ verbose
def test_verbose_prints_one_line_per_width_and_the_choice(capsys):
    import re

    X, y = _data(n=200, d=3)
    RFFRidge(40, random_state=0, verbose=1, standardize=True).fit(X, y)
    lines = capsys.readouterr().out.strip().splitlines()
    pattern = (r"\[RFFRidge\] width (\d)/3: length_scale [\d.e+-]+, alpha [\d.e+-]+, LOO mse [\d.e+-]+ "
               r"\(23 alphas\) \(elapsed \d+\.\d\d s\)")
    assert [int(re.fullmatch(pattern, line).group(1)) for line in lines[:3]] == [1, 2, 3]
    assert re.fullmatch(r"\[RFFRidge\] chose length_scale [\d.e+-]+, alpha [\d.e+-]+ \(elapsed \d+\.\d\d s\)",
                        lines[3])
    assert len(lines) == 4
    # standardize="auto": the three widths with each input by its own deviation, "global" at its
    # median width (and at its other two only when better there: these inputs are in one unit)
    RFFRidge(40, random_state=0, verbose=1).fit(X, y)
    lines = capsys.readouterr().out.strip().splitlines()
    pattern = (r"\[RFFRidge\] width (\d)/4: standardize (True|'global'), length_scale [\d.e+-]+, alpha [\d.e+-]+, "
               r"LOO mse [\d.e+-]+ \(23 alphas\) \(elapsed \d+\.\d\d s\)")
    matches = [re.fullmatch(pattern, line) for line in lines[:4]]
    assert [int(m.group(1)) for m in matches] == [1, 2, 3, 4]
    assert [m.group(2) for m in matches] == ["True", "True", "True", "'global'"]
    assert re.fullmatch(r"\[RFFRidge\] chose standardize True, length_scale [\d.e+-]+, alpha [\d.e+-]+ "
                        r"\(elapsed \d+\.\d\d s\)", lines[4])
    assert len(lines) == 5
    RFFRidgeClassifier(40, random_state=0).fit(X, y > 0)
    assert capsys.readouterr().out == ""  # verbose=0: silent


def test_a_sequence_of_widths_keeps_the_best_by_selection_error():
    X, y = _data(n=300, d=3, seed=8)
    both = RFFRidge(60, length_scale=[0.7, 3.0], random_state=0).fit(X, y)
    assert len(both.width_errors_) == 2
    assert both.length_scale_ == [0.7, 3.0][int(np.argmin(both.width_errors_))]
    alone = RFFRidge(60, length_scale=both.length_scale_, random_state=0).fit(X, y)
    np.testing.assert_allclose(both.predict(X), alone.predict(X), rtol=1e-12, atol=1e-12)
    with pytest.raises(ValueError, match="length_scale"):
        RFFRidge(60, length_scale=[1.0, -2.0]).fit(X, y)


def test_sample_weight_with_a_dask_array_fits_as_in_memory():
    """The Dask fit takes the weights too (on the synchronous scheduler here; on a cluster in
    tests/test_dask_weights.py)."""
    dask = pytest.importorskip("dask")
    da = pytest.importorskip("dask.array")
    X, y = _data(n=60, d=2)
    w = np.linspace(0.0, 2.0, 60)
    for est, target in ((RFFRidge(20, length_scale=1.0, random_state=0), y),
                        (RFFRidgeClassifier(20, length_scale=1.0, random_state=0), y > 0)):
        single = clone(est).fit(X, target, sample_weight=w)
        with dask.config.set(scheduler="sync"):
            dist = est.fit(da.from_array(X, chunks=(25, 2)), target, sample_weight=w)
        np.testing.assert_allclose(dist.coef_, single.coef_, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("cls", [RFFRidge, RFFRidgeClassifier])
def test_scalar_sample_weight_is_that_weight_on_every_row(cls):
    # scikit-learn's convention, shared by every estimator through _data.check_sample_weight
    X, y = _data(n=30, d=2)
    target = y if cls is RFFRidge else (y > 0).astype(int)
    a = cls(20, alpha=0.5, length_scale=2.0, random_state=0).fit(X, target, sample_weight=2.0)
    b = cls(20, alpha=0.5, length_scale=2.0, random_state=0).fit(X, target, sample_weight=np.full(30, 2.0))
    assert np.array_equal(a.coef_, b.coef_)


@pytest.mark.parametrize("n, d", [(2, 200), (3, 130), (50, 128), (300, 200)])
def test_median_distance_by_matrix_product_equals_pdist(n, d):
    """From _GEMM_DISTANCE_MIN_FEATURES columns the median heuristic uses |a|^2 + |b|^2 - 2 a.b."""
    from scipy.spatial.distance import pdist

    from rffkern._sampling import _GEMM_DISTANCE_MIN_FEATURES, median_distance
    assert d >= _GEMM_DISTANCE_MIN_FEATURES
    X = np.random.default_rng(n).standard_normal((n, d)) * 3 + 100  # far from the origin
    np.testing.assert_allclose(median_distance(X), np.median(pdist(X)), rtol=1e-12)


@pytest.mark.parametrize("standardize", [True, False])
def test_an_input_constant_on_the_training_rows_has_importance_zero(standardize):
    """f's slope along an input the data never varies is that of random directions (it ranked at
    0.77 of the largest, the noise inputs at 0.03-0.05): its importance is 0, the others' unchanged."""
    X, y, _ = make_jse3(400, random_state=1)
    Xc = np.column_stack([X, np.full(400, 4.0)])
    for est in (RFFRidge(200, random_state=0, standardize=standardize),
                RFFRidgeClassifier(200, random_state=0, standardize=standardize)):
        target = y if isinstance(est, RFFRidge) and not isinstance(est, RFFRidgeClassifier) else y > 0
        est.fit(Xc, target)
        assert est.feature_importances_[-1] == 0
        assert sorted(np.argsort(-est.feature_importances_)[:2].tolist()) == [0, 1]
    # partial_fit: rows where the input takes another value make it vary; more of the same do not
    ridge = RFFRidge(200, random_state=0, alpha=1e-3, length_scale=3.0, standardize=standardize)
    ridge.partial_fit(Xc[:200], y[:200])
    ridge.partial_fit(Xc[200:300], y[200:300])
    assert ridge.feature_importances_[-1] == 0
    moved = Xc[300:].copy()
    moved[:, -1] = 5.0  # constant in these rows too, but not the value seen before
    ridge.partial_fit(moved, y[300:])
    assert ridge.feature_importances_[-1] > 0

