"""Multinomial-13: num_samples class indices per batch row, drawn from the row's probabilities.

probs is [batch, classes] of a float type (probabilities, or unnormalized log probabilities
with log_probs, which are exponentiated first); the output is [batch, num_samples] of
convert_type (i32 or i64). Each row's CDF is its cumulative sum divided by its last value;
sample j of row b is the first class k whose CDF value is >= u[b, j]. Without replacement the
chosen class's probability is then taken out of the row's CDF (later values lowered by it,
all divided by 1 minus it), one sample after the other, so no class repeats; num_samples must
not exceed the number of classes then.

The draws u are those of OpenVINO's core reference: RandomUniform-8's values in [0, 1) of the
probs' own element type, Philox-aligned ("tensorflow"), with the same global_seed and op_seed,
for the shape [batch, num_samples] (`core.uniform_values`); like RandomUniform, seeds 0 and 0
are used as they are, so the op is deterministic (OpenVINO draws a random seed then).

Departures and choices:
  * OpenVINO's CPU plugin draws from std::mt19937 seeded by std::seed_seq{global_seed, op_seed}
    instead of RandomUniform, so its indices differ from the reference's (and irscatter's) for
    the same seeds; both draw from the same distribution. The spec leaves the generator open.
  * The CDF is computed in f32 for f16 and bf16 probs (the reference rounds each step to the
    input type), in the input type otherwise; indices differ only where a draw falls within
    rounding of a CDF boundary.
  * A draw no CDF value reaches (a row whose sum is 0, NaN or infinite) gives index 0, the
    reference's initial value, and leaves the row's CDF as it is.
  * The spec describes 2-D probs only; OpenVINO's shape inference also takes 1-D probs, which
    irscatter refuses as the CPU plugin does.
"""

from __future__ import annotations

from typing import Annotated

import numpy as np
from pydantic import Field

from irscatter.errors import ExecutionError
from irscatter.ir.element_types import ElementType
from irscatter.ir.shapes import PartialShape
from irscatter.limits import check_inferred
from irscatter.ops.base import ElementTypeAttr, IRBool, Op, OpAttrs, TensorInfo, check, fail
from irscatter.ops.common.numeric import compute_dtype
from irscatter.ops.common.ranges import SMALL_COUNT, Bounds, extent, lengths_within
from irscatter.ops.common.types import arithmetic_float, check_integral
from irscatter.ops.generation.core import check_output, uniform_values
from irscatter.ops.registry import register

Seed = Annotated[int, Field(ge=0, le=2**64 - 1)]
PROBS_TYPES = (ElementType.f16, ElementType.bf16, ElementType.f32, ElementType.f64)


class MultinomialAttrs(OpAttrs):
    convert_type: ElementTypeAttr
    with_replacement: IRBool
    log_probs: IRBool
    global_seed: Seed = 0
    op_seed: Seed = 0


@register("Multinomial", 13)
class Multinomial(Op):
    labels = {
        "probs-rank": "Multinomial's probs is not a 2-D tensor",
        "num-samples-value": "num_samples is negative, or (without replacement) larger than the number of classes",
    }

    Attrs = MultinomialAttrs
    attrs: MultinomialAttrs
    inputs = ("probs", "num_samples")

    def input_range(self, position: int, infos) -> Bounds | None:
        if position != 1:
            return None
        classes = extent(infos[0], 1)
        if self.attrs.with_replacement or classes is None:
            return SMALL_COUNT if self.attrs.with_replacement else None
        return lengths_within(min(classes, SMALL_COUNT[1]))

    def infer(self, probs: TensorInfo, num_samples: TensorInfo) -> TensorInfo:
        out = self.attrs.convert_type
        check(out in (ElementType.i32, ElementType.i64), "output-type", f"convert_type must be i32 or i64, found {out}")
        check(probs.etype is ElementType.dynamic or probs.etype in PROBS_TYPES, "float-type",
              f"probs must be of a floating-point type (f16, bf16, f32, f64), found {probs.etype}",
              port=self.port("probs"))
        check_integral(num_samples, "num_samples", self.port("num_samples"), "integer-type")
        check(num_samples.etype in (ElementType.i32, ElementType.i64, ElementType.dynamic), "integer-type",
              f"num_samples must be of type i32 or i64, found {num_samples.etype}", port=self.port("num_samples"))
        if num_samples.shape.rank_is_static:
            check(num_samples.shape.rank == 0 or (num_samples.shape.rank == 1 and num_samples.shape[0].contains(1)),
                  "scalar-input", f"num_samples must be a scalar or a 1-D tensor of one element, found "
                                  f"{num_samples.shape}", port=self.port("num_samples"))
        batch, classes = -1, None
        if probs.shape.rank_is_static:
            check(probs.shape.rank == 2, "probs-rank", f"probs must be a 2-D tensor [batch, classes], found shape "
                                                       f"{probs.shape}", port=self.port("probs"))
            batch = int(probs.shape[0]) if probs.shape[0].is_static else -1
            classes = int(probs.shape[1]) if probs.shape[1].is_static else None
        samples = -1
        if num_samples.value is not None:
            samples = int(np.asarray(num_samples.value).reshape(-1)[0])
            self._check_samples(samples, classes, at_runtime=False)
        shape = PartialShape.of([batch, samples])
        if shape.is_static:
            check_inferred(shape.to_tuple(), out.dtype.itemsize, "output 0")
        return TensorInfo(out, shape)

    def _check_samples(self, samples: int, classes: int | None, *, at_runtime: bool) -> None:
        problem = None
        if samples < 0:
            problem = f"num_samples must be non-negative, found {samples}"
        elif not self.attrs.with_replacement and classes is not None and samples > classes:
            problem = f"without replacement num_samples ({samples}) must not exceed the number of classes ({classes})"
        if problem is None:
            return
        if at_runtime:
            raise ExecutionError(problem, port=self.port("num_samples"), label="num-samples-value")
        fail("num-samples-value", problem, port=self.port("num_samples"))

    def compute(self, probs: np.ndarray, num_samples: np.ndarray) -> np.ndarray:
        a = self.attrs
        etype = ElementType.from_dtype(probs.dtype)
        batch, classes = probs.shape
        samples = int(np.asarray(num_samples).reshape(-1)[0])
        self._check_samples(samples, classes, at_runtime=True)
        check_output([batch, samples], a.convert_type.dtype.itemsize)
        draws = uniform_values(batch * samples, etype, 0, 1, a.global_seed, a.op_seed).reshape(batch, samples)
        if classes == 0 or batch * samples == 0:
            return np.zeros((batch, samples), dtype=a.convert_type.dtype)
        cdf = normalized_cdf(probs, etype, a.log_probs)
        draws = draws.astype(cdf.dtype)
        if a.with_replacement:
            chosen = first_reaching(cdf, draws)
        else:
            chosen = _without_replacement(cdf, draws)
        return chosen.astype(a.convert_type.dtype)


def normalized_cdf(probs: np.ndarray, etype: ElementType, log_probs: bool) -> np.ndarray:
    """Each row's running sum divided by its last value, in the compute type of `etype`."""
    work = compute_dtype(etype) if arithmetic_float(etype) else np.dtype(np.float32)
    with np.errstate(all="ignore"):
        p = probs.astype(np.float64)
        if log_probs:
            p = np.exp(p)  # in f64, rounded once to the work type: exp correctly rounded but for rare ties
        cdf = np.cumsum(p.astype(work), axis=1, dtype=work)
        return cdf / cdf[:, -1:]


def first_reaching(cdf: np.ndarray, draws: np.ndarray) -> np.ndarray:
    """For each draw of row b, the first k with cdf[b, k] >= draw (0 where there is none), for
    all rows at once: the first such k is the number of values below the draw in the row's
    running maximum, counted by one sort of the running maxima and draws together."""
    batch, classes = cdf.shape
    samples = draws.shape[1]
    reach = np.fmax.accumulate(cdf, axis=1)  # NaN never reaches a draw: as -inf below
    reach = np.where(np.isnan(reach), -np.inf, reach)
    values = np.concatenate([reach.reshape(-1), draws.reshape(-1)])
    rows = np.concatenate([np.repeat(np.arange(batch), classes), np.repeat(np.arange(batch), samples)])
    # at equal values a draw sorts before the CDF value: cdf >= draw counts as reached
    is_cdf = np.concatenate([np.ones(batch * classes, np.int64), np.zeros(batch * samples, np.int64)])
    order = np.lexsort((is_cdf, values, rows))
    below = np.cumsum(is_cdf[order]) - is_cdf[order]  # CDF values sorted before each position
    position = np.empty_like(order)
    position[order] = np.arange(order.size)
    counts = below[position[batch * classes:]].reshape(batch, samples) - (np.arange(batch) * classes)[:, None]
    return np.where(counts < classes, counts, 0)


def _without_replacement(cdf: np.ndarray, draws: np.ndarray) -> np.ndarray:
    """One sample after the other (each depends on the classes drawn before), all rows at once."""
    batch, classes = cdf.shape
    cdf = cdf.copy()
    columns = np.arange(classes)
    rows = np.arange(batch)
    out = np.zeros(draws.shape, dtype=np.int64)
    with np.errstate(all="ignore"):
        for j in range(draws.shape[1]):
            hit = cdf >= draws[:, j:j + 1]
            found = np.asarray(hit.any(axis=1))  # an array for any batch, as the stubs cannot tell
            k = hit.argmax(axis=1)
            out[:, j] = np.where(found, k, 0)
            previous = np.where(k > 0, cdf[rows, np.maximum(k - 1, 0)], 0).astype(cdf.dtype)
            taken = (cdf[rows, k] - previous).astype(cdf.dtype)
            lowered = np.where(columns >= k[:, None], cdf - taken[:, None], cdf)
            updated = lowered / (cdf.dtype.type(1) - taken)[:, None]
            cdf = np.where(found[:, None], updated, cdf)
    return out
