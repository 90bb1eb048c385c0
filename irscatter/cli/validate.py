"""`irscatter validate`: every conformance finding about a model, in one pass."""

from __future__ import annotations

import argparse
import json

from irscatter.api import validate
from irscatter.checks.conformance import finding_line
from irscatter.cli.arguments import ModelArguments

DESCRIPTION = ("Report every conformance finding about a model in one pass (errors and warnings; --strict adds "
               "what the model relies on that the spec leaves undefined). Exit 1 on an error.")


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


def add_parser(sub, common: argparse.ArgumentParser) -> None:
    check = sub.add_parser("validate", help="report every conformance finding about a model", parents=[common],
                           description=DESCRIPTION)
    ModelArguments.add_to(check)
    check.add_argument("--json", action="store_true", help="print the findings as JSON records")
    check.add_argument("--strict", action="store_true",
                       help="also report what the model's constants make rely on behaviour the spec leaves "
                            "undefined (as run --strict does, without running); exit 1 if there is any")
    check.set_defaults(func=cmd_validate)
