import json
import subprocess
import sys

import pytest

from tests.conftest import shared_asset
from transfer.cli import default_asset, main


def run(*args):
    return subprocess.run([sys.executable, "-m", "transfer.cli", *args], capture_output=True, text=True, timeout=120)


def test_help_lists_subcommands_and_exits_zero():
    result = run("--help")
    assert result.returncode == 0
    assert "inspect" in result.stdout


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


@pytest.mark.parametrize("flag", ["--json", "--truth"])
def test_flags_are_documented(flag):
    assert flag in run("inspect", "--help").stdout


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
