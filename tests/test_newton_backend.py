"""NewtonBackend on the real Newton engine (CPU): ANYmal C, the rootless four-bar pole, an open rootless chain."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import shared_asset
from tests.test_mechanism_view import open_chain_stage, quat_rotate, write_rootless_fourbar

newton = pytest.importorskip("newton")
wp = pytest.importorskip("warp")

import transfer  # noqa: E402
from transfer.backends import backend_class  # noqa: E402
from transfer.backends.base import JOINT_PROPERTIES, Backend  # noqa: E402
from transfer.backends.newton import NewtonBackend  # noqa: E402
from transfer.kernels.plan import ReorderPlan  # noqa: E402

ANYMAL = "anybotics_anymal_c/usd/anymal_c.usda"
STAND = (0.0, 0.0, 0.62, 0.0, 0.0, 0.0, 1.0)


def anymal_path():
    return shared_asset(ANYMAL)


@pytest.fixture(scope="module")
def anymal() -> NewtonBackend:
    """ANYmal C on MuJoCo C (one world), drives as in the shared policies, on a ground plane."""
    return NewtonBackend(
        anymal_path(),
        solver="mujoco_cpu",
        drive_stiffness=300.0,
        drive_damping=10.0,
        armature=0.06,
        ground_plane=True,
        initial_root_pose=STAND,
    )


@pytest.fixture(scope="module")
def anymal_xpbd() -> NewtonBackend:
    """ANYmal C in three worlds on XPBD (partial writes and resets without a MuJoCo-Warp compile)."""
    return NewtonBackend(
        anymal_path(),
        num_envs=3,
        solver="xpbd",
        drive_stiffness=300.0,
        drive_damping=10.0,
        ground_plane=True,
        initial_root_pose=STAND,
    )


def f32(a) -> wp.array:
    return wp.array(np.ascontiguousarray(a, dtype=np.float32), dtype=wp.float32)


# ---------------------------------------------------------------------------------------------------------------
# ANYmal C, MuJoCo C
# ---------------------------------------------------------------------------------------------------------------
def test_contract_attributes_and_order(anymal):
    assert isinstance(anymal, Backend) and backend_class(anymal.name) is type(anymal)
    order = transfer.resolve_ordering(anymal_path(), "mjwarp")
    assert anymal.joint_names == order.joints
    assert anymal.body_names == order.bodies
    assert anymal.fixed_base is False and anymal.num_joints == 12 and anymal.num_bodies == 17
    assert anymal.joint_names[:3] == ("LF_HAA", "LF_HFE", "LF_KFE") and anymal.body_names[0] == "base"
    assert anymal.default_joint_pos.shape == (1, 12) and anymal.default_joint_pos.dtype == wp.float32
    physx = transfer.resolve_ordering(anymal_path(), "physx")
    # the Newton and PhysX orders differ, and the map between them carries Newton-order data into PhysX order
    assert anymal.joint_names != physx.joints
    to_physx = transfer.build_name_map("joint", anymal.joint_names, physx.joints)
    assert list(to_physx.to_user(np.array(anymal.joint_names))) == list(physx.joints)
    assert list(to_physx.to_backend(np.array(physx.joints))) == list(anymal.joint_names)
    shapes = {
        "root_pose": (1, 7),
        "root_velocity": (1, 6),
        "joint_positions": (1, 12),
        "joint_velocities": (1, 12),
        "body_poses": (1, 17, 7),
        "body_velocities": (1, 17, 6),
    }
    for reader, shape in shapes.items():
        out = getattr(anymal, reader)()
        assert out.shape == shape and out.dtype == wp.float32, reader
    props = anymal.joint_properties()
    assert all(getattr(props, p).shape == (1, 12) for p in JOINT_PROPERTIES)
    np.testing.assert_allclose(props.stiffness.numpy(), 300.0)
    np.testing.assert_allclose(props.armature.numpy(), 0.06, rtol=1e-6)


def test_root_pose_is_xyzw_and_moves_the_links(anymal):
    anymal.reset()
    base = anymal.body_poses().numpy()[0].copy()
    hip = anymal.body_names.index("LF_HIP")
    offset = base[hip, :3] - base[0, :3]
    half = np.pi / 4  # 90 degrees about z, as x, y, z, w
    pose = np.array([[0.5, -1.0, 0.8, 0.0, 0.0, np.sin(half), np.cos(half)]], np.float32)
    anymal.write_root_pose(f32(pose))
    np.testing.assert_allclose(anymal.root_pose().numpy(), pose, atol=1e-6)
    bodies = anymal.body_poses().numpy()[0]
    np.testing.assert_allclose(bodies[0], pose[0], atol=1e-6)
    np.testing.assert_allclose(bodies[hip, :3] - pose[0, :3], [-offset[1], offset[0], offset[2]], atol=1e-5)
    np.testing.assert_allclose(bodies[hip, :3] - pose[0, :3], quat_rotate(pose[0, 3:], offset), atol=1e-5)


def test_velocities_are_com_linear_then_angular_world(anymal):
    """A root twist spins every link rigidly: link COM velocity = v_root_com + w x (com_link - com_root)."""
    anymal.reset()
    twist = np.array([[0.3, -0.2, 0.1, 0.5, -1.0, 2.0]], np.float32)
    anymal.write_root_velocity(f32(twist))
    np.testing.assert_allclose(anymal.root_velocity().numpy(), twist, atol=1e-5)
    coms = anymal.view.get_body_coms(anymal.state_0).numpy()[0]
    links = anymal.body_velocities().numpy()[0]
    w = twist[0, 3:]
    expected = twist[0, :3] + np.cross(w, coms[:, :3] - coms[0, :3])
    np.testing.assert_allclose(links[:, :3], expected, atol=1e-4)
    np.testing.assert_allclose(links[:, 3:], np.broadcast_to(w, (17, 3)), atol=1e-5)
    com_offset = coms[0, :3] - anymal.root_pose().numpy()[0, :3]
    assert np.linalg.norm(com_offset) > 1e-3  # the base COM is not the base frame origin: COM, not origin
    anymal.reset()


def test_joint_writes_round_trip_and_the_robot_stands(anymal):
    anymal.reset()
    rng = np.random.default_rng(1)
    q = rng.uniform(-0.2, 0.2, (1, 12)).astype(np.float32)
    qd = rng.uniform(-0.5, 0.5, (1, 12)).astype(np.float32)
    anymal.write_joint_state(f32(q), f32(qd))
    np.testing.assert_array_equal(anymal.joint_positions().numpy(), q)
    np.testing.assert_array_equal(anymal.joint_velocities().numpy(), qd)
    for setter, attr in (
        (anymal.set_joint_position_target, "joint_target_q"),
        (anymal.set_joint_velocity_target, "joint_target_qd"),
        (anymal.set_joint_effort_target, "joint_f"),
    ):
        setter(f32(q))
        np.testing.assert_array_equal(anymal.view.joints.get_attribute(attr, anymal.control).numpy(), q)
    anymal.set_joint_velocity_target(f32(np.zeros((1, 12))))
    anymal.set_joint_effort_target(f32(np.zeros((1, 12))))
    anymal.reset()
    np.testing.assert_array_equal(anymal.joint_positions().numpy(), anymal.default_joint_pos.numpy())
    np.testing.assert_allclose(anymal.root_pose().numpy()[0], STAND, atol=1e-6)
    anymal.set_joint_position_target(anymal.default_joint_pos)
    for _ in range(100):
        anymal.step(0.005)
    root = anymal.root_pose().numpy()[0]
    assert np.isfinite(anymal.body_poses().numpy()).all()
    assert 0.3 < root[2] < 0.7  # standing on its straight legs, not fallen through the ground
    anymal.reset()
    np.testing.assert_allclose(anymal.root_pose().numpy()[0], STAND, atol=1e-6)
    np.testing.assert_allclose(anymal.body_velocities().numpy(), 0.0, atol=1e-6)


def test_joint_property_writes(anymal):
    props = anymal.joint_properties()
    stiffness = props.stiffness.numpy() * 0.5
    anymal.write_joint_properties(stiffness=f32(stiffness))
    np.testing.assert_allclose(anymal.joint_properties().stiffness.numpy(), stiffness)
    anymal.write_joint_properties(stiffness=props.stiffness)
    with pytest.raises(KeyError, match="unknown properties"):
        anymal.write_joint_properties(stifness=props.stiffness)


def test_reorder_plan_republishes_in_physx_order(anymal):
    physx = transfer.resolve_ordering(anymal_path(), "physx")
    joint_map = transfer.build_name_map("joint", anymal.joint_names, physx.joints)
    body_map = transfer.build_name_map("body", anymal.body_names, physx.bodies)
    plan = ReorderPlan(device="cpu")
    q_user = plan.add_gather("joint_pos", anymal.joint_positions(), joint_map)
    poses_user = plan.add_gather("body_pose", anymal.body_poses(), body_map)
    staging = wp.zeros((1, 12), dtype=wp.float32)
    target_user = plan.add_scatter("joint_target", None, staging, joint_map)
    q = np.arange(12, dtype=np.float32)[None] * 0.01
    anymal.write_joint_state(f32(q), f32(np.zeros((1, 12))))
    anymal.joint_positions()
    anymal.body_poses()
    plan.launch_gathers()
    by_name = dict(zip(anymal.joint_names, q[0], strict=True))
    np.testing.assert_array_equal(q_user.numpy()[0], [by_name[n] for n in physx.joints])
    np.testing.assert_array_equal(poses_user.numpy()[0, 0], anymal.body_poses().numpy()[0, 0])
    user_targets = np.linspace(-1, 1, 12, dtype=np.float32)[None]
    wp.copy(target_user, f32(user_targets))
    plan.launch_scatters()
    anymal.set_joint_position_target(staging)
    targets = anymal.view.get_dof_position_targets(anymal.control).numpy()[0]
    user_by_name = dict(zip(physx.joints, user_targets[0], strict=True))
    np.testing.assert_array_equal(targets, [user_by_name[n] for n in anymal.joint_names])
    anymal.reset()


def test_refusals_name_the_fix(tmp_path):
    with pytest.raises(ValueError, match=r"only world 0.*solver='mujoco_warp'"):
        NewtonBackend(anymal_path(), num_envs=2, solver="mujoco_cpu")
    with pytest.raises(ValueError, match="expected 'auto' or one of"):
        NewtonBackend(anymal_path(), solver="physx")
    rootless = write_rootless_fourbar(tmp_path / "fourbar.usda", floating=False)
    with pytest.raises(ValueError, match="no articulation root.*infer_tree"):
        NewtonBackend(rootless, solver="xpbd")
    with pytest.raises(ValueError, match="match no DoF"):
        NewtonBackend(anymal_path(), drive_stiffness={"LF_NOPE": 1.0})


# ---------------------------------------------------------------------------------------------------------------
# ANYmal C, three worlds on XPBD: partial writes and resets
# ---------------------------------------------------------------------------------------------------------------
@settings(max_examples=25, deadline=None)
@given(envs=st.lists(st.integers(0, 2), unique=True), seed=st.integers(0, 10_000))
def test_partial_writes_and_resets(anymal_xpbd, envs, seed):
    be = anymal_xpbd
    be.reset()
    rng = np.random.default_rng(seed)
    q = rng.uniform(-0.3, 0.3, (3, 12)).astype(np.float32)
    pose = np.tile(np.array(STAND, np.float32), (3, 1))
    pose[:, :2] = rng.uniform(-2, 2, (3, 2))
    env_ids = wp.array(np.asarray(envs, np.int32), dtype=wp.int32)
    before_q, before_pose = be.joint_positions().numpy().copy(), be.body_poses().numpy().copy()
    be.write_joint_state(f32(q), f32(np.zeros((3, 12))), env_ids)
    be.write_root_pose(f32(pose), env_ids)
    after_q, after_pose = be.joint_positions().numpy(), be.body_poses().numpy()
    others = [e for e in range(3) if e not in envs]
    np.testing.assert_array_equal(after_q[others], before_q[others])
    np.testing.assert_array_equal(after_pose[others], before_pose[others])
    np.testing.assert_array_equal(after_q[envs], q[envs])
    np.testing.assert_allclose(after_pose[envs, 0], pose[envs], atol=1e-6)
    be.reset(env_ids)
    np.testing.assert_array_equal(be.joint_positions().numpy()[envs], be.default_joint_pos.numpy()[envs])
    np.testing.assert_allclose(be.root_pose().numpy()[envs], np.tile(STAND, (len(envs), 1)), atol=1e-6)


def test_xpbd_steps_and_keeps_joint_coordinates_current(anymal_xpbd):
    be = anymal_xpbd
    be.reset()
    be.set_joint_position_target(be.default_joint_pos)
    for _ in range(20):
        be.step(0.002)
    assert np.isfinite(be.body_poses().numpy()).all()
    q = be.joint_positions().numpy().copy()
    be.view.eval_ik(be.state_0)  # step() already ran eval_ik: the coordinates match the links
    np.testing.assert_allclose(be.joint_positions().numpy(), q, atol=1e-6)
    assert not np.array_equal(be.root_pose().numpy(), np.tile(STAND, (3, 1)))  # it moved (fell onto the ground)


# ---------------------------------------------------------------------------------------------------------------
# Rootless assets through infer_tree
# ---------------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("floating", [False, True])
def test_rootless_fourbar_backend(tmp_path, floating):
    path = write_rootless_fourbar(tmp_path / "fourbar.usda", floating=floating)
    be = NewtonBackend(path, num_envs=2, solver="xpbd", rootless_articulation_policy="infer_tree")
    assert be.joint_names == ("ground_to_crank", "crank_to_coupler", "coupler_to_pole", "coupler_to_rocker")
    assert be.body_names == ("ground_link", "crank", "coupler", "pole", "rocker")
    assert be.fixed_base is (not floating)
    assert be.view.loop_joint_names == ["rocker_to_ground"]
    (tree,) = be.import_summary.trees
    assert tree.loop_joints == ("/fourbar_pole/rocker_to_ground",)
    pose = np.array([[0, 0, 1, 0, 0, 0, 1], [1, 2, 3, 0, 0, 0, 1]], np.float32)
    be.write_root_pose(f32(pose), wp.array([1], dtype=wp.int32))
    np.testing.assert_allclose(be.root_pose().numpy()[1], pose[1], atol=1e-6)
    np.testing.assert_allclose(be.root_pose().numpy()[0], [0, 0, 0, 0, 0, 0, 1], atol=1e-6)
    for _ in range(20):
        be.step(1.0e-3)
    assert np.isfinite(be.body_poses().numpy()).all() and np.isfinite(be.joint_positions().numpy()).all()
    be.reset()
    np.testing.assert_allclose(be.root_pose().numpy(), [[0, 0, 0, 0, 0, 0, 1]] * 2, atol=1e-6)


def test_open_chain_backend(tmp_path):
    path = tmp_path / "chain.usda"
    stage = open_chain_stage(4)  # keep the stage alive: it owns its anonymous root layer
    stage.GetRootLayer().Export(str(path))
    be = NewtonBackend(path, num_envs=2, solver="semi_implicit", rootless_articulation_policy="infer_tree")
    assert be.joint_names == ("joint1", "joint2", "joint3")
    assert be.body_names == ("link0", "link1", "link2", "link3") and not be.fixed_base
    q = np.array([[0.1, -0.2, 0.3], [0.0, 0.0, 0.0]], np.float32)
    be.write_joint_state(f32(q), f32(np.zeros((2, 3))))
    np.testing.assert_array_equal(be.joint_positions().numpy(), q)
    for _ in range(20):
        be.step(1.0e-3)
    assert np.isfinite(be.body_poses().numpy()).all()
    assert be.root_pose().numpy()[0, 2] < 1.0  # falls under gravity (no ground)


@pytest.mark.slow
def test_mujoco_warp_simulates_every_world():
    """MuJoCo-Warp on the CPU steps all worlds (MuJoCo C would freeze all but world 0). ~1 min on a cold cache."""
    be = NewtonBackend(
        anymal_path(),
        num_envs=2,
        solver="mujoco_warp",
        drive_stiffness=300.0,
        drive_damping=10.0,
        ground_plane=True,
        initial_root_pose=STAND,
    )
    be.set_joint_position_target(be.default_joint_pos)
    start = be.root_pose().numpy().copy()
    for _ in range(20):
        be.step(0.005)
    moved = np.abs(be.root_pose().numpy()[:, 2] - start[:, 2])
    assert (moved > 1e-4).all(), moved  # both robots settle onto the ground
    be.reset(wp.array([1], dtype=wp.int32))
    np.testing.assert_allclose(be.root_pose().numpy()[1], STAND, atol=1e-6)
    assert abs(be.root_pose().numpy()[0, 2] - STAND[2]) > 1e-4
