"""Oracles of Proposal-1/-4 and GenerateProposals-9: one Python step per anchor, per box and per
pair of boxes, written from the spec pages and the arithmetic of OpenVINO's reference.

Every number is an f32 scalar (`np.float32`), one operation at a time, because the references
compute in float whatever the tensor type and a box one rounding away may cross a threshold.
`std::min`/`std::max` keep their C++ meaning (NaN handling included), `roundf` rounds halves
away from zero, and the pre-NMS sort is libstdc++'s `std::partial_sort` (a heap), transcribed
step by step: with equal scores its order is that algorithm's and no simpler rule's.
"""

from __future__ import annotations

import math

import numpy as np

f32 = np.float32


def _min(a, b):
    """std::min(a, b)."""
    return b if b < a else a


def _max(a, b):
    """std::max(a, b)."""
    return b if a < b else a


def _clip(v, hi):
    return _max(f32(0), _min(v, hi))


def _roundf(x):
    t = f32(math.trunc(float(x))) if math.isfinite(x) else x
    if math.isfinite(x) and abs(float(x) - float(t)) >= 0.5:
        t = f32(t + (1 if x > 0 else -1))
    return f32(t)


def partial_sort(items, k, key):
    """libstdc++'s std::partial_sort(first, first + k, last, comp) with comp(a, b) =
    key(a) > key(b): a max-heap under comp over the first k, the rest sifted through it, then
    the heap sorted. Works on a copy; returns the whole reordered list."""
    a = list(items)

    def comp(x, y):
        return key(x) > key(y)

    def adjust_heap(hole, length, value):
        top = hole
        child = hole
        while child < (length - 1) // 2:
            child = 2 * (child + 1)
            if comp(a[child], a[child - 1]):
                child -= 1
            a[hole] = a[child]
            hole = child
        if (length & 1) == 0 and child == (length - 2) // 2:
            child = 2 * (child + 1)
            a[hole] = a[child - 1]
            hole = child - 1
        parent = (hole - 1) // 2
        while hole > top and comp(a[parent], value):
            a[hole] = a[parent]
            hole = parent
            parent = (hole - 1) // 2
        a[hole] = value

    def pop_heap(last, result):
        value = a[result]
        a[result] = a[0]
        adjust_heap(0, last, value)

    if k >= 2:
        parent = (k - 2) // 2
        while True:
            adjust_heap(parent, k, a[parent])
            if parent == 0:
                break
            parent -= 1
    if k >= 1:
        for i in range(k, len(a)):
            if comp(a[i], a[0]):
                pop_heap(k, i)
    last = k
    while last > 1:
        last -= 1
        pop_heap(last, last)
    return a


def _iou_kills(bi, bj, threshold, offset):
    """Whether box i (kept) suppresses box j: corners not apart and IoU above the threshold."""
    x0i, y0i, x1i, y1i = bi
    x0j, y0j, x1j, y1j = bj
    if not (x0i <= x1j and y0i <= y1j and x0j <= x1i and y0j <= y1i):
        return False
    width = _max(f32(0), f32(f32(_min(x1i, x1j) - _max(x0i, x0j)) + offset))
    height = _max(f32(0), f32(f32(_min(y1i, y1j) - _max(y0i, y0j)) + offset))
    area = f32(width * height)
    a_area = f32(f32(f32(x1i - x0i) + offset) * f32(f32(y1i - y0i) + offset))
    b_area = f32(f32(f32(x1j - x0j) + offset) * f32(f32(y1j - y0j) + offset))
    union = f32(f32(a_area + b_area) - area)
    if union <= 0:
        return False
    return f32(threshold) < f32(area / union)


def _nms(boxes, dead, threshold, offset, limit, eta=1.0):
    """Greedy NMS in list order; with eta < 1 the threshold shrinks after each kept box while
    above 0.5, a candidate judged by the threshold of its turn (against every kept box)."""
    kept = []
    thr = f32(threshold)
    if limit <= 0:
        return kept
    for j in range(len(boxes)):
        if dead[j]:
            continue
        if any(_iou_kills(boxes[i], boxes[j], thr, offset) for i in kept):
            continue
        kept.append(j)
        if len(kept) == limit:
            break
        if eta < 1 and thr > 0.5:
            thr = f32(thr * f32(eta))
    return kept


def _anchors(base_size, ratios, scales, tf):
    offset = f32(0 if tf else 1)
    base = f32(base_size)
    area = f32(base_size * base_size)
    center = f32(f32(0.5) * f32(base - offset))
    out = []
    for r in ratios:
        r = f32(r)
        w = f32(np.sqrt(f32(area / r)))
        if not tf:
            w = _roundf(w)
        h = f32(w * r)
        if not tf:
            h = _roundf(h)
        for s in scales:
            s = f32(s)
            hw = f32(f32(0.5) * f32(f32(w * s) - offset))
            hh = f32(f32(0.5) * f32(f32(h * s) - offset))
            box = [f32(center - hw), f32(center - hh), f32(center + hw), f32(center + hh)]
            if tf:
                box = [f32(v - f32(base * f32(0.5))) for v in box]
            out.append(box)
    return out


def proposal(class_probs, bbox_deltas, image_shape, *, base_size, pre_nms_topn, post_nms_topn, nms_thresh,
             feat_stride, min_size, ratio, scale, clip_before_nms=True, clip_after_nms=False, normalize=False,
             box_size_scale=1.0, box_coordinate_scale=1.0, framework="", version=4):
    """Proposal-1 (version=1: the boxes) or -4 (the boxes and their scores)."""
    etype = np.asarray(class_probs).dtype
    tf = framework == "tensorflow"
    offset = f32(0 if tf else 1)
    ratios = [float(v) for v in ratio.split(",")]
    scales = [float(v) for v in scale.split(",")]
    anchors = _anchors(base_size, ratios, scales, tf)
    n_batch, channels, height, width = class_probs.shape
    k = channels // 2
    info = [f32(v) for v in np.asarray(image_shape).reshape(-1)]
    img_h, img_w = (info[1], info[0]) if tf else (info[0], info[1])
    scale_h = info[2]
    scale_w = info[3] if len(info) == 4 else info[2]
    min_h, min_w = f32(f32(min_size) * scale_h), f32(f32(min_size) * scale_w)
    rois = np.zeros((n_batch * post_nms_topn, 5), np.float32)
    probs = np.zeros(n_batch * post_nms_topn, np.float32)
    with np.errstate(all="ignore"):
        for n in range(n_batch):
            proposals = []  # (x0, y0, x1, y1, score), (h, w, anchor) order
            for h in range(height):
                for w in range(width):
                    x = f32((h if tf else w) * feat_stride)
                    y = f32((w if tf else h) * feat_stride)
                    for a in range(k):
                        dx = f32(f32(bbox_deltas[n, 4 * a + 0, h, w]) / f32(box_coordinate_scale))
                        dy = f32(f32(bbox_deltas[n, 4 * a + 1, h, w]) / f32(box_coordinate_scale))
                        dlw = f32(f32(bbox_deltas[n, 4 * a + 2, h, w]) / f32(box_size_scale))
                        dlh = f32(f32(bbox_deltas[n, 4 * a + 3, h, w]) / f32(box_size_scale))
                        score = f32(class_probs[n, k + a, h, w])
                        x0, y0 = f32(x + anchors[a][0]), f32(y + anchors[a][1])
                        x1, y1 = f32(x + anchors[a][2]), f32(y + anchors[a][3])
                        if tf:
                            x0, y0, x1, y1 = _clip(x0, img_w), _clip(y0, img_h), _clip(x1, img_w), _clip(y1, img_h)
                        ww = f32(f32(x1 - x0) + offset)
                        hh = f32(f32(y1 - y0) + offset)
                        cx = f32(f32(dx * ww) + f32(x0 + f32(f32(0.5) * ww)))
                        cy = f32(f32(dy * hh) + f32(y0 + f32(f32(0.5) * hh)))
                        pw = f32(np.exp(dlw) * ww)
                        ph = f32(np.exp(dlh) * hh)
                        x0, y0 = f32(cx - f32(f32(0.5) * pw)), f32(cy - f32(f32(0.5) * ph))
                        x1, y1 = f32(cx + f32(f32(0.5) * pw)), f32(cy + f32(f32(0.5) * ph))
                        if clip_before_nms:
                            x0, y0 = _clip(x0, f32(img_w - offset)), _clip(y0, f32(img_h - offset))
                            x1, y1 = _clip(x1, f32(img_w - offset)), _clip(y1, f32(img_h - offset))
                        box_w = f32(f32(x1 - x0) + offset)
                        box_h = f32(f32(y1 - y0) + offset)
                        keep = f32(1.0 if (min_w <= box_w and min_h <= box_h) else 0.0)
                        proposals.append((x0, y0, x1, y1, f32(keep * score)))
            top = min(len(proposals), pre_nms_topn)
            ordered = partial_sort(proposals, top, key=lambda p: p[4])[:top]
            kept = _nms([p[:4] for p in ordered], [False] * top, nms_thresh, offset, post_nms_topn)
            for r, j in enumerate(kept):
                x0, y0, x1, y1, score = ordered[j]
                if clip_after_nms:
                    x0, y0, x1, y1 = _clip(x0, img_w), _clip(y0, img_h), _clip(x1, img_w), _clip(y1, img_h)
                if normalize:
                    x0, y0, x1, y1 = f32(x0 / img_w), f32(y0 / img_h), f32(x1 / img_w), f32(y1 / img_h)
                rois[n * post_nms_topn + r] = [n, x0, y0, x1, y1]
                probs[n * post_nms_topn + r] = score
            if len(kept) < post_nms_topn:
                rois[n * post_nms_topn + len(kept), 0] = -1
    rois, probs = rois.astype(etype), probs.astype(etype)
    return rois if version == 1 else (rois, probs)


def generate_proposals(im_info, anchors, deltas, scores, *, min_size, nms_threshold, pre_nms_count, post_nms_count,
                       normalized=True, nms_eta=1.0, roi_num_type="i64"):
    """GenerateProposals-9: (rois [R, 4], scores [R], roi_num [N])."""
    etype = np.asarray(im_info).dtype
    offset = f32(0 if normalized else 1)
    n_batch, count, height, width = scores.shape
    max_log = f32(math.log(1000.0 / 16.0))
    out_rois, out_scores, nums = [], [], []
    with np.errstate(all="ignore"):
        for n in range(n_batch):
            info = [f32(v) for v in im_info[n]]
            img_h, img_w = info[0], info[1]
            scale_h = info[2]
            scale_w = info[3] if len(info) == 4 else info[2]
            min_h, min_w = f32(f32(min_size) * scale_h), f32(f32(min_size) * scale_w)
            proposals = []  # (x0, y0, x1, y1, score, big enough)
            for h in range(height):
                for w in range(width):
                    for a in range(count):
                        ax0, ay0, ax1, ay1 = (f32(v) for v in anchors[h, w, a])
                        dx, dy, dlw, dlh = (f32(deltas[n, 4 * a + c, h, w]) for c in range(4))
                        ww = f32(f32(ax1 - ax0) + offset)
                        hh = f32(f32(ay1 - ay0) + offset)
                        cx = f32(f32(dx * ww) + f32(ax0 + f32(f32(0.5) * ww)))
                        cy = f32(f32(dy * hh) + f32(ay0 + f32(f32(0.5) * hh)))
                        pw = f32(np.exp(_min(dlw, max_log)) * ww)
                        ph = f32(np.exp(_min(dlh, max_log)) * hh)
                        x0 = _clip(f32(cx - f32(f32(0.5) * pw)), f32(img_w - offset))
                        y0 = _clip(f32(cy - f32(f32(0.5) * ph)), f32(img_h - offset))
                        x1 = _clip(f32(f32(cx + f32(f32(0.5) * pw)) - offset), f32(img_w - offset))
                        y1 = _clip(f32(f32(cy + f32(f32(0.5) * ph)) - offset), f32(img_h - offset))
                        big = min_w <= f32(f32(x1 - x0) + offset) and min_h <= f32(f32(y1 - y0) + offset)
                        proposals.append((x0, y0, x1, y1, f32(scores[n, a, h, w]), big))
            top = min(len(proposals), pre_nms_count)
            ordered = partial_sort(proposals, top, key=lambda p: p[4])[:top]
            kept = _nms([p[:4] for p in ordered], [not p[5] for p in ordered], nms_threshold, offset,
                        post_nms_count, nms_eta)
            for j in kept:
                out_rois.append(ordered[j][:4])
                out_scores.append(ordered[j][4])
            nums.append(len(kept))
    rois = np.array(out_rois, np.float32).reshape(-1, 4).astype(etype)
    counts = np.array(nums, np.int32 if roi_num_type == "i32" else np.int64)
    return rois, np.array(out_scores, np.float32).astype(etype), counts
