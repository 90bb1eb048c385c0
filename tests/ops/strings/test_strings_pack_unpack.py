"""StringTensorPack-15 and StringTensorUnpack-15 against `oracles.strings`, and against
OpenVINO's CPU plugin in `test_strings_against_openvino`.

Exact: the results are bytes and indices.

The harness's cases are judged by the oracle alone: its OpenVINO worker cannot take a string
tensor as numpy's StringDType (it converts only object arrays), and it hands back OpenVINO's
strings as fixed-width '<U' arrays, which the harness does not compare with StringDType ones.
`test_strings_against_openvino` runs models through OpenVINO directly instead, feeding object
arrays and comparing the strings as Python lists.
"""

import tempfile
from pathlib import Path

import harness
import numpy as np
import pytest
from harness import Case, Input
from oracles.strings import string_tensor_pack, string_tensor_unpack

import irscatter

STRING = np.dtypes.StringDType()
WHY = "the harness's OpenVINO worker carries no StringDType tensors (module doc)"
WORDS = ["Intel", "OpenVINO", "", " ", "2024", "héllo", "日本語", "a\x00b", "emoji \U0001F600", "\t\n", "x" * 40]


def _strings(rng, shape):
    return np.array(rng.choice(np.array(WORDS, dtype=object), size=shape), dtype=STRING).reshape(shape)


def _unpack_case(name, data):
    return Case(f"unpack-{name}-{'x'.join(map(str, data.shape))}", "StringTensorUnpack", "opset15",
                [Input("data", data)], oracle=string_tensor_unpack, openvino="none", why=WHY)


def _pack_case(name, begins, ends, symbols, const=False):
    return Case(f"pack-{name}-{begins.dtype}-{'x'.join(map(str, begins.shape))}", "StringTensorPack", "opset15",
                [Input("begins", begins, const), Input("ends", ends, const), Input("symbols", symbols)],
                oracle=string_tensor_pack, openvino="none", why=WHY)


def _cases():
    rng = np.random.default_rng(15)
    cases = []
    for k, shape in enumerate(harness.shapes(rng)):
        data = _strings(rng, shape)
        cases.append(_unpack_case(f"random{k}", data))
        begins, ends, symbols = string_tensor_unpack(data)
        for dtype in (np.int32, np.int64):
            cases.append(_pack_case(f"unpacked{k}", begins.astype(dtype), ends.astype(dtype), symbols))
    # the spec's examples: skipped bytes, an empty string, 2-D indices
    text = np.frombuffer(b"123456789", np.uint8)
    cases.append(_pack_case("skipped", np.array([0, 8]), np.array([1, 9]), text))
    text = np.frombuffer(b"OMZGenAI 2024", np.uint8)
    cases.append(_pack_case("empty", np.array([0, 3, 3, 8, 9]), np.array([3, 3, 8, 9, 13]), text))
    text = np.frombuffer(b"IntelOpenVINOOMZGenAI", np.uint8)
    cases.append(_pack_case("2d", np.array([[0, 5], [13, 16]]), np.array([[5, 13], [16, 21]]), text))
    # ranges out of order and overlapping (the spec does not forbid them; the plugin packs them)
    cases.append(_pack_case("unordered", np.array([8, 0, 2, 2], np.int32), np.array([9, 4, 9, 2], np.int32), text))
    # constant indices, checked at inference
    cases.append(_pack_case("const", np.array([0, 5]), np.array([5, 13]), text, const=True))
    # nothing to pack from: an empty buffer with empty ranges
    cases.append(_pack_case("no-symbols", np.zeros((2, 0), np.int64), np.zeros((2, 0), np.int64),
                            np.zeros(0, np.uint8)))
    cases.append(_pack_case("empty-strings", np.zeros(3, np.int64), np.zeros(3, np.int64), np.zeros(0, np.uint8)))
    cases += _refusals()
    return cases


def _refusals():
    text = np.frombuffer(b"abcdef", np.uint8)
    i64 = np.array([0, 2])
    out = []
    for name, begins, ends, symbols, const, label in (
            ("f32-begins", i64.astype(np.float32), i64, text, False, "index-type"),
            ("u8-ends", i64, np.array([2, 4], np.uint8), text, False, "index-type"),
            ("mixed", i64.astype(np.int32), np.array([2, 4]), text, False, "same-element-type"),
            ("i8-symbols", i64, np.array([2, 4]), text.astype(np.int8), False, "symbols-type"),
            ("2d-symbols", i64, np.array([2, 4]), text.reshape(2, 3), False, "symbols-rank"),
            ("shapes", i64, np.array([2, 4, 6]), text, False, "begins-ends-shape"),
            ("negative", np.array([-1, 2]), np.array([2, 4]), text, False, "index-range"),
            ("past-end", i64, np.array([2, 7]), text, False, "index-range"),
            ("past-end-const", i64, np.array([2, 7]), text, True, "index-range"),
            ("after", np.array([3, 2]), np.array([2, 4]), text, False, "begins-after-ends"),
            ("after-const", np.array([3, 2]), np.array([2, 4]), text, True, "begins-after-ends"),
            ("utf8", i64, np.array([2, 4]), np.array([0x61, 0xFF, 0x62, 0x63], np.uint8), False, "string-utf8"),
            ("utf8-split", np.array([0, 1]), np.array([1, 2]), np.frombuffer("é".encode(), np.uint8), False,
             "string-utf8")):
        out.append(Case(f"pack-{name}", "StringTensorPack", "opset15",
                        [Input("begins", begins, const), Input("ends", ends, const), Input("symbols", symbols)],
                        error=label))
    out.append(Case("unpack-f32", "StringTensorUnpack", "opset15", [Input("data", np.zeros(2, np.float32))],
                    error="string-input"))
    return out


CASES = _cases()
assert len({c.id for c in CASES}) == len(CASES)


@pytest.mark.parametrize("case", CASES, ids=str)
def test_strings_pack_unpack(case):
    harness.check(case, CASES)


def test_strings_unpack_folds_a_constant():
    """A constant string tensor is unpacked at inference: the symbols' length is known."""
    from irscatter.ops import registry
    from irscatter.ops.base import TensorInfo
    from irscatter.ops.functional import make_op

    data = np.array([["ab", "é"], ["", "xyz"]], dtype=STRING)
    op = make_op(registry.find("StringTensorUnpack", "opset15"), {})
    infos = op.infer(TensorInfo.of(data))
    assert [str(i.shape) for i in infos] == ["[2, 2]", "[2, 2]", "[7]"]
    unknown = op.infer(TensorInfo(irscatter.ElementType.string, infos[0].shape))
    assert str(unknown[2].shape) == "[?]"


def _run_both(outputs, feeds):
    """`outputs` (OpenVINO nodes) as one IR run by irscatter and by OpenVINO's CPU plugin."""
    from helpers import oracle, ov_model_of, save_ov

    with tempfile.TemporaryDirectory() as folder:
        xml = save_ov(ov_model_of(outputs), Path(folder))
        ours = list(irscatter.read_model(xml).run(feeds).values())
        plain = {k: v.astype(object) if v.dtype == STRING else v for k, v in feeds.items()}
        theirs = oracle().infer(xml, plain, config={"INFERENCE_PRECISION_HINT": "f32"})
    return ours, theirs


@pytest.mark.parametrize("shape", [(3,), (2, 3), (), (0,), (2, 0, 2)], ids=str)
def test_strings_against_openvino(shape):
    """Unpack, pack again, and pack overlapping ranges (each string to the end of the buffer):
    irscatter and OpenVINO agree."""
    import openvino as ov
    import openvino.opset15 as ops

    rng = np.random.default_rng(len(shape))
    data = _strings(rng, shape)
    strings = ops.parameter(list(shape), ov.Type.string, name="data")
    begins, ends, symbols = ops.string_tensor_unpack(strings).outputs()
    tails = ops.parameter(list(shape), ov.Type.i64, name="tails")
    packed = ops.string_tensor_pack(begins, ends, symbols)
    suffixes = ops.string_tensor_pack(ops.convert(begins, ov.Type.i64), tails, symbols)
    b, e, s = string_tensor_unpack(data)
    feeds = {"data": data, "tails": np.full(shape, s.size, np.int64)}
    ours, theirs = _run_both([begins, ends, symbols, packed, suffixes], feeds)
    for k in range(3):
        np.testing.assert_array_equal(ours[k], theirs[k])
        assert ours[k].dtype == theirs[k].dtype
    for k in (3, 4):
        assert ours[k].shape == theirs[k].shape
        assert ours[k].tolist() == theirs[k].tolist()
    assert ours[3].tolist() == data.tolist()


def test_strings_pack_out_of_order_departs_from_openvino():
    """Ranges out of order: the spec defines each string by its own range and irscatter packs
    them; OpenVINO's shape inference, which the CPU plugin runs on the indices, refuses them."""
    import openvino as ov
    import openvino.opset15 as ops

    from irscatter.targets import TargetFailure

    names = ("begins", "ends", "symbols")
    params = [ops.parameter([2], ov.Type.i64, name=names[0]), ops.parameter([2], ov.Type.i64, name=names[1]),
              ops.parameter([-1], ov.Type.u8, name=names[2])]
    packed = ops.string_tensor_pack(*params)
    feeds = {"begins": np.array([3, 0]), "ends": np.array([6, 3]), "symbols": np.frombuffer(b"abcdef", np.uint8)}
    with pytest.raises(TargetFailure, match="ascending"):
        _run_both([packed], feeds)
    from helpers import ov_model_of, save_ov

    with tempfile.TemporaryDirectory() as folder:
        xml = save_ov(ov_model_of([packed]), Path(folder))
        ours = list(irscatter.read_model(xml).run(feeds).values())
    assert ours[0].tolist() == ["def", "abc"]
