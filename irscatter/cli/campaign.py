"""`irscatter campaign`: every model of a corpus judged on a target (validate, run, compare, the
first layer at fault, a reproducer), each case in its own process within time and memory limits,
on this machine or a Ray cluster (`irscatter.debug.campaign`); results in a database a rerun
resumes from. `campaign diff A.db B.db`: what broke and what was fixed between two campaigns.
Exit status: 0 every case passed, 1 any did not, 2 a usage error."""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
import time
from pathlib import Path

from irscatter.cli.arguments import TargetArguments
from irscatter.cli.output import PROG, count, progress, seconds, writing
from irscatter.errors import UsageError
from irscatter.targets import TargetFailure

DESCRIPTION = ("Judge every model of a corpus on a target (validate, run, compare, name the first layer at fault, "
               "reduce to a reproducer), each case in its own process within time and memory limits, on this "
               "machine or a Ray cluster; results in a database a rerun resumes from. Exit 1 when any case did "
               "not pass. `campaign diff A.db B.db`: what broke, what was fixed.")


def cmd_campaign(args: argparse.Namespace) -> int:
    from irscatter.debug import campaign
    from irscatter.debug.campaign import report

    if args.corpus[0] == "diff":
        return _campaign_diff(args)
    if args.ray and args.workers:
        raise UsageError("--workers sizes the local pool; a Ray cluster brings its own workers")
    workers = args.workers or os.cpu_count() or 1
    settings = campaign.Settings(target=args.target, precision=args.target_precision, rtol=args.rtol,
                                 atol=args.atol, tol=tuple(args.tol or ()), properties=tuple(TargetArguments.properties(args).items()),
                                 seed=args.seed, reduce=not args.no_reduce, ops=args.ops, timeout=args.timeout,
                                 memory_mb=args.memory_limit or campaign.default_memory_mb(workers))
    campaign.check_spelling(settings)
    if args.report and (Path(args.report).is_dir() or not Path(args.report).parent.is_dir()):
        raise UsageError(f"--report {args.report}: give a file in a folder that exists")
    with writing("--db", args.db or ":memory:"):
        store = campaign.Store(args.db or ":memory:")
    show = (lambda record: print(json.dumps(record.to_json()), flush=True)) if args.json else None
    start = time.perf_counter()
    try:
        with progress(args, "cases") as callback:
            records = campaign.run_campaign(args.corpus, settings, store=store, out=args.output,
                                            workers=args.workers, ray=args.ray, progress=callback, on_record=show)
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
        with writing("--report", args.report):
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


def add_parser(sub, common: argparse.ArgumentParser) -> None:
    camp = sub.add_parser("campaign", parents=[common], description=DESCRIPTION,
                          help="judge every model of a corpus on a target, locally or on a Ray cluster")
    camp.add_argument("corpus", nargs="+", metavar="CORPUS",
                      help="a model folder (model.xml, optionally inputs.npz and the framework's expected.npz), "
                           "or a folder searched for them; `campaign diff A.db B.db` compares two campaigns")
    TargetArguments(defaults=True).add_to(camp)
    camp.add_argument("--ops", action="store_true",
                      help="judge each distinct layer signature of the corpus once, as a one-layer model fed "
                           "irscatter's values from a model holding it, instead of each model")
    camp.add_argument("--workers", type=count(1), metavar="N", help="local worker processes (default: one per core)")
    camp.add_argument("--ray", metavar="ADDRESS",
                      help="run the cases on a Ray cluster (ray.init(ADDRESS); \"local\" starts one here); "
                           "the corpus and -o must be at the same path on every node")
    camp.add_argument("--db", metavar="FILE",
                      help="keep the results in this SQLite file; a campaign run again with it skips the cases "
                           "it holds (same model contents, target and settings)")
    camp.add_argument("-o", "--output", default="irscatter-campaign", metavar="DIR",
                      help="where reproducers (and --ops's one-layer models) go (default: irscatter-campaign)")
    camp.add_argument("--timeout", type=seconds, default=600.0, metavar="SECONDS",
                      help="how long one case may take before it counts as hung (default 600)")
    camp.add_argument("--memory-limit", type=count(64), metavar="MB",
                      help="address space one case may take beyond its worker's (default: memory / workers)")
    camp.add_argument("--seed", type=int, default=0, help="seed of the inputs drawn for models without inputs.npz")
    camp.add_argument("--no-reduce", action="store_true", help="do not reduce diverging models to reproducers")
    camp.add_argument("--all", action="store_true", help="list every case, not only those that did not pass")
    camp.add_argument("--json", action="store_true", help="print one JSON record per case as it is judged")
    camp.add_argument("--report", metavar="REPORT.html",
                      help="also write an HTML page: pass rates by op type and by model, the worst divergences, "
                           "links to the reproducers")
    camp.set_defaults(func=cmd_campaign)
