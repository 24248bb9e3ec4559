"""Issue 30's acceptance in the demo's terms: ``replay --target mujoco`` on a robot's MJCF walks as the community's
own sim2sim loop makes it walk.

unitree_rl_gym's ``deploy/deploy_mujoco/deploy_mujoco.py`` (and legged_gym's play scripts) run a policy on the
robot's MJCF in a hand-written loop: motors in the file, a PD torque ``kp (target - q) - kd qdot`` computed in
Python every physics step, the observation assembled from ``qpos``/``qvel`` every ``control_decimation`` steps,
``target = default + action_scale x action``. The loop below is written from that script, independently of
``transfer`` (MuJoCo's own arrays, the checkpoint's metadata for the task's numbers), and drives the demo checkpoint
(trained on PhysX) on the demo quadruped's MJCF with motors instead of position actuators and its own floor. The
replay and the loop must give the same forward speed within 5 % and the same falls (none).
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

mujoco = pytest.importorskip("mujoco")

ROOT = Path(__file__).resolve().parents[1]
CHECKPOINT = ROOT / "checkpoints/quadruped_flat_physx/exported/policy.pt"
SECONDS = 5.0
WARMUP = 1.0  # replay's Measure.warmup: velocities count from 1 s


def motors_and_floor(tmp_path: Path) -> Path:
    """The demo quadruped's MJCF as deploy_mujoco.py's robots come: motors (torque, the force range as ``ctrlrange``)
    and a floor of the scene file's own."""
    text = (ROOT / "transfer/data/quadruped.xml").read_text()
    text, n = re.subn(
        r'<position name="(\w+)" joint="(\w+)" kp="[^"]*" kv="[^"]*" forcerange="([^"]*)"/>',
        r'<motor name="\1" joint="\2" ctrlrange="\3"/>',
        text,
    )
    assert n == 12
    text = text.replace(
        "<worldbody>", '<worldbody>\n    <geom name="floor" type="plane" size="0 0 1" contype="1" conaffinity="1"/>', 1
    )
    path = tmp_path / "quadruped_motors.xml"
    path.write_text(text)
    return path


def deploy_mujoco_loop(xml: Path, meta: dict, spawn_height: float) -> tuple[float, bool]:
    """``(forward speed, fell)``: deploy_mujoco.py's loop on ``xml`` with the checkpoint's task (``meta``)."""
    from transfer.formats import load_policy

    policy = load_policy(CHECKPOINT)
    m = mujoco.MjModel.from_xml_path(str(xml))
    d = mujoco.MjData(m)
    dt, decimation = meta["sim"]["dt"], meta["sim"]["decimation"]
    m.opt.timestep = dt
    names = meta["joint_names"]  # the policy's order (PhysX's); the file's qpos has MuJoCo's
    joint = [m.joint(n) for n in names]
    qadr = np.array([j.qposadr[0] for j in joint])
    dadr = np.array([j.dofadr[0] for j in joint])
    act = np.array([m.actuator(n).id for n in names])
    kp = np.array([meta["stiffness"][n] for n in names])
    kd = np.array([meta["damping"][n] for n in names])
    limit = np.array([meta["effort_limit"][n] for n in names])
    m.dof_armature[dadr] = [meta["armature"][n] for n in names]
    default = np.array([meta["default_joint_pos"][n] for n in names])
    scale = meta["action"]["scale"]
    vel_scale = next(t for t in meta["observation"] if t["name"] == "joint_vel_rel")["scale"]
    command = np.array(meta["command"], np.float64)
    d.qpos[2] = spawn_height
    d.qpos[qadr] = default
    mujoco.mj_forward(m, d)
    action = np.zeros(len(names))
    target = default.copy()
    root, speeds, fell = m.body("base").id, [], False
    vel = np.zeros(6)
    for step in range(int(round(SECONDS / dt))):
        tau = kp * (target - d.qpos[qadr]) - kd * d.qvel[dadr]
        d.ctrl[act] = np.clip(tau, -limit, limit)
        mujoco.mj_step(m, d)
        if (step + 1) % decimation:
            continue
        mujoco.mj_objectVelocity(m, d, mujoco.mjtObj.mjOBJ_BODY, root, vel, 0)  # (angular, linear), world, COM
        rot = d.xmat[root].reshape(3, 3)
        heading = np.arctan2(rot[1, 0], rot[0, 0])
        t = (step + 1) * dt
        fell |= bool(rot[2, 2] < 0.5 or d.xpos[root][2] < 0.2)
        if t > WARMUP:
            speeds.append(np.cos(heading) * vel[3] + np.sin(heading) * vel[4])
        obs = np.concatenate(
            [
                rot.T @ vel[3:],
                rot.T @ vel[:3],
                rot.T @ np.array([0.0, 0.0, -1.0]),
                command,
                d.qpos[qadr] - default,
                (d.qvel[dadr]) * vel_scale,
                action,
            ]
        ).astype(np.float32)
        action = np.asarray(policy(obs[None]), np.float64)[0]
        target = default + scale * action
    return float(np.mean(speeds)), fell


@pytest.mark.engines
def test_the_mujoco_replay_walks_as_a_deploy_mujoco_loop_does(tmp_path):
    from transfer.env.spawn import spawn_heights, training_base
    from transfer.formats import read_metadata
    from transfer.runs.inputs import resolve_inputs
    from transfer.runs.replay import replay

    xml = motors_and_floor(tmp_path)
    meta = read_metadata(CHECKPOINT)
    assert [t["name"] for t in meta["observation"]] == [
        "base_lin_vel",
        "base_ang_vel",
        "projected_gravity",
        "velocity_commands",
        "joint_pos_rel",
        "joint_vel_rel",
        "last_action",
    ]
    inputs = resolve_inputs(CHECKPOINT, asset=xml)
    spawn, _ = spawn_heights(inputs.task, inputs.robot, training_base(inputs.task, inputs.robot))
    loop_speed, loop_fell = deploy_mujoco_loop(xml, meta, spawn)
    result = replay(CHECKPOINT, target="mujoco", inputs=inputs, seconds=SECONDS, num_envs=1, progress=False)
    assert not loop_fell and result.fall_fraction == 0.0
    assert loop_speed > 0.3  # it walks at all (the command is 0.5 m/s)
    assert abs(result.forward_velocity - loop_speed) <= 0.05 * loop_speed, (result.forward_velocity, loop_speed)
