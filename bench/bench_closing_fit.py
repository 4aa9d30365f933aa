"""RFFNetClassifier's closing fit with many classes, against scikit-learn's LogisticRegression.

Part 1, one evaluation of the softmax loss and gradient (one thread, 1000 features): the compiled
``kernels.softmax_loss_grad`` (register-blocked for few outputs) against the matrix products of
``_output_refit._SoftmaxProducts``, for n in {1000, 4000} rows, float64 and float32, and
``--outputs`` outputs. The closing fit uses the products from ``SOFTMAX_GEMM_MIN_OUTPUTS`` on.

Part 2, for each of ``--classes`` classes: ``make_classification`` with ``--rows-per-class``
training rows per class (20 inputs, 15 informative, one cluster per class, class_sep 2) and a
quarter as many test rows; ``RFFNetClassifier(random_state=0)`` fitted on the training rows, its
closing fit (``_after_training``: the penalty search and the fit on every row) timed on its own;
then, on the same trained features of the training rows (the closing map), scikit-learn's
``LogisticRegression`` at the penalty the closing fit chose (``C = 1 / (2 alpha n)``) with its
default ``tol=1e-4`` and with ``tol=1e-6``. Test accuracy of each. ``--compiled-softmax`` runs the
closing fit as before the products existed (the compiled kernel for every output count, the search
in float64 below 4000 rows): the baseline of the change. ``--rffkern-fit`` also times
``rffkern.fit`` on the same rows with string labels.

Everything on one thread (``OMP_NUM_THREADS=1`` is set before rffkern loads; BLAS pinned by
threadpoolctl). Writes bench/results/bench_closing_fit.json.

    python bench/bench_closing_fit.py                              # 200 and 1000 classes
    python bench/bench_closing_fit.py --classes 200 --compiled-softmax
    python bench/bench_closing_fit.py --classes 1000 --rffkern-fit --skip-evaluations
"""
from __future__ import annotations

import argparse
import json
import os
import time
import warnings
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402
from sklearn.datasets import make_classification  # noqa: E402
from sklearn.linear_model import LogisticRegression  # noqa: E402
from threadpoolctl import threadpool_limits  # noqa: E402

import rffkern  # noqa: E402
from rffkern import RFFNetClassifier  # noqa: E402
from rffkern import _output_refit as refit  # noqa: E402
from rffkern._losses import softmax_loss_grad_unchecked  # noqa: E402


def best_time(fn, reps=5):
    best = np.inf
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def bench_evaluations(outputs):
    rows, rng = [], np.random.default_rng(0)
    for dtype in (np.float64, np.float32):
        for n in (1000, 4000):
            X = (rng.standard_normal((n, 1000)) * 0.03).astype(dtype)
            for m in outputs:
                Y = np.eye(m)[rng.integers(0, m, n)]
                w, C = np.full(n, 1.0 / n), rng.standard_normal((1000, m)) * 0.1
                C_t = np.ascontiguousarray(C.T, dtype=dtype)
                products = refit._SoftmaxProducts(X, Y, w, 1)
                compiled = best_time(lambda: softmax_loss_grad_unchecked(X, Y, C_t, w, 1))  # noqa: B023
                gemm = best_time(lambda: products(C))  # noqa: B023
                rows.append({"dtype": np.dtype(dtype).name, "n": n, "outputs": m, "compiled_s": compiled,
                             "products_s": gemm, "speedup": compiled / gemm})
                print(f"{np.dtype(dtype).name:8s} {n:5d} {m:5d} {compiled * 1e3:10.1f} {gemm * 1e3:10.1f} "
                      f"{compiled / gemm:7.2f}x", flush=True)
    return rows


def problem(k, rows_per_class):
    n_train = rows_per_class * k
    X, y = make_classification(n_samples=n_train + n_train // 4, n_features=20, n_informative=15,
                               n_classes=k, n_clusters_per_class=1, class_sep=2.0, random_state=0)
    return X[:n_train], y[:n_train], X[n_train:], y[n_train:]


def timed_closing_fit(est):
    """Fit ``est`` and return the seconds its closing fit took."""
    spent = []
    inner = est._after_training

    def after_training(*args):
        t0 = time.perf_counter()
        inner(*args)
        spent.append(time.perf_counter() - t0)

    est._after_training = after_training
    return spent


def bench_classes(k, rows_per_class, with_fit):
    X, y, X_test, y_test = problem(k, rows_per_class)
    est = RFFNetClassifier(random_state=0, n_jobs=1)
    closing = timed_closing_fit(est)
    t0 = time.perf_counter()
    est.fit(X, y)
    row = {"classes": k, "rows": X.shape[0], "rffnet_fit_s": time.perf_counter() - t0,
           "closing_fit_s": closing[0], "alpha": est.refit_alpha_, "rffnet_test_accuracy": est.score(X_test, y_test)}
    del est._after_training
    Z, Z_test = (est._trained_features(est._standardized(A)) for A in (X, X_test))
    C = 1.0 / (2.0 * est.refit_alpha_ * X.shape[0])
    for tol in (1e-4, 1e-6):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # ConvergenceWarning
            t0 = time.perf_counter()
            lr = LogisticRegression(C=C, tol=tol, max_iter=1000).fit(Z, y)
        row[f"sklearn_tol{tol:g}_s"] = time.perf_counter() - t0
        row[f"sklearn_tol{tol:g}_iterations"] = int(lr.n_iter_[0])
        row[f"sklearn_tol{tol:g}_test_accuracy"] = lr.score(Z_test, y_test)
    if with_fit:
        labels = np.array([f"class {v:04d}" for v in y])
        t0 = time.perf_counter()
        model = rffkern.fit(X, labels, random_state=0, n_jobs=1)
        row["rffkern_fit_s"] = time.perf_counter() - t0
        row["rffkern_fit_test_accuracy"] = model.score(X_test, np.array([f"class {v:04d}" for v in y_test]))
    print("  ".join(f"{key} {value:.4g}" if isinstance(value, float) else f"{key} {value}"
                    for key, value in row.items()), flush=True)
    return row


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--classes", type=int, nargs="*", default=[200, 1000], help="none: part 1 only")
    parser.add_argument("--rows-per-class", type=int, default=3)
    parser.add_argument("--outputs", type=int, nargs="+", default=[10, 32, 64, 128, 256, 1000])
    parser.add_argument("--compiled-softmax", action="store_true",
                        help="the closing fit as before the matrix-product path (the baseline)")
    parser.add_argument("--rffkern-fit", action="store_true", help="also time rffkern.fit")
    parser.add_argument("--skip-evaluations", action="store_true", help="skip part 1")
    parser.add_argument("--out", default="bench_closing_fit.json", help="file name in bench/results/")
    args = parser.parse_args(argv)
    if args.compiled_softmax:
        refit.SOFTMAX_GEMM_MIN_OUTPUTS = np.iinfo(np.int64).max
    out = {"args": vars(args)}
    with threadpool_limits(limits=1, user_api="blas"):
        if not args.skip_evaluations:
            print("one evaluation, ms: compiled kernel, matrix products, speed-up")
            out["evaluations"] = bench_evaluations(args.outputs)
        out["classes"] = [bench_classes(k, args.rows_per_class, args.rffkern_fit) for k in args.classes]
    path = Path(__file__).resolve().parent / "results" / args.out
    path.parent.mkdir(exist_ok=True)
    path.write_text(json.dumps(out, indent=1))
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
