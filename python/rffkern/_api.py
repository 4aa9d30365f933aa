"""``rffkern.fit``: one call that picks the right RFFNet estimator for the target."""
from __future__ import annotations

import time
import warnings
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from rffkern._dask import is_dask_array
from rffkern._data import power_of_two_scale, relative_sample_weight
from rffkern._fit_options import fit_options
from rffkern._linalg import single_threaded_blas
from rffkern._progress import ProgressLog
from rffkern._rffnet_training import stratified_subset
from rffkern._sampling import DEFAULT_NU, KERNELS, check_nu
from rffkern._selection import paired_standard_error
from rffkern._typing import RandomStateLike
from rffkern._validation import as_generator, refuse_mixed_labels, refuse_sparse, resolve_n_threads
from rffkern.rffnet import CLOSING_MAX_ROWS, RFFNetClassifier, RFFNetRegressor
from rffkern.ridge import RFFRidge, RFFRidgeClassifier

__all__ = ["fit", "task_of_target", "explain_task", "count_shaped", "TaskWarning"]

#: Integer targets with more than this many distinct values are counts or measurements
#: (abalone's 28 ring counts, diabetes' 214 progression scores) and are regressed.
MAX_INTEGER_CLASSES = 20
#: Frequencies that rise to one peak and fall away from it, the least of them under this share of
#: the peak, have the shape of counts, scores or ratings (arrests per year: 72% zeros; ratings 1..10
#: peaked in the middle), not of class labels, whose frequencies follow no order of the codes.
COUNT_SHAPE_RATIO = 0.2


class TaskWarning(UserWarning):
    """The task rule (:func:`explain_task`) guessed: pass ``task=`` to say which is meant."""


def task_of_target(y: ArrayLike) -> str:
    """Tell "classification" or "regression": what a user most likely means by ``y``.

    The rule of :func:`explain_task`; pass ``task=`` to :func:`fit` to override it.

    Parameters
    ----------
    y : array-like of shape (n_samples,) or (n_samples, n_outputs)
        The targets.

    Returns
    -------
    str
        "classification" or "regression".

    Examples
    --------
    >>> from rffkern._api import task_of_target
    >>> task_of_target(["a", "b", "a"]), task_of_target([0.5, 1.5, 2.0])
    ('classification', 'regression')
    """
    return explain_task(y)[0]


def explain_task(y: ArrayLike) -> tuple[str, str]:
    """Return ``(task, reason)``: what a user most likely means by ``y``, and the rule that decided.

    - strings, booleans and other non-numeric labels: classification;
    - floats with a fractional part anywhere, or several output columns: regression;
    - integer values (of an integer or a float dtype): two distinct values are classes; more than
      ``MAX_INTEGER_CLASSES`` (20) are counts or measurements, regressed; from 3 to 20 they are
      class labels where they are the codes ``0..k-1`` or ``1..k`` and their frequencies do not
      have the shape of counts (:func:`count_shaped`), else they are regressed (years of schooling
      12..18, arrests 0..12 with gaps, ratings 1..10 peaked in the middle). Regressing such a
      target is a guess: :func:`fit` and the command line then warn (``TaskWarning``) with what
      they chose and how to choose the other.

    Parameters
    ----------
    y : array-like of shape (n_samples,) or (n_samples, n_outputs)
        The targets.

    Returns
    -------
    task : str
        "classification" or "regression".
    reason : str
        The rule that decided, in words.

    Examples
    --------
    >>> from rffkern._api import explain_task
    >>> explain_task([0, 1, 1, 2])
    ('classification', 'class codes 0..2, 3 distinct values')
    >>> explain_task([0, 0, 0, 0, 0, 0, 1, 1, 2, 5])[0]
    'regression'
    """
    return task_rule(y)[:2]


def count_shaped(counts: ArrayLike) -> bool:
    """Whether the frequencies of consecutive values rise to one peak and fall away from it, the
    least of them under ``COUNT_SHAPE_RATIO`` of the peak.

    Examples
    --------
    >>> from rffkern._api import count_shaped
    >>> count_shaped([720, 150, 60, 20, 5]), count_shaped([980, 1135, 1032, 1010])
    (True, False)
    """
    counts = np.asarray(counts)
    peak = int(np.argmax(counts))
    rising, falling = np.diff(counts[:peak + 1]), np.diff(counts[peak:])
    return bool((rising >= 0).all() and (falling <= 0).all() and counts.min() < COUNT_SHAPE_RATIO * counts.max())


def task_guess_message(task: str, reason: str, option: str) -> str:
    """What the task rule guessed and how to choose the other task: ``option`` is how the caller
    names it (``"task='{}'"`` in Python, ``"--task {}"`` on the command line)."""
    other = "classification" if task == "regression" else "regression"
    meaning = "class labels" if other == "classification" else "quantities"
    return (f"y holds {reason}: fitting {task}; pass {option.format(other)} if its values are {meaning}")


def task_rule(y: ArrayLike) -> tuple[str, str, bool]:
    """``(task, reason, guessed)``: :func:`explain_task`'s decision, and whether the rule guessed."""
    arr = np.asarray(y)
    if arr.size == 0:
        raise ValueError("y is empty")
    if arr.ndim > 2 or (arr.ndim == 2 and arr.shape[1] > 1 and arr.dtype.kind not in "fiu"):
        raise ValueError(
            f"rffkern.fit cannot learn a y of shape {arr.shape} and dtype {arr.dtype}; pass a 1-D "
            "class label vector, or real-valued targets of shape (n_samples,) or (n_samples, n_outputs)")
    if arr.ndim == 2 and arr.shape[1] > 1:
        if np.isin(arr, (0, 1)).all():
            raise ValueError(
                "y looks like a multilabel indicator matrix (0/1 columns), which rffkern.fit does "
                "not classify; pass task='regression' to regress the columns")
        return "regression", f"{arr.shape[1]} numeric output columns", False
    arr = arr.reshape(-1)
    if arr.dtype.kind == "O":
        values = arr.tolist()
        if all(isinstance(v, (int, float, np.number)) and not isinstance(v, (bool, np.bool_))
               for v in values):
            return task_rule(np.asarray(values, dtype=np.float64))
        refuse_mixed_labels(arr)
        return "classification", "non-numeric labels", False
    if arr.dtype.kind in "USb":
        return "classification", "boolean labels" if arr.dtype.kind == "b" else "text labels", False
    if arr.dtype.kind not in "fiu":
        raise ValueError(f"rffkern.fit cannot learn a target of dtype {arr.dtype}")
    if arr.dtype.kind == "f":
        if not np.isfinite(arr).all():
            raise ValueError("y contains NaN or infinity")
        if np.any(arr != np.round(arr)):
            return "regression", "real values", False
    values, counts = np.unique(arr, return_counts=True)
    k = values.size
    if k <= 2:
        return "classification", f"integer values, {k} distinct", False
    if k > MAX_INTEGER_CLASSES:
        return "regression", f"integer values, {k} distinct (> {MAX_INTEGER_CLASSES})", False
    span = f"{values[0]:.0f}..{values[-1]:.0f}"
    if values[0] not in (0, 1) or values[-1] - values[0] != k - 1:
        return "regression", f"integer values {span}, {k} distinct, not class codes 0..k-1 or 1..k", True
    if count_shaped(counts):
        return "regression", f"integer values {span} whose frequencies fall away from one peak, as counts do", True
    return "classification", f"class codes {span}, {k} distinct values", False


#: ``rffkern.fit`` searches the kernel width on a random subset of at most this many training rows
#: with ``SEARCH_COMPONENTS`` features (the width of a 1000-feature model on all rows is close to the
#: best width of this smaller problem, and the search costs a fraction of one full Gram pass), on
#: small data sets too, where it is faster than a search on every row and no less accurate on three
#: of four (docs/design_notes.rst).
SEARCH_ROWS = 3000
#: The full model's features: 1000, at most twice the training rows.
N_COMPONENTS = 1000
COMPONENTS_PER_ROW = 2
SEARCH_COMPONENTS = 500
#: RFFNet is trained from the tuned width in two variants, the better on the held-out rows kept: at
#: its defaults ("sparse": the shared-moment Adam with the L1 relevance penalty, which recovers a few
#: relevant features among many) and with the paper's Adam and no penalty ("dense"), better where
#: every input matters ...
RFFNET_VARIANTS: dict[str, dict[str, Any]] = {
    "sparse": {},
    "dense": {"solver": "adam", "relevance_penalty": 0.0, "learning_rate": 1e-3},
}
#: ... and "sparse" only with at least this many input features: with fewer, "dense" alone does as
#: well or better on most splits; with many, "sparse" finds relevant features that "dense" misses
#: (docs/design_notes.rst).
SPARSE_MIN_FEATURES = 50
#: For classes, RFFNet learns its relevances on at most this many of the training rows (a random
#: subset, stratified by class); the returned model's closing logistic / softmax fit then takes the
#: other training rows with the held-out ones (at most ``rffnet.CLOSING_MAX_ROWS`` rows in all, as
#: for RFFNetClassifier itself). The variants are compared with their closing fits on the subset.
#: The subset halves the fit on a9a and w8a at about the same test error. Regression is not capped:
#: its RFFNet gains from every row (docs/design_notes.rst).
NET_MAX_ROWS_CLASSIFICATION = 10_000
#: RFFNet's "adaptive" learning-rate schedule lowers the step size at most this many times in
#: ``rffkern.fit`` (RFFNet's own default: 3), so its training stops at the second plateau of
#: ``n_iter_no_change`` epochs without improvement instead of the fourth: the same test error on
#: most splits, RFFNet's stage up to a third shorter (docs/design_notes.rst).
FIT_LR_DECAYS = 1
#: RFFNet (per-input relevances, a learned map) is returned only where its held-out loss is lower
#: than the ridge's (one kernel, fitted in closed form: the simpler model) by more than this many
#: standard errors of the mean of the per-row differences (0/1 errors for classes, squared errors
#: over the variance of y for regression); else the ridge, fitted on every training row when RFFNet
#: has not beaten the width search's ridge by that much either. As the width search's rule, RFFNet
#: moves the choice only on evidence: with 91 held-out rows on breast_cancer both models are often
#: perfect, and any lead of RFFNet there is noise. Two standard errors are too many where one
#: split's squared errors are heavy-tailed (cpu_act; docs/design_notes.rst).
LEAD_STANDARD_ERRORS = 1.0

#: ``few_rows_carry``: the share of rows (the largest) and the share of the target's sum of
#: squares they must carry for the ridge on a subset not to stand in for the full ridge
TAIL_ROWS = 0.001
TAIL_SHARE = 0.1

#: The full ridge (when needed) is fitted at that width, its penalty chosen by the exact leave-one-out
#: error of every training row. (Scoring a random subset of rows, ``RFFRidge(loo_rows=...)``, is
#: cheaper but unreliable here: at small penalties a few rows of leverage near 1 dominate the mean
#: LOO error, and a subset can miss them; docs/design_notes.rst.)


def _least_error_width(ridge: Any) -> float:
    """The searched width of least leave-one-out error: RFFNet's start.

    Not the ridge's own choice (the median heuristic unless another width is better by more than
    one standard error, which steadies the ridge on a few hundred rows): RFFNet learns its widths,
    and ends better from the least-error start (docs/design_notes.rst).
    """
    # RFFNet standardizes each input by its own deviation, after the normal scores of "quantile"
    search = getattr(ridge, "_width_search", {}).get("quantile" if ridge.standardize_ == "quantile" else True)
    if search is None:
        return float(ridge.length_scale_)
    widths, errors = search
    return float(widths[int(np.argmin(errors))])


def _pooled_start(ridge: Any) -> np.ndarray | None:
    """The dense RFFNet variant's start where the width search kept one pooled deviation for every
    input (``standardize="global"``), else None: the relevances that make RFFNet's kernel on its
    inputs standardized each by its own deviation ``sd_j`` that of the search's least-error
    width ``w`` on inputs divided by the pooled deviation ``c``, ``sd_j / (c w)`` (0 for an input
    constant on the search's rows).

    It lowers the dense variant's test error on mnist_test10k (docs/design_notes.rst). Not for the
    sparse variant, whose L1 penalty on the relevances then prunes the rarely varying inputs
    harder.
    """
    if getattr(ridge, "standardize_", True) != "global" or "global" not in getattr(ridge, "_width_search", {}):
        return None
    widths, errors = ridge._width_search["global"]
    return ridge._own_deviation_ratio() / widths[int(np.argmin(errors))]


def _held_out_score(model: Any, X: np.ndarray, y: np.ndarray, sample_weight: np.ndarray | None = None) -> float:
    """``model.score`` on the held-out rows; NaN where it is undefined, R^2 of a single held-out
    row (from 4 or 5 samples), which scikit-learn would compute with an ``UndefinedMetricWarning``
    (not silenced with ``warnings.catch_warnings``: the RFFNet variants score in threads, and its
    save-and-restore of the global filters is not thread-safe). The models are then compared by
    :func:`_lead`, which finds no clear lead on one row either."""
    from sklearn.base import is_regressor

    if not is_regressor(model):
        return float(model.score(X, y, sample_weight=sample_weight))
    if len(y) < 2:
        return float("nan")
    from sklearn.metrics import r2_score

    # model.score's R^2 on targets and predictions divided by a power of two per output: the same
    # bits, but no squares of targets near 1e300 overflowing into inf (and the score into NaN)
    Y = np.asarray(y, np.float64).reshape(y.shape[0], -1)
    scale = power_of_two_scale(Y, axis=0)
    pred = np.asarray(model.predict(X), np.float64).reshape(Y.shape)
    return float(r2_score(Y / scale, pred / scale, sample_weight=sample_weight))


def _validation_losses(model: Any, X: np.ndarray, y: np.ndarray, classify: bool,
                       sample_weight: np.ndarray | None = None) -> np.ndarray:
    """Each held-out row's loss, whose (``sample_weight``-weighted) mean orders models as their
    ``score`` does: 0/1 for a wrong class; for regression the squared error over the (weighted)
    variance of y, averaged over the outputs (the rows' share of 1 - R^2)."""
    pred = model.predict(X)
    if classify:
        return (pred != y).astype(np.float64)
    # in units of a power of two per output (exact: the same losses, but no squares of targets
    # near 1e300 overflowing)
    Y = np.asarray(y, np.float64).reshape(y.shape[0], -1)
    scale = power_of_two_scale(Y, axis=0)
    err = (np.asarray(pred, np.float64).reshape(Y.shape) - Y) / scale
    Y = Y / scale
    mean = np.average(Y, axis=0, weights=sample_weight)
    spread = np.average((Y - mean) ** 2, axis=0, weights=sample_weight)
    return np.mean(err * err / np.where(spread > 0, spread, 1.0), axis=1)


def _lead(losses: np.ndarray, others: np.ndarray, sample_weight: np.ndarray | None = None) -> tuple[float, float]:
    """``(mean, standard error)`` of the per-row loss differences ``others - losses``: how much the
    first model's held-out loss is lower, and how sure that is (NaN for one row: no lead is clear).
    With ``sample_weight`` the mean is weighted and its standard error that of a weighted mean
    (:func:`rffkern.ridge.paired_standard_error`: unchanged when every weight is multiplied by one
    constant). The row of the largest difference either way is left out first
    (:func:`without_the_deciding_row`): one outlying held-out row does not decide."""

    paired_standard_error(others, losses, sample_weight)  # (first: it checks that the rows pair)
    losses, others, sample_weight = without_the_deciding_row(losses, others, sample_weight)
    se = paired_standard_error(others, losses, sample_weight)
    if sample_weight is None:
        return float(np.mean(others - losses)), se
    d = np.asarray(others, np.float64) - np.asarray(losses, np.float64)
    return float(np.average(d, weights=sample_weight)), se


def few_rows_carry(y: np.ndarray) -> bool:
    """Whether the largest ``TAIL_ROWS`` share of rows (at least one) carry more than
    ``TAIL_SHARE`` of the target's sum of squared deviations, in any column: a subset of the rows
    may then miss what decides the fit. On the bench's regression sets: countymurders 0.62,
    online_news 0.87, vietnam 0.21, crime1 0.14; the others at most 0.05 (elevators)."""
    Y = np.asarray(y, np.float64).reshape(len(y), -1)
    squares = -np.sort(-(Y - Y.mean(axis=0)) ** 2, axis=0)
    top = squares[:max(1, int(TAIL_ROWS * len(Y)))].sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        return bool(np.any(top > TAIL_SHARE * squares.sum(axis=0)))


def without_the_deciding_row(losses: np.ndarray, others: np.ndarray, sample_weight: np.ndarray | None = None
                             ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """Two models' held-out losses (and the rows' weights) without the row where they differ most
    (weighted), from three rows on and for regression losses: a model's absurd answer on one outlying row, or its lucky one,
    does not outweigh every other row. The rows that carry the signal together (the few large
    counties of a heavy-tailed count) still count: only one row is left out."""
    losses, others = np.asarray(losses, np.float64), np.asarray(others, np.float64)
    if losses.size < 3 or (np.isin(losses, (0.0, 1.0)).all() and np.isin(others, (0.0, 1.0)).all()):
        return losses, others, sample_weight  # (0/1 losses of classes: no row outweighs the others)
    spread = np.abs(others - losses) * (1.0 if sample_weight is None else np.asarray(sample_weight))
    keep = np.arange(losses.size) != int(np.argmax(spread))
    return losses[keep], others[keep], None if sample_weight is None else np.asarray(sample_weight)[keep]


def _label_vector(y: np.ndarray) -> np.ndarray:
    """Class labels as a 1-D vector: a single column (``labels[:, None]``, a one-column DataFrame)
    is raveled with scikit-learn's ``DataConversionWarning``, as its estimators (and rffkern's)
    do; more columns are refused. (A column left 2-D broadcasts against 1-D predictions into an
    n x n array: 3.4 GB at 50,000 rows.)"""
    if y.ndim == 2 and y.shape[1] == 1:
        from sklearn.utils.validation import column_or_1d

        return column_or_1d(y, warn=True)
    if y.ndim != 1:
        raise ValueError(f"classification needs one class label per sample (a 1-D y), got y of shape {y.shape}; "
                         "rffkern.fit does not fit multilabel or multioutput classes")
    return y


def _numeric_inputs(X: ArrayLike) -> np.ndarray:
    """X as an array; a column of text (a DataFrame's category or string column) is refused with its
    name or index and the first value that is not a number."""
    arr = np.asarray(X)
    if arr.dtype.kind not in "OUS" or arr.ndim != 2:
        return arr
    try:
        return arr.astype(np.float64)
    except (TypeError, ValueError):
        pass
    j, value = next((j, v) for j in range(arr.shape[1]) for v in arr[:, j] if not _is_number(v))
    columns = getattr(X, "columns", None)
    name = repr(columns[j]) if columns is not None else str(j)
    raise ValueError(f"X column {name} is not numeric (value {value!r}): rffkern.fit takes numbers; encode "
                     "text and categories first (e.g. sklearn.preprocessing.OneHotEncoder)")


def _is_number(value: Any) -> bool:
    try:
        float(value)
    except (TypeError, ValueError):
        return False
    return True


def _rows_to_add(X: np.ndarray, y: np.ndarray, w: np.ndarray | None, idx_tr: np.ndarray, idx_net: np.ndarray,
                 idx_val: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """The rows that join the returned RFFNet's closing fit: the held-out rows and the training rows
    it did not train on (a class-stratified random subset of those when the closing fit would
    exceed ``rffnet.CLOSING_MAX_ROWS`` rows), with their weights (None without), in the units of the
    weights RFFNet's fit was given (it divides both by the same unit)."""
    rest = np.setdiff1d(idx_tr, idx_net, assume_unique=True)
    if rest.size:
        room = CLOSING_MAX_ROWS - idx_net.size - idx_val.size
        if rest.size > room:
            rest = rest[stratified_subset(y[rest], max(room, 0), rng)]
    rows = np.concatenate([rest, idx_val])
    return X[rows], y[rows], None if w is None else w[rows]


@single_threaded_blas
def fit(X: ArrayLike, y: ArrayLike, *, sample_weight: ArrayLike | None = None, task: str | None = None,
        random_state: RandomStateLike = None, n_jobs: int | None = None, verbose: int = 0,
        validation_fraction: float = 0.2, kernel: str = "auto", nu: float = DEFAULT_NU,
        **params: Any) -> RFFRidge | RFFRidgeClassifier | RFFNetRegressor | RFFNetClassifier:
    """Fit the model a careful practitioner would end with, from raw X and y, in one call.

    1. The task comes from ``y`` (:func:`explain_task`) unless ``task`` is given. A random
       ``validation_fraction`` of the rows (stratified for classes) is held out to compare models.
    2. Kernel width: :class:`~rffkern.RFFRidge` (or :class:`~rffkern.RFFRidgeClassifier`) with
       ``SEARCH_COMPONENTS`` (500) features (at most twice the rows) on at most ``SEARCH_ROWS``
       (3000) random training rows compares 0.5, 1 and 2 times the median pairwise distance (each
       input standardized, y scaled) by exact leave-one-out error, each with its best penalty among
       23 values, and keeps the median itself unless another width's error is lower by more than
       one standard error (of the per-row differences); the inputs scaled by one pooled deviation
       instead (``standardize="global"``, pixels) are compared too, and kept where better by more
       than one standard error; with ``kernel="auto"`` the Matérn kernels of nu 0.5, 1.5 and 2.5
       are compared with the Gaussian at the kept standardization's widths, and one is kept where
       better by more than one standard error (:class:`~rffkern.RFFRidge`'s ``kernel="auto"``);
       the kernel kept is every later stage's. This ridge is scored on the held-out rows too.
    3. RFFNet (ARD relevances per feature) started from that kernel: its relevances start at
       ``1 / length_scale``, the searched width of least leave-one-out error with each input
       standardized (RFFNet's own standardization; the ridge itself keeps the median unless
       another width is better by more than one standard error), so a high-dimensional input does
       not start from a flat kernel (where the search kept one pooled deviation for every input,
       the dense variant below starts from that kernel instead: relevance ``sd_j / (c w)`` for
       input j of deviation ``sd_j``, ``c`` the pooled deviation, ``w`` that search's least-error
       width), and learn a length scale per input (its "adaptive" schedule lowers the step size
       once, ``FIT_LR_DECAYS``: training stops at the second plateau); its closing fit
       (``refit_coef``) refits the output layer on 1000 features of the learned kernel
       (``refit_components``; the regressor's after checking the learned kernel's overall width,
       ``closing_width_factor_``). Variants
       (``RFFNET_VARIANTS``): the paper's Adam without penalty (every input may matter) and, with
       at least ``SPARSE_MIN_FEATURES`` (50) inputs, also RFFNet's defaults (Adam with one second
       moment for the relevances and an L1 penalty on them: sparse relevances, for a few
       relevant inputs among many; from 100 inputs, five starts, ``n_init="auto"``); the better
       on the held-out rows goes on. For classes,
       RFFNet trains on at most ``NET_MAX_ROWS_CLASSIFICATION`` (10,000) of the training rows
       (stratified); the others join the returned model's closing fit in step 5.
    4. A tuned kernel ridge machine, when RFFNet does not beat the width search's ridge on the
       held-out rows by more than one standard error of the per-row loss differences
       (``LEAD_STANDARD_ERRORS``; else it could not win, and is skipped, unless the search saw a
       subset of the rows of a regression target whose largest 0.1% of values carry over 10% of
       its variance, values that a subset may miss): 1000 features (at most twice the
       training rows) at that width and standardization on every training row, the penalty among
       the 23 values by exact leave-one-out error (one Gram pass, one eigendecomposition, one
       leave-one-out pass).
    5. The ridge and RFFNet are compared on the held-out rows (squared errors over the variance
       of y, or wrong classes; for regression without the one row where they differ most, so
       that one outlying row does not decide): RFFNet wins only where its mean loss is lower by
       more than one standard error of the per-row differences (the ridge, one kernel fitted in closed form,
       is the simpler model); the winner is returned with the held-out rows added: the ridge's Gram matrix takes them
       (:meth:`~rffkern.RFFRidge.partial_fit`: same width, standardization and penalty, one pass
       over the held-out rows only), and so does RFFNet's closing fit (same relevances, map and
       penalty: the regressor's ridge takes one Gram pass over them and one solve, the
       classifier's logistic / softmax fit runs again on all rows, with the training rows RFFNet
       did not train on, up to ``rffkern.rffnet.CLOSING_MAX_ROWS`` rows in all).
       ``model.selection_report_`` records the searched ``standardize``, ``width``, ``kernel``
       (with ``nu`` and, for "auto", each kernel's least leave-one-out error in ``kernel_errors``),
       ``rffnet_init_width`` and ``rffnet_dense_start`` ("per-input" or "pooled"),
       the rows RFFNet trained on (``rffnet_rows``), the scores (``width_search``
       and ``ridge`` where fitted, ``rffnet``;
       ``rffnet_variant_scores`` for the RFFNet runs), RFFNet's lead in held-out loss over the
       ridge it was compared with (``rffnet_lead``: ``over``, ``mean``, ``standard_error``), the
       times and the choice.

    Every returned model has ``feature_importances_``, RFFNet or ridge alike: the root mean square
    of the partial derivatives of the fitted function over the rows (at most 2000 drawn), per unit
    of each input's own deviation, scaled to [0, 1] (RFFNet's paper relevances stay in
    ``relevances_``). Every returned classifier has ``predict_proba``: RFFNet's softmax, or the
    ridge's decision values tempered by leave-one-out log-loss (``temperature_``).

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
        Raw, unscaled features: numbers (a column of text, such as a DataFrame's category column,
        is refused with its name; encode it first; a DataFrame's string column names become the
        model's ``feature_names_in_``, checked by ``predict`` as scikit-learn does), in memory (a Dask array is refused with a
        ``TypeError``: fit one of the estimators on it, whose fit runs on the chunks).
    y : array-like of shape (n_samples,) or (n_samples, n_outputs)
        Targets: class labels or real values (see ``task``).
    sample_weight : array-like of shape (n_samples,) or float, default=None
        Non-negative weights, for every stage: the width search, RFFNet's training (rows drawn in
        proportion to them), the ridge, the closing fits, and the comparisons on the held-out rows
        (weighted mean losses and scores; the standard error of a weighted mean, unchanged when
        every weight is multiplied by one constant). Rows of weight 0 are left out before the split
        (they take no part in any stage, and a class only they hold is not among ``classes_``); X
        and y must still be valid on them. The others are divided by their mean, so that
        multiplying every weight by one constant changes nothing, and equal weights fit the model
        of no weights. None: every row weighs 1.
    task : {"regression", "classification"} or None, default=None
        Force the task; None decides with :func:`task_of_target`: text, booleans and two integer
        values are class labels, integer codes 0..k-1 or 1..k (k <= 20) too unless their
        frequencies fall away from one peak as counts do; other integers and real values are
        regressed, with a ``TaskWarning`` naming ``task=`` where the rule guessed.
    random_state : int, Generator, RandomState or None, default=None
        Seed or generator of the split and of both models' draws.
    n_jobs : int or None, default=None
        Threads of the compiled kernels (the result does not depend on it). With two RFFNet
        variants and at least two threads, the variants train side by side, each on half of them.
    verbose : int, default=0
        1: one line per stage (``[rffkern.fit] stage i/5: ... (elapsed s)``); 2: also the width
        search lines of the ridge estimators.
    validation_fraction : float, default=0.2
        Rows held out to choose between the two models.
    kernel : {"auto", "gaussian", "laplace", "cauchy", "matern"}, default="auto"
        The kernel of every stage; "auto" chooses between the Gaussian and the Matérn kernels in
        the width search (step 2).
    nu : float, default=1.5
        The Matérn smoothness with ``kernel="matern"``.
    **params
        Parameters for RFFNet (:class:`~rffkern.RFFNetRegressor` /
        :class:`~rffkern.RFFNetClassifier`) in stage 4, for each of its runs (one run when they
        fix what tells the two apart).

    Returns
    -------
    RFFRidge, RFFRidgeClassifier, RFFNetRegressor or RFFNetClassifier
        The fitted model, with ``selection_report_``.

    Examples
    --------
    >>> import rffkern
    >>> from rffkern.datasets import make_jse3
    >>> X, y, support = make_jse3(300, random_state=0)
    >>> model = rffkern.fit(X, y, random_state=0, max_iter=20)
    >>> sorted(model.feature_importances_.argsort()[::-1][:2].tolist())
    [0, 1]
    >>> model.selection_report_["task"]
    'regression'
    """

    refuse_sparse(X, "X")  # before np.asarray, which would make a 0-d object array of it
    refuse_sparse(y, "y")
    for name, arr in (("X", X), ("y", y)):
        if is_dask_array(arr):  # np.asarray would gather all of it on this machine, unasked
            raise TypeError(
                f"rffkern.fit takes in-memory arrays, got a Dask array as {name}: it holds rows out and "
                "compares models on one machine. Fit an estimator on the Dask arrays instead (RFFRidge, "
                "RFFRidgeClassifier, RFFNetRegressor, RFFNetClassifier, EERF, SRFF and adaptive RFF fit on "
                "their chunks), or pass X.compute() and y.compute() if they fit in memory")
    from sklearn.utils._param_validation import validate_parameter_constraints


    if task is None:
        task, reason, guessed = task_rule(y)
        if guessed:
            warnings.warn(task_guess_message(task, reason, "task='{}'"), TaskWarning, stacklevel=3)
    elif task in ("regression", "classification"):
        reason = "task="
    else:
        raise ValueError(f"task must be 'regression', 'classification' or None, got {task!r}")
    if not 0 < validation_fraction < 1:
        raise ValueError(f"validation_fraction must be in (0, 1), got {validation_fraction!r}")
    # (the estimators' own rule and message: an int >= 0 or a bool)
    validate_parameter_constraints({"verbose": ["verbose"]}, {"verbose": verbose}, caller_name="rffkern.fit")
    classify = task == "classification"
    net_cls = RFFNetClassifier if classify else RFFNetRegressor
    if kernel not in KERNELS + ("auto",):
        raise ValueError(f"kernel must be 'auto' or one of {KERNELS}, got {kernel!r}")
    net_cls(**params)._validate_params()  # a misspelt or invalid RFFNet parameter fails now, not after the search
    check_nu(nu)  # (used by "matern", and by "auto" where it keeps a Matérn kernel)
    rng = as_generator(random_state)
    seeds = [int(v) for v in rng.integers(2**31 - 1, size=5)]  # (the first four as drawn before the fifth)
    columns = getattr(X, "columns", None)  # a DataFrame's column names: the model's feature_names_in_
    X = _numeric_inputs(X)
    y = np.asarray(y)
    X, y, w, n_dropped = _validated_rows(X, y, sample_weight, classify, validation_fraction)
    run = _FitRun(X, y, w, classify, seeds, n_jobs, ProgressLog("rffkern.fit", verbose),
                  max(int(verbose or 0) - 1, 0), *_split(X, y, classify, reason, n_dropped, validation_fraction,
                                                         seeds[0]))
    run.kernel, run.nu = kernel, nu
    weighted = (f", {n_dropped} rows of weight 0 left out" if n_dropped else "") + (", weighted" * (w is not None))
    run.log.step("stage", 1, 5, f"task {task} ({reason}); {len(run.idx_tr)} rows to fit, {len(run.idx_val)} to "
                 f"compare{weighted}")
    probe, ridge, width, geometry, net_width = _search_width(run)
    dense_init = _pooled_start(probe if probe is not None else ridge)
    rows_rng = np.random.default_rng(seeds[4])  # draws RFFNet's subset of rows, then any subset of the others
    nets, idx_net = _train_rffnet(run, net_cls, params, geometry, net_width, dense_init, rows_rng)
    net_name = max(nets, key=lambda k: nets[k][0])
    net = nets[net_name][1]
    ridge, lead = _compare_with_ridge(run, net, probe, ridge, width)
    report = dict(task=task, reason=reason, weighted=w is not None, zero_weight_rows=n_dropped,
                  standardize=geometry, width=width, kernel=run.kernel, nu=run.net_nu(),
                  kernel_errors=_kernel_errors(probe if probe is not None else ridge), rffnet_init_width=net_width,
                  rffnet_dense_start="per-input" if dense_init is None else "pooled", rffnet_rows=len(idx_net),
                  validation_scores=run.scores,
                  rffnet_variant=net_name, rffnet_variant_scores={k: v[0] for k, v in nets.items()},
                  rffnet_lead={"over": "width_search" if ridge is None else "ridge", "mean": lead[0],
                               "standard_error": lead[1]},
                  fit_times=run.times)
    # the closing fits' statistics (a Gram matrix, or the features of every row) are dropped,
    # but the winner's until the held-out rows have joined it
    closing_stats = net.__dict__.pop("_closing_stats", None)
    for _, other in nets.values():
        other.__dict__.pop("_closing_stats", None)
    if ridge is None or lead[0] > LEAD_STANDARD_ERRORS * lead[1]:  # (no ridge: RFFNet's lead was clear)
        model, report["chosen"] = _close_rffnet(run, net, closing_stats, idx_net, rows_rng), "rffnet"
    else:
        model, report["chosen"] = _close_ridge(run, ridge), "ridge"
    over = "the width search's ridge" if ridge is None else "the ridge"
    run.log.step("stage", 5, 5, f"chose {report['chosen']} (RFFNet's lead in held-out loss over {over}: "
                 f"{lead[0]:+.4f} +- {lead[1]:.4f}; it needs more than {LEAD_STANDARD_ERRORS:g} standard error)")
    model.selection_report_ = report
    if columns is not None and all(isinstance(c, str) for c in columns):
        # as a scikit-learn estimator fitted on the frame: predict checks a frame's columns against
        # them (and does not warn that the model was "fitted without feature names")
        model.feature_names_in_ = np.asarray(list(columns), dtype=object)
    return model


def _validated_rows(X: np.ndarray, y: np.ndarray, sample_weight: ArrayLike | None, classify: bool,
                    validation_fraction: float) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, int]:
    """``(X, y, w, n_dropped)``: the checked rows of positive weight, their weights relative to
    their mean (None for equal ones) and the count of rows of weight 0 left out."""
    from sklearn.utils import assert_all_finite, check_X_y


    if X.ndim != 2:
        raise ValueError(f"X must be 2-D (n_samples, n_features), got shape {X.shape}")
    if X.dtype.kind == "f":  # (named as rffkern.fit's, not as the first estimator's that reads X)
        assert_all_finite(X, input_name="X", estimator_name="rffkern.fit")
    if y.shape[0] != X.shape[0]:
        raise ValueError(f"X has {X.shape[0]} samples but y has {y.shape[0]}")
    if classify:
        y = _label_vector(y)
    w = relative_sample_weight(sample_weight, X.shape[0])[0]
    n_dropped = 0 if w is None else int(np.count_nonzero(w == 0))
    if n_dropped:
        # rows of weight 0 take no part: they are validated as the others (finite numbers), then dropped
        check_X_y(X, y, dtype="numeric", ensure_all_finite=True, multi_output=True,
                  y_numeric=not classify)
        X, y, w = X[w > 0], y[w > 0], w[w > 0]
        if np.all(w == 1.0):  # (in units of their mean: equal positive weights are none)
            w = None
    n_fit = X.shape[0] - int(np.ceil(validation_fraction * X.shape[0]))
    if n_fit < 3:
        raise ValueError(f"X is too small for rffkern.fit: {X.shape[0]} samples leave {n_fit} to fit after "
                         f"holding out validation_fraction={validation_fraction}; at least 3 are needed")
    return X, y, w, n_dropped


def _split(X: np.ndarray, y: np.ndarray, classify: bool, reason: str, n_dropped: int, validation_fraction: float,
           seed: int) -> tuple[np.ndarray, np.ndarray]:
    """``(idx_tr, idx_val)``: the rows to fit and the held-out rows that compare the models
    (stratified by class where every class can be split)."""
    from sklearn.model_selection import train_test_split

    stratify = None
    if classify:
        labels, counts = np.unique(y, return_counts=True)
        if labels.size < 2:
            # (numeric labels: the task rule read a constant target as one class)
            hint = "; pass task='regression' to fit a constant" if y.dtype.kind in "fiu" else ""
            where = " on its rows of positive weight" if n_dropped else ""
            raise ValueError(f"y has a single value ({labels[0].item()!r}){where}: as a class label ({reason}) "
                             f"that is one class, and a classifier needs at least 2{hint}")
        n_val = int(np.ceil(validation_fraction * len(y)))
        if counts.min() >= 2 and min(n_val, len(y) - n_val) >= counts.size:
            stratify = y
    return train_test_split(np.arange(X.shape[0]), test_size=validation_fraction, random_state=seed,
                            stratify=stratify)


@dataclass
class _FitRun:
    """One ``rffkern.fit`` call: its rows, the training and held-out split, and what each stage
    records (held-out scores, times)."""

    X: np.ndarray
    y: np.ndarray
    w: np.ndarray | None
    classify: bool
    seeds: list[int]
    n_jobs: int | None
    log: Any
    inner_verbose: int
    idx_tr: np.ndarray
    idx_val: np.ndarray
    times: dict[str, float] = field(default_factory=lambda: {"width_search": 0.0, "ridge": 0.0, "rffnet": 0.0})
    scores: dict[str, float] = field(default_factory=dict)
    search_rows: int = 0  # the width search's rows
    kernel: str = "auto"  # the kernel asked for, then the one the width search kept
    nu: float = DEFAULT_NU

    def kernel_params(self) -> dict[str, Any]:
        return {"kernel": self.kernel, "nu": self.nu}

    def net_nu(self) -> float | None:
        return self.nu if self.kernel == "matern" else None

    def keep_kernel(self, ridge: Any) -> None:
        """The kernel the width search's ridge used (the one it chose with "auto")."""
        self.kernel = ridge.kernel_
        if ridge.nu_ is not None:
            self.nu = ridge.nu_

    @property
    def ridge_cls(self) -> Any:
        return RFFRidgeClassifier if self.classify else RFFRidge

    @property
    def n_full(self) -> int:
        # more features than twice the rows buy little (the Gram's rank is at most the row count) and
        # cost O(s^3) per eigendecomposition
        return min(N_COMPONENTS, COMPONENTS_PER_ROW * len(self.idx_tr))

    def weights(self, idx: np.ndarray) -> np.ndarray | None:
        return None if self.w is None else self.w[idx]

    def held_out_score(self, model: Any) -> float:
        return _held_out_score(model, self.X[self.idx_val], self.y[self.idx_val], self.weights(self.idx_val))

    def held_out_losses(self, model: Any) -> np.ndarray:
        return _validation_losses(model, self.X[self.idx_val], self.y[self.idx_val], self.classify,
                                  self.weights(self.idx_val))

    def fit_ridge(self, width: float | str, geometry: bool | str) -> Any:
        """The ridge of ``n_full`` features on every training row, scored on the held-out rows."""
        tic = time.perf_counter()
        model = self.ridge_cls(self.n_full, length_scale=width, standardize=geometry, random_state=self.seeds[1],
                               n_jobs=self.n_jobs, verbose=self.inner_verbose, **self.kernel_params())
        with fit_options(model, summaries=False):  # computed at the close if the ridge is returned
            model.fit(self.X[self.idx_tr], self.y[self.idx_tr], sample_weight=self.weights(self.idx_tr))
        self.times["ridge"] = time.perf_counter() - tic
        self.scores["ridge"] = self.held_out_score(model)
        return model


def _kernel_errors(ridge: Any) -> dict[str, float] | None:
    """The width search's least error per kernel compared (``kernel="auto"``), by readable name."""
    errors = getattr(ridge, "kernel_errors_", None)
    if errors is None:
        return None
    return {kernel if nu is None else f"{kernel}(nu={nu:g})": float(e) for (kernel, nu), e in errors.items()}


def _search_width(run: _FitRun) -> tuple[Any, Any, float, bool | str, float]:
    """Stage 2, ``(probe, ridge, width, standardize, RFFNet's start width)``: the width search's
    ridge (``SEARCH_COMPONENTS`` features on at most ``SEARCH_ROWS`` training rows); where it
    cannot fit (a class absent from its rows) the full ridge searches instead (``probe`` None)."""
    tic = time.perf_counter()
    search_idx = run.idx_tr
    if len(run.idx_tr) > SEARCH_ROWS:
        search_idx = np.sort(np.random.default_rng(run.seeds[3]).choice(run.idx_tr, SEARCH_ROWS, replace=False))
    n_probe = min(SEARCH_COMPONENTS, run.n_full)
    probe: Any = run.ridge_cls(n_probe, random_state=run.seeds[1], n_jobs=run.n_jobs, verbose=run.inner_verbose,
                               **run.kernel_params())
    try:
        with fit_options(probe, summaries=False):  # (their derivative norms cost ~1 s each on mnist)
            probe.fit(run.X[search_idx], run.y[search_idx], sample_weight=run.weights(search_idx))
        run.scores["width_search"] = run.held_out_score(probe)
    except ValueError:  # e.g. a class absent from the subset: search on every training row
        probe = None
    run.times["width_search"] = time.perf_counter() - tic
    if probe is None:  # a failed search: the full ridge compares the widths itself
        ridge = run.fit_ridge("auto", "auto")
        run.keep_kernel(ridge)
        run.log.step("stage", 2, 5, f"width search on every training row, {run.n_full} features: ridge "
                     f"standardize {ridge.standardize_!r}, length_scale {ridge.length_scale_:.4g}, alpha "
                     f"{ridge.alpha_:.3g}, validation score {run.scores['ridge']:.4f} ({run.times['ridge']:.2f} s)")
        return None, ridge, ridge.length_scale_, ridge.standardize_, _least_error_width(ridge)
    run.log.step("stage", 2, 5, f"width search on {len(search_idx)} rows, {n_probe} features: {probe._kernel_name()}standardize "
                 f"{probe.standardize_!r}, length_scale {probe.length_scale_:.4g}, validation score "
                 f"{run.scores['width_search']:.4f} ({run.times['width_search']:.2f} s)")
    run.search_rows = len(search_idx)
    run.keep_kernel(probe)
    return probe, None, probe.length_scale_, probe.standardize_, _least_error_width(probe)


def _train_rffnet(run: _FitRun, net_cls: Any, params: dict, geometry: bool | str, net_width: float,
                  dense_init: np.ndarray | None, rows_rng: np.random.Generator) -> tuple[dict, np.ndarray]:
    """Stage 3, ``({variant: (held-out score, model)}, RFFNet's rows)``: each of
    ``RFFNET_VARIANTS`` that the caller's parameters leave distinct, trained on the training rows
    (for classes at most ``NET_MAX_ROWS_CLASSIFICATION`` of them, stratified)."""
    from threadpoolctl import threadpool_limits


    X, y, idx_tr = run.X, run.y, run.idx_tr
    idx_net = idx_tr  # the rows RFFNet trains on; the others join its closing fit if it wins
    if run.classify and len(idx_tr) > NET_MAX_ROWS_CLASSIFICATION:
        idx_net = idx_tr[stratified_subset(y[idx_tr], NET_MAX_ROWS_CLASSIFICATION, rows_rng)]
    tic = time.perf_counter()
    runs: dict[str, Any] = {}
    tried: list[str] = []
    for name, variant in RFFNET_VARIANTS.items():
        if name == "sparse" and X.shape[1] < SPARSE_MIN_FEATURES:
            continue
        init = np.full(X.shape[1], 1.0 / net_width)
        if name == "dense" and dense_init is not None:
            init = dense_init
        standardize = "quantile" if geometry == "quantile" else True  # (heavy-tailed inputs as normal scores)
        net_params = dict(init=init, standardize=standardize, random_state=run.seeds[2], n_jobs=run.n_jobs,
                          **run.kernel_params(), **variant)
        net_params.update(params)  # the caller's parameters apply to both
        key = repr(sorted((k, v) for k, v in net_params.items() if k != "init"))  # init: the same array
        if key in tried:  # the caller fixed what tells the two apart
            continue
        tried.append(key)
        runs[name] = net_cls(**net_params)

    def train(net: Any) -> tuple[float, Any]:
        # the closing statistics for the held-out rows (stage 5); the importances computed at the
        # close for the model returned, on every row
        with fit_options(net, summaries=False, keep_closing_stats=True, max_lr_decays=FIT_LR_DECAYS):
            net.fit(X[idx_net], y[idx_net], sample_weight=run.weights(idx_net))
        return run.held_out_score(net), net

    threads = resolve_n_threads(run.n_jobs)
    if len(runs) > 1 and threads >= len(runs):
        # the variants side by side, the threads shared out: the compiled kernels release the GIL,
        # and one fit's Python and L-BFGS steps fill the other's gaps: faster than one after the
        # other on every thread, the same models (docs/design_notes.rst)
        for net in runs.values():
            net.set_params(n_jobs=threads // len(runs))
        with threadpool_limits(limits=1, user_api="blas"), ThreadPoolExecutor(len(runs)) as pool:
            nets = dict(zip(runs, pool.map(train, runs.values())))
        for _, net in nets.values():  # the models do not depend on it: the caller's n_jobs
            net.set_params(n_jobs=run.n_jobs)
    else:
        nets = {name: train(net) for name, net in runs.items()}
    run.times["rffnet"] = time.perf_counter() - tic
    best = max(nets, key=lambda k: nets[k][0])
    run.scores["rffnet"] = nets[best][0]
    shown = ", ".join(f"{k} {v[1].n_iter_} epochs {v[0]:.4f}" for k, v in nets.items())
    subset = f" on {len(idx_net)} of the {len(idx_tr)} rows" if len(idx_net) < len(idx_tr) else ""
    run.log.step("stage", 3, 5, f"RFFNet{subset} ({shown}): validation score {nets[best][0]:.4f} "
                 f"({run.times['rffnet']:.2f} s)")
    return nets, idx_net


def _compare_with_ridge(run: _FitRun, net: Any, probe: Any, ridge: Any, width: float) -> tuple[Any, tuple]:
    """Stage 4, ``(ridge or None, RFFNet's lead)``: the full ridge where RFFNet does not beat the
    width search's ridge by more than ``LEAD_STANDARD_ERRORS`` standard errors of the per-row
    differences on the held-out rows, or where the search's ridge cannot stand in for it."""
    net_losses = run.held_out_losses(net)
    if ridge is not None:
        run.log.step("stage", 4, 5, f"ridge: fitted in stage 2, validation score {run.scores['ridge']:.4f}")
        return ridge, _lead(net_losses, run.held_out_losses(ridge), run.weights(run.idx_val))
    lead = _lead(net_losses, run.held_out_losses(probe), run.weights(run.idx_val))
    # the search's ridge stands in for the full one where it saw every training row, or where
    # its subset is representative; a regression target whose few largest values carry much
    # of its variance (a count of people) needs every row: countymurders, the search's ridge
    # on 3000 of 12,800 rows scored held-out R^2 0.48, the full one 0.97
    stands_in = (run.classify or run.search_rows == len(run.idx_tr)
                 or not few_rows_carry(run.y[run.idx_tr]))
    if stands_in and lead[0] > LEAD_STANDARD_ERRORS * lead[1]:
        run.log.step("stage", 4, 5, f"ridge on every training row: not needed, RFFNet beat the width search's "
                     f"ridge by more than one standard error ({run.scores['rffnet']:.4f} against "
                     f"{run.scores['width_search']:.4f})")
        return None, lead
    ridge = run.fit_ridge(width, probe.standardize_)
    run.log.step("stage", 4, 5, f"ridge on every training row, {run.n_full} features: length_scale "
                 f"{ridge.length_scale_:.4g}, alpha {ridge.alpha_:.3g}, validation score "
                 f"{run.scores['ridge']:.4f} ({run.times['ridge']:.2f} s)")
    return ridge, _lead(net_losses, run.held_out_losses(ridge), run.weights(run.idx_val))


def _close_rffnet(run: _FitRun, net: Any, closing_stats: Any, idx_net: np.ndarray,
                  rows_rng: np.random.Generator) -> Any:
    """Stage 5 for RFFNet: the held-out rows, and the training rows RFFNet did not train on, join
    its closing fit (same relevances, map and penalty); the importances over every row."""
    X, y, w = run.X, run.y, run.w
    if closing_stats is not None and (not run.classify or np.isin(y[run.idx_val], net.classes_).all()):
        tic = time.perf_counter()
        net._closing_stats = closing_stats
        net._closing_fit_add_rows(*_rows_to_add(X, y, w, run.idx_tr, idx_net, run.idx_val, rows_rng))
        run.times["rffnet_refit"] = time.perf_counter() - tic
    net._store_derivative_norms(net._standardized(X), w)  # over every row (at most 2000 drawn)
    return net


def _close_ridge(run: _FitRun, ridge: Any) -> Any:
    """Stage 5 for the ridge: the held-out rows join its Gram (the model of every row at the
    chosen width and penalty); the importances and the calibration over every row."""
    X, y, w = run.X, run.y, run.w
    tic = time.perf_counter()
    model = ridge
    if run.classify and not np.isin(y[run.idx_val], ridge.classes_).all():
        # a class seen only in the held-out rows: refit on every row
        model = run.ridge_cls(run.n_full, length_scale=ridge.length_scale_, alpha=ridge.alpha_,
                              standardize=ridge.standardize_, random_state=run.seeds[1],
                              n_jobs=run.n_jobs).fit(X, y, sample_weight=w)
    else:
        model.set_params(alpha=ridge.alpha_, length_scale=ridge.length_scale_, verbose=0)
        with fit_options(model, summaries=False):
            model.partial_fit(X[run.idx_val], y[run.idx_val], sample_weight=run.weights(run.idx_val))
        # the importances over every row (at most 2000 drawn), not the held-out ones alone
        Xs_all = model._standardized(np.asarray(X, dtype=model.coef_.dtype))
        model._store_derivative_norms(Xs_all, w)
        # predict_proba's temperature, or predict_interval's scores: from every row's leave-one-out outputs
        model._store_calibration(Xs_all, model._targets(y) if run.classify else y.reshape(y.shape[0], -1), w)
    run.times["ridge_refit"] = time.perf_counter() - tic
    return model
