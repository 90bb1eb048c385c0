"""Element-wise ops declared as rows of a table instead of a class each.

A row names the op (type and version), its numpy kernel and which element types it accepts;
`declare` turns each row into a registered `Op` subclass of the table's base class (unary or
binary), which does the shared inference. A kernel is a function of the input arrays, plus one
keyword argument per attribute the row's schema adds to the base schema:

    Row("Divide", 1, divide, attrs=DivideAttrs)    # divide(a, b, *, m_pythondiv)
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from irscatter.ir.element_types import ElementType
from irscatter.ops.base import Op, OpAttrs, check
from irscatter.ops.common.types import arithmetic_float
from irscatter.ops.registry import register

# Which element types a row accepts, and the label of the check that refuses the others.
# `dynamic` is always accepted: the check waits for a known type.
ACCEPTS: dict[str, tuple[Callable[[ElementType], bool], str, str]] = {
    "any": (lambda t: t is not ElementType.string, "numeric-type", "any type but string"),
    "numeric": (lambda t: t not in (ElementType.boolean, ElementType.string), "numeric-type", "a numeric type"),
    "signed": (lambda t: arithmetic_float(t) or (t.is_integral and t.is_signed), "signed-type",
               "a float or signed integer type"),
    "float": (arithmetic_float, "float-type", "a floating-point type"),
    "integral": (lambda t: t.is_integral, "integer-type", "an integer type"),
    "bitwise": (lambda t: t.is_integral or t is ElementType.boolean, "integer-type", "an integer or boolean type"),
    "boolean": (lambda t: t is ElementType.boolean, "boolean-type", "boolean"),
}


@dataclass(frozen=True)
class Row:
    """One element-wise op: `type_name`-`version` computes `kernel` on inputs of the accepted
    types; its output has the inputs' type, or `output` when given (booleans for predicates)."""

    type_name: str
    version: int
    kernel: Callable[..., np.ndarray]
    accepts: str = "numeric"
    output: ElementType | None = None
    attrs: type[OpAttrs] | None = None  # None: the table's base schema
    doc: str = ""
    # The ufunc the kernel is on two float arrays of one type, where it is one: the op's base
    # may then run it on the thread policy's parts (`BinaryElementwise.compute`).
    float_ufunc: np.ufunc | None = None


class TableOp(Op):
    """The part every table-declared op shares: the type check and the kernel call."""

    row: ClassVar[Row]
    kernel_attrs: ClassVar[tuple[str, ...]] = ()  # the attributes the row's schema adds to the base's
    # Their values. Most rows have none and share this dict, which is only ever unpacked into
    # the kernel's call (a read-only mapping there would cost a conversion to a dict per call).
    kernel_args: dict[str, Any] = {}  # noqa: RUF012
    elementwise = True

    def __init__(self, layer: Any) -> None:
        super().__init__(layer)
        if self.kernel_attrs:
            self.kernel_args = {name: getattr(self.attrs, name) for name in self.kernel_attrs}

    def accept(self, etype: ElementType, port: str) -> ElementType:
        accepted, label, what = ACCEPTS[self.row.accepts]
        check(etype is ElementType.dynamic or accepted(etype), label,
              f"{self.type_name} is not defined for {etype} tensors (it takes {what})", port=port)
        return self.row.output or etype

    def compute(self, *arrays: np.ndarray) -> np.ndarray:
        return self.row.kernel(*arrays, **self.kernel_args)


def declare(base: type[TableOp], rows: tuple[Row, ...]) -> dict[str, type[Op]]:
    """Register one `base` subclass per row, named after the op, in the caller's module."""
    module = sys._getframe(1).f_globals["__name__"]
    made: dict[str, type[Op]] = {}
    for row in rows:
        namespace: dict[str, Any] = {"row": row, "__module__": module, "__doc__": row.doc or None}
        if row.attrs is not None:
            namespace["Attrs"] = row.attrs
            namespace["kernel_attrs"] = tuple(sorted(set(row.attrs.model_fields) - set(base.Attrs.model_fields)))
        name = row.type_name if row.version == 1 or row.type_name not in made else f"{row.type_name}{row.version}"
        made[name] = register(row.type_name, row.version)(type(name, (base,), namespace))
    return made
