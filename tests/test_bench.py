"""The benchmark script runs end to end (tiny sizes) and writes its table as JSON.
Nothing here is timed: speed is measured by running tools/bench.py itself."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

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
    if "W2" in rows:
        assert "irscatter (donated)" in rows["W2"]["times_ms"]
        assert "us/layer" in rows["W7"]["note"]
    else:
        assert rows["W8"]["peak_mb"]["irscatter"] > 0
        assert "irscatter" in rows["W8"]["file_mb"]
