"""PriorBoxClustered-1 against OpenVINO's CPU plugin and the oracle: the spec's example, widths
and heights of one to nine boxes, clip on and off, step / step_w / step_h set or 0 (the image
size over the grid), offsets, 0, 1 or 4 variances, every integer input type, grids with a
size-0 side, inputs as Consts (folded by OpenVINO's core reference) and as Parameters (the CPU
plugin's kernel). Exact: f32 step by step as in the reference.
"""

import harness
import numpy as np
import pytest
from harness import Case, Input
from oracles import detection_priors as oracle

INT_TYPES = [np.int32, np.int64, np.int8, np.int16, np.uint8, np.uint16, np.uint32, np.uint64]


def _text(values):
    return ",".join(repr(float(v)) for v in values)


def _case(cid, grid, image, attrs, *, dtype=np.int32, const=False, **kw):
    texts = {k: _text(v) if isinstance(v, (list, tuple)) else v for k, v in attrs.items()}
    inputs = [Input("output_size", np.array(grid, dtype), const), Input("image_size", np.array(image, dtype), const)]
    return Case(cid, "PriorBoxClustered", "opset1", inputs, texts,
                oracle=lambda g, i: oracle.prior_box_clustered(g, i, **attrs), **kw)


SPEC = dict(clip=False, height=[44.0, 10.0, 30.0, 19.0, 94.0, 32.0, 61.0, 53.0, 17.0], offset=0.5, step=16.0,
            variance=[0.1, 0.1, 0.2, 0.2], width=[86.0, 13.0, 57.0, 39.0, 68.0, 34.0, 142.0, 50.0, 23.0])

ATTRS = [
    ("spec", SPEC),
    ("clip-step0", dict(width=[10.0, 33.3], height=[20.0, 7.5], clip=True, offset=0.5)),
    ("step-wh", dict(width=[12.0], height=[18.0], step_w=6.0, step_h=9.5, offset=0.0, variance=[0.3])),
    ("step-w-only", dict(width=[40.0, 5.0, 70.0], height=[15.0, 25.0, 35.0], step_w=7.0, offset=0.25, clip=True)),
    ("step-h-step", dict(width=[9.0], height=[11.0], step=5.0, step_h=3.0, offset=1.0, clip=False)),
    ("default-clip", dict(width=[100.0, 1.0], height=[1.0, 100.0], offset=0.5)),
]


def _cases():
    rng = np.random.default_rng(12)
    out = []
    for name, attrs in ATTRS:
        for const in (False, True):
            out.append(_case(f"pbc-{name}-{'const' if const else 'param'}", [3, 5], [40, 70], attrs, const=const))
    out.append(_case("pbc-spec-size", [10, 19], [180, 320], SPEC, const=True))
    for dtype in INT_TYPES:
        h, w = (int(v) for v in rng.integers(1, 6, 2))
        out.append(_case(f"pbc-{np.dtype(dtype).name}", [h, w], [int(rng.integers(20, 100)), int(rng.integers(20, 100))],
                         ATTRS[1][1], dtype=dtype, const=bool(rng.integers(0, 2))))
    for grid in ([0, 3], [2, 0]):
        out.append(_case(f"pbc-grid-{grid[0]}x{grid[1]}", grid, [32, 32], SPEC, const=True))
    out.append(_case("pbc-default-size", [2, 2], [10, 10], dict(offset=0.5), openvino="none",
                     why="the spec's default width and height are [1.0]; OpenVINO's are empty lists (no boxes)"))
    return out


def _error(cid, label, attrs, grid=(2, 2), image=(8, 8), dtypes=(np.int32, np.int32), shapes=None):
    values = [np.array(grid, dtypes[0]), np.array(image, dtypes[1])]
    if shapes:
        values = [np.zeros(s, t) for s, t in zip(shapes, dtypes)]
    texts = {k: _text(v) if isinstance(v, (list, tuple)) else v for k, v in attrs.items()}
    return Case(cid, "PriorBoxClustered", "opset1",
                [Input("output_size", values[0], True), Input("image_size", values[1], True)], texts, error=label)


BASE = dict(width=[4.0], height=[4.0], offset=0.5)
ERRORS = [
    _error("pbc-err-type", "prior-size-type", BASE, dtypes=(np.float32, np.float32)),
    _error("pbc-err-mixed", "same-element-type", BASE, dtypes=(np.int64, np.int32)),
    _error("pbc-err-shape", "prior-size-shape", BASE, shapes=[(2,), (4,)]),
    _error("pbc-err-negative", "prior-size-value", BASE, grid=(2, -3)),
    _error("pbc-err-sizes", "prior-box-clustered-sizes", dict(width=[4.0, 5.0], height=[4.0], offset=0.5)),
    _error("pbc-err-variance", "prior-variance", dict(BASE, variance=[0.1, 0.1, 0.1])),
    _error("pbc-err-offset", "attributes", dict(width=[4.0], height=[4.0])),
    _error("pbc-err-limit", "tensor-limit", BASE, grid=(2**20, 2**20)),
]

CASES = _cases()


@pytest.mark.parametrize("case", CASES, ids=str)
def test_prior_box_clustered(case):
    harness.check(case, CASES)


@pytest.mark.parametrize("case", ERRORS, ids=str)
def test_prior_box_clustered_refused(case):
    harness.check(case, ERRORS)
