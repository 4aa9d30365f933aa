"""Runs the ``Examples`` sections of every module of the package as doctests.

Each example is small (a few dozen samples, a few features or epochs) so this file runs in
seconds. Outputs are printed rounded or as shapes, so they do not depend on the last bits of
floating point; ``# doctest: +SKIP`` marks only output that is not deterministic.
"""
from __future__ import annotations

import doctest
import importlib
import pkgutil

import numpy as np
import pytest

import rffkern

MODULES = sorted(
    info.name
    for info in pkgutil.iter_modules(rffkern.__path__, prefix="rffkern.")
    if info.name not in {"rffkern.__main__", "rffkern._core", "rffkern._cuda"}
)
OPTIONAL_DEPENDENCY = {"rffkern.plot": "matplotlib", "rffkern._dask": "dask", "rffkern.onnx": "skl2onnx",
                       "rffkern.torch": "torch"}


def test_modules_are_found():
    assert {"rffkern.kernels", "rffkern.rffnet", "rffkern.ridge", "rffkern.datasets"} <= set(MODULES)


@pytest.mark.parametrize("module_name", MODULES)
def test_doctests(module_name, monkeypatch):
    if module_name in OPTIONAL_DEPENDENCY:
        pytest.importorskip(OPTIONAL_DEPENDENCY[module_name])
    if module_name == "rffkern.plot":
        import matplotlib

        matplotlib.use("Agg")
    module = importlib.import_module(module_name)
    finder = doctest.DocTestFinder(exclude_empty=True)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    reports = []
    with np.printoptions(legacy=False, precision=8, suppress=False):
        for test in finder.find(module, module_name, globs={}):
            out: list[str] = []
            result = runner.run(test, out=out.append, clear_globs=True)
            if result.failed:
                reports.append("".join(out))
    if module_name == "rffkern.plot":
        import matplotlib.pyplot as plt

        plt.close("all")
    assert not reports, "\n".join(reports)
