"""The one way a command draws a figure: pyplot on the Agg backend (no screen needed) and an atomic save.

:func:`pyplot` loads matplotlib only when a plot is asked for (``import transfer`` stays light); :func:`save` writes
the figure in the format its suffix names, whole or not at all (:func:`transfer.checkpoint.atomic_write`: a full
disk is named, no half-written image is left), and closes it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = ["pyplot", "save"]


def pyplot() -> Any:
    """``matplotlib.pyplot`` on the Agg backend."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save(fig: Any, path: str | Path, dpi: int = 110) -> Path:
    """Write ``fig`` to ``path`` atomically, in the format its suffix names (``.png`` without one), and close it."""
    from transfer.checkpoint import atomic_write

    out = Path(path)
    fmt = out.suffix[1:].lower() or "png"
    try:
        atomic_write(out, lambda tmp: fig.savefig(tmp, dpi=dpi, format=fmt))
    finally:
        pyplot().close(fig)
    return out
