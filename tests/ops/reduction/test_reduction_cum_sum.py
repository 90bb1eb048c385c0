"""CumSum-3 against OpenVINO's CPU plugin and `oracles.reduction.cum_sum`.

Tolerance: integers exact (sums wrap in the element type, as the plugin's do); floats within
2 ulps of the output type plus 1e-6 absolute for f32 (one addition after another in f32, the
order the plugin may vectorize differently; running sums of mixed signs may cancel), and exact
against the oracle, which adds in the same order and type. f64 is judged by the oracle alone (the
plugin computes it in f32). Boolean data, which the spec leaves out and OpenVINO runs, is held
to the plugin as a Result reads it (true where the running count modulo 256 is not 0), and a
Convert after it to the count the plugin's byte holds, where irscatter departs.
"""


from pathlib import Path

import harness
import numpy as np
import pytest
from harness import Case, Input
from helpers import element_dtypes, run_ov
from oracles.reduction import cum_sum

import irscatter
from irscatter.ir.element_types import ElementType
from irscatter.ir.writer import IRWriter

TYPES = element_dtypes("f32", "f16", "bf16", "f64", "i32", "i64", "i8", "u8")


def _case(tag, data, axis, exclusive, reverse, *, axis_type=np.int64, ulps=0, atol=0, openvino="cpu", why=""):
    inputs = [Input("data", data)]
    if axis is not None:
        inputs.append(Input("axis", np.array(axis, axis_type), const=True))
    name = f"{tag}-{'x'.join(map(str, data.shape))}-axis{axis}-ex{int(exclusive)}-rev{int(reverse)}"
    return Case(name, "CumSum", "opset3", inputs, {"exclusive": exclusive, "reverse": reverse},
                oracle=lambda *a: cum_sum(*a, exclusive=exclusive, reverse=reverse), ulps=ulps, atol=atol,
                openvino=openvino, why=why)


def _cases():
    rng = np.random.default_rng(3)
    cases = []
    for tag, dtype in TYPES.items():
        for shape in harness.shapes(rng, ranks=(1, 2, 3, 4, 5)):
            rank = len(shape)
            axis = int(rng.integers(-rank, rank))
            exclusive, reverse = bool(rng.integers(0, 2)), bool(rng.integers(0, 2))
            if tag.startswith("i") or tag.startswith("u"):
                data = harness.values(rng, shape, dtype, edges=True, low=-100 if tag != "u8" else 0, high=100)
            else:
                data = harness.values(rng, shape, dtype, edges=True)
            ulps, atol = (2, 1e-6 if tag == "f32" else 0) if tag in ("f32", "f16", "bf16") else (0, 0)
            extra = {"openvino": "none", "why": "the CPU plugin computes f64 in f32"} if tag == "f64" else {}
            if tag == "i64":
                extra = {"openvino": "none", "why": "the CPU plugin saturates i64 sums; the spec's arithmetic wraps"}
            cases.append(_case(tag, data, axis, exclusive, reverse, ulps=ulps, atol=atol, **extra))
    # every attribute combination on the spec's example and with the axis left out; an i32 axis
    x = np.array([1, 2, 3, 4, 5], np.float32)
    for exclusive in (False, True):
        for reverse in (False, True):
            cases.append(_case("example", x, 0, exclusive, reverse))
            cases.append(_case("2d-no-axis", np.arange(12, dtype=np.float32).reshape(3, 4), None, exclusive, reverse,
                               openvino="none", why="OpenVINO fails to compile CumSum without its axis input"))
    cases.append(_case("axis-i32", np.arange(6, dtype=np.int32).reshape(2, 3), -1, False, False, axis_type=np.int32))
    cases.append(_case("wraps", np.array([100, 100, -128, -1], np.int8), 0, False, False))
    cases += _boolean_cases(rng)
    # refusals
    f32 = np.ones((2, 3), np.float32)
    cases += [
        Case("scalar", "CumSum", "opset3", [Input("data", np.float32(1).reshape(())), Input("axis", np.array(0), const=True)],
             error="data-rank"),
        Case("axis-i8", "CumSum", "opset3", [Input("data", f32), Input("axis", np.array(0, np.int8), const=True)],
             error="axis-type"),
        Case("axis-2", "CumSum", "opset3", [Input("data", f32), Input("axis", np.array([0, 1]), const=True)],
             error="axis-shape"),
        Case("axis-1elem", "CumSum", "opset3", [Input("data", f32), Input("axis", np.array([1]), const=True)],
             error="axis-shape"),
        Case("axis-range", "CumSum", "opset3", [Input("data", f32), Input("axis", np.array(2), const=True)],
             error="axis-range"),
    ]
    return cases


def _boolean_cases(rng):
    """Random masks under every attribute combination, and a row of 300 trues whose running
    count passes 256 (a byte of 0: false, as OpenVINO reads it)."""
    cases = []
    for exclusive in (False, True):
        for reverse in (False, True):
            data = harness.values(rng, (3, 5), np.bool_)
            cases.append(_boolean_case("bool", data, int(rng.integers(-2, 2)), exclusive, reverse))
    cases.append(_boolean_case("bool-past-256", np.ones((2, 300), bool), 1, False, False))
    cases.append(_boolean_case("bool-past-256", np.ones((2, 300), bool), -1, True, True))
    return cases


def _boolean_case(tag, data, axis, exclusive, reverse):
    case = _case(tag, data, axis, exclusive, reverse)
    case.oracle = lambda d, a: cum_sum(d.astype(np.uint8), a, exclusive=exclusive, reverse=reverse) != 0
    return case


CASES = _cases()


@pytest.mark.parametrize("case", CASES, ids=str)
def test_cum_sum(case):
    harness.check(case, CASES)


def test_a_boolean_cum_sum_read_as_a_number_departs_from_openvino_only_past_a_count_of_1(tmp_path: Path):
    """OpenVINO's plugin keeps the count in the boolean's byte, which a Convert reads; irscatter's
    boolean holds true or false (see the op's module doc). Row 0 has one true: both agree; row 1
    is all true: OpenVINO's Convert reads the counts modulo 256, irscatter's 1 where not 0."""
    writer = IRWriter("boolean_cum_sum")
    shape = (2, 300)
    x = writer.parameter("x", ElementType.boolean, shape, ("x",))
    axis = writer.const("axis", np.array(1, np.int64))
    [sums] = writer.layer("CumSum", "opset3", [x, axis], [(ElementType.boolean, shape), (ElementType.i64, ())],
                          [(ElementType.boolean, shape)], name="cumsum")
    writer.result("as_bool", sums, ElementType.boolean, shape)
    for etype in (ElementType.i32, ElementType.f32):
        [number] = writer.layer("Convert", "opset1", [sums], [(ElementType.boolean, shape)], [(etype, shape)],
                                name=f"to_{etype}", attrs={"destination_type": str(etype)})
        writer.result(f"as_{etype}", number, etype, shape)
    xml = writer.save(tmp_path / "boolean_cum_sum.xml")
    data = np.ones(shape, bool)
    data[0] = np.arange(300) == 7
    ours = list(irscatter.read_model(xml).run({"x": data}).values())
    theirs = run_ov(xml, {"x": data})
    np.testing.assert_array_equal(ours[0], theirs[0])
    counts = np.arange(1, 301) % 256
    for mine, openvino in zip(ours[1:], theirs[1:]):
        np.testing.assert_array_equal(mine[0], openvino[0])
        np.testing.assert_array_equal(openvino[1], counts)
        np.testing.assert_array_equal(mine[1], counts != 0)
