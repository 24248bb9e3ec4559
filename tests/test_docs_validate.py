"""Every ``$ transfer validate ...`` command in docs/validate.md runs, from the repository root, as written, and
what the page shows of its output is what it prints."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest

from transfer.cli import main

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "validate.md"
TEXT = DOC.read_text()
COMMANDS = [m.group(1) for m in re.finditer(r"^\$ transfer (.+)$", TEXT, re.MULTILINE)]

pytestmark = [pytest.mark.engines, pytest.mark.filterwarnings("ignore")]


def test_the_page_has_commands_and_the_thresholds():
    assert len(COMMANDS) >= 2 and all(c.startswith("validate ") for c in COMMANDS)
    assert any("--json" in c for c in COMMANDS) and any("--plot" in c for c in COMMANDS)
    for value in ("1.0 deg", "2.0 %", "45 deg/s", "0.05 m/s", "0.002 -> 0.05 m/s^2"):
        assert value in TEXT, value


def _shown(command: str) -> list[str]:
    """The report lines the page shows under ``command``: verdicts, the joint table and same_child_bodies."""
    block = TEXT.split(f"$ transfer {command}\n", 1)[1].split("```", 1)[0]
    keep = ("  physx ", "  newton ", "  same_child_bodies", "  joint ")
    return [line for line in block.splitlines() if line.startswith(keep) or " moved " in line]


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
            assert all(r["status"] == "pass" for r in report["joint_movement"].values())
            assert {f["rule"] for f in report["profile"]} >= {"robot-api"}
        else:
            shown = _shown(command)
            assert len(shown) >= 4
            for line in shown:
                assert line in out.splitlines(), line
            assert "same_child_bodies: true" in out
        if plot is not None:
            assert plot.stat().st_size > 10_000
    finally:
        if plot is not None:
            plot.unlink(missing_ok=True)
