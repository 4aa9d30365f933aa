"""Weighted fits on Dask against the same weighted fits in memory, on real tables with raw X and y.

For each data set (the first ``--rows`` rows; weights drawn uniform on [0, 2], every 7th row 0),
RFFRidge, EERF, SRFF and adaptive RFF are fitted in memory and on a loopback cluster of 2 worker
processes (X in chunks of 700 rows, the weights in chunks of 500): the relative difference of their
predictions, the weighted training R^2, and both fit times (the cluster's per-pass round trips
included). Usage::

    python bench/bench_dask_weights.py [--rows 3000] [DATA.csv.gz ...]
"""
from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
import pandas as pd
from sklearn.base import clone

import rffkern

DEFAULT_SETS = ["../shared/datasets/abalone.csv.gz", "../shared/datasets/messy/txhousing.csv.gz"]


def _load(path, rows):
    """X and y (the last column) of a numeric table, rows with a missing value dropped."""
    df = pd.read_csv(path).select_dtypes("number").dropna()
    return df.iloc[:rows, :-1].to_numpy(float), df.iloc[:rows, -1].to_numpy(float)


def _estimators(d):
    return [rffkern.RFFRidge(200, alpha=[1e-3, 1e-2, 1e-1], standardize=True, random_state=0,
                             length_scale=[0.5 * np.sqrt(d), np.sqrt(d)]),
            rffkern.EERFRegressor(100, alpha=[1e-3, 1e-2, 1e-1], standardize=True, random_state=0),
            rffkern.SRFFRegressor(50, alpha=1e-3, max_iter=3, random_state=0),
            rffkern.AdaptiveRFFRegressor(32, n_iter=20, final_alpha=[1e-4, 1e-3, 1e-2], standardize=True,
                                         random_state=0)]


def main(argv=None):
    import dask.array as da
    from distributed import Client, LocalCluster

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="*", default=DEFAULT_SETS)
    parser.add_argument("--rows", type=int, default=3000)
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")
    with LocalCluster(n_workers=2, threads_per_worker=1, host="127.0.0.1", dashboard_address=None) as cluster, \
            Client(cluster):
        print(f"{'data set':24s} {'estimator':22s} {'pred rel diff':>13s} {'train wR2':>9s} {'memory s':>8s} "
              f"{'Dask s':>7s}")
        for path in args.paths:
            X, y = _load(path, args.rows)
            w = np.random.default_rng(0).uniform(0.0, 2.0, len(y))
            w[::7] = 0.0
            Xd = da.from_array(X, chunks=(700, X.shape[1]))
            yd, wd = da.from_array(y, chunks=700), da.from_array(w, chunks=500)
            for est in _estimators(X.shape[1]):
                t = time.perf_counter()
                single = clone(est).fit(X, y, sample_weight=w)
                t_memory = time.perf_counter() - t
                t = time.perf_counter()
                dist = clone(est).fit(Xd, yd, sample_weight=wd)
                t_dask = time.perf_counter() - t
                p1, p2 = single.predict(X), dist.predict(X)
                diff = float(np.max(np.abs(p2 - p1)) / np.max(np.abs(p1)))
                r2 = 1 - np.average((y - p1) ** 2, weights=w) / np.average((y - np.average(y, weights=w)) ** 2,
                                                                         weights=w)
                print(f"{path.split('/')[-1]:24s} {type(est).__name__:22s} {diff:13.1e} {r2:9.3f} {t_memory:8.2f} "
                      f"{t_dask:7.2f}")


if __name__ == "__main__":
    main()
