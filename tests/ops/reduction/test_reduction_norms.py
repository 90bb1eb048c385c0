"""ReduceMean-1, ReduceL1-4, ReduceL2-4, ReduceLogicalAnd-1 and ReduceLogicalOr-1 against
OpenVINO's CPU plugin and the oracles in `oracles.reduction`.

Tolerances: integers and booleans exact; ReduceL1 and ReduceL2 within 4 ulps of the output type
(sums of non-negative terms, in another order than OpenVINO's); ReduceMean within 4 ulps plus
1e-6 absolute in f32 (a sum of mixed signs may cancel) and 4 ulps in 16-bit types (computed in f32,
rounded once).

Where OpenVINO's CPU plugin is not the judge:
  * f64: the plugin computes f64 in f32; the oracle (exact sums, rounded once) judges.
  * integer sums that overflow: the plugin saturates, the spec's arithmetic in the element type
    and OpenVINO's reference wrap; the reference judges where it has the type (ReduceMean and
    ReduceL1 on i32/i64), the oracle elsewhere.
  * ReduceL2 of integers: no reference; the plugin's integer squares saturate. Small values are
    checked against the plugin, the extremes against the oracle.
  * ReduceL2 of f32 values whose squares overflow or underflow f32: the plugin answers inf or 0,
    irscatter the norm itself (see reduce.py); the oracle judges.
"""

import functools

import harness
import ml_dtypes
import numpy as np
import pytest
from harness import Case, Input
from helpers import element_dtypes
from oracles import reduction as oracle

OPS = {
    "ReduceMean": (oracle.reduce_mean, "opset1"),
    "ReduceL1": (oracle.reduce_l1, "opset4"),
    "ReduceL2": (oracle.reduce_l2, "opset4"),
}
FLOATS = element_dtypes("f32", "f16", "bf16")
INTS = element_dtypes("i32", "i64", "i8", "u8")


def _axes_for(rng, rank):
    if rank == 0:
        return [[], [0], [-1]][int(rng.integers(0, 3))]
    k = int(rng.integers(0, rank + 1))
    axes = [int(a) for a in rng.choice(rank, k, replace=False)]
    return [a - rank if rng.random() < 0.3 else a for a in axes]


def _case(op, tag, data, axes, keep, *, ulps=0, atol=0, openvino="cpu", why="", axes_const=True):
    fn, opset = OPS[op] if op in OPS else (LOGICAL[op], "opset1")
    if not axes and openvino == "cpu":
        openvino, why = "none", "OpenVINO cannot read an empty Const, and its CPU plugin needs constant axes"
    if data.ndim == 0 and axes and openvino == "cpu":
        openvino, why = "none", "the CPU plugin refuses axis 0 of a scalar, which the core ops accept"
    return Case(f"{op}-{tag}-{'x'.join(map(str, data.shape)) or 'scalar'}-ax{axes}-keep{int(keep)}", op, opset,
                [Input("data", data), Input("axes", np.array(axes, np.int64), const=axes_const)],
                {"keep_dims": keep}, oracle=functools.partial(fn, keep_dims=keep), ulps=ulps, atol=atol,
                openvino=openvino, why=why)


LOGICAL = {"ReduceLogicalAnd": oracle.reduce_logical_and, "ReduceLogicalOr": oracle.reduce_logical_or}


def _cases():
    rng = np.random.default_rng(20240604)
    cases = []
    for op in OPS:
        for tag, dtype in FLOATS.items():
            for shape in harness.shapes(rng):
                axes, keep = _axes_for(rng, len(shape)), bool(rng.integers(0, 2))
                data = harness.values(rng, shape, dtype, edges=True)
                atol = 1e-6 if op == "ReduceMean" and tag == "f32" else 0
                cases.append(_case(op, tag, data, axes, keep, ulps=4, atol=atol))
        for shape in harness.shapes(rng, ranks=(1, 2, 3), zero=False):
            data = harness.values(rng, shape, np.float64, edges=True)
            cases.append(_case(op, "f64", data, _axes_for(rng, len(shape)), True, ulps=1, openvino="none",
                               why="the CPU plugin computes f64 in f32"))
        for tag, dtype in INTS.items():
            for shape in harness.shapes(rng, ranks=(0, 1, 2, 3, 4)):
                low = 0 if tag == "u8" else -9
                data = harness.values(rng, shape, dtype, low=low, high=9)
                saturates = op == "ReduceL2" and tag in ("i8", "u8")
                cases.append(_case(op, tag, data, _axes_for(rng, len(shape)), bool(rng.integers(0, 2)),
                                   openvino="none" if saturates else "cpu",
                                   why="the CPU plugin saturates 8-bit sums of squares"))
            if op == "ReduceL2" and tag == "i64":
                continue  # beyond 2^53 the f64 square root is not the exact integer root (see reduce.py)
            # the integer extremes: sums that overflow
            data = harness.values(rng, (3, 4), dtype, edges=True, low=np.iinfo(dtype).min, high=np.iinfo(dtype).max)
            reference = op in ("ReduceMean", "ReduceL1") and tag in ("i32", "i64")
            cases.append(_case(op, f"{tag}-extremes", data, [1], False,
                               openvino="reference" if reference else "none",
                               why="the CPU plugin saturates integer sums; the spec's arithmetic wraps"))
        # axes fed at run time rather than as a constant
        cases.append(_case(op, "f32-runtime-axes", harness.values(rng, (2, 3, 4), np.float32), [0, 2], True,
                           ulps=4, atol=1e-6, axes_const=False, openvino="reference",
                           why="the CPU plugin needs constant axes"))
    # ReduceMean of integers truncates toward zero; the mean of nothing is 0
    cases.append(_case("ReduceMean", "trunc", np.array([[1, 2], [-3, -4], [5, 6], [7, -8]], np.int32), [1], False))
    cases.append(_case("ReduceMean", "empty", np.zeros((3, 0), np.float32), [1], False))
    cases.append(_case("ReduceMean", "empty-int", np.zeros((3, 0), np.int32), [1], True))
    cases.append(_case("ReduceMean", "f16-big", np.full((2, 8), 60000, np.float16), [1], False, ulps=1))
    # ReduceL1/L2 with no axes give |x|
    cases.append(_case("ReduceL1", "noaxes", np.array([-3, 2, -0.0, np.inf, -np.inf], np.float32), [], False))
    cases.append(_case("ReduceL2", "noaxes", np.array([-3, 2, -0.0, np.inf, -np.inf, np.nan], np.float32), [], False))
    # ReduceL2 without needless overflow: f16 computes in f32; f32 and bf16 scale each slice
    cases.append(_case("ReduceL2", "f16-big", np.array([[3e3, 4e3], [3e-5, 4e-5], [6e4, 6e4]], np.float16), [1],
                       False, ulps=1))
    for tag, dtype in (("f32", np.float32), ("bf16", ml_dtypes.bfloat16)):
        big = np.array([[3e20, 4e20], [3e-25, 4e-25], [3e38, 3e38], [1e-45, 0]], np.float32).astype(dtype)
        cases.append(_case("ReduceL2", f"{tag}-big", big, [1], True, ulps=1, openvino="none",
                           why="the CPU plugin squares in f32 and overflows (inf) or underflows (0)"))
    cases.append(_case("ReduceL2", "i8-small", np.array([[3, 4], [-5, 2], [0, 0]], np.int8), [1], False))
    for op in LOGICAL:
        for shape in harness.shapes(rng):
            data = harness.values(rng, shape, bool)
            cases.append(_case(op, "bool", data, _axes_for(rng, len(shape)), bool(rng.integers(0, 2))))
        cases.append(_case(op, "empty", np.zeros((2, 0, 3), bool), [1], False))
    # refusals
    f32 = np.ones((2, 3), np.float32)
    for op in OPS:
        cases.append(Case(f"{op}-bool", op, OPS[op][1], [Input("data", np.ones((2, 3), bool)),
                          Input("axes", np.array([1]), const=True)], error="numeric-type"))
        cases.append(Case(f"{op}-axes-f32", op, OPS[op][1], [Input("data", f32),
                          Input("axes", np.array([1.0], np.float32), const=True)], error="axes-type"))
        cases.append(Case(f"{op}-axes-2d", op, OPS[op][1], [Input("data", f32),
                          Input("axes", np.array([[1]]), const=True)], error="axes-rank"))
        cases.append(Case(f"{op}-axes-range", op, OPS[op][1], [Input("data", f32),
                          Input("axes", np.array([2]), const=True)], error="axis-range"))
    for op in LOGICAL:
        cases.append(Case(f"{op}-f32", op, "opset1", [Input("data", f32), Input("axes", np.array([1]), const=True)],
                          error="boolean-type"))
        cases.append(Case(f"{op}-u8", op, "opset1", [Input("data", np.ones((2, 3), np.uint8)),
                          Input("axes", np.array([1]), const=True)], error="boolean-type"))
    return cases


CASES = _cases()


@pytest.mark.parametrize("case", CASES, ids=str)
def test_reduction(case):
    harness.check(case, CASES)


@pytest.mark.parametrize("dtype", [np.float16, np.float32])
@pytest.mark.parametrize("op", ["ReduceMean", "ReduceL2", "ReduceSum"])
def test_reductions_of_large_values_do_not_overflow_on_the_way(op, dtype):
    """Partial sums and squares of large f16 values pass f16's maximum (65504) though the mean, the
    norm and the sum themselves do not: the work runs in f32 and rounds once."""
    from harness import run_irscatter

    row = [6e4, 6e4, -6e4, -6e4] if op == "ReduceSum" else [6e4, 5e4, 6e4, 5e4] if op == "ReduceMean" else [1e4] * 4
    x = np.tile(np.array(row, dtype), 16).reshape(4, 16)
    case = Case(f"{op}-large-{np.dtype(dtype)}", op, "opset4" if op == "ReduceL2" else "opset1",
                [Input("data", x), Input("axes", np.array([1], np.int64), const=True)], attrs={"keep_dims": False})
    (got,) = run_irscatter(case)
    wide = x.astype(np.float64)
    want = {"ReduceMean": wide.mean(axis=1), "ReduceSum": wide.sum(axis=1),
            "ReduceL2": np.sqrt((wide * wide).sum(axis=1))}[op].astype(dtype)
    assert np.isfinite(got).all()
    np.testing.assert_array_equal(got, want)
