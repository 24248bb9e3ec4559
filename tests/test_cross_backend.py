"""One public-order articulation, two real engines: PhysX (ovphysx) and Newton read and write the same thing.

Tolerances: joint state written by name reads back exactly (float32); link poses computed by each engine's
forward kinematics agree to 1e-4 m and 1e-4 in quaternion components (float32 FK over up to 4 links);
projected gravity to 1e-5; joint limits to 1e-4 rad (PhysX stores degrees); a short PD-driven fall agrees to
0.03 rad over 0.1 s (the engines integrate differently; names, signs and targets are what is checked).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import shared_asset
from transfer import open_articulation

pytest.importorskip("ovphysx")
pytest.importorskip("newton")
pytestmark = [
    pytest.mark.engines,
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
    pytest.mark.filterwarnings("ignore::RuntimeWarning"),
    pytest.mark.filterwarnings("ignore::UserWarning"),
]

STIFFNESS, DAMPING = 60.0, 2.0


def newton_ant() -> Path:
    return Path(importlib.util.find_spec("newton").submodule_search_locations[0], "examples/assets/ant.usda")


ASSETS = {
    "anymal_c": lambda: shared_asset("anybotics_anymal_c/usd/anymal_c.usda"),
    "go2": lambda: shared_asset("unitree_go2/usd/go2_flat.usda"),
    "ant": newton_ant,
}


def open_both(path: Path, ordering: str | None, num_envs: int = 1, newton_solver: str = "mujoco_cpu"):
    common = dict(
        num_envs=num_envs,
        joint_ordering=ordering,
        body_ordering=ordering,
        drive_stiffness=STIFFNESS,
        drive_damping=DAMPING,
    )
    physx = open_articulation(path, "physx", **common)
    newton = open_articulation(path, "newton", solver=newton_solver, **common)
    return physx, newton


def quat_close(a: np.ndarray, b: np.ndarray, atol: float) -> bool:
    """Quaternions equal up to sign (q and -q are one rotation)."""
    a, b = a.reshape(-1, 4), b.reshape(-1, 4)
    return bool(np.all(np.minimum(np.abs(a - b).max(-1), np.abs(a + b).max(-1)) < atol))


def named_state(names, seed):
    rng = np.random.default_rng(seed)
    return {n: (float(rng.uniform(-0.4, 0.4)), float(rng.uniform(-1, 1))) for n in names}


ROOT_POSE = np.array(
    [[0.3, -0.2, 1.5, *(np.array([0.1, 0.2, 0.3, 1.0]) / np.linalg.norm([0.1, 0.2, 0.3, 1.0]))]], np.float32
)


@pytest.fixture(
    scope="module", params=[(a, o) for a in ASSETS for o in ("physx", "mjwarp")], ids=lambda p: f"{p[0]}-{p[1]}"
)
def pair(request):
    asset, ordering = request.param
    physx, newton = open_both(ASSETS[asset](), ordering)
    yield physx, newton
    physx.close()
    newton.close()


def write_same_state(physx, newton, seed=0):
    state = named_state(physx.joint_names, seed)
    for art in (physx, newton):
        pos = np.array([[state[n][0] for n in art.joint_names]], np.float32)
        vel = np.array([[state[n][1] for n in art.joint_names]], np.float32)
        art.write_root_pose(ROOT_POSE)
        art.write_joint_state(pos, vel)
    return state


def test_public_names_agree(pair):
    physx, newton = pair
    assert physx.joint_names == newton.joint_names
    assert physx.body_names == newton.body_names
    assert sorted(physx.backend_joint_names) == sorted(newton.backend_joint_names)
    assert physx.fixed_base == newton.fixed_base


def test_same_named_state_reads_the_same(pair):
    physx, newton = pair
    state = write_same_state(physx, newton)
    for art in (physx, newton):
        got = art.data.joint_pos.numpy()[0]
        assert np.allclose(got, [state[n][0] for n in art.joint_names], atol=1e-6), art.backend.name
        assert np.allclose(art.data.joint_vel.numpy()[0], [state[n][1] for n in art.joint_names], atol=1e-5)
    p, n = physx.data, newton.data
    assert np.allclose(p.root_pos_w.numpy(), n.root_pos_w.numpy(), atol=1e-5)
    assert quat_close(p.root_quat_w.numpy(), n.root_quat_w.numpy(), 1e-5)
    assert np.allclose(p.projected_gravity_b.numpy(), n.projected_gravity_b.numpy(), atol=1e-5)
    assert np.allclose(p.body_pos_w.numpy(), n.body_pos_w.numpy(), atol=1e-4)
    assert quat_close(p.body_quat_w.numpy(), n.body_quat_w.numpy(), 1e-4)


def test_root_velocity_reads_the_same(pair):
    physx, newton = pair
    velocity = np.array([[0.5, -0.25, 0.1, 0.3, -0.2, 0.6]], np.float32)
    for art in (physx, newton):
        art.write_root_pose(ROOT_POSE)
        art.write_root_velocity(velocity)
        assert np.allclose(art.data.root_lin_vel_w.numpy(), velocity[:, :3], atol=1e-5), art.backend.name
        assert np.allclose(art.data.root_ang_vel_w.numpy(), velocity[:, 3:], atol=1e-5), art.backend.name
    assert np.allclose(physx.data.root_lin_vel_b.numpy(), newton.data.root_lin_vel_b.numpy(), atol=1e-5)
    assert np.allclose(physx.data.root_ang_vel_b.numpy(), newton.data.root_ang_vel_b.numpy(), atol=1e-5)


def test_joint_properties_from_usd_agree(pair):
    physx, newton = pair
    p, n = physx.data, newton.data
    assert np.allclose(p.joint_pos_limit_lower.numpy(), n.joint_pos_limit_lower.numpy(), atol=1e-4)
    assert np.allclose(p.joint_pos_limit_upper.numpy(), n.joint_pos_limit_upper.numpy(), atol=1e-4)
    assert np.allclose(p.joint_stiffness.numpy(), STIFFNESS) and np.allclose(n.joint_stiffness.numpy(), STIFFNESS)
    assert np.allclose(p.joint_damping.numpy(), DAMPING) and np.allclose(n.joint_damping.numpy(), DAMPING)


def test_pd_targets_reach_the_same_joints(shared):
    physx, newton = open_both(shared_asset("anybotics_anymal_c/usd/anymal_c.usda"), "mjwarp")
    try:
        write_same_state(physx, newton, seed=1)
        for art in (physx, newton):
            art.write_joint_state(np.zeros((1, art.num_joints), np.float32), np.zeros((1, art.num_joints), np.float32))
            # one distinct target per joint, by public index: a wrong permutation would pull the wrong joint
            target = np.linspace(-0.3, 0.3, art.num_joints, dtype=np.float32)[None]
            art.set_joint_position_target(target)
        history = {"physx": [], "newton": []}
        for _ in range(20):
            for art in (physx, newton):
                art.step(0.005)
                history[art.backend.name].append(art.data.joint_pos.numpy()[0].copy())
        p, n = np.array(history["physx"]), np.array(history["newton"])
        assert np.abs(p - n).max() < 0.03, np.abs(p - n).max(axis=0)
        moved = p[-1] * np.linspace(-0.3, 0.3, physx.num_joints)
        assert (moved[np.abs(np.linspace(-0.3, 0.3, physx.num_joints)) > 0.05] > 0).all(), (
            "joints moved toward their targets"
        )
    finally:
        physx.close()
        newton.close()


@pytest.mark.parametrize("backend", ["physx", "newton"])
def test_partial_writes_touch_only_what_they_name(backend, shared):
    options = {"solver": "xpbd"} if backend == "newton" else {}
    art = open_articulation(
        shared_asset("anybotics_anymal_c/usd/anymal_c.usda"),
        backend,
        num_envs=3,
        joint_ordering="mjwarp",
        body_ordering="mjwarp",
        **options,
    )
    try:
        zeros = np.zeros((3, art.num_joints), np.float32)
        art.write_joint_state(zeros, zeros)
        ids = art.find_joints(["LF_HFE", "RH_KFE"])[0]
        art.write_joint_state(
            np.full((1, 2), 0.7, np.float32), np.full((1, 2), -0.5, np.float32), env_ids=[1], joint_ids=ids
        )
        pos, vel = art.data.joint_pos.numpy(), art.data.joint_vel.numpy()
        expected = np.zeros_like(pos)
        expected[1, ids] = 0.7
        assert np.allclose(pos, expected, atol=1e-6)
        expected[1, ids] = -0.5
        assert np.allclose(vel, expected, atol=1e-5)
        before = art.data.root_pos_w.numpy().copy()
        art.write_root_pose(ROOT_POSE, env_ids=[2])
        after = art.data.root_pos_w.numpy()
        assert np.allclose(after[:2], before[:2]) and np.allclose(after[2], ROOT_POSE[0, :3], atol=1e-6)
    finally:
        art.close()


REVERSED = """#usda 1.0
(
    upAxis = "Z"
    metersPerUnit = 1
)
def PhysicsScene "scene" {}
def Xform "robot"
{
    def Xform "base" (prepend apiSchemas = ["PhysicsRigidBodyAPI", "PhysicsMassAPI", "PhysicsArticulationRootAPI"])
    {
        float physics:mass = 2
        float3 physics:diagonalInertia = (0.1, 0.1, 0.1)
    }
    def Xform "arm" (prepend apiSchemas = ["PhysicsRigidBodyAPI", "PhysicsMassAPI"])
    {
        double3 xformOp:translate = (0.5, 0, 0)
        uniform token[] xformOpOrder = ["xformOp:translate"]
        float physics:mass = 1
        float3 physics:diagonalInertia = (0.01, 0.01, 0.01)
    }
    def PhysicsRevoluteJoint "hinge"
    {
        rel physics:body0 = </robot/arm>
        rel physics:body1 = </robot/base>
        uniform token physics:axis = "Z"
        point3f physics:localPos0 = (-0.5, 0, 0)
        point3f physics:localPos1 = (0, 0, 0)
        float physics:lowerLimit = -170
        float physics:upperLimit = 170
    }
}
"""


def _relative_yaw(q_parent: np.ndarray, q_child: np.ndarray) -> float:
    """Angle about z of the child's frame seen from the parent's frame (xyzw; both rotate about z only)."""
    px, py, pz, pw = -q_parent[0], -q_parent[1], -q_parent[2], q_parent[3]  # conjugate
    cx, cy, cz, cw = q_child
    z = pw * cz + pz * cw + px * cy - py * cx
    w = pw * cw - px * cx - py * cy - pz * cz
    return float(np.arctan2(np.sin(2 * np.arctan2(z, w)), np.cos(2 * np.arctan2(z, w))))


def test_reversed_joint_reads_with_the_same_sign(tmp_path):
    """body0 is the child here (PhysX roots at base; Newton roots at arm): the angle must mean the same."""
    path = tmp_path / "reversed.usda"
    path.write_text(REVERSED)
    physx, newton = open_both(path, "physx")
    try:
        relative = {}
        for art in (physx, newton):
            art.write_joint_state(np.array([[0.7]], np.float32), np.zeros((1, 1), np.float32))
            ids = {name: i for i, name in enumerate(art.body_names)}
            quats = art.data.body_quat_w.numpy()[0]
            relative[art.backend.name] = _relative_yaw(quats[ids["base"]], quats[ids["arm"]])
            assert np.isclose(art.data.joint_pos.numpy()[0, 0], 0.7, atol=1e-6)
        assert np.isclose(relative["physx"], relative["newton"], atol=1e-4), relative
        assert abs(relative["physx"]) > 0.5, "the joint moved the arm"
    finally:
        physx.close()
        newton.close()


def _slider(path: Path) -> Path:
    """A 1 kg box (10 cm cube) on a 0.1 kg arm, sitting on the ground: friction alone stops it once pushed."""
    from pxr import Gf, Usd, UsdGeom, UsdPhysics

    stage = Usd.Stage.CreateNew(str(path))
    UsdGeom.SetStageUpAxis(stage, UsdGeom.Tokens.z)
    UsdGeom.SetStageMetersPerUnit(stage, 1.0)
    UsdGeom.Xform.Define(stage, "/slider")
    for name, mass in (("box", 1.0), ("arm", 0.1)):
        body = UsdGeom.Xform.Define(stage, f"/slider/{name}")
        body.AddTranslateOp().Set(Gf.Vec3d(0, 0, 0.05))
        UsdPhysics.RigidBodyAPI.Apply(body.GetPrim())
        UsdPhysics.MassAPI.Apply(body.GetPrim()).CreateMassAttr(mass)
        cube = UsdGeom.Cube.Define(stage, f"/slider/{name}/geom")
        cube.CreateSizeAttr(0.1 if name == "box" else 0.02)
        if name == "box":
            UsdPhysics.CollisionAPI.Apply(cube.GetPrim())
    joint = UsdPhysics.RevoluteJoint.Define(stage, "/slider/hinge")
    joint.CreateAxisAttr("Z")
    joint.CreateBody0Rel().SetTargets(["/slider/box"])
    joint.CreateBody1Rel().SetTargets(["/slider/arm"])
    UsdPhysics.ArticulationRootAPI.Apply(stage.GetPrimAtPath("/slider/box"))
    stage.GetRootLayer().Save()
    return path


def test_the_ground_has_the_same_friction_on_both_engines(tmp_path):
    """Pushed at 2 m/s, the box slides v^2 / (2 mu g) = 0.20 m on ground of friction 1 on both engines (PhysX's own
    default ground would give 0.5, averaged: twice as far)."""
    path = _slider(tmp_path / "slider.usda")
    slid = {}
    for backend, options in (("physx", dict(ground_height=0.0)), ("newton", dict(ground_plane=True))):
        art = open_articulation(path, backend, **options)
        try:
            for _ in range(20):
                art.step(0.005)
            start = art.data.root_pos_w.numpy()[0, 0]
            art.write_root_velocity(np.array([[2.0, 0, 0, 0, 0, 0]], np.float32))
            for _ in range(200):
                art.step(0.005)
            slid[backend] = float(art.data.root_pos_w.numpy()[0, 0] - start)
        finally:
            art.close()
    for distance in slid.values():
        assert 0.15 < distance < 0.3, slid
    assert abs(slid["physx"] - slid["newton"]) < 0.05, slid
