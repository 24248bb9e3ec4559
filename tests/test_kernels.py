"""Reorder kernels against numpy: public elementwise kernels, helpers, partial writes."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
import warp as wp
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.warp_helpers import DEVICES, make_map
from transfer import kernels as K

# (warp dtype, numpy scalar dtype, component shape)
DTYPES = [
    (wp.float32, np.float32, ()),
    (wp.float64, np.float64, ()),
    (wp.int32, np.int32, ()),
    (wp.vec3, np.float32, (3,)),
    (wp.quat, np.float32, (4,)),
    (wp.transform, np.float32, (7,)),
    (wp.spatial_vector, np.float32, (6,)),
    (wp.mat33, np.float32, (3, 3)),
]
SCALARS = DTYPES[:3]
PROPERTY = settings(max_examples=200, deadline=None)

dtypes = st.sampled_from(DTYPES)
scalar_dtypes = st.sampled_from(SCALARS)
num_envs = st.integers(1, 6)
seeds = st.integers(0, 2**32 - 1)


def random_data(seed: int, shape: tuple[int, ...], np_dtype: type) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if np.issubdtype(np_dtype, np.integer):
        return rng.integers(-1000, 1000, size=shape).astype(np_dtype)
    return rng.standard_normal(shape).astype(np_dtype)


@st.composite
def permutations(draw: st.DrawFn, max_n: int = 40) -> list[int]:
    n = draw(st.integers(1, max_n))
    return draw(st.permutations(range(n)))


# ---------------------------------------------------------------------------------------------------------------
# Public elementwise kernels
# ---------------------------------------------------------------------------------------------------------------
def test_direction_names_share_one_generic_kernel() -> None:
    assert K.reorder_2d_backend_to_user is K.reorder_2d_user_to_backend is K.reorder_2d
    assert K.reorder_3d_backend_to_user is K.reorder_3d_user_to_backend is K.reorder_3d


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize(("dtype", "np_dtype", "comp"), DTYPES, ids=[d[0].__name__ for d in DTYPES])
def test_launch_by_name_every_dtype(device: str, dtype: type, np_dtype: type, comp: tuple[int, ...]) -> None:
    nmap = make_map([2, 0, 3, 1], device=device)
    a = random_data(0, (3, 4, *comp), np_dtype)
    src = wp.array(a, dtype=dtype, device=device)
    user = wp.empty_like(src)
    back = wp.empty_like(src)
    wp.launch(
        K.reorder_2d_backend_to_user, dim=(3, 4), inputs=[src, nmap.user_to_backend], outputs=[user], device=device
    )
    wp.launch(
        K.reorder_2d_user_to_backend, dim=(3, 4), inputs=[user, nmap.backend_to_user], outputs=[back], device=device
    )
    np.testing.assert_array_equal(user.numpy(), np.take(a, [2, 0, 3, 1], axis=1))
    np.testing.assert_array_equal(back.numpy(), a)


@pytest.mark.parametrize("device", DEVICES)
@PROPERTY
@given(dt=dtypes, u2b=permutations(), e=num_envs, seed=seeds)
def test_reorder_2d_matches_numpy_take(device: str, dt: tuple, u2b: list[int], e: int, seed: int) -> None:
    dtype, np_dtype, comp = dt
    nmap = make_map(u2b, device=device)
    a = random_data(seed, (e, len(u2b), *comp), np_dtype)
    src = wp.array(a, dtype=dtype, device=device)
    user = wp.zeros_like(src)
    back = wp.zeros_like(src)
    wp.launch(
        K.reorder_2d_backend_to_user, dim=src.shape, inputs=[src, nmap.user_to_backend], outputs=[user], device=device
    )
    wp.launch(
        K.reorder_2d_user_to_backend, dim=src.shape, inputs=[user, nmap.backend_to_user], outputs=[back], device=device
    )
    np.testing.assert_array_equal(user.numpy(), np.take(a, u2b, axis=1))
    np.testing.assert_array_equal(back.numpy(), a)


@pytest.mark.parametrize("device", DEVICES)
@PROPERTY
@given(dt=scalar_dtypes, u2b=permutations(), e=num_envs, c=st.integers(1, 7), seed=seeds)
def test_reorder_3d_matches_numpy_take(device: str, dt: tuple, u2b: list[int], e: int, c: int, seed: int) -> None:
    dtype, np_dtype, _ = dt
    nmap = make_map(u2b, device=device)
    a = random_data(seed, (e, len(u2b), c), np_dtype)
    src = wp.array(a, dtype=dtype, device=device)
    user = wp.zeros_like(src)
    back = wp.zeros_like(src)
    wp.launch(
        K.reorder_3d_backend_to_user, dim=src.shape, inputs=[src, nmap.user_to_backend], outputs=[user], device=device
    )
    wp.launch(
        K.reorder_3d_user_to_backend, dim=src.shape, inputs=[user, nmap.backend_to_user], outputs=[back], device=device
    )
    np.testing.assert_array_equal(user.numpy(), np.take(a, u2b, axis=1))
    np.testing.assert_array_equal(back.numpy(), a)


# ---------------------------------------------------------------------------------------------------------------
# Whole-array helpers (row kernels on CPU)
# ---------------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("device", DEVICES)
@PROPERTY
@given(dt=dtypes, u2b=permutations(), e=num_envs, seed=seeds, three_d=st.booleans())
def test_reorder_helpers_round_trip(device: str, dt: tuple, u2b: list[int], e: int, seed: int, three_d: bool) -> None:
    dtype, np_dtype, comp = dt
    nmap = make_map(u2b, device=device)
    a = random_data(seed, (e, len(u2b), *comp), np_dtype)
    # three_d: the same data as a scalar (E, N, C) array, permuted by the 3-D path
    src = wp.array(a.reshape(e, len(u2b), -1), device=device) if three_d else wp.array(a, dtype=dtype, device=device)
    user = K.reorder_backend_to_user(src, nmap)
    back = K.reorder_user_to_backend(user, nmap)
    np.testing.assert_array_equal(user.numpy().reshape(a.shape), np.take(a, u2b, axis=1))
    np.testing.assert_array_equal(back.numpy().reshape(a.shape), a)


@pytest.mark.parametrize("device", DEVICES)
def test_strided_views(device: str) -> None:
    """Row views of non-contiguous arrays (a column window of a wider array) on every path."""
    u2b = [2, 0, 4, 1, 3]
    nmap = make_map(u2b, device=device)
    wide = np.arange(6 * 9, dtype=np.float32).reshape(6, 9)
    src = wp.array(wide, device=device)[:, 2:7]
    assert not src.is_contiguous
    expected = wide[:, 2:7][:, u2b]
    out_wide = wp.zeros((6, 9), dtype=wp.float32, device=device)
    out = out_wide[:, 1:6]
    K.reorder_backend_to_user(src, nmap, out=out)
    np.testing.assert_array_equal(out.numpy(), expected)
    assert not out_wide.numpy()[:, [0, 6, 7, 8]].any()  # columns outside the window untouched
    K.scatter_user_to_backend(out, src, nmap, [4, 1], [3], compact=False)
    np.testing.assert_array_equal(out.numpy()[[4, 1], u2b[3]], wide[[4, 1], 2 + 3])


def test_reorder_helpers_identity_and_out() -> None:
    src = wp.array(np.arange(12, dtype=np.float32).reshape(3, 4), device="cpu")
    assert K.reorder_backend_to_user(src, None) is src
    out = wp.zeros_like(src)
    assert K.reorder_user_to_backend(src, None, out=out) is out
    np.testing.assert_array_equal(out.numpy(), src.numpy())
    nmap = make_map([1, 0, 3, 2])
    assert K.reorder_backend_to_user(src, nmap, out=out) is out
    np.testing.assert_array_equal(out.numpy(), src.numpy()[:, [1, 0, 3, 2]])


def test_reorder_helpers_errors() -> None:
    nmap = make_map([1, 0, 3, 2])
    src = wp.zeros((3, 4), dtype=wp.float32, device="cpu")
    with pytest.raises(ValueError, match=r"out: expected shape \(3, 4\)"):
        K.reorder_backend_to_user(src, nmap, out=wp.zeros((3, 5), dtype=wp.float32, device="cpu"))
    with pytest.raises(TypeError, match="out: dtype float64 does not match src_backend dtype float32"):
        K.reorder_backend_to_user(src, nmap, out=wp.zeros((3, 4), dtype=wp.float64, device="cpu"))
    with pytest.raises(ValueError, match="nmap: the joint map has 4 elements, but axis 1 of src_backend has 5"):
        K.reorder_backend_to_user(wp.zeros((3, 5), dtype=wp.float32, device="cpu"), nmap)
    with pytest.raises(ValueError, match="out: must not alias"):
        K.reorder_backend_to_user(src, nmap, out=src)
    with pytest.raises(ValueError, match=r"src_user: expected shape \(num_envs, N\) or \(num_envs, N, C\)"):
        K.reorder_user_to_backend(wp.zeros(4, dtype=wp.float32, device="cpu"), nmap)
    with pytest.raises(TypeError, match="src_backend: expected a wp.array or torch.Tensor, got ndarray"):
        K.reorder_backend_to_user(np.zeros((3, 4)), nmap)


# ---------------------------------------------------------------------------------------------------------------
# Partial writes
# ---------------------------------------------------------------------------------------------------------------
SELECTOR_KINDS = ["none", "all", "slice", "list", "np_int32", "np_int64", "mask", "wp_int32", "wp_int64", "wp_mask"]


@st.composite
def selections(draw: st.DrawFn, n: int, device: str) -> tuple[object, np.ndarray]:
    """(selector in one of the accepted forms, the indices it selects in order)."""
    kind = draw(st.sampled_from(SELECTOR_KINDS))
    if kind in ("none", "all"):
        return (None if kind == "none" else slice(None)), np.arange(n)
    if kind == "slice":
        sel = slice(draw(st.integers(0, n)), None, draw(st.integers(1, 3)))
        return sel, np.arange(n)[sel]
    if kind in ("mask", "wp_mask"):
        mask = np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)), dtype=bool)
        return (mask if kind == "mask" else wp.array(mask, dtype=wp.bool, device=device)), np.flatnonzero(mask)
    ids = np.asarray(draw(st.lists(st.integers(0, n - 1), unique=True, max_size=n)), dtype=np.int64)
    if kind == "list":
        return ids.tolist(), ids
    if kind.startswith("np_"):
        return ids.astype(np.int32 if kind == "np_int32" else np.int64), ids
    return wp.array(ids, dtype=wp.int32 if kind == "wp_int32" else wp.int64, device=device), ids


@pytest.mark.parametrize("device", DEVICES)
@PROPERTY
@given(data=st.data(), dt=dtypes, u2b=permutations(20), e=num_envs, seed=seeds, compact=st.booleans())
def test_scatter_matches_numpy(
    device: str, data: st.DataObject, dt: tuple, u2b: list[int], e: int, seed: int, compact: bool
) -> None:
    dtype, np_dtype, comp = dt
    n = len(u2b)
    env_sel, envs = data.draw(selections(e, device), label="env_ids")
    ids_sel, ids = data.draw(selections(n, device), label="element_ids")
    identity = data.draw(st.sampled_from(["map", "array", "none"]), label="map form")
    u2b_np = np.asarray(u2b) if identity != "none" else np.arange(n)
    nmap = make_map(u2b, device=device)
    index_map = {"map": nmap, "array": nmap.user_to_backend, "none": None}[identity]

    before = random_data(seed, (e, n, *comp), np_dtype)
    update = random_data(seed + 1, ((len(envs), len(ids)) if compact else (e, n)) + comp, np_dtype)
    dst = wp.array(before, dtype=dtype, device=device)
    src = wp.array(update, dtype=dtype, device=device)
    K.scatter_user_to_backend(dst, src, index_map, env_sel, ids_sel, compact=compact)

    expected = before.copy()
    rows, cols = envs[:, None], u2b_np[ids][None, :]
    expected[rows, cols] = update if compact else update[envs[:, None], ids[None, :]]
    result = dst.numpy()
    np.testing.assert_array_equal(result, expected)
    untouched = np.ones((e, n), dtype=bool)
    untouched[rows, cols] = False
    np.testing.assert_array_equal(result[untouched], before[untouched])


@pytest.mark.parametrize("device", DEVICES)
@PROPERTY
@given(u2b=permutations(16), e=num_envs, seed=seeds, data=st.data())
def test_scatter_flat_put_and_round_trip(device: str, u2b: list[int], e: int, seed: int, data: st.DataObject) -> None:
    """Scalar data against numpy.put on flat indices; a full scatter of a gather restores the backend array."""
    n = len(u2b)
    nmap = make_map(u2b, device=device)
    _, envs = data.draw(selections(e, device), label="env_ids")
    _, ids = data.draw(selections(n, device), label="element_ids")
    before = random_data(seed, (e, n), np.float32)
    update = random_data(seed + 1, (len(envs), len(ids)), np.float32)
    dst = wp.array(before, dtype=wp.float32, device=device)
    K.scatter_user_to_backend(dst, wp.array(update, dtype=wp.float32, device=device), nmap, envs, ids)
    expected = before.copy()
    flat = envs[:, None] * n + np.asarray(u2b)[ids][None, :]
    np.put(expected, flat.ravel(), update.ravel())
    np.testing.assert_array_equal(dst.numpy(), expected)

    user = K.reorder_backend_to_user(dst, nmap)
    restored = wp.zeros_like(dst)
    K.scatter_user_to_backend(restored, user, nmap)
    np.testing.assert_array_equal(restored.numpy(), dst.numpy())


def test_scatter_errors() -> None:
    nmap = make_map([2, 0, 1])
    dst = wp.zeros((4, 3), dtype=wp.float32, device="cpu")
    src = wp.zeros((2, 3), dtype=wp.float32, device="cpu")
    with pytest.raises(ValueError, match=r"env_ids: duplicate indices \[1\]"):
        K.scatter_user_to_backend(dst, src, nmap, [1, 1])
    with pytest.raises(ValueError, match=r"element_ids: duplicate indices \[0\]"):
        K.scatter_user_to_backend(
            dst, wp.zeros((4, 2), dtype=wp.float32, device="cpu"), nmap, None, np.array([0, 0], np.int64)
        )
    with pytest.raises(ValueError, match="duplicate"):
        K.scatter_user_to_backend(dst, src, nmap, wp.array([3, 3], dtype=wp.int32, device="cpu"))
    with pytest.raises(IndexError, match=r"env_ids: indices \[4\] are out of range \[0, 4\)"):
        K.scatter_user_to_backend(dst, src, nmap, [0, 4])
    with pytest.raises(IndexError, match="out of range"):
        K.scatter_user_to_backend(dst, src, nmap, [-1, 0])
    with pytest.raises(ValueError, match="env_ids: a boolean mask must have length 4, got 3"):
        K.scatter_user_to_backend(dst, src, nmap, [True, False, True])
    with pytest.raises(TypeError, match="env_ids: expected integer indices"):
        K.scatter_user_to_backend(dst, src, nmap, [0.0, 1.0])
    with pytest.raises(
        ValueError, match=r"src_user: expected shape \(3, 3\) \(len\(env_ids\), len\(element_ids\)\), got \(2, 3\)"
    ):
        K.scatter_user_to_backend(dst, src, nmap, [0, 1, 2])
    with pytest.raises(ValueError, match=r"src_user: expected shape \(4, 3\) \(num_envs, N\) because compact=False"):
        K.scatter_user_to_backend(dst, src, nmap, [0, 1], compact=False)
    with pytest.raises(TypeError, match="src_user: dtype float64 does not match dst_backend dtype float32"):
        K.scatter_user_to_backend(dst, wp.zeros((2, 3), dtype=wp.float64, device="cpu"), nmap, [0, 1])
    with pytest.raises(
        ValueError, match="user_to_backend: the joint map has 3 elements, but axis 1 of dst_backend has 5"
    ):
        K.scatter_user_to_backend(wp.zeros((4, 5), dtype=wp.float32, device="cpu"), src, nmap)
    with pytest.raises(TypeError, match="user_to_backend: expected a 1-D wp.int32 array"):
        K.scatter_user_to_backend(dst, src, wp.zeros(3, dtype=wp.int64, device="cpu"), [0, 1])
    with pytest.raises(ValueError, match=r"user_to_backend: expected shape \(3,\)"):
        K.scatter_user_to_backend(dst, src, wp.zeros(4, dtype=wp.int32, device="cpu"), [0, 1])
    with pytest.raises(ValueError, match=r"dst_backend: expected shape \(num_envs, N\)"):
        K.scatter_user_to_backend(wp.zeros(3, dtype=wp.float32, device="cpu"), src, nmap)
    assert np.all(dst.numpy() == 0)  # nothing was written by the failed calls


def test_scatter_empty_selection_is_a_no_op() -> None:
    dst = wp.array(np.ones((3, 2), np.float32), device="cpu")
    K.scatter_user_to_backend(dst, wp.zeros((0, 2), dtype=wp.float32, device="cpu"), make_map([1, 0]), [])
    np.testing.assert_array_equal(dst.numpy(), np.ones((3, 2)))


# ---------------------------------------------------------------------------------------------------------------
# Dynamics quantities
# ---------------------------------------------------------------------------------------------------------------
real_dtypes = st.sampled_from([np.float32, np.float64])


def test_torch_tensors_in_and_out() -> None:
    torch = pytest.importorskip("torch")
    nmap = make_map([2, 0, 1])
    src = torch.arange(24, dtype=torch.float32).reshape(2, 3, 4)
    user = K.reorder_backend_to_user(src, nmap)
    assert isinstance(user, torch.Tensor)
    assert torch.equal(user, src[:, [2, 0, 1]])
    out = torch.empty_like(src)
    assert K.reorder_user_to_backend(user, nmap, out=out) is out
    assert torch.equal(out, src)

    dst = torch.zeros(4, 3, 7)  # (E, N, C) transforms as floats
    update = torch.ones(2, 2, 7)
    K.scatter_user_to_backend(dst, update, nmap, torch.tensor([3, 1]), torch.tensor([True, False, True]))
    expected = torch.zeros(4, 3, 7)
    expected[torch.tensor([[3], [1]]), torch.tensor([[2, 1]])] = 1.0  # user elements 0, 2 are backend 2, 1
    assert torch.equal(dst, expected)


def test_import_does_not_load_torch() -> None:
    code = "import sys, transfer.kernels, transfer.kernels.plan; assert 'torch' not in sys.modules, 'torch imported'"
    subprocess.run([sys.executable, "-c", code], check=True, capture_output=True)
