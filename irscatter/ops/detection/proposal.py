"""Proposal-1 and Proposal-4: region proposals of a Faster R-CNN region proposal network.

Inputs: `class_probs` [N, 2K, H, W] (background scores in channels 0..K-1, foreground scores in
K..2K-1, of which only the foreground ones are read), `bbox_deltas` [N, 4K, H, W] (for anchor a,
channels 4a..4a+3 hold dx, dy, d(log w), d(log h)) and `image_shape`, a 1-D tensor of 3 or 4
values `[image_height, image_width, scale]` or `[image_height, image_width, scale_height,
scale_width]`, shared by every image of the batch. K = len(ratio) * len(scale) anchors.

Per image, as OpenVINO's reference and CPU plugin compute it (f32 throughout, whatever T is,
outputs rounded once to T):

1. Anchors, one per (ratio r, scale s) in that order (anchor index r * len(scale) + s), around
   the centre `0.5 * (base_size - offset)` of the base box: with framework "" (Caffe) the width
   is `round(sqrt(base_size^2 / r))` and the height `round(width * r)` (rounding half away from
   zero), offset 1; with "tensorflow" neither is rounded, offset 0, and the anchors are shifted
   by `-base_size / 2`. Each half extent is `0.5 * (extent * s - offset)`.
2. At feature position (h, w) an anchor is moved to `(w * feat_stride, h * feat_stride)`
   ("tensorflow": `(h * feat_stride, w * feat_stride)`, image height and width swapped too, and
   the moved anchor clipped to [0, width] x [0, height] first). The deltas, divided by
   box_coordinate_scale (dx, dy) and box_size_scale (d log w, d log h), move its centre by
   `d * extent` and scale its extent by `exp(d log)`, extents counting `offset` (Caffe's +1).
3. clip_before_nms clips the box to [0, width - offset] x [0, height - offset]; a box whose
   width or height (+ offset) is below `min_size * scale` gets score 0 (it stays a candidate).
4. The proposals, in (h, w, anchor) order, are sorted by score, highest first, and the first
   min(pre_nms_topn, K*H*W) are kept: the order is std::partial_sort's as libstdc++ computes it
   (a heap), which the reference and the CPU plugin both use. Equal scores keep no simple order
   there, so when ties decide anything the heap algorithm is replayed step by step (below).
5. Greedy NMS in that order: a box suppresses each later box that overlaps it (its corners do
   not lie apart: x0i <= x1j, y0i <= y1j, x0j <= x1i, y0j <= y1i) with IoU > nms_thresh, areas
   counting `offset`. At most post_nms_topn boxes are kept.
6. Output rows `[image index, x0, y0, x1, y1]`, clipped to [0, width] x [0, height] with
   clip_after_nms, divided by width and height with normalize. Unused rows are 0, and the first
   unused row starts with -1. Proposal-4's second output holds the kept boxes' scores, 0 after.

Departures and choices (OpenVINO's core reference is "the reference"):
* With a 4-value image_shape, the reference reads scale_width as scale_height (it tests the rank
  of image_shape, not its length); the spec and the CPU plugin use the fourth value, as here.
* The spec's ranges say positive; min_size may also be 0 here (no box is filtered), as the
  reference computes it. Every input is of one floating-point type T.
* The CPU plugin leaves Proposal-4's scores after the last kept box unwritten; the reference
  and irscatter give 0. (It also crashes when pre_nms_topn is below 8.)
* std::partial_sort is replayed as a heap only when two equal scores (or a NaN) lie where they
  decide the selection or its order; otherwise a stable argsort gives the same order.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import numpy as np
from pydantic import Field

from irscatter.ir.element_types import ElementType
from irscatter.ir.shapes import Dimension, PartialShape
from irscatter.limits import check_allocation
from irscatter.ops.base import FloatList, IRBool, Lower, Op, OpAttrs, TensorInfo, check
from irscatter.ops.common.boxes import iou
from irscatter.ops.common.numeric import from_compute
from irscatter.ops.registry import register

F32 = np.float32


# --- pieces shared with GenerateProposals -------------------------------------------------------

def std_min(a: np.ndarray, b: Any) -> np.ndarray:
    """C++'s std::min(a, b): b only when b < a, so a NaN in `a` stays and one in `b` is ignored."""
    return np.where(b < a, b, a)


def std_max(a: Any, b: np.ndarray) -> np.ndarray:
    """C++'s std::max(a, b): b only when a < b (std::max(0, NaN) is 0)."""
    return np.where(a < b, b, a)


def clip(v: np.ndarray, hi: Any) -> np.ndarray:
    """`max(0, min(v, hi))` with the std:: semantics the references use (NaN becomes 0)."""
    return std_max(F32(0), std_min(v, hi)).astype(F32, copy=False)


def top_order(scores: np.ndarray, k: int) -> np.ndarray:
    """The indices of the first `k` elements after libstdc++'s
    `std::partial_sort(first, first + k, last, [](a, b) { return a.score > b.score; })`.

    Distinct scores leave one answer, the k highest in descending order (a stable argsort).
    When equal scores (or NaN, which compares false with everything) decide which elements are
    taken or in what order, the heap algorithm is replayed: its placement of equal elements
    depends on every comparison it makes."""
    n = scores.shape[0]
    k = min(k, n)
    if k == 0:
        return np.zeros(0, np.int64)
    nan = np.isnan(scores)
    if not nan.any():
        order = np.argsort(-scores, kind="stable")
        ranked = scores[order[:k + 1]]
        if not np.any(ranked[1:] == ranked[:-1]):
            return order[:k]
    return np.asarray(_heap_partial_sort(scores, k, prefilter=not nan.any())[:k], np.int64)


def _heap_partial_sort(scores: np.ndarray, k: int, prefilter: bool) -> list[int]:
    """libstdc++'s __heap_select + __sort_heap with comp(a, b) = a > b, on (score, index)."""
    vals = [float(v) for v in scores]
    perm = list(range(len(vals)))

    def adjust(hole: int, length: int, value: float, index: int) -> None:
        top = hole
        child = hole
        while child < (length - 1) // 2:
            child = 2 * (child + 1)
            if vals[child] > vals[child - 1]:
                child -= 1
            vals[hole], perm[hole] = vals[child], perm[child]
            hole = child
        if length % 2 == 0 and child == (length - 2) // 2:
            child = 2 * (child + 1)
            vals[hole], perm[hole] = vals[child - 1], perm[child - 1]
            hole = child - 1
        parent = (hole - 1) // 2
        while hole > top and vals[parent] > value:
            vals[hole], perm[hole] = vals[parent], perm[parent]
            hole = parent
            parent = (hole - 1) // 2
        vals[hole], perm[hole] = value, index

    def pop(length: int, result: int) -> None:
        value, index = vals[result], perm[result]
        vals[result], perm[result] = vals[0], perm[0]
        adjust(0, length, value, index)

    if k >= 2:  # make_heap over the first k
        parent = (k - 2) // 2
        while True:
            adjust(parent, k, vals[parent], perm[parent])
            if parent == 0:
                break
            parent -= 1
    # Without NaN the heap's top only grows, so what cannot beat the first top never enters.
    rest = np.arange(k, len(vals))
    if prefilter:
        rest = rest[scores[k:] > scores.dtype.type(vals[0])]
    for i in rest.tolist():
        if vals[i] > vals[0]:
            pop(k, i)
    last = k
    while last > 1:  # sort_heap
        last -= 1
        pop(last, last)
    return perm


def suppress(boxes: np.ndarray, threshold: float, offset: float, limit: int,
             dead: np.ndarray | None = None, eta: float = 1.0) -> np.ndarray:
    """Greedy NMS over `boxes` ([M, 4] x0, y0, x1, y1, f32) in priority order, as the proposal
    references do it: a candidate is dropped when a kept box overlaps it (corners not apart) with
    IoU above the threshold; `dead` candidates are never kept; at most `limit` are kept.

    With `eta` < 1 the threshold adapts (GenerateProposals' spec): after each kept box it is
    multiplied by eta while above 0.5, and a candidate is judged by the threshold of its turn.

    Differs from boxes.greedy_keep in the corner test (with Caffe's +1, boxes up to one unit
    apart have a positive intersection, which these references ignore), the dead candidates and
    the adaptive threshold. Returns the kept positions, ascending."""
    count = boxes.shape[0]
    if limit <= 0 or count == 0:
        return np.zeros(0, np.int64)
    alive = np.ones(count, bool) if dead is None else ~dead
    worst = np.zeros(count, F32)  # each candidate's highest IoU with a kept box (0 if apart)
    thr = F32(threshold)
    kept: list[int] = []
    start = 0
    while True:
        free = np.flatnonzero(alive[start:] & ~(thr < worst[start:]))
        if not free.size:
            break
        i = start + int(free[0])
        kept.append(i)
        if len(kept) == limit:
            break
        rest = np.flatnonzero(alive[i + 1:]) + i + 1
        if rest.size:
            b, o = boxes[i], boxes[rest]
            touching = (b[0] <= o[:, 2]) & (b[1] <= o[:, 3]) & (o[:, 0] <= b[2]) & (o[:, 1] <= b[3])
            overlap = np.where(touching, iou(b, o, offset), F32(0))
            worst[rest] = np.maximum(worst[rest], overlap)
        if eta < 1 and thr > 0.5:
            thr = F32(thr * F32(eta))
        start = i + 1
    return np.asarray(kept, np.int64)


def float_types(op: Op, names: tuple[str, ...], infos: tuple[TensorInfo, ...]) -> ElementType:
    """Every input of one floating-point type T (the spec's); returns T."""
    known = [(n, i.etype) for n, i in zip(names, infos) if i.etype is not ElementType.dynamic]
    for name, et in known:
        check(et.is_float, "float-type", f"{name} must be of a floating-point type, found {et}", port=op.port(name))
    for name, et in known[1:]:
        check(et is known[0][1], "same-element-type",
              f"{name} is {et}, {known[0][0]} is {known[0][1]}: every input is of one type", port=op.port(name))
    return known[0][1] if known else ElementType.dynamic


def check_rank(op: Op, info: TensorInfo, name: str, rank: int, label: str) -> None:
    check(not info.shape.rank_is_static or info.shape.rank == rank, label,
          f"{name} must have rank {rank}, found shape {info.shape}", port=op.port(name))


def dims_agree(a: Dimension, b: Dimension) -> bool:
    return a.compatible(b)


# --- Proposal ------------------------------------------------------------------------------------

Count = Annotated[int, Field(ge=1)]


class ProposalAttrs(OpAttrs):
    base_size: Count
    pre_nms_topn: Count
    post_nms_topn: Count
    nms_thresh: Annotated[float, Field(gt=0)]
    feat_stride: Count
    min_size: Annotated[int, Field(ge=0)]
    ratio: FloatList
    scale: FloatList
    clip_before_nms: IRBool = True
    clip_after_nms: IRBool = False
    normalize: IRBool = False
    box_size_scale: float = 1.0
    box_coordinate_scale: float = 1.0
    framework: Annotated[Literal["", "tensorflow"], Lower] = ""


def _round_half_away(x: np.ndarray) -> np.ndarray:
    """C's roundf: halves away from zero (numpy's round goes to even)."""
    t = np.trunc(x)
    return (t + np.where(np.abs(x - t) >= F32(0.5), np.sign(x), F32(0))).astype(F32)


def proposal_anchors(attrs: ProposalAttrs) -> np.ndarray:
    """[K, 4] f32 anchors (x0, y0, x1, y1) around the base box, as the reference rounds them."""
    tf = attrs.framework == "tensorflow"
    offset = F32(0 if tf else 1)
    with np.errstate(all="ignore"):
        base = F32(float(attrs.base_size)) if attrs.base_size < 2**127 else F32(np.inf)
        area = F32(np.float64(attrs.base_size) ** 2) if attrs.base_size < 2**60 else F32(np.inf)
        center = F32(0.5) * (base - offset)
        ratios = np.asarray(attrs.ratio, F32)
        scales = np.asarray(attrs.scale, F32)
        width = np.sqrt(area / ratios)
        if not tf:
            width = _round_half_away(width)
        height = width * ratios
        if not tf:
            height = _round_half_away(height)
        half_w = (F32(0.5) * (width[:, None] * scales[None, :] - offset)).reshape(-1)
        half_h = (F32(0.5) * (height[:, None] * scales[None, :] - offset)).reshape(-1)
        anchors = np.stack([center - half_w, center - half_h, center + half_w, center + half_h], axis=-1)
        if tf:
            anchors = anchors - base * F32(0.5)
    return anchors.astype(F32)


@register("Proposal", 1)
class Proposal(Op):
    labels = {
        "proposal-rank": "Proposal's class_probs and bbox_deltas are not 4-D",
        "proposal-shape": "Proposal's bbox_deltas is not [N, 2C, H, W] for class_probs [N, C, H, W]",
        "proposal-anchors": "Proposal's class_probs does not have 2 * len(ratio) * len(scale) channels",
        "proposal-image-shape": "Proposal's image_shape is not a 1-D tensor of 3 or 4 values",
    }

    Attrs = ProposalAttrs
    attrs: ProposalAttrs
    inputs = ("class_probs", "bbox_deltas", "image_shape")

    def infer(self, probs: TensorInfo, deltas: TensorInfo, image: TensorInfo) -> Any:
        etype = float_types(self, self.inputs, (probs, deltas, image))
        for name, info in (("class_probs", probs), ("bbox_deltas", deltas)):
            check_rank(self, info, name, 4, "proposal-rank")
        ishape = image.shape
        check(not ishape.rank_is_static or (ishape.rank == 1 and (ishape[0].contains(3) or ishape[0].contains(4))),
              "proposal-image-shape", f"image_shape must be a 1-D tensor of 3 or 4 values, found shape {ishape}",
              port=self.port("image_shape"))
        batch = Dimension.dynamic()
        if probs.shape.rank_is_static:
            batch = probs.shape[0]
            anchors = 2 * len(self.attrs.ratio) * len(self.attrs.scale)
            check(probs.shape[1].contains(anchors), "proposal-anchors",
                  f"class_probs must have 2 * {len(self.attrs.ratio)} ratios * {len(self.attrs.scale)} scales = "
                  f"{anchors} channels, found shape {probs.shape}", port=self.port("class_probs"))
        if deltas.shape.rank_is_static:
            if probs.shape.rank_is_static:
                p, d = probs.shape, deltas.shape
                doubled = Dimension(min=2 * p[1].min, max=None if p[1].max is None else 2 * p[1].max)
                check(dims_agree(p[0], d[0]) and dims_agree(doubled, d[1]) and dims_agree(p[2], d[2])
                      and dims_agree(p[3], d[3]), "proposal-shape",
                      f"bbox_deltas must be [N, 2C, H, W] for class_probs [N, C, H, W] = {p}, found {d}",
                      port=self.port("bbox_deltas"))
            if batch.is_dynamic and deltas.shape[0].is_static:
                batch = deltas.shape[0]
        post = self.attrs.post_nms_topn
        rows = Dimension(min=batch.min * post, max=None if batch.max is None else batch.max * post)
        boxes = TensorInfo(etype, PartialShape.of([rows, 5]))
        return self._outputs(boxes, TensorInfo(etype, PartialShape.of([rows])))

    def _outputs(self, boxes: Any, scores: Any) -> Any:
        """What the op gives of its boxes and scores (their inference, or their arrays): -1 the boxes."""
        return boxes

    def compute(self, probs: np.ndarray, deltas: np.ndarray, image: np.ndarray) -> Any:
        rois, scores = proposal(probs, deltas, image, self.attrs)
        etype = ElementType.from_dtype(probs.dtype)
        return self._outputs(from_compute(rois, etype), from_compute(scores, etype))


@register("Proposal", 4)
class Proposal4(Proposal):
    outputs = 2

    def _outputs(self, boxes: Any, scores: Any) -> Any:
        return boxes, scores


def proposal(probs: np.ndarray, deltas: np.ndarray, image: np.ndarray,
             attrs: ProposalAttrs) -> tuple[np.ndarray, np.ndarray]:
    """Proposal's kernel: ([N * post_nms_topn, 5], [N * post_nms_topn]) in f32."""
    batch, channels, height, width = probs.shape
    post = attrs.post_nms_topn
    check_allocation((batch * post, 5), 4, "output 0")
    tf = attrs.framework == "tensorflow"
    offset = F32(0 if tf else 1)
    info = np.asarray(image, F32).reshape(-1)
    img_h, img_w = (info[1], info[0]) if tf else (info[0], info[1])
    scale_h = info[2]
    scale_w = info[3] if info.shape[0] == 4 else info[2]
    with np.errstate(all="ignore"):
        min_h = F32(attrs.min_size) * scale_h if attrs.min_size < 2**127 else F32(np.inf) * scale_h
        min_w = F32(attrs.min_size) * scale_w if attrs.min_size < 2**127 else F32(np.inf) * scale_w
    k = channels // 2
    anchors = proposal_anchors(attrs)  # [K, 4]
    # positions: the x and y of each (h, w), as float(index * feat_stride)
    stride = float(attrs.feat_stride)
    along_h = (np.arange(height, dtype=np.float64) * stride).astype(F32)
    along_w = (np.arange(width, dtype=np.float64) * stride).astype(F32)
    x = (along_h[:, None] if tf else along_w[None, :]) * np.ones((height, width), F32)
    y = (along_w[None, :] if tf else along_h[:, None]) * np.ones((height, width), F32)
    x, y = x[:, :, None], y[:, :, None]  # [H, W, 1] against the anchors' [K]
    total = k * height * width
    pre = min(total, attrs.pre_nms_topn)
    rois = np.zeros((batch, post, 5), F32)
    out_scores = np.zeros((batch, post), F32)
    half = F32(0.5)
    for n in range(batch):
        d = np.asarray(deltas[n], F32).reshape(k, 4, height, width).transpose(2, 3, 0, 1)  # [H, W, K, 4]
        score = np.asarray(probs[n, k:], F32).transpose(1, 2, 0)  # [H, W, K]
        with np.errstate(all="ignore"):
            dx = d[..., 0] / F32(attrs.box_coordinate_scale)
            dy = d[..., 1] / F32(attrs.box_coordinate_scale)
            dw = d[..., 2] / F32(attrs.box_size_scale)
            dh = d[..., 3] / F32(attrs.box_size_scale)
            x0, y0 = x + anchors[:, 0], y + anchors[:, 1]
            x1, y1 = x + anchors[:, 2], y + anchors[:, 3]
            if tf:
                x0, y0, x1, y1 = clip(x0, img_w), clip(y0, img_h), clip(x1, img_w), clip(y1, img_h)
            ww = x1 - x0 + offset
            hh = y1 - y0 + offset
            cx = dx * ww + (x0 + half * ww)
            cy = dy * hh + (y0 + half * hh)
            pw = np.exp(dw) * ww
            ph = np.exp(dh) * hh
            x0, y0 = cx - half * pw, cy - half * ph
            x1, y1 = cx + half * pw, cy + half * ph
            if attrs.clip_before_nms:
                x0, y0 = clip(x0, img_w - offset), clip(y0, img_h - offset)
                x1, y1 = clip(x1, img_w - offset), clip(y1, img_h - offset)
            big = (min_w <= x1 - x0 + offset) & (min_h <= y1 - y0 + offset)
            score = big.astype(F32) * score
        boxes = np.stack([x0, y0, x1, y1], axis=-1).reshape(total, 4).astype(F32, copy=False)
        score = score.reshape(total).astype(F32, copy=False)
        order = top_order(score, pre)
        kept = order[suppress(boxes[order], attrs.nms_thresh, float(offset), post)]
        found = boxes[kept]
        with np.errstate(all="ignore"):
            if attrs.clip_after_nms:
                found = np.stack([clip(found[:, 0], img_w), clip(found[:, 1], img_h),
                                  clip(found[:, 2], img_w), clip(found[:, 3], img_h)], axis=-1)
            if attrs.normalize:
                found = found / np.array([img_w, img_h, img_w, img_h], F32)
        m = kept.shape[0]
        rois[n, :m, 0] = F32(n)
        rois[n, :m, 1:] = found
        out_scores[n, :m] = score[kept]
        if m < post:
            rois[n, m, 0] = F32(-1)
    return rois.reshape(batch * post, 5), out_scores.reshape(batch * post)

