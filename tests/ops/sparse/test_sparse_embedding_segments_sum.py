"""EmbeddingSegmentsSum-3 against OpenVINO's CPU plugin and `oracles.sparse.embedding_segments_sum`.

Tolerance: exact (sums in index order, in f32 for f16 and bf16, rounded once; integers wrap).
Tables of rank 1 to 4, every numeric type with edge values, sorted and unsorted segment ids,
empty segments with and without default_index, with and without per_sample_weights,
num_segments of 0 and past the last id, as a Parameter and as a Const.
"""

import harness
import numpy as np
import pytest
from harness import Case, named_inputs
from helpers import element_dtypes
from oracles.sparse import embedding_segments_sum

TYPES = element_dtypes("f32", "f16", "bf16", "f64", "i32", "i64", "i8", "u8")
OP = ("EmbeddingSegmentsSum", "opset3")
NAMES = ["emb_table", "indices", "segment_ids", "num_segments", "default_index", "per_sample_weights"]


def _case(rng, name, dtype, *, default, weights, index_type=np.int32, num=None, segments=None, shuffle=False,
          const=False):
    num_emb = int(rng.integers(1, 6))
    table = harness.values(rng, (num_emb, *[int(d) for d in rng.integers(1, 4, int(rng.integers(0, 3)))]),
                           dtype, edges=True)
    num = int(rng.integers(0, 7)) if num is None else num
    segments = int(rng.integers(1, 5)) if segments is None else segments
    indices = rng.integers(0, num_emb, num).astype(index_type)
    ids = np.sort(rng.integers(0, max(segments, 1), num)).astype(index_type) if segments else indices[:0]
    if shuffle:
        ids = rng.permutation(ids)
    arrays = [table, indices, ids, np.array(segments, index_type)]
    if default is not None or weights:
        arrays.append(np.array(default if default is not None else 0, index_type))
    if weights:
        arrays.append(harness.values(rng, (num,), dtype, low=-2, high=2))
    inputs = named_inputs(NAMES, arrays, const=("num_segments",) if const else ())
    judge = {}
    if np.dtype(dtype) == np.float64:
        judge = {"openvino": "none", "why": "the CPU plugin computes f64 in f32"}
    elif np.dtype(dtype) == np.int64:
        judge = {"openvino": "none", "why": "the CPU plugin computes i64 in i32; the core reference has no i64 kernel"}
    elif segments == 0:
        judge = {"openvino": "none", "why": "the CPU plugin fails on an output of 0 segments"}
    return Case(f"{name}-{num}idx-{segments}seg-{'x'.join(map(str, table.shape))}", *OP, inputs,
                oracle=embedding_segments_sum, **judge)


def _cases():
    rng = np.random.default_rng(7)
    cases = []
    for tag, dtype in TYPES.items():
        for k, (default, weights) in enumerate([(None, False), (0, False), (None, True), (1, True)]):
            cases.append(_case(rng, f"segsum-{tag}-{k}", dtype, default=default if default is None else 0,
                               weights=weights, index_type=np.int64 if k % 2 else np.int32, const=k == 3))
    cases.append(_case(rng, "segsum-unsorted", np.float32, default=0, weights=True, num=6, shuffle=True))
    cases.append(_case(rng, "segsum-no-segments", np.float32, default=None, weights=False, num=0, segments=0))
    cases.append(_case(rng, "segsum-many-empty", np.float32, default=0, weights=False, num=2, segments=6))
    spec_table = np.array([[-0.2, -0.6], [-0.1, -0.4], [-1.9, -1.8], [-1., 1.5], [0.8, -0.7]], np.float32)
    spec = [spec_table, np.array([0, 2, 3, 4], np.int32), np.array([0, 0, 2, 2], np.int32), np.array(3, np.int32),
            np.array(0, np.int32), np.full(4, 0.5, np.float32)]
    cases.append(Case("segsum-spec-example", *OP, named_inputs(NAMES, spec),
                      oracle=embedding_segments_sum))
    emb, i32 = np.ones((4, 2), np.float32), (lambda *v: np.array(v, np.int32))
    n3 = np.array(3, np.int32)
    refusals = [
        ("segment-past-end", [emb, i32(0, 1), i32(0, 3), n3], "index-range"),
        ("segment-negative", [emb, i32(0, 1), i32(-1, 0), n3], "index-range"),
        ("index-past-end", [emb, i32(0, 4), i32(0, 1), n3], "index-range"),
        ("default-negative", [emb, i32(0), i32(0), n3, np.array(-1, np.int32)], "index-range"),
        ("default-past-end", [emb, i32(0), i32(0), n3, np.array(4, np.int32)], "index-range"),
        ("num-segments-negative", [emb, i32(0), i32(0), np.array(-1, np.int32)], "segment-count"),
        ("num-segments-shape", [emb, i32(0), i32(0), i32(1, 2)], "scalar-input"),
        ("num-segments-type", [emb, i32(0), i32(0), np.array(1, np.int64)], "same-element-type"),
        ("segment-ids-shape", [emb, i32(0, 1), i32(0), n3], "segment-ids-shape"),
        ("segment-ids-type", [emb, i32(0), np.array([0], np.int64), n3], "same-element-type"),
        ("indices-type", [emb, np.array([0.0], np.float32), i32(0), n3], "index-type"),
        ("indices-rank", [emb, np.array([[0]], np.int32), np.array([[0]], np.int32), n3], "index-rank"),
        ("table-scalar", [np.array(1, np.float32), i32(0), i32(0), n3], "data-rank"),
        ("weights-shape", [emb, i32(0), i32(0), n3, np.array(0, np.int32), np.ones(2, np.float32)], "weights-shape"),
        ("weights-type", [emb, i32(0), i32(0), n3, np.array(0, np.int32), np.ones(1, np.float64)],
         "same-element-type"),
    ]
    for name, arrays, label in refusals:
        cases.append(Case(f"segsum-refuses-{name}", *OP, named_inputs(NAMES, arrays), error=label))
    with_limit = [emb, i32(0), i32(0), np.array(2**31 - 1, np.int32)]
    cases.append(Case("segsum-refuses-huge-num-segments", *OP, named_inputs(NAMES, with_limit),
                      error="tensor-limit"))
    return cases


CASES = _cases()


@pytest.mark.parametrize("case", CASES, ids=str)
def test_embedding_segments_sum(case):
    harness.check(case, CASES)
