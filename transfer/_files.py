"""File helpers every floor may use: the permissions a new file gets from the user's umask, whether an output
would land on a file the same command reads (by path, symbolic link or hard link), and a full disk said as one line
naming the file (:func:`disk_full`)."""

from __future__ import annotations

import errno
import os
from collections.abc import Iterable
from pathlib import Path

__all__ = ["DiskFullError", "disk_full", "put_in_place", "same_file", "umask_mode", "which_input"]


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


class DiskFullError(OSError):
    """An output could not be written: its file system is full."""

    def __str__(self) -> str:
        return str(self.strerror)


def disk_full(out: Path, exc: BaseException, written: int = 0) -> DiskFullError | None:
    """A :class:`DiskFullError` naming ``out`` when ``exc`` came of a full disk (ENOSPC, or a writer that failed
    with almost no space left beside what it had written), else ``None``."""
    import shutil

    if getattr(exc, "errno", None) in (errno.EROFS, errno.EACCES, errno.EPERM):  # said as it is, not as a full disk
        return None
    try:
        free = shutil.disk_usage(out.parent).free
    except OSError:
        return None
    if getattr(exc, "errno", None) != errno.ENOSPC and free > max(written, 1) * 2 + (1 << 20):
        return None
    return DiskFullError(
        errno.ENOSPC,
        f"{out}: the disk is full ({free / 1024:.0f} KiB free in {out.parent} after "
        f"{written / 1024:.0f} KiB of it were written); the file was not written (an earlier one "
        "there is kept): free space there, or write it to another disk",
    )


def put_in_place(tmp: str | os.PathLike, out: str | os.PathLike, replace: bool) -> None:
    """Move the finished file ``tmp`` to ``out``: over what is there (``replace``), or only where nothing is by
    then, else ``FileExistsError`` (a hard link, which the file system refuses over an existing name; where links
    are not supported, a check just before the rename). A file that appeared at ``out`` while the command ran
    (another run's, or the user's) is never replaced without ``replace``."""
    if replace:
        os.replace(tmp, out)
        return
    try:
        os.link(tmp, out)
    except FileExistsError:
        raise
    except OSError:  # no hard links on this file system
        if os.path.lexists(out):
            raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST), str(out)) from None
        os.replace(tmp, out)
        return
    os.unlink(tmp)
