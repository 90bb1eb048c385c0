"""MaxPool-1, MaxPool-8 and MaxPool-14 against OpenVINO's CPU plugin and `oracles.pooling.max_pool`.

Tolerance: exact (a maximum is one of the inputs). Random windows over 1, 2 and 3 spatial axes
with every rounding type, auto_pad, dilations, strides above the kernel, axis and index type of
each version, in f32, f16, bf16, f64 and integer types, with edge values (NaN, +-inf, -0.0,
integer extremes). Where a window's largest value is -inf or the type's lowest value, OpenVINO
answers its lowest finite value and the channel's first index (see max_pool.py); those cases,
found by running the oracle in both ways, are judged by the oracle alone.
"""

import harness
import numpy as np
import pytest
from harness import Case, Input
from helpers import element_dtypes
from oracles.pooling import max_pool, pool_geometry

TYPES = element_dtypes("f32", "f16", "bf16", "f64", "i32", "i8", "u8", "i64")
ROUNDINGS = {1: ("floor", "ceil"), 8: ("floor", "ceil"), 14: ("floor", "ceil", "ceil_torch")}
AUTO_PADS = ("explicit", "same_upper", "same_lower", "valid")


def _judge(tag, version, edges):
    if tag == "f64":
        return {"openvino": "none", "why": "the CPU plugin computes f64 in f32"}
    if tag == "bf16" and version > 1:
        return {"openvino": "none", "why": "the CPU plugin has no bf16 MaxPool with indices, the reference no bf16"}
    if tag == "i64" or (tag == "i32" and edges):
        return {"openvino": "reference", "why": "the CPU plugin computes i64 in i32 and i32 in f32"}
    return {}


def _draw(rng, version, spatial_rank):
    """Attributes and a data shape whose windows fit the padded input."""
    while True:
        kernel = [int(k) for k in rng.integers(1, 4, spatial_rank)]
        strides = [int(s) for s in rng.integers(1, 4, spatial_rank)]
        dilations = [int(d) for d in rng.integers(1, 3, spatial_rank)] if version > 1 else [1] * spatial_rank
        pads_begin = [int(p) for p in rng.integers(0, 3, spatial_rank)]
        pads_end = [int(p) for p in rng.integers(0, 3, spatial_rank)]
        rounding = str(rng.choice(ROUNDINGS[version]))
        auto_pad = str(rng.choice(AUTO_PADS))
        shape = (int(rng.integers(1, 3)), int(rng.integers(1, 4))) + tuple(int(d) for d in rng.integers(1, 7, spatial_rank))
        spans = [(k - 1) * d + 1 for k, d in zip(kernel, dilations)]
        geometry = pool_geometry(shape[2:], kernel, strides, dilations, pads_begin, pads_end, auto_pad, rounding)
        if all(span <= size + b + e for span, size, (b, e, _) in zip(spans, shape[2:], geometry)):
            return shape, dict(strides=strides, pads_begin=pads_begin, pads_end=pads_end, kernel=kernel,
                               rounding_type=rounding, auto_pad=auto_pad), dilations


def _case(name, version, data, attrs, dilations, axis=0, index_type="i64", **judge):
    attrs = dict(attrs)
    oracle_args = dict(kernel=attrs["kernel"], strides=attrs["strides"], pads_begin=attrs["pads_begin"],
                       pads_end=attrs["pads_end"], dilations=dilations, rounding=attrs.get("rounding_type", "floor"),
                       auto_pad=attrs.get("auto_pad", "explicit"), axis=axis)
    if version > 1:
        attrs.update(dilations=dilations, index_element_type=index_type, axis=axis)
    spec = max_pool(data, **oracle_args)
    theirs = max_pool(data, **oracle_args, openvino=True)
    if judge.get("openvino") != "none" and any(not np.array_equal(a, b, equal_nan=True) for a, b in zip(spec, theirs)):
        judge = {**judge, "openvino": "none",
                 "why": "a window's largest value is -inf or the type's lowest: OpenVINO answers its lowest "
                        "finite value and index 0 (max_pool.py)"}

    def oracle(x):
        values, indices = max_pool(x, **oracle_args)
        return values if version == 1 else (values, indices.astype(np.dtype(index_type.replace("i", "int"))))

    return Case(name, "MaxPool", f"opset{version}", [Input("data", data)], attrs, oracle=oracle, **judge)


def _cases():
    rng = np.random.default_rng(14)
    cases = []
    for version in (1, 8, 14):
        for tag, dtype in TYPES.items():
            for k in range(6):
                spatial_rank = 1 + k % 3
                shape, attrs, dilations = _draw(rng, version, spatial_rank)
                data = harness.values(rng, shape, dtype, edges=k % 2 == 0, low=-8, high=8)
                judge = _judge(tag, version, edges=k % 2 == 0)
                rank = len(shape)
                axis = int(rng.integers(-rank, rank)) if version > 1 else 0
                index_type = str(rng.choice(["i32", "i64"]))
                cases.append(_case(f"maxpool{version}-{tag}-{k}-{'x'.join(map(str, shape))}-{attrs['auto_pad']}-"
                                   f"{attrs['rounding_type']}", version, data, attrs, dilations, axis, index_type,
                                   **judge))
    base = dict(strides=[1, 1], pads_begin=[1, 1], pads_end=[1, 1], kernel=[2, 2])
    x = np.array([[[[-1, 2, 3], [4, 5, -6], [-7, 8, 9]]]], np.float32)
    # ties: the first of equal values wins, -0.0 and 0.0 included
    ties = np.array([[[0.0, -0.0, -0.0, 0.0, 3, 3, np.nan, 3]]], np.float32)
    for version in (1, 8, 14):
        cases.append(_case(f"maxpool{version}-ties", version, ties, dict(strides=[1], pads_begin=[0], pads_end=[0],
                                                                         kernel=[2]), [1]))
        cases.append(_case(f"maxpool{version}-spec-example-1", version, x, base, [1, 1]))
    # a window entirely in padding (ceil rounding), and all-NaN and all -inf windows: -inf by the spec
    edge = np.array([[[np.nan, np.nan, -np.inf, -np.inf, 1]]], np.float32)
    cases.append(_case("maxpool8-empty-windows", 8, edge, dict(strides=[3], pads_begin=[0], pads_end=[2], kernel=[2],
                                                               rounding_type="ceil"), [1]))
    # a zero-sized spatial axis with padding around it
    cases.append(_case("maxpool14-empty-axis", 14, np.zeros((1, 2, 0), np.float32),
                       dict(strides=[1], pads_begin=[1], pads_end=[1], kernel=[2]), [1],
                       openvino="none", why="the CPU plugin does not take a zero-sized input"))
    # every window starting in the end padding is dropped by ceil_torch, kept by ceil
    y = np.arange(1, 10, dtype=np.float32).reshape(1, 1, 3, 3)
    for rounding in ("ceil", "ceil_torch"):
        cases.append(_case(f"maxpool14-{rounding}", 14, y, dict(strides=[2, 2], pads_begin=[1, 1], pads_end=[1, 1],
                                                                kernel=[2, 2], rounding_type=rounding), [1, 1]))
    # refusals
    ok = dict(strides=[1], pads_begin=[0], pads_end=[0], kernel=[2])
    one = np.zeros((1, 1, 4), np.float32)
    refusals = [
        ("rank", 8, np.zeros((1, 4), np.float32), ok, "data-rank"),
        ("kernel-size", 8, one, {**ok, "kernel": [2, 2]}, "pool-attribute-size"),
        ("strides-size", 1, one, {**ok, "strides": [1, 1]}, "pool-attribute-size"),
        ("dilations-size", 8, one, {**ok, "dilations": [1, 1]}, "pool-attribute-size"),
        ("pads-size", 14, one, {**ok, "pads_end": [0, 0]}, "pool-attribute-size"),
        ("kernel-zero", 1, one, {**ok, "kernel": [0]}, "pool-attribute-value"),
        ("stride-zero", 8, one, {**ok, "strides": [0]}, "pool-attribute-value"),
        ("dilation-zero", 14, one, {**ok, "dilations": [0]}, "pool-attribute-value"),
        ("pad-negative", 8, one, {**ok, "pads_begin": [-1]}, "pool-attribute-value"),
        ("window", 8, one, {**ok, "kernel": [3], "dilations": [2]}, "pool-window-size"),
        ("batch-zero", 8, np.zeros((0, 1, 4), np.float32), ok, "pool-empty-batch"),
        ("channel-zero", 1, np.zeros((1, 0, 4), np.float32), ok, "pool-empty-batch"),
        ("axis", 8, one, {**ok, "axis": 3}, "axis-range"),
        ("boolean", 8, one > 0, ok, "numeric-type"),
        ("ceil-torch-v8", 8, one, {**ok, "rounding_type": "ceil_torch"}, "attributes"),
        ("index-type", 14, one, {**ok, "index_element_type": "f32"}, "attributes"),
        ("auto-pad", 1, one, {**ok, "auto_pad": "sometimes"}, "attributes"),
        ("kernel-missing", 1, one, {k: v for k, v in ok.items() if k != "kernel"}, "attributes"),
    ]
    for name, version, data, attrs, label in refusals:
        cases.append(Case(f"maxpool{version}-refuses-{name}", "MaxPool", f"opset{version}", [Input("data", data)],
                          attrs, error=label))
    return cases


CASES = _cases()


@pytest.mark.parametrize("case", CASES, ids=str)
def test_max_pool(case):
    harness.check(case, CASES)
