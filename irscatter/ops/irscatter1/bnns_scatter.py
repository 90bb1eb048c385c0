"""BNNSScatter-1 (irscatter1): Apple's `BNNSScatter`, scatter along one axis with a reduction.

Inputs: 0 `output` (the destination's initial values), 1 `indices` (i32/i64), 2 `input`
(the values to scatter). Attributes `axis` (default 0, negative counts from the end) and
`reduction`, one of BNNS's reduce functions: none, sum, product, max, min, mean.

The shape of `indices` selects one of two modes:

* slice mode: `indices` is 1-D with one entry per slice of `input` along `axis`, and
  `input` has the shape of `output` except along `axis`. Slice `i` of `input` goes to slice
  `indices[i]` of the output.
* element mode: `indices` has the shape of `input` (the rank of `output`, no dimension
  larger than the output's away from `axis`). Element `c` of `input` goes to the output
  position `c` with `c[axis]` replaced by `indices[c]` (ScatterElements).

For a 1-D `input` both modes coincide. The reductions combine each scattered value with
what the output holds, in index order; `mean` averages the original value with every value
scattered to it (integer means are floored). BNNS leaves the order of duplicate writes
undefined; irscatter's choice is the last in row-major order for `none`. Indices must lie
in [0, output.shape[axis] - 1]. f16/bf16 are computed in f32 and rounded once, to
nearest-even.
"""

from __future__ import annotations

from typing import Annotated, Literal

import numpy as np

from irscatter.errors import ExecutionError
from irscatter.ir.element_types import ElementType
from irscatter.ir.shapes import PartialShape
from irscatter.ops.base import Lower, Op, OpAttrs, TensorInfo, check
from irscatter.ops.common import strict
from irscatter.ops.common.axes import normalized_axis
from irscatter.ops.common.buffers import output_buffer
from irscatter.ops.common.indices import normalize_indices
from irscatter.ops.common.numeric import as_rows, compute_dtype, from_compute
from irscatter.ops.common.types import same_element_type
from irscatter.ops.functional import call
from irscatter.ops.registry import register
from irscatter.ops.scatter.core import (
    LAST_WINS_HERE,
    flat_rows_along_axis,
    report_duplicate_rows,
    report_duplicate_slices,
    scatter_rows,
)

DOMAIN = "irscatter"


BNNS_REDUCTIONS = ("none", "sum", "product", "max", "min", "mean")


_CORE_REDUCTION = {"none": "none", "sum": "sum", "product": "prod", "max": "max", "min": "min", "mean": "mean"}


class BNNSAttrs(OpAttrs):
    axis: int = 0
    reduction: Annotated[Literal["none", "sum", "product", "max", "min", "mean"], Lower] = "none"


@register("BNNSScatter", 1, domain=DOMAIN)
class BNNSScatter(Op):
    """Scatter slices (1-D indices) or elements (indices shaped like input) along `axis`."""

    labels = {
        "input-type": "input's element type differs from output's",
        "output-rank": "output is a scalar",
        "input-rank": "input's rank differs from output's",
        "input-shape": "in slice mode, input's shape differs from output's away from the axis",
        "input-extent": "in element mode, an input dimension exceeds output's away from the axis",
    }

    Attrs = BNNSAttrs
    attrs: BNNSAttrs
    inputs = ("output", "indices", "input")

    def infer(self, output: TensorInfo, indices: TensorInfo, input: TensorInfo) -> TensorInfo:
        etype = same_element_type(input, output, "input must have the element type of output", "input-type",
                                  self.port("input"))
        check(etype is not ElementType.string, "output-type", "string tensors cannot be scattered", port=self.port("output"))
        check(not (self.attrs.reduction == "mean" and etype is ElementType.boolean), "mean-boolean",
              "the 'mean' reduction is not defined for boolean tensors")
        check(indices.etype in (ElementType.i32, ElementType.i64, ElementType.dynamic), "indices-type",
              f"indices must be i32 or i64, found {indices.etype}", port=self.port("indices"))
        if not (output.shape.rank_is_static and indices.shape.rank_is_static and input.shape.rank_is_static):
            return TensorInfo(etype, output.shape)
        r = output.shape.rank
        check(r >= 1, "output-rank", "output must have rank at least 1", port=self.port("output"))
        axis = normalized_axis(self.attrs.axis, r, port=self.port("axis"))
        check(input.shape.rank == r, "input-rank",
              f"input must have the rank of output ({r}), found shape {input.shape}", port=self.port("input"))
        if indices.shape.rank == 1 and r > 1:  # slice mode
            check(indices.shape[0].compatible(input.shape[axis]), "indices-shape",
                  f"1-D indices need one entry per slice of input along axis {axis}: "
                  f"indices {indices.shape}, input {input.shape}", port=self.port("indices"))
            expected = PartialShape.of(output.shape.ranked_dims[:axis] + (input.shape[axis],) + output.shape.ranked_dims[axis + 1:])
            check(expected.compatible(input.shape), "input-shape",
                  f"in slice mode input must have the shape of output except along axis {axis}: "
                  f"input {input.shape}, output {output.shape}", port=self.port("input"))
        else:  # element mode
            check(indices.shape.compatible(input.shape), "indices-shape",
                  f"indices must be 1-D (slice mode) or have the shape of input {input.shape} (element mode), "
                  f"found {indices.shape}", port=self.port("indices"))
            for d, (n, m) in enumerate(zip(input.shape, output.shape)):
                if d != axis and n.is_static and m.is_static:
                    check(n.min <= m.min, "input-extent",
                          f"input dimension {d} ({n}) must not exceed output dimension {d} ({m}) away from the axis",
                          port=self.port("input"))
        return TensorInfo(etype, output.shape)

    def compute(self, output: np.ndarray, indices: np.ndarray, input: np.ndarray) -> np.ndarray:
        axis = normalized_axis(self.attrs.axis, output.ndim, port=self.port("axis"), at_runtime=True)
        reduction = _CORE_REDUCTION[self.attrs.reduction]
        idx = normalize_indices(indices, output.shape[axis], allow_negative=False, port=self.port("indices"))
        etype = ElementType.from_dtype(output.dtype)
        if indices.ndim == 1 and output.ndim > 1:  # slice mode: whole slices along the axis
            expected = output.shape[:axis] + (len(idx),) + output.shape[axis + 1:]
            if input.shape != expected:
                raise ExecutionError(f"input has shape {list(input.shape)}, slice mode needs {list(expected)}",
                                     port=self.port("input"))
            if reduction == "none" and strict.active():  # BNNS leaves the order of duplicates undefined
                report_duplicate_slices(idx, indices.shape, output.ndim, axis, port=self.port("indices"),
                                        name="output", rule=LAST_WINS_HERE)
            moved = output_buffer(np.moveaxis(output, axis, 0), compute_dtype(etype), inplace=False)  # slices become rows
            upd2d = as_rows(np.moveaxis(input, axis, 0)).astype(moved.dtype, copy=False)
            scatter_rows(as_rows(moved), idx, upd2d, reduction)
            return from_compute(np.moveaxis(moved, 0, axis), etype)
        if indices.shape != input.shape or any(
                n > m for d, (n, m) in enumerate(zip(input.shape, output.shape)) if d != axis):
            raise ExecutionError(f"indices {list(indices.shape)} and input {list(input.shape)} do not fit "
                                 f"output {list(output.shape)} in element mode", port=self.port("indices"))
        out = output_buffer(output, compute_dtype(etype), inplace=False)
        rows = flat_rows_along_axis(idx, output.shape, axis)
        if reduction == "none" and strict.active():
            report_duplicate_rows(rows, indices.shape, output.shape, 0, port=self.port("indices"), name="output",
                                  rule=LAST_WINS_HERE)
        scatter_rows(out.reshape(-1), rows, input.reshape(-1).astype(out.dtype, copy=False), reduction)
        return from_compute(out, etype)


def bnns_scatter(output, indices, input, axis: int = 0, reduction: str = "none") -> np.ndarray:
    """`BNNSScatter(axis, reduction, input, indices, output)` on numpy arrays; returns the
    new output and leaves `output` itself untouched."""
    return call(BNNSScatter, (output, indices, input), {"axis": axis, "reduction": reduction})
