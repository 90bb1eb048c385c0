"""GatedDeltaNet (domain `extension`): the gated delta rule of Qwen3-Next's linear attention layers.

Domain: OpenVINO declares the op as `ov::op::internal::GatedDeltaNet` with `OPENVINO_OP("GatedDeltaNet")`,
the one-argument form, whose version is `extension`; OpenVINO's CPU plugin registers the class as an
extension, so once the plugin is loaded OpenVINO reads `<layer type="GatedDeltaNet" version="extension">`.

For each batch b and value head h (query and key head h // (Hv / H), the page's grouped-query
mapping), the state S [K, V] starts from `recurrent_state[b, h]` and each time step t does

    S = S * exp(gate[b, t, h])
    delta = (value[b, t, h] - key_t @ S) * beta[b, t, h]
    S = S + outer(key_t, delta)
    output_attn[b, t, h] = query_t @ S

where query_t is the query scaled by 1 / sqrt(K), and both query and key are first divided by
sqrt(sum of squares + eps) along K when `use_qk_l2norm` is set (q_l2_norm_eps, k_l2_norm_eps).
`output_recurrent_state` is S after the last step (the input state when there are no steps).

Attributes: the page names the switch `use_qk_l2norm`; OpenVINO's op reads and writes it as
`fuse_qk_l2norm` (and ignores `use_qk_l2norm`). irscatter takes either, so that the page's
examples and the models OpenVINO saves both mean what they say, and refuses a layer giving both
with different values. The epsilons must be positive (the page's range).

Types: all six inputs share one floating-point type T (the page's T; OpenVINO also lets each
input be a different one of f32, f16 and bf16, which irscatter refuses). f16 and bf16 compute in
f32, as OpenVINO's CPU plugin does, and round the outputs once; f64 computes in f64.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np
from pydantic import field_validator

from irscatter.ir.element_types import ElementType
from irscatter.ops.base import IRBool, Op, OpAttrs, TensorInfo, check
from irscatter.ops.common.numeric import compute_dtype, from_compute
from irscatter.ops.common.types import check_float
from irscatter.ops.internal.core import dim_value, named_dims, shape_from
from irscatter.ops.registry import register

DOMAIN = "extension"


def positive_eps(value: float) -> float:
    if not value > 0:
        raise ValueError("must be a positive number (the minimum of an L2 norm's denominator)")
    return value


class GatedDeltaNetAttrs(OpAttrs):
    use_qk_l2norm: IRBool | None = None
    fuse_qk_l2norm: IRBool | None = None  # the name OpenVINO reads and writes
    q_l2_norm_eps: float = 1e-6
    k_l2_norm_eps: float = 1e-6

    _positive = field_validator("q_l2_norm_eps", "k_l2_norm_eps")(positive_eps)


def same_float_type(op: Op, infos: tuple[TensorInfo, ...], names: tuple[str, ...]) -> ElementType:
    """The one floating-point type T of the inputs `names`."""
    etype = ElementType.dynamic
    for name, info in zip(names, infos):
        check_float(op, info.etype, name)
        if info.etype is ElementType.dynamic:
            continue
        check(etype in (ElementType.dynamic, info.etype), "same-element-type",
              f"{name} is {info.etype} where {names[0]} and the others are {etype}: all share one type T",
              port=op.port(name))
        etype = info.etype
    return etype


def check_groups(op: Op, dims: dict, label: str) -> None:
    """Value heads (letter G) come in groups of G / H per query and key head."""
    heads, value_heads = dim_value(dims, "H"), dim_value(dims, "G")
    if heads is not None and value_heads is not None:
        check(value_heads % heads == 0 if heads else value_heads == 0, label,
              f"value has {value_heads} heads, which must be a multiple of query and key's {heads}",
              port=op.port("value"))


def normalized(x: np.ndarray, on: bool, eps: float) -> np.ndarray:
    """x divided by sqrt(sum of squares along the last axis + eps) when `on`, else x itself."""
    if not on:
        return x
    return x * (1 / np.sqrt(np.einsum("...k,...k->...", x, x) + x.dtype.type(eps)))[..., None]


def delta_step(state: np.ndarray, query: np.ndarray, key: np.ndarray, value: np.ndarray, decay: np.ndarray,
               beta: np.ndarray) -> np.ndarray:
    """One time step for every head at once, updating `state` [..., K, V] in place and returning
    the output [..., V]. query and key [..., K] (query already scaled), value [..., V], decay
    (exp of the gate) and beta [...]."""
    state *= decay[..., None, None]
    retrieved = np.einsum("...k,...kv->...v", key, state)
    delta = (value - retrieved) * beta[..., None]
    state += key[..., :, None] * delta[..., None, :]
    return np.einsum("...k,...kv->...v", query, state)


@register("GatedDeltaNet", 1, domain=DOMAIN)
class GatedDeltaNet(Op):
    """The gated delta rule over a batch of sequences, from and to a recurrent state."""

    labels: ClassVar[dict[str, str]] = {
        "gdn-rank": "query, key, value or recurrent_state is not 4-D, or gate or beta not 3-D",
        "gdn-shape": "the inputs disagree on the batch, the sequence length, the heads or a head size",
        "gdn-heads": "value's heads are not a multiple of query and key's",
        "gdn-attributes": "use_qk_l2norm and fuse_qk_l2norm are both given, with different values",
    }

    Attrs = GatedDeltaNetAttrs
    attrs: GatedDeltaNetAttrs
    inputs = ("query", "key", "value", "recurrent_state", "gate", "beta")
    outputs = 2
    foldable = False

    def l2norm(self) -> bool:
        use, fuse = self.attrs.use_qk_l2norm, self.attrs.fuse_qk_l2norm
        check(use is None or fuse is None or use == fuse, "gdn-attributes",
              f"use_qk_l2norm={use} and fuse_qk_l2norm={fuse} name one switch and disagree",
              port=self.port("fuse_qk_l2norm"))
        return bool(use if use is not None else fuse)

    def infer(self, *infos: TensorInfo) -> tuple[TensorInfo, TensorInfo]:
        self.l2norm()
        etype = same_float_type(self, infos, self.inputs)
        query, key, value, state, gate, beta = infos
        dims = named_dims(self, [("query", query, "BTHK"), ("key", key, "BTHK"), ("value", value, "BTGV"),
                                 ("recurrent_state", state, "BGKV"), ("gate", gate, "BTG"), ("beta", beta, "BTG")],
                          "gdn-rank", "gdn-shape")
        check_groups(self, dims, "gdn-heads")
        return TensorInfo(etype, shape_from(dims, "BTGV")), TensorInfo(etype, shape_from(dims, "BGKV"))

    def compute(self, query: np.ndarray, key: np.ndarray, value: np.ndarray, recurrent_state: np.ndarray,
                gate: np.ndarray, beta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        etype = ElementType.from_dtype(query.dtype)
        work = compute_dtype(etype)
        on = self.l2norm()
        heads, head_size = query.shape[2], query.shape[3]
        value_heads = value.shape[2]
        group = value_heads // heads if heads else 1
        shared = np.arange(value_heads) // group  # each value head's query and key head
        with np.errstate(all="ignore"):  # inf and NaN go where the arithmetic takes them
            q = normalized(query.astype(work), on, self.attrs.q_l2_norm_eps)[:, :, shared]
            q = q * work.type(1 / np.sqrt(head_size) if head_size else np.inf)
            k = normalized(key.astype(work), on, self.attrs.k_l2_norm_eps)[:, :, shared]
            v, g, b = value.astype(work), np.exp(gate.astype(work)), beta.astype(work)
            state = recurrent_state.astype(work)  # a fresh copy: the input is never written
            out = np.empty(value.shape, work)
            for t in range(query.shape[1]):  # the recurrence: step after step, every batch and head at once
                out[:, t] = delta_step(state, q[:, t], k[:, t], v[:, t], g[:, t], b[:, t])
        return from_compute(out, etype), from_compute(state, etype)
