"""Generate the sample models of the `irscatter1` opset under `models/`.

OpenVINO cannot write layers of an opset it does not know, so these IR files are written
here with lxml, in the same layout `ov.save_model` produces. Expected outputs never come
from irscatter itself:

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

PRECISION = {np.dtype(np.float32): ("f32", "FP32"), np.dtype(np.float16): ("f16", "FP16"),
             np.dtype(np.int64): ("i64", "I64"), np.dtype(np.int32): ("i32", "I32")}


class IRWriter:
    """A minimal IR v11 writer: layers with ports, edges, and constants in one `.bin`."""

    def __init__(self, name: str) -> None:
        self.net = etree.Element("net", name=name, version="11")
        self.layers = etree.SubElement(self.net, "layers")
        self.edges = etree.SubElement(self.net, "edges")
        self.weights = bytearray()
        self.next_id = 0

    def layer(self, type_: str, name: str, version: str, data: dict | None = None,
              inputs: list[tuple[tuple[int, ...], np.dtype]] = (), outputs: list[tuple[tuple[int, ...], np.dtype, str]] = (),
              parent: etree._Element | None = None) -> etree._Element:
        node = etree.SubElement(self.layers if parent is None else parent, "layer", id=str(self.next_id), name=name,
                                type=type_, version=version)
        self.next_id += 1
        if data is not None:
            etree.SubElement(node, "data", {k: str(v) for k, v in data.items()})
        pid = 0
        for tag, ports in (("input", inputs), ("output", outputs)):
            if not ports:
                continue
            group = etree.SubElement(node, tag)
            for spec in ports:
                shape, dtype = spec[0], spec[1]
                attrs = {"id": str(pid), "precision": PRECISION[np.dtype(dtype)][1]}
                if tag == "output" and len(spec) > 2 and spec[2]:
                    attrs["names"] = spec[2]
                p = etree.SubElement(group, "port", attrs)
                for d in shape:
                    etree.SubElement(p, "dim").text = str(d)
                pid += 1
        return node

    def parameter(self, name: str, shape: tuple[int, ...], dtype) -> int:
        et = PRECISION[np.dtype(dtype)][0]
        self.layer("Parameter", name, "opset1", {"shape": ",".join(map(str, shape)), "element_type": et},
                   outputs=[(shape, dtype, name)])
        return self.next_id - 1

    def const(self, name: str, value: np.ndarray) -> int:
        offset = len(self.weights)
        self.weights += np.ascontiguousarray(value).tobytes()
        et = PRECISION[value.dtype][0]
        self.layer("Const", name, "opset1", {"element_type": et, "shape": ",".join(map(str, value.shape)),
                                             "offset": offset, "size": value.nbytes},
                   outputs=[(value.shape, value.dtype, name)])
        return self.next_id - 1

    def result(self, name: str, shape: tuple[int, ...], dtype) -> int:
        self.layer("Result", name, "opset1", inputs=[(shape, dtype)])
        return self.next_id - 1

    def edge(self, src: int, src_port: int, dst: int, dst_port: int, parent: etree._Element | None = None) -> None:
        etree.SubElement(self.edges if parent is None else parent, "edge", {
            "from-layer": str(src), "from-port": str(src_port), "to-layer": str(dst), "to-port": str(dst_port)})

    def save(self, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        etree.ElementTree(self.net).write(str(folder / "model.xml"), pretty_print=True, xml_declaration=True,
                                          encoding="utf-8")
        (folder / "model.bin").write_bytes(bytes(self.weights))


# --- paged_scatter_update ----------------------------------------------------------------------


def paged_scatter_update(folder: Path) -> None:
    blocks, block_size, d, b, s = 6, 4, 16, 2, 5
    cache_shape, src_shape = (blocks, block_size, 1, d), (b, s, 1, d)
    w = IRWriter("paged_scatter_update")
    ids = {name: w.parameter(name, shape, dt) for name, shape, dt in (
        ("key_cache", cache_shape, np.float16), ("value_cache", cache_shape, np.float16),
        ("slot_mapping", (b, s), np.int32), ("key", src_shape, np.float16), ("value", src_shape, np.float16))}
    for which in ("key", "value"):
        w.layer("PagedScatterUpdate", f"write_{which}", "irscatter1", {"dim": -2},
                      inputs=[(cache_shape, np.float16), ((b, s), np.int32), (src_shape, np.float16)],
                      outputs=[(cache_shape, np.float16, f"{which}_cache_out")])
        layer_id = w.next_id - 1
        w.edge(ids[f"{which}_cache"], 0, layer_id, 0)
        w.edge(ids["slot_mapping"], 0, layer_id, 1)
        w.edge(ids[which], 0, layer_id, 2)
        rid = w.result(f"{which}_cache_out/sink", cache_shape, np.float16)
        w.edge(layer_id, 3, rid, 0)
    w.save(folder)

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
    x = w.parameter("operand", operand_shape, np.float32)
    u = w.parameter("updates", updates_shape, np.float32)
    idx = w.const("scatter_indices", indices)
    ports = [(operand_shape, np.float32), (indices.shape, np.int64), (updates_shape, np.float32)]
    w.layer("HloScatter", "scatter_add", "irscatter1", {**DIMS, "update_computation": "add"},
                  inputs=ports, outputs=[(operand_shape, np.float32, "summed")])
    add_id = w.next_id - 1
    mx = w.layer("HloScatter", "scatter_max", "irscatter1", DIMS, inputs=ports,
                 outputs=[(operand_shape, np.float32, "maxed")])
    max_id = w.next_id - 1
    _max_region(w, mx)
    for lid in (add_id, max_id):
        w.edge(x, 0, lid, 0)
        w.edge(idx, 0, lid, 1)
        w.edge(u, 0, lid, 2)
    for lid, name in ((add_id, "summed"), (max_id, "maxed")):
        w.edge(lid, 3, w.result(f"{name}/sink", operand_shape, np.float32), 0)
    w.save(folder)

    rng = np.random.default_rng(9)
    feeds = {"operand": rng.standard_normal(operand_shape).astype(np.float32),
             "updates": rng.standard_normal(updates_shape).astype(np.float32)}
    np.savez(folder / "inputs.npz", **feeds)
    np.savez(folder / "expected.npz", **_xla(feeds["operand"], indices, feeds["updates"]))


def _max_region(w: IRWriter, owner: etree._Element) -> None:
    """<body>: two scalar f32 Parameters, Maximum, one Result (ids local to the body)."""
    body = etree.SubElement(owner, "body")
    layers, edges = etree.SubElement(body, "layers"), etree.SubElement(body, "edges")
    saved, w.next_id = w.next_id, 0
    for name in ("current", "update"):
        w.layer("Parameter", name, "opset1", {"shape": "", "element_type": "f32"}, outputs=[((), np.float32, "")],
                parent=layers)
    w.layer("Maximum", "max", "opset1", {"auto_broadcast": "numpy"}, inputs=[((), np.float32), ((), np.float32)],
            outputs=[((), np.float32, "")], parent=layers)
    w.layer("Result", "combined", "opset1", inputs=[((), np.float32)], parent=layers)
    w.edge(0, 0, 2, 0, edges)
    w.edge(1, 0, 2, 1, edges)
    w.edge(2, 2, 3, 0, edges)
    w.next_id = saved


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
