"""`irscatter reduce`: a model shrunk to a minimal one that still fails, on a target runtime
(its outputs outside irscatter's tolerance, or a crash) or under a command (--check), written
as a reproducer folder: model.xml, model.bin, inputs.npz, expected.npz (irscatter's values),
actual.npz (the target's) and README.md. Exit status: 0 a reproducer written, 1 the failure
does not reproduce, 2 a usage error."""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

from irscatter.cli.arguments import FeedArguments, ModelArguments, TargetArguments
from irscatter.cli.output import progress, seconds, writing
from irscatter.errors import UsageError
from irscatter.targets import TargetFailure

DESCRIPTION = ("Shrink a model that fails on a target (or a --check command) to a small reproducer folder: the "
               "smallest cut that still fails, its inputs, expected values and a README.")


def cmd_reduce(args: argparse.Namespace) -> int:
    if args.check and TargetArguments.given(args):
        raise UsageError("--check decides by its command; --target, --target-precision and the tolerances "
                         "belong to a target")
    if args.fail_regex and not args.check:
        raise UsageError("--fail-regex only applies with --check")
    out = Path(args.output)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise UsageError(f"-o {args.output}: give a new or empty folder for the reproducer")
    made = not out.exists()
    with writing("-o", out):  # made now, so that a folder the OS refuses is refused before any work
        out.mkdir(parents=True, exist_ok=True)
    try:
        return _reduce_into(args, out)
    finally:
        if made and out.is_dir() and not any(out.iterdir()):
            out.rmdir()  # no reproducer written: no folder left behind


def _reduce_into(args: argparse.Namespace, out: Path) -> int:
    """reduce, once its arguments are checked and its folder `out` made."""
    from irscatter.debug import compare, reduce
    from irscatter.debug.tolerances import check_model_overrides

    compiled = ModelArguments.read(args, args.model).compile()
    feeds = FeedArguments.checked(FeedArguments.feeds(args, compiled), compiled)
    values = compare.reference_values(compiled, feeds)
    target = None
    check: reduce.TargetCheck | reduce.CommandCheck
    if args.check:
        check = reduce.CommandCheck(args.check, args.fail_regex, args.timeout)
    else:
        precision = args.target_precision or "f32"
        tolerances = TargetArguments.tolerances(args, precision)
        check_model_overrides(tolerances, compiled)
        target = compare.open_target(args.target or "openvino", precision, args.timeout, TargetArguments.properties(args))
        check = reduce.TargetCheck(compiled, target, tolerances)
    try:
        if target is not None:
            target.describe()  # fails here, once, when the target cannot start
        with progress(args, "candidates checked") as callback:
            reduction = reduce.reduce_model(compiled, values, check, progress=callback)
        if not reduction.reproducible:
            print(f"not reproducible: {reduction.note} ({reduction.checks} check{'s' if reduction.checks != 1 else ''}, "
                  f"{reduction.seconds:.1f} s)")
            return 1
        with writing("-o", out):
            reduce.write_reproducer(compiled, values, reduction, check, out, shlex.join(["irscatter", *sys.argv[1:]]))
    except TargetFailure as e:
        raise UsageError(f"--target {args.target or 'openvino'}: {e.message}") from None
    finally:
        if target is not None:
            target.close()
    graph = compiled.graph
    cut = reduction.cut
    assert cut is not None  # (a reproducible reduction holds the cut it found)
    kept = [graph.layers[lid].name for lid in cut.layers if graph.type_of(lid) not in ("Parameter", "Const")]
    print(f"reduced to {len(kept)} layer{'s' if len(kept) != 1 else ''} ({', '.join(kept[:8])}"
          f"{', ...' if len(kept) > 8 else ''}) in {reduction.checks} checks, {reduction.seconds:.1f} s; "
          f"wrote the reproducer to {out}/")
    if reduction.note:
        print(f"note: {reduction.note}")
    return 0 if reduction.deterministic else 1  # (a reproducer that may not reproduce is no pass)


def add_parser(sub, common: argparse.ArgumentParser) -> None:
    red = sub.add_parser("reduce", parents=[common], description=DESCRIPTION,
                         help="shrink a model that fails on a target to a minimal reproducer")
    ModelArguments.add_to(red)
    red.add_argument("-o", "--output", required=True, metavar="DIR", help="a new or empty folder for the reproducer")
    FeedArguments.add_to(red)
    TargetArguments(defaults=False).add_to(red)
    red.add_argument("--check", metavar="CMD", help="instead of a target: a shell command given {model} and {inputs} "
                     "(the candidate's files) that fails by a non-zero exit status")
    red.add_argument("--fail-regex", metavar="REGEX",
                     help="with --check: fail when the command's output (its last MiB) matches")
    red.add_argument("--timeout", type=seconds, default=120.0, metavar="SECONDS",
                     help="how long one check may take before it counts as hung")
    red.set_defaults(func=cmd_reduce)
