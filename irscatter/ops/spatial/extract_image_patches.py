"""ExtractImagePatches-3: patches of `sizes` taken `strides` apart from an image, with their
samples `rates` apart, stacked in the channel axis.

The data [N, C, H, W] gives [N, size_rows * size_cols * C, out_rows, out_cols]; output channel
(kr * size_cols + kc) * C + c holds, at each patch position, the sample at patch row kr and
column kc of channel c (the spec's examples), and samples that fall outside the image are 0.

How many patches: with `valid`, only patches wholly inside the image,
out = max(0, ceil((H - rate * (size - 1)) / stride)); with `same_upper` and `same_lower`,
out = ceil(H / stride), the image padded with zeros by
pad = max(0, (out - 1) * stride + rate * (size - 1) + 1 - H) in all, of which pad // 2 goes
before the image for `same_upper` and the other half (rounded up) for `same_lower`, as
OpenVINO's shape inference and reference compute them. A pure gather of elements: every
element type (strings pad with the empty string), exact.
"""

from __future__ import annotations

from typing import Annotated, Literal

import numpy as np

from irscatter.ir.shapes import Dimension, PartialShape
from irscatter.limits import check_allocation
from irscatter.ops.base import IntList, Lower, Op, OpAttrs, TensorInfo, check
from irscatter.ops.registry import register


class ExtractImagePatchesAttrs(OpAttrs):
    sizes: IntList
    strides: IntList
    rates: IntList
    auto_pad: Annotated[Literal["valid", "same_upper", "same_lower"], Lower]


def patch_count(size: int, kernel: int, stride: int, rate: int, auto_pad: str) -> tuple[int, int]:
    """(patches along an axis, padding before the image) for an axis of `size`."""
    if auto_pad == "valid":
        return max(0, -(-(size - rate * (kernel - 1)) // stride)), 0
    count = -(-size // stride)
    pad = max(0, (count - 1) * stride + rate * (kernel - 1) + 1 - size) if count else 0
    return count, (pad // 2 if auto_pad == "same_upper" else pad - pad // 2)


@register("ExtractImagePatches", 3)
class ExtractImagePatches(Op):
    labels = {
        "patch-attribute": "sizes, strides or rates do not hold two values, a stride or rate is below 1, "
                           "or a size is negative",
    }

    Attrs = ExtractImagePatchesAttrs
    attrs: ExtractImagePatchesAttrs
    inputs = ("data",)

    def _check_attrs(self) -> None:
        a = self.attrs
        for name, values, least in (("sizes", a.sizes, 0), ("strides", a.strides, 1), ("rates", a.rates, 1)):
            check(len(values) == 2, "patch-attribute", f"{name} must hold two values [rows, cols], found "
                  f"{list(values)}", port=self.port(name))
            check(all(v >= least for v in values), "patch-attribute",
                  f"{name} must be at least {least}, found {list(values)}", port=self.port(name))

    def infer(self, data: TensorInfo) -> TensorInfo:
        self._check_attrs()
        if not data.shape.rank_is_static:
            return TensorInfo(data.etype, PartialShape.of([-1] * 4))
        check(data.shape.rank == 4, "data-rank", f"data must have rank 4 ([N, C, H, W]), found {data.shape}",
              port=self.port("data"))
        a = self.attrs
        patch = a.sizes[0] * a.sizes[1]
        n, c, *spatial = data.shape.ranked_dims
        depth = Dimension.static(c.min * patch) if c.is_static or patch == 0 else Dimension.dynamic()
        out = [Dimension.static(patch_count(d.min, a.sizes[i], a.strides[i], a.rates[i], a.auto_pad)[0])
               if d.is_static else Dimension.dynamic() for i, d in enumerate(spatial)]
        return TensorInfo(data.etype, PartialShape.of([n, depth, *out]))

    def compute(self, data: np.ndarray) -> np.ndarray:
        a = self.attrs
        n, c, height, width = data.shape
        (rows, top), (cols, left) = (patch_count(d, a.sizes[i], a.strides[i], a.rates[i], a.auto_pad)
                                     for i, d in enumerate((height, width)))
        (kr, kc), (sr, sc), (rr, rc) = a.sizes, a.strides, a.rates
        check_allocation((n, kr, kc, c, rows, cols), data.dtype.itemsize)
        out = np.zeros((n, kr, kc, c, rows, cols), dtype=data.dtype)
        if out.size == 0:
            return out.reshape(n, kr * kc * c, rows, cols)
        # The input positions of patch row r, tap i: r * stride - top + i * rate; the zero padding
        # is the part of `out` no slice below writes.
        for i in range(kr):
            r0, r1 = _inside(rows, sr, i * rr - top, height)
            for j in range(kc):
                c0, c1 = _inside(cols, sc, j * rc - left, width)
                if r0 < r1 and c0 < c1:
                    src = data[:, :, r0 * sr - top + i * rr::sr, c0 * sc - left + j * rc::sc]
                    out[:, i, j, :, r0:r1, c0:c1] = src[:, :, :r1 - r0, :c1 - c0]
        return out.reshape(n, kr * kc * c, rows, cols)


def _inside(count: int, stride: int, offset: int, size: int) -> tuple[int, int]:
    """The range [lo, hi) of patch positions p < count with 0 <= p * stride + offset < size."""
    lo = max(0, -(offset // stride))
    hi = min(count, max(0, -(-(size - offset) // stride)))
    return lo, max(lo, hi)
