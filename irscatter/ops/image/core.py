"""What the colour conversions share: the YUV <-> RGB arithmetic, the layout of NV12 and I420
frames, the NHWC shape rules and the element-type rule.

Arithmetic. OpenVINO's core reference computes every conversion in f32 with f32 constants
(1.164f, 0.257f, ...), term by term from left to right, and irscatter does the same for u8, f32
and the narrow float types (one rounding to the output type at the end; RGBtoNV12's U and V
are rounded twice, see below). f64 is computed in f64
with the spec's decimal constants: the reference narrows f64 to f32 first, which the spec does
not ask for; the two differ by about one f32 ulp.

Clipping and rounding. Results are clipped to [0, 255] (NaN stays NaN, as std::min/std::max
leave it). For u8 the value is rounded to the nearest integer, halves away from zero
(std::round), before clipping.

OpenVINO's CPU plugin departs from its reference in two places, and irscatter follows the
reference: it rounds u8 halves to even (166.5 becomes 166, the reference's 167), and its clip
turns NaN into 0.

Chroma subsampling (RGBtoNV12/BGRtoNV12). The spec gives the per-pixel formulas only; the
reference computes U and V for each of the four pixels of a 2x2 block, clips (and for u8 rounds)
each to the output type, and stores their mean, rounded again for u8 (halves away from zero).
irscatter follows it, summing the four in row-major order as it does.
"""

from __future__ import annotations

import numpy as np

from irscatter.ir.element_types import ElementType
from irscatter.ir.shapes import Dimension, PartialShape
from irscatter.ops.base import Op, TensorInfo, check, required
from irscatter.ops.common.numeric import compute_dtype, from_compute
from irscatter.ops.common.types import arithmetic_float, same_element_type

N, H, W, C = 0, 1, 2, 3

# (Y, U, V) -> (R, G, B): R = 1.164 (Y-16) + 1.596 (V-128), G = 1.164 (Y-16) - 0.391 (U-128)
# - 0.813 (V-128), B = 1.164 (Y-16) + 2.018 (U-128)
TO_RGB = (1.164, 1.596, 0.391, 0.813, 2.018)
# (R, G, B) -> Y, U, V: three weights and an offset each
TO_YUV = ((0.257, 0.504, 0.098, 16.0), (-0.148, -0.291, 0.439, 128.0), (0.439, -0.368, -0.071, 128.0))


# --- element types --------------------------------------------------------------------------


def check_image_type(op: Op, etype: ElementType, port: str) -> None:
    check(etype is ElementType.dynamic or etype is ElementType.u8 or arithmetic_float(etype), "image-type",
          f"{op.type_name} takes u8 or a floating-point type, found {etype}", port=op.port(port))


def merge_types(op: Op, infos: list[TensorInfo], names: tuple[str, ...]) -> ElementType:
    etype = infos[0].etype
    first = TensorInfo(etype, infos[0].shape)
    for info, name in zip(infos[1:], names[1:]):
        etype = same_element_type(first, info, f"the planes of {op.type_name} must share one element type",
                                  "same-element-type", op.port(name))
        first = TensorInfo(etype, first.shape)
    check_image_type(op, etype, names[0])
    return etype


def _arith_dtype(etype: ElementType) -> np.dtype:
    return np.dtype(np.float64) if etype is ElementType.f64 else np.dtype(np.float32)


def _finish(x: np.ndarray, etype: ElementType) -> np.ndarray:
    """Clip to [0, 255] (u8: round halves away from zero first) and store as `etype`."""
    if etype is ElementType.u8:
        x = _round_half_away(x)
    with np.errstate(invalid="ignore"):
        x = np.clip(x, 0, 255)
    if etype is ElementType.u8:
        return x.astype(np.uint8)
    if etype is ElementType.f64:
        return x
    return from_compute(x.astype(compute_dtype(etype), copy=False), etype)


def _round_half_away(x: np.ndarray) -> np.ndarray:
    whole = np.trunc(x)
    return whole + np.copysign((np.abs(x - whole) >= 0.5).astype(x.dtype), x)


# --- shapes ---------------------------------------------------------------------------------


def _merge(a: Dimension, b: Dimension) -> Dimension | None:
    lo = max(a.min, b.min)
    hi = b.max if a.max is None else a.max if b.max is None else min(a.max, b.max)
    return None if hi is not None and lo > hi else Dimension(min=lo, max=hi)


def _scale(d: Dimension, num: int, den: int) -> Dimension | None:
    """d * num / den, keeping only the values that divide exactly (None when there are none)."""
    lo = -(-d.min * num // den)
    hi = None if d.max is None else d.max * num // den
    if d.is_static and (d.min * num) % den:
        return None
    return None if hi is not None and lo > hi else Dimension(min=lo, max=hi)


def _doubled(d: Dimension) -> Dimension:
    return Dimension(min=d.min * 2, max=None if d.max is None else d.max * 2)


def nhwc(op: Op, info: TensorInfo, name: str, channels: int) -> list[Dimension]:
    """The four dims of an NHWC input whose C must be `channels` (dynamic dims for a dynamic rank)."""
    if not info.shape.rank_is_static:
        return [Dimension.dynamic()] * 3 + [Dimension.static(channels)]
    check(info.shape.rank == 4, "image-rank",
          f"{name} must have 4 dimensions (N, H, W, C), it has shape {info.shape}", port=op.port(name))
    dims = list(info.shape.ranked_dims)
    check(dims[C].contains(channels), "image-channels",
          f"{name} must have {channels} channel{'s' if channels > 1 else ''}, it has shape {info.shape}",
          port=op.port(name))
    return dims


def check_even(op: Op, dims: list[Dimension], name: str) -> None:
    for axis, what, label in ((H, "height", "image-height"), (W, "width", "image-width")):
        d = dims[axis]
        check(not d.is_static or d.min % 2 == 0, label, f"the image {what} must be even, it is {d.min}",
              port=op.port(name))


def yuv_output_shape(op: Op, planes: list[TensorInfo], names: tuple[str, ...], uv_channels: int) -> PartialShape:
    """The (N, H, W, 3) image of a single NV12/I420 plane or of its Y and chroma planes."""
    y = nhwc(op, planes[0], names[0], 1)
    if len(planes) == 1:
        height = required(_scale(y[H], 2, 3), "image-height",
                          f"a single-plane image's height must be 3/2 of the image height, {y[H]} is not divisible "
                          f"by 3", port=op.port(names[0]))
        out = [y[N], height, y[W]]
    else:
        out = y[:3]
        for info, name in zip(planes[1:], names[1:]):
            uv = nhwc(op, info, name, uv_channels)
            for axis, what in ((N, "batch"), (H, "height"), (W, "width")):
                want = uv[axis] if axis == N else _doubled(uv[axis])
                out[axis] = required(_merge(out[axis], want), "image-planes",
                                     f"the {what} of {name} ({uv[axis]}) does not fit the Y plane's ({y[axis]}): the "
                                     f"chroma planes are half the image's height and width", port=op.port(name))
    dims = out + [Dimension.static(3)]
    check_even(op, dims, names[0])
    return PartialShape.of(dims)


# --- NV12 / I420 to RGB ---------------------------------------------------------------------


def nv12_planes(y: np.ndarray, uv: np.ndarray | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Y (N, H, W) and U, V (N, H/2, W/2) of an NV12 frame, one plane or two."""
    if uv is None:
        n, height, width = y.shape[0], y.shape[1] * 2 // 3, y.shape[2]
        uv = y[:, height:, :, 0].reshape(n, height // 2, width // 2, 2)
        y = y[:, :height]
    return y[..., 0], uv[..., 0], uv[..., 1]


def i420_planes(y: np.ndarray, u: np.ndarray | None,
                v: np.ndarray | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Y (N, H, W) and U, V (N, H/2, W/2) of an I420 frame, one plane or three."""
    if u is None or v is None:  # one plane: inference refuses two
        n, height, width = y.shape[0], y.shape[1] * 2 // 3, y.shape[2]
        chroma = y[:, height:, :, 0].reshape(n, 2, height // 2, width // 2)
        return y[:, :height, :, 0], chroma[:, 0], chroma[:, 1]
    return y[..., 0], u[..., 0], v[..., 0]


def yuv_to_rgb(y: np.ndarray, u: np.ndarray, v: np.ndarray, etype: ElementType, bgr: bool) -> np.ndarray:
    """(N, H, W, 3) RGB (or BGR) from Y (N, H, W) and U, V (N, H/2, W/2)."""
    dtype = _arith_dtype(etype)
    k_y, k_rv, k_gu, k_gv, k_bu = (dtype.type(k) for k in TO_RGB)
    c = y.astype(dtype) - dtype.type(16)
    d = np.repeat(np.repeat(u.astype(dtype) - dtype.type(128), 2, axis=1), 2, axis=2)
    e = np.repeat(np.repeat(v.astype(dtype) - dtype.type(128), 2, axis=1), 2, axis=2)
    with np.errstate(invalid="ignore", over="ignore"):
        luma = k_y * c
        r = luma + k_rv * e
        g = luma - k_gu * d - k_gv * e
        b = luma + k_bu * d
    planes = (b, g, r) if bgr else (r, g, b)
    return _finish(np.stack(planes, axis=-1), etype)


# --- RGB to NV12 ----------------------------------------------------------------------------


def rgb_to_nv12(image: np.ndarray, etype: ElementType, bgr: bool, single_plane: bool):
    """NV12 of an (N, H, W, 3) RGB (or BGR) image: one (N, 3H/2, W, 1) plane, or Y (N, H, W, 1)
    and UV (N, H/2, W/2, 2)."""
    dtype = _arith_dtype(etype)
    x = image.astype(dtype)
    r, g, b = (x[..., 2], x[..., 1], x[..., 0]) if bgr else (x[..., 0], x[..., 1], x[..., 2])
    with np.errstate(invalid="ignore", over="ignore"):
        y, u, v = (_finish(dtype.type(kr) * r + dtype.type(kg) * g + dtype.type(kb) * b + dtype.type(k0), etype)
                   for kr, kg, kb, k0 in TO_YUV)
        chroma = []
        for plane in (u, v):
            p = plane.astype(dtype)
            total = p[:, 0::2, 0::2] + p[:, 0::2, 1::2] + p[:, 1::2, 0::2] + p[:, 1::2, 1::2]
            mean = total / dtype.type(4)
            if etype is ElementType.u8:
                chroma.append(_round_half_away(mean).astype(np.uint8))
            elif etype is ElementType.f64:
                chroma.append(mean)
            else:
                chroma.append(from_compute(mean.astype(compute_dtype(etype), copy=False), etype))
    uv = np.stack(chroma, axis=-1)
    n, height, width = y.shape
    if not single_plane:
        return y[..., None], uv
    out = np.empty((n, height * 3 // 2, width, 1), y.dtype)
    out[:, :height, :, 0] = y
    out[:, height:, :, 0] = uv.reshape(n, height // 2, width)
    return out
