"""`compare A.npz B.npz --map FILE`: another runtime's dump, named its own way and saved in f16 or
bf16, judged against irscatter's f32 dump through a map of names, in the reference's precision."""

from __future__ import annotations

import json

import ml_dtypes
import numpy as np
import pytest

from irscatter import cli as irscatter_cli
from irscatter.debug.dump_compare import compare_dumps, read_map
from irscatter.debug.tolerances import Tolerances
from irscatter.debug.verdicts import table
from irscatter.errors import UsageError

REFERENCE = {"conv:2": np.linspace(-1, 1, 64, dtype=np.float32),
             "relu:1": np.maximum(np.linspace(-1, 1, 64, dtype=np.float32), 0),
             "probs": np.full(4, 0.25, np.float32)}  # an output, under its tensor name
MAP = {"node_7/out0": "conv:2", "node_8/out0": "relu:1", "output_0": "probs"}


def _dump(dtype, fault: float = 0.0) -> dict[str, np.ndarray]:
    """The reference as another runtime saves it: its own names, in `dtype`, with `fault` added
    to one element of the convolution."""
    dump = {name: REFERENCE[key].astype(dtype) for name, key in MAP.items()}
    dump["node_7/out0"][9] += dtype(fault)
    return dump


def _cli(tmp_path, capsys, dump: dict[str, np.ndarray], mapping: str, *extra: str) -> tuple[int, str, str]:
    np.savez(tmp_path / "ov.npz", **dump)
    np.savez(tmp_path / "ir.npz", **REFERENCE)
    (tmp_path / "names.txt").write_text(mapping)
    status = irscatter_cli.main(["compare", str(tmp_path / "ov.npz"), str(tmp_path / "ir.npz"),
                                 "--map", str(tmp_path / "names.txt"), *extra])
    out = capsys.readouterr()
    return status, out.out, out.err


@pytest.mark.parametrize("dtype, precision", [(np.float16, "f16"), (ml_dtypes.bfloat16, "bf16")])
def test_a_clean_reduced_precision_dump_passes_in_the_references_precision(dtype, precision):
    report = compare_dumps(_dump(dtype), REFERENCE, Tolerances(), names=("ov.npz", "ir.npz"), renames=MAP)
    assert report.passed and report.counts() == {"passed": 3}
    widened = [n for n in report.notes if n.startswith("compared in")]
    assert widened == [f"compared in ir.npz's element type f32: 3 tensors {precision} in ov.npz, judged at the "
                       f"tolerance of {precision}, its ulps counted in {precision} (conv:2, relu:1, probs)"]
    assert max(t.diff.max_ulps for r in report.records for t in r.tensors) <= 1  # rounding to the dump's type


def test_a_planted_fault_in_a_mapped_f16_dump_is_found_with_both_sides_named(tmp_path, capsys):
    mapping = "# ov name   irscatter name\nnode_7/out0 conv:2\nnode_8/out0\trelu:1\noutput_0 probs\n"
    status, out, err = _cli(tmp_path, capsys, _dump(np.float16, fault=0.25), mapping)
    assert status == 1 and err == ""
    planted = np.float32(np.float16(REFERENCE["conv:2"][9]) + np.float16(0.25))  # the f16 value, widened exactly
    worst = f"worst at [9]: ir.npz {str(REFERENCE['conv:2'][9])}, ov.npz {str(planted)}"
    assert "conv:2: 1 of 64 outside rtol 0.01, atol 0.002" in out and worst in out, out
    assert out.splitlines()[-1].endswith('first divergence: "conv:2"')
    as_json = json.loads(_cli(tmp_path, capsys, _dump(np.float16, fault=0.25), mapping, "--json")[1])
    assert as_json["sides"] == {"reference": "ir.npz", "target": "ov.npz"}
    assert [r["reason"] for r in as_json["records"]][0] == '"node_7/out0" in ov.npz'


def test_unmatched_names_on_either_side_are_listed():
    dump = _dump(np.float16)
    dump["extra_node"] = np.zeros(2, np.float16)
    del dump["output_0"]
    renames = {**MAP, "ghost": "conv:2", "node_8/out0": "no_such:0"}
    report = compare_dumps(dump, REFERENCE, Tolerances(), names=("ov.npz", "ir.npz"), renames=renames)
    text = table(report)
    assert not report.passed and "no divergence, but 2 tensors of the reference are not in ov.npz" in text
    assert "missing from the dump judged: relu:1, probs" in text
    assert "only in ov.npz: node_8/out0, extra_node" in text  # under the dump's own names
    assert "the map names 2 tensors ov.npz does not hold: output_0, ghost" in text
    assert "the map gives 1 tensor a name ir.npz does not hold: node_8/out0 -> no_such:0" in text


@pytest.mark.parametrize("mapping, message", [
    ("node_7/out0 conv:2 extra\n", "names.txt: line 1: expected two names, the dump's and the reference's, got 3"),
    ('{"node_7/out0": 7}', 'names.txt: expected a JSON object of names, {"name in the dump": "reference name"}'),
    ('{"node_7/out0": "conv:2",', "names.txt: line 1: not JSON"),
    ("a conv:2\na relu:1\n", 'names.txt: line 2: "a" is mapped twice, to "conv:2" and to "relu:1"'),
    ("# nothing\n", "names.txt: the map is empty"),
])
def test_a_bad_map_file_is_one_clear_usage_error(tmp_path, capsys, mapping, message):
    status, out, err = _cli(tmp_path, capsys, _dump(np.float16), mapping)
    assert status == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert err.startswith("irscatter: error: --map ") and message in err, err


def test_a_map_that_makes_two_names_one_is_refused_and_a_map_needs_two_dumps(tmp_path, capsys):
    with pytest.raises(UsageError, match='"node_7/out0" and "node_8/out0" both stand for "conv:2"'):
        compare_dumps(_dump(np.float16), REFERENCE, Tolerances(), names=("ov.npz", "ir.npz"),
                      renames={"node_7/out0": "conv:2", "node_8/out0": "conv:2"})
    (tmp_path / "names.json").write_text(json.dumps(MAP))
    assert read_map(tmp_path / "names.json") == MAP
    status = irscatter_cli.main(["compare", "model.xml", "--map", str(tmp_path / "names.json")])
    assert status == 2 and "--map names the tensors of a dump" in capsys.readouterr().err
