"""The activations with parameter inputs (PRelu-1, Selu-1, HardSigmoid-1, Swish-4) against
OpenVINO's CPU plugin and the oracles.

Tolerances: PRelu 1 ulp (one multiply), HardSigmoid 2 ulps plus an absolute 1e-7 (a
multiply-add in f32, which cancels where alpha x is near -beta, or fused by the CPU plugin); Selu 4 ulps plus an absolute 1e-7 (the CPU plugin computes e^x - 1 as written, which
cancels near 0); Swish 4 ulps. f64 is judged by the oracle alone (the CPU plugin computes it
in f32). Parameters are fed both as Parameters and as Consts.
"""

import harness
import ml_dtypes
import numpy as np
import pytest
from harness import Case, Input
from helpers import element_dtypes
from oracles import activation as oracle

FLOATS = element_dtypes("f32", "f16", "bf16", "f64")
F64 = {"openvino": "none", "why": "the CPU plugin computes f64 in f32"}


def values(rng, shape, dtype, **kw):
    """harness.values without NaN for bf16 (harness.check's unchanged-input test uses equal_nan
    only for dtype kind "f", and bf16's kind is "V")."""
    x = harness.values(rng, shape, dtype, **kw)
    if x.dtype == ml_dtypes.bfloat16:
        x = np.where(np.isnan(x.astype(np.float32)), np.float32(2.5), x.astype(np.float32)).astype(x.dtype)
    return x


def _id(*parts):
    return "-".join(str(p) if not isinstance(p, tuple) else "x".join(map(str, p)) or "scalar" for p in parts)


def _prelu(rng):
    cases = []
    # (data shape, slope shape): per channel, numpy broadcasting, rank-1 data
    layouts = [((2, 3, 4), (3,)), ((2, 3, 4, 5), (3,)), ((1, 4, 2, 2, 3), (4,)), ((5,), (5,)), ((5,), (1,)),
               ((2, 3, 4), (4,)), ((2, 3, 4), (3, 1)), ((2, 3, 4), (2, 3, 4)), ((2, 3, 3), (3,)),
               ((3, 3), (3,)), ((2, 0, 4), (4,)), ((2, 3), (1, 1)), ((4, 2), (2,))]
    for k, (tname, dtype) in enumerate(FLOATS.items()):
        chosen = layouts if tname == "f32" else layouts[k::3]
        for data_shape, slope_shape in chosen:
            for const in (False, True):
                x = values(rng, data_shape, dtype, edges=True)
                a = values(rng, slope_shape, dtype, low=-2, high=2)
                cases.append(Case(_id("PRelu", tname, data_shape, slope_shape, "const" if const else "param"),
                                  "PRelu", "opset1", [Input("data", x), Input("slope", a, const=const)],
                                  oracle=oracle.prelu, ulps=1, **(F64 if tname == "f64" else {})))
    # A scalar slope, which the spec does not allow and OpenVINO writes for leaky_relu (and runs).
    for tname, data_shape, const in (("f32", (2, 3, 4), True), ("f32", (5,), False), ("f16", (2, 3), True),
                                     ("f32", (), True)):
        dtype = FLOATS[tname]
        cases.append(Case(_id("PRelu-scalar-slope", tname, data_shape, "const" if const else "param"), "PRelu",
                          "opset1", [Input("data", values(rng, data_shape, dtype, edges=True)),
                                     Input("slope", np.array(0.01, dtype), const=const)],
                          oracle=oracle.prelu, ulps=1))
    f32 = np.float32
    cases += [
        Case("PRelu-slope-too-wide", "PRelu", "opset1", [Input("data", np.ones((2, 3), f32)),
                                                         Input("slope", np.ones((4, 2, 3), f32))], error="broadcast"),
        Case("PRelu-slope-mismatch", "PRelu", "opset1", [Input("data", np.ones((2, 3, 4), f32)),
                                                         Input("slope", np.ones(5, f32))], error="broadcast"),
        Case("PRelu-scalar-data", "PRelu", "opset1", [Input("data", np.array(-1.0, f32)),
                                                      Input("slope", np.ones(1, f32))], error="broadcast"),
        Case("PRelu-int", "PRelu", "opset1", [Input("data", np.ones((2, 3), np.int8)),
                                              Input("slope", np.ones(3, np.int8))], error="float-type"),
        Case("PRelu-mixed-types", "PRelu", "opset1", [Input("data", np.ones((2, 3), f32)),
                                                      Input("slope", np.ones(3, np.float16))],
             error="same-element-type"),
    ]
    return cases


def _selu(rng):
    cases = []
    shapes = harness.shapes(rng)
    for k, (tname, dtype) in enumerate(FLOATS.items()):
        chosen = shapes if tname == "f32" else shapes[k::3]
        for n, shape in enumerate(chosen):
            const = True  # the CPU plugin takes alpha and lambda only as constants
            param_shape = (1,) if n % 3 else ()
            x = values(rng, shape, dtype, edges=True)
            alpha = np.full(param_shape, 1.67326, dtype) if n % 2 else values(rng, param_shape, dtype, low=0, high=3)
            lam = np.full(param_shape, 1.0507, dtype) if n % 2 else values(rng, param_shape, dtype, low=0, high=3)
            cases.append(Case(_id("Selu", tname, shape, "const" if const else "param"), "Selu", "opset1",
                              [Input("data", x), Input("alpha", alpha, const=const), Input("lambda", lam, const=const)],
                              oracle=oracle.selu, ulps=4, atol=1e-7 if tname != "f64" else 0,
                              **(F64 if tname == "f64" else {})))
    f32 = np.float32
    one = np.ones(1, f32)
    cases += [
        Case("Selu-param", "Selu", "opset1",
             [Input("data", np.linspace(-5, 5, 11).astype(f32)), Input("alpha", np.array([1.5], f32)),
              Input("lambda", np.array(1.25, f32))], oracle=oracle.selu, ulps=4, openvino="none",
             why="the CPU plugin takes alpha and lambda only as constants, and the reference has no evaluate"),
        Case("Selu-alpha-two-values", "Selu", "opset1", [Input("data", np.ones(3, f32)), Input("alpha", np.ones(2, f32)),
                                                         Input("lambda", one)], error="scalar-input"),
        Case("Selu-lambda-2d", "Selu", "opset1", [Input("data", np.ones(3, f32)), Input("alpha", one),
                                                  Input("lambda", np.ones((1, 1), f32))], error="scalar-input"),
        Case("Selu-int", "Selu", "opset1", [Input("data", np.ones(3, np.int32)), Input("alpha", np.ones(1, np.int32)),
                                            Input("lambda", np.ones(1, np.int32))], error="float-type"),
        Case("Selu-mixed-types", "Selu", "opset1", [Input("data", np.ones(3, f32)), Input("alpha", one),
                                                    Input("lambda", np.ones(1, np.float16))],
             error="same-element-type"),
    ]
    return cases


def _hard_sigmoid(rng):
    cases = []
    shapes = harness.shapes(rng)
    for k, (tname, dtype) in enumerate(FLOATS.items()):
        chosen = shapes if tname == "f32" else shapes[k::3]
        for n, shape in enumerate(chosen):
            const = True  # the CPU plugin takes alpha and beta only as constants
            x = values(rng, shape, dtype, edges=True)
            if tname != "f64":  # NaN: the CPU plugin gives 0, the reference 1 (see the NaN case)
                x = np.where(np.isnan(x.astype(np.float32)), np.float32(0.25), x.astype(np.float32)).astype(dtype)
            alpha, beta = np.array(0.2 if n % 2 else -0.7, dtype), np.array(0.5, dtype)
            cases.append(Case(_id("HardSigmoid", tname, shape, "const" if const else "param"), "HardSigmoid",
                              "opset1", [Input("data", x), Input("alpha", alpha, const=const),
                                         Input("beta", beta, const=const)],
                              oracle=oracle.hard_sigmoid, ulps=2,
                              atol=1e-7 if tname != "f64" else 0, **(F64 if tname == "f64" else {})))
    f32 = np.float32
    nan = np.array([np.nan, -np.nan, 0.0, -0.0, np.inf, -np.inf, 10.0, -10.0], f32)
    cases += [
        Case("HardSigmoid-nan", "HardSigmoid", "opset1",
             [Input("data", nan), Input("alpha", np.array(0.2, f32)), Input("beta", np.array(0.5, f32))],
             oracle=oracle.hard_sigmoid, openvino="none",
             why="the spec leaves NaN open; irscatter gives 1 as OpenVINO's core reference's std::min/std::max "
                 "do, the CPU plugin 0 (and the reference has no HardSigmoid evaluate to run)"),
        Case("HardSigmoid-param", "HardSigmoid", "opset1",
             [Input("data", np.linspace(-5, 5, 11).astype(f32)), Input("alpha", np.array(0.3, f32)),
              Input("beta", np.array(0.4, f32))], oracle=oracle.hard_sigmoid, ulps=1, openvino="none",
             why="the CPU plugin takes alpha and beta only as constants, and the reference has no evaluate"),
        Case("HardSigmoid-alpha-1d", "HardSigmoid", "opset1",
             [Input("data", np.ones(3, f32)), Input("alpha", np.ones(1, f32)), Input("beta", np.array(0.5, f32))],
             error="scalar-input"),
        Case("HardSigmoid-int", "HardSigmoid", "opset1",
             [Input("data", np.ones(3, np.int32)), Input("alpha", np.array(1, np.int32)),
              Input("beta", np.array(0, np.int32))], error="float-type"),
        Case("HardSigmoid-mixed-types", "HardSigmoid", "opset1",
             [Input("data", np.ones(3, f32)), Input("alpha", np.array(1, f32)), Input("beta", np.array(0, np.float64))],
             error="same-element-type"),
    ]
    return cases


def _swish(rng):
    cases = []
    shapes = harness.shapes(rng)
    for k, (tname, dtype) in enumerate(FLOATS.items()):
        chosen = shapes if tname == "f32" else shapes[k::3]
        for n, shape in enumerate(chosen):
            x = values(rng, shape, dtype, low=-10, high=10, edges=True)
            inputs = [Input("data", x)]
            if n % 3:
                inputs.append(Input("beta", np.array([0.0, 0.5, 1.0, 2.75][n % 4], dtype), const=n % 3 == 1))
            cases.append(Case(_id("Swish", tname, shape, len(inputs)), "Swish", "opset4", inputs,
                              oracle=oracle.swish, ulps=4, **(F64 if tname == "f64" else {})))
    f32 = np.float32
    cases += [
        Case("Swish-negative-beta", "Swish", "opset4",
             [Input("data", np.ones(3, f32)), Input("beta", np.array(-1.0, f32), const=True)], error="beta-range"),
        Case("Swish-beta-1d", "Swish", "opset4",
             [Input("data", np.ones(3, f32)), Input("beta", np.ones(1, f32))], error="scalar-input"),
        Case("Swish-int", "Swish", "opset4", [Input("data", np.ones(3, np.int32))], error="float-type"),
        Case("Swish-mixed-types", "Swish", "opset4",
             [Input("data", np.ones(3, f32)), Input("beta", np.array(1, np.float16))], error="same-element-type"),
    ]
    return cases


def _cases():
    rng = np.random.default_rng(77)
    return _prelu(rng) + _selu(rng) + _hard_sigmoid(rng) + _swish(rng)


CASES = _cases()


@pytest.mark.parametrize("case", CASES, ids=str)
def test_activation_with_parameters(case):
    harness.check(case, CASES)


def test_swish_negative_beta_fed_at_run_time():
    """A negative beta that is not a constant is refused when the layer runs."""
    import irscatter

    case = Case("Swish-negative-beta-param", "Swish", "opset4",
                [Input("data", np.ones(3, np.float32)), Input("beta", np.array(-1.0, np.float32))])
    with pytest.raises(irscatter.IRError) as caught:
        harness.run_irscatter(case)
    assert caught.value.label == "beta-range"
