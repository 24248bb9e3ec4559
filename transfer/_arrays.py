"""What kind of array a value is, without importing torch (one place for the test)."""

from __future__ import annotations

from typing import Any


def is_torch(x: Any) -> bool:
    """Whether ``x`` is a ``torch.Tensor`` (checked by its module, so torch is never imported here)."""
    return type(x).__module__.startswith("torch")
