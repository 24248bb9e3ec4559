"""Reference motions for motion-tracking policies (issue 43): the clips as their projects write them, the policy's
clock, the motion terms, and the shared G1 dance replayed across engines.

- CSV as unitree_rl_lab's and mjlab's retargets ship (no header; base position, base quaternion xyzw, joint positions
  in the robot file's order; the rate not recorded);
- NPZ as mjlab's ``csv_to_npz.py`` writes it (``fps``, ``joint_pos``, ``joint_vel``, ``body_pos_w``, ``body_quat_w``
  w-first, ``body_lin_vel_w``, ``body_ang_vel_w``; body 0 the root).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from transfer._rotations import quat_from_rpy, quat_mul, rotation_matrices
from transfer.task.motion import Motion, MotionError, read_motion

JOINTS = ("a", "b", "c")


def write_csv(path: Path, root_pos, root_quat, joint_pos) -> Path:
    """A clip as the retargeting scripts write it: ``np.savetxt(..., delimiter=",")``, no header."""
    np.savetxt(path, np.concatenate([root_pos, root_quat, joint_pos], axis=1), delimiter=",", fmt="%.6f")
    return path


def write_npz(path: Path, fps: float, root_pos, root_quat, joint_pos, bodies: int = 2) -> Path:
    """A clip as mjlab's ``csv_to_npz.py`` saves it (``np.savez``; quaternions w first)."""
    t = len(joint_pos)
    wxyz = np.concatenate([root_quat[:, 3:], root_quat[:, :3]], axis=1)
    body_pos = np.repeat(np.asarray(root_pos)[:, None], bodies, axis=1)
    body_quat = np.repeat(wxyz[:, None], bodies, axis=1)
    np.savez(
        path,
        fps=np.array([fps]),
        joint_pos=joint_pos,
        joint_vel=np.gradient(joint_pos, 1 / fps, axis=0),
        body_pos_w=body_pos,
        body_quat_w=body_quat,
        body_lin_vel_w=np.zeros((t, bodies, 3)),
        body_ang_vel_w=np.zeros((t, bodies, 3)),
    )
    return path


def _clip(frames: int, fps: float = 30.0, turn: float = 0.5) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A base rising and turning about z at ``turn`` rad/s, three joints moving linearly."""
    t = np.arange(frames) / fps
    pos = np.stack([0.1 * t, 0 * t, 0.8 + 0.01 * t], axis=1)
    quat = quat_from_rpy(0 * t, 0 * t, turn * t)
    joints = np.stack([0.5 * t, -0.2 * t, 0.1 + 0 * t], axis=1)
    return pos, quat, joints


def test_csv_and_npz_read_as_their_projects_write_them(tmp_path):
    pos, quat, joints = _clip(40)
    csv = read_motion(write_csv(tmp_path / "clip.csv", pos, quat, joints), JOINTS, fps=30)
    npz = read_motion(write_npz(tmp_path / "clip.npz", 30.0, pos, quat, joints), JOINTS)
    for m in (csv, npz):
        assert m.fps == 30 and m.frames == 40 and m.joint_names == JOINTS
        np.testing.assert_allclose(m.root_pos, pos, atol=1e-6)
        np.testing.assert_allclose(np.abs(np.sum(m.root_quat * quat, axis=1)), 1.0, atol=1e-6)  # xyzw, both
        np.testing.assert_allclose(m.joint_vel[5], [0.5, -0.2, 0.0], atol=1e-4)
    assert npz.duration == pytest.approx(39 / 30)


@settings(max_examples=60, deadline=None)
@given(
    fps=st.sampled_from([25.0, 30.0, 50.0, 60.0, 120.0]),
    dt=st.sampled_from([0.02, 0.01, 1 / 30]),
    frames=st.integers(3, 90),
    turn=st.floats(-3.0, 3.0),
)
def test_resampling_interpolates_positions_linearly_and_the_base_by_slerp(fps, dt, frames, turn):
    pos, quat, joints = _clip(frames, fps, turn)
    motion = Motion(fps, JOINTS, pos, quat, joints)
    if motion.duration < dt:
        with pytest.raises(MotionError, match="less than one policy step"):
            motion.resampled(dt)
        return
    out = motion.resampled(dt)
    t = np.arange(out.frames) * dt
    assert out.fps == pytest.approx(1 / dt) and t[-1] <= motion.duration + 1e-9 < t[-1] + dt
    np.testing.assert_allclose(out.joint_pos, np.stack([0.5 * t, -0.2 * t, 0.1 + 0 * t], axis=1), atol=1e-9)
    np.testing.assert_allclose(out.root_pos[:, 0], 0.1 * t, atol=1e-9)
    # a constant turn rate: slerp between frames gives the yaw at each time exactly
    expected = quat_from_rpy(0 * t, 0 * t, turn * t)
    np.testing.assert_allclose(np.abs(np.sum(out.root_quat * expected, axis=1)), 1.0, atol=1e-9)
    if out.frames > 2:
        np.testing.assert_allclose(out.joint_vel[1:-1], np.tile([0.5, -0.2, 0.0], (out.frames - 2, 1)), atol=1e-7)


@settings(max_examples=40, deadline=None)
@given(frames=st.integers(2, 30), seed=st.integers(0, 10_000))
def test_resampling_at_the_clips_own_rate_changes_nothing(frames, seed):
    rng = np.random.default_rng(seed)
    quat = rng.normal(size=(frames, 4))
    quat /= np.linalg.norm(quat, axis=1, keepdims=True)
    motion = Motion(50.0, JOINTS, rng.normal(size=(frames, 3)), quat, rng.normal(size=(frames, 3)))
    out = motion.resampled(0.02)
    assert out.frames == frames
    np.testing.assert_allclose(out.joint_pos, motion.joint_pos, atol=1e-9)
    np.testing.assert_allclose(np.abs(np.sum(out.root_quat * quat, axis=1)), 1.0, atol=1e-9)


@settings(max_examples=60, deadline=None)
@given(a=st.tuples(*[st.floats(-3, 3)] * 3), b=st.tuples(*[st.floats(-3, 3)] * 3), steps=st.integers(0, 20))
def test_the_anchor_term_is_the_reference_in_the_robots_frame(a, b, steps):
    """``motion_anchor_ori_b``: ``R(q_robot^-1 q_ref)``'s first two columns row by row; the identity when the robot's
    anchor is the reference's, and the relative rotation recovered from the six numbers."""
    from transfer.env.tracking import MotionTracking

    robot, ref = quat_from_rpy(*np.array(a)), quat_from_rpy(*np.array(b))
    tracking = MotionTracking.__new__(MotionTracking)
    tracking.frames, tracking.anchor_quat = 30, np.tile(ref, (30, 1))
    six = tracking.anchor_ori_b(np.array([steps]), robot[None])[0]
    relative = rotation_matrices(quat_mul(np.array([-robot[0], -robot[1], -robot[2], robot[3]]), ref))
    np.testing.assert_allclose(six, relative[:, :2].reshape(6), atol=1e-6)
    same = tracking.anchor_ori_b(np.array([steps]), ref[None])[0]
    np.testing.assert_allclose(same, [1, 0, 0, 1, 0, 0], atol=1e-6)
    assert tracking.frame(np.array([steps]))[0] == min(steps + 1, 29)  # mjlab: observation k reads frame k + 1


@settings(max_examples=60, deadline=None)
@given(
    shift=st.tuples(st.floats(-5, 5), st.floats(-5, 5)),
    heading=st.floats(-3.1, 3.1),
    tilt=st.floats(-0.3, 0.3),
    push=st.floats(0.01, 0.5),
)
def test_the_body_error_ignores_a_drift_in_x_y_and_yaw_and_sees_a_body_out_of_place(shift, heading, tilt, push):
    """``body_pos_error`` (mjlab's ``body_pos_relative_w``): a robot posed exactly as the reference but moved in x, y
    and turned about z errs 0; one of its two tracked bodies moved by ``push`` errs ``push / 2``."""
    from transfer._rotations import rotate
    from transfer.env.tracking import MotionTracking

    ref_anchor = quat_from_rpy(np.array(tilt), np.array(0.1), np.array(0.4))
    body_offsets = np.array([[0.0, 0.0, 0.0], [0.2, -0.1, -0.7]])  # the anchor itself and a foot
    tracking = MotionTracking.__new__(MotionTracking)
    tracking.frames, tracking.origins, tracking.anchor_index = 5, np.zeros(3), 0
    tracking.anchor_pos = np.tile([1.0, 2.0, 0.8], (5, 1))
    tracking.anchor_quat = np.tile(ref_anchor, (5, 1))
    tracking.body_pos = np.tile(tracking.anchor_pos[0] + body_offsets, (5, 1, 1))
    tracking.body_index = np.array([0, 1])
    tracking.clip = Motion(30.0, ("a",), np.zeros((5, 3)), np.tile([0, 0, 0, 1.0], (5, 1)), np.zeros((5, 1)))
    turn = quat_from_rpy(np.array(0.0), np.array(0.0), np.array(heading))
    anchor = np.array([1.0 + shift[0], 2.0 + shift[1], 0.8])
    bodies = anchor + rotate(np.tile(turn, (2, 1)), body_offsets)
    robot_quat = np.stack([quat_mul(turn, ref_anchor)] * 2)
    errors = tracking.errors(np.array([2]), np.zeros((1, 1)), bodies[None], robot_quat[None])
    assert errors["body_pos_error"][0] == pytest.approx(0.0, abs=1e-9)
    bodies[1, 2] += push
    errors = tracking.errors(np.array([2]), np.zeros((1, 1)), bodies[None], robot_quat[None])
    assert errors["body_pos_error"][0] == pytest.approx(push / 2, abs=1e-9)


@pytest.mark.parametrize(
    ("write", "fps", "match"),
    [
        (lambda p, c: write_csv(p / "x.csv", c[0], c[1], c[2][:, :2]), 30, r"9 columns, but the robot's clip has 10"),
        (
            lambda p, c: write_csv(p / "x.csv", c[0], c[1], np.where(np.arange(40)[:, None] == 7, np.nan, c[2])),
            30,
            r"frame 7 \(row 8\) holds NaN",
        ),
        (lambda p, c: write_csv(p / "x.csv", *c), None, r"a CSV clip does not record its rate: give --motion-fps"),
        (lambda p, c: write_csv(p / "x.csv", *c), 0, r"--motion-fps 0: a clip's rate is a number of frames"),
        (lambda p, c: write_npz(p / "x.npz", 50.0, *c), 30, r"records 50 fps; --motion-fps 30 contradicts it"),
        (lambda p, c: write_npz(p / "x.npz", 50.0, c[0], c[1], c[2][:, :2]), None, r"joint_pos has shape \(40, 2\)"),
        (lambda p, c: (p / "x.csv").write_text("not, numbers\n") and p / "x.csv", 30, r"not a CSV of numbers"),
    ],
    ids=["another-robot", "nan-row", "no-fps", "fps-0", "npz-fps", "npz-joints", "not-numbers"],
)
def test_a_bad_clip_is_refused_in_one_line_naming_the_file(tmp_path, write, fps, match):
    path = write(tmp_path, _clip(40))
    with pytest.raises(MotionError, match=match) as err:
        read_motion(path, JOINTS, fps)
    assert str(err.value).startswith(str(path)) and "\n" not in str(err.value)


def test_a_clip_shorter_than_one_policy_step_is_refused(tmp_path):
    path = write_csv(tmp_path / "short.csv", *_clip(1))
    with pytest.raises(MotionError, match=r"1 frame\(s\) at 30 fps last 0 s, less than one policy step \(0.02 s\)"):
        read_motion(path, JOINTS, 30).resampled(0.02)


# ---------------------------------------------------------------------------------------------------- in a run


def test_the_motion_terms_read_the_clip_frame_by_frame_in_a_run(tmp_path):
    """The project's quadruped (MuJoCo, its own MJCF) tracking a synthetic clip: every env starts in frame 0, the
    k-th observation reads frame k + 1 (mjlab's count), ``motion_command`` holds its joint positions and velocities
    in the policy's order, ``motion_anchor_ori_b`` and ``motion_anchor_pos_b`` the reference root orientation and
    position in the robot's frame, computed here from MuJoCo's own arrays."""
    pytest.importorskip("mujoco")
    from transfer.env import PolicyEnv
    from transfer.robot.assets import locate_asset
    from transfer.robot.assets.mjcf import mjcf_joint_names
    from transfer.task import ActionTerm, ObsTerm, Task

    xml = locate_asset("transfer:quadruped.xml")
    names = list(mjcf_joint_names(xml))
    frames, fps = 90, 30.0
    t = np.arange(frames) / fps
    stance = np.tile([0.0, 0.6, -1.2], 4)
    joints = stance + 0.2 * np.sin(2 * np.pi * 0.5 * t)[:, None] * np.tile([0.0, 1.0, -1.0], 4)
    pos = np.stack([0 * t, 0 * t, 0.45 + 0 * t], axis=1)
    quat = quat_from_rpy(0 * t, 0.05 * np.sin(t), 0.3 * t)
    clip = read_motion(write_csv(tmp_path / "clip.csv", pos, quat, joints), names, fps)
    terms = (
        ObsTerm("motion_command"),
        ObsTerm("motion_anchor_ori_b"),
        ObsTerm("motion_anchor_pos_b"),
        ObsTerm("joint_pos_rel"),
        ObsTerm("last_action"),
    )
    task = Task(
        "track",
        terms,
        ActionTerm(scale=0.25, use_default_offset=True),
        default_joint_pos=dict(zip(names, stance, strict=True)),
        stiffness={".*": 40.0},
        damping={".*": 1.0},
        sim_dt=0.005,
        decimation=4,
    )
    env = PolicyEnv(task, xml, "mujoco", names[::-1], num_envs=2, motion=clip)  # the policy's order: reversed
    ref = clip.resampled(0.02).in_order(names[::-1])
    rng = np.random.default_rng(0)
    try:
        m, d = env.art.backend.models[0], env.art.backend.datas[0]
        obs = env.reset()
        np.testing.assert_allclose(d.qpos[3:7], [quat[0][3], *quat[0][:3]], atol=1e-4)  # spawned in frame 0
        for k in range(12):
            f = min(k + 1, ref.frames - 1)
            n = len(names)
            np.testing.assert_allclose(obs[0, :n], ref.joint_pos[f], atol=1e-6)
            np.testing.assert_allclose(obs[0, n : 2 * n], ref.joint_vel[f], atol=1e-5)
            robot = np.concatenate([d.xquat[m.body("base").id][1:], d.xquat[m.body("base").id][:1]])
            relative = rotation_matrices(quat_mul(np.array([*-robot[:3], robot[3]]), ref.root_quat[f]))
            np.testing.assert_allclose(obs[0, 2 * n : 2 * n + 6], relative[:, :2].reshape(6), atol=1e-5)
            offset = rotation_matrices(robot).T @ (ref.root_pos[f] - d.xpos[m.body("base").id])  # MjData at origin
            np.testing.assert_allclose(obs[0, 2 * n + 6 : 2 * n + 9], offset, atol=1e-5)
            obs, _ = env.step(rng.uniform(-0.3, 0.3, (2, n)).astype(np.float32))
    finally:
        env.close()


def test_a_tracker_without_its_clip_or_with_a_body_it_lacks_is_refused(tmp_path, capsys):
    pytest.importorskip("mujoco")
    torch = pytest.importorskip("torch")
    from transfer.cli import main
    from transfer.robot.assets import locate_asset

    xml = locate_asset("transfer:quadruped.xml")
    task = Path("presets/tasks/quadruped_flat_velocity.yaml").read_text()
    task = task.replace("  - base_lin_vel\n", "  - motion_command\n  - motion_anchor_ori_b\n", 1)
    (tmp_path / "track.yaml").write_text(task.replace("asset: transfer:quadruped", f"asset: {xml}"))
    policy = tmp_path / "p.pt"
    torch.jit.script(torch.nn.Linear(2 * 12 + 6 + 3 + 3 + 3 + 36, 12)).save(str(policy))
    args = ["replay", str(policy), "--config", str(tmp_path / "track.yaml"), "--target", "mujoco", "--seconds", "1"]
    assert main(args) == 2
    assert (
        "reads a reference motion (motion_command, motion_anchor_ori_b): a motion-tracking policy; give the clip"
        in capsys.readouterr().err
    )
    clip = write_csv(tmp_path / "c.csv", *[np.tile(v, (10, 1)) for v in ([0, 0, 0.5], [0, 0, 0, 1], [0.0] * 12)])
    assert main([*args, "--motion", str(clip), "--motion-fps", "30", "--motion-anchor", "torso"]) == 2
    err = capsys.readouterr().err
    assert "--motion-anchor 'torso' is not a body of the robot; its bodies: base, " in err and err.count("\n") == 1
    assert main([*args, "--motion", str(clip), "--motion-fps", "30", "--json", "--plot", str(tmp_path / "t.png")]) == 0
    out = json.loads(capsys.readouterr().out)
    assert (tmp_path / "t.png").stat().st_size > 10_000  # three panels: speed, height, the joint error to the clip
    assert main([*args, "--motion", str(tmp_path), "--motion-fps", "30"]) == 2
    assert f"--motion {tmp_path}: is a folder; give the clip file" in capsys.readouterr().err
    demo = ["replay", "checkpoints/quadruped_flat_physx/exported/policy.pt", "--target", "mujoco", "--seconds", "1"]
    assert main([*demo, "--motion", str(clip), "--motion-fps", "30"]) == 2  # a velocity policy observes no clip
    err = capsys.readouterr().err
    assert err == (
        "error: --motion: the policy's observation reads no reference motion (no motion_command or "
        "motion_anchor_* term): it tracks no clip; drop --motion\n"
    )  # before any engine: no log above
    assert out["seconds"] == pytest.approx(9 / 30, abs=0.02) and out["tracking"]["completed"] == 1.0  # ends with it


def dance(shared: Path, command: str = "replay", config: Path | None = None) -> list[str]:
    """``transfer COMMAND`` on Unitree's mjlab-trained G1 dance as its repository ships it (the ONNX, its deploy.yaml
    or ``config``, mjlab's G1 MJCF, the clip at 30 fps), on PhysX."""
    root = shared / "community/unitree_rl_mjlab"
    run = root / "deploy/robots/g1/config/policy/mimic/dance1_subject2"
    return [
        command, str(run / "exported/policy.onnx"), "--config", str(config or run / "params/deploy.yaml"),
        "--source", "mujoco", "--asset", str(root / "mjlab/asset_zoo/robots/unitree_g1/xmls/g1.xml"),
        "--motion", str(root / "mjlab/motions/g1/dance1_subject2.csv"), "--motion-fps", "30", "--target", "physx",
    ]  # fmt: skip


def _tracker(tmp_path: Path) -> tuple[Path, Path, Path, list[str]]:
    """A tracker of the project's quadruped (MuJoCo, its own MJCF): ``(policy, task file, clip, joint names)``; the
    policy a random linear layer over the motion terms and the velocity task's others."""
    torch = pytest.importorskip("torch")
    from transfer.robot.assets import locate_asset
    from transfer.robot.assets.mjcf import mjcf_joint_names

    xml = locate_asset("transfer:quadruped.xml")
    names = list(mjcf_joint_names(xml))
    task = Path("presets/tasks/quadruped_flat_velocity.yaml").read_text()
    terms = "  - motion_command\n  - motion_anchor_ori_b\n  - motion_anchor_pos_b\n"
    config = tmp_path / "track.yaml"
    config.write_text(
        task.replace("  - base_lin_vel\n", terms, 1).replace("asset: transfer:quadruped", f"asset: {xml}")
    )
    policy = tmp_path / "p.pt"
    torch.manual_seed(0)
    torch.jit.script(torch.nn.Linear(2 * 12 + 6 + 3 + 3 + 3 + 3 + 36, 12)).save(str(policy))
    t = np.arange(60) / 30.0
    joints = np.tile([0.0, 0.6, -1.2], 4) + 0.2 * np.sin(t)[:, None]
    pos = np.stack([0.1 * t, 0 * t, 0.45 + 0 * t], axis=1)
    clip = write_csv(tmp_path / "c.csv", pos, quat_from_rpy(0 * t, 0 * t, 0.3 * t), joints)
    return policy, config, clip, names


@pytest.mark.engines
def test_verify_rederives_the_motion_terms_on_any_two_engines_and_catches_a_wrong_order(tmp_path):
    """``verify --motion``: the motion terms of the same named state agree on MuJoCo and Newton and with verify's own
    derivation (the clip on the policy's clock, both anchors by forward kinematics of the written state); one engine
    opened in the reversed order fails ``motion_command`` by joint."""
    pytest.importorskip("mujoco")
    from transfer.runs.verify import verify

    policy, config, clip, names = _tracker(tmp_path)
    args = dict(config=config, source="mujoco", motion=clip, motion_fps=30, samples=3)
    report = verify(policy, engines=("mujoco", "newton"), **args)
    assert report.ok and report.backends == ("mujoco", "newton"), report.verdict
    checked = {t.term: t for t in report.terms}
    assert {"motion_command", "motion_anchor_ori_b", "motion_anchor_pos_b"} <= set(checked)
    wrong = verify(policy, engines=("mujoco", "newton"), backend_orders={"newton": names[::-1]}, **args)
    bad = {t.term: t for t in wrong.terms}["motion_command"]
    assert not wrong.ok and not bad.ok and bad.across.difference > 0.1
    with pytest.raises(ValueError, match=r"--engines mujoco mujoco: give two different engines of physx, newton"):
        verify(policy, engines=("mujoco", "mujoco"), **args)


def test_a_sweep_spec_carries_a_trackers_clip_into_its_cells(tmp_path):
    """A spec entry's ``motion`` / ``motion_fps`` reach every cell (and its key); a cell runs the tracker to the
    clip's end; a clip for a velocity policy, or a rate without a clip, is refused naming the entry."""
    pytest.importorskip("mujoco")
    from transfer.runs.sweep.cell import run_cell
    from transfer.runs.sweep.spec import SpecError, load_spec

    policy, config, clip, _ = _tracker(tmp_path)
    entry = {"path": str(policy), "config": str(config), "source": "mujoco", "motion": str(clip), "motion_fps": 30}
    spec = {"checkpoints": [entry], "targets": ["mujoco"], "seconds": 2.0}
    plan = load_spec(spec)
    assert all(c["motion"] == {"motion": str(clip), "motion_fps": 30.0, "motion_anchor": None} for c in plan.cells)
    record = run_cell(plan.cells[0])
    assert record["error"] is None and record["tracking"]["completed"] == 1.0
    assert record["seconds"] == pytest.approx(59 / 30, abs=0.03)  # the clip's end, before the spec's 2 s
    velocity = {"path": "checkpoints/quadruped_flat_physx/exported/policy.pt", "motion": str(clip), "motion_fps": 30}
    with pytest.raises(SpecError, match=r"checkpoints\[0\] \(policy.pt\): motion: the policy's observation reads no"):
        load_spec({**spec, "checkpoints": [velocity]})
    with pytest.raises(SpecError, match=r"checkpoints\[0\].motion_fps: without motion"):
        load_spec({**spec, "checkpoints": [{"path": str(policy), "config": str(config), "motion_fps": 30}]})


@pytest.mark.engines
def test_the_shared_g1_dance_tracks_natively_and_on_physx(shared, capsys):
    """Unitree's mjlab-trained G1 dance (its ONNX, deploy.yaml, clip and mjlab's G1 MJCF as the repository ships
    them): natively on MuJoCo it tracks within 0.2 rad with no fall; on PhysX in the checkpoint's order it tracks
    within 1.5x native + 0.03 rad with no fall; in PhysX's own order (the naive control) it falls or errs twice as
    much."""
    pytest.importorskip("mujoco")
    pytest.importorskip("ovphysx")
    from transfer.cli import main

    args = [
        *dance(shared, "replay"),
        "--compare",
        "--num-envs",
        "2",
        "--seconds",
        "10",
        "--json",
    ]
    assert main(args) == 0
    native, reordered, naive = json.loads(capsys.readouterr().out)["runs"]
    assert native["fall_fraction"] == 0 and native["tracking"]["joint_pos_error"] <= 0.2
    assert reordered["fall_fraction"] == 0
    assert reordered["tracking"]["joint_pos_error"] <= 1.5 * native["tracking"]["joint_pos_error"] + 0.03
    assert (
        naive["fall_fraction"] > 0 or naive["tracking"]["joint_pos_error"] >= 2 * native["tracking"]["joint_pos_error"]
    )
    assert 0 < native["tracking"]["body_pos_error"] < 0.1  # every body of the G1 within 10 cm of the dance
    verify = ["verify", *args[1:12], "--engines", "physx", "mujoco", "--json"]
    assert main(verify) == 0, capsys.readouterr().out  # the motion terms re-derived from the clip: the same on both
    terms = {t["term"] for t in json.loads(capsys.readouterr().out)["terms"]}
    assert {"motion_command", "motion_anchor_ori_b"} <= terms


def test_the_motion_command_is_read_from_isaac_lab_and_mjlab_files():
    """A tracker's ``generated_commands`` of a ``MotionCommand`` (BeyondMimic's env.yaml) and mjlab's ``command``
    term when its ``command_names`` is ``[motion]`` are the motion command, not a velocity command."""
    pytest.importorskip("onnx")
    from tests.test_mjlab import mjlab_metadata
    from transfer.formats.mjlab import mjlab_task, write_props
    from transfer.task.isaaclab.terms import _term_name

    layout = [
        "command",
        "motion_anchor_pos_b",
        "motion_anchor_ori_b",
        "base_ang_vel",
        "joint_pos",
        "joint_vel",
        "actions",
    ]
    task = mjlab_task(write_props(mjlab_metadata(JOINTS, [0.0] * 3, terms=layout, command_names=["motion"])))
    assert [t.name for t in task.observation][:3] == ["motion_command", "motion_anchor_pos_b", "motion_anchor_ori_b"]
    assert task.observation_size(3) == 6 + 3 + 6 + 3 + 9
    commands = {"motion": {"class_type": "whole_body_tracking.tasks.tracking.mdp.commands:MotionCommand"}}
    func = "isaaclab.envs.mdp.observations:generated_commands"
    assert _term_name("command", func, {"command_name": "motion"}, commands, {}) == "motion_command"
    own = "whole_body_tracking.tasks.tracking.mdp.observations:motion_anchor_ori_b"
    assert _term_name("motion_anchor_ori_b", own, {"command_name": "motion"}, commands, {}) == "motion_anchor_ori_b"


def test_diagnose_scores_a_tracker_by_its_joint_error():
    from transfer.runs.diagnose import quality

    native = {
        "forward_velocity": 0.0,
        "fall_fraction": 0.0,
        "command": [0, 0, 0],
        "tracking": {"joint_pos_error": 0.07},
    }
    assert (
        quality({"forward_velocity": 0.3, "fall_fraction": 0.0, "tracking": {"joint_pos_error": 0.07}}, native) == 1.0
    )
    half = {"forward_velocity": 0.0, "fall_fraction": 0.0, "tracking": {"joint_pos_error": 0.105}}
    assert quality(half, native) == pytest.approx(0.5)  # 0.035 rad more than native's 0.07
    assert quality({**half, "fall_fraction": 0.5}, native) == pytest.approx(0.25)
    assert quality({"forward_velocity": None, "fall_fraction": 1.0, "tracking": None}, native) == 0.0


@pytest.mark.engines
def test_diagnose_takes_a_trackers_clip_and_finds_its_wrong_gains(shared, capsys):
    pytest.importorskip("ovphysx")
    from transfer.cli import main

    args = [
        *dance(shared, "diagnose"),
        "--set",
        "stiffness={'.*': 10}",
        "--num-envs",
        "1",
        "--seconds",
        "3",
        "--factor",
        "actuators",
        "--factor",
        "ground",
        "--json",
    ]
    assert main(args) == 0
    found = json.loads(capsys.readouterr().out)
    assert found["native"]["tracking"]["joint_pos_error"] <= 0.2 and found["target"]["fall_fraction"] == 1.0
    assert found["gap"] == pytest.approx(1.0) and found["suggestion"]["factor"] == "actuators"
    assert found["suggestion"]["label"] == "as the native run" and found["suggestion"]["fall_fraction"] == 0.0


@pytest.mark.parametrize("name", ["robot_body_pos_b", "robot_body_ori_b"])
def test_a_critics_tracking_term_in_a_policys_observation_says_what_it_is(name):
    from transfer.task import ObsTerm
    from transfer.task._checks import TaskError

    with pytest.raises(
        TaskError,
        match=rf"'{name}': a critic's term of mjlab's and BeyondMimic's tracking tasks .* "
        r"read the policy group of the config \(observations.policy\)",
    ):
        ObsTerm(name)
