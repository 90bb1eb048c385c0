"""Regenerate irscatter/ir/opset_tables.json from the opset tables shipped in the openvino wheel.

OpenVINO lists the op types of each opset in `openvino/include/openvino/opsets/opsetN_tbl.hpp`,
one `_OPENVINO_OP_REG(Type, ov::op::vK)` line per type. irscatter names an op version by the
opset that introduced it, so each (type, namespace) pair is numbered by the first opset that
lists it. Run it after bumping the pinned openvino in pyproject.toml:

    python tools/make_opset_tables.py
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import openvino

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "irscatter" / "ir" / "opset_tables.json"
_ENTRY = re.compile(r"^\s*_OPENVINO_OP_REG\(\s*(\w+)\s*,\s*ov::op::(\w+)\s*\)", re.MULTILINE)


def read_tables(folder: Path) -> dict[int, list[tuple[str, str]]]:
    tables = {}
    for path in folder.glob("opset*_tbl.hpp"):
        number = int(re.fullmatch(r"opset(\d+)_tbl\.hpp", path.name).group(1))
        text = re.sub(r"//[^\n]*", "", path.read_text())  # superseded entries are commented out
        tables[number] = _ENTRY.findall(text)
    return dict(sorted(tables.items()))


def numbered(tables: dict[int, list[tuple[str, str]]]) -> dict[int, dict[str, int]]:
    """For each opset, its types and the opset that introduced the version it holds."""
    first: dict[tuple[str, str], int] = {}
    out = {}
    for number, entries in tables.items():
        types = {}
        for type_name, namespace in entries:
            if type_name in types:
                raise SystemExit(f"opset{number} lists {type_name} twice")
            types[type_name] = first.setdefault((type_name, namespace), number)
        out[number] = dict(sorted(types.items()))
    return out


def spans(opsets: dict[int, dict[str, int]]) -> dict[str, list[tuple[int, int, int]]]:
    """Per type, the runs of consecutive opsets holding one version: (first, last, version)."""
    out: dict[str, list[tuple[int, int, int]]] = {}
    for number, types in opsets.items():
        for type_name, version in types.items():
            runs = out.setdefault(type_name, [])
            if runs and runs[-1][1] == number - 1 and runs[-1][2] == version:
                runs[-1] = (runs[-1][0], number, version)
            else:
                runs.append((number, number, version))
    return dict(sorted(out.items()))


def render(opsets: dict[int, dict[str, int]], version: str) -> str:
    """The JSON irscatter ships: the OpenVINO release and, per type, its runs of opsets."""
    doc = {"openvino": version, "spans": {t: [list(r) for r in runs] for t, runs in spans(opsets).items()}}
    body = ",\n".join(f"    {json.dumps(t)}: {json.dumps(r)}" for t, r in doc["spans"].items())
    return f'{{\n  "openvino": {json.dumps(version)},\n  "spans": {{\n{body}\n  }}\n}}\n'


def main() -> None:
    folder = Path(openvino.__file__).parent / "include" / "openvino" / "opsets"
    version = openvino.get_version().split("-")[0]
    OUT.write_text(render(numbered(read_tables(folder)), version))
    print(f"wrote {OUT.relative_to(ROOT)} from OpenVINO {version}")


if __name__ == "__main__":
    main()
