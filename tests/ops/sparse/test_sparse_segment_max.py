"""SegmentMax-16 against OpenVINO's CPU plugin and `oracles.sparse.segment_max`.

Tolerance: exact (a maximum rounds nothing). Data of rank 1 to 4 (size-0 dims too), every
numeric type with edge values, both fill modes, with num_segments below, at and above
max(segment_ids) + 1 (Parameter and Const) and without it. Departures, judged by the oracle
alone: a segment of -inf alone (OpenVINO gives the lowest finite value), LOWEST in f16 and bf16
(the CPU plugin fills -inf), and data with no rows (the CPU plugin crashes).
"""

import harness
import numpy as np
import pytest
from harness import Case, Input, named_inputs
from helpers import element_dtypes
from oracles.sparse import segment_max

TYPES = element_dtypes("f32", "f16", "bf16", "f64", "i32", "i64", "i8", "u8")
OP = ("SegmentMax", "opset16")


def _case(name, data, ids, count=None, fill="ZERO", *, const=False, **judge):
    inputs = [Input("data", data), Input("segment_ids", ids)]
    if count is not None:
        inputs.append(Input("num_segments", count, const=const))

    def oracle(*arrays):
        return segment_max(*arrays[:2], arrays[2] if len(arrays) > 2 else None, fill_mode=fill)
    return Case(name, *OP, inputs, {"fill_mode": fill}, oracle=oracle, **judge)


def _cases():
    rng = np.random.default_rng(16)
    cases = []
    for tag, dtype in TYPES.items():
        for k in range(4):
            rows = int(rng.integers(1, 7))
            shape = (rows, *[int(d) for d in rng.integers(1, 4, k % 3)])
            data = harness.values(rng, shape, dtype, edges=True)
            data = np.where(np.isneginf(data.astype(np.float64)), 0, data).astype(dtype)  # -inf: see below
            ids = np.sort(rng.integers(0, 4, rows)).astype(np.int64 if k % 2 else np.int32)
            fill = "LOWEST" if k % 2 else "ZERO"
            count = [None, np.array(int(ids.max()), np.int32), np.array(int(ids.max()) + 3, np.int64),
                     np.array(int(ids.max()) + 1, np.int32)][k]
            judge = {}
            if tag in ("f16", "bf16"):
                judge = {"openvino": "none", "why": "the CPU plugin computes in f32, so its lowest value (the LOWEST "
                                                    "fill, a segment of NaNs) rounds to -inf; the reference has no "
                                                    "f16/bf16 kernel"}
            elif tag == "i64":
                judge = {"openvino": "none", "why": "the CPU plugin computes i64 in i32; the reference has no i64 kernel"}
            elif tag == "f64":
                judge = {"openvino": "none", "why": "the CPU plugin computes f64 in f32"}
            cases.append(_case(f"segmentmax-{tag}-{k}-{'x'.join(map(str, shape))}-{fill.lower()}", data, ids, count,
                               fill, const=k == 3, **judge))
    nan, inf = np.nan, np.inf
    cases.append(_case("segmentmax-nan-passed-over", np.array([nan, 1, 2, nan, nan, -0.0, 0.0], np.float32),
                       np.array([0, 0, 1, 1, 2, 3, 3], np.int32), np.array(4, np.int32), "ZERO"))
    cases.append(_case("segmentmax-f16-zero-fill", np.array([3, 1, 2], np.float16), np.array([0, 0, 2], np.int32)))
    cases.append(_case("segmentmax-inf", np.array([inf, 1, -inf, 2], np.float32), np.array([0, 0, 1, 1], np.int32)))
    cases.append(_case("segmentmax-neg-inf-alone", np.array([-inf, -inf, 3], np.float32),
                       np.array([0, 0, 1], np.int32), None, "LOWEST",
                       openvino="none", why="OpenVINO's accumulator starts at the lowest finite value, so -inf "
                                            "alone gives that value; the maximum is -inf"))
    cases.append(_case("segmentmax-zero-segments", np.ones((3, 2), np.float32), np.array([0, 1, 1], np.int32),
                       np.array(0, np.int32)))
    cases.append(_case("segmentmax-no-rows", np.ones((0, 3), np.float32), np.zeros(0, np.int32),
                       openvino="none", why="the CPU plugin crashes on data with no rows"))
    cases.append(_case("segmentmax-no-rows-padded", np.ones((0, 2), np.int32), np.zeros(0, np.int32),
                       np.array(2, np.int32), "LOWEST", openvino="none", why="the CPU plugin crashes on data with no rows"))
    cases.append(_case("segmentmax-spec-example-1", np.array([1, 5, 2, -3, 4], np.float32),
                       np.array([0, 0, 2, 3, 3], np.int32), np.array(2, np.int64)))
    cases.append(_case("segmentmax-spec-example-2", np.array([1, 5, 2, -3, 4], np.float32),
                       np.array([0, 0, 2, 3, 3], np.int32), np.array(8, np.int64)))
    cases.append(_case("segmentmax-spec-example-3", np.arange(12, dtype=np.int32).reshape(3, 4) - 6,
                       np.array([0, 1, 1], np.int64), None, "LOWEST"))
    f = np.ones(4, np.float32)
    refusals = [
        ("unsorted", [f, np.array([0, 2, 1, 3], np.int32)], False, "segment-ids-order"),
        ("unsorted-const", [f, np.array([0, 2, 1, 3], np.int32)], True, "segment-ids-order"),
        ("negative", [f, np.array([-1, 0, 1, 3], np.int32)], False, "index-range"),
        ("ids-type", [f, np.array([0, 0, 1, 1], np.uint8)], False, "index-type"),
        ("ids-count", [f, np.array([0, 0, 1], np.int32)], False, "segment-ids-shape"),
        ("ids-rank", [f, np.array([[0, 0, 1, 1]], np.int32)], False, "index-rank"),
        ("data-scalar", [np.array(1, np.float32), np.array([0], np.int32)], False, "data-rank"),
        ("data-boolean", [f > 0, np.array([0, 0, 1, 1], np.int32)], False, "numeric-type"),
        ("count-negative", [f, np.array([0, 0, 1, 1], np.int32), np.array(-1, np.int32)], False, "segment-count"),
        ("count-type", [f, np.array([0, 0, 1, 1], np.int32), np.array(2.0, np.float32)], False, "index-type"),
        ("count-shape", [f, np.array([0, 0, 1, 1], np.int32), np.array([2, 2], np.int32)], False, "scalar-input"),
        ("count-huge", [f, np.array([0, 0, 1, 1], np.int32), np.array(2**40, np.int64)], False, "tensor-limit"),
    ]
    for name, arrays, const, label in refusals:
        names = ["data", "segment_ids", "num_segments"]
        cases.append(Case(f"segmentmax-refuses-{name}", *OP,
                          named_inputs(names, arrays, const=("segment_ids",) if const else ()),
                          {"fill_mode": "ZERO"}, error=label))
    cases.append(Case("segmentmax-refuses-fill-mode", *OP, [Input("data", f), Input("segment_ids", np.zeros(4, np.int32))],
                      {"fill_mode": "NAN"}, error="attributes"))
    cases.append(Case("segmentmax-refuses-no-fill-mode", *OP,
                      [Input("data", f), Input("segment_ids", np.zeros(4, np.int32))], error="attributes"))
    return cases


CASES = _cases()


@pytest.mark.parametrize("case", CASES, ids=str)
def test_segment_max(case):
    harness.check(case, CASES)


def test_negative_constant_segment_ids_are_refused_at_inference():
    """Constant ids fix the output's length (largest id + 1): a negative one must be refused
    there, not turned into a negative dimension."""
    from irscatter.errors import ValidationError
    from irscatter.ops.functional import call
    from irscatter.ops.sparse.segment_max import SegmentMax

    with pytest.raises(ValidationError) as info:
        call(SegmentMax, [np.ones(1, np.float32), np.array([-57233], np.int32)], {"fill_mode": "lowest"})
    assert info.value.label == "index-range"
