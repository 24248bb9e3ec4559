"""Forward kinematics of a robot file with MuJoCo: where a body is for given base poses and joint positions (a
reference motion's anchor body, frame by frame, as mjlab's ``csv_to_npz`` computes it with ``sim.forward()``)."""

from __future__ import annotations

import os
from collections.abc import Sequence

import mujoco
import numpy as np

from transfer.backends.mujoco.model import build_model
from transfer.backends.scene import SceneDescription

__all__ = ["body_poses"]


def body_poses(
    asset: str | os.PathLike,
    root_pos: np.ndarray,
    root_quat: np.ndarray,
    joint_names: Sequence[str],
    joint_pos: np.ndarray,
    bodies: Sequence[str],
) -> tuple[np.ndarray, np.ndarray]:
    """``(positions (T, B, 3), quaternions (T, B, 4) xyzw)`` of the bodies ``bodies`` of the robot ``asset`` (its MJCF
    or URDF, or the one a USD robot was converted from) at each of ``T`` states: the floating base at ``root_pos`` /
    ``root_quat`` (xyzw, world frame) and the joints ``joint_names`` at ``joint_pos`` ``(T, J)``. Raises
    ``ValueError`` naming a body the robot has none of, or a joint it lacks."""
    built = build_model(asset, SceneDescription(), drives=False)
    m = built.model
    for body in bodies:
        if body not in built.body_names:
            raise ValueError(
                f"{body!r} is not a body of {built.source.name}; its bodies: "
                f"{', '.join(built.body_names[:12])}{', ...' if len(built.body_names) > 12 else ''}"
            )
    missing = [n for n in joint_names if n not in built.joint_names]
    if missing:
        raise ValueError(f"{built.source.name} has no joints {missing[:6]}")
    if built.free_qpos is None:
        raise ValueError(
            f"{built.source.name}: its root is fixed to the world; a reference motion moves a floating base"
        )
    d = mujoco.MjData(m)
    qadr = np.array([m.joint(n).qposadr[0] for n in joint_names], np.int64)
    b = np.array([m.body(body).id for body in bodies], np.int64)
    f = built.free_qpos
    quat_wxyz = np.concatenate([root_quat[:, 3:4], root_quat[:, :3]], axis=1)
    pos_out, quat_out = np.zeros((len(root_pos), len(b), 3)), np.zeros((len(root_pos), len(b), 4))
    for k in range(len(root_pos)):
        d.qpos[f : f + 3], d.qpos[f + 3 : f + 7] = root_pos[k], quat_wxyz[k]
        d.qpos[qadr] = joint_pos[k]
        mujoco.mj_kinematics(m, d)
        pos_out[k] = d.xpos[b]
        quat_out[k] = np.concatenate([d.xquat[b, 1:], d.xquat[b, :1]], axis=1)
    return pos_out, quat_out
