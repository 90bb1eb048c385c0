"""A user's own runtime for `--target python:user_runtime:NAME` (tests/test_targets.py): irscatter
itself run on the files compare writes, honest or with a planted fault."""

from __future__ import annotations

import numpy as np

import irscatter


class Honest:
    name = "mine"

    def __init__(self, precision: str = "f32") -> None:
        self.precision = precision

    def infer(self, xml, feeds):
        compiled = irscatter.read_model(xml).compile()
        return list(compiled.run(dict(feeds)).to_tuple())

    def output_names(self, xml):
        return [sorted(output.names) for output in irscatter.read_model(xml).outputs]

    def describe(self) -> str:
        return f"my runtime at {self.precision}"

    def close(self) -> None:
        pass


class WrongMatMul(Honest):
    """Every output of a model holding a MatMul is off by 1%; a model holding a ReduceMean
    raises, as a runtime's bug would."""

    def infer(self, xml, feeds):
        text = open(xml).read()
        if 'type="ReduceMean"' in text:
            raise RuntimeError("no kernel for ReduceMean")
        outputs = super().infer(xml, feeds)
        if 'type="MatMul"' in text:
            outputs = [o * np.float32(1.01) if o.dtype.kind == "f" else o for o in outputs]
        return outputs


def needs_arguments(colour):  # not a target: a factory whose call fails
    raise TypeError("colour is required")


def not_a_runtime():  # a factory whose object lacks the protocol's members
    return object()
