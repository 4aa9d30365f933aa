"""CPU burnt by idle OpenMP workers between kernel calls (the cost GOMP_SPINCOUNT bounds).

A loop of small 2-thread kernel calls, each followed by 1 ms of sleep (Python work between
calls, as in an estimator's fit loop), runs in a fresh interpreter per setting; the table gives
the process's CPU seconds per wall second (1.0 = one core busy on average). After each parallel
region libgomp's idle worker spins before it sleeps: the default (300k iterations) keeps it busy
through the gap, rffkern's bounded spin (20k, set only while the core loads) lets it sleep.

    python bench/bench_openmp_idle.py [--calls 2000] [--reps 3]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

CHILD = r"""
import os, sys, time
import numpy as np
import rffkern
from rffkern import kernels
X = np.random.default_rng(0).standard_normal((256, 10))
W = np.random.default_rng(1).standard_normal((10, 64))
out = np.empty((256, 64))
kernels.features(X, W, out=out, n_threads=2)
c0, t0 = time.process_time(), time.perf_counter()
for _ in range(int(sys.argv[1])):
    kernels.features(X, W, out=out, n_threads=2)
    time.sleep(0.001)
cpu, wall = time.process_time() - c0, time.perf_counter() - t0
print(cpu / wall, os.environ.get("GOMP_SPINCOUNT", "unset"))
"""

SETTINGS = [
    ("libgomp default (GOMP_SPINCOUNT=300000)", {"GOMP_SPINCOUNT": "300000"}),
    ("rffkern default (20000 while the core loads)", {}),
    ("OMP_WAIT_POLICY=PASSIVE", {"OMP_WAIT_POLICY": "PASSIVE"}),
]


def run(extra, calls):
    env = {k: v for k, v in os.environ.items() if k not in ("GOMP_SPINCOUNT", "OMP_WAIT_POLICY")}
    env.update(extra)
    out = subprocess.run([sys.executable, "-c", CHILD, str(calls)], env=env, check=True,
                         capture_output=True, text=True).stdout.split()
    return float(out[0]), out[1]


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--calls", type=int, default=2000)
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--out", default=None, help="JSON file for the rows")
    args = p.parse_args()
    rows = []
    print(f"{'setting':48s} {'CPU s / wall s (median)':>24s}  env seen after import")
    for name, extra in SETTINGS:
        vals, seen = [], None
        for _ in range(args.reps):
            v, seen = run(extra, args.calls)
            vals.append(v)
        med = statistics.median(vals)
        rows.append({"setting": name, "cpu_per_wall": med, "all": vals, "env_after_import": seen})
        print(f"{name:48s} {med:24.2f}  GOMP_SPINCOUNT={seen}")
    if args.out:
        with open(args.out, "w") as f:
            json.dump(rows, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
