"""Every ``$ transfer validate ...`` command in docs/validate.md runs, from the repository root, as written, and
what the page shows of its output is what it prints."""

from __future__ import annotations

import json
import shlex

import pytest

from tests.docs_commands import at_root, commands, ids, page_text, run

TEXT = page_text("validate.md")
COMMANDS = commands("validate.md")

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


@pytest.mark.parametrize("command", COMMANDS, ids=ids(COMMANDS))
def test_documented_command_runs(command, shared, monkeypatch, capsys):
    pytest.importorskip("ovphysx")
    pytest.importorskip("newton")
    args = shlex.split(command)
    with at_root(args, monkeypatch) as plot:
        code, out, err = run(args, capsys)
        assert code == 0, err
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
