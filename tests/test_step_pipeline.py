"""The public-order step on Newton (real engine): commands scattered, solver stepped and state republished in one
call; direct launches on the CPU, one CUDA graph on a GPU, with fixed state buffers wherever a graph is recorded."""

from __future__ import annotations

import traceback
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import shared_asset
from tests.warp_helpers import needs_cuda

newton = pytest.importorskip("newton")
wp = pytest.importorskip("warp")

import transfer  # noqa: E402
from transfer.backends.newton import NewtonBackend  # noqa: E402

ANYMAL = "anybotics_anymal_c/usd/anymal_c.usda"
STAND = (0.0, 0.0, 0.62, 0.0, 0.0, 0.0, 1.0)
DT = 0.005
TRANSFER_DIR = str(Path(transfer.__file__).resolve().parent)
WARP_DIR = str(Path(wp.__file__).resolve().parent)


SCENE = {"drive_stiffness": 300.0, "drive_damping": 10.0, "ground_plane": True, "initial_root_pose": STAND}


def open_anymal(solver: str = "xpbd", num_envs: int = 2, ordering: str | None = "physx", device: str = "cpu"):
    orders = {"joint_ordering": ordering, "body_ordering": ordering}
    path = shared_asset(ANYMAL)
    return transfer.open_articulation(
        path, "newton", num_envs=num_envs, device=device, solver=solver, **orders, **SCENE
    )


def by_name(names, values: np.ndarray, order) -> np.ndarray:
    """``values`` (columns named by ``names``) with its columns rearranged into ``order``."""
    index = {n: i for i, n in enumerate(names)}
    return values[:, [index[n] for n in order]]


def stand_targets(art) -> np.ndarray:
    rng = np.random.default_rng(0)
    return art.data.default_joint_pos.numpy() + rng.uniform(-0.2, 0.2, (art.num_envs, art.num_joints)).astype(
        np.float32
    )


def test_a_step_republishes_the_public_buffers_in_place():
    art = open_anymal()
    pos, vel, poses, body_vel = art.data.joint_pos, art.data.joint_vel, art.data.body_pose_w, art.data.body_vel_w
    art.set_joint_position_target(stand_targets(art))
    for _ in range(5):
        art.step(DT)
    b = art.backend
    # The buffers taken before the steps hold the new state, in public order, without another read.
    np.testing.assert_array_equal(pos.numpy(), by_name(b.joint_names, b.joint_positions().numpy(), art.joint_names))
    np.testing.assert_array_equal(vel.numpy(), by_name(b.joint_names, b.joint_velocities().numpy(), art.joint_names))
    for public, backend in ((poses, b.body_poses()), (body_vel, b.body_velocities())):
        want = np.stack(
            [by_name(b.body_names, backend.numpy()[:, :, c], art.body_names) for c in range(public.shape[2])], -1
        )
        np.testing.assert_array_equal(public.numpy(), want)
    assert art.data.joint_pos is pos and art.data.body_pose_w is poses
    split = {
        "body_pos_w": poses.numpy()[..., :3],
        "body_quat_w": poses.numpy()[..., 3:],
        "body_lin_vel_w": body_vel.numpy()[..., :3],
        "body_ang_vel_w": body_vel.numpy()[..., 3:],
    }
    for name, want in split.items():
        np.testing.assert_array_equal(getattr(art.data, name).numpy().reshape(want.shape), want, err_msg=name)
    assert np.abs(vel.numpy()).max() > 0  # the robot moved: the check above compares live data
    assert art.step_graph is None  # CPU: direct launches


def test_identity_order_reads_are_the_backend_buffers():
    art = open_anymal(solver="mujoco_cpu", num_envs=1, ordering=None)
    art.step(DT)
    b = art.backend
    assert art.data.joint_pos.ptr == b.joint_positions().ptr
    assert art.data.body_pose_w.ptr == b.body_poses().ptr


def test_commands_apply_at_the_next_step_and_only_once_written():
    art = open_anymal(solver="mujoco_cpu", num_envs=1)
    b = art.backend
    view, control = b.view, b.control
    vel_target = np.linspace(-1.0, 1.0, art.num_joints, dtype=np.float32)[None]
    b.set_joint_velocity_target(wp.array(vel_target, dtype=wp.float32))  # set below the public layer
    before = view.get_dof_position_targets(control).numpy().copy()
    ids, names = art.find_joints(["RH_KFE", "LF_HAA"])
    art.set_joint_position_target(np.array([[0.3, -0.2]], np.float32), joint_ids=ids)
    np.testing.assert_array_equal(view.get_dof_position_targets(control).numpy(), before)  # pending until the step
    art.step(DT)
    applied = dict(zip(b.joint_names, view.get_dof_position_targets(control).numpy()[0], strict=True))
    default = dict(zip(art.joint_names, art.data.default_joint_pos.numpy()[0], strict=True))
    want = {**default, names[0]: 0.3, names[1]: -0.2}
    np.testing.assert_allclose([applied[n] for n in b.joint_names], [want[n] for n in b.joint_names], atol=1e-7)
    # Velocity targets were never written through the articulation: the step leaves them as they were.
    np.testing.assert_array_equal(view.get_dof_velocity_targets(control).numpy(), vel_target)


@pytest.fixture(scope="module")
def armed():
    """Three ANYmal worlds on XPBD in PhysX order, every command kind written once and stepped."""
    art = open_anymal(num_envs=3)
    zeros = np.zeros((art.num_envs, art.num_joints), np.float32)
    art.set_joint_position_target(art.data.default_joint_pos)
    art.set_joint_velocity_target(zeros)
    art.set_joint_effort_target(zeros)
    art.step(DT)
    return art


@settings(max_examples=60, deadline=None)
@given(
    kind=st.sampled_from(["position", "velocity", "effort"]),
    envs=st.lists(st.integers(0, 2), min_size=1, max_size=3, unique=True),
    joints=st.lists(st.integers(0, 11), min_size=1, max_size=12, unique=True),
    seed=st.integers(0, 2**16),
)
def test_partial_commands_reach_the_named_backend_joints_at_the_step(armed, kind, envs, joints, seed):
    art, b = armed, armed.backend
    control = {
        "position": lambda: b.view.get_dof_position_targets(b.control),
        "velocity": lambda: b.view.get_dof_velocity_targets(b.control),
        "effort": lambda: b.view.joints.get_attribute("joint_f", b.control),
    }[kind]
    before = control().numpy().copy()
    values = np.random.default_rng(seed).uniform(-1, 1, (len(envs), len(joints))).astype(np.float32)
    getattr(art, f"set_joint_{kind}_target")(values, env_ids=envs, joint_ids=joints)
    art.step(DT)
    expected = before.copy()
    for r, e in enumerate(envs):
        for c, j in enumerate(joints):
            expected[e, b.joint_names.index(art.joint_names[j])] = values[r, c]
    np.testing.assert_allclose(control().numpy(), expected, atol=1e-7)


def test_writes_between_steps_are_read_back_in_public_order():
    art = open_anymal(num_envs=2)
    art.step(DT)
    q = art.data.joint_pos.numpy().copy()
    q[1] += np.linspace(0.0, 0.2, art.num_joints, dtype=np.float32)
    art.write_joint_state(q, np.zeros_like(q))
    np.testing.assert_allclose(art.data.joint_pos.numpy(), q, atol=1e-6)
    b = art.backend
    np.testing.assert_allclose(by_name(b.joint_names, b.joint_positions().numpy(), art.joint_names), q, atol=1e-6)


def test_the_step_is_recorded_once_per_dt_and_command_set(monkeypatch):
    import transfer.articulation.core as ta  # where step() looks capture up

    recorded = []

    def recording(fn, device, *, enabled):
        recorded.append(enabled)
        return capture(fn, device, enabled=enabled)

    capture = ta.capture
    monkeypatch.setattr(ta, "capture", recording)
    art = open_anymal(solver="mujoco_cpu", num_envs=1)
    art.step(DT)
    assert recorded == [False]  # recorded after the first (direct) run; MuJoCo C: never as a graph
    art.step(DT)
    art.step(DT)
    assert recorded == [False]  # then replayed
    art.set_joint_position_target(art.data.default_joint_pos)  # another set of commands: another recording
    for dt in (DT, DT, DT, 2 * DT, 2 * DT):
        art.step(dt)
    assert recorded == [False, False, False]


def test_fixed_state_buffers_step_like_swapped_ones():
    """The copy-back stepping a recorded graph needs gives the same trajectory as swapping the two states."""
    backends = []
    for fixed in (False, True):
        b = NewtonBackend(shared_asset(ANYMAL), solver="xpbd", **SCENE)
        b._fixed_states = fixed  # what a CUDA device selects; forced here to run it on the CPU
        backends.append(b)
    swapped, fixed = backends
    state = fixed.state_0
    for b in backends:
        b.set_joint_position_target(wp.array(b.default_joint_pos.numpy() + 0.1, dtype=wp.float32))
        for _ in range(20):
            b.step(DT)
    assert fixed.state_0 is state  # the pointers a graph recorded stay valid
    assert swapped.state_0 is not swapped.state_1
    for read in ("joint_positions", "joint_velocities", "body_poses", "root_velocity"):
        np.testing.assert_allclose(getattr(fixed, read)().numpy(), getattr(swapped, read)().numpy(), atol=1e-6)
    assert abs(fixed.joint_velocities().numpy()).max() > 1e-3


def _count_host_work(monkeypatch) -> dict[str, list[str]]:
    """Record ``wp.array.numpy`` calls (host synchronization) anywhere and CPU allocations made by transfer's code."""
    seen: dict[str, list[str]] = {"numpy": [], "transfer_alloc": []}
    allocator = wp.get_device("cpu").default_allocator
    allocate, to_numpy = allocator.allocate, wp.array.numpy

    def counting_allocate(size):
        caller = [f for f in traceback.extract_stack()[:-1] if not f.filename.startswith(WARP_DIR)][-1]
        if caller.filename.startswith(TRANSFER_DIR):  # the allocation was asked for by transfer, not by Newton
            seen["transfer_alloc"].append(f"{caller.filename}:{caller.lineno}")
        return allocate(size)

    def counting_numpy(self):
        seen["numpy"].append(traceback.format_stack(limit=3)[0])
        return to_numpy(self)

    monkeypatch.setattr(allocator, "allocate", counting_allocate)
    monkeypatch.setattr(wp.array, "numpy", counting_numpy)
    return seen


@pytest.mark.parametrize("solver", ["xpbd", "semi_implicit"])
def test_the_step_call_is_capture_ready(solver, monkeypatch):
    """What a CUDA graph needs, checked on the CPU: in steady state one public step (commands, solver, republish)
    neither synchronizes with the host nor allocates in transfer's code (Newton's solvers allocate scratch arrays,
    which Warp's stream-ordered allocator serves inside a capture)."""
    art = open_anymal(solver=solver)
    art.set_joint_position_target(stand_targets(art))
    art.set_joint_velocity_target(np.zeros((art.num_envs, art.num_joints), np.float32))
    art.set_joint_effort_target(np.zeros((art.num_envs, art.num_joints), np.float32))
    for _ in range(2):
        art.step(DT)
    seen = _count_host_work(monkeypatch)
    for _ in range(3):
        art.step(DT)
    assert seen == {"numpy": [], "transfer_alloc": []}


def test_mujoco_c_cannot_be_captured():
    """MuJoCo C steps through the host: the step runs as direct calls, never a recorded graph, and still
    republishes the state in place at every step."""
    art = open_anymal(solver="mujoco_cpu", num_envs=1)
    pos = art.data.joint_pos
    start = pos.numpy().copy()
    art.set_joint_position_target(stand_targets(art))
    for _ in range(5):
        art.step(DT)
    assert art.step_graph is None
    assert art.data.joint_pos is pos and np.abs(pos.numpy() - start).max() > 1e-4  # the robot moved


@pytest.mark.slow
def test_mujoco_warp_step_call_is_capture_ready(monkeypatch):
    art = open_anymal(solver="mujoco_warp")
    art.set_joint_position_target(stand_targets(art))
    art.step(DT)
    seen = _count_host_work(monkeypatch)
    for _ in range(2):
        art.step(DT)
    assert seen == {"numpy": [], "transfer_alloc": []}


# -- CUDA: one graph per step ------------------------------------------------------------------------------------
@needs_cuda
@pytest.mark.parametrize("solver", ["mujoco_warp", "xpbd"])
def test_cuda_step_is_one_graph_and_matches_direct_launches(solver):
    graph, direct = open_anymal(solver, num_envs=4, device="cuda:0"), open_anymal(solver, num_envs=4, device="cuda:0")
    direct.backend.supports_cuda_graph = False  # same fixed state buffers, launched one by one
    assert graph.backend.supports_cuda_graph and direct.backend._fixed_states
    targets = stand_targets(graph)
    for art in (graph, direct):
        art.set_joint_position_target(targets)
        for _ in range(50):
            art.step(DT)
    assert graph.step_graph is not None and direct.step_graph is None
    wp.synchronize()
    np.testing.assert_allclose(graph.data.joint_pos.numpy(), direct.data.joint_pos.numpy(), atol=2e-3)
    np.testing.assert_allclose(graph.data.root_pos_w.numpy(), direct.data.root_pos_w.numpy(), atol=2e-3)
    b = graph.backend
    np.testing.assert_array_equal(
        graph.data.joint_pos.numpy(), by_name(b.joint_names, b.joint_positions().numpy(), graph.joint_names)
    )
    assert np.all(graph.data.root_pos_w.numpy()[:, 2] > 0.3)  # standing, not exploded
