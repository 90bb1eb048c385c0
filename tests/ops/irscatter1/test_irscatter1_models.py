"""The irscatter1 ops inside models: dynamic dimensions, high ranks, and layers chained with
OpenVINO ops, each checked against the per-element oracles."""

from __future__ import annotations

import re

import numpy as np
import oracles
import pytest
from helpers import one_layer_ir

import irscatter

CASES = {
    "PagedScatterUpdate": ({"dim": "-2"}, lambda rng: (
        ("cache", rng.normal(size=(3, 4, 1, 8)).astype(np.float32)),
        ("index", np.array([[5, -1, 11], [0, 2, 7]], np.int32)),
        ("src", rng.normal(size=(2, 3, 1, 8)).astype(np.float32))),
        lambda c, i, s: oracles.paged_scatter_update(c, i, s)),
    "PaddleScatter": ({"overwrite": "false"}, lambda rng: (
        ("x", rng.normal(size=(4, 2, 3))), ("index", np.array([3, 0, 3], np.int64)), ("updates", rng.normal(size=(3, 2, 3)))),
        lambda x, i, u: oracles.paddle_scatter(x, i, u, False)),
    "BNNSScatter": ({"axis": "1", "reduction": "max"}, lambda rng: (
        ("output", rng.normal(size=(2, 5, 3))), ("indices", np.array([4, 0, 4], np.int64)), ("input", rng.normal(size=(2, 3, 3)))),
        lambda o, i, v: oracles.bnns_scatter(o, i, v, 1, "max")),
    "HloScatter": ({"update_window_dims": "1", "inserted_window_dims": "0", "scatter_dims_to_operand_dims": "0",
                    "index_vector_dim": "1", "update_computation": "add"}, lambda rng: (
        ("operand", rng.normal(size=(5, 3))), ("indices", np.array([[4], [1], [4]], np.int64)),
        ("updates", rng.normal(size=(3, 3)))),
        lambda x, i, u: oracles.hlo_scatter([x], i, [u], {"update_window_dims": [1], "inserted_window_dims": [0],
                                                          "scatter_dims_to_operand_dims": [0], "index_vector_dim": 1},
                                            lambda c, v: (c[0] + v[0],))[0]),
}


def _make_dynamic(xml_text: str) -> str:
    """Every Parameter shape and every port dim becomes `?` / -1."""
    xml_text = re.sub(r'shape="([0-9,]+)"', lambda m: 'shape="' + ",".join("?" for _ in m.group(1).split(",")) + '"',
                      xml_text)
    return re.sub(r"<dim>\d+</dim>", "<dim>-1</dim>", xml_text)


@pytest.mark.parametrize("op", CASES)
@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
def test_runs_with_static_and_dynamic_dims(tmp_path, op, dynamic):
    attrs, make, oracle = CASES[op]
    inputs = make(np.random.default_rng(1))
    xml = one_layer_ir(tmp_path, op, "irscatter1", attrs, list(inputs), [(inputs[0][1].shape, inputs[0][1].dtype)])
    if dynamic:
        xml.write_text(_make_dynamic(xml.read_text()))
    model = irscatter.read_model(xml)
    out = model.run(dict(inputs))["out0"]
    np.testing.assert_allclose(out, oracle(*(a for _, a in inputs)), rtol=1e-12)
    assert not [f for f in model.compile().findings if f.severity == "error"]


def test_hlo_scatter_on_rank_5_operands():
    from irscatter.ops import hlo_scatter

    rng = np.random.default_rng(2)
    operand = rng.normal(size=(2, 3, 2, 4, 2))
    dims = {"update_window_dims": [2, 3, 4], "inserted_window_dims": [1], "input_batching_dims": [0],
            "scatter_indices_batching_dims": [0], "scatter_dims_to_operand_dims": [1, 3], "index_vector_dim": 2}
    indices = rng.integers(-1, 4, size=(2, 3, 2))
    updates = rng.normal(size=(2, 3, 2, 2, 2))
    got = hlo_scatter(operand, indices, updates, **dims, update_computation="add")
    expected = oracles.hlo_scatter([operand], indices, [updates], dims, lambda c, u: (c[0] + u[0],))[0]
    np.testing.assert_allclose(got, expected, rtol=1e-12)


def test_chained_with_openvino_ops(tmp_path):
    """A paged write whose slots come from Add on a Parameter, read back by Gather-8."""
    from helpers import layer, net, param, port, result, write

    cache, src = np.zeros((6, 2), np.float32), np.arange(8, dtype=np.float32).reshape(4, 2)
    xml = net([
        param(0, "cache", [6, 2]), param(1, "base", [2, 2], "i32", "I32"), param(2, "src", [4, 2]),
        layer(3, "one", "Const", data={"element_type": "i32", "shape": "", "offset": 0, "size": 4},
              outputs=[port(0, "I32", [])]),
        layer(4, "slots", "Add", inputs=[port(0, "I32", [2, 2]), port(1, "I32", [])], outputs=[port(2, "I32", [2, 2])]),
        layer(5, "write", "PagedScatterUpdate", "irscatter1", data={"dim": -2},
              inputs=[port(0, "FP32", [6, 2]), port(1, "I32", [2, 2]), port(2, "FP32", [4, 2])],
              outputs=[port(3, "FP32", [6, 2])]),
        result(6, "cache_out", [6, 2])],
        [(0, 0, 5, 0), (1, 0, 4, 0), (3, 0, 4, 1), (4, 2, 5, 1), (2, 0, 5, 2), (5, 3, 6, 0)])
    path = write(tmp_path, xml, np.array([1], np.int32).tobytes())
    out = irscatter.read_model(path).run({"cache": cache, "base": np.array([[0, 2], [4, -2]], np.int32), "src": src})
    expected = oracles.paged_scatter_update(cache, np.array([[1, 3], [5, -1]]), src)
    np.testing.assert_array_equal(out["cache_out"], expected)


def test_a_region_written_with_a_constant_keeps_it_in_the_models_weights():
    """HloScatter's combiner as a region of the package's writer, holding a Const: the Const is
    stored in the one `.bin` of the model, and the combiner reads it."""
    from irscatter.ir.element_types import ElementType as E
    from irscatter.ir.writer import IRWriter

    writer = IRWriter("region")
    x = writer.parameter("x", E.f32, (4,), ("x",))
    indices = writer.const("indices", np.array([[1], [1], [3]], np.int64))
    u = writer.parameter("u", E.f32, (3,), ("u",))
    region, scalar = writer.region(), (E.f32, ())
    current, update = region.parameter("current", *scalar), region.parameter("update", *scalar)
    two = region.const("two", np.array(2, np.float32))
    (scaled,) = region.layer("Multiply", "opset1", [update, two], [scalar] * 2, [scalar], name="scaled")
    (total,) = region.layer("Add", "opset1", [current, scaled], [scalar] * 2, [scalar], name="total")
    region.result("combined", total, *scalar)
    (out,) = writer.layer("HloScatter", "irscatter1", [x, indices, u], [(E.f32, (4,)), (E.i64, (3, 1)), (E.f32, (3,))],
                          [(E.f32, (4,))], name="scatter", attrs={"update_window_dims": "", "inserted_window_dims": "0",
                                                                   "scatter_dims_to_operand_dims": "0",
                                                                   "index_vector_dim": "1"}, children=[region.body()])
    writer.result("y", out, E.f32, (4,))
    model = irscatter.parse_model(*writer.to_bytes())
    got = model.run({"x": np.ones(4, np.float32), "u": np.array([1, 2, 3], np.float32)})["y"]
    np.testing.assert_array_equal(got, [1, 7, 1, 7])  # 1 + 2*1 + 2*2 at 1, 1 + 2*3 at 3
