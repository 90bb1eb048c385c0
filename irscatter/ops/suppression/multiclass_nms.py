"""MulticlassNonMaxSuppression-8 and -9 (type name MulticlassNms): greedy NMS of boxes
(`x1, y1, x2, y2`) run for each image and each class but `background_class`, with the
outputs, limits and order of MatrixNms (see `matrix_nms`).

For each image and class: the candidates are the boxes scoring at least `score_threshold`,
best first (equal scores by box index, lower first), at most `nms_top_k` of them. Then, as the
spec's algorithm has it, with `adaptive_threshold = iou_threshold`: the best remaining box is
kept; if `nms_eta < 1` and `adaptive_threshold > 0.5`, `adaptive_threshold *= nms_eta` (in
f32); every remaining box whose IoU with the kept one is above `adaptive_threshold` is
suppressed; repeat. The IoU is the usual one, with widths and heights `+1` when `normalized`
is false, and 0 when either box has no positive area. Then at most `keep_top_k` boxes per
image (best score, lower class, lower box index first).

Inputs: -8 takes `boxes` [num_batches, num_boxes, 4] shared by the classes and `scores`
[num_batches, num_classes, num_boxes]. -9 takes these, or `boxes` [num_classes, num_boxes, 4]
and `scores` [num_classes, num_boxes] with `roisnum` [num_batches] (i32 or i64): image i owns
the next `roisnum[i]` boxes of each class. In that form a selected index is
`(first box of the image + box) * num_classes + class`, the position in a
[num_boxes, num_classes] layout, as the reference computes it (the spec only says "in the
flattened boxes"). `roisnum` values must be >= 0 and sum to at most num_boxes (an error at run
time otherwise; the spec says they sum to num_boxes, the reference reads past the end or skips
negative counts).

Computed in f32 for f16, bf16 and f32 boxes, as the reference does; f64 in f64.

Departures of OpenVINO (its core reference and CPU plugin agree on each) from the spec, which
irscatter follows:
* A box is suppressed when its IoU is above the threshold (the spec's step 8); OpenVINO
  suppresses it when the IoU reaches the threshold, so with the default `iou_threshold` 0 it
  keeps one box per class (every IoU is >= 0).
* With `nms_eta < 1` the spec suppresses with the threshold of the moment each box is kept;
  OpenVINO compares each candidate with every kept box at the threshold of the moment the
  candidate comes up, which is lower when it has decreased since.
* OpenVINO's reference, for a candidate scoring exactly `score_threshold`, compares it with the
  last kept box only (it stops when the score is not above the threshold).
* Equal decayed scores within 1e-6 of each other count as ties in OpenVINO's per-image sort;
  irscatter compares the scores exactly.
* A NaN score is not at least any threshold, so it is never a candidate.
* `nms_top_k` 0 selects nothing (the CPU plugin leaves its outputs undefined).
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from irscatter.errors import ExecutionError
from irscatter.ir.element_types import ElementType
from irscatter.ir.shapes import Dimension
from irscatter.ops.base import Op, TensorInfo, check
from irscatter.ops.common.boxes import greedy_keep, iou
from irscatter.ops.common.numeric import compute_dtype
from irscatter.ops.registry import register
from irscatter.ops.suppression.matrix_nms import (
    NmsSortAttrs,
    assemble,
    box_element_type,
    check_limits,
    empty_detections,
    ordered_candidates,
    output_infos,
    selected_bound,
)


class MulticlassNmsAttrs(NmsSortAttrs):
    iou_threshold: float = 0.0
    nms_eta: float = 1.0


def adaptive_keep(boxes: np.ndarray, threshold: float, eta: float, offset: float) -> np.ndarray:
    """Greedy NMS over boxes in priority order whose threshold shrinks by `eta` after each
    kept box while it is above 0.5; positions of the kept boxes, ascending."""
    f32 = np.float32
    thr, eta32 = f32(threshold), f32(eta)
    alive = np.ones(len(boxes), bool)
    kept = []
    position = 0
    while position < len(boxes):
        kept.append(position)
        if eta32 < 1 and thr > 0.5:
            thr = f32(thr * eta32)
        rest = np.flatnonzero(alive[position + 1:]) + position + 1
        if rest.size:
            overlap = iou(boxes[position], boxes[rest], offset)
            alive[rest[overlap > boxes.dtype.type(thr)]] = False
        following = np.flatnonzero(alive[position + 1:])
        if not following.size:
            break
        position = position + 1 + int(following[0])
    return np.asarray(kept, dtype=np.int64)


@register("MulticlassNms", 8)
class MulticlassNms(Op):
    Attrs = MulticlassNmsAttrs
    attrs: MulticlassNmsAttrs
    inputs: ClassVar[tuple[str, ...]] = ("boxes", "scores")  # -9 adds roisnum
    outputs = 3

    def check_attrs(self) -> None:
        check_limits(self)
        eta = self.attrs.nms_eta
        check(0.0 <= eta <= 1.0, "nms-attribute-range", f"nms_eta must lie in [0, 1], found {eta}",
              port=self.port("nms_eta"))

    def infer(self, boxes: TensorInfo, scores: TensorInfo, roisnum: TensorInfo | None = None) -> tuple[TensorInfo, ...]:
        etype = box_element_type(self, boxes, scores)
        self.check_attrs()
        bs, ss = boxes.shape, scores.shape
        shared = roisnum is None
        if bs.rank_is_static:
            check(bs.rank == 3 and bs[2].compatible(Dimension.static(4)), "nms-boxes-shape",
                  f"boxes must be [{'num_batches' if shared else 'num_classes'}, num_boxes, 4], found {bs}",
                  port=self.port("boxes"))
        if ss.rank_is_static:
            want = 3 if shared else 2
            check(ss.rank == want, "nms-scores-shape",
                  f"scores must be {'[num_batches, num_classes, num_boxes]' if shared else '[num_classes, num_boxes]'}"
                  f"{'' if shared else ' with roisnum'}, found {ss}", port=self.port("scores"))
        if roisnum is not None:  # only -9 takes roisnum
            _check_roisnum(self, roisnum)
        if bs.rank_is_static and ss.rank_is_static:
            last = ss[2] if shared else ss[1]
            check(bs[0].compatible(ss[0]) and bs[1].compatible(last), "nms-scores-shape",
                  f"scores {ss} do not match boxes {bs}", port=self.port("scores"))
        if roisnum is None:
            images = bs[0] if bs.rank_is_static else Dimension.dynamic()
        else:
            images = roisnum.shape[0] if roisnum.shape.rank_is_static else Dimension.dynamic()
        inputs = (boxes, scores) if roisnum is None else (boxes, scores, roisnum)
        if all(i.value is not None for i in inputs):
            out = self.compute(*(np.asarray(i.value) for i in inputs))
            return output_infos(etype, self.attrs, Dimension.static(len(out[0])), images)
        count = Dimension.dynamic()
        if bs.rank_is_static and ss.rank_is_static and (roisnum is None or roisnum.shape.rank_is_static):
            count = selected_bound(bs[1], ss[1] if shared else bs[0], images, self.attrs)
        return output_infos(etype, self.attrs, count, images)

    def _select(self, boxes: np.ndarray, scores: np.ndarray) -> np.ndarray:
        """Positions of the boxes kept for one image and class, best first."""
        a = self.attrs
        order = ordered_candidates(scores, scores >= scores.dtype.type(np.float32(a.score_threshold)), a.nms_top_k)
        if not len(order):
            return order
        offset = 0.0 if a.normalized else 1.0
        if np.float32(a.nms_eta) < 1:
            kept = adaptive_keep(boxes[order], a.iou_threshold, a.nms_eta, offset)
        else:
            kept = greedy_keep(boxes[order], float(np.float32(a.iou_threshold)), offset=offset)
        return order[kept]

    def compute(self, boxes: np.ndarray, scores: np.ndarray, roisnum: np.ndarray | None = None) -> tuple:
        shared = roisnum is None
        last = scores.shape[2] if shared else scores.shape[1]
        if boxes.shape[0] != scores.shape[0] or boxes.shape[1] != last:
            raise ExecutionError(f"scores {list(scores.shape)} do not match boxes {list(boxes.shape)}",
                                 port=self.port("scores"), label="nms-scores-shape")
        etype = ElementType.from_dtype(boxes.dtype)
        dtype = compute_dtype(etype)
        data, marks = boxes.astype(dtype), scores.astype(dtype)
        found = []
        if shared:
            images, classes = scores.shape[0], scores.shape[1]
            for n in range(images):
                for c in range(classes):
                    if c != self.attrs.background_class:
                        picked = self._select(data[n], marks[n, c])
                        found.append((n, c, picked, n * boxes.shape[1] + picked, marks[n, c, picked], data[n, picked]))
        else:
            counts = [int(v) for v in np.asarray(roisnum).reshape(-1)]
            if any(v < 0 for v in counts) or sum(counts) > boxes.shape[1]:
                raise ExecutionError(f"roisnum {counts} must be counts >= 0 summing to at most the {boxes.shape[1]} "
                                     f"boxes", port=self.port("roisnum"), label="roisnum-value")
            images, classes = len(counts), boxes.shape[0]
            head = 0
            for n, size in enumerate(counts):
                for c in range(classes):
                    if c != self.attrs.background_class and size:
                        picked = self._select(data[c, head:head + size], marks[c, head:head + size])
                        found.append((n, c, picked, (head + picked) * classes + c, marks[c, head + picked],
                                      data[c, head + picked]))
                head += size
        if found:
            parts = [np.concatenate([np.full(len(f[2]), f[0]) for f in found]),
                     np.concatenate([np.full(len(f[2]), f[1]) for f in found]),
                     *(np.concatenate([f[k] for f in found]) for k in range(2, 6))]
        else:
            parts = empty_detections(dtype)
        return assemble(self.attrs, images, etype, *parts, port="output 0")


@register("MulticlassNms", 9)
class MulticlassNms9(MulticlassNms):
    labels = {"roisnum-value": "a MulticlassNms roisnum value is negative, or the values sum to more than "
                               "the number of boxes"}

    inputs = ("boxes", "scores", "roisnum")
    optional_inputs = 1


def _check_roisnum(op: MulticlassNms, roisnum: TensorInfo) -> None:
    check(roisnum.etype in (ElementType.i32, ElementType.i64, ElementType.dynamic), "index-type",
          f"roisnum must be i32 or i64, found {roisnum.etype}", port=op.port("roisnum"))
    if roisnum.shape.rank_is_static:
        check(roisnum.shape.rank == 1, "index-rank", f"roisnum must be a 1-D tensor, found {roisnum.shape}",
              port=op.port("roisnum"))
