"""One progress format for every estimator with ``verbose`` (rffkern._progress.ProgressLog).

Every estimator of the package that takes ``verbose`` fits a tiny problem with ``verbose=1``: it
prints at least one line, and every line is ``[<class name>] <stage> <i>/<n>: <details> (elapsed
<s> s)`` or the event form ``[<class name>] <message> (elapsed <s> s)``; ``verbose=0`` prints
nothing.
"""
import inspect
import re

import numpy as np
import pytest

import rffkern
from rffkern._progress import ProgressLog

STEP = re.compile(r"^\[(\w+)\] [a-z][\w ]* \d+/\d+: \S.* \(elapsed \d+\.\d\d s\)$")
EVENT = re.compile(r"^\[(\w+)\] [a-z]\S*( \S+)* \(elapsed \d+\.\d\d s\)$")

# Small, fast settings per estimator (the defaults of the data-dependent ones take longer).
SMALL = {
    "RFFNetRegressor": dict(n_components=20, max_iter=3),
    "RFFNetClassifier": dict(n_components=20, max_iter=3),
    "SRFFRegressor": dict(n_components=20, max_iter=3),
    "EERFRegressor": dict(n_components=20),
    "EERFClassifier": dict(n_components=20),
    "AdaptiveRFFRegressor": dict(n_components=20, n_iter=10),
    "AdaptiveRFFClassifier": dict(n_components=20, n_iter=10),
    "RFFRidge": dict(n_components=20),
    "RFFRidgeClassifier": dict(n_components=20),
}


def _verbose_estimators():
    found = []
    for name in rffkern.__all__:
        obj = getattr(rffkern, name)
        if inspect.isclass(obj) and "verbose" in inspect.signature(obj).parameters:
            found.append(obj)
    return found


def test_every_verbose_estimator_has_small_settings():
    # A new estimator with ``verbose`` must join the format test below.
    assert {cls.__name__ for cls in _verbose_estimators()} == set(SMALL)


def _data(cls):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((120, 4))
    y = np.sin(X[:, 0]) + 0.1 * rng.standard_normal(120)
    if "Classifier" in cls.__name__:
        y = (y > 0).astype(int)
    return X, y


@pytest.mark.parametrize("cls", _verbose_estimators(), ids=lambda c: c.__name__)
def test_verbose_lines_follow_one_format(cls, capsys):
    X, y = _data(cls)
    kw = dict(SMALL[cls.__name__], random_state=0, n_jobs=1)
    cls(**kw, verbose=0).fit(X, y)
    assert capsys.readouterr().out == ""
    cls(**kw, verbose=1).fit(X, y)
    lines = capsys.readouterr().out.splitlines()
    assert lines, f"{cls.__name__}(verbose=1) printed nothing"
    for line in lines:
        match = STEP.match(line) or EVENT.match(line)
        assert match, f"not in the ProgressLog format: {line!r}"
        assert match.group(1) == cls.__name__


def test_progress_log_formats(capsys):
    log = ProgressLog("Thing", verbose=1)
    log.step("epoch", 3, 10, "loss 0.5")
    log.step("inner", 1, 2, "hidden", level=2)
    log.event("early stopping: no improvement")
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 2
    assert STEP.match(out[0]) and out[0].startswith("[Thing] epoch 3/10: loss 0.5 (elapsed ")
    assert EVENT.match(out[1]) and not STEP.match(out[1])
    ProgressLog("Thing", verbose=0).event("silent")
    assert capsys.readouterr().out == ""



@pytest.mark.parametrize("cls", _verbose_estimators(), ids=lambda c: c.__name__)
@pytest.mark.parametrize("bad", ["yes", -1, 1.5])
def test_a_bad_verbose_is_refused_with_the_parameter_named(cls, bad):
    """Every estimator and rffkern.fit, with one message (rffkern.fit took -1 and 1.5 and failed on
    'yes' with "invalid literal for int()")."""
    X, y = _data(cls)
    match = r"'verbose' parameter of {} must be an int in the range \[0, inf\), an instance of 'bool'"
    with pytest.raises(ValueError, match=match.format(cls.__name__)):
        cls(**SMALL[cls.__name__], verbose=bad).fit(X, y)
    if cls.__name__ == "RFFRidge":
        with pytest.raises(ValueError, match=match.format(r"rffkern\.fit")):
            rffkern.fit(X, y, verbose=bad)
