"""ExperimentalDetectronGenerateProposalsSingleImage-6: region proposals of one image from its
anchors, box deltas and objectness scores.

Inputs: im_info [3] (image height, width, scale), anchors [H * W * A, 4] (x0, y0, x1, y1, in
(h, w, a) order), deltas [A * 4, H, W] and scores [A, H, W]. Outputs: the ROIs
[post_nms_count, 4] and their scores [post_nms_count], best first, zero rows past the ones found.

Steps, in f32 as OpenVINO's reference computes (f16 and bf16 rounded once at the end, f64 from
f32 results):
1. each anchor is moved by its deltas (Caffe2's transform with inclusive pixel sizes, the +1;
   d_log_w and d_log_h clamped to log(1000 / 16)) and clipped to [0, width - 1] x [0, height - 1];
2. proposals whose width or height (x1 - x0 + 1, y1 - y0 + 1) is below `min_size` are removed;
3. the rest are sorted by score, highest first; equal scores keep the (h, w, a) order (the spec
   leaves it undefined; OpenVINO's partial_sort mixes them), NaN scores go last;
4. the first `pre_nms_count` go through NMS: a proposal whose IoU with a kept one exceeds
   `nms_threshold` is dropped (IoU of exclusive boxes, without the +1, as the reference);
5. the first `post_nms_count` kept are the output.

Departure of OpenVINO from the spec (irscatter follows the spec): its core reference and its CPU
plugin do not remove the proposals of step 2; they set their score to 0, so those sort last and
are output (with score 0, and their boxes) when fewer than `post_nms_count` others remain, where
irscatter's rows are zeros. Where enough proposals remain, the two agree.
"""

from __future__ import annotations

import math

import numpy as np
from pydantic import Field

from irscatter.ir.element_types import ElementType
from irscatter.ir.shapes import PartialShape
from irscatter.limits import check_inferred
from irscatter.ops.base import Op, OpAttrs, TensorInfo, check
from irscatter.ops.common.boxes import greedy_keep
from irscatter.ops.common.numeric import from_compute
from irscatter.ops.detectron.core import F32, descending, f32_clamp, float_inputs, itemsize, ranked, refine
from irscatter.ops.registry import register

MAX_DELTA_LOG_WH = F32(math.log(1000.0 / 16.0))


class GenerateProposalsAttrs(OpAttrs):
    min_size: float = Field(ge=0)
    nms_threshold: float = Field(ge=0)
    pre_nms_count: int = Field(ge=0)
    post_nms_count: int = Field(ge=0)


def generate_proposals(im_info: np.ndarray, anchors: np.ndarray, deltas: np.ndarray, scores: np.ndarray,
                       attrs: GenerateProposalsAttrs, offset: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """The f32 (rois, scores) of the op; see the module doc."""
    count, height, width = scores.shape
    im = im_info.astype(F32).reshape(-1)
    boxes = anchors.astype(F32).reshape(height, width, count, 4)
    moves = deltas.astype(F32).reshape(count, 4, height, width).transpose(2, 3, 0, 1)
    weights = scores.astype(F32).transpose(1, 2, 0).reshape(-1)
    moved = refine(boxes, moves, MAX_DELTA_LOG_WH, offset).reshape(-1, 4)
    o = F32(offset)
    moved[:, 0::2] = f32_clamp(moved[:, 0::2], im[1] - o)
    moved[:, 1::2] = f32_clamp(moved[:, 1::2], im[0] - o)
    size = F32(attrs.min_size)
    big = (size <= moved[:, 2] - moved[:, 0] + o) & (size <= moved[:, 3] - moved[:, 1] + o)
    left = np.flatnonzero(big)
    order = left[descending(weights[left])][: attrs.pre_nms_count]
    kept = order[greedy_keep(moved[order], attrs.nms_threshold, limit=attrs.post_nms_count)]
    rois = np.zeros((attrs.post_nms_count, 4), F32)
    out = np.zeros(attrs.post_nms_count, F32)
    rois[: kept.size] = moved[kept]
    out[: kept.size] = weights[kept]
    return rois, out


@register("ExperimentalDetectronGenerateProposalsSingleImage", 6)
class ExperimentalDetectronGenerateProposalsSingleImage(Op):
    labels = {
        "proposals-shape": "im_info is not [3], the anchors not [N, 4], the deltas or scores not 3-D, or their "
                           "heights, widths, anchor counts (A * H * W anchors, 4 * A delta channels) disagree",
    }

    Attrs = GenerateProposalsAttrs
    attrs: GenerateProposalsAttrs
    inputs = ("im_info", "anchors", "deltas", "scores")
    outputs = 2

    def infer(self, im_info: TensorInfo, anchors: TensorInfo, deltas: TensorInfo,
              scores: TensorInfo) -> tuple[TensorInfo, TensorInfo]:
        etype = float_inputs(self, [im_info, anchors, deltas, scores], list(self.inputs))
        ranked(self, im_info, "im_info", 1, "proposals-shape", last=3)
        a = ranked(self, anchors, "anchors", 2, "proposals-shape", last=4)
        d = ranked(self, deltas, "deltas", 3, "proposals-shape")
        s = ranked(self, scores, "scores", 3, "proposals-shape")
        if d is not None and s is not None:
            check(d[1].compatible(s[1]) and d[2].compatible(s[2]), "proposals-shape",
                  f"the deltas {d} and the scores {s} differ in height or width", port=self.port("scores"))
            if d[0].is_static and s[0].is_static:
                check(d[0].min == 4 * s[0].min, "proposals-shape",
                      f"the deltas {d} need 4 channels per anchor of the scores {s}", port=self.port("deltas"))
            if a is not None and a[0].is_static and s.is_static:
                check(a[0].min == math.prod(s.to_tuple()), "proposals-shape",
                      f"there are {a[0]} anchors, the scores {s} need one per score", port=self.port("anchors"))
        n = self.attrs.post_nms_count
        check_inferred((n, 4), itemsize(etype), "output 0")
        return TensorInfo(etype, PartialShape.of([n, 4])), TensorInfo(etype, PartialShape.of([n]))

    def compute(self, im_info: np.ndarray, anchors: np.ndarray, deltas: np.ndarray,
                scores: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        etype = ElementType.from_dtype(scores.dtype)
        rois, out = generate_proposals(im_info, anchors, deltas, scores, self.attrs)
        return from_compute(rois, etype), from_compute(out, etype)
