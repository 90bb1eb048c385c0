"""A model run step after step, as one OpenVINO infer request runs a stateful model: the feeds
of each step (`step<k>/<name>` keys) and the loop that carries the model's variables, and the
inputs a step does not give, from one step to the next."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from irscatter.errors import UsageError
from irscatter.runtime.interpreter import CompiledModel, Outputs

_STEP = re.compile(r"step(\d+)/(.+)")


def has_steps(feeds: Mapping[str, np.ndarray]) -> bool:
    """Whether the feeds are keyed per step (`step0/x`, `step1/x`, ...)."""
    return any(_STEP.fullmatch(name) for name in feeds)


def split_steps(feeds: Mapping[str, np.ndarray], steps: int) -> list[dict[str, np.ndarray]]:
    """The feeds of each step: a feed keyed `step<k>/<name>` is input `name` from step k on (until
    a later step gives another); a feed without a step prefix is the same in every step. There
    are `steps` steps, or as many as the prefixes name when that is more. The prefixes must name
    every step from 0 to their last (a usage error otherwise): one key `step999999/x` is more
    likely a slip than a request for a million steps."""
    per_step: dict[int, dict[str, np.ndarray]] = {}
    plain: dict[str, np.ndarray] = {}
    for name, value in feeds.items():
        m = _STEP.fullmatch(name)
        if m:
            per_step.setdefault(int(m.group(1)), {})[m.group(2)] = value
        else:
            plain[name] = value
    named = max(per_step, default=-1) + 1
    if len(per_step) != named:
        missing = next(k for k in range(named) if k not in per_step)
        raise UsageError(f"the inputs are keyed for steps up to step{named - 1}, but none for step{missing}: step keys "
                         f"(step<k>/<name>) must name every step from step0 to the last")
    count = max(steps, named)
    if count > 1_000_000:
        raise UsageError(f"{count} steps is more than this command will run")
    out = [dict(per_step.get(k, {})) for k in range(count)]
    out[0] = {**plain, **out[0]}
    return out


def run_steps(compiled: CompiledModel, steps: Sequence[Mapping[str, Any]],
              feed_back: Sequence[tuple[str, str]] = (), *,
              precision: str | None = None, decompression: str | None = None,
              ) -> Iterator[tuple[dict[str, Any], Outputs]]:
    """Run `compiled` on each step's feeds (see `split_steps`) in turn, yielding the feeds each
    step ran on and its outputs. The variables are those of `compiled` (a `new_request()` for
    state of its own), carried from step to step; an input a step does not give keeps its
    value of the step before, and each (output, input) pair of `feed_back` hands that output
    of one step to that input of the next."""
    current: dict[str, Any] = {}
    for feeds in steps:
        current = {**current, **feeds}
        outputs = compiled.run(current, precision=precision, decompression=decompression)
        yield current, outputs
        current = {**current, **{name: outputs[out] for out, name in feed_back}}
