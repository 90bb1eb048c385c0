"""Every registered op on random inputs and attributes: it either refuses them with an
`IRError` or computes outputs of exactly the element type and shape its inference promised.
Any other exception, or a result that contradicts inference, is a bug."""

import os
import typing

import ml_dtypes
import numpy as np
import pytest
from helpers import examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import irscatter
from irscatter.ir.element_types import ElementType
from irscatter.ops import registry
from irscatter.ops.base import TensorInfo
from irscatter.ops.functional import attr_text, make_op

OPS = [cls for cls in registry.supported() if cls.type_name not in ("Parameter", "Result", "Const")]
DTYPES = [np.float32, np.float16, ml_dtypes.bfloat16, np.int32, np.int64, np.uint8, np.int8, np.bool_]
EXAMPLES = int(os.environ.get("IRSCATTER_FUZZ_EXAMPLES", examples(2000, 800)))


def _attr_values(annotation):
    """Plausible IR texts for an attribute of this annotation (and some implausible ones)."""
    args = typing.get_args(annotation)
    base = args[0] if typing.get_origin(annotation) is typing.Annotated else annotation
    if typing.get_origin(base) is typing.Literal:
        return st.sampled_from([*typing.get_args(base), "bogus"])
    if base is bool:
        return st.sampled_from(["true", "false", "1", "maybe"])
    if base is int:
        return st.integers(-3, 4).map(str)
    if base is ElementType:
        return st.sampled_from(["f32", "i64", "i32", "boolean", "f16", "u8", "dynamic", "string"])
    return st.sampled_from(["0", "1", "-1", "0,1", "1,0", "", "2,-1", "x"])


@st.composite
def op_case(draw):
    cls = draw(st.sampled_from(OPS))
    fields = cls.Attrs.model_fields
    attrs = {name: draw(_attr_values(info.annotation)) for name, info in fields.items() if draw(st.booleans())}
    if cls.variadic:
        count = draw(st.integers(1, 3))
    else:
        count = draw(st.integers(len(cls.inputs) - cls.optional_inputs, len(cls.inputs)))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    shared_shape = tuple(draw(st.lists(st.integers(0, 4), max_size=4)))
    arrays = []
    for _ in range(count):
        dtype = np.dtype(draw(st.sampled_from(DTYPES)))
        shape = shared_shape if draw(st.booleans()) else tuple(draw(st.lists(st.integers(0, 4), max_size=4)))
        values = rng.integers(-4, 5, shape)
        arrays.append(values.astype(dtype) if dtype != np.bool_ else values > 0)
    return cls, attrs, arrays


def _by_name(label):
    return next(cls for cls in OPS if cls.label() == label)


F32, I32, BOOL = np.float32, np.int32, np.bool_
FOUND = [  # what the fuzzer found, replayed on every run
    ("Squeeze-1", {}, [np.array(3, F32), np.array(1, I32)]),  # a scalar has no axis 1
    ("ReduceProd-1", {}, [np.array(0, F32), np.array(0, I32)]),  # a scalar reduced over axis 0
    ("ReduceMax-1", {}, [np.array(0, ml_dtypes.bfloat16), np.array(0, I32)]),  # bf16 rounding kept 0-d
    ("Gather-1", {}, [np.array(3, F32), np.array(1, I32), np.array(0, I32)]),  # gather from a scalar
    ("ScatterElementsUpdate-3", {}, [np.array(2, I32), np.array(0, I32), np.array(1, I32), np.array(0, I32)]),
    ("Select-1", {"auto_broadcast": "pdpd"}, [np.zeros(0, BOOL), np.ones(2, BOOL), np.array(False)]),
    ("Broadcast-1", {"mode": "explicit"}, [np.array(3, F32), np.array([-2], np.int64), np.zeros(0, np.int64)]),
]


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(op_case())
def test_an_op_refuses_or_keeps_its_inferred_promise(case):
    check_promise(*case)


@pytest.mark.parametrize("label, attrs, arrays", FOUND, ids=[f[0] for f in FOUND])
def test_what_the_fuzzer_found(label, attrs, arrays):
    check_promise(_by_name(label), attrs, arrays)


def check_promise(cls, attrs, arrays):
    try:
        op = make_op(cls, {k: v for k, v in attrs.items()})
        promised = op.infer(*(TensorInfo.of(a) for a in arrays))
        computed = op.compute(*arrays)
    except irscatter.IRError:
        return
    promised = promised if isinstance(promised, tuple) else (promised,)
    computed = computed if isinstance(computed, tuple) else (computed,)
    assert len(promised) == len(computed)
    for info, value in zip(promised, computed):
        value = np.asarray(value)
        if info.etype is not ElementType.dynamic:
            assert value.dtype == info.etype.dtype, f"{cls.label()} {attrs}: dtype {value.dtype}, inferred {info.etype}"
        assert info.shape.accepts(value.shape), f"{cls.label()} {attrs}: shape {value.shape}, inferred {info.shape}"


def test_attribute_texts_cover_every_schema():
    """Every attribute of every op gets values from the strategy above (no silent defaults)."""
    for cls in OPS:
        for info in cls.Attrs.model_fields.values():
            assert _attr_values(info.annotation) is not None
    assert attr_text(True) == "true"
