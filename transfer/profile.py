"""The USD side of ``transfer validate``, with pxr alone (no engine): joint discovery and the robot profile checks.

- :func:`scan_joints`: every joint of a stage before any physics runs (type, path, parent and child bodies, axis,
  limits, joint frames, the child's bounding box), and which bodies belong to an articulation. The joint_movement
  test (:mod:`transfer.runs.validate`) plans its attempts from it.
- :func:`profile_findings`: the Robot-Gripper-Isaac profile rules that ordering and transfer rely on (stage
  metadata, rigid bodies, joint bodies, driven joints, mimic joints, the articulation root, ``IsaacRobotAPI`` with
  complete ``isaac:physics:robotJoints`` / ``robotLinks``, gripper sites, naming, physics layer separation). Each
  :class:`Finding` names the rule, the prim, what was found and the fix.

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
from transfer.orders.usd import open_stage, read_physics, read_robot_schema

__all__ = ["Finding", "JointScan", "ScannedJoint", "profile_findings", "scan_joints"]

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
class Finding:
    """One profile rule the asset breaks: the rule, the prim (or layer), what was found and the fix."""

    rule: str
    prim: str
    message: str
    fix: str

    def to_dict(self) -> dict[str, str]:
        return asdict(self)


ROBOT_SCHEMA_RULES = ("robot-api", "robot-namespace", "robot-joints", "robot-links")
_RESERVED = {"CON", "PRN", "AUX", "NUL", *(f"COM{i}" for i in range(1, 10)), *(f"LPT{i}" for i in range(1, 10))}
_CAMEL = re.compile(r"^[a-z]+(?:[A-Z0-9][a-z0-9]*)+$")
_SNAKE = re.compile(r"^[a-z0-9]+(?:_[a-z0-9]+)+$")


def _authored(prim: Any, name: str) -> Any:
    attr = prim.GetAttribute(name)
    return attr.Get() if attr and attr.HasAuthoredValue() else None


def _stage_rules(stage: Any) -> list[Finding]:
    from pxr import UsdGeom

    out = []
    for layer in stage.GetLayerStack(includeSessionLayers=False):
        if not layer.anonymous and not layer.defaultPrim:
            out.append(
                Finding(
                    "default-prim",
                    layer.identifier,
                    "the layer sets no defaultPrim",
                    'author defaultPrim = "<robot prim>" in the layer metadata',
                )
            )
    if str(UsdGeom.GetStageUpAxis(stage)) != "Z":
        out.append(Finding("up-axis", "/", f"upAxis is {UsdGeom.GetStageUpAxis(stage)}", 'author upAxis = "Z"'))
    root = stage.GetRootLayer()
    mpu = root.pseudoRoot.GetInfo("metersPerUnit") if root.pseudoRoot.HasInfo("metersPerUnit") else None
    if mpu is None or not math.isclose(float(mpu), 1.0):
        found = "metersPerUnit is not authored" if mpu is None else f"metersPerUnit is {mpu}"
        out.append(Finding("meters-per-unit", "/", found, "author metersPerUnit = 1 (and model in metres)"))
    return out


def _body_and_joint_rules(stage: Any) -> list[Finding]:
    from pxr import Usd, UsdGeom, UsdPhysics

    out = []
    for prim in stage.Traverse(Usd.TraverseInstanceProxies()):
        path = str(prim.GetPath())
        if prim.HasAPI(UsdPhysics.RigidBodyAPI) and not prim.IsA(UsdGeom.Xformable):
            out.append(
                Finding(
                    "rigid-body-xformable",
                    path,
                    f"a {prim.GetTypeName() or 'typeless'} prim with PhysicsRigidBodyAPI",
                    "apply PhysicsRigidBodyAPI to an Xform (UsdGeomXformable)",
                )
            )
        if not prim.IsA(UsdPhysics.Joint):
            continue
        joint = UsdPhysics.Joint(prim)
        named = 0
        for rel_name, rel in (("physics:body0", joint.GetBody0Rel()), ("physics:body1", joint.GetBody1Rel())):
            for target in rel.GetTargets():
                named += 1
                if not stage.GetPrimAtPath(target).IsValid():
                    out.append(
                        Finding(
                            "joint-bodies",
                            path,
                            f"{rel_name} targets {target}, which does not exist",
                            f"point {rel_name} at an existing rigid body",
                        )
                    )
        if not named:
            out.append(
                Finding(
                    "joint-bodies",
                    path,
                    "the joint names neither physics:body0 nor physics:body1",
                    "author physics:body0 and physics:body1",
                )
            )
    return out


def _driven_rules(stage: Any, joint_paths: list[str]) -> list[Finding]:
    """Driven joints (every revolute and prismatic articulation joint): drive or mimic, joint state, velocity limit."""
    out = []
    for path in joint_paths:
        prim = stage.GetPrimAtPath(path)
        if prim.GetTypeName() not in ("PhysicsRevoluteJoint", "PhysicsPrismaticJoint"):
            continue
        kind = "angular" if prim.GetTypeName() == "PhysicsRevoluteJoint" else "linear"
        schemas = list(prim.GetAppliedSchemas())
        drives = [s for s in schemas if s.startswith("PhysicsDriveAPI:")]
        mimics = [s for s in schemas if s.startswith("PhysxMimicJointAPI:")]
        if not drives and not mimics:
            out.append(
                Finding(
                    "driven-joint-drive",
                    path,
                    "no PhysicsDriveAPI or PhysxMimicJointAPI",
                    f"apply PhysicsDriveAPI:{kind} (or PhysxMimicJointAPI:{'rotZ' if kind == 'angular' else 'transX'})",
                )
            )
        if not any(s.startswith("PhysicsJointStateAPI:") for s in schemas):
            out.append(
                Finding(
                    "driven-joint-state",
                    path,
                    "no PhysicsJointStateAPI",
                    f"apply PhysicsJointStateAPI:{kind} (state:{kind}:physics:position / velocity)",
                )
            )
        velocity = _authored(prim, "physxJoint:maxJointVelocity")
        if velocity is None or not float(velocity) > 0:
            found = (
                "physxJoint:maxJointVelocity is not authored" if velocity is None else f"maxJointVelocity is {velocity}"
            )
            out.append(
                Finding(
                    "driven-joint-max-velocity",
                    path,
                    found,
                    "apply PhysxJointAPI and author a positive physxJoint:maxJointVelocity",
                )
            )
        for mimic in mimics:
            out += _mimic_rules(stage, prim, path, mimic.split(":", 1)[1], drives)
    return out


def _mimic_rules(stage: Any, prim: Any, path: str, axis: str, drives: list[str]) -> list[Finding]:
    out = []
    base = f"physxMimicJoint:{axis}"
    rel = prim.GetRelationship(f"{base}:referenceJoint")
    targets = rel.GetTargets() if rel else []
    if len(targets) != 1 or not stage.GetPrimAtPath(targets[0]).IsValid():
        out.append(
            Finding(
                "mimic-reference",
                path,
                f"{base}:referenceJoint has {len(targets)} target(s)"
                + ("" if len(targets) != 1 else f" ({targets[0]} does not exist)"),
                f"set {base}:referenceJoint to exactly one existing joint",
            )
        )
    missing = [n for n in ("gearing", "naturalFrequency", "dampingRatio") if _authored(prim, f"{base}:{n}") is None]
    if missing:
        out.append(
            Finding(
                "mimic-parameters",
                path,
                f"{', '.join(f'{base}:{n}' for n in missing)} not authored",
                "author gearing, naturalFrequency and dampingRatio on the mimic joint",
            )
        )
    for drive in drives:
        inst = drive.split(":", 1)[1]
        gains = {g: _authored(prim, f"drive:{inst}:physics:{g}") for g in ("stiffness", "damping")}
        if any(v not in (None, 0.0) for v in gains.values()):
            out.append(
                Finding(
                    "mimic-drive-gains",
                    path,
                    f"a mimic joint whose drive {inst} has gains {gains}",
                    f"set drive:{inst}:physics:stiffness and damping to 0.0 on the mimic joint",
                )
            )
    return out


def _robot_rules(stage: Any, roots: list[tuple[str, tuple[str, ...], tuple[str, ...]]]) -> list[Finding]:
    from pxr import UsdPhysics

    prim = stage.GetDefaultPrim()
    if not prim:
        return [
            Finding(
                "robot-api",
                "/",
                "no defaultPrim to carry IsaacRobotAPI",
                "set defaultPrim to the robot prim and apply IsaacRobotAPI there",
            )
        ]
    path = str(prim.GetPath())
    if "IsaacRobotAPI" not in prim.GetPrimTypeInfo().GetAppliedAPISchemas():
        return [
            Finding(
                "robot-api",
                path,
                "the default prim does not apply IsaacRobotAPI",
                f'add prepend apiSchemas = ["IsaacRobotAPI"] to {path}, author isaac:namespace and list every '
                "articulation joint in isaac:physics:robotJoints and every link in isaac:physics:robotLinks",
            )
        ]
    out = []
    if not _authored(prim, "isaac:namespace"):
        out.append(
            Finding(
                "robot-namespace",
                path,
                "isaac:namespace is not authored",
                f'author string isaac:namespace = "<robot name>" on {path}',
            )
        )
    try:
        schema = read_robot_schema(stage, roots[0][0] if roots else path) if roots else None
    except OrderingError as exc:
        return [*out, Finding("robot-joints", path, str(exc), "fix or remove the targets named")]
    listed_joints = set(schema.joints) if schema else set()
    listed_links = set(schema.links) if schema else set()
    joints = sorted(
        {
            j
            for _, _, js in roots
            for j in js
            if not UsdPhysics.Joint(stage.GetPrimAtPath(j)).GetExcludeFromArticulationAttr().Get()
        }
    )
    links = sorted({b for _, bs, _ in roots for b in bs})
    for rule, rel, listed, members in (
        ("robot-joints", "isaac:physics:robotJoints", listed_joints, joints),
        ("robot-links", "isaac:physics:robotLinks", listed_links, links),
    ):
        if not listed:
            out.append(Finding(rule, path, f"{rel} is empty or not authored", f"list {len(members)} prims in {rel}"))
            continue
        missing = [m for m in members if m not in listed]
        if missing:
            out.append(
                Finding(
                    rule,
                    path,
                    f"{rel} leaves out {len(missing)}: {', '.join(missing[:6])}"
                    + (", ..." if len(missing) > 6 else ""),
                    f"add them to {rel}",
                )
            )
    return out


def _gripper_rules(stage: Any) -> list[Finding]:
    from pxr import Usd, UsdGeom

    out = []
    for prim in stage.Traverse(Usd.TraverseInstanceProxies()):
        if _authored(prim, "simready:attactment:socketType") != "Gripper":
            continue
        path = str(prim.GetPath())
        opening = _authored(prim, "custom:maxOpening")
        if opening is None or not float(opening) > 0:
            out.append(
                Finding(
                    "gripper-max-opening",
                    path,
                    f"custom:maxOpening is {opening}",
                    "author float custom:maxOpening > 0 (metres)",
                )
            )
        for child in ("forward_axis", "grip_line"):
            curve = UsdGeom.BasisCurves(prim.GetChild(child))
            points = curve.GetPointsAttr().Get() if curve else None
            if points is None or len(points) < 2:
                out.append(
                    Finding(
                        f"gripper-{child.replace('_', '-')}",
                        path,
                        f"no BasisCurves {child} with 2 points",
                        f'def BasisCurves "{child}" with at least two points',
                    )
                )
        if "IsaacSiteAPI" not in prim.GetPrimTypeInfo().GetAppliedAPISchemas() or not _authored(
            prim, "isaac:Description"
        ):
            out.append(
                Finding(
                    "gripper-site-api",
                    path,
                    "IsaacSiteAPI or a non-empty isaac:Description is missing",
                    'prepend apiSchemas = ["IsaacSiteAPI"] and author string isaac:Description',
                )
            )
    return out


def _naming_rules(stage: Any) -> list[Finding]:
    out = []
    styles: dict[str, list[str]] = {"camelCase": [], "snake_case": []}
    for prim in stage.Traverse():
        name = prim.GetName()
        if _CAMEL.match(name):
            styles["camelCase"].append(str(prim.GetPath()))
        elif _SNAKE.match(name):
            styles["snake_case"].append(str(prim.GetPath()))
    if all(styles.values()):
        out.append(
            Finding(
                "prim-naming",
                "/",
                f"camelCase ({styles['camelCase'][0]}, ...) and snake_case "
                f"({styles['snake_case'][0]}, ...) prim names mixed",
                "rename prims to one convention",
            )
        )
    for layer in stage.GetUsedLayers():
        if layer.anonymous or not layer.realPath:
            continue
        file = Path(layer.realPath).name
        stem = file.split(".", 1)[0]
        if file != file.lower() or " " in file or stem.upper() in _RESERVED or not re.match(r"^[\w.\-]+$", file):
            out.append(
                Finding(
                    "file-naming",
                    layer.realPath,
                    f"file name {file!r}",
                    "use lowercase names with underscores or hyphens, no spaces or reserved names",
                )
            )
    return out


def _layer_rules(stage: Any) -> list[Finding]:
    """A layered asset keeps physics in its physics layer(s): a layer that defines geometry authors no physics."""
    from pxr import Sdf

    layers = [layer for layer in stage.GetUsedLayers() if not layer.anonymous and layer.realPath]
    if len(layers) < 2:
        return []
    out = []
    for layer in layers:
        physics: list[str] = []
        geometry = False

        def visit(path: Any, layer: Any = layer, physics: list[str] = physics) -> None:
            nonlocal geometry
            spec = layer.GetObjectAtPath(path)
            if isinstance(spec, Sdf.PrimSpec):
                geometry = geometry or spec.typeName in ("Mesh", "Cube", "Sphere", "Capsule", "Cylinder", "Cone")
                schemas = spec.GetInfo("apiSchemas") if spec.HasInfo("apiSchemas") else None
                names = list(schemas.GetAddedOrExplicitItems()) if schemas else []
                if any(n.startswith(("Physics", "Physx")) for n in names) or spec.typeName.startswith("Physics"):
                    physics.append(str(path))

        layer.Traverse(Sdf.Path.absoluteRootPath, visit)
        if physics and geometry:
            out.append(
                Finding(
                    "physics-layer",
                    layer.realPath,
                    f"geometry and physics ({physics[0]}, ...) in one layer",
                    "move physics schemas and attributes into the physics layer (Payload/Physics/physics.usda)",
                )
            )
    return out


def profile_findings(asset: Any) -> list[Finding]:
    """Every Robot-Gripper-Isaac profile rule ``asset`` (a USD path or ``Usd.Stage``) breaks (empty: none)."""
    stage = open_stage(asset)
    physics = read_physics(stage)
    roots = list(physics.articulations)
    out = _stage_rules(stage) + _body_and_joint_rules(stage)
    if not roots:
        out.append(
            Finding(
                "articulation-root",
                "/",
                "no prim applies PhysicsArticulationRootAPI",
                "apply PhysicsArticulationRootAPI to the robot's root prim (or its fixed anchor joint)",
            )
        )
    joints = sorted({j for _, _, js in roots for j in js})
    out += _driven_rules(stage, joints)
    out += _robot_rules(stage, roots)
    out += _gripper_rules(stage)
    out += _naming_rules(stage)
    out += _layer_rules(stage)
    return out
