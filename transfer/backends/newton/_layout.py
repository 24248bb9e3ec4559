"""Selection plumbing shared by the views: label matching, per-world layouts and the gathers/scatters over them.

Newton keeps every per-joint, per-DoF, per-coordinate, per-body and per-shape quantity in one flat array for all
worlds. A view selects ``n`` entries per world; :class:`Layout` records where they sit:
``ids[w, i] = offset + w * stride + cols[i]``. One stride between worlds is what ``ModelBuilder.replicate`` and
``add_world`` produce; anything else is refused with the fix.

A flat array seen through a layout becomes a strided 2-D array ``(num_worlds, extent)`` without copying
(:meth:`Layout.rows`), so the generic gather/scatter kernels of :mod:`transfer.kernels` apply unchanged:
gathering the view's columns is ``reorder_2d`` with ``cols`` as the index map, a partial write is
``scatter_2d_user_to_backend_full`` with ``cols`` as the user-to-backend map. Launches are recorded once per
(source, destination) pair and replayed, so a read or write on the step path costs one native launch.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import warp as wp

from transfer import kernels as tk
from transfer._arrays import is_torch
from transfer.kernels.select import index_array

__all__ = [
    "Layout",
    "LaunchCache",
    "Pattern",
    "as_index_array",
    "as_rows",
    "as_struct_array",
    "compile_matcher",
    "components",
    "leaf",
]

Pattern = str | Sequence[str] | re.Pattern | None


def leaf(label: str) -> str:
    """Last element of a label (``/a/b/c`` -> ``c``; ``joint_1`` -> ``joint_1``)."""
    return label.rsplit("/", 1)[-1]


def compile_matcher(pattern: Pattern, what: str) -> Callable[[str], bool] | None:
    """A predicate for a glob, a list of globs or a compiled regex (full match); ``None`` for no pattern.

    The predicate is true when the pattern matches the whole label or its last path element, so ``"LF_*"``
    and ``"/anymal/*/LF_*"`` both work.
    """
    if pattern is None:
        return None
    if isinstance(pattern, re.Pattern):
        return lambda label: pattern.fullmatch(label) is not None or pattern.fullmatch(leaf(label)) is not None
    globs = [pattern] if isinstance(pattern, str) else list(pattern)
    bad = [g for g in globs if not isinstance(g, str)]
    if bad:
        raise TypeError(f"{what}: expected a glob string, a list of glob strings or a compiled regex; got {bad!r}")
    return lambda label: any(fnmatch.fnmatchcase(label, g) or fnmatch.fnmatchcase(leaf(label), g) for g in globs)


@dataclass(frozen=True, eq=False)
class Layout:
    """Where one selected frequency sits in Newton's flat arrays: ``ids[w, i] = offset + w * stride + cols[i]``."""

    kind: str
    """What the entries are: ``"joint"``, ``"dof"``, ``"coord"``, ``"body"`` or ``"shape"``."""
    ids: np.ndarray
    """``(num_worlds, n)`` int32 model indices."""
    offset: int
    """Model index of column 0 of world 0."""
    stride: int
    """Model-index distance between consecutive worlds (0 with one world or an empty selection)."""
    cols: np.ndarray
    """``(n,)`` int32 columns within a world row (``ids[w] - offset - w * stride``)."""
    extent: int
    """Row length that covers every column (``max(cols) + 1``)."""
    device: str = "cpu"
    _cols_wp: list = field(default_factory=list, repr=False)

    @classmethod
    def from_ids(cls, kind: str, ids: np.ndarray, device: Any, what: str) -> Layout:
        ids = np.asarray(ids, dtype=np.int64)
        if ids.ndim != 2:
            raise ValueError(f"{what}: expected (num_worlds, n) {kind} ids, got shape {ids.shape}")
        num_worlds, n = ids.shape
        if n == 0:
            return cls(kind, ids.astype(np.int32), 0, 0, np.zeros(0, np.int32), 0, str(device))
        offset = int(ids[0].min())
        cols = ids[0] - offset
        stride = int(ids[1, 0] - ids[0, 0]) if num_worlds > 1 else 0
        expected = offset + stride * np.arange(num_worlds)[:, None] + cols[None, :]
        if not np.array_equal(expected, ids) or (num_worlds > 1 and stride < int(cols.max()) + 1):
            worlds = np.flatnonzero((expected != ids).any(axis=1))
            w = int(worlds[0]) if worlds.size else 1
            raise ValueError(
                f"{what}: the selected {kind}s do not repeat with one stride between worlds "
                f"(world 0 uses model {kind} ids {ids[0][:8].tolist()}, world {w} uses {ids[w][:8].tolist()}). "
                "Build the worlds from one sub-builder with ModelBuilder.replicate() or add_world() so every "
                "world has the same layout, or select an asset that appears once per world."
            )
        return cls(kind, ids.astype(np.int32), offset, stride, cols.astype(np.int32), int(cols.max()) + 1, str(device))

    @property
    def num_worlds(self) -> int:
        return int(self.ids.shape[0])

    @property
    def count(self) -> int:
        return int(self.ids.shape[1])

    @property
    def cols_wp(self) -> wp.array:
        """``cols`` as a ``wp.int32`` array on the layout's device (created once)."""
        if not self._cols_wp:
            self._cols_wp.append(wp.array(self.cols, dtype=wp.int32, device=self.device))
        return self._cols_wp[0]

    def rows(self, flat: wp.array) -> wp.array:
        """``flat`` (one entry per model element) seen as a strided ``(num_worlds, extent)`` array, no copy."""
        if flat.ndim != 1:
            raise ValueError(f"expected a flat per-{self.kind} array, got shape {tuple(flat.shape)}")
        item = flat.strides[0]
        row = self.stride if self.num_worlds > 1 else self.extent
        view = wp.array(
            ptr=flat.ptr + self.offset * item,
            dtype=flat.dtype,
            shape=(self.num_worlds, self.extent),
            strides=(row * item, item),
            device=flat.device,
            copy=False,
        )
        view._ref = flat  # keep the source alive as long as the view
        return view


class LaunchCache:
    """Recorded gathers and scatters keyed by the arrays they touch; replaying one costs one native launch.

    Keys hold the source and destination arrays themselves, so a pointer cannot be reused by another
    allocation while its recorded launch is cached. Newton's double-buffered states give two entries per read.
    """

    def __init__(self, device: Any, max_entries: int = 256) -> None:
        self.device = wp.get_device(device)
        self._entries: dict[tuple, tuple[Any, tuple]] = {}
        self._max = max_entries

    def _get(self, key: tuple, make: Callable[[], tuple[Any, tuple]]) -> Any:
        entry = self._entries.get(key)
        if entry is None:
            if len(self._entries) >= self._max:
                self._entries.clear()
            entry = self._entries[key] = make()
        return entry[0]

    def gather(self, flat: wp.array, layout: Layout, dst: wp.array) -> None:
        """``dst[w, i] = flat[layout.ids[w, i]]``. ``dst`` is ``(num_worlds, n)`` of the same dtype."""
        if layout.count == 0 or flat.ptr is None:
            return
        key = ("g", flat.ptr, flat.dtype, flat.shape, id(layout), dst.ptr)

        def make() -> tuple[Any, tuple]:
            src = layout.rows(flat)
            cols = layout.cols_wp
            if self.device.is_cpu:
                cmd = wp.launch(
                    tk.reorder_rows_2d, dim=layout.num_worlds, inputs=[src, cols], outputs=[dst], record_cmd=True
                )
            else:
                cmd = wp.launch(tk.reorder_2d, dim=dst.shape, inputs=[src, cols], outputs=[dst], record_cmd=True)
            return cmd, (flat, src, dst)

        self._get(key, make).launch()

    def scatter(self, flat: wp.array, layout: Layout, src: wp.array, env_ids: wp.array, element_ids: wp.array) -> None:
        """``flat[layout.ids[e, u]] = src[e, u]`` for ``e`` in ``env_ids`` and ``u`` in ``element_ids``."""
        if layout.count == 0 or flat.ptr is None or env_ids.shape[0] == 0 or element_ids.shape[0] == 0:
            return
        key = ("s", flat.ptr, flat.dtype, flat.shape, id(layout), src.ptr, env_ids.ptr, env_ids.shape, element_ids.ptr)

        def make() -> tuple[Any, tuple]:
            dst = layout.rows(flat)
            cmd = wp.launch(
                tk.scatter_2d_user_to_backend_full,
                dim=(env_ids.shape[0], element_ids.shape[0]),
                inputs=[src, env_ids, element_ids, layout.cols_wp],
                outputs=[dst],
                record_cmd=True,
            )
            return cmd, (flat, dst, src, env_ids, element_ids)

        self._get(key, make).launch()


def as_rows(values: Any, dtype: Any, shape: tuple[int, int], name: str, device: Any) -> wp.array:
    """``values`` as a ``(num_worlds, n)`` Warp array of ``dtype``, without copying.

    Accepts a ``wp.array`` (or ``torch.Tensor``) of ``dtype`` with that shape, or a float32 array with a trailing
    component axis (``(num_worlds, n, 7)`` for transforms, ``(..., 6)`` for spatial vectors, ``(..., 3, 3)`` for
    matrices) laid out contiguously in its last axes.
    """
    values = _device_array(values, name, device)
    if values.dtype == dtype:
        if tuple(values.shape) != tuple(shape):
            raise ValueError(f"{name}: expected shape {tuple(shape)} ({_dtype_name(dtype)}), got {tuple(values.shape)}")
        return values
    scalar = dtype if wp.types.type_is_scalar(dtype) else dtype._wp_scalar_type_
    comp_shape = tuple(getattr(dtype, "_shape_", ()))
    if values.dtype != scalar or tuple(values.shape) != (*shape, *comp_shape):
        expected = f"{tuple(shape)} of {_dtype_name(dtype)}"
        if comp_shape:
            expected += f" or {(*shape, *comp_shape)} of {_dtype_name(scalar)}"
        raise ValueError(f"{name}: expected shape {expected}, got {tuple(values.shape)} of {_dtype_name(values.dtype)}")
    if tuple(values.strides[2:]) != _packed_strides(comp_shape, scalar):
        raise ValueError(f"{name}: the component axes must be contiguous (got strides {values.strides})")
    return _alias(values, dtype, tuple(shape), values.strides[:2])


def as_struct_array(values: Any, dtype: Any, n: int, name: str, device: Any) -> wp.array:
    """``values`` as a 1-D ``(n,)`` array of ``dtype`` (transform, spatial vector), without copying.

    Accepts ``(n,)`` of ``dtype`` or float32 ``(n, 7)`` / ``(n, 6)`` with a contiguous last axis.
    """
    values = _device_array(values, name, device)
    if values.dtype == dtype and tuple(values.shape) == (n,):
        return values
    width = dtype._shape_[0]
    scalar = dtype._wp_scalar_type_
    item = wp.types.type_size_in_bytes(scalar)
    if values.dtype != scalar or tuple(values.shape) != (n, width) or values.strides[1] != item:
        raise ValueError(
            f"{name}: expected shape ({n},) of {_dtype_name(dtype)} or ({n}, {width}) of {_dtype_name(scalar)} with a "
            f"contiguous last axis, got {tuple(values.shape)} of {_dtype_name(values.dtype)}"
        )
    return _alias(values, dtype, (n,), (values.strides[0],))


def components(a: wp.array) -> wp.array:
    """A ``(num_worlds, n)`` array of transforms / spatial vectors / matrices as float32 ``(num_worlds, n, ...)``."""
    comp_shape = tuple(getattr(a.dtype, "_shape_", ()))
    if not comp_shape:
        return a
    scalar = a.dtype._wp_scalar_type_
    return _alias(a, scalar, (*a.shape, *comp_shape), (*a.strides, *_packed_strides(comp_shape, scalar)))


def as_index_array(ids: Any, n: int, name: str, device: Any, cache: dict) -> wp.array:
    """A selector as a ``wp.int32`` array on ``device`` (``None``: all of ``range(n)``), converted once per value."""
    return index_array(ids, n, name, device, cache)


def _device_array(values: Any, name: str, device: Any) -> wp.array:
    """``values`` (a ``wp.array`` or ``torch.Tensor``) as a ``wp.array``, checked to be on ``device``; no copy."""
    if is_torch(values):
        values = wp.from_torch(values)
    if not isinstance(values, wp.array):
        raise TypeError(f"{name}: expected a wp.array or torch.Tensor, got {type(values).__name__}")
    if values.device != wp.get_device(device):
        raise ValueError(f"{name}: on device {values.device}, but the model is on {device}")
    return values


def _packed_strides(comp_shape: tuple[int, ...], scalar: Any) -> tuple[int, ...]:
    """Byte strides of contiguous (row-major) component axes of ``comp_shape`` holding ``scalar`` values."""
    item = wp.types.type_size_in_bytes(scalar)
    return tuple(int(np.prod(comp_shape[i + 1 :], dtype=np.int64)) * item for i in range(len(comp_shape)))


def _alias(base: wp.array, dtype: Any, shape: tuple, strides: tuple) -> wp.array:
    """A zero-copy view of ``base``'s memory as ``dtype`` with ``shape`` and byte ``strides``; it keeps ``base`` alive."""
    view = wp.array(ptr=base.ptr, dtype=dtype, shape=shape, strides=strides, device=base.device, copy=False)
    view._ref = base
    return view


def _dtype_name(dtype: Any) -> str:
    return getattr(dtype, "__name__", str(dtype))
