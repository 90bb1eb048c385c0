"""ExperimentalDetectronTopKROIs-6: the `max_rois` ROIs ([N, 4]) of highest probability ([N]),
best first, as a [max_rois, 4] tensor of the ROIs' type (f16, bf16, f32 or f64).

Choices where the spec leaves the result undefined:
* ROIs of equal probability keep their input order (the reference's and the CPU plugin's
  unstable std::sort leave it open); NaN probabilities sort after every number, in input order.
* When there are fewer ROIs than `max_rois`, the rows past them are zeros.
"""

from __future__ import annotations

import numpy as np
from pydantic import Field

from irscatter.ir.shapes import PartialShape
from irscatter.limits import check_inferred
from irscatter.ops.base import Op, OpAttrs, TensorInfo, check
from irscatter.ops.detectron.core import descending, float_inputs, itemsize, ranked
from irscatter.ops.registry import register


class TopKROIsAttrs(OpAttrs):
    max_rois: int = Field(default=0, ge=0)


@register("ExperimentalDetectronTopKROIs", 6)
class ExperimentalDetectronTopKROIs(Op):
    labels = {
        "top-k-rois-shape": "the ROIs are not an [N, 4] tensor, the probabilities not an [N] tensor of the same N",
    }

    Attrs = TopKROIsAttrs
    attrs: TopKROIsAttrs
    inputs = ("input_rois", "rois_probs")

    def infer(self, rois: TensorInfo, probs: TensorInfo) -> TensorInfo:
        etype = float_inputs(self, [rois, probs], list(self.inputs))
        r = ranked(self, rois, "input_rois", 2, "top-k-rois-shape", last=4)
        p = ranked(self, probs, "rois_probs", 1, "top-k-rois-shape")
        if r is not None and p is not None:
            check(r[0].compatible(p[0]), "top-k-rois-shape",
                  f"there are {r[0]} ROIs and {p[0]} probabilities", port=self.port("rois_probs"))
        shape = (self.attrs.max_rois, 4)
        check_inferred(shape, itemsize(etype), "output 0")
        return TensorInfo(etype, PartialShape.of(shape))

    def compute(self, rois: np.ndarray, probs: np.ndarray) -> np.ndarray:
        take = descending(probs)[: self.attrs.max_rois]
        out = np.zeros((self.attrs.max_rois, 4), rois.dtype)
        out[: take.size] = rois[take]
        return out
