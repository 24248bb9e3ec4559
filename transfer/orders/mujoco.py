"""The ``mujoco`` convention: MuJoCo's order of the robot's own MJCF (depth-first in document order), the order of
MuJoCo, mjlab and Isaac Gym / legged_gym policies. A converted USD does not keep it: it is read from the robot's
MJCF or URDF (:func:`transfer.robot.assets.mjcf.mujoco_joint_names`). MuJoCo floats a root body with a free joint and
welds one without to the world, as the converted USD says Newton reads it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from transfer.orders.conventions import Convention
from transfer.orders.mjwarp import _mjwarp_holds_base
from transfer.robot.assets import source_format
from transfer.robot.assets.mjcf import mjcf_body_names


def _bodies(path: str | Path) -> Any:
    """MuJoCo's body order of an MJCF; ``None`` for a URDF (its bodies are MuJoCo's compiler's to merge)."""
    return mjcf_body_names(path) if source_format(path) == "mjcf" else None


CONVENTION = Convention(
    "mujoco",
    "MuJoCo's order of the robot's MJCF or URDF (depth-first in document order): mjlab, legged_gym",
    holds_base=_mjwarp_holds_base,
    source_file="transfer.robot.assets.mjcf:mujoco_joint_names",
    bodies_from_source=_bodies,
    no_order="the joint order MuJoCo gives the robot's MJCF (or URDF)",
)
"""The ``mujoco`` convention (:mod:`transfer.orders.conventions`)."""
