"""One progress format for every long fit (``verbose`` > 0).

Every estimator prints lines of the form::

    [RFFNetRegressor] epoch 3/100: train loss 0.412, validation loss 0.455 (elapsed 0.21 s)
    [RFFNetRegressor] early stopping: no improvement for 10 epochs; best epoch 27 (elapsed 1.93 s)

that is ``[<who>] <stage> <i>/<n>: <details> (elapsed <seconds> s)`` for a step of a loop with a
known length, and ``[<who>] <message> (elapsed <seconds> s)`` for an event. Lines go to stdout and
are flushed at once, so they interleave correctly with a notebook's or a terminal's output.

With ``rffkern.set_config(progress_bar=True)`` the steps move tqdm bars instead, one per loop
(``[<who>] <stage>``, ``i`` of ``n``, the step's details beside it), and the events are printed as
the same lines above the bars (``tqdm.write``). A bar closes at its last step, when a new loop of
its stage starts (a step that does not move forward), at :meth:`ProgressLog.close` and when the log
is dropped (the end of the fit that made it); a loop stopped early (early stopping) keeps its count.
"""

import sys
import time
import weakref
from typing import Any

from rffkern._config import get_config

__all__ = ["ProgressLog"]


def _close_bars(bars):
    for bar in bars.values():
        bar.close()
    bars.clear()


class ProgressLog:
    """Prints progress lines for one fit when ``verbose`` is positive; does nothing otherwise.

    Parameters
    ----------
    who : str or object
        The name in brackets; an estimator instance gives its class name.
    verbose : int
        0: silent. 1: the lines a user wants for a long fit (one per epoch, λ, width...).
        2 and more: also the inner iterations where an estimator has them (``log.step(..., level=2)``).
    """

    def __init__(self, who, verbose=0):
        self.who = who if isinstance(who, str) else type(who).__name__
        self.verbose = int(verbose or 0)
        self.start = time.perf_counter()
        self._bars: dict[str, Any] = {}  # stage -> its open tqdm bar (progress_bar=True)
        weakref.finalize(self, _close_bars, self._bars)

    def enabled(self, level=1):
        return self.verbose >= level

    def elapsed(self):
        return time.perf_counter() - self.start

    def _emit(self, body):
        line = f"[{self.who}] {body} (elapsed {self.elapsed():.2f} s)"
        if get_config()["progress_bar"]:
            from tqdm.auto import tqdm

            tqdm.write(line, file=sys.stdout)  # above any open bar
            sys.stdout.flush()
        else:
            print(line, file=sys.stdout, flush=True)

    def _bar_step(self, stage, i, n, details):
        from tqdm.auto import tqdm

        bar = self._bars.get(stage)
        if bar is not None and (bar.total != n or i <= bar.n):  # a new loop of this stage
            bar.close()
            bar = None
        if bar is None:
            bar = self._bars[stage] = tqdm(total=n, desc=f"[{self.who}] {stage}", dynamic_ncols=True)
        if details:
            bar.set_postfix_str(details, refresh=False)
        bar.update(i - bar.n)
        if n is not None and i >= n:
            bar.close()
            del self._bars[stage]

    def step(self, stage, i, n, details="", *, level=1):
        """A step ``i`` of ``n`` of ``stage`` (1-based ``i``); ``n=None`` when the length is open."""
        if self.verbose >= level:
            if get_config()["progress_bar"]:
                self._bar_step(stage, i, n, details)
                return
            count = f"{i}/{n}" if n is not None else f"{i}"
            self._emit(f"{stage} {count}: {details}" if details else f"{stage} {count}")

    def event(self, message, *, level=1):
        """A one-off event (early stopping, a choice made, a learning-rate decay...)."""
        if self.verbose >= level:
            self._emit(message)

    def close(self):
        """Close the open progress bars (a log kept on an estimator, at the end of its fit)."""
        _close_bars(self._bars)

    def __getstate__(self):  # a fitted estimator that keeps its log pickles without its bars
        state = self.__dict__.copy()
        state["_bars"] = {}
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        weakref.finalize(self, _close_bars, self._bars)
