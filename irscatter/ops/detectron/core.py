"""What the ExperimentalDetectron ops share: their element types, shape checks, the Caffe2 box
refinement (deltas applied to anchors or ROIs) and the overlap rule of their NMS.

OpenVINO's references for these ops convert every input to f32 and compute in f32 whatever the
element type, rounding the results to it at the end; the kernels here do the same (f64 inputs
are computed in f32 too, and the f32 results widened).
"""

from __future__ import annotations

import numpy as np

from irscatter.ir.element_types import ElementType
from irscatter.ir.shapes import Dimension, PartialShape
from irscatter.ops.base import Op, TensorInfo, check
from irscatter.ops.common.boxes import greedy_walk

FLOATS = (ElementType.f16, ElementType.bf16, ElementType.f32, ElementType.f64)
F32 = np.float32


def float_inputs(op: Op, infos: list[TensorInfo], names: list[str]) -> ElementType:
    """The inputs share one floating-point type (f16, bf16, f32 or f64); returns it."""
    etype = ElementType.dynamic
    for info, name in zip(infos, names):
        check(info.etype in (*FLOATS, ElementType.dynamic), "float-type",
              f"{op.type_name} takes f16, bf16, f32 or f64 tensors, found {info.etype}", port=op.port(name))
        if info.etype is not ElementType.dynamic:
            check(etype in (ElementType.dynamic, info.etype), "same-element-type",
                  f"the inputs must share one element type, found {etype} and {info.etype}", port=op.port(name))
            etype = info.etype
    return etype


def ranked(op: Op, info: TensorInfo, name: str, rank: int, label: str, last: int | None = None) -> PartialShape | None:
    """The input's shape when its rank is known, checked to be `rank` (and its last dim `last`)."""
    shape = info.shape
    if not shape.rank_is_static:
        return None
    check(shape.rank == rank, label, f"{name} must be a {rank}-D tensor, found shape {shape}", port=op.port(name))
    if last is not None:
        check(shape[rank - 1].compatible(Dimension.static(last)), label,
              f"the last dimension of {name} must be {last}, found shape {shape}", port=op.port(name))
    return shape


def same_dim(a: Dimension, b: Dimension) -> Dimension:
    """Two dims that must agree (checked by the caller): the static one if either is."""
    return a if a.is_static or not b.is_static else b


def f32_max0(x: np.ndarray) -> np.ndarray:
    """C++'s `std::max(0.0f, x)`: `(0 < x) ? x : 0`, so NaN and -0.0 become +0."""
    return np.where(x > 0, x, F32(0))


def f32_clamp(x: np.ndarray, hi: np.float32) -> np.ndarray:
    """`std::max(0.0f, std::min(x, hi))` with C++'s rules for NaN (`std::min(x, hi)` is x unless
    hi < x)."""
    return f32_max0(np.where(hi < x, hi, x))


def refine(boxes: np.ndarray, deltas: np.ndarray, max_delta_log_wh: np.float32, offset: float) -> np.ndarray:
    """Caffe2's bbox transform in f32: boxes [..., 4] (x0, y0, x1, y1) moved by deltas
    [..., 4] (dx, dy, d_log_w, d_log_h) already divided by their weights. `offset` is the +1 of
    inclusive pixel coordinates. Returns the unclipped corners [..., 4], arithmetic in the order
    of OpenVINO's reference so that every result rounds alike."""
    o = F32(offset)
    half = F32(0.5)
    ww = boxes[..., 2] - boxes[..., 0] + o
    hh = boxes[..., 3] - boxes[..., 1] + o
    ctr_x = boxes[..., 0] + half * ww
    ctr_y = boxes[..., 1] + half * hh
    pred_ctr_x = deltas[..., 0] * ww + ctr_x
    pred_ctr_y = deltas[..., 1] * hh + ctr_y
    with np.errstate(over="ignore", invalid="ignore"):
        # std::min(d, max) is d unless max < d: a NaN delta stays NaN
        pred_w = np.exp(np.where(max_delta_log_wh < deltas[..., 2], max_delta_log_wh, deltas[..., 2])) * ww
        pred_h = np.exp(np.where(max_delta_log_wh < deltas[..., 3], max_delta_log_wh, deltas[..., 3])) * hh
        return np.stack([pred_ctr_x - half * pred_w, pred_ctr_y - half * pred_h,
                         pred_ctr_x + half * pred_w - o, pred_ctr_y + half * pred_h - o], axis=-1).astype(F32)


def covered_overlap(box: np.ndarray, area: np.float32, others: np.ndarray, other_areas: np.ndarray) -> np.ndarray:
    """IoU of one box with each of `others` as ExperimentalDetectronDetectionOutput's reference
    computes it: inclusive pixel boxes (+1), areas given, and boxes that do not touch (one's low
    corner past the other's high corner) overlap 0 even when the +1 would make them meet."""
    one = F32(1)
    apart = ((others[:, 0] > box[2]) | (others[:, 2] < box[0]) | (others[:, 1] > box[3]) | (others[:, 3] < box[1]))
    iw = np.minimum(box[2], others[:, 2]) - np.maximum(box[0], others[:, 0]) + one
    ih = np.minimum(box[3], others[:, 3]) - np.maximum(box[1], others[:, 1]) + one
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        inter = iw * ih
        ratio = inter / (area + other_areas - inter)
    return np.where(apart | ~(iw > 0) | ~(ih > 0), F32(0), ratio)


def greedy_covered(boxes: np.ndarray, box_areas: np.ndarray, threshold: np.float32, limit: int) -> np.ndarray:
    """Hard NMS over boxes in priority order with `covered_overlap`: a box is dropped when its
    overlap with a kept box exceeds `threshold`. At most `limit` boxes are kept; returns their
    positions, ascending."""
    return greedy_walk(boxes.shape[0], lambda i, rest: covered_overlap(boxes[i], box_areas[i], boxes[rest],
                                                                       box_areas[rest]), threshold, limit=limit)


def descending(scores: np.ndarray) -> np.ndarray:
    """Positions of `scores` from highest to lowest, equal scores by position (a stable sort);
    NaN scores last, by position."""
    keys = -scores.astype(np.float64)
    nan = np.isnan(keys)
    return np.lexsort((np.where(nan, 0.0, keys), nan))


def itemsize(etype: ElementType) -> int:
    """Bytes per element, for the tensor-size limit (8 while the type is not known)."""
    return 8 if etype is ElementType.dynamic else etype.dtype.itemsize
