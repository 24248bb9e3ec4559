"""The tables and argument checks of :class:`~transfer.backends.physx.backend.PhysxBackend`: which ovphysx tensor
binding holds each state and property, and the constructor's arguments checked and completed from the scene."""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from transfer.backends.scene import SceneDescription

# Backend name -> (tensor type name, trailing shape builder)
_STATE = {
    "root_pose": "ARTICULATION_ROOT_POSE",
    "root_velocity": "ARTICULATION_ROOT_VELOCITY",
    "body_poses": "ARTICULATION_LINK_POSE",
    "body_velocities": "ARTICULATION_LINK_VELOCITY",
    "joint_pos": "ARTICULATION_DOF_POSITION",
    "joint_vel": "ARTICULATION_DOF_VELOCITY",
    "joint_pos_target": "ARTICULATION_DOF_POSITION_TARGET",
    "joint_vel_target": "ARTICULATION_DOF_VELOCITY_TARGET",
    "joint_effort": "ARTICULATION_DOF_ACTUATION_FORCE",
}
# Property bindings are host-only in ovphysx (even on GPU scenes).
_PROPERTIES = {
    "stiffness": "ARTICULATION_DOF_STIFFNESS",
    "damping": "ARTICULATION_DOF_DAMPING",
    "armature": "ARTICULATION_DOF_ARMATURE",
    "friction": "ARTICULATION_DOF_FRICTION_PROPERTIES",  # (static, dynamic, viscous); `friction` is static
    "limits": "ARTICULATION_DOF_LIMIT",  # (lower, upper)
    "velocity_limit": "ARTICULATION_DOF_MAX_VELOCITY",
    "effort_limit": "ARTICULATION_DOF_MAX_FORCE",
}
# Host bindings created on first use (mass properties, shape materials).
_ON_DEMAND = {
    "body_mass": "ARTICULATION_BODY_MASS",
    "body_inertia": "ARTICULATION_BODY_INERTIA",
    "body_com": "ARTICULATION_BODY_COM_POSE",  # (x, y, z, qx, qy, qz, qw) of each link's centre of mass, link frame
    "shape_material": "ARTICULATION_SHAPE_FRICTION_AND_RESTITUTION",  # (static, dynamic, restitution) per shape
}
# Public property -> (binding, component of the trailing axis or None)
_PROPERTY_FIELDS = {
    "stiffness": ("stiffness", None),
    "damping": ("damping", None),
    "armature": ("armature", None),
    "friction": ("friction", 0),
    "position_limit_lower": ("limits", 0),
    "position_limit_upper": ("limits", 1),
    "velocity_limit": ("velocity_limit", None),
    "effort_limit": ("effort_limit", None),
}


def _checked_arguments(
    usd_path: str | os.PathLike,
    num_envs: Any,
    device: Any,
    num_threads: Any,
    dt: Any,
    env_spacing: Any,
    drive_max_force: Any,
) -> tuple[Path, str, bool]:
    """``(resolved asset path, device string, cuda)`` once every constructor argument checked here is valid."""
    path = Path(os.fspath(usd_path)).expanduser().resolve()
    if not path.is_file():
        raise FileNotFoundError(f"PhysxBackend: USD asset not found: {path}. Check usd_path.")
    if isinstance(num_envs, bool) or not isinstance(num_envs, int) or num_envs < 1:
        raise ValueError(f"PhysxBackend: num_envs must be a positive integer, got {num_envs!r}")
    if isinstance(num_threads, bool) or not isinstance(num_threads, int) or num_threads < 0:
        raise ValueError(f"PhysxBackend: num_threads must be an integer >= 0, got {num_threads!r}")
    if not (isinstance(dt, (int, float)) and math.isfinite(dt) and dt > 0):
        raise ValueError(f"PhysxBackend: dt must be a positive number of seconds, got {dt!r}")
    if not (math.isfinite(env_spacing) and env_spacing >= 0):
        raise ValueError(f"PhysxBackend: env_spacing must be a finite distance >= 0, got {env_spacing!r}")
    if isinstance(drive_max_force, bool) or not (
        isinstance(drive_max_force, (int, float)) and not math.isnan(drive_max_force) and drive_max_force > 0
    ):
        raise ValueError(
            f"PhysxBackend: drive_max_force must be a positive number (N or N·m; math.inf for no limit), "
            f"got {drive_max_force!r}"
        )
    device = str(device)
    cuda = device.startswith("cuda")
    if not cuda and device != "cpu":
        raise ValueError(f"PhysxBackend: device must be 'cpu' or 'cuda[:N]', got {device!r}")
    return path, device, cuda


def _scene_defaults(
    world: SceneDescription,
    ground_height: float | None,
    spawn_offset: Sequence[float] | None,
    solver_position_iterations: int | None,
    solver_velocity_iterations: int | None,
) -> tuple[float | None, Sequence[float] | None, int | None, int | None]:
    """``(ground_height, spawn_offset, solver_position_iterations, solver_velocity_iterations)``: the explicit
    arguments, with ``world``'s settings filling those left open."""
    ground_height = ground_height if ground_height is not None or world.ground is None else world.ground_height
    if spawn_offset is None and world.spawn_height is not None:
        spawn_offset = (0.0, 0.0, world.spawn_lift)
    if solver_position_iterations is None:
        solver_position_iterations = world.settings_for("physx").get("solver_position_iterations")
    if solver_velocity_iterations is None:
        solver_velocity_iterations = world.settings_for("physx").get("solver_velocity_iterations")
    return ground_height, spawn_offset, solver_position_iterations, solver_velocity_iterations
