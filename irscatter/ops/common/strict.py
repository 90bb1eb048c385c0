"""Strict mode: where a spec leaves a result undefined, or only "expects" a value in a range, a
kernel reports the occurrence instead of silently applying irscatter's documented choice.

A model that runs clean in strict mode computes the same on any conforming runtime; a finding
says which layer, port and positions rely on behaviour another runtime may compute otherwise.

The mode is the run context's `strict` field (`ops/context.py`), a `Collector` or None when
off. A kernel asks `active()` (one context lookup) and only then does the extra array work of detection, then calls
`report(...)`. The interpreter turns the collector on for a run and tells it which layer is
running (`Collector.layer`); a body run (If, Loop, TensorIterator, a region) is entered with
`Collector.inside(scope)`, so a finding inside names the outer layer, the body and the inner
layer, as the errors of bodies do. `validate --strict` runs kernels on placeholder inputs where
only some inputs are known; `Collector.known_ports` then keeps only the findings that the known
inputs alone decide (see `report`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

import numpy as np

from irscatter.findings import Finding
from irscatter.ir.graph import Layer
from irscatter.ops import context

SHOWN = 3  # how many occurrences a message spells out; the rest are counted


class Collector:
    """The findings of one strict run, and where in the model the run currently is."""

    def __init__(self) -> None:
        self.findings: list[Finding] = []
        self.layer: Layer | None = None  # the layer whose kernel is running (set by the interpreter)
        self._outer: list[tuple[Layer | None, str]] = []  # (owning layer, body scope), outermost first
        # Set by validate's placeholder runs: the ports whose values are real, and whether all are.
        self.known_ports: frozenset[str] | None = None
        self.all_known = True

    @contextmanager
    def inside(self, scope: str) -> Iterator[None]:
        """A body of the current layer runs (`scope` names it: "body[2]", "then_body")."""
        self._outer.append((self.layer, scope))
        self.layer = None
        try:
            yield
        finally:
            self.layer = self._outer.pop()[0]

    def add(self, label: str, message: str, port: str | None, evidence: Sequence[str] | None) -> None:
        if self.known_ports is not None and not self._decided_by_known(evidence):
            return
        if not self._outer:
            layer = self.layer
            self.findings.append(Finding("warning", label, message, layer.ref if layer else None, port,
                                         layer.line if layer else None))
            return
        owner = self._outer[0][0]
        path = ""
        for depth, (_, scope) in enumerate(self._outer):
            inner = self._outer[depth + 1][0] if depth + 1 < len(self._outer) else self.layer
            where = _where(inner, port if inner is self.layer else None)
            path += f"in <{scope}>" + (f", {where}" if where else "") + ": "
        self.findings.append(Finding("warning", label, path + message, owner.ref if owner else None, None,
                                     owner.line if owner else None))

    def _decided_by_known(self, evidence: Sequence[str] | None) -> bool:
        if evidence is None:
            return self.all_known
        return all(port in self.known_ports for port in evidence)  # type: ignore[operator]


def _where(layer: Layer | None, port: str | None) -> str:
    if layer is None:
        return port or ""
    return f"{layer.ref}" + (f" {port}" if port else "") + (f" (line {layer.line})" if layer.line is not None else "")


def active() -> bool:
    """Whether strict mode is on: the one lookup a kernel pays when it is off."""
    return context.current().strict is not None


def collector() -> Collector | None:
    """The collector of the strict run in progress (None when strict mode is off)."""
    return context.current().strict


@contextmanager
def collecting(chosen: Collector | None) -> Iterator[Collector | None]:
    """Strict mode on with `chosen` (or off, with None) for the duration of the block."""
    with context.using(strict=chosen):
        yield chosen


@contextmanager
def inside(scope: str) -> Iterator[None]:
    """A body is entered (see `Collector.inside`); nothing at all when strict mode is off."""
    current = collector()
    if current is None:
        yield
        return
    with current.inside(scope):
        yield


def report(label: str, message: str, *, port: str | None = None, evidence: Sequence[str] | None = None) -> None:
    """Record one reliance on undefined behaviour at the layer running now.

    `port` is where the message points (the input holding the offending values). `evidence`
    lists the inputs whose values alone decide the finding, shapes aside; it defaults to `port`,
    and a finding that needs every input's values passes `evidence=None` with no `port`."""
    current = collector()
    if current is not None:
        current.add(label, message, port, evidence if evidence is not None else ((port,) if port else None))


# --- message helpers, shared by every kernel that reports -------------------------------------


def coordinates(flat: int, shape: Sequence[int]) -> str:
    """A flat position in a C-ordered array of `shape`, as "[i, j, k]"."""
    return "[" + ", ".join(str(int(i)) for i in np.unravel_index(int(flat), tuple(shape))) + "]" if shape else "[]"


def repeated_groups(targets: np.ndarray) -> tuple[list[np.ndarray], int]:
    """Positions (into `targets`) of the values that occur more than once, grouped by value and
    ordered by each group's first position; at most `SHOWN` groups, and how many there are.

    One stable sort, then run boundaries: no Python step per element."""
    targets = np.asarray(targets).reshape(-1)
    if targets.size < 2:
        return [], 0
    order = np.argsort(targets, kind="stable")
    ordered = targets[order]
    starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])
    sizes = np.diff(np.r_[starts, ordered.size])
    multiple = starts[sizes > 1]
    if multiple.size == 0:
        return [], 0
    multiple = multiple[np.argsort(order[multiple], kind="stable")][:SHOWN]
    lengths = sizes[np.searchsorted(starts, multiple)]
    return [order[s:s + n] for s, n in zip(multiple, lengths)], int(np.count_nonzero(sizes > 1))


def report_duplicates(targets: np.ndarray, *, port: str, position: Callable[[int], str],
                      target: Callable[[int], str], rule: str) -> None:
    """Report the positions of `targets` (one target per update, in row-major order of the
    indices) that write one place more than once. `position(i)` names update i's index,
    `target(t)` the place written, `rule` what irscatter keeps."""
    groups, count = repeated_groups(targets)
    if not groups:
        return
    flat = targets.reshape(-1)
    parts = []
    for group in groups:
        shown = [position(int(p)) for p in group[:SHOWN]]
        if len(group) == 2:
            parts.append(f"{shown[0]} and {shown[1]} both write {target(int(flat[group[0]]))}")
        else:
            more = f" and {len(group) - SHOWN} more" if len(group) > SHOWN else ""
            parts.append(f"{', '.join(shown)}{more} all write {target(int(flat[group[0]]))}")
    others = f"; {count - len(groups)} more places are written more than once" if count > len(groups) else ""
    report(label="duplicate-indices", port=port,
           message="; ".join(parts) + others + f"; the spec leaves the result undefined, {rule}")


def report_values(bad: np.ndarray, values: np.ndarray, *, label: str, port: str | None, what: str,
                  consequence: str, evidence: Sequence[str] | None = None) -> None:
    """Report the positions where the boolean mask `bad` holds: the first few with their values
    (`values`, broadcast like `bad`), and the count. `what` describes the values ("negative
    index"), `consequence` what irscatter does with them."""
    count = int(np.count_nonzero(bad))
    if count == 0:
        return
    where = np.argwhere(bad)[:SHOWN]
    values = np.broadcast_to(values, bad.shape)
    shown = ", ".join(f"{_scalar(values[tuple(w)])} at {[int(i) for i in w]}" for w in where)
    more = f" ({count} in all)" if count > SHOWN else ""
    report(label=label, message=f"{what} {shown}{more}; {consequence}", port=port, evidence=evidence)


def _scalar(value: object) -> str:
    item = value.item() if isinstance(value, np.generic) else value
    return repr(item) if isinstance(item, float) else str(item)
