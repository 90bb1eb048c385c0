"""The options several commands share, in groups a command subscribes to: it adds a group's
options to its parser (`add_to`) and reads them back through the group, which turns them into
what the library takes (a model, feeds, tolerances), and a refusal from the library into one
that names the flags.

    GlobalOptions     --debug, --limit, --quiet: before the command or after it
    ModelArguments    the model's .xml file and --bin
    FeedArguments     the model's inputs: --inputs, -i, --random, --seed, --shape, --range
    TargetArguments   the runtime judged and the tolerances: --target, --target-precision,
                      --rtol, --atol, --tol

and `FLAGS`, the flag that feeds each argument of the library calls the commands make, which
`in_flags` words a library's usage error with.
"""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

from irscatter import limits
from irscatter.api import read_model
from irscatter.cli.output import count, note, progress, tolerance
from irscatter.errors import ExecutionError, IRError, UsageError
from irscatter.runtime import inputs as model_inputs

# The flag each argument of a library call comes from, by the argument's keyword: a library's
# usage error speaks of the arguments by keyword (`UsageError.parts`), the command line of its
# flags. A keyword here means the same in every call a command makes with it.
FLAGS = {
    "file": "--inputs", "arrays": "-i", "shapes": "--shape", "ranges": "--range",  # runtime.inputs.gather_feeds
    "target": "--target", "precision": "--target-precision", "properties": "--target-config",  # compare.open_target
    "overrides": "--tol",  # tolerances.Tolerances.parse
    "layer_name": "--around", "hops": "--hops",  # extract.around
    "command": "--check", "pattern": "--fail-regex",  # reduce.CommandCheck
    "ray": "--ray",  # campaign.run_campaign
}


def in_flags(error: IRError) -> str:
    """The error's line as the command line says it: the arguments a usage error speaks of
    named by their flags."""
    return error.worded(FLAGS) if isinstance(error, UsageError) else str(error)


class GlobalOptions:
    """--debug, --limit and --quiet, before the command or after it."""

    @staticmethod
    def add_to(parser: argparse.ArgumentParser, default: Callable[[Any], Any]) -> None:
        """The options with their defaults through `default`: the subcommands' copies default to
        nothing at all (argparse.SUPPRESS), so that a flag given before the command is not reset
        after it."""
        parser.add_argument("--debug", action="store_true", default=default(False),
                            help="show a Python traceback on errors")
        parser.add_argument("--limit", action="append", metavar="NAME=N", default=default(None),
                            help="change a resource limit, e.g. tensor_bytes=1e9 (see irscatter.limits.Limits)")
        parser.add_argument("--quiet", action="store_true", default=default(False),
                            help="no progress bars (they show only on a terminal anyway)")

    @staticmethod
    def apply_limits(items: list[str]) -> None:
        """Each --limit NAME=N, checked and set."""
        names = {f.name for f in dataclasses.fields(limits.Limits)}
        for item in items:
            name, sep, value = item.partition("=")
            if not sep or name not in names:
                raise UsageError(f'--limit expects NAME=N with NAME one of {", ".join(sorted(names))}, got "{item}"')
            try:
                number = int(float(value)) if any(c in value for c in ".eE") else int(value)
            except (ValueError, OverflowError):  # OverflowError: inf, or a number past float's range
                raise UsageError(f"--limit {item}: {value!r} is not a finite number") from None
            low, high = limits.RANGES[name]
            if not low <= number <= high:
                raise UsageError(f"--limit {item}: {name} takes a whole number from {low} to {high}")
            limits.configure(**{name: number})


class ModelArguments:
    """The model a command reads: its .xml file and the weights file beside it (--bin)."""

    @staticmethod
    def add_to(parser: argparse.ArgumentParser, bin_note: str = "") -> None:
        parser.add_argument("model", help="the model's .xml file")
        ModelArguments.add_bin(parser, bin_note)

    @staticmethod
    def add_bin(parser: argparse.ArgumentParser, bin_note: str = "") -> None:
        parser.add_argument("--bin", help=f"the weights file (default: the .xml's sibling .bin{bin_note})")

    @staticmethod
    def read(args: argparse.Namespace, model: str):
        """The model a command runs on, with a progress bar while a large document is read."""
        with progress(args, "B", delay=0.5) as callback:
            return read_model(model, args.bin, progress=callback)


class FeedArguments:
    """The model's inputs, as run, compare, reduce and extract take them: --inputs, then -i, then
    --random for what is left (`runtime.inputs.gather_feeds`)."""

    @staticmethod
    def add_to(parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--inputs", metavar="FILE.npz",
                            help="the model's inputs keyed by input name (or one .npy for a one-input model)")
        parser.add_argument("-i", "--input", action="append", metavar="NAME=FILE.npy",
                            help="one input from a .npy file")
        parser.add_argument("--random", action="store_true", help="draw every input not given otherwise at random")
        parser.add_argument("--seed", type=count(0), help="with --random: the seed (default 0)")
        parser.add_argument("--shape", action="append", metavar="NAME=d0,d1,...",
                            help="shape to draw for a dynamic input")
        parser.add_argument("--range", action="append", metavar="NAME=LO,HI",
                            help="with --random: draw this input within [LO, HI] (default: what the layers reading "
                                 "it accept)")

    @staticmethod
    def given(args: argparse.Namespace) -> bool:
        """Whether any input was asked for (--inputs, -i or --random)."""
        return bool(args.inputs or args.input or args.random)

    @staticmethod
    def orphans(args: argparse.Namespace) -> list[tuple[str, Any, str, bool]]:
        """(flag, value, the flag it needs, whether that one is given) of the options that only
        mean something beside --random."""
        return [("--seed", args.seed, "--random", args.random), ("--shape", args.shape, "--random", args.random),
                ("--range", args.range, "--random", args.random)]

    @staticmethod
    def feeds(args: argparse.Namespace, compiled) -> dict[str, Any]:
        """The feeds the options ask for."""
        arrays: list[tuple[str | None, str]] = []
        for item in args.input or []:
            name, sep, path = item.partition("=")
            if not sep and item.lower().endswith(".npy"):  # one array: the input of a one-input model
                arrays.append((None, item))
                continue
            if not sep or not name:
                raise UsageError(f'-i expects NAME=FILE.npy (or FILE.npy for a one-input model), got "{item}"')
            arrays.append((name, path))
        shapes: dict[str, tuple[int, ...]] = {}
        for name, dims in map(_parse_shape, (args.shape or []) if args.random else []):
            if name in shapes:
                raise UsageError(f'--shape gives input "{name}" twice')
            shapes[name] = dims
        try:
            return model_inputs.gather_feeds(compiled, file=args.inputs, arrays=arrays, random=args.random,
                                             seed=args.seed or 0, shapes=shapes, ranges=args.range or [],
                                             required=not getattr(args, "steps", 1) > 1, on_defaults=_note_defaults)
        except model_inputs.FeedRequestError as e:
            raise UsageError(_feed_request_in_flags(e), argument=e.argument, value=e.value) from None

    @staticmethod
    def checked(feeds: dict[str, Any], compiled) -> dict[str, Any]:
        """The feeds of `compare` and `reduce`, bound as a run would bind them before any work: one
        that does not fit the model is a usage error (exit 2), so that exit 1 keeps meaning what
        the command found (a divergence, a failure that does not reproduce)."""
        try:
            compiled.feed_arrays(feeds)
        except ExecutionError as e:
            if e.label not in _FEED_LABELS:
                raise
            raise UsageError(str(e)) from None
        return feeds


_FEED_LABELS = ("unknown-input", "missing-input", "fed-twice", "feed-dtype", "feed-shape")


def _parse_shape(text: str) -> tuple[str, tuple[int, ...]]:
    name, sep, dims = text.partition("=")
    if not sep or not name:
        raise UsageError(f'--shape expects NAME=d0,d1,..., got "{text}"')
    try:
        return name, tuple(int(d) for d in dims.split(",")) if dims.strip() else ()
    except ValueError:
        raise UsageError(f'--shape {text}: dimensions must be integers') from None


def _feed_request_in_flags(e: model_inputs.FeedRequestError) -> str:
    """A refused request for feeds, in the terms of the flags that made it."""
    flag = FLAGS.get(e.argument or "", "")
    if e.reason == "not-one-input":
        return f"{flag} {e.subject}: {e.detail}: give -i NAME=FILE.npy or an .npz"
    if e.reason == "twice":
        return f'{flag} gives input "{e.subject}" twice'
    if e.reason == "unknown-input":
        return f"{flag} names no input of the model: {e.subject} ({e.detail})"
    if e.reason == "fed":
        does = "sizes" if e.argument == "shapes" else "bounds"
        return f"{flag} {e.subject}: that input is fed (--inputs or -i); {flag} {does} what --random draws"
    return f"{e.detail}: give --inputs FILE.npz, -i NAME=FILE.npy, or --random"


def _note_defaults(defaulted: dict[str, tuple[int, ...]]) -> None:
    drawn = ", ".join(f"{name} as [{', '.join(map(str, shape))}]" for name, shape in defaulted.items())
    note(f"dynamic inputs drawn at their smallest shape (lower bound, or 1): {drawn}; "
         "--shape NAME=d0,d1,... chooses another")


class TargetArguments:
    """The runtime to judge and the tolerances, as compare, reduce and keep-f32 take them.
    Without `defaults` an option left out stays None, so that reduce can tell it from one given
    beside --check, and compare a --target given with two IRs (the defaults then apply in
    reduce and compare). The first of `precisions` is the default."""

    def __init__(self, defaults: bool, precisions: Sequence[str] = ("f32", "f16", "bf16")) -> None:
        self.defaults, self.precisions = defaults, precisions

    def add_to(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--target", default="openvino" if self.defaults else None, metavar="openvino[:DEVICE]",
                            help="the runtime to judge: openvino on CPU (the default) or a DEVICE, run in a separate "
                                 "process; or python:MODULE:NAME, a runtime of your own (docs/debugging.md)")
        parser.add_argument("--target-precision", default=self.precisions[0] if self.defaults else None,
                            choices=list(self.precisions),
                            help="the target's inference precision (OpenVINO's INFERENCE_PRECISION_HINT, default "
                                 f"{self.precisions[0]}); the tolerance presets follow the precision the device says "
                                 "it ran, which the report names (a CPU without f16 or bf16 arithmetic runs f32)")
        parser.add_argument("--rtol", type=tolerance,
                            help="relative tolerance for floats (default: the precision's preset)")
        parser.add_argument("--atol", type=tolerance, help="absolute tolerance for floats, in units of the tensor's "
                            "largest magnitude when that is over 1 (default: the precision's preset)")
        parser.add_argument("--tol", action="append", metavar="PATTERN=RTOL[,ATOL]",
                            help="a tolerance for the tensors whose \"<layer name>:<port>\" matches the regular "
                                 "expression")
        parser.add_argument("--target-config", action="append", metavar="KEY=VALUE",
                            help="an OpenVINO property for compile_model, e.g. DYNAMIC_QUANTIZATION_GROUP_SIZE=0 "
                                 "(the CPU plugin's dynamic quantization off); repeatable")

    @staticmethod
    def given(args: argparse.Namespace) -> bool:
        """Whether any of the group's options was given (reduce refuses them beside --check)."""
        return bool(args.target or args.target_precision or args.tol or args.rtol is not None
                    or args.atol is not None or args.target_config)

    @staticmethod
    def properties(args: argparse.Namespace) -> dict[str, str]:
        """The --target-config properties, KEY=VALUE each."""
        pairs = [item.partition("=") for item in args.target_config or []]
        bad = [key + sep + value for key, sep, value in pairs if not sep or not key.strip()]
        if bad:
            raise UsageError(f"--target-config {bad[0]}: expects KEY=VALUE")
        return {key.strip(): value.strip() for key, _, value in pairs}

    @staticmethod
    def tolerances(args: argparse.Namespace, precision: str):
        """How the target's tensors are judged at `precision`."""
        from irscatter.debug.tolerances import Tolerances

        return Tolerances.parse(precision, args.rtol, args.atol, args.tol or [])
