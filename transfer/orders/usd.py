"""Read an :class:`~transfer.orders.graph.ArticulationGraph` from USD with ``pxr`` alone (no engine).

Membership comes from usd-core's own UsdPhysics parse, the parse both engines start from: it resolves
joint targets below a body to the enclosing rigid body, composes references, payloads and instances, and
lists each articulation's bodies and joints.
"""

from __future__ import annotations

import os
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from transfer.orders.graph import ArticulationGraph, Body, Joint, JointType, OrderingError, RobotSchema, Topology

__all__ = ["StagePhysics", "open_stage", "read_physics", "read_robot_schema", "read_topology"]

_ROBOT_JOINTS = "isaac:physics:robotJoints"
_ROBOT_LINKS = "isaac:physics:robotLinks"
_NAME_OVERRIDES = ("isaac:nameOverride", "isaac:NameOverride")


def open_stage(asset: Any):
    """A ``Usd.Stage`` from a path or a stage. Missing or unreadable files raise with the path."""
    from pxr import Usd

    if isinstance(asset, Usd.Stage):
        return asset
    if not isinstance(asset, (str, os.PathLike)):
        raise TypeError(f"Expected a USD file path or a Usd.Stage, got {type(asset).__name__}")
    path = Path(asset)
    if not path.is_file():
        raise FileNotFoundError(f"USD file not found: {path}. Check the path (relative paths start at {Path.cwd()}).")
    try:
        stage = Usd.Stage.Open(str(path))
    except Exception as exc:  # pxr raises Tf.ErrorException
        raise OrderingError(f"Could not open USD file {path}: {exc}") from exc
    if stage is None:
        raise OrderingError(f"Could not open USD file {path}: not a USD layer.")
    return stage


def _source(stage) -> str:
    return stage.GetRootLayer().realPath or stage.GetRootLayer().identifier


def _parse(stage, root: str):
    from pxr import UsdPhysics

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return UsdPhysics.LoadUsdPhysicsFromRange(stage, [root])


_JOINT_TYPES = {
    "FixedJoint": JointType.FIXED,
    "RevoluteJoint": JointType.REVOLUTE,
    "PrismaticJoint": JointType.PRISMATIC,
    "SphericalJoint": JointType.SPHERICAL,
    "D6Joint": JointType.D6,
    "DistanceJoint": JointType.DISTANCE,
    "CustomJoint": JointType.OTHER,
}


def _limits(prim) -> tuple[tuple[str, float | None, float | None], ...]:
    from pxr import UsdPhysics

    out = []
    for schema in prim.GetAppliedSchemas():
        if not schema.startswith("PhysicsLimitAPI:"):
            continue
        axis = schema.split(":", 1)[1]
        api = UsdPhysics.LimitAPI(prim, axis)
        lo, hi = api.GetLowAttr(), api.GetHighAttr()
        out.append(
            (
                axis,
                float(lo.Get()) if lo.HasAuthoredValue() else None,
                float(hi.Get()) if hi.HasAuthoredValue() else None,
            )
        )
    return tuple(sorted(out))


def _check_targets(stage, path: str, desc) -> None:
    prim = stage.GetPrimAtPath(path)
    for rel_name in ("physics:body0", "physics:body1"):
        rel = prim.GetRelationship(rel_name)
        targets = rel.GetTargets() if rel else []
        if len(targets) > 1:
            raise OrderingError(f"Joint {path}: {rel_name} has {len(targets)} targets; a joint side names one body.")
        for target in targets:
            if not stage.GetPrimAtPath(target).IsValid():
                raise OrderingError(
                    f"Joint {path}: {rel_name} targets {target}, which does not exist in the stage. "
                    "Point it at an existing rigid body (or remove it to attach the joint to the world)."
                )
    if desc.body0 == desc.body1 and str(desc.body0):
        raise OrderingError(
            f"Joint {path} connects body {desc.body0} to itself; physics:body0 and physics:body1 must name two "
            "different bodies."
        )


@dataclass(frozen=True)
class StagePhysics:
    """Every rigid body and joint of a stage, and each articulation's members, from the UsdPhysics parse."""

    bodies: dict[str, Body]
    joints: dict[str, Joint]
    articulations: tuple[tuple[str, tuple[str, ...], tuple[str, ...]], ...]
    """``(root prim, member bodies, member joints)`` per articulation, members in sorted path order."""


def read_physics(stage) -> StagePhysics:
    """Bodies, joints (validated, with D6 limits) and articulations of an open ``Usd.Stage``."""
    parsed = _parse(stage, "/")
    bodies: dict[str, Body] = {}
    joints: dict[str, Joint] = {}
    articulations = []
    for otype, (paths, descs) in parsed.items():
        name = str(otype).rsplit(".", 1)[-1]
        if name == "RigidBody":
            for path, desc in zip(paths, descs, strict=True):
                bodies[str(path)] = Body(str(path), bool(desc.rigidBodyEnabled), bool(desc.kinematicBody))
        elif name in _JOINT_TYPES:
            for path, desc in zip(paths, descs, strict=True):
                key = str(path)
                _check_targets(stage, key, desc)
                prim = stage.GetPrimAtPath(key)
                jtype = _JOINT_TYPES[name]
                if jtype is JointType.D6 and prim.GetTypeName() != "PhysicsJoint":
                    jtype = JointType.OTHER  # a typed joint the parse treats as D6 (e.g. a custom schema)
                joints[key] = Joint(
                    path=key,
                    type=jtype,
                    body0=str(desc.body0) or None,
                    body1=str(desc.body1) or None,
                    excluded=bool(desc.excludeFromArticulation),
                    enabled=bool(desc.jointEnabled),
                    axis=str(desc.axis) if hasattr(desc, "axis") else None,
                    limits=_limits(prim) if jtype is JointType.D6 else (),
                )
        elif name == "Articulation":
            for path, desc in zip(paths, descs, strict=True):
                members = tuple(sorted(str(p) for p in desc.articulatedBodies if str(p)))
                member_joints = tuple(sorted(str(p) for p in desc.articulatedJoints if str(p)))
                articulations.append((str(path), members, member_joints))
    return StagePhysics(bodies, joints, tuple(sorted(articulations)))


def read_topology(asset: Any, root: str | None = None) -> Topology:
    """Every articulation of a USD file or stage as engine-free graphs, sorted by root path.

    With ``root`` (the path of the prim carrying ``PhysicsArticulationRootAPI``), only that articulation.
    """
    from pxr import UsdPhysics

    stage = open_stage(asset)
    physics = read_physics(stage)
    composition_errors = tuple(str(e) for e in stage.GetCompositionErrors())
    graphs = []
    for key, member_bodies, member_joints in physics.articulations:
        prim = stage.GetPrimAtPath(key)
        if prim.HasAPI(UsdPhysics.RigidBodyAPI):
            kind = "body"
        elif prim.IsA(UsdPhysics.Joint):
            kind = "joint"
        else:
            kind = "ancestor"
        graphs.append(
            ArticulationGraph(
                root=key,
                root_kind=kind,
                bodies=tuple(physics.bodies.get(p, Body(p)) for p in member_bodies),
                joints=tuple(physics.joints[p] for p in member_joints if p in physics.joints),
                source=_source(stage),
                robot=read_robot_schema(stage, key),
                composition_errors=composition_errors,
            )
        )
    graphs.sort(key=lambda g: g.root)
    found = tuple(g.root for g in graphs)
    if root is not None:
        graphs = [g for g in graphs if g.root == root]
        if not graphs:
            hint = f"Articulation roots in this file: {list(found)}." if found else _no_root_hint()
            raise OrderingError(f"No articulation root at {root} in {_source(stage)}. {hint}")
    elif not graphs:
        raise OrderingError(f"No articulation in {_source(stage)}. {_no_root_hint()}")
    return Topology(tuple(graphs), source=_source(stage))


def _no_root_hint() -> str:
    return (
        "Apply PhysicsArticulationRootAPI to the robot's base link (floating base), to the fixed joint that "
        "anchors it to the world (fixed base), or to the robot's top Xform."
    )


def _robot_prim(stage, start: str):
    prim = stage.GetPrimAtPath(start)
    while prim and prim.IsValid() and str(prim.GetPath()) != "/":
        if (
            prim.GetRelationship(_ROBOT_JOINTS)
            or prim.GetRelationship(_ROBOT_LINKS)
            or "IsaacRobotAPI" in (prim.GetAppliedSchemas())
        ):
            return prim
        prim = prim.GetParent()
    default = stage.GetDefaultPrim()
    if (
        default
        and default.IsValid()
        and (default.GetRelationship(_ROBOT_JOINTS) or default.GetRelationship(_ROBOT_LINKS))
    ):
        return default
    return None


def read_robot_schema(asset: Any, articulation_root: str) -> RobotSchema | None:
    """The robot schema of the asset holding ``articulation_root``, or ``None`` when none is authored.

    Looks at the articulation root and its ancestors (the asset prim), then the default prim. Targets that
    are themselves robot prims are expanded in place. Unresolved targets and duplicates raise.
    """
    stage = open_stage(asset)
    prim = _robot_prim(stage, articulation_root)
    if prim is None:
        return None
    names: dict[str, str] = {}

    def expand(p, rel_name: str, stack: tuple[str, ...]) -> list[str]:
        rel = p.GetRelationship(rel_name)
        out: list[str] = []
        for target in rel.GetTargets() if rel else []:
            t = stage.GetPrimAtPath(target)
            if not t.IsValid():
                raise OrderingError(
                    f"{p.GetPath()}.{rel_name} targets {target}, which does not exist in the stage. "
                    "Fix or remove the target."
                )
            key = str(target)
            if t.GetRelationship(rel_name) and key not in stack and key != str(p.GetPath()):
                out.extend(expand(t, rel_name, (*stack, key)))  # nested robot assembly
                continue
            for attr in _NAME_OVERRIDES:
                a = t.GetAttribute(attr)
                if a and a.HasAuthoredValue() and a.Get():
                    names[key] = str(a.Get())
            out.append(key)
        return out

    root_key = str(prim.GetPath())
    joints = expand(prim, _ROBOT_JOINTS, (root_key,))
    links = expand(prim, _ROBOT_LINKS, (root_key,))
    for what, items in (("robotJoints", joints), ("robotLinks", links)):
        dups = sorted({x for x in items if items.count(x) > 1})
        if dups:
            raise OrderingError(f"{root_key}: isaac:physics:{what} lists {dups} more than once; list each once.")
    return RobotSchema(root_key, tuple(joints), tuple(links), tuple(sorted(names.items())))
