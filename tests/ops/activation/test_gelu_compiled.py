"""Gelu's compiled loop (`ops/activation/gelu_kernels.py`) gives numpy's path's bits (a NaN's
payload aside): every f16 and bf16 input, and f32 inputs of every kind (the whole f32 range is
`tools/gelu_fit.py check`'s, too long for a test). A layer takes the loop from its second
call, or its first once the loop is loaded."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import ml_dtypes
import numpy as np
import pytest
from gelu_inputs import bits, f32_inputs

from irscatter.ir.graph import Layer
from irscatter.ops.activation import elementwise, gelu_polynomial
from irscatter.ops.activation.elementwise import OPS, gelu_erf
from irscatter.ops.common import accel

Gelu, Gelu7 = OPS["Gelu"], OPS["Gelu7"]

pytestmark = pytest.mark.skipif(not accel.available(), reason="numba is not installed")


def _compiled(x: np.ndarray) -> np.ndarray:
    with accel.use("auto"):
        return gelu_erf(x, compiled=True)


def _numpy(x: np.ndarray) -> np.ndarray:
    with accel.use("numpy"):
        return gelu_erf(x, compiled=True)


@pytest.mark.parametrize("dtype", [np.float16, ml_dtypes.bfloat16], ids=["f16", "bf16"])
def test_every_16_bit_input(dtype):
    x = np.arange(1 << 16, dtype=np.uint16).view(dtype)
    got, want = _compiled(x), _numpy(x)
    assert got.dtype == want.dtype == x.dtype
    np.testing.assert_array_equal(bits(got), bits(want))


def test_f32_inputs_of_every_kind():
    x = f32_inputs(7, 16)
    np.testing.assert_array_equal(bits(_compiled(x)), bits(_numpy(x)))


def test_a_few_elements_are_left_to_exact():
    """The loop flags the results whose rounding it cannot vouch for (and NaN and -inf), and no
    others."""
    from irscatter.ops.activation import gelu_kernels

    x = (np.random.default_rng(3).standard_normal(1 << 20) * 3).astype(np.float32)
    out, unsure = np.empty(x.size, np.float32), np.empty(x.size, np.bool_)
    gelu_kernels.gelu_f32(x, out, unsure)
    assert 0 < np.count_nonzero(unsure) < x.size >> 12
    sure = ~unsure
    np.testing.assert_array_equal(bits(out[sure]), bits(gelu_polynomial.exact(x[sure])))
    tails = np.array([-14.5, -14.01, np.nan, -20.0, -15.0, -1e30], np.float32)
    gelu_kernels.gelu_f32(tails, out[:6], unsure[:6])
    assert unsure[:3].all() and not unsure[3:6].any()
    assert bits(out[3:6]).tolist() == bits(np.full(3, -0.0, np.float32)).tolist()


def test_the_loops_exponential_and_its_range():
    """The Gaussian factor the loop computes for itself: within a few ulps of numpy's exp(-x^2 / 2)
    down to LOWEST, and 0 below it (and for NaN), where x * Phi(x) rounds to x or -0.0 anyway."""
    from irscatter.ops.activation import gelu_kernels

    edge = float(np.sqrt(-2 * gelu_kernels.LOWEST))
    t = np.concatenate([np.linspace(0.0, edge * (1 - 1e-12), 20001), [edge * (1 + 1e-12), 38.7, 1e10, np.inf]])
    got = np.array([gelu_kernels._gauss(v) for v in t])
    want = np.exp(-0.5 * t * t)
    inside = -0.5 * t * t >= gelu_kernels.LOWEST
    assert inside[:20001].all() and not inside[-4:].any()
    # (numpy's own exp differs by CPU within an ulp or two; SLACK is near 1e-12)
    assert np.max(np.abs(got[inside] / want[inside] - 1)) < 4e-15
    assert (got[~inside] == 0).all() and gelu_kernels._gauss(np.nan) == 0
    x = np.array([edge, -edge, 37.42, -37.42, 38.7, -38.7, 1e10, -1e10, np.inf, -np.inf, np.nan], np.float32)
    np.testing.assert_array_equal(bits(_compiled(x)), bits(_numpy(x)))


def test_a_strided_view_and_f64():
    x = (np.random.default_rng(2).standard_normal((64, 48)) * 4).astype(np.float32).T[::2]
    np.testing.assert_array_equal(bits(_compiled(x)), bits(_numpy(x)))
    wide = x.astype(np.float64)  # f64 always takes scipy's f64 path: the loop's results are f32
    np.testing.assert_array_equal(bits(_compiled(wide)), bits(_numpy(wide)))


def _loop_calls(monkeypatch, warm: bool) -> list[int]:
    """The sizes of the inputs the compiled loop gets from here on, the loop not loaded yet;
    `warm`: whether another compiled loop has run in the process."""
    taken: list[int] = []
    real = elementwise._gelu_erf_compiled

    def spy(x):
        taken.append(x.size)
        return real(x)

    monkeypatch.setattr(elementwise, "_gelu_erf_compiled", spy)
    _unload(monkeypatch)
    monkeypatch.setattr(accel, "warm", lambda: warm)
    return taken


def _unload(monkeypatch) -> None:
    """The loop as not loaded: its module gone from sys.modules and from its package (where an
    earlier test of the process left it, an import would find it there and not load it again)."""
    import irscatter.ops.activation as package

    monkeypatch.delitem(sys.modules, elementwise.GELU_KERNELS, raising=False)
    monkeypatch.delattr(package, "gelu_kernels", raising=False)


def _load(monkeypatch, loop) -> None:
    """The loop's module `loop` as loaded."""
    import irscatter.ops.activation as package

    monkeypatch.setitem(sys.modules, elementwise.GELU_KERNELS, loop)
    monkeypatch.setattr(package, "gelu_kernels", loop, raising=False)


@pytest.mark.parametrize(("op", "attrs"), [(Gelu, {}), (Gelu7, {"approximation_mode": "erf"}), (Gelu7, {})])
def test_a_layer_takes_the_loop_from_its_second_call(op, attrs, monkeypatch):
    taken = _loop_calls(monkeypatch, warm=False)
    size = accel.LOAD_ELEMENTS
    x = np.linspace(-5, 5, size, dtype=np.float32)
    small = x[:11]
    with accel.use("auto"):
        layer = op(Layer(id=1, name="g", type="Gelu", version=f"opset{op.row.version}", attrs=attrs))
        first, second = layer.compute(x), layer.compute(x)
        assert taken == [size]  # the second call only
        np.testing.assert_array_equal(bits(first), bits(second))
        loop = sys.modules[elementwise.GELU_KERNELS]  # (the second call loaded it)
        _unload(monkeypatch)
        tiny = op(Layer(id=3, name="t", type="Gelu", version=f"opset{op.row.version}", attrs=attrs))
        tiny.compute(small)
        tiny.compute(small)
        assert taken == [size]  # a small layer does not load the loop
        _load(monkeypatch, loop)
        op(Layer(id=2, name="h", type="Gelu", version=f"opset{op.row.version}", attrs=attrs)).compute(small)
        assert taken == [size, 11]  # a new layer's first call, once the loop is loaded, however small
        with accel.use("numpy"):
            layer.compute(x)
        assert taken == [size, 11]  # never without numba


def test_once_a_compiled_loop_has_run_a_large_layers_first_call_takes_the_loop(monkeypatch):
    """Once numba is set up in the process (`accel.warm`), a layer's first call takes the loop
    where its output is large enough for a second call to load it; a small layer still does not."""
    taken = _loop_calls(monkeypatch, warm=True)
    x = np.linspace(-5, 5, accel.LOAD_ELEMENTS, dtype=np.float32)
    with accel.use("auto"):
        layer = Gelu7(Layer(id=1, name="g", type="Gelu", version="opset7", attrs={}))
        got = layer.compute(x)
        assert taken == [x.size]
        _unload(monkeypatch)  # (that call loaded it)
        Gelu7(Layer(id=2, name="s", type="Gelu", version="opset7", attrs={})).compute(x[:11])
        assert taken == [x.size]
    np.testing.assert_array_equal(bits(got), bits(_numpy(x)))


def test_in_a_warm_process_a_small_layers_second_call_takes_the_loop(monkeypatch):
    """Once numba is set up (`accel.warm`), a layer too small to load the loop on its own takes
    it from its second call on (loading it from numba's cache costs milliseconds, once); its
    first call stays on numpy's path, with the same bits."""
    taken = _loop_calls(monkeypatch, warm=True)
    x = np.linspace(-5, 5, 11, dtype=np.float32)
    with accel.use("auto"):
        layer = Gelu7(Layer(id=1, name="s", type="Gelu", version="opset7", attrs={}))
        first = layer.compute(x)
        assert taken == []
        second = layer.compute(x)
        assert taken == [11]
    np.testing.assert_array_equal(bits(first), bits(second))
    np.testing.assert_array_equal(bits(second), bits(_numpy(x)))


def test_a_process_is_warm_once_a_compiled_loop_has_run():
    """`accel.warm` in a fresh process: false until a compiled loop has loaded, true after."""
    script = textwrap.dedent("""
        import numpy as np
        from irscatter.ops.activation.elementwise import gelu_erf
        from irscatter.ops.common import accel
        before = accel.warm()
        with accel.use("numba"):
            gelu_erf(np.ones(8, np.float32), compiled=True)
        print(before, accel.warm())
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["False", "True"]


def test_the_tanh_form_never_takes_the_loop(monkeypatch):
    monkeypatch.setattr(elementwise, "_gelu_erf_compiled", lambda x: pytest.fail("the erf form's loop"))
    layer = Gelu7(Layer(id=1, name="g", type="Gelu", version="opset7", attrs={"approximation_mode": "tanh"}))
    x = np.linspace(-5, 5, 11, dtype=np.float32)
    with accel.use("auto"):
        layer.compute(x)
        layer.compute(x)
