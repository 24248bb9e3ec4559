"""The MuJoCo backend (issue 30) against the backend contract, on generated MJCF robots: MuJoCo C itself, no mocks.

- its own order is ``mujoco.MjModel``'s (and the ``mujoco`` convention's emulation of it);
- arrays follow the public order it is given; root and body states are the contract's (COM velocities, world
  frame, xyzw), written and read back;
- a motor becomes ideal PD with the motor's force range; a position actuator takes the task's gains; a joint
  with no actuator is refused, naming it; a USD file with no robot source is refused;
- the scene: a ground plane added when the file has none, the spawn height and pose, a fixed base;
- environments stepped on threads give the same run as one thread.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

mujoco = pytest.importorskip("mujoco")
pytest.importorskip("warp")

from transfer.backends.scene import DEFAULT_GROUND, SceneDescription  # noqa: E402

LEGS = ("LF", "RF", "LH", "RH")


def quadruped(
    tmp_path: Path,
    *,
    position_actuators: bool = False,
    unactuated: str | None = None,
    com_offset: float = 0.0,
    plane: bool = False,
) -> Path:
    """A small quadruped MJCF: a free box base, four legs of hip and knee hinges driven by motors (gear 10,
    ctrlrange +-2: 20 N·m) or by position actuators (kp 30, kv 1)."""
    legs, acts = [], []
    for leg in LEGS:
        x, y = (0.25 if leg[1] == "F" else -0.25), (0.12 if leg[0] == "L" else -0.12)
        legs.append(f"""
        <body name="{leg}_thigh" pos="{x} {y} 0">
          <joint name="{leg}_hip" type="hinge" axis="0 1 0" range="-1.5 1.5"/>
          <geom type="capsule" fromto="0 0 -0.08 0 0 -0.2" size="0.02" mass="0.5"/>
          <body name="{leg}_shank" pos="0 0 -0.2">
            <joint name="{leg}_knee" type="hinge" axis="0 1 0" range="-2.5 0"/>
            <geom type="capsule" fromto="0 0 0 0 0 -0.2" size="0.02" mass="0.3"/>
          </body>
        </body>""")
        for j in ("hip", "knee"):
            name = f"{leg}_{j}"
            if name == unactuated:
                continue
            acts.append(
                f'<position joint="{name}" kp="30" kv="1"/>'
                if position_actuators
                else f'<motor joint="{name}" gear="10" ctrlrange="-2 2"/>'
            )
    ground = '<geom name="floor" type="plane" size="5 5 0.1"/>' if plane else ""
    xml = f"""<mujoco model="quad">
  <compiler angle="radian"/>
  <option timestep="0.005"/>
  <worldbody>{ground}
    <body name="base" pos="0 0 0.5">
      <freejoint name="root"/>
      <geom type="box" size="0.3 0.15 0.05" pos="{com_offset} 0 0" mass="6"/>{"".join(legs)}
    </body>
  </worldbody>
  <actuator>{"".join(acts)}</actuator>
</mujoco>"""
    path = tmp_path / "quad.xml"
    path.write_text(xml)
    return path


def _backend(path, **kwargs):
    from transfer.backends.mujoco.backend import MujocoBackend

    return MujocoBackend(path, **kwargs)


def test_its_own_order_is_mjmodel_order_and_the_mujoco_conventions(tmp_path):
    from transfer.robot.assets.mjcf import mujoco_joint_names

    path = quadruped(tmp_path)
    m = mujoco.MjModel.from_xml_path(str(path))
    truth = tuple(m.joint(j).name for j in range(m.njnt) if m.jnt_type[j] != 0)
    b = _backend(path)
    try:
        assert b.joint_names == truth == mujoco_joint_names(path)
        assert b.body_names == tuple(m.body(i).name for i in range(1, m.nbody))
        (order,) = type(b).engine_orders(path)
        assert order.joints == truth and order.fixed_base is False and order.engine == "mujoco"
    finally:
        b.close()


def test_arrays_follow_the_public_order_and_states_round_trip(tmp_path):
    path = quadruped(tmp_path, com_offset=0.1)
    order = ("RH_knee", "LF_hip", "RF_knee", "LH_hip", "LF_knee", "RH_hip", "LH_knee", "RF_hip")
    bodies = ("base", "RH_shank", "LF_thigh", "RF_shank", "LH_thigh", "LF_shank", "RH_thigh", "LH_shank", "RF_thigh")
    b = _backend(path, num_envs=2, joint_order=order, body_order=bodies)
    try:
        assert b.joint_names == order and b.body_names == bodies
        q = np.array([[0.1 * (i + 1) * (-1) ** i for i in range(8)]] * 2, np.float32)
        q[:, [0, 2, 4, 6]] = -np.abs(q[:, [0, 2, 4, 6]])  # knees within [-2.5, 0]
        v = np.arange(16, dtype=np.float32).reshape(2, 8) / 10
        b.write_joint_state(q, v)
        np.testing.assert_allclose(b.joint_positions().numpy(), q, atol=1e-6)
        np.testing.assert_allclose(b.joint_velocities().numpy(), v, atol=1e-6)
        d = b.datas[1]
        assert d.qpos[7 + 2 * LEGS.index("RH") + 1] == pytest.approx(q[1, 0])  # RH_knee in MuJoCo's own column
        half = np.sqrt(0.5)
        pose = np.array([[0.0, 0.0, 0.6, 0.0, 0.0, half, half], [1.0, 2.0, 0.7, 0.0, 0.0, 0.0, 1.0]], np.float32)
        vel = np.array([[0.5, -0.2, 0.1, 0.0, 0.0, 1.5], [0.0, 0.3, 0.0, 0.4, 0.0, -0.2]], np.float32)
        b.write_root_pose(pose)
        b.write_root_velocity(vel)
        np.testing.assert_allclose(b.root_pose().numpy(), pose, atol=1e-6)
        np.testing.assert_allclose(b.root_velocity().numpy(), vel, atol=1e-5)  # COM velocity, world frame
        np.testing.assert_allclose(b.body_poses().numpy()[:, 0], pose, atol=1e-6)
        np.testing.assert_allclose(b.body_velocities().numpy()[:, 0], vel, atol=1e-5)
    finally:
        b.close()


def test_a_motor_is_ideal_pd_within_its_force_range(tmp_path):
    path = quadruped(tmp_path)
    b = _backend(path, scene=SceneDescription(fixed_base=True))
    try:
        props = b.joint_properties()
        np.testing.assert_allclose(props.effort_limit.numpy(), 20.0)  # gear 10 x ctrlrange 2
        n = b.num_joints
        b.write_joint_properties(stiffness=np.full((1, n), 40.0, np.float32), damping=np.full((1, n), 2.0, np.float32))
        target = np.zeros((1, n), np.float32)
        target[0, list(b.joint_names).index("LF_hip")] = -0.5  # swung forward, clear of the base
        b.set_joint_position_target(target)
        for _ in range(400):
            b.step(0.005)
        q = b.joint_positions().numpy()[0]
        assert q[list(b.joint_names).index("LF_hip")] == pytest.approx(-0.5, abs=0.05)  # gravity sags it a little
        d, m = b.datas[0], b.models[0]
        assert np.abs(d.actuator_force).max() <= 20.0 + 1e-6
        assert b.joint_properties().stiffness.numpy()[0] == pytest.approx([40.0] * n)
        assert b.fixed_base and m.njnt == n  # the free joint is gone: a fixed base
    finally:
        b.close()


def test_position_actuators_take_the_gains_written(tmp_path):
    b = _backend(quadruped(tmp_path, position_actuators=True))
    try:
        np.testing.assert_allclose(b.joint_properties().stiffness.numpy(), 30.0)
        np.testing.assert_allclose(b.joint_properties().damping.numpy(), 1.0)
        b.write_joint_properties(stiffness=np.full((1, 8), 55.0, np.float32))
        m = b.models[0]
        assert m.actuator_gainprm[:, 0] == pytest.approx([55.0] * 8) and m.actuator_biasprm[:, 1] == pytest.approx(
            [-55.0] * 8
        )
    finally:
        b.close()


def test_a_joint_without_an_actuator_and_a_usd_without_a_robot_are_refused(tmp_path):
    with pytest.raises(ValueError, match=r"joints \['RF_knee'\] have no actuator"):
        _backend(quadruped(tmp_path, unactuated="RF_knee"))
    usd = tmp_path / "robot.usda"
    usd.write_text("#usda 1.0\n")
    pytest.importorskip("newton")
    with pytest.raises(ValueError, match="No articulation in .*robot.usda"):  # before Newton is asked to export it
        _backend(usd)
    with pytest.raises(ValueError, match="CPU only"):
        _backend(quadruped(tmp_path), device="cuda:0")


def test_the_scene_adds_a_ground_spawns_the_pose_and_the_robot_stands_on_it(tmp_path):
    path = quadruped(tmp_path)
    knees = {f"{leg}_knee": -0.8 for leg in LEGS} | {f"{leg}_hip": 0.4 for leg in LEGS}
    scene = SceneDescription(ground=DEFAULT_GROUND, spawn_height=0.45, joint_positions=knees)
    b = _backend(path, scene=scene)
    try:
        assert any("ground plane added" in n for n in b.notes)
        q0 = dict(zip(b.joint_names, b.default_joint_pos.numpy()[0], strict=True))
        assert q0["LF_knee"] == pytest.approx(-0.8) and q0["RH_hip"] == pytest.approx(0.4)
        assert b.root_pose().numpy()[0, 2] == pytest.approx(0.45)
        n = b.num_joints
        b.write_joint_properties(stiffness=np.full((1, n), 60.0, np.float32), damping=np.full((1, n), 2.0, np.float32))
        b.set_joint_position_target(b.default_joint_pos.numpy())
        for _ in range(400):
            b.step(0.005)
        z = b.root_pose().numpy()[0, 2]
        assert 0.15 < z < 0.45  # it came down onto the plane and stands on it (it would fall forever without one)
    finally:
        b.close()
    with_plane = _backend(quadruped(tmp_path, plane=True), scene=scene)
    try:
        assert not any("ground plane added" in n for n in with_plane.notes)
        assert with_plane.models[0].ngeom == 10  # the file's own floor, none added
    finally:
        with_plane.close()


@pytest.mark.parametrize("threads", [2, 3])
def test_threads_and_batched_steps_give_the_run_one_thread_gives(tmp_path, threads):
    """Envs stepped on threads (``threads``, the caller's own among them) and a policy step's physics steps in one
    ``steps(4)`` call give bit for bit the run of one thread stepping one ``step`` at a time."""
    from transfer.backends.mujoco.backend import THREADED_ENVS, _default_threads

    path = quadruped(tmp_path)
    scene = SceneDescription(ground=DEFAULT_GROUND, spawn_height=0.5)
    rng = np.random.default_rng(0)
    targets = rng.uniform(-0.5, 0.0, (30, 3, 8)).astype(np.float32)
    runs = []
    for threads_, batched in ((1, False), (threads, True), (threads, False)):
        b = _backend(path, num_envs=3, scene=scene, threads=threads_)
        try:
            assert (b._pool is None) == (threads_ == 1)
            b.write_joint_properties(
                stiffness=np.full((3, 8), 30.0, np.float32), damping=np.full((3, 8), 1.0, np.float32)
            )
            for t in targets:
                b.set_joint_position_target(t)
                if batched:
                    b.steps(4, 0.005)
                for _ in range(0 if batched else 4):
                    b.step(0.005)
            runs.append((b.joint_positions().numpy().copy(), b.root_pose().numpy().copy()))
        finally:
            b.close()
    for other in runs[1:]:
        np.testing.assert_array_equal(runs[0][0], other[0])
        np.testing.assert_array_equal(runs[0][1], other[1])
    assert not np.allclose(runs[0][0][0], runs[0][0][1])  # the envs did differ
    assert _default_threads(THREADED_ENVS - 1) == 1 and _default_threads(THREADED_ENVS) >= 1


def test_masses_are_per_env_and_inertia_scales(tmp_path):
    b = _backend(quadruped(tmp_path), num_envs=2)
    try:
        masses = b.body_masses().numpy()
        inertia = b.body_inertias().numpy()
        heavier = masses.copy()
        heavier[1, 0] += 6.0
        b.write_body_masses(heavier)
        np.testing.assert_allclose(b.body_masses().numpy(), heavier, rtol=1e-6)
        np.testing.assert_allclose(b.body_inertias().numpy()[1, 0], inertia[1, 0] * 2.0, rtol=1e-5)
        np.testing.assert_allclose(b.body_inertias().numpy()[0, 0], inertia[0, 0], rtol=1e-6)
    finally:
        b.close()


@pytest.mark.engines
def test_the_physx_trained_demo_policy_walks_on_mujoco_on_its_mjcf(converters, capsys):
    """Issue 30: a PhysX-trained checkpoint replayed with ``--target mujoco`` on its robot's MJCF walks as it does
    natively; fed MuJoCo's own order (the naive control) it falls."""
    import json

    pytest.importorskip("ovphysx")
    from transfer.cli import main

    args = [
        "replay",
        "checkpoints/quadruped_flat_physx/exported/policy.pt",
        "--target",
        "mujoco",
        "--asset",
        "transfer:quadruped.xml",
        "--compare",
        "--num-envs",
        "2",
        "--seconds",
        "3",
        "--json",
    ]
    assert main(args) == 0
    native, reordered, naive = json.loads(capsys.readouterr().out)["runs"]
    assert native["label"] == "native (physx)" and reordered["label"] == "reordered (mujoco)"
    assert native["forward_velocity"] > 0.3 and reordered["fall_fraction"] == 0.0
    assert reordered["forward_velocity"] / native["forward_velocity"] > 0.85
    assert naive["fall_fraction"] == 1.0


@pytest.mark.engines
def test_a_usd_robot_without_mjcf_steps_as_the_model_newton_builds_of_it(tmp_path, monkeypatch):
    """Issue 30: a USD robot with no MJCF of its own runs on MuJoCo C through the MuJoCo model Newton builds of it,
    exported once and cached: its joints and bodies by their prims' names, in Newton's (mjwarp) order, colliding
    with the ground; a second backend reads the cached file."""
    pytest.importorskip("newton")
    from transfer.backends.mujoco import from_usd
    from transfer.orders import resolve_ordering

    monkeypatch.setattr(from_usd, "_cache_root", lambda: tmp_path / "cache")  # (not XDG_CACHE_HOME: Warp's own)
    usd = Path(__file__).resolve().parents[1] / "transfer/data/quadruped.usda"
    order = resolve_ordering(usd, "mjwarp")
    scene = SceneDescription(ground=DEFAULT_GROUND, spawn_height=0.5)
    b = _backend(usd, scene=scene)
    try:
        assert b.joint_names == order.joints and b.body_names == order.bodies
        assert any("as the MuJoCo model Newton builds" in n for n in b.notes)
        b.set_joint_position_target(b.default_joint_pos)
        b.write_joint_properties(
            stiffness=np.full((1, 12), 40.0, np.float32), damping=np.full((1, 12), 2.0, np.float32)
        )
        for _ in range(400):
            b.step(0.005)
        height = float(b.root_pose().numpy()[0, 2])
        assert 0.2 < height < 0.6, height  # stands on the ground: neither fell through it nor flew off
    finally:
        b.close()
    exported = list((tmp_path / "cache").rglob("quadruped.xml"))
    assert len(exported) == 1
    calls = []
    monkeypatch.setattr(from_usd, "_export", lambda usd: calls.append(usd) or "")
    _backend(usd, scene=scene).close()
    assert calls == []  # read from the cache
    # A fresh process that finds the export cached never imports Newton (issue 33: its import alone takes ~3 s).
    xdg = tmp_path / "xdg"
    shutil.copytree(tmp_path / "cache", xdg / "transfer" / "mujoco-from-usd")
    probe = "import sys; from transfer.backends.mujoco.model import robot_file; print(robot_file(sys.argv[1]).name, 'newton' in sys.modules)"
    done = subprocess.run(
        [sys.executable, "-c", probe, str(usd)],
        env={**os.environ, "XDG_CACHE_HOME": str(xdg)},
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout.split() == ["quadruped.xml", "False"], done.stderr


@pytest.mark.engines
@pytest.mark.parametrize(("checkpoint", "source"), [("physx_anymal.pt", "physx"), ("mjw_anymal.pt", "mjwarp")])
def test_the_shared_anymal_checkpoints_transfer_to_mujoco_on_its_usd(anymal_files, capsys, checkpoint, source):
    """Issue 30's acceptance: the shared ANYmal C checkpoints (trained on PhysX and on MuJoCo-Warp) replayed with
    ``--target mujoco`` on the robot's USD (no MJCF exists: the model Newton builds) walk at >= 0.8x native, no
    falls (measured: 0.99x and 0.95x)."""
    import json

    pytest.importorskip("ovphysx")
    pytest.importorskip("newton")
    from transfer.cli import main

    folder = anymal_files["mjw_pt"].parent
    args = [
        "replay",
        str(folder / checkpoint),
        "--target",
        "mujoco",
        "--source",
        source,
        "--config",
        "presets/tasks/anymal_c_flat_velocity.yaml",
        "--asset",
        str(anymal_files["asset"]),
        "--compare",
        "--num-envs",
        "2",
        "--seconds",
        "4",
        "--json",
    ]
    assert main(args) == 0
    native, reordered, _ = json.loads(capsys.readouterr().out)["runs"]
    assert native["fall_fraction"] == 0.0 and reordered["fall_fraction"] == 0.0
    assert reordered["forward_velocity"] / native["forward_velocity"] >= 0.8, (native, reordered)


def test_contact_forces_on_a_standing_robot_carry_its_weight():
    """Issue 32: MuJoCo reports its contact forces (``Backend.contact_forces``): on the demo quadruped standing
    still, the vertical forces on its bodies sum to its weight, and its base, held up by the legs, carries none."""
    path = Path(__file__).resolve().parents[1] / "transfer/data/quadruped.xml"
    pose = {f"{leg}_HFE": 0.5 for leg in LEGS} | {f"{leg}_KFE": -1.0 for leg in LEGS}
    b = _backend(
        path, num_envs=2, scene=SceneDescription(ground=DEFAULT_GROUND, spawn_height=0.5, joint_positions=pose)
    )
    try:
        n = b.num_joints
        b.write_joint_properties(stiffness=np.full((2, n), 40.0, np.float32), damping=np.full((2, n), 2.0, np.float32))
        b.set_joint_position_target(b.default_joint_pos)
        b.steps(600, 0.005)  # 3 s: settled
        forces = b.contact_forces(np.arange(b.num_bodies))
        assert forces.shape == (2, b.num_bodies, 3)
        weight = float(b.models[0].body_mass[1:].sum()) * 9.81
        np.testing.assert_allclose(forces[..., 2].sum(axis=1), weight, rtol=0.02)
        assert np.abs(forces[:, b.body_names.index("base")]).max() < 1e-6
        feet = [b.body_names.index(f"{leg}_SHANK") for leg in LEGS]
        assert (forces[:, feet, 2] > 0.1 * weight / 4).all()  # each foot carries its share
    finally:
        b.close()


def test_an_unset_position_limit_keeps_that_sides_own_limit(tmp_path):
    """Issue 46's slip: a position limit written as not finite (the contract's "unlimited") kept the *lower* limit in
    the upper column, locking the joint at its lower limit; each side keeps its own."""
    import numpy as np
    import warp as wp

    from transfer.backends.base import UNLIMITED

    b = _backend(quadruped(tmp_path))
    props = b.joint_properties()
    lower, upper = props.position_limit_lower.numpy().copy(), props.position_limit_upper.numpy().copy()
    assert (upper > lower).all()
    b.write_joint_properties(
        position_limit_upper=wp.array(np.full_like(upper, UNLIMITED), dtype=wp.float32),
        position_limit_lower=wp.array(np.full_like(lower, -UNLIMITED), dtype=wp.float32),
    )
    after = b.joint_properties()
    np.testing.assert_allclose(after.position_limit_upper.numpy(), upper)
    np.testing.assert_allclose(after.position_limit_lower.numpy(), lower)


@pytest.fixture(scope="module")
def floating_quadruped():
    path = Path(__file__).resolve().parents[1] / "transfer/data/quadruped.xml"
    backend = _backend(path, num_envs=2, scene=SceneDescription(ground=DEFAULT_GROUND, spawn_height=0.5))
    yield backend
    backend.close()


@settings(max_examples=40, deadline=None)
@given(
    state=st.lists(st.floats(-3.0, 3.0, allow_nan=False), min_size=13, max_size=13),
    quat=st.lists(st.floats(-1.0, 1.0, allow_nan=False), min_size=4, max_size=4).filter(
        lambda q: float(np.linalg.norm(q)) > 0.1
    ),
)
def test_a_free_roots_state_read_from_its_joint_equals_the_kinematics(floating_quadruped, state, quat):
    """Issue 47: the root's pose and velocity of a floating robot come from its free joint's ``qpos``/``qvel``,
    without a kinematics pass per env; on any state (a quaternion not of unit length too) they equal what MuJoCo's
    kinematics and ``mj_objectVelocity`` give: the frame origin, the unit quaternion, the angular velocity in the
    world frame and the linear velocity at the centre of mass."""
    b = floating_quadruped
    m, d = b.models[1], b.datas[1]
    f, v = b._free, b._free_dof
    m.body_ipos[b._root] = (0.05, -0.02, 0.03)  # the centre of mass off the frame's origin (the envs' shared model)
    m.body_sameframe[b._root] = 0  # compiled as "the same frame": MuJoCo would skip the offset
    d.qpos[f : f + 3], d.qpos[f + 3 : f + 7] = state[:3], quat
    d.qvel[v : v + 6] = state[3:9]
    d.qpos[b._qadr[:4]] = state[9:13]
    b._stale = True
    b._snapshot.written()  # state and model written behind the backend: read them again
    pose, velocity = b.root_pose().numpy()[1].copy(), b.root_velocity().numpy()[1].copy()
    mujoco.mj_kinematics(m, d)
    mujoco.mj_comPos(m, d)
    mujoco.mj_comVel(m, d)
    r = b._root
    expected = np.zeros(6)
    mujoco.mj_objectVelocity(m, d, mujoco.mjtObj.mjOBJ_BODY, r, expected, 0)
    np.testing.assert_allclose(pose[:3], d.xpos[r], atol=1e-5)
    np.testing.assert_allclose(pose[3:], np.r_[d.xquat[r][1:], d.xquat[r][:1]], atol=1e-5)
    np.testing.assert_allclose(velocity, np.r_[expected[3:], expected[:3]], atol=1e-4)


@pytest.fixture(scope="module")
def threaded_quadruped():
    path = Path(__file__).resolve().parents[1] / "transfer/data/quadruped.xml"
    backend = _backend(path, num_envs=5, threads=2, scene=SceneDescription(ground=DEFAULT_GROUND, spawn_height=0.5))
    yield backend
    backend.close()


_ACTIONS = st.one_of(
    st.tuples(st.just("steps"), st.integers(1, 3)),
    st.tuples(st.just("reset"), st.lists(st.integers(0, 4), max_size=5, unique=True)),
    st.tuples(st.just("joints"), st.lists(st.integers(0, 4), max_size=5, unique=True)),
    st.tuples(st.just("root"), st.lists(st.integers(0, 4), max_size=5, unique=True)),
    st.tuples(st.just("frames"), st.none()),
)


@settings(max_examples=30, deadline=None)
@given(actions=st.lists(_ACTIONS, min_size=1, max_size=6), seed=st.integers(0, 2**16))
def test_the_reads_follow_every_step_and_write_of_every_env(threaded_quadruped, actions, seed):
    """Issue 47: the reads of ``qpos``/``qvel`` come from a snapshot the stepping threads take after their steps (and
    taken again after a write), and the body frames from the threads' ``mj_kinematics`` at a step that follows a read
    of them; after any mix of steps, resets, frame reads and written joint and root states, of some envs or all, every
    read equals what each env's own ``MjData`` holds."""
    b, rng = threaded_quadruped, np.random.default_rng(seed)
    n, j = b.num_envs, b.num_joints
    for kind, arg in actions:
        ids = None if kind in ("steps", "frames") or len(arg) == n else np.asarray(arg, np.int32)
        if kind == "steps":
            b.steps(arg)
        elif kind == "reset":
            b.reset(ids)
        elif kind == "joints":
            q = b.joint_positions().numpy() + rng.uniform(-0.2, 0.2, (n, j)).astype(np.float32)
            b.write_joint_state(q, rng.uniform(-1, 1, (n, j)).astype(np.float32), env_ids=ids)
        elif kind == "frames":
            b.body_poses()
        else:
            pose = b.root_pose().numpy().copy()
            pose[:, 2] += 0.1
            b.write_root_pose(pose, env_ids=ids)
    pos, vel = b.joint_positions().numpy(), b.joint_velocities().numpy()
    pose, velocity = b.root_pose().numpy(), b.root_velocity().numpy()
    frames = b.body_poses().numpy().copy()
    for e, (m, d) in enumerate(zip(b.models, b.datas, strict=True)):
        np.testing.assert_array_equal(pos[e], d.qpos[b._qadr].astype(np.float32))
        np.testing.assert_array_equal(vel[e], d.qvel[b._dadr].astype(np.float32))
        mujoco.mj_kinematics(m, d)
        mujoco.mj_comPos(m, d)
        mujoco.mj_comVel(m, d)
        expected = np.zeros(6)
        mujoco.mj_objectVelocity(m, d, mujoco.mjtObj.mjOBJ_BODY, b._root, expected, 0)
        np.testing.assert_allclose(pose[e, :3], d.xpos[b._root], atol=1e-6)
        np.testing.assert_allclose(velocity[e], np.r_[expected[3:], expected[:3]], atol=1e-4)
        np.testing.assert_array_equal(frames[e, :, :3], d.xpos[b._bid].astype(np.float32))
        np.testing.assert_array_equal(frames[e, :, 3:], np.roll(d.xquat[b._bid], -1, axis=1).astype(np.float32))


def test_frames_computed_by_the_stepping_threads_leave_the_run_as_it_was():
    """Body frames read after every policy step are computed by the stepping threads (``mj_kinematics`` after the
    steps); the next step computes them again from ``qpos``, so the run is the one without reads, to the bit, and each
    read is what MuJoCo's own kinematics give."""
    path = Path(__file__).resolve().parents[1] / "transfer/data/quadruped.xml"
    targets = np.random.default_rng(1).uniform(-0.4, 0.2, (25, 3, 12)).astype(np.float32)
    runs = []
    for read in (False, True):
        b = _backend(path, num_envs=3, threads=2, scene=SceneDescription(ground=DEFAULT_GROUND, spawn_height=0.5))
        try:
            for k, t in enumerate(targets):
                b.set_joint_position_target(t)
                b.steps(4)
                if read:
                    frames = b.body_poses().numpy()
                    assert b._snapshot._kinematics == (k > 0)  # from the second step on: the threads'
                    for e, (m, d) in enumerate(b._pairs):
                        xpos = d.xpos[b._bid].copy()
                        mujoco.mj_kinematics(m, d)
                        np.testing.assert_array_equal(xpos, d.xpos[b._bid])  # computed already, at this state
                        np.testing.assert_array_equal(frames[e, :, :3], xpos.astype(np.float32))
            runs.append((b.joint_positions().numpy().copy(), b.root_velocity().numpy().copy()))
        finally:
            b.close()
    np.testing.assert_array_equal(runs[0][0], runs[1][0])
    np.testing.assert_array_equal(runs[0][1], runs[1][1])


_WRITES = st.tuples(
    st.sampled_from(["stiffness", "mass"]),
    st.lists(st.integers(0, 3), min_size=1, max_size=4, unique=True),
    st.lists(st.sampled_from([20.0, 40.0]), min_size=4, max_size=4),
)


@settings(max_examples=30, deadline=None)
@given(writes=st.lists(_WRITES, min_size=1, max_size=6))
def test_envs_share_a_model_while_alike_and_each_keeps_what_was_written_to_it(tmp_path_factory, writes):
    """Issue 47: envs step one shared ``MjModel`` until a write makes one differ; after any mix of gains and masses
    written to some envs or all (alike or not), each env's model holds exactly what was written to it, and a write
    of the same values to every env leaves them on one model."""
    b = _backend(quadruped(tmp_path_factory.mktemp("q"), position_actuators=True), num_envs=4)
    try:
        assert len({id(m) for m in b.models}) == 1
        gains = np.full((4, b.num_joints), 30.0)
        masses = b.body_masses().numpy().astype(np.float64)
        for kind, envs, per_env in writes:
            value = np.asarray(per_env)[:, None]
            if kind == "stiffness":
                rows = np.repeat(value, b.num_joints, axis=1).astype(np.float32)
                b.write_joint_properties(np.asarray(envs, np.int32), stiffness=rows)
                gains[envs] = rows[envs]
            else:
                rows = masses.copy()
                rows[:, 0] = value[:, 0]
                b.write_body_masses(rows.astype(np.float32), env_ids=np.asarray(envs, np.int32))
                masses[envs] = rows[envs]
        for e, m in enumerate(b.models):
            np.testing.assert_allclose(m.actuator_gainprm[b._act, 0], gains[e])
            np.testing.assert_allclose(m.body_mass[b._bid], masses[e], rtol=1e-6)
        models = len({id(m) for m in b.models})
        b.write_joint_properties(stiffness=np.full((4, b.num_joints), 50.0, np.float32))
        assert len({id(m) for m in b.models}) == models  # written alike: no env copied
    finally:
        b.close()
