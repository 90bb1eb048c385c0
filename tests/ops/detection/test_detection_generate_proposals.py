"""GenerateProposals-9 against OpenVINO's CPU plugin and the oracle.

Anchors are a regular grid of boxes of three sizes per feature position (as a region proposal
network's), deltas a few tenths (and some beyond log(1000/16), which the op clamps), scores in
[0, 1), images as large as the feature map times 16, each image of the batch with its own size
and scales. Every attribute value is covered: normalized (offset 0) or not, min_size with one
scale or two, pre_nms_count and post_nms_count below and above the number of anchors, three
thresholds, both roi_num types, f32, f16, bf16 and f64, and equal scores (a few levels, all
equal), whose order is std::partial_sort's (a heap).

nms_eta < 1 and counts of 0 are refused by OpenVINO but defined by the spec: the oracle alone
judges those cases.

Tolerance: as Proposal's, 4 ulps plus 1e-4 absolute on the coordinates; scores are copied.
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
from irscatter.ops.detection.generate_proposals import GenerateProposals
from irscatter.ops.functional import make_op

BASE = dict(min_size=4.0, nms_threshold=0.7, pre_nms_count=200, post_nms_count=40, normalized=False)
TYPES = [np.float32, np.float16, ml_dtypes.bfloat16, np.float64]


def _grid(h, w, sizes, stride=16):
    ys, xs = np.meshgrid(np.arange(h) * stride, np.arange(w) * stride, indexing="ij")
    anchors = np.zeros((h, w, len(sizes), 4))
    for a, (bw, bh) in enumerate(sizes):
        anchors[:, :, a] = np.stack([xs - bw / 2 + 8, ys - bh / 2 + 8, xs + bw / 2 + 8, ys + bh / 2 + 8], axis=-1)
    return anchors


def _inputs(rng, n=2, h=5, w=6, sizes=((16, 16), (32, 16), (16, 32)), dtype=np.float32, levels=None, info=None,
            wild=False):
    a = len(sizes)
    scores = rng.random((n, a, h, w))
    if levels is not None:
        scores = np.floor(scores * levels) / levels
    deltas = rng.normal(0.0, 0.25, (n, 4 * a, h, w))
    if wild and deltas.size:
        deltas.reshape(-1)[rng.integers(0, deltas.size, 6)] = [5.0, 9.0, -6.0, 4.5, 12.0, -3.0]
    if info is None:
        info = [[h * 16 - 8 * i, w * 16 - 4 * i, 1.0] for i in range(n)]
    return [Input("im_info", np.asarray(info, dtype)), Input("anchors", _grid(h, w, sizes).astype(dtype)),
            Input("deltas", deltas.astype(dtype)), Input("scores", scores.astype(dtype))]


def _case(cid, inputs, attrs, **kw):
    def run(*arrays):
        return oracle.generate_proposals(*arrays, **attrs)
    return Case(f"genprop-{cid}", "GenerateProposals", "opset9", inputs, attrs, oracle=run, ulps=4, atol=1e-4, **kw)


def _cases():
    rng = np.random.default_rng(11)
    out = []
    for normalized in (False, True):
        for roi_num_type in ("i32", "i64"):
            attrs = dict(BASE, normalized=normalized, roi_num_type=roi_num_type)
            out.append(_case(f"normalized{int(normalized)}-{roi_num_type}", _inputs(rng), attrs))
    for dtype in TYPES:
        out.append(_case(np.dtype(dtype).name, _inputs(rng, dtype=dtype), BASE))
    out.append(_case("wild-deltas", _inputs(rng, wild=True), BASE))
    out.append(_case("wild-deltas-normalized", _inputs(rng, wild=True), dict(BASE, normalized=True)))
    for min_size, info in ((0.0, None), (20.0, None), (12.0, [[80, 96, 1.5], [64, 90, 0.5]]),
                           (12.0, [[80, 96, 0.5, 2.0], [70, 96, 2.0, 0.5]])):
        attrs = dict(BASE, min_size=min_size)
        out.append(_case(f"min-size-{min_size}-{len(info[0]) if info else 3}-{info and info[0][2]}",
                         _inputs(rng, info=info), attrs))
    for pre, post in ((10, 5), (10, 20), (89, 300), (1000, 1), (1000, 1000), (60, 60)):
        attrs = dict(BASE, pre_nms_count=pre, post_nms_count=post)
        out.append(_case(f"counts-{pre}-{post}", _inputs(rng), attrs))
    for thresh in (0.3, 0.5, 1.0):
        out.append(_case(f"threshold-{thresh}", _inputs(rng), dict(BASE, nms_threshold=thresh)))
    out.append(_case("batch-1-one-anchor", _inputs(rng, n=1, sizes=((24, 24),)), BASE))
    out.append(_case("batch-3", _inputs(rng, n=3, h=4, w=4), BASE))
    for levels in (2, 4, 16):
        for pre in (8, 50, 1000):
            attrs = dict(BASE, pre_nms_count=pre, post_nms_count=30)
            out.append(_case(f"ties-{levels}-levels-pre{pre}", _inputs(rng, h=6, w=7, levels=levels), attrs))
    equal = _inputs(rng)
    equal[3].value[:] = 0.5
    out.append(_case("ties-all-equal", equal, dict(BASE, pre_nms_count=25)))
    out.append(_case("ties-f16-scores", _inputs(rng, h=8, w=8, dtype=np.float16), BASE))
    # the spec's example's attributes at a smaller size
    attrs = dict(min_size=0.0, nms_threshold=0.699999988079071, post_nms_count=100, pre_nms_count=100,
                 roi_num_type="i32")
    out.append(_case("spec-example", _inputs(rng, n=3, h=5, w=8), attrs))
    spec_only = dict(openvino="none")
    for eta in (0.5, 0.9, 0.0):
        attrs = dict(BASE, nms_eta=eta, nms_threshold=0.9)
        out.append(_case(f"eta-{eta}", _inputs(rng), attrs, **spec_only,
                         why="OpenVINO refuses any nms_eta but 1.0; the spec defines adaptive NMS"))
    for pre, post in ((0, 10), (10, 0)):
        out.append(_case(f"counts-zero-{pre}-{post}", _inputs(rng), dict(BASE, pre_nms_count=pre, post_nms_count=post),
                         **spec_only, why="OpenVINO refuses counts of 0, which the spec allows"))
    for n, h, w in ((1, 0, 4), (0, 3, 4)):
        out.append(_case(f"empty-{n}x{h}x{w}", _inputs(rng, n=n, h=h, w=w, info=np.zeros((n, 3))), BASE, **spec_only,
                         why="the CPU plugin fails on inputs with a zero dimension"))
    return out


CASES = _cases()

_rng = np.random.default_rng(0)
_good = _inputs(_rng)


def _with(position, value):
    inputs = list(_good)
    inputs[position] = Input(inputs[position].name, value)
    return inputs


def _error(cid, inputs, error, **changes):
    return Case(f"genprop-err-{cid}", "GenerateProposals", "opset9", inputs, dict(BASE, **changes), error=error)


ERRORS = [
    _error("im-info-rank", _with(0, _good[0].value[0]), "generate-proposals-rank"),
    _error("anchors-rank", _with(1, _good[1].value[0]), "generate-proposals-rank"),
    _error("im-info-width", _with(0, np.ones((2, 5), np.float32)), "generate-proposals-im-info"),
    _error("batch", _with(0, np.ones((3, 3), np.float32)), "generate-proposals-shape"),
    _error("anchors-last", _with(1, np.ones((5, 6, 3, 5), np.float32)), "generate-proposals-shape"),
    _error("anchors-count", _with(1, np.ones((5, 6, 2, 4), np.float32)), "generate-proposals-shape"),
    _error("deltas-channels", _with(2, _good[2].value[:, :8]), "generate-proposals-shape"),
    _error("deltas-height", _with(2, _good[2].value[:, :, :4]), "generate-proposals-shape"),
    _error("int-type", _with(0, np.ones((2, 3), np.int32)), "float-type"),
    _error("mixed-types", _with(3, _good[3].value.astype(np.float16)), "same-element-type"),
    _error("eta", _good, "attributes", nms_eta=1.5),
    _error("roi-num-type", _good, "attributes", roi_num_type="i16"),
    _error("negative-count", _good, "attributes", post_nms_count=-1),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_generate_proposals(case):
    harness.check(case, CASES)


@pytest.mark.parametrize("case", ERRORS, ids=str)
def test_generate_proposals_errors(case):
    harness.check(case)


def test_generate_proposals_infers_bounded_counts_without_values():
    """Unknown values: R is 0..N * min(post_nms_count, pre_nms_count, A*H*W); roi_num is [N]."""
    op = make_op(GenerateProposals, dict(BASE, post_nms_count=1000, roi_num_type="i32"))
    f32 = ElementType.f32
    infos = [TensorInfo(f32, PartialShape.of(s)) for s in ([2, 3], [5, 6, 3, 4], [2, 12, 5, 6], [2, 3, 5, 6])]
    rois, scores, nums = op.infer(*infos)
    assert str(rois.shape) == str(PartialShape.of([Dimension(min=0, max=2 * 90), 4]))
    assert str(scores.shape) == str(PartialShape.of([Dimension(min=0, max=2 * 90)]))
    assert nums.etype is ElementType.i32 and nums.shape.to_tuple() == (2,)
    rois, _, nums = op.infer(*[TensorInfo(f32, PartialShape.dynamic_rank())] * 4)
    assert rois.shape.rank == 2 and rois.shape[0].max is None and nums.shape.rank == 1
