"""The robot profile rules of ``transfer validate`` (:func:`profile_findings`) and the stage contents check."""

from __future__ import annotations

import math
import re
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from transfer._numbers import is_finite_number
from transfer.orders import physx_order
from transfer.orders.graph import OrderingError
from transfer.robot.assets.chains import is_chain_frame
from transfer.robot.profile.settings import authored
from transfer.robot.usd import open_stage, read_physics, read_robot_schema, read_stage

__all__ = [
    "FIXES",
    "ROBOT_SCHEMA_RULES",
    "SEVERITIES",
    "SEVERITY",
    "Finding",
    "StageContents",
    "profile_findings",
    "stage_contents",
]

# --- the robot profile ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class StageContents:
    """What a stage holds before any physics: its prim count, whether it defines nothing to validate (no rigid body,
    joint or geometry) and its composition errors (one ``at <prim>: <USD's message>`` line each)."""

    prims: int
    empty: bool
    unresolved: tuple[str, ...]


def stage_contents(asset: Any) -> StageContents:
    """:class:`StageContents` of ``asset`` (a USD path or ``Usd.Stage``); the composition errors are the ones
    ``transfer inspect`` lists (:attr:`transfer.robot.usd.StageRead.unresolved`)."""
    from pxr import Usd, UsdGeom, UsdPhysics

    stage = open_stage(asset)
    prims = list(stage.Traverse(Usd.TraverseInstanceProxies()))
    empty = not any(p.HasAPI(UsdPhysics.RigidBodyAPI) or p.IsA(UsdPhysics.Joint) or p.IsA(UsdGeom.Gprim) for p in prims)
    try:
        unresolved = read_stage(stage).unresolved
    except OrderingError:  # a joint names a missing body: the profile's joint-bodies rule says which
        unresolved = tuple(str(e).strip() for e in stage.GetCompositionErrors())
    return StageContents(len(prims), empty, tuple(unresolved))


SEVERITIES = ("error", "warning", "info")


@dataclass(frozen=True)
class Finding:
    """One profile rule the asset breaks: the rule, the prim (or layer), what was found, the fix and the severity.

    ``error``: an engine refuses the asset or the robot cannot work as authored (a joint body that does not exist,
    no articulation root, a floating robot with no collision geometry at all); ``warning``: it loads, but a policy
    or the profile will miss something (missing limits, drives, robot schema entries); ``info``: conventions and
    facts to know (naming, layers, the base kind and its Isaac Lab flag)."""

    rule: str
    prim: str
    message: str
    fix: str
    severity: str = "warning"

    def to_dict(self) -> dict[str, str]:
        return asdict(self)


ROBOT_SCHEMA_RULES = ("robot-api", "robot-namespace", "robot-joints", "robot-links")
FIXES = {
    "default-prim": 'author defaultPrim = "<robot prim>" in the layer metadata',
    "up-axis": 'author upAxis = "Z"',
    "meters-per-unit": "author metersPerUnit = 1 (and model in metres)",
    "rigid-body-xformable": "apply PhysicsRigidBodyAPI to an Xform (UsdGeomXformable)",
    "joint-bodies": "point physics:body0 and physics:body1 at existing rigid bodies",
    "articulation-root": "apply PhysicsArticulationRootAPI to the robot's root prim (or its fixed anchor joint)",
    "driven-joint-drive": "apply PhysicsDriveAPI:{kind} (or PhysxMimicJointAPI:{mimic})",
    "driven-joint-state": "apply PhysicsJointStateAPI:{kind} (state:{kind}:physics:position / velocity)",
    "driven-joint-max-velocity": "apply PhysxJointAPI and author a positive physxJoint:maxJointVelocity",
    "mimic-reference": "set {base}:referenceJoint to exactly one existing joint",
    "mimic-parameters": "author gearing, naturalFrequency and dampingRatio on the mimic joint",
    "mimic-drive-gains": "set drive:{inst}:physics:stiffness and damping to 0.0 on the mimic joint",
    "robot-api": 'add prepend apiSchemas = ["IsaacRobotAPI"] to {prim}, author isaac:namespace and list every '
    "articulation joint in isaac:physics:robotJoints and every link in isaac:physics:robotLinks",
    "robot-namespace": 'author string isaac:namespace = "<robot name>" on {prim}',
    "robot-joints": "list every articulation joint in isaac:physics:robotJoints (targets that exist)",
    "robot-links": "list every articulation link in isaac:physics:robotLinks (targets that exist)",
    "gripper-max-opening": "author float custom:maxOpening > 0 (metres)",
    "gripper-forward-axis": 'def BasisCurves "forward_axis" with at least two points',
    "gripper-grip-line": 'def BasisCurves "grip_line" with at least two points',
    "gripper-site-api": 'prepend apiSchemas = ["IsaacSiteAPI"] and author a non-empty string isaac:Description',
    "prim-naming": "rename prims to one convention (camelCase or snake_case)",
    "file-naming": "use lowercase .usd/.usda/.usdc/.usdz names with underscores or hyphens, no spaces or reserved names",
    "physics-layer": "move physics schemas and attributes into the physics layer (Payload/Physics/physics.usda)",
    "collision-geometry": "apply PhysicsCollisionAPI to geometry under each listed link (feet at least: a floating "
    "robot stands on its colliders), or author collision meshes in the physics layer",
    "joint-limits": "author physics:lowerLimit / physics:upperLimit (degrees or stage units) on each listed joint, "
    "or leave them unlimited on purpose (wheels, continuous joints)",
    "drive-max-force": "author drive:{kind}:physics:maxForce (N·m or N) on each listed drive: the actuator's effort "
    "limit (Isaac Lab's effort_limit)",
    "joint-locked": "give each listed joint a lower limit below its upper one, or make it a PhysicsFixedJoint if it "
    "must not move (URDF: a revolute joint whose <limit> gives no lower and upper has both at 0)",
    "pose-outside-limits": "author state:angular:physics:position (or linear) within the limits on each listed joint "
    "(PhysicsJointStateAPI), or widen the limits: the robot's start pose is the policy's default",
    "base-kind": "{flag}",
}
SEVERITY = {
    "default-prim": "warning",
    "up-axis": "warning",
    "meters-per-unit": "warning",
    "rigid-body-xformable": "error",
    "joint-bodies": "error",
    "articulation-root": "error",
    "driven-joint-drive": "warning",
    "driven-joint-state": "warning",
    "driven-joint-max-velocity": "warning",
    "mimic-reference": "error",
    "mimic-parameters": "warning",
    "mimic-drive-gains": "warning",
    "robot-api": "warning",
    "robot-namespace": "warning",
    "robot-joints": "warning",
    "robot-links": "warning",
    "gripper-max-opening": "warning",
    "gripper-forward-axis": "warning",
    "gripper-grip-line": "warning",
    "gripper-site-api": "warning",
    "prim-naming": "info",
    "file-naming": "info",
    "physics-layer": "info",
    "collision-geometry": "warning",
    "joint-limits": "warning",
    "drive-max-force": "warning",
    "base-kind": "info",
    "joint-locked": "warning",
    "pose-outside-limits": "warning",
}
"""Each rule's severity (``collision-geometry`` is an ``error`` when no link of a floating robot has a collider)."""
_RESERVED = {"CON", "PRN", "AUX", "NUL", *(f"COM{i}" for i in range(1, 10)), *(f"LPT{i}" for i in range(1, 10))}
_CAMEL = re.compile(r"^[a-z]+(?:[A-Z0-9][a-z0-9]*)+$")
_SNAKE = re.compile(r"^[a-z0-9]+(?:_[a-z0-9]+)+$")
_GEOMETRY = ("Mesh", "Cube", "Sphere", "Capsule", "Cylinder", "Cone")


def _finding(rule: str, prim: Any, message: str, severity: str | None = None, **fix: str) -> Finding:
    return Finding(rule, str(prim), message, FIXES[rule].format(prim=prim, **fix), severity or SEVERITY[rule])


def _schemas(prim: Any) -> list[str]:
    """Applied API schemas as composed (registered or not: PhysicsJointStateAPI and the Isaac ones are not in usd-core)."""
    return list(prim.GetPrimTypeInfo().GetAppliedAPISchemas())


def _stage_rules(stage: Any) -> list[Finding]:
    from pxr import UsdGeom

    out = [
        _finding("default-prim", layer.identifier, "the layer sets no defaultPrim")
        for layer in stage.GetLayerStack(includeSessionLayers=False)
        if not layer.anonymous and not layer.defaultPrim
    ]
    if str(UsdGeom.GetStageUpAxis(stage)) != "Z":
        out.append(_finding("up-axis", "/", f"upAxis is {UsdGeom.GetStageUpAxis(stage)}"))
    info = stage.GetRootLayer().pseudoRoot
    mpu = info.GetInfo("metersPerUnit") if info.HasInfo("metersPerUnit") else None
    if mpu is None or not math.isclose(float(mpu), 1.0):
        out.append(_finding("meters-per-unit", "/", f"metersPerUnit is {mpu}" if mpu else "metersPerUnit is unset"))
    return out


def _body_and_joint_rules(stage: Any) -> list[Finding]:
    from pxr import Usd, UsdGeom, UsdPhysics

    out = []
    for prim in stage.Traverse(Usd.TraverseInstanceProxies()):
        path = prim.GetPath()
        if prim.HasAPI(UsdPhysics.RigidBodyAPI) and not prim.IsA(UsdGeom.Xformable):
            out.append(_finding("rigid-body-xformable", path, f"a {prim.GetTypeName() or 'typeless'} rigid body"))
        if not prim.IsA(UsdPhysics.Joint):
            continue
        joint = UsdPhysics.Joint(prim)
        sides = (("physics:body0", joint.GetBody0Rel()), ("physics:body1", joint.GetBody1Rel()))
        targets = [(name, t) for name, rel in sides for t in rel.GetTargets()]
        if not targets:
            out.append(_finding("joint-bodies", path, "the joint names neither physics:body0 nor physics:body1"))
        out += [
            _finding("joint-bodies", path, f"{name} targets {t}, which does not exist")
            for name, t in targets
            if not stage.GetPrimAtPath(t).IsValid()
        ]
    return out


def _driven_rules(stage: Any, joint_paths: list[str]) -> list[Finding]:
    """Driven joints: every revolute and prismatic joint of an articulation (loop joints excluded)."""
    out = []
    for path in joint_paths:
        prim = stage.GetPrimAtPath(path)
        if prim.GetTypeName() not in ("PhysicsRevoluteJoint", "PhysicsPrismaticJoint"):
            continue
        if authored(prim, "physics:excludeFromArticulation"):
            continue
        kind, mimic = ("angular", "rotZ") if prim.GetTypeName() == "PhysicsRevoluteJoint" else ("linear", "transX")
        schemas = _schemas(prim)
        drives = [s.split(":", 1)[1] for s in schemas if s.startswith("PhysicsDriveAPI:")]
        mimics = [s.split(":", 1)[1] for s in schemas if s.startswith("PhysxMimicJointAPI:")]
        if not drives and not mimics:
            out.append(
                _finding("driven-joint-drive", path, "no PhysicsDriveAPI or PhysxMimicJointAPI", kind=kind, mimic=mimic)
            )
        if not any(s.startswith("PhysicsJointStateAPI:") for s in schemas):
            out.append(_finding("driven-joint-state", path, "no PhysicsJointStateAPI", kind=kind))
        velocity = authored(prim, "physxJoint:maxJointVelocity")
        if velocity is None or not float(velocity) > 0:
            found = "is not authored" if velocity is None else f"is {velocity}"
            out.append(_finding("driven-joint-max-velocity", path, f"physxJoint:maxJointVelocity {found}"))
        for axis in mimics:
            out += _mimic_rules(stage, prim, path, axis, drives)
    return out


def _mimic_rules(stage: Any, prim: Any, path: str, axis: str, drives: list[str]) -> list[Finding]:
    base = f"physxMimicJoint:{axis}"
    rel = prim.GetRelationship(f"{base}:referenceJoint")
    targets = rel.GetTargets() if rel else []
    out = []
    if len(targets) != 1 or not stage.GetPrimAtPath(targets[0]).IsValid():
        found = f"{len(targets)} target(s)" if len(targets) != 1 else f"{targets[0]}, which does not exist"
        out.append(_finding("mimic-reference", path, f"{base}:referenceJoint has {found}", base=base))
    missing = [n for n in ("gearing", "naturalFrequency", "dampingRatio") if authored(prim, f"{base}:{n}") is None]
    if missing:
        out.append(_finding("mimic-parameters", path, f"{', '.join(f'{base}:{n}' for n in missing)} not authored"))
    for inst in drives:
        gains = {g: authored(prim, f"drive:{inst}:physics:{g}") for g in ("stiffness", "damping")}
        if any(v not in (None, 0.0) for v in gains.values()):
            out.append(
                _finding("mimic-drive-gains", path, f"a mimic joint whose drive {inst} has gains {gains}", inst=inst)
            )
    return out


def _world_anchor(stage: Any, path: str) -> bool:
    """A joint with one side the world (``physics:body0`` or ``body1`` unset): it fixes the robot in the world and is
    not one of the robot's joints."""
    from pxr import UsdPhysics

    joint = UsdPhysics.Joint(stage.GetPrimAtPath(path))
    return not joint or not joint.GetBody0Rel().GetTargets() or not joint.GetBody1Rel().GetTargets()


def _robot_rules(stage: Any, roots: list[tuple[str, tuple[str, ...], tuple[str, ...]]]) -> list[Finding]:
    prim = stage.GetDefaultPrim()
    if not prim:
        return [_finding("robot-api", "/", "no defaultPrim to carry IsaacRobotAPI")]
    path = str(prim.GetPath())
    if "IsaacRobotAPI" not in _schemas(prim):
        return [_finding("robot-api", path, "the default prim does not apply IsaacRobotAPI")]
    out = [] if authored(prim, "isaac:namespace") else [_finding("robot-namespace", path, "isaac:namespace is unset")]
    try:
        schema = read_robot_schema(stage, roots[0][0]) if roots else None
    except OrderingError as exc:
        return [*out, _finding("robot-joints", path, str(exc))]
    members = {
        "robot-joints": [
            j
            for _, _, js in roots
            for j in js
            if not authored(stage.GetPrimAtPath(j), "physics:excludeFromArticulation") and not _world_anchor(stage, j)
        ],
        "robot-links": [b for _, bs, _ in roots for b in bs],
    }
    listed = {
        "robot-joints": set(schema.joints) if schema else set(),
        "robot-links": set(schema.links) if schema else set(),
    }
    for rule, rel in (("robot-joints", "isaac:physics:robotJoints"), ("robot-links", "isaac:physics:robotLinks")):
        missing = sorted(set(members[rule]) - listed[rule])
        if not listed[rule]:
            out.append(_finding(rule, path, f"{rel} is empty or unset ({len(members[rule])} to list)"))
        elif missing:
            shown = ", ".join(missing[:6]) + (", ..." if len(missing) > 6 else "")
            out.append(_finding(rule, path, f"{rel} leaves out {len(missing)}: {shown}"))
    return out


def _gripper_rules(stage: Any) -> list[Finding]:
    from pxr import Usd, UsdGeom

    out = []
    for prim in stage.Traverse(Usd.TraverseInstanceProxies()):
        if authored(prim, "simready:attactment:socketType") != "Gripper":
            continue
        path = prim.GetPath()
        opening = authored(prim, "custom:maxOpening")
        if opening is None or not float(opening) > 0:
            out.append(_finding("gripper-max-opening", path, f"custom:maxOpening is {opening}"))
        for child in ("forward_axis", "grip_line"):
            curve = UsdGeom.BasisCurves(prim.GetChild(child))
            points = curve.GetPointsAttr().Get() if curve else None
            if points is None or len(points) < 2:
                rule = f"gripper-{child.replace('_', '-')}"
                out.append(_finding(rule, path, f"no BasisCurves {child} with two points"))
        if "IsaacSiteAPI" not in _schemas(prim) or not authored(prim, "isaac:Description"):
            out.append(_finding("gripper-site-api", path, "IsaacSiteAPI or a non-empty isaac:Description is missing"))
    return out


def _naming_rules(stage: Any) -> list[Finding]:
    camel = [p.GetPath() for p in stage.Traverse() if _CAMEL.match(p.GetName())]
    snake = [p.GetPath() for p in stage.Traverse() if _SNAKE.match(p.GetName())]
    out = []
    if camel and snake:
        out.append(_finding("prim-naming", "/", f"camelCase ({camel[0]}, ...) and snake_case ({snake[0]}, ...) mixed"))
    for layer in stage.GetUsedLayers():
        file = Path(layer.realPath).name if not layer.anonymous and layer.realPath else None
        if file and (
            file != file.lower() or file.split(".", 1)[0].upper() in _RESERVED or not re.match(r"^[\w.\-]+$", file)
        ):
            out.append(_finding("file-naming", layer.realPath, f"file name {file!r}"))
    return out


def _layer_rules(stage: Any) -> list[Finding]:
    """A layered asset keeps physics in its physics layer(s): a layer that defines geometry authors no physics."""
    from pxr import Sdf

    layers = [layer for layer in stage.GetUsedLayers() if not layer.anonymous and layer.realPath]
    out = []
    for layer in layers if len(layers) > 1 else ():
        physics, geometry = [], []

        def visit(path: Any, layer: Any = layer, physics: list = physics, geometry: list = geometry) -> None:
            spec = layer.GetObjectAtPath(path)
            if isinstance(spec, Sdf.PrimSpec):
                schemas = spec.GetInfo("apiSchemas") if spec.HasInfo("apiSchemas") else None
                names = list(schemas.GetAddedOrExplicitItems()) if schemas else []
                if any(n.startswith(("Physics", "Physx")) for n in names) or spec.typeName.startswith("Physics"):
                    physics.append(str(path))
                geometry += [path] if spec.typeName in _GEOMETRY else []

        layer.Traverse(Sdf.Path.absoluteRootPath, visit)
        if physics and geometry:
            out.append(
                _finding("physics-layer", layer.realPath, f"geometry and physics ({physics[0]}, ...) in one layer")
            )
    return out


def _listed(items: list[str], limit: int = 8) -> str:
    names = [i.rsplit("/", 1)[-1] for i in items]
    return ", ".join(names[:limit]) + (f", ... ({len(names)} in all)" if len(names) > limit else "")


def _has_collider(stage: Any, body: str, bodies: set[str]) -> bool:
    """Whether ``body`` owns a collider: a prim with ``PhysicsCollisionAPI`` (not disabled) in its subtree, nested
    rigid bodies left out, instance proxies included."""
    from pxr import Usd, UsdPhysics

    root = stage.GetPrimAtPath(body)
    it = iter(Usd.PrimRange(root, Usd.TraverseInstanceProxies()))
    for prim in it:
        if prim != root and str(prim.GetPath()) in bodies:
            it.PruneChildren()
            continue
        if prim.HasAPI(UsdPhysics.CollisionAPI) and authored(prim, "physics:collisionEnabled") is not False:
            return True
    return False


def _robot_checks(stage: Any, physics: Any) -> list[Finding]:
    """Per articulation: its base kind and Isaac Lab's flag; links of a floating base without collision geometry;
    movable joints without limits; drives without an effort limit (``maxForce``)."""
    out = []
    graphs = {g.root: g for g in read_stage(stage).graphs}
    bodies = set(physics.bodies)
    for root, members, joints in physics.articulations:
        member_set = set(members)
        anchors = [
            j.path
            for j in physics.joints.values()
            if j.enabled and (j.body0 is None) != (j.body1 is None) and ({j.body0, j.body1} & member_set)
        ]
        fixed = bool(anchors)
        try:
            fixed = physx_order(graphs[root]).fixed_base if root in graphs else fixed
        except OrderingError:
            pass
        if fixed:
            where = f"anchored to the world by {', '.join(anchors)}" if anchors else "a kinematic or world-fixed root"
            flag = (
                "in Isaac Lab keep the anchor: ArticulationRootPropertiesCfg(fix_root_link=True) (or None, which keeps "
                "the USD's; False removes it and the robot floats)"
            )
            out.append(_finding("base-kind", root, f"fixed base ({where})", flag=flag))
        else:
            flag = (
                "in Isaac Lab: ArticulationRootPropertiesCfg(fix_root_link=False) (or None); fix_root_link=True would "
                "weld the root link to the world"
            )
            out.append(_finding("base-kind", root, "floating base (no joint anchors it to the world)", flag=flag))
            links = [b for b in members if physics.bodies.get(b) is None or physics.bodies[b].is_link]
            links = [b for b in links if not is_chain_frame(stage.GetPrimAtPath(b))]  # joints' frames: no shape
            bare = [b for b in links if not _has_collider(stage, b, bodies)]
            if bare and len(bare) == len(links):
                out.append(
                    _finding(
                        "collision-geometry",
                        root,
                        f"no link of this floating-base robot has collision "
                        f"geometry ({len(links)} links): it cannot stand or walk on a ground",
                        severity="error",
                    )
                )
            elif bare:
                out.append(
                    _finding(
                        "collision-geometry",
                        root,
                        f"{len(bare)} of {len(links)} links of this "
                        f"floating-base robot have no collision geometry: {_listed(bare)}",
                    )
                )
        out += _joint_rules(stage, root, joints, anchors)
    return out


def _joint_rules(stage: Any, root: str, joints: Any, anchors: list[str]) -> list[Finding]:
    """The articulation's revolute and prismatic joints: without finite limits, with limits that leave no travel,
    authored outside their limits, drives without an effort limit."""
    unlimited, uncapped, locked, outside = [], [], [], []
    for path in joints:
        prim = stage.GetPrimAtPath(path)
        kind = {"PhysicsRevoluteJoint": "angular", "PhysicsPrismaticJoint": "linear"}.get(prim.GetTypeName())
        if kind is None or path in anchors:
            continue
        lower, upper = authored(prim, "physics:lowerLimit"), authored(prim, "physics:upperLimit")
        if not (is_finite_number(lower) and is_finite_number(upper)):
            unlimited.append(path)
        elif float(upper) - float(lower) <= 0:
            locked.append(f"{path} [{float(lower):g}, {float(upper):g}]")
        else:
            position = authored(prim, f"state:{kind}:physics:position")
            position = 0.0 if position is None else float(position)  # unauthored: the pose the joint is drawn in
            slack = 0.5 if kind == "angular" else 1e-3 * (float(upper) - float(lower))  # degrees / stage units
            if not float(lower) - slack <= position <= float(upper) + slack:
                outside.append(f"{path} at {position:g}, limits [{float(lower):g}, {float(upper):g}]")
        for schema in _schemas(prim):
            if schema.startswith("PhysicsDriveAPI:"):
                force = authored(prim, f"drive:{schema.split(':', 1)[1]}:physics:maxForce")
                if not (is_finite_number(force) and float(force) > 0):
                    uncapped.append(path)
    out = []
    if unlimited:
        out.append(
            _finding(
                "joint-limits", root, f"{len(unlimited)} movable joint(s) without finite limits: {_listed(unlimited)}"
            )
        )
    if locked:
        out.append(
            _finding(
                "joint-locked",
                root,
                f"{len(locked)} movable joint(s) whose limits leave no travel "
                f"(upper <= lower), so they cannot move: {_listed(locked)}",
            )
        )
    if outside:
        out.append(
            _finding(
                "pose-outside-limits",
                root,
                f"{len(outside)} joint(s) start outside their limits (the "
                f"engines push them to a limit in the first steps, each its own way): "
                f"{_listed(outside)}",
            )
        )
    if uncapped:
        kind = "angular" if stage.GetPrimAtPath(uncapped[0]).GetTypeName() == "PhysicsRevoluteJoint" else "linear"
        out.append(
            _finding(
                "drive-max-force",
                root,
                f"{len(uncapped)} drive(s) without a finite, positive maxForce (effort limit): {_listed(uncapped)}",
                kind=kind,
            )
        )
    return out


def profile_findings(asset: Any) -> list[Finding]:
    """Every Robot-Gripper-Isaac profile rule ``asset`` (a USD path or ``Usd.Stage``) breaks (empty: none)."""
    stage = open_stage(asset)
    out = _stage_rules(stage) + _body_and_joint_rules(stage)
    try:
        physics = read_physics(stage)
        roots = list(physics.articulations)
    except OrderingError:  # a joint names a body that does not exist: joint-bodies says which
        physics, roots = None, None
    if roots == []:
        out.append(_finding("articulation-root", "/", "no prim applies PhysicsArticulationRootAPI"))
    if roots:
        out += _driven_rules(stage, sorted({j for _, _, js in roots for j in js}))
        out += _robot_checks(stage, physics)
    out += _robot_rules(stage, roots or [])
    out += _gripper_rules(stage) + _naming_rules(stage) + _layer_rules(stage)
    order = {s: k for k, s in enumerate(SEVERITIES)}
    return sorted(out, key=lambda f: order[f.severity])  # errors first; the rules' own order within a severity
