"""What the recurrent cells and sequences share: their attributes, their shape inference, the
gate activations, one time step of each cell kind, and the loop over time steps.

Layouts (OpenVINO's, as the spec pages give them):

* gates are stacked along the rows of W, R and B: RNN one block, GRU z, r, h; LSTM f, i, c, o.
  GRU with `linear_before_reset` has a fourth bias block, the recurrence bias of h (B is then
  [Wb_z + Rb_z, Wb_r + Rb_r, Wb_h, Rb_h]).
* a sequence's X is [batch, seq_length, input_size], its states [batch, num_directions, hidden],
  its weights [num_directions, gates * hidden, ...]; Y is [batch, num_directions, seq_length,
  hidden]. With `direction="bidirectional"` direction 0 runs forward and direction 1 in reverse.

Rules every op here follows:

* `clip` bounds each gate's pre-activation to [-clip, clip] before the activation (never the
  cell state C before LSTM's h). The spec's default is infinity (no clipping); a clip of 0 also
  means no clipping, because that is what OpenVINO writes for "no clip" in every IR it saves.
  A negative or NaN clip is refused (the spec says "a positive floating-point number";
  OpenVINO treats any clip <= 0 as no clipping).
* activations are relu, sigmoid and tanh (the spec's list; OpenVINO's CPU plugin takes no
  other). None of them has a parameter, so `activations_alpha` and `activations_beta` are
  parsed and left unused, as OpenVINO does. Activations past the ones an op applies are
  ignored, as OpenVINO does; fewer are refused.
* the `hidden_size` attribute must equal the hidden dimension of the inputs (OpenVINO's shape
  inference ignores the attribute; the spec says it is the hidden state size).
* f16 and bf16 compute in f32, f64 in f64, and each output is rounded once at the end
  (OpenVINO's core reference rounds every intermediate of every step to the element type).
* sequence_lengths: step t of a sequence is valid while t < its length. Y is zero past the
  length; Ho (and Co) hold the state after the last valid step; a sequence of length 0 gives
  zeros for Ho and Co, as OpenVINO's core reference and CPU plugin do (not the initial state).
  A reverse direction reverses each sequence within its own length: position p < length of Y
  holds the state after reading X[p], reading from X[length - 1] down to X[0]. A length below 0
  (undefined in the spec) or above seq_length is refused when the op runs (OpenVINO's CPU plugin
  refuses lengths past seq_length in reverse and answers Ho = 0 for them forward).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Annotated, ClassVar, Literal, overload

import numpy as np
from pydantic import BeforeValidator, Field

from irscatter.errors import ExecutionError
from irscatter.ir.element_types import ElementType
from irscatter.ir.shapes import Dimension, PartialShape
from irscatter.ops.base import FloatList, Lower, Op, OpAttrs, TensorInfo, check
from irscatter.ops.common.numeric import compute_dtype, from_compute
from irscatter.ops.common.products import matmul
from irscatter.ops.common.ranges import Bounds, extent, lengths_within
from irscatter.ops.common.types import check_float, check_integral, same_element_type


def _name_list(value):
    if isinstance(value, str):
        return tuple(v.strip().lower() for v in value.split(",")) if value.strip() else ()
    return value


ActivationName = Literal["relu", "sigmoid", "tanh"]
Activations = Annotated[tuple[ActivationName, ...], BeforeValidator(_name_list)]
Direction = Annotated[Literal["forward", "reverse", "bidirectional"], Lower]
HiddenSize = Annotated[int, Field(gt=0)]


class RecurrentAttrs(OpAttrs):
    """The attributes every cell and sequence has; each op sets its own default activations."""

    hidden_size: HiddenSize
    activations: Activations
    activations_alpha: FloatList = ()
    activations_beta: FloatList = ()
    clip: float = math.inf


class SequenceAttrs(RecurrentAttrs):
    """A sequence's: the attributes every cell has, and the direction it runs in."""

    direction: Direction


def _direction_text(attrs: RecurrentAttrs) -> str:
    return f", direction {attrs.direction}" if isinstance(attrs, SequenceAttrs) else ""


# --- activations and gates --------------------------------------------------------------------


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1 / (1 + np.exp(-x))  # exp overflows to inf for very negative x, giving 0 as it should


ACTIVATIONS: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "relu": lambda x: np.maximum(x, 0),
    "sigmoid": _sigmoid,
    "tanh": np.tanh,
}


def gate(name: str, clip: float) -> Callable[[np.ndarray], np.ndarray]:
    """The activation `name`, applied after clipping to [-clip, clip] when clip is in (0, inf)."""
    f = ACTIVATIONS[name]
    if 0 < clip < math.inf:
        return lambda x: f(np.clip(x, -clip, clip))
    return f


# --- one time step of each cell kind ----------------------------------------------------------
# Every step works on all directions and batch rows at once: xw is X_t W^T [dirs, batch, gates*hidden],
# a state is [dirs, batch, hidden], rt is R^T [dirs, hidden, gates*hidden] and b [dirs, 1, blocks*hidden].

States = tuple[np.ndarray, ...]
Step = Callable[[np.ndarray, States, np.ndarray, np.ndarray], States]


def rnn_step(f: Callable) -> Step:
    """Ht = f(Xt W^T + Ht-1 R^T + B)."""

    def step(xw, states, rt, b):
        (h,) = states
        return (f(xw + (h @ rt + b)),)

    return step


def _gru_gates(f: Callable, g: Callable, linear_before_reset: bool, xw: np.ndarray, h: np.ndarray, rt: np.ndarray,
               b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """GRU's update gate zt = f(Xt Wz^T + Ht-1 Rz^T + Bz) and candidate ht: with rt likewise,
    g(Xt Wh^T + (rt . Ht-1) Rh^T + Bh) or, linear before reset, g(Xt Wh^T + rt . (Ht-1 Rh^T + Rbh) + Wbh)."""
    n = h.shape[-1]
    hzr = h @ rt[..., : 2 * n]
    z = f(xw[..., :n] + (hzr[..., :n] + b[..., :n]))
    r = f(xw[..., n: 2 * n] + (hzr[..., n:] + b[..., n: 2 * n]))
    if linear_before_reset:
        candidate = g(xw[..., 2 * n:] + (r * (h @ rt[..., 2 * n:] + b[..., 3 * n:]) + b[..., 2 * n: 3 * n]))
    else:
        candidate = g(xw[..., 2 * n:] + ((r * h) @ rt[..., 2 * n:] + b[..., 2 * n: 3 * n]))
    return z, candidate


def gru_step(f: Callable, g: Callable, linear_before_reset: bool) -> Step:
    """Ht = (1 - zt) . ht + zt . Ht-1, zt and ht as `_gru_gates` gives them."""

    def step(xw, states, rt, b):
        (h,) = states
        z, candidate = _gru_gates(f, g, linear_before_reset, xw, h, rt, b)
        return ((1 - z) * candidate + z * h,)

    return step


def augru_step(f: Callable, g: Callable) -> Step:
    """GRU with an attentional update gate (AUGRU): GRU's gates without linear_before_reset, and
    zt' = (1 - at) . zt in place of zt. The attention score at comes in as the last column of xw
    (`columns` of `run_cell` and `run_sequence`)."""

    def step(xw, states, rt, b):
        (h,) = states
        z, candidate = _gru_gates(f, g, False, xw[..., :-1], h, rt, b)
        z = (1 - xw[..., -1:]) * z
        return ((1 - z) * candidate + z * h,)

    return step


def lstm_step(f: Callable, g: Callable, h_act: Callable, peepholes: np.ndarray | None = None,
              input_forget: bool = False) -> Step:
    """Gates f, i, c, o of Xt W^T + Ht-1 R^T + B; with peepholes P = [Pf, Pi, Po] the f and i gates
    add P . Ct-1 and the o gate P . Ct; with `input_forget` it = 1 - ft. Ct = ft . Ct-1 + it . ct,
    Ht = ot . h(Ct)."""

    def step(xw, states, rt, b):
        h, c = states
        n = h.shape[-1]
        pre = xw + (h @ rt + b)
        if peepholes is None:
            ft = f(pre[..., :n])
            it = 1 - ft if input_forget else f(pre[..., n: 2 * n])
        else:
            ft = f(pre[..., :n] + peepholes[..., :n] * c)
            it = 1 - ft if input_forget else f(pre[..., n: 2 * n] + peepholes[..., n: 2 * n] * c)
        cell = ft * c + it * g(pre[..., 2 * n: 3 * n])
        out = pre[..., 3 * n:] if peepholes is None else pre[..., 3 * n:] + peepholes[..., 2 * n:] * cell
        return f(out) * h_act(cell), cell

    return step


# --- running a cell or a sequence -------------------------------------------------------------


def run_cell(step: Step, x: np.ndarray, states: Sequence[np.ndarray], w: np.ndarray, r: np.ndarray,
             b: np.ndarray, columns: np.ndarray | None = None) -> tuple[np.ndarray, ...]:
    """One step of a cell: x [batch, input], states [batch, hidden], w, r 2-D, b 1-D, all in the
    compute dtype; `columns` [batch, k], when given, are appended to X W^T for the step to read
    (AUGRU's attention score). Returns the new states."""
    xw = matmul(x, w.T)[None]
    if columns is not None:
        xw = np.concatenate([xw, columns[None]], axis=-1)
    new = step(xw, tuple(s[None] for s in states), r.T[None], b[None, None])
    return tuple(s[0] for s in new)


def run_sequence(step: Step, x: np.ndarray, states: Sequence[np.ndarray], lengths: np.ndarray, w: np.ndarray,
                 r: np.ndarray, b: np.ndarray, reverse: Sequence[bool],
                 columns: np.ndarray | None = None) -> tuple[np.ndarray, ...]:
    """A sequence of steps (one per time step, every direction and batch row at once): x [batch,
    seq, input], states [batch, dirs, hidden], lengths [batch] (checked to lie in [0, seq]),
    w, r [dirs, rows, ...], b [dirs, rows]; `reverse[d]` says direction d runs backwards;
    `columns` [batch, seq, k], when given, are appended to each step's X W^T, in every direction
    (AUGRU's attention score). Returns Y [batch, dirs, seq, hidden] and the final states
    [batch, dirs, hidden]."""
    batch, seq = x.shape[:2]
    dirs, hidden = w.shape[0], states[0].shape[-1]
    # X W^T of every step at once: [dirs, batch, seq, gates*hidden], a product under the thread
    # policy (a step's own products are small, and a BLAS limit per step would cost more)
    rows = x.reshape(batch * seq, x.shape[2])
    xw = np.stack([matmul(rows, w[d].T) for d in range(dirs)]).reshape(dirs, batch, seq, w.shape[1])
    if columns is not None:
        xw = np.concatenate([xw, np.broadcast_to(columns, (dirs, *columns.shape))], axis=-1)
    steps = np.arange(seq)
    valid = steps[None, :] < lengths[:, None]  # [batch, seq]
    # order[d, n, t]: the position of X (and Y) that step t of direction d reads (writes)
    order = np.broadcast_to(steps, (dirs, batch, seq)).copy()
    for d, backwards in enumerate(reverse):
        if backwards:
            order[d] = np.where(valid, lengths[:, None] - 1 - steps, steps)
    xw = np.take_along_axis(xw, order[..., None], axis=2)
    rt, bias = np.ascontiguousarray(np.swapaxes(r, 1, 2)), b[:, None, :]
    current = tuple(np.swapaxes(s, 0, 1) for s in states)  # [dirs, batch, hidden]
    ys = np.zeros((dirs, batch, seq, hidden), dtype=x.dtype)
    for t in range(seq):
        new = step(xw[:, :, t], current, rt, bias)
        keep = valid[None, :, t, None]
        current = tuple(np.where(keep, n, s) for n, s in zip(new, current))
        ys[:, :, t] = np.where(keep, new[0], 0)
    y = np.zeros_like(ys)
    np.put_along_axis(y, order[..., None], ys, axis=2)
    empty = (lengths == 0)[None, :, None]
    finals = tuple(np.swapaxes(np.where(empty, 0, s), 0, 1) for s in current)
    return (np.ascontiguousarray(y.transpose(1, 0, 2, 3)), *(np.ascontiguousarray(f) for f in finals))


def sequence_lengths(op: Op, lengths: np.ndarray, seq: int) -> np.ndarray:
    """The lengths as int64, refused unless each lies in [0, seq]."""
    values = np.asarray(lengths).astype(np.int64)
    bad = (values < 0) | (values > seq)
    if bad.any():
        raise ExecutionError(f"sequence_lengths holds {int(values[bad][0])}, outside [0, {seq}] (the seq_length of X)",
                             label="sequence-lengths-range", port=op.port("sequence_lengths"))
    return values


# --- the shared op base -----------------------------------------------------------------------


def _merge(dims: Sequence[Dimension], what: str, port: str) -> Dimension:
    lo, hi = 0, None
    for d in dims:
        lo = max(lo, d.min)
        hi = d.max if hi is None else hi if d.max is None else min(hi, d.max)
    check(hi is None or lo <= hi, "recurrent-shape",
          f"the {what} dimensions of the inputs disagree ({', '.join(map(str, dims))})", port=port)
    return Dimension(min=lo, max=hi)


class Recurrent(Op):
    """The inference every cell and sequence shares, and the conversion in and out of the
    compute dtype. A subclass says how many gate blocks W and R stack (`gates`), how many states
    it carries (`states`: H, or H and C), how many activations it applies and whether it is a
    sequence; its `inputs` name the ports in OpenVINO's order (X, the states, for a sequence
    sequence_lengths, then W, R, B, and for LSTMCell-1 P)."""

    attrs: RecurrentAttrs
    gates: ClassVar[int]
    states: ClassVar[int] = 1
    activation_count: ClassVar[int]
    sequence: ClassVar[bool] = False

    def bias_blocks(self) -> int:
        return self.gates

    def directions(self) -> int:
        """num_directions: a sequence's, from its `direction` (cells have no such attribute)."""
        return 2 if isinstance(self.attrs, SequenceAttrs) and self.attrs.direction == "bidirectional" else 1

    def gate_functions(self) -> list[Callable[[np.ndarray], np.ndarray]]:
        """The op's activations (checked to be enough), each clipped as the attribute says but
        LSTM's h, whose input is the cell state rather than a gate (OpenVINO never clips it)."""
        names = self.attrs.activations[: self.activation_count]
        return [gate(name, math.inf if k == 2 else self.attrs.clip) for k, name in enumerate(names)]

    def check_attributes(self) -> None:
        clip = self.attrs.clip
        check(not math.isnan(clip) and clip >= 0, "recurrent-clip",
              f"clip must be a positive number (or 0 for no clipping), found {clip}", port=self.port("clip"))
        found = len(self.attrs.activations)
        check(found >= self.activation_count, "recurrent-activations",
              f"{self.type_name} applies {self.activation_count} activation functions, "
              f"the layer names {found}", port=self.port("activations"))

    def input_range(self, position: int, infos) -> Bounds | None:
        if self.sequence and self.inputs[position] == "sequence_lengths":
            return lengths_within(extent(infos[0], 1))  # X is [batch, seq_length, input_size]
        return None

    def infer(self, *infos: TensorInfo) -> TensorInfo | tuple[TensorInfo, ...]:
        self.check_attributes()
        given = dict(zip(self.inputs, infos))
        lengths = given.pop("sequence_lengths", None)
        first = self.inputs[0]
        etype = given[first].etype
        for name, info in given.items():
            etype = same_element_type(TensorInfo(etype, PartialShape.dynamic_rank()), info,
                                      f"{first} and {name} must have the same element type", "same-element-type",
                                      self.port(name))
        check_float(self, etype, first)
        if lengths is not None:
            check_integral(lengths, "sequence_lengths", self.port("sequence_lengths"), "sequence-lengths-type")

        extra = 1 if self.sequence else 0  # a sequence's inputs have one axis more (seq or dirs)
        hidden = self.attrs.hidden_size
        ranks = {name: 2 + extra for name in self.inputs[: 1 + self.states]}
        ranks.update(W=2 + extra, R=2 + extra, B=1 + extra, P=1, sequence_lengths=1)
        shapes = {name: info.shape for name, info in zip(self.inputs, infos)}
        for name, shape in shapes.items():
            if shape.rank_is_static:
                check(shape.rank == ranks[name], "recurrent-rank",
                      f"{name} must have rank {ranks[name]}, found {shape}", port=self.port(name))
        known = {name: shape for name, shape in shapes.items() if shape.rank_is_static}
        state_names = self.inputs[1: 1 + self.states]

        batch = _merge([known[n][0] for n in (first, *state_names, "sequence_lengths") if n in known],
                       "batch", self.port(state_names[0]))
        if "W" in known and first in known:
            _merge([known[first][-1], known["W"][-1]], "input_size", self.port("W"))
        rows = {"W": self.gates * hidden, "R": self.gates * hidden, "B": self.bias_blocks() * hidden}
        expected = [(n, -1, hidden) for n in state_names] + [("R", -1, hidden)]
        expected += [(n, -2 if n != "B" else -1, size) for n, size in rows.items()]
        if self.sequence:
            dirs = self.directions()
            expected += [(n, 1, dirs) for n in state_names] + [(n, 0, dirs) for n in ("W", "R", "B")]
        for name, axis, size in expected:
            if name in known:
                check(known[name][axis].contains(size), "recurrent-shape",
                      f"{name} has shape {known[name]}: dimension {axis % known[name].rank} must be {size} "
                      f"(hidden_size {hidden}{_direction_text(self.attrs)})",
                      port=self.port(name))
        if not self.sequence:
            out = TensorInfo(etype, PartialShape.of([batch, hidden]))
            return (out,) * self.states if self.states > 1 else out
        seq = known[first][1] if first in known else Dimension.dynamic()
        y = TensorInfo(etype, PartialShape.of([batch, self.directions(), seq, hidden]))
        state = TensorInfo(etype, PartialShape.of([batch, self.directions(), hidden]))
        return (y, *(state,) * self.states)


@overload
def to_work(arrays: Sequence[np.ndarray]) -> tuple[ElementType, list[np.ndarray]]: ...


@overload
def to_work(arrays: Sequence[np.ndarray | None]) -> tuple[ElementType, list[np.ndarray | None]]: ...


def to_work(arrays: Sequence[np.ndarray | None]) -> tuple[ElementType, Sequence[np.ndarray | None]]:
    """The element type of the first array, and every array in its compute dtype (views where
    they already are: the kernels never write into them)."""
    first = arrays[0]
    assert first is not None  # X, which no op leaves out
    etype = ElementType.from_dtype(first.dtype)
    dtype = compute_dtype(etype)
    return etype, [None if a is None else np.asarray(a, dtype=dtype) for a in arrays]


def finish(etype: ElementType, results: Sequence[np.ndarray]) -> tuple[np.ndarray, ...]:
    """The outputs rounded once to the element type (a cell of one output takes the first)."""
    return tuple(from_compute(np.asarray(v, dtype=compute_dtype(etype)), etype) for v in results)
