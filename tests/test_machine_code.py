"""Compiled loops kept as machine code and loaded without numba (`ops/common/machine_code.py`):
a process that uses Gelu's and the depthwise convolution's loops through numba keeps them; a
later process's calls take them with the numba loop's bits, without importing numba; a file that
does not match its digest, another source or no cache directory leave numpy's paths."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import textwrap

import pytest

from irscatter.ops.common import accel, machine_code, probe_cache

pytestmark = pytest.mark.skipif(not accel.available(), reason="numba is not installed")

# Gelu's inputs (edge values among them) and depthwise layers of both loops (a 9x9 layer, and a
# 7x7 map that the loop over blocks of channels takes), f32.
_CASES = """
import numpy as np
from irscatter.ops.activation import elementwise
from irscatter.ops.convolution import plans
from irscatter.ops.convolution.kernels import grouped_convolution

rng = np.random.default_rng(5)
gelu_in = (rng.standard_normal(1 << 18) * 4).astype(np.float32)
gelu_in[:9] = [np.nan, np.inf, -np.inf, -0.0, 0.0, 1e-40, -1e-40, -20.0, -14.5]
LAYERS = [((1, 40, 1, 16, 16), (40, 1, 1, 9, 9), ([1, 1], [1, 1], [4, 4], [16, 16])),
          ((1, 192, 1, 7, 7), (192, 1, 1, 7, 7), ([1, 1], [1, 1], [3, 3], [7, 7])),
          ((2, 24, 1, 61, 53), (24, 2, 1, 3, 3), ([2, 2], [1, 1], [1, 1], [31, 27]))]

def layers():
    for x_shape, w_shape, args in LAYERS:
        x = rng.standard_normal(x_shape).astype(np.float32)
        x.reshape(-1)[:3] = [np.nan, -0.0, np.inf]
        w = rng.standard_normal(w_shape).astype(np.float32)
        plan = plans.plan_forward(x.shape, w.shape, x.dtype, *args)
        assert plan.name == "depthwise (compiled)", plan.name
        yield x, w, args, plan
"""

_KEEP = _CASES + """
from irscatter.ops.common import accel
with accel.use("numba"):
    elementwise.gelu_erf(gelu_in)
    for x, w, args, plan in layers():
        plan(x, plan.prepare(w))
"""

_LOAD = _CASES + """
import sys
from irscatter.ops.common import machine_code
from irscatter.ops.activation import gelu_polynomial
from irscatter.ops.convolution import depthwise_kept
got = elementwise.gelu_erf(gelu_in, first_call=True)
want = elementwise._gelu_erf_numpy(gelu_in, by_scipy=False)
assert got.tobytes() == want.tobytes()
for x, w, args, plan in layers():
    before, prepared = x.copy(), plan.prepare(w)
    want = grouped_convolution(x, w, *args)
    for call in range(2):  # (a small layer's first call takes numpy's taps plan, its second the loop)
        assert plan(x, prepared).tobytes() == want.tobytes(), (x.shape, call)
    assert np.array_equal(x, before, equal_nan=True)
print(machine_code.loaded(gelu_polynomial.KEPT_LOOP), machine_code.loaded(depthwise_kept.KEPT_LOOP),
      machine_code.loaded(depthwise_kept.KEPT_LANES), "numba" in sys.modules, "llvmlite" in sys.modules)
"""


def _run(code: str, cache: str, backend: str = "auto") -> str:
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          env={**os.environ, probe_cache.CACHE_VARIABLE: cache, "IRSCATTER_BACKEND": backend})
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.strip()


@pytest.fixture(scope="module")
def kept(tmp_path_factory):
    """A cache directory where a process kept the loops."""
    cache = tmp_path_factory.mktemp("cache")
    _run(_KEEP, str(cache))
    return cache


def _linked(cache) -> bool:
    return any((cache / machine_code.FOLDER).glob("*.so"))


def test_a_process_keeps_the_loops_numba_ran(kept):
    names = sorted(p.name.rsplit("-", 2)[0] for p in (kept / machine_code.FOLDER).glob("*.o"))
    assert names == ["depthwise-f32", "depthwise-lanes-f32", "gelu-f32"]
    for meta in (kept / machine_code.FOLDER).glob("*.json"):
        assert meta.with_suffix(".o").stat().st_size > 0


def test_a_later_process_takes_them_without_numba_with_its_bits(kept):
    # (through the shared library, where a C compiler linked one, without llvmlite's import)
    assert _run(_LOAD, str(kept)) == f"True True True False {not _linked(kept)}"


def test_without_the_shared_library_llvmlite_loads_the_object(kept, tmp_path):
    (tmp_path / machine_code.FOLDER).mkdir()
    for path in (kept / machine_code.FOLDER).iterdir():
        if path.suffix != ".so":
            (tmp_path / machine_code.FOLDER / path.name).write_bytes(path.read_bytes())
    assert _run(_LOAD, str(tmp_path)) == "True True True False True"


def test_keep_all_keeps_every_loop_ahead(tmp_path):
    _run("from irscatter.ops.common import machine_code; machine_code.keep_all()", str(tmp_path))
    assert len(list((tmp_path / machine_code.FOLDER).glob("*.json"))) == 3
    assert _run(_LOAD, str(tmp_path)).startswith("True True True False")


def test_a_shared_library_that_does_not_load_leaves_the_object(kept, tmp_path):
    if not _linked(kept):
        pytest.skip("no C compiler linked a shared library")
    (tmp_path / machine_code.FOLDER).mkdir()
    for path in (kept / machine_code.FOLDER).iterdir():
        data = path.read_bytes()
        if path.suffix == ".so":
            data = b"not a library" + data[13:]
        (tmp_path / machine_code.FOLDER / path.name).write_bytes(data)
    for meta in (tmp_path / machine_code.FOLDER).glob("*.json"):  # (its digest says it is the kept one)
        told = json.loads(meta.read_text())
        told["library"] = hashlib.sha256(meta.with_suffix(".so").read_bytes()).hexdigest()
        meta.write_text(json.dumps(told))
    assert _run(_LOAD, str(tmp_path)) == "True True True False True"


def test_the_numpy_backend_takes_none_of_them(kept):
    code = _CASES + """
import sys
from irscatter.ops.activation import gelu_polynomial
from irscatter.ops.common import machine_code
elementwise.gelu_erf(gelu_in, first_call=True)
elementwise.gelu_erf(gelu_in, compiled=True)
print(machine_code.loaded(gelu_polynomial.KEPT_LOOP), "numba" in sys.modules)
"""
    assert _run(code, str(kept), backend="numpy") == "False False"


def test_a_file_that_does_not_match_its_digest_is_not_loaded(kept, tmp_path):
    for path in (kept / machine_code.FOLDER).iterdir():
        data = path.read_bytes()
        if path.suffix in (".o", ".so"):  # one byte changed in the code
            data = data[:100] + bytes([data[100] ^ 1]) + data[101:]
        (tmp_path / machine_code.FOLDER).mkdir(exist_ok=True)
        (tmp_path / machine_code.FOLDER / path.name).write_bytes(data)
    assert _run(_LOAD, str(tmp_path)).startswith("False False False True")  # (numba's loops instead)


def test_nothing_is_kept_without_a_cache_directory(tmp_path):
    _run(_KEEP, "")
    assert _run(_LOAD, "").startswith("False False False True")


def test_a_loop_of_other_sources_finds_nothing(kept, monkeypatch):
    monkeypatch.setenv(probe_cache.CACHE_VARIABLE, str(kept))
    from irscatter.ops.activation import gelu_polynomial

    other = machine_code.KeptLoop(gelu_polynomial.KEPT_LOOP.name, ("irscatter.ops.common.accel",),
                                  gelu_polynomial.KEPT_LOOP.argtypes, gelu_polynomial.KEPT_LOOP.restype)
    assert machine_code._load(other) is None
    assert machine_code.folder() == kept / machine_code.FOLDER


def test_a_loop_keeps_its_latest_versions(kept, tmp_path, monkeypatch):
    (tmp_path / machine_code.FOLDER).mkdir()
    for path in (kept / machine_code.FOLDER).iterdir():
        (tmp_path / machine_code.FOLDER / path.name).write_bytes(path.read_bytes())
    monkeypatch.setenv(probe_cache.CACHE_VARIABLE, str(tmp_path))
    monkeypatch.setattr(machine_code, "KEPT_VERSIONS", 2)
    from irscatter.ops.activation import gelu_kernels, gelu_polynomial

    loop = gelu_polynomial.KEPT_LOOP
    others = [machine_code.KeptLoop(loop.name, (source,), loop.argtypes, loop.restype)
              for source in ("irscatter.ops.common.accel", "irscatter.ops.common.threads")]
    for other in others:
        machine_code.keep(other, gelu_kernels._as_c)
        os.utime(machine_code._path(other).with_suffix(".json"))  # (the later, the newer)
    kept_now = sorted(p.name for p in (tmp_path / machine_code.FOLDER).glob("gelu-f32-*.json"))
    assert kept_now == sorted(machine_code._path(o).with_suffix(".json").name for o in others)
    assert not list((tmp_path / machine_code.FOLDER).glob(machine_code._path(loop).name + ".*"))  # (the oldest)
    assert len(list((tmp_path / machine_code.FOLDER).glob("depthwise-*.json"))) == 2
