"""Data handling shared by the data-dependent estimators: overflow-safe scaling, the held-out split,
and class labels from decision values."""
from __future__ import annotations

import numpy as np
from sklearn.model_selection import train_test_split

__all__ = ["power_of_two_scale", "mean_and_scale", "holdout_split", "labels_from_decision", "TargetScaler"]


def power_of_two_scale(A, axis=None):
    """``2^k`` with ``2^k <= max|A| < 2^(k+1)`` (per column with ``axis=0``), in A's dtype.

    Dividing by a power of two is exact (short of underflow), and every sum, product, solve and
    square root done afterwards is the same operation on exactly scaled numbers: results computed
    on ``A / scale`` and multiplied back are bit for bit those computed on ``A``, except where the
    latter overflow (squares of values near 1e300), which is what the scaling is for.
    """
    A = np.asarray(A)
    peak = np.max(np.abs(A), axis=axis) if A.size else np.zeros(() if axis is None else A.shape[1 - axis])
    info = np.finfo(A.dtype if A.dtype.kind == "f" else np.float64)
    _, exponent = np.frexp(peak)
    exponent = np.clip(exponent - 1, info.minexp, info.maxexp - 1)
    return np.ldexp(np.ones_like(peak, dtype=info.dtype), exponent)


def mean_and_scale(A):
    """Column means and standard deviations of A (n, d), zero deviations replaced by 1.

    Equal to ``A.mean(0)`` and ``A.std(0)`` bit for bit, but computed on power-of-two-scaled
    columns so that values near the float limits do not overflow into an infinite deviation.
    """
    scale = power_of_two_scale(A, axis=0)
    As = A / scale
    mean = As.mean(0) * scale
    sd = As.std(0) * scale
    return mean, np.where(sd > 0, sd, 1.0)


def holdout_split(n, n_val, rng):
    """Sorted (train, validation) row indices: ``n_val`` random rows held out of ``n``.

    scikit-learn's ``train_test_split``, seeded from the estimator's Generator (it takes no
    Generator itself), as RFFNet does.
    """
    seed = int(rng.integers(2**32 - 1))
    train, val = train_test_split(np.arange(n), test_size=n_val, random_state=seed)
    return np.sort(train), np.sort(val)


def labels_from_decision(classes, D):
    """Class labels from decision values: the sign for two classes (D of shape (n,)), else the
    class of the largest value (D of shape (n, n_classes))."""
    if D.ndim == 1:
        return classes[(D > 0).astype(int)]
    return classes[np.argmax(D, axis=1)]


class TargetScaler:
    """Centre and scale regression targets per output (``normalize_y=True`` of every regressor).

    Estimators fit on ``(Y - mean_) / scale_`` and predict ``F * scale_ + mean_``, so the penalty,
    the step sizes and the stopping tolerances mean the same for y in metres or in millions, and the
    predictions come back in the caller's units. ``normalize=False`` keeps the identity (mean 0,
    scale 1), for reproducing papers that do not scale y. Statistics are overflow-safe
    (:func:`mean_and_scale`); a constant output gets scale 1.
    """

    def __init__(self, normalize=True):
        self.normalize = normalize

    def fit(self, Y):
        Y = np.asarray(Y, dtype=np.float64)
        Y2 = Y.reshape(Y.shape[0], -1)
        if self.normalize:
            self.mean_, self.scale_ = mean_and_scale(Y2)
        else:
            self.mean_, self.scale_ = np.zeros(Y2.shape[1]), np.ones(Y2.shape[1])
        return self

    def transform(self, Y):
        Y = np.asarray(Y, dtype=np.float64)
        return ((Y.reshape(Y.shape[0], -1) - self.mean_) / self.scale_).reshape(Y.shape)

    def inverse_transform(self, F):
        F = np.asarray(F, dtype=np.float64)
        return (F.reshape(F.shape[0], -1) * self.scale_ + self.mean_).reshape(F.shape)

