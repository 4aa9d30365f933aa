"""mypy is clean on the package (with the ``[tool.mypy]`` settings of pyproject.toml).

Skipped where mypy is not installed. mypy runs in a subprocess with its incremental cache in the
temporary directory (one per mypy version): the first run on a machine checks everything (about
10 s of CPU), later runs only what changed (under a second); the cache never changes the verdict.
"""
from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_mypy_is_clean():
    mypy = pytest.importorskip("mypy.version")
    if not (ROOT / "pyproject.toml").is_file():
        pytest.skip("needs the source tree (pyproject.toml)")
    cache = Path(tempfile.gettempdir()) / f"rffkern-mypy-cache-{mypy.__version__}"
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--cache-dir", str(cache), "python/rffkern"],
        cwd=ROOT, capture_output=True, text=True, timeout=600,
    )
    assert result.returncode == 0, result.stdout + result.stderr
