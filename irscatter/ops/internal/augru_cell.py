"""AUGRUCell (domain `ie_internal_opset`): one step of a GRU with an attentional update gate
(DIEN's AUGRU, arXiv:1809.03672). With the gates of GRUCell-3 (z, r, h stacked in that order
in W [3 * hidden, input], R [3 * hidden, hidden] and B [3 * hidden]; f = sigmoid for z and r,
g = tanh for h, no linear_before_reset), the attention score a [batch, 1] scales the update
gate: zt' = (1 - at) . zt, Ht = (1 - zt') . ht + zt' . Ht-1.

The domain is the one OpenVINO writes: `ov::op::internal::AUGRUCell` declares
`OPENVINO_OP("AUGRUCell", "ie_internal_opset", RNNCellBase)` in
src/common/transformations/include/ov_ops/augru_cell.hpp. OpenVINO's AUGRUCellFusion makes it
from the TensorFlow form of the cell (the CPU plugin runs that pass, and its RNN node runs it).

The gates, the step and the conversions are `ops/recurrent/core.py`'s (GRU's step with the
attention column appended to X W^T), so every rule there holds: f16 and bf16 compute in f32
and round once; the hidden_size attribute must match the inputs; the inputs share one float
type (A included).

The page's ranges are its only values, and OpenVINO refuses any other: clip 0 (no clipping),
activations sigmoid then tanh, no activations_alpha or activations_beta, linear_before_reset
false (and, for AUGRUSequence, direction forward). A layer with another value is refused with
`augru-attributes`. Where the page is wrong and OpenVINO is followed: B is 1-D [3 * hidden]
(the page calls it 2-D while giving that shape), and the page's example lists a second output
(Y [1, 4, 128], a sequence's) that the cell does not have.
"""

from __future__ import annotations

import numpy as np

from irscatter.ops.base import IRBool, TensorInfo, check
from irscatter.ops.common.types import same_element_type
from irscatter.ops.recurrent.core import (
    Activations,
    Recurrent,
    RecurrentAttrs,
    SequenceAttrs,
    augru_step,
    finish,
    run_cell,
    to_work,
)
from irscatter.ops.registry import register

DOMAIN = "ie_internal_opset"


class AUGRUCellAttrs(RecurrentAttrs):
    activations: Activations = ("sigmoid", "tanh")
    clip: float = 0.0
    linear_before_reset: IRBool = False


class AttentionalGRU(Recurrent):
    """What AUGRUCell and AUGRUSequence add to the recurrent base: the attention input A (the
    last input) and the attributes the page and OpenVINO fix."""

    labels = {
        "augru-attributes": "an AUGRU op's clip, activations, activations_alpha/beta, linear_before_reset or "
                            "direction is not the one value the page and OpenVINO allow",
    }

    attrs: AUGRUCellAttrs
    gates = 3
    activation_count = 2

    def check_attributes(self) -> None:
        super().check_attributes()
        a = self.attrs
        fixed = [("clip", a.clip == 0, f"clip must be 0 (no clipping), found {a.clip}"),
                 ("activations", a.activations == ("sigmoid", "tanh"),
                  f"activations must be sigmoid,tanh, found {','.join(a.activations)}"),
                 ("activations_alpha", not a.activations_alpha and not a.activations_beta,
                  "activations_alpha and activations_beta must be empty"),
                 ("linear_before_reset", not a.linear_before_reset, "linear_before_reset must be false")]
        if isinstance(a, SequenceAttrs):
            fixed.append(("direction", a.direction == "forward", f"direction must be forward, found {a.direction}"))
        for name, holds, message in fixed:
            check(holds, "augru-attributes", message, port=self.port(name))

    def infer(self, *infos: TensorInfo) -> TensorInfo | tuple[TensorInfo, ...]:
        outputs = super().infer(*infos[:-1])  # the recurrent rules for everything but A
        x, a = infos[0], infos[-1]
        same_element_type(x, a, "X and A must have the same element type", "same-element-type", self.port("A"))
        if a.shape.rank_is_static:
            # A is [batch, 1] for a cell, [batch, seq_length, 1] for a sequence
            rank = 3 if self.sequence else 2
            check(a.shape.rank == rank, "recurrent-rank", f"A must have rank {rank}, found {a.shape}",
                  port=self.port("A"))
            lead = x.shape.ranked_dims[: rank - 1] if x.shape.rank_is_static else ()
            fits = a.shape[-1].contains(1) and all(d.compatible(e) for d, e in zip(a.shape.ranked_dims, lead))
            check(fits, "recurrent-shape", f"A has shape {a.shape}: it must be [batch{', seq_length' if self.sequence else ''}, "
                  f"1] of X {x.shape}", port=self.port("A"))
        return outputs


@register("AUGRUCell", 1, domain=DOMAIN)
class AUGRUCell(AttentionalGRU):
    Attrs = AUGRUCellAttrs
    attrs: AUGRUCellAttrs
    inputs = ("X", "initial_hidden_state", "W", "R", "B", "A")

    def compute(self, x: np.ndarray, h: np.ndarray, w: np.ndarray, r: np.ndarray, b: np.ndarray,
                a: np.ndarray) -> np.ndarray:
        etype, (x, h, w, r, b, a) = to_work([x, h, w, r, b, a])
        f, g = self.gate_functions()
        with np.errstate(all="ignore"):
            return finish(etype, run_cell(augru_step(f, g), x, (h,), w, r, b, columns=a))[0]
