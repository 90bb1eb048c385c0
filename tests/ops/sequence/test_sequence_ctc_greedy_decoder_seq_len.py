"""CTCGreedyDecoderSeqLen-6 against OpenVINO's CPU plugin and
`oracles.sequence_ctc.ctc_greedy_decoder_seq_len`.

Tolerance: exact (class indices and counts). Random [N, T, C] logits of f32, f16, bf16 and f64
with edge values, sequence lengths of i32 and i64 from 0 to T, blank_index left out (C - 1),
given as a scalar or a 1-element tensor, inside [0, C) and outside it (no class is then a
blank), every classes_index_type and sequence_length_type, both merge_repeated values, equal
logits (the first class wins), size-0 N and T, and the refusals.
"""

import harness
import numpy as np
import pytest
from harness import Case, Input, named_inputs
from helpers import element_dtypes
from oracles.sequence_ctc import ctc_greedy_decoder_seq_len

TYPES = element_dtypes("f32", "f16", "bf16", "f64")
OP = ("CTCGreedyDecoderSeqLen", "opset6")
NAMES = ("data", "sequence_length", "blank_index")
INDEX = element_dtypes("i32", "i64")


def _case(name, arrays, merge=None, classes="i32", lengths="i32", *, defaults=False, **judge):
    attrs = {} if defaults else {"merge_repeated": merge, "classes_index_type": classes,
                                 "sequence_length_type": lengths}
    m = True if merge is None else merge

    def oracle(*a):
        return ctc_greedy_decoder_seq_len(*a, merge_repeated=m, classes_index_type=INDEX[classes],
                                          sequence_length_type=INDEX[lengths])

    return Case(name, *OP, named_inputs(NAMES, arrays), attrs, oracle=oracle, **judge)


def _cases():
    rng = np.random.default_rng(11)
    cases = []
    k = 0
    for tag, dtype in TYPES.items():
        for itag, itype in INDEX.items():
            for blank in ("none", "scalar", "one", "outside"):
                batch, time, classes = (int(d) for d in rng.integers(1, 7, 3))
                data = rng.integers(0, 3, (batch, time, classes)).astype(dtype)
                if k % 3 == 2:
                    data = harness.values(rng, (batch, time, classes), dtype, edges=True)
                arrays = [data, rng.integers(0, time + 1, batch).astype(itype)]
                if blank == "scalar":
                    arrays.append(np.array(rng.integers(0, classes), itype))
                elif blank == "one":
                    arrays.append(np.array([rng.integers(0, classes)], itype))
                elif blank == "outside":
                    arrays.append(np.array(classes + 2 if k % 2 else -1, itype))
                merge = [True, False, None][k % 3]
                out1, out2 = ["i32", "i64"][k % 2], ["i32", "i64"][(k // 2) % 2]
                cases.append(_case(f"seqlen-{tag}-{itag}-{blank}-{k}-{batch}x{time}x{classes}", arrays, merge,
                                   out1, out2))
                k += 1
    i32, f32 = np.int32, np.float32
    rep = np.array([[[0, 5, 1], [0, 5, 1], [9, 0, 1], [0, 5, 1], [0, 1, 7], [0, 5, 1]]], f32)  # 1 1 0 1 2 1
    cases.append(_case("seqlen-defaults", [rep, np.array([6], i32)], defaults=True))
    cases.append(_case("seqlen-merge-across-blank", [rep, np.array([6], i32), np.array(0, i32)], True))
    cases.append(_case("seqlen-no-merge", [rep, np.array([6], i32), np.array(0, i32)], False))
    cases.append(_case("seqlen-blank-one", [rep, np.array([5], i32), np.array([1], i32)], True))
    cases.append(_case("seqlen-ties", [np.zeros((2, 3, 4), f32), np.array([3, 1], i32)]))
    cases.append(_case("seqlen-nan", [np.array([[[np.nan, 1, 2], [0, np.nan, 2], [1, np.nan, 0]]], f32),
                                      np.array([3], i32), np.array(2, i32)], False))
    big = rng.normal(size=(5, 40, 30)).astype(f32)
    cases.append(_case("seqlen-large", [big, rng.integers(0, 41, 5).astype(i32)], True, "i64", "i64"))
    cases.append(_case("seqlen-large-no-merge", [big, rng.integers(0, 41, 5).astype(i32), np.array(3, i32)], False))
    cases.append(_case("seqlen-no-time", [np.zeros((2, 0, 3), f32), np.zeros(2, i32)], openvino="none",
                       why="with T = 0 the CPU plugin leaves the lengths output unwritten"))
    cases.append(_case("seqlen-no-batch", [np.zeros((0, 3, 3), f32), np.zeros(0, i32)]))
    cases.append(_case("seqlen-no-classes-no-steps", [np.zeros((2, 3, 0), f32), np.zeros(2, i32)], openvino="none",
                       why="with 0 classes the CPU plugin returns memory it has not written"))
    d = np.zeros((2, 3, 4), f32)
    refusals = [
        ("integer-data", [d.astype(i32), np.array([1, 2], i32)], "float-type"),
        ("float-lengths", [d, np.array([1, 2], f32)], "ctc-index-type"),
        ("i8-lengths", [d, np.array([1, 2], np.int8)], "ctc-index-type"),
        ("float-blank", [d, np.array([1, 2], i32), np.array(1, f32)], "ctc-index-type"),
        ("blank-type", [d, np.array([1, 2], i32), np.array(1, np.int64)], "same-element-type"),
        ("blank-shape", [d, np.array([1, 2], i32), np.array([1, 1], i32)], "scalar-input"),
        ("blank-rank", [d, np.array([1, 2], i32), np.array([[1]], i32)], "scalar-input"),
        ("rank", [d[0], np.array([1, 2], i32)], "ctc-shape"),
        ("length-rank", [d, np.array([[1, 2]], i32)], "ctc-shape"),
        ("length-batch", [d, np.array([1, 2, 3], i32)], "ctc-shape"),
        ("length-past-end", [d, np.array([1, 4], i32)], "sequence-lengths-range"),
        ("length-negative", [d, np.array([-1, 2], i32)], "sequence-lengths-range"),
        ("no-classes", [np.zeros((2, 3, 0), f32), np.array([0, 1], i32)], "ctc-classes"),
    ]
    for name, arrays, label in refusals:
        cases.append(Case(f"seqlen-refuses-{name}", *OP, named_inputs(NAMES, arrays), error=label))
    cases.append(Case("seqlen-refuses-index-type", *OP, [Input("data", d), Input("sequence_length", np.ones(2, i32))],
                      {"classes_index_type": "i8"}, error="attributes"))
    return cases


CASES = _cases()


@pytest.mark.parametrize("case", CASES, ids=str)
def test_ctc_greedy_decoder_seq_len(case):
    harness.check(case, CASES)
