"""Scatter ops differential-tested against OpenVINO's CPU plugin on generated models.

One record generator per op version makes seeded `harness.Case`s (ranks 1-5, every
reduction, i32/i64 indices, eight data types, negative indices where the op's version allows
them, duplicates where a reduction defines them); the harness compares irscatter with OpenVINO's
CPU plugin and with the per-element oracle. Where OpenVINO departs from the spec the case is
judged by the oracle alone and says why:

* Integer `mean` in ScatterElementsUpdate-12: the spec floors, the CPU plugin truncates.
* Duplicate indices with reduction `none`: the spec leaves the result undefined, so the
  generator only makes unique indices for `none` (irscatter's last-write rule is tested
  against the oracle in test_scatter_kernels.py).
* 0-D indices in ScatterUpdate-3: allowed by the spec, refused by the CPU plugin ("do not
  support scalar input"): compared with the oracle.
* Negative indices in the version-3 ops: the specs forbid them (irscatter raises; tested in
  test_scatter_kernels.py), so the generator only makes them for versions 12 and 15.
"""

from __future__ import annotations

import numpy as np
import oracles
import pytest
from harness import Case, Input, check
from helpers import cli

import irscatter

pytest.importorskip("openvino")

DATA_TYPES = ["f32", "f16", "bf16", "i32", "i64", "i8", "u8", "boolean"]
ELEMENT_REDUCTIONS = ["none", "sum", "prod", "min", "max", "mean"]
ND_REDUCTIONS = ["none", "sum", "sub", "prod", "min", "max"]
NARROW_FLOATS = ("f16", "bf16")


def _np_dtype(type_name):
    return irscatter.ElementType(type_name).dtype


def _values(rng, shape, type_name):
    if type_name == "boolean":
        return rng.integers(0, 2, shape).astype(bool)
    if type_name == "u8":
        return rng.integers(0, 4, shape).astype(np.uint8)
    if type_name in ("i8", "i32", "i64"):
        return rng.integers(-3, 4, shape).astype(_np_dtype(type_name))
    return np.asarray((rng.integers(-6, 7, shape) / 2)).astype(_np_dtype(type_name))


def _unique_along(rng, shape, axis, size):
    """Indices of `shape` whose values are distinct along `axis` (shape[axis] <= size)."""
    keys = rng.random(shape[:axis] + (size,) + shape[axis + 1:])
    return np.argsort(keys, axis=axis).take(np.arange(shape[axis]), axis=axis)


def _shape(rng):
    return tuple(int(d) for d in rng.integers(1, 5, int(rng.integers(1, 6))))


def _case(name, type_, opset, inputs, oracle, dtype, **kw) -> Case:
    # f16/bf16 sums may round per step in the plugin and once here: a few ulps, near 0 absolute.
    loose = {"ulps": 16, "atol": 1e-2} if dtype in NARROW_FLOATS else {}
    return Case(name, type_, opset, inputs, oracle=oracle, **loose, **kw)


# --- one record generator per op version ------------------------------------------------------


def scatter_update_3(n, dtype, itype):
    rng = np.random.default_rng(n)
    shape = _shape(rng)
    rank = len(shape)
    axis = int(rng.integers(-rank, rank))
    a = axis % rank
    ishape = tuple(int(d) for d in rng.integers(1, 3, int(rng.integers(0, 3))))
    ishape = ishape if int(np.prod(ishape)) <= shape[a] else (shape[a],)
    indices = rng.permutation(shape[a])[: int(np.prod(ishape))].reshape(ishape).astype(_np_dtype(itype))
    data, updates = _values(rng, shape, dtype), _values(rng, shape[:a] + ishape + shape[a + 1:], dtype)
    scalar = indices.ndim == 0
    return _case(f"ScatterUpdate-3-{dtype}-{itype}-{n}", "ScatterUpdate", "opset3",
                 [Input("data", data), Input("indices", indices), Input("updates", updates),
                  Input("axis", np.array(axis, np.int64), const=True)],
                 lambda d, i, u, ax: oracles.scatter_update(d, i, u, int(ax)), dtype,
                 openvino="none" if scalar else "cpu",
                 why="the CPU plugin refuses 0-D indices, which the spec allows" if scalar else "")


def scatter_elements_update(version, n, dtype, itype, reduction="none", use_init_val=True):
    rng = np.random.default_rng(n)
    shape = _shape(rng)
    rank = len(shape)
    axis = int(rng.integers(-rank, rank))
    a = axis % rank
    ishape = tuple(int(rng.integers(1, d + 1)) for d in shape)
    if reduction == "none":
        indices = _unique_along(rng, ishape, a, shape[a])
    else:
        ishape = ishape[:a] + (int(rng.integers(1, 6)),) + ishape[a + 1:]
        indices = rng.integers(0, shape[a], ishape)
    if version == 12:
        indices = np.where(rng.random(ishape) < 0.4, indices - shape[a], indices)
    indices = indices.astype(_np_dtype(itype))
    data, updates = _values(rng, shape, dtype), _values(rng, ishape, dtype)
    attrs = {"reduction": reduction, "use_init_val": use_init_val} if version == 12 else {}
    integer_mean = reduction == "mean" and dtype in ("i32", "i64", "i8", "u8")
    return _case(f"ScatterElementsUpdate-{version}-{reduction}-{use_init_val}-{dtype}-{itype}-{n}",
                 "ScatterElementsUpdate", f"opset{version}",
                 [Input("data", data), Input("indices", indices), Input("updates", updates),
                  Input("axis", np.array(axis, np.int64), const=True)],
                 lambda d, i, u, ax: oracles.scatter_elements(d, i, u, int(ax), reduction, use_init_val), dtype,
                 attrs=attrs, openvino="none" if integer_mean else "cpu",
                 why="the spec floors an integer mean, the CPU plugin truncates it" if integer_mean else "")


def scatter_nd_update(version, n, dtype, itype, reduction="none"):
    rng = np.random.default_rng(n)
    shape = _shape(rng)
    k = int(rng.integers(1, len(shape) + 1))
    rows = int(np.prod(shape[:k]))
    count = int(rng.integers(1, rows + 1)) if reduction == "none" else int(rng.integers(1, 7))
    flat = rng.permutation(rows)[:count] if reduction == "none" else rng.integers(0, rows, count)
    indices = np.stack(np.unravel_index(flat, shape[:k]), axis=-1)
    if version == 15:
        indices = np.where(rng.random(indices.shape) < 0.4, indices - np.array(shape[:k]), indices)
    indices = indices.astype(_np_dtype(itype))
    data, updates = _values(rng, shape, dtype), _values(rng, (count,) + shape[k:], dtype)
    return _case(f"ScatterNDUpdate-{version}-{reduction}-{dtype}-{itype}-{n}", "ScatterNDUpdate",
                 f"opset{version}", [Input("data", data), Input("indices", indices), Input("updates", updates)],
                 lambda d, i, u: oracles.scatter_nd(d, i, u, reduction), dtype,
                 attrs={"reduction": reduction} if version == 15 else {})


def _cases():
    """Every data type with both index types for each version; every reduction of the versions
    that have them, with and without use_init_val."""
    out, n = [], 1000
    for dtype in DATA_TYPES:
        for itype in ("i32", "i64"):
            n += 1
            out += [scatter_update_3(n, dtype, itype), scatter_elements_update(3, n, dtype, itype),
                    scatter_nd_update(4, n, dtype, itype)]
            for r, reduction in enumerate(ELEMENT_REDUCTIONS):
                if not (dtype == "boolean" and reduction == "mean"):  # mean is not defined on booleans
                    out.append(scatter_elements_update(12, n + 100 * r, dtype, itype, reduction, (n + r) % 2 == 0))
            out += [scatter_nd_update(15, n + 100 * r, dtype, itype, reduction)
                    for r, reduction in enumerate(ND_REDUCTIONS)]
    return out


CASES = _cases()


@pytest.mark.parametrize("case", CASES, ids=str)
def test_scatter_matches_openvino(case):
    check(case, CASES)


def test_the_records_cover_the_space():
    kinds = {(c.type, c.opset) for c in CASES}
    assert kinds == {("ScatterUpdate", "opset3"), ("ScatterElementsUpdate", "opset3"),
                     ("ScatterElementsUpdate", "opset12"), ("ScatterNDUpdate", "opset4"),
                     ("ScatterNDUpdate", "opset15")}
    assert {c.attrs["reduction"] for c in CASES if c.opset == "opset12"} == set(ELEMENT_REDUCTIONS)
    assert {c.attrs["reduction"] for c in CASES if c.opset == "opset15"} == set(ND_REDUCTIONS)
    assert {c.inputs[0].value.dtype for c in CASES} == {_np_dtype(t) for t in DATA_TYPES}
    assert any(c.inputs[1].value.ndim == 0 for c in CASES if c.type == "ScatterUpdate")
    assert sum(c.openvino == "cpu" for c in CASES) > 0.8 * len(CASES)


@pytest.mark.parametrize("index", [2, 4, 13, 44, 91, 150])
def test_scatter_through_the_cli(tmp_path, index):
    from harness import _Writer

    case = CASES[index]
    writer = _Writer()
    writer.add(case, "")
    xml = writer.save(tmp_path)
    feeds = {i.name: i.value for i in case.inputs if not i.const}
    np.savez(tmp_path / "in.npz", **feeds)
    proc = cli("run", str(xml), "--inputs", str(tmp_path / "in.npz"), "--output", str(tmp_path / "out.npz"))
    assert proc.returncode == 0, proc.stderr
    with np.load(tmp_path / "out.npz") as out:
        (got,) = [out[k] for k in out.files]
    want = case.oracle(*(i.value for i in case.inputs))
    assert np.array_equal(got.astype(np.float64), np.asarray(want).astype(np.float64))
