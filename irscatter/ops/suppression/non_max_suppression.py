"""NonMaxSuppression-1, -3, -4, -5 and -9: greedy (and, from -5 on, soft) non-maximum suppression
of axis-aligned boxes, class by class within each batch element.

Inputs: boxes [num_batches, num_boxes, 4] and scores [num_batches, num_classes, num_boxes] (f32,
f16 or bf16: the types OpenVINO's op and reference take; the spec's "floating-point" would let
f64 in, which neither takes), then optionally max_output_boxes_per_class (any integer type,
default 0: select nothing), iou_threshold, score_threshold and, from -5 on, soft_nms_sigma (f32,
f16 or bf16, default 0). -1, -3 and -4 take the optional inputs as scalars; -5 and -9 also as
1-element 1-D tensors. A box is `[y1, x1, y2, x2]` with either diagonal pair of corners
(`box_encoding="corner"`) or `[x_center, y_center, width, height]` ("center").

Everything is computed in f32, as OpenVINO's reference does (narrower inputs widen exactly).
Per class, the candidates are the boxes whose score is >= score_threshold, taken in the order of
a priority queue keyed on (score descending, box index ascending): equal scores go to the lower
box index. A taken box is checked against the boxes selected since it was last checked, newest
first: each check multiplies its score by the spec's func, exp(-0.5 / soft_nms_sigma * iou^2)
(1 without soft NMS) when iou <= iou_threshold, and removes the box when iou > iou_threshold
(except in -9's soft NMS), stopping once the score is < score_threshold; a box whose score did
not change is selected, one that changed goes back into the queue while still >=
score_threshold. This is the reference's lazy Soft-NMS (same products in the same order) with
the spec's thresholds; without soft NMS it is plain greedy suppression. IoU is that of
`ops.common.boxes.iou` in f32, so a box with a NaN coordinate overlaps nothing (IoU 0); a box of
zero or negative area has IoU 0 with all. A class stops at max_output_boxes_per_class selected
boxes.

The thresholds follow the spec pages, where OpenVINO departs from them:
* score: a box scoring exactly score_threshold takes part (-5, -9: "if the score s is greater
  or equal than score_threshold then add b"; -1, -3, -4: "if the score is less than
  score_threshold then stop"), and a soft-NMS decay down to exactly score_threshold keeps the
  box in the queue. OpenVINO's reference and CPU plugin take only scores > score_threshold (and
  drop a box decayed to it).
* IoU: a box is removed when its IoU with a selected box is > iou_threshold, and kept at
  equality, in every version (-1, -3, -4: "if the value is greater than the iou_threshold then
  remove"; -5, -9: func(iou) = 1 if iou <= iou_threshold else 0). -5's soft NMS also removes a
  box above the threshold (its func is 0 there); -9's soft NMS never removes by IoU, it only
  decays the score. OpenVINO's reference does this for -1, -3, -4 and -9 (it evaluates -1, -3
  and -4 as -9), but removes at IoU >= iou_threshold for -5, with or without soft NMS.
  OpenVINO's CPU plugin removes at IoU >= iou_threshold in every version without soft NMS (so
  with the default threshold 0 it keeps one box per class even among disjoint boxes), and runs
  -5's soft NMS as -9's.
* The literal text of the -5 and -9 pages multiplies a box above iou_threshold by 0 and keeps
  it in B, where a score_threshold <= 0 would let it be selected later with score 0; irscatter
  removes it, as the -1/-3/-4 pages ("remove the input box from further consideration") and the
  reference do. A box that soft NMS decays to 0 is not removed: with score_threshold <= 0 it is
  selected with score 0, as the spec's steps give. A NaN iou_threshold removes nothing (no IoU
  is above it) and zeroes every weight (none is at or below it).

Output: triplets [batch_index, class_index, box_index] of the selected boxes. With
sort_result_descending they are sorted across batches and classes by score descending, equal
scores by batch, class, then box index (as the CPU plugin does; the reference -5 treats scores
within 1e-6 as equal, and the reference -9 reverses the list instead of sorting it); without it
they come batch by batch, class by class, each class in selection order.

-1, -3 and -4 have one output of static shape, [min(num_boxes, max_output_boxes_per_class *
num_classes), 3] for -1 and -3 and [min(num_boxes, max_output_boxes_per_class) * num_batches *
num_classes, 3] for -4, filled with -1 past the selected boxes (the spec; OpenVINO returns only
the selected rows, unpadded). -1 and -3's size leaves out num_batches, so with several batches
it can be smaller than the selection: the first rows (in output order) are kept. -1's indices
are i64, -3's and -4's of `output_type`.

-5 and -9 have three outputs: selected_indices [n, 3] (output_type), selected_scores [n, 3]
([batch, class, score], of the thresholds' type T_THRESHOLDS as the spec says; OpenVINO makes it
f32 whatever the thresholds' type, and f32 when no threshold is given) and valid_outputs [1]
(output_type) holding n. Inference gives n from 0 to min(num_boxes, max_output_boxes_per_class)
* num_batches * num_classes (the spec's upper bound) unless it knows every input's value.

A negative max_output_boxes_per_class is refused (`nms-max-boxes`): the spec gives it no meaning
and OpenVINO's CPU plugin and reference both fail on it.

Where OpenVINO's CPU plugin departs besides the above: with nothing to select (no
max_output_boxes_per_class, 0, or empty inputs) it leaves -5/-9's valid_outputs unwritten or
fails.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Annotated, Literal

import numpy as np

from irscatter.errors import ExecutionError
from irscatter.ir.element_types import ElementType
from irscatter.ir.shapes import Dimension, PartialShape
from irscatter.limits import FOLD_LIMIT
from irscatter.ops.base import IRBool, Lower, Op, OpAttrs, TensorInfo, check
from irscatter.ops.common.boxes import center_to_corners, greedy_keep, iou, ordered_corners
from irscatter.ops.common.numeric import from_compute
from irscatter.ops.registry import register

IndexType = Annotated[Literal["i32", "i64"], Lower]
BoxEncoding = Annotated[Literal["corner", "center"], Lower]

NMS_FLOATS = frozenset({ElementType.f32, ElementType.f16, ElementType.bf16, ElementType.dynamic})
F32 = np.float32


# --- the selection ------------------------------------------------------------------------------


class Rule:
    """How a selected box acts on a candidate with IoU `iou` (the op versions differ here)."""

    def __init__(self, iou_threshold: float, score_threshold: float, soft_nms_sigma: float, *,
                 soft_ignores_iou: bool) -> None:
        self.iou_threshold = F32(iou_threshold)
        self.score_threshold = F32(score_threshold)
        sigma = F32(soft_nms_sigma)
        self.soft = bool(sigma > 0)
        with np.errstate(divide="ignore", over="ignore"):
            self.scale = F32(-0.5) / sigma if self.soft else F32(0)
        self.soft_ignores_iou = soft_ignores_iou and self.soft

    @property
    def greedy(self) -> bool:
        """Plain greedy suppression gives the same selection: every weight is exactly 1 or the
        box is suppressed (a NaN threshold makes every weight 0 instead, so it is not)."""
        return not self.soft and not np.isnan(self.iou_threshold)

    def candidates(self, scores: np.ndarray) -> np.ndarray:
        """Which scores take part: those >= score_threshold (the spec; never NaN)."""
        return scores >= self.score_threshold

    def decay(self, overlap: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(weight, suppressed) of each candidate against one selected box: the spec's func,
        1 (or the soft decay) at IoU <= iou_threshold, the box removed above it."""
        with np.errstate(over="ignore", invalid="ignore"):
            exponent = self.scale * overlap * overlap
            # expf rounds correctly; numpy's vector f32 exp may be an ulp off
            weight = np.exp(exponent.astype(np.float64)).astype(F32)
        if self.soft_ignores_iou:
            return weight, np.zeros(overlap.shape, bool)
        return np.where(overlap <= self.iou_threshold, weight, F32(0)), overlap > self.iou_threshold


class Geometry:
    """The boxes of one batch element, as the selection sees them."""

    def overlap(self, i: int, js: np.ndarray) -> np.ndarray:
        """The f32 IoU of box i with each of boxes js."""
        raise NotImplementedError

    def greedy(self, order: np.ndarray, threshold: np.float32, limit: int) -> np.ndarray:
        """Of boxes `order` (priority order), the positions hard suppression (IoU > threshold)
        keeps."""
        raise NotImplementedError


class AxisAligned(Geometry):
    def __init__(self, corners: np.ndarray) -> None:
        self.corners = corners

    def overlap(self, i: int, js: np.ndarray) -> np.ndarray:
        with np.errstate(invalid="ignore", over="ignore"):  # infinite boxes: inf - inf
            return iou(self.corners[i], self.corners[js])

    def greedy(self, order: np.ndarray, threshold: np.float32, limit: int) -> np.ndarray:
        with np.errstate(invalid="ignore", over="ignore"):
            return greedy_keep(self.corners[order], float(threshold), inclusive=False, limit=limit)


def _queue_order(positions: np.ndarray, score: np.ndarray) -> np.ndarray:
    """`positions` in priority-queue order: score descending, then position (box index) ascending."""
    return positions[np.lexsort((positions, -score[positions]))]


def select_class(geometry: Geometry, scores: np.ndarray, limit: int, rule: Rule) -> tuple[np.ndarray, np.ndarray]:
    """One class of one batch element: (box indices, scores) selected, in selection order."""
    candidates = np.flatnonzero(rule.candidates(scores))
    if not candidates.size or limit <= 0:
        return np.zeros(0, np.int64), np.zeros(0, F32)
    original = scores[candidates]
    if rule.greedy:
        order = _queue_order(np.arange(candidates.size), original)
        boxes = candidates[order]
        kept = geometry.greedy(boxes, rule.iou_threshold, limit)
        return boxes[kept], original[order][kept]
    return _select_lazily(geometry, candidates, original, limit, rule)


def _select_lazily(geometry: Geometry, candidates: np.ndarray, original: np.ndarray, limit: int,
                   rule: Rule) -> tuple[np.ndarray, np.ndarray]:
    """The reference's priority queue, one step per selected box.

    A step takes candidates in queue order (each with its score as last computed, `stale`),
    brings each up to date against the boxes selected since it was last taken (`begin`), and
    ends at the first one unchanged, or as soon as a candidate brought up to date earlier in
    the step (back in the queue with its new score) outranks the next stale one: that box is
    selected. The head of the queue is brought up to date at once, vectorized, one selected box
    at a time, the head growing until the step's end lies in it; only the candidates the queue
    would have taken in this step keep their new scores.
    """
    count = candidates.size
    stale = original.copy()
    begin = np.zeros(count, np.int64)
    alive = np.ones(count, bool)
    chosen: list[int] = []
    chosen_scores: list[np.float32] = []
    while len(chosen) < limit:
        live = np.flatnonzero(alive)
        if not live.size:
            break
        everything = _queue_order(live, stale)
        length = min(everything.size, 64)
        while True:  # the step ends early in the queue: bring a growing head of it up to date
            order = everything[:length]
            fresh, suppressed = _bring_up_to_date(geometry, candidates, chosen, order, stale, begin, rule)
            unchanged = ~suppressed & (fresh == stale[order])
            requeued = ~suppressed & ~unchanged & rule.candidates(fresh)
            winner, taken = _step_end(order, stale[order], fresh, unchanged, requeued)
            if taken < length or length == everything.size:
                break
            length = min(everything.size, length * 4)
        popped = np.arange(taken)
        back = popped[requeued[:taken]]
        stale[order[back]] = fresh[back]
        begin[order[back]] = len(chosen)
        alive[order[popped[~requeued[:taken]]]] = False
        if winner is None:
            continue
        alive[order[winner]] = False
        chosen.append(int(order[winner]))
        chosen_scores.append(fresh[winner])
    picked = np.asarray(chosen, np.int64)
    return candidates[picked], np.asarray(chosen_scores, F32).reshape(-1)


def _bring_up_to_date(geometry: Geometry, candidates: np.ndarray, chosen: list[int], order: np.ndarray,
                      stale: np.ndarray, begin: np.ndarray, rule: Rule) -> tuple[np.ndarray, np.ndarray]:
    """(score, suppressed) of candidates `order` checked against the boxes selected since each
    was last taken, newest first, each stopping where the reference's loop breaks."""
    fresh = stale[order].copy()
    since = begin[order]
    suppressed = np.zeros(order.size, bool)
    stopped = np.zeros(order.size, bool)
    for j in range(len(chosen) - 1, -1, -1):
        active = np.flatnonzero((since <= j) & ~stopped)
        if not active.size:
            break
        weight, hard = rule.decay(geometry.overlap(int(candidates[chosen[j]]), candidates[order[active]]))
        with np.errstate(invalid="ignore"):
            fresh[active] = fresh[active] * weight
        suppressed[active] |= hard
        stopped[active] = hard | ~rule.candidates(fresh[active])
    return fresh, suppressed


def _step_end(order: np.ndarray, stale: np.ndarray, fresh: np.ndarray, unchanged: np.ndarray,
              requeued: np.ndarray) -> tuple[int | None, int]:
    """(position in `order` of the box selected in this step or None, how many positions the
    queue took before it)."""
    size = order.size
    back = np.flatnonzero(requeued)
    rank = np.zeros(size, np.int64)  # 0: not back in the queue; higher ranks come out first
    if back.size:
        ranked = back[np.lexsort((order[back], -fresh[back]))]
        rank[ranked] = np.arange(ranked.size, 0, -1)
        holder = np.zeros(ranked.size + 1, np.int64)
        holder[rank[ranked]] = ranked
    best = np.maximum.accumulate(rank)
    before = np.concatenate([[0], best[:-1]])  # the best box back in the queue before each position
    at = holder[before] if back.size else np.zeros(size, np.int64)
    outranks = (before > 0) & ((fresh[at] > stale) | ((fresh[at] == stale) & (order[at] < order)))
    trigger = np.flatnonzero(outranks | unchanged)
    if trigger.size:
        end = int(trigger[0])
        return (int(at[end]) if outranks[end] else end), end
    if back.size:
        return int(holder[best[-1]]), size
    return None, size


def suppress(geometries: Sequence[Geometry], scores: np.ndarray, limit: int, rule: Rule,
             sort_descending: bool) -> tuple[np.ndarray, np.ndarray]:
    """All batches and classes: ([n, 3] int64 triplets, [n] f32 scores) in output order."""
    batches, classes, _ = scores.shape
    rows: list[np.ndarray] = []
    values: list[np.ndarray] = []
    live = np.argwhere(rule.candidates(scores).any(axis=2)) if limit > 0 else np.zeros((0, 2), np.int64)
    for b, c in live:  # classes of no candidate select nothing
        boxes, kept = select_class(geometries[b], scores[b, c], limit, rule)
        rows.append(np.stack([np.full(boxes.size, b), np.full(boxes.size, c), boxes], axis=1))
        values.append(kept)
    if not rows:
        return np.zeros((0, 3), np.int64), np.zeros(0, F32)
    triplets = np.concatenate(rows).astype(np.int64)
    found = np.concatenate(values).astype(F32)
    if sort_descending:
        order = np.lexsort((triplets[:, 2], triplets[:, 1], triplets[:, 0], -found))
        triplets, found = triplets[order], found[order]
    return triplets, found


# --- reading inputs -----------------------------------------------------------------------------


def scalar_value(array: np.ndarray | None, default: float | int) -> float | int:
    return default if array is None else np.asarray(array).reshape(-1)[0].item()


def read_scalar(op: Op, name: str, array: np.ndarray | None, default: float | int) -> float | int:
    """An optional one-value input at run time (its declared shape may have been dynamic)."""
    if array is not None and np.asarray(array).size != 1:
        raise ExecutionError(f"{name} must hold one value, found shape {list(np.shape(array))}",
                             port=op.port(name), label="nms-scalar")
    return scalar_value(array, default)


def max_boxes(op: Op, array: np.ndarray | None) -> int:
    """max_output_boxes_per_class as an exact Python int (0 when not given)."""
    value = int(read_scalar(op, "max_output_boxes_per_class", array, 0))
    if value < 0:
        raise ExecutionError(f"max_output_boxes_per_class is {value}, it must be >= 0",
                             port=op.port("max_output_boxes_per_class"), label="nms-max-boxes")
    return value


def as_f32(array: np.ndarray) -> np.ndarray:
    return np.asarray(array).astype(F32)


def boxes_and_scores(infos: Sequence[TensorInfo | None]) -> tuple[TensorInfo, TensorInfo]:
    """The first two of an NMS layer's inputs, which no version leaves out (the arity check has
    held the layer to them); the optional ones follow."""
    boxes, scores = infos[0], infos[1]
    assert boxes is not None and scores is not None
    return boxes, scores


def check_nms_inputs(op: Op, infos: Sequence[TensorInfo | None], *, box_size: int, vector_ok: bool) -> None:
    """The spec's constraints on boxes, scores and the optional scalars, shared by every
    NonMaxSuppression version and NMSRotated."""
    boxes, scores = boxes_and_scores(infos)
    names = op.inputs
    for info, name in ((boxes, names[0]), (scores, names[1])):
        check(info.etype in NMS_FLOATS, "nms-type", f"{name} must be f32, f16 or bf16, found {info.etype}",
              port=op.port(name))
    for given, name in zip(infos[2:], names[2:]):
        if given is None:
            continue
        if name == "max_output_boxes_per_class":
            check(given.etype is ElementType.dynamic or given.etype.is_integral, "nms-type",
                  f"{name} must be of an integer type, found {given.etype}", port=op.port(name))
        else:
            check(given.etype in NMS_FLOATS, "nms-type", f"{name} must be f32, f16 or bf16, found {given.etype}",
                  port=op.port(name))
        if given.shape.rank_is_static:
            dims = given.shape.ranked_dims
            one = len(dims) == 0 or (vector_ok and len(dims) == 1 and dims[0].contains(1))
            check(one, "nms-scalar", f"{name} must be a scalar{' or a 1-element 1-D tensor' if vector_ok else ''}, "
                  f"found shape {given.shape}", port=op.port(name))
        if name == "max_output_boxes_per_class" and given.value is not None:
            value = int(scalar_value(given.value, 0))
            check(value >= 0, "nms-max-boxes", f"{name} is {value}, it must be >= 0", port=op.port(name))
    if boxes.shape.rank_is_static:
        check(boxes.shape.rank == 3, "nms-boxes-shape",
              f"boxes must be [num_batches, num_boxes, {box_size}], found rank {boxes.shape.rank}",
              port=op.port(names[0]))
        check(boxes.shape[2].contains(box_size), "nms-boxes-shape",
              f"boxes must have {box_size} values a box, found shape {boxes.shape}", port=op.port(names[0]))
    if scores.shape.rank_is_static:
        check(scores.shape.rank == 3, "nms-scores-shape",
              f"scores must be [num_batches, num_classes, num_boxes], found rank {scores.shape.rank}",
              port=op.port(names[1]))
        if boxes.shape.rank_is_static:
            check(boxes.shape[0].compatible(scores.shape[0]) and boxes.shape[1].compatible(scores.shape[2]),
                  "nms-scores-shape", f"scores {scores.shape} must be [num_batches, num_classes, num_boxes] "
                  f"of boxes {boxes.shape}", port=op.port(names[1]))


def selection_bound(boxes: TensorInfo, scores: TensorInfo, limit: int | None, *, per_batch: bool) -> int | None:
    """The most boxes the op can select: min(num_boxes, max) * num_batches * num_classes
    (`per_batch`), or min(num_boxes, max * num_classes) (-1 and -3); None when unknown."""
    if not boxes.shape.rank_is_static or not scores.shape.rank_is_static:
        return None
    batches = boxes.shape[0].max if boxes.shape[0].max is not None else scores.shape[0].max
    count = boxes.shape[1].max if boxes.shape[1].max is not None else scores.shape[2].max
    classes = scores.shape[1].max
    if count is None or classes is None:
        return None
    if per_batch:
        return None if batches is None else (count if limit is None else min(count, limit)) * batches * classes
    return count if limit is None else min(count, limit * classes)


def known_values(infos: Sequence[TensorInfo | None]) -> bool:
    present = [i for i in infos if i is not None]
    return all(i.value is not None for i in present) and np.asarray(boxes_and_scores(infos)[0].value).size <= FOLD_LIMIT


def known_limit(info: TensorInfo | None) -> int | None:
    if info is None:
        return 0
    return None if info.value is None else int(scalar_value(info.value, 0))


# --- the ops ------------------------------------------------------------------------------------


class NMS1Attrs(OpAttrs):
    box_encoding: BoxEncoding = "corner"
    sort_result_descending: IRBool = True


class NMS3Attrs(NMS1Attrs):
    output_type: IndexType = "i64"


def axis_aligned(boxes: np.ndarray, encoding: str) -> list[Geometry]:
    data = as_f32(boxes)
    with np.errstate(invalid="ignore", over="ignore"):
        corners = center_to_corners(data) if encoding == "center" else ordered_corners(data)
    return [AxisAligned(corners[b]) for b in range(corners.shape[0])]


@register("NonMaxSuppression", 1)
class NonMaxSuppression(Op):
    Attrs = NMS1Attrs
    attrs: NMS1Attrs
    inputs = ("boxes", "scores", "max_output_boxes_per_class", "iou_threshold", "score_threshold")
    optional_inputs = 3
    per_batch_size = False  # -1 and -3 size the output min(num_boxes, max * num_classes)

    def index_type(self) -> ElementType:
        return ElementType.i64

    def infer(self, *infos: TensorInfo) -> TensorInfo:
        padded = list(infos) + [None] * (len(self.inputs) - len(infos))
        check_nms_inputs(self, padded, box_size=4, vector_ok=False)
        bound = selection_bound(infos[0], infos[1], known_limit(padded[2]), per_batch=self.per_batch_size)
        if bound is not None and known_limit(padded[2]) is not None:
            rows: Dimension | int = bound
        else:
            upper = selection_bound(infos[0], infos[1], None, per_batch=self.per_batch_size)
            rows = Dimension(min=0, max=upper)
        return TensorInfo(self.index_type(), PartialShape.of([rows, 3]))

    def compute(self, boxes: np.ndarray, scores: np.ndarray, max_output_boxes_per_class: np.ndarray | None = None,
                iou_threshold: np.ndarray | None = None, score_threshold: np.ndarray | None = None) -> np.ndarray:
        limit = max_boxes(self, max_output_boxes_per_class)
        rule = Rule(read_scalar(self, "iou_threshold", iou_threshold, 0.0),
                    read_scalar(self, "score_threshold", score_threshold, 0.0), 0.0, soft_ignores_iou=False)
        triplets, _ = suppress(axis_aligned(boxes, self.attrs.box_encoding), as_f32(scores), limit, rule,
                               self.attrs.sort_result_descending)
        count, classes = boxes.shape[1], scores.shape[1]
        if self.per_batch_size:
            size = min(count, limit) * boxes.shape[0] * classes
        else:
            size = min(count, limit * classes)
        out = np.full((size, 3), -1, dtype=self.index_type().dtype)
        used = min(size, triplets.shape[0])
        out[:used] = triplets[:used]
        return out


@register("NonMaxSuppression", 3)
class NonMaxSuppression3(NonMaxSuppression):
    Attrs = NMS3Attrs
    attrs: NMS3Attrs

    def index_type(self) -> ElementType:
        return ElementType[self.attrs.output_type]


@register("NonMaxSuppression", 4)
class NonMaxSuppression4(NonMaxSuppression3):
    per_batch_size = True


def dynamic_outputs(op: Op, infos: Sequence[TensorInfo | None], index: ElementType, score_type: ElementType,
                    run: Callable[[], tuple[np.ndarray, ...]]) -> tuple[TensorInfo, ...]:
    """The three outputs of -5, -9 and NMSRotated: exact when every input's value is known (and
    small), else [0..bound, 3] twice and [1]."""
    if known_values(infos):
        return tuple(TensorInfo.of(value, etype) for value, etype in zip(run(), (index, score_type, index)))
    bound = selection_bound(*boxes_and_scores(infos), known_limit(infos[2]), per_batch=True)
    rows = Dimension(min=0, max=bound)
    return (TensorInfo(index, PartialShape.of([rows, 3])), TensorInfo(score_type, PartialShape.of([rows, 3])),
            TensorInfo(index, PartialShape.of([1])))


def threshold_type(infos: Sequence[TensorInfo | None]) -> ElementType:
    """T_THRESHOLDS: the type of the first threshold given (f32 when none is)."""
    return next((i.etype for i in infos[3:] if i is not None), ElementType.f32)


def pack_outputs(triplets: np.ndarray, found: np.ndarray, index: ElementType,
                 score_type: ElementType) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    scores = np.concatenate([triplets[:, :2].astype(F32), found[:, None]], axis=1).reshape(-1, 3)
    if score_type is ElementType.dynamic:
        score_type = ElementType.f32
    return (triplets.astype(index.dtype), from_compute(scores, score_type),
            np.array([triplets.shape[0]], dtype=index.dtype))


@register("NonMaxSuppression", 5)
class NonMaxSuppression5(Op):
    Attrs = NMS3Attrs
    attrs: NMS3Attrs
    inputs = ("boxes", "scores", "max_output_boxes_per_class", "iou_threshold", "score_threshold",
              "soft_nms_sigma")
    optional_inputs = 4
    outputs = 3
    soft_ignores_iou = False  # -5's soft NMS still removes boxes above iou_threshold, -9's does not

    def infer(self, *infos: TensorInfo) -> tuple[TensorInfo, ...]:
        padded = list(infos) + [None] * (len(self.inputs) - len(infos))
        check_nms_inputs(self, padded, box_size=4, vector_ok=True)
        index = ElementType[self.attrs.output_type]
        return dynamic_outputs(self, padded, index, threshold_type(padded),
                               lambda: self.compute(*(np.asarray(i.value) for i in infos)))  # all known here

    def compute(self, boxes: np.ndarray, scores: np.ndarray, max_output_boxes_per_class: np.ndarray | None = None,
                iou_threshold: np.ndarray | None = None, score_threshold: np.ndarray | None = None,
                soft_nms_sigma: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        limit = max_boxes(self, max_output_boxes_per_class)
        rule = Rule(read_scalar(self, "iou_threshold", iou_threshold, 0.0),
                    read_scalar(self, "score_threshold", score_threshold, 0.0),
                    read_scalar(self, "soft_nms_sigma", soft_nms_sigma, 0.0), soft_ignores_iou=self.soft_ignores_iou)
        triplets, found = suppress(axis_aligned(boxes, self.attrs.box_encoding), as_f32(scores), limit, rule,
                                   self.attrs.sort_result_descending)
        given = [iou_threshold, score_threshold, soft_nms_sigma]
        score_type = next((ElementType.from_dtype(a.dtype) for a in given if a is not None), ElementType.f32)
        return pack_outputs(triplets, found, ElementType[self.attrs.output_type], score_type)


@register("NonMaxSuppression", 9)
class NonMaxSuppression9(NonMaxSuppression5):
    soft_ignores_iou = True
