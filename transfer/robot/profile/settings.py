"""What a starting task file (``transfer task``) takes from the asset: :func:`read_asset_settings`."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from transfer.orders.graph import OrderingError
from transfer.robot.usd import open_stage, read_physics

__all__ = ["AssetSettings", "JointDrive", "authored", "read_asset_settings"]


def authored(prim: Any, name: str) -> Any:
    """The value ``prim`` authors for attribute ``name``, else ``None`` (a fallback value is not authored)."""
    attr = prim.GetAttribute(name)
    return attr.Get() if attr and attr.HasAuthoredValue() else None


@dataclass(frozen=True)
class JointDrive:
    """A revolute or prismatic articulation joint as authored, in SI units: radians (revolute) or metres; angular
    drive gains per radian (USD authors them per degree: N·m/deg -> x 180/pi). ``None``: not authored."""

    path: str
    type: str
    stiffness: float | None = None
    damping: float | None = None
    target: float | None = None
    """``drive:*:physics:targetPosition``."""
    position: float | None = None
    """``state:*:physics:position`` (PhysicsJointStateAPI): the authored pose."""
    max_force: float | None = None
    """``drive:*:physics:maxForce`` (N·m or N; finite and positive only)."""
    max_velocity: float | None = None
    """``physxJoint:maxJointVelocity`` (rad/s or m/s)."""
    armature: float | None = None
    friction: float | None = None
    lower: float | None = None
    upper: float | None = None

    @property
    def name(self) -> str:
        return self.path.rsplit("/", 1)[-1]


@dataclass(frozen=True)
class AssetSettings:
    """The settings a stage authors for simulation: per joint (:class:`JointDrive`, by joint name) and for the scene
    (``None``: not authored; the engine's or the task's default applies)."""

    source: str
    joints: dict[str, JointDrive]
    time_step: float | None = None
    """``1 / physxScene:timeStepsPerSecond`` of the first PhysicsScene (s)."""
    gravity: tuple[float, float, float] | None = None
    position_iterations: int | None = None
    """``physxArticulation:solverPositionIterationCount`` on the articulation root."""
    velocity_iterations: int | None = None
    self_collisions: bool | None = None
    """``physxArticulation:enabledSelfCollisions``."""
    meters_per_unit: float = 1.0
    root: str | None = None


def _value(prim: Any, name: str, scale: float = 1.0) -> float | None:
    value = authored(prim, name)
    if value is None or not math.isfinite(float(value)):
        return None
    return float(value) * scale


def read_asset_settings(asset: Any, root: str | None = None) -> AssetSettings:
    """:class:`AssetSettings` of ``asset`` (a USD path or ``Usd.Stage``): the joints of the articulation at ``root``
    (default: the first articulation) and the stage's first PhysicsScene."""
    from pxr import UsdGeom, UsdPhysics

    stage = open_stage(asset)
    physics = read_physics(stage)
    articulations = [a for a in physics.articulations if root is None or a[0] == root]
    if not articulations:
        raise OrderingError(
            f"No articulation{f' at {root}' if root else ''} in {stage.GetRootLayer().identifier}: a task file needs "
            "a robot (apply PhysicsArticulationRootAPI to its root prim)"
        )
    art_root, _, member_joints = articulations[0]
    mpu = float(UsdGeom.GetStageMetersPerUnit(stage) or 1.0)
    joints = {}
    for path in member_joints:
        prim = stage.GetPrimAtPath(path)
        kind = {"PhysicsRevoluteJoint": "angular", "PhysicsPrismaticJoint": "linear"}.get(prim.GetTypeName())
        if kind is None or authored(prim, "physics:excludeFromArticulation"):
            continue
        angle = math.pi / 180.0 if kind == "angular" else mpu  # the joint coordinate: deg -> rad, units -> m
        per = 180.0 / math.pi if kind == "angular" else 1.0 / mpu  # gains per coordinate unit -> per rad (per m)
        drive = f"drive:{kind}:physics"
        force = _value(prim, f"{drive}:maxForce")
        joints[prim.GetName()] = JointDrive(
            path=path,
            type="revolute" if kind == "angular" else "prismatic",
            stiffness=_value(prim, f"{drive}:stiffness", per),
            damping=_value(prim, f"{drive}:damping", per),
            target=_value(prim, f"{drive}:targetPosition", angle),
            position=_value(prim, f"state:{kind}:physics:position", angle),
            max_force=force if force is not None and force > 0 else None,
            max_velocity=_value(prim, "physxJoint:maxJointVelocity", angle),
            armature=_value(prim, "physxJoint:armature"),
            friction=_value(prim, "physxJoint:jointFriction"),
            lower=_value(prim, "physics:lowerLimit", angle),
            upper=_value(prim, "physics:upperLimit", angle),
        )
    scene = next((p for p in stage.Traverse() if p.IsA(UsdPhysics.Scene)), None)
    time_step = gravity = None
    if scene is not None:
        steps = _value(scene, "physxScene:timeStepsPerSecond")
        time_step = 1.0 / steps if steps else None
        direction, magnitude = authored(scene, "physics:gravityDirection"), _value(scene, "physics:gravityMagnitude")
        if magnitude is not None and direction is not None and any(direction):
            norm = math.sqrt(sum(float(c) ** 2 for c in direction))
            gravity = tuple(float(c) / norm * magnitude * mpu for c in direction)
    root_prim = stage.GetPrimAtPath(art_root)
    iterations = [authored(root_prim, f"physxArticulation:solver{k}IterationCount") for k in ("Position", "Velocity")]
    collisions = authored(root_prim, "physxArticulation:enabledSelfCollisions")
    return AssetSettings(
        source=stage.GetRootLayer().realPath or stage.GetRootLayer().identifier,
        joints=joints,
        time_step=time_step,
        gravity=gravity,  # type: ignore[arg-type]
        position_iterations=None if iterations[0] is None else int(iterations[0]),
        velocity_iterations=None if iterations[1] is None else int(iterations[1]),
        self_collisions=None if collisions is None else bool(collisions),
        meters_per_unit=mpu,
        root=art_root,
    )
