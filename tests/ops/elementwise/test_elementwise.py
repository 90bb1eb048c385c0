"""Add/Subtract/Multiply/Divide and Convert, differential-tested against OpenVINO.

Where OpenVINO's CPU plugin departs from the spec the test says so and checks irscatter
against OpenVINO's core reference (`Node.evaluate`) instead. For integers it does:
  * Divide with `m_pythondiv=true` floors in the spec and the reference; the CPU plugin
    truncates toward zero.
  * u8/i8 arithmetic wraps modulo 2^8 in the reference; the CPU plugin saturates.
Where the reference lacks an element type (i8/u8 Divide), numpy's floor division, which is
the spec's definition, is the expectation.
"""

import itertools

import ml_dtypes
import numpy as np
import pytest
from helpers import element_dtypes, evaluate_reference, run_irscatter, run_ov, save_ov

import irscatter

ov = pytest.importorskip("openvino")
import openvino.opset15 as ops  # noqa: E402

DTYPES = element_dtypes("f32", "f16", "bf16", "i64", "i32", "i8", "u8")
SHAPES = [((4,), (4,)), ((2, 3), (3,)), ((2, 1, 3), (4, 1)), ((1, 2, 1, 3), (2, 2, 1)), ((2, 1, 2, 1, 3), (1, 3)), ((3,), ())]
BINARY = {"Add": ops.add, "Subtract": ops.subtract, "Multiply": ops.multiply, "Divide": ops.divide}


def _values(rng, shape, dtype, nonzero=False):
    if np.dtype(dtype).kind in "iu":
        lo = 1 if np.dtype(dtype).kind == "u" else -9
        v = np.asarray(rng.integers(lo, 10, shape).astype(dtype))
        if nonzero:
            v[v == 0] = 3
        return v
    v = np.asarray(rng.standard_normal(shape).astype(np.float32) * 4)
    if nonzero:
        v[np.abs(v) < 0.25] = 0.5
    return v.astype(dtype)


def _binary_model(op, type_name, sa, sb):
    a = ops.parameter(list(sa), getattr(ov.Type, type_name), name="a")
    b = ops.parameter(list(sb), getattr(ov.Type, type_name), name="b")
    return ov.Model([ops.result(op(a, b))], [a, b], "bin")


@pytest.mark.parametrize("op_name", list(BINARY))
@pytest.mark.parametrize("type_name", list(DTYPES))
@pytest.mark.parametrize("sa, sb", SHAPES, ids=lambda s: "x".join(map(str, s)) or "scalar")
def test_binary_matches_openvino(tmp_path, op_name, type_name, sa, sb):
    rng = np.random.default_rng(abs(hash((op_name, type_name, sa, sb))) % 2**32)
    dtype = DTYPES[type_name]
    feeds = {"a": _values(rng, sa, dtype), "b": _values(rng, sb, dtype, nonzero=op_name == "Divide")}
    xml = save_ov(_binary_model(BINARY[op_name], type_name, sa, sb), tmp_path)
    (got,) = run_irscatter(xml, feeds)
    assert got.dtype == np.dtype(dtype)
    if np.dtype(dtype).kind in "iu":
        # Integers: the core reference is the spec's behaviour (see the module docstring).
        node = BINARY[op_name](ops.constant(feeds["a"]), ops.constant(feeds["b"]))
        want = evaluate_reference(node)
        if want is None:  # the reference lacks i8/u8 for some ops: numpy is the spec there
            assert type_name in ("i8", "u8")
            numpy_op = {"Add": np.add, "Subtract": np.subtract, "Multiply": np.multiply, "Divide": np.floor_divide}
            want = numpy_op[op_name](feeds["a"], feeds["b"])
        assert np.array_equal(got, want)
        return
    (want,) = run_ov(xml, feeds)
    if np.dtype(dtype).kind in "iu":
        assert np.array_equal(got, want)
    else:
        tol = {"f32": 1e-6, "f16": 1e-3, "bf16": 1e-2}[type_name]
        np.testing.assert_allclose(got.astype(np.float32), want.astype(np.float32), rtol=tol, atol=tol)


def test_divide_without_pythondiv_truncates():
    from irscatter.ops.elementwise.binary import OPS
    Divide = OPS["Divide"]
    from irscatter.ir.graph import Layer

    op = Divide(Layer(id=0, name="d", type="Divide", version="opset1", attrs={"m_pythondiv": "false"}))
    assert op.compute(np.array([7, -7, 7, -7]), np.array([2, 2, -2, -2])).tolist() == [3, -3, -3, 3]
    op = Divide(Layer(id=0, name="d", type="Divide", version="opset1"))
    assert op.compute(np.array([7, -7, 7, -7]), np.array([2, 2, -2, -2])).tolist() == [3, -4, -4, 3]


def test_integer_division_by_zero_names_the_position(tmp_path):
    xml = save_ov(_binary_model(ops.divide, "i32", (2, 2), (2, 2)), tmp_path)
    with pytest.raises(irscatter.ExecutionError) as info:
        irscatter.read_model(xml).run({"a": np.ones((2, 2), np.int32), "b": np.array([[1, 2], [0, 1]], np.int32)})
    assert "divisor is 0 at [1, 0]" in str(info.value) and "(Divide-1) input 1" in str(info.value)


def test_boolean_arithmetic_is_refused():
    from irscatter.ir.graph import Layer
    from irscatter.ir.shapes import PartialShape
    from irscatter.ops.base import TensorInfo
    from irscatter.ops.elementwise.binary import OPS

    info = TensorInfo(irscatter.ElementType.boolean, PartialShape.of([2]))
    with pytest.raises(irscatter.ValidationError, match="not defined for boolean"):
        OPS["Add"](Layer(id=0, name="a", type="Add", version="opset1")).infer(info, info)


def test_auto_broadcast_none_requires_equal_shapes(tmp_path):
    a = ops.parameter([2, 3], ov.Type.f32, name="a")
    b = ops.parameter([2, 3], ov.Type.f32, name="b")
    xml = save_ov(ov.Model([ops.result(ops.add(a, b, auto_broadcast="none"))], [a, b], "n"), tmp_path)
    text = xml.read_text().replace('<dim>3</dim>', '<dim>1</dim>', 1)
    text = text.replace('shape="2,3"', 'shape="2,1"', 1)
    xml.write_text(text)
    with pytest.raises(irscatter.ValidationError, match=r"auto_broadcast=none"):
        irscatter.read_model(xml).compile()


CONVERT_SOURCES = {
    "f32": np.array([0.0, 1.7, -1.7, 2.5, -2.5, 100.2, -100.9, 0.49], np.float32),
    "f16": np.array([0.0, 1.7, -1.7, 2.5, -2.5, 100.2, -100.9, 0.49], np.float16),
    "i32": np.array([0, 1, -1, 127, 128, -129, 255, 300], np.int32),
    "i64": np.array([0, 1, -1, 127, 128, -129, 255, 70000], np.int64),
    "u8": np.array([0, 1, 2, 127, 128, 200, 255, 9], np.uint8),
    "boolean": np.array([0, 1, 1, 0, 1, 0, 0, 1], bool),
}
CONVERT_TARGETS = ["f32", "f16", "bf16", "f64", "i64", "i32", "i16", "i8", "u8", "u16", "boolean"]


@pytest.mark.parametrize("src, dst", list(itertools.product(CONVERT_SOURCES, CONVERT_TARGETS)))
def test_convert_matches_openvino(tmp_path, src, dst):
    values = CONVERT_SOURCES[src]
    if dst in ("u8", "u16") and src in ("f32", "f16"):
        values = np.abs(values)  # negative float -> unsigned is undefined in the spec
    p = ops.parameter([8], getattr(ov.Type, src), name="x")
    xml = save_ov(ov.Model([ops.result(ops.convert(p, dst))], [p], "c"), tmp_path)
    (got,) = run_irscatter(xml, {"x": values})
    (want,) = run_ov(xml, {"x": values})
    assert got.dtype == want.dtype
    if src in ("i32", "i64") and dst in ("i8", "u8", "i16", "u16"):
        # The spec: integers narrow modulo 2^bits; OpenVINO's CPU plugin saturates instead.
        assert np.array_equal(got, values.astype(got.dtype))
        return
    if dst == "bf16" and not np.array_equal(got, want):
        # Some CPUs' plugins convert with the core reference's rule rather than nearest-even.
        from irscatter.ops.common.numeric import convert_array

        other = convert_array(values, irscatter.ElementType(src), irscatter.ElementType.bf16,
                              bf16_rounding="openvino-fold")
        assert np.array_equal(other, want), f"{values} -> {want}: neither bf16 rounding"
        return
    assert np.array_equal(got, want), f"{values} -> {got} vs {want}"


def _bf16_nearest_even_oracle(bits32: int) -> int:
    """IEEE round-to-nearest-even of one f32 bit pattern to bf16, written out per element."""
    if (bits32 & 0x7F800000) == 0x7F800000 and bits32 & 0x007FFFFF:
        return (bits32 >> 16) | 0x0040  # a NaN stays a (quiet) NaN
    upper, lower = bits32 >> 16, bits32 & 0xFFFF
    if lower > 0x8000 or (lower == 0x8000 and upper & 1):
        upper += 1
    return upper & 0xFFFF


def test_convert_to_bf16_rounds_to_nearest_even():
    from irscatter.ops.common.numeric import convert_array

    E = irscatter.ElementType
    rng = np.random.default_rng(5)
    bits = np.concatenate([rng.integers(0, 2**32, 20000, dtype=np.uint64).astype(np.uint32),
                           np.array([0x3EFAE148, 0x3F808000, 0x3F818000, 0x7F7FFFFF, 0x00000001, 0x80008000,
                                     0x7F800000, 0xFF800000, 0x7FC00000, 0x7F800001, 0x80000000], np.uint32)])
    got = convert_array(bits.view(np.float32), E.f32, E.bf16).view(np.uint16)
    want = np.array([_bf16_nearest_even_oracle(int(b)) for b in bits], np.uint16)
    is_nan = np.isnan(bits.view(np.float32))
    assert np.array_equal(got[~is_nan], want[~is_nan])
    assert np.isnan(got[is_nan].view(ml_dtypes.bfloat16).astype(np.float32)).all()
    assert convert_array(np.float32(0.49), E.f32, E.bf16).view(np.uint16) == 0x3EFB  # 0.49023438


def test_convert_to_bf16_as_openvino_folds_constants(tmp_path):
    """OpenVINO folds Convert(Const) with its core reference's rounding, which `openvino-fold` is."""
    from irscatter.ops.common.numeric import convert_array

    E = irscatter.ElementType
    rng = np.random.default_rng(6)
    values = np.concatenate([rng.standard_normal(4000).astype(np.float32) * 10.0 ** rng.integers(-40, 38, 4000),
                             np.array([0.49, 104.900116, 70000, 1.0 + 2**-8, 1.0 + 3 * 2**-8, np.inf, -np.inf,
                                       1e-40, -0.0, 3.4e38], np.float32)]).astype(np.float32)
    folded = ops.convert(ops.convert(ops.constant(values), "bf16"), "f32")
    xml = save_ov(ov.Model([ops.result(folded)], [], "fold"), tmp_path)
    (want,) = run_ov(xml, {})
    got = convert_array(values, E.f32, E.bf16, bf16_rounding="openvino-fold").astype(np.float32)
    # The CPU plugin flushes subnormals (and the sign of zero) on the way out; rounding is what is compared.
    normal = np.abs(got) >= np.finfo(np.float32).tiny
    assert np.array_equal(got.view(np.uint32)[normal], want.view(np.uint32)[normal])
    assert normal.sum() > 3500
    bits = convert_array(values[-10:-5], E.f32, E.bf16, bf16_rounding="openvino-fold").view(np.uint16)
    assert bits.tolist() == [0x3EFA, 0x42D2, 0x4788, 0x3F80, 0x3F82]  # 0.49 keeps its even upper half


def test_convert_out_of_range_floats_saturate():
    from irscatter.ops.common.numeric import convert_array

    E = irscatter.ElementType
    x = np.array([np.nan, np.inf, -np.inf, 1e20, -1e20, 3.9, -3.9], np.float32)
    assert convert_array(x, E.f32, E.i8).tolist() == [0, 127, -128, 127, -128, 3, -3]
    assert convert_array(x, E.f32, E.u8).tolist() == [0, 255, 0, 255, 0, 3, 0]
    assert convert_array(x, E.f32, E.i64).tolist()[:5] == [0, 2**63 - 1, -(2**63), 2**63 - 1, -(2**63)]
    assert convert_array(x, E.f32, E.u64).tolist()[:5] == [0, 2**64 - 1, 0, 2**64 - 1, 0]
    assert convert_array(np.array([17, -1, 8]), E.i64, E.i4).astype(int).tolist() == [1, -1, -8]
    assert convert_array(np.array([0.0, 0.9, -0.2]), E.f64, E.nf4).tolist() == [7, 15, 5]
