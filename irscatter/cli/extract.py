"""`irscatter extract`: the subgraph that computes the --outputs tensors from the --from tensors
(or the model's inputs), or the layers around one, written as a standalone IR: cut tensors
become Parameters with their inferred types and shapes. Given values (--values, or the model's
inputs to compute them from), inputs.npz and expected.npz are written beside it. Tensors are
output names, tensor names or "<layer name>:<port id>"."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from irscatter.cli.arguments import FeedArguments, ModelArguments
from irscatter.cli.output import count, output_path, writing
from irscatter.errors import UsageError
from irscatter.runtime import inputs as model_inputs

DESCRIPTION = ("Write the part of a model that computes some tensors (--outputs) or surrounds a layer (--around) "
               "as a standalone IR, with inputs to run it.")


def cmd_extract(args: argparse.Namespace) -> int:
    from irscatter.debug import compare, extract

    if bool(args.outputs) == bool(args.around):
        raise UsageError("extract takes --outputs NAME[,NAME...] or --around LAYER, one of the two")
    if args.around and args.cut_from:
        raise UsageError("--from names where the cut of --outputs starts; --around finds its own")
    if args.inputs and not Path(args.inputs).exists() and not args.inputs.lower().endswith((".npz", ".npy")):
        raise UsageError(f"--inputs {args.inputs}: --inputs is the model's inputs (FILE.npz), as in every command; "
                         f"the tensors the cut is fed instead of computing go in --from NAME[,NAME...]")
    if args.values and FeedArguments.given(args):
        raise UsageError("--values gives every tensor's value; the model's inputs are not needed beside it")
    compiled = ModelArguments.read(args, args.model).compile()
    if args.around:
        cut = extract.around(compiled, args.around, args.hops)
    else:
        cut = extract.plan(compiled, extract.resolve(compiled, _names(args.outputs), "--outputs"),
                           extract.resolve(compiled, _names(args.cut_from or ""), "--from"))
    values: Mapping[extract.Source, np.ndarray] | None = None
    if args.values:
        values = extract.values_from_dump(compiled, model_inputs.load_npz(args.values))
    elif FeedArguments.given(args):
        feeds = FeedArguments.feeds(args, compiled)
        values = compare.reference_values(compiled, feeds)
    xml = output_path(args.output, flag="-o", suffix=".xml", folder_made=True)
    with writing("-o", xml):
        written = extract.write(compiled, cut, xml, values)
    graph = compiled.graph
    kept = [graph.layers[lid].name for lid in cut.layers if graph.type_of(lid) not in ("Parameter", "Const")]
    beside = ", with inputs.npz and expected.npz beside it" if values is not None else ""
    listed = "no layer computes anything: each output is an input or a constant" if not kept else \
        f"{len(kept)} layer{'s' if len(kept) != 1 else ''}: {', '.join(kept[:8])}{', ...' if len(kept) > 8 else ''}"
    print(f"wrote {written.xml} ({listed}){beside}", file=sys.stderr)
    return 0


def _names(text: str) -> list[str]:
    return [n for n in (part.strip() for part in text.split(",")) if n]


def add_parser(sub, common: argparse.ArgumentParser) -> None:
    ext = sub.add_parser("extract", parents=[common], description=DESCRIPTION,
                         help="write the part of a model that computes some tensors as a standalone IR")
    ModelArguments.add_to(ext)
    ext.add_argument("--outputs", metavar="NAME[,NAME...]", help="the tensors the new model returns")
    ext.add_argument("--from", dest="cut_from", metavar="NAME[,NAME...]",
                     help="with --outputs: the tensors the cut is fed instead of computing")
    ext.add_argument("--around", metavar="LAYER", help="instead: the layers within --hops edges of this layer")
    ext.add_argument("--hops", type=count(0), default=1, metavar="K", help="with --around: how far (default 1)")
    ext.add_argument("-o", "--output", required=True, metavar="SUB.xml", help="where to write the new model")
    ext.add_argument("--values", metavar="DUMP.npz", help="every tensor's value, as run --dump saves them")
    FeedArguments.add_to(ext)
    ext.set_defaults(func=cmd_extract)
