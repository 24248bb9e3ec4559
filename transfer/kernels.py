"""Warp kernels and helpers that permute articulation data between a backend's order and the public (user) order.

Conventions (see also :class:`transfer.name_map.ArticulationNameMap`):

- Arrays are ``(num_envs, num_elements[, ...])``: environments first, then the articulation axis (joints, DoFs or
  bodies), then whatever the caller needs (components, rows). Only the articulation axis is permuted.
- Every permutation is a *gather*: ``dst[e, i] = src[e, index_map[i]]``. Gathering with
  ``ordering.user_to_backend`` turns backend order into user order; gathering with ``ordering.backend_to_user``
  turns user order into backend order. The ``*_backend_to_user`` / ``*_user_to_backend`` kernel names are aliases of
  one generic kernel and exist for readability at the call site.
- The public kernels are generic over the element dtype (``float32``, ``float64``, ``int32``, ``vec3``, ``quat``,
  ``transform``, ``spatial_vector``, ``mat33``, ...): Warp instantiates an overload per dtype on first launch.
  Overloads for the common dtypes are registered when this module is imported, so each kernel module compiles
  once with a stable hash and is then served from Warp's kernel cache.
- The caller owns allocation and every non-articulation axis. The kernels are forward-only
  (``enable_backward=False``).

Example (the Isaac Lab spelling)::

    wp.launch(reorder_2d_backend_to_user, dim=(num_envs, num_joints),
              inputs=[joint_pos_backend, ordering.user_to_backend], outputs=[joint_pos_user], device=device)

The Python helpers (:func:`reorder_backend_to_user`, :func:`scatter_user_to_backend`, the dynamics functions)
check shapes and dtypes, accept ``wp.array`` or ``torch.Tensor`` (zero-copy), and pick the fastest launch for the
device: one thread per element on CUDA, one thread per environment row on CPU.
"""

from collections.abc import Callable
from functools import lru_cache
from typing import Any, Literal

import numpy as np
import warp as wp

from transfer.name_map import ArticulationNameMap

__all__ = [
    "host_indices",
    "VALUE_DTYPES",
    "generalized_backend_to_user",
    "generalized_user_to_backend",
    "jacobian_backend_to_user",
    "jacobian_user_to_backend",
    "launch_reorder",
    "mass_matrix_backend_to_user",
    "mass_matrix_user_to_backend",
    "reorder_2d",
    "reorder_2d_backend_to_user",
    "reorder_2d_user_to_backend",
    "reorder_3d",
    "reorder_3d_backend_to_user",
    "reorder_3d_user_to_backend",
    "reorder_backend_to_user",
    "reorder_generalized_2d",
    "reorder_jacobian_4d",
    "reorder_mass_matrix_3d",
    "reorder_rows_2d",
    "reorder_rows_3d",
    "reorder_user_to_backend",
    "scatter_2d_user_to_backend_compact",
    "scatter_2d_user_to_backend_full",
    "scatter_user_to_backend",
]

MapAttr = Literal["user_to_backend", "backend_to_user"]

#: Element dtypes whose kernel overloads are registered at import (others are instantiated on first launch).
VALUE_DTYPES: tuple[Any, ...] = (
    wp.float32,
    wp.float64,
    wp.int32,
    wp.vec3,
    wp.quat,
    wp.transform,
    wp.spatial_vector,
    wp.mat33,
)
_SCALAR_DTYPES: tuple[Any, ...] = (wp.float32, wp.float64, wp.int32)
_REAL_DTYPES: tuple[Any, ...] = (wp.float32, wp.float64)


# ---------------------------------------------------------------------------------------------------------------
# Public elementwise kernels: one thread per element (the right shape for CUDA).
# ---------------------------------------------------------------------------------------------------------------
@wp.kernel(enable_backward=False, module="unique")
def reorder_2d(src: wp.array2d(dtype=Any), index_map: wp.array(dtype=wp.int32), dst: wp.array2d(dtype=Any)):
    """``dst[e, i] = src[e, index_map[i]]``. Shapes: src, dst (num_envs, N); index_map (N,). Launch dim (num_envs, N)."""
    e, i = wp.tid()
    dst[e, i] = src[e, index_map[i]]


@wp.kernel(enable_backward=False, module="unique")
def reorder_3d(src: wp.array3d(dtype=Any), index_map: wp.array(dtype=wp.int32), dst: wp.array3d(dtype=Any)):
    """``dst[e, i, c] = src[e, index_map[i], c]``. Shapes: src, dst (num_envs, N, C). Launch dim (num_envs, N, C)."""
    e, i, c = wp.tid()
    dst[e, i, c] = src[e, index_map[i], c]


#: Backend order -> user order. Launch with ``inputs=[src_backend, ordering.user_to_backend]``.
reorder_2d_backend_to_user = reorder_2d
#: User order -> backend order. Launch with ``inputs=[src_user, ordering.backend_to_user]``.
reorder_2d_user_to_backend = reorder_2d
#: Backend order -> user order for ``(env, element, component)`` arrays, ``inputs=[src, ordering.user_to_backend]``.
reorder_3d_backend_to_user = reorder_3d
#: User order -> backend order for ``(env, element, component)`` arrays, ``inputs=[src, ordering.backend_to_user]``.
reorder_3d_user_to_backend = reorder_3d


# ---------------------------------------------------------------------------------------------------------------
# Row kernels: one thread per environment (the right shape for Warp's serial CPU backend).
# ---------------------------------------------------------------------------------------------------------------
@wp.kernel(enable_backward=False, module="unique")
def reorder_rows_2d(src: wp.array2d(dtype=Any), index_map: wp.array(dtype=wp.int32), dst: wp.array2d(dtype=Any)):
    """Same result as :data:`reorder_2d`, one thread per row. Launch dim num_envs.

    Written for Warp's serial CPU backend: ``while`` loops (unrolled by four) over 1-D row views compile to
    tighter code than ``for i in range(n)`` over 2-D indices.
    """
    e = wp.tid()
    s = src[e]
    d = dst[e]
    n = index_map.shape[0]
    i = int(0)  # noqa: UP018 (Warp: a literal would be a constant)
    while i + 4 <= n:
        a0 = s[index_map[i]]
        a1 = s[index_map[i + 1]]
        a2 = s[index_map[i + 2]]
        a3 = s[index_map[i + 3]]
        d[i] = a0
        d[i + 1] = a1
        d[i + 2] = a2
        d[i + 3] = a3
        i += 4
    while i < n:
        d[i] = s[index_map[i]]
        i += 1


@wp.kernel(enable_backward=False, module="unique")
def reorder_rows_3d(src: wp.array3d(dtype=Any), index_map: wp.array(dtype=wp.int32), dst: wp.array3d(dtype=Any)):
    """Same result as :data:`reorder_3d`, one thread per row. Launch dim num_envs."""
    e = wp.tid()
    n = index_map.shape[0]
    m = src.shape[2]
    i = int(0)  # noqa: UP018 (Warp: a literal would be a constant)
    while i < n:
        j = index_map[i]
        c = int(0)  # noqa: UP018 (Warp: a literal would be a constant)
        while c < m:
            dst[e, i, c] = src[e, j, c]
            c += 1
        i += 1


# ---------------------------------------------------------------------------------------------------------------
# Partial writes.
# ---------------------------------------------------------------------------------------------------------------
@wp.kernel(enable_backward=False, module="unique")
def scatter_2d_user_to_backend_compact(
    src_user: wp.array2d(dtype=Any),
    env_ids: wp.array(dtype=wp.int32),
    element_ids: wp.array(dtype=wp.int32),
    user_to_backend: wp.array(dtype=wp.int32),
    dst_backend: wp.array2d(dtype=Any),
):
    """``dst_backend[env_ids[a], user_to_backend[element_ids[b]]] = src_user[a, b]``.

    Shapes: src_user (len(env_ids), len(element_ids)); dst_backend (num_envs, N). Launch dim
    (len(env_ids), len(element_ids)). Selectors must not contain duplicates.
    """
    a, b = wp.tid()
    dst_backend[env_ids[a], user_to_backend[element_ids[b]]] = src_user[a, b]


@wp.kernel(enable_backward=False, module="unique")
def scatter_2d_user_to_backend_full(
    src_user: wp.array2d(dtype=Any),
    env_ids: wp.array(dtype=wp.int32),
    element_ids: wp.array(dtype=wp.int32),
    user_to_backend: wp.array(dtype=wp.int32),
    dst_backend: wp.array2d(dtype=Any),
):
    """``dst_backend[e, user_to_backend[u]] = src_user[e, u]`` for ``e`` in env_ids, ``u`` in element_ids.

    Shapes: src_user, dst_backend (num_envs, N). Launch dim (len(env_ids), len(element_ids)).
    """
    a, b = wp.tid()
    e = env_ids[a]
    u = element_ids[b]
    dst_backend[e, user_to_backend[u]] = src_user[e, u]


@wp.kernel(enable_backward=False, module="unique")
def _indices_to_int32(src: wp.array(dtype=Any), dst: wp.array(dtype=wp.int32)):
    i = wp.tid()
    dst[i] = wp.int32(src[i])


# ---------------------------------------------------------------------------------------------------------------
# Dynamics quantities: floating-base coordinates stay in place, the joint (DoF) map permutes the rest.
# ---------------------------------------------------------------------------------------------------------------
@wp.func
def _dof_source(k: int, num_base_dofs: int, joint_map: wp.array(dtype=wp.int32)) -> int:
    if k < num_base_dofs:
        return k
    return num_base_dofs + joint_map[k - num_base_dofs]


@wp.kernel(enable_backward=False, module="unique")
def reorder_generalized_2d(
    src: wp.array2d(dtype=Any),
    joint_map: wp.array(dtype=wp.int32),
    num_base_dofs: int,
    dst: wp.array2d(dtype=Any),
):
    """Generalized vectors. Shapes: src, dst (num_envs, num_base_dofs + J); joint_map (J,). Launch dim (E, D)."""
    e, k = wp.tid()
    dst[e, k] = src[e, _dof_source(k, num_base_dofs, joint_map)]


@wp.kernel(enable_backward=False, module="unique")
def reorder_mass_matrix_3d(
    src: wp.array3d(dtype=Any),
    joint_map: wp.array(dtype=wp.int32),
    num_base_dofs: int,
    dst: wp.array3d(dtype=Any),
):
    """Mass matrices, both axes permuted. Shapes: src, dst (num_envs, D, D); joint_map (D - num_base_dofs,).

    Launch dim (E, D, D).
    """
    e, r, c = wp.tid()
    dst[e, r, c] = src[e, _dof_source(r, num_base_dofs, joint_map), _dof_source(c, num_base_dofs, joint_map)]


@wp.kernel(enable_backward=False, module="unique")
def reorder_jacobian_4d(
    src: wp.array4d(dtype=Any),
    body_map: wp.array(dtype=wp.int32),
    root_row_omitted: int,
    joint_map: wp.array(dtype=wp.int32),
    num_base_dofs: int,
    dst: wp.array4d(dtype=Any),
):
    """Jacobians. Shapes: src, dst (num_envs, rows, 6, D); body_map (rows + root_row_omitted,). Launch dim = shape.

    With ``root_row_omitted == 1`` row ``r`` is body ``r + 1`` (body 0, the fixed root, has no row).
    """
    e, r, k, c = wp.tid()
    row = body_map[r + root_row_omitted] - root_row_omitted
    dst[e, r, k, c] = src[e, row, k, _dof_source(c, num_base_dofs, joint_map)]


def _register_overloads() -> None:
    """Instantiate the common dtypes up front so each module compiles once, with a stable hash (kernel cache)."""
    idx = wp.array(dtype=wp.int32)
    for dt in VALUE_DTYPES:
        a2 = wp.array2d(dtype=dt)
        for k in (reorder_2d, reorder_rows_2d):
            wp.overload(k, [a2, idx, a2])
        for k in (scatter_2d_user_to_backend_compact, scatter_2d_user_to_backend_full):
            wp.overload(k, [a2, idx, idx, idx, a2])
    for dt in _SCALAR_DTYPES:
        a3 = wp.array3d(dtype=dt)
        for k in (reorder_3d, reorder_rows_3d):
            wp.overload(k, [a3, idx, a3])
    for dt in _REAL_DTYPES:
        wp.overload(reorder_generalized_2d, [wp.array2d(dtype=dt), idx, int, wp.array2d(dtype=dt)])
        wp.overload(reorder_mass_matrix_3d, [wp.array3d(dtype=dt), idx, int, wp.array3d(dtype=dt)])
        wp.overload(reorder_jacobian_4d, [wp.array4d(dtype=dt), idx, int, idx, int, wp.array4d(dtype=dt)])
    wp.overload(_indices_to_int32, [wp.array(dtype=wp.int64), idx])


_register_overloads()


# ---------------------------------------------------------------------------------------------------------------
# Host-side helpers.
# ---------------------------------------------------------------------------------------------------------------
def _is_torch(x: Any) -> bool:
    return type(x).__module__.startswith("torch")


def _as_warp(x: Any, name: str) -> wp.array:
    """``x`` as a Warp array (zero-copy for torch tensors)."""
    if isinstance(x, wp.array):
        return x
    if _is_torch(x):
        return wp.from_torch(x)
    raise TypeError(f"{name}: expected a wp.array or torch.Tensor, got {type(x).__name__}")


def _empty_like(x: Any, *, zero: bool = False) -> Any:
    """A fresh contiguous array of the same kind, shape, dtype and device as ``x`` (zero-filled if ``zero``)."""
    if _is_torch(x):
        return x.new_zeros(x.shape) if zero else x.new_empty(x.shape)
    return wp.zeros_like(x) if zero else wp.empty_like(x)


def _dtype_name(dtype: Any) -> str:
    return getattr(dtype, "__name__", str(dtype))


def _check_shape(a: wp.array, name: str, expected: tuple[int, ...], what: str = "") -> None:
    if tuple(a.shape) != tuple(expected):
        hint = f" {what}" if what else ""
        raise ValueError(f"{name}: expected shape {tuple(expected)}{hint}, got {tuple(a.shape)}")


def _check_same(a: wp.array, a_name: str, b: wp.array, b_name: str) -> None:
    """Same dtype and device (shapes are checked by the caller)."""
    if a.dtype != b.dtype:
        raise TypeError(f"{b_name}: dtype {_dtype_name(b.dtype)} does not match {a_name} dtype {_dtype_name(a.dtype)}")
    if a.device != b.device:
        raise ValueError(f"{b_name}: on device {b.device}, but {a_name} is on {a.device}")


def _check_ndim(a: wp.array, name: str, ndims: tuple[int, ...], layout: str) -> None:
    if a.ndim not in ndims:
        raise ValueError(f"{name}: expected shape {layout}, got {tuple(a.shape)}")


def _check_no_alias(src: wp.array, dst: wp.array, dst_name: str) -> None:
    if src.ptr is not None and src.ptr == dst.ptr and src.size > 0:
        raise ValueError(f"{dst_name}: must not alias the source array (a permutation cannot run in place)")


@lru_cache(maxsize=64)
def _map_on_device(nmap: ArticulationNameMap, device: str) -> ArticulationNameMap:
    return nmap.to_device(device)


def _device_map(nmap: ArticulationNameMap, attr: MapAttr, device: wp.Device) -> wp.array:
    """The ``attr`` index array of ``nmap`` on ``device`` (cached per map and device)."""
    if str(wp.get_device(nmap.device)) != str(device):
        nmap = _map_on_device(nmap, str(device))
    return getattr(nmap, attr)


@lru_cache(maxsize=256)
def _arange(n: int, device: str) -> wp.array:
    """Cached ``[0, 1, ..., n-1]`` as ``wp.int32`` on ``device`` (identity maps, "all" selectors)."""
    return wp.array(np.arange(n, dtype=np.int32), dtype=wp.int32, device=device)


def _check_map(nmap: Any, name: str, n: int, what: str) -> None:
    if nmap is None:
        return
    if not isinstance(nmap, ArticulationNameMap):
        raise TypeError(f"{name}: expected an ArticulationNameMap or None, got {type(nmap).__name__}")
    if len(nmap) != n:
        raise ValueError(f"{name}: the {nmap.kind} map has {len(nmap)} elements, but {what} has {n}")


def _gather_map(nmap: ArticulationNameMap | None, attr: MapAttr, n: int, device: wp.Device) -> wp.array:
    return _arange(n, str(device)) if nmap is None else _device_map(nmap, attr, device)


def _prepare_out(src: wp.array, out: Any, src_like: Any, src_name: str) -> tuple[wp.array, Any]:
    """Allocate or check the output of a same-shape permutation; returns (warp view, object to return)."""
    if out is None:
        out = _empty_like(src_like)
    out_wp = _as_warp(out, "out")
    _check_shape(out_wp, "out", tuple(src.shape), f"(same as {src_name})")
    _check_same(src, src_name, out_wp, "out")
    _check_no_alias(src, out_wp, "out")
    return out_wp, out


# ---------------------------------------------------------------------------------------------------------------
# Whole-array reorders.
# ---------------------------------------------------------------------------------------------------------------
def launch_reorder(src: wp.array, index_map: wp.array, dst: wp.array, *, record_cmd: bool = False) -> Any:
    """Launch ``dst[e, i, ...] = src[e, index_map[i], ...]`` with the best kernel shape for the device.

    Shapes: src, dst (num_envs, N) or (num_envs, N, C); index_map (N,). No checks: the caller has done them.
    Returns the ``wp.Launch`` when ``record_cmd`` is true (nothing runs until ``.launch()``), else ``None``.
    """
    device = src.device
    if src.ndim == 2:
        kernel = reorder_rows_2d if device.is_cpu else reorder_2d
    else:
        kernel = reorder_rows_3d if device.is_cpu else reorder_3d
    dim = src.shape[0] if device.is_cpu else src.shape
    return wp.launch(kernel, dim=dim, inputs=[src, index_map], outputs=[dst], device=device, record_cmd=record_cmd)


def _reorder(src: Any, nmap: ArticulationNameMap | None, attr: MapAttr, out: Any, src_name: str) -> Any:
    src_wp = _as_warp(src, src_name)
    _check_ndim(src_wp, src_name, (2, 3), "(num_envs, N) or (num_envs, N, C)")
    _check_map(nmap, "nmap", src_wp.shape[1], f"axis 1 of {src_name}")
    if nmap is None and out is None:
        return src
    out_wp, out = _prepare_out(src_wp, out, src, src_name)
    if nmap is None:
        wp.copy(out_wp, src_wp)
    else:
        launch_reorder(src_wp, _device_map(nmap, attr, src_wp.device), out_wp)
    return out


def reorder_backend_to_user(src_backend: Any, nmap: ArticulationNameMap | None, *, out: Any = None) -> Any:
    """Permute backend-order data into user order along axis 1.

    Shape: src_backend and out (num_envs, N) or (num_envs, N, C), ``wp.array`` or ``torch.Tensor``.
    ``nmap=None`` (identity) returns ``src_backend`` itself unless ``out`` is given (then it is copied).
    """
    return _reorder(src_backend, nmap, "user_to_backend", out, "src_backend")


def reorder_user_to_backend(src_user: Any, nmap: ArticulationNameMap | None, *, out: Any = None) -> Any:
    """Permute user-order data into backend order along axis 1.

    Shape: src_user and out (num_envs, N) or (num_envs, N, C), ``wp.array`` or ``torch.Tensor``.
    ``nmap=None`` (identity) returns ``src_user`` itself unless ``out`` is given (then it is copied).
    """
    return _reorder(src_user, nmap, "backend_to_user", out, "src_user")


# ---------------------------------------------------------------------------------------------------------------
# Partial writes.
# ---------------------------------------------------------------------------------------------------------------
def host_indices(sel: Any, n: int, name: str) -> np.ndarray:
    """A selector of ``n`` elements as validated int32 indices on the host, in the order given.

    Accepts a slice or range, a list or numpy array of int32/int64 indices, a boolean mask of length ``n``, a
    ``torch.Tensor`` or a ``wp.array`` (copied to the host). Raises ``IndexError`` for out-of-range indices and
    ``ValueError`` for duplicates or a mask of the wrong length, naming ``name``.
    """
    if isinstance(sel, slice):
        return np.arange(n, dtype=np.int32)[sel]
    if _is_torch(sel):
        sel = sel.detach().cpu().numpy()
    elif isinstance(sel, wp.array):
        sel = sel.numpy()
    values = np.asarray(sel)
    if values.ndim != 1:
        raise ValueError(f"{name}: expected a 1-D index array or boolean mask, got shape {values.shape}")
    if values.dtype == np.bool_:
        if values.shape[0] != n:
            raise ValueError(f"{name}: a boolean mask must have length {n}, got {values.shape[0]}")
        return np.flatnonzero(values).astype(np.int32)
    if values.size == 0:
        return np.zeros(0, dtype=np.int32)
    if not np.issubdtype(values.dtype, np.integer):
        raise TypeError(f"{name}: expected integer indices (int32 or int64) or a boolean mask, got {values.dtype}")
    bad = values[(values < 0) | (values >= n)]
    if bad.size:
        raise IndexError(f"{name}: indices {bad[:8].tolist()} are out of range [0, {n})")
    uniq, counts = np.unique(values, return_counts=True)
    if uniq.size != values.size:
        raise ValueError(
            f"{name}: duplicate indices {uniq[counts > 1][:8].tolist()}; each index may appear once "
            "(a duplicate would make two threads write the same element)"
        )
    return values.astype(np.int32)


def _selector(sel: Any, n: int, name: str, device: wp.Device) -> wp.array:
    """Normalize a selector to a ``wp.int32`` index array on ``device``.

    ``None`` or ``slice(None)`` selects all. Host selectors (lists, numpy, slices, CPU tensors and arrays) and
    boolean masks (from anywhere; converted on the host) are checked for range and duplicates. int32/int64 index
    arrays already on a CUDA device are used unchecked: checking them would synchronize.
    """
    if sel is None or (isinstance(sel, slice) and sel == slice(None)):
        return _arange(n, str(device))
    if _is_torch(sel) and sel.is_cuda and not sel.dtype.is_floating_point and sel.dtype.itemsize in (4, 8):
        return _device_selector(wp.from_torch(sel), name, device)
    if isinstance(sel, wp.array) and not sel.device.is_cpu and sel.dtype != wp.bool:
        return _device_selector(sel, name, device)
    return wp.array(host_indices(sel, n, name), dtype=wp.int32, device=device)


def _device_selector(sel: wp.array, name: str, device: wp.Device) -> wp.array:
    if sel.ndim != 1 or sel.dtype not in (wp.int32, wp.int64):
        raise TypeError(f"{name}: expected a 1-D int32/int64 index array or a boolean mask, got {sel.dtype}")
    if sel.device != device:
        raise ValueError(f"{name}: on device {sel.device}, but the data is on {device}")
    if sel.dtype == wp.int32:
        return sel
    converted = wp.empty(sel.shape[0], dtype=wp.int32, device=device)
    wp.launch(_indices_to_int32, dim=sel.shape[0], inputs=[sel], outputs=[converted], device=device)
    return converted


def _as_rows(a: wp.array, name: str) -> wp.array:
    """A 2-D view: ``(num_envs, N, C)`` scalar arrays become ``(num_envs, N)`` arrays of length-C vectors."""
    if a.ndim == 2:
        return a
    if a.ndim == 3 and wp.types.type_is_scalar(a.dtype) and a.strides[2] == wp.types.type_size_in_bytes(a.dtype):
        return a.view(wp.types.vector(a.shape[2], a.dtype))
    raise ValueError(f"{name}: expected shape (num_envs, N) or (num_envs, N, C) with contiguous C, got {a.shape}")


def scatter_user_to_backend(
    dst_backend: Any,
    src_user: Any,
    user_to_backend: ArticulationNameMap | wp.array | None,
    env_ids: Any = None,
    element_ids: Any = None,
    *,
    compact: bool = True,
) -> None:
    """Write user-order values into a backend-order array for selected environments and user elements.

    ``dst_backend[env, user_to_backend[u]] = value`` for each ``env`` in ``env_ids`` and ``u`` in ``element_ids``;
    every other entry of ``dst_backend`` is left untouched.

    Args:
        dst_backend: Backend-order data, updated in place. Shape: (num_envs, N), any dtype, or (num_envs, N, C).
        src_user: The update in user order. Shape: (len(env_ids), len(element_ids)) when ``compact`` (the
            default), else the full (num_envs, N) from which the selected entries are taken. Same dtype.
        user_to_backend: An :class:`ArticulationNameMap` (its ``user_to_backend`` array is used), a ``wp.int32``
            array of length N with the backend index of each user element, or ``None`` for the identity.
        env_ids, element_ids: ``None``/``slice(None)`` (all), a slice, int32 or int64 indices (list, numpy,
            ``wp.array``, ``torch.Tensor``) or a boolean mask of length num_envs / N. ``element_ids`` are *user*
            indices.

    Raises:
        ValueError: shape or device mismatches (the message names the argument and the expected shape); duplicate
            indices in a selector. Duplicates and ranges are checked on the host for selectors that live on the
            host (and for boolean masks, which are converted on the host); int32/int64 index arrays already on a
            CUDA device are used as given, unchecked, so nothing synchronizes.
        IndexError: a host selector index is out of range.
        TypeError: wrong argument types or mismatched dtypes.
    """
    dst = _as_rows(_as_warp(dst_backend, "dst_backend"), "dst_backend")
    src = _as_rows(_as_warp(src_user, "src_user"), "src_user")
    num_envs, n = dst.shape
    device = dst.device
    if isinstance(user_to_backend, ArticulationNameMap):
        _check_map(user_to_backend, "user_to_backend", n, "axis 1 of dst_backend")
        index_map = _device_map(user_to_backend, "user_to_backend", device)
    elif isinstance(user_to_backend, wp.array):
        index_map = user_to_backend
        if index_map.dtype != wp.int32 or index_map.ndim != 1:
            raise TypeError(f"user_to_backend: expected a 1-D wp.int32 array, got {index_map.dtype} {index_map.shape}")
        _check_shape(index_map, "user_to_backend", (n,), "(axis 1 of dst_backend)")
        if index_map.device != device:
            raise ValueError(f"user_to_backend: on device {index_map.device}, but dst_backend is on {device}")
    elif user_to_backend is None:
        index_map = _arange(n, str(device))
    else:
        raise TypeError(
            f"user_to_backend: expected an ArticulationNameMap, a wp.int32 array or None, got {type(user_to_backend).__name__}"
        )
    envs = _selector(env_ids, num_envs, "env_ids", device)
    ids = _selector(element_ids, n, "element_ids", device)
    if compact:
        _check_shape(src, "src_user", (envs.shape[0], ids.shape[0]), "(len(env_ids), len(element_ids))")
        kernel = scatter_2d_user_to_backend_compact
    else:
        _check_shape(src, "src_user", (num_envs, n), "(num_envs, N) because compact=False")
        kernel = scatter_2d_user_to_backend_full
    _check_same(dst, "dst_backend", src, "src_user")
    _check_no_alias(src, dst, "dst_backend")
    if user_to_backend is None and env_ids is None and element_ids is None:
        wp.copy(dst, src)  # everything, same order: a copy (no per-call kernel type inference)
    elif envs.shape[0] and ids.shape[0]:
        wp.launch(
            kernel,
            dim=(envs.shape[0], ids.shape[0]),
            inputs=[src, envs, ids, index_map],
            outputs=[dst],
            device=device,
        )


# ---------------------------------------------------------------------------------------------------------------
# Dynamics quantities.
# ---------------------------------------------------------------------------------------------------------------
def _num_joint_dofs(total: int, num_base_dofs: int, name: str) -> int:
    if num_base_dofs < 0 or num_base_dofs > total:
        raise ValueError(
            f"num_base_dofs must be in [0, {total}] for {name} with {total} DoF columns, got {num_base_dofs}"
        )
    return total - num_base_dofs


def _dynamics(
    src: Any,
    out: Any,
    src_name: str,
    layout: str,
    ndim: int,
    launch: Callable[[wp.array, wp.array], None],
) -> Any:
    src_wp = _as_warp(src, src_name)
    _check_ndim(src_wp, src_name, (ndim,), layout)
    out_wp, out = _prepare_out(src_wp, out, src, src_name)
    launch(src_wp, out_wp)
    return out


def _generalized(src: Any, joint_map: Any, num_base_dofs: int, out: Any, attr: MapAttr, src_name: str) -> Any:
    def launch(s: wp.array, d: wp.array) -> None:
        num_joints = _num_joint_dofs(s.shape[1], num_base_dofs, src_name)
        _check_map(joint_map, "joint_map", num_joints, f"{src_name} (after {num_base_dofs} base DoFs)")
        jm = _gather_map(joint_map, attr, num_joints, s.device)
        wp.launch(reorder_generalized_2d, dim=s.shape, inputs=[s, jm, num_base_dofs], outputs=[d], device=s.device)

    return _dynamics(src, out, src_name, "(num_envs, num_base_dofs + num_joint_dofs)", 2, launch)


def generalized_backend_to_user(
    src_backend: Any, joint_map: ArticulationNameMap | None, num_base_dofs: int = 0, *, out: Any = None
) -> Any:
    """Generalized vector (positions, velocities, forces) from backend to user order.

    Shape: src_backend and out (num_envs, num_base_dofs + J). The first ``num_base_dofs`` entries (the floating
    base, e.g. 6) stay in place; the joint map (J elements) permutes the rest. Returns ``out`` (allocated if None).
    """
    return _generalized(src_backend, joint_map, num_base_dofs, out, "user_to_backend", "src_backend")


def generalized_user_to_backend(
    src_user: Any, joint_map: ArticulationNameMap | None, num_base_dofs: int = 0, *, out: Any = None
) -> Any:
    """Generalized vector from user to backend order. Shape: (num_envs, num_base_dofs + J)."""
    return _generalized(src_user, joint_map, num_base_dofs, out, "backend_to_user", "src_user")


def _mass_matrix(src: Any, joint_map: Any, num_base_dofs: int, out: Any, attr: MapAttr, src_name: str) -> Any:
    def launch(s: wp.array, d: wp.array) -> None:
        if s.shape[1] != s.shape[2]:
            raise ValueError(f"{src_name}: expected shape (num_envs, D, D), got {tuple(s.shape)}")
        num_joints = _num_joint_dofs(s.shape[1], num_base_dofs, src_name)
        _check_map(joint_map, "joint_map", num_joints, f"{src_name} (after {num_base_dofs} base DoFs)")
        jm = _gather_map(joint_map, attr, num_joints, s.device)
        wp.launch(reorder_mass_matrix_3d, dim=s.shape, inputs=[s, jm, num_base_dofs], outputs=[d], device=s.device)

    return _dynamics(src, out, src_name, "(num_envs, D, D)", 3, launch)


def mass_matrix_backend_to_user(
    src_backend: Any, joint_map: ArticulationNameMap | None, num_base_dofs: int = 0, *, out: Any = None
) -> Any:
    """Mass matrix from backend to user order, rows and columns permuted alike.

    Shape: src_backend and out (num_envs, D, D) with D = num_base_dofs + J; base rows/columns stay in place.
    """
    return _mass_matrix(src_backend, joint_map, num_base_dofs, out, "user_to_backend", "src_backend")


def mass_matrix_user_to_backend(
    src_user: Any, joint_map: ArticulationNameMap | None, num_base_dofs: int = 0, *, out: Any = None
) -> Any:
    """Mass matrix from user to backend order. Shape: (num_envs, D, D)."""
    return _mass_matrix(src_user, joint_map, num_base_dofs, out, "backend_to_user", "src_user")


def _jacobian(
    src: Any,
    body_map: Any,
    joint_map: Any,
    num_base_dofs: int,
    root_row_omitted: bool,
    out: Any,
    attr: MapAttr,
    src_name: str,
) -> Any:
    shift = int(bool(root_row_omitted))

    def launch(s: wp.array, d: wp.array) -> None:
        num_envs, rows, six, cols = s.shape
        if six != 6:
            raise ValueError(f"{src_name}: expected shape (num_envs, rows, 6, D), got {tuple(s.shape)}")
        num_joints = _num_joint_dofs(cols, num_base_dofs, src_name)
        _check_map(joint_map, "joint_map", num_joints, f"{src_name} (after {num_base_dofs} base DoF columns)")
        what = f"{src_name} ({rows} rows{' + the omitted root' if shift else ''})"
        _check_map(body_map, "body_map", rows + shift, what)
        if shift and body_map is not None and body_map.user_to_backend_indices[0] != 0:
            raise ValueError(
                "body_map: with root_row_omitted=True the root must be body 0 in both orders "
                f"(fixed-root-first), but user body 0 {body_map.user_names[0]!r} is backend body "
                f"{body_map.user_to_backend_indices[0]}"
            )
        bm = _gather_map(body_map, attr, rows + shift, s.device)
        jm = _gather_map(joint_map, attr, num_joints, s.device)
        wp.launch(
            reorder_jacobian_4d,
            dim=s.shape,
            inputs=[s, bm, shift, jm, num_base_dofs],
            outputs=[d],
            device=s.device,
        )

    return _dynamics(src, out, src_name, "(num_envs, rows, 6, D)", 4, launch)


def jacobian_backend_to_user(
    src_backend: Any,
    body_map: ArticulationNameMap | None,
    joint_map: ArticulationNameMap | None,
    num_base_dofs: int = 0,
    *,
    root_row_omitted: bool = False,
    out: Any = None,
) -> Any:
    """Jacobians from backend to user order: body rows by ``body_map``, DoF columns by ``joint_map``.

    Shape: src_backend and out (num_envs, rows, 6, D) with D = num_base_dofs + J. The first ``num_base_dofs``
    columns stay in place. ``root_row_omitted=True`` is for fixed-base backends whose Jacobian has no row for the
    root: rows = num_bodies - 1, row ``r`` is body ``r + 1``, and the root must be body 0 in both orders.
    """
    return _jacobian(
        src_backend, body_map, joint_map, num_base_dofs, root_row_omitted, out, "user_to_backend", "src_backend"
    )


def jacobian_user_to_backend(
    src_user: Any,
    body_map: ArticulationNameMap | None,
    joint_map: ArticulationNameMap | None,
    num_base_dofs: int = 0,
    *,
    root_row_omitted: bool = False,
    out: Any = None,
) -> Any:
    """Jacobians from user to backend order. Shape: (num_envs, rows, 6, D); see :func:`jacobian_backend_to_user`."""
    return _jacobian(src_user, body_map, joint_map, num_base_dofs, root_row_omitted, out, "backend_to_user", "src_user")
