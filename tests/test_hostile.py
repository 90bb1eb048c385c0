"""The corpus of broken and hostile files (tests/corpus/hostile, written by
tools/make_hostile_corpus.py): each ends in one clear error line naming the file and, where
the defect is in one, the layer, with the recorded exit code and error kind; never a
traceback, a hang or an internal error."""

import json
from pathlib import Path

import pytest
from helpers import cli as run_cli
from helpers import kernel_hidden

import irscatter
from irscatter import cli
from irscatter.runtime import inputs as model_inputs

CORPUS = Path(__file__).resolve().parent / "corpus" / "hostile"
CASES = json.loads((CORPUS / "cases.json").read_text())


def _args(case):
    return [a.format(dir=CORPUS) for a in case["args"]]


def test_the_corpus_has_at_least_sixty_cases():
    assert len(CASES) >= 60


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_cli_prints_one_error_line(name, capsys):
    case = CASES[name]
    with kernel_hidden("Subtract", 1):  # for no_kernel.xml: no other case uses Subtract
        code = cli.main(["run", str(CORPUS / f"{name}.xml"), *_args(case)])
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert code == case["exit"], captured.err
    assert len(lines) == 1 and lines[0].startswith("irscatter: error: "), captured.err
    line = lines[0]
    assert "Traceback" not in captured.err and "internal error" not in line
    assert ".xml" in line or ".npz" in line  # the file at fault is named
    assert len(line) < 1000, f"{len(line)} characters"  # a huge value is cut, not echoed
    if case["label"]:
        assert line.endswith(f"[{case['label']}]"), line
    if case["layer"] is not None:
        assert f": layer {case['layer']} " in line, line


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_library_raises_the_recorded_kind(name):
    case = CASES[name]
    with pytest.raises(irscatter.IRError) as err, kernel_hidden("Subtract", 1):
        model = irscatter.read_model(CORPUS / f"{name}.xml").compile()
        args = _args(case)
        if "--random" in args:
            feeds = model_inputs.random_inputs(model.inputs)
        else:
            feeds = model_inputs.load_npz(args[args.index("--inputs") + 1])
        model.run(feeds)
    assert type(err.value).__name__ == case["kind"]
    if case["layer"] is not None:
        assert err.value.layer is not None and err.value.layer.id == case["layer"]


@pytest.mark.parametrize("name", ["billion_laughs", "dim_below_minus_one", "feed_of_the_wrong_dtype",
                                  "model_file_missing"])
def test_the_installed_command_agrees(name):
    case = CASES[name]
    done = run_cli("run", str(CORPUS / f"{name}.xml"), *_args(case))
    assert done.returncode == case["exit"]
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("irscatter: error: ")
