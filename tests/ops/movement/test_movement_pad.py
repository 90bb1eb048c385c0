"""Pad-1 and Pad-12 against OpenVINO's CPU plugin and `oracles.movement.pad`; exact (the output
copies data's elements and the pad value).

Covered: ranks 0 to 4, size-0 dims, the four modes with pads up to each mode's limit, pad_value
given or not (and ignored outside constant mode), every element type, i32/i64/u8 pads, pads fed
at run time, Pad-12's negative pads (cropping, also past the whole axis and mixed with padding
in every mode: reflection about data's edges), and the refusals: Pad-1's negative pads, the
mode limits, pads of the wrong length, rank or type, a non-scalar or mistyped pad_value, a
string tensor and an output over the tensor limit.

Where the CPU plugin is not the judge: f64 and i64 (it moves them as f32 and i32), checked
against OpenVINO's core reference, or against the oracle alone when the data is empty (the
reference crashes there); a scalar (the plugin refuses its empty pads); and an axis cropped past
its end, where OpenVINO (plugin and reference) computes a negative length instead of the spec's
max(pads_begin + n + pads_end, 0): the oracle alone.
"""

import functools

import harness
import numpy as np
import pytest
from harness import Case, Input
from helpers import element_dtypes
from oracles.movement import pad

from irscatter.errors import ValidationError
from irscatter.ir.element_types import ElementType
from irscatter.ir.shapes import PartialShape
from irscatter.ops.base import TensorInfo
from irscatter.ops.functional import make_op
from irscatter.ops.movement.pad import Pad12

TYPES = element_dtypes("f32", "f16", "bf16", "f64", "i8", "u8", "i32", "i64", "boolean")
WHY = {"f64": "the CPU plugin moves f64 as f32", "i64": "the CPU plugin moves i64 as i32 (the extremes)"}
MODES = ("constant", "edge", "reflect", "symmetric")


def _case(tag, opset, data, begin, end, mode, value=None, *, pads_type=np.int64, const=True, **extra):
    inputs = [Input("data", data), Input("pads_begin", np.array(begin, pads_type).reshape(-1), const=const),
              Input("pads_end", np.array(end, pads_type).reshape(-1), const=const)]
    if value is not None:
        inputs.append(Input("pad_value", np.asarray(value), const=True))
    name = f"{opset}-{mode}-{tag}-{'x'.join(map(str, data.shape))}-b{'_'.join(map(str, begin))}-e{'_'.join(map(str, end))}"
    return Case(name, "Pad", opset, inputs, {"pad_mode": mode}, oracle=functools.partial(pad, pad_mode=mode), **extra)


def _pads(rng, n, mode, crop):
    """Random pads for an axis of length n within the mode's limit (negative ones when `crop`)."""
    high = {"constant": 3, "edge": 3 if n else 0, "reflect": min(n - 1, 3), "symmetric": min(n, 3)}[mode]
    low = -n if crop else 0
    if high < low:
        return None
    return [int(v) for v in rng.integers(low, high + 1, 2)]


def _judge(tag, data, begin, end):
    if data.ndim == 0:
        return {"openvino": "none", "why": "OpenVINO's CPU plugin refuses a scalar Pad (its pads are empty)"}
    if any(b + n + e < 0 for n, b, e in zip(data.shape, begin, end)):
        return {"openvino": "none", "why": "OpenVINO makes the length of an axis cropped past its end negative "
                                           "(the spec: max(pads_begin + n + pads_end, 0))"}
    why = WHY.get(tag, "")
    if not why:
        return {}
    if data.size == 0:
        return {"openvino": "none", "why": why + "; the core reference crashes on empty data"}
    return {"openvino": "reference", "why": why}


def _cases():
    rng = np.random.default_rng(20)
    cases = []
    for opset, crop in (("opset1", False), ("opset12", True)):
        for tag, dtype in TYPES.items():
            for k, shape in enumerate(harness.shapes(rng, ranks=(0, 1, 2, 3, 4))):
                mode = MODES[(k + len(tag)) % 4]
                pads = [_pads(rng, n, mode, crop) for n in shape]
                if any(p is None for p in pads):
                    mode, pads = "constant", [_pads(rng, n, "constant", crop) for n in shape]
                begin, end = [p[0] for p in pads], [p[1] for p in pads]
                data = harness.values(rng, shape, dtype, edges=True,
                                      **({"low": -100, "high": 100} if tag[0] in "iu" else {}))
                value = harness.values(rng, (), dtype) if mode == "constant" and rng.random() < 0.7 else None
                cases.append(_case(tag, opset, data, begin, end, mode, value, **_judge(tag, data, begin, end)))
    x = np.arange(1, 13, dtype=np.float32).reshape(3, 4)
    for opset in ("opset1", "opset12"):
        for mode in MODES:
            cases.append(_case("example", opset, x, [0, 1], [2, 3], mode))
            cases.append(_case("limit", opset, x, [2 if mode == "reflect" else 3, 3 if mode == "reflect" else 4],
                               [2 if mode == "reflect" else 3, 0], mode))
        cases.append(_case("value", opset, x, [1, 1], [1, 2], "constant", np.float32(15)))
        cases.append(_case("value-ignored", opset, x, [1, 1], [1, 2], "edge", np.float32(15)))
        cases.append(_case("i32-pads", opset, x, [1, 0], [0, 2], "symmetric", pads_type=np.int32))
        cases.append(_case("u8-pads", opset, x, [1, 0], [0, 2], "reflect", pads_type=np.uint8))
        cases.append(_case("at-runtime", opset, x, [1, 2], [2, 1], "reflect", const=False))
        cases.append(_case("empty-axis", opset, np.zeros((0, 3), np.float32), [2, 1], [1, 0], "constant", np.float32(4)))
        cases.append(_case("empty-axis-edge", opset, np.zeros((2, 0), np.float32), [1, 0], [1, 0], "edge",
                           openvino="none", why="OpenVINO fails on an empty input"))
    for mode in MODES:  # the spec's negative and mixed pads examples, and cropping past the axis
        cases.append(_case("negative", "opset12", x, [-1, -1], [-1, -1], mode))
        cases.append(_case("mixed", "opset12", x, [2, -1], [-1, 3], mode))
        cases.append(_case("crop-far", "opset12", x, [-2, 1], [-3, 0], mode, **_judge("f32", x, [-2, 1], [-3, 0])))
        cases.append(_case("crop-all", "opset12", x, [-2, 1], [-1, 0], mode))
        cases.append(_case("crop-then-pad", "opset12", x, [0, -2], [0, 3 if mode != "symmetric" else 4], mode))
        cases.append(_case("crop-at-runtime", "opset12", x, [1, -3], [-1, 2], mode, const=False))
    for mode in ("constant", "edge"):  # pads at the i64 limits: the arithmetic must not wrap
        cases.append(_case("i64-limits", "opset12", x, [0, -(2**63)], [0, 2**63 - 1], mode, openvino="none",
                           why="OpenVINO's pad arithmetic overflows at the i64 limits"))
    cases += [
        _case("negative", "opset1", x, [0, -1], [0, 0], "constant", error="pad-negative"),
        _case("negative-at-runtime", "opset1", x, [0, 1], [0, -1], "edge", const=False, error="pad-negative"),
        _case("reflect-over", "opset12", x, [0, 4], [0, 0], "reflect", error="pad-limit"),
        _case("reflect-over-end", "opset1", x, [0, 0], [3, 0], "reflect", error="pad-limit"),
        _case("reflect-over-runtime", "opset12", x, [0, 0], [0, 4], "reflect", const=False, error="pad-limit"),
        _case("symmetric-over", "opset12", x, [0, 5], [0, 0], "symmetric", error="pad-limit"),
        _case("reflect-empty", "opset12", np.zeros((0, 2), np.float32), [0, 0], [0, 0], "reflect", error="pad-limit"),
        _case("edge-empty", "opset12", np.zeros((0, 2), np.float32), [1, 0], [0, 0], "edge", error="pad-limit"),
        _case("short", "opset12", x, [1], [1], "constant", error="pads-length"),
        _case("long-at-runtime", "opset12", x, [1, 1, 1], [1, 1, 1], "constant", const=False, error="pads-length"),
        _case("float-pads", "opset12", x, [1.0, 1.0], [1.0, 1.0], "constant", pads_type=np.float32, error="pads-type"),
        _case("huge", "opset12", x, [2**40, 2**40], [0, 0], "constant", error="tensor-limit"),
        _case("huge-at-runtime", "opset12", x, [2**40, 2**40], [0, 0], "constant", const=False, error="tensor-limit"),
        _case("value-shape", "opset12", x, [1, 1], [1, 1], "constant", np.array([1.0], np.float32),
              error="pad-value-shape"),
        _case("value-type", "opset12", x, [1, 1], [1, 1], "constant", np.float16(1), error="same-element-type"),
        Case("pads-rank", "Pad", "opset12", [Input("data", x), Input("pads_begin", np.array([[1, 1]]), const=True),
                                             Input("pads_end", np.array([[1, 1]]), const=True)],
             {"pad_mode": "constant"}, error="pads-rank"),
        Case("bogus-mode", "Pad", "opset12", [Input("data", x), Input("pads_begin", np.array([1, 1]), const=True),
                                              Input("pads_end", np.array([1, 1]), const=True)],
             {"pad_mode": "wrap"}, error="attributes"),
    ]
    return cases


CASES = _cases()


@pytest.mark.parametrize("case", CASES, ids=str)
def test_pad(case):
    harness.check(case, CASES)


def test_string_tensors_are_refused():
    op = make_op(Pad12, {"pad_mode": "constant"})
    pads = TensorInfo.of(np.array([1]))
    with pytest.raises(ValidationError) as caught:
        op.infer(TensorInfo(ElementType.string, PartialShape.of([2])), pads, pads)
    assert caught.value.label == "pad-type"


def test_what_inference_knows():
    op = make_op(Pad12, {"pad_mode": "edge"})
    data = TensorInfo(ElementType.f32, PartialShape.of([4, -1, 3]))
    known = op.infer(data, TensorInfo.of(np.array([1, 1, -1])), TensorInfo.of(np.array([0, 2, -5])))
    assert str(known.shape) == "[5, ?, 0]"
    unknown = TensorInfo(ElementType.i64, PartialShape.of([3]))
    assert str(op.infer(data, unknown, unknown).shape) == "[?, ?, ?]"


SPEC_DATA = np.arange(1, 13, dtype=np.float32).reshape(3, 4)
SPEC_MIXED = {  # Pad-12's "mixed pads" example: pads_begin [2, -1], pads_end [-1, 3]
    "constant": [[0, 0, 0, 0, 0, 0], [0, 0, 0, 0, 0, 0], [2, 3, 4, 0, 0, 0], [6, 7, 8, 0, 0, 0]],
    "edge": [[2, 3, 4, 4, 4, 4], [2, 3, 4, 4, 4, 4], [2, 3, 4, 4, 4, 4], [6, 7, 8, 8, 8, 8]],
    "reflect": [[10, 11, 12, 11, 10, 9], [6, 7, 8, 7, 6, 5], [2, 3, 4, 3, 2, 1], [6, 7, 8, 7, 6, 5]],
    "symmetric": [[6, 7, 8, 8, 7, 6], [2, 3, 4, 4, 3, 2], [2, 3, 4, 4, 3, 2], [6, 7, 8, 8, 7, 6]],
}


@pytest.mark.parametrize("mode", MODES)
def test_the_spec_pages_value_examples(mode):
    op = make_op(Pad12, {"pad_mode": mode})
    assert op.compute(SPEC_DATA, np.array([2, -1]), np.array([-1, 3])).tolist() == SPEC_MIXED[mode]
    assert op.compute(SPEC_DATA, np.array([-1, -1]), np.array([-1, -1])).tolist() == [[6, 7]]
