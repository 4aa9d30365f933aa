"""Pure-NumPy reference of one step of the data-dependent learners (SRFF, adaptive RFF), written out
directly: features materialised, ``np.linalg.solve``, plain arithmetic.

The test oracle: it lives under tests/, imports nothing from rffkern, and the package never imports
it (``bench/bench_datadep.py`` puts tests/ on sys.path to time against it). Each function says which
production code it mirrors; the tests compare the two on seeded problems. Nothing here validates
input.
"""
from __future__ import annotations

import numpy as np


# ---- SRFF (rffkern.srff) --------------------------------------------------------------------------
def simplex_projection(v, radius):
    """Euclidean projection onto ``{x >= 0, sum(x) = radius}``: the threshold tau is found by scanning
    the entries in decreasing order (Held, Wolfe & Crowder)."""
    u = np.sort(np.asarray(v, np.float64))[::-1]
    tau = 0.0
    total = 0.0
    for k, uk in enumerate(u, start=1):
        total += uk
        candidate = (total - radius) / k
        if uk - candidate > 0:
            tau = candidate
    return np.maximum(v - tau, 0.0)


def srff_objective_and_grad(X, y, directions, b, a, gamma):
    """``h(gamma) = (1/2n)||y - Z a||^2`` with ``Z = cos((X * gamma) @ directions + b)`` and its gradient
    in gamma, by the chain rule (mirrors the squared-loss theta-gradient of ``kernels.loss_and_grad``)."""
    n = X.shape[0]
    U = (X * gamma) @ directions + b
    r = np.cos(U) @ a - y
    # d/dgamma_s of cos(U_ij) = -sin(U_ij) directions_sj x_is
    dU = -np.sin(U) * (r[:, None] * a[None, :])
    return 0.5 * (r @ r) / n, (X * (dU @ directions.T)).sum(0) / n


def srff_outer_step(X, y, directions, b, gamma, lam, radius, *, step_init=100.0, max_iter=100, tol=1e-5,
                    window=5):
    """One SRFF outer iteration: the ridge step, then FISTA with backtracking on the gamma simplex
    (mirrors ``rffkern.srff.ridge_step`` + ``rffkern.srff.fista_gamma``). Returns ``(a, gamma)``."""
    n, D = X.shape[0], directions.shape[1]
    Z = np.cos((X * gamma) @ directions + b)
    a = np.linalg.solve(Z.T @ Z + n * lam * np.eye(D), Z.T @ y)

    def h(g):
        return srff_objective_and_grad(X, y, directions, b, a, g)

    x_prev, v_pt, t, step = gamma.copy(), gamma.copy(), 1.0, float(step_init)
    best_x, best_f = gamma.copy(), h(gamma)[0]
    history = [best_f]
    for _ in range(max_iter):
        f_v, g_v = h(v_pt)
        while True:
            x = simplex_projection(v_pt - step * g_v, radius)
            f_x = h(x)[0]
            diff = x - v_pt
            if f_x <= f_v + g_v @ diff + (diff @ diff) / (2 * step) or step < 1e-12:
                break
            step *= 0.5
        t_next = 0.5 * (1.0 + np.sqrt(1.0 + 4.0 * t * t))
        v_pt = x + ((t - 1.0) / t_next) * (x - x_prev)
        x_prev, t = x, t_next
        if f_x < best_f:
            best_x, best_f = x.copy(), f_x
        history.append(f_x)
        if len(history) > window:
            old, new = history[-window - 1], history[-1]
            if abs(old - new) <= tol * max(abs(old), np.finfo(float).tiny):
                break
    return a, best_x


# ---- adaptive RFF (rffkern.adaptive) ---------------------------------------------------------------
def metropolis_step(X, Y, W, amp, zeta, u, *, delta, gamma, lam, omega_max=None):
    """One Metropolis iteration on all K frequencies (mirrors ``rffkern.adaptive.metropolis_step``):
    acceptance ``u < min(1, ratio^gamma)`` in plain arithmetic. Returns (W, amp, beta_proposal, accepted)."""
    n, K = X.shape[0], W.shape[1]
    W_new = W + delta * zeta.T
    U = X @ W_new
    S = np.hstack([np.cos(U), np.sin(U)])
    beta_new = np.linalg.solve(S.T @ S + lam * n * np.eye(2 * K), S.T @ Y)
    B = beta_new.reshape(2 * K, -1)
    amp_new = np.sqrt((B[:K] ** 2).sum(1) + (B[K:] ** 2).sum(1))
    with np.errstate(over="ignore"):  # a huge ratio^gamma is inf, which accepts, as it should
        acc = np.array([u[k] < min(1.0, (amp_new[k] / amp[k]) ** gamma) if amp[k] > 0 else True
                        for k in range(K)])
    if omega_max is not None:
        acc &= np.linalg.norm(W_new, axis=0) <= omega_max
    W = W.copy()
    W[:, acc] = W_new[:, acc]
    return W, np.where(acc, amp_new, amp), beta_new, acc
