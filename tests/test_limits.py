"""Resource limits: sizes a file asks for are refused before anything of that size is read,
parsed or allocated, with an error naming the layer and port."""

import numpy as np
import pytest
from helpers import layer, net, param, port, result

import irscatter
from irscatter import limits


def _one(type_, version, data, ins, out_dims, extra_layers=(), edges=(), weights=b""):
    """Parameters/Consts given in `extra_layers`, then the layer under test (id 9) and a Result."""
    layers = list(extra_layers) + [
        layer(9, "under_test", type_, version, data, inputs=[port(i, p, d) for i, (p, d) in enumerate(ins)],
              outputs=[port(len(ins), ins[0][0] if type_ != "Range" else "I64", out_dims)]),
        result(10, "out", out_dims, ins[0][0] if type_ != "Range" else "I64"),
    ]
    return irscatter.parse_model(net(layers, [*edges, (9, len(ins), 10, 0)]), weights)


def _const(lid, name, values, et="i64", precision="I64", offset=0):
    values = np.asarray(values, dtype=np.int64 if et == "i64" else np.float32)
    dims = list(values.shape)
    return layer(lid, name, "Const", data={"element_type": et, "shape": ",".join(map(str, dims)), "offset": offset,
                                           "size": values.nbytes}, outputs=[port(0, precision, dims)]), values.tobytes()


def test_a_parameter_of_a_trillion_elements_is_refused_at_preparation():
    model = irscatter.parse_model(net([param(0, "x", [10**6, 10**6]), result(1, "y", [10**6, 10**6])], [(0, 0, 1, 0)]))
    with pytest.raises(irscatter.ValidationError, match="over the limit") as err:
        model.compile()
    assert err.value.label == "tensor-limit" and err.value.layer.id == 0 and err.value.port == "output 0"


def test_a_const_whose_shape_overflows_64_bits_is_a_size_mismatch_not_a_crash():
    big = 2**40
    xml = net([layer(0, "w", "Const", data={"element_type": "f32", "shape": f"{big},{big}", "offset": 0, "size": 16},
                     outputs=[port(0, "FP32", [big, big])]), result(1, "y", [big, big])], [(0, 0, 1, 0)])
    with pytest.raises(irscatter.LoadError) as err:
        irscatter.parse_model(xml, bytes(16))
    assert err.value.label == "const-size" and err.value.layer.id == 0


def test_range_with_constant_bounds_is_checked_by_inference():
    xml_layers = [_const(i, name, value, offset=8 * i)[0] for i, (name, value) in enumerate(
        (("start", 0), ("stop", 10**15), ("step", 1)))]
    weights = np.array([0, 10**15, 1], np.int64).tobytes()
    model = _one("Range", "opset4", {"output_type": "i64"}, [("I64", []), ("I64", []), ("I64", [])], [-1],
                 xml_layers, [(0, 0, 9, 0), (1, 0, 9, 1), (2, 0, 9, 2)], weights)
    with pytest.raises(irscatter.ValidationError, match="over the limit") as err:
        model.compile()
    assert err.value.label == "tensor-limit" and err.value.layer.id == 9


@pytest.mark.parametrize("stop, label", [(1e15, "tensor-limit"), (float("inf"), "range-step"),
                                         (float("nan"), "range-step")])
def test_range_with_fed_bounds_is_checked_before_allocating(stop, label):
    params = [param(i, n, [], "f32", "FP32") for i, n in enumerate(("start", "stop", "step"))]
    model = irscatter.parse_model(net(params + [
        layer(9, "r", "Range", "opset4", {"output_type": "f32"}, inputs=[port(i, "FP32", []) for i in range(3)],
              outputs=[port(3, "FP32", [-1])]), result(10, "out", [-1])],
        [(0, 0, 9, 0), (1, 0, 9, 1), (2, 0, 9, 2), (9, 3, 10, 0)]))
    feeds = {"start": np.float32(0), "stop": np.float32(stop), "step": np.float32(1)}
    with pytest.raises(irscatter.ExecutionError) as err:
        model.run(feeds)
    assert err.value.label == label and err.value.layer.id == 9


def test_broadcast_to_a_fed_huge_shape_is_refused():
    model = irscatter.parse_model(net([
        param(0, "x", [1], "f32", "FP32"), param(1, "shape", [3], "i64", "I64"),
        layer(9, "b", "Broadcast", "opset3", {"mode": "numpy"}, inputs=[port(0, "FP32", [1]), port(1, "I64", [3])],
              outputs=[port(2, "FP32", [-1, -1, -1])]), result(10, "out", [-1, -1, -1])],
        [(0, 0, 9, 0), (1, 0, 9, 1), (9, 2, 10, 0)]))
    with pytest.raises(irscatter.ExecutionError, match="over the limit") as err:
        model.run({"x": np.ones(1, np.float32), "shape": np.array([10**5, 10**5, 100])})
    assert err.value.label == "tensor-limit" and err.value.layer.id == 9


def test_limits_can_be_changed_for_a_block_and_come_back():
    before = limits.current()
    xml = net([param(0, "x", [64, 64]), result(1, "y", [64, 64])], [(0, 0, 1, 0)])
    with limits.using(tensor_bytes=1000):
        with pytest.raises(irscatter.ValidationError, match="tensor_bytes"):
            irscatter.parse_model(xml).compile()
    assert limits.current() == before
    irscatter.parse_model(xml).compile()


@pytest.mark.parametrize("name, value, label", [("xml_bytes", 200, "xml-size"), ("xml_elements", 5, "xml-elements"),
                                                ("xml_depth", 4, "xml-depth")])
def test_document_limits(tmp_path, name, value, label):
    xml = net([param(0, "x", [2]), result(1, "y", [2])], [(0, 0, 1, 0)])
    path = tmp_path / "m.xml"
    path.write_text(xml)
    with limits.using(**{name: value}):
        for load in (lambda: irscatter.parse_model(xml), lambda: irscatter.read_model(path)):
            with pytest.raises(irscatter.SecurityError) as err:
                load()
            assert err.value.label == label


def _nested_bodies(depth: int) -> str:
    """TensorIterator layers nested `depth` deep, each body holding the next one."""
    inner = net([param(0, "p", [1]), result(1, "r", [1])], [(0, 0, 1, 0)])
    body = inner[inner.index("<layers>"): inner.index("</net>")]
    for _ in range(depth):
        ti = (f'<layer id="0" name="ti" type="TensorIterator" version="opset1"><output>{port(0, "FP32", [1])}</output>'
              f"<body>{body}</body></layer>")
        body = f"<layers>{ti}{result(1, 'r', [1])}</layers><edges><edge from-layer=\"0\" from-port=\"0\" to-layer=\"1\" to-port=\"0\"/></edges>"
    return f'<?xml version="1.0"?><net name="t" version="11">{body}</net>'


def test_sub_graph_nesting_is_bounded():
    irscatter.parse_model(_nested_bodies(limits.current().body_depth))
    with pytest.raises(irscatter.LoadError, match="nested more than") as err:
        irscatter.parse_model(_nested_bodies(limits.current().body_depth + 1))
    assert err.value.label == "body-depth"


def test_a_flood_of_tiny_elements_is_refused_before_the_tree_is_built(monkeypatch):
    """Half a gigabyte of `<a/>` would build a tree of many gigabytes: the markup is
    counted first (the parser must not even be called)."""
    from irscatter.ir import loader

    doc = b'<net name="n" version="11"><layers/>' + b"<a/>" * 100_000 + b"</net>"

    def no_parse(*args, **kwargs):
        raise AssertionError("the parser ran")

    monkeypatch.setattr(loader.etree, "fromstring", no_parse)
    with limits.using(xml_elements=10_000), pytest.raises(irscatter.SecurityError) as err:
        irscatter.parse_model(doc)
    assert err.value.label == "xml-elements"


def test_an_empty_tensor_whose_other_dims_numpy_cannot_describe_is_refused():
    from irscatter.limits import tensor_size_problem

    assert tensor_size_problem([1, 4, 0, 576460752303423504], 4) is not None  # found by the model fuzzer
    assert tensor_size_problem([0, 10**10], 4) is None  # empty and describable: fine
    from irscatter.ops import registry
    from irscatter.ops.functional import call

    with pytest.raises(irscatter.IRError, match="more than numpy can describe"):
        call(registry.find("Broadcast", "opset3"), [np.float32(0), np.array([1, 4, 0, 576460752303423504])],
             {"mode": "numpy"})
