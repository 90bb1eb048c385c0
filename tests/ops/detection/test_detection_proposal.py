"""Proposal-1 and -4 against OpenVINO's CPU plugin and the oracle.

Inputs are what a region proposal network gives: scores in [0, 1), deltas of a few tenths
(boxes move and grow by tens of percent), an image as large as the feature map times the
stride. Every attribute value is covered (both frameworks, the three clip and normalize flags,
the two delta scales, min_size filtering with one scale or two, pre_nms_topn below and above the
number of anchors, post_nms_topn below the survivors and above them, so the -1 marker and the
zero padding show), with f32, f16, bf16 and f64, and with equal scores: scores on a few levels,
all equal, and all zeroed by min_size, whose order is std::partial_sort's (a heap).

The CPU plugin leaves Proposal-4's scores after the last kept box unwritten and crashes when
pre_nms_topn is below 8, and OpenVINO's core reference does not evaluate Proposal at all: those
cases are judged by the oracle alone (each Proposal-4 case with padding has a Proposal-1 twin on
the same inputs that the plugin judges).

Tolerance: coordinates are sums and products of a few f32 operations, one exp among them, and
OpenVINO's compiler may fuse a multiply and an add: 4 ulps plus 1e-4 absolute (coordinates near
0 come out of a cancellation of values near 100). Scores are copied, so they agree exactly.
"""

import harness
import ml_dtypes
import numpy as np
import pytest
from harness import Case, Input
from oracles import detection_proposals as oracle

from irscatter.ir.element_types import ElementType
from irscatter.ir.shapes import Dimension, PartialShape
from irscatter.ops.base import TensorInfo
from irscatter.ops.detection.proposal import Proposal4, ProposalAttrs
from irscatter.ops.detection.proposal import proposal as kernel
from irscatter.ops.functional import make_op

BASE = dict(base_size=16, pre_nms_topn=200, post_nms_topn=40, nms_thresh=0.7, feat_stride=16, min_size=4,
            ratio="0.5,1,2", scale="1,2")
TYPES = [np.float32, np.float16, ml_dtypes.bfloat16, np.float64]


def _inputs(rng, attrs, n=1, h=5, w=6, dtype=np.float32, levels=None, image=None):
    k = len(attrs["ratio"].split(",")) * len(attrs["scale"].split(","))
    probs = rng.random((n, 2 * k, h, w))
    if levels is not None:
        probs = np.floor(probs * levels) / levels
    deltas = rng.normal(0.0, 0.25, (n, 4 * k, h, w))
    fs = attrs["feat_stride"]
    if image is None:
        image = [h * fs, w * fs, 1.0]
    return [Input("class_probs", probs.astype(dtype)), Input("bbox_deltas", deltas.astype(dtype)),
            Input("image_shape", np.asarray(image, dtype))]


def _case(cid, inputs, attrs, version=4, **kw):
    def run(p, d, i):
        return oracle.proposal(p, d, i, version=version, **attrs)
    if version == 4 and "why" not in kw and (kernel(*(i.value for i in inputs), ProposalAttrs(**attrs))[0][:, 0]
                                              == -1).any():
        kw = dict(kw, openvino="none", why="the CPU plugin leaves the scores after the last kept box unwritten "
                  "(and the core reference does not evaluate Proposal): the oracle judges; the same inputs "
                  "go through Proposal-1 against the plugin")
    return Case(f"proposal{version}-{cid}", "Proposal", f"opset{version}", inputs, attrs,
                oracle=run if version == 4 else None, ulps=4, atol=1e-4, **kw)


def _both(cid, inputs, attrs, **kw):
    """Proposal-1 and -4 on the same inputs; the oracle checks -4 (-1's output is -4's first)."""
    return [_case(cid, inputs, attrs, version=1, **kw), _case(cid, inputs, attrs, version=4, **kw)]


def _cases():
    rng = np.random.default_rng(7)
    out = []
    n = 0
    for framework in ("", "tensorflow"):
        for before in (True, False):
            for after in (True, False):
                for normalize in (False, True):
                    n += 1
                    attrs = dict(BASE, framework=framework, clip_before_nms=before, clip_after_nms=after,
                                 normalize=normalize)
                    cid = f"{framework or 'caffe'}-before{int(before)}-after{int(after)}-norm{int(normalize)}"
                    out.extend(_both(cid, _inputs(rng, attrs, n=1 + n % 2), attrs))
    for dtype in TYPES:
        name = np.dtype(dtype).name
        out.extend(_both(f"{name}", _inputs(rng, BASE, n=2, dtype=dtype), BASE))
    # anchors: one ratio and one scale, unrounded ratios, many scales
    for ratio, scale in (("1", "1"), ("2.67", "0.25,0.5"), ("0.7,1.3", "1,1.5,2.5")):
        attrs = dict(BASE, ratio=ratio, scale=scale)
        for framework in ("", "tensorflow"):
            attrs = dict(attrs, framework=framework)
            out.extend(_both(f"anchors-{ratio}-{scale}-{framework or 'caffe'}", _inputs(rng, attrs), attrs))
    # the delta scales
    for size_scale, coord_scale in ((2.0, 1.0), (1.0, 0.5), (0.25, 4.0)):
        attrs = dict(BASE, box_size_scale=size_scale, box_coordinate_scale=coord_scale)
        out.extend(_both(f"delta-scales-{size_scale}-{coord_scale}", _inputs(rng, attrs), attrs))
    # min_size with one scale or a height and a width scale
    for min_size, image in ((0, None), (20, [80, 96, 1.0]), (12, [80, 96, 1.5]), (12, [80, 96, 0.5, 2.0]),
                            (10, [80, 96, 2.0, 0.5])):
        attrs = dict(BASE, min_size=min_size)
        out.extend(_both(f"min-size-{min_size}-{len(image or [0] * 3)}-{image and image[2]}",
                         _inputs(rng, attrs, image=image), attrs))
    # pre_nms_topn and post_nms_topn around the number of anchors (180) and of survivors
    for pre, post in ((10, 5), (10, 20), (179, 300), (1000, 1), (1000, 1000), (60, 60)):
        attrs = dict(BASE, pre_nms_topn=pre, post_nms_topn=post)
        out.extend(_both(f"topn-{pre}-{post}", _inputs(rng, attrs, n=2), attrs))
    for thresh in (0.3, 0.5, 1.0):
        attrs = dict(BASE, nms_thresh=thresh)
        out.extend(_both(f"nms-thresh-{thresh}", _inputs(rng, attrs), attrs))
    # equal scores: a few levels, all equal, all zeroed by min_size; larger maps for longer heaps
    for levels in (2, 4, 16):
        for pre in (8, 50, 1000):
            attrs = dict(BASE, pre_nms_topn=pre, post_nms_topn=30)
            out.extend(_both(f"ties-{levels}-levels-pre{pre}", _inputs(rng, attrs, n=2, h=6, w=7, levels=levels),
                             attrs))
    for pre in (1, 7):
        attrs = dict(BASE, pre_nms_topn=pre, post_nms_topn=30)
        out.extend(_both(f"ties-4-levels-pre{pre}", _inputs(rng, attrs, n=2, levels=4), attrs, openvino="none",
                         why="the CPU plugin crashes (SIGSEGV) when pre_nms_topn is below 8"))
    attrs = dict(BASE, pre_nms_topn=25)
    equal = _inputs(rng, attrs)
    equal[0].value[:] = 0.5
    out.extend(_both("ties-all-equal", equal, attrs))
    attrs = dict(BASE, min_size=1000, pre_nms_topn=40)
    out.extend(_both("ties-all-filtered", _inputs(rng, attrs), attrs))
    # the spec's example (Proposal-4, nms_thresh 1.0, normalize 0) at a smaller size
    attrs = dict(base_size=16, feat_stride=8, min_size=16, nms_thresh=1.0, normalize=False, post_nms_topn=50,
                 pre_nms_topn=50, ratio="1", scale="1,2")
    out.extend(_both("spec-example", _inputs(rng, attrs, n=2, h=8, w=8), attrs))
    # empty feature maps and batches
    for n, h, w in ((1, 0, 4), (2, 3, 0), (0, 3, 4)):
        out.extend(_both(f"empty-{n}x{h}x{w}", _inputs(rng, BASE, n=n, h=h, w=w), BASE,
                         openvino="none", why="the CPU plugin refuses inputs with a zero dimension"))
    return out


CASES = _cases()


def _error(cid, inputs, error, **changes):
    return Case(f"proposal-err-{cid}", "Proposal", "opset4", inputs, dict(BASE, **changes), error=error)


_rng = np.random.default_rng(0)
_good = _inputs(_rng, BASE)
ERRORS = [
    _error("rank", [Input("class_probs", _good[0].value[0]), _good[1], _good[2]], "proposal-rank"),
    _error("deltas-channels", [_good[0], Input("bbox_deltas", _good[1].value[:, :12]), _good[2]], "proposal-shape"),
    _error("deltas-width", [_good[0], Input("bbox_deltas", _good[1].value[..., :3]), _good[2]], "proposal-shape"),
    _error("anchors", _good, "proposal-anchors", ratio="1"),
    _error("image-length", [_good[0], _good[1], Input("image_shape", np.ones(5, np.float32))],
           "proposal-image-shape"),
    _error("image-rank", [_good[0], _good[1], Input("image_shape", np.ones((1, 3), np.float32))],
           "proposal-image-shape"),
    _error("int-type", [_good[0], _good[1], Input("image_shape", np.ones(3, np.int32))], "float-type"),
    _error("mixed-types", [_good[0], Input("bbox_deltas", _good[1].value.astype(np.float16)), _good[2]],
           "same-element-type"),
    _error("framework", _good, "attributes", framework="caffe"),
    _error("post-zero", _good, "attributes", post_nms_topn=0),
    _error("thresh-zero", _good, "attributes", nms_thresh=0),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_proposal(case):
    harness.check(case, CASES)


@pytest.mark.parametrize("case", ERRORS, ids=str)
def test_proposal_errors(case):
    harness.check(case)


def test_proposal_infers_rows_from_a_dynamic_batch():
    """[N * post_nms_topn, 5] (and [N * post_nms_topn]) with N's bounds, or unbounded."""
    op = make_op(Proposal4, BASE)
    f32 = ElementType.f32
    batch = Dimension(min=1, max=3)
    boxes, scores = op.infer(TensorInfo(f32, PartialShape.of([batch, 12, 5, 6])),
                             TensorInfo(f32, PartialShape.dynamic_rank()), TensorInfo(f32, PartialShape.of([-1])))
    assert str(boxes.shape) == str(PartialShape.of([Dimension(min=40, max=120), 5]))
    assert str(scores.shape) == str(PartialShape.of([Dimension(min=40, max=120)]))
    boxes, _ = op.infer(*[TensorInfo(f32, PartialShape.dynamic_rank())] * 3)
    assert boxes.shape[0].max is None and boxes.shape[1].max == 5
