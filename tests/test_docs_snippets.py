"""Every code block of the README and of the documentation runs as written.

Python blocks (```python in the README, ``.. code-block:: python`` in docs/**/*.rst) are executed,
each in a fresh namespace; shell blocks (bash) are not run, but the scripts and files they name
must exist. The API page must list every public object, and no page may point at files outside
the repository.
"""
from __future__ import annotations

import importlib.util
import re
import time
from pathlib import Path

import pytest

import rffkern
from rffkern import datasets, kernels

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
SHELL = {"bash", "console", "shell", "sh"}
GENERATED = ("_build", "auto_examples", "generated")
# The README's top example fits every method on 5000 x 100 data; each block must stay this fast.
TIME_LIMIT_S = 60.0


def readme_blocks():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    for i, m in enumerate(re.finditer(r"^```(\w*)\n(.*?)^```", text, flags=re.S | re.M)):
        line = text[: m.start()].count("\n") + 1
        yield f"README.md:{line}", m.group(1).lower(), m.group(2)


def rst_files():
    return sorted(p for p in DOCS.rglob("*.rst")
                  if not any(part in GENERATED for part in p.relative_to(DOCS).parts))


def rst_blocks(path):
    """``.. code-block:: LANG`` directives (options skipped) and their indented bodies."""
    lines = path.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        m = re.match(r"^(\s*)\.\. code-block::\s*(\w+)\s*$", lines[i])
        if not m:
            i += 1
            continue
        start, indent, lang = i + 1, len(m.group(1)), m.group(2).lower()
        i += 1
        while i < len(lines) and re.match(r"^\s+:\w[\w-]*:", lines[i]):
            i += 1
        body = []
        while i < len(lines) and (not lines[i].strip() or len(lines[i]) - len(lines[i].lstrip()) > indent):
            body.append(lines[i])
            i += 1
        while body and not body[-1].strip():
            body.pop()
        nonblank = [ln for ln in body if ln.strip()]
        cut = min(len(ln) - len(ln.lstrip()) for ln in nonblank) if nonblank else 0
        yield f"{path.relative_to(ROOT)}:{start}", lang, "\n".join(ln[cut:] for ln in body) + "\n"


ALL_BLOCKS = list(readme_blocks()) + [b for p in rst_files() for b in rst_blocks(p)]
PYTHON_BLOCKS = [b for b in ALL_BLOCKS if b[1] in ("python", "py", "pycon")]
SHELL_BLOCKS = [b for b in ALL_BLOCKS if b[1] in SHELL]


def test_blocks_were_found():
    # the extraction itself: the README and every user-guide page hold code
    where = {b[0].split(":")[0] for b in PYTHON_BLOCKS}
    assert "README.md" in where
    for page in ("getting_started", "kernels", "rffnet", "ridge", "srff", "eerf", "adaptive",
                 "feature_maps", "choosing", "dask"):
        assert any(page in w for w in where), page
    assert SHELL_BLOCKS


def test_every_block_is_python_or_shell():
    assert [b[:2] for b in ALL_BLOCKS if b[1] not in SHELL and b not in PYTHON_BLOCKS] == []


SESSIONS = {}
for _where, _lang, _code in PYTHON_BLOCKS:
    SESSIONS.setdefault(_where.split(":")[0], []).append((_where, _code))


@pytest.mark.parametrize("source", sorted(SESSIONS))
def test_python_blocks_run(source):
    """The blocks of one file run in order in one namespace, as a reader would paste them."""
    blocks = SESSIONS[source]
    if any("import dask" in code for _, code in blocks) and importlib.util.find_spec("dask") is None:
        pytest.skip("dask is not installed")
    if any("rffkern.onnx" in code for _, code in blocks) and importlib.util.find_spec("skl2onnx") is None:
        pytest.skip("skl2onnx is not installed")
    if any("import torch" in code for _, code in blocks) and importlib.util.find_spec("torch") is None:
        pytest.skip("torch is not installed")
    namespace = {"__name__": "__docs__"}
    start = time.perf_counter()
    for where, code in blocks:
        exec(compile(code, where, "exec"), namespace)
    elapsed = time.perf_counter() - start
    assert elapsed < TIME_LIMIT_S, f"{source} took {elapsed:.1f} s"
    if source == "README.md":
        # what the README's comments promise
        import numpy as np

        assert namespace["model"].selection_report_["chosen"] == "rffnet"
        top5 = np.sort(namespace["model"].feature_importances_.argsort()[::-1][:5])
        np.testing.assert_array_equal(top5, np.sort(namespace["support"]))
        np.testing.assert_allclose(namespace["G"], namespace["G"].T)


@pytest.mark.parametrize("where,lang,code", SHELL_BLOCKS, ids=[b[0] for b in SHELL_BLOCKS])
def test_shell_block_names_existing_files(where, lang, code):
    for path in re.findall(r"(?:bench|\.ci|tests|examples)/[\w./-]+\.(?:py|sh)", code):
        assert (ROOT / path).exists(), f"{where}: {path} does not exist"


def test_api_page_lists_every_public_object():
    text = (DOCS / "api.rst").read_text(encoding="utf-8")
    import rffkern.plot

    public = [n for n in rffkern.__all__ if n not in ("kernels", "datasets", "__version__")]
    public += [n for n in kernels.__all__]
    public += [n for n in rffkern.plot.__all__]
    public += [n for n in dir(datasets) if n.startswith("make_")] + ["SUPPORTS"]
    missing = [n for n in public if not re.search(rf"(?m)^\s+(?:\w+\.)?{re.escape(n)}\s*$|:: {re.escape(n)}$",
                                                  text)]
    assert missing == []


def test_no_page_points_outside_the_repository():
    sources = [p for p in rst_files()] + sorted((ROOT / "examples").glob("*.py")) + [ROOT / "examples/GALLERY_HEADER.rst"]
    for path in sources:
        text = path.read_text(encoding="utf-8")
        for needle in ("ALGORITHMS.md", "/work/", "../shared", "papers/"):
            assert needle not in text, f"{path.relative_to(ROOT)} mentions {needle}"


def test_user_guide_has_the_pages_the_sources_cite():
    names = {p.stem for p in (DOCS / "user_guide").glob("*.rst")}
    assert {"rffnet", "ridge", "srff", "eerf", "adaptive", "feature_maps", "choosing", "dask"} <= names
