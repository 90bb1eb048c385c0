"""irscatter beside OpenVINO's CPU plugin on a real-size decoder, as users deploy one.

    python tools/bench_decoder.py build   [--cache DIR] [--formats f32,int8,int4]
    python tools/bench_decoder.py measure [--cache DIR] [--formats f32,int8,int4] [--rounds 2]
                                          [--json FILE]

`build` makes a decoder at Qwen2.5-0.5B's shapes (24 layers, hidden 896, 14 heads and 2 key-value
heads, MLP 4864, vocabulary 151936, tied embedding) with random weights from a transformers config
(never downloaded), and exports it with optimum-intel as users deploy it: stateful, its KV cache
in the model's variables, f32 (`f32`), int8 asymmetric per channel (`int8`) and int4 asymmetric
in groups of 128 (`int4`) weights as NNCF compresses them. It needs torch, transformers,
optimum-intel and nncf (cache default ~/.cache/irscatter-bench/decoder).

`measure` runs each engine on each format in a fresh process, the model's files read just
before it starts: load (irscatter.compile_model; OpenVINO's read_model and compile_model at f32
inference precision and an infer request), then twice over (the first includes what an engine
does on its first run): reset the state, a prompt of 64 random tokens, then decode steps, each
feeding the argmax of the last logits: 8 in the first round, 16 in the second, whose last 8 are
timed. Each timed step is then one token longer than any the engine has seen, as every step of
a generation is (an engine may remember what it worked out for shapes it has seen: irscatter's
shape check does). Peak resident memory is counted from before loading. Reported: load, the
first and the second prompt, the median of the timed steps, peak memory, and whether both
engines chose the same tokens.

OpenVINO's dynamic quantization is off (DYNAMIC_QUANTIZATION_GROUP_SIZE=0), so that both
engines compute the model's arithmetic: on a CPU with int8 dot products (AVX-512 VNNI, AMX) the
plugin otherwise rounds the activations of a compressed weight's product to int8 groups, which
is faster and computes other values (other tokens). `--dynamic-quantization` leaves it on.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

FORMATS = ("f32", "int8", "int4")
PROMPT, STEPS, VOCAB = 64, 8, 151936
ENGINES = ("irscatter", "openvino")
SHAPES = dict(hidden_size=896, intermediate_size=4864, num_hidden_layers=24, num_attention_heads=14,
              num_key_value_heads=2, vocab_size=VOCAB, max_position_embeddings=32768, tie_word_embeddings=True,
              rope_theta=1000000.0)


# --- building ------------------------------------------------------------------------------------


def build(cache: Path, formats: list[str]) -> int:
    try:
        import torch
        from optimum.intel import OVModelForCausalLM, OVWeightQuantizationConfig
        from transformers import Qwen2Config, Qwen2ForCausalLM
    except ImportError as e:
        print(f"building needs torch, transformers, optimum-intel and nncf: {e}", file=sys.stderr)
        return 2
    source = cache / "hf"
    if not (source / "config.json").exists():
        torch.manual_seed(0)
        Qwen2ForCausalLM(Qwen2Config(**SHAPES)).eval().save_pretrained(source)
    for fmt in formats:
        folder = cache / fmt
        if (folder / "openvino_model.xml").exists():
            continue
        options: dict = {"load_in_8bit": False}
        if fmt == "int8":
            options = {"quantization_config": OVWeightQuantizationConfig(bits=8)}
        elif fmt == "int4":
            options = {"quantization_config": OVWeightQuantizationConfig(bits=4, group_size=128, ratio=1.0, sym=False)}
        OVModelForCausalLM.from_pretrained(source, export=True, compile=False, **options).save_pretrained(folder)
        print(f"wrote {folder}")
    return 0


# --- measuring (one engine, in its own process) -------------------------------------------------


def _feeds(ids: np.ndarray, past: int) -> dict[str, np.ndarray]:
    n = ids.shape[1]
    return {"input_ids": ids, "attention_mask": np.ones((1, past + n), np.int64),
            "position_ids": np.arange(past, past + n, dtype=np.int64)[None], "beam_idx": np.zeros(1, np.int32)}


def _peak_mb() -> float:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM"):
                return int(line.split()[1]) / 1024
    return float("nan")


def _load(engine: str, xml: Path, quantizing: bool):
    """(run(feeds) -> logits, reset_state()) after loading the model."""
    if engine == "irscatter":
        import irscatter

        compiled = irscatter.compile_model(xml)
        return (lambda feeds: compiled(feeds)[0]), compiled.reset_state
    import openvino as ov

    core = ov.Core()
    config = {"INFERENCE_PRECISION_HINT": "f32"}
    if not quantizing:
        config["DYNAMIC_QUANTIZATION_GROUP_SIZE"] = "0"
    request = core.compile_model(core.read_model(xml), "CPU", config).create_infer_request()
    return (lambda feeds: request.infer(feeds)[0]), request.reset_state


def _round(run, reset, prompt: np.ndarray, untimed: int = 0) -> tuple[float, list[float], list[int]]:
    """A prompt, `untimed` decode steps, then `STEPS` timed ones: (prompt seconds, step seconds,
    tokens of the timed steps)."""
    reset()
    started = time.perf_counter()
    logits = np.asarray(run(_feeds(prompt, 0)))
    prefill = time.perf_counter() - started
    for i in range(untimed):
        token = np.array([[int(logits[0, -1].argmax())]], np.int64)
        logits = np.asarray(run(_feeds(token, PROMPT + i)))
    steps, tokens = [], []
    for i in range(untimed, untimed + STEPS):
        token = np.array([[int(logits[0, -1].argmax())]], np.int64)
        tokens.append(int(token[0, 0]))
        started = time.perf_counter()
        logits = np.asarray(run(_feeds(token, PROMPT + i)))
        steps.append(time.perf_counter() - started)
    return prefill, steps, tokens


def worker(engine: str, folder: Path, quantizing: bool) -> dict:
    xml = folder / "openvino_model.xml"
    for name in ("openvino_model.xml", "openvino_model.bin"):
        with open(folder / name, "rb") as file:  # into the page cache, as for the other engine (in
            while file.read(1 << 24):            # pieces: the peak memory counts from here)
                pass
    if engine == "irscatter":
        import irscatter  # noqa: F401  (imported before the baseline, as OpenVINO is)
    else:
        import openvino  # noqa: F401
    base = _peak_mb()
    started = time.perf_counter()
    run, reset = _load(engine, xml, quantizing)
    load = time.perf_counter() - started
    prompt = np.random.default_rng(0).integers(0, VOCAB, (1, PROMPT)).astype(np.int64)
    first, second = _round(run, reset, prompt), _round(run, reset, prompt, untimed=STEPS)
    return {"load_s": load, "first_prompt_s": first[0], "prompt_s": second[0],
            "step_ms": float(np.median(second[1]) * 1e3), "tokens": second[2], "peak_mb": _peak_mb() - base}


def measure(cache: Path, formats: list[str], rounds: int, quantizing: bool) -> list[dict]:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import bench  # (its imports are the benchmarks', not the workers')

    bench.byte_compile_irscatter()
    rows = []
    for fmt in formats:
        for round_ in range(rounds):
            row: dict = {"format": fmt, "round": round_}
            for engine in ENGINES:
                cmd = [sys.executable, __file__, "worker", engine, str(cache / fmt)]
                cmd += ["--dynamic-quantization"] if quantizing else []
                done = subprocess.run(cmd, check=False, capture_output=True, text=True, timeout=3600)
                last = done.stdout.strip().splitlines()[-1:] if done.returncode == 0 else []
                row[engine] = json.loads(last[0]) if last else {"error": done.stderr.strip().splitlines()[-1:]}
            rows.append(row)
            _print(row)
    return rows


def _print(row: dict) -> None:
    ours, theirs = row["irscatter"], row["openvino"]
    if "error" in ours or "error" in theirs:
        print(row["format"], "failed:", ours.get("error") or theirs.get("error"))
        return
    same = "same tokens" if ours["tokens"] == theirs["tokens"] else "tokens differ"
    cells = [f"{key} {ours[key]:.2f} / {theirs[key]:.2f} ({ours[key] / theirs[key]:.2f}x)"
             for key in ("load_s", "first_prompt_s", "prompt_s", "step_ms", "peak_mb")]
    print(f"{row['format']:5} " + "; ".join(cells) + f"; {same}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=("build", "measure", "worker"))
    parser.add_argument("args", nargs="*", help=argparse.SUPPRESS)
    parser.add_argument("--cache", type=Path, default=Path.home() / ".cache" / "irscatter-bench" / "decoder")
    parser.add_argument("--formats", default=",".join(FORMATS))
    parser.add_argument("--rounds", type=int, default=2, help="fresh-process pairs per format")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--dynamic-quantization", action="store_true",
                        help="let OpenVINO quantize activations to int8 for compressed weights (its default)")
    options = parser.parse_args(argv)
    formats = [f for f in options.formats.split(",") if f]
    if any(f not in FORMATS for f in formats):
        parser.error(f"--formats: each one of {', '.join(FORMATS)}")
    if options.command == "worker":
        print(json.dumps(worker(options.args[0], Path(options.args[1]), options.dynamic_quantization)))
        return 0
    if options.command == "build":
        return build(options.cache, formats)
    print("irscatter / OpenVINO (ratio: irscatter's over OpenVINO's); load, prompts in s, a step in ms, memory in MB")
    rows = measure(options.cache, formats, options.rounds, options.dynamic_quantization)
    if options.json:
        options.json.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
