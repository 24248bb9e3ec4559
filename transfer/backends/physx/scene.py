"""The in-memory scene: one anonymous USD layer over the asset, composed with pxr before PhysX sees it.

:func:`compose_scene` sublayers the asset (never writing to it) and adds, only where needed, a ``PhysicsScene``,
a ground plane, solver iteration overrides, the scene flags for the chosen device, a spawn offset, the base the
scene asks for (the root API moved, a joint to the world added or disabled: :func:`_set_base`), and a
``PhysicsDriveAPI`` (stiffness 0, damping 0, a max force) on every DoF joint of the articulation that authors
none, so that gains written later act on every joint (:func:`add_missing_drives`); it picks the environment prim
to clone and where every clone goes. It returns a :class:`Scene` with the USDA text to populate and the decisions.

:func:`scene_flags` (the device's ``PhysxSceneAPI`` flags) and :func:`static_colliders` are shared with the
validate movement probe (:mod:`~transfer.backends.physx.movement`), which composes its own layer.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from transfer.backends._usd import OVERLAY_METADATA, overlay_stage
from transfer.backends.physx.drives import _drive_notes, add_missing_drives
from transfer.backends.physx.engine import import_pxr
from transfer.backends.scene import DEFAULT_GROUND, GroundMaterial, SceneDescription
from transfer.orders import physx_order, read_topology
from transfer.orders.physx import world_joints

__all__ = [
    "DEFAULT_DRIVE_MAX_FORCE",
    "Scene",
    "add_missing_drives",
    "compose_scene",
    "scene_flags",
    "static_colliders",
]

DEFAULT_DRIVE_MAX_FORCE = 1.0e6
"""Max force (N) / torque (N·m) of the drives :func:`add_missing_drives` adds: large but finite, the same as
Newton's default joint effort limit (``ModelBuilder.JointDofConfig.effort_limit``)."""


@dataclass
class Scene:
    """What :func:`compose_scene` decided: the USDA text to populate and where every environment lives."""

    usda: str
    root: str
    """The articulation root prim of environment 0 (as PhysX labels it)."""
    clone_source: str
    clone_targets: list[str]
    anchors: list[tuple[float, ...]]
    env_roots: list[str]
    env_origins: np.ndarray
    """``(num_envs, 3)`` world offset of each environment from environment 0."""
    up_axis: str
    gravity_dir: tuple[float, float, float]
    added_scene: bool
    notes: list[str] = field(default_factory=list)
    added_drives: list[str] = field(default_factory=list)
    """``<joint path>:<drive instance>`` of every drive the layer added (see :func:`add_missing_drives`)."""


def _unique_path(stage: Any, wanted: str) -> str:
    path, k = wanted, 1
    while stage.GetPrimAtPath(path).IsValid():
        path, k = f"{wanted}_{k}", k + 1
    return path


def _common_ancestor(paths: Sequence[str]) -> str:
    split = [p.strip("/").split("/") for p in paths]
    common: list[str] = []
    for parts in zip(*split, strict=False):
        if all(part == parts[0] for part in parts):
            common.append(parts[0])
        else:
            break
    return "/" + "/".join(common)


def _is_under(path: str, ancestor: str) -> bool:
    return path == ancestor or path.startswith(ancestor.rstrip("/") + "/")


def scene_flags(prim: Any, cuda: bool) -> None:
    """Author the PhysX scene flags of the chosen device on the ``PhysicsScene`` ``prim``: GPU dynamics and the GPU
    broadphase for CUDA, CPU dynamics and the MBP broadphase otherwise (``PhysxSceneAPI``)."""
    from pxr import Sdf

    prim.AddAppliedSchema("PhysxSceneAPI")
    prim.CreateAttribute("physxScene:enableGPUDynamics", Sdf.ValueTypeNames.Bool).Set(bool(cuda))
    prim.CreateAttribute("physxScene:broadphaseType", Sdf.ValueTypeNames.Token).Set("GPU" if cuda else "MBP")


def static_colliders(stage: Any) -> list[str]:
    """Paths of the prims of ``stage`` with a ``CollisionAPI`` and no rigid body at or above them (static colliders)."""
    from pxr import UsdPhysics

    bodies = {str(prim.GetPath()) for prim in stage.Traverse() if prim.HasAPI(UsdPhysics.RigidBodyAPI)}
    colliders: list[str] = []
    for prim in stage.Traverse():
        if prim.HasAPI(UsdPhysics.CollisionAPI):
            path = prim.GetPath()
            if not any(str(p) in bodies for p in path.GetAncestorsRange()):  # no rigid body at or above it
                colliders.append(str(path))
    return colliders


def _check_metres(layer: Any, asset: str) -> None:
    if layer.pseudoRoot.HasInfo("metersPerUnit"):  # copied from the asset's own metadata
        mpu = float(layer.pseudoRoot.GetInfo("metersPerUnit"))
        if not math.isclose(mpu, 1.0, rel_tol=1e-6):
            raise ValueError(
                f"{asset} has metersPerUnit = {mpu}; PhysxBackend reports SI units and needs metersPerUnit = 1. "
                "Rescale the asset (or reference it from a layer in metres)."
            )


def _pick_articulation(topology: Sequence[Any], root: str | None, asset: str) -> Any:
    """The articulation graph to drive: the one rooted at ``root`` (as PhysX labels it), or the only one."""
    roots = [graph.root for graph in topology]
    if root is None:
        if len(roots) != 1:
            raise LookupError(
                f"{asset} holds {len(roots)} articulations, rooted at {roots}; pass root= with the one to drive."
            )
        root = roots[0]
    elif root not in roots:
        raise LookupError(
            f"No articulation root at {root!r} in {asset}; articulation roots found: {roots or 'none'}. "
            "Pass one of those as root=."
        )
    return next(g for g in topology if g.root == root)


def _clone_source(graph: Any, blockers: Sequence[str], num_envs: int, asset: str) -> str:
    """The environment prim to clone: the articulation's common ancestor, raised while it holds no blocker."""
    from pxr import Sdf

    root = graph.root
    members = [root, *(b.path for b in graph.bodies), *(j.path for j in graph.joints)]
    source = _common_ancestor(members)
    if source == "/":
        if num_envs > 1:
            raise ValueError(
                f"The articulation {root} in {asset} spans several top-level prims; PhysxBackend clones one prim "
                "subtree per environment. Group the robot under one prim, or use num_envs=1."
            )
        return source
    parent = str(Sdf.Path(source).GetParentPath())
    while parent != "/" and not any(_is_under(b, parent) for b in blockers):
        source, parent = parent, str(Sdf.Path(parent).GetParentPath())
    if any(_is_under(b, source) for b in blockers) and num_envs > 1:
        raise ValueError(
            f"Cannot clone {source} (the prim holding articulation {root}) in {asset}: it also holds "
            f"{[b for b in blockers if _is_under(b, source)]}. Move the PhysicsScene, ground colliders or other "
            "articulations out of the robot's prim, or use num_envs=1."
        )
    return source


def _spawn(stage: Any, source: str, spawn_offset: Sequence[float], root: str, asset: str) -> str:
    """Translate ``source`` by ``spawn_offset`` (outermost op, in its parent's frame); returns the note."""
    from pxr import Gf, UsdGeom

    offset = np.asarray(spawn_offset, dtype=np.float64)
    if offset.shape != (3,) or not np.all(np.isfinite(offset)):
        raise ValueError(f"spawn_offset must be three finite numbers (metres), got {spawn_offset!r}")
    xformable = UsdGeom.Xformable(stage.GetPrimAtPath(source)) if source != "/" else None
    if not xformable:
        raise ValueError(
            f"spawn_offset needs one transformable prim holding articulation {root} in {asset}; found {source}."
        )
    ops = xformable.GetOrderedXformOps()
    op = xformable.AddTranslateOp(UsdGeom.XformOp.PrecisionDouble, "transferSpawn")
    op.Set(Gf.Vec3d(*offset.tolist()))
    xformable.SetXformOpOrder([op, *ops], xformable.GetResetXformStack())  # outermost: parent frame
    return f"moved {source} by {tuple(offset.tolist())}"


def _physics_scenes(
    stage: Any, scenes: list[str], up: Any, up_axis: str, gravity: Sequence[float] | None
) -> tuple[list[str], tuple[float, ...], list[str]]:
    """``(scene paths, unit gravity direction, notes)``: the ``PhysicsScene`` paths (one added when ``scenes`` is
    empty) and the gravity direction, after ``gravity`` (if given) is authored on every scene."""
    from pxr import Gf, UsdPhysics

    notes: list[str] = []
    gravity_dir = tuple(float(-c) for c in up)
    if scenes:  # UsdPhysics: an unauthored or zero gravityDirection means "down the up axis"
        authored = UsdPhysics.Scene(stage.GetPrimAtPath(scenes[0])).GetGravityDirectionAttr().Get()
        if authored is not None and Gf.Vec3d(authored).GetLength() > 0:
            gravity_dir = tuple(float(c) for c in Gf.Vec3d(authored).GetNormalized())
    else:
        scene = UsdPhysics.Scene.Define(stage, _unique_path(stage, "/PhysicsScene"))
        scene.CreateGravityDirectionAttr(Gf.Vec3f(-up))
        scene.CreateGravityMagnitudeAttr(9.81)
        scenes = [str(scene.GetPath())]
        notes.append(f"added {scenes[0]} (gravity 9.81 m/s^2 along -{up_axis})")
    if gravity is not None:
        g = Gf.Vec3d(*(float(c) for c in gravity))
        for path in scenes:
            physics_scene = UsdPhysics.Scene(stage.GetPrimAtPath(path))
            physics_scene.CreateGravityMagnitudeAttr(float(g.GetLength()))
            if g.GetLength() > 0:
                physics_scene.CreateGravityDirectionAttr(Gf.Vec3f(g.GetNormalized()))
        if g.GetLength() > 0:
            gravity_dir = tuple(float(c) for c in g.GetNormalized())
        notes.append(f"gravity {tuple(g)} m/s^2")
    return scenes, gravity_dir, notes


def _add_ground(stage: Any, up: Any, up_axis: str, ground_height: float, material: GroundMaterial) -> str:
    """A static ground plane (a guide ``Plane`` collider with ``material``) at ``ground_height``; returns the note."""
    from pxr import Gf, UsdGeom, UsdPhysics

    ground = UsdGeom.Xform.Define(stage, _unique_path(stage, "/GroundPlane"))
    ground.AddTranslateOp().Set(Gf.Vec3d(up * float(ground_height)))
    plane = UsdGeom.Plane.Define(stage, ground.GetPath().AppendChild("CollisionPlane"))
    plane.CreateAxisAttr(up_axis)
    plane.CreatePurposeAttr("guide")
    UsdPhysics.CollisionAPI.Apply(plane.GetPrim())
    m = material
    _bind_ground_material(stage, plane.GetPrim(), ground.GetPath().AppendChild("PhysicsMaterial"), m)
    return (
        f"added a ground plane at {up_axis} = {ground_height} (friction {m.static_friction:g} static, "
        f"{m.dynamic_friction:g} dynamic, {m.friction_combine} combine; restitution {m.restitution:g}, "
        f"{m.restitution_combine} combine)"
    )


def _set_self_collisions(stage: Any, root: str, self_collisions: bool) -> str:
    from pxr import Sdf

    prim = stage.GetPrimAtPath(root)
    prim.AddAppliedSchema("PhysxArticulationAPI")
    prim.CreateAttribute("physxArticulation:enabledSelfCollisions", Sdf.ValueTypeNames.Bool).Set(bool(self_collisions))
    return f"self-collisions {'on' if self_collisions else 'off'}"


def _set_solver_iterations(stage: Any, root: str, position: int | None, velocity: int | None) -> None:
    """Override the articulation's PhysX solver iteration counts that are not ``None``."""
    from pxr import Sdf

    prim = stage.GetPrimAtPath(root)
    prim.AddAppliedSchema("PhysxArticulationAPI")
    for name, value in (("solverPositionIterationCount", position), ("solverVelocityIterationCount", velocity)):
        if value is not None:
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"solver iteration counts are non-negative integers, got {name}={value!r}")
            prim.CreateAttribute(f"physxArticulation:{name}", Sdf.ValueTypeNames.Int).Set(int(value))


def _set_base(stage: Any, graph: Any, fixed: bool, source: str) -> tuple[str, list[str]]:
    """Give the articulation ``graph`` the base the scene asks for, in ``stage``'s edit target; returns the prim
    that then carries ``PhysicsArticulationRootAPI`` (PhysX labels the articulation by it) and the notes.

    Fixed: a floating articulation gets its root API moved onto the enabled fixed joint from the world to its root
    link (the converters author one; PhysX kept it out as a constraint), or onto such a joint authored here
    (:func:`_anchor_joint`): PhysX then builds a fixed-base articulation. Floating: the root API goes to the root link
    and every enabled joint between the world and it is disabled. Nothing changes where PhysX builds that base
    already."""
    from pxr import UsdPhysics

    order = physx_order(graph)
    root_body = order.root_body
    if fixed:
        if order.fixed_base:
            return graph.root, []
        anchors = world_joints(graph, root_body)
        joint = anchors[0] if anchors else _anchor_joint(stage, root_body, source)
        _move_root_api(stage, graph.root, joint)
        how = "its fixed joint from the world" if anchors else "a fixed joint from the world added"
        return joint, [f"fixed base: the articulation is rooted at {joint} ({how})"]
    released = world_joints(graph, root_body, fixed_only=False)
    if not order.fixed_base and not released:
        return graph.root, []
    root = graph.root
    if order.fixed_base and graph.root != root_body:
        _move_root_api(stage, graph.root, root_body)
        root = root_body
    for path in released:
        UsdPhysics.Joint(_editable(stage, path)).CreateJointEnabledAttr(False)
    notes = [f"floating base: the articulation is rooted at {root}"]
    if released:
        notes.append(f"disabled the joints from the world to {root_body}: {', '.join(released)}")
    return root, notes


def _editable(stage: Any, path: str) -> Any:
    """The prim at ``path``, refused when it is an instance proxy (its physics cannot be edited)."""
    prim = stage.GetPrimAtPath(path)
    if prim.IsInstanceProxy():
        raise ValueError(
            f"{path} lies inside an instanceable prim, so the scene's base cannot be set on it; set instanceable = "
            "false on the prim above it, or open the asset with the base as the asset builds it (fixed_base=None)."
        )
    return prim


def _move_root_api(stage: Any, old: str, new: str) -> None:
    """Move ``PhysicsArticulationRootAPI`` (with the ``physxArticulation:*`` settings authored beside it) from the prim
    ``old`` to the prim ``new``. Every ``*ArticulationRootAPI`` leaves ``old``: ovphysx takes the
    ``NewtonArticulationRootAPI`` the MJCF converter authors beside it for a root too (measured: "Nested
    articulation roots are not allowed", the articulation left on the base link)."""
    from pxr import UsdPhysics

    source, target = _editable(stage, old), _editable(stage, new)
    for schema in source.GetPrimTypeInfo().GetAppliedAPISchemas():
        if schema.endswith("ArticulationRootAPI"):
            source.RemoveAppliedSchema(schema)
    UsdPhysics.ArticulationRootAPI.Apply(target)
    settings = [
        a for a in source.GetAttributes() if a.GetName().startswith("physxArticulation:") and a.HasAuthoredValue()
    ]
    if settings:
        target.AddAppliedSchema("PhysxArticulationAPI")
    for attribute in settings:
        target.CreateAttribute(attribute.GetName(), attribute.GetTypeName()).Set(attribute.Get())


def _anchor_joint(stage: Any, root_body: str, source: str) -> str:
    """Author a fixed joint from the world to ``root_body`` where it is now; returns its path. Its world side is the
    environment prim ``source`` (not a rigid body: the world, in that prim's frame), so that the spawn offset and
    every clone move the anchor with the robot; the world itself when ``source`` is the stage root or a body."""
    from pxr import Gf, Usd, UsdGeom, UsdPhysics

    cache = UsdGeom.XformCache(Usd.TimeCode.Default())
    frame = stage.GetPrimAtPath(source) if source != "/" else None
    if frame is not None and frame.HasAPI(UsdPhysics.RigidBodyAPI):
        frame = None
    pose = cache.GetLocalToWorldTransform(stage.GetPrimAtPath(root_body))
    if frame is not None:
        pose = pose * cache.GetLocalToWorldTransform(frame).GetInverse()
    pose = Gf.Transform(pose)
    parent = source if frame is not None else "/"
    joint = UsdPhysics.FixedJoint.Define(stage, _unique_path(stage, f"{parent.rstrip('/')}/TransferBaseAnchor"))
    if frame is not None:
        joint.CreateBody0Rel().SetTargets([frame.GetPath()])
    joint.CreateBody1Rel().SetTargets([root_body])
    joint.CreateLocalPos0Attr(Gf.Vec3f(pose.GetTranslation()))
    joint.CreateLocalRot0Attr(Gf.Quatf(pose.GetRotation().GetQuat()))
    joint.CreateLocalPos1Attr(Gf.Vec3f(0.0, 0.0, 0.0))
    joint.CreateLocalRot1Attr(Gf.Quatf(1.0, 0.0, 0.0, 0.0))
    return str(joint.GetPath())


def _grid_origins(num_envs: int, env_spacing: float, up_axis: str) -> np.ndarray:
    """``(num_envs, 3)``: environment k's offset on a square grid in the ground plane; environment 0 at zero."""
    cols = max(1, math.ceil(math.sqrt(num_envs)))
    horizontal = (0, 1) if up_axis == "Z" else (2, 0)
    origins = np.zeros((num_envs, 3), dtype=np.float64)
    for k in range(num_envs):
        origins[k, horizontal[0]] = (k // cols) * env_spacing
        origins[k, horizontal[1]] = (k % cols) * env_spacing
    return origins


def _clones(
    stage: Any, root: str, source: str, origins: np.ndarray
) -> tuple[list[str], list[tuple[float, ...]], list[str]]:
    """``(clone targets, anchors, env roots)`` of environments 1.. (the targets under ``/World/envs``, or a fresh
    prim when that exists), each anchored at ``source``'s world pose moved by its origin."""
    from pxr import Gf, Sdf, Usd, UsdGeom

    num_envs = len(origins)
    targets: list[str] = []
    anchors: list[tuple[float, ...]] = []
    env_roots = [root]
    if num_envs > 1:
        envs = "/World/envs"
        if stage.GetPrimAtPath(envs).IsValid():
            envs = _unique_path(stage, "/TransferEnvs")
        name = Sdf.Path(source).name
        world = Gf.Matrix4d(1.0)
        xformable = UsdGeom.Xformable(stage.GetPrimAtPath(source))
        if xformable:
            world = xformable.ComputeLocalToWorldTransform(Usd.TimeCode.Default())
        transform = Gf.Transform(world)
        translation = transform.GetTranslation()
        quat = transform.GetRotation().GetQuat()
        imag = quat.GetImaginary()
        for k in range(1, num_envs):
            target = f"{envs}/env_{k}/{name}"
            targets.append(target)
            position = [translation[i] + origins[k, i] for i in range(3)]
            anchors.append((*position, imag[0], imag[1], imag[2], quat.GetReal()))
            env_roots.append(target + root[len(source) :])
    return targets, anchors, env_roots


def compose_scene(
    asset: str,
    root: str | None,
    num_envs: int,
    env_spacing: float,
    ground_height: float | None,
    solver_position_iterations: int | None,
    solver_velocity_iterations: int | None,
    cuda: bool,
    cpu_scene: bool = False,
    spawn_offset: Sequence[float] | None = None,
    drive_max_force: float = DEFAULT_DRIVE_MAX_FORCE,
    *,
    world: SceneDescription | None = None,
) -> Scene:
    """The in-memory layer over ``asset``: clones, ground, spawn, and what ``world`` says (base, gravity, ...)."""
    import_pxr()
    from pxr import Gf, UsdGeom, UsdPhysics

    # every edit lands in the anonymous layer, never in the asset
    world = world or SceneDescription()
    stage = overlay_stage(asset, "transfer_physx.usda", (*OVERLAY_METADATA, "timeCodesPerSecond"))
    layer = stage.GetRootLayer()
    _check_metres(layer, asset)
    up_axis = str(UsdGeom.GetStageUpAxis(stage))
    up = {"Y": Gf.Vec3d(0, 1, 0), "Z": Gf.Vec3d(0, 0, 1)}[up_axis]

    # The articulation: roots as PhysX labels them (the prim carrying PhysicsArticulationRootAPI).
    topology = read_topology(stage)
    graph = _pick_articulation(topology, root, asset)
    root = graph.root
    # What must stay out of the cloned prim: physics scenes, static colliders, other articulation roots.
    scenes = [str(prim.GetPath()) for prim in stage.Traverse() if prim.IsA(UsdPhysics.Scene)]
    blockers = scenes + static_colliders(stage) + [g.root for g in topology if g.root != root]
    source = _clone_source(graph, blockers, num_envs, asset)

    notes: list[str] = []
    if spawn_offset is not None:
        notes.append(_spawn(stage, source, spawn_offset, root, asset))
    if world.fixed_base is not None:  # the root prim moves with the root API
        root, base_notes = _set_base(stage, graph, world.fixed_base, source)
        notes += base_notes
    added_scene = not scenes
    scenes, gravity_dir, scene_notes = _physics_scenes(stage, scenes, up, up_axis, world.gravity)
    notes += scene_notes
    if cuda or cpu_scene:
        for path in scenes:
            scene_flags(stage.GetPrimAtPath(path), cuda)
    if ground_height is not None:
        notes.append(_add_ground(stage, up, up_axis, ground_height, world.scaled_ground() or DEFAULT_GROUND))
    notes += _articulation_settings(stage, graph, root, world, solver_position_iterations, solver_velocity_iterations)
    _report_contacts(stage, graph)

    # Every DoF joint gets a drive, so that gains written at open or at runtime act on it (clones copy them).
    added_drives, skipped, undriven = add_missing_drives(stage, graph, drive_max_force)
    notes += _drive_notes(added_drives, skipped, undriven, drive_max_force)

    # Environment k sits at a grid offset in the ground plane; environment 0 is the asset where it is.
    origins = _grid_origins(num_envs, env_spacing, up_axis)
    targets, anchors, env_roots = _clones(stage, root, source, origins)
    return Scene(
        usda=layer.ExportToString(),
        root=root,
        clone_source=source,
        clone_targets=targets,
        anchors=anchors,
        env_roots=env_roots,
        env_origins=origins,
        up_axis=up_axis,
        gravity_dir=gravity_dir,
        added_scene=added_scene,
        notes=notes,
        added_drives=added_drives,
    )


def _articulation_settings(
    stage: Any, graph: Any, root: str, world: SceneDescription, position: int | None, velocity: int | None
) -> list[str]:
    """Self-collisions, solver iterations and the pose the joints are created in, on the articulation at ``root``."""
    notes = []
    if world.self_collisions is not None:
        notes.append(_set_self_collisions(stage, root, world.self_collisions))
    if position is not None or velocity is not None:
        _set_solver_iterations(stage, root, position, velocity)
    if world.joint_positions:
        notes.append(_author_joint_state(stage, graph, world.joint_positions))
    return notes


def _report_contacts(stage: Any, graph: Any) -> None:
    """Every link a contact sensor (``PhysxContactReportAPI``, threshold 0; clones copy it): what
    :mod:`transfer.backends.physx.contacts` reads. Reporting leaves the dynamics as they were."""
    from pxr import Sdf

    for body in graph.bodies:
        prim = stage.GetPrimAtPath(body.path)
        if body.is_link and prim and not prim.IsInstanceProxy():
            prim.AddAppliedSchema("PhysxContactReportAPI")
            prim.CreateAttribute("physxContactReport:threshold", Sdf.ValueTypeNames.Float).Set(0.0)


def _author_joint_state(stage: Any, graph: Any, positions: Mapping[str, float]) -> str:
    """Author ``state:<angular|linear>:physics:position`` (degrees for revolute joints, as USD's JointStateAPI holds
    them) on the articulation's single-DoF joints named in ``positions``: the pose PhysX creates it in."""
    from pxr import Sdf

    written = []
    for joint in graph.joints:
        if joint.name not in positions or joint.type.value not in ("revolute", "prismatic"):
            continue
        prim = stage.GetPrimAtPath(joint.path)
        if not prim or prim.IsInstanceProxy():  # physics inside an instance's prototype: PhysX ignores it
            continue
        angular = joint.type.value == "revolute"
        kind = "angular" if angular else "linear"
        prim.AddAppliedSchema(f"PhysicsJointStateAPI:{kind}")
        value = positions[joint.name] * (180.0 / math.pi if angular else 1.0)
        prim.CreateAttribute(f"state:{kind}:physics:position", Sdf.ValueTypeNames.Float).Set(float(value))
        prim.CreateAttribute(f"state:{kind}:physics:velocity", Sdf.ValueTypeNames.Float).Set(0.0)
        written.append(joint.name)
    return f"joint state authored at the task's default pose on {len(written)} joints"


def _bind_ground_material(stage: Any, plane: Any, path: Any, material_value: GroundMaterial) -> None:
    from pxr import Sdf, UsdPhysics, UsdShade

    material = UsdShade.Material.Define(stage, path)
    api = UsdPhysics.MaterialAPI.Apply(material.GetPrim())
    api.CreateStaticFrictionAttr(material_value.static_friction)
    api.CreateDynamicFrictionAttr(material_value.dynamic_friction)
    api.CreateRestitutionAttr(material_value.restitution)
    prim = material.GetPrim()
    prim.AddAppliedSchema("PhysxMaterialAPI")
    token = Sdf.ValueTypeNames.Token
    prim.CreateAttribute("physxMaterial:frictionCombineMode", token).Set(material_value.friction_combine)
    prim.CreateAttribute("physxMaterial:restitutionCombineMode", token).Set(material_value.restitution_combine)
    UsdShade.MaterialBindingAPI.Apply(plane).Bind(material, UsdShade.Tokens.weakerThanDescendants, "physics")
