"""The one finite-number check: what counts as a real, finite number (not a bool, not NaN or infinite), as a test
and as a checked value with an error that names where it was read."""

from __future__ import annotations

import math
import numbers
from typing import Any

__all__ = ["finite_number", "is_finite_number"]


def is_finite_number(value: Any) -> bool:
    """Whether ``value`` is a real, finite number (Python or numpy; a bool is not one)."""
    return isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isfinite(value)


def finite_number(value: Any, where: str, minimum: float | None = None) -> float:
    """``value`` as a float, or ``ValueError`` naming ``where`` (not a finite number, or below ``minimum``)."""
    if not is_finite_number(value):
        raise ValueError(f"{where}: expected a finite number, got {value!r}")
    if minimum is not None and value < minimum:
        raise ValueError(f"{where}: expected a number >= {minimum}, got {value!r}")
    return float(value)
