"""EmbeddingBagOffsetsSum-3 against OpenVINO's CPU plugin and `oracles.sparse.embedding_bag_offsets`.

Tolerance: exact (sums in index order, in f32 for f16 and bf16, rounded once; integers wrap).
Tables of rank 1 to 4 (size-0 embedding dims too), every numeric type with edge values, with and
without default_index (-1, a row) and per_sample_weights, empty bags anywhere, indices before the
first offset, and offsets equal to the number of indices (the spec's trailing empty bags, which
OpenVINO refuses).
"""

import harness
import numpy as np
import pytest
from harness import Case, Input, named_inputs
from helpers import element_dtypes
from oracles.sparse import embedding_bag_offsets

TYPES = element_dtypes("f32", "f16", "bf16", "f64", "i32", "i64", "i8", "u8")
CPU_REFUSES = "OpenVINO refuses an offset equal to the number of indices (the spec allows it: trailing empty bags)"


def offsets_case(rng, name, op, opset, dtype, *, weights, default, reduction=None, index_type=np.int32,
                 num=None, batch=None, start=0):
    num_emb = int(rng.integers(1, 6))
    table = harness.values(rng, (num_emb, *[int(d) for d in rng.integers(0 if rng.random() < 0.1 else 1, 4,
                                                                             int(rng.integers(0, 3)))]),
                           dtype, edges=True)
    num = int(rng.integers(0, 7)) if num is None else num
    batch = int(rng.integers(1, 5)) if batch is None else batch
    indices = rng.integers(0, num_emb, num).astype(index_type)
    offsets = np.sort(rng.integers(start, num + 1, batch)).astype(index_type)
    if batch and start == 0:
        offsets[0] = 0
    inputs = [Input("emb_table", table), Input("indices", indices), Input("offsets", offsets)]
    args = [table, indices, offsets]
    if default is not None or weights:
        d = np.array(default if default is not None else -1, index_type)
        inputs.append(Input("default_index", d))
        args.append(d)
    if weights:
        w = harness.values(rng, (num,), dtype, low=-2, high=2)
        inputs.append(Input("per_sample_weights", w))
    attrs = {} if reduction is None else {"reduction": reduction}

    def oracle(*arrays):
        return embedding_bag_offsets(*arrays, reduction=reduction or "sum")
    judge = {}
    if batch and offsets.max(initial=0) >= num:
        judge = {"openvino": "none", "why": CPU_REFUSES}
    elif np.dtype(dtype) == np.float64:
        judge = {"openvino": "none", "why": "the CPU plugin computes f64 in f32"}
    elif np.dtype(dtype) == np.int64:
        judge = {"openvino": "none", "why": "the CPU plugin computes i64 in i32; the core reference has no i64 kernel"}
    return Case(f"{name}-{num}idx-{batch}bags-{'x'.join(map(str, table.shape))}", op, opset, inputs, attrs,
                oracle=oracle, **judge)


def refusals(op, opset, attrs=None):
    emb = np.ones((4, 2), np.float32)
    i32 = lambda *v: np.array(v, np.int32)  # noqa: E731
    rows = [
        ("offsets-decrease", [emb, i32(0, 1, 2), i32(0, 2, 1)], "bag-offsets"),
        ("offsets-past-end", [emb, i32(0, 1), i32(0, 3)], "bag-offsets"),
        ("offsets-negative", [emb, i32(0, 1), i32(-1, 1)], "bag-offsets"),
        ("index-past-end", [emb, i32(0, 4), i32(0)], "index-range"),
        ("index-negative", [emb, i32(0, -1), i32(0)], "index-range"),
        ("default-past-end", [emb, i32(0), i32(0, 1), np.array(4, np.int32)], "index-range"),
        ("default-negative", [emb, i32(0), i32(0, 1), np.array(-2, np.int32)], "index-range"),
        ("index-type", [emb, np.array([0], np.int8), np.array([0], np.int8)], "index-type"),
        ("offsets-type", [emb, i32(0), np.array([0], np.int64)], "same-element-type"),
        ("default-type", [emb, i32(0), i32(0), np.array(0, np.int64)], "same-element-type"),
        ("indices-rank", [emb, np.array([[0]], np.int32), i32(0)], "index-rank"),
        ("offsets-rank", [emb, i32(0), np.array(0, np.int32)], "index-rank"),
        ("default-shape", [emb, i32(0), i32(0), i32(0, 0)], "scalar-input"),
        ("table-scalar", [np.array(1, np.float32), i32(0), i32(0)], "data-rank"),
        ("table-boolean", [np.ones((2, 2), bool), i32(0), i32(0)], "numeric-type"),
        ("weights-shape", [emb, i32(0, 1), i32(0), np.array(-1, np.int32), np.ones(3, np.float32)], "weights-shape"),
        ("weights-type", [emb, i32(0, 1), i32(0), np.array(-1, np.int32), np.ones(2, np.float16)], "same-element-type"),
    ]
    names = ["emb_table", "indices", "offsets", "default_index", "per_sample_weights"]
    return [Case(f"{op.lower()}-refuses-{name}", op, opset, named_inputs(names, arrays), attrs or {},
                 error=label) for name, arrays, label in rows]


def _cases():
    rng = np.random.default_rng(3)
    cases = []
    for tag, dtype in TYPES.items():
        for k, (weights, default) in enumerate([(False, None), (False, -1), (False, 0), (True, None), (True, 1)]):
            cases.append(offsets_case(rng, f"offsetssum-{tag}-{k}", "EmbeddingBagOffsetsSum", "opset3", dtype,
                                      weights=weights, default=None if default is None else default % 1,
                                      index_type=np.int64 if k % 2 else np.int32))
    cases.append(offsets_case(rng, "offsetssum-trailing-empty", "EmbeddingBagOffsetsSum", "opset3", np.float32,
                              weights=True, default=0, num=3, batch=5))
    cases.append(offsets_case(rng, "offsetssum-no-indices", "EmbeddingBagOffsetsSum", "opset3", np.float32,
                              weights=False, default=0, num=0, batch=3))
    cases.append(offsets_case(rng, "offsetssum-no-bags", "EmbeddingBagOffsetsSum", "opset3", np.float32,
                              weights=False, default=None, num=3, batch=0))
    cases.append(offsets_case(rng, "offsetssum-late-start", "EmbeddingBagOffsetsSum", "opset3", np.float32,
                              weights=True, default=-1, num=6, batch=2, start=2))
    spec_table = np.array([[-0.2, -0.6], [-0.1, -0.4], [-1.9, -1.8], [-1., 1.5], [0.8, -0.7]], np.float32)
    for default in (0, -1):
        cases.append(Case(f"offsetssum-spec-example-default{default}", "EmbeddingBagOffsetsSum", "opset3",
                          [Input("emb_table", spec_table), Input("indices", np.array([0, 2, 3, 4], np.int32)),
                           Input("offsets", np.array([0, 2, 2], np.int32)),
                           Input("default_index", np.array(default, np.int32), const=True),
                           Input("per_sample_weights", np.full(4, 0.5, np.float32))],
                          oracle=embedding_bag_offsets))
    return cases + refusals("EmbeddingBagOffsetsSum", "opset3")


CASES = _cases()


@pytest.mark.parametrize("case", CASES, ids=str)
def test_embedding_bag_offsets_sum(case):
    harness.check(case, CASES)
