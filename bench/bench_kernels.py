"""Throughput and memory of the fused kernels against NumPy and scikit-learn, side by side.

For every shape, dtype and thread count this times, in one run, median of ``--reps`` repetitions:

* ``features``  vs NumPy ``c * np.cos(X @ W + b)`` and sklearn ``RBFSampler.transform``
* ``predict``   vs NumPy features-then-matmul ``(c * np.cos(X @ W + b)) @ B``
* ``gram``      vs NumPy features + ``Z.T @ Z`` (time, and peak memory measured in a fresh
  subprocess each, as the growth of the maximum resident set size)
* ``logistic_loss_grad`` / ``softmax_loss_grad`` (the closing fit's losses on formed features) vs
  NumPy's two products, ``F = Z @ coef`` then ``Z.T @ R`` with SciPy's ``expit`` / ``log_softmax``
* ``--sparse-rows``: ``features``, ``predict`` and one ``train_epoch`` (mini-batches of 32, the
  RFFNet default) on ``kernels.CenteredRows`` against the same kernels on the dense X, and
  ``features`` / ``predict`` against SciPy's CSR product ``cos(X_csr @ W + b)``, on inputs with a
  given share of entries away from their column's value (one-hot: a9a, w8a; pixels: MNIST)

BLAS threads are limited to the same count with threadpoolctl, so OpenMP and BLAS never share
cores. Prints a table of ratios (baseline time / rffkern time; > 1 means rffkern is faster) and
writes JSON to bench/results/.

    python bench/bench_kernels.py                      # n=100k, d in {100, 10}, s=1000
    python bench/bench_kernels.py --n 20000 --reps 3   # quicker
    python bench/bench_kernels.py --skip-features --skip-gram --loss-n 1293 6400 --reps 15  # the losses
    python bench/bench_kernels.py --sparse-rows --skip-features --skip-gram --skip-losses \
        --threads 1 --out bench/results/bench_kernels_rows.json   # dense vs centered sparse rows
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from _timing import median_time




def make_data(n, d, s, dtype, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d)).astype(dtype)
    W = (rng.standard_normal((d, s)) / np.sqrt(d)).astype(dtype)
    b = rng.uniform(0, 2 * np.pi, s).astype(dtype)
    B = rng.standard_normal((s, 1)).astype(dtype)
    return X, W, b, B


def status_kib(field):
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise RuntimeError(f"{field} not in /proc/self/status")


def reset_peak_rss():
    """Reset the resident-set high-water mark (Linux >= 4.0) and return the current RSS in KiB."""
    Path("/proc/self/clear_refs").write_text("5")
    return status_kib("VmRSS")


def gram_child(args):
    """Run one gram computation in this fresh process; print time and peak-RSS growth (MiB)."""
    from threadpoolctl import threadpool_limits

    from rffkern import kernels

    dtype = np.dtype(args.dtype).type
    X, W, b, _ = make_data(args.n, args.d, args.s, dtype)
    c = dtype(np.sqrt(2.0 / args.s))
    base = reset_peak_rss()
    with threadpool_limits(args.threads):
        t0 = time.perf_counter()
        if args.child == "rffkern":
            G = kernels.gram(X, W, b, n_threads=args.threads)
        else:
            Z = c * np.cos(X @ W + b)
            G = Z.T @ Z
        elapsed = time.perf_counter() - t0
    peak = status_kib("VmHWM")
    print(json.dumps({"time": elapsed, "mem_mib": (peak - base) / 1024.0, "check": float(G[0, 0])}))


def run_gram(n, d, s, dtype, threads, reps):
    out = {}
    for who in ("rffkern", "numpy"):
        times, mems = [], []
        for _ in range(reps):
            cmd = [sys.executable, __file__, "--child", who, "--n", str(n), "--d", str(d), "--s", str(s),
                   "--dtype", np.dtype(dtype).name, "--threads", str(threads)]
            res = json.loads(subprocess.run(cmd, capture_output=True, text=True, check=True).stdout)
            times.append(res["time"])
            mems.append(res["mem_mib"])
        out[who] = (float(np.median(times)), float(np.median(mems)))
    return out


def numpy_linear_loss(Z, Y, coef, w):
    """The closing fit's loss and gradient by two NumPy products (the baseline of the loss kernels)."""
    from scipy.special import expit, log_softmax

    F = (Z @ coef).astype(np.float64)
    if Y.shape[1] == 1:
        loss = w @ (np.logaddexp(0.0, F[:, 0]) - Y[:, 0] * F[:, 0])
        R = (expit(F) - Y) * w[:, None]
    else:
        logp = log_softmax(F, axis=1)
        loss = -w @ (Y * logp).sum(axis=1)
        R = (np.exp(logp) - Y) * w[:, None]
    return loss, Z.T @ R.astype(Z.dtype)


def run_losses(args):
    """Time the compiled closing-fit losses against numpy_linear_loss; returns the result rows."""
    from threadpoolctl import threadpool_limits

    from rffkern import kernels

    print(f"\nclosing-fit losses on formed features, s={args.s}, median of {args.reps}")
    header = f"{'n':>6} {'m':>3} {'dtype':>7} {'thr':>3} | {'rffkern':>8} {'numpy':>8} {'x':>5}"
    print(header)
    print("-" * len(header))
    rows = []
    rng = np.random.default_rng(0)
    for n in args.loss_n:
        for m in args.loss_outputs:
            for dt in args.dtypes:
                Z = (rng.standard_normal((n, args.s)) * np.sqrt(2.0 / args.s)).astype(dt)
                coef = rng.standard_normal((args.s, m)).astype(dt)
                labels = rng.integers(max(m, 2), size=n)
                Y = (labels == 1).astype(np.float64)[:, None] if m == 1 else np.eye(m)[labels]
                w = np.full(n, 1.0 / n)
                y, coef_t = np.ascontiguousarray(Y[:, 0]), np.ascontiguousarray(coef.T)
                for nt in args.threads:
                    # the unchecked entry points the closing fit calls every L-BFGS evaluation: the
                    # public functions' input checks (a finiteness scan of Z) would add a pass over Z
                    if m == 1:
                        def compiled():
                            return kernels._logistic_loss_grad(Z, y, coef_t[0], w, nt)
                    else:
                        def compiled():
                            return kernels._softmax_loss_grad(Z, Y, coef_t, w, nt)
                    with threadpool_limits(nt):
                        t_k = median_time(compiled, args.reps)
                        t_n = median_time(lambda: numpy_linear_loss(Z, Y, coef, w), args.reps)
                    rows.append(dict(kernel="logistic_loss_grad" if m == 1 else "softmax_loss_grad", n=n,
                                     outputs=m, s=args.s, dtype=dt, threads=nt, loss_s=t_k, numpy_loss_s=t_n))
                    print(f"{n:>6} {m:>3} {dt:>7} {nt:>3} | {t_k*1e3:6.2f}ms {t_n*1e3:6.2f}ms {t_n/t_k:5.2f}",
                          flush=True)
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--d", type=int, nargs="+", default=[100, 10])
    ap.add_argument("--s", type=int, default=1000)
    ap.add_argument("--gram-n", type=int, default=200_000, help="rows for the gram comparison")
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--dtypes", nargs="+", default=["float64", "float32"])
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--gram-reps", type=int, default=3)
    ap.add_argument("--skip-gram", action="store_true")
    ap.add_argument("--skip-features", action="store_true", help="skip the features/predict table")
    ap.add_argument("--loss-n", type=int, nargs="+", default=[1293, 6400, 40000],
                    help="rows for the closing-fit loss comparison")
    ap.add_argument("--loss-outputs", type=int, nargs="+", default=[1, 10],
                    help="outputs (1: logistic_loss_grad, more: softmax_loss_grad)")
    ap.add_argument("--skip-losses", action="store_true")
    ap.add_argument("--sparse-rows", action="store_true", help="the centered sparse rows table")
    ap.add_argument("--rows-n", type=int, default=9000, help="rows of the sparse-rows table")
    ap.add_argument("--rows-shapes", nargs="+", default=["300:0.04", "123:0.11", "784:0.19", "784:0.27",
                                                          "100:0.3", "100:0.5"],
                    help="d:share of stored entries, for the sparse-rows table")
    ap.add_argument("--out", default=None, help="JSON path (default bench/results/bench_kernels.json)")
    ap.add_argument("--child", choices=["rffkern", "numpy"], help=argparse.SUPPRESS)
    ap.add_argument("--dtype", default="float64", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        args.d = args.d[0]
        args.threads = args.threads[0]
        return gram_child(args)

    from rffkern import _core, kernels

    print(f"rffkern kernels: isa={_core.active_isa()} libmvec={_core.have_libmvec()}; "
          f"n={args.n}, s={args.s}, median of {args.reps}")
    rows = []
    if not args.skip_features:
        rows += run_features(args, kernels)
    if not args.skip_gram:
        rows += run_grams(args)
    if not args.skip_losses:
        rows += run_losses(args)
    if args.sparse_rows:
        rows += run_sparse_rows(args, kernels)
    outdir = Path(__file__).resolve().parent / "results"
    outdir.mkdir(exist_ok=True)
    path = Path(args.out) if args.out else outdir / "bench_kernels.json"
    path.write_text(json.dumps({"isa": _core.active_isa(), "cores": os.cpu_count(), "rows": rows}, indent=1))
    print(f"\nJSON: {path}")


def run_features(args, kernels):
    """The features / predict table; returns its result rows."""
    from sklearn.kernel_approximation import RBFSampler
    from threadpoolctl import threadpool_limits

    rows = []
    header = (f"{'d':>4} {'dtype':>7} {'thr':>3} | {'features':>9} {'numpy':>8} {'x':>5} {'RBFSampler':>10} {'x':>5}"
              f" | {'predict':>8} {'numpy':>8} {'x':>5}")
    print(header)
    print("-" * len(header))
    for d in args.d:
        for dt in args.dtypes:
            dtype = np.dtype(dt).type
            X, W, b, B = make_data(args.n, d, args.s, dtype)
            c = dtype(np.sqrt(2.0 / args.s))
            rbf = RBFSampler(n_components=args.s, random_state=0).fit(X)
            out = np.empty((args.n, args.s), dtype)
            for nt in args.threads:
                with threadpool_limits(nt):
                    t_feat = median_time(lambda: kernels.features(X, W, b, out=out, n_threads=nt), args.reps)
                    t_np = median_time(lambda: c * np.cos(X @ W + b), args.reps)
                    t_rbf = median_time(lambda: rbf.transform(X), args.reps)
                    t_pred = median_time(lambda: kernels.predict(X, W, b, B, n_threads=nt), args.reps)
                    t_np_pred = median_time(lambda: (c * np.cos(X @ W + b)) @ B, args.reps)
                row = dict(kernel="features/predict", n=args.n, d=d, s=args.s, dtype=dt, threads=nt,
                           features_s=t_feat, numpy_features_s=t_np, rbfsampler_s=t_rbf,
                           predict_s=t_pred, numpy_predict_s=t_np_pred)
                rows.append(row)
                print(f"{d:>4} {dt:>7} {nt:>3} | {t_feat*1e3:7.0f}ms {t_np*1e3:6.0f}ms {t_np/t_feat:5.2f}"
                      f" {t_rbf*1e3:8.0f}ms {t_rbf/t_feat:5.2f} | {t_pred*1e3:6.0f}ms {t_np_pred*1e3:6.0f}ms"
                      f" {t_np_pred/t_pred:5.2f}", flush=True)
            del out
    return rows


def run_sparse_rows(args, kernels):
    """The centered-sparse-rows table: each kernel on the rows against itself on the dense X."""
    import scipy.sparse as sp
    from threadpoolctl import threadpool_limits

    rows = []
    print(f"\ncentered sparse rows, n={args.rows_n}, s={args.s}: dense time / rows time (> 1: the rows are faster)")
    header = (f"{'d':>4} {'share':>5} {'dtype':>7} {'thr':>3} | {'epoch':>7} {'x':>5} | {'features':>8} {'x':>5}"
              f" {'scipy x':>7} | {'predict':>7} {'x':>5} {'scipy x':>7} | {'gram':>7} {'x':>5}")
    print(header)
    print("-" * len(header))
    for shape in args.rows_shapes:
        d, share = int(shape.split(":")[0]), float(shape.split(":")[1])
        for dt in args.dtypes:
            dtype = np.dtype(dt).type
            rng = np.random.default_rng(0)
            X = np.where(rng.random((args.rows_n, d)) < share, rng.standard_normal((args.rows_n, d)), 0.0)
            X = X.astype(dtype)
            _, W, b, B = make_data(1, d, args.s, dtype)
            Y = rng.standard_normal((args.rows_n, 1)).astype(dtype)
            crows = kernels.CenteredRows.from_dense(X)
            Xcsr = sp.csr_matrix(X)
            c = dtype(np.sqrt(2.0 / args.s))
            order = rng.permutation(args.rows_n)
            for nt in args.threads:
                def epoch(r):
                    theta, coef = np.ones(d, dtype), np.zeros((args.s, 1), dtype)
                    state = kernels.AdamState(coef.shape, d, dtype)
                    return lambda: kernels.train_epoch(X, Y, order, W, b, theta, coef, state, rows=r,
                                                       check_finite=False, n_threads=nt)
                with threadpool_limits(nt):
                    t_ep = [median_time(epoch(r), args.reps) for r in (None, crows)]
                    t_f = [median_time(lambda r=r: kernels.features(X, W, b, rows=r, n_threads=nt), args.reps)
                           for r in (None, crows)]
                    t_p = [median_time(lambda r=r: kernels.predict(X, W, b, B, rows=r, n_threads=nt), args.reps)
                           for r in (None, crows)]
                    t_g = [median_time(lambda r=r: kernels.gram(X, W, b, Y, rows=r, n_threads=nt), args.reps)
                           for r in (None, crows)]
                    t_sf = median_time(lambda: c * np.cos(Xcsr @ W + b), args.reps)
                    t_sp = median_time(lambda: (c * np.cos(Xcsr @ W + b)) @ B, args.reps)
                rows.append(dict(kernel="centered_rows", n=args.rows_n, d=d, share=crows.density, s=args.s,
                                 dtype=dt, threads=nt, epoch_dense_s=t_ep[0], epoch_rows_s=t_ep[1],
                                 features_dense_s=t_f[0], features_rows_s=t_f[1], scipy_features_s=t_sf,
                                 predict_dense_s=t_p[0], predict_rows_s=t_p[1], scipy_predict_s=t_sp,
                                 gram_dense_s=t_g[0], gram_rows_s=t_g[1]))
                print(f"{d:>4} {crows.density:5.3f} {dt:>7} {nt:>3} | {t_ep[1]*1e3:5.0f}ms {t_ep[0]/t_ep[1]:5.2f} |"
                      f" {t_f[1]*1e3:6.0f}ms {t_f[0]/t_f[1]:5.2f} {t_sf/t_f[1]:7.2f} |"
                      f" {t_p[1]*1e3:5.0f}ms {t_p[0]/t_p[1]:5.2f} {t_sp/t_p[1]:7.2f} |"
                      f" {t_g[1]*1e3:5.0f}ms {t_g[0]/t_g[1]:5.2f}", flush=True)
    return rows


def run_grams(args):
    """The gram table (fresh processes); returns its result rows."""
    rows = []
    print(f"\ngram (Z.T @ Z), n={args.gram_n}, s={args.s}, median of {args.gram_reps} fresh processes")
    header = (f"{'d':>4} {'dtype':>7} {'thr':>3} | {'rffkern':>8} {'numpy':>8} {'time x':>6} | "
              f"{'mem MiB':>8} {'numpy':>8} {'mem /':>6}")
    print(header)
    print("-" * len(header))
    for dt in args.dtypes:
        for nt in args.threads:
            res = run_gram(args.gram_n, args.d[0], args.s, dt, nt, args.gram_reps)
            (t_r, m_r), (t_n, m_n) = res["rffkern"], res["numpy"]
            rows.append(dict(kernel="gram", n=args.gram_n, d=args.d[0], s=args.s, dtype=dt, threads=nt,
                             gram_s=t_r, numpy_gram_s=t_n, gram_mem_mib=m_r, numpy_gram_mem_mib=m_n))
            print(f"{args.d[0]:>4} {dt:>7} {nt:>3} | {t_r*1e3:6.0f}ms {t_n*1e3:6.0f}ms {t_n/t_r:6.2f} | "
                  f"{m_r:8.1f} {m_n:8.1f} {m_n/max(m_r, 0.1):6.1f}", flush=True)
    return rows


if __name__ == "__main__":
    main()
