"""Host-side checks and conversions shared by the reorder kernels and :mod:`transfer.kernels.plan`."""

from functools import lru_cache
from typing import Any, Literal

import numpy as np
import warp as wp

from transfer._arrays import is_torch
from transfer.name_map import ArticulationNameMap

MapAttr = Literal["user_to_backend", "backend_to_user"]


def as_warp(x: Any, name: str) -> wp.array:
    """``x`` as a Warp array (zero-copy for torch tensors)."""
    if isinstance(x, wp.array):
        return x
    if is_torch(x):
        return wp.from_torch(x)
    raise TypeError(f"{name}: expected a wp.array or torch.Tensor, got {type(x).__name__}")


def empty_like(x: Any, *, zero: bool = False) -> Any:
    """A fresh contiguous array of the same kind, shape, dtype and device as ``x`` (zero-filled if ``zero``)."""
    if is_torch(x):
        return x.new_zeros(x.shape) if zero else x.new_empty(x.shape)
    return wp.zeros_like(x) if zero else wp.empty_like(x)


def dtype_name(dtype: Any) -> str:
    return getattr(dtype, "__name__", str(dtype))


def check_shape(a: wp.array, name: str, expected: tuple[int, ...], what: str = "") -> None:
    if tuple(a.shape) != tuple(expected):
        hint = f" {what}" if what else ""
        raise ValueError(f"{name}: expected shape {tuple(expected)}{hint}, got {tuple(a.shape)}")


def check_same(a: wp.array, a_name: str, b: wp.array, b_name: str) -> None:
    """Same dtype and device (shapes are checked by the caller)."""
    if a.dtype != b.dtype:
        raise TypeError(f"{b_name}: dtype {dtype_name(b.dtype)} does not match {a_name} dtype {dtype_name(a.dtype)}")
    if a.device != b.device:
        raise ValueError(f"{b_name}: on device {b.device}, but {a_name} is on {a.device}")


def check_ndim(a: wp.array, name: str, ndims: tuple[int, ...], layout: str) -> None:
    if a.ndim not in ndims:
        raise ValueError(f"{name}: expected shape {layout}, got {tuple(a.shape)}")


def check_no_alias(src: wp.array, dst: wp.array, dst_name: str) -> None:
    if src.ptr is not None and src.ptr == dst.ptr and src.size > 0:
        raise ValueError(f"{dst_name}: must not alias the source array (a permutation cannot run in place)")


@lru_cache(maxsize=64)
def map_on_device(nmap: ArticulationNameMap, device: str) -> ArticulationNameMap:
    return nmap.to_device(device)


def device_map(nmap: ArticulationNameMap, attr: MapAttr, device: wp.Device) -> wp.array:
    """The ``attr`` index array of ``nmap`` on ``device`` (cached per map and device)."""
    if str(wp.get_device(nmap.device)) != str(device):
        nmap = map_on_device(nmap, str(device))
    return getattr(nmap, attr)


@lru_cache(maxsize=256)
def arange(n: int, device: str) -> wp.array:
    """Cached ``[0, 1, ..., n-1]`` as ``wp.int32`` on ``device`` (identity maps, "all" selectors)."""
    return wp.array(np.arange(n, dtype=np.int32), dtype=wp.int32, device=device)


def check_map(nmap: Any, name: str, n: int, what: str) -> None:
    if nmap is None:
        return
    if not isinstance(nmap, ArticulationNameMap):
        raise TypeError(f"{name}: expected an ArticulationNameMap or None, got {type(nmap).__name__}")
    if len(nmap) != n:
        raise ValueError(f"{name}: the {nmap.kind} map has {len(nmap)} elements, but {what} has {n}")


def prepare_out(src: wp.array, out: Any, src_like: Any, src_name: str) -> tuple[wp.array, Any]:
    """Allocate or check the output of a same-shape permutation; returns (warp view, object to return)."""
    if out is None:
        out = empty_like(src_like)
    out_wp = as_warp(out, "out")
    check_shape(out_wp, "out", tuple(src.shape), f"(same as {src_name})")
    check_same(src, src_name, out_wp, "out")
    check_no_alias(src, out_wp, "out")
    return out_wp, out
