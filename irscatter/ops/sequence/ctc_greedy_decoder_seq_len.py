"""CTCGreedyDecoderSeqLen-6: best-path decoding of CTC logits (TensorFlow's ctc_greedy_decoder),
with the sequence lengths given as integers.

data is [N, T, C] (batch first) of a floating-point type, sequence_length [N] and the optional
blank_index (a scalar or a 1-element 1-D tensor, C - 1 when left out) of one type T_I, i32 or
i64. For each batch b the first sequence_length[b] steps are decoded: the class of a step is
the first index of the largest value of data[b, t, :]; a step whose class is blank_index emits
nothing, nor does one whose class equals the previous step's when `merge_repeated` is true (the
previous step counts even when it was a blank: "a blank a" gives "a a"). Output 0 [N, T] of
`classes_index_type` holds the emitted classes from the front and -1 after them; output 1 [N] of
`sequence_length_type` how many each row emitted.

Choices where the spec leaves it open, as OpenVINO's reference and CPU plugin do:
  * the best class is found by a scan that moves on only to a strictly larger value: a NaN at
    class 0 makes class 0 the best, and a NaN elsewhere is passed over; f16 and bf16 compare in
    f32 (exactly);
  * a blank_index outside [0, C) names no class, so every step's class is emitted.
A sequence_length outside [0, T] is refused (`sequence-lengths-range`; the spec requires at most
T, the CPU plugin refuses more than T and both read out of bounds below 0), and so is a step to
decode over 0 classes (`ctc-classes`).
"""

from __future__ import annotations

from typing import Annotated, Literal

import numpy as np

from irscatter.errors import ExecutionError
from irscatter.ir.element_types import ElementType
from irscatter.ir.shapes import Dimension, PartialShape
from irscatter.ops.base import IRBool, Lower, Op, OpAttrs, TensorInfo, check, required
from irscatter.ops.common.ranges import Bounds, extent, indices_within, lengths_within
from irscatter.ops.common.types import check_float, same_element_type
from irscatter.ops.registry import register
from irscatter.ops.sequence.ctc_greedy_decoder import best_classes, check_classes, collapse_path, merge_dims

IndexType = Annotated[Literal["i32", "i64"], Lower]


def check_index_type(op: Op, info: TensorInfo, name: str) -> None:
    """The CTC ops' lengths, labels and blank_index are i32 or i64."""
    check(info.etype in (ElementType.dynamic, ElementType.i32, ElementType.i64), "ctc-index-type",
          f"{name} must be of type i32 or i64, found {info.etype}", port=op.port(name))


class CTCGreedyDecoderSeqLenAttrs(OpAttrs):
    merge_repeated: IRBool = True
    classes_index_type: IndexType = "i32"
    sequence_length_type: IndexType = "i32"


@register("CTCGreedyDecoderSeqLen", 6)
class CTCGreedyDecoderSeqLen(Op):
    Attrs = CTCGreedyDecoderSeqLenAttrs
    attrs: CTCGreedyDecoderSeqLenAttrs
    inputs = ("data", "sequence_length", "blank_index")
    optional_inputs = 1
    outputs = 2

    def input_range(self, position: int, infos) -> Bounds | None:
        if position == 1:
            return lengths_within(extent(infos[0], 1))  # data is [N, T, C]
        return indices_within(extent(infos[0], 2)) if position == 2 else None

    def infer(self, data: TensorInfo, sequence_length: TensorInfo,
              blank_index: TensorInfo | None = None) -> tuple[TensorInfo, TensorInfo]:
        check_float(self, data.etype, "data")
        check_index_type(self, sequence_length, "sequence_length")
        if blank_index is not None:
            check_index_type(self, blank_index, "blank_index")
            same_element_type(sequence_length, blank_index, "sequence_length and blank_index must share one element "
                              "type", "same-element-type", self.port("blank_index"))
            shape = blank_index.shape
            if shape.rank_is_static:
                check(shape.rank == 0 or (shape.rank == 1 and shape[0].contains(1)), "scalar-input",
                      f"blank_index must be a scalar or hold one element, found shape {shape}",
                      port=self.port("blank_index"))
        batch, time = Dimension.dynamic(), Dimension.dynamic()
        if data.shape.rank_is_static:
            check(data.shape.rank == 3, "ctc-shape", f"data must be [N, T, C], found shape {data.shape}",
                  port=self.port("data"))
            batch, time = data.shape[0], data.shape[1]
        if sequence_length.shape.rank_is_static:
            check(sequence_length.shape.rank == 1, "ctc-shape",
                  f"sequence_length must be [N], found shape {sequence_length.shape}",
                  port=self.port("sequence_length"))
            batch = required(merge_dims(batch, sequence_length.shape[0]), "ctc-shape",
                             f"sequence_length {sequence_length.shape} must hold one length per batch of data "
                             f"{data.shape}", port=self.port("sequence_length"))
        return (TensorInfo(ElementType[self.attrs.classes_index_type], PartialShape.of([batch, time])),
                TensorInfo(ElementType[self.attrs.sequence_length_type], PartialShape.of([batch])))

    def compute(self, data: np.ndarray, sequence_length: np.ndarray,
                blank_index: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        batch, time, classes = data.shape
        lengths = sequence_length.astype(np.int64)
        bad = (lengths < 0) | (lengths > time)
        if np.any(bad):
            k = int(np.flatnonzero(bad)[0])
            raise ExecutionError(f"sequence_length[{k}] is {lengths[k]}, outside [0, {time}]",
                                 port=self.port("sequence_length"), label="sequence-lengths-range")
        check_classes(self, classes, lengths)
        blank = classes - 1 if blank_index is None else int(blank_index.reshape(-1)[0])
        if classes == 0:
            out, counts = np.full((batch, time), -1, np.int64), np.zeros(batch, np.int64)
        else:
            steps = best_classes(data)
            out, counts = collapse_path(steps, lengths, steps == blank, self.attrs.merge_repeated)
        return (out.astype(ElementType[self.attrs.classes_index_type].dtype),
                counts.astype(ElementType[self.attrs.sequence_length_type].dtype))
