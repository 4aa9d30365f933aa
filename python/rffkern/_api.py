"""``rffkern.fit``: one call that picks the right RFFNet estimator for the target."""
from __future__ import annotations

import numpy as np
from sklearn.utils.multiclass import type_of_target

from rffkern.rffnet import RFFNetClassifier, RFFNetRegressor

__all__ = ["fit", "task_of_target"]

_CLASSIFICATION = ("binary", "multiclass")
_REGRESSION = ("continuous", "continuous-multioutput")


def task_of_target(y) -> str:
    """"classification" or "regression" for ``y``, by scikit-learn's ``type_of_target``.

    Binary and multiclass targets (integers or strings with few distinct values) are
    classification; real-valued targets (one or several columns) are regression. Multilabel and
    multiclass-multioutput targets are not supported and raise ``ValueError``.
    """
    arr = np.asarray(y)
    if arr.size == 0:
        raise ValueError("y is empty")
    kind = type_of_target(arr, input_name="y")
    if kind in _CLASSIFICATION:
        return "classification"
    if kind in _REGRESSION:
        return "regression"
    raise ValueError(
        f"rffkern.fit cannot learn a {kind!r} target; pass a 1-D class label vector, or real-valued "
        "targets of shape (n_samples,) or (n_samples, n_outputs)")


def fit(X, y, *, task=None, **params):
    """Fit an RFFNet model to (X, y), choosing regression or classification from ``y``.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
    y : array-like of shape (n_samples,) or (n_samples, n_outputs)
    task : {"regression", "classification"} or None, default=None
        Force the task; None decides with :func:`task_of_target` (note that an integer target with
        few distinct values counts as classification).
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
