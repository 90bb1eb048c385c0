"""The thread policy's hold on BLAS (ops/common/threads.py): within a model run, the first kernel
that holds BLAS to one thread keeps it held until the run ends, and the run restores it."""

from __future__ import annotations

import numpy as np
import pytest
from threadpoolctl import threadpool_info

import irscatter
from irscatter.ops.common import threads


def _blas_threads() -> list[int]:
    return [info["num_threads"] for info in threadpool_info() if info["user_api"] == "blas"]


@pytest.fixture
def threaded_blas(monkeypatch):
    monkeypatch.setattr(threads, "_policy", "split")
    before = _blas_threads()
    if not before or max(before) == 1:
        pytest.skip("BLAS runs on one thread here anyway")
    return before


def test_a_run_holds_blas_from_its_first_large_kernel_to_its_end(threaded_blas):
    with threads.holding_for_run():
        with threads.one_blas_thread(threads.SPLIT_WORK - 1):  # too small to hold
            assert _blas_threads() == threaded_blas
        with threads.one_blas_thread(threads.SPLIT_WORK):
            assert max(_blas_threads()) == 1
        assert max(_blas_threads()) == 1  # still held after the kernel
        with threads.holding_for_run():  # a body of Loop or If is part of the run around it
            pass
        assert max(_blas_threads()) == 1
    assert _blas_threads() == threaded_blas


def test_outside_a_run_a_kernel_holds_blas_for_itself(threaded_blas):
    with threads.one_blas_thread(threads.SPLIT_WORK):
        assert max(_blas_threads()) == 1
    assert _blas_threads() == threaded_blas


def test_the_blas_policy_holds_nothing(threaded_blas, monkeypatch):
    monkeypatch.setattr(threads, "_policy", "blas")
    with threads.holding_for_run(), threads.one_blas_thread(1 << 40):
        assert _blas_threads() == threaded_blas


def test_a_model_run_gives_blas_back(threaded_blas, tmp_path):
    # MatMul [256, 256] x [256, 256]: 16 M multiply-adds, above the split threshold.
    xml = tmp_path / "m.xml"
    port = '<port id="{}" precision="FP32"><dim>256</dim><dim>256</dim></port>'
    xml.write_text(
        '<?xml version="1.0"?><net name="m" version="11"><layers>'
        f'<layer id="0" name="a" type="Parameter" version="opset1"><data shape="256,256" element_type="f32"/>'
        f'<output>{port.format(0)}</output></layer>'
        f'<layer id="1" name="b" type="Parameter" version="opset1"><data shape="256,256" element_type="f32"/>'
        f'<output>{port.format(0)}</output></layer>'
        f'<layer id="2" name="p" type="MatMul" version="opset1"><input>{port.format(0)}{port.format(1)}</input>'
        f'<output>{port.format(2)}</output></layer>'
        f'<layer id="3" name="r" type="Result" version="opset1"><input>{port.format(0)}</input></layer>'
        '</layers><edges><edge from-layer="0" from-port="0" to-layer="2" to-port="0"/>'
        '<edge from-layer="1" from-port="0" to-layer="2" to-port="1"/>'
        '<edge from-layer="2" from-port="2" to-layer="3" to-port="0"/></edges></net>')
    a, b = (np.random.default_rng(i).standard_normal((256, 256)).astype(np.float32) for i in range(2))
    seen = []
    out = irscatter.compile_model(str(xml)).run({"a": a, "b": b}, hook=lambda layer, *_: seen.append(
        (layer.type, max(_blas_threads()))))
    assert np.allclose(next(iter(out.values())), a @ b, rtol=1e-4, atol=1e-3)
    assert ("MatMul", 1) in seen  # held while the run went on
    assert _blas_threads() == threaded_blas


def test_run_hands_every_task_out_and_raises_the_first_failure_in_task_order():
    done: list[int] = []
    threads.run([lambda i=i: done.append(i) for i in range(7)])  # more tasks than helpers
    assert sorted(done) == list(range(7))

    def failing(label):
        def task():
            raise KeyError(label)
        return task
    with pytest.raises(KeyError, match="second"):
        threads.run([lambda: None, failing("second"), failing("third")])
    with pytest.raises(KeyError, match="first"):
        threads.run([failing("first"), failing("second")])
    threads.run([lambda: done.append(8), lambda: done.append(9)])  # the helpers still serve
    assert done[-2:] in ([8, 9], [9, 8])


def test_a_task_that_splits_its_own_work_and_two_callers_at_once_both_finish():
    import threading

    inner: list[int] = []

    def splitting():
        threads.run([lambda: inner.append(1), lambda: inner.append(2)])  # the helpers are lent: runs here
    threads.run([splitting, lambda: inner.append(3)])
    assert sorted(inner) == [1, 2, 3]

    totals = [0, 0]

    def caller(slot):
        for _ in range(200):
            threads.run([lambda: None, lambda: totals.__setitem__(slot, totals[slot] + 1)])
    others = [threading.Thread(target=caller, args=(slot,)) for slot in (0, 1)]
    for thread in others:
        thread.start()
    for thread in others:
        thread.join(timeout=60)
    assert totals == [200, 200]
