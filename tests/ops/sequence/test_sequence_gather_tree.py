"""GatherTree-1 against OpenVINO's CPU plugin and `oracles.sparse.gather_tree`.

Tolerance: exact (ids are moved, never computed). Random beams of every numeric type (f32, f16,
bf16, f64, i32, i64, i8, u8), max_seq_len below, at and above MAX_TIME, end_token present or
not, float ids with fractions (read as indices by truncation), size-0 dims. A max_seq_len of 0
is judged by the oracle alone: the CPU plugin leaves such a beam unwritten (the spec and the
reference fill it with end_token).
"""

import harness
import ml_dtypes
import numpy as np
import pytest
from harness import Case, named_inputs
from helpers import element_dtypes
from oracles.sparse import gather_tree

TYPES = element_dtypes("f32", "f16", "bf16", "f64", "i32", "i64", "i8", "u8")
OP = ("GatherTree", "opset1")
NAMES = ["step_ids", "parent_ids", "max_seq_len", "end_token"]


def _case(name, step, parent, lengths, token, **judge):
    arrays = [step, parent, lengths, token]
    return Case(name, *OP, named_inputs(NAMES, arrays), oracle=gather_tree, **judge)


def _cases():
    rng = np.random.default_rng(1)
    cases = []
    for tag, dtype in TYPES.items():
        for k in range(4):
            time, batch, width = (int(d) for d in rng.integers(1, 6, 3))
            step = rng.integers(0, 6, (time, batch, width)).astype(dtype)
            parent = rng.integers(0, width, (time, batch, width)).astype(dtype)
            if k == 3 and np.dtype(dtype).kind == "f" or (k == 3 and dtype is ml_dtypes.bfloat16):
                step = (step.astype(np.float32) + 0.5).astype(dtype)
                parent = (parent.astype(np.float32) + 0.75).astype(dtype)  # truncated when followed
            lengths = rng.integers(1, time + 3, batch).astype(dtype)
            token = np.array(rng.integers(0, 6) if k != 1 else 99, dtype)
            judge = {}
            if tag == "f64":
                judge = {"openvino": "none", "why": "the CPU plugin holds f64 in f32"}
            elif tag in ("bf16", "i8", "u8"):
                judge = {"openvino": "none", "why": f"the CPU plugin does not compile GatherTree on {tag}"}
            cases.append(_case(f"gathertree-{tag}-{k}-{time}x{batch}x{width}", step, parent, lengths, token, **judge))
    i32 = np.int32
    s = np.array([[[1, 2, 3]], [[4, 5, 6]], [[7, 8, 9]]], i32)
    p = np.array([[[0, 0, 0]], [[0, 1, 1]], [[2, 1, 2]]], i32)
    cases.append(_case("gathertree-short", s, p, np.array([2], i32), np.array(5, i32)))
    cases.append(_case("gathertree-end-token-first", s, p, np.array([3], i32), np.array(2, i32)))
    cases.append(_case("gathertree-step-zero-parents-unused", s, np.where(np.arange(3)[:, None, None] == 0, 7, p)
                       .astype(i32), np.array([3], i32), np.array(5, i32)))
    cases.append(_case("gathertree-length-zero", s, p, np.array([0], i32), np.array(5, i32), openvino="none",
                       why="the CPU plugin leaves a beam of length 0 unwritten; the core reference fails to evaluate"))
    cases.append(_case("gathertree-float-length-truncated", s.astype(np.float32), p.astype(np.float32),
                       np.array([2.9], np.float32), np.array(4, np.float32)))
    cases.append(_case("gathertree-nan-token", s.astype(np.float32), p.astype(np.float32),
                       np.array([3], np.float32), np.array(np.nan, np.float32)))
    cases.append(_case("gathertree-no-time", np.zeros((0, 2, 3), i32), np.zeros((0, 2, 3), i32), np.array([1, 2], i32),
                       np.array(0, i32), openvino="none", why="the CPU plugin fails on empty tensors"))
    cases.append(_case("gathertree-no-beams", np.zeros((2, 2, 0), i32), np.zeros((2, 2, 0), i32),
                       np.array([1, 2], i32), np.array(0, i32), openvino="none", why="the CPU plugin fails on empty tensors"))
    refusals = [
        ("parent-past-end", [s, np.where(p == 2, 3, p).astype(i32), np.array([3], i32), np.array(5, i32)],
         "index-range"),
        ("parent-negative", [s, np.where(p == 1, -1, p).astype(i32), np.array([3], i32), np.array(5, i32)],
         "index-range"),
        ("parent-nan", [s.astype(np.float32), np.where(p == 1, np.nan, p).astype(np.float32),
                        np.array([3], np.float32), np.array(5, np.float32)], "index-range"),
        ("length-negative", [s, p, np.array([-1], i32), np.array(5, i32)], "max-seq-len-value"),
        ("length-nan", [s.astype(np.float32), p.astype(np.float32), np.array([np.nan], np.float32),
                        np.array(5, np.float32)], "max-seq-len-value"),
        ("types", [s, p.astype(np.int64), np.array([3], i32), np.array(5, i32)], "same-element-type"),
        ("boolean", [s > 0, p > 0, np.array([True]), np.array(True)], "numeric-type"),
        ("rank", [s[0], p[0], np.array([3], i32), np.array(5, i32)], "beam-shape"),
        ("parent-shape", [s, p[:2], np.array([3], i32), np.array(5, i32)], "beam-shape"),
        ("length-shape", [s, p, np.array([3, 3], i32), np.array(5, i32)], "max-seq-len-shape"),
        ("length-rank", [s, p, np.array(3, i32), np.array(5, i32)], "max-seq-len-shape"),
        ("token-shape", [s, p, np.array([3], i32), np.array([5], i32)], "scalar-input"),
    ]
    for name, arrays, label in refusals:
        cases.append(Case(f"gathertree-refuses-{name}", *OP, named_inputs(NAMES, arrays),
                          error=label))
    return cases


CASES = _cases()


@pytest.mark.parametrize("case", CASES, ids=str)
def test_gather_tree(case):
    harness.check(case, CASES)
