"""The package's import graph points one way: each layer imports only the layers below it.

    errors, limits, findings      what went wrong, and how much is allowed
    ir                            element types, shapes, opset tables, the graph, the loader
    ops                           op declarations (schema, inference, kernel) and the registry
    checks                        shape/type inference over a graph, conformance findings
    runtime                       the interpreter, regions, profiling, input helpers
    api, summary, examples, debug what users call (debug: compare, dumps, numerics)
    cli, the package itself       the command line and the public namespace

`targets` (other runtimes in worker processes) imports nothing of irscatter's but itself.
"""

import ast
import keyword
import re
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "irscatter"
LAYERS = {
    "irscatter.errors": 0, "irscatter.limits": 0, "irscatter.metrics": 0, "irscatter.findings": 0, "irscatter.labels": 0,
    "irscatter.ir": 1, "irscatter.ops": 2, "irscatter.checks": 3, "irscatter.runtime": 4,
    "irscatter.api": 5, "irscatter.summary": 5, "irscatter.examples": 5, "irscatter.debug": 5,
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
    """(imported irscatter module, at module level?) for every import, those of a function and
    those only type checkers read (under TYPE_CHECKING) included: a circle a type checker closes
    is still a circle in the design."""
    tree = ast.parse(path.read_text())
    top = {id(n) for n in tree.body}
    for node in ast.walk(tree):
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


def test_no_import_circle():
    """Imports inside functions count too: a circle closed at run time is a circle."""
    graph = {module: {name for name, _ in _imports(path, module)} for module, path in _modules()}
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


TABLE_MODULES = {  # element-wise ops that differ only in their numpy function are rows of a table
    "irscatter.ops.elementwise.binary", "irscatter.ops.elementwise.unary", "irscatter.ops.reduction.reduce",
    "irscatter.ops.activation.elementwise",
}


def _snake(type_name: str) -> str:
    # "to" between two capitalised words is a word of its own: RGBtoNV12 -> rgb_to_nv12
    type_name = re.sub(r"(?<=[A-Z0-9])to(?=[A-Z])", "_To", type_name)
    # a plural acronym is one word: ExperimentalDetectronTopKROIs -> ..._top_k_rois
    type_name = re.sub(r"ROIs(?=[A-Z]|$)", "_Rois", type_name)
    # a dimension count is part of its word: PagedCausalConv1D -> paged_causal_conv1d
    type_name = re.sub(r"(?<=[0-9])D(?=[A-Z]|$)", "d", type_name)
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", type_name).lower()


def test_every_op_is_found_by_its_name():
    """`ops/<family>/<snake_case type>.py` holds every version of an op type (ScatterNDUpdate in
    scatter/scatter_nd_update.py), unless the op is a row of one of the element-wise tables."""
    from irscatter.ops import registry

    misplaced = []
    for cls in registry.supported():
        module = cls.__module__
        if module in TABLE_MODULES:
            continue
        family_package = module.rsplit(".", 1)[0]
        type_name = "Constant" if cls.type_name == "Const" else cls.type_name  # the IR spells Constant "Const"
        name = module.rsplit(".", 1)[1]
        if keyword.iskeyword(name[:-1]) and name.endswith("_"):
            name = name[:-1]  # a type named like a Python keyword (If) lives in if_.py
        if name != _snake(type_name) or family_package.count(".") != 2:
            misplaced.append(f"{cls.type_name}-{cls.version} in {module}")
    assert misplaced == []


def test_the_op_families_are_listed_in_the_catalog():
    """Every family subpackage is one of the catalog's FAMILIES, whose every module
    `registry.load_all` imports."""
    from irscatter.ops import catalog

    families = {p.parent.name for p in (PACKAGE / "ops").glob("*/__init__.py")} - {"common"}
    assert families == set(catalog.FAMILIES)


def test_the_ops_page_lists_every_op():
    from irscatter.ir.opsets import DRAFTS
    from irscatter.ops import registry

    table = (PACKAGE.parent / "docs" / "ops.md").read_text()
    missing = [cls.label() for cls in registry.supported() if not re.search(rf"\b{cls.label()}\b", table)]
    assert missing == []
    # the drafts of an opset still being defined are not among the types of OpenVINO's opsets
    drafts = {t for types in DRAFTS.values() for t in types}
    count = len({cls.type_name for cls in registry.supported() if cls.domain == "opset"} - drafts)
    assert f"That is {count} of the 209 op types" in table


# --- what tools read of a compiled model ---------------------------------------------------------

def _compiled_model_privates() -> frozenset[str]:
    """The names that are CompiledModel's own: its underscored methods and attributes, and its plan."""
    tree = ast.parse((PACKAGE / "runtime" / "interpreter.py").read_text())
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "CompiledModel")
    names = {"plan"}
    for node in ast.walk(cls):
        if isinstance(node, ast.FunctionDef) and node.name.startswith("_") and not node.name.startswith("__"):
            names.add(node.name)
        elif (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self"
              and node.attr.startswith("_") and not node.attr.startswith("__")):
            names.add(node.attr)
    return frozenset(names)


def _private_reads(source: str, privates: frozenset[str]) -> list[str]:
    """`x.<name>` for a private name of CompiledModel, where `x` is not a module the code
    imported (`extract.plan` is a function) nor `self` (a class's own member of that name)."""
    tree = ast.parse(source)
    modules = {(a.asname or a.name).split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    modules |= {a.asname or a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) for a in n.names}
    return [f"line {node.lineno}: {ast.unparse(node)}" for node in ast.walk(tree)
            if isinstance(node, ast.Attribute) and node.attr in privates
            and not (isinstance(node.value, ast.Name) and node.value.id in modules | {"self", "cls"})]


def test_the_private_read_scan_finds_what_it_looks_for():
    privates = _compiled_model_privates()
    assert {"plan", "_graph", "_binding", "_execute"} <= privates
    found = _private_reads("from irscatter.debug import extract\n"
                           "def f(compiled, a):\n"
                           "    extract.plan(compiled, ())\n"
                           "    return compiled.plan.steps, a._graph, compiled.graph.order\n", privates)
    assert sorted(f.split(": ")[1] for f in found) == ["a._graph", "compiled.plan"]


def test_no_module_outside_the_runtime_reads_a_compiled_models_internals():
    """Tools (the layers above the runtime, and targets) read a compiled model through its
    OpenVINO-style API and `graph` (the contract of `runtime/graph_view.py`), never its plan or
    underscored members, which may change."""
    privates = _compiled_model_privates()
    tools = [(module, path) for module, path in _modules()
             if module.startswith("irscatter.targets") or _layer(module) > LAYERS["irscatter.runtime"]]
    wrong = [f"{module} {read}" for module, path in tools for read in _private_reads(path.read_text(), privates)]
    assert wrong == []


# Where the library may write a command-line flag, by module and flag: command lines it builds for
# irscatter itself, and text worded for the command that prints it. Anything else the library
# says speaks of a Python argument (`errors.Argument`); the CLI puts the flag in its place.
FLAGS_ALLOWED = {
    # the `irscatter reduce` command a campaign's worker runs on a diverging model
    ("debug/campaign/judge.py", "--inputs"), ("debug/campaign/judge.py", "--random"),
    ("debug/campaign/judge.py", "--seed"), ("debug/campaign/judge.py", "--target"),
    ("debug/campaign/judge.py", "--target-precision"),
    # the reproducer's README: the command that shows the fault again
    ("debug/reduce.py", "--inputs"), ("debug/reduce.py", "--whole"), ("debug/reduce.py", "--target"),
    ("debug/reduce.py", "--target-precision"),
    # the summary lines of a report, which the commands print as they are
    ("debug/verdicts.py", "--all"), ("debug/verdicts.py", "--bisect"), ("debug/onnx_compare.py", "--all"),
    ("debug/attribution.py", "--all"), ("runtime/inputs.py", "--atol"), ("runtime/inputs.py", "--ulps"),
}
_FLAG = re.compile(r"(?:^|[\s(;])(--[a-z][a-z-]*)")


def _flags_written(path: Path):
    """(line, flag) of every flag a string of `path` spells, docstrings aside: string constants
    and the literal parts of f-strings alike."""
    text = path.read_text()
    if "--" not in text:
        return
    tree = ast.parse(text)
    docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                  if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                  and node.body and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            for flag in _FLAG.findall(node.value):
                yield node.lineno, flag


def test_the_library_names_no_flag():
    """A Python caller reads about its own arguments, never about `--target`: outside cli/, no
    string starts a word with a flag, but where `FLAGS_ALLOWED` says why it may."""
    written = [(path.relative_to(PACKAGE).as_posix(), line, flag) for _, path in _modules()
               if "cli" not in path.parts for line, flag in _flags_written(path)]
    found = [f"{module}:{line}: {flag}" for module, line, flag in written if (module, flag) not in FLAGS_ALLOWED]
    assert not found, "\n".join(found)
    assert FLAGS_ALLOWED <= {(module, flag) for module, _, flag in written}  # no entry outlives its flag


def _is_stub(function: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    body = [n for n in function.body
            if not (isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant) and isinstance(n.value.value, str))]
    return len(body) == 1 and (isinstance(body[0], ast.Pass) or (
        isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) and body[0].value.value is Ellipsis))


def test_a_body_of_pass_or_ellipsis_is_only_an_overload_or_a_protocol_member():
    """No function a user can reach does nothing: a body of `pass` or `...` is a signature of
    `typing.overload` or a member of a Protocol, which the implementation or the implementer fills."""
    stubs = []
    for module, path in _modules():
        tree = ast.parse(path.read_text())
        protocols = [c for c in ast.walk(tree) if isinstance(c, ast.ClassDef)
                     and any(ast.unparse(b).endswith("Protocol") for b in c.bases)]
        in_protocol = {id(f) for c in protocols for f in c.body}
        for node in ast.walk(tree):
            if (isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and _is_stub(node)
                    and id(node) not in in_protocol
                    and not any(ast.unparse(d).endswith("overload") for d in node.decorator_list)):
                stubs.append(f"{module}:{node.lineno} {node.name}")
    assert stubs == []


def test_every_module_that_imports_numba_is_one_of_the_compiled_modules():
    """`accel.warm` tells that numba is set up by finding one of these modules imported: a new
    module of compiled loops must be in the list, or a process where only it has run would load
    every other loop on their second calls alone."""
    from irscatter.ops.common import accel

    found = set()
    for path in PACKAGE.rglob("*.py"):
        tree = ast.parse(path.read_text())
        for node in tree.body:
            names = ([alias.name for alias in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            if any(name == "numba" or name.startswith("numba.") for name in names):
                found.add(".".join(("irscatter",) + path.relative_to(PACKAGE).with_suffix("").parts))
    assert found == set(accel.COMPILED_MODULES)
