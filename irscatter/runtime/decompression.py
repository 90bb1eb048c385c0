"""Compressed weights decompressed the way OpenVINO's CPU plugin does it, when asked.

NNCF writes a compressed weight as integer codes (u8, i8, u4, i4) followed by Convert to f16,
a Subtract of a zero point (itself an integer Const converted to f16, or none), a Multiply by an
f16 scale, for groups a Reshape, and a Convert to f32 that the MatMul reads. Run as written,
each of those layers rounds to f16: the product `(code - zero) * scale` is an f16 value.

The CPU plugin does not run that chain. It fuses the Convert, Subtract and Multiply into its
fully-connected node as decompression parameters and hands them to oneDNN's inner product with
the integer weight: in `createPrimitiveAttrs` of
src/plugins/intel_cpu/src/nodes/executors/dnnl/dnnl_fullyconnected_primitive.cpp (OpenVINO's
repository) the scales are passed to `appendDecompressionScales` as f32 (unless they are
f8e8m0) and the zero points to `appendDecompressionZeroPoints` as f32 unless activations are
quantized dynamically, so the kernel computes `(code - zero) * scale` in f32 and never rounds
it to f16. That is the documented design: OpenVINO's weight-compression guide
(docs.openvino.ai, model-optimization-guide/weight-compression) keeps activations in floating
point and reads the weights compressed, and oneDNN's "MatMul Tutorial: weights decompression"
gives the zero points and scales to the MatMul as attributes, decompressed inside the kernel.
By default the plugin also quantizes the activations of such a MatMul dynamically (per group of
the reduced axis), a separate departure that its compile property
DYNAMIC_QUANTIZATION_GROUP_SIZE=0 turns off.

`decompressing("f32")` makes the runs inside it compute each such chain that way: codes and
zero points converted straight to f32 (exact, for integers of at most 8 bits), f16 scales
widened to f32, the Subtract and Multiply in f32, the last Convert to f32 then changing
nothing. A chain is what `runtime/compressed.py` recognises: the layers that compute a
MatMul's weight from Consts alone, reading an integer Const of at most 8 bits. No other layer
changes; a model without such a chain runs as it does without the option. Layers of a chain
that convert one float type to another (an f32 scale Const narrowed to f16, say) keep their
rounding and have their result widened: the plugin folds those before it fuses the chain.

A run under the option is a watched run (every layer runs, nothing folded or looked up), so a
hook sees the chain's layers with their f32 values. With precision emulation too, the chain's
values are rounded to the emulated precision like any other layer's.
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import replace
from typing import Any

import ml_dtypes
import numpy as np

from irscatter.errors import UsageError
from irscatter.ir.element_types import ElementType
from irscatter.ops import context
from irscatter.ops.base import Op
from irscatter.ops.common.numeric import convert_array
from irscatter.ops.conversion.convert import Convert
from irscatter.runtime.compressed import reads_codes, weight_chains

DECOMPRESSIONS = ("f32",)
_NARROW_FLOATS = frozenset({np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16)})

_AS_WRITTEN: AbstractContextManager[object] = nullcontext()


def checked_decompression(decompression: str | None) -> str | None:
    """`decompression` if it names a way to decompress (or is None); a UsageError otherwise."""
    if decompression is None or decompression in DECOMPRESSIONS:
        return decompression
    raise UsageError(f"decompression must be one of {', '.join(DECOMPRESSIONS)} (or None for the layers as "
                     f"written), got {decompression!r}", argument="decompression", value=decompression)


def decompressing(decompression: str | None) -> AbstractContextManager[object]:
    """Runs inside the block decompress compressed weights as `decompression` says ("f32": as
    OpenVINO's CPU plugin does); with None, the block is left as it is."""
    if checked_decompression(decompression) is None:
        return _AS_WRITTEN
    return context.using(decompression=decompression)


def asked_decompression() -> str | None:
    """The decompression the run in progress was asked for, if any."""
    return context.current().decompression


_STEPS: weakref.WeakKeyDictionary[Any, list[Any] | None] = weakref.WeakKeyDictionary()


def decompression_steps(compiled: Any) -> list[Any] | None:
    """The steps of `compiled` with its decompression chains computed in f32, when a run asks
    for that and the model has such a chain; None otherwise (the run is unchanged). Made once
    per compiled model."""
    if context.current().decompression is None:
        return None
    if compiled not in _STEPS:
        _STEPS[compiled] = _widened_steps(compiled)
    return _STEPS[compiled]


def _widened_steps(compiled: Any) -> list[Any] | None:
    plan, graph = compiled.plan, compiled.graph
    steps: Sequence[Any] = plan.steps
    consts = dict(plan.const_slots)
    infos = {slot: graph.infos.get(key) for key, slot in plan.slot_of.items()}
    ops = {step.layer.id: graph.op(step.layer.id) for step in steps}
    widened: set[int] = set()
    for _, chain in weight_chains(steps, ops, consts):
        if reads_codes(steps, chain, infos, consts):
            widened.update(chain)
    if not widened:
        return None
    return [replace(step, compute=_InF32(step.compute, ops[step.layer.id]), reuse_slot=None, reuse_input=None)
            if i in widened else step for i, step in enumerate(steps)]


class _InF32:
    """A decompression layer's kernel run in f32: its 16-bit float inputs widened, a Convert
    of integers made straight to f32, any 16-bit float result widened."""

    def __init__(self, compute: Any, op: Op) -> None:
        self.compute = compute
        source = getattr(op, "src", None) if isinstance(op, Convert) else None
        to_float = isinstance(op, Convert) and op.attrs.destination_type.is_float
        self.integers = source if to_float and source is not None and not source.is_float else None

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self.integers is not None:
            return convert_array(np.asarray(args[0]), self.integers, ElementType.f32)
        out = self.compute(*[_widened(a) for a in args], **kwargs)
        return tuple(map(_widened, out)) if isinstance(out, tuple) else _widened(out)


def _widened(value: Any) -> Any:
    if isinstance(value, np.ndarray) and value.dtype in _NARROW_FLOATS:
        return value.astype(np.float32)
    return value


__all__ = ["DECOMPRESSIONS", "asked_decompression", "checked_decompression", "decompressing",
           "decompression_steps"]
