"""CTCLoss-4 against OpenVINO's CPU plugin and `oracles.sequence_ctc.ctc_loss` (every path over
the logit steps enumerated, so the oracle's cases are tiny: T <= 5, C <= 4).

Tolerance: 8 ulps of the output type against the oracle (irscatter sums in f64 and rounds once;
the oracle's order of summation differs), 8 * 2 + 2 against the CPU plugin (which sums in f32).
Random logits of f32, f16, bf16 and f64 (f64 judged by the oracle alone: the CPU plugin computes
in f32), lengths and labels of i32 and i64 (T1 and T2 apart), every combination of
preprocess_collapse_repeated, ctc_merge_repeated and unique, targets with repeated labels and
targets too long to align (+inf), blank_index left out (C - 1) and given, larger cases against
the plugin alone, and the refusals.

Judged without the CPU plugin (OpenVINO's core reference cannot evaluate CTCLoss): an empty
target (the plugin crashes; the reference gives 0 where the spec gives the all-blank path),
logits large enough to overflow exp in f32 (OpenVINO gives +inf), the defaults (OpenVINO reads a
missing ctc_merge_repeated as false, where the spec's default is true), and a label equal to
blank_index (undefined: irscatter does what OpenVINO's reference does, checked by
`oracles.sequence_ctc.ctc_loss_segments`; the CPU plugin treats such a label as a blank).
"""

import harness
import numpy as np
import pytest
from harness import Case, named_inputs
from helpers import element_dtypes
from oracles.sequence_ctc import ctc_loss, ctc_loss_segments

TYPES = element_dtypes("f32", "f16", "bf16", "f64")
OP = ("CTCLoss", "opset4")
NAMES = ("logits", "logit_length", "labels", "label_length", "blank_index")
ULPS = 8


def _case(name, arrays, attrs=None, *, oracle=ctc_loss, **judge):
    attrs = {"ctc_merge_repeated": True} if attrs is None else attrs
    kw = {k: v for k, v in attrs.items() if v is not None}
    if oracle is not None:
        judge["oracle"] = lambda *a: oracle(*a, **kw)
    return Case(name, *OP, named_inputs(NAMES, arrays), attrs, ulps=ULPS, **judge)


def _random(rng, dtype, t1, t2, *, batch, time, classes, blank=None, max_label=None, low=-3, high=3):
    logits = rng.uniform(low, high, (batch, time, classes)).astype(dtype)
    steps = rng.integers(1, time + 1, batch)
    lengths = np.array([rng.integers(1, s + 1) for s in steps])
    b = classes - 1 if blank is None else blank
    choices = [c for c in range(classes) if c != b][: max_label]
    labels = rng.choice(choices, (batch, time))
    arrays = [logits, steps.astype(t1), labels.astype(t2), lengths.astype(t1)]
    if blank is not None:
        arrays.append(np.array(blank, t2))
    return arrays


def _cases():
    rng = np.random.default_rng(5)
    cases = []
    flags = [(c, m, u) for c in (False, True) for m in (False, True) for u in (False, True)]
    k = 0
    for tag, dtype in TYPES.items():
        for collapse, merge, unique in flags:
            t1, t2 = [(np.int32, np.int32), (np.int64, np.int64), (np.int32, np.int64), (np.int64, np.int32)][k % 4]
            batch, time, classes = int(rng.integers(1, 4)), int(rng.integers(1, 6)), int(rng.integers(2, 5))
            blank = None if k % 3 else int(rng.integers(0, classes))
            arrays = _random(rng, dtype, t1, t2, batch=batch, time=time, classes=classes, blank=blank,
                             max_label=2 if k % 2 else None)
            attrs = {"preprocess_collapse_repeated": collapse, "ctc_merge_repeated": merge, "unique": unique}
            judge = {"openvino": "none", "why": "the CPU plugin computes f64 in f32"} if tag == "f64" else {}
            cases.append(_case(f"loss-{tag}-c{int(collapse)}m{int(merge)}u{int(unique)}-{batch}x{time}x{classes}",
                               arrays, attrs, **judge))
            k += 1
    i32, f32 = np.int32, np.float32
    logits = rng.normal(size=(3, 5, 3)).astype(f32)
    steps, lengths = np.array([5, 4, 3], i32), np.array([3, 3, 3], i32)
    repeats = np.array([[0, 0, 0, 1, 1], [1, 0, 1, 1, 0], [0, 0, 1, 1, 1]], i32)
    for merge in (True, False):
        cases.append(_case(f"loss-repeats-merge{int(merge)}", [logits, steps, repeats, lengths],
                           {"ctc_merge_repeated": merge}))
    cases.append(_case("loss-too-short-to-align", [logits, np.array([4, 2, 3], i32), repeats, np.array([3, 2, 3], i32)]))
    cases.append(_case("loss-blank-zero", [logits, steps, repeats + 1, lengths, np.array(0, i32)]))
    cases.append(_case("loss-full-length", [logits, np.array([5, 5, 5], i32), repeats, np.array([5, 5, 5], i32)],
                       {"ctc_merge_repeated": False}))
    edges = harness.values(rng, (3, 5, 3), f32, edges=True)
    cases.append(_case("loss-edge-logits", [edges, steps, repeats, lengths]))
    cases.append(_case("loss-minus-inf", [np.where(logits > 1, -np.inf, logits).astype(f32), steps, repeats, lengths]))
    cases.append(_case("loss-plus-inf", [np.where(logits > 1.5, np.inf, logits).astype(f32), steps, repeats, lengths]))
    cases.append(_case("loss-no-batch", [np.zeros((0, 3, 3), f32), np.zeros(0, i32), np.zeros((0, 3), i32),
                                         np.zeros(0, i32)]))
    for merge in (True, False):
        for n in range(2):
            arrays = _random(rng, f32, i32, i32, batch=4, time=30, classes=12, blank=None if n else 0,
                             max_label=3 if n else None)
            cases.append(_case(f"loss-large-merge{int(merge)}-{n}", arrays, {"ctc_merge_repeated": merge}, oracle=None))
    # judged without the CPU plugin
    cases.append(_case("loss-defaults", [logits, steps, repeats, lengths], {}, openvino="none",
                       why="OpenVINO reads a missing ctc_merge_repeated as false; the spec's default is true"))
    empty = {"openvino": "none", "why": "the CPU plugin crashes on an empty target"}
    cases.append(_case("loss-empty-target", [logits, steps, repeats, np.array([0, 1, 0], i32)], **empty))
    cases.append(_case("loss-empty-collapsed", [logits, steps, repeats, np.array([0, 2, 3], i32)],
                       {"preprocess_collapse_repeated": True}, **empty))
    cases.append(_case("loss-no-steps", [logits, np.array([0, 4, 0], i32), repeats, np.array([0, 1, 0], i32)],
                       **empty))
    cases.append(_case("loss-no-time", [np.zeros((2, 0, 3), f32), np.zeros(2, i32), np.zeros((2, 0), i32),
                                        np.zeros(2, i32)], **empty))
    cases.append(_case("loss-large-logits", [(logits * 40 + 60).astype(f32), steps, repeats, lengths],
                       openvino="none", why="OpenVINO sums exp(logits) in f32 without subtracting the largest, "
                                            "which overflows to a loss of +inf"))
    as_blank = np.array([[2, 0, 2, 1, 1], [1, 2, 2, 0, 0], [0, 2, 1, 1, 1]], i32)
    for merge in (True, False):
        cases.append(_case(f"loss-label-is-blank-merge{int(merge)}", [logits, steps, as_blank, lengths],
                           {"ctc_merge_repeated": merge}, oracle=ctc_loss_segments, openvino="none",
                           why="undefined (a label equal to blank_index): the CPU plugin takes it for a blank, "
                               "OpenVINO's reference (followed) for a label"))
    refusals = [
        ("integer-logits", [logits.astype(i32), steps, repeats, lengths], "float-type"),
        ("float-lengths", [logits, steps.astype(f32), repeats, lengths], "ctc-index-type"),
        ("i8-labels", [logits, steps, repeats.astype(np.int8), lengths], "ctc-index-type"),
        ("float-label-lengths", [logits, steps, repeats, lengths.astype(f32)], "ctc-index-type"),
        ("float-blank", [logits, steps, repeats, lengths, np.array(1, f32)], "ctc-index-type"),
        ("length-types", [logits, steps, repeats, lengths.astype(np.int64)], "same-element-type"),
        ("blank-type", [logits, steps, repeats, lengths, np.array(1, np.int64)], "same-element-type"),
        ("blank-shape", [logits, steps, repeats, lengths, np.array([1], i32)], "scalar-input"),
        ("rank", [logits[0], steps, repeats, lengths], "ctc-shape"),
        ("labels-rank", [logits, steps, repeats[0], lengths], "ctc-shape"),
        ("labels-time", [logits, steps, repeats[:, :4], lengths], "ctc-shape"),
        ("labels-batch", [logits, steps, repeats[:2], lengths], "ctc-shape"),
        ("lengths-batch", [logits, steps[:2], repeats, lengths], "ctc-shape"),
        ("label-lengths-rank", [logits, steps, repeats, lengths[None]], "ctc-shape"),
        ("logit-length-past-end", [logits, np.array([6, 4, 3], i32), repeats, lengths], "sequence-lengths-range"),
        ("logit-length-negative", [logits, np.array([5, -1, 3], i32), repeats, np.array([3, 0, 3], i32)],
         "sequence-lengths-range"),
        ("label-length-past-logits", [logits, steps, repeats, np.array([3, 3, 4], i32)], "label-length-range"),
        ("label-length-negative", [logits, steps, repeats, np.array([3, -1, 3], i32)], "label-length-range"),
        ("label-past-classes", [logits, steps, repeats * 3, lengths], "index-range"),
        ("label-negative", [logits, steps, repeats - 1, lengths], "index-range"),
        ("blank-past-classes", [logits, steps, repeats, lengths, np.array(3, i32)], "blank-index-range"),
        ("blank-negative", [logits, steps, repeats, lengths, np.array(-1, i32)], "blank-index-range"),
        ("no-classes", [np.zeros((3, 5, 0), f32), steps, repeats, lengths], "blank-index-range"),
    ]
    for name, arrays, label in refusals:
        cases.append(Case(f"loss-refuses-{name}", *OP, named_inputs(NAMES, arrays), error=label))
    return cases


CASES = _cases()


@pytest.mark.parametrize("case", CASES, ids=str)
def test_ctc_loss(case):
    harness.check(case, CASES)
