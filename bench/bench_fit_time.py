"""``rffkern.fit``'s time against another build of rffkern, side by side in one run.

Two worker processes, one importing this checkout's rffkern and one importing a base build, fit
each data set of ``bench_realdata``'s catalogue (split seed 0, ``random_state=0``) in the order
base, new, new, base, base, new, so that a change of load on a shared machine falls on both; the
ratio of the median fit times (new / base) is printed per set with each side's test error, the
model chosen, its input standardization and ``selection_report_["fit_times"]``.

Build the base once (any commit), outside the checkout::

    git worktree add /tmp/wt-base REV
    pip install --no-build-isolation --no-deps --target /tmp/base-site /tmp/wt-base

    python bench/bench_fit_time.py --base /tmp/base-site --sets abalone,ccpp,elevators
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np

ORDER = ("base", "new", "new", "base", "base", "new")


def worker(base: str | None) -> None:
    """Reads data-set names on stdin; prints one JSON line per fit."""
    if base:  # the base build, not this checkout's (editable) install
        sys.meta_path[:] = [f for f in sys.meta_path
                            if "Redirect" not in type(f).__name__ and "scikit" not in type(f).__module__.lower()]
        sys.path.insert(0, base)
    warnings.simplefilter("ignore")
    sys.path.insert(0, str(Path(__file__).parent))
    import bench_realdata as b

    import rffkern

    catalogue = b.dataset_catalogue()
    print(json.dumps({"rffkern": rffkern.__file__}), flush=True)
    split = (None, None)
    for line in sys.stdin:
        name = line.strip()
        task = catalogue[name]["task"]
        if split[0] != name:
            split = (name, b.split_dataset(b.load_dataset(name, catalogue), task, 0, None))
        X_train, X_test, y_train, y_test = split[1]
        tic = time.perf_counter()
        model = rffkern.fit(X_train, y_train, random_state=0)
        seconds = time.perf_counter() - tic
        report = getattr(model, "selection_report_", {})
        print(json.dumps({"fit": seconds, "err": b.score(model, task, X_test, y_test)["err"],
                          "chosen": report.get("chosen"), "standardize": str(report.get("standardize")),
                          "times": report.get("fit_times")}), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--base", required=True, help="folder holding the base build's rffkern package")
    parser.add_argument("--sets", required=True, help="comma-separated data-set names of bench_realdata")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        return worker(args.base or None)
    workers = {side: subprocess.Popen([sys.executable, __file__, "--worker", "--base", base, "--sets", ""],
                                      stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd="/")
               for side, base in (("base", args.base), ("new", ""))}
    for side, proc in workers.items():
        print(side, json.loads(proc.stdout.readline())["rffkern"], flush=True)

    def fit(side: str, name: str) -> dict:
        workers[side].stdin.write(name + "\n")
        workers[side].stdin.flush()
        return json.loads(workers[side].stdout.readline())

    ratios = []
    for name in args.sets.split(","):
        runs: dict[str, list] = {"base": [], "new": []}
        for side in ORDER:
            runs[side].append(fit(side, name))
        median = {side: float(np.median([r["fit"] for r in rs])) for side, rs in runs.items()}
        ratios.append(median["new"] / median["base"])
        shown = "  ".join(f"{side} {median[side]:.2f}s err {rs[0]['err']:.4f} {rs[0]['chosen']}/{rs[0]['standardize']} "
                          + " ".join(f"{k}={v:.2f}" for k, v in (rs[0]["times"] or {}).items())
                          for side, rs in runs.items())
        print(f"{name:20s} new/base {ratios[-1]:.2f}  {shown}", flush=True)
    print(f"median new/base {np.median(ratios):.3f}, geometric mean {np.exp(np.mean(np.log(ratios))):.3f}")


if __name__ == "__main__":
    main()
