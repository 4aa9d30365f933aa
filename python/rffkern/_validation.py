"""Input conversion and checks shared by every public function and estimator.

Python converts, C++ checks: arrays reach the core C-contiguous, finite, float32 or float64
(keeping the caller's precision), with the right number of dimensions.
"""
from __future__ import annotations

import numbers
import os

import numpy as np
import scipy.sparse as sp

FLOAT_DTYPES = (np.float64, np.float32)


def float_dtype_of(X) -> np.dtype:
    """The working dtype for ``X``: float32 stays float32, everything else real becomes float64."""
    dtype = np.asarray(X).dtype if not hasattr(X, "dtype") else X.dtype
    if dtype == np.float32:
        return np.dtype(np.float32)
    return np.dtype(np.float64)


def refuse_mixed_labels(y) -> None:
    """A ``ValueError`` where class labels mix text with other values (``[1, 'a', 2]`` as an
    object array): they have no order to sort into ``classes_``, and scikit-learn's check called
    them an "unknown label type" that looked like "a regression target with continuous values"."""
    arr = np.asarray(y)
    if arr.dtype.kind != "O":
        return
    values = arr.ravel().tolist()
    text = next((v for v in values if isinstance(v, (str, bytes))), None)
    other = next((v for v in values if not isinstance(v, (str, bytes))), None)
    if text is not None and other is not None:
        raise ValueError(f"y mixes text and other labels (e.g. {text!r} and {other!r}); give every class label "
                         "one type, e.g. y.astype(str)")


def check_class_labels(y) -> None:
    """scikit-learn's ``check_classification_targets``, after :func:`refuse_mixed_labels`."""
    from sklearn.utils.multiclass import check_classification_targets

    refuse_mixed_labels(y)
    check_classification_targets(y)


def check_label_chunk(y) -> None:
    """:func:`check_class_labels` for rows of a problem whose classes are given (a ``partial_fit``
    chunk): without scikit-learn's warning that more distinct labels than half the rows look like
    a regression target, which a small chunk of many classes trips (``rffkern.fit`` adds its
    held-out rows this way)."""
    import warnings

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="The number of unique classes is greater than 50%",
                                category=UserWarning)
        check_class_labels(y)


def refuse_sparse(a, name):
    """Raise ``TypeError`` when ``a`` is a scipy.sparse matrix or array.

    Only :class:`~rffkern.RandomFourierFeatures` takes sparse input; everywhere else
    ``np.asarray`` would turn a sparse matrix into a 0-d object array (a confusing error), and a
    silent ``toarray()`` could exhaust memory, so the caller decides.

    Parameters
    ----------
    a : object
        The argument to check.
    name : str
        Its name in the message.

    Returns
    -------
    object
        ``a`` itself, when it is not sparse.

    Raises
    ------
    TypeError
        If ``a`` is a scipy.sparse matrix or array.

    Examples
    --------
    >>> import scipy.sparse as sp
    >>> from rffkern._validation import refuse_sparse
    >>> refuse_sparse([1.0, 2.0], "X")
    [1.0, 2.0]
    >>> refuse_sparse(sp.eye(3, format="csr"), "X")
    Traceback (most recent call last):
    ...
    TypeError: X is a scipy.sparse csr_matrix; this function needs a dense array. Pass X.toarray() if it fits in memory; only RandomFourierFeatures takes sparse input (and kernels.features / kernels.predict take kernels.CenteredRows.from_csr(X)).
    """
    if sp.issparse(a):
        raise TypeError(
            f"{name} is a scipy.sparse {type(a).__name__}; this function needs a dense array. "
            f"Pass {name}.toarray() if it fits in memory; only RandomFourierFeatures takes sparse input "
            "(and kernels.features / kernels.predict take kernels.CenteredRows.from_csr(X))."
        )
    return a


def check_array_2d(X, name="X", *, dtype=None, allow_empty=False, min_rows=1) -> np.ndarray:
    """Return ``X`` as a finite C-contiguous 2-D float array (a copy only when needed).

    Integers and booleans are converted; complex, object and string data raise ``TypeError``,
    and so does a scipy.sparse matrix (:func:`refuse_sparse`).
    """
    arr = np.asarray(refuse_sparse(X, name))
    if arr.dtype.kind == "c":
        raise TypeError(f"{name} is complex ({arr.dtype}); rffkern needs real-valued input")
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"{name} must be numeric, got dtype {arr.dtype}")
    if arr.ndim != 2:
        raise ValueError(
            f"{name} must be 2-D (n_samples, n_features), got {arr.ndim}-D with shape {arr.shape}; "
            "reshape 1-D data with .reshape(-1, 1) for one feature or .reshape(1, -1) for one sample"
        )
    if dtype is None:
        dtype = float_dtype_of(arr)
    arr = np.ascontiguousarray(arr, dtype=dtype)
    if not allow_empty:
        if arr.shape[0] < min_rows:
            raise ValueError(
                f"{name} has {arr.shape[0]} sample(s); at least {min_rows} required"
            )
        if arr.shape[1] == 0:
            raise ValueError(f"{name} has 0 features; at least 1 required")
    if not np.isfinite(arr).all():
        raise ValueError(f"{name} contains NaN or infinity")
    return arr


def check_vector(v, name, length, dtype) -> np.ndarray:
    """A finite 1-D array of ``length`` entries in ``dtype``."""
    arr = _real_array(v, name)
    if arr.ndim != 1 or arr.shape[0] != length:
        raise ValueError(f"{name} must have shape ({length},), got {arr.shape}")
    return _finite_contiguous(arr, name, dtype)


def check_matrix(a, name, shape, dtype) -> np.ndarray:
    """A finite C-contiguous 2-D array with the given shape (None entries are free)."""
    arr = _real_array(a, name)
    if arr.ndim != 2 or any(w is not None and w != g for w, g in zip(shape, arr.shape)):
        want = "(" + ", ".join("*" if w is None else str(w) for w in shape) + ")"
        raise ValueError(f"{name} must have shape {want}, got {arr.shape}")
    return _finite_contiguous(arr, name, dtype)


def _real_array(a, name) -> np.ndarray:
    arr = np.asarray(refuse_sparse(a, name))
    if arr.dtype.kind == "c":
        raise TypeError(f"{name} is complex; a real array is required")
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"{name} must be numeric, got dtype {arr.dtype}")
    return arr


def _finite_contiguous(arr, name, dtype) -> np.ndarray:
    arr = np.ascontiguousarray(arr, dtype=dtype)
    if not np.isfinite(arr).all():
        raise ValueError(f"{name} contains NaN or infinity")
    return arr


def check_out(out, name, shape, dtype) -> np.ndarray:
    """A caller's output buffer: used as is, never copied, so it must match exactly."""
    if not isinstance(out, np.ndarray):
        raise TypeError(f"{name} must be a numpy.ndarray, got {type(out).__name__}")
    if out.dtype != dtype:
        raise TypeError(f"{name} must have dtype {np.dtype(dtype)}, got {out.dtype}")
    if out.shape != tuple(shape):
        raise ValueError(f"{name} must have shape {tuple(shape)}, got {out.shape}")
    if not out.flags.c_contiguous:
        raise ValueError(f"{name} must be C-contiguous")
    if not out.flags.writeable:
        raise ValueError(f"{name} is read-only")
    return out


def available_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def resolve_n_threads(n_jobs) -> int:
    """Threads for one kernel call, from scikit-learn's ``n_jobs`` convention.

    None: OpenMP's current limit (``OMP_NUM_THREADS``, or what ``threadpoolctl.threadpool_limits``
    / ``omp_set_num_threads`` set), at most the usable cores; -1: all usable cores; -k: all but
    k - 1; a positive count larger than the usable cores is clamped to them; 0 is an error.
    """
    from rffkern import _core

    cores = available_cores()
    if n_jobs is None:
        return max(1, min(cores, _core.max_threads()))
    if isinstance(n_jobs, bool) or not isinstance(n_jobs, numbers.Integral):
        raise TypeError(f"n_jobs must be an int or None, got {n_jobs!r}")
    n_jobs = int(n_jobs)
    if n_jobs == 0:
        raise ValueError("n_jobs == 0 has no meaning; use None, a positive count or -1 for all cores")
    if n_jobs < 0:
        return max(1, cores + 1 + n_jobs)
    return min(n_jobs, cores)


def check_positive_int(value, name, minimum=1) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an int, got {type(value).__name__} {value!r}")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    return int(value)


def check_positive_float(value, name, *, allow_zero=False) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__} {value!r}")
    value = float(value)
    if not np.isfinite(value) or value < 0 or (value == 0 and not allow_zero):
        bound = ">= 0" if allow_zero else "> 0"
        raise ValueError(f"{name} must be finite and {bound}, got {value}")
    return value


def as_generator(random_state) -> np.random.Generator:
    """A NumPy Generator from None, an int seed, a Generator or a legacy RandomState."""
    if random_state is None:
        return np.random.default_rng()
    if isinstance(random_state, np.random.Generator):
        return random_state
    if isinstance(random_state, np.random.RandomState):
        return np.random.default_rng(random_state.randint(0, 2**31 - 1))
    if isinstance(random_state, numbers.Integral) and not isinstance(random_state, bool):
        if random_state < 0:
            raise ValueError(f"random_state must be a non-negative int, got {random_state}")
        return np.random.default_rng(int(random_state))
    raise TypeError(
        f"random_state must be None, an int, a numpy Generator or RandomState, got {random_state!r}"
    )


def check_scale(scale: float) -> float:
    if isinstance(scale, (bool, np.bool_)) or not isinstance(scale, (numbers.Real, np.floating, np.integer)):
        raise TypeError(f"scale must be a real number, got {type(scale).__name__} {scale!r}")
    if not np.isfinite(scale):
        raise ValueError(f"scale must be finite, got {scale}")
    return float(scale)
