"""Gelu's erf form on the types f32 holds (`ops/activation/gelu_polynomial.py`): numpy's two paths,
by the polynomial (which needs no scipy) and by scipy's normal distribution function, give
`exact`'s bits, the C library's x * Phi(x) rounded once (a NaN's payload aside), on every f16
and bf16 input and f32 inputs of every kind. The whole f32 range is `tools/gelu_fit.py
check`'s, too long for a test."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import ml_dtypes
import numpy as np
import pytest
from gelu_inputs import bits, f32_inputs
from oracles import activation as oracle

from irscatter.ops.activation import elementwise, gelu_polynomial
from irscatter.ops.activation.elementwise import gelu_erf
from irscatter.ops.common import accel

PATHS = ["polynomial", "scipy"]


def _numpy(x: np.ndarray, path: str) -> np.ndarray:
    return elementwise._gelu_erf_numpy(x, by_scipy=path == "scipy")


def test_exact_is_the_formula_in_f64_rounded_once():
    tiny = [2.0**-59, -(2.0**-59), 2.0**-60, -(2.0**-61), 1e-30, -1e-40, 1e-45, -1e-45]  # on both sides of TINY
    x = np.concatenate([np.linspace(-15, 6, 2001), [-14.5, -13.3, 0.0, -0.0, np.inf, -np.inf, np.nan], tiny]).astype(np.float32)
    want = np.asarray(oracle.gelu_erf(x.astype(np.float64)), np.float64).astype(np.float32)
    np.testing.assert_array_equal(bits(gelu_polynomial.exact(x)), bits(want))


@pytest.mark.parametrize("path", PATHS)
def test_f32_inputs_of_every_kind(path):
    x = f32_inputs(11)
    got = _numpy(x, path)
    assert got.dtype == np.float32
    np.testing.assert_array_equal(bits(got), bits(gelu_polynomial.exact(x)))


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("dtype", [np.float16, ml_dtypes.bfloat16], ids=["f16", "bf16"])
def test_every_16_bit_input(dtype, path):
    x = np.arange(1 << 16, dtype=np.uint16).view(dtype)
    got = _numpy(x, path)
    assert got.dtype == x.dtype
    with np.errstate(invalid="ignore"):
        want = gelu_polynomial.exact(x.astype(np.float32)).astype(dtype)
    np.testing.assert_array_equal(bits(got), bits(want))


@pytest.mark.parametrize("path", PATHS)
def test_the_8_bit_types(path):
    for dtype in (ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e5m2):
        x = np.arange(256, dtype=np.uint8).view(dtype)
        got = _numpy(x, path)
        with np.errstate(invalid="ignore"):
            want = gelu_polynomial.exact(x.astype(np.float32)).astype(dtype)
        assert got.dtype == x.dtype
        np.testing.assert_array_equal(bits(got), bits(want))


def test_few_elements_are_left_to_exact():
    """The polynomial flags the results whose rounding it cannot prove, the inputs between -TAIL
    and -REACH, and no others; NaN and -inf are their own result, NaN."""
    x = (np.random.default_rng(5).standard_normal(1 << 20) * 3).astype(np.float32)
    out, unsure, product = gelu_polynomial.estimate(x)
    assert out.dtype == np.float32 and product.dtype == np.float64
    assert 0 < np.count_nonzero(unsure) < x.size >> 12
    sure = ~unsure
    np.testing.assert_array_equal(bits(out[sure][:1 << 16]), bits(gelu_polynomial.exact(x[sure][:1 << 16])))
    tails = np.array([-14.5, -14.01, -20.0, -15.0, -1e30, np.nan, -np.inf, np.inf], np.float32)
    out, unsure, _ = gelu_polynomial.estimate(tails)
    assert unsure.tolist() == [True, True, False, False, False, False, False, False]
    assert bits(out[2:5]).tolist() == bits(np.full(3, -0.0, np.float32)).tolist()
    assert np.isnan(out[5:7]).all() and out[7] == np.inf


@pytest.mark.parametrize("shape", [(), (1,), (0,), (3, 0, 2), (2, 3), (2, 1, 3), (1, 2, 3, 4), (2, 1, 3, 1, 5)],
                         ids=str)
@pytest.mark.parametrize("path", [*PATHS, "compiled"])
def test_shapes_and_inputs_kept(shape, path):
    """On every path: numpy's two, and the compiled loop's (where numba is installed)."""
    if path == "compiled" and not accel.available():
        pytest.skip("numba is not installed")
    x = (np.random.default_rng(1).standard_normal(shape) * 4).astype(np.float32)
    before = x.copy()
    if path == "compiled":
        with accel.use("numba"):
            got = gelu_erf(x, compiled=True)
    else:
        got = _numpy(x, path)
    assert got.shape == x.shape and got.dtype == x.dtype
    np.testing.assert_array_equal(bits(np.asarray(got)), bits(gelu_polynomial.exact(x)))
    np.testing.assert_array_equal(x, before)


@pytest.mark.parametrize("path", PATHS)
def test_a_large_strided_input_by_blocks(path):
    x = (np.random.default_rng(2).standard_normal((512, 600)) * 4).astype(np.float32).T[::2]
    np.testing.assert_array_equal(bits(_numpy(x, path)), bits(gelu_polynomial.exact(x)))


def test_scipy_leaves_few_elements_to_exact():
    x = (np.random.default_rng(6).standard_normal(1 << 20) * 3).astype(np.float32)
    out, unsure, product = gelu_polynomial.scipy_estimate(x)
    assert 0 < np.count_nonzero(unsure) < x.size >> 12
    tails = np.array([-14.5, -20.0, -40.0, np.nan, -np.inf, np.inf], np.float32)
    out, unsure, _ = gelu_polynomial.scipy_estimate(tails)
    assert not unsure.any()
    np.testing.assert_array_equal(bits(out), bits(gelu_polynomial.exact(tails)))


def test_a_layers_first_call_does_not_import_scipy():
    """Importing scipy.special takes longer than a small model's whole first run: a layer's first
    call takes the polynomial, its later ones scipy's faster path."""
    script = textwrap.dedent("""
        import sys
        import numpy as np
        from irscatter.ir.graph import Layer
        from irscatter.ops.activation.elementwise import OPS
        from irscatter.ops.common import accel
        x = (np.random.default_rng(0).standard_normal(1 << 18) * 3).astype(np.float32)
        layers = [OPS[name](Layer(id=1, name="g", type="Gelu", version=f"opset{version}", attrs={}))
                  for name, version in (("Gelu7", 7), ("Gelu", 2), ("Gelu7", 7))]
        with accel.use("numpy"):
            first = [layers[0].compute(x), layers[1].compute(x), layers[2].compute(x.astype(np.float16))]
            before = "scipy.special" in sys.modules
            second = layers[1].compute(x)
        print(before, "scipy.special" in sys.modules, (first[1] == second).all())
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["False", "True", "True"]
