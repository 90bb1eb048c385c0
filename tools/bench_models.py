"""irscatter beside OpenVINO's CPU plugin and onnxruntime on real architectures with random weights.

    python tools/bench_models.py build   [--cache DIR] [--only a,b] [--force]
    python tools/bench_models.py measure [--cache DIR] [--only a,b] [--runs 5] [--rounds 1]
                                         [--one-thread] [--json FILE] [--markdown FILE]

`build` writes the corpus of tools/model_zoo.py into the cache (default
~/.cache/irscatter-bench/models): each model converted to IR by OpenVINO, exported to ONNX
where torch can, with seeded random inputs. It needs torch, timm, transformers and diffusers,
and says which are missing; each model is built in a process of its own. `measure` reads only
the cached files, so it runs where torch is not installed.

irscatter's bytecode is compiled first, as installing it compiles it (a checkout where
PYTHONDONTWRITEBYTECODE is set would otherwise compile its op modules inside every first run),
and the compiled loops irscatter keeps as machine code for first runs are kept, as the first
process on a machine to use them keeps them (`bench.keep_compiled_loops`).
Each engine runs each model in a fresh process, the model's files read just before it starts
(so that every engine finds them in the page cache, not only those after the first): the
engine is imported first, then the clock covers the first run (read + compile + first output:
`irscatter.compile_model` and a run; OpenVINO's Core, read_model, compile_model and a call; an
onnxruntime session and a run), then the steady state is timed as tools/bench.py times it (the
median of `--runs` calls after a warm-up), and the process's peak resident growth over the
imported engine is recorded. irscatter's process also profiles its run per op type, and the
outputs of irscatter and OpenVINO are compared (max abs difference), so that a fast wrong answer
shows. Ratios are irscatter's time over the other engine's: 2.0x means irscatter takes twice as
long. `--one-thread` holds every engine to one thread, for a machine whose other work would
leave a thread pool waiting. Before each model, the cores the machine gives for arithmetic are
measured (`bench.effective_cores`), kept in the model's row, and their range is in the table.
`--rounds N` has the engines take turns N times on each model, each time in a fresh process, and
reports the medians: a spell in which the machine gives less falls on one round of one engine
rather than on the whole of one engine's measurement.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench
import model_zoo

ENGINES = (bench.IRSCATTER, bench.OPENVINO, bench.ORT)
TITLES = {bench.IRSCATTER: "irscatter", bench.OPENVINO: "OpenVINO", bench.ORT: "onnxruntime"}
TARGETS = {"median": 2.0, "worst": 5.0, "first run": 1.0}  # irscatter / OpenVINO at most
KEY_TITLES = {"steady_ms": "steady state", "first_ms": "first run"}
PROFILE_RUNS = 3
ONE_THREAD_ENV = {"IRSCATTER_THREADS_POLICY": "one", "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1",
                  "MKL_NUM_THREADS": "1", "NUMBA_NUM_THREADS": "1"}


# --- building ------------------------------------------------------------------------------------


def build_corpus(cache: Path, only: list[str] | None, force: bool) -> int:
    missing = model_zoo.missing_packages()
    if missing:
        print(f"building the corpus needs: pip install {' '.join(missing)}", file=sys.stderr)
        return 2
    for spec in _selected(only):
        start = time.perf_counter()
        cmd = [sys.executable, __file__, "--build-one", spec.name, "--cache", str(cache)] + (["--force"] if force else [])
        done = subprocess.run(cmd, check=False, capture_output=True, text=True, timeout=3600)
        meta_file = cache / spec.name / "meta.json"
        if done.returncode != 0 or not meta_file.exists():
            print(f"{spec.name}: the build process failed: {done.stderr.strip().splitlines()[-1:]}", flush=True)
            continue
        meta = json.loads(meta_file.read_text())
        status = f"left out: {meta['error']}" if "error" in meta else "IR" + (
            f", no ONNX ({meta['onnx_error']})" if "onnx_error" in meta else " + ONNX")
        print(f"{spec.name}: {status} [{time.perf_counter() - start:.0f} s]", flush=True)
    return 0


def _selected(only: list[str] | None) -> list[model_zoo.Spec]:
    if not only:
        return model_zoo.CORPUS
    unknown = set(only) - {s.name for s in model_zoo.CORPUS}
    if unknown:
        raise SystemExit(f"no model named {', '.join(sorted(unknown))} in the corpus")
    return [s for s in model_zoo.CORPUS if s.name in only]


def _cached(cache: Path, only: list[str] | None) -> list[str]:
    """The models to measure: the corpus's, in its order, then any other model folder in the cache
    (a folder with meta.json, model.xml and feeds.npz, written by hand or by an older corpus)."""
    names = [s.name for s in model_zoo.CORPUS]
    extra = sorted(p.parent.name for p in cache.glob("*/meta.json") if p.parent.name not in names)
    return [n for n in names + extra if only is None or n in only]


# --- one engine on one model, in its own process ---------------------------------------------


def _start(engine: str, folder: Path, feeds: dict[str, np.ndarray], one_thread: bool):
    """Read and compile the model; the call that runs it once and its compiled form."""
    if engine == bench.IRSCATTER:
        import irscatter

        compiled = irscatter.compile_model(folder / "model.xml")
        return compiled, lambda: compiled.run(feeds)
    if engine == bench.OPENVINO:
        import openvino as ov

        config = {"INFERENCE_PRECISION_HINT": "f32"} | ({"INFERENCE_NUM_THREADS": 1} if one_thread else {})
        core = ov.Core()
        compiled = core.compile_model(core.read_model(str(folder / "model.xml")), "CPU", config)
        return compiled, lambda: compiled(feeds)
    import onnxruntime

    options = onnxruntime.SessionOptions()
    if one_thread:
        options.intra_op_num_threads = options.inter_op_num_threads = 1
    session = onnxruntime.InferenceSession(str(folder / "model.onnx"), options, providers=["CPUExecutionProvider"])
    return session, lambda: session.run(None, feeds)


def _engine_module(engine: str) -> str:
    return {bench.IRSCATTER: "irscatter", bench.OPENVINO: "openvino", bench.ORT: "onnxruntime"}[engine]


def measure_engine(engine: str, folder: Path, runs: int, outputs_file: Path | None, one_thread: bool = False) -> dict:
    """First run, steady state and peak memory of `engine` on the model in `folder`; its outputs
    go to `outputs_file` (npz, by position). Meant for a fresh process: the first run is only
    first there."""
    __import__(_engine_module(engine))
    feeds = bench.load_feeds(folder)
    before_kb = bench.reset_peak_rss()
    start = time.perf_counter()
    compiled, call = _start(engine, folder, feeds, one_thread)
    first = call()
    first_ms = 1e3 * (time.perf_counter() - start)
    steady_ms = bench.time_interleaved({engine: bench.Prepared(call)}, runs)[engine]
    result = {"first_ms": first_ms, "steady_ms": steady_ms}
    if before_kb is not None:
        result["peak_mb"] = (bench.status_kb("VmHWM") - before_kb) / 1024
    if outputs_file is not None:
        values = list(first.values()) if hasattr(first, "values") else list(first)
        np.savez(outputs_file, *[np.asarray(v) for v in values])
    if engine == bench.IRSCATTER:
        result["layers"] = len(compiled.graph.order)
        result["by_type"] = profile_by_type(compiled, feeds)
    return result


def profile_by_type(compiled, feeds: dict[str, np.ndarray]) -> list[list]:
    """`irscatter run --profile`'s layer times summed per op type: [type, ms, layers], slowest first."""
    from irscatter.runtime.profile import profile

    totals: dict[str, list] = {}
    for layer in profile(compiled, feeds, PROFILE_RUNS).layers:
        entry = totals.setdefault(layer.type, [layer.type, 0.0, 0])
        entry[1] += 1e3 * layer.seconds
        entry[2] += 1
    return sorted(totals.values(), key=lambda e: e[1], reverse=True)


def read_files(folder: Path) -> int:
    """Reads every file of a model folder once, so that the engine about to start finds them all
    in the page cache: the kernel drops the pages of files unused for a while, and the first
    engine to run would otherwise read the weights from disk for the ones after it. Returns the
    bytes read."""
    total = 0
    for path in sorted(folder.iterdir()):
        if path.is_file():
            with path.open("rb") as f:
                while chunk := f.read(1 << 24):
                    total += len(chunk)
    return total


def _in_subprocess(engine: str, folder: Path, runs: int, outputs_file: Path | None, one_thread: bool) -> dict:
    cmd = [sys.executable, __file__, "--worker", engine, str(folder), str(runs), str(outputs_file or "")]
    env = dict(os.environ)
    if one_thread:  # irscatter's own threads and numpy's BLAS; OpenVINO and onnxruntime take it as options
        cmd.append("--one-thread")
        env.update(ONE_THREAD_ENV)
    try:
        done = subprocess.run(cmd, check=False, capture_output=True, text=True, timeout=3600, env=env)
    except subprocess.TimeoutExpired:
        return {"error": "timed out after an hour"}
    if done.returncode != 0:
        lines = done.stderr.strip().splitlines()
        return {"error": lines[-1][:300] if lines else f"exit status {done.returncode}"}
    return json.loads(done.stdout.strip().splitlines()[-1])


# --- the corpus ------------------------------------------------------------------------------------


def _max_abs_diff(ours: Path, theirs: Path) -> float | None:
    if not (ours.exists() and theirs.exists()):
        return None
    with np.load(ours) as a, np.load(theirs) as b:
        if a.files != b.files:
            return float("inf")
        worst = 0.0
        for key in a.files:
            x, y = a[key], b[key]
            if x.shape != y.shape:
                return float("inf")
            if x.size:
                worst = max(worst, float(np.max(np.abs(x.astype(np.float64) - y.astype(np.float64)))))
        return worst


def measure_model(folder: Path, engines: list[str], runs: int, one_thread: bool = False, rounds: int = 1) -> dict:
    """Each engine on the model in a fresh process, the engines taking turns `rounds` times."""
    meta = json.loads((folder / "meta.json").read_text())
    row = {"model": meta["name"], "source": meta["source"], "what": meta["what"], "inputs": meta["inputs"],
           "parameters": meta.get("parameters"), "built_with": meta.get("versions"), "engines": {}}
    if "onnx_error" in meta:
        row["onnx_error"] = meta["onnx_error"]
    with tempfile.TemporaryDirectory(prefix="irscatter-bench-models-") as tmp:
        outputs = {e: Path(tmp) / f"{e}.npz" for e in (bench.IRSCATTER, bench.OPENVINO)}
        results: dict[str, list[dict]] = {}
        for turn in range(rounds):
            for engine in engines:
                if engine == bench.ORT and not (folder / "model.onnx").exists():
                    continue
                read_files(folder)
                results.setdefault(engine, []).append(
                    _in_subprocess(engine, folder, runs, outputs.get(engine) if turn == 0 else None, one_thread))
        row["engines"] = {engine: _combined(taken) for engine, taken in results.items()}
        row["max_abs_diff"] = _max_abs_diff(outputs[bench.IRSCATTER], outputs[bench.OPENVINO])
        with np.load(outputs[bench.OPENVINO]) if outputs[bench.OPENVINO].exists() else _Empty() as ref:
            row["max_abs_reference"] = max((float(np.max(np.abs(ref[k]))) for k in ref.files if ref[k].size), default=None)
    return row


def _combined(taken: list[dict]) -> dict:
    """One engine's rounds as one result: the median of their steady states and of their first
    runs, the largest peak, the first round's profile; each round's steady state kept. A round
    that failed stands for all."""
    failed = next((result for result in taken if "error" in result), None)
    if failed is not None or len(taken) == 1:
        return failed or taken[0]
    result = dict(taken[0])
    for key in ("steady_ms", "first_ms"):
        result[key] = statistics.median(r[key] for r in taken)
    if all("peak_mb" in r for r in taken):
        result["peak_mb"] = max(r["peak_mb"] for r in taken)
    result["rounds_steady_ms"] = [r["steady_ms"] for r in taken]
    return result


class _Empty:
    files: list[str] = []

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        pass


def _ratio(row: dict, peer: str, key: str) -> float | None:
    ours, theirs = row["engines"].get(bench.IRSCATTER, {}), row["engines"].get(peer, {})
    if key in ours and key in theirs and theirs[key] > 0:
        return ours[key] / theirs[key]
    return None


def summarize(rows: list[dict]) -> dict:
    """Median and worst of irscatter's ratios to each engine, and the targets against OpenVINO."""
    out: dict = {}
    for peer in (bench.OPENVINO, bench.ORT):
        for key in ("steady_ms", "first_ms"):
            ratios = {r["model"]: x for r in rows if (x := _ratio(r, peer, key)) is not None}
            if ratios:
                worst = max(ratios, key=ratios.get)
                out[f"{TITLES[peer]}, {KEY_TITLES[key]}"] = {"median": statistics.median(ratios.values()), "worst": ratios[worst],
                                        "worst_model": worst, "models": len(ratios)}
    steady, first = out.get("OpenVINO, steady state"), out.get("OpenVINO, first run")
    if steady and first:  # the first run is to be no slower on any model
        out["targets"] = {"median": steady["median"] <= TARGETS["median"],
                          "worst": steady["worst"] <= TARGETS["worst"],
                          "first run": first["worst"] <= TARGETS["first run"]}
    return out


def worst_models(rows: list[dict], count: int = 3) -> list[dict]:
    ranked = [r for r in rows if _ratio(r, bench.OPENVINO, "steady_ms") is not None]
    ranked.sort(key=lambda r: _ratio(r, bench.OPENVINO, "steady_ms"), reverse=True)
    return ranked[:count]


# --- reporting -------------------------------------------------------------------------------------


def _cell(row: dict, engine: str, key: str) -> str:
    result = row["engines"].get(engine)
    if result is None:
        return "-"
    if "error" in result:
        return "failed"
    ms = result[key]
    text = f"{ms:.1f}" if ms < 1000 else f"{ms:.0f}"
    ratio = _ratio(row, engine, key) if engine != bench.IRSCATTER else None
    return text + (f" ({ratio:.2f}x)" if ratio is not None else "")


def _diff(row: dict) -> str:
    d, scale = row.get("max_abs_diff"), row.get("max_abs_reference")
    if d is None:
        return "-"
    return f"{d:.1e}" + (f" (of {scale:.1e})" if scale else "")


def markdown(result: dict) -> str:
    rows = result["rows"]
    head = ("| model | irscatter ms | OpenVINO ms (ratio) | onnxruntime ms (ratio) | first run ms: irscatter | "
            "OpenVINO (ratio) | onnxruntime (ratio) | max abs diff to OpenVINO | peak MB: irscatter / OpenVINO / ORT |")
    lines = [head, "|" + "---|" * head.count(" | ") + "---|"]
    for row in rows:
        peaks = " / ".join(f"{row['engines'][e]['peak_mb']:.0f}" if "peak_mb" in row["engines"].get(e, {}) else "-"
                           for e in ENGINES)
        cells = [row["model"]] + [_cell(row, e, "steady_ms") for e in ENGINES] + \
                [_cell(row, e, "first_ms") for e in ENGINES] + [_diff(row), peaks]
        lines.append("| " + " | ".join(cells) + " |")
    lines.append("")
    if result.get("rounds", 1) > 1:
        lines.append(f"* each engine ran each model in {result['rounds']} rounds, taking turns: the medians")
    effective = [row["cores"]["effective"] for row in rows if "cores" in row]
    if effective:
        lines.append(f"* effective cores (`bench.effective_cores`, before each model): {min(effective):.2f} to "
                     f"{max(effective):.2f}, median {statistics.median(effective):.2f}, of "
                     f"{rows[0]['cores']['cores']}")
    for name, s in result["summary"].items():
        if name != "targets":
            lines.append(f"* irscatter / {name}: median {s['median']:.2f}x, "
                         f"worst {s['worst']:.2f}x ({s['worst_model']}), over {s['models']} models")
    if "targets" in result["summary"]:
        met = result["summary"]["targets"]
        lines.append("* targets against OpenVINO (steady state: median at most 2x, worst at most 5x; first run at "
                     "most 1x on every model): "
                     + ", ".join(f"{k} {'met' if v else 'missed'}" for k, v in met.items()))
    for row in result["rows"]:
        for engine, r in row["engines"].items():
            if "error" in r:
                lines.append(f"* {row['model']} on {TITLES[engine]} failed: {r['error']}")
        if "onnx_error" in row:
            lines.append(f"* {row['model']}: no ONNX file ({row['onnx_error']})")
    for name, error in result.get("left_out", {}).items():
        lines.append(f"* left out {name}: {error}")
    lines += ["", profiles(result["rows"])]
    return "\n".join(lines)


def profiles(rows: list[dict], top: int = 8) -> str:
    """The op types taking most of irscatter's time in the three models furthest behind OpenVINO."""
    out = []
    for row in worst_models(rows):
        ours = row["engines"][bench.IRSCATTER]
        by_type = ours.get("by_type", [])
        total = sum(ms for _, ms, _ in by_type) or 1.0
        out.append(f"{row['model']} ({_ratio(row, bench.OPENVINO, 'steady_ms'):.2f}x OpenVINO; "
                   f"{ours.get('layers', '?')} layers, kernel time {total:.1f} ms, median of {PROFILE_RUNS} profiled runs):")
        out.append("")
        out.append("| op type | ms | share | layers |")
        out.append("|---|---|---|---|")
        for op_type, ms, count in by_type[:top]:
            out.append(f"| {op_type} | {ms:.1f} | {100 * ms / total:.0f}% | {count} |")
        if len(by_type) > top:
            rest = by_type[top:]
            out.append(f"| {len(rest)} other types | {sum(ms for _, ms, _ in rest):.1f} | "
                       f"{100 * sum(ms for _, ms, _ in rest) / total:.0f}% | {sum(c for *_, c in rest)} |")
        out.append("")
    return "\n".join(out)


def _versions() -> dict[str, str]:
    out = {"python": platform.python_version()}
    for module in ("numpy", "irscatter", "openvino", "onnxruntime"):
        try:
            out[module] = str(__import__(module).__version__)
        except Exception:  # noqa: BLE001 - an engine not installed has no version to give
            continue
    out["irscatter from"] = _irscatter_source()
    return out


def _irscatter_source() -> str:
    """Which irscatter the workers import (an installed copy may not be this checkout) and, where
    it is a git checkout, its commit."""
    import irscatter

    root = Path(irscatter.__file__).resolve().parent.parent
    done = subprocess.run(["git", "-C", str(root), "describe", "--always", "--dirty"], check=False,
                          capture_output=True, text=True)
    return f"{root}" + (f" at {done.stdout.strip()}" if done.returncode == 0 else "")


def measure_corpus(cache: Path, only: list[str] | None, runs: int, one_thread: bool = False, rounds: int = 1) -> dict:
    engines = [e for e in bench.installed_engines() if e in ENGINES]
    bench.byte_compile_irscatter()
    bench.keep_compiled_loops()
    load_before = os.getloadavg()
    rows, left_out = [], {}
    for name in _cached(cache, only):
        folder = cache / name
        if not (folder / "meta.json").exists():
            left_out[name] = "not built (run `build` first)"
            continue
        meta = json.loads((folder / "meta.json").read_text())
        if "error" in meta:
            left_out[name] = meta["error"]
            continue
        cores = bench.effective_cores()
        row = measure_model(folder, engines, runs, one_thread, rounds)
        row["cores"] = cores
        rows.append(row)
        print(f"{name}: " + ", ".join(f"{TITLES[e]} {_cell(row, e, 'steady_ms')} ms" for e in row["engines"])
              + f"; diff {_diff(row)}", flush=True)
    return {"date": datetime.date.today().isoformat(), "machine": f"{platform.machine()}, {os.cpu_count()} cores",
            "load_before": load_before, "load_after": os.getloadavg(), "versions": _versions(), "runs": runs,
            "one_thread": one_thread, "rounds": rounds,
            "engines": engines, "rows": rows, "left_out": left_out, "summary": summarize(rows)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("command", nargs="?", choices=["build", "measure"])
    parser.add_argument("--cache", type=Path, default=model_zoo.DEFAULT_CACHE, help="the corpus folder")
    parser.add_argument("--only", help="comma-separated model names")
    parser.add_argument("--force", action="store_true", help="build: rebuild models already in the cache")
    parser.add_argument("--runs", type=int, default=5, help="measure: timed calls per engine and model")
    parser.add_argument("--rounds", type=int, default=1,
                        help="measure: the engines take turns this many times on each model, each in a fresh process; "
                             "the table gives the medians (a spell of a busy machine then falls on one round)")
    parser.add_argument("--one-thread", action="store_true",
                        help="measure: every engine on one thread (a machine whose cores are busy with other work)")
    parser.add_argument("--json", type=Path, help="measure: write the results as JSON")
    parser.add_argument("--markdown", type=Path, help="measure: write the table and profiles as markdown")
    parser.add_argument("--build-one", help=argparse.SUPPRESS)
    parser.add_argument("--worker", nargs=4, metavar=("ENGINE", "FOLDER", "RUNS", "OUTPUTS"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    only = args.only.split(",") if args.only else None
    if args.worker:
        engine, folder, runs, outputs = args.worker
        print(json.dumps(measure_engine(engine, Path(folder), int(runs), Path(outputs) if outputs else None,
                                        args.one_thread)))
        return 0
    if args.build_one:
        model_zoo.build(_selected([args.build_one])[0], args.cache, args.force)
        return 0
    if args.command is None:
        parser.error("say build or measure")
    if args.command == "build":
        return build_corpus(args.cache, only, args.force)
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    result = measure_corpus(args.cache, only, args.runs, args.one_thread, args.rounds)
    text = markdown(result)
    print(f"\nirscatter from {result['versions']['irscatter from']}; load average before {result['load_before']}, "
          f"after {result['load_after']}\n\n{text}")
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))
    if args.markdown:
        args.markdown.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
