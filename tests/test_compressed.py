"""MatMuls whose weight NNCF compressed are run without the decompressed weight: looked up by
blocks of rows from a table per fiber, with the same bits as the decompression layers run as
written (irscatter/runtime/compressed.py)."""

import numpy as np
import pytest
from test_folding import _Builder, _compiled, count_kernel_calls

from irscatter.ops.common import accel, threads
from irscatter.runtime import compressed
from irscatter.runtime.compressed import ROW_ALIGN, Arithmetic, Codebook, _LookedUp

ROWS, K = 2 * ROW_ALIGN, 256  # two blocks' worth of rows, so that the product is split


def _nncf_matmul(folder, kind: str, tokens: int = 1, work: str = "f16", zero_point: float | None = None,
                 gather: bool = False):
    """x[tokens, 256] @ W^T, W[128, 256] as NNCF writes it: u8 or i8 per row (Convert f16,
    Subtract a converted zero point of the codes' type, Multiply an f16 scale, Convert f32); u4
    in groups of 64 with a Reshape before the last Convert; i4 in groups of 64 with a scale only.
    `work` f32: the chain in f32, no last Convert; `zero_point`: one f16 Const instead; `gather`:
    the weight's rows are also gathered at the ids of a second input (a tied embedding)."""
    rng = np.random.default_rng(5)
    b = _Builder()
    x = b.add("Parameter", {"shape": f"{tokens},{K}", "element_type": "f32"}, [], (tokens, K), "f32")
    grouped = kind in ("u4", "i4")
    shape, side = ((ROWS, 4, 64), (ROWS, 4, 1)) if grouped else ((ROWS, K), (ROWS, 1))
    low, high = {"i4": (-8, 8), "u4": (0, 16), "i8": (-128, 128), "u8": (0, 256)}[kind]
    weight = b.add("Convert", {"destination_type": work}, [b.const(rng.integers(low, high, shape), kind)], shape, work)
    if zero_point is not None:
        zero = b.const(np.full(side, zero_point, np.float16), "f16")
        weight = b.add("Subtract", {"auto_broadcast": "numpy"}, [weight, zero], shape, work)
    elif kind != "i4":
        zero = b.add("Convert", {"destination_type": work}, [b.const(rng.integers(low, high, side), kind)], side, work)
        weight = b.add("Subtract", {"auto_broadcast": "numpy"}, [weight, zero], shape, work)
    scale = b.const((rng.random(side) / 50).astype({"f16": np.float16, "f32": np.float32}[work]), work)
    weight = b.add("Multiply", {"auto_broadcast": "numpy"}, [weight, scale], shape, work)
    if grouped:
        weight = b.add("Reshape", {"special_zero": "false"}, [weight, b.const(np.array([ROWS, K]), "i64")],
                       (ROWS, K), work)
    if work != "f32":
        weight = b.add("Convert", {"destination_type": "f32"}, [weight], (ROWS, K), "f32")
    y = b.add("MatMul", {"transpose_a": "false", "transpose_b": "true"}, [x, weight], (tokens, ROWS), "f32")
    b.add("Result", None, [y], (), "f32")
    if gather:
        ids = b.add("Parameter", {"shape": "1,6", "element_type": "i64"}, [], (1, 6), "i64")
        rows = b.add("Gather", {"batch_dims": 0}, [weight, ids, b.const(np.array(0), "i64")], (1, 6, K), "f32",
                     version="opset8")
        b.add("Result", None, [rows], (), "f32")
    return b.save(folder)


@pytest.fixture
def calls(monkeypatch):
    return count_kernel_calls(monkeypatch)


def _feed(tokens: int) -> np.ndarray:
    return np.random.default_rng(tokens).standard_normal((tokens, K), dtype=np.float32)


def _looked_up(compiled) -> list:
    return [step for step in compiled.plan.run_steps if isinstance(step.compute, _LookedUp)]


@pytest.fixture
def tables(monkeypatch):
    """Compiling with a table for every chain, where the arithmetic would otherwise be taken."""
    monkeypatch.setattr(compressed, "ARITHMETIC", False)


def _book(compiled):
    (step,) = _looked_up(compiled)
    return step.compute.book


@pytest.mark.parametrize("kind, tokens, backend, work", [
    ("u8", 1, "numba", "f16"), ("u4", 1, "numpy", "f16"), ("i4", 1, "numba", "f16"), ("u8", 3, "numpy", "f16"),
    ("i8", 1, "numba", "f16"), ("u4", 1, "numba", "f32")])
def test_a_compressed_matmul_gives_the_bits_of_its_decompression_layers(tmp_path, calls, monkeypatch, kind, tokens,
                                                                        backend, work):
    """One token: the product by blocks of rows; three: the weight decompressed whole. Either
    way, by arithmetic and from tables, through numba's loops or numpy's, the bits of the layers
    run as written, except one token by arithmetic through numba, decompressed inside the
    product's own loop, which sums in another order (the test below checks its values); and no
    decompression layer runs once the table is built (the arithmetic needs none)."""
    if backend == "numba" and not accel.available():
        pytest.skip("numba is not installed")
    xml = _nncf_matmul(tmp_path, kind, tokens, work)
    every_time = _compiled(xml, budget=0)
    assert not _looked_up(every_time)
    want = [every_time.run({"l0": _feed(tokens) * k})[0].tobytes() for k in (1, -2)]
    for arithmetic in (True, False):
        monkeypatch.setattr(compressed, "ARITHMETIC", arithmetic)
        calls.update(dict.fromkeys(calls, 0))
        with accel.use("numba" if accel.available() else "numpy"):  # compiled where the arithmetic is taken
            compiled = _compiled(xml)  # (with numba, the table is built here, by `warm_compiled_loops`)
        assert isinstance(_book(compiled), Arithmetic if arithmetic and accel.available() else Codebook)
        assert not compiled.plan.fold.kept  # the f32 weight is not kept
        with accel.use(backend):
            got = [compiled.run({"l0": _feed(tokens) * k})[0].tobytes() for k in (1, -2)]
        if tokens == 1 and isinstance(_book(compiled), Arithmetic) and backend == "numba":
            for mine, theirs in zip(got, want):
                mine, theirs = np.frombuffer(mine, np.float32), np.frombuffer(theirs, np.float32)
                np.testing.assert_allclose(mine, theirs, rtol=0, atol=2e-6 * np.abs(theirs).max())
        else:
            assert got == want
        assert calls["Multiply"] == (0 if isinstance(_book(compiled), Arithmetic) else 1)  # the table, once


@pytest.mark.skipif(not accel.available(), reason="numba is not installed")
@pytest.mark.parametrize("kind, work", [("u8", "f16"), ("i8", "f16"), ("i4", "f16"), ("u4", "f32")])
def test_the_one_pass_product_has_the_weight_of_the_layers_and_a_watched_run_its_bits(tmp_path, kind, work):
    """One token times a weight decompressed inside the product's loop: fed each unit vector,
    a product gives one column of the weight, exactly whatever the order of its sums, so every
    value the loop decompresses is compared with the layers run as written. A run that watches
    each layer gives the plain run's bits (its MatMul is made the same way); precision emulation,
    which may change the weight, multiplies the weight the layers give."""
    xml = _nncf_matmul(tmp_path, kind, 1, work)
    as_written = _compiled(xml, budget=0)
    with accel.use("numba"):
        compiled = _compiled(xml)
        assert isinstance(_book(compiled), Arithmetic)
        for unit in np.eye(K, dtype=np.float32):
            feed = {"l0": unit[None]}
            assert compiled.run(feed)[0].tobytes() == as_written.run(feed)[0].tobytes()
        plain = compiled.run({"l0": _feed(1)})[0]
        seen = []
        watched = compiled.run({"l0": _feed(1)}, hook=lambda layer, i, o: seen.append(layer.type))
        assert "MatMul" in seen and watched[0].tobytes() == plain.tobytes()
        emulated = compiled.run({"l0": _feed(1)}, precision="f16")
        assert emulated[0].tobytes() == as_written.run({"l0": _feed(1)}, precision="f16")[0].tobytes()


@pytest.mark.parametrize("kind, backend", [("u8", "numba"), ("u4", "numpy"), ("i4", "numba")])
def test_a_tied_embedding_gathers_its_rows_from_the_compressed_weight(tmp_path, kind, backend):
    """A weight that a MatMul multiplies by and a Gather takes rows of (a tied embedding and
    output layer) is not kept decompressed: the Gather decompresses the rows it asks for, with
    the layers' bits, negative ids from the end and zeros for ids outside, as Gather does."""
    if backend == "numba" and not accel.available():
        pytest.skip("numba is not installed")
    xml = _nncf_matmul(tmp_path, kind, gather=True)
    ids = np.array([[3, -1, ROWS + 4, 3, -ROWS - 1, 0]])
    feeds = {"l0": _feed(1), ids_name(xml): ids}
    want = _compiled(xml, budget=0).run(feeds)
    with accel.use("numba" if accel.available() else "numpy"):
        compiled = _compiled(xml)
    assert len(_looked_up(compiled)) == 1 and not compiled.plan.fold.kept
    assert any(isinstance(step.compute, compressed._GatheredRows) for step in compiled.plan.run_steps)
    with accel.use(backend):
        got = compiled.run(feeds)
    assert got[1].tobytes() == want[1].tobytes() and not got[1][0, 2].any() and not got[1][0, 4].any()
    np.testing.assert_allclose(got[0], want[0], rtol=0, atol=2e-6 * np.abs(want[0]).max())


@pytest.mark.skipif(not accel.available(), reason="numba is not installed")
@pytest.mark.parametrize("kind, tokens", [("u4", 1), ("i4", 1), ("u4", 3), ("i4", 3)])
def test_four_bit_codes_are_read_two_to_a_byte_as_the_file_holds_them(tmp_path, monkeypatch, kind, tokens):
    """4-bit codes stay packed: a product of one token reads the file's bytes, blocks of several
    tokens and gathered rows unpack only what they decode, and the codes are never unpacked
    whole; the values are the layers' (one token's to the order of its sums, gathered rows to
    the bit), on one core or split."""
    monkeypatch.setattr(compressed, "TOKENS_BLOCK_BYTES", ROW_ALIGN * K * 4)
    xml = _nncf_matmul(tmp_path, kind, tokens, gather=True)
    ids = np.array([[3, -1, ROWS + 4, 3, -ROWS - 1, 0]])
    feeds = {"l0": _feed(tokens), ids_name(xml): ids}
    want = _compiled(xml, budget=0).run(feeds)
    with accel.use("numba"):
        compiled = _compiled(xml)
        book = _book(compiled)
        assert isinstance(book, Arithmetic) and book.packed is not None and book.packed.shape == (ROWS * 4, 32)
        for policy, split_work in (("one", threads.SPLIT_WORK), ("split", 1)):
            monkeypatch.setattr(threads, "_policy", policy)
            monkeypatch.setattr(threads, "SPLIT_WORK", split_work)
            got = compiled.run(feeds)
            assert got[1].tobytes() == want[1].tobytes()
            np.testing.assert_allclose(got[0], want[0], rtol=0, atol=2e-6 * np.abs(want[0]).max())
    assert "codes" not in vars(book)  # (a cached property: set once read)
    assert book.codes_layer.const_data._value is None  # nor was the codes Const decoded for the run
    with accel.use("numba"):
        compiled.run(feeds, hook=lambda layer, i, o: None)  # a run of the layers as written decodes it
    assert book.codes_layer.const_data._value is not None


def ids_name(xml) -> str:
    """The name of the ids input of `_nncf_matmul(gather=True)` (its last Parameter)."""
    import irscatter

    return irscatter.read_model(xml).parameters[-1].name


@pytest.mark.parametrize("route", ["blocks", "in two"])
def test_several_tokens_go_by_blocks_of_weight_rows_with_a_watched_runs_bits(tmp_path, monkeypatch, route):
    """Several tokens: blocks of weight rows, each times the tokens in one BLAS call; a run that
    watches the layers multiplies the same blocks of the weight they give, so both runs have
    the same bits, and the values are the whole product's to the last bits of its sums. A
    weight smaller than a block goes in two blocks when the work is large enough."""
    if route == "blocks":
        monkeypatch.setattr(compressed, "TOKENS_BLOCK_BYTES", ROW_ALIGN * K * 4)
    else:
        monkeypatch.setattr(compressed, "TOKENS_SPLIT_WORK", 1)
        calls = []
        monkeypatch.setattr(compressed._LookedUp, "_whole", lambda self, *a: calls.append(a))  # never taken
    xml = _nncf_matmul(tmp_path, "u8", tokens=3)
    want = _compiled(xml, budget=0).run({"l0": _feed(3)})[0]
    compiled = _compiled(xml)
    plain = compiled.run({"l0": _feed(3)})[0]
    seen = []
    watched = compiled.run({"l0": _feed(3)}, hook=lambda layer, i, o: seen.append(layer.type))
    assert "MatMul" in seen and watched[0].tobytes() == plain.tobytes()
    np.testing.assert_allclose(plain, want, rtol=0, atol=2e-6 * np.abs(want).max())
    # the blocks shared out between the cores (each part its own blocks and buffer): the same bits
    monkeypatch.setattr(threads, "SPLIT_WORK", 1)
    monkeypatch.setattr(threads, "_policy", "split")
    assert compiled.run({"l0": _feed(3)})[0].tobytes() == plain.tobytes()
    assert compiled.run({"l0": _feed(3)}, hook=lambda layer, i, o: None)[0].tobytes() == plain.tobytes()


@pytest.mark.parametrize("zero_point", [0.5, 300.0])
def test_chains_whose_arithmetic_is_not_exact_keep_their_tables(tmp_path, zero_point):
    """A zero point that is not an integer, or outside the codes' range, leaves the difference
    of code and zero point inexact in f16 or beyond what the arithmetic was proven on."""
    xml = _nncf_matmul(tmp_path, "u8", zero_point=zero_point)
    want = _compiled(xml, budget=0).run({"l0": _feed(1)})[0].tobytes()
    with accel.use("numba" if accel.available() else "numpy"):
        compiled = _compiled(xml)
        assert isinstance(_book(compiled), Codebook)
        assert compiled.run({"l0": _feed(1)})[0].tobytes() == want


def test_the_table_is_kept_at_f16_and_a_hook_sees_every_decompression_layer(tmp_path, tables):
    compiled = _compiled(_nncf_matmul(tmp_path, "u4"))
    plain = compiled.run({"l0": _feed(1)})[0]
    book = _looked_up(compiled)[0].compute.book
    codes, table, widen = book.built()
    assert table.dtype == np.uint16 and table.shape == (ROWS * 4, 16) and widen.dtype == np.float32
    assert book.cost == table.nbytes < ROWS * K * 4
    seen = []
    watched = compiled.run({"l0": _feed(1)}, hook=lambda layer, i, o: seen.append(layer.type))
    assert sorted(seen) == sorted(["Convert"] * 3 + ["Subtract", "Multiply", "Reshape", "MatMul"])
    assert watched[0].tobytes() == plain.tobytes()


def test_a_weight_other_layers_read_is_kept_as_before(tmp_path, tables):
    """A decompressed weight that a Result also returns is kept whole (runtime/folding.py);
    a budget smaller than the table leaves the layers to run every time."""
    from test_folding import _compressed_matmul

    compiled = _compiled(_compressed_matmul(tmp_path, "u8"))
    assert not _looked_up(compiled) and compiled.plan.fold.kept
    (tmp_path / "small").mkdir()
    small = _compiled(_nncf_matmul(tmp_path / "small", "u8"), budget=ROWS * 256 * 2 - 1)
    assert not _looked_up(small) and not small.plan.fold.kept


def test_blocks_are_checked_against_the_whole_product_before_they_are_used(tmp_path, monkeypatch):
    """Blocks of 64 rows, two to the weight: the first call makes the product both ways and
    takes blocks only if this BLAS gives them the whole product's bits; one that does not
    (planted here) keeps the whole weight, with the same bits as the layers run as written."""
    from irscatter.runtime import compressed

    monkeypatch.setattr(compressed, "BLOCK_BYTES", ROW_ALIGN * K * 4)
    monkeypatch.setenv("IRSCATTER_BACKEND", "numpy")  # (numba's loop multiplies in one pass, without blocks)
    xml = _nncf_matmul(tmp_path, "u8")
    want = _compiled(xml, budget=0).run({"l0": _feed(1)})[0].tobytes()
    step = _looked_up(compiled := _compiled(xml))[0].compute
    assert step._block() == ROW_ALIGN and compiled.run({"l0": _feed(1)})[0].tobytes() == want
    assert step.blocks_agree is not None
    if step.blocks_agree:
        assert compiled.run({"l0": _feed(1)})[0].tobytes() == want
    planted = _looked_up(again := _compiled(xml))[0].compute
    real = planted._by_blocks
    monkeypatch.setattr(planted, "_by_blocks", lambda a, rows=None: real(a, rows) + np.float32(1))
    assert again.run({"l0": _feed(1)})[0].tobytes() == want and planted.blocks_agree is False
    assert again.run({"l0": _feed(1)})[0].tobytes() == want


def test_decompression_in_f32_widens_the_chain_and_nothing_else(tmp_path):
    """decompression="f32" (runtime/decompression.py): a hook sees every layer of the chain
    give f32, the weight is (codes - zero point) * scale computed in f32 from the Consts, the
    f16 product of the graph differs from it, and a plain run after gives the graph's bits again.
    A model without a compressed weight runs as it does without the option."""
    compiled = _compiled(_nncf_matmul(tmp_path, "u8"), budget=0)  # the layers as written on a plain run
    plain = compiled.run({"l0": _feed(1)})[0].tobytes()
    calls = []
    compiled.run({"l0": _feed(1)}, decompression="f32", hook=lambda layer, i, o: calls.append((layer.type, i, o)))
    chain = [(kind, inputs, outputs) for kind, inputs, outputs in calls if kind != "MatMul"]
    assert [kind for kind, _, _ in chain] == ["Convert", "Convert", "Subtract", "Multiply", "Convert"]
    assert all(out.dtype == np.float32 for _, _, (out,) in chain)
    codes, zero = (inputs[0] for kind, inputs, _ in chain[:2])
    scale = chain[3][1][1]
    assert scale.dtype == np.float16  # the hook sees the layer's inputs as the graph gives them
    in_f32 = (codes.astype(np.float32) - zero.astype(np.float32)) * scale.astype(np.float32)
    weight = chain[-1][2][0]
    assert np.array_equal(weight, in_f32)
    assert not np.array_equal(weight, ((codes.astype(np.float16) - zero.astype(np.float16)) * scale).astype(np.float32))
    assert compiled.run({"l0": _feed(1)})[0].tobytes() == plain

    from test_folding import _Builder

    b = _Builder()
    x = b.add("Parameter", {"shape": "1,4", "element_type": "f32"}, [], (1, 4), "f32")
    weight = b.add("Convert", {"destination_type": "f32"}, [b.const(np.arange(12).reshape(3, 4) / 7, "f16")], (3, 4), "f32")
    b.add("Result", None, [b.add("MatMul", {"transpose_a": "false", "transpose_b": "true"}, [x, weight], (1, 3), "f32")],
          (), "f32")
    (tmp_path / "f16").mkdir()
    f16_weights = _compiled(b.save(tmp_path / "f16"))
    feed = {"l0": _feed(1)[:, :4]}
    assert f16_weights.run(feed, decompression="f32")[0].tobytes() == f16_weights.run(feed)[0].tobytes()


_LOADED_AT_COMPILE = """
import sys
import irscatter
compiled = irscatter.compile_model(sys.argv[1])
print(sorted(name for name in sys.modules if name.startswith("irscatter.ops.common.decompress_")))
"""


@pytest.mark.skipif(not accel.available(), reason="numba is not installed")
@pytest.mark.parametrize("kind", ["u8", "u4"])
def test_compiling_loads_the_loops_the_first_run_takes(tmp_path, kind):
    """A fresh process: compiling a model with compressed weights loads the compiled loops its
    products take (numba's import and first load, most of a second, belong to compiling, not to
    the first prompt), but not where numba is not to be used."""
    import os
    import subprocess
    import sys

    xml = _nncf_matmul(tmp_path, kind)
    loaded = {}
    for backend in ("auto", "numpy"):
        env = {**os.environ, "IRSCATTER_BACKEND": backend}
        done = subprocess.run([sys.executable, "-c", _LOADED_AT_COMPILE, str(xml)], capture_output=True, text=True,
                              env=env, timeout=300, check=True)
        loaded[backend] = done.stdout.strip()
    assert "decompress_kernels" in loaded["auto"] or "decompress_levels" in loaded["auto"]
    assert loaded["numpy"] == "[]"
