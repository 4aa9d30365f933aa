"""Packaging: one version, a LICENSE that ships, complete metadata, every runtime import declared,
release wheels built for the versions the metadata claims."""
import ast
import importlib.metadata
import re
import sys
from pathlib import Path

import pytest

import rffkern

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "python" / "rffkern"

try:
    import tomllib
except ImportError:  # Python < 3.11
    tomllib = pytest.importorskip("tomli")


@pytest.fixture(scope="module")
def pyproject():
    with open(ROOT / "pyproject.toml", "rb") as fh:
        return tomllib.load(fh)


def _requirement_name(req):
    """The normalized distribution name of a PEP 508 requirement string."""
    return re.split(r"[\s\[<>=!~;]", req.strip(), maxsplit=1)[0].lower().replace("_", "-")


def test_version_has_one_source(pyproject):
    project = pyproject["project"]
    assert "version" not in project and "version" in project["dynamic"]
    meta = pyproject["tool"]["scikit-build"]["metadata"]["version"]
    assert meta["provider"] == "scikit_build_core.metadata.regex"
    source = ROOT / meta["input"]
    assert source == PACKAGE / "_version.py"
    # scikit-build-core's default pattern for the regex provider, applied as the build applies it
    match = re.search(r'(?i)^(__version__|VERSION)(?: ?\: ?str)? *= *([\'"])v?(?P<value>.+?)\2',
                      source.read_text(), re.MULTILINE)
    assert match is not None
    assert match["value"] == rffkern.__version__
    assert re.fullmatch(r"\d+\.\d+\.\d+((a|b|rc)\d+)?(\.post\d+)?(\.dev\d+)?", rffkern.__version__)
    # nothing else in the package spells the version out
    for path in PACKAGE.glob("*.py"):
        if path.name != "_version.py":
            assert f'"{rffkern.__version__}"' not in path.read_text(), path


def test_license_file_matches_the_metadata(pyproject):
    text = (ROOT / "LICENSE").read_text()
    assert text.startswith("BSD 3-Clause License")
    assert "the rffkern developers" in text.splitlines()[2]
    assert "Neither the name of the copyright holder" in text  # the third clause
    assert pyproject["project"]["license"] == {"text": "BSD-3-Clause"}
    assert "License :: OSI Approved :: BSD License" in pyproject["project"]["classifiers"]


def _claimed_python_versions(project):
    return {tuple(int(v) for v in c.rsplit(" ", 1)[1].split("."))
            for c in project["classifiers"] if re.fullmatch(r"Programming Language :: Python :: 3\.\d+", c)}


def test_project_metadata(pyproject):
    project = pyproject["project"]
    assert set(project["urls"]) >= {"Homepage", "Documentation", "Source", "Issues"}
    assert all(url.startswith("https://") for url in project["urls"].values())
    assert project["authors"] and project["keywords"]
    classifiers = project["classifiers"]
    assert "Programming Language :: C++" in classifiers
    assert any(c.startswith("Operating System ::") for c in classifiers)
    assert any(c.startswith("Topic :: Scientific/Engineering") for c in classifiers)
    minimum = tuple(int(v) for v in re.search(r">=\s*(\d+)\.(\d+)", project["requires-python"]).groups())
    versions = _claimed_python_versions(project)
    assert versions and min(versions) == minimum
    assert sys.version_info[:2] in versions  # the Python running the tests is one we claim


def test_release_wheels_match_the_claims(pyproject):
    cibw = pyproject["tool"]["cibuildwheel"]
    # one wheel per claimed CPython, no more (an unclaimed version would ship untested)
    built = {(3, int(minor)) for minor in re.findall(r"\bcp3(\d+)-\*", cibw["build"])}
    assert built == _claimed_python_versions(pyproject["project"])
    # the smoke test every wheel runs exists, and runs once more on the baseline instruction set
    scripts = re.findall(r"\{project\}/(\S+\.py)", cibw["test-command"])
    assert scripts and all((ROOT / s).is_file() for s in scripts)
    assert "--isa baseline" in cibw["test-command"]
    # macOS and Windows ship the no-OpenMP build (pyproject.toml says why); Linux keeps OpenMP
    for platform in ("macos", "windows"):
        assert cibw[platform]["config-settings"]["cmake.define.RFFKERN_OPENMP"] == "OFF"
    assert pyproject["tool"]["scikit-build"]["cmake"]["define"]["RFFKERN_OPENMP"] == "ON"
    assert "config-settings" not in cibw["linux"]
    # .ci/run builds, repairs and smoke-tests the wheel
    assert "bash .ci/wheel.sh" in (ROOT / ".ci" / "run").read_text()


#: import name -> distribution name, where they differ
_DISTRIBUTION_OF = {"sklearn": "scikit-learn"}
#: The package's modules that are extras themselves (``import rffkern`` never loads them;
#: tests/test_torch.py checks it): their top-level import of the extra is no dependency.
OPTIONAL_SUBMODULES = {"torch.py": "torch"}


def _third_party_imports():
    """{import name: set of (file, at module level?)} over the package's sources."""
    found = {}
    for path in sorted(PACKAGE.glob("*.py")):
        tree = ast.parse(path.read_text())
        top_level = {id(node) for node in tree.body}
        # a module-level ``try: import x`` / ``if ...: import x`` runs at import time too
        for node in tree.body:
            if isinstance(node, (ast.Try, ast.If)):
                top_level |= {id(n) for n in ast.walk(node)}
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                root = name.split(".")[0]
                if root in sys.stdlib_module_names or root in ("rffkern", "__future__"):
                    continue
                found.setdefault(root, set()).add((path.name, id(node) in top_level))
    return found


@pytest.mark.skipif(sys.version_info < (3, 10), reason="sys.stdlib_module_names needs Python 3.10")
def test_every_runtime_import_is_declared(pyproject):
    project = pyproject["project"]
    required = {_requirement_name(r) for r in project["dependencies"]}
    optional = {_requirement_name(r) for reqs in project["optional-dependencies"].values() for r in reqs}
    imports = _third_party_imports()
    assert {"numpy", "scipy", "sklearn", "threadpoolctl"} <= set(imports)  # the scan sees them
    for name, places in imports.items():
        dist = _DISTRIBUTION_OF.get(name, name)
        # an optional submodule (never imported by rffkern itself) may import its extra at its top
        eager = sorted(f for f, at_top in places if at_top and OPTIONAL_SUBMODULES.get(f) != dist)
        if eager:
            assert dist in required, f"{name} is imported when rffkern loads ({eager}) but not a dependency"
        else:
            assert dist in required | optional, f"{name} (imported lazily in {sorted(places)}) is not declared"


def _installed_distribution():
    """The distribution the imported rffkern came from, or None (run from a source tree)."""
    try:
        dist = importlib.metadata.distribution("rffkern")
    except importlib.metadata.PackageNotFoundError:
        return None
    here = Path(rffkern.__file__).resolve()
    for f in dist.files or ():
        if str(f).replace("\\", "/").endswith("rffkern/__init__.py") and Path(dist.locate_file(f)).resolve() == here:
            return dist
    return None


def test_installed_metadata_matches_the_package():
    dist = _installed_distribution()
    if dist is None:
        pytest.skip("rffkern is imported from a source tree, not from an installed wheel")
    assert rffkern.__version__ == importlib.metadata.version("rffkern") == dist.version
    assert any(Path(str(f)).name == "LICENSE" for f in dist.files)
    urls = dict(u.split(", ", 1) for u in dist.metadata.get_all("Project-URL") or [])
    assert set(urls) >= {"Homepage", "Documentation", "Source", "Issues"}
    requires = {_requirement_name(r) for r in dist.requires or [] if "extra ==" not in r}
    assert {"numpy", "scipy", "scikit-learn", "threadpoolctl"} <= requires
