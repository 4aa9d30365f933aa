"""The Bayesian linear model behind a ridge on random features (the sparse-spectrum Gaussian process
of Lázaro-Gredilla et al., 2010): its posterior variance from the Gram statistics the ridge keeps,
its evidence, posterior function draws, and conformal intervals from its leave-one-out residuals.

With features ``z`` centred by their (weighted) mean ``mu``, ``f(x) = b + (z(x) - mu) . c``, a
Gaussian noise of variance ``s2`` per unit weight, the prior ``c ~ N(0, s2 / alpha I)`` and a flat
prior on ``b``, the posterior mean is the ridge fit and the posterior covariance is
``s2 (G_c + alpha I)^-1`` for ``c`` and ``s2 / n`` for ``b`` (independent of ``c``: the features are
centred), ``G_c`` the centred (weighted) Gram and ``n`` the weights' sum. The noise variance is
estimated from the data, ``s2 = RSS / (n - dof - 1)``, ``dof = trace(G_c (G_c + alpha I)^-1)`` the
ridge's effective degrees of freedom. A prediction's variance is that of ``f`` plus the noise's.

Every regressor whose prediction is such a ridge on fixed features (``RFFRidge``; the closing ridge
of RFFNet, SRFF and EERF) gets the same methods from :class:`PosteriorRegressorMixin`.
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Callable, cast

import numpy as np
from sklearn.utils.validation import check_is_fitted

from rffkern._dask import is_dask_array, map_rows
from rffkern._linalg import RidgeEigen
from rffkern._validation import as_generator, check_positive_int

#: The conformity scores of :meth:`PosteriorRegressorMixin.predict_interval`: the leave-one-out
#: residual over its predictive standard deviation (``"normalized"``: wider where the posterior
#: is), or the leave-one-out residual itself (``"jackknife"``: one width everywhere).
INTERVAL_METHODS = ("normalized", "jackknife")


class RidgePosterior:
    """The posterior of a fitted ridge's Gram statistics ``stats``
    (:class:`rffkern._ridge_solvers.GramStats`) at penalty ``alpha``, in the units of the targets
    the statistics hold (times ``stats.target_scale``)."""

    def __init__(self, stats, alpha, fit_intercept):
        G, ZtY, mu, _, yty = stats.centred(fit_intercept)
        eig = RidgeEigen(G, ZtY)
        n = float(stats.n)
        self.n_eff = max(n - (1.0 if fit_intercept else 0.0), 1.0)
        # per output, at its best noise variance, of the targets divided by target_scale
        self.log_evidence = eig.log_evidence(alpha, yty, self.n_eff) - self.n_eff * math.log(stats.target_scale)
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


_PREDICT_PARAMETERS = """Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            The samples (a Dask array is processed lazily, block by block).
        return_std : bool, default=False
            Also return the predictive standard deviation of each row (of each output).
        return_cov : bool, default=False
            Also return the predictive covariance of the rows (in-memory X; n_samples^2 memory).

        Returns
        -------
        y_mean : ndarray of shape (n_samples,) or (n_samples, n_outputs)
            The predictions, in y's units.
        y_std : ndarray of shape (n_samples,) or (n_samples, n_outputs)
            With ``return_std``: the predictive standard deviations, in y's units.
        y_cov : ndarray of shape (n_samples, n_samples) or (n_samples, n_samples, n_outputs)
            With ``return_cov``: the predictive covariance, in y's units squared."""


def uncertainty_docstring(predict):
    """Put the parameters and returns every regressor's ``predict(X, return_std, return_cov)``
    shares into its docstring (at ``{parameters}``)."""
    predict.__doc__ = predict.__doc__.replace("{parameters}", _PREDICT_PARAMETERS)
    return predict


def conformity_scores(posterior, Z, R, sample_weight=None):
    """Sorted conformity scores (k, m) of :data:`INTERVAL_METHODS` from training rows of the fit:
    their features ``Z`` and residuals ``R`` (k, m). Row ``i`` left out with its weight ``w_i`` has
    the leverage ``h_i = w_i v_i`` (``v_i`` the latent variance over the noise,
    :meth:`RidgePosterior.latent_var`), the residual ``R_i / (1 - h_i)`` and the predictive
    variance ``s2 (1 + v_i / (1 - h_i))``; rows of weight zero are not scores."""
    v = posterior.latent_var(Z)
    w = np.ones(v.shape[0]) if sample_weight is None else np.asarray(sample_weight, np.float64)
    keep = w > 0
    v, w, R = v[keep], w[keep], np.asarray(R, np.float64)[keep]
    one_minus_h = np.maximum(1.0 - w * v, 1e-12)
    loo = np.abs(R) / one_minus_h[:, None]
    normalized = loo / np.sqrt(1.0 + v / one_minus_h)[:, None]
    return {"normalized": np.sort(normalized, axis=0), "jackknife": np.sort(loo, axis=0)}


def conformal_quantile(scores, coverage):
    """The ``ceil((k + 1) coverage)``-th smallest of ``k`` sorted scores (per column): the split
    conformal quantile, which covers a new exchangeable row with probability at least
    ``coverage``; a ``ValueError`` where ``k`` rows cannot give that coverage."""
    k = scores.shape[0]
    rank = math.ceil((k + 1) * coverage - 1e-9)
    if rank > k:
        need = math.ceil(coverage / (1.0 - coverage) - 1e-9)
        raise ValueError(f"coverage={coverage} needs at least {need} rows with leave-one-out residuals; the model "
                         f"has {k}")
    return scores[rank - 1]


def check_coverage(coverage):
    """``coverage`` as a float in (0, 1), or a ``ValueError`` naming it."""
    if isinstance(coverage, (bool, np.bool_)) or not isinstance(coverage, (int, float, np.integer, np.floating)):
        raise TypeError(f"coverage must be a number in (0, 1), got {coverage!r}")
    if not 0.0 < float(coverage) < 1.0:
        raise ValueError(f"coverage must be in (0, 1), got {coverage!r}")
    return float(coverage)


class PosteriorRegressorMixin:
    """The uncertainty of a regressor whose predictions are a ridge on fixed features.

    The class defines ``_ridge_state()`` -> ``(stats, alpha, fit_intercept, unit)`` (the ridge's
    :class:`rffkern._ridge_solvers.GramStats`, penalty, intercept flag and the per-output factor
    from the statistics' targets, before their ``target_scale``, to y's units), ``_features(X)``
    (the features of in-memory X as its ``predict`` maps them), ``_ridge_solution()`` ->
    ``(coef (s, m), intercept (m,))`` in y's units and ``_decision(X)``; its ``fit`` calls
    :meth:`_store_conformity` with rows of the fit. The posterior is computed once per fit.
    """

    if TYPE_CHECKING:  # the hooks and attributes of the estimator classes (see above)
        predict: Callable[..., Any]
        _ridge_state: Callable[[], tuple]
        _features: Callable[[Any], np.ndarray]
        _decision: Callable[[Any], np.ndarray]

    def __getstate__(self):
        state = cast(dict, super().__getstate__())
        state.pop("_posterior_cache", None)  # (an s x s factor: recomputed on first use, not pickled)
        return state

    def _predict_with_uncertainty(self, X, return_std, return_cov):
        if return_std and return_cov:
            raise ValueError("at most one of return_std and return_cov can be requested")
        if is_dask_array(X):
            if return_cov:
                raise ValueError("return_cov needs in-memory X (an n_samples x n_samples matrix); "
                                 "use return_std on Dask arrays")
            if return_std:
                return map_rows(self.predict, X), map_rows(self._predictive_std, X)
            return map_rows(self.predict, X)
        mean = self._decision(X)
        if return_std:
            return mean, self._predictive_std(X)
        if return_cov:
            return mean, self._predictive_cov(X)
        return mean

    def _posterior(self):
        """``(posterior, noise)``: the :class:`RidgePosterior` of the fitted ridge (computed once
        per fit) and its noise variance per output in y's units."""
        check_is_fitted(self)
        stats, alpha, fit_intercept, unit = self._ridge_state()
        key = (id(stats), stats.rows, float(stats.n), alpha)  # (partial_fit adds rows in place)
        cached = self.__dict__.get("_posterior_cache")
        if cached is None or cached[0] != key:
            self._posterior_cache = cached = (key, RidgePosterior(stats, alpha, fit_intercept))
        with np.errstate(over="ignore"):  # (targets near 1e300: a variance beyond the floats is inf)
            return cached[1], cached[1].noise * np.asarray(unit, np.float64) ** 2

    def _ridge_solution(self):
        """``(coef (s, m), intercept (m,))`` in y's units: ``coef_`` and ``intercept_`` as they are
        (the estimators whose fitted attributes are not the ridge's own define their own)."""
        coef = np.asarray(self.coef_, np.float64)  # type: ignore[attr-defined]  # (the estimator's)
        return coef.reshape(coef.shape[0], -1), np.atleast_1d(np.asarray(self.intercept_, np.float64))  # type: ignore[attr-defined]

    def _single_output(self):
        """Whether the predictions are 1-D (a model fitted on 1-D y)."""
        return np.ndim(self.coef_) == 1  # type: ignore[attr-defined]  # (the estimator's)

    def _output(self, A):
        """Per-output columns (axis 1) as the predictions are shaped: one output raveled."""
        return A[:, 0] if self._single_output() else A

    def _predictive_std(self, X):
        posterior, noise = self._posterior()
        std = np.sqrt(noise[None, :] * (1.0 + posterior.latent_var(self._features(X)))[:, None])
        return self._output(std)

    def _predictive_cov(self, X):
        posterior, noise = self._posterior()
        Z = self._features(X)
        cov = posterior.latent_cov(Z) + np.eye(Z.shape[0])
        out = cov[:, :, None] * noise[None, None, :]
        return out[:, :, 0] if self._single_output() else out

    def sample_functions(self, n_samples=1, random_state=None):
        """Draw functions from the posterior of the model's Bayesian linear model.

        With random features a draw is a weight vector: each drawn function is the same at every
        input and on every call (Thompson sampling, Bayesian optimisation). The draws are of the
        noise-free function ``f``; a new observation adds noise of variance ``noise_variance_``.

        Parameters
        ----------
        n_samples : int, default=1
            The number of functions to draw.
        random_state : int, Generator, RandomState or None, default=None
            Seed of the draws.

        Returns
        -------
        PosteriorFunctions
            A callable: ``draws(X)`` of shape (n_rows, n_samples), or (n_rows, n_targets,
            n_samples); ``coef_`` and ``intercept_`` hold the drawn coefficients.

        Examples
        --------
        >>> from rffkern import RFFRidge
        >>> from rffkern.datasets import make_jse3
        >>> X, y, support = make_jse3(200, random_state=0)
        >>> draws = RFFRidge(n_components=100, random_state=0).fit(X, y).sample_functions(5, random_state=0)
        >>> draws(X[:3]).shape
        (3, 5)
        """
        n_samples = check_positive_int(n_samples, "n_samples")
        posterior, noise = self._posterior()
        coef, intercept = self._ridge_solution()
        C, b = draw_functions(posterior, coef, intercept, noise, n_samples, as_generator(random_state))
        if self._single_output():
            C, b = C[:, :, 0], b[:, 0]
        return PosteriorFunctions(lambda X: self._features(X).astype(np.float64), C, b)

    def sample_y(self, X, n_samples=1, random_state=0):
        """Draw functions from the posterior and evaluate them at X (scikit-learn's ``sample_y``).

        The draws of :meth:`sample_functions` at the rows of X: noise-free function values, whose
        mean over many draws is ``predict(X)`` and whose covariance is the posterior covariance of
        ``f`` (``predict(X, return_cov=True)`` less ``noise_variance_`` on the diagonal).

        Parameters
        ----------
        X : array-like of shape (n_rows, n_features)
            The inputs.
        n_samples : int, default=1
            The number of functions drawn.
        random_state : int, Generator, RandomState or None, default=0
            Seed of the draws (scikit-learn's default, 0).

        Returns
        -------
        ndarray of shape (n_rows, n_samples) or (n_rows, n_targets, n_samples)
            The drawn functions' values.

        Examples
        --------
        >>> from rffkern import RFFRidge
        >>> from rffkern.datasets import make_jse3
        >>> X, y, support = make_jse3(200, random_state=0)
        >>> RFFRidge(n_components=100, random_state=0).fit(X, y).sample_y(X[:4], 3).shape
        (4, 3)
        """
        return self.sample_functions(n_samples, random_state)(X)

    @property
    def noise_variance_(self):
        """The noise variance of the model's Bayesian linear model, in y's units squared.

        The training residuals' ``RSS / (n - dof - 1)``, per output (an array for several).

        Examples
        --------
        >>> import numpy as np
        >>> from rffkern import RFFRidge
        >>> rng = np.random.default_rng(0)
        >>> X = rng.uniform(-2, 2, (400, 1))
        >>> y = np.sin(X[:, 0]) + 0.1 * rng.standard_normal(400)
        >>> round(RFFRidge(50, random_state=0).fit(X, y).noise_variance_, 3)
        0.01
        """
        _, noise = self._posterior()
        return float(noise[0]) if self._single_output() else noise

    def log_marginal_likelihood(self):
        """The log marginal likelihood (evidence) of the training targets.

        Under the model's Bayesian linear model, at the fitted penalty and its best noise variance:
        the density of y (in y's units) with the coefficients ``c ~ N(0, s2 / alpha I)`` and the
        intercept (flat prior) integrated out, maximized over ``s2``: ``-(n' log(2 pi s2) + sum_j
        log(1 + e_j / alpha) + n') / 2`` per output with ``e_j`` the eigenvalues of the centred
        Gram, ``n' = n - 1`` and ``s2`` the penalized residual sum of squares over ``n'``; summed
        over the outputs. ``alpha_selection="evidence"`` chooses the penalty and width by it.

        Returns
        -------
        float
            The log marginal likelihood.

        Examples
        --------
        >>> import numpy as np
        >>> from rffkern import RFFRidge
        >>> rng = np.random.default_rng(0)
        >>> X = rng.uniform(-2, 2, (400, 1))
        >>> y = np.sin(X[:, 0]) + 0.1 * rng.standard_normal(400)
        >>> model = RFFRidge(50, random_state=0).fit(X, y)
        >>> bool(model.log_marginal_likelihood() > 0)  # a density of narrow noise
        True
        """
        posterior, _ = self._posterior()
        unit = np.broadcast_to(np.asarray(self._ridge_state()[3], np.float64), posterior.log_evidence.shape)
        return float(np.sum(posterior.log_evidence - posterior.n_eff * np.log(unit)))

    def _store_conformity(self, Z, Y, sample_weight=None):
        """Keep the sorted conformity scores of :meth:`predict_interval` from rows of the fit:
        their features ``Z`` and targets ``Y`` (k, m) in y's units."""
        posterior, _ = self._posterior()
        coef, intercept = self._ridge_solution()
        R = np.asarray(Y, np.float64).reshape(Z.shape[0], -1) - (np.asarray(Z, np.float64) @ coef + intercept)
        self._conformity = conformity_scores(posterior, Z, R, sample_weight)

    def predict_interval(self, X, coverage=0.9, method="normalized"):
        """Prediction intervals of the given coverage, distribution-free (conformal).

        The conformity scores are the exact leave-one-out residuals of rows of the fit (at most
        2000 drawn), which the ridge gives in closed form; the interval of a new row is the
        prediction plus or minus their ``ceil((k + 1) coverage)``-th smallest, times the row's
        predictive standard deviation over the noise's with ``method="normalized"`` (each score
        divided by its row's: intervals wider where the posterior is unsure, far from the data),
        or as it is with ``method="jackknife"``. The coverage holds for rows exchangeable with the
        training rows, up to the leave-one-out approximation of a model refitted on all of them.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            The samples (a Dask array is processed lazily, block by block).
        coverage : float, default=0.9
            The share of new targets the intervals should hold, in (0, 1).
        method : {"normalized", "jackknife"}, default="normalized"
            The conformity score (see above).

        Returns
        -------
        ndarray of shape (n_samples, 2) or (n_samples, n_targets, 2)
            The lower and upper bounds, in y's units.

        Examples
        --------
        >>> import numpy as np
        >>> from rffkern import RFFRidge
        >>> rng = np.random.default_rng(0)
        >>> X = rng.uniform(-2, 2, (400, 1))
        >>> y = np.sin(X[:, 0]) + 0.1 * rng.standard_normal(400)
        >>> bounds = RFFRidge(50, random_state=0).fit(X, y).predict_interval(X[:2], coverage=0.9)
        >>> bounds.shape, bool((bounds[:, 0] < bounds[:, 1]).all())
        ((2, 2), True)
        """
        coverage = check_coverage(coverage)
        if method not in INTERVAL_METHODS:
            raise ValueError(f"method must be one of {INTERVAL_METHODS}, got {method!r}")
        check_is_fitted(self)
        posterior, _ = self._posterior()  # (a model without its ridge's statistics says so here)
        if hasattr(self, "_resolve_summaries"):  # (partial_fit defers them: RFFRidge's scores among them)
            self._resolve_summaries()
        scores = self.__dict__.get("_conformity")
        if scores is None:
            raise ValueError(f"{type(self).__name__} holds no leave-one-out residuals for intervals: "
                             "fit it (not only partial_fit on one chunk) to get them")
        q = conformal_quantile(scores[method], coverage)
        if is_dask_array(X):
            return map_rows(lambda rows: self.predict_interval(rows, coverage, method), X)
        mean = np.asarray(self._decision(X), np.float64).reshape(-1, q.size)
        if method == "normalized":
            half = np.sqrt(1.0 + posterior.latent_var(self._features(X)))[:, None] * q[None, :]
        else:
            half = np.broadcast_to(q[None, :], mean.shape)
        return self._output(np.stack([mean - half, mean + half], axis=-1))
