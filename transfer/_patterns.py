"""Joint and body name patterns (Python regular expressions, full-matched as Isaac Lab matches them), bounded in
time: :func:`full_matches`.

A pattern comes from a file someone else wrote (a task file, an Isaac Lab run's ``env.yaml``, a checkpoint's
metadata). One with nested repetition, such as ``(.*)*(.*)*...Z``, backtracks exponentially: Python's ``re`` would
run for hours on a six-letter joint name. Matching is therefore stopped after :data:`MATCH_SECONDS` (CPython's
matcher answers signals) and the pattern refused by name.
"""

from __future__ import annotations

import re
import signal
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

from transfer._console import printable

__all__ = ["MATCH_SECONDS", "PatternError", "full_matches"]

MATCH_SECONDS = 2.0
"""The longest one pattern may take to match every name it is given (real patterns take microseconds)."""


class PatternError(ValueError):
    """A name pattern that is no regular expression (``reason``: ``re``'s), or that takes longer than
    :data:`MATCH_SECONDS` to match (``slow``)."""

    def __init__(self, message: str, reason: str = "", slow: bool = False) -> None:
        super().__init__(message)
        self.reason, self.slow = reason, slow


class _Slow(Exception):
    pass


def full_matches(pattern: str, names: Iterable[str], where: str = "pattern") -> list[str]:
    """The names ``pattern`` full-matches, in their order. Raises :class:`PatternError` naming ``where`` and the
    pattern when it does not compile or runs past :data:`MATCH_SECONDS` (nested repetition)."""
    try:
        rx = re.compile(pattern)
    except re.error as exc:
        raise PatternError(
            f"{where}: {printable(pattern, 200)!r} is not a valid regular expression ({exc})", str(exc)
        ) from None
    names = list(names)
    try:
        with _bounded(MATCH_SECONDS):
            return [n for n in names if rx.fullmatch(n)]
    except _Slow:
        raise PatternError(
            f"{where}: the pattern '{printable(pattern, 200)}' took over {MATCH_SECONDS:g} s to match "
            f"{len(names)} names: nested repetition (such as (.*)* or (a+)+) backtracks without end; write it without "
            "a repeat inside a repeat",
            slow=True,
        ) from None


@contextmanager
def _bounded(seconds: float) -> Iterator[None]:
    """Raise :class:`_Slow` in the block after ``seconds`` (a real-time timer; only in the main thread, where
    Python delivers signals; elsewhere unbounded). A timer already running is restored, less the time spent."""
    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "setitimer"):
        yield
        return

    def expire(_sig: int, _frame: Any) -> None:
        raise _Slow

    previous = signal.signal(signal.SIGALRM, expire)
    earlier, interval = signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        left, _ = signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, signal.SIG_DFL if previous is None else previous)  # None: set outside Python
        if earlier:
            signal.setitimer(signal.ITIMER_REAL, max(earlier - (seconds - left), 1e-3), interval)
