"""CTCLoss-4: the Connectionist Temporal Classification loss, -ln of the summed probability of
every alignment of each target with its logits (Graves et al., 2006).

logits is [N, T, C] of a floating-point type; logit_length [N] and label_length [N] are of one
type T1, labels [N, T] and the optional scalar blank_index (C - 1 when left out) of one type T2,
each i32 or i64. For batch b the target is labels[b, :label_length[b]], with repeated labels
merged when `preprocess_collapse_repeated` is true, and only the first occurrence of each label
kept when `unique` is true (unique subsumes collapsing). A path is one class per step for the
first logit_length[b] steps; it aligns with the target when, after merging repeated classes
(`ctc_merge_repeated`) and removing blanks, it equals the target. A path's probability is the
product of the softmax probabilities of its classes; the loss is -ln of their sum.

The sum is computed by the forward (alpha) recursion over the target with a blank before, between
and after its labels, in log space, one time step at a time over every batch and position at
once, in f64 (f32 and the narrow floats round once at the end). The softmax's log-sum-exp
subtracts the largest logit first, as the spec's note recommends. Where no path aligns (with
merging, a target needs one step per label plus one per repeated pair) the loss is +inf, as in
OpenVINO's reference.

Departures of OpenVINO from the spec, where irscatter follows the spec:
  * an empty target (label_length 0, or everything left out) has one alignment, the path of
    blanks; the reference gives a loss of 0 for it, and the CPU plugin reads out of bounds;
  * `preprocess_collapse_repeated` with label_length 0: the reference and the CPU plugin still
    take labels[b, 0] as a target of one label; irscatter's target is empty;
  * OpenVINO sums exp(logits) without subtracting the largest logit first, so a logit above
    ~88.7 overflows f32 and gives a loss of +inf or NaN; irscatter gives the finite loss.
  * OpenVINO reads a layer without a ctc_merge_repeated attribute as false (its members have no
    default); the spec's default, which irscatter takes, is true.
Undefined behaviour, decided as OpenVINO's reference decides it: a label equal to blank_index
is a label like any other (it emits the blank's probability and takes part in the repeat rule),
where the CPU plugin treats it as a blank. A logit_length outside [0, T] is refused
(`sequence-lengths-range`), a label_length outside [0, logit_length] (`label-length-range`), a
label of the target outside [0, C) (`index-range`) and a blank_index outside [0, C)
(`blank-index-range`): OpenVINO's reference refuses the lengths and reads out of bounds for the
rest.
"""

from __future__ import annotations

import numpy as np

from irscatter.errors import ExecutionError
from irscatter.ir.shapes import Dimension, PartialShape
from irscatter.ops.base import IRBool, Op, OpAttrs, TensorInfo, check, required
from irscatter.ops.common.ranges import Bounds, extent, indices_within
from irscatter.ops.common.types import check_float, same_element_type
from irscatter.ops.registry import register
from irscatter.ops.sequence.ctc_greedy_decoder import merge_dims
from irscatter.ops.sequence.ctc_greedy_decoder_seq_len import check_index_type


class CTCLossAttrs(OpAttrs):
    preprocess_collapse_repeated: IRBool = False
    ctc_merge_repeated: IRBool = True
    unique: IRBool = False


def log_sum_exp(logits: np.ndarray) -> np.ndarray:
    """ln of the softmax's denominator over the last axis, in f64, so that ln softmax is
    logits - log_sum_exp(logits). The largest logit is subtracted first; a row whose largest
    logit is +inf or -inf or NaN gives that value (so ln softmax is -inf for the finite logits of
    a row holding +inf, and NaN for the infinite ones, as the plain formula gives). One batch at
    a time, to hold one [T, C] row of f64 at once."""
    out = np.empty(logits.shape[:-1], np.float64)
    for b in range(logits.shape[0]):
        wide = logits[b].astype(np.float64)
        top = np.max(wide, axis=-1, keepdims=True) if wide.shape[-1] else np.full(wide.shape[:-1] + (1,), -np.inf)
        finite = np.isfinite(top)
        with np.errstate(invalid="ignore", over="ignore"):
            total = np.log(np.sum(np.exp(wide - np.where(finite, top, 0)), axis=-1, keepdims=True))
        out[b] = np.where(finite, top + total, top)[..., 0]
    return out


def _logaddexp3(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """ln(e^a + e^b + e^c), -inf when all three are -inf, NaN when any is NaN."""
    top = np.maximum(np.maximum(a, b), c)
    safe = np.where(np.isfinite(top), top, 0)
    with np.errstate(invalid="ignore", divide="ignore"):
        total = np.log(np.exp(a - safe) + np.exp(b - safe) + np.exp(c - safe)) + safe
    return np.where(np.isneginf(top), -np.inf, total)


@register("CTCLoss", 4)
class CTCLoss(Op):
    labels = {
        "label-length-range": "a label_length lies outside [0, logit_length] of its batch",
        "blank-index-range": "blank_index lies outside [0, C)",
    }

    Attrs = CTCLossAttrs
    attrs: CTCLossAttrs
    inputs = ("logits", "logit_length", "labels", "label_length", "blank_index")
    optional_inputs = 1

    def input_range(self, position: int, infos) -> Bounds | None:
        name, steps, classes = self.inputs[position], extent(infos[0], 1), extent(infos[0], 2)
        if name in ("labels", "blank_index"):
            return indices_within(classes)
        if steps is None or name not in ("logit_length", "label_length"):
            return None
        # drawn apart, every label_length must still fit its logit_length: they meet halfway
        half = (steps + 1) // 2
        return (half, steps) if name == "logit_length" else (0, half)

    def infer(self, logits: TensorInfo, logit_length: TensorInfo, labels: TensorInfo, label_length: TensorInfo,
              blank_index: TensorInfo | None = None) -> TensorInfo:
        check_float(self, logits.etype, "logits")
        for name, info in (("logit_length", logit_length), ("labels", labels), ("label_length", label_length)):
            check_index_type(self, info, name)
        same_element_type(logit_length, label_length, "logit_length and label_length must share one element type",
                          "same-element-type", self.port("label_length"))
        if blank_index is not None:
            check_index_type(self, blank_index, "blank_index")
            same_element_type(labels, blank_index, "labels and blank_index must share one element type",
                              "same-element-type", self.port("blank_index"))
            if blank_index.shape.rank_is_static:
                check(blank_index.shape.rank == 0, "scalar-input",
                      f"blank_index must be a scalar, found shape {blank_index.shape}", port=self.port("blank_index"))
        batch, time = Dimension.dynamic(), Dimension.dynamic()
        if logits.shape.rank_is_static:
            check(logits.shape.rank == 3, "ctc-shape", f"logits must be [N, T, C], found shape {logits.shape}",
                  port=self.port("logits"))
            batch, time = logits.shape[0], logits.shape[1]
        for name, info, rank in (("logit_length", logit_length, 1), ("labels", labels, 2),
                                 ("label_length", label_length, 1)):
            if not info.shape.rank_is_static:
                continue
            want = "[N, T]" if rank == 2 else "[N]"
            check(info.shape.rank == rank, "ctc-shape", f"{name} must be {want}, found shape {info.shape}",
                  port=self.port(name))
            batch = required(merge_dims(batch, info.shape[0]), "ctc-shape",
                             f"{name} {info.shape} must hold one entry per batch ({batch}) of logits",
                             port=self.port(name))
            if rank == 2:
                time = required(merge_dims(time, info.shape[1]), "ctc-shape",
                                f"labels {info.shape} must hold T ({time}) labels per batch", port=self.port(name))
        return TensorInfo(logits.etype, PartialShape.of([batch]))

    def compute(self, logits: np.ndarray, logit_length: np.ndarray, labels: np.ndarray, label_length: np.ndarray,
                blank_index: np.ndarray | None = None) -> np.ndarray:
        batch, time, classes = logits.shape
        steps, lengths = self._lengths(logit_length, label_length, time)
        blank = classes - 1 if blank_index is None else int(blank_index.reshape(-1)[0])
        if not 0 <= blank < classes:
            raise ExecutionError(f"blank_index is {blank}, outside [0, {classes})", port=self.port("blank_index")
                                 if blank_index is not None else self.port("logits"), label="blank-index-range")
        target, count = self._targets(labels.astype(np.int64), lengths, classes)
        loss = self._loss(logits, log_sum_exp(logits), steps, target, count, blank)
        return loss.astype(logits.dtype)  # one rounding from f64

    def _lengths(self, logit_length: np.ndarray, label_length: np.ndarray, time: int) -> tuple[np.ndarray, np.ndarray]:
        steps, lengths = logit_length.astype(np.int64), label_length.astype(np.int64)
        bad = (steps < 0) | (steps > time)
        if np.any(bad):
            k = int(np.flatnonzero(bad)[0])
            raise ExecutionError(f"logit_length[{k}] is {steps[k]}, outside [0, {time}]",
                                 port=self.port("logit_length"), label="sequence-lengths-range")
        bad = (lengths < 0) | (lengths > steps)
        if np.any(bad):
            k = int(np.flatnonzero(bad)[0])
            raise ExecutionError(f"label_length[{k}] is {lengths[k]}, outside [0, logit_length[{k}] = {steps[k]}]",
                                 port=self.port("label_length"), label="label-length-range")
        return steps, lengths

    def _targets(self, labels: np.ndarray, lengths: np.ndarray, classes: int) -> tuple[np.ndarray, np.ndarray]:
        """Each batch's target after collapsing or keeping unique labels, packed to the front of
        its row [N, T] (the rest 0), and its length [N]."""
        batch, time = labels.shape
        valid = np.arange(time)[None, :] < lengths[:, None]
        bad = valid & ((labels < 0) | (labels >= classes))
        if np.any(bad):
            b, t = (int(i) for i in np.argwhere(bad)[0])
            raise ExecutionError(f"labels[{b}, {t}] is {labels[b, t]}, outside [0, {classes})",
                                 port=self.port("labels"), label="index-range")
        keep = valid.copy()
        if self.attrs.unique:
            order = np.argsort(labels, axis=1, kind="stable")
            ordered = np.take_along_axis(labels, order, axis=1)
            first = np.ones_like(keep)
            first[:, 1:] = ordered[:, 1:] != ordered[:, :-1]
            np.put_along_axis(keep, order, np.take_along_axis(valid, order, axis=1) & first, axis=1)
        elif self.attrs.preprocess_collapse_repeated and time > 1:
            keep[:, 1:] &= labels[:, 1:] != labels[:, :-1]
        target = np.zeros_like(labels)
        rows, cols = np.nonzero(keep)
        target[rows, (np.cumsum(keep, axis=1) - 1)[rows, cols]] = labels[rows, cols]
        return target, keep.sum(axis=1)

    def _loss(self, logits: np.ndarray, denominator: np.ndarray, steps: np.ndarray, target: np.ndarray,
              count: np.ndarray, blank: int) -> np.ndarray:
        """-ln of the summed probability of the alignments, by the forward recursion over the
        extended target (blank, label 0, blank, label 1, ..., blank): alpha[b, s] is ln of the
        summed probability of the path prefixes that end at position s of batch b."""
        batch, time, _ = logits.shape
        width = 2 * (int(count.max()) if batch else 0) + 1
        labels = target[:, : width // 2]
        extended = np.full((batch, width), blank, np.int64)
        extended[:, 1::2] = labels
        inside = np.arange(width)[None, :] < (2 * count + 1)[:, None]
        is_label = np.zeros(width, bool)
        is_label[1::2] = True
        merge = self.attrs.ctc_merge_repeated
        # a label position is reached from the label before it (skipping the blank between) unless
        # merging would fuse the two; with merging, a label may also last several steps
        skip = np.zeros((batch, width), bool)
        skip[:, 3::2] = True if not merge else labels[:, 1:] != labels[:, :-1]
        stay = np.broadcast_to(~is_label | merge, (batch, width))
        rows = np.arange(batch)[:, None]
        alpha = np.full((batch, width), -np.inf)
        none = np.full((batch, 1), -np.inf)
        none2 = np.full((batch, min(2, width)), -np.inf)
        for t in range(time):
            with np.errstate(invalid="ignore"):
                emit = np.where(inside, logits[rows, t, extended].astype(np.float64) - denominator[:, t, None], -np.inf)
            if t == 0:
                start = np.full((batch, width), -np.inf)
                start[:, : min(2, width)] = 0.0
                new = start + emit
            else:
                from_here = np.where(stay, alpha, -np.inf)
                from_before = np.concatenate([none, alpha[:, :-1]], axis=1)
                from_skip = np.where(skip, np.concatenate([none2, alpha[:, :-2]], axis=1), -np.inf)
                new = _logaddexp3(from_here, from_before, from_skip) + emit
            alpha = np.where((t < steps)[:, None], new, alpha)
        last = 2 * count
        end = alpha[np.arange(batch), last]
        before = np.where(count > 0, alpha[np.arange(batch), np.maximum(last - 1, 0)], -np.inf)
        total = _logaddexp3(end, before, np.full(batch, -np.inf))
        return np.where(steps == 0, 0.0, -total)  # no steps: the empty path alone, of probability 1
