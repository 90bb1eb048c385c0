"""OpenVINO's opset tables, as data: which op types each opset holds, and in which version.

The data is `opset_tables.json`, written by tools/make_opset_tables.py from the `opset*_tbl.hpp`
files of the pinned openvino wheel; do not edit it by hand. `SPANS[type]` lists the runs of
consecutive opsets that hold one version of the type, as (first opset, last opset, version), a
version being numbered by the opset that introduced it. `OPSETS[n][type]` is the same read by
opset. Some opsets still under development list only a few types (OpenVINO refuses the others
in them).
"""

from __future__ import annotations

import json
from pathlib import Path

_DATA = json.loads((Path(__file__).with_name("opset_tables.json")).read_text(encoding="utf-8"))

OPENVINO_VERSION: str = _DATA["openvino"]
SPANS: dict[str, tuple[tuple[int, int, int], ...]] = {
    type_name: tuple(tuple(run) for run in runs) for type_name, runs in _DATA["spans"].items()
}


def _by_opset() -> dict[int, dict[str, int]]:
    table: dict[int, dict[str, int]] = {}
    for type_name, runs in SPANS.items():
        for first, last, version in runs:
            for number in range(first, last + 1):
                table.setdefault(number, {})[type_name] = version
    return {n: dict(sorted(table[n].items())) for n in sorted(table)}


OPSETS: dict[int, dict[str, int]] = _by_opset()
