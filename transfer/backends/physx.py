"""PhysX backend: one articulation from a USD file, cloned into ``num_envs`` environments, on ovphysx.

:class:`PhysxBackend` implements :class:`transfer.backends.base.Backend` on ovphysx (PhysX 5 through the
ovstage scene description) with **tensor bindings**, the engine API that hands out whole ``(num_envs, ...)``
tensors in PhysX's own DoF and link order. The session read/write API was measured as well and is 14-20x
(1 env) to 25-28x (64 envs) slower for step + state read + target write, because it returns one array per
joint prim per attribute; see ``docs/physx.md`` for the numbers.

What the backend does with the asset, without ever writing to the user's file:

1. It composes an in-memory (anonymous) USD layer that sublayers the asset and adds, only where needed,
   a ``PhysicsScene`` (gravity 9.81 m/s^2 against the stage up axis) when the asset has none, a ground plane
   (``ground_height``), solver iteration overrides on the articulation root, and the scene flags for the
   chosen device. ovstage populates the engine from that layer.
2. It clones the asset's environment prim (the highest ancestor of the articulation that holds no
   ``PhysicsScene``, static collider or other articulation, e.g. ``/anymal``) into
   ``/World/envs/env_<k>/<name>`` for ``k = 1 .. num_envs - 1`` with ``PhysX.clone`` before the first step,
   spaced ``env_spacing`` metres apart on a square grid in the ground plane (CPU clones are not collision
   filtered, so they must not overlap). Environment 0 is the asset at its authored place.
3. It binds every tensor it needs to the ``num_envs`` root prims, in environment order.

Units. Tensor bindings are SI already, which the tests and ``docs/physx.md`` verify against the session API
(which is not): joint positions in rad (revolute) or m (prismatic), velocities in rad/s or m/s, drive
stiffness per rad (USD authors angular gains per degree: 5.235988 in USD reads 300 here), damping per rad/s,
limits in rad/m, velocity limits in rad/s or m/s. Root and link velocities are world-frame, linear velocity
of the centre of mass first, then angular velocity (rad/s). Quaternions are ``x, y, z, w``. PhysX reports
"unlimited" as the float32 maximum (3.4028235e38), not ``inf``.

ovphysx, ovstage and pxr are imported lazily: importing this module loads none of them.
"""

from __future__ import annotations

import itertools
import math
import os
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import warp as wp

from transfer.backends.base import JOINT_PROPERTIES, Backend, JointProperties

__all__ = ["PhysxBackend"]

_INSTALL_HINT = "pip install 'transfer[physx]'"
_FLT_MAX = float(np.finfo(np.float32).max)
_stage_ids = itertools.count()
_schemas_registered = False


# --- engine loading -------------------------------------------------------------------------------------------


def _import_engine() -> tuple[Any, Any]:
    """``(ovphysx, ovstage)``, with PhysX and Newton schemas registered for population (once per process)."""
    global _schemas_registered
    try:
        import ovphysx
        import ovstage
        from ovphysx.samples.python_samples.schema_support import physx_schema_paths
    except ImportError as exc:
        raise ImportError(
            f"PhysxBackend needs ovphysx, ovstage and the PhysX/Newton USD schemas ({exc}). "
            f"Install them with: {_INSTALL_HINT}"
        ) from exc
    if not _schemas_registered:
        try:
            newton_root = [str(ovphysx.newton_schema_root())]
        except FileNotFoundError as exc:
            raise ImportError(f"newton-usd-schemas is missing ({exc}). Install it with: {_INSTALL_HINT}") from exc
        # Before the first population in this process; registering again (transfer.truth does too) is harmless.
        ovstage.population.register_usd_schemas([*(str(p) for p in physx_schema_paths()), *newton_root])
        _schemas_registered = True
    return ovphysx, ovstage


def _import_pxr() -> Any:
    try:
        import pxr
    except ImportError as exc:
        raise ImportError(
            f"PhysxBackend composes its scene with usd-core (pxr) ({exc}). Install it with: {_INSTALL_HINT}"
        ) from exc
    return pxr


def _set_num_threads(num_threads: int) -> int:
    """Set PhysX's CPU worker count (process-wide) before an instance is created; return the count in effect."""
    import warnings

    from ovphysx import GlobalConfigKey, get_global_config, set_global_config

    current = get_global_config(GlobalConfigKey.NUM_THREADS)
    if current == num_threads:
        return num_threads
    try:
        set_global_config(GlobalConfigKey.NUM_THREADS, num_threads)
    except RuntimeError as exc:  # ovphysx refuses while any stage is attached (e.g. another live backend)
        warnings.warn(
            f"PhysxBackend: could not set num_threads={num_threads} ({exc}); PhysX keeps {current} worker threads. "
            "Create every backend of a process with the same num_threads, or close the others first.",
            RuntimeWarning,
            stacklevel=3,
        )
        return int(current) if current is not None else num_threads
    return num_threads


# --- scene composition (pxr, in memory) -----------------------------------------------------------------------


@dataclass
class _Scene:
    """What :func:`_compose_scene` decided: the USDA text to populate and where every environment lives."""

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


def _compose_scene(
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
) -> _Scene:
    _import_pxr()
    from pxr import Gf, Sdf, Usd, UsdGeom, UsdPhysics

    from transfer.orders import read_topology

    asset_layer = Sdf.Layer.FindOrOpen(asset)
    if asset_layer is None:
        raise ValueError(f"Could not open {asset} as a USD layer (is it a .usd/.usda/.usdc file?).")
    layer = Sdf.Layer.CreateAnonymous("transfer_physx.usda")
    layer.subLayerPaths.append(asset)
    for key in ("upAxis", "metersPerUnit", "defaultPrim", "timeCodesPerSecond"):
        if asset_layer.pseudoRoot.HasInfo(key):
            layer.pseudoRoot.SetInfo(key, asset_layer.pseudoRoot.GetInfo(key))
    stage = Usd.Stage.Open(layer)
    stage.SetEditTarget(Usd.EditTarget(layer))  # every edit lands in the anonymous layer, never in the asset

    if asset_layer.pseudoRoot.HasInfo("metersPerUnit"):
        mpu = float(asset_layer.pseudoRoot.GetInfo("metersPerUnit"))
        if not math.isclose(mpu, 1.0, rel_tol=1e-6):
            raise ValueError(
                f"{asset} has metersPerUnit = {mpu}; PhysxBackend reports SI units and needs metersPerUnit = 1. "
                "Rescale the asset (or reference it from a layer in metres)."
            )
    up_axis = str(UsdGeom.GetStageUpAxis(stage))
    up = {"Y": Gf.Vec3d(0, 1, 0), "Z": Gf.Vec3d(0, 0, 1)}[up_axis]

    # The articulation: roots as PhysX labels them (the prim carrying PhysicsArticulationRootAPI).
    topology = read_topology(stage)
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
    graph = next(g for g in topology if g.root == root)

    # One pass over the stage: physics scenes, static colliders, other articulation roots.
    scenes: list[str] = []
    static_colliders: list[str] = []
    bodies: set[str] = set()
    for prim in stage.Traverse():
        if prim.IsA(UsdPhysics.Scene):
            scenes.append(str(prim.GetPath()))
        if prim.HasAPI(UsdPhysics.RigidBodyAPI):
            bodies.add(str(prim.GetPath()))
    for prim in stage.Traverse():
        if prim.HasAPI(UsdPhysics.CollisionAPI):
            path = prim.GetPath()
            if not any(str(p) in bodies for p in path.GetAncestorsRange()):  # no rigid body at or above it
                static_colliders.append(str(path))
    blockers = scenes + static_colliders + [r for r in roots if r != root]

    # The environment prim to clone: the articulation's common ancestor, raised while it stays clean.
    members = [root, *(b.path for b in graph.bodies), *(j.path for j in graph.joints)]
    source = _common_ancestor(members)
    if source == "/":
        if num_envs > 1:
            raise ValueError(
                f"The articulation {root} in {asset} spans several top-level prims; PhysxBackend clones one prim "
                "subtree per environment. Group the robot under one prim, or use num_envs=1."
            )
    else:
        parent = str(Sdf.Path(source).GetParentPath())
        while parent != "/" and not any(_is_under(b, parent) for b in blockers):
            source, parent = parent, str(Sdf.Path(parent).GetParentPath())
        if any(_is_under(b, source) for b in blockers) and num_envs > 1:
            raise ValueError(
                f"Cannot clone {source} (the prim holding articulation {root}) in {asset}: it also holds "
                f"{[b for b in blockers if _is_under(b, source)]}. Move the PhysicsScene, ground colliders or other "
                "articulations out of the robot's prim, or use num_envs=1."
            )

    notes: list[str] = []
    if spawn_offset is not None:
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
        notes.append(f"moved {source} by {tuple(offset.tolist())}")
    added_scene = not scenes
    gravity_dir = tuple(float(-c) for c in up)
    if scenes:  # UsdPhysics: an unauthored or zero gravityDirection means "down the up axis"
        authored = UsdPhysics.Scene(stage.GetPrimAtPath(scenes[0])).GetGravityDirectionAttr().Get()
        if authored is not None and Gf.Vec3d(authored).GetLength() > 0:
            gravity_dir = tuple(float(c) for c in Gf.Vec3d(authored).GetNormalized())
    if added_scene:
        scene = UsdPhysics.Scene.Define(stage, _unique_path(stage, "/PhysicsScene"))
        scene.CreateGravityDirectionAttr(Gf.Vec3f(-up))
        scene.CreateGravityMagnitudeAttr(9.81)
        scenes = [str(scene.GetPath())]
        notes.append(f"added {scenes[0]} (gravity 9.81 m/s^2 along -{up_axis})")
    if cuda or cpu_scene:
        for path in scenes:
            prim = stage.GetPrimAtPath(path)
            prim.AddAppliedSchema("PhysxSceneAPI")
            prim.CreateAttribute("physxScene:enableGPUDynamics", Sdf.ValueTypeNames.Bool).Set(bool(cuda))
            prim.CreateAttribute("physxScene:broadphaseType", Sdf.ValueTypeNames.Token).Set("GPU" if cuda else "MBP")
    if ground_height is not None:
        ground = UsdGeom.Xform.Define(stage, _unique_path(stage, "/GroundPlane"))
        ground.AddTranslateOp().Set(Gf.Vec3d(up * float(ground_height)))
        plane = UsdGeom.Plane.Define(stage, ground.GetPath().AppendChild("CollisionPlane"))
        plane.CreateAxisAttr(up_axis)
        plane.CreatePurposeAttr("guide")
        UsdPhysics.CollisionAPI.Apply(plane.GetPrim())
        notes.append(f"added a ground plane at {up_axis} = {ground_height}")
    if solver_position_iterations is not None or solver_velocity_iterations is not None:
        prim = stage.GetPrimAtPath(root)
        prim.AddAppliedSchema("PhysxArticulationAPI")
        for name, value in (
            ("solverPositionIterationCount", solver_position_iterations),
            ("solverVelocityIterationCount", solver_velocity_iterations),
        ):
            if value is not None:
                if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                    raise ValueError(f"solver iteration counts are non-negative integers, got {name}={value!r}")
                prim.CreateAttribute(f"physxArticulation:{name}", Sdf.ValueTypeNames.Int).Set(int(value))

    # Environment k sits at a grid offset in the ground plane; environment 0 is the asset where it is.
    cols = max(1, math.ceil(math.sqrt(num_envs)))
    horizontal = (0, 1) if up_axis == "Z" else (2, 0)
    origins = np.zeros((num_envs, 3), dtype=np.float64)
    for k in range(num_envs):
        origins[k, horizontal[0]] = (k // cols) * env_spacing
        origins[k, horizontal[1]] = (k % cols) * env_spacing
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
    return _Scene(
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
    )


# --- engine resources -----------------------------------------------------------------------------------------


class _Engine:
    """The PhysX instance, its ovstage stage and the bindings; released by :meth:`close` (or at collection)."""

    def __init__(self) -> None:
        self.physx: Any = None
        self.stage: Any = None
        self.bindings: dict[str, Any] = {}

    def close(self) -> None:
        bindings, self.bindings = self.bindings, {}
        for binding in bindings.values():
            try:
                binding.destroy()
            except Exception:  # noqa: BLE001 - best effort on teardown
                pass
        physx, stage, self.physx, self.stage = self.physx, self.stage, None, None
        alive = physx is not None and getattr(physx, "_omni_physx_sdk_handle", True) is not None
        try:
            if alive and stage is not None and physx.is_stage_attached(stage):
                physx.wait_task(physx.detach_ovstage())
        finally:
            if stage is not None:
                stage.destroy()
            if alive:
                physx.destroy()


# Backend name -> (tensor type name, trailing shape builder)
_STATE = {
    "root_pose": "ARTICULATION_ROOT_POSE",
    "root_velocity": "ARTICULATION_ROOT_VELOCITY",
    "body_poses": "ARTICULATION_LINK_POSE",
    "body_velocities": "ARTICULATION_LINK_VELOCITY",
    "joint_pos": "ARTICULATION_DOF_POSITION",
    "joint_vel": "ARTICULATION_DOF_VELOCITY",
    "joint_pos_target": "ARTICULATION_DOF_POSITION_TARGET",
    "joint_vel_target": "ARTICULATION_DOF_VELOCITY_TARGET",
    "joint_effort": "ARTICULATION_DOF_ACTUATION_FORCE",
}
# Property bindings are host-only in ovphysx (even on GPU scenes).
_PROPERTIES = {
    "stiffness": "ARTICULATION_DOF_STIFFNESS",
    "damping": "ARTICULATION_DOF_DAMPING",
    "armature": "ARTICULATION_DOF_ARMATURE",
    "friction": "ARTICULATION_DOF_FRICTION_PROPERTIES",  # (static, dynamic, viscous); `friction` is static
    "limits": "ARTICULATION_DOF_LIMIT",  # (lower, upper)
    "velocity_limit": "ARTICULATION_DOF_MAX_VELOCITY",
    "effort_limit": "ARTICULATION_DOF_MAX_FORCE",
}
# Public property -> (binding, component of the trailing axis or None)
_PROPERTY_FIELDS = {
    "stiffness": ("stiffness", None),
    "damping": ("damping", None),
    "armature": ("armature", None),
    "friction": ("friction", 0),
    "position_limit_lower": ("limits", 0),
    "position_limit_upper": ("limits", 1),
    "velocity_limit": ("velocity_limit", None),
    "effort_limit": ("effort_limit", None),
}


class PhysxBackend(Backend):
    """One articulation of a USD file in ``num_envs`` PhysX environments, in PhysX's own DoF and link order.

    Args:
        usd_path: The USD asset (never modified).
        num_envs: Environments; environment ``k > 0`` is a runtime clone at :attr:`env_origins` ``[k]``.
        device: ``"cpu"`` (default; switches ovphysx into its process-wide CPU-only mode) or ``"cuda[:N]"``
            (GPU dynamics with DirectGPU tensors; needs CUDA and a process where CPU-only mode was never set).
        root: The articulation root prim path, required when the asset holds several articulations.
        num_threads: PhysX CPU worker threads (process-wide setting applied before the instance is created).
            ``0`` runs PhysX on the calling thread: ~10x faster than the default workers for one robot on
            2 cores, 2.6x at 64 robots (``docs/physx.md``).
        drive_stiffness, drive_damping: Drive gains written after loading, SI (N·m/rad or N/m; damping per
            rad/s or m/s): one number for every DoF, a sequence in backend order, or a mapping from DoF name
            to value (DoFs not named keep the asset's gains).
        solver_position_iterations, solver_velocity_iterations: Override the articulation's PhysX solver
            iteration counts (authored in the in-memory layer). ``None`` keeps the asset's.
        dt: Default step size in seconds for :meth:`step` called without one.
        ground_height: Add a ground plane (static collider) at this height along the up axis; ``None``
            (default) adds none.
        spawn_offset: Translate the asset's environment prim (:attr:`clone_source`) by this ``(x, y, z)``
            (metres, in its parent's frame; the world for a top-level prim) in the in-memory layer, e.g.
            ``(0, 0, 0.62)`` to stand ANYmal C (authored with its base at z = 0) on a ground plane at 0. The
            default root pose includes it. Use this rather than teleporting a robot that starts inside the
            ground: with the initial pose penetrating the ground, PhysX (0.7, CPU) produces NaN within a few
            steps even when :meth:`write_root_pose` / :meth:`reset` moved it clear before the first step.
        env_spacing: Distance in metres between neighbouring environments on the clone grid.

    Raises:
        FileNotFoundError: ``usd_path`` is not a file.
        LookupError: ``root`` names no articulation (the message lists the roots found), or it is ``None``
            and the asset holds several articulations.
        ImportError: ovphysx, ovstage or usd-core is missing (``pip install 'transfer[physx]'``).
        RuntimeError: the engine refused the asset or the device cannot be used.
    """

    name: ClassVar[str] = "physx"
    supports_partial_reset: ClassVar[bool] = True
    supports_body_velocities: ClassVar[bool] = True

    def __init__(
        self,
        usd_path: str | os.PathLike,
        num_envs: int = 1,
        device: str = "cpu",
        root: str | None = None,
        num_threads: int = 0,
        drive_stiffness: float | Sequence[float] | Mapping[str, float] | None = None,
        drive_damping: float | Sequence[float] | Mapping[str, float] | None = None,
        solver_position_iterations: int | None = None,
        solver_velocity_iterations: int | None = None,
        dt: float = 1.0 / 200.0,
        *,
        ground_height: float | None = None,
        spawn_offset: Sequence[float] | None = None,
        env_spacing: float = 2.5,
    ) -> None:
        path = Path(os.fspath(usd_path)).expanduser().resolve()
        if not path.is_file():
            raise FileNotFoundError(f"PhysxBackend: USD asset not found: {path}. Check usd_path.")
        if isinstance(num_envs, bool) or not isinstance(num_envs, int) or num_envs < 1:
            raise ValueError(f"PhysxBackend: num_envs must be a positive integer, got {num_envs!r}")
        if isinstance(num_threads, bool) or not isinstance(num_threads, int) or num_threads < 0:
            raise ValueError(f"PhysxBackend: num_threads must be an integer >= 0, got {num_threads!r}")
        if not (isinstance(dt, (int, float)) and math.isfinite(dt) and dt > 0):
            raise ValueError(f"PhysxBackend: dt must be a positive number of seconds, got {dt!r}")
        if not (math.isfinite(env_spacing) and env_spacing >= 0):
            raise ValueError(f"PhysxBackend: env_spacing must be a finite distance >= 0, got {env_spacing!r}")
        device = str(device)
        cuda = device.startswith("cuda")
        cpu_scene = False  # author CPU dynamics into the scene (needed when CPU-only mode cannot be switched on)
        if not cuda and device != "cpu":
            raise ValueError(f"PhysxBackend: device must be 'cpu' or 'cuda[:N]', got {device!r}")

        self.usd_path = str(path)
        self.num_envs = num_envs
        self.dt = float(dt)
        self.num_threads = num_threads
        ovphysx, ovstage = _import_engine()
        from ovphysx import PhysX

        if cuda:
            if not wp.is_cuda_available():
                raise RuntimeError(f"PhysxBackend: device={device!r} but Warp finds no CUDA device; use device='cpu'.")
            if PhysX.get_cpu_mode():
                raise RuntimeError(
                    f"PhysxBackend: device={device!r} but ovphysx is in its process-wide CPU-only mode (set by an "
                    "earlier CPU PhysxBackend or transfer.truth, and sticky). Create CUDA backends in a fresh process."
                )
            self.device = str(wp.get_device(device))
        else:
            if not PhysX.get_cpu_mode():
                try:
                    PhysX.set_cpu_mode(True)  # process-wide and sticky; only possible before the first instance
                except RuntimeError:
                    cpu_scene = True  # an instance exists already: keep this scene on the CPU by authoring it
            self.device = "cpu"
        self._wp_device = wp.get_device(self.device)

        scene = _compose_scene(
            self.usd_path,
            root,
            num_envs,
            float(env_spacing),
            ground_height,
            solver_position_iterations,
            solver_velocity_iterations,
            cuda,
            cpu_scene,
            spawn_offset,
        )
        self.root = scene.root
        self.env_root_paths: tuple[str, ...] = tuple(scene.env_roots)
        """The articulation root prim of every environment (environment 0 is the asset's own)."""
        self.env_origins: np.ndarray = scene.env_origins
        """``(num_envs, 3)`` offset of each environment from environment 0, world frame, metres."""
        self.clone_source = scene.clone_source
        self.up_axis = scene.up_axis
        self.gravity_dir: tuple[float, float, float] = scene.gravity_dir
        """Unit gravity direction of the simulated scene, world frame."""
        self.scene_notes: tuple[str, ...] = tuple(scene.notes)
        """What the in-memory layer added to the asset (scene, ground plane)."""

        self._engine = _Engine()
        self._finalizer = weakref.finalize(self, _Engine.close, self._engine)
        self._finalizer.atexit = False  # at interpreter exit ovphysx tears its instances down itself
        try:
            self.num_threads = _set_num_threads(num_threads)
            if cuda:
                from ovphysx import ConfigKey, PhysXConfig

                physx = PhysX(config=PhysXConfig(carbonite_overrides={"/physics/suppressReadback": True}))
                physx.set_config(ConfigKey.ACTIVE_CUDA_GPUS, str(self._wp_device.ordinal))
            else:
                physx = PhysX()
            self._engine.physx = physx
            self._px = physx
            self._load(ovstage, scene)
            self._bind()
        except BaseException:
            self.close()
            raise

        # Initial state, as the asset authors it (after loading, before any step).
        self.default_root_pose: wp.array = wp.clone(self.root_pose())
        """``(num_envs, 7)`` root pose :meth:`reset` restores; edit it in place to change the reset state."""
        self.default_root_velocity: wp.array = wp.clone(self.root_velocity())
        """``(num_envs, 6)`` root velocity :meth:`reset` restores."""
        self.default_joint_pos: wp.array = wp.clone(self.joint_positions())
        self._zero_joint_vel = wp.zeros((num_envs, self.num_joints), dtype=wp.float32, device=self.device)
        if drive_stiffness is not None or drive_damping is not None:
            gains = {}
            if drive_stiffness is not None:
                gains["stiffness"] = self._per_dof(drive_stiffness, "drive_stiffness", "stiffness")
            if drive_damping is not None:
                gains["damping"] = self._per_dof(drive_damping, "drive_damping", "damping")
            self.write_joint_properties(**gains)

    # -- setup ---------------------------------------------------------------------------------------------------
    def _load(self, ovstage: Any, scene: _Scene) -> None:
        px = self._px
        stage = ovstage.Stage(f"transfer-physx-{os.getpid()}-{next(_stage_ids)}")
        self._engine.stage = stage
        try:
            ovstage.population.open_usd_from_string(stage, scene.usda, ordinal=1, domains=ovstage.PopulationDomain.ALL)
            stage.advance_write_floor(ordinal=1).wait()
            px.wait_task(px.attach_ovstage(stage, read_ordinal=1))
        except Exception as exc:
            raise RuntimeError(
                f"PhysxBackend: ovphysx could not load {self.usd_path}: {type(exc).__name__}: {exc}"
            ) from exc
        if scene.clone_targets:
            try:
                px.wait_task(px.clone(scene.clone_source, scene.clone_targets, anchor_transforms=scene.anchors))
            except Exception as exc:
                raise RuntimeError(
                    f"PhysxBackend: cloning {scene.clone_source} of {self.usd_path} into {len(scene.clone_targets)} "
                    f"environments failed: {type(exc).__name__}: {exc}"
                ) from exc
        px.warmup()  # explicit: initialises PhysX structures without advancing time (clones must come before)
        px.wait_all()

    def _bind(self) -> None:
        import warnings

        from ovphysx.types import TensorType

        px, roots = self._px, list(self.env_root_paths)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)  # tensor bindings: deprecated, still the fast path
            for key, tensor_type in {**_STATE, **_PROPERTIES}.items():
                self._engine.bindings[key] = px.create_tensor_binding(
                    prim_paths=roots, tensor_type=getattr(TensorType, tensor_type)
                )
        first = self._engine.bindings["joint_pos"]
        if first.count != self.num_envs or list(first.prim_paths) != roots:
            raise RuntimeError(
                f"PhysxBackend: PhysX bound {first.count} articulations {first.prim_paths} for the environment roots "
                f"{roots} of {self.usd_path}; expected one per environment, in order. The root prim may not be an "
                "articulation PhysX builds, or several articulations share it."
            )
        self.joint_names = tuple(first.dof_names)
        self.body_names = tuple(first.body_names)
        self.fixed_base = bool(first.is_fixed_base)
        E, D, B = self.num_envs, self.num_joints, self.num_bodies
        shapes = {
            "root_pose": (E, 7),
            "root_velocity": (E, 6),
            "body_poses": (E, B, 7),
            "body_velocities": (E, B, 6),
        }
        self._state = {key: wp.zeros(shapes.get(key, (E, D)), dtype=wp.float32, device=self.device) for key in _STATE}
        self._props_host = {
            key: np.zeros(tuple(self._engine.bindings[key].shape), dtype=np.float32) for key in _PROPERTIES
        }
        self._props_out: JointProperties | None = None

    def _per_dof(self, value: Any, arg: str, field_name: str) -> wp.array:
        """A full ``(num_envs, num_joints)`` array from a scalar, a per-DoF sequence or a name mapping."""
        self._read_props()
        host = self._props_host[field_name].copy()  # start from the current gains: mappings leave others alone
        if isinstance(value, Mapping):
            unknown = sorted(set(value) - set(self.joint_names))
            if unknown:
                raise KeyError(f"PhysxBackend {arg}: unknown DoF names {unknown}; DoFs are {list(self.joint_names)}")
            for name, v in value.items():
                host[:, self.joint_names.index(name)] = float(v)
        elif np.ndim(value) == 0:
            host[:] = float(value)
        else:
            row = np.asarray(value, dtype=np.float32)
            if row.shape != (self.num_joints,):
                raise ValueError(
                    f"PhysxBackend {arg}: expected {self.num_joints} values in backend order {list(self.joint_names)}, "
                    f"got shape {row.shape}"
                )
            host[:] = row
        return wp.array(host, dtype=wp.float32, device=self.device)

    # -- validation ----------------------------------------------------------------------------------------------
    def _check(self, value: Any, arg: str, shape: tuple[int, ...]) -> wp.array:
        if not isinstance(value, wp.array):
            raise TypeError(
                f"PhysxBackend {arg}: expected a wp.array(dtype=wp.float32) of shape {shape} on {self.device}, "
                f"got {type(value).__name__}"
            )
        if value.dtype != wp.float32:
            raise TypeError(
                f"PhysxBackend {arg}: expected dtype float32, got {wp.types.type_repr(value.dtype)}; "
                "convert with wp.array(x.numpy().astype('float32'))"
            )
        if tuple(value.shape) != shape:
            raise ValueError(
                f"PhysxBackend {arg}: expected shape {shape} (full width: num_envs rows; use env_ids to select), "
                f"got {tuple(value.shape)}"
            )
        if value.device != self._wp_device:
            raise ValueError(f"PhysxBackend {arg}: array is on {value.device}, the backend on {self.device}")
        if not value.is_contiguous:
            raise ValueError(f"PhysxBackend {arg}: array must be contiguous (copy it with wp.clone)")
        return value

    def _env_ids(self, env_ids: Any, arg: str = "env_ids") -> tuple[wp.array | None, np.ndarray | None]:
        """``(device indices, host indices)``; ``(None, None)`` for all environments."""
        if env_ids is None:
            return None, None
        if not isinstance(env_ids, wp.array) or env_ids.dtype != wp.int32 or env_ids.ndim != 1:
            got = type(env_ids).__name__
            if isinstance(env_ids, wp.array):
                got = f"wp.array(dtype={wp.types.type_repr(env_ids.dtype)}, ndim={env_ids.ndim})"
            raise TypeError(f"PhysxBackend {arg}: expected a 1-D wp.array(dtype=wp.int32), got {got}")
        host = env_ids.numpy()
        if host.size:
            bad = host[(host < 0) | (host >= self.num_envs)]
            if bad.size:
                raise IndexError(
                    f"PhysxBackend {arg}: environment ids {sorted(set(bad.tolist()))} are out of range "
                    f"[0, {self.num_envs})"
                )
            if np.unique(host).size != host.size:
                raise ValueError(f"PhysxBackend {arg}: environment ids repeat: {host.tolist()}")
        if env_ids.device != self._wp_device or not env_ids.is_contiguous:
            env_ids = wp.array(host, dtype=wp.int32, device=self.device)
        return env_ids, host

    def _write(self, key: str, value: wp.array, indices: wp.array | None, host: np.ndarray | None) -> None:
        if host is not None and host.size == 0:
            return
        self._engine.bindings[key].write(value, indices=indices)

    # -- reads ---------------------------------------------------------------------------------------------------
    def _read(self, key: str) -> wp.array:
        out = self._state[key]
        self._engine.bindings[key].read(out)
        return out

    def root_pose(self) -> wp.array:
        return self._read("root_pose")

    def root_velocity(self) -> wp.array:
        return self._read("root_velocity")

    def joint_positions(self) -> wp.array:
        return self._read("joint_pos")

    def joint_velocities(self) -> wp.array:
        return self._read("joint_vel")

    def body_poses(self) -> wp.array:
        return self._read("body_poses")

    def body_velocities(self) -> wp.array:
        return self._read("body_velocities")

    def joint_position_targets(self) -> wp.array:
        """``(num_envs, num_joints)``: the PD position targets PhysX holds (rad or m)."""
        return self._read("joint_pos_target")

    def joint_velocity_targets(self) -> wp.array:
        """``(num_envs, num_joints)``: the PD velocity targets PhysX holds (rad/s or m/s)."""
        return self._read("joint_vel_target")

    def _read_props(self) -> None:
        for key, host in self._props_host.items():
            self._engine.bindings[key].read(host)

    def joint_properties(self) -> JointProperties:
        """Per-DoF properties, SI: stiffness per rad (or m), damping per rad/s (or m/s), limits in rad (or m),
        velocity limits in rad/s (or m/s), effort limits in N·m (or N). ``friction`` is PhysX's static joint
        friction. Unlimited values are the float32 maximum."""
        self._read_props()
        values = {}
        for name in JOINT_PROPERTIES:
            key, component = _PROPERTY_FIELDS[name]
            host = self._props_host[key]
            host = host if component is None else np.ascontiguousarray(host[..., component])
            values[name] = host
        if self._props_out is None:
            self._props_out = JointProperties(
                **{n: wp.array(v, dtype=wp.float32, device=self.device) for n, v in values.items()}
            )
        else:
            for name, host in values.items():
                getattr(self._props_out, name).assign(host)
        return self._props_out

    # -- writes --------------------------------------------------------------------------------------------------
    def write_root_pose(self, pose: wp.array, env_ids: wp.array | None = None) -> None:
        pose = self._check(pose, "write_root_pose: pose", (self.num_envs, 7))
        indices, host = self._env_ids(env_ids)
        self._write("root_pose", pose, indices, host)
        self._update_kinematic()

    def write_root_velocity(self, velocity: wp.array, env_ids: wp.array | None = None) -> None:
        velocity = self._check(velocity, "write_root_velocity: velocity", (self.num_envs, 6))
        indices, host = self._env_ids(env_ids)
        self._write("root_velocity", velocity, indices, host)
        self._update_kinematic()

    def write_joint_state(self, position: wp.array, velocity: wp.array, env_ids: wp.array | None = None) -> None:
        shape = (self.num_envs, self.num_joints)
        position = self._check(position, "write_joint_state: position", shape)
        velocity = self._check(velocity, "write_joint_state: velocity", shape)
        indices, host = self._env_ids(env_ids)
        self._write("joint_pos", position, indices, host)
        self._write("joint_vel", velocity, indices, host)
        self._update_kinematic()

    def set_joint_position_target(self, target: wp.array, env_ids: wp.array | None = None) -> None:
        target = self._check(target, "set_joint_position_target: target", (self.num_envs, self.num_joints))
        indices, host = self._env_ids(env_ids)
        self._write("joint_pos_target", target, indices, host)

    def set_joint_velocity_target(self, target: wp.array, env_ids: wp.array | None = None) -> None:
        target = self._check(target, "set_joint_velocity_target: target", (self.num_envs, self.num_joints))
        indices, host = self._env_ids(env_ids)
        self._write("joint_vel_target", target, indices, host)

    def set_joint_effort_target(self, effort: wp.array, env_ids: wp.array | None = None) -> None:
        """Joint actuation efforts (N·m or N); PhysX keeps applying them every step until they are rewritten."""
        effort = self._check(effort, "set_joint_effort_target: effort", (self.num_envs, self.num_joints))
        indices, host = self._env_ids(env_ids)
        self._write("joint_effort", effort, indices, host)

    def write_joint_properties(self, env_ids: wp.array | None = None, **values: wp.array) -> None:
        """Set some of :data:`~transfer.backends.base.JOINT_PROPERTIES`, SI units as :meth:`joint_properties`.

        Each value is ``(num_envs, num_joints)`` float32; only the rows in ``env_ids`` are applied.
        ``position_limit_*``: PhysX refuses to make a free (unlimited) axis limited once it is simulated.
        """
        unknown = sorted(set(values) - set(JOINT_PROPERTIES))
        if unknown:
            raise TypeError(
                f"PhysxBackend write_joint_properties: unknown properties {unknown}; expected some of {list(JOINT_PROPERTIES)}"
            )
        shape = (self.num_envs, self.num_joints)
        checked = {name: self._check(v, f"write_joint_properties: {name}", shape) for name, v in values.items()}
        _, host_ids = self._env_ids(env_ids)
        if host_ids is not None and host_ids.size == 0:
            return
        indices = None if host_ids is None else np.ascontiguousarray(host_ids, dtype=np.int32)
        touched: dict[str, np.ndarray] = {}
        for name, value in checked.items():
            key, component = _PROPERTY_FIELDS[name]
            if component is None:
                touched[key] = value.numpy()
            else:
                if key not in touched:
                    self._engine.bindings[key].read(self._props_host[key])
                    touched[key] = self._props_host[key].copy()
                touched[key][..., component] = value.numpy()
        for key, host in touched.items():
            self._engine.bindings[key].write(np.ascontiguousarray(host, dtype=np.float32), indices=indices)

    # -- stepping ------------------------------------------------------------------------------------------------
    def step(self, dt: float | None = None) -> None:
        """Advance by ``dt`` seconds (default :attr:`dt`)."""
        dt = self.dt if dt is None else dt
        if not (dt > 0 and math.isfinite(dt)):
            raise ValueError(f"PhysxBackend step: dt must be a positive number of seconds, got {dt!r}")
        self._px.step_sync(float(dt))

    def reset(self, env_ids: wp.array | None = None) -> None:
        """Restore :attr:`default_root_pose`, :attr:`default_root_velocity`, :attr:`default_joint_pos` and zero
        joint velocities in ``env_ids`` (all if ``None``), then recompute link poses. Drive targets and efforts
        are left as they are."""
        indices, host = self._env_ids(env_ids)
        self._write("root_pose", self.default_root_pose, indices, host)
        self._write("root_velocity", self.default_root_velocity, indices, host)
        self._write("joint_pos", self.default_joint_pos, indices, host)
        self._write("joint_vel", self._zero_joint_vel, indices, host)
        self._update_kinematic()

    def _update_kinematic(self) -> None:
        # Link poses and velocities follow the written root/joint state without a step.
        self._px.update_articulations_kinematic()

    def close(self) -> None:
        """Destroy the bindings, detach and destroy the stage and the PhysX instance. Idempotent."""
        finalizer = getattr(self, "_finalizer", None)
        if finalizer is not None:
            finalizer()

    def __enter__(self) -> PhysxBackend:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return (
            f"PhysxBackend({self.usd_path!r}, num_envs={self.num_envs}, device={self.device!r}, root={self.root!r}, "
            f"joints={self.num_joints}, bodies={self.num_bodies}, fixed_base={self.fixed_base})"
        )
