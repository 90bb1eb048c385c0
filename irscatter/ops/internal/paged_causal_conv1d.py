"""PagedCausalConv1D (domain `extension`): the causal grouped 1-D convolution of a Mamba-style
mixer over the tokens of several sequences packed into one batch, each resuming from, and
caching into, rows of a paged convolution-state table.

Domain: OpenVINO declares it with a one-argument `OPENVINO_OP("PagedCausalConv1D")` in
ov::op::internal (version "extension" in saved IR). OpenVINO's `paged_attention_transformation`
writes it in place of a stateful convolution (PagedCausalConv1DFusion), and the CPU plugin
runs it.

Sequence s owns token rows `subsequence_begins[s]` to `subsequence_begins[s+1]` of
`input_embeds`. Its state is a window [hidden_size, kernel_size] of the last kernel_size inputs,
oldest first. Each token shifts the window by one and enters as its newest column, and the
token's output channel o is

    conv_bias[o] + sum over c, k of conv_weight[o, c, k] * window[g * C + c, k]

where C = conv_weight.shape[1] is the number of input channels per group and g = o // C is o's
group (hidden_size / C groups; C = 1 is the depthwise convolution Mamba uses, C = hidden_size
the full one). An empty bias adds nothing. The window after token t holds the inputs t - K + 1
to t, reaching back into the starting window where t < K - 1, so every output and every cached
window is gathered at once: no loop over tokens.

Reading and writing the table (`state_space`'s slot plan): the window starts as the row of slot 0 and
is written to slots 1, 2, ... each time the processed count reaches a multiple of
`cache_interval[s]`, and after the last token unless that one just was. With
`cache_interval[s] <= 0` only the final window is written, to slot 1.

Where the page contradicts itself, irscatter follows its prose and OpenVINO's CPU plugin:

* Its pseudocode reads the starting window from the sequence's last slot and caches into slot
  `(processed + t + 1) // cache_interval - 1` counted from the first, while its list of cases
  reads slot 0 and writes slots 1..N of this step, as PagedSelectiveSSM's page does and as the
  plugin computes. irscatter reads slot 0 and writes 1..N. With cache_interval <= 0 the
  pseudocode saves the final window to the last slot, the plugin to slot 1; irscatter writes
  slot 1 (the same slot whenever a sequence has two).
* Its grouped convolution defines groups = hidden_size // group_size while describing
  conv_weight's second dimension, hidden_size / group_size, as the channels per group, and
  calls group_size == hidden_size depthwise; its pseudocode only runs when that dimension is
  the number of input channels per group, and its depthwise example has it 1. irscatter takes
  conv_weight.shape[1] as the input channels per group, the usual grouped convolution. The
  plugin computes only the depthwise one (it refuses conv_weight.shape[1] != 1).

The table is updated in place, as OpenVINO's plugin does: a donated table
(`model.run(feeds, donate=[...])`) holds the step's windows afterwards; a fed table not donated
is left as it was and the step works on a copy. `paged_causal_conv1d(...)` returns the updated
table beside the output.

Types (the page): input_embeds, conv_state_table, conv_weight and conv_bias one floating-point
type T; the five metadata inputs i32. OpenVINO also takes i64 metadata and a table of another
float type; the page does neither, and irscatter refuses both. The 16-bit and 8-bit float
types compute in f32.

Refused with a label: metadata of inconsistent lengths, subsequence_begins not rising from 0
to the token count, la_block_indices_begins not rising within la_block_indices, a negative
num_processed_tokens (`paged-conv-sequences`); a sequence with fewer slots than it reads and
writes, or using a row outside the table (`paged-conv-slots`; the plugin refuses a sequence
with fewer than two slots, and crashes on a row outside the table). A sequence without tokens
needs no slots (the plugin wants two even there).
"""

from __future__ import annotations

import numpy as np

from irscatter.ir.element_types import ElementType
from irscatter.ir.shapes import PartialShape
from irscatter.ops.base import TensorInfo, check
from irscatter.ops.common.numeric import compute_dtype, from_compute
from irscatter.ops.internal import state_space
from irscatter.ops.registry import register

DOMAIN = "extension"
INPUTS = ("input_embeds", "conv_state_table", "conv_weight", "conv_bias", *state_space.METADATA)
RANKS = (2, 3, 3, 1, 1, 1, 1, 1, 1)


@register("PagedCausalConv1D", 1, domain=DOMAIN)
class PagedCausalConv1D(state_space.PagedOp):
    """Causal grouped 1-D convolution over packed sequences with a paged state table."""

    labels = {
        "paged-conv-rank": "an input does not have its rank: input_embeds 2-D, conv_state_table and conv_weight "
                           "3-D, conv_bias and the metadata 1-D",
        "paged-conv-type": "input_embeds, conv_state_table, conv_weight and conv_bias are not of one floating-point "
                           "type, or a metadata input is not i32",
        "paged-conv-dims": "the inputs disagree on hidden size or kernel size, the kernel is empty, conv_weight's "
                           "input channels per group do not divide the hidden size, or conv_bias is neither "
                           "[out_channels] nor empty",
        "paged-conv-sequences": "the metadata do not describe the step's sequences and their tokens",
        "paged-conv-slots": "a sequence has fewer slots than it reads and writes, or uses a row outside the table",
    }

    inputs = INPUTS
    writes_inputs = (1,)
    table = 1
    ranks, floats = RANKS, INPUTS[:4]
    labels_of = {"rank": "paged-conv-rank", "type": "paged-conv-type", "sequences": "paged-conv-sequences",
                 "slots": "paged-conv-slots"}
    final_when_uncached = True

    def infer(self, *given: TensorInfo) -> TensorInfo:
        etype = self.check_signature(given)
        embeds, table, weight, bias = (state_space.dims(info, rank) for info, rank in zip(given[:4], RANKS))
        hidden = state_space.agree(self, "paged-conv-dims", "the hidden size", ("input_embeds", embeds[1]),
                            ("conv_state_table", table[1]), ("conv_weight", weight[0]))
        kernel = state_space.agree(self, "paged-conv-dims", "the kernel size", ("conv_state_table", table[2]),
                            ("conv_weight", weight[2]))
        check(not kernel.is_static or int(kernel) > 0, "paged-conv-dims",
              "the kernel size must be at least 1 (a token enters the window as its newest column)",
              port=self.port("conv_weight"))
        per_group = weight[1]
        if per_group.is_static:
            check(int(per_group) > 0 and (not hidden.is_static or int(hidden) % int(per_group) == 0),
                  "paged-conv-dims", f"conv_weight's {int(per_group)} input channels per group must divide the "
                  f"hidden size {hidden}", port=self.port("conv_weight"))
        if bias[0].is_static and int(bias[0]) != 0:
            state_space.agree(self, "paged-conv-dims", "the output channels", ("conv_weight", weight[0]),
                       ("conv_bias", bias[0]))
        return TensorInfo(etype, PartialShape.of([embeds[0], hidden]))

    def step(self, arrays: tuple[np.ndarray, ...], table: np.ndarray) -> np.ndarray:
        named = dict(zip(INPUTS, arrays))
        embeds = named["input_embeds"]
        etype = ElementType.from_dtype(embeds.dtype)
        work = compute_dtype(etype)
        tokens, hidden = embeds.shape
        plan = self.plan(named, tokens, table.shape[0])
        windows = _windows(embeds.astype(work, copy=False), table, plan, work)  # [tokens, kernel, hidden]
        weight = named["conv_weight"].astype(work, copy=False)
        per_group = weight.shape[1]
        groups = hidden // per_group
        kernel = weight.shape[2]
        grouped = weight.reshape(groups, per_group, per_group, kernel)  # [group, out, in, kernel]
        with np.errstate(over="ignore", invalid="ignore"):
            out = np.einsum("goik,tkgi->tgo", grouped, windows.reshape(tokens, kernel, groups, per_group))
            out = out.reshape(tokens, hidden)
            bias = named["conv_bias"]
            if bias.size:
                out += bias.astype(work, copy=False)
        rows = plan.first[plan.write_lane] + plan.write_step
        state_space.store(table, plan.write_row, windows[rows].transpose(0, 2, 1))
        return from_compute(out, etype)


def _windows(embeds: np.ndarray, table: np.ndarray, plan: state_space.Plan, work: np.dtype) -> np.ndarray:
    """The window each token row sees after entering, [tokens, kernel, hidden]: column k of
    token t of a sequence is the input t - K + 1 + k of that sequence, or, before its first
    token, the matching column of the window it starts from."""
    tokens, kernel = embeds.shape[0], table.shape[2]
    start = table[plan.read].astype(work).transpose(0, 2, 1)  # [lanes, kernel, hidden]
    source = np.concatenate([embeds, start.reshape(start.shape[0] * kernel, embeds.shape[1])])
    in_order = np.argsort(plan.first, kind="stable")  # the lanes in the order of their token rows
    lane_of = np.repeat(in_order, plan.length[in_order])
    position = np.arange(tokens) - plan.first[lane_of]
    back = position[:, None] - (kernel - 1) + np.arange(kernel)[None, :]  # [tokens, kernel]
    index = np.where(back >= 0, np.arange(tokens)[:, None] - position[:, None] + back,
                     tokens + lane_of[:, None] * kernel + kernel + back)
    return source[index]


def paged_causal_conv1d(*arrays) -> tuple[np.ndarray, np.ndarray]:
    """The op on numpy arrays (its 9 inputs in order). Returns (output, conv_state_table as it
    is after the step, a new array); the inputs are left untouched."""
    return PagedCausalConv1D.on_arrays(arrays)
