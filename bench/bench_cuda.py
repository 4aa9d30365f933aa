"""CUDA kernels vs what a user would write in PyTorch (and CuPy), issue 12's benchmark.

    python bench/bench_cuda.py [--n 1000000] [--d 100] [--s 1000 4096] [--dtype float32 float64]
                               [--repeats 10] [--json bench/results/bench_cuda.json]

For each (s, dtype), on one GPU, in one run:
  features  Z = cos(X W + b):     rffkern (scale 1) vs torch.addmm + cos_ (the issue's baseline), vs CuPy
  predict   cos(X W + b) @ B:     rffkern (Z never stored) vs torch (Z materialised)
  gram      Z^T Z, Z^T y:         rffkern (Z chunks + SIMT syrk) vs torch over chunks of 1e5 rows
PyTorch runs with TF32 off (torch.backends.cuda.matmul.allow_tf32 = False, cudnn too), as the
kernels never use TF32: same accuracy class. Each time is the median of --repeats CUDA-event timed
calls after two warm-ups. Ratios are torch time / rffkern time (> 1: rffkern faster); the issue's
targets are features >= 2, predict >= 3, gram >= 1 (float32). The roofline columns give each rffkern
time as a fraction of the H100 SXM's limits: HBM 3.35 TB/s (the bytes that must move: X read, plus
Z written for features) and FP32 67 / FP64 34 TFLOP/s non-tensor (flops: 2 n d s for U, plus 2 n s
for predict's dot products and n s^2 for gram's symmetric half; cos/sin are not counted).
The RFFNet epoch part of the issue needs the device train_epoch, which is not implemented yet.

Without a GPU (or without rffkern._cuda, or PyTorch) it prints why and exits with status 0.
"""
from __future__ import annotations

import argparse
import json
import sys
import time

HBM_BYTES_PER_S = 3.35e12
PEAK_FLOPS = {"float32": 67e12, "float64": 34e12}


def _environment_problem():
    try:
        from rffkern import _cuda
    except ImportError:
        return ("rffkern was built without CUDA (no rffkern._cuda): "
                "pip install . -C cmake.define.RFFKERN_CUDA=ON on a machine with nvcc")
    if _cuda.device_count() == 0:
        return "no CUDA device visible (rffkern._cuda.device_count() == 0)"
    try:
        import torch
    except ImportError:
        return "PyTorch is not installed (the baseline of this benchmark)"
    if not torch.cuda.is_available():
        return "PyTorch sees no CUDA device"
    return None


def _timed(fn, repeats, torch):
    for _ in range(2):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(repeats):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end) / 1e3)
    times.sort()
    return times[len(times) // 2]


def _timed_or_oom(fn, repeats, torch):
    """_timed, or None when the device runs out of memory (the baselines materialise n x s)."""
    try:
        return _timed(fn, repeats, torch)
    except MemoryError:  # torch.cuda.OutOfMemoryError is a RuntimeError; CuPy's is a MemoryError
        pass
    except RuntimeError as exc:
        if "out of memory" not in str(exc).lower():
            raise
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    return None


def free_bytes(torch):
    return torch.cuda.mem_get_info()[0]


def _ms(t):
    return "     OOM" if t is None else f"{t * 1e3:8.2f}"


def _row_text(row):
    ratio = row["ratio_vs_torch"]
    text = (f"{row['kernel']:9s} {row['dtype']} s={row['s']:5d}: torch {_ms(row['torch_s'])} ms  rffkern "
            f"{_ms(row['rffkern_s'])} ms  ratio " + ("  n/a" if ratio is None else f"{ratio:5.2f}x"))
    if "cupy_s" in row:
        text += f"  (cupy {_ms(row['cupy_s'])} ms)"
    if row["frac_peak_flops"] is not None:
        text += (f"  | {100 * row['frac_peak_flops']:5.1f}% of {row['dtype']} peak, "
                 f"{100 * row['frac_hbm']:5.1f}% of HBM")
    return text


def run(args):
    import numpy as np
    import torch

    from rffkern import kernels

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    try:
        import cupy
    except ImportError:
        cupy = None
    dev = torch.device("cuda")
    print(f"device: {torch.cuda.get_device_name(dev)}, torch {torch.__version__}, "
          f"cupy {getattr(cupy, '__version__', 'absent')}, TF32 off")
    rows = []
    n, d = args.n, args.d
    chunk = 100_000
    for dtype_name in args.dtype:
        tdt = getattr(torch, dtype_name)
        item = 4 if dtype_name == "float32" else 8
        gen = torch.Generator(device=dev).manual_seed(0)
        X = torch.randn(n, d, device=dev, dtype=tdt, generator=gen)
        y = torch.randn(n, 1, device=dev, dtype=tdt, generator=gen)
        for s in args.s:
            W = torch.randn(d, s, device=dev, dtype=tdt, generator=gen) / d**0.5
            b = torch.rand(s, device=dev, dtype=tdt, generator=gen) * 6.283185307179586
            coef = torch.randn(s, 1, device=dev, dtype=tdt, generator=gen)
            c = (2.0 / s) ** 0.5
            bufs = {}

            def torch_features():
                torch.addmm(b, X, W, out=bufs["Z"]).cos_()

            def torch_predict():
                return (torch.addmm(b, X, W).cos_().mul_(c)) @ coef

            def torch_gram():
                G = torch.zeros(s, s, device=dev, dtype=tdt)
                zty = torch.zeros(s, 1, device=dev, dtype=tdt)
                for r in range(0, n, chunk):
                    Zc = torch.addmm(b, X[r:r + chunk], W).cos_().mul_(c)
                    G.addmm_(Zc.T, Zc)
                    zty.addmm_(Zc.T, y[r:r + chunk])
                return G, zty

            def ours_features():
                kernels.features(X, W, b, scale=1.0, out=bufs["Z"])

            def ours_predict():
                kernels.predict(X, W, b, coef, scale=c, out=bufs["F"])

            def ours_gram():
                return kernels.gram(X, W, b, y, scale=c)

            # agreement first (same accuracy class): rffkern vs torch, both TF32-free
            zr = kernels.features(X[:20000], W, b, scale=c)
            zt = torch.addmm(b, X[:20000], W).cos_().mul_(c)
            max_diff = float((zr - zt).abs().max())
            del zr, zt

            flops_u = 2.0 * n * d * s
            cases = [
                ("features", torch_features, ours_features, flops_u, (n * d + n * s) * item),
                ("predict", torch_predict, ours_predict, flops_u + 2.0 * n * s, (n * d + n) * item),
                ("gram", torch_gram, ours_gram, flops_u + 1.0 * n * s * s, n * d * item),
            ]
            cX = cW = cb = None
            if cupy is not None:
                cX, cW, cb = (cupy.asarray(t) for t in (X, W, b))

            def cupy_features():
                cupy.cos(cX @ cW + cb)  # three n x s temporaries: timed only where they fit
            for name, base_fn, ours_fn, flops, bytes_moved in cases:
                if name == "features":
                    bufs["Z"] = torch.empty(n, s, device=dev, dtype=tdt)
                if name == "predict":
                    bufs["F"] = torch.empty(n, 1, device=dev, dtype=tdt)
                t_base = _timed_or_oom(base_fn, args.repeats, torch)
                t_ours = _timed_or_oom(ours_fn, args.repeats, torch)
                row = {"kernel": name, "dtype": dtype_name, "n": n, "d": d, "s": s,
                       "torch_s": t_base, "rffkern_s": t_ours,
                       "ratio_vs_torch": t_base / t_ours if t_base and t_ours else None,
                       "frac_peak_flops": flops / t_ours / PEAK_FLOPS[dtype_name] if t_ours else None,
                       "frac_hbm": bytes_moved / t_ours / HBM_BYTES_PER_S if t_ours else None,
                       "max_abs_diff_features_vs_torch": max_diff}
                if name == "features" and cupy is not None and 4 * n * s * item < free_bytes(torch):
                    t_cupy = _timed_or_oom(cupy_features, args.repeats, torch)
                    row["cupy_s"] = t_cupy
                    row["ratio_vs_cupy"] = t_cupy / t_ours if t_cupy and t_ours else None
                    cupy.get_default_memory_pool().free_all_blocks()
                bufs.clear()
                torch.cuda.empty_cache()
                rows.append(row)
                print(_row_text(row), flush=True)
            del cX, cW, cb
            if cupy is not None:
                cupy.get_default_memory_pool().free_all_blocks()
            torch.cuda.empty_cache()
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--d", type=int, default=100)
    ap.add_argument("--s", type=int, nargs="+", default=[1000, 4096])
    ap.add_argument("--dtype", nargs="+", default=["float32", "float64"], choices=["float32", "float64"])
    ap.add_argument("--repeats", type=int, default=10)
    ap.add_argument("--json", default=None, help="write the rows here")
    args = ap.parse_args(argv)
    problem = _environment_problem()
    if problem:
        print(f"bench_cuda.py: not run: {problem}. Run it on a machine with an NVIDIA GPU (H100 for the "
              "issue's numbers), the RFFKERN_CUDA=ON build and PyTorch.")
        return 0
    t0 = time.time()
    rows = run(args)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"rows": rows, "args": vars(args), "wall_s": time.time() - t0}, fh, indent=1)
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
