"""Generate golden cases for HloScatter-1 with `jax.lax.scatter*` (XLA's CPU backend).

Each case is a random but valid set of StableHLO scatter dimension numbers (batching
dimensions included), an operand, indices and updates, and the result XLA computes for one
combiner. Windows are either fully in bounds or fully out of bounds (XLA skips a window
that is partly out of bounds, the spec skips element by element, and the two agree on
these). `replace` cases have unique target elements (checked with a scatter-add of ones);
the other combiners use small integer values, so the result does not depend on the order
of updates to one element. Run from the repository root (needs `pip install jax`):

    python tools/make_hlo_golden.py [--cases 400] [--out tests/data/hlo_scatter_golden.npz]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import jax
import numpy as np

jax.config.update("jax_enable_x64", True)
jax.config.update("jax_platforms", "cpu")

from jax import lax  # noqa: E402

SCATTERS = {
    "replace": lax.scatter,
    "add": lax.scatter_add,
    "subtract": lax.scatter_sub,
    "multiply": lax.scatter_mul,
    "minimum": lax.scatter_min,
    "maximum": lax.scatter_max,
}
DTYPES = ("float32", "int32", "int64", "float64")


def _subset(rng: np.random.Generator, items: list[int], k: int) -> list[int]:
    return sorted(int(x) for x in rng.choice(items, size=k, replace=False)) if k else []


def random_case(rng: np.random.Generator) -> dict:
    """Dimension numbers and shapes that satisfy C1-C22 (index vectors on the last axis)."""
    rank = int(rng.integers(1, 5))
    operand = [int(rng.integers(1, 6)) for _ in range(rank)]
    dims = list(range(rank))
    n_batch = int(rng.integers(0, min(2, rank - 1) + 1)) if rank > 1 and rng.random() < 0.4 else 0
    batching = _subset(rng, dims, n_batch)
    rest = [d for d in dims if d not in batching]
    k = int(rng.integers(1, len(rest) + 1))
    to_operand = [int(d) for d in rng.permutation(rest)[:k]]
    candidates = [d for d in rest]
    inserted = _subset(rng, candidates, int(rng.integers(0, len(candidates) + 1)))
    window_in = [d for d in dims if d not in inserted and d not in batching]

    n_scatter = n_batch + int(rng.integers(0, 3))
    scatter_shape = [int(rng.integers(1, 4)) for _ in range(n_scatter)]
    batch_pos = _subset(rng, list(range(n_scatter)), n_batch)  # scatter dims carrying the batching dims
    for d_in, pos in zip(batching, batch_pos):
        scatter_shape[pos] = operand[d_in]
    indices_shape = scatter_shape + [k]

    u_rank = n_scatter + len(window_in)
    update_window_dims = _subset(rng, list(range(u_rank)), len(window_in))
    update_scatter_dims = [d for d in range(u_rank) if d not in update_window_dims]
    window_sizes = [int(rng.integers(1, operand[d] + 1)) for d in window_in]
    updates_shape = [0] * u_rank
    for d, size in zip(update_scatter_dims, scatter_shape):
        updates_shape[d] = size
    for d, size in zip(update_window_dims, window_sizes):
        updates_shape[d] = size

    # start indices: the window fits, or (sometimes) lies entirely past the end
    extent = {d: 1 for d in dims}
    for d, size in zip(window_in, window_sizes):
        extent[d] = size
    starts = np.zeros(indices_shape, np.int64)
    for j, d in enumerate(to_operand):
        high = operand[d] - extent[d]
        col = rng.integers(0, high + 1, size=scatter_shape)
        if rng.random() < 0.15:  # drop some windows entirely
            col = np.where(rng.random(scatter_shape) < 0.3, operand[d] + rng.integers(0, 3, size=scatter_shape), col)
        starts[..., j] = col
    return dict(operand_shape=operand, indices=starts, updates_shape=updates_shape,
                update_window_dims=update_window_dims, inserted_window_dims=inserted,
                input_batching_dims=batching, scatter_indices_batching_dims=batch_pos,
                scatter_dims_to_operand_dims=to_operand, index_vector_dim=len(indices_shape) - 1)


def _xla(combiner: str, operand, indices, updates, case) -> np.ndarray:
    dn = lax.ScatterDimensionNumbers(
        update_window_dims=tuple(case["update_window_dims"]), inserted_window_dims=tuple(case["inserted_window_dims"]),
        scatter_dims_to_operand_dims=tuple(case["scatter_dims_to_operand_dims"]),
        operand_batching_dims=tuple(case["input_batching_dims"]),
        scatter_indices_batching_dims=tuple(case["scatter_indices_batching_dims"]))
    out = SCATTERS[combiner](operand, indices, updates, dn, mode=lax.GatherScatterMode.FILL_OR_DROP)
    return np.asarray(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", type=int, default=400)
    parser.add_argument("--seed", type=int, default=20261121)
    parser.add_argument("--out", type=Path, default=Path("tests/data/hlo_scatter_golden.npz"))
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    arrays: dict[str, np.ndarray] = {}
    meta = []
    while len(meta) < args.cases:
        case = random_case(rng)
        combiner = ("replace", "add", "subtract", "multiply", "minimum", "maximum")[len(meta) % 6]
        dtype = DTYPES[(len(meta) // 6) % len(DTYPES)]
        operand = rng.integers(-9, 10, size=case["operand_shape"]).astype(dtype)
        high = 3 if combiner == "multiply" else 10
        updates = rng.integers(-high, high + 1, size=case["updates_shape"]).astype(dtype)
        indices = case.pop("indices")
        if combiner == "replace":  # XLA applies duplicate replacements in no promised order
            hits = _xla("add", np.zeros(case["operand_shape"], np.int64), indices, np.ones(case["updates_shape"], np.int64), case)
            if hits.max(initial=0) > 1:
                continue
        i = len(meta)
        arrays[f"{i}_operand"] = operand
        arrays[f"{i}_indices"] = indices
        arrays[f"{i}_updates"] = updates
        arrays[f"{i}_expected"] = _xla(combiner, operand, indices, updates, case)
        meta.append({**{k: v for k, v in case.items() if k not in ("operand_shape", "updates_shape")},
                     "update_computation": combiner})
    arrays["cases"] = np.array(json.dumps(meta))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(args.out, **arrays)
    batched = sum(1 for m in meta if m["input_batching_dims"])
    print(f"wrote {len(meta)} cases ({batched} with batching dims) to {args.out} with jax {jax.__version__}")


if __name__ == "__main__":
    main()
