"""The package version, defined here only: the build reads it from this file (pyproject.toml's
``tool.scikit-build.metadata.version``) and :mod:`rffkern` re-exports it as ``__version__``."""

__version__ = "0.1.0"
