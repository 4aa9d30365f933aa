"""What every estimator does to its raw inputs before the random features: the robust input
treatment of ``robust_inputs=True`` (the default) and the ``standardize`` choices.

A Gaussian kernel model falls back towards its mean far from its training rows; a finite
random-feature model does not (its approximation of the kernel does not decay with distance), so
a row far from every training row gets a large, arbitrary answer. Three things keep rows near the
data:

- a two-valued input (a one-hot level, a flag) is scaled by half the gap between its two values,
  not by its deviation: a rare level is then 2 from the common one, as any flag is, where its
  deviation put it ``sqrt((1 - p) / p)`` away (87 for a level on 2 of 15,000 rows);
- at predict, each input is clipped to its training range (as trees do implicitly): a data-entry
  error far outside the range is read as the nearest value seen;
- ``standardize="quantile"`` maps each heavy-tailed input (one that is not two-valued and has a
  training row more than ``HEAVY_TAIL_Z`` deviations from its mean) to normal scores
  (scikit-learn's ``QuantileTransformer``) before the standardization, so that the bulk of the
  rows spreads out and the tail rows come in; ``standardize="auto"`` compares it with the other
  standardizations by the exact leave-one-out error where such inputs exist.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from sklearn.preprocessing import QuantileTransformer

from rffkern._data import mean_scale_constant, pooled_scale, standardizing

__all__ = ["HEAVY_TAIL_Z", "InputScaling", "column_range", "merge_ranges", "two_valued", "heavy_tailed_columns",
           "scaling_from_statistics", "fit_input_scaling", "set_input_scaling", "widen_input_range",
           "guarded_inputs", "scaled_inputs"]

#: An input is heavy-tailed where a training row lies more than this many deviations from its
#: mean: a normal sample of 20,000 rows reaches about 4.
HEAVY_TAIL_Z = 5.0
#: The normal scores' reference quantiles: a landmark per 0.2% of the rows. (scikit-learn's
#: default, 1000, takes 12 times as long to fit on the 3000 rows of ``rffkern.fit``'s width search.)
QUANTILES = 500


def column_range(A: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(lo, lo2, hi)`` per column of A (n, d): the least value, the least value above it (inf
    where there is none) and the largest; mergeable over blocks of rows (:func:`merge_ranges`)."""
    if A.shape[0] == 0:
        return np.full(A.shape[1], np.inf), np.full(A.shape[1], np.inf), np.full(A.shape[1], -np.inf)
    lo = A.min(axis=0)
    return lo, np.where(A > lo, A, np.inf).min(axis=0), A.max(axis=0)


def merge_ranges(a: tuple, b: tuple) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`column_range` of two blocks of rows together, from theirs."""
    lo = np.minimum(a[0], b[0])
    candidates = np.stack([a[0], a[1], b[0], b[1]])
    return lo, np.where(candidates > lo, candidates, np.inf).min(axis=0), np.maximum(a[2], b[2])


def two_valued(lo: np.ndarray, lo2: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """The columns of :func:`column_range` ``(lo, lo2, hi)`` that hold exactly two distinct values."""
    return (hi > lo) & (lo2 == hi)


def heavy_tailed_columns(A: np.ndarray, sample_weight: np.ndarray | None = None) -> np.ndarray:
    """The columns of A (n, d) that are neither two-valued nor constant and have a row more than
    ``HEAVY_TAIL_Z`` (weighted) deviations from their mean."""
    rows = _positive_rows(A, sample_weight)
    mean, scale, constant = mean_scale_constant(A, sample_weight)
    with np.errstate(over="ignore", invalid="ignore"):
        peak = np.max(np.abs(rows - mean) / scale, axis=0) if rows.shape[0] else np.zeros(A.shape[1])
    return ~constant & ~two_valued(*column_range(rows)) & (peak > HEAVY_TAIL_Z)


def _positive_rows(A, sample_weight):
    return A if sample_weight is None else A[np.asarray(sample_weight) > 0]


@dataclass
class InputScaling:
    """The fitted input treatment: ``(clip(X, x_min, x_max) [normal scores] - mean) / scale``."""

    mean: np.ndarray
    scale: np.ndarray
    x_min: np.ndarray | None = None
    x_max: np.ndarray | None = None
    quantiles: Any = None  # a fitted QuantileTransformer of the ``quantile_columns``, or None
    quantile_columns: np.ndarray | None = None


def scaling_from_statistics(mean: np.ndarray, sd: np.ndarray, constant: np.ndarray, ranges: tuple,
                            standardize: bool | str, robust: bool, ignore_constant: bool = True) -> InputScaling:
    """The input treatment of ``standardize`` (True, "global" or False) from the inputs'
    statistics: means, deviations (1 for the ``constant`` inputs) and :func:`column_range`
    ``ranges``, in memory or merged over Dask chunks.

    ``robust``: two-valued inputs scaled by half their gap (not with "global", whose one pooled
    deviation keeps the inputs' relative spreads already), and the training range kept for
    clipping. ``ignore_constant``: an infinite scale for the inputs constant on the rows, which
    standardize to 0 on every row, seen or not (``partial_fit``'s first batch, and RFFNet, keep
    a finite one).
    """
    lo, lo2, hi = ranges
    clip = (lo, hi) if robust and np.all(lo <= hi) else (None, None)
    if standardize is False:
        return InputScaling(np.zeros(mean.size), np.ones(mean.size), *clip)
    scale = sd
    if standardize == "global":
        scale = pooled_scale(sd, constant)
    elif robust:
        scale = np.where(two_valued(lo, lo2, hi), (hi - lo) / 2, sd)
    if ignore_constant:
        scale = np.where(constant, np.inf, scale)
    return InputScaling(mean, scale, *clip)


def fit_input_scaling(X: np.ndarray, sample_weight: np.ndarray | None = None, standardize: bool | str = True,
                      robust: bool = True, ignore_constant: bool = True) -> InputScaling:
    """The input treatment of ``standardize`` (True, "global", "quantile" or False) on the rows of
    X (n, d) of positive ``sample_weight`` (:func:`scaling_from_statistics`): "quantile" maps the
    heavy-tailed inputs to normal scores first, then standardizes as True."""
    X64 = np.asarray(X, dtype=np.float64)
    ranges = column_range(_positive_rows(X64, sample_weight))
    quantiles, columns = None, None
    if standardize == "quantile":  # (the heavy-tailed inputs: found only where they are mapped)
        columns = np.flatnonzero(heavy_tailed_columns(X64, sample_weight))
    if columns is not None and columns.size:
        rows = _positive_rows(X64, sample_weight)
        quantiles = QuantileTransformer(n_quantiles=min(QUANTILES, rows.shape[0]), output_distribution="normal",
                                        subsample=None).fit(rows[:, columns])
        X64 = X64.copy()
        X64[:, columns] = quantiles.transform(X64[:, columns])
    mean, sd, constant = mean_scale_constant(X64, sample_weight)
    scaling = scaling_from_statistics(mean, sd, constant, ranges, True if standardize == "quantile" else standardize,
                                      robust, ignore_constant)
    if quantiles is not None:
        scaling.quantiles, scaling.quantile_columns = quantiles, columns
    return scaling


def set_input_scaling(est: Any, scaling: InputScaling) -> None:
    """Store ``scaling`` as ``est``'s fitted attributes ``x_mean_``, ``x_scale_``, ``x_min_``,
    ``x_max_``, ``input_quantiles_`` and ``quantile_columns_``."""
    est.x_mean_, est.x_scale_ = scaling.mean, scaling.scale
    est.x_min_, est.x_max_ = scaling.x_min, scaling.x_max
    est.input_quantiles_, est.quantile_columns_ = scaling.quantiles, scaling.quantile_columns


def widen_input_range(est: Any, X: np.ndarray, sample_weight: np.ndarray | None = None) -> None:
    """Widen ``est``'s clipping range to the rows of X (``partial_fit``'s later batches)."""
    rows = _positive_rows(np.asarray(X, dtype=np.float64), sample_weight)
    if getattr(est, "x_min_", None) is not None and rows.shape[0]:
        est.x_min_, est.x_max_ = np.minimum(est.x_min_, rows.min(axis=0)), np.maximum(est.x_max_, rows.max(axis=0))


def guarded_inputs(est: Any, X: np.ndarray) -> np.ndarray:
    """X clipped to ``est``'s training range and its heavy-tailed inputs as normal scores, before
    the centring and scaling: X itself where neither applies (never modified)."""
    x_min = getattr(est, "x_min_", None)  # (absent from models pickled before robust_inputs)
    quantiles = getattr(est, "input_quantiles_", None)
    if x_min is not None:
        lo, hi = x_min.astype(X.dtype, copy=False), est.x_max_.astype(X.dtype, copy=False)
        if np.any(X < lo) or np.any(X > hi):
            X = np.clip(X, lo, hi)
    if quantiles is not None:
        X = np.array(X, copy=True)
        cols = est.quantile_columns_
        X[:, cols] = quantiles.transform(np.asarray(X[:, cols], dtype=np.float64)).astype(X.dtype, copy=False)
    return X


def scaled_inputs(est: Any, X: np.ndarray) -> np.ndarray:
    """``(guarded X - x_mean_) / x_scale_`` in X's dtype (a new C-contiguous array)."""
    X = guarded_inputs(est, X)
    with standardizing():
        return np.ascontiguousarray(((X - est.x_mean_) / est.x_scale_).astype(X.dtype, copy=False))
