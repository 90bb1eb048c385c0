"""`irscatter info`: a model described without running it."""

from __future__ import annotations

import argparse
import json

from irscatter.cli.arguments import ModelArguments
from irscatter.summary import describe

DESCRIPTION = "Describe a model without running it: header, inputs, outputs, opsets and op histogram."


def cmd_info(args: argparse.Namespace) -> int:
    info = describe(args.model, args.bin)
    if args.json:
        print(json.dumps(info, indent=2, default=str))
        return 0
    print(f"model:      {info['name'] or '(unnamed)'}  ({info['file']})")
    print(f"IR version: {info['ir_version']}")
    print(f"layers:     {info['layers']}")
    if info["missing_weights"]:
        missing = info["missing_weights"]
        print(f"weights:    missing: {missing['file']} not found, and {missing['constants']} "
              f"constant{'s need' if missing['constants'] != 1 else ' needs'} it")
    else:
        print(f"weights:    {info['bin_file'] or '(none)'}"
              + (f", {info['bin_size']} bytes" if info["bin_size"] is not None else ""))
    print("inputs:")
    for i in info["inputs"]:
        print(f"  {i['name']}: {i['element_type']} {_shape_text(i['shape'])}")
    print("outputs:")
    for o in info["outputs"]:
        print(f"  {o['name']}: {o['element_type'] or '?'} {_shape_text(o['shape'])}")
    print("opsets:     " + ", ".join(f"{k} ({v})" for k, v in info["opsets"].items()))
    print("ops:")
    for name, count in info["ops"].items():
        print(f"  {count:6d}  {name}")
    if info["layers_without_kernel"]:
        print("layers without a kernel:")
        for layer in info["layers_without_kernel"]:
            print(f"  layer {layer['id']} \"{layer['name']}\" ({layer['type']}, {layer['version']})")
    return 0


def _shape_text(dims: list | None) -> str:
    """A shape record as errors print shapes: [?, 3]."""
    return "[?]" if dims is None else "[" + ", ".join(map(str, dims)) + "]"


def add_parser(sub, common: argparse.ArgumentParser) -> None:
    info = sub.add_parser("info", help="describe a model without running it", parents=[common],
                          description=DESCRIPTION)
    ModelArguments.add_to(info, "; only its size is read")
    info.add_argument("--json", action="store_true", help="print the description as one JSON object")
    info.set_defaults(func=cmd_info)
