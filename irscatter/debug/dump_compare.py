"""Two saved sets of tensors from any runtime (`run --dump`'s, another runtime's own dump),
judged key by key by the one rule: the first against the second, the reference.

Another runtime names its tensors its own way (an output index, a node name), so a map may
give each of the judged dump's names the reference's name for it: a `"<layer name>:<port>"`
key of irscatter's dump, or an output's tensor name. A name on one side only is listed, never
dropped: a tensor of the reference that the judged dump lacks keeps the comparison from
passing, since a dump named otherwise would otherwise pass unexamined.

Element types need not match. A dump in f16 or bf16 is judged against an f32 reference in the
reference's type: its values widened (exactly), the tolerance that of its own precision, so
that a runtime inferring in f16 is held to f16's presets and nothing else; the report says so
in one line. Integers of two widths are compared when no value changes between them.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path

import ml_dtypes
import numpy as np

from irscatter.debug.tolerances import Tolerances, judge_across_types
from irscatter.debug.verdicts import MISSING, LayerResult, Report, TensorResult, listed, side_names
from irscatter.errors import UsageError


def compare_dumps(target: Mapping[str, np.ndarray], reference: Mapping[str, np.ndarray], tolerances: Tolerances,
                  names: Sequence[str] = ("A", "B"), renames: Mapping[str, str] | None = None) -> Report:
    """Two saved sets of tensors (from any runtime), key by key: `target` judged against
    `reference`. `renames` gives some of `target`'s keys the reference's names for them
    (`read_map`); a key on one side only is listed as not compared."""
    report = Report(f"{names[1]} (reference)", f"{names[0]}", "dumps")
    report.target_name, report.reference_name = side_names(names[0], names[1])
    judged, called = _renamed(target, reference, renames or {}, report)
    keys = list(reference) + [k for k in judged if k not in reference]
    widened: dict[tuple[str, str], list[str]] = {}
    for position, key in enumerate(keys):
        record = LayerResult(position, position, key, "", None, "pending")
        if key not in judged:
            record.status, record.reason = "not compared", MISSING
        elif key not in reference:
            record.status, record.reason = "not compared", f"only in {names[0]}"
        else:
            tensor_diff, cast = judge_across_types(judged[key], reference[key], tolerances, key, report.sides)
            if cast:
                widened.setdefault(cast, []).append(key)
            record.tensors.append(TensorResult(key, tensor_diff))
            record.status = "passed" if tensor_diff.passed else "failed"
            if called.get(key, key) != key:
                record.reason = f'"{called[key]}" in {report.target_name}'
        report.layers.append(record)
    for (theirs, ours), keys_cast in widened.items():
        report.notes.append(f"compared in {report.reference_name}'s element type {ours}: {len(keys_cast)} "
                            f"tensor{'s' if len(keys_cast) != 1 else ''} {theirs} in {report.target_name}, judged "
                            f"at the tolerance of {theirs}, its ulps counted in {theirs} ({listed(keys_cast)})")
    return report


def _renamed(target: Mapping[str, np.ndarray], reference: Mapping[str, np.ndarray], renames: Mapping[str, str],
             report: Report) -> tuple[dict[str, np.ndarray], dict[str, str]]:
    """`target` under the reference's names where `renames` gives them, and each new key's
    name in `target`. A mapped name the reference holds as an output's tensor name
    ("tensor:<name>", as `run --dump` keeps one that is another port's address) takes that
    key; one the reference does not hold at all leaves the tensor under its own name. What
    the map names in vain, on either side, is noted."""
    judged: dict[str, np.ndarray] = {}
    called: dict[str, str] = {}
    absent = [name for name in renames if name not in target]
    unknown = []
    for name, value in target.items():
        key = renames.get(name, name)
        if key not in reference and f"tensor:{key}" in reference:
            key = f"tensor:{key}"
        if key not in reference and name in renames:
            unknown.append(f"{name} -> {renames[name]}")
            key = name
        if key in judged:
            raise UsageError(f'{report.target_name}: "{called[key]}" and "{name}" both stand for "{key}" '
                             "once the map is applied")
        judged[key], called[key] = _readable(value), name
    if absent:
        report.notes.append(f"the map names {len(absent)} tensor{'s' if len(absent) != 1 else ''} "
                            f"{report.target_name} does not hold: {listed(absent)}")
    if unknown:
        report.notes.append(f"the map gives {len(unknown)} tensor{'s' if len(unknown) != 1 else ''} a name "
                            f"{report.reference_name} does not hold: {listed(unknown)}")
    return judged, called


def _readable(value: np.ndarray) -> np.ndarray:
    """A saved bf16 array as bf16: numpy, lacking the type, saves ml_dtypes' bfloat16 as
    2-byte raw values ("|V2"), which no other type of a dump is."""
    value = np.asarray(value)
    if value.dtype.kind == "V" and value.dtype.itemsize == 2 and value.dtype.fields is None:
        return value.view(ml_dtypes.bfloat16)
    return value


def read_map(path: str | os.PathLike) -> dict[str, str]:
    """A map of a dump's tensor names to the reference's: a JSON object {"dump name":
    "reference name"}, or text with one pair a line (two names apart by white space or a tab;
    blank lines and lines starting with # are skipped). Raises `UsageError` naming the file
    and line of what it cannot read."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise UsageError(f"{path}: cannot read the map ({e.strerror if isinstance(e, OSError) else e})") from None
    pairs = _json_pairs(path, text) if text.lstrip().startswith(("{", "[")) else _text_pairs(path, text)
    out: dict[str, str] = {}
    for where, name, key in pairs:
        if name in out and out[name] != key:
            raise UsageError(f'{path}{where}: "{name}" is mapped twice, to "{out[name]}" and to "{key}"')
        out[name] = key
    if not out:
        raise UsageError(f"{path}: the map is empty")
    return out


def _json_pairs(path: Path, text: str) -> list[tuple[str, str, str]]:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise UsageError(f"{path}: line {e.lineno}: not JSON ({e.msg})") from None
    if not isinstance(data, dict) or not all(isinstance(k, str) and isinstance(v, str) and k and v
                                             for k, v in data.items()):
        raise UsageError(f'{path}: expected a JSON object of names, {{"name in the dump": "reference name"}}')
    return [("", k, v) for k, v in data.items()]


def _text_pairs(path: Path, text: str) -> list[tuple[str, str, str]]:
    pairs = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        fields = line.split()
        if len(fields) != 2:
            raise UsageError(f"{path}: line {number}: expected two names, the dump's and the reference's, "
                             f"got {len(fields)}")
        pairs.append((f": line {number}", fields[0], fields[1]))
    return pairs
