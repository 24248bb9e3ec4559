"""Every ``$ transfer ...`` command in docs/replay.md runs, from the repository root, as written."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest

from transfer.cli import main

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "replay.md"
COMMANDS = [m.group(1) for m in re.finditer(r"^\$ transfer (.+)$", DOC.read_text(), re.MULTILINE)]

pytestmark = [pytest.mark.engines, pytest.mark.filterwarnings("ignore")]


def test_the_page_has_commands():
    assert len(COMMANDS) >= 4
    assert any("--compare" in c for c in COMMANDS) and any("--json" in c for c in COMMANDS)


@pytest.mark.parametrize("command", COMMANDS, ids=[f"cmd{i}" for i in range(len(COMMANDS))])
def test_documented_command_runs(command, shared, monkeypatch, capsys):
    pytest.importorskip("ovphysx")
    pytest.importorskip("newton")
    args = shlex.split(command)
    monkeypatch.chdir(ROOT)
    plot = Path(args[args.index("--plot") + 1]) if "--plot" in args else None
    try:
        assert main(args) == 0, capsys.readouterr().err
        out = capsys.readouterr().out
        if "--json" in args:
            report = json.loads(out)
            assert report["reordered"] is True and report["fall_fraction"] == 0.0
        else:
            assert "fwd m/s" in out and "env-steps/s" in out
        if "--compare" in args:
            assert all(label in out for label in ("native", "reordered", "naive"))
        if plot is not None:
            assert plot.stat().st_size > 10_000
    finally:
        if plot is not None:
            plot.unlink(missing_ok=True)
