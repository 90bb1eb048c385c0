"""Composite models as they appear around scatters in real IRs, generated with random sizes
and compared with OpenVINO's CPU plugin."""

import numpy as np
import pytest
from helpers import run_ov, save_ov

import irscatter

ov = pytest.importorskip("openvino")
import openvino.opset3 as o3  # noqa: E402
import openvino.opset15 as ops  # noqa: E402


def C(v, dtype=np.int64):
    return ops.constant(np.array(v, dtype))


def gather_scale_scatter(rng):
    n, d, k = (int(v) for v in rng.integers(2, 7, 3))
    k = min(k, n)
    data = ops.parameter([n, d], ov.Type.f32, name="data")
    idx = ops.parameter([k], ov.Type.i64, name="idx")
    rows = ops.gather(data, idx, C(0))
    out = o3.scatter_update(data, idx, ops.multiply(rows, ops.constant(np.float32(-2.5))), C(0))
    feeds = {"data": rng.standard_normal((n, d)).astype(np.float32), "idx": rng.permutation(n)[:k].astype(np.int64)}
    return [out], [data, idx], feeds


def slice_add_slice_scatter(rng):
    r, c = (int(v) for v in rng.integers(2, 8, 2))
    data = ops.parameter([r, c], ov.Type.f32, name="data")
    start, stop, step = C([int(rng.integers(-r, r))]), C([int(rng.integers(-r - 2, r + 2))]), C([int(rng.choice([-2, -1, 1, 2]))])
    axes = C([0])
    sliced = ops.slice(data, start, stop, step, axes)
    out = ops.slice_scatter(data, ops.add(sliced, ops.constant(np.float32(1))), start, stop, step, axes)
    return [out, sliced], [data], {"data": rng.standard_normal((r, c)).astype(np.float32)}


def range_index_elements(rng):
    n, m, k = (int(v) for v in rng.integers(2, 6, 3))
    k = min(k, n)  # indices may not be longer than data away from the axis (irscatter refuses it)
    data = ops.parameter([n, m], ov.Type.f32, name="data")
    upd = ops.parameter([k, m], ov.Type.f32, name="upd")
    ramp = ops.range(C(0), ops.gather(ops.shape_of(data), C(1), C(0)), C(1), "i64")
    reversed_ramp = ops.subtract(C(m - 1), ramp)
    indices = ops.broadcast(ops.unsqueeze(reversed_ramp, C([0])), C([k, m]))
    indices = ops.floor_mod(ops.add(indices, ops.reshape(ops.range(C(0), C(k), C(1), "i64"), C([k, 1]), False)), C(m))
    reduction = str(rng.choice(["sum", "max", "min", "prod", "mean"]))
    out = ops.scatter_elements_update(data, indices, upd, C(1), reduction, bool(rng.random() < 0.5))
    feeds = {"data": rng.standard_normal((n, m)).astype(np.float32), "upd": rng.standard_normal((k, m)).astype(np.float32)}
    return [out], [data, upd], feeds


def paged_cache(rng):
    blocks, size, heads, dim = (int(v) for v in rng.integers(2, 6, 4))
    tokens = int(rng.integers(1, blocks * size + 1))
    cache = ops.parameter([blocks, size, heads, dim], ov.Type.f32, name="cache")
    new = ops.parameter([tokens, heads, dim], ov.Type.f32, name="new")
    slots = ops.parameter([tokens], ov.Type.i64, name="slots")
    bs = ops.gather(ops.shape_of(cache), C(1), C(0))
    pair = ops.concat([ops.unsqueeze(ops.divide(slots, bs), C([-1])), ops.unsqueeze(ops.floor_mod(slots, bs), C([-1]))], -1)
    reduction = str(rng.choice(["none", "sum", "max"]))
    out = ops.scatter_nd_update(cache, pair, new, reduction)
    read = ops.gather_nd(out, pair)
    feeds = {"cache": rng.standard_normal((blocks, size, heads, dim)).astype(np.float32),
             "new": rng.standard_normal((tokens, heads, dim)).astype(np.float32),
             "slots": (rng.permutation(blocks * size)[:tokens] if reduction == "none"
                       else rng.integers(0, blocks * size, tokens)).astype(np.int64)}
    return [out, read], [cache, new, slots], feeds


TEMPLATES = [gather_scale_scatter, slice_add_slice_scatter, range_index_elements, paged_cache]


@pytest.mark.parametrize("i", range(60))
def test_composite_model_matches_openvino(tmp_path, i):
    template = TEMPLATES[i % len(TEMPLATES)]
    outputs, params, feeds = template(np.random.default_rng(13000 + i))
    xml = save_ov(ov.Model([ops.result(o) for o in outputs], params, template.__name__), tmp_path)
    model = irscatter.read_model(xml)
    assert model.compile().findings == []
    got = list(model.run(feeds).values())
    want = run_ov(xml, feeds)
    for g, w in zip(got, want):
        assert g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
