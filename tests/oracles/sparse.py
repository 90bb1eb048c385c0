"""The embedding bags, EmbeddingSegmentsSum, SegmentMax and SparseFillEmptyRows, and GatherTree,
one Python step per gathered row element or output element, transcribed from the specs' own
definitions (the NumPy snippets of the EmbeddingBagOffsets pages, the pseudocode of GatherTree).

Sums run in index order on numpy scalars of the type the op computes in (f32 for f16 and bf16,
so the one rounding to the output type happens at the end), integers wrap as C++ does and an
integer mean truncates toward zero.
"""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np


def _work(dtype):
    dtype = np.dtype(dtype)
    if dtype.kind == "f" and dtype.itemsize >= 4:
        return dtype
    if dtype.kind in "iu":
        return dtype
    return np.dtype(np.float32)  # f16, bf16


def _divide(total, n, work):
    if work.kind == "f":
        return work.type(total / work.type(n))
    q = abs(int(total)) // n
    return work.type(q if int(total) >= 0 else -q)


def _bags(emb_table, bags, weights, reduction, fill):
    """bags: a list of lists of (index, position in the weights); fill(b) gives an empty bag's row."""
    work = _work(emb_table.dtype)
    rows = emb_table.reshape(emb_table.shape[0], math.prod(emb_table.shape[1:]))
    depth = rows.shape[1]
    out = np.zeros((len(bags), depth), work)
    with np.errstate(all="ignore"):
        for b, members in enumerate(bags):
            if not members:
                out[b] = fill(b, rows, work)
                continue
            for d in range(depth):
                total = work.type(0)
                for index, at in members:
                    value = work.type(rows[index, d])
                    if weights is not None:
                        value = work.type(value * work.type(weights.reshape(-1)[at]))
                    total = work.type(total + value)
                if reduction == "mean":
                    total = _divide(total, len(members), work)
                out[b, d] = total
    return out.astype(emb_table.dtype).reshape((len(bags),) + emb_table.shape[1:])


def _fill_default(default_index, minus_one_is_zeros=True):
    def fill(b, rows, work):
        if default_index is None or (minus_one_is_zeros and int(default_index) == -1):
            return np.zeros(rows.shape[1], work)
        return rows[int(default_index)].astype(work)
    return fill


def embedding_bag_offsets(emb_table, indices, offsets, default_index=None, per_sample_weights=None,
                          reduction="sum"):
    """The spec's snippet: bag i holds indices[offsets[i]:offsets[i+1]] (the last to the end)."""
    ends = list(offsets[1:]) + [len(indices)]
    bags = [[(int(indices[j]), j) for j in range(int(start), int(end))] for start, end in zip(offsets, ends)]
    return _bags(emb_table, bags, per_sample_weights, reduction, _fill_default(default_index))


def embedding_bag_packed(emb_table, indices, per_sample_weights=None, reduction="sum"):
    """ReduceSum/ReduceMean over axis 1 of Gather(emb_table, indices); a mean of no index is 0/0."""
    per_bag = indices.shape[1]
    bags = [[(int(indices[b, k]), b * per_bag + k) for k in range(per_bag)] for b in range(indices.shape[0])]

    def fill(b, rows, work):
        nan = reduction == "mean" and work.kind == "f"
        return np.full(rows.shape[1], np.nan if nan else 0, work)
    return _bags(emb_table, bags, per_sample_weights, reduction, fill)


def embedding_segments_sum(emb_table, indices, segment_ids, num_segments, default_index=None,
                           per_sample_weights=None):
    bags = [[] for _ in range(int(num_segments))]
    for j in range(len(indices)):
        bags[int(segment_ids[j])].append((int(indices[j]), j))
    return _bags(emb_table, bags, per_sample_weights, "sum", _fill_default(default_index, False))


def _lowest(dtype):
    dtype = np.dtype(dtype)
    if dtype.kind in "iu":
        return np.iinfo(dtype).min
    return -float(ml_dtypes.finfo(dtype).max)


def segment_max(data, segment_ids, num_segments=None, fill_mode="ZERO"):
    """Each output element: the largest non-NaN value of its segment at that position; a segment
    with values that are all NaN there gives the lowest value; an empty one the fill."""
    count = int(num_segments) if num_segments is not None else (int(max(segment_ids)) + 1 if len(segment_ids) else 0)
    rows = data.reshape(data.shape[0], math.prod(data.shape[1:]))
    out = np.zeros((count, rows.shape[1]), data.dtype)
    fill = 0 if fill_mode.upper() == "ZERO" else _lowest(data.dtype)
    for s in range(count):
        members = [i for i in range(len(segment_ids)) if int(segment_ids[i]) == s]
        for d in range(rows.shape[1]):
            if not members:
                out[s, d] = fill
                continue
            read = int if data.dtype.kind in "iu" else float
            values = [read(rows[i, d]) for i in members if not math.isnan(float(rows[i, d]))]
            out[s, d] = max(values) if values else _lowest(data.dtype)
    return out.reshape((count,) + data.shape[1:])


def sparse_fill_empty_rows(values, dense_shape, indices, default_value):
    rows = int(dense_shape[0])
    entries = [((int(indices[k, 0]), int(indices[k, 1])), k, values[k]) for k in range(len(values))]
    empty = np.zeros(rows, bool)
    for r in range(rows):
        if not any(pos[0] == r for pos, _, _ in entries):
            empty[r] = True
            entries.append(((r, 0), len(entries), default_value.reshape(-1)[0]))
    entries.sort(key=lambda e: (e[0], e[1]))  # row-major, equal positions in input order
    out_indices = np.array([pos for pos, _, _ in entries], indices.dtype).reshape(-1, 2)
    out_values = np.array([v for _, _, v in entries], values.dtype).reshape(-1)
    return out_indices, out_values, empty


def gather_tree(step_ids, parent_ids, max_seq_len, end_token):
    """The spec's pseudocode; float values are read as indices by truncation."""
    max_time, batch_size, beam_width = step_ids.shape
    token = end_token.reshape(-1)[0]
    final = np.full(step_ids.shape, token, step_ids.dtype)
    for batch in range(batch_size):
        for beam in range(beam_width):
            length = min(max_time, math.trunc(float(max_seq_len[batch])))
            if length == 0:
                continue
            parent = math.trunc(float(parent_ids[length - 1, batch, beam]))
            final[length - 1, batch, beam] = step_ids[length - 1, batch, beam]
            for level in reversed(range(length - 1)):
                final[level, batch, beam] = step_ids[level, batch, parent]
                parent = math.trunc(float(parent_ids[level, batch, parent]))
            finished = False
            for time in range(length):
                if finished:
                    final[time, batch, beam] = token
                elif final[time, batch, beam] == token:
                    finished = True
    return final
