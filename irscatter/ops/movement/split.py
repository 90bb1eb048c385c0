"""Split-1: `data` cut along `axis` into `num_splits` parts of equal length.

`axis` is a scalar of any integer type; negative values count from the end. The axis length
must divide by `num_splits`. The spec gives num_splits the range [1, data.shape[axis]], which
no value meets on an empty axis; irscatter, as OpenVINO, splits an empty axis into
`num_splits` empty parts (0 divides by any count).

Inference knows each part's shape once `axis` is known, and computes the parts' values when
`data` is known too (Split has several outputs, so the generic folding of single-output ops
does not reach it): a ShapeOf -> Split -> Concat chain of a static model folds.
"""

from __future__ import annotations

import numpy as np

from irscatter.errors import ExecutionError
from irscatter.ir.shapes import Dimension, PartialShape
from irscatter.ops.base import Op, OpAttrs, TensorInfo, check
from irscatter.ops.common.axes import constant_axis, normalized_axis, runtime_axis
from irscatter.ops.common.types import check_integral
from irscatter.ops.registry import register


class SplitAttrs(OpAttrs):
    num_splits: int


def split_values(data: np.ndarray, axis: int, lengths: list[int]) -> tuple[np.ndarray, ...]:
    """The parts of `data` along `axis`, `lengths[i]` long each (views of `data`)."""
    if not lengths:
        return ()
    return tuple(np.split(data, np.cumsum(lengths)[:-1], axis=axis))


def split_infos(data: TensorInfo, axis: int | None, lengths: list[int | None], count: int) -> tuple[TensorInfo, ...]:
    """The parts' TensorInfos: `lengths` along `axis` (None where unknown), the other dims
    copied; every dim unknown when the axis is. Values when data and lengths are all known."""
    if not data.shape.rank_is_static:
        return tuple(TensorInfo(data.etype, PartialShape.dynamic_rank()) for _ in range(count))
    rank = data.shape.rank
    if axis is None:
        return tuple(TensorInfo(data.etype, PartialShape.of([-1] * rank)) for _ in range(count))
    if data.value is not None and all(n is not None for n in lengths):
        values = split_values(np.asarray(data.value), axis, lengths)  # type: ignore[arg-type]
        return tuple(TensorInfo(data.etype, PartialShape.of(v.shape), v) for v in values)
    out = []
    for n in lengths:
        dims = list(data.shape.ranked_dims)
        dims[axis] = Dimension.dynamic() if n is None else Dimension.static(n)
        out.append(TensorInfo(data.etype, PartialShape.of(dims)))
    return tuple(out)


@register("Split", 1)
class Split(Op):
    labels = {
        "split-count": "num_splits is below 1 or does not divide the length of the split axis",
    }

    Attrs = SplitAttrs
    attrs: SplitAttrs
    inputs = ("data", "axis")

    def check_arity(self, n_inputs: int, n_outputs: int) -> None:
        super().check_arity(n_inputs, 1)
        check(n_outputs == self.attrs.num_splits, "output-count",
              f"num_splits is {self.attrs.num_splits}, the layer declares {n_outputs} outputs")

    def infer(self, data: TensorInfo, axis: TensorInfo) -> tuple[TensorInfo, ...]:
        check_integral(axis, "axis", self.port("axis"), "axis-type")
        if axis.shape.rank_is_static:
            check(axis.shape.rank == 0, "axis-shape", f"axis must be a scalar, found shape {axis.shape}",
                  port=self.port("axis"))
        n = self.attrs.num_splits
        check(n >= 1, "split-count", f"num_splits must be at least 1, found {n}", port=self.port("num_splits"))
        if data.shape.rank_is_static:
            check(data.shape.rank >= 1, "axis-range", "a scalar has no axis to split", port=self.port("axis"))
        a = constant_axis(axis)
        if a is not None and data.shape.rank_is_static:
            a = normalized_axis(a, data.shape.rank, port=self.port("axis"))
            dim = data.shape[a]
            if dim.is_static:
                check(dim.min % n == 0, "split-count",
                      f"the axis length {dim.min} does not divide into {n} equal parts", port=self.port("num_splits"))
            lengths = [dim.min // n if dim.is_static else None] * n
            return split_infos(data, a, lengths, n)
        return split_infos(data, None, [None] * n, n)

    def compute(self, data: np.ndarray, axis: np.ndarray) -> tuple[np.ndarray, ...]:
        a = runtime_axis(axis, data.ndim, self.port("axis"))
        n = self.attrs.num_splits
        if data.shape[a] % n:
            raise ExecutionError(f"the axis length {data.shape[a]} does not divide into {n} equal parts",
                                 port=self.port("num_splits"), label="split-count")
        return split_values(data, a, [data.shape[a] // n] * n)

