"""Detection heads as detectors export them, built with OpenVINO's Python API and compared with
its CPU plugin (out of process):

* an SSD head: 1x1 convolutions give box offsets and class scores per anchor, Softmax over the
  classes, PriorBox over the feature map's ShapeOf, and DetectionOutput (decoding, per-class NMS,
  keep_top_k) at the end;
* a two-stage head: a region proposal network's objectness and box deltas go through Proposal,
  whose boxes ROIAlign pools from the feature map, and a MatMul scores each pooled region.

Sizes, anchors, thresholds and seeds vary by case. Scores come from random convolutions of
random features, so ties between candidates (whose order the ops define but a backbone never
produces) do not decide these cases; the op tests cover them. Tolerance: the heads sum
convolution products of order 1 before the post-processing, which is exact where it selects and
a few f32 operations where it decodes: rtol 1e-4 and atol 1e-4 of the largest magnitude.
"""

import numpy as np
import pytest
from helpers import run_ov, save_ov

import irscatter

ov = pytest.importorskip("openvino")
import openvino.opset4 as o4  # noqa: E402
import openvino.opset8 as o8  # noqa: E402
import openvino.opset9 as o9  # noqa: E402
import openvino.opset15 as ops  # noqa: E402


def C(v, dtype=np.float32):
    return ops.constant(np.array(v, dtype))


def _conv1x1(x, channels_in, channels_out, rng):
    weights = (rng.standard_normal((channels_out, channels_in, 1, 1)) / np.sqrt(channels_in)).astype(np.float32)
    return ops.convolution(x, C(weights), [1, 1], [0, 0], [0, 0], [1, 1])


def _flat_per_anchor(x, per_anchor):
    """[1, A*k, H, W] -> [1, H*W*A*k] in (cell, anchor, value) order, as SSD exporters lay it out."""
    nhwc = ops.transpose(x, C([0, 2, 3, 1], np.int64))
    return ops.reshape(nhwc, C([1, -1], np.int64), special_zero=False), per_anchor


def ssd_head(rng):
    channels, h, w = int(rng.integers(4, 12)), int(rng.integers(2, 7)), int(rng.integers(2, 7))
    classes = int(rng.integers(2, 6))
    ratios = [2.0] if rng.random() < 0.5 else [2.0, 3.0]
    attrs = {"min_size": [float(rng.integers(8, 20))], "max_size": [float(rng.integers(24, 40))],
             "aspect_ratio": ratios, "flip": True, "clip": bool(rng.random() < 0.5), "step": 0.0,
             "offset": 0.5, "variance": [0.1, 0.1, 0.2, 0.2], "scale_all_sizes": True}
    anchors = 2 + 2 * len(ratios)  # min, max, and each ratio flipped
    features = ops.parameter([1, channels, h, w], ov.Type.f32, name="features")
    loc, _ = _flat_per_anchor(_conv1x1(features, channels, anchors * 4, rng), 4)
    conf_maps = _conv1x1(features, channels, anchors * classes, rng)
    conf_flat, _ = _flat_per_anchor(conf_maps, classes)
    conf = ops.reshape(ops.softmax(ops.reshape(conf_flat, C([1, -1, classes], np.int64), False), -1),
                       C([1, -1], np.int64), False)
    spatial = ops.strided_slice(ops.shape_of(features), C([2], np.int64), C([4], np.int64), C([1], np.int64),
                                [0], [0])
    priors = ops.unsqueeze(o8.prior_box(spatial, C([64, 64], np.int64), attrs), C([0], np.int64))
    detection = {"keep_top_k": [int(rng.integers(5, 30))], "nms_threshold": float(rng.choice([0.3, 0.45, 0.6])),
                 "top_k": int(rng.integers(10, 60)), "confidence_threshold": float(rng.choice([0.01, 0.2])),
                 "code_type": "caffe.PriorBoxParameter.CENTER_SIZE", "share_location": True,
                 "background_label_id": 0, "variance_encoded_in_target": False,
                 "clip_before_nms": bool(rng.random() < 0.3), "normalized": True}
    out = o8.detection_output(loc, conf, priors, detection)
    feeds = {"features": rng.standard_normal((1, channels, h, w)).astype(np.float32)}
    return [out], [features], feeds


def two_stage_head(rng):
    # a feature map large enough that NMS leaves more than post_nms_topn boxes, as in a real
    # detector: Proposal's unused rows carry batch index -1, which ROIAlign refuses
    channels, h, w = int(rng.integers(4, 10)), int(rng.integers(8, 14)), int(rng.integers(8, 14))
    ratios, scales = [0.5, 1.0, 2.0], [float(s) for s in rng.choice([2.0, 4.0, 8.0], 2, replace=False)]
    anchors = len(ratios) * len(scales)
    stride = 16
    features = ops.parameter([1, channels, h, w], ov.Type.f32, name="features")
    logits = _conv1x1(features, channels, 2 * anchors, rng)
    # objectness as a two-way softmax per anchor over [1, 2, A, H, W], as Caffe's RPN computes it
    pairs = ops.reshape(logits, C([1, 2, anchors, h, w], np.int64), False)
    probs = ops.reshape(ops.softmax(pairs, 1), C([1, 2 * anchors, h, w], np.int64), False)
    deltas = ops.multiply(_conv1x1(features, channels, 4 * anchors, rng), C(0.2))
    post = int(rng.integers(4, 12))
    u = np.uint32  # the Python API wants these unsigned
    attrs = {"base_size": u(stride), "pre_nms_topn": u(rng.integers(60, 120)), "post_nms_topn": u(post),
             "nms_thresh": 0.7, "feat_stride": u(stride), "min_size": u(rng.integers(1, 8)),
             "ratio": ratios, "scale": scales, "clip_before_nms": True, "clip_after_nms": False,
             "normalize": False, "box_size_scale": 1.0, "box_coordinate_scale": 1.0, "framework": ""}
    image_info = C([h * stride, w * stride, 1.0])
    rois, _scores = o4.proposal(probs, deltas, image_info, attrs).outputs()
    boxes = ops.slice(rois, C([1], np.int64), C([5], np.int64), C([1], np.int64), C([1], np.int64))
    batch = ops.convert(ops.reshape(ops.slice(rois, C([0], np.int64), C([1], np.int64), C([1], np.int64),
                                              C([1], np.int64)), C([-1], np.int64), False), "i32")
    pooled = o9.roi_align(features, boxes, batch, 3, 3, 2, 1.0 / stride, str(rng.choice(["avg", "max"])),
                          str(rng.choice(["asymmetric", "half_pixel"])))
    flat = ops.reshape(pooled, C([post, channels * 9], np.int64), False)
    head = C((rng.standard_normal((channels * 9, 3)) / np.sqrt(channels * 9)).astype(np.float32))
    out = ops.matmul(flat, head, False, False)
    feeds = {"features": rng.standard_normal((1, channels, h, w)).astype(np.float32)}
    return [rois, out], [features], feeds


TEMPLATES = [ssd_head, two_stage_head]


@pytest.mark.parametrize("i", range(12))
def test_detection_head_matches_openvino(tmp_path, i):
    template = TEMPLATES[i % len(TEMPLATES)]
    outputs, params, feeds = template(np.random.default_rng(18000 + i))
    xml = save_ov(ov.Model([ops.result(o) for o in outputs], params, template.__name__), tmp_path)
    model = irscatter.read_model(xml)
    assert model.compile().findings == []
    got = list(model.run(feeds).values())
    want = run_ov(xml, feeds)
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-4 * max(1.0, float(np.abs(w).max())))
