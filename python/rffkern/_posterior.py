"""The Bayesian linear model behind a ridge on random features (the sparse-spectrum Gaussian process
of Lázaro-Gredilla et al., 2010): its posterior variance from the Gram statistics the ridge keeps.

With features ``z`` centred by their (weighted) mean ``mu``, ``f(x) = b + (z(x) - mu) . c``, a
Gaussian noise of variance ``s2`` per unit weight, the prior ``c ~ N(0, s2 / alpha I)`` and a flat
prior on ``b``, the posterior mean is the ridge fit and the posterior covariance is
``s2 (G_c + alpha I)^-1`` for ``c`` and ``s2 / n`` for ``b`` (independent of ``c``: the features are
centred), ``G_c`` the centred (weighted) Gram and ``n`` the weights' sum. The noise variance is
estimated from the data, ``s2 = RSS / (n - dof - 1)``, ``dof = trace(G_c (G_c + alpha I)^-1)`` the
ridge's effective degrees of freedom. A prediction's variance is that of ``f`` plus the noise's.
"""
from __future__ import annotations

import numpy as np

from rffkern._linalg import RidgeEigen


class RidgePosterior:
    """The posterior of a fitted ridge's Gram statistics ``stats``
    (:class:`rffkern._ridge_solvers.GramStats`) at penalty ``alpha``, in the units of the targets
    the statistics hold (times ``stats.target_scale``)."""

    def __init__(self, stats, alpha, fit_intercept):
        G, ZtY, mu, _, yty = stats.centred(fit_intercept)
        eig = RidgeEigen(G, ZtY)
        n = float(stats.n)
        self.mu = mu
        self.intercept_var = 1.0 / n if fit_intercept and n > 0 else 0.0
        # rows of (G + alpha I)^(-1/2) in the eigenbasis: the latent variance is a sum of squares
        self.root = eig.V / np.sqrt(eig.evals + alpha)
        residual_dof = n - eig.dof(alpha) - (1.0 if fit_intercept else 0.0)
        scale = float(stats.target_scale) ** 2
        self.noise = eig.rss(alpha, yty) / max(residual_dof, 1e-12) * scale  # per output, y's units (scaled)

    def latent_var(self, Z):
        """Per row of features ``Z``, the posterior variance of ``f`` over the noise variance."""
        U = (np.asarray(Z, np.float64) - self.mu) @ self.root
        return np.einsum("ij,ij->i", U, U) + self.intercept_var

    def latent_cov(self, Z):
        """The posterior covariance of ``f`` at the rows of ``Z`` over the noise variance."""
        U = (np.asarray(Z, np.float64) - self.mu) @ self.root
        return U @ U.T + self.intercept_var


class PosteriorFunctions:
    """Draws from a ridge's posterior over functions (``RFFRidge.sample_functions``): each draw is
    a coefficient vector and an intercept, so one draw is a whole function, the same at every
    input and on every call.

    Attributes
    ----------
    coef_ : ndarray of shape (n_draws, n_features_out) or (n_draws, n_features_out, n_targets)
    intercept_ : ndarray of shape (n_draws,) or (n_draws, n_targets)
    """

    def __init__(self, features, coef, intercept):
        self._features = features
        self.coef_ = coef
        self.intercept_ = intercept

    def __call__(self, X):
        """The drawn functions at the rows of X: shape (n_rows, n_draws), or (n_rows, n_targets,
        n_draws) for several targets (scikit-learn's ``sample_y`` layout)."""
        Z = self._features(X)
        if self.coef_.ndim == 2:
            return Z @ self.coef_.T + self.intercept_[None, :]
        return np.einsum("is,ksm->imk", Z, self.coef_) + self.intercept_.T[None, :, :]


def draw_functions(posterior, coef, intercept, noise, n_draws, rng):
    """``(coef draws, intercept draws)`` of the posterior around the fitted ``coef`` (s, m) and
    ``intercept`` (m,) in y's units, ``noise`` (m,) the noise variance in y's units: the
    coefficients ``coef + sqrt(noise) (G_c + alpha I)^(-1/2) e``, the centred intercept
    ``intercept + mu . coef`` with variance ``noise / n``, independent of them."""
    s, m = coef.shape
    E = rng.standard_normal((n_draws, s, m))
    C = coef[None, :, :] + np.einsum("st,ktm->ksm", posterior.root, E) * np.sqrt(noise)[None, None, :]
    centred = intercept + posterior.mu @ coef
    b = centred[None, :] + rng.standard_normal((n_draws, m)) * np.sqrt(noise * posterior.intercept_var)[None, :]
    return C, b - np.einsum("s,ksm->km", posterior.mu, C)
