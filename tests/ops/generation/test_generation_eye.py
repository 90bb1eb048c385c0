"""Eye-9 against OpenVINO's CPU plugin and a per-element oracle, exact.

Square, wide, tall and empty matrices; diagonal_index on, above, below and past either edge
(large values of both signs); no batch_shape, an empty one, one and two batch dims, a batch
dim of 0; i32 and i64 inputs as scalars and one-element vectors, as Consts and as Parameters
(the output shape is then only known at run time); output types f32, f16, bf16, f64, i8, u8,
i32, i64. Errors: negative sizes (known at inference and at run time), a 2-D batch_shape,
float or i8 inputs, two-element sizes, boolean output, an output past the tensor limit.

The CPU plugin narrows diagonal_index to 32 bits and skips an Eye whose batch_shape is empty:
those cases are judged by the core reference, which follows the spec.
"""

from __future__ import annotations

from functools import partial

import harness
import numpy as np
import pytest
from harness import Case, Input
from oracles import generation as oracle

OUTPUT_TYPES = ["f32", "f16", "bf16", "f64", "i8", "u8", "i32", "i64"]
GEOMETRIES = [(3, 4, 2), (3, 4, -1), (2, 2, 5), (5, 5, 0), (4, 2, -3), (2, 5, 4), (3, 3, -3), (3, 3, 3),
              (0, 3, 0), (3, 0, 1), (1, 1, 0), (6, 3, -2**40), (3, 6, 2**40), (4, 7, -5)]
BATCHES = [None, [], [2], [1, 2], [0], [2, 3]]


def _eye(cid, rows, columns, diagonal, batch, out_type, *, itype=np.int32, vector=False, const=True):
    def value(v):
        return np.array([v] if vector else v, itype)
    inputs = [Input("num_rows", value(rows), const=const), Input("num_columns", value(columns), const=const),
              Input("diagonal_index", value(diagonal), const=const)]
    if batch is not None:
        # OpenVINO's IR reader fails on an empty Const: an empty batch_shape is fed instead
        inputs.append(Input("batch_shape", np.array(batch, itype), const=const and bool(batch)))
    attrs = {"output_type": out_type}
    judge, why = "cpu", ""
    if batch == []:
        judge, why = "reference", "the CPU plugin skips an Eye whose batch_shape input is empty (its output keeps " \
                                  "whatever the buffer held)"
    if abs(diagonal) >= 2**31:
        judge, why = "reference", "the CPU plugin narrows diagonal_index to 32 bits (-2^40 becomes 0, the main " \
                                  "diagonal); the spec and the core reference leave the matrix zero"
    return Case(cid, "Eye", "opset9", inputs, attrs, oracle=partial(oracle.eye, **attrs), openvino=judge, why=why)


def _cases() -> list[Case]:
    out = []
    for n, (rows, columns, diagonal) in enumerate(GEOMETRIES):
        for b, batch in enumerate(BATCHES):
            if (n + b) % 2:
                continue
            out_type = OUTPUT_TYPES[(n + b) % len(OUTPUT_TYPES)]
            itype = np.int64 if (n + b) % 3 or abs(diagonal) >= 2**31 else np.int32
            out.append(_eye(f"{rows}x{columns}d{diagonal}-b{batch}-{out_type}-{np.dtype(itype)}", rows, columns,
                            diagonal, batch, out_type, itype=itype, vector=bool(n % 2), const=bool(b % 3)))
    for t in OUTPUT_TYPES:
        out.append(_eye(f"types-{t}", 4, 5, 1, [2], t))
        out.append(_eye(f"types-{t}-runtime", 3, 3, -1, None, t, itype=np.int64, const=False))
    i32 = np.int32
    out += [
        Case("rows-negative", "Eye", "opset9", [Input("num_rows", np.array(-1, i32), const=True),
             Input("num_columns", np.array(3, i32), const=True), Input("diagonal_index", np.array(0, i32), const=True)],
             {"output_type": "f32"}, error="eye-size"),
        Case("columns-negative-runtime", "Eye", "opset9", [Input("num_rows", np.array(2, i32)),
             Input("num_columns", np.array(-3, i32)), Input("diagonal_index", np.array(0, i32))],
             {"output_type": "f32"}, error="eye-size"),
        Case("batch-negative", "Eye", "opset9", [Input("num_rows", np.array(2, i32), const=True),
             Input("num_columns", np.array(3, i32), const=True), Input("diagonal_index", np.array(0, i32), const=True),
             Input("batch_shape", np.array([2, -1], i32), const=True)], {"output_type": "f32"}, error="eye-size"),
        Case("batch-negative-runtime", "Eye", "opset9", [Input("num_rows", np.array(2, i32)),
             Input("num_columns", np.array(3, i32)), Input("diagonal_index", np.array(0, i32)),
             Input("batch_shape", np.array([-2], i32))], {"output_type": "f32"}, error="eye-size"),
        Case("batch-rank", "Eye", "opset9", [Input("num_rows", np.array(2, i32)), Input("num_columns", np.array(3, i32)),
             Input("diagonal_index", np.array(0, i32)), Input("batch_shape", np.array([[2]], i32))],
             {"output_type": "f32"}, error="batch-shape-rank"),
        Case("rows-float", "Eye", "opset9", [Input("num_rows", np.array(2, np.float32)),
             Input("num_columns", np.array(3, i32)), Input("diagonal_index", np.array(0, i32))],
             {"output_type": "f32"}, error="integer-type"),
        Case("diagonal-i8", "Eye", "opset9", [Input("num_rows", np.array(2, i32)), Input("num_columns", np.array(3, i32)),
             Input("diagonal_index", np.array(0, np.int8))], {"output_type": "f32"}, error="integer-type"),
        Case("rows-two", "Eye", "opset9", [Input("num_rows", np.array([2, 2], i32)),
             Input("num_columns", np.array(3, i32)), Input("diagonal_index", np.array(0, i32))],
             {"output_type": "f32"}, error="scalar-input"),
        Case("boolean-output", "Eye", "opset9", [Input("num_rows", np.array(2, i32)),
             Input("num_columns", np.array(3, i32)), Input("diagonal_index", np.array(0, i32))],
             {"output_type": "boolean"}, error="output-type"),
        Case("too-large", "Eye", "opset9", [Input("num_rows", np.array(2**20, i32), const=True),
             Input("num_columns", np.array(2**20, i32), const=True), Input("diagonal_index", np.array(0, i32)),
             Input("batch_shape", np.array([2**10], i32), const=True)], {"output_type": "f32"}, error="tensor-limit"),
        Case("too-large-runtime", "Eye", "opset9", [Input("num_rows", np.array(2**20, i32)),
             Input("num_columns", np.array(2**20, i32)), Input("diagonal_index", np.array(0, i32)),
             Input("batch_shape", np.array([2**10], i32))], {"output_type": "f32"}, error="tensor-limit"),
        Case("empty-but-huge", "Eye", "opset9", [Input("num_rows", np.array(2**40, np.int64)),
             Input("num_columns", np.array(0, np.int64)), Input("diagonal_index", np.array(0, np.int64)),
             Input("batch_shape", np.array([2**40], np.int64))], {"output_type": "f32"}, error="tensor-limit"),
    ]
    return out


CASES = _cases()


@pytest.mark.parametrize("case", CASES, ids=str)
def test_eye(case):
    harness.check(case, CASES)


@pytest.mark.parametrize("diagonal", [-(2**63), 2**63 - 1])
def test_a_diagonal_at_the_i64_extremes_has_no_element(diagonal):
    from irscatter.ops.functional import call
    from irscatter.ops.generation.eye import Eye

    out = call(Eye, [np.int64(2), np.int64(3), np.int64(diagonal)], {"output_type": "f32"})
    assert out.shape == (2, 3) and not out.any()
