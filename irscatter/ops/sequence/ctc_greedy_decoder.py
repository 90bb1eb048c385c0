"""CTCGreedyDecoder-1: best-path decoding of CTC logits, with the sequence lengths given as a
[T, N] mask of ones and zeros.

data is [T, N, C] (time first), sequence_mask [T, N], both of one floating-point type T_F. For
each batch b the steps t = 0, 1, ... up to the first step whose mask is 0 are decoded: the class
of step t is the first index of the largest value of data[t, b, :]. A step whose class is the
blank (C - 1) emits nothing, nor does one whose class equals the previous step's when
`ctc_merge_repeated` is true (the previous step counts even when it was a blank, so "a blank a"
gives "a a"). The emitted classes fill output[b, :, 0, 0] from the front, as values of T_F; the
rest is -1. The output is [N, T, 1, 1].

Choices where the spec leaves it open, all as OpenVINO's reference and CPU plugin do:
  * a sequence ends at the first step whose mask is exactly 0 (or -0.0); any other mask value,
    NaN included, counts as 1, and steps after the first 0 are never read;
  * the best class is found by a scan that moves on only to a strictly larger value: a NaN at
    class 0 makes class 0 the best, and a NaN elsewhere is passed over;
  * f16 and bf16 logits compare in f32 (exactly); a class index that a narrow float cannot hold
    is rounded to the nearest value it can (f16 above 2048, bf16 above 256).
A step to decode over 0 classes is refused (`ctc-classes`): OpenVINO's reference and plugin read
out of bounds there.
"""

from __future__ import annotations

import numpy as np

from irscatter.errors import ExecutionError
from irscatter.ir.element_types import ElementType
from irscatter.ir.shapes import Dimension, PartialShape
from irscatter.ops.base import IRBool, Op, OpAttrs, TensorInfo, check, required
from irscatter.ops.common.numeric import compute_dtype, from_compute
from irscatter.ops.common.types import check_float, same_element_type
from irscatter.ops.registry import register

# --- what the CTC ops share -------------------------------------------------------------------


def merge_dims(a: Dimension, b: Dimension) -> Dimension | None:
    """The dimension both `a` and `b` allow (their intersection), or None when they exclude each other."""
    lo = max(a.min, b.min)
    hi = b.max if a.max is None else a.max if b.max is None else min(a.max, b.max)
    return None if hi is not None and lo > hi else Dimension(min=lo, max=hi)


def best_classes(data: np.ndarray) -> np.ndarray:
    """The class of each step of `data` [..., C] as int64: the first index of the largest value,
    found as OpenVINO's scan finds it (it moves on only to a strictly larger value, so a NaN at
    index 0 wins and a NaN elsewhere is passed over). C must be at least 1."""
    wide = data.astype(compute_dtype(ElementType.from_dtype(data.dtype)), copy=False)
    nan = np.isnan(wide)
    best = np.argmax(np.where(nan, -np.inf, wide), axis=-1)
    return np.where(nan[..., 0], 0, best).astype(np.int64)


def collapse_path(classes: np.ndarray, lengths: np.ndarray, blank: np.ndarray, merge: bool) -> tuple[np.ndarray,
                                                                                                      np.ndarray]:
    """Decode best paths: `classes` [N, T] (int64), the first `lengths[b]` steps of row b read,
    `blank` [N, T] True where a step's class is the blank. A step is emitted unless it is a blank
    or (with `merge`) repeats the previous step's class. Returns the emitted classes packed to the
    front of each row with -1 after them [N, T], and how many each row emitted [N]."""
    n, t = classes.shape
    active = np.arange(t)[None, :] < lengths[:, None]
    previous = np.concatenate([np.full((n, min(t, 1)), -1, np.int64), classes[:, :-1]], axis=1)
    keep = active & ~blank
    if merge:
        keep &= classes != previous
    out = np.full((n, t), -1, np.int64)
    rows, cols = np.nonzero(keep)
    slot = np.cumsum(keep, axis=1) - 1
    out[rows, slot[rows, cols]] = classes[rows, cols]
    return out, keep.sum(axis=1)


def check_classes(op: Op, classes: int, lengths: np.ndarray) -> None:
    """A step to decode needs at least one class to choose from."""
    if classes == 0 and np.any(lengths > 0):
        raise ExecutionError("the logits have 0 classes, so no step can be decoded", port=op.port("data"),
                             label="ctc-classes")


# --- the op -------------------------------------------------------------------------------------


class CTCGreedyDecoderAttrs(OpAttrs):
    ctc_merge_repeated: IRBool = True


@register("CTCGreedyDecoder", 1)
class CTCGreedyDecoder(Op):
    Attrs = CTCGreedyDecoderAttrs
    attrs: CTCGreedyDecoderAttrs
    inputs = ("data", "sequence_mask")

    def infer(self, data: TensorInfo, sequence_mask: TensorInfo) -> TensorInfo:
        check_float(self, data.etype, "data")
        check_float(self, sequence_mask.etype, "sequence_mask")
        etype = same_element_type(data, sequence_mask, "data and sequence_mask must share one element type",
                                  "same-element-type", self.port("sequence_mask"))
        time, batch = Dimension.dynamic(), Dimension.dynamic()
        if data.shape.rank_is_static:
            check(data.shape.rank == 3, "ctc-shape", f"data must be [T, N, C], found shape {data.shape}",
                  port=self.port("data"))
            time, batch = data.shape[0], data.shape[1]
        if sequence_mask.shape.rank_is_static:
            check(sequence_mask.shape.rank == 2, "ctc-shape",
                  f"sequence_mask must be [T, N], found shape {sequence_mask.shape}", port=self.port("sequence_mask"))
            message = f"sequence_mask {sequence_mask.shape} must be [T, N] of data {data.shape}"
            time = required(merge_dims(time, sequence_mask.shape[0]), "ctc-shape", message,
                            port=self.port("sequence_mask"))
            batch = required(merge_dims(batch, sequence_mask.shape[1]), "ctc-shape", message,
                             port=self.port("sequence_mask"))
        return TensorInfo(etype, PartialShape.of([batch, time, 1, 1]))

    def compute(self, data: np.ndarray, sequence_mask: np.ndarray) -> np.ndarray:
        time, batch, classes = data.shape
        ended = sequence_mask == 0
        lengths = np.where(ended.any(axis=0), ended.argmax(axis=0), time) if time else np.zeros(batch, np.int64)
        check_classes(self, classes, lengths)
        if classes == 0:
            out = np.full((batch, time), -1, np.int64)
        else:
            steps = best_classes(data).T  # [N, T]
            out, _ = collapse_path(steps, lengths, steps >= classes - 1, self.attrs.ctc_merge_repeated)
        etype = ElementType.from_dtype(data.dtype)
        return from_compute(out.astype(compute_dtype(etype)), etype).reshape(batch, time, 1, 1)
