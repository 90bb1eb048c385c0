"""PSROIPooling-1 against OpenVINO's CPU plugin and `oracles.roi_ps.psroi_pooling`.

Tolerance: 8 ulps of the output type plus 2e-6 (sums of a bin's pixels in another order than
the plugin's and the oracle's, and blends of four pixels). Random data of f32, f16, bf16 and f64
(f64 judged by the oracle alone: the CPU plugin computes it in f32) with edge values (NaN, +-inf),
both modes, group_size 1 to 3, spatial bins 1 to 3 per axis, several spatial_scale values, ROIs
with fractional and half-way corners, a negative batch_id as the last ROI (zeros), no ROIs.

Judged by the oracle alone (OpenVINO's core reference cannot evaluate PSROIPooling, and the
CPU plugin departs from it there): bins past the map's right or bottom edge (the reference reads
the last column; the plugin gives 0), reversed and empty boxes (the plugin widens them to 0.1),
bilinear points in (W - 1, W) (the plugin leaves them out), a negative batch_id followed by
other ROIs (the plugin gives zeros for every ROI after it), and the defaults (OpenVINO reads a
missing mode as an empty string and refuses it; the spec's default is average).
"""

import harness
import numpy as np
import pytest
from harness import Case, Input
from helpers import element_dtypes
from oracles.roi_ps import psroi_pooling

TYPES = element_dtypes("f32", "f16", "bf16", "f64")
OP = ("PSROIPooling", "opset1")
TOL = {"ulps": 8, "atol": 2e-6}


def _case(name, data, rois, attrs, **judge):
    return Case(name, *OP, [Input("data", data), Input("rois", rois)], attrs,
                oracle=lambda d, r: psroi_pooling(d, r, **attrs), **TOL, **judge)


def _rois(rng, count, batch, height, width, dtype, *, normalized=False):
    """ROIs inside the map: corners in pixels (or in [0, 1] for bilinear), x1 <= x2, y1 <= y2."""
    extent = [1, 1] if normalized else [width - 1, height - 1]
    lo = rng.uniform(0, 0.6, (count, 2)) * extent
    hi = lo + rng.uniform(0.05 if normalized else 0, 0.4, (count, 2)) * extent
    return np.concatenate([rng.integers(0, batch, (count, 1)), lo, hi], axis=1).astype(dtype)


def _cases():
    rng = np.random.default_rng(3)
    cases = []
    k = 0
    for tag, dtype in TYPES.items():
        for mode in ("average", "bilinear"):
            for group in (1, 2, 3):
                out_dim = int(rng.integers(1, 4))
                bins = (int(rng.integers(1, 4)), int(rng.integers(1, 4))) if mode == "bilinear" else (1, 1)
                channels = out_dim * (group * group if mode == "average" else bins[0] * bins[1])
                batch, height, width = int(rng.integers(1, 3)), int(rng.integers(2, 9)), int(rng.integers(2, 9))
                data = harness.values(rng, (batch, channels, height, width), dtype, edges=k % 4 == 3)
                scale = [1.0, 0.5, 0.25][k % 3] if mode == "average" else 1.0
                rois = _rois(rng, int(rng.integers(1, 5)), batch, height, width, np.float64,
                             normalized=mode == "bilinear")
                if mode == "average":
                    rois[:, 1:] /= scale
                    rois[0, 1:] = np.round(rois[0, 1:] * 2) / 2  # half-way corners round away from zero
                rois = rois.astype(dtype)
                attrs = {"output_dim": out_dim, "group_size": group, "spatial_scale": scale, "mode": mode}
                if mode == "bilinear":
                    attrs.update(spatial_bins_x=bins[0], spatial_bins_y=bins[1])
                judge = {"openvino": "none", "why": "the CPU plugin computes f64 in f32"} if tag == "f64" else {}
                cases.append(_case(f"psroi-{tag}-{mode}-g{group}-{k}", data, rois, attrs, **judge))
                k += 1
    f32 = np.float32
    data = rng.normal(size=(2, 8, 6, 7)).astype(f32)
    avg = {"output_dim": 2, "group_size": 2, "spatial_scale": 1.0, "mode": "average"}
    bil = {"output_dim": 2, "group_size": 2, "spatial_scale": 1.0, "mode": "bilinear", "spatial_bins_x": 2,
           "spatial_bins_y": 2}
    cases.append(_case("psroi-negative-batch-last", data, np.array([[1, 0, 0, 4, 3], [-1, 1, 1, 3, 3]], f32), avg))
    cases.append(_case("psroi-no-rois", data, np.zeros((0, 5), f32), avg))
    cases.append(_case("psroi-bilinear-whole-map", data, np.array([[0, 0, 0, 1, 1], [1, 0.5, 0, 1, 0.5]], f32), bil))
    cases.append(_case("psroi-bilinear-scaled", data, np.array([[0, 0, 0, 2, 2], [1, 1, 0, 2, 1]], f32),
                       {**bil, "spatial_scale": 0.5}))
    ref = {"openvino": "none"}
    cases.append(_case("psroi-average-past-edges", data, np.array([[0, 4, 3, 9, 9], [1, 6, 5, 6, 5]], f32), avg,
                       why="the CPU plugin gives 0 for a bin past the map's edge, the reference reads the last "
                           "column or row", **ref))
    cases.append(_case("psroi-average-before-edges", data, np.array([[0, -3, -2, 2, 3], [1, -6, -5, -2, -1]], f32),
                       avg, why="the reference is undefined for bins before the map; irscatter clips them at 0",
                       **ref))
    cases.append(_case("psroi-average-reversed", data, np.array([[0, 4, 4, 2, 2], [1, 3, 3, 2, 2]], f32), avg,
                       why="the CPU plugin widens a reversed or empty box to 0.1", **ref))
    cases.append(_case("psroi-average-nan-corner", data, np.array([[0, np.nan, 1, 3, 3], [1, 1, 1, 3, np.inf]], f32),
                       avg, why="the reference converts NaN and inf to integers (undefined)", **ref))
    cases.append(_case("psroi-bilinear-outside", data, np.array([[0, 0.5, 0.5, 1.4, 1.1], [1, -0.5, -0.2, 0.5, 0.4]],
                                                                f32), bil,
                       why="the CPU plugin leaves out points in (W - 1, W), the reference reads the last column",
                       **ref))
    cases.append(_case("psroi-negative-batch-first", data, np.array([[-1, 0, 0, 4, 3], [1, 1, 1, 3, 3]], f32), avg,
                       why="the CPU plugin gives zeros for every ROI after a batch_id of -1", **ref))
    cases.append(_case("psroi-empty-map", np.zeros((1, 8, 0, 3), f32), np.array([[0, 0, 0, 1, 1]], f32), avg,
                       why="the CPU plugin fails on empty tensors", **ref))
    cases.append(Case("psroi-defaults", *OP, [Input("data", data[:, :2]), Input("rois", np.array([[0, 1, 1, 4, 4]], f32))],
                      {"output_dim": 2, "spatial_scale": 1.0}, oracle=lambda d, r: psroi_pooling(
                          d, r, output_dim=2, spatial_scale=1.0), openvino="none",
                      why="OpenVINO reads a missing mode as an empty string and refuses it", **TOL))
    i32 = np.int32
    rois = np.array([[0, 1, 1, 3, 3]], f32)
    refusals = [
        ("integer-data", data.astype(i32), rois, avg, "float-type"),
        ("integer-rois", data, rois.astype(i32), avg, "float-type"),
        ("rank", data[0], rois, avg, "data-rank"),
        ("rois-rank", data, rois[0], avg, "rois-shape"),
        ("rois-columns", data, rois[:, :4], avg, "rois-shape"),
        ("channels", data[:, :7], rois, avg, "psroi-channels"),
        ("bilinear-channels", data, rois, {**bil, "spatial_bins_x": 3}, "psroi-channels"),
        ("output-dim", data, rois, {**avg, "output_dim": 0}, "psroi-attribute"),
        ("group-size", data, rois, {**avg, "group_size": 0}, "psroi-attribute"),
        ("bins", data, rois, {**bil, "spatial_bins_y": 0}, "psroi-attribute"),
        ("scale-zero", data, rois, {**avg, "spatial_scale": 0.0}, "spatial-scale"),
        ("scale-negative", data, rois, {**avg, "spatial_scale": -1.0}, "spatial-scale"),
        ("scale-huge", data, rois, {**avg, "spatial_scale": 1e40}, "spatial-scale"),
        ("batch-past-end", data, np.array([[2, 1, 1, 3, 3]], f32), avg, "index-range"),
        ("batch-nan", data, np.array([[np.nan, 1, 1, 3, 3]], f32), avg, "index-range"),
        ("mode", data, rois, {**avg, "mode": "max"}, "attributes"),
    ]
    for name, d, r, attrs, label in refusals:
        cases.append(Case(f"psroi-refuses-{name}", *OP, [Input("data", d), Input("rois", r)], attrs, error=label))
    return cases


CASES = _cases()


@pytest.mark.parametrize("case", CASES, ids=str)
def test_psroi_pooling(case):
    harness.check(case, CASES)
