"""The Python API as OpenVINO users expect it: compiled models called with dicts (by name,
position or input object), lists or one array; ordered inputs and outputs; a chosen set of
outputs; outputs the caller owns; and model objects whose namespace is irscatter's own."""

import gc
import re
import weakref
from pathlib import Path

import numpy as np
import pytest
from helpers import layer, net, one_layer_ir, param, port, result, write

import irscatter
from irscatter.runtime.feeds import as_array

MODELS = Path(__file__).resolve().parent.parent / "models"
X = np.arange(6, dtype=np.float32).reshape(2, 3)
BIAS = np.full((1, 1), 0.5, np.float32)


@pytest.fixture
def compiled():
    return irscatter.compile_model(MODELS / "dynamic_batch" / "model.xml")


def test_feeds_by_name_position_input_object_list_or_one_array(compiled):
    want = compiled.run({"x": X, "bias": BIAS})["y"]
    for feeds in ({0: X, 1: BIAS}, {compiled.inputs[0]: X, "bias": BIAS}, [X, BIAS], (X, BIAS)):
        np.testing.assert_array_equal(compiled(feeds)["y"], want)
        np.testing.assert_array_equal(compiled.infer(feeds)[0], want)


def test_a_one_input_model_takes_its_array_alone(tmp_path):
    single = irscatter.compile_model(one_layer_ir(tmp_path, "Abs", "opset1", {}, [("a", X)], [((2, 3), np.float32)]))
    np.testing.assert_array_equal(single(-X)[0], X)


@pytest.mark.parametrize("feeds, message", [
    ({5: X}, "there is no input 5: the model has 2 inputs"),
    ([X], "1 inputs given in a list, the model has 2"),
    ({"nope": X}, 'there is no input named "nope"'),
    (X, "feeds must be a dict"),
])
def test_bad_feed_keys_say_what_the_inputs_are(compiled, feeds, message):
    with pytest.raises(irscatter.ExecutionError, match=message):
        compiled(feeds)


def test_inputs_and_outputs_are_ordered_specs_on_model_and_compiled_model(compiled):
    model = irscatter.read_model(MODELS / "dynamic_batch" / "model.xml")
    for owner in (model, compiled):
        assert [s.name for s in owner.inputs] == ["x", "bias"]
        assert [str(s.element_type) for s in owner.inputs] == ["f32", "f32"]
        assert str(owner.inputs[1].shape) == "[1..8, 1]" and owner.outputs[0].name == "y"
    assert compiled.input_names == ["x", "bias"]
    assert [layer.type for layer in compiled.get_ordered_ops()] == \
        ["Parameter", "Parameter", "Const", "Multiply", "Add", "Result"]
    out = compiled([X, BIAS])
    assert out[compiled.outputs[0]] is out["y"] is out[0] and out.to_tuple()[0] is out["y"]


def test_outputs_chooses_any_tensor_by_output_tensor_or_layer_port_name(compiled):
    full = compiled.run({"x": X, "bias": BIAS}, intermediate=True)
    multiply = next(key for key in full if key.startswith("Multiply"))
    chosen = compiled.run({"x": X, "bias": BIAS}, outputs=[multiply, "y"])
    assert list(chosen) == [multiply, "y"]
    np.testing.assert_array_equal(chosen[multiply], full[multiply])
    with pytest.raises(irscatter.ExecutionError, match='no tensor is named "z"') as caught:
        compiled.run([X, BIAS], outputs=["z"])
    assert caught.value.label == "unknown-output"


def _reshape_model(tmp_path):
    return irscatter.compile_model(one_layer_ir(tmp_path, "Reshape", "opset1", {"special_zero": "false"},
                                                [("data", X), ("shape", np.array([3, 2], np.int64))],
                                                [((3, 2), np.float32)]))


def test_outputs_never_view_the_feeds_and_are_writable(tmp_path):
    data = X.copy()
    out = _reshape_model(tmp_path)({"data": data, "shape": np.array([3, 2], np.int64)})["out0"]
    assert not np.may_share_memory(out, data) and out.flags.writeable
    out[...] = -1
    np.testing.assert_array_equal(data, X)  # writing an output leaves the caller's array alone

    layers = [param(0, "x", [2, 3]), result(1, "same", [2, 3])]
    (tmp_path / "p").mkdir()
    passthrough = irscatter.compile_model(write(tmp_path / "p", net(layers, [(0, 0, 1, 0)])))
    got = passthrough({"x": data})[0]
    assert got is not data and not np.may_share_memory(got, data)


def test_two_outputs_of_one_tensor_do_not_share_memory(tmp_path):
    layers = [param(0, "x", [2, 3]),
              layer(1, "a", "Abs", inputs=[port(0, "FP32", [2, 3])], outputs=[port(1, "FP32", [2, 3])]),
              result(2, "r1", [2, 3]), result(3, "r2", [2, 3])]
    model = irscatter.compile_model(write(tmp_path, net(layers, [(0, 0, 1, 0), (1, 1, 2, 0), (1, 1, 3, 0)])))
    first, second = model([X]).to_tuple()
    assert not np.may_share_memory(first, second)


def test_const_outputs_are_writable(tmp_path):
    model = irscatter.compile_model(MODELS / "quantized_mlp" / "model.xml")
    ones = {s.name: np.ones([d.min for d in s.shape], s.element_type.dtype) for s in model.inputs}
    for value in model(ones).values():
        assert value.flags.writeable


def test_the_model_namespace_holds_irscatters_verbs_only():
    model = irscatter.read_model(MODELS / "dynamic_batch" / "model.xml")
    for name in ("json", "dict", "copy", "parse_obj", "schema", "construct"):
        assert not hasattr(model, name), name
    report = model.validate()
    assert isinstance(report, irscatter.Report) and report.ok
    np.testing.assert_array_equal(model([X, BIAS])["y"], model.run({"x": X, "bias": BIAS})["y"])


SPEC_SNIPPET = """<layer ... type="Add">
    <data auto_broadcast="numpy"/>
    <input>
        <port id="0"><dim>2</dim></port>
        <port id="1"><dim>2</dim></port>
    </input>
    <output>
        <port id="2"><dim>2</dim></port>
    </output>
</layer>"""


def test_parse_layer_takes_the_specs_own_snippets():
    layer_ = irscatter.parse_layer(SPEC_SNIPPET)  # a literal "..." and no id, name or version
    assert (layer_.type, layer_.id, layer_.name) == ("Add", 0, "example")  # named as `examples` names it
    assert layer_.version == "opset16"  # the newest opset that holds Add
    with pytest.raises(irscatter.LoadError, match="malformed XML"):
        irscatter.parse_layer("<layer type='Add'><input></layer>")


def test_run_layer_runs_one_layer_on_arrays_and_applies_its_checks():
    (out,) = irscatter.run_layer(SPEC_SNIPPET, [[1, 2], np.array([3, 4], np.float32)])
    assert out.dtype == np.float32 and out.tolist() == [4.0, 6.0]
    with pytest.raises(irscatter.ValidationError) as caught:
        irscatter.run_layer(SPEC_SNIPPET, [np.zeros(2, np.float32), np.zeros(2, np.int32)])
    assert caught.value.label == "same-element-type" and caught.value.layer.type == "Add"


def test_run_layer_gives_outputs_of_its_own(tmp_path):
    reshape = irscatter.parse_layer("""<layer type="Reshape" version="opset1"><data special_zero="false"/>
        <input><port id="0" precision="FP32"><dim>2</dim><dim>3</dim></port>
               <port id="1" precision="I64"><dim>2</dim></port></input>
        <output><port id="2" precision="FP32"><dim>3</dim><dim>2</dim></port></output></layer>""")
    data = X.copy()
    (out,) = irscatter.run_layer(reshape, [data, [3, 2]])
    assert out.shape == (3, 2) and not np.may_share_memory(out, data)
    np.testing.assert_array_equal(data, X)


@pytest.mark.parametrize("inputs, label", [
    ([[1, 2]], "input-count"),
    ([[1, 2], [3, 4], [5, 6]], "input-count"),
    (["abc", [1, 2]], "feed-dtype"),
    ([None, [1, 2]], "feed-dtype"),
    ([[[1], [1, 2]], [1, 2]], "feed-dtype"),
])
def test_run_layer_refuses_inputs_it_cannot_take_with_one_error(inputs, label):
    with pytest.raises(irscatter.IRError) as caught:
        irscatter.run_layer(SPEC_SNIPPET, inputs)
    assert caught.value.label == label and caught.value.layer.type == "Add"


def test_a_python_int_the_input_type_cannot_hold_is_a_feed_error():
    compiled = irscatter.compile_model(Path(__file__).resolve().parent.parent / "models" / "lstm_sequence" / "model.xml")
    feeds = dict(np.load(Path(__file__).resolve().parent.parent / "models" / "lstm_sequence" / "inputs.npz"))
    feeds["seq_lengths"] = 2**40  # the input is i32
    with pytest.raises(irscatter.IRError) as caught:
        compiled.run(feeds)
    assert caught.value.label == "feed-dtype"


@pytest.mark.parametrize("value, etype, why", [
    ([1.5, 2.0], "i32", "1.5 is not a whole number int32"),
    (float("nan"), "i32", "nan is not a whole number"),
    (-1, "u8", "-1 is not a whole number uint8"),
    (2, "boolean", "2 is not a truth value"),
    (["7", "8"], "i32", "holds text"),
    ([b"7"], "i32", "holds text"),
    ([[None, 1.0]], "f32", "None"),
    (2**70, "i64", "beyond 64 bits"),
    (1 + 2j, "f32", "complex128"),
    (1e40, "f32", "beyond what float32"),
    (70000.0, "f16", "beyond what float16"),
    (1e30, "f8e4m3", "beyond what float8_e4m3fn"),
])
def test_a_python_value_its_type_cannot_hold_is_refused_not_converted(value, etype, why):
    with pytest.raises(ValueError, match=re.escape(why)):
        as_array(value, irscatter.ElementType(etype).dtype)


@pytest.mark.parametrize("value, etype, want", [
    ([1, 2], "f32", [1.0, 2.0]),
    (3.0, "i64", 3),
    (1, "boolean", True),
    (True, "f32", 1.0),
    (0.1, "f16", np.float16(0.1)),  # a float type rounds to its nearest value
    (float("inf"), "f32", np.inf),
    (float("-nan"), "bf16", np.nan),
    ([], "f32", []),
    (["a", "b"], "string", ["a", "b"]),
])
def test_a_python_value_its_type_holds_is_converted(value, etype, want):
    got = as_array(value, irscatter.ElementType(etype).dtype)
    assert got.dtype == irscatter.ElementType(etype).dtype
    np.testing.assert_array_equal(got.astype(object) if etype == "string" else got.astype(np.float64),
                                  np.asarray(want, object if etype == "string" else np.float64))


@pytest.mark.parametrize("name", ["transformer_block", "relative_position_bias"])
def test_the_same_values_in_another_memory_layout_give_the_same_bits(name):
    """numpy sums in an order that follows memory layout: feeds are read row-major, so Softmax's
    and MVN's reductions do not change their last bits with the caller's layout."""
    compiled = irscatter.compile_model(MODELS / name / "model.xml")
    feeds = dict(np.load(MODELS / name / "inputs.npz"))
    others = {k: np.asfortranarray(v) if v.ndim >= 2 else v[::-1].copy()[::-1] for k, v in feeds.items()}
    assert any(not v.flags.c_contiguous for v in others.values())
    want, got = compiled.run(feeds), compiled.run(others)
    for key in want:
        assert want[key].tobytes() == got[key].tobytes(), key
    assert all(not v.flags.c_contiguous for v in others.values() if v.ndim >= 2)  # (read, never changed)


@pytest.mark.parametrize("path", [5, None, 1.5])
def test_a_model_path_that_is_no_path_is_a_usage_error(path):
    with pytest.raises(irscatter.UsageError, match="must be a path"):
        irscatter.compile_model(path)
    with pytest.raises(irscatter.UsageError, match="weights file must be a path"):
        irscatter.read_model(MODELS / "affine_chain" / "model.xml", path if path is not None else [])
    assert irscatter.read_model(bytes(MODELS / "affine_chain" / "model.xml")).name == "affine_chain"


@pytest.mark.parametrize("option", [{"hook": 5}, {"timings": 5}, {"timings": ()}])
def test_a_hook_or_timings_that_cannot_serve_is_a_usage_error(option):
    compiled = irscatter.compile_model(MODELS / "affine_chain" / "model.xml")
    feeds = dict(np.load(MODELS / "affine_chain" / "inputs.npz"))
    with pytest.raises(irscatter.UsageError, match=f"{next(iter(option))}= must be"):
        compiled.run(feeds, **option)


def test_two_results_of_one_name_are_two_outputs_in_their_order(tmp_path):
    """OpenVINO writes two Results of one tensor with one output_names: each output keeps a key
    of its own (the second its Result's name), so positions stay those of the Results."""
    relu = layer(1, "relu", "Relu", inputs=[port(0, "FP32", [3])], outputs=[port(1, "FP32", [3], names="y")])
    relu = relu.replace('type="Relu"', 'type="ReLU"')
    results = [layer(2, "Result_6", "Result", inputs=[port(0, "FP32", [3])]),
               layer(3, "Result_7", "Result", inputs=[port(0, "FP32", [3])])]
    results = [r.replace('version="opset1"', 'version="opset1" output_names="y"') for r in results]
    double = layer(4, "double", "Add", data={"auto_broadcast": "numpy"},
                   inputs=[port(0, "FP32", [3]), port(1, "FP32", [3])], outputs=[port(2, "FP32", [3], names="z")])
    last = layer(5, "Result_8", "Result", inputs=[port(0, "FP32", [3])])
    xml = write(tmp_path, net([param(0, "x", [3]), relu, *results, double, last],
                              [(0, 0, 1, 0), (1, 1, 2, 0), (1, 1, 3, 0), (0, 0, 4, 0), (0, 0, 4, 1), (4, 2, 5, 0)]))
    compiled = irscatter.compile_model(xml)
    assert [spec.name for spec in compiled.outputs] == ["y", "Result_7", "z"]
    out = compiled.run({"x": np.array([-1, 0, 2], np.float32)})
    assert [out[i].tolist() for i in range(3)] == [[0, 0, 2], [0, 0, 2], [-2, 0, 4]]
    assert not np.shares_memory(out[0], out[1])


@pytest.mark.parametrize("kept", ["model", "compiled"])
def test_a_model_is_freed_when_its_last_user_lets_go(kept):
    """Neither reader nor the compiled model's cache leaves a reference cycle behind: a graph of
    many thousand objects goes at once, not at some later pass of the garbage collector."""
    x = np.zeros((1, 3, 32, 32), np.float32)
    gc.collect()
    gc.disable()
    try:
        model = irscatter.read_model(MODELS / "small_cnn" / "model.xml")
        compiled = model.compile()
        refs = [weakref.ref(model), weakref.ref(compiled), weakref.ref(compiled.model)]
        if kept == "model":
            del compiled
            outputs = model.run(x)
        else:
            del model
            outputs = compiled.run(x)
        np.testing.assert_array_equal(outputs[0].shape, (1, 10))
        del outputs
        model = compiled = None
        alive = [ref() is not None for ref in refs]
    finally:
        gc.enable()
    assert alive == [False, False, False]
