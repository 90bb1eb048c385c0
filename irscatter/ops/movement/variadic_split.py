"""VariadicSplit-1: `data` cut along `axis` into parts of the lengths `split_lengths` lists.

`axis` is a scalar or a [1] tensor and `split_lengths` a 1-D tensor, both of any integer type
(not necessarily the same one); one length may be -1, the rest of the axis. The lengths must
add up to the axis length; a length of 0 gives an empty part. The number of outputs is the
number of lengths.

Inference knows the parts' shapes once `axis` and `split_lengths` are known, and computes
their values when `data` is known too, as Split-1 does.
"""

from __future__ import annotations

import numpy as np

from irscatter.ops.base import Op, TensorInfo, check
from irscatter.ops.common.axes import check_axis_input, constant_axis, int_values, normalized_axis, runtime_axis
from irscatter.ops.common.types import check_integral
from irscatter.ops.movement.slice import PlanError, planned
from irscatter.ops.movement.split import split_infos, split_values
from irscatter.ops.registry import register


def resolve_lengths(lengths: list[int], dim: int | None) -> list[int | None]:
    """The parts' lengths with a -1 resolved (None while the axis length is unknown); raises PlanError."""
    if any(n < -1 for n in lengths):
        raise PlanError("split-lengths", f"split_lengths {lengths} has a value below -1")
    if lengths.count(-1) > 1:
        raise PlanError("split-lengths", f"split_lengths {lengths} has more than one -1")
    known = sum(n for n in lengths if n != -1)
    if dim is None:
        return [None if n == -1 else n for n in lengths]
    if -1 in lengths:
        if known > dim:
            raise PlanError("split-lengths", f"split_lengths {lengths} take more than the axis length {dim}")
        return [dim - known if n == -1 else n for n in lengths]
    if known != dim:
        raise PlanError("split-lengths", f"split_lengths {lengths} add up to {known}, not to the axis length {dim}")
    return list(lengths)


@register("VariadicSplit", 1)
class VariadicSplit(Op):
    labels = {
        "split_lengths-type": "split_lengths is not of an integer type",
        "split_lengths-shape": "split_lengths is not a 1-D tensor, or its length is not the number of outputs",
        "split-lengths": "split_lengths has a value below -1 or two -1s, or does not add up to the axis length",
    }

    inputs = ("data", "axis", "split_lengths")

    def check_arity(self, n_inputs: int, n_outputs: int) -> None:
        super().check_arity(n_inputs, 1)  # the count of outputs is split_lengths' length, checked in infer

    def infer(self, data: TensorInfo, axis: TensorInfo, split_lengths: TensorInfo) -> tuple[TensorInfo, ...]:
        check_axis_input(axis, self.port("axis"))
        port = self.port("split_lengths")
        check_integral(split_lengths, "split_lengths", port, "split_lengths-type")
        shape = split_lengths.shape
        if shape.rank_is_static:
            check(shape.rank == 1, "split_lengths-shape", f"split_lengths must be a 1-D tensor, found {shape}", port=port)
        declared = len(self.layer.outputs)
        if shape.rank_is_static and shape[0].is_static:
            count = shape[0].min
            check(not declared or count == declared, "split_lengths-shape",
                  f"split_lengths has {count} values, the layer declares {declared} outputs", port=port)
        else:
            count = declared
        if data.shape.rank_is_static:
            check(data.shape.rank >= 1, "axis-range", "a scalar has no axis to split", port=self.port("axis"))
        a = constant_axis(axis)
        if a is None or not data.shape.rank_is_static:
            return split_infos(data, None, [None] * count, count)
        a = normalized_axis(a, data.shape.rank, port=self.port("axis"))
        lengths = int_values(split_lengths.value)
        if lengths is None:
            return split_infos(data, a, [None] * count, count)
        dim = data.shape[a]
        resolved = planned(resolve_lengths, lengths, dim.min if dim.is_static else None, port=port, at_runtime=False)
        return split_infos(data, a, resolved, count)

    def compute(self, data: np.ndarray, axis: np.ndarray, split_lengths: np.ndarray) -> tuple[np.ndarray, ...]:
        a = runtime_axis(axis, data.ndim, self.port("axis"))
        lengths = planned(resolve_lengths, int_values(split_lengths), data.shape[a],
                          port=self.port("split_lengths"), at_runtime=True)
        return split_values(data, a, lengths)
