"""GridSample-9: sample an NCHW image at the points of a grid [N, H_out, W_out, 2] of (x, y)
pairs in [-1, 1], giving [N, C, H_out, W_out].

A grid value v maps to the pixel coordinate ((v + 1) * size - 1) / 2, or (v + 1) * (size - 1) / 2
with align_corners (-1 and 1 then fall on the centres of the corner pixels: the spec's page says
the opposite of this in its attribute's description, but its reference, PyTorch's grid_sample
that the op mirrors, and OpenVINO's CPU plugin all do this). `bilinear` blends the four
neighbours, `bicubic` the 4x4 around with Keys' kernel (a = -0.75), `nearest` takes the pixel at
the coordinate rounded half to even. A neighbour outside the image reads 0 (`zeros`), the
nearest edge pixel (`border`), or its mirror image (`reflection`: the pixel index is reflected,
about the pixel edges without align_corners and about the edge pixels' centres with it, as
OpenVINO's reference does).

Data of any numeric type; the grid of a floating-point type. Coordinates are computed in the
grid's type (f32 for the narrow floats), the blend in the data's compute type (f32, f64 for f64,
f64 for integers, then truncated and saturated as the reference's cast). A non-finite grid value
gives NaN (0 for integer data): the reference converts it to an integer, which is undefined.
"""

from __future__ import annotations

from typing import Annotated, Literal

import numpy as np

from irscatter.errors import ExecutionError
from irscatter.ir.element_types import ElementType
from irscatter.ir.shapes import PartialShape
from irscatter.ops.base import IRBool, Lower, Op, OpAttrs, TensorInfo, check
from irscatter.ops.common.numeric import compute_dtype, from_compute
from irscatter.ops.common.types import check_float
from irscatter.ops.registry import register

_LIMIT = float(2**40)  # coordinates are clamped here before becoming integers; far outside any image


class GridSampleAttrs(OpAttrs):
    align_corners: IRBool = False
    mode: Annotated[Literal["bilinear", "bicubic", "nearest"], Lower] = "bilinear"
    padding_mode: Annotated[Literal["zeros", "border", "reflection"], Lower] = "zeros"


def _cubic(t: np.ndarray) -> list[np.ndarray]:
    a = t.dtype.type(-0.75)
    one, two = t.dtype.type(1), t.dtype.type(2)
    r1, r2, r3 = t + one, one - t, two - t
    return [((a * r1 - 5 * a) * r1 + 8 * a) * r1 - 4 * a,
            ((a + 2) * t - (a + 3)) * t * t + 1,
            ((a + 2) * r2 - (a + 3)) * r2 * r2 + 1,
            ((a * r3 - 5 * a) * r3 + 8 * a) * r3 - 4 * a]


@register("GridSample", 9)
class GridSample(Op):
    labels = {
        "grid-sample-rank": "the data or the grid is not a 4-D tensor",
        "grid-shape": "the grid's last dimension is not 2, or its batch differs from the data's",
        "grid-sample-empty": "an image of height or width 0 is sampled with border or reflection padding",
    }

    Attrs = GridSampleAttrs
    attrs: GridSampleAttrs
    inputs = ("data", "grid")

    def infer(self, data: TensorInfo, grid: TensorInfo) -> TensorInfo:
        check(data.etype is ElementType.dynamic or data.etype.is_integral
              or (data.etype.is_float and not data.etype.is_packed and data.etype is not ElementType.f8e8m0),
              "numeric-type", f"GridSample does not sample {data.etype} data", port=self.port("data"))
        check_float(self, grid.etype, "grid")
        for name, info in (("data", data), ("grid", grid)):
            if info.shape.rank_is_static:
                check(info.shape.rank == 4, "grid-sample-rank", f"{name} must be 4-D, found {info.shape}",
                      port=self.port(name))
        n = data.shape[0] if data.shape.rank_is_static else None
        if grid.shape.rank_is_static:
            check(grid.shape[3].contains(2), "grid-shape", f"the grid's last dimension must be 2, found {grid.shape}",
                  port=self.port("grid"))
            if n is not None:
                check(n.compatible(grid.shape[0]), "grid-shape",
                      f"the grid's batch {grid.shape[0]} differs from the data's {n}", port=self.port("grid"))
                if n.is_dynamic:
                    n = grid.shape[0]
        c = data.shape[1] if data.shape.rank_is_static else -1
        h, w = (grid.shape[1], grid.shape[2]) if grid.shape.rank_is_static else (-1, -1)
        return TensorInfo(data.etype, PartialShape.of([n if n is not None else -1, c, h, w]))

    def compute(self, data: np.ndarray, grid: np.ndarray) -> np.ndarray:
        etype = ElementType.from_dtype(data.dtype)
        gtype = ElementType.from_dtype(grid.dtype)
        work = np.dtype(np.float64) if etype.is_integral else compute_dtype(etype)
        g = grid.astype(compute_dtype(gtype), copy=False)
        N, C, H, W = data.shape
        align = self.attrs.align_corners

        def denormalize(v: np.ndarray, size: int) -> np.ndarray:
            one, two, s = v.dtype.type(1), v.dtype.type(2), v.dtype.type(size)
            with np.errstate(invalid="ignore", over="ignore"):
                return (v + one) * (s - one) / two if align else ((v + one) * s - one) / two

        yd, xd = denormalize(g[..., 1], H), denormalize(g[..., 0], W)
        bad = ~(np.isfinite(yd) & np.isfinite(xd))
        yd, xd = (np.clip(np.where(bad, 0, v), -_LIMIT, _LIMIT) for v in (yd, xd))
        batch = np.arange(N).reshape(N, 1, 1)
        src = data.astype(work, copy=False)

        def pixel(yi: np.ndarray, xi: np.ndarray) -> np.ndarray:
            """data[n, :, y, x] for integer maps yi, xi of shape [N, H_out, W_out], as [N, C, H_out, W_out]."""
            yi, xi = yi.astype(np.int64), xi.astype(np.int64)
            mode = self.attrs.padding_mode
            if mode == "zeros":
                inside = (yi >= 0) & (yi < H) & (xi >= 0) & (xi < W)
                v = src[batch, :, np.clip(yi, 0, max(H - 1, 0)), np.clip(xi, 0, max(W - 1, 0))]
                v = np.where(inside[..., None], v, work.type(0))
            else:
                if mode == "border":
                    yi, xi = np.clip(yi, 0, H - 1), np.clip(xi, 0, W - 1)
                else:
                    yi, xi = self._reflect(yi, H, align), self._reflect(xi, W, align)
                v = src[batch, :, yi, xi]
            return np.moveaxis(v, -1, 1)

        out_shape = (N, C) + grid.shape[1:3]
        if 0 in out_shape:
            return np.zeros(out_shape, data.dtype)
        if H == 0 or W == 0:
            if self.attrs.padding_mode != "zeros":
                raise ExecutionError(f"an image of shape {list(data.shape)} has no border or reflection to sample",
                                     port=self.port("data"), label="grid-sample-empty")
            res = np.zeros(out_shape, work)
        elif self.attrs.mode == "nearest":
            res = pixel(np.rint(yd), np.rint(xd))
        else:
            y0, x0 = np.floor(yd), np.floor(xd)
            dy, dx = (yd - y0)[:, None], (xd - x0)[:, None]
            with np.errstate(invalid="ignore", over="ignore"):
                if self.attrs.mode == "bilinear":
                    one = dx.dtype.type(1)
                    q0 = (one - dx) * pixel(y0, x0) + dx * pixel(y0, x0 + 1)
                    q1 = (one - dx) * pixel(y0 + 1, x0) + dx * pixel(y0 + 1, x0 + 1)
                    res = dy * q1 + (one - dy) * q0
                else:
                    cy, cx = _cubic(dy), _cubic(dx)
                    # summed from 0 in this order, row by row: each sum's rounding as the reference's
                    rows = (sum(cx[i].astype(work) * pixel(y0 - 1 + j, x0 - 1 + i) for i in range(4)) for j in range(4))
                    res = np.asarray(sum(cy[j].astype(work) * row for j, row in enumerate(rows)), dtype=work)
            res = np.asarray(res, dtype=work)
        res = np.where(bad[:, None], work.type(np.nan) if work.kind == "f" else 0, res)
        if etype.is_integral:
            info = np.iinfo(data.dtype)
            with np.errstate(invalid="ignore"):
                return np.clip(np.nan_to_num(np.trunc(res), nan=0.0), info.min, info.max).astype(data.dtype)
        return from_compute(np.asarray(res, dtype=work), etype)

    @staticmethod
    def _reflect(i: np.ndarray, n: int, align: bool) -> np.ndarray:
        if align:
            period = 1 if n == 1 else 2 * (n - 1)
            i = np.abs(i) % period
            return np.where(i >= n, period - i, i)
        period = 2 * n
        i = np.mod(i, period)
        return np.where(i >= n, period - 1 - i, i)
