"""`irscatter run --profile` and the profile API: every kernel timed, slowest first."""

from pathlib import Path

import numpy as np
from helpers import cli

import irscatter
from irscatter.runtime.profile import profile

MODEL = Path(__file__).resolve().parent.parent / "models" / "paged_kv_cache"


def _feeds():
    with np.load(MODEL / "inputs.npz") as f:
        return {k: f[k] for k in f.files}


def test_profile_times_every_kernel_slowest_first_and_returns_the_outputs():
    compiled = irscatter.read_model(MODEL / "model.xml").compile()
    feeds = _feeds()
    report = profile(compiled, feeds, runs=3)
    assert report.runs == 3
    assert {t.layer_id for t in report.layers} == {s.layer.id for s in compiled.plan.steps}
    times = [t.seconds for t in report.layers]
    assert times == sorted(times, reverse=True) and all(t >= 0 for t in times)
    for name, value in compiled.run(feeds).items():
        np.testing.assert_array_equal(report.outputs[name], value)
    table = report.table()
    assert table.splitlines()[0].split()[:3] == ["layer", "type", "time"]
    assert "ScatterNDUpdate-15" in table and "median of 3 runs" in table


def test_profiling_with_donated_feeds_leaves_the_callers_arrays_alone():
    compiled = irscatter.read_model(MODEL / "model.xml").compile()
    feeds = _feeds()
    before = {k: v.copy() for k, v in feeds.items()}
    report = profile(compiled, feeds, runs=2, donate=list(feeds))
    assert any(t.in_place for t in report.layers if t.type == "ScatterNDUpdate-15")
    for k in feeds:
        np.testing.assert_array_equal(feeds[k], before[k])
    with np.load(MODEL / "expected.npz") as f:
        for k in f.files:
            np.testing.assert_array_equal(report.outputs[k], f[k])


def test_cli_profile_prints_the_table_then_checks_the_outputs():
    done = cli("run", str(MODEL / "model.xml"), "--inputs", str(MODEL / "inputs.npz"),
               "--expected", str(MODEL / "expected.npz"), "--profile", "--runs", "2")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].split()[:2] == ["layer", "type"]
    scatter = next(line for line in lines if "ScatterNDUpdate-15" in line)
    assert scatter.rstrip().endswith("yes")  # the CLI donates the feeds it read itself
    assert any(line.startswith("total ") and "median of 2 runs" in line for line in lines)
    assert sum(line.startswith("ok ") for line in lines) == 2
