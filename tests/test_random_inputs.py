"""`--random` draws what the layers reading an input accept: indices within the axis they index,
lengths within the sequence, counts positive and small; `--range NAME=LO,HI` sets a range."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from helpers import cli, layer, net, one_layer_ir, param, port, result, write

import irscatter
from irscatter.cli import main
from irscatter.runtime.inputs import accepted_ranges, random_inputs

ROOT = Path(__file__).resolve().parent.parent
MODELS = sorted(ROOT.glob("models/*/model.xml"))


@pytest.mark.parametrize("xml", MODELS, ids=[p.parent.name for p in MODELS])
def test_every_bundled_model_runs_on_random_inputs(xml):
    done = cli("run", str(xml), "--random")
    assert done.returncode == 0, done.stderr


def _draws(xml: Path, seeds=range(8)):
    compiled = irscatter.compile_model(xml)
    ranges = accepted_ranges(compiled)
    for seed in seeds:
        feeds = random_inputs(compiled.inputs, seed, ranges=ranges)
        compiled(feeds)  # the layer accepts what was drawn
        yield feeds


def _const(lid, name, offset: int) -> str:
    return layer(lid, name, "Const", data={"element_type": "i64", "shape": "", "offset": offset, "size": 8},
                 outputs=[port(0, "I64")])


def _gather_through_convert(folder: Path) -> Path:
    """Gather-8 of data [5, 7] along axis 1 (a Const) at i32 indices converted to i64."""
    layers = [
        param(0, "data", (5, 7)),
        param(1, "idx", (20,), "i32", "I32"),
        layer(2, "to_i64", "Convert", data={"destination_type": "i64"}, inputs=[port(0, "I32", (20,))],
              outputs=[port(1, "I64", (20,))]),
        _const(3, "axis", 0),
        layer(4, "gather", "Gather", "opset8", data={"batch_dims": 0},
              inputs=[port(0, "FP32", (5, 7)), port(1, "I64", (20,)), port(2, "I64")],
              outputs=[port(3, "FP32", (5, 20))]),
        result(5, "out", (5, 20)),
    ]
    edges = [(0, 0, 4, 0), (1, 0, 2, 0), (2, 1, 4, 1), (3, 0, 4, 2), (4, 3, 5, 0)]
    return write(folder, net(layers, edges), np.array([1], np.int64).tobytes())


def test_gather_indices_are_drawn_within_the_axis_they_index(tmp_path):
    xml = _gather_through_convert(tmp_path)
    drawn = np.concatenate([feeds["idx"] for feeds in _draws(xml)])
    assert drawn.min() >= 0 and drawn.max() <= 6
    assert len(np.unique(drawn)) == 7  # the whole axis, not one corner of it


def test_one_hot_indices_are_drawn_below_depth(tmp_path):
    layers = [
        param(0, "idx", (12,), "i64", "I64"),
        _const(1, "depth", 0),
        layer(2, "on", "Const", data={"element_type": "f32", "shape": "", "offset": 8, "size": 4},
              outputs=[port(0, "FP32")]),
        layer(3, "off", "Const", data={"element_type": "f32", "shape": "", "offset": 12, "size": 4},
              outputs=[port(0, "FP32")]),
        layer(4, "one_hot", "OneHot", data={"axis": -1},
              inputs=[port(0, "I64", (12,)), port(1, "I64"), port(2, "FP32"), port(3, "FP32")],
              outputs=[port(4, "FP32", (12, 5))]),
        result(5, "out", (12, 5)),
    ]
    edges = [(0, 0, 4, 0), (1, 0, 4, 1), (2, 0, 4, 2), (3, 0, 4, 3), (4, 4, 5, 0)]
    weights = np.array([5], np.int64).tobytes() + np.array([1, 0], np.float32).tobytes()
    xml = write(tmp_path, net(layers, edges), weights)
    for feeds in _draws(xml):
        assert 0 <= feeds["idx"].min() and feeds["idx"].max() <= 4


def _reverse_sequence(folder: Path, lengths_type=np.int32) -> Path:
    return one_layer_ir(folder, "ReverseSequence", "opset1", {"batch_axis": 0, "seq_axis": 1},
                        [("data", np.zeros((3, 6), np.float32)), ("lengths", np.zeros(3, lengths_type))],
                        [((3, 6), np.float32)])


@pytest.mark.parametrize("lengths_type", [np.int32, np.float32])
def test_reverse_sequence_lengths_are_drawn_within_the_sequence(tmp_path, lengths_type):
    drawn = np.concatenate([feeds["lengths"] for feeds in _draws(_reverse_sequence(tmp_path, lengths_type))])
    assert drawn.min() >= 1 and drawn.max() <= 6
    assert np.array_equal(drawn, np.round(drawn))


def test_an_input_nothing_bounds_is_drawn_as_before(tmp_path):
    xml = _reverse_sequence(tmp_path)
    assert set(accepted_ranges(irscatter.compile_model(xml))) == {"lengths"}


def _echo(folder: Path) -> Path:
    """ReverseSequence whose lengths are also an output, so that a run shows what was drawn."""
    layers = [
        param(0, "data", (2, 4)),
        param(1, "lengths", (2,), "i64", "I64"),
        layer(2, "reverse", "ReverseSequence", data={"batch_axis": 0, "seq_axis": 1},
              inputs=[port(0, "FP32", (2, 4)), port(1, "I64", (2,))], outputs=[port(2, "FP32", (2, 4))]),
        result(3, "out", (2, 4)),
        result(4, "lengths_out", (2,), "I64"),
    ]
    return write(folder, net(layers, [(0, 0, 2, 0), (1, 0, 2, 1), (2, 2, 3, 0), (1, 0, 4, 0)]))


def test_range_sets_the_values_drawn(tmp_path):
    xml = _echo(tmp_path)
    saved = tmp_path / "out.npz"
    assert main(["run", str(xml), "--random", "--range", "lengths=3,3", "--output", str(saved)]) == 0
    with np.load(saved) as outputs:
        assert outputs["lengths"].tolist() == [3, 3]


def test_a_range_beyond_what_the_layer_accepts_reaches_it(tmp_path, capsys):
    # --range is the user's word: the layer then says what it refuses
    assert main(["run", str(_echo(tmp_path)), "--random", "--range", "lengths=9,9"]) == 1
    assert "seq_lengths-range" in capsys.readouterr().err


@pytest.mark.parametrize("flags, message", [
    (["--random", "--range", "nope=0,1"], "--range names no input of the model: nope"),
    (["--random", "--range", "lengths=3,1"], "LO is above HI"),
    (["--random", "--range", "lengths=a,b"], "LO and HI must be integers"),
    (["--random", "--range", "lengths=0.5,2"], "LO and HI must be integers"),
    (["--random", "--range", "lengths=1"], "--range expects NAME=LO,HI"),
    (["--random", "--range", "lengths=1,2", "--range", "lengths=1,3"], 'gives input "lengths" twice'),
    (["--random", "--range", "lengths=0,99999999999999999999"], "does not fit i64"),
    (["--range", "lengths=1,2"], "--range only applies with --random"),
])
def test_range_usage_errors(tmp_path, capsys, flags, message):
    assert main(["run", str(_echo(tmp_path)), *flags]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_range_of_a_fed_input_is_refused(tmp_path, capsys):
    np.save(tmp_path / "lengths.npy", np.array([1, 2], np.int64))
    code = main(["run", str(_echo(tmp_path)), "-i", f"lengths={tmp_path / 'lengths.npy'}", "--random",
                 "--range", "lengths=1,2"])
    assert code == 2
    assert "that input is fed" in capsys.readouterr().err


def test_a_float_range_draws_floats_within_it(tmp_path):
    xml = _echo(tmp_path)
    saved = tmp_path / "out.npz"
    assert main(["run", str(xml), "--random", "--range", "data=2.5,3", "--range", "lengths=0,0",
                 "--output", str(saved)]) == 0
    with np.load(saved) as outputs:
        assert outputs["out"].min() >= 2.5 and outputs["out"].max() <= 3  # length 0: nothing reversed


def test_readers_that_accept_nothing_in_common_are_named(tmp_path, capsys):
    """One input read as a Gather's index into an axis of 1 ([0, 0]) and as ReverseSequence's
    lengths of a sequence of 4 ([1, 4]): no value suits both, and the draw says so."""
    layers = [
        param(0, "data", (2, 1)),
        param(1, "idx", (2,), "i64", "I64"),
        _const(2, "axis", 0),
        layer(3, "gather", "Gather", "opset8", data={"batch_dims": 0},
              inputs=[port(0, "FP32", (2, 1)), port(1, "I64", (2,)), port(2, "I64")],
              outputs=[port(3, "FP32", (2, 2))]),
        result(4, "out", (2, 2)),
        param(5, "seq", (2, 4)),
        layer(6, "reverse", "ReverseSequence", data={"batch_axis": 0, "seq_axis": 1},
              inputs=[port(0, "FP32", (2, 4)), port(1, "I64", (2,))], outputs=[port(2, "FP32", (2, 4))]),
        result(7, "out2", (2, 4)),
    ]
    edges = [(0, 0, 3, 0), (1, 0, 3, 1), (2, 0, 3, 2), (3, 3, 4, 0), (5, 0, 6, 0), (1, 0, 6, 1), (6, 2, 7, 0)]
    xml = write(tmp_path, net(layers, edges), np.array([1], np.int64).tobytes())
    assert accepted_ranges(irscatter.compile_model(xml))["idx"] == (1, 0)
    assert main(["run", str(xml), "--random"]) == 2
    assert 'the layers reading input "idx" accept no value in common' in capsys.readouterr().err
    assert main(["run", str(xml), "--random", "--range", "idx=0,0"]) == 0  # the user's range decides


def _i64(*shape):
    return np.zeros(shape, np.int64)


def _f32(*shape):
    return np.zeros(shape, np.float32)


# One layer each, every input a Parameter: what --random draws for its counts, lengths and
# indices runs, for every seed.
LAYERS = {
    "ctc_loss": ("CTCLoss", "opset4", {"preprocess_collapse_repeated": "false", "ctc_merge_repeated": "true",
                                       "unique": "false"},
                 [("logits", _f32(2, 5, 4)), ("logit_length", _i64(2)), ("labels", _i64(2, 5)),
                  ("label_length", _i64(2)), ("blank_index", _i64())], [((2,), np.float32)]),
    "ctc_greedy_decoder_seq_len": ("CTCGreedyDecoderSeqLen", "opset6", {"merge_repeated": "true"},
                                   [("data", _f32(2, 5, 4)), ("sequence_length", _i64(2)), ("blank", _i64())],
                                   [((2, 5), np.int32), ((2,), np.int32)]),
    "gather_tree": ("GatherTree", "opset1", {},
                    [("step_ids", _f32(3, 2, 4)), ("parent_ids", _f32(3, 2, 4)), ("max_seq_len", _f32(2)),
                     ("end_token", _f32())], [((3, 2, 4), np.float32)]),
    "roi_align": ("ROIAlign", "opset9", {"pooled_h": 2, "pooled_w": 2, "sampling_ratio": 1, "spatial_scale": 1.0,
                                         "mode": "avg", "aligned_mode": "asymmetric"},
                  [("data", _f32(2, 3, 4, 4)), ("rois", _f32(3, 4)), ("batch_indices", np.zeros(3, np.int32))],
                  [((3, 3, 2, 2), np.float32)]),
    "top_k": ("TopK", "opset11", {"axis": 1, "mode": "max", "sort": "value", "index_element_type": "i32",
                                  "stable": "false"},
              [("data", _f32(3, 6)), ("k", _i64())], [((3, -1), np.float32), ((3, -1), np.int32)]),
    "tile": ("Tile", "opset1", {}, [("data", _f32(2, 3)), ("repeats", _i64(2))], [((-1, -1), np.float32)]),
    "range": ("Range", "opset4", {"output_type": "i64"}, [("start", _i64()), ("stop", _i64()), ("step", _i64())],
              [((-1,), np.int64)]),
    "eye": ("Eye", "opset9", {"output_type": "f32"},
            [("rows", _i64()), ("columns", _i64()), ("diagonal", _i64())], [((-1, -1), np.float32)]),
    "random_uniform": ("RandomUniform", "opset8", {"output_type": "f32", "global_seed": 1, "op_seed": 2},
                       [("shape", _i64(2)), ("minval", _f32()), ("maxval", _f32())], [((-1, -1), np.float32)]),
    "multinomial": ("Multinomial", "opset13", {"convert_type": "i64", "with_replacement": "false",
                                               "log_probs": "true", "global_seed": 1, "op_seed": 2},
                    [("probs", _f32(2, 5)), ("num_samples", _i64())], [((2, -1), np.int64)]),
    "random_poisson": ("RandomPoisson", "opset17", {"global_seed": 1, "op_seed": 2},
                       [("rates", _f32(2, 3))], [((2, 3), np.float32)]),
    "bincount": ("Bincount", "opset17", {"minlength": 2}, [("data", _i64(6)), ("weights", _f32(6))],
                 [((-1,), np.float32)]),
    "pad_reflect": ("Pad", "opset12", {"pad_mode": "reflect"},
                    [("data", _f32(3, 4)), ("pads_begin", _i64(2)), ("pads_end", _i64(2))],
                    [((-1, -1), np.float32)]),
    "embedding_bag_packed_sum": ("EmbeddingBagPackedSum", "opset3", {},
                                 [("table", _f32(6, 3)), ("indices", _i64(2, 3))], [((2, 3), np.float32)]),
    "scatter_nd_update": ("ScatterNDUpdate", "opset4", {},
                          [("data", _f32(4, 3)), ("indices", _i64(5, 2)), ("updates", _f32(5))],
                          [((4, 3), np.float32)]),
    "gather_nd": ("GatherND", "opset8", {"batch_dims": 0}, [("data", _f32(4, 3)), ("indices", _i64(5, 2))],
                  [((5,), np.float32)]),
    "gather_elements": ("GatherElements", "opset6", {"axis": 1}, [("data", _f32(4, 3)), ("indices", _i64(4, 7))],
                        [((4, 7), np.float32)]),
    "sparse_attention_indexer": ("SparseAttentionIndexer", "extension", {"compress_ratio": 3, "token_budget": 6},
                                 [("index_query", _f32(2, 4, 3, 8)), ("index_key_blocks", _f32(2, 5, 8)),
                                  ("key_length", _i64())], [((2, 1, 3, 2), np.int32), ((2, 1, 3), np.int32)]),
    "lstm_sequence": ("LSTMSequence", "opset5", {"hidden_size": 2, "direction": "forward"},
                      [("X", _f32(2, 5, 3)), ("H", _f32(2, 1, 2)), ("C", _f32(2, 1, 2)), ("lengths", _i64(2)),
                       ("W", _f32(1, 8, 3)), ("R", _f32(1, 8, 2)), ("B", _f32(1, 8))],
                      [((2, 1, 5, 2), np.float32), ((2, 1, 2), np.float32), ((2, 1, 2), np.float32)]),
    "moe": ("MOE", "extension", {"expert_type": "gemm3_swiglu"},
            [("hidden", _f32(3, 4)), ("weights", _f32(3, 2)), ("experts", _i64(3, 2)), ("gate", _f32(5, 2, 4)),
             ("up", _f32(5, 2, 4)), ("down", _f32(5, 4, 2))], [((3, 4), np.float32)]),
}


@pytest.mark.parametrize("name", LAYERS)
def test_each_layer_runs_on_what_is_drawn_for_it(tmp_path, name):
    type_, opset, attrs, inputs, outputs = LAYERS[name]
    xml = one_layer_ir(tmp_path, type_, opset, attrs, inputs, outputs)
    assert accepted_ranges(irscatter.compile_model(xml))  # a range is declared for some input
    for _ in _draws(xml, range(6)):
        pass


def test_a_loop_trip_count_is_drawn_small_and_positive():
    # (-1, which the default draw gives, runs the loop until its condition turns false)
    trips = [int(feeds["trip"]) for feeds in _draws(ROOT / "tests" / "data" / "control" / "loop_while.xml")]
    assert min(trips) >= 1 and max(trips) <= 4


@pytest.mark.parametrize("name", ["file", "allow_pickle"])
def test_an_output_named_like_an_argument_of_numpy_savez_is_saved(tmp_path, name):
    # np.savez(path, **outputs) would take such an output for its own argument: a crash for
    # "file", a silently missing array for "allow_pickle"
    xml = write(tmp_path, net([param(0, name, (2,)), result(1, "out", (2,))], [(0, 0, 1, 0)]))
    saved = tmp_path / "out.npz"
    assert main(["run", str(xml), "--random", "--output", str(saved)]) == 0
    with np.load(saved) as outputs:
        assert outputs.files == [name] and outputs[name].shape == (2,)
