"""The benchmark script runs end to end (tiny sizes) and writes its table as JSON.
Nothing here is timed: speed is measured by running tools/bench.py itself."""

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import irscatter
from irscatter.ops.common import accel

BENCH = Path(__file__).resolve().parent.parent / "tools" / "bench.py"


@pytest.mark.parametrize("only", ["W2,W7", "W8"])
def test_bench_runs_and_writes_json(tmp_path, only):
    out = tmp_path / "bench.json"
    args = [sys.executable, str(BENCH), "--small", "--runs", "1", "--only", only, "--json", str(out)]
    if only != "W8":
        args.append("--no-memory")
    done = subprocess.run(args, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    table = json.loads(out.read_text())
    rows = {row["key"]: row for row in table["rows"]}
    assert set(rows) == set(only.split(","))
    for row in rows.values():
        assert row["times_ms"]["irscatter"] > 0
    for probe in (table["cores_before"], table["cores_after"]):  # the machine's parallelism, around the run
        assert probe["cores"] >= 1 and probe["effective"] > 0 and probe["one_thread_gflops"] > 0
    if "W2" in rows:
        assert "irscatter (donated)" in rows["W2"]["times_ms"]
        assert "us/layer" in rows["W7"]["note"]
    else:
        assert rows["W8"]["peak_mb"]["irscatter"] > 0
        assert "irscatter" in rows["W8"]["file_mb"]


def test_bench_runs_the_bundled_models(tmp_path):
    """The real-model workloads: the CNN, a decoder step whose state a prompt primes untimed
    before every call (OpenVINO, when installed, is timed the same way), and a decode step
    with int4 weights as NNCF writes them (built with OpenVINO's opset API, when installed)."""
    keys = {"W10", "W11"} | ({"W12int4"} if importlib.util.find_spec("openvino") else set())
    out = tmp_path / "bench.json"
    args = [sys.executable, str(BENCH), "--small", "--runs", "1", "--only", ",".join(sorted(keys)), "--no-memory",
            "--json", str(out)]
    done = subprocess.run(args, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    table = json.loads(out.read_text())
    rows = {row["key"]: row for row in table["rows"]}
    assert set(rows) == keys
    for row in rows.values():
        assert row["times_ms"]["irscatter"] > 0
        if "openvino" in table["engines"]:
            assert row["times_ms"]["openvino"] > 0
    # The ONNX reference evaluator has an equivalent of the CNN only.
    assert "onnx-reference" not in rows["W11"]["times_ms"]
    if "onnx-reference" in table["engines"]:
        assert rows["W10"]["times_ms"]["onnx-reference"] > 0


def test_bench_decoder_step_sees_the_primed_cache(tmp_path):
    """Every timed decoder step starts from the cache the prompt left: its output is the same
    call after call, and equals the step run after the prompt by hand."""
    sys.path.insert(0, str(BENCH.parent))
    try:
        import bench
    finally:
        sys.path.remove(str(BENCH.parent))
    workload = next(w for w in bench.WORKLOADS if w.key == "W11")
    workload.write(tmp_path, True)
    prepared = bench.prepare(bench.IRSCATTER, workload, tmp_path)
    results = []
    for _ in range(2):
        prepared.before()
        results.append(prepared.call()["y"])
    feeds = dict(np.load(tmp_path / "feeds.npz"))
    by_hand = irscatter.compile_model(tmp_path / "model.xml")
    by_hand.run({"x": feeds["step0/x"]})
    np.testing.assert_array_equal(results[0], results[1])
    np.testing.assert_array_equal(results[0], by_hand.run({"x": feeds["step1/x"]})["y"])


def test_bench_scaling_fits_an_exponent_and_plots(tmp_path):
    """--scaling writes W1, W2 and W8 at four sizes spanning 16x, each with its fitted exponent,
    and --plot the curves as a PNG beside the JSON."""
    out = tmp_path / "scaling.json"
    done = subprocess.run([sys.executable, str(BENCH), "--scaling", "--small", "--runs", "1", "--json", str(out),
                           "--plot"], capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    curves = {c["key"]: c for c in json.loads(out.read_text())["scaling"]}
    assert set(curves) == {"W1", "W2", "W8"}
    for curve in curves.values():
        sizes = curve["sizes"]
        assert len(sizes) == 4 and sizes == sorted(sizes) and 15 <= sizes[-1] / sizes[0] <= 17
        assert len(curve["times_ms"]["irscatter"]) == 4 and isinstance(curve["exponents"]["irscatter"], float)
    assert out.with_suffix(".png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    refused = subprocess.run([sys.executable, str(BENCH), "--plot"], capture_output=True, text=True, timeout=60)
    assert refused.returncode == 2 and "--plot only applies with --scaling" in refused.stderr


def test_bench_conv_times_each_shape_and_names_its_plan(tmp_path):
    """tools/bench_conv.py (tiny shapes): a time per thread policy asked for and for a baseline
    source tree (here this one, in a worker process), and the formulation irscatter takes, for
    each shape and batch. OpenVINO is left out: its engine is bench.py's, tested above."""
    out = tmp_path / "conv.json"
    done = subprocess.run([sys.executable, str(BENCH.parent / "bench_conv.py"), "--small", "--runs", "1",
                           "--only", "pw,dw9", "--batch", "1,2", "--policies", "split,one", "--no-openvino",
                           "--baseline", str(BENCH.parent.parent), "--pause", "0", "--json", str(out)],
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    rows = json.loads(out.read_text())["rows"]
    assert [(r["key"], r["batch"]) for r in rows] == [("pw", 1), ("pw", 2), ("dw9", 1), ("dw9", 2)]
    # numba's loop where it is used and the layer is large enough for it, else the bands
    depthwise = {"depthwise (compiled)", "depthwise (banded)"} if accel.enabled() else {"depthwise (banded)"}
    assert [r["path"] for r in rows[:2]] == ["pointwise"] * 2 and {r["path"] for r in rows[2:]} <= depthwise
    for row in rows:
        assert set(row["times_ms"]) == {"irscatter (baseline)", "irscatter [split]", "irscatter [one]"}
        assert all(ms > 0 for ms in row["times_ms"].values())


def test_bench_models_measures_a_cached_model(tmp_path):
    """tools/bench_models.py's measurement (never its torch-bound build) on the bundled small CNN
    laid out as a cached corpus model: each engine in its own process, irscatter's agreement with
    OpenVINO, and the per-op-type profile of the model furthest behind."""
    pytest.importorskip("openvino")
    folder = tmp_path / "small_cnn"
    folder.mkdir()
    for name in ("model.xml", "model.bin"):
        (folder / name).write_bytes((BENCH.parent.parent / "models" / "small_cnn" / name).read_bytes())
    (folder / "feeds.npz").write_bytes((BENCH.parent.parent / "models" / "small_cnn" / "inputs.npz").read_bytes())
    (folder / "meta.json").write_text(json.dumps({"name": "small_cnn", "source": "models/", "what": "a CNN",
                                                  "inputs": {"x": [[1, 3, 32, 32], "float32"]}}))
    out, table = tmp_path / "models.json", tmp_path / "models.md"
    done = subprocess.run([sys.executable, str(BENCH.parent / "bench_models.py"), "measure", "--cache", str(tmp_path),
                           "--only", "small_cnn", "--runs", "1", "--rounds", "2", "--json", str(out),
                           "--markdown", str(table)],
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    (row,) = json.loads(out.read_text())["rows"]
    for engine in ("irscatter", "openvino"):
        result = row["engines"][engine]
        assert result["steady_ms"] > 0 and result["first_ms"] > 0
        rounds = result["rounds_steady_ms"]  # the engines took turns twice: the median of both
        assert len(rounds) == 2 and result["steady_ms"] == pytest.approx(sum(rounds) / 2)
    assert row["max_abs_diff"] < 1e-4
    assert {t for t, _, _ in row["engines"]["irscatter"]["by_type"]} >= {"Convolution-1", "Softmax-8"}
    assert row["cores"]["effective"] > 0  # sampled before the model's engines ran
    text = table.read_text()
    assert "| small_cnn | " in text and "| Convolution-1 |" in text and "* effective cores" in text
    assert "in 2 rounds" in text


def test_bench_models_reads_a_models_files_before_each_engine(tmp_path):
    """Every engine starts with the model's files in the page cache, not only those after the
    first one, which read them from disk for the others."""
    spec = importlib.util.spec_from_file_location("bench_models", BENCH.parent / "bench_models.py")
    sys.path.insert(0, str(BENCH.parent))
    try:
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(BENCH.parent))
    (tmp_path / "model.bin").write_bytes(bytes(range(256)) * 300)
    (tmp_path / "model.xml").write_text("<net/>")
    (tmp_path / "cache").mkdir()
    assert module.read_files(tmp_path) == 256 * 300 + 6
