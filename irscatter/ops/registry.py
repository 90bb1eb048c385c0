"""The op registry: kernels keyed by (domain, type, version), found the way OpenVINO does.

A layer names its op by `type` and `version` (an opset). For OpenVINO's own opsets
(`opset1` ... `opset17`, spelt exactly so) the answer comes from OpenVINO's opset tables
(`irscatter.ir.opsets`): the opset must exist, must hold the type (type names match
case-insensitively, as OpenVINO's do), and then names one version of it, the one introduced by
the opset an op version is named after (Gather in opset15 is Gather-8). irscatter either has a
kernel for exactly that version or says it has none yet. Any other opset name is a custom
domain: ops registered from code under that domain (irscatter's own `irscatter1` ones, OpenVINO's
`extension` ones, or a user's, see `register`) resolve to the newest version not newer than the
number the name ends in, or to the newest version when the name is a registered domain as it
stands (`extension`, `ie_internal_opset`: OpenVINO writes these without a number). The domain
`opset` itself is OpenVINO's and only its numbered opsets reach it.

`resolve` says why nothing was found, with a label:
* `unknown-opset`: `opset99`, `Opset1`, `opset0`: OpenVINO refuses the model;
* `not-in-opset`: the opset exists but holds no such type (misspelt, or newer): refused too;
* `no-kernel`: a real OpenVINO op that irscatter cannot run yet;
* `custom-domain`: an opset outside OpenVINO's with no ops registered for it here.
Registering the same (domain, type, version) twice is a programming error and raises.

Ops are imported on demand: `catalog.py` says which module registers each (domain, type), and
the first layer that names a type imports that module. `load_all` imports every op, for what
must see them all (`supported`, `domains`, the `ops` command).
"""

from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING

from irscatter.errors import IRError, ValidationError
from irscatter.ir import opset_tables, opsets
from irscatter.ops import catalog

if TYPE_CHECKING:
    from irscatter.ir.graph import Layer
    from irscatter.ops.base import Op

_REGISTRY: dict[tuple[str, str], dict[int, type[Op]]] = {}

for _domain, _type, _version in catalog.CUSTOM:
    opsets.declare_custom(_domain, _type, _version)


def _load(domain: str, type_name: str) -> None:
    """Import the modules that register `type_name` under `domain` (both in lower case)."""
    for module in catalog.MODULES.get((domain, type_name), ()):
        importlib.import_module(module)


@cache
def load_all() -> None:
    """Import every module of the op families, registering every op irscatter has."""
    for family in catalog.FAMILIES:
        package = importlib.import_module(f"irscatter.ops.{family}")
        for module in pkgutil.iter_modules(package.__path__):
            importlib.import_module(f"{package.__name__}.{module.name}")


@dataclass(frozen=True)
class Resolution:
    """What a layer's (type, version) names: an op class, or a label and a sentence saying why not."""

    cls: type[Op] | None
    label: str | None = None
    message: str = ""
    draft: str = ""  # for a draft op version (opsets.DRAFTS): why OpenVINO itself refuses the layer


def resolve(type_name: str, opset: str) -> Resolution:
    """The op a layer of `type_name` tagged `opset` names (cached)."""
    key = (type_name, opset)
    found = _RESOLVED.get(key)
    if found is None:
        found = _resolve(type_name, opset)
        if len(_RESOLVED) < 4096:
            _RESOLVED[key] = found
    return found


_RESOLVED: dict[tuple[str, str], Resolution] = {}  # emptied whenever an op registers


def find(type_name: str, opset: str) -> type[Op] | None:
    """The op class a layer of `type_name` tagged `opset` resolves to, or None."""
    return resolve(type_name, opset).cls


def instantiate(layer: Layer, file: str | None = None) -> Op:
    """The op instance for a layer, attributes parsed and arity checked; errors name the layer."""
    found = resolve(layer.type, layer.version)
    try:
        if found.cls is None:
            raise ValidationError(found.message, label=found.label)
        op = found.cls(layer)
        op.check_arity(len(layer.inputs), len(layer.outputs))
        return op
    except IRError as e:
        raise e.add_context(file=file, layer=layer.ref, line=layer.line) from None


def _resolve(type_name: str, opset: str) -> Resolution:
    answer = opsets.lookup(type_name, opset)
    if answer.official:
        if answer.version is None or answer.canonical is None:  # the tables set both or neither
            return Resolution(None, answer.label, answer.message)
        spelt = "Const" if answer.canonical == "Constant" else answer.canonical
        official = f"{answer.canonical}-{answer.version}"
        _load("opset", spelt.lower())
        cls = _REGISTRY.get(("opset", spelt.lower()), {}).get(answer.version)
        draft = (f"{official} is a draft of {opset}: its spec page defines it, but OpenVINO "
                 f"{opset_tables.OPENVINO_VERSION} does not ship it yet and refuses the layer") if answer.draft else ""
        if cls is None:
            what = f"a draft op of {opset}" if answer.draft else "an OpenVINO op"
            return Resolution(None, "no-kernel", f"irscatter has no kernel for {official} yet "
                                                 f"({what}{_others(spelt)})")
        return Resolution(cls, draft=draft)
    registered = ({d for d, _ in _REGISTRY} | {d for d, _ in catalog.MODULES}) - {"opset"}
    named = [(d, bound) for d, bound in opsets.custom_domains(opset) if d in registered]
    if not named:
        return Resolution(None, "custom-domain",
                          f'version="{opset}" is not one of OpenVINO\'s opsets (opset1 to opset{opsets.NEWEST}) and '
                          f"no ops are registered for it here (irscatter.ops.registry.register adds custom ops)")
    domain, bound = named[0]
    _load(domain, type_name.lower())
    versions = _REGISTRY.get((domain, type_name.lower()), {})
    eligible = [v for v in versions if bound is None or v <= bound]
    if not eligible:
        load_all()
        names = sorted({cls.type_name for (d, _), vs in _REGISTRY.items() if d == domain for cls in vs.values()})
        return Resolution(None, "not-in-opset",
                          f"{opset} has no operation {type_name}{opsets.did_you_mean(type_name, names)}")
    return Resolution(versions[max(eligible)])


def opsets_of(cls: type[Op]) -> list[str]:
    """The OpenVINO opsets whose tables name this op version (Gather-8: opset8 to opset17);
    empty for ops outside OpenVINO's opsets."""
    if cls.domain != "opset":
        return []
    name = "constant" if cls.type_name == "Const" else cls.type_name.lower()
    numbers = sorted(set(opset_tables.OPSETS) | set(opsets.DRAFTS))
    tables = {n: {**opset_tables.OPSETS.get(n, {}), **opsets.DRAFTS.get(n, {})} for n in numbers}
    return [f"opset{n}" for n, types in tables.items()
            if any(t.lower() == name and v == cls.version for t, v in types.items())]


def _others(type_name: str) -> str:
    versions = sorted(_REGISTRY.get(("opset", type_name.lower()), {}))
    return f"; it implements {', '.join(f'{type_name}-{v}' for v in versions)}" if versions else ""


def register(type_name: str, version: int, *, domain: str = "opset"):
    """Class decorator: register an `Op` subclass as `type_name`-`version` of `domain`. A custom
    domain may be any name (compared in lower case): layers tagged with the name as it stands
    (`version="extension"`) resolve to the newest version registered, and layers tagged with
    the name followed by a number (`version="acme3"`) to the newest version up to that number."""
    if not domain.strip():
        raise ValueError("an op's domain must be named")
    domain = domain.strip()

    def wrap(cls: type[Op]) -> type[Op]:
        versions = _REGISTRY.setdefault((_key(domain), type_name.lower()), {})
        if version in versions:
            raise RuntimeError(
                f"{domain} op {type_name}-{version} is registered twice "
                f"({versions[version].__module__}.{versions[version].__name__} and {cls.__module__}.{cls.__name__})"
            )
        cls.type_name = type_name
        cls.version = version
        cls.domain = domain
        versions[version] = cls
        if domain != "opset":
            opsets.declare_custom(domain, type_name, version)
        _RESOLVED.clear()
        return cls

    return wrap


def unregister(type_name: str, version: int, *, domain: str) -> None:
    """Remove a custom op registered with `register` (OpenVINO's own ops cannot be removed)."""
    if _key(domain) == "opset":
        raise ValueError("OpenVINO's opset ops cannot be unregistered")
    versions = _REGISTRY.get((_key(domain), type_name.lower()), {})
    versions.pop(version, None)
    opsets.declare_custom(domain, type_name, version, present=False)
    if not versions:
        _REGISTRY.pop((_key(domain), type_name.lower()), None)
    _RESOLVED.clear()


def _key(domain: str) -> str:
    """A domain as the registry keys it: layers name it in any case (`Extension`, `extension`)."""
    return domain.strip().lower()


def custom_domain_of(type_name: str) -> str | None:
    """The custom domain (as registered) whose ops include `type_name`, when exactly one does: what
    a snippet of an internal op's page, written without a `version`, is meant to be tagged with."""
    load_all()
    found = {versions[max(versions)].domain for (d, t), versions in _REGISTRY.items()
             if d != "opset" and t == type_name.lower() and versions}
    return found.pop() if len(found) == 1 else None


def domains() -> list[str]:
    """The opset families that have registered ops ("opset", "irscatter")."""
    load_all()
    return sorted({domain for domain, _ in _REGISTRY})


def supported() -> list[type[Op]]:
    """Every registered op class, sorted by domain, type and version."""
    load_all()
    out = [cls for versions in _REGISTRY.values() for cls in versions.values()]
    return sorted(out, key=lambda c: (c.domain, c.type_name.lower(), c.version))
