"""The `irscatter` command. Thin: it parses arguments, calls the library and prints.

Every error the library raises is printed as one line on stderr,
    irscatter: error: <file>: layer <id> "<name>" (<Type>-<version>): <what>
with exit code 1 for an invalid model or a failed run and 2 for usage errors or unreadable
files. Anything else is a bug in irscatter and is reported as an internal error.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import os
import shlex
import sys
import time
import traceback
import warnings
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from irscatter import __version__, examples, labels, limits
from irscatter.api import read_model, validate
from irscatter.checks.conformance import finding_line
from irscatter.debug import dump
from irscatter.errors import (
    MESSAGE_LIMIT,
    CompatibilityNote,
    ExecutionError,
    FileAccessError,
    IRError,
    UsageError,
    elide,
)
from irscatter.ops import registry
from irscatter.runtime import inputs as model_inputs
from irscatter.runtime.precision import PRECISIONS, emulating
from irscatter.runtime.profile import profile
from irscatter.summary import describe
from irscatter.targets import TargetFailure

PROG = "irscatter"


def _parse_shape(text: str) -> tuple[str, tuple[int, ...]]:
    name, sep, dims = text.partition("=")
    if not sep or not name:
        raise UsageError(f'--shape expects NAME=d0,d1,..., got "{text}"')
    try:
        return name, tuple(int(d) for d in dims.split(",")) if dims.strip() else ()
    except ValueError:
        raise UsageError(f'--shape {text}: dimensions must be integers') from None


def _preview(array: np.ndarray) -> str:
    with np.printoptions(threshold=12, edgeitems=3, precision=5, linewidth=100):
        text = np.array2string(np.asarray(array), separator=", ")
    return "\n".join(line.rstrip() for line in text.replace("\n", "\n    ").split("\n"))


def _refuse_orphan_flags(args: argparse.Namespace) -> None:
    """A flag that only means something beside another one is refused without it, rather than
    silently ignored."""
    for flag, value, parent, present in [
        ("--seed", args.seed, "--random", args.random), ("--shape", args.shape, "--random", args.random),
        ("--range", args.range, "--random", args.random),
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
    if args.output and args.dump and Path(_output_path(args.output)) == Path(_output_path(args.dump, "--dump")):
        raise UsageError(f"--output and --dump name one file, {args.output}: the outputs would overwrite the dump")


def cmd_run(args: argparse.Namespace) -> int:
    _refuse_orphan_flags(args)
    written = _output_path(args.output) if args.output else None  # refused before any work
    model = _read(args, args.model)
    compiled = model.compile()
    feeds = _gather_feeds(args, compiled)
    if args.steps < 1:
        raise UsageError(f"--steps must be at least 1, got {args.steps}")
    _refuse_strict_beside(args, feeds)
    debug_status = 0  # 1 when --check-numerics finds a layer that makes NaN or Inf
    if args.steps > 1 or args.feed_back or model_inputs.has_steps(feeds):
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
        with _writing("--output", written):
            np.savez(written, **outputs)
        print(f"wrote {len(outputs)} output{'s' if len(outputs) != 1 else ''} to {written}")
    elif args.stats or args.check_numerics:
        pass  # the statistics or the numerics report is what was asked for; --output keeps the values
    elif args.json:
        print(json.dumps({name: _as_json(value) for name, value in outputs.items()}))
    elif not args.profile:  # the profile is what was asked for; --output keeps the values
        for name, value in outputs.items():
            arr = np.asarray(value)
            print(f"{name}: {arr.dtype} {list(arr.shape)}\n    {_preview(arr)}")
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
    if args.steps > 1 or args.feed_back or model_inputs.has_steps(feeds):
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


def cmd_run_at_precision(args: argparse.Namespace) -> int:
    """`run`, every run of it emulating --precision when one is given."""
    with emulating(args.precision):
        return cmd_run(args)


_FEED_LABELS = ("unknown-input", "missing-input", "fed-twice", "feed-dtype", "feed-shape")


def _checked_feeds(feeds: dict[str, Any], compiled) -> dict[str, Any]:
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


def _gather_feeds(args: argparse.Namespace, compiled) -> dict[str, Any]:
    """The feeds `run` and `compare` take: --inputs, then -i, then --random for what is left."""
    feeds: dict[str, Any] = {}
    if args.inputs and _is_npy(args.inputs):  # one array: the input of a one-input model
        feeds[_only_input(compiled, f"--inputs {args.inputs}")] = model_inputs.load_npy(args.inputs)
    elif args.inputs:
        feeds.update(model_inputs.load_npz(args.inputs))
    given: set[str] = set()  # (-i may replace an input of --inputs, but not one of its own)
    for item in args.input or []:
        name, sep, path = item.partition("=")
        if not sep and item.lower().endswith(".npy"):
            name, sep, path = _only_input(compiled, f"-i {item}"), "=", item
        if not sep or not name:
            raise UsageError(f'-i expects NAME=FILE.npy (or FILE.npy for a one-input model), got "{item}"')
        if name in given:
            raise UsageError(f'-i gives input "{name}" twice')
        given.add(name)
        feeds[name] = model_inputs.load_npy(path)
    if args.random:
        shapes: dict[str, Any] = {}
        for name, dims in map(_parse_shape, args.shape or []):
            if name in shapes:
                raise UsageError(f'--shape gives input "{name}" twice')
            shapes[name] = dims
        unknown = sorted(set(shapes) - {s.name for s in compiled.inputs})
        if unknown:
            raise UsageError(f"--shape names no input of the model: {', '.join(unknown)} (its inputs: "
                             f"{', '.join(s.name for s in compiled.inputs)})")
        missing = [s for s in compiled.inputs if s.name not in feeds and not any(n in feeds for n in s.names)]
        fed = sorted(set(shapes) - {s.name for s in missing})
        if fed:
            raise UsageError(f"--shape {fed[0]}: that input is fed (--inputs or -i); --shape sizes what --random draws")
        defaulted = model_inputs.default_shapes(missing, shapes)
        if defaulted:
            drawn = ", ".join(f"{name} as [{', '.join(map(str, shape))}]" for name, shape in defaulted.items())
            _note(f"dynamic inputs drawn at their smallest shape (lower bound, or 1): {drawn}; "
                  "--shape NAME=d0,d1,... chooses another")
        feeds.update(model_inputs.random_inputs(missing, args.seed or 0, {**shapes, **defaulted},
                                                _draw_ranges(args, compiled, missing)))
    if not feeds and compiled.inputs and not getattr(args, "steps", 1) > 1:
        listed = ", ".join(f"{s.name}: {s.etype} {s.shape}" for s in compiled.inputs[:4])
        more = ", ..." if len(compiled.inputs) > 4 else ""
        raise UsageError(f"the model has {len(compiled.inputs)} input{'s' if len(compiled.inputs) != 1 else ''} "
                         f"({listed}{more}) and nothing was fed: give --inputs FILE.npz, -i NAME=FILE.npy, "
                         f"or --random")
    return feeds


def _draw_ranges(args: argparse.Namespace, compiled, missing) -> dict[str, tuple[float, float]]:
    """The range each drawn input is drawn within: what the layers reading it accept, or --range."""
    given = model_inputs.parse_ranges(args.range or [], compiled.inputs)
    fed = sorted(set(given) - {s.name for s in missing})
    if fed:
        raise UsageError(f"--range {fed[0]}: that input is fed (--inputs or -i); --range bounds what --random draws")
    return {**model_inputs.accepted_ranges(compiled), **given}


def _is_npy(path: str) -> bool:
    """A .npy file (by its magic string, whatever its name), rather than an .npz archive. Only a
    regular file is opened to look: a pipe would block (the .npz reader refuses what is not one)."""
    if not os.path.isfile(path):
        return False
    try:
        with open(path, "rb") as f:
            return f.read(6) == b"\x93NUMPY"
    except OSError:
        return False  # (the .npz reader says what is wrong with it)


def _only_input(compiled, option: str) -> str:
    if len(compiled.inputs) != 1:
        raise UsageError(f"{option}: one array feeds a model of one input; this one has {len(compiled.inputs)} "
                         f"({', '.join(s.name for s in compiled.inputs)}): give -i NAME=FILE.npy or an .npz")
    return compiled.inputs[0].name


def _read(args: argparse.Namespace, model: str):
    """The model a command runs on, with a progress bar while a large document is read."""
    with _progress(args, "B", delay=0.5) as progress:
        return read_model(model, args.bin, progress=progress)


@contextlib.contextmanager
def _progress(args: argparse.Namespace, unit: str,
              delay: float = 0.0) -> Iterator[Callable[[int, int | None], None] | None]:
    """A progress bar on stderr for long work (`callback(done, total)`; total None when it is not
    known), or None: not on a terminal, or with --quiet. With `delay`, it shows only once the
    work has taken that long (reading a small model draws nothing). Bytes ("B") count in kB, MB."""
    if getattr(args, "quiet", False) or not sys.stderr.isatty():
        yield None
        return
    from tqdm import tqdm

    unit_options = {"unit": "B", "unit_scale": True} if unit == "B" else {"unit": f" {unit}"}
    with tqdm(file=sys.stderr, leave=False, dynamic_ncols=True, delay=delay, **unit_options) as bar:
        def update(done: int, total: int | None) -> None:
            if total is not None and bar.total != total:
                bar.total = total
            bar.update(done - bar.n)
        yield update


def _show_note(message, category, filename, lineno, file=None, line=None) -> None:  # noqa: ARG001 (warnings' hook)
    """What the library says as a `CompatibilityNote` (a feed converted, a setting left unused),
    as one note line; any other warning as Python prints it."""
    if issubclass(category, CompatibilityNote):
        _note(str(message))
    else:
        print(warnings.formatwarning(message, category, filename, lineno, line), file=sys.stderr, end="")


def _note(text: str) -> None:
    """A note on stderr, one line as errors are: it may quote a model's input names."""
    print(f"{PROG}: note: {elide(text, MESSAGE_LIMIT)}", file=sys.stderr)


def _as_json(value: np.ndarray) -> dict[str, Any]:
    """An output as JSON: element type, shape and the values as nested lists. Floats are written
    with the shortest digits of their own type (0.1 for an f32 0.1, not 0.10000000149011612),
    and NaN and the infinities, which JSON lacks, as the strings "nan", "inf" and "-inf"."""
    array = np.asarray(value)
    if array.dtype.kind == "f" or array.dtype.name.startswith(("bfloat16", "float8")):
        texts = (array if array.dtype.kind == "f" else array.astype(np.float32)).astype(str).ravel()
        numbers = [float(t) for t in texts]
        flat = [n if np.isfinite(n) else t for n, t in zip(numbers, texts)]
        values = np.array(flat, dtype=object).reshape(array.shape).tolist()
    elif array.dtype.kind == "S":
        values = np.char.decode(array, "utf-8", "replace").tolist()
    else:
        values = array.tolist()
    return {"element_type": str(array.dtype), "shape": list(array.shape), "values": values}


def _run_steps(compiled, feeds: dict[str, Any], args: argparse.Namespace) -> dict[str, np.ndarray]:
    """Run the model `--steps` times in a row, its variables carried from step to step; the
    outputs of every step are keyed `step<k>/<name>`."""
    if args.profile:
        raise UsageError("--profile times one run; it does not combine with --steps or --feed-back")
    if _debugging(args):  # step-keyed inputs are only known once the feeds are read
        raise UsageError("--dump, --stats and --check-numerics look at one run; they do not combine with "
                         "--steps, --feed-back or step-keyed inputs")
    links = []
    for item in args.feed_back or []:
        out, sep, name = item.partition("=")
        if not sep or not out or not name:
            raise UsageError(f'--feed-back expects OUTPUT=INPUT, got "{item}"')
        if out not in {spec.name for spec in compiled.outputs}:
            known = ", ".join(spec.name for spec in compiled.outputs)
            raise UsageError(f'--feed-back {item}: the model has no output "{out}" (its outputs are {known})')
        if name not in compiled.input_names:
            raise UsageError(f'--feed-back {item}: the model has no input "{name}"')
        links.append((out, name))
    per_step = model_inputs.split_steps(feeds, args.steps)
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
    current = dict(per_step[0])
    for k in range(len(per_step)):
        if k > 0:
            current = {**current, **per_step[k]}
        outputs = compiled.run(current)
        results.update({f"step{k}/{name}": value for name, value in outputs.items()})
        # every step's outputs are kept for the end (one .npz, one listing): as much as one .npz may hold
        kept += sum(np.asarray(value).nbytes for value in outputs.values())
        if kept > most:
            raise UsageError(f"the outputs of steps 0 to {k} take {kept} bytes, over the limit of {most} for what "
                             "one run keeps (irscatter.limits: npz_bytes); run fewer steps or raise the limit")
        for out, name in links:
            current[name] = outputs[out]
    return results


def cmd_compare(args: argparse.Namespace) -> int:
    from irscatter.debug import compare

    given = args.target, args.target_precision  # left out: None (two IRs take neither default)
    args.target, args.target_precision = args.target or "openvino", args.target_precision or "f32"
    tolerances = compare.Tolerances(args.target_precision, args.rtol, args.atol,
                                    tuple(compare.parse_override(t) for t in args.tol or []))
    if args.report:
        args.report = _report_path(args.report)  # refused before any work
    if len(args.files) == 2 and any(Path(f).suffix.lower() == ".xml" for f in args.files):
        return _compare_models(args, *given)
    if len(args.files) == 2 and not args.onnx:
        return _compare_dumps(args, tolerances)
    if len(args.files) != 1:
        raise UsageError("compare takes MODEL.xml, two IRs of one model (A.xml B.xml), or two .npz files of "
                         "saved tensors")
    _refuse_orphan_compare_flags(args)
    if args.onnx:
        return _compare_onnx(args, tolerances, *given)
    compiled = _read(args, args.files[0]).compile()
    compare.check_overrides(tolerances, (compare.tensor_key(compiled, src) for src in compiled.slot_of))
    gathered = _gather_feeds(args, compiled)
    if args.steps > 1 or model_inputs.has_steps(gathered):
        return _compare_steps(args, compiled, gathered, tolerances)
    if args.steps < 1:
        raise UsageError(f"--steps must be at least 1, got {args.steps}")
    feeds = _checked_feeds(gathered, compiled)

    def judge(target):
        emulated = compare.emulated_at_device_precision(target, args.reference_precision)
        values = compare.reference_values(compiled, feeds, emulated)
        if args.whole:
            return compare.compare_whole(compiled, feeds, target, tolerances, bisect=args.bisect, values=values)
        with _progress(args, "layers judged") as progress:
            return compare.compare_layers(compiled, feeds, target, tolerances, values=values, progress=progress)
    return _judged_on_target(args, judge)


def _compare_onnx(args: argparse.Namespace, tolerances, target: str | None, precision: str | None) -> int:
    """compare MODEL.xml --onnx MODEL.onnx: the IR against the ONNX model it was converted from,
    run once on onnxruntime's CPU provider."""
    from irscatter.debug import compare, onnx_compare

    given = [flag for flag, value in [("--target", target), ("--target-precision", precision not in (None, "f32")),
                                      ("--reference-precision", args.reference_precision), ("--whole", args.whole),
                                      ("--bisect", args.bisect), ("--steps", args.steps != 1)] if value]
    if given:
        raise UsageError(f"--onnx runs the ONNX model once on onnxruntime's CPU at f32 and judges every tensor it "
                         f"shares with the IR; it takes no {', '.join(given)}")
    compiled = _read(args, args.files[0]).compile()
    compare.check_overrides(tolerances, (compare.tensor_key(compiled, src) for src in compiled.slot_of))
    feeds = _checked_feeds(_gather_feeds(args, compiled), compiled)
    try:
        report = onnx_compare.compare_onnx(compiled, feeds, args.onnx, tolerances, timeout=args.timeout)
    except TargetFailure as e:
        raise UsageError(f"--onnx {args.onnx}: {e.message}") from None
    _print_comparison(report, args, onnx_compare.onnx_table)
    return 0 if report.passed else 1


def _refuse_orphan_compare_flags(args: argparse.Namespace) -> None:
    for flag, value, parent in [("--seed", args.seed, "--random"), ("--shape", args.shape, "--random"),
                                ("--range", args.range, "--random"),
                                ("--bisect", args.bisect, "--whole")]:
        if value not in (None, False) and not getattr(args, parent[2:]):
            raise UsageError(f"{flag} only applies with {parent}")


def _compare_models(args: argparse.Namespace, target: str | None, precision: str | None) -> int:
    """compare A.xml B.xml: two IRs of one model, both run by irscatter, B judged against A."""
    from irscatter.debug import compare, two_models

    if not all(Path(f).suffix.lower() == ".xml" for f in args.files):
        raise UsageError("compare takes two IRs (A.xml B.xml) or two .npz files, not one of each")
    for flag, value in (("--target", target), ("--onnx", args.onnx)):
        if value is not None:
            raise UsageError(f"two IRs are both run by irscatter: {flag} does not apply")
    for flag, value in [("--whole", args.whole), ("--bisect", args.bisect), ("--bin", args.bin),
                        ("--reference-precision", args.reference_precision), ("--steps", args.steps != 1)]:
        if value not in (None, False):
            raise UsageError(f"{flag} does not apply to two IRs (each is read with its sibling .bin and run once)")
    _refuse_orphan_compare_flags(args)
    a, b = (_read(args, f).compile() for f in args.files)
    overrides = tuple(compare.parse_override(t) for t in args.tol or [])
    compare.check_overrides(compare.Tolerances(overrides=overrides), two_models.keys_of(b))
    feeds = _checked_feeds(_gather_feeds(args, a), a)
    report = two_models.compare_models(a, b, feeds, rtol=args.rtol, atol=args.atol, overrides=overrides,
                                       precision=precision, names=(args.files[0], args.files[1]))
    _print_comparison(report, args)
    return 0 if report.passed else 1


def _judged_on_target(args: argparse.Namespace, judge: Callable[[Any], Any]) -> int:
    """Open the target, let `judge(target)` make the report, print it; the exit status."""
    from irscatter.debug import compare

    target = compare.open_target(args.target, args.target_precision, args.timeout)
    try:
        target.describe()  # fails here, once, when the target cannot start
        report = judge(target)
    except TargetFailure as e:
        raise UsageError(f"--target {args.target}: {e.message}") from None
    finally:
        target.close()
    _print_comparison(report, args)
    return 0 if report.passed else 1


def _compare_steps(args: argparse.Namespace, compiled, feeds: dict[str, Any], tolerances) -> int:
    """compare --whole over the steps of a stateful model (--steps N, or step-keyed inputs)."""
    from irscatter.debug import compare

    if not args.whole or args.bisect:
        raise UsageError("a model is compared over steps as a whole (--whole), its state carried from step to "
                         "step; layer by layer and --bisect look at one run")
    per_step = model_inputs.split_steps(feeds, args.steps)
    current: dict[str, Any] = {}
    for step in per_step:  # each step's feeds checked as a run would bind them, before any work
        current = {**current, **step}
        _checked_feeds(current, compiled)
    return _judged_on_target(args, lambda target: compare.compare_steps(
        compiled, per_step, target, tolerances,
        precision=compare.emulated_at_device_precision(target, args.reference_precision)))


def _compare_dumps(args: argparse.Namespace, tolerances) -> int:
    from irscatter.debug import compare

    if args.whole or args.bisect or args.random or args.inputs or args.input or args.reference_precision:
        raise UsageError("comparing two .npz files takes no model inputs and no --whole, --bisect or "
                         "--reference-precision")
    first, second = (model_inputs.load_npz(path) for path in args.files)
    compare.check_overrides(tolerances, second)
    report = compare.compare_dumps(first, second, tolerances, names=tuple(args.files))
    _print_comparison(report, args)
    return 0 if report.passed else 1


def _print_comparison(report, args: argparse.Namespace, table: Callable[..., str] | None = None) -> None:
    from irscatter.debug import compare

    if args.json:
        print(json.dumps(report.to_json(), indent=2))
    else:
        print((table or compare.table)(report, every=args.all))
    if args.report:
        from irscatter.debug import html

        with _writing("--report", args.report):
            html.write(report, args.report, command=shlex.join([PROG, *args.argv]))
        print(f"wrote {args.report}", file=sys.stderr)


# --- run --dump / --stats / --check-numerics (irscatter.debug.dump) ---------------------------------


def _debugging(args: argparse.Namespace) -> bool:
    return bool(args.dump or args.stats or args.check_numerics)


def _refuse_debug_conflicts(args: argparse.Namespace) -> None:
    if _debugging(args) and args.profile:
        raise UsageError("--profile times a run; it does not combine with --dump, --stats or --check-numerics")
    if args.dump:
        _output_path(args.dump, "--dump")  # refused before any work


def _run_debugging(compiled, feeds: dict[str, Any], args: argparse.Namespace) -> tuple[dict[str, Any], int]:
    """--dump, --stats and --check-numerics: print what they find, and return the run's outputs
    (empty when nothing needs them) and the exit status (1 when a layer makes NaN or Inf)."""
    selection = dump.select(compiled, args.layers, args.types)
    outputs: dict[str, Any] | None = None
    stats = None
    if args.dump:
        result = dump.dump_tensors(compiled, feeds, selection)
        path = _output_path(args.dump, "--dump")
        with _writing("--dump", path):
            np.savez(path, **result.arrays())
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
        _note("--layers/--types select no tensor of this run")
    if outputs is None:
        outputs = compiled.run(feeds) if args.output or args.expected else {}
    # Its own run on fresh state, so that a stateful model's variables are those of the run above.
    found = dump.find_nonfinite(compiled.new_request(), feeds, first_only=not args.all) if args.check_numerics else None
    _print_debugging(stats, found, args.json)
    return outputs, int(found is not None and any(f.origin == "layer" for f in found))


def _print_debugging(stats, found, as_json: bool) -> None:
    if as_json:
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


def cmd_extract(args: argparse.Namespace) -> int:
    from irscatter.debug import compare, extract

    if bool(args.outputs) == bool(args.around):
        raise UsageError("extract takes --outputs NAME[,NAME...] or --around LAYER, one of the two")
    if args.around and args.cut_from:
        raise UsageError("--from names where the cut of --outputs starts; --around finds its own")
    if args.inputs and not Path(args.inputs).exists() and not args.inputs.lower().endswith((".npz", ".npy")):
        raise UsageError(f"--inputs {args.inputs}: --inputs is the model's inputs (FILE.npz), as in every command; "
                         f"the tensors the cut is fed instead of computing go in --from NAME[,NAME...]")
    if args.values and (args.inputs or args.input or args.random):
        raise UsageError("--values gives every tensor's value; the model's inputs are not needed beside it")
    compiled = _read(args, args.model).compile()
    if args.around:
        cut = extract.around(compiled, args.around, args.hops)
    else:
        cut = extract.plan(compiled, extract.resolve(compiled, _names(args.outputs), "--outputs"),
                           extract.resolve(compiled, _names(args.cut_from or ""), "--from"))
    values = None
    if args.values:
        values = extract.values_from_dump(compiled, model_inputs.load_npz(args.values))
    elif args.inputs or args.input or args.random:
        feeds = _gather_feeds(args, compiled)
        values = compare.reference_values(compiled, feeds)
    xml = _output_path(args.output, flag="-o", suffix=".xml", folder_made=True)
    with _writing("-o", xml):
        written = extract.write(compiled, cut, xml, values)
    kept = [compiled.layers[lid].name for lid in cut.layers if compiled.layers[lid].type not in ("Parameter", "Const")]
    beside = ", with inputs.npz and expected.npz beside it" if values is not None else ""
    listed = "no layer computes anything: each output is an input or a constant" if not kept else \
        f"{len(kept)} layer{'s' if len(kept) != 1 else ''}: {', '.join(kept[:8])}{', ...' if len(kept) > 8 else ''}"
    print(f"wrote {written.xml} ({listed}){beside}", file=sys.stderr)
    return 0


def _names(text: str) -> list[str]:
    return [n for n in (part.strip() for part in text.split(",")) if n]


def cmd_reduce(args: argparse.Namespace) -> int:
    if args.check and (args.target or args.target_precision or args.tol or args.rtol is not None
                       or args.atol is not None):
        raise UsageError("--check decides by its command; --target, --target-precision and the tolerances "
                         "belong to a target")
    if args.fail_regex and not args.check:
        raise UsageError("--fail-regex only applies with --check")
    out = Path(args.output)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise UsageError(f"-o {args.output}: give a new or empty folder for the reproducer")
    made = not out.exists()
    with _writing("-o", out):  # made now, so that a folder the OS refuses is refused before any work
        out.mkdir(parents=True, exist_ok=True)
    try:
        return _reduce_into(args, out)
    finally:
        if made and out.is_dir() and not any(out.iterdir()):
            out.rmdir()  # no reproducer written: no folder left behind


def _reduce_into(args: argparse.Namespace, out: Path) -> int:
    """reduce, once its arguments are checked and its folder `out` made."""
    from irscatter.debug import compare, reduce

    compiled = _read(args, args.model).compile()
    feeds = _checked_feeds(_gather_feeds(args, compiled), compiled)
    values = compare.reference_values(compiled, feeds)
    target = None
    if args.check:
        check = reduce.CommandCheck(args.check, args.fail_regex, args.timeout)
    else:
        precision = args.target_precision or "f32"
        tolerances = compare.Tolerances(precision, args.rtol, args.atol,
                                        tuple(compare.parse_override(t) for t in args.tol or []))
        compare.check_overrides(tolerances, (compare.tensor_key(compiled, src) for src in compiled.slot_of))
        target = compare.open_target(args.target or "openvino", precision, args.timeout)
        check = reduce.TargetCheck(compiled, target, tolerances)
    try:
        if target is not None:
            target.describe()  # fails here, once, when the target cannot start
        with _progress(args, "candidates checked") as progress:
            reduction = reduce.reduce_model(compiled, values, check, progress=progress)
        if not reduction.reproducible:
            print(f"not reproducible: {reduction.note} ({reduction.checks} check{'s' if reduction.checks != 1 else ''}, "
                  f"{reduction.seconds:.1f} s)")
            return 1
        with _writing("-o", out):
            reduce.write_reproducer(compiled, values, reduction, check, out, shlex.join(["irscatter", *sys.argv[1:]]))
    except TargetFailure as e:
        raise UsageError(f"--target {args.target or 'openvino'}: {e.message}") from None
    finally:
        if target is not None:
            target.close()
    kept = [compiled.layers[lid].name for lid in reduction.cut.layers
            if compiled.layers[lid].type not in ("Parameter", "Const")]
    print(f"reduced to {len(kept)} layer{'s' if len(kept) != 1 else ''} ({', '.join(kept[:8])}"
          f"{', ...' if len(kept) > 8 else ''}) in {reduction.checks} checks, {reduction.seconds:.1f} s; "
          f"wrote the reproducer to {out}/")
    if reduction.note:
        print(f"note: {reduction.note}")
    return 0 if reduction.deterministic else 1  # (a reproducer that may not reproduce is no pass)


def cmd_keep_f32(args: argparse.Namespace) -> int:
    from irscatter.debug import compare, precision_search

    out = Path(_output_path(args.output, flag="-o", suffix=".xml"))
    tolerances = compare.Tolerances(args.target_precision, args.rtol, args.atol,
                                    tuple(compare.parse_override(t) for t in args.tol or []))
    compiled = _read(args, args.model).compile()
    sources = [Path(p).resolve() for p in (compiled.model.xml_path, compiled.model.bin_path) if p]
    if out.resolve() in sources or out.with_suffix(".bin").resolve() in sources:
        raise UsageError(f"-o {args.output}: that would write over the model read; give another name")
    compare.check_overrides(tolerances, (compare.tensor_key(compiled, src) for src in compiled.slot_of))
    feeds = _checked_feeds(_gather_feeds(args, compiled), compiled)
    target = compare.open_target(args.target, args.target_precision, args.timeout)
    try:
        target.describe()  # fails here, once, when the target cannot start
        with _progress(args, "trials") as progress:
            found = precision_search.search(compiled, feeds, target, tolerances, progress=progress)
        print("\n".join(precision_search.summary(found, compiled)))
        if found.status == "impossible":
            return 1
        with _writing("-o", out):
            precision_search.write_marked(compiled, found.marks, out)
        written = precision_search.verify(compiled, feeds, target, tolerances, out)
    except TargetFailure as e:
        raise UsageError(f"--target {args.target}: {e.message}") from None
    finally:
        target.close()
    marked = (f"{len(found.marks)} layer{'s' if len(found.marks) != 1 else ''} marked to stay in f32 (rt_info "
              f"precise)" if found.marks else "no layer marked")
    print(f"wrote {out} ({marked}); run on the target it {'passes' if written.passed else 'FAILS'}: "
          f"{precision_search.verdict(written)}")
    return 0 if written.passed else 1


# --- campaign (irscatter.debug.campaign) -----------------------------------------------------------


def cmd_campaign(args: argparse.Namespace) -> int:
    from irscatter.debug import campaign
    from irscatter.debug.campaign import report

    if args.corpus[0] == "diff":
        return _campaign_diff(args)
    if args.ray and args.workers:
        raise UsageError("--workers sizes the local pool; a Ray cluster brings its own workers")
    workers = args.workers or os.cpu_count() or 1
    config = [item.partition("=") for item in args.target_config or []]
    if any(not sep or not key for key, sep, _ in config):
        raise UsageError("--target-config expects KEY=VALUE")
    settings = campaign.Settings(target=args.target, precision=args.target_precision, rtol=args.rtol,
                                 atol=args.atol, tol=tuple(args.tol or ()), properties=tuple((k, v) for k, _, v in config),
                                 seed=args.seed, reduce=not args.no_reduce, ops=args.ops, timeout=args.timeout,
                                 memory_mb=args.memory_limit or campaign.default_memory_mb(workers))
    campaign.check_spelling(settings)
    if args.report and (Path(args.report).is_dir() or not Path(args.report).parent.is_dir()):
        raise UsageError(f"--report {args.report}: give a file in a folder that exists")
    with _writing("--db", args.db or ":memory:"):
        store = campaign.Store(args.db or ":memory:")
    show = (lambda record: print(json.dumps(record.to_json()), flush=True)) if args.json else None
    start = time.perf_counter()
    try:
        with _progress(args, "cases") as progress:
            records = campaign.run_campaign(args.corpus, settings, store=store, out=args.output,
                                            workers=args.workers, ray=args.ray, progress=progress, on_record=show)
    except TargetFailure as e:  # it cannot start: every case would say so
        raise UsageError(f"--target {args.target}: {e.message}") from None
    finally:
        store.close()
    detail = next((r.target_detail for r in records if r.target_detail), settings.target)
    line = report.summary_line(records, detail, time.perf_counter() - start)
    listed = "" if args.json else report.table(records, every=args.all)
    if listed:
        print(listed)
    print(line, file=sys.stderr if args.json else sys.stdout)
    if args.report:
        with _writing("--report", args.report):
            report.write_html(records, args.report, command=shlex.join([PROG, *args.argv]), title_line=line)
        print(f"wrote {args.report}", file=sys.stderr)
    return 0 if records and all(r.passed for r in records) else 1


def _campaign_diff(args: argparse.Namespace) -> int:
    """`campaign diff A.db B.db`: what broke, what was fixed, what changed status."""
    import sqlite3

    from irscatter.debug.campaign import read_records, report

    if len(args.corpus) != 3:
        raise UsageError("campaign diff takes two databases: campaign diff A.db B.db")
    for flag, value in [("--db", args.db), ("--report", args.report), ("--ops", args.ops), ("--ray", args.ray),
                        ("--workers", args.workers)]:
        if value:
            raise UsageError(f"{flag} belongs to a campaign, not to campaign diff")
    loaded = []
    for path in args.corpus[1:]:
        try:
            loaded.append(read_records(path))
        except FileNotFoundError:
            raise UsageError(f"campaign diff: {path}: no such file") from None
        except sqlite3.DatabaseError as e:
            raise UsageError(f"campaign diff: {path}: not a campaign's database ({e})") from None
    changes = report.diff(*loaded)
    if args.json:
        print(json.dumps({"changes": [c.to_json() for c in changes if c.change != "same"],
                          "unchanged": sum(1 for c in changes if c.change == "same")}, indent=2))
    else:
        print(report.diff_table(changes, args.corpus[1:]))
    return 1 if any(c.change == "broke" for c in changes) else 0


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


def cmd_validate(args: argparse.Namespace) -> int:
    report = validate(args.model, args.bin, strict=args.strict)
    if args.json:
        print(json.dumps(report.to_json(), indent=2, default=str))
    else:
        for f in report.findings:
            print(finding_line(f, report.file))
        n_err, n_warn = len(report.errors), len(report.warnings)
        strict = len(report.strict_findings)
        counted = (f" ({strict} of them strict-mode finding{'s' if strict != 1 else ''}, which --strict counts "
                   f"as failing)" if strict else "")
        if report.findings:
            verdict = "fails" if n_err or strict else "passes"
            print(f"{report.file}: {n_err} error{'s' if n_err != 1 else ''}, {n_warn} warning"
                  f"{'s' if n_warn != 1 else ''}{counted}: {verdict}")
        else:
            print(f"{report.file}: no findings")
    return 0 if report.ok and not report.strict_findings else 1


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


def _output_path(name: str, flag: str = "--output", suffix: str = ".npz", *, folder_made: bool = False) -> str:
    """Where --output (or --dump, or extract's -o) writes: the name as given when it ends in
    `suffix`, else with it added (as numpy does for .npz); a directory, or a missing folder
    (unless the writer makes it, as extract does for its files), is refused before anything is
    computed."""
    path = Path(name)
    if path.is_dir():
        raise UsageError(f"{flag} {name} is a directory; give a file name, e.g. {path / ('outputs' + suffix)}")
    if path.suffix != suffix:
        path = path.with_name(path.name + suffix)
    if not path.parent.is_dir() and not (folder_made and not path.parent.exists()):
        raise UsageError(f"{flag} {name}: the folder {path.parent} does not exist")
    return str(path)


@contextlib.contextmanager
def _writing(flag: str, path: str | Path) -> Iterator[None]:
    """Around every file the CLI writes: a path the system refuses (a read-only /sys or /proc,
    a full disk or /dev/full, no permission) is the user's to change, so it is a usage error
    naming the path and the system's reason, not an internal one."""
    try:
        yield
    except OSError as e:
        reason = e.strerror or str(e) or type(e).__name__
        raise UsageError(f"{flag} {path}: cannot write there: {reason}") from None


def _report_path(name: str) -> str:
    """Where --report writes, as given; a directory, a missing folder or a missing matplotlib
    is refused before anything is computed."""
    from irscatter.debug import html

    path = Path(name)
    if path.is_dir():
        raise UsageError(f"--report {name} is a directory; give a file name, e.g. {path / 'report.html'}")
    if not path.parent.is_dir():
        raise UsageError(f"--report {name}: the folder {path.parent} does not exist")
    html.require_matplotlib()
    return name


def _count(minimum: int):
    """An argparse type: an integer of at least `minimum`."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"{value} is below {minimum}")
        return value
    return parse


def _tolerance(text: str) -> float:
    """An argparse type: a finite number of at least 0."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not (value >= 0 and np.isfinite(value)):
        raise argparse.ArgumentTypeError(f"{text} is not a finite number of at least 0")
    return value


# The longest wait a timeout may ask for: a week is past any check worth waiting on, and far
# inside what the timers and select() accept (1e308 seconds overflows them).
MOST_SECONDS = 7 * 24 * 3600


def _seconds(text: str) -> float:
    """An argparse type: a timeout, a number of seconds above 0 and at most a week."""
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not 0 < value <= MOST_SECONDS:  # (NaN and the infinities too)
        raise argparse.ArgumentTypeError(f"{text} seconds: give more than 0 and at most {MOST_SECONDS} (a week)")
    return value


def _global_options(parser: argparse.ArgumentParser, default) -> None:
    """--debug and --limit, before the command or after it. The subcommands' copies default to
    nothing at all, so that a flag given before the command is not reset after it."""
    parser.add_argument("--debug", action="store_true", default=default(False),
                        help="show a Python traceback on errors")
    parser.add_argument("--limit", action="append", metavar="NAME=N", default=default(None),
                        help="change a resource limit, e.g. tensor_bytes=1e9 (see irscatter.limits.Limits)")
    parser.add_argument("--quiet", action="store_true", default=default(False),
                        help="no progress bars (they show only on a terminal anyway)")


def _feed_arguments(parser: argparse.ArgumentParser) -> None:
    """The model's inputs, as run, compare, reduce and extract take them (`_gather_feeds`)."""
    parser.add_argument("--inputs", metavar="FILE.npz",
                        help="the model's inputs keyed by input name (or one .npy for a one-input model)")
    parser.add_argument("-i", "--input", action="append", metavar="NAME=FILE.npy", help="one input from a .npy file")
    parser.add_argument("--random", action="store_true", help="draw every input not given otherwise at random")
    parser.add_argument("--seed", type=_count(0), help="with --random: the seed (default 0)")
    parser.add_argument("--shape", action="append", metavar="NAME=d0,d1,...", help="shape to draw for a dynamic input")
    parser.add_argument("--range", action="append", metavar="NAME=LO,HI",
                        help="with --random: draw this input within [LO, HI] (default: what the layers reading it "
                             "accept)")


def _target_arguments(parser: argparse.ArgumentParser, defaults: bool,
                      precisions: Sequence[str] = ("f32", "f16", "bf16")) -> None:
    """The runtime to judge and the tolerances, as compare and reduce take them. Without
    `defaults` an option left out stays None, so that reduce can tell it from one given
    beside --check, and compare a --target given with two IRs (the defaults then apply in
    `cmd_reduce` and `cmd_compare`). The first of `precisions` is the default."""
    parser.add_argument("--target", default="openvino" if defaults else None, metavar="openvino[:DEVICE]",
                        help="the runtime to judge (default: openvino on CPU); it runs in a separate process")
    parser.add_argument("--target-precision", default=precisions[0] if defaults else None, choices=list(precisions),
                        help="the target's inference precision (OpenVINO's INFERENCE_PRECISION_HINT, default "
                             f"{precisions[0]}); "
                             "the tolerance presets follow the precision the device says it ran, which the "
                             "report names (a CPU without f16 or bf16 arithmetic runs f32)")
    parser.add_argument("--rtol", type=_tolerance,
                        help="relative tolerance for floats (default: the precision's preset)")
    parser.add_argument("--atol", type=_tolerance, help="absolute tolerance for floats, in units of the tensor's "
                        "largest magnitude when that is over 1 (default: the precision's preset)")
    parser.add_argument("--tol", action="append", metavar="PATTERN=RTOL[,ATOL]",
                        help="a tolerance for the tensors whose \"<layer name>:<port>\" matches the regular expression")


def _model_command(sub, common: argparse.ArgumentParser, name: str, summary: str,
                   description: str) -> argparse.ArgumentParser:
    """A command that reads one model: its parser, with the model and its --bin."""
    command = sub.add_parser(name, parents=[common], help=summary, description=description)
    command.add_argument("model", help="the model's .xml file")
    command.add_argument("--bin", help="the weights file (default: the .xml's sibling .bin)")
    return command


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=PROG, description="Run, inspect and check OpenVINO IR models with numpy.")
    _global_options(parser, lambda value: value)
    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    common = argparse.ArgumentParser(add_help=False)
    _global_options(common, lambda value: argparse.SUPPRESS)
    sub = parser.add_subparsers(dest="command", required=True)

    run = sub.add_parser("run", help="run a model and print or save its outputs", parents=[common])
    run.add_argument("model", help="the model's .xml file")
    run.add_argument("--bin", help="the weights file (default: the .xml's sibling .bin)")
    _feed_arguments(run)
    run.add_argument("--output", metavar="OUT.npz", help="save the outputs instead of printing them")
    run.add_argument("--json", action="store_true",
                     help="print the outputs as one JSON object: name -> element_type, shape, values")
    run.add_argument("--expected", metavar="FILE.npz", help="compare the outputs with these values")
    run.add_argument("--rtol", type=_tolerance, help="with --expected: relative tolerance for floats (default: the "
                     "preset compare uses for the precision: 1e-4 for f32, 1e-2 for f16, 5e-2 for bf16)")
    run.add_argument("--atol", type=_tolerance, help="with --expected: absolute tolerance for floats, in units of the "
                     "tensor's largest magnitude when that is over 1, as compare takes it (default: the preset)")
    run.add_argument("--ulps", type=_tolerance, help="with --expected: judge floats by their distance in units "
                     "in the last place of the expected type instead of --rtol/--atol")
    run.add_argument("--steps", type=_count(1), default=1, metavar="N",
                     help="run N times in a row, the model's state (ReadValue/Assign) carried from run to run; "
                          "outputs are keyed step<k>/<name>, and --inputs may hold step<k>/<name> feeds")
    run.add_argument("--feed-back", action="append", metavar="OUTPUT=INPUT",
                     help="with --steps: feed this output of each step as that input of the next")
    run.add_argument("--profile", action="store_true",
                     help="print each layer's time, slowest first, instead of the outputs")
    run.add_argument("--runs", type=_count(1), metavar="N", help="with --profile: median of N runs (default 1)")
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

    cmp = sub.add_parser("compare", parents=[common],
                         help="find the layer that went wrong: irscatter's values against another runtime's",
                         description="Compare every layer of a model on a target runtime with irscatter's values "
                                     "(each layer run alone on the target, fed irscatter's inputs), or the whole "
                                     "model with --whole; or compare two .npz files of saved tensors. Exit status: "
                                     "0 all within tolerance, 1 a divergence or nothing compared, 2 a usage error or "
                                     "unreadable file.")
    cmp.add_argument("files", nargs="+", metavar="MODEL.xml | A.xml B.xml | A.npz B.npz",
                     help="the model; or two IRs of one model, both run by irscatter on the same inputs, B "
                          "judged against A tensor by tensor (--target-precision then names the tolerance "
                          "presets, by default those of the coarsest compressed weights); or two saved sets "
                          "of tensors (the first judged against the second)")
    cmp.add_argument("--bin", help="the weights file (default: the .xml's sibling .bin)")
    _target_arguments(cmp, defaults=False)
    cmp.add_argument("--onnx", metavar="MODEL.onnx",
                     help="judge the ONNX model the IR was converted from, run on onnxruntime (pip install "
                          "irscatter[onnxruntime]), against irscatter's run of the IR: every tensor whose IR port "
                          "keeps an ONNX value's name, in topological order; unmatched names are listed")
    cmp.add_argument("--reference-precision", choices=list(PRECISIONS),
                     help="irscatter's values as it emulates a device inferring in f16 or bf16 (see run --precision)")
    _feed_arguments(cmp)
    cmp.add_argument("--whole", action="store_true",
                     help="run the whole model on the target, as it compiles it, and compare its outputs")
    cmp.add_argument("--bisect", action="store_true",
                     help="with --whole: find the first layer that diverges by running prefixes of the graph")
    cmp.add_argument("--steps", type=int, default=1, metavar="N",
                     help="with --whole: run a stateful model N times in a row on both sides, its state carried "
                          "over (step-keyed inputs, step<k>/NAME, give each step's feeds), and compare every step")
    cmp.add_argument("--all", action="store_true", help="list every layer, not only those that diverged")
    cmp.add_argument("--json", action="store_true", help="print the report as JSON records")
    cmp.add_argument("--report", metavar="REPORT.html",
                     help="also write the report as one self-contained HTML page: a chart of every layer's error "
                          "along the topological order and a sortable table (needs pip install irscatter[report])")
    cmp.add_argument("--timeout", type=_seconds, default=120.0, metavar="SECONDS",
                     help="how long the target may take on one batch of layers before it counts as hung")
    cmp.set_defaults(func=cmd_compare)

    ext = _model_command(sub, common, "extract",
                         "write the part of a model that computes some tensors as a standalone IR",
                         "Write the subgraph that computes the --outputs tensors from the --inputs tensors (or "
                         "the model's inputs) as a standalone IR: cut tensors become Parameters with their "
                         "inferred types and shapes. Given values (--values, or the model's inputs to compute "
                         "them from), inputs.npz and expected.npz are written beside it. Tensors are output "
                         "names, tensor names or \"<layer name>:<port id>\".")
    ext.add_argument("--outputs", metavar="NAME[,NAME...]", help="the tensors the new model returns")
    ext.add_argument("--from", dest="cut_from", metavar="NAME[,NAME...]",
                     help="with --outputs: the tensors the cut is fed instead of computing")
    ext.add_argument("--around", metavar="LAYER", help="instead: the layers within --hops edges of this layer")
    ext.add_argument("--hops", type=_count(0), default=1, metavar="K", help="with --around: how far (default 1)")
    ext.add_argument("-o", "--output", required=True, metavar="SUB.xml", help="where to write the new model")
    ext.add_argument("--values", metavar="DUMP.npz", help="every tensor's value, as run --dump saves them")
    _feed_arguments(ext)
    ext.set_defaults(func=cmd_extract)

    red = _model_command(sub, common, "reduce", "shrink a model that fails on a target to a minimal reproducer",
                         "Shrink a model to a minimal one that still fails: on a target runtime (its outputs "
                         "outside irscatter's tolerance, or a crash), or under a command (--check). Writes a "
                         "reproducer folder: model.xml, model.bin, inputs.npz, expected.npz (irscatter's values), "
                         "actual.npz (the target's) and README.md. Exit status: 0 a reproducer written, 1 the "
                         "failure does not reproduce, 2 a usage error.")
    red.add_argument("-o", "--output", required=True, metavar="DIR", help="a new or empty folder for the reproducer")
    _feed_arguments(red)
    _target_arguments(red, defaults=False)
    red.add_argument("--check", metavar="CMD", help="instead of a target: a shell command given {model} and {inputs} "
                     "(the candidate's files) that fails by a non-zero exit status")
    red.add_argument("--fail-regex", metavar="REGEX",
                     help="with --check: fail when the command's output (its last MiB) matches")
    red.add_argument("--timeout", type=_seconds, default=120.0, metavar="SECONDS",
                     help="how long one check may take before it counts as hung")
    red.set_defaults(func=cmd_reduce)

    keep = _model_command(sub, common, "keep-f32",
                          "find the layers to keep in f32 for a model to pass at f16 or bf16, and mark them",
                          "Run the model on a target at a lower inference precision and judge its outputs against "
                          "irscatter's f32 values; when they fail, find a small set of layers that must stay in "
                          "f32 (bisection over the order they run, then pruning) and write the model with those "
                          "layers marked in their rt_info, as OpenVINO honours it; the written model is run on the "
                          "target once more. Exit status: 0 it passes (with or without marks), 1 no set of marks "
                          "makes it pass, 2 a usage error.")
    keep.add_argument("-o", "--output", required=True, metavar="OUT.xml",
                      help="where to write the marked model (its weights are copied beside it as OUT.bin)")
    _feed_arguments(keep)
    _target_arguments(keep, defaults=True, precisions=("f16", "bf16"))
    keep.add_argument("--timeout", type=_seconds, default=120.0, metavar="SECONDS",
                      help="how long the target may take on one trial before it counts as hung")
    keep.set_defaults(func=cmd_keep_f32)

    camp = sub.add_parser("campaign", parents=[common],
                          help="judge every model of a corpus on a target, locally or on a Ray cluster")
    camp.add_argument("corpus", nargs="+", metavar="CORPUS",
                      help="a model folder (model.xml, optionally inputs.npz and the framework's expected.npz), "
                           "or a folder searched for them; `campaign diff A.db B.db` compares two campaigns")
    _target_arguments(camp, defaults=True)
    camp.add_argument("--target-config", action="append", metavar="KEY=VALUE",
                      help="an OpenVINO property for compile_model, e.g. DYNAMIC_QUANTIZATION_GROUP_SIZE=0")
    camp.add_argument("--ops", action="store_true",
                      help="judge each distinct layer signature of the corpus once, as a one-layer model fed "
                           "irscatter's values from a model holding it, instead of each model")
    camp.add_argument("--workers", type=_count(1), metavar="N", help="local worker processes (default: one per core)")
    camp.add_argument("--ray", metavar="ADDRESS",
                      help="run the cases on a Ray cluster (ray.init(ADDRESS); \"local\" starts one here); "
                           "the corpus and -o must be at the same path on every node")
    camp.add_argument("--db", metavar="FILE",
                      help="keep the results in this SQLite file; a campaign run again with it skips the cases "
                           "it holds (same model contents, target and settings)")
    camp.add_argument("-o", "--output", default="irscatter-campaign", metavar="DIR",
                      help="where reproducers (and --ops's one-layer models) go (default: irscatter-campaign)")
    camp.add_argument("--timeout", type=_seconds, default=600.0, metavar="SECONDS",
                      help="how long one case may take before it counts as hung (default 600)")
    camp.add_argument("--memory-limit", type=_count(64), metavar="MB",
                      help="address space one case may take beyond its worker's (default: memory / workers)")
    camp.add_argument("--seed", type=int, default=0, help="seed of the inputs drawn for models without inputs.npz")
    camp.add_argument("--no-reduce", action="store_true", help="do not reduce diverging models to reproducers")
    camp.add_argument("--all", action="store_true", help="list every case, not only those that did not pass")
    camp.add_argument("--json", action="store_true", help="print one JSON record per case as it is judged")
    camp.add_argument("--report", metavar="REPORT.html",
                      help="also write an HTML page: pass rates by op type and by model, the worst divergences, "
                           "links to the reproducers")
    camp.set_defaults(func=cmd_campaign)

    info = sub.add_parser("info", help="describe a model without running it", parents=[common])
    info.add_argument("model", help="the model's .xml file")
    info.add_argument("--bin", help="the weights file (default: the .xml's sibling .bin; only its size is read)")
    info.add_argument("--json", action="store_true", help="print the description as one JSON object")
    info.set_defaults(func=cmd_info)

    check = sub.add_parser("validate", help="report every conformance finding about a model", parents=[common])
    check.add_argument("model", help="the model's .xml file")
    check.add_argument("--bin", help="the weights file (default: the .xml's sibling .bin)")
    check.add_argument("--json", action="store_true", help="print the findings as JSON records")
    check.add_argument("--strict", action="store_true",
                       help="also report what the model's constants make rely on behaviour the spec leaves "
                            "undefined (as run --strict does, without running); exit 1 if there is any")
    check.set_defaults(func=cmd_validate)

    docs = sub.add_parser("examples", help="run the example layers of spec documents and check their values", parents=[common])
    docs.add_argument("files", nargs="+", metavar="FILE", help=".rst, .md, .xml or .txt documents")
    docs.add_argument("--json", action="store_true", help="print each example's result as JSON records")
    docs.set_defaults(func=cmd_examples)

    ops = sub.add_parser("ops", help="list the ops irscatter implements", parents=[common])
    ops.add_argument("--json", action="store_true",
                     help="print every registered op version with its module and labels as JSON")
    ops.add_argument("--labels", action="store_true", help="list every error label with its meaning")
    ops.set_defaults(func=cmd_ops)
    for name, command in sub.choices.items():
        command.description = DESCRIPTIONS[name]
    return parser


# What `irscatter COMMAND --help` says above its options: what the command is for and what it answers.
DESCRIPTIONS = {
    "run": "Run a model on inputs (--inputs, -i, or --random) and print or save its outputs; with --expected, "
           "say whether they match saved values. --profile times every layer; --dump, --stats and "
           "--check-numerics look inside.",
    "compare": "Find the layer of another runtime that went wrong: every layer run alone on the target, fed "
               "irscatter's values of its inputs, and judged against irscatter's (--whole: the model as a whole, "
               "with --bisect for the first diverging layer). Also compares two saved .npz files of tensors.",
    "extract": "Write the part of a model that computes some tensors (--outputs) or surrounds a layer (--around) "
               "as a standalone IR, with inputs to run it.",
    "reduce": "Shrink a model that fails on a target (or a --check command) to a small reproducer folder: the "
              "smallest cut that still fails, its inputs, expected values and a README.",
    "keep-f32": "Find a small set of layers that must stay in f32 for a model's outputs to pass on a target "
                "inferring in f16 or bf16 (judged against irscatter's f32 values), and write the model with those "
                "layers marked in their rt_info, as OpenVINO keeps them; the written model is checked on the target.",
    "campaign": "Judge every model of a corpus on a target (validate, run, compare, name the first layer at fault, "
                "reduce to a reproducer), each case in its own process within time and memory limits, on this "
                "machine or a Ray cluster; results in a database a rerun resumes from. Exit 1 when any case did "
                "not pass. `campaign diff A.db B.db`: what broke, what was fixed.",
    "info": "Describe a model without running it: header, inputs, outputs, opsets and op histogram.",
    "validate": "Report every conformance finding about a model in one pass (errors and warnings; --strict adds "
                "what the model relies on that the spec leaves undefined). Exit 1 on an error.",
    "examples": "Run the example <layer>s of spec documents (.rst, .md, .xml pages) and check the values they "
                "state.",
    "ops": "List the ops irscatter implements, a row per type with its versions and family (--json for "
           "details, --labels for every error label and its meaning).",
}


def _apply_limits(items: list[str]) -> None:
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


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)  # the command as given, for reports to quote
    try:
        _apply_limits(args.limit or [])
        with warnings.catch_warnings():
            warnings.showwarning = _show_note
            return args.func(args)
    except IRError as e:
        if args.debug:
            traceback.print_exc()
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return e.exit_code
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # the reader went away (`irscatter run ... | head`): stop quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    except Exception as e:  # a bug in irscatter, not in the model
        if args.debug:
            traceback.print_exc()
        print(
            f"{PROG}: internal error: {type(e).__name__}: {elide(str(e), MESSAGE_LIMIT)} "
            "(this is a bug in irscatter; please report it with the model, or rerun with --debug)",
            file=sys.stderr,
        )
        return 3


if __name__ == "__main__":
    sys.exit(main())
