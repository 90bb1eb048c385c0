"""The index-order path of a min/max element scatter (`core._scatter_in_index_order`), taken when
the indices reach few rows of each fiber: the same bits as the tiles, on every element type, NaN
rule and duplicate pattern, with blocks made small so that one target's updates span several."""

from unittest import mock

import numpy as np
import pytest

from irscatter.ir.element_types import ElementType
from irscatter.ir.graph import Layer
from irscatter.ops.common import accel
from irscatter.ops.scatter import core as scatter_core
from irscatter.ops.scatter.scatter_elements_update import ScatterElementsUpdate12

NAN, INF = np.nan, np.inf
SPECIAL = np.array([NAN, INF, -INF, 0.0, -0.0, 1.0, -1.0])


@pytest.fixture(autouse=True)
def small_blocks():
    """numpy's kernels (numba would take the tiles first), the index-order path taken at any size
    with blocks a few elements long, tiles of one column, and numpy's warnings off as in a run."""
    with accel.use("numpy"), mock.patch.object(scatter_core, "TILE_ELEMENTS", 1), \
            mock.patch.object(scatter_core, "MIN_TILE_WIDTH", 1), mock.patch.object(scatter_core, "BLOCK_ELEMENTS", 3), \
            np.errstate(all="ignore"):
        yield


def _bits(a: np.ndarray) -> bytes:
    return a.view(np.uint8).tobytes()


def _values(rng, shape, dtype):
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return rng.integers(0, 2, shape).astype(bool)
    if dtype.kind in "iu":
        return rng.integers(0 if dtype.kind == "u" else -9, 10, shape).astype(dtype)
    values = rng.integers(-4, 4, shape) / 2  # repeats: ties between equal values
    return np.where(rng.random(shape) < 0.3, rng.choice(SPECIAL, shape), values).astype(dtype)


def _both_paths(data, indices, updates, axis, reduction, **options):
    """(index order, tiles): the same call with and without the indices' reach."""
    etype = ElementType.from_dtype(data.dtype)
    reach = (int(indices.min()), int(indices.max()))
    wrap = reach[0] < 0
    ordered = scatter_core.scatter_along_axis(data, indices, updates, axis, reduction, etype, reach=reach,
                                              wrap_negative=wrap, **options)
    tiled = scatter_core.scatter_along_axis(data, indices, updates, axis, reduction, etype, wrap_negative=wrap,
                                            **options)
    return ordered, tiled


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.uint8, np.bool_])
@pytest.mark.parametrize("reduction", ["max", "min"])
def test_same_bits_as_the_tiles(dtype, reduction):
    """Duplicates, NaN, infinities and zeros of both signs, every NaN rule, use_init_val both
    ways; one fiber (2-D, axis 0), several fibers with negative indices (3-D, axis 1), the last
    axis (rows of one element), and rows longer than a block."""
    rng = np.random.default_rng(7)
    cases = [((5, 4), (30, 4), 0, (1, 4)), ((3, 6, 2), (3, 9, 2), 1, (-6, 6)), ((4, 7), (4, 12), 1, (-2, 3)),
             ((2, 11), (2, 11), 0, (0, 2))]
    rules = ["nan", "keep", "update"] if np.dtype(dtype).kind == "f" else ["nan"]
    with mock.patch.object(scatter_core, "_scatter_in_index_order", wraps=scatter_core._scatter_in_index_order) as taken:
        for shape, index_shape, axis, (low, high) in cases:
            data, updates = _values(rng, shape, dtype), _values(rng, index_shape, dtype)
            indices = rng.integers(low, high, index_shape)
            for incomparable in rules:
                for use_init_val in (True, False):
                    ordered, tiled = _both_paths(data, indices, updates, axis, reduction,
                                                 incomparable=incomparable, use_init_val=use_init_val)
                    assert _bits(ordered) == _bits(tiled), (shape, incomparable, use_init_val)
    assert taken.call_count == len(cases) * len(rules) * 2


@pytest.mark.parametrize("updates, start, want", [
    ([NAN, 1.0, 2.0], 0.5, 2.0),  # a NaN first is replaced by the next update
    ([1.0, 2.0, NAN], 0.5, NAN),  # a NaN last stays
    ([NAN], 0.5, NAN),  # a NaN alone
    ([1.0, 3.0], NAN, 3.0),  # a NaN already there is replaced
    ([0.0], -0.0, 0.0),  # equal values: the update lands
    ([-0.0], 0.0, -0.0),
    ([-0.0, 0.0, -1.0], -0.0, 0.0),
])
def test_scatter_elements_update_12_nan_rule_across_blocks(updates, start, want):
    """ScatterElementsUpdate-12's `acc > update ? acc : update`, one update per block (the blocks
    are three elements, a row of indices is three wide), with the other two columns as controls."""
    op = ScatterElementsUpdate12(Layer(id=1, name="s", type="ScatterElementsUpdate", version="opset12",
                                       attrs={"reduction": "max"}))
    data = np.array([[start, 5.0, 5.0], [7.0, 7.0, 7.0]], np.float32)
    column = np.array(updates, np.float32)[:, None]
    values = np.hstack([column, np.full((len(updates), 2), 6.0, np.float32)])
    indices = np.zeros((len(updates), 3), np.int64)
    indices[:, 2] = -1  # wrapped: the last row
    with mock.patch.object(scatter_core, "_scatter_in_index_order", wraps=scatter_core._scatter_in_index_order) as taken:
        out = op.compute(data, indices, values, np.array(0))
    assert taken.called
    want_out = np.array([[want, 6.0, 5.0], [7.0, 7.0, 7.0]], np.float32)
    assert _bits(out) == _bits(want_out)


def test_use_init_val_false_starts_every_target_from_the_identity_once():
    """Targets reset before the first block only: a later block never resets what an earlier one
    left (and elements no index reaches keep their values)."""
    op = ScatterElementsUpdate12(Layer(id=1, name="s", type="ScatterElementsUpdate", version="opset12",
                                       attrs={"reduction": "min", "use_init_val": "false"}))
    data = np.array([[-9, -9, -9], [4, 4, 4]], np.int32)
    indices = np.array([[0, 0, 1], [0, 1, 1], [0, 1, 1]])
    updates = np.array([[5, 3, 8], [2, 6, 9], [7, 1, 0]], np.int32)
    assert op.compute(data, indices, updates, np.array(0)).tolist() == [[2, 3, -9], [4, 1, 0]]


def test_taken_only_when_the_indices_reach_few_rows():
    reached = scatter_core._few_rows_reached
    limit = scatter_core.REACH_ELEMENTS
    assert reached("max", (10, 10 + limit // 64 - 1), 1 << 30, 64) == slice(10, 10 + limit // 64)
    assert reached("max", (10, 10 + limit // 64), 1 << 30, 64) is None
    assert reached("min", (-1, 0), 5, 2) == slice(0, 5)  # negative and non-negative: both ends of the axis
    assert reached("min", (-1, 0), limit, 2) is None
    assert reached("min", (-3, -1), limit, 2) == slice(limit - 3, limit)
    assert reached("sum", (0, 0), 4, 4) is None and reached("max", None, 4, 4) is None
