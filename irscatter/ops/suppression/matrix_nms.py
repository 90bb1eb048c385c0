"""MatrixNonMaxSuppression-8 (type name MatrixNms): Matrix NMS (Wang et al., SOLOv2) of boxes
`[num_batches, num_boxes, 4]` (`x1, y1, x2, y2`) scored by `[num_batches, num_classes,
num_boxes]`, run for each batch element and each class but `background_class`:

1. the candidates are the boxes scoring above `score_threshold`, best first, at most
   `nms_top_k` of them;
2. X[i, j] is the IoU of candidates i and j, K[j] the largest IoU of candidate j with a
   better one (0 for the first); candidate i's score is multiplied by the smallest over the
   better candidates j of `exp((K[j]^2 - X[i, j]^2) * gaussian_sigma)` (`gaussian`) or
   `(1 - X[i, j]) / (1 - K[j])` (`linear`), and by no more than 1;
3. the boxes whose decayed score is above `post_threshold` are kept, at most `keep_top_k` per
   batch element (the best scores, then the lower class, then the lower box index).

Outputs: `selected_outputs` [count, 6] rows `class, decayed score, x1, y1, x2, y2` (of the
boxes' type), `selected_indices` [count, 1] (`batch * num_boxes + box`) and `valid_outputs`
[num_batches] (the count per batch element), both of `output_type`. The count depends on the
values: inference gives `[0..bound, 6]`, `[0..bound, 1]`, where bound is
`num_batches * min(num_classes * min(num_boxes, nms_top_k), keep_top_k)` as OpenVINO's shape
inference gives it (-1 counts as no limit; a dimension without an upper bound leaves the
count unbounded, as in OpenVINO, although nms_top_k or keep_top_k would bound it).

Order of the rows: each batch element's boxes by decayed score (descending, then class, then
box index) or, with `sort_result_type` classid, by class (then score descending, then box
index); with `sort_result_across_batch`, `score` sorts all rows by score (then batch, class,
box) and `classid` by class (then batch, score, box); `none` keeps the batch elements in order.

The attribute OpenVINO reads is `sort_result_type` (`classid`, `score`, `none`); the spec
page names it `sort_result` (`class`, `score`, `none`). Both are accepted; `sort_result_type`
wins when both are given.

The reference computes in f32 whatever the boxes' type (f16 and bf16 boxes are widened, the
outputs rounded back); f64 is computed in f64. The IoU is the reference's: 0 for boxes
apart (a gap on either axis, touching is not apart), the intersection
`(min x2 - max x1 + n) * (min y2 - max y1 + n)` and the area `(w + n) * (h + n)` with `n = 1`
when `normalized` is false, an inverted box (x2 < x1 or y2 < y1) having area 0; the ratio is
not clamped, so invalid boxes can give an IoU outside [0, 1] or a NaN. A NaN IoU neither
raises K nor lowers a decay (as the reference's std::max and std::min ignore it). The
`linear` decay is computed in f64 as `(1 - X) / (1 - K + 1e-10)` (the reference's guard
against K = 1) and rounded to f32.

Choices where the spec is silent, and departures of OpenVINO:
* Ties: equal scores go by box index (lower first). The reference and the CPU plugin pick the
  top candidates with an unstable partial sort, so their order of equal scores (which decides
  the decay) is that of their heap sort.
* A NaN score is not above any threshold, so it is never a candidate (the reference keeps it
  and sorts it in an undefined place).
* `nms_top_k` 0 selects nothing; the reference then reads past its empty candidate list and
  keeps one box per class.
* A batch element with no box selected ends the reference's batch loop, leaving the later
  elements' counts unset; irscatter goes on with them. The CPU plugin fails when no box at
  all is selected; irscatter gives the empty `[0, 6]`, `[0, 1]` outputs the spec describes.
* `sort_result_type` classid without `sort_result_across_batch`: the spec sorts each batch
  element's boxes by class; the reference and the CPU plugin leave them in score order.
  irscatter follows the spec.
"""

from __future__ import annotations

from typing import Annotated, Literal

import numpy as np

from irscatter import limits
from irscatter.errors import ExecutionError
from irscatter.ir.element_types import ElementType
from irscatter.ir.shapes import Dimension, PartialShape
from irscatter.ops.base import IRBool, Lower, Op, OpAttrs, TensorInfo, check
from irscatter.ops.common.numeric import compute_dtype, from_compute
from irscatter.ops.common.types import same_element_type
from irscatter.ops.registry import register

IndexType = Annotated[Literal["i32", "i64"], Lower]
NMS_FLOATS = (ElementType.f32, ElementType.f16, ElementType.bf16, ElementType.f64, ElementType.dynamic)
# rows of one candidate list compared at once in MatrixNms: the IoU block stays within a few MB
_BLOCK_ELEMENTS = 1 << 21


class NmsSortAttrs(OpAttrs):
    """What MatrixNms and MulticlassNms share: output order, limits and index type."""

    sort_result_type: Annotated[Literal["classid", "score", "none"], Lower] | None = None
    sort_result: Annotated[Literal["class", "score", "none"], Lower] = "none"
    sort_result_across_batch: IRBool = False
    output_type: IndexType = "i64"
    score_threshold: float = 0.0
    nms_top_k: int = -1
    keep_top_k: int = -1
    background_class: int = -1
    normalized: IRBool = True

    @property
    def order(self) -> str:
        """`classid`, `score` or `none`, from whichever of the two names the layer uses."""
        if self.sort_result_type is not None:
            return self.sort_result_type
        return "classid" if self.sort_result == "class" else self.sort_result


class MatrixNmsAttrs(NmsSortAttrs):
    decay_function: Annotated[Literal["gaussian", "linear"], Lower] = "linear"
    gaussian_sigma: float = 2.0
    post_threshold: float = 0.0


# --- shared by MatrixNms and MulticlassNms ------------------------------------------------------


def check_limits(op: Op) -> None:
    """nms_top_k, keep_top_k and background_class are -1 (no limit, no background) or more."""
    for name in ("nms_top_k", "keep_top_k", "background_class"):
        value = getattr(op.attrs, name)
        check(value >= -1, "nms-attribute-range", f"{name} must be -1 or more, found {value}", port=op.port(name))


def box_element_type(op: Op, boxes: TensorInfo, scores: TensorInfo) -> ElementType:
    for name, info in (("boxes", boxes), ("scores", scores)):
        check(info.etype in NMS_FLOATS, "float-type",
              f"{op.type_name} takes floating-point {name}, found {info.etype}", port=op.port(name))
    return same_element_type(boxes, scores, "boxes and scores must have one element type", "same-element-type",
                             op.port("scores"))


def selected_bound(per_class: Dimension, classes: Dimension, images: Dimension, attrs: NmsSortAttrs) -> Dimension:
    """How many boxes can be selected: per image, the boxes per class (capped by nms_top_k)
    times the classes, capped by keep_top_k; times the images. As in OpenVINO's shape
    inference, a factor without an upper bound leaves the count unbounded (although nms_top_k
    or keep_top_k would bound it)."""
    if per_class.max is None or classes.max is None or images.max is None:
        return Dimension.dynamic()
    top = per_class.max if attrs.nms_top_k < 0 else min(per_class.max, attrs.nms_top_k)
    per_image = top * classes.max
    if attrs.keep_top_k > -1:
        per_image = min(per_image, attrs.keep_top_k)
    return Dimension(min=0, max=per_image * images.max)


def output_infos(etype: ElementType, attrs: NmsSortAttrs, count: Dimension, images: Dimension) -> tuple:
    index = ElementType[attrs.output_type]
    return (TensorInfo(etype, PartialShape.of([count, 6])), TensorInfo(index, PartialShape.of([count, 1])),
            TensorInfo(index, PartialShape.of([images])))


def ordered_candidates(scores: np.ndarray, keep: np.ndarray, top_k: int) -> np.ndarray:
    """Positions of the candidates (`keep`), best score first, equal scores by position, at
    most `top_k` (-1: all)."""
    where = np.flatnonzero(keep)
    order = where[np.argsort(-scores[where], kind="stable")]
    return order if top_k < 0 else order[:top_k]


def assemble(attrs: NmsSortAttrs, images: int, etype: ElementType, batch: np.ndarray, cls: np.ndarray,
             box: np.ndarray, flat: np.ndarray, score: np.ndarray, rows: np.ndarray, *,
             port: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The three outputs from every detection of every image and class: `batch`, `cls`, `box`
    (the box's position within its image, for ties), `flat` (the selected index), `score`
    (compute dtype) and `rows` ([n, 4] boxes). Applies keep_top_k and the output order."""
    by_score = np.lexsort((box, cls, -score, batch))  # per image: best score, lower class, lower box
    b = batch[by_score]
    starts = np.searchsorted(b, np.arange(images))
    rank = np.arange(len(b)) - starts[b] if len(b) else np.zeros(0, np.int64)
    chosen = by_score[rank < attrs.keep_top_k] if attrs.keep_top_k > -1 else by_score
    order = attrs.order
    if attrs.sort_result_across_batch and order == "score":
        chosen = chosen[np.lexsort((box[chosen], cls[chosen], batch[chosen], -score[chosen]))]
    elif attrs.sort_result_across_batch and order == "classid":
        chosen = chosen[np.lexsort((box[chosen], -score[chosen], batch[chosen], cls[chosen]))]
    elif order == "classid":
        chosen = chosen[np.lexsort((box[chosen], -score[chosen], cls[chosen], batch[chosen]))]
    count = len(chosen)
    limits.check_allocation((count, 6), 8, port)
    outputs = np.empty((count, 6), score.dtype)
    outputs[:, 0] = cls[chosen]
    outputs[:, 1] = score[chosen]
    outputs[:, 2:] = rows[chosen]
    index = ElementType[attrs.output_type].dtype
    valid = np.bincount(batch[chosen], minlength=images).astype(index)
    return from_compute(outputs, etype), flat[chosen].astype(index).reshape(count, 1), valid


def empty_detections(dtype: np.dtype) -> list:
    return [np.zeros(0, np.int64)] * 4 + [np.zeros(0, dtype), np.zeros((0, 4), dtype)]


# --- MatrixNms ------------------------------------------------------------------------------------


def _matrix_iou(later: np.ndarray, earlier: np.ndarray, normalized: bool) -> np.ndarray:
    """IoU of each of `later` ([B, 4]) with each of `earlier` ([n, 4]) as the Matrix NMS
    reference defines it (see the module doc), [B, n]."""
    dtype = later.dtype
    one = dtype.type(0 if normalized else 1)
    a, b = later[:, None, :], earlier[None, :, :]
    apart = (b[..., 0] > a[..., 2]) | (b[..., 2] < a[..., 0]) | (b[..., 1] > a[..., 3]) | (b[..., 3] < a[..., 1])
    width = np.minimum(a[..., 2], b[..., 2]) - np.maximum(a[..., 0], b[..., 0]) + one
    height = np.minimum(a[..., 3], b[..., 3]) - np.maximum(a[..., 1], b[..., 1]) + one
    inter = width * height

    def area(boxes):
        w, h = boxes[:, 2] - boxes[:, 0], boxes[:, 3] - boxes[:, 1]
        inverted = (boxes[:, 2] < boxes[:, 0]) | (boxes[:, 3] < boxes[:, 1])
        return np.where(inverted, dtype.type(0), (w + one) * (h + one))

    with np.errstate(all="ignore"):
        ratio = inter / (area(later)[:, None] + area(earlier)[None, :] - inter)
    return np.where(apart, dtype.type(0), ratio)


def matrix_decay(boxes: np.ndarray, scores: np.ndarray, *, gaussian: bool, sigma: float,
                 normalized: bool) -> np.ndarray:
    """The decayed scores of candidates already in order (best first). The IoU table is built
    in blocks of rows, twice (once for each candidate's largest IoU, once for the decays), so
    memory stays bounded however many candidates there are."""
    n = len(scores)
    dtype = scores.dtype
    block = max(1, _BLOCK_ELEMENTS // max(n, 1))
    largest = np.zeros(n, dtype)
    for start in range(0, n, block):
        stop = min(n, start + block)
        iou = _matrix_iou(boxes[start:stop], boxes[:stop], normalized)
        below = np.arange(stop)[None, :] < np.arange(start, stop)[:, None]
        largest[start:stop] = np.fmax.reduce(np.where(below, iou, dtype.type(0)), axis=1, initial=dtype.type(0))
    decay = np.ones(n, dtype)
    sig = dtype.type(np.float32(sigma))
    guard = np.float64(np.float32(1e-10))
    for start in range(0, n, block):
        stop = min(n, start + block)
        iou = _matrix_iou(boxes[start:stop], boxes[:stop], normalized)
        k = largest[None, :stop]
        with np.errstate(all="ignore"):
            if gaussian:
                factor = np.exp((k * k - iou * iou) * sig)
            else:
                factor = ((1.0 - iou.astype(np.float64)) / (1.0 - k.astype(np.float64) + guard)).astype(dtype)
        below = np.arange(stop)[None, :] < np.arange(start, stop)[:, None]
        decay[start:stop] = np.fmin.reduce(np.where(below, factor, dtype.type(1)), axis=1, initial=dtype.type(1))
    return decay * scores


@register("MatrixNms", 8)
class MatrixNms(Op):
    Attrs = MatrixNmsAttrs
    attrs: MatrixNmsAttrs
    inputs = ("boxes", "scores")
    outputs = 3

    def infer(self, boxes: TensorInfo, scores: TensorInfo) -> tuple[TensorInfo, ...]:
        etype = box_element_type(self, boxes, scores)
        check_limits(self)
        bs, ss = boxes.shape, scores.shape
        if bs.rank_is_static:
            check(bs.rank == 3 and bs[2].compatible(Dimension.static(4)), "nms-boxes-shape",
                  f"boxes must be [num_batches, num_boxes, 4], found {bs}", port=self.port("boxes"))
        if ss.rank_is_static:
            check(ss.rank == 3, "nms-scores-shape", f"scores must be [num_batches, num_classes, num_boxes], found {ss}",
                  port=self.port("scores"))
        if bs.rank_is_static and ss.rank_is_static:
            check(bs[0].compatible(ss[0]) and bs[1].compatible(ss[2]), "nms-scores-shape",
                  f"scores {ss} do not match boxes {bs} (batches, then boxes, must agree)", port=self.port("scores"))
        images = bs[0] if bs.rank_is_static else Dimension.dynamic()
        if boxes.value is not None and scores.value is not None:
            out = self.compute(np.asarray(boxes.value), np.asarray(scores.value))
            return output_infos(etype, self.attrs, Dimension.static(len(out[0])), images)
        if bs.rank_is_static and ss.rank_is_static:
            count = selected_bound(bs[1], ss[1], ss[0], self.attrs)
        else:
            count = Dimension.dynamic()
        return output_infos(etype, self.attrs, count, images)

    def compute(self, boxes: np.ndarray, scores: np.ndarray) -> tuple[np.ndarray, ...]:
        if boxes.shape[0] != scores.shape[0] or boxes.shape[1] != scores.shape[2]:
            raise ExecutionError(f"scores {list(scores.shape)} do not match boxes {list(boxes.shape)}",
                                 port=self.port("scores"), label="nms-scores-shape")
        a = self.attrs
        etype = ElementType.from_dtype(boxes.dtype)
        dtype = compute_dtype(etype)
        data = boxes.astype(dtype)
        marks = scores.astype(dtype)
        images, classes, _ = scores.shape
        found = []
        for n in range(images):
            for c in range(classes):
                if c == a.background_class:
                    continue
                order = ordered_candidates(marks[n, c], marks[n, c] > dtype.type(np.float32(a.score_threshold)),
                                           a.nms_top_k)
                if not len(order):
                    continue
                decayed = matrix_decay(data[n, order], marks[n, c, order], gaussian=a.decay_function == "gaussian",
                                       sigma=a.gaussian_sigma, normalized=a.normalized)
                kept = decayed > dtype.type(np.float32(a.post_threshold))
                picked = order[kept]
                found.append((np.full(len(picked), n), np.full(len(picked), c), picked,
                              n * boxes.shape[1] + picked, decayed[kept], data[n, picked]))
        parts = [np.concatenate(p) for p in zip(*found)] if found else empty_detections(dtype)
        return assemble(a, images, etype, *parts, port="output 0")
