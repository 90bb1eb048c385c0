"""Hostile input, round three: limits a file could walk past, usage and file errors that came
out as internal errors, and messages a file could stretch over lines or forge. Every error
the CLI prints is one line, of a bounded length, with no control character of the file's."""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import numpy as np
import pytest
from helpers import layer, net, param, port, result, write

import irscatter
from irscatter import cli, limits
from irscatter.cli import ops as cli_ops
from irscatter.errors import MESSAGE_LIMIT, elide

HOSTILE = Path(__file__).resolve().parent / "corpus" / "hostile"
BASE_MODEL = HOSTILE / "feed_for_no_input.xml"  # Add and ScatterUpdate over inputs x [2,3], upd [2,1]
BASE_FEEDS = {"x": np.zeros((2, 3), np.float32), "upd": np.zeros((2, 1), np.float32)}


def _one_error_line(capsys, code: int, expected_code: int) -> str:
    err = capsys.readouterr().err
    assert code == expected_code, err
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("irscatter: error: "), err
    assert not re.search("[\x00-\x1f\x7f-\x9f]", lines[0]), lines[0]
    assert len(lines[0]) <= MESSAGE_LIMIT + 100, len(lines[0])
    return lines[0]


# --- messages --------------------------------------------------------------------------------------


def test_a_feed_name_cannot_forge_a_second_error_line_or_drive_the_terminal(tmp_path, capsys):
    key = "bad\n\x1b[31mirscatter: error: forged\r\u202e"
    np.savez(tmp_path / "in.npz", **BASE_FEEDS, **{key: BASE_FEEDS["x"]})
    line = _one_error_line(capsys, cli.main(["run", str(BASE_MODEL), "--inputs", str(tmp_path / "in.npz")]), 1)
    assert "bad\\n\\x1b[31mirscatter: error: forged\\r\\u202e" in line
    assert line.endswith("[unknown-input]")


def test_a_huge_feed_name_is_elided_in_the_middle(tmp_path, capsys):
    np.savez(tmp_path / "in.npz", **BASE_FEEDS, **{"k" * 60_000: BASE_FEEDS["x"]})
    line = _one_error_line(capsys, cli.main(["run", str(BASE_MODEL), "--inputs", str(tmp_path / "in.npz")]), 1)
    assert "characters)" in line and line.endswith("[unknown-input]")  # the start and the end are kept


def test_libxml2s_two_line_message_is_one_line():
    with pytest.raises(irscatter.LoadError) as err:
        irscatter.parse_model("<net><![CDATA[ </net>")
    text = str(err.value)
    assert "\n" not in text and "CData section not finished" in text


def test_a_cycle_through_thousands_of_layers_is_cut(tmp_path, capsys):
    n = 3_000  # a message of some 20 000 characters, if it were echoed whole
    dims = [2]
    layers = [param(0, "x", dims)]
    edges = []
    for i in range(1, n + 1):
        layers.append(layer(i, f"a{i}", "Add", data={"auto_broadcast": "numpy"},
                            inputs=[port(0, "FP32", dims), port(1, "FP32", dims)], outputs=[port(2, "FP32", dims)]))
        edges.append((0, 0, i, 0))
        edges.append((i, 2, i % n + 1, 1))  # each feeds the next, the last the first: one long cycle
    layers.append(result(n + 1, "y", dims))
    edges.append((n, 2, n + 1, 0))
    path = write(tmp_path, net(layers, edges))
    code = cli.main(["run", str(path), "--random"])
    line = _one_error_line(capsys, code, 1)
    assert line.endswith("[cycle]") and "characters)" in line  # elided in the middle, not echoed whole


def test_elide_escapes_and_keeps_both_ends():
    assert elide("a\nb\x1b") == "a\\nb\\x1b"
    cut = elide("x" * 50 + "MIDDLE" + "y" * 50, 30)
    assert cut.startswith("x" * 20) and cut.endswith("y" * 10) and "MIDDLE" not in cut and "(106 characters)" in cut


def test_the_internal_error_line_is_one_line_too(monkeypatch, capsys):
    def broken(args):
        raise RuntimeError("first\nirscatter: error: second" + "z" * 10_000)
    monkeypatch.setattr(cli_ops, "cmd_ops", broken)
    assert cli.main(["ops"]) == 3
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("irscatter: internal error: ") and len(lines[0]) < 1000


# --- internal errors that are usage or file errors -----------------------------------------------


@pytest.mark.parametrize("flag, target", [("--output", "/proc/irscatter-out.npz"), ("--output", "/sys/out.npz"),
                                          ("--dump", "/proc/irscatter-dump.npz")])
def test_an_output_path_the_system_refuses_is_a_usage_error(tmp_path, capsys, flag, target):
    np.savez(tmp_path / "in.npz", **BASE_FEEDS)
    code = cli.main(["run", str(BASE_MODEL), "--inputs", str(tmp_path / "in.npz"), flag, target])
    line = _one_error_line(capsys, code, 2)
    assert f"{flag} {target}" in line and ("denied" in line or "No such file" in line)


def test_a_full_device_is_a_usage_error(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    np.savez(tmp_path / "a.npz", **BASE_FEEDS)
    code = cli.main(["compare", str(tmp_path / "a.npz"), str(tmp_path / "a.npz"), "--report", "/dev/full"])
    line = _one_error_line(capsys, code, 2)
    assert "--report /dev/full" in line and "No space left on device" in line


@pytest.mark.parametrize("command", [["extract", str(BASE_MODEL), "--outputs", "y", "-o", "/proc/none/sub.xml"],
                                     ["reduce", str(BASE_MODEL), "--random", "--check", "true {model}", "-o",
                                      "/sys/repro"]])
def test_extract_and_reduce_folders_the_system_refuses(capsys, command):
    line = _one_error_line(capsys, cli.main(command), 2)
    assert f"-o {command[-1]}: cannot write there: " in line


@pytest.mark.parametrize("item", ["xml_depth=5000", "xml_depth=1e9", "pipe_wait_seconds=1e20", "tensor_bytes=1e30",
                                  "loop_iterations=0", "body_depth=100"])
def test_a_limit_out_of_its_range_is_refused(capsys, item):
    before = limits.current()
    with limits.using():
        code = cli.main(["--limit", item, "info", str(BASE_MODEL)])
    line = _one_error_line(capsys, code, 2)
    assert item.partition("=")[0] in line
    assert limits.current() == before


def test_the_library_refuses_a_limit_out_of_its_range():
    with pytest.raises(irscatter.UsageError, match="xml_depth"):
        limits.configure(xml_depth=5000)
    with pytest.raises(irscatter.UsageError, match="no limit"):
        limits.configure(xml_width=5)


@pytest.mark.parametrize("command", ["compare", "reduce"])
def test_a_timeout_past_a_week_is_refused(capsys, command):
    args = [command, str(BASE_MODEL), "--timeout", "1e308"] + (["-o", "unused", "--check", "true"]
                                                               if command == "reduce" else [])
    with pytest.raises(SystemExit) as exit_:
        cli.main(args)
    assert exit_.value.code == 2 and "--timeout" in capsys.readouterr().err


# --- .npz files ------------------------------------------------------------------------------------


def _npy_bytes(array: np.ndarray, version=(1, 0), shape=None) -> bytes:
    """An .npy file of `array`, its header claiming `shape` when given (the data stays small)."""
    import io

    buffer = io.BytesIO()
    header = {"descr": np.lib.format.dtype_to_descr(array.dtype), "fortran_order": False,
              "shape": tuple(shape) if shape is not None else array.shape}
    np.lib.format.write_array_header_2_0(buffer, header) if version != (1, 0) else \
        np.lib.format.write_array_header_1_0(buffer, header)
    data = buffer.getvalue()
    if version == (3, 0):  # the same header under the version-3 magic
        data = np.lib.format.magic(3, 0) + data[len(np.lib.format.magic(2, 0)):]
    return data + array.tobytes()


def _zip(path: Path, members: dict[str, bytes]) -> Path:
    import zipfile

    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return path


@pytest.mark.parametrize("name, version", [("x", (1, 0)), ("x.npy", (3, 0)), ("x", (3, 0))])
def test_every_member_header_is_checked(tmp_path, name, version):
    # the header claims 2^20 x 2^10 floats (4 GiB), over a tensor_bytes limit of 1 MiB
    data = _npy_bytes(np.zeros(4, np.float32), version, shape=(2**20, 2**10))
    path = _zip(tmp_path / "in.npz", {name: data})
    with limits.using(tensor_bytes=2**20), pytest.raises(irscatter.LoadError, match="tensor_bytes"):
        irscatter.runtime.inputs.load_npz(path)


def test_a_version_three_member_still_loads(tmp_path):
    path = _zip(tmp_path / "in.npz", {"x.npy": _npy_bytes(np.arange(3, dtype=np.int32), (3, 0))})
    assert irscatter.runtime.inputs.load_npz(path)["x"].tolist() == [0, 1, 2]


def test_a_member_that_is_no_array_is_refused(tmp_path):
    path = _zip(tmp_path / "in.npz", {"x.npy": _npy_bytes(np.zeros(2, np.float32)), "README": b"hello" * 1000})
    with pytest.raises(irscatter.LoadError, match="README is not an .npy array"):
        irscatter.runtime.inputs.load_npz(path)


def test_the_members_of_one_npz_are_limited_together(tmp_path):
    members = {f"m{i}.npy": _npy_bytes(np.zeros(256, np.float32)) for i in range(8)}  # 8 KiB of arrays
    path = _zip(tmp_path / "in.npz", members)
    assert len(irscatter.runtime.inputs.load_npz(path)) == 8
    with limits.using(npz_bytes=5000), pytest.raises(irscatter.LoadError, match="npz_bytes"):
        irscatter.runtime.inputs.load_npz(path)


@pytest.mark.parametrize("array", [np.zeros(2, dtype=[("a", "<f4"), ("b", "<i4")]),
                                   np.array(["2020-01-01"], dtype="datetime64[D]"),
                                   np.array([5], dtype="timedelta64[s]"), np.zeros(2, dtype="V4")],
                         ids=["structured", "datetime64", "timedelta64", "void"])
def test_compare_refuses_arrays_no_tensor_has(tmp_path, capsys, array):
    np.savez(tmp_path / "a.npz", t=array)
    code = cli.main(["compare", str(tmp_path / "a.npz"), str(tmp_path / "a.npz"), "--json"])
    line = _one_error_line(capsys, code, 1)
    assert "a.npz" in line and "which no tensor of a model has" in line


# --- the library's entry points ----------------------------------------------------------------------

ABS = '<layer id="1" type="Abs" version="opset1"><input><port id="0"/></input><output><port id="1"/></output></layer>'


@pytest.mark.parametrize("call", [lambda: irscatter.parse_layer(5), lambda: irscatter.parse_layer(None),
                                  lambda: irscatter.parse_model(None), lambda: irscatter.parse_model(5),
                                  lambda: irscatter.run_layer(None, []), lambda: irscatter.run_layer(ABS, None),
                                  lambda: irscatter.run_layer(ABS, 5),
                                  lambda: irscatter.parse_model("<net/>", weights=5)],
                         ids=["layer-int", "layer-none", "model-none", "model-int", "run-none", "inputs-none",
                              "inputs-int", "weights-int"])
def test_an_argument_of_the_wrong_type_is_a_usage_error(call):
    with pytest.raises(irscatter.UsageError):
        call()


@pytest.mark.parametrize("text", ["", "   ", b"", "no tag here"])
def test_a_layer_text_without_a_tag_is_a_load_error(text):
    with pytest.raises(irscatter.LoadError, match="malformed XML"):
        irscatter.parse_layer(text)


@pytest.mark.parametrize("array", [np.zeros(2, np.complex64), np.zeros(2, np.longdouble),
                                   np.zeros(2, "datetime64[s]"), np.zeros(2, [("a", "<f4")]), np.zeros(2, ">f4")],
                         ids=["complex", "longdouble", "datetime", "structured", "big-endian"])
def test_run_layer_refuses_arrays_of_no_element_type_as_a_model_does(array):
    with pytest.raises(irscatter.ExecutionError) as err:
        irscatter.run_layer(ABS, [array])
    assert err.value.label == "feed-dtype" and err.value.port == "input 0"
    assert irscatter.run_layer(ABS, [np.array([-1.5], np.float32)])[0].tolist() == [1.5]


# --- messages of ops and of compare -----------------------------------------------------------------

RESHAPE = ('<layer id="1" type="Reshape" version="opset1"><data special_zero="false"/><input><port id="0"/>'
           '<port id="1"/></input><output><port id="2"/></output></layer>')


def test_reshape_of_an_empty_tensor_past_what_numpy_describes_is_refused_in_its_own_words():
    with pytest.raises(irscatter.ExecutionError) as err:
        irscatter.run_layer(RESHAPE, [np.zeros(0, np.float32), np.array([0, 2**62, 4], np.int64)])
    assert err.value.label == "reshape-pattern" and "array is too big" not in str(err.value)
    assert "more than numpy can describe" in str(err.value)


def _string_const_model(weights: bytes) -> str:
    const = layer(0, "words", "Const", data={"element_type": "string", "shape": "2", "offset": "0",
                                             "size": str(len(weights))}, outputs=[port(0, "STRING", [2])])
    return net([const, result(1, "y", [2], "STRING")], [(0, 0, 1, 0)])


@pytest.mark.parametrize("weights, label", [(b"\x01\x00", "const-strings"),
                                            (np.array([3, 0], "<i4").tobytes(), "const-strings"),
                                            (np.array([2, 0, 1, 2], "<i4").tobytes() + b"a\xff", "string-utf8")])
def test_a_broken_string_const_carries_a_label(weights, label):
    with pytest.raises(irscatter.LoadError) as err:
        irscatter.parse_model(_string_const_model(weights), weights).compile().run({})
    assert err.value.label == label and str(err.value).endswith(f"[{label}]")
    assert err.value.layer is not None and err.value.layer.name == "words"


def test_compare_near_the_float_limits_prints_no_numpy_warning(tmp_path, capsys):
    np.savez(tmp_path / "a.npz", t=np.array([1e308, -1e308, 1e308, 5.0]))
    np.savez(tmp_path / "b.npz", t=np.array([-1e308, 1e308, 1e308, 5.0]))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a RuntimeWarning becomes an internal error (exit 3)
        code = cli.main(["compare", str(tmp_path / "a.npz"), str(tmp_path / "b.npz"), "--json"])
    assert code == 1 and "Warning" not in capsys.readouterr().err


# --- limits that were walked past ------------------------------------------------------------------

CONTROL = Path(__file__).resolve().parent / "data" / "control"


def test_a_loops_concatenated_output_is_held_to_the_tensor_limit_as_it_grows():
    model = irscatter.read_model(CONTROL / "loop_while.xml")  # v doubles until it reaches limit; sums joined
    feeds = {**dict(np.load(CONTROL / "loop_while.npz")), "trip": np.int64(-1), "cond": np.array(True),
             "v0": np.ones(3, np.float32), "limit": np.float32(100)}
    assert len(model.run(feeds)["Result_55"]) == 7  # within the default limits
    with limits.using(tensor_bytes=20), pytest.raises(irscatter.ExecutionError) as err:
        model.run(feeds)  # 7 f32 values joined: 28 bytes
    assert err.value.label == "tensor-limit" and err.value.port == "output 1" and "tensor_bytes" in str(err.value)


def test_a_tensor_iterator_checks_its_iteration_count_before_it_starts():
    model = irscatter.read_model(CONTROL / "ti_forward.xml")  # x [2, 5, 3] sliced along axis 1: 5 iterations
    seen = []
    with limits.using(loop_iterations=3), pytest.raises(irscatter.ExecutionError) as err:
        model.run(dict(np.load(CONTROL / "ti_forward.npz")), hook=lambda layer, *_: seen.append(layer.name))
    assert err.value.label == "iteration-limit" and "5 iterations" in str(err.value)
    assert not [name for name in seen if "/body[" in name]  # no iteration ran


@pytest.mark.parametrize("name", ["ti_forward", "loop_scan"])
def test_a_port_map_slicing_from_minus_to_plus_1e18_is_refused_in_constant_memory(name):
    text = (CONTROL / f"{name}.xml").read_text()
    sliced = re.search(r'start="0" end="-1" stride="1" part_size="1"', text)
    assert sliced is not None
    text = text.replace(sliced.group(), 'start="-1000000000000000000" end="1000000000000000000" stride="1" '
                                        'part_size="1"', 1)
    feeds = dict(np.load(CONTROL / f"{name}.npz"))
    with pytest.raises(irscatter.IRError) as err:
        irscatter.parse_model(text, (CONTROL / f"{name}.bin").read_bytes()).run(feeds)
    assert err.value.label == "slice-parts" and "reach outside the axis" in str(err.value)


def test_the_slices_of_a_tensor_iterator_are_the_same_as_before():
    model = irscatter.read_model(CONTROL / "ti_reverse.xml")
    feeds = dict(np.load(CONTROL / "ti_reverse.npz"))
    values = model.run(feeds)
    assert all(np.isfinite(v).all() for v in values.values()) and len(values) == 2


SDPA = ('<layer id="1" type="ScaledDotProductAttention" version="opset13"><data causal="false"/><input>'
        '<port id="0"/><port id="1"/><port id="2"/></input><output><port id="3"/></output></layer>')


def test_attention_checks_its_logits_before_it_makes_them():
    q = k = v = np.zeros((1, 3000, 2), np.float32)  # an output of 24 KB, logits of 36 MB
    with limits.using(tensor_bytes=2**20), pytest.raises(irscatter.ExecutionError) as err:
        irscatter.run_layer(SDPA, [q, k, v])
    assert err.value.label == "tensor-limit" and "logits" in str(err.value)
    assert irscatter.run_layer(SDPA, [q[:, :10], k[:, :10], v[:, :10]])[0].shape == (1, 10, 2)


def test_interpolate_checks_its_padding_before_it_pads():
    interpolate = ('<layer id="1" type="Interpolate" version="opset11"><data mode="nearest" '
                   'shape_calculation_mode="sizes" pads_begin="0,0,100000,100000" pads_end="0"/><input><port id="0"/>'
                   '<port id="1"/></input><output><port id="2"/></output></layer>')
    with pytest.raises(irscatter.ExecutionError) as err:
        irscatter.run_layer(interpolate, [np.zeros((1, 1, 2, 2), np.float32), np.array([1, 1, 2, 2], np.int64)])
    assert err.value.label == "tensor-limit" and "padded" in str(err.value)


# --- what is kept of long outputs, and what a document may be -----------------------------------------


def test_reduce_keeps_only_the_tail_of_a_check_commands_output(tmp_path):
    import shlex
    import sys

    from irscatter.debug import extract, reduce

    # 3 MiB of output: a marker at its start, then a last line that says why the check failed
    script = "import sys; sys.stdout.write('EARLY\\n' + 'x' * (3 << 20) + '\\nlast words\\n'); sys.exit(4)"
    command = f"{shlex.quote(sys.executable)} -c {shlex.quote(script)} {{model}}"
    written = extract.Written(tmp_path / "model.xml", {}, {})
    verdict = reduce.CommandCheck(command)(written, {})
    assert verdict.fails and verdict.detail.endswith("last words") and len(verdict.detail) < 1000
    assert not reduce.CommandCheck(command, "EARLY")(written, {}).fails  # past the tail that is kept
    assert reduce.CommandCheck(command, "last w")(written, {}).fails


@pytest.mark.parametrize("path", ["/dev/zero", "/proc"])
def test_examples_refuses_what_is_not_a_regular_file(capsys, path):
    line = _one_error_line(capsys, cli.main(["examples", path]), 2)
    assert path in line


def test_examples_holds_a_document_to_the_size_limit(tmp_path, capsys):
    page = tmp_path / "page.md"
    page.write_text("text\n" * 100)
    with limits.using():  # (--limit changes the process's limits: restored after)
        code = cli.main(["--limit", "xml_bytes=100", "examples", str(page)])
    line = _one_error_line(capsys, code, 1)
    assert line.endswith("[xml-size]")


def test_a_stepped_run_keeps_no_more_outputs_than_one_npz_may_hold(capsys):
    model = str(CONTROL / "state_counter.xml")  # x [2] f32: each step's outputs take a few bytes
    assert cli.main(["run", model, "--random", "--steps", "3"]) == 0
    assert "step2/" in capsys.readouterr().out
    with limits.using():  # (--limit changes the process's limits: restored after)
        code = cli.main(["--limit", "npz_bytes=20", "run", model, "--random", "--steps", "100"])
    line = _one_error_line(capsys, code, 2)
    assert "npz_bytes" in line and "steps 0 to " in line


def test_the_limits_are_the_defaults_after_this_file():
    assert limits.current() == limits.Limits()


def test_a_note_quoting_an_input_name_is_one_line_too(tmp_path, capsys):
    name = "in&#10;irscatter: error: forged"  # (a character reference: a raw newline reads as a space)
    path = write(tmp_path, net([param(0, name, [-1]), result(1, "y", [-1])], [(0, 0, 1, 0)]))
    assert cli.main(["run", str(path), "--random"]) == 0
    notes = capsys.readouterr().err.splitlines()
    assert len(notes) == 1 and notes[0].startswith("irscatter: note: ") and "in\\nirscatter" in notes[0]
