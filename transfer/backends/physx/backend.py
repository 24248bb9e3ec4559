"""``PhysxBackend``: the :class:`~transfer.backends.base.Backend` contract over ovphysx tensor bindings.

The package docstring (:mod:`transfer.backends.physx`) says what the backend does with the asset and which units
it reports. The engine is started through :mod:`~transfer.backends.physx.engine`; the in-memory scene comes from
:func:`~transfer.backends.physx.scene.compose_scene`.

ovphysx, ovstage and pxr are imported lazily: importing this module loads none of them.
"""

from __future__ import annotations

import math
import os
import weakref
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np
import warp as wp

from transfer.backends.base import JOINT_PROPERTIES, Backend, EngineOrder, JointProperties
from transfer.backends.physx import contacts, engine
from transfer.backends.physx._bindings import (
    _ON_DEMAND,
    _PROPERTIES,
    _PROPERTY_FIELDS,
    _STATE,
    _checked_arguments,
    _scene_defaults,
)
from transfer.backends.physx.probe import engine_orders
from transfer.backends.physx.scene import DEFAULT_DRIVE_MAX_FORCE, Scene, compose_scene
from transfer.backends.scene import SceneDescription
from transfer.ordering import OrderingConvention

__all__ = ["PhysxBackend"]


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
            to value (DoFs not named keep the asset's gains). They act on every DoF, driven in the asset or not
            (see *Position control* below).
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
        drive_max_force: Max force (N, prismatic) or torque (N·m, revolute; not per degree) of the drives the
            in-memory layer adds to joints that author no ``PhysicsDriveAPI`` (default ``1e6``, Newton's default
            joint effort limit; ``math.inf`` for none). Drives the asset authors keep their own ``maxForce``. Change
            any DoF's limit later with ``write_joint_properties(effort_limit=...)``.
        scene: The world around the robot (:class:`~transfer.backends.scene.SceneDescription`): ground plane and
            material, spawn height, base kind, gravity, self-collisions, solver iterations. The explicit arguments
            above win where both are given. A fixed base roots the articulation at a fixed joint from the world
            (:attr:`root` is then that joint), a floating one at the root link with its joints to the world disabled.

    Position control: PhysX builds no drive for a joint that authors no ``PhysicsDriveAPI``, so such a joint would
    ignore stiffness and damping, written at open or at runtime. The in-memory layer therefore gives every DoF joint
    of the articulation that lacks one (revolute: ``angular``; prismatic: ``linear``; D6: its free rotation axes) a
    force drive with stiffness 0, damping 0 and ``maxForce = drive_max_force``: nothing changes until gains are
    written, and then :meth:`write_joint_properties` (``stiffness``, ``damping``, ``effort_limit`` as the force
    limit) and targets act on every joint, as on the Newton backend. The drives added are listed in
    :attr:`added_drives` and :attr:`scene_notes`. Drives the asset authors are kept as they are. Spherical joints
    stay undriven (ovphysx reads no drive on them; :attr:`scene_notes` names them).

    Raises:
        FileNotFoundError: ``usd_path`` is not a file.
        LookupError: ``root`` names no articulation (the message lists the roots found), or it is ``None``
            and the asset holds several articulations.
        ImportError: ovphysx, ovstage or usd-core is missing (``pip install 'transfer[physx]'``).
        RuntimeError: the engine refused the asset or the device cannot be used.
    """

    name: ClassVar[str] = "physx"
    native_convention: ClassVar[OrderingConvention] = OrderingConvention.PHYSX
    supports_partial_reset: ClassVar[bool] = True
    supports_body_velocities: ClassVar[bool] = True
    supports_body_mass: ClassVar[bool] = True
    enforces_velocity_limit: ClassVar[bool] = True
    supports_contact_forces: ClassVar[bool] = True

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
        drive_max_force: float = DEFAULT_DRIVE_MAX_FORCE,
        scene: SceneDescription | None = None,
    ) -> None:
        path, device, cuda = _checked_arguments(
            usd_path, num_envs, device, num_threads, dt, env_spacing, drive_max_force
        )
        self.usd_path = str(path)
        self.num_envs = num_envs
        self.dt = float(dt)
        self.num_threads = num_threads
        # True when an instance exists already and CPU-only mode cannot be switched on: keep this scene on the
        # CPU by authoring it.
        cpu_scene = engine.settle_mode(device)
        self.device = str(wp.get_device(device)) if cuda else "cpu"
        self._wp_device = wp.get_device(self.device)

        world = scene or SceneDescription()
        if scene is not None:  # the scene description, where the explicit arguments leave a setting open
            ground_height, spawn_offset, solver_position_iterations, solver_velocity_iterations = _scene_defaults(
                world, ground_height, spawn_offset, solver_position_iterations, solver_velocity_iterations
            )
        scene = compose_scene(
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
            float(drive_max_force),
            world=world,
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
        """What the in-memory layer added to the asset (scene, ground plane, drives)."""
        self.added_drives: tuple[str, ...] = tuple(scene.added_drives)
        """``<joint path>:<drive instance>`` of every ``PhysicsDriveAPI`` the in-memory layer added (environment 0's
        paths; clones carry the same)."""
        self.drive_max_force = float(drive_max_force)

        self._start_engine(scene, world, num_threads, cuda)

        # Initial state, as the asset authors it (after loading, before any step).
        self.default_root_pose: wp.array = wp.clone(self.root_pose())
        """``(num_envs, 7)`` root pose :meth:`reset` restores; edit it in place to change the reset state."""
        self.default_root_velocity: wp.array = wp.clone(self.root_velocity())
        """``(num_envs, 6)`` root velocity :meth:`reset` restores."""
        self.default_joint_pos: wp.array = wp.clone(self.joint_positions())
        self._zero_joint_vel = wp.zeros((num_envs, self.num_joints), dtype=wp.float32, device=self.device)
        self._write_drive_gains(drive_stiffness, drive_damping)

    # -- the engine's own order ---------------------------------------------------------------------------------
    @classmethod
    def engine_orders(cls, asset: str | os.PathLike, root: str | None = None) -> list[EngineOrder]:
        """PhysX's own order of every articulation of ``asset`` (:func:`transfer.backends.physx.probe.engine_orders`)."""
        return engine_orders(asset, root)

    # -- setup ---------------------------------------------------------------------------------------------------
    def _start_engine(self, scene: Scene, world: SceneDescription, num_threads: int, cuda: bool) -> None:
        """Start the PhysX instance, load and clone ``scene``, bind the tensors and apply ``world``'s friction
        scale; on any failure close what was started and re-raise."""
        self._engine = engine.Engine()
        self._finalizer = weakref.finalize(self, engine.Engine.close, self._engine)
        self._finalizer.atexit = False  # at interpreter exit ovphysx tears its instances down itself
        try:
            self.num_threads = engine.set_num_threads(num_threads)
            physx = engine.start_physx(self._wp_device.ordinal if cuda else None)
            self._engine.physx = physx
            self._px = physx
            self._load(scene)
            self._bind()
            if world.scales_shape_friction:
                self._scale_shape_friction(world.friction_scale)
        except BaseException:
            self.close()
            raise

    def _write_drive_gains(self, drive_stiffness: Any, drive_damping: Any) -> None:
        """Write the constructor's ``drive_stiffness`` / ``drive_damping`` (those not ``None``) to every environment."""
        gains = {}
        if drive_stiffness is not None:
            gains["stiffness"] = self._per_dof(drive_stiffness, "drive_stiffness", "stiffness")
        if drive_damping is not None:
            gains["damping"] = self._per_dof(drive_damping, "drive_damping", "damping")
        if gains:
            self.write_joint_properties(**gains)

    def _load(self, scene: Scene) -> None:
        px = self._px
        stage = engine.new_stage("physx")
        self._engine.stage = stage
        try:
            engine.attach(px, stage, usda=scene.usda)
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

    # -- mass properties and shape materials (host bindings, created on first use) --------------------------------
    def _host_binding(self, key: str) -> tuple[Any, np.ndarray]:
        """The binding ``key`` of :data:`_ON_DEMAND` (created now if new) and its values, read into a host array."""
        binding = self._engine.bindings.get(key)
        if binding is None:
            import warnings

            from ovphysx.types import TensorType

            with warnings.catch_warnings():
                warnings.simplefilter("ignore", DeprecationWarning)
                binding = self._px.create_tensor_binding(
                    prim_paths=list(self.env_root_paths), tensor_type=getattr(TensorType, _ON_DEMAND[key])
                )
            self._engine.bindings[key] = binding
        host = np.zeros(tuple(binding.shape), dtype=np.float32)
        binding.read(host)
        return binding, host

    def body_masses(self) -> wp.array:
        """``(num_envs, num_bodies)``: link masses (kg), as PhysX holds them."""
        return wp.array(self._host_binding("body_mass")[1], dtype=wp.float32, device=self.device)

    def root_com_offset(self) -> np.ndarray:
        """The root link's centre-of-mass position in its frame, as PhysX holds it (``ARTICULATION_BODY_COM_POSE``
        of body 0, the root link)."""
        return np.asarray(self._host_binding("body_com")[1][:, 0, :3], np.float64)

    def body_inertias(self) -> wp.array:
        """``(num_envs, num_bodies, 9)``: link inertia tensors (kg·m²), row-major, about the centre of mass in PhysX's
        centre-of-mass frame."""
        return wp.array(self._host_binding("body_inertia")[1], dtype=wp.float32, device=self.device)

    def write_body_masses(self, masses: wp.array, env_ids: wp.array | None = None) -> None:
        """Set link masses (kg) of the rows in ``env_ids``; each link's inertia scales with its mass."""
        masses = self._check(masses, "write_body_masses: masses", (self.num_envs, self.num_bodies))
        _, host_ids = self._env_ids(env_ids)
        rows = np.arange(self.num_envs) if host_ids is None else host_ids
        if rows.size == 0:
            return
        new = masses.numpy()
        if not (np.isfinite(new[rows]).all() and (new[rows] > 0).all()):
            raise ValueError(f"PhysxBackend write_body_masses: masses must be finite and > 0 kg, got {new[rows]}")
        mass_binding, old = self._host_binding("body_mass")
        inertia_binding, inertia = self._host_binding("body_inertia")
        ratio = np.ones_like(old)
        ratio[rows] = np.divide(new[rows], old[rows], out=np.ones_like(new[rows]), where=old[rows] > 0)
        old[rows] = new[rows]
        inertia *= ratio[..., None]
        indices = None if host_ids is None else np.ascontiguousarray(host_ids, dtype=np.int32)
        mass_binding.write(np.ascontiguousarray(old), indices=indices)
        inertia_binding.write(np.ascontiguousarray(inertia), indices=indices)

    def shape_frictions(self) -> np.ndarray:
        """``(num_envs, num_shapes, 2)``: static and dynamic friction of the articulation's collision shapes."""
        return self._host_binding("shape_material")[1][..., :2].copy()

    def _scale_shape_friction(self, scale: float) -> None:
        binding, host = self._host_binding("shape_material")
        host[..., :2] *= scale
        binding.write(np.ascontiguousarray(host))

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

    def contact_forces(self, bodies: Any) -> np.ndarray:
        """Each env's net contact force (normal + friction, N, world frame) on the backend bodies ``bodies`` at the
        last step (:mod:`transfer.backends.physx.contacts`; the query opens at the first call)."""
        sensors = self._engine.bindings.get("contacts")
        if sensors is None:
            source = self.clone_source.rstrip("/")
            tail = len(self.root) - len(source)  # env_roots[k] = clone target k + root[len(source):]
            prefixes = [r[: len(r) - tail] for r in self.env_root_paths] if source else [""]
            where = contacts.sensor_map(contacts.link_paths(self._px), prefixes, self.body_names)
            sensors = contacts.ContactSensors(self._px, where, self.num_envs, self.num_bodies)
            self._engine.bindings["contacts"] = sensors  # destroyed with the bindings, before the PhysX instance
        return sensors.read(bodies)

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
