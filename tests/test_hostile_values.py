"""Values no robot can have, refused before any engine starts (issue 48's third battery): each in one line naming
the field (and the joint) and what to give. Gains, default poses, velocity commands and their ranges, action
scales and clips, and lists longer than any robot, all checked where the task is built."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from transfer.task import ActionTerm, load_task
from transfer.task._checks import TaskError
from transfer.task.model import MAX_COMMAND, PHYSICAL_BOUNDS

ROOT = Path(__file__).resolve().parents[1]
TASK = ROOT / "presets/tasks/quadruped_flat_velocity.yaml"


@pytest.fixture(scope="module")
def task():
    return load_task(TASK)


@pytest.mark.parametrize("field", sorted(PHYSICAL_BOUNDS))
@given(excess=st.floats(1.0001, 1e30))
def test_a_per_joint_value_beyond_what_a_robot_takes_names_the_field_and_joint(task, field, excess):
    bound = PHYSICAL_BOUNDS[field][0]
    sign = -1.0 if field == "default_joint_pos" and excess > 1e10 else 1.0
    values = {**getattr(task, field), "LF_KFE": sign * bound * excess}
    with pytest.raises(TaskError, match=rf"^{field}\['LF_KFE'\]: .* is beyond what a robot's joint takes \(at most"):
        dataclasses.replace(task, **{field: values})
    assert dataclasses.replace(task, **{field: {**getattr(task, field), "LF_KFE": bound}})  # the bound itself holds


@pytest.mark.parametrize("value", [1e9, -200.0, 100.5])
def test_a_velocity_command_faster_than_any_robot_is_refused(task, value):
    with pytest.raises(TaskError, match=r"^command\[0\]: .* is faster than any robot moves \(at most 100 m/s"):
        dataclasses.replace(task, command=(value, 0.0, 0.0))


@pytest.mark.parametrize(
    ("ranges", "match"),
    [
        ({"lin_vel_x": [0.0, 1e9]}, r"commands ranges.lin_vel_x: \(0, 1e\+09\) is no velocity range"),
        ({"lin_vel_x": [0.0, math.nan]}, r"commands ranges.lin_vel_x: \(0, nan\) is no velocity range"),
        ({"ang_vel_z": [1.0, -1.0]}, r"commands ranges.ang_vel_z: \(1, -1\) is no velocity range"),
        ({"lin_vel_y": ["a", 1.0]}, r"commands ranges.lin_vel_y: expected two numbers"),
    ],
)
def test_a_command_range_no_robot_trains_on_is_refused(ranges, match):
    from transfer.task.isaaclab.mapping import fixed_command

    with pytest.raises(ValueError, match=match):
        fixed_command(ranges)
    assert fixed_command({"lin_vel_x": [-1.0, MAX_COMMAND]}) == (MAX_COMMAND, 0.0, 0.0)


@pytest.mark.parametrize(
    ("action", "match"),
    [
        (dict(scale=-0.5), r"action.scale: -0.5 is negative: every action would drive its joint the other way"),
        (dict(scale={".*": 0.25, "LF_KFE": -0.25}), r"action.scale: .* is negative"),
        (dict(clip=[0.0, 0.0]), r"action.clip: \[0, 0\] holds every joint's target at 0: the policy would move"),
        (dict(clip={".*_HAA": [0.1, 0.1], ".*_KFE": [0, 0]}), r"action.clip: .* holds every target it names at one"),
    ],
)
def test_an_action_that_cannot_move_the_robot_or_moves_it_backwards_is_refused(action, match):
    with pytest.raises(TaskError, match=match):
        ActionTerm(**action)
    ActionTerm(clip={".*_HAA": [0.1, 0.1], ".*_KFE": [-1, 1]})  # one joint held, another free: allowed


def test_an_mjlab_negative_action_scale_is_refused_naming_the_file(tmp_path):
    pytest.importorskip("onnx")
    from tests.test_mjlab import ANYMAL_DEFAULTS, ANYMAL_MJW, mjlab_metadata
    from transfer.formats.mjlab import mjlab_task, write_props

    props = write_props(mjlab_metadata(ANYMAL_MJW, ANYMAL_DEFAULTS, action_scale=-0.5))
    with pytest.raises(ValueError, match=r"policy.onnx: action_scale: .*negative"):
        mjlab_task(props, source="policy.onnx")


def test_a_list_longer_than_any_robot_is_refused_before_each_entry_is_read():
    from transfer.task.deploy import _floats

    with pytest.raises(TaskError, match=r"^stiffness: 1000000 entries, more than any robot has joints"):
        _floats([1.0] * 1_000_000, "stiffness")


def test_a_deploy_yaml_default_pose_of_a_million_radians_is_refused_before_the_engine(capsys, shared, tmp_path):
    """The unitree_rl_lab deploy.yaml of the shared G1 dance with one default joint position of 1e6 rad (PhysX died of
    it natively, SIGBUS): refused naming the field and joint, before any engine starts."""
    from transfer.cli import main

    root = shared / "community/unitree_rl_mjlab"
    run = root / "deploy/robots/g1/config/policy/mimic/dance1_subject2"
    text = (run / "params/deploy.yaml").read_text()
    (tmp_path / "deploy.yaml").write_text(
        text.replace("default_joint_pos: [-0.1,0,0,0.3,", "default_joint_pos: [1e6,0,0,0.3,")
    )
    from tests.test_motion import dance

    args = dance(shared, "replay", tmp_path / "deploy.yaml")
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "default_joint_pos['left_hip_pitch_joint']: 1e+06 is beyond what a robot's joint takes" in err
    assert err.count("\n") == 1 and "Warp" not in err  # one line, no engine's start-up output


def test_a_delayed_pd_actuator_delayed_past_the_run_is_refused_like_the_perturbation():
    """A ``delayed_pd`` group whose shortest delay outlasts the run (100,000 physics steps in a 1 s run): no action
    would reach its joints; refused before any engine starts, as ``--perturb action_delay`` of the same length is."""
    from transfer.runs.inputs import ReplayError
    from transfer.runs.replay import replay

    group = {"name": "legs", "model": "delayed_pd", "joints": [".*"], "min_delay": 100_000, "max_delay": 100_000}
    with pytest.raises(ReplayError, match=r"^actuators.legs: min_delay 100000 physics steps, but the run has 200: no "):
        replay(
            ROOT / "checkpoints/quadruped_flat_physx/exported/policy.pt",
            "mujoco",
            asset="transfer:quadruped.xml",
            seconds=1.0,
            settings={"actuators": [group]},
            progress=False,
        )
