"""Two saved sets of tensors from any runtime (`run --dump`'s, another runtime's own dump),
judged key by key by the one rule: the first against the second, the reference.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from irscatter.debug.tolerances import Tolerances
from irscatter.debug.verdicts import MISSING, LayerResult, Report, TensorResult
from irscatter.metrics import diff


def compare_dumps(target: Mapping[str, np.ndarray], reference: Mapping[str, np.ndarray], tolerances: Tolerances,
                  names: Sequence[str] = ("A", "B")) -> Report:
    """Two saved sets of tensors (from any runtime), key by key: `target` judged against
    `reference`. A key on one side only is listed as not compared."""
    report = Report(f"{names[1]} (reference)", f"{names[0]}", "dumps")
    keys = list(reference) + [k for k in target if k not in reference]
    for position, key in enumerate(keys):
        record = LayerResult(position, position, key, "", None, "pending")
        if key not in target:
            record.status, record.reason = "not compared", MISSING
        elif key not in reference:
            record.status, record.reason = "not compared", f"only in {names[0]}"
        else:
            want = np.asarray(reference[key])
            tensor = TensorResult(key, diff(np.asarray(target[key]), want, tolerances.for_tensor(key, want.dtype)))
            record.tensors.append(tensor)
            record.status = "passed" if tensor.diff.passed else "failed"
        report.layers.append(record)
    return report

