"""ReorderPlan: preallocated gathers and scatters, identity aliasing, torch interop, CUDA graph capture."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
import warp as wp
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.warp_helpers import DEVICES, make_map, needs_cuda
from transfer.kernels.plan import ReorderPlan, capture


@wp.kernel
def _dummy_step(joint_target: wp.array2d(dtype=wp.float32), joint_pos: wp.array2d(dtype=wp.float32)):
    """A stand-in simulation step in backend order: joint_pos += joint_target."""
    e, j = wp.tid()
    joint_pos[e, j] = joint_pos[e, j] + joint_target[e, j]


@pytest.mark.parametrize("device", DEVICES)
def test_gather_and_scatter(device: str) -> None:
    u2b = [3, 1, 0, 2]
    nmap = make_map(u2b, device="cpu")  # a map on another device is moved to the plan's device
    rng = np.random.default_rng(0)
    pos = rng.standard_normal((5, 4)).astype(np.float32)
    poses = rng.standard_normal((5, 4, 7)).astype(np.float32)
    sim_pos = wp.array(pos, device=device)
    sim_poses = wp.array(poses, dtype=wp.transform, device=device)
    sim_target = wp.zeros((5, 4), dtype=wp.float32, device=device)

    plan = ReorderPlan()
    user_pos = plan.add_gather("joint_pos", sim_pos, nmap)
    user_poses = plan.add_gather("body_poses", sim_poses, nmap)
    user_target = plan.add_scatter("joint_target", None, sim_target, nmap)
    assert plan.device == wp.get_device(device)
    assert plan.names == ("joint_pos", "body_poses", "joint_target")
    assert plan["joint_pos"] is user_pos and plan["joint_target"] is user_target
    assert plan.num_launches == 3 and len(plan) == 3 and "body_poses" in plan
    assert user_pos.shape == (5, 4) and user_poses.dtype == wp.transform and user_target.device == sim_target.device

    plan.launch_gathers()
    np.testing.assert_array_equal(user_pos.numpy(), pos[:, u2b])
    np.testing.assert_array_equal(user_poses.numpy(), poses[:, u2b])
    assert not sim_target.numpy().any()  # scatters did not run

    user_target.assign(wp.array(np.arange(20, dtype=np.float32).reshape(5, 4), device=device))
    plan.launch_scatters()
    expected = np.empty((5, 4), np.float32)
    expected[:, u2b] = np.arange(20, dtype=np.float32).reshape(5, 4)
    np.testing.assert_array_equal(sim_target.numpy(), expected)

    sim_pos.assign(wp.array(pos * 2, device=device))  # recorded launches read the arrays' current contents
    plan.launch()
    np.testing.assert_array_equal(user_pos.numpy(), 2 * pos[:, u2b])


def test_identity_maps_launch_and_allocate_nothing() -> None:
    sim_pos = wp.zeros((3, 4), dtype=wp.float32, device="cpu")
    sim_target = wp.zeros((3, 4), dtype=wp.float32, device="cpu")
    plan = ReorderPlan()
    assert plan.add_gather("pos", sim_pos, None) is sim_pos
    assert plan.add_scatter("target", None, sim_target, None) is sim_target
    assert plan.num_launches == 0
    plan.launch()
    assert "identity" in repr(plan)

    # a separate buffer with an identity map is a plain copy
    staging = wp.array(np.ones((3, 4), np.float32), device="cpu")
    assert plan.add_scatter("target_copy", staging, sim_target, None) is staging
    plan.launch_scatters()
    np.testing.assert_array_equal(sim_target.numpy(), np.ones((3, 4)))


def test_given_output_buffers() -> None:
    nmap = make_map([1, 0])
    src = wp.array(np.array([[1.0, 2.0]], np.float32), device="cpu")
    out = wp.zeros_like(src)
    plan = ReorderPlan("cpu")
    assert plan.add_gather("a", src, nmap, out=out) is out
    assert plan.add_gather("b", src, None, out=wp.zeros_like(src)) is plan["b"]
    plan.launch()
    np.testing.assert_array_equal(out.numpy(), [[2.0, 1.0]])
    np.testing.assert_array_equal(plan["b"].numpy(), [[1.0, 2.0]])


def test_errors() -> None:
    nmap = make_map([1, 0, 2])
    plan = ReorderPlan("cpu")
    src = wp.zeros((2, 3), dtype=wp.float32, device="cpu")
    plan.add_gather("pos", src, nmap)
    with pytest.raises(ValueError, match="already has an entry named 'pos'"):
        plan.add_gather("pos", src, nmap)
    with pytest.raises(ValueError, match="nmap: the joint map has 3 elements, but axis 1 of src_backend has 4"):
        plan.add_gather("x", wp.zeros((2, 4), dtype=wp.float32, device="cpu"), nmap)
    with pytest.raises(ValueError, match=r"src_user: expected shape \(2, 3\)"):
        plan.add_scatter("y", wp.zeros((3, 3), dtype=wp.float32, device="cpu"), src, nmap)
    with pytest.raises(TypeError, match="src_user: dtype float64 does not match dst_backend dtype float32"):
        plan.add_scatter("y", wp.zeros((2, 3), dtype=wp.float64, device="cpu"), src, nmap)
    with pytest.raises(ValueError, match="dst_backend: must not alias"):
        plan.add_scatter("y", src, src, nmap)
    with pytest.raises(ValueError, match=r"src_backend: expected shape \(num_envs, N\)"):
        plan.add_gather("z", wp.zeros(3, dtype=wp.float32, device="cpu"), nmap)
    assert plan.names == ("pos",)


@pytest.mark.parametrize("device", DEVICES)
@settings(max_examples=200, deadline=None)
@given(
    perms=st.lists(st.integers(1, 24).flatmap(lambda n: st.permutations(range(n))), min_size=1, max_size=4),
    e=st.integers(1, 5),
    seed=st.integers(0, 2**32 - 1),
)
def test_round_trip_property(device: str, perms: list[list[int]], e: int, seed: int) -> None:
    """Gather every array to user order and scatter it back to fresh backend arrays: identity."""
    rng = np.random.default_rng(seed)
    plan = ReorderPlan(device)
    sources, restored = [], []
    for k, u2b in enumerate(perms):
        nmap = make_map(u2b, device=device)
        a = rng.standard_normal((e, len(u2b), 3)).astype(np.float32)
        src = wp.array(a, dtype=wp.vec3, device=device)
        dst = wp.zeros_like(src)
        user = plan.add_gather(f"g{k}", src, nmap)
        plan.add_scatter(f"s{k}", user, dst, nmap)
        sources.append(a)
        restored.append((user, dst, u2b))
    plan.launch()  # insertion order: each gather runs before its scatter
    for a, (user, dst, u2b) in zip(sources, restored, strict=True):
        np.testing.assert_array_equal(user.numpy(), np.take(a, u2b, axis=1))
        np.testing.assert_array_equal(dst.numpy(), a)


def test_torch_tensors_without_copies() -> None:
    torch = pytest.importorskip("torch")
    nmap = make_map([2, 0, 1])
    sim_pos = torch.arange(6, dtype=torch.float32).reshape(2, 3)
    sim_poses = torch.randn(2, 3, 7)  # (E, N, C): permuted along axis 1 by the 3-D kernel
    sim_target = torch.zeros(2, 3)
    plan = ReorderPlan()
    user_pos = plan.add_gather("pos", sim_pos, nmap)
    user_poses = plan.add_gather("poses", sim_poses, nmap)
    user_target = plan.add_scatter("target", None, sim_target, nmap)
    assert all(isinstance(t, torch.Tensor) for t in (user_pos, user_poses, user_target))
    assert plan.add_gather("same", sim_pos, None) is sim_pos
    plan.launch_gathers()
    assert torch.equal(user_pos, sim_pos[:, [2, 0, 1]])
    assert torch.equal(user_poses, sim_poses[:, [2, 0, 1]])

    sim_pos.mul_(10)  # in-place updates are seen by the recorded launches (no copies anywhere)
    user_target.copy_(torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]))
    plan.launch()
    assert torch.equal(user_pos, sim_pos[:, [2, 0, 1]])
    assert torch.equal(sim_target, torch.tensor([[2.0, 3.0, 1.0], [5.0, 6.0, 4.0]]))


def test_capture_step_on_cpu_launches_directly() -> None:
    nmap = make_map([1, 0])
    sim_pos = wp.array(np.zeros((2, 2), np.float32), device="cpu")
    sim_target = wp.zeros_like(sim_pos)
    plan = ReorderPlan("cpu")
    user_pos = plan.add_gather("pos", sim_pos, nmap)
    user_target = plan.add_scatter("target", None, sim_target, nmap)
    user_target.fill_(1.0)
    user_target.numpy()[:, 0] = 5.0  # user joint 0 is backend joint 1

    run = plan.capture_step(lambda: wp.launch(_dummy_step, dim=(2, 2), inputs=[sim_target, sim_pos], device="cpu"))
    assert run.graph is None
    run()
    run()
    np.testing.assert_array_equal(user_pos.numpy(), [[10.0, 2.0], [10.0, 2.0]])


def test_launch_by_name_runs_only_those_entries() -> None:
    nmap = make_map([2, 0, 1])
    src = wp.array(np.arange(6, dtype=np.float32).reshape(2, 3), device="cpu")
    plan = ReorderPlan("cpu")
    a = plan.add_gather("a", src, nmap)
    b = plan.add_gather("b", src, nmap)
    same = plan.add_gather("same", src, None)  # identity: the source itself, nothing to launch
    staged = plan.add_scatter("s", None, wp.zeros_like(src), nmap)  # callers write parts of it: starts at zero
    plan.launch("b", "same")
    np.testing.assert_array_equal(a.numpy(), 0.0)
    np.testing.assert_array_equal(staged.numpy(), 0.0)
    np.testing.assert_array_equal(b.numpy(), src.numpy()[:, [2, 0, 1]])
    assert same is src
    with pytest.raises(KeyError, match="'c'.*entries: \\['a', 'b', 'same', 's'\\]"):
        plan.launch("c")


def test_capture_on_cpu_is_the_function() -> None:
    calls = []
    run = capture(lambda: calls.append(1), "cpu")
    assert run.graph is None and not calls  # nothing runs until called
    run()
    run()
    assert calls == [1, 1]


@needs_cuda
def test_capture_disabled_on_cuda_launches_directly() -> None:
    calls = []
    run = capture(lambda: calls.append(1), "cuda:0", enabled=False)
    run()
    assert run.graph is None and calls == [1]


@needs_cuda
def test_capture_step_records_a_cuda_graph() -> None:
    device = "cuda:0"
    nmap = make_map([2, 0, 1], device=device)
    sim_pos = wp.zeros((4, 3), dtype=wp.float32, device=device)
    sim_target = wp.zeros_like(sim_pos)
    plan = ReorderPlan(device)
    user_pos = plan.add_gather("pos", sim_pos, nmap)
    user_target = plan.add_scatter("target", None, sim_target, nmap)

    def step() -> None:
        wp.launch(_dummy_step, dim=(4, 3), inputs=[sim_target, sim_pos], device=device)

    wp.load_module(_dummy_step.module, device=device)
    run = plan.capture_step(step)
    assert run.graph is not None
    target = np.array([1.0, 2.0, 3.0], np.float32)
    user_target.assign(wp.array(np.tile(target, (4, 1)), device=device))
    run()
    run()
    wp.synchronize_device(device)
    np.testing.assert_allclose(user_pos.numpy(), np.tile(2 * target, (4, 1)))
    np.testing.assert_allclose(sim_pos.numpy(), np.tile(2 * target[[1, 2, 0]], (4, 1)))


@needs_cuda
def test_plan_launch_inside_user_scoped_capture() -> None:
    device = "cuda:0"
    nmap = make_map([1, 0], device=device)
    src = wp.array(np.array([[1.0, 2.0]], np.float32), device=device)
    plan = ReorderPlan(device)
    out = plan.add_gather("x", src, nmap)
    with wp.ScopedCapture(device=device) as capture:
        plan.launch()
    src.assign(wp.array(np.array([[3.0, 4.0]], np.float32), device=device))
    wp.capture_launch(capture.graph)
    np.testing.assert_array_equal(out.numpy(), [[4.0, 3.0]])


def test_import_plan_is_light() -> None:
    code = "import sys, transfer.kernels.plan; assert 'warp' not in sys.modules and 'torch' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True, capture_output=True)
