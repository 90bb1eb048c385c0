"""GatherTree-1: the complete beams of a beam search, back-tracked from the token ids of each
step and the parent beam of each (TensorFlow's gather_tree).

step_ids and parent_ids are [MAX_TIME, BATCH_SIZE, BEAM_WIDTH], max_seq_len [BATCH_SIZE] and
end_token a scalar, all of one numeric type T. For each batch b and beam w, with
L = min(MAX_TIME, max_seq_len[b]): final_ids[L-1, b, w] = step_ids[L-1, b, w], and going back
in time final_ids[t, b, w] = step_ids[t, b, p] where p is the parent followed from step t + 1
(parent_ids[t+1, b, p_next], starting from w). Steps from L on are end_token, and so is every
step after the first end_token of the beam (the first one is kept).

Float values are read as indices and lengths by truncation toward zero, as OpenVINO's
reference and CPU plugin read them; end_token is compared with the ids by value (the spec's
`==`, as the CPU plugin compares; the reference compares the truncated values). A parent that
is followed must lie in [0, BEAM_WIDTH) (`index-range`: the CPU plugin refuses it, the
reference reads out of bounds); parents at step 0 are never followed. A max_seq_len below 0
or NaN is refused (`max-seq-len-value`; the reference reads a negative integer as a huge
length). A max_seq_len of 0 gives a beam of end_token alone, as the spec and the reference
say; OpenVINO's CPU plugin leaves that beam's output unwritten.

The back-tracking runs one step at a time (it is sequential in time), over every batch and
beam at once.
"""

from __future__ import annotations

import numpy as np

from irscatter.errors import ExecutionError
from irscatter.ir.element_types import ElementType
from irscatter.ir.shapes import PartialShape
from irscatter.ops.base import Op, TensorInfo, check
from irscatter.ops.common.ranges import Bounds, extent, indices_within, lengths_within
from irscatter.ops.common.types import arithmetic_float, same_element_type
from irscatter.ops.registry import register


@register("GatherTree", 1)
class GatherTree(Op):
    labels = {
        "beam-shape": "step_ids and parent_ids are not of one shape of rank 3",
        "max-seq-len-shape": "max_seq_len is not a 1-D tensor of BATCH_SIZE lengths",
        "max-seq-len-value": "a max_seq_len value is negative or NaN",
    }

    inputs = ("step_ids", "parent_ids", "max_seq_len", "end_token")

    def input_range(self, position: int, infos) -> Bounds | None:
        if position == 1:
            return indices_within(extent(infos[0], 2))  # parents are beams of [MAX_TIME, BATCH, BEAM]
        return lengths_within(extent(infos[0], 0)) if position == 2 else None

    def infer(self, step_ids: TensorInfo, parent_ids: TensorInfo, max_seq_len: TensorInfo,
              end_token: TensorInfo) -> TensorInfo:
        message = "step_ids, parent_ids, max_seq_len and end_token must share one element type"
        etype = step_ids.etype
        for name, info in (("parent_ids", parent_ids), ("max_seq_len", max_seq_len), ("end_token", end_token)):
            etype = same_element_type(TensorInfo(etype, step_ids.shape), info, message, "same-element-type",
                                      self.port(name))
        check(etype is ElementType.dynamic or arithmetic_float(etype) or (etype.is_integral and not etype.is_packed),
              "numeric-type", f"GatherTree is not defined for {etype} tensors (it takes a numeric type)",
              port=self.port("step_ids"))
        for name, info in (("step_ids", step_ids), ("parent_ids", parent_ids)):
            if info.shape.rank_is_static:
                check(info.shape.rank == 3, "beam-shape", f"{name} must have rank 3, found shape {info.shape}",
                      port=self.port(name))
        check(step_ids.shape.compatible(parent_ids.shape), "beam-shape",
              f"parent_ids must have the shape of step_ids {step_ids.shape}, found {parent_ids.shape}",
              port=self.port("parent_ids"))
        if max_seq_len.shape.rank_is_static:
            check(max_seq_len.shape.rank == 1, "max-seq-len-shape",
                  f"max_seq_len must be 1-D, found shape {max_seq_len.shape}", port=self.port("max_seq_len"))
        if end_token.shape.rank_is_static:
            check(end_token.shape.rank == 0, "scalar-input", f"end_token must be a scalar, found shape {end_token.shape}",
                  port=self.port("end_token"))
        shape = step_ids.shape if step_ids.shape.rank_is_static else parent_ids.shape
        if not shape.rank_is_static:
            return TensorInfo(etype, PartialShape.of([-1, -1, -1]))
        dims = list(shape.ranked_dims)
        if parent_ids.shape.rank_is_static and dims[1].is_dynamic:
            dims[1] = parent_ids.shape[1]
        if max_seq_len.shape.rank_is_static:
            check(dims[1].compatible(max_seq_len.shape[0]), "max-seq-len-shape",
                  f"max_seq_len must hold BATCH_SIZE ({dims[1]}) lengths, found shape {max_seq_len.shape}",
                  port=self.port("max_seq_len"))
            if dims[1].is_dynamic:
                dims[1] = max_seq_len.shape[0]
        for k in (0, 2):
            if dims[k].is_dynamic and parent_ids.shape.rank_is_static:
                dims[k] = parent_ids.shape[k]
        return TensorInfo(etype, PartialShape.of(dims))

    def compute(self, step_ids: np.ndarray, parent_ids: np.ndarray, max_seq_len: np.ndarray,
                end_token: np.ndarray) -> np.ndarray:
        if step_ids.ndim != 3 or parent_ids.shape != step_ids.shape:
            raise ExecutionError(f"step_ids and parent_ids must share one shape of rank 3, found "
                                 f"{list(step_ids.shape)} and {list(parent_ids.shape)}", port=self.port("parent_ids"),
                                 label="beam-shape")
        time, batch, width = step_ids.shape
        if max_seq_len.shape != (batch,):
            raise ExecutionError(f"max_seq_len must have shape [{batch}], found {list(max_seq_len.shape)}",
                                 port=self.port("max_seq_len"), label="max-seq-len-shape")
        lengths = self._lengths(max_seq_len, time)
        token = np.asarray(end_token).reshape(-1)[0]
        out = np.full(step_ids.shape, token, step_ids.dtype)
        b = np.arange(batch)[:, None]
        parent = np.broadcast_to(np.arange(width, dtype=np.int64), (batch, width)).copy()
        for t in range(time - 1, -1, -1):
            active = np.broadcast_to((t < lengths)[:, None], (batch, width))
            out[t] = np.where(active, step_ids[t][b, parent], out[t])
            if t == 0:
                break
            followed = parent_ids[t][b, parent]
            wide = np.trunc(followed.astype(np.float64)) if followed.dtype.kind not in "iu" else followed
            inside = (wide >= 0) & (wide < width)  # NaN is outside
            if np.any(active & ~inside):
                where = np.argwhere(active & ~inside)[0]
                raise ExecutionError(f"parent id {followed[tuple(where)]} followed at step {t}, batch {where[0]} "
                                     f"is out of range [0, {width - 1}]", port=self.port("parent_ids"),
                                     label="index-range")
            parent = np.where(active, np.where(inside, wide, 0).astype(np.int64), parent)
        # every step after a beam's first end_token (within its length) becomes end_token
        hits = out == token
        after = (np.cumsum(hits, axis=0) - hits) > 0
        out[after] = token
        return out

    def _lengths(self, max_seq_len: np.ndarray, time: int) -> np.ndarray:
        wide = max_seq_len.astype(np.float64) if max_seq_len.dtype.kind not in "iu" else max_seq_len
        if max_seq_len.dtype.kind not in "iu":
            wide = np.trunc(wide)
        bad = ~(wide >= 0)  # NaN is bad
        if np.any(bad):
            k = int(np.flatnonzero(bad)[0])
            raise ExecutionError(f"max_seq_len[{k}] is {max_seq_len[k]}: a length must be 0 or more",
                                 port=self.port("max_seq_len"), label="max-seq-len-value")
        return np.minimum(wide, time).astype(np.int64)
