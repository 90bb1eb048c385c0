"""Layers that depend on Consts alone, computed once per compiled model instead of every run.

A layer whose inputs all come from Consts, directly or through other such layers, gives the
same value on every run. Compressed weights are decompressed by such layers: NNCF writes a
u8, i4 or u4 Const followed by Convert, Subtract (its zero point), Multiply (its scale) and
often Reshape and Convert again, before the MatMul that reads the weight. Computing that on
every run costs more than the model itself.

The plan names those layers, and the values they give that other layers or Results read
(the "boundary" values). The first run nothing watches computes the boundary values with the
same kernels on the same inputs, and later runs read them, so every run gives the same bits
as before. Kept values cost memory (a decompressed weight is four to eight times its Const),
so they are kept in the order the layers run up to `limits.folded_bytes` in all; the layers
behind the rest run every time as before. A run that watches each layer (a hook, a record of
values, strict mode, precision emulation) still runs every layer.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np


class _Step(Protocol):
    layer: Any
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]


@dataclass(eq=False)
class FoldPlan:
    once: tuple[int, ...] = ()  # positions of the steps that compute the kept values, in order
    kept: frozenset[int] = frozenset()  # slots whose values are computed once and kept
    skipped: frozenset[int] = frozenset()  # positions of the steps a run that reads kept values leaves out
    # The kept values, from the first run that uses them on; one list for every request of the
    # compiled model, so that none decompresses the weights again.
    values: list[tuple[int, Any]] | None = None
    # Steps a run that reads kept values takes in place of the step at the same position
    # (runtime/compressed.py: a MatMul that looks its compressed weight up by blocks).
    replaced: dict[int, Any] = field(default_factory=dict)


def producers_of(steps: Sequence[_Step]) -> dict[int, int]:
    """The position of the step that writes each slot."""
    return {slot: i for i, step in enumerate(steps) for slot in step.outputs}


def readers_of(steps: Sequence[_Step]) -> dict[int, list[int]]:
    """The positions of the steps that read each slot."""
    found: dict[int, list[int]] = {}
    for i, step in enumerate(steps):
        for slot in step.inputs:
            found.setdefault(slot, []).append(i)
    return found


def keep_once(steps: Sequence[_Step], foldable: Callable[[_Step], bool], const_slots: set[int],
              result_slots: set[int], slot_bytes: Mapping[int, int | None], budget: int) -> FoldPlan:
    """Which steps compute values of Consts alone, which of their values to keep (`slot_bytes`
    says what each costs, None when unknown, which is not kept) and which steps a run that
    reads the kept values can leave out."""
    constant = constant_steps(steps, foldable, const_slots)
    if not constant:
        return FoldPlan()
    producer = {slot: i for i in constant for slot in steps[i].outputs}
    read_by_others = {s for i, step in enumerate(steps) if i not in constant for s in step.inputs}
    boundary = [s for i in sorted(constant) for s in steps[i].outputs if s in read_by_others or s in result_slots]
    kept, spent = set(), 0
    for slot in boundary:
        cost = slot_bytes.get(slot)
        if cost is not None and spent + cost <= budget:
            kept.add(slot)
            spent += cost
    every_run = behind(steps, producer, [s for s in boundary if s not in kept])
    kept = {s for s in kept if producer[s] not in every_run}  # computed each run anyway: nothing to keep
    if not kept:
        return FoldPlan()
    return FoldPlan(once=tuple(sorted(behind(steps, producer, kept))), kept=frozenset(kept),
                    skipped=frozenset(constant - every_run))


def constant_steps(steps: Sequence[_Step], foldable: Callable[[_Step], bool], const_slots: set[int]) -> set[int]:
    """Positions of the steps whose every input is a Const's value or such a step's output,
    and whose op is a function of its inputs alone (no state, no body)."""
    known = set(const_slots)
    constant = set()
    for i, step in enumerate(steps):
        if step.inputs and known.issuperset(step.inputs) and foldable(step):
            constant.add(i)
            known.update(step.outputs)
    return constant


def behind(steps: Sequence[_Step], producer: Mapping[int, int], slots) -> set[int]:
    """Positions of the constant steps that the values in `slots` are computed from."""
    found: set[int] = set()
    todo = [producer[s] for s in slots]
    while todo:
        i = todo.pop()
        if i not in found:
            found.add(i)
            todo.extend(producer[s] for s in steps[i].inputs if s in producer)
    return found


def read_only(value: Any) -> Any:
    """A kept value, made read-only: every run and every caller sees this one array (a Result
    that reads it hands the caller a copy, as for a Const)."""
    if isinstance(value, np.ndarray):
        value.flags.writeable = False
    return value
