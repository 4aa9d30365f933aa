"""Timing shared by the bench scripts (imported as ``from _timing import median_time``: each script
runs with bench/ on sys.path)."""
from __future__ import annotations

import time

import numpy as np


def median_time(fn, reps):
    """Median wall time of ``reps`` calls of ``fn`` after one warm-up call (page faults of fresh
    outputs, thread start-up)."""
    fn()
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return float(np.median(times))
