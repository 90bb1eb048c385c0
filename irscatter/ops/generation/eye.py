"""Eye-9: a matrix (or a batch of them) of zeros with ones on one diagonal.

output[..., i, i + diagonal_index] = 1 where that column exists, 0 elsewhere; the shape is
batch_shape + [num_rows, num_columns]. num_rows, num_columns and diagonal_index are scalars
or one-element 1-D tensors, batch_shape a 1-D tensor (empty: a single matrix), all of type
i32 or i64; the sizes must be non-negative. A diagonal_index past either edge (>= num_columns
or <= -num_rows) leaves the matrix all zeros, as the spec says. The output sizes come from
input values: inference gives dynamic dims until they are known, and the kernel checks the
size against irscatter's tensor limits before it allocates.

OpenVINO's CPU plugin departs from the spec and its core reference in two places, where
irscatter follows the spec: it narrows diagonal_index to 32 bits (an i64 -2^40 selects the
main diagonal instead of none), and it leaves the output unwritten when batch_shape is an
empty tensor fed at run time.
"""

from __future__ import annotations

import numpy as np

from irscatter.errors import ExecutionError
from irscatter.ir.element_types import ElementType
from irscatter.ir.shapes import PartialShape
from irscatter.limits import check_inferred
from irscatter.ops.base import ElementTypeAttr, Op, OpAttrs, TensorInfo, check
from irscatter.ops.common.axes import int_values
from irscatter.ops.common.numeric import convert_array
from irscatter.ops.common.ranges import SMALL_COUNT, Bounds
from irscatter.ops.common.types import arithmetic_float, check_integral
from irscatter.ops.generation.core import check_output
from irscatter.ops.registry import register


class EyeAttrs(OpAttrs):
    output_type: ElementTypeAttr


def eye_output_type(etype: ElementType) -> bool:
    """The numeric types with a 1 to write: integers and arithmetic floats of a byte or more."""
    return not etype.is_packed and (etype.is_integral or arithmetic_float(etype))


@register("Eye", 9)
class Eye(Op):
    labels = {
        "eye-size": "num_rows, num_columns or a batch_shape value is negative",
        "batch-shape-rank": "batch_shape is not a 1-D tensor",
    }

    Attrs = EyeAttrs
    attrs: EyeAttrs
    inputs = ("num_rows", "num_columns", "diagonal_index", "batch_shape")
    optional_inputs = 1

    def input_range(self, position: int, infos) -> Bounds | None:
        return (SMALL_COUNT, SMALL_COUNT, (-2, 2), SMALL_COUNT)[position]

    def infer(self, num_rows: TensorInfo, num_columns: TensorInfo, diagonal_index: TensorInfo,
              batch_shape: TensorInfo | None = None) -> TensorInfo:
        etype = self.attrs.output_type
        check(eye_output_type(etype), "output-type", f"output_type must be a numeric type, found {etype}")
        for name, info in (("num_rows", num_rows), ("num_columns", num_columns), ("diagonal_index", diagonal_index)):
            check_integral(info, name, self.port(name), "integer-type")
            check(info.etype in (ElementType.i32, ElementType.i64, ElementType.dynamic), "integer-type",
                  f"{name} must be of type i32 or i64, found {info.etype}", port=self.port(name))
            if info.shape.rank_is_static:
                check(info.shape.rank == 0 or (info.shape.rank == 1 and info.shape[0].contains(1)), "scalar-input",
                      f"{name} must be a scalar or a 1-D tensor of one element, found {info.shape}",
                      port=self.port(name))
        rows, columns = self._size(num_rows, "num_rows"), self._size(num_columns, "num_columns")
        batch: list[int] = []
        if batch_shape is not None:
            check_integral(batch_shape, "batch_shape", self.port("batch_shape"), "integer-type")
            check(batch_shape.etype in (ElementType.i32, ElementType.i64, ElementType.dynamic), "integer-type",
                  f"batch_shape must be of type i32 or i64, found {batch_shape.etype}", port=self.port("batch_shape"))
            if not batch_shape.shape.rank_is_static:
                return TensorInfo(etype, PartialShape.dynamic_rank())
            check(batch_shape.shape.rank == 1, "batch-shape-rank",
                  f"batch_shape must be a 1-D tensor, found shape {batch_shape.shape}", port=self.port("batch_shape"))
            values = int_values(batch_shape.value)
            if values is not None:
                check(all(v >= 0 for v in values), "eye-size", f"batch_shape {values} has a negative value",
                      port=self.port("batch_shape"))
                batch = values
            elif batch_shape.shape[0].is_static:
                batch = [-1] * int(batch_shape.shape[0])
            else:
                return TensorInfo(etype, PartialShape.dynamic_rank())
        shape = PartialShape.of([*batch, rows, columns])
        if shape.is_static:
            check_inferred(shape.to_tuple(), etype.dtype.itemsize, "output 0")
        return TensorInfo(etype, shape)

    def _size(self, info: TensorInfo, name: str) -> int:
        if info.value is None:
            return -1
        value = int(np.asarray(info.value).reshape(-1)[0])
        check(value >= 0, "eye-size", f"{name} must be non-negative, found {value}", port=self.port(name))
        return value

    def compute(self, num_rows: np.ndarray, num_columns: np.ndarray, diagonal_index: np.ndarray,
                batch_shape: np.ndarray | None = None) -> np.ndarray:
        rows, columns, diagonal = (int(np.asarray(v).reshape(-1)[0]) for v in (num_rows, num_columns, diagonal_index))
        batch = [] if batch_shape is None else [int(v) for v in np.asarray(batch_shape).reshape(-1)]
        for name, value in (("num_rows", rows), ("num_columns", columns)):
            if value < 0:
                raise ExecutionError(f"{name} must be non-negative, found {value}", port=self.port(name),
                                     label="eye-size")
        if any(v < 0 for v in batch):
            raise ExecutionError(f"batch_shape {batch} has a negative value", port=self.port("batch_shape"),
                                 label="eye-size")
        etype = self.attrs.output_type
        check_output([*batch, rows, columns], etype.dtype.itemsize)
        matrix = np.zeros((rows, columns), dtype=etype.dtype)
        # the diagonal starts at row max(0, -d), column max(0, d) and runs while both exist
        # (clamped to the matrix: a diagonal far outside, up to the i64 extremes, has no element)
        first_row, first_column = min(max(0, -diagonal), rows), min(max(0, diagonal), columns)
        length = max(0, min(rows - first_row, columns - first_column))
        steps = np.arange(length)
        matrix[first_row + steps, first_column + steps] = convert_array(np.ones(1, np.int8), ElementType.i8, etype)[0]
        return np.array(np.broadcast_to(matrix, (*batch, rows, columns)))
