"""The command line (``python -m rffkern`` or ``rffkern``): ``demo`` and ``fit FILE.csv --target COL``.

``demo`` fits RFFNet on a built-in synthetic problem and prints the test error, the most relevant
features against the true support, and the timing. ``fit`` reads a CSV file with a header row
(optionally gzip-, bz2- or xz-compressed, with or without a UTF-8 byte-order mark), learns the
column ``--target`` from the others with :func:`rffkern.fit` (``--model rffnet``: RFFNet alone;
classification or regression is chosen from the target by
the rule of :func:`rffkern._api.explain_task`, printed with the reason), prints held-out (or
``--cv K`` cross-validated) metrics and the relevance ranking, and optionally writes a bar chart
(``--plot``, needs matplotlib) and the pickled model (``--save``).

A user's mistake -- a bad option value, a missing file or column, a non-numeric cell, an output
path that cannot be written -- is reported as one line on stderr with exit status 2, before any
long computation; never as a traceback.
"""
from __future__ import annotations

import argparse
import bz2
import csv
import gzip
import lzma
import math
import os
import pickle
import sys
import time
import warnings
from typing import Sequence

import numpy as np

from rffkern import datasets
from rffkern._api import fit as auto_fit
from rffkern._api import task_guess_message, task_rule
from rffkern._config import _require_tqdm, config_context
from rffkern._data import constant_columns
from rffkern._version import __version__
from rffkern.plot import relevances
from rffkern.rffnet import RFFNetClassifier, RFFNetRegressor

EXIT_USAGE = 2
EXIT_INTERRUPTED = 130

#: Built-in demo problems: what the target is, and the number of features each generator draws.
_DEMOS = {
    "gse1": ("sin((x1 + x3)^2) sin(x7 x8 x9), 18 features", 18),
    "gse2": ("log((x11 + ... + x15)^2), 100 features", 100),
    "jse2": ("x1^3 + x2^3, 10 correlated features", 10),
    "jse3": ("x1 x2, 10 features", 10),
}
_DEMO_MIN_SAMPLES = 10


class CLIError(Exception):
    """A user mistake, reported as one line on stderr with exit status 2."""


# ------------------------------------------------------------------------- option value types
def _int_option(minimum=None, *, nonzero=False, maximum=None, what="an integer"):
    """An argparse ``type=`` that parses an int and checks its range.

    Parameters
    ----------
    minimum : int or None, default=None
        Smallest allowed value (None: no lower bound).
    nonzero : bool, default=False
        Refuse 0.
    maximum : int or None, default=None
        Largest allowed value (None: no upper bound).
    what : str, default="an integer"
        How the expected value is described in the message.

    Returns
    -------
    callable
        ``parse(text) -> int``; raises ``argparse.ArgumentTypeError`` (a one-line message that
        argparse prefixes with the option's name) for anything else.
    """
    if minimum is not None and maximum is not None:
        want = f"{what} from {minimum} to {maximum}"
    elif minimum is not None:
        want = f"{what} >= {minimum}"
    elif nonzero:
        want = "a non-zero integer"
    else:
        want = what

    def parse(text):
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {want}, got {text!r}") from None
        if ((minimum is not None and value < minimum) or (maximum is not None and value > maximum)
                or (nonzero and value == 0)):
            raise argparse.ArgumentTypeError(f"expected {want}, got {text!r}")
        return value

    return parse


def _float_option(low=None, high=None, *, closed="neither"):
    """An argparse ``type=`` that parses a finite float in an interval.

    Parameters
    ----------
    low, high : float or None, default=None
        The interval's ends (None: unbounded on that side).
    closed : {"neither", "left", "right", "both"}, default="neither"
        Which ends are allowed values.

    Returns
    -------
    callable
        ``parse(text) -> float``; raises ``argparse.ArgumentTypeError`` for text that is not a
        number, NaN, infinity, or a value outside the interval.
    """
    left = "[" if closed in ("left", "both") else "("
    right = "]" if closed in ("right", "both") else ")"
    if low is not None and high is not None:
        want = f"a number in {left}{low:g}, {high:g}{right}"
    elif low is not None:
        want = f"a number {'>=' if left == '[' else '>'} {low:g}"
    elif high is not None:
        want = f"a number {'<=' if right == ']' else '<'} {high:g}"
    else:
        want = "a finite number"

    def parse(text):
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {want}, got {text!r}") from None
        too_low = low is not None and (value < low or (value == low and left == "("))
        too_high = high is not None and (value > high or (value == high and right == ")"))
        if not math.isfinite(value) or too_low or too_high:
            raise argparse.ArgumentTypeError(f"expected {want}, got {text!r}")
        return value

    return parse


def _cv_option(text):
    """``--cv``: 0 (a held-out split) or a fold count of at least 2."""
    value = _int_option(0)(text)
    if value == 1:
        raise argparse.ArgumentTypeError("expected 0 (a held-out split) or a fold count >= 2, got '1'")
    return value


class _Parser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose usage errors are one line: ``PROG: error: MESSAGE (see PROG --help)``."""

    def error(self, message):
        """Print ``message`` as one line on stderr and exit with status 2.

        Parameters
        ----------
        message : str
            argparse's description of the mistake.
        """
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


# ---------------------------------------------------------------------------------- helpers
#: The RFFNet options' values when not given (``--model rffnet`` and ``demo``). ``--model auto``
#: passes only the options given: ``rffkern.fit`` sets its RFFNet variants itself (the sparse one
#: at RFFNet's own learning rate, 3e-3), and passing these defaults made the command's model
#: another one than ``rffkern.fit``'s.
MODEL_OPTION_DEFAULTS = {"n_components": 300, "alpha": 1e-4, "max_iter": 100, "batch_size": 32,
                         "learning_rate": 1e-3}


def _model_option(args, name):
    return getattr(args, name, MODEL_OPTION_DEFAULTS[name])


def _estimator_params(args, given_only=False):
    """The RFFNet options with their defaults, or (``given_only``) only those on the command line."""
    options = {name: _model_option(args, name) for name in MODEL_OPTION_DEFAULTS
               if not given_only or hasattr(args, name)}
    return dict(options, random_state=args.random_state, n_jobs=args.n_jobs, verbose=args.verbose)


def _add_model_options(p):
    # the defaults are MODEL_OPTION_DEFAULTS, filled in by _estimator_params: an option left out is
    # absent from the namespace (argparse.SUPPRESS), so that --model auto can tell
    p.add_argument("--n-components", type=_int_option(1), default=argparse.SUPPRESS, metavar="S",
                   help="random features s (300)")
    p.add_argument("--alpha", type=_float_option(0, closed="left"), default=argparse.SUPPRESS, metavar="A",
                   help="penalty on the output weights, >= 0 (1e-4)")
    p.add_argument("--max-iter", type=_int_option(1), default=argparse.SUPPRESS, metavar="N",
                   help="maximum epochs (100)")
    p.add_argument("--batch-size", type=_int_option(1), default=argparse.SUPPRESS, metavar="N",
                   help="mini-batch size (32)")
    p.add_argument("--learning-rate", type=_float_option(0), default=argparse.SUPPRESS, metavar="LR",
                   help="Adam step size, > 0 (1e-3; with --model auto, RFFNet's own per variant)")
    p.add_argument("--random-state", type=_int_option(0, maximum=2**32 - 1), default=0, metavar="SEED",
                   help="seed (0)")
    p.add_argument("--n-jobs", type=_int_option(nonzero=True), default=None, metavar="N",
                   help="threads: a count, -1 for all cores (default: OpenMP's limit, at most the cores)")
    p.add_argument("--verbose", action="store_true", help="print one line per epoch")
    p.add_argument("--progress-bar", action="store_true",
                   help="with --verbose: progress bars (tqdm, on stderr) instead of the lines")


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


def _total_memory():
    """Physical memory in bytes, or None where the OS does not say."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):
        return None


def _check_fits_in_memory(nbytes, what, option):
    """Refuse a run whose arrays alone would need more than half of the physical memory."""
    total = _total_memory()
    if total is not None and nbytes > total / 2:
        raise CLIError(f"{what} needs about {nbytes / 2**30:.1f} GiB, more than half of this machine's "
                       f"{total / 2**30:.1f} GiB; lower {option}")


# -------------------------------------------------------------------------------------- demo
def run_demo(args):
    """The ``demo`` command: fit RFFNet on a synthetic problem and report it.

    Parameters
    ----------
    args : argparse.Namespace
        The parsed options of ``demo``.

    Returns
    -------
    int
        The exit status: 0 on success.
    """
    description, d = _DEMOS[args.dataset]
    # X (float64) plus the estimator's standardized float32 copy and the test set
    _check_fits_in_memory((args.n_samples + 2000) * d * 8 * 3, f"--n-samples {args.n_samples}", "--n-samples")
    _check_fits_in_memory(_model_option(args, "n_components") * d * 8 * 8,
                          f"--n-components {_model_option(args, 'n_components')}",
                          "--n-components")
    make = getattr(datasets, f"make_{args.dataset}")
    X, y, support = make(args.n_samples, random_state=args.random_state)
    X_test, y_test, _ = make(2000, random_state=args.random_state + 10_000)
    print(f"rffkern demo: {args.dataset} = {description}; noise sd 0.1")
    print(f"  {X.shape[0]} training samples, {X_test.shape[0]} test samples")
    model = RFFNetRegressor(**_estimator_params(args))
    tic = time.perf_counter()
    try:
        model.fit(X, y)
    except ValueError as exc:
        raise CLIError(str(exc)) from None
    elapsed = time.perf_counter() - tic
    pred = model.predict(X_test)
    mse = float(np.mean((pred - y_test) ** 2))
    base = float(np.mean((y_test - y.mean()) ** 2))
    starts = model.start_losses_
    dropped = 0 if starts is None else model._epochs_in_dropped_starts
    after = "" if starts is None else f" after {len(starts)} starts"
    print(f"  fit: {elapsed:.2f} s, {model.n_iter_} epochs (best {model.best_epoch_}){after}, "
          f"{(model.n_iter_ + dropped) * X.shape[0] * 0.9 / max(elapsed, 1e-9):,.0f} samples/s")
    print(f"  test MSE {mse:.4f}  (predicting the mean: {base:.4f}; noise floor 0.0100)")
    names = [f"x{j + 1}" for j in range(X.shape[1])]
    k = len(support)
    top = np.argsort(-model.feature_importances_, kind="stable")[:k]
    hits = len(set(top.tolist()) & set(support.tolist()))
    print(f"  true support: {', '.join(names[j] for j in support)}; "
          f"{hits}/{k} of them are among the top {k} relevances")
    print("  relevance ranking (RMS of df/dx_j per unit of x_j's deviation, scaled to [0, 1]):")
    _print_ranking(names, model.feature_importances_, max(k + 3, 8), support=set(support.tolist()))
    return 0


# ------------------------------------------------------------------------------- CSV reading
_MAGIC = ((b"\x1f\x8b", gzip.open), (b"BZh", bz2.open), (b"\xfd7zXZ\x00", lzma.open))


def _open_text(path):
    """``path`` opened as UTF-8 text (a byte-order mark skipped), decompressed when it is gzip,
    bz2 or xz data -- told by its first bytes, not its name, so ``data.csv`` that is gzipped and
    ``data.csv.gz`` that is not are both read."""
    with open(path, "rb") as fh:
        head = fh.read(6)
    opener = next((op for magic, op in _MAGIC if head.startswith(magic)), open)
    return opener(path, "rt", encoding="utf-8-sig", newline="")


#: The longest header line read (in characters): a million columns of 60-character names. Read
#: whole, a file of one 1 GB line (no line breaks) is split into its fields in memory and runs out
#: of it before any check.
MAX_HEADER_CHARS = 64 * 2**20


def _header_lines(fh, path):
    """The lines of ``fh``, each read at most ``MAX_HEADER_CHARS`` at a time: a ``CLIError`` for a
    longer one (no header row of names is that long: a malformed file)."""
    while True:
        line = fh.readline(MAX_HEADER_CHARS + 1)
        if len(line) > MAX_HEADER_CHARS:
            raise CLIError(f"the header line of {path} is longer than {MAX_HEADER_CHARS:,} characters: it should be a "
                           "row naming the columns, one row per line; is the file CSV text with line breaks?")
        if not line:
            return
        yield line


def _read_header(path):
    """The stripped column names of ``path``'s first non-blank line, and the lines up to it."""
    try:
        with _open_text(path) as fh:
            reader = csv.reader(_header_lines(fh, path), skipinitialspace=True)
            for row in reader:
                if row and any(cell.strip() for cell in row):
                    return [cell.strip() for cell in row], reader.line_num
    except FileNotFoundError:
        raise CLIError(f"no such file: {path}") from None
    except IsADirectoryError:
        raise CLIError(f"{path} is a directory, not a CSV file") from None
    except UnicodeDecodeError as exc:
        raise _not_utf8(path, exc) from None
    except (OSError, EOFError, csv.Error, lzma.LZMAError) as exc:
        raise CLIError(f"cannot read {path}: {exc}") from None
    raise CLIError(f"{path} is empty; it needs a header row naming the columns and data rows")


def _not_utf8(path, exc):
    return CLIError(f"cannot read {path}: it is not UTF-8 text ({exc.reason} at byte {exc.start}); "
                    "save it as UTF-8 CSV")


def _check_header(path, header, target):
    """Check the column names and return the target's index."""
    if len(header) == 1:
        for sep in (";", "\t", "|"):
            if sep in header[0]:
                raise CLIError(f"{path} has a single column {header[0]!r}: it seems to be separated by "
                               f"{sep!r}; rffkern reads comma-separated files")
    empty = [j + 1 for j, name in enumerate(header) if not name]
    if empty:
        raise CLIError(f"the header of {path} has an empty column name at position(s) "
                       f"{', '.join(map(str, empty[:5]))}; name every column")
    seen: dict[str, int] = {}
    duplicates = []
    for j, name in enumerate(header):
        if name in seen:
            duplicates.append(f"{name!r} (columns {seen[name] + 1} and {j + 1})")
        else:
            seen[name] = j
    if duplicates:
        raise CLIError(f"duplicate column names in {path}: {'; '.join(duplicates[:5])}; "
                       "every column needs its own name")
    if target not in seen:
        shown = ", ".join(header[:30]) + (f", ... ({len(header)} columns)" if len(header) > 30 else "")
        hint = ""
        if all(_is_number(name) for name in header):
            hint = " (the first line holds numbers: the file needs a header row naming the columns)"
        raise CLIError(f"column {target!r} not found in {path}; columns are: {shown}{hint}")
    if len(header) == 1:
        raise CLIError(f"{path} has no feature columns besides the target {target!r}")
    return seen[target]


def _is_number(text):
    if "_" in text:  # Python's float() takes 1_000, NumPy's reader does not
        return False
    try:
        float(text)
    except ValueError:
        return False
    return True


def _diagnose(path, header, t, numpy_message):
    """Find the first malformed rows or non-numeric feature cells and raise a CLIError naming them.

    Only called after NumPy's reader has failed, so its pure-Python pass costs nothing on good files.
    """
    width = len(header)
    bad_cells: list[str] = []
    with _open_text(path) as fh:
        reader = csv.reader(fh, skipinitialspace=True)
        header_seen = False
        for row in reader:
            if not header_seen:
                header_seen = bool(row) and any(cell.strip() for cell in row)
                continue
            if not row:
                continue  # empty lines are skipped, as NumPy's reader skips them
            line = reader.line_num
            if len(row) != width:
                blank = " (a line of spaces)" if not any(cell.strip() for cell in row) else ""
                fields = f"{len(row)} field{'s' if len(row) != 1 else ''}"
                raise CLIError(f"line {line} of {path} has {fields}{blank} but the header has "
                               f"{width} columns; every row needs one value per column")
            if len(bad_cells) < 5:
                for j, cell in enumerate(row):
                    if j != t and not _is_number(cell.strip()):
                        bad_cells.append(f"line {line}, column {header[j]!r}: {cell.strip()!r}")
                        if len(bad_cells) == 5:
                            break
    if bad_cells:
        missing = any(c.endswith(": ''") for c in bad_cells)
        hint = "impute or drop the missing values first" if missing else "encode or drop them first"
        raise CLIError(f"non-numeric values in feature column(s) of {path}: {'; '.join(bad_cells)}; "
                       f"{hint} (feature columns must be numeric)")
    # NumPy's advice on its own ``usecols`` argument means nothing on the command line
    raise CLIError(f"cannot read {path}: {numpy_message.split('; use `usecols`')[0]}")


def read_csv(path, target, weight=None):
    """(X, y, feature names) from a CSV file with a header row.

    NumPy's ``loadtxt`` reads the values (fields quoted with ``"``, a UTF-8 byte-order mark,
    gzip/bz2/xz compression told by the file's first bytes); empty lines are skipped. Feature
    columns must be numeric; a target that is not numeric is read as class labels.

    Parameters
    ----------
    path : str or os.PathLike
        The CSV file.
    target : str
        Name of the column to predict.
    weight : str or None, default=None
        Name of a column of row weights (``--weight``): it stays among the returned columns, and
        NaN or infinity in it is reported as in the weights, not in a feature.

    Returns
    -------
    X : ndarray of shape (n_samples, n_features)
        The other columns, in float64, in file order.
    y : ndarray of shape (n_samples,)
        The target: int64 when every value is a whole number, float64 for other numbers, str for
        text labels.
    names : list of str
        The feature columns' names.

    Raises
    ------
    CLIError
        For a missing, unreadable or empty file, duplicate or missing column names, rows of the
        wrong length, non-numeric feature cells (named by line and column), NaN or infinity.

    Examples
    --------
    >>> import os, tempfile
    >>> from rffkern.cli import read_csv
    >>> path = os.path.join(tempfile.mkdtemp(), "pets.csv")
    >>> with open(path, "w") as fh:
    ...     _ = fh.write('weight,"height, cm",kind\\n4.1,25,cat\\n30,60,dog\\n')
    >>> X, y, names = read_csv(path, "kind")
    >>> X.tolist(), y.tolist(), names
    ([[4.1, 25.0], [30.0, 60.0]], ['cat', 'dog'], ['weight', 'height, cm'])
    """
    header, header_lines = _read_header(path)
    t = _check_header(path, header, target)
    names = [h for j, h in enumerate(header) if j != t]
    try:
        table, labels = _load_table(path, header, t, header_lines)
    except UnicodeDecodeError as exc:  # a ValueError: caught first
        raise _not_utf8(path, exc) from None
    except MemoryError:
        raise CLIError(f"out of memory reading {path} ({os.path.getsize(path) / 2**30:.3g} GiB on disk) as a table of "
                       f"{len(header)} columns: the data do not fit in memory as float64, or a line is malformed "
                       "(far longer than a row of that many values)") from None
    except (OSError, EOFError, lzma.LZMAError, csv.Error) as exc:
        raise CLIError(f"cannot read {path}: {exc}") from None
    if table.shape[0] == 0:
        raise CLIError(f"{path} has a header row but no data rows")
    if table.shape[1] != len(header):
        raise CLIError(f"the rows of {path} have {table.shape[1]} fields but the header has {len(header)} "
                       "columns; every row needs one value per column")
    X = np.ascontiguousarray(np.delete(table, t, axis=1))
    finite = np.isfinite(X).all(axis=0)
    if weight in names and not finite[names.index(weight)]:
        raise CLIError(f"the --weight column {weight!r} of {path} contains NaN or infinite values; "
                       "give every row a weight")
    if not finite.all():
        bad = [names[j] for j in np.flatnonzero(~finite)[:5]]
        raise CLIError(f"feature column(s) {', '.join(map(repr, bad))} of {path} contain NaN or infinite "
                       "values; impute or drop them first")
    if labels is not None:
        if "" in labels:
            raise CLIError(f"the target column {target!r} has empty cells")
        codes = table[:, t].astype(np.intp)
        return X, np.array(list(labels), dtype=str)[codes], names
    y = table[:, t]
    if not np.isfinite(y).all():
        raise CLIError(f"the target column {target!r} contains NaN or infinite values (missing targets?); "
                       "drop those rows first")
    if np.all(y == np.round(y)) and np.abs(y).max() < 2**53:
        y = y.astype(np.int64)
    return X, y, names


def _weight_column(X, names, column, target, path):
    """``(X without the column, its values as weights, the other names)``: a ``CLIError`` where the
    column is missing, is the target, or holds a negative weight (NaN and infinity were refused by
    :func:`read_csv`), or where every weight is 0."""
    if column == target:
        raise CLIError(f"--weight {column!r} is the target column; name a column of row weights")
    if column not in names:
        raise CLIError(f"--weight column {column!r} not found in {path}; columns are: {', '.join(names[:30])}")
    j = names.index(column)
    w = X[:, j].copy()
    if (w < 0).any():
        i = int(np.flatnonzero(w < 0)[0])
        raise CLIError(f"--weight column {column!r} holds a negative weight ({w[i]:g} on data row {i + 1}); "
                       "weights must be >= 0")
    if not w.sum() > 0:
        raise CLIError(f"--weight column {column!r} is 0 on every row")
    if X.shape[1] == 1:
        raise CLIError(f"{path} has no feature columns besides the target {target!r} and the weights {column!r}")
    return np.ascontiguousarray(np.delete(X, j, axis=1)), w, names[:j] + names[j + 1:]


def _check_classes(y, w, task, reason, target):
    """A ``CLIError`` for a single class (on the rows of positive weight ``w``, where given), in the
    command's own words: the models would say ``task='regression'`` for ``--task regression``."""
    labels = np.unique(y if w is None else y[w > 0])
    if task != "classification" or labels.size > 1:
        return
    where = "" if w is None else " on the rows of positive --weight"
    hint = "; pass --task regression to fit a constant" if y.dtype.kind in "iuf" else ""
    raise CLIError(f"column {target!r} holds a single value ({labels[0].item()!r}){where}: as a class label "
                   f"({reason}) that is one class, and a classifier needs at least 2{hint}")


def _load_table(path, header, t, header_lines):
    """All values of ``path`` after its header as float64, by NumPy's reader.

    A numeric table is read in one pass. If that fails, the target column is read as labels
    (each distinct text gets an integer code); if that fails too, :func:`_diagnose` names the
    problem. Returns ``(table, labels)``, ``labels`` the list of label texts by code, or None
    for a numeric target.
    """
    options = dict(delimiter=",", quotechar='"', comments=None, skiprows=header_lines, ndmin=2)
    codes: dict[str, int] = {}

    def label_code(text):
        return codes.setdefault(text.strip(), len(codes))

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # loadtxt's note on a file without data rows
        try:
            with _open_text(path) as fh:
                return np.loadtxt(fh, dtype=np.float64, **options), None
        except UnicodeDecodeError:
            raise
        except ValueError as exc:
            numpy_message = str(exc)
        try:
            with _open_text(path) as fh:
                return np.loadtxt(fh, dtype=np.float64, converters={t: label_code}, **options), list(codes)
        except UnicodeDecodeError:
            raise
        except ValueError:
            _diagnose(path, header, t, numpy_message)


# ------------------------------------------------------------------------------ output paths
def check_output_path(path, option):
    """Check, before any long computation, that ``path`` can be written.

    The directory must exist and the file must be creatable (it is opened for appending, which
    changes nothing in an existing file; a file that did not exist is removed again).

    Parameters
    ----------
    path : str
        The file to be written.
    option : str
        The option that named it, for the message.

    Raises
    ------
    CLIError
        If the directory does not exist, ``path`` is a directory, or the file cannot be opened.
    """
    directory = os.path.dirname(os.path.abspath(path))
    if os.path.isdir(path):
        raise CLIError(f"{option} {path}: is a directory; give a file name")
    if not os.path.isdir(directory):
        raise CLIError(f"{option} {path}: the directory {directory} does not exist")
    existed = os.path.exists(path)
    try:
        with open(path, "ab"):
            pass
    except OSError as exc:
        raise CLIError(f"{option} {path}: cannot write there ({exc.strerror or exc})") from None
    if not existed:
        os.remove(path)


def check_plot_path(path):
    """Check that ``--plot PATH`` can be drawn and written: matplotlib, a known format, a writable place.

    Parameters
    ----------
    path : str
        The image file; its suffix chooses the format.

    Raises
    ------
    CLIError
        If matplotlib is not installed (with the install command), the suffix is not a format
        matplotlib writes, or the file cannot be written.
    """
    try:
        import matplotlib
    except ImportError:
        raise CLIError('--plot needs matplotlib: pip install "rffkern[plot]"') from None
    check_output_path(path, "--plot")
    matplotlib.use("Agg")
    from matplotlib.backend_bases import FigureCanvasBase

    formats = FigureCanvasBase.get_supported_filetypes()
    suffix = os.path.splitext(path)[1].lower().lstrip(".")
    if suffix not in formats:
        known = ", ".join(f".{f}" for f in sorted(formats))
        got = f"'.{suffix}'" if suffix else "no suffix"
        raise CLIError(f"--plot {path}: the file name must end in an image format ({known}), got {got}")


def write_plot(path, names, importances, title):
    """Draw the relevance bar chart into ``path`` (needs matplotlib).

    Parameters
    ----------
    path : str
        The image file.
    names : list of str
        Feature names.
    importances : ndarray of shape (n_features,)
        The model's ``feature_importances_``.
    title : str
        The chart's title.
    """
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise CLIError('--plot needs matplotlib: pip install "rffkern[plot]"') from None
    ax = relevances(importances, names, title=title)
    try:
        ax.figure.savefig(path)
    except (OSError, ValueError) as exc:
        raise CLIError(f"cannot write {path}: {exc}") from None
    finally:
        plt.close(ax.figure)


# -------------------------------------------------------------------------------------- fit
def _metrics(model, Xt, yt, wt, task):
    """The held-out metrics of ``model`` on the rows ``Xt``, ``yt`` (weights ``wt``): accuracy,
    ROC AUC and log loss where defined for classes, MSE and R^2 for regression."""
    from sklearn.metrics import accuracy_score, log_loss, mean_squared_error, r2_score, roc_auc_score

    if task == "classification":
        out = {"accuracy": accuracy_score(yt, model.predict(Xt), sample_weight=wt)}
        if np.unique(yt).size == model.classes_.size:
            if hasattr(model, "predict_proba"):
                proba = model.predict_proba(Xt)
                out["roc_auc"] = (roc_auc_score(yt, proba[:, 1], sample_weight=wt) if proba.shape[1] == 2 else
                                  roc_auc_score(yt, proba, multi_class="ovr", labels=model.classes_,
                                                sample_weight=wt))
                out["log_loss"] = log_loss(yt, proba, labels=model.classes_, sample_weight=wt)
            elif model.classes_.size == 2:  # a ridge classifier: its decision scores rank the rows
                out["roc_auc"] = roc_auc_score(yt, model.decision_function(Xt), sample_weight=wt)
        return out
    pred = model.predict(Xt)
    return {"mse": mean_squared_error(yt, pred, sample_weight=wt), "r2": r2_score(yt, pred, sample_weight=wt)}


def _print_model(model):
    """Print the fitted model's class (and ``rffkern.fit``'s choice); return the class name."""
    kind = type(model).__name__
    if hasattr(model, "selection_report_"):
        report = model.selection_report_
        lead = report["rffnet_lead"]
        kernel = report.get("kernel", "gaussian") + ("" if report.get("nu") is None else f" (nu={report['nu']:g})")
        print(f"model: {kind}, {kernel} kernel (rffkern.fit chose {report['chosen']!r} on its held-out rows: "
              f"RFFNet's lead in held-out loss {lead['mean']:+.4f} +- {lead['standard_error']:.4f}; "
              f"it needs more than one standard error)")
    else:
        print(f"model: {kind}")
    return kind


def run_fit(args):
    """The ``fit`` command: read the CSV, fit the model, print metrics and relevances.

    ``--model auto`` (the default) fits with :func:`rffkern.fit`, ``--model rffnet`` fits RFFNet
    alone with the command's RFFNet options.

    Parameters
    ----------
    args : argparse.Namespace
        The parsed options of ``fit``.

    Returns
    -------
    int
        The exit status: 0 on success.
    """
    from sklearn.base import clone
    from sklearn.model_selection import KFold, StratifiedKFold, train_test_split

    # outputs first: a typo in --plot/--save must not cost a long fit
    if args.plot and args.save and os.path.abspath(args.plot) == os.path.abspath(args.save):
        raise CLIError("--plot and --save name the same file")
    if args.plot:
        check_plot_path(args.plot)
    if args.save:
        check_output_path(args.save, "--save")

    X, y, names = read_csv(args.file, args.target, weight=args.weight)
    w = None
    if args.weight is not None:
        X, w, names = _weight_column(X, names, args.weight, args.target, args.file)
    if args.task:
        task, reason = args.task, "set by --task"
    else:
        try:
            task, reason, guessed = task_rule(y)
        except ValueError as exc:
            raise CLIError(str(exc)) from None
        if guessed:
            print(f"note: {task_guess_message(task, reason, '--task {}')}")
    if task == "regression" and y.dtype.kind not in "iuf":
        raise CLIError(f"regression needs a numeric target; column {args.target!r} holds text labels")
    _check_classes(y, w, task, reason, args.target)
    if args.cv > X.shape[0]:
        raise CLIError(f"--cv {args.cv} needs at least {args.cv} samples; {args.file} has {X.shape[0]}")
    _check_fits_in_memory(_model_option(args, "n_components") * X.shape[1] * 8 * 8,
                          f"--n-components {_model_option(args, 'n_components')}",
                          "--n-components")
    est = (RFFNetClassifier if task == "classification" else RFFNetRegressor)(**_estimator_params(args))
    weighted = "" if w is None else f", rows weighted by {args.weight!r}"
    print(f"{args.file}: {X.shape[0]} samples, {X.shape[1]} features, target {args.target!r}{weighted} "
          f"-> {task} ({reason})")
    constant = np.flatnonzero(constant_columns(X))
    if constant.size:  # every estimator ignores them (the rows say nothing about them)
        shown = ", ".join(str(names[j]) for j in constant[:10]) + (", ..." if constant.size > 10 else "")
        print(f"  {constant.size} column(s) hold one value on every row and are ignored: {shown}")

    def rows(idx):
        return None if w is None else w[idx]

    def fit_one(Xa, ya, wa):
        if args.model == "rffnet":
            kernel = {} if args.kernel == "auto" else {"kernel": args.kernel, "nu": args.nu}
            return clone(est).set_params(**kernel).fit(Xa, ya, sample_weight=wa)
        params = _estimator_params(args, given_only=True)
        common = {key: params.pop(key) for key in ("random_state", "n_jobs", "verbose")}
        # the rest go to its RFFNet stage
        return auto_fit(Xa, ya, sample_weight=wa, task=task, kernel=args.kernel, nu=args.nu, **common, **params)

    def check_test_weights(test_sets):  # before any fit
        for te in test_sets:
            if w is not None and not w[te].sum() > 0:
                raise CLIError(f"every one of the {len(te)} test rows has weight 0 in --weight {args.weight!r}: "
                               "no metric is defined (a larger --test-size or fewer --cv folds)")

    tic = time.perf_counter()
    try:
        if args.cv:
            split = (StratifiedKFold if task == "classification" else KFold)(
                args.cv, shuffle=True, random_state=args.random_state)
            folds = list(split.split(X, y))
            check_test_weights([te for _, te in folds])
            per_fold = [_metrics(fit_one(X[tr], y[tr], rows(tr)), X[te], y[te], rows(te), task) for tr, te in folds]
            print(f"{args.cv}-fold cross-validation{' (weighted metrics)' if w is not None else ''}:")
            for key in per_fold[0]:
                vals = np.array([m[key] for m in per_fold if key in m])
                print(f"  {key:9s} {vals.mean():.4f} +/- {vals.std():.4f}")
            model = fit_one(X, y, w)
        else:
            strat = y if task == "classification" and np.unique(y, return_counts=True)[1].min() >= 2 else None
            idx_tr, idx_te = train_test_split(np.arange(len(y)), test_size=args.test_size,
                                              random_state=args.random_state, stratify=strat)
            check_test_weights([idx_te])
            model = fit_one(X[idx_tr], y[idx_tr], rows(idx_tr))
            weighted = ", weighted" if w is not None else ""
            print(f"held-out metrics ({len(idx_te)} test samples{weighted}):")
            for key, val in _metrics(model, X[idx_te], y[idx_te], rows(idx_te), task).items():
                print(f"  {key:9s} {val:.4f}")
    except ValueError as exc:
        raise CLIError(str(exc)) from None
    print(f"time: {time.perf_counter() - tic:.2f} s")
    kind = _print_model(model)
    print("relevance ranking (RMS of df/dx_j per unit of x_j's deviation, scaled to [0, 1]):")
    _print_ranking(names, model.feature_importances_, min(args.top, len(names)))
    if args.plot:
        write_plot(args.plot, names, model.feature_importances_, f"{kind} relevances ({args.target})")
        print(f"wrote {args.plot}")
    if args.save:
        try:
            with open(args.save, "wb") as fh:
                pickle.dump(model, fh)
        except OSError as exc:
            raise CLIError(f"cannot write {args.save}: {exc}") from None
        print(f"saved the fitted model to {args.save}")
    return 0


def _version():
    return __version__


def _one_line_warning(message, category, filename, lineno, file=None, line=None):
    print(f"warning: {message}", file=sys.stderr if file is None else file)


def _prog():
    """``rffkern`` when run as the installed script, else ``python -m rffkern``."""
    return "rffkern" if os.path.basename(sys.argv[0] or "") == "rffkern" else "python -m rffkern"


def build_parser():
    """The argument parser of both commands.

    Returns
    -------
    argparse.ArgumentParser
        Every numeric option is parsed and range-checked by its ``type=``, so a bad value stops
        the command line before anything runs (one line on stderr, exit status 2).
    """
    parser = _Parser(prog=_prog(), description="RFFNet: interpretable random-Fourier-feature learners")
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    demo = sub.add_parser("demo", help="fit a built-in synthetic problem and show the relevances")
    demo.add_argument("--dataset", choices=sorted(_DEMOS), default="gse2",
                      help="problem (gse2: 5 relevant of 100 features)")
    demo.add_argument("--n-samples", type=_int_option(_DEMO_MIN_SAMPLES), default=10000, metavar="N",
                      help=f"training samples, >= {_DEMO_MIN_SAMPLES} (10000)")
    _add_model_options(demo)
    fit = sub.add_parser("fit", help="fit a CSV file and print metrics and relevances")
    fit.add_argument("file", help="CSV file with a header row (.csv, .csv.gz, .csv.bz2, .csv.xz)")
    fit.add_argument("--target", required=True, metavar="COLUMN", help="name of the column to predict")
    fit.add_argument("--weight", metavar="COLUMN",
                     help="name of a column of non-negative row weights (sample_weight of the fit and the metrics)")
    fit.add_argument("--task", choices=["regression", "classification"], default=None,
                     help="override the task chosen from the target")
    fit.add_argument("--model", choices=["auto", "rffnet"], default="auto",
                     help="auto (default): rffkern.fit, a tuned kernel ridge against RFFNet, the better "
                          "on a held-out 20%% of the training rows (the RFFNet options below apply to its "
                          "RFFNet stage); rffnet: RFFNet alone")
    fit.add_argument("--kernel", choices=["auto", "gaussian", "laplace", "cauchy", "matern"], default="auto",
                     help="auto (default): the Gaussian, or a Matérn kernel where the width search finds it "
                          "better (--model auto; RFFNet alone takes the Gaussian); the others fix it")
    fit.add_argument("--nu", type=_float_option(0), default=1.5, metavar="NU",
                     help="the Matérn kernel's smoothness with --kernel matern, > 0 (1.5)")
    fit.add_argument("--cv", type=_cv_option, default=0, metavar="K",
                     help="K-fold cross-validation (K >= 2) instead of a held-out split")
    fit.add_argument("--test-size", type=_float_option(0, 1), default=0.2, metavar="FRACTION",
                     help="held-out share, in (0, 1) (0.2)")
    fit.add_argument("--top", type=_int_option(1), default=20, metavar="N",
                     help="features shown in the ranking (20)")
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
        The exit status: 0 on success; 2 for a usage error or a user mistake (a bad option
        value, a missing file or column, a non-numeric cell, an output path that cannot be
        written), reported as one line on stderr; 130 when interrupted (Ctrl-C); 1 when the
        output pipe was closed.

    Examples
    --------
    >>> from rffkern.cli import main
    >>> main(["fit", "no-such-file.csv", "--target", "y"])  # a usage error: the file is missing
    2
    """
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exc:  # argparse has printed its message (or the help)
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE
    with warnings.catch_warnings():
        warnings.showwarning = _one_line_warning  # restored on exit: main() may be called from Python
        try:
            bars = True if args.progress_bar else None
            if bars:
                try:
                    _require_tqdm()
                except ImportError as exc:
                    raise CLIError(str(exc)) from None
            with config_context(progress_bar=bars):
                if args.command == "demo":
                    return run_demo(args)
                return run_fit(args)
        except CLIError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return EXIT_USAGE
        except MemoryError:
            print("error: out of memory; lower --n-components or use a smaller data set", file=sys.stderr)
            return EXIT_USAGE
        except KeyboardInterrupt:
            print("interrupted", file=sys.stderr)
            return EXIT_INTERRUPTED
        except BrokenPipeError:
            # the reader went away (``| head``): stop quietly, as Unix tools do, and keep Python's
            # final flush of stdout from failing again
            try:
                os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            except (OSError, ValueError, AttributeError):
                pass
            return 1
