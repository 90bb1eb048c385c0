"""The public entry points: load a model, compile it, validate it.

This module sits above the runtime, so the models it loads can run themselves and sub-graph
ops find the interpreter's body compiler installed (importing `irscatter.runtime` does that).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, TypeGuard

import numpy as np

from irscatter.checks import conformance
from irscatter.errors import ExecutionError, FileAccessError, IRError, LoadError, UsageError, note
from irscatter.ir import loader, opsets, snippets
from irscatter.ir.element_types import ElementType
from irscatter.ir.graph import Layer, Model, new_port
from irscatter.ir.shapes import PartialShape
from irscatter.ops import registry
from irscatter.ops.base import TensorInfo
from irscatter.ops.functional import run_op
from irscatter.runtime.feeds import as_array, typed_feed
from irscatter.runtime.interpreter import CompiledModel, caller_owned
from irscatter.runtime.model import RunnableModel
from irscatter.runtime.model import compile_model as _compile


def read_model(model: str | os.PathLike | bytes, weights: str | os.PathLike | bytes | np.ndarray | None = None,
               *, progress: Callable[[int, int], None] | None = None) -> RunnableModel:
    """Load an IR model, as OpenVINO's `Core.read_model` takes it: the path of its `.xml` (the
    weights default to the `.bin` beside it), or the XML itself as text or bytes with the weights
    as bytes, an array of bytes or a path. `model.run(feeds)` runs it.

    A `.bin` is memory-mapped and its weights read as runs need them: the model runs on the
    file as it was when read, and refuses to compile or run (`FileAccessError`, label
    `weights-changed`) once the file has changed since (written to, cut short, removed or
    renamed over). Read the model again to run on the new file. `progress(read, total)` is told
    how many bytes of the document have been read, piece by piece, for a bar over a large model."""
    if _is_xml_text(model):
        if isinstance(weights, (str, os.PathLike)):
            weights = _read_weights(weights)
        return parse_model(bytes(model) if isinstance(model, bytearray) else model, weights)
    if not isinstance(model, (str, bytes, os.PathLike)):
        raise UsageError(f"the model must be a path to its .xml, or its XML as text or bytes; got "
                         f"{type(model).__name__}")
    _refuse_other_formats(os.fsdecode(model))
    if weights is not None and not isinstance(weights, (str, os.PathLike)):
        raise UsageError(f"the weights file must be a path when the model is one; got {type(weights).__name__} "
                         f"(weights as bytes go with the XML as text or bytes)")
    runnable = loader.read_model(model, weights, model_class=RunnableModel, progress=progress)
    return runnable  # type: ignore[return-value]  # (an instance of the model_class given, a RunnableModel)


def _is_xml_text(model: Any) -> TypeGuard[str | bytes | bytearray]:
    """XML itself rather than a path to it (a path may come as bytes too, as `os.fsencode` gives)."""
    if isinstance(model, (bytes, bytearray)):
        return bytes(model).lstrip().startswith((b"<", b"\xef\xbb\xbf"))
    return isinstance(model, str) and model.lstrip().startswith(("<", "\ufeff"))


# What other formats a user may hand over, and how each becomes IR.
_OTHER_FORMATS = {
    ".onnx": "an ONNX model",
    ".pb": "a TensorFlow model",
    ".tflite": "a TensorFlow Lite model",
    ".pdmodel": "a PaddlePaddle model",
    ".pt": "a PyTorch model",
    ".pth": "a PyTorch model",
}


def _refuse_other_formats(path: str) -> None:
    kind = _OTHER_FORMATS.get(os.path.splitext(path)[1].lower())
    if kind:
        raise UsageError(f"{path} is {kind}; irscatter reads OpenVINO IR (model.xml + model.bin). Convert it "
                         f"with OpenVINO: `ovc {os.path.basename(path)}`, or in Python "
                         f"`openvino.save_model(openvino.convert_model(path), 'model.xml')`")


def _read_weights(path: str | os.PathLike) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as e:
        raise FileAccessError(f"cannot read the weights file: {e.strerror}", file=os.fspath(path)) from None


def parse_model(xml: bytes | str, weights: bytes | np.ndarray | None = None, *,
                source: str = "<memory>") -> RunnableModel:
    """Load an IR model from memory (`weights` are the `.bin` bytes)."""
    runnable = loader.parse_model(xml, weights, source=source, model_class=RunnableModel)
    return runnable  # type: ignore[return-value]  # (an instance of the model_class given, a RunnableModel)


def compile_model(model: Model | str | os.PathLike | bytes, device_name: str = "CPU",
                  config: Mapping[str, Any] | None = None, *, weights: str | os.PathLike | None = None,
                  ) -> CompiledModel:
    """A model checked, resolved and planned for running: a loaded `Model`, or what `read_model`
    takes (with `weights=`). OpenVINO's arguments are taken as OpenVINO's users write them:
    `compile_model("model.xml", "CPU")` and `compile_model(model, "CPU", {...})`. irscatter computes
    on the host whatever device is named (another device is a note), and of the config it honours
    INFERENCE_PRECISION_HINT (f16 and bf16 are emulated: `run(precision=...)`), takes the settings
    that only steer speed with a note, and refuses the rest (see `device_config`).

    Each call gives a compiled model with variables of its own (the plan is made once per model
    and shared), as each of OpenVINO's infer requests has its own state."""
    precision = device_config(device_name, config)
    if not isinstance(model, Model):
        model = read_model(model, weights)
    compiled = _compile(model).new_request()
    compiled.default_precision = precision
    return compiled


# OpenVINO properties that only steer how fast or where a device runs: irscatter's values do not
# depend on them, so they are taken and left unused (with a note).
_SPEED_ONLY = frozenset({
    "PERFORMANCE_HINT", "PERFORMANCE_HINT_NUM_REQUESTS", "NUM_STREAMS", "INFERENCE_NUM_THREADS", "CACHE_DIR",
    "ENABLE_PROFILING", "ENABLE_CPU_PINNING", "ENABLE_HYPER_THREADING", "SCHEDULING_CORE_TYPE", "AFFINITY",
    "LOG_LEVEL", "CPU_DENORMALS_OPTIMIZATION", "CPU_SPARSE_WEIGHTS_DECOMPRESSION_RATE", "MODEL_PRIORITY",
    "ENABLE_MMAP", "CPU_RUNTIME_CACHE_CAPACITY", "EXCLUSIVE_ASYNC_REQUESTS", "DEVICE_ID",
    "MODEL_DISTRIBUTION_POLICY", "ENABLE_CPU_RESERVATION"})


def device_config(device_name: str, config: Mapping[str, Any] | None) -> str | None:
    """What irscatter makes of OpenVINO's device name and config: the precision to emulate (None
    for f32). A note (`CompatibilityNote`) for what it takes and leaves unused; a UsageError for
    what would change the values in a way it does not reproduce."""
    if not isinstance(device_name, str):
        raise UsageError(f"device_name must be a device name such as \"CPU\"; got {type(device_name).__name__} "
                         f"(a .bin path goes in weights=)", argument="device_name", value=device_name)
    if device_name.lower().endswith((".bin", ".xml")):
        raise UsageError(f'"{device_name}" is a file, not a device: compile_model(model, "CPU", weights="...bin")',
                         argument="device_name", value=device_name)
    if device_name.upper() != "CPU":
        note(f'irscatter computes the reference values on the host; the device "{device_name}" is not used')
    if config is not None and not isinstance(config, Mapping):
        raise UsageError(f"config must be a dict of OpenVINO properties; got {type(config).__name__}", argument="config",
                         value=config)
    precision = None
    unused = []
    for key, value in (config or {}).items():
        name, text = str(key).upper(), str(getattr(value, "value", value)).lower()
        if name == "INFERENCE_PRECISION_HINT":
            name_of = {"f32": None, "float32": None, "f16": "f16", "float16": "f16", "bf16": "bf16",
                       "bfloat16": "bf16", "dynamic": None, "undefined": None}
            if text.removeprefix("<type: '").removesuffix("'>") not in name_of:
                raise UsageError(f"INFERENCE_PRECISION_HINT {value!r}: irscatter runs f32 and emulates f16 and bf16")
            precision = name_of[text.removeprefix("<type: '").removesuffix("'>")]
        elif name == "EXECUTION_MODE_HINT" and text.endswith("accuracy"):
            precision = None
        elif name in _SPEED_ONLY or name == "EXECUTION_MODE_HINT":
            unused.append(name)
        else:
            raise UsageError(f"config {key}={value!r}: irscatter does not reproduce what this property changes "
                             f"(it honours INFERENCE_PRECISION_HINT and takes {', '.join(sorted(_SPEED_ONLY)[:4])}, "
                             f"... as speed settings it has no use for)")
    if unused:
        note(f"irscatter's values do not depend on {', '.join(unused)}: taken and not used")
    return precision


class Core:
    """OpenVINO's `Core`, as far as a reference interpreter has one: `read_model`,
    `compile_model`, and the one device it computes on."""

    available_devices = ("CPU",)

    def read_model(self, model: str | os.PathLike | bytes, weights: Any = None) -> RunnableModel:
        return read_model(model, weights)

    def compile_model(self, model: Model | str | os.PathLike | bytes, device_name: str = "CPU",
                      config: Mapping[str, Any] | None = None, *, weights: Any = None) -> CompiledModel:
        return compile_model(model, device_name, config, weights=weights)


def parse_layer(xml: bytes | str | os.PathLike, *, source: str | None = None) -> Layer:
    """A bare `<layer>` element (text, bytes, or the path of a file holding one), as the op
    specifications show them. A missing id, name or version takes a default (see
    `irscatter.ir.loader.parse_layer`). A snippet that does not parse as written is mended as
    the `examples` command mends spec pages (`irscatter.ir.snippets.repair`: a literal `...`
    in the tag, attributes on `<layer>` rather than `<data>`, ...) and parsed again; if that
    fails too, the error is the one about the text as written."""
    if isinstance(xml, os.PathLike):
        path = os.fspath(xml)
        try:
            with open(path, "rb") as f:
                xml = f.read()
        except OSError as e:
            raise FileAccessError(f"cannot read the layer file: {e.strerror}", file=path) from None
        source = source or path
    source = source or "<memory>"
    try:
        return loader.parse_layer(xml, source=source)
    except LoadError as first:
        text = xml.decode("utf-8", "replace") if isinstance(xml, bytes) else xml
        kind = re.search(r'\btype\s*=\s*"([^"]*)"', text)
        mended, _ = snippets.repair(text.strip(), opsets.newest_opset_holding(kind.group(1) if kind else ""))
        try:
            return loader.parse_layer(mended, source=source)
        except LoadError:
            raise first from None


def run_layer(layer: Layer | bytes | str, inputs: Sequence[Any]) -> list[np.ndarray]:
    """Run one layer on numpy inputs (one per input port, in port order) and return its
    outputs in port order: what unit-testing an example layer of the op spec means.

    The layer's attributes are parsed with its op's schema and every inference check of the
    op applies, as in a model. A Python list or scalar takes the element type its port
    declares; where the port declares none, the type numpy gives it (an integer stays an
    integer, i64), except that a float is f32. An array keeps its own type. A layer written
    without `<input>` ports (a bare snippet) gets one port per input, of the input's type and
    shape. The outputs are the caller's own arrays (never views of the inputs); the inputs are
    never written."""
    if not isinstance(layer, Layer):
        layer = parse_layer(layer)
    if isinstance(inputs, (str, bytes, np.ndarray)) or not isinstance(inputs, Iterable):
        raise UsageError(f"the inputs must be a list, one value per input port, not {type(inputs).__name__}")
    inputs = list(inputs)
    if not layer.inputs and not layer.outputs and inputs:  # a bare snippet: its ports from what it is given
        cls = registry.find(layer.type, layer.version)
        outputs = [new_port(len(inputs) + k, None, (), PartialShape.dynamic_rank(), {})
                   for k in range(cls.outputs if cls is not None else 0)]
        layer = layer.copy_with(inputs=_ports_of(inputs), outputs=outputs)
    op = registry.instantiate(layer)
    if len(inputs) != len(layer.inputs):
        raise ExecutionError(f"the layer has {len(layer.inputs)} input ports, {len(inputs)} inputs were given",
                             layer=layer.ref, label="input-count")
    arrays = _typed_inputs(op, layer, inputs)
    out = run_op(op, arrays)
    return caller_owned(list(out) if isinstance(out, tuple) else [out], arrays)


def _typed_inputs(op: Any, layer: Layer, inputs: list[Any]) -> list[np.ndarray]:
    """The inputs as arrays. A Python value at a port that declares no type is read in its own
    type (integers as i64); if the layer then refuses the types, whole numbers are read as the
    float type of the arrays given beside them, as `[1, 2]` beside an f32 array means."""
    declared = [layer.inputs[i].precision for i in range(len(inputs))]
    natural = [_natural_type(v) if d is None else d for v, d in zip(inputs, declared)]
    arrays = _as_arrays(layer, inputs, natural)
    floats = {a.dtype for a, v in zip(arrays, inputs) if isinstance(v, (np.ndarray, np.generic)) and a.dtype.kind == "f"}
    loose = [i for i, (v, d) in enumerate(zip(inputs, declared))
             if d is None and not isinstance(v, (np.ndarray, np.generic)) and natural[i].is_integral]
    if not loose or len(floats) != 1:
        return arrays
    try:
        op.infer(*(TensorInfo.of(a) for a in arrays))
        return arrays
    except IRError as refused:
        float_type = ElementType.from_dtype(floats.pop())
        retyped = _as_arrays(layer, inputs, [float_type if i in loose else t for i, t in enumerate(natural)])
        try:
            op.infer(*(TensorInfo.of(a) for a in retyped))
        except IRError:
            raise refused from None
        return retyped


def _as_arrays(layer: Layer, inputs: list[Any], types: list[ElementType]) -> list[np.ndarray]:
    arrays = []
    for i, (value, etype) in enumerate(zip(inputs, types)):
        if isinstance(value, (np.ndarray, np.generic)):  # (its own element type, if it is one)
            arrays.append(typed_feed(value, file=None, layer=layer.ref, port=f"input {i}"))
            continue
        try:
            arrays.append(as_array(value, etype.dtype))
        except ValueError as e:
            raise ExecutionError(f"the value cannot be read as {etype}: {e}", layer=layer.ref, port=f"input {i}",
                                 label="feed-dtype") from None
    return arrays


def _natural_type(value: Any) -> ElementType:
    """The element type of a Python value given to a port that declares none: numpy's reading
    of it, floats as f32 (what a model's float ports almost always are)."""
    try:
        kind = np.asarray(value).dtype.kind
    except (TypeError, ValueError):
        return ElementType.f32  # (refused with the reason when read as one)
    return {"b": ElementType.boolean, "i": ElementType.i64, "u": ElementType.u64}.get(kind, ElementType.f32)


def _ports_of(inputs: Sequence[Any]) -> list[Any]:
    """Input ports for a layer written without them: an array's type and shape; a Python value's
    shape, its type left to `_typed_inputs`."""
    ports = []
    for i, value in enumerate(inputs):
        array = value if isinstance(value, (np.ndarray, np.generic)) else None
        etype = None if array is None else _type_of(array)
        try:
            shape = PartialShape.of(list(np.shape(value)))
        except ValueError:  # (rows of different lengths: refused with the reason when read)
            shape = PartialShape.dynamic_rank()
        ports.append(new_port(i, etype, (), shape, {}))
    return ports


def _type_of(array: Any) -> ElementType | None:
    try:
        return ElementType.from_dtype(np.asarray(array).dtype)
    except ValueError:
        return None  # (its run refuses it with the reason)


validate = conformance.validate  # re-exported here, above the runtime that bodies need
