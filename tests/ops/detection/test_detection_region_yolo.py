"""RegionYolo-1 against OpenVINO's CPU plugin and the oracle: YOLO v2 (do_softmax, every axis /
end_axis pair including negative ones and an end before the axis) and v3 (mask) layouts, the
spec's two configurations at smaller sizes, batches, more channels than the regions use (the
flat layout), coords of 0 and 1 (the objectness gets the sigmoid twice), no classes, size-0
dimensions, and f32, f16, bf16, f64 with NaN, infinities, -0.0 and denormals.

Tolerance: 2 ulps for the sigmoids, 8 where a softmax is computed (the kernel computes in f64
and rounds once, so it is within an ulp of the oracle; the CPU plugin's vector exp puts its
small softmax values up to about 16 ulps off), and the harness's 2 * ulps + 2 against the CPU
plugin. f64 data is held to the oracle alone: OpenVINO computes it in f32.
"""

import harness
import ml_dtypes
import numpy as np
import pytest
from harness import Case, Input
from oracles import detection_priors as oracle

FLOATS = [np.float32, np.float16, ml_dtypes.bfloat16, np.float64]


def _case(cid, data, *, coords=4, classes=3, num=2, do_softmax=True, mask=(), axis=1, end_axis=3, **kw):
    attrs = dict(coords=coords, classes=classes, num=num, do_softmax=do_softmax, axis=axis, end_axis=end_axis,
                 anchors="10.0,13.0,16.0,30.0")
    if mask:
        attrs["mask"] = list(mask)
    return Case(cid, "RegionYolo", "opset1", [Input("data", data)], attrs,
                oracle=lambda d: oracle.region_yolo(d, coords=coords, classes=classes, num=num, do_softmax=do_softmax,
                                                    mask=mask, axis=axis, end_axis=end_axis),
                ulps=8 if do_softmax and classes else 2, **kw)


F64 = "OpenVINO computes RegionYolo in f32 (the CPU plugin converts f64 data, the reference's sigmoid is f32)"


def _cases():
    rng = np.random.default_rng(13)
    out = []

    def data(shape, dtype=np.float32, edges=False, low=-6, high=6):
        return harness.values(rng, shape, dtype, low=low, high=high, edges=edges)

    # the spec's configurations, smaller planes
    out.append(_case("ry-spec-v3", data((1, 255, 3, 4)), coords=4, classes=80, num=6, do_softmax=False,
                     mask=(0, 1, 2)))
    out.append(_case("ry-spec-v2", data((1, 125, 4, 3)), coords=4, classes=20, num=5))
    for axis, end in ((1, 3), (0, 3), (2, 3), (1, 2), (0, 1), (-3, -1), (3, 3), (2, 1), (-4, 0)):
        out.append(_case(f"ry-axes-{axis}-{end}", data((2, 16, 2, 3)), coords=4, classes=3, num=2, axis=axis,
                         end_axis=end))
    for dtype in FLOATS:
        name = np.dtype(dtype).name
        kw = dict(openvino="none", why=F64) if dtype == np.float64 else {}
        out.append(_case(f"ry-v2-{name}", data((2, 18, 3, 2), dtype, edges=True), coords=4, classes=4, num=2, **kw))
        out.append(_case(f"ry-v3-{name}", data((2, 27, 2, 3), dtype, edges=True), coords=4, classes=4, num=5,
                         do_softmax=False, mask=(1, 3, 4), **kw))
    out.append(_case("ry-v2-wide", data((2, 22, 2, 2)), coords=4, classes=3, num=2))  # 6 channels beyond 2 regions
    out.append(_case("ry-v3-wide", data((2, 20, 2, 2)), coords=4, classes=3, num=9, do_softmax=False, mask=(0, 5)))
    for coords in (0, 1, 2):
        out.append(_case(f"ry-v2-coords{coords}", data((1, 2 * (coords + 4), 2, 3)), coords=coords, classes=3, num=2))
        out.append(_case(f"ry-v3-coords{coords}", data((2, 2 * (coords + 4), 3, 2)), coords=coords, classes=3, num=4,
                         do_softmax=False, mask=(0, 2)))
    out.append(_case("ry-v2-noclasses", data((1, 10, 2, 2)), coords=4, classes=0, num=2))
    out.append(_case("ry-v3-noclasses", data((1, 10, 2, 2)), coords=4, classes=0, num=2, do_softmax=False,
                     mask=(0, 1)))
    out.append(_case("ry-v3-nomask", data((1, 8, 2, 2)), coords=4, classes=3, num=2, do_softmax=False))
    # the CPU plugin's exp is some 1e-6 off (relatively) far in the tail: softmax values near 1e-15
    out.append(_case("ry-big", data((1, 24, 2, 2), low=-100, high=100), coords=4, classes=7, num=2, atol=1e-12))
    for shape in ((0, 16, 2, 2), (1, 16, 0, 3), (2, 16, 3, 0)):
        out.append(_case(f"ry-v2-empty-{'x'.join(map(str, shape))}", data(shape), coords=4, classes=3, num=2))
        out.append(_case(f"ry-v3-empty-{'x'.join(map(str, shape))}", data(shape), coords=4, classes=3, num=2,
                         do_softmax=False, mask=(0, 1)))
    return out


def _error(cid, label, data, **attrs):
    full = dict(coords=4, classes=3, num=2, do_softmax=True, axis=1, end_axis=3)
    full.update(attrs)
    return Case(cid, "RegionYolo", "opset1", [Input("data", data)], full, error=label)


F = np.zeros((1, 16, 2, 2), np.float32)
ERRORS = [
    _error("ry-err-int", "float-type", F.astype(np.int32)),
    _error("ry-err-rank", "data-rank", np.zeros((16, 2, 2), np.float32)),
    _error("ry-err-channels", "region-yolo-channels", np.zeros((1, 15, 2, 2), np.float32)),
    _error("ry-err-channels-v3", "region-yolo-channels", F, do_softmax=False, mask=[0, 1, 2]),
    _error("ry-err-coords", "region-yolo-counts", F, coords=-1),
    _error("ry-err-classes", "region-yolo-counts", F, classes=-2),
    _error("ry-err-one-entry", "region-yolo-counts", F, coords=0, classes=0),
    _error("ry-err-num", "region-yolo-counts", F, num=0),
    _error("ry-err-axis", "axis-range", F, axis=4),
    _error("ry-err-end-axis", "axis-range", F, end_axis=-5),
    _error("ry-err-missing", "attributes", F, num=None),
]

CASES = _cases()


@pytest.mark.parametrize("case", CASES, ids=str)
def test_region_yolo(case):
    harness.check(case, CASES)


@pytest.mark.parametrize("case", ERRORS, ids=str)
def test_region_yolo_refused(case):
    harness.check(case, ERRORS)
