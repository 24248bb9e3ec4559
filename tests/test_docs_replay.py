"""Every ``$ transfer ...`` command in docs/replay.md runs, from the repository root, as written."""

from __future__ import annotations

import json
import shlex

import pytest

from tests.docs_commands import at_root, commands, ids, run

COMMANDS = commands("replay.md")

pytestmark = [pytest.mark.engines, pytest.mark.filterwarnings("ignore")]


def test_the_page_has_commands():
    assert len(COMMANDS) >= 4
    assert any("--compare" in c for c in COMMANDS) and any("--json" in c for c in COMMANDS)


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
            assert report["reordered"] is True and report["fall_fraction"] == 0.0
        else:
            assert "fwd m/s" in out and "env-steps/s" in out
        if "--compare" in args:
            assert all(label in out for label in ("native", "reordered", "naive"))
        if plot is not None:
            assert plot.stat().st_size > 10_000
