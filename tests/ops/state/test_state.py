"""ReadValue and Assign: a compiled model keeps its variables across runs as an OpenVINO infer
request does, compared step by step with OpenVINO's CPU plugin (out of process)."""

from __future__ import annotations

import threading
from pathlib import Path

import helpers
import numpy as np
import pytest

import irscatter
from irscatter.errors import IRError
from irscatter.targets import TargetFailure

DATA = Path(__file__).parents[2] / "data" / "control"


def _steps(name: str) -> list[dict[str, np.ndarray]]:
    feeds = dict(np.load(DATA / f"{name}.npz"))
    count = len({k.split("/")[0] for k in feeds})
    return [{k.split("/")[1]: v for k, v in feeds.items() if k.startswith(f"step{i}/")} for i in range(count)]


def oracle_state_cache(steps):
    cache = np.zeros((1, 2, 0), np.float32)
    outs = []
    for feeds in steps:
        cache = np.concatenate([cache, feeds["x"]], 2)
        outs.append([cache.mean(axis=2, keepdims=True), cache])
    return outs


def oracle_state_counter(steps):
    total, count, outs = np.zeros(2, np.float32), 0, []
    for feeds in steps:
        total, count = total + feeds["x"], count + 1
        outs.append([total / np.float32(count)])
    return outs


def _openvino_steps(name, steps, want):
    try:
        return helpers.oracle().infer_steps(DATA / f"{name}.xml", steps, config={"INFERENCE_PRECISION_HINT": "f32"})
    except TargetFailure as e:
        if e.kind == "refused":
            raise
        helpers.record_note("oracle", f"{name}: OpenVINO {e.kind} ({e.message}); checked against the oracle only")
        return want


@pytest.mark.parametrize("name", ["state_cache", "state_counter"])
def test_stateful_model_matches_openvino_step_by_step(name):
    steps = _steps(name)
    compiled = irscatter.compile_model(DATA / f"{name}.xml")
    got = [list(compiled.run(f).values()) for f in steps]
    want = globals()[f"oracle_{name}"](steps)
    ov = _openvino_steps(name, steps, want)
    for k, (g, w, o) in enumerate(zip(got, want, ov, strict=True)):
        for a, b, c in zip(g, w, o, strict=True):
            np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7, err_msg=f"step {k}")
            np.testing.assert_allclose(a, c, rtol=1e-6, atol=1e-7, err_msg=f"step {k} (OpenVINO)")


def test_query_set_and_reset_state():
    compiled = irscatter.compile_model(DATA / "state_counter.xml")
    states = {s.name: s for s in compiled.query_state()}
    assert set(states) == {"total", "count"}
    assert states["total"].state is None  # initial: zeros, made by the first run
    x = np.array([1.0, 3.0], np.float32)
    compiled.run({"x": x})
    compiled.run({"x": x})
    np.testing.assert_array_equal(states["total"].state, [2.0, 6.0])
    assert states["count"].state == 2 and states["count"].state.dtype == np.int32

    states["count"].set_state(np.int32(8))
    (avg,) = compiled.run({"x": x}).values()
    np.testing.assert_array_equal(avg, np.array([3.0, 9.0], np.float32) / np.float32(9))

    states["total"].reset()
    (avg,) = compiled.run({"x": x}).values()
    np.testing.assert_array_equal(avg, x / np.float32(10))  # total restarted, count went on

    compiled.reset_state()
    (avg,) = compiled.run({"x": x}).values()
    np.testing.assert_array_equal(avg, x)


def test_set_state_refuses_the_wrong_type_and_shape():
    compiled = irscatter.compile_model(DATA / "state_counter.xml")
    states = {s.name: s for s in compiled.query_state()}
    with pytest.raises(IRError) as info:
        states["count"].set_state(np.float32(1))
    assert info.value.label == "variable-type"
    with pytest.raises(IRError) as info:
        states["total"].set_state(np.zeros(3, np.float32))
    assert info.value.label == "variable-shape"


def test_returned_state_is_a_copy_and_the_read_value_cannot_be_written():
    compiled = irscatter.compile_model(DATA / "state_cache.xml")
    x = np.ones((1, 2, 1), np.float32)
    _, joined = compiled.run({"x": x}).values()
    (cache,) = compiled.query_state()
    cache.state[...] = 7  # a copy: the variable is unchanged
    np.testing.assert_array_equal(cache.state, joined)
    values = compiled.run({"x": x}, intermediate=True)
    read = next(v for k, v in values.items() if k.startswith("ReadValue"))
    assert not read.flags.writeable


def test_two_compiled_instances_do_not_share_state():
    a = irscatter.compile_model(DATA / "state_counter.xml")
    b = a.new_request()
    x = np.array([2.0, 4.0], np.float32)
    a.run({"x": x})
    a.run({"x": x})
    (first_b,) = b.run({"x": x}).values()
    np.testing.assert_array_equal(first_b, x)
    model = irscatter.read_model(DATA / "state_counter.xml")
    c, d = irscatter.compile_model(model), irscatter.compile_model(model)
    c.run({"x": x})
    (first_d,) = d.run({"x": x}).values()
    np.testing.assert_array_equal(first_d, x)
    assert c.plan.steps is d.plan.steps  # one plan, two states


def test_a_failed_run_leaves_the_variables_as_they_were():
    compiled = irscatter.compile_model(DATA / "state_counter.xml")
    x = np.array([1.0, 1.0], np.float32)
    compiled.run({"x": x})

    def fail_after_assign(layer, inputs, outputs):
        if layer.type == "Assign":
            raise RuntimeError("stop")

    with pytest.raises(RuntimeError):
        compiled.run({"x": x}, hook=fail_after_assign)
    states = {s.name: s.state for s in compiled.query_state()}
    np.testing.assert_array_equal(states["total"], [1.0, 1.0])
    assert states["count"] == 1


def test_runs_from_two_threads_take_turns_on_the_variables():
    compiled = irscatter.compile_model(DATA / "state_counter.xml")
    x = np.array([1.0, 2.0], np.float32)
    inside, go_on = threading.Event(), threading.Event()

    def hold_after_assign(layer, inputs, outputs):
        if layer.type == "Assign" and not inside.is_set():
            inside.set()
            assert go_on.wait(10)

    first = threading.Thread(target=compiled.run, args=({"x": x},), kwargs={"hook": hold_after_assign})
    first.start()
    assert inside.wait(10)  # the first run is between its Assigns and its commit
    second = threading.Thread(target=compiled.run, args=({"x": x},))
    second.start()
    second.join(0.3)
    assert second.is_alive()  # waiting its turn, not staging into the first run's variables
    go_on.set()
    first.join(10)
    second.join(10)
    states = {s.name: s.state for s in compiled.query_state()}
    assert states["count"] == 2
    np.testing.assert_array_equal(states["total"], 2 * x)


def test_a_run_started_inside_a_run_of_the_same_state_is_refused():
    compiled = irscatter.compile_model(DATA / "state_counter.xml")
    x = np.array([1.0, 2.0], np.float32)
    refused = []

    def run_again(layer, inputs, outputs):
        if layer.type == "Assign" and not refused:
            with pytest.raises(IRError) as info:
                compiled.run({"x": x})
            refused.append(info.value.label)

    compiled.run({"x": x}, hook=run_again)
    assert refused == ["state-busy"]
    assert {s.name: s.state for s in compiled.query_state()}["count"] == 1
    compiled.new_request().run({"x": x}, hook=lambda *_: compiled.new_request().run({"x": x}))  # states of their own


def test_assign_layers_are_sinks_not_unreachable():
    report = irscatter.validate(DATA / "state_cache.xml")
    assert report.findings == []
    compiled = irscatter.compile_model(DATA / "state_cache.xml")
    assert sum(step.layer.type == "Assign" for step in compiled.plan.steps) == 1


@pytest.mark.parametrize("old, new, label", [
    ('<data variable_id="count" />', '<data variable_id="counter" />', "unknown-variable"),
    ('<data variable_id="count" />', '<data variable_id="total" />', "variable-type"),
    ('variable_id="total" variable_type="f32" variable_shape="2"', 'variable_id="total" variable_type="f32" '
     'variable_shape="2,1"', "variable-shape"),
    ('<data variable_id="count" />', '<data variable_id="" />', "variable-id"),
])
def test_variable_mistakes_are_labelled(tmp_path, old, new, label):
    path = helpers.edited_copy(tmp_path, DATA / "state_counter.xml", old, new)
    report = irscatter.validate(path)
    assert label in {f.code for f in report.findings}, [f.code for f in report.findings]
    with pytest.raises(IRError) as info:
        irscatter.compile_model(path)
    assert info.value.label == label


def test_cli_runs_a_stateful_model_for_several_steps(tmp_path):
    out = tmp_path / "out.npz"
    done = helpers.cli("run", str(DATA / "state_counter.xml"), "--inputs", str(DATA / "state_counter.npz"),
                       "--steps", "6", "--output", str(out))
    assert done.returncode == 0, done.stderr
    saved = dict(np.load(out))
    assert sorted(saved) == [f"step{k}/{next(iter(saved)).split('/')[1]}" for k in range(6)]
    steps = _steps("state_counter")
    steps += [{}] * 2  # steps 4 and 5 feed what step 3 fed
    want = oracle_state_counter([{"x": f.get("x", _steps("state_counter")[-1]["x"])} for f in steps])
    for k in range(6):
        np.testing.assert_allclose(saved[f"step{k}/" + next(iter(saved)).split("/")[1]], want[k][0], rtol=1e-6)


def test_cli_feeds_an_output_back_as_an_input(tmp_path):
    feeds = tmp_path / "s0.npy"
    np.save(feeds, np.ones((2, 1), np.float32))
    c = tmp_path / "c.npy"
    np.save(c, np.full((2, 1), 2.0, np.float32))
    model = irscatter.read_model(DATA / "loop_growing.xml")
    out_name = model.compile().outputs[0].name
    done = helpers.cli("run", str(DATA / "loop_growing.xml"), "-i", f"s0={feeds}", "-i", f"c={c}", "--steps", "2",
                       "--feed-back", f"{out_name}=s0")
    # the output has 5 columns, the input takes 1: the second step is refused, naming the input
    assert done.returncode == 1 and "s0" in done.stderr and "feed-shape" in done.stderr, done.stderr


def test_state_of_shapes_that_do_not_fit_together_is_an_error_naming_the_layer():
    """The decoder's key and value caches are declared [?, 4, ?, 16]: set to different lengths,
    they reach ScaledDotProductAttention, whose inference could not see them, and which must say
    what does not fit rather than fail inside numpy."""
    compiled = irscatter.compile_model(Path(__file__).parents[3] / "models" / "stateful_decoder" / "model.xml")
    states = {s.name: s for s in compiled.query_state()}
    states["past_key"].set_state(np.zeros((1, 4, 5, 16), np.float32))
    states["past_value"].set_state(np.zeros((1, 4, 1, 16), np.float32))
    with pytest.raises(IRError) as info:
        compiled.run({"x": np.zeros((1, 1, 64), np.float32)})
    assert info.value.label == "sdpa-source" and "ScaledDotProductAttention" in str(info.value)


@pytest.mark.parametrize("value", ["abc", {"a": 1}, None, 2**40, ["x", "y"]])
def test_set_state_refuses_a_value_of_no_tensor_type_with_one_error(value):
    compiled = irscatter.compile_model(DATA / "state_counter.xml")
    states = {s.name: s for s in compiled.query_state()}
    with pytest.raises(IRError) as info:
        states["count" if value is None or isinstance(value, int) else "total"].set_state(value)
    assert info.value.label == "variable-type"
