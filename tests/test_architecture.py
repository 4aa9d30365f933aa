"""The package's layering (issue 41): no import cycle among its modules (imports inside functions
included), no private name of a public module imported by another module, no function over 100
lines of code. Read from the source with ``ast``; nothing is imported."""
import ast
import pathlib

PACKAGE = pathlib.Path(__file__).resolve().parents[1] / "python" / "rffkern"
MAX_LINES = 100


def _modules():
    return {p.stem: ast.parse(p.read_text()) for p in sorted(PACKAGE.glob("*.py"))}


def _imports(tree, modules):
    """``(module, names)`` of every ``from rffkern[.module] import names`` in ``tree`` that names a
    module of the package."""
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "rffkern":
            parts = node.module.split(".")
            if len(parts) == 2 and parts[1] in modules:
                yield parts[1], [a.name for a in node.names]
            elif len(parts) == 1:
                for a in node.names:
                    if a.name in modules:
                        yield a.name, []


def _cycles(graph):
    """The strongly connected groups of more than one module (Tarjan)."""
    index, low, stack, on, groups = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for v in graph:
        if v not in index:
            visit(v)
    return groups


def test_no_import_cycle():
    modules = _modules()
    graph = {name: {m for m, _ in _imports(tree, modules) if m != name} for name, tree in modules.items()}
    assert _cycles(graph) == []


def test_no_private_name_of_a_public_module_is_imported_elsewhere():
    modules = _modules()
    used = [(name, m, n) for name, tree in modules.items() for m, names in _imports(tree, modules)
            if not m.startswith("_") for n in names if n.startswith("_")]
    assert used == []


def _lines_of_code(fn, source_lines):
    body = fn.body
    first = body[0]
    docstring = isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(
        first.value.value, str)
    start = first.end_lineno + 1 if docstring else first.lineno
    lines = source_lines[start - 1:fn.end_lineno]
    return sum(1 for line in lines if line.strip() and not line.strip().startswith("#"))


def test_no_function_over_a_hundred_lines_of_code():
    long = []
    for path in sorted(PACKAGE.glob("*.py")):
        source_lines = path.read_text().splitlines()
        for fn in ast.walk(ast.parse("\n".join(source_lines))):
            if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                n = _lines_of_code(fn, source_lines)
                if n > MAX_LINES:
                    long.append((path.name, fn.name, n))
    assert long == []
