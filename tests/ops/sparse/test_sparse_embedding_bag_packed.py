"""EmbeddingBagPacked-15 against OpenVINO's CPU plugin and `oracles.sparse.embedding_bag_packed`.

Tolerance: exact; for reduction mean 1 ulp against OpenVINO (one division) and exact against
the oracle. The cases of EmbeddingBagPackedSum-3 (see its test) in both reductions; a mean over
bags of no index is NaN for floats (the spec's ReduceMean over an empty axis, 0/0) and 0 for
integers, which OpenVINO's CPU plugin refuses; integer means truncate toward zero.
"""

import harness
import ml_dtypes
import numpy as np
import pytest
from harness import Case, Input
from helpers import element_dtypes
from oracles.sparse import embedding_bag_packed
from test_sparse_embedding_bag_packed_sum import packed_case, refusals

TYPES = element_dtypes("f32", "f16", "bf16", "f64", "i32", "i64", "u8")
OP = ("EmbeddingBagPacked", "opset15")


def _cases():
    rng = np.random.default_rng(150)
    cases = []
    for tag, dtype in TYPES.items():
        for k in range(3):
            cases.append(packed_case(rng, f"packed15-sum-{tag}-{k}", *OP, dtype, weights=k == 1, reduction="sum",
                                     index_type=np.int64 if k % 2 else np.int32))
            case = packed_case(rng, f"packed15-mean-{tag}-{k}", *OP, dtype, weights=False, reduction="mean",
                               index_type=np.int64 if k % 2 else np.int32)
            case.ulps = 1 if np.dtype(dtype).kind == "f" or dtype is ml_dtypes.bfloat16 else 0
            cases.append(case)
    cases.append(packed_case(rng, "packed15-default-reduction", *OP, np.float32, weights=True))
    for tag, dtype in (("f32", np.float32), ("i32", np.int32)):
        cases.append(packed_case(rng, f"packed15-mean-empty-bags-{tag}", *OP, dtype, weights=False,
                                 reduction="mean", per_bag=0))
    cases.append(Case("packed15-mean-int-negative", *OP,
                      [Input("emb_table", np.array([[-4], [-3], [5]], np.int32)),
                       Input("indices", np.array([[0, 1], [2, 0]], np.int32))], {"reduction": "mean"},
                      oracle=lambda *a: embedding_bag_packed(*a, reduction="mean")))
    spec_table = np.array([[-0.2, -0.6], [-0.1, -0.4], [-1.9, -1.8], [-1., 1.5], [0.8, -0.7]], np.float32)
    spec = [Input("emb_table", spec_table), Input("indices", np.array([[0, 2], [1, 2], [3, 4]], np.int32))]
    cases.append(Case("packed15-spec-example-1", *OP, spec, {"reduction": "sum"}, oracle=embedding_bag_packed))
    cases.append(Case("packed15-spec-example-2", *OP, spec + [
        Input("per_sample_weights", np.array([[0.5, 0.5], [0.3, 0.7], [2., -1.]], np.float32))],
        {"reduction": "sum"}, oracle=embedding_bag_packed))
    cases.append(Case("packed15-spec-example-3", *OP, spec, {"reduction": "mean"}, ulps=1,
                      oracle=lambda *a: embedding_bag_packed(*a, reduction="mean")))
    cases.append(Case("packed15-refuses-mean-weights", *OP, spec + [
        Input("per_sample_weights", np.ones((3, 2), np.float32))], {"reduction": "mean"}, error="mean-weights"))
    return cases + refusals(*OP, {"reduction": "sum"})


CASES = _cases()


@pytest.mark.parametrize("case", CASES, ids=str)
def test_embedding_bag_packed(case):
    harness.check(case, CASES)
