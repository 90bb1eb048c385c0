"""DetectionOutput-1 and DetectionOutput-8: SSD's detection head. Box offsets are decoded
against prior boxes, each class's candidates go through hard non-maximum suppression, the best
`keep_top_k` of an image survive, and the detections come out as rows of
`[image, label, confidence, xmin, ymin, xmax, ymax]`.

Inputs: box_logits `[N, P * L * 4]` (`L` is 1 with `share_location`, else the number of
classes `C`), class_preds `[N, P * C]`, proposals `[1 or N, 1 or 2, P * S]` (`S` is 4 with
`normalized`, else 5 with the image index in front of each box; the second row, present unless
`variance_encoded_in_target`, holds four variances per prior in its first `P * 4` values), and
optionally aux_class_preds `[N, P * 2]` and aux_box_preds (box_logits' shape) of RefineDet's
anchor refinement. Version 1 takes `num_classes`; version 8 drops it and reads `C` from the
shapes (class_preds' width over `P`). Both keep `background_label_id`.

What is computed, as OpenVINO's core reference and CPU plugin do it:

* Decoding. A prior's corners are divided by `input_width` / `input_height` when not
  `normalized` (no `+1` pixel arithmetic anywhere). `CORNER`: each corner plus its variance
  times its offset. `CENTER_SIZE`: centre moved by variance * offset * prior size, size scaled
  by `exp(variance * offset)`. Without variances the offsets are used as they are.
  `clip_before_nms` clamps the decoded corners to [0, 1] (a NaN corner becomes 1, as the C++
  `max(0, min(1, x))` does). With the two refinement inputs the priors are first decoded with
  aux_box_preds, and those boxes then serve as the priors of box_logits (divided by the image
  size a second time when not `normalized`, as both OpenVINO implementations do); a prior whose
  aux_class_preds objectness `[p * 2 + 1]` is below `objectness_score` gets confidence 1 for
  the background label and 0 for every other.
* Caffe style (`decrease_label_id` false): for each image and each class but the background,
  the priors whose confidence is above `confidence_threshold` (strictly), best first (equal
  confidences: lower prior index first), at most `top_k` of them (when `top_k` > -1), then
  greedy NMS: a box is dropped when its IoU with a kept box exceeds `nms_threshold`. IoU is
  intersection over union of plain (not +1) areas; boxes that only touch or are inverted do
  not overlap.
* MXNet style (`decrease_label_id` true): each prior takes its best class among 1..C-1
  (skipping the background; the first of equal maxima, a confidence above -1 required), kept
  when that confidence is at least `confidence_threshold`; the image's candidates are ordered
  best first (equal confidences: lower prior index first), cut to `top_k` (unless -1), and NMS
  runs within each class in that order. Labels come out decreased by one.
* `keep_top_k[0]` > -1 and more detections than that in an image: the best `keep_top_k[0]`
  survive, ranked by confidence, then lower prior index, then (a choice, see below) lower label.
* Output `[1, 1, R, 7]`: for each image, for each label ascending, its detections in NMS order
  (`clip_after_nms` clamps the coordinates); then, when fewer than R rows were written, one row
  whose first element is -1 and the rest of the output zeros. R is N * keep_top_k[0] when that
  is positive, else N * top_k * C when keep_top_k[0] is -1 and top_k positive, else N * P * C.

Compute type: f64 inputs are computed in f64, as the core reference does; every other float
type in f32 (with `exp` rounded once from f64), rounded once to the output type. The core
reference computes f16 and bf16 step by step in the 16-bit type; the CPU plugin computes in f32,
which irscatter follows. Proposals may be of another float type than box_logits (OpenVINO's
validation allows it); they are read in the compute type.

Choices where OpenVINO is silent or its two implementations differ:
* Equal (confidence, prior) pairs of different labels at the keep_top_k cut: the reference's
  `std::sort` is not stable there (and the CPU plugin's gathering order depends on its
  threads); irscatter keeps the lower label.
* MXNet-style equal confidences of different classes at the top_k cut: the reference orders by
  prior index, which irscatter follows; the CPU plugin by class then prior.
* Not `normalized`: the CPU plugin ignores the priors from the first whose image index is -1
  on; the reference and irscatter read all P priors.
* `decrease_label_id` with a background_label_id other than 0: the CPU plugin refuses it, the
  reference (and irscatter) skip that background class among 1..C-1.
* Refinement inputs with one set of priors for N > 1 images: the reference reads past its
  priors, the CPU plugin shares them between images, as irscatter does.
"""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal

import numpy as np

from irscatter.ir.element_types import ElementType
from irscatter.ir.shapes import Dimension, PartialShape
from irscatter.limits import check_allocation
from irscatter.ops.base import IntList, IRBool, Lower, Op, OpAttrs, TensorInfo, check
from irscatter.ops.common.boxes import greedy_keep, pairwise_iou
from irscatter.ops.common.numeric import from_compute
from irscatter.ops.common.types import check_float, same_element_type
from irscatter.ops.registry import register

CodeType = Annotated[Literal["caffe.priorboxparameter.corner", "caffe.priorboxparameter.center_size"], Lower]


class DetectionOutput8Attrs(OpAttrs):
    background_label_id: int = 0
    top_k: int = -1
    variance_encoded_in_target: IRBool = False
    keep_top_k: IntList
    code_type: CodeType = "caffe.priorboxparameter.corner"
    share_location: IRBool = True
    nms_threshold: float
    confidence_threshold: float = 0.0
    clip_after_nms: IRBool = False
    clip_before_nms: IRBool = False
    decrease_label_id: IRBool = False
    normalized: IRBool = False
    input_height: int = 1
    input_width: int = 1
    objectness_score: float = 0.0


class DetectionOutput1Attrs(DetectionOutput8Attrs):
    num_classes: int


def _known(d: Dimension) -> int | None:
    return int(d) if d.is_static else None


# --- the kernel ---------------------------------------------------------------------------------


def _clip01(x: np.ndarray) -> np.ndarray:
    """`max(0, min(1, x))` with C++'s `std::min`/`std::max` argument order: NaN becomes 1."""
    one, zero = x.dtype.type(1), x.dtype.type(0)
    y = np.where(x < one, x, one)
    return np.where(zero < y, y, zero)


def _decode(priors: np.ndarray, variances: np.ndarray, offsets: np.ndarray, attrs, scale: np.ndarray) -> np.ndarray:
    """Boxes `[..., 4]` from priors and offsets (broadcast against each other), operation by
    operation in the order of OpenVINO's kernels. `scale` divides the prior corners (the image
    size, when not normalized); `variances` are ones when they are encoded in the offsets
    (multiplying by 1 is exact, so one formula serves both)."""
    dt = offsets.dtype
    p = priors / scale if not attrs.normalized else priors
    if attrs.code_type == "caffe.priorboxparameter.corner":
        out = p + variances * offsets
    else:
        size = p[..., 2:4] - p[..., 0:2]
        centre = (p[..., 0:2] + p[..., 2:4]) / dt.type(2)
        moved = variances[..., 0:2] * offsets[..., 0:2] * size + centre
        grow = variances[..., 2:4] * offsets[..., 2:4]
        if dt == np.float64:
            factor = np.exp(grow)
        else:
            with np.errstate(over="ignore"):
                factor = np.exp(grow.astype(np.float64)).astype(dt)
        half = factor * size / dt.type(2)
        out = np.concatenate([moved - half, moved + half], axis=-1)
    return _clip01(out) if attrs.clip_before_nms else out


# Suppressing many candidate lists side by side costs a table of overlaps per list; beyond these
# sizes (long lists when top_k is -1) each list is suppressed on its own instead.
_SIDE_BY_SIDE_LENGTH = 1024
_SIDE_BY_SIDE_CELLS = 2**25


def _suppress(groups: list[np.ndarray], threshold: float) -> list[np.ndarray]:
    """Greedy NMS (`greedy_keep`: drop a box whose IoU with a kept one exceeds `threshold`) of
    each of many independent candidate lists, best first; returns each list's kept positions.
    Short lists go side by side: one step per position, across every list at once."""
    longest = max((g.shape[0] for g in groups), default=0)
    if longest > _SIDE_BY_SIDE_LENGTH or len(groups) * longest * longest > _SIDE_BY_SIDE_CELLS:
        return [greedy_keep(g, threshold) for g in groups]
    over = np.zeros((len(groups), longest, longest), dtype=bool)
    alive = np.zeros((len(groups), longest), dtype=bool)
    for i, g in enumerate(groups):
        over[i, : g.shape[0], : g.shape[0]] = pairwise_iou(g, g) > g.dtype.type(threshold)
        alive[i, : g.shape[0]] = True
    for j in range(longest - 1):  # a box alive at its turn is kept, and drops the later ones it overlaps
        alive[:, j + 1:] &= ~(alive[:, j: j + 1] & over[:, j, j + 1:])
    return [np.flatnonzero(alive[i, : g.shape[0]]) for i, g in enumerate(groups)]


def _first_keep(ranked: np.ndarray, keep: int) -> np.ndarray:
    mask = np.zeros(ranked.size, dtype=bool)
    mask[ranked[:keep]] = True
    return mask


def detection_output(attrs, num_classes: int, loc: np.ndarray, conf: np.ndarray, priors: np.ndarray,
                     arm_conf: np.ndarray | None, arm_loc: np.ndarray | None, rows: int) -> np.ndarray:
    """The `[rows, 7]` detections of already converted (compute dtype) inputs."""
    dt = loc.dtype
    n_img = loc.shape[0]
    size = 4 if attrs.normalized else 5
    n_pri = priors.shape[2] // size
    n_cls = num_classes
    n_loc = 1 if attrs.share_location else n_cls
    bg = attrs.background_label_id

    # priors [B, P, 4] and variances [B, P, 4], B being 1 (shared) or N
    corners = priors[:, 0, : n_pri * size].reshape(priors.shape[0], n_pri, size)[..., size - 4:]
    if attrs.variance_encoded_in_target:
        variances = np.ones_like(corners)
    else:
        variances = priors[:, 1, : n_pri * 4].reshape(priors.shape[0], n_pri, 4)
    scale = np.array([attrs.input_width, attrs.input_height] * 2, dtype=dt)

    offsets = loc.reshape(n_img, n_pri, n_loc, 4)
    corners, variances = corners[:, :, None, :], variances[:, :, None, :]  # against [N, P, L, 4]
    if arm_loc is not None:
        corners = _decode(corners, variances, arm_loc.reshape(n_img, n_pri, n_loc, 4), attrs, scale)
    boxes = _decode(corners, variances, offsets, attrs, scale)  # [N, P, L, 4]
    boxes = np.broadcast_to(boxes, (n_img, n_pri, n_loc, 4))

    scores = conf.reshape(n_img, n_pri, n_cls)
    if arm_conf is not None:
        weak = arm_conf.reshape(n_img, n_pri, 2)[:, :, 1] < dt.type(np.float32(attrs.objectness_score))
        refined = (np.arange(n_cls) == bg).astype(dt)
        scores = np.where(weak[:, :, None], refined, scores)

    nms_thr = float(np.float32(attrs.nms_threshold))
    conf_thr = dt.type(np.float32(attrs.confidence_threshold))
    # the candidates of every (image, label), labels ascending, each best first
    groups: list[tuple[int, int, np.ndarray]] = []
    for n in range(n_img):
        if not attrs.decrease_label_id:
            for c in range(n_cls):
                if c == bg:
                    continue
                s = scores[n, :, c]
                cand = np.flatnonzero(s > conf_thr)
                order = cand[np.argsort(-s[cand], kind="stable")]
                if attrs.top_k > -1:
                    order = order[: attrs.top_k]
                if order.size:
                    groups.append((n, c, order))
        else:
            allowed = np.arange(n_cls) >= 1
            if -1 < bg < n_cls:
                allowed[bg] = False
            s = np.where(allowed & ~np.isnan(scores[n]), scores[n], dt.type(-np.inf))
            best = np.argmax(s, axis=1)
            value = s[np.arange(n_pri), best]
            cand = np.flatnonzero((value > dt.type(-1)) & (value >= conf_thr))
            order = cand[np.argsort(-value[cand], kind="stable")]
            if attrs.top_k >= 0:
                order = order[: attrs.top_k]
            labels = best[order]
            groups += [(n, int(c), order[labels == c]) for c in np.unique(labels)]
    kept = _suppress([boxes[n, order, 0 if attrs.share_location else c] for n, c, order in groups], nms_thr)

    keep_top = attrs.keep_top_k[0]
    out = np.zeros((rows, 7), dtype=dt)
    count = 0
    for n in range(n_img):
        mine = [(c, order[k]) for (m, c, order), k in zip(groups, kept) if m == n]
        if not mine:
            continue
        label = np.concatenate([np.full(k.size, c, np.int64) for c, k in mine])
        prior = np.concatenate([k for _, k in mine])
        score = scores[n, prior, label]
        if keep_top > -1 and label.size > keep_top:
            ranked = np.lexsort((label, prior, -score))
            chosen = _first_keep(ranked, keep_top)
            label, prior, score = label[chosen], prior[chosen], score[chosen]
        take = min(label.size, rows - count)  # never short: R bounds the detections of every rule
        label, prior, score = label[:take], prior[:take], score[:take]
        coords = boxes[n, prior, 0 if attrs.share_location else label]
        if attrs.clip_after_nms:
            coords = _clip01(coords)
        block = out[count: count + take]
        block[:, 0] = n
        block[:, 1] = label - 1 if attrs.decrease_label_id else label
        block[:, 2] = score
        block[:, 3:7] = coords
        count += take
    if count < rows:
        out[count, 0] = -1
    return out


# --- the ops ------------------------------------------------------------------------------------


@register("DetectionOutput", 1)
class DetectionOutput(Op):
    labels = {
        "detection-output-rank": "box_logits, class_preds and the refinement inputs of a DetectionOutput are not 2-D, "
                                 "or its proposals not 3-D",
        "detection-output-priors": "a DetectionOutput's proposals are not a whole number of prior boxes "
                                   "(4 values each when normalized, else 5), or DetectionOutput-8 has none",
        "detection-output-variances": "a DetectionOutput's proposals do not have 2 rows (boxes, variances), or 1 "
                                      "with variance_encoded_in_target",
        "detection-output-batch": "the batch dimensions of a DetectionOutput's inputs disagree (proposals may "
                                  "have batch 1)",
        "detection-output-shape": "a DetectionOutput's box_logits, class_preds or refinement inputs do not match "
                                  "its number of priors and classes",
        "detection-output-classes": "a DetectionOutput's number of classes is not positive",
        "detection-output-keep-top-k": "a DetectionOutput's keep_top_k is empty",
        "detection-output-image-size": "a DetectionOutput with normalized=false has an input_height or input_width "
                                       "that is not positive",
        "detection-output-objectness": "a DetectionOutput's objectness_score is negative",
    }

    # -1's schema is -8's and num_classes; this class's code handles both.
    Attrs: ClassVar[type[DetectionOutput8Attrs]] = DetectionOutput1Attrs
    attrs: DetectionOutput8Attrs
    inputs = ("box_logits", "class_preds", "proposals", "aux_class_preds", "aux_box_preds")
    optional_inputs = 2

    def check_arity(self, n_inputs: int, n_outputs: int) -> None:
        check(n_inputs in (3, 5), "input-count",
              f"takes 3 inputs (box_logits, class_preds, proposals) or 5 (with aux_class_preds, aux_box_preds), "
              f"the layer has {n_inputs}")
        super().check_arity(n_inputs, n_outputs)

    def attribute_classes(self) -> int | None:
        """num_classes, which -8 no longer has: its classes come from the inputs' shapes."""
        return self.attrs.num_classes if isinstance(self.attrs, DetectionOutput1Attrs) else None

    def _check_attrs(self) -> None:
        a = self.attrs
        n = self.attribute_classes()
        check(n is None or n > 0, "detection-output-classes", f"num_classes must be positive, found {n}",
              port=self.port("num_classes") if n is not None else None)
        check(len(a.keep_top_k) > 0, "detection-output-keep-top-k", "keep_top_k must hold at least one value",
              port=self.port("keep_top_k"))
        check(a.normalized or (a.input_height > 0 and a.input_width > 0), "detection-output-image-size",
              f"input_height ({a.input_height}) and input_width ({a.input_width}) must be positive when "
              f"normalized is false", port=self.port("input_height" if a.input_height <= 0 else "input_width"))
        check(not a.objectness_score < 0, "detection-output-objectness",
              f"objectness_score must not be negative, found {a.objectness_score}", port=self.port("objectness_score"))

    def infer(self, box_logits: TensorInfo, class_preds: TensorInfo, proposals: TensorInfo,
              aux_class_preds: TensorInfo | None = None, aux_box_preds: TensorInfo | None = None) -> TensorInfo:
        self._check_attrs()
        a = self.attrs
        check_float(self, box_logits.etype, "box_logits")
        etype = same_element_type(box_logits, class_preds, "class_preds must have box_logits' element type",
                                  "same-element-type", self.port("class_preds"))
        check_float(self, proposals.etype, "proposals")
        given = {"box_logits": box_logits, "class_preds": class_preds, "proposals": proposals}
        if aux_class_preds is not None and aux_box_preds is not None:
            same_element_type(class_preds, aux_class_preds, "aux_class_preds must have class_preds' element type",
                              "same-element-type", self.port("aux_class_preds"))
            same_element_type(box_logits, aux_box_preds, "aux_box_preds must have box_logits' element type",
                              "same-element-type", self.port("aux_box_preds"))
            given.update(aux_class_preds=aux_class_preds, aux_box_preds=aux_box_preds)
        dims: dict[str, tuple[Dimension, ...] | None] = {}
        for name, info in given.items():
            want = 3 if name == "proposals" else 2
            if info.shape.rank_is_static:
                check(info.shape.rank == want, "detection-output-rank",
                      f"{name} must be {want}-D, found shape {info.shape}", port=self.port(name))
                dims[name] = tuple(info.shape.ranked_dims)
            else:
                dims[name] = None

        def dim(name: str, axis: int) -> int | None:
            d = dims.get(name)
            return None if d is None else _known(d[axis])

        # the number of priors P, then of classes C
        size = 4 if a.normalized else 5
        priors = None
        width = dim("proposals", 2)
        if width is not None:
            check(width % size == 0, "detection-output-priors",
                  f"proposals' last dimension ({width}) must be a multiple of {size} (the values of one prior box "
                  f"with normalized={str(a.normalized).lower()})", port=self.port("proposals"))
            priors = width // size
        elif (aux_width := dim("aux_class_preds", 1)) is not None:
            priors = aux_width // 2
        classes = self.attribute_classes()
        if classes is None:
            check(priors is None or priors > 0, "detection-output-priors",
                  "proposals hold no prior box, so the number of classes cannot be told", port=self.port("proposals"))
            if priors and (class_width := dim("class_preds", 1)) is not None:
                classes = class_width // priors
            elif priors and not a.share_location and (logits_width := dim("box_logits", 1)) is not None:
                classes = logits_width // (priors * 4)
            check(classes is None or classes > 0, "detection-output-classes",
                  f"class_preds' width ({dim('class_preds', 1)}) over {priors} priors gives no class",
                  port=self.port("class_preds"))
        loc = 1 if a.share_location else classes
        if priors is None and loc and (logits_width := dim("box_logits", 1)) is not None:
            check(logits_width % (loc * 4) == 0, "detection-output-shape",
                  f"box_logits' width ({logits_width}) must be a multiple of {loc * 4}",
                  port=self.port("box_logits"))
            priors = logits_width // (loc * 4)
        if priors is None and classes and (class_width := dim("class_preds", 1)) is not None:
            priors = class_width // classes

        def expect(name: str, axis: int, value: int | None, what: str) -> None:
            got = dim(name, axis)
            check(value is None or got is None or got == value, "detection-output-shape",
                  f"{name}' dimension {axis} must be {what} ({value}), found {got}", port=self.port(name))

        if priors is not None:
            if loc is not None:
                expect("box_logits", 1, priors * loc * 4, "num_prior_boxes * num_loc_classes * 4")
            if classes is not None:
                expect("class_preds", 1, priors * classes, "num_prior_boxes * num_classes")
            expect("aux_class_preds", 1, priors * 2, "num_prior_boxes * 2")
            got = dim("proposals", 2)
            check(got is None or got == priors * size, "detection-output-priors",
                  f"proposals' last dimension must be num_prior_boxes * {size} ({priors * size}), found {got}",
                  port=self.port("proposals"))
        aux_dims, logits_dims = dims.get("aux_box_preds"), dims.get("box_logits")
        if aux_box_preds is not None and aux_dims is not None and logits_dims is not None:
            for axis in (0, 1):
                check(aux_dims[axis].compatible(logits_dims[axis]), "detection-output-shape",
                      f"aux_box_preds' shape ({aux_box_preds.shape}) must be box_logits' ({box_logits.shape})",
                      port=self.port("aux_box_preds"))

        # the batch
        batch: Dimension = Dimension.dynamic()
        for name in ("box_logits", "class_preds", "aux_class_preds"):
            d = dims.get(name)
            if d is None:
                continue
            check(d[0].compatible(batch), "detection-output-batch",
                  f"{name}' batch dimension ({d[0]}) differs from the other inputs' ({batch})", port=self.port(name))
            if batch.is_dynamic and d[0].is_static:
                batch = d[0]
        proposal_dims = dims.get("proposals")
        if proposal_dims is not None:
            first, rows = proposal_dims[0], proposal_dims[1]
            check(first.compatible(Dimension.static(1)) or first.compatible(batch), "detection-output-batch",
                  f"proposals' first dimension ({first}) must be 1 or the batch ({batch})", port=self.port("proposals"))
            want = 1 if a.variance_encoded_in_target else 2
            check(rows.compatible(Dimension.static(want)), "detection-output-variances",
                  f"proposals' second dimension must be {want} with variance_encoded_in_target="
                  f"{str(a.variance_encoded_in_target).lower()}, found {rows}", port=self.port("proposals"))

        n = _known(batch)
        keep, top_k = a.keep_top_k[0], a.top_k
        if keep > 0:
            total = None if n is None else n * keep
        elif keep == -1 and top_k > 0:
            total = None if n is None or classes is None else n * top_k * classes
        else:
            total = None if n is None or classes is None or priors is None else n * priors * classes
        return TensorInfo(etype, PartialShape.of([1, 1, -1 if total is None else total, 7]))

    def compute(self, box_logits: np.ndarray, class_preds: np.ndarray, proposals: np.ndarray,
                aux_class_preds: np.ndarray | None = None, aux_box_preds: np.ndarray | None = None) -> np.ndarray:
        etype = ElementType.from_dtype(box_logits.dtype)
        dt = np.dtype(np.float64) if etype is ElementType.f64 else np.dtype(np.float32)
        a = self.attrs
        size = 4 if a.normalized else 5
        priors = proposals.shape[2] // size
        n = box_logits.shape[0]
        classes = self.attribute_classes()
        if classes is None:
            classes = class_preds.shape[1] // priors
        keep, top_k = a.keep_top_k[0], a.top_k
        rows = n * keep if keep > 0 else n * top_k * classes if keep == -1 and top_k > 0 else n * priors * classes
        check_allocation([1, 1, rows, 7], box_logits.dtype.itemsize)

        def as_dt(x: np.ndarray | None) -> np.ndarray | None:
            return None if x is None else x.astype(dt)

        arm = aux_class_preds is not None and aux_box_preds is not None
        with np.errstate(invalid="ignore", over="ignore"):  # NaN and infinite boxes overlap nothing
            out = detection_output(a, classes, box_logits.astype(dt), class_preds.astype(dt), proposals.astype(dt),
                                   as_dt(aux_class_preds) if arm else None, as_dt(aux_box_preds) if arm else None,
                                   rows)
        return from_compute(out.reshape(1, 1, rows, 7), etype)


@register("DetectionOutput", 8)
class DetectionOutput8(DetectionOutput):
    """DetectionOutput-8: no num_classes attribute; the number of classes is class_preds' width
    over the number of priors (proposals' last dimension over 4 or 5), so there must be priors."""

    Attrs = DetectionOutput8Attrs
