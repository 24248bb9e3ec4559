"""Read an :class:`~transfer.orders.graph.ArticulationGraph` from USD with ``pxr`` alone (no engine).

Membership comes from usd-core's own UsdPhysics parse, the parse both engines start from: it resolves
joint targets below a body to the enclosing rigid body, composes references, payloads and instances, and
lists each articulation's bodies and joints.

A file is opened once per read: :func:`read_stage` takes the parse, the robot schema and the composition
errors from that one ``Usd.Stage`` into an immutable :class:`StageRead`, which :func:`read_file` keeps in a
small LRU cache (validated against the mtime and size of every layer the stage used), so that resolving
several conventions of one file reads it once and an edited file is read again. :func:`select` applies root
selection and the refusals.
"""

from __future__ import annotations

import os
import re
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from transfer.orders.graph import ArticulationGraph, Body, Joint, JointType, OrderingError, RobotSchema, Topology
from transfer.robot.assets import SOURCE_SUFFIXES, resolve_asset
from transfer.robot.usd_cache import _CACHE_SIZE, _Entry, _layer_stats, _ReadCache
from transfer.robot.usd_schema import robot_schema, robot_schema_or_error

__all__ = [
    "StagePhysics",
    "StageRead",
    "clear_cache",
    "file_stage",
    "open_stage",
    "stage_compositions",
    "read_file",
    "read_physics",
    "read_robot_schema",
    "read_stage",
    "read_topology",
    "select",
]


_COMPOSED = [0]


def stage_compositions() -> int:
    """How many times this process composed a USD stage from a file outside the engines (:func:`open_stage`): a
    replay composes its robot once, whatever reads it (orders, base, spawn, colliders)."""
    return _COMPOSED[0]


def compose(*args: Any):
    """``Usd.Stage.Open(*args)`` with USD's composition warnings trapped: they reached stderr raw ("Warning: in
    _ReportErrors at line 3315 of stage.cpp -- ..."), and every reader reports them itself, in one line naming the
    layer, from ``stage.GetCompositionErrors()`` (:attr:`StageRead.unresolved`). Other warnings pass."""
    from pxr import Tf, Usd

    with Tf.DiagnosticTrap() as trap:
        stage = Usd.Stage.Open(*args)
        trap.EraseMatching(lambda d: d.sourceFunction.endswith("UsdStage::_ReportErrors"))
    return stage


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
    if path.suffix.lower() in SOURCE_SUFFIXES:  # MJCF or URDF: the converted USD (transfer.robot.assets)
        path = resolve_asset(path)
    try:
        _COMPOSED[0] += 1
        stage = compose(str(path))
    except Exception as exc:  # pxr raises Tf.ErrorException: "Error in '<function>' at line N in file F : 'why'"
        why = re.findall(r" : '(.*)'\s*$", str(exc), flags=re.MULTILINE) or [str(exc).strip()]
        raise OrderingError(
            f"Could not open USD file {path}: {why[0]}. Give a USD file (.usd, .usda, .usdc) that USD can open, "
            "or a robot's MJCF (.xml) or URDF (.urdf) file."
        ) from exc
    if stage is None:
        raise OrderingError(f"Could not open USD file {path}: not a USD layer.")
    return stage


def read_robot_schema(asset: Any, articulation_root: str) -> RobotSchema | None:
    """The robot schema of the asset (a path or a ``Usd.Stage``) holding ``articulation_root``, or ``None`` when
    none is authored: :func:`transfer.robot.usd_schema.robot_schema` on the opened stage, which says how the
    robot prim is found and what it refuses."""
    return robot_schema(open_stage(asset), articulation_root)


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


def _check_targets(stage, prim, path: str, body0: str, body1: str) -> None:
    """Refuse a joint side with several targets or a target that does not exist, and a joint on one body.

    ``body0``/``body1`` are the parse's bodies: non-empty only when the (first) target exists."""
    for rel_name, body in (("physics:body0", body0), ("physics:body1", body1)):
        rel = prim.GetRelationship(rel_name)
        targets = rel.GetTargets() if rel else []
        if len(targets) > 1:
            raise OrderingError(f"Joint {path}: {rel_name} has {len(targets)} targets; a joint side names one body.")
        for target in targets:
            if not body and not stage.GetPrimAtPath(target).IsValid():
                raise OrderingError(
                    f"Joint {path}: {rel_name} targets {target}, which does not exist in the stage. "
                    "Point it at an existing rigid body (or remove it to attach the joint to the world)."
                )
    if body0 == body1 and body0:
        raise OrderingError(
            f"Joint {path} connects body {body0} to itself; physics:body0 and physics:body1 must name two "
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
    get_prim = stage.GetPrimAtPath
    bodies: dict[str, Body] = {}
    joints: dict[str, Joint] = {}
    articulations = []
    for otype, (paths, descs) in parsed.items():
        name = str(otype).rsplit(".", 1)[-1]
        if name == "RigidBody":
            for path, desc in zip(paths, descs, strict=True):
                key = str(path)
                bodies[key] = Body(key, bool(desc.rigidBodyEnabled), bool(desc.kinematicBody))
        elif name in _JOINT_TYPES:
            parsed_type = _JOINT_TYPES[name]
            for path, desc in zip(paths, descs, strict=True):
                key = str(path)
                prim = get_prim(path)
                body0, body1 = str(desc.body0), str(desc.body1)
                _check_targets(stage, prim, key, body0, body1)
                jtype = parsed_type
                if jtype is JointType.D6 and prim.GetTypeName() != "PhysicsJoint":
                    jtype = JointType.OTHER  # a typed joint the parse treats as D6 (e.g. a custom schema)
                joints[key] = Joint(
                    path=key,
                    type=jtype,
                    body0=body0 or None,
                    body1=body1 or None,
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


@dataclass(frozen=True)
class StageRead:
    """What one read of a stage yields before a root is selected (see :func:`read_stage`).

    Immutable, so that the cache of :func:`read_topology` can hand the same value to every caller.
    """

    source: str
    """The root layer's file (or identifier, for a stage that has none)."""
    graphs: tuple[ArticulationGraph, ...]
    """Every articulation, sorted by root path."""
    articulations: tuple[tuple[str, tuple[str, ...], tuple[str, ...]], ...]
    """:attr:`StagePhysics.articulations`, for the check that two roots do not claim the same bodies."""
    unloaded: tuple[str, ...] = ()
    """Prims whose payloads the stage has not loaded."""
    unresolved: tuple[str, ...] = ()
    """The stage's composition errors (a reference, payload or sublayer that does not resolve, ...), one
    ``at <prim>: <USD's message>`` line each; the message names the missing asset and the layer that authors
    the arc."""


def read_stage(stage) -> StageRead:
    """Read an open ``Usd.Stage`` once: the UsdPhysics parse, each articulation's graph (with its robot
    schema), unloaded payloads and composition errors. Root selection and refusals are :func:`select`'s."""
    from pxr import UsdPhysics

    physics = read_physics(stage)
    source = _source(stage)
    errors = stage.GetCompositionErrors()
    composition_errors = tuple(str(e) for e in errors)
    get_prim = stage.GetPrimAtPath
    graphs = []
    for key, member_bodies, member_joints in physics.articulations:
        prim = get_prim(key)
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
                robot=robot_schema_or_error(stage, key),
                composition_errors=composition_errors,
                instance_proxies=tuple(p for p in members if get_prim(p).IsInstanceProxy()),
            )
        )
    graphs.sort(key=lambda g: g.root)
    return StageRead(
        source=source,
        graphs=tuple(graphs),
        articulations=physics.articulations,
        unloaded=tuple(_unloaded_payloads(stage)),
        unresolved=tuple(_describe_error(e) for e in errors),
    )


def select(read: StageRead, root: str | None = None) -> Topology:
    """The :class:`Topology` of a :class:`StageRead`: every articulation, or only the one at ``root``.

    Raises :class:`OrderingError` as :func:`read_topology` documents.
    """
    graphs = list(read.graphs)
    source = read.source
    found = tuple(g.root for g in graphs)
    unloaded = list(read.unloaded)
    if root is not None:
        root = str(root)
        graphs = [g for g in graphs if g.root == root]
        if not graphs:
            hint = f"Articulation roots in this file: {list(found)}." if found else _missing_root_hint(read)
            raise OrderingError(
                f"No articulation root at {root} in {source}. {hint}{_unloaded_hint(unloaded)}"
                + (f" {_unresolved_text(read)}" if found and read.unresolved else "")
            )
    elif not graphs:
        raise OrderingError(f"No articulation in {source}. {_missing_root_hint(read)}{_unloaded_hint(unloaded)}")
    elif unloaded:
        raise OrderingError(
            f"{source} has payloads that are not loaded ({', '.join(unloaded[:5])}"
            f"{', ...' if len(unloaded) > 5 else ''}); articulations inside them are invisible, so the list of "
            f"articulations {list(found)} may be incomplete. Load them (open the file by path, or "
            "stage.Load(path)), or pass root= to select one articulation."
        )
    _refuse_shared_bodies(graphs, read.articulations, source)
    return Topology(tuple(graphs), source=source)


def read_topology(asset: Any, root: str | None = None) -> Topology:
    """Every articulation of a USD file or stage as engine-free graphs, sorted by root path.

    With ``root`` (the path of the prim carrying ``PhysicsArticulationRootAPI``), only that articulation.
    Raises :class:`OrderingError` when there is no articulation (or none at ``root``; naming the references,
    payloads or sublayers that do not resolve, if any), when two root APIs claim the same bodies (nested or
    repeated roots, where the engines disagree), or when payloads the stage has not loaded may hide
    articulations. A robot schema that cannot be used is recorded on the graph (``robot.error``) and raised
    only when the ``robot_schema`` convention is asked for.

    A file path is opened once and its read kept in a small LRU cache (see :func:`read_file`); a
    ``Usd.Stage`` is read every time, as it may have been edited.
    """
    from pxr import Usd

    read = read_stage(asset) if isinstance(asset, Usd.Stage) else read_file(asset)
    return select(read, root)


# --- the read cache (transfer.robot.usd_cache) -------------------------------------------------------------------

_CACHE = _ReadCache(_CACHE_SIZE)


def clear_cache() -> None:
    """Forget every cached read (:func:`read_file`)."""
    _CACHE.clear()


def read_file(asset: str | os.PathLike) -> StageRead:
    """The :class:`StageRead` of a USD file, from the cache when no layer it used has changed since.

    The cache holds the last 16 files, keyed by resolved path. An entry is used only while every file layer
    the stage used (the root layer, its sublayers, referenced and payload files) keeps its ``mtime_ns``,
    size, ctime and inode, and none is held open in this process with unsaved edits; otherwise the file is
    read again. Not cached: stages with composition errors (a missing file may appear), layers that are not
    plain files (e.g. inside a ``.usdz``), and files modified less than 2 s before the read (file times are
    too coarse to tell two quick writes apart).
    """
    from pxr import Usd

    if isinstance(asset, Usd.Stage):
        return read_stage(asset)
    if not isinstance(asset, (str, os.PathLike)):
        open_stage(asset)  # raises the TypeError
    return _file_entry(asset).read


def _file_entry(asset: str | os.PathLike) -> _Entry:
    """The cached (or new) read and stage of a USD file path (an MJCF/URDF: its converted USD)."""
    if Path(asset).suffix.lower() in SOURCE_SUFFIXES and Path(asset).is_file():
        asset = resolve_asset(asset)  # the converted USD (keyed by content): an edited MJCF/URDF is a new file
    key = os.path.realpath(asset)
    entry = _CACHE.get(key)
    if entry is not None:
        return entry
    started = time.time_ns()
    stage = open_stage(asset)
    entry = _Entry((), read_stage(stage), stage)
    layers = _layer_stats(stage, started)
    if layers is not None:
        entry = _Entry(layers, entry.read, stage)
        _CACHE.put(key, entry)
    return entry


def file_stage(asset: Any):
    """The composed ``Usd.Stage`` of ``asset`` for reading: a file path's from the read cache (the same stage
    :func:`read_topology` parsed, while no layer changed), a stage as given. Never edit it."""
    from pxr import Usd

    if isinstance(asset, Usd.Stage):
        return asset
    if not isinstance(asset, (str, os.PathLike)):
        open_stage(asset)  # raises the TypeError
    return _file_entry(asset).stage


def up_axis_conflict(asset: Any) -> str | None:
    """What to say when the stage's root layer authors no ``upAxis`` (USD's rule then makes the stage Y-up) while a
    layer it composes says another axis: the engines disagree on such a stage (PhysX takes the stage's Y and pulls
    the robot sideways, Newton stands it up). ``None`` when the root layer says its axis, or no layer says another."""
    stage = file_stage(asset)
    root = stage.GetRootLayer()
    if root.pseudoRoot.HasInfo("upAxis"):
        return None
    others = sorted(
        {
            (Path(layer.realPath).name, str(layer.pseudoRoot.GetInfo("upAxis")))
            for layer in stage.GetUsedLayers()
            if layer != root
            and layer.realPath
            and layer.pseudoRoot.HasInfo("upAxis")
            and str(layer.pseudoRoot.GetInfo("upAxis")) != "Y"
        }
    )
    if not others:
        return None
    said = ", ".join(f"{name} says {axis}" for name, axis in others)
    return (
        f"{Path(root.realPath).name} authors no upAxis, so the stage is Y-up (USD's rule) while {said}: the "
        f"engines disagree on such a stage (PhysX pulls the robot along -Y); author upAxis = "
        f'"{others[0][1]}" on {Path(root.realPath).name}'
    )


# --- errors ------------------------------------------------------------------------------------------------


def _describe_error(error) -> str:
    site = getattr(error, "rootSite", None)
    prim = getattr(site, "path", None)
    message = str(error).strip()
    return f"at <{prim}>: {message}" if prim is not None and str(prim) else message


def _unresolved_text(read: StageRead) -> str:
    """The stage's composition errors and how to fix them."""
    n = len(read.unresolved)
    listed = "".join(f"\n  - {e}" for e in read.unresolved[:8])
    more = f"\n  (and {n - 8} more)" if n > 8 else ""
    what = (
        "1 composition error (a reference, payload or sublayer that does not resolve); what it would bring in"
        if n == 1
        else f"{n} composition errors (references, payloads or sublayers that do not resolve); what they would bring in"
    )
    return (
        f"The stage has {what}, possibly the robot, is missing:{listed}{more}\n"
        "Make each listed asset path (and prim path) resolve: a relative asset path resolves against the layer "
        "that authors it, so copy the referenced files along with the asset and keep its directory layout. Or "
        "remove the reference."
    )


def _missing_root_hint(read: StageRead) -> str:
    if not read.unresolved:
        return _no_root_hint()
    return f"{_unresolved_text(read)}\nIf the robot is authored in this file itself: {_no_root_hint()}"


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


def _refuse_shared_bodies(
    graphs: list[ArticulationGraph],
    articulations: tuple[tuple[str, tuple[str, ...], tuple[str, ...]], ...],
    source: str,
) -> None:
    """Two root APIs on one mechanism (nested, or on two of its bodies): PhysX keeps one, Newton builds both."""
    owners: dict[str, list[str]] = {}
    for key, bodies, _ in articulations:
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


# ---------------------------------------------------------------------------------------------------- spawn geometry


def spawn_geometry(asset: Any, root_body: str) -> tuple[float, float | None]:
    """``(root_z, lowest_z)``: the world height of the root body's origin and of the lowest collision geometry of
    the asset, at its authored pose, along the stage's up axis (metres); ``lowest_z`` is ``None`` when nothing in
    the asset has collision geometry with a bound (empty collision prims, meshes in a file that did not load).

    What a spawn height is computed from when a task gives none: lifting the asset by ``root_z - lowest_z`` (plus
    a margin) stands it clear of a ground plane at 0.
    """
    from pxr import Usd, UsdGeom, UsdPhysics

    stage = file_stage(asset)
    up = 2 if UsdGeom.GetStageUpAxis(stage) == UsdGeom.Tokens.z else 1
    scale = UsdGeom.GetStageMetersPerUnit(stage) or 1.0
    xforms = UsdGeom.XformCache(Usd.TimeCode.Default())
    root = stage.GetPrimAtPath(root_body)
    if not root.IsValid():
        raise ValueError(f"spawn_geometry: no prim at {root_body} in {_source(stage)}")
    root_z = xforms.GetLocalToWorldTransform(root).ExtractTranslation()[up]
    boxes = UsdGeom.BBoxCache(
        Usd.TimeCode.Default(), [UsdGeom.Tokens.default_, UsdGeom.Tokens.guide], useExtentsHint=True
    )
    lows = [
        boxes.ComputeWorldBound(prim).ComputeAlignedRange().GetMin()[up]
        for prim in Usd.PrimRange(stage.GetPseudoRoot(), Usd.TraverseInstanceProxies())
        if prim.HasAPI(UsdPhysics.CollisionAPI) and prim.IsA(UsdGeom.Imageable)
    ]
    lows = [z for z in lows if abs(z) < 1e30]  # an empty bound reports +/-FLT_MAX
    return float(root_z * scale), (float(min(lows) * scale) if lows else None)


def _colliders(asset: Any):
    """``(body path, prim, its bound relative to the body, metres per unit)`` of every collision prim that has a
    bound (empty and unloaded meshes left out)."""
    from pxr import Usd, UsdGeom, UsdPhysics

    stage = file_stage(asset)
    scale = UsdGeom.GetStageMetersPerUnit(stage) or 1.0
    boxes = UsdGeom.BBoxCache(
        Usd.TimeCode.Default(), [UsdGeom.Tokens.default_, UsdGeom.Tokens.guide], useExtentsHint=True
    )
    for prim in Usd.PrimRange(stage.GetPseudoRoot(), Usd.TraverseInstanceProxies()):
        if not (prim.HasAPI(UsdPhysics.CollisionAPI) and prim.IsA(UsdGeom.Imageable)):
            continue
        body = prim
        while body and not body.HasAPI(UsdPhysics.RigidBodyAPI):
            body = body.GetParent()
        if not body:
            continue
        box = boxes.ComputeRelativeBound(prim, body)
        lo, hi = box.GetRange().GetMin(), box.GetRange().GetMax()
        if box.GetRange().IsEmpty() or any(abs(v) > 1e30 for v in (*lo, *hi)):
            continue
        yield str(body.GetPath()), prim, box, scale


def collider_corners(asset: Any) -> dict[str, list[tuple[float, float, float]]]:
    """The corners of every collision prim's bounding box in the frame of the rigid body it belongs to (metres), by
    body path: with the bodies' world poses (an engine's, in any joint pose) they say how low the robot reaches and
    whether its base touches the ground. Prims with no bound (empty, unloaded meshes) are left out."""
    from pxr import Gf

    out: dict[str, list[tuple[float, float, float]]] = {}
    for body, _, box, scale in _colliders(asset):
        lo, hi, matrix = box.GetRange().GetMin(), box.GetRange().GetMax(), box.GetMatrix()
        corners = out.setdefault(body, [])
        for x in (lo[0], hi[0]):
            for y in (lo[1], hi[1]):
                for z in (lo[2], hi[2]):
                    p = matrix.Transform(Gf.Vec3d(x, y, z))
                    corners.append((p[0] * scale, p[1] * scale, p[2] * scale))
    return out


def collider_points(
    asset: Any, corners: dict[str, list[tuple[float, float, float]]] | None = None
) -> dict[str, list[tuple[float, float, float, float]]]:
    """Every collision prim as points swept by a radius, ``(x, y, z, radius)`` in its body's frame (metres), by body
    path: a sphere is its centre and radius, a capsule the two ends of its segment and its radius, any other shape
    its bounding box's corners with radius 0. The lowest point of a body at a world pose is then exact for spheres
    and capsules, whatever their rotation (box corners of a rotated sphere reach up to 0.73 r below it)."""
    from pxr import Gf, UsdGeom

    out: dict[str, list[tuple[float, float, float, float]]] = {}
    corners = collider_corners(asset) if corners is None else corners  # the box corners, when read already
    boxes: dict[str, int] = {}
    for body, prim, box, scale in _colliders(asset):
        matrix = box.GetMatrix()
        unit = matrix.TransformDir(Gf.Vec3d(1, 0, 0)).GetLength() * scale  # the prim's scale into body metres
        centre = matrix.Transform(Gf.Vec3d(0, 0, 0)) * scale
        points = out.setdefault(body, [])
        if prim.IsA(UsdGeom.Sphere):
            points.append((*centre, float(UsdGeom.Sphere(prim).GetRadiusAttr().Get()) * unit))
        elif prim.IsA(UsdGeom.Capsule):
            capsule = UsdGeom.Capsule(prim)
            axis = Gf.Vec3d(*(float(a == capsule.GetAxisAttr().Get()) for a in "XYZ"))
            half = matrix.TransformDir(axis * float(capsule.GetHeightAttr().Get()) / 2) * scale
            radius = float(capsule.GetRadiusAttr().Get()) * unit
            points += [(*(centre + half), radius), (*(centre - half), radius)]
        else:
            k = boxes.get(body, 0)
            points += [(*c, 0.0) for c in corners[body][k : k + 8]]
        boxes[body] = boxes.get(body, 0) + 8
    return out
