"""ROIAlign-3 and ROIAlign-9 against OpenVINO's CPU plugin and the point-by-point oracle.

Tolerance: 4 ulps (plus an absolute 1e-6 where a mean of samples cancels near 0): the kernel
sums a bin's points pairwise, the oracle and OpenVINO one after another.

Where OpenVINO departs (see roi_align.py): the CPU plugin lets a NaN sample win a max bin (the
reference does not), and gives NaN for an average over a bin of 0 points (the reference gives 0);
those cases are judged by the core reference (ROIAlign-3 has one) or by the oracle alone.
"""

from __future__ import annotations

import functools

import harness
import ml_dtypes
import numpy as np
import pytest
from harness import Case, Input
from oracles import roi as oracle

RNG = np.random.default_rng(3131)
CASES: list[Case] = []


def boxes(count, height, width, scale, *, reverse=False, spread=1.0):
    """[count, 4] boxes (x1, y1, x2, y2) in image coordinates, mostly over the feature map."""
    x1 = RNG.uniform(-1, width, count) / scale
    y1 = RNG.uniform(-1, height, count) / scale
    w = RNG.uniform(0, width * spread, count) / scale
    h = RNG.uniform(0, height * spread, count) / scale
    out = np.stack([x1, y1, x1 + w, y1 + h], 1)
    if reverse:
        out = out[:, [2, 3, 0, 1]]
    return out


def case(cid, shape=(2, 3, 5, 6), count=4, *, opset="opset3", dtype=np.float32, index_dtype=np.int32, edges=False,
         reverse=False, spread=1.0, rois=None, batch=None, openvino="cpu", why="", error=None, ulps=4, **attrs):
    attrs = {"pooled_h": 2, "pooled_w": 3, "sampling_ratio": 2, "spatial_scale": 1.0, "mode": "avg", **attrs}
    n, h, w = shape[0], shape[-2], shape[-1]
    data = harness.values(RNG, shape, dtype, edges=edges)
    if rois is None:
        rois = boxes(count, h, w, float(attrs["spatial_scale"]), reverse=reverse, spread=spread)
    rois = np.asarray(rois).astype(dtype)
    if batch is None:
        batch = RNG.integers(0, max(n, 1), rois.shape[0])
    batch = np.asarray(batch).astype(index_dtype)
    CASES.append(Case(f"roi-align-{cid}", "ROIAlign", opset,
                      [Input("data", data), Input("rois", rois), Input("batch_indices", batch)], attrs,
                      oracle=None if error else functools.partial(oracle.roi_align, **attrs), openvino=openvino,
                      why=why, ulps=ulps, atol={np.dtype(np.float32): 1e-6, np.dtype(np.float64): 1e-14}.get(np.dtype(dtype), 0),
                      error=error))


for opset, aligned in (("opset3", None), ("opset9", "asymmetric"), ("opset9", "half_pixel_for_nn"),
                       ("opset9", "half_pixel")):
    extra = {} if aligned is None else {"aligned_mode": aligned}
    for mode in ("avg", "max"):
        for ratio in (0, 1, 2, 3):
            shape = (int(RNG.integers(1, 4)), int(RNG.integers(1, 4)), int(RNG.integers(1, 8)), int(RNG.integers(1, 9)))
            scale = float(RNG.choice([0.5, 1.0, 1.75]))
            case(f"{opset}-{aligned}-{mode}-ratio{ratio}", shape, int(RNG.integers(1, 6)), opset=opset, mode=mode,
                 sampling_ratio=ratio, spatial_scale=scale, pooled_h=int(RNG.integers(1, 4)),
                 pooled_w=int(RNG.integers(1, 4)), **extra)
        case(f"{opset}-{aligned}-{mode}-far", (1, 2, 4, 5), 6, opset=opset, mode=mode, spread=3.0, **extra)
        # reversed corners: widened to 1 x 1 under asymmetric, walked backwards by the aligned modes
        case(f"{opset}-{aligned}-{mode}-reversed", (1, 2, 5, 5), 4, opset=opset, mode=mode, reverse=True, **extra)
case("defaults-v9", opset="opset9")
case("no-rois", count=0)
case("no-rois-v9", count=0, opset="opset9", aligned_mode="half_pixel")
case("no-channels", (1, 0, 4, 4))
case("one-pixel", (1, 2, 1, 1), 3, sampling_ratio=0)
case("big-pooled", (1, 1, 3, 3), 2, pooled_h=7, pooled_w=5, sampling_ratio=0)
case("big-box-adaptive", (1, 2, 4, 4), rois=[[0, 0, 40, 3.5], [-10, -10, 30, 30]], batch=[0, 0], sampling_ratio=0)
case("outside", (1, 2, 4, 4), rois=[[-8, -8, -3, -3], [6, 6, 12, 12], [-4, 1, 9, 2]], batch=[0, 0, 0])
case("max-negative", (1, 2, 4, 4), 3, mode="max")  # values in [-4, 4): a bin of negative points gives 0
for index_dtype in (np.int64, np.int8, np.uint8, np.int16, np.uint32):
    case(f"index-{np.dtype(index_dtype).name}", (3, 2, 4, 4), 4, index_dtype=index_dtype)
for dtype in (np.float16, ml_dtypes.bfloat16):
    for opset in ("opset3", "opset9"):
        case(f"{np.dtype(dtype).name}-{opset}", (2, 2, 5, 5), 3, dtype=dtype, opset=opset, sampling_ratio=0)
case("f64", (2, 2, 5, 5), 3, dtype=np.float64, openvino="none",
     why="the CPU plugin computes f64 in f32, and the core reference has no f64 ROIAlign")
case("f64-v9", (2, 2, 5, 5), 3, dtype=np.float64, opset="opset9", aligned_mode="half_pixel", openvino="none",
     why="the CPU plugin computes f64 in f32, and the core reference has no f64 ROIAlign")
# edge values: NaN and infinities in the data; a point of weight 0 on an infinity gives NaN, as in OpenVINO
case("edges-avg", (1, 2, 4, 4), 3, edges=True)
case("edges-avg-v9", (1, 2, 4, 4), 3, edges=True, opset="opset9", aligned_mode="half_pixel")
case("edges-max", (1, 2, 4, 4), 3, edges=True, mode="max", openvino="reference",
     why="the CPU plugin lets a NaN sample win a max bin; the reference never takes it")
case("edges-max-v9", (1, 2, 4, 4), 3, edges=True, mode="max", opset="opset9", openvino="none",
     why="the CPU plugin lets a NaN sample win a max bin; the reference never takes it (and has no -9 kernel)")
case("outside-nan-pixel", (1, 1, 3, 3), rois=[[-9, -9, -5, -5]], batch=[0],
     openvino="reference", why="checks the 0 * data[0, 0] of a point outside; the data has no NaN here")
case("nan-box", (1, 2, 4, 4), rois=[[np.nan, 0, 2, 2], [0, 0, 2, 2]], batch=[0, 0])
case("inf-box", (1, 2, 4, 4), rois=[[-np.inf, 0, 2, 2], [0, 0, np.inf, 2]], batch=[0, 0])
# a bin of 0 points: 0 in the reference and here, NaN in the CPU plugin's average
case("zero-box-half-pixel", (1, 2, 4, 4), rois=[[1.5, 1.5, 1.5, 1.5], [1, 1, 3, 1]], batch=[0, 0], opset="opset9",
     aligned_mode="half_pixel", sampling_ratio=0, openvino="none",
     why="the CPU plugin's average over a bin of 0 points is 0 / 0 = NaN; the reference gives 0")
case("zero-box-max", (1, 2, 4, 4), rois=[[1.5, 1.5, 1.5, 1.5]], batch=[0], opset="opset9", mode="max",
     aligned_mode="half_pixel_for_nn", sampling_ratio=0)
case("reversed-adaptive", (1, 2, 5, 5), rois=[[4, 4, 0.5, 0.5]], batch=[0], opset="opset9",
     aligned_mode="half_pixel", sampling_ratio=0, pooled_h=2, pooled_w=2,
     openvino="none", why="the reference asserts on a negative count; the CPU plugin and irscatter give 0")
case("empty-image", (1, 2, 0, 4), 2, openvino="none",
     why="the reference and the CPU plugin read past an image of height 0; irscatter gives 0")
# refusals
case("err-data-rank", (2, 3, 4), 2, error="data-rank")
case("err-rois-shape", rois=np.zeros((2, 5)), batch=[0, 0], error="rois-shape")
case("err-batch-rank", rois=np.zeros((2, 4)), batch=[[0, 0]], error="batch-indices-shape")
case("err-batch-length", rois=np.zeros((2, 4)), batch=[0, 0, 0], error="batch-indices-shape")
case("err-batch-type", index_dtype=np.float32, error="indices-type")
case("err-data-type", dtype=np.int32, error="float-type")
case("err-pooled", pooled_h=0, error="pooled-size")
case("err-ratio", sampling_ratio=-1, error="sampling-ratio")
case("err-scale", spatial_scale=0.0, rois=np.zeros((1, 4)), batch=[0], error="spatial-scale")
case("err-scale-negative", spatial_scale=-1.0, rois=np.zeros((1, 4)), batch=[0], error="spatial-scale")
case("err-mode", mode="min", error="attributes")
case("err-aligned-mode", opset="opset9", aligned_mode="nearest", error="attributes")
case("err-batch-range", (2, 1, 3, 3), rois=np.zeros((2, 4)), batch=[0, 2], error="index-range")
case("err-batch-negative", (2, 1, 3, 3), rois=np.zeros((1, 4)), batch=[-1], error="index-range")
case("err-nan-adaptive", rois=[[np.nan, 0, 2, 2]], batch=[0], sampling_ratio=0, error="roi-sampling-count")
case("err-huge-adaptive", rois=[[0, 0, 1e30, 2]], batch=[0], sampling_ratio=0, error="roi-sampling-count")
case("err-huge-ratio", rois=[[0, 0, 2, 2]], batch=[0], sampling_ratio=10**9, error="tensor-limit")
case("err-huge-pooled", (1, 4, 2, 2), pooled_h=2**20, pooled_w=2**20, error="tensor-limit")


def test_mixed_types_are_refused():
    data = np.zeros((1, 1, 2, 2), np.float32)
    bad = Case("mixed", "ROIAlign", "opset3", [Input("data", data), Input("rois", np.zeros((1, 4), np.float16)),
                                                Input("batch_indices", np.zeros(1, np.int32))],
               {"pooled_h": 1, "pooled_w": 1, "sampling_ratio": 1, "spatial_scale": 1.0, "mode": "avg"},
               error="same-element-type")
    harness.check(bad)


@pytest.mark.parametrize("case", CASES, ids=str)
def test_roi_align(case):
    harness.check(case, CASES)
