"""OpenVINO in a worker process: read, compile and infer an IR file, or evaluate its core reference.

`OpenVINOProcess` is the parent's handle; `python -m irscatter.targets.openvino` is the worker.
Two kinds of request:

* `infer`: the plugin path users deploy (`read_model`, `compile_model` on a device, one infer
  request). With `check_stable` (the default) the model is run twice, each time into output
  tensors pre-filled with a different byte pattern, and the two answers must agree bit for bit:
  a plugin that leaves part of an output unwritten, or reads uninitialised memory, is caught as
  `unstable` rather than trusted.
* `evaluate`: OpenVINO's core reference implementation (`Model.evaluate`), the code its spec
  is written against, with no plugin involved. Not every op has one.

The worker imports openvino; the parent never does.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from irscatter.targets.worker import TargetFailure, WorkerClient, WorkerProcess, serve_runtime

Feeds = Mapping[str, np.ndarray] | Sequence[np.ndarray]


class OpenVINOProcess(WorkerClient):
    """OpenVINO, one worker process, restarted after any crash or hang."""

    def __init__(self, timeout: float = 300.0) -> None:
        self._worker = WorkerProcess([sys.executable, "-m", "irscatter.targets.openvino"], name="OpenVINO",
                                     timeout=timeout)
        self._version: str | None = None

    def version(self) -> str:
        """OpenVINO's build string, e.g. `2026.4.1-...`; raises `TargetFailure("unavailable")`."""
        if self._version is None:
            self._version = self._worker.request({"kind": "version"})
        return self._version

    def infer(self, xml: str | os.PathLike, feeds: Feeds, *, device: str = "CPU",
              config: Mapping[str, str] | None = None, check_stable: bool = True) -> list[np.ndarray]:
        """The compiled model's outputs in Result order."""
        return self._worker.request({"kind": "infer", "xml": os.fspath(xml), "feeds": _plain(feeds),
                                     "device": device, "config": dict(config or {}), "check_stable": check_stable})

    def output_names(self, xml: str | os.PathLike) -> list[list[str]]:
        """The tensor names of each output of the model as OpenVINO reads it, in the order
        `infer` returns the outputs (which need not be the order of the Results in the file)."""
        return self._worker.request({"kind": "output_names", "xml": os.fspath(xml)})

    def infer_steps(self, xml: str | os.PathLike, steps: Sequence[Feeds], *, device: str = "CPU",
                    config: Mapping[str, str] | None = None, check_stable: bool = True) -> list[list[np.ndarray]]:
        """One infer request run on each feed in turn, so that a stateful model's variables carry
        from one step to the next; the outputs of every step, in Result order."""
        return self._worker.request({"kind": "infer", "xml": os.fspath(xml), "steps": [_plain(f) for f in steps],
                                     "device": device, "config": dict(config or {}), "check_stable": check_stable})

    def inference_precision(self, device: str = "CPU", config: Mapping[str, str] | None = None) -> dict[str, Any]:
        """What the device really infers in under `config`: `{"precision": "f32" | "f16" | "bf16",
        "capabilities": [...]}`. OpenVINO's CPU plugin takes an INFERENCE_PRECISION_HINT it has no
        arithmetic for without a word and keeps its own default (f32 on a CPU without AVX-512,
        bf16 on one with AVX-512 BF16 but no AVX512-FP16), so only the compiled model can say."""
        return self._worker.request({"kind": "inference_precision", "device": device, "config": dict(config or {})})

    def devices(self) -> list[str]:
        """The devices OpenVINO finds on this machine (`Core.available_devices`: CPU, GPU.0, ...)."""
        return self._worker.request({"kind": "devices"})

    def evaluate(self, xml: str | os.PathLike, feeds: Feeds) -> list[np.ndarray]:
        """The core reference's outputs in Result order; `refused` where an op has no reference."""
        return self._worker.request({"kind": "evaluate", "xml": os.fspath(xml), "feeds": _plain(feeds)})



class OpenVINOTarget:
    """OpenVINO on a device, in a worker process, at an inference precision (its
    INFERENCE_PRECISION_HINT; f32 unless asked otherwise, since a CPU with bf16 units would
    otherwise pick bf16 by itself). What the device really runs may differ from what was asked
    (a CPU without f16 arithmetic keeps its default): `ran_precision` asks the device once.
    `properties` go to `compile_model` beside the precision (DYNAMIC_QUANTIZATION_GROUP_SIZE=0
    turns off the CPU plugin's dynamic quantization of activations, say)."""

    def __init__(self, device: str = "CPU", precision: str = "f32", timeout: float = 120.0,
                 properties: Mapping[str, str] | None = None) -> None:
        self.properties = {str(k): str(v) for k, v in (properties or {}).items()}
        if "INFERENCE_PRECISION_HINT" in self.properties:
            raise ValueError("the inference precision is the target's precision, not one of its properties")
        self.device, self.precision = device, precision
        self.name = f"openvino:{device}"
        self._process = OpenVINOProcess(timeout=timeout)
        self._ran: str | None = None

    def _config(self) -> dict[str, str]:
        return {**self.properties, "INFERENCE_PRECISION_HINT": self.precision}

    def check_device(self) -> None:
        """Raise `TargetFailure("unavailable")` unless every physical device the name asks for is
        on this machine, so that a missing GPU is one error before any work rather than every
        layer refused with the plugin's own message."""
        found = self._process.devices()
        missing = [d for d in physical_devices(self.device) if not any(_same_device(d, f) for f in found)]
        if missing:
            raise TargetFailure("unavailable", f"OpenVINO finds no device {', '.join(missing)} on this machine "
                                               f"(it has {', '.join(found) or 'none'})")

    def infer(self, xml: Path, feeds: Mapping[str, np.ndarray]) -> list[np.ndarray]:
        return self._process.infer(xml, dict(feeds), device=self.device, config=self._config())

    def infer_steps(self, xml: Path, steps: Sequence[Mapping[str, np.ndarray]]) -> list[list[np.ndarray]]:
        """One infer request run on each step's feeds in turn, its variables carried over."""
        return self._process.infer_steps(xml, [dict(f) for f in steps], device=self.device, config=self._config())

    def output_names(self, xml: Path) -> list[list[str]]:
        return self._process.output_names(xml)

    def ran_precision(self) -> str:
        """The precision the device infers in when asked for `precision` (f32, f16 or bf16)."""
        if self._ran is None:
            self._ran = str(self._process.inference_precision(self.device, self._config())["precision"])
        return self._ran

    def describe(self) -> str:
        release = self._process.version().split("-")[0]  # 2026.4.1, without the build string
        ran = self.ran_precision()
        asked = "" if ran == self.precision else f" (asked for {self.precision}, which this {self.device} does not run)"
        given = f", with {', '.join(f'{k}={v}' for k, v in self.properties.items())}" if self.properties else ""
        return f"OpenVINO {release} {self.device} at {ran}{asked}{given}"

    def close(self) -> None:
        self._process.close()



# Devices that stand for others (AUTO:GPU,CPU; HETERO:GPU,CPU; MULTI:...; BATCH:GPU(4)).
_VIRTUAL = ("AUTO", "MULTI", "HETERO", "BATCH")


def physical_devices(name: str) -> list[str]:
    """The hardware devices a device name asks for: `GPU.1` itself, the list after a virtual
    device's colon (`HETERO:GPU,CPU`), none for a bare `AUTO`."""
    head, _, rest = name.partition(":")
    if head.upper() in _VIRTUAL:
        return [d.split("(")[0].strip() for d in rest.split(",") if d.strip()]
    return [name.strip()]


def _same_device(asked: str, found: str) -> bool:
    """`GPU` is any GPU; `GPU.1` only that one."""
    return asked == found or ("." not in asked and found.split(".")[0] == asked)


def _plain(feeds: Feeds) -> dict[str, np.ndarray] | list[np.ndarray]:
    if isinstance(feeds, Mapping):
        return {str(k): np.asarray(v) for k, v in feeds.items()}
    return [np.asarray(v) for v in feeds]


# --- the worker ----------------------------------------------------------------------------------


def _to_tensor(ov: Any, array: np.ndarray) -> Any:
    import ml_dtypes

    if array.dtype == ml_dtypes.bfloat16:  # OpenVINO's Python API does not know ml_dtypes
        tensor = ov.Tensor(ov.Type.bf16, list(array.shape))
        tensor.data.view(np.uint16)[...] = array.view(np.uint16)
        return tensor
    if array.dtype == object or array.dtype.kind == "T":  # irscatter's strings are numpy StringDType
        array = np.array(array.tolist(), dtype=str).reshape(array.shape)
    return ov.Tensor(np.require(array, requirements="C"))  # np.ascontiguousarray turns 0-d into 1-d


def _from_tensor(ov: Any, tensor: Any) -> np.ndarray:
    import ml_dtypes

    if tensor.element_type == ov.Type.bf16:
        return np.array(tensor.data).view(np.uint16).view(ml_dtypes.bfloat16)
    if tensor.element_type == ov.Type.string:  # as irscatter holds strings: StringDType
        return np.array(tensor.str_data, dtype=np.dtypes.StringDType()).reshape(tuple(tensor.shape))
    return np.array(tensor.data)


def _ordered(inputs: Sequence[Any], feeds: dict[str, np.ndarray] | list[np.ndarray]) -> list[np.ndarray]:
    """Feeds in the order of `inputs` (ports that know their tensor names)."""
    if isinstance(feeds, list):
        return feeds
    out = []
    for port in inputs:
        names = port.get_names()
        found = [feeds[n] for n in names if n in feeds]
        if not found:
            raise TargetFailure("refused", f"no feed for input {sorted(names)}")
        out.append(found[0])
    return out


def exactly_as(array: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """`array` in numeric type `dtype` when that type holds every value exactly, else as it is:
    OpenVINO reads an IR v10 file under its legacy conventions (an f16 input taken as f32, an
    i64 output given as i32, a boolean one as f32), and each side is met in its own type. The
    CPU plugin takes some ops' bf16 inputs as f32 where the CPU computes in bf16 itself."""
    if array.dtype == dtype or not (_numeric(array.dtype) and _numeric(np.dtype(dtype))):
        return array
    converted = array.astype(dtype)
    back = converted.astype(array.dtype)
    floating = array.dtype.kind == "f" or _of_ml_dtypes(array.dtype)
    exact = np.array_equal(back, array, equal_nan=True) if floating else np.array_equal(back, array)
    return converted if exact else array


def _numeric(dtype: np.dtype) -> bool:
    """Whether `dtype` holds numbers: numpy's own, or ml_dtypes' (bf16, f8, 4-bit types)."""
    return dtype.kind in "biuf" or _of_ml_dtypes(dtype)


def _of_ml_dtypes(dtype: np.dtype) -> bool:
    return dtype.type.__module__ == "ml_dtypes"


# OpenVINO's element types that numpy holds as OpenVINO's `to_dtype` says (it gives f16 for
# bf16, and bytes for the 8-, 4- and 1-bit types)
_NUMPY_TYPES = {"boolean", "f16", "f32", "f64", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64"}


def _in_port_type(array: np.ndarray, port: Any) -> np.ndarray:
    """A feed in the element type the compiled model takes, where that type holds it exactly."""
    import ml_dtypes

    element_type = port.get_element_type()
    name = element_type.get_type_name()
    if name == "bf16":
        return exactly_as(array, np.dtype(ml_dtypes.bfloat16))
    if name not in _NUMPY_TYPES:  # (a dynamic type, or one of ml_dtypes': the feed goes as it is)
        return array
    return exactly_as(array, np.dtype(element_type.to_dtype()))


def _same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.dtype.kind in "OUS":
        return bool(np.array_equal(a, b))
    return np.ascontiguousarray(a).tobytes() == np.ascontiguousarray(b).tobytes()


_CACHE_PRECISIONS = {"float32": "f32", "float16": "f16", "bfloat16": "bf16"}


def _fit_paged_attention(model: Any, feeds: dict[str, np.ndarray] | list[np.ndarray], config: dict[str, str]) -> None:
    """Give each PagedAttentionExtension what OpenVINO GenAI gives it before compiling and a saved
    model does not keep: the heads and head size of its key and value caches (runtime info the
    CPU plugin requires), read from the caches fed, and a cache precision that is theirs, so
    that the plugin neither refuses the model nor quantizes the caches it is handed."""
    attention = [op for op in model.get_ordered_ops() if op.get_type_name() == "PagedAttentionExtension"]
    if not attention:
        return
    fed = {p.get_friendly_name(): a for p, a in zip(model.get_parameters(), _ordered(model.inputs, feeds))}
    for op in attention:
        key, value = (fed.get(op.input_value(i).get_node().get_friendly_name()) for i in (3, 4))
        if key is None or value is None or key.ndim != 4 or value.ndim != 4:
            continue  # caches computed inside the model: the plugin says what it lacks
        info = op.get_rt_info()
        info["num_k_heads"], info["k_head_size"] = int(key.shape[1]), int(key.shape[3])
        info["num_v_heads"], info["v_head_size"] = int(value.shape[1]), int(value.shape[3])
        config.setdefault("KV_CACHE_PRECISION", _CACHE_PRECISIONS.get(str(key.dtype), "f32"))


class _Handler:
    def __init__(self) -> None:
        import openvino as ov

        self.ov = ov
        self.core = ov.Core()
        self.internal_ops_loaded = False

    def __call__(self, request: dict[str, Any]) -> Any:
        kind = request["kind"]
        if kind == "version":
            return self.ov.get_version()
        if kind == "infer":
            return self.infer(request)
        if kind == "evaluate":
            return self.evaluate(request)
        if kind == "inference_precision":
            return self.inference_precision(request)
        if kind == "devices":
            return list(self.core.available_devices)
        if kind == "output_names":
            return [sorted(port.get_names()) for port in self.read(request["xml"]).outputs]
        raise TargetFailure("refused", f"unknown request {kind!r}")

    def read(self, xml: str) -> Any:
        """The model in `xml`. A saved model holding OpenVINO's internal ops (PagedAttentionExtension,
        GatedDeltaNet, ...) reads only once the CPU plugin's library is added to the Core as an
        extension, since the plugin is what registers them; that is done on the first refusal."""
        try:
            return self.core.read_model(xml)
        except RuntimeError as e:
            if "Cannot create" not in str(e) or self.internal_ops_loaded:
                raise
        from pathlib import Path

        for library in sorted((Path(self.ov.__file__).parent / "libs").glob("*openvino_*cpu_plugin*")):
            self.core.add_extension(str(library))
        self.internal_ops_loaded = True
        return self.core.read_model(xml)

    def infer(self, request: dict[str, Any]) -> list[np.ndarray] | list[list[np.ndarray]]:
        """The outputs of a run on the request's `feeds`, or of each step of `steps`."""
        ov = self.ov
        model = self.read(request["xml"])
        config = dict(request["config"])
        _fit_paged_attention(model, request["steps"][0] if "steps" in request else request["feeds"], config)
        compiled = self.core.compile_model(model, request["device"], config)
        stepped = "steps" in request
        steps = [[_in_port_type(a, port) for a, port in zip(_ordered(compiled.inputs, f), compiled.inputs)]
                 for f in (request["steps"] if stepped else [request["feeds"]])]
        patterns = (0x00, 0xA5) if request["check_stable"] else (None,)
        answers = []
        for pattern in patterns:
            infer = compiled.create_infer_request()  # a fresh request: its variables start at their initial values
            outputs = []
            for feeds in steps:
                for i, array in enumerate(feeds):
                    # a tensor of its own each run: a plugin may write into an input (a paged KV cache)
                    infer.set_input_tensor(i, _to_tensor(ov, array.copy()))
                if pattern is not None:
                    self._prefill_outputs(compiled, infer, pattern)
                infer.infer()
                outputs.append([_from_tensor(ov, infer.get_output_tensor(i)) for i in range(len(compiled.outputs))])
            answers.append(outputs)
        first = answers[0]
        for other in answers[1:]:
            for i, (a, b) in enumerate((x, y) for step, ostep in zip(first, other) for x, y in zip(step, ostep)):
                if not _same_bits(a, b):
                    diff = int(np.sum(a != b)) if a.shape == b.shape else a.size
                    raise TargetFailure("unstable", f"OpenVINO's {request['device']} plugin gave two different "
                                                    f"answers for output {i} on the same inputs ({diff} of {a.size} "
                                                    f"elements differ): it read or returned memory it had not written")
        return first if stepped else first[0]

    def _prefill_outputs(self, compiled: Any, infer: Any, pattern: int) -> None:
        ov = self.ov
        for i, port in enumerate(compiled.outputs):
            shape, etype = port.get_partial_shape(), port.get_element_type()
            if shape.is_dynamic or etype in (ov.Type.string, ov.Type.dynamic):
                continue  # the plugin allocates these itself; the second run still tells
            tensor = ov.Tensor(etype, shape.to_shape())
            if tensor.byte_size:
                raw = tensor.data
                raw.reshape(-1).view(np.uint8)[...] = pattern
            infer.set_output_tensor(i, tensor)

    def inference_precision(self, request: dict[str, Any]) -> dict[str, Any]:
        """Compile a one-MatMul model under the request's config and read back the precision the
        plugin settled on (it depends on the device and the config, not on the model)."""
        ov = self.ov
        x = ov.opset13.parameter([1, 16], ov.Type.f32, name="x")
        weights = ov.opset13.constant(np.ones((16, 16), np.float32))
        probe = ov.Model([ov.opset13.matmul(x, weights, False, False)], [x], "precision_probe")
        compiled = self.core.compile_model(probe, request["device"], request["config"])
        chosen = compiled.get_property("INFERENCE_PRECISION_HINT")
        name = chosen.get_type_name() if chosen != ov.Type.dynamic else "f32"  # dynamic: ACCURACY mode, f32
        try:
            capabilities = list(self.core.get_property(request["device"], "OPTIMIZATION_CAPABILITIES"))
        except Exception:  # (a device that does not say)
            capabilities = []
        return {"precision": name, "capabilities": capabilities}

    def evaluate(self, request: dict[str, Any]) -> list[np.ndarray]:
        ov = self.ov
        model = self.read(request["xml"])
        feeds = [_to_tensor(ov, a) for a in _ordered(model.inputs, request["feeds"])]
        outputs = [ov.Tensor(port.get_element_type(), [0] * port.get_partial_shape().rank.get_length()
                             if port.get_partial_shape().rank.is_static else [0])
                   for port in model.outputs]
        if not model.evaluate(outputs, feeds):
            raise TargetFailure("refused", "OpenVINO's core reference cannot evaluate this model "
                                           "(an op or element type without a reference implementation)")
        return [_from_tensor(ov, t) for t in outputs]


def main() -> None:
    serve_runtime(_Handler, "openvino is not installed ({error}); `pip install irscatter[openvino]` adds it")


if __name__ == "__main__":
    main()
