"""ExperimentalDetectronROIFeatureExtractor-6 against OpenVINO's CPU plugin and the oracle. The
kernel sums a bin's sample points in the reference's order, in f32: exact against both."""

from functools import partial

import ml_dtypes
import numpy as np
import pytest
from harness import Case, Input, check
from oracles import detectron

OP, OPSET = "ExperimentalDetectronROIFeatureExtractor", "opset6"
F64 = {"openvino": "none", "why": "OpenVINO's CPU plugin runs f64 layers in f32 and returns the ROIs rounded"}


def _rois(rng, n, image=(256, 240), top=600):
    """ROIs of sizes from 4 to `top` pixels (600: all pyramid levels), some past the image's border."""
    ctr = rng.uniform(-10, 1.05 * np.array(image[::-1]), (n, 2))
    size = np.exp(rng.uniform(np.log(4), np.log(top), (n, 2)))
    return np.concatenate([ctr - size / 2, ctr + size / 2], 1)


def _case(name, rois, levels, attrs, dtype=np.float32, **kw):
    inputs = [Input("rois", rois.astype(dtype))] + [Input(f"level{k}", lv.astype(dtype)) for k, lv in enumerate(levels)]
    return Case(name, OP, OPSET, inputs, attrs, oracle=partial(detectron.roi_feature_extractor, **attrs), **kw)


def _pyramid(rng, count, channels=3, image=(256, 240)):
    return [rng.normal(size=(1, channels, image[0] // 4 // 2**k, image[1] // 4 // 2**k)) for k in range(count)]


def _cases():
    rng = np.random.default_rng(8)
    out = []
    scales = (4, 8, 16, 32, 64)
    for levels in (1, 2, 4):
        pyramid = _pyramid(rng, levels)
        for ratio in (0, 1, 2):
            for aligned in (False, True):
                for size in (1, 3):
                    attrs = {"output_size": size, "sampling_ratio": ratio, "pyramid_scales": scales[:levels + 1],
                             "aligned": aligned}
                    out.append(_case(f"L{levels}-r{ratio}-a{int(aligned)}-s{size}", _rois(rng, 7, top=(160, 300, 600)[levels // 2]),
                                     pyramid, attrs))
    attrs = {"output_size": 2, "sampling_ratio": 2, "pyramid_scales": (4, 8, 16, 32), "aligned": False}
    pyramid = _pyramid(rng, 4)
    for dtype in (np.float16, ml_dtypes.bfloat16, np.float64):
        out.append(_case(np.dtype(dtype).name, _rois(rng, 6), pyramid, attrs, dtype,
                         **F64 if dtype is np.float64 else {}))
    # level boundaries: sqrt(area) at 56, 112, 224, 448 pixels, and just below
    edges = np.array([[0, 0, s, s] for s in (56, 55.9, 112, 111.9, 224, 223.9, 448, 447.9, 2000)], np.float64)
    out.append(_case("level-edges", edges, pyramid, attrs))
    # ROIs of no positive area pool nowhere (zeros), a NaN ROI too; an inverted ROI; one off the map
    odd = np.array([[10, 10, 10, 30], [20, 20, 5, 5], [np.nan, 1, 9, 9], [30, 40, 20, 60],
                    [-300, -300, -200, -250], [900, 900, 1100, 1000], [5, 5, 6, 6]], np.float64)
    out.append(_case("degenerate", odd, pyramid, attrs))
    out.append(_case("degenerate-adaptive", odd, pyramid, dict(attrs, sampling_ratio=0, aligned=True)))
    # non-finite features reach the output through weight-0 neighbours, as in the reference
    special = [lv.copy() for lv in pyramid]
    special[0][0, 0, 0, 0] = np.inf
    special[0][0, 1, 3, 5] = np.nan
    out.append(_case("special-features", _rois(rng, 8, (64, 60)), special, attrs))
    out.append(_case("no-rois", np.zeros((0, 4)), pyramid, attrs))
    out.append(_case("no-channels", _rois(rng, 3), [lv[:, :0] for lv in pyramid], attrs, openvino="none",
                     why="OpenVINO's CPU plugin leaves the ROIs output unwritten when the levels have no channels"))
    # the spec's example scales: five for four levels
    out.append(_case("more-scales", _rois(rng, 5), pyramid, dict(attrs, pyramid_scales=(4, 8, 16, 32, 64))))
    # refused
    r = _rois(rng, 3)
    out.append(_case("few-scales", r, pyramid, dict(attrs, pyramid_scales=(4, 8)), error="pyramid-scales"))
    out.append(_case("zero-scale", r, pyramid[:1], dict(attrs, pyramid_scales=(0,)), error="pyramid-scales"))
    out.append(_case("rois-width", r[:, :3], pyramid, attrs, error="roi-feature-shape"))
    out.append(_case("level-rank", r, [pyramid[0][0]], attrs, error="roi-feature-shape"))
    out.append(_case("level-batch", r, [np.concatenate([pyramid[0]] * 2)], attrs, error="roi-feature-shape"))
    out.append(_case("channels", r, [pyramid[0], pyramid[1][:, :2]], attrs, error="roi-feature-shape"))
    out.append(_case("no-levels", r, [], attrs, error="input-count"))
    out.append(_case("int-type", r, pyramid, attrs, np.int32, error="float-type"))
    out.append(_case("zero-output-size", r, pyramid, dict(attrs, output_size=0), error="attributes"))
    mixed = _case("mixed-types", r, pyramid, attrs, error="same-element-type")
    mixed.inputs[2].value = mixed.inputs[2].value.astype(np.float16)
    out.append(mixed)
    return out


CASES = _cases()


@pytest.mark.parametrize("case", CASES, ids=str)
def test_experimental_detectron_roi_feature_extractor(case):
    check(case, CASES)
