"""Every ``$ transfer ...`` command in docs/checkpoints.md runs, in order, as written.

They run in a scratch folder laid out like the repository's surroundings: ``presets/`` linked to the repository's,
``../shared`` linked to the shared checkpoints and assets; the files the commands write stay in that folder.
"""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from tests.conftest import SHARED
from tests.docs_commands import ROOT, commands, run

COMMANDS = commands("checkpoints.md")

pytestmark = [pytest.mark.engines, pytest.mark.filterwarnings("ignore")]


def test_the_page_has_the_commands():
    verbs = [c.split()[0] for c in COMMANDS]
    assert verbs.count("convert") >= 3 and "info" in verbs and verbs.count("replay") >= 3
    assert any("--source mjwarp --to mjwarp" in c for c in COMMANDS)  # metadata only
    assert all("--source" not in c for c in COMMANDS if c.startswith("replay"))  # replay reads the metadata


def test_documented_commands_run_in_order(shared, tmp_path, monkeypatch, capsys):
    pytest.importorskip("ovphysx")
    pytest.importorskip("newton")
    pytest.importorskip("onnx")
    work = tmp_path / "work"
    work.mkdir()
    (work / "presets").symlink_to(ROOT / "presets")
    (tmp_path / "shared").symlink_to(SHARED)
    monkeypatch.chdir(work)
    for command in COMMANDS:
        args = shlex.split(command)
        code, out, err = run(args, capsys)
        assert code == 0, (command, err)
        if args[0] == "convert":
            out_path = Path(args[args.index("-o") + 1])
            assert out_path.is_file() and f"wrote {out_path}" in out, out
        elif args[0] == "info":
            assert "format" in out and "48 observations -> 12 actions" in out, out
        else:
            assert "fwd m/s" in out and " 0%" in out, out  # it walks: nothing fell
    assert sorted(p.name for p in work.iterdir()) == sorted(
        ["presets", "anymal_physx.pt", "anymal_mjwarp.onnx", "mjw_anymal_described.pt"]
    )
