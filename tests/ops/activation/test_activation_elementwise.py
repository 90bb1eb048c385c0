"""The element-wise activations (Relu-1, Sigmoid-1, HSigmoid-5, HSwish-4, Mish-4, SoftPlus-4,
SoftSign-9, Elu-1, Clamp-1, Gelu-2, Gelu-7) against OpenVINO's CPU plugin and the oracles.

Tolerances: Relu, HSigmoid, Clamp exact (no rounding beyond the type's); HSwish 1 ulp (one
product and one division); the transcendental ones 4 ulps of the output type, plus an
absolute 1e-6 against the CPU plugin for Mish, Gelu and SoftPlus, whose f32 formulas
lose their relative precision where the result is tiny (very negative inputs).

f64 cases are judged by the oracle alone: the CPU plugin computes f64 in f32.
"""

import harness
import ml_dtypes
import numpy as np
import pytest
from harness import Case, Input
from helpers import element_dtypes
from oracles import activation as oracle

FLOATS = element_dtypes("f32", "f16", "bf16", "f64")
INTS = element_dtypes("i32", "i64", "i8", "u8")

# type, opset, attrs, oracle, ulps, atol, value range, values the CPU plugin answers otherwise
FLOAT_OPS = [
    ("Sigmoid", "opset1", {}, oracle.sigmoid, 4, 0, 10, ()),
    ("HSigmoid", "opset5", {}, oracle.hsigmoid, 1, 0, 6, (np.nan,)),
    ("HSwish", "opset4", {}, oracle.hswish, 2, 0, 6, ()),
    ("Mish", "opset4", {}, oracle.mish, 4, 1e-6, 10, ()),
    ("SoftPlus", "opset4", {}, oracle.softplus, 4, 2e-6, 30, ()),
    ("SoftSign", "opset9", {}, oracle.softsign, 2, 0, 10, ()),
    ("Elu", "opset1", {"alpha": 1.0}, oracle.elu(1.0), 4, 1e-7, 6, ()),
    ("Elu", "opset1", {"alpha": 0.5}, oracle.elu(0.5), 4, 1e-7, 6, ()),
    ("Elu", "opset1", {"alpha": 0.0}, oracle.elu(0.0), 4, 1e-7, 6, ()),
    ("Gelu", "opset2", {}, oracle.gelu_erf, 4, 1e-6, 6, (np.inf,)),
    ("Gelu", "opset7", {"approximation_mode": "erf"}, oracle.gelu_erf, 4, 1e-6, 6, (np.inf,)),
    ("Gelu", "opset7", {"approximation_mode": "tanh"}, oracle.gelu_tanh, 4, 1e-6, 6, (np.inf,)),
    ("Gelu", "opset7", {}, oracle.gelu_erf, 4, 1e-6, 6, (np.inf,)),
    ("Relu", "opset1", {}, oracle.relu, 0, 0, 4, ()),
    ("Clamp", "opset1", {"min": -1.5, "max": 2.25}, oracle.clamp(-1.5, 2.25), 0, 0, 4, (np.nan,)),
    ("Clamp", "opset1", {"min": 0.1, "max": 0.1}, oracle.clamp(0.1, 0.1), 0, 0, 4, (np.nan,)),
]
# f64 against the oracle: erfc and the tanh form's e^(-2u) amplify the last-place error of
# their argument (x / sqrt 2, u) by up to 2z^2 and 2u; 32 ulps covers |x| <= 6.
F64_ULPS = {"Gelu": 32}
INT_OPS = [  # the ones that take integers
    ("Relu", "opset1", {}, oracle.relu),
    ("Clamp", "opset1", {"min": -1.5, "max": 2.25}, oracle.clamp(-1.5, 2.25)),
    ("Clamp", "opset1", {"min": -300.5, "max": 1e30}, oracle.clamp(-300.5, 1e30)),
    ("Clamp", "opset1", {"min": 3, "max": 3}, oracle.clamp(3, 3)),
]
EDGES = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 1e-45, 30.0, -30.0], np.float32)


def values(rng, shape, dtype, **kw):
    """harness.values, except that bf16 gets no NaN: harness.check compares the inputs before and
    after with equal_nan only for dtype kind "f", and bf16's kind is "V" (so NaN != NaN there)."""
    x = harness.values(rng, shape, dtype, **kw)
    if x.dtype == ml_dtypes.bfloat16:
        x = np.where(np.isnan(x.astype(np.float32)), np.float32(2.5), x.astype(np.float32)).astype(x.dtype)
    return x


def _name(type_, attrs):
    return type_ + "".join(f"-{k}={v}" for k, v in attrs.items())


def _cases():
    rng = np.random.default_rng(20240607)
    shapes = harness.shapes(rng)
    cases = []
    for type_, opset, attrs, orc, ulps, atol, span, avoid in FLOAT_OPS:
        name = f"{_name(type_, attrs)}-{opset}"
        for k, (tname, dtype) in enumerate(FLOATS.items()):
            chosen = shapes if tname == "f32" else [shapes[(k + len(cases)) % len(shapes)], (3, 5)]
            for shape in chosen:
                x = values(rng, shape, dtype, low=-span, high=span, edges=True)
                if avoid and tname != "f64":
                    x = np.where(np.isin(x.astype(np.float32), avoid) | np.isnan(x.astype(np.float32)) & any(
                        np.isnan(avoid)), 2.5, x.astype(np.float32)).astype(dtype)
                case = Case(f"{name}-{tname}-{'x'.join(map(str, shape)) or 'scalar'}", type_, opset,
                            [Input("data", x)], attrs, oracle=orc, ulps=ulps, atol=atol)
                if tname == "f64":
                    case.openvino, case.why = "none", "the CPU plugin computes f64 in f32"
                    case.ulps, case.atol = F64_ULPS.get(type_, ulps), 0
                cases.append(case)
        if avoid:  # the reference has no Gelu-2 evaluate: the oracle judges that one alone
            cases.append(Case(f"{name}-edges", type_, opset, [Input("data", EDGES)], attrs, oracle=orc, ulps=ulps,
                              openvino="none" if opset == "opset2" else "reference",
                              why=f"the CPU plugin answers {list(avoid)} otherwise than the core reference (NaN: "
                                  "Clamp gives min, HSigmoid 0; Gelu(+inf) is NaN)"))
    for type_, opset, attrs, orc in INT_OPS:
        for tname, dtype in INTS.items():
            x = harness.values(rng, (4, 6), dtype, low=-400, high=400, edges=True)
            case = Case(f"{_name(type_, attrs)}-{tname}", type_, opset, [Input("data", x)], attrs, oracle=orc)
            if tname in ("i32", "i64"):
                case.openvino, case.why = "reference", "the CPU plugin computes i64 in i32 and i32 in f32 " \
                                                       "(Relu of 2^31 - 1 gives -2^31)"
            cases.append(case)
    # SoftPlus at and around its thresholds (20 for f32, 11 for f16) and far past them
    near = np.array([19.5, 20.0, 20.5, 10.9, 11.0, 11.5, 88.0, 89.0, 1e30, -1e30], np.float32)
    for tname in ("f32", "f16"):
        with np.errstate(over="ignore"):  # 1e30 is inf in f16, on purpose
            x = near.astype(FLOATS[tname])
        cases.append(Case(f"SoftPlus-threshold-{tname}", "SoftPlus", "opset4", [Input("data", x)],
                          oracle=oracle.softplus, ulps=1))
    # Clamp bounds that round past each other for integers: the spec's min(max(x, 1), 0) is 0
    x = np.array([-3, 0, 1, 2, 5], np.int32)
    cases.append(Case("Clamp-crossing-bounds-i32", "Clamp", "opset1", [Input("data", x)], {"min": 0.2, "max": 0.8},
                      oracle=oracle.clamp(0.2, 0.8), openvino="none",
                      why="OpenVINO tests x < min first and gives min (1) below it; see test_clamp_crossing_bounds"))
    bounds = {"min": -1.0, "max": 1.0}
    cases += [
        Case("Sigmoid-i32-refused", "Sigmoid", "opset1", [Input("data", np.zeros(3, np.int32))], error="float-type"),
        Case("Gelu-i64-refused", "Gelu", "opset7", [Input("data", np.zeros(3, np.int64))], error="float-type"),
        Case("Relu-boolean-refused", "Relu", "opset1", [Input("data", np.zeros(3, bool))], error="numeric-type"),
        Case("Clamp-boolean-refused", "Clamp", "opset1", [Input("data", np.zeros(3, bool))], bounds,
             error="numeric-type"),
        Case("Clamp-min-above-max", "Clamp", "opset1", [Input("data", np.zeros(3, np.float32))],
             {"min": 2.0, "max": 1.0}, error="attributes"),
        Case("Clamp-min-missing", "Clamp", "opset1", [Input("data", np.zeros(3, np.float32))], {"max": 1.0},
             error="attributes"),
        Case("Elu-negative-alpha", "Elu", "opset1", [Input("data", np.zeros(3, np.float32))], {"alpha": -0.5},
             error="attributes"),
        Case("Elu-alpha-missing", "Elu", "opset1", [Input("data", np.zeros(3, np.float32))], error="attributes"),
        Case("Gelu-bogus-mode", "Gelu", "opset7", [Input("data", np.zeros(3, np.float32))],
             {"approximation_mode": "sigmoid"}, error="attributes"),
    ]
    return cases


CASES = _cases()


@pytest.mark.parametrize("case", CASES, ids=str)
def test_elementwise_activation(case):
    harness.check(case, CASES)


def test_clamp_crossing_bounds():
    """Both sides of the one departure: ceil(0.2) = 1 is above floor(0.8) = 0. The spec's formula
    gives max = 0 everywhere (irscatter); OpenVINO's core reference gives min = 1 below 1."""
    case = next(c for c in CASES if c.id == "Clamp-crossing-bounds-i32")
    (got,) = harness.run_irscatter(case)
    assert got.tolist() == [0, 0, 0, 0, 0]
    reference = Case(case.id, case.type, case.opset, case.inputs, case.attrs, openvino="reference")
    (want,) = harness.run_openvino(reference, [reference])
    assert want.tolist() == [1, 1, 0, 0, 0]


def test_gelu_erf_rounds_the_f64_value_once():
    """Gelu's erf form is x * Phi(x) in f64 rounded once to f32: never the product of two f32
    roundings, which loses digits where Phi(x) is subnormal (x below about -13)."""
    from irscatter.ops.activation.elementwise import gelu_erf

    x = np.concatenate([np.linspace(-14, 6, 4001), [-13.3, -13.5, -13.9]]).astype(np.float32)
    want = np.asarray(oracle.gelu_erf(x.astype(np.float64)), np.float64).astype(np.float32)
    np.testing.assert_array_equal(gelu_erf(x), want)
