"""The interpreter: execution order, feeds and outputs, buffer lifetime, and run-time errors."""

import gc
import weakref

import numpy as np
import pytest
from helpers import add, kernel_hidden, layer, net, param, port, result, write

import irscatter
from irscatter.errors import ExecutionError, ValidationError


def _chain(tmp_path, n=4, shuffle=False):
    """x -> Add(x, x) -> Add(.., ..) ... -> Result, optionally with layers in reverse XML order."""
    layers = [param(0, "x", [2, 2])] + [add(i, f"a{i}", [2, 2]) for i in range(1, n + 1)] + [result(n + 1, "out", [2, 2])]
    edges = [(0, 0, 1, 0), (0, 0, 1, 1)]
    for i in range(2, n + 1):
        edges += [(i - 1, 2, i, 0), (i - 1, 2, i, 1)]
    edges.append((n, 2, n + 1, 0))
    if shuffle:
        layers = layers[::-1]
    return irscatter.read_model(write(tmp_path, net(layers, edges)))


def test_order_comes_from_edges_not_xml(tmp_path):
    x = np.array([[1, 2], [3, 4]], np.float32)
    assert np.array_equal(_chain(tmp_path, shuffle=True).run({"x": x})["out"], x * 16)


def test_only_layers_results_need_are_run(tmp_path):
    # An unreachable layer of an unknown type does not stop the model from running.
    layers = [param(0, "x", [2]), result(1, "r", [2]),
              layer(2, "orphan", "NoSuchOp", "opset8", inputs=[port(0, "FP32", [2])], outputs=[port(1, "FP32", [2])])]
    model = irscatter.read_model(write(tmp_path, net(layers, [(0, 0, 1, 0), (0, 0, 2, 0)])))
    assert list(model.run({"x": np.ones(2, np.float32)})) == ["x"]  # the tensor name of the port feeding "r"


def test_output_naming_rules(tmp_path):
    layers = [
        layer(0, "x", "Parameter", data={"shape": "2", "element_type": "f32"}, outputs=[port(0, "FP32", [2], names="in_t,x_alias")]),
        add(1, "sum", [2]),
        result(2, "r_explicit", [2]).replace('version="opset1"', 'version="opset1" output_names="picked"'),
        result(3, "r_port", [2]),
        result(4, "r_layer", [2]),
        layer(5, "plain", "Add", data={"auto_broadcast": "numpy"}, inputs=[port(0, "FP32", [2]), port(1, "FP32", [2])], outputs=[port(2, "FP32", [2])]),
    ]
    layers[1] = layers[1].replace('<port id="2" precision="FP32">', '<port id="2" precision="FP32" names="sum_t">')
    edges = [(0, 0, 1, 0), (0, 0, 1, 1), (1, 2, 2, 0), (1, 2, 3, 0), (0, 0, 5, 0), (0, 0, 5, 1), (5, 2, 4, 0)]
    model = irscatter.read_model(write(tmp_path, net(layers, edges)))
    out = model.run({"in_t": np.array([1, 2], np.float32)})  # fed by a tensor name
    assert list(out) == ["picked", "sum_t", "r_layer"]
    assert model.run({"x": np.array([1, 2], np.float32)})["r_layer"].tolist() == [2, 4]  # fed by layer name


def test_intermediate_returns_every_tensor(tmp_path):
    out = _chain(tmp_path, 3).run({"x": np.ones((2, 2), np.float32)}, intermediate=True)
    assert list(out) == ["x:0", "a1:2", "a2:2", "a3:2"]
    assert out["a2:2"].tolist() == [[4, 4], [4, 4]]


def test_buffers_are_released_after_last_use(tmp_path):
    model = _chain(tmp_path, 5)
    refs: dict[str, weakref.ref] = {}
    alive_at_end: list[bool] = []

    def hook(lay, inputs, outputs):
        refs[lay.name] = weakref.ref(outputs[0].base)  # a hook sees a read-only view of the buffer
        if lay.name == "a5":
            gc.collect()
            alive_at_end.extend(refs[n]() is not None for n in ("a1", "a2", "a3"))

    out = model.run({"x": np.ones((2, 2), np.float32)}, hook=hook)
    assert alive_at_end == [False, False, False], "a1..a3 are dead once a4 and a5 have run"
    assert out["out"] is refs["a5"]()


def test_inputs_are_never_mutated(tmp_path):
    x = np.arange(4, dtype=np.float32).reshape(2, 2)
    before = x.copy()
    _chain(tmp_path).run({"x": x})
    assert np.array_equal(x, before)


@pytest.mark.parametrize(
    "feeds, message",
    [
        ({}, "no value was fed"),
        ({"x": np.full((2, 2), 0.1, np.float64)}, "dtype float64, the Parameter expects f32"),
        ({"x": np.full((2, 2), 2**40 + 1, np.int64)}, "1099511627777 is not exactly representable in f32"),
        ({"x": np.ones((2, 2), np.complex64)}, "dtype complex64, the Parameter expects f32"),
        ({"x": np.ones((3, 2), np.float32)}, "shape [3, 2], the Parameter expects [2, 2]"),
        ({"x": np.ones((2, 2), np.float32), "y": 1}, 'no input named "y"'),
    ],
)
def test_feed_errors_name_the_parameter(tmp_path, feeds, message):
    with pytest.raises(ExecutionError) as info:
        _chain(tmp_path).run(feeds)
    assert message in str(info.value)
    if "no input named" not in message:
        assert 'layer 0 "x" (Parameter-1)' in str(info.value)


def test_python_values_are_converted_to_the_parameter_type(tmp_path):
    out = _chain(tmp_path, 1).run({"x": [[1, 2], [3, 4]]})
    assert out["out"].dtype == np.float32 and out["out"].tolist() == [[2, 4], [6, 8]]


def test_dynamic_shapes_are_checked_per_run(tmp_path):
    layers = [param(0, "a", [-1, 3]), param(1, "b", [-1]), add(2, "s", [-1, 3]), result(3, "r", [-1, 3])]
    model = irscatter.read_model(write(tmp_path, net(layers, [(0, 0, 2, 0), (1, 0, 2, 1), (2, 2, 3, 0)])))
    assert model.run({"a": np.ones((4, 3), np.float32), "b": np.ones(3, np.float32)})["r"].shape == (4, 3)
    with pytest.raises(ValidationError) as info:
        model.run({"a": np.ones((4, 3), np.float32), "b": np.ones(5, np.float32)})
    assert 'layer 2 "s" (Add-1)' in str(info.value) and "do not broadcast" in str(info.value)


@pytest.mark.parametrize("value", [np.ones(2, np.complex64), np.zeros(2, "M8[s]"), np.array([b"a", b"b"]),
                                   np.zeros(2, [("a", "f4")]), None, [None, 1], [{}, {}]])
def test_an_input_of_dynamic_type_refuses_a_value_of_no_element_type(tmp_path, value):
    layers = [param(0, "x", [2], et="dynamic", precision="UNSPECIFIED"), result(1, "r", [2], precision="UNSPECIFIED")]
    model = irscatter.read_model(write(tmp_path, net(layers, [(0, 0, 1, 0)])))
    with pytest.raises(irscatter.ExecutionError) as info:
        model.run({"x": value})
    assert info.value.label == "feed-dtype" and info.value.layer.name == "x"
    assert model.run({"x": np.arange(2, dtype=np.uint16)})[0].dtype == np.uint16  # any IR type goes
    assert model.run({"x": ["a", "b"]})[0].tolist() == ["a", "b"]  # and text, as a string tensor


@pytest.mark.parametrize(
    "layers, edges, message",
    [
        ([param(0, "x", [2]), add(1, "a", [2]), result(2, "r", [2])], [(0, 0, 1, 0), (1, 2, 2, 0)], "has no incoming edge"),
        ([param(0, "x", [2]), add(1, "a", [2]), add(2, "b", [2]), result(3, "r", [2])],
         [(0, 0, 1, 0), (2, 2, 1, 1), (1, 2, 2, 0), (0, 0, 2, 1), (2, 2, 3, 0)], "cycle"),
        ([param(0, "x", [2]), result(1, "r", [2])], [(0, 0, 1, 0), (0, 0, 1, 0)], "listed twice"),
        ([param(0, "x", [2]), result(1, "r", [2])], [(0, 0, 1, 0), (0, 0, 7, 0)], "layer 7, which does not exist"),
        ([param(0, "x", [2]), result(1, "r", [2])], [(0, 3, 1, 0)], "no output port 3"),
        ([param(0, "x", [2]), param(0, "y", [2]), result(1, "r", [2])], [(0, 0, 1, 0)], "layer id 0 is used again"),
        ([param(0, "x", [2])], [], "neither a Result"),
        ([param(0, "x", [2]), param(1, "y", [2]), add(2, "a", [2]), result(3, "r", [2])],
         [(0, 0, 2, 0), (0, 0, 2, 1), (1, 0, 2, 1), (2, 2, 3, 0)], "more than one incoming edge"),
    ],
)
def test_structural_errors(tmp_path, layers, edges, message):
    with pytest.raises(ValidationError) as info:
        irscatter.read_model(write(tmp_path, net(layers, edges))).compile()
    assert message in str(info.value) and "model.xml" in str(info.value)


@pytest.mark.parametrize("type_name, opset, label, message", [
    ("Add", "opset0", "unknown-opset", 'version="opset0" is not an opset of OpenVINO'),
    ("Subtract", "opset1", "no-kernel", "irscatter has no kernel for Subtract-1 yet"),
    ("Addd", "opset1", "not-in-opset", "opset1 has no operation Addd; did you mean Add?"),
])
def test_an_unresolved_layer_says_why(tmp_path, type_name, opset, label, message):
    with kernel_hidden("Subtract", 1):
        _an_unresolved_layer_says_why(tmp_path, type_name, opset, label, message)


def _an_unresolved_layer_says_why(tmp_path, type_name, opset, label, message):
    layers = [param(0, "x", [2]), layer(1, "g", type_name, opset, inputs=[port(0, "FP32", [2]), port(1, "FP32", [2])],
                                       outputs=[port(2, "FP32", [2])]), result(2, "r", [2])]
    with pytest.raises(ValidationError, match=r'layer 1 "g" \(' + type_name) as info:
        irscatter.read_model(write(tmp_path, net(layers, [(0, 0, 1, 0), (0, 0, 1, 1), (1, 2, 2, 0)]))).compile()
    assert info.value.label == label and message in str(info.value)


def test_bad_attribute_values_name_the_attribute(tmp_path):
    layers = [param(0, "x", [2]), add(1, "a", [2]).replace("numpy", "sideways"), result(2, "r", [2])]
    with pytest.raises(ValidationError, match=r'attribute auto_broadcast="sideways"'):
        irscatter.read_model(write(tmp_path, net(layers, [(0, 0, 1, 0), (0, 0, 1, 1), (1, 2, 2, 0)]))).compile()


def test_wrong_input_count(tmp_path):
    layers = [param(0, "x", [2]), layer(1, "a", "Add", inputs=[port(0, "FP32", [2])], outputs=[port(2, "FP32", [2])]), result(2, "r", [2])]
    with pytest.raises(ValidationError, match=r"takes 2 inputs \(a, b\), the layer has 1"):
        irscatter.read_model(write(tmp_path, net(layers, [(0, 0, 1, 0), (1, 2, 2, 0)]))).compile()


def test_deep_chain_does_not_recurse(tmp_path):
    model = _chain(tmp_path, 3000)
    assert model.run({"x": np.full((2, 2), 1e-300, np.float32)})["out"].shape == (2, 2)


def test_declared_port_contradictions_are_findings_not_failures(tmp_path):
    layers = [param(0, "x", [2, 3]), add(1, "a", [2, 3]), result(2, "r", [2, 3])]
    layers[1] = layers[1].replace('<port id="2" precision="FP32"><dim>2</dim><dim>3</dim>',
                                  '<port id="2" precision="I32"><dim>2</dim><dim>4</dim>')
    model = irscatter.read_model(write(tmp_path, net(layers, [(0, 0, 1, 0), (0, 0, 1, 1), (1, 2, 2, 0)])))
    findings = model.compile().findings
    assert sorted(f.code for f in findings) == ["declared-precision", "declared-shape"]
    shape = next(f for f in findings if f.code == "declared-shape")
    assert shape.layer.name == "a" and "declared dims [2, 4] but the op produces [2, 3]" in shape.message
    assert model.run({"x": np.ones((2, 3), np.float32)})["r"].shape == (2, 3)


def test_openvino_written_models_have_no_findings():
    from pathlib import Path

    for xml in (Path(__file__).resolve().parent.parent / "models").glob("*/model.xml"):
        assert irscatter.read_model(xml).compile().findings == [], xml


def _reshape_after_add(tmp_path):
    """x [4] -> Add(x, x) -> Reshape(.., s) -> Result, the shape s fed at run time."""
    layers = [param(0, "x", [4]), param(1, "s", [1], et="i64", precision="I64"), add(2, "twice", [4]),
              layer(3, "reshaped", "Reshape", data={"special_zero": "false"},
                    inputs=[port(0, "FP32", [4]), port(1, "I64", [1])], outputs=[port(2, "FP32", [-1])]),
              result(4, "out", [-1])]
    edges = [(0, 0, 2, 0), (0, 0, 2, 1), (2, 2, 3, 0), (1, 0, 3, 1), (3, 2, 4, 0)]
    return irscatter.read_model(write(tmp_path, net(layers, edges)))


@pytest.mark.parametrize("watched", [False, True])
def test_a_run_time_error_names_its_layer_whether_or_not_the_run_is_watched(tmp_path, watched):
    model = _reshape_after_add(tmp_path)
    x = np.arange(4, dtype=np.float32)
    assert model.run({"x": x, "s": np.array([4])})["out"].tolist() == [0, 2, 4, 6]
    with pytest.raises(ExecutionError) as info:
        model.run({"x": x, "s": np.array([3])}, hook=(lambda *args: None) if watched else None)
    assert "reshaped" in str(info.value) and "Reshape" in str(info.value)


def test_watched_and_unwatched_runs_agree_on_every_bundled_model():
    from pathlib import Path

    for folder in sorted((Path(__file__).resolve().parent.parent / "models").iterdir()):
        if not (folder / "model.xml").exists():
            continue
        model = irscatter.read_model(folder / "model.xml")
        with np.load(folder / "inputs.npz") as f:
            feeds = {k: f[k] for k in f.files}
        if any("/" in k for k in feeds):  # a stateful model's steps: its first step will do
            feeds = {k.split("/", 1)[1]: v for k, v in feeds.items() if k.startswith("step0/")}
        compiled = model.compile()
        plain = compiled.new_request().run(feeds)
        watched = compiled.new_request().run(feeds, hook=lambda *args: None)
        assert list(plain) == list(watched), folder.name
        for name in plain:
            np.testing.assert_array_equal(plain[name], watched[name], err_msg=f"{folder.name}: {name}")


def test_a_kernel_failing_on_inputs_inference_accepts_is_not_disguised(tmp_path, monkeypatch):
    """A kernel that fails with one of numpy's errors has its op's inference run on the arrays it
    was given; when inference accepts them, the failure is irscatter's own and stays what it is."""
    from irscatter.ops import registry

    def broken(self, *arrays):
        raise ValueError("a kernel bug")

    monkeypatch.setattr(registry.resolve("Add", "opset1").cls, "compute", broken)
    model = _chain(tmp_path, 2)
    for hook in (None, lambda *args: None):
        with pytest.raises(ValueError, match="a kernel bug"):
            model.run({"x": np.ones((2, 2), np.float32)}, hook=hook)


def test_a_failure_before_the_first_step_is_not_hidden_behind_a_missing_layer(tmp_path, monkeypatch):
    """The plain loop makes a kernel's failure its layer's error; one raised before any step has
    begun (in the loop's own preparation) belongs to no layer and surfaces as it is."""
    compiled = _chain(tmp_path, 2).compile()

    def broken():
        raise IndexError("a preparation bug")
    monkeypatch.setattr(compiled, "_plain_steps", broken)
    with pytest.raises(IndexError, match="a preparation bug"):
        compiled.run({"x": np.ones((2, 2), np.float32)})


def test_an_integer_list_attribute_past_64_bits_is_an_attribute_error(tmp_path):
    xml = write(tmp_path, net([param(0, "x", [1, 1, 4, 4]),
                               layer(1, "pool", "MaxPool", data={"kernel": "99999999999999999999,2", "strides": "2,2",
                                                                "pads_begin": "0,0", "pads_end": "0,0"},
                                     inputs=[port(0, "FP32", [1, 1, 4, 4])], outputs=[port(1, "FP32", [1, 1, 2, 2])]),
                               result(2, "r", [1, 1, 2, 2])], [(0, 0, 1, 0), (1, 1, 2, 0)]))
    with pytest.raises(ValidationError) as info:
        irscatter.compile_model(xml)
    assert info.value.label == "attributes" and "64-bit" in str(info.value) and "kernel" in str(info.value)


def test_a_sink_written_without_an_output_port_still_runs(tmp_path):
    """Assign's output port is optional in practice: with none, its value goes nowhere, and the
    state is still written."""
    layers = [param(0, "x", [2]),
              layer(1, "read", "ReadValue", "opset6", data={"variable_id": "v", "variable_type": "f32",
                                                             "variable_shape": "2"},
                    inputs=[port(0, "FP32", [2])], outputs=[port(1, "FP32", [2])]),
              add(2, "sum", [2]),
              layer(3, "write", "Assign", "opset6", data={"variable_id": "v"}, inputs=[port(0, "FP32", [2])]),
              result(4, "r", [2])]
    edges = [(0, 0, 1, 0), (1, 1, 2, 0), (0, 0, 2, 1), (2, 2, 3, 0), (2, 2, 4, 0)]
    compiled = irscatter.compile_model(write(tmp_path, net(layers, edges)))
    x = np.ones(2, np.float32)
    for hook in (None, lambda *args: None):
        compiled.reset_state()
        compiled.run({"x": x}, hook=hook)
        assert compiled.run({"x": x}, hook=hook)["r"].tolist() == [3, 3]  # the state written by the first run


def test_a_zero_dimensional_output_is_an_array_the_caller_may_write(tmp_path):
    """numpy's ufuncs give a scalar for 0-d operands: outputs, records and hooks still see arrays."""
    model = irscatter.read_model(write(tmp_path, net([param(0, "a", []), param(1, "b", []), add(2, "sum", []),
                                                      result(3, "r", [])], [(0, 0, 2, 0), (1, 0, 2, 1), (2, 2, 3, 0)])))
    feeds = {"a": np.array(2, np.float32), "b": np.array(3, np.float32)}
    seen = []
    out = model.run(feeds, hook=lambda layer, inputs, outputs: seen.extend(outputs))["r"]
    assert isinstance(out, np.ndarray) and out.shape == () and out == 5
    out[...] = 0
    assert all(isinstance(v, np.ndarray) for v in seen)
    assert all(isinstance(v, np.ndarray) for v in model.run(feeds, intermediate=True).values())
    assert isinstance(model.run(feeds)["r"], np.ndarray)


def test_a_value_that_overflows_is_a_value_not_a_warning(tmp_path):
    """inf and NaN are what a device computes; `run --check-numerics` says where they appear."""
    import warnings

    layers = [param(0, "a", [2]), param(1, "b", [2]), add(2, "s", [2]), result(3, "r", [2])]
    model = irscatter.read_model(write(tmp_path, net(layers, [(0, 0, 2, 0), (1, 0, 2, 1), (2, 2, 3, 0)])))
    big = np.array([3e38, -3e38], np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a RuntimeWarning would fail the run here
        out = model.run({"a": big, "b": big})
    assert out["r"].tolist() == [np.inf, -np.inf]



@pytest.mark.parametrize("error, label", [(ExecutionError("bad value"), None), (MemoryError(), "out-of-memory")])
def test_a_failing_kernel_is_the_error_of_its_layer_whether_or_not_the_run_is_watched(tmp_path, error, label):
    compiled = _chain(tmp_path, 2).compile()

    def failing(*args, **kwargs):
        raise error
    compiled.plan.steps[1].compute = failing  # before the first run, which prepares the plain loop's calls
    for watch in ({}, {"hook": lambda *a: None}, {"timings": []}):
        with pytest.raises(ExecutionError) as caught:
            compiled.run({"x": np.ones((2, 2), np.float32)}, **watch)
        assert caught.value.layer.name == "a2" and caught.value.label == label
