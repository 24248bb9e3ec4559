"""The documented ``$ transfer ...`` commands of a docs page, and running one through ``transfer.cli.main``.

Each ``tests/test_docs_*.py`` takes its page's commands from here and keeps its own assertions on what they print.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from transfer.cli import main

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"


def page_text(page: str) -> str:
    """The text of ``docs/<page>``."""
    return (DOCS / page).read_text()


def commands(page: str, start: str = "") -> list[str]:
    """The arguments of every ``$ transfer <start>...`` line of ``docs/<page>``, in page order (``start`` kept)."""
    pattern = rf"^\$ transfer ({re.escape(start)}.+)$"
    return [m.group(1) for m in re.finditer(pattern, page_text(page), re.MULTILINE)]


def ids(found: list[str]) -> list[str]:
    """Test ids for ``pytest.mark.parametrize`` over ``found``: ``cmd0``, ``cmd1``, ..."""
    return [f"cmd{i}" for i in range(len(found))]


@contextlib.contextmanager
def at_root(args: list[str], monkeypatch: pytest.MonkeyPatch) -> Iterator[Path | None]:
    """Work from the repository root for the block; yields the command's ``--plot`` file (or ``None``), removed
    when the block ends."""
    monkeypatch.chdir(ROOT)
    plot = Path(args[args.index("--plot") + 1]) if "--plot" in args else None
    try:
        yield plot
    finally:
        if plot is not None:
            plot.unlink(missing_ok=True)


def run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """``(exit code, stdout, stderr)`` of ``transfer <args>`` run in this process, from the current directory."""
    code = main(args)
    out, err = capsys.readouterr()
    return code, out, err
