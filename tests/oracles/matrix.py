"""Oracles of the matrix ops: Einsum-7 and Inverse-14, one element per step.

`einsum` visits every assignment of values to the equation's labels (the ellipsis dims get
labels of their own, aligned at the right across inputs, a dimension 1 broadcasting), and
adds the product of the inputs' elements into the output element the output labels name;
sums are Python floats (or integers, wrapped once at the end). `inverse` transcribes the
spec's LU algorithm in f32 scalars.
"""

import itertools

import numpy as np

from irscatter.ir.element_types import ElementType
from irscatter.ops.common.numeric import convert_array


def _split(equation):
    text = equation.replace(" ", "")
    left, arrow, right = text.partition("->")
    inputs = [s.replace("...", ".") for s in left.split(",")]
    if arrow:
        return inputs, right.replace("...", ".")
    every = "".join(inputs).replace(".", "")
    out = "".join(sorted(c for c in set(every) if every.count(c) == 1))
    return inputs, ("." if any("." in s for s in inputs) else "") + out


def einsum(*operands, equation):
    inputs, output = _split(equation)
    ellipsis_rank = max((a.ndim - len(s) + 1 for s, a in zip(inputs, operands) if "." in s), default=0)
    ell = [f"#{k}" for k in range(ellipsis_rank)]
    axes = []  # each operand's list of labels, one per dimension
    for s, a in zip(inputs, operands):
        labels = []
        for c in s:
            labels += ell[len(ell) - (a.ndim - len(s) + 1):] if c == "." else [c]
        axes.append(labels)
    out_labels = []
    for c in output:
        out_labels += ell if c == "." else [c]
    size = {}
    for labels, a in zip(axes, operands):
        for label, d in zip(labels, a.shape):
            size[label] = d if size.get(label, 1) == 1 else size[label]
    names = sorted(size)
    shape = tuple(size[label] for label in out_labels)
    integral = operands[0].dtype.kind in "iu"
    sums = {}
    for values in itertools.product(*(range(size[n]) for n in names)):
        at = dict(zip(names, values))
        term = 1 if integral else 1.0
        for labels, a in zip(axes, operands):
            index = tuple(at[label] if d > 1 else 0 for label, d in zip(labels, a.shape))
            term *= int(a[index]) if integral else float(a[index])
        key = tuple(at[label] for label in out_labels)
        sums[key] = sums.get(key, 0) + term
    etype = ElementType.from_dtype(operands[0].dtype)
    out = np.zeros(shape, np.float64 if not integral else object)
    for key, v in sums.items():
        out[key] = v
    if integral:
        bits = etype.bitwidth
        wrapped = [(int(v) % (1 << bits)) for v in out.reshape(-1)]
        if etype.is_signed:
            wrapped = [v - (1 << bits) if v >= 1 << (bits - 1) else v for v in wrapped]
        return np.array(wrapped, dtype=np.int64).reshape(shape).astype(operands[0].dtype)
    return convert_array(out, ElementType.f64, etype) if etype is not ElementType.f64 else out


def inverse(a, *, adjoint):
    """LU with partial pivoting (the first row of largest |value|), then a forward and a
    backward substitution per column of the identity, in f32 scalars."""
    n = a.shape[-1]
    out = np.empty(a.shape, np.float32)
    f = np.float32
    for b in itertools.product(*(range(d) for d in a.shape[:-2])):
        m = a[b].astype(np.float32)
        u = [[f(m[j][i] if adjoint else m[i][j]) for j in range(n)] for i in range(n)]
        low = [[f(1 if i == j else 0) for j in range(n)] for i in range(n)]
        p = list(range(n))
        with np.errstate(all="ignore"):
            for k in range(n):
                pivot = k
                for i in range(k + 1, n):
                    if abs(u[i][k]) > abs(u[pivot][k]):
                        pivot = i
                if pivot != k:
                    p[k], p[pivot] = p[pivot], p[k]
                    u[k], u[pivot] = u[pivot], u[k]
                    low[k], low[pivot] = low[pivot], low[k]
                for i in range(k + 1, n):
                    low[i][k] = u[i][k] / u[k][k]
                for i in range(k + 1, n):
                    for j in range(k, n):
                        u[i][j] = u[i][j] - low[i][k] * u[k][j]
            for column in range(n):
                y = [f(0)] * n
                for i in range(n):
                    if p[i] == column:
                        y[i] = f(1)
                    for j in range(i):
                        y[i] -= low[i][j] * y[j]
                x = [f(0)] * n
                for i in reversed(range(n)):
                    x[i] = y[i]
                    for j in range(i + 1, n):
                        x[i] = x[i] - u[i][j] * x[j]
                    x[i] = x[i] / u[i][i]
                for row in range(n):
                    out[b + (row, column)] = x[row]
    etype = ElementType.from_dtype(a.dtype)
    return out.astype(np.float64) if etype is ElementType.f64 else convert_array(out, ElementType.f32, etype)

