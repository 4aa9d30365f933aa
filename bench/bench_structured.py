"""Benchmark of the structured maps: FWHT kernel and Fastfood/SORF features.

Part 1, FWHT (one thread): ns per transform and GB/s (len * itemsize / time) of the compiled
kernel for lengths 2^7..2^20, float32 and float64: "hot" = a batch of <= 256 KiB transformed in
place repeatedly (data in cache, the usual FWHT benchmark); "stream" = out of place (X -> Y) on a
batch of 2^21 values (8-16 MiB, so the data comes from L3/DRAM); also in place on that batch;
against the NumPy reference butterfly
(tests/structured_reference.py's fwht) on the same batch. Rows are batched so that each call moves
~2^21 values (the per-call overhead is then negligible); the "public" column is rffkern.fwht
(input validation included: one extra pass for the finiteness check).

Part 2, features (n_jobs threads, default 1): rffkern Fastfood and SORF vs dense
rffkern.RandomFourierFeatures (the baseline of the ratio) and scikit-learn-extra's Fastfood when
it imports (float64 only), for d in {100, 784} and s in {1024, 4096}.

Part 3, SORF bias (--bias-only runs just this part): for d in {2, 5, 8, 16, 64}, n = 100 rows
of N(0, I_d) and sigma = sqrt(d), (a) max |E[Z Z^T] - K| of SORF for block sizes p from
2^ceil(log2 d) to 512, E estimated by the mean over 8 maps of 16384 [cos, sin] pairs (its Monte
Carlo floor is about 0.005 on the largest entry), and (b) max |Z Z^T - K| of one estimator fit
with 4096 and 16384 features: RandomFourierFeatures (the baseline), StructuredOrthogonalFeatures (its default
block) and SORF at the unpadded p = 2^ceil(log2 d), and the time of those two SORF maps on
4000 x d rows to 4096 features (one thread; the unpadded one includes its sign draws).

Every time is the median of --reps repetitions (>= 5), the compared methods run in turn within
each repetition (so load swings on a shared machine hit all of them alike); ratios are measured
in the same run. The FWHT table also gives the minimum.
Writes bench/results/bench_structured.json.

    python bench/bench_structured.py                 # full: n = 100000
    python bench/bench_structured.py --n 20000       # reduced while the machine is busy
    python bench/bench_structured.py --bias-only     # Part 3 only, about a minute
"""
from __future__ import annotations

import argparse
import json
import os
import pathlib
import platform
import sys
import time

import numpy as np

import rffkern
from rffkern import _core
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "tests"))
import structured_reference as ref  # noqa: E402  (the test oracle)
from rffkern._sampling import draw_offsets, exact_kernel
from rffkern.kernels import block_size, sorf_features
from rffkern.structured import Fastfood, StructuredOrthogonalFeatures


def interleaved_times(fns, reps):
    """Median (and min) seconds of each callable, the callables run in turn within every
    repetition so that load changes on a shared machine hit all of them alike."""
    for fn in fns.values():
        fn()  # warm-up
    ts = {k: [] for k in fns}
    for _ in range(reps):
        for k, fn in fns.items():
            t0 = time.perf_counter()
            fn()
            ts[k].append(time.perf_counter() - t0)
    return ({k: float(np.median(v)) for k, v in ts.items()},
            {k: float(np.min(v)) for k, v in ts.items()})


def bench_fwht(reps, kmin, kmax):
    rows = []
    rng = np.random.default_rng(0)
    for dtype in (np.float32, np.float64):
        for k in range(kmin, kmax + 1):
            length = 2**k
            n_rows = max(1, 2**21 // length)
            X = rng.standard_normal((n_rows, length)).astype(dtype)
            Y = np.empty_like(X)
            # in-cache figure: a batch of <= 256 KiB (half of L2) transformed in place
            # (normalised, so the values stay bounded) many times per sample; the ~1.7 us
            # Python call overhead is included (about 5% at 2^10)
            hot_rows = max(1, (2**16 if dtype == np.float32 else 2**15) // length)
            H = X[:hot_rows].copy()
            calls = max(1, 2**22 // (hot_rows * length))

            def hot():
                for _ in range(calls):
                    _core.fwht_inplace(H, True, 1)

            med, best = interleaved_times({
                "hot": hot,
                "core": lambda: _core.fwht(X, Y, False, 1),
                "inplace": lambda: _core.fwht_inplace(Y, False, 1),
                "public": lambda: rffkern.fwht(X, out=Y, n_threads=1),
                "numpy": lambda: ref.fwht(X)}, reps)
            t_core, t_inpl, t_pub, t_np = (med[k] / n_rows
                                           for k in ("core", "inplace", "public", "numpy"))
            t_min = best["core"] / n_rows
            t_hot = med["hot"] / (calls * hot_rows)
            nbytes = length * np.dtype(dtype).itemsize
            rows.append(dict(dtype=np.dtype(dtype).name, k=k, ns_per_transform=t_core * 1e9,
                             gb_per_s=nbytes / t_core / 1e9, hot_ns=t_hot * 1e9,
                             hot_gb_per_s=nbytes / t_hot / 1e9, min_ns=t_min * 1e9,
                             min_gb_per_s=nbytes / t_min / 1e9, inplace_ns=t_inpl * 1e9,
                             inplace_gb_per_s=nbytes / t_inpl / 1e9, public_ns=t_pub * 1e9,
                             numpy_ns=t_np * 1e9, speedup_vs_numpy=t_np / t_core))
            r = rows[-1]
            print(f"{r['dtype']:8s} 2^{k:<3d} {r['hot_ns']:10.0f} {r['hot_gb_per_s']:7.2f} "
                  f"{r['ns_per_transform']:12.0f} {r['gb_per_s']:8.2f} "
                  f"{r['min_ns']:10.0f} {r['min_gb_per_s']:8.2f} {r['inplace_ns']:12.0f} "
                  f"{r['inplace_gb_per_s']:8.2f} {r['public_ns']:12.0f} {r['numpy_ns']:14.0f} "
                  f"{r['speedup_vs_numpy']:9.1f}x",
                  flush=True)
    return rows


def load_skextra():
    try:
        from sklearn_extra.kernel_approximation import Fastfood as SkxFastfood
        return SkxFastfood
    except Exception as exc:  # noqa: BLE001 - report why it is missing
        print(f"scikit-learn-extra not available: {type(exc).__name__}: {exc}")
        return None


def bench_features(n, reps, n_jobs, dims, comps):
    SkxFastfood = load_skextra()
    rows = []
    rng = np.random.default_rng(0)
    for d in dims:
        X64 = rng.standard_normal((n, d))
        for s in comps:
            for dtype in (np.float32, np.float64):
                X = X64.astype(dtype)
                dense = rffkern.RandomFourierFeatures(s, length_scale=np.sqrt(d), random_state=0,
                                                      n_jobs=n_jobs).fit(X)
                ff = Fastfood(s, length_scale=np.sqrt(d), random_state=0, n_jobs=n_jobs).fit(X)
                so = StructuredOrthogonalFeatures(s, length_scale=np.sqrt(d), random_state=0,
                                                  n_jobs=n_jobs).fit(X)
                fns = {"dense": lambda: dense.transform(X), "fastfood": lambda: ff.transform(X),
                       "sorf": lambda: so.transform(X)}
                skx = None
                if SkxFastfood is not None and dtype == np.float64:
                    skx = SkxFastfood(sigma=np.sqrt(d), n_components=s, random_state=0).fit(X)
                    fns["skextra"] = lambda: skx.transform(X)
                med, _ = interleaved_times(fns, reps)
                t_dense, t_ff, t_so = med["dense"], med["fastfood"], med["sorf"]
                isz = np.dtype(dtype).itemsize
                nb, p = ff.signs_.shape
                row = dict(n=n, d=d, s=s, dtype=np.dtype(dtype).name, n_jobs=n_jobs,
                           dense_s=t_dense, fastfood_s=t_ff, sorf_s=t_so,
                           fastfood_vs_dense=t_dense / t_ff, sorf_vs_dense=t_dense / t_so,
                           map_bytes_dense=d * s * isz,
                           map_bytes_fastfood=nb * p * (3 * isz + 8) + s * isz,
                           map_bytes_sorf=nb * 3 * p * isz + s * isz,
                           skextra_s=None, fastfood_vs_skextra=None)
                if skx is not None:
                    row["skextra_s"] = med["skextra"]
                    row["fastfood_vs_skextra"] = med["skextra"] / t_ff
                rows.append(row)
                skx_txt = (f"{row['skextra_s']:9.3f} {row['fastfood_vs_skextra']:7.1f}x"
                           if row["skextra_s"] is not None else f"{'-':>9s} {'-':>8s}")
                print(f"{d:5d} {s:5d} {row['dtype']:8s} {t_dense:9.3f} {t_ff:9.3f} {t_so:9.3f} "
                      f"{row['fastfood_vs_dense']:7.2f}x {row['sorf_vs_dense']:7.2f}x {skx_txt}",
                      flush=True)
    return rows


def sorf_with_block(X, s, p, sigma, seed, pair):
    """SORF features of X on blocks of size p (>= d), drawn as the estimator draws them."""
    rng = np.random.default_rng(seed)
    n_freq = s // 2 if pair else s
    diagonals = rng.integers(0, 2, size=(-(-n_freq // p), 3, p)).astype(np.float64) * 2.0 - 1.0
    offsets = None if pair else draw_offsets(n_freq, rng)
    return sorf_features(X, diagonals, offsets, length_scale=sigma, n_frequencies=n_freq, pair=pair)


def bench_sorf_bias(dims, n=100, n_maps=8, s_mean=32768):
    rows = []
    for d in dims:
        X = np.random.default_rng(0).standard_normal((n, d))
        sigma = float(np.sqrt(d))
        K = exact_kernel("gaussian", X, X, sigma)
        p0 = block_size(d)
        bias = {}
        for p in (q for q in (2, 4, 8, 16, 32, 64, 128, 256, 512) if q >= p0):
            mean = sum(Z @ Z.T for Z in (sorf_with_block(X, s_mean, p, sigma, seed, True)
                                         for seed in range(n_maps))) / n_maps
            bias[p] = float(np.abs(mean - K).max())
        errors = {}
        for s in (4096, 16384):
            Zs = {"rff": rffkern.RandomFourierFeatures(s, length_scale=sigma, random_state=0)
                  .fit_transform(X),
                  "sorf": StructuredOrthogonalFeatures(s, length_scale=sigma, random_state=0)
                  .fit_transform(X),
                  "sorf_unpadded": sorf_with_block(X, s, p0, sigma, 0, False)}
            errors[s] = {k: float(np.abs(Z @ Z.T - K).max()) for k, Z in Zs.items()}
        X_time = np.random.default_rng(1).standard_normal((4000, d))
        padded = StructuredOrthogonalFeatures(4096, random_state=0, n_jobs=1).fit(X_time)
        times, _ = interleaved_times(
            {"sorf": lambda X=X_time, m=padded: m.transform(X),
             "sorf_unpadded": lambda X=X_time, p=p0: sorf_with_block(X, 4096, p, 1.0, 0, False)},
            5)
        rows.append({"d": d, "n": n, "sigma": sigma, "bias_by_block": bias, "max_error": errors,
                     "transform_s_4000x4096": times})
        print(f"{d:3d}  bias " + " ".join(f"p={p}:{b:.4f}" for p, b in bias.items()))
        for s, e in errors.items():
            print(f"     s={s:5d}  max|ZZ'-K|  rff {e['rff']:.3f}  sorf {e['sorf']:.3f}  "
                  f"sorf p={p0} {e['sorf_unpadded']:.3f}", flush=True)
        print(f"     transform of 4000 rows to 4096 features (one thread, with the draws for "
              f"p={p0}): sorf {times['sorf']:.3f} s, sorf p={p0} {times['sorf_unpadded']:.3f} s")
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=100_000, help="samples for the feature benchmark")
    ap.add_argument("--reps", type=int, default=7, help="repetitions (median), >= 5")
    ap.add_argument("--n-jobs", type=int, default=1)
    ap.add_argument("--kmin", type=int, default=7)
    ap.add_argument("--kmax", type=int, default=20)
    ap.add_argument("--dims", type=int, nargs="+", default=[100, 784])
    ap.add_argument("--components", type=int, nargs="+", default=[1024, 4096])
    ap.add_argument("--skip-fwht", action="store_true")
    ap.add_argument("--skip-features", action="store_true")
    ap.add_argument("--bias-only", action="store_true", help="only Part 3, the SORF bias")
    ap.add_argument("--out", default="bench_structured.json", help="file name in bench/results/")
    args = ap.parse_args()
    if args.reps < 5:
        ap.error("--reps must be >= 5 (medians of at least 5 repetitions)")
    print(f"rffkern isa={_core.active_isa()} libmvec={_core.have_libmvec()} "
          f"load={os.getloadavg()[0]:.1f}")
    out = dict(machine=platform.processor() or platform.machine(), isa=_core.active_isa(),
               load_avg=os.getloadavg(), args=vars(args))
    if args.bias_only:
        args.skip_fwht = args.skip_features = True
    if not args.skip_fwht:
        print("\nFWHT, one thread, compiled kernel vs NumPy reference butterfly (same batch)")
        print(f"{'dtype':8s} {'len':5s} {'hot ns':>10s} {'GB/s':>7s} {'stream ns':>12s} "
              f"{'GB/s':>8s} {'min ns':>10s} "
              f"{'GB/s':>8s} {'in-place':>12s} "
              f"{'GB/s':>8s} {'public ns':>12s} "
              f"{'numpy ns':>14s} {'vs numpy':>10s}")
        out["fwht"] = bench_fwht(args.reps, args.kmin, args.kmax)
    if not args.skip_features:
        print(f"\nfeatures, n={args.n}, n_jobs={args.n_jobs}: seconds per transform; ratios = "
              "baseline time / our time")
        print(f"{'d':>5s} {'s':>5s} {'dtype':8s} {'dense':>9s} {'fastfood':>9s} {'sorf':>9s} "
              f"{'ff/dense':>8s} {'so/dense':>8s} {'skextra':>9s} {'ff/skx':>8s}")
        out["features"] = bench_features(args.n, args.reps, args.n_jobs, args.dims,
                                         args.components)
    print("\nSORF bias (max over 100 x 100 entries), sigma = sqrt(d)")
    out["sorf_bias"] = bench_sorf_bias([2, 5, 8, 16, 64])
    os.makedirs(os.path.join(os.path.dirname(__file__), "results"), exist_ok=True)
    path = os.path.join(os.path.dirname(__file__), "results", args.out)
    with open(path, "w") as fh:
        json.dump(out, fh, indent=1)
    print(f"\nwrote {path}")


if __name__ == "__main__":
    main()
