"""SparseFillEmptyRows-16: a 2-D sparse tensor (indices [M, 2], values [M], dense_shape [2])
with an entry of `default_value` added at [row, 0] for each row that has none.

Outputs: output_indices [M', 2] and output_values [M'] (M' = M + the number of empty rows), in
row-major order (sorted by row, then column; entries at one position keep their input order,
where OpenVINO's reference sorts with std::sort, which need not), and empty_row_indicator
[dense_shape[0]], true for the rows that were empty. The output sizes depend on the input
values: inference gives them when it knows the values, dynamic dims otherwise, and the kernel
checks them against the tensor-size limit before allocating.

Indices must be positions of the dense tensor: a row outside [0, dense_shape[0]) or a column
outside [0, dense_shape[1]) is refused (`index-range`); OpenVINO's CPU plugin drops entries of
rows past the end and keeps columns past it. With dense_shape[1] = 0 an empty row still gets
its [row, 0] entry, as OpenVINO gives it.
"""

from __future__ import annotations

import numpy as np

from irscatter.errors import ExecutionError
from irscatter.ir.element_types import ElementType
from irscatter.ir.shapes import PartialShape
from irscatter.limits import check_allocation
from irscatter.ops.base import Op, TensorInfo, check
from irscatter.ops.common.ranges import SMALL_COUNT, Bounds, indices_within
from irscatter.ops.common.types import same_element_type
from irscatter.ops.registry import register
from irscatter.ops.sparse.core import check_index, check_numeric


@register("SparseFillEmptyRows", 16)
class SparseFillEmptyRows(Op):
    labels = {
        "values-rank": "values is not a 1-D tensor",
        "dense-shape": "dense_shape is not a 1-D tensor of two sizes >= 0",
    }

    inputs = ("values", "dense_shape", "indices", "default_value")
    outputs = 3

    def input_range(self, position: int, infos) -> Bounds | None:
        if position == 1:
            return SMALL_COUNT
        sizes = infos[1].value
        if position != 2 or sizes is None or np.asarray(sizes).size != 2:
            return None
        return indices_within(int(np.asarray(sizes).min()))  # rows and columns of the dense shape

    def infer(self, values: TensorInfo, dense_shape: TensorInfo, indices: TensorInfo,
              default_value: TensorInfo) -> tuple[TensorInfo, TensorInfo, TensorInfo]:
        check_numeric(self, values, "values")
        same_element_type(values, default_value, "default_value must have the element type of values",
                          "same-element-type", self.port("default_value"))
        if values.shape.rank_is_static:
            check(values.shape.rank == 1, "values-rank", f"values must be 1-D, found shape {values.shape}",
                  port=self.port("values"))
        check_index(self, dense_shape, "dense_shape", 1)
        check_index(self, indices, "indices", 2)
        if default_value.shape.rank_is_static:
            check(default_value.shape.rank == 0 or (default_value.shape.rank == 1 and default_value.shape[0].contains(1)),
                  "scalar-input", f"default_value must be a scalar, found shape {default_value.shape}",
                  port=self.port("default_value"))
        idx_type = same_element_type(dense_shape, indices, "indices must have the element type of dense_shape",
                                     "same-element-type", self.port("indices"))
        if dense_shape.shape.rank_is_static:
            check(dense_shape.shape[0].contains(2), "dense-shape",
                  f"dense_shape must hold 2 sizes, found shape {dense_shape.shape}", port=self.port("dense_shape"))
        if indices.shape.rank_is_static:
            check(indices.shape[1].contains(2), "indices-shape",
                  f"indices must have shape [M, 2], found {indices.shape}", port=self.port("indices"))
            if values.shape.rank_is_static:
                check(indices.shape[0].compatible(values.shape[0]), "indices-shape",
                      f"indices must have one row per value, found {indices.shape} for values {values.shape}",
                      port=self.port("indices"))
        rows, total = -1, -1
        if dense_shape.value is not None:
            sizes = [int(v) for v in np.asarray(dense_shape.value).reshape(-1)]
            check(all(s >= 0 for s in sizes), "dense-shape", f"dense_shape {sizes} has a negative size",
                  port=self.port("dense_shape"))
            rows = sizes[0]
            if indices.value is not None:
                used = np.unique(np.asarray(indices.value).reshape(-1, 2)[:, 0])
                total = indices.value.shape[0] + rows - int(np.count_nonzero((used >= 0) & (used < rows)))
        return (TensorInfo(idx_type, PartialShape.of([total, 2])), TensorInfo(values.etype, PartialShape.of([total])),
                TensorInfo(ElementType.boolean, PartialShape.of([rows])))

    def compute(self, values: np.ndarray, dense_shape: np.ndarray, indices: np.ndarray,
                default_value: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        sizes = [int(v) for v in dense_shape.reshape(-1)]
        if len(sizes) != 2 or min(sizes) < 0:
            raise ExecutionError(f"dense_shape must hold two sizes >= 0, found {sizes}", port=self.port("dense_shape"),
                                 label="dense-shape")
        if indices.ndim != 2 or indices.shape[1] != 2 or indices.shape[0] != values.shape[0]:
            raise ExecutionError(f"indices must have shape [{values.shape[0]}, 2], found {list(indices.shape)}",
                                 port=self.port("indices"), label="indices-shape")
        rows, cols = sizes
        check_allocation([rows], 1, port="output 2")
        check_allocation([values.shape[0] + rows, 2], indices.dtype.itemsize)
        at = indices.astype(np.int64, copy=False)
        bad = (at[:, 0] < 0) | (at[:, 0] >= rows) | (at[:, 1] < 0) | (at[:, 1] >= cols)
        if bad.any():
            k = int(np.flatnonzero(bad)[0])
            raise ExecutionError(f"index {at[k].tolist()} at position {k} lies outside the dense shape {sizes}",
                                 port=self.port("indices"), label="index-range")
        empty = np.ones(rows, bool)
        empty[at[:, 0]] = False
        filled = np.flatnonzero(empty)
        all_rows = np.concatenate([at[:, 0], filled])
        all_cols = np.concatenate([at[:, 1], np.zeros(filled.size, np.int64)])
        order = np.lexsort((all_cols, all_rows))  # stable: equal positions keep their order
        out_indices = np.stack([all_rows[order], all_cols[order]], axis=1).astype(indices.dtype)
        fill = np.full(filled.size, np.asarray(default_value).reshape(-1)[0], values.dtype)
        out_values = np.concatenate([values, fill])[order]
        return out_indices, out_values, empty
