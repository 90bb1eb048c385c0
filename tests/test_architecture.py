"""The package's import graph points one way: each layer imports only the layers below it.

    errors, limits, findings      what went wrong, and how much is allowed
    ir                            element types, shapes, opset tables, the graph, the loader
    ops                           op declarations (schema, inference, kernel) and the registry
    checks                        shape/type inference over a graph, conformance findings
    runtime                       the interpreter, regions, profiling, input helpers
    api, summary, examples        what users call
    cli, the package itself       the command line and the public namespace

`targets` (other runtimes in worker processes) imports nothing of irscatter's but itself.
"""

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "irscatter"
LAYERS = {
    "irscatter.errors": 0, "irscatter.limits": 0, "irscatter.findings": 0,
    "irscatter.ir": 1, "irscatter.ops": 2, "irscatter.checks": 3, "irscatter.runtime": 4,
    "irscatter.api": 5, "irscatter.summary": 5, "irscatter.examples": 5,
    "irscatter.cli": 6, "irscatter": 6,
}


def _layer(module: str) -> int:
    parts = module.split(".")
    for n in range(len(parts), 0, -1):
        if ".".join(parts[:n]) in LAYERS:
            return LAYERS[".".join(parts[:n])]
    raise KeyError(module)


def _modules():
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE.parent).with_suffix("")
        name = ".".join(rel.parts)
        yield name.removesuffix(".__init__"), path


def _imports(path: Path, module: str):
    """(imported irscatter module, at module level?) for every import outside TYPE_CHECKING."""
    tree = ast.parse(path.read_text())
    skip = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skip.update(id(n) for n in ast.walk(node))
    top = {id(n) for n in tree.body}
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            base = node.module
            names = [f"{base}.{a.name}" if base == "irscatter" else base for a in node.names]
        else:
            continue
        for name in names:
            if name == "irscatter" or name.startswith("irscatter."):
                yield name, id(node) in top


def test_no_module_imports_a_layer_above_its_own():
    wrong = []
    for module, path in _modules():
        if module.startswith("irscatter.targets"):
            assert all(name.startswith("irscatter.targets") for name, _ in _imports(path, module)), module
            continue
        for name, _ in _imports(path, module):
            if not name.startswith("irscatter.targets") and _layer(name) > _layer(module):
                wrong.append(f"{module} imports {name}")
    assert wrong == []


def test_no_import_circle_at_module_level():
    graph = {module: {name for name, top in _imports(path, module) if top} for module, path in _modules()}
    modules = set(graph)

    def resolve(name):  # `from irscatter.ops import base` names a module; `...ops.base import X` too
        while name not in modules and "." in name:
            name = name.rsplit(".", 1)[0]
        return name

    edges = {m: {resolve(n) for n in targets} - {m} for m, targets in graph.items()}
    state: dict[str, int] = {}

    def visit(m, trail):
        state[m] = 1
        for n in edges.get(m, ()):
            if state.get(n) == 1 and not (m.startswith(n + ".") or n == "irscatter"):
                pytest.fail("import circle: " + " -> ".join(trail + [m, n]))
            if n not in state:
                visit(n, trail + [m])
        state[m] = 2

    for m in sorted(edges):
        if m not in state:
            visit(m, [])
