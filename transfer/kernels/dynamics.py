"""Dynamics quantities in public order: generalized vectors, mass matrices and Jacobians.

Floating-base coordinates stay in place; the joint (DoF) map permutes the rest, and for Jacobians the body map
permutes the rows. Same conventions as :mod:`transfer.kernels.reorder` (gathers, ``*_backend_to_user`` /
``*_user_to_backend`` by direction).
"""

from collections.abc import Callable
from typing import Any

import warp as wp

from transfer.kernels.checks import MapAttr, as_warp, check_map, check_ndim, gather_map, prepare_out
from transfer.kernels.reorder import _REAL_DTYPES
from transfer.name_map import ArticulationNameMap


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
    idx = wp.array(dtype=wp.int32)
    for dt in _REAL_DTYPES:
        wp.overload(reorder_generalized_2d, [wp.array2d(dtype=dt), idx, int, wp.array2d(dtype=dt)])
        wp.overload(reorder_mass_matrix_3d, [wp.array3d(dtype=dt), idx, int, wp.array3d(dtype=dt)])
        wp.overload(reorder_jacobian_4d, [wp.array4d(dtype=dt), idx, int, idx, int, wp.array4d(dtype=dt)])


_register_overloads()


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
    src_wp = as_warp(src, src_name)
    check_ndim(src_wp, src_name, (ndim,), layout)
    out_wp, out = prepare_out(src_wp, out, src, src_name)
    launch(src_wp, out_wp)
    return out


def _generalized(src: Any, joint_map: Any, num_base_dofs: int, out: Any, attr: MapAttr, src_name: str) -> Any:
    def launch(s: wp.array, d: wp.array) -> None:
        num_joints = _num_joint_dofs(s.shape[1], num_base_dofs, src_name)
        check_map(joint_map, "joint_map", num_joints, f"{src_name} (after {num_base_dofs} base DoFs)")
        jm = gather_map(joint_map, attr, num_joints, s.device)
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
        check_map(joint_map, "joint_map", num_joints, f"{src_name} (after {num_base_dofs} base DoFs)")
        jm = gather_map(joint_map, attr, num_joints, s.device)
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
        check_map(joint_map, "joint_map", num_joints, f"{src_name} (after {num_base_dofs} base DoF columns)")
        what = f"{src_name} ({rows} rows{' + the omitted root' if shift else ''})"
        check_map(body_map, "body_map", rows + shift, what)
        if shift and body_map is not None and body_map.user_to_backend_indices[0] != 0:
            raise ValueError(
                "body_map: with root_row_omitted=True the root must be body 0 in both orders "
                f"(fixed-root-first), but user body 0 {body_map.user_names[0]!r} is backend body "
                f"{body_map.user_to_backend_indices[0]}"
            )
        bm = gather_map(body_map, attr, rows + shift, s.device)
        jm = gather_map(joint_map, attr, num_joints, s.device)
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
