"""Attention over grouped key-value heads without their copies, in a plain run.

A decoder with fewer key-value heads than query heads (grouped-query attention: Qwen2's 2 for
14, Llama's 8 for 32) is exported with each head of the KV cache repeated for its group before
ScaledDotProductAttention: an Unsqueeze to [B, Hkv, 1, S, E], a Broadcast to [B, Hkv, G, S, E]
(a view, no copy), then a Reshape to [B, Hkv * G, S, E], which cannot be a view and copies the
cache G times over, for keys and for values, at every step of a generation; the copies grow
with the context.

Here the Reshape steps are left out, and the attention takes the Broadcast's view with the
query viewed as [B, Hkv, G, L, E] (and the mask with an axis of 1 for the group, where it has
one head): each matrix of the batch is then the same array, in the same layout, as in the
copied cache, so every product is the same BLAS call on the same values, and the result has the
layers' bits. The output, [B, Hkv, G, L, E], is viewed as [B, H, L, E].

Taken where a ScaledDotProductAttention's key and value each come from a Reshape to rank 4 (of
an input of rank 5, or of a rank that inference could not tell) that nothing else reads (no
other layer, no Result). At run time the grouped path is
taken where the Reshape merges axes 1 and 2 of its input, that input is broadcast along axis 2,
its last two axes are laid out as a copy would lay them out (rows of contiguous elements), the
query views as [B, Hkv, G, L, E] without a copy, and the mask is of rank 0 or 2, or of rank 4
with one head or H. Otherwise, or where anything in the shapes is refused, the Reshapes run as
written (raising their own errors, under their own layers' names) and the attention after them.
A run that watches its layers runs them as written.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any, cast

import numpy as np

from irscatter.errors import IRError
from irscatter.limits import tensor_size_problem
from irscatter.ops.base import Op, TensorInfo
from irscatter.ops.common.axes import int_values
from irscatter.ops.matrix.scaled_dot_product_attention import ScaledDotProductAttention
from irscatter.ops.movement.reshape import Reshape, reshape_target
from irscatter.runtime.epilogues import Fusion


def fuse_grouped_attention(steps: Sequence[Any], ops: Mapping[int, Op], infos: Mapping[int, TensorInfo],
                           result_slots: set[int], taken: set[int], producers: Mapping[int, int],
                           readers: Mapping[int, list[int]]) -> Fusion:
    """The attention steps a plain run takes over grouped heads (see the module doc); `taken`:
    positions some other plan already replaces or leaves out (this adds those it takes)."""

    def merge(slot: int, reader: int) -> int | None:
        """The position of the Reshape to rank 4 (from rank 5, or a rank inference could not
        tell) that makes `slot` for the step at `reader` alone, if one does."""
        position = producers.get(slot)
        if position is None or position in taken or slot in result_slots or readers.get(slot) != [reader]:
            return None
        step = steps[position]
        if not isinstance(ops[step.layer.id], Reshape) or len(step.inputs) != 2:
            return None
        data, out = infos.get(step.inputs[0]), infos.get(slot)  # (a Broadcast to a computed shape: rank unknown)
        if data is None or out is None or not out.shape.rank_is_static or out.shape.rank != 4:
            return None
        return position if not data.shape.rank_is_static or data.shape.rank == 5 else None

    fused: dict[int, Any] = {}
    skipped: set[int] = set()
    for i, step in enumerate(steps):
        attention = ops[step.layer.id]
        if i in taken or not isinstance(attention, ScaledDotProductAttention) or len(step.inputs) < 3:
            continue
        key, value = merge(step.inputs[1], i), merge(step.inputs[2], i)
        if key is None or value is None or key == value:
            continue
        reshapes = [(cast(Reshape, ops[steps[p].layer.id]), steps[p].layer) for p in (key, value)]
        inputs = (step.inputs[0], *steps[key].inputs, *steps[value].inputs, *step.inputs[3:])
        fused[i] = replace(step, compute=GroupedAttention(attention, reshapes), inputs=inputs,
                           release=tuple(dict.fromkeys(s for p in (key, value, i) for s in steps[p].release)),
                           reuse_slot=None, reuse_input=None)
        skipped.update((key, value))
        taken.update((key, value, i))
    return Fusion(fused, frozenset(skipped))


class GroupedAttention:
    """The fused step's kernel: (query, key's Broadcast, key's pattern, value's Broadcast,
    value's pattern, then the attention's mask and scale, where it has them)."""

    def __init__(self, attention: ScaledDotProductAttention, reshapes: list[tuple[Reshape, Any]]) -> None:
        self.attention, self.reshapes = attention, reshapes

    def __call__(self, query: np.ndarray, key: np.ndarray, key_pattern: np.ndarray, value: np.ndarray,
                 value_pattern: np.ndarray, *rest: np.ndarray) -> np.ndarray:
        grouped = self._grouped(query, [(key, key_pattern), (value, value_pattern)], rest)
        if grouped is not None:
            return grouped
        return self.attention.compute(*self.layer_arguments([query, key, key_pattern, value, value_pattern, *rest]))

    def layer_arguments(self, args: list[Any]) -> list[Any]:
        """The attention's own inputs, from the step's: the Reshapes run as written (what the run
        loop's `CompiledModel._explain` infers on when a kernel fails with one of numpy's errors)."""
        query, key, key_pattern, value, value_pattern, *rest = args
        return [query, self._as_written(0, key, key_pattern), self._as_written(1, value, value_pattern), *rest]

    def _grouped(self, query: np.ndarray, operands: list[tuple[np.ndarray, np.ndarray]],
                 rest: tuple[np.ndarray, ...]) -> np.ndarray | None:
        """The attention over the grouped views, or None where the run must take the layers as
        written."""
        key, value = operands[0][0], operands[1][0]
        if query.ndim != 4 or key.ndim != 5 or value.ndim != 5:
            return None
        batch, kv_heads, group, source, width = key.shape
        heads, rows = kv_heads * group, query.shape[2]
        for (data, pattern), (reshape, _) in zip(operands, self.reshapes):
            try:
                target = reshape_target(data.shape, int_values(pattern), reshape.attrs.special_zero)
            except ValueError:
                return None
            if (target != (batch, heads, *data.shape[3:]) or data.shape[:4] != key.shape[:4]
                    or tensor_size_problem(target, data.itemsize) is not None or not _repeated_rows(data)):
                return None
        logits = (batch, heads, rows, source)
        if query.shape[:2] != (batch, heads) or query.shape[3] != width \
                or tensor_size_problem(logits, max(query.itemsize, 4)) is not None:
            return None
        grouped_query = _viewed(query, (batch, kv_heads, group, rows, width))
        mask = _grouped_mask(rest[0], logits, kv_heads, group) if rest else None
        if grouped_query is None or (rest and mask is None):
            return None
        out = self.attention.compute(grouped_query, key, value, *((mask, *rest[1:]) if rest else ()))
        return out.reshape(batch, heads, rows, out.shape[-1])

    def _as_written(self, k: int, data: np.ndarray, pattern: np.ndarray) -> np.ndarray:
        """Reshape `k` (the key's, the value's) run as written, its errors under its own name."""
        reshape, layer = self.reshapes[k]
        try:
            return reshape.compute(data, pattern)
        except IRError as e:
            raise e.add_context(layer=layer.ref, line=layer.line) from None


def _repeated_rows(data: np.ndarray) -> bool:
    """Whether `data` [B, Hkv, G, S, E] repeats each head along axis 2 (a stride of 0, or a group
    of one) with each [S, E] matrix in rows of contiguous elements, as a copy would hold it."""
    return (data.shape[2] == 1 or data.strides[2] == 0) and data.strides[4] == data.itemsize \
        and data.strides[3] == data.shape[4] * data.itemsize


def _grouped_mask(mask: np.ndarray, logits: tuple[int, int, int, int], kv_heads: int,
                  group: int) -> np.ndarray | None:
    """The mask for logits [B, Hkv, G, L, S], from one for [B, H, L, S], where its meaning is
    plain; None where it is not (the layers as written then check it)."""
    if mask.ndim not in (0, 2, 4):
        return None
    try:
        if np.broadcast_shapes(logits, mask.shape) != logits:
            return None
    except ValueError:
        return None
    if mask.ndim < 4:
        return mask
    if mask.shape[1] == 1:
        return mask[:, :, None]
    return _viewed(mask, (mask.shape[0], kv_heads, group, *mask.shape[2:]))


def _viewed(array: np.ndarray, shape: tuple[int, ...]) -> np.ndarray | None:
    """`array` viewed in `shape`, or None where that takes a copy."""
    view = array.view()
    try:
        view.shape = shape
    except AttributeError:
        return None
    return view
