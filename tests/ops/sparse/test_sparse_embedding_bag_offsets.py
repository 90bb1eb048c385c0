"""EmbeddingBagOffsets-15 against OpenVINO's CPU plugin and `oracles.sparse.embedding_bag_offsets`.

Tolerance: exact; for reduction mean 1 ulp against OpenVINO (one division, which the CPU plugin
may compute as a multiplication by the reciprocal) and exact against the oracle. The cases of
EmbeddingBagOffsetsSum-3 (see its test) in both reductions; a mean of an empty bag is its fill
(zeros or the default row, not divided); integer means truncate toward zero.
"""

import harness
import ml_dtypes
import numpy as np
import pytest
from harness import Case, Input
from helpers import element_dtypes
from oracles.sparse import embedding_bag_offsets
from test_sparse_embedding_bag_offsets_sum import offsets_case, refusals

TYPES = element_dtypes("f32", "f16", "bf16", "f64", "i32", "i64", "i8")
OP = ("EmbeddingBagOffsets", "opset15")


def _cases():
    rng = np.random.default_rng(15)
    cases = []
    for tag, dtype in TYPES.items():
        for k, (weights, default) in enumerate([(False, None), (False, -1), (False, 0), (True, 1)]):
            cases.append(offsets_case(rng, f"offsets15-sum-{tag}-{k}", *OP, dtype, weights=weights, default=default,
                                      reduction="sum", index_type=np.int64 if k % 2 else np.int32))
            if not weights:
                case = offsets_case(rng, f"offsets15-mean-{tag}-{k}", *OP, dtype, weights=False, default=default,
                                    reduction="mean", index_type=np.int64 if k % 2 else np.int32)
                case.ulps = 1 if np.dtype(dtype).kind == "f" or dtype is ml_dtypes.bfloat16 else 0
                cases.append(case)
    cases.append(offsets_case(rng, "offsets15-default-reduction", *OP, np.float32, weights=True, default=0))
    cases.append(offsets_case(rng, "offsets15-mean-trailing-empty", *OP, np.float32, weights=False, default=0,
                              reduction="mean", num=3, batch=5))
    # an integer mean of a negative sum truncates toward zero: (-7) / 2 = -3
    cases.append(Case("offsets15-mean-int-negative", *OP,
                      [Input("emb_table", np.array([[-4], [-3], [5]], np.int32)),
                       Input("indices", np.array([0, 1, 2, 0, 2], np.int32)),
                       Input("offsets", np.array([0, 2, 3], np.int32))], {"reduction": "mean"},
                      oracle=lambda *a: embedding_bag_offsets(*a, reduction="mean")))
    spec_table = np.array([[-0.2, -0.6], [-0.1, -0.4], [-1.9, -1.8], [-1., 1.5], [0.8, -0.7]], np.float32)
    spec = [Input("emb_table", spec_table), Input("indices", np.array([0, 2, 3, 4], np.int32)),
            Input("offsets", np.array([0, 2, 2], np.int32))]
    cases.append(Case("offsets15-spec-example-1", *OP, spec + [
        Input("default_index", np.array(0, np.int32)), Input("per_sample_weights", np.full(4, 0.5, np.float32))],
        {"reduction": "sum"}, oracle=embedding_bag_offsets))
    cases.append(Case("offsets15-spec-example-2", *OP, spec + [
        Input("default_index", np.array(-1, np.int32)),
        Input("per_sample_weights", np.array([0.5, 0.2, -2, 1], np.float32))],
        {"reduction": "sum"}, oracle=embedding_bag_offsets))
    cases.append(Case("offsets15-spec-example-3", *OP, spec, {"reduction": "mean"}, ulps=1,
                      oracle=lambda *a: embedding_bag_offsets(*a, reduction="mean")))
    cases.append(Case("offsets15-refuses-mean-weights", *OP, spec + [
        Input("default_index", np.array(-1, np.int32)), Input("per_sample_weights", np.ones(4, np.float32))],
        {"reduction": "mean"}, error="mean-weights"))
    cases.append(Case("offsets15-refuses-reduction", *OP, spec, {"reduction": "max"}, error="attributes"))
    return cases + refusals(*OP, {"reduction": "sum"})


CASES = _cases()


@pytest.mark.parametrize("case", CASES, ids=str)
def test_embedding_bag_offsets(case):
    harness.check(case, CASES)
