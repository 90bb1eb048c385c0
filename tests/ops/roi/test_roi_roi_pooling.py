"""ROIPooling-2 against OpenVINO's CPU plugin and the pixel-by-pixel oracle.

Tolerance: `max` is exact (it picks a pixel); `bilinear` blends in the reference's order, 2 ulps
plus an absolute 1e-6 for f32 where a blend cancels near 0.

Where OpenVINO departs (see roi_pooling.py): a NaN in a max bin (the CPU plugin keeps it only as
the bin's first pixel, the reference only as its last; irscatter always), non-finite corners
(undefined in the reference), batch ids past N (the CPU plugin reads past the data) and pooled
sizes of 0 (which OpenVINO refuses and the spec allows) are judged by the oracle alone.
"""

from __future__ import annotations

import functools

import harness
import ml_dtypes
import numpy as np
import pytest
from harness import Case, Input
from oracles import roi as oracle

RNG = np.random.default_rng(2020)
CASES: list[Case] = []


def boxes(count, batches, height, width, scale, method, *, spread=1.0):
    """[count, 5] rows (batch_id, x1, y1, x2, y2): image coordinates for max, normalised for bilinear."""
    ids = RNG.integers(0, max(batches, 1), count) + RNG.uniform(0, 0.9, count)  # ids are truncated
    if method == "bilinear":
        corners = RNG.uniform(-0.2 * spread, 1 + 0.2 * spread, (count, 4))
        corners[:, 2:] = np.maximum(corners[:, 2:], corners[:, :2])
    else:
        x1 = RNG.uniform(-1, width, count) / scale
        y1 = RNG.uniform(-1, height, count) / scale
        corners = np.stack([x1, y1, x1 + RNG.uniform(0, width * spread, count) / scale,
                            y1 + RNG.uniform(0, height * spread, count) / scale], 1)
    return np.concatenate([ids[:, None], corners], 1)


def case(cid, shape=(2, 3, 6, 7), count=4, *, dtype=np.float32, edges=False, rois=None, spread=1.0, data=None,
         openvino="cpu", why="", error=None, **attrs):
    attrs = {"pooled_h": 2, "pooled_w": 3, "spatial_scale": 1.0, **attrs}
    method = attrs.get("method", "max")
    n, h, w = shape[0], shape[-2], shape[-1]
    data = harness.values(RNG, shape, dtype, edges=edges) if data is None else np.asarray(data, dtype)
    if rois is None:
        rois = boxes(count, n, h, w, float(attrs["spatial_scale"]), method, spread=spread)
    rois = np.asarray(rois).astype(dtype)
    exact = method == "max"
    CASES.append(Case(f"roi-pooling-{cid}", "ROIPooling", "opset2", [Input("data", data), Input("rois", rois)],
                      attrs, oracle=None if error else functools.partial(oracle.roi_pooling, **attrs),
                      openvino=openvino, why=why, ulps=0 if exact else 2,
                      atol=1e-6 if not exact and np.dtype(dtype) == np.float32 else 0, error=error))


for method in ("max", "bilinear"):
    for k in range(5):
        shape = (int(RNG.integers(1, 4)), int(RNG.integers(1, 4)), int(RNG.integers(1, 9)), int(RNG.integers(1, 9)))
        case(f"{method}-{k}", shape, int(RNG.integers(1, 6)), method=method,
             spatial_scale=float(RNG.choice([0.25, 0.5, 1.0, 1.5])), pooled_h=int(RNG.integers(1, 5)),
             pooled_w=int(RNG.integers(1, 5)))
    case(f"{method}-far", (1, 2, 5, 5), 6, method=method, spread=3.0)
    case(f"{method}-one-bin", (1, 2, 5, 6), 3, method=method, pooled_h=1, pooled_w=1)
    case(f"{method}-no-rois", count=0, method=method)
    case(f"{method}-no-channels", (1, 0, 4, 4), method=method)
    case(f"{method}-one-pixel", (1, 2, 1, 1), 3, method=method, pooled_h=3, pooled_w=2)
    for dtype in (np.float16, ml_dtypes.bfloat16):
        case(f"{method}-{np.dtype(dtype).name}", (2, 2, 5, 5), 3, dtype=dtype, method=method)
    case(f"{method}-f64", (2, 2, 5, 5), 3, dtype=np.float64, method=method, openvino="none",
         why="the CPU plugin computes f64 in f32, and the core reference has no ROIPooling evaluate")
case("defaults", (1, 1, 4, 4), 3)
# std::round's halves: 0.5 -> 1, 1.5 -> 2, 2.5 -> 3, -0.5 -> -1, -2.5 -> -3; reversed corners make a 1 x 1 box
case("halves", (1, 1, 4, 4), rois=[[0, 0.5, 0.5, 2.5, 2.5], [0, 1.5, 1.5, 2.5, 2.5], [0, -0.5, -0.5, -2.5, -2.5],
                                   [0, 3, 3, 1, 1], [0, 5, 5, 7, 7], [0, -2.5, 0.5, 1.5, 3.5]])
case("halves-scaled", (1, 2, 6, 6), rois=[[0, 1, 1, 5, 5], [0, 3, 1, 9, 7]], spatial_scale=0.5, pooled_h=3,
     pooled_w=3)
case("batch-truncated", (2, 1, 3, 3), rois=[[1.9, 0, 0, 2, 2], [-0.5, 0, 0, 2, 2]])
case("max-edges", (1, 2, 4, 4), 4, edges=True, openvino="none",
     why="NaN in a max bin: the CPU plugin keeps it only as the bin's first pixel, irscatter always")
case("max-minus-inf", (1, 1, 2, 2), data=np.full((1, 1, 2, 2), -np.inf), rois=[[0, 0, 0, 1, 1]], pooled_h=1,
     pooled_w=1)  # the maximum, -inf, as the CPU plugin gives (the reference starts at -3.4e38 and keeps it)
case("max-infinities", (1, 1, 3, 3), data=[[[[-np.inf, 1, np.inf], [2, -np.inf, 3], [np.inf, -1, -2]]]],
     rois=[[0, 0, 0, 2, 2]], pooled_h=2, pooled_w=2)
case("bilinear-edges", (1, 2, 4, 4), 3, edges=True, method="bilinear")
case("bilinear-reversed", (1, 2, 4, 5), rois=[[0, 0.9, 0.7, 0.1, 0.2], [0, 1.0, 1.0, 0.0, 0.0]], method="bilinear",
     pooled_h=3, pooled_w=3)
case("bilinear-outside", (1, 2, 4, 5), rois=[[0, -0.1, 0.2, 1.1, 0.7], [0, -3, -3, -2, -2]], method="bilinear",
     pooled_h=3, pooled_w=3)
case("bilinear-one-row", (1, 2, 1, 5), 3, method="bilinear")
case("nan-corner", (1, 2, 4, 4), rois=[[0, np.nan, 0, 3, 3], [0, 0, 0, np.inf, 3]], openvino="none",
     why="the reference converts a non-finite corner to an integer (undefined); irscatter: NaN to 0, inf saturates")
case("nan-corner-bilinear", (1, 2, 4, 4), rois=[[0, np.nan, 0, 0.5, 0.5]], method="bilinear", openvino="none",
     why="the reference converts a NaN coordinate to an integer (undefined); irscatter gives 0")
case("pooled-zero", (1, 2, 4, 4), 2, pooled_h=0, openvino="none",
     why="the spec allows pooled_h 0 (an empty output); OpenVINO refuses it")
case("empty-image", (1, 2, 0, 4), 2, openvino="none", why="an image of height 0: every bin is empty, so 0")
case("empty-image-bilinear", (1, 2, 3, 0), 2, method="bilinear", openvino="none",
     why="an image of width 0: every point is outside, so 0")
# refusals
case("err-data-rank", (2, 3, 4), 2, error="data-rank")
case("err-rois-shape", rois=np.zeros((2, 4)), error="rois-shape")
case("err-data-type", dtype=np.int32, error="float-type")
case("err-pooled", pooled_w=-1, error="pooled-size")
case("err-scale", spatial_scale=0.0, rois=np.zeros((1, 5)), error="spatial-scale")
case("err-scale-inf", spatial_scale=float("inf"), rois=np.zeros((1, 5)), error="spatial-scale")
case("err-method", method="avg", error="attributes")
case("err-batch", (2, 1, 3, 3), rois=[[2, 0, 0, 1, 1]], error="index-range")
case("err-batch-negative", (2, 1, 3, 3), rois=[[-1, 0, 0, 1, 1]], error="index-range")
case("err-batch-nan", (2, 1, 3, 3), rois=[[np.nan, 0, 0, 1, 1]], error="index-range")
case("err-huge-pooled", (1, 4, 2, 2), pooled_h=2**20, pooled_w=2**20, error="tensor-limit")


def test_mixed_types_are_refused():
    bad = Case("mixed", "ROIPooling", "opset2", [Input("data", np.zeros((1, 1, 2, 2), np.float32)),
                                                 Input("rois", np.zeros((1, 5), np.float16))],
               {"pooled_h": 1, "pooled_w": 1, "spatial_scale": 1.0}, error="same-element-type")
    harness.check(bad)


@pytest.mark.parametrize("case", CASES, ids=str)
def test_roi_pooling(case):
    harness.check(case, CASES)
