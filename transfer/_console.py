"""Keeping stdout clean for data (tables, JSON) while engines print to the C-level stdout."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator


@contextlib.contextmanager
def stdout_to_stderr() -> Iterator[None]:
    """Send stdout to stderr for the duration: Python's ``sys.stdout`` and what native code (PhysX, Warp)
    writes to file descriptor 1."""
    sys.stdout.flush()
    saved = os.dup(1)
    try:
        os.dup2(2, 1)
        with contextlib.redirect_stdout(sys.stderr):
            yield
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)
