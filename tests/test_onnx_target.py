"""`compare --onnx`: an IR converted from ONNX by OpenVINO's frontend against the ONNX model on
onnxruntime, tensor by tensor, matched through the ONNX value names the IR's ports keep.

The models are built with onnx.helper and converted by `openvino.convert_model` in a
subprocess (tests/data/onnx_to_ir.py); onnxruntime runs in its worker process."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from importlib.util import find_spec
from pathlib import Path

import numpy as np
import pytest

import irscatter
from irscatter import cli
from irscatter.debug.onnx_compare import compare_onnx, onnx_table
from irscatter.debug.tolerances import Tolerances
from irscatter.targets.onnxruntime import OnnxRuntimeTarget
from irscatter.targets.worker import module_command

pytestmark = pytest.mark.skipif(find_spec("onnxruntime") is None or find_spec("onnx") is None,
                                reason="onnxruntime is not installed (pip install irscatter[onnxruntime])")
DATA = Path(__file__).resolve().parent / "data"


def _cnn(path: Path) -> None:
    """Conv+bias, Relu, MaxPool, Conv, x*Sigmoid(x) (which OpenVINO fuses into Swish), a global
    average pool reshaped through Shape arithmetic (which it folds), Gemm, Softmax and ArgMax."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)

    def weights(name, *shape):
        return numpy_helper.from_array((rng.standard_normal(shape) * 0.3).astype(np.float32), name)

    node = helper.make_node
    nodes = [
        node("Conv", ["x", "w1", "b1"], ["conv1"], pads=[1, 1, 1, 1]),
        node("Relu", ["conv1"], ["relu1"]),
        node("MaxPool", ["relu1"], ["pool1"], kernel_shape=[2, 2], strides=[2, 2]),
        node("Conv", ["pool1", "w2", "b2"], ["conv2"], pads=[1, 1, 1, 1]),
        node("Sigmoid", ["conv2"], ["sig"]),
        node("Mul", ["conv2", "sig"], ["silu"]),
        node("GlobalAveragePool", ["silu"], ["gap"]),
        node("Shape", ["gap"], ["gap_shape"]),
        node("Gather", ["gap_shape", "zero"], ["batch"], axis=0),
        node("Concat", ["batch", "minus_one"], ["flat_shape"], axis=0),
        node("Reshape", ["gap", "flat_shape"], ["flat"]),
        node("Gemm", ["flat", "wf", "bf"], ["logits"], transB=1),
        node("Softmax", ["logits"], ["probs"], axis=1),
        node("ArgMax", ["logits"], ["label"], axis=1, keepdims=0),
    ]
    constants = [weights("w1", 8, 3, 3, 3), weights("b1", 8), weights("w2", 16, 8, 3, 3), weights("b2", 16),
                 weights("wf", 10, 16), weights("bf", 10), numpy_helper.from_array(np.array([0], np.int64), "zero"),
                 numpy_helper.from_array(np.array([-1], np.int64), "minus_one")]
    graph = helper.make_graph(nodes, "cnn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
                              [helper.make_tensor_value_info("probs", TensorProto.FLOAT, [1, 10]),
                               helper.make_tensor_value_info("label", TensorProto.INT64, [1])], constants)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)


@pytest.fixture(scope="module")
def cnn(tmp_path_factory):
    """The model as ONNX and as IR, its input, and a copy of the IR whose second convolution's
    weights were scaled by 1.01 after the conversion (in the .bin)."""
    folder = tmp_path_factory.mktemp("onnx")
    _cnn(folder / "cnn.onnx")
    done = subprocess.run([sys.executable, str(DATA / "onnx_to_ir.py"), str(folder / "cnn.onnx"),
                           str(folder / "cnn.xml")], capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    xml = folder / "cnn.xml"
    faulty = folder / "faulty"
    faulty.mkdir()
    (faulty / "cnn.xml").write_text(xml.read_text())
    weights = bytearray(xml.with_suffix(".bin").read_bytes())
    offset, size = _const_data(xml.read_text(), "w2")
    values = np.frombuffer(weights, np.float32, size // 4, offset) * np.float32(1.01)
    weights[offset:offset + size] = values.tobytes()
    (faulty / "cnn.bin").write_bytes(bytes(weights))
    x = np.random.default_rng(1).standard_normal((1, 3, 8, 8)).astype(np.float32)
    np.save(folder / "x.npy", x)
    return {"onnx": folder / "cnn.onnx", "xml": xml, "faulty": faulty / "cnn.xml", "x": x, "folder": folder}


def _const_data(text: str, name: str) -> tuple[int, int]:
    layer = re.search(rf'<layer id="\d+" name="{name}" type="Const".*?<data (.*?)/>', text, re.S)
    attrs = dict(re.findall(r'(\w+)="([^"]*)"', layer.group(1)))
    return int(attrs["offset"]), int(attrs["size"])


@pytest.fixture(scope="module")
def runtime():
    with OnnxRuntimeTarget(threads=1) as target:
        yield target


def test_a_clean_conversion_matches_onnxruntime_on_every_matched_tensor(cnn, runtime):
    compiled = irscatter.read_model(cnn["xml"]).compile()
    report = compare_onnx(compiled, {"x": cnn["x"]}, cnn["onnx"], Tolerances(), runtime=runtime)
    judged = [t for r in report.records for t in r.tensors]
    assert report.passed and report.matched > 0 and len(judged) >= report.matched
    assert all(t.diff.passed for t in judged)
    assert {"conv1", "relu1", "pool1", "logits", "probs", "label"} <= {t.onnx for t in judged}
    assert report.matched + len(report.unmatched_onnx) == report.onnx_values
    assert report.unmatched_ir  # the Convolution before its bias Add: no ONNX value stands for it
    text = onnx_table(report)
    assert text.startswith("irscatter runs cnn.xml (the reference); onnxruntime:CPU (onnxruntime 1.")
    assert "ONNX values matched; no divergence" in text.splitlines()[-1]
    positions = [r.position for r in report.records]
    assert positions == sorted(positions) == list(range(len(report.records)))


def test_a_constant_altered_after_conversion_is_the_first_divergence(cnn, runtime):
    compiled = irscatter.read_model(cnn["faulty"]).compile()
    report = compare_onnx(compiled, {"x": cnn["x"]}, cnn["onnx"], Tolerances(), runtime=runtime)
    first = report.first_divergence
    assert not report.passed and first is not None
    assert [t.onnx for t in first.tensors if not t.diff.passed] == ["conv2"]
    before = [r for r in report.records if r.position < first.position and r.tensors]
    assert {t.onnx for r in before for t in r.tensors} >= {"conv1", "relu1", "pool1"}
    assert all(r.status == "passed" for r in before)
    assert f'first divergence: layer {first.id} "{first.name}"' in onnx_table(report)
    assert 'ONNX value "conv2"' in onnx_table(report)


@pytest.mark.parametrize("fault, kind", [("crash_here", "crashed"), ("hang_here", "hung")])
def test_a_crash_or_hang_of_onnxruntime_is_a_finding(cnn, fault, kind):
    copy = cnn["folder"] / f"{fault}.onnx"
    copy.write_bytes(cnn["onnx"].read_bytes())
    compiled = irscatter.read_model(cnn["xml"]).compile()
    with OnnxRuntimeTarget(timeout=2, command=module_command(str(DATA / "misbehaving_onnxruntime.py"))) as target:
        report = compare_onnx(compiled, {"x": cnn["x"]}, copy, runtime=target)
    assert report.failure is not None and report.failure[0] == kind
    assert not report.ok and not report.passed
    assert {r.status for r in report.records} == {"not compared"}
    assert f"onnxruntime {kind}, so nothing was compared" in onnx_table(report)


def test_the_command_line_exit_status(cnn, capsys):
    x = str(cnn["folder"] / "x.npy")
    assert cli.main(["compare", str(cnn["xml"]), "--onnx", str(cnn["onnx"]), "-i", f"x={x}", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["reference"] == "irscatter" and out["target"].startswith("onnxruntime 1.")
    assert out["ok"] and out["matched"] > 0
    assert next(r for r in out["records"] if r["tensors"])["tensors"][0]["onnx_value"] == "conv1"
    assert cli.main(["compare", str(cnn["faulty"]), "--onnx", str(cnn["onnx"]), "-i", f"x={x}"]) == 1
    assert 'ONNX value "conv2"' in capsys.readouterr().out
    assert cli.main(["compare", str(cnn["xml"]), "--onnx", str(cnn["onnx"]), "--target", "openvino",
                     "-i", f"x={x}"]) == 2
    assert "--onnx" in capsys.readouterr().err
