"""Axis rules shared by many ops: an axis input's type and shape, normalising negative axes,
and reading axis lists from known values.
"""

from __future__ import annotations

from typing import overload

import numpy as np

from irscatter.errors import ExecutionError
from irscatter.ops.base import TensorInfo, check, fail
from irscatter.ops.common.types import check_integral


def check_axis_input(axis: TensorInfo, port: str) -> None:
    check_integral(axis, "axis", port, "axis-type")
    if axis.shape.rank_is_static:
        check(
            axis.shape.rank == 0 or (axis.shape.rank == 1 and axis.shape[0].contains(1)),
            "axis-shape",
            f"axis must be a scalar or have shape [1], found {axis.shape}",
            port=port,
        )


def normalized_axis(axis: int, rank: int, *, port: str, at_runtime: bool = False) -> int:
    """Valid when -rank <= axis < rank; a scalar has no axis at all (ops that accept a
    scalar with axis 0, as the reductions do, handle rank 0 themselves)."""
    if not -rank <= axis < rank:
        message = (f"axis {axis} is out of the range [{-rank}, {rank - 1}] for rank {rank}" if rank
                   else f"axis {axis} does not exist: the input is a scalar")
        if at_runtime:
            raise ExecutionError(message, port=port)
        fail("axis-range", message, port=port)
    return axis + rank if axis < 0 else axis


def constant_axis(axis: TensorInfo) -> int | None:
    return None if axis.value is None else int(np.asarray(axis.value).reshape(-1)[0])


def runtime_axis(axis: np.ndarray, rank: int, port: str) -> int:
    return normalized_axis(int(np.asarray(axis).reshape(-1)[0]), rank, port=port, at_runtime=True)


@overload
def int_values(value: np.ndarray) -> list[int]: ...


@overload
def int_values(value: np.ndarray | None) -> list[int] | None: ...


def int_values(value: np.ndarray | None) -> list[int] | None:
    """The integers of `value` in order, or None for a value inference does not know."""
    if value is None:
        return None
    flat = np.asarray(value).reshape(-1)
    return flat.tolist() if flat.dtype.kind in "iu" else [int(v) for v in flat]  # (tolist: Python ints, at once)


def check_1d_integral(info: TensorInfo, name: str, port: str, *, type_label: str, rank_label: str) -> None:
    """An integer input of rank 0 or 1 (axes, shapes, orders): its type and rank, each with its label."""
    check_integral(info, name, port, type_label)
    if info.shape.rank_is_static:
        check(info.shape.rank <= 1, rank_label, f"{name} must be a scalar or a 1-D tensor, found {info.shape}",
              port=port)


def normalize_axes(axes: list[int], rank: int, port: str) -> list[int]:
    out = [normalized_axis(a, rank, port=port) for a in axes]
    check(len(set(out)) == len(out), "axes-unique", f"axes {axes} repeat an axis", port=port)
    return out
