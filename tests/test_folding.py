"""Layers that depend on Consts alone (compressed weights decompressed as NNCF writes them)
are computed once per compiled model, within `limits.folded_bytes`, with the same bits as
when they run every time (irscatter/runtime/folding.py)."""

import numpy as np
import pytest

import irscatter
from irscatter import limits
from irscatter.ir.element_types import ElementType
from irscatter.ir.writer import IRWriter, Tensor
from irscatter.ops.registry import find

DECOMPRESSION = ("Convert", "Subtract", "Multiply", "Reshape")


class _Builder:
    """An IR built layer by layer with the package's writer: each layer's inputs are earlier
    layers (by id), its output port the next id after its inputs, its name "l" and its id."""

    def __init__(self) -> None:
        self.writer = IRWriter()
        self.out: dict[int, tuple[Tensor, ElementType, tuple[int, ...]]] = {}  # layer id -> its output

    def add(self, type_: str, data: dict | None, inputs: list[int], dims: tuple[int, ...], et: str,
            version: str = "opset1") -> int:
        lid = self.writer.layer_count
        outputs = [(ElementType(et), tuple(dims))] if type_ != "Result" else []
        tensors = self.writer.layer(type_, version, [self.out[src][0] for src in inputs],
                                    [self.out[src][1:] for src in inputs], outputs, name=f"l{lid}",
                                    attrs={k: str(v) for k, v in (data or {}).items()})
        if tensors:
            self.out[lid] = (tensors[0], ElementType(et), tuple(dims))
        return lid

    def const(self, values: np.ndarray, et: str) -> int:
        lid = self.writer.layer_count
        self.out[lid] = (self.writer.const(f"l{lid}", values, ElementType(et)), ElementType(et), values.shape)
        return lid

    def save(self, folder):
        return self.writer.save(folder / "model.xml")


def _compressed_matmul(folder, kind: str):
    """x[2, 128] @ W^T, W[64, 128] decompressed from `kind`: u8 with a u8 zero point and an f16
    scale per row; u4 in groups of 32 with a zero point and scale per group, then Reshape; i4 in
    groups of 32 with a scale only. A second Result returns the decompressed weight itself.
    The weight is too large for inference to fold (irscatter.limits.FOLD_LIMIT)."""
    rng = np.random.default_rng(3)
    b = _Builder()
    x = b.add("Parameter", {"shape": "2,128", "element_type": "f32"}, [], (2, 128), "f32")
    grouped = kind != "u8"
    shape, side = ((64, 4, 32), (64, 4, 1)) if grouped else ((64, 128), (64, 1))
    low, high = (-8, 8) if kind == "i4" else (0, 16 if kind == "u4" else 256)
    weight = b.add("Convert", {"destination_type": "f16"}, [b.const(rng.integers(low, high, shape), kind)],
                   shape, "f16")
    if kind != "i4":
        zero = b.add("Convert", {"destination_type": "f16"}, [b.const(rng.integers(0, high, side), kind)],
                     side, "f16")
        weight = b.add("Subtract", {"auto_broadcast": "numpy"}, [weight, zero], shape, "f16")
    scale = b.const((rng.random(side) / 50).astype(np.float16), "f16")
    weight = b.add("Multiply", {"auto_broadcast": "numpy"}, [weight, scale], shape, "f16")
    if grouped:
        weight = b.add("Reshape", {"special_zero": "false"}, [weight, b.const(np.array([64, 128]), "i64")],
                       (64, 128), "f16")
    weight = b.add("Convert", {"destination_type": "f32"}, [weight], (64, 128), "f32")
    y = b.add("MatMul", {"transpose_a": "false", "transpose_b": "true"}, [x, weight], (2, 64), "f32")
    b.add("Result", None, [y], (), "f32")
    b.add("Result", None, [weight], (), "f32")
    return b.save(folder)


def _compiled(xml, budget: int | None = None):
    """A model compiled on its own (a loaded model keeps the one it compiled first)."""
    model = irscatter.read_model(xml)
    if budget is None:
        return model.compile()
    with limits.using(folded_bytes=budget):
        return model.compile()


@pytest.fixture
def calls(monkeypatch):
    return count_kernel_calls(monkeypatch)


def count_kernel_calls(monkeypatch) -> dict[str, int]:
    """How many times each decompression op's kernel has run (the op classes wrapped before a
    model is compiled, since a compiled model holds its ops' bound kernels)."""
    counted = {name: 0 for name in DECOMPRESSION}
    for name in DECOMPRESSION:
        cls = find(name, "opset1")
        kernel = cls.compute

        def counting(self, *args, _kernel=kernel, _name=name, **kw):
            counted[_name] += 1
            return _kernel(self, *args, **kw)
        monkeypatch.setattr(cls, "compute", counting)
    return counted


FEEDS = [np.linspace(-1, 1, 256, dtype=np.float32).reshape(2, 128) * k for k in (1, -3, 0.5)]
WEIGHT_BYTES = 64 * 128 * 4  # the decompressed f32 weight


@pytest.mark.parametrize("kind", ["u8", "u4", "i4"])
def test_compressed_weights_are_decompressed_once_with_the_same_bits(tmp_path, calls, kind):
    xml = _compressed_matmul(tmp_path, kind)
    every_time = _compiled(xml, budget=0)  # every run computes everything, as before
    before = sum(calls.values())
    want = [every_time.run({"l0": x}) for x in FEEDS]
    per_run = (sum(calls.values()) - before) // len(FEEDS)
    assert per_run >= (3 if kind == "i4" else 4)

    compiled = _compiled(xml)
    before = sum(calls.values())
    got = [compiled.run({"l0": x}) for x in FEEDS]
    assert sum(calls.values()) - before == per_run  # the first run, and no other
    for g, w in zip(got, want):
        assert [a.tobytes() for a in g.values()] == [a.tobytes() for a in w.values()]


def test_a_kept_value_is_the_callers_copy_and_stays_the_same(tmp_path):
    compiled = _compiled(_compressed_matmul(tmp_path, "u4"))
    first = compiled.run({"l0": FEEDS[0]})
    weight = first[1]
    assert weight.flags.writeable
    expected = weight.copy()
    weight[...] = 7  # the caller's array: the next run must not see it
    again = compiled.run({"l0": FEEDS[0]})
    assert np.array_equal(again[1], expected) and again[0].tobytes() == first[0].tobytes()


def test_a_watched_run_computes_every_layer_and_agrees(tmp_path, calls):
    """A hook or a record of values sees each decompression layer run, with the values the
    kept ones hold; timings, like a plain run, time only what is computed each run."""
    compiled = _compiled(_compressed_matmul(tmp_path, "u8"))
    plain = compiled.run({"l0": FEEDS[1]})
    seen = []
    recorded = compiled.run({"l0": FEEDS[1]}, intermediate=True, hook=lambda layer, i, o: seen.append(layer.type))
    assert {"Convert", "Subtract", "Multiply"} <= set(seen)
    assert recorded["l9:2"].tobytes() == plain[0].tobytes()
    timings: list = []
    timed = compiled.run({"l0": FEEDS[1]}, timings=timings)
    assert [layer.type for layer, _, _ in timings] == ["MatMul"]
    assert timed[0].tobytes() == plain[0].tobytes()


def test_requests_share_what_was_computed_once(tmp_path, calls):
    compiled = _compiled(_compressed_matmul(tmp_path, "i4"))
    compiled.run({"l0": FEEDS[0]})
    before = sum(calls.values())
    other = compiled.new_request()
    assert other.run({"l0": FEEDS[2]})[0].tobytes() == compiled.run({"l0": FEEDS[2]})[0].tobytes()
    assert sum(calls.values()) == before


@pytest.mark.parametrize("budget, computed", [(WEIGHT_BYTES, 1), (WEIGHT_BYTES - 1, len(FEEDS))])
def test_the_budget_says_whether_a_weight_is_kept_or_computed_each_run(tmp_path, calls, budget, computed):
    """The decompressed f32 weight [64, 128] is kept within a budget of its size, computed on
    every run below it, with the same outputs either way."""
    xml = _compressed_matmul(tmp_path, "u8")
    compiled = _compiled(xml, budget)
    calls.update(dict.fromkeys(calls, 0))
    runs = [compiled.run({"l0": x})[0].tobytes() for x in FEEDS]
    assert calls["Subtract"] == calls["Multiply"] == computed
    every_time = _compiled(xml, budget=0)
    assert runs == [every_time.run({"l0": x})[0].tobytes() for x in FEEDS]


def test_a_const_only_layer_that_fails_names_itself_on_every_run(tmp_path):
    """An integer division by zero between two Consts too large for inference to fold fails
    when the first run computes it, naming the layer, and again on the next run."""
    b = _Builder()
    x = b.add("Parameter", {"shape": "2048", "element_type": "i64"}, [], (2048,), "i64")
    divisor = np.ones(2048, np.int64)
    divisor[1000] = 0
    quotient = b.add("Divide", {"auto_broadcast": "numpy"}, [b.const(np.arange(2048), "i64"), b.const(divisor, "i64")],
                     (2048,), "i64")
    b.add("Result", None, [b.add("Add", {"auto_broadcast": "numpy"}, [x, quotient], (2048,), "i64")], (), "i64")
    compiled = _compiled(b.save(tmp_path))
    for _ in range(2):
        with pytest.raises(irscatter.errors.ExecutionError, match=r"l3.*division by zero.*\[1000\]"):
            compiled.run({"l0": np.zeros(2048, np.int64)})


def test_the_budget_keeps_values_in_the_order_their_layers_run():
    """Two weights of 100 bytes and a budget of 150: the first is kept and its layer left out
    of later runs, the second's layer runs every time."""
    from types import SimpleNamespace

    from irscatter.runtime.folding import keep_once

    def step(inputs, outputs):
        return SimpleNamespace(layer=None, inputs=inputs, outputs=outputs)

    steps = [step((1,), (10,)), step((2,), (11,)), step((0, 10), (12,)), step((12, 11), (13,))]
    plan = keep_once(steps, lambda s: True, const_slots={1, 2}, result_slots={13},
                     slot_bytes={10: 100, 11: 100, 12: None, 13: None}, budget=150)
    assert (plan.kept, plan.once, plan.skipped) == ({10}, (0,), {0})
