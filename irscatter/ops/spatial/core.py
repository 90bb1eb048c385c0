"""What the block-moving ops of the family share.

DepthToSpace and SpaceToDepth share their `block_size` and `mode` attributes. BatchToSpace
and SpaceToBatch share three integer inputs beside the data (`block_shape` and a pair of crops
or pads), each a 1-D tensor with one value per data axis, whose values decide the output
shape: inference uses them when they are constants, and the kernel checks them again when
they arrive at run time.
"""

from __future__ import annotations

from typing import Annotated, Literal

import numpy as np

from irscatter.errors import ExecutionError, ValidationError
from irscatter.ir.element_types import ElementType
from irscatter.ir.shapes import Dimension, PartialShape
from irscatter.limits import check_allocation
from irscatter.ops.base import Lower, Op, OpAttrs, TensorInfo, check


class BlockAttrs(OpAttrs):
    block_size: int = 1
    mode: Annotated[Literal["blocks_first", "depth_first"], Lower]


def require(condition: object, message: str, *, label: str, port: str, at_runtime: bool = False) -> None:
    """A spec constraint on input values: refused at inference when the values are constants,
    or by the kernel when they arrive at run time."""
    if not condition:
        if at_runtime:
            raise ExecutionError(message, label=label, port=port)
        raise ValidationError(message, label=label, port=port)


def check_block_size(op: Op, attrs: BlockAttrs) -> int:
    """`attrs.block_size` (the attributes of `op`, which names the port), refused below 1."""
    size = attrs.block_size
    check(size >= 1, "block-size", f"block_size must be a positive integer, found {size}",
          port=op.port("block_size"))
    return size


def scaled(d: Dimension, factor: int) -> Dimension:
    """A dimension times a positive factor (bounds scale with it)."""
    if d.is_static:
        return Dimension.static(d.min * factor)
    return Dimension(min=d.min * factor, max=None if d.max is None else d.max * factor)


def divided(d: Dimension, divisor: int) -> Dimension | None:
    """The quotients of the multiples of `divisor` a dimension allows; None when it allows none."""
    if d.is_static:
        return Dimension.static(d.min // divisor) if d.min % divisor == 0 else None
    lo, hi = -(-d.min // divisor), None if d.max is None else d.max // divisor
    return None if hi is not None and lo > hi else Dimension(min=lo, max=hi)


# --- BatchToSpace and SpaceToBatch -------------------------------------------------------------


def check_block_inputs(op: Op, data: TensorInfo, inputs: dict[str, TensorInfo]) -> None:
    """The three integer inputs: one integer element type, 1-D, one value per data axis."""
    names = list(inputs)
    types = {i.etype for i in inputs.values()} - {ElementType.dynamic}
    for name, info in inputs.items():
        check(info.etype is ElementType.dynamic or info.etype.is_integral, "block-input-type",
              f"{name} must be of an integer type, found {info.etype}", port=op.port(name))
    check(len(types) <= 1, "block-input-type",
          f"{', '.join(names)} must share one element type, found {', '.join(str(i.etype) for i in inputs.values())}",
          port=op.port(names[-1]))
    lengths = set()
    for name, info in inputs.items():
        if not info.shape.rank_is_static:
            continue
        check(info.shape.rank == 1, "block-input-shape", f"{name} must be a 1-D tensor, found shape {info.shape}",
              port=op.port(name))
        if info.shape[0].is_static:
            lengths.add(info.shape[0].min)
    check(len(lengths) <= 1, "block-input-shape",
          f"{', '.join(names)} must have the same length, found {', '.join(str(i.shape) for i in inputs.values())}",
          port=op.port(names[-1]))
    if data.shape.rank_is_static and lengths:
        rank, (n,) = data.shape.rank, lengths
        check(n == rank, "block-input-shape",
              f"{', '.join(names)} must hold one value per data axis ({rank}), found {n}", port=op.port(names[0]))


def int_list(value: np.ndarray) -> list[int]:
    return [int(v) for v in np.asarray(value).reshape(-1)]


def block_values(op: Op, block: np.ndarray, rank: int, *, at_runtime: bool = False) -> list[int]:
    """block_shape's values: one per data axis, each at least 1, and 1 for the batch axis."""
    values = int_list(block)
    port = op.port("block_shape")
    require(len(values) == rank, f"block_shape must hold one value per data axis ({rank}), found {len(values)}",
            label="block-input-shape", port=port, at_runtime=at_runtime)
    require(all(v >= 1 for v in values), f"block_shape values must be at least 1, found {values}",
            label="block-shape-value", port=port, at_runtime=at_runtime)
    require(values[0] == 1, f"block_shape[0] (the batch axis) must be 1, found {values[0]}",
            label="block-shape-value", port=port, at_runtime=at_runtime)
    return values


def channel_rank(op: Op, data: TensorInfo) -> int | None:
    """DepthToSpace and SpaceToDepth: the data's rank ([N, C, D1, ...], at least 3), or None
    when it is dynamic."""
    if not data.shape.rank_is_static:
        return None
    check(data.shape.rank >= 3, "data-rank", f"data must have rank 3 or more ([N, C, D1, ...]), found {data.shape}",
          port=op.port("data"))
    return data.shape.rank


class BatchBlocks(Op):
    """What BatchToSpace and SpaceToBatch share: data, block_shape, and the amounts cropped or
    padded at the start and end of each axis (inputs 2 and 3). The shape is known once the three
    integer inputs are; `_amounts` reads those two, `_out_dims` applies them."""

    noun: str  # what inputs 2 and 3 hold: "crops" or "pads"
    value_label: str  # the label refusing a value of theirs

    def _amounts(self, begin: np.ndarray, end: np.ndarray, rank: int, at_runtime: bool) -> tuple[list[int], list[int]]:
        """The values of inputs 2 and 3: one per data axis, none negative, 0 on the batch axis."""
        first, last = int_list(begin), int_list(end)
        begin_name, end_name = self.inputs[2:]
        port, label = self.port(begin_name), self.value_label
        require(len(first) == rank and len(last) == rank,
                f"{begin_name} and {end_name} must hold one value per data axis ({rank}), found {len(first)} and "
                f"{len(last)}", label="block-input-shape", port=port, at_runtime=at_runtime)
        require(all(v >= 0 for v in first + last), f"{self.noun} must not be negative, found {first} and {last}",
                label=label, port=port, at_runtime=at_runtime)
        require(first[0] == 0 and last[0] == 0,
                f"{begin_name}[0] and {end_name}[0] (the batch axis) must be 0, found {first[0]} and {last[0]}",
                label=label, port=port, at_runtime=at_runtime)
        return first, last

    def _out_dims(self, dims: list, blocks: list[int], first: list[int], last: list[int], at_runtime: bool) -> list:
        raise NotImplementedError

    def infer(self, data: TensorInfo, block: TensorInfo, begin: TensorInfo, end: TensorInfo) -> TensorInfo:
        check_block_inputs(self, data, dict(zip(self.inputs[1:], (block, begin, end))))
        if not data.shape.rank_is_static:
            return TensorInfo(data.etype, PartialShape.dynamic_rank())
        rank = data.shape.rank
        check(rank >= 2, "data-rank", f"data must have rank 2 or more ([batch, D1, ...]), found {data.shape}",
              port=self.port("data"))
        if block.value is None or begin.value is None or end.value is None:
            return TensorInfo(data.etype, PartialShape.of([-1] * rank))
        blocks = block_values(self, block.value, rank)
        first, last = self._amounts(begin.value, end.value, rank, False)
        return TensorInfo(data.etype, PartialShape.of(self._out_dims(list(data.shape.ranked_dims), blocks, first, last,
                                                                     False)))


def empty_result(data: np.ndarray, out_shape: tuple[int, ...]) -> np.ndarray:
    """The output of a block rearrangement of an empty input: made directly, as the reshapes
    to [.., block_size, ..] would describe arrays numpy cannot hold when block_size is large.
    The output's own shape is held to the tensor limits (an empty one included)."""
    check_allocation(out_shape, data.dtype.itemsize)
    return np.empty(out_shape, data.dtype)
