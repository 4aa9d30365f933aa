"""Smoke test of an installed rffkern wheel: run from outside the source tree, with no compiler.

Used by ``.ci/wheel.sh`` (the repaired manylinux wheel in a fresh venv) and by cibuildwheel's
``test-command`` (every wheel it builds). It imports only the installed package and NumPy: a
wheel missing its compiled module, a vendored library or a Python file fails here, where the
source tree's tests would still find them in the checkout.

Usage: python wheel_smoke.py [--isa baseline|avx2|avx512] [--from-anywhere]
"""
import argparse
import os
import sys
from pathlib import Path

import numpy as np


def check_installed_copy(rffkern):
    """The package comes from the environment's site-packages, not from a checkout on sys.path."""
    here = Path(rffkern.__file__).resolve()
    prefix = Path(sys.prefix).resolve()
    assert prefix in here.parents, f"rffkern was imported from {here}, not from the environment {prefix}"
    assert not (here.parents[1] / "pyproject.toml").exists(), f"{here} lies in a source tree"
    print(f"wheel_smoke: rffkern {rffkern.__version__} from {here.parent}")


def force_isa(core, isa):
    """Force the kernels' instruction set and check that it is the one the core now runs."""
    if isa is not None:
        core.set_isa(isa)
        assert core.active_isa() == isa, f"asked for {isa}, the core runs {core.active_isa()}"
    print(f"wheel_smoke: instruction set {core.active_isa()}, {core.max_threads()} thread(s) by default, "
          f"libmvec {core.have_libmvec()}")


def check_features_formula(kernels):
    """``kernels.features`` against its formula ``sqrt(2/s) cos(X W + b)`` in NumPy, both dtypes."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((37, 5))
    W = rng.standard_normal((5, 23))
    b = rng.uniform(0, 2 * np.pi, 23)
    expected = np.sqrt(2 / 23) * np.cos(X @ W + b)
    for dtype, tol in ((np.float64, 1e-12), (np.float32, 1e-5)):
        got = kernels.features(X.astype(dtype), W.astype(dtype), b.astype(dtype))
        assert got.dtype == dtype, got.dtype
        err = np.max(np.abs(got - expected))
        assert err < tol, f"features ({np.dtype(dtype).name}) differs from the formula by {err:.3g}"


def check_estimator(estimator, X, y, X_test):
    """A fit whose predictions are finite and the same on two calls."""
    estimator.fit(X, y)
    first = estimator.predict(X_test)
    second = estimator.predict(X_test)
    name = type(estimator).__name__
    assert first.shape == (len(X_test),), f"{name}: predictions of shape {first.shape}"
    assert np.all(np.isfinite(first)), f"{name}: non-finite predictions"
    assert np.array_equal(first, second), f"{name}: two predict calls differ"
    r2 = 1 - np.mean((first - np.sin(X_test[:, 0])) ** 2) / np.var(np.sin(X_test[:, 0]))
    print(f"wheel_smoke: {name} R^2 {r2:.3f} on held-out rows")
    return r2


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--isa", choices=["baseline", "avx2", "avx512"], default=None,
                        help="force this instruction set before anything runs")
    parser.add_argument("--from-anywhere", action="store_true",
                        help="skip the check that rffkern comes from the environment's site-packages "
                             "(for a build installed with pip --target, as .ci/no_openmp.sh does)")
    args = parser.parse_args(argv)

    import rffkern
    from rffkern import RFFNetRegressor, RFFRidge, _core, kernels

    if not args.from_anywhere:
        check_installed_copy(rffkern)
    force_isa(_core, args.isa)
    check_features_formula(kernels)

    rng = np.random.default_rng(1)
    X = rng.uniform(-3, 3, (400, 3))
    y = np.sin(X[:, 0]) + 0.05 * rng.standard_normal(400)
    X_test = rng.uniform(-3, 3, (100, 3))
    # a smooth one-variable target: either model that works explains most of it
    r2_ridge = check_estimator(RFFRidge(n_components=200, random_state=0), X, y, X_test)
    r2_net = check_estimator(RFFNetRegressor(n_components=100, max_iter=20, random_state=0), X, y, X_test)
    assert r2_ridge > 0.9 and r2_net > 0.5, (r2_ridge, r2_net)
    if args.isa is not None:
        assert _core.active_isa() == args.isa  # nothing above switched it back
    print(f"wheel_smoke: passed ({os.path.basename(sys.executable)} {sys.version.split()[0]})")


if __name__ == "__main__":
    main()
