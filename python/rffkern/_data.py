"""Data handling shared by the data-dependent estimators: overflow-safe scaling, the held-out split,
and class labels from decision values."""
from __future__ import annotations

import contextlib

import numpy as np
from sklearn.model_selection import train_test_split

__all__ = ["power_of_two_scale", "mean_scale_constant", "mean_and_scale", "constant_columns",
           "pooled_scale", "one_spread", "standardizing", "check_sample_weight", "relative_sample_weight",
           "MIN_FIRST_CHUNK_ROWS", "check_first_chunk", "warn_newly_varying_inputs", "holdout_split",
           "labels_from_decision", "TargetScaler"]


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


def constant_columns(A, sample_weight=None):
    """The columns of A (n, d) that hold one value on every row (every row of positive
    ``sample_weight`` when given; none when there is no such row)."""
    A = np.asarray(A)
    if sample_weight is not None:
        A = A[np.asarray(sample_weight) > 0]
    if A.shape[0] == 0:
        return np.zeros(A.shape[1], dtype=bool)
    return A.min(axis=0) == A.max(axis=0)


def mean_scale_constant(A, sample_weight=None):
    """Column means and standard deviations of A (n, d), zero deviations replaced by 1, and the
    constant columns (:func:`constant_columns`).

    Equal to ``A.mean(0)`` and ``A.std(0)`` bit for bit (but for constant columns), computed on
    power-of-two-scaled columns so that values near the float limits do not overflow into an
    infinite deviation. A constant column gets its value as the mean and 1 as the scale, exactly,
    so that it standardizes to 0: its computed mean can miss the value by a rounding error (600
    rows of 0.3: by 5.6e-17), whose deviation, taken as the scale, made the column +-1 on the rows
    and ~1e14 at a row 0.01 away.

    Parameters
    ----------
    A : ndarray of shape (n, d)
    sample_weight : ndarray of shape (n,) or None, default=None
        Non-negative row weights with a positive sum (checked by the caller): the weighted mean
        ``sum_i w_i a_i / sum_i w_i`` and the weighted population deviation, so that integer
        weights give the statistics of the rows repeated that many times. None: every row 1. A row
        of weight 0 does not make a column vary.

    Returns
    -------
    mean, scale : ndarray of shape (d,)
    constant : ndarray of shape (d,), bool
    """
    scale = power_of_two_scale(A, axis=0)
    As = A / scale
    if sample_weight is None:
        mean = As.mean(0) * scale
        sd = As.std(0) * scale
    else:
        w = np.asarray(sample_weight, dtype=np.float64)
        m = np.average(As, axis=0, weights=w)
        mean = m * scale
        sd = np.sqrt(np.average((As - m) ** 2, axis=0, weights=w)) * scale
    constant = constant_columns(A, sample_weight)
    if constant.any():
        rows = A if sample_weight is None else A[np.asarray(sample_weight) > 0]
        mean = np.where(constant, rows[0], mean)
        sd = np.where(constant, 0.0, sd)
    return mean, np.where(sd > 0, sd, 1.0), constant


def mean_and_scale(A, sample_weight=None):
    """Column means and standard deviations of A (n, d), zero deviations replaced by 1: the first
    two results of :func:`mean_scale_constant` (a constant column: its value and 1).

    Parameters
    ----------
    A : ndarray of shape (n, d)
    sample_weight : ndarray of shape (n,) or None, default=None
        As for :func:`mean_scale_constant`.
    """
    return mean_scale_constant(A, sample_weight)[:2]


@contextlib.contextmanager
def standardizing(name="X"):
    """Standardize rows inside: an overflow is a ``ValueError`` that says what happened.

    The rows are finite (checked before), so an overflow of ``(X - x_mean_) / x_scale_`` means a
    value farther from the training rows' mean, in units of their deviation, than the dtype
    represents (-1.5e308 for a model of inputs near 1e308), which the kernels' later check of the
    overflowed result would call "NaN or infinity".
    """
    try:
        with np.errstate(over="raise"):
            yield
    except FloatingPointError:
        raise ValueError(
            f"{name} holds values too large for this model: standardized with the training rows' means and "
            "deviations, (x - x_mean_) / x_scale_ exceeds the largest float of its dtype. Keep the inputs within "
            "the float range of the training data's scale (e.g. divide X and the training inputs by one "
            "constant)") from None


def standardized_rows(X, mean, scale, dtype):
    """``(X - mean) / scale`` computed in float64, returned in ``dtype`` (always a new C-contiguous
    array; X is not modified).

    Centring before any cast to a narrower training dtype keeps an input whose offset is large
    against its variation: cast to float32 first, a column of ``1e12 + x`` (|x| ~ 1e3) holds
    multiples of 65536 only, and a model fitted on it learns nothing (docs/design_notes.rst).

    Narrower results are filled by blocks of rows, so the float64 intermediate stays small (the
    result itself is the only full-size allocation).

    Parameters
    ----------
    X : ndarray of shape (n, d)
    mean, scale : ndarray of shape (d,)
    dtype : numpy dtype of the result
    """
    dtype = np.dtype(dtype)
    with standardizing():
        if dtype == np.float64:
            Z = np.subtract(X, mean, dtype=np.float64)
            Z /= scale
            return np.ascontiguousarray(Z)
        out = np.empty(X.shape, dtype=dtype)
        step = max(1, _STANDARDIZE_BLOCK_VALUES // max(1, X.shape[1]))
        for start in range(0, X.shape[0], step):
            block = np.subtract(X[start:start + step], mean, dtype=np.float64)
            block /= scale
            out[start:start + step] = block
        return out


#: ``standardized_rows``' float64 blocks hold at most this many values (8 MB).
_STANDARDIZE_BLOCK_VALUES = 1 << 20


def pooled_scale(scale, constant):
    """One scale for every varying input: ``scale`` with the entries of the inputs that vary
    (``~constant``) replaced by their root mean square; the constant inputs' entries stay.

    Dividing the centred inputs by it keeps their relative spreads (the "global" standardization of
    :class:`~rffkern.RFFRidge`): on inputs in one unit, such as pixels, standardizing each column
    blows up the rarely varying ones (a pixel inked in 2 of 10,000 rows becomes ~70 there).

    Parameters
    ----------
    scale : ndarray of shape (d,)
        Per-input scales (:func:`mean_scale_constant`, or :func:`rffkern._inputs.fit_input_scaling`'s with
        infinite entries for the constant inputs).
    constant : ndarray of shape (d,), bool

    Examples
    --------
    >>> import numpy as np
    >>> from rffkern._data import pooled_scale
    >>> pooled_scale(np.array([1.0, 7.0, np.inf]), np.array([False, False, True]))
    array([ 5.,  5., inf])
    """
    scale = np.asarray(scale, dtype=np.float64)
    varying = ~np.asarray(constant, dtype=bool)
    if not varying.any():
        return scale.copy()
    top = float(scale[varying].max())  # (the root mean square of values near the float limit, without overflow)
    return np.where(varying, top * np.sqrt(np.mean((scale[varying] / top) ** 2)), scale)


def one_spread(scale, constant, rtol=1e-6):
    """Whether the varying inputs' deviations ``scale`` are equal to ``rtol`` (relative): then
    :func:`pooled_scale` changes nothing but round-off (one input, or X standardized already) and
    the two standardizations need no comparison.

    Examples
    --------
    >>> import numpy as np
    >>> from rffkern._data import one_spread
    >>> one_spread(np.array([1.0, 1.0 + 1e-15, 3.0]), np.array([False, False, True]))
    True
    """
    varying = scale[~np.asarray(constant, dtype=bool)]
    return varying.size == 0 or bool(np.ptp(varying) <= rtol * varying.max())


def check_sample_weight(sample_weight, n_samples):
    """``sample_weight`` as a float64 vector of length ``n_samples``, or None when it is None.

    A scalar is the same weight for every sample (scikit-learn's convention). A ``ValueError``
    naming ``sample_weight`` for a wrong shape or length, NaN or infinity, a negative weight, or
    weights that are all zero; a ``TypeError`` for a non-numeric array. The caller's array is
    never modified (a copy is returned).
    """
    if sample_weight is None:
        return None
    w = np.asarray(sample_weight)
    if w.dtype.kind not in "biuf":
        raise TypeError(f"sample_weight must be numeric, got dtype {w.dtype}")
    if w.ndim == 0:
        w = np.full(n_samples, w, dtype=np.float64)
    if w.ndim != 1 or w.shape[0] != n_samples:
        raise ValueError(f"sample_weight must have shape ({n_samples},) (one weight per sample), got shape {w.shape}")
    w = np.array(w, dtype=np.float64)
    if not np.isfinite(w).all():
        raise ValueError("sample_weight contains NaN or infinity")
    if (w < 0).any():
        raise ValueError(f"sample_weight must be non-negative; got {int((w < 0).sum())} negative weight(s)")
    if not (w > 0).any():  # (not w.sum(), which overflows for weights near the float limit)
        raise ValueError("sample_weight sums to zero: at least one sample needs a positive weight")
    return w


def relative_sample_weight(sample_weight, n_samples, unit=None):
    """``(weights, unit)``: :func:`check_sample_weight`'s weights divided by ``unit``, and ``unit``.

    Every estimator fits on relative weights, so that multiplying all weights by one constant
    changes nothing (its penalties and tolerances mean what they mean without weights, whatever
    the weights' units: weights of 1e-20 fitted the penalty grid's floor), and equal weights fit
    the model of no weights. ``unit`` None: the mean weight of the rows of positive weight
    (computed without overflow, so that weights near the float limit work too; rows of weight 0
    do not change it, as they do not change the model), as ``fit`` and a first ``partial_fit``
    take it; a later ``partial_fit`` passes the unit the model keeps, so that its chunks keep
    their relative weights. The weights returned are None where they are all 1 in that unit (None
    given with unit 1), and ones in it for None with another unit (None means weight 1 in the
    caller's units).

    Examples
    --------
    >>> import numpy as np
    >>> from rffkern._data import relative_sample_weight
    >>> relative_sample_weight([2.0, 6.0, 0.0], 3)
    (array([0.5, 1.5, 0. ]), 4.0)
    >>> relative_sample_weight(3.0, 2)
    (None, 3.0)
    >>> relative_sample_weight(None, 2, unit=4.0)
    (array([0.25, 0.25]), 4.0)
    """
    w = check_sample_weight(sample_weight, n_samples)
    if unit is None:
        unit = 1.0 if w is None else _mean_positive(w)
    if w is None:
        w = None if unit == 1.0 else np.full(n_samples, 1.0)
    if w is not None:
        w = w / unit
        if not np.isfinite(w).all():
            raise ValueError(f"sample_weight is too large relative to the model's weight unit {unit:.3g} "
                             "(the mean positive weight of its first fit): the ratio overflows float64")
        if np.all(w == 1.0):
            w = None
    return w, float(unit)


def _mean_positive(w):
    """The mean of the positive entries of w (at least one), without overflow near the float limit."""
    positive = w[w > 0]
    top = float(positive.max())
    return top * float(np.mean(positive / top))


#: ``partial_fit``'s first chunk fixes the inputs' standardization, the target scale and the kernel
#: width (RFFRidge) or initial relevances (RFFNet) for every later chunk, so it needs at least this
#: many rows of positive weight: a deviation from k rows is off by about ``1 / sqrt(2 (k - 1))``
#: (24% at 10). From a first chunk of one row RFFNetRegressor reaches a test R^2 of 0.01 in 20 passes
#: over 400 rows in chunks of 50 (``fit``: 0.99), and RFFRidge 0.04 in one; two or three rows do
#: little better (make_jse3, seeds 0-2), ten or more as well as fifty.
MIN_FIRST_CHUNK_ROWS = 10


def check_first_chunk(X, sample_weight, name):
    """The inputs constant on ``partial_fit``'s first chunk ``X`` (on its rows of positive
    ``sample_weight``), for :func:`warn_newly_varying_inputs`; a ``ValueError`` naming
    :data:`MIN_FIRST_CHUNK_ROWS` and the ways forward for a smaller chunk. ``name``: the
    estimator's, for the message."""
    rows = X if sample_weight is None else X[np.asarray(sample_weight) > 0]
    if rows.shape[0] < MIN_FIRST_CHUNK_ROWS:
        weighted = "" if sample_weight is None else " of positive weight"
        raise ValueError(
            f"{name}.partial_fit's first chunk has {rows.shape[0]} row(s){weighted}; it needs at least "
            f"{MIN_FIRST_CHUNK_ROWS}: it fixes the inputs' standardization, the target scale and the kernel's "
            "width for every later chunk. Start with a larger chunk, or fit(X, y) on the rows at hand and "
            "continue with partial_fit")
    return constant_columns(rows)


def warn_newly_varying_inputs(constant, values, X, sample_weight, name, stacklevel=5):
    """Warn (``UserWarning``) where the rows of X (of positive ``sample_weight``) leave ``values``
    in inputs ``constant`` on ``partial_fit``'s first chunk: that chunk fixed their standardization
    (their value as the mean, scale 1), so the model takes them in raw units. Returns the mask
    less the inputs warned about (each is named once). ``stacklevel`` reaches the caller of
    ``partial_fit`` (by default through ``_fit`` and ``single_threaded_blas``)."""
    if constant is None or not constant.any():
        return constant
    rows = X if sample_weight is None else X[np.asarray(sample_weight) > 0]
    moved = constant & (rows != np.asarray(values, dtype=rows.dtype)).any(axis=0)
    if moved.any():
        import warnings

        warnings.warn(
            f"{name}.partial_fit: input(s) {np.flatnonzero(moved).tolist()} vary in this chunk but were constant "
            "on the first chunk, which fixed the standardization: the model takes them in raw units (scale 1), "
            "not standardized. Start with a first chunk on which every input varies, or fit(X, y) first",
            UserWarning, stacklevel=stacklevel)
    return constant & ~moved


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

    def fit(self, Y, sample_weight=None):
        """Learn ``mean_`` and ``scale_`` from the targets.

        Parameters
        ----------
        Y : array-like of shape (n,) or (n, m)
        sample_weight : ndarray of shape (n,) or None, default=None
            Non-negative row weights (already checked, see :func:`check_sample_weight`): the
            weighted mean and deviation of :func:`mean_and_scale`. None: equal weights.

        Returns
        -------
        self : TargetScaler
        """
        Y = np.asarray(Y, dtype=np.float64)
        Y2 = Y.reshape(Y.shape[0], -1)
        if self.normalize:
            self.mean_, self.scale_ = mean_and_scale(Y2, sample_weight)
        else:
            self.mean_, self.scale_ = np.zeros(Y2.shape[1]), np.ones(Y2.shape[1])
        return self

    def transform(self, Y):
        Y = np.asarray(Y, dtype=np.float64)
        return ((Y.reshape(Y.shape[0], -1) - self.mean_) / self.scale_).reshape(Y.shape)

    def inverse_transform(self, F):
        F = np.asarray(F, dtype=np.float64)
        return (F.reshape(F.shape[0], -1) * self.scale_ + self.mean_).reshape(F.shape)

