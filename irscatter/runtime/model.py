"""The runtime's view of a loaded model: an IR `Model` that can compile and run itself.

`irscatter.read_model` builds models of this class, so `model.run(feeds)` works on what it
returns; the graph classes in `irscatter.ir` stay plain data that know nothing of running.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import PrivateAttr

from irscatter.checks import conformance
from irscatter.checks.conformance import Report
from irscatter.errors import IRError, UsageError
from irscatter.ir.graph import Layer, Model, gc_paused, new_port, output_name
from irscatter.ir.shapes import Dimension, PartialShape, parse_partial_shape
from irscatter.runtime.interpreter import CompiledModel, InputSpec, Outputs, OutputSpec


def compile_model(model: Model) -> CompiledModel:
    """Check the graph, resolve every op and plan the run (done once per model, then cached)."""
    cached = getattr(model, "_compiled", None)
    if cached is not None:
        return cached
    runnable = isinstance(model, RunnableModel)
    with gc_paused():
        compiled = CompiledModel(_plain_view(model) if runnable else model)
    if isinstance(model, RunnableModel):
        model._compiled = compiled
    return compiled


def _plain_view(model: Model) -> Model:
    """A plain `Model` of the same fields and weights, for the compiled model of a runnable model
    to keep: keeping the runnable model itself, which keeps its compiled model, would make a
    cycle, and the two (a graph of 20000 layers, some 200000 objects) would wait for a pass of
    the garbage collector to be freed rather than go when their last user lets go of them."""
    view = Model.model_construct(**dict(model))
    view._weights = model._weights
    return view


class RunnableModel(Model):
    """A loaded IR model that `run()` interprets; the fields describe the graph as written.

    Its namespace holds irscatter's verbs only: `compile`, `run`, `validate`, `inputs`,
    `outputs`, `get_ordered_ops` (and pydantic's `model_*` methods, which the graph classes
    use). Pydantic's deprecated spellings (`json`, `dict`, `copy`, `parse_obj`, ...) are not
    there: `model.validate()` checks the model, it does not build another."""

    _compiled: Any = PrivateAttr(default=None)

    def compile(self) -> CompiledModel:
        """Check the graph, resolve every op and plan the run (done once, then cached)."""
        # Read straight from pydantic's store: its attribute fallback costs microseconds a run.
        cached = (self.__pydantic_private__ or {}).get("_compiled")
        return cached if cached is not None else compile_model(self)

    @property
    def inputs(self) -> list[InputSpec]:  # type: ignore[override]  # (OpenVINO's ports, not the Parameter layers)
        """The model's inputs in Parameter order, with their inferred types and shapes (the
        same objects as the compiled model's; asking compiles the model)."""
        return self.compile().inputs

    @property
    def outputs(self) -> list[OutputSpec]:  # type: ignore[override]  # (OpenVINO's ports, not the Result layers)
        """The model's outputs in Result order, with their inferred types and shapes."""
        return self.compile().outputs

    def get_ordered_ops(self) -> list[Layer]:
        """The layers in the order they run."""
        return self.compile().get_ordered_ops()

    def get_parameters(self) -> list[Layer]:
        """The Parameter layers, in the order of the model's inputs (OpenVINO's spelling)."""
        return [spec.layer for spec in self.inputs]

    def get_results(self) -> list[Layer]:
        """The Result layers, in the order of the model's outputs (OpenVINO's spelling)."""
        return [spec.layer for spec in self.outputs]

    def reshape(self, shapes: Any) -> None:
        """Give inputs new shapes, in place, as OpenVINO's `model.reshape` does: one shape for a
        one-input model, or a dict from input (name, position or `InputSpec`) to shape. A shape is
        a list of ints (-1 for a dynamic dimension), a `PartialShape` or its text ("1,3,?,?").
        The model is inferred again at once; a shape its layers cannot take is refused and the
        model is left as it was."""
        targets = self._reshape_targets(shapes)
        before = self.layers
        self.layers = [_with_shape(layer, targets[layer.id]) if layer.id in targets else layer for layer in before]
        self._compiled = None
        try:
            self.compile()
        except IRError:
            self.layers, self._compiled = before, None
            raise

    def _reshape_targets(self, shapes: Any) -> dict[int, PartialShape]:
        specs = self.inputs
        if not isinstance(shapes, Mapping):
            if len(specs) != 1:
                raise UsageError(f"reshape takes a dict from input to shape for a model of {len(specs)} inputs")
            shapes = {0: shapes}
        compiled = self.compile()
        return {compiled.input(key).layer.id: _partial_shape(value) for key, value in shapes.items()}

    def __repr__(self) -> str:
        """One line, from the file as written (nothing is compiled to print a model)."""
        inputs = ", ".join(f"{p.name}: {p.attrs.get('element_type', '?')} [{p.attrs.get('shape', '?')}]"
                           for p in self.parameters)
        outputs = ", ".join(output_name(r, None) for r in self.results)
        return f"<Model {self.name or self.source!r} inputs[{inputs}] outputs[{outputs}]>"

    def __dir__(self) -> list[str]:
        # What a user may reach: neither the pydantic v1 spellings hidden below nor those
        # pydantic deprecates on instances.
        return [name for name in super().__dir__() if name not in _HIDDEN]

    def validate(self, *, strict: bool = False) -> Report:  # type: ignore[override]  # (over pydantic's deprecated one)
        """Every conformance finding about this model (`irscatter.validate`); `strict=True` adds
        the strict-mode findings its constants decide."""
        return conformance.validate(self, strict=strict)

    def run(
        self,
        feeds: Any = None,
        *onnx_feeds: Any,
        intermediate: bool = False,
        hook: Any = None,
        donate: Any = (),
        outputs: Iterable[str] | None = None,
        strict: bool = False,
        precision: str | None = None,
        decompression: str | None = None,
    ) -> Outputs:
        """Run the model on `feeds`: a dict keyed by input name, tensor name, position or
        `InputSpec`; a list in input order; or one array for a one-input model. onnxruntime's
        `run(None, feeds)` and `run(["name", ...], feeds)` work too.

        Returns the outputs keyed by output name in the XML order of Results (the result also
        answers to positions and `OutputSpec`s). `outputs=[...]` computes other tensors
        instead: any output name, tensor name, or `"<layer name>:<port id>"`. With
        `intermediate=True` every computed tensor is returned, keyed by
        `"<layer name>:<port id>"`. `hook(layer, inputs, outputs)` is called after each
        layer's kernel has run.

        The arrays returned are the caller's own: writable, sharing memory with no fed array
        and with no other output (values of `intermediate=True` are the interpreter's arrays
        as computed, and may view each other). Fed arrays are never written, except those
        named in `donate` (an input's name, position or `InputSpec`, or a list of them): their
        buffers are handed over, and a scatter that is their only reader may write its output
        into them (an output may then share memory with the donated array, whose contents are
        unspecified after the run). A feed that is not row-major (a transposed or strided view)
        is copied row-major first, so its layout never changes the result's bits, and a donated
        one is then left as it was. Intermediate buffers
        are reused the same way whenever nothing else can see them; `intermediate=True` and a
        `hook` turn all reuse off.

        `strict=True` reports every place where the run relies on behaviour the spec leaves
        undefined or only "expects" (duplicate scatter indices without a reduction, an index
        outside the range the spec expects, integer overflow, ...), where irscatter otherwise
        silently makes its one documented choice. The outputs are the same either way; the
        findings are in `outputs.findings`, `Finding`s of severity "warning" whose code is the
        label, each naming the layer (for a layer inside an If, Loop or TensorIterator body,
        the outer layer, with the body and inner layer in the message), the port and the
        positions. A model whose strict runs find nothing computes the same on any conforming
        runtime. Without `strict` the cost is nil and `outputs.findings` is empty.

        `precision="f16"` or `"bf16"` emulates a device that infers in that precision: every
        f32 value a layer produces (and every f32 input and Const) is rounded to it, round to
        nearest even, and stored back as f32, except in the layers OpenVINO keeps in f32
        (`irscatter.runtime.precision` says which). In f16 a magnitude beyond 65504 becomes inf,
        so `intermediate=True` shows the first layer that overflows. The values recorded and
        those a hook sees are the rounded ones, inside If, Loop and TensorIterator bodies too.
        Without a precision the run is the plain f32 one.

        `decompression="f32"` computes the layers that decompress compressed weights (NNCF's
        integer codes, zero points and f16 scales before a MatMul) in f32, as OpenVINO's CPU
        plugin does inside its fully-connected kernel, instead of rounding them to f16 as the
        graph says (`irscatter.runtime.decompression`); every other layer is unchanged.
        """
        if onnx_feeds:  # onnxruntime's and onnx.reference's habit: run(output_names or None, feeds)
            if len(onnx_feeds) != 1 or outputs is not None or not (feeds is None or isinstance(feeds, (list, tuple))):
                raise UsageError("run takes the feeds, or as onnxruntime does (output names or None, feeds); "
                                 "the outputs to compute go in outputs=[...]")
            feeds, outputs = onnx_feeds[0], (None if feeds is None else list(feeds))
            if outputs is None:
                return self.compile().run(feeds, strict=strict, precision=precision, hook=hook, donate=donate,
                                          decompression=decompression)
        return self.compile().run(feeds if feeds is not None else {}, intermediate=intermediate, hook=hook,
                                  donate=donate, outputs=outputs, strict=strict,
                                  precision=precision, decompression=decompression)

    def __call__(self, feeds: Any = None, **kwargs: Any) -> Outputs:
        return self.run(feeds, **kwargs)


def _absent(name: str) -> property:
    """A pydantic v1 spelling hidden from the model's namespace (`hasattr` is False)."""
    def get(self: Any) -> Any:
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
    return property(get)


_PYDANTIC_V1 = ("json", "dict", "copy", "parse_obj", "parse_raw", "parse_file", "from_orm", "construct",
                "schema", "schema_json", "update_forward_refs", "_iter", "_copy_and_set_values",
                "_get_value", "_calculate_keys")
_HIDDEN = frozenset({*_PYDANTIC_V1, "__fields__", "__fields_set__", "model_fields", "model_computed_fields",
                     "__signature__"})
for _name in _PYDANTIC_V1:
    setattr(RunnableModel, _name, _absent(_name))


def _partial_shape(value: Any) -> PartialShape:
    try:
        if isinstance(value, PartialShape):
            return value
        if isinstance(value, str):
            return parse_partial_shape(value)
        return PartialShape.of([int(d) if not isinstance(d, Dimension) else d for d in value])
    except (TypeError, ValueError) as e:
        raise UsageError(f"reshape: {value!r} is no shape ({e})") from None


def _with_shape(layer: Layer, shape: PartialShape) -> Layer:
    """A Parameter layer declaring `shape`, in its attribute and on its output port."""
    ports = [new_port(port.id, port.precision, port.names, shape, port.rt_info) for port in layer.outputs]
    return layer.copy_with(attrs={**layer.attrs, "shape": shape.to_text()}, outputs=ports)
