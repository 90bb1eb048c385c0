"""ExperimentalDetectronGenerateProposalsSingleImage-6 against OpenVINO's CPU plugin and the
oracle. Boxes go through exp and cancel near 0: 2 ulps plus 1e-4 (an ulp or so of coordinates
of 100 pixels) against the oracle; OpenVINO's exp differs from numpy's by an ulp here and there. Scores are drawn distinct and clear of the NMS
threshold's decisions, so the kept set does not hang on an ulp; ties get cases of their own."""

from functools import partial

import ml_dtypes
import numpy as np
import pytest
from harness import Case, Input, check
from oracles import detectron

OP, OPSET = "ExperimentalDetectronGenerateProposalsSingleImage", "opset6"
F64 = {"openvino": "none", "why": "OpenVINO's CPU plugin runs f64 layers in f32, rounding the results"}


def _inputs(rng, count, height, width, image=(60, 80)):
    n = count * height * width
    ctr = rng.uniform(0, 1, (n, 2)) * np.array(image[::-1])
    size = rng.uniform(4, 40, (n, 2))
    anchors = np.concatenate([ctr - size / 2, ctr + size / 2], 1)
    deltas = rng.uniform(-0.4, 0.4, (4 * count, height, width))
    scores = (rng.permutation(n) + 1).reshape(count, height, width) / (n + 1)
    return np.array([image[0], image[1], 1.0]), anchors, deltas, scores


def _case(name, inputs, attrs, dtype=np.float32, **kw):
    names = ("im_info", "anchors", "deltas", "scores")
    return Case(name, OP, OPSET, [Input(k, np.asarray(v).astype(dtype)) for k, v in zip(names, inputs)], attrs,
                oracle=partial(detectron.generate_proposals, **attrs), ulps=2, atol=1e-4, **kw)


def _attrs(min_size=0.0, nms=0.7, pre=1000, post=20):
    return {"min_size": min_size, "nms_threshold": nms, "pre_nms_count": pre, "post_nms_count": post}


def _cases():
    rng = np.random.default_rng(9)
    out = []
    for count, height, width in ((1, 1, 1), (3, 2, 4), (2, 5, 3), (4, 4, 4)):
        for nms in (0.0, 0.3, 0.7, 1.0):
            for post in (1, 10, 30):
                inputs = _inputs(rng, count, height, width)
                out.append(_case(f"a{count}-{height}x{width}-nms{nms}-post{post}", inputs, _attrs(nms=nms, post=post)))
    inputs = _inputs(rng, 3, 4, 5)
    for pre in (0, 1, 7, 60):
        out.append(_case(f"pre{pre}", inputs, _attrs(pre=pre, post=40)))
    # min_size removes the small proposals; OpenVINO agrees while enough others fill post_nms_count
    for min_size, post in ((8.0, 12), (20.0, 6)):
        out.append(_case(f"min-size{min_size}", inputs, _attrs(min_size=min_size, post=post)))
        out.append(_case(f"min-size{min_size}-pre", inputs, _attrs(min_size=min_size, pre=post + 3, post=post)))
    # ... else OpenVINO outputs the removed ones too, with score 0, where the spec leaves zero rows
    removed = ("OpenVINO (CPU plugin and core reference) gives the proposals under min_size score 0 instead of "
               "removing them, and outputs them (score 0) when fewer than post_nms_count others remain")
    for min_size, pre in ((20.0, 1000), (20.0, 10), (100.0, 1000)):
        out.append(_case(f"min-size{min_size}-pre{pre}-short", inputs, _attrs(min_size=min_size, pre=pre, post=40),
                         openvino="none", why=removed))
    # anchors past the image (clipped), large deltas (clamped at log(1000/16))
    im, anchors, deltas, scores = _inputs(rng, 2, 3, 3)
    anchors = anchors * 1.6 - 20
    deltas = deltas.copy()
    deltas[2:4] *= 20
    deltas[6:8] *= -20
    out.append(_case("clip-and-clamp", (im, anchors, deltas, scores), _attrs(nms=0.5)))
    # equal scores: the (h, w, a) order decides, and decides which survive NMS
    im, anchors, deltas, scores = _inputs(rng, 2, 3, 3)
    ties = np.round(scores * 3) / 3 + 0.1
    out.append(_case("ties", (im, anchors, deltas, ties), _attrs(nms=0.6, post=18), openvino="none",
                     why="the spec leaves the order of equal scores undefined; OpenVINO's partial_sort (a heap) "
                         "mixes them, irscatter keeps the (h, w, a) order"))
    same = np.tile(anchors[:1], (len(anchors), 1))
    out.append(_case("ties-same-box", (im, same, np.zeros_like(deltas), np.full_like(scores, 0.5)), _attrs(nms=0.5)))
    for dtype in (np.float16, ml_dtypes.bfloat16, np.float64):
        out.append(_case(np.dtype(dtype).name, _inputs(rng, 2, 3, 4), _attrs(nms=0.5), dtype,
                         **F64 if dtype is np.float64 else {}))
    out.append(_case("post0", _inputs(rng, 2, 2, 2), _attrs(post=0), openvino="none",
                     why="OpenVINO's CPU plugin crashes (SIGSEGV) on post_nms_count 0"))
    # refused
    im, anchors, deltas, scores = _inputs(rng, 2, 3, 4)
    out.append(_case("im-info", (im[:2], anchors, deltas, scores), _attrs(), error="proposals-shape"))
    out.append(_case("anchors-width", (im, anchors[:, :3], deltas, scores), _attrs(), error="proposals-shape"))
    out.append(_case("anchors-count", (im, anchors[:-1], deltas, scores), _attrs(), error="proposals-shape"))
    out.append(_case("deltas-channels", (im, anchors, deltas[:-1], scores), _attrs(), error="proposals-shape"))
    out.append(_case("deltas-height", (im, anchors, deltas[:, :2], scores), _attrs(), error="proposals-shape"))
    out.append(_case("scores-rank", (im, anchors, deltas, scores[0]), _attrs(), error="proposals-shape"))
    out.append(_case("int-type", (im, anchors, deltas, scores), _attrs(), np.int32, error="float-type"))
    out.append(_case("negative-count", (im, anchors, deltas, scores), _attrs(post=-1), error="attributes"))
    mixed = _case("mixed-types", (im, anchors, deltas, scores), _attrs(), error="same-element-type")
    mixed.inputs[0].value = mixed.inputs[0].value.astype(np.float16)
    out.append(mixed)
    return out


CASES = _cases()


@pytest.mark.parametrize("case", CASES, ids=str)
def test_experimental_detectron_generate_proposals_single_image(case):
    check(case, CASES)
