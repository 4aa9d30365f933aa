"""Sweep RFFNet settings on TUNING seeds (100.., never the bench's 0..4); pick by the mean best
validation loss ("val", half-MSE or cross-entropy on the estimator's own validation split); the
test metric is printed alongside for the record only.

    python bench/rffnet_sweep.py gse1 100,101,102,103 5000 "{}" "dict(alpha=3.0)"
"""
import ast, sys, itertools, json
import numpy as np
sys.path.insert(0, "bench")
from rffnet_explore import run

data = sys.argv[1]
seeds = [int(s) for s in sys.argv[2].split(",")]
n_train = int(sys.argv[3])
configs = [eval(c) for c in sys.argv[4:]]
for cfg in configs:
    rs = [run(data, s, cfg, n_train=n_train) for s in seeds]
    m = np.array([r["metric"] for r in rs]); v = np.array([r["val"] for r in rs])
    print(f"test {m.mean():.4f}+-{m.std():.4f} val {v.mean():.5f} hits {np.mean([r['hits'] for r in rs]):.1f} "
          f"ep {np.mean([r['epochs'] for r in rs]):.0f} t {np.mean([r['time'] for r in rs]):.1f}s  {cfg}", flush=True)
