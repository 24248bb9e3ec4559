"""The one way a command draws a figure: pyplot on the Agg backend (no screen needed) and an atomic save.

:func:`pyplot` loads matplotlib only when a plot is asked for (``import transfer`` stays light); :func:`save` writes
the figure in the format its suffix names, whole or not at all (:func:`transfer.formats.checkpoint.atomic_write`: a full
disk is named, no half-written image is left), and closes it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from transfer.formats.checkpoint import atomic_write

__all__ = ["check_destination", "pyplot", "save"]


def pyplot() -> Any:
    """``matplotlib.pyplot`` on the Agg backend."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save(fig: Any, path: str | Path, dpi: int = 110) -> Path:
    """Write ``fig`` to ``path`` atomically, in the format its suffix names (``.png`` without one), and close it."""
    out = Path(path)
    fmt = out.suffix[1:].lower() or "png"
    try:
        check_destination(out)
    except ValueError:
        pyplot().close(fig)
        raise
    try:
        atomic_write(out, lambda tmp: fig.savefig(tmp, dpi=dpi, format=fmt))
    finally:
        pyplot().close(fig)
    return out


def check_destination(path: str | Path) -> None:
    """Refuse (``ValueError``) a plot destination that holds a file of the user's: an existing file is replaced only
    when it is an image of the format its suffix names (a plot drawn before) or empty. Asked before a run starts, and again
    when the figure is saved."""
    out = Path(path)
    fmt = out.suffix[1:].lower() or "png"
    if out.is_file() and out.stat().st_size and not _is_image(out, fmt):  # an empty file holds nothing to lose
        raise ValueError(
            f"--plot {out}: the file exists and is not a {fmt.upper()} image (a plot would replace it); "
            "give another path, or remove it first"
        )


_MAGIC = {
    "png": (b"\x89PNG",),
    "pdf": (b"%PDF",),
    "jpg": (b"\xff\xd8",),
    "jpeg": (b"\xff\xd8",),
    "svg": (b"<?xml", b"<svg"),
}


def _is_image(path: Path, fmt: str) -> bool:
    """Whether ``path`` holds an image of ``fmt`` (by its first bytes): a plot drawn before, safe to draw over."""
    with open(path, "rb") as fh:
        head = fh.read(8)
    return any(head.startswith(m) for m in _MAGIC.get(fmt, ()))
