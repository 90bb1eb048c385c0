"""ExperimentalDetectronDetectionOutput-6 against OpenVINO's CPU plugin and the oracle. Boxes go
through exp and cancel near 0: 2 ulps plus 1e-4 against the oracle (OpenVINO's exp differs from
numpy's by an ulp here and there). Scores are distinct within a class and clear of the
thresholds, so the detections kept do not hang on an ulp; ties get cases of their own.

OpenVINO clips the boxes at 0 only, the spec to the image: cases whose boxes stay inside the image
compare with OpenVINO, the others with the oracle only."""

from functools import partial

import ml_dtypes
import numpy as np
import pytest
from harness import Case, Input, check
from oracles import detectron

OP, OPSET = "ExperimentalDetectronDetectionOutput", "opset6"
F64 = {"openvino": "none", "why": "OpenVINO's CPU plugin runs f64 layers in f32, rounding the results"}
CLIP = {"openvino": "none", "why": "OpenVINO clips the boxes at 0 only, never at the image's width and height "
                                   "as the spec does, and some boxes here reach past them"}
IMAGE = (400.0, 500.0)


def _inputs(rng, n, classes, spread=0.3):
    """ROIs well inside the image and deltas small enough to keep the refined boxes inside."""
    ctr = rng.uniform(100, 300, (n, 2))
    size = rng.uniform(10, 120, (n, 2))
    rois = np.concatenate([ctr - size / 2, ctr + size / 2], 1)
    deltas = rng.uniform(-spread, spread, (n, 4 * classes))
    scores = rng.permutation(n * classes).reshape(n, classes) / (n * classes) + rng.uniform(0.001, 0.002)
    return rois, deltas, scores, np.array([[IMAGE[0], IMAGE[1], 1.0]])


def _attrs(classes, score=0.2, nms=0.5, post=100, most=100, max_log=4.135166645050049, weights=(10.0, 10.0, 5.0, 5.0),
           agnostic=False):
    return {"score_threshold": score, "nms_threshold": nms, "num_classes": classes, "post_nms_count": post,
            "max_detections_per_image": most, "class_agnostic_box_regression": agnostic, "max_delta_log_wh": max_log,
            "deltas_weights": weights}


def _case(name, inputs, attrs, dtype=np.float32, **kw):
    names = ("rois", "deltas", "scores", "im_info")
    return Case(name, OP, OPSET, [Input(k, np.asarray(v).astype(dtype)) for k, v in zip(names, inputs)], attrs,
                oracle=partial(detectron.detection_output, **attrs), ulps=2, atol=1e-4, **kw)


def _cases():
    rng = np.random.default_rng(10)
    out = []
    for n, classes in ((1, 2), (8, 3), (20, 5), (40, 4)):
        for score, nms in ((0.05, 0.5), (0.5, 0.3), (0.2, 0.0), (0.3, 1.0)):
            for post, most in ((100, 100), (3, 100), (100, 7), (2, 5)):
                out.append(_case(f"n{n}-c{classes}-s{score}-nms{nms}-post{post}-max{most}", _inputs(rng, n, classes),
                                 _attrs(classes, score, nms, post, most)))
    inputs = _inputs(rng, 12, 3)
    for weights in ((1.0, 1.0, 1.0, 1.0), (10.0, 5.0, 2.0, 4.0)):
        out.append(_case(f"weights{weights}", inputs, _attrs(3, weights=weights)))
    out.append(_case("agnostic", inputs, _attrs(3, agnostic=True)))
    # d_log_w, d_log_h clamped at max_delta_log_wh (boxes then grow past the image: clipped by the spec)
    rois, deltas, scores, im = _inputs(rng, 10, 3)
    big = deltas.copy()
    big[:, 2::4] = 3.0
    big[:, 3::4] = -3.0
    out.append(_case("clamp-inside", (rois, big, scores, im), _attrs(3, max_log=0.25, weights=(10, 10, 5, 5))))
    out.append(_case("clamp-and-clip", (rois, big, scores, im), _attrs(3, max_log=1.5, weights=(1, 1, 1, 1)), **CLIP))
    out.append(_case("clip-low", (rois - 150, deltas, scores, im), _attrs(3)))  # OpenVINO clips at 0 too
    out.append(_case("clip-high", (rois + 250, deltas, scores, im), _attrs(3), **CLIP))
    # degenerate ROIs (x1 <= x0 or y1 <= y0, NaN) give nothing
    odd = rois.copy()
    odd[0, 2] = odd[0, 0]
    odd[1, 3] = odd[1, 1] - 5
    odd[2, 0] = np.nan
    out.append(_case("degenerate", (odd, deltas, scores, im), _attrs(3)))
    # scores equal to the threshold are not above it
    at = scores.copy()
    at[::2, 1] = 0.25
    out.append(_case("at-threshold", (rois, deltas, at, im), _attrs(3, score=0.25)))
    # equal scores within a class: lower ROI index first, so it suppresses the others
    same = np.tile(rois[:1], (10, 1))
    flat = np.full_like(scores, 0.5)
    out.append(_case("ties-same-box", (same, np.zeros_like(deltas), flat, im), _attrs(3, nms=0.5)))
    out.append(_case("ties-keep-order", (rois, deltas, np.round(scores * 3) / 3 + 0.1, im), _attrs(3, nms=0.4)))
    # equal scores in two classes, cut by max_detections_per_image: score, then ROI, then class
    tied = np.round(scores * 2) / 2 + 0.2
    out.append(_case("ties-across-classes", (rois, deltas, tied, im), _attrs(3, most=6), openvino="none",
                     why="equal (score, ROI) pairs of two classes, cut by max_detections_per_image: OpenVINO's "
                         "partial_sort leaves their order open, irscatter puts the lower class first"))
    for dtype in (np.float16, ml_dtypes.bfloat16, np.float64):
        out.append(_case(np.dtype(dtype).name, _inputs(rng, 10, 3), _attrs(3, most=12), dtype,
                         **F64 if dtype is np.float64 else {}))
    out.append(_case("no-rois", _inputs(rng, 0, 3), _attrs(3), openvino="none",
                     why="OpenVINO's CPU plugin fails on zero ROIs"))
    out.append(_case("background-only", _inputs(rng, 5, 1), _attrs(1)))
    # refused
    rois, deltas, scores, im = _inputs(rng, 6, 3)
    out.append(_case("weights-count", (rois, deltas, scores, im), _attrs(3, weights=(1.0, 1.0, 1.0)),
                     error="deltas-weights"))
    out.append(_case("rois-width", (rois[:, :3], deltas, scores, im), _attrs(3), error="detection-output-shape"))
    out.append(_case("deltas-width", (rois, deltas[:, :8], scores, im), _attrs(3), error="detection-output-shape"))
    out.append(_case("scores-width", (rois, deltas, scores, im), _attrs(4), error="detection-output-shape"))
    out.append(_case("rows", (rois[:5], deltas, scores, im), _attrs(3), error="detection-output-shape"))
    out.append(_case("im-info", (rois, deltas, scores, im[0]), _attrs(3), error="detection-output-shape"))
    out.append(_case("im-info-rows", (rois, deltas, scores, np.tile(im, (2, 1))), _attrs(3),
                     error="detection-output-shape"))
    out.append(_case("int-type", (rois, deltas, scores, im), _attrs(3), np.int32, error="float-type"))
    out.append(_case("negative-count", (rois, deltas, scores, im), _attrs(3, most=-1), error="attributes"))
    mixed = _case("mixed-types", (rois, deltas, scores, im), _attrs(3), error="same-element-type")
    mixed.inputs[2].value = mixed.inputs[2].value.astype(np.float16)
    out.append(mixed)
    return out


CASES = _cases()


@pytest.mark.parametrize("case", CASES, ids=str)
def test_experimental_detectron_detection_output(case):
    check(case, CASES)
