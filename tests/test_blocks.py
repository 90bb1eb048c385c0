"""Element-wise kernels run by blocks and parts (ops/common/blocks.py) give the bits of one
whole-array call: every kernel of the element-wise tables, on every element type it takes."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from helpers import element_dtypes

from irscatter.ir.element_types import ElementType
from irscatter.ops.activation import elementwise as activations  # noqa: F401  (registers its rows)
from irscatter.ops.common import blocks, threads
from irscatter.ops.elementwise.table import ACCEPTS
from irscatter.ops.elementwise.unary import UnaryElementwise

TYPES = element_dtypes("f64", "f32", "f16", "bf16", "i64", "i32", "u8", "boolean")
# Attribute values for the rows that take some; the kernels' own defaults elsewhere.
ATTRIBUTES = {"Elu": [{"alpha": 0.5}], "Clamp": [{"min": -1.5, "max": 2.5}],
              "Round": [{"mode": "half_away_from_zero"}, {"mode": "half_to_even"}],
              "IsInf": [{"detect_negative": True, "detect_positive": False}],
              "Gelu": [{"approximation_mode": "erf"}, {"approximation_mode": "tanh"}]}
BLOCK = 1024  # the tests' block: small arrays go by blocks and parts
SIZE = 3 * BLOCK + 7  # several blocks, and a tail shorter than a block
EDGES = [0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 1e-30, -1e-30, 1e30, -1e30, np.inf, -np.inf, np.nan, 20.0, 11.0, 88.7]


def _rows() -> list:
    found, stack = [], list(UnaryElementwise.__subclasses__())
    while stack:
        cls = stack.pop()
        stack.extend(cls.__subclasses__())
        if hasattr(cls, "row"):  # (not the bases that only share a compute, as Gelu's versions do)
            found.append(cls.row)
    return sorted({(row.type_name, row.version): row for row in found}.values(), key=lambda r: (r.type_name, r.version))


def _cases():
    for row, (name, scalar) in itertools.product(_rows(), TYPES.items()):
        if not ACCEPTS[row.accepts][0](ElementType(name)):
            continue
        wanted = ATTRIBUTES.get(row.type_name, [{}]) if row.attrs is not None else [{}]
        for attributes in wanted:
            title = "-".join(str(v) for v in attributes.values())
            yield pytest.param(row, np.dtype(scalar), attributes, id=f"{row.type_name}-{row.version}-{name}-{title}")


def _values(dtype: np.dtype) -> np.ndarray:
    generator = np.random.default_rng(5)
    if dtype == np.bool_:
        return generator.random(SIZE) < 0.5
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return generator.integers(info.min, info.max, SIZE, dtype=dtype, endpoint=True)
    with np.errstate(over="ignore"):
        values = (generator.standard_normal(SIZE) * 4).astype(dtype)
        values[:len(EDGES)] = np.asarray(EDGES).astype(dtype)
        values[-len(EDGES):] = np.asarray(EDGES).astype(dtype)
    return values


def _same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    """The same bits, any NaN matching any NaN: numpy's loops do not keep a NaN's sign and
    payload the same between their vector loop and their tail, so neither does a cut."""
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    if a.dtype.kind == "f" or a.dtype.name == "bfloat16":
        nan = np.isnan(a.astype(np.float64))
        if not np.array_equal(nan, np.isnan(b.astype(np.float64))):
            return False
        a, b = np.where(nan, 0, a), np.where(nan, 0, b)
    return a.tobytes() == b.tobytes()


@pytest.mark.parametrize(("row", "dtype", "attributes"), list(_cases()))
def test_blocks_give_the_whole_calls_bits(row, dtype, attributes, monkeypatch):
    x = _values(dtype).reshape(1, SIZE)
    before = x.copy()
    monkeypatch.setattr(blocks, "SMALLEST", SIZE + 1)
    whole = np.asarray(row.kernel(x, **attributes))
    # blocks, and a part per core, on an array this small
    monkeypatch.setattr(blocks, "BLOCK", BLOCK)
    monkeypatch.setattr(blocks, "SMALLEST", BLOCK)
    monkeypatch.setattr(blocks, "ELEMENT_WORK", threads.SPLIT_WORK)
    monkeypatch.setattr(threads, "_policy", "split")
    blocked = row.kernel(x, **attributes)
    assert _same_bits(blocked, whole)
    assert _same_bits(x, before)  # the input is never written


@pytest.mark.parametrize("shape", [(), (0,), (3, 0, 2), (5,), (2, 3, 4, 5, 6)])
def test_small_and_empty_arrays_are_one_call(shape):
    x = np.linspace(-3, 3, int(np.prod(shape))).astype(np.float32).reshape(shape)
    calls = []

    def kernel(a: np.ndarray) -> np.ndarray:
        calls.append(a.shape)
        return np.tanh(a)

    out = blocks.elementwise(kernel, x)
    assert calls == [shape] and _same_bits(out, np.tanh(x))


def test_a_large_array_goes_by_blocks_and_keeps_its_shape():
    x = np.random.default_rng(1).standard_normal((3, 5, blocks.BLOCK + 7)).astype(np.float32)
    sizes = []

    def kernel(a: np.ndarray) -> np.ndarray:
        sizes.append(a.size)
        return np.exp(a)

    out = blocks.elementwise(kernel, x)
    assert _same_bits(out, np.exp(x))
    assert max(sizes) == blocks.BLOCK and sum(sizes) == x.size


def test_a_strided_view_is_one_call():
    x = np.random.default_rng(2).standard_normal((blocks.SMALLEST, 2)).astype(np.float32).T
    out = blocks.elementwise(np.exp, x)
    assert _same_bits(out, np.exp(x))


def test_an_error_in_a_part_reaches_the_caller():
    x = np.zeros(4 * blocks.SMALLEST, np.float32)
    x[-1] = 1

    def kernel(a: np.ndarray) -> np.ndarray:
        if a.any():
            raise ValueError("a one")
        return a

    with pytest.raises(ValueError, match="a one"):
        blocks.elementwise(kernel, x)


def test_parts_see_the_callers_error_state():
    x = np.ones(4 * blocks.SMALLEST, np.float32)
    x[-1] = -1  # in the last part: a helper thread's, with two cores or more
    with np.errstate(all="raise"), pytest.raises(FloatingPointError):
        blocks.elementwise(np.log, x)
    with np.errstate(all="ignore"):
        assert np.isnan(blocks.elementwise(np.log, x)[-1])
