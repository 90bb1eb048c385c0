"""DeformableConvolution-1 and DeformableConvolution-8: a 2-D convolution whose taps are moved
by learned fractional offsets and read by bilinear interpolation (-8 adds an optional mask that
scales each tap, and the `bilinear_interpolation_pad` attribute).

    y[n, o, oy, ox] = sum over c, (ky, kx) of  w[o, c, ky, kx] * x_c(py, px) * m

where py = oy * stride_y - pad_begin_y + ky * dilation_y + offsets[n, 2 * (dg * K + k), oy, ox]
and px likewise with the offset channel after it (K = KY * KX taps, k = ky * KX + kx, and the
offsets of one deformable group dg are its K (y, x) pairs, y first), m is mask[n, dg * K + k,
oy, ox] (1 without a mask), and the input channel c belongs to deformable group
c // (C / deformable_group). With `group` > 1 the channels and the filters split as in
GroupConvolution: filters are [O, C / group, KY, KX].

Every input has rank 4, as the specs and OpenVINO's shape inference require.

Sampling x_c(py, px), for each coordinate p with the map size S (H or W):
* `bilinear_interpolation_pad` true: a location with -1 < p < S on both axes interpolates the
  feature map padded with zeros (the four neighbours floor(p) and floor(p) + 1, a neighbour
  outside the map reads 0); any other location reads 0.
* `bilinear_interpolation_pad` false (DeformableConvolution-8): a location within one pixel
  outside the map (-1 < p < 0 or S - 1 < p < S) is moved to the nearest row or column of the
  map, as the spec says; inside, plain bilinear interpolation; further out, 0.
  OpenVINO's core reference and CPU plugin read 0 for -1 < p < 0 instead of moving it to 0
  (they keep only 0 <= p < S); irscatter follows the spec there. The two agree everywhere else.
* DeformableConvolution-1: its spec does not say what a location outside the map reads, so
  irscatter follows OpenVINO's core reference (the same as -8 without the pad): 0 <= p < S on
  both axes interpolates, moving S - 1 < p < S to the last row or column; any other location
  (-1 < p < 0 included) reads 0.

A neighbour whose bilinear weight is 0 is not read, so a location on an exact pixel reads that
pixel alone and an infinity there stays infinite (as OpenVINO's CPU plugin answers; its core
reference multiplies the neighbour by 0 and gets NaN). A location that reads 0 contributes
w * 0, so an infinite weight there gives NaN (the spec's sum, literally); OpenVINO's reference
skips such taps instead.

Element types: f32, f16, bf16 and f64, all inputs of one type (16-bit types computed in f32,
rounded once; f64 throughout in f64, where OpenVINO's reference samples in f32). The specs say
"any numeric type"; bilinear sampling at fractional offsets has no integer meaning, so integer
types are refused ("float-type").

`deformable_group` must divide the data's channels: OpenVINO's shape inference does not check
it, and its reference then reads offsets past the end of the tensor.
"""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal

import numpy as np
from pydantic import Field

from irscatter.ir.element_types import ElementType
from irscatter.ir.shapes import Dimension, PartialShape
from irscatter.ops.base import IntList, IRBool, Lower, Op, OpAttrs, TensorInfo, check
from irscatter.ops.common.numeric import compute_dtype, from_compute
from irscatter.ops.common.types import check_float, same_element_type
from irscatter.ops.convolution.core import (
    check_attrs,
    check_window,
    forward_output_dims,
    forward_pads,
    sizes,
)
from irscatter.ops.registry import register

AutoPad = Annotated[Literal["explicit", "valid", "same_upper", "same_lower"], Lower]

# How a sampling location outside [0, S - 1] is read (see the module docstring).
PAD = "pad"  # -8 with bilinear_interpolation_pad: zero-padded bilinear inside (-1, S)
CLAMP_SPEC = "clamp-spec"  # -8 without: moved inside within (-1, S)
CLAMP_REFERENCE = "clamp-reference"  # -1: moved inside within [0, S)


class DeformableConvolutionAttrs(OpAttrs):
    strides: IntList
    pads_begin: IntList
    pads_end: IntList
    dilations: IntList
    auto_pad: AutoPad = "explicit"
    group: Annotated[int, Field(ge=1)] = 1
    deformable_group: Annotated[int, Field(ge=1)] = 1


def _known(d: int | None) -> Dimension:
    return Dimension.dynamic() if d is None else Dimension.static(d)


@register("DeformableConvolution", 1)
class DeformableConvolution(Op):
    labels = {
        "deformable-rank": "an input of DeformableConvolution does not have rank 4",
        "deformable-group-channels": "deformable_group does not divide the data's channels",
        "deformable-offsets-shape": "the offsets are not [N, deformable_group * KY * KX * 2, *output spatial]",
        "deformable-mask-shape": "the mask is not [N, deformable_group * KY * KX, *output spatial]",
    }

    Attrs = DeformableConvolutionAttrs
    attrs: DeformableConvolutionAttrs
    inputs: ClassVar[tuple[str, ...]] = ("data", "offsets", "filters")  # -8 adds a mask

    def sampling(self) -> str:
        return CLAMP_REFERENCE

    # --- inference -------------------------------------------------------------------------

    def infer(self, data: TensorInfo, offsets: TensorInfo, filters: TensorInfo,
              mask: TensorInfo | None = None) -> TensorInfo:
        infos = [("data", data), ("offsets", offsets), ("filters", filters)] + ([("mask", mask)] if mask else [])
        etype = data.etype
        for name, info in infos[1:]:
            etype = same_element_type(TensorInfo(etype, data.shape), info, f"{name} must have the data's element type",
                                      "same-element-type", self.port(name))
        check_float(self, etype)
        for name, info in infos:
            if info.shape.rank_is_static:
                check(info.shape.rank == 4, "deformable-rank", f"{name} must have rank 4, found {info.shape}",
                      port=self.port(name))
        a = self.attrs
        check_attrs(self, 2, strides=a.strides, dilations=a.dilations, pads_begin=a.pads_begin,
                    pads_end=a.pads_end, auto_pad=a.auto_pad)
        dims = {name: (sizes(info.shape.ranked_dims) if info.shape.rank_is_static else [None] * 4) for name, info in infos}
        out = self._geometry(dims["data"], dims["offsets"], dims["filters"], dims.get("mask"))[0]
        return TensorInfo(etype, PartialShape.of([_known(d) for d in out]))

    def _geometry(self, d, off, f, m):
        """The output dims [N, O, OH, OW] (None when unknown), the pads and the kernel size, from
        the inputs' dims (None when unknown), checking the spec's rules. The kernel calls it again
        on shapes inference has already accepted (the runtime infers again for every new set of
        input shapes), so there it only computes."""
        a = self.attrs
        g, dg = a.group, a.deformable_group
        n, c, h, w = d
        o, ci, ky, kx = f
        if c is not None:
            check(c % g == 0, "conv-channels", f"the data's {c} channels are not divisible by group {g}",
                  port=self.port("data"))
            check(c % dg == 0, "deformable-group-channels",
                  f"the data's {c} channels are not divisible by deformable_group {dg}",
                  port=self.port("deformable_group"))
        if o is not None:
            check(o % g == 0, "conv-channels", f"the filters' {o} output channels are not divisible by group {g}",
                  port=self.port("filters"))
        if c is not None and ci is not None:
            check(c == ci * g, "conv-channels",
                  f"the data has {c} channels, the filters take {ci} per group and group is {g}",
                  port=self.port("filters"))
        begin, end = forward_pads(a.auto_pad, [h, w], [ky, kx], a.strides, a.dilations, a.pads_begin, a.pads_end)
        if a.auto_pad in ("explicit", "valid"):
            check_window(self, [h, w], [ky, kx], a.dilations, begin, end)
        oh, ow = forward_output_dims(a.auto_pad, [h, w], [ky, kx], a.strides, a.dilations, begin, end)
        taps = None if ky is None or kx is None else ky * kx
        for name, dims, per, label in (("offsets", off, 2, "deformable-offsets-shape"),
                                       ("mask", m, 1, "deformable-mask-shape")):
            if dims is None:
                continue
            if taps is not None and dims[1] is not None:
                check(dims[1] == dg * taps * per, label,
                      f"{name} have {dims[1]} channels, deformable_group {dg} and a {ky}x{kx} kernel need "
                      f"{dg * taps * per}", port=self.port(name))
            if n is not None and dims[0] is not None:
                check(dims[0] == n, label, f"{name} have batch {dims[0]}, the data {n}", port=self.port(name))
            for axis, want in ((2, oh), (3, ow)):
                if want is not None and dims[axis] is not None:
                    check(dims[axis] == want, label,
                          f"{name} have spatial dims {list(dims[2:])}, the output {[oh, ow]}", port=self.port(name))
        if n is None and off is not None:
            n = off[0]
        return [n, o, oh, ow], begin, end, (ky, kx)

    # --- kernel ----------------------------------------------------------------------------

    def compute(self, data: np.ndarray, offsets: np.ndarray, filters: np.ndarray,
                mask: np.ndarray | None = None) -> np.ndarray:
        etype = ElementType.from_dtype(data.dtype)
        (n, o, oh, ow), begin, _, (ky, kx) = self._geometry(
            list(data.shape), list(offsets.shape), list(filters.shape),
            None if mask is None else list(mask.shape))
        work = compute_dtype(etype)
        a = self.attrs
        g, dg = a.group, a.deformable_group
        c = data.shape[1]
        taps = ky * kx
        if 0 in (n, o, oh, ow):
            return np.zeros((n, o, oh, ow), data.dtype)
        x = data.astype(work, copy=False)
        off = offsets.astype(work, copy=False).reshape(n, dg, taps, 2, oh, ow)
        # The undeformed location of every tap at every output position.
        grid_y = (np.arange(oh) * a.strides[0] - begin[0])[None, :] + (np.arange(ky) * a.dilations[0])[:, None]
        grid_x = (np.arange(ow) * a.strides[1] - begin[1])[None, :] + (np.arange(kx) * a.dilations[1])[:, None]
        base_y = np.repeat(grid_y, kx, axis=0).astype(work)[:, :, None]  # [K, OH, 1]
        base_x = np.tile(grid_x, (ky, 1)).astype(work)[:, None, :]  # [K, 1, OW]
        with np.errstate(invalid="ignore", over="ignore"):
            pos_y = base_y + off[:, :, :, 0]  # [N, DG, K, OH, OW]
            pos_x = base_x + off[:, :, :, 1]
        # cols: [N, DG, C/DG, K*OH*OW], zero where the location reads nothing
        cols, valid = _bilinear(x.reshape(n, dg, c // dg, -1), data.shape[2], data.shape[3],
                                pos_y.reshape(n, dg, 1, -1), pos_x.reshape(n, dg, 1, -1), self.sampling())
        with np.errstate(invalid="ignore", over="ignore"):
            if mask is not None:
                scale = mask.astype(work, copy=False).reshape(n, dg, 1, -1)
                cols = np.where(valid, cols * scale, work.type(0))
            cols = cols.reshape(n, g, c // g, taps, oh * ow)
            wgt = filters.astype(work, copy=False).reshape(g, o // g, c // g, taps)
            out = np.einsum("ngckp,gock->ngop", cols, wgt, optimize=True)
        return from_compute(np.ascontiguousarray(out.reshape(n, o, oh, ow)), etype)


def _bilinear(x: np.ndarray, height: int, width: int, pos_y: np.ndarray, pos_x: np.ndarray,
              mode: str) -> tuple[np.ndarray, np.ndarray]:
    """Bilinear samples of `x` [N, DG, Cd, H*W] at locations [N, DG, 1, L]: the values
    [N, DG, Cd, L] (0 where the location reads nothing) and the mask of locations that read."""
    if mode == CLAMP_REFERENCE:
        valid = (pos_y >= 0) & (pos_y < height) & (pos_x >= 0) & (pos_x < width)
    else:
        valid = (pos_y > -1) & (pos_y < height) & (pos_x > -1) & (pos_x < width)
    zero = x.dtype.type(0)
    if height * width == 0:
        return np.zeros(x.shape[:3] + pos_y.shape[3:], x.dtype), valid
    # Locations that read nothing are parked at 0 so that no index overflows.
    py = np.where(valid, pos_y, zero)
    px = np.where(valid, pos_x, zero)
    if mode == CLAMP_SPEC:
        py, px = np.maximum(py, zero), np.maximum(px, zero)
    y0, x0 = np.floor(py), np.floor(px)
    dy, dx = py - y0, px - x0
    y0, x0 = y0.astype(np.int64), x0.astype(np.int64)
    if mode == PAD:
        y1, x1 = y0 + 1, x0 + 1
    else:  # the far neighbour of a location on the last row or column is that row or column
        y1 = np.minimum(np.ceil(py).astype(np.int64), height - 1)
        x1 = np.minimum(np.ceil(px).astype(np.int64), width - 1)
    one = x.dtype.type(1)
    value = None
    for yy, xx, weight in ((y0, x0, (one - dx) * (one - dy)), (y1, x0, (one - dx) * dy),
                           (y0, x1, dx * (one - dy)), (y1, x1, dx * dy)):
        inside = (yy >= 0) & (yy < height) & (xx >= 0) & (xx < width)
        flat = np.where(inside, yy * width + xx, 0)
        picked = np.take_along_axis(x, np.broadcast_to(flat, x.shape[:3] + flat.shape[3:]), axis=3)
        with np.errstate(invalid="ignore", over="ignore"):
            term = np.where(inside & (weight != 0), picked * weight, zero)
            value = term if value is None else value + term
    assert value is not None  # the sum of the four corners
    return np.where(valid, value, zero), valid


@register("DeformableConvolution", 8)
class DeformableConvolution8(DeformableConvolution):
    class Attrs(DeformableConvolutionAttrs):
        bilinear_interpolation_pad: IRBool = False
    attrs: Attrs

    inputs = ("data", "offsets", "filters", "mask")
    optional_inputs = 1

    def sampling(self) -> str:
        return PAD if self.attrs.bilinear_interpolation_pad else CLAMP_SPEC
