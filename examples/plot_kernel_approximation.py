"""
Kernel approximation error of RFF, ORF, SORF and Fastfood
=========================================================

Every feature map approximates the Gaussian kernel
:math:`k(x, x') = \\exp(-\\|x - x'\\|^2 / (2\\sigma^2))` by an inner product of random
features, :math:`k(x, x') \\approx z(x)^\\top z(x')`. The error of i.i.d. random Fourier features
decreases like :math:`1/\\sqrt{s}` in the number of features ``s``; orthogonal random features
(ORF) and their structured version (SORF) have lower variance, and Fastfood and SORF compute
the map in :math:`O(s \\log d)` instead of :math:`O(s d)` per sample (see
:doc:`/user_guide/feature_maps`). Here we measure the relative Frobenius error of the
approximate kernel matrix against the exact one, averaged over a few seeds.
"""
import os

import matplotlib.pyplot as plt
import numpy as np

import rffkern
from rffkern.plot import kernel_approximation

FAST = bool(os.environ.get("RFFKERN_DOCS_FAST") or os.environ.get("CI"))
n_samples, n_features = 400, 32
sizes = [64, 128, 256, 512, 1024, 2048] if FAST else [64, 128, 256, 512, 1024, 2048, 4096]
n_seeds = 3 if FAST else 5

rng = np.random.default_rng(0)
X = rng.standard_normal((n_samples, n_features))
sigma = np.sqrt(n_features)  # the kernel width on the scale of the distances
sq_dist = ((X[:, None, :] - X[None, :, :]) ** 2).sum(-1)
K = np.exp(-sq_dist / (2 * sigma ** 2))

maps = {
    "RFF": lambda s, seed: rffkern.RandomFourierFeatures(s, length_scale=sigma, random_state=seed),
    "ORF": lambda s, seed: rffkern.OrthogonalRandomFeatures(s, length_scale=sigma, random_state=seed),
    "SORF": lambda s, seed: rffkern.StructuredOrthogonalFeatures(s, length_scale=sigma, random_state=seed),
    "Fastfood": lambda s, seed: rffkern.Fastfood(s, length_scale=sigma, random_state=seed),
}
errors = {name: [] for name in maps}
for name, make in maps.items():
    for s in sizes:
        per_seed = []
        for seed in range(n_seeds):
            Z = make(s, seed).fit_transform(X)
            per_seed.append(np.linalg.norm(Z @ Z.T - K) / np.linalg.norm(K))
        errors[name].append(np.mean(per_seed))
    print(f"{name:9s}", " ".join(f"{e:.4f}" for e in errors[name]))

# %%
# All four follow the Monte Carlo rate; the orthogonal maps sit below i.i.d. RFF.
kernel_approximation(sizes, errors, title=f"Gaussian kernel, n={n_samples}, d={n_features}")
plt.show()
