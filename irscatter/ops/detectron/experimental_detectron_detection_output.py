"""ExperimentalDetectronDetectionOutput-6: the final detections of a Mask R-CNN head, from ROIs
[N, 4] (x0, y0, x1, y1), class box deltas [N, num_classes * 4], class scores [N, num_classes] and
im_info [1, 3] (image height, width, scale).

Outputs: boxes [max_detections_per_image, 4] (the ROIs' type), classes [max_detections_per_image]
(i32, as OpenVINO gives) and scores [max_detections_per_image] (the ROIs' type); rows past the
detections found are zeros.

Steps, in f32 as OpenVINO computes (f16 and bf16 rounded once at the end, f64 from f32 results):
1. a ROI whose x1 - x0 or y1 - y0 is at most 0 yields nothing; each other ROI (NaN ones too, as in
   OpenVINO; a NaN corner clips to 0) is moved, for
   every class but class 0 (the background, never reported), by that class's deltas divided by
   `deltas_weights` (Caffe2's transform with inclusive pixel sizes, the +1; d_log_w and d_log_h
   clamped to `max_delta_log_wh`);
2. the boxes are clipped to the image: x to [0, width - 1], y to [0, height - 1];
3. per class, boxes whose score exceeds `score_threshold` go through NMS, highest score first
   (equal scores: lower ROI index first): a box is dropped when its IoU with a kept box (areas
   with the +1; boxes that do not touch overlap 0) exceeds `nms_threshold`; at most
   `post_nms_count` are kept per class;
4. the detections, listed class by class in ascending class order, are output as they are when
   there are at most `max_detections_per_image`; else the `max_detections_per_image` of highest
   score, sorted by score, then ROI index, then class (the reference leaves this last tie open).

`class_agnostic_box_regression` is accepted and changes nothing, as in OpenVINO: the spec's
"removes predictions for background classes" is what step 1 always does.

Departure of OpenVINO from the spec: its reference and its CPU plugin clip the boxes at 0 only,
never at the image's width and height; irscatter clips to the image as the spec's step 3 says.
(The core reference also reads `max_detections_per_image` ROIs whatever N is; the plugin reads N.)
"""

from __future__ import annotations

import numpy as np
from pydantic import Field

from irscatter.ir.element_types import ElementType
from irscatter.ir.shapes import Dimension, PartialShape
from irscatter.limits import check_inferred
from irscatter.ops.base import FloatList, IRBool, Op, OpAttrs, TensorInfo, check
from irscatter.ops.common.numeric import from_compute
from irscatter.ops.detectron.core import (
    F32,
    descending,
    f32_clamp,
    float_inputs,
    greedy_covered,
    itemsize,
    ranked,
    refine,
)
from irscatter.ops.registry import register


class DetectionOutputAttrs(OpAttrs):
    score_threshold: float
    nms_threshold: float
    num_classes: int = Field(ge=0)
    post_nms_count: int = Field(ge=0)
    max_detections_per_image: int = Field(ge=0)
    class_agnostic_box_regression: IRBool = False
    max_delta_log_wh: float
    deltas_weights: FloatList


def detection_output(rois: np.ndarray, deltas: np.ndarray, scores: np.ndarray, im_info: np.ndarray,
                     attrs: DetectionOutputAttrs) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The f32 boxes, i32 classes and f32 scores of the op; see the module doc."""
    n, classes = scores.shape
    limit = attrs.max_detections_per_image
    boxes = rois.astype(F32)
    im = im_info.astype(F32).reshape(-1)
    valid = ~((boxes[:, 2] - boxes[:, 0] <= 0) | (boxes[:, 3] - boxes[:, 1] <= 0))  # a NaN ROI is refined
    weights = np.asarray(attrs.deltas_weights[:4], F32)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        moves = deltas.astype(F32).reshape(n, classes, 4) / weights
        moved = refine(boxes[:, None, :], moves, F32(attrs.max_delta_log_wh), 1.0)  # [n, classes, 4]
    moved[..., 0::2] = f32_clamp(moved[..., 0::2], im[1] - F32(1))
    moved[..., 1::2] = f32_clamp(moved[..., 1::2], im[0] - F32(1))
    with np.errstate(invalid="ignore", over="ignore"):
        box_areas = (moved[..., 2] - moved[..., 0] + F32(1)) * (moved[..., 3] - moved[..., 1] + F32(1))
    moved[~valid] = 0
    box_areas[~valid] = 0
    refined = np.where(valid[:, None], scores.astype(F32), F32(0))
    threshold = F32(attrs.score_threshold)
    found_class, found_roi = [], []
    for c in range(1, classes):
        candidates = np.flatnonzero(refined[:, c] > threshold)
        order = candidates[descending(refined[candidates, c])]
        kept = order[greedy_covered(moved[order, c], box_areas[order, c], F32(attrs.nms_threshold),
                                    attrs.post_nms_count)]
        found_roi.append(kept)
        found_class.append(np.full(kept.size, c, np.int64))
    which = np.concatenate(found_roi) if found_roi else np.zeros(0, np.int64)
    cls = np.concatenate(found_class) if found_class else np.zeros(0, np.int64)
    found = refined[which, cls]
    if which.size > limit:
        pick = np.lexsort((which, -found.astype(np.float64)))[:limit]  # stable: ties keep class order
        which, cls, found = which[pick], cls[pick], found[pick]
    out_boxes = np.zeros((limit, 4), F32)
    out_classes = np.zeros(limit, np.int32)
    out_scores = np.zeros(limit, F32)
    out_boxes[: which.size] = moved[which, cls]
    out_classes[: which.size] = cls
    out_scores[: which.size] = found
    return out_boxes, out_classes, out_scores


@register("ExperimentalDetectronDetectionOutput", 6)
class ExperimentalDetectronDetectionOutput(Op):
    labels = {
        "detection-output-shape": "the ROIs are not [N, 4], the deltas not [N, num_classes * 4], the scores not "
                                  "[N, num_classes], or im_info not [1, 3]",
        "deltas-weights": "deltas_weights does not hold 4 numbers",
    }

    Attrs = DetectionOutputAttrs
    attrs: DetectionOutputAttrs
    inputs = ("input_rois", "input_deltas", "input_scores", "input_im_info")
    outputs = 3

    def infer(self, rois: TensorInfo, deltas: TensorInfo, scores: TensorInfo,
              im_info: TensorInfo) -> tuple[TensorInfo, ...]:
        etype = float_inputs(self, [rois, deltas, scores, im_info], list(self.inputs))
        classes = self.attrs.num_classes
        check(len(self.attrs.deltas_weights) == 4, "deltas-weights",
              f"deltas_weights must hold 4 numbers, found {len(self.attrs.deltas_weights)}",
              port=self.port("deltas_weights"))
        r = ranked(self, rois, "input_rois", 2, "detection-output-shape", last=4)
        d = ranked(self, deltas, "input_deltas", 2, "detection-output-shape", last=4 * classes)
        s = ranked(self, scores, "input_scores", 2, "detection-output-shape", last=classes)
        i = ranked(self, im_info, "input_im_info", 2, "detection-output-shape", last=3)
        if i is not None:
            check(i[0].compatible(Dimension.static(1)), "detection-output-shape",
                  f"im_info must be [1, 3], found {i}", port=self.port("input_im_info"))
        known = [x for x in (r, d, s) if x is not None]
        for x, name in zip((r, d, s), self.inputs):
            if x is not None:
                check(all(x[0].compatible(y[0]) for y in known), "detection-output-shape",
                      f"the ROIs, deltas and scores must have as many rows, {name} has {x[0]}", port=self.port(name))
        m = self.attrs.max_detections_per_image
        check_inferred((m, 4), itemsize(etype), "output 0")
        return (TensorInfo(etype, PartialShape.of([m, 4])), TensorInfo(ElementType.i32, PartialShape.of([m])),
                TensorInfo(etype, PartialShape.of([m])))

    def compute(self, rois: np.ndarray, deltas: np.ndarray, scores: np.ndarray,
                im_info: np.ndarray) -> tuple[np.ndarray, ...]:
        etype = ElementType.from_dtype(rois.dtype)
        boxes, classes, found = detection_output(rois, deltas, scores, im_info, self.attrs)
        return from_compute(boxes, etype), classes, from_compute(found, etype)
