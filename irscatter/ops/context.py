"""The run context: what a run hands down to its kernels and to the bodies it runs, in one place.

Kernels need a few things from the run they belong to without ops/ importing the runtime: the
strict collector, the recycler of large buffers, the model's variables. They are the fields of
one frozen `RunContext`, held in one context variable, so a body run (If, Loop, TensorIterator,
a region) sees its outer run's context, and a thread sees only what it set itself (a thread
starts from the empty context; irscatter's own kernel threads, `ops/common/threads.py`, read
none of it). `current()` reads it; `using(**changes)` replaces some fields for a `with` block.

| field         | set by                                                | read by                           |
|---------------|-------------------------------------------------------|-----------------------------------|
| recycler      | the interpreter, for each run (`recycle.recycling`)   | `recycle.recycled`: scatters      |
| backend       | `accel.use`, for a block of code                      | `accel.mode`: the scatter kernels |
| strict        | `run(strict=True)`, the conformance checks' strict    | `strict.active`/`report`: kernels |
|               | pass; off for inference and folding (`collecting`)    |                                   |
| iterations    | the interpreter, for each run; a Loop run on its own  | Loop and TensorIterator           |
|               | (`control.core.start_iteration_budget`)               |                                   |
| variables     | the interpreter, for each run (`state.using`)         | ReadValue, Assign                 |
| precision     | `run(precision=)` (`runtime/precision.emulating`)     | the interpreter's rounding        |
| decompression | `run(decompression=)` (`runtime/decompression`)       | the interpreter's choice of steps |
| observer      | the interpreter, for each run (None when no hook or   | If, Loop, TensorIterator bodies   |
|               | record watches it) and each body run inside one       | (`runtime/subgraph.py`)           |

The last three belong to the runtime; the observer is typed `Any` here, since ops/ does not
import the runtime.
"""

from __future__ import annotations

from contextvars import ContextVar, Token
from dataclasses import dataclass, fields
from typing import Any


@dataclass(frozen=True)
class RunContext:
    """What the run in progress hands down (see the module's table); None where it has none."""

    # The modules that define the recycler, the collector, the budget and the variables import
    # this one, so their fields are typed here as Any and by each owner's accessor, which says
    # what it returns (`recycle.recycled() -> Recycler | None`, `strict.collector()`, ...).
    recycler: Any = None
    backend: str | None = None
    strict: Any = None
    iterations: Any = None
    variables: Any = None
    precision: str | None = None
    decompression: str | None = None
    observer: Any = None

    def changed(self, changes: dict[str, Any]) -> RunContext:
        """A copy with `changes`: `dataclasses.replace`, without its field-by-field `__init__`,
        since every run makes a few of these."""
        if not changes.keys() <= _FIELDS:
            raise TypeError(f"RunContext has no field {sorted(changes.keys() - _FIELDS)[0]!r}")
        new = object.__new__(RunContext)
        new.__dict__.update(self.__dict__)
        new.__dict__.update(changes)
        return new


_FIELDS = frozenset(f.name for f in fields(RunContext))


_CONTEXT: ContextVar[RunContext] = ContextVar("irscatter_run_context", default=RunContext())


# `current()`: the context of the run in progress (every field None outside a run). It is the
# variable's own `get`, not a function around it: kernels ask on every call, and a frame would
# cost more than the lookup.
current = _CONTEXT.get


def enter(**changes: Any) -> Token[RunContext]:
    """The current context with `changes`, made current until `leave` is given the token (for a
    caller that already has a try/finally of its own; `using` is the `with` form)."""
    return _CONTEXT.set(_CONTEXT.get().changed(changes))


def leave(token: Token[RunContext]) -> None:
    _CONTEXT.reset(token)


class using:  # noqa: N801 - used as a function: `with context.using(strict=None):`
    """`with using(**changes):` runs the block with those fields of the context replaced. (A
    class rather than a generator: it is entered on every run.)"""

    __slots__ = ("changes", "token")

    def __init__(self, **changes: Any) -> None:
        self.changes = changes

    def __enter__(self) -> RunContext:
        changed = _CONTEXT.get().changed(self.changes)
        self.token = _CONTEXT.set(changed)
        return changed

    def __exit__(self, *exc: object) -> None:
        _CONTEXT.reset(self.token)


__all__ = ["RunContext", "current", "enter", "leave", "using"]
