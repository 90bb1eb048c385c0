"""Short chains of element-wise layers, each as one step of a plain run:

* a convolution, the Add of its per-channel bias, and the activation after it: the layers
  OpenVINO's converters write for every convolution of a CNN (its batch normalization folded
  into the filters and a bias);
* a Multiply by a per-channel scale, an Add of a per-channel bias, or both in that order, and
  maybe an activation, after any other layer: a batch normalization that no convolution before
  it could take (DenseNet's, after each concatenation), the scale and shift after a
  normalization (GroupNorm's, LayerNorm's), a bias and an activation;
* an Add of two layers' outputs of one shape and the activation after it (a residual
  connection: ResNet's, RegNet's);
* a MatMul and the Add of a bias along its last axis (a Linear's), where no activation of the
  list below follows the Add (then the Add and the activation are a chain of the second kind).

Run as written, each layer makes an array as large as its input and passes over it, out of the
cache for most layers of a network at 224x224. Fused, with numba, one compiled pass
(`ops/elementwise/bias_kernels.py`) makes every element from its input by the layers' own
arithmetic, so the values are the layers' to the bit: over the convolution's output in place,
or from the chain's input into an array of its own. Without numba, or on a step's first call
before that loop is loaded (loading numba takes longer than such a model's run, so a model run
once does not wait for it), or on a small step's calls before then (`accel.loads`: a small
model never loads it), the step calls the layers' kernels in turn.

Taken where nothing but the next layer of the chain reads a layer's output (no Result, no other
layer); each Const is of the data's float type and varies along one axis alone (the channels,
whichever axis they are), with that axis's extent; the Multiply and Add broadcast numpy's way;
the activation is Relu-1, HSwish-4 or HSigmoid-5, or after a convolution Swish-4 without beta.
A residual sum's two inputs have one shape (no broadcasting). A convolution's bias varies along
the channels (axis 1). A MatMul's bias is added by the parts of the product, each to the
block it wrote while that is in its core's cache (`products.matmul`): numpy's additions, with
or without numba (a pass of its own over the product measured 2 to 4% slower than the Add).
Swish's exponential stays numpy's: the pass goes a block of rows at a time, the sums and their
negations made by one compiled loop, numpy's exp over the block, and the quotients by another.
A run that watches its layers (hooks, records, timings, strict mode, emulated precision) runs
them as written.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import partial
from typing import Any, cast

import numpy as np

from irscatter.ir.element_types import ElementType
from irscatter.ops.base import Op, TensorInfo
from irscatter.ops.common import accel, threads
from irscatter.ops.convolution.convolution import Convolution
from irscatter.ops.convolution.group_convolution import GroupConvolution
from irscatter.ops.elementwise.binary import BinaryElementwise
from irscatter.ops.elementwise.pass_codes import ACTIVATIONS, SWISH
from irscatter.ops.matrix.mat_mul import MatMul

ACTIVATION_NAMES = {name.lower() for name, _ in ACTIVATIONS}  # as layers' types may spell them (OpenVINO writes ReLU)
BLOCK = 1 << 16  # elements of a Swish's exponentials at a time (see `_rows`): they stay in a core's L2 cache
FLOATS = (ElementType.f32, ElementType.f64)
# An output element's weight in multiply-adds for `threads.parts`: the pass is a few operations
# an element, bound by the memory it reads and writes, so a part's hand-over (some tens of
# microseconds) pays from some 2^18 elements on: a residual sum of 2^18 to 2^20 elements took
# 0.55-0.6 of its time in two parts, one of 2^17 twice its time.
ELEMENT_WORK = 16
KERNELS = "irscatter.ops.elementwise.bias_kernels"


@dataclass(frozen=True)
class Fusion:
    """The fused steps (position of the chain's first step -> its step) and the positions they
    leave out."""

    steps: dict[int, Any]
    skipped: frozenset[int]


@dataclass(frozen=True)
class _Link:
    """A Multiply or Add of the chain: its position, and which of its inputs is the Const."""

    position: int
    const: int


def fuse_epilogues(steps: Sequence[Any], ops: Mapping[int, Op], infos: Mapping[int, TensorInfo],
                   const_slots: set[int], result_slots: set[int], taken: set[int],
                   readers: Mapping[int, list[int]]) -> Fusion:
    """The chains a plain run can fuse (see the module doc); `taken`: positions some other plan
    already replaces or leaves out (this adds those it takes); `readers`: the steps that read
    each slot (`folding.readers_of`)."""
    chains = _Chains(steps, ops, infos, const_slots, result_slots, taken, readers)
    fused: dict[int, Any] = {}
    skipped: set[int] = set()
    for i, step in enumerate(steps):
        if i in taken or len(step.outputs) != 1 or not chains.may_start(i):
            continue
        op = ops[step.layer.id]
        if isinstance(op, (Convolution, GroupConvolution)):
            found = chains.after_convolution(i)
        elif isinstance(op, MatMul):
            found = chains.product_bias(i)
        else:
            found = chains.affine(i) or chains.sum(i)
        if found is None:
            continue
        positions, compute, inputs = found
        fused[i] = replace(step, compute=compute, inputs=inputs, outputs=steps[positions[-1]].outputs,
                           release=tuple(dict.fromkeys(s for p in positions for s in steps[p].release)),
                           reuse_slot=None, reuse_input=None)
        skipped.update(positions[1:])
        taken.update(positions)
    return Fusion(fused, frozenset(skipped))


class _Chains:
    """Finds the chains that start at a step: each as the positions of its steps (the first
    replaced by the fused step, the others left out), the fused kernel and its inputs."""

    def __init__(self, steps: Sequence[Any], ops: Mapping[int, Op], infos: Mapping[int, TensorInfo],
                 const_slots: set[int], result_slots: set[int], taken: set[int],
                 readers: Mapping[int, list[int]]) -> None:
        self.steps, self.ops, self.infos, self.const_slots = steps, ops, infos, const_slots
        self.result_slots, self.taken, self.readers = result_slots, taken, readers

    def after_convolution(self, i: int) -> tuple[list[int], Any, tuple[int, ...]] | None:
        """A convolution, the Add of its channels' bias, maybe an activation (Swish included)."""
        step = self.steps[i]
        found = self._link(self._only_reader(step.outputs[0]), "Add", step.outputs[0], None)
        out_info = self.infos.get(step.outputs[0])
        if found is None or out_info is None:
            return None
        add, axis = found
        if not (out_info.shape.rank_is_static and axis + out_info.shape.rank == 1):  # the channels
            return None
        k = self._activation_after(self.steps[add.position].outputs[0], swish=True)
        op = cast(Convolution | GroupConvolution, self._op(i))  # (what starts this chain: see fuse_epilogues)
        compute = _Epilogue(op, self._op(add.position).compute, add.const, axis, self._activation(k))
        positions = [i, add.position] + ([k] if k is not None else [])
        return positions, compute, (*step.inputs, self.steps[add.position].inputs[add.const])

    def product_bias(self, i: int) -> tuple[list[int], Any, tuple[int, ...]] | None:
        """A MatMul and the Add of a Const that varies along the product's last axis (a Linear's
        bias), unless an activation the Add's own chain takes follows it (`affine`)."""
        step = self.steps[i]
        found = self._link(self._only_reader(step.outputs[0]), "Add", step.outputs[0], None)
        if found is None or found[1] != -1:
            return None
        add = found[0]
        after = self._only_reader(self.steps[add.position].outputs[0])
        if after is not None and self.steps[after].layer.type.lower() in ACTIVATION_NAMES:
            return None
        compute = _ProductBias(cast(MatMul, self._op(i)), self._op(add.position).compute, add.const)
        return [i, add.position], compute, (*step.inputs, self.steps[add.position].inputs[add.const])

    def affine(self, i: int) -> tuple[list[int], Any, tuple[int, ...]] | None:
        """A Multiply by a per-channel Const, an Add of one, or both in that order, then maybe an
        activation: two layers at least."""
        found = self._link(i, "Multiply", -1, None) or self._link(i, "Add", -1, None)
        if found is None:
            return None
        start, axis = found
        scale = start if self._op(i).type_name == "Multiply" else None
        bias = None if scale is not None else start
        if scale is not None:
            after = self._link(self._only_reader(self.steps[i].outputs[0]), "Add", self.steps[i].outputs[0], axis)
            bias = after[0] if after is not None else None
        links = [link_ for link_ in (scale, bias) if link_ is not None]
        k = self._activation_after(self.steps[links[-1].position].outputs[0], swish=False)
        positions = [link_.position for link_ in links] + ([k] if k is not None else [])
        if len(positions) < 2:
            return None
        layers = [(self._op(p).compute, next((link_.const for link_ in links if link_.position == p), None))
                  for p in positions]
        compute = _Affine(layers, axis, scale is not None, bias is not None, self._activation(k))
        source = self.steps[i].inputs[1 - start.const]
        return positions, compute, (source, *(self.steps[link_.position].inputs[link_.const] for link_ in links))

    def sum(self, i: int) -> tuple[list[int], Any, tuple[int, ...]] | None:
        """An Add of two layers' outputs of one shape (a residual connection), then an activation."""
        step = self.steps[i]
        op = self._op(i)
        if not (isinstance(op, BinaryElementwise) and op.row.type_name == "Add" and len(step.inputs) == 2
                and not any(slot in self.const_slots for slot in step.inputs)):
            return None
        a, b = (self.infos.get(slot) for slot in step.inputs)
        if a is None or b is None or a.etype not in FLOATS or a.etype is not b.etype or a.shape != b.shape:
            return None
        k = self._activation_after(step.outputs[0], swish=False)
        if k is None:
            return None
        return [i, k], _Sum(op.compute, self._activation_of(k)), step.inputs

    def may_start(self, i: int) -> bool:
        """Whether a chain may start at step i, by the type names of it and of its only reader:
        a cheap test first, since most steps of a model start none (a chain of 10000 Adds
        starts none), and the ops themselves are asked after."""
        kind = self.steps[i].layer.type.lower()
        if kind not in ("add", "multiply", "matmul") and not isinstance(self._op(i), (Convolution, GroupConvolution)):
            return False
        k = self._only_reader(self.steps[i].outputs[0])
        if k is None:
            return False
        after = self.steps[k].layer.type.lower()
        if kind == "add":  # a residual sum (or a bias, which an activation must follow)
            return after in ACTIVATION_NAMES
        return after == "add" or kind == "multiply" and after in ACTIVATION_NAMES  # a bias, or a scale's activation

    def _op(self, position: int) -> Op:
        return self.ops[self.steps[position].layer.id]

    def _only_reader(self, slot: int) -> int | None:
        found = self.readers.get(slot, ())
        return found[0] if len(found) == 1 and slot not in self.result_slots and found[0] not in self.taken else None

    def _link(self, position: int | None, kind: str, source: int, axis: int | None) -> tuple[_Link, int] | None:
        """The step at `position` as a link of `kind` reading `source`, and its Const's axis."""
        if position is None:
            return None
        found = _per_channel(position, self.steps[position], self._op(position), kind, source, self.const_slots,
                             self.infos)
        return None if found is None or axis is not None and found[1] != axis else found

    def _activation_after(self, slot: int, swish: bool) -> int | None:
        k = self._only_reader(slot)
        if k is None or len(self.steps[k].inputs) != 1:
            return None
        op = self._op(k)
        code = ACTIVATIONS.get((op.type_name, op.version))
        return k if code is not None and (swish or code != SWISH) else None

    def _activation(self, position: int | None) -> tuple[Callable[..., Any], int] | None:
        return None if position is None else self._activation_of(position)

    def _activation_of(self, position: int) -> tuple[Callable[..., Any], int]:
        """The activation's kernel and its number in bias_kernels."""
        op = self._op(position)
        return op.compute, ACTIVATIONS[(op.type_name, op.version)]


def _per_channel(position: int, step: Any, op: Op, kind: str, source: int, const_slots: set[int],
                 infos: Mapping[int, TensorInfo]) -> tuple[_Link, int] | None:
    """The step (at `position`) as a `kind` (Multiply or Add) of `source` (-1: whichever input is
    not the Const) by a Const that varies along one axis of it alone, and that axis counted from
    the end (the data's extent there is checked again at each call, `_fits`); None where it is
    not."""
    if not (isinstance(op, BinaryElementwise) and op.row.type_name == kind and op.attrs.auto_broadcast == "numpy"
            and len(step.inputs) == 2):
        return None
    consts = [p for p in (0, 1) if step.inputs[p] in const_slots]
    if len(consts) != 1 or source not in (-1, step.inputs[1 - consts[0]]):
        return None
    const, data = infos.get(step.inputs[consts[0]]), infos.get(step.inputs[1 - consts[0]])
    if const is None or data is None or data.etype not in FLOATS or const.etype is not data.etype \
            or not const.shape.is_static:
        return None
    dims = const.shape.to_tuple()
    varying = [a - len(dims) for a, d in enumerate(dims) if d != 1]  # counted from the end
    if len(varying) != 1:
        return None
    if data.shape.rank_is_static:  # (a product's output may have lost its rank to inference)
        rank = data.shape.rank
        if len(dims) > rank or rank < 2 or (data.shape[varying[0]].is_static
                                            and int(data.shape[varying[0]]) != dims[varying[0]]):
            return None
    return _Link(position, consts[0]), varying[0]


class _Fused(accel.LoadsOnSecondCall):
    """What the fused steps' kernels share: the layer's own inputs come first among the step's
    (the Consts after them), and whether a call takes the compiled pass (`accel.loads`)."""

    layer_inputs = 2  # of the step's inputs, those of its (first) layer: the rest come after

    def _compiled(self, elements: int) -> bool:
        return self.takes_compiled(KERNELS, elements)


class _Epilogue(_Fused):
    """The fused step's kernel after a convolution: that layer, then bias and activation over its
    output. Once the compiled pass is loaded, a convolution whose plan writes its output by
    blocks (`plan_base.Finish`) has each block biased and activated by the part that wrote it,
    while the block is in that core's cache, rather than in a pass of its own over the whole
    output."""

    def __init__(self, convolution: Convolution | GroupConvolution, add: Callable[..., Any], bias_position: int,
                 axis: int, activation: tuple[Callable[..., Any], int] | None) -> None:
        self.convolution, self.add, self.bias_position, self.axis = convolution, add, bias_position, axis
        self.produce = convolution.compute
        self.activate: Callable[..., Any] | None = activation[0] if activation is not None else None
        self.activation = activation[1] if activation is not None else 0

    def __call__(self, x: np.ndarray, filters: np.ndarray, bias: np.ndarray) -> np.ndarray:
        if accel.loaded(KERNELS) and self._by_blocks(filters, bias):
            finished = self.convolution.finishing(x, filters, self._block_pass(bias))
            if finished is not None:
                return finished
        out = self.produce(x, filters)
        if self._compiled(out.size) and _fits(out, self.axis, bias) and not any(np.may_share_memory(out, a) for a in (x, filters, bias)):
            _in_rows(out, out, None, bias, self.axis, self.activation)
            return out
        summed = self.add(out, bias) if self.bias_position == 1 else self.add(bias, out)
        return summed if self.activate is None else self.activate(summed)

    def _block_pass(self, bias: np.ndarray) -> _BlockPass:
        """The pass by blocks for this bias, made once for the Const's array."""
        kept = self.__dict__.get("_kept")
        if kept is None or kept[0] is not bias:
            kept = self._kept = (bias, _BlockPass(bias, self.activation, bias.dtype))
        return kept[1]

    def _by_blocks(self, filters: np.ndarray, bias: np.ndarray) -> bool:
        """Whether the bias is one float per output channel (the pass by blocks indexes it by
        channel); the convolution then asks whether its plan writes by blocks."""
        channels = math.prod(filters.shape[:2]) if self.convolution.grouped else filters.shape[0]
        return isinstance(bias, np.ndarray) and bias.dtype.kind == "f" and bias.dtype == filters.dtype \
            and bias.size == channels


class _ProductBias(_Fused):
    """The fused step's kernel of a MatMul and its bias Add: each part of the product adds the
    bias to the block it wrote (`MatMul.biased`), where the layers' types and shapes let it;
    otherwise the two layers' kernels in turn."""

    def __init__(self, product: MatMul, add: Callable[..., Any], bias_position: int) -> None:
        self.product, self.add, self.bias_position = product, add, bias_position

    def __call__(self, a: np.ndarray, b: np.ndarray, bias: np.ndarray) -> np.ndarray:
        # the Add's output is the product's own shape: the bias has no more axes than it
        rank = max(a.ndim, b.ndim) if a.ndim >= 2 else b.ndim - 1
        if isinstance(bias, np.ndarray) and 0 < bias.ndim <= rank and bias.size == bias.shape[-1]:
            out = self.product.biased(a, b, bias.reshape(-1))
            if out is not None:
                return out
        out = self.product.compute(a, b)
        return self.add(out, bias) if self.bias_position == 1 else self.add(bias, out)


class _BlockPass:
    """The bias and activation of `_Epilogue` over a block of a convolution's output, as its plan
    hands the blocks over (`plan_base.Finish`): `_in_place` over the block's rows, each row a
    channel's."""

    def __init__(self, bias: np.ndarray, activation: int, dtype: np.dtype) -> None:
        self.bias = np.ascontiguousarray(bias.reshape(-1))
        self.scale = np.ones(self.bias.size, dtype)
        self.activation = activation

    def __call__(self, flat: np.ndarray, start: int, stride: int, rows: int, width: int, first: int) -> None:
        _in_place(flat, start, stride, rows, width, first, self.scale, self.bias, self.activation)


class _Affine(_Fused):
    """The fused step's kernel of a scale, a bias and an activation after any layer."""

    def __init__(self, layers: list[tuple[Callable[..., Any], int | None]], axis: int, scaled: bool, biased: bool,
                 activation: tuple[Callable[..., Any], int] | None) -> None:
        self.layers, self.axis, self.scaled, self.biased = layers, axis, scaled, biased
        self.activation = activation[1] if activation is not None else 0

    def __call__(self, x: np.ndarray, *consts: np.ndarray) -> np.ndarray:
        if self._compiled(x.size) and _fits(x, self.axis, *consts):
            scale = consts[0] if self.scaled else None
            bias = consts[-1] if self.biased else None
            out = np.empty(x.shape, x.dtype)
            _in_rows(x, out, scale, bias, self.axis, self.activation)
            return out
        value, remaining = x, list(consts)
        for compute, const in self.layers:  # the layers' kernels in turn
            if const is None:
                value = compute(value)
            else:
                operand = remaining.pop(0)
                value = compute(value, operand) if const == 1 else compute(operand, value)
        return value


class _Sum(_Fused):
    """The fused step's kernel of an Add of two arrays of one shape and an activation."""

    def __init__(self, add: Callable[..., Any], activation: tuple[Callable[..., Any], int]) -> None:
        self.add, (self.activate, self.activation) = add, activation

    def __call__(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        if self._compiled(a.size) and a.shape == b.shape and a.dtype == b.dtype and a.dtype.kind == "f" \
                and a.flags.c_contiguous and b.flags.c_contiguous:
            from irscatter.ops.elementwise import bias_kernels  # (imports numba: only when used)

            out = np.empty(a.shape, a.dtype)
            kind = a.dtype.type
            flat = (a.reshape(-1), b.reshape(-1), out.reshape(-1))
            spans = threads.spans(a.size, threads.parts(a.size * ELEMENT_WORK))
            threads.run([partial(bias_kernels.summed, *(x[lo:hi] for x in flat), self.activation, *_constants(kind))
                         for lo, hi in spans])
            return out
        return self.activate(self.add(a, b))


def _fits(x: np.ndarray, axis: int, *consts: np.ndarray) -> bool:
    """Whether the compiled pass takes these arrays: a float array in order with the Consts'
    extent along `axis` (counted from the end), the Consts of its type and of no more axes (so
    that they broadcast to it, not it to them)."""
    return isinstance(x, np.ndarray) and x.dtype.kind == "f" and x.flags.c_contiguous and x.flags.writeable \
        and x.ndim >= max(-axis, 2) and all(c.dtype == x.dtype and c.ndim <= x.ndim and c.size == x.shape[axis]
                                            for c in consts)


def _in_rows(source: np.ndarray, out: np.ndarray, scale: np.ndarray | None, bias: np.ndarray | None, axis: int,
             activation: int) -> None:
    """out = activation(source * scale + bias), the Consts along `axis`, as rows [outer x
    channels, inner] (or, with the channels last, rows [outer, channels]) on the thread policy's
    parts of a large array, each a range of rows."""
    if source.size == 0:
        return
    axis %= source.ndim
    channels = source.shape[axis]
    kind = source.dtype.type
    scale = np.ones(channels, source.dtype) if scale is None else np.ascontiguousarray(scale.reshape(-1))
    bias = np.full(channels, -0.0, source.dtype) if bias is None else np.ascontiguousarray(bias.reshape(-1))
    last = axis == source.ndim - 1
    width = channels if last else math.prod(source.shape[axis + 1:])
    rows, targets = source.reshape(-1, width), out.reshape(-1, width)
    spans = threads.spans(rows.shape[0], threads.parts(source.size * ELEMENT_WORK))
    constants = _constants(kind)
    task = partial(_columns, scale=scale, bias=bias, activation=activation, constants=constants) if last \
        else partial(_rows, scale=scale, bias=bias, activation=activation, constants=constants, in_place=source is out)
    if len(spans) == 1:
        task(rows, targets, 0)
    else:
        threads.run([partial(task, rows[lo:hi], targets[lo:hi], lo) for lo, hi in spans])


def _rows(rows: np.ndarray, targets: np.ndarray, first: int, *, scale: np.ndarray, bias: np.ndarray,
          activation: int, constants: tuple, in_place: bool) -> None:
    """The pass over rows from row `first` on: one compiled loop into `targets`, or in place
    (Swish only in place) `_in_place` over the rows, which are a contiguous block."""
    if in_place:
        _in_place(rows.reshape(-1), 0, rows.shape[1], rows.shape[0], rows.shape[1], first, scale, bias, activation)
        return
    from irscatter.ops.elementwise import bias_kernels  # (imports numba: only when used)

    bias_kernels.affine_rows(rows, targets, scale, bias, first, activation, *constants)


def _in_place(flat: np.ndarray, start: int, stride: int, rows: int, width: int, first: int, scale: np.ndarray,
              bias: np.ndarray, activation: int) -> None:
    """activation(x * scale + bias) in place over `rows` rows of `width` elements of `flat`, the
    first at `start`, each `stride` after the one before, the first row channel `first`'s: one
    compiled loop; for Swish (whose scale is 1), a block of rows at a time, the compiled loops
    around numpy's exponential. Each of a block's three calls takes the GIL to start, and the
    two parts of a split pass hand it to each other: blocks of a row or two (16 K elements) made
    such a pass slower on two cores than on one, so a block is BLOCK elements of whole rows."""
    from irscatter.ops.elementwise import bias_kernels  # (imports numba: only when used)

    if not rows or not width:
        return
    kind = flat.dtype.type
    if activation != SWISH:
        bias_kernels.affine_block_in_place(flat, start, stride, rows, width, scale, bias, first, activation,
                                           *_constants(kind))
        return
    step = max(1, BLOCK // width)
    exps = np.empty(min(step, rows) * width, flat.dtype)  # (a part's own: the parts call this side by side)
    for lo in range(0, rows, step):
        count = min(step, rows - lo)
        at, values = start + lo * stride, exps[:count * width]
        bias_kernels.biased_scaled_block(flat, at, stride, count, width, bias, first + lo, kind(-1), values)
        np.exp(values, out=values)
        bias_kernels.divided_by_successor_block(flat, at, stride, count, width, values, kind(1))


def _constants(kind: type) -> tuple:
    """The activations' constants 0, 3 and 6 in the data's type (nothing is widened)."""
    return kind(0), kind(3), kind(6)


def _columns(rows: np.ndarray, targets: np.ndarray, first: int, *, scale: np.ndarray, bias: np.ndarray,
             activation: int, constants: tuple) -> None:
    """The pass over rows [outer, channels]: never in place (a convolution's channels are not its
    last axis; the other chains write an array of their own)."""
    from irscatter.ops.elementwise import bias_kernels  # (imports numba: only when used)

    bias_kernels.affine_columns(rows, targets, scale, bias, activation, *constants)
