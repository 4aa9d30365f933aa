"""Progress bars (``rffkern.set_config(progress_bar=True)``): the steps of every estimator's fit move
tqdm bars instead of printing lines, the events stay lines, every bar is closed when the fit
returns, and the model does not change. Skipped where tqdm is not installed (the ``test`` extra
installs it).
"""
import re

import numpy as np
import pytest

import rffkern
from rffkern._progress import ProgressLog
from test_verbose import EVENT, SMALL, STEP, _data, _verbose_estimators

tqdm = pytest.importorskip("tqdm")
BAR = re.compile(r"\[(\w+)\] ([a-z][\w ]*): +\d+%\|")


def _open_bars():
    return [bar for bar in list(getattr(tqdm.tqdm, "_instances", ())) if not bar.disable]


@pytest.mark.parametrize("cls", _verbose_estimators(), ids=lambda c: c.__name__)
def test_progress_bars_replace_the_step_lines(cls, capsys):
    """With progress bars on, a fit's steps move bars named after the estimator (on stderr), its
    events stay lines of the ProgressLog format on stdout, every bar is closed when the fit returns
    and the model is the one fitted without bars."""
    X, y = _data(cls)
    kw = dict(SMALL[cls.__name__], random_state=0, n_jobs=1)
    plain = cls(**kw, verbose=1).fit(X, y)
    capsys.readouterr()
    with rffkern.config_context(progress_bar=True):
        model = cls(**kw, verbose=1).fit(X, y)
        assert _open_bars() == []
        cls(**kw, verbose=0).fit(X, y)
        quiet = capsys.readouterr()
    captured_out, captured_err = quiet.out, quiet.err
    assert rffkern.get_config()["progress_bar"] is False
    bars = BAR.findall(captured_err)
    assert bars and {who for who, _ in bars} == {cls.__name__}
    for line in captured_out.splitlines():
        assert EVENT.match(line) and not STEP.match(line), f"not an event line: {line!r}"
    np.testing.assert_array_equal(model.predict(X), plain.predict(X))


def test_progress_bars_print_nothing_at_verbose_0(capsys):
    X, y = _data(rffkern.RFFNetRegressor)
    with rffkern.config_context(progress_bar=True):
        rffkern.RFFNetRegressor(**SMALL["RFFNetRegressor"], random_state=0).fit(X, y)
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err == ""


def test_progress_log_bars(capsys):
    import pickle

    with rffkern.config_context(progress_bar=True):
        log = ProgressLog("Thing", verbose=1)
        log.step("epoch", 1, 10, "loss 0.9")
        log.step("epoch", 2, 10, "loss 0.5")
        first = log._bars["epoch"]
        assert first.n == 2 and first.total == 10 and "loss 0.5" in first.postfix
        log.event("learning rate lowered")  # a line above the bar; the loop goes on
        assert log._bars["epoch"] is first
        log.step("epoch", 1, 10)  # a step that does not move forward: a new loop, a new bar
        assert log._bars["epoch"] is not first and first.disable  # (tqdm disables a closed bar)
        log.step("width", 3, 3, "chose 2")  # its last step closes it
        assert "width" not in log._bars
        log.step("epoch", 4, 10)
        copy = pickle.loads(pickle.dumps(log))  # without its open bar
        assert copy._bars == {} and "epoch" in log._bars
        log.close()
        assert log._bars == {} and _open_bars() == []
        log.step("inner", 1, 2, level=2)  # below the log's verbose: no bar
        assert log._bars == {}
    captured = capsys.readouterr()
    assert captured.out.startswith("[Thing] learning rate lowered (elapsed ")
    assert "[Thing] epoch:" in captured.err and "[Thing] width: 100%" in captured.err


def test_set_config_checks_its_values(monkeypatch):
    with pytest.raises(TypeError, match="progress_bar must be True, False or None"):
        rffkern.set_config(progress_bar="yes")
    with pytest.raises(TypeError):
        rffkern.set_config(progress_bar=1)
    monkeypatch.setitem(__import__("sys").modules, "tqdm", None)  # as if tqdm were not installed
    with pytest.raises(ImportError, match=r"pip install \"rffkern\[progress\]\""):
        rffkern.set_config(progress_bar=True)
    rffkern.set_config(progress_bar=False)  # needs nothing
    assert rffkern.get_config() == {"progress_bar": False}


def test_config_context_restores_on_error():
    with pytest.raises(RuntimeError):
        with rffkern.config_context(progress_bar=True):
            assert rffkern.get_config()["progress_bar"] is True
            raise RuntimeError("inside")
    assert rffkern.get_config()["progress_bar"] is False
    rffkern.set_config(progress_bar=True)
    try:
        with rffkern.config_context():  # None leaves it
            assert rffkern.get_config()["progress_bar"] is True
    finally:
        rffkern.set_config(progress_bar=False)


def test_cli_progress_bar(capsys, monkeypatch):
    from rffkern.cli import main

    args = ["demo", "--dataset", "jse3", "--n-samples", "300", "--max-iter", "3", "--n-jobs", "1"]
    assert main([*args, "--verbose", "--progress-bar"]) == 0
    captured = capsys.readouterr()
    assert "[RFFNetRegressor] epoch:" in captured.err and "[RFFNetRegressor] epoch 1/" not in captured.out
    assert rffkern.get_config()["progress_bar"] is False
    monkeypatch.setitem(__import__("sys").modules, "tqdm", None)
    assert main([*args, "--verbose", "--progress-bar"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: progress_bar=True needs tqdm") and "\n" not in err
