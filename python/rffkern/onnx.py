"""Export fitted rffkern models to ONNX through skl2onnx (docs/user_guide/onnx.rst).

Every fitted random-feature model predicts by the same few steps, and the export writes them once:

1. the input treatment: clip each input to its training range (``x_min_``, ``x_max_``), map the
   heavy-tailed ones to normal scores where ``standardize_="quantile"`` (scikit-learn's
   ``QuantileTransformer``, written in ONNX operators), then ``(x - x_mean_) * multiplier``, the
   multiplier being ``1 / x_scale_`` times the relevances (RFFNet's ``relevances_``, SRFF's
   ``gamma_``) where the model has them;
2. the map: ``U = X @ W (+ b)``, W dense (the structured maps, Fastfood and SORF, are expanded to
   their dense frequency matrix once, at export, and checked against ``transform``);
3. the activation: ``cos(U)``, ``[cos(U), sin(U)]`` (the pair form), the identity (EERF's linear
   kernel) or ``max(U, 0)^q`` (EERF's arc-cosine kernels);
4. the output layer: ``Z @ coef + intercept``, the feature amplitude and the target scale folded
   into ``coef``; for a classifier, class scores, ``softmax(temperature * scores)`` and the label
   of the largest score, exactly as ``predict_proba`` and ``predict`` compute them.

:func:`_describe` reads these numbers off a fitted estimator (one function per estimator family)
into a :class:`_RandomFeatureGraph`; one converter turns any such description into ONNX nodes.
skl2onnx and onnx are imported only inside the functions that need them (the ``onnx`` extra:
``pip install "rffkern[onnx]"``), so ``import rffkern.onnx`` costs nothing without them.

Registration is explicit: :func:`register` (idempotent) declares the converters to skl2onnx, after
which ``skl2onnx.to_onnx(model, X[:1])`` converts a fitted model or a scikit-learn pipeline
holding one; :func:`to_onnx` registers and converts in one call, in float32 unless asked
otherwise.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike
from sklearn.utils.validation import check_is_fitted

from rffkern import kernels
from rffkern.adaptive import AdaptiveRFFClassifier, AdaptiveRFFRegressor
from rffkern.eerf import EERFClassifier, EERFRegressor
from rffkern.feature_maps import RandomFourierFeatures
from rffkern.rffnet import RFFNetClassifier, RFFNetRegressor
from rffkern.ridge import RFFRidge, RFFRidgeClassifier
from rffkern.srff import SRFFRegressor
from rffkern.structured import Fastfood, OrthogonalRandomFeatures, StructuredOrthogonalFeatures

__all__ = ["SUPPORTED", "register", "to_onnx"]

#: Activations of :class:`_RandomFeatureGraph`: the cosine, the pair form ``[cos, sin]``, the
#: identity and the arc-cosine kernels' ``step(U)``, ``max(U, 0)``, ``max(U, 0)^2``.
ACTIVATIONS = ("cos", "cos_sin", "identity", "step", "relu", "relu2")


@dataclass
class _RandomFeatureGraph:
    """A fitted random-feature model as ``clip -> affine -> activation -> affine (-> classes)``.

    ``Z = amplitude * activation(((clip(x, lower, upper) - mean) * multiplier) @ weights +
    offsets)``; a transformer outputs Z, a regressor ``Z @ coef + intercept``, a classifier the
    scores ``S = Z @ coef + intercept`` (one column per class of ``classes_``),
    ``softmax(temperature * S)`` and ``classes_[argmax S]``. Arrays are float64; None leaves a step out.

    Attributes
    ----------
    kind : {"transformer", "regressor", "classifier"}
    weights : ndarray of shape (n_features, n_frequencies)
    activation : str
        One of ``ACTIVATIONS``.
    amplitude : float
        The features' scale (folded into ``coef`` where there is one).
    lower, upper : ndarray of shape (n_features,) or None
        The clipping range.
    mean, multiplier : ndarray of shape (n_features,) or None
        The centring and the per-input factor (``1 / x_scale_``, times the relevances).
    offsets : ndarray of shape (n_frequencies,) or None
    coef : ndarray of shape (n_activations, n_outputs) or None
        The output layer, amplitude and target scale included.
    intercept : ndarray of shape (n_outputs,) or None
    temperature : float or None
        ``predict_proba``'s factor of the scores.
    quantiles : tuple or None
        ``(columns, QuantileTransformer)`` of the inputs mapped to normal scores after clipping.
    """

    kind: str
    weights: np.ndarray
    activation: str
    amplitude: float = 1.0
    lower: np.ndarray | None = None
    upper: np.ndarray | None = None
    mean: np.ndarray | None = None
    multiplier: np.ndarray | None = None
    offsets: np.ndarray | None = None
    coef: np.ndarray | None = None
    intercept: np.ndarray | None = None
    temperature: float | None = None
    quantiles: tuple | None = None

    @property
    def n_outputs(self) -> int:
        """The number of output columns (features, targets or classes)."""
        if self.coef is not None:
            return int(self.coef.shape[1])
        return int(self.weights.shape[1] * (2 if self.activation == "cos_sin" else 1))


# ---- reading a fitted estimator -----------------------------------------------------------------
def _f64(a):
    return None if a is None else np.asarray(a, dtype=np.float64)


def _columns(a):
    """``a`` as a float64 matrix of one column per output."""
    a = np.asarray(a, dtype=np.float64)
    return a.reshape(a.shape[0], -1)


def _input_treatment(est, relevances=None):
    """The ``lower, upper, mean, multiplier, quantiles`` fields of an estimator whose inputs go
    through :func:`rffkern._inputs.guarded_inputs` and ``(x - x_mean_) / x_scale_``."""
    x_min = getattr(est, "x_min_", None)
    quantiles = getattr(est, "input_quantiles_", None)
    scale = _f64(est.x_scale_)
    with np.errstate(divide="ignore"):
        multiplier = np.where(np.isinf(scale), 0.0, 1.0 / scale)  # a constant input standardizes to 0
    if relevances is not None:
        multiplier = multiplier * _f64(relevances)
    return dict(lower=_f64(x_min), upper=None if x_min is None else _f64(est.x_max_), mean=_f64(est.x_mean_),
                multiplier=multiplier,
                quantiles=None if quantiles is None else (np.asarray(est.quantile_columns_), quantiles))


def _classifier_head(est, coef, intercept, temperature):
    """``coef``, ``intercept`` and the classes of a classifier: one score column per class (a
    zero column first where the model has one decision column for two classes, as
    ``class_scores`` and ``class_probabilities`` do), with ``predict_proba``'s temperature."""
    if temperature is None:
        raise ValueError(f"this {type(est).__name__} has no predict_proba temperature (its fit saw one class "
                         "only): fit it on rows of at least two classes before exporting it")
    coef, intercept = _columns(coef), np.atleast_1d(_f64(intercept))
    if coef.shape[1] == 1:
        coef = np.hstack([np.zeros_like(coef), coef])
        intercept = np.concatenate([[0.0], intercept])
    return dict(kind="classifier", coef=coef, intercept=intercept, temperature=float(temperature))


def _describe_ridge(est):
    fmap = dict(weights=_f64(est.weights_), offsets=None if est.pair else _f64(est.offsets_),
                activation="cos_sin" if est.pair else "cos", **_input_treatment(est))
    coef = _columns(est.coef_) * est.scale_
    if isinstance(est, RFFRidgeClassifier):
        return _RandomFeatureGraph(**fmap, **_classifier_head(est, coef, est.intercept_, est.temperature_))
    return _RandomFeatureGraph(kind="regressor", coef=coef, intercept=np.atleast_1d(_f64(est.intercept_)), **fmap)


def _describe_rffnet(est):
    fmap = dict(weights=_f64(est.weights_), offsets=_f64(est.offsets_), activation="cos",
                **_input_treatment(est, est.relevances_))
    coef = _columns(est.coef_) * est.scale_ * _f64(est.y_scale_)
    if isinstance(est, RFFNetClassifier):  # class_probabilities: sigmoid / softmax of the logits
        return _RandomFeatureGraph(**fmap, **_classifier_head(est, coef, est.intercept_, 1.0))
    return _RandomFeatureGraph(kind="regressor", coef=coef, intercept=np.atleast_1d(_f64(est.intercept_)), **fmap)


def _eerf_map(est):
    """EERF's map by kernel: the Fourier features, the arc-cosine ones, or the kept columns."""
    if est.kernel == "linear":
        selection = np.zeros((est.n_features_in_, est.support_.size))
        selection[est.support_, np.arange(est.support_.size)] = 1.0
        return dict(weights=selection, activation="identity"), 1.0
    if est.kernel.startswith("arccos"):
        activation = ("step", "relu", "relu2")[int(est.kernel[-1])]
        return dict(weights=_f64(est.weights_), activation=activation), est.scale_
    return dict(weights=_f64(est.weights_), offsets=_f64(est.offsets_), activation="cos"), est.scale_


def _describe_eerf(est):
    fmap, amplitude = _eerf_map(est)
    fmap.update(_input_treatment(est))
    coef = _columns(est.coef_) * amplitude
    if isinstance(est, EERFClassifier):
        return _RandomFeatureGraph(**fmap, **_classifier_head(est, coef, est.intercept_, est.temperature_))
    return _RandomFeatureGraph(kind="regressor", coef=coef, intercept=np.atleast_1d(_f64(est.intercept_)), **fmap)


def _describe_adaptive(est):
    fmap = dict(weights=_f64(est.frequencies_), activation="cos_sin", **_input_treatment(est))
    if isinstance(est, AdaptiveRFFClassifier):  # the per-class outputs are the scores
        return _RandomFeatureGraph(**fmap, **_classifier_head(est, est.coef_, est.y_mean_, est.temperature_))
    coef = _columns(est.coef_) * _f64(est.y_scale_)
    return _RandomFeatureGraph(kind="regressor", coef=coef, intercept=np.atleast_1d(_f64(est.y_mean_)), **fmap)


def _describe_srff(est):
    return _RandomFeatureGraph(kind="regressor", weights=_f64(est.weights_), offsets=_f64(est.offsets_),
                              activation="cos", coef=_columns(est.coef_) * est.y_scale_,
                              intercept=np.atleast_1d(_f64(est.intercept_)), **_input_treatment(est, est.gamma_))


def _describe_dense_map(est):
    return _RandomFeatureGraph(kind="transformer", weights=_f64(est.weights_),
                              offsets=None if est.pair else _f64(est.offsets_),
                              activation="cos_sin" if est.pair else "cos", amplitude=float(est.scale_))


def _fastfood_blocks(est):
    """Each Fastfood block's ``V_t = 1/(sigma sqrt(p)) S H G Pi H B`` applied to the first d unit
    vectors (the zero-padded inputs' only nonzero coordinates): row i holds ``V_t e_i``."""
    p, d = est.block_size_, est.n_features_in_
    for t in range(est.signs_.shape[0]):
        Y = np.eye(d, p) * est.signs_[t]
        Y = kernels.fwht(Y)[:, est.permutation_[t]] * est.gaussian_[t]
        yield kernels.fwht(Y) * (est.scaling_[t] / (est.length_scale * np.sqrt(p)))


def _sorf_blocks(est):
    """Each SORF block's ``sqrt(p)/sigma R Hn D1 Hn D2 Hn D3`` applied to the first d unit vectors."""
    p, d = est.block_size_, est.n_features_in_
    for t in range(est.diagonals_.shape[0]):
        Y = np.eye(d, p)
        for diagonal in est.diagonals_[t, ::-1]:  # D3 first
            Y = kernels.fwht(Y * diagonal, normalized=True)
        Y = Y * (np.sqrt(p) / est.length_scale)
        yield Y if est.radial_ is None else Y * est.radial_[t]


def _describe_structured(est):
    """A Fastfood or SORF map with its dense frequency matrix, checked against ``transform``."""
    blocks = _fastfood_blocks(est) if isinstance(est, Fastfood) else _sorf_blocks(est)
    n_freq = est.offsets_.shape[0]
    W = np.hstack(list(blocks))[:, :n_freq]  # row i: the frequencies' i-th coordinates
    graph = _RandomFeatureGraph(kind="transformer", weights=W, offsets=None if est.pair else _f64(est.offsets_),
                               activation="cos_sin" if est.pair else "cos", amplitude=float(est.scale_))
    probe = np.random.default_rng(0).standard_normal((4, est.n_features_in_))
    U = probe @ W + (0.0 if graph.offsets is None else graph.offsets)
    expected = np.hstack([np.cos(U), np.sin(U)]) if est.pair else np.cos(U)
    if not np.allclose(est.transform(probe), graph.amplitude * expected, rtol=0, atol=1e-9):
        raise RuntimeError(f"the dense frequencies of this {type(est).__name__} do not reproduce its transform")
    return graph


_DESCRIBERS = {
    RandomFourierFeatures: _describe_dense_map,
    OrthogonalRandomFeatures: _describe_dense_map,
    Fastfood: _describe_structured,
    StructuredOrthogonalFeatures: _describe_structured,
    RFFRidge: _describe_ridge,
    RFFRidgeClassifier: _describe_ridge,
    RFFNetRegressor: _describe_rffnet,
    RFFNetClassifier: _describe_rffnet,
    EERFRegressor: _describe_eerf,
    EERFClassifier: _describe_eerf,
    AdaptiveRFFRegressor: _describe_adaptive,
    AdaptiveRFFClassifier: _describe_adaptive,
    SRFFRegressor: _describe_srff,
}

#: The estimator classes :func:`register` gives a converter.
SUPPORTED = tuple(_DESCRIBERS)


def _describe(estimator: Any) -> _RandomFeatureGraph:
    """Read a fitted rffkern estimator as a :class:`_RandomFeatureGraph`.

    Parameters
    ----------
    estimator : estimator
        A fitted instance of one of ``SUPPORTED``.

    Returns
    -------
    _RandomFeatureGraph
        The numbers its ``transform`` / ``predict`` / ``predict_proba`` compute with.

    Raises
    ------
    TypeError
        For an estimator of another class.
    sklearn.exceptions.NotFittedError
        For an estimator not fitted yet.

    Examples
    --------
    >>> import numpy as np
    >>> from rffkern import RFFRidge
    >>> from rffkern.onnx import _describe
    >>> X = np.random.default_rng(0).standard_normal((50, 3))
    >>> graph = _describe(RFFRidge(n_components=20, random_state=0).fit(X, X[:, 0]))
    >>> graph.kind, graph.activation, graph.weights.shape, graph.coef.shape
    ('regressor', 'cos', (3, 20), (20, 1))
    """
    describer = _DESCRIBERS.get(type(estimator))
    if describer is None:
        raise TypeError(f"rffkern.onnx exports {', '.join(c.__name__ for c in SUPPORTED)}; "
                        f"got {type(estimator).__name__}")
    check_is_fitted(estimator)
    return describer(estimator)


# ---- writing ONNX nodes ---------------------------------------------------------------------------
class _NodeWriter:
    """Adds the nodes and constants of one operator to skl2onnx's container, in one float dtype."""

    def __init__(self, scope, container, dtype):
        self.scope, self.container, self.dtype = scope, container, np.dtype(dtype)

    def constant(self, name, array):
        """The name of an initializer holding ``array`` (floats in the graph's dtype)."""
        from onnx import TensorProto, numpy_helper

        array = np.asarray(array)
        unique = self.scope.get_unique_variable_name(name)
        if array.dtype.kind in "US":  # string tensors keep their values outside raw_data
            self.container.add_initializer(unique, TensorProto.STRING, list(array.shape),
                                           [str(v).encode("utf-8") for v in array.ravel()])
            return unique
        if array.dtype.kind == "f":
            array = array.astype(self.dtype)
        self.container.add_initializer(unique, None, None, numpy_helper.from_array(np.ascontiguousarray(array)))
        return unique

    def node(self, op_type, inputs, name, output=None, **attrs):
        """Add one ``op_type`` node; returns its output's name (``output`` or a new one)."""
        output = output or self.scope.get_unique_variable_name(name)
        self.container.add_node(op_type, inputs, output, name=self.scope.get_unique_operator_name(op_type), **attrs)
        return output


def _write_inputs(w, graph, x):
    """Clipping, normal scores, centring and scaling of the input ``x``."""
    if graph.lower is not None:
        x = w.node("Max", [x, w.constant("x_min", graph.lower)], "clipped_low")
        x = w.node("Min", [x, w.constant("x_max", graph.upper)], "clipped")
    if graph.quantiles is not None:
        columns, transformer = graph.quantiles
        x = _write_normal_scores(w, x, columns, transformer, graph.weights.shape[0])
    if graph.mean is not None and np.any(graph.mean != 0):
        x = w.node("Sub", [x, w.constant("x_mean", graph.mean)], "centred")
    if graph.multiplier is not None and np.any(graph.multiplier != 1):
        x = w.node("Mul", [x, w.constant("x_multiplier", graph.multiplier)], "scaled")
    return x


# scikit-learn's QuantileTransformer(output_distribution="normal"), as rffkern fits it: the
# training range's clipping comes first, so every value lies within the quantiles' range.
_BOUNDS_THRESHOLD = 1e-7  # sklearn.preprocessing._data.BOUNDS_THRESHOLD
# The inverse normal CDF by P. J. Acklam's rational approximations (relative error below 1.2e-9):
# one on the central region [_P_LOW, 1 - _P_LOW], one in q = sqrt(-2 log p) on each tail.
_P_LOW = 0.02425
_CENTRAL_NUM = (-3.969683028665376e+01, 2.209460984245205e+02, -2.759285104469687e+02,
                1.383577518672690e+02, -3.066479806614716e+01, 2.506628277459239e+00)
_CENTRAL_DEN = (-5.447609879822406e+01, 1.615858368580409e+02, -1.556989798598866e+02,
                6.680131188771972e+01, -1.328068155288572e+01, 1.0)
_TAIL_NUM = (-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e+00,
             -2.549732539343734e+00, 4.374664141464968e+00, 2.938163982698783e+00)
_TAIL_DEN = (7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00,
             3.754408661907416e+00, 1.0)


def _write_polynomial(w, t, coefficients, name):
    """Horner's ``((c0 t + c1) t + ...) + c_last`` of the tensor ``t``."""
    acc = w.constant(name, np.array([coefficients[0]]))
    for c in coefficients[1:]:
        acc = w.node("Add", [w.node("Mul", [acc, t], name), w.constant(name, np.array([c]))], name)
    return acc


def _write_normal_quantile(w, p):
    """``scipy.stats.norm.ppf(p)`` clipped as scikit-learn clips it (p within
    ``[_BOUNDS_THRESHOLD - eps, 1 - (_BOUNDS_THRESHOLD - eps)]``)."""
    central = w.node("Sub", [p, w.constant("half", np.array([0.5]))], "central")
    r = w.node("Mul", [central, central], "central_sq")
    central = w.node("Div", [w.node("Mul", [_write_polynomial(w, r, _CENTRAL_NUM, "cnum"), central], "cnum_q"),
                             _write_polynomial(w, r, _CENTRAL_DEN, "cden")], "central_value")
    tail_p = w.node("Min", [p, w.node("Sub", [w.constant("one", np.array([1.0])), p], "upper_p")], "tail_p")
    tail_p = w.node("Max", [tail_p, w.constant("p_min", np.array([_BOUNDS_THRESHOLD - np.spacing(1)]))], "tail_p")
    q = w.node("Sqrt", [w.node("Mul", [w.node("Log", [tail_p], "log_p"), w.constant("m2", np.array([-2.0]))],
                                "m2_log_p")], "tail_q")
    tail = w.node("Div", [_write_polynomial(w, q, _TAIL_NUM, "tnum"), _write_polynomial(w, q, _TAIL_DEN, "tden")],
                  "tail_value")
    upper = w.node("Greater", [p, w.constant("half", np.array([0.5]))], "upper_half")
    tail = w.node("Where", [upper, w.node("Neg", [tail], "neg_tail"), tail], "signed_tail")
    in_tail = w.node("Less", [tail_p, w.constant("p_low", np.array([_P_LOW]))], "in_tail")
    return w.node("Where", [in_tail, tail, central], "normal_score")


def _write_interp(w, x, knots, values, name):
    """``np.interp`` of every column of ``x`` (n, c) on its column of ``knots`` (k, c), ascending,
    for values within the knots' range. The knot below each value is found by counting the knots
    at or below it (an (n, k, c) comparison: k is at most 500, c the few heavy-tailed inputs)."""
    k, c = knots.shape
    below = w.node("LessOrEqual", [w.constant(name + "_knots", knots),
                                   w.node("Unsqueeze", [x, w.constant("axis1", np.array([1], np.int64))], "x3")],
                   name + "_below")
    count = w.node("ReduceSum", [w.node("Cast", [below], name + "_n", to=_proto_int64()),
                                 w.constant("axis1", np.array([1], np.int64))], name + "_count", keepdims=0)
    j = w.node("Clip", [w.node("Sub", [count, w.constant("one_i", np.array(1, np.int64))], name + "_j"),
                        w.constant("zero_i", np.array(0, np.int64)), w.constant("k2", np.array(k - 2, np.int64))],
               name + "_j")
    flat = w.node("Add", [w.node("Mul", [j, w.constant("c", np.array(c, np.int64))], name + "_row"),
                          w.constant("col", np.arange(c, dtype=np.int64))], name + "_flat")
    flat_next = w.node("Add", [flat, w.constant("c", np.array(c, np.int64))], name + "_flat_next")
    q0, q1 = (w.node("Gather", [w.constant(name + "_kf", knots.ravel()), f], name + "_q") for f in (flat, flat_next))
    v0, v1 = (w.node("Gather", [w.constant(name + "_vf", values.ravel()), f], name + "_v") for f in (flat, flat_next))
    gap = w.node("Sub", [q1, q0], name + "_gap")
    step = w.node("Div", [w.node("Sub", [x, q0], name + "_dx"), gap], name + "_t")
    # a tie of the last two knots at x (the top of the range): np.interp's value there is the last one
    step = w.node("Where", [w.node("Greater", [gap, w.constant("zero", np.zeros(1))], name + "_open"), step,
                            w.constant("one", np.array([1.0]))], name + "_t")
    return w.node("Add", [v0, w.node("Mul", [step, w.node("Sub", [v1, v0], name + "_dv")], name + "_rise")],
                  name + "_value")


def _proto_int64():
    from onnx import TensorProto

    return TensorProto.INT64


def _write_normal_scores(w, x, columns, quantiles, n_features):
    """``x`` with its ``columns`` replaced by their normal scores (the fitted ``quantiles``)."""
    Q = np.asarray(quantiles.quantiles_, np.float64)  # (n_quantiles, len(columns))
    ref = np.asarray(quantiles.references_, np.float64)[:, None] * np.ones(Q.shape[1])
    xq = w.node("Gather", [x, w.constant("quantile_columns", np.asarray(columns, np.int64))], "xq", axis=1)
    forward = _write_interp(w, xq, Q, ref, "fwd")
    neg = w.node("Neg", [xq], "neg_xq")
    backward = _write_interp(w, neg, -Q[::-1], -ref[::-1], "bwd")
    u = w.node("Mul", [w.node("Sub", [forward, backward], "fb"), w.constant("half", np.array([0.5]))], "uniform")
    at_top = w.node("Greater", [w.node("Add", [xq, w.constant("bound", np.array([_BOUNDS_THRESHOLD]))], "xq_up"),
                                w.constant("q_top", Q[-1])], "at_top")
    u = w.node("Where", [at_top, w.constant("one", np.array([1.0])), u], "uniform")
    at_bottom = w.node("Less", [w.node("Sub", [xq, w.constant("bound", np.array([_BOUNDS_THRESHOLD]))], "xq_down"),
                                w.constant("q_bottom", Q[0])], "at_bottom")
    u = w.node("Where", [at_bottom, w.constant("zero", np.zeros(1)), u], "uniform")
    scores = _write_normal_quantile(w, u)
    # back into place: the other columns kept, these replaced (a 0/1 placement, exact)
    keep = np.ones(n_features)
    keep[columns] = 0.0
    place = np.zeros((len(columns), n_features))
    place[np.arange(len(columns)), columns] = 1.0
    kept = w.node("Mul", [x, w.constant("keep", keep)], "kept")
    return w.node("Add", [kept, w.node("MatMul", [scores, w.constant("place", place)], "placed")], "with_scores")


def _write_features(w, graph, x):
    """``activation(x @ weights + offsets)``, the amplitude left to the caller."""
    u = w.node("MatMul", [x, w.constant("weights", graph.weights)], "phases")
    if graph.offsets is not None:
        u = w.node("Add", [u, w.constant("offsets", graph.offsets)], "shifted")
    if graph.activation == "cos":
        return w.node("Cos", [u], "cos")
    if graph.activation == "cos_sin":
        return w.node("Concat", [w.node("Cos", [u], "cos"), w.node("Sin", [u], "sin")], "cos_sin", axis=1)
    if graph.activation == "step":
        positive = w.node("Greater", [u, w.constant("zero", np.zeros(1))], "positive")
        return w.node("Cast", [positive], "step", to=_proto_type(w.dtype))
    if graph.activation in ("relu", "relu2"):
        r = w.node("Relu", [u], "relu")
        return r if graph.activation == "relu" else w.node("Mul", [r, r], "relu2")
    return u  # identity


def _proto_type(dtype):
    from onnx import TensorProto

    return TensorProto.DOUBLE if np.dtype(dtype) == np.float64 else TensorProto.FLOAT


def _write_outputs(w, graph, z, outputs, labels):
    """The transformer's features, the regressor's targets, or the classifier's label and
    probabilities, into the operator's ``outputs`` (``labels``: the label constant's values)."""
    if graph.kind == "transformer":
        w.node("Mul", [z, w.constant("amplitude", np.array([graph.amplitude]))], "features", output=outputs[0])
        return
    f = w.node("MatMul", [z, w.constant("coef", graph.coef)], "linear")
    if graph.kind == "regressor":
        w.node("Add", [f, w.constant("intercept", graph.intercept)], "prediction", output=outputs[0])
        return
    scores = w.node("Add", [f, w.constant("intercept", graph.intercept)], "scores")
    best = w.node("ArgMax", [scores], "best", axis=1, keepdims=0)
    w.node("Gather", [w.constant("classes", labels), best], "label", output=outputs[0], axis=0)
    tempered = w.node("Mul", [scores, w.constant("temperature", np.array([graph.temperature]))], "tempered")
    w.node("Softmax", [tempered], "probabilities", output=outputs[1], axis=1)


def _graph_dtype(operator):
    """float32 or float64, from the operator's input type; other inputs are refused."""
    from skl2onnx.common.data_types import DoubleTensorType, FloatTensorType

    kind = operator.inputs[0].type
    if isinstance(kind, DoubleTensorType):
        return np.float64
    if isinstance(kind, FloatTensorType):
        return np.float32
    raise TypeError(f"{type(operator.raw_operator).__name__} is exported for float or double inputs; got "
                    f"{type(kind).__name__} (cast the input to float32 first)")


def _label_values(scope, graph, estimator):
    """The label constant: skl2onnx's classes (their indices with the ``nocl`` option), as int64
    for numeric labels and strings otherwise."""
    from skl2onnx.common.utils_classifier import get_label_classes

    labels = np.asarray(get_label_classes(scope, estimator))
    return labels.astype(np.int64) if labels.dtype.kind in "biuf" else labels.astype(str)


#: Unsqueeze and ReduceSum with their axes as an input (the normal scores) need opset 13.
_MIN_OPSET = 13


def _convert(scope, operator, container):
    """skl2onnx converter of every estimator of ``SUPPORTED``."""
    estimator = operator.raw_operator
    if container.target_opset < _MIN_OPSET:
        raise ValueError(f"rffkern's converters need target_opset >= {_MIN_OPSET}; got {container.target_opset}")
    graph = _describe(estimator)
    w = _NodeWriter(scope, container, _graph_dtype(operator))
    z = _write_features(w, graph, _write_inputs(w, graph, operator.inputs[0].full_name))
    labels = _label_values(scope, graph, estimator) if graph.kind == "classifier" else None
    _write_outputs(w, graph, z, [o.full_name for o in operator.outputs], labels)


def _shapes(operator):
    """skl2onnx shape calculator: (N, n_outputs) in the input's float type, or, for a classifier,
    skl2onnx's label and probabilities."""
    from skl2onnx.common.data_types import DoubleTensorType, FloatTensorType
    from skl2onnx.common.shape_calculator import calculate_linear_classifier_output_shapes

    dtype = _graph_dtype(operator)
    graph = _describe(operator.raw_operator)
    if graph.kind == "classifier":
        calculate_linear_classifier_output_shapes(operator)
        return
    tensor = DoubleTensorType if dtype == np.float64 else FloatTensorType
    operator.outputs[0].type = tensor([operator.inputs[0].get_first_dimension(), graph.n_outputs])


def _parse_classifier(scope, model, inputs, custom_parsers=None):
    """skl2onnx's own classifier parser (outputs ``label`` and ``probabilities``, the ``zipmap``
    and ``nocl`` options), after the check that the model is fitted: that parser reads
    ``classes_`` first, and an unfitted model would fail there with an unclear message."""
    check_is_fitted(model)
    from skl2onnx._parse import _parse_sklearn_classifier

    return _parse_sklearn_classifier(scope, model, inputs, custom_parsers=custom_parsers)


_REGISTERED = False


def register() -> None:
    """Declare rffkern's converters to skl2onnx (idempotent).

    After it, ``skl2onnx.to_onnx`` and ``skl2onnx.convert_sklearn`` convert a fitted estimator of
    ``SUPPORTED``, alone or inside scikit-learn pipelines. The classifiers take skl2onnx's
    classifier options (``zipmap``: True by default, False or "columns"; ``nocl``).
    ``import rffkern.onnx`` registers nothing by itself; :func:`to_onnx` calls this function.

    Raises
    ------
    ImportError
        Where skl2onnx or onnx is not installed (``pip install "rffkern[onnx]"``).

    Examples
    --------
    >>> import rffkern.onnx
    >>> rffkern.onnx.register()
    >>> rffkern.onnx.register()  # a second call changes nothing
    """
    global _REGISTERED
    if _REGISTERED:
        return
    try:
        import onnx  # noqa: F401
        from skl2onnx import update_registered_converter
    except ImportError as error:
        raise ImportError('rffkern.onnx needs onnx and skl2onnx: pip install "rffkern[onnx]"') from error
    for cls in SUPPORTED:
        if hasattr(cls, "predict_proba"):
            update_registered_converter(cls, f"Rffkern{cls.__name__}", _shapes, _convert, parser=_parse_classifier,
                                        options={"zipmap": [True, False, "columns"], "nocl": [True, False]})
        else:
            update_registered_converter(cls, f"Rffkern{cls.__name__}", _shapes, _convert)
    _REGISTERED = True


def to_onnx(model: Any, X: ArrayLike, *, dtype: Any = np.float32, options: dict | None = None,
            target_opset: int | dict | None = None) -> Any:
    """Convert a fitted rffkern estimator, or a pipeline holding one, to an ONNX model.

    Registers the converters (:func:`register`) and calls ``skl2onnx.to_onnx``.

    Parameters
    ----------
    model : estimator or sklearn.pipeline.Pipeline
        The fitted model.
    X : array-like of shape (n_samples, n_features)
        Sample rows: only their number of columns is read.
    dtype : {numpy.float32, numpy.float64}, default=numpy.float32
        The graph's input and output float type. float32 is what onnxruntime runs fastest and
        agrees with ``predict`` to float32 rounding; float64 agrees to about 1e-12.
    options : dict or None, default=None
        The conversion options of skl2onnx, e.g. ``{"zipmap": False}`` for a classifier whose
        probabilities should be one tensor rather than a list of dictionaries.
    target_opset : int, dict or None, default=None
        The ONNX opset (None: skl2onnx's default).

    Returns
    -------
    onnx.ModelProto
        The model: input ``X``; output ``variable`` for a transformer or a regressor (shape
        (n, n_outputs), one column for one target), ``label`` and ``probabilities`` for a
        classifier.

    Examples
    --------
    >>> import numpy as np
    >>> from rffkern import RFFRidge
    >>> from rffkern.onnx import to_onnx
    >>> X = np.random.default_rng(0).standard_normal((50, 3))
    >>> model = RFFRidge(n_components=20, random_state=0).fit(X, X[:, 0])
    >>> onx = to_onnx(model, X)
    >>> [o.name for o in onx.graph.output]
    ['variable']
    """
    if np.dtype(dtype) not in (np.float32, np.float64):
        raise ValueError(f"dtype must be float32 or float64, got {np.dtype(dtype)}")
    register()
    from skl2onnx import to_onnx as skl2onnx_to_onnx

    sample = np.asarray(X, dtype=dtype)
    if sample.ndim != 2:
        raise ValueError(f"X must be 2-D (rows, features); got shape {sample.shape}")
    return skl2onnx_to_onnx(model, sample[:1], options=options, target_opset=target_opset)
