"""`irscatter ops`: the ops irscatter implements, and every error label with its meaning."""

from __future__ import annotations

import argparse
import json
from typing import Any

from irscatter import labels
from irscatter.ops import registry

DESCRIPTION = ("List the ops irscatter implements, a row per type with its versions and family (--json for "
               "details, --labels for every error label and its meaning).")


def cmd_ops(args: argparse.Namespace) -> int:
    ops = registry.supported()
    if args.labels:
        return _print_labels(ops, args.json)
    if args.json:
        print(json.dumps([{"domain": c.domain, "type": c.type_name, "version": c.version,
                           "opsets": registry.opsets_of(c), "module": c.__module__,
                           "labels": c.constraint_labels()} for c in ops], indent=2))
        return 0
    print(_ops_table(ops))
    return 0


def _ops_table(ops: list) -> str:
    """One row per op type: its domain, its versions and the family (module) it lives in."""
    rows: dict[tuple[str, str], list[Any]] = {}
    for c in ops:
        rows.setdefault((c.domain, c.type_name), []).append(c)
    lines = [f"{'domain':<10} {'type':<34} {'versions':<16} family"]
    for (domain, type_name), classes in sorted(rows.items(), key=lambda item: (item[0][0] != "opset", item[0])):
        versions = ", ".join(str(c.version) for c in sorted(classes, key=lambda c: c.version))
        family = classes[0].__module__.split(".")[2] if classes[0].__module__.startswith("irscatter.ops.") else "user"
        lines.append(f"{domain:<10} {type_name:<34} {versions:<16} {family}")
    types = len(rows)
    lines.append(f"{types} op types, {len(ops)} versions")
    return "\n".join(lines)


def _print_labels(ops: list, as_json: bool) -> int:
    """Every label an error or finding can carry: the shared ones, then each op's own."""
    per_op = {c.label() if c.domain == "opset" else f"{c.domain}:{c.label()}": c.constraint_labels() for c in ops}
    if as_json:
        print(json.dumps({"shared": labels.SHARED, "kinds": labels.KINDS, "ops": per_op}, indent=2))
        return 0
    width = max(map(len, [*labels.SHARED, *labels.KINDS]))
    print("shared labels:")
    for name, meaning in labels.SHARED.items():
        print(f"  {name:<{width}}  {meaning}")
    print("labels of errors that carry no rule's label (the error's kind):")
    for name, meaning in labels.KINDS.items():
        print(f"  {name:<{width}}  {meaning}")
    for op, table in per_op.items():
        if table:
            print(f"{op}:")
            for name, meaning in table.items():
                print(f"  {name:<{width}}  {meaning}")
    return 0


def add_parser(sub, common: argparse.ArgumentParser) -> None:
    ops = sub.add_parser("ops", help="list the ops irscatter implements", parents=[common], description=DESCRIPTION)
    ops.add_argument("--json", action="store_true",
                     help="print every registered op version with its module and labels as JSON")
    ops.add_argument("--labels", action="store_true", help="list every error label with its meaning")
    ops.set_defaults(func=cmd_ops)
