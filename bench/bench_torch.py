"""rffkern.torch.RandomFourierLayer against the same layer written in plain PyTorch: forward + backward.

Both layers hold the same W, b (buffers), relevances theta, readout coef and bias (parameters), in
float32: ``F = sqrt(2/s) cos((x * theta) @ W + b) @ coef + bias``. One step is the forward pass, a
mean squared error on the batch, and ``loss.backward()`` (gradients to theta, coef and bias). Each
time is the median over --reps of a block of --inner steps (per step), the two layers measured
alternately in the same run; ``torch.set_num_threads(t)`` for both, and the rffkern layer's
``n_threads=t``. The table shows the time per step and the ratio PyTorch / rffkern (> 1: rffkern
faster); the first step's outputs and gradients of the two layers are compared (max relative gap).

    python bench/bench_torch.py                 # d = 100, s in {300, 1000}, batch in {32, 512}, 1 and 2 threads
    python bench/bench_torch.py --reps 5 --inner 20
    python bench/bench_torch.py --floor   # also the rffkern layer with its two kernel calls made no-ops

``--floor`` adds a column: the rffkern layer's step with its compiled calls (``predict`` and
``loss_and_grad``, or ``features`` on the pair path of batches >= rffkern.torch._PAIR_MIN_ROWS)
replaced by functions that return at once (outputs left uninitialised): the cost of everything
around the kernels (the module call, autograd, the loss, the bias), which no kernel speed-up
removes. On the pair path that includes the PyTorch (BLAS) products on the pair features.

Writes bench/results/bench_torch.json. torch is an optional dependency (pip install "rffkern[torch]").
"""
from __future__ import annotations

import argparse
import json
import platform
from pathlib import Path

import numpy as np

from _timing import median_time


def plain_layer(layer):
    """The same layer in plain PyTorch, on copies of ``layer``'s tensors."""
    import torch

    class PlainRandomFourier(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("weights", layer.weights.detach().clone())
            self.register_buffer("offsets", layer.offsets.detach().clone())
            self.relevances = torch.nn.Parameter(layer.relevances.detach().clone())
            self.coef = torch.nn.Parameter(layer.coef.detach().clone())
            self.bias = torch.nn.Parameter(layer.bias.detach().clone())
            self.scale = layer.scale

        def forward(self, x):
            return (self.scale * torch.cos((x * self.relevances) @ self.weights + self.offsets)) @ self.coef + self.bias

    return PlainRandomFourier()


def make_step(model, X, y):
    import torch

    def step():
        model.zero_grad(set_to_none=True)
        loss = torch.nn.functional.mse_loss(model(X), y)
        loss.backward()
        return loss

    return step


def gradient_gap(ours, plain, X, y):
    """Max relative gap between the two layers' outputs and gradients after one step."""
    import torch

    with torch.no_grad():
        a, b = ours(X), plain(X)
        gaps = [float((a - b).abs().max() / b.abs().max())]
    make_step(ours, X, y)()
    make_step(plain, X, y)()
    for name in ("relevances", "coef", "bias"):
        ga, gb = getattr(ours, name).grad, getattr(plain, name).grad
        gaps.append(float((ga - gb).abs().max() / gb.abs().max()))
    return max(gaps)


def run_case(d, s, batch, threads, args):
    import torch

    from rffkern.torch import RandomFourierLayer

    torch.set_num_threads(threads)
    rng = np.random.default_rng(0)
    X = torch.from_numpy(rng.normal(size=(batch, d)).astype(np.float32))
    y = torch.from_numpy(rng.normal(size=(batch, 1)).astype(np.float32))
    ours = RandomFourierLayer(d, s, out_features=1, length_scale=float(np.sqrt(d)), random_state=0,
                              n_threads=threads, dtype=torch.float32)
    plain = plain_layer(ours)
    gap = gradient_gap(ours, plain, X, y)
    steps = {"pytorch": make_step(plain, X, y), "rffkern": make_step(ours, X, y)}

    def block(fn):
        return lambda: [fn() for _ in range(args.inner)]

    times = {k: [] for k in steps}
    for _ in range(args.rounds):  # alternate so that both see the same machine load
        for name, fn in steps.items():
            times[name].append(median_time(block(fn), args.reps) / args.inner)
    t_torch, t_ours = float(np.median(times["pytorch"])), float(np.median(times["rffkern"]))
    row = {"d": d, "s": s, "batch": batch, "threads": threads, "pytorch_us": 1e6 * t_torch,
           "rffkern_us": 1e6 * t_ours, "ratio": t_torch / t_ours, "max_rel_gap": gap}
    if args.floor:
        row["floor_us"] = 1e6 * floor_time(steps["rffkern"], args)
    return row


def floor_time(step, args):
    """The rffkern step with its compiled calls made no-ops (see --floor)."""
    import rffkern.torch as rt

    class NoKernels:
        def features(self, *args):
            pass

        def predict(self, *args):
            pass

        def loss_and_grad(self, *args):
            pass

    core, rt._core = rt._core, NoKernels()
    try:
        with np.errstate(all="ignore"):  # the gradients are uninitialised memory
            return median_time(lambda: [step() for _ in range(args.inner)], args.reps) / args.inner
    finally:
        rt._core = core


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--d", type=int, default=100)
    parser.add_argument("--s", type=int, nargs="+", default=[300, 1000])
    parser.add_argument("--batch", type=int, nargs="+", default=[32, 512])
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--reps", type=int, default=7, help="blocks timed per round (median)")
    parser.add_argument("--inner", type=int, default=20, help="steps per timed block")
    parser.add_argument("--rounds", type=int, default=3, help="alternations of the two layers (median)")
    parser.add_argument("--floor", action="store_true", help="also time the layer without its kernels")
    parser.add_argument("--out", default=str(Path(__file__).parent / "results" / "bench_torch.json"))
    args = parser.parse_args()

    import torch

    import rffkern

    rows = []
    print(f"{'batch':>6} {'s':>5} {'thr':>4} {'pytorch us':>11} {'rffkern us':>11} {'ratio':>7} {'max gap':>9}"
          + (f" {'floor us':>9}" if args.floor else ""))
    for batch in args.batch:
        for s in args.s:
            for threads in args.threads:
                r = run_case(args.d, s, batch, threads, args)
                rows.append(r)
                print(f"{batch:>6} {s:>5} {threads:>4} {r['pytorch_us']:>11.1f} {r['rffkern_us']:>11.1f} "
                      f"{r['ratio']:>7.2f} {r['max_rel_gap']:>9.1e}"
                      + (f" {r['floor_us']:>9.1f}" if args.floor else ""), flush=True)
    meta = {"torch": torch.__version__, "rffkern": rffkern.__version__, "isa": rffkern._core.active_isa(),
            "machine": platform.processor() or platform.machine(), "args": vars(args)}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps({"meta": meta, "rows": rows}, indent=1))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
