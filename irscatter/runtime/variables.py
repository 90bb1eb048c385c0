"""A handle on one variable of a compiled model, as OpenVINO's `VariableState` is on an infer
request's: its name, its value, and setting or resetting it."""

from __future__ import annotations

from typing import Any

import numpy as np

from irscatter.errors import ExecutionError
from irscatter.ir.element_types import ElementType
from irscatter.ops.state.core import VariableInfo, Variables


class VariableState:
    def __init__(self, info: VariableInfo, store: Variables) -> None:
        self.info = info
        self._store = store

    @property
    def name(self) -> str:
        return self.info.variable_id

    @property
    def state(self) -> np.ndarray | None:
        """The value the next run reads (a copy), or None while the variable holds its initial
        value (before the first run and after a reset: the initial value is computed by the run)."""
        value = self._store.read(self.name)
        return None if value is None else value.copy()

    def set_state(self, value: Any) -> None:
        """Make the next run read `value`; its type and shape must fit the variable's."""
        etype = self.info.etype
        try:
            given = np.asarray(value)
            if etype is ElementType.dynamic:
                ElementType.from_dtype(given.dtype)  # a type a tensor can have
        except (TypeError, ValueError) as e:
            raise ExecutionError(f'variable "{self.name}" cannot hold {type(value).__name__} {value!r:.60}: {e}',
                                 label="variable-type") from None
        if etype is not ElementType.dynamic and given.dtype != etype.dtype:
            raise ExecutionError(f'variable "{self.name}" holds {etype} ({etype.dtype}), the value is '
                                 f"{given.dtype}", label="variable-type")
        array = np.array(given, copy=True)
        if not self.info.shape.accepts(array.shape):
            raise ExecutionError(f'variable "{self.name}" has shape {self.info.shape}, the value has '
                                 f"{list(array.shape)}", label="variable-shape")
        self._store.values[self.name] = array

    def reset(self) -> None:
        """Back to the initial value, which the next run computes."""
        self._store.reset(self.name)

    def __repr__(self) -> str:
        value = self._store.read(self.name)
        now = "initial" if value is None else f"{value.dtype}{list(value.shape)}"
        return f"VariableState({self.name!r}, {self.info.etype}{self.info.shape}, {now})"
