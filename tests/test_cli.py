import ast
import json
import os
import re
import subprocess
import sys

import pytest

from tests.conftest import shared_asset
from tests.usdgen import ArticulationSpec, BodySpec, JointSpec, StageSpec, write_stage
from transfer.cli import default_asset, main

# Each subcommand and the metavar of its positional argument.
POSITIONALS = {  # subcommand -> its positional argument (None: flags only)
    "inspect": "ASSET",
    "replay": "CHECKPOINT",
    "verify": "CHECKPOINT",
    "info": "CHECKPOINT",
    "convert": "CHECKPOINT",
    "export": "CHECKPOINT",
    "train": None,
    "validate": "ASSET",
    "task": "ASSET",
    "import": "ROBOT.xml|ROBOT.urdf",
    "sweep": "SPEC.yaml",
    "diagnose": "CHECKPOINT",
    "traces": "A.parquet",
    "view": "TRACE.parquet",
}


def run(*args):
    env = {**os.environ, "COLUMNS": "200"}  # one usage line, however narrow the terminal
    return subprocess.run(
        [sys.executable, "-m", "transfer.cli", *args], capture_output=True, text=True, timeout=120, env=env
    )


@pytest.fixture(scope="module")
def two_legs(tmp_path_factory):
    """A floating base with two two-link legs: PhysX (breadth-first) and MuJoCo (depth-first) order it apart."""
    spec = ArticulationSpec(
        "robot",
        [BodySpec("base"), BodySpec("a1"), BodySpec("a2"), BodySpec("b1"), BodySpec("b2")],
        [
            JointSpec("hip_a", "revolute", 0, 1),
            JointSpec("hip_b", "revolute", 0, 3),
            JointSpec("knee_a", "revolute", 1, 2),
            JointSpec("knee_b", "revolute", 3, 4),
        ],
        root_on="body",
    )
    pytest.importorskip("pxr")
    return write_stage(StageSpec([spec]), tmp_path_factory.mktemp("cli") / "two_legs.usda")


def test_help_lists_subcommands_and_exits_zero():
    result = run("--help")
    assert result.returncode == 0
    listed = re.search(r"usage: transfer .*\{([\w,]+)\}", result.stdout)
    assert listed, result.stdout
    subcommands = listed.group(1).split(",")
    assert sorted(subcommands) == sorted(POSITIONALS)
    for sub in subcommands:  # each one answers its own --help and names its own positional argument
        help_ = run(sub, "--help")
        assert help_.returncode == 0, (sub, help_.stderr[-2000:])
        usage = help_.stdout.splitlines()[0]
        assert usage.startswith(f"usage: transfer {sub} ") and (POSITIONALS[sub] or "") in usage, usage
        others = set(POSITIONALS.values()) - {POSITIONALS[sub], None}
        assert not any(other in usage for other in others), usage


def test_a_named_command_imports_its_own_module_alone():
    """``transfer info ...`` imports transfer.cli.info, not the other commands' modules (issue 47: ~0.1 s of every
    command's start-up); ``transfer --help`` and an unknown name import them all, to list them."""
    probe = (
        "import sys\nfrom transfer.cli import main\ntry:\n    main(sys.argv[1:])\nexcept SystemExit:\n    pass\n"
        "print(sorted(m for m in sys.modules if m.startswith('transfer.cli.') and not m.startswith('transfer.cli._')))"
    )

    def loaded(*args):
        out = subprocess.run([sys.executable, "-c", probe, *args], capture_output=True, text=True, timeout=120)
        return ast.literal_eval(out.stdout.strip().splitlines()[-1])  # the list the probe printed

    assert loaded("info", "--help") == ["transfer.cli.info"]
    assert loaded("replay", "--help") == ["transfer.cli.replay"]
    every = {f"transfer.cli.{name}" for name in ("asset_import", "info", "replay", "sweep", "view")}
    assert every <= set(loaded("--help")) and every <= set(loaded("fly"))


def test_missing_subcommand_is_a_usage_error():
    assert run().returncode == 2


def test_unknown_subcommand_is_a_usage_error():
    assert run("fly").returncode == 2


def test_missing_file_names_the_file(capsys):
    assert main(["inspect", "/no/such/robot.usda"]) == 2
    assert "/no/such/robot.usda" in capsys.readouterr().err


def test_inspect_default_asset_prints_both_orders(capsys):
    assert default_asset().is_file()
    assert main(["inspect"]) == 0
    out = capsys.readouterr().out
    assert "physx" in out and "mjwarp" in out and "/ant" in out


def test_inspect_json_schema(capsys):
    path = shared_asset("anybotics_anymal_c/usd/anymal_c.usda")
    assert main(["inspect", str(path), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    (art,) = report["articulations"]
    assert art["root"] == "/anymal/base" and art["fixed_base"] is False
    assert art["physx"]["joints"][:4] == ["LF_HAA", "LH_HAA", "RF_HAA", "RH_HAA"]
    assert art["mjwarp"]["joints"][:3] == ["LF_HAA", "LF_HFE", "LF_KFE"]
    assert art["robot_schema"] is None


def test_inspect_unknown_root_lists_the_roots(capsys):
    path = shared_asset("anybotics_anymal_c/usd/anymal_c.usda")
    assert main(["inspect", str(path), "--root", "/nope"]) == 2
    assert "/anymal/base" in capsys.readouterr().err


def test_json_flag_prints_the_tables_as_json(two_legs, capsys):
    assert main(["inspect", str(two_legs)]) == 0
    tables = capsys.readouterr().out
    with pytest.raises(json.JSONDecodeError):
        json.loads(tables)
    assert main(["inspect", str(two_legs), "--json"]) == 0
    (art,) = json.loads(capsys.readouterr().out)["articulations"]
    assert art["root"] == "/robot/base" and art["fixed_base"] is False and "truth" not in art
    assert art["physx"]["joints"] == ["hip_a", "hip_b", "knee_a", "knee_b"]
    assert art["mjwarp"]["joints"] == ["hip_a", "knee_a", "hip_b", "knee_b"]
    # the same orders as the tables' physx and mjwarp columns (rows "#  physx  mjwarp ...")
    joint_table = tables.split("joints:")[1].split("bodies:")[0].splitlines()
    rows = [line.split()[1:3] for line in joint_table if line.split()[:1] and line.split()[0].isdigit()]
    assert rows == [list(pair) for pair in zip(art["physx"]["joints"], art["mjwarp"]["joints"], strict=True)]


def test_truth_flag_reports_a_verdict_per_engine(two_legs):
    """--truth asks both engines and says, per engine, whether the emulated order is the one it answers."""
    pytest.importorskip("ovphysx")
    pytest.importorskip("newton")
    result = run("inspect", str(two_legs), "--json", "--truth")
    assert result.returncode == 0, result.stderr[-2000:]
    (art,) = json.loads(result.stdout)["articulations"]
    assert art["truth"]["match"] == {"physx": True, "mjwarp": True}
    for convention in ("physx", "mjwarp"):
        assert art["truth"][convention] == art[convention]  # the engine's joints and bodies, as emulated


def test_inspect_truth_json_is_clean_and_matches(shared):
    """--truth runs both engines; their console chatter must not corrupt the JSON on stdout."""
    pytest.importorskip("ovphysx")
    pytest.importorskip("newton")
    path = shared / "assets/unitree_go2/usd/go2.usda"  # PhysX accepts it; Newton refuses (missing mesh library)
    result = run("inspect", str(path), "--json", "--truth")
    assert result.returncode == 0, result.stderr[-2000:]
    (art,) = json.loads(result.stdout)["articulations"]
    assert art["truth"]["match"] == {"physx": True, "mjwarp": True}
    assert art["truth"]["physx"]["joints"] == art["physx"]["joints"]
    assert "composition errors" in art["truth"]["mjwarp"]["error"] and "error" in art["mjwarp"]


def test_inspect_prints_a_column_with_no_entries(capsys):
    """An articulation with no movable joint lists none in a convention's column (it crashed the table once)."""
    from transfer.cli.inspect import _print_table

    _print_table("joints", [("physx", {"joints": []}), ("mjwarp", {"joints": ["hinge"]}), ("robot_schema", None)])
    out = capsys.readouterr().out
    assert "physx" in out and "hinge" in out and "(not authored)" in out
    _print_table("joints", [("physx", {"joints": []})])
    assert "#   physx" in capsys.readouterr().out
