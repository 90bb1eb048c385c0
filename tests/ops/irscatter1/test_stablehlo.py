"""HloScatter-1 (irscatter1): StableHLO's scatter.

* The seed's example (0-based) and the StableHLO spec's batching example through IR files.
* 400 golden cases computed by XLA through `jax.lax.scatter*` (tools/make_hlo_golden.py),
  each also run with the index vector moved to another dimension of scatter_indices.
* A per-element transcription of the spec (tests/oracles.py) for what XLA does not
  promise: duplicate `replace` writes (row-major order here), partly out-of-bounds windows
  (the spec skips per element), regions, the variadic form and per-step rounding.
* Every constraint C1-C25 failing with its label.
"""

from __future__ import annotations

import json
import operator
from pathlib import Path

import ml_dtypes
import numpy as np
import oracles
import pytest
from helpers import examples, layer, one_layer_ir, port
from hypothesis import given, settings
from hypothesis import strategies as st

import irscatter
from irscatter.ops import hlo_scatter

GOLDEN = Path(__file__).resolve().parents[2] / "data" / "hlo_scatter_golden.npz"
DIM_KEYS = ("update_window_dims", "inserted_window_dims", "input_batching_dims", "scatter_indices_batching_dims",
            "scatter_dims_to_operand_dims", "index_vector_dim")


def ir_attrs(dims: dict) -> dict:
    return {k: (",".join(map(str, v)) if isinstance(v, (list, tuple)) else str(v).lower() if isinstance(v, bool)
                else v) for k, v in dims.items()}


def run_ir(tmp_path, operands, indices, updates, attrs, body="", out_dtypes=None):
    inputs = [(f"x{i}", x) for i, x in enumerate(operands)] + [("indices", indices)]
    inputs += [(f"u{i}", u) for i, u in enumerate(updates)]
    out_dtypes = out_dtypes or [x.dtype for x in operands]
    xml = one_layer_ir(tmp_path, "HloScatter", "irscatter1", ir_attrs(attrs), inputs,
                       [(operands[0].shape, dt) for dt in out_dtypes], body=body)
    return list(irscatter.read_model(xml).run(dict(inputs)).values())


# --- the seed's and the spec's examples ---------------------------------------------------------


def test_seed_example_zero_based(tmp_path):
    (out,) = run_ir(tmp_path, [np.zeros(5, np.float32)], np.array([[0], [2]], np.int32),
                    [np.array([10, 30], np.float32)],
                    dict(update_window_dims=[], inserted_window_dims=[0], input_batching_dims=[],
                         scatter_indices_batching_dims=[], scatter_dims_to_operand_dims=[0], index_vector_dim=1))
    np.testing.assert_array_equal(out, [10, 0, 30, 0, 0])


SPEC_DIMS = dict(update_window_dims=[3, 4], inserted_window_dims=[1], input_batching_dims=[0],
                 scatter_indices_batching_dims=[1], scatter_dims_to_operand_dims=[2, 1], index_vector_dim=3)
SPEC_INDICES = np.array([[[[0, 0], [1, 0], [2, 1]], [[0, 1], [1, 1], [0, 9]]],
                         [[[0, 0], [2, 1], [2, 2]], [[1, 2], [0, 1], [1, 0]]]], np.int64)
SPEC_RESULT = [[[[3, 4], [6, 7], [6, 7], [7, 8]], [[9, 10], [11, 12], [15, 16], [17, 18]],
                [[17, 18], [19, 20], [22, 23], [24, 25]]],
               [[[25, 26], [28, 29], [30, 31], [31, 32]], [[35, 36], [38, 39], [38, 39], [39, 40]],
                [[41, 42], [44, 45], [46, 47], [47, 48]]]]


def test_spec_batching_example(tmp_path):
    operand = np.arange(1, 49, dtype=np.int64).reshape(2, 3, 4, 2)
    updates = np.ones((2, 2, 3, 2, 2), np.int64)
    (out,) = run_ir(tmp_path, [operand], SPEC_INDICES, [updates], {**SPEC_DIMS, "update_computation": "add"})
    np.testing.assert_array_equal(out, SPEC_RESULT)  # the index vector [0, 9] lands out of bounds: skipped


# --- golden cases from XLA --------------------------------------------------------------------------


def _golden():
    data = np.load(GOLDEN)
    meta = json.loads(str(data["cases"]))
    return [(m, data[f"{i}_operand"], data[f"{i}_indices"], data[f"{i}_updates"], data[f"{i}_expected"])
            for i, m in enumerate(meta)]


GOLDEN_CASES = _golden()


def _move_index_vector(meta: dict, indices: np.ndarray, to: int) -> tuple[dict, np.ndarray]:
    """The same scatter with the index vector on dimension `to` of scatter_indices: only a
    relabelling, so XLA's result stays the expected one."""
    last = indices.ndim - 1
    moved = np.moveaxis(indices, last, to)
    batching = [d + (1 if d >= to else 0) for d in meta["scatter_indices_batching_dims"]]
    return {**meta, "index_vector_dim": to, "scatter_indices_batching_dims": batching}, moved


def test_golden_file_covers_what_it_should():
    assert len(GOLDEN_CASES) >= 300
    assert sum(1 for m, *_ in GOLDEN_CASES if m["input_batching_dims"]) >= 50
    assert {m["update_computation"] for m, *_ in GOLDEN_CASES} == {"replace", "add", "subtract", "multiply",
                                                                     "minimum", "maximum"}


@pytest.mark.parametrize("case", range(len(GOLDEN_CASES)))
def test_agrees_with_xla(case):
    meta, operand, indices, updates, expected = GOLDEN_CASES[case]
    np.testing.assert_array_equal(hlo_scatter(operand, indices, updates, **meta), expected)
    to = case % indices.ndim  # the same case with the index vector elsewhere
    if to != indices.ndim - 1:
        meta2, indices2 = _move_index_vector(meta, indices, to)
        np.testing.assert_array_equal(hlo_scatter(operand, indices2, updates, **meta2), expected)
    if indices.shape[-1] == 1:  # and with implicit length-1 index vectors
        meta3 = {**meta, "index_vector_dim": indices.ndim - 1}
        np.testing.assert_array_equal(hlo_scatter(operand, indices[..., 0], updates, **meta3), expected)
    if operand.ndim >= 2:  # and with the operand column-major, as a Transpose's view hands it on
        np.testing.assert_array_equal(hlo_scatter(np.asfortranarray(operand), indices, updates, **meta), expected)


@pytest.mark.parametrize("case", range(0, 400, 25))
def test_agrees_with_xla_through_ir_files(tmp_path, case):
    meta, operand, indices, updates, expected = GOLDEN_CASES[case]
    (out,) = run_ir(tmp_path, [operand], indices, [updates], meta)
    np.testing.assert_array_equal(out, expected)


# --- the spec's own definition, where XLA promises nothing -------------------------------------------


_SCALAR_COMBINERS = {"replace": lambda a, b: b, "add": operator.add, "subtract": operator.sub,
                     "multiply": operator.mul, "minimum": min, "maximum": max,
                     "and": operator.and_, "or": operator.or_, "xor": operator.xor}
_BOOL_COMBINERS = {**_SCALAR_COMBINERS, "add": operator.or_, "multiply": operator.and_}


@st.composite
def scatter_cases(draw):
    """Valid dimension numbers with anything for indices: duplicates, negatives, windows
    hanging over either edge."""
    rank = draw(st.integers(1, 4))
    operand = [draw(st.integers(1, 4)) for _ in range(rank)]
    dims = list(range(rank))
    batching = sorted(draw(st.sets(st.sampled_from(dims), max_size=min(2, rank - 1)))) if rank > 1 else []
    rest = [d for d in dims if d not in batching]
    k = draw(st.integers(1, len(rest))) if draw(st.integers(0, 9)) else 0  # K = 0 now and then
    to_operand = draw(st.permutations(rest))[:k]
    inserted = sorted(draw(st.sets(st.sampled_from(rest)))) if rest else []
    window_in = [d for d in dims if d not in inserted and d not in batching]
    n_scatter = len(batching) + draw(st.integers(0, 2))
    scatter_shape = [draw(st.integers(1, 3)) for _ in range(n_scatter)]
    batch_pos = sorted(draw(st.permutations(list(range(n_scatter))))[: len(batching)])
    for d_in, pos in zip(batching, batch_pos):
        scatter_shape[pos] = operand[d_in]
    ivd = draw(st.integers(0, n_scatter))
    indices_shape = scatter_shape[:ivd] + [len(to_operand)] + scatter_shape[ivd:]
    if len(to_operand) == 1 and draw(st.booleans()):
        indices_shape, ivd = scatter_shape, n_scatter  # implicit length-1 index vectors
    sibd = [p + (1 if p >= ivd and len(indices_shape) > n_scatter else 0) for p in batch_pos]
    u_rank = n_scatter + len(window_in)
    uwd = sorted(draw(st.permutations(list(range(u_rank))))[: len(window_in)])
    updates_shape = [0] * u_rank
    for d, size in zip([d for d in range(u_rank) if d not in uwd], scatter_shape):
        updates_shape[d] = size
    for d, d_in in zip(uwd, window_in):
        updates_shape[d] = draw(st.integers(1, operand[d_in]))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    indices = rng.integers(-2, max(operand) + 1, size=indices_shape)
    dims_numbers = dict(update_window_dims=uwd, inserted_window_dims=inserted, input_batching_dims=batching,
                        scatter_indices_batching_dims=sibd, scatter_dims_to_operand_dims=list(to_operand),
                        index_vector_dim=ivd)
    return dims_numbers, operand, indices, updates_shape, rng


@settings(max_examples=examples(300, 100), deadline=None)
@given(scatter_cases(), st.sampled_from(list(_SCALAR_COMBINERS)))
def test_random_scatters_match_the_spec(case, combiner):
    dims, operand_shape, indices, updates_shape, rng = case
    integer = combiner in ("and", "or", "xor")
    dtype = np.int32 if integer else np.float64
    operand = rng.integers(-5, 6, size=operand_shape).astype(dtype)
    updates = rng.integers(-5, 6, size=updates_shape).astype(dtype)
    f = _SCALAR_COMBINERS[combiner]
    expected = oracles.hlo_scatter([operand], indices, [updates], dims, lambda cur, upd: (f(cur[0], upd[0]),))
    got = hlo_scatter(operand, indices, updates, **dims, update_computation=combiner)
    np.testing.assert_array_equal(got, expected[0])


def test_partly_out_of_bounds_windows_are_clipped_per_element():
    dims = dict(update_window_dims=[1], inserted_window_dims=[], scatter_dims_to_operand_dims=[0],
                index_vector_dim=1)
    updates = np.array([[1, 2, 3], [10, 20, 30]], np.float32)
    out = hlo_scatter(np.zeros(5, np.float32), np.array([[3], [-1]]), updates, **dims)
    np.testing.assert_array_equal(out, [20, 30, 0, 1, 2])  # 3 and 10 fall outside and are skipped


def test_duplicate_replacements_apply_in_row_major_order():
    out = hlo_scatter(np.zeros(3, np.int32), np.array([[1], [1], [1]]), np.array([7, 8, 9], np.int32),
                      inserted_window_dims=[0], scatter_dims_to_operand_dims=[0], index_vector_dim=1)
    np.testing.assert_array_equal(out, [0, 9, 0])


TYPES = [np.float32, np.float64, np.float16, ml_dtypes.bfloat16, np.int8, np.int32, np.int64, np.uint8, np.bool_]


def _defined(dtype, combiner) -> bool:
    """Bitwise combiners take integers and booleans, subtract no booleans (refusals: C23 below)."""
    dt = np.dtype(dtype)
    floating = dt.kind == "f" or dt == ml_dtypes.bfloat16
    return not (combiner in ("and", "or", "xor") and floating or combiner == "subtract" and dt == np.bool_)


@pytest.mark.parametrize(("dtype", "combiner"),
                         [(t, c) for t in TYPES for c in _SCALAR_COMBINERS if _defined(t, c)],
                         ids=lambda v: v if isinstance(v, str) else np.dtype(v).name)
def test_every_type_and_combiner_rounds_per_step(dtype, combiner):
    dt = np.dtype(dtype)
    rng = np.random.default_rng(3)
    operand = (rng.normal(size=(4, 3)) * 3 + 0.1).astype(dtype) if dt.kind == "f" or dt.name == "bfloat16" \
        else rng.integers(0, 7, size=(4, 3)).astype(dtype)
    updates = (rng.normal(size=(6, 3)) * 3).astype(dtype) if dt.kind == "f" or dt.name == "bfloat16" \
        else rng.integers(0, 7, size=(6, 3)).astype(dtype)
    indices = np.array([[1], [3], [1], [0], [1], [3]])
    dims = dict(update_window_dims=[1], inserted_window_dims=[0], scatter_dims_to_operand_dims=[0], index_vector_dim=1)
    f = (_BOOL_COMBINERS if dt == np.bool_ else _SCALAR_COMBINERS)[combiner]
    expected = oracles.hlo_scatter([operand], indices, [updates], dims, lambda c, u: (f(c[0], u[0]),))[0]
    got = hlo_scatter(operand, indices, updates, **dims, update_computation=combiner)
    assert got.dtype == dt
    np.testing.assert_array_equal(got, expected)


def test_variadic_built_in_combiner_updates_each_operand():
    a, b = np.zeros(4, np.float32), np.ones(4, np.int32)
    dims = dict(inserted_window_dims=[0], scatter_dims_to_operand_dims=[0], index_vector_dim=1)
    ra, rb = hlo_scatter([a, b], np.array([[2], [2]]), [np.array([1, 2], np.float32), np.array([5, 6], np.int32)],
                         **dims, update_computation="add")
    np.testing.assert_array_equal(ra, [0, 0, 3, 0])
    np.testing.assert_array_equal(rb, [1, 1, 12, 1])


def test_python_combiner_runs_sequentially():
    dims = dict(inserted_window_dims=[0], scatter_dims_to_operand_dims=[0], index_vector_dim=1)
    out = hlo_scatter(np.arange(4.0), np.array([[1], [1], [3]]), np.array([1.0, 2.0, 3.0]), **dims,
                      update_computation=lambda cur, upd: cur * 10 + upd)
    np.testing.assert_array_equal(out, [0, 112, 2, 33])  # 1 -> 11 -> 112; 3 -> 33


def test_a_combiner_writes_an_operand_of_any_memory_layout():
    dims = dict(update_window_dims=[1], inserted_window_dims=[0], scatter_dims_to_operand_dims=[0],
                index_vector_dim=1)
    operand = np.arange(6.0).reshape(3, 2).T  # column-major: the flat view a kernel writes must be its own
    out = hlo_scatter(operand, np.array([[1]]), np.array([[10.0, 20.0, 30.0]]), **dims,
                      update_computation=lambda cur, upd: cur + upd)
    np.testing.assert_array_equal(out, [[0, 2, 4], [11, 23, 35]])


def test_inputs_are_not_mutated():
    operand, indices, updates = np.arange(6.0).reshape(2, 3), np.array([[0], [0]]), np.ones((2, 3))
    before = (operand.copy(), indices.copy(), updates.copy())
    hlo_scatter(operand, indices, updates, update_window_dims=[1], inserted_window_dims=[0],
                scatter_dims_to_operand_dims=[0], index_vector_dim=1, update_computation="add")
    for a, b in zip((operand, indices, updates), before):
        np.testing.assert_array_equal(a, b)


# --- regions: a <body> as the update computation -------------------------------------------------------


def _scalar_param(lid, name, et="f32", prec="FP32"):
    return layer(lid, name, "Parameter", data={"shape": "", "element_type": et}, outputs=[port(0, prec)])


def body_xml(layers: list[str], edges: list[tuple[int, int, int, int]]) -> str:
    e = "".join(f'<edge from-layer="{a}" from-port="{b}" to-layer="{c}" to-port="{d}"/>' for a, b, c, d in edges)
    return f"<body><layers>{''.join(layers)}</layers><edges>{e}</edges></body>"


MULTIPLY_ADD = body_xml(  # f(cur, upd) = cur * cur + upd
    [_scalar_param(0, "cur"), _scalar_param(1, "upd"),
     layer(2, "sq", "Multiply", inputs=[port(0), port(1)], outputs=[port(2)]),
     layer(3, "plus", "Add", inputs=[port(0), port(1)], outputs=[port(2)]),
     layer(4, "ret", "Result", inputs=[port(0)])],
    [(0, 0, 2, 0), (0, 0, 2, 1), (2, 2, 3, 0), (1, 0, 3, 1), (3, 2, 4, 0)])
ROW_DIMS = dict(update_window_dims=[], inserted_window_dims=[0], scatter_dims_to_operand_dims=[0], index_vector_dim=1)


def test_body_is_applied_in_order_to_duplicates(tmp_path):
    (out,) = run_ir(tmp_path, [np.arange(5, dtype=np.float32)], np.array([[1], [1], [4]], np.int64),
                    [np.array([1, 2, 3], np.float32)], ROW_DIMS, body=MULTIPLY_ADD)
    np.testing.assert_array_equal(out, [0, 6, 2, 3, 19])  # 1 -> 1*1+1 = 2 -> 2*2+2 = 6; 4 -> 16+3


@settings(max_examples=40, deadline=None)
@given(scatter_cases())
def test_body_matches_the_spec_on_random_scatters(case):
    dims, operand_shape, indices, updates_shape, rng = case
    operand = rng.integers(-2, 3, size=operand_shape).astype(np.float32)
    updates = rng.integers(-2, 3, size=updates_shape).astype(np.float32)
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        (out,) = run_ir(Path(folder), [operand], indices, [updates], dims, body=MULTIPLY_ADD)
    expected = oracles.hlo_scatter([operand], indices, [updates], dims, lambda c, u: (c[0] * c[0] + u[0],))[0]
    np.testing.assert_array_equal(out, expected)


ARGMAX = body_xml(  # a variadic combiner: keep the larger value and its position
    [_scalar_param(0, "value"), _scalar_param(1, "where", "i32", "I32"), _scalar_param(2, "new_value"),
     _scalar_param(3, "new_where", "i32", "I32"),
     layer(4, "greater", "Greater", inputs=[port(0), port(1)], outputs=[port(2, "BOOL")]),
     layer(5, "pick_value", "Select", inputs=[port(0, "BOOL"), port(1), port(2)], outputs=[port(3)]),
     layer(6, "pick_where", "Select", inputs=[port(0, "BOOL"), port(1, "I32"), port(2, "I32")],
           outputs=[port(3, "I32")]),
     layer(7, "r0", "Result", inputs=[port(0)]), layer(8, "r1", "Result", inputs=[port(0, "I32")])],
    [(2, 0, 4, 0), (0, 0, 4, 1), (4, 2, 5, 0), (2, 0, 5, 1), (0, 0, 5, 2), (4, 2, 6, 0), (3, 0, 6, 1),
     (1, 0, 6, 2), (5, 3, 7, 0), (6, 3, 8, 0)])


def test_variadic_body_argmax(tmp_path):
    rng = np.random.default_rng(0)
    values = rng.normal(size=12).astype(np.float32)
    targets = rng.integers(0, 4, size=(12, 1))
    start_v, start_w = np.full(4, -np.inf, np.float32), np.full(4, -1, np.int32)
    out_v, out_w = run_ir(tmp_path, [start_v, start_w], targets, [values, np.arange(12, dtype=np.int32)], ROW_DIMS,
                          body=ARGMAX)
    for t in range(4):
        hits = np.flatnonzero(targets[:, 0] == t)
        if len(hits):
            assert out_w[t] == hits[np.argmax(values[hits])] and out_v[t] == values[hits].max()
        else:
            assert out_w[t] == -1


PROMOTING_ADD = body_xml(  # f16 operands combined in f32: the results are f32 (C25)
    [_scalar_param(0, "cur"), _scalar_param(1, "upd"),
     layer(2, "plus", "Add", inputs=[port(0), port(1)], outputs=[port(2)]),
     layer(3, "ret", "Result", inputs=[port(0)])],
    [(0, 0, 2, 0), (1, 0, 2, 1), (2, 2, 3, 0)])


def test_body_may_promote_the_element_type(tmp_path):
    operand = np.array([2048, 0], np.float16)
    updates = np.array([1, 1, 1, 1], np.float16)
    (out,) = run_ir(tmp_path, [operand], np.zeros((4, 1), np.int64), [updates], ROW_DIMS, body=PROMOTING_ADD,
                    out_dtypes=[np.float32])
    assert out.dtype == np.float32
    np.testing.assert_array_equal(out, [2052, 0])  # in f16 each 2048 + 1 would round back to 2048


def _error_of(fn):
    with pytest.raises(irscatter.IRError) as e:
        fn()
    return e.value


def test_body_with_a_non_elementwise_op_is_refused(tmp_path):
    body = body_xml(
        [_scalar_param(0, "cur"), _scalar_param(1, "upd"),
         layer(2, "shape", "ShapeOf", "opset3", data={"output_type": "i64"}, inputs=[port(0)],
               outputs=[port(1, "I64", [0])]),
         layer(3, "ret", "Result", inputs=[port(0, "I64", [0])])],
        [(0, 0, 2, 0), (2, 1, 3, 0)])
    err = _error_of(lambda: run_ir(tmp_path, [np.zeros(3, np.float32)], np.zeros((1, 1), np.int64),
                                   [np.zeros(1, np.float32)], ROW_DIMS, body=body))
    assert err.label == "region-ops" and "ShapeOf" in str(err) and "under_test" in str(err)


def test_body_with_wrong_types_is_refused(tmp_path):
    err = _error_of(lambda: run_ir(tmp_path, [np.zeros(3, np.int32)], np.zeros((1, 1), np.int64),
                                   [np.zeros(1, np.int32)], ROW_DIMS, body=MULTIPLY_ADD))
    assert err.label == "C23" and "i32" in str(err) and "f32" in str(err)


def test_body_and_attribute_together_are_refused(tmp_path):
    err = _error_of(lambda: run_ir(tmp_path, [np.zeros(3, np.float32)], np.zeros((1, 1), np.int64),
                                   [np.zeros(1, np.float32)], {**ROW_DIMS, "update_computation": "add"},
                                   body=MULTIPLY_ADD))
    assert err.label == "update-computation"


# --- every constraint, by its label -------------------------------------------------------------------


def _dims(**over):
    base = dict(update_window_dims=[1], inserted_window_dims=[0], input_batching_dims=[],
                scatter_indices_batching_dims=[], scatter_dims_to_operand_dims=[0], index_vector_dim=1)
    return {**base, **over}


X, IDX, UPD = np.zeros((4, 3), np.float32), np.zeros((2, 1), np.int64), np.zeros((2, 3), np.float32)
CONSTRAINTS = [
    ("C1", [X, np.zeros((4, 2), np.float32)], IDX, [UPD, UPD], {}),
    ("C2", [X], IDX, [UPD], dict(inserted_window_dims=[])),
    ("C3", [X, X], IDX, [UPD, np.zeros((2, 2), np.float32)], {}),
    ("C4", [X], IDX, [np.zeros((3, 3), np.float32)], {}),
    ("C4", [X], IDX, [np.zeros((2, 4), np.float32)], {}),
    ("C5", [X, X], IDX, [UPD], {}),
    ("C6", [X], IDX, [np.zeros((2, 3), np.float64)], {}),
    ("C7", [np.zeros((4, 3, 2), np.float32)], IDX, [np.zeros((2, 3, 2), np.float32)],
     dict(update_window_dims=[2, 1])),
    ("C8", [X], IDX, [UPD], dict(update_window_dims=[2])),
    ("C9", [np.zeros((4, 3, 2), np.float32)], np.zeros((4, 1), np.int64), [np.zeros((4, 2), np.float32)],
     dict(update_window_dims=[1], inserted_window_dims=[0], input_batching_dims=[0],
          scatter_indices_batching_dims=[0])),
    ("C10", [np.zeros((4, 3, 2), np.float32)], IDX, [np.zeros((2, 2), np.float32)],
     dict(inserted_window_dims=[1, 0])),
    ("C11", [X], IDX, [UPD], dict(inserted_window_dims=[5])),
    ("C12", [np.zeros((4, 3, 2), np.float32)], np.zeros((4, 3, 1), np.int64), [np.zeros((4, 3), np.float32)],
     dict(update_window_dims=[], inserted_window_dims=[2], input_batching_dims=[1, 0],
          scatter_indices_batching_dims=[0, 1], scatter_dims_to_operand_dims=[2], index_vector_dim=2)),
    ("C13", [X], np.zeros((4, 1), np.int64), [np.zeros((4,), np.float32)],
     dict(update_window_dims=[], inserted_window_dims=[0], input_batching_dims=[7],
          scatter_indices_batching_dims=[0])),
    ("C14", [np.zeros((4, 4, 2), np.float32)], np.zeros((4, 1), np.int64), [np.zeros((4,), np.float32)],
     dict(update_window_dims=[], inserted_window_dims=[2], input_batching_dims=[0, 1],
          scatter_indices_batching_dims=[0, 0], scatter_dims_to_operand_dims=[2])),
    ("C15", [np.zeros((4, 3), np.float32)], np.zeros((4, 1), np.int64), [np.zeros((4,), np.float32)],
     dict(update_window_dims=[], inserted_window_dims=[1], input_batching_dims=[0],
          scatter_indices_batching_dims=[5], scatter_dims_to_operand_dims=[1])),
    ("C16", [np.zeros((4, 3), np.float32)], np.zeros((4, 1), np.int64), [np.zeros((4,), np.float32)],
     dict(update_window_dims=[], inserted_window_dims=[1], input_batching_dims=[0],
          scatter_indices_batching_dims=[1], scatter_dims_to_operand_dims=[1])),
    ("C17", [np.zeros((4, 3), np.float32)], np.zeros((4, 1), np.int64), [np.zeros((4,), np.float32)],
     dict(update_window_dims=[], inserted_window_dims=[1], input_batching_dims=[0],
          scatter_indices_batching_dims=[], scatter_dims_to_operand_dims=[1])),
    ("C18", [np.zeros((4, 3), np.float32)], np.zeros((5, 1), np.int64), [np.zeros((5,), np.float32)],
     dict(update_window_dims=[], inserted_window_dims=[1], input_batching_dims=[0],
          scatter_indices_batching_dims=[0], scatter_dims_to_operand_dims=[1])),
    ("C19", [X], np.zeros((2, 2), np.int64), [UPD], {}),
    ("C20", [np.zeros((4, 3), np.float32)], np.zeros((4, 1), np.int64), [np.zeros((4,), np.float32)],
     dict(update_window_dims=[], inserted_window_dims=[1], input_batching_dims=[0],
          scatter_indices_batching_dims=[0], scatter_dims_to_operand_dims=[0])),
    ("C21", [X], IDX, [UPD], dict(scatter_dims_to_operand_dims=[3])),
    ("C22", [X], IDX, [UPD], dict(index_vector_dim=3)),
    ("C23", [X], IDX, [UPD], dict(update_computation="xor")),
    ("C23", [np.zeros((4, 3), bool)], IDX, [np.zeros((2, 3), bool)], dict(update_computation="subtract")),
    ("I2", [X], np.zeros((2, 1), np.float32), [UPD], {}),
]


@pytest.mark.parametrize(("label", "operands", "indices", "updates", "over"), CONSTRAINTS,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(CONSTRAINTS)])
def test_constraints_are_cited_by_label(label, operands, indices, updates, over):
    attrs = _dims(**over)
    err = _error_of(lambda: hlo_scatter(operands if len(operands) > 1 else operands[0], indices,
                                        updates if len(updates) > 1 or len(operands) > 1 else updates[0], **attrs))
    assert err.label == label, str(err)
    assert f"[{label}]" in str(err)


def test_wrong_result_count_is_c24(tmp_path):
    inputs = [("x", X), ("indices", IDX), ("u", UPD)]
    xml = one_layer_ir(tmp_path, "HloScatter", "irscatter1", ir_attrs(_dims()), inputs,
                       [(X.shape, np.float32), (X.shape, np.float32)])
    err = _error_of(lambda: irscatter.read_model(xml).compile())
    assert err.label == "C24"


def test_unknown_update_computation_lists_the_choices():
    err = _error_of(lambda: hlo_scatter(X, IDX, UPD, **_dims(), update_computation="average"))
    assert "replace" in str(err) and "xor" in str(err)


# --- broken promises -------------------------------------------------------------------------------------


def test_broken_unique_indices_promise_is_an_error():
    err = _error_of(lambda: hlo_scatter(X, np.array([[1], [1]]), UPD, **_dims(), unique_indices=True))
    assert err.label == "unique_indices" and isinstance(err, irscatter.ExecutionError)
    hlo_scatter(X, np.array([[1], [2]]), UPD, **_dims(), unique_indices=True)  # a kept promise runs
    hlo_scatter(X, np.array([[1], [9]]), UPD, **_dims(), unique_indices=True)  # skipped writes don't count


def test_broken_sorted_promise_is_an_error():
    err = _error_of(lambda: hlo_scatter(X, np.array([[2], [1]]), UPD, **_dims(), indices_are_sorted=True))
    assert err.label == "indices_are_sorted"
    hlo_scatter(X, np.array([[1], [1]]), UPD, **_dims(), indices_are_sorted=True)


def test_sorted_promise_holds_per_batch():
    operand = np.zeros((2, 5), np.float32)
    indices = np.array([[[3], [4]], [[0], [1]]])  # sorted within each batch, not across
    dims = dict(update_window_dims=[], inserted_window_dims=[1], input_batching_dims=[0],
                scatter_indices_batching_dims=[0], scatter_dims_to_operand_dims=[1], index_vector_dim=2)
    out = hlo_scatter(operand, indices, np.ones((2, 2), np.float32), **dims, indices_are_sorted=True)
    np.testing.assert_array_equal(out, [[0, 0, 0, 1, 1], [1, 1, 0, 0, 0]])
