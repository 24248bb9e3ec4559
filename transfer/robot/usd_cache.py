"""The read cache of :func:`transfer.robot.usd.read_file`: a bounded LRU of stage reads by file, each checked
against the stats of every layer its stage used."""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from transfer.robot.usd import StageRead

__all__: list[str] = []  # the cache is read_file's own

_CACHE_SIZE = 16
_RACY_NS = 2_000_000_000
"""A file modified this recently (before the read began) is not cached: file times are coarse (a clock tick
on Linux, up to 2 s on some file systems), so a second write of the same size within that tick would keep
the same (mtime, size) and go unnoticed."""


@dataclass(frozen=True)
class _Entry:
    layers: tuple[tuple[str, tuple[int, int, int, int]], ...]
    """``(real path, stat)`` of every file layer the stage used (root, sublayers, references, payloads); see
    :func:`_stat`."""
    read: StageRead
    stage: Any
    """The composed ``Usd.Stage`` itself: the one the spawn geometry and the colliders are read from too."""


class _ReadCache:
    """A bounded LRU of :class:`StageRead` by resolved file path, each checked against its layers' stats."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._entries: OrderedDict[str, _Entry] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: str) -> _Entry | None:
        with self._lock:
            entry = self._entries.get(key)
        if entry is not None and not _unchanged(entry.layers):
            with self._lock:
                if self._entries.get(key) is entry:
                    del self._entries[key]
            entry = None
        if entry is None:
            return None
        with self._lock:
            if key in self._entries:
                self._entries.move_to_end(key)
        return entry

    def put(self, key: str, entry: _Entry) -> None:
        with self._lock:
            self._entries[key] = entry
            self._entries.move_to_end(key)
            while len(self._entries) > self.size:
                self._entries.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)


def _stat(path: str) -> tuple[int, int, int, int]:
    """What tells a changed file: ``(mtime_ns, size, ctime_ns, inode)``. The ctime and inode catch a file
    replaced by a copy that keeps the old modification time (``cp -p``, ``shutil.copy2``)."""
    st = os.stat(path)
    return st.st_mtime_ns, st.st_size, st.st_ctime_ns, st.st_ino


def _layer_stats(stage, started: int) -> tuple[tuple[str, tuple[int, int, int, int]], ...] | None:
    """``(real path, stat)`` of the stage's file layers, or ``None`` where caching is unsafe."""
    if stage.GetCompositionErrors():
        return None
    out = []
    for layer in stage.GetUsedLayers():
        if layer.anonymous:
            continue
        real = layer.realPath
        if not real or layer.dirty:
            return None
        try:
            st = _stat(real)
        except OSError:
            return None  # e.g. a layer inside a package, or a resolver URI
        if st[0] > started - _RACY_NS:
            return None
        out.append((real, st))
    return tuple(sorted(out))


def _unchanged(layers: tuple[tuple[str, tuple[int, int, int, int]], ...]) -> bool:
    from pxr import Sdf

    for real, st in layers:
        try:
            if _stat(real) != st:
                return False
        except OSError:
            return False
        held = Sdf.Layer.Find(real)
        if held is not None and held.dirty:
            return False  # unsaved edits in this process: a fresh open would compose those
    return True
