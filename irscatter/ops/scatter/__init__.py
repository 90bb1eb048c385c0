"""The scatter family: ScatterUpdate-3, ScatterElementsUpdate-3/-12, ScatterNDUpdate-4/-15 and
SliceScatter-15.

ScatterNDUpdate-4 is the op whose spec page calls it ScatterNDUpdate-3: its class lives in
OpenVINO's `v3` namespace but first appears in opset4, and irscatter numbers every op version by
the opset that introduced it, as OpenVINO's own `version_id` does (a serialized model says
`version="opset4"`).

All three reduce to `core.scatter_rows`; they differ only in how an index selects
a row of the output. Index ranges follow each version's spec, which is stricter than
OpenVINO's reference kernels in the older versions:

| op | indices allowed | OpenVINO's reference |
|---|---|---|
| ScatterUpdate-3 | [0, d-1] | negatives unchecked (undefined behaviour) |
| ScatterElementsUpdate-3 | [0, d-1] | negatives wrapped |
| ScatterElementsUpdate-12 | [-d, d-1], negatives wrapped | the same |
| ScatterNDUpdate-4 | [0, d-1] per component | negatives wrapped |
| ScatterNDUpdate-15 | [-d, d-1] per component | the same |

Anything outside the allowed range is an ExecutionError naming the value and its position.
Duplicate indices without a reduction: the last in row-major order wins.
"""
