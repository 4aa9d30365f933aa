"""One progress format for every long fit (``verbose`` > 0).

Every estimator prints lines of the form::

    [RFFNetRegressor] epoch 3/100: train loss 0.412, validation loss 0.455 (elapsed 0.21 s)
    [RFFNetRegressor] early stopping: no improvement for 10 epochs; best epoch 27 (elapsed 1.93 s)

that is ``[<who>] <stage> <i>/<n>: <details> (elapsed <seconds> s)`` for a step of a loop with a
known length, and ``[<who>] <message> (elapsed <seconds> s)`` for an event. Lines go to stdout and
are flushed at once, so they interleave correctly with a notebook's or a terminal's output.
"""

import sys
import time

__all__ = ["ProgressLog"]


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

    def enabled(self, level=1):
        return self.verbose >= level

    def elapsed(self):
        return time.perf_counter() - self.start

    def _emit(self, body):
        print(f"[{self.who}] {body} (elapsed {self.elapsed():.2f} s)", file=sys.stdout, flush=True)

    def step(self, stage, i, n, details="", *, level=1):
        """A step ``i`` of ``n`` of ``stage`` (1-based ``i``); ``n=None`` when the length is open."""
        if self.verbose >= level:
            count = f"{i}/{n}" if n is not None else f"{i}"
            self._emit(f"{stage} {count}: {details}" if details else f"{stage} {count}")

    def event(self, message, *, level=1):
        """A one-off event (early stopping, a choice made, a learning-rate decay...)."""
        if self.verbose >= level:
            self._emit(message)
