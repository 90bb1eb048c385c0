"""The variables of a stateful model: what ReadValue reads and Assign writes.

A compiled model owns one `Variables` store and makes it current while it runs (a context
variable, so nested bodies and other threads see the right one). ReadValue reads the value
committed by an earlier run. Assign only stages its value: the run commits every staged value
when it has finished, so a run that fails leaves the variables as they were, and a ReadValue
ordered after the Assign of its variable still sees the previous run's value, as it does in
OpenVINO, where the pair shares one buffer that the Assign overwrites for the next inference.
"""

from __future__ import annotations

from contextvars import ContextVar
from dataclasses import dataclass, field

import numpy as np

from irscatter.ir.element_types import ElementType
from irscatter.ir.shapes import PartialShape


@dataclass(frozen=True)
class VariableInfo:
    """What the model declares about a variable (from its ReadValue)."""

    variable_id: str
    etype: ElementType
    shape: PartialShape


@dataclass
class Variables:
    values: dict[str, np.ndarray] = field(default_factory=dict)
    staged: dict[str, np.ndarray] = field(default_factory=dict)

    def read(self, variable_id: str) -> np.ndarray | None:
        return self.values.get(variable_id)

    def stage(self, variable_id: str, value: np.ndarray) -> None:
        # A copy: the value may be a buffer the interpreter reuses later in the run, or a fed
        # array the caller still owns.
        self.staged[variable_id] = np.array(value, copy=True)

    def commit(self) -> None:
        self.values.update(self.staged)
        self.staged.clear()

    def discard(self) -> None:
        self.staged.clear()

    def reset(self, variable_id: str | None = None) -> None:
        if variable_id is None:
            self.values.clear()
        else:
            self.values.pop(variable_id, None)


_CURRENT: ContextVar[Variables | None] = ContextVar("irscatter_variables", default=None)


def current() -> Variables | None:
    """The store of the model being run (None outside a run: inference, the functional API)."""
    return _CURRENT.get()


class using:  # noqa: N801 - used as a function: `with state.using(store):`
    """Make `store` current for one run; commit its staged values if the run succeeds, discard
    them if it fails. (A class rather than a generator: it is entered on every run.)"""

    def __init__(self, store: Variables) -> None:
        self.store = store

    def __enter__(self) -> Variables:
        self.token = _CURRENT.set(self.store)
        return self.store

    def __exit__(self, kind, error, trace) -> None:
        try:
            if kind is None:
                self.store.commit()
            else:
                self.store.discard()
        finally:
            _CURRENT.reset(self.token)
