"""Hostile input, round three: models that ran to a silent wrong answer or passed `validate`
with nothing to say (a variable of two types, duplicate port ids, an element given twice or out
of place), and the holes around running checks (reduce's time limit and the processes its check
leaves behind, hooks that could write into the caller's arrays)."""

from __future__ import annotations

import shlex
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from helpers import cli, layer, net, param, port, result, write

import irscatter
from irscatter.debug import reduce
from irscatter.debug.extract import Written
from irscatter.errors import IRError
from irscatter.ir import events
from irscatter.ir.building import ReadContext

MODELS = Path(__file__).resolve().parent.parent / "models"


# --- a variable has one type and one shape --------------------------------------------------------


def _read_value(lid, name, etype, precision, shape="2", dims=(2,)):
    return layer(lid, name, "ReadValue", "opset6",
                 data={"variable_id": "v", "variable_type": etype, "variable_shape": shape},
                 inputs=[port(0, precision, dims)], outputs=[port(1, precision, dims)])


def _assign(lid, name, precision="FP32", dims=(2,)):
    return layer(lid, name, "Assign", "opset6", data={"variable_id": "v"}, inputs=[port(0, precision, dims)])


def _two_reads(tmp_path, second_type="i32", second_precision="I32", second_dims=(2,)):
    """Variable "v" read as f32 [2] by one ReadValue (whose value the Assign writes back) and
    by another as `second_type`, which feeds a Multiply and the Result."""
    shape = ",".join(map(str, second_dims))
    layers = [param(0, "x", [2]), param(1, "y", list(second_dims), second_type, second_precision),
              _read_value(2, "read_f32", "f32", "FP32"),
              _read_value(3, "read_again", second_type, second_precision, shape, second_dims),
              layer(4, "times", "Multiply", data={"auto_broadcast": "numpy"},
                    inputs=[port(0, second_precision, second_dims), port(1, second_precision, second_dims)],
                    outputs=[port(2, second_precision, second_dims)]),
              _assign(5, "write_back"), result(6, "r", list(second_dims), second_precision)]
    edges = [(0, 0, 2, 0), (1, 0, 3, 0), (3, 1, 4, 0), (1, 0, 4, 1), (2, 1, 5, 0), (4, 2, 6, 0)]
    return write(tmp_path, net(layers, edges))


@pytest.mark.parametrize("second, label", [(("i32", "I32", (2,)), "variable-type"),
                                           (("f32", "FP32", (3,)), "variable-shape")])
def test_a_variable_read_as_two_types_or_shapes_is_refused(tmp_path, second, label):
    """Before, the second ReadValue's i32 Multiply gave float32 from the second step on, and
    `validate` only warned."""
    xml = _two_reads(tmp_path, *second)
    findings = irscatter.validate(xml).findings
    assert [(f.severity, f.code, f.layer.name) for f in findings] == [("error", label, "read_again")], findings
    with pytest.raises(IRError) as caught:
        irscatter.compile_model(xml)
    assert caught.value.label == label and '"read_again"' in str(caught.value)


def test_two_reads_of_one_variable_that_agree_stay_a_warning(tmp_path):
    findings = irscatter.validate(_two_reads(tmp_path, "f32", "FP32")).findings
    assert [(f.severity, f.code) for f in findings] == [("warning", "variable-pair")]


def test_two_assigns_of_one_variable_are_an_error(tmp_path):
    """Which of the two values the variable kept depended on the order the layers ran in."""
    layers = [param(0, "x", [2]), _read_value(1, "read", "f32", "FP32"),
              layer(2, "double", "Add", data={"auto_broadcast": "numpy"},
                    inputs=[port(0, "FP32", [2]), port(1, "FP32", [2])], outputs=[port(2, "FP32", [2])]),
              _assign(3, "write_one"), _assign(4, "write_two"), result(5, "r", [2])]
    edges = [(0, 0, 1, 0), (1, 1, 2, 0), (1, 1, 2, 1), (1, 1, 3, 0), (2, 2, 4, 0), (2, 2, 5, 0)]
    xml = write(tmp_path, net(layers, edges))
    findings = irscatter.validate(xml).findings
    assert [(f.severity, f.code, f.layer.name) for f in findings] == [("error", "variable-pair", "write_two")]
    with pytest.raises(IRError, match=r"assigned by more than one Assign \[variable-pair\]"):
        irscatter.compile_model(xml)


# --- reduce: the time limit of a check, and what a check leaves behind ------------------------------


@pytest.mark.parametrize("command, extra", [("reduce", ["--check", "true {model}"]), ("compare", [])])
@pytest.mark.parametrize("timeout", ["0", "-1"])
def test_a_time_limit_of_zero_or_less_is_a_usage_error(tmp_path, command, extra, timeout):
    """reduce wrote a reproducer ("did not end within 0 s") and exited 0."""
    out_dir = ["-o", str(tmp_path / "r")] if command == "reduce" else []
    out = cli(command, str(MODELS / "small_cnn" / "model.xml"), "--random", *out_dir, *extra, "--timeout", timeout)
    assert out.returncode == 2 and "--timeout" in out.stderr and "more than 0" in out.stderr, out.stderr
    assert not (tmp_path / "r").exists()


def _gone(pid: int) -> bool:
    """Whether process `pid` has ended (a zombie not yet reaped counts as ended)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads the process table in /proc")
def test_a_check_that_runs_out_of_time_takes_its_background_processes_with_it(tmp_path):
    """Before, only the shell was killed: a process it started in the background lived on."""
    pid_file = tmp_path / "pid"
    sleeper = f"{shlex.quote(sys.executable)} -c 'import time; time.sleep(60)'"
    check = reduce.CommandCheck(f": {{model}}; {sleeper} & echo $! > {pid_file}; wait", timeout=0.5)
    verdict = check(Written(tmp_path / "model.xml", {}, {}), {})
    assert verdict.fails and "did not end within 0.5 s" in verdict.detail
    pid = int(pid_file.read_text())
    deadline = time.monotonic() + 10  # the kill is sent at once; only its delivery is waited for
    while not _gone(pid) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert _gone(pid), f"the background process {pid} outlived its check"


# --- hooks look, they do not touch -------------------------------------------------------------------


def test_a_hook_gets_read_only_views_of_fed_and_computed_arrays(tmp_path):
    layers = [param(0, "x", [2]),
              layer(1, "double", "Add", data={"auto_broadcast": "numpy"},
                    inputs=[port(0, "FP32", [2]), port(1, "FP32", [2])], outputs=[port(2, "FP32", [2])]),
              layer(2, "negate", "Negative", inputs=[port(0, "FP32", [2])], outputs=[port(1, "FP32", [2])]),
              result(3, "r", [2])]
    xml = write(tmp_path, net(layers, [(0, 0, 1, 0), (0, 0, 1, 1), (1, 2, 2, 0), (2, 1, 3, 0)]))
    x = np.array([1, 2], np.float32)
    refused = []

    def vandal(layer, inputs, outputs):
        for array in (*inputs, *outputs):
            try:
                array[...] = 100
            except ValueError:
                refused.append(layer.name)

    out = irscatter.read_model(xml).run({"x": x}, hook=vandal)
    assert x.tolist() == [1, 2] and out["r"].tolist() == [-2, -4]
    assert refused == ["double"] * 3 + ["negate"] * 2
    assert out["r"].flags.writeable  # the caller's outputs stay the caller's to write


# --- one port per id, one element per place ------------------------------------------------------


def _split(tmp_path, output_ids):
    """x [4] split in two halves along axis 0, each half to a Result."""
    axis = np.zeros((), np.int64)
    layers = [param(0, "x", [4]),
              layer(1, "axis", "Const", data={"element_type": "i64", "shape": "", "offset": 0, "size": 8},
                    outputs=[port(0, "I64", [])]),
              layer(2, "halves", "Split", data={"num_splits": 2}, inputs=[port(0, "FP32", [4]), port(1, "I64", [])],
                    outputs=[port(output_ids[0], "FP32", [2]), port(output_ids[1], "FP32", [2])]),
              result(3, "first", [2]), result(4, "second", [2])]
    edges = [(0, 0, 2, 0), (1, 0, 2, 1), (2, output_ids[0], 3, 0), (2, output_ids[1], 4, 0)]
    return write(tmp_path, net(layers, edges), axis.tobytes())


def _refused_by_both_readers(xml: Path, label: str, *words: str) -> None:
    """The event reader leaves the document to the tree reader, which refuses it with `label`;
    `validate` reports it as an error."""
    with pytest.raises(events.Unread):
        events.read_net(xml.read_bytes(), ReadContext(str(xml)))
    with pytest.raises(IRError) as caught:
        irscatter.read_model(xml)
    message = str(caught.value)
    assert caught.value.label == label and message.count("\n") == 0, message
    assert all(word in message for word in words), message
    findings = irscatter.validate(xml).findings
    assert ("error", label) in [(f.severity, f.code) for f in findings], findings


def test_a_split_with_distinct_output_ids_runs(tmp_path):
    out = irscatter.read_model(_split(tmp_path, (2, 3))).run({"x": np.arange(4, dtype=np.float32)})
    assert out["first"].tolist() == [0, 1] and out["second"].tolist() == [2, 3]


@pytest.mark.parametrize("output_ids, words", [
    ((2, 2), ["output port 2 has the id of an earlier output port", '"halves"']),
    ((1, 3), ["output port 1 has the id of an earlier input port", '"halves"']),
])
def test_two_ports_of_one_layer_with_one_id_are_refused(tmp_path, output_ids, words):
    """Before, both Results got the first half, and validate said nothing."""
    _refused_by_both_readers(_split(tmp_path, output_ids), "duplicate-port", *words)


def _doubled(tmp_path, old: str, new: str) -> Path:
    """x -> Add(x, x) -> Result, with `old` in its text replaced by `new` (once)."""
    layers = [param(0, "x", [2]),
              layer(1, "double", "Add", data={"auto_broadcast": "numpy"},
                    inputs=[port(0, "FP32", [2]), port(1, "FP32", [2])], outputs=[port(2, "FP32", [2])]),
              result(2, "r", [2])]
    text = net(layers, [(0, 0, 1, 0), (0, 0, 1, 1), (1, 2, 2, 0)])
    assert old in text
    return write(tmp_path, text.replace(old, new, 1))


EDGE = '<edge from-layer="1" from-port="2" to-layer="2" to-port="0"/>'
STRAY = '<layer id="9" name="stray" type="Relu" version="opset1"/>'


@pytest.mark.parametrize("old, new, label, words", [
    ('<data auto_broadcast="numpy"/>', '<data auto_broadcast="numpy"/><data auto_broadcast="none"/>',
     "duplicate-element", ["<layer> has a second <data>", '"double"']),
    ("</input>", "</input><input/>", "duplicate-element", ["<layer> has a second <input>"]),
    ("</output></layer>", '</output><output><port id="3" precision="FP32"><dim>2</dim></port></output></layer>',
     "duplicate-element", ["<layer> has a second <output>"]),
    ('<data auto_broadcast="numpy"/>', '<data auto_broadcast="numpy"/><body><layers/></body><body><layers/></body>',
     "duplicate-element", ["<layer> has a second <body>"]),
    ("<edges>", f"<edges>{EDGE}</edges><edges>", "duplicate-element", ["<net> has a second <edges>"]),
    ("</layers>", "</layers><layers/>", "duplicate-element", ["<net> has a second <layers>"]),
    ("</layers>", f"</layers>{STRAY}", "misplaced-element", ["<layer> inside <net>"]),
    ("<edges>", f"<edges>{STRAY}", "misplaced-element", ["<layer> inside <edges>"]),
    ("</output></layer>", f"</output><layers>{STRAY}</layers></layer>", "misplaced-element",
     ["<layer> inside <layers>"]),
])
def test_an_element_given_twice_or_out_of_place_is_refused(tmp_path, old, new, label, words):
    """Before, the tree reader read the first and left the rest unread (a second <edges>' edges
    dropped), and nothing said so."""
    _refused_by_both_readers(_doubled(tmp_path, old, new), label, *words)


def test_a_layer_in_a_port_map_is_refused_and_one_in_rt_info_is_not(tmp_path):
    """The event reader keeps a port map and rt_info whole: it hands a <layer> in either to the
    tree reader, which refuses the one in the port map and reads rt_info as free-form."""
    xml = Path(__file__).resolve().parent / "data" / "control" / "loop_fails_at_3.xml"
    text = xml.read_text()
    assert "<port_map>" in text
    copy = tmp_path / "model.xml"
    copy.with_suffix(".bin").write_bytes(xml.with_suffix(".bin").read_bytes())
    copy.write_text(text.replace("<port_map>", f"<port_map>{STRAY}", 1))
    _refused_by_both_readers(copy, "misplaced-element", "<layer> inside <port_map>")
    head, tail = text.rsplit("<rt_info>", 1)  # the net's own
    copy.write_text(f"{head}<rt_info><info>{STRAY}</info>{tail}")
    with pytest.raises(events.Unread):
        events.read_net(copy.read_bytes(), ReadContext(str(copy)))
    assert irscatter.validate(copy).findings == irscatter.validate(xml).findings
