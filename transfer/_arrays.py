"""What kind of array a value is, without importing torch (one place for the test)."""

from __future__ import annotations

from typing import Any


def is_torch(x: Any) -> bool:
    """Whether ``x`` is a ``torch.Tensor`` (checked by its module, so torch is never imported here)."""
    return type(x).__module__.startswith("torch")


def host(array: Any) -> Any:
    """``array.numpy()`` of a ``wp.array``, its host view kept on a CPU array: a CPU array's ``numpy()`` is a view
    of the same memory anyway, but making one costs ~3 us, paid by every observation term every policy step. A
    CUDA array is copied to the host each call (as ``numpy()`` does)."""
    if not array.device.is_cpu:
        return array.numpy()
    view = array.__dict__.get("_host_view")
    if view is None:
        view = array.__dict__["_host_view"] = array.numpy()
    return view
