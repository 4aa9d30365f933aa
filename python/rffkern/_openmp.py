"""How the compiled core meets OpenMP: bounded spinning of idle workers, and the thread count.

libgomp's idle workers spin ~300k iterations (hundreds of microseconds) after each parallel region
before they sleep, burning shared cores while Python runs between two kernel calls. libgomp reads
``GOMP_SPINCOUNT`` once, when it loads, and has no run-time call to change it; so
:func:`load_core` sets ``GOMP_SPINCOUNT=20000`` (tens of microseconds: enough for the barriers
inside one kernel) only while the core, and with it libgomp, loads, then restores the environment:
subprocesses inherit nothing. A user's own ``OMP_WAIT_POLICY`` or ``GOMP_SPINCOUNT`` wins, and a
libgomp that some other module loaded earlier keeps its own settings.
"""
from __future__ import annotations

import importlib
import os
import sys

SPIN_COUNT = "20000"


def load_core():
    """Import ``rffkern._core`` with bounded OpenMP spinning; the environment is left as found."""
    if "rffkern._core" in sys.modules:
        return sys.modules["rffkern._core"]
    if "OMP_WAIT_POLICY" in os.environ or "GOMP_SPINCOUNT" in os.environ:
        return importlib.import_module("rffkern._core")
    os.environ["GOMP_SPINCOUNT"] = SPIN_COUNT
    try:
        return importlib.import_module("rffkern._core")
    finally:
        del os.environ["GOMP_SPINCOUNT"]
