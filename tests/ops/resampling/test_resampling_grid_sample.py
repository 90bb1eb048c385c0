"""GridSample-9 against OpenVINO's CPU plugin and the element-by-element oracle.

Tolerance: nearest is exact; bilinear and bicubic blend in f32 in an order close to OpenVINO's,
so a few ulps, plus an absolute 2e-6 where the bicubic lobes cancel near 0.
"""

from __future__ import annotations

import itertools

import harness
import ml_dtypes
import numpy as np
import pytest
from harness import Case, Input
from oracles import resampling as oracle

RNG = np.random.default_rng(909)
CASES: list[Case] = []


def case(cid, shape, grid_shape, *, dtype=np.float32, grid_dtype=np.float32, spread=1.3, edges=False,
         openvino="cpu", why="", error=None, **attrs):
    data = harness.values(RNG, shape, dtype, edges=edges)
    grid = RNG.uniform(-spread, spread, grid_shape).astype(grid_dtype)
    mode = attrs.get("mode", "bilinear")
    exact = mode == "nearest" or np.issubdtype(np.dtype(dtype), np.integer)

    def check(d, g):
        return oracle.grid_sample(d, g, **attrs)
    CASES.append(Case(f"gs-{cid}", "GridSample", "opset9", [Input("data", data), Input("grid", grid)], attrs,
                      oracle=None if error else check, openvino=openvino, why=why, ulps=0 if exact else 4,
                      atol=0 if exact or np.dtype(dtype) != np.float32 else 2e-6, error=error))


for mode, pad, align in itertools.product(("bilinear", "bicubic", "nearest"), ("zeros", "border", "reflection"),
                                          (False, True)):
    n = int(RNG.integers(1, 3))
    case(f"{mode}-{pad}-align{int(align)}", (n, int(RNG.integers(1, 4)), int(RNG.integers(1, 6)),
                                             int(RNG.integers(1, 6))),
         (n, int(RNG.integers(1, 5)), int(RNG.integers(1, 5)), 2), mode=mode, padding_mode=pad, align_corners=align)
    case(f"{mode}-{pad}-align{int(align)}-far", (1, 2, 3, 4), (1, 3, 3, 2), spread=4.0, mode=mode, padding_mode=pad,
         align_corners=align)
case("defaults", (2, 2, 3, 3), (2, 2, 5, 2))
case("empty-grid", (1, 2, 3, 3), (1, 0, 4, 2))
case("empty-channels", (1, 0, 3, 3), (1, 2, 2, 2))
case("empty-image-zeros", (1, 2, 0, 3), (1, 2, 2, 2), openvino="none",
     why="an image of height 0 cannot be fed to OpenVINO's CPU plugin; every tap is outside, so 0")
for dtype, mode in itertools.product((np.float16, ml_dtypes.bfloat16, np.float64), ("bilinear", "nearest")):
    case(f"{np.dtype(dtype).name}-{mode}", (1, 2, 4, 4), (1, 3, 3, 2), dtype=dtype, mode=mode,
         openvino="none" if dtype == np.float64 else "cpu",
         why="the CPU plugin computes f64 in f32, and the core reference has no f64 kernel")
case("grid-f16", (1, 2, 4, 4), (1, 3, 3, 2), grid_dtype=np.float16, mode="bicubic")
case("grid-f64", (1, 2, 4, 4), (1, 3, 3, 2), grid_dtype=np.float64)
for dtype in (np.int32, np.uint8):
    case(f"{np.dtype(dtype).name}-nearest", (1, 2, 4, 4), (1, 3, 3, 2), dtype=dtype, mode="nearest")
case("edges-bilinear", (1, 2, 4, 4), (1, 3, 3, 2), edges=True, spread=0.9, openvino="reference",
     why="the CPU plugin blends so that an infinity next to a tap of weight 0 gives NaN; the reference keeps it")
case("edges-nearest", (1, 2, 4, 4), (1, 3, 3, 2), edges=True, mode="nearest")
# refusals
case("err-rank", (2, 3, 4), (2, 3, 4, 2), error="grid-sample-rank")
case("err-grid-last", (1, 2, 3, 4), (1, 3, 4, 3), error="grid-shape")
case("err-grid-batch", (2, 2, 3, 4), (1, 3, 4, 2), error="grid-shape")
case("err-grid-type", (1, 2, 3, 4), (1, 3, 4, 2), grid_dtype=np.int32, error="float-type")
case("err-data-type", (1, 2, 3, 4), (1, 3, 4, 2), dtype=np.bool_, error="numeric-type")
case("err-empty-border", (1, 2, 0, 3), (1, 2, 2, 2), padding_mode="border", error="grid-sample-empty")


@pytest.mark.parametrize("case", CASES, ids=str)
def test_grid_sample(case):
    harness.check(case, CASES)
