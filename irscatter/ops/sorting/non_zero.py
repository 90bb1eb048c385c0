"""NonZero-3: the coordinates of the non-zero elements of a tensor in row-major order, as a
[rank, count] tensor of `output_type` (i64 or i32): column j holds the j-th non-zero element's
coordinates. NaN is non-zero, -0.0 is zero; booleans count their true elements. The data may be
of any numeric or boolean type.

The count depends on the values: inference gives [rank, 0..n] unless it knows them.

Departure of OpenVINO from the spec: for a scalar OpenVINO gives shape [1, count] (a [[0]] for a
non-zero scalar, for ONNX's sake); the spec's [rank(data), count] is [0, count], which irscatter
gives: [0, 1] for a non-zero scalar and [0, 0] for a zero.
"""

from __future__ import annotations

import math

import numpy as np

from irscatter.ir.element_types import ElementType
from irscatter.ir.shapes import Dimension, PartialShape
from irscatter.ops.base import Op, OpAttrs, TensorInfo, check
from irscatter.ops.registry import register
from irscatter.ops.sorting.core import IndexType, numeric, sort_keys


class NonZeroAttrs(OpAttrs):
    output_type: IndexType = "i64"


def non_zero(data: np.ndarray) -> np.ndarray:
    """The [rank, count] int64 coordinates of the non-zero elements."""
    mask = data != 0 if data.dtype == np.bool_ else sort_keys(data) != 0
    if data.ndim == 0:
        return np.zeros((0, int(bool(mask))), np.int64)
    return np.array(np.nonzero(mask), dtype=np.int64).reshape(data.ndim, -1)


@register("NonZero", 3)
class NonZero(Op):
    labels = {"non-zero-type": "NonZero takes numeric and boolean data, not strings"}

    Attrs = NonZeroAttrs
    attrs: NonZeroAttrs
    inputs = ("data",)

    def infer(self, data: TensorInfo) -> TensorInfo:
        check(numeric(data.etype) or data.etype is ElementType.boolean, "non-zero-type",
              f"NonZero takes numeric or boolean data, found {data.etype}", port=self.port("data"))
        etype = ElementType[self.attrs.output_type]
        if not data.shape.rank_is_static:
            return TensorInfo(etype, PartialShape.of([-1, -1]))
        if data.value is not None:
            return TensorInfo(etype, PartialShape.of(non_zero(np.asarray(data.value)).shape))
        maxima = [d.max for d in data.shape.ranked_dims]
        total = None if None in maxima else math.prod(m for m in maxima if m is not None)
        return TensorInfo(etype, PartialShape.of([data.shape.rank, Dimension(min=0, max=total)]))

    def compute(self, data: np.ndarray) -> np.ndarray:
        return non_zero(data).astype(ElementType[self.attrs.output_type].dtype)
