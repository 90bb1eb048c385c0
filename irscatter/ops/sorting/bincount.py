"""Bincount-17: how often each value 0, 1, 2, ... occurs in a 1-D tensor of non-negative
integers, or the sum of the weights of its occurrences, as torch.bincount and np.bincount count.

A draft of opset17: its spec page defines it, the pinned OpenVINO does not ship it, and OpenVINO's
newer sources (core reference `bincount.hpp`) implement it as irscatter does here. It sits with
the sorting ops for what it shares with Unique and Bucketize: a count per value, and an output
whose length the values decide.

data is i32, i64, u8, u16, u32 or u64; the optional weights, as long as data, are f32, f64, i32
or i64. The output is 1-D, of length max(max(data) + 1, minlength) (minlength for empty data):
i64 counts without weights, sums in the weights' type with them. Inference knows the length when
data is constant or empty; otherwise it bounds it: at least minlength (and 1 when data cannot
be empty), at most max(2^bits, minlength) for u8 and u16 data.

Choices where the page is silent, as OpenVINO's reference makes them:
  * A negative value is an error (`negative-value`), as in the reference and torch.
  * Weights are added in data order, each sum in the weights' own type: f32 sums round at every
    step (np.bincount would sum in f64 and round once), i32 and i64 sums wrap.
  * A value so large that the output would not fit the tensor limits is refused (`tensor-limit`); the
    reference refuses values above 2^63 - 2.
"""

from __future__ import annotations

from typing import Annotated

import numpy as np
from pydantic import Field

from irscatter.errors import ExecutionError
from irscatter.ir.element_types import ElementType
from irscatter.ir.shapes import Dimension, PartialShape
from irscatter.limits import check_allocation, check_inferred
from irscatter.ops.base import Op, OpAttrs, TensorInfo, check
from irscatter.ops.common.ranges import Bounds
from irscatter.ops.registry import register

DATA_TYPES = (ElementType.i32, ElementType.i64, ElementType.u8, ElementType.u16, ElementType.u32, ElementType.u64)
WEIGHT_TYPES = (ElementType.f32, ElementType.f64, ElementType.i32, ElementType.i64)


def _names(types: tuple[ElementType, ...]) -> str:
    return ", ".join(str(t) for t in types)


@register("Bincount", 17)
class Bincount(Op):
    labels = {
        "data-type": "Bincount's data is not of type i32, i64, u8, u16, u32 or u64",
        "weights-type": "Bincount's weights are not of type f32, f64, i32 or i64",
        "weights-length": "Bincount's weights are not a 1-D tensor as long as data",
        "negative-value": "Bincount's data holds a negative value",
    }

    class Attrs(OpAttrs):
        minlength: Annotated[int, Field(ge=0)] = 0
    attrs: Attrs

    inputs = ("data", "weights")
    optional_inputs = 1

    def input_range(self, position: int, infos) -> Bounds | None:
        return (0, 9) if position == 0 else None  # small counts keep the output short

    def infer(self, data: TensorInfo, weights: TensorInfo | None = None) -> TensorInfo:
        check(data.etype in (*DATA_TYPES, ElementType.dynamic), "data-type",
              f"data must be of type {_names(DATA_TYPES)}, found {data.etype}", port=self.port("data"))
        if data.shape.rank_is_static:
            check(data.shape.rank == 1, "data-rank", f"data must be a 1-D tensor, found shape {data.shape}",
                  port=self.port("data"))
        out = ElementType.i64
        if weights is not None:
            check(weights.etype in (*WEIGHT_TYPES, ElementType.dynamic), "weights-type",
                  f"weights must be of type {_names(WEIGHT_TYPES)}, found {weights.etype}",
                  port=self.port("weights"))
            if weights.shape.rank_is_static:
                check(weights.shape.rank == 1, "weights-length",
                      f"weights must be a 1-D tensor, found shape {weights.shape}", port=self.port("weights"))
                if data.shape.rank_is_static:
                    check(data.shape[0].compatible(weights.shape[0]), "weights-length",
                          f"weights ({weights.shape}) must be as long as data ({data.shape})",
                          port=self.port("weights"))
            out = weights.etype
        length = self._length(data)
        if isinstance(length, int):
            check_inferred([length], out.dtype.itemsize if out is not ElementType.dynamic else 8, "output 0")
        return TensorInfo(out, PartialShape.of([length]))

    def _length(self, data: TensorInfo) -> Dimension | int:
        minlength = self.attrs.minlength
        if data.value is not None and data.etype in DATA_TYPES:
            values = np.asarray(data.value).reshape(-1)
            negative = _negative(values)
            check(negative is None, "negative-value", negative or "", port=self.port("data"))
            return max(int(values.max()) + 1 if values.size else 0, minlength)
        if not data.shape.rank_is_static:
            return Dimension(min=minlength, max=None)
        size = data.shape[0]
        if size.max == 0:
            return minlength
        high = None
        if data.etype in (ElementType.u8, ElementType.u16):
            high = max(1 << data.etype.bitwidth, minlength)
        return Dimension(min=max(minlength, 1 if size.min > 0 else 0), max=high)

    def compute(self, data: np.ndarray, weights: np.ndarray | None = None) -> np.ndarray:
        values = np.asarray(data).reshape(-1)
        if weights is not None and np.asarray(weights).size != values.size:
            raise ExecutionError(f"weights ({np.shape(weights)}) must be as long as data ({np.shape(data)})",
                                 port=self.port("weights"), label="weights-length")
        negative = _negative(values)
        if negative is not None:
            raise ExecutionError(negative, port=self.port("data"), label="negative-value")
        length = max(int(values.max()) + 1 if values.size else 0, self.attrs.minlength)
        dtype = np.dtype(np.int64) if weights is None else np.asarray(weights).dtype
        check_allocation([length], dtype.itemsize)
        indices = values.astype(np.intp, copy=False)
        if weights is None:
            return np.bincount(indices, minlength=length).astype(np.int64, copy=False)
        out = np.zeros(length, dtype=dtype)
        with np.errstate(all="ignore"):  # inf - inf and NaN as C++ adds them; integer sums wrap
            np.add.at(out, indices, np.asarray(weights).reshape(-1))  # in data order, in the weights' type
        return out


def _negative(values: np.ndarray) -> str | None:
    """What is wrong with data holding a negative value, or None."""
    if values.dtype.kind != "i" or not values.size or int(values.min()) >= 0:
        return None
    where = int(np.argmax(values < 0))
    return f"data holds the negative value {values[where]} at [{where}]; Bincount counts non-negative values only"
