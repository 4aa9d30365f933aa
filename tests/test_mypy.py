"""mypy is clean on the package (with the ``[tool.mypy]`` settings of pyproject.toml).

Skipped where mypy is not installed. Runs mypy in a subprocess with a throw-away cache so the
result does not depend on an earlier run.
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_mypy_is_clean(tmp_path):
    pytest.importorskip("mypy")
    if not (ROOT / "pyproject.toml").is_file():
        pytest.skip("needs the source tree (pyproject.toml)")
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--cache-dir", str(tmp_path / "cache"), "python/rffkern"],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr
