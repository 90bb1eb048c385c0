"""onnxruntime in a worker process: an ONNX model run with every intermediate value returned.

`OnnxRuntimeTarget` is the parent's handle; `python -m irscatter.targets.onnxruntime` is the
worker. It runs the ONNX file an IR was converted from, not an IR, so it is not a `Target`
(`targets.protocol`): the comparison (`debug.onnx_compare`) asks it two things:

* `graph`: the model's inputs and the values its nodes make, in the order of the nodes, each
  with the node that makes it and whether it can be returned. Only the `onnx` package is used
  here (no session), so a model onnxruntime cannot run is still described.
* `values`: the model run once on onnxruntime's CPU provider with the values asked for as extra
  graph outputs, returned by ONNX value name. Their types come from onnx's shape inference; a
  value inference leaves untyped goes out with a bare name, whose type onnxruntime works out
  itself, and a value of a type that is not a tensor (a sequence, a map, an optional) is not
  returned. Graph optimizations are off, so each node runs as its own kernel, as the file
  says.

The worker imports onnx and onnxruntime; the parent never does.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from irscatter.targets.openvino import exactly_as
from irscatter.targets.worker import TargetFailure, WorkerClient, WorkerProcess, module_command, serve_runtime

INSTALL = "`pip install irscatter[onnxruntime]` adds it"
_START_SECONDS = 60.0


class OnnxRuntimeTarget(WorkerClient):
    """onnxruntime's CPU provider in a worker process, restarted after any crash or hang.
    `timeout` limits a run of the model; starting the worker and reading the file get at
    least a minute. `threads` is its intra-op thread count (0: onnxruntime's choice, every
    core)."""

    name = "onnxruntime:CPU"

    def __init__(self, timeout: float = 300.0, threads: int = 0, command: list[str] | None = None) -> None:
        self.threads = threads
        self.timeout = timeout
        self._worker = WorkerProcess(command or module_command("irscatter.targets.onnxruntime"), name="onnxruntime",
                                     timeout=max(timeout, _START_SECONDS))
        self._version: str | None = None

    def version(self) -> str:
        """onnxruntime's version, e.g. `1.20.1`; raises `TargetFailure("unavailable")`."""
        if self._version is None:
            self._version = self._worker.request({"kind": "version"})
        return self._version

    def graph(self, onnx_path: str | os.PathLike) -> dict[str, Any]:
        """What the model holds: `inputs` [name] (those fed: not initializers), `values` [(name,
        node name, op type)] in node order, `skipped` [(name, why)] for values that cannot be
        returned, `outputs` [name]."""
        return self._worker.request({"kind": "graph", "onnx": os.fspath(onnx_path)})

    def values(self, onnx_path: str | os.PathLike, feeds: Mapping[str, np.ndarray],
               names: Sequence[str]) -> dict[str, np.ndarray]:
        """The model run on `feeds` (by ONNX input name): the values `names`, by name."""
        return self._worker.request({"kind": "values", "onnx": os.fspath(onnx_path), "threads": self.threads,
                                     "feeds": {str(k): np.asarray(v) for k, v in feeds.items()},
                                     "names": list(names)}, timeout=self.timeout)

    def describe(self) -> str:
        return f"onnxruntime {self.version()} CPU"


# --- the worker ----------------------------------------------------------------------------------


class _Handler:
    def __init__(self) -> None:
        import onnx
        import onnxruntime

        self.onnx, self.ort = onnx, onnxruntime
        self._model: tuple[tuple[str, int, int], Any, dict[str, Any], dict[str, Any]] | None = None  # the last read

    def __call__(self, request: dict[str, Any]) -> Any:
        kind = request["kind"]
        if kind == "version":
            return self.ort.__version__
        if kind == "graph":
            return self.read(request["onnx"])[1]
        if kind == "values":
            return self.run(request)
        raise TargetFailure("refused", f"unknown request {kind!r}")

    def read(self, path: str) -> tuple[Any, dict[str, Any], dict[str, Any]]:
        """The model in `path` (its weights in external files left there: onnxruntime reads them
        beside the file), its description, and each returnable value's type (None: untyped);
        kept while the file stays the same."""
        stat = os.stat(path)
        stamp = (os.path.abspath(path), stat.st_mtime_ns, stat.st_size)
        if self._model is None or self._model[0] != stamp:
            model = self.onnx.load(path, load_external_data=False)
            self._model = (stamp, model, *self._describe(model))
        return self._model[1], self._model[2], self._model[3]

    def _types(self, model: Any) -> dict[str, Any]:
        """Each value's type as onnx's shape inference gives it (none for what it cannot infer)."""
        try:
            inferred = self.onnx.shape_inference.infer_shapes(model)
        except Exception:  # (an op it has no inference for, or a model too large to copy): no types
            inferred = model
        graph = inferred.graph
        return {vi.name: vi.type for vi in (*graph.input, *graph.value_info, *graph.output)}

    def _describe(self, model: Any) -> tuple[dict[str, Any], dict[str, Any]]:
        graph = model.graph
        constants = {init.name for init in graph.initializer}
        types = self._types(model)
        inputs = [vi.name for vi in graph.input if vi.name not in constants]
        values, skipped, typed = [], [], {}
        for node in graph.node:
            for name in node.output:
                if not name or name in typed:
                    continue
                kind = types[name].WhichOneof("value") if name in types else None
                if kind not in (None, "tensor_type"):
                    skipped.append((name, f"a {kind.removesuffix('_type')}, not a tensor"))
                    continue
                typed[name] = types.get(name)
                values.append((name, node.name, node.op_type))
        info = {"inputs": inputs, "values": values, "skipped": skipped, "outputs": [vi.name for vi in graph.output]}
        return info, typed

    def run(self, request: dict[str, Any]) -> dict[str, np.ndarray]:
        model, info, typed = self.read(request["onnx"])
        known = {name for name, _, _ in info["values"]} | set(info["inputs"])
        names = [n for n in request["names"] if n in known]
        unknown = sorted(set(request["names"]) - known)
        if unknown:
            raise TargetFailure("refused", f"the model has no value {', '.join(unknown[:5])}")
        extended = self.onnx.ModelProto()
        extended.CopyFrom(model)
        present = {vi.name for vi in model.graph.output} | set(info["inputs"])
        for name in names:
            if name in present:
                continue
            present.add(name)
            if typed.get(name) is not None:
                extended.graph.output.append(self.onnx.helper.make_value_info(name, typed[name]))
            else:  # untyped: onnxruntime infers an output's type from the node that makes it
                extended.graph.output.append(self.onnx.ValueInfoProto(name=name))
        options = self.ort.SessionOptions()
        options.graph_optimization_level = self.ort.GraphOptimizationLevel.ORT_DISABLE_ALL
        options.intra_op_num_threads = int(request.get("threads", 0))
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")  # one run: no busy waiting
        options.add_session_config_entry("session.model_external_initializers_file_folder_path",
                                         os.path.dirname(os.path.abspath(request["onnx"])))
        session = self.ort.InferenceSession(extended.SerializeToString(), options, providers=["CPUExecutionProvider"])
        feeds = {}
        for port in session.get_inputs():
            if port.name not in request["feeds"]:
                raise TargetFailure("refused", f"no feed for ONNX input {port.name!r}")
            feeds[port.name] = _as_input(request["feeds"][port.name], port.type)
        fed = {n: a for n, a in feeds.items() if n in names}
        wanted = [n for n in names if n not in fed]
        got = session.run(wanted, feeds) if wanted else []
        return {**fed, **{n: _plain_array(a) for n, a in zip(wanted, got)}}


_ORT_TYPES = {"tensor(float)": np.float32, "tensor(double)": np.float64, "tensor(float16)": np.float16,
              "tensor(int64)": np.int64, "tensor(int32)": np.int32, "tensor(int16)": np.int16, "tensor(int8)": np.int8,
              "tensor(uint64)": np.uint64, "tensor(uint32)": np.uint32, "tensor(uint16)": np.uint16,
              "tensor(uint8)": np.uint8, "tensor(bool)": np.bool_}


def _as_input(array: np.ndarray, ort_type: str) -> np.ndarray:
    """A feed in the type the session takes, where that type holds it exactly; strings as str."""
    if ort_type == "tensor(string)":
        return np.array(np.asarray(array).tolist(), dtype=object).reshape(np.shape(array))
    wanted = _ORT_TYPES.get(ort_type)
    return exactly_as(np.asarray(array), np.dtype(wanted)) if wanted is not None else np.asarray(array)


def _plain_array(array: Any) -> np.ndarray:
    """onnxruntime's answer as irscatter holds it (strings as StringDType)."""
    array = np.asarray(array)
    if array.dtype == object:
        return np.array(array.tolist(), dtype=np.dtypes.StringDType()).reshape(array.shape)
    return array


def main() -> None:
    serve_runtime(_Handler, "onnxruntime or onnx is not installed ({error}); " + INSTALL)


if __name__ == "__main__":
    main()
