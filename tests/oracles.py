"""Slow, obviously-correct scatter oracles: one Python step per updated element, transcribed
from the spec's sequential definitions. They are the truth the vectorized kernels are
checked against; never use them for anything big."""

from __future__ import annotations

import numpy as np


def _combine(reduction, current, update, is_bool):
    if reduction == "none":
        return update
    if is_bool:
        return {"sum": current or update, "max": current or update, "prod": current and update,
                "min": current and update, "sub": current != update}[reduction]
    return {"sum": lambda: current + update, "mean": lambda: current + update, "sub": lambda: current - update,
            "prod": lambda: current * update, "min": lambda: min(current, update),
            "max": lambda: max(current, update)}[reduction]()


def _identity(reduction, dtype):
    if reduction in ("sum", "sub", "mean"):
        return dtype.type(0)
    if reduction == "prod":
        return dtype.type(1)
    if dtype == np.bool_:
        return reduction == "min"
    info = np.finfo(dtype) if dtype.kind == "f" else np.iinfo(dtype)
    return dtype.type(info.max if reduction == "min" else info.min)


def _work_copy(data):
    """f16/bf16 are computed in f32, as the kernels (and OpenVINO's reference) do."""
    if data.dtype.kind == "f" or data.dtype.name == "bfloat16":
        return data.astype(np.float32) if data.dtype.itemsize < 4 else data.copy()
    return data.copy()


def _apply(out, targets, updates, reduction, use_init_val):
    """`targets` lists (output coordinate, update value) in the order the spec visits them."""
    is_bool = out.dtype == np.bool_
    counts: dict = {}
    for coord, value in zip(targets, updates):
        if coord not in counts:
            counts[coord] = 0
            if not use_init_val and reduction != "none":
                out[coord] = _identity(reduction, out.dtype)
        counts[coord] += 1
        out[coord] = _combine(reduction, out[coord], out.dtype.type(value), is_bool)
    if reduction == "mean":
        for coord, n in counts.items():
            n += 1 if use_init_val else 0
            out[coord] = out[coord] // n if out.dtype.kind in "iu" else out[coord] / out.dtype.type(n)
    return out


def scatter_elements(data, indices, updates, axis, reduction="none", use_init_val=True):
    out = _work_copy(data)
    axis %= data.ndim
    targets, values = [], []
    for c in np.ndindex(*indices.shape):
        i = int(indices[c])
        i = i + data.shape[axis] if i < 0 else i
        coord = list(c)
        coord[axis] = i
        targets.append(tuple(coord))
        values.append(updates[c])
    return _apply(out, targets, [np.asarray(v).astype(out.dtype) for v in values], reduction, use_init_val)


def scatter_nd(data, indices, updates, reduction="none"):
    out = _work_copy(data)
    k = indices.shape[-1]
    targets, values = [], []
    for j in np.ndindex(*indices.shape[:-1]):
        start = tuple(int(v) + data.shape[t] if v < 0 else int(v) for t, v in enumerate(indices[j]))
        for w in np.ndindex(*data.shape[k:]):
            targets.append(start + w)
            values.append(np.asarray(updates[j + w] if updates.ndim else updates).astype(out.dtype))
    return _apply(out, targets, values, reduction, True)


def scatter_update(data, indices, updates, axis):
    out = _work_copy(data)
    axis %= data.ndim
    targets, values = [], []
    for pre in np.ndindex(*data.shape[:axis]):
        for i in np.ndindex(*indices.shape):
            for post in np.ndindex(*data.shape[axis + 1:]):
                targets.append(pre + (int(indices[i]),) + post)
                values.append(np.asarray(updates[pre + i + post]).astype(out.dtype))
    # The spec visits updates in the row-major order of `indices`; for the last-write-wins choice
    # only the order among updates of the same target matters, which is that order here too.
    return _apply(out, targets, values, "none", True)


# --- the irscatter1 opset: one Python step per updated row or element --------------------------


def paged_scatter_update(cache, index, src):
    """The seed's formulas, token by token (negative index = padding, skipped)."""
    out = cache.copy()
    b, s = index.shape
    for i in range(b):
        for j in range(s):
            k = int(index[i, j])
            if k < 0:
                continue
            if cache.ndim == 2:
                out[k] = src[i * s + j]
            else:
                block_size = cache.shape[1]
                out[k // block_size, k % block_size, 0] = src[i, j, 0]
    return out


def paddle_scatter(x, index, updates, overwrite):
    """The seed's pseudo-code, literally."""
    out = _work_copy(x)
    if not overwrite:
        for i in range(len(index)):
            out[index[i]] = 0
    for i in range(len(index)):
        if overwrite:
            out[index[i]] = updates[i]
        else:
            out[index[i]] += updates[i]
    return out


_BNNS = {"none": "none", "sum": "sum", "product": "prod", "max": "max", "min": "min", "mean": "mean"}


def bnns_scatter(output, indices, input, axis, reduction):
    out = _work_copy(output)
    axis %= output.ndim
    targets, values = [], []
    if indices.ndim == 1 and output.ndim > 1:  # slice mode
        for pos in np.ndindex(input.shape):
            coord = list(pos)
            coord[axis] = int(indices[pos[axis]])
            targets.append(tuple(coord))
            values.append(input[pos])
    else:
        for pos in np.ndindex(input.shape):
            coord = list(pos)
            coord[axis] = int(indices[pos])
            targets.append(tuple(coord))
            values.append(input[pos])
    return _apply(out, targets, values, _BNNS[reduction], True)


def hlo_scatter(operands, indices, updates, dims, combine):
    """The StableHLO spec's definition, one element of updates at a time in row-major order.

    `dims` holds the dimension numbers; `combine(currents, updates)` maps tuples of scalars
    to a tuple of scalars."""
    uwd, iwd = dims["update_window_dims"], dims["inserted_window_dims"]
    ibd, sibd = dims.get("input_batching_dims", ()), dims.get("scatter_indices_batching_dims", ())
    sdod, ivd = dims["scatter_dims_to_operand_dims"], dims["index_vector_dim"]
    results = [x.copy() for x in operands]
    rank = operands[0].ndim
    u_shape = updates[0].shape
    update_scatter_dims = [d for d in range(len(u_shape)) if d not in uwd]
    window_input_dims = [d for d in range(rank) if d not in iwd and d not in ibd]
    for update_index in np.ndindex(u_shape):
        usi = [update_index[d] for d in update_scatter_dims]
        if ivd < indices.ndim:
            where = usi[:ivd] + [slice(None)] + usi[ivd:]
            start = list(indices[tuple(where)])
        else:
            start = [indices[tuple(usi)]]
        full_start = [0] * rank
        for d_start, d_in in enumerate(sdod):
            full_start[d_in] = int(start[d_start])
        full_batching = [0] * rank
        for d_in, d_start in zip(ibd, sibd):
            full_batching[d_in] = usi[d_start - (0 if d_start < ivd else 1)]
        full_window = [0] * rank
        for d_in, d_u in zip(window_input_dims, uwd):
            full_window[d_in] = update_index[d_u]
        result_index = tuple(s + b + w for s, b, w in zip(full_start, full_batching, full_window))
        if all(0 <= i < n for i, n in zip(result_index, operands[0].shape)):
            new = combine(tuple(r[result_index] for r in results), tuple(u[update_index] for u in updates))
            for r, v in zip(results, new):
                r[result_index] = v
    return results
