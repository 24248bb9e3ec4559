"""``transfer verify`` on the real engines with the real checkpoints: the checklist passes where the transfer is
right, fails naming joints where the config is another robot's, and check 2 fails when one backend is fed another
order (the control that proves the check can fail). Few random states and short traces keep it quick."""

from __future__ import annotations

import dataclasses
import json

import pytest

from transfer.cli import main
from transfer.runs.inputs import resolve_inputs
from transfer.runs.verify import ACTION_TOLERANCE, TOLERANCES, check_sizes, verify

pytestmark = [pytest.mark.engines, pytest.mark.filterwarnings("ignore")]

TASK = "presets/tasks/anymal_c_flat_velocity.yaml"
JOINT_TERMS = ("joint_pos_rel", "joint_vel_rel", "last_action")


@pytest.fixture(scope="module")
def paths(shared):
    anymal = shared / "policies/anybotics_anymal_c/rl_policies"
    go2 = shared / "policies/unitree_go2/rl_policies"
    return {
        "asset": shared / "assets/anybotics_anymal_c/usd/anymal_c.usda",
        "mjw_pt": anymal / "mjw_anymal.pt",
        "physx_onnx": anymal / "physx_anymal.onnx",
        "yaml": anymal / "anymal.yaml",
        "go2_pt": go2 / "mjw_go2.pt",
        "go2_yaml": go2 / "go2.yaml",
    }


@pytest.fixture(scope="module")
def engines():
    pytest.importorskip("ovphysx")
    pytest.importorskip("newton")
    pytest.importorskip("onnxruntime")


@pytest.fixture(scope="module")
def mjw_report(paths, engines, tmp_path_factory):
    """The Newton-trained TorchScript checkpoint on its own robot, with a 1 s trace and its plot."""
    png = tmp_path_factory.mktemp("verify") / "trace.png"
    report = verify(paths["mjw_pt"], source="mjwarp", config=TASK, asset=paths["asset"], samples=4, trace=1.0, plot=png)
    return report, png


def test_own_robot_passes(mjw_report):
    report, _ = mjw_report
    assert report.ok, report.verdict
    assert report.sizes.ok and report.sizes.input_size == 48 and report.sizes.output_size == 12
    assert [t["name"] for t in report.sizes.terms][-1] == "last_action"
    assert (report.sizes.terms[4]["start"], report.sizes.terms[4]["stop"]) == (12, 24)  # joint_pos_rel
    assert report.sizes.order[:3] == ["LF_HAA", "LF_HFE", "LF_KFE"]  # the mjwarp order, resolved on the asset
    assert [t.term for t in report.terms] == [t["name"] for t in report.sizes.terms] + ["action"]
    for t in report.terms:
        assert t.ok and t.tolerance == (ACTION_TOLERANCE if t.term == "action" else TOLERANCES[t.term])
        # float32 round trips: measured ~5e-7, far inside every tolerance
        assert t.across.difference < 1e-5 and all(v.difference < 1e-5 for v in t.expected.values())
    largest = report.largest()
    assert largest["observation"]["difference"] < 1e-5 and largest["action"]["entry"] in report.sizes.order
    assert report.orders["newton"]["public"] == report.orders["newton"]["backend"] == report.sizes.order


def test_trace_reports_divergence_and_says_what_it_is(mjw_report):
    report, png = mjw_report
    tr = report.trace
    assert tr is not None and tr.seconds == pytest.approx(1.0) and len(tr.time) == 51
    assert set(tr.divergence) == set(report.sizes.order) and all(len(v) == 51 for v in tr.divergence.values())
    assert max(tr.divergence[tr.joint]) == tr.max_divergence and tr.divergence[tr.joint][0] < 1e-4  # same start
    assert tr.fell == {"physx": None, "newton": None}
    if tr.diverges:  # measured: they drift apart within 0.2 s (landing from the spawn height)
        assert "dynamics difference" in report.verdict and "not an ordering error" in report.verdict
        assert tr.first_over is not None and tr.max_divergence > tr.threshold
    else:
        assert "stay within" in report.verdict
    assert png.stat().st_size > 10_000 and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert json.loads(json.dumps(report.to_dict(series=True)))["trace"]["divergence"].keys() == tr.divergence.keys()


def test_onnx_checkpoint_cli_json(paths, engines, capsys):
    """The PhysX-trained ONNX checkpoint, Newton's own YAML as the config: exit 0, stdout holds only the JSON."""
    args = [
        "verify",
        str(paths["physx_onnx"]),
        "--source",
        "physx",
        "--config",
        str(paths["yaml"]),
        "--asset",
        str(paths["asset"]),
        "--samples",
        "3",
        "--json",
    ]
    assert main(args) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["ok"] is True and report["source"] == "physx"
    assert report["sizes"]["order"][:2] == ["LF_HAA", "LH_HAA"]
    for key in ("observation", "action"):
        largest = report["largest"][key]
        assert largest["difference"] < 1e-5 and largest["term"] and largest["entry"] and "tolerance" in largest
    assert report["trace"] is None


def test_go2_on_anymal_fails_naming_joints(paths, capsys):
    """No engine is opened: the config's joints are not ANYmal's. Exit 1 whether or not --source is given."""
    for source in ([], ["--source", "mjwarp"]):
        args = [
            "verify",
            str(paths["go2_pt"]),
            *source,
            "--config",
            str(paths["go2_yaml"]),
            "--asset",
            str(paths["asset"]),
        ]
        assert main(args) == 1
        out = capsys.readouterr().out
        assert "sizes and names: FAILED" in out and "FL_hip_joint" in out and "RR_calf_joint" in out
        assert out.rstrip().endswith("FAILED")
    assert main([*args, "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["ok"] is False and report["terms"] == []
    assert len(report["sizes"]["missing_joints"]) == 12 and "FL_hip_joint" in report["sizes"]["missing_joints"]
    assert "Check 1 failed" in report["verdict"] and "FL_hip_joint" in report["verdict"]


def test_a_wrong_order_fails_check_2(paths, engines):
    """Feed Newton its own (mjwarp) order while PhysX gets the checkpoint's (physx): the by-name comparison catches
    it in every joint term and in the actions, and names Newton as the backend off the named state."""
    report = verify(
        paths["physx_onnx"],
        source="physx",
        config=TASK,
        asset=paths["asset"],
        samples=3,
        backend_orders={"newton": None},
    )
    assert not report.ok and report.sizes.ok
    failed = {t.term for t in report.terms if not t.ok}
    assert failed == {*JOINT_TERMS, "action"}, failed
    for t in report.terms:
        if t.term in failed:
            assert t.expected["physx"].difference < 1e-5 < 1e-2 < t.expected["newton"].difference
    assert report.largest()["action"]["difference"] > 0.1
    assert "Check 2 failed" in report.verdict
    assert (
        "newton feeds the policy another joint order than the checkpoint's: position 1 holds LF_HFE where the "
        "checkpoint reads LH_HAA" in report.verdict
    )


def test_check_1_sizes_and_config_problems(paths):
    """Without an engine: an observation that is too short, a joint the asset lacks, an order that contradicts it."""
    inputs = resolve_inputs(paths["mjw_pt"], source="mjwarp", config=TASK, asset=paths["asset"])
    short = dataclasses.replace(inputs.task, observation=inputs.task.observation[:-1])
    sizes = check_sizes(dataclasses.replace(inputs, task=short))
    assert not sizes.ok and sizes.observation_size == 36 and not sizes.missing_joints
    assert "reads 48 observations" in sizes.problems[0] and "builds 36" in sizes.problems[0]
    wrist = dataclasses.replace(inputs.task, stiffness={".*": 300.0, "LF_WRIST": 1.0})
    sizes = check_sizes(dataclasses.replace(inputs, task=wrist))
    assert not sizes.ok and sizes.missing_joints == ["LF_WRIST"]
    listed = list(check_sizes(inputs).order)  # the mjwarp order on the asset
    listed[0], listed[1] = listed[1], listed[0]
    swapped = dataclasses.replace(inputs.task, joint_names=tuple(listed))
    sizes = check_sizes(dataclasses.replace(inputs, task=swapped))
    assert not sizes.ok and "another order" in sizes.problems[0]


def test_bad_input_exits_2(paths, capsys):
    common = ["--config", TASK, "--asset", str(paths["asset"])]
    assert main(["verify", "/no/such/policy.pt", "--source", "physx", *common]) == 2
    assert "not found" in capsys.readouterr().err
    # the order is the only thing missing (names fit): a clear error, not a verdict
    assert main(["verify", str(paths["mjw_pt"]), *common]) == 2
    assert "--source is needed" in capsys.readouterr().err
    assert main(["verify", str(paths["mjw_pt"]), "--source", "mjwarp", *common, "--plot", "x.png"]) == 2
    assert "give --trace SECONDS" in capsys.readouterr().err
    assert (
        main(["verify", str(paths["mjw_pt"]), "--source", "mjwarp", "--config", TASK, "--asset", "/no/robot.usda"]) == 2
    )
    assert "not found" in capsys.readouterr().err
