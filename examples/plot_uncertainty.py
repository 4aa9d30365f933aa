"""
Uncertainty: predictive bands, conformal intervals and posterior function draws
===============================================================================

A ridge on random Fourier features is the posterior mean of a Bayesian linear model, and its
exact leave-one-out residuals come in closed form (see :doc:`/user_guide/uncertainty`). Here a
noisy sine with a gap in its inputs is fitted once; the left panel shows the Gaussian predictive
band (``predict(X, return_std=True)``) and three posterior function draws
(``sample_functions``), which spread out in the gap; the right panel the 90% conformal intervals
of the two conformity scores (``predict_interval``): normalized by the posterior, wider in the gap,
or plain jackknife residuals, one width everywhere. The printed coverages are on fresh rows drawn
outside the gap, where the training rows are exchangeable with them; with about 500 training rows
the coverage of one fit varies by about 0.015 (one standard deviation) around its guarantee.
"""
import matplotlib.pyplot as plt
import numpy as np

from rffkern import RFFRidge
from rffkern.plot import interval_band

rng = np.random.default_rng(0)


def sample(n):
    x = rng.uniform(-4, 4, n)
    x = x[np.abs(x - 1.0) > 0.8]  # a gap around x = 1
    return x[:, None], np.sin(1.5 * x) + 0.25 * rng.standard_normal(x.size)


X, y = sample(600)
model = RFFRidge(300, random_state=0).fit(X, y)
grid = np.linspace(-4, 4, 400)[:, None]

fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4), sharey=True)
interval_band(model, grid, band="std", n_draws=3, ax=left, title="predictive band and 3 posterior draws")
left.scatter(X[:, 0], y, s=4, color="tab:orange")
interval_band(model, grid, ax=right, title="90% conformal intervals")
lo, hi = model.predict_interval(grid, method="jackknife").T
right.plot(grid[:, 0], lo, "k--", lw=1, label="jackknife")
right.plot(grid[:, 0], hi, "k--", lw=1)
right.legend(loc="lower left", fontsize="small")

X_new, y_new = sample(4000)
for method in ("normalized", "jackknife"):
    lo, hi = model.predict_interval(X_new, coverage=0.9, method=method).T
    print(f"{method}: coverage {np.mean((y_new >= lo) & (y_new <= hi)):.3f}, mean width {np.mean(hi - lo):.3f}")
print(f"noise variance {model.noise_variance_:.4f} (true 0.0625), log evidence {model.log_marginal_likelihood():.1f}")
plt.show()
