"""Warp kernels the views need beyond the generic gathers and scatters of :mod:`transfer.kernels`.

Every kernel takes explicit per-world index arrays (``(num_worlds,)`` or ``(num_worlds, n)`` int32 model indices)
and a 1-D ``env_ids`` selector, so partial writes touch only the selected worlds.
"""

from __future__ import annotations

import warp as wp

__all__ = [
    "body_com_poses",
    "envs_to_articulation_mask",
    "gather_square_blocks",
    "rigid_move_bodies",
    "rigid_twist_bodies",
    "set_fixed_root_anchor",
    "set_free_root_coords",
    "set_free_root_dofs",
    "set_inertia_and_inverse",
    "set_mass_and_inverse",
    "swap_unlimited",
]


@wp.kernel(enable_backward=False)
def body_com_poses(
    body_q: wp.array(dtype=wp.transform),
    body_com: wp.array(dtype=wp.vec3),
    ids: wp.array2d(dtype=wp.int32),
    out: wp.array2d(dtype=wp.transform),
):
    """``out[w, i]``: world pose of the centre of mass of body ``ids[w, i]`` (COM position, body orientation)."""
    w, i = wp.tid()
    b = ids[w, i]
    X = body_q[b]
    out[w, i] = wp.transform(wp.transform_point(X, body_com[b]), wp.transform_get_rotation(X))


@wp.kernel(enable_backward=False)
def envs_to_articulation_mask(
    env_ids: wp.array(dtype=wp.int32),
    articulation_ids: wp.array(dtype=wp.int32),
    mask: wp.array(dtype=wp.bool),
):
    """``mask[articulation_ids[env_ids[k]]] = True`` (the mask is zeroed by the caller)."""
    k = wp.tid()
    mask[articulation_ids[env_ids[k]]] = True


@wp.kernel(enable_backward=False)
def set_free_root_coords(
    values: wp.array(dtype=wp.transform),
    env_ids: wp.array(dtype=wp.int32),
    root_joint: wp.array(dtype=wp.int32),
    q_start: wp.array(dtype=wp.int32),
    joint_X_p: wp.array(dtype=wp.transform),
    joint_X_c: wp.array(dtype=wp.transform),
    joint_q: wp.array(dtype=wp.float32),
):
    """FREE root joint coordinates from the root link pose: ``q = X_p^-1 * pose * X_c`` (Newton's FK inverted)."""
    k = wp.tid()
    w = env_ids[k]
    j = root_joint[w]
    q = wp.transform_inverse(joint_X_p[j]) * values[w] * joint_X_c[j]
    s = q_start[w]
    p = wp.transform_get_translation(q)
    r = wp.transform_get_rotation(q)
    joint_q[s + 0] = p[0]
    joint_q[s + 1] = p[1]
    joint_q[s + 2] = p[2]
    joint_q[s + 3] = r[0]
    joint_q[s + 4] = r[1]
    joint_q[s + 5] = r[2]
    joint_q[s + 6] = r[3]


@wp.kernel(enable_backward=False)
def set_free_root_dofs(
    values: wp.array(dtype=wp.spatial_vector),
    env_ids: wp.array(dtype=wp.int32),
    root_joint: wp.array(dtype=wp.int32),
    qd_start: wp.array(dtype=wp.int32),
    joint_X_p: wp.array(dtype=wp.transform),
    joint_qd: wp.array(dtype=wp.float32),
):
    """FREE root joint velocities from the root twist (COM linear, angular; world): both rotated into X_p's frame."""
    k = wp.tid()
    w = env_ids[k]
    j = root_joint[w]
    R = wp.transform_get_rotation(joint_X_p[j])
    v = wp.quat_rotate_inv(R, wp.spatial_top(values[w]))
    o = wp.quat_rotate_inv(R, wp.spatial_bottom(values[w]))
    s = qd_start[w]
    joint_qd[s + 0] = v[0]
    joint_qd[s + 1] = v[1]
    joint_qd[s + 2] = v[2]
    joint_qd[s + 3] = o[0]
    joint_qd[s + 4] = o[1]
    joint_qd[s + 5] = o[2]


@wp.kernel(enable_backward=False)
def set_fixed_root_anchor(
    values: wp.array(dtype=wp.transform),
    env_ids: wp.array(dtype=wp.int32),
    root_joint: wp.array(dtype=wp.int32),
    joint_X_c: wp.array(dtype=wp.transform),
    joint_X_p: wp.array(dtype=wp.transform),
):
    """Move a world anchor so that its child link lands at ``values[w]``: ``X_p = pose * X_c``."""
    k = wp.tid()
    w = env_ids[k]
    j = root_joint[w]
    joint_X_p[j] = values[w] * joint_X_c[j]


@wp.kernel(enable_backward=False)
def rigid_move_bodies(
    values: wp.array(dtype=wp.transform),
    env_ids: wp.array(dtype=wp.int32),
    root_body: wp.array(dtype=wp.int32),
    body_ids: wp.array2d(dtype=wp.int32),
    body_q: wp.array(dtype=wp.transform),
):
    """Move every body of world ``w`` rigidly so that its root body lands at ``values[w]``."""
    k = wp.tid()
    w = env_ids[k]
    delta = values[w] * wp.transform_inverse(body_q[root_body[w]])
    for i in range(body_ids.shape[1]):
        b = body_ids[w, i]
        body_q[b] = delta * body_q[b]


@wp.kernel(enable_backward=False)
def rigid_twist_bodies(
    values: wp.array(dtype=wp.spatial_vector),
    env_ids: wp.array(dtype=wp.int32),
    root_body: wp.array(dtype=wp.int32),
    body_ids: wp.array2d(dtype=wp.int32),
    body_q: wp.array(dtype=wp.transform),
    body_com: wp.array(dtype=wp.vec3),
    body_qd: wp.array(dtype=wp.spatial_vector),
):
    """Add the change of the root twist to every body of world ``w`` as a rigid motion about the root COM.

    Twists are (COM linear velocity, angular velocity), world frame; relative motion between bodies is kept.
    """
    k = wp.tid()
    w = env_ids[k]
    r = root_body[w]
    c_r = wp.transform_point(body_q[r], body_com[r])
    old = body_qd[r]
    dv = wp.spatial_top(values[w]) - wp.spatial_top(old)
    dw = wp.spatial_bottom(values[w]) - wp.spatial_bottom(old)
    for i in range(body_ids.shape[1]):
        b = body_ids[w, i]
        c_b = wp.transform_point(body_q[b], body_com[b])
        t = body_qd[b]
        body_qd[b] = wp.spatial_vector(
            wp.spatial_top(t) + dv + wp.cross(dw, c_b - c_r),
            wp.spatial_bottom(t) + dw,
        )


@wp.kernel(enable_backward=False)
def set_mass_and_inverse(
    values: wp.array2d(dtype=wp.float32),
    env_ids: wp.array(dtype=wp.int32),
    element_ids: wp.array(dtype=wp.int32),
    ids: wp.array2d(dtype=wp.int32),
    mass: wp.array(dtype=wp.float32),
    inv_mass: wp.array(dtype=wp.float32),
):
    a, c = wp.tid()
    w = env_ids[a]
    i = element_ids[c]
    b = ids[w, i]
    m = values[w, i]
    mass[b] = m
    if m > 0.0:
        inv_mass[b] = 1.0 / m
    else:
        inv_mass[b] = 0.0


@wp.kernel(enable_backward=False)
def set_inertia_and_inverse(
    values: wp.array2d(dtype=wp.mat33),
    env_ids: wp.array(dtype=wp.int32),
    element_ids: wp.array(dtype=wp.int32),
    ids: wp.array2d(dtype=wp.int32),
    inertia: wp.array(dtype=wp.mat33),
    inv_inertia: wp.array(dtype=wp.mat33),
):
    a, c = wp.tid()
    w = env_ids[a]
    i = element_ids[c]
    b = ids[w, i]
    I = values[w, i]  # noqa: E741
    inertia[b] = I
    if wp.abs(wp.determinant(I)) > 0.0:
        inv_inertia[b] = wp.inverse(I)
    else:
        inv_inertia[b] = wp.mat33(0.0)


@wp.kernel(enable_backward=False)
def gather_square_blocks(
    src: wp.array3d(dtype=wp.float32),
    rows: wp.array(dtype=wp.int32),
    out: wp.array3d(dtype=wp.float32),
):
    """``out[w, r, c] = src[rows[w], r, c]`` for the leading ``out.shape[1:]`` block."""
    w, r, c = wp.tid()
    out[w, r, c] = src[rows[w], r, c]


@wp.kernel(enable_backward=False)
def swap_unlimited(
    src: wp.array2d(dtype=wp.float32), threshold: float, value: float, dst: wp.array2d(dtype=wp.float32)
):
    """``dst = src`` with every ``|x| >= threshold`` replaced by ``sign(x) * value`` (one "unlimited" for another)."""
    e, i = wp.tid()
    x = src[e, i]
    if wp.abs(x) >= threshold:
        x = wp.sign(x) * value
    dst[e, i] = x
