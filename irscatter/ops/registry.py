"""The op registry: kernels keyed by (domain, type, version), found the way OpenVINO does.

An op version is named after the opset that introduced it (Gather-8 came with opset8), so a
layer tagged `version="opset15"` resolves to the newest registered version of its type that
is not newer than 15, and to nothing if the type only appeared after opset 15. Type names
are matched case-insensitively, as OpenVINO's opset tables do. Registering the same
(domain, type, version) twice is a programming error and raises at import time.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from irscatter.ops.base import Op

_REGISTRY: dict[tuple[str, str], dict[int, type[Op]]] = {}
_OPSET_RE = re.compile(r"^([A-Za-z_]+?)(\d+)$")

# Opset names that are not numbered: OpenVINO maps a few legacy ops from them into opset6.
_UNNUMBERED = {"experimental": ("opset", 6), "extension": ("opset", 6)}


def parse_opset(text: str) -> tuple[str, int] | None:
    """`"opset15"` -> `("opset", 15)`; `"irscatter1"` -> `("irscatter", 1)`; else None."""
    t = text.strip().lower()
    if t in _UNNUMBERED:
        return _UNNUMBERED[t]
    m = _OPSET_RE.match(t)
    if not m:
        return None
    return m.group(1), int(m.group(2))


def register(type_name: str, version: int, *, domain: str = "opset"):
    """Class decorator: register an `Op` subclass as `type_name`-`version` of `domain`."""

    def wrap(cls: type[Op]) -> type[Op]:
        versions = _REGISTRY.setdefault((domain, type_name.lower()), {})
        if version in versions:
            raise RuntimeError(
                f"{domain} op {type_name}-{version} is registered twice "
                f"({versions[version].__module__}.{versions[version].__name__} and {cls.__module__}.{cls.__name__})"
            )
        cls.type_name = type_name
        cls.version = version
        cls.domain = domain
        versions[version] = cls
        _FOUND.clear()
        return cls

    return wrap


def find(type_name: str, opset: str) -> type[Op] | None:
    """The op class a layer of `type_name` tagged `opset` resolves to, or None."""
    key = (type_name, opset)
    if key in _FOUND:
        return _FOUND[key]
    cls = _find(type_name, opset)
    if len(_FOUND) < 4096:
        _FOUND[key] = cls
    return cls


_FOUND: dict[tuple[str, str], type[Op] | None] = {}  # emptied whenever an op registers


def _find(type_name: str, opset: str) -> type[Op] | None:
    parsed = parse_opset(opset)
    if parsed is None:
        return None
    domain, number = parsed
    versions = _REGISTRY.get((domain, type_name.lower()))
    if not versions:
        return None
    eligible = [v for v in versions if v <= number]
    return versions[max(eligible)] if eligible else None


def resolved_version(type_name: str, opset: str) -> str:
    """The op version as text for messages ("15"), or the raw opset when nothing resolves."""
    _ensure_loaded()
    cls = find(type_name, opset)
    return str(cls.version) if cls is not None else opset


def domains() -> list[str]:
    """The opset families that have registered ops ("opset", "irscatter")."""
    _ensure_loaded()
    return sorted({domain for domain, _ in _REGISTRY})


def supported() -> list[type[Op]]:
    """Every registered op class, sorted by domain, type and version."""
    _ensure_loaded()
    out = [cls for versions in _REGISTRY.values() for cls in versions.values()]
    return sorted(out, key=lambda c: (c.domain, c.type_name.lower(), c.version))


def describe_support(type_name: str) -> str:
    """A hint for an unresolved layer: the versions of this type, or that it is unknown."""
    _ensure_loaded()
    found = [cls for (d, t), vs in _REGISTRY.items() if t == type_name.lower() for cls in vs.values()]
    if found:
        names = ", ".join(f"{c.type_name}-{c.version}" + ("" if c.domain == "opset" else f" ({c.domain})") for c in sorted(found, key=lambda c: c.version))
        return f"irscatter implements {names}"
    return f"irscatter has no kernel for {type_name}; run `irscatter ops` for the supported list"


def _ensure_loaded() -> None:
    import irscatter.ops  # noqa: F401  (importing the package registers every op module)
