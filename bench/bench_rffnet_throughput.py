"""RFFNet training throughput: rffkern's compiled epoch against a straightforward PyTorch loop.

Both run the same step on the same data: f = cos((x * theta) @ W + b) @ B (c = 1, s features,
one output), squared loss 1/2 (f - y)^2 averaged over the mini-batch, one Adam step on (B, theta)
(beta = 0.9/0.999, eps 1e-8), then the prox of alpha ||B||^2, B /= 1 + 2 alpha lr. PyTorch uses
autograd + torch.optim.Adam with torch.set_num_threads(threads); rffkern one call of
kernels.train_epoch per epoch. Times are medians of --reps repetitions, measured in one run, and
the table shows samples/s and the ratio rffkern / PyTorch (> 1: rffkern faster).

Part two: a whole RFFNet fit on gse1 (n = 5000, defaults: s = 300, batch 32, lr 1e-3, at most 100
epochs, 10% validation, patience 10, checkpointing, constant rate) with RFFNetRegressor against the same loop
written in PyTorch (same split, same standardization, same W, b, initial B and theta, same
per-epoch shuffles), comparing wall time and test MSE.

    python bench/bench_rffnet_throughput.py                       # the issue's grid, n = 100000
    python bench/bench_rffnet_throughput.py --n 20000 --reps 3    # reduced

torch is an optional benchmark dependency (pip install torch==2.13.0, the CPU build); the rffkern
package never imports it.
"""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from _timing import median_time




# ------------------------------------------------------------------ the PyTorch implementation
class TorchRFFNet:
    """The RFFNet step in plain PyTorch: autograd + torch.optim.Adam + the prox on B."""

    def __init__(self, W, b, theta, coef, lr=1e-3, alpha=1e-4):
        import torch

        self.torch = torch
        self.W = torch.from_numpy(np.ascontiguousarray(W))
        self.b = torch.from_numpy(np.ascontiguousarray(b))
        self.theta = torch.nn.Parameter(torch.from_numpy(np.array(theta)))
        self.B = torch.nn.Parameter(torch.from_numpy(np.array(coef)))
        self.opt = torch.optim.Adam([self.B, self.theta], lr=lr, betas=(0.9, 0.999), eps=1e-8)
        self.shrink = 1.0 / (1.0 + 2.0 * alpha * lr)

    def forward(self, x):
        return self.torch.cos((x * self.theta) @ self.W + self.b) @ self.B

    def epoch(self, X, Y, order, batch_size):
        torch = self.torch
        total, count = 0.0, 0
        for start in range(0, len(order), batch_size):
            idx = order[start:start + batch_size]
            xb, yb = X[idx], Y[idx]
            self.opt.zero_grad(set_to_none=True)
            loss = 0.5 * ((self.forward(xb) - yb) ** 2).sum(dim=1).mean()
            loss.backward()
            self.opt.step()
            with torch.no_grad():
                self.B.mul_(self.shrink)
            total += float(loss.detach())
            count += 1
        return total / max(count, 1)

    def mean_loss(self, X, Y):
        with self.torch.no_grad():
            return float(0.5 * ((self.forward(X) - Y) ** 2).sum(dim=1).mean())


# ------------------------------------------------------------------ part 1: one epoch
def epoch_grid(args, results):
    import torch

    from rffkern import kernels

    rng = np.random.default_rng(0)
    d = args.d
    X = rng.standard_normal((args.n, d)).astype(np.float32)
    Y = np.sin(X[:, :1] * X[:, 1:2]).astype(np.float32)
    order = rng.permutation(args.n)
    print(f"\nOne epoch, n={args.n}, d={d}, float32, median of {args.reps}; samples/s and ratio vs PyTorch")
    header = f"{'s':>5} {'batch':>5} {'thr':>3} | {'rffkern':>12} {'pytorch':>12} | {'ratio':>6}  target"
    print(header)
    print("-" * len(header))
    for s in args.components:
        W = rng.standard_normal((d, s)).astype(np.float32)
        b = rng.uniform(0, 2 * np.pi, s).astype(np.float32)
        theta0 = np.full(d, 0.1, np.float32)
        coef0 = rng.uniform(-1 / np.sqrt(s), 1 / np.sqrt(s), (s, 1)).astype(np.float32)
        for batch in args.batches:
            for threads in args.threads:
                theta, coef = theta0.copy(), coef0.copy()
                state = kernels.AdamState(coef.shape, d, np.float32)

                def ours():
                    kernels.train_epoch(X, Y, order, W, b, theta, coef, state, batch_size=batch,
                                        learning_rate=1e-3, l2_coef=1e-4, scale=1.0, n_threads=threads)

                t_ours = median_time(ours, args.reps)
                torch.set_num_threads(threads)
                model = TorchRFFNet(W, b, theta0, coef0)
                Xt, Yt, ot = torch.from_numpy(X), torch.from_numpy(Y), torch.from_numpy(order)
                t_torch = median_time(lambda: model.epoch(Xt, Yt, ot, batch), args.torch_reps)
                ratio = t_torch / t_ours
                target = 8.0 if batch <= 32 else 1.5
                ok = "ok" if ratio >= target else "MISSED"
                print(f"{s:5d} {batch:5d} {threads:3d} | {args.n / t_ours:12,.0f} {args.n / t_torch:12,.0f} | "
                      f"{ratio:6.2f}  >= {target:g}x {ok}", flush=True)
                results["epoch"].append(dict(s=s, batch=batch, threads=threads, n=args.n, d=d,
                                             rffkern_s=t_ours, torch_s=t_torch, ratio=ratio,
                                             target=target))


# ------------------------------------------------------------------ part 2: a whole gse1 fit
def torch_fit(X, y, est_like, reps_seed, threads):
    """The RFFNetRegressor fit loop (defaults) written in PyTorch, with the estimator's draws."""
    import torch

    from rffkern._sampling import draw_frequencies, draw_offsets

    torch.set_num_threads(threads)
    rng = np.random.default_rng(reps_seed)
    n, d = X.shape
    s = est_like["n_components"]
    W = draw_frequencies("gaussian", d, s, 1.0, rng, np.float32)
    b = draw_offsets(s, rng, np.float32)
    coef = rng.uniform(-1 / np.sqrt(s), 1 / np.sqrt(s), (s, 1)).astype(np.float32)
    n_val = int(np.ceil(0.1 * n))
    perm = rng.permutation(n)
    val, tr = np.sort(perm[:n_val]), np.sort(perm[n_val:])
    mu, sd = X[tr].mean(0), X[tr].std(0)
    Xs = ((X - mu) / sd).astype(np.float32)
    y_mean = y[tr].mean()
    Y = (y - y_mean).astype(np.float32).reshape(-1, 1)
    theta = ((Xs[tr].max(0) - Xs[tr].min(0)) / d).astype(np.float32)
    model = TorchRFFNet(W, b, theta, coef)
    Xtr, Ytr = torch.from_numpy(Xs[tr]), torch.from_numpy(Y[tr])
    Xv, Yv = torch.from_numpy(Xs[val]), torch.from_numpy(Y[val])
    best, best_state, stall = np.inf, None, 0
    for _ in range(100):
        model.epoch(Xtr, Ytr, torch.from_numpy(rng.permutation(len(tr))), 32)
        v = model.mean_loss(Xv, Yv)
        if v < best:
            best, stall = v, 0
            best_state = (model.theta.detach().clone(), model.B.detach().clone())
        else:
            stall += 1
        if stall >= 10:
            break
    with torch.no_grad():
        model.theta.copy_(best_state[0])
        model.B.copy_(best_state[1])

    def predict(Xnew):
        with torch.no_grad():
            Xn = torch.from_numpy(((Xnew - mu) / sd).astype(np.float32))
            return model.forward(Xn).numpy()[:, 0].astype(np.float64) + y_mean

    return predict


def gse1_fit(args, results):
    from rffkern.datasets import make_gse1
    from rffkern.rffnet import RFFNetRegressor

    print(f"\ngse1 fit, n=5000, RFFNetRegressor defaults with the constant rate (float32) vs the same "
          f"loop in PyTorch; "
          f"median of {args.fit_reps} seeds")
    header = f"{'threads':>7} | {'rffkern s':>9} {'pytorch s':>9} | {'ratio':>6} | {'MSE rffkern':>11} {'MSE torch':>9}"
    print(header)
    print("-" * len(header))
    from rffkern._validation import available_cores

    # "default": the estimator's n_jobs=None (all cores; the core runs gse1's small batches on one
    # thread) against torch's default thread count (all cores).
    for threads in ["default", *args.threads]:
        t_ours, t_torch, mse_ours, mse_torch = [], [], [], []
        n_jobs = None if threads == "default" else threads
        torch_threads = available_cores() if threads == "default" else threads
        for seed in range(args.fit_reps):
            X, y, _ = make_gse1(5000, random_state=seed)
            X_test, y_test, _ = make_gse1(2000, random_state=1000 + seed)
            t0 = time.perf_counter()
            # the constant rate: the loop torch_fit writes out (the estimator's default "adaptive"
            # schedule would run further epochs at reduced rates)
            est = RFFNetRegressor(random_state=seed, n_jobs=n_jobs, standardize=True,  # as torch_fit
                                  learning_rate_schedule="constant").fit(X, y)
            t_ours.append(time.perf_counter() - t0)
            mse_ours.append(np.mean((est.predict(X_test) - y_test) ** 2))
            t0 = time.perf_counter()
            predict = torch_fit(X, y, est.get_params(), seed, torch_threads)
            t_torch.append(time.perf_counter() - t0)
            mse_torch.append(np.mean((predict(X_test) - y_test) ** 2))
        to, tt = float(np.median(t_ours)), float(np.median(t_torch))
        print(f"{threads!s:>7} | {to:9.3f} {tt:9.3f} | {tt / to:6.2f} | {np.mean(mse_ours):11.4f} "
              f"{np.mean(mse_torch):9.4f}   (target >= 10x)", flush=True)
        results["gse1_fit"].append(dict(threads=threads, rffkern_s=to, torch_s=tt, ratio=tt / to,
                                        mse_rffkern=float(np.mean(mse_ours)),
                                        mse_torch=float(np.mean(mse_torch)), seeds=args.fit_reps))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--n", type=int, default=100_000)
    p.add_argument("--d", type=int, default=100)
    p.add_argument("--components", type=int, nargs="+", default=[300, 1000])
    p.add_argument("--batches", type=int, nargs="+", default=[32, 512])
    p.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    p.add_argument("--reps", type=int, default=5, help="repetitions of the rffkern epoch")
    p.add_argument("--torch-reps", type=int, default=5, help="repetitions of the PyTorch epoch")
    p.add_argument("--fit-reps", type=int, default=5, help="seeds of the gse1 fit comparison")
    p.add_argument("--skip-epoch", action="store_true")
    p.add_argument("--skip-fit", action="store_true")
    args = p.parse_args()
    try:
        import torch  # noqa: F401
    except ImportError:
        raise SystemExit("this benchmark needs torch: pip install torch==2.13.0")
    results = dict(args=vars(args), epoch=[], gse1_fit=[])
    if not args.skip_epoch:
        epoch_grid(args, results)
    if not args.skip_fit:
        gse1_fit(args, results)
    out = Path(__file__).parent / "results" / "bench_rffnet_throughput.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(results, indent=2))
    print(f"\nwrote {out}")


if __name__ == "__main__":
    main()
