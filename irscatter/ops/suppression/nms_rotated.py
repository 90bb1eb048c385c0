"""NMSRotated-13: greedy non-maximum suppression of rotated boxes, class by class within each
batch element.

Inputs (all five required): boxes [num_batches, num_boxes, 5] as `[x_center, y_center, width,
height, angle]` (angle in radians), scores [num_batches, num_classes, num_boxes] (f32, f16 or
bf16), max_output_boxes_per_class (any integer type, >= 0), iou_threshold and score_threshold
(f32, f16 or bf16), each a scalar or a 1-element 1-D tensor.

The selection is NonMaxSuppression-9's without soft NMS (see `non_max_suppression`), computed in
f32: candidates have score >= score_threshold (the spec's "greater or equal than
score_threshold"; OpenVINO's reference and CPU plugin take only scores > score_threshold), taken
by score descending then box index ascending; a candidate is removed when its rotated IoU with a
selected box is > iou_threshold (the spec's func(rotated_iou) = 1 if rotated_iou <=
iou_threshold else 0; the reference and CPU plugin agree, so a threshold of 0 keeps disjoint
boxes); a class stops at max_output_boxes_per_class boxes.

Rotated IoU: the corners are the reference's, in f32: with c = cos(angle) / 2 and s = sin(angle)
/ 2 (angle negated when `clockwise` is false: the spec's positive angle is then
counterclockwise), the first corner is (x - s*h - c*w, y + c*h - s*w), the second (x + s*h -
c*w, y - c*h - s*w), and the other two mirror them through the center. The intersection is the
convex polygon of the edge crossings and of each box's corners inside the other; its area
(shoelace, in f64 around the polygon's centroid) is rounded to f32, and IoU = intersection /
(area1 + area2 - intersection) in f32 with area = width * height. The reference sorts the points
with a Graham scan in f32, so the IoU may differ from it by a few ulps, which matters only for
an IoU within that of iou_threshold. A box of zero or negative area, or with a NaN, has IoU 0.

Outputs as NonMaxSuppression-9's: selected_indices [n, 3] and valid_outputs [1] of
`output_type`, selected_scores [n, 3] of the thresholds' type (OpenVINO: always f32); with
sort_result_descending, sorted across batches and classes by score descending, then batch,
class and box index (the reference reverses the list instead).
"""

from __future__ import annotations

import numpy as np

from irscatter.ir.element_types import ElementType
from irscatter.ops.base import IRBool, Op, OpAttrs, TensorInfo
from irscatter.ops.common.boxes import greedy_walk
from irscatter.ops.registry import register
from irscatter.ops.suppression.non_max_suppression import (
    F32,
    Geometry,
    IndexType,
    Rule,
    as_f32,
    check_nms_inputs,
    dynamic_outputs,
    max_boxes,
    pack_outputs,
    read_scalar,
    suppress,
    threshold_type,
)


class NMSRotatedAttrs(OpAttrs):
    sort_result_descending: IRBool = True
    output_type: IndexType = "i64"
    clockwise: IRBool = True


def rotated_corners(boxes: np.ndarray, clockwise: bool) -> np.ndarray:
    """[..., 4, 2] f32 corners of [..., 5] f32 boxes, as the reference places them."""
    x, y, w, h, angle = (boxes[..., k] for k in range(5))
    theta = angle.astype(np.float64) * (1 if clockwise else -1)
    with np.errstate(invalid="ignore", over="ignore"):
        c = np.cos(theta).astype(F32) * F32(0.5)
        s = np.sin(theta).astype(F32) * F32(0.5)
        p0 = np.stack([x - s * h - c * w, y + c * h - s * w], axis=-1)
        p1 = np.stack([x + s * h - c * w, y - c * h - s * w], axis=-1)
        center = np.stack([x, y], axis=-1)
        p2 = F32(2) * center - p0
        p3 = F32(2) * center - p1
    return np.stack([p0, p1, p2, p3], axis=-2)


def _cross(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return a[..., 0] * b[..., 1] - b[..., 0] * a[..., 1]


def _inside(points: np.ndarray, rect: np.ndarray) -> np.ndarray:
    """Which of `points` [M, 4, 2] lie in the rectangles `rect` [M, 4, 2] (edges included)."""
    ab = rect[:, 1] - rect[:, 0]
    da = rect[:, 0] - rect[:, 3]
    ap = points - rect[:, None, 0]
    along = np.einsum("mkd,md->mk", ap, ab)
    across = -np.einsum("mkd,md->mk", ap, da)
    return ((along >= 0) & (across >= 0) & (along <= np.einsum("md,md->m", ab, ab)[:, None])
            & (across <= np.einsum("md,md->m", da, da)[:, None]))


def intersection_areas(first: np.ndarray, second: np.ndarray) -> np.ndarray:
    """The areas (f64) of the overlaps of rectangles `first` and `second` ([M, 4, 2] corners
    each, in order around the rectangle), pair by pair."""
    with np.errstate(all="ignore"):  # NaN and infinite corners: their pairs come out 0
        return _intersection_areas(first.astype(np.float64), second.astype(np.float64))


def _intersection_areas(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    dp, dq = np.roll(p, -1, axis=1) - p, np.roll(q, -1, axis=1) - q
    # every edge of p against every edge of q: [M, edge of p, edge of q]
    det = _cross(dq[:, None, :, :], dp[:, :, None, :])
    gap = q[:, None, :, :] - p[:, :, None, :]
    t1 = _cross(dq[:, None, :, :], gap) / det
    t2 = _cross(dp[:, :, None, :], gap) / det
    crossing = (np.abs(det) > 1e-14) & (t1 >= 0) & (t1 <= 1) & (t2 >= 0) & (t2 <= 1)
    where = p[:, :, None, :] + dp[:, :, None, :] * t1[..., None]
    m = p.shape[0]
    points = np.concatenate([where.reshape(m, 16, 2), p, q], axis=1)
    valid = np.concatenate([crossing.reshape(m, 16), _inside(p, q), _inside(q, p)], axis=1)
    count = valid.sum(axis=1)
    # the overlap is convex: its points in angle order around their centroid trace it
    centroid = np.where(valid[..., None], points, 0).sum(axis=1) / np.maximum(count, 1)[:, None]
    rel = points - centroid[:, None, :]
    angle = np.where(valid, np.arctan2(rel[..., 1], rel[..., 0]), np.inf)
    order = np.argsort(angle, axis=1, kind="stable")
    ring = np.take_along_axis(rel, order[..., None], axis=1)
    ring = np.where(np.take_along_axis(valid, order, axis=1)[..., None], ring, ring[:, :1])  # close the ring
    area = np.abs(_cross(ring, np.roll(ring, -1, axis=1)).sum(axis=1)) / 2
    return np.where(count >= 3, area, 0.0)


class RotatedBoxes(Geometry):
    def __init__(self, boxes: np.ndarray, clockwise: bool) -> None:
        self.corners = rotated_corners(boxes, clockwise)
        with np.errstate(over="ignore", invalid="ignore"):
            self.areas = boxes[:, 2] * boxes[:, 3]
            self.centers = boxes[:, 0:2].astype(np.float64)
            self.radii = np.hypot(boxes[:, 2].astype(np.float64), boxes[:, 3].astype(np.float64)) / 2

    def overlap(self, i: int, js: np.ndarray) -> np.ndarray:
        # only boxes whose circumscribed circles meet can overlap (a NaN keeps a pair out: IoU 0)
        with np.errstate(invalid="ignore", over="ignore"):
            gap = self.centers[js] - self.centers[i]
            near = (gap * gap).sum(axis=1) <= (self.radii[js] + self.radii[i]) ** 2 * 1.0001
        inter = np.zeros(js.size, F32)
        close = js[near]
        inter[near] = intersection_areas(np.broadcast_to(self.corners[i], (close.size, 4, 2)),
                                         self.corners[close]).astype(F32)
        mine, theirs = self.areas[i], self.areas[js]
        with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
            union = mine + theirs - inter
            ratio = inter / union
        return np.where((mine > 0) & (theirs > 0) & (union > 0), ratio, F32(0)).astype(F32)

    def greedy(self, order: np.ndarray, threshold: np.float32, limit: int) -> np.ndarray:
        return greedy_walk(order.size, lambda p, rest: self.overlap(int(order[p]), order[rest]), threshold,
                           limit=limit)


@register("NMSRotated", 13)
class NMSRotated(Op):
    Attrs = NMSRotatedAttrs
    attrs: NMSRotatedAttrs
    inputs = ("boxes", "scores", "max_output_boxes_per_class", "iou_threshold", "score_threshold")
    outputs = 3

    def infer(self, *infos: TensorInfo) -> tuple[TensorInfo, ...]:
        check_nms_inputs(self, list(infos), box_size=5, vector_ok=True)
        return dynamic_outputs(self, list(infos), ElementType[self.attrs.output_type], threshold_type(list(infos)),
                               lambda: self.compute(*(np.asarray(i.value) for i in infos)))  # all known here

    def compute(self, boxes: np.ndarray, scores: np.ndarray, max_output_boxes_per_class: np.ndarray,
                iou_threshold: np.ndarray, score_threshold: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        limit = max_boxes(self, max_output_boxes_per_class)
        rule = Rule(read_scalar(self, "iou_threshold", iou_threshold, 0.0),
                    read_scalar(self, "score_threshold", score_threshold, 0.0), 0.0, soft_ignores_iou=False)
        data = as_f32(boxes)
        geometries = [RotatedBoxes(data[b], self.attrs.clockwise) for b in range(data.shape[0])]
        triplets, found = suppress(geometries, as_f32(scores), limit, rule, self.attrs.sort_result_descending)
        return pack_outputs(triplets, found, ElementType[self.attrs.output_type],
                            ElementType.from_dtype(np.asarray(iou_threshold).dtype))
