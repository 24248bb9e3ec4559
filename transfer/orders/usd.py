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
    Raises :class:`OrderingError` when there is no articulation (or none at ``root``), when two root APIs
    claim the same bodies (nested or repeated roots, where the engines disagree), or when payloads the stage
    has not loaded may hide articulations. A robot schema that cannot be used is recorded on the graph
    (``robot.error``) and raised only when the ``robot_schema`` convention is asked for.
    """
    from pxr import UsdPhysics

    stage = open_stage(asset)
    physics = read_physics(stage)
    source = _source(stage)
    composition_errors = tuple(str(e) for e in stage.GetCompositionErrors())
    unloaded = _unloaded_payloads(stage)
    graphs = []
    for key, member_bodies, member_joints in physics.articulations:
        prim = stage.GetPrimAtPath(key)
        if prim.HasAPI(UsdPhysics.RigidBodyAPI):
            kind = "body"
        elif prim.IsA(UsdPhysics.Joint):
            kind = "joint"
        else:
            kind = "ancestor"
        members = (key, *member_bodies, *member_joints)
        graphs.append(
            ArticulationGraph(
                root=key,
                root_kind=kind,
                bodies=tuple(physics.bodies.get(p, Body(p)) for p in member_bodies),
                joints=tuple(physics.joints[p] for p in member_joints if p in physics.joints),
                source=source,
                robot=_robot_schema_or_error(stage, key),
                composition_errors=composition_errors,
                instance_proxies=tuple(p for p in members if stage.GetPrimAtPath(p).IsInstanceProxy()),
            )
        )
    graphs.sort(key=lambda g: g.root)
    found = tuple(g.root for g in graphs)
    if root is not None:
        root = str(root)
        graphs = [g for g in graphs if g.root == root]
        if not graphs:
            hint = f"Articulation roots in this file: {list(found)}." if found else _no_root_hint()
            raise OrderingError(f"No articulation root at {root} in {source}. {hint}{_unloaded_hint(unloaded)}")
    elif not graphs:
        raise OrderingError(f"No articulation in {source}. {_no_root_hint()}{_unloaded_hint(unloaded)}")
    elif unloaded:
        raise OrderingError(
            f"{source} has payloads that are not loaded ({', '.join(unloaded[:5])}"
            f"{', ...' if len(unloaded) > 5 else ''}); articulations inside them are invisible, so the list of "
            f"articulations {list(found)} may be incomplete. Load them (open the file by path, or "
            "stage.Load(path)), or pass root= to select one articulation."
        )
    _refuse_shared_bodies(graphs, physics, source)
    return Topology(tuple(graphs), source=source)


def _unloaded_payloads(stage) -> list[str]:
    loaded = set(stage.GetLoadSet())
    return sorted(str(p) for p in stage.FindLoadable() if p not in loaded)


def _unloaded_hint(unloaded: list[str]) -> str:
    if not unloaded:
        return ""
    return (
        f" The stage has payloads that are not loaded ({', '.join(unloaded[:5])}{', ...' if len(unloaded) > 5 else ''}"
        "); load them (open the file by path, or stage.Load(path)) so their physics can be read."
    )


def _refuse_shared_bodies(graphs: list[ArticulationGraph], physics: StagePhysics, source: str) -> None:
    """Two root APIs on one mechanism (nested, or on two of its bodies): PhysX keeps one, Newton builds both."""
    owners: dict[str, list[str]] = {}
    for key, bodies, _ in physics.articulations:
        for body in bodies:
            owners.setdefault(body, []).append(key)
    for g in graphs:
        shared = sorted({other for b in g.bodies for other in owners.get(b.path, []) if other != g.root})
        if shared:
            bodies = sorted(b.path for b in g.bodies if len(owners.get(b.path, [])) > 1)
            raise OrderingError(
                f"{source}: PhysicsArticulationRootAPI on {g.root} and on {', '.join(shared)} claims the same "
                f"bodies ({', '.join(bodies[:5])}{', ...' if len(bodies) > 5 else ''}). The engines disagree on "
                "such a stage (PhysX keeps one articulation, Newton builds each over the same bodies). Remove "
                "the API from all but one prim of each mechanism."
            )


def _no_root_hint() -> str:
    return (
        "Apply PhysicsArticulationRootAPI to the robot's base link (floating base), to the fixed joint that "
        "anchors it to the world (fixed base), or to the robot's top Xform."
    )


# --- robot schema ------------------------------------------------------------------------------------------

_ROBOT_API = "IsaacRobotAPI"
# Isaac's joint schema spells the override ``isaac:NameOverride``, its link schema ``isaac:nameOverride``;
# each kind reads its own spelling first and accepts the other.
_JOINT_NAME_OVERRIDES = ("isaac:NameOverride", "isaac:nameOverride")
_LINK_NAME_OVERRIDES = ("isaac:nameOverride", "isaac:NameOverride")


def _is_robot_prim(prim) -> bool:
    """Applies ``IsaacRobotAPI`` (read from the composed ``apiSchemas``, so no Isaac plugin is needed) or
    authors a robot relationship."""
    return (
        _ROBOT_API in prim.GetPrimTypeInfo().GetAppliedAPISchemas()
        or bool(prim.GetRelationship(_ROBOT_JOINTS))
        or bool(prim.GetRelationship(_ROBOT_LINKS))
    )


def _targets(prim) -> list:
    out = []
    for rel_name in (_ROBOT_JOINTS, _ROBOT_LINKS):
        rel = prim.GetRelationship(rel_name)
        out.extend(rel.GetTargets() if rel else [])
    return out


def _robot_prim(stage, start: str):
    """The robot prim of the articulation rooted at ``start``.

    The nearest robot prim at or above the root; when an enclosing robot prim lists that one as a nested
    robot (a target of its robotJoints/robotLinks), the enclosing one, and so on upwards.
    """
    chain = []
    prim = stage.GetPrimAtPath(start)
    while prim and prim.IsValid() and not prim.IsPseudoRoot():
        if _is_robot_prim(prim):
            chain.append(prim)
        prim = prim.GetParent()
    if not chain:
        return None
    robot = chain[0]
    for outer in chain[1:]:
        if robot.GetPath() in _targets(outer):
            robot = outer
    return robot


def _robot_schema_or_error(stage, articulation_root: str) -> RobotSchema | None:
    try:
        return read_robot_schema(stage, articulation_root)
    except OrderingError as exc:
        prim = _robot_prim(stage, articulation_root)
        return RobotSchema(str(prim.GetPath()) if prim else articulation_root, (), (), error=str(exc))


def read_robot_schema(asset: Any, articulation_root: str) -> RobotSchema | None:
    """The robot schema of the asset holding ``articulation_root``, or ``None`` when none is authored.

    The robot prim is the nearest prim at or above the articulation root that applies ``IsaacRobotAPI`` or
    authors ``isaac:physics:robotJoints`` / ``robotLinks`` (climbing further while an enclosing robot prim
    lists it as a nested robot). Targets that are themselves robot prims (and not joints, resp. rigid
    bodies) are expanded in place. Raises :class:`OrderingError` listing every target that does not resolve
    (with the relationship that names it), duplicates (with the robot prims that list them) and nested-robot
    cycles.
    """
    from pxr import UsdPhysics

    stage = open_stage(asset)
    robot = _robot_prim(stage, articulation_root)
    if robot is None:
        return None
    root_key = str(robot.GetPath())
    names: dict[str, str] = {}
    unresolved: list[str] = []

    def leaf_target(t, rel_name: str) -> bool:
        if rel_name == _ROBOT_JOINTS:
            return t.IsA(UsdPhysics.Joint)
        return t.HasAPI(UsdPhysics.RigidBodyAPI)

    def expand(p, rel_name: str, stack: tuple[str, ...]) -> list[tuple[str, str]]:
        """``(target, listed by)`` pairs in authored order, nested robots expanded."""
        rel = p.GetRelationship(rel_name)
        out: list[tuple[str, str]] = []
        for target in rel.GetTargets() if rel else []:
            key = str(target)
            t = stage.GetPrimAtPath(target)
            if not t.IsValid():
                unresolved.append(f"{p.GetPath()}.{rel_name} -> {key}")
                continue
            if not leaf_target(t, rel_name) and _is_robot_prim(t):
                if key in stack:
                    raise OrderingError(
                        f"{p.GetPath()}.{rel_name} targets {key}, a robot prim that (directly or through nested "
                        f"robots {' -> '.join(stack)}) lists itself. Remove the cycle."
                    )
                out.extend(expand(t, rel_name, (*stack, key)))  # nested robot assembly
                continue
            overrides = _JOINT_NAME_OVERRIDES if rel_name == _ROBOT_JOINTS else _LINK_NAME_OVERRIDES
            for attr_name in overrides:
                attr = t.GetAttribute(attr_name)
                value = attr.Get() if attr and attr.HasAuthoredValue() else None
                if value:
                    names[key] = str(value)
                    break
            out.append((key, str(p.GetPath())))
        return out

    joints = expand(robot, _ROBOT_JOINTS, (root_key,))
    links = expand(robot, _ROBOT_LINKS, (root_key,))
    if unresolved:
        raise OrderingError(
            f"Robot schema of {root_key}: relationship targets that do not exist in the stage: "
            f"{'; '.join(unresolved)}. Fix or remove these targets."
        )
    for what, items in (("robotJoints", joints), ("robotLinks", links)):
        listed: dict[str, list[str]] = {}
        for target, by in items:
            listed.setdefault(target, []).append(by)
        dups = {t: by for t, by in listed.items() if len(by) > 1}
        if dups:
            detail = "; ".join(f"{t} (listed by {', '.join(by)})" for t, by in sorted(dups.items()))
            raise OrderingError(
                f"Robot schema of {root_key}: isaac:physics:{what} lists the same prim more than once: {detail}. "
                "List each prim once (a nested robot's prims must not be listed again by the enclosing robot)."
            )
    return RobotSchema(root_key, tuple(t for t, _ in joints), tuple(t for t, _ in links), tuple(sorted(names.items())))
