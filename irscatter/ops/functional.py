"""Ops as plain functions: numpy arrays in, numpy arrays out, no IR file needed.

`call(OpClass, arrays, attrs)` builds the one-layer description an IR file would give,
parses the attributes with the op's own schema, runs its inference (so every labelled
check applies exactly as it does in a model) and then its kernel. The inputs are never
written to.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

import numpy as np

from irscatter.errors import IRError
from irscatter.ir.element_types import ElementType
from irscatter.ir.graph import Layer
from irscatter.ops.base import Op, TensorInfo


def attr_text(value: Any) -> str:
    """A Python attribute value written the way an IR file writes it."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, ElementType):
        return str(value)
    if isinstance(value, (list, tuple)):
        return ",".join(map(_number_text, value))
    return str(value)


def _number_text(value: Any) -> str:
    """One number of a list: whole numbers as integers (an integer list takes 2.0 as 2), other
    floats in full (repr reads back as the same double: 2.5 stays 2.5)."""
    number = float(value) if isinstance(value, (float, np.floating)) else value
    if isinstance(number, float) and not number.is_integer():
        return repr(number)
    return str(int(number))


_Op = TypeVar("_Op", bound=Op)


def make_op(cls: type[_Op], attrs: Mapping[str, Any]) -> _Op:
    """An op instance as a one-layer IR would produce it (attributes parsed and checked)."""
    layer = Layer(id=0, name=cls.type_name, type=cls.type_name, version=f"{cls.domain}{cls.version}",
                  attrs={k: attr_text(v) for k, v in attrs.items() if v is not None})
    try:
        return cls(layer)
    except IRError as e:
        raise e.add_context(layer=layer.ref) from None


def run_op(op: Op, arrays: Sequence[Any]) -> Any:
    """Infer (every spec check) and compute `op` on `arrays`; errors name the op."""
    values = [np.asarray(a) for a in arrays]
    try:
        op.infer(*(TensorInfo.of(v) for v in values))
        return op.compute(*values)
    except IRError as e:
        raise e.add_context(layer=op.layer.ref) from None


def call(cls: type[Op], arrays: Sequence[Any], attrs: Mapping[str, Any]) -> Any:
    return run_op(make_op(cls, attrs), arrays)
