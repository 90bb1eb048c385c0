"""StridedSlice-1: begin/end/stride with the masks of the spec (begin_mask, end_mask,
new_axis_mask, shrink_axis_mask, ellipsis_mask), turned into one numpy index; the result is a view.
"""

from __future__ import annotations

import numpy as np

from irscatter.ir.shapes import Dimension, PartialShape
from irscatter.ops.base import IntList, Op, OpAttrs, TensorInfo
from irscatter.ops.movement.slice import PlanError, check_slice_params, planned
from irscatter.ops.registry import register


class StridedSliceAttrs(OpAttrs):
    begin_mask: IntList = ()
    end_mask: IntList = ()
    new_axis_mask: IntList = ()
    shrink_axis_mask: IntList = ()
    ellipsis_mask: IntList = ()


def strided_index(shape: tuple[int, ...], begin, end, stride, attrs: StridedSliceAttrs) -> tuple:
    """The numpy index tuple a StridedSlice describes (TensorFlow-style masks; bit i of each
    mask refers to position i of begin/end/stride). Raises PlanError."""
    begin, end = (np.asarray(v).reshape(-1).astype(np.int64) for v in (begin, end))
    stride = np.ones(len(begin), np.int64) if stride is None else np.asarray(stride).reshape(-1).astype(np.int64)
    if not len(begin) == len(end) == len(stride):
        raise PlanError("sizes", "begin, end and stride must have the same number of values")
    masks = {name: getattr(attrs, name) for name in StridedSliceAttrs.model_fields}
    for name, mask in masks.items():
        if any(bit not in (0, 1) for bit in mask):
            raise PlanError("mask-values", f"{name} must hold only 0 and 1, found {list(mask)}")
    bit = {name: (lambda m: (lambda i: i < len(m) and m[i] == 1))(mask) for name, mask in masks.items()}
    if sum(bit["ellipsis_mask"](i) for i in range(len(begin))) > 1:
        raise PlanError("ellipsis", "at most one ellipsis is allowed")
    index: list = []
    consumed = sum(1 for i in range(len(begin)) if not (bit["new_axis_mask"](i) or bit["ellipsis_mask"](i)))
    if consumed > len(shape):
        raise PlanError("sizes", f"{consumed} sliced axes for a rank-{len(shape)} tensor")
    axis = 0  # the data axis position i refers to, for shrink range checks
    for i in range(len(begin)):
        flags = [n for n in ("new_axis_mask", "shrink_axis_mask", "ellipsis_mask") if bit[n](i)]
        if len(flags) > 1:
            raise PlanError("mask-conflict", f"position {i} sets {' and '.join(flags)} at once")
        if bit["new_axis_mask"](i):
            index.append(np.newaxis)
        elif bit["ellipsis_mask"](i):
            index.append(Ellipsis)
            axis += len(shape) - consumed
        elif bit["shrink_axis_mask"](i):
            dim, b = shape[axis], int(begin[i])
            if not -dim <= b < dim:
                raise PlanError("shrink-range", f"begin {b} at position {i} is outside [{-dim}, {dim - 1}] for a shrunk axis")
            index.append(b)
            axis += 1
        else:
            if stride[i] == 0:
                raise PlanError("stride-nonzero", "stride values must be non-zero")
            start: int | None = None if bit["begin_mask"](i) else int(begin[i])
            if start is not None and stride[i] < 0 and axis < len(shape) and start + shape[axis] < 0:
                start = 0  # the spec's reverse clamping: a begin before the start becomes 0, not "empty"
            index.append(slice(start, None if bit["end_mask"](i) else int(end[i]), int(stride[i])))
            axis += 1
    return tuple(index)


_LARGE = 1 << 40  # an unbounded axis' stand-in for its largest size


def indexed_shape(shape: tuple[int, ...], index: tuple) -> tuple[int, ...]:
    """The shape numpy's basic indexing by `index` (slices, ints, None, one Ellipsis) gives,
    worked out from `shape` alone (no array, so any size)."""
    consumed = sum(1 for item in index if item is not None and item is not Ellipsis)
    out: list[int] = []
    axis = 0
    for item in index:
        if item is None:
            out.append(1)
        elif item is Ellipsis:
            n = len(shape) - consumed
            out.extend(shape[axis:axis + n])
            axis += n
        elif isinstance(item, slice):
            out.append(len(range(*item.indices(shape[axis]))))
            axis += 1
        else:  # an int: the axis is shrunk away
            axis += 1
    out.extend(shape[axis:])
    return tuple(out)


@register("StridedSlice", 1)
class StridedSlice(Op):
    """Python slicing with TensorFlow-style masks, and two rules of the spec:

    * Masks may have different lengths (a missing bit is 0), as the spec says; OpenVINO's
      implementation insists on equal lengths.
    * Slicing in reverse, a begin still below 0 after adding the dimension is clamped to 0
      (Python would give an empty slice). OpenVINO does the same.
    * An end_mask with a negative stride runs through element 0, as Python's omitted bound
      does and OpenVINO does; the spec's parenthetical "end = 0, not inclusive" contradicts its
      own statement that the mask equals an omitted bound, and the numpy behaviour is kept.
    """

    Attrs = StridedSliceAttrs
    attrs: StridedSliceAttrs
    inputs = ("data", "begin", "end", "stride")
    optional_inputs = 1

    def infer(self, data: TensorInfo, begin: TensorInfo, end: TensorInfo, stride: TensorInfo | None = None) -> TensorInfo:
        check_slice_params([begin, end, stride], 1)
        known = [begin, end] + ([stride] if stride is not None else [])
        if not data.shape.rank_is_static or any(i.value is None for i in known):
            return TensorInfo(data.etype, PartialShape.dynamic_rank())
        if not data.shape.is_static:
            return TensorInfo(data.etype, self._partly_known(data.shape, begin.value, end.value,
                                                             None if stride is None else stride.value))
        index = planned(strided_index, data.shape.to_tuple(), begin.value, end.value,
                        None if stride is None else stride.value, self.attrs, port=self.port("begin"), at_runtime=False)
        shape = np.broadcast_to(np.empty((), np.uint8), data.shape.to_tuple())[index].shape
        return TensorInfo(data.etype, PartialShape.of(shape))

    def _partly_known(self, shape: PartialShape, begin, end, stride) -> PartialShape:
        """The output of an input of known rank and some unknown dims. A slice never shortens as
        its axis grows, so an output dim is fixed when the axis' smallest and largest sizes give
        the same, and lies between the two otherwise (unbounded above when an input dim is). A
        plan the smallest sizes cannot take (a shrunk index past an axis of maybe 0) leaves the
        rank unknown."""
        dims = shape.ranked_dims
        bounded = all(d.max is not None for d in dims)
        low = tuple(d.min for d in dims)
        high = tuple(d.max if d.max is not None else max(d.min, _LARGE) for d in dims)
        try:
            small, large = (indexed_shape(s, strided_index(s, begin, end, stride, self.attrs)) for s in (low, high))
        except PlanError:
            return PartialShape.dynamic_rank()
        return PartialShape.of([Dimension.static(a) if a == b else
                                Dimension.model_construct(min=a, max=b if bounded else None)
                                for a, b in zip(small, large)])

    def compute(self, data: np.ndarray, begin, end, stride=None) -> np.ndarray:
        return data[planned(strided_index, data.shape, begin, end, stride, self.attrs, port=self.port("begin"), at_runtime=True)]
