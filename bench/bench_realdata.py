"""Real data, default settings: every rffkern estimator beside tuned scikit-learn kernel pipelines.

The benchmark of the issue "Trustworthy by default: ``rffkern.fit(X, y)`` gives a tuned, robust
model on real data". Every method gets the same raw, unscaled ``X`` and ``y`` on the same splits,
in one process, and is fitted with its defaults (only ``random_state`` is set).

Data
    every file of ``/work/shared/datasets`` (``$RFFKERN_DATASETS`` overrides the folder) plus
    scikit-learn's bundled ``load_diabetes(scaled=False)``, ``load_breast_cancer`` and
    ``load_digits``. The task (regression / binary / multiclass) and the sizes are read from the
    tables of that folder's README.md, never guessed from ``y``. a9a uses its official train/test
    files; every other data set a fixed 80/20 ``train_test_split(random_state=seed)``, stratified
    for classification. ``--max-train N`` subsamples the training part (stratified for
    classification) to N rows; the test part is never subsampled. ``y`` is passed unchanged, as
    loaded (``numpy.loadtxt`` gives float64): integer-valued regression targets (abalone,
    cpu_act, cal_housing, online_news_subset, diabetes) are *not* converted, so whatever
    ``rffkern.fit`` decides for them is what is measured (the ``model`` column says which
    estimator it returned and with how many classes).

Methods (``METHODS``: name -> factory(task, seed) returning an unfitted estimator, or None when the
method does not apply to the task; one line adds a candidate)
    baselines  ``nystroem`` / ``rbf_sampler``: StandardScaler -> Nystroem / RBFSampler
               (``n_components=1000``, gamma by the median heuristic on the standardized training
               X, see :func:`median_heuristic_gamma`) -> RidgeCV / RidgeClassifierCV with
               ``alphas=np.logspace(-4, 1, 6)``; for regression the pipeline is fitted on
               standardized y (a scaler fitted on y_train, inverted on predict), as a careful
               practitioner would. ``hgb``: HistGradientBoostingRegressor / Classifier at its
               defaults (trees need neither scaling; squared error is equivariant in y).
    rffkern    ``rffkern.fit`` (whatever it returns today), and at their defaults RFFNet, RFFRidge,
               SRFF (regression only), EERF and adaptive RFF, all from the top-level namespace.

Metrics
    regression: test RMSE / sd(y_test) (population sd, lower is better; = sqrt(1 - R^2)) and R^2.
    classification: error = 1 - accuracy, and ROC-AUC (binary, or one-vs-rest macro for multiclass,
    computed class by class so that decision_function scores work too) from ``predict_proba``
    when the estimator has it, else ``decision_function``.
    ``rel`` = err / min(err_nystroem, err_rbf_sampler) - 1 on the same seed: the relative excess
    error against the better kernel pipeline (for classification the error is 1 - accuracy).
    ``fit/nys`` = fit time / the nystroem pipeline's fit time on the same seed. Fit time is
    ``time.perf_counter`` around ``fit`` only (for the baselines it includes the median heuristic,
    ~2000^2 distances, tens of ms); predict time around ``predict`` only.
    Tables show the mean over seeds of each number (errors, times, per-seed ``rel`` and ``fit/nys``)
    and, for the error, the spread over seeds (min-max); the JSON keeps every seed's numbers.

Time limits
    ``--time-limit S`` (default 600): a fit that takes longer than S seconds is kept, and the
    method is then skipped ("timeout") on later seeds and on later data sets at least as large
    (n_train * d); data sets run smallest first. ``--hard-limit H`` (default 2 S) interrupts a fit
    with SIGALRM after H seconds: Python code raises at its next bytecode, so a single long
    compiled call finishes first. Any exception is caught and its text recorded; nothing stops
    the run.

Timings are noisy: on a shared machine (here 2 cores, with other builds and test runs going on)
expect tens of percent. ``--blas-threads 1`` pins BLAS to one thread for every method (the
rffkern kernels still use their own OpenMP threads). The load average at start and end is in the
JSON.

    python bench/bench_realdata.py --quick                          # a few minutes
    python bench/bench_realdata.py --seeds 0 --time-limit 300       # everything, one seed
    python bench/bench_realdata.py --datasets abalone ccpp --methods nystroem rbf_sampler fit
    python bench/bench_realdata.py --markdown                       # + summary as Markdown
    python bench/bench_realdata.py --report bench/results/bench_realdata.json   # reprint tables
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import re
import signal
import sys
import time
import traceback
import warnings
from contextlib import contextmanager, nullcontext
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.compose import TransformedTargetRegressor
from sklearn.ensemble import HistGradientBoostingClassifier, HistGradientBoostingRegressor
from sklearn.kernel_approximation import Nystroem, RBFSampler
from sklearn.linear_model import RidgeClassifierCV, RidgeCV
from sklearn.metrics import euclidean_distances, r2_score, roc_auc_score
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.utils.metaestimators import available_if

import rffkern

ROOT = Path(__file__).resolve().parent
DATA_DIR = Path(os.environ.get("RFFKERN_DATASETS", "/work/shared/datasets"))
DEFAULT_OUT = ROOT / "results" / "bench_realdata.json"

RIDGE_ALPHAS = np.logspace(-4, 1, 6)
N_KERNEL_COMPONENTS = 1000
MEDIAN_HEURISTIC_ROWS = 2000
TEST_FRACTION = 0.2

# Training rows kept by default when --max-train is not given (None: all). None is capped:
# measured with seed 0 on a 2-core machine under heavy load from other jobs (load average 4-10),
# the kernel pipelines fit the largest training parts (w8a 39799 x 300, a9a 32561 x 123, kin40k
# 32000 x 8, cal_housing 16512 x 8) in 15-35 s each; the slowest baseline was
# HistGradientBoostingClassifier on mnist_test10k (8000 x 784, 10 classes): 250 s, and a whole
# data set's three baselines took at most 280 s (mnist_test10k).
DEFAULT_MAX_TRAIN: dict[str, int | None] = {}

QUICK_DATASETS = ("diabetes", "breast_cancer", "digits", "abalone", "cpu_act", "higgs_subset")
QUICK_SEEDS = (0, 1)
QUICK_MAX_TRAIN = 2000
QUICK_TIME_LIMIT = 60.0

BASELINES = ("nystroem", "rbf_sampler")  # the pair the relative error is measured against
TIMING_REFERENCE = "nystroem"


# ------------------------------------------------------------------------------------------------
# Data
# ------------------------------------------------------------------------------------------------
def _task_from_text(text: str) -> str:
    """'regression' / 'binary' / 'multiclass' from a README task or target cell."""
    text = text.lower()
    if "regression" in text:
        return "regression"
    if "binary" in text:
        return "binary"
    if "multiclass" in text:
        return "multiclass"
    classes = re.match(r"\s*(\d+) classes", text)
    if classes:
        return "binary" if int(classes.group(1)) == 2 else "multiclass"
    raise ValueError(f"no task in README cell {text!r}")


def dataset_catalogue(readme: Path | None = None) -> dict[str, dict]:
    """Name -> {task, rows, d, files or loader} from the README's two tables, smallest first.

    The data-folder table gives each ``.csv.gz`` its task, row count and feature count; a9a's
    ``_train`` / ``_test`` files become one data set ``a9a``. The bundled-with-scikit-learn table
    gives ``load_diabetes``, ``load_breast_cancer`` and ``load_digits`` (named without
    ``load_``). Order: by rows * d (training part for a9a), so that cheap data sets run first.
    """
    readme = readme or DATA_DIR / "README.md"
    cat: dict[str, dict] = {}
    for line in readme.read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 3:
            continue
        file_cell = re.fullmatch(r"`([\w.]+)\.csv\.gz`(?: \(extra\))?", cells[0])
        if file_cell and len(cells) >= 4 and cells[2].isdigit():
            stem = file_cell.group(1)
            name, part = (stem.rsplit("_", 1) if stem.endswith(("_train", "_test")) else (stem, None))
            entry = cat.setdefault(name, {"task": _task_from_text(cells[1]), "files": {}})
            entry["files"][part or "all"] = DATA_DIR / f"{stem}.csv.gz"
            if part in (None, "train"):
                entry.update(rows=int(cells[2]), d=int(cells[3]))
            continue
        loader_cell = re.fullmatch(r"`load_(diabetes|breast_cancer|digits)`", cells[0])
        if loader_cell:
            shape = re.fullmatch(r"\((\d+), (\d+)\)", cells[1])
            cat[loader_cell.group(1)] = {
                "task": _task_from_text(cells[2]), "loader": f"load_{loader_cell.group(1)}",
                "rows": int(shape.group(1)), "d": int(shape.group(2))}
    cat.update(messy_catalogue(readme.parent / "messy" / "MESSY.md"))
    missing = {"abalone", "a9a", "mnist_test10k", "diabetes", "digits"} - cat.keys()
    if missing:
        raise RuntimeError(f"{readme}: tables changed, not found: {sorted(missing)}")
    return dict(sorted(cat.items(), key=lambda kv: kv[1]["rows"] * kv[1]["d"]))


def messy_catalogue(path: Path) -> dict[str, dict]:
    """Name -> {task, rows, d, files} of the messy tables (``messy/MESSY.md``: one section per
    file, its size line ``N rows x M columns (M-1 predictors + target)``); all are regressions.
    Empty where the folder is absent."""
    if not path.exists():
        return {}
    cat: dict[str, dict] = {}
    name = None
    for line in path.read_text(encoding="utf-8").splitlines():
        head = re.fullmatch(r"## (\w+)\.csv\.gz", line.strip())
        if head:
            name = head.group(1)
            continue
        size = re.match(r"- \*\*Size:\*\* (\d+) rows x \d+ columns \((\d+) predictors", line.strip())
        if name and size:
            cat[name] = {"task": "regression", "rows": int(size.group(1)), "d": int(size.group(2)),
                         "files": {"all": path.parent / f"{name}.csv.gz"}, "messy": True}
    return cat


_LOADED: dict[str, dict] = {}  # parsed arrays, once per process


def load_dataset(name: str, catalogue: dict) -> dict:
    """{'X', 'y'} or, for a data set with an official split, {'X', 'y', 'X_test', 'y_test'}."""
    if name in _LOADED:
        return _LOADED[name]
    entry = catalogue[name]
    if "loader" in entry:
        import sklearn.datasets

        kwargs = {"scaled": False} if entry["loader"] == "load_diabetes" else {}
        X, y = getattr(sklearn.datasets, entry["loader"])(return_X_y=True, **kwargs)
        data = {"X": np.asarray(X, dtype=np.float64), "y": y}
    else:
        parts = {}
        for part, path in entry["files"].items():
            arr = np.loadtxt(path, delimiter=",", skiprows=1)
            parts[part] = (arr[:, :-1], arr[:, -1])
        if "train" in parts:
            data = {"X": parts["train"][0], "y": parts["train"][1],
                    "X_test": parts["test"][0], "y_test": parts["test"][1]}
        else:
            data = {"X": parts["all"][0], "y": parts["all"][1]}
    _LOADED[name] = data
    return data


def split_dataset(data: dict, task: str, seed: int, max_train: int | None):
    """(X_train, X_test, y_train, y_test): official split or 80/20; training part capped."""
    stratify = task != "regression"
    if "X_test" in data:
        X_tr, X_te, y_tr, y_te = data["X"], data["X_test"], data["y"], data["y_test"]
    else:
        X_tr, X_te, y_tr, y_te = train_test_split(
            data["X"], data["y"], test_size=TEST_FRACTION, random_state=seed,
            stratify=data["y"] if stratify else None)
    if max_train is not None and len(y_tr) > max_train:
        X_tr, _, y_tr, _ = train_test_split(
            X_tr, y_tr, train_size=max_train, random_state=seed,
            stratify=y_tr if stratify else None)
    return X_tr, X_te, y_tr, y_te


def describe_data(X_train, y_train, X_test, y_test, task) -> dict:
    """What is worth knowing before blaming a method: target kind and scale, odd columns."""
    from sklearn.utils.multiclass import type_of_target

    sd = X_train.std(axis=0)
    y_all = np.concatenate([np.asarray(y_train, dtype=float), np.asarray(y_test, dtype=float)])
    info = {
        "type_of_target_y_train": type_of_target(y_train),
        "y_integer_valued": bool(np.all(y_all == np.round(y_all))),
        "y_distinct": int(np.unique(y_all).size),
        "y_mean": float(y_all.mean()), "y_sd": float(y_all.std()),
        "y_min": float(y_all.min()), "y_max": float(y_all.max()),
        "constant_train_columns": int(np.sum(sd == 0)),
        "column_sd_max_over_min": float(sd.max() / sd[sd > 0].min()) if np.any(sd > 0) else None,
        "x_abs_max": float(np.abs(X_train).max()),
    }
    notes = []
    if task == "regression" and info["y_integer_valued"]:
        notes.append(f"integer-valued target, {info['y_distinct']} distinct values "
                     f"(type_of_target: {info['type_of_target_y_train']})")
    if task == "regression" and (abs(info["y_mean"]) > 1e3 or info["y_sd"] > 1e3 or info["y_sd"] < 1e-2):
        notes.append(f"target scale: mean {info['y_mean']:.4g}, sd {info['y_sd']:.4g}")
    if info["constant_train_columns"]:
        notes.append(f"{info['constant_train_columns']} constant training columns")
    if info["column_sd_max_over_min"] and info["column_sd_max_over_min"] > 1e3:
        notes.append(f"column sds span {info['column_sd_max_over_min']:.2g}x")
    info["notes"] = notes
    return info


# ------------------------------------------------------------------------------------------------
# Methods
# ------------------------------------------------------------------------------------------------
def median_heuristic_gamma(X, max_rows: int = MEDIAN_HEURISTIC_ROWS, random_state=None) -> float:
    """RBF ``gamma`` by the median heuristic: ``1 / (2 * median pairwise distance ** 2)``.

    For the kernel ``exp(-gamma * ||x - x'||^2)``: the median of the Euclidean distances over all
    pairs i < j of at most ``max_rows`` rows of ``X`` drawn without replacement (all rows when
    there are fewer). Duplicate rows count as zero distances; should the median be zero, the
    median of the positive distances is used (and gamma = 1 when every row is the same).
    """
    X = np.asarray(X, dtype=np.float64)
    rng = np.random.default_rng(random_state)
    if X.shape[0] > max_rows:
        X = X[rng.choice(X.shape[0], max_rows, replace=False)]
    dist = euclidean_distances(X)[np.triu_indices(X.shape[0], k=1)]
    med = float(np.median(dist)) if dist.size else 0.0
    if med == 0.0:
        positive = dist[dist > 0]
        if positive.size == 0:
            return 1.0
        med = float(np.median(positive))
    return 1.0 / (2.0 * med**2)


class MedianHeuristicRBFMap(TransformerMixin, BaseEstimator):
    """Nystroem or RBFSampler whose gamma is the median heuristic on the data it is fitted on.

    In a pipeline after StandardScaler this is ``Nystroem(gamma=g)`` / ``RBFSampler(gamma=g)``
    with g from :func:`median_heuristic_gamma` on the standardized training X.
    """

    def __init__(self, approximation="nystroem", n_components=N_KERNEL_COMPONENTS,
                 random_state=None):
        self.approximation = approximation
        self.n_components = n_components
        self.random_state = random_state

    def fit(self, X, y=None):
        self.gamma_ = median_heuristic_gamma(X, random_state=self.random_state)
        cls = {"nystroem": Nystroem, "rbf_sampler": RBFSampler}[self.approximation]
        self.map_ = cls(gamma=self.gamma_, n_components=self.n_components,
                        random_state=self.random_state).fit(X)
        return self

    def transform(self, X):
        return self.map_.transform(X)


def kernel_pipeline(approximation: str, task: str, seed: int):
    """StandardScaler -> median-heuristic RBF map (1000 components) -> ridge with LOO alphas."""
    feature_map = MedianHeuristicRBFMap(approximation, random_state=seed)
    if task == "regression":
        pipe = make_pipeline(StandardScaler(), feature_map, RidgeCV(alphas=RIDGE_ALPHAS))
        return TransformedTargetRegressor(regressor=pipe, transformer=StandardScaler())
    return make_pipeline(StandardScaler(), feature_map, RidgeClassifierCV(alphas=RIDGE_ALPHAS))


class RffkernFit(BaseEstimator):
    """``rffkern.fit(X, y, random_state=..., kernel=...)`` as an estimator; ``model_`` is what it
    returned."""

    def __init__(self, random_state=None, kernel="auto"):
        self.random_state = random_state
        self.kernel = kernel

    def fit(self, X, y):
        self.model_ = rffkern.fit(X, y, random_state=self.random_state, kernel=self.kernel)
        if hasattr(self.model_, "classes_"):
            self.classes_ = self.model_.classes_
        return self

    def predict(self, X):
        return self.model_.predict(X)

    @available_if(lambda self: hasattr(self.model_, "predict_proba"))
    def predict_proba(self, X):
        return self.model_.predict_proba(X)

    @available_if(lambda self: hasattr(self.model_, "decision_function"))
    def decision_function(self, X):
        return self.model_.decision_function(X)


def _by_task(regressor, classifier):
    """Factory for a (regressor class name, classifier class name) pair of ``rffkern`` defaults."""
    def factory(task, seed):
        name = regressor if task == "regression" else classifier
        return None if name is None else getattr(rffkern, name)(random_state=seed)
    return factory


METHODS = {
    "nystroem": lambda task, seed: kernel_pipeline("nystroem", task, seed),
    "rbf_sampler": lambda task, seed: kernel_pipeline("rbf_sampler", task, seed),
    "hgb": lambda task, seed: (HistGradientBoostingRegressor if task == "regression"
                               else HistGradientBoostingClassifier)(random_state=seed),
    "fit": lambda task, seed: RffkernFit(random_state=seed),
    "fit_gaussian": lambda task, seed: RffkernFit(random_state=seed, kernel="gaussian"),
    "rffnet": _by_task("RFFNetRegressor", "RFFNetClassifier"),
    "rff_ridge": _by_task("RFFRidge", "RFFRidgeClassifier"),
    "rff_ridge_auto": lambda task, seed: (rffkern.RFFRidge if task == "regression"
                                          else rffkern.RFFRidgeClassifier)(kernel="auto", random_state=seed),
    "srff": _by_task("SRFFRegressor", None),
    "eerf": _by_task("EERFRegressor", "EERFClassifier"),
    "adaptive_rff": _by_task("AdaptiveRFFRegressor", "AdaptiveRFFClassifier"),
}


def fitted_summary(est) -> dict:
    """A few scalars that say what a fitted estimator did (class, classes, chosen gamma/alpha)."""
    inner = est.model_ if isinstance(est, RffkernFit) else est
    out = {"model": type(inner).__name__}
    if hasattr(inner, "classes_"):
        out["n_classes"] = int(len(inner.classes_))
    parts = [inner]
    if isinstance(inner, TransformedTargetRegressor):
        parts = [inner.regressor_]
    if hasattr(parts[0], "steps"):
        parts = [step for _, step in parts[0].steps]
    report = getattr(inner, "selection_report_", {})
    kernel = report.get("kernel", getattr(inner, "kernel_", None))
    if kernel is not None:  # the kernel used (chosen by kernel="auto")
        nu = report.get("nu") if "kernel" in report else getattr(inner, "nu_", None)
        out["kernel"] = kernel if nu is None else f"{kernel}(nu={nu:g})"
    for part in parts:
        for attr in ("gamma_", "alpha_", "length_scale_", "n_iter_", "best_alpha_"):
            value = getattr(part, attr, None)
            if isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool):
                out[attr.rstrip("_")] = float(value)
    return out


# ------------------------------------------------------------------------------------------------
# Scoring
# ------------------------------------------------------------------------------------------------
def ovr_macro_auc(y_true, scores, classes) -> float:
    """Mean over the classes present in y_true (with negatives too) of ROC-AUC(y == c, scores[:, c]).

    The one-vs-rest macro average; unlike ``roc_auc_score(multi_class="ovr")`` it needs no
    probabilities, so decision_function scores work.
    """
    aucs = []
    for j, c in enumerate(classes):
        positive = y_true == c
        if 0 < positive.sum() < positive.size:
            aucs.append(roc_auc_score(positive, scores[:, j]))
    return float(np.mean(aucs)) if aucs else float("nan")


def score(est, task, X_test, y_test, y_train=None) -> dict:
    """Test metrics and predict time; for regression with ``y_train``, ``absurd``: the test
    predictions outside the training targets' range widened by half its width on each side."""
    t0 = time.perf_counter()
    pred = np.asarray(est.predict(X_test))
    predict_s = time.perf_counter() - t0
    if pred.ndim == 2 and pred.shape[1] == 1:
        pred = pred.ravel()
    out = {"predict_s": predict_s}
    if task == "regression":
        pred = pred.astype(np.float64)
        if not np.all(np.isfinite(pred)):
            raise FloatingPointError(f"{int(np.sum(~np.isfinite(pred)))} non-finite predictions")
        rmse = float(np.sqrt(np.mean((pred - y_test) ** 2)))
        out.update(rmse=rmse, err=rmse / float(np.std(y_test)), r2=float(r2_score(y_test, pred)))
        if y_train is not None:
            lo, hi = float(np.min(y_train)), float(np.max(y_train))
            out["absurd"] = int(np.sum((pred < lo - (hi - lo) / 2) | (pred > hi + (hi - lo) / 2)))
        return out
    accuracy = float(np.mean(pred == y_test))
    out.update(accuracy=accuracy, err=1.0 - accuracy, auc=None, auc_from=None)
    for method in ("predict_proba", "decision_function"):
        if hasattr(est, method):
            scores = np.asarray(getattr(est, method)(X_test), dtype=np.float64)
            break
    else:
        return out
    classes = np.asarray(est.classes_)
    if not np.all(np.isfinite(scores)):
        out["auc_from"] = f"{method} (non-finite scores)"
        return out
    if task == "binary":
        positive_scores = scores[:, 1] if scores.ndim == 2 else scores
        auc = float(roc_auc_score(y_test == classes[1], positive_scores))
    else:
        auc = ovr_macro_auc(y_test, scores.reshape(len(y_test), -1), classes)
    out.update(auc=auc, auc_from=method)
    return out


class FitInterrupted(Exception):
    """Raised by SIGALRM in the middle of a fit that ran past the hard limit."""


@contextmanager
def hard_time_limit(seconds: float | None):
    """Raise FitInterrupted after ``seconds`` (main thread on POSIX only; otherwise no limit)."""
    usable = (seconds is not None and hasattr(signal, "setitimer")
              and threading_is_main())
    if not usable:
        yield
        return

    def _alarm(signum, frame):
        raise FitInterrupted(f"timeout: interrupted after {seconds:.0f} s (hard limit)")

    previous = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def threading_is_main() -> bool:
    import threading

    return threading.current_thread() is threading.main_thread()


def fit_and_score(factory, task, seed, X_train, y_train, X_test, y_test, hard_limit) -> dict:
    """One method on one split: status 'ok', 'n/a', 'timeout' or 'error' plus the numbers."""
    est = factory(task, seed)
    if est is None:
        return {"status": "n/a"}
    rec = {"status": "ok", "estimator": repr(est)}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        t0 = time.perf_counter()
        try:
            with hard_time_limit(hard_limit):
                est.fit(X_train, y_train)
        except FitInterrupted as exc:
            rec.update(status="timeout", fit_s=time.perf_counter() - t0, error=str(exc))
            return rec
        except Exception as exc:  # a broken default must not stop the run
            rec.update(status="error", fit_s=time.perf_counter() - t0,
                       error=f"fit: {type(exc).__name__}: {exc}",
                       traceback=traceback.format_exc(limit=-4))
            return rec
        rec["fit_s"] = time.perf_counter() - t0
        try:
            rec.update(fitted_summary(est))
            rec.update(score(est, task, X_test, y_test, y_train))
        except Exception as exc:
            rec.update(status="error", error=f"predict/score: {type(exc).__name__}: {exc}",
                       traceback=traceback.format_exc(limit=-4))
    messages = sorted({f"{w.category.__name__}: {w.message}"[:300] for w in caught})
    if messages:
        rec["warnings"] = messages[:5]
        rec["n_warnings"] = len(caught)
    return rec


# ------------------------------------------------------------------------------------------------
# The run
# ------------------------------------------------------------------------------------------------
def run(datasets=None, methods=None, seeds=(0, 1, 2), max_train=None, time_limit=600.0,
        hard_limit=None, verbose=True, dataset_info=None, on_dataset=None) -> list[dict]:
    """Fit and score every method on every data set and seed; one dict per (data set, method, seed).

    Parameters
    ----------
    datasets, methods : list of str or None
        Subsets of :func:`dataset_catalogue` / ``METHODS`` (None: all), run in catalogue order.
    seeds : sequence of int
        Split seed (80/20 split, training subsample) and every method's ``random_state``.
    max_train : int, or None
        Cap on training rows for every data set; None: ``DEFAULT_MAX_TRAIN`` (no cap unless listed).
    time_limit : float
        Seconds; a method whose fit takes longer is skipped on later seeds and on later data sets
        with n_train * d at least as large.
    hard_limit : float or None
        Seconds after which a fit is interrupted (default ``2 * time_limit``).
    verbose : bool
        Print one line per fit and each data set's table when it is done.
    dataset_info : dict or None
        Filled with name -> sizes and :func:`describe_data` of the first seed's split.
    on_dataset : callable or None
        Called with the records so far after each data set (``main`` saves the JSON there, so an
        interrupted run keeps the data sets it finished).

    Returns
    -------
    records : list of dict
        Raw per-seed results with ``rel_err`` and ``fit_ratio`` added (see :func:`add_relative`).
    """
    catalogue = dataset_catalogue()
    names = list(catalogue) if datasets is None else [n for n in catalogue if n in set(datasets)]
    unknown = set(datasets or ()) - set(catalogue)
    if unknown:
        raise ValueError(f"unknown data sets {sorted(unknown)}; known: {list(catalogue)}")
    method_names = list(METHODS) if methods is None else list(methods)
    unknown = set(method_names) - set(METHODS)
    if unknown:
        raise ValueError(f"unknown methods {sorted(unknown)}; known: {list(METHODS)}")
    hard_limit = 2.0 * time_limit if hard_limit is None else hard_limit
    dataset_info = {} if dataset_info is None else dataset_info
    exceeded: dict[str, tuple[int, str]] = {}  # method -> (work at which it exceeded, where)
    records: list[dict] = []
    for name in names:
        task = catalogue[name]["task"]
        t_load = time.perf_counter()
        data = load_dataset(name, catalogue)
        load_s = time.perf_counter() - t_load
        cap = max_train if max_train is not None else DEFAULT_MAX_TRAIN.get(name)
        ds_records = []
        for seed in seeds:
            X_tr, X_te, y_tr, y_te = split_dataset(data, task, seed, cap)
            work = X_tr.shape[0] * X_tr.shape[1]
            if name not in dataset_info:
                dataset_info[name] = {
                    "task": task, "n_train": int(X_tr.shape[0]), "n_test": int(X_te.shape[0]),
                    "d": int(X_tr.shape[1]), "max_train": cap, "load_s": load_s,
                    "train_rows_before_cap": int(len(data["y"]) if "X_test" in data
                                                 else len(data["y"]) - X_te.shape[0]),
                    **describe_data(X_tr, y_tr, X_te, y_te, task)}
                if verbose:
                    i = dataset_info[name]
                    print(f"\n### {name}: {task}, n_train={i['n_train']}, n_test={i['n_test']}, "
                          f"d={i['d']}" + (f" (train capped at {cap} of {i['train_rows_before_cap']})"
                             if i["n_train"] < i["train_rows_before_cap"] else "")
                          + "".join(f"\n    data: {n}" for n in i["notes"]), flush=True)
            for method in method_names:
                base = {"dataset": name, "task": task, "method": method, "seed": int(seed),
                        "n_train": int(X_tr.shape[0]), "n_test": int(X_te.shape[0]),
                        "d": int(X_tr.shape[1])}
                if method in exceeded and work >= exceeded[method][0]:
                    rec = {"status": "timeout",
                           "error": f"skipped: fit exceeded --time-limit {time_limit:g} s on "
                                    f"{exceeded[method][1]}"}
                else:
                    rec = fit_and_score(METHODS[method], task, seed, X_tr, y_tr, X_te, y_te,
                                        hard_limit)
                    if rec.get("fit_s", 0.0) > time_limit:
                        rec["exceeded_time_limit"] = True
                        exceeded.setdefault(method, (work, f"{name} seed {seed} "
                                                           f"({rec['fit_s']:.0f} s)"))
                rec = {**base, **rec}
                ds_records.append(rec)
                if verbose and rec["status"] != "n/a":
                    detail = (f"err={rec['err']:.4f} fit={rec['fit_s']:.2f}s"
                              if rec["status"] == "ok" else rec.get("error", "")[:160])
                    print(f"  [{name} seed {seed}] {method:13s} {rec['status']:7s} {detail}",
                          flush=True)
        add_relative(ds_records)
        records.extend(ds_records)
        if on_dataset is not None:
            on_dataset(records)
        if verbose:
            print_dataset_table(name, dataset_info[name], ds_records)
    return records


def add_relative(records: list[dict], keep: bool = False) -> None:
    """Add ``rel_err`` (vs the better of BASELINES), ``fit_ratio`` and ``predict_ratio`` (vs
    TIMING_REFERENCE), per seed; ``keep``: only where a record lacks them (a merged file keeps each
    record's ratios to the reference of its own run)."""
    ok = {(r["dataset"], r["seed"], r["method"]): r for r in records if r["status"] == "ok"}
    for r in records:
        if r["status"] != "ok":
            continue
        refs = [ok[(r["dataset"], r["seed"], b)]["err"] for b in BASELINES
                if (r["dataset"], r["seed"], b) in ok]
        if refs and not (keep and "rel_err" in r):
            best = min(refs)
            r["rel_err"] = (r["err"] / best - 1.0) if best > 0 else (0.0 if r["err"] == 0 else float("inf"))
        timing = ok.get((r["dataset"], r["seed"], TIMING_REFERENCE))
        if timing and timing["fit_s"] > 0 and not (keep and "fit_ratio" in r):
            r["fit_ratio"] = r["fit_s"] / timing["fit_s"]
        if timing and timing.get("predict_s", 0) > 0 and "predict_s" in r and not (keep and "predict_ratio" in r):
            r["predict_ratio"] = r["predict_s"] / timing["predict_s"]


# ------------------------------------------------------------------------------------------------
# Tables
# ------------------------------------------------------------------------------------------------
def _mean(records, key):
    """Mean over seeds of ``key`` (records of one method on one data set)."""
    values = [r[key] for r in records if r.get(key) is not None]
    return float(np.mean(values)) if values else None


def _spread(records, key):
    values = [r[key] for r in records if r.get(key) is not None]
    return float(np.max(values) - np.min(values)) if len(values) > 1 else None


def _fmt(value, spec=".3f"):
    if value is None:
        return "-"
    if isinstance(value, float) and not np.isfinite(value):
        return "inf" if value > 0 else ("-inf" if value < 0 else "nan")
    return format(value, spec)


def _table(header, rows, markdown=False):
    if markdown:
        lines = ["| " + " | ".join(header) + " |",
                 "|" + "|".join("---" if i == 0 else "---:" for i in range(len(header))) + "|"]
        lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
        return "\n".join(lines)
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows)]
    fmt = lambda row: "  ".join(str(c).ljust(w) if i in (0, len(row) - 1) else str(c).rjust(w)
                                for i, (c, w) in enumerate(zip(row, widths)))
    return "\n".join([fmt(header), fmt(["-" * w for w in widths])] + [fmt(r) for r in rows])


def dataset_rows(records: list[dict]):
    """Per-method rows of one data set: means over seeds, statuses of the failed seeds."""
    task = records[0]["task"]
    header = (["method", "RMSE/sd", "R2"] if task == "regression" else ["method", "1-acc", "AUC"]) + \
        ["err spread", "fit s", "pred s", "fit/nys", "rel", "model / note"]
    rows = []
    for method in dict.fromkeys(r["method"] for r in records):
        mine = [r for r in records if r["method"] == method]
        if all(r["status"] == "n/a" for r in mine):
            continue
        ok = [r for r in mine if r["status"] == "ok"]
        bad = [r for r in mine if r["status"] not in ("ok", "n/a")]
        note = ""
        if ok:
            models = sorted({r["model"] + (f"({r['n_classes']} classes)" if "n_classes" in r else "")
                             + (f" [{r['kernel']}]" if r.get("kernel", "gaussian") != "gaussian" else "")
                             for r in ok})
            note = ", ".join(models)
        if bad:
            note += ("; " if note else "") + f"{len(bad)}/{len(mine)} {bad[0]['status']}: " \
                + bad[0].get("error", "")[:90].replace("\n", " ")
        second = "r2" if task == "regression" else "auc"
        rows.append([method, _fmt(_mean(ok, "err"), ".4f"), _fmt(_mean(ok, second), ".4f"),
                     _fmt(_spread(ok, "err"), ".4f"),
                     _fmt(_mean(ok, "fit_s"), ".2f"), _fmt(_mean(ok, "predict_s"), ".3f"),
                     _fmt(_mean(ok, "fit_ratio"), ".2f"), _fmt(_mean(ok, "rel_err"), "+.3f"),
                     note])
    return header, rows


def print_dataset_table(name, info, records):
    header, rows = dataset_rows(records)
    baseline_s = sum(r.get("fit_s", 0.0) + r.get("predict_s", 0.0) for r in records
                     if r["method"] in (*BASELINES, "hgb"))
    print(f"\n== {name} ({info['task']}, n_train={info['n_train']}, n_test={info['n_test']}, "
          f"d={info['d']}; means over {len({r['seed'] for r in records})} seed(s); "
          f"baselines fit+predict {baseline_s:.1f} s in all) ==")
    print(_table(header, rows), flush=True)


def summary_rows(records: list[dict]):
    """One row per method over data sets (each data set: the mean over its seeds)."""
    header = ["method", "data sets", "within 2%", "within 10%", "mean rel", "median rel",
              "median fit/nys", "median predict/nys", "absurd", "failed/timeout"]
    rows = []
    for method in dict.fromkeys(r["method"] for r in records):
        mine = [r for r in records if r["method"] == method and r["status"] != "n/a"]
        by_ds = {}
        for r in mine:
            by_ds.setdefault(r["dataset"], []).append(r)
        rels, ratios, predict_ratios, failed = [], [], [], []
        for ds, recs in by_ds.items():
            ok = [r for r in recs if r["status"] == "ok"]
            if len(ok) < len(recs):
                failed.append(ds)
            if _mean(ok, "rel_err") is not None:
                rels.append(_mean(ok, "rel_err"))
            if _mean(ok, "fit_ratio") is not None:
                ratios.append(_mean(ok, "fit_ratio"))
            if _mean(ok, "predict_ratio") is not None:
                predict_ratios.append(_mean(ok, "predict_ratio"))
        rels_arr = np.array(rels, dtype=float)
        rows.append([method, f"{len(rels)}/{len(by_ds)}", int(np.sum(rels_arr <= 0.02)),
                     int(np.sum(rels_arr <= 0.10)),
                     _fmt(float(np.mean(rels_arr)) if rels else None, "+.3f"),
                     _fmt(float(np.median(rels_arr)) if rels else None, "+.3f"),
                     _fmt(float(np.median(ratios)) if ratios else None, ".2f"),
                     _fmt(float(np.median(predict_ratios)) if predict_ratios else None, ".3f"),
                     sum(r.get("absurd", 0) for r in mine),
                     ("all" if failed and len(failed) == len(by_ds) else ", ".join(failed)) or "-"])
    return header, rows


#: ``(kernel="auto" method, its Gaussian-kernel counterpart)``: the pairs the kernel-choice table compares.
KERNEL_PAIRS = (("fit", "fit_gaussian"), ("rff_ridge_auto", "rff_ridge"))


def kernel_choice_rows(records: list[dict]):
    """Per data set and pair of ``KERNEL_PAIRS`` (both present): the mean over seeds of the error
    ratio auto / Gaussian - 1 and of the fit-time ratio, the kernels chosen, and over all data sets
    the worst and the median error ratio and the ratio of the summed fit times."""
    header = ["data set", "method", "err auto/gauss-1", "fit auto/gauss", "kernels chosen"]
    rows, summary = [], []
    for auto, gauss in KERNEL_PAIRS:
        rels, fits, total = [], [], [0.0, 0.0]
        for ds in dict.fromkeys(r["dataset"] for r in records):
            pairs = [(a, g) for a in records for g in records
                     if a["dataset"] == g["dataset"] == ds and a["seed"] == g["seed"] and a["method"] == auto
                     and g["method"] == gauss and a["status"] == g["status"] == "ok"]
            if not pairs:
                continue
            rel = float(np.mean([a["err"] / g["err"] - 1 if g["err"] > 0 else 0.0 for a, g in pairs]))
            fit = float(np.mean([a["fit_s"] / g["fit_s"] for a, g in pairs]))
            total[0] += sum(a["fit_s"] for a, _ in pairs)
            total[1] += sum(g["fit_s"] for _, g in pairs)
            rels.append(rel)
            fits.append(fit)
            chosen = ", ".join(sorted({a.get("kernel", "?") for a, _ in pairs}))
            rows.append([ds, auto, _fmt(rel, "+.4f"), _fmt(fit, ".2f"), chosen])
        if rels:
            summary.append([f"all ({len(rels)})", auto, f"worst {max(rels):+.4f}, median {np.median(rels):+.4f}",
                            f"median {np.median(fits):.2f}, total {total[0] / total[1]:.2f}",
                            f"{sum(1 for r in rows if r[1] == auto and 'matern' in r[4])} with a Matérn"])
    return header, rows + summary


def print_summary(records, markdown=False):
    header, rows = summary_rows(records)
    print("\n== summary: relative excess error vs the better of nystroem / rbf_sampler "
          "(data sets with a result; each data set's rel is its mean over seeds; 'within x': rel <= x) ==")
    print(_table(header, rows))
    if markdown:
        print("\n" + _table(header, rows, markdown=True))
    header, rows = kernel_choice_rows(records)
    if rows:
        print("\n== kernel='auto' against the Gaussian kernel (same seeds; err: test error ratio - 1) ==")
        print(_table(header, rows))
        if markdown:
            print("\n" + _table(header, rows, markdown=True))


# ------------------------------------------------------------------------------------------------
def refuse_stale_rffkern(parser: argparse.ArgumentParser) -> None:
    """Exit through ``parser.error`` when the imported rffkern's sources differ from the checkout's
    (``CHECKOUT_PACKAGE``, where there is one): a bench must measure the code it sits beside."""
    if not CHECKOUT_PACKAGE.is_dir():
        return
    stale = stale_sources(Path(rffkern.__file__).resolve().parent, CHECKOUT_PACKAGE)
    if stale:
        parser.error(f"the imported rffkern ({Path(rffkern.__file__).parent}) is not this checkout's: "
                     f"{', '.join(stale)} differ from {CHECKOUT_PACKAGE}; run `pip install .` or set "
                     f"PYTHONPATH={CHECKOUT_PACKAGE.parent}")


def stale_sources(imported: Path, checkout: Path) -> list[str]:
    """The Python sources of the package directory ``checkout`` that the package directory
    ``imported`` lacks or has different (sorted names; empty when they are one directory).

    A run records the checkout's commit, so it must run the checkout's code: an installed
    ``rffkern`` from an older ``pip install .`` shadows ``python/rffkern`` unless ``PYTHONPATH``
    names it (a run of this bench once measured the installed package under a newer commit). The
    compiled ``_core`` is not compared (a build differs byte for byte between builds).
    """
    if imported.resolve() == checkout.resolve():
        return []
    return sorted(src.name for src in checkout.glob("*.py")
                  if not (imported / src.name).is_file() or (imported / src.name).read_bytes() != src.read_bytes())


CHECKOUT_PACKAGE = ROOT.parent / "python" / "rffkern"


def _environment() -> dict:
    import sklearn

    env = {"python": sys.version.split()[0], "numpy": np.__version__, "sklearn": sklearn.__version__,
           "rffkern": getattr(rffkern, "__version__", None), "platform": platform.platform(),
           "cpu_count": os.cpu_count(), "loadavg": os.getloadavg()}
    try:
        env["rffkern_isa"] = rffkern._core.active_isa()
    except Exception:  # noqa: BLE001 (informational only)
        pass
    env["rffkern_path"] = str(Path(rffkern.__file__).resolve().parent)
    try:
        import subprocess

        env["git"] = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
                                    capture_output=True, text=True).stdout.strip()
        env["git_dirty"] = bool(subprocess.run(
            ["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True, text=True).stdout.strip())
    except OSError:
        pass
    return env


def report(path: Path, markdown: bool = False) -> list[dict]:
    """Print the per-data-set and summary tables of a JSON written by :func:`main`."""
    saved = json.loads(Path(path).read_text())
    records = saved["records"]
    add_relative(records, keep=True)  # (files written before predict_ratio was recorded)
    for name in dict.fromkeys(r["dataset"] for r in records):
        print_dataset_table(name, saved["datasets"][name], [r for r in records if r["dataset"] == name])
    print_summary(records, markdown=markdown)
    return records


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--datasets", nargs="+", help="subset by name (default: all)")
    parser.add_argument("--methods", nargs="+", choices=list(METHODS), help="subset (default: all)")
    parser.add_argument("--seeds", nargs="+", type=int, help="default 0 1 2 (--quick: 0 1)")
    parser.add_argument("--max-train", type=int,
                        help="cap on training rows for every data set (default: DEFAULT_MAX_TRAIN)")
    parser.add_argument("--time-limit", type=float,
                        help="seconds; skip a method on later seeds / larger data sets once a fit "
                             "took longer (default 600; --quick: 60)")
    parser.add_argument("--hard-limit", type=float,
                        help="seconds after which a fit is interrupted (default 2 x --time-limit)")
    parser.add_argument("--blas-threads", type=int, help="threadpoolctl limit on BLAS threads")
    parser.add_argument("--quick", action="store_true",
                        help=f"{len(QUICK_DATASETS)} small data sets, seeds 0 1, "
                             f"train capped at {QUICK_MAX_TRAIN}")
    parser.add_argument("--markdown", action="store_true", help="also print the summary as Markdown")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="JSON path")
    parser.add_argument("--report", type=Path, metavar="JSON",
                        help="print the tables of a saved run (no fitting) and exit")
    args = parser.parse_args(argv)
    if args.report is not None:
        return report(args.report, markdown=args.markdown)

    refuse_stale_rffkern(parser)
    datasets = args.datasets or (list(QUICK_DATASETS) if args.quick else None)
    seeds = args.seeds or (list(QUICK_SEEDS) if args.quick else [0, 1, 2])
    max_train = args.max_train if args.max_train is not None else (QUICK_MAX_TRAIN if args.quick else None)
    time_limit = args.time_limit if args.time_limit is not None else (QUICK_TIME_LIMIT if args.quick else 600.0)

    if args.blas_threads is not None:
        from threadpoolctl import threadpool_limits
        blas = threadpool_limits(limits=args.blas_threads, user_api="blas")
    else:
        blas = nullcontext()
    meta = {"argv": sys.argv[1:] if argv is None else list(argv),
            "started": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "seeds": seeds, "max_train": max_train, "default_max_train": DEFAULT_MAX_TRAIN,
            "time_limit_s": time_limit, "hard_limit_s": args.hard_limit or 2 * time_limit,
            "blas_threads": args.blas_threads, "environment": _environment()}
    info: dict = {}
    t0 = time.perf_counter()

    def save(records, finished=False):
        meta["wall_s"] = time.perf_counter() - t0
        meta["loadavg_end"] = os.getloadavg()
        meta["finished"] = finished
        header, rows = summary_rows(records)
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(
            {"meta": meta, "datasets": info, "records": records,
             "summary": [dict(zip(header, row)) for row in rows]},
            indent=1, default=lambda o: o.item() if hasattr(o, "item") else str(o)))

    with blas:
        records = run(datasets, args.methods, seeds, max_train=max_train, time_limit=time_limit,
                      hard_limit=args.hard_limit, dataset_info=info, on_dataset=save)
    save(records, finished=True)
    print_summary(records, markdown=args.markdown)
    print(f"\n{len(records)} records in {meta['wall_s']:.0f} s -> {args.out}")
    return records


if __name__ == "__main__":
    main()
