"""Campaigns over a corpus (`irscatter campaign`, `irscatter.debug.campaign`).

The corpus is the bundled models plus a generated one with planted faults (`campaign_corpus`):
models whose `expected.npz` is wrong, which any target exposes against irscatter's outputs,
and a target (`MisTarget`: irscatter with Tanh computed as Sigmoid) through the Target
protocol, whose wrong op every campaign must name, with models that make it hang, crash and
run out of memory. The Ray campaign runs in a process of its own, started before the other
tests and read after them, so that Ray's start-up overlaps them; the CLI's test runs the
real target, OpenVINO, in one worker.
"""

import importlib.util
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest
from campaign_corpus import SWAPPED, MisTarget, make_corpus

from irscatter import cli
from irscatter.debug.campaign import Settings, Store, read_records, report, run_campaign, runner
from irscatter.debug.campaign.isolate import isolated
from irscatter.debug.campaign.store import CaseRecord

# One worker runs them all, so that the campaigns and the Ray cluster below start once.
pytestmark = pytest.mark.xdist_group("campaign")

MODELS = Path(__file__).resolve().parent.parent / "models"
LIMIT = 6.0  # seconds a case may take here (a bundled model on a busy machine); the hanging one costs this much


def _settings(**changes) -> Settings:
    return Settings(**{"target": MisTarget.name, "timeout": LIMIT, "memory_mb": 500, **changes})


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    root = tmp_path_factory.mktemp("campaign")
    return root, make_corpus(root)


@pytest.fixture(scope="module")
def ray_run(corpus):
    """The Ray campaign over the generated corpus, started now and read by the Ray test."""
    if importlib.util.find_spec("ray") is None:
        yield None
        return
    root, _ = corpus
    here = Path(__file__).resolve().parent
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(here.parent), str(here), os.environ.get("PYTHONPATH", "")]),
           "RAY_USAGE_STATS_ENABLED": "0"}
    errors = tempfile.TemporaryFile()
    proc = subprocess.Popen([sys.executable, str(here / "campaign_ray.py"), str(root / "gen"), str(root / "ray-out"),
                             str(LIMIT)], stdout=subprocess.PIPE, stderr=errors, env=env, text=True,
                            start_new_session=True)
    yield proc, errors
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


@pytest.fixture(scope="module")
def local(corpus, ray_run):  # (ray_run first: its start-up overlaps this campaign)
    root, _ = corpus
    store = Store(root / "local.db")
    records = run_campaign([str(root / "gen"), str(MODELS)], _settings(), store=store, out=str(root / "out"),
                           factory=MisTarget, workers=2)
    store.close()
    return {r.name: r for r in records}


def test_every_planted_fault_is_found_and_named(corpus, local):
    _, planted = corpus
    assert len(local) == len(planted) + len(list(MODELS.iterdir()))
    found = {name: r.status for name, r in local.items() if name.startswith("gen/")}
    assert found == {name: fault or "passed" for name, fault in planted.items()}
    assert all(r.passed for name, r in local.items() if name.startswith("models/")), {
        n: r.message for n, r in local.items() if not r.passed and n.startswith("models/")}
    wrong = f"{SWAPPED[0]}-1"
    for name in ("gen/tanh_mul", "gen/matmul_tanh"):
        record = local[name]
        assert record.layer_op == wrong and record.layer.endswith(f"({wrong})")
        assert wrong in record.ops and record.metric > 1
        kept = (Path(record.reproducer) / "model.xml").read_text()
        assert kept.count("<layer ") - kept.count('type="Parameter"') - kept.count('type="Result"') == 1
        assert f'type="{SWAPPED[0]}"' in kept and (Path(record.reproducer) / "README.md").is_file()
    assert "expected.npz differs" in local["gen/add_relu_wrong"].message
    assert "SIGABRT" in local["gen/crash"].message
    assert local["gen/hang"].seconds >= LIMIT and f"within {LIMIT:g} s" in local["gen/hang"].message
    assert "500 MB" in local["gen/oom"].message
    assert "[broadcast]" in local["gen/invalid"].message
    assert all(r.peak_mb and r.peak_mb > 0 for r in local.values())


def test_a_resumed_campaign_skips_what_the_database_holds(corpus, local, monkeypatch):
    root, _ = corpus
    store = Store(root / "local.db")
    monkeypatch.setattr(runner, "LocalPool", None)  # nothing left to judge: no worker may start
    again = run_campaign([str(root / "gen"), str(MODELS)], _settings(), store=store, out=str(root / "out"),
                         factory=MisTarget)
    assert all(r.resumed for r in again) and {r.name: r.status for r in again} == {
        n: r.status for n, r in local.items()}
    monkeypatch.undo()
    # a model is known by its contents wherever it lies; one that changes is judged again
    changed = root / "moved" / "softmax_wrong"
    shutil.copytree(root / "gen" / "softmax_wrong", changed)
    again = run_campaign([str(changed)], _settings(), store=store, out=str(root / "out"), factory=MisTarget)
    assert [(r.name, r.resumed, r.status) for r in again] == [("softmax_wrong", True, "expected differs")]
    np.savez(changed / "expected.npz", y=np.load(changed / "expected.npz")["y"] * 0 + 0.125)
    again = run_campaign([str(changed)], _settings(), store=store, out=str(root / "out"), factory=MisTarget,
                         workers=1)
    assert [(r.name, r.resumed, r.status) for r in again] == [("softmax_wrong", False, "expected differs")]
    assert _settings().key() != _settings(rtol=1e-3).key()
    # another irscatter or runtime release judges again what an earlier one judged
    assert _settings().key() != _settings(versions=(("irscatter", "0.0.1"),)).key()
    assert dict(Settings(target="openvino").versions).keys() >= {"irscatter", "openvino"}
    assert len(list(store.records())) == len(local) + 1  # (the changed model is a case of its own)
    store.close()


def test_an_interrupted_campaign_keeps_what_it_finished(corpus, tmp_path):
    root, _ = corpus
    part = tmp_path / "part"
    for name in ("add_relu", "softmax", "conv_a", "tanh_mul"):
        shutil.copytree(root / "gen" / name, part / name)

    def interrupt(record):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_campaign([str(part)], _settings(), store=Store(tmp_path / "part.db"), out=str(tmp_path / "out"),
                     factory=MisTarget, workers=2, on_record=interrupt)
    finished = [r.name for r in read_records(tmp_path / "part.db")]
    again = run_campaign([str(part)], _settings(), store=Store(tmp_path / "part.db"), out=str(tmp_path / "out"),
                         factory=MisTarget, workers=2)
    assert len(finished) == 1 and [r.name for r in again if r.resumed] == finished and len(again) == 4


def test_ops_judges_each_layer_signature_once(corpus, local):
    root, _ = corpus
    records = run_campaign([str(root / "gen")], _settings(ops=True), store=Store(":memory:"),
                           out=str(root / "ops-out"), factory=MisTarget, workers=2)
    ops = [r for r in records if r.kind == "op"]
    by_op: dict[str, list[CaseRecord]] = {}
    for r in ops:
        by_op.setdefault(r.ops[0], []).append(r)
    # 14 models, 9 signatures: Add and Relu of [2, 8] (7 models each), Convolution and its Relu
    # (2), Softmax (2), MatMul, Multiply, and Tanh of [2, 8] and of [2, 4] (1 each)
    assert {op: len(rs) for op, rs in by_op.items()} == {
        "Add-1": 1, "Relu-1": 2, "Convolution-1": 1, "Softmax-8": 1, "MatMul-1": 1, "Multiply-1": 1, "Tanh-1": 2}
    adds = ["gen/add_relu", "gen/add_relu_expected", "gen/add_relu_random", "gen/add_relu_wrong", "gen/crash",
            "gen/hang", "gen/oom"]
    assert by_op["Add-1"][0].holders == adds and by_op["Convolution-1"][0].holders == ["gen/conv_a", "gen/conv_b"]
    assert {r.ops[0] for r in ops if not r.passed} == {"Tanh-1"}
    assert sorted(h for r in by_op["Tanh-1"] for h in r.holders) == ["gen/matmul_tanh", "gen/tanh_mul"]
    assert all((Path(r.reproducer) / "inputs.npz").is_file() for r in by_op["Tanh-1"])
    assert [(r.name, r.status) for r in records if r.kind == "model"] == [("gen/invalid", "invalid")]


def _record(name: str, status: str, layer: str | None = None) -> CaseRecord:
    return CaseRecord("model", name, f"/corpus/{name}", name * 2, "openvino:CPU", "{}", "0.1", status, layer=layer)


def test_diff_of_two_campaigns(tmp_path):
    before, after = Store(tmp_path / "a.db"), Store(tmp_path / "b.db")
    for name, old, new in [("same", "passed", "passed"), ("broke", "passed", "diverged"), ("fixed", "hung", "passed"),
                           ("changed", "crashed", "diverged"), ("gone", "passed", None), ("new", None, "failed")]:
        if old:
            before.put(_record(name, old))
        if new:
            after.put(_record(name, new, "Divide_12 (Divide-1)" if new == "diverged" else None))
    before.close()
    after.close()
    changes = report.diff(read_records(tmp_path / "a.db"), read_records(tmp_path / "b.db"))
    assert {c.case: c.change for c in changes} == {"same": "same", "broke": "broke", "fixed": "fixed",
                                                   "changed": "changed", "gone": "gone", "new": "new"}
    text = report.diff_table(changes, ["a.db", "b.db"]).splitlines()
    assert text[1].split()[:4] == ["broke", "broke", "passed", "diverged"] and "Divide_12" in text[1]
    assert text[-1] == "1 broke, 1 fixed, 1 changed status, 1 new, 1 gone, 1 unchanged"


def test_the_html_report(corpus, local):
    root, _ = corpus
    page = report.write_html(list(local.values()), root / "report.html", command="irscatter campaign <gen>",
                             title_line="a <title>").read_text()
    for heading in ("Pass rate by op type", "Pass rate by model", "Worst divergences", "Command"):
        assert f"<h2>{heading}" in page
    assert "a &lt;title&gt;" in page and "irscatter campaign &lt;gen&gt;" in page
    assert 'href="out/reproducers/gen_tanh_mul-' in page
    tanh = page.split("<td>Tanh-1</td>")[1].split("</tr>")[0]
    assert "<td>2</td><td>0</td><td>0%</td><td>2</td>" in tanh  # held by 2, passed 0, first diverging in 2


@pytest.mark.skipif(importlib.util.find_spec("openvino") is None, reason="openvino is not installed")
def test_the_command_on_openvino(tmp_path, corpus, local, capsys):
    """The real target finds the planted wrong expected.npz; --json, --report, --db, then diff."""
    make_corpus(tmp_path, names=["add_relu", "add_relu_wrong", "softmax"])
    root, _ = corpus
    db, page = tmp_path / "ov.db", tmp_path / "campaign.html"
    code = cli.main(["campaign", str(tmp_path / "gen"), "--workers", "1", "--db", str(db), "--json",
                     "--report", str(page), "-o", str(tmp_path / "out"), "--quiet"])
    out, err = capsys.readouterr()
    records = {r["name"]: r for r in map(json.loads, out.splitlines())}
    assert code == 1 and {n: r["status"] for n, r in records.items()} == {
        "gen/add_relu": "passed", "gen/add_relu_wrong": "expected differs", "gen/softmax": "passed"}
    assert records["gen/softmax"]["target_detail"].startswith("OpenVINO ") and "3 cases against OpenVINO" in err
    assert "expected.npz differs" in page.read_text()
    assert cli.main(["campaign", "diff", str(root / "local.db"), str(db)]) == 0  # nothing broke
    table = capsys.readouterr().out.splitlines()
    names = {r.name for r in read_records(root / "local.db")}
    assert table[-1] == f"0 broke, 0 fixed, 0 changed status, 0 new, {len(names) - 3} gone, 3 unchanged"
    assert cli.main(["campaign", "diff", str(db), str(root / "local.db"), "--json"]) == 0
    assert len(json.loads(capsys.readouterr().out)["changes"]) == len(names) - 3
    for argv in (["campaign", "diff", str(db)], ["campaign", "diff", str(db), str(tmp_path / "none.db")],
                 ["campaign", str(tmp_path / "none")], ["campaign", str(tmp_path), "--target", "tflite"]):
        assert cli.main(argv) == 2, argv


def test_isolation_limits():
    assert isolated(lambda _: np.ones(1 << 34, np.uint8).sum(), None, seconds=10, memory_mb=200).status == \
        "out of memory"
    crashed = isolated(lambda _: os.kill(os.getpid(), signal.SIGSEGV), None, seconds=10, memory_mb=None)
    assert (crashed.status, crashed.message) == ("crashed", "killed by SIGSEGV")
    assert isolated(lambda _: 2 + 2, None, seconds=10, memory_mb=None).value == 4


def test_the_same_corpus_gives_the_same_results_on_ray(ray_run, local):
    if ray_run is None:
        pytest.skip("ray is not installed (pip install irscatter[ray])")
    proc, errors = ray_run
    out, _ = proc.communicate(timeout=300)
    errors.seek(0)
    assert proc.returncode == 0, errors.read().decode(errors="replace")[-3000:]
    on_ray = {r["name"]: (r["status"], r["layer"]) for r in map(json.loads, out.splitlines())}
    assert on_ray == {n: (r.status, r.layer) for n, r in local.items() if n.startswith("gen/")}
