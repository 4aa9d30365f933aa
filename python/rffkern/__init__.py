"""rffkern: fast random Fourier features and the learners built on them."""
from rffkern import _core  # noqa: F401

__version__ = "0.1.0"
