"""`irscatter run`: run a model and print or save its outputs, judge them against expected
values (--expected), time every layer (--profile), carry the model's state over steps
(--steps, --feed-back), or look inside the run (--dump, --stats, --check-numerics)."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from irscatter import limits
from irscatter.checks.conformance import finding_line
from irscatter.cli.arguments import FeedArguments, ModelArguments
from irscatter.cli.output import as_json, count, note, output_path, preview, tolerance, writing
from irscatter.debug import dump
from irscatter.errors import UsageError
from irscatter.runtime import inputs as model_inputs
from irscatter.runtime.decompression import DECOMPRESSIONS, decompressing
from irscatter.runtime.precision import PRECISIONS, emulating
from irscatter.runtime.profile import profile
from irscatter.runtime.steps import has_steps, run_steps, split_steps

DESCRIPTION = ("Run a model on inputs (--inputs, -i, or --random) and print or save its outputs; with --expected, "
               "say whether they match saved values. --profile times every layer; --dump, --stats and "
               "--check-numerics look inside.")


def cmd_run_at_precision(args: argparse.Namespace) -> int:
    """`run`, every run of it emulating --precision and decompressing as --decompression says,
    when they are given."""
    with emulating(args.precision), decompressing(args.decompression):
        return cmd_run(args)


def cmd_run(args: argparse.Namespace) -> int:
    _refuse_orphan_flags(args)
    written = output_path(args.output) if args.output else None  # refused before any work
    model = ModelArguments.read(args, args.model)
    compiled = model.compile()
    feeds = FeedArguments.feeds(args, compiled)
    if args.steps < 1:
        raise UsageError(f"--steps must be at least 1, got {args.steps}")
    _refuse_strict_beside(args, feeds)
    debug_status = 0  # 1 when --check-numerics finds a layer that makes NaN or Inf
    if args.steps > 1 or args.feed_back or has_steps(feeds):
        outputs = _run_steps(compiled, feeds, args)
    else:
        # The feeds were read for this run alone, so their buffers are donated: a scatter that
        # is an input's only reader updates it in place, as a serving runtime would.
        donate = [name for name in feeds if name in compiled.input_names]
        if args.profile:
            report = profile(compiled, feeds, args.runs or 1, donate)
            outputs = report.outputs
            print(report.table(None if args.all_layers else 30))
        elif _debugging(args):
            outputs, debug_status = _run_debugging(compiled, feeds, args)
        else:
            outputs = compiled.run(feeds, donate=donate, strict=args.strict)
    if written:
        with writing("--output", written):
            model_inputs.save_npz(written, outputs)
        print(f"wrote {len(outputs)} output{'s' if len(outputs) != 1 else ''} to {written}")
    elif args.stats or args.check_numerics:
        pass  # the statistics or the numerics report is what was asked for; --output keeps the values
    elif args.json:
        print(json.dumps({name: as_json(value) for name, value in outputs.items()}))
    elif not args.profile:  # the profile is what was asked for; --output keeps the values
        for name, value in outputs.items():
            arr = np.asarray(value)
            print(f"{name}: {arr.dtype} {list(arr.shape)}\n    {preview(arr)}")
    strict_status = _print_strict_findings(outputs, compiled.model.source) if args.strict else 0
    if args.expected:
        results = model_inputs.compare_outputs(outputs, model_inputs.load_npz(args.expected),
                                               rtol=args.rtol, atol=args.atol, ulps=args.ulps,
                                               precision=args.precision or "f32")
        where = sys.stderr if args.json else sys.stdout  # (with --json, stdout stays one JSON document)
        for c in results:
            print(f"{'skip' if not c.compared else 'ok  ' if c.ok else 'FAIL'} {c.name}: {c.detail}", file=where)
        print(_verdict_line(results, args.expected), file=where)
        if not all(c.ok for c in results):
            return 1
    return debug_status or strict_status


def _refuse_orphan_flags(args: argparse.Namespace) -> None:
    """A flag that only means something beside another one is refused without it, rather than
    silently ignored."""
    for flag, value, parent, present in [
        *FeedArguments.orphans(args),
        ("--runs", args.runs, "--profile", args.profile), ("--all-layers", args.all_layers, "--profile", args.profile),
        ("--rtol", args.rtol, "--expected", args.expected), ("--atol", args.atol, "--expected", args.expected),
        ("--ulps", args.ulps, "--expected", args.expected),
        ("--layers", args.layers, "--dump or --stats", args.dump or args.stats),
        ("--types", args.types, "--dump or --stats", args.dump or args.stats),
        ("--all", args.all, "--check-numerics", args.check_numerics),
    ]:
        if value not in (None, False) and not present:
            raise UsageError(f"{flag} only applies with {parent}")
    _refuse_debug_conflicts(args)
    if args.ulps is not None and (args.rtol is not None or args.atol is not None):
        raise UsageError("--ulps replaces --rtol/--atol; give one or the other")
    if args.json and args.output:
        raise UsageError("--json prints the outputs and --output saves them; give one or the other")
    if args.json and args.profile:
        raise UsageError("--profile prints a table; --json does not combine with it")
    if args.output and args.dump and Path(output_path(args.output)) == Path(output_path(args.dump, "--dump")):
        raise UsageError(f"--output and --dump name one file, {args.output}: the outputs would overwrite the dump")


def _verdict_line(results: list, expected: str) -> str:
    """One line a person reads first: how many outputs match the expected file."""
    compared = [c for c in results if c.compared]
    failed = [c for c in compared if not c.ok]
    skipped = len(results) - len(compared)
    tail = f" ({skipped} not in it)" if skipped else ""
    if failed:
        return (f"{len(failed)} of {len(compared)} output{'s' if len(compared) != 1 else ''} "
                f"differ{'s' if len(failed) == 1 else ''} from {expected}{tail}")
    return f"{len(compared)} output{'s' if len(compared) != 1 else ''} match{'' if len(compared) != 1 else 'es'} {expected}{tail}"


def _refuse_strict_beside(args: argparse.Namespace, feeds: dict[str, Any]) -> None:
    """--strict reports on one plain run; the other ways of running do not collect findings."""
    if not args.strict:
        return
    if args.steps > 1 or args.feed_back or has_steps(feeds):
        raise UsageError("--strict checks one run; it does not combine with --steps, --feed-back or stepped inputs")
    if args.profile:
        raise UsageError("--strict checks one run; it does not combine with --profile")
    if _debugging(args):
        raise UsageError("--strict does not combine with --dump, --stats or --check-numerics")


def _print_strict_findings(outputs, file: str) -> int:
    """Each strict-mode finding of the run as one line on stderr (as `validate` prints findings);
    1 when there is any."""
    for finding in outputs.findings:
        print(finding_line(finding, file), file=sys.stderr)
    return 1 if outputs.findings else 0


def _run_steps(compiled, feeds: dict[str, Any], args: argparse.Namespace) -> dict[str, np.ndarray]:
    """Run the model `--steps` times in a row, its variables carried from step to step; the
    outputs of every step are keyed `step<k>/<name>`."""
    if args.profile:
        raise UsageError("--profile times one run; it does not combine with --steps or --feed-back")
    if _debugging(args):  # step-keyed inputs are only known once the feeds are read
        raise UsageError("--dump, --stats and --check-numerics look at one run; they do not combine with "
                         "--steps, --feed-back or step-keyed inputs")
    links = _feed_back_links(compiled, args.feed_back or [])
    per_step = split_steps(feeds, args.steps)
    if links and len(per_step) == 1:
        raise UsageError("--feed-back hands an output to the next step, and one step has none: give --steps N "
                         "(N > 1) or step-keyed inputs")
    for out, name in links:
        given = [k for k in range(1, len(per_step)) if name in per_step[k]]
        if given:
            raise UsageError(f'--feed-back {out}={name}: the inputs also give "{name}" for step {given[0]}, which '
                             "would replace the value fed back; give one or the other")
    results: dict[str, np.ndarray] = {}
    kept, most = 0, limits.current().npz_bytes
    for k, (_, outputs) in enumerate(run_steps(compiled, per_step, links)):
        results.update({f"step{k}/{name}": value for name, value in outputs.items()})
        # every step's outputs are kept for the end (one .npz, one listing): as much as one .npz may hold
        kept += sum(np.asarray(value).nbytes for value in outputs.values())
        if kept > most:
            raise UsageError(f"the outputs of steps 0 to {k} take {kept} bytes, over the limit of {most} for what "
                             "one run keeps (irscatter.limits: npz_bytes); run fewer steps or raise the limit")
    return results


def _feed_back_links(compiled, items: list[str]) -> list[tuple[str, str]]:
    """Each --feed-back OUTPUT=INPUT as an (output, input) pair of the model."""
    links = []
    for item in items:
        out, sep, name = item.partition("=")
        if not sep or not out or not name:
            raise UsageError(f'--feed-back expects OUTPUT=INPUT, got "{item}"')
        if out not in {spec.name for spec in compiled.outputs}:
            known = ", ".join(spec.name for spec in compiled.outputs)
            raise UsageError(f'--feed-back {item}: the model has no output "{out}" (its outputs are {known})')
        if name not in compiled.input_names:
            raise UsageError(f'--feed-back {item}: the model has no input "{name}"')
        links.append((out, name))
    return links


def add_parser(sub, common: argparse.ArgumentParser) -> None:
    run = sub.add_parser("run", help="run a model and print or save its outputs", parents=[common],
                         description=DESCRIPTION)
    ModelArguments.add_to(run)
    FeedArguments.add_to(run)
    run.add_argument("--output", metavar="OUT.npz", help="save the outputs instead of printing them")
    run.add_argument("--json", action="store_true",
                     help="print the outputs as one JSON object: name -> element_type, shape, values")
    run.add_argument("--expected", metavar="FILE.npz", help="compare the outputs with these values")
    run.add_argument("--rtol", type=tolerance, help="with --expected: relative tolerance for floats (default: the "
                     "preset compare uses for the precision: 1e-4 for f32, 1e-2 for f16, 5e-2 for bf16)")
    run.add_argument("--atol", type=tolerance, help="with --expected: absolute tolerance for floats, in units of the "
                     "tensor's largest magnitude when that is over 1, as compare takes it (default: the preset)")
    run.add_argument("--ulps", type=tolerance, help="with --expected: judge floats by their distance in units "
                     "in the last place of the expected type instead of --rtol/--atol")
    run.add_argument("--steps", type=count(1), default=1, metavar="N",
                     help="run N times in a row, the model's state (ReadValue/Assign) carried from run to run; "
                          "outputs are keyed step<k>/<name>, and --inputs may hold step<k>/<name> feeds")
    run.add_argument("--feed-back", action="append", metavar="OUTPUT=INPUT",
                     help="with --steps: feed this output of each step as that input of the next")
    run.add_argument("--profile", action="store_true",
                     help="print each layer's time, slowest first, instead of the outputs")
    run.add_argument("--runs", type=count(1), metavar="N", help="with --profile: median of N runs (default 1)")
    run.add_argument("--all-layers", action="store_true", help="with --profile: list every layer, not the top 30")
    run.add_argument("--strict", action="store_true",
                     help="report each place the run relies on behaviour the spec leaves undefined (duplicate "
                          "scatter indices, an index outside the range the spec expects, integer overflow, ...), "
                          "one line each on stderr after the outputs; exit 1 if there is any")
    run.add_argument("--precision", choices=PRECISIONS,
                     help="emulate a device inferring in f16 or bf16 (a GPU, a CPU with bf16/f16 units): every "
                          "f32 value a layer produces, every f32 input and Const is rounded to it (nearest even) "
                          "and kept as f32, except in the layers OpenVINO keeps in f32; in f16 a value beyond "
                          "65504 becomes inf")
    run.add_argument("--decompression", choices=DECOMPRESSIONS,
                     help="compute compressed weights' decompression layers (NNCF's codes, zero points and f16 "
                          "scales before a MatMul) in f32, as OpenVINO's CPU plugin does inside its "
                          "fully-connected kernel, rather than in f16 as the graph says; no other layer changes")
    run.add_argument("--dump", metavar="OUT.npz",
                     help='save every intermediate tensor (or those --layers/--types select), keyed '
                          '"<layer name>:<port id>" as in run(intermediate=True), and the outputs by name')
    run.add_argument("--layers", metavar="REGEX", help="with --dump or --stats: only the layers whose name "
                     "(with its body path, e.g. loop/body[2]/add) the regular expression finds (re.search)")
    run.add_argument("--types", metavar="TYPE,...", help="with --dump or --stats: only the layers of these op "
                     "types, e.g. Convolution,MatMul, or Convolution-1 for one version")
    run.add_argument("--stats", action="store_true",
                     help="print per tensor (the dumped ones, or every intermediate) its element type, shape, "
                          "min, max, mean, std and counts of NaN, +Inf, -Inf and zeros, instead of the outputs; "
                          "floats in f64 over their finite values; --json: a list of records")
    run.add_argument("--check-numerics", action="store_true",
                     help="report the first layer that makes NaN or Inf from inputs that are all finite, with "
                          "its inputs' statistics, instead of the outputs; exit status 1 when a layer does "
                          "(NaN/Inf fed as inputs are reported and do not fail the run)")
    run.add_argument("--all", action="store_true",
                     help="with --check-numerics: every layer that makes NaN or Inf, not only the first")
    run.set_defaults(func=cmd_run_at_precision)


# --- run --dump / --stats / --check-numerics (irscatter.debug.dump) ---------------------------------


def _debugging(args: argparse.Namespace) -> bool:
    return bool(args.dump or args.stats or args.check_numerics)


def _refuse_debug_conflicts(args: argparse.Namespace) -> None:
    if _debugging(args) and args.profile:
        raise UsageError("--profile times a run; it does not combine with --dump, --stats or --check-numerics")
    if args.dump:
        output_path(args.dump, "--dump")  # refused before any work


def _run_debugging(compiled, feeds: dict[str, Any], args: argparse.Namespace) -> tuple[dict[str, Any], int]:
    """--dump, --stats and --check-numerics: print what they find, and return the run's outputs
    (empty when nothing needs them) and the exit status (1 when a layer makes NaN or Inf)."""
    selection = dump.select(compiled, args.layers, args.types)
    outputs: dict[str, Any] | None = None
    stats = None
    picked: Mapping[str, object]  # the tensors the selection took: dumped, or only measured
    if args.dump:
        result = dump.dump_tensors(compiled, feeds, selection)
        path = output_path(args.dump, "--dump")
        with writing("--dump", path):
            model_inputs.save_npz(path, result.arrays())
        print(f"wrote {len(result.tensors)} tensor{'s' if len(result.tensors) != 1 else ''} and "
              f"{len(result.outputs)} output{'s' if len(result.outputs) != 1 else ''} to {path}",
              file=sys.stderr if args.json else sys.stdout)  # --json keeps stdout one JSON document
        outputs, picked = result.outputs, result.tensors
        if args.stats:
            stats = {key: dump.tensor_stats(value) for key, value in result.tensors.items()}
    elif args.stats:
        stats, outputs = dump.run_stats(compiled, feeds, selection)
        picked = stats
    if (args.dump or args.stats) and not selection.everything and not picked:
        note("--layers/--types select no tensor of this run")
    if outputs is None:
        outputs = compiled.run(feeds) if args.output or args.expected else {}
    # Its own run on fresh state, so that a stateful model's variables are those of the run above.
    found = dump.find_nonfinite(compiled.new_request(), feeds, first_only=not args.all) if args.check_numerics else None
    _print_debugging(stats, found, args.json)
    return outputs, int(found is not None and any(f.origin == "layer" for f in found))


def _print_debugging(stats, found, in_json: bool) -> None:
    if in_json:
        records = {"stats": dump.stats_json(stats) if stats is not None else None,
                   "nonfinite": [f.to_json() for f in found] if found is not None else None}
        chosen = {name: value for name, value in records.items() if value is not None}
        if chosen:  # (--dump alone: the outputs are the JSON document, printed after)
            print(json.dumps(next(iter(chosen.values())) if len(chosen) == 1 else chosen, indent=2))
        return
    if stats is not None:
        print(dump.stats_table(stats))
    if found is not None:
        for finding in found:
            print(finding.describe())
        print(dump.nonfinite_summary(found))
