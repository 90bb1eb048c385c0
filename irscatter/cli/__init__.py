"""The `irscatter` command. Thin: it parses arguments, calls the library and prints.

Every error the library raises is printed as one line on stderr,
    irscatter: error: <file>: layer <id> "<name>" (<Type>-<version>): <what>
where a usage error's arguments are named by the flags that feed them (`arguments.FLAGS`),
with exit code 1 for an invalid model or a failed run and 2 for usage errors or unreadable
files. Anything else is a bug in irscatter and is reported as an internal error.

One module per command holds its `cmd_*` and the `add_parser` that adds its subcommand; the
options several commands share are groups in `arguments.py`, and what they share in printing
and writing is in `output.py`.
"""

from __future__ import annotations

import argparse
import os
import sys
import traceback
import warnings
from collections.abc import Sequence

from irscatter import __version__
from irscatter.cli import campaign, compare, examples, extract, info, keep_f32, ops, reduce, run, validate
from irscatter.cli.arguments import GlobalOptions, in_flags
from irscatter.cli.output import PROG, show_note
from irscatter.errors import MESSAGE_LIMIT, IRError, elide

COMMANDS = (run, compare, extract, reduce, keep_f32, campaign, info, validate, examples, ops)  # in the order --help lists them


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=PROG, description="Run, inspect and check OpenVINO IR models with numpy.")
    GlobalOptions.add_to(parser, lambda value: value)
    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    common = argparse.ArgumentParser(add_help=False)
    GlobalOptions.add_to(common, lambda value: argparse.SUPPRESS)
    sub = parser.add_subparsers(dest="command", required=True)
    for command in COMMANDS:
        command.add_parser(sub, common)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)  # the command as given, for reports to quote
    try:
        GlobalOptions.apply_limits(args.limit or [])
        with warnings.catch_warnings():
            warnings.showwarning = show_note
            return args.func(args)
    except IRError as e:
        if args.debug:
            traceback.print_exc()
        print(f"{PROG}: error: {in_flags(e)}", file=sys.stderr)
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
