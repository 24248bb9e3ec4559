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
import re
import warnings
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from transfer.orders.graph import OrderingError
from transfer.orders.usd import open_stage, read_physics, read_robot_schema, read_stage

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
    ``transfer inspect`` lists (:attr:`transfer.orders.usd.StageRead.unresolved`)."""
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
    "default-prim": "warning", "up-axis": "warning", "meters-per-unit": "warning",
    "rigid-body-xformable": "error", "joint-bodies": "error", "articulation-root": "error",
    "driven-joint-drive": "warning", "driven-joint-state": "warning", "driven-joint-max-velocity": "warning",
    "mimic-reference": "error", "mimic-parameters": "warning", "mimic-drive-gains": "warning",
    "robot-api": "warning", "robot-namespace": "warning", "robot-joints": "warning", "robot-links": "warning",
    "gripper-max-opening": "warning", "gripper-forward-axis": "warning", "gripper-grip-line": "warning",
    "gripper-site-api": "warning", "prim-naming": "info", "file-naming": "info", "physics-layer": "info",
    "collision-geometry": "warning", "joint-limits": "warning", "drive-max-force": "warning", "base-kind": "info",
    "joint-locked": "warning", "pose-outside-limits": "warning",
}  # fmt: skip
"""Each rule's severity (``collision-geometry`` is an ``error`` when no link of a floating robot has a collider)."""
_RESERVED = {"CON", "PRN", "AUX", "NUL", *(f"COM{i}" for i in range(1, 10)), *(f"LPT{i}" for i in range(1, 10))}
_CAMEL = re.compile(r"^[a-z]+(?:[A-Z0-9][a-z0-9]*)+$")
_SNAKE = re.compile(r"^[a-z0-9]+(?:_[a-z0-9]+)+$")
_GEOMETRY = ("Mesh", "Cube", "Sphere", "Capsule", "Cylinder", "Cone")


def _finding(rule: str, prim: Any, message: str, severity: str | None = None, **fix: str) -> Finding:
    return Finding(rule, str(prim), message, FIXES[rule].format(prim=prim, **fix), severity or SEVERITY[rule])


def _authored(prim: Any, name: str) -> Any:
    attr = prim.GetAttribute(name)
    return attr.Get() if attr and attr.HasAuthoredValue() else None


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
        if _authored(prim, "physics:excludeFromArticulation"):
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
        velocity = _authored(prim, "physxJoint:maxJointVelocity")
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
    missing = [n for n in ("gearing", "naturalFrequency", "dampingRatio") if _authored(prim, f"{base}:{n}") is None]
    if missing:
        out.append(_finding("mimic-parameters", path, f"{', '.join(f'{base}:{n}' for n in missing)} not authored"))
    for inst in drives:
        gains = {g: _authored(prim, f"drive:{inst}:physics:{g}") for g in ("stiffness", "damping")}
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
    out = [] if _authored(prim, "isaac:namespace") else [_finding("robot-namespace", path, "isaac:namespace is unset")]
    try:
        schema = read_robot_schema(stage, roots[0][0]) if roots else None
    except OrderingError as exc:
        return [*out, _finding("robot-joints", path, str(exc))]
    members = {
        "robot-joints": [
            j
            for _, _, js in roots
            for j in js
            if not _authored(stage.GetPrimAtPath(j), "physics:excludeFromArticulation") and not _world_anchor(stage, j)
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
        if _authored(prim, "simready:attactment:socketType") != "Gripper":
            continue
        path = prim.GetPath()
        opening = _authored(prim, "custom:maxOpening")
        if opening is None or not float(opening) > 0:
            out.append(_finding("gripper-max-opening", path, f"custom:maxOpening is {opening}"))
        for child in ("forward_axis", "grip_line"):
            curve = UsdGeom.BasisCurves(prim.GetChild(child))
            points = curve.GetPointsAttr().Get() if curve else None
            if points is None or len(points) < 2:
                rule = f"gripper-{child.replace('_', '-')}"
                out.append(_finding(rule, path, f"no BasisCurves {child} with two points"))
        if "IsaacSiteAPI" not in _schemas(prim) or not _authored(prim, "isaac:Description"):
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
        if prim.HasAPI(UsdPhysics.CollisionAPI) and _authored(prim, "physics:collisionEnabled") is not False:
            return True
    return False


def _finite(value: Any) -> bool:
    return value is not None and math.isfinite(float(value))


def _robot_checks(stage: Any, physics: Any) -> list[Finding]:
    """Per articulation: its base kind and Isaac Lab's flag; links of a floating base without collision geometry;
    movable joints without limits; drives without an effort limit (``maxForce``)."""
    from transfer.assets.chains import is_chain_frame
    from transfer.orders import physx_order

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
                out.append(_finding("collision-geometry", root, f"no link of this floating-base robot has collision "
                                    f"geometry ({len(links)} links): it cannot stand or walk on a ground",
                                    severity="error"))  # fmt: skip
            elif bare:
                out.append(_finding("collision-geometry", root, f"{len(bare)} of {len(links)} links of this "
                                    f"floating-base robot have no collision geometry: {_listed(bare)}"))  # fmt: skip
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
        lower, upper = _authored(prim, "physics:lowerLimit"), _authored(prim, "physics:upperLimit")
        if not (_finite(lower) and _finite(upper)):
            unlimited.append(path)
        elif float(upper) - float(lower) <= 0:
            locked.append(f"{path} [{float(lower):g}, {float(upper):g}]")
        else:
            position = _authored(prim, f"state:{kind}:physics:position")
            position = 0.0 if position is None else float(position)  # unauthored: the pose the joint is drawn in
            slack = 0.5 if kind == "angular" else 1e-3 * (float(upper) - float(lower))  # degrees / stage units
            if not float(lower) - slack <= position <= float(upper) + slack:
                outside.append(f"{path} at {position:g}, limits [{float(lower):g}, {float(upper):g}]")
        for schema in _schemas(prim):
            if schema.startswith("PhysicsDriveAPI:"):
                force = _authored(prim, f"drive:{schema.split(':', 1)[1]}:physics:maxForce")
                if not (_finite(force) and float(force) > 0):
                    uncapped.append(path)
    out = []
    if unlimited:
        out.append(_finding("joint-limits", root, f"{len(unlimited)} movable joint(s) without finite limits: "
                            f"{_listed(unlimited)}"))  # fmt: skip
    if locked:
        out.append(_finding("joint-locked", root, f"{len(locked)} movable joint(s) whose limits leave no travel "
                            f"(upper <= lower), so they cannot move: {_listed(locked)}"))  # fmt: skip
    if outside:
        out.append(_finding("pose-outside-limits", root, f"{len(outside)} joint(s) start outside their limits (the "
                            f"engines push them to a limit in the first steps, each its own way): "
                            f"{_listed(outside)}"))  # fmt: skip
    if uncapped:
        kind = "angular" if stage.GetPrimAtPath(uncapped[0]).GetTypeName() == "PhysicsRevoluteJoint" else "linear"
        out.append(_finding("drive-max-force", root, f"{len(uncapped)} drive(s) without a finite, positive "
                            f"maxForce (effort limit): {_listed(uncapped)}", kind=kind))  # fmt: skip
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


# --- what a starting task file takes from the asset -----------------------------------------------------------------


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
    value = _authored(prim, name)
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
        if kind is None or _authored(prim, "physics:excludeFromArticulation"):
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
        direction, magnitude = _authored(scene, "physics:gravityDirection"), _value(scene, "physics:gravityMagnitude")
        if magnitude is not None and direction is not None and any(direction):
            norm = math.sqrt(sum(float(c) ** 2 for c in direction))
            gravity = tuple(float(c) / norm * magnitude * mpu for c in direction)
    root_prim = stage.GetPrimAtPath(art_root)
    iterations = [_authored(root_prim, f"physxArticulation:solver{k}IterationCount") for k in ("Position", "Velocity")]
    collisions = _authored(root_prim, "physxArticulation:enabledSelfCollisions")
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
