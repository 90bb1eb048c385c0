"""MulticlassNms-8 and -9 against OpenVINO's CPU plugin and the oracle
(`oracles.suppression_multiclass`).

Every attribute value (iou_threshold, nms_eta 1 and below 1, the three sort orders with and
without sort_result_across_batch, both output types, score_threshold, nms_top_k, keep_top_k,
background_class, normalized boxes in [0, 1] and pixel boxes with the +1), f32, f16 and bf16,
both forms of -9 (shared boxes; per-class boxes with roisnum of i32 and i64, zero counts
included), size-0 dims, equal scores. Exact: scores pass through unchanged.

Where OpenVINO is not the judge (see MulticlassNms's doc): the cases where its rule (suppress
when the IoU reaches the threshold; with nms_eta < 1, the current threshold against every kept
box) selects other boxes than the spec's, which the oracle tells by running both rules
(`openvino=True` is OpenVINO's); nms_top_k 0; NaN scores; f64 (OpenVINO refuses it).
"""

import dataclasses

import harness
import ml_dtypes
import numpy as np
import pytest
from harness import Case, Input, named_inputs
from oracles import suppression_multiclass as oracle

from irscatter.ir.element_types import ElementType
from irscatter.ir.shapes import PartialShape
from irscatter.ops import registry
from irscatter.ops.base import TensorInfo
from irscatter.ops.functional import make_op

TYPES = [np.float32, np.float16, ml_dtypes.bfloat16]


def random_boxes(rng, shape, pixels=False, dtype=np.float32):
    """Valid boxes x1 < x2, y1 < y2 in [0, 1] (or whole pixels in [0, 24] when `pixels`)."""
    scale = 20.0 if pixels else 1.0
    corner = rng.uniform(0, 0.7, (*shape, 2)) * scale
    size = rng.uniform(0.05, 0.5, (*shape, 2)) * scale
    if pixels:
        corner, size = np.round(corner), np.round(size)
    return np.concatenate([corner, corner + size], -1).astype(dtype)


def _same(a, b):
    return all(x.shape == y.shape and np.array_equal(x, y, equal_nan=True) for x, y in zip(a, b))


def _case(cid, opset, inputs, attrs, **kw):
    def run(*arrays):
        return oracle.multiclass_nms(*arrays, **attrs)
    values = [i.value for i in inputs]
    if "openvino" not in kw:
        if attrs.get("nms_top_k") == 0:
            kw = dict(kw, openvino="none", why="with nms_top_k 0 the CPU plugin leaves its outputs undefined")
        elif not _same(run(*values), oracle.multiclass_nms(*values, **attrs, openvino=True)):
            kw = dict(kw, openvino="none", why="OpenVINO suppresses at IoU >= threshold (and with nms_eta < 1 "
                      "compares with the current threshold): it selects other boxes here, checked against the "
                      "oracle's OpenVINO rule below")
        elif any(0 in v.shape for v in values[:2]):
            kw = dict(kw, openvino="none", why="the CPU plugin gives valid_outputs the shape [0] for empty inputs")
    return Case(cid, "MulticlassNms", opset, inputs, attrs, oracle=run, **kw)


def _attrs(rng, n):
    return {"iou_threshold": (0.3, 0.5, 0.7, 0.0)[n % 4], "nms_eta": (1.0, 0.6, 1.0)[n // 2 % 3],
            "sort_result_type": ("score", "classid", "none")[n % 3], "sort_result_across_batch": bool(n // 3 % 2),
            "output_type": ("i32", "i64")[n // 5 % 2], "score_threshold": (0.0, 0.25)[n // 4 % 2],
            "nms_top_k": (-1, 4, 2)[n // 6 % 3], "keep_top_k": (-1, 5, 12)[n // 2 % 3],
            "background_class": (-1, 0, 2)[n // 7 % 3], "normalized": bool(n % 5)}


def _cases():
    rng = np.random.default_rng(9)
    out = []
    for n in range(36):
        dtype = TYPES[n % len(TYPES)]
        attrs = _attrs(rng, n)
        batches, classes, count = int(rng.integers(1, 4)), int(rng.integers(1, 4)), int(rng.integers(1, 9))
        boxes = random_boxes(rng, (batches, count), pixels=not attrs["normalized"], dtype=dtype)
        scores = rng.uniform(0, 1, (batches, classes, count)).astype(dtype)
        opset = ("opset8", "opset9")[n % 2]
        out.append(_case(f"mcnms-{n}-{opset}-{np.dtype(dtype).name}", opset,
                         [Input("boxes", boxes), Input("scores", scores)], attrs))
    # -9 with roisnum: boxes [classes, boxes, 4], scores [classes, boxes]
    for n in range(18):
        dtype = TYPES[n % len(TYPES)]
        attrs = _attrs(rng, n + 1)
        classes, images = int(rng.integers(1, 4)), int(rng.integers(1, 4))
        counts = rng.integers(0, 5, images)
        total = int(counts.sum()) + int(rng.integers(0, 2))
        boxes = random_boxes(rng, (classes, total), pixels=not attrs["normalized"], dtype=dtype)
        scores = rng.uniform(0, 1, (classes, total)).astype(dtype)
        rois = counts.astype((np.int32, np.int64)[n % 2])
        out.append(_case(f"mcnms-rois-{n}-{np.dtype(dtype).name}", "opset9",
                         [Input("boxes", boxes), Input("scores", scores), Input("roisnum", rois)], attrs))
    # bigger lists with adaptive thresholds
    for k, eta in enumerate((1.0, 0.9)):
        boxes = random_boxes(rng, (2, 48))
        scores = rng.uniform(0, 1, (2, 3, 48)).astype(np.float32)
        out.append(_case(f"mcnms-big-{k}", "opset9", [Input("boxes", boxes), Input("scores", scores)],
                         {"iou_threshold": 0.6, "nms_eta": eta, "sort_result_type": "score", "keep_top_k": 40}))
    # equal scores: ties go by box index, then class
    boxes = random_boxes(rng, (2, 6))
    tied = np.array([[[0.5, 0.9, 0.5, 0.5, 0.9, 0.5], [0.7, 0.7, 0.7, 0.7, 0.7, 0.7]]] * 2, np.float32)
    for order in ("score", "classid"):
        for across in (False, True):
            out.append(_case(f"mcnms-ties-{order}-{across}", "opset8", [Input("boxes", boxes), Input("scores", tied)],
                             {"sort_result_type": order, "sort_result_across_batch": across, "iou_threshold": 0.5}))
    # the default iou_threshold 0: OpenVINO keeps one box per class, the spec those not overlapping
    apart = np.array([[[0, 0, 1, 1], [2, 2, 3, 3], [0.5, 0.5, 1.5, 1.5]]], np.float32)
    out.append(_case("mcnms-default-threshold", "opset8",
                     [Input("boxes", apart), Input("scores", np.array([[[0.9, 0.8, 0.7]]], np.float32))], {}))
    # the spec page's example shapes (both forms)
    boxes = random_boxes(rng, (3, 100))
    out.append(_case("mcnms-spec-shapes", "opset9",
                     [Input("boxes", boxes), Input("scores", rng.uniform(0, 1, (3, 5, 100)).astype(np.float32))],
                     {"sort_result_type": "score", "iou_threshold": 0.2, "score_threshold": 0.5, "normalized": False,
                      "nms_eta": 0.0}))
    out.append(_case("mcnms-spec-rois", "opset9",
                     [Input("boxes", boxes), Input("scores", rng.uniform(0, 1, (3, 100)).astype(np.float32)),
                      Input("roisnum", np.full(10, 10, np.int64))],
                     {"sort_result_type": "score", "iou_threshold": 0.2, "score_threshold": 0.5, "normalized": False,
                      "nms_eta": 0.0}))
    # empty inputs, nothing selected, nms_top_k 0 and keep_top_k 0
    for shape in ((2, 3, 0), (2, 0, 4), (0, 2, 3)):
        out.append(_case(f"mcnms-empty-{'x'.join(map(str, shape))}", "opset8",
                         [Input("boxes", random_boxes(rng, (shape[0], shape[2]))),
                          Input("scores", np.zeros(shape, np.float32))], {"iou_threshold": 0.5}))
    small = [Input("boxes", random_boxes(rng, (2, 4))), Input("scores", rng.uniform(0, 0.5, (2, 2, 4)).astype(np.float32))]
    out.append(_case("mcnms-none-selected", "opset8", small, {"score_threshold": 0.6, "iou_threshold": 0.5}))
    out.append(_case("mcnms-topk-0", "opset8", small, {"nms_top_k": 0, "iou_threshold": 0.5}))
    out.append(_case("mcnms-keep-0", "opset8", small, {"keep_top_k": 0, "iou_threshold": 0.5}))
    # NaN and infinite values; f64
    boxes, scores = random_boxes(rng, (1, 6)), rng.uniform(0, 1, (1, 2, 6)).astype(np.float32)
    boxes[0, 1, 2] = np.nan
    boxes[0, 2, 0] = -np.inf
    scores[0, 0, 3] = np.nan
    scores[0, 1, 4] = np.inf
    out.append(_case("mcnms-nan", "opset8", [Input("boxes", boxes), Input("scores", scores)], {"iou_threshold": 0.4},
                     openvino="none", why="OpenVINO sorts NaN scores in an undefined place"))
    out.append(_case("mcnms-f64", "opset9", [Input("boxes", random_boxes(rng, (2, 6), dtype=np.float64)),
                                             Input("scores", rng.uniform(0, 1, (2, 2, 6)))],
                     {"sort_result_type": "classid", "iou_threshold": 0.4}, openvino="none",
                     why="OpenVINO refuses f64 boxes"))
    return out


CASES = _cases()

B = np.zeros((1, 2, 4), np.float32)
S = np.zeros((1, 3, 2), np.float32)
R = np.array([2], np.int32)


def _error(cid, opset, arrays, attrs, label):
    names = ("boxes", "scores", "roisnum")
    return Case(cid, "MulticlassNms", opset, named_inputs(names, arrays), attrs, error=label)


ERRORS = [
    _error("mcnms-err-boxes-rank", "opset8", [np.zeros((2, 4), np.float32), S], {}, "nms-boxes-shape"),
    _error("mcnms-err-scores-rank", "opset8", [B, np.zeros((3, 2), np.float32)], {}, "nms-scores-shape"),
    _error("mcnms-err-scores-boxes", "opset9", [B, np.zeros((1, 3, 5), np.float32)], {}, "nms-scores-shape"),
    _error("mcnms-err-rois-scores-rank", "opset9", [B, S, R], {}, "nms-scores-shape"),
    _error("mcnms-err-rois-classes", "opset9", [B, np.zeros((2, 2), np.float32), R], {}, "nms-scores-shape"),
    _error("mcnms-err-rois-type", "opset9", [B, np.zeros((1, 2), np.float32), R.astype(np.float32)], {},
           "index-type"),
    _error("mcnms-err-rois-rank", "opset9", [B, np.zeros((1, 2), np.float32), R.reshape(1, 1)], {}, "index-rank"),
    _error("mcnms-err-rois-value", "opset9", [B, np.zeros((1, 2), np.float32), np.array([2, 1], np.int32)], {},
           "roisnum-value"),
    _error("mcnms-err-rois-negative", "opset9", [B, np.zeros((1, 2), np.float32), np.array([-1], np.int64)], {},
           "roisnum-value"),
    _error("mcnms-err-int", "opset8", [B.astype(np.int32), S.astype(np.int32)], {}, "float-type"),
    _error("mcnms-err-mixed", "opset8", [B, S.astype(np.float16)], {}, "same-element-type"),
    _error("mcnms-err-eta", "opset8", [B, S], {"nms_eta": 1.5}, "nms-attribute-range"),
    _error("mcnms-err-top-k", "opset9", [B, S], {"nms_top_k": -2}, "nms-attribute-range"),
    _error("mcnms-err-background", "opset8", [B, S], {"background_class": -3}, "nms-attribute-range"),
    _error("mcnms-err-sort", "opset8", [B, S], {"sort_result_type": "class"}, "attributes"),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_multiclass_nms(case):
    harness.check(case, CASES)


# The other side: where OpenVINO's rule selects other boxes, the CPU plugin answers as the
# oracle does with `openvino=True`.
RULE = "OpenVINO suppresses at IoU"
OPENVINO_RULE = [dataclasses.replace(c, id=f"{c.id}-openvino-rule", openvino="cpu", why="")
                 for c in CASES if c.why.startswith(RULE)]


@pytest.mark.parametrize("case", OPENVINO_RULE, ids=str)
def test_multiclass_nms_openvino_rule(case):
    got = harness.run_openvino(case, OPENVINO_RULE)
    want = oracle.multiclass_nms(*(i.value for i in case.inputs), **case.attrs, openvino=True)
    for k, (g, w) in enumerate(zip(got, want)):
        harness.assert_close(g, w, what=f"output {k}")


# Output shapes without values, as OpenVINO's shape inference gives them (read off OpenVINO
# 2026.4 for the same inputs and attributes).
BOUNDS = [
    ("MatrixNms", "opset8", [[2, 10, 4], [2, 3, 10]], {"nms_top_k": 4, "keep_top_k": 7}, "[..14, 6]", "[2]"),
    ("MulticlassNms", "opset9", [[2, 10, 4], [2, 3, 10]], {"nms_top_k": 4, "keep_top_k": 7}, "[..14, 6]", "[2]"),
    ("MatrixNms", "opset8", [[2, -1, 4], [2, 3, -1]], {"nms_top_k": 4}, "[?, 6]", "[2]"),
    ("MulticlassNms", "opset8", [[2, -1, 4], [2, 3, -1]], {"nms_top_k": 4}, "[?, 6]", "[2]"),
    ("MatrixNms", "opset8", [[-1, 10, 4], [-1, 3, 10]], {"keep_top_k": 5}, "[?, 6]", "[?]"),
    ("MatrixNms", "opset8", [[2, 10, 4], [2, 3, 10]], {"background_class": 1}, "[..60, 6]", "[2]"),
    ("MulticlassNms", "opset9", [[2, 10, 4], [2, 3, 10]], {"background_class": 1}, "[..60, 6]", "[2]"),
    ("MulticlassNms", "opset9", [[3, 20, 4], [3, 20], [5]], {"nms_top_k": 4}, "[..60, 6]", "[5]"),
    ("MulticlassNms", "opset9", [[3, 20, 4], [3, 20], None], {"nms_top_k": 4}, "[?, 6]", "[?]"),
]


@pytest.mark.parametrize("bound", BOUNDS, ids=[f"{b[0]}-{n}" for n, b in enumerate(BOUNDS)])
def test_nms_output_bounds(bound):
    kind, opset, shapes, attrs, selected, valid = bound
    op = make_op(registry.find(kind, opset), attrs)
    infos = [TensorInfo(ElementType.f32 if k < 2 else ElementType.i32, PartialShape.of(s))
             for k, s in enumerate(shapes)]
    out = op.infer(*infos)
    assert (str(out[0].shape), str(out[2].shape)) == (selected, valid)
    assert str(out[1].shape) == selected.replace("6]", "1]")


@pytest.mark.parametrize("case", ERRORS, ids=str)
def test_multiclass_nms_refused(case):
    harness.check(case, ERRORS)
