"""HloScatter-1 (irscatter1): StableHLO's general `scatter`, variadic, with batching dims.

Inputs: N operands, then `scatter_indices`, then N updates (2N+1 inputs, N outputs).
Attributes are StableHLO's scatter dimension numbers, 0-based, as comma-separated lists
(empty for none): `update_window_dims`, `inserted_window_dims`, `input_batching_dims`,
`scatter_indices_batching_dims`, `scatter_dims_to_operand_dims`; the integer
`index_vector_dim`; the promises `indices_are_sorted` and `unique_indices`; and
`update_computation`, one of replace, add, subtract, multiply, minimum, maximum, and, or,
xor (default replace). A `<body>` sub-graph may stand instead of `update_computation`: 2N
scalar Parameters (N current values, then N updates) and N scalar Results, called as
f(current..., update...) and made of element-wise ops.

Semantics are the StableHLO specification's: every element of `updates[0]` has a result
index (start index + batching index + window index), and when that index is in bounds the
combiner folds the update into the result there; an out-of-bounds element is skipped, one
element at a time (XLA's CPU backend skips the whole window instead; see the README).
The spec leaves the order of updates to one element to the implementation; irscatter
applies them in row-major order of `updates`. A broken promise (`unique_indices` with two
updates to one element, `indices_are_sorted` with unsorted start indices) is undefined
behaviour in the spec and an error here. Constraint failures cite the spec's labels C1-C25.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Annotated, Any, Literal

import numpy as np

from irscatter.errors import ExecutionError
from irscatter.ir.element_types import ElementType
from irscatter.ir.graph import Layer
from irscatter.ir.shapes import PartialShape
from irscatter.ops.base import (
    IntList,
    IRBool,
    Lower,
    Op,
    OpAttrs,
    TensorInfo,
    check,
    compile_body,
)
from irscatter.ops.common import strict
from irscatter.ops.functional import make_op, run_op
from irscatter.ops.registry import register
from irscatter.ops.scatter.core import BITWISE, occurrence_rank, place, scatter_rows

DOMAIN = "irscatter"


# update_computation name -> scatter.core reduction
COMBINERS = {"replace": "none", "add": "sum", "subtract": "sub", "multiply": "prod", "minimum": "min",
             "maximum": "max", "and": "and", "or": "or", "xor": "xor"}


Combine = Callable[..., Sequence[np.ndarray]]  # f(current..., update...) -> one vector per operand


class HloScatterAttrs(OpAttrs):
    update_window_dims: IntList = ()
    inserted_window_dims: IntList = ()
    input_batching_dims: IntList = ()
    scatter_indices_batching_dims: IntList = ()
    scatter_dims_to_operand_dims: IntList = ()
    index_vector_dim: int
    indices_are_sorted: IRBool = False
    unique_indices: IRBool = False
    update_computation: Annotated[Literal["replace", "add", "subtract", "multiply", "minimum", "maximum",
                                          "and", "or", "xor"], Lower] = "replace"


def _unique(dims: Sequence[int]) -> bool:
    return len(set(dims)) == len(dims)


def _sorted(dims: Sequence[int]) -> bool:
    return list(dims) == sorted(dims)


def _in_range(dims: Sequence[int], n: int) -> bool:
    return all(0 <= d < n for d in dims)


def is_promotable(src: ElementType, dst: ElementType) -> bool:
    """StableHLO's `is_promotable` on element types: same kind, no narrower."""
    if src is dst or ElementType.dynamic in (src, dst):
        return True
    kinds = (src.is_float, src.is_integral and src.is_signed, src.is_integral and not src.is_signed)
    same_kind = kinds == (dst.is_float, dst.is_integral and dst.is_signed, dst.is_integral and not dst.is_signed)
    return same_kind and ElementType.boolean not in (src, dst) and dst.bitwidth >= src.bitwidth


@register("HloScatter", 1, domain=DOMAIN)
class HloScatter(Op):
    """results = inputs, with slices at `scatter_indices` combined with `updates`."""

    # the constraint labels of StableHLO's scatter spec (C1-C24, I2), and the broken promises
    labels = {
        "C1": "the operands do not share one shape",
        "C2": "the operands' rank is not the number of update window, inserted window and input batching dims",
        "C3": "the updates do not share one shape",
        "C4": "the updates' shape is not the scatter sizes and window sizes the dimension numbers give",
        "C5": "the layer does not have N operands, the indices and N updates",
        "C6": "an update's element type differs from its operand's",
        "C7": "update_window_dims are not unique and sorted",
        "C8": "update_window_dims lie outside the updates' rank",
        "C9": "inserted_window_dims and input_batching_dims share a dimension",
        "C10": "inserted_window_dims are not sorted",
        "C11": "inserted_window_dims lie outside the operands' rank",
        "C12": "input_batching_dims are not sorted",
        "C13": "input_batching_dims lie outside the operands' rank",
        "C14": "scatter_indices_batching_dims are not unique",
        "C15": "scatter_indices_batching_dims lie outside the indices' rank",
        "C16": "index_vector_dim is one of scatter_indices_batching_dims",
        "C17": "input_batching_dims and scatter_indices_batching_dims differ in length",
        "C18": "a batching dimension has different sizes in the operands and the indices",
        "C19": "the index vector's length is not the length of scatter_dims_to_operand_dims",
        "C20": "scatter_dims_to_operand_dims and input_batching_dims share a dimension",
        "C21": "scatter_dims_to_operand_dims lie outside the operands' rank",
        "C22": "index_vector_dim lies outside [0, rank(scatter_indices)]",
        "C23": "the combiner does not fit the operands' element types",
        "C24": "the layer does not have one result per operand",
        "I2": "scatter_indices are not of an integer type",
        "update-computation": "both update_computation and a <body> are given",
        "unique_indices": "unique_indices is promised and two updates reach one element",
        "indices_are_sorted": "indices_are_sorted is promised and the start indices are not sorted",
    }


    Attrs = HloScatterAttrs
    attrs: HloScatterAttrs
    inputs = ("inputs", "scatter_indices", "updates")
    variadic = True

    def __init__(self, layer: Layer) -> None:
        super().__init__(layer)
        body = layer.bodies.get("body")
        check(body is None or "update_computation" not in layer.attrs, "update-computation",
              "give either the update_computation attribute or a <body>, not both")
        self.region = None
        if body is not None:
            self.region = compile_body(body)
        self.function: Combine | None = None  # a Python combiner, set by `hlo_scatter`

    # --- arity and types -------------------------------------------------------------------

    def check_arity(self, n_inputs: int, n_outputs: int) -> None:
        check(n_inputs >= 3 and n_inputs % 2 == 1, "C5",
              f"takes N operands, scatter_indices and N updates (2N+1 inputs, N >= 1), the layer has {n_inputs}")
        n = (n_inputs - 1) // 2
        check(n_outputs == n, "C24", f"has one result per operand ({n}), the layer declares {n_outputs}")

    def _combiner_types(self, operands: Sequence[TensorInfo]) -> list[ElementType]:
        """E0..EN-1, the combiner's element types (C23), which are also the results' (C25)."""
        n = len(operands)
        if self.region is None:
            reduction = COMBINERS[self.attrs.update_computation]
            for i, op in enumerate(operands):
                e = op.etype
                check(e is not ElementType.string, "C23", "string tensors cannot be scattered", port=f"input {i}")
                if reduction in BITWISE:
                    check(e in (ElementType.dynamic, ElementType.boolean) or e.is_integral, "C23",
                          f"update_computation {self.attrs.update_computation} needs integer or boolean "
                          f"operands, found {e}", port=f"input {i}")
                if reduction == "sub":
                    check(e is not ElementType.boolean, "C23", "subtract is not defined on booleans",
                          port=f"input {i}")
            return [op.etype for op in operands]
        region = self.region
        check(len(region.param_types) == 2 * n and len(region.result_types) == n, "C23",
              f"the <body> must take {2 * n} scalars and return {n}, it takes {len(region.param_types)} "
              f"and returns {len(region.result_types)}")
        check(all(r in (0, None) for r in region.param_ranks), "C23", "the <body>'s Parameters must be scalars")
        types = region.param_types[:n]
        check(region.param_types[n:] == types and region.result_types == types, "C23",
              f"the <body> must have type (E..., E...) -> (E...) with one E per operand, found parameters "
              f"{list(map(str, region.param_types))} and results {list(map(str, region.result_types))}")
        for i, (op, e) in enumerate(zip(operands, types)):
            check(is_promotable(op.etype, e), "C23",
                  f"operand {i} of type {op.etype} cannot be promoted to the <body>'s {e}", port=f"input {i}")
        return types

    # --- inference -------------------------------------------------------------------------

    def infer(self, *args: TensorInfo) -> tuple[TensorInfo, ...]:
        n = (len(args) - 1) // 2
        operands, indices, updates = args[:n], args[n], args[n + 1:]
        check(len(args) % 2 == 1 and n >= 1 and len(updates) == n, "C5",
              f"N operands, scatter_indices and N updates are needed, found {len(args)} inputs")
        for i, x in enumerate(operands[1:], 1):
            check(x.shape.compatible(operands[0].shape), "C1",
                  f"every operand must have one shape: {operands[0].shape} and {x.shape}", port=f"input {i}")
        for i, u in enumerate(updates[1:], 1):
            check(u.shape.compatible(updates[0].shape), "C3",
                  f"every update must have one shape: {updates[0].shape} and {u.shape}", port=f"input {n + 1 + i}")
        for i, (x, u) in enumerate(zip(operands, updates)):
            check(ElementType.dynamic in (x.etype, u.etype) or x.etype is u.etype, "C6",
                  f"updates {i} must have the element type of operand {i}, found {u.etype} and {x.etype}",
                  port=f"input {n + 1 + i}")
        check(indices.etype is ElementType.dynamic or indices.etype.is_integral, "I2",
              f"scatter_indices must be of an integer type, found {indices.etype}", port=f"input {n}")
        types = self._combiner_types(operands)
        shapes = (operands[0].shape, indices.shape, updates[0].shape)
        if all(s.rank_is_static for s in shapes):
            check_dimension_numbers(self.attrs, *shapes, indices_port=f"input {n}", updates_port=f"input {n + 1}")
        return tuple(TensorInfo(e, operands[0].shape) for e in types)

    # --- kernel ----------------------------------------------------------------------------

    def compute(self, *arrays: np.ndarray) -> tuple[np.ndarray, ...]:
        n = (len(arrays) - 1) // 2
        operands, indices, updates = arrays[:n], arrays[n], arrays[n + 1:]
        # infer() has checked C1-C25 for exactly these shapes (the interpreter re-infers
        # whenever input shapes change), so the kernel goes straight to the positions.
        positions, in_bounds = result_positions(self.attrs, operands[0].shape, indices, updates[0].shape)
        self._check_promises(positions, in_bounds, indices, n)
        targets = positions[in_bounds]
        if (strict.active() and self.region is None and self.function is None
                and self.attrs.update_computation == "replace"):
            self._report_duplicates(targets, np.flatnonzero(in_bounds), operands[0].shape, updates[0].shape, n)
        if self.region is None and self.function is None:
            reduction = COMBINERS[self.attrs.update_computation]
            results = []
            for x, u in zip(operands, updates):
                # Computed in its own type: every step rounds, as the spec's. Row-major, so that the
                # flat view written below is the array itself (of any other layout, reshape copies).
                out = np.array(x, copy=True, order="C")
                scatter_rows(out.reshape(-1), targets, u.reshape(-1)[in_bounds], reduction)
                results.append(out)
            return tuple(results)
        combine = self.region or self.function
        assert combine is not None  # neither: the named combiner above has returned
        types = self.region.param_types[:n] if self.region else [ElementType.from_dtype(x.dtype) for x in operands]
        outs = [np.array(x, dtype=e.dtype, copy=True, order="C") for x, e in zip(operands, types)]
        vals = [u.reshape(-1)[in_bounds].astype(e.dtype) for u, e in zip(updates, types)]
        apply_in_rounds(combine, [o.reshape(-1) for o in outs], targets, vals)
        return tuple(outs)

    @staticmethod
    def _report_duplicates(targets: np.ndarray, sources: np.ndarray, operand: tuple[int, ...],
                           update: tuple[int, ...], n: int) -> None:
        """Strict mode: update elements that replace one result element (the spec leaves the order
        of updates to one element to the implementation). The other combiners are reported by
        nothing: their order changes at most the rounding of floats."""
        strict.report_duplicates(
            targets, port=f"input {n}", rule="irscatter keeps the last in row-major order of updates",
            position=lambda p: "updates" + strict.coordinates(int(sources[p]), update),
            target=lambda t: place("operand", [int(i) for i in np.unravel_index(t, operand)]))

    def _check_promises(self, positions: np.ndarray, in_bounds: np.ndarray, indices: np.ndarray, n: int) -> None:
        a = self.attrs
        if a.unique_indices:
            hit = positions[in_bounds]
            if len(np.unique(hit)) != len(hit):
                rank = occurrence_rank(hit)
                second = int(np.flatnonzero(in_bounds)[np.argmax(rank > 0)])
                raise ExecutionError(
                    f"unique_indices is true but update element {second} (row-major in updates) writes to a result "
                    f"element an earlier update already wrote", port=f"input {n}", label="unique_indices")
        if a.indices_are_sorted:
            bad = first_unsorted(a, indices)
            if bad is not None:
                raise ExecutionError(
                    f"indices_are_sorted is true but the start index of scatter position {bad} is smaller than "
                    f"the one before it", port=f"input {n}", label="indices_are_sorted")


def _scatter_sizes(a: HloScatterAttrs, indices_dims: tuple) -> tuple:
    """update_scatter_dim_sizes: the shape of scatter_indices without index_vector_dim."""
    ivd = a.index_vector_dim
    return indices_dims[:ivd] + indices_dims[ivd + 1:] if ivd < len(indices_dims) else indices_dims


def _window_input_dims(a: HloScatterAttrs, rank: int) -> list[int]:
    """The operand dims that the update window spans, in order."""
    return [d for d in range(rank) if d not in a.inserted_window_dims and d not in a.input_batching_dims]


def check_dimension_numbers(a: HloScatterAttrs, operand: PartialShape, indices: PartialShape,
                            updates: PartialShape, *, indices_port: str, updates_port: str) -> None:
    """The spec's constraints C2, C4 and C7-C22 on the dimension numbers and static ranks."""
    r, q, u = operand.rank, indices.rank, updates.rank
    uwd, iwd, ibd, sibd, sdod = (a.update_window_dims, a.inserted_window_dims, a.input_batching_dims,
                                 a.scatter_indices_batching_dims, a.scatter_dims_to_operand_dims)
    ivd = a.index_vector_dim
    check(r == len(uwd) + len(iwd) + len(ibd), "C2",
          f"rank(inputs[0]) = {r} must equal size(update_window_dims) + size(inserted_window_dims) + "
          f"size(input_batching_dims) = {len(uwd)} + {len(iwd)} + {len(ibd)}")
    check(_unique(uwd) and _sorted(uwd), "C7", f"update_window_dims {list(uwd)} must be unique and sorted")
    check(_in_range(uwd, u), "C8", f"update_window_dims {list(uwd)} must lie in [0, rank(updates[0]) = {u})")
    check(_unique(iwd + ibd), "C9",
          f"inserted_window_dims {list(iwd)} and input_batching_dims {list(ibd)} must not repeat a dimension")
    check(_sorted(iwd), "C10", f"inserted_window_dims {list(iwd)} must be sorted")
    check(_in_range(iwd, r), "C11", f"inserted_window_dims {list(iwd)} must lie in [0, rank(inputs[0]) = {r})")
    check(_sorted(ibd), "C12", f"input_batching_dims {list(ibd)} must be sorted")
    check(_in_range(ibd, r), "C13", f"input_batching_dims {list(ibd)} must lie in [0, rank(inputs[0]) = {r})")
    check(_unique(sibd), "C14", f"scatter_indices_batching_dims {list(sibd)} must be unique")
    check(_in_range(sibd, q), "C15",
          f"scatter_indices_batching_dims {list(sibd)} must lie in [0, rank(scatter_indices) = {q})")
    check(ivd not in sibd, "C16", f"index_vector_dim {ivd} must not be one of scatter_indices_batching_dims")
    check(len(ibd) == len(sibd), "C17",
          f"input_batching_dims {list(ibd)} and scatter_indices_batching_dims {list(sibd)} must have one size")
    for d_in, d_idx in zip(ibd, sibd):
        check(operand[d_in].compatible(indices[d_idx]), "C18",
              f"batching dimension {d_in} of inputs[0] ({operand[d_in]}) must equal dimension {d_idx} of "
              f"scatter_indices ({indices[d_idx]})", port=indices_port)
    check(0 <= ivd <= q, "C22", f"index_vector_dim {ivd} must lie in [0, rank(scatter_indices) = {q}]")
    vector = indices[ivd] if ivd < q else None
    check(vector is None and len(sdod) == 1 or vector is not None and vector.contains(len(sdod)), "C19",
          f"size(scatter_dims_to_operand_dims) = {len(sdod)} must equal the index vector's length "
          f"({vector if vector is not None else 1})", port=indices_port)
    check(_unique(sdod + ibd), "C20",
          f"scatter_dims_to_operand_dims {list(sdod)} and input_batching_dims {list(ibd)} must not repeat a dimension")
    check(_in_range(sdod, r), "C21",
          f"scatter_dims_to_operand_dims {list(sdod)} must lie in [0, rank(inputs[0]) = {r})")
    # C4: updates = scatter sizes at the update_scatter_dims, window sizes (<= operand) at update_window_dims
    scatter_sizes = _scatter_sizes(a, indices.ranked_dims)
    check(u == len(scatter_sizes) + len(uwd), "C4",
          f"rank(updates[0]) = {u} must be the {len(scatter_sizes)} scatter dimensions of scatter_indices plus "
          f"the {len(uwd)} update_window_dims", port=updates_port)
    scatter_dims = [d for d in range(u) if d not in uwd]
    for d, size in zip(scatter_dims, scatter_sizes):
        check(updates[d].compatible(size), "C4",
              f"updates dimension {d} ({updates[d]}) must equal the matching scatter_indices dimension ({size})",
              port=updates_port)
    for d, d_in in zip(uwd, _window_input_dims(a, r)):
        w, limit = updates[d], operand[d_in]
        check(not (w.is_static and limit.is_static) or w.min <= limit.min, "C4",
              f"window dimension {d} of updates ({w}) must not exceed dimension {d_in} of inputs[0] ({limit})",
              port=updates_port)


def _along(axis: int, size: int, rank: int) -> np.ndarray:
    """0..size-1 laid along `axis` of a rank-`rank` array (size 1 elsewhere)."""
    view = [1] * rank
    view[axis] = size
    return np.arange(size, dtype=np.int64).reshape(view)


def _index_vectors(a: HloScatterAttrs, indices: np.ndarray) -> np.ndarray:
    """scatter_indices with the index vectors on the last axis: scatter shape + (K,)."""
    if a.index_vector_dim < indices.ndim:
        return np.moveaxis(indices, a.index_vector_dim, -1).astype(np.int64)
    return indices.astype(np.int64)[..., None]


def result_positions(a: HloScatterAttrs, operand: tuple[int, ...], indices: np.ndarray,
                     updates: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    """The flat result position of every element of updates (row-major) and whether it is
    in bounds: result_index = full_start_index + full_batching_index + full_window_index."""
    u = len(updates)
    scatter_dims = [d for d in range(u) if d not in a.update_window_dims]
    scatter_view = [updates[d] if d in scatter_dims else 1 for d in range(u)]
    vectors = _index_vectors(a, indices)
    window_dims = dict(zip(_window_input_dims(a, len(operand)), a.update_window_dims))
    flat = np.zeros([1] * u, np.int64)
    in_bounds = np.ones([1] * u, bool)
    stride = 1
    for d in range(len(operand) - 1, -1, -1):
        coord = np.zeros([1] * u, np.int64)
        if d in a.scatter_dims_to_operand_dims:  # full_start_index
            k = a.scatter_dims_to_operand_dims.index(d)
            coord = coord + vectors[..., k].reshape(scatter_view)
        if d in a.input_batching_dims:  # full_batching_index
            d_start = a.scatter_indices_batching_dims[a.input_batching_dims.index(d)]
            axis = scatter_dims[d_start - (0 if d_start < a.index_vector_dim else 1)]
            coord = coord + _along(axis, updates[axis], u)
        if d in window_dims:  # full_window_index
            axis = window_dims[d]
            coord = coord + _along(axis, updates[axis], u)
        in_bounds = in_bounds & (coord >= 0) & (coord < operand[d])
        flat = flat + coord * stride
        stride *= operand[d]
    return np.broadcast_to(flat, updates).reshape(-1), np.broadcast_to(in_bounds, updates).reshape(-1)


def first_unsorted(a: HloScatterAttrs, indices: np.ndarray) -> int | None:
    """The first scatter position (row-major over the scatter dims) whose full start index
    is lexicographically smaller than the previous one's within the same batch, or None.

    Start indices are compared per batch (equal batching coordinates), so a sorted scatter
    that was batched (vmapped) keeps its promise."""
    vectors = _index_vectors(a, indices)
    scatter_shape = vectors.shape[:-1]
    starts = vectors.reshape(-1, vectors.shape[-1])
    starts = starts[:, np.argsort(a.scatter_dims_to_operand_dims)]  # operand-dimension order
    if len(starts) < 2:
        return None
    batch_axes = [d - (0 if d < a.index_vector_dim else 1) for d in a.scatter_indices_batching_dims]
    coords = np.indices(scatter_shape).reshape(len(scatter_shape), -1)
    group = (np.asarray(np.ravel_multi_index(coords[batch_axes], [scatter_shape[d] for d in batch_axes])) if batch_axes
             else np.zeros(len(starts), np.int64))
    order = np.argsort(group, kind="stable")
    prev, curr = order[:-1], order[1:]
    same = group[prev] == group[curr]
    diff = starts[curr] - starts[prev]
    first = np.argmax(diff != 0, axis=1)
    decreasing = same & (diff[np.arange(len(diff)), first] < 0)
    return int(curr[np.argmax(decreasing)]) if decreasing.any() else None


def apply_in_rounds(combine: Combine, outs: list[np.ndarray], targets: np.ndarray, values: list[np.ndarray]) -> None:
    """outs[i][t] = combine(outs..[t], values..)[i] for every target t, sequentially in order.

    Updates are split into rounds by how many earlier updates hit the same element, so each
    round touches every element at most once and is one vectorized call of `combine`."""
    if len(targets) == 0:
        return
    rank = occurrence_rank(targets)
    for r in range(int(rank.max()) + 1):
        chosen = np.flatnonzero(rank == r)
        where = targets[chosen]
        results = combine(*(o[where] for o in outs), *(v[chosen] for v in values))
        for o, res in zip(outs, results):
            o[where] = res


def hlo_scatter(
    inputs: Any,
    scatter_indices: Any,
    updates: Any,
    *,
    update_window_dims: Sequence[int] = (),
    inserted_window_dims: Sequence[int] = (),
    input_batching_dims: Sequence[int] = (),
    scatter_indices_batching_dims: Sequence[int] = (),
    scatter_dims_to_operand_dims: Sequence[int] = (),
    index_vector_dim: int,
    indices_are_sorted: bool = False,
    unique_indices: bool = False,
    update_computation: str | Callable[..., Any] = "replace",
) -> Any:
    """StableHLO `scatter` on numpy arrays (0-based dimension numbers).

    `inputs` and `updates` are one array each or equal-length sequences of arrays (the
    variadic form); the result has the same form. `update_computation` is a combiner name
    or a vectorized Python function f(current..., update...) returning one array per
    operand (or a single array when N = 1); its results are cast to the operands' types.
    """
    single = isinstance(inputs, np.ndarray) or not isinstance(inputs, (list, tuple))
    operands = [inputs] if single else list(inputs)
    upds = [updates] if single else list(updates)
    attrs = dict(update_window_dims=update_window_dims, inserted_window_dims=inserted_window_dims,
                 input_batching_dims=input_batching_dims, scatter_indices_batching_dims=scatter_indices_batching_dims,
                 scatter_dims_to_operand_dims=scatter_dims_to_operand_dims, index_vector_dim=index_vector_dim,
                 indices_are_sorted=indices_are_sorted, unique_indices=unique_indices)
    function = None
    if callable(update_computation):
        function = update_computation
    else:
        attrs["update_computation"] = update_computation
    op = make_op(HloScatter, attrs)
    if function is not None:
        def combine(*args: np.ndarray) -> list[np.ndarray]:
            out = function(*args)
            return [np.asarray(out)] if isinstance(out, np.ndarray) or np.isscalar(out) else list(out)

        op.function = combine
    results = run_op(op, [*operands, scatter_indices, *upds])
    return results[0] if single else results
