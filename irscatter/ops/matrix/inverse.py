"""Inverse-14: the inverse of each square matrix in the innermost two dimensions (of its
transpose with `adjoint`), by LU decomposition with partial pivoting, in f32.

Every element type computes in f32, as the spec's algorithm says (f64 too, so an f64 result
carries f32 precision) and rounds once to its type. The steps are the spec's (and OpenVINO's
reference's), batched over the matrices: at column k the pivot is the first row at or below k
with the largest |value|; the multipliers fill L below its unit diagonal, and U's rows below
k are updated; then each column of the inverse solves L y = P e_i forward and U x = y
backward, one row at a time in the reference's order of additions.

A singular matrix has no inverse and the spec leaves the result undefined (an error or any
value). irscatter follows OpenVINO's reference algorithm (the CPU plugin gives the same): the
zero pivot is divided by, giving infinities and NaN in the result, with no error. (The core
reference has no `evaluate` for Inverse; the tests compare with the CPU plugin.)
"""

from __future__ import annotations

import math

import numpy as np

from irscatter.ir.element_types import ElementType
from irscatter.ops.base import IRBool, Op, OpAttrs, TensorInfo, check
from irscatter.ops.common.numeric import from_compute
from irscatter.ops.common.types import check_float
from irscatter.ops.registry import register


def inverse(a: np.ndarray, adjoint: bool) -> np.ndarray:
    """The inverses of `a`'s matrices ([..., n, n], f32), batched; a new f32 array."""
    n = a.shape[-1]
    batch = a.shape[:-2]
    u = np.array(a.reshape(math.prod(batch), n, n), dtype=np.float32, copy=True)  # -1 cannot size an empty batch
    if adjoint:
        u = np.ascontiguousarray(u.transpose(0, 2, 1))
    m = u.shape[0]
    lower = np.zeros_like(u)
    perm = np.broadcast_to(np.arange(n), (m, n)).copy()
    rows = np.arange(m)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        for k in range(n):
            # np.argmax picks the first of equal maxima, as the reference's strict '>' does
            pivot = k + np.argmax(np.abs(u[:, k:, k]), axis=1)
            for t in (u, lower, perm):
                saved = t[rows, k].copy()
                t[rows, k] = t[rows, pivot]
                t[rows, pivot] = saved
            lower[:, k + 1:, k] = u[:, k + 1:, k] / u[:, k, k][:, None]
            u[:, k + 1:, k:] = u[:, k + 1:, k:] - lower[:, k + 1:, k][:, :, None] * u[:, k, k:][:, None, :]
        # column c of the inverse solves L y = P e_c, then U x = y; all columns at once
        y = np.zeros((m, n, n), np.float32)  # [matrix, row, column]
        for i in range(n):
            y[:, i, :] = (perm[:, i][:, None] == np.arange(n)).astype(np.float32)
            for j in range(i):
                y[:, i, :] -= lower[:, i, j][:, None] * y[:, j, :]
        x = np.zeros((m, n, n), np.float32)
        for i in reversed(range(n)):
            x[:, i, :] = y[:, i, :]
            for j in range(i + 1, n):
                x[:, i, :] = x[:, i, :] - u[:, i, j][:, None] * x[:, j, :]
            x[:, i, :] = x[:, i, :] / u[:, i, i][:, None]
    return x.reshape(*batch, n, n)


@register("Inverse", 14)
class Inverse(Op):
    labels = {
        "inverse-rank": "the input has rank below 2",
        "inverse-square": "the innermost two dimensions differ",
    }

    class Attrs(OpAttrs):
        adjoint: IRBool = False
    attrs: Attrs

    inputs = ("input",)

    def infer(self, data: TensorInfo) -> TensorInfo:
        port = self.port("input")
        check_float(self, data.etype, "input")
        if data.shape.rank_is_static:
            check(data.shape.rank >= 2, "inverse-rank", f"the input must have rank 2 or more, found {data.shape}",
                  port=port)
            rows, cols = data.shape.ranked_dims[-2:]
            check(rows.compatible(cols), "inverse-square",
                  f"the matrices must be square, found {rows} x {cols}", port=port)
        return TensorInfo(data.etype, data.shape)

    def compute(self, data: np.ndarray) -> np.ndarray:
        etype = ElementType.from_dtype(data.dtype)
        out = inverse(data, self.attrs.adjoint)
        return out.astype(np.float64) if etype is ElementType.f64 else from_compute(out, etype)
