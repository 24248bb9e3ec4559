"""mjlab's tracking exports (``mjlab/tasks/tracking/rl/exporter.py``): an ONNX whose inputs are ``obs`` and
``time_step`` and whose outputs are the actions and the motion it was trained on at that step (``joint_pos``,
``joint_vel``, ``body_pos_w``, ``body_quat_w`` w first, ``body_lin_vel_w``, ``body_ang_vel_w``), with mjlab's
metadata (``joint_names``, ..., ``anchor_body_name``, ``body_names``). The clip is read from the file itself."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from transfer._rotations import quat_from_rpy

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")


def tracking_onnx(
    path: Path,
    n_obs: int,
    joint_pos: np.ndarray,
    body_pos: np.ndarray,
    body_quat_wxyz: np.ndarray,
    metadata: dict | None = None,
    weight: float = 0.0,
) -> Path:
    """An ONNX in the layout of mjlab's ``_OnnxMotionModel.export`` (opset 12: Clip of integers): ``actions = obs @ W``, and the motion
    tables gathered at ``clamp(time_step, max=T-1)``."""
    from onnx import TensorProto, helper, numpy_helper

    t, j = joint_pos.shape
    b = body_pos.shape[1]
    tables = {
        "joint_pos": joint_pos,
        "joint_vel": np.gradient(joint_pos, 0.02, axis=0),
        "body_pos_w": body_pos,
        "body_quat_w": body_quat_wxyz,
        "body_lin_vel_w": np.zeros((t, b, 3)),
        "body_ang_vel_w": np.zeros((t, b, 3)),
    }
    inits = [
        numpy_helper.from_array(np.full((n_obs, j), weight, np.float32), "W"),
        numpy_helper.from_array(np.array(t - 1, np.int64), "last"),
        numpy_helper.from_array(np.array(0, np.int64), "zero"),
    ]
    inits += [numpy_helper.from_array(v.astype(np.float32), f"{k}_table") for k, v in tables.items()]
    nodes = [
        helper.make_node("MatMul", ["obs", "W"], ["actions"]),
        helper.make_node("Cast", ["time_step"], ["ts_int"], to=TensorProto.INT64),
        helper.make_node("Squeeze", ["ts_int"], ["ts"], axes=[1]),
        helper.make_node("Clip", ["ts", "zero", "last"], ["idx"]),
    ]
    nodes += [helper.make_node("Gather", [f"{k}_table", "idx"], [k], axis=0) for k in tables]
    outputs = [helper.make_tensor_value_info("actions", TensorProto.FLOAT, [1, j])]
    outputs += [helper.make_tensor_value_info(k, TensorProto.FLOAT, [1, *v.shape[1:]]) for k, v in tables.items()]
    graph = helper.make_graph(
        nodes,
        "motion",
        [
            helper.make_tensor_value_info("obs", TensorProto.FLOAT, [1, n_obs]),
            helper.make_tensor_value_info("time_step", TensorProto.FLOAT, [1, 1]),
        ],
        outputs,
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 12)])
    model.ir_version = 7
    for key, value in (metadata or {}).items():
        entry = model.metadata_props.add()
        entry.key, entry.value = key, value
    onnx.save(model, str(path))
    return path


def _motion(frames: int = 60):
    t = np.arange(frames) * 0.02
    joints = np.stack([0.3 * np.sin(t), -0.2 * t, 0.1 + 0 * t], axis=1)
    pos = np.stack(
        [np.stack([0.05 * t, 0 * t, 0.8 + 0 * t], axis=1), np.stack([0.05 * t, 0 * t, 1.0 + 0 * t], axis=1)], axis=1
    )
    quat = quat_from_rpy(0 * t, 0 * t, 0.4 * t)
    wxyz = np.concatenate([quat[:, 3:], quat[:, :3]], axis=1)
    return joints, pos, np.stack([wxyz, wxyz], axis=1)


def test_the_clip_is_read_from_the_export_itself(tmp_path):
    from transfer.formats.onnx import motion_from_onnx

    joints, pos, quat = _motion(60)
    path = tracking_onnx(tmp_path / "policy.onnx", 10, joints, pos, quat)
    motion = motion_from_onnx(path, ("a", "b", "c"), fps=50.0)
    assert motion.frames == 60 and motion.fps == 50.0 and motion.joint_names == ("a", "b", "c")
    np.testing.assert_allclose(motion.joint_pos, joints, atol=1e-6)
    np.testing.assert_allclose(motion.root_pos, pos[:, 0], atol=1e-6)
    np.testing.assert_allclose(
        np.abs(np.sum(motion.root_quat * np.concatenate([quat[:, 0, 1:], quat[:, 0, :1]], 1), 1)), 1.0, atol=1e-6
    )


def test_a_tracking_export_runs_as_a_policy_whatever_its_time_step(tmp_path):
    from transfer.formats import load_policy

    joints, pos, quat = _motion(20)
    path = tracking_onnx(tmp_path / "policy.onnx", 10, joints, pos, quat, weight=0.1)
    policy = load_policy(path)
    assert (policy.input_size, policy.output_size) == (10, 3) and policy.motion_export
    np.testing.assert_allclose(policy(np.ones((4, 10), np.float32)), np.full((4, 3), 1.0), atol=1e-6)


def test_a_tracking_export_replays_with_the_motion_it_carries(tmp_path, capsys):
    """mjlab's tracking export with its metadata (``command_names: [motion]``, the layout of mjlab's tracking task)
    replays with no ``--motion``: the clip is the one in the file."""
    pytest.importorskip("mujoco")
    import json

    from tests.test_mjlab import mjlab_metadata
    from transfer.cli import main
    from transfer.formats.mjlab import write_props
    from transfer.robot.assets import locate_asset
    from transfer.robot.assets.mjcf import mjcf_joint_names

    xml = locate_asset("transfer:quadruped.xml")
    names = list(mjcf_joint_names(xml))
    t = np.arange(75) * 0.02
    stance = np.tile([0.0, 0.6, -1.2], 4)
    joints = stance + 0.1 * np.sin(t)[:, None]
    quat = quat_from_rpy(0 * t, 0 * t, 0.2 * t)
    wxyz = np.concatenate([quat[:, 3:], quat[:, :3]], axis=1)[:, None]
    pos = np.stack([0 * t, 0 * t, 0.45 + 0 * t], axis=1)[:, None]
    layout = ["command", "motion_anchor_ori_b", "base_ang_vel", "joint_pos", "joint_vel", "actions"]
    meta = mjlab_metadata(
        names, list(stance), terms=layout, command_names=["motion"], anchor_body_name="base", body_names=["base"]
    )
    n_obs = 24 + 6 + 3 + 36
    path = tracking_onnx(tmp_path / "policy.onnx", n_obs, joints, pos, wxyz, write_props(meta))
    args = ["replay", str(path), "--asset", str(xml), "--target", "mujoco", "--seconds", "2", "--json"]
    assert main(args) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["seconds"] == pytest.approx(1.48, abs=0.03)  # the clip's 75 frames at 50 Hz: 74 policy steps
    assert out["tracking"]["joint_pos_error"] < 0.2 and out["tracking"]["completed"] == 1.0
    assert 0.0 < out["tracking"]["body_pos_error"] < 0.1  # the export's one tracked body, the base
    from transfer.formats.onnx import motion_from_onnx

    clip = motion_from_onnx(path, names, 50.0)
    assert clip.anchor == "base" and clip.bodies == ("base",)  # the export's anchor_body_name and body_names
