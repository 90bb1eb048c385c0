"""An infer request, as OpenVINO's Python API has them: a compiled model with state of its own that
remembers the tensors of its last run.

`compiled.create_infer_request()` gives one; `request.infer(feeds)` runs it and returns the outputs;
`get_tensor(name or port)`, `get_input_tensor(i)`, `get_output_tensor(i)` and `results` read what the
last run took and gave; `query_state()` and `reset_state()` reach its variables. irscatter runs
synchronously, so `start_async()` runs at once and `wait()` returns at once.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from irscatter.errors import UsageError
from irscatter.runtime.ports import InputSpec, OutputSpec
from irscatter.runtime.variables import VariableState


class InferRequest:
    """A request of a compiled model (`runtime.interpreter.CompiledModel`, which makes them and
    which this module does not import: the arrow points from the interpreter to here)."""

    def __init__(self, compiled: Any) -> None:
        self._compiled = compiled.new_request()  # variables of its own, as each OpenVINO request has
        self._inputs: list[np.ndarray] | None = None
        self._outputs: Any = None

    @property
    def model_inputs(self) -> list[InputSpec]:
        return self._compiled.inputs

    @property
    def model_outputs(self) -> list[OutputSpec]:
        return self._compiled.outputs

    def infer(self, inputs: Any = None, **kwargs: Any) -> Any:
        """Run on `inputs` (as `CompiledModel.run` takes them); the outputs, also kept for
        `get_tensor` and `results`."""
        feeds = inputs if inputs is not None else {}
        outputs = self._compiled.run(feeds, **kwargs)
        self._inputs = self._compiled.feed_arrays(feeds)
        self._outputs = outputs
        return outputs

    def start_async(self, inputs: Any = None, userdata: Any = None) -> None:  # noqa: ARG002 (OpenVINO's signature)
        """Runs at once: irscatter has no asynchronous runs, and `wait()` then has nothing to wait for."""
        self.infer(inputs)

    def wait(self) -> None:
        return None

    @property
    def results(self) -> Any:
        return self._last_outputs()

    def get_tensor(self, key: Any) -> np.ndarray:
        """An input or output of the last run by tensor name, layer name or port object."""
        if isinstance(key, OutputSpec) or (isinstance(key, str) and self._output_index(key) is not None):
            return self.get_output_tensor(key if isinstance(key, OutputSpec) else self._output_index(key))
        if isinstance(key, InputSpec):
            key = key.name
        if isinstance(key, str):
            for i, spec in enumerate(self._compiled.inputs):
                if key == spec.name or key in spec.names:
                    return self.get_input_tensor(i)
        raise UsageError(f"no input or output named {key!r}: the inputs are "
                         f"{[s.any_name for s in self._compiled.inputs]}, the outputs "
                         f"{[s.any_name for s in self._compiled.outputs]}")

    def get_input_tensor(self, index: int = 0) -> np.ndarray:
        if self._inputs is None:
            raise UsageError("the request has not run yet: infer(feeds) first")
        return self._inputs[self._checked(index, len(self._inputs), "input")]

    def get_output_tensor(self, index: Any = 0) -> np.ndarray:
        outputs = self._last_outputs()
        if isinstance(index, OutputSpec):
            return outputs[index]
        return outputs[self._checked(index, len(outputs), "output")]

    def query_state(self) -> list[VariableState]:
        return self._compiled.query_state()

    def reset_state(self) -> None:
        self._compiled.reset_state()

    def _last_outputs(self) -> Any:
        if self._outputs is None:
            raise UsageError("the request has not run yet: infer(feeds) first")
        return self._outputs

    def _output_index(self, name: str) -> int | None:
        for i, spec in enumerate(self._compiled.outputs):
            if name == spec.name or name in spec.names:
                return i
        return None

    @staticmethod
    def _checked(index: Any, count: int, what: str) -> int:
        if not isinstance(index, (int, np.integer)) or isinstance(index, bool) or not 0 <= index < count:
            raise UsageError(f"there is no {what} {index!r}: the model has {count} {what}s")
        return int(index)

    def __repr__(self) -> str:
        return f"<InferRequest of {self._compiled.model.name or self._compiled.model.source!r}>"
