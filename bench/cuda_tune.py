"""Time rffkern's CUDA kernels alone (no baseline), for tuning tile shapes: one line per case.

    python bench/cuda_tune.py [--cases features:float32:1000 ...] [--n 1000000] [--repeats 5]

Each case is kernel:dtype:s (kernel features, predict or gram; gram runs on --gram-n rows). Before
timing, each kernel is checked against a float64 PyTorch evaluation on 4096 rows (max abs error
printed), so a broken variant shows at once. bench/build_cuda_variants.sh builds variants of the
module to compare; bench/bench_cuda.py is the benchmark against PyTorch.
"""
from __future__ import annotations

import argparse

DEFAULT_CASES = [f"{k}:{t}:{s}" for t in ("float32", "float64") for s in (1000, 4096)
                 for k in ("features", "predict", "gram")]


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--cases", nargs="+", default=DEFAULT_CASES)
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--gram-n", type=int, default=200_000)
    ap.add_argument("--d", type=int, default=100)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--label", default="")
    args = ap.parse_args(argv)
    import torch

    from rffkern import kernels

    torch.backends.cuda.matmul.allow_tf32 = False
    dev = torch.device("cuda")
    gen = torch.Generator(device=dev).manual_seed(0)
    out = []
    for case in args.cases:
        name, dtype_name, s = case.split(":")
        s = int(s)
        tdt = getattr(torch, dtype_name)
        n = args.gram_n if name == "gram" else args.n
        X = torch.randn(n, args.d, device=dev, dtype=tdt, generator=gen)
        W = torch.randn(args.d, s, device=dev, dtype=tdt, generator=gen) / args.d**0.5
        b = torch.rand(s, device=dev, dtype=tdt, generator=gen) * 6.283185307179586
        coef = torch.randn(s, 1, device=dev, dtype=tdt, generator=gen)
        y = torch.randn(n, 1, device=dev, dtype=tdt, generator=gen)
        c = (2.0 / s) ** 0.5
        Zr = torch.cos(X[:4096].double() @ W.double() + b.double()) * c
        if name == "features":
            Z = torch.empty(n, s, device=dev, dtype=tdt)
            err = float((kernels.features(X[:4096], W, b, scale=c).double() - Zr).abs().max())
            fn = lambda: kernels.features(X, W, b, scale=c, out=Z)  # noqa: E731
            flops = 2.0 * n * args.d * s
        elif name == "predict":
            F = torch.empty(n, 1, device=dev, dtype=tdt)
            err = float((kernels.predict(X[:4096], W, b, coef, scale=c).double() - Zr @ coef.double()).abs().max())
            fn = lambda: kernels.predict(X, W, b, coef, scale=c, out=F)  # noqa: E731
            flops = 2.0 * n * args.d * s
        else:
            G = kernels.gram(X[:4096], W, b, scale=c)
            err = float((G.double() - Zr.T @ Zr).abs().max())
            fn = lambda: kernels.gram(X, W, b, y, scale=c)  # noqa: E731
            flops = 2.0 * n * args.d * s + 1.0 * n * s * s
        fn()
        torch.cuda.synchronize()
        times = []
        for _ in range(args.repeats):
            e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            e0.record()
            fn()
            e1.record()
            torch.cuda.synchronize()
            times.append(e0.elapsed_time(e1))
        times.sort()
        t = times[len(times) // 2]
        peak = 67e12 if dtype_name == "float32" else 34e12
        line = (f"{args.label:8s} {name:8s} {dtype_name} s={s:5d} n={n:8d}: {t:9.3f} ms  "
                f"{100 * flops / (t / 1e3) / peak:5.1f}% of peak  max err {err:.1e}")
        print(line, flush=True)
        out.append(line)
        del X, W, b, coef, y
        torch.cuda.empty_cache()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
