"""``rffkern.fit``: one call that picks the right RFFNet estimator for the target."""
from __future__ import annotations

import numpy as np

from rffkern.rffnet import RFFNetClassifier, RFFNetRegressor

__all__ = ["fit", "task_of_target", "explain_task"]

#: Integer targets with at most this many distinct values are class labels; more are counts or
#: measurements (abalone's 28 ring counts, diabetes' 214 progression scores) and are regressed.
MAX_INTEGER_CLASSES = 20


def task_of_target(y) -> str:
    """"classification" or "regression": what a user most likely means by ``y``.

    - strings, booleans and other non-numeric labels: classification;
    - floats with a fractional part anywhere, or several output columns: regression;
    - integer values (of an integer or a float dtype): classification when there are at most
      ``MAX_INTEGER_CLASSES`` (20) distinct values, regression otherwise.

    Pass ``task=`` to :func:`fit` to override the rule.
    """
    return explain_task(y)[0]


def explain_task(y):
    """``(task, reason)``: :func:`task_of_target`'s decision and the rule that made it, in words."""
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


def fit(X, y, *, task=None, **params):
    """Fit an RFFNet model to (X, y), choosing regression or classification from ``y``.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
    y : array-like of shape (n_samples,) or (n_samples, n_outputs)
    task : {"regression", "classification"} or None, default=None
        Force the task; None decides with :func:`task_of_target`: text, booleans and integers
        with at most 20 distinct values are class labels, every other numeric target is regressed.
    **params
        Parameters of :class:`~rffkern.RFFNetRegressor` or :class:`~rffkern.RFFNetClassifier`.

    Returns
    -------
    estimator : RFFNetRegressor or RFFNetClassifier
        The fitted model.

    Examples
    --------
    >>> import rffkern
    >>> from rffkern.datasets import make_jse3
    >>> X, y, support = make_jse3(2000, random_state=0)
    >>> model = rffkern.fit(X, y, random_state=0)
    >>> sorted(model.feature_importances_.argsort()[::-1][:2].tolist())
    [0, 1]
    """
    if task is None:
        task = task_of_target(y)
    if task == "classification":
        return RFFNetClassifier(**params).fit(X, y)
    if task == "regression":
        return RFFNetRegressor(**params).fit(X, y)
    raise ValueError(f"task must be 'regression', 'classification' or None, got {task!r}")
