"""
Throughput of the fused feature kernel
======================================

:class:`rffkern.RandomFourierFeatures` computes :math:`\\sqrt{2/s}\\cos(XW + b)` with one fused
compiled kernel (a register-blocked matrix product whose tiles go straight through a vector
cosine; see :doc:`/kernels`). We time ``transform`` against scikit-learn's
:class:`~sklearn.kernel_approximation.RBFSampler`, the same computation written in NumPy, and,
when it is installed, PyTorch on the CPU (rffkern never imports PyTorch; this example uses it
only if ``import torch`` works). The time of each is the median of a few repetitions; the bars
show rows per second. On a shared or busy machine the absolute numbers vary, the ratios much
less.
"""
import os
import time

import matplotlib.pyplot as plt
import numpy as np
from sklearn.kernel_approximation import RBFSampler

import rffkern

FAST = bool(os.environ.get("RFFKERN_DOCS_FAST") or os.environ.get("CI"))
n_samples, n_features, n_components = (4000 if FAST else 20000), 100, 1000
repeats = 3 if FAST else 5
X = np.random.default_rng(0).standard_normal((n_samples, n_features))


def median_time(call):
    call()  # warm up (threads, caches)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return float(np.median(times))


rff = rffkern.RandomFourierFeatures(n_components, length_scale=10.0, random_state=0).fit(X)
sampler = RBFSampler(gamma=1 / 200, n_components=n_components, random_state=0).fit(X)
W, b = rff.weights_, rff.offsets_
timings = {
    "rffkern": median_time(lambda: rff.transform(X)),
    "sklearn RBFSampler": median_time(lambda: sampler.transform(X)),
    "NumPy": median_time(lambda: np.sqrt(2 / n_components) * np.cos(X @ W + b)),
}

# %%
# PyTorch, only if it is installed
# --------------------------------
try:
    import torch
except ImportError:
    torch = None
    print("PyTorch is not installed: its bar is left out (pip install torch to include it).")
if torch is not None:
    Xt, Wt, bt = (torch.from_numpy(a) for a in (X, W, b))
    with torch.no_grad():
        timings["PyTorch (CPU)"] = median_time(lambda: (2 / n_components) ** 0.5 * torch.cos(Xt @ Wt + bt))

for name, seconds in timings.items():
    print(f"{name:20s} {seconds * 1e3:8.1f} ms  ({timings['rffkern'] / seconds:.2f}x rffkern's speed)")

fig, ax = plt.subplots(figsize=(6, 3.5))
names = list(timings)
ax.barh(names, [n_samples / timings[k] for k in names], color=["tab:orange"] + ["tab:blue"] * (len(names) - 1))
ax.set_xlabel("rows per second (higher is better)")
ax.set_title(f"float64 features: n={n_samples}, d={n_features}, s={n_components}")
fig.tight_layout()
plt.show()
