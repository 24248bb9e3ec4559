"""Where the robot starts and how low it reaches: the spawn height a task gives or the asset's collision geometry
implies (:func:`spawn_heights`), the base the training engine builds (:func:`training_base`), the pose the engines
create it in (:func:`default_pose`), and the lowest point of a link's collision box at an engine's pose
(:func:`lowest`), which the environment's spawn and fall rule read. The robot is read through its
:class:`~transfer.robot.Robot` value (a path is made one).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from transfer._rotations import rotation_matrices
from transfer.backends import native_backend, native_convention
from transfer.orders import OrderingError
from transfer.robot import Robot
from transfer.task import Task, TaskError, expand_joint_values

__all__ = ["SPAWN_MARGIN", "default_pose", "lowest", "spawn_heights", "training_base"]

SPAWN_MARGIN = 0.05
"""Metres between the ground and the asset's lowest collision geometry when the spawn height is computed."""


def spawn_heights(task: Task, asset: str | Path | Robot, fixed_base: bool | None = None) -> tuple[float, float]:
    """``(spawn height, authored root height)``: where the root link starts above the ground plane (the task's
    ``spawn_height``, or computed from the asset's collision geometry at its authored pose, lifted by
    :data:`SPAWN_MARGIN`), and where the asset authors it.

    A floating robot with no collision geometry at all is refused: it would fall through the ground, and a run
    would blame the policy for it. ``fixed_base``: whether the base is held to the world (:func:`training_base`);
    ``None``: as PhysX's articulation says."""
    robot = Robot.of(asset)
    order = robot.members()
    fixed = order.fixed_base if fixed_base is None else fixed_base
    root_z, lowest_z = robot.spawn_geometry(order.root_body)
    if lowest_z is None and not fixed:
        errors = tuple(e for articulation in robot.topology for e in articulation.composition_errors)
        raise ValueError(_no_colliders(robot.given, order.root_body, errors))
    if task.spawn_height is not None:
        return task.spawn_height, root_z
    return root_z - (root_z if lowest_z is None else lowest_z) + SPAWN_MARGIN, root_z


def training_base(task: Task, asset: str | Path | Robot) -> bool | None:
    """Whether the engine ``task`` was trained on holds the robot's root link to the world (a fixed base), on the
    USD ``asset`` (:func:`transfer.orders.holds_base`): the base a run asks every engine for, so that a replay on
    the other engine keeps the training conditions (docs/replay.md). The training engine is the task's
    ``trained_on``, else its convention's engine (:func:`transfer.backends.native_backend`); ``None`` when there is
    none or the asset's articulation cannot be resolved (each engine then builds the base as it does)."""
    engine = task.trained_on or native_backend(task.convention)
    convention = None if engine is None else native_convention(engine)
    if convention is None:
        return None
    try:
        return Robot.of(asset).holds_base(convention)
    except OrderingError:
        return None


def default_pose(task: Task, asset: str | Path | Robot) -> dict[str, float]:
    """The task's default joint positions by joint name on ``asset`` (patterns expanded): the pose the engines create
    the robot in (:attr:`~transfer.backends.scene.SceneDescription.joint_positions`)."""
    try:
        names = Robot.of(asset).members().joints
        return expand_joint_values(task.default_joint_pos, names, field="default_joint_pos", require_all=False)
    except (OrderingError, TaskError):
        return {}  # the environment names the problem when it expands the task on the articulation


def _no_colliders(asset: str | Path, root_body: str, composition_errors: tuple[str, ...]) -> str:
    why = ""
    if composition_errors:
        why = f" The stage has composition errors, which may be why: {composition_errors[0]}"
        why += f" (+{len(composition_errors) - 1} more)." if len(composition_errors) > 1 else ""
    fix = (
        "Apply PhysicsCollisionAPI to geometry under its links (the feet at least), or make the mesh files its "
        "collision prims reference available"
    )
    if str(asset).lower().endswith(".xml"):  # an MJCF robot: said in its own terms
        fix = "Give its bodies geoms that collide (contype or conaffinity not 0; the feet at least)"
        root_body = f"body {root_body.rsplit('/', 1)[-1]!r}"
    return (
        f"{asset}: no link of this floating-base robot (root {root_body}) has collision geometry, so it would fall "
        f"through the ground.{why} {fix}; `transfer validate ASSET` lists the links."
    )


def lowest(corners: np.ndarray, pos: np.ndarray, quat: np.ndarray) -> np.ndarray:
    """Per env, the lowest world height of a link's box ``corners`` (its frame) at position ``pos`` ``(n, 3)`` and
    orientation ``quat`` ``(n, 4)`` xyzw."""
    height = rotation_matrices(quat)[:, 2, :] @ np.asarray(corners, np.float64).T  # (n, k): the z row
    return (np.asarray(pos, np.float64)[:, 2:3] + height).min(axis=1)
