"""Oracles of MatrixNms-8 and MulticlassNms-8/-9: the spec's algorithms, one box pair and one
candidate per Python step, in the compute type of OpenVINO's reference (numpy f32 scalars for
f16, bf16 and f32 boxes; f64 for f64), with the choices irscatter documents in
`irscatter/ops/suppression/matrix_nms.py` and `multiclass_nms.py` (ties by box index, NaN
scores never candidates, the reference's Matrix NMS IoU, suppression above the threshold).

Each returns (selected_outputs [n, 6] in the boxes' type, selected_indices [n, 1] and
valid_outputs [batches] of `output_type`).
"""

from __future__ import annotations

import math

import numpy as np


def _compute(dtype):
    return np.float64 if np.dtype(dtype) == np.float64 else np.float32


def _order(scores, candidates, top_k):
    """Candidates sorted by score descending, then index ascending, at most top_k."""
    ranked = sorted(candidates, key=lambda i: (-float(scores[i]), i))
    return ranked if top_k < 0 else ranked[:top_k]


def _finish(found, images, keep_top_k, order, across, dtype, output_type):
    """found: (batch, class, box, flat index, score, box row) per detection."""
    kept = []
    for n in range(images):
        mine = sorted((d for d in found if d[0] == n), key=lambda d: (-float(d[4]), d[1], d[2]))
        if keep_top_k > -1:
            mine = mine[:keep_top_k]
        if order == "classid" and not across:
            mine = sorted(mine, key=lambda d: (d[1], -float(d[4]), d[2]))
        kept.extend(mine)
    if across and order == "score":
        kept = sorted(kept, key=lambda d: (-float(d[4]), d[0], d[1], d[2]))
    elif across and order == "classid":
        kept = sorted(kept, key=lambda d: (d[1], d[0], -float(d[4]), d[2]))
    rows = np.array([[d[1], d[4], *d[5]] for d in kept], np.float64).reshape(len(kept), 6)
    index = np.int32 if output_type == "i32" else np.int64
    valid = np.array([sum(1 for d in kept if d[0] == n) for n in range(images)], index)
    return rows.astype(dtype), np.array([d[3] for d in kept], index).reshape(-1, 1), valid


def _sort_name(sort_result_type, sort_result):
    if sort_result_type is not None:
        return sort_result_type
    return "classid" if sort_result == "class" else sort_result


# --- MatrixNms ----------------------------------------------------------------------------------


def matrix_iou(box1, box2, normalized, t):
    """The Matrix NMS reference's IoU of box1 (the later candidate) and box2 (an earlier one)."""
    if box2[0] > box1[2] or box2[2] < box1[0] or box2[1] > box1[3] or box2[3] < box1[1]:
        return t(0)
    norm = t(0) if normalized else t(1)

    def area(b):
        if b[2] < b[0] or b[3] < b[1]:
            return t(0)
        return (b[2] - b[0] + norm) * (b[3] - b[1] + norm) if not normalized else (b[2] - b[0]) * (b[3] - b[1])

    w = min(box1[2], box2[2]) if not (math.isnan(box1[2]) or math.isnan(box2[2])) else t("nan")
    w = w - (max(box1[0], box2[0]) if not (math.isnan(box1[0]) or math.isnan(box2[0])) else t("nan")) + norm
    h = min(box1[3], box2[3]) if not (math.isnan(box1[3]) or math.isnan(box2[3])) else t("nan")
    h = h - (max(box1[1], box2[1]) if not (math.isnan(box1[1]) or math.isnan(box2[1])) else t("nan")) + norm
    inter = w * h
    with np.errstate(all="ignore"):
        return (inter / (area(box1) + area(box2) - inter)).astype(t)


def matrix_nms(boxes, scores, *, sort_result_type=None, sort_result="none", sort_result_across_batch=False,
               output_type="i64", score_threshold=0.0, nms_top_k=-1, keep_top_k=-1, background_class=-1,
               normalized=True, decay_function="linear", gaussian_sigma=2.0, post_threshold=0.0):
    t = _compute(boxes.dtype)
    b = boxes.astype(t)
    s = scores.astype(t)
    images, classes, count = scores.shape
    found = []
    for n in range(images):
        for c in range(classes):
            if c == background_class:
                continue
            sc = s[n, c]
            cand = [i for i in range(count) if sc[i] > t(np.float32(score_threshold))]
            order = _order(sc, cand, nms_top_k)
            largest = []
            for i, bi in enumerate(order):
                best = t(0)
                for j in range(i):
                    v = matrix_iou(b[n, bi], b[n, order[j]], normalized, t)
                    if v > best:  # a NaN IoU never raises the maximum
                        best = v
                largest.append(best)
            for i, bi in enumerate(order):
                decay = t(1)
                for j in range(i):
                    x = matrix_iou(b[n, bi], b[n, order[j]], normalized, t)
                    k = largest[j]
                    with np.errstate(all="ignore"):
                        if decay_function == "gaussian":
                            f = np.exp((k * k - x * x) * t(np.float32(gaussian_sigma)))
                        else:
                            guard = np.float64(np.float32(1e-10))
                            f = t((np.float64(1) - np.float64(x)) / (np.float64(1) - np.float64(k) + guard))
                    if f < decay:  # a NaN decay never lowers the minimum
                        decay = f
                ds = decay * sc[bi]
                if ds > t(np.float32(post_threshold)):
                    found.append((n, c, bi, n * count + bi, ds, b[n, bi]))
    return _finish(found, images, keep_top_k, _sort_name(sort_result_type, sort_result), sort_result_across_batch,
                   boxes.dtype, output_type)


# --- MulticlassNms --------------------------------------------------------------------------------


def multiclass_iou(bi, bj, normalized, t):
    """IoU with widths and heights +1 when not normalized; 0 when either box has no positive area."""
    norm = t(0) if normalized else t(1)
    area_i = (bi[3] - bi[1] + norm) * (bi[2] - bi[0] + norm)
    area_j = (bj[3] - bj[1] + norm) * (bj[2] - bj[0] + norm)
    if not (area_i > 0 and area_j > 0):
        return t(0)
    ih = min(bi[3], bj[3]) - max(bi[1], bj[1]) + norm
    iw = min(bi[2], bj[2]) - max(bi[0], bj[0]) + norm
    inter = (ih if ih > 0 else t(0)) * (iw if iw > 0 else t(0))
    union = area_i + area_j - inter
    return inter / union if union > 0 else t(0)


def _greedy(b, sc, attrs, t):
    a = attrs
    cand = [i for i in range(len(sc)) if sc[i] >= t(np.float32(a["score_threshold"]))]
    remaining = _order(sc, cand, a["nms_top_k"])
    threshold = np.float32(a["iou_threshold"])
    eta = np.float32(a["nms_eta"])
    kept = []
    if a["openvino"]:
        # OpenVINO's rule: each candidate against every kept box at the current threshold,
        # suppressed when the IoU reaches it
        for i in remaining:
            if not any(multiclass_iou(b[i], b[k], a["normalized"], t) >= t(threshold) for k in kept):
                if eta < 1 and threshold > 0.5:
                    threshold = np.float32(threshold * eta)
                kept.append(i)
        return kept
    while remaining:
        best = remaining.pop(0)
        kept.append(best)
        if eta < 1 and threshold > 0.5:
            threshold = np.float32(threshold * eta)
        remaining = [i for i in remaining
                     if not multiclass_iou(b[best], b[i], a["normalized"], t) > t(threshold)]
    return kept


def multiclass_nms(boxes, scores, roisnum=None, *, sort_result_type=None, sort_result="none",
                   sort_result_across_batch=False, output_type="i64", iou_threshold=0.0, score_threshold=0.0,
                   nms_top_k=-1, keep_top_k=-1, background_class=-1, normalized=True, nms_eta=1.0,
                   openvino=False):
    """`openvino=True` follows OpenVINO's rule instead of the spec's (see the module doc of
    multiclass_nms): tests use it to tell the cases where OpenVINO must agree."""
    t = _compute(boxes.dtype)
    b = boxes.astype(t)
    s = scores.astype(t)
    attrs = dict(score_threshold=score_threshold, nms_top_k=nms_top_k, iou_threshold=iou_threshold,
                 nms_eta=nms_eta, normalized=normalized, openvino=openvino)
    found = []
    if roisnum is None:
        images, classes, count = scores.shape
        for n in range(images):
            for c in range(classes):
                if c != background_class:
                    for i in _greedy(b[n], s[n, c], attrs, t):
                        found.append((n, c, i, n * count + i, s[n, c, i], b[n, i]))
    else:
        classes = scores.shape[0]
        images = len(roisnum)
        head = 0
        for n in range(images):
            size = int(roisnum[n])
            for c in range(classes):
                if c != background_class and size > 0:
                    for i in _greedy(b[c, head:head + size], s[c, head:head + size], attrs, t):
                        found.append((n, c, i, (head + i) * classes + c, s[c, head + i], b[c, head + i]))
            head += size
    return _finish(found, images, keep_top_k, _sort_name(sort_result_type, sort_result), sort_result_across_batch,
                   boxes.dtype, output_type)
