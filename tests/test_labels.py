"""Every label an error or finding carries has one home and a meaning, and every declared label is used.

Labels are found in the source: the label argument of `check(...)`, `fail(...)`, `required(...)`, of `same_element_type`,
`check_integral` and `Finding(...)`, and every `label=`/`code=`/`*_label=` keyword. A label passed
on from a variable is fine; one built at run time (an f-string) is not, since no table could list it.
"""

import ast
from pathlib import Path

import irscatter
from irscatter import labels
from irscatter.ops import registry

PACKAGE = Path(irscatter.__file__).parent
LABEL_POSITION = {"check": 1, "same_element_type": 3, "check_integral": 3, "Finding": 1, "fail": 0, "required": 1, "const_error": 1}
LABEL_KEYWORDS = {"label", "code", "type_label", "rank_label"}


def _label_arguments(tree: ast.AST):
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        name = ast.unparse(node.func).rsplit(".", 1)[-1]
        args = []
        if name in LABEL_POSITION and len(node.args) > LABEL_POSITION[name]:
            args.append(node.args[LABEL_POSITION[name]])
        args += [k.value for k in node.keywords if k.arg in LABEL_KEYWORDS]
        for arg in args:
            yield node.lineno, arg


def _raised_by_module():
    raised, built = {}, []
    for path in sorted(PACKAGE.rglob("*.py")):
        module = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts).removesuffix(".__init__")
        for line, arg in _label_arguments(ast.parse(path.read_text())):
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                raised.setdefault(module, set()).add(arg.value)
            elif isinstance(arg, ast.JoinedStr):
                built.append(f"{module}:{line}")
    return raised, built


def test_no_label_is_built_at_run_time():
    assert _raised_by_module()[1] == []


def test_every_label_raised_is_declared_where_a_reader_looks_for_it():
    """An op module's labels are in its ops' tables or shared; any other module's are shared."""
    raised, _ = _raised_by_module()
    tables: dict[str, set[str]] = {}
    for cls in registry.supported():
        tables.setdefault(cls.__module__, set()).update(cls.constraint_labels())
    undeclared = []
    for module, found in raised.items():
        known = set(labels.SHARED) | set(labels.KINDS) | tables.get(module, set())
        undeclared += [f"{module}: {label}" for label in sorted(found - known)]
    assert undeclared == []


def test_every_declared_label_is_used():
    """A label with no code behind it is a stale promise: each appears as a literal in the code."""
    literals: set[str] = set()
    for path in PACKAGE.rglob("*.py"):
        if path.name == "labels.py":
            continue
        tree = ast.parse(path.read_text())
        tables = {id(n) for node in ast.walk(tree) if isinstance(node, ast.Assign)
                  and any(getattr(t, "id", None) == "labels" for t in node.targets)
                  for n in ast.walk(node.value)}
        literals |= {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)
                     and id(n) not in tables}
    errors_kinds = {cls.kind for cls in vars(irscatter.errors).values()
                    if isinstance(cls, type) and issubclass(cls, irscatter.IRError)}
    unused = sorted(set(labels.SHARED) - literals)
    unused += sorted(set(labels.KINDS) - errors_kinds - literals)
    for cls in registry.supported():
        unused += [f"{cls.label()}: {label}" for label in cls.__dict__.get("labels", {}) if label not in literals]
    assert unused == []


def test_an_op_table_does_not_repeat_a_shared_label():
    repeated = [f"{cls.label()}: {label}" for cls in registry.supported()
                for label in cls.__dict__.get("labels", {}) if label in labels.SHARED]
    assert repeated == []
