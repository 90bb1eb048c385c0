"""ReorgYolo-2: YOLO v2's reorg layer, which moves stride x stride blocks of the spatial axes
into channels: [N, C, H, W] becomes [N, C * stride^2, H / stride, W / stride]. Its spec page is
reorg-yolo-1.rst, but the op entered OpenVINO's opsets in opset2, hence version 2.

The element mapping is Darknet's (`reorg_cpu` run "backwards"), which OpenVINO's reference and
CPU plugin reproduce, and it is *not* SpaceToDepth's. Both the data and the output buffers are
read with shapes they do not have: with s = stride and C' = C // s^2, the data's flat buffer is
taken as an [N, C', H * s, W * s] tensor X, the output's flat buffer as an [N, C, H, W] tensor
Y, and

    Y[n, c, h, w] = X[n, c % C', h * s + (c // C') // s, w * s + (c // C') % s]

(the output then is Y's buffer with the shape [N, C * s^2, H / s, W / s]). SpaceToDepth
instead gathers the blocks of the data's own H x W planes: out[n, (i * s + j) * C + c, h, w] =
data[n, c, h * s + i, w * s + j]. For C a multiple of s^2 the mapping is a reshape and a
transpose; otherwise the row index of X may run past H * s into the following planes, which
irscatter reproduces with flat indices (the indices stay inside the data, but some elements are
read twice and others not at all).

Every element type; a pure permutation, exact. `stride` may be written as one value or as
OpenVINO's strides list ("2,2"), whose first value counts; the values must be equal and
positive. The spec's constraints: rank 4, C >= stride^2, H and W divisible by stride.
"""

from __future__ import annotations

import numpy as np

from irscatter.ir.shapes import PartialShape
from irscatter.ops.base import IntList, Op, OpAttrs, TensorInfo, check, required
from irscatter.ops.registry import register
from irscatter.ops.spatial.core import divided, scaled


class ReorgYoloAttrs(OpAttrs):
    stride: IntList


def _source_index(shape: tuple[int, ...], s: int) -> np.ndarray:
    """The flat data index of each output element (in the output's [N, C, H, W] reading)."""
    n, c, h, w = shape
    groups = c // (s * s)
    ns = np.arange(n).reshape(n, 1, 1, 1)
    cs = np.arange(c).reshape(1, c, 1, 1)
    hs = np.arange(h).reshape(1, 1, h, 1)
    ws = np.arange(w).reshape(1, 1, 1, w)
    offset = cs // groups
    row = hs * s + offset // s
    col = ws * s + offset % s
    return ((ns * groups + cs % groups) * (h * s) + row) * (w * s) + col


@register("ReorgYolo", 2)
class ReorgYolo(Op):
    labels = {
        "reorg-stride": "ReorgYolo's stride is missing, not positive, or lists different values",
        "reorg-channels": "ReorgYolo's data has fewer channels than stride^2",
        "reorg-divisible": "ReorgYolo's data height or width does not divide by stride",
    }

    Attrs = ReorgYoloAttrs
    attrs: ReorgYoloAttrs
    inputs = ("data",)

    def _stride(self) -> int:
        values = self.attrs.stride
        check(len(values) >= 1 and values[0] >= 1 and len(set(values)) == 1, "reorg-stride",
              f"stride must be one positive integer, found {list(values)}", port=self.port("stride"))
        return values[0]

    def infer(self, data: TensorInfo) -> TensorInfo:
        s = self._stride()
        if not data.shape.rank_is_static:
            return TensorInfo(data.etype, PartialShape.dynamic_rank())
        check(data.shape.rank == 4, "data-rank", f"ReorgYolo takes data of rank 4, found {data.shape}",
              port=self.port("data"))
        n, c, h, w = data.shape.ranked_dims
        check(c.max is None or c.max >= s * s, "reorg-channels",
              f"the data has {c} channels, fewer than stride^2 = {s * s}", port=self.port("data"))
        spatial = [required(divided(d, s), "reorg-divisible", f"height {h} and width {w} must divide by stride {s}",
                            port=self.port("data")) for d in (h, w)]
        return TensorInfo(data.etype, PartialShape.of([n, scaled(c, s * s), *spatial]))

    def compute(self, data: np.ndarray) -> np.ndarray:
        s = self._stride()
        n, c, h, w = data.shape
        out_shape = (n, c * s * s, h // s, w // s)
        if c % (s * s) == 0:
            groups = c // (s * s)
            # X = data as [N, C', H*s, W*s], its rows and columns split into (H, s) and (W, s);
            # Y[n, (i, j, c'), h, w] = X[n, c', h, i, w, j]
            x = data.reshape(n, groups, h, s, w, s)
            return x.transpose(0, 3, 5, 1, 2, 4).reshape(out_shape)
        index = self.per_shape(data.shape, lambda: _source_index(data.shape, s))
        return data.reshape(-1)[index].reshape(out_shape)
