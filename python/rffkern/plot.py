"""Plots of fitted models (needs the optional matplotlib extra: ``pip install "rffkern[plot]"``)."""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

__all__ = ["relevances"]


def _pyplot():
    try:
        import matplotlib.pyplot as plt
    except ImportError:
        raise ImportError('rffkern.plot needs matplotlib: pip install "rffkern[plot]"') from None
    return plt


def relevances(model: Any, feature_names: Sequence[str] | None = None, *, top: int | None = None,
               ax: Any = None, title: str | None = None) -> Any:
    """Bar chart of a model's ``feature_importances_``, most relevant first.

    Parameters
    ----------
    model : fitted estimator with ``feature_importances_``, or array-like of shape (n_features,)
        The model whose relevances are drawn, or the relevances themselves.
    feature_names : sequence of str, optional
        Bar labels; defaults to the model's ``feature_names_in_`` or ``x1, x2, ...``.
    top : int, optional
        Show only the ``top`` most relevant features.
    ax : matplotlib Axes, optional
        Draw into it; a new figure otherwise.
    title : str, optional
        Title of the axes.

    Returns
    -------
    matplotlib Axes
        The axes drawn into.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> from rffkern.plot import relevances
    >>> ax = relevances([0.1, 0.9, 0.4], ["a", "b", "c"], top=2)
    >>> [label.get_text() for label in ax.get_xticklabels()]
    ['b', 'c']
    """
    importances = np.asarray(getattr(model, "feature_importances_", model), dtype=np.float64)
    if importances.ndim != 1 or importances.size == 0:
        raise ValueError(f"importances must be a non-empty 1-D array, got shape {importances.shape}")
    if feature_names is None:
        feature_names = getattr(model, "feature_names_in_", None)
    if feature_names is None:
        feature_names = [f"x{j + 1}" for j in range(importances.size)]
    if len(feature_names) != importances.size:
        raise ValueError(f"{len(feature_names)} feature names for {importances.size} importances")
    order = np.argsort(-importances, kind="stable")[:top]
    if ax is None:
        plt = _pyplot()
        _, ax = plt.subplots(figsize=(max(4, 0.35 * order.size + 1), 3.5))
    ax.bar(range(order.size), importances[order])
    ax.set_xticks(range(order.size), [str(feature_names[j]) for j in order], rotation=90)
    ax.set_ylabel("relevance |theta| (scaled)")
    if title:
        ax.set_title(title)
    ax.figure.tight_layout()
    return ax
