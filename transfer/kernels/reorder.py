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

The Python helpers (:func:`reorder_backend_to_user`, :func:`scatter_user_to_backend`) check shapes and dtypes, accept ``wp.array`` or ``torch.Tensor`` (zero-copy), and pick the fastest launch for the
device: one thread per element on CUDA, one thread per environment row on CPU.
"""

from typing import Any

import warp as wp

from transfer.kernels.checks import (
    MapAttr,
    as_warp,
    check_map,
    check_ndim,
    check_no_alias,
    check_same,
    check_shape,
    device_map,
    prepare_out,
)
from transfer.kernels.select import arange, index_array
from transfer.name_map import ArticulationNameMap

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


_register_overloads()


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
    src_wp = as_warp(src, src_name)
    check_ndim(src_wp, src_name, (2, 3), "(num_envs, N) or (num_envs, N, C)")
    check_map(nmap, "nmap", src_wp.shape[1], f"axis 1 of {src_name}")
    if nmap is None and out is None:
        return src
    out_wp, out = prepare_out(src_wp, out, src, src_name)
    if nmap is None:
        wp.copy(out_wp, src_wp)
    else:
        launch_reorder(src_wp, device_map(nmap, attr, src_wp.device), out_wp)
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
    dst = _as_rows(as_warp(dst_backend, "dst_backend"), "dst_backend")
    src = _as_rows(as_warp(src_user, "src_user"), "src_user")
    num_envs, n = dst.shape
    device = dst.device
    if isinstance(user_to_backend, ArticulationNameMap):
        check_map(user_to_backend, "user_to_backend", n, "axis 1 of dst_backend")
        index_map = device_map(user_to_backend, "user_to_backend", device)
    elif isinstance(user_to_backend, wp.array):
        index_map = user_to_backend
        if index_map.dtype != wp.int32 or index_map.ndim != 1:
            raise TypeError(f"user_to_backend: expected a 1-D wp.int32 array, got {index_map.dtype} {index_map.shape}")
        check_shape(index_map, "user_to_backend", (n,), "(axis 1 of dst_backend)")
        if index_map.device != device:
            raise ValueError(f"user_to_backend: on device {index_map.device}, but dst_backend is on {device}")
    elif user_to_backend is None:
        index_map = arange(n, str(device))
    else:
        raise TypeError(
            f"user_to_backend: expected an ArticulationNameMap, a wp.int32 array or None, got {type(user_to_backend).__name__}"
        )
    envs = index_array(env_ids, num_envs, "env_ids", device)
    ids = index_array(element_ids, n, "element_ids", device)
    if compact:
        check_shape(src, "src_user", (envs.shape[0], ids.shape[0]), "(len(env_ids), len(element_ids))")
        kernel = scatter_2d_user_to_backend_compact
    else:
        check_shape(src, "src_user", (num_envs, n), "(num_envs, N) because compact=False")
        kernel = scatter_2d_user_to_backend_full
    check_same(dst, "dst_backend", src, "src_user")
    check_no_alias(src, dst, "dst_backend")
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
