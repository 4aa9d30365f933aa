"""Options of one fit, beside an estimator's parameters: what a caller inside the package
(``rffkern.fit``, the standardization probe) needs a fit to keep or to skip.

They describe the call, not the model: :func:`fit_options` sets them for a block of calls and removes them
after it, so ``get_params``, ``clone`` and a pickled model never carry them.
"""
from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

__all__ = ["FitOptions", "fit_options"]


@dataclass(frozen=True)
class FitOptions:
    """The options of one fit; the defaults are an ordinary ``fit``'s."""

    #: compute ``feature_importances_`` and ``predict_proba``'s temperature (a fit whose
    #: summaries nobody reads skips them: on mnist each costs about a second)
    summaries: bool = True
    #: RFFNet: keep the closing fit's statistics, so that rows can join it afterwards
    keep_closing_stats: bool = False
    #: RFFNet: learning-rate decays before the training stops (None: the estimator's rule)
    max_lr_decays: int | None = None
    #: ``standardize="auto"`` may compare ``"quantile"`` (where heavy-tailed inputs exist)
    quantile_candidate: bool = True


@contextmanager
def fit_options(estimator: Any, **options: Any) -> Iterator[Any]:
    """Within the block, ``estimator``'s ``fit`` and ``partial_fit`` run under :class:`FitOptions`
    ``options``; after it the estimator keeps none of them."""
    estimator._fit_options = FitOptions(**options)
    try:
        yield estimator
    finally:
        del estimator._fit_options
