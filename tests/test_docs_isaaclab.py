"""Every ``$ transfer ...`` command in docs/isaaclab.md runs, in order, as written.

They run in a scratch folder holding the two run folders the page names, written the way Isaac Lab writes them
(:func:`tests.test_isaaclab_runs.write_run`), beside ``../shared`` (linked to the shared checkpoints and assets).
The page's shown output is checked against what the commands print.
"""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest

from tests.conftest import SHARED
from tests.docs_commands import commands, page_text, run
from tests.test_isaaclab_runs import write_run

COMMANDS = commands("isaaclab.md")
RUNS = {
    "logs/rsl_rl/anymal_c_flat/2026-11-30_10-00-00_newton": ("newton", "mjw_anymal.pt"),
    "logs/rsl_rl/anymal_c_flat/2026-11-30_11-00-00_physx": ("physx", "physx_anymal.onnx"),
}

pytestmark = [pytest.mark.engines, pytest.mark.filterwarnings("ignore")]


def _shown(command: str) -> str:
    """The plain code block that follows the console block of ``$ transfer <command>`` on the page."""
    text = page_text("isaaclab.md")
    start = text.index(f"$ transfer {command}\n")
    after = text.index("\n```\n", start) + 5  # past the console block's closing fence
    return re.search(r"```\n(.*?)\n```", text[after:], re.DOTALL).group(1)


def test_the_page_has_the_commands():
    verbs = [c.split()[0] for c in COMMANDS]
    assert {"info", "replay", "verify", "convert"} <= set(verbs)
    assert all(any(run_dir in c for c in COMMANDS) for run_dir in RUNS)
    assert any(c.startswith("info") and "--asset" not in c for c in COMMANDS)  # the missing-asset error
    assert "](isaaclab.md)" in page_text("index.md")


def test_documented_commands_run_in_order(shared, tmp_path, monkeypatch, capsys):
    pytest.importorskip("ovphysx")
    pytest.importorskip("newton")
    pytest.importorskip("onnxruntime")
    work = tmp_path / "work"
    work.mkdir()
    (tmp_path / "shared").symlink_to(SHARED)
    for folder, (engine, export) in RUNS.items():
        write_run(work / folder, engine, exported=SHARED / "policies/anybotics_anymal_c/rl_policies" / export)
    monkeypatch.chdir(work)
    for command in COMMANDS:
        args = shlex.split(command)
        code, out, err = run(args, capsys)
        if args[0] == "info" and "--asset" not in args:
            assert code == 2 and "--asset is needed" in err and "anymal_c.usd" in err, err
            continue
        assert code == 0, (command, err)
        if args[0] == "info" and "--json" in args:
            info = json.loads(out)
            assert info["metadata"]["trained_on"] == "physx" and info["run"]["order"] == "physx"
            assert info["metadata"]["joint_names"][:4] == ["LF_HAA", "LH_HAA", "RF_HAA", "RH_HAA"]
        elif args[0] == "info":
            shown = _shown(command)
            for key in (
                "run",
                "format",
                "sizes",
                "joint order",
                "trained on",
                "task",
                "observation",
                "action",
                "defaults",
                "stiffness",
                "damping",
                "armature",
                "sim",
                "command",
            ):
                assert _line(out, key) == _line(shown, key), key
        elif args[0] == "verify":
            assert out.splitlines()[0] == _shown(command).splitlines()[0]
            assert "1. sizes and names: ok" in out and out.rstrip().endswith("ok"), out
        elif args[0] == "convert":
            assert Path(args[args.index("-o") + 1]).is_file()
            assert out.splitlines()[0] == _shown(command).splitlines()[0], out
        else:
            walk = out.split("control and gait")[0]  # the first table; the second holds the control metrics
            rows = [line for line in walk.splitlines() if line.startswith(("native", "reordered"))]
            assert rows and all(" 0% " in row for row in rows), out
    assert (work / "anymal_physx.pt").is_file()


def _line(text: str, key: str) -> str:
    return next(line.strip() for line in text.splitlines() if line.strip().startswith(key + " "))
