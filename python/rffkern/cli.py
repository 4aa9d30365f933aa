"""The command line (``python -m rffkern`` or ``rffkern``): ``demo`` and ``fit FILE.csv --target COL``.

``demo`` fits RFFNet on a built-in synthetic problem and prints the test error, the most relevant
features against the true support, and the timing. ``fit`` reads a CSV file with a header row,
learns the column ``--target`` from the others (classification or regression is chosen from the
target by the rule of :func:`rffkern._api.task_of_target`, printed with the reason), prints held-out (or ``--cv K`` cross-validated)
metrics and the relevance ranking, and optionally writes a bar chart (``--plot``, needs
matplotlib) and the pickled model (``--save``).
"""
from __future__ import annotations

import argparse
import pickle
import sys
import time
import warnings
from typing import Sequence

import numpy as np

EXIT_USAGE = 2


class CLIError(Exception):
    """A user mistake reported as one line on stderr with exit status 2."""


def _estimator_params(args):
    params = dict(n_components=args.n_components, alpha=args.alpha, max_iter=args.max_iter,
                  batch_size=args.batch_size, learning_rate=args.learning_rate,
                  random_state=args.random_state, n_jobs=args.n_jobs, verbose=args.verbose)
    return params


def _add_model_options(p):
    p.add_argument("--n-components", type=int, default=300, help="random features s (300)")
    p.add_argument("--alpha", type=float, default=1e-4, help="penalty on the output weights (1e-4)")
    p.add_argument("--max-iter", type=int, default=100, help="maximum epochs (100)")
    p.add_argument("--batch-size", type=int, default=32, help="mini-batch size (32)")
    p.add_argument("--learning-rate", type=float, default=1e-3, help="Adam step size (1e-3)")
    p.add_argument("--random-state", type=int, default=0, help="seed (0)")
    p.add_argument("--n-jobs", type=int, default=None, help="threads (default: all cores)")
    p.add_argument("--verbose", action="store_true", help="print one line per epoch")


def _print_ranking(names, importances, top, support=None, out=None):
    out = sys.stdout if out is None else out  # looked up per call, so redirections apply
    order = np.argsort(-importances, kind="stable")[:top]
    width = max(len(str(names[j])) for j in order)
    for rank, j in enumerate(order, 1):
        mark = ""
        if support is not None:
            mark = "  <- true support" if j in support else ""
        bar = "#" * int(round(30 * importances[j]))
        print(f"  {rank:3d}. {str(names[j]):<{width}}  {importances[j]:6.3f}  {bar}{mark}", file=out)


# -------------------------------------------------------------------------------------- demo
_DEMOS = {
    "gse1": "sin((x1 + x3)^2) sin(x7 x8 x9), 18 features",
    "gse2": "log((x11 + ... + x15)^2), 100 features",
    "jse2": "x1^3 + x2^3, 10 correlated features",
    "jse3": "x1 x2, 10 features",
}


def run_demo(args):
    from rffkern import datasets
    from rffkern import RFFNetRegressor

    make = getattr(datasets, f"make_{args.dataset}")
    X, y, support = make(args.n_samples, random_state=args.random_state)
    X_test, y_test, _ = make(2000, random_state=args.random_state + 10_000)
    print(f"rffkern demo: {args.dataset} = {_DEMOS[args.dataset]}; noise sd 0.1")
    print(f"  {X.shape[0]} training samples, {X_test.shape[0]} test samples")
    model = RFFNetRegressor(**_estimator_params(args))
    tic = time.perf_counter()
    model.fit(X, y)
    elapsed = time.perf_counter() - tic
    pred = model.predict(X_test)
    mse = float(np.mean((pred - y_test) ** 2))
    base = float(np.mean((y_test - y.mean()) ** 2))
    print(f"  fit: {elapsed:.2f} s, {model.n_iter_} epochs (best {model.best_epoch_}), "
          f"{model.n_iter_ * X.shape[0] * 0.9 / max(elapsed, 1e-9):,.0f} samples/s")
    print(f"  test MSE {mse:.4f}  (predicting the mean: {base:.4f}; noise floor 0.0100)")
    names = [f"x{j + 1}" for j in range(X.shape[1])]
    k = len(support)
    top = np.argsort(-model.feature_importances_, kind="stable")[:k]
    hits = len(set(top.tolist()) & set(support.tolist()))
    print(f"  true support: {', '.join(names[j] for j in support)}; "
          f"{hits}/{k} of them are among the top {k} relevances")
    print("  relevance ranking (|theta| scaled to [0, 1]):")
    _print_ranking(names, model.feature_importances_, max(k + 3, 8), support=set(support.tolist()))
    return 0


# -------------------------------------------------------------------------------------- fit
def read_csv(path, target):
    """(X, y, feature names) from a CSV file (optionally .gz) with a header row.

    NumPy's ``loadtxt`` reads the table (quoted fields, a UTF-8 byte-order mark, gzip); feature
    columns must be numeric; a target that is not numeric is read as class labels.
    """
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # loadtxt's note on skipped blank lines
            table = np.loadtxt(path, delimiter=",", dtype=str, quotechar='"', encoding="utf-8-sig",
                               ndmin=2)
    except FileNotFoundError:
        raise CLIError(f"no such file: {path}") from None
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise CLIError(f"cannot read {path}: {exc}") from None
    if table.shape[0] < 2:
        raise CLIError(f"{path} needs a header row and at least one data row")
    header = [h.strip() for h in table[0]]
    if target not in header:
        raise CLIError(f"column {target!r} not found in {path}; columns are: {', '.join(header)}")
    t = header.index(target)
    names = [h for j, h in enumerate(header) if j != t]
    if not names:
        raise CLIError(f"{path} has no feature columns besides the target {target!r}")
    cells = np.char.strip(table[1:])
    features = np.delete(cells, t, axis=1)
    bad = []
    for k, name in enumerate(names):
        try:
            features[:, k].astype(np.float64)
        except ValueError:
            line = next(i for i, v in enumerate(features[:, k]) if not _is_number(v))
            bad.append(f"{name!r} (line {line + 2}: {features[line, k]!r})")
    if bad:
        raise CLIError(f"non-numeric values in feature column(s): {'; '.join(bad[:5])}. "
                       "Encode or drop them first.")
    X = features.astype(np.float64)
    if not np.isfinite(X).all():
        raise CLIError("the feature columns contain NaN or infinite values; impute or drop them first")
    raw = cells[:, t]
    if np.any(raw == ""):
        raise CLIError(f"the target column {target!r} has empty cells")
    try:
        y = raw.astype(np.float64)
    except ValueError:
        return X, raw.astype(str), names  # text labels: classification
    if not np.isfinite(y).all():
        raise CLIError(f"the target column {target!r} contains NaN or infinite values")
    if np.all(y == np.round(y)) and np.abs(y).max() < 2**62:
        y = y.astype(np.int64)
    return X, y, names


def _is_number(text):
    try:
        float(text)
    except ValueError:
        return False
    return True


def run_fit(args):
    from sklearn.base import clone
    from sklearn.metrics import accuracy_score, mean_squared_error, r2_score, roc_auc_score
    from sklearn.model_selection import KFold, StratifiedKFold, train_test_split

    from rffkern._api import explain_task
    from rffkern import RFFNetClassifier, RFFNetRegressor

    X, y, names = read_csv(args.file, args.target)
    try:
        task, reason = (args.task, "--task") if args.task else explain_task(y)
    except ValueError as exc:
        raise CLIError(str(exc)) from None
    if task == "regression" and y.dtype.kind not in "iuf":
        raise CLIError(f"regression needs a numeric target; column {args.target!r} holds text labels")
    est = (RFFNetClassifier if task == "classification" else RFFNetRegressor)(**_estimator_params(args))
    print(f"{args.file}: {X.shape[0]} samples, {X.shape[1]} features, target {args.target!r} -> {task} ({reason})")

    def metrics(model, Xt, yt):
        if task == "classification":
            out = {"accuracy": accuracy_score(yt, model.predict(Xt))}
            if np.unique(yt).size == model.classes_.size:
                proba = model.predict_proba(Xt)
                out["roc_auc"] = (roc_auc_score(yt, proba[:, 1]) if proba.shape[1] == 2 else
                                  roc_auc_score(yt, proba, multi_class="ovr", labels=model.classes_))
            return out
        pred = model.predict(Xt)
        return {"mse": mean_squared_error(yt, pred), "r2": r2_score(yt, pred)}

    tic = time.perf_counter()
    try:
        if args.cv:
            split = (StratifiedKFold if task == "classification" else KFold)(
                args.cv, shuffle=True, random_state=args.random_state)
            per_fold = [metrics(clone(est).fit(X[tr], y[tr]), X[te], y[te]) for tr, te in split.split(X, y)]
            print(f"{args.cv}-fold cross-validation:")
            for key in per_fold[0]:
                vals = np.array([m[key] for m in per_fold if key in m])
                print(f"  {key:9s} {vals.mean():.4f} +/- {vals.std():.4f}")
            model = clone(est).fit(X, y)
        else:
            strat = y if task == "classification" and np.unique(y, return_counts=True)[1].min() >= 2 else None
            X_tr, X_te, y_tr, y_te = train_test_split(X, y, test_size=args.test_size,
                                                      random_state=args.random_state, stratify=strat)
            model = clone(est).fit(X_tr, y_tr)
            print(f"held-out metrics ({len(y_te)} test samples):")
            for key, val in metrics(model, X_te, y_te).items():
                print(f"  {key:9s} {val:.4f}")
    except ValueError as exc:
        raise CLIError(str(exc)) from None
    print(f"time: {time.perf_counter() - tic:.2f} s")
    print("relevance ranking (|theta| scaled to [0, 1]):")
    _print_ranking(names, model.feature_importances_, min(args.top, len(names)))
    if args.plot:
        write_plot(args.plot, names, model.feature_importances_, f"RFFNet relevances ({args.target})")
        print(f"wrote {args.plot}")
    if args.save:
        try:
            with open(args.save, "wb") as fh:
                pickle.dump(model, fh)
        except OSError as exc:
            raise CLIError(f"cannot write {args.save}: {exc}") from None
        print(f"saved the fitted model to {args.save}")
    return 0


def write_plot(path, names, importances, title):
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise CLIError('--plot needs matplotlib (pip install "rffkern[plot]")') from None
    from rffkern.plot import relevances

    ax = relevances(importances, names, title=title)
    try:
        ax.figure.savefig(path)
    except OSError as exc:
        raise CLIError(f"cannot write {path}: {exc}") from None
    finally:
        plt.close(ax.figure)


def build_parser():
    parser = argparse.ArgumentParser(prog="python -m rffkern",
                                     description="RFFNet: interpretable random-Fourier-feature learners")
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="fit a built-in synthetic problem and show the relevances")
    demo.add_argument("--dataset", choices=sorted(_DEMOS), default="gse2", help="problem (gse2: 5 relevant of 100 features)")
    demo.add_argument("--n-samples", type=int, default=10000, help="training samples (10000)")
    _add_model_options(demo)
    fit = sub.add_parser("fit", help="fit a CSV file and print metrics and relevances")
    fit.add_argument("file", help="CSV file with a header row")
    fit.add_argument("--target", required=True, help="name of the column to predict")
    fit.add_argument("--task", choices=["regression", "classification"], default=None,
                     help="override the task chosen from the target")
    fit.add_argument("--cv", type=int, default=0, help="K-fold cross-validation instead of a held-out split")
    fit.add_argument("--test-size", type=float, default=0.2, help="held-out share (0.2)")
    fit.add_argument("--top", type=int, default=20, help="features shown in the ranking (20)")
    fit.add_argument("--plot", metavar="OUT.png", help="write a relevance bar chart (needs matplotlib)")
    fit.add_argument("--save", metavar="MODEL.pkl", help="pickle the model fitted on the training data")
    _add_model_options(fit)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; the ``rffkern`` console script and ``python -m rffkern`` call it.

    Parameters
    ----------
    argv : sequence of str, optional
        The arguments after the program name; None reads ``sys.argv``.

    Returns
    -------
    int
        The exit status: 0 on success, 2 for a usage error (reported on stderr).

    Examples
    --------
    >>> from rffkern.cli import main
    >>> main(["fit", "no-such-file.csv", "--target", "y"])  # a usage error: the file is missing
    2
    """
    args = build_parser().parse_args(argv)
    try:
        if args.command == "demo":
            return run_demo(args)
        return run_fit(args)
    except CLIError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
