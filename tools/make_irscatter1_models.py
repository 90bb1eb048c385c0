"""Generate the sample models of the `irscatter1` opset under `models/`.

OpenVINO cannot write layers of an opset it does not know, so these IR files are written
here with irscatter's own writer (`irscatter.ir.writer`), in the layout `ov.save_model`
produces. Expected outputs never come from irscatter itself:

* `paged_scatter_update`: PyPTO's paged KV-cache write (PagedScatterUpdate-1) of keys and
  values into two 4-D caches, with padding tokens. Expected: OpenVINO's CPU plugin running
  the same write as ScatterNDUpdate-15 with (block, offset) pairs, padding tokens removed.
* `stablehlo_scatter`: StableHLO scatters with batching dimensions (HloScatter-1): a
  scatter-add by attribute and a scatter-max written as a `<body>` region, with constant
  indices in the `.bin`. Expected: XLA through `jax.lax.scatter_add` / `scatter_max`.

Run from the repository root (needs openvino and jax): python tools/make_irscatter1_models.py
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
from lxml import etree

from irscatter.ir.element_types import ElementType
from irscatter.ir.writer import IRWriter


def port(shape: tuple[int, ...], dtype) -> tuple[ElementType, tuple[int, ...]]:
    """A port's declared (element type, shape), as the package's writer takes it."""
    return ElementType.from_dtype(np.dtype(dtype)), tuple(shape)


def save(writer: IRWriter, folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    writer.save(folder / "model.xml")


# --- paged_scatter_update ----------------------------------------------------------------------


def paged_scatter_update(folder: Path) -> None:
    blocks, block_size, d, b, s = 6, 4, 16, 2, 5
    cache_shape, src_shape = (blocks, block_size, 1, d), (b, s, 1, d)
    w = IRWriter("paged_scatter_update")
    fed = {name: w.parameter(name, *port(shape, dt), (name,)) for name, shape, dt in (
        ("key_cache", cache_shape, np.float16), ("value_cache", cache_shape, np.float16),
        ("slot_mapping", (b, s), np.int32), ("key", src_shape, np.float16), ("value", src_shape, np.float16))}
    for which in ("key", "value"):
        (written,) = w.layer("PagedScatterUpdate", "irscatter1", [fed[f"{which}_cache"], fed["slot_mapping"], fed[which]],
                             [port(cache_shape, np.float16), port((b, s), np.int32), port(src_shape, np.float16)],
                             [port(cache_shape, np.float16)], name=f"write_{which}", attrs={"dim": "-2"},
                             output_names=[(f"{which}_cache_out",)])
        w.result(f"{which}_cache_out/sink", written, *port(cache_shape, np.float16))
    save(w, folder)

    rng = np.random.default_rng(8)
    slots = rng.permutation(blocks * block_size)[: b * s].reshape(b, s).astype(np.int32)
    slots[1, 3:] = -1  # the second sequence is shorter: its last two tokens are padding
    feeds = {"key_cache": rng.standard_normal(cache_shape).astype(np.float16),
             "value_cache": rng.standard_normal(cache_shape).astype(np.float16),
             "slot_mapping": slots,
             "key": rng.standard_normal(src_shape).astype(np.float16),
             "value": rng.standard_normal(src_shape).astype(np.float16)}
    np.savez(folder / "inputs.npz", **feeds)
    expected = {f"{which}_cache_out": _openvino_paged_write(feeds[f"{which}_cache"], slots, feeds[which], block_size)
                for which in ("key", "value")}
    np.savez(folder / "expected.npz", **expected)


def _openvino_paged_write(cache, slots, src, block_size):
    import openvino as ov
    import openvino.opset15 as ops

    live = slots.reshape(-1) >= 0
    tokens = slots.reshape(-1)[live].astype(np.int64)
    pairs = np.stack([tokens // block_size, tokens % block_size], axis=-1)
    rows = src.reshape(-1, *src.shape[2:])[live]
    c = ops.parameter(cache.shape, ov.Type.f16, name="cache")
    i = ops.parameter(pairs.shape, ov.Type.i64, name="pairs")
    u = ops.parameter(rows.shape, ov.Type.f16, name="rows")
    model = ov.Model([ops.result(ops.scatter_nd_update(c, i, u))], [c, i, u])
    compiled = ov.Core().compile_model(model, "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
    return np.asarray(compiled({"cache": cache, "pairs": pairs, "rows": rows})[0])


# --- stablehlo_scatter ---------------------------------------------------------------------------

DIMS = {"update_window_dims": "3,4", "inserted_window_dims": "1", "input_batching_dims": "0",
        "scatter_indices_batching_dims": "1", "scatter_dims_to_operand_dims": "2,1", "index_vector_dim": "3"}


def stablehlo_scatter(folder: Path) -> None:
    operand_shape, updates_shape = (2, 3, 4, 2), (2, 2, 3, 2, 2)
    indices = np.array([[[[0, 0], [1, 0], [2, 1]], [[0, 1], [1, 1], [0, 9]]],
                        [[[0, 0], [2, 1], [2, 2]], [[1, 2], [0, 1], [1, 0]]]], np.int64)
    w = IRWriter("stablehlo_scatter")
    operand = w.parameter("operand", *port(operand_shape, np.float32), ("operand",))
    updates = w.parameter("updates", *port(updates_shape, np.float32), ("updates",))
    sources = [operand, w.const("scatter_indices", indices, tensor_names=("scatter_indices",)), updates]
    ports = [port(operand_shape, np.float32), port(indices.shape, np.int64), port(updates_shape, np.float32)]
    (summed,) = w.layer("HloScatter", "irscatter1", sources, ports, [port(operand_shape, np.float32)],
                        name="scatter_add", attrs={**DIMS, "update_computation": "add"}, output_names=[("summed",)])
    (maxed,) = w.layer("HloScatter", "irscatter1", sources, ports, [port(operand_shape, np.float32)],
                       name="scatter_max", attrs=DIMS, output_names=[("maxed",)], children=[_max_region(w)])
    for tensor, name in ((summed, "summed"), (maxed, "maxed")):
        w.result(f"{name}/sink", tensor, *port(operand_shape, np.float32))
    save(w, folder)

    rng = np.random.default_rng(9)
    feeds = {"operand": rng.standard_normal(operand_shape).astype(np.float32),
             "updates": rng.standard_normal(updates_shape).astype(np.float32)}
    np.savez(folder / "inputs.npz", **feeds)
    np.savez(folder / "expected.npz", **_xla(feeds["operand"], indices, feeds["updates"]))


def _max_region(w: IRWriter) -> etree._Element:
    """<body>: two scalar f32 Parameters, Maximum, one Result (ids local to the body)."""
    region = w.region()
    current, update = (region.parameter(name, ElementType.f32, ()) for name in ("current", "update"))
    (larger,) = region.layer("Maximum", "opset1", [current, update], [port((), np.float32)] * 2,
                             [port((), np.float32)], name="max", attrs={"auto_broadcast": "numpy"})
    region.result("combined", larger, *port((), np.float32))
    return region.body()


def _xla(operand, indices, updates) -> dict[str, np.ndarray]:
    import jax

    jax.config.update("jax_enable_x64", True)
    from jax import lax

    dn = lax.ScatterDimensionNumbers(update_window_dims=(3, 4), inserted_window_dims=(1,),
                                     scatter_dims_to_operand_dims=(2, 1), operand_batching_dims=(0,),
                                     scatter_indices_batching_dims=(1,))
    mode = lax.GatherScatterMode.FILL_OR_DROP
    return {"summed": np.asarray(lax.scatter_add(operand, indices, updates, dn, mode=mode)),
            "maxed": np.asarray(lax.scatter_max(operand, indices, updates, dn, mode=mode))}


MODELS = {"paged_scatter_update": paged_scatter_update, "stablehlo_scatter": stablehlo_scatter}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="models", type=Path)
    args = parser.parse_args()
    for name, build in MODELS.items():
        build(args.out / name)
        print(f"wrote {args.out / name}")


if __name__ == "__main__":
    main()
