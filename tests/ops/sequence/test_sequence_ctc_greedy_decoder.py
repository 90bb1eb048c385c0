"""CTCGreedyDecoder-1 against OpenVINO's CPU plugin and `oracles.sequence_ctc.ctc_greedy_decoder`.

Tolerance: exact (the output holds class indices). Random [T, N, C] logits of f32, f16, bf16
and f64 with edge values (NaN, +-inf, -0.0, denormals), masks of ones then zeros (every length
from 0 to T), masks with ones after the first zero and with values other than 0 and 1 (read as
OpenVINO reads them: a sequence ends at the first exact 0), equal logits (the first class wins),
both ctc_merge_repeated values, size-0 T and N, and the refusals.
"""

import harness
import numpy as np
import pytest
from harness import Case, Input
from helpers import element_dtypes
from oracles.sequence_ctc import ctc_greedy_decoder

TYPES = element_dtypes("f32", "f16", "bf16", "f64")
OP = ("CTCGreedyDecoder", "opset1")


def _case(name, data, mask, merge=None, **judge):
    attrs = {} if merge is None else {"ctc_merge_repeated": merge}
    m = True if merge is None else merge
    return Case(name, *OP, [Input("data", data), Input("sequence_mask", mask)], attrs,
                oracle=lambda d, s: ctc_greedy_decoder(d, s, ctc_merge_repeated=m), **judge)


def _mask(rng, time, batch, dtype):
    lengths = rng.integers(0, time + 1, batch)
    return (np.arange(time)[:, None] < lengths[None, :]).astype(dtype)


def _cases():
    rng = np.random.default_rng(7)
    cases = []
    for tag, dtype in TYPES.items():
        for k, merge in enumerate([None, True, False, False]):
            time, batch, classes = (int(d) for d in rng.integers(1, 7, 3))
            # few distinct values, so that classes repeat and blanks (C - 1) win often
            data = rng.integers(0, 3, (time, batch, classes)).astype(dtype)
            if k == 3:
                data = harness.values(rng, (time, batch, classes), dtype, edges=True)
            mask = _mask(rng, time, batch, dtype)
            cases.append(_case(f"greedy-{tag}-{k}-{time}x{batch}x{classes}", data, mask, merge))
    f32 = np.float32
    rep = np.array([[[0, 5, 1]], [[0, 5, 1]], [[9, 0, 1]], [[0, 5, 1]], [[0, 1, 7]], [[0, 5, 1]]], f32)  # 1 1 0 1 2 1
    full = np.ones((6, 1), f32)
    cases.append(_case("greedy-merge-across-blank", rep, full, True))
    cases.append(_case("greedy-no-merge", rep, full, False))
    cases.append(_case("greedy-ties-first-class", np.zeros((3, 2, 4), f32), np.ones((3, 2), f32)))
    cases.append(_case("greedy-nan-first-class", np.array([[[np.nan, 1, 2]], [[0, np.nan, 2]], [[1, np.nan, 0]]], f32),
                       np.ones((3, 1), f32)))
    cases.append(_case("greedy-mask-gap", rep, np.array([[1], [1], [0], [1], [1], [1]], f32)))
    cases.append(_case("greedy-mask-values", rep, np.array([[0.5], [np.nan], [-1], [2], [-0.0], [1]], f32)))
    cases.append(_case("greedy-one-class", rng.uniform(size=(4, 3, 1)).astype(f32), np.ones((4, 3), f32)))
    big = rng.normal(size=(40, 5, 30)).astype(f32)
    cases.append(_case("greedy-large", big, _mask(rng, 40, 5, f32), True))
    cases.append(_case("greedy-large-no-merge", big, _mask(rng, 40, 5, f32), False))
    cases.append(_case("greedy-no-time", np.zeros((0, 2, 3), f32), np.zeros((0, 2), f32)))
    cases.append(_case("greedy-no-batch", np.zeros((3, 0, 3), f32), np.zeros((3, 0), f32)))
    cases.append(_case("greedy-no-classes-no-steps", np.zeros((3, 2, 0), f32), np.zeros((3, 2), f32), openvino="none",
                       why="with 0 classes the CPU plugin returns memory it has not written"))
    refusals = [
        ("integer", [np.zeros((2, 1, 3), np.int32), np.ones((2, 1), np.int32)], "float-type"),
        ("mask-integer", [np.zeros((2, 1, 3), f32), np.ones((2, 1), np.int32)], "float-type"),
        ("types", [np.zeros((2, 1, 3), f32), np.ones((2, 1), np.float16)], "same-element-type"),
        ("rank", [np.zeros((2, 3), f32), np.ones((2, 1), f32)], "ctc-shape"),
        ("mask-rank", [np.zeros((2, 1, 3), f32), np.ones((2, 1, 1), f32)], "ctc-shape"),
        ("mask-time", [np.zeros((2, 1, 3), f32), np.ones((3, 1), f32)], "ctc-shape"),
        ("mask-batch", [np.zeros((2, 1, 3), f32), np.ones((2, 2), f32)], "ctc-shape"),
        ("no-classes", [np.zeros((2, 1, 0), f32), np.ones((2, 1), f32)], "ctc-classes"),
    ]
    for name, (data, mask), label in refusals:
        cases.append(Case(f"greedy-refuses-{name}", *OP, [Input("data", data), Input("sequence_mask", mask)],
                          error=label))
    return cases


CASES = _cases()


@pytest.mark.parametrize("case", CASES, ids=str)
def test_ctc_greedy_decoder(case):
    harness.check(case, CASES)
