"""Distributed RFFRidge fit on a loopback dask.distributed cluster vs the single-process fit.

X (n x d float64, Gaussian) and y are persisted on the workers first (not timed); the table gives the
median fit time of the distributed fit (``RFFRidge.fit`` on Dask arrays: moments pass, Gram pass,
tree reduction, solve on the client) against the NumPy fit in this process with as many threads as
the cluster has, their ratio, and the largest relative difference of coef_, intercept_ and the
predictions. Hyper-parameters are fixed (width, alpha, GCV) so that the two fits are the same model;
``--defaults`` also times the data-driven defaults (3 widths, 23 alphas by LOO: two more passes).

    python bench/bench_dask.py [--n 200000] [--d 20] [--s 1000] [--workers 2] [--chunk 20000] [--reps 3]

This is the small comparison of issue 11; the 10M-row memory-mapped benchmark is not written yet.
"""
from __future__ import annotations

import argparse
import json

import numpy as np
from _timing import median_time

import dask.array as da
import distributed
from rffkern import RFFRidge


def relative(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return float(np.max(np.abs(a - b)) / np.max(np.abs(b)))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=200_000)
    parser.add_argument("--d", type=int, default=20)
    parser.add_argument("--s", type=int, default=1000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--chunk", type=int, default=20_000)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--defaults", action="store_true")
    parser.add_argument("--json", default=None)
    args = parser.parse_args()

    rng = np.random.default_rng(0)
    X = rng.standard_normal((args.n, args.d))
    y = np.sin(X[:, 0]) + X[:, 1] * X[:, 2] + 0.1 * rng.standard_normal(args.n)
    cases = [("fixed width, alpha 1e-3, GCV",
              dict(length_scale=float(np.sqrt(args.d)), alpha=1e-3, alpha_selection="gcv"))]
    if args.defaults:
        cases.append(("defaults (3 widths, 23 alphas, LOO)", {}))

    rows = []
    with distributed.LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True,
                                  dashboard_address=None, host="127.0.0.1") as cluster, \
            distributed.Client(cluster) as client:
        Xd = client.persist(da.from_array(X, chunks=(args.chunk, args.d)))
        yd = client.persist(da.from_array(y, chunks=args.chunk))
        distributed.wait([Xd, yd], timeout=300)
        for name, params in cases:
            def single():
                return RFFRidge(args.s, random_state=0, n_jobs=args.workers, **params).fit(X, y)

            def dist():
                return RFFRidge(args.s, random_state=0, **params).fit(Xd, yd)

            t_single, t_dist = median_time(single, args.reps), median_time(dist, args.reps)
            a, b = single(), dist()
            pred = client.compute(b.predict(Xd)).result(timeout=300)
            rows.append(dict(case=name, n=args.n, d=args.d, s=args.s, workers=args.workers, chunk=args.chunk,
                             single_s=t_single, distributed_s=t_dist, ratio=t_dist / t_single,
                             coef_rel=relative(b.coef_, a.coef_),
                             intercept_rel=relative(b.intercept_, a.intercept_),
                             predict_rel=relative(pred, a.predict(X)),
                             alpha=(a.alpha_, b.alpha_), length_scale=(a.length_scale_, b.length_scale_)))

    print(f"{'case':38s} {'single s':>9s} {'dask s':>8s} {'ratio':>6s} {'coef rel':>9s} {'pred rel':>9s}")
    for r in rows:
        print(f"{r['case']:38s} {r['single_s']:9.2f} {r['distributed_s']:8.2f} {r['ratio']:6.2f} "
              f"{r['coef_rel']:9.1e} {r['predict_rel']:9.1e}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
