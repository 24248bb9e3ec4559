"""End to end: real checkpoints trained on one backend walk on the other when vectors are matched by name.

The shared ANYmal C policies (TorchScript, exported from Isaac Lab) read a 48-vector: base linear and angular
velocity in the base frame, projected gravity, the velocity command, joint positions minus defaults, joint
velocities and the last action, joint blocks in the training backend's order. Actions are position targets
``default + action_scale * action``; policy at 50 Hz, physics at 200 Hz. Opening the articulation with the
checkpoint's ordering is all the transfer needs; without it the robot staggers or falls. 10 s of simulated
walking on a command of 1 m/s forward. Speed is the planar displacement over 10 s (the PhysX-trained policy
yaws on Newton, a dynamics difference). Thresholds: walking means > 0.6 m/s with the base above 0.4 m
(measured 0.93-0.99 m/s on PhysX, 0.88 m/s for both checkpoints on Newton); the unpermuted runs measured
0.13 and 0.15 m/s (< 0.3) or fell.
"""

from __future__ import annotations

import numpy as np
import pytest
import yaml

from transfer import open_articulation

torch = pytest.importorskip("torch")
pytestmark = [
    pytest.mark.engines,
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
    pytest.mark.filterwarnings("ignore::RuntimeWarning"),
    pytest.mark.filterwarnings("ignore::UserWarning"),
]

SPAWN_HEIGHT = 0.70  # the asset's base sits at z = 0 with its straight legs below; lift it clear of the ground
BACKEND_OPTIONS = {
    "physx": dict(
        solver_position_iterations=4, solver_velocity_iterations=0, ground_height=0.0, spawn_offset=(0, 0, SPAWN_HEIGHT)
    ),
    "newton": dict(
        solver="mujoco_cpu", ground_plane=True, armature=0.06, initial_root_pose=(0, 0, SPAWN_HEIGHT, 0, 0, 0, 1)
    ),
}


def walk(shared, checkpoint: str, backend: str, ordering: str, seconds: float = 10.0) -> tuple[float, float]:
    """Planar speed (m/s) and final base height (m) of the ANYmal C policy ``checkpoint`` on ``backend``."""
    folder = shared / "policies/anybotics_anymal_c/rl_policies"
    meta = yaml.safe_load((folder / "anymal.yaml").read_text())
    policy = torch.jit.load(str(folder / f"{checkpoint}_anymal.pt"))
    torch.set_num_threads(1)
    art = open_articulation(
        shared / "assets/anybotics_anymal_c/usd/anymal_c.usda",
        backend,
        joint_ordering=ordering,
        body_ordering=ordering,
        drive_stiffness=300.0,
        drive_damping=10.0,
        **BACKEND_OPTIONS[backend],
    )
    try:
        if backend == "physx":
            art.write_joint_properties(armature=np.full((1, art.num_joints), 0.06, np.float32))
        by_name = dict(zip(meta["mjw_joint_names"], meta["mjw_joint_pos"], strict=True))
        default = np.array([[by_name[n] for n in art.joint_names]], np.float32)
        art.write_joint_state(default, np.zeros_like(default))
        art.set_joint_position_target(default)
        command = np.array([1.0, 0.0, 0.0], np.float32)
        last = np.zeros(art.num_joints, np.float32)
        start = art.data.root_pos_w.numpy()[0].copy()
        for _ in range(int(seconds * 50)):
            d = art.data
            obs = np.concatenate(
                [
                    d.root_lin_vel_b.numpy()[0],
                    d.root_ang_vel_b.numpy()[0],
                    d.projected_gravity_b.numpy()[0],
                    command,
                    d.joint_pos.numpy()[0] - default[0],
                    d.joint_vel.numpy()[0],
                    last,
                ]
            ).astype(np.float32)
            with torch.no_grad():
                last = policy(torch.from_numpy(obs)[None]).numpy()[0]
            art.set_joint_position_target(default + meta["action_scale"] * last[None])
            for _ in range(4):
                art.step(0.005)
        end = art.data.root_pos_w.numpy()[0]
        return float(np.linalg.norm(end[:2] - start[:2])) / seconds, float(end[2])
    finally:
        art.close()


@pytest.mark.parametrize(
    ("checkpoint", "backend", "ordering"),
    [
        ("mjw", "physx", "mjwarp"),
        ("physx", "physx", "physx"),
        ("mjw", "newton", "mjwarp"),
        ("physx", "newton", "physx"),
    ],
)
def test_checkpoint_walks_when_opened_in_its_training_order(shared, checkpoint, backend, ordering):
    pytest.importorskip("ovphysx" if backend == "physx" else "newton")
    speed, height = walk(shared, checkpoint, backend, ordering)
    assert speed > 0.6 and height > 0.4, (speed, height)


@pytest.mark.parametrize(("checkpoint", "backend", "wrong"), [("mjw", "physx", "physx"), ("physx", "newton", "mjwarp")])
def test_checkpoint_fails_in_the_other_backends_order(shared, checkpoint, backend, wrong):
    """The control experiment: the same run without the name-preserving permutation does not walk."""
    pytest.importorskip("ovphysx" if backend == "physx" else "newton")
    speed, height = walk(shared, checkpoint, backend, wrong)
    assert speed < 0.3 or height < 0.3, (speed, height)
