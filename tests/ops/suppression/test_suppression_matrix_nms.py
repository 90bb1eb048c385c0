"""MatrixNms-8 against OpenVINO's CPU plugin and the oracle (`oracles.suppression_multiclass`).

Every attribute value (both decay functions, two sigmas, the three sort orders with and without
sort_result_across_batch, both output types, score and post thresholds, nms_top_k, keep_top_k,
background_class, normalized boxes in [0, 1] and pixel boxes with the +1), f32, f16 and bf16
boxes, size-0 dims, equal scores, overlapping and touching boxes. Decayed scores within 4 ulps
(the gaussian decay's exp); classes, boxes, indices and counts exact.

Where OpenVINO is not the judge (see MatrixNms's doc): classid order without
sort_result_across_batch (the spec sorts each batch element by class, OpenVINO by score);
no box selected at all or empty inputs (the CPU plugin fails, or gives valid_outputs the shape
[0]); equal scores (OpenVINO orders them by its unstable heap sort); nms_top_k 0; NaN scores;
f16 and bf16 (the CPU plugin takes f32 only, and OpenVINO's core has no MatrixNms evaluate to
fall back on); f64 (OpenVINO refuses it).
"""

import dataclasses

import harness
import ml_dtypes
import numpy as np
import pytest
from harness import Case, Input
from oracles import suppression_multiclass as oracle

TYPES = [np.float32, np.float16, np.float32, ml_dtypes.bfloat16]


def random_boxes(rng, shape, pixels=False, dtype=np.float32):
    scale = 20.0 if pixels else 1.0
    corner = rng.uniform(0, 0.7, (*shape, 2)) * scale
    size = rng.uniform(0.05, 0.5, (*shape, 2)) * scale
    if pixels:
        corner, size = np.round(corner), np.round(size)
    return np.concatenate([corner, corner + size], -1).astype(dtype)


def _case(cid, boxes, scores, attrs, **kw):
    def run(b, s):
        return oracle.matrix_nms(b, s, **attrs)
    if "openvino" not in kw and boxes.dtype != np.float32:
        kw = dict(kw, openvino="none", why="the CPU plugin takes f32 boxes only, and OpenVINO's core cannot "
                  "evaluate MatrixNms")
    if "openvino" not in kw:
        outputs = run(boxes, scores)
        valid = outputs[2]
        if attrs.get("nms_top_k") == 0:
            kw = dict(kw, openvino="none", why="with nms_top_k 0 OpenVINO reads past its empty candidate list")
        elif valid.size and valid.sum() == 0 or 0 in scores.shape:
            kw = dict(kw, openvino="none", why="the CPU plugin fails when no box is selected (or gives valid_outputs "
                      "shape [0] for empty inputs), and OpenVINO's core cannot evaluate MatrixNms")
        elif attrs.get("sort_result_type") == "classid" and not attrs.get("sort_result_across_batch"):
            kw = dict(kw, openvino="none", why="the spec sorts each batch element by class, OpenVINO by score "
                      "(checked against the oracle's score order below)")
    return Case(cid, "MatrixNms", "opset8", [Input("boxes", boxes), Input("scores", scores)], attrs,
                oracle=run, ulps=4, **kw)


def _cases():
    rng = np.random.default_rng(8)
    out = []
    n = 0
    for decay in ("linear", "gaussian"):
        for order in ("score", "classid", "none"):
            for across in (False, True):
                for normalized in (True, False):
                    n += 1
                    dtype = TYPES[n % len(TYPES)]
                    batches, classes, count = int(rng.integers(1, 4)), int(rng.integers(1, 4)), int(rng.integers(1, 9))
                    boxes = random_boxes(rng, (batches, count), pixels=not normalized, dtype=dtype)
                    scores = rng.uniform(0, 1, (batches, classes, count)).astype(dtype)
                    attrs = {"decay_function": decay, "sort_result_type": order, "sort_result_across_batch": across,
                             "normalized": normalized, "output_type": ("i32", "i64")[n % 2],
                             "gaussian_sigma": (2.0, 0.5)[n // 2 % 2], "score_threshold": (0.0, 0.3)[n // 3 % 2],
                             "post_threshold": (0.0, 0.2, 0.5)[n % 3], "nms_top_k": (-1, 3, 5)[n // 2 % 3],
                             "keep_top_k": (-1, 4, 10)[n // 3 % 3], "background_class": (-1, 0, 1)[n // 4 % 3]}
                    out.append(_case(f"mnms-{n}-{decay}-{order}-{'across' if across else 'per'}-"
                                     f"{'norm' if normalized else 'pixels'}-{np.dtype(dtype).name}",
                                     boxes, scores, attrs))
    # bigger lists: many overlaps
    for k, (shape, decay) in enumerate((((2, 3, 40), "linear"), ((1, 2, 64), "gaussian"))):
        boxes = random_boxes(rng, (shape[0], shape[2]))
        scores = rng.uniform(0, 1, shape).astype(np.float32)
        out.append(_case(f"mnms-big-{k}", boxes, scores, {"decay_function": decay, "sort_result_type": "score",
                                                           "post_threshold": 0.1, "keep_top_k": 50}))
    # equal scores: ties go by box index
    boxes = random_boxes(rng, (2, 6))
    tied = np.array([[[0.5, 0.9, 0.5, 0.5, 0.9, 0.5], [0.7, 0.7, 0.7, 0.7, 0.7, 0.7]]] * 2, np.float32)
    for order in ("score", "classid"):
        out.append(_case(f"mnms-ties-{order}", boxes, tied, {"sort_result_type": order,
                                                             "sort_result_across_batch": True},
                         openvino="none", why="OpenVINO orders equal scores by its unstable heap sort"))
    # touching and identical boxes (IoU 1: the linear decay's guard), normalized and not
    same = np.array([[[0, 0, 1, 1], [0, 0, 1, 1], [1, 0, 2, 1], [0.5, 0, 1.5, 1], [3, 3, 3, 3]]], np.float32)
    for normalized in (True, False):
        for decay in ("linear", "gaussian"):
            out.append(_case(f"mnms-same-{decay}-{normalized}", same,
                             np.array([[[0.9, 0.8, 0.7, 0.6, 0.5]]], np.float32),
                             {"normalized": normalized, "decay_function": decay, "post_threshold": 0.01}))
    # the spec page's example shapes
    boxes = random_boxes(rng, (3, 100))
    scores = rng.uniform(0, 1, (3, 5, 100)).astype(np.float32)
    out.append(_case("mnms-spec-shapes", boxes, scores, {"decay_function": "gaussian", "sort_result_type": "score",
                                                         "output_type": "i64", "post_threshold": 0.3}))
    # empty inputs and nothing selected
    for shape in ((2, 3, 0), (2, 0, 4), (0, 2, 3)):
        out.append(_case(f"mnms-empty-{'x'.join(map(str, shape))}", random_boxes(rng, (shape[0], shape[2])),
                         np.zeros(shape, np.float32), {}))
    out.append(_case("mnms-none-selected", random_boxes(rng, (2, 4)), rng.uniform(0, 0.5, (2, 2, 4)).astype(np.float32),
                     {"score_threshold": 0.6}))
    low = rng.uniform(0.2, 1, (2, 2, 4)).astype(np.float32)
    low[0] = 0.1
    out.append(_case("mnms-first-batch-empty", random_boxes(rng, (2, 4)), low, {"score_threshold": 0.15},
                     openvino="cpu"))
    out.append(_case("mnms-topk-0", random_boxes(rng, (1, 4)), rng.uniform(0, 1, (1, 2, 4)).astype(np.float32),
                     {"nms_top_k": 0}))
    out.append(_case("mnms-keep-0", random_boxes(rng, (1, 4)), rng.uniform(0, 1, (1, 2, 4)).astype(np.float32),
                     {"keep_top_k": 0}))
    # the spec's attribute name sort_result (OpenVINO reads sort_result_type only)
    boxes, scores = random_boxes(rng, (2, 5)), rng.uniform(0, 1, (2, 3, 5)).astype(np.float32)
    out.append(_case("mnms-sort-result-class", boxes, scores, {"sort_result": "class", "sort_result_across_batch": True},
                     openvino="none", why="OpenVINO ignores the spec's attribute name sort_result"))
    # NaN and infinite values; f64
    boxes, scores = random_boxes(rng, (1, 6)), rng.uniform(0, 1, (1, 2, 6)).astype(np.float32)
    boxes[0, 1, 2] = np.nan
    boxes[0, 2, 0] = -np.inf
    scores[0, 0, 3] = np.nan
    scores[0, 1, 4] = np.inf
    out.append(_case("mnms-nan", boxes, scores, {"decay_function": "gaussian"}, openvino="none",
                     why="OpenVINO sorts NaN scores in an undefined place"))
    out.append(_case("mnms-f64", random_boxes(rng, (2, 6), dtype=np.float64),
                     rng.uniform(0, 1, (2, 2, 6)), {"sort_result_type": "score", "decay_function": "gaussian"},
                     openvino="none", why="OpenVINO refuses f64 boxes"))
    return out


CASES = _cases()

F32 = np.zeros((1, 2, 4), np.float32)
S32 = np.zeros((1, 3, 2), np.float32)


def _error(cid, boxes, scores, attrs, label):
    return Case(cid, "MatrixNms", "opset8", [Input("boxes", boxes), Input("scores", scores)], attrs, error=label)


ERRORS = [
    _error("mnms-err-boxes-rank", np.zeros((2, 4), np.float32), S32, {}, "nms-boxes-shape"),
    _error("mnms-err-boxes-last", np.zeros((1, 2, 3), np.float32), S32, {}, "nms-boxes-shape"),
    _error("mnms-err-scores-rank", F32, np.zeros((3, 2), np.float32), {}, "nms-scores-shape"),
    _error("mnms-err-scores-boxes", F32, np.zeros((1, 3, 5), np.float32), {}, "nms-scores-shape"),
    _error("mnms-err-int", F32.astype(np.int32), S32.astype(np.int32), {}, "float-type"),
    _error("mnms-err-mixed", F32, S32.astype(np.float16), {}, "same-element-type"),
    _error("mnms-err-top-k", F32, S32, {"nms_top_k": -2}, "nms-attribute-range"),
    _error("mnms-err-keep", F32, S32, {"keep_top_k": -5}, "nms-attribute-range"),
    _error("mnms-err-background", F32, S32, {"background_class": -2}, "nms-attribute-range"),
    _error("mnms-err-decay", F32, S32, {"decay_function": "cubic"}, "attributes"),
    _error("mnms-err-sort", F32, S32, {"sort_result_type": "class"}, "attributes"),
    _error("mnms-err-output-type", F32, S32, {"output_type": "i16"}, "attributes"),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_matrix_nms(case):
    harness.check(case, CASES)


# The other side: without sort_result_across_batch OpenVINO leaves classid in score order.
CLASS_ORDER = [dataclasses.replace(c, id=f"{c.id}-openvino-order", openvino="cpu", why="")
               for c in CASES if c.why.startswith("the spec sorts each batch element by class")]


@pytest.mark.parametrize("case", CLASS_ORDER, ids=str)
def test_matrix_nms_openvino_class_order(case):
    got = harness.run_openvino(case, CLASS_ORDER)
    want = oracle.matrix_nms(*(i.value for i in case.inputs), **dict(case.attrs, sort_result_type="score"))
    for k, (g, w) in enumerate(zip(got, want)):
        harness.assert_close(g, w, ulps=10, what=f"output {k}")


@pytest.mark.parametrize("case", ERRORS, ids=str)
def test_matrix_nms_refused(case):
    harness.check(case, ERRORS)
