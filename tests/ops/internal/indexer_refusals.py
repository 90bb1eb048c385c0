"""What the indexer tests share: a call with some inputs replaced must be refused with a label,
in a message that names the op."""

from __future__ import annotations

import pytest

import irscatter
from irscatter.ops.functional import call


def assert_refused(cls, arrays: list, replaced: dict, attributes: dict, label: str) -> None:
    arrays = [replaced.get(i, a) for i, a in enumerate(arrays)]
    with pytest.raises(irscatter.IRError) as caught:
        call(cls, arrays, attributes)
    assert caught.value.label == label, str(caught.value)
    assert cls.type_name in str(caught.value)
