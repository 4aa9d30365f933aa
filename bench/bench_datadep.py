"""Demonstrations of the data-dependent random features (issue 5), each beside its baseline.

Sections (``--only`` picks some; all by default):

* ``timing``  time per SRFF outer iteration (ridge step + FISTA gamma step) and per adaptive-RFF
              Metropolis iteration: rffkern (compiled kernels) vs the direct NumPy implementation of
              the same step in the test oracle ``tests/datadep_reference.py`` (features
              materialised, ``np.linalg.solve``); median of ``--reps``.
* ``srff``    SRFF on SE1 (gse1) and SE2 (gse2): test RMSE beside the paper's (n = 1k: SE1 0.272,
              SE2 1.603) and the learned gamma on / off the true support (``--srff-length-scale
              knn``: the paper's width rule instead of the default).
* ``eerf``    EERF vs RFFRidge at equal M on cpu_act, elevators (test RMSE) and a9a (test error),
              M in {50, 100, 200, 500}, with EERF's pre-processing time beside the training times.
* ``adaptive_si``  adaptive RFF on f(x) = Si(x/a) exp(-x^2/2), a = 1e-2: test MSE vs K (powers
              of two) beside plain RFF with fixed N(0, 1) and N(0, sigma^2) frequencies.
* ``realdata``  raw X and y of real data sets (80/20 split, random_state 0, training part
              subsampled to ``--real-max-train``): SRFF, EERF and adaptive RFF at their defaults
              beside StandardScaler -> Nystroem(1000, median-heuristic gamma) -> RidgeCV on
              standardised y: test RMSE / sd(y) (classification: error rate) and fit seconds.
* ``adaptive_mnist``  the same on MNIST (the 10k test set split 8000 / 2000): test error vs K.

Everything prints a table and writes JSON to bench/results/datadep_<section>[_<tag>].json. BLAS
threads: run with OPENBLAS_NUM_THREADS=1 on a shared machine (two-thread OpenBLAS factorisations
were measured 25x slower than one thread under load); the compiled kernels use ``--threads``.

    python bench/bench_datadep.py --only timing srff          # the quick parts
    python bench/bench_datadep.py --reduced                    # smaller sizes while the machine is busy
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

from _timing import median_time

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT.parent / "tests"))
import datadep_reference as ref  # noqa: E402  (the test oracle)
DATA = Path("/work/shared/datasets")
RESULTS = ROOT / "results"




TAG = ""


def save(name, payload):
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / f"datadep_{name}{TAG}.json"
    path.write_text(json.dumps(payload, indent=1, default=float))
    print(f"-> {path}")


def load_csv(name):
    import gzip

    with gzip.open(DATA / name, "rt") as fh:
        arr = np.loadtxt(fh, delimiter=",", skiprows=1)
    return arr[:, :-1], arr[:, -1]


def table(rows, cols):
    widths = [max(len(c), *(len(f"{r[c]}") for r in rows)) for c in cols]
    print("  ".join(c.rjust(w) for c, w in zip(cols, widths)))
    for r in rows:
        print("  ".join(f"{r[c]}".rjust(w) for c, w in zip(cols, widths)))


# ------------------------------------------------------------------------------------------------
def bench_timing(args):
    from threadpoolctl import threadpool_limits

    from rffkern.adaptive import amplitudes, least_squares, metropolis_step
    from rffkern.datasets import make_gse1
    from rffkern.srff import fista_gamma, ridge_step

    rows = []
    n_srff = 1000
    X, y, _ = make_gse1(n_srff, random_state=0)
    X = (X - X.mean(0)) / X.std(0)
    y = y - y.mean()
    rng = np.random.default_rng(0)
    D = 300
    directions, b = rng.standard_normal((X.shape[1], D)), rng.uniform(0, 2 * np.pi, D)
    gamma = np.full(X.shape[1], 0.25)
    lam = 1e-3

    def srff_fast():
        a, _ = ridge_step(X, y, directions, b, gamma, lam, args.threads)
        return fista_gamma(X, y, directions, b, a, gamma, gamma.sum(), n_threads=args.threads)

    def srff_ref():
        return ref.srff_outer_step(X, y, directions, b, gamma, lam, gamma.sum())

    inner = srff_fast()[1]
    with threadpool_limits(args.threads):
        t_fast, t_ref = median_time(srff_fast, args.reps), median_time(srff_ref, args.reps)
    rows.append(dict(step=f"SRFF outer iteration (n={n_srff}, d=18, D={D}, {inner} FISTA its)",
                     rffkern_s=round(t_fast, 4), numpy_s=round(t_ref, 4), ratio=round(t_ref / t_fast, 2)))

    for n, d, K in ((4000, 1, 256), (4000, 10, 256), (2000, 100, 512)):
        Xa = rng.standard_normal((n, d))
        Ya = np.sin(Xa.sum(1, keepdims=True))
        W = rng.standard_normal((d, K))
        amp = amplitudes(least_squares(Xa, Ya, W, 1e-3, args.threads), K)
        zeta, u = rng.standard_normal((K, d)), rng.random(K)
        kw = dict(delta=0.5, gamma=3 * d - 2.0, lam=1e-3)
        with threadpool_limits(args.threads):
            t_fast = median_time(lambda: metropolis_step(Xa, Ya, W, amp, zeta, u, n_threads=args.threads, **kw),
                                 args.reps)
            t_ref = median_time(lambda: ref.metropolis_step(Xa, Ya, W, amp, zeta, u, **kw), args.reps)
        rows.append(dict(step=f"Metropolis iteration (n={n}, d={d}, K={K})", rffkern_s=round(t_fast, 4),
                         numpy_s=round(t_ref, 4), ratio=round(t_ref / t_fast, 2)))
    print(f"\nTime per iteration, median of {args.reps}, {args.threads} thread(s) (BLAS limited to the same);"
          " ratio = NumPy / rffkern (> 1: rffkern faster)")
    table(rows, ["step", "rffkern_s", "numpy_s", "ratio"])
    save("timing", dict(reps=args.reps, threads=args.threads, rows=rows))


# ------------------------------------------------------------------------------------------------
def bench_srff(args):
    from rffkern import RFFRidge, SRFFRegressor
    from rffkern.datasets import make_gse1, make_gse2
    from rffkern.srff import GRID_EXPONENTS, srff_alpha_grid

    # the paper's Tables 3 and 5 (mean of 30 resamples)
    paper = {("SE1", 1000): 0.272, ("SE2", 1000): 1.603, ("SE1", 5000): 0.263, ("SE2", 5000): 1.278}
    exps = (np.asarray(args.srff_exponents) if args.srff_exponents is not None
            else GRID_EXPONENTS[::args.grid_stride])
    rows = []
    for n in args.srff_n:
        for name, gen in (("SE1", make_gse1), ("SE2", make_gse2)):
            for seed in range(args.seeds):
                # the paper's protocol: train n, validation n (lambda search), test 1000
                X, y, support = gen(2 * n + 1000, random_state=seed)
                Xtr, ytr = X[:2 * n], y[:2 * n]
                Xs = (X[:n] - X[:n].mean(0)) / X[:n].std(0)
                t0 = time.perf_counter()
                ls = args.srff_length_scale
                m = SRFFRegressor(300, alpha=srff_alpha_grid(Xs, exps), validation_fraction=0.5,
                                  max_iter=args.srff_max_iter, random_state=seed,
                                  length_scale=ls if ls in ("auto", "knn") else float(ls)).fit(Xtr, ytr)
                t_fit = time.perf_counter() - t0
                rmse = float(np.sqrt(np.mean((m.predict(X[2 * n:]) - y[2 * n:]) ** 2)))
                rff = RFFRidge(300, alpha=list(np.logspace(-4, 2, 7)), length_scale=m.length_scale_,
                               random_state=seed).fit((Xtr - m.x_mean_) / m.x_scale_, ytr)
                rmse_rff = float(np.sqrt(np.mean((rff.predict((X[2 * n:] - m.x_mean_) / m.x_scale_)
                                                  - y[2 * n:]) ** 2)))
                off = np.setdiff1d(np.arange(X.shape[1]), support)
                rows.append(dict(data=name, n=n, seed=seed, srff_rmse=round(rmse, 4),
                                 paper_rmse=paper.get((name, n)), rff_ridge_rmse=round(rmse_rff, 4),
                                 mean_rmse=round(float(np.std(y[2 * n:])), 4),
                                 gamma_support_min=round(float(m.gamma_[support].min()), 3),
                                 gamma_off_max=round(float(m.gamma_[off].max()), 3),
                                 top_is_support=bool(set(np.argsort(-m.gamma_)[:len(support)]) == set(support)),
                                 lam_exp=round(float(exps[int(np.argmin(m.validation_errors_))]), 1),
                                 outer_its=m.n_iter_, fit_s=round(t_fit, 1)))
                print(rows[-1], flush=True)
    print(f"\nSRFF (D = 300, lambda exponents {[round(float(e), 1) for e in exps]}, "
          f"max_iter {args.srff_max_iter}, length_scale {args.srff_length_scale}); paper_rmse from the paper's Tables 3/5; mean_rmse = RMSE of predicting the mean")
    table(rows, ["data", "n", "seed", "srff_rmse", "paper_rmse", "rff_ridge_rmse", "mean_rmse",
                 "gamma_support_min", "gamma_off_max", "top_is_support", "lam_exp", "outer_its", "fit_s"])
    save("srff", dict(grid_exponents=list(exps), length_scale=args.srff_length_scale, rows=rows))


#: The adaptive-RFF options of the paper's runs (the defaults add early stopping on held-out rows and
#: a LOO search of the final lambda); ``init_scale`` is given where it matters.
PAPER_ADAPTIVE = dict(early_stopping=False, final_alpha=None)


# ------------------------------------------------------------------------------------------------
def bench_eerf(args):
    from rffkern import EERFClassifier, EERFRegressor, RFFRidge, RFFRidgeClassifier

    alphas = list(np.logspace(-3, 2, 6))
    rows = []
    sets = []
    for name in args.eerf_sets:
        if name == "a9a":
            Xtr, ytr = load_csv("a9a_train.csv.gz")
            Xte, yte = load_csv("a9a_test.csv.gz")
        else:
            X, y = load_csv(f"{name}.csv.gz")
            perm = np.random.default_rng(0).permutation(len(y))
            cut = int(0.8 * len(y))
            Xtr, ytr, Xte, yte = X[perm[:cut]], y[perm[:cut]], X[perm[cut:]], y[perm[cut:]]
        if args.reduced:
            Xtr, ytr = Xtr[:8000], ytr[:8000]
        sets.append((name, Xtr, ytr, Xte, yte))
    for name, Xtr, ytr, Xte, yte in sets:
        clf = name == "a9a"
        for M in args.eerf_m:
            for seed in range(args.seeds):
                kw = dict(alpha=alphas, random_state=seed)
                t0 = time.perf_counter()  # the paper's single k-NN width (the default searches a few)
                e = (EERFClassifier if clf else EERFRegressor)(M, length_scale="knn", **kw).fit(Xtr, ytr)
                t_eerf = time.perf_counter() - t0
                Xs_tr, Xs_te = e._transform_input(Xtr), e._transform_input(Xte)
                t0 = time.perf_counter()
                base = (RFFRidgeClassifier if clf else RFFRidge)(M, length_scale=e.length_scale_, **kw).fit(Xs_tr, ytr)
                t_rff = time.perf_counter() - t0
                if clf:
                    err_e, err_r = 1 - e.score(Xte, yte), 1 - base.score(Xs_te, yte)
                else:
                    err_e = float(np.sqrt(np.mean((e.predict(Xte) - yte) ** 2)))
                    err_r = float(np.sqrt(np.mean((base.predict(Xs_te) - yte) ** 2)))
                rows.append(dict(data=name, metric="error" if clf else "RMSE", M=M, seed=seed,
                                 rff=round(err_r, 5), eerf=round(err_e, 5), eerf_over_rff=round(err_e / err_r, 3),
                                 eerf_pre_s=round(e.preprocessing_time_, 3), eerf_train_s=round(e.training_time_, 3),
                                 rff_train_s=round(t_rff, 3), eerf_total_s=round(t_eerf, 3),
                                 N0=e.n_subsample_, M0=e.n_candidates_))
                print(rows[-1], flush=True)
    print("\nEERF vs RFFRidge at equal M (same sigma = EERF's 50-NN rule on standardised X, same alpha list "
          "chosen by LOO); training time includes the alpha search")
    table(rows, ["data", "metric", "M", "seed", "rff", "eerf", "eerf_over_rff", "eerf_pre_s", "eerf_train_s",
                 "rff_train_s", "N0", "M0"])
    save("eerf", dict(alphas=alphas, rows=rows))


# ------------------------------------------------------------------------------------------------
def bench_adaptive_si(args):
    from scipy.special import sici

    from rffkern import AdaptiveRFFRegressor

    a = 1e-2

    def draw(n, seed):
        rng = np.random.default_rng(seed)
        X = rng.normal(size=(n, 1))
        return X, sici(X[:, 0] / a)[0] * np.exp(-X[:, 0] ** 2 / 2)

    X, y = draw(args.si_n, 0)
    Xt, yt = draw(4000, 1)
    rows = []
    for K in args.si_k:
        # Algorithm 2 as the paper runs it: every row, the last frequencies, lambda fixed
        common = dict(alpha=args.si_alpha, random_state=0, **PAPER_ADAPTIVE)
        t0 = time.perf_counter()
        ad = AdaptiveRFFRegressor(K, n_iter=args.si_iters, omega_max=args.si_omega_max, init_scale="median",
                                  **common).fit(X, y)
        t_ad = time.perf_counter() - t0
        row = dict(K=K, adaptive=float(np.mean((ad.predict(Xt) - yt) ** 2)), accept=round(ad.acceptance_rate_, 3),
                   adaptive_s=round(t_ad, 1), s_per_iter=round(t_ad / max(args.si_iters, 1), 3))
        for sig in args.si_sigmas:
            fx = AdaptiveRFFRegressor(K, n_iter=0, init_scale=sig, **common).fit(X, y)
            row[f"fixed_N(0,{sig}^2)"] = float(np.mean((fx.predict(Xt) - yt) ** 2))
        rows.append({k: (f"{v:.3e}" if isinstance(v, float) and k not in ("accept", "adaptive_s", "s_per_iter") else v)
                     for k, v in row.items()})
        print(rows[-1], flush=True)
    print(f"\nAdaptive RFF (Algorithm 2, {args.si_iters} iterations, omega_max {args.si_omega_max}, "
          f"lambda {args.si_alpha}) on Si(x/{a}) exp(-x^2/2), n = {args.si_n}: test MSE vs K")
    table(rows, list(rows[0].keys()))
    save("adaptive_si", dict(n=args.si_n, iters=args.si_iters, alpha=args.si_alpha, rows=rows))


def bench_adaptive_mnist(args):
    from rffkern import AdaptiveRFFClassifier

    X, y = load_csv("mnist_test10k.csv.gz")
    perm = np.random.default_rng(0).permutation(len(y))
    tr, te = perm[:args.mnist_train], perm[8000:]
    Xtr, ytr, Xte, yte = X[tr] / 255.0, y[tr].astype(int), X[te] / 255.0, y[te].astype(int)
    # fixed Gaussian width: tuned on a held-out part of the training split at K = 256
    d = X.shape[1]
    rows = []
    for K in args.mnist_k:
        row = dict(K=K)
        common = dict(alpha=args.mnist_alpha, random_state=0, **PAPER_ADAPTIVE)
        t0 = time.perf_counter()
        iters = args.mnist_iters
        ad = AdaptiveRFFClassifier(K, n_iter=iters, init_scale=0.0, **common).fit(Xtr, ytr)
        row["adaptive_err_%"] = round(100 * (1 - ad.score(Xte, yte)), 2)
        row["accept"] = round(ad.acceptance_rate_, 3)
        row["adaptive_s"] = round(time.perf_counter() - t0, 1)
        for sig in args.mnist_sigmas:
            fx = AdaptiveRFFClassifier(K, n_iter=0, init_scale=sig / np.sqrt(d), **common).fit(Xtr, ytr)
            row[f"fixed_N(0,({sig}/sqrt(d))^2)_err_%"] = round(100 * (1 - fx.score(Xte, yte)), 2)
        fx = AdaptiveRFFClassifier(K, n_iter=0, init_scale=1.0, **common).fit(Xtr, ytr)
        row["fixed_N(0,1)_err_%"] = round(100 * (1 - fx.score(Xte, yte)), 2)
        rows.append(row)
        print(row, flush=True)
    print(f"\nMNIST (10k test set: {len(tr)} train / {len(te)} test, standardised pixels), adaptive RFF "
          f"{args.mnist_iters} Metropolis iterations from omega = 0, lambda {args.mnist_alpha}: test error %")
    table(rows, list(rows[0].keys()))
    save("adaptive_mnist", dict(train=len(tr), iters=args.mnist_iters, alpha=args.mnist_alpha, rows=rows))


def bench_realdata(args):
    from sklearn.kernel_approximation import Nystroem
    from sklearn.linear_model import RidgeClassifierCV, RidgeCV
    from sklearn.model_selection import train_test_split
    from sklearn.pipeline import make_pipeline
    from sklearn.compose import TransformedTargetRegressor
    from sklearn.preprocessing import StandardScaler

    from rffkern import (AdaptiveRFFClassifier, AdaptiveRFFRegressor, EERFClassifier, EERFRegressor,
                         SRFFRegressor)
    from rffkern._sampling import median_distance

    rows = []
    for name in args.real_sets:
        X, y = load_csv(f"{name}.csv.gz")
        clf = name in ("higgs_subset",)
        Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.2, random_state=0,
                                              stratify=y if clf else None)
        if len(ytr) > args.real_max_train:
            keep = np.random.default_rng(0).choice(len(ytr), args.real_max_train, replace=False)
            Xtr, ytr = Xtr[keep], ytr[keep]
        med = median_distance(StandardScaler().fit_transform(Xtr), rng=np.random.default_rng(0))
        nys = make_pipeline(StandardScaler(), Nystroem(gamma=1 / (2 * med**2), n_components=1000, random_state=0),
                            (RidgeClassifierCV if clf else RidgeCV)(alphas=np.logspace(-4, 1, 6)))
        methods = {"nystroem": nys if clf else TransformedTargetRegressor(nys, transformer=StandardScaler())}
        if clf:
            methods.update(eerf=EERFClassifier(random_state=0), adaptive=AdaptiveRFFClassifier(random_state=0))
        else:
            methods.update(srff=SRFFRegressor(random_state=0), eerf=EERFRegressor(random_state=0),
                           adaptive=AdaptiveRFFRegressor(random_state=0))
        row = dict(data=name, n_train=len(ytr), d=X.shape[1], metric="error" if clf else "rmse/sd")
        for key, est in methods.items():
            t0 = time.perf_counter()
            est.fit(Xtr, ytr)
            row[f"{key}_s"] = round(time.perf_counter() - t0, 1)
            err = (1 - est.score(Xte, yte)) if clf else np.sqrt(np.mean((est.predict(Xte) - yte) ** 2)) / np.std(yte)
            row[key] = round(float(err), 4)
            if key != "nystroem":
                row[f"{key}/nys"] = round(row[key] / row["nystroem"], 3)
        rows.append(row)
        print(row, flush=True)
    cols = sorted({c for r in rows for c in r}, key=lambda c: list(rows[0]).index(c) if c in rows[0] else 99)
    for r in rows:
        for c in cols:
            r.setdefault(c, "")
    print(f"\nReal data, raw X and y, defaults (random_state=0); training rows <= {args.real_max_train}")
    table(rows, cols)
    save("realdata", dict(max_train=args.real_max_train, rows=rows))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--only", nargs="+", default=["timing", "srff", "eerf", "adaptive_si", "adaptive_mnist"])
    p.add_argument("--reduced", action="store_true", help="smaller sizes for a busy machine")
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--seeds", type=int, default=1)
    p.add_argument("--srff-n", type=int, nargs="+", default=[1000])
    p.add_argument("--grid-stride", type=int, default=5, help="take every k-th of the 50 lambda exponents")
    p.add_argument("--srff-exponents", type=float, nargs="+", default=None,
                   help="lambda exponents to search instead of the strided paper grid")
    p.add_argument("--srff-max-iter", type=int, default=1000)
    p.add_argument("--srff-length-scale", default="auto",
                   help='SRFF width: "auto" (median pairwise distance, the default), "knn" (the '
                        "paper's median 20-NN distance) or a number")
    p.add_argument("--eerf-sets", nargs="+", default=["cpu_act", "elevators", "a9a"])
    p.add_argument("--eerf-m", type=int, nargs="+", default=[50, 100, 200, 500])
    p.add_argument("--si-n", type=int, default=4096)
    p.add_argument("--si-k", type=int, nargs="+", default=[8, 16, 32, 64, 128, 256, 512, 1024])
    p.add_argument("--si-iters", type=int, default=30)
    p.add_argument("--si-alpha", type=float, default=1e-5)
    p.add_argument("--si-omega-max", type=float, default=200.0)
    p.add_argument("--si-sigmas", type=float, nargs="+", default=[1.0, 30.0])
    p.add_argument("--mnist-train", type=int, default=8000)
    p.add_argument("--mnist-k", type=int, nargs="+", default=[16, 64, 256, 1024])
    p.add_argument("--mnist-iters", type=int, default=10)
    p.add_argument("--mnist-alpha", type=float, default=1e-4)
    p.add_argument("--mnist-sigmas", type=float, nargs="+", default=[1.0, 3.0])
    p.add_argument("--real-sets", nargs="+",
                   default=["elevators", "cal_housing", "ccpp", "abalone", "kin40k", "higgs_subset"])
    p.add_argument("--real-max-train", type=int, default=10000)
    p.add_argument("--tag", default="", help="suffix of the JSON file names")
    args = p.parse_args(argv)
    global TAG
    TAG = f"_{args.tag}" if args.tag else ""
    for name in args.only:
        print(f"\n=== {name} ===", flush=True)
        globals()[f"bench_{name}"](args)


if __name__ == "__main__":
    sys.exit(main())
