"""The console script, run in a subprocess: outputs, exit codes and one-line errors (and, where a
refusal is set beside the library's own words for it, its `main` in process)."""

import json
import os
import re
from pathlib import Path

import numpy as np
import pytest
from helpers import add, cli, layer, net, param, port, result, write

import irscatter
from irscatter.cli import main
from irscatter.debug import compare
from irscatter.runtime import inputs as model_inputs

MODELS = Path(__file__).resolve().parent.parent / "models"


def _assert_one_line_error(proc, code):
    assert proc.returncode == code, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("irscatter: error: "), proc.stderr
    assert "Traceback" not in proc.stderr


def test_run_random_prints_outputs():
    proc = cli("run", str(MODELS / "affine_chain" / "model.xml"), "--random", "--seed", "3")
    assert proc.returncode == 0, proc.stderr
    assert "y: float32 [2, 4]" in proc.stdout and "y_f16: float16 [2, 4]" in proc.stdout


def test_run_with_inputs_and_expected(tmp_path):
    folder = MODELS / "affine_chain"
    out = tmp_path / "out.npz"
    proc = cli("run", str(folder / "model.xml"), "--inputs", str(folder / "inputs.npz"),
               "--expected", str(folder / "expected.npz"), "--output", str(out))
    assert proc.returncode == 0, proc.stderr
    assert "ok   y:" in proc.stdout and "ok   y_f16:" in proc.stdout
    with np.load(out) as saved, np.load(folder / "expected.npz") as want:
        np.testing.assert_allclose(saved["y"], want["y"], rtol=1e-6)


def test_run_with_npy_input_and_dynamic_shape(tmp_path):
    folder = MODELS / "dynamic_batch"
    x = tmp_path / "x.npy"
    np.save(x, np.ones((2, 3), np.float32))
    proc = cli("run", str(folder / "model.xml"), "-i", f"x={x}", "--random", "--shape", "bias=2,1")
    assert proc.returncode == 0, proc.stderr
    assert "y: float32 [2, 3]" in proc.stdout


def test_random_draws_dynamic_inputs_at_their_smallest_shape_with_one_note():
    proc = cli("run", str(MODELS / "dynamic_batch" / "model.xml"), "--random")
    assert proc.returncode == 0, proc.stderr
    assert "y: float32 [1, 3]" in proc.stdout
    notes = proc.stderr.strip().splitlines()
    assert len(notes) == 1 and "x as [1, 3], bias as [1, 1]" in notes[0], proc.stderr
    proc = cli("run", str(MODELS / "dynamic_batch" / "model.xml"), "--random", "--shape", "x=4,3")
    assert "y: float32 [4, 3]" in proc.stdout and "bias as [1, 1]" in proc.stderr and "x as" not in proc.stderr


def test_random_refuses_an_input_of_dynamic_rank_with_one_line(tmp_path):
    xml = net([layer(0, "x", "Parameter", data={"shape": "...", "element_type": "f32"}, outputs=[port(0, dims=())]),
               result(1, "y", ())], [(0, 0, 1, 0)])
    proc = cli("run", str(write(tmp_path, xml)), "--random")
    _assert_one_line_error(proc, 2)
    assert "dynamic" in proc.stderr and "--shape x=" in proc.stderr


def test_expected_mismatch_fails(tmp_path):
    folder = MODELS / "affine_chain"
    wrong = tmp_path / "wrong.npz"
    with np.load(folder / "expected.npz") as want:
        np.savez(wrong, y=want["y"] + 1, y_f16=want["y_f16"])
    proc = cli("run", str(folder / "model.xml"), "--inputs", str(folder / "inputs.npz"), "--expected", str(wrong))
    assert proc.returncode == 1 and "FAIL y:" in proc.stdout


def test_info_text_and_json():
    xml = str(MODELS / "mixed_types_v10" / "model.xml")
    proc = cli("info", xml)
    assert proc.returncode == 0 and "IR version: 10" in proc.stdout and "Add-1" in proc.stdout
    doc = json.loads(cli("info", xml, "--json").stdout)
    assert doc["ir_version"] == 10 and doc["ops"]["Multiply-1"] == 1
    assert [i["name"] for i in doc["inputs"]] == ["a", "scale"] and doc["layers_without_kernel"] == []


def test_info_records_are_consistent_and_opsets_sort_by_number(tmp_path):
    doc = json.loads(cli("info", str(MODELS / "dynamic_batch" / "model.xml"), "--json").stdout)
    assert doc["inputs"][0]["shape"] == ["?", 3] and doc["inputs"][1]["shape"] == ["1..8", 1]
    assert doc["outputs"][0] == {"name": "y", "layer": doc["outputs"][0]["layer"], "element_type": "f32",
                                 "shape": ["?", 3]}
    text = cli("info", str(MODELS / "dynamic_batch" / "model.xml")).stdout
    assert "x: f32 [?, 3]" in text and "bias: f32 [1..8, 1]" in text
    layers = [param(0, "x", [2]), layer(1, "a", "Abs", "opset15", inputs=[port(0, "FP32", [2])],
                                       outputs=[port(1, "FP32", [2])]),
              layer(2, "b", "Abs", "opset3", inputs=[port(0, "FP32", [2])], outputs=[port(1, "FP32", [2])]),
              result(3, "r", [2])]
    xml = write(tmp_path, net(layers, [(0, 0, 1, 0), (1, 1, 2, 0), (2, 1, 3, 0)]))
    assert list(json.loads(cli("info", str(xml), "--json").stdout)["opsets"]) == ["opset1", "opset3", "opset15"]


def test_info_describes_a_model_whose_weights_file_is_missing(tmp_path):
    (tmp_path / "model.xml").write_bytes((MODELS / "dynamic_batch" / "model.xml").read_bytes())
    proc = cli("info", str(tmp_path / "model.xml"))
    assert proc.returncode == 0, proc.stderr
    assert "weights:    missing:" in proc.stdout and "1 constant needs it" in proc.stdout
    assert "x: f32 [?, 3]" in proc.stdout
    assert cli("run", str(tmp_path / "model.xml"), "--random").returncode == 1  # running still needs them


def test_info_lists_layers_without_kernel(tmp_path):
    layers = [param(0, "x", [2]), layer(1, "g", "Frobnicate", "opset8", inputs=[port(0, "FP32", [2])],
                                       outputs=[port(1, "FP32", [2])]), result(2, "r", [2])]
    xml = write(tmp_path, net(layers, [(0, 0, 1, 0), (1, 1, 2, 0)]))
    doc = json.loads(cli("info", str(xml), "--json").stdout)
    assert doc["layers_without_kernel"] == [{"id": 1, "name": "g", "type": "Frobnicate", "version": "opset8"}]


def test_ops_lists_registered_kernels():
    proc = cli("ops")
    assert proc.returncode == 0 and re.search(r"^opset\s+Convert\s+1\s+conversion$", proc.stdout, re.M), proc.stdout
    doc = json.loads(cli("ops", "--json").stdout)
    add = next(op for op in doc if op["type"] == "Add")
    assert add["domain"] == "opset" and add["version"] == 1 and add["module"] == "irscatter.ops.elementwise.binary"
    gather8 = next(op for op in doc if op["type"] == "Gather" and op["version"] == 8)
    assert gather8["opsets"][0] == "opset8" and "opset15" in gather8["opsets"] and "opset7" not in gather8["opsets"]
    transpose = next(op for op in doc if op["type"] == "Transpose")
    assert "order-permutation" in transpose["labels"]


def test_ops_lists_every_label_with_its_meaning():
    proc = cli("ops", "--labels")
    assert proc.returncode == 0 and "same-element-type" in proc.stdout and "order-permutation" in proc.stdout
    doc = json.loads(cli("ops", "--labels", "--json").stdout)
    assert doc["shared"]["tensor-limit"] and doc["ops"]["Transpose-1"]["order-permutation"]
    assert "C19" in doc["ops"]["irscatter:HloScatter-1"]


@pytest.mark.parametrize(
    "make, code, fragment",
    [
        (lambda d: d / "missing.xml", 2, "missing.xml: model file not found"),
        (lambda d: write(d, '<net version="11"><layers>'), 1, "malformed XML"),
        (lambda d: write(d, net([param(0, "x", [2]), layer(1, "g", "Frobnicate", "opset3", inputs=[port(0, "FP32", [2])],
                                                            outputs=[port(1, "FP32", [2])]), result(2, "r", [2])],
                                [(0, 0, 1, 0), (1, 1, 2, 0)])), 1,
         'layer 1 "g" (Frobnicate, opset3): opset3 has no operation Frobnicate [not-in-opset]'),
        (lambda d: write(d, net([param(0, "x", [2]), add(1, "a", [3]), result(2, "r", [2])], [(0, 0, 1, 0), (1, 2, 2, 0)])), 1,
         'layer 1 "a" (Add-1) input 1: input port 1 has no incoming edge'),
    ],
)
def test_errors_are_one_line_with_exit_codes(tmp_path, make, code, fragment):
    proc = cli("run", str(make(tmp_path)), "--random")
    _assert_one_line_error(proc, code)
    assert fragment in proc.stderr


def test_feed_error_names_the_parameter(tmp_path):
    x = tmp_path / "x.npy"
    np.save(x, np.full((5,), 0.1, np.float64))  # no f32 value: refused, not converted
    proc = cli("run", str(MODELS / "affine_chain" / "model.xml"), "-i", f"x={x}")
    _assert_one_line_error(proc, 1)
    assert 'layer 0 "x" (Parameter-1): the fed array has dtype float64' in proc.stderr


def test_a_converted_feed_is_one_note_line(tmp_path):
    x = tmp_path / "x.npy"
    np.save(x, np.ones((2, 4), np.float64))
    proc = cli("run", str(MODELS / "affine_chain" / "model.xml"), "-i", f"x={x}")
    assert proc.returncode == 0
    assert proc.stderr == 'irscatter: note: input "x": the float64 array was converted to f32; every value is exact in it\n'


def test_one_input_given_twice_with_i_is_a_usage_error(tmp_path):
    x = tmp_path / "x.npy"
    np.save(x, np.ones((1, 4), np.float32))
    proc = cli("run", str(MODELS / "affine_chain" / "model.xml"), "-i", f"x={x}", "-i", f"x={x}")
    _assert_one_line_error(proc, 2)
    assert '-i gives input "x" twice' in proc.stderr


def test_usage_errors_exit_2():
    assert cli("run").returncode == 2
    assert cli("frobnicate").returncode == 2


def test_debug_shows_traceback(tmp_path):
    proc = cli("--debug", "run", str(tmp_path / "missing.xml"))
    assert proc.returncode == 2 and "Traceback" in proc.stderr


def test_readme_quickstart_run_command_works():
    """The irscatter part of the README's first Quickstart command, run as written."""
    import re
    import shlex

    readme = (MODELS.parent / "README.md").read_text()
    block = re.search(r"## Quickstart.*?```sh\n(.*?)```", readme, re.S).group(1).strip().splitlines()
    ci = (MODELS.parent / ".ci" / "run").read_text().strip().splitlines()[-1]
    assert len(block) == 2 and block[1].strip() == ci == 'pip install -e ".[test]" && ruff check && pytest'
    install, _, run = block[0].partition(" && ")
    assert install == "pip install ."
    words = shlex.split(run)
    assert words[0] == "irscatter"
    proc = cli(*words[1:], cwd=MODELS.parent)
    assert proc.returncode == 0, proc.stderr
    assert "ok   cache_out" in proc.stdout and "ok   written" in proc.stdout


def test_output_names_the_file_it_wrote_and_refuses_folders(tmp_path):
    model = str(MODELS / "affine_chain" / "model.xml")
    proc = cli("run", model, "--random", "--output", str(tmp_path / "outfile"))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().endswith(f"to {tmp_path / 'outfile.npz'}") and (tmp_path / "outfile.npz").is_file()
    _assert_one_line_error(cli("run", model, "--random", "--output", str(tmp_path)), 2)
    _assert_one_line_error(cli("run", model, "--random", "--output", str(tmp_path / "no" / "o.npz")), 2)
    assert not (tmp_path / "no").exists()


def test_counts_are_checked_by_the_parser():
    model = str(MODELS / "affine_chain" / "model.xml")
    for flag, value in (("--seed", "-1"), ("--steps", "0"), ("--runs", "0"), ("--seed", "x")):
        proc = cli("run", model, "--random", flag, value)
        assert proc.returncode == 2 and f"argument {flag}" in proc.stderr and "Traceback" not in proc.stderr


def test_global_options_work_after_the_command_too():
    model = str(MODELS / "affine_chain" / "model.xml")
    for args in (("--limit", "tensor_elements=2", "run", model, "--random"),
                 ("run", model, "--random", "--limit", "tensor_elements=2")):
        proc = cli(*args)
        assert proc.returncode != 0 and "tensor-limit" in proc.stderr, proc.stderr
    proc = cli("run", model, "--random", "--debug", "--limit", "tensor_elements=2")
    assert "Traceback" in proc.stderr and "tensor-limit" in proc.stderr
    proc = cli("--debug", "info", model)
    assert proc.returncode == 0, proc.stderr


def test_a_shape_past_the_tensor_limit_is_refused_before_drawing():
    proc = cli("run", str(MODELS / "dynamic_batch" / "model.xml"), "--random",
               "--shape", "x=1000000000,3", "--shape", "bias=1,1")
    _assert_one_line_error(proc, 2)
    assert "--shape x:" in proc.stderr and "tensor_bytes" in proc.stderr


def test_expected_reports_every_output_with_its_errors_and_honours_ulps(tmp_path):
    """run --expected judges by the rule and presets compare uses (f32: rtol 1e-4, atol 1e-5 of
    the largest magnitude): 1e-3 off fails, and the tolerances its hint names pass."""
    folder = MODELS / "affine_chain"
    wrong = tmp_path / "wrong.npz"
    with np.load(folder / "expected.npz") as want:
        y = want["y"]
        np.savez(wrong, y=y + np.float32(1e-3), y_f16=want["y_f16"].astype(np.float64), z=y)
    args = ("run", str(folder / "model.xml"), "--inputs", str(folder / "inputs.npz"), "--expected", str(wrong))
    proc = cli(*args)
    assert proc.returncode == 1
    lines = {line.split(":")[0]: line for line in proc.stdout.splitlines() if line[:4] in ("ok  ", "FAIL", "skip")}
    assert "max abs 0.001" in lines["FAIL y"] and "would pass within --atol " in lines["FAIL y"]
    hinted = re.search(r"--atol (\S+) or --ulps (\d+)", lines["FAIL y"]).groups()
    only_y = tmp_path / "y.npz"
    np.savez(only_y, y=y + np.float32(1e-3))
    for flag, value in zip(("--atol", "--ulps"), hinted):  # what the hint names passes (rounded up)
        assert cli(*args[:-1], str(only_y), flag, value).returncode == 0, (flag, value)
    assert "element type float16, expected float64" in lines["FAIL y_f16"]
    assert "no output of this name" in lines["FAIL z"]
    proc = cli(*args[:-1], str(tmp_path / "only_y.npz"), "--ulps", "100000")
    assert proc.returncode == 2  # the file does not exist yet: a usage error, not a comparison
    np.savez(tmp_path / "only_y.npz", y=y + np.float32(1e-5))
    proc = cli(*args[:-1], str(tmp_path / "only_y.npz"), "--ulps", "100000")
    assert proc.returncode == 0, proc.stdout
    assert "ok   y:" in proc.stdout and "skip y_f16: not in the expected values" in proc.stdout
    assert cli(*args[:-1], str(tmp_path / "only_y.npz"), "--ulps", "10").returncode == 1
    proc = cli(*args[:-1], str(tmp_path / "only_y.npz"), "--atol", "2e-5")
    assert proc.returncode == 0 and "rtol 0.0001, atol 2e-05" in proc.stdout


def test_run_expected_and_compare_give_one_verdict_on_the_same_files(tmp_path):
    """The same two files, judged by `run --expected` and by `compare A.npz B.npz`: one rule,
    one verdict, whichever way the difference falls."""
    folder = MODELS / "affine_chain"
    with np.load(folder / "expected.npz") as want:
        expected = dict(want)
    ran = cli("run", str(folder / "model.xml"), "--inputs", str(folder / "inputs.npz"), "--output",
              str(tmp_path / "out.npz"))
    assert ran.returncode == 0, ran.stderr
    for delta in (3e-6, 3e-4):
        np.savez(tmp_path / "e.npz", **{**expected, "y": expected["y"] + np.float32(delta)})
        by_run = cli("run", str(folder / "model.xml"), "--inputs", str(folder / "inputs.npz"), "--expected",
                     str(tmp_path / "e.npz")).returncode
        by_compare = cli("compare", str(tmp_path / "out.npz"), str(tmp_path / "e.npz")).returncode
        assert by_run == by_compare == (0 if delta < 1e-5 else 1), delta


@pytest.mark.parametrize("expected, fragment", [
    (np.inf, "no tolerance passes"), (-np.inf, "no tolerance passes"), (np.nan, "no tolerance passes")])
@pytest.mark.parametrize("tolerance", [(), ("--atol", "1e9"), ("--ulps", "4000000000")])
def test_expected_never_passes_a_nan_or_an_infinity_on_one_side(tmp_path, expected, fragment, tolerance):
    folder = MODELS / "affine_chain"
    with np.load(folder / "expected.npz") as want:
        y = want["y"].copy()
    y[0, 0] = expected
    np.savez(tmp_path / "e.npz", y=y)
    proc = cli("run", str(folder / "model.xml"), "--inputs", str(folder / "inputs.npz"), "--expected",
               str(tmp_path / "e.npz"), *tolerance)
    assert proc.returncode == 1 and fragment in proc.stdout and "max abs inf" in proc.stdout, proc.stdout
    assert "Warning" not in proc.stderr


@pytest.mark.parametrize("extra", [["--dump", "{tmp}/d.npz"], ["--expected", "{model}/expected.npz"],
                                   ["--stats", "--expected", "{model}/expected.npz"]])
def test_run_json_keeps_stdout_one_json_document(tmp_path, extra):
    folder = MODELS / "affine_chain"
    extra = [e.format(tmp=tmp_path, model=folder) for e in extra]
    proc = cli("run", str(folder / "model.xml"), "--inputs", str(folder / "inputs.npz"), "--json", *extra)
    assert proc.returncode == 0, proc.stderr
    json.loads(proc.stdout)  # one document; the ok/FAIL lines of --expected go to stderr
    if "--expected" in extra:
        assert "ok   y:" in proc.stderr


@pytest.mark.parametrize("args, message", [
    (["--json", "--profile"], "--json does not combine"),
    (["--output", "{tmp}/same.npz", "--dump", "{tmp}/same.npz"], "name one file"),
    (["--feed-back", "y=x"], "one step has none"),
])
def test_run_refuses_options_that_would_be_lost(tmp_path, args, message):
    folder = MODELS / "affine_chain"
    args = [a.format(tmp=tmp_path) for a in args]
    proc = cli("run", str(folder / "model.xml"), "--inputs", str(folder / "inputs.npz"), *args)
    _assert_one_line_error(proc, 2)
    assert message in proc.stderr


@pytest.mark.parametrize("args, message", [
    (["--random", "--shape", "x=2,3", "--shape", "x=4,3"], 'gives input "x" twice'),
    (["--inputs", "{model}/inputs.npz", "--random", "--shape", "x=2,3"], "that input is fed"),
])
def test_a_shape_that_would_be_ignored_is_refused(args, message):
    folder = MODELS / "dynamic_batch"
    proc = cli("run", str(folder / "model.xml"), *[a.format(model=folder) for a in args])
    _assert_one_line_error(proc, 2)
    assert message in proc.stderr


def test_feed_back_refuses_an_input_the_steps_also_give():
    folder = MODELS / "stateful_decoder"  # its inputs give x for every step
    proc = cli("run", str(folder / "model.xml"), "--inputs", str(folder / "inputs.npz"), "--feed-back", "y=x")
    _assert_one_line_error(proc, 2)
    assert 'also give "x" for step 1' in proc.stderr


@pytest.mark.parametrize("flag", [("--atol", "-1"), ("--rtol", "nan"), ("--ulps", "x")])
def test_tolerances_must_be_numbers_of_at_least_zero(flag):
    proc = cli("run", str(MODELS / "affine_chain" / "model.xml"), "--random", *flag)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr and flag[0] in proc.stderr


def test_flags_that_belong_to_another_flag_are_refused_without_it():
    xml = str(MODELS / "affine_chain" / "model.xml")
    for flags, parent in [(("--seed", "3"), "--random"), (("--runs", "3", "--random"), "--profile"),
                          (("--all-layers", "--random"), "--profile"), (("--rtol", "1e-3", "--random"), "--expected"),
                          (("--ulps", "4", "--random"), "--expected")]:
        proc = cli("run", xml, *flags)
        _assert_one_line_error(proc, 2)
        assert f"only applies with {parent}" in proc.stderr
    for runs in ("0", "-5"):
        assert cli("run", xml, "--random", "--profile", "--runs", runs).returncode == 2


def test_profile_prints_the_table_not_the_outputs():
    proc = cli("run", str(MODELS / "paged_kv_cache" / "model.xml"), "--random", "--profile", "--runs", "2")
    assert proc.returncode == 0, proc.stderr
    assert "median of 2 runs" in proc.stdout and "float32 [" not in proc.stdout
    assert all(line == line.rstrip() for line in proc.stdout.splitlines())


def test_run_json_and_version():
    proc = cli("run", str(MODELS / "affine_chain" / "model.xml"), "--random", "--json")
    outputs = json.loads(proc.stdout)
    assert outputs["y"]["element_type"] == "float32" and outputs["y"]["shape"] == [2, 4]
    assert np.asarray(outputs["y"]["values"]).shape == (2, 4)
    version = cli("--version")
    assert version.returncode == 0 and version.stdout.startswith("irscatter 0.")


def test_every_argument_is_explained_in_help():
    import argparse

    from irscatter.cli import build_parser

    commands = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    unexplained = [f"{name} {action.dest}" for name, sub in commands.choices.items()
                   for action in sub._actions if not action.help]
    assert unexplained == []


def test_run_names_every_layer_without_an_op_at_once(tmp_path):
    def unknown(lid, name, type_, opset):
        return layer(lid, name, type_, opset, inputs=[port(0, "FP32", [2])], outputs=[port(1, "FP32", [2])])

    layers = [param(0, "x", [2]), unknown(1, "a", "Frobnicate", "opset1"), unknown(2, "b", "Frob", "ext1"),
              unknown(3, "c", "Twiddle", "ext1"), result(4, "r", [2])]
    xml = write(tmp_path, net(layers, [(0, 0, 1, 0), (1, 1, 2, 0), (2, 1, 3, 0), (3, 1, 4, 0)]))
    proc = cli("run", str(xml), "--random")
    _assert_one_line_error(proc, 1)
    assert 'layer 1 "a" (Frobnicate, opset1): opset1 has no operation Frobnicate' in proc.stderr
    assert '2 more layers name no op irscatter runs: layer 2 "b" (Frob, ext1) (custom-domain), ' \
           'layer 3 "c" (Twiddle, ext1) (custom-domain) [not-in-opset]' in proc.stderr


def _npy_claiming(shape) -> bytes:
    """An .npy file whose header declares `shape` and which holds 16 bytes of data."""
    header = ("{'descr': '<f4', 'fortran_order': False, 'shape': %r, }" % (tuple(shape),)).encode()
    header += b" " * (63 - (10 + len(header)) % 64) + b"\n"
    return b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header + bytes(16)


@pytest.mark.parametrize("kind", ["npz", "npy"])
@pytest.mark.parametrize("shape, fragment", [((99999999999, 99999999999), "tensor_elements"),
                                             ((1000, 1000), "more than its")])
def test_an_inputs_file_whose_header_claims_more_than_it_holds(tmp_path, kind, shape, fragment):
    """A header may declare any shape, and numpy allocates it before reading: the declared size is
    held to the tensor limits and to the bytes actually there."""
    import zipfile

    path = tmp_path / f"x.{kind}"
    if kind == "npz":
        with zipfile.ZipFile(path, "w") as archive:
            archive.writestr("x.npy", _npy_claiming(shape))
    else:
        path.write_bytes(_npy_claiming(shape))
    model = str(MODELS / "affine_chain" / "model.xml")
    proc = cli("run", model, "--inputs", str(path)) if kind == "npz" else cli("run", model, "-i", f"x={path}")
    _assert_one_line_error(proc, 1)
    assert fragment in proc.stderr


def _fifo(folder: Path) -> Path:
    os.mkfifo(folder / "pipe.npz")  # read as it is, it would wait for a writer for ever
    return folder / "pipe.npz"


@pytest.mark.parametrize("make, option, code", [
    (lambda d: Path("/dev/null"), "--inputs", 2),  # a character device: not a file to seek in
    (_fifo, "--inputs", 2),
    (_fifo, "-i", 2),
    (lambda d: (d / "garbage.npz").write_bytes(b"PK\x03\x04 not really a zip") and d / "garbage.npz", "--inputs", 1),
    (lambda d: (d / "zip.npy").write_bytes(b"PK\x03\x04 a zip, not an .npy") and d / "zip.npy", "-i", 1),
])
def test_an_inputs_file_that_is_not_one_is_one_line(tmp_path, make, option, code):
    if make is _fifo and not hasattr(os, "mkfifo"):
        pytest.skip("named pipes are POSIX")
    path = make(tmp_path)
    proc = cli("run", str(MODELS / "affine_chain" / "model.xml"), option, str(path) if option == "--inputs" else f"x={path}")
    _assert_one_line_error(proc, code)


@pytest.mark.parametrize("value", ["1e999", "inf", "nan"])
def test_a_limit_that_is_not_a_finite_number_is_a_usage_error(value):
    proc = cli("--limit", f"tensor_bytes={value}", "info", str(MODELS / "affine_chain" / "model.xml"))
    _assert_one_line_error(proc, 2)
    assert "not a finite number" in proc.stderr


def test_a_model_file_without_a_size_is_read_no_further_than_the_limit():
    proc = cli("--limit", "xml_bytes=100000", "info", "/dev/zero")
    _assert_one_line_error(proc, 1)
    assert "[xml-size]" in proc.stderr


def test_extract_around_a_layer_stops_once_no_hop_reaches_further(tmp_path):
    out = tmp_path / "cut.xml"
    proc = cli("extract", str(MODELS / "affine_chain" / "model.xml"), "--around", _some_layer(),
               "--hops", "99999999999999999999", "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    assert out.exists()


def _some_layer() -> str:
    import irscatter

    model = irscatter.read_model(MODELS / "affine_chain" / "model.xml")
    return next(layer.name for layer in model.layers if layer.type not in ("Parameter", "Const", "Result"))


@pytest.mark.parametrize("etype", ["i4", "u4", "u2", "u1"])
def test_random_draws_inputs_of_the_packed_integer_types(tmp_path, etype):
    xml = write(tmp_path, net([param(0, "x", [3], et=etype, precision=etype.upper()),
                               result(1, "r", [3], precision=etype.upper())], [(0, 0, 1, 0)]))
    proc = cli("run", str(xml), "--random", "--json")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)["x"]
    assert out["shape"] == [3] and out["element_type"] == {"i4": "int4", "u4": "uint4", "u2": "uint2", "u1": "uint1"}[etype]


def test_a_shape_for_no_input_of_the_model_is_a_usage_error():
    proc = cli("run", str(MODELS / "affine_chain" / "model.xml"), "--random", "--shape", "nope=3")
    _assert_one_line_error(proc, 2)
    assert "--shape names no input of the model: nope" in proc.stderr


@pytest.mark.parametrize("args", [
    ["run", "{model}", "--random", "--stats", "--layers", "a{99999999999}"],
    ["run", "{model}", "--random", "--stats", "--layers", "(" * 5000 + ")" * 5000],
    ["compare", "{model}", "--random", "--tol", "a{99999999999}=1"],
])
def test_a_pattern_re_cannot_compile_is_a_usage_error(args):
    """re.compile raises OverflowError for a huge repeat and RecursionError for deep nesting, not
    re.error; both are the user's pattern, and the message quotes it cut short."""
    proc = cli(*[a.replace("{model}", str(MODELS / "affine_chain" / "model.xml")) for a in args])
    _assert_one_line_error(proc, 2)
    assert len(proc.stderr) < 400


def _library_refusal(call):
    with pytest.raises(irscatter.UsageError) as caught:
        call()
    return caught.value


@pytest.mark.parametrize("argv, call, argument, flag", [
    (["run", "{model}", "--random", "--range", "x=1"],
     lambda compiled: model_inputs.gather_feeds(compiled, random=True, ranges=["x=1"]), "ranges", "--range"),
    (["compare", "{model}", "--random", "--target", "nope"],
     lambda _: compare.open_target("nope"), "target", "--target"),
])
def test_a_library_refusal_names_its_argument_and_the_command_line_its_flag(argv, call, argument, flag, capsys):
    """The library speaks of the Python argument it was given, never of a flag; the command line
    says the same refusal with the flag that fed that argument (in process: no subprocess)."""
    model = MODELS / "affine_chain" / "model.xml"
    error = _library_refusal(lambda: call(irscatter.read_model(model).compile()))
    assert error.argument == argument and str(error).startswith(f"{argument} ") and "--" not in str(error)
    assert main([part.format(model=model) for part in argv]) == 2
    said = capsys.readouterr().err
    assert said.startswith(f"irscatter: error: {flag} ") and said.strip().endswith(str(error)[len(argument):])
