"""``rffkern.fit``: one call that picks the right RFFNet estimator for the target."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike

from rffkern._typing import RandomStateLike
from rffkern.rffnet import RFFNetClassifier, RFFNetRegressor

if TYPE_CHECKING:  # for the annotations only; fit imports them when it runs
    from rffkern.ridge import RFFRidge, RFFRidgeClassifier

__all__ = ["fit", "task_of_target", "explain_task"]

#: Integer targets with at most this many distinct values are class labels; more are counts or
#: measurements (abalone's 28 ring counts, diabetes' 214 progression scores) and are regressed.
MAX_INTEGER_CLASSES = 20


def task_of_target(y: ArrayLike) -> str:
    """Tell "classification" or "regression": what a user most likely means by ``y``.

    - strings, booleans and other non-numeric labels: classification;
    - floats with a fractional part anywhere, or several output columns: regression;
    - integer values (of an integer or a float dtype): classification when there are at most
      ``MAX_INTEGER_CLASSES`` (20) distinct values, regression otherwise.

    Pass ``task=`` to :func:`fit` to override the rule.

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
    """Return ``(task, reason)``: :func:`task_of_target`'s decision and the rule that made it.

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
    ('classification', 'integer values, 3 distinct (<= 20)')
    """
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
        return "regression", f"{arr.shape[1]} numeric output columns"
    arr = arr.reshape(-1)
    if arr.dtype.kind == "O":
        values = arr.tolist()
        if all(isinstance(v, (int, float, np.number)) and not isinstance(v, (bool, np.bool_))
               for v in values):
            return explain_task(np.asarray(values, dtype=np.float64))
        return "classification", "non-numeric labels"
    if arr.dtype.kind in "USb":
        return "classification", "boolean labels" if arr.dtype.kind == "b" else "text labels"
    if arr.dtype.kind not in "fiu":
        raise ValueError(f"rffkern.fit cannot learn a target of dtype {arr.dtype}")
    if arr.dtype.kind == "f":
        if not np.isfinite(arr).all():
            raise ValueError("y contains NaN or infinity")
        if np.any(arr != np.round(arr)):
            return "regression", "real values"
    n_values = np.unique(arr).size
    if n_values <= MAX_INTEGER_CLASSES:
        return "classification", f"integer values, {n_values} distinct (<= {MAX_INTEGER_CLASSES})"
    return "regression", f"integer values, {n_values} distinct (> {MAX_INTEGER_CLASSES})"


def fit(X: ArrayLike, y: ArrayLike, *, task: str | None = None, random_state: RandomStateLike = None,
        n_jobs: int | None = None, verbose: int = 0, validation_fraction: float = 0.2,
        **params: Any) -> RFFRidge | RFFRidgeClassifier | RFFNetRegressor | RFFNetClassifier:
    """Fit the model a careful practitioner would end with, from raw X and y, in one call.

    1. The task comes from ``y`` (:func:`explain_task`) unless ``task`` is given.
    2. A tuned kernel ridge machine: :class:`~rffkern.RFFRidge` (or
       :class:`~rffkern.RFFRidgeClassifier`) at its defaults -- X standardized, y scaled, the
       kernel width among 0.5/1/2 x the median distance and the penalty among 23 values, both by
       exact leave-one-out -- fitted on all but a held-out ``validation_fraction`` of the rows.
    3. RFFNet (ARD relevances per feature) started from that kernel: its relevances start at
       ``1 / length_scale_`` of the tuned ridge, so a high-dimensional input does not start from a
       flat kernel, and are trained by its default early-stopped Adam + prox schedule on the same
       rows.
    4. The two are compared on the held-out rows (R^2, or accuracy for classes); the winner is
       returned -- the ridge refitted on all rows with its chosen width and penalty, or RFFNet as
       trained. ``model.selection_report_`` records the scores, times and the choice.

    Every returned model has ``feature_importances_``: RFFNet's ``|relevances|``, or for the ridge
    the root mean square of the partial derivatives of f (both scaled to [0, 1]).

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
        Raw, unscaled features.
    y : array-like of shape (n_samples,) or (n_samples, n_outputs)
        Targets: class labels or real values (see ``task``).
    task : {"regression", "classification"} or None, default=None
        Force the task; None decides with :func:`task_of_target`: text, booleans and integers
        with at most 20 distinct values are class labels, every other numeric target is regressed.
    random_state : int, Generator, RandomState or None, default=None
        Seed or generator of the split and of both models' draws.
    n_jobs : int or None, default=None
        Threads of the compiled kernels (the result does not depend on it).
    verbose : int, default=0
        Print one line per stage.
    validation_fraction : float, default=0.2
        Rows held out to choose between the two models.
    **params
        Parameters for RFFNet (:class:`~rffkern.RFFNetRegressor` /
        :class:`~rffkern.RFFNetClassifier`) in stage 3.

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
    from rffkern._validation import refuse_sparse

    refuse_sparse(X, "X")  # before np.asarray, which would make a 0-d object array of it
    refuse_sparse(y, "y")
    import time

    from sklearn.model_selection import train_test_split

    from rffkern._validation import as_generator
    from rffkern.ridge import RFFRidge, RFFRidgeClassifier

    if task is None:
        task, reason = explain_task(y)
    elif task in ("regression", "classification"):
        reason = "task="
    else:
        raise ValueError(f"task must be 'regression', 'classification' or None, got {task!r}")
    if not 0 < validation_fraction < 1:
        raise ValueError(f"validation_fraction must be in (0, 1), got {validation_fraction!r}")
    rng = as_generator(random_state)
    seeds = [int(v) for v in rng.integers(2**31 - 1, size=3)]
    X = np.asarray(X)
    y = np.asarray(y)
    if X.ndim != 2:
        raise ValueError(f"X must be 2-D (n_samples, n_features), got shape {X.shape}")
    if y.shape[0] != X.shape[0]:
        raise ValueError(f"X has {X.shape[0]} samples but y has {y.shape[0]}")
    classify = task == "classification"
    stratify = None
    if classify:
        _, counts = np.unique(y, return_counts=True)
        n_val = int(np.ceil(validation_fraction * len(y)))
        if counts.min() >= 2 and min(n_val, len(y) - n_val) >= counts.size:
            stratify = y
    idx_tr, idx_val = train_test_split(np.arange(X.shape[0]), test_size=validation_fraction,
                                       random_state=seeds[0], stratify=stratify)
    log = (lambda msg: print(f"[rffkern.fit] {msg}", flush=True)) if verbose else (lambda msg: None)
    log(f"task {task} ({reason}); {len(idx_tr)} rows to fit, {len(idx_val)} to compare")

    ridge_cls = RFFRidgeClassifier if classify else RFFRidge
    tic = time.perf_counter()
    ridge = ridge_cls(random_state=seeds[1], n_jobs=n_jobs).fit(X[idx_tr], y[idx_tr])
    t_ridge = time.perf_counter() - tic
    s_ridge = float(ridge.score(X[idx_val], y[idx_val]))
    log(f"ridge: width {ridge.length_scale_:.3g}, alpha {ridge.alpha_:.3g}, validation score "
        f"{s_ridge:.4f} ({t_ridge:.2f} s)")

    net_cls = RFFNetClassifier if classify else RFFNetRegressor
    net_params = dict(init=np.full(X.shape[1], 1.0 / ridge.length_scale_), random_state=seeds[2],
                      n_jobs=n_jobs)
    net_params.update(params)
    tic = time.perf_counter()
    net = net_cls(**net_params).fit(X[idx_tr], y[idx_tr])  # type: ignore[arg-type]  # validated by the estimator
    t_net = time.perf_counter() - tic
    s_net = float(net.score(X[idx_val], y[idx_val]))
    log(f"RFFNet: {net.n_iter_} epochs, validation score {s_net:.4f} ({t_net:.2f} s)")

    report = dict(task=task, reason=reason, validation_scores={"ridge": s_ridge, "rffnet": s_net},
                  fit_times={"ridge": t_ridge, "rffnet": t_net})
    if s_net > s_ridge:
        model, report["chosen"] = net, "rffnet"
    else:
        tic = time.perf_counter()
        model = ridge_cls(length_scale=ridge.length_scale_, alpha=ridge.alpha_, random_state=seeds[1],
                          n_jobs=n_jobs).fit(X, y)
        report["fit_times"]["ridge_refit"] = time.perf_counter() - tic  # type: ignore[index]  # a dict
        report["chosen"] = "ridge"
    log(f"chose {report['chosen']}")
    model.selection_report_ = report
    return model
