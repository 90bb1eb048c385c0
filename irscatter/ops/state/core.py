"""The variables of a stateful model: what ReadValue reads and Assign writes.

A compiled model owns one `Variables` store and makes it current while it runs (the run
context's `variables`, `ops/context.py`, so nested bodies and other threads see the right one). ReadValue reads the value
committed by an earlier run. Assign only stages its value: the run commits every staged value
when it has finished, so a run that fails leaves the variables as they were, and a ReadValue
ordered after the Assign of its variable still sees the previous run's value, as it does in
OpenVINO, where the pair shares one buffer that the Assign overwrites for the next inference.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

import numpy as np

from irscatter.errors import ExecutionError
from irscatter.ir.element_types import ElementType
from irscatter.ir.shapes import PartialShape
from irscatter.ops import context
from irscatter.ops.common import growth


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
    # Runs that read and write the store take turns (see `using`); `holder` is the thread whose
    # run has the turn.
    turn: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)
    holder: int | None = field(default=None, repr=False, compare=False)

    def read(self, variable_id: str) -> np.ndarray | None:
        return self.values.get(variable_id)

    def stage(self, variable_id: str, value: np.ndarray) -> None:
        # A copy: the value may be a buffer the interpreter reuses later in the run, or a fed
        # array the caller still owns; but not of a growing cache's view, which nothing writes
        # (`ops/common/growth.py`).
        self.staged[variable_id] = value if growth.holds(value) else np.array(value, copy=True)

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


def current() -> Variables | None:
    """The store of the model being run (None outside a run: inference, the functional API)."""
    return context.current().variables


class using:  # noqa: N801 - used as a function: `with state.using(store):`
    """Make `store` current for one run; commit its staged values if the run succeeds, discard
    them if it fails. (A class rather than a generator: it is entered on every run.)

    With `exclusive` (a model that has variables), runs on the store take turns, as an OpenVINO
    infer request runs one inference at a time: a run from another thread waits for the one in
    progress, since two runs staging into one store would commit each other's values and leave
    the variables out of step with each other. A run the running thread starts again (a hook
    running the model it watches) could only wait for itself, and is refused."""

    def __init__(self, store: Variables, exclusive: bool = False) -> None:
        self.store, self.exclusive = store, exclusive

    def __enter__(self) -> Variables:
        store = self.store
        if self.exclusive:
            me = threading.get_ident()
            if store.holder == me:
                raise ExecutionError("the model is already running in this thread, and its variables serve one "
                                     "run at a time: a run started from inside another (a hook?) needs a state "
                                     "of its own (new_request())", label="state-busy")
            store.turn.acquire()
            store.holder = me
        self.token = context.enter(variables=store)
        return store

    def __exit__(self, kind, error, trace) -> None:
        try:
            if kind is None:
                self.store.commit()
            else:
                self.store.discard()
        finally:
            context.leave(self.token)
            if self.exclusive:
                self.store.holder = None
                self.store.turn.release()
