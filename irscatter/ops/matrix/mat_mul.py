"""MatMul-1: numpy's matmul semantics (1-D operands are promoted and the added axis dropped,
leading axes broadcast), with `transpose_a`/`transpose_b` swapping the last two axes of an
operand of rank 2 or more. f16/bf16 multiply and accumulate in f32; integers wrap. The product
runs under the thread policy (`ops/common/products.py`), with np.matmul's bits on one BLAS thread.
An input a Softmax writes (`subnormal_inputs`, which the plan marks) may be full of subnormal
numbers, which BLAS multiplies many times slower: the product is then made on it scaled by a
power of two (`ops/common/subnormals.py`).
"""

from __future__ import annotations

import numpy as np

from irscatter.ir.broadcast import BroadcastError, broadcast_numpy
from irscatter.ir.element_types import ElementType
from irscatter.ir.shapes import Dimension, PartialShape
from irscatter.ops.base import IRBool, Op, OpAttrs, TensorInfo, check
from irscatter.ops.common.numeric import compute_dtype, from_compute
from irscatter.ops.common.products import matmul
from irscatter.ops.common.subnormals import scaled_product
from irscatter.ops.common.types import same_element_type
from irscatter.ops.registry import register


class MatMulAttrs(OpAttrs):
    transpose_a: IRBool = False
    transpose_b: IRBool = False


def _swap_last(dims: tuple, transpose: bool) -> tuple:
    return dims[:-2] + (dims[-1], dims[-2]) if transpose and len(dims) >= 2 else dims


@register("MatMul", 1)
class MatMul(Op):
    labels = {
        "matmul-rank": "an input is a scalar",
        "matmul-inner": "the inner dimensions of the two products differ",
        "matmul-batch": "the batch dimensions do not broadcast",
    }

    Attrs = MatMulAttrs
    attrs: MatMulAttrs
    inputs = ("a", "b")
    # The inputs (0: a, 1: b) a Softmax writes, through layers that only move its values
    # (`runtime/plan.py`): where one holds subnormals, the product scales it.
    subnormal_inputs: frozenset[int] = frozenset()

    def infer(self, a: TensorInfo, b: TensorInfo) -> TensorInfo:
        etype = same_element_type(a, b, "inputs must have the same element type", "same-element-type", self.port("b"))
        check(etype not in (ElementType.boolean, ElementType.string), "numeric-type", f"MatMul is not defined for {etype}")
        if not (a.shape.rank_is_static and b.shape.rank_is_static):
            return TensorInfo(etype, PartialShape.dynamic_rank())
        da, db = _swap_last(a.shape.ranked_dims, self.attrs.transpose_a), _swap_last(b.shape.ranked_dims, self.attrs.transpose_b)
        check(len(da) >= 1 and len(db) >= 1, "matmul-rank", "MatMul inputs must have rank at least 1")
        one = Dimension.static(1)
        ma = (one,) + da if len(da) == 1 else da
        mb = db + (one,) if len(db) == 1 else db
        check(ma[-1].compatible(mb[-2]), "matmul-inner",
              f"the inner dimensions must match: {ma[-1]} (a) and {mb[-2]} (b)", port=self.port("b"))
        try:
            batch = broadcast_numpy(PartialShape.of(ma[:-2]), PartialShape.of(mb[:-2])).ranked_dims
        except BroadcastError as e:
            check(False, "matmul-batch", f"batch dimensions do not broadcast: {e}", port=self.port("b"))
        dims = tuple(batch) + ((ma[-2],) if len(da) > 1 else ()) + ((mb[-1],) if len(db) > 1 else ())
        return TensorInfo(etype, PartialShape.of(dims))

    def compute(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        a, b = self._oriented(a, b)
        etype = ElementType.from_dtype(a.dtype)
        work = compute_dtype(etype) if etype.is_float else a.dtype
        return from_compute(self._product(a.astype(work, copy=False), b.astype(work, copy=False)), etype)

    def biased(self, a: np.ndarray, b: np.ndarray, bias: np.ndarray) -> np.ndarray | None:
        """The product plus `bias` (1-D, a value per output column), where the operands are of
        one type that is its own compute type (f32, f64) and b has columns: each part of the
        product adds the bias to its block (`products.matmul`), as an Add of the product and the
        bias would; None, with nothing computed, otherwise."""
        a, b = self._oriented(a, b)
        if not (a.dtype == b.dtype == bias.dtype and a.dtype in (np.float32, np.float64) and b.ndim >= 2
                and bias.ndim == 1 and bias.size == b.shape[-1]):
            return None
        if self.subnormal_inputs:
            out = self._product(a, b)
            return np.add(out, bias, out=out)  # the additions an Add of the product and the bias makes
        return matmul(a, b, bias)

    def _product(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        if not self.subnormal_inputs:
            return matmul(a, b)
        return scaled_product(a, b, min(self.subnormal_inputs), matmul)

    def _oriented(self, a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        if self.attrs.transpose_a and a.ndim >= 2:
            a = np.swapaxes(a, -1, -2)
        if self.attrs.transpose_b and b.ndim >= 2:
            b = np.swapaxes(b, -1, -2)
        return a, b
