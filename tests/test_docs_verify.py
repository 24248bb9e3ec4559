"""Every ``$ transfer verify ...`` command in docs/verify.md runs, from the repository root, as written, and exits as
the page says: 0 for the ANYmal C checkpoints on their own robot, 1 for the Go2 config on ANYmal C."""

from __future__ import annotations

import json
import shlex

import pytest

from tests.docs_commands import at_root, commands, ids, run

COMMANDS = commands("verify.md", "verify ")

pytestmark = [pytest.mark.engines, pytest.mark.filterwarnings("ignore")]


def _expected_exit(args: list[str]) -> int:
    """The page's Go2-on-ANYmal example fails check 1; every other command passes."""
    return 1 if any("unitree_go2" in a for a in args) and any("anymal_c.usda" in a for a in args) else 0


def test_the_page_has_commands():
    assert len(COMMANDS) >= 3
    assert any("--json" in c for c in COMMANDS) and any("--trace" in c and "--plot" in c for c in COMMANDS)
    assert any(_expected_exit(shlex.split(c)) == 1 for c in COMMANDS)


@pytest.mark.parametrize("command", COMMANDS, ids=ids(COMMANDS))
def test_documented_command_runs(command, shared, monkeypatch, capsys):
    args = shlex.split(command)
    expected = _expected_exit(args)
    if expected == 0:  # check 1 needs no engine; check 2 opens both
        pytest.importorskip("ovphysx")
        pytest.importorskip("newton")
        pytest.importorskip("onnxruntime")
    with at_root(args, monkeypatch) as plot:
        code, out, err = run(args, capsys)
        assert code == expected, err + out
        if "--json" in args:
            report = json.loads(out)
            assert report["ok"] is (expected == 0) and report["largest"]["observation"]["entry"]
        elif expected == 0:
            assert "2. same named state, same observation, same action: ok" in out and out.rstrip().endswith("ok")
        else:
            assert "sizes and names: FAILED" in out and "FL_hip_joint" in out
        if "--trace" in args and expected == 0:
            assert "dynamics difference" in out or "stay within" in out
        if plot is not None:
            assert plot.stat().st_size > 10_000
