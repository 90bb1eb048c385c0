"""A convolution, the Add of its per-channel bias, and the activation after it, as one step of a
plain run: the layers OpenVINO's converters write for every convolution of a CNN (its batch
normalization folded into the filters and a bias).

Run as written, the Add and the activation each make an array as large as the convolution's
output and pass over it, out of the cache for most layers of a network at 224x224. Fused, the
convolution computes as it does, and with numba, one compiled pass adds the bias and applies the
activation over its output in place (`ops/elementwise/bias_kernels.py`), each element by the
layers' own arithmetic, so the values are the layers' to the bit. Without numba, or on a
layer's first call before that loop is loaded (loading numba takes longer than such a model's
run, so a model run once does not wait for it), the step calls the three layers' kernels in turn.

Taken where nothing else reads the convolution's output or the Add's (no Result, no other layer),
the bias is a Const of the output's float type that varies along the channel axis alone, the
Add broadcasts numpy's way, and the activation is Relu-1, HSwish-4, HSigmoid-5 or Swish-4
without beta (or there is none: the Add alone). Swish's exponential stays numpy's: the pass
goes a block of rows at a time, the sums and their negations made by one compiled loop, numpy's
exp over the block, and the quotients by another. A run that watches its layers (hooks, records, timings, strict mode,
emulated precision) runs them as written.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import partial
from typing import Any

import numpy as np

from irscatter.ir.element_types import ElementType
from irscatter.ops.base import Op, TensorInfo
from irscatter.ops.common import accel, threads
from irscatter.ops.convolution.convolution import Convolution
from irscatter.ops.convolution.group_convolution import GroupConvolution
from irscatter.ops.elementwise.binary import BinaryElementwise

# The activations the compiled pass applies, by (type, version), as bias_kernels numbers them.
ACTIVATIONS = {("Relu", 1): 1, ("HSwish", 4): 2, ("HSigmoid", 5): 3, ("Swish", 4): 4}
SWISH = 4
BLOCK = 1 << 14  # elements of a Swish's exponentials at a time: they stay in a core's L2 cache
FLOATS = (ElementType.f32, ElementType.f64)
# An output element's weight in multiply-adds for `threads.parts`: the pass is a few operations
# an element, bound by the memory it reads and writes.
ELEMENT_WORK = 4


@dataclass(frozen=True)
class Fusion:
    """The fused steps (position of the convolution -> its step) and the positions they leave out."""

    steps: dict[int, Any]
    skipped: frozenset[int]


def fuse_epilogues(steps: Sequence[Any], ops: Mapping[int, Op], infos: Mapping[int, TensorInfo],
                   const_slots: set[int], result_slots: set[int], taken: set[int]) -> Fusion:
    """The convolutions whose bias Add and activation a plain run can fuse (see the module doc);
    `taken`: positions some other plan already replaces or leaves out."""
    readers: dict[int, list[int]] = {}
    for i, step in enumerate(steps):
        for slot in step.inputs:
            readers.setdefault(slot, []).append(i)

    def only_reader(slot: int) -> int | None:
        found = readers.get(slot, ())
        return found[0] if len(found) == 1 and slot not in result_slots and found[0] not in taken else None

    fused: dict[int, Any] = {}
    skipped: set[int] = set()
    for i, step in enumerate(steps):
        op = ops[step.layer.id]
        if i in taken or not isinstance(op, (Convolution, GroupConvolution)) or len(step.outputs) != 1:
            continue
        out_info = infos.get(step.outputs[0])
        j = only_reader(step.outputs[0])
        if out_info is None or out_info.etype not in FLOATS or j is None:
            continue
        add_step, add_op = steps[j], ops[steps[j].layer.id]
        bias_position = _bias_position(add_step, add_op, step.outputs[0], const_slots, infos, out_info)
        if bias_position is None:
            continue
        chain = [j]
        activation = 0
        k = only_reader(add_step.outputs[0])
        if k is not None:
            act = ops[steps[k].layer.id]
            code = ACTIVATIONS.get((act.type_name, act.version))
            if code is not None and len(steps[k].inputs) == 1:
                chain.append(k)
                activation = code
        last = steps[chain[-1]]
        compute = _Epilogue(op.compute, add_op.compute, bias_position,
                            ops[last.layer.id].compute if activation else None, activation)
        fused[i] = replace(step, compute=compute, inputs=(*step.inputs, add_step.inputs[bias_position]),
                           outputs=last.outputs, release=tuple(dict.fromkeys(
                               s for p in (i, *chain) for s in steps[p].release)),
                           reuse_slot=None, reuse_input=None)
        skipped.update(chain)
        taken.update((i, *chain))
    return Fusion(fused, frozenset(skipped))


def _bias_position(add_step: Any, add_op: Op, source: int, const_slots: set[int], infos: Mapping[int, TensorInfo],
                   out_info: TensorInfo) -> int | None:
    """Which input of the Add is a per-channel bias of the convolution's output `source` (None:
    the Add is no such Add)."""
    if not (isinstance(add_op, BinaryElementwise) and add_op.row.type_name == "Add"
            and add_op.attrs.auto_broadcast == "numpy" and len(add_step.inputs) == 2):
        return None
    position = 1 if add_step.inputs[0] == source else 0
    bias_slot = add_step.inputs[position]
    if add_step.inputs[1 - position] != source or bias_slot not in const_slots:
        return None
    bias, out = infos.get(bias_slot), out_info.shape
    if bias is None or bias.etype is not out_info.etype or not bias.shape.is_static or not out.rank_is_static \
            or out.rank < 3 or not out[1].is_static:
        return None
    dims = bias.shape.to_tuple()
    if len(dims) > out.rank:
        return None
    aligned = (1,) * (out.rank - len(dims)) + tuple(dims)
    return position if all(d == 1 for a, d in enumerate(aligned) if a != 1) and aligned[1] == int(out[1]) else None


class _Epilogue:
    """The fused step's kernel: convolution, then bias and activation (see the module doc)."""

    layer_inputs = 2  # of the step's inputs, those of its layer (the convolution): the bias comes after

    def __init__(self, convolve: Callable[..., Any], add: Callable[..., Any], bias_position: int,
                 activate: Callable[..., Any] | None, activation: int) -> None:
        self.convolve, self.add, self.bias_position = convolve, add, bias_position
        self.activate, self.activation = activate, activation
        self.called = False

    def __call__(self, x: np.ndarray, filters: np.ndarray, bias: np.ndarray) -> np.ndarray:
        out = self.convolve(x, filters)
        compiled = (self.called or "irscatter.ops.elementwise.bias_kernels" in sys.modules) and accel.enabled()
        self.called = True
        if compiled and _writable(out, (x, filters, bias)) and bias.dtype == out.dtype:
            _biased(out, bias, self.activation)
            return out
        summed = self.add(out, bias) if self.bias_position == 1 else self.add(bias, out)
        return summed if self.activate is None else self.activate(summed)


def _writable(out: np.ndarray, inputs: tuple[np.ndarray, ...]) -> bool:
    """Whether the pass may write over the convolution's output: a float array in order, which
    shares no memory with the step's inputs (a convolution makes its output, but the pass
    checks rather than trusts that)."""
    return isinstance(out, np.ndarray) and out.dtype.kind == "f" and out.ndim >= 3 and out.flags.c_contiguous \
        and out.flags.writeable and not any(np.may_share_memory(out, a) for a in inputs)


def _biased(out: np.ndarray, bias: np.ndarray, activation: int) -> None:
    """The compiled pass over `out` [N, C, ...] as rows [N x C, positions], on the thread policy's
    parts of a large output, each a range of rows."""
    if out.size == 0:
        return
    rows = out.reshape(math.prod(out.shape[:2]), -1)
    per_channel = np.ascontiguousarray(bias.reshape(-1))
    spans = threads.spans(rows.shape[0], threads.parts(out.size * ELEMENT_WORK))
    if len(spans) == 1:
        _rows(rows, per_channel, 0, activation)
    else:
        threads.run([partial(_rows, rows[lo:hi], per_channel, lo, activation) for lo, hi in spans])


def _rows(rows: np.ndarray, bias: np.ndarray, first: int, activation: int) -> None:
    """The pass over rows from row `first` on: one compiled loop, or for Swish, a block of rows at
    a time, the compiled loops around numpy's exponential."""
    from irscatter.ops.elementwise import bias_kernels  # (imports numba: only when used)

    kind = rows.dtype.type
    if activation != SWISH:
        bias_kernels.biased(rows, bias, first, activation, kind(0), kind(3), kind(6))
        return
    step = max(1, BLOCK // max(rows.shape[1], 1))
    room = np.empty(min(step, rows.shape[0]) * rows.shape[1], rows.dtype)
    for lo in range(0, rows.shape[0], step):
        block = rows[lo:lo + step]
        exps = room[:block.size].reshape(block.shape)
        bias_kernels.biased_scaled(block, bias, first + lo, kind(-1), exps)
        np.exp(exps, out=exps)
        bias_kernels.divided_by_successor(block, exps, kind(1))
