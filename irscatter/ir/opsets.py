"""What OpenVINO's opset tables say about a layer's `type` and `version`, with no kernels involved.

`lookup` answers for OpenVINO's own opsets (`opset1` ... `opset17`, spelt exactly so): the opset
must exist and must hold the type (type names match case-insensitively, as OpenVINO's do), and
then it names one version of it, numbered by the opset that introduced it (Gather in opset15 is
Gather-8). Any other `version` is a custom domain, which only registered ops can resolve; that is
the op registry's business, above this module. A custom tag need not end in a number: OpenVINO
itself writes `extension` (PagedAttentionExtension) and `ie_internal_opset` for its internal ops.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable
from dataclasses import dataclass

from irscatter.ir.opset_tables import OPENVINO_VERSION, OPSETS

_OFFICIAL = re.compile(r"^opset(\d+)$")
_TAG = re.compile(r"^([A-Za-z_]+?)(\d+)$")  # any opset tag: a domain name and a number
_IR_SPELLING = {"const": "Constant"}  # the IR writes a Constant as `Const`
_BY_LOWER = {n: {t.lower(): t for t in types} for n, types in OPSETS.items()}
NEWEST = max(OPSETS)

# Op versions that the spec pages of an opset still being defined already describe, but that the
# pinned OpenVINO's table of that opset does not list yet: a layer may name them, irscatter runs
# the ones it has kernels for, and `validate` notes that OpenVINO itself refuses them
# (tests/test_registry.py checks this table against the pages' versioned names).
DRAFTS: dict[int, dict[str, int]] = {
    17: {"Atan2": 17, "Bincount": 17, "RandomPoisson": 17, "BlockSparseAttention": 17, "QwenSparseAttention": 17},
}
_DRAFTS_BY_LOWER = {n: {t.lower(): t for t in types} for n, types in DRAFTS.items()}


@dataclass(frozen=True)
class TableAnswer:
    """One layer's type/version against the tables: `version` set when the opset holds the type,
    else `label` and `message` say why not. `official` is False for opsets outside OpenVINO's."""

    official: bool
    canonical: str | None = None  # the table's spelling of the type ("Constant" for `Const`)
    version: int | None = None
    label: str | None = None
    message: str = ""
    draft: bool = False  # a version only the opset's spec pages define, not the pinned OpenVINO


def parse_opset(text: str) -> tuple[str, int] | None:
    """`"opset15"` -> `("opset", 15)`; `"irscatter1"` -> `("irscatter", 1)`; else None."""
    m = _TAG.match(text.strip())
    return (m.group(1).lower(), int(m.group(2))) if m else None


def custom_domains(opset: str) -> list[tuple[str, int | None]]:
    """The custom domains a `version` tag may name, the most specific first: the whole tag, with
    no version bound (`extension`, `ie_internal_opset`, a user's `acme.ops`); then, for a tag that
    ends in a number, the name before it bounded by that number (`irscatter1`: irscatter, 1).
    Domain names are compared in lower case."""
    tag = opset.strip().lower()
    found: list[tuple[str, int | None]] = [(tag, None)] if tag else []
    parsed = parse_opset(opset)
    if parsed is not None:
        found.append(parsed)
    return found


def lookup(type_name: str, opset: str) -> TableAnswer:
    m = _OFFICIAL.match(opset)
    if m is None:
        if _OFFICIAL.match(opset.strip().lower()):
            return TableAnswer(True, label="unknown-opset",
                               message=f'version="{opset}" is not an opset of OpenVINO: opset names are '
                                       f'case-sensitive and unpadded (did you mean "{opset.strip().lower()}"?)')
        return TableAnswer(False)
    number = int(m.group(1))
    table = _BY_LOWER.get(number)
    if table is None:
        return TableAnswer(True, label="unknown-opset",
                           message=f'version="{opset}" is not an opset of OpenVINO (it defines opset1 to '
                                   f"opset{NEWEST}, as of OpenVINO {OPENVINO_VERSION})")
    lowered = type_name.lower()
    canonical = table.get(_IR_SPELLING.get(lowered, lowered).lower())
    drafted = _DRAFTS_BY_LOWER.get(number, {}).get(lowered)
    if canonical is None and drafted is not None:
        return TableAnswer(True, drafted, DRAFTS[number][drafted], draft=True)
    if canonical is None:
        later = [n for n in sorted(OPSETS) if n > number and lowered in _BY_LOWER[n]]
        hint = f" ({_BY_LOWER[later[0]][lowered]} first appears in opset{later[0]})" if later else \
            did_you_mean(type_name, OPSETS[number])
        if number == NEWEST and "Result" not in OPSETS[number]:
            hint += f"; opset{number} is still being defined and holds only {len(table)} types"
        return TableAnswer(True, label="not-in-opset", message=f"{opset} has no operation {type_name}{hint}")
    return TableAnswer(True, canonical, OPSETS[number][canonical])


# Versions of custom-domain ops, told by the op registry as ops register, so that messages can
# name them (PaddleScatter-1) without this module knowing any kernel.
_CUSTOM: dict[tuple[str, str], set[int]] = {}


def declare_custom(domain: str, type_name: str, version: int, present: bool = True) -> None:
    versions = _CUSTOM.setdefault((domain.lower(), type_name.lower()), set())
    if present:
        versions.add(version)
    else:
        versions.discard(version)


def version_text(type_name: str, opset: str) -> str:
    """The op version for messages: "8" where the tables or a registered custom op name one,
    else the opset as written."""
    answer = lookup(type_name, opset)
    if answer.version is not None:
        return str(answer.version)
    if answer.official:
        return opset
    for domain, bound in custom_domains(opset):
        eligible = [v for v in _CUSTOM.get((domain, type_name.lower()), ()) if bound is None or v <= bound]
        if eligible:
            # A tag without a number names no version: messages keep the tag ("extension").
            return str(max(eligible)) if bound is not None else opset
    return opset


def opset_holding(type_name: str, version: int) -> str:
    """The opset tag for the spec's versioned name `type_name-version`: the first OpenVINO opset
    from `version` on that holds the type (a spec page may number a version by its class
    namespace, e.g. ScatterNDUpdate-3, first listed in opset4). Unknown types keep the number."""
    lowered = type_name.lower()
    held = [n for n in sorted(OPSETS) if n >= version and lowered in _BY_LOWER[n]]
    return f"opset{held[0] if held else version}"


def newest_opset_holding(type_name: str) -> str:
    """The newest OpenVINO opset that holds `type_name` (the newest complete opset when none
    does, so that resolving the layer says why)."""
    held = [n for n in sorted(OPSETS) if type_name.lower() in _BY_LOWER[n]]
    return f"opset{held[-1]}" if held else newest_complete_opset()


def newest_complete_opset() -> str:
    """The newest OpenVINO opset that is complete (one under development lists only its new ops)."""
    return f"opset{max(n for n, types in OPSETS.items() if 'Result' in types)}"


def did_you_mean(type_name: str, names: Iterable[str]) -> str:
    by_lower = {n.lower(): n for n in names}
    close = difflib.get_close_matches(type_name.lower(), list(by_lower), n=3, cutoff=0.7)
    return f"; did you mean {' or '.join(by_lower[c] for c in close)}?" if close else ""
