"""The public-order articulation API: names, ids, orderings, writers and their errors (on real PhysX)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import warp as wp
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import shared_asset
from transfer import OrderingOverrideWarning, open_articulation, resolve_ordering

pytest.importorskip("ovphysx")
pytestmark = [
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
    pytest.mark.filterwarnings("ignore::RuntimeWarning"),
]


@pytest.fixture(scope="module")
def anymal_path():
    return shared_asset("anybotics_anymal_c/usd/anymal_c.usda")


@pytest.fixture(scope="module")
def art(anymal_path):
    a = open_articulation(anymal_path, "physx", num_envs=3, joint_ordering="mjwarp", body_ordering="mjwarp")
    yield a
    a.close()


def test_public_order_is_the_requested_convention(art, anymal_path):
    mj = resolve_ordering(anymal_path, "mjwarp")
    assert art.joint_names == mj.joints and art.body_names == mj.bodies
    assert art.backend_joint_names == resolve_ordering(anymal_path, "physx").joints
    # the orderings carry backend-order data into the public order (names stand in for per-joint data)
    assert tuple(art.joint_ordering.to_user(np.array(art.backend_joint_names))) == art.joint_names
    assert tuple(art.body_ordering.to_user(np.array(art.backend_body_names))) == art.body_names


def test_native_convention_costs_nothing(anymal_path):
    a = open_articulation(anymal_path, "physx", joint_ordering="PhysX", body_ordering="physx")
    try:
        assert a.joint_ordering is None and a.body_ordering is None
        assert a.joint_names == a.backend_joint_names
    finally:
        a.close()


def test_one_sided_ordering_warns(anymal_path):
    with pytest.warns(OrderingOverrideWarning, match="body_ordering"):
        a = open_articulation(anymal_path, "physx", joint_ordering="mjwarp")
    try:
        assert a.body_ordering is None and a.body_names == a.backend_body_names
        assert a.joint_names == resolve_ordering(anymal_path, "mjwarp").joints != a.backend_joint_names
        assert tuple(a.joint_ordering.to_user(np.array(a.backend_joint_names))) == a.joint_names
    finally:
        a.close()


def test_find_and_map_ids(art):
    ids, names = art.find_joints("LH_.*")
    assert names == ["LH_HAA", "LH_HFE", "LH_KFE"] and ids == [3, 4, 5]
    backend = art.map_joint_ids_to_backend(ids)
    assert [art.backend_joint_names[i] for i in backend] == names
    bids, bnames = art.find_bodies(["base", "RH_FOOT"])
    assert [art.backend_body_names[i] for i in art.map_body_ids_to_backend(bids)] == bnames
    with pytest.raises(ValueError, match="No joint name matches"):
        art.find_joints("elbow")


@settings(max_examples=200, deadline=None)
@given(data=st.data())
def test_partial_target_writes_reach_the_named_backend_joints(art, data):
    envs = data.draw(st.lists(st.integers(0, 2), min_size=1, max_size=3, unique=True))
    joints = data.draw(st.lists(st.integers(0, 11), min_size=1, max_size=12, unique=True))
    before = art.backend.joint_position_targets().numpy().copy()
    values = (
        np.random.default_rng(len(envs) * 100 + len(joints)).uniform(-1, 1, (len(envs), len(joints))).astype(np.float32)
    )
    art.set_joint_position_target(values, env_ids=envs, joint_ids=joints)
    after = art.backend.joint_position_targets().numpy()
    expected = before.copy()
    for r, e in enumerate(envs):
        for c, j in enumerate(joints):
            expected[e, art.backend_joint_names.index(art.joint_names[j])] = values[r, c]
    assert np.allclose(after, expected, atol=1e-6)


def test_reads_are_warp_arrays_with_numpy_and_zero_copy_torch(art):
    pos = art.data.joint_pos
    assert isinstance(pos, wp.array) and pos.shape == (3, 12)
    view = wp.to_torch(pos)
    assert view.data_ptr() == pos.ptr
    assert art.data.body_pos_w.shape == (3, 17) and art.data.root_quat_w.shape == (3,)


def test_writers_accept_torch_and_warp(art):
    t = torch.full((3, 12), 0.25)
    art.write_joint_state(t, torch.zeros(3, 12))
    assert np.allclose(art.data.joint_pos.numpy(), 0.25)
    w = wp.array(np.full((3, 12), -0.1, np.float32), dtype=wp.float32)
    art.write_joint_state(w, w)
    assert np.allclose(art.data.joint_vel.numpy(), -0.1)


def test_bad_writer_inputs_name_the_argument(art):
    with pytest.raises(ValueError, match=r"position: got shape \(3, 11\), expected \(3, 12\)"):
        art.write_joint_state(np.zeros((3, 11)), np.zeros((3, 12)))
    with pytest.raises(ValueError, match=r"expected \(2, 1\)"):
        art.set_joint_position_target(np.zeros((3, 1)), env_ids=[0, 1], joint_ids=[4])
    with pytest.raises(IndexError, match=r"env_ids: indices \[7\] are out of range"):
        art.set_joint_effort_target(np.zeros((1, 12)), env_ids=[7])
    with pytest.raises(IndexError, match="joint_ids"):
        art.set_joint_velocity_target(np.zeros((3, 1)), joint_ids=[12])
    with pytest.raises(TypeError, match="float32"):
        art.write_joint_state(torch.zeros(3, 12, dtype=torch.float64), torch.zeros(3, 12))
    with pytest.raises(ValueError, match=r"env_ids: duplicate indices \[1\]"):
        art.write_root_pose(np.zeros((2, 7)), env_ids=[1, 1])
    with pytest.raises(ValueError, match="unknown property"):
        art.write_joint_properties(stiffnes=np.zeros((3, 12)))


def test_bad_open_inputs(anymal_path, tmp_path):
    with pytest.raises(ValueError, match="valid backends"):
        open_articulation(anymal_path, "bullet")
    with pytest.raises(FileNotFoundError, match="nope.usda"):
        open_articulation(tmp_path / "nope.usda", "physx")
    with pytest.raises(ValueError, match="physx, mjwarp, robot_schema"):
        open_articulation(anymal_path, "physx", joint_ordering="isaac", body_ordering="isaac")


def test_explicit_joint_list_must_name_every_joint(anymal_path):
    names = list(resolve_ordering(anymal_path, "physx").joints)
    with pytest.raises(ValueError, match="missing from the user order: \\['RH_KFE'\\]"):
        open_articulation(anymal_path, "physx", joint_ordering=names[:-1], body_ordering="physx")


def test_gains_write_in_public_order(art):
    ids, _ = art.find_joints("RF_KFE")
    art.write_joint_properties(joint_ids=ids, env_ids=[2], stiffness=np.array([[123.0]], np.float32))
    stiff = art.data.joint_stiffness.numpy()
    assert stiff[2, ids[0]] == pytest.approx(123.0)
    assert np.count_nonzero(np.isclose(stiff, 123.0)) == 1
