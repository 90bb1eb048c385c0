"""Builds a tiny stateful decoder with OpenVINO's Python API, turns it into a paged-attention
model with OpenVINO's own `paged_attention_transformation` (what OpenVINO GenAI runs for
continuous batching), saves it, and runs a schedule of steps on OpenVINO's CPU plugin.

    python paged_attention_openvino.py OUT_DIR CONFIGS_JSON

CONFIGS_JSON maps a name to a configuration: the schedule (`steps`: per step the sequences
with their new tokens, past lengths and block lists, and the blocks whose keys to re-rotate),
the number of cache blocks, replacements of the constant inputs the transformation gives the
op (`sliding_window`, `scale`, `alibi_slopes`, `score_aggregation_window`, `sinks`), and
`rotation` (the rows of the trig table) to have the model take re-rotation inputs, and
`refused` when the plugin is expected to refuse the run (its message goes to refused.txt). For each,
writes OUT_DIR/<name>/model.xml (the transformed model) and OUT_DIR/<name>/results.npz: each
step's feeds (`step<i>/<input>`) and outputs (`step<i>/out/<name>`), and the caches after the
last step (`cache/<name>`). OpenVINO cannot read back a model holding PagedAttentionExtension,
so the runs are on the transformed models in memory.
"""

import json
import sys
from pathlib import Path

import numpy as np
import openvino as ov
import openvino.opset13 as ops
from openvino._offline_transformations import paged_attention_transformation

HEADS, KV_HEADS, HEAD_SIZE, VOCAB, HIDDEN = 4, 2, 8, 11, 32


def _weights(rng, *shape):
    return ops.constant((rng.standard_normal(shape) * 0.3).astype(np.float32))


def _named(node, name):
    node.output(0).get_tensor().set_names({name})
    return node


def _heads(x, count):
    """[batch, length, count * HEAD_SIZE] -> [batch, count, length, HEAD_SIZE]"""
    split = ops.reshape(x, ops.constant(np.array([0, 0, count, HEAD_SIZE], np.int64)), True)
    return ops.transpose(split, ops.constant(np.array([0, 2, 1, 3], np.int64)))


def _cached(current, name, batch, beam_idx, sinks):
    """The past of one cache (a variable, reordered by beam_idx) with `current` appended."""
    info = ov.op.util.VariableInfo()
    info.data_shape = ov.PartialShape([-1, KV_HEADS, -1, HEAD_SIZE])
    info.data_type = ov.Type.f32
    info.variable_id = name
    variable = ov.op.util.Variable(info)
    empty = ops.broadcast(ops.constant(np.float32(0)),
                          ops.concat([batch, ops.constant(np.array([KV_HEADS, 0, HEAD_SIZE], np.int64))], 0))
    past = ops.gather(ops.read_value(empty, variable), beam_idx, ops.constant(0))
    full = ops.concat([past, current], 2)
    sinks.append(ops.assign(full, variable))
    return full


def _repeated(kv, batch):
    """Each kv head repeated for the query heads of its group (GQA), as transformers models do."""
    group = HEADS // KV_HEADS
    wide = ops.unsqueeze(kv, ops.constant(2))
    length = ops.gather(ops.shape_of(kv), ops.constant(np.array([2])), ops.constant(0))
    shape = ops.concat([batch, ops.constant(np.array([KV_HEADS, group], np.int64)), length,
                        ops.constant(np.array([HEAD_SIZE], np.int64))], 0)
    return ops.reshape(ops.broadcast(wide, shape), ops.constant(np.array([0, HEADS, -1, HEAD_SIZE], np.int64)), True)


def stateful_decoder() -> ov.Model:
    rng = np.random.default_rng(7)
    input_ids = _named(ops.parameter([-1, -1], np.int64, name="input_ids"), "input_ids")
    mask = _named(ops.parameter([-1, -1], np.int64, name="attention_mask"), "attention_mask")
    position_ids = _named(ops.parameter([-1, -1], np.int64, name="position_ids"), "position_ids")
    beam_idx = _named(ops.parameter([-1], np.int32, name="beam_idx"), "beam_idx")
    x = ops.gather(_weights(rng, VOCAB, HIDDEN), input_ids, ops.constant(0))
    q = _heads(ops.matmul(x, _weights(rng, HIDDEN, HEADS * HEAD_SIZE), False, False), HEADS)
    k = _heads(ops.matmul(x, _weights(rng, HIDDEN, KV_HEADS * HEAD_SIZE), False, False), KV_HEADS)
    v = _heads(ops.matmul(x, _weights(rng, HIDDEN, KV_HEADS * HEAD_SIZE), False, False), KV_HEADS)
    batch = ops.gather(ops.shape_of(input_ids), ops.constant(np.array([0])), ops.constant(0))
    sinks = []
    keys = _cached(k, "past_key_values.0.keypresent.0.key", batch, beam_idx, sinks)
    values = _cached(v, "past_key_values.0.valuepresent.0.value", batch, beam_idx, sinks)
    # The transformation matches an SDPA with a mask input; causal=True makes the mask moot.
    attention = ops.scaled_dot_product_attention(q, _repeated(keys, batch), _repeated(values, batch),
                                                 ops.constant(np.float32(0)), causal=True)
    merged = ops.reshape(ops.transpose(attention, ops.constant(np.array([0, 2, 1, 3], np.int64))),
                         ops.constant(np.array([0, 0, HEADS * HEAD_SIZE], np.int64)), True)
    logits = _named(ops.result(ops.matmul(merged, _weights(rng, HEADS * HEAD_SIZE, VOCAB), False, False)), "logits")
    return ov.Model([logits], sinks, [input_ids, mask, position_ids, beam_idx], "tiny_decoder")


# The op's constant inputs a configuration may replace, by position.
REPLACEABLE = {"scale": (9, np.float32), "sliding_window": (10, np.int32), "alibi_slopes": (11, np.float32),
               "score_aggregation_window": (13, np.int32), "sinks": (20, np.float32)}


def paged(config: dict) -> ov.Model:
    model = stateful_decoder()
    # Per-layer block tables: no; score outputs: yes; score aggregation: no; cache rotation: if asked.
    paged_attention_transformation(model, False, True, False, bool(config.get("rotation")))
    op = next(n for n in model.get_ordered_ops() if n.get_type_name() == "PagedAttentionExtension")
    for name, (position, dtype) in REPLACEABLE.items():
        if name in config:
            op.input(position).replace_source_output(ops.constant(np.array(config[name], dtype)).output(0))
    model.validate_nodes_and_infer_types()
    return model


def feeds_of(step: dict, config: dict) -> dict[str, np.ndarray]:
    """One step's inputs: the sequences' new tokens packed one after another, and the
    re-rotation of cached keys when the model takes it."""
    tokens, positions, past, begins, blocks, block_begins = [], [], [], [0], [], [0]
    for sequence in step["sequences"]:
        tokens += sequence["tokens"]
        positions += list(range(sequence["past"], sequence["past"] + len(sequence["tokens"])))
        past.append(sequence["past"])
        begins.append(len(tokens))
        blocks += sequence["blocks"]
        block_begins.append(len(blocks))
    longest = max(s["past"] + len(s["tokens"]) for s in step["sequences"])
    return {"input_ids": np.array(tokens, np.int64), "position_ids": np.array(positions, np.int64),
            "max_context_len": np.array(longest, np.int32), "past_lens": np.array(past, np.int32),
            "subsequence_begins": np.array(begins, np.int32), "block_indices_begins": np.array(block_begins, np.int32),
            "block_indices": np.array(blocks, np.int32), **_rotation(step, config)}


def _rotation(step: dict, config: dict) -> dict[str, np.ndarray]:
    if not config.get("rotation"):
        return {}
    rotation = step.get("rotation", {"blocks": [], "deltas": np.zeros((0, 1))})
    angles = np.arange(config["rotation"])[:, None] * 0.3 / (1 + np.arange(HEAD_SIZE // 2))[None, :]
    deltas = np.array(rotation["deltas"], np.int32)  # [blocks, 1] or [blocks, block size]
    return {"rotated_block_indices.0": np.array(rotation["blocks"], np.int32),
            "rotation_deltas.0": deltas.reshape(len(deltas), -1) if deltas.size else deltas.reshape(0, 1),
            "model_rotation_trig_lut": np.concatenate([np.cos(angles), np.sin(angles)], axis=1).astype(np.float32)}


def main(out_dir: Path, config: dict) -> None:
    model = paged(config)
    ov.save_model(model, out_dir / "model.xml", compress_to_fp16=False)
    compiled = ov.Core().compile_model(model, "CPU", {"INFERENCE_PRECISION_HINT": "f32", "KV_CACHE_PRECISION": "f32"})
    request = compiled.create_infer_request()
    caches = {}
    for port in compiled.inputs:
        name = port.get_any_name()
        if name.startswith(("key_cache.", "value_cache.")):
            shape = [config["blocks"], *[d.get_length() for d in list(port.get_partial_shape())[1:]]]
            # The plugin writes each step's keys and values into these arrays' memory.
            caches[name] = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
    saved = {}
    for i, step in enumerate(config["steps"]):
        feeds = feeds_of(step, config)
        for name, array in feeds.items():
            saved[f"step{i}/{name}"] = array
        for name, array in caches.items():
            saved[f"step{i}/{name}"] = array.copy()  # what the step starts from
        inputs = dict(feeds)
        inputs.update({name: ov.Tensor(array, shared_memory=True) for name, array in caches.items()})
        request.infer(inputs)
        for port in compiled.outputs:
            saved[f"step{i}/out/{port.get_any_name()}"] = request.get_tensor(port).data.copy()
    for name, array in caches.items():
        saved[f"cache/{name}"] = array
    np.savez(out_dir / "results.npz", **saved)


if __name__ == "__main__":
    for name, configuration in json.loads(Path(sys.argv[2]).read_text()).items():
        (Path(sys.argv[1]) / name).mkdir(parents=True, exist_ok=True)
        try:
            main(Path(sys.argv[1]) / name, configuration)
        except RuntimeError as e:  # what the plugin refuses is recorded, not fatal, when expected
            if not configuration.get("refused"):
                raise
            (Path(sys.argv[1]) / name / "refused.txt").write_text(str(e))
