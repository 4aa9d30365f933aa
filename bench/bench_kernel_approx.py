"""Kernel approximation error of every sampling scheme on real data: Gaussian and Matérn kernels.

On ``--rows`` (2000) randomly chosen rows of cal_housing (d = 8) and of MNIST's test set
(d = 784), standardized (zero-variance pixels stay 0), with the length scale set to the median
pairwise distance (``rffkern._sampling.median_distance``): the mean absolute error, over all n^2
entries, of ``Z Z^T`` against the exact kernel matrix computed by scikit-learn
(``sklearn.gaussian_process.kernels.RBF`` and ``Matern``, an implementation independent of
rffkern's), for the Gaussian kernel and the Matérn kernel with nu in {0.5, 1.5, 2.5}, for the
samplers

* ``random``      RandomFourierFeatures(sampling="random"): i.i.d. frequencies (the baseline)
* ``qmc``         RandomFourierFeatures(sampling="qmc"): scrambled Sobol' through the inverse CDFs
* ``orthogonal``  RandomFourierFeatures(sampling="orthogonal"): ORF blocks
* ``sorf``        StructuredOrthogonalFeatures
* ``fastfood``    Fastfood

with s in {256, 1024, 4096} features (the phase form cos(Wx + b)) and 3 seeds (the tables give
the mean over seeds). Printed:

1. per data set, the error table and each sampler's ratio to ``random`` at the same s;
2. the Matérn kernels at s = 4096 against scikit-learn's ``Matern`` (target: MAE <= 0.02);
3. the QMC / MC error ratio at s = 1024 for the Gaussian and Matérn kernels (target: <= 0.7);
4. the least-squares slope of log(error) against log(s) per sampler (Monte Carlo: -0.5).

Writes bench/results/bench_kernel_approx.json. About 10 minutes on two busy cores.

    python bench/bench_kernel_approx.py
    python bench/bench_kernel_approx.py --rows 500 --sizes 256 1024 --seeds 1   # a quick look
"""
from __future__ import annotations

import argparse
import gzip
import json
import time
from pathlib import Path

import numpy as np
from scipy.spatial.distance import cdist
from sklearn.gaussian_process.kernels import RBF, Matern
from sklearn.preprocessing import StandardScaler

from rffkern import Fastfood, RandomFourierFeatures, StructuredOrthogonalFeatures
from rffkern._sampling import matern_correlation, median_distance

DATA = Path("/work/shared/datasets")
RESULTS = Path(__file__).resolve().parent / "results"
DATASETS = {"cal_housing": "cal_housing.csv.gz", "mnist": "mnist_test10k.csv.gz"}
KERNELS = [("gaussian", None), ("matern", 0.5), ("matern", 1.5), ("matern", 2.5)]
SAMPLERS = ("random", "qmc", "orthogonal", "sorf", "fastfood")


def load_rows(name, n_rows):
    """``n_rows`` rows drawn without replacement (seed 0), standardized."""
    with gzip.open(DATA / DATASETS[name], "rt") as fh:
        X = np.loadtxt(fh, delimiter=",", skiprows=1)[:, :-1]
    pick = np.random.default_rng(0).choice(X.shape[0], min(n_rows, X.shape[0]), replace=False)
    return StandardScaler().fit_transform(X[pick])


def kernel_label(kernel, nu):
    return "gaussian" if kernel == "gaussian" else f"matern{nu}"


def exact_matrix(X, kernel, nu, length_scale):
    """scikit-learn's kernel matrix, and its largest difference from rffkern's exact kernel."""
    if kernel == "gaussian":
        K = RBF(length_scale=length_scale)(X)
        ours = np.exp(-0.5 * (cdist(X, X) / length_scale) ** 2)
    else:
        K = Matern(length_scale=length_scale, nu=nu)(X)
        ours = matern_correlation(cdist(X, X) / length_scale, nu)
    return K, float(np.abs(K - ours).max())


def feature_map(sampler, kernel, nu, n_components, length_scale, seed, threads):
    common = dict(kernel=kernel, length_scale=length_scale, random_state=seed, n_jobs=threads)
    if kernel == "matern":
        common["nu"] = nu
    if sampler == "sorf":
        return StructuredOrthogonalFeatures(n_components, **common)
    if sampler == "fastfood":
        return Fastfood(n_components, **common)
    return RandomFourierFeatures(n_components, sampling=sampler, **common)


def errors_on(X, length_scale, args):
    """{(kernel label, sampler, s): [MAE per seed]} and the exact-kernel cross-check."""
    out, check = {}, {}
    for kernel, nu in KERNELS:
        label = kernel_label(kernel, nu)
        K, check[label] = exact_matrix(X, kernel, nu, length_scale)
        for sampler in SAMPLERS:
            for s in args.sizes:
                maes = []
                for seed in range(args.seeds):
                    Z = feature_map(sampler, kernel, nu, s, length_scale, seed, args.threads).fit_transform(X)
                    maes.append(float(np.abs(Z @ Z.T - K).mean()))
                out[label, sampler, s] = maes
        print(f"  {label} done", flush=True)
    return out, check


def print_error_table(name, errs, sizes):
    print(f"\n{name}: mean |Z Z^T - K| (mean over seeds); in brackets the ratio to 'random' at the same s")
    header = f"{'kernel':<11}{'sampler':<12}" + "".join(f"{'s=' + str(s):>20}" for s in sizes)
    print(header)
    for kernel, nu in KERNELS:
        label = kernel_label(kernel, nu)
        for sampler in SAMPLERS:
            cells = []
            for s in sizes:
                e = np.mean(errs[label, sampler, s])
                ratio = e / np.mean(errs[label, "random", s])
                cells.append(f"{e:.5f} ({ratio:4.2f})")
            print(f"{label:<11}{sampler:<12}" + "".join(f"{c:>20}" for c in cells))


def slope(errs, label, sampler, sizes):
    """Least-squares slope of log(mean error) on log(s)."""
    y = [np.log(np.mean(errs[label, sampler, s])) for s in sizes]
    return float(np.polyfit(np.log(sizes), y, 1)[0])


def print_summaries(all_errs, sizes):
    s_max = max(sizes)
    print(f"\nMatérn at s={s_max} against sklearn's Matern: MAE (target <= 0.02)")
    print(f"{'data':<13}{'nu':>5}" + "".join(f"{smp:>12}" for smp in SAMPLERS) + "  target met")
    for name, errs in all_errs.items():
        for _, nu in KERNELS[1:]:
            vals = [np.mean(errs[f"matern{nu}", smp, s_max]) for smp in SAMPLERS]
            met = "yes" if max(vals) <= 0.02 else "NO"
            print(f"{name:<13}{nu:>5}" + "".join(f"{v:>12.5f}" for v in vals) + f"  {met:>10}")
    if 1024 in sizes:
        print("\nQMC / MC error ratio at s=1024 (target <= 0.7)")
        print(f"{'data':<13}" + "".join(f"{kernel_label(k, nu):>12}" for k, nu in KERNELS))
        for name, errs in all_errs.items():
            ratios = [np.mean(errs[kernel_label(k, nu), "qmc", 1024]) / np.mean(errs[kernel_label(k, nu), "random", 1024])
                      for k, nu in KERNELS]
            print(f"{name:<13}" + "".join(f"{r:>12.3f}" for r in ratios))
    print("\nslope of log(error) against log(s) (Monte Carlo: -0.5)")
    print(f"{'data':<13}{'kernel':<11}" + "".join(f"{smp:>12}" for smp in SAMPLERS))
    for name, errs in all_errs.items():
        for kernel, nu in KERNELS:
            label = kernel_label(kernel, nu)
            print(f"{name:<13}{label:<11}" + "".join(f"{slope(errs, label, smp, sizes):>12.3f}" for smp in SAMPLERS))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rows", type=int, default=2000)
    p.add_argument("--sizes", type=int, nargs="+", default=[256, 1024, 4096])
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--threads", type=int, default=2, help="n_jobs of the feature maps")
    p.add_argument("--data", nargs="+", default=list(DATASETS), choices=list(DATASETS))
    args = p.parse_args(argv)
    all_errs, payload = {}, {"args": vars(args), "data": {}}
    for name in args.data:
        t0 = time.perf_counter()
        X = load_rows(name, args.rows)
        length_scale = median_distance(X)
        print(f"{name}: {X.shape[0]} rows, d = {X.shape[1]}, length scale (median distance) {length_scale:.4f}",
              flush=True)
        errs, check = errors_on(X, length_scale, args)
        print(f"  largest |sklearn - rffkern exact kernel| per kernel: "
              + ", ".join(f"{k} {v:.1e}" for k, v in check.items()))
        print(f"  {time.perf_counter() - t0:.0f} s")
        all_errs[name] = errs
        payload["data"][name] = {"length_scale": length_scale, "exact_kernel_check": check,
                                 "mae": {f"{k}|{smp}|{s}": v for (k, smp, s), v in errs.items()}}
        print_error_table(name, errs, args.sizes)
    print_summaries(all_errs, args.sizes)
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / "bench_kernel_approx.json"
    path.write_text(json.dumps(payload, indent=1))
    print(f"\n-> {path}")


if __name__ == "__main__":
    main()
