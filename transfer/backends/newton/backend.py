"""``NewtonBackend``: one USD asset cloned into ``num_envs`` Newton worlds, behind the :class:`Backend` contract.

The asset is imported once into a sub-builder (:func:`~transfer.backends.newton.import_usd`), drives are
configured there, and ``ModelBuilder.replicate`` clones it into one world per environment. A
:class:`~transfer.backends.newton.MechanismView` does every read and write; this class adds the solver, the
double-buffered states and the contract's float32 layouts:

- poses ``(E, 7)`` / ``(E, B, 7)``: ``x, y, z, qx, qy, qz, qw`` of the link frame. Newton's ``wp.transform`` is
  already ``p`` then ``q`` in xyzw order, so these are zero-copy float32 views of the view's transform buffers.
- velocities ``(E, 6)`` / ``(E, B, 6)``: COM linear then angular velocity, world frame. Newton 1.8's
  ``State.body_qd`` uses exactly this convention (checked against ``eval_fk`` in the tests), so no conversion.

Stepping: the public layer (:func:`transfer.open_articulation`) applies commands, steps and republishes state in
one call (:attr:`publish_on_step`), recorded as one CUDA graph where :attr:`supports_cuda_graph` (a CUDA device and
any solver but ``"mujoco_cpu"``, whose MuJoCo C engine copies through the host).

Solvers: ``"mujoco_cpu"`` (MuJoCo C; simulates only world 0 of a multi-world model, so ``num_envs`` must be 1),
``"mujoco_warp"`` (MuJoCo-Warp; any ``num_envs``, ~50 s first kernel compile on the CPU), ``"xpbd"`` and
``"semi_implicit"`` (maximal coordinates; Newton's collision pipeline runs each step and joint coordinates are
recovered with ``eval_ik`` after each step).
"""

from __future__ import annotations

import fnmatch
import logging
import os
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import newton
import numpy as np
import warp as wp

from transfer.backends.base import JOINT_PROPERTIES, UNLIMITED, Backend, EngineOrder, JointProperties
from transfer.backends.newton import _kernels as nk
from transfer.backends.newton._layout import as_rows, components
from transfer.backends.newton._scene import _with_base, _with_full_hulls, _with_self_collisions
from transfer.backends.newton.importer import ImportSummary, RootlessPolicy, import_usd
from transfer.backends.newton.mechanism import MechanismView
from transfer.backends.newton.probe import engine_orders as _engine_orders
from transfer.backends.newton.settings import MUJOCO_FAMILY, SOLVERS
from transfer.backends.scene import DEFAULT_GROUND, SceneDescription
from transfer.ordering import OrderingConvention, dof_joint_name, dof_names

__all__ = ["SOLVERS", "NewtonBackend"]

_MAXIMAL = ("xpbd", "semi_implicit")
_LIMITS = ("position_limit_lower", "position_limit_upper")
#: "Unlimited" as the contract reports it (the float32 maximum, as PhysX does); Newton stores ``newton.MAXVAL``.

Gain = float | Mapping[str, float] | None


class NewtonBackend(Backend):
    """One articulation in ``num_envs`` Newton worlds, in Newton's (MuJoCo-Warp) joint and body order.

    Args:
        usd_path: The USD asset.
        num_envs: Number of worlds (one copy of the asset each).
        device: Warp device (``"cpu"``, ``"cuda:0"``).
        root: The articulation to drive, by its label (the prim carrying ``PhysicsArticulationRootAPI``) when the
            asset holds several.
        solver: One of :data:`SOLVERS`, or ``"auto"`` (default): ``mujoco_cpu`` (the MuJoCo C engine, fastest on a
            CPU) for one environment, ``mujoco_warp`` for several (MuJoCo C simulates only world 0). The choice is
            logged on the ``transfer`` logger and kept in :attr:`solver_name`.
        drive_stiffness, drive_damping: Position-drive gains (N·m/rad or N/m; N·m·s/rad or N·s/m) for every DoF, or
            a mapping from DoF name (globs allowed) to gain. ``None``: as authored. Every DoF is position-controlled
            (``JointTargetMode.POSITION``, also where USD authored no drive or zero gains, which Newton imports as
            EFFORT mode): gains written later with :meth:`write_joint_properties` act on every joint.
        armature: Armature for every DoF (or a mapping by DoF name), ``None``: as authored.
        rootless_articulation_policy: ``"infer_tree"`` to give a rootless asset an articulation tree (see
            :func:`~transfer.backends.newton.import_usd`). With ``"none"`` a rootless asset is refused.
        base: Root policy of the :class:`MechanismView` (``"auto"`` by default).
        ground_plane: Add a ground plane (global, shared by all worlds; friction 1 unless ``scene`` says otherwise).
        initial_root_pose: ``(x, y, z, qx, qy, qz, qw)`` of the root link at start and after reset (floating base).
        solver_options: Keyword arguments for the solver constructor.
        import_options: Keyword arguments for ``ModelBuilder.add_usd``. ``mesh_maxhullvert`` defaults to -1: mesh
            colliders keep their whole convex hull, as MuJoCo builds an MJCF mesh (Newton's own default, 64, makes a
            partial hull; see :data:`~transfer.backends.newton._scene.FULL_HULL`).
        joint_order, body_order: DoF and link names in the order every array of this backend should follow (its
            :attr:`joint_names` / :attr:`body_names` then list them so): reads and writes go through the views in
            that order, one launch each. ``None``: Newton's own order. A DoF order that splits a multi-DoF joint's
            DoFs apart cannot be expressed per joint and keeps Newton's order (the public layer then permutes).
        scene: The world around the robot (:class:`~transfer.backends.scene.SceneDescription`): a ground plane
            (MuJoCo has no friction combine mode: a contact takes the larger of the two geoms' frictions, the
            ground's being the material's ``dynamic_friction``), the spawn height, gravity, self-collisions
            (``None``: what the asset authors in ``physxArticulation:enabledSelfCollisions``, as PhysX reads it;
            Newton's importer takes it as ``enable_self_collisions``), the base kind (``add_usd``'s ``floating``,
            where it differs from what Newton builds; a fixed base spawns by moving the asset), the solver and its
            options. The explicit arguments above win where both are given.

    Raises:
        ValueError: ``solver="mujoco_cpu"`` with ``num_envs > 1``, unknown solver, an asset without (or with
            several) articulations, ball/free joints among the DoF joints.
    """

    name: ClassVar[str] = "newton"
    native_convention: ClassVar[OrderingConvention] = OrderingConvention.MJWARP
    supports_partial_reset: ClassVar[bool] = True
    supports_body_velocities: ClassVar[bool] = True
    publish_on_step: ClassVar[bool] = True
    orders_natively: ClassVar[bool] = True
    supports_body_mass: ClassVar[bool] = True

    @classmethod
    def engine_orders(cls, asset: str | os.PathLike, root: str | None = None) -> list[EngineOrder]:
        """Newton's own order of every articulation of ``asset`` (:func:`transfer.backends.newton.probe.engine_orders`)."""
        return _engine_orders(asset, root)

    def __init__(
        self,
        usd_path: str | os.PathLike,
        num_envs: int = 1,
        device: str = "cpu",
        root: str | None = None,
        solver: str = "auto",
        drive_stiffness: Gain = None,
        drive_damping: Gain = None,
        armature: Gain = None,
        *,
        rootless_articulation_policy: RootlessPolicy = "none",
        base: str = "auto",
        ground_plane: bool = False,
        initial_root_pose: tuple[float, ...] | None = None,
        solver_options: Mapping[str, Any] | None = None,
        import_options: Mapping[str, Any] | None = None,
        joint_order: Sequence[str] | None = None,
        body_order: Sequence[str] | None = None,
        scene: SceneDescription | None = None,
    ) -> None:
        world = scene or SceneDescription()
        settings = world.settings_for(self.name)
        if solver == "auto":  # a scene naming MuJoCo C or MuJoCo-Warp leaves the pick to the world count
            solver = settings.get("solver", "auto")
            solver = "auto" if solver in MUJOCO_FAMILY else solver
        if solver_options is None and settings.get("solver_options"):
            solver_options = dict(settings["solver_options"])
        ground_plane = ground_plane or world.ground is not None
        if "mesh_maxhullvert" in settings:  # the task's newton.mesh_maxhullvert
            import_options = {"mesh_maxhullvert": settings["mesh_maxhullvert"], **(import_options or {})}
        import_options = _with_full_hulls(_with_self_collisions(import_options, world, usd_path))
        fixed = _with_base(import_options, world, usd_path, root)  # a fixed base spawns by moving the asset
        if initial_root_pose is None and world.spawn_height is not None and not fixed:
            initial_root_pose = (0.0, 0.0, world.spawn_height, 0.0, 0.0, 0.0, 1.0)
        solver = _checked_solver(solver, num_envs, device)
        self.device = str(wp.get_device(device))
        self.num_envs = int(num_envs)
        self.solver_name = solver
        self.usd_path = str(usd_path)

        sub = self._import_asset(usd_path, root, rootless_articulation_policy, import_options)
        self._configure(sub, self.articulation_label, drive_stiffness, drive_damping, armature, initial_root_pose)
        self._create_at(sub, self.articulation_label, world.joint_positions)
        self.model = self._replicate(sub, world, ground_plane)
        self.view = MechanismView(
            self.model, self.articulation_label, base=base, joint_order=_joint_order(joint_order), link_order=body_order
        )
        _refuse_multi_coordinate_joints(self.view)
        self._start_simulation(solver, solver_options)
        self.gravity_dir: tuple[float, float, float] = _gravity_direction(self.model)
        """Unit gravity direction of the simulated scene, world frame."""

        # -- contract attributes ----------------------------------------------------------------------------
        self.joint_names = tuple(self.view.joint_dof_names)
        self.body_names = tuple(self.view.link_names)
        self.fixed_base = self.view.is_fixed_base
        self._allocate_reset_state()
        self._allocate_read_buffers()

    # -- construction helpers -------------------------------------------------------------------------------
    def _import_asset(self, usd_path: Any, root: str | None, policy: RootlessPolicy, options: dict[str, Any]) -> Any:
        """The asset imported once into a sub-builder; sets :attr:`import_summary` and :attr:`articulation_label`."""
        sub, summary = import_usd(usd_path, policy, builder=_new_builder(self.solver_name), **options)
        self.import_summary: ImportSummary = summary
        self.articulation_label = self._pick_articulation(sub, root, policy)
        return sub

    def _replicate(self, sub: Any, world: SceneDescription, ground_plane: bool) -> Any:
        """The finalized model: ``sub`` cloned into :attr:`num_envs` worlds, the ground plane, the scene's friction
        scale and gravity."""
        scene = _new_builder(self.solver_name)
        scene.replicate(sub, self.num_envs)
        if ground_plane:
            material = world.ground or DEFAULT_GROUND
            cfg = newton.ModelBuilder.ShapeConfig(mu=material.dynamic_friction, restitution=material.restitution)
            scene.add_ground_plane(height=world.ground_height, cfg=cfg)
        model = scene.finalize(device=self.device)
        _scale_friction(model, world.friction_scale)
        if world.gravity is not None:
            model.set_gravity(world.gravity)
        return model

    def _start_simulation(self, solver: str, solver_options: Mapping[str, Any] | None) -> None:
        """The solver, the double-buffered states (forward kinematics evaluated), the control and, for the
        maximal-coordinate solvers, the collision pipeline and its contacts."""
        self.solver = self._make_solver(solver, dict(solver_options or {}))
        self.supports_cuda_graph = wp.get_device(self.device).is_cuda and solver != "mujoco_cpu"
        # A captured step must keep its state pointers: copy the new state back into state_0 (State.assign) instead
        # of swapping the two Python references, which a replayed graph cannot follow. Swapping is free, so
        # uncaptured devices keep it.
        self._fixed_states = self.supports_cuda_graph
        self.state_0 = self.model.state()
        self.state_1 = self.model.state()
        self.control = self.model.control()
        newton.eval_fk(self.model, self.model.joint_q, self.model.joint_qd, self.state_0)
        self._pipeline = None
        self.contacts = None
        if solver in _MAXIMAL and self.model.shape_count:
            self._pipeline = newton.CollisionPipeline(self.model)
            self.contacts = self._pipeline.contacts()

    def _allocate_reset_state(self) -> None:
        """The joint and root state :meth:`reset` restores (the asset's, read once), and the world mask it uses."""
        v, E, J, d = self.view, self.num_envs, len(self.joint_names), self.device
        self.default_joint_pos = wp.zeros((E, J), dtype=wp.float32, device=d)
        self.default_joint_vel = wp.zeros((E, J), dtype=wp.float32, device=d)
        """``(E, J)`` joint velocities :meth:`reset` restores (the asset's, normally zero)."""
        v.joints.get_attribute("joint_q", self.model, out=self.default_joint_pos)
        v.joints.get_attribute("joint_qd", self.model, out=self.default_joint_vel)
        self._initial_root_q = wp.zeros(E, dtype=wp.transform, device=d)
        self._initial_root_qd = wp.zeros(E, dtype=wp.spatial_vector, device=d)
        if v.supports_root_state:
            wp.copy(self._initial_root_q, v.get_root_transforms(self.state_0))
            wp.copy(self._initial_root_qd, v.get_root_velocities(self.state_0))
        self.default_root_pose: wp.array = components(self._initial_root_q)
        """``(E, 7)`` root pose :meth:`reset` restores (edit in place to change the reset state)."""
        self.default_root_velocity: wp.array = components(self._initial_root_qd)
        """``(E, 6)`` root velocity :meth:`reset` restores."""
        self._world_ids = wp.array(np.asarray([max(w, 0) for w in v.worlds], dtype=np.int32), dtype=wp.int32, device=d)
        self._world_mask = wp.zeros(self.model.world_count + 1, dtype=wp.bool, device=d)

    def _allocate_read_buffers(self) -> None:
        """The buffers the reads fill, and their float32 component views that the reads return."""
        E, J, B, d = self.num_envs, len(self.joint_names), len(self.body_names), self.device
        self._jq = wp.zeros((E, J), dtype=wp.float32, device=d)
        self._jqd = wp.zeros((E, J), dtype=wp.float32, device=d)
        self._root_q = wp.zeros(E, dtype=wp.transform, device=d)
        self._root_qd = wp.zeros(E, dtype=wp.spatial_vector, device=d)
        self._body_q = wp.zeros((E, B), dtype=wp.transform, device=d)
        self._body_qd = wp.zeros((E, B), dtype=wp.spatial_vector, device=d)
        self._root_q_f = components(self._root_q)
        self._root_qd_f = components(self._root_qd)
        self._body_q_f = components(self._body_q)
        self._body_qd_f = components(self._body_qd)

    @staticmethod
    def _pick_articulation(sub: Any, root: str | None, policy: str) -> str:
        labels = list(sub.articulation_label)
        if root is not None:
            if root not in labels:
                raise ValueError(f"NewtonBackend(root={root!r}): no articulation with that root; found {labels}.")
            return root
        if not labels:
            hint = (
                "pass rootless_articulation_policy='infer_tree' to infer one"
                if policy == "none"
                else "the asset has no jointed bodies to build one from"
            )
            raise ValueError(f"NewtonBackend: the asset has no articulation root; {hint}.")
        if len(labels) > 1:
            raise ValueError(
                f"NewtonBackend: the asset holds {len(labels)} articulations {labels}; pass root= with one."
            )
        return labels[0]

    @staticmethod
    def _configure(sub: Any, label: str, stiffness: Gain, damping: Gain, armature: Gain, root_pose: Any) -> None:
        a = list(sub.articulation_label).index(label)
        start, end = sub.articulation_start[a], sub.articulation_end[a]
        qd_start = [*sub.joint_qd_start, sub.joint_dof_count]
        dofs: list[tuple[int, str]] = []
        for j in range(start, end):
            if int(sub.joint_type[j]) in (int(newton.JointType.FREE), int(newton.JointType.DISTANCE)):
                continue
            n = qd_start[j + 1] - qd_start[j]
            name = sub.joint_label[j].rsplit("/", 1)[-1]
            dofs.extend((qd_start[j] + k, dof) for k, dof in enumerate(dof_names(name, n)))

        def value(gain: Gain, dof_name: str) -> float | None:
            if gain is None or isinstance(gain, int | float):
                return gain
            hits = [v for k, v in gain.items() if fnmatch.fnmatchcase(dof_name, k)]
            return float(hits[0]) if hits else None

        if isinstance(stiffness, Mapping) or isinstance(damping, Mapping) or isinstance(armature, Mapping):
            known = [n for _, n in dofs]
            for what, gain in (("drive_stiffness", stiffness), ("drive_damping", damping), ("armature", armature)):
                if isinstance(gain, Mapping):
                    unknown = [k for k in gain if not any(fnmatch.fnmatchcase(n, k) for n in known)]
                    if unknown:
                        raise ValueError(f"NewtonBackend({what}=...): {unknown} match no DoF; DoFs are {known}.")
        for dof, dof_name in dofs:
            ke, kd, arm = value(stiffness, dof_name), value(damping, dof_name), value(armature, dof_name)
            if ke is not None:
                sub.joint_target_ke[dof] = float(ke)
            if kd is not None:
                sub.joint_target_kd[dof] = float(kd)
            # Every DoF is position-controlled, whatever the asset authored: a USD drive with zero gains (or no
            # drive) imports as EFFORT mode, for which SolverMuJoCo builds no actuator, so gains written later would
            # never act. With zero gains a POSITION actuator applies no force, and joint_f efforts still add up.
            sub.joint_target_mode[dof] = int(newton.JointTargetMode.POSITION)
            if arm is not None:
                sub.joint_armature[dof] = float(arm)
        if root_pose is not None:
            root_joint = start
            if int(sub.joint_type[root_joint]) != int(newton.JointType.FREE):
                raise ValueError(
                    f"NewtonBackend(initial_root_pose=...): {label} is not floating (its root joint "
                    f"{sub.joint_label[root_joint]!r} is not FREE); move a fixed base with write_root_pose instead."
                )
            pose = [float(x) for x in root_pose]
            if len(pose) != 7:
                raise ValueError(f"initial_root_pose: expected (x, y, z, qx, qy, qz, qw), got {root_pose!r}")
            q0 = sub.joint_q_start[root_joint]
            for k in range(7):
                sub.joint_q[q0 + k] = pose[k]

    @staticmethod
    def _create_at(sub: Any, label: str, positions: Mapping[str, float]) -> None:
        """The articulation's single-DoF joints start at ``positions`` (by name; the scene's
        :attr:`~transfer.backends.scene.SceneDescription.joint_positions`), not at the authored pose."""
        if not positions:
            return
        a = list(sub.articulation_label).index(label)
        single = (int(newton.JointType.REVOLUTE), int(newton.JointType.PRISMATIC))
        for j in range(sub.articulation_start[a], sub.articulation_end[a]):
            name = sub.joint_label[j].rsplit("/", 1)[-1]
            if name in positions and int(sub.joint_type[j]) in single:
                sub.joint_q[sub.joint_q_start[j]] = float(positions[name])

    def _make_solver(self, solver: str, options: dict[str, Any]) -> Any:
        S = newton.solvers
        cls = {"mujoco_cpu": S.SolverMuJoCo, "mujoco_warp": S.SolverMuJoCo, "xpbd": S.SolverXPBD}.get(
            solver, S.SolverSemiImplicit
        )
        import inspect

        known = [p for p in inspect.signature(cls.__init__).parameters if p not in ("self", "model")]
        unknown = sorted(set(options) - set(known))
        if unknown:  # named before the solver is built (its constructor's TypeError names no setting)
            raise ValueError(
                f"newton.solver_options: {unknown} are not options of {cls.__name__} (solver {solver}); "
                f"its options: {known}"
            )
        if solver == "mujoco_cpu":
            return cls(self.model, use_mujoco_cpu=True, **options)
        return cls(self.model, **options)

    # -- reads ----------------------------------------------------------------------------------------------
    def root_pose(self) -> wp.array:
        self.view.get_root_transforms(self.state_0, out=self._root_q)
        return self._root_q_f

    def root_velocity(self) -> wp.array:
        self.view.get_root_velocities(self.state_0, out=self._root_qd)
        return self._root_qd_f

    def joint_positions(self) -> wp.array:
        return self.view.joints.get_attribute("joint_q", self.state_0, out=self._jq)

    def joint_velocities(self) -> wp.array:
        return self.view.joints.get_attribute("joint_qd", self.state_0, out=self._jqd)

    def body_poses(self) -> wp.array:
        self.view.links.get_attribute("body_q", self.state_0, out=self._body_q)
        return self._body_q_f

    def body_velocities(self) -> wp.array:
        self.view.links.get_attribute("body_qd", self.state_0, out=self._body_qd)
        return self._body_qd_f

    def joint_properties(self) -> JointProperties:
        """Per-DoF properties; unlimited position limits (``±newton.MAXVAL`` in Newton) read as ``±3.4028235e38``."""
        values = {}
        for name in JOINT_PROPERTIES:
            out = wp.clone(self.view.joints.get_property(name))
            if name in _LIMITS:
                self._swap_unlimited(out, float(newton.MAXVAL), UNLIMITED, out)
            values[name] = out
        return JointProperties(**values)

    def body_masses(self) -> wp.array:
        """``(num_envs, num_bodies)``: link masses (kg) of the model."""
        return self.view.links.get_masses()

    def root_com_offset(self) -> np.ndarray:
        """The root link's centre of mass in its frame: Newton's ``body_com`` of body 0 (the root link)."""
        coms = self.view.links.get_local_coms().numpy().reshape(self.num_envs, self.num_bodies, 3)
        return coms[:, 0].astype(np.float64)

    def body_inertias(self) -> wp.array:
        """``(num_envs, num_bodies, 9)``: link inertia tensors (kg·m²) about the centre of mass, in the link frame."""
        inertia = self.view.links.get_inertias().numpy().reshape(self.num_envs, self.num_bodies, 9)
        return wp.array(inertia, dtype=wp.float32, device=self.device)

    def write_body_masses(self, masses: wp.array, env_ids: wp.array | None = None) -> None:
        """Set link masses (kg) of the rows in ``env_ids`` (and their inverses); each link's inertia scales with its
        mass; the solver is told."""
        links = self.view.links
        new = as_rows(masses, wp.float32, (self.num_envs, self.num_bodies), "write_body_masses: masses", self.device)
        rows = self.view.env_ids(env_ids).numpy()
        values = new.numpy()
        if not (np.isfinite(values[rows]).all() and (values[rows] > 0).all()):
            raise ValueError(f"NewtonBackend write_body_masses: masses must be finite and > 0 kg, got {values[rows]}")
        old = links.get_masses().numpy()
        ratio = np.divide(values, old, out=np.ones_like(values), where=old > 0)
        inertia = links.get_inertias().numpy() * ratio[..., None, None]
        links.set_masses(new, env_ids)
        links.set_inertias(wp.array(inertia, dtype=wp.mat33, device=self.device), env_ids)
        self.solver.notify_model_changed(newton.ModelFlags.BODY_INERTIAL_PROPERTIES)

    def _swap_unlimited(self, src: wp.array, threshold: float, value: float, dst: wp.array) -> None:
        if src.size:
            wp.launch(
                nk.swap_unlimited, dim=src.shape, inputs=[src, threshold, value], outputs=[dst], device=self.device
            )

    # -- writes ---------------------------------------------------------------------------------------------
    def write_root_pose(self, pose: wp.array, env_ids: wp.array | None = None) -> None:
        self.view.set_root_transforms(self.state_0, pose, env_ids)
        if self.view.base == "fixed":
            self.solver.notify_model_changed(newton.ModelFlags.JOINT_PROPERTIES)

    def write_root_velocity(self, velocity: wp.array, env_ids: wp.array | None = None) -> None:
        self.view.set_root_velocities(self.state_0, velocity, env_ids)

    def write_joint_state(self, position: wp.array, velocity: wp.array, env_ids: wp.array | None = None) -> None:
        self.view.set_dof_state(self.state_0, position, velocity, env_ids)

    def set_joint_position_target(self, target: wp.array, env_ids: wp.array | None = None) -> None:
        self.view.set_dof_position_targets(self.control, target, env_ids)

    def set_joint_velocity_target(self, target: wp.array, env_ids: wp.array | None = None) -> None:
        self.view.set_dof_velocity_targets(self.control, target, env_ids)

    def set_joint_effort_target(self, effort: wp.array, env_ids: wp.array | None = None) -> None:
        self.view.set_dof_efforts(self.control, effort, env_ids)

    def write_joint_properties(self, env_ids: wp.array | None = None, **values: wp.array) -> None:
        unknown = sorted(set(values) - set(JOINT_PROPERTIES))
        if unknown:
            raise KeyError(f"write_joint_properties: unknown properties {unknown}; known: {list(JOINT_PROPERTIES)}")
        for name, array in values.items():
            if name in _LIMITS:  # the contract's "unlimited" (float32 max, or inf) back to Newton's MAXVAL
                staged = wp.empty((self.num_envs, self.num_joints), dtype=wp.float32, device=self.device)
                src = as_rows(array, wp.float32, staged.shape, name, self.device)
                self._swap_unlimited(src, float(newton.MAXVAL), float(newton.MAXVAL), staged)
                array = staged
            self.view.joints.set_property(name, array, env_ids)
        if values:
            self.solver.notify_model_changed(newton.ModelFlags.JOINT_DOF_PROPERTIES)

    # -- stepping -------------------------------------------------------------------------------------------
    def step(self, dt: float) -> None:
        if self._pipeline is not None:
            self._pipeline.collide(self.state_0, self.contacts)
        self.solver.step(self.state_0, self.state_1, self.control, self.contacts, dt)
        if self._fixed_states:
            self.state_0.assign(self.state_1)
        else:
            self.state_0, self.state_1 = self.state_1, self.state_0
        if self.solver_name in _MAXIMAL and self.view.supports_fk:
            self.view.eval_ik(self.state_0)

    def reset(self, env_ids: wp.array | None = None) -> None:
        envs = self.view.env_ids(env_ids)
        if envs.shape[0] == 0:
            return
        self._world_mask.zero_()
        wp.launch(
            nk.envs_to_articulation_mask,
            dim=envs.shape[0],
            inputs=[envs, self._world_ids],
            outputs=[self._world_mask],
            device=self.device,
        )
        self.solver.reset(self.state_0, world_mask=self._world_mask)
        self.view.set_dof_state(self.state_0, self.default_joint_pos, self.default_joint_vel, envs, fk=False)
        if self.view.supports_root_state:
            self.view.set_root_transforms(self.state_0, self._initial_root_q, envs)
            self.view.set_root_velocities(self.state_0, self._initial_root_qd, envs)
            if self.view.base == "fixed":
                self.solver.notify_model_changed(newton.ModelFlags.JOINT_PROPERTIES)
        if self.view.supports_fk:
            self.view.eval_fk(self.state_0, envs)

    def close(self) -> None:
        self.solver = None
        self._pipeline = None

    def __repr__(self) -> str:
        return (
            f"NewtonBackend({self.usd_path!r}, num_envs={self.num_envs}, solver={self.solver_name!r}, "
            f"device={self.device!r}, joints={len(self.joint_names)}, bodies={len(self.body_names)})"
        )


def _checked_solver(solver: str, num_envs: int, device: str) -> str:
    """The solver to build: ``"auto"`` resolved (and logged), then checked against :data:`SOLVERS` and ``num_envs``."""
    if solver == "auto":
        solver = "mujoco_cpu" if num_envs == 1 and not str(device).startswith("cuda") else "mujoco_warp"
        logging.getLogger("transfer").info(
            "NewtonBackend: solver %s for %d environment(s) on %s", solver, num_envs, device
        )
    if solver not in SOLVERS:
        raise ValueError(f"NewtonBackend(solver={solver!r}): expected 'auto' or one of {list(SOLVERS)}")
    if num_envs < 1:
        raise ValueError(f"NewtonBackend(num_envs={num_envs}): need at least one environment")
    if solver == "mujoco_cpu" and num_envs > 1:
        raise ValueError(
            f"NewtonBackend(solver='mujoco_cpu', num_envs={num_envs}): SolverMuJoCo(use_mujoco_cpu=True) simulates "
            "only world 0 of a multi-world model (the other worlds would stay frozen). Use solver='mujoco_warp' "
            "(MuJoCo-Warp, also on the CPU) for several environments, or num_envs=1."
        )
    return solver


def _new_builder(solver: str) -> Any:
    """An empty ``ModelBuilder``, with ``SolverMuJoCo``'s custom attributes registered for the MuJoCo solvers."""
    builder = newton.ModelBuilder()
    if solver.startswith("mujoco"):
        newton.solvers.SolverMuJoCo.register_custom_attributes(builder)
    return builder


def _refuse_multi_coordinate_joints(view: MechanismView) -> None:
    """Refuse ball or free joints inside the tree: the backend contract has one column per DoF."""
    joints = view.joints
    if not joints.coords_match_dofs:
        odd = [
            n
            for n, c, d in zip(joints.joint_names, joints.joint_coord_counts, joints.joint_dof_counts, strict=True)
            if c != d
        ]
        raise ValueError(
            f"NewtonBackend: joints {odd} have more coordinates than DoFs (ball or free joints inside the tree); the "
            "backend contract has one column per DoF. Use MechanismView directly for such assets."
        )


def _gravity_direction(model: Any) -> tuple[float, float, float]:
    """Unit gravity direction of ``model`` (world 0), world frame; ``(0, 0, -1)`` without gravity."""
    g = model.gravity.numpy().reshape(-1, 3)[0]
    norm = float(np.linalg.norm(g))
    return tuple(float(c) / norm for c in g) if norm > 0 else (0.0, 0.0, -1.0)


def _joint_order(dof_order: Sequence[str] | None) -> list[str] | None:
    """The joint order behind a DoF order (``name:k`` DoFs of one joint together, ``k`` ascending), or ``None``."""
    if dof_order is None:
        return None
    joints: list[str] = []
    counts: list[int] = []
    for dof in dof_order:
        joint = dof_joint_name(dof)
        if joints and joints[-1] == joint:
            counts[-1] += 1
        else:
            joints.append(joint)
            counts.append(1)
    # A split or shuffled multi-DoF joint does not rebuild the same DoF names.
    rebuilt = [d for joint, n in zip(joints, counts, strict=True) for d in dof_names(joint, n)]
    return joints if rebuilt == list(dof_order) and len(set(joints)) == len(joints) else None


def _scale_friction(model: Any, scale: float) -> None:
    """Every shape's sliding friction times ``scale``: the model holds only the robots' shapes and the ground, and
    MuJoCo takes the larger of two frictions, so each contact's friction scales by it."""
    if scale != 1.0:
        model.shape_material_mu.assign(model.shape_material_mu.numpy() * scale)
