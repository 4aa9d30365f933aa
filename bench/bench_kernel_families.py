"""Which kernel family fits real data: the Gaussian and Matérn kernels side by side, at each width.

The evidence behind ``RFFRidge(kernel="auto")``'s candidates (``rffkern.ridge.AUTO_MATERN_NUS``)
and its rule (compare at the Gaussian's width of least error). For every regression set of
``bench_realdata`` (messy ones included) and each seed: its 80/20 split, at most 3000 training
rows (as ``rffkern.fit``'s width search), raw X and y; ``RFFRidge(500, standardize=True)`` with
each kernel (Gaussian, Matérn nu 0.5, 1.5, 2.5) at the widths ``FACTORS`` times the median
heuristic, one shared draw (each Matérn map is the Gaussian one with other radii), the penalty by
exact leave-one-out at each width.

Printed per set: each kernel's leave-one-out error at each width over the Gaussian's least (so
1.000 marks the Gaussian's best width) and the test error (MSE / var(y_test)) of each kernel at
its own least-LOO width; then, over sets and seeds, how often each kernel has the least and the
largest test error, and where each kernel's least-LOO width lies relative to the Gaussian's.

    python bench/bench_kernel_families.py                 # seeds 0 1, every regression set
    python bench/bench_kernel_families.py --seeds 0 --datasets abalone kin40k
"""
from __future__ import annotations

import argparse
import collections
import sys
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_realdata as br  # noqa: E402

from rffkern import RFFRidge  # noqa: E402

FACTORS = (0.5, 1.0, 2.0, 4.0, 8.0)
KERNELS = (("gaussian", None), ("matern", 0.5), ("matern", 1.5), ("matern", 2.5))
MAX_TRAIN = 3000
COMPONENTS = 500


def name_of(kernel, nu):
    return kernel if nu is None else f"matern{nu:g}"


def one_set(data, seed):
    """``{kernel: (LOO error per width, test error at its least-LOO width)}`` for one split."""
    X_tr, X_te, y_tr, y_te = br.split_dataset(data, "regression", seed, MAX_TRAIN)
    median = RFFRidge(COMPONENTS, length_scale="median", standardize=True, random_state=seed).fit(X_tr, y_tr)
    widths = [median.length_scale_ * f for f in FACTORS]
    out = {}
    for kernel, nu in KERNELS:
        m = RFFRidge(COMPONENTS, kernel=kernel, nu=nu or 1.5, standardize=True, length_scale=widths,
                     random_state=seed).fit(X_tr, y_tr)
        test = float(np.mean((m.predict(X_te) - y_te) ** 2) / np.var(y_te))
        out[name_of(kernel, nu)] = (np.asarray(m.width_errors_, float), test)
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    parser.add_argument("--datasets", nargs="+", help="subset of the regression sets (default: all)")
    args = parser.parse_args(argv)
    warnings.filterwarnings("ignore")
    catalogue = br.dataset_catalogue()
    names = args.datasets or [n for n, e in catalogue.items() if e["task"] == "regression"]
    best, worst, shift = collections.Counter(), collections.Counter(), collections.defaultdict(collections.Counter)
    for name in names:
        data = br.load_dataset(name, catalogue)
        for seed in args.seeds:
            res = one_set(data, seed)
            g_loo = res["gaussian"][0]
            g_at = int(np.argmin(g_loo))
            print(f"{name} seed {seed} (widths x median: {', '.join(f'{f:g}' for f in FACTORS)})")
            for k, (loo, test) in res.items():
                print(f"  {k:9s} LOO/gauss-best " + " ".join(f"{v / g_loo[g_at]:.3f}" for v in loo)
                      + f" | test {test:.4f} ({test / res['gaussian'][1] - 1:+.4f} vs gaussian)")
                shift[k][int(np.argmin(loo)) - g_at] += 1
            tests = {k: v[1] for k, v in res.items()}
            best[min(tests, key=tests.get)] += 1
            worst[max(tests, key=tests.get)] += 1
            sys.stdout.flush()
    runs = sum(best.values())
    print(f"\n== over {runs} splits ({len(names)} sets x {len(args.seeds)} seeds) ==")
    print("kernel     least test error  largest test error  least-LOO width vs the Gaussian's (steps of 2x: count)")
    for kernel, nu in KERNELS:
        k = name_of(kernel, nu)
        steps = ", ".join(f"{s:+d}: {c}" for s, c in sorted(shift[k].items()))
        print(f"{k:9s}  {best[k]:16d}  {worst[k]:18d}  {steps}")


if __name__ == "__main__":
    main()
