"""Element-type checks shared by many ops.
"""

from __future__ import annotations

from irscatter.errors import ExecutionError
from irscatter.ir.element_types import ElementType
from irscatter.ops.base import Op, TensorInfo, check


def same_element_type(a: TensorInfo, b: TensorInfo, what: str, label: str, port: str) -> ElementType:
    """Two inputs that must share an element type; returns it (a dynamic type yields to the other)."""
    if a.etype is b.etype:
        return a.etype
    check(ElementType.dynamic in (a.etype, b.etype) or a.etype is b.etype, label,
          f"{what}, found {a.etype} and {b.etype}", port=port)
    return a.etype if a.etype is not ElementType.dynamic else b.etype


def check_integral(info: TensorInfo, name: str, port: str, label: str) -> None:
    """An input (`name` in messages) that must be of an integer type, checked under `label`."""
    check(info.etype is ElementType.dynamic or info.etype.is_integral, label,
          f"{name} must be of an integer type, found {info.etype}", port=port)


def require_shape(actual: tuple[int, ...], expected: tuple[int, ...], what: str, port: str) -> None:
    if actual != expected:
        raise ExecutionError(f"{what} has shape {list(actual)}, expected {list(expected)}", port=port)


def arithmetic_float(t: ElementType) -> bool:
    """A float type values are computed in: not the packed codes (nf4, f4e2m1) or the scale type f8e8m0."""
    return t.is_float and not t.is_packed and t is not ElementType.f8e8m0


def check_float(op: Op, etype: ElementType, port_name: str = "data") -> None:
    """The ops defined on floating-point types only: refuse any other type, naming the port."""
    check(etype is ElementType.dynamic or arithmetic_float(etype), "float-type",
          f"{op.type_name} is not defined for {etype} tensors (it takes a floating-point type)",
          port=op.port(port_name))
