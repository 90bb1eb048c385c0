"""The probes' answers kept on disk from one process to the next (`ops/common/probe_cache.py`)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest
from threadpoolctl import threadpool_limits

from irscatter.ops.common import probe_cache, products


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv(probe_cache.CACHE_VARIABLE, str(tmp_path))
    probe_cache.forget()
    yield tmp_path
    probe_cache.forget()


def _never():
    pytest.fail("probed again")


def test_an_answer_is_probed_once_then_read_by_the_next_process(cache_dir):
    calls = []
    assert probe_cache.cached("a question", int, lambda: calls.append(1) or 24) == 24
    assert probe_cache.cached("a question", int, _never) == 24
    probe_cache.forget()  # as a new process would
    assert probe_cache.cached("a question", int, _never) == 24
    assert calls == [1]
    kept = json.loads((cache_dir / probe_cache.FILE_NAME).read_text())
    assert kept == {probe_cache.machine_key(): {"a question": 24}}


def test_another_process_reads_the_answers(cache_dir):
    probe_cache.cached("row quantum <f4", int, lambda: 24)
    code = ("from irscatter.ops.common import probe_cache\n"
            "print(probe_cache.cached('row quantum <f4', int, lambda: -1))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                          env={**os.environ, probe_cache.CACHE_VARIABLE: str(cache_dir)})
    assert done.stdout.strip() == "24"


@pytest.mark.parametrize("content", ["{not json", "[1, 2]", '{"%s": {"a question": "yes"}}', '{"%s": 7}', ""])
def test_a_file_that_does_not_hold_an_answer_of_its_kind_is_probed_over(cache_dir, content):
    path = cache_dir / probe_cache.FILE_NAME
    path.write_text(content.replace("%s", probe_cache.machine_key()) if "%s" in content else content)
    assert probe_cache.cached("a question", bool, lambda: True) is True
    probe_cache.forget()
    assert probe_cache.cached("a question", bool, _never) is True


def test_a_bool_is_not_taken_for_an_int_nor_an_int_for_a_bool(cache_dir):
    probe_cache.cached("quantum", int, lambda: 1)
    probe_cache.cached("cuts", bool, lambda: False)
    probe_cache.forget()
    assert probe_cache.cached("quantum", bool, lambda: True) is True
    assert probe_cache.cached("cuts", int, lambda: 16) == 16


def test_another_machine_is_probed_again_and_the_file_keeps_the_latest_machines(cache_dir, monkeypatch):
    for i in range(probe_cache.MACHINES_KEPT + 2):
        monkeypatch.setattr(probe_cache, "machine_key", lambda i=i: f"machine {i}")
        probe_cache.forget()
        assert probe_cache.cached("a question", int, lambda i=i: i) == i
    kept = json.loads((cache_dir / probe_cache.FILE_NAME).read_text())
    assert list(kept) == [f"machine {i}" for i in range(2, probe_cache.MACHINES_KEPT + 2)]
    assert not [p for p in cache_dir.iterdir() if p.name != probe_cache.FILE_NAME]  # no temporary file left


def test_no_directory_or_one_that_cannot_be_written_keeps_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv(probe_cache.CACHE_VARIABLE, "")
    probe_cache.forget()
    assert probe_cache.cache_file() is None
    assert probe_cache.cached("a question", int, lambda: 3) == 3
    blocked = tmp_path / "a file"
    blocked.write_text("")
    monkeypatch.setenv(probe_cache.CACHE_VARIABLE, str(blocked / "below"))
    probe_cache.forget()
    assert probe_cache.cached("a question", int, lambda: 5) == 5
    probe_cache.forget()


def test_the_default_place_follows_xdg(monkeypatch, tmp_path):
    monkeypatch.delenv(probe_cache.CACHE_VARIABLE)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert probe_cache.cache_file() == tmp_path / "irscatter" / probe_cache.FILE_NAME


def test_the_products_take_their_quanta_from_the_file(cache_dir, monkeypatch):
    f32 = np.dtype(np.float32)
    monkeypatch.setattr(products, "_quantum", {})
    monkeypatch.setattr(products, "_column_quantum", {})
    with threadpool_limits(1, "blas"):  # (as the products ask)
        found = products.quantum(f32), products.column_quantum(f32)
    monkeypatch.setattr(products, "_quantum", {})
    monkeypatch.setattr(products, "_column_quantum", {})
    monkeypatch.setattr(products, "_cuts_keep_bits", lambda *args: pytest.fail("probed again"))
    monkeypatch.setattr(products, "_column_cuts_keep_bits", lambda *args: pytest.fail("probed again"))
    probe_cache.forget()
    assert (products.quantum(f32), products.column_quantum(f32)) == found


def test_the_key_is_the_blas_and_the_processor(monkeypatch):
    key = probe_cache.machine_key()
    assert probe_cache.machine_key() == key
    described = probe_cache.processor()
    assert described and all(isinstance(part, str) for part in described)
    monkeypatch.setattr(probe_cache, "processor", lambda: ["AuthenticAMD", "25", "17", "AMD EPYC"])
    assert probe_cache.machine_key() != key
