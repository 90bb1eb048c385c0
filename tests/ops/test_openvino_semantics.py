"""Where OpenVINO's spec is silent, irscatter follows OpenVINO's core reference: NaN in every
comparison that picks a value, empty reductions, integer powers with negative exponents and
negative GatherElements indices. Each rule is checked against the core reference (evaluated out
of process) and against a readable per-element oracle; where the CPU plugin departs from the
reference, the test says so and holds irscatter to the reference.
"""

import math

import numpy as np
import pytest
from helpers import oracle, ov_model_of, run_ov, save_ov

import irscatter

ov = pytest.importorskip("openvino")
import openvino.opset1 as o1  # noqa: E402
import openvino.opset6 as o6  # noqa: E402
import openvino.opset12 as o12  # noqa: E402
import openvino.opset15 as o15  # noqa: E402

NAN, INF = float("nan"), float("inf")


def _param(array, name):
    return o15.parameter(list(array.shape), ov.Type(array.dtype), name=name)


def _both(tmp_path, build, feeds):
    """(irscatter, OpenVINO's core reference) outputs of a model built from named feeds."""
    node = build(*[_param(v, k) for k, v in feeds.items()])
    xml = save_ov(ov_model_of([node], "m"), tmp_path)
    (got,) = irscatter.read_model(xml).run(feeds).values()
    (reference,) = oracle().evaluate(xml, feeds)
    return got, reference


def _same(a, b):
    return a.shape == b.shape and np.array_equal(a, b, equal_nan=True)


# --- Maximum / Minimum: std::max(a, b) = a < b ? b : a --------------------------------------------

def _max_oracle(a, b):
    return b if a < b else a


def _min_oracle(a, b):
    return b if b < a else a


@pytest.mark.parametrize("op, oracle_fn", [(o15.maximum, _max_oracle), (o15.minimum, _min_oracle)])
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_maximum_minimum_choose_as_the_reference(tmp_path, op, oracle_fn, dtype):
    values = [NAN, 1.0, -1.0, INF, -INF, 0.0, -0.0]
    a = np.array([x for x in values for _ in values], dtype)
    b = np.array([y for _ in values for y in values], dtype)
    got, reference = _both(tmp_path, op, {"a": a, "b": b})
    want = np.array([oracle_fn(x, y) for x, y in zip(a.tolist(), b.tolist())], dtype)
    assert _same(got, want) and _same(got, reference)
    assert np.signbit(got).tolist() == np.signbit(want).tolist()  # max(-0, 0) keeps the first


def test_the_cpu_plugin_chooses_the_other_operand(tmp_path):
    """A departure of OpenVINO's CPU plugin from its reference, recorded so a change is noticed."""
    a, z = np.array([NAN, 1, -1, INF], np.float32), np.zeros(4, np.float32)
    xml = save_ov(ov_model_of([o15.maximum(_param(a, "a"), _param(z, "z"))]), tmp_path)
    (got,) = irscatter.read_model(xml).run({"a": a, "z": z}).values()
    (plugin,) = run_ov(xml, {"a": a, "z": z})
    assert _same(got, np.array([NAN, 1, 0, INF], np.float32))
    assert _same(plugin, np.array([0, 1, 0, INF], np.float32))


# --- ReduceMax / ReduceMin: NaN never chosen; the start value on an empty axis --------------------

def _reduce_oracle(values, start, better):
    acc = start
    for x in values:
        if better(x, acc):
            acc = x
    return acc


@pytest.mark.parametrize("kind", ["max", "min"])
def test_reductions_skip_nan_as_the_reference(tmp_path, kind):
    rng = np.random.default_rng(3)
    data = rng.choice(np.array([NAN, 1, -1, INF, -INF, 2.5, 0], np.float32), size=(40, 5))
    data[0] = NAN  # a row of NaN only
    op = o1.reduce_max if kind == "max" else o1.reduce_min
    got, reference = _both(tmp_path, lambda x: op(x, o15.constant(np.int64([1]))), {"x": data})
    start = np.finfo(np.float32).min if kind == "max" else INF
    better = (lambda x, acc: x > acc) if kind == "max" else (lambda x, acc: x < acc)
    want = np.array([_reduce_oracle(row, start, better) for row in data.tolist()], np.float32)
    assert _same(got, want) and _same(got, reference)


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int32, np.int64, np.int8, np.uint8])
@pytest.mark.parametrize("kind", ["max", "min"])
def test_empty_reductions_give_the_reference_start_value(tmp_path, dtype, kind):
    data = np.zeros((2, 0, 3), dtype)
    op = o1.reduce_max if kind == "max" else o1.reduce_min
    got, reference = _both(tmp_path, lambda x: op(x, o15.constant(np.int64([1]))), {"x": data})
    assert got.shape == (2, 3) and _same(got, reference)


# --- Power on integers with negative exponents --------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_integer_power_with_negative_exponent_truncates(tmp_path, dtype):
    bases = [2, -2, 1, -1, 3, -3, 7, 1, -1, -1]
    exps = [-1, -1, -3, -3, -2, -1, -5, -8, -8, -7]
    a, b = np.array(bases, dtype), np.array(exps, dtype)
    got, reference = _both(tmp_path, o15.power, {"a": a, "b": b})
    want = np.array([math.trunc(x ** y) for x, y in zip(bases, exps)], dtype)
    assert _same(got, want) and _same(got, reference)


def test_zero_to_a_negative_power_is_an_error(tmp_path):
    a, b = np.array([2, 0], np.int32), np.array([1, -2], np.int32)
    xml = save_ov(ov_model_of([o15.power(_param(a, "a"), _param(b, "b"))]), tmp_path)
    with pytest.raises(irscatter.ExecutionError, match=r"0 to the negative power -2 at \[1\]"):
        irscatter.read_model(xml).run({"a": a, "b": b})


# --- GatherElements-6 with negative indices ------------------------------------------------------------

def test_gather_elements_wraps_negative_indices_as_the_plugin(tmp_path):
    data, idx = np.array([1, 2, 3], np.float32), np.array([-1, 0, -3], np.int32)
    xml = save_ov(ov_model_of([o6.gather_elements(_param(data, "d"), _param(idx, "i"), 0)]), tmp_path)
    (got,) = irscatter.read_model(xml).run({"d": data, "i": idx}).values()
    (plugin,) = run_ov(xml, {"d": data, "i": idx})
    assert got.tolist() == [3, 1, 1] and _same(got, plugin)
    with pytest.raises(irscatter.ExecutionError, match="index -4"):
        irscatter.read_model(xml).run({"d": data, "i": np.array([0, -4, 1], np.int32)})


# --- Scatter max / min with NaN -----------------------------------------------------------------------

def _scatter_oracle(data, indices, updates, fold, start=None):
    out = data.copy()
    if start is not None:
        for i in set(indices.tolist()):
            out[i] = start
    for i, u in zip(indices.tolist(), updates.tolist()):
        out[i] = fold(out[i], u)
    return out


FOLDS = {  # the reference kernels' own expressions
    ("elements12", "max"): lambda acc, u: acc if acc > u else u,
    ("elements12", "min"): lambda acc, u: acc if acc < u else u,
    ("nd15", "max"): lambda acc, u: u if acc < u else acc,
    ("nd15", "min"): lambda acc, u: u if u < acc else acc,
}


@pytest.mark.parametrize("kind, reduction", sorted(FOLDS))
@pytest.mark.parametrize("seed", range(4))
def test_scatter_max_min_with_nan_fold_as_the_reference(tmp_path, kind, reduction, seed):
    rng = np.random.default_rng(seed)
    pool = np.array([NAN, 1, -1, INF, -INF, 2, 0.5], np.float32)
    data = rng.choice(pool, 6)
    indices = rng.integers(0, 6, 30).astype(np.int64)
    updates = rng.choice(pool, 30)
    use_init = kind != "elements12" or seed % 2 == 0
    if kind == "elements12":
        build = lambda d, i, u: o12.scatter_elements_update(d, i, u, o15.constant(np.int64(0)), reduction=reduction,
                                                            use_init_val=use_init)
        feeds = {"d": data, "i": indices, "u": updates}
    else:
        build = lambda d, i, u: o15.scatter_nd_update(d, i, u, reduction=reduction)
        feeds = {"d": data, "i": indices.reshape(-1, 1), "u": updates}
    got, reference = _both(tmp_path, build, feeds)
    start = None if use_init else (np.finfo(np.float32).min if reduction == "max" else np.finfo(np.float32).max)
    want = _scatter_oracle(data, indices, updates, FOLDS[kind, reduction], start).astype(np.float32)
    assert _same(got, want), (data, indices, updates)
    assert _same(got, reference)


def test_scatter_nan_rules_hold_in_the_tiled_kernel(monkeypatch):
    """The tiled path of ScatterElementsUpdate (large data) keeps the same NaN rule. This is
    numpy's tiling (numba, when installed, takes tiled scatters itself, and
    tests/ops/scatter/test_fast_backend.py holds it to the same bits)."""
    from irscatter.ops.common import accel
    from irscatter.ops.scatter import core as scatter_core

    monkeypatch.setenv(accel.ENVIRONMENT_VARIABLE, "numpy")

    rng = np.random.default_rng(11)
    data = rng.standard_normal((64, 33)).astype(np.float32)
    indices = rng.integers(0, 64, (200, 33))
    updates = rng.standard_normal((200, 33)).astype(np.float32)
    updates[rng.random(updates.shape) < 0.1] = NAN
    data[rng.random(data.shape) < 0.1] = NAN
    etype = irscatter.ElementType.f32
    plain = scatter_core.scatter_along_axis(data, indices, updates, 0, "max", etype, incomparable="update")
    calls = []
    real = scatter_core.scatter_rows
    monkeypatch.setattr(scatter_core, "TILE_ELEMENTS", 64 * 16)
    monkeypatch.setattr(scatter_core, "scatter_rows", lambda *a, **k: calls.append(1) or real(*a, **k))
    tiled = scatter_core.scatter_along_axis(data, indices, updates, 0, "max", etype, incomparable="update")
    assert len(calls) == 3  # 33 columns in tiles of 16
    want = data.copy()
    for r in range(200):
        for c in range(33):
            acc, u = want[indices[r, c], c], updates[r, c]
            want[indices[r, c], c] = acc if acc > u else u
    assert _same(plain, want) and _same(tiled, want)


# --- Divide with m_pythondiv on integers ---------------------------------------------------------------

def test_python_division_floors_as_the_spec_where_the_cpu_plugin_truncates(tmp_path):
    """The spec and the core reference floor; OpenVINO's CPU plugin truncates (a departure of
    OpenVINO's, listed in the README). Recorded here so that a change on either side is noticed."""
    a, b = np.array([-7, 7, -7, 7, 6], np.int32), np.array([2, -2, -2, 2, -3], np.int32)
    xml = save_ov(ov_model_of([o1.divide(_param(a, "a"), _param(b, "b"))]), tmp_path)
    assert 'm_pythondiv="true"' in xml.read_text()
    (got,) = irscatter.read_model(xml).run({"a": a, "b": b}).values()
    (reference,) = oracle().evaluate(xml, {"a": a, "b": b})
    (plugin,) = run_ov(xml, {"a": a, "b": b})
    assert got.tolist() == [-4, -4, 3, 3, -2] == reference.tolist()
    assert plugin.tolist() == [-3, -3, 3, 3, -2]


# --- Squeeze-15 leaves an axis that is not 1 in place -------------------------------------------------

@pytest.mark.parametrize("allow_axis_skip", [False, True])
def test_squeeze15_skips_axes_that_are_not_one(tmp_path, allow_axis_skip):
    data = np.arange(6, dtype=np.float32).reshape(1, 3, 1, 2)
    node = o15.squeeze(_param(data, "x"), o15.constant(np.int64([0, 1, -2])), allow_axis_skip)
    xml = save_ov(ov_model_of([node]), tmp_path)
    (got,) = irscatter.read_model(xml).run({"x": data}).values()
    (plugin,) = run_ov(xml, {"x": data})
    assert got.shape == (3, 2) and _same(got, plugin)


@pytest.mark.parametrize("incomparable", ["keep", "update"])
@pytest.mark.parametrize("reduction", ["max", "min"])
def test_scatter_nan_rules_on_rows_of_slices(incomparable, reduction):
    """Rows of several elements (ScatterNDUpdate's slices) fold element by element."""
    from irscatter.ops.scatter.core import scatter_rows

    rng = np.random.default_rng(21)
    pool = np.array([NAN, 1, -1, INF, -INF, 2, 0.5], np.float32)
    out = rng.choice(pool, (5, 3))
    rows = rng.integers(0, 5, 40)
    updates = rng.choice(pool, (40, 3))
    fold = FOLDS["nd15" if incomparable == "keep" else "elements12", reduction]
    want = out.copy()
    for r, u in zip(rows.tolist(), updates.tolist()):
        want[r] = [fold(a, b) for a, b in zip(want[r].tolist(), u)]
    got = out.copy()
    scatter_rows(got, rows, updates, reduction, incomparable=incomparable)
    assert _same(got, want)
