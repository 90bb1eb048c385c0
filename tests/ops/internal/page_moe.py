"""MOE read off its spec page (internal/moe.rst), one expert and one token at a time, in f64.

The page's pseudocode: every token goes through every expert (the hidden states tiled E times),
the experts' outputs [E, B, -1, H] are multiplied by routing_weights and summed over E. The
indices only say which experts the optimized computation may skip, so this transcription does
not read them. Its one correction of the page: `gemm3_swiglu` multiplies swish(x @ w0^T) by the
up projection x @ w1^T, which the page computes and never uses (see the kernel's docstring).
`gate_idx` None is the page's pseudocode (the Swish half is the odd columns).
"""

from __future__ import annotations

import math

import numpy as np


def _swish(x: float, beta: float) -> float:
    with np.errstate(over="ignore"):
        return float(x / (1 + np.exp(np.float64(-beta * x))))


def _bias(bias, e: int, t: int, tokens: int, columns: int) -> np.ndarray:
    """Token t's row of expert e's bias, broadcast to [tokens, columns]; 0 for an empty bias."""
    if bias is None or bias.size == 0:
        return np.zeros(columns)
    return np.broadcast_to(bias[e], (tokens, columns))[t]


def _expert(x: np.ndarray, e: int, t: int, tokens: int, weights: dict, expert_type: str, alpha: float, beta: float,
            gate_idx: int | None) -> np.ndarray:
    """Expert e's output for token t (of `tokens`), whose hidden vector is x [H]."""
    if expert_type == "gemm2_bias_swiglu_clamp":
        gate_up = x @ weights["w0"][e] + _bias(weights["b0"], e, t, tokens, weights["w0"].shape[2])
        if gate_idx is None or gate_idx == 1:
            slice_1, slice_2 = gate_up[0::2], gate_up[1::2]  # the page: slice_1 is clamped, slice_2 gated
        else:
            slice_1, slice_2 = gate_up[1::2], gate_up[0::2]
        fused = np.array([(min(max(a, -alpha), alpha) + 1) * _swish(min(b, alpha), beta)
                          for a, b in zip(slice_1, slice_2)])
        return fused @ weights["w1"][e] + _bias(weights.get("b1"), e, t, tokens, x.size)
    x_proj = weights["w0"][e] @ x  # transpose_b: w0 [I, H]
    x_proj2 = weights["w1"][e] @ x
    swiglu = np.array([_swish(a, beta) * b for a, b in zip(x_proj, x_proj2)])
    return weights["w2"][e] @ swiglu


def moe(hidden, routing_weights, indices, *, expert_type, alpha=0.0, beta=1.0, gate_idx=None, **weights):
    """The block's output (hidden_states' shape). `weights`: w0, b0, w1, b1 (two-GEMM) or w0, w1,
    w2 (three-GEMM). `routing_weights` broadcasts to [E, B, R, H], B the indices' rows."""
    weights = {k: None if v is None else np.asarray(v, np.float64) for k, v in weights.items()}
    size = hidden.shape[-1]
    x = np.asarray(hidden, np.float64).reshape(-1, size)
    experts = weights["w0"].shape[0]
    rows = math.prod(np.shape(indices)[:-1])
    per_row = x.shape[0] // rows
    expert_out = np.zeros((experts, x.shape[0], size))
    for e in range(experts):
        for t in range(x.shape[0]):
            with np.errstate(invalid="ignore", over="ignore"):
                expert_out[e, t] = _expert(x[t], e, t, x.shape[0], weights, expert_type, alpha, beta,
                                           gate_idx)
    routed = expert_out.reshape(experts, rows, per_row, size) * np.asarray(routing_weights, np.float64)
    out = np.zeros((rows, per_row, size))
    for e in range(experts):  # reduce_sum over the experts, in order
        out = out + routed[e]
    return out.reshape(hidden.shape)


def dense_of(compact, indices, experts):
    """OpenVINO's routing form (a weight per chosen expert, [B, k]) as the page's [E, B, 1, 1]."""
    rows = np.asarray(indices).reshape(math.prod(np.shape(indices)[:-1]), np.shape(indices)[-1])
    weights = np.asarray(compact, np.float64).reshape(rows.shape)
    dense = np.zeros((experts, rows.shape[0], 1, 1))
    for b in range(rows.shape[0]):
        for j in range(rows.shape[1]):
            dense[rows[b, j], b] += weights[b, j]
    return dense
