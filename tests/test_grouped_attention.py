"""Attention over grouped key-value heads (irscatter/runtime/grouped_attention.py): a plain run
leaves out the Reshapes that copy each key-value head for its group and gives the attention
the Broadcast's view; its outputs are the layers' to the bit (a run with a hook runs them as
written), and where the shapes do not fit the grouping it runs the layers as written."""

import numpy as np
import pytest

import irscatter
from irscatter.errors import IRError
from irscatter.ir.element_types import ElementType
from irscatter.ir.writer import IRWriter
from irscatter.runtime.grouped_attention import GroupedAttention

F32, I64, BOOL = ElementType.f32, ElementType.i64, ElementType.boolean
KV, GROUP, WIDTH = 2, 3, 8
HEADS = KV * GROUP


def _model(tmp_path, mask: str, etype: ElementType = F32, causal: bool = False, broadcast: bool = True):
    """query [1, H, L, E]; key and value [1, Hkv, S, E], each unsqueezed, broadcast along the new
    axis (`broadcast`; else fed whole as [1, Hkv, G, S, E]) and reshaped by a fed pattern to
    [1, H, S, E]; `mask`: "none", "bool-one-head" [1, 1, L, S], "float-heads" [1, H, L, S],
    "float-2d" [L, S]."""
    w = IRWriter("t")
    query = w.parameter("query", etype, (1, HEADS, -1, WIDTH), ("query",))
    pattern = w.parameter("pattern", I64, (4,), ("pattern",))
    merged = []
    for name in ("key", "value"):
        if broadcast:
            heads = w.parameter(name, etype, (1, KV, -1, WIDTH), (name,))
            axis = w.const(f"{name}_axis", np.array(2, np.int64))
            grown, = w.layer("Unsqueeze", "opset1", [heads, axis], [(etype, None), (I64, ())], [(etype, None)],
                             name=f"{name}_unsqueeze")
            target = w.parameter(f"{name}_target", I64, (5,), (f"{name}_target",))
            grouped, = w.layer("Broadcast", "opset3", [grown, target], [(etype, None), (I64, (5,))], [(etype, None)],
                               name=f"{name}_broadcast", attrs={"mode": "bidirectional"})
        else:
            grouped = w.parameter(name, etype, (1, KV, GROUP, -1, WIDTH), (name,))
        out, = w.layer("Reshape", "opset1", [grouped, pattern], [(etype, None), (I64, (4,))],
                       [(etype, (1, HEADS, -1, WIDTH))], name=f"{name}_reshape", attrs={"special_zero": "true"})
        merged.append(out)
    sources, types = [query, *merged], [(etype, None)] * 3
    if mask != "none":
        shape = {"bool-one-head": (1, 1, -1, -1), "float-heads": (1, HEADS, -1, -1), "float-2d": (-1, -1)}[mask]
        mask_type = BOOL if mask.startswith("bool") else etype
        sources.append(w.parameter("mask", mask_type, shape, ("mask",)))
        types.append((mask_type, None))
        sources.append(w.const("scale", np.array(0.3, etype.dtype)))
        types.append((etype, ()))
    out, = w.layer("ScaledDotProductAttention", "opset13", sources, types, [(etype, None)], name="attention",
                   attrs={"causal": str(causal).lower()})
    w.result("out", out, etype, None)
    return w.save(tmp_path / "model.xml")


def _feeds(mask: str, rows: int, source: int, dtype, broadcast: bool = True, pattern=(0, HEADS, -1, WIDTH)):
    g = np.random.default_rng(rows * 100 + source)
    feeds = {"query": g.standard_normal((1, HEADS, rows, WIDTH)).astype(dtype),
             "pattern": np.array(pattern, np.int64)}
    for name in ("key", "value"):
        if broadcast:
            feeds[name] = g.standard_normal((1, KV, source, WIDTH)).astype(dtype)
            feeds[f"{name}_target"] = np.array([1, KV, GROUP, source, WIDTH], np.int64)
        else:
            feeds[name] = g.standard_normal((1, KV, GROUP, source, WIDTH)).astype(dtype)
    if mask == "bool-one-head":
        feeds["mask"] = g.random((1, 1, rows, source)) < 0.8
    elif mask == "float-heads":
        feeds["mask"] = g.standard_normal((1, HEADS, rows, source)).astype(dtype)
    elif mask == "float-2d":
        feeds["mask"] = g.standard_normal((rows, source)).astype(dtype)
    return feeds


def _counted(monkeypatch) -> list[bool]:
    """Whether each call of the fused kernel took the grouped path."""
    taken: list[bool] = []
    grouped = GroupedAttention._grouped

    def counting(self, *args):
        out = grouped(self, *args)
        taken.append(out is not None)
        return out

    monkeypatch.setattr(GroupedAttention, "_grouped", counting)
    return taken


def _reference(feeds, causal: bool) -> np.ndarray:
    """The attention in f64 with each key-value head repeated for its group."""
    q = feeds["query"].astype(np.float64)
    k, v = (np.repeat(feeds[n].astype(np.float64), GROUP, axis=1) for n in ("key", "value"))
    logits = q @ np.swapaxes(k, -1, -2) * (0.3 if "mask" in feeds else 1 / np.sqrt(WIDTH))
    if causal:
        logits = logits + np.where(np.triu(np.ones(logits.shape[-2:], bool), 1), -np.inf, 0)
    elif "mask" in feeds:
        mask = feeds["mask"]
        logits = logits + (np.where(mask, 0, -np.inf) if mask.dtype == bool else mask)
    weights = np.exp(logits - logits.max(axis=-1, keepdims=True))
    return (weights / weights.sum(axis=-1, keepdims=True)) @ v


@pytest.mark.parametrize("mask", ["none", "bool-one-head", "float-heads", "float-2d"])
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_the_grouped_heads_give_the_layers_bits(tmp_path, monkeypatch, mask, causal, dtype):
    compiled = irscatter.compile_model(_model(tmp_path, mask, ElementType.from_dtype(np.dtype(dtype)), causal))
    assert not any(step.layer.type == "Reshape" for step in compiled.plan.run_steps)
    taken = _counted(monkeypatch)
    for rows, source in ((1, 5), (4, 4), (3, 0), (300, 300)):  # (a decode step; a prompt; no source; blocks)
        feeds = _feeds(mask, rows, source, dtype)
        plain = compiled.run(feeds)[0]
        watched = compiled.run(feeds, hook=lambda layer, inputs, outputs: None)[0]
        assert plain.shape == (1, HEADS, rows, WIDTH) and plain.tobytes() == watched.tobytes()
        if source and not causal or rows <= source:
            np.testing.assert_allclose(plain, _reference(feeds, causal), rtol=0, atol=2e-2 if dtype == np.float16 else 1e-5)
    assert taken == [True] * 4


def test_heads_not_repeated_are_reshaped_as_written(tmp_path, monkeypatch):
    """A key and value fed whole as [1, Hkv, G, S, E] (each group's heads their own): the
    Reshapes run as written, with the same outputs as a watched run."""
    compiled = irscatter.compile_model(_model(tmp_path, "none", broadcast=False))
    taken = _counted(monkeypatch)
    feeds = _feeds("none", 2, 6, np.float32, broadcast=False)
    plain = compiled.run(feeds)[0]
    assert plain.tobytes() == compiled.run(feeds, hook=lambda layer, inputs, outputs: None)[0].tobytes()
    assert taken == [False]


@pytest.mark.parametrize("mask_shape", [(2, 7), (1, HEADS, 3, 4)])
def test_masks_that_do_not_fit_fail_as_written(tmp_path, monkeypatch, mask_shape):
    """A mask that does not broadcast to the logits [1, H, L, S]: the layers as written refuse
    it, in the words of a watched run."""
    compiled = irscatter.compile_model(_model(tmp_path, "float-2d" if len(mask_shape) == 2 else "float-heads"))
    taken = _counted(monkeypatch)
    feeds = _feeds("none", 2, 4, np.float32)
    feeds["mask"] = np.zeros(mask_shape, np.float32)
    errors = []
    for hook in (None, lambda layer, inputs, outputs: None):
        with pytest.raises(IRError) as raised:
            compiled.run(feeds, hook=hook)
        errors.append(raised.value)
    assert str(errors[0]) == str(errors[1]) and errors[0].label == "sdpa-mask-shape"
    assert True not in taken  # (the shapes a run is fed may be refused before the attention runs)


@pytest.mark.parametrize("pattern, label, layer", [((0, KV, -1, WIDTH), "sdpa-batch", '"attention"'),
                                                   ((0, HEADS, 5, WIDTH), "reshape-pattern", '"key_reshape"')])
def test_other_patterns_fail_as_the_layers_as_written_do(tmp_path, monkeypatch, pattern, label, layer):
    """A pattern that does not merge the group into the heads ([1, Hkv, G * S, E]: the attention
    then refuses heads that do not broadcast), and one that holds another count of elements
    (the Reshape refuses it): the plain run's error is the watched run's, under the layer that
    raised it."""
    compiled = irscatter.compile_model(_model(tmp_path, "none"))
    taken = _counted(monkeypatch)
    feeds = _feeds("none", 2, 4, np.float32, pattern=pattern)
    errors = []
    for hook in (None, lambda layer, inputs, outputs: None):
        with pytest.raises(IRError) as raised:
            compiled.run(feeds, hook=hook)
        errors.append(raised.value)
    assert str(errors[0]) == str(errors[1]) and errors[0].label == label and layer in str(errors[0])
    assert taken == [False]
