"""Recycled output buffers (ops/common/recycle.py): a large output of an earlier run is written
again only once nothing but the compiled model holds it, and every run still computes what a
run with fresh buffers computes."""

import threading

import numpy as np
import pytest
from helpers import layer, net, param, port, result

import irscatter
from irscatter.ops.common import recycle

ROWS, WIDTH = 4096, 128  # 2 MiB of f32: above recycle.MIN_BYTES
D = [ROWS, WIDTH]


def _model():
    layers = [
        param(0, "cache", D), param(1, "idx", [3, 1], "i64", "I64"), param(2, "upd", [3, WIDTH]),
        layer(3, "write", "ScatterNDUpdate", "opset15", {"reduction": "none"},
              inputs=[port(0, "FP32", D), port(1, "I64", [3, 1]), port(2, "FP32", [3, WIDTH])],
              outputs=[port(3, "FP32", D, names="out")]),
        result(4, "out", D),
    ]
    edges = [(0, 0, 3, 0), (1, 0, 3, 1), (2, 0, 3, 2), (3, 3, 4, 0)]
    return irscatter.parse_model(net(layers, edges))


def _feeds(seed):
    rng = np.random.default_rng(seed)
    return {"cache": rng.standard_normal(D, dtype=np.float32), "idx": rng.integers(0, ROWS, (3, 1)),
            "upd": rng.standard_normal((3, WIDTH), dtype=np.float32)}


def _expected(feeds):
    out = feeds["cache"].copy()
    out[feeds["idx"][:, 0]] = feeds["upd"]
    return out


def test_a_dropped_output_is_written_again_by_a_later_run():
    model = _model()
    first = model.run(_feeds(0))["out"]
    address = first.ctypes.data
    del first
    feeds = _feeds(1)
    second = model.run(feeds)["out"]
    assert second.ctypes.data == address
    np.testing.assert_array_equal(second, _expected(feeds))


@pytest.mark.parametrize("hold", ["array", "view", "outputs dict", "list"])
def test_an_output_anyone_still_holds_is_never_written(hold):
    model = _model()
    outputs = model.run(_feeds(0))
    kept = {"array": lambda o: o["out"], "view": lambda o: o["out"][::7], "outputs dict": lambda o: o,
            "list": lambda o: [o["out"]]}[hold](outputs)
    snapshot = np.array(kept["out"] if hold == "outputs dict" else kept[0] if hold == "list" else kept)
    address = outputs["out"].ctypes.data
    del outputs
    for seed in range(1, 5):
        feeds = _feeds(seed)
        out = model.run(feeds)["out"]
        assert out.ctypes.data != address
        np.testing.assert_array_equal(out, _expected(feeds))
        del out
    now = kept["out"] if hold == "outputs dict" else kept[0] if hold == "list" else kept
    np.testing.assert_array_equal(now, snapshot)


def test_a_loop_that_holds_the_previous_outputs_gets_the_ones_before():
    # `out = model.run(...)` still holds run k's outputs while run k + 1 starts; run k + 2 can
    # take them. Every result is what a fresh buffer would give.
    model = _model()
    addresses = []
    out = None
    for seed in range(8):
        feeds = _feeds(seed)
        out = model.run(feeds)
        np.testing.assert_array_equal(out["out"], _expected(feeds))
        addresses.append(out["out"].ctypes.data)
    assert len(set(addresses[2:])) <= 2  # two buffers take turns once the loop is going


def test_release_buffers_and_new_requests_keep_their_own():
    model = _model()
    compiled = model.compile()
    other = compiled.new_request()
    compiled.run(_feeds(0))
    assert len(compiled._recycler) == 1 and len(other._recycler) == 0
    compiled.release_buffers()
    assert len(compiled._recycler) == 0


def test_small_outputs_are_not_kept():
    recycler = recycle.Recycler()
    recycler.keep([np.zeros(16, np.float32), np.zeros((1024, 1024), np.float32)[:, :10]])
    assert len(recycler) == 0


def test_recycled_is_none_outside_a_run():
    assert recycle.recycled((ROWS, WIDTH), np.dtype(np.float32)) is None


def test_runs_from_threads_share_no_buffer():
    model = _model()
    compiled = model.compile()
    failures = []

    def worker(seed):
        for k in range(6):
            feeds = _feeds(100 * seed + k)
            out = compiled.run(feeds)["out"]
            if not np.array_equal(out, _expected(feeds)):
                failures.append(seed)
            del out

    threads = [threading.Thread(target=worker, args=(s,)) for s in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failures == []
