"""The selection rules of the ridge family: the penalty grid, the candidate widths and
standardizations, and the one-standard-error rules that choose among them from per-row losses.

Every estimator with a searched width or ``standardize="auto"`` (the ridge, EERF, adaptive RFF,
SRFF, RFFNet's closing fit, their Dask fits and ``rffkern.fit``) takes its rules from here.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

__all__ = ["DEFAULT_ALPHAS", "WIDTH_FACTORS", "EXTENDED_WIDTH_FACTORS", "STANDARDIZE_CHOICES", "PROBE_COMPONENTS",
           "PROBE_ROWS", "WIDTH_LIMITS", "one_se_geometry", "one_se_width", "pick_width", "paired_standard_error",
           "next_width", "search_widths", "width_extension"]

#: ``alpha``'s default: penalties from 1e-8 to 1e3 (in the units of standardized targets), searched by
#: ``alpha_selection``.
DEFAULT_ALPHAS = tuple(float(a) for a in np.logspace(-8, 3, 23))
#: ``length_scale="auto"`` compares these multiples of the median pairwise distance and keeps the
#: one nearest the median (factor 1) whose selection error is within one standard error of the
#: least (:func:`one_se_width`): the least error alone is noisy on a few hundred rows, and a finer
#: grid costs more for little gain (docs/design_notes.rst).
WIDTH_FACTORS = (0.5, 1.0, 2.0)
#: ``standardize="auto"`` compares two standardizations of the inputs, each centred: every input by
#: its own deviation (``True``) and every input by one pooled deviation (``"global"``, which keeps
#: their relative spreads). The widths are searched with ``True``; "global" is fitted at its own
#: median heuristic width and kept (its other widths then searched too) only if its selection
#: error is lower than ``True``'s best by more than one standard error (:func:`one_se_geometry`).
#: Inputs in one unit whose spreads differ by meaning, such as pixels, need "global":
#: standardizing each column blows up the rarely inked pixels. True is compared at its best width,
#: not at the median alone, whose comparison can pick "global" where True's best width is
#: elsewhere (docs/design_notes.rst).
STANDARDIZE_CHOICES = (True, "global")
#: EERF's and adaptive RFF's ``length_scale="auto"`` compare these multiples of their width
#: heuristic (the k-NN width, the median scale), extended by halving or doubling at the ends.
EXTENDED_WIDTH_FACTORS = (0.5, 1.0, 2.0, 4.0)
#: Where the best of those multiples is the smallest (largest), the search (:func:`next_width`)
#: halves (doubles) it while it stays the best, down to (up to) these multiples of the heuristic.
#: Not below 0.5: on online_news (seed 1, 4000 rows) EERF's LOO error picked 0.25 and the test
#: error was 13 % above the kernel pipelines' (4 % at 0.5); kin40k, the one data set that chose
#: 0.5, rejected 0.25.
WIDTH_LIMITS = (0.5, 16.0)


def one_se_geometry(errors: Sequence[float], diff_se: float) -> int:
    """Index of the standardization ``standardize="auto"`` keeps among ``STANDARDIZE_CHOICES``:
    the first (each input by its own deviation) unless the second's selection error is lower by
    more than ``diff_se``, the standard error of their difference (NaN: by any amount).

    Examples
    --------
    >>> from rffkern._selection import one_se_geometry
    >>> one_se_geometry([0.150, 0.140], 0.02), one_se_geometry([0.150, 0.100], 0.02)
    (0, 1)
    """
    lead = float(errors[0]) - float(errors[1])
    return int(lead > (float(diff_se) if np.isfinite(diff_se) else 0.0))


def one_se_kernel(base_error: float, errors: Sequence[float], diff_se: Sequence[float]) -> int | None:
    """Index among ``errors`` of the kernel ``kernel="auto"`` keeps instead of the Gaussian (of
    selection error ``base_error``), or None: the least of those lower than ``base_error`` by more
    than the standard error of their per-row difference to it (NaN: by any amount).

    Examples
    --------
    >>> from rffkern._selection import one_se_kernel
    >>> one_se_kernel(0.150, [0.145, 0.120], [0.01, 0.01]), one_se_kernel(0.150, [0.145], [0.01])
    (1, None)
    """
    kept = None
    for i, (error, se) in enumerate(zip(errors, diff_se)):
        if one_se_geometry([base_error, error], se) and (kept is None or error < errors[kept]):
            kept = i
    return kept


def one_se_width(errors: Sequence[float], diff_se: Sequence[float],
                 factors: Sequence[float] = WIDTH_FACTORS) -> int:
    """Index of the width ``length_scale="auto"`` keeps: among the widths whose selection error is
    at most the least plus one standard error, the one whose factor is nearest 1 (the median
    heuristic) on a log scale, the smaller error on a tie.

    The minimum of a leave-one-out error over a few widths is noisy on a few hundred rows (on
    breast_cancer it picked 0.5x, 3.5 times the test errors of 1x, on one split of ten); the rule
    moves off the median heuristic only on evidence.

    Parameters
    ----------
    errors : sequence of float
        The selection error of each width (at its best penalty).
    diff_se : sequence of float
        The standard error of each width's error minus the least one: of the mean of the per-row
        differences of the losses (0 for the best width; NaN: not eligible unless best).
    factors : sequence of float, default=``WIDTH_FACTORS``
        Each width over the median heuristic.

    Returns
    -------
    int
        The index of the chosen width.

    Examples
    --------
    >>> from rffkern._selection import one_se_width
    >>> one_se_width([0.150, 0.152, 0.180], [0.0, 0.004, 0.01])  # 0.5x best by less than 1 se
    1
    >>> one_se_width([0.120, 0.152, 0.180], [0.0, 0.004, 0.01])  # 0.5x best by 8 se
    0
    """
    errors = np.asarray(errors, dtype=np.float64)
    best = int(np.argmin(errors))
    eligible = [i for i in range(errors.size)
                if i == best or errors[i] <= errors[best] + float(diff_se[i])]
    return min(eligible, key=lambda i: (abs(float(np.log(factors[i]))), errors[i]))


#: ``standardize="auto"`` of EERF and adaptive RFF (``rffkern.ridge.choose_standardization``): the
#: standardization that ``RFFRidge(PROBE_COMPONENTS, standardize="auto")`` keeps on at most ``PROBE_ROWS`` random rows of
#: the estimator's inputs and targets (its widths and penalties searched as at its defaults), as
#: ``rffkern.fit``'s width search. A kernel of one width over the inputs is what both estimators
#: start from, and the probe costs a fraction of their fit (docs/design_notes.rst).
PROBE_COMPONENTS = 500
PROBE_ROWS = 3000


def pick_width(errors: Sequence[float], row_losses: Sequence[Any] | None = None,
               factors: Sequence[float] = WIDTH_FACTORS) -> int:
    """Index of the width kept: the least error, or with ``row_losses`` (each width's
    ``(losses, weights)`` from :func:`rffkern._ridge_solvers.fit_ridge_map`) the
    one-standard-error rule of :func:`one_se_width` over ``factors`` (each width over the one to
    stay at unless another is better); GCV scores no row, so it keeps the least error."""
    best = int(np.argmin(errors))
    if row_losses is None or any(r is None for r in row_losses):
        return best
    base, weights = row_losses[best]
    diff_se = [paired_standard_error(losses, base, weights) for losses, _ in row_losses]
    return one_se_width(errors, diff_se, factors)


def paired_standard_error(losses: NDArray[np.floating], base: NDArray[np.floating],
                          weights: NDArray[np.floating] | None = None) -> float:
    """Standard error of the (weighted) mean of ``losses - base``, the per-row differences of two
    widths' selection losses on the same rows.

    Without weights ``sqrt(sum_i (d_i - mean)^2 / (n - 1) / n)``; with weights that of a weighted
    mean of independent rows, ``sqrt(sum_i w_i^2 (d_i - mean)^2) / sum_i w_i`` times
    ``sqrt(k / (k - 1))`` for the effective row count ``k = (sum w)^2 / sum w^2``: the unweighted
    one for equal weights, and unchanged when every weight is multiplied by one constant (as the
    leave-one-out errors the rows are scored by, :meth:`rffkern._ridge_solvers.LooPass.sse`, which
    leave each row out with all its weight). NaN for ``k <= 1``."""
    losses, base = np.asarray(losses, np.float64), np.asarray(base, np.float64)
    if losses.shape != base.shape:  # (broadcasting (n, 1) against (n,) would build an n x n array)
        raise ValueError(f"per-row losses of shapes {losses.shape} and {base.shape} cannot be paired")
    d = losses - base
    if weights is None:  # (the arithmetic of every earlier version: the same bits)
        if d.size <= 1:
            return float("nan")
        ones = np.ones(d.size)
        mean_d = float(ones @ d) / d.size
        return float(np.sqrt(float(ones @ (d - mean_d) ** 2) / (d.size - 1) / d.size))
    w = np.asarray(weights, np.float64)
    total = float(w.sum())
    if not total > 0:
        return float("nan")
    w = w / total  # (the SE is unchanged by a common factor; this one keeps the sums in range)
    k = 1.0 / float(w @ w)
    if not k > 1:
        return float("nan")
    mean = float(w @ d)
    return float(np.sqrt(float((w * w) @ (d - mean) ** 2) * k / (k - 1)))


def width_extension(base):
    """``extend`` of :func:`search_widths` by :func:`next_width` around ``base`` (None: none)."""
    return lambda widths, errors: None if base is None else next_width(widths, errors, base)


def next_width(widths, errors, base):
    """The width to try after ``widths`` (with selection ``errors``), or None: half the smallest
    when it is the best so far, twice the largest when it is, within ``WIDTH_LIMITS`` times
    ``base`` (the k-NN width); ``length_scale="auto"`` searches this way."""
    best = widths[int(np.argmin(errors))]
    if best == min(widths) and best / 2 >= base * WIDTH_LIMITS[0] * (1 - 1e-12):
        return best / 2
    if best == max(widths) and best * 2 <= base * WIDTH_LIMITS[1] * (1 + 1e-12):
        return best * 2
    return None


def search_widths(values, extend, error_of):
    """``error_of(v)`` of every value in order, then of the values ``extend(values, errors)`` adds
    (None: stop). Returns (values, errors) as lists: the width searches of EERF (single-machine and
    distributed) and of adaptive RFF's initial scale."""
    values = list(values)
    errors: list[float] = []
    while len(errors) < len(values):
        errors.append(error_of(values[len(errors)]))
        if len(errors) == len(values):
            extra = extend(values, errors)
            if extra is not None:
                values.append(extra)
    return values, errors
