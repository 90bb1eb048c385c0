"""Oracles of NonMaxSuppression-1/-3/-4/-5/-9 and NMSRotated-13: the reference's priority queue
transcribed box by box, with Python's heapq, one IoU per pair of boxes.

Two rules for the thresholds. `rule="spec"` (the default) is the spec pages': a box scoring at
least score_threshold takes part (and stays in the queue while its decayed score is at least
score_threshold), and a box is removed when its IoU with a selected one is above iou_threshold,
in every version (-9's soft NMS removes none). `rule="cpu"` is what OpenVINO's CPU plugin does,
to record it: only scores above score_threshold take part; axis-aligned boxes are removed at IoU
>= iou_threshold without soft NMS, and -5's soft NMS runs as -9's; rotated boxes are removed at
IoU > iou_threshold. (-1/-3/-4's output stays padded with -1 rows under both rules.)

Arithmetic is f32 wherever OpenVINO's reference computes in f32 (numpy float32 scalars, one
rounding per operation, the reference's operation order); exp is taken in double and rounded
once, as a correctly rounded expf gives. A box with a NaN coordinate overlaps nothing (irscatter's
documented choice, where the reference's result depends on std::min/max argument order).

The rotated IoU is written independently of irscatter's: one box clipped by the four edges of
the other (Sutherland-Hodgman) in Python floats, the area by the shoelace formula. It agrees
with the kernel to a few ulps, so the tests keep IoUs away from the threshold.
"""

from __future__ import annotations

import heapq
import math

import numpy as np

F = np.float32


def _f(v) -> np.float32:
    return F(float(v))


# --- boxes --------------------------------------------------------------------------------------


def corner_box(box, encoding: str):
    """(lo0, lo1, hi0, hi1) as f32 from a corner or center box."""
    a, b, c, d = (_f(v) for v in box)
    if encoding == "center":  # x_center, y_center, width, height
        return (a - c / F(2), b - d / F(2), a + c / F(2), b + d / F(2))
    return (min(a, c) if not (math.isnan(a) or math.isnan(c)) else F("nan"),
            min(b, d) if not (math.isnan(b) or math.isnan(d)) else F("nan"),
            max(a, c) if not (math.isnan(a) or math.isnan(c)) else F("nan"),
            max(b, d) if not (math.isnan(b) or math.isnan(d)) else F("nan"))


def box_iou(p, q) -> np.float32:
    with np.errstate(all="ignore"):
        area_p = (p[2] - p[0]) * (p[3] - p[1])
        area_q = (q[2] - q[0]) * (q[3] - q[1])
        if not (area_p > 0 and area_q > 0):
            return F(0)
        high0, low0 = min(p[2], q[2]), max(p[0], q[0])
        high1, low1 = min(p[3], q[3]), max(p[1], q[1])
        inter = max(high0 - low0, F(0)) * max(high1 - low1, F(0))
        union = area_p + area_q - inter
        if not union > 0:
            return F(0)
        return F(inter / union)


def rotated_corners(box, clockwise: bool):
    x, y, w, h, a = (_f(v) for v in box)
    theta = float(a) if clockwise else -float(a)
    with np.errstate(all="ignore"):
        c = F(math.cos(theta)) * F(0.5) if math.isfinite(theta) else F("nan")
        s = F(math.sin(theta)) * F(0.5) if math.isfinite(theta) else F("nan")
        p0 = (x - s * h - c * w, y + c * h - s * w)
        p1 = (x + s * h - c * w, y - c * h - s * w)
        p2 = (F(2) * x - p0[0], F(2) * y - p0[1])
        p3 = (F(2) * x - p1[0], F(2) * y - p1[1])
    return [tuple(float(v) for v in p) for p in (p0, p1, p2, p3)]


def _signed_area(poly) -> float:
    return sum(poly[k][0] * poly[(k + 1) % len(poly)][1] - poly[(k + 1) % len(poly)][0] * poly[k][1]
               for k in range(len(poly))) / 2


def _clip(poly, a, b, sign):
    """The part of polygon `poly` on the inner side of the line a->b (sign: the rectangle's turn)."""
    def side(p):
        return sign * ((b[0] - a[0]) * (p[1] - a[1]) - (b[1] - a[1]) * (p[0] - a[0]))
    out = []
    for k in range(len(poly)):
        cur, nxt = poly[k], poly[(k + 1) % len(poly)]
        sc, sn = side(cur), side(nxt)
        if sc >= 0:
            out.append(cur)
        if (sc >= 0) != (sn >= 0):
            t = sc / (sc - sn)
            out.append((cur[0] + t * (nxt[0] - cur[0]), cur[1] + t * (nxt[1] - cur[1])))
    return out


def rotated_iou(b1, b2, clockwise: bool) -> np.float32:
    area1, area2 = _f(b1[2]) * _f(b1[3]), _f(b2[2]) * _f(b2[3])
    if not (area1 > 0 and area2 > 0):
        return F(0)
    p, q = rotated_corners(b1, clockwise), rotated_corners(b2, clockwise)
    if any(math.isnan(v) for pt in p + q for v in pt):
        return F(0)
    sign = 1.0 if _signed_area(q) >= 0 else -1.0
    poly = p
    for k in range(4):
        if not poly:
            break
        poly = _clip(poly, q[k], q[(k + 1) % 4], sign)
    inter = F(abs(_signed_area(poly))) if len(poly) >= 3 else F(0)
    with np.errstate(all="ignore"):
        union = area1 + area2 - inter
        if not union > 0:
            return F(0)
        return F(inter / union)


# --- the selection ------------------------------------------------------------------------------


def _select(boxes, scores, limit, iou_threshold, score_threshold, sigma, version, overlap, rule):
    """One class: [(box index, score)] in selection order, as the reference's queue gives them
    under the thresholds of `rule` ("spec" or "cpu")."""
    thr, st, sigma = _f(iou_threshold), _f(score_threshold), _f(sigma)
    soft = bool(sigma > 0)
    with np.errstate(all="ignore"):
        scale = F(-0.5) / sigma if soft else F(0)
    cpu = rule == "cpu"
    if cpu and version == 5 and soft:
        version = 9

    def enough(score):
        """Whether a score takes part (and stays in the queue)."""
        return bool(score > st) if cpu else bool(score >= st)

    def weight_and_hard(iou):
        with np.errstate(all="ignore"):
            weight = F(math.exp(float(scale * iou * iou))) if not math.isnan(float(scale * iou * iou)) else F("nan")
        if soft and version == 9:
            return weight, False
        above = bool(iou >= thr) if cpu and version != 13 else bool(iou > thr)
        return (F(0) if above or not iou <= thr else weight), above

    queue = []
    for i in range(len(scores)):
        if enough(_f(scores[i])):
            heapq.heappush(queue, (-_f(scores[i]), i, 0))
    selected = []
    while queue and len(selected) < limit:
        neg, i, begin = heapq.heappop(queue)
        score = -neg
        original = score
        hard = False
        for j in range(len(selected) - 1, begin - 1, -1):
            weight, suppressed = weight_and_hard(overlap(i, selected[j][0]))
            with np.errstate(all="ignore"):
                score = F(score * weight)
            if suppressed:
                hard = True
                break
            if not enough(score):
                break
        if hard:
            continue
        if score == original:
            selected.append((i, score))
        elif enough(score):
            heapq.heappush(queue, (-score, i, len(selected)))
    return selected


def _all_classes(boxes, scores, limit, thr, st, sigma, version, sort_descending, overlap_of, rule):
    found = []
    for b in range(scores.shape[0]):
        for c in range(scores.shape[1]):
            for i, s in _select(boxes[b], scores[b, c], limit, thr, st, sigma, version,
                                lambda i, j, b=b: overlap_of(b, i, j), rule):
                found.append((b, c, i, s))
    if sort_descending:
        found.sort(key=lambda t: (-float(t[3]), t[0], t[1], t[2]))
    return found


def _value(a, default):
    return default if a is None else np.asarray(a).reshape(-1)[0].item()


def non_max_suppression(boxes, scores, max_boxes=None, iou_threshold=None, score_threshold=None,
                        soft_nms_sigma=None, *, version, box_encoding="corner", sort_result_descending=True,
                        output_type=np.int64, rule="spec"):
    """NonMaxSuppression-`version`: -1/-3/-4 give the padded selected_indices; -5/-9 give
    (selected_indices, selected_scores, valid_outputs)."""
    boxes, scores = np.asarray(boxes), np.asarray(scores)
    limit = int(_value(max_boxes, 0))
    corners = [[corner_box(boxes[b, i], box_encoding) for i in range(boxes.shape[1])]
               for b in range(boxes.shape[0])]
    found = _all_classes(boxes, scores, limit, _value(iou_threshold, 0.0), _value(score_threshold, 0.0),
                         _value(soft_nms_sigma, 0.0), 5 if version == 5 else 9, sort_result_descending,
                         lambda b, i, j: box_iou(corners[b][i], corners[b][j]), rule)
    if version in (1, 3, 4):
        n, classes, batches = boxes.shape[1], scores.shape[1], scores.shape[0]
        size = min(n, limit) * batches * classes if version == 4 else min(n, limit * classes)
        out = np.full((size, 3), -1, dtype=output_type)
        for k, (b, c, i, _) in enumerate(found[:size]):
            out[k] = (b, c, i)
        return out
    score_type = next((np.asarray(a).dtype for a in (iou_threshold, score_threshold, soft_nms_sigma)
                       if a is not None), np.dtype(np.float32))
    return _pack(found, output_type, score_type)


def _pack(found, output_type, score_type):
    indices = np.array([(b, c, i) for b, c, i, _ in found], dtype=output_type).reshape(-1, 3)
    values = np.array([(float(b), float(c), float(s)) for b, c, _, s in found], dtype=np.float32).reshape(-1, 3)
    return indices, values.astype(score_type), np.array([len(found)], dtype=output_type)


def nms_rotated(boxes, scores, max_boxes, iou_threshold, score_threshold, *, sort_result_descending=True,
                clockwise=True, output_type=np.int64, rule="spec"):
    boxes, scores = np.asarray(boxes), np.asarray(scores)
    found = _all_classes(boxes, scores, int(_value(max_boxes, 0)), _value(iou_threshold, 0.0),
                         _value(score_threshold, 0.0), 0.0, 13, sort_result_descending,
                         lambda b, i, j: rotated_iou(boxes[b, i], boxes[b, j], clockwise), rule)
    return _pack(found, output_type, np.asarray(iou_threshold).dtype)
