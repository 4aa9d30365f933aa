"""How fast can a random-feature ridge be, against the Nystroem pipeline, on each real data set?

The issue "Trustworthy by default" asks ``rffkern.fit`` for at most 1/3 of the fit time of
scikit-learn's ``StandardScaler + Nystroem(1000) + RidgeCV`` pipeline on every data set of
``bench_realdata.py``. This script measures, on the same splits and in one process, what the
cheapest rffkern model costs there, so that a target below it is seen to be out of reach:

    nys       the Nystroem pipeline of ``bench_realdata.py`` (median-heuristic width, 6 alphas)
    fixed     ``RFFRidge`` / ``RFFRidgeClassifier`` with the width and penalty ``RFFRidge()``
              chose, passed in: no search at all (one Gram pass, one solve, the importances and,
              for classes, the probability temperature) -- the least a 1000-feature model costs
    ridge     ``RFFRidge()`` / ``RFFRidgeClassifier()`` at its defaults (width and penalty searched)
    fit       ``rffkern.fit(X, y, random_state=seed)``

Each time is the median of ``--reps`` fits in a row (1 where the pipeline takes over ``--long`` seconds),
printed with its ratio to the pipeline's, beside the test error (RMSE/sd or 1 - accuracy) and the
better of the two kernel pipelines' error (``rbf_sampler`` fitted once). One thread for
everything by default (``OMP_NUM_THREADS=1`` is set before rffkern loads; BLAS pinned by
threadpoolctl), as the benchmark tables of docs/benchmarks.rst.

    python bench/bench_fit_floor.py                                  # every data set, seed 0
    python bench/bench_fit_floor.py --datasets diabetes breast_cancer --reps 5
"""
from __future__ import annotations

import argparse
import os
import sys
import time
import warnings
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402
from threadpoolctl import threadpool_limits  # noqa: E402

import bench_realdata as br  # noqa: E402
import rffkern  # noqa: E402


def _error(model, task, X, y):
    return br.score(model, task, X, y)["err"]  # RMSE/sd or 1 - accuracy, as bench_realdata's tables


def _timed(make, X, y, reps):
    times, model = [], None
    for _ in range(reps):
        t0 = time.perf_counter()
        model = make().fit(X, y)
        times.append(time.perf_counter() - t0)
    return float(np.median(times)), model


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="*", default=None)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--long", type=float, default=5.0,
                        help="one fit only where the pipeline takes longer than this many seconds")
    args = parser.parse_args(argv)
    br.refuse_stale_rffkern(parser)
    catalogue = br.dataset_catalogue()
    names = args.datasets or list(catalogue)
    warnings.filterwarnings("ignore", message="n_components > n_samples")
    header = (f"{'data set':20s} {'n_train':>7s} {'d':>4s} {'nys s':>7s} {'fixed s (x)':>14s} {'ridge s (x)':>14s} "
              f"{'fit s (x)':>14s} | {'best pipe':>9s} {'fixed':>7s} {'ridge':>7s} {'fit':>7s}")
    print(header)
    print("-" * len(header))
    with threadpool_limits(limits=1, user_api="blas"):
        for name in names:
            task = catalogue[name]["task"]
            X_tr, X_te, y_tr, y_te = br.split_dataset(br.load_dataset(name, catalogue), task, args.seed, None)
            seed = args.seed
            t_nys, nys = _timed(lambda: br.METHODS["nystroem"](task, seed), X_tr, y_tr, 1)
            reps = 1 if t_nys > args.long else args.reps
            if reps > 1:
                t_nys, nys = _timed(lambda: br.METHODS["nystroem"](task, seed), X_tr, y_tr, reps)
            rbf = br.METHODS["rbf_sampler"](task, seed).fit(X_tr, y_tr)
            best = min(_error(nys, task, X_te, y_te), _error(rbf, task, X_te, y_te))
            ridge_cls = rffkern.RFFRidge if task == "regression" else rffkern.RFFRidgeClassifier
            t_ridge, ridge = _timed(lambda: ridge_cls(random_state=seed), X_tr, y_tr, reps)
            t_fixed, fixed = _timed(lambda: ridge_cls(length_scale=ridge.length_scale_, alpha=ridge.alpha_,
                                                      standardize=ridge.standardize_, random_state=seed),
                                    X_tr, y_tr, reps)
            t_fit, fit = _timed(lambda: br.RffkernFit(random_state=seed), X_tr, y_tr, reps)
            print(f"{name:20s} {X_tr.shape[0]:7d} {X_tr.shape[1]:4d} {t_nys:7.3f} "
                  f"{t_fixed:7.3f} ({t_fixed / t_nys:4.2f}) {t_ridge:7.3f} ({t_ridge / t_nys:4.2f}) "
                  f"{t_fit:7.3f} ({t_fit / t_nys:4.2f}) | {best:9.4f} {_error(fixed, task, X_te, y_te):7.4f} "
                  f"{_error(ridge, task, X_te, y_te):7.4f} {_error(fit, task, X_te, y_te):7.4f}", flush=True)


if __name__ == "__main__":
    main()
