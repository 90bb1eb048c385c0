"""Axis-aligned boxes, shared by the detection, suppression, proposal and ROI families.

A box here is four numbers `(lo0, lo1, hi0, hi1)` on the last axis: the low corner, then the
high corner, in whatever axis order the op's layout uses (`y1, x1, y2, x2` for
NonMaxSuppression, `x1, y1, x2, y2` for DetectionOutput). Overlap is symmetric in the two
axes, so the functions below never need to know which is which.

`offset` is the `+1` that the older Caffe-style ops (Proposal, DetectionOutput with
`normalized=false`, the ExperimentalDetectron ops with `aligned`-less pixel boxes) add to a
width and a height, treating coordinates as inclusive pixel indices; 0 elsewhere.

Arithmetic happens in the dtype of the boxes handed in: callers pass the compute dtype their
reference uses (f32 for OpenVINO's detection kernels), because a threshold compared with an
IoU of exactly that value is decided by the rounding of the IoU.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np


def center_to_corners(boxes: np.ndarray) -> np.ndarray:
    """`(c0, c1, size0, size1)` boxes as `(lo0, lo1, hi0, hi1)`."""
    half = boxes[..., 2:4] / 2
    return np.concatenate([boxes[..., 0:2] - half, boxes[..., 0:2] + half], axis=-1)


def ordered_corners(boxes: np.ndarray) -> np.ndarray:
    """Boxes whose corners may be given in either order (NonMaxSuppression allows a box's
    "first" corner to be its high one) with the low corner first on each axis."""
    lo = np.minimum(boxes[..., 0:2], boxes[..., 2:4])
    hi = np.maximum(boxes[..., 0:2], boxes[..., 2:4])
    return np.concatenate([lo, hi], axis=-1)


def areas(boxes: np.ndarray, offset: float = 0.0) -> np.ndarray:
    """The area of each box: `(hi0 - lo0 + offset) * (hi1 - lo1 + offset)`."""
    return (boxes[..., 2] - boxes[..., 0] + offset) * (boxes[..., 3] - boxes[..., 1] + offset)


def iou(box: np.ndarray, others: np.ndarray, offset: float = 0.0) -> np.ndarray:
    """Intersection over union of one box (shape [4]) with each of `others` ([N, 4]).

    An empty or negative overlap counts as no overlap, and a pair whose union is not positive
    (two degenerate boxes) has IoU 0, as OpenVINO's references define it.
    """
    dtype = np.result_type(box, others)
    lo = np.maximum(box[0:2], others[:, 0:2])
    hi = np.minimum(box[2:4], others[:, 2:4])
    extent = np.maximum(hi - lo + dtype.type(offset), dtype.type(0))
    inter = extent[:, 0] * extent[:, 1]
    union = areas(box, offset) + areas(others, offset) - inter
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = inter / union
    return np.where(union > 0, ratio, dtype.type(0)).astype(dtype, copy=False)


def pairwise_iou(a: np.ndarray, b: np.ndarray, offset: float = 0.0) -> np.ndarray:
    """IoU of every box of `a` ([N, 4]) with every box of `b` ([M, 4]), as an [N, M] table.
    Memory is N*M; for long candidate lists prefer `greedy_keep`, which never builds it."""
    dtype = np.result_type(a, b)
    lo = np.maximum(a[:, None, 0:2], b[None, :, 0:2])
    hi = np.minimum(a[:, None, 2:4], b[None, :, 2:4])
    extent = np.maximum(hi - lo + dtype.type(offset), dtype.type(0))
    inter = extent[..., 0] * extent[..., 1]
    union = areas(a, offset)[:, None] + areas(b, offset)[None, :] - inter
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = inter / union
    return np.where(union > 0, ratio, dtype.type(0)).astype(dtype, copy=False)


def greedy_keep(boxes: np.ndarray, threshold: float, *, offset: float = 0.0,
                inclusive: bool = False, limit: int | None = None) -> np.ndarray:
    """Hard non-maximum suppression over boxes already in priority order (best first).

    Walks the boxes in order; each box still alive is kept and suppresses every later box
    whose IoU with it exceeds `threshold` (or reaches it, with `inclusive=True`: the ops
    differ on this, so the caller says which its spec uses). Stops after `limit` kept boxes.
    Returns the positions of the kept boxes, ascending."""
    thr = boxes.dtype.type(threshold) if boxes.dtype.kind == "f" else threshold
    return greedy_walk(boxes.shape[0], lambda i, rest: iou(boxes[i], boxes[rest], offset), thr,
                       inclusive=inclusive, limit=limit)


def greedy_walk(count: int, overlap: Callable[[int, np.ndarray], np.ndarray], threshold: Any, *,
                inclusive: bool = False, limit: int | None = None) -> np.ndarray:
    """`greedy_keep` with the overlap of one's own: `overlap(i, rest)` gives the overlap of box
    `i` with each box of the positions `rest` (rotated IoU, or a reference's own variant of the
    axis-aligned one). The loop runs once per kept box, each pass one vectorized overlap
    against the boxes after it still alive."""
    alive = np.ones(count, dtype=bool)
    kept: list[int] = []
    position = 0
    while position < count and (limit is None or len(kept) < limit):
        kept.append(position)
        rest = np.flatnonzero(alive[position + 1:]) + position + 1
        if rest.size:
            found = overlap(position, rest)
            alive[rest[found >= threshold if inclusive else found > threshold]] = False
        following = np.flatnonzero(alive[position + 1:])
        if not following.size:
            break
        position = position + 1 + int(following[0])
    return np.asarray(kept, dtype=np.int64)
