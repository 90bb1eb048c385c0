"""SparseFillEmptyRows-16 against OpenVINO's CPU plugin and `oracles.sparse.sparse_fill_empty_rows`.

Tolerance: exact (values are moved, never computed). Sorted and unsorted indices, repeated
positions, no entries, no rows, every row empty or none, every numeric type of values (edge
values included) and i32/i64 indices. The output sizes depend on the values: the IR declares
them as inference computes them from the known inputs.
"""

import harness
import numpy as np
import pytest
from harness import Case, named_inputs
from helpers import element_dtypes
from oracles.sparse import sparse_fill_empty_rows

TYPES = element_dtypes("f32", "f16", "bf16", "f64", "i32", "i64", "i8", "u8")
OP = ("SparseFillEmptyRows", "opset16")
NAMES = ["values", "dense_shape", "indices", "default_value"]


def _case(name, values, dense_shape, indices, default, **judge):
    arrays = [values, dense_shape, indices, default]
    return Case(name, *OP, named_inputs(NAMES, arrays), oracle=sparse_fill_empty_rows, **judge)


def _cases():
    rng = np.random.default_rng(160)
    cases = []
    for tag, dtype in TYPES.items():
        for k in range(3):
            rows, cols, m = int(rng.integers(1, 7)), int(rng.integers(1, 5)), int(rng.integers(0, 7))
            index_type = np.int64 if k % 2 else np.int32
            indices = np.stack([rng.integers(0, rows, m), rng.integers(0, cols, m)], axis=1).astype(index_type)
            if k == 0:
                indices = indices[np.lexsort((indices[:, 1], indices[:, 0]))]
            values = harness.values(rng, (m,), dtype, edges=True)
            default = harness.values(rng, (), dtype)
            judge = {}
            if tag in ("f64", "i64"):
                judge = {"openvino": "none", "why": f"the CPU plugin holds {tag} in a 32-bit type"}
            cases.append(_case(f"sfer-{tag}-{k}-{rows}x{cols}-{m}", values, np.array([rows, cols], index_type), indices,
                               default, **judge))
    f, i32 = np.float32, (lambda *v: np.array(v, np.int32))
    cases.append(_case("sfer-spec-example-1", np.array([1, 2, 3, 4], f), i32(5, 6),
                       i32([0, 1], [0, 3], [2, 0], [3, 1]), np.array(42, f)))
    cases.append(_case("sfer-spec-example-2", np.array([1, 3], f), i32(3, 3), i32([0, 0], [2, 2]), np.array(42, f)))
    cases.append(_case("sfer-no-entries", np.zeros(0, f), i32(3, 2), np.zeros((0, 2), np.int32), np.array(7, f)))
    cases.append(_case("sfer-no-empty-row", np.array([1, 2], f), i32(2, 2), i32([1, 1], [0, 0]), np.array(7, f)))
    cases.append(_case("sfer-repeated", np.array([1, 2, 3, 4], f), i32(4, 3), i32([0, 1], [0, 1], [2, 0], [0, 1]),
                       np.array(-1, f)))
    cases.append(_case("sfer-no-columns", np.zeros(0, f), i32(3, 0), np.zeros((0, 2), np.int32), np.array(7, f)))
    cases.append(_case("sfer-no-rows", np.zeros(0, f), i32(0, 4), np.zeros((0, 2), np.int32), np.array(7, f),
                       openvino="none", why="the CPU plugin fails on outputs of size 0"))
    one = [np.array([1.0], f), i32(2, 2), i32([0, 0]), np.array(0, f)]
    refusals = [
        ("row-past-end", {2: i32([2, 0])}, "index-range"),
        ("column-past-end", {2: i32([0, 2])}, "index-range"),
        ("negative-index", {2: i32([-1, 0])}, "index-range"),
        ("dense-shape-negative", {1: i32(-1, 2)}, "dense-shape"),
        ("dense-shape-length", {1: i32(2, 2, 2)}, "dense-shape"),
        ("dense-shape-rank", {1: i32([2, 2])}, "index-rank"),
        ("indices-width", {2: i32([0, 0, 0])}, "indices-shape"),
        ("indices-count", {2: i32([0, 0], [1, 1])}, "indices-shape"),
        ("indices-type", {2: np.array([[0, 0]], np.int64)}, "same-element-type"),
        ("index-float", {1: np.array([2, 2], f), 2: np.array([[0, 0]], f)}, "index-type"),
        ("values-rank", {0: np.array([[1.0]], f)}, "values-rank"),
        ("values-boolean", {0: np.array([True]), 3: np.array(False)}, "numeric-type"),
        ("default-type", {3: np.array(0, np.float16)}, "same-element-type"),
        ("default-shape", {3: np.array([0, 0], f)}, "scalar-input"),
        ("huge-dense-shape", {1: i32(2**31 - 1, 2)}, "tensor-limit"),
    ]
    for name, change, label in refusals:
        arrays = [change.get(k, a) for k, a in enumerate(one)]
        cases.append(Case(f"sfer-refuses-{name}", *OP, named_inputs(NAMES, arrays), error=label))
    return cases


CASES = _cases()


@pytest.mark.parametrize("case", CASES, ids=str)
def test_sparse_fill_empty_rows(case):
    harness.check(case, CASES)
