"""OpenVINO's Python API habits run unchanged on irscatter where they can: Core, read_model and
compile_model as OpenVINO takes them, infer requests, ports, shapes and types that numpy takes,
feeds converted where nothing is lost, and one-line answers where irscatter cannot follow."""

from __future__ import annotations

import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

import irscatter

MODELS = Path(__file__).resolve().parent.parent / "models"
SMALL_CNN = MODELS / "small_cnn" / "model.xml"


def no_notes(call, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("error", irscatter.CompatibilityNote)
        return call(*args, **kwargs)


def test_core_reads_a_path_or_the_xml_itself_with_weights_as_bytes_or_a_path():
    core = irscatter.Core()
    xml, weights = SMALL_CNN.read_text(), SMALL_CNN.with_suffix(".bin").read_bytes()
    x = np.random.default_rng(0).standard_normal((1, 3, 32, 32)).astype(np.float32)
    want = irscatter.read_model(SMALL_CNN).run(x)[0]
    for model in (core.read_model(SMALL_CNN), core.read_model(str(SMALL_CNN)), core.read_model(xml, weights),
                  core.read_model(xml.encode(), SMALL_CNN.with_suffix(".bin")),
                  core.read_model(xml, np.frombuffer(weights, np.uint8))):
        assert np.array_equal(model.run(x)[0], want)


def test_compile_model_takes_a_device_name_and_a_config_as_openvino_does():
    compiled = no_notes(irscatter.compile_model, str(SMALL_CNN), "CPU")
    assert compiled.default_precision is None
    assert no_notes(irscatter.compile_model, irscatter.read_model(SMALL_CNN), "CPU", {}).inputs[0].name == "x"
    assert no_notes(irscatter.Core().compile_model, SMALL_CNN, "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
    with pytest.warns(irscatter.CompatibilityNote, match='device "GPU" is not used'):
        irscatter.compile_model(SMALL_CNN, "GPU")
    with pytest.warns(irscatter.CompatibilityNote, match="PERFORMANCE_HINT, NUM_STREAMS: taken and not used"):
        irscatter.compile_model(SMALL_CNN, "CPU", {"PERFORMANCE_HINT": "LATENCY", "NUM_STREAMS": 2})


def test_an_inference_precision_in_the_config_is_emulated():
    x = np.random.default_rng(1).standard_normal((1, 3, 32, 32)).astype(np.float32)
    at_f16 = irscatter.compile_model(SMALL_CNN, "CPU", {"INFERENCE_PRECISION_HINT": "f16"})
    plain = irscatter.compile_model(SMALL_CNN)
    assert at_f16.default_precision == "f16"
    assert np.array_equal(at_f16.run(x)[0], plain.run(x, precision="f16")[0])
    assert not np.array_equal(at_f16.run(x)[0], plain.run(x)[0])


@pytest.mark.parametrize("device, config, message", [
    ("model.bin", None, "is a file, not a device"),
    (5, None, "device_name must be a device name"),
    ("CPU", {"KV_CACHE_PRECISION": "u8"}, "does not reproduce what this property changes"),
    ("CPU", {"INFERENCE_PRECISION_HINT": "i8"}, "runs f32 and emulates f16 and bf16"),
    ("CPU", ["PERFORMANCE_HINT"], "config must be a dict"),
])
def test_what_irscatter_cannot_honour_is_refused_with_the_reason(device, config, message):
    with pytest.raises(irscatter.UsageError, match=message):
        irscatter.compile_model(SMALL_CNN, device, config)


def test_infer_requests_keep_their_own_state_and_their_last_tensors():
    compiled = irscatter.compile_model(MODELS / "stateful_decoder" / "model.xml")
    x = np.random.default_rng(2).standard_normal((1, 1, 64)).astype(np.float32)
    first, second = compiled.create_infer_request(), compiled.create_infer_request()
    step1 = first.infer({compiled.input(): x})
    step2 = first.infer([x * 2])
    assert {s.state.shape[2] for s in first.query_state()} == {2}  # the state carried over: two steps held
    assert np.array_equal(second.infer(x)[0], step1[0])  # a request of its own starts afresh
    assert {s.state.shape[2] for s in second.query_state()} == {1}
    assert np.array_equal(compiled.infer_new_request(x)[0], step1[0])
    out = compiled.output(0)
    assert np.array_equal(first.get_tensor(out), step2[0]) and np.array_equal(first.get_output_tensor(0), step2[0])
    assert np.array_equal(first.get_tensor(out.any_name), step2[0]) and np.array_equal(first.results[0], step2[0])
    assert np.array_equal(first.get_tensor("x"), x * 2) and np.array_equal(first.get_input_tensor(0), x * 2)
    assert {s.name for s in first.query_state()} == {"past_key", "past_value"}
    first.reset_state()
    assert np.array_equal(first.infer(x)[0], step1[0])
    with pytest.raises(irscatter.UsageError, match="has not run yet"):
        compiled.create_infer_request().get_output_tensor(0)
    with pytest.raises(irscatter.UsageError, match="no input or output named"):
        first.get_tensor("nothing")


def test_ports_answer_to_openvinos_accessors_and_feed_numpy():
    compiled = irscatter.compile_model(SMALL_CNN)
    port = compiled.input()
    assert compiled.input(0) is port and compiled.input("x") is port
    assert port.get_any_name() == port.any_name == "x" and port.get_names() == {"x"}
    assert port.get_partial_shape() == port.partial_shape == port.shape and port.get_shape() == (1, 3, 32, 32)
    assert port.get_element_type() == irscatter.ElementType.f32 == port.element_type and str(port.element_type) == "f32"
    feed = np.zeros(port.shape, port.element_type)
    assert feed.shape == (1, 3, 32, 32) and feed.dtype == np.float32
    assert compiled.output(compiled.outputs[1].name) is compiled.outputs[1]
    with pytest.raises(irscatter.UsageError, match="needs a model of one output"):
        compiled.output()
    dynamic = irscatter.compile_model(MODELS / "dynamic_batch" / "model.xml").input("x")
    with pytest.raises(irscatter.UsageError, match=r"dynamic shape \[\?, 3\]"):
        dynamic.get_shape()
    with pytest.raises(TypeError, match="is not static"):
        np.zeros(dynamic.shape)


def test_model_parameters_results_and_reshape():
    model = irscatter.read_model(MODELS / "dynamic_batch" / "model.xml")
    assert [p.name for p in model.get_parameters()] == ["x", "bias"]
    assert [r.type for r in model.get_results()] == ["Result"]
    assert model.get_ordered_ops()[0].type in ("Parameter", "Const")
    model.reshape({"x": [3, 3], 1: "1,1"})
    assert [str(s.shape) for s in model.inputs] == ["[3, 3]", "[1, 1]"]
    out = model.run({"x": np.ones((3, 3), np.float32), "bias": np.ones((1, 1), np.float32)})
    assert out[0].shape == (3, 3)
    with pytest.raises(irscatter.ValidationError, match="do not broadcast"):
        model.reshape({"x": [1, 2, 3, 4, 5]})
    assert str(model.inputs[0].shape) == "[3, 3]"  # a refused shape leaves the model as it was
    with pytest.raises(irscatter.UsageError, match="dict from input to shape"):
        model.reshape([1, 3])


def test_a_model_prints_on_one_line_and_lists_nothing_that_raises():
    model = irscatter.read_model(SMALL_CNN)
    assert repr(model).count("\n") == 0 and len(repr(model)) < 200
    assert repr(model).startswith("<Model 'small_cnn' inputs[x: f32 [1,3,32,32]]")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for name in dir(model):
            getattr(model, name)


def test_other_formats_are_told_how_to_become_ir(tmp_path):
    with pytest.raises(irscatter.UsageError, match=r"is an ONNX model; irscatter reads OpenVINO IR.*ovc model.onnx"):
        irscatter.read_model(tmp_path / "model.onnx")


def test_feeds_of_another_dtype_are_converted_only_when_nothing_is_lost():
    model = irscatter.read_model(SMALL_CNN)
    x = np.random.default_rng(3).standard_normal((1, 3, 32, 32)).astype(np.float32)
    with pytest.warns(irscatter.CompatibilityNote, match="float64 array was converted to f32"):
        widened = model.run(x.astype(np.float64))[0]
    assert np.array_equal(widened, model.run(x)[0])
    with pytest.raises(irscatter.ExecutionError, match="is not exactly representable in f32"):
        model.run(x.astype(np.float64) + 1e-12)


def test_an_openvino_tensor_is_taken_as_a_feed():
    """In a worker process: the tests never load OpenVINO into their own."""
    pytest.importorskip("openvino")
    script = ("import numpy as np, openvino as ov, irscatter, sys\n"
              f"m = irscatter.read_model({str(SMALL_CNN)!r})\n"
              "x = np.random.default_rng(4).standard_normal((1, 3, 32, 32)).astype(np.float32)\n"
              "assert np.array_equal(m.run(ov.Tensor(x))[0], m.run(x)[0])\n"
              "assert np.array_equal(m.run({'x': ov.Tensor(x)})[0], m.run(x)[0])\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr


def test_run_layer_keeps_python_integers_and_reads_a_bare_snippets_ports_from_its_inputs():
    add = '<layer type="Add" version="opset1"/>'
    (out,) = irscatter.run_layer(add, [[1, 2], [3, 4]])
    assert out.dtype == np.int64 and out.tolist() == [4, 6]
    (out,) = irscatter.run_layer(add, [[1, 2], np.array([0.5, 1], np.float32)])  # beside floats: floats
    assert out.dtype == np.float32 and out.tolist() == [1.5, 3]
    gather = '<layer type="Gather" version="opset8"><data batch_dims="0"/></layer>'
    (out,) = irscatter.run_layer(gather, [np.arange(6, dtype=np.float32).reshape(2, 3), [1], 0])
    assert out.tolist() == [[3, 4, 5]]
    with pytest.raises(irscatter.UsageError, match="must be a list"):
        irscatter.run_layer(add, "12")


def test_onnxruntimes_run_habit_works():
    model = irscatter.read_model(SMALL_CNN)
    x = np.random.default_rng(5).standard_normal((1, 3, 32, 32)).astype(np.float32)
    plain = model.run(x)
    every = model.run(None, {"x": x})
    assert list(every) == list(plain) and all(np.array_equal(every[k], plain[k]) for k in plain)
    name = model.outputs[1].name
    assert list(model.run([name], {"x": x})) == [name]
    with pytest.raises(irscatter.UsageError, match="as onnxruntime does"):
        model.run({"x": x}, {"x": x})
