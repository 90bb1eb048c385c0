"""GenerateProposals-9: region proposals from given anchors, per image of a batch.

Inputs (one floating-point type T): `im_info` [N, 3] or [N, 4] (image height, width, then one
scale or a height and a width scale), `anchors` [H, W, A, 4] (x0, y0, x1, y1, shared by every
image), `deltas` [N, 4A, H, W] (for anchor a, channels 4a..4a+3 hold dx, dy, d(log w),
d(log h)) and `scores` [N, A, H, W]. Outputs: `rois` [R, 4], their `scores` [R] and `roi_num`
[N] of roi_num_type (i32 or i64), R being the sum of roi_num, each at most post_nms_count.

Per image, as OpenVINO's reference and CPU plugin compute it (in f32 whatever T is, outputs
rounded once to T), with `offset` 0 when `normalized`, else 1 (Caffe's +1):

1. Each anchor (in (h, w, a) order) is decoded: extents `x1 - x0 + offset`, centre moved by
   `d * extent`, extents scaled by `exp(min(d log, log(1000 / 16)))`; the new high corner is
   `centre + extent / 2 - offset`. Every corner is clipped to [0, width - offset] x
   [0, height - offset] (a NaN corner becomes 0, as std::min/max make it).
2. The proposals are sorted by score, highest first, and the first min(pre_nms_count, A*H*W)
   kept, in the order of libstdc++'s std::partial_sort (the references' sort; see
   proposal.top_order for how ties are replayed).
3. Of those, a box whose width or height (+ offset) is below `min_size * scale` is dropped.
4. Greedy NMS (proposal.suppress): a box suppresses each later box whose corners do not lie
   apart from its own and whose IoU exceeds the threshold; at most post_nms_count are kept.

Departures and choices (OpenVINO's core reference is "the reference"):
* nms_eta: the reference and the CPU plugin refuse any value but 1.0; irscatter follows the
  spec: after each kept box, while the threshold is above 0.5 and nms_eta < 1, the threshold is
  multiplied by nms_eta, and each candidate is judged by the threshold of its turn.
* pre_nms_count and post_nms_count: the reference refuses 0; the spec allows it, and 0 gives no
  proposals here.
* Output 2's dim is R = 0..N * min(post_nms_count, pre_nms_count, A*H*W) when values are
  unknown (the reference infers 0..N * post_nms_count, a looser bound).
"""

from __future__ import annotations

import math
from typing import Annotated, Any, Literal

import numpy as np
from pydantic import Field

from irscatter.ir.element_types import ElementType
from irscatter.ir.shapes import Dimension, PartialShape
from irscatter.ops.base import IRBool, Lower, Op, OpAttrs, TensorInfo, check
from irscatter.ops.common.numeric import from_compute
from irscatter.ops.detection.proposal import (
    F32,
    check_rank,
    clip,
    dims_agree,
    float_types,
    std_min,
    suppress,
    top_order,
)
from irscatter.ops.registry import register

# The largest d(log w) the references apply: log(1000 / 16), computed in double, kept as float.
MAX_DELTA_LOG = F32(math.log(1000.0 / 16.0))
# Inference computes the outputs (to know their size) when the inputs are this small and known.
KNOWN_LIMIT = 1 << 16


class GenerateProposalsAttrs(OpAttrs):
    min_size: Annotated[float, Field(ge=0)]
    nms_threshold: Annotated[float, Field(ge=0)]
    pre_nms_count: Annotated[int, Field(ge=0)]
    post_nms_count: Annotated[int, Field(ge=0)]
    normalized: IRBool = True
    nms_eta: Annotated[float, Field(ge=0, le=1)] = 1.0
    roi_num_type: Annotated[Literal["i32", "i64"], Lower] = "i64"


@register("GenerateProposals", 9)
class GenerateProposals(Op):
    labels = {
        "generate-proposals-rank": "GenerateProposals' im_info is not 2-D, or anchors, deltas or scores not 4-D",
        "generate-proposals-im-info": "GenerateProposals' im_info does not have 3 or 4 values per image",
        "generate-proposals-shape": "GenerateProposals' inputs disagree on the batch, the anchors per position, "
                                    "the feature map's height or width, or anchors' last dim is not 4",
    }

    Attrs = GenerateProposalsAttrs
    attrs: GenerateProposalsAttrs
    inputs = ("im_info", "anchors", "deltas", "scores")
    outputs = 3

    def infer(self, im_info: TensorInfo, anchors: TensorInfo, deltas: TensorInfo, scores: TensorInfo) -> Any:
        etype = float_types(self, self.inputs, (im_info, anchors, deltas, scores))
        check_rank(self, im_info, "im_info", 2, "generate-proposals-rank")
        for name, info in (("anchors", anchors), ("deltas", deltas), ("scores", scores)):
            check_rank(self, info, name, 4, "generate-proposals-rank")
        if im_info.shape.rank_is_static:
            info_size = im_info.shape[1]
            check(info_size.contains(3) or info_size.contains(4), "generate-proposals-im-info",
                  f"im_info must be [N, 3] or [N, 4], found {im_info.shape}", port=self.port("im_info"))
        batch = Dimension.dynamic()
        for name, info in (("im_info", im_info), ("deltas", deltas), ("scores", scores)):
            if info.shape.rank_is_static:
                check(dims_agree(batch, info.shape[0]), "generate-proposals-shape",
                      f"the inputs disagree on the batch: im_info {im_info.shape}, deltas {deltas.shape}, "
                      f"scores {scores.shape}", port=self.port(name))
                if batch.is_dynamic and info.shape[0].is_static:
                    batch = info.shape[0]
        a, d, s = anchors.shape, deltas.shape, scores.shape
        if a.rank_is_static:
            check(a[3].contains(4), "generate-proposals-shape", f"anchors must be [H, W, A, 4], found {a}",
                  port=self.port("anchors"))
        if d.rank_is_static and s.rank_is_static:
            four = Dimension(min=4 * s[1].min, max=None if s[1].max is None else 4 * s[1].max)
            check(dims_agree(d[1], four) and dims_agree(d[2], s[2]) and dims_agree(d[3], s[3]),
                  "generate-proposals-shape", f"deltas must be [N, 4A, H, W] for scores [N, A, H, W] = {s}, found {d}",
                  port=self.port("deltas"))
        if a.rank_is_static and s.rank_is_static:
            check(dims_agree(a[0], s[2]) and dims_agree(a[1], s[3]) and dims_agree(a[2], s[1]),
                  "generate-proposals-shape", f"anchors must be [H, W, A, 4] for scores [N, A, H, W] = {s}, found {a}",
                  port=self.port("anchors"))
        count_type = ElementType[self.attrs.roi_num_type]
        infos = (im_info, anchors, deltas, scores)
        if all(i.value is not None for i in infos) and sum(np.asarray(i.value).size for i in infos) <= KNOWN_LIMIT:
            info_value, anchor_value, delta_value, score_value = (np.asarray(i.value) for i in infos)
            boxes, _, nums = generate_proposals(info_value, anchor_value, delta_value, score_value, self.attrs)
            total = boxes.shape[0]
            return (TensorInfo(etype, PartialShape.of([total, 4])), TensorInfo(etype, PartialShape.of([total])),
                    TensorInfo(count_type, PartialShape.of([len(nums)]), nums.astype(count_type.dtype)))
        per_image = self.attrs.post_nms_count
        if s.rank_is_static and all(x.is_static for x in s.ranked_dims[1:]):
            per_image = min(per_image, self.attrs.pre_nms_count, math.prod(x.min for x in s.ranked_dims[1:]))
        rois = Dimension(min=0, max=None if batch.max is None else batch.max * per_image)
        return (TensorInfo(etype, PartialShape.of([rois, 4])), TensorInfo(etype, PartialShape.of([rois])),
                TensorInfo(count_type, PartialShape.of([batch])))

    def compute(self, im_info: np.ndarray, anchors: np.ndarray, deltas: np.ndarray, scores: np.ndarray) -> Any:
        rois, roi_scores, nums = generate_proposals(im_info, anchors, deltas, scores, self.attrs)
        etype = ElementType.from_dtype(im_info.dtype)
        return (from_compute(rois, etype), from_compute(roi_scores, etype),
                nums.astype(ElementType[self.attrs.roi_num_type].dtype))


def generate_proposals(im_info: np.ndarray, anchors: np.ndarray, deltas: np.ndarray, scores: np.ndarray,
                       attrs: GenerateProposalsAttrs) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The kernel: (rois [R, 4], scores [R]) in f32 and the int64 count per image."""
    batch, count, height, width = scores.shape
    offset = F32(0 if attrs.normalized else 1)
    half = F32(0.5)
    total = count * height * width
    pre = min(total, attrs.pre_nms_count)
    info = np.asarray(im_info, F32)
    box = np.asarray(anchors, F32).reshape(height, width, count, 4)
    ax0, ay0, ax1, ay1 = box[..., 0], box[..., 1], box[..., 2], box[..., 3]
    all_rois, all_scores, nums = [], [], np.zeros(batch, np.int64)
    for n in range(batch):
        img_h, img_w = info[n, 0], info[n, 1]
        scale_h = info[n, 2]
        scale_w = info[n, 3] if info.shape[1] == 4 else info[n, 2]
        d = np.asarray(deltas[n], F32).reshape(count, 4, height, width).transpose(2, 3, 0, 1)  # [H, W, A, 4]
        score = np.asarray(scores[n], F32).transpose(1, 2, 0).reshape(total)
        with np.errstate(all="ignore"):
            min_h, min_w = F32(attrs.min_size) * scale_h, F32(attrs.min_size) * scale_w
            ww = ax1 - ax0 + offset
            hh = ay1 - ay0 + offset
            cx = d[..., 0] * ww + (ax0 + half * ww)
            cy = d[..., 1] * hh + (ay0 + half * hh)
            pw = np.exp(std_min(d[..., 2], MAX_DELTA_LOG)) * ww
            ph = np.exp(std_min(d[..., 3], MAX_DELTA_LOG)) * hh
            x0 = clip(cx - half * pw, img_w - offset)
            y0 = clip(cy - half * ph, img_h - offset)
            x1 = clip(cx + half * pw - offset, img_w - offset)
            y1 = clip(cy + half * ph - offset, img_h - offset)
            big = (min_w <= x1 - x0 + offset) & (min_h <= y1 - y0 + offset)
        boxes = np.stack([x0, y0, x1, y1], axis=-1).reshape(total, 4).astype(F32, copy=False)
        order = top_order(score, pre)
        kept = order[suppress(boxes[order], attrs.nms_threshold, float(offset), attrs.post_nms_count,
                              dead=~big.reshape(total)[order], eta=attrs.nms_eta)]
        all_rois.append(boxes[kept])
        all_scores.append(score[kept])
        nums[n] = kept.shape[0]
    if not all_rois:
        return np.zeros((0, 4), F32), np.zeros(0, F32), nums
    return np.concatenate(all_rois), np.concatenate(all_scores), nums
