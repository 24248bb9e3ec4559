"""Every ``$ transfer ...`` command in docs/import.md runs, in order, as written, in a scratch folder (they use the
robots Newton ships, ``newton:<name>``); the converted robot's orders match both engines."""

from __future__ import annotations

import shlex

import pytest

from tests.docs_commands import commands, page_text, run

COMMANDS = commands("import.md")

pytestmark = [pytest.mark.engines, pytest.mark.filterwarnings("ignore")]


def test_the_page_has_the_commands_and_is_linked():
    assert [c.split()[0] for c in COMMANDS] == ["inspect", "import", "inspect"]
    assert "](import.md)" in page_text("index.md") and "](docs/import.md)" in (page_text("../README.md"))


@pytest.mark.usefixtures("converters")
def test_documented_commands_run_in_order(tmp_path, monkeypatch, capsys):
    pytest.importorskip("ovphysx")
    pytest.importorskip("newton")
    monkeypatch.chdir(tmp_path)
    for command in COMMANDS:
        code, out, err = run(shlex.split(command), capsys)
        assert code == 0, (command, err)
        if command.startswith("import"):
            assert "wrote quadruped.usd" in out and "urdf-usd-converter 0.3.4" in out, out
        else:  # an MJCF/URDF robot has MuJoCo's order of the file too; the USD imported from it does not
            mujoco = ".urdf" in command
            assert out.count("emulation vs engine: MATCH") == 2 + mujoco, out
            assert ("mujoco: emulation vs engine: MATCH" in out) == mujoco, out
    assert (tmp_path / "quadruped.usd").read_bytes()[:8] == b"PXR-USDC"
