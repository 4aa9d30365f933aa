"""Plots of fitted models and of the quantities the user guide discusses.

Needs the optional matplotlib extra (``pip install "rffkern[plot]"``); ``import rffkern`` never
imports matplotlib, only calling one of these functions does. Every function draws into ``ax``
when one is given (a new figure otherwise) and returns the Axes, so plots compose into subplots.
The command line's ``--plot`` and the documentation's gallery use these same functions.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Optional

import numpy as np
from scipy.integrate import trapezoid

__all__ = ["relevances", "topk_path", "kernel_approximation", "regularization_path",
           "frequency_histogram", "interval_band"]

_SUPPORT_COLOR = "tab:orange"
_OTHER_COLOR = "tab:blue"


def _pyplot():
    try:
        import matplotlib.pyplot as plt
    except ImportError:
        raise ImportError('rffkern.plot needs matplotlib: pip install "rffkern[plot]"') from None
    return plt


def _new_axes(ax, figsize):
    if ax is not None:
        return ax
    plt = _pyplot()
    _, ax = plt.subplots(figsize=figsize)
    return ax


def _support_mask(support, n_features):
    """Boolean mask of length ``n_features`` from indices or a mask (None: no support)."""
    if support is None:
        return None
    support = np.asarray(support)
    if support.dtype == bool:
        if support.shape != (n_features,):
            raise ValueError(f"a boolean support must have shape ({n_features},), got {support.shape}")
        return support
    if support.ndim != 1 or not np.issubdtype(support.dtype, np.integer):
        raise ValueError("support must be a 1-D array of feature indices or a boolean mask")
    if support.size and (support.min() < 0 or support.max() >= n_features):
        raise ValueError(f"support indices must lie in [0, {n_features}), got {support.tolist()}")
    mask = np.zeros(n_features, dtype=bool)
    mask[support] = True
    return mask


def _finite_1d(values, name):
    values = np.asarray(values, dtype=np.float64)
    if values.ndim != 1 or values.size == 0:
        raise ValueError(f"{name} must be a non-empty 1-D array, got shape {values.shape}")
    if not np.all(np.isfinite(values)):
        raise ValueError(f"{name} contains NaN or infinity")
    return values


def relevances(model, feature_names: Optional[Sequence[str]] = None, *, top: Optional[int] = None,
               support=None, ax=None, title: Optional[str] = None):
    """Bar chart of a model's ``feature_importances_``, most relevant first.

    Parameters
    ----------
    model : fitted estimator with ``feature_importances_``, or array-like of shape (n_features,)
        The model (any rffkern estimator that reports ``feature_importances_``) or the
        importances themselves.
    feature_names : sequence of str, optional
        Names of the features; defaults to the model's ``feature_names_in_`` or ``x1, x2, ...``.
    top : int, optional
        Show only the ``top`` most relevant features (all by default).
    support : array-like of int or of bool, optional
        The truly relevant features (indices, or a mask of length n_features), when known: their
        bars are drawn in another colour and a legend says which is which.
    ax : matplotlib Axes, optional
        Draw into it; a new figure otherwise.
    title : str, optional
        Title of the Axes.

    Returns
    -------
    matplotlib.axes.Axes
        The Axes drawn into; ``ax.patches`` are the bars, most relevant first.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> from rffkern.plot import relevances
    >>> ax = relevances([0.1, 0.9, 0.4], ["a", "b", "c"], support=[1])
    >>> [t.get_text() for t in ax.get_xticklabels()]
    ['b', 'c', 'a']
    """
    importances = _finite_1d(getattr(model, "feature_importances_", model), "importances")
    if feature_names is None:
        feature_names = getattr(model, "feature_names_in_", None)
    if feature_names is None:
        feature_names = [f"x{j + 1}" for j in range(importances.size)]
    if len(feature_names) != importances.size:
        raise ValueError(f"{len(feature_names)} feature names for {importances.size} importances")
    if top is not None and (not isinstance(top, (int, np.integer)) or isinstance(top, bool) or top < 1):
        raise ValueError(f"top must be a positive integer, got {top!r}")
    mask = _support_mask(support, importances.size)
    order = np.argsort(-importances, kind="stable")[:top]
    ax = _new_axes(ax, (max(4, 0.35 * order.size + 1), 3.5))
    if mask is None:
        ax.bar(range(order.size), importances[order])
    else:
        colors = [_SUPPORT_COLOR if mask[j] else _OTHER_COLOR for j in order]
        ax.bar(range(order.size), importances[order], color=colors)
        from matplotlib.patches import Patch

        ax.legend(handles=[Patch(color=_SUPPORT_COLOR, label="true support"),
                           Patch(color=_OTHER_COLOR, label="other features")])
    ax.set_xticks(range(order.size), [str(feature_names[j]) for j in order], rotation=90)
    ax.set_ylabel("relevance (scaled)")
    if title:
        ax.set_title(title)
    ax.figure.tight_layout()
    return ax


def topk_path(scores, *, n_selected: Optional[int] = None, ax=None, title: Optional[str] = None):
    """The TopK score path: held-out score of the ``i`` most relevant features, ``i = 1..d``.

    Parameters
    ----------
    scores : fitted TopKSelector, TopKResult, or array-like of shape (n_features,)
        ``scores[i]`` is the held-out score (higher is better) of the model keeping the ``i + 1``
        most relevant features; a :class:`~rffkern.TopKSelector` (``scores_``) or the result of
        :func:`~rffkern.topk_selection` (``scores``) are read directly.
    n_selected : int, optional
        Number of features selected, marked by a vertical line; read from the selector or
        result when not given.
    ax : matplotlib Axes, optional
        Draw into it; a new figure otherwise.
    title : str, optional
        Title of the Axes.

    Returns
    -------
    matplotlib.axes.Axes
        The Axes drawn into; its first line is the score path.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> from rffkern.plot import topk_path
    >>> ax = topk_path([-1.0, -0.2, -0.1, -0.15], n_selected=3)
    >>> ax.lines[0].get_xdata().tolist()
    [1, 2, 3, 4]
    """
    if n_selected is None:
        n_selected = getattr(scores, "n_features_selected_", getattr(scores, "n_selected", None))
    values = getattr(scores, "scores_", getattr(scores, "scores", scores))
    values = _finite_1d(values, "scores")
    ax = _new_axes(ax, (5, 3.5))
    k = np.arange(1, values.size + 1)
    ax.plot(k, values, marker="o", markersize=3)
    if n_selected is not None:
        ax.axvline(int(n_selected), color="tab:red", linestyle="--", label=f"selected: {int(n_selected)}")
        ax.legend()
    ax.set_xlabel("number of most relevant features kept")
    ax.set_ylabel("held-out score")
    if title:
        ax.set_title(title)
    ax.figure.tight_layout()
    return ax


def kernel_approximation(n_components, errors: Mapping[str, Any], *, reference: bool = True, ax=None,
                         title: Optional[str] = None):
    """Kernel approximation error against the number of random features, on log-log axes.

    Parameters
    ----------
    n_components : array-like of int, shape (n_sizes,)
        The feature counts ``s`` that were measured.
    errors : mapping of str to array-like of shape (n_sizes,)
        For each feature map (the legend label), its error at every ``s`` (for example the
        relative Frobenius error of ``Z @ Z.T`` against the exact kernel matrix).
    reference : bool, default=True
        Also draw the Monte Carlo rate ``c / sqrt(s)`` through the first map's first point.
    ax : matplotlib Axes, optional
        Draw into it; a new figure otherwise.
    title : str, optional
        Title of the Axes.

    Returns
    -------
    matplotlib.axes.Axes
        The Axes drawn into, one line per map (then the reference line).

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> from rffkern.plot import kernel_approximation
    >>> ax = kernel_approximation([16, 64, 256], {"RFF": [0.4, 0.2, 0.1]})
    >>> [line.get_label() for line in ax.lines][0], len(ax.lines)
    ('RFF', 2)
    """
    sizes = _finite_1d(n_components, "n_components")
    if np.any(sizes <= 0):
        raise ValueError("n_components must be positive")
    if not errors:
        raise ValueError("errors must name at least one feature map")
    ax = _new_axes(ax, (5, 3.5))
    first = None
    for label, values in errors.items():
        values = _finite_1d(values, f"errors[{label!r}]")
        if values.size != sizes.size:
            raise ValueError(f"errors[{label!r}] has {values.size} values for {sizes.size} sizes")
        ax.loglog(sizes, values, marker="o", label=str(label))
        if first is None:
            first = values
    if reference and first is not None and first[0] > 0:
        ax.loglog(sizes, first[0] * np.sqrt(sizes[0] / sizes), "k:", label=r"$\propto 1/\sqrt{s}$")
    ax.set_xlabel("number of features s")
    ax.set_ylabel("approximation error")
    ax.legend()
    if title:
        ax.set_title(title)
    ax.figure.tight_layout()
    return ax


def regularization_path(alphas, coefs, *, support=None, errors=None, chosen: Optional[float] = None,
                        ax=None, title: Optional[str] = None):
    """Per-feature relevances (e.g. SRFF's ``gamma_``) along a path of penalties.

    Parameters
    ----------
    alphas : array-like of shape (n_alphas,)
        The penalties (positive), drawn on a log axis.
    coefs : array-like of shape (n_alphas, n_features)
        The relevance of every feature at every penalty.
    support : array-like of int or of bool, optional
        The truly relevant features: their lines are drawn solid and coloured, the others grey.
    errors : array-like of shape (n_alphas,), optional
        A held-out error per penalty (NaN where not computed), drawn on a second y axis.
    chosen : float, optional
        The selected penalty, marked by a vertical line.
    ax : matplotlib Axes, optional
        Draw into it; a new figure otherwise.
    title : str, optional
        Title of the Axes.

    Returns
    -------
    matplotlib.axes.Axes
        The Axes of the relevances (the error axis, if any, is its twin).

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> from rffkern.plot import regularization_path
    >>> ax = regularization_path([1.0, 0.1, 0.01], [[1, 1], [1.5, 0.5], [2, 0]], support=[0])
    >>> len(ax.lines)
    2
    """
    alphas = _finite_1d(alphas, "alphas")
    if np.any(alphas <= 0):
        raise ValueError("alphas must be positive (they are drawn on a log axis)")
    coefs = np.asarray(coefs, dtype=np.float64)
    if coefs.ndim != 2 or coefs.shape[0] != alphas.size:
        raise ValueError(f"coefs must have shape ({alphas.size}, n_features), got {coefs.shape}")
    mask = _support_mask(support, coefs.shape[1])
    ax = _new_axes(ax, (6, 4))
    for j in range(coefs.shape[1]):
        relevant = mask is not None and mask[j]
        kwargs = {"lw": 2, "label": f"x{j + 1}"} if relevant else {"lw": 1, "color": "0.6"}
        if mask is None:
            kwargs = {"lw": 1.5}
        ax.semilogx(alphas, coefs[:, j], **kwargs)
    ax.set_xlabel("penalty lambda")
    ax.set_ylabel("relevance")
    if mask is not None and mask.any():
        ax.legend(loc="upper left", fontsize="small", title="true support")
    if chosen is not None:
        ax.axvline(float(chosen), color="tab:red", linestyle="--")
    if errors is not None:
        errors = np.asarray(errors, dtype=np.float64)
        if errors.shape != alphas.shape:
            raise ValueError(f"errors must have shape {alphas.shape}, got {errors.shape}")
        twin = ax.twinx()
        keep = np.isfinite(errors)
        twin.semilogx(alphas[keep], errors[keep], "k--o", markersize=3)
        twin.set_ylabel("held-out MSE (dashed)")
    if title:
        ax.set_title(title)
    ax.figure.tight_layout()
    return ax


def frequency_histogram(model, *, spectrum: Optional[Callable[[np.ndarray], np.ndarray]] = None,
                        weighted: bool = False, bins: int = 50, ax=None, title: Optional[str] = None):
    """Histogram of a model's sampled frequencies, optionally against the target's spectrum.

    For one input feature the frequencies themselves are histogrammed; for several, their
    Euclidean norms ``||omega_k||``.

    Parameters
    ----------
    model : fitted estimator or array-like of shape (n_features, n_frequencies)
        An estimator with ``frequencies_`` (:class:`~rffkern.AdaptiveRFFRegressor`) or
        ``weights_`` (the other maps), or the frequency matrix itself (one column per frequency).
    spectrum : callable, optional
        ``spectrum(omega) -> density`` evaluated on a grid over the histogram's range (omega the
        frequency, or its norm), rescaled to integrate to one there and drawn as a line, e.g.
        ``|f^(omega)|`` of the target function.
    weighted : bool, default=False
        Weight every frequency by the model's amplitude ``amplitudes_`` (the density of
        ``|beta(omega)|`` rather than of the frequencies).
    bins : int, default=50
        Number of histogram bins.
    ax : matplotlib Axes, optional
        Draw into it; a new figure otherwise.
    title : str, optional
        Title of the Axes.

    Returns
    -------
    matplotlib.axes.Axes
        The Axes drawn into (``ax.patches`` the histogram, ``ax.lines`` the spectrum).

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import numpy as np
    >>> from rffkern.plot import frequency_histogram
    >>> omega = np.random.default_rng(0).standard_normal((1, 500))
    >>> ax = frequency_histogram(omega, spectrum=lambda w: np.exp(-w ** 2 / 2), bins=20)
    >>> len(ax.patches), len(ax.lines)
    (20, 1)
    """
    frequencies = getattr(model, "frequencies_", None)
    if frequencies is None:
        frequencies = getattr(model, "weights_", model)
    frequencies = np.asarray(frequencies, dtype=np.float64)
    if frequencies.ndim == 1:
        frequencies = frequencies[None, :]
    if frequencies.ndim != 2 or frequencies.size == 0:
        raise ValueError(f"frequencies must be a non-empty (n_features, n_frequencies) array, got shape "
                         f"{frequencies.shape}")
    if not np.all(np.isfinite(frequencies)):
        raise ValueError("frequencies contain NaN or infinity")
    if not isinstance(bins, (int, np.integer)) or isinstance(bins, bool) or bins < 1:
        raise ValueError(f"bins must be a positive integer, got {bins!r}")
    one_d = frequencies.shape[0] == 1
    values = frequencies[0] if one_d else np.linalg.norm(frequencies, axis=0)
    weights = None
    if weighted:
        amplitudes = getattr(model, "amplitudes_", None)
        if amplitudes is None:
            raise ValueError("weighted=True needs a model with amplitudes_")
        weights = np.asarray(amplitudes, dtype=np.float64)
        if weights.shape != values.shape:
            raise ValueError(f"{weights.size} amplitudes for {values.size} frequencies")
    ax = _new_axes(ax, (5, 3.5))
    ax.hist(values, bins=int(bins), weights=weights, density=True, alpha=0.6,
            label="|beta|-weighted frequencies" if weighted else "sampled frequencies")
    if spectrum is not None:
        low, high = (values.min(), values.max()) if values.min() < values.max() else (values[0] - 1, values[0] + 1)
        grid = np.linspace(low, high, 400)
        density = np.abs(np.asarray(spectrum(grid), dtype=np.float64))
        area = trapezoid(density, grid)
        if area > 0:
            ax.plot(grid, density / area, "k", lw=1.5, label="target spectrum (normalised)")
    ax.set_xlabel("frequency omega" if one_d else "frequency norm ||omega||")
    ax.set_ylabel("density")
    ax.legend(fontsize="small")
    if title:
        ax.set_title(title)
    ax.figure.tight_layout()
    return ax


def interval_band(model, X, y=None, *, feature: int = 0, coverage: float = 0.9, band: str = "interval",
                  n_draws: int = 0, random_state=0, ax=None, title: Optional[str] = None):
    """A fitted regressor's predictions and their uncertainty band against one input.

    The rows of X are sorted by the input ``feature``; the band is ``model.predict_interval(X,
    coverage)`` (conformal) or, with ``band="std"``, the Gaussian band ``predict(X,
    return_std=True)`` at the same coverage. Observed targets ``y`` are drawn as points, and
    ``n_draws`` functions of ``model.sample_functions`` as thin lines. With several inputs the
    band is that of the given rows, not a function of the one input.

    Parameters
    ----------
    model : fitted regressor
        One with ``predict_interval`` and ``predict(X, return_std=True)`` (e.g. ``RFFRidge``, the
        model of ``rffkern.fit``), one output.
    X : array-like of shape (n_samples, n_features)
        The rows to draw.
    y : array-like of shape (n_samples,), optional
        Their observed targets.
    feature : int, default=0
        The input on the horizontal axis.
    coverage : float, default=0.9
        The band's coverage, in (0, 1).
    band : {"interval", "std"}, default="interval"
        The conformal interval or the Gaussian predictive band.
    n_draws : int, default=0
        Posterior functions to draw.
    random_state : int, Generator, RandomState or None, default=0
        Seed of the function draws.
    ax : matplotlib Axes, optional
        Draw into it; a new figure otherwise.
    title : str, optional
        Title of the Axes.

    Returns
    -------
    matplotlib.axes.Axes
        The Axes drawn into.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import numpy as np
    >>> from rffkern import RFFRidge
    >>> from rffkern.plot import interval_band
    >>> X = np.linspace(-3, 3, 200)[:, None]
    >>> y = np.sin(X[:, 0]) + 0.2 * np.random.default_rng(0).standard_normal(200)
    >>> ax = interval_band(RFFRidge(50, random_state=0).fit(X, y), X, y, n_draws=3)
    >>> len(ax.lines), len(ax.collections)
    (4, 2)
    """
    from scipy.stats import norm

    if band not in ("interval", "std"):
        raise ValueError(f"band must be 'interval' or 'std', got {band!r}")
    X = np.asarray(X)
    if X.ndim != 2 or not 0 <= int(feature) < X.shape[1]:
        raise ValueError(f"feature must index a column of the 2-D X (shape {X.shape}), got {feature!r}")
    order = np.argsort(X[:, feature], kind="stable")
    X, x = X[order], X[order, feature]
    if band == "interval":
        bounds = np.asarray(model.predict_interval(X, coverage=coverage))
        mean = np.asarray(model.predict(X))
    else:
        if not 0.0 < coverage < 1.0:
            raise ValueError(f"coverage must be in (0, 1), got {coverage!r}")
        mean, std = model.predict(X, return_std=True)
        z = norm.ppf(0.5 + coverage / 2.0)
        bounds = np.column_stack([mean - z * std, mean + z * std])
    if mean.ndim != 1:
        raise ValueError("interval_band draws a model of one output")
    ax = _new_axes(ax, (6, 4))
    label = f"{coverage:.0%} {'conformal interval' if band == 'interval' else 'predictive band'}"
    ax.fill_between(x, bounds[:, 0], bounds[:, 1], color=_OTHER_COLOR, alpha=0.25, label=label)
    ax.plot(x, mean, color=_OTHER_COLOR, lw=2, label="prediction")
    if n_draws:
        draws = model.sample_functions(int(n_draws), random_state=random_state)(X)
        for k in range(draws.shape[1]):
            ax.plot(x, draws[:, k], color="0.4", lw=0.7, alpha=0.8)
    if y is not None:
        ax.scatter(x, np.asarray(y, np.float64)[order], s=6, color=_SUPPORT_COLOR, label="observed")
    ax.set_xlabel(f"x{int(feature) + 1}")
    ax.set_ylabel("y")
    ax.legend(loc="best", fontsize="small")
    if title:
        ax.set_title(title)
    ax.figure.tight_layout()
    return ax
