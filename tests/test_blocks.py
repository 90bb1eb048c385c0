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
    assert sizes[0] == blocks.PROBE  # the output's type, from a few elements
    assert max(sizes) == blocks.BLOCK and sum(sizes[1:]) == x.size


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


def _layer(type_name: str, version: str, data: str = "") -> str:
    return f'<layer type="{type_name}" version="{version}">{data}</layer>'


def _cut_everything(monkeypatch) -> None:
    """Every call large enough to split, on every core irscatter has (two parts on one core too)."""
    monkeypatch.setattr(threads, "_policy", "split")
    monkeypatch.setattr(threads, "CORES", max(threads.CORES, 2))
    monkeypatch.setattr(blocks, "ROW_ELEMENT_WORK", threads.SPLIT_WORK)
    monkeypatch.setattr(blocks, "BINARY_ELEMENT_WORK", threads.SPLIT_WORK)
    monkeypatch.setattr(blocks, "BINARY_SMALLEST", 0)


# Row lengths around numpy's summing loop's steps (8 sums side by side, halves from 128 on).
ROW_LENGTHS = [1, 2, 7, 8, 9, 16, 17, 49, 127, 128, 129, 197, 300, 1031]
SOFTMAX_TYPES = element_dtypes("f64", "f32", "f16", "bf16")


@pytest.mark.parametrize("length", ROW_LENGTHS)
@pytest.mark.parametrize("dtype", SOFTMAX_TYPES.values(), ids=list(SOFTMAX_TYPES))
@pytest.mark.parametrize(("type_name", "version"), [("Softmax", "opset8"), ("LogSoftmax", "opset5")])
def test_softmax_rows_in_parts_give_the_whole_calls_bits(type_name, version, dtype, length, monkeypatch):
    import irscatter

    rng = np.random.default_rng(length)
    x = (rng.standard_normal((3, 7, length)) * 5).astype(dtype)
    x[0, 0, 0], x[0, 1, -1], x[1, 2, 0], x[2, 3, :] = np.nan, np.inf, -np.inf, -np.inf  # rows of NaN
    before = x.copy()
    layer = _layer(type_name, version, '<data axis="-1"/>')
    monkeypatch.setattr(threads, "_policy", "one")
    (whole,) = irscatter.run_layer(layer, [x])
    _cut_everything(monkeypatch)
    (parts,) = irscatter.run_layer(layer, [x])
    assert _same_bits(parts, whole)
    assert _same_bits(x, before)


def test_softmax_splits_into_blocks_of_whole_rows(monkeypatch):
    _cut_everything(monkeypatch)
    seen = []

    def rows(x: np.ndarray, out: np.ndarray) -> None:
        seen.append(x.shape)
        out[...] = x

    x = np.arange(5 * 4 * 6, dtype=np.float32).reshape(5, 4, 6)
    out = np.empty_like(x)
    blocks.by_rows(rows, x, out)
    assert len(seen) == min(threads.CORES, 20) and all(shape[1] == 6 for shape in seen)
    assert sum(shape[0] for shape in seen) == 20 and np.array_equal(out, x)


# (a, b) shapes: equal, one broadcast along the leading axes, a bias along the last axis, a
# per-channel scale, both broadcast, leading axes of one, and a scalar.
BINARY_SHAPES = [((6, 5, 4), (6, 5, 4)), ((1, 9, 8), (8,)), ((2, 3, 4, 5), (1, 3, 1, 1)),
                 ((4, 1), (1, 7)), ((1, 1, 11, 3), (1, 1, 11, 3)), ((7, 3), ()), ((), (7, 3)), ((5,), (5,))]
BINARY_TYPES = element_dtypes("f64", "f32", "f16")


@pytest.mark.parametrize(("a_shape", "b_shape"), BINARY_SHAPES)
@pytest.mark.parametrize("dtype", BINARY_TYPES.values(), ids=list(BINARY_TYPES))
@pytest.mark.parametrize("type_name", ["Add", "Subtract", "Multiply", "Divide"])
def test_binary_arithmetic_in_parts_gives_the_whole_calls_bits(type_name, dtype, a_shape, b_shape, monkeypatch):
    import irscatter

    rng = np.random.default_rng(len(a_shape) * 10 + len(b_shape))
    a = (rng.standard_normal(a_shape) * 3).astype(dtype)
    b = (rng.standard_normal(b_shape) * 3).astype(dtype)
    for x in (a, b):
        flat = x.reshape(-1)
        flat[: min(flat.size, 4)] = np.array([0.0, np.inf, np.nan, -0.0], dtype)[: min(flat.size, 4)]
    before = a.copy(), b.copy()
    layer = _layer(type_name, "opset1")
    monkeypatch.setattr(threads, "_policy", "one")
    with np.errstate(all="ignore"):
        (whole,) = irscatter.run_layer(layer, [a, b])
        _cut_everything(monkeypatch)
        (parts,) = irscatter.run_layer(layer, [a, b])
    assert _same_bits(parts, whole) and parts.shape == np.broadcast_shapes(a_shape, b_shape)
    assert _same_bits(a, before[0]) and _same_bits(b, before[1])


def test_binary_cuts_the_first_long_axis_and_leaves_broadcast_inputs_whole(monkeypatch):
    _cut_everything(monkeypatch)
    seen = []

    def ufunc(a: np.ndarray, b: np.ndarray, out: np.ndarray) -> None:
        seen.append((a.shape, b.shape))
        np.add(a, b, out=out)

    a = np.ones((1, 6, 4), np.float32)
    b = np.arange(4, dtype=np.float32)
    out = blocks.binary(ufunc, a, b)  # type: ignore[arg-type]
    assert np.array_equal(out, a + b)
    assert len(seen) == min(threads.CORES, 6)
    assert all(sa[:1] == (1,) and sa[2] == 4 and sb == (4,) for sa, sb in seen) and sum(sa[1] for sa, _ in seen) == 6


def _extent_strides(x: np.ndarray) -> tuple[int, ...]:
    """x's strides along its axes longer than one (a size-1 axis's stride addresses nothing)."""
    return tuple(stride for stride, extent in zip(x.strides, x.shape) if extent > 1)


def _layouts(base: np.ndarray) -> list[np.ndarray]:
    """Views of `base` laid out otherwise: transposed every way, reversed along the first and
    the last axis, and a Fortran-ordered copy."""
    import itertools

    views = [base.transpose(perm) for perm in itertools.permutations(range(base.ndim))]
    return [*views, base[::-1], base[..., ::-1], np.asfortranarray(base)]


@pytest.mark.parametrize("shape", [(3, 4, 5), (2, 1, 6, 4), (6, 7)], ids=["3d", "4d-one", "2d"])
@pytest.mark.parametrize("type_name", ["Add", "Multiply"])
def test_binary_of_views_in_parts_keeps_numpys_bits_and_layout(type_name, shape, monkeypatch):
    """Inputs that are not C-contiguous (a Transpose's view, a reversed one, Fortran order),
    each with a C-contiguous partner of its shape, a partner laid out another way, a bias
    along its last axis and a scalar: the parts write numpy's bits into an output laid out as
    numpy lays out its own (the layout a later reduction's order follows)."""
    import irscatter

    rng = np.random.default_rng(len(shape))
    layer = _layer(type_name, "opset1")
    base = (rng.standard_normal(shape) * 3).astype(np.float32)
    cases = 0
    for a in _layouts(base):
        partners = [(rng.standard_normal(a.shape) * 3).astype(np.float32), a[..., ::-1].T.copy().T[..., ::-1],
                    (rng.standard_normal(a.shape[-1:]) * 3).astype(np.float32), np.array(2.5, np.float32)]
        for b in partners:
            for x, y in ((a, b), (b, a)):
                before = x.copy(), y.copy()
                monkeypatch.setattr(threads, "_policy", "one")
                (whole,) = irscatter.run_layer(layer, [x, y])
                with monkeypatch.context() as cut:
                    _cut_everything(cut)
                    (parts,) = irscatter.run_layer(layer, [x, y])
                expected = np.add(x, y) if type_name == "Add" else np.multiply(x, y)
                assert _same_bits(parts, whole) and _same_bits(parts, expected)
                assert _extent_strides(parts) == _extent_strides(expected)
                assert _same_bits(x, before[0]) and _same_bits(y, before[1])
                cases += 1
    assert cases == 8 * len(_layouts(base))


def test_binary_cuts_a_view_along_its_outermost_axis_in_memory(monkeypatch):
    _cut_everything(monkeypatch)
    seen = []

    def ufunc(a: np.ndarray, b: np.ndarray, out: np.ndarray) -> None:
        seen.append(out.shape)
        np.add(a, b, out=out)

    a = np.arange(6 * 5 * 4, dtype=np.float32).reshape(6, 5, 4).transpose(2, 0, 1)  # [4, 6, 5], memory [6, 5, 4]
    b = np.arange(5, dtype=np.float32)
    out = blocks.binary(ufunc, a, b)  # type: ignore[arg-type]
    assert np.array_equal(out, a + b) and _extent_strides(out) == _extent_strides(a + b)
    assert len(seen) == min(threads.CORES, 6) and all(shape[::2] == (4, 5) for shape in seen)


def _old_softmax(x: np.ndarray, axis: int) -> np.ndarray:
    """Softmax as numpy lays it out when nothing chooses the layout: x - max makes a new array."""
    e = x - np.maximum.reduce(x, axis=axis, keepdims=True)
    np.exp(e, out=e)
    np.divide(e, np.add.reduce(e, axis=axis, keepdims=True), out=e)
    return e


@pytest.mark.parametrize("axis", [0, 1, 2])
def test_softmax_of_a_strided_view_sums_in_numpys_order(axis, monkeypatch):
    # A Transpose hands on a view; numpy's arithmetic lays its results out as the view is, and a
    # sum runs along that layout, so the layout of the work array decides the last bits.
    from irscatter.ops.activation import softmax

    _cut_everything(monkeypatch)
    x = (np.random.default_rng(9).standard_normal((5, 130, 9)) * 4).astype(np.float32).transpose(2, 0, 1)
    with np.errstate(all="ignore"):
        out = softmax.softmax(x, axis)
        assert _same_bits(out, _old_softmax(x, axis))
    assert out.strides == _old_softmax(x, axis).strides


def test_binary_of_a_strided_view_is_numpys_call():
    a = np.random.default_rng(3).standard_normal((64, 96, 300)).astype(np.float32).transpose(0, 2, 1)
    b = np.random.default_rng(4).standard_normal(96).astype(np.float32)
    out = blocks.binary(np.add, a, b)
    assert _same_bits(out, np.add(a, b)) and out.strides == np.add(a, b).strides
