"""ExperimentalDetectronPriorGridGenerator-6 against OpenVINO's CPU plugin and the oracle: every
value is one f32 product and one sum, so the cases are exact."""

from functools import partial

import ml_dtypes
import numpy as np
import pytest
from harness import Case, Input, check
from oracles import detectron

OP, OPSET = "ExperimentalDetectronPriorGridGenerator", "opset6"
F64 = {"openvino": "none", "why": "OpenVINO's CPU plugin runs f64 layers in f32, rounding the priors"}


def _case(name, priors, fshape, ishape, attrs, dtype=np.float32, **kw):
    priors = priors.astype(dtype)
    fmap, image = np.zeros(fshape, dtype), np.zeros(ishape, dtype)
    return Case(name, OP, OPSET, [Input("priors", priors), Input("featmap", fmap), Input("image", image)], attrs,
                oracle=partial(detectron.prior_grid, **attrs), **kw)


def _cases():
    rng = np.random.default_rng(7)
    out = []
    priors = np.array([[-16, -16, 16, 16], [-32, -8, 32, 8], [-8.5, -31.25, 8.5, 31.25]], np.float32)
    for dtype in (np.float32, np.float16, ml_dtypes.bfloat16, np.float64):
        for flatten in (True, False):
            for strides in ((0.0, 0.0), (4.0, 8.0), (2.5, 0.0)):
                attrs = {"flatten": flatten, "h": 0, "w": 0, "stride_x": strides[0], "stride_y": strides[1]}
                out.append(_case(f"{np.dtype(dtype).name}-flat{int(flatten)}-s{strides[0]}-{strides[1]}", priors,
                                 (1, 2, 5, 7), (1, 3, 40, 60), attrs, dtype, **F64 if dtype is np.float64 else {}))
    for p, fshape, ishape in ((rng.uniform(-20, 20, (1, 4)), (1, 1, 1, 1), (1, 1, 3, 3)),
                              (rng.uniform(-20, 20, (4, 4)), (2, 8, 3, 9), (2, 3, 25, 83)),
                              (rng.uniform(-20, 20, (2, 4)), (1, 1, 6, 4), (1, 1, 7, 13))):
        for flatten in (True, False):
            attrs = {"flatten": flatten, "h": fshape[2], "w": fshape[3], "stride_x": 0.0, "stride_y": 0.0}
            out.append(_case(f"full-hw-{fshape}-flat{int(flatten)}", p, fshape, ishape, attrs))
    # the spec's example geometry (3 priors over 25 x 42 cells of an 800 x 1344 image)
    attrs = {"flatten": True, "h": 0, "w": 0, "stride_x": 32.0, "stride_y": 32.0}
    out.append(_case("spec-example", priors, (1, 4, 25, 42), (1, 3, 800, 1344), attrs))
    # empty: no priors, or a feature map without cells
    attrs0 = {"flatten": True, "h": 0, "w": 0, "stride_x": 0.0, "stride_y": 0.0}
    out.append(_case("no-priors", np.zeros((0, 4)), (1, 1, 3, 3), (1, 1, 9, 9), attrs0))
    out.append(_case("no-cells", priors, (1, 1, 0, 3), (1, 1, 9, 9), dict(attrs0, flatten=False)))
    # a grid smaller than the feature map: the rest is undefined (zeros here)
    partial_grid = "the spec leaves the rows past a smaller grid undefined; irscatter's zeros are checked by the oracle"
    for h, w, flatten in ((2, 0, True), (0, 3, False), (1, 1, True)):
        attrs = {"flatten": flatten, "h": h, "w": w, "stride_x": 0.0, "stride_y": 3.0}
        out.append(_case(f"smaller-grid-{h}-{w}-{int(flatten)}", priors, (1, 1, 4, 5), (1, 1, 16, 20), attrs,
                         openvino="none", why=partial_grid))
    # refused
    out.append(_case("h-too-large", priors, (1, 1, 4, 5), (1, 1, 16, 20), dict(attrs0, h=5), error="prior-grid-size"))
    out.append(_case("w-too-large", priors, (1, 1, 4, 5), (1, 1, 16, 20), dict(attrs0, w=6), error="prior-grid-size"))
    out.append(_case("priors-width", priors[:, :3], (1, 1, 4, 5), (1, 1, 16, 20), attrs0, error="prior-grid-shape"))
    out.append(_case("featmap-rank", priors, (1, 4, 5), (1, 1, 16, 20), attrs0, error="prior-grid-shape"))
    out.append(_case("image-rank", priors, (1, 1, 4, 5), (16, 20), attrs0, error="prior-grid-shape"))
    out.append(_case("batch", priors, (2, 1, 4, 5), (1, 1, 16, 20), attrs0, error="prior-grid-shape"))
    out.append(_case("int-type", priors, (1, 1, 4, 5), (1, 1, 16, 20), attrs0, np.int32, error="float-type"))
    out.append(_case("negative-stride", priors, (1, 1, 4, 5), (1, 1, 16, 20), dict(attrs0, stride_x=-1.0),
                     error="attributes"))
    mixed = _case("mixed-types", priors, (1, 1, 4, 5), (1, 1, 16, 20), attrs0, error="same-element-type")
    mixed.inputs[1].value = mixed.inputs[1].value.astype(np.float16)
    out.append(mixed)
    return out


CASES = _cases()


@pytest.mark.parametrize("case", CASES, ids=str)
def test_experimental_detectron_prior_grid_generator(case):
    check(case, CASES)
