"""Pad-1 and Pad-12: `data` grown (or, in -12, cropped) at both ends of every axis, the new
elements made by `pad_mode`: `constant` (`pad_value`, 0 without it), `edge` (the nearest edge
element), `reflect` (mirrored about the edge element, which is not repeated) or `symmetric`
(mirrored with the edge element repeated).

Output element j of an axis of length n comes from source position s = j - pads_begin: the
element s when 0 <= s < n, else the pad value (constant), data[clamp(s)] (edge), the reflection
of s about 0 or n-1 (reflect) or about -1/2 and n-1/2 (symmetric). Pad-12's negative pads crop
and are read the same way: the reflection is taken about the edges of `data`, not of the cropped
tensor, as the spec's mixed-pads example and OpenVINO show.

Constraints, from the spec: `pads_begin` and `pads_end` are 1-D integer tensors with one value
per axis of `data`; in reflect mode each pad is at most n-1 and in symmetric mode at most n (so
one reflection always reaches the data; an empty axis admits no reflect pad at all, even 0, as
in OpenVINO). An edge pad of an empty axis has no edge to copy and is refused (OpenVINO's rule;
the spec is silent). `pad_value` is a scalar of data's element type; outside constant mode it is
ignored, as in OpenVINO (the spec says it should not be given).

Departures from OpenVINO, where the spec decides:
  * Pad-1 refuses negative pads: its spec gives the output length as pads_begin + n + pads_end
    and introduces cropping only in Pad-12. OpenVINO's Pad-1 crops exactly as Pad-12 does.
  * Pad-12 gives an axis cropped below nothing length max(pads_begin + n + pads_end, 0), as its
    spec says; OpenVINO's CPU plugin fails on such an output (its core reference agrees).

Element types: the spec names numeric types; booleans are padded too (OpenVINO pads any type,
moving bytes), and strings are refused.

The output's size depends on the values of the pads, so it is checked against the tensor
limits before anything is allocated.
"""

from __future__ import annotations

from typing import Annotated, Literal

import numpy as np

from irscatter.ir.element_types import ElementType
from irscatter.ir.shapes import Dimension, PartialShape
from irscatter.limits import check_allocation
from irscatter.ops.base import Lower, Op, OpAttrs, TensorInfo, check
from irscatter.ops.common.axes import int_values
from irscatter.ops.common.many_axes import pick_along_each_axis
from irscatter.ops.common.ranges import Bounds, extent
from irscatter.ops.common.types import check_integral, same_element_type
from irscatter.ops.movement.slice import PlanError, planned
from irscatter.ops.registry import register


class PadAttrs(OpAttrs):
    pad_mode: Annotated[Literal["constant", "edge", "reflect", "symmetric"], Lower]


def padded_dims(dims: list[int | None], begin: list[int], end: list[int], mode: str, crop: bool) -> list[int | None]:
    """The output length of each axis (None where the input's is unknown); raises PlanError
    where the pads break the spec's rules for `mode`."""
    if len(begin) != len(dims) or len(end) != len(dims):
        raise PlanError("pads-length", f"pads_begin ({len(begin)} values) and pads_end ({len(end)} values) "
                                       f"must have one value per axis of data (rank {len(dims)})")
    if not crop and any(p < 0 for p in (*begin, *end)):
        raise PlanError("pad-negative", f"Pad-1 takes no negative pads (pads_begin {begin}, pads_end {end}); "
                                        "Pad-12 crops with them")
    out: list[int | None] = []
    for axis, (n, b, e) in enumerate(zip(dims, begin, end)):
        if n is not None:
            if mode == "reflect" and not (b <= n - 1 and e <= n - 1):
                raise PlanError("pad-limit", f"reflect mode pads axis {axis} of length {n} by {b} and {e}; "
                                             f"each must be at most {n - 1}")
            if mode == "symmetric" and not (b <= n and e <= n):
                raise PlanError("pad-limit", f"symmetric mode pads axis {axis} of length {n} by {b} and {e}; "
                                             f"each must be at most {n}")
            if mode == "edge" and n == 0 and (b > 0 or e > 0):
                raise PlanError("pad-limit", f"edge mode cannot pad axis {axis}: it is empty, so it has no edge")
        out.append(None if n is None else max(b + n + e, 0))
    return out


def source_positions(out: int, n: int, begin: int, mode: str) -> np.ndarray:
    """For each output position of one axis, the data position it copies (reflect, symmetric
    and edge modes; `padded_dims` has checked that one reflection reaches the data)."""
    if mode == "edge":  # a begin past either end copies one edge throughout; clamped, it cannot overflow i64
        return np.clip(np.arange(out, dtype=np.int64) - min(max(begin, -n), out), 0, n - 1)
    s = np.arange(out, dtype=np.int64) - begin
    if mode == "reflect":
        s = np.where(s < 0, -s, s)
        return np.where(s > n - 1, 2 * (n - 1) - s, s)
    s = np.where(s < 0, -s - 1, s)  # symmetric
    return np.where(s > n - 1, 2 * n - 1 - s, s)


def pad_array(data: np.ndarray, begin: list[int], end: list[int], mode: str, value, out_shape: tuple[int, ...]) -> np.ndarray:
    if mode == "constant":
        out = np.full(out_shape, value, dtype=data.dtype)
        dst, src = [], []
        for n, o, b in zip(data.shape, out_shape, begin):
            lo, hi = max(b, 0), min(o, n + b)  # the output positions whose source lies in data
            if hi <= lo:
                return out
            dst.append(slice(lo, hi))
            src.append(slice(lo - b, hi - b))
        out[tuple(dst)] = data[tuple(src)]
        return out
    if data.ndim == 0:
        return data.copy()
    index = [source_positions(o, n, b, mode) for n, o, b in zip(data.shape, out_shape, begin)]
    return pick_along_each_axis(data, index)


class PadBase(Op):
    labels = {
        "pad-type": "data is a string tensor, which the op does not pad",
        "pads-type": "pads_begin or pads_end is not of an integer type",
        "pads-rank": "pads_begin or pads_end is not a 1-D tensor",
        "pads-length": "pads_begin or pads_end does not have one value per axis of data",
        "pad-limit": "a pad is longer than reflect (n-1) or symmetric (n) mode allows, or edge mode pads an empty axis",
        "pad-value-shape": "pad_value is not a scalar",
    }

    Attrs = PadAttrs
    attrs: PadAttrs
    inputs = ("data", "pads_begin", "pads_end", "pad_value")
    optional_inputs = 1
    crop = True  # whether negative pads crop (Pad-12) or are refused (Pad-1)

    def input_range(self, position: int, infos) -> Bounds | None:
        if position not in (1, 2):
            return None
        if self.attrs.pad_mode == "constant":
            return (0, 2)
        shape = infos[0].shape
        sizes = [extent(infos[0], a) for a in range(shape.rank)] if shape.rank_is_static else [None]
        if None in sizes:
            return None
        # reflect pads n-1 at most, symmetric n, edge anything but an empty axis
        smallest = min(s for s in [2, *sizes] if s is not None)
        limit = {"reflect": smallest - 1, "symmetric": smallest}.get(self.attrs.pad_mode, 2 if smallest else -1)
        return (0, limit) if limit >= 0 else None

    def infer(self, data: TensorInfo, pads_begin: TensorInfo, pads_end: TensorInfo,
              pad_value: TensorInfo | None = None) -> TensorInfo:
        check(data.etype is not ElementType.string, "pad-type", "Pad does not pad string tensors",
              port=self.port("data"))
        rank = data.shape.rank if data.shape.rank_is_static else None
        for name, info in (("pads_begin", pads_begin), ("pads_end", pads_end)):
            check_integral(info, name, self.port(name), "pads-type")
            if info.shape.rank_is_static:
                check(info.shape.rank == 1, "pads-rank", f"{name} must be a 1-D tensor, found {info.shape}",
                      port=self.port(name))
                check(rank is None or info.shape[0].contains(rank), "pads-length",
                      f"{name} must have one value per axis of data (rank {rank}), found shape {info.shape}",
                      port=self.port(name))
        if pad_value is not None and self.attrs.pad_mode == "constant":
            if pad_value.shape.rank_is_static:
                check(pad_value.shape.rank == 0, "pad-value-shape", f"pad_value must be a scalar, found {pad_value.shape}",
                      port=self.port("pad_value"))
            same_element_type(data, pad_value, "pad_value must have data's element type", "same-element-type",
                              self.port("pad_value"))
        if rank is None:
            return TensorInfo(data.etype, PartialShape.dynamic_rank())
        begin, end = int_values(pads_begin.value), int_values(pads_end.value)
        if begin is None or end is None:
            return TensorInfo(data.etype, PartialShape.of([-1] * rank))
        dims = [d.min if d.is_static else None for d in data.shape.ranked_dims]
        out = planned(padded_dims, dims, begin, end, self.attrs.pad_mode, self.crop, port=self.port("pads_begin"),
                      at_runtime=False)
        return TensorInfo(data.etype, PartialShape.of([Dimension.dynamic() if d is None else d for d in out]))

    def compute(self, data: np.ndarray, pads_begin: np.ndarray, pads_end: np.ndarray,
                pad_value: np.ndarray | None = None) -> np.ndarray:
        begin, end = int_values(pads_begin), int_values(pads_end)
        out = planned(padded_dims, list(data.shape), begin, end, self.attrs.pad_mode, self.crop,
                      port=self.port("pads_begin"), at_runtime=True)
        check_allocation(out, data.dtype.itemsize)
        value = np.asarray(pad_value).reshape(-1)[0] if pad_value is not None and pad_value.size else 0
        return pad_array(data, begin, end, self.attrs.pad_mode, value, tuple(out))


@register("Pad", 1)
class Pad(PadBase):
    labels = {"pad-negative": "Pad-1 was given a negative pad (only Pad-12 crops)"}
    crop = False


@register("Pad", 12)
class Pad12(PadBase):
    pass
