"""If, Loop and TensorIterator on models OpenVINO wrote (`tools/make_control_models.py`):
each is compared with OpenVINO's CPU plugin (out of process) and with a numpy oracle written
from the spec, and their bodies are watched, limited and broken on purpose."""

from __future__ import annotations

from pathlib import Path

import helpers
import numpy as np
import pytest

import irscatter
from irscatter.errors import ExecutionError, IRError

DATA = Path(__file__).parents[2] / "data" / "control"


def _load(name: str):
    return irscatter.read_model(DATA / f"{name}.xml"), dict(np.load(DATA / f"{name}.npz"))


def _consts(model, shape):
    """The Const values of a given shape anywhere in the model's bodies (the RNN's weights)."""
    found = []

    def walk(layers):
        for layer in layers:
            if layer.type == "Const" and tuple(int(d) for d in layer.outputs[0].shape) == shape:
                found.append(layer.const_value)
            for body in layer.bodies.values():
                walk(body.graph.layers)
    walk(model.layers)
    return found


# --- oracles: the spec's semantics, written out with numpy -----------------------------------


def oracle_loop_scan(x, a0):
    acc, seen = a0, []
    for it in range(10):  # trip count 10, the body stops after the iteration where it == 3
        acc = acc + x[it:it + 1] * np.float32(it)
        seen.append(acc)
        if not it < 3:
            break
    return acc, np.concatenate(seen, 0)


def oracle_loop_while(trip, cond, v0, limit):
    v, sums, i = v0, [], 0
    go = bool(cond)
    while go and (trip < 0 or i < trip):
        v = v * np.float32(2)
        sums.append(np.float32(v.sum()))
        go = v.max() < limit
        i += 1
    return v, np.array(sums, np.float32)


def oracle_loop_growing(s0, c):
    s = s0
    for _ in range(4):
        s = np.concatenate([s, c * np.float32(1.5)], 1)
    return (s,)


def oracle_rnn(x, h0, w, u, reverse):
    h, seq = h0, [None] * x.shape[1]
    steps = range(x.shape[1] - 1, -1, -1) if reverse else range(x.shape[1])
    for t in steps:
        h = np.tanh(x[:, t] @ w + h @ u)
        seq[t] = h[:, None]
    return h, np.concatenate(seq, 1)


def oracle_ti_pairs(x, a0):
    acc, seen = a0, []
    for k in range(3):
        acc = acc * x[2 * k:2 * k + 2]
        seen.append(acc)
    return acc, np.concatenate(seen, 0)


def oracle_if_fed(cond, x, y):
    return (x * np.float32(2) + y,) if cond else ((x - np.float32(1)).reshape(3, 2),)


def oracle_if_loop_inside(cond, x):
    return (x + np.float32(3),) if cond else (-x,)


def _oracle(name, model, feeds):
    if name.startswith("ti_") and name != "ti_pairs":
        (w,), (u,) = _consts(model, (3, 4)), _consts(model, (4, 4))
        return oracle_rnn(feeds["x"], feeds["h0"], w, u, name == "ti_reverse")
    return globals()[f"oracle_{name}"](**feeds)


MODELS = ["loop_scan", "loop_while", "loop_growing", "ti_forward", "ti_reverse", "ti_pairs", "if_fed",
          "if_loop_inside"]


@pytest.mark.parametrize("name", MODELS)
def test_control_model_matches_openvino_and_the_oracle(name):
    model, feeds = _load(name)
    got = list(model.run(feeds).values())
    want = _oracle(name, model, feeds)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
    ov = helpers.run_ov(DATA / f"{name}.xml", feeds, fallback=lambda: want)
    for g, w in zip(got, ov, strict=True):
        assert g.shape == w.shape and g.dtype == w.dtype
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("cond", [True, False])
def test_if_runs_the_branch_its_condition_names(cond):
    model, feeds = _load("if_fed")
    feeds["cond"] = np.bool_(cond)
    (got,) = model.run(feeds).values()
    (want,) = oracle_if_fed(**feeds)
    np.testing.assert_array_equal(got, want)
    ov = helpers.run_ov(DATA / "if_fed.xml", feeds, fallback=lambda: [want])
    np.testing.assert_allclose(got, ov[0], rtol=1e-6)


@pytest.mark.parametrize("trip, cond, limit", [(-1, True, 100.0), (2, True, 100.0), (5, True, 3.0),
                                               (1, True, 100.0), (7, True, 1e9)])
def test_loop_trip_count_and_condition_combinations(trip, cond, limit):
    model, feeds = _load("loop_while")
    feeds.update(trip=np.int64(trip), cond=np.bool_(cond), limit=np.float32(limit))
    got = list(model.run(feeds).values())
    want = oracle_loop_while(**feeds)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
    ov = helpers.run_ov(DATA / "loop_while.xml", feeds, fallback=lambda: want)
    for g, w in zip(got, ov):
        np.testing.assert_array_equal(g, w)


@pytest.mark.parametrize("trip, cond", [(0, True), (3, False), (-1, False)])
def test_a_loop_that_never_runs_gives_its_initial_values_and_empty_concatenations(trip, cond):
    """The spec allows zero iterations (OpenVINO's core reference refuses them): the last-iteration
    output of a back edge is the Parameter's initial value, a concatenated output is empty."""
    model, feeds = _load("loop_while")
    feeds.update(trip=np.int64(trip), cond=np.bool_(cond))
    last, sums = model.run(feeds).values()
    np.testing.assert_array_equal(last, feeds["v0"])
    assert sums.shape == (0,) and sums.dtype == np.float32


def test_an_unbounded_loop_stops_at_the_iteration_limit():
    model, feeds = _load("loop_while")
    feeds.update(trip=np.int64(-1), v0=np.zeros(3, np.float32), limit=np.float32(np.inf))  # 0 * 2 < inf forever
    with irscatter.limits.using(loop_iterations=50), pytest.raises(ExecutionError) as info:
        model.run(feeds)
    assert info.value.label == "iteration-limit"
    assert "Loop" in str(info.value) and "50" in str(info.value)


@pytest.mark.parametrize("trip", [-1, 10**9])
def test_a_loop_whose_condition_cannot_change_is_stopped_after_one_iteration(tmp_path, trip):
    """Without its back edge, the body's condition reads only what the loop feeds it unchanged:
    true once, true for ever. Told at once, rather than after a million iterations."""
    path = helpers.edited_copy(tmp_path, DATA / "loop_while.xml", '<edge from-layer="10" to-layer="0" />', "")
    feeds = {**dict(np.load(DATA / "loop_while.npz")), "trip": np.int64(trip), "cond": np.array(True),
             "limit": np.float32(np.inf)}
    iterations = []
    with pytest.raises(ExecutionError) as info:
        irscatter.read_model(path).run(feeds, hook=lambda layer, *_: iterations.append(layer.name))
    assert info.value.label == "iteration-limit" and "would never stop" in str(info.value)
    assert ("1000000000 iterations are more than" in str(info.value)) == (trip > 0)
    assert 0 < len(iterations) < 20  # the first iteration's layers, and the Loop's own few


def test_a_loop_whose_condition_reads_a_fed_back_value_runs_until_it_turns_false():
    model, feeds = _load("loop_while")  # its condition reads v, which is fed back
    feeds.update(trip=np.int64(-1), cond=np.array(True), v0=np.ones(3, np.float32), limit=np.float32(100))
    v, sums = model.run(feeds).values()
    want_v, want_sums = oracle_loop_while(**feeds)
    assert len(sums) == 7  # 2, 4, ..., 128
    np.testing.assert_array_equal(v, want_v)
    np.testing.assert_array_equal(sums, want_sums)


def test_intermediate_values_and_hooks_see_inside_bodies_by_iteration():
    model, feeds = _load("loop_scan")
    values = model.run(feeds, intermediate=True)
    loop = next(layer for layer in model.layers if layer.type == "Loop")
    inner = [k for k in values if k.startswith(f"{loop.name}/body[")]
    assert {k.split("/")[1] for k in inner} == {"body[0]", "body[1]", "body[2]", "body[3]"}
    # the accumulator the body sees in iteration 2 is the one it computed in iteration 1
    acc_in_2 = next(v for k, v in values.items() if k.startswith(f"{loop.name}/body[2]/acc:"))
    adds = {k: v for k, v in values.items() if k.startswith(f"{loop.name}/body[1]/") and "Add" in k}
    (acc_out_1,) = adds.values()
    np.testing.assert_array_equal(acc_in_2, acc_out_1)

    seen = []
    model.run(feeds, hook=lambda layer, ins, outs: seen.append(layer.name))
    assert f"{loop.name}/body[3]/{next(k for k in adds).split('/')[-1].split(':')[0]}" in seen
    assert seen[-1] == loop.name or loop.name in seen


def test_nested_bodies_are_observed_with_both_paths():
    model, feeds = _load("if_loop_inside")
    values = model.run(feeds, intermediate=True)
    nested = [k for k in values if k.count("/") >= 4]
    assert nested and all("/then_body/" in k and "/body[" in k for k in nested)


def test_a_failing_body_names_the_outer_layer_the_body_and_the_inner_layer(tmp_path):
    """With y left open, a y of the wrong shape reaches the then-branch's Add, which refuses it."""
    path = helpers.edited_copy(tmp_path, DATA / "if_fed.xml", '<data shape="2,3" element_type="f32" />\n\t\t\t<output>\n\t\t\t\t'
                   '<port id="0" precision="FP32" names="y">',
                   '<data shape="?,?" element_type="f32" />\n\t\t\t<output>\n\t\t\t\t'
                   '<port id="0" precision="FP32" names="y">')
    model, feeds = irscatter.read_model(path), dict(np.load(DATA / "if_fed.npz"))
    feeds.update(cond=np.bool_(True), y=np.ones((4, 5), np.float32))
    with pytest.raises(IRError) as info:
        model.run(feeds)
    message = str(info.value)
    assert "(If-8)" in message and "<then_body>" in message and "(Add-1)" in message, message


def test_a_body_error_names_both_layers(tmp_path):
    path = helpers.edited_copy(tmp_path, DATA / "if_fed.xml", 'type="Subtract"', 'type="NoSuchOp"')
    with pytest.raises(IRError) as info:
        irscatter.compile_model(path)
    message = str(info.value)
    assert '(If-8)' in message and "NoSuchOp" in message and "<body>" in message
    report = irscatter.validate(path)
    assert any("NoSuchOp" in f.message and f.layer.type == "If" for f in report.findings)


def test_an_error_in_an_iteration_says_which_iteration():
    model, feeds = _load("loop_fails_at_3")
    with pytest.raises(IRError) as info:
        model.run(feeds)
    message = str(info.value)
    assert "(Loop-5)" in message and "<body[3]>" in message and "(Reshape-1)" in message, message
    with irscatter.limits.using(loop_iterations=3), pytest.raises(IRError) as info:
        model.run(feeds)
    assert info.value.label == "iteration-limit"


def test_validate_finds_nothing_wrong_with_the_control_models():
    for xml in sorted(DATA.glob("*.xml")):
        if xml.stem == "loop_fails_at_3":
            continue
        report = irscatter.validate(xml)
        assert report.findings == [], (xml.name, [f.message for f in report.findings])


def test_validate_reports_every_problem_inside_nested_bodies(tmp_path):
    """An unknown op in a Loop inside the then-branch, and an op without a kernel in the
    else-branch: both are reported, each naming the If, the body path and the inner layer."""
    first = helpers.edited_copy(tmp_path, DATA / "if_loop_inside.xml", 'type="Add"', 'type="Addd"')
    with helpers.kernel_hidden("Negative", 1):  # the else-branch's only op, as if it had no kernel
        findings = irscatter.validate(first).findings
    assert {(f.severity, f.code) for f in findings} == {("error", "not-in-opset"), ("warning", "no-kernel")}
    assert all(f.layer.type == "If" for f in findings)
    messages = " | ".join(f.message for f in findings)
    assert "<then_body>" in messages and "(Loop-5)" in messages and "<body>" in messages and "Addd" in messages
    assert "<else_body>" in messages and "Negative-1" in messages


LOOP_SCAN_IN = '<input axis="0" external_port_id="2" internal_layer_id="0" start="0" end="-1" stride="1" part_size="1" />'
TI_PAIRS_OUT = '<output axis="0" external_port_id="3" internal_layer_id="4" start="0" end="-1" stride="2" part_size="2" />'


@pytest.mark.parametrize("name, line, edit, where", [
    ("loop_scan", LOOP_SCAN_IN, 'stride="1"', 'stride="0"'),  # a Loop whose trip count is fed: known only when run
    ("loop_scan", LOOP_SCAN_IN, 'part_size="1"', 'part_size="0"'),
    ("loop_scan", LOOP_SCAN_IN, 'start="0"', 'start="999"'),
    ("ti_pairs", TI_PAIRS_OUT, 'stride="2"', 'stride="0"'),  # a concatenated output's
    ("ti_pairs", TI_PAIRS_OUT, 'part_size="2"', 'part_size="-1"'),
])
def test_a_port_map_that_cannot_slice_or_join_is_found_by_validate(tmp_path, name, line, edit, where):
    path = helpers.edited_copy(tmp_path, DATA / f"{name}.xml", line, line.replace(edit, where))
    findings = irscatter.validate(path).findings
    assert [(f.severity, f.code) for f in findings] == [("error", "slice-parts")], [f.message for f in findings]
    with pytest.raises(IRError) as info:
        irscatter.compile_model(path)
    assert info.value.label == "slice-parts"


@pytest.mark.parametrize("axis", ["\u0663", "0_0"])
def test_a_port_map_number_python_would_read_but_openvino_would_not_is_refused(tmp_path, axis):
    path = helpers.edited_copy(tmp_path, DATA / "loop_scan.xml", LOOP_SCAN_IN, LOOP_SCAN_IN.replace('axis="0"', f'axis="{axis}"'))
    with pytest.raises(irscatter.LoadError, match="not an integer that fits"):
        irscatter.read_model(path)


@pytest.mark.parametrize("shape", ["abc", "1,x", "1180591620717411303424"])
def test_a_body_parameter_whose_written_shape_is_no_shape_is_refused(tmp_path, shape):
    """The owner decides a body Parameter's shape, but what is written must still be a shape."""
    col = '<layer id="1" name="col" type="Parameter" version="opset1">\n\t\t\t\t\t\t<data shape="2,1"'
    path = helpers.edited_copy(tmp_path, DATA / "loop_growing.xml", col, col.replace("2,1", shape))
    findings = irscatter.validate(path).findings
    assert [(f.code, f.layer.type) for f in findings] == [("attributes", "Loop")]
    assert '<body>, layer 1 "col" (Parameter-1)' in findings[0].message and "shape=" in findings[0].message
    with pytest.raises(IRError) as info:
        irscatter.compile_model(path)
    assert info.value.label == "attributes"


@pytest.mark.parametrize("name, line, fragment", [
    ("if_fed", '<input external_port_id="2" internal_layer_id="1" />', "body Parameter 1 of <then_body>"),
    ("ti_pairs", '<input external_port_id="1" internal_layer_id="1" />', "its back edge feeds only the iterations"),
])
def test_a_body_parameter_no_input_feeds_is_refused_at_compilation(tmp_path, name, line, fragment):
    path = helpers.edited_copy(tmp_path, DATA / f"{name}.xml", line, "")
    with pytest.raises(IRError) as info:
        irscatter.compile_model(path)
    assert info.value.label == "port-map" and fragment in str(info.value), str(info.value)


def test_a_last_value_that_may_come_from_no_iteration_allows_the_initial_value(tmp_path):
    """The body's Multiply reads the scalar bound instead of v: the back-edged Result is a scalar
    while v starts as v0, of shape [3]. With no iteration the output is v0 itself, so inference
    must allow both shapes; the run gives v0."""
    path = helpers.edited_copy(tmp_path, DATA / "loop_while.xml", '<edge from-layer="0" from-port="0" to-layer="3" '
                               'to-port="0" />', '<edge from-layer="2" from-port="0" to-layer="3" to-port="0" />')
    compiled = irscatter.compile_model(path)
    feeds = dict(np.load(DATA / "loop_while.npz"))
    feeds["cond"] = np.array(False)
    out = compiled.run(feeds)
    spec = next(s for s in compiled.outputs if out[s.name].shape == feeds["v0"].shape)
    assert spec.shape.accepts(out[spec.name].shape)
    np.testing.assert_array_equal(out[spec.name], feeds["v0"])
