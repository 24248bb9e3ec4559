"""Rotation maths on xyzw quaternions (the backend contract's convention), in numpy, one copy for every floor:
products, conjugates, rotating vectors, rotation matrices, yaw, and quaternions from roll, pitch and yaw.

Every function broadcasts over leading axes (``(..., 4)`` quaternions, ``(..., 3)`` vectors).
"""

from __future__ import annotations

import numpy as np

__all__ = ["quat_conj", "quat_from_rpy", "quat_mul", "rotate", "rotation_matrices", "slerp", "yaw"]


def quat_mul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a * b`` (Hamilton product) of xyzw quaternions."""
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    av, aw = a[..., :3], a[..., 3:4]
    bv, bw = b[..., :3], b[..., 3:4]
    vec = aw * bv + bw * av + np.cross(av, bv)
    return np.concatenate([vec, aw * bw - np.sum(av * bv, axis=-1, keepdims=True)], axis=-1)


def quat_conj(q: np.ndarray) -> np.ndarray:
    """The conjugate (the inverse of a unit quaternion)."""
    q = np.asarray(q, np.float64)
    return np.concatenate([-q[..., :3], q[..., 3:4]], axis=-1)


def rotate(q: np.ndarray, v: np.ndarray) -> np.ndarray:
    """``v`` rotated by the unit quaternion ``q``."""
    q, v = np.asarray(q, np.float64), np.asarray(v, np.float64)
    u, w = q[..., :3], q[..., 3:4]
    return v + 2.0 * np.cross(u, np.cross(u, v) + w * v)


def rotation_matrices(q: np.ndarray) -> np.ndarray:
    """``(..., 3, 3)`` body-to-world rotations of unit quaternions ``(..., 4)``."""
    x, y, z, w = np.moveaxis(np.asarray(q, np.float64), -1, 0)
    rows = [
        [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
        [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
        [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
    ]
    return np.stack([np.stack(r, axis=-1) for r in rows], axis=-2)


def yaw(q: np.ndarray) -> np.ndarray:
    """The heading (rad) about the world's z axis of xyzw quaternions."""
    x, y, z, w = np.moveaxis(np.asarray(q, np.float64), -1, 0)
    return np.arctan2(2.0 * (w * z + x * y), 1.0 - 2.0 * (y * y + z * z))


def quat_from_rpy(roll: np.ndarray, pitch: np.ndarray, yaw_: np.ndarray) -> np.ndarray:
    """xyzw quaternions of intrinsic z-y-x (yaw, then pitch, then roll) angles."""
    cr, sr, cp, sp = np.cos(roll / 2), np.sin(roll / 2), np.cos(pitch / 2), np.sin(pitch / 2)
    cy, sy = np.cos(yaw_ / 2), np.sin(yaw_ / 2)
    x, y = sr * cp * cy - cr * sp * sy, cr * sp * cy + sr * cp * sy
    z, w = cr * cp * sy - sr * sp * cy, cr * cp * cy + sr * sp * sy
    return np.stack([x, y, z, w], axis=-1)


def slerp(a: np.ndarray, b: np.ndarray, t: np.ndarray) -> np.ndarray:
    """The unit quaternions a fraction ``t`` (``(...,)``, 0..1) of the way from ``a`` to ``b`` along the shorter arc
    (``b`` and ``-b`` are one rotation: the nearer is taken), normalised."""
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    t = np.asarray(t, np.float64)[..., None]
    dot = np.sum(a * b, axis=-1, keepdims=True)
    b = np.where(dot < 0.0, -b, b)
    dot = np.abs(dot)
    theta = np.arccos(np.clip(dot, -1.0, 1.0))
    small = theta < 1e-6
    sin = np.where(small, 1.0, np.sin(theta))
    wa = np.where(small, 1.0 - t, np.sin((1.0 - t) * theta) / sin)
    wb = np.where(small, t, np.sin(t * theta) / sin)
    out = wa * a + wb * b
    return out / np.linalg.norm(out, axis=-1, keepdims=True)
