"""Oracles of the ExperimentalDetectron ops: one Python step per box, point or element, written
from the spec pages with the arithmetic of OpenVINO's reference (f32 scalars, Caffe2's +1), and
the choices irscatter documents in each op's module where the spec is silent.
"""

from __future__ import annotations

import math

import numpy as np

f32 = np.float32


def _out(values, dtype):
    return np.asarray(values, np.float32).astype(dtype)


def top_k_rois(rois, probs, *, max_rois):
    """The ROIs by descending probability, equal ones in input order, NaN last; zero rows after."""
    ranked = sorted(range(len(probs)), key=lambda i: (math.isnan(float(probs[i])),
                                                      0.0 if math.isnan(float(probs[i])) else -float(probs[i]), i))
    out = np.zeros((max_rois, 4), rois.dtype)
    for row, i in enumerate(ranked[:max_rois]):
        for k in range(4):
            out[row, k] = rois[i, k]
    return out


def prior_grid(priors, featmap, image, *, flatten=True, h=0, w=0, stride_x=0.0, stride_y=0.0):
    """Cell (i, j) of the grid shifts every prior by (step_x * (j + 0.5), step_y * (i + 0.5))."""
    fh, fw = featmap.shape[2], featmap.shape[3]
    gh, gw = h or fh, w or fw
    with np.errstate(divide="ignore", invalid="ignore"):  # a grid without cells has no steps to take
        step_w = f32(stride_x) if stride_x else f32(image.shape[3]) / f32(gw)
        step_h = f32(stride_y) if stride_y else f32(image.shape[2]) / f32(gh)
    wide = priors.dtype == np.float64
    rows = []
    for i in range(gh):
        for j in range(gw):
            for s in range(priors.shape[0]):
                sx = f32(step_w * (f32(j) + f32(0.5)))
                sy = f32(step_h * (f32(i) + f32(0.5)))
                p = [np.float64(v) if wide else f32(v) for v in priors[s]]
                rows.append([p[0] + sx, p[1] + sy, p[2] + sx, p[3] + sy])
    out = np.zeros((fh * fw * priors.shape[0], 4), np.float64 if wide else np.float32)
    for r, row in enumerate(rows):
        out[r] = row
    shape = out.shape if flatten else (fh, fw, priors.shape[0], 4)
    return out.reshape(shape).astype(priors.dtype)


def _refine(box, delta, max_log, offset):
    x0, y0, x1, y1 = (f32(v) for v in box)
    dx, dy, dw, dh = delta
    ww = x1 - x0 + f32(offset)
    hh = y1 - y0 + f32(offset)
    cx = x0 + f32(0.5) * ww
    cy = y0 + f32(0.5) * hh
    pcx = dx * ww + cx
    pcy = dy * hh + cy
    pw = f32(np.exp(max_log if max_log < dw else dw)) * ww
    ph = f32(np.exp(max_log if max_log < dh else dh)) * hh
    return [pcx - f32(0.5) * pw, pcy - f32(0.5) * ph, pcx + f32(0.5) * pw - f32(offset),
            pcy + f32(0.5) * ph - f32(offset)]


def _clip(v, hi):
    v = hi if hi < v else v
    return v if v > 0 else f32(0)


def _iou_exclusive(a, b):
    w = max(f32(0), min(a[2], b[2]) - max(a[0], b[0]))
    h = max(f32(0), min(a[3], b[3]) - max(a[1], b[1]))
    inter = f32(w * h)
    union = f32((a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter)
    return f32(inter / union) if union > 0 else f32(0)


def generate_proposals(im_info, anchors, deltas, scores, *, min_size, nms_threshold, pre_nms_count, post_nms_count):
    """Refine and clip every anchor, drop the small ones, sort by score (ties in (h, w, a) order),
    keep pre_nms_count, greedy NMS, keep post_nms_count; zero rows after."""
    count, height, width = scores.shape
    img_h, img_w = f32(im_info.reshape(-1)[0]), f32(im_info.reshape(-1)[1])
    max_log = f32(math.log(1000.0 / 16.0))
    props = []
    for hi in range(height):
        for wi in range(width):
            for a in range(count):
                box = anchors[(hi * width + wi) * count + a]
                delta = [f32(deltas[a * 4 + k, hi, wi]) for k in range(4)]
                x0, y0, x1, y1 = _refine(box, delta, max_log, 1.0)
                x0, x1 = _clip(x0, img_w - f32(1)), _clip(x1, img_w - f32(1))
                y0, y1 = _clip(y0, img_h - f32(1)), _clip(y1, img_h - f32(1))
                if f32(min_size) <= x1 - x0 + f32(1) and f32(min_size) <= y1 - y0 + f32(1):
                    props.append(([x0, y0, x1, y1], f32(scores[a, hi, wi]), len(props)))
    props.sort(key=lambda p: (math.isnan(p[1]), 0.0 if math.isnan(p[1]) else -float(p[1]), p[2]))
    kept = []
    for box, score, _ in props[:pre_nms_count]:
        if len(kept) == post_nms_count:
            break
        if all(not _iou_exclusive(k[0], box) > f32(nms_threshold) for k in kept):
            kept.append((box, score))
    rois = np.zeros((post_nms_count, 4), np.float32)
    out = np.zeros(post_nms_count, np.float32)
    for i, (box, score) in enumerate(kept):
        rois[i] = box
        out[i] = score
    return rois.astype(scores.dtype), out.astype(scores.dtype)


def _overlap_covered(a, area_a, b, area_b):
    if b[0] > a[2] or b[2] < a[0] or b[1] > a[3] or b[3] < a[1]:
        return f32(0)
    w = min(a[2], b[2]) - max(a[0], b[0]) + f32(1)
    h = min(a[3], b[3]) - max(a[1], b[1]) + f32(1)
    if not (w > 0) or not (h > 0):
        return f32(0)
    inter = f32(w * h)
    return f32(inter / f32(area_a + area_b - inter))


def detection_output(rois, deltas, scores, im_info, *, score_threshold, nms_threshold, num_classes, post_nms_count,
                     max_detections_per_image, max_delta_log_wh, deltas_weights, class_agnostic_box_regression=False):
    """Per ROI and class but 0: refine, clip to the image, score; per class greedy NMS of the
    boxes above score_threshold (score desc, then ROI); class by class, or the best
    max_detections_per_image (score desc, ROI, class) when there are more; zero rows after."""
    img_h, img_w = f32(im_info.reshape(-1)[0]), f32(im_info.reshape(-1)[1])
    max_log = f32(max_delta_log_wh)
    dets = []
    for c in range(1, num_classes):
        cands = []
        for r in range(rois.shape[0]):
            x0, y0, x1, y1 = (f32(v) for v in rois[r])
            if x1 - x0 <= 0 or y1 - y0 <= 0:
                continue
            delta = [f32(f32(deltas[r, 4 * c + k]) / f32(deltas_weights[k])) for k in range(4)]
            b = _refine(rois[r], delta, max_log, 1.0)
            b = [_clip(b[0], img_w - f32(1)), _clip(b[1], img_h - f32(1)), _clip(b[2], img_w - f32(1)),
                 _clip(b[3], img_h - f32(1))]
            area = f32((b[2] - b[0] + f32(1)) * (b[3] - b[1] + f32(1)))
            s = f32(scores[r, c])
            if s > f32(score_threshold):
                cands.append((b, area, s, r))
        cands.sort(key=lambda t: (-float(t[2]), t[3]))
        kept = []
        for b, area, s, r in cands:
            if all(not _overlap_covered(b, area, k[0], k[1]) > f32(nms_threshold) for k in kept):
                kept.append((b, area, s, r))
        dets.extend((s, r, c, b) for b, area, s, r in kept[:post_nms_count])
    if len(dets) > max_detections_per_image:
        dets = sorted(dets, key=lambda t: (-float(t[0]), t[1], t[2]))[:max_detections_per_image]
    boxes = np.zeros((max_detections_per_image, 4), np.float32)
    classes = np.zeros(max_detections_per_image, np.int32)
    out = np.zeros(max_detections_per_image, np.float32)
    for i, (s, r, c, b) in enumerate(dets):
        boxes[i] = b
        classes[i] = c
        out[i] = s
    return boxes.astype(rois.dtype), classes, out.astype(rois.dtype)


def _bilinear(fmap, y, x, height, width):
    """One sample point of ROIAlign; (value weights, positions) as the reference's table holds."""
    if y < -1 or y > height or x < -1 or x > width or math.isnan(y) or math.isnan(x):
        return [(f32(0), 0, 0)] * 4
    y, x = max(y, f32(0)), max(x, f32(0))
    yl, xl = int(y), int(x)
    if yl >= height - 1:
        yl = yh = height - 1
        y = f32(yl)
    else:
        yh = yl + 1
    if xl >= width - 1:
        xl = xh = width - 1
        x = f32(xl)
    else:
        xh = xl + 1
    ly, lx = f32(y - f32(yl)), f32(x - f32(xl))
    hy, hx = f32(1) - ly, f32(1) - lx
    return [(f32(hy * hx), yl, xl), (f32(hy * lx), yl, xh), (f32(ly * hx), yh, xl), (f32(ly * lx), yh, xh)]


def roi_feature_extractor(rois, *levels, output_size, sampling_ratio, pyramid_scales, aligned=False):
    """Each ROI to level floor(2 + log2(sqrt(area) / 224 + 1e-6)) clamped (none for area <= 0),
    then ROIAlign there: per bin the mean of its grid of bilinear samples, summed row by row."""
    n, count = rois.shape[0], len(levels)
    channels = levels[0].shape[1]
    out = np.zeros((n, channels, output_size, output_size), np.float32)
    for r in range(n):
        x0, y0, x1, y1 = (f32(v) for v in rois[r])
        area = f32((x1 - x0) * (y1 - y0))
        if not area > 0:
            continue
        level = math.floor(f32(np.log2(f32(np.sqrt(area) / f32(224)) + f32(1e-6))) + f32(2))
        level = max(0, min(count - 1, level))
        fmap = levels[level][0].astype(np.float32)
        height, width = fmap.shape[1], fmap.shape[2]
        scale = f32(1) / f32(pyramid_scales[level])
        off = f32(0.5) if aligned else f32(0)
        sw, sh, ew, eh = x0 * scale - off, y0 * scale - off, x1 * scale - off, y1 * scale - off
        rw, rh = max(ew - sw, f32(1)), max(eh - sh, f32(1))
        bw, bh = rw / f32(output_size), rh / f32(output_size)
        gh = sampling_ratio or math.ceil(bh)
        gw = sampling_ratio or math.ceil(bw)
        for c in range(channels):
            for ph in range(output_size):
                for pw in range(output_size):
                    total = f32(0)
                    for iy in range(gh):
                        for ix in range(gw):
                            y = sh + f32(ph) * bh + (f32(iy) + f32(0.5)) * bh / f32(gh)
                            x = sw + f32(pw) * bw + (f32(ix) + f32(0.5)) * bw / f32(gw)
                            term = None
                            for weight, yy, xx in _bilinear(fmap, y, x, height, width):
                                with np.errstate(invalid="ignore"):  # 0 * inf: NaN, as in the reference
                                    part = f32(weight * fmap[c, yy, xx])
                                term = part if term is None else f32(term + part)
                            total = f32(total + term)
                    out[r, c, ph, pw] = total / f32(gh * gw)
    return out.astype(rois.dtype), rois.copy()
