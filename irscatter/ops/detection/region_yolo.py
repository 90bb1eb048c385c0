"""RegionYolo-1: the activations of YOLO's region (v2) and yolo (v3) layers.

The data [N, C, H, W] is read as N batches of R regions of K = coords + classes + 1 entries,
each entry an H x W plane: entries 0 and 1 are the box centre (x, y), entries 2 .. coords-1
the rest of the box, entry `coords` the objectness and the following `classes` entries the
class scores. A logistic sigmoid is applied to entries 0 and 1 and then to the objectness;
then

* with `do_softmax` (YOLO v2): R = `num`; the class scores of each region and cell become
  their softmax over the classes (computed from the input values); everything else (entries
  2 .. coords-1, and any channels beyond R * K) is copied; the output is the data with axes
  `axis` .. `end_axis` flattened into one (an `end_axis` before `axis` flattens nothing);
* without it (YOLO v3): R = len(`mask`) (only its length counts); the class scores get the
  sigmoid too, and the output is [N, R * K, H, W].

`anchors` is not used in the computation.

Layout, as OpenVINO's reference and CPU plugin index it: the R * K planes of batch b start at
flat offset b * R * K * H * W of the data, whatever C is. When C is R * K (every real model)
that is batch b's channels; with more channels it is not, and irscatter reproduces the flat
layout (the channels past N * R * K planes are copied or, without do_softmax, dropped). When
coords is 0 or 1 the objectness is among entries 0 and 1 and gets the sigmoid twice, as in the
reference. Refused: C below R * K (the reference reads past the data), negative counts,
coords + classes of 0 (the x, y planes would run into the next region) and `num` 0 with
do_softmax (the reference divides by it).

Float types only (f32, f16, bf16, f64). The sigmoid is computed as exp(x) / (1 + exp(x)) for
negative x and 1 / (1 + exp(-x)) otherwise, in f64, and the softmax subtracts the maximum, in
f64; each result is rounded once to the data type. OpenVINO's reference computes
1 / (1 + exp(-x)) in f32, which is 0 below x = -88.7 where the sigmoid still has f32 values
down to the smallest subnormal (the CPU plugin, like irscatter, keeps them), and rounds its f16
softmax at every step.
"""

from __future__ import annotations

import numpy as np

from irscatter.ir.element_types import ElementType
from irscatter.ir.shapes import Dimension, PartialShape
from irscatter.ops.base import FloatList, IntList, IRBool, Op, OpAttrs, TensorInfo, check
from irscatter.ops.common.axes import normalized_axis
from irscatter.ops.common.numeric import from_compute
from irscatter.ops.common.types import check_float
from irscatter.ops.registry import register


class RegionYoloAttrs(OpAttrs):
    anchors: FloatList = ()
    axis: int
    coords: int
    classes: int
    end_axis: int
    num: int
    do_softmax: IRBool = True
    mask: IntList = ()


def _sigmoid(x: np.ndarray) -> np.ndarray:
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1 / (1 + e), e / (1 + e))


def _product(dims) -> Dimension:
    total = 1
    for d in dims:
        if not d.is_static:
            return Dimension.dynamic()
        total *= d.min
    return Dimension.static(total)


@register("RegionYolo", 1)
class RegionYolo(Op):
    labels = {
        "region-yolo-counts": "RegionYolo's coords, classes or num is negative, coords + classes is 0, or num is 0 "
                              "with do_softmax",
        "region-yolo-channels": "RegionYolo's data has fewer channels than regions times (coords + classes + 1)",
    }

    Attrs = RegionYoloAttrs
    attrs: RegionYoloAttrs
    inputs = ("data",)

    def _layout(self) -> tuple[int, int]:
        """(regions, entries per region), the counts checked."""
        a = self.attrs
        check(a.coords >= 0 and a.classes >= 0 and a.num >= 0 and a.coords + a.classes >= 1
              and (a.num >= 1 or not a.do_softmax), "region-yolo-counts",
              f"coords ({a.coords}), classes ({a.classes}) and num ({a.num}) must not be negative, coords + classes "
              "must be at least 1, and num at least 1 with do_softmax")
        return (a.num if a.do_softmax else len(a.mask)), a.coords + a.classes + 1

    def infer(self, data: TensorInfo) -> TensorInfo:
        check_float(self, data.etype)
        regions, entries = self._layout()
        if not data.shape.rank_is_static:
            return TensorInfo(data.etype, PartialShape.dynamic_rank())
        check(data.shape.rank == 4, "data-rank", f"RegionYolo takes data of rank 4, found {data.shape}",
              port=self.port("data"))
        n, c, h, w = data.shape.ranked_dims
        check(c.max is None or c.max >= regions * entries, "region-yolo-channels",
              f"{regions} regions of {entries} entries need {regions * entries} channels, the data has {c}",
              port=self.port("data"))
        if not self.attrs.do_softmax:
            return TensorInfo(data.etype, PartialShape.of([n, regions * entries, h, w]))
        dims = list(data.shape.ranked_dims)
        axis = normalized_axis(self.attrs.axis, 4, port=self.port("axis"))
        end = normalized_axis(self.attrs.end_axis, 4, port=self.port("end_axis"))
        if end <= axis:
            return TensorInfo(data.etype, data.shape)
        return TensorInfo(data.etype, PartialShape.of([*dims[:axis], _product(dims[axis:end + 1]), *dims[end + 1:]]))

    def compute(self, data: np.ndarray) -> np.ndarray:
        a = self.attrs
        etype = ElementType.from_dtype(data.dtype)
        out_shape = self.infer(TensorInfo(etype, PartialShape.of(data.shape))).shape.to_tuple()
        regions, entries = self._layout()
        n, _, h, w = data.shape
        used = n * regions * entries * h * w
        flat = data.astype(np.float64).reshape(-1)  # a fresh copy: the input is never written
        part = flat[:used].reshape(n, regions, entries, h * w)
        part[:, :, 0:2] = _sigmoid(part[:, :, 0:2])
        end = a.coords + (1 if a.do_softmax else a.classes + 1)
        part[:, :, a.coords:end] = _sigmoid(part[:, :, a.coords:end])
        if a.do_softmax and a.classes:
            # from the input values: the sigmoid above may have reached the first class when coords is 0
            scores = data.reshape(-1)[:used].astype(np.float64).reshape(n, regions, entries, h * w)[:, :, a.coords + 1:]
            with np.errstate(invalid="ignore"):
                e = np.exp(scores - scores.max(axis=2, keepdims=True))
                part[:, :, a.coords + 1:] = e / e.sum(axis=2, keepdims=True)
        result = flat if a.do_softmax else flat[:used]
        if etype.dtype != np.float64:
            result = from_compute(result.astype(np.float32), etype)
        return result.reshape(out_shape)
