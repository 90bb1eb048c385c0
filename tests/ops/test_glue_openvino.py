"""The glue ops around scatters (shape, logic, reduction, MatMul and more arithmetic),
each compared with OpenVINO's CPU plugin on small models with random inputs."""

import numpy as np
import pytest
from helpers import ov_model_of, run_ov, save_ov

import irscatter

ov = pytest.importorskip("openvino")
import openvino.opset1 as o1  # noqa: E402
import openvino.opset3 as o3  # noqa: E402
import openvino.opset15 as ops  # noqa: E402


def P(name, shape, t="f32"):
    return ops.parameter(list(shape), getattr(ov.Type, t), name=name)


def C(values, dtype=np.int64):
    return ops.constant(np.array(values, dtype))


def _feed(rng, p):
    shape = tuple(p.get_output_partial_shape(0).to_shape())
    t = p.get_output_element_type(0)
    if t == ov.Type.boolean:
        return rng.integers(0, 2, shape).astype(bool)
    if t.is_integral():
        return rng.integers(1 if t in (ov.Type.u8,) else -5, 6, shape).astype(t.to_dtype())
    return (rng.standard_normal(shape) * 2).astype(t.to_dtype())


def _x(shape=(2, 3, 4), t="f32"):
    return P("x", shape, t)


CASES = {
    "shapeof1": lambda: (lambda x: [o1.shape_of(x)])(_x()),
    "shapeof3-i32": lambda: (lambda x: [o3.shape_of(x, "i32")])(_x()),
    "reshape-special-zero": lambda: (lambda x: [ops.reshape(x, C([0, -1]), True)])(_x()),
    "reshape-plain": lambda: (lambda x: [ops.reshape(x, C([4, 6]), False)])(_x()),
    # an input of no elements: -1 as OpenVINO's shape inference resolves it (the spec leaves it open)
    "reshape-empty-copied": lambda: (lambda x: [ops.reshape(x, C([0, -1]), True)])(_x((0, 5))),
    "reshape-empty-copied-3d": lambda: (lambda x: [ops.reshape(x, C([0, 0, -1]), True)])(_x((0, 3, 3, 2))),
    "reshape-empty-literal-zero": lambda: (lambda x: [ops.reshape(x, C([0, -1]), False)])(_x((0, 3, 4))),
    "reshape-empty-leading": lambda: (lambda x: [ops.reshape(x, C([-1, 2]), False)])(_x((0, 4))),
    "reshape-empty-matched": lambda: (lambda x: [ops.reshape(x, C([3, -1]), False)])(_x((3, 0))),
    "reshape-from-shapeof": lambda: (lambda x: [ops.reshape(x, ops.concat([ops.gather(ops.shape_of(x), C([0]), C(0)), C([-1])], 0), False)])(_x()),
    "squeeze-axes": lambda: (lambda x: [ops.squeeze(x, C([0, -1]))])(_x((1, 3, 1))),
    "squeeze-all": lambda: (lambda x: [ops.squeeze(x)])(_x((1, 3, 1, 2))),
    "unsqueeze": lambda: (lambda x: [ops.unsqueeze(x, C([0, -1]))])(_x((2, 3))),
    "concat": lambda: [ops.concat([P("a", (2, 1, 3)), P("b", (2, 4, 3)), P("c", (2, 2, 3))], -2)],
    "concat-int": lambda: [ops.concat([P("a", (3,), "i64"), P("b", (2,), "i64")], 0)],
    "transpose": lambda: (lambda x: [ops.transpose(x, C([2, 0, 1]))])(_x()),
    "broadcast1-numpy": lambda: (lambda x: [o1.broadcast(x, C([2, 3, 4]))])(_x((3, 1))),
    "broadcast3-bidirectional": lambda: (lambda x: [o3.broadcast(x, C([2, 1, 4]), broadcast_spec="BIDIRECTIONAL")])(_x((3, 1))),
    "broadcast3-explicit": lambda: (lambda x: [o3.broadcast(x, C([2, 3, 4]), C([0, 2]), "EXPLICIT")])(_x((2, 4))),
    "range-int": lambda: [ops.range(C(2), C(17), C(3), "i32")],
    "range-float": lambda: [ops.range(ops.constant(np.float32(0.5)), ops.constant(np.float32(3.2)), ops.constant(np.float32(0.7)), "f32")],
    "range-negative-step": lambda: [ops.range(C(10), C(-3), C(-4), "i64")],
    "select": lambda: [ops.select(P("c", (2, 1, 4), "boolean"), P("a", (3, 4)), P("b", (2, 3, 1)))],
    "compare-f32": lambda: (lambda a, b: [f(a, b) for f in (ops.equal, ops.not_equal, ops.less, ops.less_equal, ops.greater, ops.greater_equal)])(P("a", (3, 4)), P("b", (4,))),
    "compare-i32": lambda: (lambda a, b: [f(a, b) for f in (ops.equal, ops.not_equal, ops.less, ops.less_equal, ops.greater, ops.greater_equal)])(P("a", (3, 4), "i32"), P("b", (3, 1), "i32")),
    "logical": lambda: (lambda a, b: [ops.logical_and(a, b), ops.logical_or(a, b), ops.logical_xor(a, b), ops.logical_not(a)])(P("a", (2, 3), "boolean"), P("b", (3,), "boolean")),
    "reduce-keep": lambda: (lambda x: [f(x, C([0, -1]), True) for f in (ops.reduce_sum, ops.reduce_prod, ops.reduce_max, ops.reduce_min)])(_x()),
    "reduce-drop-int": lambda: (lambda x: [f(x, C([1]), False) for f in (ops.reduce_sum, ops.reduce_prod, ops.reduce_max, ops.reduce_min)])(_x(t="i32")),
    "matmul": lambda: [ops.matmul(P("a", (2, 3, 4)), P("b", (4, 5)), False, False)],
    "matmul-transposed": lambda: [ops.matmul(P("a", (2, 4, 3)), P("b", (1, 5, 4)), True, True)],
    "matmul-vector": lambda: [ops.matmul(P("a", (4,)), P("b", (2, 4, 3)), False, False)],
    "max-min-sqdiff": lambda: (lambda a, b: [ops.maximum(a, b), ops.minimum(a, b), ops.squared_difference(a, b)])(P("a", (2, 3)), P("b", (3,))),
    "power-float": lambda: (lambda a: [ops.power(ops.add(ops.multiply(a, a), C(0.5, np.float32)), P("b", (2, 3)))])(P("a", (2, 3))),
    "mods-int": lambda: (lambda a, b: [ops.floor_mod(a, b), ops.mod(a, b)])(P("a", (4, 3), "i32"), ops.constant(np.array([3, -2, 4], np.int32))),
    "mods-float": lambda: (lambda a, b: [ops.floor_mod(a, b), ops.mod(a, b)])(P("a", (4, 3)), ops.constant(np.array([1.5, -2.0, 0.75], np.float32))),
}


_model = ov_model_of


@pytest.mark.parametrize("name", list(CASES))
def test_glue_op_matches_openvino(tmp_path, name):
    model = _model(CASES[name](), name)
    rng = np.random.default_rng(len(name))
    feeds = {p.get_friendly_name(): _feed(rng, p) for p in model.get_parameters()}
    xml = save_ov(model, tmp_path)
    loaded = irscatter.read_model(xml)
    compiled = loaded.compile()
    assert compiled.findings == [], compiled.findings
    got = list(loaded.run(feeds).values())
    want = run_ov(xml, feeds)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == w.shape, (g.shape, w.shape)
        assert g.dtype == w.dtype
        if g.dtype.kind == "f":
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)
        else:
            assert np.array_equal(g, w)


def test_shapeof_chains_fold_to_constants(tmp_path):
    x = _x()
    target = ops.concat([ops.gather(ops.shape_of(x), C([0]), C(0)), C([-1])], 0)
    xml = save_ov(ov.Model([ops.result(ops.reshape(x, target, False))], [x], "fold"), tmp_path)
    compiled = irscatter.read_model(xml).compile()
    folded = [lid for (lid, pos), info in compiled.graph.infos.items() if info.value is not None
              and compiled.graph.layers[lid].type == "Concat"]
    assert folded, "the Concat of a ShapeOf chain is known at compile time"
    reshape = next(lid for lid in compiled.graph.order if compiled.graph.layers[lid].type == "Reshape")
    assert str(compiled.graph.infos[(reshape, 0)].shape) == "[2, 12]"
