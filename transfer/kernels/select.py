"""Selectors: the one place that turns ``env_ids`` / ``joint_ids`` / ``element_ids`` into checked indices.

A selector is ``None`` (all), a slice or range, a list or numpy array of int32/int64 indices, a boolean mask, a
``torch.Tensor`` or a ``wp.array``. :func:`host_indices` checks it on the host (range, duplicates);
:func:`index_array` gives the ``wp.int32`` array a kernel launches with (device index arrays pass unchecked, so
nothing synchronizes).
"""

from functools import lru_cache
from typing import Any

import numpy as np
import warp as wp

from transfer._arrays import is_torch

__all__ = ["arange", "host_indices", "index_array"]


@wp.kernel(enable_backward=False, module="unique")
def _indices_to_int32(src: wp.array(dtype=Any), dst: wp.array(dtype=wp.int32)):
    i = wp.tid()
    dst[i] = wp.int32(src[i])


wp.overload(_indices_to_int32, [wp.array(dtype=wp.int64), wp.array(dtype=wp.int32)])


@lru_cache(maxsize=256)
def arange(n: int, device: str) -> wp.array:
    """Cached ``[0, 1, ..., n-1]`` as ``wp.int32`` on ``device`` (identity maps, "all" selectors)."""
    return wp.array(np.arange(n, dtype=np.int32), dtype=wp.int32, device=device)


def host_indices(sel: Any, n: int, name: str) -> np.ndarray:
    """A selector of ``n`` elements as validated int32 indices on the host, in the order given.

    Accepts a slice or range, a list or numpy array of int32/int64 indices, a boolean mask of length ``n``, a
    ``torch.Tensor`` or a ``wp.array`` (copied to the host). Raises ``IndexError`` for out-of-range indices and
    ``ValueError`` for duplicates or a mask of the wrong length, naming ``name``.
    """
    values = _host_values(sel, n)
    if values.ndim != 1:
        raise ValueError(f"{name}: expected a 1-D index array or boolean mask, got shape {values.shape}")
    if values.dtype == np.bool_:
        if values.shape[0] != n:
            raise ValueError(f"{name}: a boolean mask must have length {n}, got {values.shape[0]}")
        return np.flatnonzero(values).astype(np.int32)
    if values.size == 0:
        return np.zeros(0, dtype=np.int32)
    if not np.issubdtype(values.dtype, np.integer):
        raise TypeError(f"{name}: expected integer indices (int32 or int64) or a boolean mask, got {values.dtype}")
    bad = values[(values < 0) | (values >= n)]
    if bad.size:
        raise IndexError(f"{name}: indices {bad[:8].tolist()} are out of range [0, {n})")
    uniq, counts = np.unique(values, return_counts=True)
    if uniq.size != values.size:
        raise ValueError(
            f"{name}: duplicate indices {uniq[counts > 1][:8].tolist()}; each index may appear once "
            "(a duplicate would make two threads write the same element)"
        )
    return values.astype(np.int32)


def index_array(sel: Any, n: int, name: str, device: Any, cache: dict | None = None) -> wp.array:
    """Normalize a selector of ``n`` elements to a ``wp.int32`` index array on ``device``.

    ``None`` or ``slice(None)`` selects all. Host selectors (lists, numpy, slices, ranges, CPU tensors and arrays)
    and boolean masks (from anywhere; converted on the host) are checked for range and duplicates. int32/int64
    index arrays already on a CUDA device are used unchecked: checking them would synchronize. With ``cache`` (a
    dict the caller keeps), each distinct host selector is converted once.
    """
    device = wp.get_device(device)
    if sel is None or (isinstance(sel, slice) and sel == slice(None)):
        return arange(n, str(device))
    if is_torch(sel) and sel.is_cuda and not sel.dtype.is_floating_point and sel.dtype.itemsize in (4, 8):
        return _device_indices(wp.from_torch(sel), name, device)
    if isinstance(sel, wp.array) and not sel.device.is_cpu and sel.dtype != wp.bool:
        return _device_indices(sel, name, device)
    if cache is None:
        return wp.array(host_indices(sel, n, name), dtype=wp.int32, device=device)
    host = _host_values(sel, n)
    key = (host.dtype.str, host.shape, host.tobytes(), n)
    arr = cache.get(key)
    if arr is None:
        if len(cache) > 512:
            cache.clear()
        arr = cache[key] = wp.array(host_indices(host, n, name), dtype=wp.int32, device=device)
    return arr


def _host_values(sel: Any, n: int) -> np.ndarray:
    if isinstance(sel, slice):
        return np.arange(n, dtype=np.int32)[sel]
    if isinstance(sel, range):
        return np.asarray(sel, dtype=np.int64)
    if is_torch(sel):
        return sel.detach().cpu().numpy()
    if isinstance(sel, wp.array):
        return sel.numpy()
    return np.asarray(sel)


def _device_indices(sel: wp.array, name: str, device: wp.Device) -> wp.array:
    if sel.ndim != 1 or sel.dtype not in (wp.int32, wp.int64):
        raise TypeError(f"{name}: expected a 1-D int32/int64 index array or a boolean mask, got {sel.dtype}")
    if sel.device != device:
        raise ValueError(f"{name}: on device {sel.device}, but the data is on {device}")
    if sel.dtype == wp.int32:
        return sel
    converted = wp.empty(sel.shape[0], dtype=wp.int32, device=device)
    wp.launch(_indices_to_int32, dim=sel.shape[0], inputs=[sel], outputs=[converted], device=device)
    return converted
