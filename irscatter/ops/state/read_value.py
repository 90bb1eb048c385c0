"""ReadValue-3 and ReadValue-6: the value of a model variable, kept across runs.

On the first run of a compiled model, and after its state is reset, ReadValue returns its
initial value: the `init_value` input, or (ReadValue-6 without that input) zeros of the
variable's declared type and shape. On later runs it returns what the variable's Assign wrote
in the previous run. The returned array is read-only: it is the stored value itself, and
nothing downstream may change the state by writing into it.
"""

from __future__ import annotations

import numpy as np

from irscatter.errors import ExecutionError
from irscatter.ir.element_types import ElementType
from irscatter.ir.shapes import PartialShape
from irscatter.ops.base import ElementTypeAttr, Op, OpAttrs, TensorInfo, check, required
from irscatter.ops.registry import register
from irscatter.ops.state import core


def _frozen(array: np.ndarray) -> np.ndarray:
    view = np.asarray(array).view()
    view.flags.writeable = False
    return view


# ReadValue-3's input is not optional (the op's input count is checked before this is reached).
_NO_INITIAL_VALUE = "ReadValue-3 takes its variable's type, shape and first value from its input, the layer has none"


@register("ReadValue", 3)
class ReadValue(Op):
    class Attrs(OpAttrs):
        variable_id: str
    attrs: Attrs

    inputs = ("init_value",)
    foldable = False  # its value depends on earlier runs, never on its input alone

    def __init__(self, layer) -> None:
        super().__init__(layer)
        check(self.attrs.variable_id.strip() != "", "variable-id", "variable_id must not be empty",
              port=self.port("variable_id"))

    def variable(self, init: TensorInfo | None) -> core.VariableInfo:
        """What the variable holds; ReadValue-3 takes it from its initial value."""
        init = required(init, "input-count", _NO_INITIAL_VALUE)
        return core.VariableInfo(self.attrs.variable_id, init.etype, init.shape)

    def infer(self, init: TensorInfo | None = None) -> TensorInfo:
        info = self.variable(init)
        return TensorInfo(info.etype, info.shape)

    def initial(self, init: np.ndarray | None) -> np.ndarray:
        return required(init, "input-count", _NO_INITIAL_VALUE)

    def compute(self, init: np.ndarray | None = None) -> np.ndarray:
        store = core.current()
        value = store.read(self.attrs.variable_id) if store is not None else None
        if value is None:
            value = self.initial(init)
        return _frozen(value)


@register("ReadValue", 6)
class ReadValue6(ReadValue):
    class Attrs(ReadValue.Attrs):
        variable_type: ElementTypeAttr
        variable_shape: PartialShape
    attrs: Attrs

    optional_inputs = 1

    def variable(self, init: TensorInfo | None) -> core.VariableInfo:
        etype, shape = self.attrs.variable_type, self.attrs.variable_shape
        if init is not None:
            # The declared type and shape may only relax what the initial value has (checked again
            # on the value itself, whose shape inference may not know).
            check(etype is ElementType.dynamic or init.etype is ElementType.dynamic or init.etype is etype,
                  "variable-type", f"the initial value is {init.etype}, the variable is {etype}",
                  port=self.port("init_value"))
            check(shape.compatible(init.shape), "variable-shape",
                  f"the initial value has shape {init.shape}, which the variable's shape {shape} does not allow",
                  port=self.port("init_value"))
            if etype is ElementType.dynamic:
                etype = init.etype
        else:
            check(etype is not ElementType.dynamic and shape.is_static, "variable-shape",
                  f"without an initial value the variable starts as zeros, so its type and shape must be "
                  f"static (found {etype}, {shape})", port=self.port("variable_shape"))
        return core.VariableInfo(self.attrs.variable_id, etype, shape)

    def initial(self, init: np.ndarray | None) -> np.ndarray:
        if init is None:
            return np.zeros(self.attrs.variable_shape.to_tuple(), dtype=self.attrs.variable_type.dtype)
        # Inference may not have known the initial value's shape; the value itself must fit.
        if not self.attrs.variable_shape.accepts(init.shape):
            raise ExecutionError(f"the initial value has shape {list(init.shape)}, which the variable's shape "
                                 f"{self.attrs.variable_shape} does not allow", label="variable-shape",
                                 port=self.port("init_value"))
        return init
