"""Oracles of the CTC ops (CTCGreedyDecoder-1, CTCGreedyDecoderSeqLen-6, CTCLoss-4): one Python
step per time step, class or path, written from the specs.

The decoders take, at each step, the first class whose value is strictly larger than every
value before it (a NaN at class 0 keeps class 0, a NaN elsewhere is passed over: irscatter's
documented choice, OpenVINO's scan). The loss enumerates every path of classes over the logit
steps (so keep T and C tiny), decodes each path as the spec says (merge repeated classes when
ctc_merge_repeated, then remove blanks) and sums the probabilities of those equal to the
processed target, in log space with Python floats (f64).
"""

from __future__ import annotations

import itertools
import math

import ml_dtypes
import numpy as np


def _best(values) -> int:
    """The class of one step: scan from class 0, moving on only to a strictly larger value."""
    best, top = 0, float(values[0])
    for c in range(1, len(values)):
        v = float(values[c])
        if v > top:
            best, top = c, v
    return best


def _emit(classes, blank, merge) -> list[int]:
    """The best path of one sequence decoded: repeats merged (when merge) and blanks removed."""
    out, previous = [], -1
    for c in classes:
        if not (merge and c == previous) and not blank(c):
            out.append(c)
        previous = c
    return out


def _as(value: float, dtype) -> np.ndarray:
    return np.array(value, np.float64).astype(dtype)


def ctc_greedy_decoder(data, sequence_mask, *, ctc_merge_repeated=True):
    """[T, N, C] logits and a [T, N] mask: the decoded classes [N, T, 1, 1] of data's type."""
    time, batch, classes = data.shape
    out = np.full((batch, time, 1, 1), -1.0, np.float64)
    for b in range(batch):
        steps = []
        for t in range(time):
            if float(sequence_mask[t, b]) == 0:
                break
            steps.append(_best(data[t, b, :]))
        for k, c in enumerate(_emit(steps, lambda c: c == classes - 1, ctc_merge_repeated)):
            out[b, k, 0, 0] = c
    return out.astype(data.dtype) if data.dtype != ml_dtypes.bfloat16 else out.astype(np.float32).astype(data.dtype)


def ctc_greedy_decoder_seq_len(data, sequence_length, blank_index=None, *, merge_repeated=True,
                               classes_index_type=np.int32, sequence_length_type=np.int32):
    """[N, T, C] logits and [N] lengths: the decoded classes [N, T] and their counts [N]."""
    batch, time, classes = data.shape
    blank = classes - 1 if blank_index is None else int(np.asarray(blank_index).reshape(-1)[0])
    out = np.full((batch, time), -1, classes_index_type)
    counts = np.zeros(batch, sequence_length_type)
    for b in range(batch):
        steps = [_best(data[b, t, :]) for t in range(int(sequence_length[b]))]
        emitted = _emit(steps, lambda c: c == blank, merge_repeated)
        for k, c in enumerate(emitted):
            out[b, k] = c
        counts[b] = len(emitted)
    return out, counts


def _log_softmax(row) -> list[float]:
    values = [float(v) for v in row]
    top = max(values)
    total = sum(math.exp(v - top) for v in values)
    return [v - top - math.log(total) for v in values]


def _target(labels, length, collapse, unique) -> list[int]:
    target = [int(v) for v in labels[:length]]
    if unique:
        seen, kept = set(), []
        for v in target:
            if v not in seen:
                seen.add(v)
                kept.append(v)
        return kept
    if collapse:
        return [v for k, v in enumerate(target) if k == 0 or v != target[k - 1]]
    return target


def ctc_loss(logits, logit_length, labels, label_length, blank_index=None, *, preprocess_collapse_repeated=False,
             ctc_merge_repeated=True, unique=False):
    """-ln of the summed probability of every path over logit_length[b] steps that decodes to
    the processed target; +inf when none does."""
    batch, _, classes = logits.shape
    blank = classes - 1 if blank_index is None else int(np.asarray(blank_index))
    out = np.zeros(batch, np.float64)
    for b in range(batch):
        steps = int(logit_length[b])
        target = _target(labels[b], int(label_length[b]), preprocess_collapse_repeated, unique)
        logp = [_log_softmax(logits[b, t, :]) for t in range(steps)]
        total = -math.inf
        for path in itertools.product(range(classes), repeat=steps):
            if _emit(path, lambda c: c == blank, ctc_merge_repeated) != target:
                continue
            log_prob = sum(logp[t][c] for t, c in enumerate(path))
            if total == -math.inf:
                total = log_prob
            elif log_prob != -math.inf:
                top = max(total, log_prob)
                total = top + math.log(math.exp(total - top) + math.exp(log_prob - top))
        out[b] = -total
    return out.astype(logits.dtype)


def ctc_loss_segments(logits, logit_length, labels, label_length, blank_index=None, *,
                      preprocess_collapse_repeated=False, ctc_merge_repeated=True, unique=False):
    """CTCLoss as OpenVINO's reference enumerates alignments, for the undefined case of a label
    equal to blank_index: every way of giving each target label a run of steps [start, end]
    (one step when not ctc_merge_repeated), runs in order with at least one step between two
    equal labels when merging, every other step a blank. A label equal to the blank is a label
    like any other here, where the spec's decoding would remove it. Equal to `ctc_loss` when
    no label is the blank."""
    batch, _, classes = logits.shape
    blank = classes - 1 if blank_index is None else int(np.asarray(blank_index))
    out = np.zeros(batch, np.float64)
    for b in range(batch):
        steps = int(logit_length[b])
        target = _target(labels[b], int(label_length[b]), preprocess_collapse_repeated, unique)
        logp = [_log_softmax(logits[b, t, :]) for t in range(steps)]
        total = -math.inf
        for bounds in itertools.combinations_with_replacement(range(steps), 2 * len(target)):
            runs = [(bounds[2 * k], bounds[2 * k + 1]) for k in range(len(target))]
            if not ctc_merge_repeated and any(s != e for s, e in runs):
                continue
            ok = True
            for k in range(1, len(runs)):
                gap = 2 if ctc_merge_repeated and target[k] == target[k - 1] else 1
                ok = ok and runs[k][0] >= runs[k - 1][1] + gap
            if not ok:
                continue
            classes_of = [blank] * steps
            for (s, e), label in zip(runs, target):
                for t in range(s, e + 1):
                    classes_of[t] = label
            log_prob = sum(logp[t][c] for t, c in enumerate(classes_of))
            if total == -math.inf:
                total = log_prob
            elif log_prob != -math.inf:
                top = max(total, log_prob)
                total = top + math.log(math.exp(total - top) + math.exp(log_prob - top))
        out[b] = -total
    return out.astype(logits.dtype)
