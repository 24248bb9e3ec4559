"""open_articulation checks before it builds, and the behaviours users' framework pins (real PhysX and Newton)."""

from __future__ import annotations

import gc

import numpy as np
import pytest

from tests.conftest import shared_asset
from tests.usdgen import ArticulationSpec, BodySpec, JointSpec, StageSpec, write_stage
from transfer import open_articulation, resolve_ordering
from transfer.name_map import NameMapError
from transfer.orders import OrderingError

pytest.importorskip("ovphysx")
pytestmark = [
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
    pytest.mark.filterwarnings("ignore::RuntimeWarning"),
]


@pytest.fixture(scope="module")
def anymal_path():
    return shared_asset("anybotics_anymal_c/usd/anymal_c.usda")


@pytest.fixture(scope="module")
def door_path(tmp_path_factory):
    """A door frame fixed to the world with two hinged doors: a fixed-base articulation rooted at the frame."""
    spec = ArticulationSpec(
        "door",
        [BodySpec("frame"), BodySpec("left"), BodySpec("right")],
        [
            JointSpec("anchor", "fixed", None, 0),
            JointSpec("left_hinge", "revolute", 0, 1),
            JointSpec("right_hinge", "revolute", 0, 2),
        ],
        root_on="joint",  # the root API on the world anchor: PhysX makes the base fixed
    )
    return write_stage(StageSpec([spec]), tmp_path_factory.mktemp("door") / "door.usda")


def _live_backends() -> int:
    from transfer.backends.base import Backend

    gc.collect()
    return sum(isinstance(o, Backend) for o in gc.get_objects())


def test_a_bad_explicit_list_fails_before_any_engine_is_built(anymal_path):
    names = list(resolve_ordering(anymal_path, "physx").joints)
    before = _live_backends()
    with pytest.raises(NameMapError, match=r"missing from the user order: \['LF_HAA'\]"):
        open_articulation(anymal_path, "physx", joint_ordering=names[1:], body_ordering="physx")
    assert _live_backends() == before


def test_a_fixed_base_must_keep_its_root_first(door_path):
    physx = resolve_ordering(door_path, "physx")
    assert physx.fixed_base and physx.bodies[0] == "frame"
    reversed_bodies = tuple(reversed(physx.bodies))
    with pytest.raises(OrderingError, match="fixed base whose root link 'frame' must stay at public index 0"):
        open_articulation(door_path, "physx", joint_ordering="physx", body_ordering=reversed_bodies)
    # the root kept first, the other links swapped: accepted
    swapped = (physx.bodies[0], *reversed(physx.bodies[1:]))
    art = open_articulation(door_path, "physx", joint_ordering="physx", body_ordering=swapped)
    try:
        assert art.body_names == swapped
    finally:
        art.close()


def test_a_floating_base_may_move_its_root(anymal_path):
    bodies = resolve_ordering(anymal_path, "physx").bodies
    moved = (*bodies[1:], bodies[0])
    art = open_articulation(anymal_path, "physx", joint_ordering="physx", body_ordering=moved)
    try:
        assert art.body_names[-1] == "base"
        root = art.data.root_pos_w.numpy()[0]
        assert np.allclose(art.data.body_pose_w.numpy()[0, -1, :3], root, atol=1e-5)
    finally:
        art.close()


@pytest.fixture(scope="module")
def art(anymal_path):
    a = open_articulation(anymal_path, "physx", num_envs=2, joint_ordering="mjwarp", body_ordering="mjwarp")
    yield a
    a.close()


def test_selectors_accept_slices_everywhere(art):
    assert art.map_joint_ids_to_backend(slice(0, 3)) == art.map_joint_ids_to_backend([0, 1, 2])
    assert art.map_joint_ids_to_backend(range(3)) == art.map_joint_ids_to_backend([0, 1, 2])
    assert art.map_body_ids_to_backend(slice(None, None, 4)) == art.map_body_ids_to_backend([0, 4, 8, 12, 16])
    mask = np.zeros(12, dtype=bool)
    mask[[1, 5]] = True
    assert art.map_joint_ids_to_backend(mask) == art.map_joint_ids_to_backend([1, 5])
    # LF_HFE is public 1 (mjwarp) and backend 4 (physx)
    assert art.map_joint_ids_to_backend(slice(1, 2)) == [art.backend_joint_names.index(art.joint_names[1])]
    with pytest.raises(IndexError, match=r"joint_ids: indices \[12\] are out of range"):
        art.map_joint_ids_to_backend([12])


def test_non_finite_targets_are_refused_naming_the_joints(art):
    target = np.zeros((2, 12), np.float32)
    target[1, art.joint_names.index("RH_KFE")] = np.nan
    with pytest.raises(ValueError, match=r"non-finite values .* joints \['RH_KFE'\] in environments \[1\]"):
        art.set_joint_position_target(target)
    with pytest.raises(ValueError, match=r"joints \['LF_HFE'\]"):
        art.set_joint_velocity_target(np.array([[np.inf]], np.float32), env_ids=[0], joint_ids=[1])


def test_a_closed_articulation_says_so(anymal_path):
    a = open_articulation(anymal_path, "physx")
    data = a.data
    a.close()
    a.close()  # twice is harmless
    with pytest.raises(RuntimeError, match="articulation .* is closed"):
        _ = a.data
    with pytest.raises(RuntimeError, match="is closed"):
        _ = data.joint_pos


def test_newton_runs_in_the_public_order_itself(anymal_path):
    pytest.importorskip("newton")
    physx = resolve_ordering(anymal_path, "physx")
    art = open_articulation(anymal_path, "newton", joint_ordering="physx", body_ordering="physx")
    try:
        # the views were built in PhysX's order: no reorder is left for the public layer
        assert art.backend_joint_names == physx.joints and art.backend_body_names == physx.bodies
        assert art.joint_ordering is None and art.body_ordering is None
        q = np.linspace(-0.3, 0.3, 12, dtype=np.float32)[None]
        art.write_joint_state(q, np.zeros_like(q))
        assert np.allclose(art.data.joint_pos.numpy(), q)
        # the same state written by name on a Newton-ordered articulation reads the same joint by name
        native = open_articulation(anymal_path, "newton")
        try:
            order = [physx.joints.index(n) for n in native.joint_names]
            native.write_joint_state(q[:, order], np.zeros_like(q))
            assert np.allclose(native.data.joint_pos.numpy(), q[:, order])
            body = [physx.bodies.index(n) for n in native.body_names]
            assert np.allclose(native.data.body_pose_w.numpy(), art.data.body_pose_w.numpy()[:, body], atol=1e-5)
        finally:
            native.close()
    finally:
        art.close()


def test_many_newton_worlds_open_with_defaults(anymal_path):
    """Several environments on Newton need no solver choice: MuJoCo-Warp is picked (MuJoCo C runs world 0 only)."""
    pytest.importorskip("newton")
    art = open_articulation(anymal_path, "newton", num_envs=3)
    try:
        assert art.backend.solver_name == "mujoco_warp" and art.num_envs == 3
        art.step(0.005)
        assert np.isfinite(art.data.joint_pos.numpy()).all()
    finally:
        art.close()
    one = open_articulation(anymal_path, "newton")
    try:
        assert one.backend.solver_name == "mujoco_cpu"
    finally:
        one.close()
