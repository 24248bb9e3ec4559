"""File helpers every floor may use: the permissions a new file gets from the user's umask."""

from __future__ import annotations

import os

__all__ = ["umask_mode"]


def umask_mode(path: str | os.PathLike) -> None:
    """Give ``path`` the permissions the user's umask gives a new file (``0o666 & ~umask``): a file made by
    ``tempfile.mkstemp`` and renamed into place would otherwise stay 0600, whatever the umask."""
    mask = os.umask(0)
    os.umask(mask)
    os.chmod(path, 0o666 & ~mask)
