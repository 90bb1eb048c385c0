"""DeformablePSROIPooling-1 against OpenVINO's CPU plugin and
`oracles.roi_ps.deformable_psroi_pooling`.

Tolerance: 8 ulps of the output type plus 2e-6 (means of blended sample points, summed in
another order than the plugin's and the oracle's). Random data of f32, f16, bf16 and f64 (f64
judged by the oracle alone: the CPU plugin computes it in f32), with and without offsets
(one and two classes, part_size below, at and above group_size, trans_std 0, positive and
negative), group_size 1 to 3, spatial bins 1 to 3 per axis, spatial_scale 1, 0.5 and 0.0625,
ROIs inside the map, across its edges, wholly outside it, reversed and of half-way corners, a
negative batch_id as the last ROI (zeros), no ROIs.

Judged by the oracle alone (OpenVINO's core reference cannot evaluate the op): data with
infinities (the plugin blends with weights (1 - dx)(1 - dy) and so on, the reference as
tl + (tr - tl) * dx, which differ at infinities), and a negative batch_id followed by other ROIs
(the plugin gives zeros for every ROI after it).
"""

import harness
import numpy as np
import pytest
from harness import Case, named_inputs
from helpers import element_dtypes
from oracles.roi_ps import deformable_psroi_pooling

TYPES = element_dtypes("f32", "f16", "bf16", "f64")
OP = ("DeformablePSROIPooling", "opset1")
TOL = {"ulps": 8, "atol": 2e-6}
NAMES = ("data", "rois", "offsets")


def _case(name, arrays, attrs, **judge):
    return Case(name, *OP, named_inputs(NAMES, arrays), attrs,
                oracle=lambda *a: deformable_psroi_pooling(*a, **attrs), **TOL, **judge)


def _cases():
    rng = np.random.default_rng(9)
    cases = []
    k = 0
    for tag, dtype in TYPES.items():
        for with_offsets in (False, True):
            for group in (1, 2, 3):
                classes = 1 + (k % 2)
                out_dim = classes * int(rng.integers(1, 3))
                bins = int(rng.integers(1, 4)), int(rng.integers(1, 4))
                part = int(rng.integers(1, group + 2))
                batch, height, width = int(rng.integers(1, 3)), int(rng.integers(2, 9)), int(rng.integers(2, 9))
                scale = [1.0, 0.5, 0.0625][k % 3]
                data = harness.values(rng, (batch, out_dim * group * group, height, width), dtype)
                count = int(rng.integers(1, 5))
                lo = rng.uniform(-2, width + 1, (count, 2)) / scale
                boxes = np.concatenate([rng.integers(0, batch, (count, 1)), lo,
                                        lo + rng.uniform(-1, width, (count, 2)) / scale], axis=1).astype(dtype)
                arrays = [data, boxes]
                attrs = {"output_dim": out_dim, "group_size": group, "spatial_scale": scale,
                         "spatial_bins_x": bins[0], "spatial_bins_y": bins[1], "mode": "bilinear_deformable"}
                if with_offsets:
                    arrays.append(rng.uniform(-0.5, 0.5, (count, 2 * classes, part, part)).astype(dtype))
                    attrs.update(part_size=part, trans_std=[0.1, 1.0, 0.0, -0.7][k % 4])
                judge = {"openvino": "none", "why": "the CPU plugin computes f64 in f32"} if tag == "f64" else {}
                cases.append(_case(f"dpsroi-{tag}-off{int(with_offsets)}-g{group}-{k}", arrays, attrs, **judge))
                k += 1
    f32 = np.float32
    data = rng.normal(size=(2, 8, 6, 7)).astype(f32)
    attrs = {"output_dim": 2, "group_size": 2, "spatial_scale": 1.0, "spatial_bins_x": 3, "spatial_bins_y": 2}
    edge_rois = np.array([[0, 5, 4, 12, 12], [1, -3, -2, 2, 3], [0, 5, 5, 2, 2], [1, -9, -9, -5, -5],
                          [0, 0, 0, 0, 0], [1, 1.5, -0.5, 2.5, 3.5], [0, -1.5, 0.5, 3.49, 2.51]], f32)
    offsets = rng.uniform(-1, 1, (7, 2, 3, 3)).astype(f32)
    cases.append(_case("dpsroi-edges", [data, edge_rois], attrs))
    cases.append(_case("dpsroi-edges-offsets", [data, edge_rois, offsets], {**attrs, "trans_std": 0.9,
                                                                           "part_size": 3}))
    cases.append(_case("dpsroi-defaults", [data[:, :1], np.array([[0, 1, 1, 4, 4], [1, 0, 2, 3, 5]], f32)],
                       {"output_dim": 1, "spatial_scale": 1.0}))
    cases.append(_case("dpsroi-negative-batch-last", [data, np.array([[1, 0, 0, 4, 3], [-1, 1, 1, 3, 3]], f32)],
                       attrs))
    cases.append(_case("dpsroi-no-rois", [data, np.zeros((0, 5), f32)], attrs))
    nan = data.copy()
    nan[0, :, 1, 1] = np.nan
    cases.append(_case("dpsroi-nan-data", [nan, edge_rois], attrs))
    inf = harness.values(rng, data.shape, f32, edges=True)
    inf[0, :, 2, 2] = np.inf
    cases.append(_case("dpsroi-inf-data", [inf, edge_rois], attrs, openvino="none",
                       why="the CPU plugin blends with other weights, which differ from the reference at infinities"))
    cases.append(_case("dpsroi-negative-batch-first", [data, np.array([[-1, 0, 0, 4, 3], [1, 1, 1, 3, 3]], f32)],
                       attrs, openvino="none", why="the CPU plugin gives zeros for every ROI after a batch_id of -1"))
    cases.append(_case("dpsroi-empty-map", [np.zeros((1, 8, 0, 3), f32), np.array([[0, 0, 0, 1, 1]], f32)], attrs,
                       openvino="none", why="the CPU plugin fails on empty tensors"))
    rois = np.array([[0, 1, 1, 3, 3]], f32)
    off = np.zeros((1, 2, 1, 1), f32)
    refusals = [
        ("integer-data", [data.astype(np.int32), rois.astype(np.int32)], attrs, "float-type"),
        ("rois-type", [data, rois.astype(np.float16)], attrs, "same-element-type"),
        ("offsets-type", [data, rois, off.astype(np.float16)], attrs, "same-element-type"),
        ("rank", [data[0], rois], attrs, "data-rank"),
        ("rois-rank", [data, rois[0]], attrs, "rois-shape"),
        ("rois-columns", [data, rois[:, :4]], attrs, "rois-shape"),
        ("channels", [data[:, :7], rois], attrs, "psroi-channels"),
        ("output-dim", [data, rois], {**attrs, "output_dim": 0}, "psroi-attribute"),
        ("group-size", [data, rois], {**attrs, "group_size": 0}, "psroi-attribute"),
        ("bins", [data, rois], {**attrs, "spatial_bins_x": 0}, "psroi-attribute"),
        ("part-size", [data, rois, off], {**attrs, "part_size": 0}, "psroi-attribute"),
        ("scale", [data, rois], {**attrs, "spatial_scale": 0.0}, "spatial-scale"),
        ("offsets-rank", [data, rois, off[0]], attrs, "offsets-shape"),
        ("offsets-part", [data, rois, off], {**attrs, "part_size": 2}, "offsets-shape"),
        ("offsets-rois", [data, rois, np.zeros((2, 2, 1, 1), f32)], attrs, "offsets-shape"),
        ("offsets-odd", [data, rois, np.zeros((1, 3, 1, 1), f32)], attrs, "offsets-shape"),
        ("offsets-classes", [data, rois, np.zeros((1, 6, 1, 1), f32)], attrs, "offsets-shape"),
        ("batch-past-end", [data, np.array([[2, 1, 1, 3, 3]], f32)], attrs, "index-range"),
        ("batch-nan", [data, np.array([[np.nan, 1, 1, 3, 3]], f32)], attrs, "index-range"),
        ("mode", [data, rois], {**attrs, "mode": "bilinear"}, "attributes"),
    ]
    for name, arrays, a, label in refusals:
        cases.append(Case(f"dpsroi-refuses-{name}", *OP, named_inputs(NAMES, arrays), a,
                          error=label))
    return cases


CASES = _cases()


@pytest.mark.parametrize("case", CASES, ids=str)
def test_deformable_psroi_pooling(case):
    harness.check(case, CASES)
