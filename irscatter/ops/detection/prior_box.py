"""PriorBox-1 and PriorBox-8: SSD's prior (anchor) boxes for every cell of a feature map.

`output_size` [H, W] gives the grid and `image_size` [IH, IW] the image; both are 1-D integer
tensors of two values and of one element type. The output is f32 [2, 4 * H * W * K]: row 0
holds the boxes (xmin, ymin, xmax, ymax, normalized by the image size), cell by cell in
row-major order and K boxes per cell; row 1 holds the variance of every coordinate (the one
`variance` value, the four repeated, or 0.1 when none is given). The output length depends on
the *values* of `output_size`: inference knows it when they are constants, and leaves it
dynamic otherwise.

What a cell holds, in the order OpenVINO's reference writes it (the spec page gives formulas
only, and garbles them: `(center - s) / 2` for `center - s / 2`; irscatter follows the
reference, whose results the page's example shape confirms):

* the cell centre is `((w + 0.5) * IW / W, (h + 0.5) * IH / H)` when `step` is 0, otherwise
  `((w + offset) * step, (h + offset) * step)`;
* for each `fixed_size` f (when given): with `fixed_ratio`, for each fixed ratio a
  `density` x `density` grid of boxes of width f * sqrt(ratio) and height f / sqrt(ratio);
  without it, a density grid of int(f) x int(f) squares (when `density` is given) and then one
  grid per aspect ratio other than 1. The grid's centres are shifted by `-(int(f) // 2) +
  shift / 2 + i * shift` with `shift = int(f / int(density))`, and these boxes are clipped to
  [0, 1] on their own;
* for each `min_size` m: a square of side m, then (PriorBox-1, and -8 with
  `min_max_aspect_ratios_order`) a square of side sqrt(m * max_size[i]) when there is a
  `max_size` for it, then one box per aspect ratio other than 1 (width m * sqrt(ar), height
  m / sqrt(ar)); -8 without `min_max_aspect_ratios_order` writes the aspect-ratio boxes before
  the max-size square. With `scale_all_sizes` false (MXNet's PriorBox), `step` and the minimum
  sizes are first multiplied by IH (a `step` of -1 becomes IH / H), and only the last min size
  gets aspect-ratio boxes, made from the first min size.

The aspect ratios are 1, then each `aspect_ratio` not within 1e-6 of one already listed,
followed by its reciprocal when `flip` is set. Arithmetic is f32, step by step as in the
reference (the normalization multiplies by the f32 reciprocal of the image size), so results
are exact. `clip` clamps every coordinate into [0, 1] at the end (NaN stays NaN).

Departures and choices:
* With `scale_all_sizes` false the spec says `max_size` is ignored, while OpenVINO's reference
  and CPU plugin still write the max-size squares, past the end of an output sized without
  them. irscatter follows the spec.
* OpenVINO sizes the output by a formula (`number_of_priors`) that agrees with the boxes its
  kernel writes only for consistent attributes; where they disagree (`fixed_size` together
  with `min_size`, more `max_size` than `min_size` values, `density` values beyond the fixed
  sizes, `fixed_ratio` with aspect ratios, `min_size` missing with `scale_all_sizes` false)
  OpenVINO writes past its buffer or leaves part of it unwritten. irscatter refuses those
  attribute sets (`prior-box-count`).
* For an odd `fixed_size` OpenVINO's CPU plugin (2026.4) centres the density grids half a
  pixel lower than its core reference (it halves f in floating point, the reference halves
  int(f) as an integer); irscatter follows the reference, which is also what OpenVINO uses when
  it folds a PriorBox of constant inputs.
* Zero or negative aspect or fixed ratios, non-positive fixed sizes and densities below 1
  (which the reference divides by) are refused, as are negative variances (the CPU plugin
  refuses them) and variance lists of other than 0, 1 or 4 values.
"""

from __future__ import annotations

import math

import numpy as np

from irscatter.errors import ExecutionError
from irscatter.ir.element_types import ElementType
from irscatter.ir.shapes import PartialShape
from irscatter.limits import check_allocation, check_inferred
from irscatter.ops.base import FloatList, IRBool, Op, OpAttrs, TensorInfo, check
from irscatter.ops.registry import register

F32 = np.float32


# --- what the prior box ops share (PriorBoxClustered imports these) -------------------------------


def check_size_inputs(op: Op, output_size: TensorInfo, image_size: TensorInfo) -> None:
    """Both inputs: one integer element type, 1-D with two values."""
    for name, info in (("output_size", output_size), ("image_size", image_size)):
        check(info.etype is ElementType.dynamic or info.etype.is_integral, "prior-size-type",
              f"{name} must be of an integer type, found {info.etype}", port=op.port(name))
        if info.shape.rank_is_static:
            check(info.shape.rank == 1 and info.shape[0].contains(2), "prior-size-shape",
                  f"{name} must be a 1-D tensor of two values, found shape {info.shape}", port=op.port(name))
    check(ElementType.dynamic in (output_size.etype, image_size.etype) or output_size.etype is image_size.etype,
          "same-element-type", f"output_size and image_size must share one element type, found "
          f"{output_size.etype} and {image_size.etype}", port=op.port("image_size"))


def check_variance(op: Op, variance: tuple[float, ...]) -> np.ndarray:
    """The variance attribute as the four f32 values written after each box."""
    check(len(variance) in (0, 1, 4), "prior-variance",
          f"variance must have 0, 1 or 4 values, found {len(variance)}", port=op.port("variance"))
    check(all(not v < 0 for v in variance), "prior-variance", f"variance {list(variance)} has a negative value",
          port=op.port("variance"))
    values = variance or (0.1,)
    return np.array(values * 4 if len(values) == 1 else values, F32)


def grid_size(op: Op, value: np.ndarray, *, at_runtime: bool) -> tuple[int, int]:
    """[H, W] from `output_size`, which must not be negative."""
    h, w = (int(v) for v in np.asarray(value).astype(np.int64).reshape(-1)[:2])
    if h < 0 or w < 0:
        message = f"output_size [{h}, {w}] has a negative value"
        if at_runtime:
            raise ExecutionError(message, label="prior-size-value", port=op.port("output_size"))
        check(False, "prior-size-value", message, port=op.port("output_size"))
    return h, w


def image_extent(value: np.ndarray) -> tuple[int, int]:
    """[IH, IW] as the reference reads them (through a signed 64-bit integer)."""
    ih, iw = (int(v) for v in np.asarray(value).astype(np.int64).reshape(-1)[:2])
    return ih, iw


def infer_priors(op: Op, output_size: TensorInfo, per_cell: int) -> TensorInfo:
    """[2, 4 * H * W * per_cell] when output_size is known, [2, ?] otherwise."""
    if output_size.value is None:
        return TensorInfo(ElementType.f32, PartialShape.of([2, -1]))
    h, w = grid_size(op, output_size.value, at_runtime=False)
    shape = (2, 4 * h * w * per_cell)
    check_inferred(shape, 4, "output 0")
    return TensorInfo(ElementType.f32, PartialShape.of(shape))


def with_variances(boxes: np.ndarray, variance: np.ndarray) -> np.ndarray:
    """The [2, n] output: the flattened boxes, then the variances repeated box by box."""
    flat = boxes.reshape(-1)
    return np.stack([flat, np.tile(variance, flat.size // 4)])


# --- PriorBox ---------------------------------------------------------------------------------


class PriorBox1Attrs(OpAttrs):
    min_size: FloatList = ()
    max_size: FloatList = ()
    aspect_ratio: FloatList = ()
    flip: IRBool = False
    clip: IRBool = False
    step: float = 0.0
    offset: float
    variance: FloatList = ()
    scale_all_sizes: IRBool = True
    fixed_ratio: FloatList = ()
    fixed_size: FloatList = ()
    density: FloatList = ()


class PriorBox8Attrs(PriorBox1Attrs):
    min_max_aspect_ratios_order: IRBool = True


def _aspect_ratios(attrs: PriorBox1Attrs) -> list[np.float32]:
    """The kernel's list: 1, then each new ratio (and its reciprocal with flip)."""
    ratios = [F32(1)]
    for value in attrs.aspect_ratio:
        ar = F32(value)
        if any(abs(ar - e) < 1e-6 for e in ratios):
            continue
        ratios.append(ar)
        if attrs.flip:
            ratios.append(F32(1) / ar)
    return ratios


def _openvino_count(attrs: PriorBox1Attrs) -> int:
    """OpenVINO's `number_of_priors`: what it sizes the output by."""
    unique = set()
    for value in attrs.aspect_ratio:
        r = F32(value)
        unique.add(F32(round(float(r) * 1e6) / 1e6))
        if attrs.flip:
            unique.add(F32(round(float(F32(1) / r) * 1e6) / 1e6))
    unique.add(F32(1))
    total = len(unique)
    if attrs.scale_all_sizes:
        count = total * len(attrs.min_size) + len(attrs.max_size)
    else:
        count = total + len(attrs.min_size) - 1
    if attrs.fixed_size:
        count = total * len(attrs.fixed_size)
    for d in attrs.density:
        square = int(d) ** 2 - 1
        count += (len(attrs.fixed_ratio) if attrs.fixed_ratio else total) * square
    return count


_F32_MAX = float(np.finfo(np.float32).max)


@register("PriorBox", 1)
class PriorBox(Op):
    labels = {
        "prior-box-count": "PriorBox's attributes generate another number of boxes per cell than OpenVINO sizes "
                           "its output for (fixed_size with min_size, more max_size than min_size values, density "
                           "values without a fixed_size, ...)",
        "prior-box-fixed": "a PriorBox fixed_size is not positive, or it lacks a density value of at least 1",
        "prior-box-ratio": "a PriorBox aspect_ratio or fixed_ratio is not a positive number",
    }

    Attrs = PriorBox1Attrs
    attrs: PriorBox1Attrs
    inputs = ("output_size", "image_size")

    def _min_max_first(self) -> bool:
        return True

    def _per_cell(self) -> int:
        """Checks the attributes; the number of boxes per cell."""
        a = self.attrs
        for name in ("aspect_ratio", "fixed_ratio"):
            values = getattr(a, name)
            check(all(0 < v <= _F32_MAX for v in values), "prior-box-ratio",  # finite in f32, the compute type
                  f"{name} {list(values)} must hold positive numbers within f32's range", port=self.port(name))
        check(all(math.isfinite(d) for d in a.density), "prior-box-fixed",
              f"density {list(a.density)} must hold finite numbers", port=self.port("density"))
        ratios = len(_aspect_ratios(a))
        per_cell = 0
        for s, f in enumerate(a.fixed_size):
            check(f > 0 and math.isfinite(f), "prior-box-fixed", f"fixed_size {f} is not a positive number",
                  port=self.port("fixed_size"))
            uses_density = bool(a.fixed_ratio or a.density or ratios > 1)
            if uses_density:
                check(s < len(a.density) and a.density[s] >= 1 and math.isfinite(a.density[s]), "prior-box-fixed",
                      f"fixed_size {f} needs a density value of at least 1, density is {list(a.density)}",
                      port=self.port("density"))
                square = int(a.density[s]) ** 2
                per_cell += square * (len(a.fixed_ratio) if a.fixed_ratio else int(bool(a.density)) + ratios - 1)
        if a.min_size:
            per_cell += len(a.min_size)
            if a.scale_all_sizes:
                per_cell += min(len(a.max_size), len(a.min_size)) + len(a.min_size) * (ratios - 1)
            else:
                per_cell += ratios - 1
        expected = _openvino_count(a)
        check(per_cell == expected, "prior-box-count",
              f"the attributes generate {per_cell} boxes per cell, OpenVINO sizes the output for {expected}")
        check_variance(self, a.variance)
        check_inferred((per_cell, 4, 7), 4, "output 0")  # the table of one cell's boxes
        return per_cell

    def infer(self, output_size: TensorInfo, image_size: TensorInfo) -> TensorInfo:
        check_size_inputs(self, output_size, image_size)
        return infer_priors(self, output_size, self._per_cell())

    def compute(self, output_size: np.ndarray, image_size: np.ndarray) -> np.ndarray:
        per_cell = self.per_shape(None, self._per_cell)
        h, w = grid_size(self, output_size, at_runtime=True)
        check_allocation((2, 4 * h * w * per_cell), 4)
        ih, iw = image_extent(image_size)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            boxes = self._boxes(h, w, ih, iw)
            if self.attrs.clip:
                boxes = np.minimum(np.maximum(boxes, F32(0)), F32(1))
        return with_variances(boxes, check_variance(self, self.attrs.variance))

    def _cell_layout(self, ih: int) -> tuple[np.ndarray, ...]:
        """One cell's boxes, in output order: whether each is a shifted (density) box, its
        centre shifts (a, b, ex, ey: centre - a + b + e), and its half width and height."""
        a = self.attrs
        ratios = _aspect_ratios(a)
        parts: list[tuple] = []  # (shifted, a, b, ex, ey, half_w, half_h), each a scalar or array

        def grid(f: float, d_value: float, half_w, half_h):
            d = int(d_value)
            size = int(f)
            shift = int(F32(f) / F32(d))
            r, c = np.meshgrid(np.arange(d), np.arange(d), indexing="ij")
            n = d * d
            parts.append((np.ones(n, bool), np.full(n, F32(size // 2)), np.full(n, F32(shift) / F32(2)),
                          (c.reshape(-1) * shift).astype(F32), (r.reshape(-1) * shift).astype(F32),
                          np.full(n, half_w, F32), np.full(n, half_h, F32)))

        for s, f in enumerate(a.fixed_size):
            half = F32(int(f)) * F32(0.5)
            if a.fixed_ratio:
                for value in a.fixed_ratio:
                    ar = np.sqrt(F32(value))
                    grid(f, a.density[s], F32(f) * F32(0.5) * ar, F32(f) * F32(0.5) / ar)
                continue
            if a.density:
                grid(f, a.density[s], half, half)
            for ar in ratios:
                if abs(float(ar) - 1.0) < 1e-6:
                    continue
                root = np.sqrt(ar)
                grid(f, a.density[s], F32(f) * F32(0.5) * root, F32(f) * F32(0.5) / root)

        min_sizes = [F32(m) for m in a.min_size]
        if not a.scale_all_sizes:
            min_sizes = [m * F32(ih) for m in min_sizes]
        plain: list[tuple[np.float32, np.float32]] = []

        def ratio_boxes(m):
            for ar in ratios:
                if abs(ar - F32(1)) < 1e-6:
                    continue
                root = np.sqrt(ar)
                plain.append((m * F32(0.5) * root, m * F32(0.5) / root))

        for i, m in enumerate(min_sizes):
            plain.append((m * F32(0.5), m * F32(0.5)))
            with_ratios = a.scale_all_sizes or i == len(min_sizes) - 1
            square = None
            if a.scale_all_sizes and i < len(a.max_size):
                side = np.sqrt(m * F32(a.max_size[i])) * F32(0.5)
                square = (side, side)
            if self._min_max_first():
                if square:
                    plain.append(square)
                if with_ratios:
                    ratio_boxes(m if a.scale_all_sizes else min_sizes[0])
            else:
                if with_ratios:
                    ratio_boxes(m if a.scale_all_sizes else min_sizes[0])
                if square:
                    plain.append(square)
        if plain:
            n = len(plain)
            zero = np.zeros(n, F32)
            parts.append((np.zeros(n, bool), zero, zero, zero, zero, np.array([p[0] for p in plain], F32),
                          np.array([p[1] for p in plain], F32)))
        if not parts:
            return tuple(np.zeros(0, t) for t in (bool, F32, F32, F32, F32, F32, F32))
        return tuple(np.concatenate([p[k] for p in parts]) for k in range(7))

    def _boxes(self, h: int, w: int, ih: int, iw: int) -> np.ndarray:
        """[H, W, K, 4] f32 boxes, before the final clip."""
        a = self.attrs
        shifted, sub, half_shift, ex, ey, half_w, half_h = self._cell_layout(ih)
        step = F32(a.step)
        if not a.scale_all_sizes:
            step = F32(ih) / F32(h) if step == -1 else step * F32(ih)
        ys, xs = np.arange(h, dtype=F32), np.arange(w, dtype=F32)
        if step == 0:
            cx = (xs + F32(0.5)) * (F32(iw) / F32(w))
            cy = (ys + F32(0.5)) * (F32(ih) / F32(h))
        else:
            cx = (F32(a.offset) + xs) * step
            cy = (F32(a.offset) + ys) * step
        cx = np.broadcast_to(cx[None, :, None], (h, w, 1))
        cy = np.broadcast_to(cy[:, None, None], (h, w, 1))
        # the reference's order of f32 operations: ((centre - int(f) / 2) + shift / 2) + i * shift
        x = np.where(shifted, ((cx - sub) + half_shift) + ex, cx)
        y = np.where(shifted, ((cy - sub) + half_shift) + ey, cy)
        inv_w, inv_h = F32(1) / F32(iw), F32(1) / F32(ih)
        xmin, ymin = (x - half_w) * inv_w, (y - half_h) * inv_h
        xmax, ymax = (x + half_w) * inv_w, (y + half_h) * inv_h
        # density boxes are clipped on their own (NaN becomes 0 below and 1 above, as there)
        xmin = np.where(shifted & ~(xmin > 0), F32(0), xmin)
        ymin = np.where(shifted & ~(ymin > 0), F32(0), ymin)
        xmax = np.where(shifted & ~(xmax < 1), F32(1), xmax)
        ymax = np.where(shifted & ~(ymax < 1), F32(1), ymax)
        return np.stack([xmin, ymin, xmax, ymax], axis=-1).astype(F32, copy=False)


@register("PriorBox", 8)
class PriorBox8(PriorBox):
    """PriorBox-8: adds `min_max_aspect_ratios_order` (true: the max-size square right after the
    min-size one, as PriorBox-1 and Caffe; false: after the aspect-ratio boxes)."""

    Attrs = PriorBox8Attrs
    attrs: PriorBox8Attrs

    def _min_max_first(self) -> bool:
        return self.attrs.min_max_aspect_ratios_order
