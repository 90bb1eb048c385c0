"""`irscatter compare`: irscatter's values against another runtime's, or against another model.

Every layer of a model runs on a target runtime alone, fed irscatter's values of its inputs
(each layer judged on identical inputs), or the whole model does with --whole (--bisect then
finds the first layer that diverges); --onnx judges the ONNX model the IR was converted from,
on onnxruntime; two IRs of one model (A.xml B.xml) both run in irscatter, B judged against A;
or two .npz files of saved tensors are compared. --expected adds the source framework's values,
for a verdict on whether the conversion or the runtime departs. Exit status: 0 all within
tolerance, 1 a divergence or nothing compared, 2 a usage error or an unreadable file."""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from collections.abc import Callable
from contextlib import nullcontext
from pathlib import Path
from typing import Any

from irscatter.cli.arguments import FeedArguments, ModelArguments, TargetArguments
from irscatter.cli.output import PROG, progress, report_path, seconds, writing
from irscatter.errors import UsageError
from irscatter.runtime import inputs as model_inputs
from irscatter.runtime.decompression import DECOMPRESSIONS
from irscatter.runtime.precision import PRECISIONS
from irscatter.runtime.steps import has_steps, split_steps
from irscatter.targets import TargetFailure

DESCRIPTION = ("Find the layer of another runtime that went wrong: every layer run alone on the target, fed "
               "irscatter's values of its inputs, and judged against irscatter's (--whole: the model as a whole, "
               "with --bisect for the first diverging layer). Also compares two saved .npz files of tensors.")


def cmd_compare(args: argparse.Namespace) -> int:
    from irscatter.debug import attribution
    from irscatter.debug.tolerances import check_model_overrides, emulated_at_device_precision

    given = args.target, args.target_precision  # left out: None (two IRs take neither default)
    args.target, args.target_precision = args.target or "openvino", args.target_precision or "f32"
    tolerances = TargetArguments.tolerances(args, args.target_precision)
    if args.report:
        args.report = report_path(args.report)  # refused before any work
    if len(args.files) == 2 and any(Path(f).suffix.lower() == ".xml" for f in args.files):
        return _compare_models(args, *given)
    if len(args.files) == 2 and not args.onnx:
        return _compare_dumps(args, tolerances)
    if args.map:
        raise UsageError("--map names the tensors of a dump: it applies to two .npz files (A.npz B.npz)")
    if len(args.files) != 1:
        raise UsageError("compare takes MODEL.xml, two IRs of one model (A.xml B.xml), or two .npz files of "
                         "saved tensors")
    if args.expected and args.onnx:
        raise UsageError("--expected judges the framework's values beside a target; --onnx takes none")
    _refuse_orphan_flags(args)
    if args.onnx:
        return _compare_onnx(args, tolerances, *given)
    compiled = ModelArguments.read(args, args.files[0]).compile()
    check_model_overrides(tolerances, compiled)
    gathered = FeedArguments.feeds(args, compiled)
    if args.steps > 1 or has_steps(gathered):
        return _compare_steps(args, compiled, gathered, tolerances)
    if args.steps < 1:
        raise UsageError(f"--steps must be at least 1, got {args.steps}")
    feeds = FeedArguments.checked(gathered, compiled)

    expected = model_inputs.load_npz(args.expected) if args.expected else None

    def judge(target):
        emulated = emulated_at_device_precision(target, args.reference_precision)
        with nullcontext() if args.whole else progress(args, "layers judged") as callback:
            return attribution.compare_against(compiled, feeds, target, tolerances, whole=args.whole,
                                               bisect=args.bisect, emulated=emulated, expected=expected,
                                               expected_file=args.expected, progress=callback,
                                               decompression=args.decompression)
    return _judged_on_target(args, judge, compiled.model)


def _refuse_orphan_flags(args: argparse.Namespace) -> None:
    for flag, value, parent, present in [*FeedArguments.orphans(args), ("--bisect", args.bisect, "--whole", args.whole),
                                         ("--decompression", args.decompression, "--whole", args.whole)]:
        if value not in (None, False) and not present:
            raise UsageError(f"{flag} only applies with {parent}")
    if args.decompression and args.bisect:
        raise UsageError("--decompression does not apply with --bisect: a prefix may end inside a decompression "
                         "chain, whose values in f32 are not of the types the graph declares")


def _compare_onnx(args: argparse.Namespace, tolerances, target: str | None, precision: str | None) -> int:
    """compare MODEL.xml --onnx MODEL.onnx: the IR against the ONNX model it was converted from,
    run once on onnxruntime's CPU provider."""
    from irscatter.debug import onnx_compare
    from irscatter.debug.tolerances import check_model_overrides

    given = [flag for flag, value in [("--target", target), ("--target-config", args.target_config),
                                      ("--target-precision", precision not in (None, "f32")),
                                      ("--reference-precision", args.reference_precision),
                                      ("--decompression", args.decompression), ("--whole", args.whole),
                                      ("--bisect", args.bisect), ("--steps", args.steps != 1)] if value]
    if given:
        raise UsageError(f"--onnx runs the ONNX model once on onnxruntime's CPU at f32 and judges every tensor it "
                         f"shares with the IR; it takes no {', '.join(given)}")
    compiled = ModelArguments.read(args, args.files[0]).compile()
    check_model_overrides(tolerances, compiled)
    feeds = FeedArguments.checked(FeedArguments.feeds(args, compiled), compiled)
    try:
        report = onnx_compare.compare_onnx(compiled, feeds, args.onnx, tolerances, timeout=args.timeout)
    except TargetFailure as e:
        raise UsageError(f"--onnx {args.onnx}: {e.message}") from None
    _print_comparison(report, args, onnx_compare.onnx_table, compiled.model)
    return 0 if report.passed else 1


def _compare_models(args: argparse.Namespace, target: str | None, precision: str | None) -> int:
    """compare A.xml B.xml: two IRs of one model, both run by irscatter, B judged against A."""
    from irscatter.debug import two_models
    from irscatter.debug.tolerances import Tolerances, check_overrides

    if not all(Path(f).suffix.lower() == ".xml" for f in args.files):
        raise UsageError("compare takes two IRs (A.xml B.xml) or two .npz files, not one of each")
    for flag, value in (("--target", target), ("--target-config", args.target_config), ("--onnx", args.onnx),
                        ("--expected", args.expected), ("--map", args.map)):
        if value is not None:
            raise UsageError(f"two IRs are both run by irscatter: {flag} does not apply")
    for flag, value in [("--whole", args.whole), ("--bisect", args.bisect), ("--bin", args.bin),
                        ("--reference-precision", args.reference_precision), ("--decompression", args.decompression),
                        ("--steps", args.steps != 1)]:
        if value not in (None, False):
            raise UsageError(f"{flag} does not apply to two IRs (each is read with its sibling .bin and run once)")
    _refuse_orphan_flags(args)
    a, b = (ModelArguments.read(args, f).compile() for f in args.files)
    overrides = Tolerances.parse(overrides=args.tol or []).overrides
    check_overrides(Tolerances(overrides=overrides), two_models.keys_of(b))
    feeds = FeedArguments.checked(FeedArguments.feeds(args, a), a)
    report = two_models.compare_models(a, b, feeds, rtol=args.rtol, atol=args.atol, overrides=overrides,
                                       precision=precision, names=(args.files[0], args.files[1]))
    _print_comparison(report, args, graph=b.model)  # the records are B's layers
    return 0 if report.passed else 1


def _judged_on_target(args: argparse.Namespace, judge: Callable[[Any], Any], graph) -> int:
    """Open the target, let `judge(target)` make the report, print it (the page drawing
    `graph`); the exit status."""
    from irscatter.debug import attribution, compare

    target = compare.open_target(args.target, args.target_precision, args.timeout, TargetArguments.properties(args))
    try:
        target.describe()  # fails here, once, when the target cannot start
        report = judge(target)
    except TargetFailure as e:
        raise UsageError(f"--target {args.target}: {e.message}") from None
    finally:
        target.close()
    _print_comparison(report, args, attribution.attributed_table, graph)
    return 0 if report.passed else 1


def _compare_steps(args: argparse.Namespace, compiled, feeds: dict[str, Any], tolerances) -> int:
    """compare --whole over the steps of a stateful model (--steps N, or step-keyed inputs)."""
    from irscatter.debug import compare
    from irscatter.debug.tolerances import emulated_at_device_precision

    if args.expected:
        raise UsageError("--expected judges one run; it takes no --steps or step-keyed inputs")
    if not args.whole or args.bisect:
        raise UsageError("a model is compared over steps as a whole (--whole), its state carried from step to "
                         "step; layer by layer and --bisect look at one run")
    per_step = split_steps(feeds, args.steps)
    current: dict[str, Any] = {}
    for step in per_step:  # each step's feeds checked as a run would bind them, before any work
        current = {**current, **step}
        FeedArguments.checked(current, compiled)
    return _judged_on_target(args, lambda target: compare.compare_steps(
        compiled, per_step, target, tolerances,
        precision=emulated_at_device_precision(target, args.reference_precision),
        decompression=args.decompression), compiled.model)


def _compare_dumps(args: argparse.Namespace, tolerances) -> int:
    from irscatter.debug import dump_compare
    from irscatter.debug.tolerances import check_overrides

    if (args.whole or args.bisect or FeedArguments.given(args) or args.reference_precision or args.expected
            or args.decompression):
        raise UsageError("comparing two .npz files takes no model inputs and no --whole, --bisect, "
                         "--reference-precision, --decompression or --expected")
    renames = None
    if args.map:
        try:
            renames = dump_compare.read_map(args.map)
        except UsageError as e:
            raise UsageError(f"--map {e.message}") from None
    first, second = (model_inputs.load_npz(path) for path in args.files)
    check_overrides(tolerances, second)
    try:
        report = dump_compare.compare_dumps(first, second, tolerances, names=tuple(args.files), renames=renames)
    except UsageError as e:
        raise UsageError(f"--map {args.map}: {e.message}") from None
    _print_comparison(report, args)
    return 0 if report.passed else 1


def _print_comparison(report, args: argparse.Namespace, table: Callable[..., str] | None = None,
                      graph=None) -> None:
    from irscatter.debug import verdicts

    if args.json:
        print(json.dumps(report.to_json(), indent=2))
    else:
        print((table or verdicts.table)(report, every=args.all))
    if args.report:
        from irscatter.debug import html
        from irscatter.debug.attribution import for_page

        with writing("--report", args.report):
            html.write(for_page(report), args.report, command=shlex.join([PROG, *args.argv]), graph=graph)
        print(f"wrote {args.report}", file=sys.stderr)


def add_parser(sub, common: argparse.ArgumentParser) -> None:
    cmp = sub.add_parser("compare", parents=[common], description=DESCRIPTION,
                         help="find the layer that went wrong: irscatter's values against another runtime's")
    cmp.add_argument("files", nargs="+", metavar="MODEL.xml | A.xml B.xml | A.npz B.npz",
                     help="the model; or two IRs of one model, both run by irscatter on the same inputs, B "
                          "judged against A tensor by tensor (--target-precision then names the tolerance "
                          "presets, by default those of the coarsest compressed weights); or two saved sets "
                          "of tensors (the first judged against the second)")
    ModelArguments.add_bin(cmp)
    TargetArguments(defaults=False).add_to(cmp)
    cmp.add_argument("--onnx", metavar="MODEL.onnx",
                     help="judge the ONNX model the IR was converted from, run on onnxruntime (pip install "
                          "irscatter[onnxruntime]), against irscatter's run of the IR: every tensor whose IR port "
                          "keeps an ONNX value's name, in topological order; unmatched names are listed")
    cmp.add_argument("--expected", metavar="FRAMEWORK_OUT.npz",
                     help="the source framework's values on the same inputs, keyed by output name (as run --expected "
                          "takes them), IR tensor name or \"<layer name>:<port id>\": judged against irscatter's run "
                          "of the IR, beside the target, for a verdict on whether the conversion or the runtime "
                          "departs; with intermediate tensors, the first one that departs names the layer")
    cmp.add_argument("--map", metavar="FILE",
                     help="with two .npz files: the first file's tensor names mapped to the second's "
                          '("<layer name>:<port>" of a run --dump, or an output\'s tensor name), as a JSON object '
                          "or a text file of two names a line")
    cmp.add_argument("--reference-precision", choices=list(PRECISIONS),
                     help="irscatter's values as it emulates a device inferring in f16 or bf16 (see run --precision)")
    cmp.add_argument("--decompression", choices=list(DECOMPRESSIONS),
                     help="with --whole: irscatter computes compressed weights' decompression layers (NNCF's "
                          "codes, zero points and f16 scales before a MatMul) in f32, as OpenVINO's CPU plugin "
                          "does inside its fully-connected kernel, rather than in f16 as the graph says")
    FeedArguments.add_to(cmp)
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
                          "along the topological order, the model's graph coloured by verdict (laid out by Graphviz's dot when it "
                          "is installed) and a sortable table (needs pip install irscatter[report])")
    cmp.add_argument("--timeout", type=seconds, default=120.0, metavar="SECONDS",
                     help="how long the target may take on one batch of layers before it counts as hung")
    cmp.set_defaults(func=cmd_compare)
