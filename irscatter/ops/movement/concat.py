"""Concat-1: inputs joined along `axis`; every other dimension must agree.

A Concat the plan marks `grows` (two inputs, its output a variable's next value: a KV cache)
keeps its result in a buffer with room to grow, so that the next step appends to it instead of
copying it whole (`ops/common/growth.py`).
"""

from __future__ import annotations

import numpy as np

from irscatter.errors import ExecutionError
from irscatter.ir.element_types import ElementType
from irscatter.ir.shapes import Dimension, PartialShape
from irscatter.ops.base import Op, OpAttrs, TensorInfo, check, fail
from irscatter.ops.common import growth
from irscatter.ops.common.axes import normalized_axis
from irscatter.ops.registry import register


class ConcatAttrs(OpAttrs):
    axis: int


@register("Concat", 1)
class Concat(Op):
    labels = {
        "concat-rank": "the inputs are scalars",
        "concat-shape": "the inputs differ in a dimension other than the axis",
    }

    Attrs = ConcatAttrs
    attrs: ConcatAttrs
    inputs = ("inputs",)
    variadic = True
    grows = False  # set by the plan (`runtime/plan.py`) where the output is a variable's next value

    def infer(self, *parts: TensorInfo) -> TensorInfo:
        etypes = {p.etype for p in parts} - {ElementType.dynamic}
        check(len(etypes) <= 1, "same-element-type", f"inputs must share one element type, found {sorted(map(str, etypes))}")
        etype = etypes.pop() if etypes else ElementType.dynamic
        ranked = [p.shape for p in parts if p.shape.rank_is_static]
        if not ranked:
            return TensorInfo(etype, PartialShape.dynamic_rank())
        rank = ranked[0].rank
        check(rank >= 1, "concat-rank", "inputs must have rank at least 1")
        a = normalized_axis(self.attrs.axis, rank, port=self.port("axis"))
        first = ranked[0].ranked_dims
        for i, s in enumerate(ranked):
            # (the messages are made only for a failing input: a DenseNet's Concats join up to 25
            # inputs, and formatting every dimension was most of their inference)
            if s.rank != rank:
                fail("concat-rank", f"every input must have rank {rank}, input {i} has {s}", port=f"input {i}")
            for d, (dim, other) in enumerate(zip(s.ranked_dims, first)):
                if d != a and dim is not other and not dim.compatible(other):
                    fail("concat-shape", f"dimension {d} must match across inputs ({dim} vs {other})", port=f"input {i}")
        dims = list(ranked[0].ranked_dims)
        along = [s[a] for s in ranked]
        dims[a] = (Dimension.static(sum(d.min for d in along)) if len(ranked) == len(parts) and all(d.is_static for d in along)
                   else Dimension.dynamic())
        return TensorInfo(etype, PartialShape.of(dims))

    def compute(self, *parts: np.ndarray) -> np.ndarray:
        a = normalized_axis(self.attrs.axis, parts[0].ndim, port=self.port("axis"), at_runtime=True)
        if self.grows and len(parts) == 2:
            joined = growth.appended(parts[0], parts[1], a)
            if joined is None:
                joined = growth.grown(parts[0], parts[1], a)
            if joined is not None:
                return joined
        try:
            return np.concatenate(parts, axis=a)
        except ValueError as e:
            raise ExecutionError(f"inputs do not concatenate: {e}", label="concat-shape") from None
