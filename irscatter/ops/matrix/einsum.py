"""Einsum-7: the Einstein summation of its inputs by `equation`, computed with `np.einsum`.

The equation is `<subscript>,<subscript>,...` (implicit mode) or the same followed by
`-> <subscript>` (explicit mode). A subscript is a sequence of letters (A-Z, a-z, case
sensitive) with at most one ellipsis `...`; blanks are ignored anywhere. A label repeated in
one input subscript takes that input's diagonal (its dimensions must be equal); labels absent
from the output are summed. In implicit mode the output is the labels that occur exactly once
on the left, sorted (capitals first), after the ellipsis when there is one.

Dimensions that share a label across inputs, and the dimensions the ellipses cover, broadcast
by numpy's rules, as the spec says (a dimension 1 stretches to the other). OpenVINO's shape
inference departs in two places: it requires equal dimensions for a label shared across
inputs (it refuses `i,i->` on shapes [1] and [3]), and in implicit mode it keeps a label that
is repeated within one subscript but occurs in no other (`ii` gives a matrix there; the spec
and numpy give the trace). irscatter follows the spec in both.

T is any numeric type. Integers multiply and sum in their own type (wrapping); f16 and bf16
compute in f32 and round once.
"""

from __future__ import annotations

import numpy as np

from irscatter.ir.broadcast import BroadcastError, broadcast_numpy
from irscatter.ir.element_types import ElementType
from irscatter.ir.shapes import Dimension, PartialShape
from irscatter.ops.base import Op, OpAttrs, TensorInfo, check, fail
from irscatter.ops.common.numeric import compute_dtype, convert_array, from_compute
from irscatter.ops.registry import register

ELLIPSIS = "."  # one character stands for "..." once an equation is parsed


class EinsumAttrs(OpAttrs):
    equation: str


def _labels(subscript: str, what: str) -> str:
    """A subscript's labels, with the ellipsis as one '.'; malformed subscripts are refused."""
    check("..." not in subscript.replace("...", "", 1), "einsum-equation",
          f"{what} {subscript!r} has more than one ellipsis")
    for c in subscript.replace("...", "", 1):
        check(c.isascii() and c.isalpha(), "einsum-equation",
              f"{what} {subscript!r} has {c!r}, which is neither a letter nor part of an ellipsis")
    labels = subscript.replace("...", ELLIPSIS, 1)
    return labels


def parse_equation(equation: str) -> tuple[list[str], str]:
    """The input subscripts and the output subscript, each with '.' for an ellipsis."""
    text = equation.replace(" ", "")
    check(text.count("->") <= 1, "einsum-equation", f"equation {equation!r} has more than one '->'")
    left, arrow, right = text.partition("->")
    inputs = [_labels(s, "input subscript") for s in left.split(",")]
    if arrow:
        output = _labels(right, "output subscript")
        check(len(set(output)) == len(output), "einsum-equation",
              f"output subscript {right!r} repeats a label")
        known = set("".join(inputs))
        for c in output:
            check(c in known, "einsum-equation",
                  f"label {'...' if c == ELLIPSIS else c!r} of the output subscript is in no input subscript")
    else:
        every = "".join(inputs).replace(ELLIPSIS, "")
        output = "".join(sorted(c for c in set(every) if every.count(c) == 1))
        if any(ELLIPSIS in s for s in inputs):
            output = ELLIPSIS + output
    return inputs, output


def _merge(a: Dimension, b: Dimension, label: str, port: str) -> Dimension:
    try:
        return broadcast_numpy(PartialShape.of([a]), PartialShape.of([b])).ranked_dims[0]
    except BroadcastError:
        fail("einsum-dims", f"dimensions {a} and {b} labelled {label!r} neither match nor broadcast",
             port=port)


@register("Einsum", 7)
class Einsum(Op):
    labels = {
        "einsum-equation": "the equation is malformed (a bad character, two ellipses or '->', an output "
                           "label that repeats or is in no input)",
        "einsum-inputs": "the equation has more or fewer input subscripts than the layer has inputs",
        "einsum-rank": "an input's rank differs from the number of dimensions its subscript covers",
        "einsum-dims": "dimensions that share a label differ and are not 1",
    }

    Attrs = EinsumAttrs
    attrs: EinsumAttrs
    inputs = ("inputs",)
    variadic = True

    def infer(self, *operands: TensorInfo) -> TensorInfo:
        port = self.port("inputs")
        subscripts, output = parse_equation(self.attrs.equation)
        check(len(subscripts) == len(operands), "einsum-inputs",
              f"the equation has {len(subscripts)} input subscripts for {len(operands)} inputs", port=port)
        etype = ElementType.dynamic
        for k, info in enumerate(operands):
            if info.etype is not ElementType.dynamic:
                check(etype is ElementType.dynamic or info.etype is etype, "same-element-type",
                      f"inputs must share one element type, found {etype} and {info.etype}", port=f"input {k}")
                etype = info.etype
        check(etype is ElementType.dynamic or etype.is_float or etype.is_integral, "numeric-type",
              f"Einsum takes numeric tensors, found {etype}", port=port)
        sizes: dict[str, Dimension] = {}
        ellipsis: PartialShape | None = None
        dynamic = False
        for k, (labels, info) in enumerate(zip(subscripts, operands)):
            if not info.shape.rank_is_static:
                dynamic = dynamic or ELLIPSIS in labels
                for c in labels:
                    sizes.setdefault(c, Dimension.dynamic())
                continue
            dims = info.shape.ranked_dims
            named = len(labels) - (ELLIPSIS in labels)
            check(len(dims) == named if ELLIPSIS not in labels else len(dims) >= named, "einsum-rank",
                  f"input {k} has rank {len(dims)}, its subscript {labels.replace(ELLIPSIS, '...')!r} covers "
                  f"{'at least ' if ELLIPSIS in labels else ''}{named}", port=f"input {k}")
            covered = len(dims) - named
            own: dict[str, Dimension] = {}
            position = 0
            for c in labels:
                if c == ELLIPSIS:
                    part = PartialShape.of(dims[position:position + covered])
                    position += covered
                    try:
                        ellipsis = part if ellipsis is None else broadcast_numpy(ellipsis, part)
                    except BroadcastError as e:
                        fail("einsum-dims", f"the dimensions the ellipses cover do not broadcast: {e}",
                             port=f"input {k}")
                    continue
                d = dims[position]
                position += 1
                if c in own:  # a diagonal: the repeated dimensions must be equal
                    check(own[c].compatible(d), "einsum-dims",
                          f"input {k} repeats label {c!r} on dimensions {own[c]} and {d}, which differ",
                          port=f"input {k}")
                    continue
                own[c] = d
                sizes[c] = d if c not in sizes else _merge(sizes[c], d, c, f"input {k}")
        if dynamic and ELLIPSIS in output:
            return TensorInfo(etype, PartialShape.dynamic_rank())
        out: list[Dimension] = []
        for c in output:
            if c == ELLIPSIS:
                out.extend(ellipsis.ranked_dims if ellipsis is not None else ())
            else:
                out.append(sizes[c])
        return TensorInfo(etype, PartialShape.of(out))

    def compute(self, *operands: np.ndarray) -> np.ndarray:
        subscripts, output = parse_equation(self.attrs.equation)
        etype = ElementType.from_dtype(operands[0].dtype)
        # integers in 64 bits, wrapped back to their type once (the same result modulo 2^bits)
        work = compute_dtype(etype) if etype.is_float else np.dtype(np.uint64 if etype is ElementType.u64 else np.int64)
        spec = ",".join(s.replace(ELLIPSIS, "...") for s in subscripts) + "->" + output.replace(ELLIPSIS, "...")
        with np.errstate(over="ignore", invalid="ignore"):
            out = np.asarray(np.einsum(spec, *(a.astype(work, copy=False) for a in operands), dtype=work))
        if not out.flags.owndata:  # a transpose or a diagonal is a view of an input
            out = out.copy()
        if etype.is_integral:
            return convert_array(out, ElementType.from_dtype(work), etype)
        return from_compute(out, etype)
