"""GroupedMatMul-17: one matrix product per group (a Mixture of Experts' experts).

The spec's three forms, chosen by the ranks of mat_a and mat_b:

* 2-D x 3-D: mat_a [T, K] holds the tokens of every group one after the other, mat_b [G, K, N]
  one matrix per group, and offsets [G] the groups' cumulative ends; rows start..end of the
  output [T, N] are mat_a[start:end] @ mat_b[g], start being the previous group's end (0 first).
* 3-D x 3-D: mat_a [G, M, K] @ mat_b [G, K, N] group by group, output [G, M, N]; offsets must
  not be given.
* 2-D x 2-D: mat_a [K, T] and mat_b [T, N] share the token axis, and output[g] [K, N] is
  mat_a[:, start:end] @ mat_b[start:end, :], output [G, K, N] with G = len(offsets).

Offsets are i32 or i64, non-decreasing, each within [0, T]; irscatter refuses others (OpenVINO's
reference reads out of bounds there). The spec writes the last offset as T; a smaller one leaves
the tokens after it out of every group: their output rows are 0 in the 2-D x 3-D form, and
they add nothing in the 2-D x 2-D form, as in OpenVINO's reference. An empty group is allowed.

OpenVINO departs from this spec page: its GroupedMatMul-17 takes mat_b as [G, N, K] (the
weights transposed, as PyTorch stores them), has an optional fourth input (a bias) and no
2-D x 2-D form; its core reference in turn reads mat_b as [G, K, N]. irscatter follows the spec
page. T is any floating-point or integer type; f16, bf16 and the f8 types multiply and add in
f32 and round once, integers wrap. The groups' products run under the thread policy
(`ops/common/products.py`).
"""

from __future__ import annotations

import numpy as np

from irscatter.errors import ExecutionError
from irscatter.ir.element_types import ElementType
from irscatter.ir.shapes import Dimension, PartialShape
from irscatter.ops.base import Op, TensorInfo, check, required
from irscatter.ops.common.numeric import compute_dtype, convert_array, from_compute
from irscatter.ops.common.products import matmul, matmul_each
from irscatter.ops.common.types import arithmetic_float, same_element_type
from irscatter.ops.registry import register


def offsets_problem(offsets: np.ndarray, total: int) -> str | None:
    """Why `offsets` cannot cut `total` tokens into groups, or None when they can."""
    values = offsets.astype(np.int64).reshape(-1)
    low = np.concatenate(([0], values[:-1]))
    bad = np.flatnonzero((values < low) | (values > total))
    if bad.size:
        g = int(bad[0])
        previous = int(low[g])
        return (f"offsets[{g}] = {int(values[g])} must lie within [{previous}, {total}] (the previous group's end "
                f"and the number of tokens)")
    return None


@register("GroupedMatMul", 17)
class GroupedMatMul(Op):
    labels = {
        "grouped-matmul-rank": "mat_a and mat_b are not 2-D x 3-D, 3-D x 3-D or 2-D x 2-D",
        "grouped-matmul-offsets": "offsets are missing in a 2-D form, or given in the 3-D x 3-D form",
        "grouped-matmul-inner": "the dimensions the products sum over (K, or the tokens in 2-D x 2-D) differ",
        "grouped-matmul-groups": "the groups of mat_a, mat_b and offsets differ in number",
    }

    inputs = ("mat_a", "mat_b", "offsets")
    optional_inputs = 1

    def infer(self, mat_a: TensorInfo, mat_b: TensorInfo, offsets: TensorInfo | None = None) -> TensorInfo:
        etype = same_element_type(mat_a, mat_b, "mat_a and mat_b must have the same element type",
                                  "same-element-type", self.port("mat_b"))
        check(etype is ElementType.dynamic or arithmetic_float(etype) or etype.is_integral, "numeric-type",
              f"GroupedMatMul takes floating-point or integer tensors, found {etype}", port=self.port("mat_a"))
        if offsets is not None:
            port = self.port("offsets")
            check(offsets.etype in (ElementType.i32, ElementType.i64, ElementType.dynamic), "index-type",
                  f"offsets must be i32 or i64, found {offsets.etype}", port=port)
            check(not offsets.shape.rank_is_static or offsets.shape.rank == 1, "index-rank",
                  f"offsets must be a 1-D tensor, found shape {offsets.shape}", port=port)
        if not (mat_a.shape.rank_is_static and mat_b.shape.rank_is_static):
            return TensorInfo(etype, PartialShape.dynamic_rank())
        a, b = mat_a.shape.ranked_dims, mat_b.shape.ranked_dims
        form = (len(a), len(b))
        check(form in ((2, 3), (3, 3), (2, 2)), "grouped-matmul-rank",
              f"takes mat_a and mat_b of ranks 2 and 3, 3 and 3, or 2 and 2, found {len(a)} and {len(b)}",
              port=self.port("mat_b"))
        if form == (3, 3):
            check(offsets is None, "grouped-matmul-offsets", "the 3-D x 3-D form takes no offsets",
                  port=self.port("offsets"))
            check(a[0].compatible(b[0]), "grouped-matmul-groups",
                  f"mat_a has {a[0]} groups and mat_b {b[0]}", port=self.port("mat_b"))
            check(a[2].compatible(b[1]), "grouped-matmul-inner",
                  f"the inner dimensions must match: {a[2]} (mat_a) and {b[1]} (mat_b)", port=self.port("mat_b"))
            return TensorInfo(etype, PartialShape.of((a[0] if a[0].is_static else b[0], a[1], b[2])))
        offsets = required(offsets, "grouped-matmul-offsets", f"the 2-D x {len(b)}-D form needs offsets",
                           port=self.port("mat_a"))
        groups = offsets.shape[0] if offsets.shape.rank_is_static else Dimension.dynamic()
        tokens = a[0] if form == (2, 3) else a[1]
        if offsets.value is not None and tokens.is_static:
            problem = offsets_problem(offsets.value, int(tokens))
            check(problem is None, "index-range", problem or "", port=self.port("offsets"))
        if form == (2, 3):
            check(a[1].compatible(b[1]), "grouped-matmul-inner",
                  f"the inner dimensions must match: {a[1]} (mat_a) and {b[1]} (mat_b)", port=self.port("mat_b"))
            check(groups.compatible(b[0]), "grouped-matmul-groups",
                  f"offsets hold {groups} groups and mat_b {b[0]}", port=self.port("offsets"))
            return TensorInfo(etype, PartialShape.of((a[0], b[2])))
        check(a[1].compatible(b[0]), "grouped-matmul-inner",
              f"mat_a has {a[1]} tokens and mat_b {b[0]}", port=self.port("mat_b"))
        return TensorInfo(etype, PartialShape.of((groups, a[0], b[1])))

    def compute(self, mat_a: np.ndarray, mat_b: np.ndarray, offsets: np.ndarray | None = None) -> np.ndarray:
        etype = ElementType.from_dtype(mat_a.dtype)
        # integers in 64 bits, wrapped back to their type once (the same result modulo 2^bits)
        work = compute_dtype(etype) if etype.is_float else np.dtype(np.uint64 if etype is ElementType.u64 else np.int64)
        a, b = mat_a.astype(work, copy=False), mat_b.astype(work, copy=False)
        if offsets is not None:
            tokens = a.shape[0] if b.ndim == 3 else a.shape[1]
            problem = offsets_problem(offsets, tokens)
            if problem is not None:
                raise ExecutionError(problem, port=self.port("offsets"), label="index-range")
        with np.errstate(invalid="ignore", over="ignore"):  # inf * 0 is NaN and sums overflow, as in C++
            out = self._products(a, b, offsets, work)
        if etype.is_integral:
            return convert_array(out, ElementType.from_dtype(work), etype)
        return from_compute(out, etype)

    @staticmethod
    def _products(a: np.ndarray, b: np.ndarray, offsets: np.ndarray | None, work: np.dtype) -> np.ndarray:
        if offsets is None:
            return matmul(a, b)
        ends = [int(e) for e in offsets.reshape(-1)]
        starts = [0, *ends[:-1]]
        if b.ndim == 3:  # tokens past the last offset are in no group: their rows stay 0
            out = np.zeros((a.shape[0], b.shape[2]), work)
            matmul_each([(a[start:end], b[g], out[start:end]) for g, (start, end) in enumerate(zip(starts, ends))])
            return out
        out = np.empty((len(ends), a.shape[0], b.shape[1]), work)
        matmul_each([(a[:, start:end], b[start:end], out[g]) for g, (start, end) in enumerate(zip(starts, ends))])
        return out
