"""`irscatter examples`: the example layers of spec documents run and their stated values
checked (`irscatter.examples`)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from irscatter import examples
from irscatter.cli.output import PROG
from irscatter.errors import MESSAGE_LIMIT, FileAccessError, UsageError, elide

DESCRIPTION = ("Run the example <layer>s of spec documents (.rst, .md, .xml pages) and check the values they "
               "state.")


def cmd_examples(args: argparse.Namespace) -> int:
    found, empty = [], []
    for path in args.files:
        if Path(path).is_file() and b"\0" in _head(path):
            raise UsageError(f"{path}: a binary file, not a document (examples reads .rst, .md, .xml and .txt pages)")
        document = examples.run_document(path)
        found += document
        if not document:
            empty.append(path)
    if args.json:
        print(json.dumps({"examples": [ex.to_json() for ex in found], "summary": examples.summary_line(found)},
                         indent=2, default=str))
    else:
        for ex in found:
            print(examples.example_line(ex))
            if ex.repairs:
                print("    repaired: " + "; ".join(ex.repairs))
        print(examples.summary_line(found))
    for path in empty:  # asked to check a document with nothing to check: say so, and fail
        print(f"{PROG}: {elide(path, MESSAGE_LIMIT)}: no examples found (no <layer> element at the start of a line)",
              file=sys.stderr)
    return 0 if all(ex.ok for ex in found) and not empty else 1


def _head(path: str, size: int = 65536) -> bytes:
    """The first `size` bytes of a file (all of it when shorter), read no further."""
    try:
        with open(path, "rb") as f:
            return f.read(size)
    except OSError as e:
        raise FileAccessError(f"cannot read document: {e.strerror}", file=path) from None


def add_parser(sub, common: argparse.ArgumentParser) -> None:
    docs = sub.add_parser("examples", help="run the example layers of spec documents and check their values",
                          parents=[common], description=DESCRIPTION)
    docs.add_argument("files", nargs="+", metavar="FILE", help=".rst, .md, .xml or .txt documents")
    docs.add_argument("--json", action="store_true", help="print each example's result as JSON records")
    docs.set_defaults(func=cmd_examples)
