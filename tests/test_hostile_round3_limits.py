"""Hostile input, round three: what numpy cannot hold, what changes under a compiled model, and
work that grows faster than the file asking for it. Each case ends in one clear error (or a
right answer) quickly, never a crash, a hang or an internal error. What could crash the process
runs in a child process, so that a crash costs one test, not the run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from helpers import layer, net, port, result, write

import irscatter

# --- ranks past numpy's 64 ---------------------------------------------------------------------

_TYPES = {np.dtype(np.float32): ("f32", "FP32"), np.dtype(np.int64): ("i64", "I64")}


def _ones(rank: int) -> tuple[int, ...]:
    return (1,) * rank


def _one_layer(folder: Path, name: str, type_: str, version: str, attrs: dict, inputs: list, outputs: int = 1,
               dims: tuple[int, ...] = ()) -> Path:
    """An IR of one layer under test; each input is ("param", shape, dtype) or ("const", array), each
    output declares `dims` (none by default: a scalar, or a rank inference tells)."""
    layers, edges, weights = [], [], b""
    n = len(inputs)
    for i, item in enumerate(inputs):
        if item[0] == "param":
            _, shape, dtype = item
            et, precision = _TYPES[np.dtype(dtype)]
            layers.append(layer(i, f"in{i}", "Parameter", data={"shape": ",".join(map(str, shape)), "element_type": et},
                                outputs=[port(0, precision, shape, names=f"in{i}")]))
        else:
            array = np.asarray(item[1])
            et, precision = _TYPES[array.dtype]
            layers.append(layer(i, f"in{i}", "Const", data={"element_type": et, "shape": ",".join(map(str, array.shape)),
                                                            "offset": len(weights), "size": array.nbytes},
                                outputs=[port(0, precision, array.shape)]))
            weights += array.tobytes()
        edges.append((i, 0, n, i))
    layers.append(layer(n, "under_test", type_, version, data=attrs, inputs=[port(i, None) for i in range(n)],
                        outputs=[port(n + k, None, dims) for k in range(outputs)]))
    for k in range(outputs):
        layers.append(result(n + 1 + k, f"out{k}", dims))
        edges.append((n, n + k, n + 1 + k, 0))
    return write(folder, net(layers, edges), weights or None, name=name)


_DATA40, _INDICES40 = ("param", _ones(40), np.float32), ("param", _ones(40), np.int64)
_AXIS0 = ("const", np.array(0, np.int64))
_SCALAR = {v: ("const", np.array(v, np.float32)) for v in (0, 1)}

# Each asks for an output of more than 64 dimensions from inputs of at most 64.
OVER_RANK = {
    "gather1": ("Gather", "opset1", {}, [_DATA40, _INDICES40, _AXIS0]),
    "gather7": ("Gather", "opset7", {"batch_dims": 0}, [_DATA40, _INDICES40, _AXIS0]),
    "gather8": ("Gather", "opset8", {"batch_dims": 0}, [_DATA40, _INDICES40, _AXIS0]),
    "gather_nd5": ("GatherND", "opset5", {"batch_dims": 0}, [_DATA40, ("const", np.zeros(_ones(39) + (1,), np.int64))]),
    "gather_nd8": ("GatherND", "opset8", {"batch_dims": 0}, [_DATA40, ("const", np.zeros(_ones(39) + (1,), np.int64))]),
    "tile": ("Tile", "opset1", {}, [("param", (2,), np.float32), ("const", np.ones(70, np.int64))]),
    "unsqueeze": ("Unsqueeze", "opset1", {}, [_DATA40, ("const", np.arange(30, dtype=np.int64))]),
    "reshape": ("Reshape", "opset1", {"special_zero": "false"}, [_DATA40, ("const", np.ones(70, np.int64))]),
    "random_uniform": ("RandomUniform", "opset8", {"output_type": "f32", "global_seed": 1, "op_seed": 1},
                       [("const", np.ones(70, np.int64)), _SCALAR[0], _SCALAR[1]]),
    "eye_batch_shape": ("Eye", "opset9", {"output_type": "f32"},
                        [("const", np.array(2, np.int64)), ("const", np.array(2, np.int64)), _AXIS0,
                         ("const", np.ones(70, np.int64))]),
    "one_hot": ("OneHot", "opset1", {"axis": -1}, [("param", _ones(64), np.int64), ("const", np.array(2, np.int64)),
                                                   _SCALAR[1], _SCALAR[0]]),
}

# Each keeps its inputs' rank of 64, but a kernel worked on more axes than that (a block op splits
# each axis in two) or indexed along every one: numpy refused, or crashed.
_DATA64 = ("param", _ones(64), np.float32)
_ZEROS64 = ("const", np.zeros(_ones(64), np.int64))
AT_RANK_64 = {
    "space_to_depth": ("SpaceToDepth", "opset1", {"block_size": 1, "mode": "blocks_first"}, [_DATA64]),
    "depth_to_space": ("DepthToSpace", "opset1", {"block_size": 1, "mode": "depth_first"}, [_DATA64]),
    "batch_to_space": ("BatchToSpace", "opset2", {}, [_DATA64, ("const", np.ones(64, np.int64)),
                                                      ("const", np.zeros(64, np.int64)), ("const", np.zeros(64, np.int64))]),
    "space_to_batch": ("SpaceToBatch", "opset2", {}, [_DATA64, ("const", np.ones(64, np.int64)),
                                                      ("const", np.zeros(64, np.int64)), ("const", np.zeros(64, np.int64))]),
    "top_k": ("TopK", "opset11", {"axis": 0, "mode": "max", "sort": "value", "index_element_type": "i64"},
              [_DATA64, ("const", np.array(1, np.int64))], 2),
    "gather_elements": ("GatherElements", "opset6", {"axis": 0}, [_DATA64, _ZEROS64]),
    "reverse_sequence": ("ReverseSequence", "opset1", {"batch_axis": 0, "seq_axis": 1},
                         [_DATA64, ("const", np.ones(1, np.int64))]),
    "gather_nd": ("GatherND", "opset8", {"batch_dims": 0}, [_DATA64, ("const", np.zeros((1, 64), np.int64))]),
    "scatter_nd_update": ("ScatterNDUpdate", "opset4", {}, [_DATA64, ("const", np.zeros((1, 64), np.int64)),
                                                            ("param", (1,), np.float32)]),
    "pad_edge": ("Pad", "opset1", {"pad_mode": "edge"}, [_DATA64, ("const", np.zeros(64, np.int64)),
                                                         ("const", np.zeros(64, np.int64))]),
    "pad_reflect": ("Pad", "opset12", {"pad_mode": "reflect"}, [_DATA64, ("const", np.zeros(64, np.int64)),
                                                                ("const", np.zeros(64, np.int64))]),
}

# The CLI's entry point, run over many commands in one child process (a process each would take
# a second or more apiece): each command's exit code and what it printed.
_DRIVER = """
import contextlib, io, json, sys
from irscatter import cli
verdicts = {}
for name, argv in json.loads(sys.argv[1]).items():
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main(argv)
    verdicts[name] = [code, out.getvalue(), err.getvalue()]
print(json.dumps(verdicts))
"""


def run_commands(commands: dict[str, list[str]]) -> dict[str, tuple[int, str, str]]:
    done = subprocess.run([sys.executable, "-c", _DRIVER, json.dumps(commands)], capture_output=True, text=True, check=False,
                          timeout=300)
    assert done.returncode == 0, f"the child process ended with {done.returncode}: {done.stderr[-2000:]}"
    return {name: tuple(v) for name, v in json.loads(done.stdout).items()}


@pytest.fixture(scope="module")
def rank_verdicts(tmp_path_factory):
    folder = tmp_path_factory.mktemp("ranks")
    commands = {}
    for name, (type_, version, attrs, inputs, *outputs) in {**OVER_RANK, **AT_RANK_64}.items():
        dims = () if name in OVER_RANK else (1,) if name == "gather_nd" else _ones(64)
        xml = str(_one_layer(folder, name, type_, version, attrs, inputs, *outputs or [1], dims=dims))
        commands[f"run {name}"] = ["run", xml, "--random"]
        commands[f"validate {name}"] = ["validate", xml]
    parameter = _one_layer(folder, "parameter70", "Relu", "opset1", {}, [("param", _ones(70), np.float32)])
    const = _one_layer(folder, "const70", "Relu", "opset1", {}, [("const", np.ones(_ones(64), np.float32))])
    const.write_text(const.read_text().replace('shape="' + ",".join(["1"] * 64) + '"',
                                               'shape="' + ",".join(["1"] * 70) + '"'))
    for xml in (parameter, const):
        commands[f"run {xml.stem}"] = ["run", str(xml), "--random"]
        commands[f"validate {xml.stem}"] = ["validate", str(xml)]
    return run_commands(commands)


@pytest.mark.parametrize("name", sorted(OVER_RANK))
def test_an_output_of_more_than_64_dimensions_is_refused_by_inference(rank_verdicts, name):
    code, _, err = rank_verdicts[f"run {name}"]
    assert code == irscatter.ValidationError.exit_code, err
    assert err.count("\n") == 1 and err.startswith("irscatter: error: "), err
    assert ': layer ' in err and '"under_test"' in err and " output 0: " in err, err
    assert err.rstrip().endswith("[rank-limit]"), err
    code, out, _ = rank_verdicts[f"validate {name}"]
    assert code == 1 and '"under_test"' in out and "[rank-limit]" in out, out


@pytest.mark.parametrize("name", sorted(AT_RANK_64))
def test_a_kernel_on_inputs_of_64_dimensions_computes(rank_verdicts, name):
    code, out, err = rank_verdicts[f"run {name}"]
    assert code == 0 and err == "", err
    assert out.startswith("out0: float32 [")  # the outputs printed
    code, out, _ = rank_verdicts[f"validate {name}"]
    assert code == 0, out


@pytest.mark.parametrize("name", ["parameter70", "const70"])
def test_a_model_input_or_constant_of_more_than_64_dimensions_is_refused_when_read(rank_verdicts, name):
    for command in ("run", "validate"):
        code, out, err = rank_verdicts[f"{command} {name}"]
        text = err or out
        assert code == 1, text
        assert "has rank 70, more than the 64 dimensions an array can have" in text, text
        assert '"in0"' in text and "internal error" not in text, text


def test_the_kernels_of_many_axes_agree_with_their_few_axes_forms():
    """The helpers leave out the axes of extent 1: values as if those axes were never there."""
    rng = np.random.default_rng(0)
    few = rng.standard_normal((2, 8, 3)).astype(np.float32)
    many = few.reshape((2, 8) + _ones(30) + (3,) + _ones(29))
    from irscatter.ops.functional import call
    from irscatter.ops.registry import resolve

    top_k = resolve("TopK", "opset11").cls
    k = np.array(2, np.int64)
    attrs = {"axis": 1, "mode": "max", "sort": "value", "index_element_type": "i64"}
    want_values, want_indices = call(top_k, [few, k], attrs)
    values, indices = call(top_k, [many, k], attrs)
    np.testing.assert_array_equal(values.reshape(want_values.shape), want_values)
    np.testing.assert_array_equal(indices.reshape(want_indices.shape), want_indices)

    gather_elements = resolve("GatherElements", "opset6").cls
    picks = rng.integers(0, 8, (2, 5, 3))
    want = call(gather_elements, [few, picks], {"axis": 1})
    got = call(gather_elements, [many, picks.reshape((2, 5) + many.shape[2:])], {"axis": 1})
    np.testing.assert_array_equal(got.reshape(want.shape), want)

    pad = resolve("Pad", "opset12").cls
    begin, end = np.zeros(many.ndim, np.int64), np.zeros(many.ndim, np.int64)
    begin[1], end[32] = 2, 1
    want = call(pad, [few, np.array([0, 2, 0]), np.array([0, 0, 1])], {"pad_mode": "reflect"})
    got = call(pad, [many, begin, end], {"pad_mode": "reflect"})
    np.testing.assert_array_equal(got.reshape(want.shape), want)

    broadcast = resolve("Broadcast", "opset3").cls
    target = np.array(many.shape)
    target[5] = 4
    got = call(broadcast, [many, target], {"mode": "numpy"})
    np.testing.assert_array_equal(got, np.broadcast_to(many, tuple(target)))



# --- a weights file changed under a compiled model ---------------------------------------------

# In a child process: a SIGBUS (a mapped page past the end of a file cut short) would kill it.
_CHANGE_WEIGHTS = """
import json, os, sys
import numpy as np
import irscatter
xml, change = sys.argv[1], sys.argv[2]
weights = xml[:-4] + ".bin"
compiled = irscatter.read_model(xml).compile()
x = np.zeros(4096, np.float32)
before = compiled.run({"x": x})["y"]
if change == "truncate":
    os.truncate(weights, 8)
else:  # the same size, other values, written into the file in place
    with open(weights, "r+b") as f:
        f.write(np.full(4096, 2, np.float32).tobytes())
try:
    after = compiled.run({"x": x})["y"]
    print(json.dumps({"before": float(before[0]), "after": float(after[-1])}))
except irscatter.IRError as e:
    print(json.dumps({"before": float(before[0]), "error": str(e), "kind": type(e).__name__, "label": e.label}))
"""


def _weights_model(folder: Path) -> Path:
    from helpers import add, param

    n = 4096
    const = layer(1, "w", "Const", data={"element_type": "f32", "shape": str(n), "offset": 0, "size": 4 * n},
                  outputs=[port(0, "FP32", [n])])
    xml = write(folder, net([param(0, "x", [n]), const, add(2, "add", [n]), result(3, "y", [n])],
                            [(0, 0, 2, 0), (1, 0, 2, 1), (2, 2, 3, 0)]), np.ones(n, np.float32).tobytes())
    # a file written long before it is read, as weights are: a write now changes its time for sure
    os.utime(xml.with_suffix(".bin"), ns=(10**18, 10**18))
    return xml


@pytest.mark.parametrize("change", ["truncate", "rewrite"])
def test_a_compiled_model_refuses_to_run_on_a_changed_weights_file(tmp_path, change):
    xml = _weights_model(tmp_path)
    done = subprocess.run([sys.executable, "-c", _CHANGE_WEIGHTS, str(xml), change], capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0, f"the run ended with {done.returncode}: {done.stderr[-2000:]}"
    verdict = json.loads(done.stdout)
    assert verdict["before"] == 1.0
    assert "after" not in verdict, f"ran on the changed file: {verdict}"
    assert verdict["kind"] == "FileAccessError" and verdict["label"] == "weights-changed"
    assert verdict["error"].startswith(f"{xml.with_suffix('.bin')}: the weights file changed since the model was read")
    assert verdict["error"].count("\n") == 0


def test_a_model_read_before_its_weights_changed_refuses_to_compile(tmp_path):
    xml = _weights_model(tmp_path)
    model = irscatter.read_model(xml)
    with open(xml.with_suffix(".bin"), "r+b") as f:
        f.write(np.full(4, 2, np.float32).tobytes())
    with pytest.raises(irscatter.IRError) as err:
        model.compile()
    assert err.value.label == "weights-changed" and err.value.exit_code == 2


def test_a_compiled_model_on_unchanged_weights_runs_as_before(tmp_path):
    xml = _weights_model(tmp_path)
    compiled = irscatter.read_model(xml).compile()
    x = np.arange(4096, dtype=np.float32)
    first = compiled.run({"x": x})["y"]
    os.utime(xml.with_suffix(".bin"), ns=(10**18, 10**18))  # setting the same times again changes its status
    with pytest.raises(irscatter.IRError, match="weights-changed"):
        compiled.run({"x": x})
    again = irscatter.read_model(xml).compile().run({"x": x})["y"]
    np.testing.assert_array_equal(first, again)
    np.testing.assert_array_equal(first, x + 1)


# --- elements of many attributes -------------------------------------------------------------


def _relu_with_attributes(folder: Path, count: int, where: str) -> Path:
    many = " ".join(f'a{i}="{i}"' for i in range(count))
    relu = layer(1, "relu", "Relu", inputs=[port(0, "FP32", [2])], outputs=[port(1, "FP32", [2])])
    if where == "layer":
        relu = relu.replace('version="opset1"', f'version="opset1" {many}', 1)
    elif where == "data":
        relu = relu.replace("<input>", f"<data {many}/><input>", 1)
    else:  # an rt_info attribute of the layer
        relu = relu.replace("</layer>", f'<rt_info><attribute name="many" version="0" {many}/></rt_info></layer>', 1)
    from helpers import param

    return write(folder, net([param(0, "x", [2]), relu, result(2, "y", [2])], [(0, 0, 1, 0), (1, 1, 2, 0)]),
                 name=f"{where}_{count}")


@pytest.mark.parametrize("where", ["layer", "data", "rt_info"])
def test_an_element_of_200000_attributes_is_refused_at_once(tmp_path, where):
    import time

    xml = _relu_with_attributes(tmp_path, 200_000, where)
    assert xml.stat().st_size > 2_000_000
    for read in (irscatter.read_model, irscatter.validate):
        start = time.perf_counter()
        with pytest.raises(irscatter.IRError) as err:
            model = read(xml)
            for finding in getattr(model, "findings", ()):
                if finding.severity == "error":
                    raise irscatter.IRError(finding.message, label=finding.code)
        # reading attributes was quadratic: this took over a minute
        assert time.perf_counter() - start < 5
        assert err.value.label == "xml-attributes", err.value
        assert "has 200" in err.value.message and "(irscatter.limits: xml_attributes)" in err.value.message


@pytest.mark.parametrize("where", ["layer", "data", "rt_info"])
def test_an_element_of_many_attributes_within_the_limit_is_read_whole_by_both_readers(tmp_path, where):
    xml = _relu_with_attributes(tmp_path, 5000, where)
    total = 5000 + {"layer": 4, "data": 0, "rt_info": 2}[where]  # with id, name, type and version; name and version
    with irscatter.limits.using(xml_attributes=total):
        fast = irscatter.read_model(xml)  # the event reader
        from irscatter.ir.loader import read_model_collecting

        tree, problems = read_model_collecting(xml)  # the tree reader
    assert problems == []
    for model in (fast, tree):
        relu = model.layers[1]
        got = {"layer": relu.extra, "data": relu.attrs, "rt_info": relu.rt_info.get("many")}[where]
        assert len(got) == 5000 + (where == "rt_info") and got["a4321"] == "4321", where
    with irscatter.limits.using(xml_attributes=total - 1), pytest.raises(irscatter.IRError, match="xml-attributes"):
        irscatter.read_model(xml)


# --- loops inside loops ------------------------------------------------------------------------


def _loop(lid: int, name: str, inputs: list[str], body: str, port_map: str, back: str) -> str:
    """A Loop-5 layer: `inputs` are the precisions of its inputs (trip count and condition first),
    one FP32 [1] output."""
    ins = "".join(port(i, p, [1] if p == "FP32" else []) for i, p in enumerate(inputs))
    out = port(len(inputs), "FP32", [1])
    return (f'<layer id="{lid}" name="{name}" type="Loop" version="opset5"><port_map>{port_map}</port_map>'
            f"<back_edges>{back}</back_edges><input>{ins}</input><output>{out}</output>"
            f"<body>{body}</body></layer>")


def _body(layers: list[str], edges: list[tuple[int, int, int, int]]) -> str:
    text = net(layers, edges)
    return text[text.index("<layers>"):text.index("</net>")]


def _nested_loops(folder: Path, condition: str) -> Path:
    """acc + 1, inner_trip times, inside a Loop of outer_trip iterations: acc0 + outer * inner. The
    inner body's condition is `go` as fed ("fixed"), or whether its sum is below `bound`
    ("computed"), which changes from one iteration to the next."""
    from helpers import add, param

    layers = [param(0, "v", [1]), param(1, "one", [1]), param(2, "go", [], "boolean", "BOOL"),
              param(3, "bound", [1]), add(4, "step", [1]), result(5, "v_next", [1])]
    edges = [(0, 0, 4, 0), (1, 0, 4, 1), (4, 2, 5, 0)]
    if condition == "fixed":
        layers.append(result(6, "go_on", [], "BOOL"))
        edges.append((2, 0, 6, 0))
    else:
        layers += [layer(7, "below", "Less", data={"auto_broadcast": "numpy"},
                         inputs=[port(0, "FP32", [1]), port(1, "FP32", [1])], outputs=[port(2, "BOOL", [1])]),
                   result(6, "go_on", [1], "BOOL")]
        edges += [(4, 2, 7, 0), (3, 0, 7, 1), (7, 2, 6, 0)]
    inner_loop = _loop(4, "inner", ["I64", "BOOL", "FP32", "FP32", "BOOL", "FP32"], _body(layers, edges),
                       '<input external_port_id="2" internal_layer_id="0"/>'
                       '<input external_port_id="3" internal_layer_id="1"/>'
                       '<input external_port_id="4" internal_layer_id="2"/>'
                       '<input external_port_id="5" internal_layer_id="3"/>'
                       '<output external_port_id="6" internal_layer_id="5"/>'
                       '<output external_port_id="-1" internal_layer_id="6" purpose="execution_condition"/>',
                       '<edge from-layer="5" to-layer="0"/>')
    outer = _body([param(0, "acc", [1]), param(1, "inner_trip", [], "i64", "I64"),
                   param(2, "go", [], "boolean", "BOOL"), param(3, "one", [1]), param(7, "bound", [1]), inner_loop,
                   result(5, "acc_next", [1]), result(6, "go_on", [], "BOOL")],
                  [(1, 0, 4, 0), (2, 0, 4, 1), (0, 0, 4, 2), (3, 0, 4, 3), (2, 0, 4, 4), (7, 0, 4, 5), (4, 6, 5, 0),
                   (2, 0, 6, 0)])
    outer_loop = _loop(5, "outer", ["I64", "BOOL", "FP32", "I64", "BOOL", "FP32", "FP32"], outer,
                       '<input external_port_id="2" internal_layer_id="0"/>'
                       '<input external_port_id="3" internal_layer_id="1"/>'
                       '<input external_port_id="4" internal_layer_id="2"/>'
                       '<input external_port_id="5" internal_layer_id="3"/>'
                       '<input external_port_id="6" internal_layer_id="7"/>'
                       '<output external_port_id="7" internal_layer_id="5"/>'
                       '<output external_port_id="-1" internal_layer_id="6" purpose="execution_condition"/>',
                       '<edge from-layer="5" to-layer="0"/>')
    layers = [param(0, "outer_trip", [], "i64", "I64"), param(1, "inner_trip", [], "i64", "I64"),
              param(2, "go", [], "boolean", "BOOL"), param(3, "acc0", [1]), param(4, "one", [1]),
              param(7, "bound", [1]), outer_loop, result(6, "total", [1])]
    edges = [(0, 0, 5, 0), (2, 0, 5, 1), (3, 0, 5, 2), (1, 0, 5, 3), (2, 0, 5, 4), (4, 0, 5, 5), (7, 0, 5, 6),
             (5, 7, 6, 0)]
    return write(folder, net(layers, edges), name=f"nested_loops_{condition}")


def _nested_feeds(outer: int, inner: int) -> dict[str, np.ndarray]:
    return {"outer_trip": np.int64(outer), "inner_trip": np.int64(inner), "go": np.bool_(True),
            "acc0": np.zeros(1, np.float32), "one": np.ones(1, np.float32), "bound": np.full(1, 1e30, np.float32)}


@pytest.mark.parametrize("condition", ["fixed", "computed"])
def test_nested_loops_within_the_limit_run_every_iteration(tmp_path, condition):
    model = irscatter.read_model(_nested_loops(tmp_path, condition))
    with irscatter.limits.using(loop_iterations=1000):  # 30 outer and 30 * 30 inner iterations: 930
        (total,) = model.run(_nested_feeds(30, 30)).values()
    np.testing.assert_array_equal(total, [900.0])


def test_nested_loops_are_held_to_the_limit_on_their_iterations_in_all(tmp_path):
    """Each loop stays under the limit; together they would make 40 * 40 = 1600 iterations (the
    inner one's condition changes, so nothing tells beforehand that it will not stop early)."""
    model = irscatter.read_model(_nested_loops(tmp_path, "computed"))
    iterations = []
    with irscatter.limits.using(loop_iterations=1000), pytest.raises(irscatter.ExecutionError) as err:
        model.run(_nested_feeds(40, 40), hook=lambda layer, *_: iterations.append(layer.name))
    assert err.value.label == "iteration-limit"
    assert "more than 1000 iterations in all" in err.value.message
    assert '"outer"' in str(err.value)
    assert len([name for name in iterations if name.endswith("/step")]) < 1000  # stopped at the limit
    # a run has a budget of its own: the next one may spend it again
    with irscatter.limits.using(loop_iterations=1000):
        (total,) = model.run(_nested_feeds(30, 30)).values()
    np.testing.assert_array_equal(total, [900.0])


def test_a_million_iterations_inside_a_million_are_refused_at_once(tmp_path):
    """The inner loop's condition never changes and its trip count is more than the run has
    left: told in its first iteration, not after a million."""
    model = irscatter.read_model(_nested_loops(tmp_path, "fixed"))
    iterations = []
    with pytest.raises(irscatter.ExecutionError) as err:
        model.run(_nested_feeds(10**6, 10**6), hook=lambda layer, *_: iterations.append(layer.name))
    assert err.value.label == "iteration-limit" and "would never stop" in err.value.message
    assert len(iterations) < 20


# --- `irscatter examples`: a long run of spaces, a pipe without a writer ----------------------


def test_a_document_of_spaces_after_versioned_name_is_read_in_proportion_to_its_length(tmp_path):
    """The pattern that finds the document's op version once rescanned the spaces in three nested
    ways: 20000 of them took 38 s. 200 KB take milliseconds now; the bound leaves room for a slow
    machine, not for a power law."""
    import time

    from irscatter import examples

    document = tmp_path / "spaces.rst"
    document.write_text("**Versioned name**" + " " * 200_000 + "x\n")
    start = time.perf_counter()
    assert examples.run_document(document) == []
    assert time.perf_counter() - start < 5
    document.write_text("* **Versioned name**: *Gather-8*\n\n<layer id=\"1\" type=\"Gather\"/>\n")
    assert examples._VERSIONED.search(document.read_text()).groups() == ("Gather", "8")


def test_examples_refuses_a_pipe_that_nothing_writes_into(tmp_path):
    fifo = tmp_path / "document.rst"
    os.mkfifo(fifo)
    done = subprocess.run([sys.executable, "-m", "irscatter.cli", "examples", str(fifo)], capture_output=True,
                          text=True, timeout=120, check=False)  # it waited for a writer for ever
    assert done.returncode == 2, done.stderr
    assert done.stderr == f"irscatter: error: {fifo}: document is a pipe, not a regular file: a document is read " \
                          "whole\n"


# --- a model file on a pipe whose writer stalls --------------------------------------------------


def test_a_pipe_whose_writer_stalls_after_its_first_bytes_is_refused_within_the_wait(tmp_path):
    import threading
    import time

    pipe = tmp_path / "model.xml"
    os.mkfifo(pipe)
    release = threading.Event()

    def stalling_writer():
        with open(pipe, "wb") as f:  # (waits for the reader to open its end)
            f.write(b'<?xml version="1.0"?>\n<net name="t" version="11">\n')
            f.flush()
            release.wait(30)  # the reader's wait ran out long before: the reader had blocked until now

    writer = threading.Thread(target=stalling_writer)
    writer.start()
    started = time.monotonic()
    try:
        with irscatter.limits.using(pipe_wait_seconds=1), pytest.raises(irscatter.FileAccessError) as err:
            irscatter.read_model(pipe)
        waited = time.monotonic() - started
    finally:
        release.set()
        writer.join()
    assert err.value.label == "pipe-wait"
    assert "whose writer did not finish within 1 seconds, after 50 bytes" in err.value.message
    assert waited < 20


# --- step keys far apart -------------------------------------------------------------------------

_DECODER = Path(__file__).resolve().parent.parent / "models" / "stateful_decoder"


@pytest.mark.parametrize("last", [2, 999_999])
def test_step_keys_must_name_every_step_from_the_first(tmp_path, capsys, last):
    """`step0/x` and `step999999/x` asked for a million steps of one value; now one line, exit 2,
    before any step runs."""
    from irscatter import cli

    x = np.load(_DECODER / "inputs.npz")["step0/x"]
    feeds = tmp_path / "feeds.npz"
    np.savez(feeds, **{"step0/x": x, f"step{last}/x": x})
    code = cli.main(["run", str(_DECODER / "model.xml"), "--inputs", str(feeds)])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1, err
    assert err == (f"irscatter: error: the inputs are keyed for steps up to step{last}, but none for step1: step keys "
                   "(step<k>/<name>) must name every step from step0 to the last\n")


def test_steps_that_name_every_step_run_each_one(tmp_path, capsys):
    from irscatter import cli

    given = np.load(_DECODER / "inputs.npz")
    feeds = tmp_path / "feeds.npz"
    np.savez(feeds, **{f"step{k}/x": given["step0/x"] for k in range(3)})
    out = tmp_path / "out.npz"
    assert cli.main(["run", str(_DECODER / "model.xml"), "--inputs", str(feeds), "--output", str(out)]) == 0
    assert sorted(k.split("/")[0] for k in np.load(out)) == ["step0", "step1", "step2"]
