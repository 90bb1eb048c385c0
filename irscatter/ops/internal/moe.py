"""MOE (domain `extension`): the experts of a Mixture of Experts block, weighted by the router's
choice and summed, as OpenVINO's transformations fuse them (GPT-OSS's two-GEMM experts with
biases and a clamped SwiGLU, Qwen3-MoE's and Mixtral's three-GEMM SwiGLU experts).

Domain: OpenVINO declares `ov::op::internal::MOE` with the one-argument `OPENVINO_OP("MOE")`,
whose version is `extension`. Its `FuseVectorizedMOE2GEMM` and `FuseVectorizedMOE3GEMM` passes
make it from the tiled form of the block (every token through every expert, weighted by a
routing tensor that is zero outside each token's top-k). Only the GPU plugin runs it: OpenVINO's
CPU plugin neither reads nor runs the op.

Inputs, after hidden_states [..., H] (its rows are the tokens), routing_weights and
router_topk_output_indices [..., k] (the k experts chosen for each of its B rows):

* `gemm2_bias_swiglu_clamp` (6 or 7 inputs): weight_0 [E, H, 2I], bias_0, weight_1 [E, I, H],
  bias_1 (optional). Per expert: gu = x @ weight_0 + bias_0; of each pair of gu's columns, the
  second (odd) goes through min(., alpha) and swish(., beta), the first (even) through
  clamp(., -alpha, alpha) + 1, and their product @ weight_1 + bias_1 is the expert's output.
* `gemm3_swiglu` (6 inputs, or 9 with empty biases in the page's positions): weight_0 (gate)
  and weight_1 (up) [E, I, H], weight_2 (down) [E, H, I], all multiplied transposed: the output
  is (swish(x @ weight_0^T, beta) * (x @ weight_1^T)) @ weight_2^T.

A bias is [E, ...], broadcastable to its product's [E, tokens, N], or an empty tensor (none).

Routing, in one of two forms:

* The page's: routing_weights broadcasts against the experts' outputs seen as [E, B, R, H]
  (R = tokens / B, 1 when there is a row of indices per token), for example [E, B, 1, 1], and the
  output is the sum over all experts of the weighted outputs. irscatter runs expert e on the
  tokens of row b only when e is among the row's indices or its weight there is not 0: the others
  add exactly 0 (their weight is 0) unless their output is not finite, where the dense sum would
  have a NaN and irscatter has none.
* OpenVINO's (what its current MOE checks: routing_weights of the indices' shape [..., k]): the
  weight of each chosen expert. An expert chosen twice in a row counts twice. When
  routing_weights fits both forms, this one is taken.

Attributes: `expert_type` (required, either case), `expert_alpha` (the clamp bound, 0 by
default, not negative) and `expert_beta` (Swish's beta, 1 by default), as the page gives them.
OpenVINO's op also writes two the page does not have, which irscatter reads so that a model it
saved computes what it says: `gate_idx`, the place (0 or 1) of the gate (the Swish input) in each
pair of the two-GEMM form's columns (the page's pseudocode has it at 1, irscatter's default when
the attribute is absent), and `activation_type`: `swiglu` (the page's) or, for `gemm3_swiglu`
only, `geglu_tanh` and `geglu_erf`, which put GELU (tanh or erf) where Swish was.

Where irscatter departs from the page: the page's pseudocode for `gemm3_swiglu` computes
swish(x_proj) without ever using the up projection x_proj2 (its product with x_proj is computed
and dropped); irscatter multiplies the two, as the name, the three weights and the subgraph
OpenVINO fuses into the op all say. The page writes weight_0's shape as [E, H, I] for both
types, but its `gemm3_swiglu` pseudocode multiplies it transposed next to weight_1 [E, I, H]:
irscatter takes [E, I, H], the shape the pseudocode can multiply. The page calls hidden_states
2-D; irscatter also takes more axes, the last being H, as the fused subgraph reshaped them.

Types: hidden_states, routing_weights, the weights and the biases share one float type T; f16
and bf16 compute in f32 and round the output once; indices are i32 or i64 in [0, E).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Annotated, ClassVar, Literal

import numpy as np
from pydantic import field_validator

from irscatter.errors import ExecutionError
from irscatter.ir.element_types import ElementType
from irscatter.ops.activation.elementwise import gelu_erf, gelu_tanh
from irscatter.ops.base import Lower, Op, OpAttrs, TensorInfo, check, required
from irscatter.ops.common.numeric import compute_dtype, from_compute
from irscatter.ops.common.ranges import Bounds, extent, indices_within
from irscatter.ops.internal.gated_delta_net import same_float_type
from irscatter.ops.matrix.grouped_mat_mul import GroupedMatMul
from irscatter.ops.registry import register

DOMAIN = "extension"
GEMM2, GEMM3 = "gemm2_bias_swiglu_clamp", "gemm3_swiglu"
INPUTS = ("hidden_states", "routing_weights", "router_topk_output_indices", "weight_0", "bias_0", "weight_1",
          "bias_1", "weight_2", "bias_2")


class MOEAttrs(OpAttrs):
    expert_type: Annotated[Literal["gemm2_bias_swiglu_clamp", "gemm3_swiglu"], Lower]
    expert_alpha: float = 0.0
    expert_beta: float = 1.0
    gate_idx: int | None = None  # OpenVINO's; the page's pseudocode is gate_idx 1
    activation_type: Annotated[Literal["swiglu", "geglu_tanh", "geglu_erf"], Lower] = "swiglu"

    @field_validator("gate_idx")
    @classmethod
    def _pair_place(cls, value: int | None) -> int | None:
        if value not in (None, 0, 1):
            raise ValueError("must be 0 or 1 (the gate's place in each pair of columns)")
        return value


def roles(expert_type: str, count: int) -> dict[str, int] | None:
    """Where each weight and bias is among `count` inputs, or None when the count does not fit."""
    if expert_type == GEMM2 and count in (6, 7):
        return {"weight_0": 3, "bias_0": 4, "weight_1": 5, **({"bias_1": 6} if count == 7 else {})}
    if expert_type == GEMM3 and count == 6:
        return {"weight_0": 3, "weight_1": 4, "weight_2": 5}
    if expert_type == GEMM3 and count == 9:
        return {name: INPUTS.index(name) for name in INPUTS[3:]}
    return None


@register("MOE", 1, domain=DOMAIN)
class MOE(Op):
    """The routed experts of a Mixture of Experts block."""

    Attrs = MOEAttrs
    attrs: MOEAttrs
    inputs = INPUTS
    optional_inputs = 3
    foldable = False
    labels: ClassVar[dict[str, str]] = {
        "moe-inputs": "the number of inputs does not fit expert_type (6 or 7 for gemm2_bias_swiglu_clamp, 6 or 9 "
                      "for gemm3_swiglu)",
        "moe-hidden": "hidden_states is not [tokens, H] or of higher rank",
        "moe-weights": "a weight is not 3-D or its shape does not fit hidden_states, the other weights or the "
                       "expert count",
        "moe-bias": "a bias is not empty and does not broadcast to its product, or gemm3_swiglu is given a bias",
        "moe-routing": "the indices do not divide the tokens into rows, or routing_weights fits neither routing form",
        "moe-attribute": "expert_alpha is negative for gemm2_bias_swiglu_clamp, or a GELU activation is asked of it",
    }

    def input_range(self, position: int, infos: Sequence[TensorInfo | None]) -> Bounds | None:
        weight_0 = infos[3] if len(infos) > 3 else None
        if position == 2 and weight_0 is not None:
            return indices_within(extent(weight_0, 0))  # the experts weight_0 holds
        return None

    def _roles(self, count: int) -> dict[str, int]:
        found = required(roles(self.attrs.expert_type, count), "moe-inputs",
                         f"{self.attrs.expert_type} takes 6 or 7 inputs (with or without bias_1)"
                         if self.attrs.expert_type == GEMM2
                         else f"{self.attrs.expert_type} takes 6 inputs (three weights) or the page's 9 with empty "
                         "biases", port=self.port("expert_type"))
        if self.attrs.expert_type == GEMM2:
            check(self.attrs.expert_alpha >= 0, "moe-attribute",
                  f"expert_alpha {self.attrs.expert_alpha} bounds clamp(x, -alpha, alpha) and must not be negative",
                  port=self.port("expert_alpha"))
            check(self.attrs.activation_type == "swiglu", "moe-attribute",
                  f"{GEMM2} computes SwiGLU only, not {self.attrs.activation_type}",
                  port=self.port("activation_type"))
        return found

    def infer(self, *infos: TensorInfo) -> TensorInfo:
        where = self._roles(len(infos))
        floats = (0, 1, *where.values())
        etype = same_float_type(self, tuple(infos[i] for i in floats), tuple(INPUTS[i] for i in floats))
        hidden, weights, indices = infos[0], infos[1], infos[2]
        check(indices.etype in (ElementType.i32, ElementType.i64, ElementType.dynamic), "index-type",
              f"router_topk_output_indices must be i32 or i64, found {indices.etype}",
              port=self.port("router_topk_output_indices"))
        if hidden.shape.rank_is_static:
            check(hidden.shape.rank >= 2, "moe-hidden", f"hidden_states must be [tokens, H] or have more axes, "
                  f"found {hidden.shape}", port=self.port("hidden_states"))
        if indices.shape.rank_is_static:
            check(indices.shape.rank >= 1, "moe-routing", "router_topk_output_indices must be [..., k], found a "
                  "scalar", port=self.port("router_topk_output_indices"))
        shapes = {name: infos[i].shape for name, i in where.items()}
        if all(s.is_static for s in shapes.values()) and hidden.shape.is_static and weights.shape.is_static \
                and indices.shape.is_static:
            self._check_shapes(hidden.shape.to_tuple(), weights.shape.to_tuple(), indices.shape.to_tuple(),
                               {name: s.to_tuple() for name, s in shapes.items()}, where)
        return TensorInfo(etype, hidden.shape)

    def _check_shapes(self, hidden: tuple, weights: tuple, indices: tuple, given: dict[str, tuple],
                      where: dict[str, int]) -> None:
        """Every static shape against the others (the weights fix E, H and I; hidden_states and the
        indices the tokens and their rows)."""
        size = hidden[-1]
        tokens = math.prod(hidden[:-1])
        gemm2 = self.attrs.expert_type == GEMM2
        w0 = given["weight_0"]
        check(len(w0) == 3, "moe-weights", f"weight_0 must be 3-D, found {list(w0)}", port=self.port("weight_0"))
        experts = w0[0]
        inner = (w0[2] // 2) if gemm2 else w0[1]
        wanted = {"weight_0": (experts, size, 2 * inner) if gemm2 else (experts, inner, size)}
        if gemm2:
            wanted["weight_1"] = (experts, inner, size)
            products = {"bias_0": 2 * inner, "bias_1": size}
        else:
            wanted.update(weight_1=(experts, inner, size), weight_2=(experts, size, inner))
            products = {"bias_0": 0, "bias_1": 0, "bias_2": 0}
        for name, shape in wanted.items():
            check(given[name] == shape, "moe-weights",
                  f"{name} must be {list(shape)} for hidden size {size}, {experts} experts and intermediate size "
                  f"{inner}{' (weight_0 holds 2 x I columns)' if gemm2 else ''}, found {list(given[name])}",
                  port=self.port(INPUTS[where[name]]))
        for name, columns in products.items():
            bias = given.get(name)
            if bias is None or math.prod(bias) == 0:
                continue
            check(gemm2, "moe-bias", f"{GEMM3} computes no bias, and {name} is not empty",
                  port=self.port(INPUTS[where[name]]))
            target = (experts, tokens, columns)
            fits = len(bias) <= 3 and bias[0] == experts and _broadcasts(bias, target)
            check(fits, "moe-bias", f"{name} {list(bias)} must be [E, ...] and broadcast to {list(target)}, or be "
                  f"empty", port=self.port(INPUTS[where[name]]))
        rows = math.prod(indices[:-1])
        check(tokens % rows == 0 if rows else tokens == 0, "moe-routing",
              f"router_topk_output_indices has {rows} rows for hidden_states' {tokens} tokens, which must be a "
              f"multiple", port=self.port("router_topk_output_indices"))
        dense = (experts, rows, tokens // rows if rows else 0, size)
        check(weights == indices or (len(weights) <= 4 and _broadcasts(weights, dense)), "moe-routing",
              f"routing_weights {list(weights)} must have the indices' shape {list(indices)} or broadcast to the "
              f"experts' outputs {list(dense)}", port=self.port("routing_weights"))

    def compute(self, *arrays: np.ndarray) -> np.ndarray:
        where = self._roles(len(arrays))
        hidden, routing, indices = arrays[:3]
        etype = ElementType.from_dtype(hidden.dtype)
        work = compute_dtype(etype)
        experts, size = arrays[where["weight_0"]].shape[0], hidden.shape[-1]
        chosen = indices.astype(np.int64).reshape(math.prod(indices.shape[:-1]), indices.shape[-1])
        if ((chosen < 0) | (chosen >= experts)).any():
            raise ExecutionError(f"router_topk_output_indices name experts outside [0, {experts})",
                                 label="index-range", port=self.port("router_topk_output_indices"))
        rows, tokens = chosen.shape[0], math.prod(hidden.shape[:-1])
        per_row = tokens // rows if rows else 0
        compact = routing.shape == indices.shape
        if not compact and not _broadcasts(routing.shape, (experts, rows, per_row, size)):
            raise ExecutionError(f"routing_weights {list(routing.shape)} must have the indices' shape "
                                 f"{list(indices.shape)} or broadcast to {[experts, rows, per_row, size]}",
                                 label="moe-routing", port=self.port("routing_weights"))
        x = hidden.astype(work).reshape(rows, per_row, size)
        with np.errstate(all="ignore"):
            expert, row, weight = _pairs(routing.astype(work), chosen, compact, experts)
            rows_of_pairs = x[row].reshape(row.size * per_row, size)
            outputs = self._experts(arrays, where, rows_of_pairs, expert, row, tokens, work)
            out = np.zeros((rows, per_row, size), work)
            np.add.at(out, row, outputs.reshape(row.size, per_row, size) * weight)  # in expert order, as the sum
        return from_compute(out.reshape(hidden.shape), etype)

    def _experts(self, arrays: tuple[np.ndarray, ...], where: dict[str, int], x: np.ndarray, expert: np.ndarray,
                 row: np.ndarray, tokens: int, work: np.dtype) -> np.ndarray:
        """Each pair's expert output [pairs * R, H] for its token rows `x` [pairs * R, H]."""
        experts = arrays[where["weight_0"]].shape[0]
        per_row = x.shape[0] // row.size if row.size else 0
        ends = np.cumsum(np.bincount(expert, minlength=experts)) * per_row
        token = (row[:, None] * per_row + np.arange(per_row)).reshape(-1)  # each of x's rows among all tokens
        owner = np.repeat(expert, per_row)

        def product(name: str, transposed: bool, a: np.ndarray) -> np.ndarray:
            w = arrays[where[name]].astype(work, copy=False)
            out = GroupedMatMul._products(a, np.swapaxes(w, 1, 2) if transposed else w, ends, work)
            place = where.get(name.replace("weight", "bias"))
            bias = arrays[place] if place is not None else None
            if bias is not None and bias.size:
                out += np.broadcast_to(bias.astype(work), (experts, tokens, out.shape[1]))[owner, token]
            return out

        beta = self.attrs.expert_beta
        if self.attrs.expert_type == GEMM2:
            both = product("weight_0", False, x)
            gate_at = 1 if self.attrs.gate_idx is None else self.attrs.gate_idx
            gate, up = both[:, gate_at::2], both[:, 1 - gate_at::2]
            alpha = work.type(self.attrs.expert_alpha)
            fused = (np.clip(up, -alpha, alpha) + 1) * swish(np.minimum(gate, alpha), beta)
            return product("weight_1", False, fused)
        gate = product("weight_0", True, x)
        activated = {"swiglu": lambda g: swish(g, beta), "geglu_tanh": gelu_tanh,
                     "geglu_erf": gelu_erf}[self.attrs.activation_type](gate)
        return product("weight_2", True, activated * product("weight_1", True, x))


def _pairs(routing: np.ndarray, chosen: np.ndarray, compact: bool,
           experts: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The (expert, row) pairs to compute, sorted by expert, and each pair's weight, which
    broadcasts against the pair's output [R, H]."""
    rows, k = chosen.shape
    if compact:  # one pair per choice, a repeated choice included
        order = np.argsort(chosen.reshape(-1), kind="stable")
        return chosen.reshape(-1)[order], order // max(k, 1), routing.reshape(-1)[order][:, None, None]
    full = routing.reshape((1,) * (4 - routing.ndim) + routing.shape)
    dense = np.broadcast_to(full, np.broadcast_shapes(full.shape, (experts, rows, 1, 1)))
    run = (dense != 0).any(axis=(2, 3))  # an expert weighted 0 adds 0: only the chosen or weighted ones run
    run[chosen, np.arange(rows)[:, None]] = True
    expert, row = np.nonzero(run)  # expert-major: the order the page's sum adds them in
    return expert, row, dense[expert, row]


def swish(x: np.ndarray, beta: float) -> np.ndarray:
    return x / (1 + np.exp(-x.dtype.type(beta) * x))


def _broadcasts(shape: tuple, target: tuple) -> bool:
    """Whether `shape` broadcasts to `target` without changing it."""
    try:
        return np.broadcast_shapes(shape, target) == tuple(target)
    except ValueError:
        return False
