"""ScaledDotProductAttention-13: softmax(query @ key^T * scale + bias) @ value.

The spec defines the op by its pseudo-code, and irscatter computes exactly that:

* `scale` defaults to 1 / sqrt(E), E being query's last dimension. The product query @ key^T is
  multiplied by it (OpenVINO's decomposition scales query before the product instead, which only
  rounds differently).
* With `causal`, the bias is -inf above the diagonal (`triu(k=1)`): row i of the L rows sees
  the source positions 0..i, counted from the top left whatever L and S are, and
  `attention_mask` is ignored (neither read nor checked, as the spec says).
* Otherwise a boolean mask adds 0 where it is true and -inf where it is false, and a float
  mask (of query's type) is added as it is. A scalar mask is a constant added to every logit,
  so the spec's scalar 0 ("no mask") and any other finite scalar leave the result unchanged.
* The softmax runs over the source positions with the row maximum subtracted first (which is
  the same function, without overflow). A row whose logits are all -inf (fully masked) is
  0/0: NaN, as the pseudo-code gives and OpenVINO's CPU plugin answers. With S = 0 the output
  is zeros (an empty sum).

Shapes: query [N, ..., L, E], key [N, ..., S, E], value [N, ..., S, Ev], each of rank 3 or
more; the batch dimensions of the three (and of the mask) broadcast by numpy's rules, with
possibly different ranks. The mask broadcasts against the logits [batch..., L, S] as the
pseudo-code's addition does, so, as in OpenVINO's shape inference, it may add batch
dimensions or stretch an L of 1; it may not stretch S (the last product would not fit).
key's E must equal query's and value's S key's: OpenVINO's shape inference would let either
be 1 and broadcast, which the pseudo-code's MatMul does not; irscatter follows the pseudo-code.

T is any floating-point type; f16, bf16 and the f8 types compute in f32 and round once,
f64 computes in f64. The mask is T or boolean, scale T (a scalar or one element in 1-D). Both
products run under the thread policy (`ops/common/products.py`); large logits go by blocks of
query rows, with the same bits (`attention_blocks.py`).

OpenVINO's core has no reference kernel for the op (it decomposes it). Its CPU plugin agrees
with the above except where a mask adds batch dimensions to the output (it then reads the wrong
mask elements), with S = 0 or E = 0 (it returns memory it has not written), and for f16/bf16,
whose logits and weights it rounds to the input type.
"""

from __future__ import annotations

import math

import numpy as np

from irscatter.errors import ExecutionError
from irscatter.ir.broadcast import BroadcastError, broadcast_numpy
from irscatter.ir.element_types import ElementType
from irscatter.ir.shapes import PartialShape
from irscatter.limits import tensor_size_problem
from irscatter.ops.activation import softmax
from irscatter.ops.base import IRBool, Op, OpAttrs, TensorInfo, check, fail
from irscatter.ops.common import accel
from irscatter.ops.common.many_axes import broadcast_shape
from irscatter.ops.common.numeric import compute_dtype, from_compute
from irscatter.ops.common.products import matmul
from irscatter.ops.common.types import check_float, same_element_type
from irscatter.ops.matrix import attention_blocks
from irscatter.ops.registry import register


class SDPAAttrs(OpAttrs):
    causal: IRBool


def _broadcast(a: PartialShape, b: PartialShape, label: str, what: str, port: str) -> PartialShape:
    try:
        return broadcast_numpy(a, b)
    except BroadcastError as e:
        fail(label, f"{what}: {e}", port=port)


@register("ScaledDotProductAttention", 13)
class ScaledDotProductAttention(Op, accel.LoadsOnSecondCall):
    labels = {
        "sdpa-rank": "query, key or value has rank less than 3",
        "sdpa-batch": "the batch dimensions of query, key and value do not broadcast",
        "sdpa-embedding": "key's last dimension (E) differs from query's",
        "sdpa-source": "value's source length (S) differs from key's",
        "sdpa-mask-type": "the attention mask is neither boolean nor of query's type",
        "sdpa-mask-shape": "the attention mask has rank 1, or does not broadcast to the logits [N, ..., L, S]",
    }

    Attrs = SDPAAttrs
    attrs: SDPAAttrs
    inputs = ("query", "key", "value", "attention_mask", "scale")
    optional_inputs = 2

    def infer(self, query: TensorInfo, key: TensorInfo, value: TensorInfo,
              attention_mask: TensorInfo | None = None, scale: TensorInfo | None = None) -> TensorInfo:
        check_float(self, query.etype, "query")
        etype = same_element_type(query, key, "key must have query's element type", "same-element-type",
                                  self.port("key"))
        etype = same_element_type(TensorInfo(etype, query.shape), value, "value must have query's element type",
                                  "same-element-type", self.port("value"))
        check_float(self, etype, "query")
        mask = None if self.attrs.causal else attention_mask
        if mask is not None:
            check(mask.etype in (ElementType.boolean, ElementType.dynamic) or etype is ElementType.dynamic
                  or mask.etype is etype, "sdpa-mask-type",
                  f"the attention mask must be boolean or {etype}, found {mask.etype}", port=self.port("attention_mask"))
        if scale is not None:
            same_element_type(TensorInfo(etype, query.shape), scale, "scale must have query's element type",
                              "same-element-type", self.port("scale"))
            if scale.shape.rank_is_static:
                dims = scale.shape.ranked_dims
                check(len(dims) == 0 or (len(dims) == 1 and dims[0].contains(1)), "scalar-input",
                      f"scale must be a scalar or a 1-D tensor of one element, found shape {scale.shape}",
                      port=self.port("scale"))
        shapes = {"query": query.shape, "key": key.shape, "value": value.shape}
        for name, shape in shapes.items():
            check(not shape.rank_is_static or shape.rank >= 3, "sdpa-rank",
                  f"{name} must have rank 3 or more, found {shape}", port=self.port(name))
        if mask is not None and mask.shape.rank_is_static:
            check(mask.shape.rank != 1, "sdpa-mask-shape",
                  f"the attention mask must be a scalar or have rank 2 or more, found {mask.shape}",
                  port=self.port("attention_mask"))
        if not all(s.rank_is_static for s in shapes.values()):
            return TensorInfo(etype, PartialShape.dynamic_rank())
        q, k, v = query.shape.ranked_dims, key.shape.ranked_dims, value.shape.ranked_dims
        check(q[-1].compatible(k[-1]), "sdpa-embedding",
              f"key's embedding dimension {k[-1]} differs from query's {q[-1]}", port=self.port("key"))
        check(k[-2].compatible(v[-2]), "sdpa-source",
              f"value's source length {v[-2]} differs from key's {k[-2]}", port=self.port("value"))
        batch = PartialShape.of(q[:-2])
        for name, dims in (("key", k), ("value", v)):
            batch = _broadcast(batch, PartialShape.of(dims[:-2]), "sdpa-batch",
                               f"the batch dimensions of {name} do not broadcast with query's", self.port(name))
        source = k[-2] if k[-2].is_static else v[-2]
        logits = PartialShape.of((*batch.ranked_dims, q[-2], source))
        if mask is not None and mask.shape.rank_is_static and mask.shape.rank >= 2:
            port = self.port("attention_mask")
            logits = _broadcast(logits, mask.shape, "sdpa-mask-shape",
                                "the attention mask does not broadcast to the logits [N, ..., L, S]", port)
            stretched = logits.ranked_dims[-1]
            check(not (source.is_static and stretched.is_static) or int(stretched) == int(source), "sdpa-mask-shape",
                  f"the attention mask's last dimension {mask.shape.ranked_dims[-1]} stretches the source length {source}",
                  port=port)
        elif mask is not None and not mask.shape.rank_is_static:
            return TensorInfo(etype, PartialShape.dynamic_rank())
        return TensorInfo(etype, PartialShape.of((*logits.ranked_dims[:-1], v[-1])))

    def compute(self, query: np.ndarray, key: np.ndarray, value: np.ndarray,
                attention_mask: np.ndarray | None = None, scale: np.ndarray | None = None) -> np.ndarray:
        etype = ElementType.from_dtype(query.dtype)
        work = compute_dtype(etype)
        self._check_logits_size(query.shape, key.shape, attention_mask, work)
        q, k, v = (x.astype(work, copy=False) for x in (query, key, value))
        with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
            if scale is None:  # E = 0 makes it inf, and the empty products 0 * inf = NaN, as in the spec
                factor = work.type(1) / np.sqrt(work.type(query.shape[-1]))
            else:
                factor = scale.astype(work).reshape(())
            mask = None if self.attrs.causal else attention_mask
            if attention_blocks.usable(q, k, v, mask):
                logits = math.prod(q.shape[:-1]) * k.shape[-2]  # (usable: q and k have one batch shape)
                compiled = self.takes_compiled(softmax.KERNELS, logits)
                return from_compute(attention_blocks.attend(q, k, v, factor, self._bias(mask, work), self.attrs.causal,
                                                            compiled=compiled), etype)
            logits = matmul(q, np.swapaxes(k, -1, -2)) * factor
            logits = self._biased(logits, attention_mask, work)
            if logits.shape[-1] == 0:
                weights = logits
            else:
                shifted = logits - logits.max(axis=-1, keepdims=True)
                np.exp(shifted, out=shifted)
                weights = shifted / shifted.sum(axis=-1, keepdims=True)
            out = matmul(weights, v)
        return from_compute(out, etype)

    def _check_logits_size(self, query: tuple[int, ...], key: tuple[int, ...], mask: np.ndarray | None,
                           work: np.dtype) -> None:
        """The L x S logits (times the batch dims, and as wide as a mask that broadcasts over
        them) are the largest array of the op, and no output shape shows them: their size is
        checked before they are made."""
        try:
            logits = (*np.broadcast_shapes(query[:-2], key[:-2]), query[-2], key[-2])
            if mask is not None and not self.attrs.causal:
                logits = np.broadcast_shapes(logits, mask.shape)
        except ValueError:
            return  # shapes that do not broadcast are refused with their own labels where they meet
        if (problem := tensor_size_problem(logits, work.itemsize)) is not None:
            raise ExecutionError(f"the logits [N, ..., L, S] would be too large: {problem}", label="tensor-limit",
                                 port=self.port("key"))

    def _biased(self, logits: np.ndarray, mask: np.ndarray | None, work: np.dtype) -> np.ndarray:
        """The logits plus the bias the pseudo-code adds (a fresh array, or `logits` itself)."""
        if self.attrs.causal:
            rows, cols = logits.shape[-2:]
            above = np.arange(cols)[None, :] > np.arange(rows)[:, None]
            return logits + np.where(above, work.type(-np.inf), work.type(0))
        if mask is None:
            return logits
        self._check_mask_fits(logits.shape, mask.shape)
        return logits + self._bias(mask, work)

    @staticmethod
    def _bias(mask: np.ndarray | None, work: np.dtype) -> np.ndarray | None:
        """What a mask adds to the logits: 0 where a boolean mask is true and -inf where false; a
        float mask as it is."""
        if mask is None or mask.dtype != np.bool_:
            return None if mask is None else mask.astype(work, copy=False)
        return np.where(mask, work.type(0), work.type(-np.inf))

    def _check_mask_fits(self, logits: tuple[int, ...], mask: tuple[int, ...]) -> None:
        """The inference checks again on the shapes of a run: a mask whose shape inference could
        not know (fed through the model's state, say) must still broadcast to the logits."""
        problem = None
        if len(mask) == 1:
            problem = f"the attention mask must be a scalar or have rank 2 or more, found {list(mask)}"
        elif mask:
            try:
                broadcast_shape(logits, mask)
            except ValueError:
                problem = f"the attention mask {list(mask)} does not broadcast to the logits {list(logits)}"
            else:
                if mask[-1] != logits[-1] and logits[-1] == 1:
                    problem = f"the attention mask's last dimension {mask[-1]} stretches the source length 1"
        if problem:
            raise ExecutionError(problem, label="sdpa-mask-shape", port=self.port("attention_mask"))
