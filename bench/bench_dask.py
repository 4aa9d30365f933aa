"""Scale-out on Dask (issue 11): the memory-mapped n-row benchmark and the RFFNet data-parallel check.

``--part fit`` (the default): X (n x d float32, Gaussian) and y = sin(x0) + x1 x2 + 0.1 noise are
written once to memory-mapped ``.npy`` files and read by :func:`rffkern._dask_rffnet.from_npy`
(every task maps the file, copies its rows, unmaps). For 1 and 2 loopback workers (1 thread each,
``--memory-limit`` each) it times the exact distributed ``RFFRidge`` fit (fixed width and alpha,
GCV: a moments pass and a Gram pass) and ``predict`` (a lazy predict summed on the workers, so
nothing is gathered), and records the peak RSS of every worker (``VmHWM`` of /proc, reset before
each step). Then the single-process estimator on the data loaded into memory (1 thread, and as
many threads as workers), and scikit-learn's ``Nystroem + Ridge`` on ``--nystroem-rows`` rows
(all of them if that is n). Test RMSE on 100 000 fresh rows for every model.

It also measures the pieces of the cost model in this process, one thread: the per-chunk moments
and Gram (``kernels.gram`` of one chunk), one merge of two s x s Gram statistics, the pickled size
of one (what a worker sends up the reduction tree), and the O(s^3) solve; and the cost of the data-
driven width search (3 widths: 3 Gram passes, and alpha by LOO: one more pass per width), from the
per-chunk Gram cost.

``--part pieces`` measures only these per-chunk costs (on the file of ``--n`` rows); ``--part
nystroem`` only them and the Nystroem row. Nystroem's ``predict`` runs in blocks of 100 000 rows
(its kernel block is n x s float64: all 10M rows at once would take 80 GB at s = 1000).

``--part compare``: the in-memory float64 comparison of the distributed and the single-process
``RFFRidge`` fit (data persisted on the workers; fit-time ratio and relative differences).

``--part rffnet``: the data-parallel RFFNet fit (1 and 2 shards on 2 workers) against the
single-machine fit on gse2 (``make_gse2``) and elevators (/work/shared/datasets, raw X, y; a
seeded 80/20 split): test R^2, epochs run, seconds per epoch. ``--part rffnet-epoch``: seconds per
epoch (no early stopping) on the first ``--n`` rows of the ``--big-n``-row file, one process vs 1
and 2 workers.

    python bench/bench_dask.py --part fit [--n 1000000] [--d 20] [--s 1000] [--chunk 50000]
        [--memory-limit 1GB] [--workers 1,2] [--nystroem-rows 200000] [--dir /tmp] [--json out.json]
    python bench/bench_dask.py --part rffnet [--json out.json]
    python bench/bench_dask.py --part compare --n 200000 --s 1000 --workers 2 --chunk 20000 [--reps 3] [--defaults]
    python bench/bench_dask.py --part rffnet-epoch --n 1000000 --s 300 --epochs 2 [--chunk 100000]
"""
from __future__ import annotations

import argparse
import concurrent.futures
import copy
import json
import os
import pickle
import time

import numpy as np

import dask
import dask.array as da
import distributed
from rffkern import RFFNetRegressor, RFFRidge
from rffkern._dask import _Moments
from rffkern._dask_rffnet import CONFIG_KEY, from_npy
from rffkern._ridge_solvers import GramStats, LooPass, as_alpha_list, solve_ridge

TIMEOUT = 3600


def target(X, rng):
    return (np.sin(X[:, 0]) + X[:, 1] * X[:, 2] + 0.1 * rng.standard_normal(X.shape[0])).astype(np.float32)


def write_data(directory, n, d, block=500_000):
    """(X path, y path): X ~ N(0, 1) float32 and y, written block by block (never all in memory)."""
    xp, yp = os.path.join(directory, f"dscale_bench_X_{n}_{d}.npy"), os.path.join(directory, f"dscale_bench_y_{n}_{d}.npy")
    if os.path.exists(xp) and os.path.exists(yp):
        return xp, yp
    X = np.lib.format.open_memmap(xp + ".tmp", "w+", np.float32, (n, d))
    y = np.lib.format.open_memmap(yp + ".tmp", "w+", np.float32, (n,))
    for start in range(0, n, block):
        rng = np.random.default_rng([1, start])
        Xb = rng.standard_normal((min(block, n - start), d), dtype=np.float32)
        X[start:start + len(Xb)] = Xb
        y[start:start + len(Xb)] = target(Xb, rng)
    X.flush()
    y.flush()
    del X, y
    os.replace(xp + ".tmp", xp)
    os.replace(yp + ".tmp", yp)
    return xp, yp


def peak_rss_mb():
    with open("/proc/self/status") as f:
        fields = dict(line.split(":", 1) for line in f)
    return int(fields["VmHWM"].split()[0]) / 1024


def reset_peak():
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")


def timed(fn, *args):
    t0 = time.perf_counter()
    out = fn(*args)
    return out, time.perf_counter() - t0


def rmse(model, X, y):
    return float(np.sqrt(np.mean((model.predict(X) - y) ** 2)))


def median_of(fn, reps=3):
    times = []
    for _ in range(reps):
        _, t = timed(fn)
        times.append(t)
    return float(np.median(times))


def cost_pieces(X_chunk, y_chunk, s, params):
    """Per-chunk and reduction costs, one thread, in this process."""
    model = RFFRidge(s, n_jobs=1, **params).fit(X_chunk, y_chunk)  # a fitted map to time with
    fmap = model._map(model.weights_)
    Xs = model._standardized(X_chunk)
    Y = y_chunk.reshape(-1, 1).astype(Xs.dtype)
    t_moments = median_of(lambda: _Moments(np.hstack([X_chunk.astype(np.float64), Y.astype(np.float64)])))
    t_gram = median_of(lambda: GramStats(fmap.n_out, 1, Xs.dtype).add(fmap, Xs, Y))
    a = GramStats(fmap.n_out, 1, Xs.dtype).add(fmap, Xs, Y)
    b = GramStats(fmap.n_out, 1, Xs.dtype).add(fmap, Xs, Y)
    t_merge = median_of(lambda: copy.deepcopy(a).merge(b))
    nbytes = len(pickle.dumps(a, protocol=5))
    t_solve = median_of(lambda: solve_ridge(a, params["alpha"], True))
    alphas = as_alpha_list(RFFRidge().alpha)  # the default list: what the width search scores
    t_loo_setup = median_of(lambda: LooPass(a, alphas, True), reps=1)
    loo = LooPass(a, alphas, True)
    t_loo = median_of(lambda: loo.sse(fmap, Xs, Y), reps=1)
    return dict(chunk_rows=len(X_chunk), moments_s=t_moments, gram_s=t_gram, merge_s=t_merge,
                gram_bytes=nbytes, solve_s=t_solve, n_alphas=len(alphas), loo_setup_s=t_loo_setup,
                loo_chunk_s=t_loo)


def run_fit(args):
    xp, yp = write_data(args.dir, args.n, args.d)
    rng = np.random.default_rng(12345)
    X_test = rng.standard_normal((100_000, args.d), dtype=np.float32)
    y_test = target(X_test, rng)
    params = dict(length_scale=float(np.sqrt(args.d)), alpha=1e-3, alpha_selection="gcv", random_state=0)
    file_mb = (args.n * args.d * 4 + args.n * 4) / 2**20
    rows = []
    Xm = np.load(xp, mmap_mode="r")
    pieces = cost_pieces(np.array(Xm[:args.chunk]), np.array(np.load(yp, mmap_mode="r")[:args.chunk]), args.s, params)
    del Xm
    print(f"data {args.n} x {args.d} float32 + y: {file_mb:.0f} MB on disk; per-chunk costs ({args.chunk} rows, "
          f"1 thread): {json.dumps(pieces)}", flush=True)
    if args.part == "pieces":
        return dict(n=args.n, d=args.d, s=args.s, chunk=args.chunk, pieces=pieces)

    for n_workers in [int(w) for w in args.workers.split(",")] if args.part == "fit" else []:
        with distributed.LocalCluster(n_workers=n_workers, threads_per_worker=1, processes=True,
                                      dashboard_address=None, host="127.0.0.1",
                                      memory_limit=args.memory_limit) as cluster, \
                distributed.Client(cluster) as client:
            client.wait_for_workers(n_workers, timeout=120)
            client.run(lambda: __import__("rffkern.ridge"))
            base = client.run(peak_rss_mb)
            X, y = from_npy(xp, args.chunk), from_npy(yp, args.chunk)
            pool = concurrent.futures.ThreadPoolExecutor(1)
            client.run(reset_peak)
            model, t_fit = pool.submit(timed, RFFRidge(args.s, **params).fit, X, y).result(timeout=TIMEOUT)
            fit_rss = client.run(peak_rss_mb)
            client.run(reset_peak)
            _, t_pred = timed(lambda: client.compute(model.predict(X).sum()).result(timeout=TIMEOUT))
            pred_rss = client.run(peak_rss_mb)
            pool.shutdown()
            row = dict(model=f"RFFRidge on Dask, {n_workers} worker(s)", workers=n_workers, fit_s=t_fit,
                       predict_s=t_pred, rss_start_mb=max(base.values()), fit_peak_rss_mb=max(fit_rss.values()),
                       predict_peak_rss_mb=max(pred_rss.values()), test_rmse=rmse(model, X_test, y_test),
                       coef=model.coef_.tolist())
            rows.append(row)
            print(json.dumps({k: v for k, v in row.items() if k != "coef"}), flush=True)

    X_mem, y_mem = np.load(xp), np.load(yp)
    for threads in sorted({1, max(int(w) for w in args.workers.split(","))}) if args.part == "fit" else []:
        reset_peak()
        model, t_fit = timed(RFFRidge(args.s, n_jobs=threads, **params).fit, X_mem, y_mem)
        _, t_pred = timed(model.predict, X_mem)
        row = dict(model=f"RFFRidge in one process, {threads} thread(s)", workers=0, threads=threads, fit_s=t_fit,
                   predict_s=t_pred, process_peak_rss_mb=peak_rss_mb(), test_rmse=rmse(model, X_test, y_test))
        dists = [r for r in rows if "coef" in r]
        if dists:
            ref = np.asarray(model.coef_, np.float64)
            row["max_rel_coef_diff_vs_dask"] = max(float(np.max(np.abs(np.asarray(r["coef"]) - ref)) / np.max(np.abs(ref)))
                                                   for r in dists)
        rows.append(row)
        print(json.dumps(row), flush=True)

    from sklearn.kernel_approximation import Nystroem
    from sklearn.linear_model import Ridge
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    m = min(args.nystroem_rows, args.n)
    reset_peak()
    gamma = 1.0 / (2 * params["length_scale"] ** 2)
    nys = make_pipeline(StandardScaler(), Nystroem(gamma=gamma, n_components=args.s, random_state=0),
                        Ridge(alpha=params["alpha"]))  # rffkern's alpha: (ZᵀZ + alpha I), not per sample
    _, t_fit = timed(nys.fit, X_mem[:m], y_mem[:m])
    _, t_pred = timed(lambda: [nys.predict(X_mem[i:i + 100_000]) for i in range(0, args.n, 100_000)])
    row = dict(model=f"sklearn Nystroem + Ridge on {m} rows", workers=0, rows=m, fit_s=t_fit, predict_s=t_pred,
               process_peak_rss_mb=peak_rss_mb(), test_rmse=float(np.sqrt(np.mean((nys.predict(X_test) - y_test) ** 2))))
    rows.append(row)
    print(json.dumps(row), flush=True)
    for r in rows:
        r.pop("coef", None)
    return dict(n=args.n, d=args.d, s=args.s, chunk=args.chunk, memory_limit=args.memory_limit, file_mb=file_mb,
                pieces=pieces, rows=rows)


def load_elevators():
    import pandas as pd
    frame = pd.read_csv("/work/shared/datasets/elevators.csv.gz")
    X, y = frame.drop(columns="target").to_numpy(np.float64), frame["target"].to_numpy(np.float64)
    perm = np.random.default_rng(0).permutation(len(y))
    cut = int(0.8 * len(y))
    return X[perm[:cut]], y[perm[:cut]], X[perm[cut:]], y[perm[cut:]]


def run_rffnet(args):
    from rffkern.datasets import make_gse2
    X, y, _ = make_gse2(20000, random_state=0)
    Xt, yt, _ = make_gse2(5000, random_state=1)
    sets = [("gse2 (n=20000, d=100)", X, y, Xt, yt), ("elevators (n=13279, d=18)", *load_elevators())]
    params = dict(n_components=300, max_iter=args.epochs, random_state=0, n_jobs=1)
    rows = []
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                                  host="127.0.0.1") as cluster, distributed.Client(cluster) as client:
        client.wait_for_workers(2, timeout=120)
        for name, X, y, Xt, yt in sets:
            chunk = -(-len(y) // 8)
            single, t = timed(RFFNetRegressor(**params).fit, X, y)
            rows.append(dict(data=name, fit="one process", r2=single.score(Xt, yt), epochs=single.n_iter_,
                             s_per_epoch=t / single.n_iter_))
            print(json.dumps(rows[-1]), flush=True)
            Xd = client.persist(da.from_array(X, chunks=(chunk, X.shape[1])))
            yd = client.persist(da.from_array(y, chunks=chunk))
            distributed.wait([Xd, yd], timeout=120)
            # the last case divides learning_rate by the shards: the shards step with the unscaled rate
            for shards, lr_factor, label in ((1, 1.0, ""), (2, 1.0, ""), (2, 0.5, ", no lr scaling")):
                with dask.config.set({CONFIG_KEY: shards}):
                    net = RFFNetRegressor(learning_rate=1e-3 * lr_factor, **params)
                    dist, t = timed(net.fit, Xd, yd)
                rows.append(dict(data=name, fit=f"Dask, 2 workers, {shards} shard(s){label}", r2=dist.score(Xt, yt),
                                 epochs=dist.n_iter_, s_per_epoch=t / dist.n_iter_))
                print(json.dumps(rows[-1]), flush=True)
    return dict(rows=rows)


def run_rffnet_epoch(args):
    """Seconds per RFFNet epoch on the first --n rows of the memory-mapped file: one process (1
    thread) and the data-parallel fit on 1 and 2 workers (as many shards), --epochs epochs."""
    xp, yp = write_data(args.dir, args.big_n, args.d)
    params = dict(n_components=args.s, max_iter=args.epochs, early_stopping=False, random_state=0, n_jobs=1)
    X_mem, y_mem = np.array(np.load(xp, mmap_mode="r")[:args.n]), np.array(np.load(yp, mmap_mode="r")[:args.n])
    single, t = timed(RFFNetRegressor(**params).fit, X_mem, y_mem)
    rows = [dict(fit="one process, 1 thread", s_per_epoch=t / args.epochs, final_train_loss=single.loss_curve_[-1])]
    print(json.dumps(rows[-1]), flush=True)
    for n_workers in [int(w) for w in args.workers.split(",")]:
        with distributed.LocalCluster(n_workers=n_workers, threads_per_worker=1, processes=True,
                                      dashboard_address=None, host="127.0.0.1",
                                      memory_limit=args.memory_limit) as cluster, \
                distributed.Client(cluster) as client:
            client.wait_for_workers(n_workers, timeout=120)
            X, y = from_npy(xp, args.chunk)[:args.n], from_npy(yp, args.chunk)[:args.n]
            client.run(reset_peak)
            model, t = timed(RFFNetRegressor(**params).fit, X, y)
            rows.append(dict(fit=f"Dask, {n_workers} worker(s) = shards", s_per_epoch=t / args.epochs,
                             final_train_loss=model.loss_curve_[-1], peak_rss_mb=max(client.run(peak_rss_mb).values())))
            print(json.dumps(rows[-1]), flush=True)
    return dict(n=args.n, d=args.d, s=args.s, chunk=args.chunk, epochs=args.epochs, rows=rows)


def relative(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return float(np.max(np.abs(a - b)) / np.max(np.abs(b)))


def run_compare(args):
    """The in-memory float64 comparison: X (n x d Gaussian) and y persisted on the workers (not
    timed), the median fit time of the distributed RFFRidge fit against the NumPy fit in this
    process with as many threads as the cluster has, and the largest relative differences of
    coef_, intercept_ and the predictions (fixed width, alpha, GCV; ``--defaults`` adds the
    data-driven defaults: 3 widths, 23 alphas by LOO)."""
    from _timing import median_time

    rng = np.random.default_rng(0)
    X = rng.standard_normal((args.n, args.d))
    y = np.sin(X[:, 0]) + X[:, 1] * X[:, 2] + 0.1 * rng.standard_normal(args.n)
    cases = [("fixed width, alpha 1e-3, GCV", dict(length_scale=float(np.sqrt(args.d)), alpha=1e-3, alpha_selection="gcv"))]
    if args.defaults:
        cases.append(("defaults (3 widths, 23 alphas, LOO)", {}))
    workers = max(int(w) for w in args.workers.split(","))
    rows = []
    with distributed.LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                                  dashboard_address=None, host="127.0.0.1") as cluster, \
            distributed.Client(cluster) as client:
        Xd = client.persist(da.from_array(X, chunks=(args.chunk, args.d)))
        yd = client.persist(da.from_array(y, chunks=args.chunk))
        distributed.wait([Xd, yd], timeout=300)
        for name, params in cases:
            def single():
                return RFFRidge(args.s, random_state=0, n_jobs=workers, **params).fit(X, y)

            def dist():
                return RFFRidge(args.s, random_state=0, **params).fit(Xd, yd)

            t_single, t_dist = median_time(single, args.reps), median_time(dist, args.reps)
            a, b = single(), dist()
            pred = client.compute(b.predict(Xd)).result(timeout=300)
            rows.append(dict(case=name, n=args.n, d=args.d, s=args.s, workers=workers, chunk=args.chunk,
                             single_s=t_single, distributed_s=t_dist, ratio=t_dist / t_single,
                             coef_rel=relative(b.coef_, a.coef_), intercept_rel=relative(b.intercept_, a.intercept_),
                             predict_rel=relative(pred, a.predict(X))))
            print(json.dumps(rows[-1]), flush=True)
    return dict(rows=rows)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", choices=("fit", "pieces", "nystroem", "rffnet", "rffnet-epoch", "compare"),
                        default="fit")
    parser.add_argument("--reps", type=int, default=3, help="compare: timed repetitions")
    parser.add_argument("--defaults", action="store_true", help="compare: also the data-driven defaults")
    parser.add_argument("--big-n", type=int, default=10_000_000, help="rffnet-epoch: rows of the file to read from")
    parser.add_argument("--n", type=int, default=10_000_000)
    parser.add_argument("--d", type=int, default=20)
    parser.add_argument("--s", type=int, default=1000)
    parser.add_argument("--chunk", type=int, default=100_000)
    parser.add_argument("--workers", default="1,2")
    parser.add_argument("--memory-limit", default="1GB")
    parser.add_argument("--nystroem-rows", type=int, default=200_000)
    parser.add_argument("--epochs", type=int, default=100)
    parser.add_argument("--dir", default="/tmp")
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    if args.part == "rffnet":
        out = run_rffnet(args)
    elif args.part == "rffnet-epoch":
        out = run_rffnet_epoch(args)
    elif args.part == "compare":
        out = run_compare(args)
    else:
        out = run_fit(args)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
