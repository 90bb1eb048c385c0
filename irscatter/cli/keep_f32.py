"""`irscatter keep-f32`: the layers a model must keep in f32 to pass on a target inferring in
f16 or bf16, found (`irscatter.debug.precision_search`: bisection over the order they run,
then pruning) and written as OpenVINO's rt_info mark, the written model run on the target once
more. Exit status: 0 it passes (with or without marks), 1 no set of marks makes it pass, 2 a
usage error."""

from __future__ import annotations

import argparse
from pathlib import Path

from irscatter.cli.arguments import FeedArguments, ModelArguments, TargetArguments
from irscatter.cli.output import output_path, progress, seconds, writing
from irscatter.errors import UsageError
from irscatter.targets import TargetFailure

DESCRIPTION = ("Find a small set of layers that must stay in f32 for a model's outputs to pass on a target "
               "inferring in f16 or bf16 (judged against irscatter's f32 values), and write the model with those "
               "layers marked in their rt_info, as OpenVINO keeps them; the written model is checked on the target.")


def cmd_keep_f32(args: argparse.Namespace) -> int:
    from irscatter.debug import compare, precision_search
    from irscatter.debug.tolerances import check_model_overrides

    out = Path(output_path(args.output, flag="-o", suffix=".xml"))
    tolerances = TargetArguments.tolerances(args, args.target_precision)
    compiled = ModelArguments.read(args, args.model).compile()
    sources = [Path(p).resolve() for p in (compiled.model.xml_path, compiled.model.bin_path) if p]
    if out.resolve() in sources or out.with_suffix(".bin").resolve() in sources:
        raise UsageError(f"-o {args.output}: that would write over the model read; give another name")
    check_model_overrides(tolerances, compiled)
    feeds = FeedArguments.checked(FeedArguments.feeds(args, compiled), compiled)
    target = compare.open_target(args.target, args.target_precision, args.timeout, TargetArguments.properties(args))
    try:
        target.describe()  # fails here, once, when the target cannot start
        with progress(args, "trials") as callback:
            found = precision_search.search(compiled, feeds, target, tolerances, progress=callback)
        print("\n".join(precision_search.summary(found, compiled)))
        if found.status == "impossible":
            return 1
        with writing("-o", out):
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


def add_parser(sub, common: argparse.ArgumentParser) -> None:
    keep = sub.add_parser("keep-f32", parents=[common], description=DESCRIPTION,
                          help="find the layers to keep in f32 for a model to pass at f16 or bf16, and mark them")
    ModelArguments.add_to(keep)
    keep.add_argument("-o", "--output", required=True, metavar="OUT.xml",
                      help="where to write the marked model (its weights are copied beside it as OUT.bin)")
    FeedArguments.add_to(keep)
    TargetArguments(defaults=True, precisions=("f16", "bf16")).add_to(keep)
    keep.add_argument("--timeout", type=seconds, default=120.0, metavar="SECONDS",
                      help="how long the target may take on one trial before it counts as hung")
    keep.set_defaults(func=cmd_keep_f32)
