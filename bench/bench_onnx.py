"""Inference speed of exported models: onnxruntime against rffkern's own predict.

For each model (fitted on 2000 rows of d inputs with n_components = 1000): RFFRidge.predict,
RFFRidgeClassifier.predict_proba (3 classes), RFFNetRegressor.predict and Fastfood.transform,
timed on batches of 1, 1000 and 100000 rows, against onnxruntime running the float32 graph of
``rffkern.onnx.to_onnx`` with one intra-op thread and with its default (every core). rffkern
runs on float32 rows as well (its compiled kernels keep float32), with ``n_jobs=1`` and its
default (every usable core). The ratios are onnxruntime's time over rffkern's at the same thread
setting (> 1: rffkern is faster), all measured in the same run; the methods run in turn within
every repetition, so load changes on a shared machine hit them alike. Each time is the median of
the repetitions (--reps for batches up to 1000 rows, 3 for 100000 rows unless --big-reps).

onnxruntime materialises the n x 1000 phase and feature matrices (400 MB each in float32 at
100000 rows); rffkern's fused kernels never form them. ``--memory`` measures it: the peak
resident memory gained during one call on 100000 rows (RFFRidge.predict, d = 50), each method in
a fresh process (Linux: the peak is reset through /proc/self/clear_refs before the call).

    python bench/bench_onnx.py                      # d = 50
    python bench/bench_onnx.py --d 10 100 --reps 50
    python bench/bench_onnx.py --memory              # the memory part only

Writes bench/results/bench_onnx.json.
"""
from __future__ import annotations

import argparse
import copy
import json
import os
import pathlib
import platform
import time

import numpy as np
import onnxruntime as ort

import rffkern as rk
from rffkern import _core
from rffkern.onnx import to_onnx

BATCHES = (1, 1000, 100_000)
COMPONENTS = 1000


def models(d, rng):
    """``{name: (fitted model, method name)}`` on 2000 training rows of d inputs."""
    X = rng.standard_normal((2000, d))
    y = np.sin(X[:, 0]) + X[:, 1] ** 2 + 0.1 * rng.standard_normal(2000)
    labels = np.digitize(y, np.quantile(y, [1 / 3, 2 / 3]))
    return {
        "RFFRidge.predict": (rk.RFFRidge(COMPONENTS, random_state=0).fit(X, y), "predict"),
        "RFFRidgeClassifier.predict_proba": (rk.RFFRidgeClassifier(COMPONENTS, random_state=0).fit(X, labels),
                                             "predict_proba"),
        "RFFNetRegressor.predict": (rk.RFFNetRegressor(COMPONENTS, max_iter=3, random_state=0).fit(X, y), "predict"),
        "Fastfood.transform": (rk.Fastfood(COMPONENTS, random_state=0).fit(X), "transform"),
    }


def session(onx, threads):
    options = ort.SessionOptions()
    if threads is not None:
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
    return ort.InferenceSession(onx.SerializeToString(), options, providers=["CPUExecutionProvider"])


def interleaved_medians(fns, reps):
    """Median seconds of each callable, the callables run in turn within every repetition."""
    for fn in fns.values():
        fn()  # warm-up
    times = {k: [] for k in fns}
    for _ in range(reps):
        for k, fn in fns.items():
            t0 = time.perf_counter()
            fn()
            times[k].append(time.perf_counter() - t0)
    return {k: float(np.median(v)) for k, v in times.items()}


def callables(model, method, onx, X):
    """rffkern's method at n_jobs=1 and at its default, onnxruntime at one thread and at its default."""
    serial = copy.deepcopy(model).set_params(n_jobs=1)
    parallel = copy.deepcopy(model).set_params(n_jobs=None)
    one, default = session(onx, 1), session(onx, None)
    name = one.get_inputs()[0].name
    return {
        "rffkern_1": lambda: getattr(serial, method)(X),
        "rffkern_default": lambda: getattr(parallel, method)(X),
        "ort_1": lambda: one.run(None, {name: X}),
        "ort_default": lambda: default.run(None, {name: X}),
    }


def check_agreement(fns, method):
    """onnxruntime's output against rffkern's on the timed rows (largest difference over the output's scale)."""
    ours = np.asarray(fns["rffkern_default"](), np.float64)
    theirs = fns["ort_1"]()
    theirs = np.asarray(theirs[1] if method == "predict_proba" else theirs[0], np.float64).reshape(ours.shape)
    return float(np.abs(theirs - ours).max() / max(np.abs(ours).max(), 1e-300))


def bench(d, reps, big_reps, rng):
    rows = []
    for label, (model, method) in models(d, rng).items():
        onx = to_onnx(model, np.zeros((1, d)), options={"zipmap": False} if method == "predict_proba" else None)
        for n in BATCHES:
            X = rng.standard_normal((n, d)).astype(np.float32)
            fns = callables(model, method, onx, X)
            t = interleaved_medians(fns, reps if n <= 1000 else big_reps)
            row = dict(model=label, d=d, batch=n, seconds=t, error=check_agreement(fns, method),
                       ratio_1=t["ort_1"] / t["rffkern_1"], ratio_default=t["ort_default"] / t["rffkern_default"])
            rows.append(row)
            print(f"{label:34s} {d:4d} {n:7d} {t['rffkern_1'] * 1e3:11.3f} {t['ort_1'] * 1e3:11.3f} "
                  f"{row['ratio_1']:8.2f} {t['rffkern_default'] * 1e3:11.3f} {t['ort_default'] * 1e3:11.3f} "
                  f"{row['ratio_default']:8.2f} {row['error']:9.1e}", flush=True)
    return rows


def _status_kb(field):
    for line in pathlib.Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise RuntimeError(f"no {field} in /proc/self/status")


def _peak_growth_mb(method, queue):
    """(In a child process.) The peak RSS gained by one call of ``method`` on 100000 rows."""
    rng = np.random.default_rng(0)
    model, _ = models(50, rng)["RFFRidge.predict"]
    X = rng.standard_normal((100_000, 50)).astype(np.float32)
    if method.startswith("ort"):
        one = session(to_onnx(model, X), 1 if method == "ort_1" else None)
        call = lambda: one.run(None, {"X": X})  # noqa: E731
    else:
        model.set_params(n_jobs=1 if method == "rffkern_1" else None)
        call = lambda: model.predict(X)  # noqa: E731
    pathlib.Path("/proc/self/clear_refs").write_text("5")  # reset the peak (VmHWM) to the current RSS
    before = _status_kb("VmRSS")
    call()
    queue.put((_status_kb("VmHWM") - before) / 1024)


def memory():
    import multiprocessing

    context = multiprocessing.get_context("spawn")
    growth = {}
    for method in ("rffkern_1", "rffkern_default", "ort_1", "ort_default"):
        queue = context.Queue()
        child = context.Process(target=_peak_growth_mb, args=(method, queue))
        child.start()
        growth[method] = queue.get()
        child.join()
        print(f"{method:16s} peak RSS growth {growth[method]:8.1f} MB (100000 x 50 float32 rows: "
              f"{100_000 * 50 * 4 / 2**20:.0f} MB; output {100_000 * 4 / 2**20:.1f} MB)", flush=True)
    return growth


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--d", type=int, nargs="+", default=[50], help="input dimensions")
    ap.add_argument("--reps", type=int, default=30, help="repetitions for batches of up to 1000 rows")
    ap.add_argument("--big-reps", type=int, default=3, help="repetitions for the 100000-row batch")
    ap.add_argument("--out", default=None, help="file name in bench/results/ (default: bench_onnx.json, "
                    "bench_onnx_memory.json with --memory)")
    ap.add_argument("--memory", action="store_true", help="only the peak-memory part")
    args = ap.parse_args()
    if args.reps < 5 or args.big_reps < 3:
        ap.error("--reps must be >= 5 and --big-reps >= 3")
    print(f"rffkern {rk.__version__} isa={_core.active_isa()} onnxruntime {ort.__version__} "
          f"cores={os.cpu_count()} load={os.getloadavg()[0]:.1f}")
    out = dict(machine=platform.processor() or platform.machine(), isa=_core.active_isa(),
               onnxruntime=ort.__version__, rffkern=rk.__version__, cpu_count=os.cpu_count(), args=vars(args))
    if args.memory:
        out["peak_growth_mb"] = memory()
    else:
        print("ms per call (median); ratio = onnxruntime / rffkern at the same threads (> 1: rffkern faster); "
              "error = max |ort - rffkern| / max |rffkern|")
        print(f"{'model':34s} {'d':>4s} {'batch':>7s} {'rffkern 1t':>11s} {'ort 1t':>11s} {'ratio':>8s} "
              f"{'rffkern all':>11s} {'ort all':>11s} {'ratio':>8s} {'error':>9s}")
        rng = np.random.default_rng(0)
        out["rows"] = [row for d in args.d for row in bench(d, args.reps, args.big_reps, rng)]
    out["load_avg"] = os.getloadavg()
    name = args.out or ("bench_onnx_memory.json" if args.memory else "bench_onnx.json")
    path = pathlib.Path(__file__).resolve().parent / "results" / name
    path.parent.mkdir(exist_ok=True)
    path.write_text(json.dumps(out, indent=1))
    print(f"\nwrote {path}")


if __name__ == "__main__":
    main()
