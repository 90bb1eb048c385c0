"""Runs OpenVINO's internal ops, and the subgraph OpenVINO fuses into MOE, on its CPU plugin.

    python internal_ops_openvino.py JOBS_JSON

JOBS_JSON lists jobs, each writing `<out>` (an .npz):

* `{"kind": "ir", "xml": ..., "feeds": NPZ, "out": ...}`: one IR file, fed the arrays `feeds`
  holds (named by input position: "0", "1", ...), with f32 inference. The plugin registers the
  internal ops it runs (GatedDeltaNet, PagedGatedDeltaNet) as extensions only once it is loaded,
  so the plugin is loaded before the file is read. Every input is given as a tensor over the
  fed array itself, so an op that writes an input in place (PagedGatedDeltaNet's state table)
  is seen doing so: the .npz holds `out/<i>` and `after/<i>`, each input after the run.
* `{"kind": "moe", "arrays": NPZ, "expert_type": ..., "alpha": a, "beta": b, "activation": ...,
  "out": ...}`: the tiled Mixture of Experts block as OpenVINO's FuseVectorizedMOE2GEMM and
  FuseVectorizedMOE3GEMM match it (every token through every expert, the outputs weighted by a
  dense routing tensor [E, B, 1, 1] and summed over the experts), built from opset operations
  with the weights of `arrays` as constants, fed `hidden` and `routing`. The CPU plugin does not
  run MOE itself, so this is the computation MOE replaces. `out/0` is its output.
"""

import json
import sys

import numpy as np
import openvino as ov
import openvino.opset13 as ops

BIG = np.iinfo(np.int64).max


def run_ir(core, job):
    feeds = dict(np.load(job["feeds"]))
    arrays = [np.ascontiguousarray(feeds[str(i)]) for i in range(len(feeds))]
    compiled = core.compile_model(core.read_model(job["xml"]), "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
    request = compiled.create_infer_request()
    for i, array in enumerate(arrays):
        request.set_input_tensor(i, ov.Tensor(array, shared_memory=True))
    request.infer()
    results = {f"out/{i}": np.array(request.get_output_tensor(i).data) for i in range(len(compiled.outputs))}
    results.update({f"after/{i}": array for i, array in enumerate(arrays)})
    np.savez(job["out"], **results)


def _const(array):
    return ops.constant(np.array(array))  # a scalar stays 0-D


def moe_subgraph(job):
    arrays = dict(np.load(job["arrays"]))
    hidden = ops.parameter(list(arrays["hidden"].shape), np.float32, name="hidden")
    routing = ops.parameter(list(arrays["routing"].shape), np.float32, name="routing")
    size = arrays["hidden"].shape[-1]
    experts = arrays["w0"].shape[0]
    rows = arrays["routing"].shape[1]
    flat = ops.reshape(hidden, _const(np.array([-1, size], np.int64)), False)
    tiled = ops.reshape(ops.tile(flat, _const(np.array([experts, 1], np.int64))),
                        _const(np.array([experts, -1, size], np.int64)), False)
    beta = _const(np.float32(job["beta"]))
    if job["expert_type"] == "gemm2_bias_swiglu_clamp":
        alpha = np.float32(job["alpha"])
        gate_up = ops.add(ops.matmul(tiled, _const(arrays["w0"]), False, False), _const(arrays["b0"]))
        axis = _const(np.array([-1], np.int64))
        step = _const(np.array([2], np.int64))
        stop = _const(np.array([BIG], np.int64))
        slice_1 = ops.slice(gate_up, _const(np.array([0], np.int64)), stop, step, axis)
        slice_2 = ops.slice(gate_up, _const(np.array([1], np.int64)), stop, step, axis)
        swished = ops.swish(ops.minimum(slice_2, _const(alpha)), beta)
        clamped = ops.add(ops.clamp(slice_1, -float(alpha), float(alpha)), _const(np.float32(1)))
        down = ops.matmul(ops.multiply(clamped, swished), _const(arrays["w1"]), False, False)
        if "b1" in arrays:
            down = ops.add(down, _const(arrays["b1"]))
    else:
        gate = ops.matmul(tiled, _const(arrays["w0"]), False, True)
        activation = job.get("activation", "swiglu")
        if activation == "swiglu":
            activated = ops.swish(gate, beta)
        else:
            activated = ops.gelu(gate, "tanh" if activation == "geglu_tanh" else "erf")
        up = ops.matmul(tiled, _const(arrays["w1"]), False, True)
        down = ops.matmul(ops.multiply(activated, up), _const(arrays["w2"]), False, True)
    routed = ops.multiply(ops.reshape(down, _const(np.array([experts, rows, -1, size], np.int64)), False), routing)
    summed = ops.reduce_sum(routed, _const(np.array([0], np.int64)), False)
    out = ops.reshape(summed, _const(np.array(arrays["hidden"].shape, np.int64)), False)
    return ov.Model([ops.result(out)], [hidden, routing], "moe_block"), [arrays["hidden"], arrays["routing"]]


def main() -> None:
    core = ov.Core()
    core.get_versions("CPU")  # loads the plugin, and with it the internal ops it reads
    for job in json.loads(open(sys.argv[1]).read()):
        if job["kind"] == "ir":
            run_ir(core, job)
        else:
            model, feeds = moe_subgraph(job)
            compiled = core.compile_model(model, "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
            np.savez(job["out"], **{"out/0": np.array(compiled(feeds)[0])})


if __name__ == "__main__":
    main()
