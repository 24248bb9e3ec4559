"""File helpers every floor may use: the permissions a new file gets from the user's umask, and whether an output
would land on a file the same command reads (by path, symbolic link or hard link)."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

__all__ = ["same_file", "umask_mode", "which_input"]


def umask_mode(path: str | os.PathLike) -> None:
    """Give ``path`` the permissions the user's umask gives a new file (``0o666 & ~umask``): a file made by
    ``tempfile.mkstemp`` and renamed into place would otherwise stay 0600, whatever the umask."""
    mask = os.umask(0)
    os.umask(mask)
    os.chmod(path, 0o666 & ~mask)


def same_file(a: str | os.PathLike, b: str | os.PathLike) -> bool:
    """Whether ``a`` and ``b`` name one file: the same resolved path (symbolic links and ``..`` followed), or, both
    existing, the same inode (a hard link)."""
    try:
        if Path(a).resolve() == Path(b).resolve():
            return True
        return os.path.exists(a) and os.path.exists(b) and os.path.samefile(a, b)
    except (OSError, RuntimeError):  # a link loop
        return False


def which_input(out: str | os.PathLike, inputs: Iterable[tuple[str, str | os.PathLike]]) -> tuple[str, Path] | None:
    """The first ``(what, path)`` of ``inputs`` that ``out`` would write over (:func:`same_file`), else ``None``."""
    return next(((what, Path(path)) for what, path in inputs if same_file(out, path)), None)
