"""The irscatter1 opset (PyPTO's paged KV write, Paddle, Apple BNNS, StableHLO), one Python step
per updated row or element, transcribed from each source's own definition."""

from __future__ import annotations

import numpy as np

from oracles.scatter import apply_updates, work_copy


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
    out = work_copy(x)
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
    out = work_copy(output)
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
    return apply_updates(out, targets, values, _BNNS[reduction], True)


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
