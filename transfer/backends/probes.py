"""What a joint movement probe (``transfer validate``) is given and gives back: the contract between validate and
each engine's probe.

Each backend registers one probe in :data:`transfer.backends.REGISTRY` (``movement_probe``: the module whose
``probe(asset, joints, plan) -> MovementTrace`` it is); :func:`transfer.backends.movement_probe` finds it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["MovementCommand", "MovementJoint", "MovementPlan", "MovementTrace"]


# -- joint movement probes (``transfer validate``) --------------------------------------------------------------
# Each engine has one probe, ``transfer.backends.<name>.movement.probe(asset, joints, plan) -> MovementTrace``: it
# loads the asset into an in-memory scene (gravity off, static colliders off, ``plan.pinned`` bodies kinematic),
# actuates ``plan.commands`` for ``plan.duration`` seconds and samples every joint's child pose in its parent's
# frame at each step. The user's file is never written; each call starts from the authored state.


@dataclass(frozen=True)
class MovementJoint:
    """A movable joint as discovery found it (USD values: degrees for angles, stage units for lengths)."""

    path: str
    type: str
    """``"revolute"``, ``"prismatic"``, ``"spherical"``, ``"d6"`` or ``"other"``."""
    parent: str | None
    """``physics:body0`` (``None``: the world)."""
    child: str
    """``physics:body1``."""
    axis: str = "X"
    frame0: tuple[float, ...] = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0)
    """The joint frame in the parent body's frame (``localPos0``, ``localRot0``): ``x, y, z, qx, qy, qz, qw``."""
    frame1: tuple[float, ...] = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0)
    """The joint frame in the child body's frame (``localPos1``, ``localRot1``)."""
    extent: tuple[float, ...] | None = None
    """The child's bounding box in its own frame, ``(min x, y, z, max x, y, z)``; ``None`` without geometry."""


@dataclass(frozen=True)
class MovementCommand:
    """Actuate one joint for a whole attempt.

    ``kind`` ``"drive"``: a velocity drive on the joint's own DoF at ``sign * speed`` (deg/s or m/s); ``"swing"``:
    a spherical joint about ``axis`` 1 or 2 of its frame (the two axes perpendicular to the authored one);
    ``"nudge"``: the child's linear velocity along world ``axis`` 0, 1, 2 at ``sign * speed`` (stage units/s).
    """

    joint: str
    kind: str
    sign: int = 1
    speed: float = 45.0
    axis: int = 0


@dataclass(frozen=True)
class MovementPlan:
    """One attempt: commands, pinned base bodies and the actuation schedules."""

    commands: tuple[MovementCommand, ...]
    pinned: tuple[str, ...] = ()
    duration: float = 2.0
    dt: float = 1.0 / 120.0
    damping: tuple[float, float] = (10.0, 1000.0)
    """Velocity-drive damping ramped from the first value to the second (USD units: per degree or per metre)."""
    acceleration: tuple[float, float] = (0.002, 0.05)
    """Force-pair magnitude as an equivalent acceleration (m/s^2) of the moving mass, ramped (force-based probes)."""
    max_force: float = 1.0e7
    """Drive force / torque cap (N or N·m)."""


@dataclass
class MovementTrace:
    """What one probe saw: ``poses[joint]`` is ``(steps + 1, 7)``, the child's pose in the parent's frame
    (``x, y, z, qx, qy, qz, qw``) before the first step and after each; ``coordinates[joint]`` the engine's own joint
    coordinate of that joint per step (``(steps + 1, k)``, degrees or stage units), where the engine reports one;
    ``skipped[joint]`` why the engine could not actuate a commanded joint."""

    engine: str
    poses: dict[str, Any]
    coordinates: dict[str, Any] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
