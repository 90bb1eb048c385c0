"""AdaptiveAvgPool-8 and AdaptiveMaxPool-8 against OpenVINO's CPU plugin and the oracles
`oracles.pooling.adaptive_avg_pool` and `adaptive_max_pool`.

Tolerance: AdaptiveMaxPool exact; AdaptiveAvgPool 1 ulp of the output type against the oracle
(exact sums, one rounding), with finite test values multiples of 1/16 so that irscatter's f32
sums are exact as well. Output sizes below, equal to and above the input's (overlapping bins),
over 1, 2 and 3 spatial axes, in f32, f16, bf16 and f64, with edge values (NaN, +-inf, -0.0).
"""

import harness
import numpy as np
import pytest
from harness import Case, Input
from helpers import element_dtypes
from oracles.pooling import adaptive_avg_pool, adaptive_max_pool

TYPES = element_dtypes("f32", "f16", "bf16", "f64")


def _values(rng, shape, dtype, edges):
    wide = harness.values(rng, shape, dtype, edges=edges, low=-8, high=8).astype(np.float64)
    finite = np.isfinite(wide) & (np.abs(wide) > 1e-30)
    return np.where(finite, np.round(wide * 16) / 16, wide).astype(dtype)


def _avg(name, data, sizes, size_type=np.int64, **judge):
    return Case(name, "AdaptiveAvgPool", "opset8",
                [Input("data", data), Input("output_size", np.array(sizes, size_type), const=True)],
                oracle=adaptive_avg_pool, ulps=1, **judge)


def _max(name, data, sizes, index_type="i32", **judge):
    def oracle(x, size):
        values, indices = adaptive_max_pool(x, size)
        return values, indices.astype(np.int32 if index_type == "i32" else np.int64)

    if index_type == "i64" and "openvino" not in judge:
        judge = {"openvino": "none", "why": "the CPU plugin has no i64 indices, the reference no AdaptiveMaxPool"}
    return Case(name, "AdaptiveMaxPool", "opset8",
                [Input("data", data), Input("output_size", np.array(sizes, np.int32), const=True)],
                {"index_element_type": index_type}, oracle=oracle, **judge)


def _cases():
    rng = np.random.default_rng(8)
    cases = []
    for tag, dtype in TYPES.items():
        judge = {"openvino": "none", "why": "the CPU plugin computes f64 in f32"} if tag == "f64" else {}
        for k in range(6):
            rank = 1 + k % 3
            shape = (int(rng.integers(1, 3)), int(rng.integers(1, 4))) + tuple(int(d) for d in rng.integers(1, 8, rank))
            sizes = [int(rng.integers(1, 2 * d + 1)) for d in shape[2:]]
            edges = k % 2 == 0
            cases.append(_avg(f"adaptiveavg-{tag}-{k}-{'x'.join(map(str, shape))}-to-{'x'.join(map(str, sizes))}",
                              _values(rng, shape, dtype, edges), sizes, np.int32 if k % 2 else np.int64, **judge))
            cases.append(_max(f"adaptivemax-{tag}-{k}-{'x'.join(map(str, shape))}-to-{'x'.join(map(str, sizes))}",
                              _values(rng, shape, dtype, edges), sizes, "i64" if k == 5 else "i32", **judge))
    # NaN: a bin's NaN first element wins, other NaNs are passed over (a NaN starting a row included)
    n = np.nan
    x = np.array([[[[n, 1, 2, 3], [n, n, 5, 0], [1, n, n, n], [n, 9, n, n]]]], np.float32)
    cases.append(_max("adaptivemax-nan-rows", x, [2, 2]))
    cases.append(_max("adaptivemax-nan-rows-overlap", x, [3, 3]))
    cube = np.array([[[[[1, 2], [3, 4]], [[n, 7], [8, 0]]]]], np.float32)  # [1, 1, 2, 2, 2]
    cases.append(_max("adaptivemax-nan-plane", cube, [1, 1, 1]))
    cases.append(_max("adaptivemax-ties", np.array([[[0.0, -0.0, -0.0, 0.0, -np.inf, -np.inf]]], np.float32), [3]))
    cases.append(_avg("adaptiveavg-spec-example", np.arange(2 * 3 * 32 * 32, dtype=np.float32).reshape(2, 3, 32, 32)
                      / 64, [16, 16]))
    cases.append(_avg("adaptiveavg-zero-bins", np.ones((1, 1, 3), np.float32), [0],
                      openvino="none", why="the CPU plugin does not produce zero-sized outputs"))
    one = np.ones((1, 1, 4), np.float32)
    refusals = [
        ("size-type", one, np.array([2], np.float32), "output-size-type"),
        ("size-rank", one, np.array([[2]], np.int64), "output-size-shape"),
        ("size-count", one, np.array([2, 2], np.int64), "output-size-shape"),
        ("size-negative", one, np.array([-1], np.int64), "output-size-value"),
        ("empty-axis", np.ones((1, 1, 0), np.float32), np.array([2], np.int64), "output-size-value"),
        ("rank", np.ones((1, 4), np.float32), np.array([2], np.int64), "data-rank"),
        ("integer", one.astype(np.int32), np.array([2], np.int64), "float-type"),
    ]
    for name, data, size, label in refusals:
        for op in ("AdaptiveAvgPool", "AdaptiveMaxPool"):
            cases.append(Case(f"{op.lower()}-refuses-{name}", op, "opset8",
                              [Input("data", data), Input("output_size", size, const=True)], error=label))
    cases.append(Case("adaptivemaxpool-refuses-index-type", "AdaptiveMaxPool", "opset8",
                      [Input("data", one), Input("output_size", np.array([2]), const=True)],
                      {"index_element_type": "u8"}, error="attributes"))
    return cases


CASES = _cases()


@pytest.mark.parametrize("case", CASES, ids=str)
def test_adaptive_pool(case):
    harness.check(case, CASES)


def _adaptive(type_name):
    from irscatter.ops import registry

    return registry.resolve(type_name, "opset8").cls


@pytest.mark.parametrize("type_name", ["AdaptiveAvgPool", "AdaptiveMaxPool"])
def test_an_empty_batch_makes_no_bin_tables(type_name):
    """No batch: an empty output, made without the bin tables, which grow with the spatial
    output alone (500^3 int64 would be 1 GB)."""
    from irscatter import limits
    from irscatter.ops.functional import call

    with limits.using(tensor_bytes=1_000_000):
        out = call(_adaptive(type_name), [np.zeros((0, 2, 2, 2, 2), np.float32), np.array([500] * 3, np.int32)], {})
    outs = out if isinstance(out, tuple) else (out,)
    assert all(o.shape == (0, 2, 500, 500, 500) for o in outs)


@pytest.mark.parametrize("type_name", ["AdaptiveAvgPool", "AdaptiveMaxPool"])
def test_a_partial_result_past_the_limit_is_refused(type_name):
    """Binning one axis up while the next stays long makes a partial result larger than both the
    input and the output: held to the limit, refused with the limit's label."""
    from irscatter import limits
    from irscatter.errors import ExecutionError
    from irscatter.ops.functional import call

    with limits.using(tensor_bytes=1_000_000), pytest.raises(ExecutionError) as info:
        call(_adaptive(type_name), [np.zeros((1, 1, 1, 1000), np.float32), np.array([1000, 1], np.int32)], {})
    assert info.value.label == "tensor-limit"
