"""Oracles for the prior-box and YOLO ops of the detection family: PriorBox-1/-8,
PriorBoxClustered-1, RegionYolo-1, ReorgYolo-2.

Each is a literal per-element transcription of the op's definition, written box by box and
element by element in the order OpenVINO's reference writes them. The prior boxes use f32
scalars (`np.float32`) for every arithmetic step, as the reference's `float` variables do, so
they are exact; RegionYolo computes each sigmoid and softmax with Python's `math` in double.
Attributes are passed as keyword arguments with the IR's names (lists as Python sequences).
"""

from __future__ import annotations

import math

import numpy as np

F = np.float32


def _variance_row(variance, boxes):
    values = list(variance) or [0.1]
    if len(values) == 1:
        values = values * 4
    return [F(values[k % 4]) for k in range(len(boxes))]


def prior_box(output_size, image_size, *, min_size=(), max_size=(), aspect_ratio=(), flip=False, clip=False,
              step=0.0, offset=0.0, variance=(), scale_all_sizes=True, fixed_ratio=(), fixed_size=(), density=(),
              min_max_aspect_ratios_order=True):
    """PriorBox: [2, 4 * H * W * priors] f32. `max_size` is ignored when `scale_all_sizes` is
    false, as the spec says."""
    H, W = int(output_size[0]), int(output_size[1])
    IH, IW = int(image_size[0]), int(image_size[1])
    ratios = [F(1)]
    for value in aspect_ratio:
        ar = F(value)
        if any(abs(ar - e) < 1e-6 for e in ratios):
            continue
        ratios.append(ar)
        if flip:
            ratios.append(F(1) / ar)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        step = F(step)
        mins = [F(m) for m in min_size]
        if not scale_all_sizes:
            step = F(IH) / F(H) if step == F(-1) else step * F(IH)
            mins = [m * F(IH) for m in mins]
            max_size = ()
        inv_w, inv_h = F(1) / F(IW), F(1) / F(IH)
        out = []

        def box(cx, cy, bw, bh, own_clip):
            coords = [(cx - bw) * inv_w, (cy - bh) * inv_h, (cx + bw) * inv_w, (cy + bh) * inv_h]
            if own_clip:
                coords = [c if c > 0 else F(0) for c in coords[:2]] + [c if c < 1 else F(1) for c in coords[2:]]
            out.extend(coords)

        def density_grid(cx, cy, f, d_value, bw, bh):
            d = int(d_value)
            shift = int(F(f) / F(d))
            for r in range(d):
                for c in range(d):
                    x = cx - F(int(f) // 2) + F(shift) / F(2) + F(c * shift)
                    y = cy - F(int(f) // 2) + F(shift) / F(2) + F(r * shift)
                    box(x, y, bw, bh, True)

        for h in range(H):
            for w in range(W):
                if step == 0:
                    cx = (F(w) + F(0.5)) * (F(IW) / F(W))
                    cy = (F(h) + F(0.5)) * (F(IH) / F(H))
                else:
                    cx = (F(offset) + F(w)) * step
                    cy = (F(offset) + F(h)) * step
                for s, f in enumerate(fixed_size):
                    if fixed_ratio:
                        for value in fixed_ratio:
                            root = np.sqrt(F(value))
                            density_grid(cx, cy, f, density[s], F(f) * F(0.5) * root, F(f) * F(0.5) / root)
                        continue
                    if density:
                        half = F(int(f)) * F(0.5)
                        density_grid(cx, cy, f, density[s], half, half)
                    for ar in ratios:
                        if abs(float(ar) - 1.0) < 1e-6:
                            continue
                        root = np.sqrt(ar)
                        density_grid(cx, cy, f, density[s], F(f) * F(0.5) * root, F(f) * F(0.5) / root)
                for i, m in enumerate(mins):
                    box(cx, cy, m * F(0.5), m * F(0.5), False)
                    ratio_boxes = []
                    if scale_all_sizes or i == len(mins) - 1:
                        base = m if scale_all_sizes else mins[0]
                        for ar in ratios:
                            if abs(ar - F(1)) < 1e-6:
                                continue
                            root = np.sqrt(ar)
                            ratio_boxes.append((base * F(0.5) * root, base * F(0.5) / root))
                    square = []
                    if i < len(max_size):
                        side = np.sqrt(m * F(max_size[i])) * F(0.5)
                        square = [(side, side)]
                    for bw, bh in (square + ratio_boxes if min_max_aspect_ratios_order else ratio_boxes + square):
                        box(cx, cy, bw, bh, False)
        if clip:
            out = [min(max(v, F(0)), F(1)) if not math.isnan(v) else v for v in out]
    return np.array([out, _variance_row(variance, out)], F).reshape(2, len(out))


def prior_box_clustered(output_size, image_size, *, width=(1.0,), height=(1.0,), clip=True, step=0.0, step_w=0.0,
                        step_h=0.0, offset=0.0, variance=()):
    """PriorBoxClustered: [2, 4 * H * W * len(width)] f32."""
    H, W = int(output_size[0]), int(output_size[1])
    IH, IW = int(image_size[0]), int(image_size[1])
    sw = F(step) if F(step_w) == 0 else F(step_w)
    sh = F(step) if F(step_h) == 0 else F(step_h)
    out = []
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        if sw == 0 and sh == 0:
            sw, sh = F(IW) / F(W), F(IH) / F(H)
        for h in range(H):
            for w in range(W):
                cx = (F(w) + F(offset)) * sw
                cy = (F(h) + F(offset)) * sh
                for bw, bh in zip(width, height):
                    coords = [(cx - F(bw) / F(2)) / F(IW), (cy - F(bh) / F(2)) / F(IH),
                              (cx + F(bw) / F(2)) / F(IW), (cy + F(bh) / F(2)) / F(IH)]
                    if clip:
                        coords = [v if math.isnan(v) else min(max(v, F(0)), F(1)) for v in coords]
                    out.extend(coords)
    return np.array([out, _variance_row(variance, out)], F).reshape(2, len(out))


def _sigmoid(x: float) -> float:
    if math.isnan(x):
        return x
    if x >= 0:
        return 1 / (1 + math.exp(-x))
    e = math.exp(x)
    return e / (1 + e)


def region_yolo(data, *, coords, classes, num, do_softmax=True, mask=(), axis=1, end_axis=3):
    """RegionYolo: element by element over the flat buffer, as the reference indexes it."""
    N, C, H, W = data.shape
    regions = num if do_softmax else len(mask)
    K = coords + classes + 1
    area = H * W
    src = [float(v) for v in data.reshape(-1)]
    out = list(src)
    for b in range(N):
        for n in range(regions):
            base = b * regions * K * area + n * K * area
            for i in range(2 * area):
                out[base + i] = _sigmoid(out[base + i])
            count = area if do_softmax else (classes + 1) * area
            for i in range(count):
                out[base + coords * area + i] = _sigmoid(out[base + coords * area + i])
            if do_softmax:
                first = base + (coords + 1) * area
                for i in range(area):
                    values = [src[first + k * area + i] for k in range(classes)]
                    if not values:
                        continue
                    top = max(values) if not any(math.isnan(v) for v in values) else math.nan
                    exps = [math.exp(v - top) if not math.isnan(v - top) else math.nan for v in values]
                    total = math.fsum(exps) if not any(math.isnan(e) for e in exps) else math.nan
                    for k in range(classes):
                        out[first + k * area + i] = exps[k] / total if total == total else math.nan
    if do_softmax:
        axis, end_axis = axis % 4, end_axis % 4
        shape = list(data.shape)
        if end_axis > axis:
            shape = shape[:axis] + [math.prod(shape[axis:end_axis + 1])] + shape[end_axis + 1:]
    else:
        out = out[:N * regions * K * area]
        shape = [N, regions * K, H, W]
    result = np.array(out, np.float64)
    if data.dtype != np.float64:
        result = result.astype(np.float32).astype(data.dtype)
    return result.reshape(shape)


def reorg_yolo(data, *, stride):
    """ReorgYolo: the reference's index loop, output position by output position."""
    N, C, H, W = data.shape
    s = stride
    groups = C // (s * s)
    flat = data.reshape(-1)
    out = np.empty(data.size, data.dtype)
    for n in range(N):
        for c in range(C):
            for h in range(H):
                for w in range(W):
                    offset = c // groups
                    source = ((n * groups + c % groups) * (H * s) + h * s + offset // s) * (W * s) + w * s + offset % s
                    out[((n * C + c) * H + h) * W + w] = flat[source]
    return out.reshape(N, C * s * s, H // s, W // s)
