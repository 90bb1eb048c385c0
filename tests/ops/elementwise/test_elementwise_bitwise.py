"""The bitwise ops (BitwiseAnd-13, BitwiseOr-13, BitwiseXor-13, BitwiseNot-13,
BitwiseLeftShift-15, BitwiseRightShift-15) and opset1's Xor-1, against OpenVINO's CPU plugin
and the oracles of `oracles.elementwise`. All results are exact.

Shift counts that are negative or not less than the type's width are left to the
implementation by the spec; irscatter follows OpenVINO's reference (C++ on x86-64: the count
modulo 32, or 64 for 64-bit types, after widening to int), and the CPU plugin agrees for types
of up to 32 bits. It shifts i64 and u64 in 32 bits (1 << 31 of i64 is -2^31 there), so those
are judged by the oracle; the core reference has no evaluate for these ops to stand in. It
also computes BitwiseAnd/Or/Xor/Not of i64 and u64 in 32 bits, and shifts u32 right
arithmetically (as if it were i32): those are judged by the oracle as well.

auto_broadcast="pdpd" in an IR file aligns the second shape at axis 0 in OpenVINO (the
default of its AutoBroadcastSpec), not at the right as the broadcast rules' default axis -1
says; the pdpd cases here keep both shapes of one rank, where the two readings agree.
"""

import harness
import numpy as np
import pytest
from harness import Case, Input
from helpers import element_dtypes
from oracles import elementwise as oracle

INTS = element_dtypes("i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64")
LOGIC = ("BitwiseAnd", "BitwiseOr", "BitwiseXor")
SHIFTS = ("BitwiseLeftShift", "BitwiseRightShift")
WIDE = "the CPU plugin computes i64 and u64 bitwise ops in 32 bits"
U32_RIGHT = "the CPU plugin shifts u32 right arithmetically, as i32"


def _pair(rng, shape, mode):
    """A second shape that broadcasts with `shape` by `mode`."""
    if mode == "none" or not shape:
        return shape
    if mode == "pdpd":  # same rank, the last dimension kept: OpenVINO's reading of pdpd agrees (see below)
        return tuple(d if rng.integers(0, 2) else 1 for d in shape[:-1]) + shape[-1:]
    other = [d if rng.integers(0, 2) else 1 for d in shape]
    return tuple(other[int(rng.integers(0, len(shape) + 1)):])


def _shape_id(shape):
    return "x".join(map(str, shape)) or "scalar"


def _ints(rng, shape, dtype):
    """Random integers over the whole range of `dtype`, with its extremes, 0 and -1."""
    info = np.iinfo(dtype)
    n = int(np.prod(shape))
    x = rng.integers(info.min, info.max, n, dtype=dtype, endpoint=True)
    specials = np.array([info.min, info.max, 0, 1], dtype)
    x[:min(n, 4)] = specials[:min(n, 4)]
    return rng.permutation(x).reshape(shape)


def _cases():
    rng = np.random.default_rng(20250612)
    shapes = harness.shapes(rng)
    cases = []
    modes = ("numpy", "none", "pdpd")
    for type_ in LOGIC:
        orc = oracle.binary(type_)
        for k, (tname, dtype) in enumerate({**INTS, "boolean": np.bool_}.items()):
            shape = shapes[(k + len(type_)) % len(shapes)]
            mode = modes[k % 3]
            other = _pair(rng, shape, mode)
            if dtype is np.bool_:
                a, b = harness.values(rng, shape, dtype), harness.values(rng, other, dtype)
            else:
                a, b = _ints(rng, shape, dtype), _ints(rng, other, dtype)
            judge = dict(openvino="none", why=WIDE) if np.dtype(dtype).itemsize == 8 else {}
            cases.append(Case(f"{type_}-{tname}-{_shape_id(shape)}-{mode}", type_, "opset13",
                              [Input("a", a), Input("b", b)], {"auto_broadcast": mode}, oracle=orc, **judge))
    for k, (tname, dtype) in enumerate({**INTS, "boolean": np.bool_}.items()):
        shape = shapes[k % len(shapes)]
        x = harness.values(rng, shape, dtype) if dtype is np.bool_ else _ints(rng, shape, dtype)
        judge = dict(openvino="none", why=WIDE) if np.dtype(dtype).itemsize == 8 else {}
        cases.append(Case(f"BitwiseNot-{tname}-{_shape_id(shape)}", "BitwiseNot", "opset13", [Input("x", x)],
                          oracle=oracle.unary("BitwiseNot"), **judge))
    for type_ in SHIFTS:
        orc = oracle.binary(type_)
        for k, (tname, dtype) in enumerate(INTS.items()):
            bits = np.dtype(dtype).itemsize * 8
            judge = dict(openvino="none", why=WIDE) if bits == 64 else {}
            if tname == "u32" and type_ == "BitwiseRightShift":
                judge = dict(openvino="none", why=U32_RIGHT)
            shape = shapes[(k + len(type_)) % len(shapes)]
            mode = modes[k % 3]
            other = _pair(rng, shape, mode)
            a = _ints(rng, shape, dtype)
            b = rng.integers(0, bits, other).astype(dtype)  # counts inside the type's width
            cases.append(Case(f"{type_}-{tname}-{_shape_id(shape)}-{mode}", type_, "opset15",
                              [Input("a", a), Input("b", b)], {"auto_broadcast": mode}, oracle=orc, **judge))
            # counts the spec leaves to the implementation: negative, the width and beyond
            odd = np.array([-1, -2, -31, -33, -64, bits, bits + 1, 31, 32, 33, 63, 64, 65, 200], np.int64)
            info = np.iinfo(dtype)
            some = [1, 5, info.max, info.min] + ([-1, -7] if info.min else [7, 1 << (bits - 1)])
            a = np.resize(np.array(some, dtype), odd.shape)
            cases.append(Case(f"{type_}-{tname}-odd-counts", type_, "opset15",
                              [Input("a", a), Input("b", odd.astype(dtype))], oracle=orc, **judge))
    xor = oracle.binary("Xor")
    for shape in shapes[:4]:
        other = _pair(rng, shape, "numpy")
        cases.append(Case(f"Xor-{_shape_id(shape)}", "Xor", "opset1",
                          [Input("a", harness.values(rng, shape, np.bool_)),
                           Input("b", harness.values(rng, other, np.bool_))], oracle=xor))
    return cases


def _error_cases():
    f32, i32, b = np.ones(3, np.float32), np.ones(3, np.int32), np.ones(3, bool)
    cases = []
    for type_, opset, label, inputs in [
        ("BitwiseAnd", "opset13", "integer-type", (f32, f32)),
        ("BitwiseOr", "opset13", "integer-type", (f32, f32)),
        ("BitwiseXor", "opset13", "same-element-type", (i32, np.ones(3, np.int64))),
        ("BitwiseLeftShift", "opset15", "integer-type", (b, b)),
        ("BitwiseRightShift", "opset15", "integer-type", (f32, f32)),
        ("BitwiseRightShift", "opset15", "broadcast", (i32, np.ones(2, np.int32))),
        ("Xor", "opset1", "boolean-type", (i32, i32)),
    ]:
        cases.append(Case(f"{type_}-{inputs[0].dtype}-refused-{label}", type_, opset,
                          [Input("a", inputs[0]), Input("b", inputs[1])], error=label))
    cases.append(Case("BitwiseNot-f32-refused", "BitwiseNot", "opset13", [Input("x", f32)], error="integer-type"))
    cases.append(Case("BitwiseAnd-none-unequal", "BitwiseAnd", "opset13",
                      [Input("a", np.ones((2, 3), np.int32)), Input("b", np.ones(3, np.int32))],
                      {"auto_broadcast": "none"}, error="broadcast"))
    return cases


CASES = _cases() + _error_cases()


@pytest.mark.parametrize("case", CASES, ids=str)
def test_bitwise(case):
    harness.check(case, CASES)


def test_spec_examples():
    from irscatter.ops.functional import make_op
    from irscatter.ops.registry import find

    def run(type_, *arrays):
        opset = "opset15" if "Shift" in type_ else "opset13"
        return make_op(find(type_, opset), {}).compute(*arrays).tolist()

    a, b = np.array([21, 120], np.uint8), np.array([3, 37], np.uint8)
    assert run("BitwiseAnd", a, b) == [1, 32]
    assert run("BitwiseOr", a, b) == [23, 125]
    assert run("BitwiseXor", a, b) == [22, 93]
    assert run("BitwiseNot", np.array([1, 3], np.uint8)) == [254, 252]
    assert run("BitwiseNot", np.array([True, False])) == [False, True]
    assert run("BitwiseAnd", np.array([True, False, False]), np.array([True, True, False])) == [True, False, False]
    assert run("BitwiseLeftShift", np.array([1, 1, 1], np.int8), np.array([7, 8, -1], np.int8)) == [-128, 0, 0]
    assert run("BitwiseRightShift", np.array([-7, 5, 5], np.int32), np.array([1, 32, 33], np.int32)) == [-4, 5, 2]
    assert run("BitwiseLeftShift", np.array([1], np.int64), np.array([63], np.int64)) == [-(2**63)]
