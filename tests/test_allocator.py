"""The allocator settings (runtime/allocator.py): a compiled model's runs reuse the memory they
free instead of taking fresh pages from the kernel, unless the environment says otherwise. Each
case runs in a fresh interpreter, whose malloc has not been set yet."""

from __future__ import annotations

import os
import platform
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="the settings are glibc's")

# Makes and drops sixteen 1 MB arrays twice, and prints the page faults of the second round: a
# heap that kept the first round's memory serves the second without touching a new page.
PROGRAM = textwrap.dedent("""
    import resource, numpy as np
    from irscatter.runtime import allocator
    print(allocator.keep_freed_memory())
    def round():
        arrays = [np.ones(1 << 18, np.float32) for _ in range(16)]
        del arrays
    round()
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    round()
    print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
""")


def _run(**environment: str) -> tuple[str, int]:
    env = {**os.environ, **environment}
    done = subprocess.run([sys.executable, "-c", PROGRAM], capture_output=True, text=True, env=env, timeout=60,
                          check=True)
    kept, faults = done.stdout.split()
    return kept, int(faults)


def test_freed_memory_is_reused_without_new_pages():
    kept, faults = _run(IRSCATTER_ALLOCATOR="")
    assert kept == "True"
    assert faults < 64  # 16 MB of fresh pages would be 4096 faults


def test_the_environment_can_leave_malloc_alone():
    kept, _ = _run(IRSCATTER_ALLOCATOR="system")
    assert kept == "False"


def test_compiling_a_model_sets_the_allocator():
    program = ("import irscatter, sys; from irscatter.runtime import allocator; "
               "irscatter.compile_model(sys.argv[1]); print(allocator._done)")
    xml = Path(__file__).parent.parent / "models" / "small_cnn" / "model.xml"
    done = subprocess.run([sys.executable, "-c", program, str(xml)], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "IRSCATTER_ALLOCATOR": ""}, check=True)
    assert done.stdout.strip() == "True"
