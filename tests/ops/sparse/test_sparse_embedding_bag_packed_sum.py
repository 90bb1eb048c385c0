"""EmbeddingBagPackedSum-3 against OpenVINO's CPU plugin and `oracles.sparse.embedding_bag_packed`.

Tolerance: exact (sums in index order, in f32 for f16 and bf16, rounded once; integers wrap).
Tables of rank 1 to 4 (size-0 embedding dims too), every numeric type with edge values, with and
without per_sample_weights, batches and bags of size 0.
"""

import harness
import numpy as np
import pytest
from harness import Case, Input, named_inputs
from helpers import element_dtypes
from oracles.sparse import embedding_bag_packed

TYPES = element_dtypes("f32", "f16", "bf16", "f64", "i32", "i64", "i8", "u8")


def packed_case(rng, name, op, opset, dtype, *, weights, reduction=None, index_type=np.int32, batch=None,
                per_bag=None):
    num_emb = int(rng.integers(1, 6))
    emb_dims = [int(d) for d in rng.integers(0 if rng.random() < 0.1 else 1, 4, int(rng.integers(0, 3)))]
    table = harness.values(rng, (num_emb, *emb_dims), dtype, edges=True)
    batch = int(rng.integers(1, 5)) if batch is None else batch
    per_bag = int(rng.integers(1, 4)) if per_bag is None else per_bag
    indices = rng.integers(0, num_emb, (batch, per_bag)).astype(index_type)
    inputs = [Input("emb_table", table), Input("indices", indices)]
    if weights:
        inputs.append(Input("per_sample_weights", harness.values(rng, (batch, per_bag), dtype, low=-2, high=2)))
    attrs = {} if reduction is None else {"reduction": reduction}

    def oracle(*arrays):
        return embedding_bag_packed(*arrays, reduction=reduction or "sum")
    judge = {}
    if np.dtype(dtype) == np.float64:
        judge = {"openvino": "none", "why": "the CPU plugin computes f64 in f32"}
    elif np.dtype(dtype) == np.int64:
        judge = {"openvino": "none", "why": "the CPU plugin computes i64 in i32; the core reference has no i64 kernel"}
    elif per_bag == 0:
        judge = {"openvino": "none", "why": "the CPU plugin refuses bags of no index (the spec gives zeros, a mean 0/0)"}
    return Case(f"{name}-{batch}x{per_bag}-{'x'.join(map(str, table.shape))}", op, opset, inputs, attrs,
                oracle=oracle, **judge)


def refusals(op, opset, attrs=None):
    emb = np.ones((4, 2), np.float32)
    i32 = np.array([[0, 1]], np.int32)
    rows = [
        ("index-past-end", [emb, np.array([[0, 4]], np.int32)], "index-range"),
        ("index-negative", [emb, np.array([[-1, 0]], np.int32)], "index-range"),
        ("index-type", [emb, i32.astype(np.uint8)], "index-type"),
        ("indices-rank", [emb, np.array([0, 1], np.int32)], "index-rank"),
        ("table-scalar", [np.array(1, np.float32), i32], "data-rank"),
        ("table-string-like", [np.ones((2, 2), bool), i32], "numeric-type"),
        ("weights-shape", [emb, i32, np.ones((2, 1), np.float32)], "weights-shape"),
        ("weights-type", [emb, i32, np.ones((1, 2), np.int32)], "same-element-type"),
    ]
    names = ["emb_table", "indices", "per_sample_weights"]
    return [Case(f"{op.lower()}-refuses-{name}", op, opset, named_inputs(names, arrays), attrs or {},
                 error=label) for name, arrays, label in rows]


def _cases():
    rng = np.random.default_rng(33)
    cases = []
    for tag, dtype in TYPES.items():
        for k, weights in enumerate([False, True, False, True]):
            cases.append(packed_case(rng, f"packedsum-{tag}-{k}", "EmbeddingBagPackedSum", "opset3", dtype,
                                     weights=weights, index_type=np.int64 if k % 2 else np.int32))
    cases.append(packed_case(rng, "packedsum-no-bags", "EmbeddingBagPackedSum", "opset3", np.float32,
                             weights=True, batch=0))
    cases.append(packed_case(rng, "packedsum-empty-bags", "EmbeddingBagPackedSum", "opset3", np.float32,
                             weights=False, per_bag=0))
    spec_table = np.array([[-0.2, -0.6], [-0.1, -0.4], [-1.9, -1.8], [-1., 1.5], [0.8, -0.7]], np.float32)
    cases.append(Case("packedsum-spec-example", "EmbeddingBagPackedSum", "opset3",
                      [Input("emb_table", spec_table), Input("indices", np.array([[0, 2], [1, 2], [3, 4]], np.int32)),
                       Input("per_sample_weights", np.full((3, 2), 0.5, np.float32))], oracle=embedding_bag_packed))
    return cases + refusals("EmbeddingBagPackedSum", "opset3")


CASES = _cases()


@pytest.mark.parametrize("case", CASES, ids=str)
def test_embedding_bag_packed_sum(case):
    harness.check(case, CASES)
