"""Buffer reuse: a scatter writes into its data buffer only when nothing else can see it
(an intermediate no later layer reads, or a feed the caller donates), and never otherwise; and
the rule behind it (`ops/common/buffers.py`, `ops/common/references.py`) case by case."""

from unittest import mock

import ml_dtypes
import numpy as np
import pytest
from helpers import layer, net, param, port, result

import irscatter
from irscatter.ops.common import buffers, recycle
from irscatter.ops.common.buffers import output_buffer
from irscatter.ops.common.references import unshared
from irscatter.ops.scatter.scatter_nd_update import ScatterNDUpdate15

D = [6, 4]


def _nd(lid, name="scatter"):
    return layer(lid, name, "ScatterNDUpdate", "opset15", {"reduction": "sum"},
                 inputs=[port(0, "FP32", D), port(1, "I64", [3, 1]), port(2, "FP32", [3, 4])],
                 outputs=[port(3, "FP32", D, names=name)])


def _add(lid, name):
    return layer(lid, name, "Add", data={"auto_broadcast": "numpy"},
                 inputs=[port(0, "FP32", D), port(1, "FP32", D)], outputs=[port(2, "FP32", D, names=name)])


def _const_shape(lid, values):
    return layer(lid, "target_shape", "Const", data={"element_type": "i64", "shape": str(len(values)), "offset": 0,
                                                     "size": 8 * len(values)}, outputs=[port(0, "I64", [len(values)])])


PARAMS = [param(0, "data", D), param(1, "idx", [3, 1], "i64", "I64"), param(2, "upd", [3, 4])]

MODELS = {
    # data -> scatter -> Result
    "direct": (PARAMS + [_nd(3), result(4, "out", D)], [(0, 0, 3, 0), (1, 0, 3, 1), (2, 0, 3, 2), (3, 3, 4, 0)]),
    # data -> Add(data, data) = t -> scatter(t) -> Result: t is an intermediate read once
    "intermediate": (PARAMS + [_add(3, "t"), _nd(4), result(5, "out", D)],
                     [(0, 0, 3, 0), (0, 0, 3, 1), (3, 2, 4, 0), (1, 0, 4, 1), (2, 0, 4, 2), (4, 3, 5, 0)]),
    # as above, and t is read again after the scatter: Add(t, scattered)
    "read-later": (PARAMS + [_add(3, "t"), _nd(4), _add(5, "sum"), result(6, "out", D)],
                   [(0, 0, 3, 0), (0, 0, 3, 1), (3, 2, 4, 0), (1, 0, 4, 1), (2, 0, 4, 2),
                    (3, 2, 5, 0), (4, 3, 5, 1), (5, 2, 6, 0)]),
    # data is read by the scatter and by a Result: the feed is an output too
    "fed-twice": (PARAMS + [_nd(3), result(4, "out", D), result(5, "data_again", D)],
                  [(0, 0, 3, 0), (1, 0, 3, 1), (2, 0, 3, 2), (3, 3, 4, 0), (0, 0, 5, 0)]),
    # data -> Reshape to the same shape (a view of the feed) -> scatter
    "view": (PARAMS + [_const_shape(3, D),
                       layer(4, "same", "Reshape", data={"special_zero": "false"},
                             inputs=[port(0, "FP32", D), port(1, "I64", [2])], outputs=[port(2, "FP32", D)]),
                       _nd(5), result(6, "out", D)],
             [(0, 0, 4, 0), (3, 0, 4, 1), (4, 2, 5, 0), (1, 0, 5, 1), (2, 0, 5, 2), (5, 3, 6, 0)]),
}


def _model(kind):
    layers, edges = MODELS[kind]
    return irscatter.parse_model(net(layers, edges), np.array(D, np.int64).tobytes())


def _feeds():
    rng = np.random.default_rng(0)
    return {"data": rng.standard_normal(D).astype(np.float32), "idx": np.array([[5], [0], [5]]),
            "upd": rng.standard_normal((3, 4)).astype(np.float32)}


def _scatter_sum(data, idx, upd):
    out = data.copy()
    np.add.at(out, idx[:, 0], upd)
    return out


def _run_spied(kind, **kw):
    """Run `kind`, recording whether the scatter kernel was told it may write in place."""
    calls = []
    original = ScatterNDUpdate15.compute

    def spy(self, *args, **kwargs):
        calls.append(kwargs.get("inplace", False))
        return original(self, *args, **kwargs)

    with mock.patch.object(ScatterNDUpdate15, "compute", spy):
        model = _model(kind)
        feeds = _feeds()
        before = {k: v.copy() for k, v in feeds.items()}
        outputs = model.run(feeds, **kw)
    return calls, feeds, before, outputs


def test_a_donated_feed_becomes_the_output():
    calls, feeds, before, out = _run_spied("direct", donate=["data"])
    assert calls == [True]
    assert np.shares_memory(out["scatter"], feeds["data"])
    np.testing.assert_array_equal(out["scatter"], _scatter_sum(before["data"], before["idx"], before["upd"]))


def test_without_donation_no_feed_is_written():
    calls, feeds, before, out = _run_spied("direct")
    assert calls == [False]
    for name in feeds:
        np.testing.assert_array_equal(feeds[name], before[name])
    assert not np.shares_memory(out["scatter"], feeds["data"])


def test_a_donated_feed_that_another_layer_reads_is_not_reused():
    calls, feeds, before, out = _run_spied("fed-twice", donate=["data"])
    assert calls == [False]
    np.testing.assert_array_equal(out["data"], before["data"])
    np.testing.assert_array_equal(feeds["data"], before["data"])


def test_an_intermediate_read_once_is_overwritten_in_place():
    calls, feeds, before, out = _run_spied("intermediate")
    assert calls == [True]
    np.testing.assert_array_equal(out["scatter"], _scatter_sum(2 * before["data"], before["idx"], before["upd"]))
    np.testing.assert_array_equal(feeds["data"], before["data"])


def test_an_intermediate_read_later_is_kept():
    calls, _, before, out = _run_spied("read-later")
    assert calls == [False]
    t = 2 * before["data"]
    np.testing.assert_array_equal(out["sum"], t + _scatter_sum(t, before["idx"], before["upd"]))


def test_a_view_of_a_feed_is_not_reused_even_when_the_view_is_read_once():
    calls, feeds, before, out = _run_spied("view")
    assert calls == [False]  # the Reshape's output views the caller's array
    np.testing.assert_array_equal(feeds["data"], before["data"])
    np.testing.assert_array_equal(out["scatter"], _scatter_sum(before["data"], before["idx"], before["upd"]))


@pytest.mark.parametrize("option", [{"intermediate": True}, {"hook": lambda layer, i, o: None}])
def test_observers_turn_reuse_off(option):
    calls, _, before, out = _run_spied("intermediate", **option)
    assert calls == [False]
    if "intermediate" in option:
        np.testing.assert_array_equal(out["t:2"], 2 * before["data"])  # the producer's value is intact


def test_repeated_runs_with_donation_give_the_same_answer():
    model = _model("direct")
    feeds = _feeds()
    want = _scatter_sum(feeds["data"], feeds["idx"], feeds["upd"])
    for _ in range(3):
        out = model.run({**feeds, "data": feeds["data"].copy()}, donate="data")
        np.testing.assert_array_equal(out["scatter"], want)


def test_donating_an_unknown_input_is_an_error():
    with pytest.raises(irscatter.ExecutionError, match='cannot donate "cache"'):
        _model("direct").run(_feeds(), donate=["cache"])


@pytest.mark.parametrize("donate", [np.int64(0), 0, "data", [np.int32(0)], None, ()])
def test_donate_takes_a_name_a_position_or_a_list_of_them(donate):
    feeds = _feeds()
    data = feeds["data"].copy()
    model = _model("direct")
    out = model.run({**feeds, "data": data}, donate=donate)
    np.testing.assert_array_equal(out["scatter"], _scatter_sum(feeds["data"], feeds["idx"], feeds["upd"]))
    donated = not (donate is None or isinstance(donate, tuple))  # (the tuple is the empty one)
    assert np.shares_memory(out["scatter"], data) == donated


@pytest.mark.parametrize(("option", "value", "label"), [
    ("donate", 1.5, "unknown-input"),
    ("donate", b"data", "unknown-input"),  # (bytes would be read as positions, one per byte)
    ("donate", {"data": True}, "unknown-input"),
    ("donate", [1.5], "unknown-input"),
    ("outputs", 42, "unknown-output"),
    ("outputs", b"scatter", "unknown-output"),
    ("outputs", [42], "unknown-output"),
])
def test_donate_and_outputs_refuse_what_names_nothing(option, value, label):
    with pytest.raises(irscatter.ExecutionError) as caught:
        _model("direct").run(_feeds(), **{option: value})
    assert caught.value.label == label


def test_a_donated_feed_of_another_layout_is_copied_not_written():
    feeds = _feeds()
    data = np.asfortranarray(feeds["data"])
    before = data.copy()
    out = _model("direct").run({**feeds, "data": data}, donate=["data"])
    np.testing.assert_array_equal(out["scatter"], _scatter_sum(before, feeds["idx"], feeds["upd"]))
    np.testing.assert_array_equal(data, before)


def test_a_donated_buffer_that_another_feed_shares_is_not_written():
    feeds = _feeds()
    upd = feeds["data"][:3]  # a view of the donated array, fed as another input
    before = feeds["data"].copy()
    out = _model("direct").run({**feeds, "upd": upd}, donate=["data"])
    np.testing.assert_array_equal(feeds["data"], before)
    np.testing.assert_array_equal(out["scatter"], _scatter_sum(before, feeds["idx"], before[:3]))


# --- the rule, case by case ----------------------------------------------------------------------

BIG = (1024, 512)  # 2 MiB of f32: large enough to be recycled


def test_an_array_is_unshared_only_while_its_list_alone_holds_it():
    values = [np.zeros(4), None]
    assert unshared(values, 0)
    name = values[0]
    assert not unshared(values, 0)  # a name holds it too
    del name
    view = values[0][1:]
    assert not unshared(values, 0)  # a view keeps its base alive
    values[1] = view
    del view
    assert not unshared(values, 1)  # the view is held alone, but writing it writes its base
    assert not unshared(values, 0)


def test_an_offered_input_is_taken_only_when_it_suits_the_kernel():
    data = np.arange(12, dtype=np.float32).reshape(3, 4)
    assert output_buffer(data, inplace=True) is data
    read_only = data.copy()
    read_only.flags.writeable = False
    strided = data[:, ::2]
    for refused, keywords in [(data, {"inplace": False}), (read_only, {"inplace": True}),
                              (data, {"dtype": np.float64, "inplace": True}), (strided, {"inplace": True})]:
        before = refused.copy()
        out = output_buffer(refused, **keywords)
        assert not np.shares_memory(out, refused) and out.flags.c_contiguous
        np.testing.assert_array_equal(out, before)
        out[...] = -1
        np.testing.assert_array_equal(refused, before)  # the input was never written
    assert output_buffer(strided, inplace=True, any_layout=True) is strided


def test_a_recycled_buffer_is_one_nobody_holds():
    recycler = recycle.Recycler()
    held = np.ones(BIG, np.float32)
    recycler.keep([held])
    data = np.full(BIG, 2, np.float32)
    with recycle.recycling(recycler):
        out = output_buffer(data, inplace=False)  # the caller still holds `held`
        assert not np.shares_memory(out, held)
        np.testing.assert_array_equal(held, 1)
        address = held.ctypes.data
        del held
        again = output_buffer(data, inplace=False)
    assert again.ctypes.data == address and len(recycler) == 0
    np.testing.assert_array_equal(again, data)


@pytest.mark.parametrize("dtype", [np.float32, np.int64, ml_dtypes.bfloat16])
def test_a_copy_into_recycled_memory_split_across_cores_gives_the_same_bits(monkeypatch, dtype):
    monkeypatch.setattr(buffers, "SPLIT_BYTES", 1)
    monkeypatch.setattr(buffers.threads, "CORES", 2)
    source = (np.random.default_rng(3).standard_normal(BIG) * 100).astype(dtype)
    recycler = recycle.Recycler()
    for target_dtype in (np.float32, np.float64):
        recycler.keep([np.full(BIG, -1, target_dtype)])
        with recycle.recycling(recycler):
            out = output_buffer(source, target_dtype, inplace=False)
        assert len(recycler) == 0  # it was the recycled buffer that got the copy
        assert out.tobytes() == np.array(source, dtype=target_dtype).tobytes()
