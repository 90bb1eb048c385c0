"""What the state-space ops share: the selective scan over time (SSM, SelectiveSSM, Mamba2,
PagedSelectiveSSM), the agreement of their dimensions, and the slot plan by which the paged
ones (PagedSelectiveSSM, PagedCausalConv1D) read and write their state tables.

The scan. A lane (one batch entry, or one sequence of a paged step) holds a state of shape
[heads, head_dim, state_size]. Step t multiplies each head's state by its decay and adds the
step's inflow, then reads each head's output out as `state @ C_t`. The recurrence is
sequential in t, so the loop is over time; each step works on every lane and head at once.
Lanes of unequal length (the sequences of a paged step) are ordered longest first, so the
lanes still running at step t are a prefix of the lane axis and a step updates a view, with no
masking: a finished lane's state is left exactly as its last step made it.

The slot plan (both paged pages, and OpenVINO's CPU plugin). Sequence s owns the logical slots
`la_block_indices[la_block_indices_begins[s] : la_block_indices_begins[s+1]]`, each naming a
row of the table. Slot 0 holds the state the sequence resumes from, read before anything is
written. With `cache_interval[s] = I > 0` and `r = num_processed_tokens[s] % I`, the state is
written to slots 1, 2, ... in order: after each token that brings the processed count to a
multiple of I, and after the last token unless that one already did; that is
N = ceil((r + n) / I) writes for n new tokens, so the sequence needs N + 1 slots. With I <= 0
nothing is cached in between; what is written at the end depends on the op (none, or the final
state to slot 1). A sequence without new tokens reads and writes nothing.

Every sequence reads its slot 0 before any sequence writes (so slot 0 may alias slot 1: the
update is then in place). Should two sequences write one row, which the ops leave undefined,
the write of the later step wins, and at the same step that of the later sequence.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from irscatter.errors import ExecutionError, IRError
from irscatter.ir.element_types import ElementType
from irscatter.ir.shapes import Dimension
from irscatter.ops.base import Op, TensorInfo, check
from irscatter.ops.common.buffers import output_buffer
from irscatter.ops.common.types import arithmetic_float
from irscatter.ops.functional import make_op

# --- inference -----------------------------------------------------------------------------------


def check_ranks(op: Op, infos: Sequence[TensorInfo], ranks: Sequence[int], label: str) -> None:
    """Each input of static rank has the rank its page gives it."""
    for name, info, rank in zip(op.inputs, infos, ranks):
        check(not info.shape.rank_is_static or info.shape.rank == rank, label,
              f"{name} must be {rank}-D, found {info.shape}", port=op.port(name))


def common_float(op: Op, infos: Sequence[TensorInfo], names: Sequence[str], label: str) -> ElementType:
    """The one floating-point type T the named inputs share (a dynamic type yields to the others)."""
    found = ElementType.dynamic
    for name in names:
        etype = infos[op.inputs.index(name)].etype
        if etype is ElementType.dynamic:
            continue
        check(arithmetic_float(etype), label, f"{name} must be of a floating-point type, found {etype}",
              port=op.port(name))
        check(found in (ElementType.dynamic, etype), label,
              f"{', '.join(names)} must share one element type, found {found} and {etype} ({name})",
              port=op.port(name))
        found = etype
    return found


def agree(op: Op, label: str, what: str, *places: tuple[str, Dimension]) -> Dimension:
    """The one extent `places` (input name, dimension) must share: the static one where any is."""
    static = [(name, dim) for name, dim in places if dim.is_static]
    for name, dim in static[1:]:
        first, extent = static[0]
        check(int(dim) == int(extent), label,
              f"{what} differs: {int(extent)} in {first}, {int(dim)} in {name}", port=op.port(name))
    return static[0][1] if static else Dimension.dynamic()


def dims(info: TensorInfo, rank: int) -> list[Dimension]:
    """An input's dimensions, all dynamic when its rank is."""
    return list(info.shape) if info.shape.rank_is_static else [Dimension.dynamic()] * rank


def check_groups(op: Op, heads: Dimension, groups: Dimension, label: str) -> None:
    """B and C are shared by heads // groups consecutive heads: the groups must divide the heads."""
    if heads.is_static and groups.is_static:
        check(int(groups) != 0 and int(heads) % int(groups) == 0, label,
              f"the {int(heads)} heads must be a multiple of the {int(groups)} groups of B and C (at least one)",
              port=op.port("B"))


# --- the scan -------------------------------------------------------------------------------------


def scan(state: np.ndarray, decay: np.ndarray, readout: np.ndarray, *, dtb: np.ndarray | None = None,
         x: np.ndarray | None = None, inflow: np.ndarray | None = None, running: np.ndarray | None = None,
         keep: dict[int, np.ndarray] | None = None) -> tuple[np.ndarray, list[np.ndarray]]:
    """Run the recurrence over the leading (time) axis of the per-step arrays, updating `state`
    ([lanes, heads, head_dim, state_size], the work dtype) in place.

    decay [T, lanes, heads]; readout (C) [T, lanes, heads, state_size]; the inflow either as
    its factors, dtb = dt * B [T, lanes, heads, state_size] and x [T, lanes, heads, head_dim]
    (added as their outer product), or whole, inflow [T, lanes, heads, head_dim, state_size].
    `running[t]`: how many lanes (a prefix) step t updates, all when None. `keep[t]`: the lanes
    whose state after step t is copied out, in the order returned.
    Returns the outputs [T, lanes, heads, head_dim] (zero where a lane had stopped) and the kept states."""
    steps = decay.shape[0]
    out = np.zeros((steps, *state.shape[:3]), state.dtype)
    kept: list[np.ndarray] = []
    product = np.empty_like(state) if inflow is None else None
    for t in range(steps):
        n = state.shape[0] if running is None else int(running[t])
        now = state[:n]
        now *= decay[t, :n, :, None, None]
        if inflow is None:
            assert product is not None and x is not None and dtb is not None  # the inflow as its factors
            added = np.multiply(x[t, :n, :, :, None], dtb[t, :n, :, None, :], out=product[:n])
        else:
            added = inflow[t, :n]
        now += added
        np.matmul(now, readout[t, :n, :, :, None], out=out[t, :n, :, :, None])
        if keep is not None and t in keep:
            kept.append(state[keep[t]])  # fancy indexing copies
    return out, kept


def selective(state: np.ndarray, a: np.ndarray, dt: np.ndarray, b: np.ndarray, x: np.ndarray, c: np.ndarray,
              **options) -> tuple[np.ndarray, list[np.ndarray]]:
    """SelectiveSSM's scan on time-major arrays of the work dtype: dt [T, lanes, heads], B and C
    [T, lanes, groups, state_size], x [T, lanes, heads, head_dim]. Discretizes every step at once
    (exp(A * dt), dt * B), gives each head its group of B and C, and runs `scan` (`options`:
    running, keep)."""
    per_group = x.shape[2] // b.shape[2] if b.shape[2] else 1
    with np.errstate(over="ignore", invalid="ignore"):
        decay = np.exp(a * dt)
        dtb = dt[..., None] * np.repeat(b, per_group, axis=2)
        return scan(state, decay, np.repeat(c, per_group, axis=2), dtb=dtb, x=x, **options)


# --- the paged slot plan ---------------------------------------------------------------------------

METADATA = ("subsequence_begins", "la_block_indices", "la_block_indices_begins", "num_processed_tokens",
            "cache_interval")


@dataclass(frozen=True)
class Plan:
    """One paged step: its sequences with new tokens as lanes, longest first, and its writes."""

    lanes: np.ndarray  # the sequence of each lane
    first: np.ndarray  # each lane's first token row
    length: np.ndarray  # each lane's new tokens
    read: np.ndarray  # each lane's slot-0 row of the table
    write_step: np.ndarray  # per write: the lane's token after which the state is written
    write_lane: np.ndarray  # per write: the lane
    write_row: np.ndarray  # per write: the table row

    def running(self) -> np.ndarray:
        """How many lanes (a prefix) are still running at each step."""
        steps = int(self.length[0]) if self.length.size else 0
        return (self.length[None, :] > np.arange(steps)[:, None]).sum(axis=1)

    def keep(self) -> dict[int, np.ndarray]:
        """The lanes to copy out after each step, in write order."""
        keep: dict[int, list[int]] = {}
        for step, lane in zip(self.write_step.tolist(), self.write_lane.tolist()):
            keep.setdefault(step, []).append(lane)
        return {step: np.array(lanes, np.intp) for step, lanes in keep.items()}


def plan(op: Op, named: dict[str, np.ndarray], tokens: int, rows: int, *, final_when_uncached: bool,
         sequences_label: str, slots_label: str) -> Plan:
    """Check a paged step's metadata and work out what it reads and writes. `rows`: the table's
    rows; `final_when_uncached`: whether a sequence with cache_interval <= 0 writes its final
    state to slot 1 (PagedCausalConv1D) or nothing (PagedSelectiveSSM)."""
    begins, table, table_begins, processed, interval = (named[name].astype(np.int64) for name in METADATA)
    count = processed.size
    problem, where = None, "subsequence_begins"
    if begins.size != count + 1 or table_begins.size != count + 1 or interval.size != count:
        problem = (f"{count} num_processed_tokens need {count + 1} subsequence_begins and la_block_indices_begins "
                   f"and {count} cache_interval, found {begins.size}, {table_begins.size} and {interval.size}")
    elif begins[0] != 0 or begins[-1] != tokens or (np.diff(begins) < 0).any():
        problem = f"subsequence_begins {begins.tolist()} must rise from 0 to the {tokens} tokens"
    elif table_begins[0] < 0 or table_begins[-1] > table.size or (np.diff(table_begins) < 0).any():
        problem, where = (f"la_block_indices_begins {table_begins.tolist()} must rise within the {table.size} "
                          "la_block_indices"), "la_block_indices_begins"
    elif (processed < 0).any():
        problem, where = f"num_processed_tokens must not be negative, found {processed.tolist()}", "num_processed_tokens"
    if problem:
        raise ExecutionError(problem, label=sequences_label, port=op.port(where))
    length = np.diff(begins)
    lanes = np.argsort(-length, kind="stable")
    lanes = lanes[length[lanes] > 0]
    reads, writes = [], []
    for position, s in enumerate(lanes.tolist()):
        slots = table[table_begins[s]:table_begins[s + 1]]
        steps = _write_steps(int(length[s]), int(processed[s]), int(interval[s]), final_when_uncached)
        if slots.size < steps.size + 1:
            raise ExecutionError(f"sequence {s} reads slot 0 and writes {steps.size} slots after it, but has "
                                 f"{slots.size} la_block_indices", label=slots_label, port=op.port("la_block_indices"))
        used = slots[:steps.size + 1]
        if ((used < 0) | (used >= rows)).any():
            raise ExecutionError(f"sequence {s} uses rows {used.tolist()}, outside the table's {rows}",
                                 label=slots_label, port=op.port("la_block_indices"))
        reads.append(used[0])
        writes += [(step, s, position, row) for step, row in zip(steps.tolist(), used[1:].tolist())]
    writes.sort()  # by step, then sequence: the order in which a row written twice is overwritten
    step, _, lane, row = [np.array(column, np.int64) for column in zip(*writes)] if writes else [np.zeros(0, np.int64)] * 4
    return Plan(lanes, begins[lanes], length[lanes], np.array(reads, np.int64), step, lane, row)


def _write_steps(new: int, processed: int, interval: int, final_when_uncached: bool) -> np.ndarray:
    """The tokens (0-based, of this step) after which a sequence writes its state, in slot order."""
    if interval <= 0:
        return np.array([new - 1] if final_when_uncached else [], np.int64)
    steps = np.arange(interval - processed % interval - 1, new, interval, dtype=np.int64)
    if not steps.size or steps[-1] != new - 1:
        steps = np.append(steps, new - 1)
    return steps


def store(table: np.ndarray, rows: np.ndarray, states: np.ndarray) -> None:
    """Write `states` (the work dtype) into `table`'s `rows` in order, a later write to a row
    replacing an earlier one."""
    if not rows.size:
        return
    _, last = np.unique(rows[::-1], return_index=True)
    chosen = rows.size - 1 - last
    with np.errstate(over="ignore", invalid="ignore"):  # numpy's casts round to nearest even, as Convert does
        table[rows[chosen]] = states[chosen]


class PagedOp(Op):
    """What the paged ops share: the step's metadata, checked under their own labels, and the
    table they update in place (the caller's own when donated, else a copy)."""

    table: ClassVar[int]  # the position of the state table among the inputs
    ranks: ClassVar[tuple[int, ...]]  # each input's rank
    floats: ClassVar[tuple[str, ...]]  # the inputs of the one floating-point type T
    labels_of: ClassVar[dict[str, str]]  # the op's label for "rank", "type", "sequences" and "slots"
    final_when_uncached: ClassVar[bool]  # cache_interval <= 0 still writes the final state to slot 1
    foldable = False

    def check_signature(self, given: Sequence[TensorInfo]) -> ElementType:
        """The ranks, the one type T of `floats` (returned), and i32 metadata."""
        check_ranks(self, given, self.ranks, self.labels_of["rank"])
        etype = common_float(self, given, self.floats, self.labels_of["type"])
        for name in METADATA:
            found = given[self.inputs.index(name)].etype
            check(found in (ElementType.i32, ElementType.dynamic), self.labels_of["type"],
                  f"{name} must be i32, found {found}", port=self.port(name))
        return etype

    def plan(self, named: dict[str, np.ndarray], tokens: int, rows: int) -> Plan:
        return plan(self, named, tokens, rows, final_when_uncached=self.final_when_uncached,
                    sequences_label=self.labels_of["sequences"], slots_label=self.labels_of["slots"])

    def compute(self, *arrays: np.ndarray, written: frozenset[int] = frozenset()) -> np.ndarray:
        table = output_buffer(arrays[self.table], inplace=self.table in written, any_layout=True)
        return self.step(arrays, table)

    def step(self, arrays: tuple[np.ndarray, ...], table: np.ndarray) -> np.ndarray:
        """Run one step, updating `table` in place; returns the output."""
        raise NotImplementedError

    @classmethod
    def on_arrays(cls, arrays: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        """The op on numpy arrays: (output, the table after the step as a new array); the inputs
        are left untouched."""
        op = make_op(cls, {})
        values = tuple(np.asarray(a) for a in arrays)
        try:
            op.check_arity(len(values), cls.outputs)
            op.infer(*(TensorInfo.of(v) for v in values))
            table = values[cls.table].copy()
            return op.step(values, table), table
        except IRError as e:
            raise e.add_context(layer=op.layer.ref) from None
