"""The oracle of DetectionOutput-1 and -8: SSD's detection head, one prior, one class and one
pair of boxes per Python step, in the order of OpenVINO's core reference (and of Caffe's
DetectionOutput layer it transcribes).

Arithmetic is done on numpy scalars of the compute type (f64 for f64 inputs, else f32), one
operation at a time, so every rounding is the kernel's; `exp` is taken in f64 and rounded once.
`detection_output(attrs, num_classes=None)` returns a function of the input arrays (3 or 5).
"""

from __future__ import annotations

import math

import numpy as np


def _clip(x):
    """max(0, min(1, x)) with C++'s std::min/std::max: min(1, x) is x only when x < 1."""
    t = type(x)
    y = x if x < t(1) else t(1)
    return y if t(0) < y else t(0)


def _decode(prior, var, off, a, t):
    """One box from one prior (four corners), its variances (or None) and its four offsets."""
    xmin, ymin, xmax, ymax = prior
    if not a["normalized"]:
        xmin, xmax = xmin / t(a["input_width"]), xmax / t(a["input_width"])
        ymin, ymax = ymin / t(a["input_height"]), ymax / t(a["input_height"])
    v = var if var is not None else None
    if a["code_type"].lower() == "caffe.priorboxparameter.corner":
        if v is None:
            box = [xmin + off[0], ymin + off[1], xmax + off[2], ymax + off[3]]
        else:
            box = [xmin + v[0] * off[0], ymin + v[1] * off[1], xmax + v[2] * off[2], ymax + v[3] * off[3]]
    else:
        width, height = xmax - xmin, ymax - ymin
        cx, cy = (xmin + xmax) / t(2), (ymin + ymax) / t(2)
        if v is None:
            dcx, dcy = off[0] * width + cx, off[1] * height + cy
            dw = t(_exp(off[2])) * width
            dh = t(_exp(off[3])) * height
        else:
            dcx, dcy = v[0] * off[0] * width + cx, v[1] * off[1] * height + cy
            dw = t(_exp(v[2] * off[2])) * width
            dh = t(_exp(v[3] * off[3])) * height
        box = [dcx - dw / t(2), dcy - dh / t(2), dcx + dw / t(2), dcy + dh / t(2)]
    if a["clip_before_nms"]:
        box = [_clip(c) for c in box]
    return box


def _exp(x) -> float:
    try:
        return math.exp(float(x))
    except OverflowError:
        return math.inf


def _size(b, t):
    if b[2] < b[0] or b[3] < b[1]:
        return t(0)
    return (b[2] - b[0]) * (b[3] - b[1])


def _overlap(b1, b2, t):
    """Jaccard overlap as the reference computes it: 0 for disjoint or touching boxes."""
    if b2[0] > b1[2] or b2[2] < b1[0] or b2[1] > b1[3] or b2[3] < b1[1]:
        return t(0)
    ix0 = b1[0] if not b1[0] < b2[0] else b2[0]  # std::max(b1, b2)
    iy0 = b1[1] if not b1[1] < b2[1] else b2[1]
    ix1 = b1[2] if not b2[2] < b1[2] else b2[2]  # std::min(b1, b2)
    iy1 = b1[3] if not b2[3] < b1[3] else b2[3]
    w, h = ix1 - ix0, iy1 - iy0
    if w > 0 and h > 0:
        inter = w * h
        return inter / (_size(b1, t) + _size(b2, t) - inter)
    return t(0)


def detection_output(attrs: dict, num_classes: int | None = None):
    a = {"background_label_id": 0, "top_k": -1, "variance_encoded_in_target": False,
         "code_type": "caffe.PriorBoxParameter.CORNER", "share_location": True, "confidence_threshold": 0.0,
         "clip_after_nms": False, "clip_before_nms": False, "decrease_label_id": False, "normalized": False,
         "input_height": 1, "input_width": 1, "objectness_score": 0.0, **attrs}

    def run(loc, conf, priors, arm_conf=None, arm_loc=None):
        t = np.float64 if loc.dtype == np.float64 else np.float32
        n_img = loc.shape[0]
        size = 4 if a["normalized"] else 5
        first = 0 if a["normalized"] else 1
        n_pri = priors.shape[2] // size
        n_cls = num_classes if num_classes is not None else conf.shape[1] // n_pri
        n_loc = 1 if a["share_location"] else n_cls
        bg = a["background_label_id"]
        keep_top = list(a["keep_top_k"])[0]
        nms_thr = t(np.float32(a["nms_threshold"]))
        conf_thr = t(np.float32(a["confidence_threshold"]))
        top_k = a["top_k"]
        if keep_top > 0:
            rows = n_img * keep_top
        elif keep_top == -1 and top_k > 0:
            rows = n_img * top_k * n_cls
        else:
            rows = n_img * n_pri * n_cls
        out = np.zeros((rows, 7), t)
        count = 0
        for n in range(n_img):
            pb = n if priors.shape[0] > 1 else 0
            # decoded boxes per location class
            boxes = {}
            for lc in range(n_loc):
                label = -1 if a["share_location"] else lc
                if not a["share_location"] and lc == bg:
                    continue
                boxes[label] = []
                for p in range(n_pri):
                    prior = [t(priors[pb, 0, p * size + first + j]) for j in range(4)]
                    var = None if a["variance_encoded_in_target"] else [t(priors[pb, 1, p * 4 + j]) for j in range(4)]
                    off = [t(loc[n, p * n_loc * 4 + lc * 4 + j]) for j in range(4)]
                    if arm_loc is not None:
                        arm = [t(arm_loc[n, p * n_loc * 4 + lc * 4 + j]) for j in range(4)]
                        prior = _decode(prior, var, arm, a, t)
                    boxes[label].append(_decode(prior, var, off, a, t))
            # confidences per class
            scores = {c: [] for c in range(n_cls)}
            for p in range(n_pri):
                weak = arm_conf is not None and t(arm_conf[n, p * 2 + 1]) < t(np.float32(a["objectness_score"]))
                for c in range(n_cls):
                    scores[c].append(t(1 if c == bg else 0) if weak else t(conf[n, p * n_cls + c]))
            indices = {}
            if not a["decrease_label_id"]:
                for c in range(n_cls):
                    if c == bg:
                        continue
                    bx = boxes[-1 if a["share_location"] else c]
                    cand = [(scores[c][p], p) for p in range(n_pri) if scores[c][p] > conf_thr]
                    cand.sort(key=lambda sp: (-float(sp[0]), sp[1]))
                    if top_k > -1:
                        cand = cand[:top_k]
                    kept = []
                    for _, p in cand:
                        if all(not _overlap(bx[p], bx[k], t) > nms_thr for k in kept):
                            kept.append(p)
                    indices[c] = kept
            else:
                cand = []
                for p in range(n_pri):
                    best, best_c = t(-1), 0
                    for c in range(1, n_cls):
                        if bg > -1 and c == bg:
                            continue
                        if scores[c][p] > best:
                            best, best_c = scores[c][p], c
                    if best_c > 0 and best >= conf_thr:
                        cand.append((best, best_c, p))
                cand.sort(key=lambda e: (-float(e[0]), e[2]))
                if top_k != -1 and top_k >= 0:
                    cand = cand[:top_k]
                for _, c, p in cand:
                    bx = boxes[-1 if a["share_location"] else c]
                    kept = indices.setdefault(c, [])
                    if all(not _overlap(bx[p], bx[k], t) > nms_thr for k in kept):
                        kept.append(p)
            total = sum(len(v) for v in indices.values())
            if keep_top > -1 and total > keep_top:
                every = [(scores[c][p], p, c) for c in sorted(indices) for p in indices[c]]
                every.sort(key=lambda e: (-float(e[0]), e[1], e[2]))
                chosen = {}
                for _, p, c in every[:keep_top]:
                    chosen.setdefault(c, []).append(p)
                indices = chosen
            for c in sorted(indices):
                bx = boxes[-1 if a["share_location"] else c]
                for p in indices[c]:
                    box = bx[p]
                    if a["clip_after_nms"]:
                        box = [_clip(v) for v in box]
                    out[count] = [n, c - 1 if a["decrease_label_id"] else c, scores[c][p], *box]
                    count += 1
        if count < rows:
            out[count, 0] = -1
        return out.reshape(1, 1, rows, 7)

    return run
