"""`validate --strict`: the strict-mode findings a model's constants decide, found without running it.

Inference already runs a layer's kernel when all its inputs are known small constants (folding),
and a strict collector hears those kernels. The layers inference does not fold are probed here:
a layer with at least one known input (a carried constant value, or a Const read straight from
the weights) runs its kernel once, with zeros standing in for each unknown input of static shape.
The collector then keeps only the findings whose evidence is among the known inputs (a duplicate
in constant scatter indices is one whatever the data; a division overflow is not), so a probe
never reports what real values could contradict.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from irscatter.errors import IRError
from irscatter.ir.element_types import ElementType
from irscatter.ir.graph import Layer
from irscatter.ops.base import Op, TensorInfo
from irscatter.ops.common.strict import Collector

PROBE_ELEMENTS = 1 << 22  # a probe allocates its placeholders and outputs: skip layers larger than this


def probe(collector: Collector, op: Op, layer: Layer, inputs: Sequence[TensorInfo], producers: Sequence[Layer],
          outputs: Sequence[TensorInfo]) -> None:
    """Run `layer`'s kernel on what is known of its inputs (see the module doc), reporting into
    `collector`, unless inference has already run it or nothing about it is known."""
    if all(info.value is not None for info in outputs) or layer.bodies or op.sink or not inputs:
        return  # folded (the kernel has run), a body or state the probe cannot stand in for, or a source
    if any(not info.shape.is_static for info in outputs) or _elements(outputs) > PROBE_ELEMENTS:
        return
    known = [_known_value(info, producer) for info, producer in zip(inputs, producers)]
    if all(value is None for value in known):
        return
    arguments = [value if value is not None else _placeholder(info) for value, info in zip(known, inputs)]
    if any(a is None for a in arguments) or sum(a.size for a in arguments if a is not None) > PROBE_ELEMENTS:
        return
    names = [_port_name(op, i) for i in range(len(inputs))]
    collector.known_ports = frozenset(n for n, v in zip(names, known) if v is not None and n is not None)
    collector.all_known = all(v is not None for v in known)
    try:
        with np.errstate(all="ignore"):
            op.compute(*arguments)
    except IRError:
        pass  # a value error shows when the model runs; a probe reports only strict findings
    finally:
        collector.known_ports = None
        collector.all_known = True


def _known_value(info: TensorInfo, producer: Layer) -> np.ndarray | None:
    """The input's value if inference carried it, or if a Const of a probe's size produces it."""
    if info.value is not None:
        return np.asarray(info.value)
    if producer.type == "Const" and producer.const_data is not None and info.shape.is_static \
            and math.prod(info.shape.to_tuple()) <= PROBE_ELEMENTS:
        try:
            return producer.const_value
        except IRError:
            return None
    return None


def _placeholder(info: TensorInfo) -> np.ndarray | None:
    """Zeros of the input's static shape and type; None where no stand-in can be made."""
    if not info.shape.is_static or info.etype in (ElementType.dynamic, ElementType.string):
        return None
    return np.zeros(info.shape.to_tuple(), dtype=info.etype.dtype)


def _port_name(op: Op, position: int) -> str | None:
    """The input's name as messages give it; None for the inputs of a variadic op, which all
    answer to one name and so cannot be told apart."""
    if op.variadic or position >= len(op.inputs):
        return None
    return op.port(op.inputs[position])


def _elements(infos: Sequence[TensorInfo]) -> int:
    return sum(math.prod(info.shape.to_tuple()) for info in infos)
