"""Interpolate-1, -4 and -11: resize a tensor along some of its axes.

The input is first padded with zeros (`pads_begin`, `pads_end`, one per axis: a shorter list is
filled with zeros, a longer one cut to the rank). Each resized axis then maps every output
position to an input coordinate (`coordinate_transformation_mode`) and reads the input there by
`mode`: nearest (rounded by `nearest_mode`), linear (a triangle filter, widened by `antialias`
when downsampling), linear_onnx (two taps, clamped to the edge), cubic (Keys' kernel with
`cube_coeff`, edge taps clamped), and in -11 bilinear_pillow and bicubic_pillow (Pillow's
resampling: the filter widened by the downscaling factor, the width axis first, each pass
rounded to the element type). Output sizes come from `sizes`, or as floor(scale * padded size)
from `scales`; axes not named keep their padded size. See `resampling/core.py` for the tables.

Element types: Interpolate-1 takes floats (its spec); -4 and -11 the types OpenVINO validates:
f32, f16, bf16, f64, i8, u8, i32, i64. Floats compute in f32 (f64 in f64) and round once.
Integer results are rounded as OpenVINO's reference does: linear to nearest (halves away from
zero), linear_onnx and cubic truncated, the Pillow modes to nearest after each pass; values past
the type's range saturate (the reference's cast is undefined there).

bicubic_pillow takes its cubic coefficient from `cube_coeff`, as the spec and the core reference
do (the tables are the reference's, bit for bit: support scaled by the downscaling factor, taps
rounded as C casts them, weights normalised, the input never read past its edge). Pillow and torch
use -0.5, which the spec says to set; the default is -0.75. OpenVINO's PyTorch frontend leaves the
default on torch's antialiased bicubic, and the CPU plugin, given constant sizes, computes -0.5
whatever the attribute says: on such a model it gives torch's values and irscatter the spec's.

Where the spec and OpenVINO's reference disagree:
  * An integer result whose exact value is a whole number (or, for linear, a half) is that
    number, cut or rounded as such. The weights are f32, so a sum lands a little off it;
    OpenVINO's reference sums in f32 and cuts whatever it gets (cubic from -57 and -3 at 1/3:
    exactly -40, -39.99999 in f32, -39 there), and here a sum within the weights' rounding
    error of such a value is taken to be it.
  * Output size from scales: the spec's floor(scale * size). OpenVINO adds 1e-6 to the scale
    first (in f32), so a scale just below a ratio (0.29999998 * 10) gives 3 there and 2 here.
  * An axis whose scale is 1, or whose size does not change, maps each position onto itself in
    every coordinate mode, as the reference does. The spec's formulas, read literally, would move
    tf_half_pixel_for_nn by half a pixel even on the axes it says are not modified, which
    contradicts its own "other dimensions do not change"; the reference's reading is kept.
  * linear_onnx: the spec supports axes {0,1} / {0,1,2} of 2-D / 3-D tensors and {2,3} /
    {2,3,4} of 4-D / 5-D ones; the reference also takes every axis of a rank >= 4 tensor, and
    so does irscatter (its kernel is separable and works on any axes).
  * Interpolate-1's page defines no arithmetic at all. It runs as OpenVINO converts it to
    Interpolate-4 (ConvertInterpolate1ToInterpolate4): nearest with nearest_mode simple, linear
    as linear_onnx below rank 5 and as linear at rank 5 (refused above), cubic with cube_coeff
    -0.75; align_corners, else asymmetric, else half_pixel for the linear modes when no pad is
    set and the input is not 4-D resized on {2, 3}. Its output keeps the unpadded size on the
    axes not named (the reference reads the padded input from position 0 there). `area` has no
    definition anywhere and is refused. Its axes are used in the order given (the spec: "the
    order matters"; OpenVINO keeps them as a sorted set).
"""

from __future__ import annotations

import math
from typing import Annotated, Literal

import numpy as np

from irscatter.errors import ExecutionError
from irscatter.ir.element_types import ElementType
from irscatter.ir.shapes import Dimension, PartialShape
from irscatter.limits import check_allocation
from irscatter.ops.base import IntList, IRBool, Lower, Op, OpAttrs, TensorInfo, check, fail
from irscatter.ops.common.axes import int_values
from irscatter.ops.common.numeric import compute_dtype, convert_array
from irscatter.ops.common.padding import pad_constant
from irscatter.ops.common.types import arithmetic_float, check_float, check_integral
from irscatter.ops.registry import register
from irscatter.ops.resampling import core

CoordinateMode = Annotated[Literal[core.COORDINATE_MODES], Lower]  # type: ignore[valid-type]
NearestMode = Annotated[Literal[core.NEAREST_MODES], Lower]  # type: ignore[valid-type]
ShapeMode = Annotated[Literal["sizes", "scales"], Lower]

DATA_TYPES = (ElementType.f32, ElementType.f16, ElementType.bf16, ElementType.f64, ElementType.i8,
              ElementType.u8, ElementType.i32, ElementType.i64)


class Settings:
    """One resize, whatever the version: the v4 attributes it runs with."""

    def __init__(self, mode: str, ctm: str, nearest_mode: str, antialias: bool, cube_coeff: float) -> None:
        self.mode, self.ctm, self.nearest_mode = mode, ctm, nearest_mode
        self.antialias, self.cube_coeff = antialias, cube_coeff


def fit_pads(pads: tuple[int, ...], rank: int) -> list[int]:
    return (list(pads) + [0] * rank)[:rank]


class _Failure(Exception):
    def __init__(self, label: str, message: str, port: str) -> None:
        super().__init__(message)
        self.label, self.port = label, port


def _refuse(label: str, message: str, port: str) -> None:
    raise _Failure(label, message, port)


def resize(padded: np.ndarray, etype: ElementType, axes: list[int], out_sizes: list[int],
           scales: list[float], s: Settings) -> np.ndarray:
    """The kernel: `padded` is the zero-padded input (values of `etype`)."""
    integral = etype.is_integral
    work = np.dtype(np.float64) if integral else compute_dtype(etype)
    out_shape = list(padded.shape)
    for a, n in zip(axes, out_sizes):
        out_shape[a] = n
    check_allocation(out_shape, etype.dtype.itemsize)
    if math.prod(out_shape) == 0:
        return np.zeros(out_shape, etype.dtype)
    if s.mode in core.PILLOW_FILTERS:
        return _pillow(padded, etype, axes, out_sizes, s)
    x = padded
    if s.mode == "nearest":
        for a, n, sc in zip(axes, out_sizes, scales):
            coords = core.source_coordinates(s.ctm, n, x.shape[a], sc)
            x = np.take(x, core.nearest_indices(coords, s.nearest_mode, sc, x.shape[a]), axis=a)
        return x if x is not padded else x.copy()
    x = x.astype(work, copy=False)
    # An integer result is rounded or cut, so its error matters where the exact sum is a whole
    # number or a half: the weights are rounded to f32 (as the reference works them out), and
    # 187 * 1/3 + 112 * 2/3 = 137 came out 136.9999997 and was cut to 136. The bound on that
    # error, the sum of |weight * value|, goes through the same taps.
    bound = np.abs(x) if integral else None
    downsample = any(np.float32(sc) < 1 for sc in scales)
    for a, n, sc in zip(axes, out_sizes, scales):
        in_len = x.shape[a]
        coords = core.source_coordinates(s.ctm, n, in_len, sc)
        if s.mode == "linear":
            af = np.float32(sc) if (s.antialias and downsample) else np.float32(1)
            r = 2 if np.float32(sc) > 1 else int(math.ceil(np.float32(2) / af))
            idx, w = core.linear_table(coords, in_len, float(af), r)
        elif s.mode == "cubic":
            idx, w = core.cubic_table(coords, in_len, s.cube_coeff)
        else:
            idx, w = core.linear_onnx_table(coords, in_len)
        x = core.apply_table(x, a, idx, w, work)
        if bound is not None:
            bound = core.apply_table(bound, a, idx, np.abs(w), work)
    if not integral:
        return convert_array(np.require(x, requirements="C"), ElementType.from_dtype(x.dtype), etype)
    assert bound is not None  # an integral type has its bound
    with np.errstate(invalid="ignore"):
        x = _settle_weight_rounding(x, bound)
        x = core.round_half_away(x) if s.mode == "linear" else np.trunc(x)
    return _saturate(x, etype)


def _settle_weight_rounding(x: np.ndarray, bound: np.ndarray) -> np.ndarray:
    """`x` with each value that lies within its weights' rounding error of a whole number or a
    half (the places where rounding or cutting jumps) moved onto it. f32 weights are each off
    by at most half an f32 ulp; four ulps of the bound leave room for the products and sums."""
    halves = np.rint(x * 2) / 2
    return np.where(np.abs(x - halves) <= bound * (4 * float(np.finfo(np.float32).eps)), halves, x)


def _saturate(x: np.ndarray, etype: ElementType) -> np.ndarray:
    info = np.iinfo(etype.dtype)
    return np.clip(np.nan_to_num(x, nan=0.0), info.min, info.max).astype(etype.dtype)


def _pillow(x: np.ndarray, etype: ElementType, axes: list[int], out_sizes: list[int], s: Settings) -> np.ndarray:
    """Width axis (the second named) first, then height; each pass accumulates in f64 and
    stores in the element type (f32 for the narrow floats), integers rounded half away from 0."""
    store = np.dtype(np.float64) if etype is ElementType.f64 else np.dtype(np.float32)
    for a, n in ((axes[1], out_sizes[1]), (axes[0], out_sizes[0])):
        if x.shape[a] == n:
            continue
        idx, w = core.pillow_table(s.mode, x.shape[a], n, s.cube_coeff)
        y = core.apply_table(x, a, idx, w, np.dtype(np.float64))
        if etype.is_integral:
            x = _saturate(core.round_half_away(y), etype)
        else:
            with np.errstate(over="ignore"):
                x = y.astype(store)
    if etype.is_integral:
        return np.array(x, dtype=etype.dtype)
    return convert_array(np.array(x), ElementType.from_dtype(x.dtype), etype)


# --- the shared shape rules ------------------------------------------------------------------------


class InterpolateAttrs(OpAttrs):
    """The attributes every version has, which InterpolateBase reads."""

    antialias: IRBool = False
    pads_begin: IntList = (0,)
    pads_end: IntList = (0,)


class InterpolateBase(Op):
    labels = {
        "interpolate-type": "the data is of an element type Interpolate does not compute",
        "sizes-type": "the sizes (target_spatial_shape, or scales_or_sizes in sizes mode) are not integers",
        "scales-type": "the scales (or scales_or_sizes in scales mode) are not floating-point",
        "sizes-rank": "the sizes or scales input the output shape is taken from is not 1-D",
        "interpolate-count": "the sizes or scales do not have one value per interpolated axis",
        "interpolate-pads": "a pads_begin or pads_end value is negative",
        "interpolate-output-size": "a size is negative, or a scale gives a negative or non-finite size",
        "interpolate-empty": "an axis of size 0 would be resized to a non-zero size",
        "interpolate-mode": "the mode cannot run here: Interpolate-1's area, its linear above rank 5, "
                            "linear_onnx on other axes than the spec's, the Pillow modes on other than 2 axes",
    }

    attrs: InterpolateAttrs
    target_port = "sizes"  # the input the output sizes come from

    # -- what each version supplies
    def settings(self, rank: int, axes: list[int]) -> Settings:
        raise NotImplementedError

    def uses_scales(self) -> bool:
        raise NotImplementedError

    def pads(self, rank: int) -> tuple[list[int], list[int]]:
        return fit_pads(self.attrs.pads_begin, rank), fit_pads(self.attrs.pads_end, rank)

    # -- checks
    def check_data_type(self, etype: ElementType) -> None:
        check(etype is ElementType.dynamic or etype in DATA_TYPES, "interpolate-type",
              f"Interpolate does not compute {etype} data (it takes f32, f16, bf16, f64, i8, u8, i32, i64)",
              port=self.port(self.inputs[0]))

    def check_target(self, info: TensorInfo, port: str, scales: bool, rank_too: bool = True) -> None:
        if scales:
            check(info.etype is ElementType.dynamic or arithmetic_float(info.etype), "scales-type",
                  f"scales must be of a floating-point type, found {info.etype}", port=port)
        else:
            check_integral(info, "sizes", port, "sizes-type")
        if rank_too and info.shape.rank_is_static:
            check(info.shape.rank == 1, "sizes-rank", f"must be a 1-D tensor, found shape {info.shape}", port=port)

    def check_axes(self, axes: TensorInfo) -> None:
        check_integral(axes, "axes", self.port("axes"), "axes-type")
        if axes.shape.rank_is_static:
            check(axes.shape.rank == 1, "axes-vector", f"axes must be a 1-D tensor, found shape {axes.shape}",
                  port=self.port("axes"))

    def axes_list(self, values: list[int] | None, rank: int, refuse) -> list[int]:
        port = self.port("axes")
        axes = list(range(rank)) if values is None else values
        for a in axes:
            if not 0 <= a < rank:
                refuse("axis-range", f"axis {a} is out of the range [0, {rank - 1}] (axes are non-negative)", port)
        if len(set(axes)) != len(axes):
            refuse("axes-unique", f"axes {axes} repeat an axis", port)
        return axes

    def check_mode(self, s: Settings, rank: int, axes: list[int], refuse) -> None:
        port = self.port("mode")
        if s.mode == "linear_onnx":
            allowed = [{0, 1}] if rank == 2 else [{0, 1, 2}] if rank == 3 else \
                [set(range(2, rank)), set(range(rank))] if rank >= 4 else []
            if set(axes) not in allowed or len(axes) == 0:
                refuse("interpolate-mode", f"linear_onnx does not resize axes {axes} of a rank {rank} tensor "
                     "(it takes axes {0,1} of 2-D, {0,1,2} of 3-D, and {2,...} or all axes from 4-D)", port)
        if s.mode in core.PILLOW_FILTERS and len(axes) != 2:
            refuse("interpolate-mode", f"{s.mode} resizes exactly two axes (height, width), found {axes}", port)

    def plan(self, in_dims: list[Dimension], target: list[float] | None, axes: list[int] | None,
             refuse) -> tuple[list[int], list[Dimension], list[float] | None, Settings]:
        """Axes, output dims and per-axis scales (None while the target is unknown)."""
        rank = len(in_dims)
        axes = self.axes_list(axes, rank, refuse)
        s = self.settings(rank, axes)
        self.check_mode(s, rank, axes, refuse)
        begin, end = self.pads(rank)
        if any(p < 0 for p in begin + end):
            refuse("interpolate-pads", f"pads must be non-negative, found {begin} and {end}", self.port("pads_begin"))
        padded = [Dimension.static(d.min + b + e) if d.is_static else Dimension.dynamic()
                  for d, b, e in zip(in_dims, begin, end)]
        out = self.keep_dims(in_dims, padded, axes)
        if target is None:
            for a in axes:
                out[a] = Dimension.dynamic()
            return axes, out, None, s
        port = self.port(self.target_port)
        if len(target) != len(axes):
            refuse("interpolate-count", f"{len(target)} values for {len(axes)} axes {axes}", port)
        scales: list[float] = []
        for a, v in zip(axes, target):
            size = padded[a]
            if self.uses_scales():
                if not math.isfinite(v) or v < 0:
                    refuse("interpolate-output-size", f"scale {v} for axis {a} is negative or not finite", port)
                n = math.floor(v * size.min) if size.is_static else None
                scales.append(float(np.float32(v)))
            else:
                if v < 0:
                    refuse("interpolate-output-size", f"size {int(v)} for axis {a} is negative", port)
                n = int(v)
                scales.append(float(np.float32(n) / np.float32(size.min)) if size.is_static and size.min else 0.0)
            if n is not None and size.is_static and size.min == 0 and n > 0:
                refuse("interpolate-empty", f"axis {a} has size 0 and cannot be resized to {n}", port)
            out[a] = Dimension.static(n) if n is not None else Dimension.dynamic()
        return axes, out, scales, s

    def keep_dims(self, in_dims: list[Dimension], padded: list[Dimension], axes: list[int]) -> list[Dimension]:
        return list(padded)

    def infer_shape(self, data: TensorInfo, target: TensorInfo, axes: TensorInfo | None) -> TensorInfo:
        if not data.shape.rank_is_static:
            return TensorInfo(data.etype, PartialShape.of(None))
        dims = list(data.shape)
        if axes is not None and axes.value is None:
            return TensorInfo(data.etype, PartialShape.of([-1] * len(dims)))
        values = None if target.value is None else [float(v) for v in np.asarray(target.value).reshape(-1)]
        _, out, _, _ = self.plan(dims, values, None if axes is None else int_values(axes.value),
                                 lambda label, message, port: fail(label, message, port=port))
        return TensorInfo(data.etype, PartialShape.of(out))

    def run(self, data: np.ndarray, target: np.ndarray, axes: np.ndarray | None) -> np.ndarray:
        etype = ElementType.from_dtype(data.dtype)
        values = [float(v) for v in np.asarray(target).reshape(-1)]
        try:
            axes_l, out, scales, s = self.plan([Dimension.static(d) for d in data.shape], values,
                                               None if axes is None else int_values(axes), _refuse)
        except _Failure as e:
            raise ExecutionError(str(e), label=e.label, port=e.port) from None
        assert scales is not None  # the target's values are known at run time
        begin, end = self.pads(data.ndim)
        padded = pad_constant(data, list(zip(begin, end)))
        padded = self.trim(padded, data.shape, axes_l)
        return resize(padded, etype, axes_l, [int(out[a]) for a in axes_l], scales, s)

    def trim(self, padded: np.ndarray, shape: tuple[int, ...], axes: list[int]) -> np.ndarray:
        return padded


class Interpolate11Attrs(InterpolateAttrs):
    mode: Annotated[Literal["nearest", "linear", "linear_onnx", "cubic", "bilinear_pillow", "bicubic_pillow"],
                    Lower]
    shape_calculation_mode: ShapeMode
    coordinate_transformation_mode: CoordinateMode = "half_pixel"
    nearest_mode: NearestMode = "round_prefer_floor"
    cube_coeff: float = -0.75


class Interpolate4Attrs(Interpolate11Attrs):
    """Interpolate-11's attributes but for the Pillow modes, which it added."""

    mode: Annotated[Literal["nearest", "linear", "linear_onnx", "cubic"], Lower]


class _V4Settings:
    """What Interpolate-4 and -11 read of their attributes."""

    attrs: Interpolate11Attrs

    def uses_scales(self) -> bool:
        return self.attrs.shape_calculation_mode == "scales"

    def settings(self, rank: int, axes: list[int]) -> Settings:
        a = self.attrs
        return Settings(a.mode, a.coordinate_transformation_mode, a.nearest_mode, a.antialias, a.cube_coeff)


@register("Interpolate", 4)
class Interpolate4(_V4Settings, InterpolateBase):
    Attrs = Interpolate4Attrs
    attrs: Interpolate4Attrs
    inputs = ("data", "sizes", "scales", "axes")
    optional_inputs = 1

    @property
    def target_port(self) -> str:  # type: ignore[override]
        return "scales" if self.uses_scales() else "sizes"

    def infer(self, data: TensorInfo, sizes: TensorInfo, scales: TensorInfo, axes: TensorInfo | None = None):
        self.check_data_type(data.etype)
        use = self.uses_scales()
        self.check_target(sizes, self.port("sizes"), False, rank_too=not use)
        self.check_target(scales, self.port("scales"), True, rank_too=use)
        if axes is not None:
            self.check_axes(axes)
        return self.infer_shape(data, scales if use else sizes, axes)

    def compute(self, data: np.ndarray, sizes: np.ndarray, scales: np.ndarray, axes: np.ndarray | None = None):
        return self.run(data, scales if self.uses_scales() else sizes, axes)


@register("Interpolate", 11)
class Interpolate11(_V4Settings, InterpolateBase):
    Attrs = Interpolate11Attrs
    attrs: Interpolate11Attrs
    inputs = ("image", "scales_or_sizes", "axes")
    optional_inputs = 1
    target_port = "scales_or_sizes"

    def infer(self, image: TensorInfo, scales_or_sizes: TensorInfo, axes: TensorInfo | None = None):
        self.check_data_type(image.etype)
        self.check_target(scales_or_sizes, self.port("scales_or_sizes"), self.uses_scales())
        if axes is not None:
            self.check_axes(axes)
        return self.infer_shape(image, scales_or_sizes, axes)

    def compute(self, image: np.ndarray, scales_or_sizes: np.ndarray, axes: np.ndarray | None = None):
        return self.run(image, scales_or_sizes, axes)


class Interpolate1Attrs(InterpolateAttrs):
    axes: IntList
    mode: Annotated[Literal["nearest", "linear", "cubic", "area"], Lower]
    align_corners: IRBool = True


@register("Interpolate", 1)
class Interpolate1(InterpolateBase):
    Attrs = Interpolate1Attrs
    attrs: Interpolate1Attrs
    inputs = ("data", "target_spatial_shape")
    target_port = "target_spatial_shape"

    def uses_scales(self) -> bool:
        return False

    def settings(self, rank: int, axes: list[int]) -> Settings:
        a = self.attrs
        mode: str = a.mode
        if mode == "linear":
            mode = "linear_onnx" if rank < 5 else "linear" if rank == 5 else "linear-rank"
        ctm = "asymmetric"
        if a.align_corners:
            ctm = "align_corners"
        elif (mode in ("linear", "linear_onnx") and not any(a.pads_begin) and not any(a.pads_end)
              and not (rank == 4 and sorted(axes) == [2, 3])):
            ctm = "half_pixel"
        return Settings(mode, ctm, "simple", a.antialias, -0.75)

    def check_mode(self, s: Settings, rank: int, axes: list[int], refuse) -> None:
        port = self.port("mode")
        if s.mode == "area":
            refuse("interpolate-mode", "Interpolate-1's area mode has no definition (OpenVINO refuses it too)", port)
        if s.mode == "linear-rank":
            refuse("interpolate-mode", f"Interpolate-1's linear mode takes tensors of rank 5 at most, found {rank}",
                   port)

    def keep_dims(self, in_dims: list[Dimension], padded: list[Dimension], axes: list[int]) -> list[Dimension]:
        return list(in_dims)

    def trim(self, padded: np.ndarray, shape: tuple[int, ...], axes: list[int]) -> np.ndarray:
        keep = tuple(slice(None) if i in axes else slice(0, n) for i, n in enumerate(shape))
        return padded[keep]

    def infer(self, data: TensorInfo, target_spatial_shape: TensorInfo) -> TensorInfo:
        check_float(self, data.etype)
        self.check_target(target_spatial_shape, self.port("target_spatial_shape"), False)
        axes = TensorInfo(ElementType.i64, PartialShape.of([len(self.attrs.axes)]),
                          np.array(self.attrs.axes, np.int64))
        return self.infer_shape(data, target_spatial_shape, axes)

    def compute(self, data: np.ndarray, target_spatial_shape: np.ndarray) -> np.ndarray:
        return self.run(data, target_spatial_shape, np.array(self.attrs.axes, np.int64))
