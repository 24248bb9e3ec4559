"""PhysX's joint movement probe for ``transfer validate``: velocity drives on each joint's own axis.

:func:`probe` runs one attempt of the joint_movement test (:mod:`transfer.runs.validate`) on ovphysx (CPU):

1. An anonymous USD layer over the asset (the user's file is never written) sets gravity to zero on every
   ``PhysicsScene`` (or adds one), switches off static colliders (a floor would block a joint driven toward it),
   makes the plan's pinned base bodies kinematic (loose assemblies only; a kinematic link is illegal in an
   articulation) and authors, on each commanded joint, a velocity drive on the joint's own DoF: stiffness 0, the
   first damping of the ramp, ``maxForce = plan.max_force`` and ``targetVelocity = sign * speed`` (USD units).
2. A spherical joint (PhysX drives none) gets a temporary D6 driver outside the articulation: a ``PhysicsJoint``
   with the spherical joint's bodies and local frames, translation and all rotation but one swing axis locked,
   and an angular drive on that axis. It lives only in the layer of this attempt: removed when it ends.
3. While stepping, the damping ramp (geometric, from ``plan.damping[0]`` to ``plan.damping[1]``) is written to the
   drives through ovstage and drained into the running simulation (``update_from_ovstage``); a ``"nudge"`` writes
   the child body's ``physics:velocity`` the same way every step.
4. Every step reads the world pose of every rigid body and articulation link (session read) and returns each joint's
   child pose in its parent's frame, plus the engine's own joint coordinate (``jointPosition``, degrees or stage
   units) of articulation joints.
5. While the attempt runs, PhysX's own warnings and errors (e.g. "Invalid PhysX transform detected for /arm/link1",
   "Illegal BroadPhaseUpdateData - non-finite bounds") are forwarded to ``logging.getLogger(LOGGER)`` (ovphysx's
   Python logging bridge, WARNING and up), where ``transfer validate`` collects them into its report.

Each call populates a fresh stage from that layer: nothing the attempt changed (drives, kinematic flags, drivers)
outlives it. ovphysx, ovstage and pxr are imported lazily.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from transfer._console import quiet_warp
from transfer.backends._pose import relative_pose
from transfer.backends._usd import overlay_stage
from transfer.backends.base import asset_file
from transfer.backends.physx import engine
from transfer.backends.physx.scene import scene_flags, static_colliders
from transfer.backends.probes import MovementJoint, MovementPlan, MovementTrace

__all__ = ["LOGGER", "probe"]

LOGGER = "transfer.backends.physx.engine"

_lock = threading.Lock()
_KEY = "movement"  # the engine.shared_instance every call reuses, created on first use
_SWINGS = {"X": ("Y", "Z"), "Y": ("Z", "X"), "Z": ("X", "Y")}


@contextlib.contextmanager
def _engine_log() -> Iterator[None]:
    """Forward ovphysx's native log (WARNING and up) to :data:`LOGGER` for the duration."""
    import ovphysx

    try:
        ovphysx.enable_python_logging(LOGGER, min_severity=ovphysx.LogLevel.WARNING)
    except RuntimeError:  # another bridge is being configured: the console output stays the only record
        yield
        return
    try:
        yield
    finally:
        try:
            ovphysx.flush_log(1_000_000_000)
        except (TimeoutError, RuntimeError):
            pass
        ovphysx.disable_python_logging()


def _start() -> tuple[Any, bool]:
    import warnings

    cpu_scene = engine.settle_mode("cpu")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        engine.set_num_threads(0)
    return engine.start_physx(), cpu_scene


def _compose(
    asset: str, joints: dict[str, MovementJoint], plan: MovementPlan, cpu_scene: bool, skipped: dict[str, str]
) -> tuple[str, list]:
    """The attempt's USDA text and the drives to ramp: ``(drive prim path, attribute prefix)`` per drive. Commanded
    joints that cannot be driven are added to ``skipped``."""
    engine.import_pxr()  # a missing usd-core says how to install it
    from pxr import Gf, Sdf, UsdPhysics

    stage = overlay_stage(asset, "transfer_validate.usda")
    scenes = [p for p in stage.Traverse() if p.IsA(UsdPhysics.Scene)]
    if not scenes:
        scenes = [UsdPhysics.Scene.Define(stage, "/TransferValidateScene").GetPrim()]
    for prim in scenes:
        UsdPhysics.Scene(prim).CreateGravityMagnitudeAttr(0.0)
        if cpu_scene:
            scene_flags(prim, cuda=False)
    for path in static_colliders(stage):
        prim = stage.GetPrimAtPath(path)
        if not prim.IsInstanceProxy():
            UsdPhysics.CollisionAPI(prim).CreateCollisionEnabledAttr(False)
    for path in plan.pinned:
        UsdPhysics.RigidBodyAPI(stage.GetPrimAtPath(path)).CreateKinematicEnabledAttr(True)

    drives = []
    for k, command in enumerate(plan.commands):
        joint = joints[command.joint]
        if command.kind == "drive":
            prim, instance = stage.GetPrimAtPath(joint.path), "angular" if joint.type == "revolute" else "linear"
            if joint.type not in ("revolute", "prismatic"):
                continue
            if prim.IsInstanceProxy():
                skipped[joint.path] = "the joint is inside an instanceable prim: no drive can be authored on it"
                continue
        elif command.kind == "swing":
            prim = UsdPhysics.Joint.Define(stage, f"/TransferValidateDrivers/driver_{k}").GetPrim()
            d6 = UsdPhysics.Joint(prim)
            if joint.parent:
                d6.CreateBody0Rel().SetTargets([Sdf.Path(joint.parent)])
            d6.CreateBody1Rel().SetTargets([Sdf.Path(joint.child)])
            for side, frame in ((0, joint.frame0), (1, joint.frame1)):
                getattr(d6, f"CreateLocalPos{side}Attr")(Gf.Vec3f(*frame[:3]))
                getattr(d6, f"CreateLocalRot{side}Attr")(Gf.Quatf(frame[6], *frame[3:6]))
            d6.CreateExcludeFromArticulationAttr(True)
            free = "rot" + _SWINGS.get(joint.axis, ("Y", "Z"))[command.axis - 1]
            for axis in ("transX", "transY", "transZ", "rotX", "rotY", "rotZ"):
                if axis != free:
                    limit = UsdPhysics.LimitAPI.Apply(prim, axis)
                    limit.CreateLowAttr(1.0)
                    limit.CreateHighAttr(-1.0)  # low > high: the axis is locked
            instance = free
        else:
            continue
        drive = UsdPhysics.DriveAPI.Apply(prim, instance)
        drive.CreateTypeAttr("force")
        drive.CreateStiffnessAttr().Set(0.0)
        drive.CreateDampingAttr().Set(float(plan.damping[0]))
        drive.CreateMaxForceAttr().Set(float(plan.max_force))
        drive.CreateTargetVelocityAttr().Set(float(command.sign * command.speed))
        drives.append((str(prim.GetPath()), f"drive:{instance}:physics"))
    return stage.GetRootLayer().ExportToString(), drives


class _Writer:
    """Writes USD attributes of a few prims into the attached ovstage stage and drains them into the simulation."""

    def __init__(self, physx: Any, stage: Any) -> None:
        import ovstage

        self.ovstage, self.physx, self.stage = ovstage, physx, stage
        self.paths = ovstage.PathDictionary(stage)
        self.ordinal = 1
        self._queries: dict[tuple[str, ...], Any] = {}
        self._lists: list[Any] = []

    def write(self, values: dict[tuple[str, str], np.ndarray]) -> None:
        """``{(prim path, attribute): value}``; one ordinal for all of them."""
        self.ordinal += 1
        ov = self.ovstage
        for (path, attribute), value in values.items():
            query = self._queries.get((path,))
            if query is None:
                path_list = self.paths.create_path_list_from_strings([path])
                self._lists.append(path_list)
                query = self.stage.query_from_path_list(path_list)
                self._queries[(path,)] = query
            data = np.ascontiguousarray(value, dtype=np.float32).reshape(1, -1)
            dtype = ov.DLDataType(ov.DLDataTypeCode.kDLFloat, 32, data.shape[1])
            tensor = ov.make_dltensor(data, dtype=dtype, shape=[1], ndim=1)
            self.stage.write_attribute(query, attribute, self.ordinal, tensor, is_array=False).wait()
        self.stage.advance_write_floor(ordinal=self.ordinal).wait()
        self.physx.wait_task(self.physx.update_from_ovstage(self.ordinal, self.ordinal))

    def close(self) -> None:
        for query in self._queries.values():
            self.stage.release_query(query).wait()
        self._queries.clear()
        for path_list in self._lists:
            self.paths.destroy_path_list(path_list)
        self.paths.destroy()


def _read_poses(physx: Any) -> dict[str, np.ndarray]:
    """World pose ``(x, y, z, qx, qy, qz, qw)`` of every rigid body and articulation link, by prim path."""
    from ovphysx.types import ObjectScope, SimObjectType

    parts: dict[str, dict[int, np.ndarray]] = {}
    for kind in (SimObjectType.RIGID_BODY, SimObjectType.ARTICULATION_LINK):
        with physx.read_sync(kind, ["position", "orientation"], scope=ObjectScope.ALL) as result:
            for group in result.groups:
                if group.is_delete or group.is_array or not group.tensors:
                    continue
                names = result.dictionary.get_path_strings(group.prim_list)
                data = group.tensors[0].numpy().reshape(group.prim_count, -1)  # 3 lanes: position, 4: orientation
                for row in range(group.prim_count):
                    parts.setdefault(names[row + group.prim_offset], {})[data.shape[1]] = data[row]
    return {name: np.concatenate([p[3], p[4]]).astype(np.float64) for name, p in parts.items() if 3 in p and 4 in p}


def _read_coordinates(physx: Any) -> dict[str, np.ndarray]:
    """``jointPosition`` (degrees or stage units, one value per unlocked axis) of every articulation joint."""
    from ovphysx.types import ObjectScope, SimObjectType

    out: dict[str, np.ndarray] = {}
    with physx.read_sync(SimObjectType.ARTICULATION_JOINT, ["jointPosition"], scope=ObjectScope.ALL) as result:
        for group in result.groups:
            if group.is_delete or not group.tensors:
                continue
            names = result.dictionary.get_path_strings(group.prim_list)
            for i, tensor in enumerate(group.tensors):
                out[names[i + group.prim_offset]] = np.asarray(tensor.numpy(), dtype=np.float64).ravel()
    return out


def _nudge_velocity(plan: MovementPlan) -> dict[str, np.ndarray]:
    out: dict[str, np.ndarray] = {}
    for command in plan.commands:
        if command.kind == "nudge":
            velocity = np.zeros(3)
            velocity[command.axis] = command.sign * command.speed
            out[command.joint] = velocity
    return out


def probe(asset: str, joints: Sequence[MovementJoint], plan: MovementPlan) -> MovementTrace:
    """Run one attempt of ``plan`` on PhysX and sample every joint of ``joints`` (see the module docstring)."""
    path = asset_file(asset)
    by_path = {j.path: j for j in joints}
    trace = MovementTrace("physx", poses={})
    for command in plan.commands:
        joint = by_path[command.joint]
        if command.kind == "drive" and joint.type not in ("revolute", "prismatic"):
            trace.skipped[joint.path] = f"PhysX has no single-axis drive for a {joint.type} joint"
    steps = max(1, round(plan.duration / plan.dt))
    nudges = {by_path[j].child: v for j, v in _nudge_velocity(plan).items()}
    with _lock, quiet_warp(), _engine_log():
        physx, cpu_scene = engine.shared_instance(_KEY, _start)
        usda, drives = _compose(path, by_path, plan, cpu_scene, trace.skipped)
        stage = engine.new_stage("validate")
        writer = None
        try:
            engine.attach(physx, stage, usda=usda)
            physx.warmup()
            physx.wait_all()
            writer = _Writer(physx, stage)
            samples = [_read_poses(physx)]
            coordinates = [_read_coordinates(physx)]
            lo, hi = (max(float(v), 1e-9) for v in plan.damping)
            for step in range(steps):
                values = {}
                if drives:
                    damping = lo * (hi / lo) ** (step / max(steps - 1, 1))
                    values.update({(prim, f"{prefix}:damping"): np.array([damping]) for prim, prefix in drives})
                values.update({(child, "physics:velocity"): v for child, v in nudges.items()})
                if values:
                    writer.write(values)
                physx.step_sync(plan.dt)
                samples.append(_read_poses(physx))
                coordinates.append(_read_coordinates(physx))
        finally:
            if writer is not None:
                writer.close()
            try:
                engine.detach(physx, stage)
            finally:
                stage.destroy()
    for joint in joints:
        missing = [b for b in (joint.parent, joint.child) if b is not None and b not in samples[0]]
        if missing:
            trace.notes.append(f"{joint.path}: PhysX simulates no body at {', '.join(missing)}")
            continue
        trace.poses[joint.path] = np.stack(
            [relative_pose(s[joint.parent] if joint.parent else None, s[joint.child]) for s in samples]
        )
        if joint.path in coordinates[0]:
            trace.coordinates[joint.path] = np.stack([c[joint.path] for c in coordinates])
    return trace
