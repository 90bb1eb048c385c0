"""DetectionOutput-1 and -8 against OpenVINO's CPU plugin and the oracle.

Inputs are drawn the way an SSD head produces them: priors in [0, 1] clustered so that NMS has
work to do (times the image size, behind an image index, when not normalized), small offsets,
confidences in (0, 1) kept 0.02 away from confidence_threshold. Every attribute value is
covered: both code types, share_location, normalized, variance_encoded_in_target, the
background label (0, another, -1), top_k and keep_top_k cuts (and their -1), both clips, both
NMS styles, the two refinement inputs with objectness_score, one or N sets of priors; f32,
f16, bf16 and f64; empty batches; NaN and infinite confidences and offsets; confidences equal
to each other and to the threshold, and IoU equal to nms_threshold.

Tolerance: the rows are exact but for the decoded coordinates, which may differ by the CPU
plugin's `expf` (against the oracle they are exact: both take exp in f64 and round once);
2 ulps of the output type at the coordinate plus 2 ulps at 1 (a corner is a difference of
two numbers near 1).

Where the CPU plugin departs from the reference (see the op's docstring) the case is judged
by the oracle alone: f64 (the plugin computes in f32), decrease_label_id with a background
other than 0 (refused by the plugin), MXNet-style equal confidences of different classes at
the top_k cut (the plugin breaks them by class), priors whose image index is -1 when not
normalized (the plugin stops reading priors there), top_k below -1 (the plugin's
partial_sort_copy gets a negative length).
"""

import harness
import ml_dtypes
import numpy as np
import pytest
from harness import Case, Input, named_inputs
from oracles.detection_output import detection_output as oracle

from irscatter.ir.element_types import ElementType
from irscatter.ir.shapes import PartialShape
from irscatter.ops.base import TensorInfo
from irscatter.ops.detection import detection_output as kernel
from irscatter.ops.functional import make_op
from irscatter.ops.registry import find

CORNER = "caffe.PriorBoxParameter.CORNER"
CENTER = "caffe.PriorBoxParameter.CENTER_SIZE"
ATOL = {np.dtype(np.float32): 2 * 2.0**-23, np.dtype(np.float16): 2 * 2.0**-10,
        np.dtype(ml_dtypes.bfloat16): 2 * 2.0**-7, np.dtype(np.float64): 2 * 2.0**-52}


def _priors(rng, n_pri, batch, attrs, *, width=1, height=1, flat=None):
    """Proposals [batch, 1 or 2, P * S]: clustered boxes in [0, 1] (scaled when not normalized)."""
    size = 4 if attrs.get("normalized", False) else 5
    rows = 1 if attrs.get("variance_encoded_in_target", False) else 2
    out = np.zeros((batch, rows, n_pri * size), np.float64)
    for b in range(batch):
        if flat is not None:
            corners = flat
        else:
            hubs = rng.uniform(0.2, 0.8, (3, 2))
            centre = hubs[rng.integers(0, 3, n_pri)] + rng.normal(0, 0.04, (n_pri, 2))
            extent = rng.uniform(0.1, 0.4, (n_pri, 2))
            corners = np.concatenate([centre - extent / 2, centre + extent / 2], axis=1)
        corners = corners * np.array([width, height, width, height])
        table = np.zeros((n_pri, size))
        table[:, size - 4:] = corners
        out[b, 0] = table.reshape(-1)
        if rows == 2:
            out[b, 1, : n_pri * 4] = np.tile([0.1, 0.1, 0.2, 0.2], n_pri)
    return out


def _confidences(rng, n_img, n_pri, n_cls, threshold, *, levels=None):
    if levels is not None:
        conf = rng.choice(levels, (n_img, n_pri * n_cls))
    else:
        conf = rng.uniform(0.0, 1.0, (n_img, n_pri * n_cls))
        near = np.abs(conf - threshold) < 0.02
        conf[near] = np.clip(threshold + 0.05, 0, 1)
    return conf


def _case(cid, version, attrs, n_img=1, n_pri=12, n_cls=3, *, rng, dtype=np.float32, prior_batch=1, arm=False,
          levels=None, loc_scale=1.0, flat=None, edit=None, **kw):
    attrs = {"keep_top_k": [-1], "nms_threshold": 0.45, **attrs}
    if version == 1:
        attrs = {"num_classes": n_cls, **attrs}
    n_loc = 1 if attrs.get("share_location", True) else n_cls
    w, h = (attrs.get("input_width", 1), attrs.get("input_height", 1)) if not attrs.get("normalized") else (1, 1)
    threshold = attrs.get("confidence_threshold", 0.0)
    loc = rng.uniform(-loc_scale, loc_scale, (n_img, n_pri * n_loc * 4))
    conf = _confidences(rng, n_img, n_pri, n_cls, threshold, levels=levels)
    priors = _priors(rng, n_pri, prior_batch, attrs, width=w, height=h, flat=flat)
    arrays = [loc, conf, priors]
    if arm:
        arm_conf = rng.uniform(0, 1, (n_img, n_pri * 2))
        arm_loc = rng.uniform(-loc_scale, loc_scale, loc.shape)
        arrays += [arm_conf, arm_loc]
    if edit is not None:
        edit(arrays)
    arrays = [a.astype(dtype) for a in arrays]
    names = ("box_logits", "class_preds", "proposals", "aux_class_preds", "aux_box_preds")
    run = oracle(attrs, n_cls if version == 1 else None)
    return Case(cid, "DetectionOutput", f"opset{version}", named_inputs(names, arrays), attrs,
                oracle=lambda *xs: run(*xs), ulps=2, atol=ATOL[np.dtype(dtype)], **kw)


def _cases():
    rng = np.random.default_rng(18)
    out = []
    # the decoding attributes, over both versions
    for version in (1, 8):
        for code in (CORNER, CENTER):
            for share in (True, False):
                for normalized in (True, False):
                    for encoded in (False, True):
                        attrs = {"code_type": code, "share_location": share, "normalized": normalized,
                                 "variance_encoded_in_target": encoded, "confidence_threshold": 0.3,
                                 "keep_top_k": [int(rng.choice([-1, 10]))], "top_k": int(rng.choice([-1, 6]))}
                        if not normalized:
                            attrs.update(input_width=int(rng.integers(1, 300)), input_height=int(rng.integers(1, 300)))
                        scale = 0.3 if encoded else 1.0
                        cid = (f"do{version}-{code[24:].lower()}-share{int(share)}-norm{int(normalized)}"
                               f"-enc{int(encoded)}")
                        out.append(_case(cid, version, attrs, n_img=2, n_pri=10, prior_batch=int(rng.choice([1, 2])),
                                         rng=rng, loc_scale=scale))
    # background label, clips, cuts
    for bg in (0, 2, -1):
        for clip in ((False, False), (True, False), (False, True), (True, True)):
            attrs = {"code_type": CENTER, "background_label_id": bg, "clip_before_nms": clip[0],
                     "clip_after_nms": clip[1], "confidence_threshold": 0.2, "normalized": True,
                     "share_location": bool(bg != 2)}
            out.append(_case(f"do8-bg{bg}-clip{int(clip[0])}{int(clip[1])}", 8, attrs, n_img=2, n_pri=15, n_cls=4,
                             rng=rng, loc_scale=2.0))
    for keep, top in ((3, -1), (5, 4), (-1, 2), (-1, -1), (0, -1), (0, 3), (-2, 3), (40, 0), (1, 1)):
        attrs = {"code_type": CORNER, "keep_top_k": [keep], "top_k": top, "confidence_threshold": 0.1,
                 "normalized": True, "nms_threshold": 0.6}
        kw = {}
        if keep < -1 or (keep == 0 and top > 0):
            kw = dict(openvino="none", why="the CPU plugin zeroes N * top_k * C rows of the output only, not the "
                                           "N * P * C rows it has when keep_top_k is 0 or below -1")
        out.append(_case(f"do8-keep{keep}-top{top}", 8, attrs, n_img=2, n_pri=14, n_cls=3, rng=rng, **kw))
    out.append(_case("do1-keep-list", 1, {"keep_top_k": [4, 7], "normalized": True, "confidence_threshold": 0.4},
                     n_img=3, rng=rng))
    for thr in (0.0, 0.3, 0.7, 1.0):
        out.append(_case(f"do8-nms{thr}", 8, {"nms_threshold": thr, "normalized": True, "code_type": CENTER},
                         n_pri=16, rng=rng))
    out.append(_case("do8-image-size", 8, {"normalized": False, "input_width": 640, "input_height": 480,
                                            "code_type": CENTER}, n_img=2, prior_batch=2, rng=rng))
    # MXNet-style NMS (decrease_label_id)
    for share in (True, False):
        for top in (-1, 5):
            attrs = {"decrease_label_id": True, "share_location": share, "top_k": top, "keep_top_k": [8],
                     "confidence_threshold": 0.25, "normalized": True, "code_type": CENTER}
            out.append(_case(f"do8-mxnet-share{int(share)}-top{top}", 8, attrs, n_img=2, n_pri=15, n_cls=4, rng=rng))
    for bg in (-1, 2):
        attrs = {"decrease_label_id": True, "background_label_id": bg, "confidence_threshold": 0.25,
                 "normalized": True}
        out.append(_case(f"do8-mxnet-bg{bg}", 8, attrs, n_img=2, n_pri=12, n_cls=4, rng=rng, openvino="none",
                         why="the CPU plugin refuses decrease_label_id with a background_label_id other than 0"))
    out.append(_case("do1-mxnet", 1, {"decrease_label_id": True, "normalized": True, "keep_top_k": [5]},
                     n_pri=10, n_cls=5, rng=rng))
    # the two refinement inputs
    for share in (True, False):
        for prior_batch in (1, 2):
            for normalized in (True, False):
                attrs = {"objectness_score": 0.4, "share_location": share, "normalized": normalized,
                         "code_type": CENTER, "confidence_threshold": 0.3, "keep_top_k": [12]}
                out.append(_case(f"do8-arm-share{int(share)}-priors{prior_batch}-norm{int(normalized)}", 8, attrs,
                                 n_img=2, n_pri=10, arm=True, prior_batch=prior_batch, rng=rng, loc_scale=0.5))
    out.append(_case("do8-arm-mxnet", 8, {"objectness_score": 0.5, "decrease_label_id": True, "normalized": True,
                                          "clip_before_nms": True}, n_img=2, arm=True, rng=rng))
    out.append(_case("do1-arm-bg-1", 1, {"objectness_score": 0.5, "background_label_id": -1, "normalized": True,
                                         "variance_encoded_in_target": True}, arm=True, rng=rng, loc_scale=0.2))
    # element types
    for dtype in (np.float16, ml_dtypes.bfloat16):
        for version in (1, 8):
            attrs = {"code_type": CENTER, "normalized": True, "confidence_threshold": 0.3, "keep_top_k": [10],
                     "clip_after_nms": True}
            out.append(_case(f"do{version}-{np.dtype(dtype).name}", version, attrs, n_img=2, dtype=dtype, rng=rng,
                             loc_scale=0.5))
    for version in (1, 8):
        out.append(_case(f"do{version}-f64", version, {"code_type": CENTER, "normalized": False, "keep_top_k": [9],
                                                        "input_width": 300, "input_height": 200},
                         n_img=2, dtype=np.float64, rng=rng, openvino="none",
                         why="the CPU plugin computes in f32; the reference computes f64 in f64"))
    # empty batch, no priors (version 1 allows it)
    out.append(_case("do8-empty-batch", 8, {"normalized": True, "keep_top_k": [5]}, n_img=0, rng=rng))
    out.append(_case("do1-no-priors", 1, {"normalized": True, "keep_top_k": [5]}, n_pri=0, rng=rng,
                     openvino="none", why="the CPU plugin divides by the number of priors"))

    # edge values: NaN and infinite confidences and offsets
    def specials(arrays):
        arrays[1][0, :4] = [np.nan, np.inf, -np.inf, -0.0]
        arrays[0][0, :6] = [np.nan, 0.5, np.inf, -np.inf, 1e-40, -0.0]

    for clip in (False, True):
        out.append(_case(f"do8-specials-clip{int(clip)}", 8, {"normalized": True, "code_type": CENTER,
                                                              "clip_before_nms": clip, "clip_after_nms": clip},
                         n_pri=8, rng=rng, edit=specials))

    # ties: equal confidences within a class, across classes, and at the threshold
    levels = np.array([0.25, 0.5, 0.75])
    out.append(_case("do8-ties-caffe", 8, {"normalized": True, "confidence_threshold": 0.5, "top_k": 4,
                                           "keep_top_k": [6], "nms_threshold": 0.7},
                     n_img=2, n_pri=16, n_cls=4, levels=levels, rng=rng))
    out.append(_case("do8-ties-caffe-all", 8, {"normalized": True, "confidence_threshold": 0.5, "nms_threshold": 0.7},
                     n_img=2, n_pri=16, n_cls=4, levels=levels, rng=rng))
    out.append(_case("do8-ties-mxnet", 8, {"normalized": True, "decrease_label_id": True, "confidence_threshold": 0.5,
                                           "nms_threshold": 0.7, "keep_top_k": [7]},
                     n_img=2, n_pri=16, n_cls=4, levels=levels, rng=rng))
    out.append(_case("do8-ties-mxnet-topk", 8, {"normalized": True, "decrease_label_id": True, "top_k": 5,
                                                "confidence_threshold": 0.5, "nms_threshold": 0.7},
                     n_img=2, n_pri=16, n_cls=4, levels=levels, rng=rng, openvino="none",
                     why="the CPU plugin orders equal confidences of different classes by class, the reference by "
                         "prior"))

    def same_everywhere(arrays):
        arrays[1][:] = 0.6  # every (prior, class) ties: the keep_top_k cut keeps the lowest labels

    out.append(_case("do8-ties-keep-labels", 8, {"normalized": True, "keep_top_k": [5], "nms_threshold": 1.0},
                     n_pri=4, n_cls=4, rng=rng, edit=same_everywhere, openvino="none",
                     why="equal (confidence, prior) pairs of different labels at the keep_top_k cut have no defined "
                         "order in OpenVINO (an unstable sort, threads gathering the candidates)"))
    # IoU exactly at the threshold: [0,0,1,1] and [0,0,1,0.5] overlap by 0.5 exactly
    flat = np.array([[0, 0, 1, 1], [0, 0, 1, 0.5], [0, 0.5, 1, 1], [0, 0, 1, 0.75]], np.float64)

    def zero_offsets(arrays):
        arrays[0][:] = 0
        arrays[1][0] = [0.1, 0.9, 0.1, 0.8, 0.1, 0.7, 0.1, 0.6]  # class 1, best first

    for thr in (0.5, 0.75):
        out.append(_case(f"do8-iou-at-threshold{thr}", 8, {"normalized": True, "variance_encoded_in_target": True,
                                                           "nms_threshold": thr},
                         n_pri=4, n_cls=2, flat=flat, rng=rng, edit=zero_offsets))
    # not normalized, an image index of -1 among the priors

    def stop_marker(arrays):
        arrays[2][0, 0, 5 * 3] = -1

    out.append(_case("do8-prior-marker", 8, {"normalized": False, "confidence_threshold": 0.2}, n_pri=8, rng=rng,
                     edit=stop_marker, openvino="none",
                     why="the CPU plugin reads no prior after one whose image index is -1; the reference reads all"))
    out.append(_case("do8-top-k-below-minus-one", 8, {"normalized": True, "top_k": -3, "keep_top_k": [-1]},
                     rng=rng, openvino="none", why="the CPU plugin cannot take a top_k below -1"))
    return out


CASES = _cases()


def _err(cid, label, version=8, attrs=None, shapes=((1, 16), (1, 12), (1, 2, 16)), types=None, **kw):
    attrs = {"keep_top_k": [5], "nms_threshold": 0.5, "normalized": True, **(attrs or {})}
    if version == 1:
        attrs = {"num_classes": 3, **attrs}
    types = types or [np.float32] * len(shapes)
    names = ("box_logits", "class_preds", "proposals", "aux_class_preds", "aux_box_preds")
    inputs = [Input(n, np.zeros(s, t)) for n, s, t in zip(names, shapes, types)]
    return Case(cid, "DetectionOutput", f"opset{version}", inputs, attrs, error=label, **kw)


ERRORS = [
    _err("do-err-four-inputs", "input-count", shapes=((1, 16), (1, 12), (1, 2, 16), (1, 8))),
    _err("do-err-int-logits", "float-type", types=[np.int32, np.int32, np.float32]),
    _err("do-err-int-proposals", "float-type", types=[np.float32, np.float32, np.int32]),
    _err("do-err-class-type", "same-element-type", types=[np.float32, np.float16, np.float32]),
    _err("do-err-aux-type", "same-element-type", shapes=((1, 16), (1, 12), (1, 2, 16), (1, 8), (1, 16)),
         types=[np.float32] * 4 + [np.float16]),
    _err("do-err-rank", "detection-output-rank", shapes=((1, 16, 1), (1, 12), (1, 2, 16))),
    _err("do-err-proposals-rank", "detection-output-rank", shapes=((1, 16), (1, 12), (2, 16))),
    _err("do-err-prior-size", "detection-output-priors", shapes=((1, 16), (1, 12), (1, 2, 18))),
    _err("do-err-no-priors", "detection-output-priors", shapes=((1, 0), (1, 0), (1, 2, 0))),
    _err("do-err-variances", "detection-output-variances", shapes=((1, 16), (1, 12), (1, 1, 16))),
    _err("do-err-encoded", "detection-output-variances", attrs={"variance_encoded_in_target": True}),
    _err("do-err-batch", "detection-output-batch", shapes=((2, 16), (1, 12), (1, 2, 16))),
    _err("do-err-proposals-batch", "detection-output-batch", shapes=((2, 16), (2, 12), (3, 2, 16))),
    _err("do-err-logits-width", "detection-output-shape", shapes=((1, 20), (1, 12), (1, 2, 16))),
    _err("do-err-class-width", "detection-output-shape", version=1, shapes=((1, 16), (1, 16), (1, 2, 16))),
    _err("do-err-class-width-8", "detection-output-shape", shapes=((1, 16), (1, 13), (1, 2, 16))),
    _err("do-err-aux-class", "detection-output-shape", shapes=((1, 16), (1, 12), (1, 2, 16), (1, 6), (1, 16))),
    _err("do-err-aux-box", "detection-output-shape", shapes=((1, 16), (1, 12), (1, 2, 16), (1, 8), (1, 12))),
    _err("do-err-num-classes", "detection-output-classes", version=1, attrs={"num_classes": 0}),
    _err("do-err-no-classes", "detection-output-classes", shapes=((1, 16), (1, 0), (1, 2, 16))),
    _err("do-err-keep-top-k", "detection-output-keep-top-k", attrs={"keep_top_k": []}),
    _err("do-err-image-size", "detection-output-image-size", attrs={"normalized": False, "input_width": 0},
         shapes=((1, 16), (1, 12), (1, 2, 20))),
    _err("do-err-objectness", "detection-output-objectness", attrs={"objectness_score": -0.5}),
    _err("do-err-code-type", "attributes", attrs={"code_type": "caffe.PriorBoxParameter.CENTER"}),
    _err("do-err-no-nms-threshold", "attributes", attrs={"nms_threshold": None}),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_detection_output(case):
    harness.check(case, CASES)


@pytest.mark.parametrize("case", ERRORS, ids=str)
def test_detection_output_refused(case):
    harness.check(case, ERRORS)


@pytest.mark.parametrize("version", (1, 8))
def test_detection_output_dynamic_shapes(version):
    """Unknown dims give an unknown row count; known ones give the spec's count."""
    op = make_op(find("DetectionOutput", f"opset{version}"),
                 {"keep_top_k": "-1", "top_k": "5", "nms_threshold": "0.5", "normalized": "true",
                  **({"num_classes": "3"} if version == 1 else {})})
    f32 = ElementType.f32
    dyn = op.infer(TensorInfo(f32, PartialShape.of([-1, 16])), TensorInfo(f32, PartialShape.of([-1, 12])),
                   TensorInfo(f32, PartialShape.of([1, 2, 16])))
    assert dyn.shape.to_text() == "1,1,?,7"
    known = op.infer(TensorInfo(f32, PartialShape.of([2, 16])), TensorInfo(f32, PartialShape.of([-1, -1])),
                     TensorInfo(f32, PartialShape.of([1, 2, 16])))
    assert known.shape.to_text() == ("1,1,30,7" if version == 1 else "1,1,?,7")
    rank = op.infer(TensorInfo(f32, PartialShape.dynamic_rank()), TensorInfo(f32, PartialShape.of([2, 12])),
                    TensorInfo(f32, PartialShape.dynamic_rank()))
    assert rank.shape.to_text() == ("1,1,30,7" if version == 1 else "1,1,?,7")


def test_detection_output_long_candidate_lists(monkeypatch):
    """Long candidate lists are suppressed one list at a time, short ones side by side: both
    answer alike (here every list takes the one-at-a-time path)."""
    monkeypatch.setattr(kernel, "_SIDE_BY_SIDE_LENGTH", 0)
    for case in CASES:
        harness.check(case, CASES)
