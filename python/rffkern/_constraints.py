"""Parameter constraints shared by the estimators, for scikit-learn's ``_parameter_constraints``.

Estimator parameters are checked in one place: ``_parameter_constraints`` + ``self._validate_params()``
(and ``validate_data`` for the data). scikit-learn's ``Interval(numbers.Integral, ...)`` takes
``True`` for 1, and ``"array-like"`` says nothing of the entries; the constraints here close those
gaps so that every bad value is refused with the parameter named. They subclass ``Interval``, the
one extensible constraint type that scikit-learn's validation accepts.
"""
from __future__ import annotations

import numbers

import numpy as np
from sklearn.utils._param_validation import Interval, _is_arraylike_not_scalar

__all__ = ["IntInterval", "NonZeroInt", "PositiveFiniteReal", "RealSequence", "N_JOBS", "MAX_COMPONENTS",
           "COMPONENTS", "NU"]


class IntInterval(Interval):
    """``Interval(numbers.Integral, left, right, closed=...)`` that refuses bools (``True`` is not 1)."""

    def __init__(self, left, right, *, closed):
        super().__init__(numbers.Integral, left, right, closed=closed)

    def is_satisfied_by(self, val):
        return not isinstance(val, (bool, np.bool_)) and super().is_satisfied_by(val)


class NonZeroInt(IntInterval):
    """A thread count in scikit-learn's sense: any int but 0 (and not a bool)."""

    def __init__(self):
        super().__init__(None, None, closed="neither")

    def is_satisfied_by(self, val):
        return super().is_satisfied_by(val) and val != 0

    def __str__(self):
        return "a non-zero int (n_jobs == 0 has no meaning: None uses the usable cores, -1 all cores)"


class PositiveFiniteReal(Interval):
    """A finite real number > 0 that is not a bool: ``Interval(numbers.Real, 0, None)`` takes
    ``True`` for 1 and lets ``inf`` through."""

    def __init__(self):
        super().__init__(numbers.Real, 0, None, closed="neither")

    def is_satisfied_by(self, val):
        return (not isinstance(val, (bool, np.bool_)) and super().is_satisfied_by(val)
                and bool(np.isfinite(val)))

    def __str__(self):
        return "a finite float > 0"


class RealSequence(Interval):
    """A non-empty 1-D array-like of finite real numbers above ``left`` (``closed="left"`` allows
    ``left`` itself): a list of penalties to search.

    An ``Interval`` subclass because scikit-learn's validation takes no other constraint types; the
    interval is the one every entry must lie in.
    """

    def __init__(self, left, *, closed):
        super().__init__(numbers.Real, left, None, closed=closed)

    def is_satisfied_by(self, val):
        if not _is_arraylike_not_scalar(val):
            return False
        try:
            arr = np.asarray(val)
        except (TypeError, ValueError):
            return False
        if arr.ndim != 1 or arr.size == 0 or arr.dtype.kind not in "iuf":
            return False
        return all(np.isfinite(a) and super(RealSequence, self).is_satisfied_by(float(a)) for a in arr)

    def __str__(self):
        bracket = "[" if self.closed == "left" else "("
        return f"a non-empty 1-D array-like of finite floats in the range {bracket}{self.left}, inf)"


#: ``n_jobs`` of every estimator: None, or a non-zero int.
N_JOBS = [NonZeroInt(), None]

#: The most random features an estimator is asked for: one input's float64 frequencies alone would
#: take 8 TiB. A larger count is refused with the parameter named (2**63 overflowed NumPy's sizes:
#: "Maximum allowed dimension exceeded"); below it, a size beyond memory is a MemoryError at once.
MAX_COMPONENTS = 2**40

#: ``n_components`` (and other counts of random features) of every estimator.
COMPONENTS = IntInterval(1, MAX_COMPONENTS, closed="both")

#: The Matérn smoothness ``nu`` of every estimator with a Matérn kernel (0.5, 1.5, 2.5, ... or any
#: other finite value > 0; see ``rffkern._sampling.check_nu``).
NU = PositiveFiniteReal()
