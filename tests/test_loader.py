"""Loading IR files: round trips of OpenVINO-written models, v10/v11, dynamic shapes,
sub-graphs, bare layers, and the errors for malformed files."""

import json
import mmap
import os
import threading
import time

import ml_dtypes
import numpy as np
import pytest
from helpers import layer, net, param, port, result, save_ov, write

import irscatter
from irscatter.errors import FileAccessError, LoadError
from irscatter.ir.element_types import ElementType
from irscatter.ir.graph import new_layer, new_port, split_names
from irscatter.ir.loader import POPULATED_COPY_BYTES, aligned_copy
from irscatter.ir.shapes import PartialShape

ov = pytest.importorskip("openvino")
import openvino.opset15 as ops  # noqa: E402


def _simple_model():
    x = ops.parameter([2, -1], ov.Type.f32, name="x")
    y = ops.add(x, ops.constant(np.arange(6, dtype=np.float32).reshape(2, 3)))
    y.output(0).get_tensor().set_names({"y", "y_alias"})
    return ov.Model([ops.result(y)], [x], "simple")


@pytest.mark.parametrize("version", ["v10", "v11"])
def test_round_trip_keeps_structure(tmp_path, version):
    xml = save_ov(_simple_model(), tmp_path, version=version)
    model = irscatter.read_model(xml)
    assert model.ir_version == int(version[1:])
    assert [layer.type for layer in model.layers] == ["Parameter", "Const", "Add", "Result"]
    p = model.parameters[0]
    assert p.attrs["element_type"] == "f32" and str(p.outputs[0].shape) == "[2, ?]"
    add_layer = model.layers[2]
    assert add_layer.version == "opset1" and add_layer.attrs == {"auto_broadcast": "numpy"}
    assert [pt.id for pt in add_layer.inputs] == [0, 1] and add_layer.outputs[0].id == 2
    assert add_layer.outputs[0].names == ("y", "y_alias")
    assert len(model.edges) == 3
    const = model.layers[1]
    assert np.array_equal(const.const_value, np.arange(6, dtype=np.float32).reshape(2, 3))
    feeds = {"x": np.ones((2, 3), np.float32)}
    assert np.array_equal(model.run(feeds)["y"], np.arange(6).reshape(2, 3) + 1)


def test_json_describes_graph_without_weights(tmp_path):
    model = irscatter.read_model(save_ov(_simple_model(), tmp_path))
    doc = json.loads(model.model_dump_json())
    assert doc["layers"][0]["outputs"][0]["shape"] == "2,?"
    const = doc["layers"][1]
    assert const["type"] == "Const" and set(const) >= {"attrs", "outputs"}
    assert "value" not in const and len(model.model_dump_json()) < 4000
    assert irscatter.Model.model_validate_json(model.model_dump_json()).layers[2].type == "Add"
    assert "Parameter" in repr(model.layers[0])


def test_constants_are_memory_mapped_views(tmp_path):
    model = irscatter.read_model(save_ov(_simple_model(), tmp_path))
    value = model.layers[1].const_value
    assert not value.flags.owndata and not value.flags.writeable


def _matmul_by_weight_at(tmp_path, offset: int, weight: np.ndarray):
    """x[2,3] @ W[3,4], W a Const at byte `offset` of the .bin (the bytes before it zero)."""
    xml = net([param(0, "x", (2, 3)),
               layer(1, "w", "Const", data={"element_type": "f32", "shape": "3,4", "offset": offset,
                                            "size": weight.nbytes}, outputs=[port(0, "FP32", (3, 4))]),
               layer(2, "mm", "MatMul", data={"transpose_a": "false", "transpose_b": "false"},
                     inputs=[port(0, "FP32", (2, 3)), port(1, "FP32", (3, 4))], outputs=[port(2, "FP32", (2, 4))]),
               result(3, "y", (2, 4))],
              [(0, 0, 2, 0), (1, 0, 2, 1), (2, 2, 3, 0)])
    return irscatter.read_model(write(tmp_path, xml, bytes(offset) + weight.tobytes()))


def test_a_weight_at_a_misaligned_offset_is_copied_once_to_an_aligned_array(tmp_path, monkeypatch):
    """An f32 weight at an offset of 1 mod 4 is no aligned view of the .bin: numpy's matmul
    would leave BLAS for its slow loop on every run. Where BLAS cannot be called on it directly
    (`direct_blas.py`), the Const's value is an aligned copy, made once, read-only like the
    views; MatMul's answer is that of aligned operands, bit for bit."""
    from irscatter.ops.common import direct_blas

    monkeypatch.setattr(direct_blas, "available", lambda dtype: False)
    weight = np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4)
    model = _matmul_by_weight_at(tmp_path, 5, weight)
    compiled = model.compile()
    x = np.array([[0.1, 0.2, 0.3], [-1.5, 2.5, 1e-3]], np.float32)
    first = compiled.run({"x": x})["y"]
    value = model.layers[1].const_value
    assert value.flags.aligned and not value.flags.writeable and value.flags.owndata
    assert model.layers[1].const_value is value  # copied once, not per use
    seen = []
    watched = compiled.run({"x": x}, hook=lambda layer, inputs, outputs: seen.append(inputs[1]))
    assert seen[0].base is value  # the array MatMul's kernel was handed (a hook sees a read-only view of it)
    assert watched["y"].tobytes() == first.tobytes() == np.matmul(x, weight).tobytes()


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64, np.float16, ml_dtypes.bfloat16], ids=str)
@pytest.mark.parametrize("large", [False, True], ids=["small", "large"])
def test_the_aligned_copy_of_a_misaligned_weight(dtype, large):
    """A large copy gets an anonymous mapping of its own, filled with pages at once (where the
    system offers MAP_POPULATE); a small one numpy's copy. Either holds the same bits, aligned,
    and leaves the weights as they were."""
    itemsize = np.dtype(dtype).itemsize
    count = (POPULATED_COPY_BYTES // itemsize + 7) if large else 5
    weights = np.random.default_rng(3).integers(0, 256, count * itemsize + 1, dtype=np.uint8)
    before = weights.copy()
    view = weights[1:].view(dtype).reshape(-1, 1)
    assert not view.flags.aligned
    copy = aligned_copy(view)
    assert copy.flags.aligned and copy.shape == view.shape and copy.dtype == view.dtype
    assert copy.tobytes() == view.tobytes()
    np.testing.assert_array_equal(weights, before)
    if large and hasattr(mmap, "MAP_POPULATE"):
        assert copy.ctypes.data % mmap.PAGESIZE == 0 and not copy.flags.owndata


def _large_matmul_model(tmp_path, offsets: list[int], shape=(512, 512)):
    """x[2, 512] @ W_1^T ... @ W_k^T, each W an f32 Const of `shape` (a megabyte) at its byte
    offset of the .bin (zeros between them); returns the model and the weights."""
    rng = np.random.default_rng(8)
    weights = [rng.standard_normal(shape).astype(np.float32) for _ in offsets]
    rows, columns = shape
    layers, edges, blob = [param(0, "x", (2, rows))], [], b""
    source = (0, 0)
    for i, (offset, weight) in enumerate(zip(offsets, weights)):
        blob += bytes(offset - len(blob)) + weight.tobytes()
        const, product = 2 * i + 1, 2 * i + 2
        layers.append(layer(const, f"w{i}", "Const", data={"element_type": "f32", "shape": f"{rows},{columns}",
                                                            "offset": offset, "size": weight.nbytes},
                            outputs=[port(0, "FP32", shape)]))
        layers.append(layer(product, f"mm{i}", "MatMul", data={"transpose_a": "false", "transpose_b": "true"},
                            inputs=[port(0, "FP32", (2, rows)), port(1, "FP32", shape)],
                            outputs=[port(2, "FP32", (2, rows))]))
        edges += [(*source, product, 0), (const, 0, product, 1)]
        source = (product, 2)
    layers.append(result(2 * len(offsets) + 1, "y", (2, rows)))
    edges.append((*source, 2 * len(offsets) + 1, 0))
    return irscatter.read_model(write(tmp_path, net(layers, edges), blob)), weights


def test_a_large_misaligned_weight_is_read_from_the_file_into_memory_of_its_own(tmp_path, monkeypatch):
    """Not copied from the memory map: its bytes are read from the open file, so the mapped pages
    are never touched (they would count as memory besides the copy)."""
    from irscatter.ir import files

    model, (weight,) = _large_matmul_model(tmp_path, [7])
    reads = []
    monkeypatch.setattr(files.WeightsFile, "read_into",
                        lambda self, offset, target, read=files.WeightsFile.read_into: reads.append(offset)
                        or read(self, offset, target))
    value = model.layers[1].const_value
    assert (reads == [7]) == files.WeightsFile.reads_into
    assert value.flags.aligned and not value.flags.writeable and value.tobytes() == weight.tobytes()


def test_a_file_system_without_positioned_reads_gets_the_copy_from_the_mapping(tmp_path, monkeypatch):
    import errno

    from irscatter.ir import files

    model, (weight,) = _large_matmul_model(tmp_path, [7])

    def refused(*args):
        raise OSError(errno.EINVAL, "Invalid argument")
    monkeypatch.setattr(files.os, "preadv", refused, raising=False)
    value = model.layers[1].const_value
    assert value.flags.aligned and value.tobytes() == weight.tobytes()


def test_a_weights_file_cut_short_before_its_first_read_is_one_clear_error(tmp_path):
    model, _ = _large_matmul_model(tmp_path, [7])
    if not irscatter.ir.files.WeightsFile.reads_into:
        pytest.skip("no positioned reads on this system")
    os.truncate(tmp_path / "model.bin", 1 << 20)
    with pytest.raises(irscatter.FileAccessError) as error:
        model.layers[1].const_value  # noqa: B018
    assert error.value.label == "weights-changed"


def test_the_large_weights_of_a_first_run_are_decoded_on_the_threads(tmp_path, monkeypatch):
    """Shares of their bytes, side by side, where their copies are made; the run's answer is the
    one of the weights as they are."""
    from irscatter.ops.common import direct_blas, threads

    monkeypatch.setattr(direct_blas, "available", lambda dtype: False)  # (else the products read them where they lie)
    monkeypatch.setattr(threads, "_policy", "split")
    monkeypatch.setattr(threads, "CORES", max(threads.CORES, 2))
    size = 512 * 512 * 4
    model, weights = _large_matmul_model(tmp_path, [1 + i * (size + 3) for i in range(5)])  # 5 MB: worth the threads
    shares = []
    monkeypatch.setattr(threads, "run", lambda tasks, run=threads.run: shares.append(len(tasks)) or run(tasks))
    x = np.random.default_rng(1).standard_normal((2, 512)).astype(np.float32)
    y = model.compile().run({"x": x})["y"]
    assert shares and shares[0] == min(threads.CORES, 5)
    expected = x
    for weight in weights:
        expected = np.matmul(expected, weight.T)
    np.testing.assert_allclose(y, expected, rtol=1e-4, atol=1e-3)
    assert all(layer.const_data._value is not None for layer in model.layers if layer.type == "Const")


def test_a_weight_at_an_aligned_offset_stays_a_view_of_the_weights(tmp_path):
    weight = np.ones((3, 4), np.float32)
    value = _matmul_by_weight_at(tmp_path, 8, weight).layers[1].const_value
    assert value.flags.aligned and not value.flags.owndata and np.array_equal(value, weight)


def test_a_const_ops_attributes_are_those_its_weights_were_found_by(tmp_path):
    """A Const with weights makes its schema's instance when first asked for, from the loader's
    reading of its four attributes."""
    from irscatter.ops.infrastructure.constant import Const

    model = irscatter.read_model(save_ov(_simple_model(), tmp_path))
    compiled = model.compile()
    layer = model.layers[1]
    op = compiled.graph.op(layer.id)
    assert isinstance(op, Const) and "attrs" not in vars(op)
    attrs = op.attrs
    assert (attrs.element_type, attrs.shape, attrs.offset, attrs.size) == \
        (layer.const_data.etype, layer.attrs["shape"], int(layer.attrs["offset"]), int(layer.attrs["size"]))
    assert op.attrs is attrs and op.attrs == Const.Attrs.model_validate(layer.attrs)
    with pytest.raises(AttributeError):
        op.no_such_attribute  # noqa: B018


def test_preparing_a_model_leaves_its_weights_unread(tmp_path):
    """Only constants of up to a page travel with inference; a weight tensor is decoded (and
    its pages of the `.bin` read) when a run first needs it."""
    x = ops.parameter([3, 2048], ov.Type.f32, name="x")
    weights = np.arange(2048, dtype=np.float32)
    y = ops.add(ops.reshape(x, ops.constant(np.array([2048, 3], np.int64)), False),
                ops.constant(weights.reshape(2048, 1)))
    model = irscatter.read_model(save_ov(ov.Model([ops.result(y)], [x]), tmp_path))
    model.compile()
    consts = {layer.attrs["shape"].replace(" ", ""): layer._const for layer in model.layers_of_type("Const")}
    assert consts["2048,1"]._value is None  # 8 KB: not read
    assert consts["2"]._value is not None  # the target shape: carried by inference
    out = model.run({"x": np.zeros((3, 2048), np.float32)})
    assert consts["2048,1"]._value is not None
    np.testing.assert_array_equal(next(iter(out.values())), np.repeat(weights[:, None], 3, axis=1))


@pytest.mark.parametrize("cls", [irscatter.Model, irscatter.ir.graph.PortMapEntry])
def test_trusted_construction_matches_model_construct(cls):
    """The loader's fast constructor must build what pydantic's own would, defaults included."""
    from irscatter.ir.graph import trusted

    fields = {irscatter.Model: {"name": "m"},
              irscatter.ir.graph.PortMapEntry: {"external_port_id": 1, "internal_layer_id": 2}}[cls]
    fast, slow = trusted(cls, **fields), cls.model_construct(**fields)
    assert fast == slow and fast.model_dump() == slow.model_dump()
    assert fast.model_fields_set == slow.model_fields_set
    assert fast.__pydantic_private__ == slow.__pydantic_private__
    if cls is irscatter.Model:
        assert fast.layers is not trusted(cls, **fields).layers  # default factories run per instance


def test_spelled_out_constructors_match_validated_ones():
    from irscatter.ir.graph import new_edge, new_layer, new_port
    from irscatter.ir.shapes import PartialShape

    port_fields = (2, irscatter.ElementType.f16, ("t",), PartialShape.of([1, 3]), {"k": "v"})
    port = new_port(*port_fields)
    assert port == irscatter.Port(*port_fields)
    assert new_edge(1, 2, 3, 4) == irscatter.Edge(1, 2, 3, 4)
    layer_fields = (5, "n", "Add", "opset1", {"a": "b"}, {"c": "d"}, [port], [port], {"r": "s"}, {}, 9)
    layer = new_layer(*layer_fields)
    assert layer == irscatter.Layer(*layer_fields) and layer.const_data is None


def test_dynamic_shapes(tmp_path):
    x = ops.parameter(ov.PartialShape([ov.Dimension(1, 10), -1, ov.Dimension(2, -1)]), ov.Type.f32, name="x")
    r = ops.parameter(ov.PartialShape.dynamic(), ov.Type.f32, name="r")
    model = irscatter.read_model(save_ov(ov.Model([ops.result(x), ops.result(r)], [x, r], "d"), tmp_path))
    px, pr = model.parameters
    assert px.attrs["shape"] == "1..10,?,2.."
    assert px.outputs[0].shape.dims[0].max is None  # port dims only say -1
    compiled = model.compile()
    assert str(compiled.inputs[0].shape) == "[1..10, ?, 2..]"
    assert compiled.inputs[1].shape.dims is None
    out = model.run({"x": np.zeros((3, 4, 5), np.float32), "r": np.zeros((2,), np.float32)})
    assert [v.shape for v in out.values()] == [(3, 4, 5), (2,)]


def test_sub_graph_layers_load_with_bodies(tmp_path):
    # If: then-body adds one, else-body passes through
    cond = ops.parameter([], ov.Type.boolean, name="cond")
    x = ops.parameter([2], ov.Type.f32, name="x")
    tx = ops.parameter([2], ov.Type.f32, name="tx")
    then_body = ov.Model([ops.result(ops.add(tx, ops.constant(np.float32(1))))], [tx], "then")
    ex = ops.parameter([2], ov.Type.f32, name="ex")
    else_body = ov.Model([ops.result(ex)], [ex], "else")
    node = ops.if_op(cond)
    node.set_then_body(then_body)
    node.set_else_body(else_body)
    node.set_input(x.output(0), tx, ex)
    out = node.set_output(then_body.get_results()[0], else_body.get_results()[0])
    model = irscatter.read_model(save_ov(ov.Model([ops.result(out)], [cond, x], "if"), tmp_path))
    if_layer = next(layer for layer in model.layers if layer.type == "If")
    assert set(if_layer.bodies) == {"then_body", "else_body"}
    then = if_layer.bodies["then_body"]
    assert [layer.type for layer in then.graph.layers].count("Add") == 1
    assert then.inputs[0].external_port_id == 1
    assert then.outputs and then.outputs[0].internal_layer_id in {layer.id for layer in then.graph.layers}


def test_loop_loads_port_map_and_back_edges(tmp_path):
    trip = ops.constant(np.int64(3))
    cond = ops.constant(True)
    x = ops.parameter([2], ov.Type.f32, name="x")
    bx = ops.parameter([2], ov.Type.f32, name="bx")
    body_cond = ops.constant(True)
    nxt = ops.add(bx, ops.constant(np.float32(1)))
    body = ov.Model([ops.result(body_cond), ops.result(nxt)], [bx], "body")
    loop = ops.loop(trip, cond)
    loop.set_function(body)
    loop.set_special_body_ports([-1, 0])
    loop.set_merged_input(bx, x.output(0), body.get_results()[1].input_value(0))
    out = loop.get_iter_value(nxt.output(0), -1)
    model = irscatter.read_model(save_ov(ov.Model([ops.result(out)], [x], "loop"), tmp_path))
    loop_layer = next(layer for layer in model.layers if layer.type == "Loop")
    body_desc = loop_layer.bodies["body"]
    assert body_desc.back_edges, "the merged input becomes a back edge"
    assert any(e.purpose == "execution_condition" for e in body_desc.outputs)
    (out,) = model.run({"x": np.array([1.0, -1.0], np.float32)}).values()
    np.testing.assert_array_equal(out, [4.0, 2.0])  # three iterations of + 1


def test_bare_layer_and_net_without_edges(tmp_path):
    text = """<layer id="3" name="s" type="ScatterNDUpdate" version="opset15">
        <data reduction="sum"/>
        <input><port id="0" precision="FP32"><dim>4</dim></port>  <!-- data -->
               <port id="1" precision="I32"><dim>2</dim><dim>1</dim></port></input>
        <output><port id="2" precision="FP32"><dim>4</dim></port></output></layer>"""
    bare = irscatter.parse_layer(text)
    assert bare.type == "ScatterNDUpdate" and bare.attrs == {"reduction": "sum"}
    assert [str(p.shape) for p in bare.inputs] == ["[4]", "[2, 1]"]
    edgeless = irscatter.read_model(write(tmp_path, f'<net name="x" version="11"><layers>{text}</layers></net>'))
    assert edgeless.layers[0].name == "s" and edgeless.edges == []


def test_names_with_escaped_commas():
    assert split_names(r"a,b\,c, d") == ("a", "b,c", "d")


def test_rt_info_is_kept(tmp_path):
    model = irscatter.read_model(save_ov(_simple_model(), tmp_path))
    assert "OpenVINO Runtime" in model.rt_info


# --- malformed files -----------------------------------------------------------------------


def _load_error(tmp_path, xml, weights=None):
    with pytest.raises(LoadError) as info:
        irscatter.read_model(write(tmp_path, xml, weights))
    return info.value


def test_parse_errors_carry_line_and_column(tmp_path):
    err = _load_error(tmp_path, '<net version="11">\n<layers>\n<layer id="0"\n</net>')
    assert err.line == 4 and err.column is not None and "malformed XML" in str(err)


@pytest.mark.parametrize(
    "xml, message",
    [
        ('<model version="11"/>', "root element is <model>"),
        ("<net/>", "no version"),
        ('<net version="7"><layers/></net>', "not supported"),
        ('<net version="11"><layers><layer name="a" type="Add" version="opset1"/></layers></net>', 'missing mandatory attribute "id"'),
        ('<net version="11"><layers><layer id="x" name="a" type="Add" version="opset1"/></layers></net>', 'id="x"'),
        (net([layer(0, "p", "Parameter", data={"shape": "2", "element_type": "f32"}, outputs=[port(0, "FP32", [-2])])], []), "must be an integer >= -1"),
        (net([layer(0, "p", "Parameter", data={"shape": "2", "element_type": "f32"}, outputs=[port(0, "FP32", ["\u0663"])])], []),
         "must be an integer >= -1"),  # (Python's int() reads the Arabic-Indic three; OpenVINO does not)
        (net([layer(0, "p", "Parameter", data={"shape": "2", "element_type": "f32"}, outputs=[port(0, "FP32", ["1_0"])])], []),
         "must be an integer >= -1"),
        (net([layer(0, "p", "Parameter", outputs=[port(0, "FP99", [2])])], []), '"FP99" is not a port precision'),
        (net([layer(0, "p", "Parameter", outputs=["<port><dim>1</dim></port>"])], []), 'missing mandatory attribute "id"'),
        ('<net version="11"><layers/><edges><edge from-layer="0" to-layer="1" to-port="0"/></edges></net>', '"from-port"'),
    ],
)
def test_structural_load_errors(tmp_path, xml, message):
    err = _load_error(tmp_path, xml)
    assert message in str(err) and err.file and err.file.endswith("model.xml")


def _const_net(data: dict) -> str:
    return net([layer(0, "w", "Const", data=data, outputs=[port(0, "FP32", [2, 3])]), result(1, "r", [2, 3])], [(0, 0, 1, 0)])


def test_const_past_the_end_of_the_bin(tmp_path):
    err = _load_error(tmp_path, _const_net({"element_type": "f32", "shape": "2,3", "offset": "8", "size": "24"}), bytes(24))
    assert str(err).count("24") >= 2 and "offset 8" in str(err) and "has 24 bytes" in str(err)
    assert 'layer 0 "w" (Const-1)' in str(err)


def test_an_empty_const_written_as_one_byte_loads_as_openvino_writes_it(tmp_path):
    """OpenVINO's serializer gives an empty constant size="1" and one byte in the .bin."""
    text = net([layer(0, "w", "Const", data={"element_type": "i64", "shape": "0", "offset": "0", "size": "1"},
                      outputs=[port(0, "I64", [0])]), result(1, "r", [0], precision="I64")], [(0, 0, 1, 0)])
    xml = write(tmp_path, text)
    xml.with_suffix(".bin").write_bytes(b"\0")
    (value,) = irscatter.read_model(xml).run({}).values()
    assert value.shape == (0,) and value.dtype == np.int64
    xml.with_suffix(".bin").write_bytes(b"")  # one byte past the end of the file is still past it
    with pytest.raises(LoadError, match="past the end"):
        irscatter.read_model(xml)


def test_const_size_mismatch(tmp_path):
    err = _load_error(tmp_path, _const_net({"element_type": "f32", "shape": "2,3", "offset": "0", "size": "20"}), bytes(64))
    assert "size=20" in str(err) and "needs 24 bytes" in str(err) and "has 64 bytes" in str(err)


def test_const_without_bin(tmp_path):
    err = _load_error(tmp_path, _const_net({"element_type": "f32", "shape": "2,3", "offset": "0", "size": "24"}))
    assert "no weights file" in str(err)


@pytest.mark.parametrize("data, message", [
    ({"element_type": "f99", "shape": "2,3", "offset": "0", "size": "24"}, "not an element type"),
    ({"element_type": "f32", "shape": "2,x", "offset": "0", "size": "24"}, "not a non-negative integer"),
    ({"element_type": "f32", "shape": "2,3", "offset": "-1", "size": "24"}, 'offset="-1"'),
    ({"element_type": "f32", "shape": "2,3", "size": "24"}, '"offset"'),
])
def test_bad_const_attributes(tmp_path, data, message):
    err = _load_error(tmp_path, _const_net(data), bytes(64))
    assert message in str(err)


def test_missing_files(tmp_path):
    with pytest.raises(FileAccessError, match="model file not found"):
        irscatter.read_model(tmp_path / "none.xml")
    xml = write(tmp_path, net([param(0, "x", [2]), result(1, "r", [2])], [(0, 0, 1, 0)]))
    with pytest.raises(FileAccessError, match="weights file not found"):
        irscatter.read_model(xml, tmp_path / "none.bin")
    assert irscatter.read_model(xml).bin_path is None  # no Const, no .bin needed


needs_fifo = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes are POSIX")


@needs_fifo
def test_a_weights_file_that_is_not_a_regular_file_is_refused_by_kind(tmp_path):
    xml = write(tmp_path, net([param(0, "x", [2]), result(1, "r", [2])], [(0, 0, 1, 0)]))
    os.mkfifo(tmp_path / "pipe.bin")  # (opened as it is, it would wait for a writer for ever)
    with pytest.raises(FileAccessError, match="weights file is a pipe, not a regular file: it is memory-mapped"):
        irscatter.read_model(xml, tmp_path / "pipe.bin")
    if os.path.exists("/dev/zero"):
        with pytest.raises(FileAccessError, match="is a character device"):
            irscatter.read_model(xml, "/dev/zero")


@needs_fifo
def test_a_model_file_may_be_a_pipe_whose_writer_starts_in_time(tmp_path):
    text = net([param(0, "x", [2]), result(1, "r", [2])], [(0, 0, 1, 0)])
    pipe = tmp_path / "model.xml"
    os.mkfifo(pipe)
    writer = threading.Timer(0.2, pipe.write_text, (text,))
    writer.start()
    assert [layer.name for layer in irscatter.read_model(pipe).layers] == ["x", "r"]
    writer.join()
    started = time.monotonic()
    with irscatter.limits.using(pipe_wait_seconds=1), pytest.raises(FileAccessError) as caught:
        irscatter.read_model(pipe)  # nobody writes now
    assert caught.value.label == "pipe-wait" and "nothing wrote into within 1 seconds" in str(caught.value)
    assert time.monotonic() - started < 30


def test_loading_leaves_the_collector_as_it_found_it_with_the_graph_in_the_oldest_generation(tmp_path):
    import gc

    xml = write(tmp_path, net([param(0, "x", [2]), result(1, "r", [2])], [(0, 0, 1, 0)]))
    assert gc.isenabled()
    model = irscatter.read_model(xml)
    assert gc.isenabled() and gc.get_count()[0] < 100  # nothing left young for a pass to walk
    assert model.layers[0].name == "x"
    gc.disable()
    try:
        irscatter.read_model(xml)
        assert not gc.isenabled()  # a caller's choice to hold the collector stands
    finally:
        gc.enable()


def test_a_large_document_gives_the_parse_trees_heap_back(tmp_path, monkeypatch):
    from irscatter.ir import loader

    xml = write(tmp_path, net([param(0, "x", [2]), result(1, "r", [2])], [(0, 0, 1, 0)]))
    calls = []
    monkeypatch.setattr(loader, "_return_freed_heap", lambda: calls.append(True))
    irscatter.read_model(xml)
    assert calls == []  # a small document: nothing worth the call
    monkeypatch.setattr(loader, "_LARGE_DOCUMENT", 16)
    assert irscatter.read_model(xml).layers[1].name == "r"
    assert calls == [True]


def test_returning_the_freed_heap_is_safe_to_call_anywhere():
    from irscatter.ir import loader

    trim = loader._malloc_trim()
    assert trim is None or callable(trim)  # glibc has it; other C libraries do without
    loader._return_freed_heap()


@pytest.mark.parametrize("etype", ["u1", "u2", "u3", "u6", "i4", "u4", "nf4", "f4e2m1", "f8e4m3", "f16", "f32", "i64"])
def test_an_empty_const_of_any_type_decodes_to_an_empty_array(tmp_path, etype):
    xml = net([layer(0, "w", "Const", data={"element_type": etype, "shape": "0,3", "offset": "0", "size": "0"},
                     outputs=[port(0, None, [0, 3])]), result(1, "r", [0, 3], precision=None)], [(0, 0, 1, 0)])
    value = irscatter.read_model(write(tmp_path, xml, bytes(8))).layers[0].const_value
    assert value.shape == (0, 3)


@pytest.mark.parametrize("etype", ["u1", "f8e4m3", "f16", "string"])
def test_an_empty_const_whose_other_dims_numpy_cannot_describe_is_refused(tmp_path, etype):
    err = _load_error(tmp_path, _const_net({"element_type": etype, "shape": "99999999999999999999,0", "offset": "0",
                                            "size": "0"}), bytes(8))
    assert err.label == "tensor-limit" and "more than numpy can describe" in str(err)


def test_a_document_read_piece_by_piece_makes_the_same_model_and_reports_its_progress(monkeypatch):
    """With a progress callback the event reader feeds expat in pieces (here of 97 bytes, so that
    tags, attributes and dims are cut anywhere): the model is the same, and progress climbs to the
    document's size."""
    from pathlib import Path

    import pydantic

    from irscatter.ir import events
    from irscatter.ir.graph import Layer as LayerRecord

    monkeypatch.setattr(events, "_PIECE", 97)
    folder = Path(__file__).resolve().parent.parent / "models"
    for xml in sorted(folder.glob("*/model.xml")):
        seen = []
        pieces = irscatter.read_model(xml, progress=lambda done, total: seen.append((done, total)))
        whole = irscatter.read_model(xml)
        size = xml.stat().st_size
        assert seen[-1] == (size, size) and [d for d, _ in seen] == sorted(d for d, _ in seen), xml
        dump = pydantic.TypeAdapter(list[LayerRecord]).dump_python
        assert dump(pieces.layers) == dump(whole.layers) and pieces.edges == whole.edges, xml


@pytest.mark.parametrize("input_ids,output_ids", [
    ((0, 1), (2,)),  # as the writers number them
    ((1, 0), (2,)),  # inputs in another order
    ((3, 5), (0, 7)),  # any ids, outputs before inputs
    ((), (0, 1)),
    ((0,), (0,)),  # an input and an output of one id (edges then name the input)
])
def test_a_port_id_finds_its_position_on_the_layer(input_ids, output_ids):
    """Edges name ports by id: the position of each id among the layer's inputs and outputs,
    whether or not the ids run 0, 1, ... as the writers write them, and None for an id the
    layer's inputs (or outputs) do not have."""
    def ports(ids):
        return [new_port(i, ElementType.f32, (), PartialShape.of([2]), {}) for i in ids]
    added = new_layer(1, "a", "Add", "opset1", {}, {}, ports(input_ids), ports(output_ids), {}, {}, None)
    for position, port_id in enumerate(input_ids):
        assert added.input_position(port_id) == position
    for position, port_id in enumerate(output_ids):
        assert added.output_position(port_id) == position
    for missing in (-1, 4, 9):
        if missing not in input_ids:
            assert added.input_position(missing) is None
        if missing not in output_ids:
            assert added.output_position(missing) is None
