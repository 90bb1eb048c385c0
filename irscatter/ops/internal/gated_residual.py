"""GatedResidual (domain `gpu_opset`): the gated residual ("hyper-connection") of Qwen4-Exp-style
models, a residual stream of C branches of D channels stored as [..., C*D], in three modes.

* READ (mode 0) and FINAL_MIX (mode 2): each branch is RMS-normalized over its D channels with
  its own gain (1 + w with `norm_gain_plus_one`, else w): Rbar. Then T = SiLU(Rbar W_down^T / C)
  [..., L], the read gate G = sigmoid(T W_up^T) [..., C*D], and the output mixed = (1/C) sum over
  c of G_c . Rbar_c [..., D]. READ with `produce_write_gate` also gives
  write_gate = 2 sigmoid(Rbar W_inject^T / C) [..., C], in (0, 2).
* WRITE (mode 1): residual_out = residual + write_gate_c . sublayer_y on each branch c
  (sublayer_y [..., D] and write_gate [..., C] share residual's leading dimensions).

Inputs by mode: READ and FINAL_MIX take residual, norm_weight [C*D], w_down [L, C*D], w_up
[C*D, L] and, for READ with `produce_write_gate`, w_inject [C, C*D]; WRITE takes residual,
sublayer_y and write_gate at positions 0, 1 and 2 (messages name them so; the port names
declared are READ's). Every input has one float type; f16 and bf16 compute in f32 and the
outputs are rounded once, to `output_type` when it is a type, else to residual's type.
Edge values follow IEEE arithmetic (a non-finite residual row gives NaN where it reaches).

The domain: OpenVINO's sources hold no OPENVINO_OP for GatedResidual (nor does the pinned
2026.4.1 build). The one implementation found (a GPU-plugin implementation of Qwen4-Exp's GR
kernels) declares it as `ov::intel_gpu::op::GatedResidual` in
src/plugins/intel_gpu/include/intel_gpu/op/gated_residual.hpp, and every op of that namespace
declares the domain "gpu_opset" (RMS, SDPA, SwiGLU, ...). That is the domain taken here.

The page leaves open and irscatter chooses: the rank of residual is 2 or more (its rule), with
any leading dimensions; `lowrank` is checked against the weights only in READ and FINAL_MIX
(the page: unused by WRITE); `produce_write_gate` is ignored in WRITE (the page: unused there).
"""

from __future__ import annotations

import numpy as np

from irscatter.errors import ExecutionError
from irscatter.ir.element_types import ElementType
from irscatter.ir.shapes import Dimension, PartialShape
from irscatter.ops.base import IRBool, Op, OpAttrs, TensorInfo, check
from irscatter.ops.common.numeric import compute_dtype, convert_array
from irscatter.ops.common.types import arithmetic_float, check_float, same_element_type
from irscatter.ops.internal.rms import OptionalType, rms_normalize
from irscatter.ops.registry import register

DOMAIN = "gpu_opset"
READ, WRITE, FINAL_MIX = 0, 1, 2
MODES = {READ: "READ", WRITE: "WRITE", FINAL_MIX: "FINAL_MIX"}
WRITE_INPUTS = ("residual", "sublayer_y", "write_gate")


class GatedResidualAttrs(OpAttrs):
    mode: int
    hc_count: int
    hidden_size: int
    lowrank: int
    epsilon: float = 1e-6
    norm_gain_plus_one: IRBool = True
    produce_write_gate: IRBool = False
    output_type: OptionalType = ElementType.dynamic


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1 / (1 + np.exp(-x))  # exp overflows to inf for very negative x, giving 0 as it should


@register("GatedResidual", 1, domain=DOMAIN)
class GatedResidual(Op):
    """The READ, WRITE and FINAL_MIX computations of a gated residual stream (see the module doc)."""

    labels = {
        "gr-mode": "GatedResidual's mode is not 0 (READ), 1 (WRITE) or 2 (FINAL_MIX), or FINAL_MIX asks for a "
                   "write gate",
        "gr-sizes": "GatedResidual's hc_count or hidden_size is not positive, or (READ, FINAL_MIX) lowrank is not",
        "gr-arity": "GatedResidual has not the inputs or outputs its mode takes",
        "gr-shape": "an input of GatedResidual does not have the shape its mode and attributes give it",
        "gr-output-type": "GatedResidual's output_type is not a floating-point type (or dynamic)",
    }

    Attrs = GatedResidualAttrs
    attrs: GatedResidualAttrs
    inputs = ("residual", "norm_weight", "w_down", "w_up", "w_inject")
    optional_inputs = 2  # WRITE takes three inputs, READ four or five
    outputs = 2  # the most: READ with a write gate

    def _arity(self) -> tuple[int, int]:
        """(inputs, outputs) of the layer's mode, once its attributes are checked."""
        a = self.attrs
        check(a.mode in MODES, "gr-mode", f"mode must be 0 (READ), 1 (WRITE) or 2 (FINAL_MIX), found {a.mode}",
              port=self.port("mode"))
        check(not (a.mode == FINAL_MIX and a.produce_write_gate), "gr-mode",
              "FINAL_MIX produces no write gate: produce_write_gate must be false", port=self.port("produce_write_gate"))
        check(a.hc_count > 0 and a.hidden_size > 0, "gr-sizes",
              f"hc_count ({a.hc_count}) and hidden_size ({a.hidden_size}) must be positive", port=self.port("hc_count"))
        check(a.mode == WRITE or a.lowrank > 0, "gr-sizes", f"lowrank must be positive in {MODES[a.mode]}, "
              f"found {a.lowrank}", port=self.port("lowrank"))
        check(a.output_type is ElementType.dynamic or arithmetic_float(a.output_type), "gr-output-type",
              f"output_type must be a floating-point type or dynamic, found {a.output_type}",
              port=self.port("output_type"))
        if a.mode == WRITE:
            return 3, 1
        return (5, 2) if a.mode == READ and a.produce_write_gate else (4, 1)

    def _check_inputs(self, n_inputs: int) -> None:
        inputs = self._arity()[0]
        check(n_inputs == inputs, "gr-arity", f"{MODES[self.attrs.mode]}{' with a write gate' if inputs == 5 else ''} "
              f"takes {inputs} inputs, the layer has {n_inputs}")

    def check_arity(self, n_inputs: int, n_outputs: int) -> None:
        self._check_inputs(n_inputs)
        outputs = self._arity()[1]
        check(n_outputs == outputs, "gr-arity", f"{MODES[self.attrs.mode]}{' with a write gate' if outputs == 2 else ''}"
              f" has {outputs} output{'s' if outputs > 1 else ''}, the layer declares {n_outputs}")

    def _name(self, position: int) -> str:
        return (WRITE_INPUTS if self.attrs.mode == WRITE else self.inputs)[position]

    def infer(self, *given: TensorInfo) -> TensorInfo | tuple[TensorInfo, ...]:
        self._check_inputs(len(given))
        a = self.attrs
        residual = given[0]
        check_float(self, residual.etype, "residual")
        for position, info in enumerate(given[1:], 1):
            same_element_type(residual, info, f"residual and {self._name(position)} must have the same element type",
                              "same-element-type", self.port(self.inputs[position]))
        etype = residual.etype if a.output_type is ElementType.dynamic else a.output_type
        lead = self._lead(residual.shape)
        width = a.hc_count * a.hidden_size
        if a.mode == WRITE:
            self._expect(1, given[1].shape, lead, [a.hidden_size])
            self._expect(2, given[2].shape, lead, [a.hc_count])
            return TensorInfo(etype, residual.shape)
        self._expect(1, given[1].shape, [], [width])
        self._expect(2, given[2].shape, [], [a.lowrank, width])
        self._expect(3, given[3].shape, [], [width, a.lowrank])
        mixed = TensorInfo(etype, self._with_last(lead, a.hidden_size))
        if len(given) == 5:
            self._expect(4, given[4].shape, [], [a.hc_count, width])
            return mixed, TensorInfo(etype, self._with_last(lead, a.hc_count))
        return mixed

    def _lead(self, residual: PartialShape) -> list[Dimension] | None:
        """residual's leading dimensions (all but the last), its last checked to be C*D."""
        if not residual.rank_is_static:
            return None
        width = self.attrs.hc_count * self.attrs.hidden_size
        check(residual.rank >= 2, "gr-shape", f"residual must have rank 2 or more, found {residual}",
              port=self.port("residual"))
        check(residual[-1].contains(width), "gr-shape", f"residual's last dimension must be hc_count * hidden_size "
              f"= {width}, found {residual}", port=self.port("residual"))
        return list(residual.ranked_dims[:-1])

    @staticmethod
    def _with_last(lead: list[Dimension] | None, last: int) -> PartialShape:
        return PartialShape.dynamic_rank() if lead is None else PartialShape.of([*lead, Dimension.static(last)])

    def _expect(self, position: int, shape: PartialShape, lead: list[Dimension] | None, tail: list[int]) -> None:
        """Input `position` has shape lead + tail (an unknown lead: any leading dimensions)."""
        if not shape.rank_is_static:
            return
        dims = ", ".join([*(str(d) for d in lead or []), *(str(t) for t in tail)])
        want = f"{'[..., ' if lead is None else '['}{dims}]"
        message = f"{self._name(position)} must have shape {want} in {MODES[self.attrs.mode]}, found {shape}"
        port = self.port(self.inputs[position])
        if lead is None:
            check(shape.rank >= len(tail), "gr-shape", message, port=port)
            lead = list(shape.ranked_dims[: shape.rank - len(tail)])
        expected = [*lead, *(Dimension.static(t) for t in tail)]
        check(shape.rank == len(expected) and all(d.compatible(e) for d, e in zip(shape.ranked_dims, expected)),
              "gr-shape", message, port=port)

    def compute(self, *arrays: np.ndarray) -> np.ndarray | tuple[np.ndarray, ...]:
        a = self.attrs
        etype = ElementType.from_dtype(arrays[0].dtype)
        work = compute_dtype(etype)
        target = etype if a.output_type is ElementType.dynamic else a.output_type
        values = [x.astype(work, copy=False) for x in arrays]
        with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
            results = self._write(*values) if a.mode == WRITE else self._read(*values)
        out = tuple(convert_array(r, ElementType.from_dtype(r.dtype), target) for r in results)
        return out if len(out) > 1 else out[0]

    def _write(self, residual: np.ndarray, y: np.ndarray, gate: np.ndarray) -> tuple[np.ndarray]:
        c, d = self.attrs.hc_count, self.attrs.hidden_size
        if y.shape[:-1] != residual.shape[:-1] or gate.shape[:-1] != residual.shape[:-1]:
            raise ExecutionError(f"sublayer_y {list(y.shape)} and write_gate {list(gate.shape)} must share residual "
                                  f"{list(residual.shape)}'s leading dimensions", label="gr-shape",
                                  port=self.port("norm_weight"))
        branches = residual.reshape(*residual.shape[:-1], c, d)
        return ((branches + gate[..., :, None] * y[..., None, :]).reshape(residual.shape),)

    def _read(self, residual: np.ndarray, gain: np.ndarray, w_down: np.ndarray, w_up: np.ndarray,
              w_inject: np.ndarray | None = None) -> tuple[np.ndarray, ...]:
        a = self.attrs
        c, d = a.hc_count, a.hidden_size
        lead = residual.shape[:-1]
        rows = residual.reshape(-1, c, d)
        weight = gain.reshape(c, d) + (1 if a.norm_gain_plus_one else 0)
        normed = rms_normalize(rows, a.epsilon) * weight  # [rows, C, D]
        flat = normed.reshape(-1, c * d)
        low = flat @ w_down.T / c
        read_gate = _sigmoid((low * _sigmoid(low)) @ w_up.T).reshape(-1, c, d)
        mixed = np.add.reduce(read_gate * normed, axis=1) / c
        results = [mixed.reshape(*lead, d)]
        if w_inject is not None:
            results.append((2 * _sigmoid(flat @ w_inject.T / c)).reshape(*lead, c))
        return tuple(results)
