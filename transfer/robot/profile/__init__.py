"""The USD side of ``transfer validate``, with pxr alone (no engine): joint discovery and the robot profile checks.

- :func:`scan_joints`: every joint of a stage before any physics runs (type, path, parent and child bodies, axis,
  limits, joint frames, the child's bounding box), and which bodies belong to an articulation. The joint_movement
  test (:mod:`transfer.runs.validate`) plans its attempts from it.
- :func:`profile_findings`: the Robot-Gripper-Isaac profile rules that ordering and transfer rely on (stage
  metadata, rigid bodies, joint bodies, driven joints, mimic joints, the articulation root, ``IsaacRobotAPI`` with
  complete ``isaac:physics:robotJoints`` / ``robotLinks``, gripper sites, naming, physics layer separation), and the
  robot checks a policy needs (links of a floating base without collision geometry, movable joints without limits,
  drives without an effort limit, the base kind and its Isaac Lab flag). Each :class:`Finding` names the rule, its
  ``severity`` (``error`` / ``warning`` / ``info``), the prim, what was found and the fix.
- :func:`stage_contents`: whether a stage defines anything to validate, and its composition errors.
- :func:`read_asset_settings`: what a starting task file takes from the asset (``transfer task``): each driven joint's
  gains, target, authored position, effort and velocity limits, armature (SI units: angular drive gains per radian),
  and the scene and articulation settings (time step, gravity, solver iterations, self-collisions).

The stage is only read: nothing here writes a layer.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Any

from transfer.robot.profile.rules import (
    FIXES,
    ROBOT_SCHEMA_RULES,
    SEVERITIES,
    SEVERITY,
    Finding,
    StageContents,
    profile_findings,
    stage_contents,
)
from transfer.robot.profile.settings import AssetSettings, JointDrive, read_asset_settings
from transfer.robot.usd import open_stage, read_physics

__all__ = [
    "FIXES",
    "ROBOT_SCHEMA_RULES",
    "SEVERITIES",
    "SEVERITY",
    "Finding",
    "JointScan",
    "ScannedJoint",
    "AssetSettings",
    "JointDrive",
    "StageContents",
    "profile_findings",
    "read_asset_settings",
    "scan_joints",
    "stage_contents",
]

_IDENTITY = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0)


@dataclass(frozen=True)
class ScannedJoint:
    """One joint as the UsdPhysics parse gives it. Angles in degrees, lengths in stage units."""

    path: str
    type: str
    parent: str | None
    child: str | None
    axis: str = "X"
    lower: float | None = None
    upper: float | None = None
    """Authored limits of a revolute or prismatic joint (``None`` when unauthored or infinite)."""
    frame0: tuple[float, ...] = _IDENTITY
    frame1: tuple[float, ...] = _IDENTITY
    extent: tuple[float, ...] | None = None
    """The child body's bounding box in its own frame (geometry of nested rigid bodies left out)."""
    excluded: bool = False
    enabled: bool = True

    @property
    def name(self) -> str:
        return self.path.rsplit("/", 1)[-1]


@dataclass(frozen=True)
class JointScan:
    """Every joint and rigid body of a stage, and the bodies inside articulations."""

    source: str
    joints: tuple[ScannedJoint, ...]
    bodies: tuple[str, ...]
    articulated: frozenset[str]
    """Bodies that belong to an articulation (a ``PhysicsArticulationRootAPI`` covers them)."""
    kinematic: frozenset[str]


def _frame(position: Any, orientation: Any) -> tuple[float, ...]:
    imag = orientation.GetImaginary()
    return (*(float(c) for c in position), float(imag[0]), float(imag[1]), float(imag[2]), float(orientation.GetReal()))


def _extent(stage: Any, body: str, bodies: set[str], cache: Any) -> tuple[float, ...] | None:
    """The bounding box of ``body``'s own geometry in its frame (prims under nested rigid bodies excluded)."""
    from pxr import Gf, Usd, UsdGeom

    root = stage.GetPrimAtPath(body)
    box = Gf.Range3d()
    it = iter(Usd.PrimRange(root, Usd.TraverseInstanceProxies()))
    for prim in it:
        if prim != root and str(prim.GetPath()) in bodies:
            it.PruneChildren()
            continue
        if prim.IsA(UsdGeom.Gprim):
            box.UnionWith(cache.ComputeRelativeBound(prim, root).ComputeAlignedRange())
    if box.IsEmpty():
        return None
    lo, hi = box.GetMin(), box.GetMax()
    return (*(float(c) for c in lo), *(float(c) for c in hi))


def scan_joints(asset: Any) -> JointScan:
    """Discover every joint of ``asset`` (a USD path or ``Usd.Stage``) before physics: see :class:`JointScan`."""
    from pxr import Usd, UsdGeom, UsdPhysics

    stage = open_stage(asset)
    physics = read_physics(stage)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        parsed = UsdPhysics.LoadUsdPhysicsFromRange(stage, ["/"])
    descs: dict[str, Any] = {}
    for otype, (paths, items) in parsed.items():
        if "Joint" in str(otype):
            descs.update({str(p): d for p, d in zip(paths, items, strict=True)})
    purposes = [UsdGeom.Tokens.default_, UsdGeom.Tokens.render, UsdGeom.Tokens.proxy, UsdGeom.Tokens.guide]
    cache = UsdGeom.BBoxCache(Usd.TimeCode.Default(), purposes, useExtentsHint=False)
    bodies = set(physics.bodies)
    extents: dict[str, tuple[float, ...] | None] = {}
    joints = []
    for path, joint in sorted(physics.joints.items()):
        desc = descs[path]
        lower = upper = None
        limit = getattr(desc, "limit", None)
        if joint.type.value in ("revolute", "prismatic") and limit is not None and limit.enabled:
            lower = float(limit.lower) if math.isfinite(limit.lower) else None
            upper = float(limit.upper) if math.isfinite(limit.upper) else None
        child = joint.body1
        if child is not None and child not in extents:
            extents[child] = _extent(stage, child, bodies, cache)
        joints.append(
            ScannedJoint(
                path=path,
                type=joint.type.value,
                parent=joint.body0,
                child=child,
                axis=str(getattr(desc, "axis", "X") or "X").rsplit(".", 1)[-1],
                lower=lower,
                upper=upper,
                frame0=_frame(desc.localPose0Position, desc.localPose0Orientation),
                frame1=_frame(desc.localPose1Position, desc.localPose1Orientation),
                extent=extents.get(child) if child else None,
                excluded=joint.excluded,
                enabled=joint.enabled,
            )
        )
    articulated = frozenset(b for _, members, _ in physics.articulations for b in members)
    kinematic = frozenset(p for p, b in physics.bodies.items() if b.kinematic)
    source = stage.GetRootLayer().realPath or stage.GetRootLayer().identifier
    return JointScan(source, tuple(joints), tuple(sorted(bodies)), articulated, kinematic)
