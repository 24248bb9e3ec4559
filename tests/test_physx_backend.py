"""PhysxBackend on the real ovphysx engine (CPU): orders, clones, units, partial writes, stepping, errors.

One backend per asset per module (each PhysX setup costs ~0.05-0.3 s); tests reset what they use.
"""

from __future__ import annotations

import hashlib
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.conftest import shared_asset

ovphysx = pytest.importorskip("ovphysx")
pytest.importorskip("ovstage")
pytest.importorskip("pxr")
wp = pytest.importorskip("warp")

import transfer  # noqa: E402
from transfer.backends import backend_class  # noqa: E402
from transfer.backends.base import JOINT_PROPERTIES, Backend  # noqa: E402
from transfer.backends.physx import PhysxBackend  # noqa: E402

# Session reads in the unit cross-checks build warp arrays; ovphysx warns that this opens the CUDA driver.
pytestmark = pytest.mark.filterwarnings("ignore:ovphysx is in CPU-only mode:RuntimeWarning")

SAMPLES = Path(ovphysx.__file__).resolve().parent / "samples" / "data"
ANT = SAMPLES / "Ant.usda"
CARTPOLE = SAMPLES / "CartPole.usda"
TWO_ARTICULATIONS = SAMPLES / "two_articulations.usda"
E = 4
DT = 0.005
DEG = 180.0 / math.pi


def _anymal_path() -> Path:
    return shared_asset("anybotics_anymal_c/usd/anymal_c.usda")


def _go2_path() -> Path:
    return shared_asset("unitree_go2/usd/go2_flat.usda")


def _backend(path: Path, **kwargs) -> PhysxBackend:
    if not path.is_file():
        pytest.skip(f"asset not found: {path}")
    return PhysxBackend(path, **kwargs)


@pytest.fixture(scope="module")
def anymal():
    backend = _backend(_anymal_path(), num_envs=E, solver_position_iterations=4, solver_velocity_iterations=0, dt=DT)
    yield backend
    backend.close()


@pytest.fixture(scope="module")
def go2():
    backend = _backend(_go2_path(), num_envs=E)
    yield backend
    backend.close()


@pytest.fixture(scope="module")
def ant():
    backend = _backend(ANT, num_envs=E)
    yield backend
    backend.close()


@pytest.fixture(scope="module")
def cartpole():
    backend = _backend(CARTPOLE, num_envs=2)
    yield backend
    backend.close()


def _arr(values) -> wp.array:
    return wp.array(np.ascontiguousarray(values, dtype=np.float32), dtype=wp.float32)


def _ids(ids) -> wp.array:
    return wp.array(np.asarray(ids, dtype=np.int32), dtype=wp.int32)


def _session_joint_values(backend: PhysxBackend, attribute: str) -> dict[str, float]:
    """Joint values of environment 0 as the session read API reports them (USD units: degrees for angular DoFs)."""
    from ovphysx.types import ObjectScope, SimObjectType

    prefix = backend.clone_source  # environment 0's joints live under the asset's own environment prim
    out = {}
    with backend._px.read_sync(SimObjectType.ARTICULATION_JOINT, [attribute], scope=ObjectScope.ALL) as result:
        for group in result.groups:
            if group.is_delete:
                continue
            paths = result.dictionary.get_path_strings(group.prim_list)
            for path, tensor in zip(paths, group.tensors, strict=True):
                if path.startswith(prefix + "/"):
                    out[path.rsplit("/", 1)[-1]] = float(np.asarray(tensor.numpy()).ravel()[0])
    return out


# --- orders and clones ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("which", ["anymal", "go2", "ant", "cartpole"])
def test_names_equal_the_resolved_physx_order(which, request):
    backend = request.getfixturevalue(which)
    resolved = transfer.resolve_ordering(backend.usd_path, "physx", backend.root)
    assert isinstance(backend, Backend) and backend_class(backend.name) is type(backend)
    assert backend.joint_names == resolved.joints
    assert backend.body_names == resolved.bodies
    assert backend.fixed_base == resolved.fixed_base


def test_anymal_order_is_the_documented_one(anymal):
    assert anymal.joint_names[:4] == ("LF_HAA", "LH_HAA", "RF_HAA", "RH_HAA")
    assert anymal.body_names[0] == "base" and len(anymal.body_names) == 17


@pytest.mark.parametrize("which", ["anymal", "go2", "ant"])
def test_clones_are_separate_environments(which, request):
    backend = request.getfixturevalue(which)
    backend.reset()
    assert backend.num_envs == E and len(set(backend.env_root_paths)) == E
    assert backend.env_root_paths[0] == backend.root
    pose = backend.root_pose().numpy()
    assert pose.shape == (E, 7)
    np.testing.assert_allclose(pose[:, :3] - pose[0, :3], backend.env_origins, atol=1e-5)
    assert np.linalg.norm(backend.env_origins[1] - backend.env_origins[0]) >= 2.0  # CPU clones must not overlap
    np.testing.assert_allclose(pose[:, 3:], np.broadcast_to(pose[0, 3:], (E, 4)), atol=1e-6)
    shapes = {
        "joint_positions": (E, backend.num_joints),
        "joint_velocities": (E, backend.num_joints),
        "root_velocity": (E, 6),
        "body_poses": (E, backend.num_bodies, 7),
        "body_velocities": (E, backend.num_bodies, 6),
    }
    for method, shape in shapes.items():
        out = getattr(backend, method)()
        assert out.shape == shape and out.dtype == wp.float32 and out.device == wp.get_device("cpu"), method
    assert backend.default_joint_pos.shape == (E, backend.num_joints)


def test_public_order_layer_runs_on_it(shared):
    from transfer.articulation import open_articulation

    path = _anymal_path()
    mjwarp = transfer.resolve_ordering(path, "mjwarp")
    art = open_articulation(path, "physx", num_envs=2, joint_ordering="mjwarp", body_ordering="mjwarp")
    try:
        backend = art.backend
        assert isinstance(backend, PhysxBackend) and backend.gravity_dir == (0.0, 0.0, -1.0)
        assert art.joint_names == mjwarp.joints and art.body_names == mjwarp.bodies
        position = np.tile(np.arange(1, backend.num_joints + 1, dtype=np.float32) / 4, (2, 1))  # up to 3 rad
        backend.write_joint_state(_arr(position), _arr(np.zeros_like(position)))
        names = list(backend.joint_names)
        expected = position[:, [names.index(n) for n in mjwarp.joints]]
        np.testing.assert_allclose(art.data.joint_pos.numpy(), expected, atol=1e-6)
    finally:
        art.close()


# --- units -----------------------------------------------------------------------------------------------------


def test_default_joint_pos_is_the_authored_state_in_radians(ant):
    # Ant.usda authors state:angular:physics:position = +-60 (degrees) on the four foot joints.
    expected = {"front_left_foot": 60, "front_right_foot": -60, "left_back_foot": -60, "right_back_foot": 60}
    default = ant.default_joint_pos.numpy()
    for name, degrees in expected.items():
        np.testing.assert_allclose(default[:, ant.joint_names.index(name)], math.radians(degrees), atol=1e-6)


def test_joint_limits_are_radians(ant):
    props = ant.joint_properties()
    column = ant.joint_names.index("front_left_leg")  # authored -40 .. 40 degrees
    np.testing.assert_allclose(props.position_limit_lower.numpy()[:, column], math.radians(-40), atol=1e-6)
    np.testing.assert_allclose(props.position_limit_upper.numpy()[:, column], math.radians(40), atol=1e-6)
    for name in JOINT_PROPERTIES:
        assert getattr(props, name).shape == (E, ant.num_joints)


def test_joint_state_round_trips_in_radians(anymal):
    anymal.reset()
    rng = np.random.default_rng(0)
    position = rng.uniform(-2.5, 2.5, (E, anymal.num_joints)).astype(np.float32)
    position[:, 0] = 2.0  # > 1 rad: a degree mix-up could not round-trip
    velocity = rng.uniform(-5, 5, (E, anymal.num_joints)).astype(np.float32)
    before = anymal.body_poses().numpy().copy()
    anymal.write_joint_state(_arr(position), _arr(velocity))
    np.testing.assert_allclose(anymal.joint_positions().numpy(), position, atol=1e-6)
    np.testing.assert_allclose(anymal.joint_velocities().numpy(), velocity, atol=1e-5)
    # Link poses follow without a step (update_articulations_kinematic); the root link is the root.
    after = anymal.body_poses().numpy()
    assert np.abs(after[:, 1:, :3] - before[:, 1:, :3]).max() > 0.01
    np.testing.assert_allclose(after[:, 0], anymal.root_pose().numpy(), atol=1e-6)
    # The engine itself holds degrees: the session API reports the same joint in degrees.
    session = _session_joint_values(anymal, "jointPosition")
    assert session[anymal.joint_names[0]] == pytest.approx(2.0 * DEG, abs=1e-3)


def test_drive_gains_read_back_si(anymal):
    before = anymal.joint_properties()
    stiffness_before = before.stiffness.numpy().copy()
    damping_before = before.damping.numpy().copy()
    stiffness = np.full((E, anymal.num_joints), 300.0, np.float32)
    damping = np.full((E, anymal.num_joints), 10.0, np.float32)
    anymal.write_joint_properties(env_ids=_ids([0, 2]), stiffness=_arr(stiffness), damping=_arr(damping))
    props = anymal.joint_properties()
    np.testing.assert_allclose(props.stiffness.numpy()[[0, 2]], 300.0, rtol=1e-6)  # not 5.236 (per degree)
    np.testing.assert_allclose(props.damping.numpy()[[0, 2]], 10.0, rtol=1e-6)
    np.testing.assert_array_equal(props.stiffness.numpy()[[1, 3]], stiffness_before[[1, 3]])
    np.testing.assert_array_equal(props.damping.numpy()[[1, 3]], damping_before[[1, 3]])
    # What USD and the session API call it: per degree.
    session = _session_joint_values(anymal, "jointStiffness")
    assert session[anymal.joint_names[0]] == pytest.approx(300.0 / DEG, rel=1e-5)


def test_prismatic_dofs_are_not_converted(cartpole):
    cart, pole = cartpole.joint_names.index("cartJoint"), cartpole.joint_names.index("poleJoint")
    stiffness = np.zeros((2, 2), np.float32)
    stiffness[:, cart], stiffness[:, pole] = 100.0, 300.0
    cartpole.write_joint_properties(stiffness=_arr(stiffness))
    np.testing.assert_allclose(cartpole.joint_properties().stiffness.numpy(), stiffness, rtol=1e-6)
    session = _session_joint_values(cartpole, "jointStiffness")
    assert session["cartJoint"] == pytest.approx(100.0, rel=1e-6)  # N/m either way
    assert session["poleJoint"] == pytest.approx(300.0 / DEG, rel=1e-5)  # N·m/deg in USD
    position = np.zeros((2, 2), np.float32)
    position[:, cart], position[:, pole] = 0.5, 1.2
    cartpole.write_joint_state(_arr(position), _arr(np.zeros((2, 2))))
    session = _session_joint_values(cartpole, "jointPosition")
    assert session["cartJoint"] == pytest.approx(0.5, abs=1e-6)
    assert session["poleJoint"] == pytest.approx(1.2 * DEG, abs=1e-3)
    limits = cartpole.joint_properties()
    assert limits.position_limit_lower.numpy()[0, cart] == pytest.approx(-3.0)  # metres, as authored
    cartpole.reset()


def test_other_joint_properties_round_trip(ant):
    props = ant.joint_properties()
    values = {
        "armature": np.full((E, ant.num_joints), 0.06, np.float32),
        "friction": np.full((E, ant.num_joints), 0.1, np.float32),
        "velocity_limit": np.full((E, ant.num_joints), 12.0, np.float32),  # rad/s
        "effort_limit": np.full((E, ant.num_joints), 80.0, np.float32),
        "position_limit_lower": props.position_limit_lower.numpy() - 0.1,  # keep the axes limited
        "position_limit_upper": props.position_limit_upper.numpy() + 0.1,
    }
    ant.write_joint_properties(**{name: _arr(v) for name, v in values.items()})
    after = ant.joint_properties()
    for name, value in values.items():
        np.testing.assert_allclose(getattr(after, name).numpy(), value, rtol=1e-6, err_msg=name)


# --- partial writes and reset ----------------------------------------------------------------------------------

_subsets = st.lists(st.integers(0, E - 1), unique=True, max_size=E)


@given(ids=_subsets, seed=st.integers(0, 2**32 - 1))
def test_partial_joint_writes_touch_only_env_ids(anymal, ids, seed):
    anymal.reset()
    rng = np.random.default_rng(seed)
    position = rng.uniform(-3, 3, (E, anymal.num_joints)).astype(np.float32)
    velocity = rng.uniform(-3, 3, (E, anymal.num_joints)).astype(np.float32)
    target = rng.uniform(-3, 3, (E, anymal.num_joints)).astype(np.float32)
    target_before = anymal.joint_position_targets().numpy().copy()
    anymal.write_joint_state(_arr(position), _arr(velocity), env_ids=_ids(ids))
    anymal.set_joint_position_target(_arr(target), env_ids=_ids(ids))
    others = [k for k in range(E) if k not in ids]
    q, qd = anymal.joint_positions().numpy(), anymal.joint_velocities().numpy()
    np.testing.assert_allclose(q[ids], position[ids], atol=1e-6)
    np.testing.assert_allclose(qd[ids], velocity[ids], atol=1e-5)
    np.testing.assert_allclose(q[others], anymal.default_joint_pos.numpy()[others], atol=1e-6)
    np.testing.assert_array_equal(qd[others], 0.0)
    targets = anymal.joint_position_targets().numpy()
    np.testing.assert_allclose(targets[ids], target[ids], atol=1e-6)
    np.testing.assert_array_equal(targets[others], target_before[others])


@given(ids=_subsets, seed=st.integers(0, 2**32 - 1))
def test_partial_root_writes_and_reset(anymal, ids, seed):
    anymal.reset()
    rng = np.random.default_rng(seed)
    pose = anymal.default_root_pose.numpy().copy()
    pose[:, :3] += rng.uniform(-1, 1, (E, 3))
    quat = rng.normal(size=(E, 4))
    pose[:, 3:] = quat / np.linalg.norm(quat, axis=1, keepdims=True)
    velocity = rng.uniform(-2, 2, (E, 6)).astype(np.float32)
    anymal.write_root_pose(_arr(pose), env_ids=_ids(ids))
    anymal.write_root_velocity(_arr(velocity), env_ids=_ids(ids))
    others = [k for k in range(E) if k not in ids]
    got = anymal.root_pose().numpy()
    np.testing.assert_allclose(got[ids, :3], pose[ids, :3], atol=1e-5)
    same_rotation = np.abs(np.sum(got[ids, 3:] * pose[ids, 3:], axis=1))  # q and -q are one rotation
    np.testing.assert_allclose(same_rotation, 1.0, atol=1e-5)
    np.testing.assert_allclose(anymal.root_velocity().numpy()[ids], velocity[ids], atol=1e-5)
    np.testing.assert_allclose(got[others], anymal.default_root_pose.numpy()[others], atol=1e-6)
    np.testing.assert_allclose(anymal.body_poses().numpy()[:, 0], got, atol=1e-5)  # links followed the root
    # Partial reset restores exactly the chosen environments.
    anymal.reset(_ids(ids))
    np.testing.assert_allclose(anymal.root_pose().numpy(), anymal.default_root_pose.numpy(), atol=1e-6)
    np.testing.assert_allclose(
        anymal.root_velocity().numpy()[ids], anymal.default_root_velocity.numpy()[ids], atol=1e-6
    )


def test_partial_reset_restores_joints_of_chosen_envs_only(anymal):
    anymal.reset()
    position = np.full((E, anymal.num_joints), 1.5, np.float32)
    anymal.write_joint_state(_arr(position), _arr(np.ones((E, anymal.num_joints))))
    anymal.reset(_ids([1, 2]))
    q, qd = anymal.joint_positions().numpy(), anymal.joint_velocities().numpy()
    np.testing.assert_allclose(q[[1, 2]], anymal.default_joint_pos.numpy()[[1, 2]], atol=1e-6)
    np.testing.assert_array_equal(qd[[1, 2]], 0.0)
    np.testing.assert_allclose(q[[0, 3]], 1.5, atol=1e-6)
    np.testing.assert_allclose(qd[[0, 3]], 1.0, atol=1e-6)
    anymal.reset(_ids([]))  # empty selection: nothing happens
    np.testing.assert_allclose(anymal.joint_positions().numpy()[[0, 3]], 1.5, atol=1e-6)


# --- frames and stepping ---------------------------------------------------------------------------------------


def _settle(backend: PhysxBackend) -> None:
    """Reset, and hold the default pose: targets at the default joint positions, no velocity target or effort."""
    zeros = wp.zeros((backend.num_envs, backend.num_joints), dtype=wp.float32)
    backend.reset()
    backend.set_joint_position_target(backend.default_joint_pos)
    backend.set_joint_velocity_target(zeros)
    backend.set_joint_effort_target(zeros)


def _com_offset(backend: PhysxBackend) -> np.ndarray:
    """The root link's authored centre of mass in its own frame (physics:centerOfMass)."""
    from pxr import Usd, UsdPhysics

    stage = Usd.Stage.Open(backend.usd_path)
    return np.array(UsdPhysics.MassAPI(stage.GetPrimAtPath(backend.root)).GetCenterOfMassAttr().Get(), np.float64)


def _rotate(quat_xyzw: np.ndarray, v: np.ndarray) -> np.ndarray:
    x, y, z, w = quat_xyzw
    u = np.array([x, y, z])
    return v + 2.0 * np.cross(u, np.cross(u, v) + w * v)


def test_root_velocity_is_world_frame_com(anymal):
    _settle(anymal)
    # World frame: yaw the root by 90 degrees, push along world x; it moves along world x.
    pose = anymal.default_root_pose.numpy().copy()
    pose[:, 3:] = [0.0, 0.0, math.sin(math.pi / 4), math.cos(math.pi / 4)]  # xyzw
    anymal.write_root_pose(_arr(pose))
    velocity = np.zeros((E, 6), np.float32)
    velocity[:, 0] = 1.0
    anymal.write_root_velocity(_arr(velocity))
    anymal.step(DT)
    moved = anymal.root_pose().numpy()[:, :3] - pose[:, :3]
    np.testing.assert_allclose(moved[:, 0], DT, rtol=0.02)
    np.testing.assert_allclose(moved[:, 1], 0.0, atol=1e-5)
    # Centre of mass: spin about z. The reported linear velocity is the finite difference of the root
    # link's COM position, not of its frame origin (0.018 m from the COM: 0.18 m/s apart at 10 rad/s).
    anymal.reset()
    com = _com_offset(anymal)
    assert np.linalg.norm(com[:2]) > 0.01
    velocity = np.zeros((E, 6), np.float32)
    velocity[:, 5] = 10.0
    anymal.write_root_velocity(_arr(velocity))
    before = anymal.root_pose().numpy().astype(np.float64)
    anymal.step(DT)
    after = anymal.root_pose().numpy().astype(np.float64)
    read = anymal.root_velocity().numpy()
    for k in range(E):
        com_before = before[k, :3] + _rotate(before[k, 3:], com)
        com_after = after[k, :3] + _rotate(after[k, 3:], com)
        # Horizontal only: vertically, gravity and the legs' pull make one step's difference a poor derivative.
        np.testing.assert_allclose(read[k, :2], (com_after[:2] - com_before[:2]) / DT, atol=0.01)
        origin_velocity = (after[k, :3] - before[k, :3]) / DT
        assert np.linalg.norm(read[k, :2] - origin_velocity[:2]) > 0.1
    np.testing.assert_allclose(read[:, 5], 10.0, rtol=0.05)
    anymal.reset()


def test_gravity_makes_the_floating_robot_fall(anymal):
    _settle(anymal)
    z0 = anymal.root_pose().numpy()[:, 2].copy()
    for _ in range(20):
        anymal.step()  # default dt
    drop = z0 - anymal.root_pose().numpy()[:, 2]
    # Free fall for 0.1 s: 0.5 * 9.81 * 0.1^2 = 0.049 m (semi-implicit Euler: 0.052 m).
    np.testing.assert_allclose(drop, 0.051, atol=0.004)
    assert np.all(anymal.root_velocity().numpy()[:, 2] < -0.9)
    anymal.reset()


def test_pd_position_targets_pull_joints_toward_targets(anymal):
    _settle(anymal)
    gains = np.ones((E, anymal.num_joints), np.float32)
    anymal.write_joint_properties(stiffness=_arr(300.0 * gains), damping=_arr(10.0 * gains))
    offset = np.where(np.arange(anymal.num_joints) % 2 == 0, 0.4, -0.4).astype(np.float32)
    target = anymal.default_joint_pos.numpy() + offset
    anymal.set_joint_position_target(_arr(target))
    for _ in range(60):
        anymal.step(DT)
    error = np.abs(anymal.joint_positions().numpy() - target)
    assert error.max() < 0.1, error  # started 0.4 away
    _settle(anymal)


def test_ground_plane_and_spawn_offset_stand_the_robot_and_leave_the_asset_untouched():
    path = _anymal_path()
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    mtime = path.stat().st_mtime_ns
    with PhysxBackend(
        path,
        num_envs=2,
        ground_height=0.0,
        spawn_offset=(0.0, 0.0, 0.66),  # ANYmal C's base is authored at z = 0, its legs below
        drive_stiffness=300.0,
        drive_damping=10.0,
        solver_position_iterations=4,
        solver_velocity_iterations=0,
    ) as backend:
        assert any("ground plane" in note for note in backend.scene_notes)
        np.testing.assert_allclose(backend.default_root_pose.numpy()[:, 2], 0.66, atol=1e-6)  # clones too
        assert backend.joint_properties().stiffness.numpy()[0, 0] == pytest.approx(300.0)
        backend.set_joint_position_target(backend.default_joint_pos)
        for _ in range(200):  # 1 s; free fall would end at z = -4.2
            backend.step(DT)
        z = backend.root_pose().numpy()[:, 2]
        assert np.all((z > 0.4) & (z < 0.7)), z  # standing on straight legs
    assert hashlib.sha256(path.read_bytes()).hexdigest() == digest
    assert path.stat().st_mtime_ns == mtime


def test_drive_gains_by_name_and_per_dof():
    stiffness = {"front_left_leg": 50.0, "right_back_foot": 70.0}
    with PhysxBackend(ANT, drive_stiffness=stiffness, drive_damping=list(range(8))) as backend:
        props = backend.joint_properties()
        assert props.stiffness.numpy()[0, backend.joint_names.index("front_left_leg")] == pytest.approx(50.0)
        assert props.stiffness.numpy()[0, backend.joint_names.index("right_back_foot")] == pytest.approx(70.0)
        np.testing.assert_allclose(props.damping.numpy()[0], np.arange(8), rtol=1e-6)
        with pytest.raises(KeyError, match="unknown DoF names"):
            backend._per_dof({"nope": 1.0}, "drive_stiffness", "stiffness")


# --- errors ----------------------------------------------------------------------------------------------------


def test_writers_reject_bad_arrays(anymal):
    D = anymal.num_joints
    good = wp.zeros((E, D), dtype=wp.float32)
    with pytest.raises(ValueError, match=r"expected shape \(4, 12\)"):
        anymal.set_joint_position_target(wp.zeros((E - 1, D), dtype=wp.float32))
    with pytest.raises(ValueError, match=r"expected shape \(4, 7\)"):
        anymal.write_root_pose(wp.zeros((E, 6), dtype=wp.float32))
    with pytest.raises(TypeError, match="float32"):
        anymal.write_joint_state(wp.zeros((E, D), dtype=wp.float64), good)
    with pytest.raises(TypeError, match="wp.array"):
        anymal.set_joint_effort_target(np.zeros((E, D), np.float32))
    with pytest.raises(IndexError, match=r"out of range \[0, 4\)"):
        anymal.set_joint_velocity_target(good, env_ids=_ids([0, 4]))
    with pytest.raises(IndexError, match="out of range"):
        anymal.reset(_ids([-1]))
    with pytest.raises(TypeError, match="int32"):
        anymal.write_root_velocity(wp.zeros((E, 6), dtype=wp.float32), env_ids=wp.array([0, 1], dtype=wp.int64))
    with pytest.raises(ValueError, match="repeat"):
        anymal.set_joint_position_target(good, env_ids=_ids([1, 1]))
    with pytest.raises(TypeError, match="unknown properties"):
        anymal.write_joint_properties(stifness=good)
    with pytest.raises(ValueError, match="dt"):
        anymal.step(0.0)


def test_unknown_root_lists_the_roots_found():
    with pytest.raises(LookupError, match=r"/anymal/base"):
        PhysxBackend(_anymal_path(), root="/anymal/nope")


def test_several_articulations_need_a_root():
    if not TWO_ARTICULATIONS.is_file():
        pytest.skip("ovphysx sample two_articulations.usda not shipped")
    with pytest.raises(LookupError, match=r"/World/articulation'?, '?/World/articulation2"):
        PhysxBackend(TWO_ARTICULATIONS, num_envs=2)


def test_missing_file():
    with pytest.raises(FileNotFoundError, match="no_such_robot.usda"):
        PhysxBackend("/nonexistent/no_such_robot.usda")


def test_bad_arguments():
    with pytest.raises(ValueError, match="num_envs"):
        PhysxBackend(ANT, num_envs=0)
    with pytest.raises(ValueError, match="device"):
        PhysxBackend(ANT, device="tpu")


def test_missing_engine_names_the_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "ovphysx", None)  # what `import ovphysx` sees when it is not installed
    with pytest.raises(ImportError, match=r"pip install 'transfer\[physx\]'"):
        PhysxBackend(ANT)


def test_import_does_not_load_the_engine():
    code = (
        "import sys, transfer.backends.physx\n"
        "print([m for m in ('ovphysx', 'ovstage', 'pxr', 'newton', 'torch') if m in sys.modules])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip().splitlines()[-1] == "[]"


def test_contact_forces_on_a_standing_robot_carry_its_weight():
    """Issue 32: PhysX reports the contact force on each link (its contact sensors, read through ovphysx's session
    API): on the demo quadruped standing still in 2 envs, each env's vertical forces sum to its weight, the feet
    carry it, the other links nothing; each env reads its own clone."""
    from transfer.backends.scene import DEFAULT_GROUND, SceneDescription

    path = Path(__file__).resolve().parents[1] / "transfer/data/quadruped.usda"
    legs = ("LF", "LH", "RF", "RH")
    pose = {f"{leg}_HFE": 0.5 for leg in legs} | {f"{leg}_KFE": -1.0 for leg in legs}
    scene = SceneDescription(ground=DEFAULT_GROUND, spawn_height=0.5, joint_positions=pose)
    with PhysxBackend(path, num_envs=2, drive_stiffness=40.0, drive_damping=2.0, scene=scene) as b:
        assert b.contact_forces(np.arange(b.num_bodies)).shape == (2, b.num_bodies, 3)  # before a step: all zero
        b.set_joint_position_target(b.default_joint_pos)
        for _ in range(600):  # 3 s: settled
            b.step(0.005)
        forces = b.contact_forces(np.arange(b.num_bodies))
        weight = float(b.body_masses().numpy()[0].sum()) * 9.81
        np.testing.assert_allclose(forces[..., 2].sum(axis=1), weight, rtol=0.02)
        feet = [b.body_names.index(f"{leg}_SHANK") for leg in legs]
        others = [i for i in range(b.num_bodies) if i not in feet]
        assert (forces[:, feet, 2] > 0.1 * weight / 4).all() and np.abs(forces[:, others]).max() < 1e-6
        pose = b.root_pose().numpy().copy()
        pose[1, 2] += 3.0
        b.write_root_pose(wp.array(pose, dtype=wp.float32), wp.array([1], dtype=wp.int32))
        b.step(0.005)
        lifted = b.contact_forces(feet)
        assert np.abs(lifted[1]).max() < 1e-6 and lifted[0, :, 2].sum() > 0.5 * weight  # env 1 in the air alone
