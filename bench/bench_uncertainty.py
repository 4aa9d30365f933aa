"""Uncertainty on real data: conformal intervals, predictive std and evidence-based selection.

The benchmark of the issue "Uncertainty you can trust". Every regression set of the data folder
(``bench_realdata.dataset_catalogue``: the public ones, the messy tables, and scikit-learn's
``load_diabetes``), raw X and y, the 80/20 split of ``bench_realdata.split_dataset`` per seed, the
training part capped at ``--max-train`` rows (default 3000, so that the exact GP runs everywhere).

Methods (each at its defaults, ``random_state`` = seed)
    rffkern    ``rff_ridge`` (``RFFRidge``; its 90% intervals by ``predict_interval``, normalized
               scores), ``rff_ridge_jk`` (the same model, ``method="jackknife"``), ``rff_ridge_ev``
               (``alpha_selection="evidence"``), ``fit`` (the model ``rffkern.fit`` returns),
               ``eerf``, ``srff``, ``rffnet``, ``adaptive``.
    baselines  ``mapie_nys``: MAPIE's ``CrossConformalRegressor`` (CV+, 5 folds) around
               scikit-learn's StandardScaler -> Nystroem(1000, median-heuristic gamma) -> RidgeCV
               pipeline on standardized y (``bench_realdata.kernel_pipeline``); ``gp``:
               ``GaussianProcessRegressor`` (constant x RBF + white noise, ``normalize_y``) on
               standardized X, its interval mean +- 1.645 std.

Metrics per split
    ``cov``: the share of test rows inside the 90% interval (target [0.88, 0.92]); ``width``: the
    mean interval width over sd(y_train); ``std_cal``: the share with ``|y - mean| <= 1.645 std``
    (target [0.87, 0.93]; methods with a predictive std); ``nlpd``: the mean negative log
    predictive density of the Gaussian ``N(mean, std^2)`` of y / sd(y_train); ``err``: test RMSE /
    sd(y_test); ``time``: fit + interval seconds (MAPIE: fit + conformalize + intervals).

    python bench/bench_uncertainty.py                       # everything, seeds 0 1
    python bench/bench_uncertainty.py --datasets diabetes abalone --methods rff_ridge mapie_nys
    python bench/bench_uncertainty.py --report bench/results/bench_uncertainty.json
"""
from __future__ import annotations

import argparse
import json
import sys
import time
import traceback
import warnings
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_realdata import dataset_catalogue, kernel_pipeline, load_dataset, split_dataset  # noqa: E402

import rffkern  # noqa: E402

DEFAULT_OUT = Path(__file__).resolve().parent / "results" / "bench_uncertainty.json"
COVERAGE = 0.9
Z90 = 1.6448536269514722  # the standard normal's 95% quantile: a central 90% band


def _rffkern_method(factory, method="normalized"):
    def run(X, y, X_test, seed):
        model = factory(seed).fit(X, y)
        bounds = model.predict_interval(X_test, coverage=COVERAGE, method=method)
        mean, std = model.predict(X_test, return_std=True)
        return mean, bounds, std

    return run


def _fit_model(seed):
    class Fitted:  # rffkern.fit as something with .fit
        def fit(self, X, y):
            return rffkern.fit(X, y, random_state=seed)

    return Fitted()


def _mapie_nystroem(X, y, X_test, seed):
    from mapie.regression import CrossConformalRegressor

    mapie = CrossConformalRegressor(kernel_pipeline("nystroem", "regression", seed), confidence_level=COVERAGE,
                                    method="plus", cv=5, random_state=seed)
    mean, bounds = mapie.fit_conformalize(X, y).predict_interval(X_test)
    return mean, bounds[:, :, 0], None


def _gp(X, y, X_test, seed):
    from sklearn.gaussian_process import GaussianProcessRegressor
    from sklearn.gaussian_process.kernels import RBF, ConstantKernel, WhiteKernel
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    kernel = ConstantKernel() * RBF(length_scale=np.sqrt(X.shape[1])) + WhiteKernel(0.1)
    gp = make_pipeline(StandardScaler(), GaussianProcessRegressor(kernel, normalize_y=True, random_state=seed))
    gp.fit(X, y)
    mean, std = gp.predict(X_test, return_std=True)
    return mean, np.column_stack([mean - Z90 * std, mean + Z90 * std]), std


METHODS = {
    "rff_ridge": _rffkern_method(lambda s: rffkern.RFFRidge(random_state=s)),
    "rff_ridge_jk": _rffkern_method(lambda s: rffkern.RFFRidge(random_state=s), method="jackknife"),
    "rff_ridge_ev": _rffkern_method(lambda s: rffkern.RFFRidge(alpha_selection="evidence", random_state=s)),
    "fit": _rffkern_method(_fit_model),
    "eerf": _rffkern_method(lambda s: rffkern.EERFRegressor(random_state=s)),
    "srff": _rffkern_method(lambda s: rffkern.SRFFRegressor(random_state=s)),
    "rffnet": _rffkern_method(lambda s: rffkern.RFFNetRegressor(random_state=s)),
    "adaptive": _rffkern_method(lambda s: rffkern.AdaptiveRFFRegressor(random_state=s)),
    "mapie_nys": _mapie_nystroem,
    "gp": _gp,
}


def metrics(y_train, y_test, mean, bounds, std):
    sd = float(np.std(y_train))
    rec = {"cov": float(np.mean((y_test >= bounds[:, 0]) & (y_test <= bounds[:, 1]))),
           "width": float(np.mean(bounds[:, 1] - bounds[:, 0]) / sd),
           "err": float(np.sqrt(np.mean((y_test - mean) ** 2)) / np.std(y_test))}
    if std is not None:
        s = np.maximum(np.asarray(std, np.float64) / sd, 1e-300)
        r = (y_test - mean) / sd
        rec["std_cal"] = float(np.mean(np.abs(r) <= Z90 * s))
        rec["nlpd"] = float(np.mean(0.5 * np.log(2 * np.pi * s**2) + 0.5 * (r / s) ** 2))
    return rec


def run(datasets, methods, seeds, max_train, gp_max, out):
    catalogue = {k: v for k, v in dataset_catalogue().items() if v["task"] == "regression"}
    names = [n for n in catalogue if datasets is None or n in datasets]
    records = []
    for name in names:
        data = load_dataset(name, catalogue)
        for seed in seeds:
            X, X_test, y, y_test = split_dataset(data, "regression", seed, max_train)
            y, y_test = np.asarray(y, np.float64), np.asarray(y_test, np.float64)
            for method in methods:
                if method == "gp" and len(y) > gp_max:
                    continue
                rec = {"dataset": name, "seed": seed, "method": method, "n_train": len(y)}
                t0 = time.perf_counter()
                try:
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        mean, bounds, std = METHODS[method](X, y, X_test, seed)
                    rec.update(time=time.perf_counter() - t0, **metrics(y, y_test, mean, bounds, std))
                except Exception as exc:  # one broken method must not stop the run
                    rec.update(status=f"error: {type(exc).__name__}: {exc}", traceback=traceback.format_exc(limit=-3))
                records.append(rec)
                shown = {k: round(v, 3) for k, v in rec.items() if isinstance(v, float)}
                print(name, seed, method, rec.get("status", ""), shown, flush=True)
            out.write_text(json.dumps(records, indent=1))
    return records


def _mean(recs, key):
    vals = [r[key] for r in recs if key in r]
    return float(np.mean(vals)) if vals else float("nan")


def print_tables(records):
    methods = list(dict.fromkeys(r["method"] for r in records))
    sets = list(dict.fromkeys(r["dataset"] for r in records))
    print("\nPer data set (mean over seeds): coverage of 90% intervals / width in sd(y) / std calibration")
    print("| data set | " + " | ".join(methods) + " |")
    print("|---" * (len(methods) + 1) + "|")
    for name in sets:
        cells = []
        for m in methods:
            recs = [r for r in records if r["dataset"] == name and r["method"] == m and "cov" in r]
            cal = _mean(recs, "std_cal")
            cells.append("—" if not recs else f"{_mean(recs, 'cov'):.3f} / {_mean(recs, 'width'):.2f}"
                         + ("" if np.isnan(cal) else f" / {cal:.3f}"))
        print(f"| {name} | " + " | ".join(cells) + " |")
    print("\nSummary over data sets (per-set means over seeds)")
    print("| method | sets | cov in [0.88, 0.92] | cov min | cov mean | std_cal in [0.87, 0.93] | "
          "width <= mapie_nys | width / mapie_nys (median) | time / mapie_nys (median) | nlpd - gp (median) | "
          "err mean |")
    print("|---" * 11 + "|")
    for m in methods:
        per = {}
        for name in sets:
            recs = [r for r in records if r["dataset"] == name and r["method"] == m and "cov" in r]
            base = [r for r in records if r["dataset"] == name and r["method"] == "mapie_nys" and "cov" in r]
            gp = [r for r in records if r["dataset"] == name and r["method"] == "gp" and "nlpd" in r]
            if recs:
                per[name] = dict(cov=_mean(recs, "cov"), cal=_mean(recs, "std_cal"), err=_mean(recs, "err"),
                                 wr=_mean(recs, "width") / _mean(base, "width") if base else np.nan,
                                 tr=_mean(recs, "time") / _mean(base, "time") if base else np.nan,
                                 dn=_mean(recs, "nlpd") - _mean(gp, "nlpd") if gp else np.nan)
        if not per:
            continue
        v = list(per.values())
        cov = np.array([p["cov"] for p in v])
        cal = np.array([p["cal"] for p in v])
        wr = np.array([p["wr"] for p in v])
        tr = np.array([p["tr"] for p in v])
        dn = np.array([p["dn"] for p in v])
        fin = lambda a: a[np.isfinite(a)]  # noqa: E731
        print(f"| {m} | {len(v)} | {int(np.sum((cov >= 0.88) & (cov <= 0.92)))} | {cov.min():.3f} | {cov.mean():.3f} | "
              + (f"{int(np.sum((cal >= 0.87) & (cal <= 0.93)))}/{fin(cal).size}" if fin(cal).size else "—")
              + f" | {int(np.sum(fin(wr) <= 1.0))}/{fin(wr).size} | "
              + (f"{np.median(fin(wr)):.3f}" if fin(wr).size else "—") + " | "
              + (f"{np.median(fin(tr)):.3f}" if fin(tr).size else "—") + " | "
              + (f"{np.median(fin(dn)):+.3f}" if fin(dn).size else "—")
              + f" | {np.mean([p['err'] for p in v]):.4f} |")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--datasets", nargs="+")
    parser.add_argument("--methods", nargs="+", choices=list(METHODS), default=list(METHODS))
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1])
    parser.add_argument("--max-train", type=int, default=3000)
    parser.add_argument("--gp-max", type=int, default=3000, help="the exact GP on at most this many rows")
    parser.add_argument("--blas-threads", type=int, default=None)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--report", type=Path, help="reprint the tables of a saved JSON")
    args = parser.parse_args(argv)
    if args.report:
        print_tables(json.loads(args.report.read_text()))
        return
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with threadpool_limits(args.blas_threads):
        records = run(args.datasets, args.methods, args.seeds, args.max_train, args.gp_max, args.out)
    print_tables(records)


if __name__ == "__main__":
    main()
