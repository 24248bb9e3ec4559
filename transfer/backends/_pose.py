"""Pose math the backends' joint movement probes share: a pose is ``(x, y, z, qx, qy, qz, qw)``, a quaternion
``(qx, qy, qz, qw)``; one pose, not arrays of them (numpy on 3- and 4-vectors, cross products written out)."""

from __future__ import annotations

import numpy as np

__all__ = ["cross", "multiply", "relative_pose", "rotate"]


def cross(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a x b`` of two 3-vectors."""
    return np.array([a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]])


def rotate(q: np.ndarray, v: np.ndarray) -> np.ndarray:
    """``v`` rotated by the unit quaternion ``q``."""
    u, w = q[:3], q[3]
    return v + 2.0 * cross(u, cross(u, v) + w * v)


def multiply(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The quaternion product ``a b`` (``b`` applied first)."""
    av, aw, bv, bw = a[:3], a[3], b[:3], b[3]
    return np.concatenate([aw * bv + bw * av + cross(av, bv), [aw * bw - np.dot(av, bv)]])


def relative_pose(parent: np.ndarray | None, child: np.ndarray) -> np.ndarray:
    """``child``'s pose in ``parent``'s frame (both world poses ``x, y, z, qx, qy, qz, qw``; ``None``: the world)."""
    if parent is None:
        return child.copy()
    px, pq, cx, cq = parent[:3], parent[3:], child[:3], child[3:]
    inv = np.array([-pq[0], -pq[1], -pq[2], pq[3]]) / np.dot(pq, pq)
    return np.concatenate([rotate(inv, cx - px), multiply(inv, cq)])
