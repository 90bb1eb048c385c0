"""ROIAlignRotated-15 against OpenVINO's CPU plugin (which runs OpenVINO's reference code for
this op) and the point-by-point oracle.

Tolerance: 4 ulps plus an absolute 1e-6 for f32 (means that cancel near 0): the kernel sums a
bin's points pairwise, the oracle and OpenVINO one after another, and numpy's cos and sin may
differ by an ulp from the C library's.
"""

from __future__ import annotations

import functools

import harness
import ml_dtypes
import numpy as np
import pytest
from harness import Case, Input
from oracles import roi as oracle

RNG = np.random.default_rng(1515)
CASES: list[Case] = []


def boxes(count, height, width, scale, *, sizes=(0.3, 1.0)):
    """[count, 5] rotated boxes (cx, cy, w, h, angle) in image coordinates."""
    cx = RNG.uniform(-0.5, width + 0.5, count) / scale
    cy = RNG.uniform(-0.5, height + 0.5, count) / scale
    w = RNG.uniform(*sizes, count) * width / scale
    h = RNG.uniform(*sizes, count) * height / scale
    angle = RNG.uniform(-4, 4, count)
    return np.stack([cx, cy, w, h, angle], 1)


def case(cid, shape=(2, 3, 5, 6), count=4, *, dtype=np.float32, index_dtype=np.int32, edges=False, rois=None,
         batch=None, sizes=(0.3, 1.0), openvino="cpu", why="", error=None, **attrs):
    attrs = {"pooled_h": 2, "pooled_w": 3, "sampling_ratio": 2, "spatial_scale": 1.0, **attrs}
    n, h, w = shape[0], shape[-2], shape[-1]
    data = harness.values(RNG, shape, dtype, edges=edges)
    if rois is None:
        rois = boxes(count, h, w, float(attrs["spatial_scale"]), sizes=sizes)
    rois = np.asarray(rois).astype(dtype)
    if batch is None:
        batch = RNG.integers(0, max(n, 1), rois.shape[0])
    batch = np.asarray(batch).astype(index_dtype)
    CASES.append(Case(f"roi-align-rotated-{cid}", "ROIAlignRotated", "opset15",
                      [Input("data", data), Input("rois", rois), Input("batch_indices", batch)], attrs,
                      oracle=None if error else functools.partial(oracle.roi_align_rotated, **attrs),
                      openvino=openvino, why=why, ulps=4,
                      atol={np.dtype(np.float32): 1e-6, np.dtype(np.float64): 1e-14}.get(np.dtype(dtype), 0),
                      error=error))


for clockwise in (False, True):
    for ratio in (0, 1, 2, 3):
        shape = (int(RNG.integers(1, 4)), int(RNG.integers(1, 4)), int(RNG.integers(1, 8)), int(RNG.integers(1, 9)))
        case(f"cw{int(clockwise)}-ratio{ratio}", shape, int(RNG.integers(1, 6)), sampling_ratio=ratio,
             clockwise_mode=clockwise, spatial_scale=float(RNG.choice([0.5, 1.0, 1.75])),
             pooled_h=int(RNG.integers(1, 4)), pooled_w=int(RNG.integers(1, 4)))
    case(f"cw{int(clockwise)}-far", (1, 2, 4, 5), 6, sizes=(1.0, 3.0), clockwise_mode=clockwise)
case("defaults", (1, 2, 4, 4), 2)
case("no-rois", count=0)
case("no-channels", (1, 0, 4, 4))
case("one-pixel", (1, 2, 1, 1), 3, sampling_ratio=0)
case("right-angles", (1, 2, 5, 5), rois=[[2, 2, 3, 2, 0], [2, 2, 3, 2, np.pi / 2], [2, 2, 3, 2, -np.pi],
                                         [2.5, 2.5, 2, 4, np.pi / 4]], batch=[0] * 4, sampling_ratio=0)
case("zero-size", (1, 2, 4, 4), rois=[[2, 2, 0, 0, 0.3], [2, 2, 0, 2, 1.0]], batch=[0, 0], sampling_ratio=0)
case("zero-size-fixed", (1, 2, 4, 4), rois=[[2, 2, 0, 0, 0.3]], batch=[0, 0][:1], sampling_ratio=2)
case("negative-size-fixed", (1, 2, 4, 4), rois=[[2, 2, -2, -3, 0.3]], batch=[0], sampling_ratio=2)
case("negative-size-adaptive", (1, 2, 4, 4), rois=[[2, 2, -3, -3, 0.3]], batch=[0], sampling_ratio=0,
     openvino="none", why="a negative adaptive count fails an assertion in OpenVINO's reference (which the CPU "
                          "plugin runs); irscatter counts it as 0 points, as it does for ROIAlign")
for index_dtype in (np.int64, np.uint8, np.int16):
    case(f"index-{np.dtype(index_dtype).name}", (3, 2, 4, 4), 4, index_dtype=index_dtype)
case("float16", (2, 2, 5, 5), 3, dtype=np.float16, sampling_ratio=0)
case("bfloat16", (2, 2, 5, 5), 3, dtype=ml_dtypes.bfloat16, sampling_ratio=0, openvino="none",
     why="OpenVINO's CPU plugin aborts on bf16 ROIAlignRotated (heap corruption), and the core reference has "
         "no evaluate for it")
case("f64", (2, 2, 5, 5), 3, dtype=np.float64, openvino="none",
     why="the CPU plugin computes f64 in f32; the core reference has no ROIAlignRotated evaluate")
case("edges", (1, 2, 4, 4), 3, edges=True)
case("nan-box", (1, 2, 4, 4), rois=[[np.nan, 2, 2, 2, 0.1], [2, 2, 2, 2, np.nan]], batch=[0, 0], openvino="none",
     why="a NaN point is converted to an integer in OpenVINO's reference (undefined); irscatter makes it NaN")
case("empty-image", (1, 2, 4, 0), 2, openvino="none",
     why="the reference reads past an image of width 0; irscatter gives 0")
# refusals
case("err-data-rank", (2, 3, 4), 2, error="data-rank")
case("err-rois-shape", rois=np.zeros((2, 4)), batch=[0, 0], error="rois-shape")
case("err-batch-length", rois=np.zeros((2, 5)), batch=[0], error="batch-indices-shape")
case("err-batch-type", index_dtype=np.float16, error="indices-type")
case("err-data-type", dtype=np.int8, error="float-type")
case("err-pooled", pooled_w=0, error="pooled-size")
case("err-ratio", sampling_ratio=-2, error="sampling-ratio")
case("err-scale", spatial_scale=-0.5, rois=np.zeros((1, 5)), batch=[0], error="spatial-scale")
case("err-clockwise", clockwise_mode="sometimes", error="attributes")
case("err-batch-range", (2, 1, 3, 3), rois=np.zeros((1, 5)), batch=[5], error="index-range")
case("err-inf-adaptive", rois=[[2, 2, np.inf, 2, 0]], batch=[0], sampling_ratio=0, error="roi-sampling-count")


@pytest.mark.parametrize("case", CASES, ids=str)
def test_roi_align_rotated(case):
    harness.check(case, CASES)
