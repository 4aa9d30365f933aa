"""Type aliases shared by the annotations of the public API (no run-time role)."""
from __future__ import annotations

from typing import Tuple, Union

import numpy as np
from numpy.typing import NDArray

#: What ``random_state`` accepts everywhere: a seed, a Generator, a legacy RandomState or None.
RandomStateLike = Union[int, np.random.Generator, np.random.RandomState, None]

#: ``(X, y, support)`` as returned by the generators of :mod:`rffkern.datasets`.
Dataset = Tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.int_]]
