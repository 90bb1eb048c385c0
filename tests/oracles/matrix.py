"""Oracles of the matrix ops: Einsum-7 and Inverse-14, one element per step.

`einsum` visits every assignment of values to the equation's labels (the ellipsis dims get
labels of their own, aligned at the right across inputs, a dimension 1 broadcasting), and
adds the product of the inputs' elements into the output element the output labels name;
sums are Python floats (or integers, wrapped once at the end). `inverse` transcribes the
spec's LU algorithm in f32 scalars. `scaled_dot_product_attention` and `grouped_mat_mul`
(ScaledDotProductAttention-13, GroupedMatMul-17) are at the end.
"""

import itertools
import math

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



def _broadcast_element(array, index):
    """`array`'s element at `index` of a shape it broadcasts to (aligned at the right, a
    dimension 1 repeating)."""
    own = index[len(index) - array.ndim:] if array.ndim else ()
    return array[tuple(i if d > 1 else 0 for i, d in zip(own, array.shape))]


def _to_type(values, like):
    """Python numbers (in a float64 or object array) as `like`'s element type: floats rounded
    once, integers wrapped modulo 2^bits."""
    etype = ElementType.from_dtype(like.dtype)
    if like.dtype.kind in "iu":
        bits = etype.bitwidth
        wrapped = [int(v) % (1 << bits) for v in values.reshape(-1)]
        if etype.is_signed:
            wrapped = [v - (1 << bits) if v >= 1 << (bits - 1) else v for v in wrapped]
        return np.array(wrapped, dtype=object).reshape(values.shape).astype(like.dtype)
    return values if etype is ElementType.f64 else convert_array(values, ElementType.f64, etype)


def scaled_dot_product_attention(query, key, value, attention_mask=None, scale=None, *, causal):
    """The spec's pseudo-code one logit at a time in Python floats: a dot product over E times
    the scale, plus the causal bias (-inf where the source position j is past the row i) or the
    mask (False -> -inf, True -> 0, a float added), then a softmax of the row with its maximum
    subtracted (a NaN anywhere makes the row NaN), then the weighted sum of value's rows."""
    inf = float("inf")
    e_dim, s_dim, ev_dim = query.shape[-1], key.shape[-2], value.shape[-1]
    if scale is not None:
        factor = float(scale.reshape(-1)[0])
    else:
        factor = 1.0 / math.sqrt(e_dim) if e_dim else inf
    mask = None if causal else attention_mask
    logits_shape = np.broadcast_shapes(query.shape[:-1] + (s_dim,), key.shape[:-2] + (1, s_dim),
                                       value.shape[:-2] + (1, s_dim), mask.shape if mask is not None else ())
    out = np.zeros(logits_shape[:-1] + (ev_dim,), np.float64)
    for row in itertools.product(*(range(d) for d in logits_shape[:-1])):
        batch, i = row[:-1], row[-1]
        logits = []
        for j in range(s_dim):
            dot = 0.0
            for e in range(e_dim):
                dot += float(_broadcast_element(query, batch + (i, e))) * float(_broadcast_element(key, batch + (j, e)))
            x = dot * factor
            if causal:
                x += -inf if j > i else 0.0
            elif mask is not None:
                m = _broadcast_element(mask, row + (j,))
                x += (0.0 if m else -inf) if mask.dtype == np.bool_ else float(m)
            logits.append(x)
        top = -inf
        for x in logits:
            if math.isnan(x) or math.isnan(top):
                top = float("nan")
            elif x > top:
                top = x
        weights = [math.exp(x - top) for x in logits]
        total = 0.0
        for w in weights:
            total += w
        for ev in range(ev_dim):
            acc = 0.0
            for j in range(s_dim):
                acc += weights[j] / total * float(_broadcast_element(value, batch + (j, ev)))
            out[row + (ev,)] = acc
    return _to_type(out, query)


def grouped_mat_mul(mat_a, mat_b, offsets=None):
    """GroupedMatMul-17 one output element at a time: the sum over K (or over a group's tokens
    in the 2-D x 2-D form) of products, in Python integers or floats. The group of a token is
    the g with offsets[g-1] <= token < offsets[g] (offsets[-1] read as 0); a token past the
    last offset is in no group."""
    integral = mat_a.dtype.kind in "iu"

    def num(x):
        return int(x) if integral else float(x)

    zero = 0 if integral else 0.0
    if offsets is None:
        groups, rows, inner = mat_a.shape
        cols = mat_b.shape[2]
        out = np.zeros((groups, rows, cols), object)
        for g, m, n in itertools.product(range(groups), range(rows), range(cols)):
            acc = zero
            for k in range(inner):
                acc += num(mat_a[g, m, k]) * num(mat_b[g, k, n])
            out[g, m, n] = acc
    else:
        ends = [int(e) for e in offsets]
        starts = [0] + ends[:-1]
        if mat_b.ndim == 3:
            tokens, inner = mat_a.shape
            cols = mat_b.shape[2]
            out = np.zeros((tokens, cols), object)
            for t, n in itertools.product(range(tokens), range(cols)):
                acc = zero
                for g, (start, end) in enumerate(zip(starts, ends)):
                    if start <= t < end:
                        for k in range(inner):
                            acc += num(mat_a[t, k]) * num(mat_b[g, k, n])
                out[t, n] = acc
        else:
            rows, tokens = mat_a.shape
            cols = mat_b.shape[1]
            out = np.zeros((len(ends), rows, cols), object)
            for g, k, n in itertools.product(range(len(ends)), range(rows), range(cols)):
                acc = zero
                for t in range(starts[g], ends[g]):
                    acc += num(mat_a[k, t]) * num(mat_b[t, n])
                out[g, k, n] = acc
    return _to_type(out if integral else out.astype(np.float64), mat_a)
