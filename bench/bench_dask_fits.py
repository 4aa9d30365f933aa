"""Distributed EERF, SRFF and adaptive RFF fits on a loopback dask.distributed cluster vs one process.

X (n x d float64, Gaussian) and y are persisted on the workers first (not timed). For every case the
table gives the median fit time of the single-process fit (NumPy arrays, as many threads as the
cluster has) and of the distributed fit (``fit`` on Dask arrays: :mod:`rffkern._dask_fits`), their
ratio, the passes over the data the distributed fit made (each a round trip client -> workers ->
client; the time of a trivial one is printed first), and the largest relative difference of
``coef_`` and of the predictions. ``--cases ""`` prints only the round trip.

    python bench/bench_dask_fits.py [--n 200000] [--d 20] [--workers 2] [--chunk 25000] [--reps 3]
                                    [--cases eerf,eerf-clf,srff,adaptive] [--json out.json]
"""
from __future__ import annotations

import argparse
import json

import numpy as np
from _timing import median_time

import dask.array as da
import distributed
from rffkern import EERFClassifier, EERFRegressor, SRFFRegressor
from rffkern.adaptive import AdaptiveRFFRegressor


def relative(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return float(np.max(np.abs(a - b)) / np.max(np.abs(b)))


CASES = {
    "eerf": ("EERFRegressor(300), defaults", EERFRegressor, dict(n_components=300), "y"),
    "eerf-clf": ("EERFClassifier(300), defaults", EERFClassifier, dict(n_components=300), "labels"),
    "srff": ("SRFFRegressor(200), alpha 1e-3, 3x3 iter", SRFFRegressor,
             dict(n_components=200, alpha=1e-3, max_iter=3, max_inner_iter=3), "y"),
    "adaptive": ("AdaptiveRFFRegressor(64), 10 iter", AdaptiveRFFRegressor,
                 dict(n_components=64, n_iter=10), "y"),
}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=200_000)
    parser.add_argument("--d", type=int, default=20)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--chunk", type=int, default=25_000)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--cases", default=",".join(CASES))
    parser.add_argument("--json", default=None)
    args = parser.parse_args()

    rng = np.random.default_rng(0)
    X = rng.standard_normal((args.n, args.d))
    y = np.sin(X[:, 0]) + X[:, 1] * X[:, 2] + 0.1 * rng.standard_normal(args.n)
    targets = {"y": y, "labels": (y > np.median(y)).astype(int)}

    rows = []
    with distributed.LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True,
                                  dashboard_address=None, host="127.0.0.1") as cluster, \
            distributed.Client(cluster) as client:
        Xd = client.persist(da.from_array(X, chunks=(args.chunk, args.d)))
        yd = {k: client.persist(da.from_array(v, chunks=args.chunk)) for k, v in targets.items()}
        distributed.wait([Xd, *yd.values()], timeout=300)
        # one round trip client -> workers -> client, as every pass makes (a column sum of X)
        round_trip = median_time(lambda: Xd.sum(axis=0).compute(), 20)
        print(f"round trip of a trivial pass over X: {round_trip * 1e3:.0f} ms", flush=True)
        for key in filter(None, args.cases.split(",")):
            name, cls, params, target = CASES[key]

            def single():
                return cls(random_state=0, n_jobs=args.workers, **params).fit(X, targets[target])

            def dist():
                return cls(random_state=0, **params).fit(Xd, yd[target])

            t_single, t_dist = median_time(single, args.reps), median_time(dist, args.reps)
            a, b = single(), dist()
            pred = client.compute(b.predict(Xd)).result(timeout=300)
            rows.append(dict(case=name, n=args.n, d=args.d, workers=args.workers, chunk=args.chunk,
                             single_s=t_single, distributed_s=t_dist, ratio=t_dist / t_single,
                             passes=b._n_dask_passes, coef_rel=relative(b.coef_, a.coef_),
                             predict_rel=relative(pred, a.predict(X)) if pred.dtype.kind == "f"
                             else float(np.mean(pred != a.predict(X)))))
            r = rows[-1]
            print(f"{r['case']:42s} {r['single_s']:9.2f} {r['distributed_s']:8.2f} {r['ratio']:6.2f} "
                  f"{r['passes']:7d} {r['coef_rel']:9.1e} {r['predict_rel']:9.1e}", flush=True)

    print(f"\n{'case':42s} {'single s':>9s} {'dask s':>8s} {'ratio':>6s} {'passes':>7s} {'coef rel':>9s} "
          f"{'pred rel':>9s}")
    for r in rows:
        print(f"{r['case']:42s} {r['single_s']:9.2f} {r['distributed_s']:8.2f} {r['ratio']:6.2f} "
              f"{r['passes']:7d} {r['coef_rel']:9.1e} {r['predict_rel']:9.1e}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
