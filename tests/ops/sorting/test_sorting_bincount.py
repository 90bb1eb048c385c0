"""Bincount-17 against the page's definition, transcribed in `oracles.sorting.bincount` (a count,
or a sum of weights in their own type, per value in data order), and against numpy's bincount
where the two agree (counts; f64 weights small enough to sum exactly).

The pinned OpenVINO does not ship Bincount (a draft of opset17), so no case is judged by it; its
newer core reference counts the same way and refuses negative values, as irscatter does.

Covered: data i32, i64, u8, u16, u32, u64; no weights and weights f32, f64, i32, i64 (f32 sums
rounding at each step, i32 sums wrapping, NaN and inf weights); minlength 0, below, at and above
max + 1; empty data; data as a Const (the length known to inference) and as a Parameter (a
dynamic length). Errors: negative data (negative-value), data and weights of the wrong types,
ranks and lengths (data-type, weights-type, data-rank, weights-length), a negative minlength
(attributes), a value whose output would pass the tensor limits (tensor-limit).
"""

from __future__ import annotations

from functools import partial

import harness
import numpy as np
import pytest
from harness import Case, Input
from helpers import layer, net, param, port, result, write
from oracles import sorting as oracle

import irscatter
from irscatter.ir.element_types import ElementType
from irscatter.ir.shapes import Dimension, PartialShape
from irscatter.ops import registry
from irscatter.ops.base import TensorInfo
from irscatter.ops.functional import make_op

WHY = "OpenVINO 2026.4.1 does not ship Bincount (a draft of opset17): the page's definition judges"
DATA_TYPES = [np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64]
WEIGHT_TYPES = [np.float32, np.float64, np.int32, np.int64]


def _case(cid, data, weights=None, minlength=None, *, error=None, const=False):
    inputs = [Input("data", data, const=const)] + ([] if weights is None else [Input("weights", weights)])
    attrs = {} if minlength is None else {"minlength": minlength}
    return Case(cid, "Bincount", "opset17", inputs, attrs, oracle=partial(oracle.bincount, minlength=minlength or 0),
                openvino="none", why=WHY, error=error)


def _cases() -> list[Case]:
    rng = np.random.default_rng(17)
    out = []
    for k, t in enumerate(DATA_TYPES):
        data = rng.integers(0, 9, 12).astype(t)
        out.append(_case(f"{np.dtype(t).name}", data, minlength=[None, 0, 5, 20][k % 4], const=k % 2 == 0))
        w = WEIGHT_TYPES[k % len(WEIGHT_TYPES)]
        out.append(_case(f"{np.dtype(t).name}-weights-{np.dtype(w).name}", data,
                         rng.integers(-50, 50, 12).astype(w) / (4 if np.dtype(w).kind == "f" else 1), minlength=3))
    i32, f32 = np.int32, np.float32
    out += [
        _case("empty", np.zeros(0, i32)),
        _case("empty-minlength", np.zeros(0, np.uint8), minlength=4, const=True),
        _case("empty-weighted", np.zeros(0, i32), np.zeros(0, np.float64), minlength=2),
        _case("minlength-at-max", np.array([0, 4, 4], i32), minlength=5),
        _case("f32-steps-round", np.zeros(4, i32), np.array([1e8, 1, 1, 1], f32)),
        _case("i32-wraps", np.array([1, 1], i32), np.array([2**31 - 1, 2], i32)),
        _case("nan-and-inf", np.array([0, 0, 1, 1], i32), np.array([np.nan, 1, np.inf, -np.inf], f32)),
        _case("u64-large", np.array([2000, 3], np.uint64), np.array([1.5, 2.5], np.float64)),
        _case("negative", np.array([1, -2], i32), error="negative-value"),
        _case("negative-const", np.array([1, -2], np.int64), error="negative-value", const=True),
        _case("i8-data", np.array([1, 2], np.int8), error="data-type"),
        _case("float-data", np.array([1, 2], f32), error="data-type"),
        _case("f16-weights", np.array([1, 2], i32), np.ones(2, np.float16), error="weights-type"),
        _case("2d-data", np.ones((2, 2), i32), error="data-rank"),
        _case("2d-weights", np.ones(2, i32), np.ones((2, 1), f32), error="weights-length"),
        _case("short-weights", np.ones(3, i32), np.ones(2, f32), error="weights-length"),
        _case("negative-minlength", np.ones(2, i32), minlength=-1, error="attributes"),
        _case("huge-value", np.array([2**40], np.int64), error="tensor-limit"),
        _case("huge-value-const", np.array([2**40], np.int64), error="tensor-limit", const=True),
    ]
    return out


CASES = _cases()


@pytest.mark.parametrize("case", CASES, ids=str)
def test_bincount(case):
    harness.check(case, CASES)


def test_agrees_with_numpy_where_the_page_does():
    rng = np.random.default_rng(3)
    data = rng.integers(0, 30, 200).astype(np.uint16)
    weights = rng.integers(-8, 8, 200).astype(np.float64)  # integral: f64 sums are exact in any order
    op = registry.find("Bincount", "opset17")
    assert np.array_equal(harness.run_irscatter(_case("n", data, minlength=40))[0], np.bincount(data, minlength=40))
    got = harness.run_irscatter(_case("w", data, weights))[0]
    assert np.array_equal(got, np.bincount(data, weights)) and op.label() == "Bincount-17"


@pytest.mark.parametrize("etype, dims, minlength, length", [
    (ElementType.u8, [5], 0, Dimension(min=1, max=256)),
    (ElementType.u16, [5], 70000, Dimension(min=70000, max=70000)),
    (ElementType.i32, [-1], 2, Dimension(min=2, max=None)),
    (ElementType.u64, [0], 3, 3),
    (ElementType.i64, None, 4, Dimension(min=4, max=None)),
])
def test_inference_bounds_the_length_it_cannot_know(etype, dims, minlength, length):
    op = make_op(registry.find("Bincount", "opset17"), {"minlength": minlength})
    shape = PartialShape.dynamic_rank() if dims is None else PartialShape.of(dims)
    info = op.infer(TensorInfo(etype, shape))
    assert info.etype is ElementType.i64 and info.shape == PartialShape.of([length])


def _dynamic(tmp_path, weighted: bool):
    """A model whose data (and weights) have a length known only when they are fed."""
    layers, inputs, edges = [param(0, "data", [-1], "i64", "I64")], [port(0, "I64", [-1])], [(0, 0, 2, 0)]
    if weighted:
        layers.append(param(1, "weights", [-1], "f32", "FP32"))
        inputs.append(port(1, "FP32", [-1]))
        edges.append((1, 0, 2, 1))
    precision = "FP32" if weighted else "I64"
    layers += [layer(2, "count", "Bincount", "opset17", data={"minlength": 2}, inputs=inputs,
                     outputs=[port(len(inputs), precision, [-1])]),
               result(3, "out", [-1], precision)]
    edges.append((2, len(inputs), 3, 0))
    return irscatter.read_model(write(tmp_path, net(layers, edges)))


def test_a_length_known_only_when_running(tmp_path):
    model = _dynamic(tmp_path, weighted=True)
    out = model.run({"data": np.array([1, 3, 3], np.int64), "weights": np.array([0.5, 1, 2], np.float32)})
    assert next(iter(out.values())).tolist() == [0, 0.5, 0, 3]
    out = _dynamic(tmp_path, weighted=False).run({"data": np.zeros(0, np.int64)})
    assert next(iter(out.values())).tolist() == [0, 0]  # minlength


@pytest.mark.parametrize("feeds, label, message", [
    ({"data": np.array([1, -2, 3], np.int64)}, "negative-value", r"negative value -2 at \[1\]"),
    ({"data": np.array([2**40], np.int64)}, "tensor-limit", "over the limit"),
    ({"data": np.array([1, 2], np.int64), "weights": np.ones(3, np.float32)}, "weights-length", "as long as data"),
])
def test_what_only_running_can_find_is_refused_with_its_label(tmp_path, feeds, label, message):
    model = _dynamic(tmp_path, weighted="weights" in feeds)
    with pytest.raises(irscatter.IRError, match=message) as caught:
        model.run(feeds)
    assert caught.value.label == label
