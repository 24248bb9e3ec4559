"""The one finite-number check (``transfer._numbers``), held to ``math.isfinite`` on every kind of value."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from transfer._numbers import finite_number, is_finite_number


@given(st.floats(allow_nan=True, allow_infinity=True) | st.integers(-(10**30), 10**30))
def test_a_number_is_finite_exactly_when_math_says_so(value):
    assert is_finite_number(value) is math.isfinite(value)
    assert is_finite_number(np.float32(value) if abs(float(value)) < 3e38 else value) is math.isfinite(value)
    if math.isfinite(value):
        assert finite_number(value, "x") == float(value)
    else:
        with pytest.raises(ValueError, match="x: expected a finite number"):
            finite_number(value, "x")


@pytest.mark.parametrize("value", [True, False, "1.0", None, [1.0], complex(1, 0)])
def test_what_is_not_a_real_number_is_refused(value):
    assert not is_finite_number(value)
    with pytest.raises(ValueError, match="scene.spawn_height: expected a finite number"):
        finite_number(value, "scene.spawn_height")


def test_a_minimum_is_named():
    with pytest.raises(ValueError, match=r"friction: expected a number >= 0, got -1"):
        finite_number(-1, "friction", 0)
