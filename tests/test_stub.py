"""The type stub ``rffkern/_core.pyi`` matches the compiled module it describes.

Every public function of ``rffkern._core`` is in the stub and every stub function is in the
module; argument names, their order, which ones have defaults, the kind of each argument
(int / float / bool / str scalar or array object) and the return type agree with the signature
pybind11 writes on the first line of each function's ``__doc__``.
"""
from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

import rffkern
from rffkern import _core

# beside the package's __init__.py, where the wheel installs it and where it lives in the source
# tree: an editable install (the README's developer loop) puts only the compiled module elsewhere
STUB = Path(rffkern.__file__).with_name("_core.pyi")

# pybind11's rendering of a C++ scalar argument -> the annotation the stub uses for it.
PYBIND_SCALARS = {
    "typing.SupportsInt | typing.SupportsIndex": "int",
    "typing.SupportsFloat | typing.SupportsIndex": "SupportsFloat",
    "typing.SupportsInt": "int",
    "typing.SupportsFloat": "SupportsFloat",
    "int": "int",
    "float": "SupportsFloat",
    "bool": "bool",
    "str": "str",
}


def _split_top_level(text: str) -> list[str]:
    parts, depth, start = [], 0, 0
    for i, char in enumerate(text):
        if char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
        elif char == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    if text[start:].strip():
        parts.append(text[start:])
    return [part.strip() for part in parts]


def pybind_signature(func) -> tuple[list[tuple[str, str, bool]], str]:
    """[(name, type, has_default)], return type, from pybind11's ``name(args) -> ret`` line."""
    first = func.__doc__.splitlines()[0]
    match = re.fullmatch(rf"{func.__name__}\((.*)\) -> (.+)", first)
    assert match, f"unexpected pybind11 signature line: {first!r}"
    args = []
    for part in _split_top_level(match.group(1)):
        name, _, rest = part.partition(":")
        annotation, has_default = rest, False
        if " = " in rest:
            annotation, has_default = rest.split(" = ")[0], True
        args.append((name.strip(), annotation.strip(), has_default))
    return args, match.group(2).strip()


def stub_functions() -> dict[str, ast.FunctionDef]:
    tree = ast.parse(STUB.read_text())
    return {node.name: node for node in tree.body if isinstance(node, ast.FunctionDef)}


def live_functions() -> dict[str, object]:
    return {name: getattr(_core, name) for name in dir(_core)
            if not name.startswith("_") and callable(getattr(_core, name))}


def stub_public_names() -> set[str]:
    """Functions and module attributes the stub declares (private aliases excluded)."""
    names = set(stub_functions())
    for node in ast.parse(STUB.read_text()).body:
        targets = node.targets if isinstance(node, ast.Assign) else (
            [node.target] if isinstance(node, ast.AnnAssign) else [])
        names.update(t.id for t in targets if isinstance(t, ast.Name) and not t.id.startswith("_"))
    return names


def test_stub_and_module_name_the_same_objects():
    stub = stub_public_names()
    live = {name for name in dir(_core) if not name.startswith("_")}
    assert not live - stub, f"in rffkern._core but not in _core.pyi: {sorted(live - stub)}"
    assert not stub - live, f"in _core.pyi but not in rffkern._core: {sorted(stub - live)}"
    assert set(live_functions()) == live, "the core has public attributes the stub test does not compare"


@pytest.mark.parametrize("name", sorted(live_functions()))
def test_stub_signature_matches_pybind11(name):
    func = live_functions()[name]
    node = stub_functions()[name]
    args, returns = pybind_signature(func)
    stub_args = node.args.posonlyargs + node.args.args + node.args.kwonlyargs
    assert [arg.arg for arg in stub_args] == [arg[0] for arg in args], name
    positional = node.args.posonlyargs + node.args.args
    stub_has_default = ([False] * (len(positional) - len(node.args.defaults)) + [True] * len(node.args.defaults)
                        + [d is not None for d in node.args.kw_defaults])
    assert stub_has_default == [arg[2] for arg in args], f"{name}: arguments with defaults differ"
    for stub_arg, (arg_name, pybind_type, _) in zip(stub_args, args):
        stub_type = ast.unparse(stub_arg.annotation)
        if pybind_type == "object":  # an array (or None) the bindings convert themselves
            assert stub_type not in PYBIND_SCALARS.values(), f"{name}({arg_name}): {stub_type}"
        else:
            assert PYBIND_SCALARS[pybind_type] == stub_type, f"{name}({arg_name}): {stub_type}"
    stub_returns = ast.unparse(node.returns)
    assert stub_returns.split("[")[0] == returns, f"{name}: returns {stub_returns}, pybind11 says {returns}"


def test_signature_parser_sees_scalars_and_arrays():
    # A parser that found no arguments would make the per-function test vacuous.
    args, returns = pybind_signature(_core.features)
    assert [a[0] for a in args][:2] == ["X", "weights"] and returns == "None"
    assert ("pair", "bool", False) in args


def test_stub_and_py_typed_ship_in_the_wheel():
    # scikit-build-core's own file selection for `wheel.packages = ["python/rffkern"]` (the
    # pyproject setting) must pick up the stub and the PEP 561 marker.
    pathutil = pytest.importorskip("scikit_build_core.build._pathutil")
    root = Path(__file__).resolve().parents[1]
    if not (root / "pyproject.toml").is_file():
        pytest.skip("needs the source tree")
    tomllib = pytest.importorskip("tomllib")
    settings = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["scikit-build"]
    packages = {Path(path).name: str(root / path) for path in settings["wheel"]["packages"]}
    mapping = pathutil.packages_to_file_mapping(
        packages=packages, platlib_dir=Path("wheel"),
        include=[], src_exclude=[], target_exclude=[], build_dir="build/any", mode="default",
    )
    shipped = {Path(target).as_posix() for target in mapping.values()}
    assert {"wheel/rffkern/_core.pyi", "wheel/rffkern/py.typed"} <= shipped
