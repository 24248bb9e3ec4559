"""One articulation in public order, the same on every backend: :class:`Articulation`.

The public (user) order is the order of the checkpoint or the config (``joint_ordering``/``body_ordering``);
the backend runs in its own order underneath. One :class:`~transfer.kernels.plan.ReorderPlan` per articulation holds the
gathers (backend -> public: joint positions and velocities, body poses and velocities) and the scatters (public
-> backend: position, velocity and effort targets). Identity orderings (``None``) launch no reorder at all.

When they run depends on the backend (:attr:`~transfer.backends.base.Backend.publish_on_step`):

- Newton: :meth:`Articulation.step` is one call that scatters the commands written since start-up, steps the
  solver and republishes the state in public order; on a CUDA device (``supports_cuda_graph``) that call is one
  CUDA graph, recorded once per ``dt`` and set of commands in use. Reads after a step are plain buffers.
- PhysX (reads and writes are host calls to the tensor bindings): reads gather on first access after a step,
  writes scatter and apply at once.

A backend that can run in the public order itself (:attr:`~transfer.backends.base.Backend.orders_natively`,
Newton's views) is built in it by :func:`~transfer.articulation.open_articulation`: its maps are then the identity
and every read and write is the backend's own single launch.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import warp as wp

from transfer import kernels
from transfer._arrays import host, is_torch
from transfer._patterns import full_matches
from transfer.articulation.data import ArticulationData, StateFeed
from transfer.kernels.plan import ReorderPlan, capture
from transfer.kernels.select import host_indices, index_array
from transfer.name_map import ArticulationNameMap

if TYPE_CHECKING:
    from transfer.actuators import Actuators
    from transfer.backends.base import Backend

__all__ = ["Articulation"]

_COMMANDS = ("position", "velocity", "effort")


@wp.kernel
def _copy_rows_2d(src: wp.array2d(dtype=wp.float32), rows: wp.array(dtype=wp.int32), dst: wp.array2d(dtype=wp.float32)):
    i, j = wp.tid()
    dst[rows[i], j] = src[i, j]


class Articulation:
    """An articulation in public order over any :class:`~transfer.backends.base.Backend`."""

    def __init__(
        self,
        backend: Backend,
        joint_ordering: ArticulationNameMap | None,
        body_ordering: ArticulationNameMap | None,
    ) -> None:
        self._backend = backend
        self.joint_ordering = joint_ordering
        self.body_ordering = body_ordering
        self._closed = False
        self._root_com: np.ndarray | None = None
        self._selectors: dict = {}
        dev = backend.device
        e, d = backend.num_envs, backend.num_joints
        self._stage_pos = wp.zeros((e, d), dtype=wp.float32, device=dev)
        self._stage_vel = wp.zeros((e, d), dtype=wp.float32, device=dev)
        self._root_pose = wp.zeros((e, 7), dtype=wp.float32, device=dev)
        self._root_vel = wp.zeros((e, 6), dtype=wp.float32, device=dev)
        # One plan: state gathered backend -> public, commands scattered public -> backend (identity: aliases).
        plan = self._plan = ReorderPlan(dev)
        self._readers = {
            "joint_pos": backend.joint_positions,
            "joint_vel": backend.joint_velocities,
            "body_pose": backend.body_poses,
        }
        if backend.supports_body_velocities:
            self._readers["body_vel"] = backend.body_velocities
        maps = {"joint_pos": joint_ordering, "joint_vel": joint_ordering}
        self._public = {
            key: plan.add_gather(key, read(), maps.get(key, body_ordering)) for key, read in self._readers.items()
        }
        self._backend_commands = {kind: wp.zeros((e, d), dtype=wp.float32, device=dev) for kind in _COMMANDS}
        self._commands = {
            kind: plan.add_scatter(kind, None, buf, joint_ordering) for kind, buf in self._backend_commands.items()
        }
        self._to_user(backend.default_joint_pos, joint_ordering, out=self._commands["position"])
        self._setters = {
            "position": backend.set_joint_position_target,
            "velocity": backend.set_joint_velocity_target,
            "effort": backend.set_joint_effort_target,
        }
        self._armed: set[str] = set()  # command kinds written at least once (only those are applied)
        self._actuators: Actuators | None = None
        self._feed_forward: wp.array | None = None  # public feed-forward efforts while actuators are installed
        self._steps: dict[tuple[float, tuple[str, ...]], Any] = {}
        self._last_step: Any = None
        self._feed = StateFeed(
            backend,
            self._public,
            refresh=self._refresh,
            to_public_joints=lambda src, out=None: self._to_user(src, joint_ordering, out=out),
            check_open=self._check_open,
            num_bodies=backend.num_bodies,
        )
        self._data = ArticulationData(self._feed)

    @property
    def data(self) -> ArticulationData:
        """The public-order state (see :class:`~transfer.articulation.data.ArticulationData`)."""
        self._check_open()
        return self._data

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError(
                f"This articulation ({type(self._backend).__name__}) is closed: close() released its engine. "
                "Open a new one with transfer.open_articulation(...)."
            )

    # -- names and ids ---------------------------------------------------------------------------------
    backend = property(lambda self: self._backend, doc="The backend underneath (backend order).")
    num_envs = property(lambda self: self._backend.num_envs)
    device = property(lambda self: self._backend.device)
    fixed_base = property(lambda self: self._backend.fixed_base)
    backend_joint_names = property(lambda self: self._backend.joint_names, doc="DoF names in backend order.")
    backend_body_names = property(lambda self: self._backend.body_names, doc="Link names in backend order.")
    num_joints = property(lambda self: self._backend.num_joints)
    num_bodies = property(lambda self: self._backend.num_bodies)

    @property
    def joint_names(self) -> tuple[str, ...]:
        """DoF names in public order."""
        return self.joint_ordering.user_names if self.joint_ordering else self._backend.joint_names

    @property
    def body_names(self) -> tuple[str, ...]:
        """Link names in public order."""
        return self.body_ordering.user_names if self.body_ordering else self._backend.body_names

    def find_joints(self, pattern: str | Sequence[str]) -> tuple[list[int], list[str]]:
        """Public indices and names of joints whose name fully matches a regex (or any of several)."""
        return _find(self.joint_names, pattern, "joint")

    def find_bodies(self, pattern: str | Sequence[str]) -> tuple[list[int], list[str]]:
        """Public indices and names of bodies whose name fully matches a regex (or any of several)."""
        return _find(self.body_names, pattern, "body")

    def map_joint_ids_to_backend(self, ids: Any) -> list[int]:
        """Backend indices of public joint indices (any selector: list, slice, range, mask, array)."""
        return _map_ids(ids, self.joint_ordering, self.num_joints, "joint_ids")

    def map_body_ids_to_backend(self, ids: Any) -> list[int]:
        """Backend indices of public body indices (any selector: list, slice, range, mask, array)."""
        return _map_ids(ids, self.body_ordering, self.num_bodies, "body_ids")

    def contact_forces(self, body_ids: Any) -> np.ndarray | None:
        """``(num_envs, len(body_ids), 3)``: the net contact force (N, world frame) on each public body ``body_ids``
        at the last step, as the engine reports it; ``None`` when it reports none
        (``backend.supports_contact_forces``)."""
        if not self._backend.supports_contact_forces:
            return None
        return self._backend.contact_forces(np.asarray(self.map_body_ids_to_backend(body_ids), np.int64))

    # -- reorder helpers ------------------------------------------------------------------------------
    def _refresh(self, key: str) -> None:
        """Re-read the state ``key`` from the backend and gather it into its public-order buffer."""
        self._readers[key]()
        self._plan.launch(key)

    def _to_user(self, src: wp.array, nmap: ArticulationNameMap | None, out: wp.array | None = None) -> wp.array:
        if nmap is None:
            if out is None:
                return wp.clone(src)
            wp.copy(out, src)
            return out
        return kernels.reorder_backend_to_user(src, nmap, out=out)

    def _env_selector(self, env_ids: Any) -> wp.array | None:
        if env_ids is None:
            return None
        return index_array(env_ids, self.num_envs, "env_ids", self.device, self._selectors)

    def _scatter_joints(
        self,
        dst: wp.array,
        values: Any,
        env_ids: Any,
        joint_ids: Any,
        what: str,
        *,
        public: bool = False,
        finite: bool = True,
    ) -> None:
        """Write ``values`` (public order) into ``dst``: backend order, or public order when ``public``."""
        envs = host_indices(env_ids, self.num_envs, "env_ids") if env_ids is not None else None
        joints = host_indices(joint_ids, self.num_joints, "joint_ids") if joint_ids is not None else None
        if joints is not None and len(joints) == self.num_joints and (np.diff(joints) == 1).all() and joints[0] == 0:
            joints = None  # every joint in order: the same as naming none
        rows = self.num_envs if envs is None else len(envs)
        cols = self.num_joints if joints is None else len(joints)
        whole = envs is None and joints is None and (public or self.joint_ordering is None)
        if whole and isinstance(values, np.ndarray) and dst.device.is_cpu:  # host values into a host buffer
            _host_copy(dst, values, (rows, cols), what, self.joint_names if finite else None)
            return
        src = _as_float_array(values, (rows, cols), what, "(len(env_ids), len(joint_ids))", self.device)
        if finite and src.device.is_cpu:  # on a GPU this check would synchronize; there it is the caller's
            _check_finite(
                src.numpy(), what, self.joint_names if joints is None else [self.joint_names[j] for j in joints]
            )
        if whole:
            wp.copy(dst, src)  # every row and column, no reorder: a plain copy, no kernel launch
            return
        kernels.scatter_user_to_backend(dst, src, None if public else self.joint_ordering, envs, joints)

    # -- writers (public order) ------------------------------------------------------------------------
    def write_joint_state(self, position: Any, velocity: Any, env_ids: Any = None, joint_ids: Any = None) -> None:
        """Set joint positions and velocities of the selected environments and (public) joints."""
        b = self._backend
        wp.copy(self._stage_pos, b.joint_positions())
        wp.copy(self._stage_vel, b.joint_velocities())
        self._scatter_joints(self._stage_pos, position, env_ids, joint_ids, "write_joint_state: position")
        self._scatter_joints(self._stage_vel, velocity, env_ids, joint_ids, "write_joint_state: velocity")
        b.write_joint_state(self._stage_pos, self._stage_vel, self._env_selector(env_ids))
        self._invalidate()

    def _set_target(self, kind: str, values: Any, env_ids: Any, joint_ids: Any) -> None:
        if kind == "effort" and self._actuators is not None:  # the actuators' feed-forward input, applied by step
            self._scatter_joints(self._feed_forward, values, env_ids, joint_ids, "set_joint_effort_target", public=True)
            return
        self._scatter_joints(self._commands[kind], values, env_ids, joint_ids, f"set_joint_{kind}_target", public=True)
        self._armed.add(kind)
        if not self._backend.publish_on_step:  # applied now; otherwise by the next step
            self._plan.launch(kind)
            self._setters[kind](self._backend_commands[kind], self._env_selector(env_ids))

    def set_joint_position_target(self, target: Any, env_ids: Any = None, joint_ids: Any = None) -> None:
        """PD position targets (rad or m) for the selected environments and public joints."""
        self._set_target("position", target, env_ids, joint_ids)

    def set_joint_velocity_target(self, target: Any, env_ids: Any = None, joint_ids: Any = None) -> None:
        """PD velocity targets (rad/s or m/s) for the selected environments and public joints."""
        self._set_target("velocity", target, env_ids, joint_ids)

    def set_joint_effort_target(self, effort: Any, env_ids: Any = None, joint_ids: Any = None) -> None:
        """Feed-forward efforts (N·m or N) for the selected environments and public joints."""
        self._set_target("effort", effort, env_ids, joint_ids)

    def write_joint_properties(self, env_ids: Any = None, joint_ids: Any = None, **values: Any) -> None:
        """Set joint properties (``stiffness``, ``damping``, ``armature``, ... in SI) in public order."""
        props = self._backend.joint_properties()
        staged = {}
        for name, value in values.items():
            if not hasattr(props, name):
                raise ValueError(f"write_joint_properties: unknown property {name!r}; valid: {list(vars(props))}")
            buf = wp.clone(getattr(props, name))
            self._scatter_joints(buf, value, env_ids, joint_ids, f"write_joint_properties: {name}", finite=False)
            staged[name] = buf
        self._backend.write_joint_properties(self._env_selector(env_ids), **staged)
        self._steps.clear()  # conservative: re-record after the solver is told the model changed
        self._invalidate()

    def _write_rows(self, dst: wp.array, values: Any, env_ids: Any, width: int, what: str) -> wp.array | None:
        envs = host_indices(env_ids, self.num_envs, "env_ids") if env_ids is not None else None
        rows = self.num_envs if envs is None else len(envs)
        src = _as_float_array(values, (rows, width), what, f"(len(env_ids), {width})", self.device)
        if envs is None:
            wp.copy(dst, src)
            return None
        sel = wp.array(envs, dtype=wp.int32, device=self.device)
        wp.launch(_copy_rows_2d, dim=(rows, width), inputs=[src, sel], outputs=[dst], device=self.device)
        return sel

    def write_root_pose(self, pose: Any, env_ids: Any = None) -> None:
        """Teleport roots: ``(len(env_ids), 7)`` rows ``x, y, z, qx, qy, qz, qw`` (world frame)."""
        wp.copy(self._root_pose, self._backend.root_pose())
        sel = self._write_rows(self._root_pose, pose, env_ids, 7, "write_root_pose: pose")
        self._backend.write_root_pose(self._root_pose, sel)
        self._invalidate()

    def write_root_velocity(self, velocity: Any, env_ids: Any = None) -> None:
        """Root velocities: ``(len(env_ids), 6)`` rows: COM linear, then angular velocity (world frame)."""
        wp.copy(self._root_vel, self._backend.root_velocity())
        sel = self._write_rows(self._root_vel, velocity, env_ids, 6, "write_root_velocity: velocity")
        self._backend.write_root_velocity(self._root_vel, sel)
        self._invalidate()

    # -- mass properties ---------------------------------------------------------------------------------
    def body_masses(self) -> np.ndarray:
        """``(num_envs, num_bodies)`` link masses (kg), public body order, read from the engine (a host copy).

        Raises ``NotImplementedError`` on a backend without :attr:`~transfer.backends.base.Backend.supports_body_mass`.
        """
        self._check_open()
        masses = self._backend.body_masses().numpy()
        return self.body_ordering.to_user(masses, axis=1) if self.body_ordering else masses.copy()

    def root_com_offset(self) -> np.ndarray:
        """``(num_envs, 3)`` the root link's centre of mass in its own frame (m), read from the engine once (a mass
        written scales a link's density, not where its centre of mass is)."""
        self._check_open()
        if self._root_com is None:
            self._root_com = np.asarray(self._backend.root_com_offset(), np.float64)
        return self._root_com

    def body_inertias(self) -> np.ndarray:
        """``(num_envs, num_bodies, 9)`` link inertia tensors (kg·m²), public body order, in the frame the engine
        keeps them in (:meth:`~transfer.backends.base.Backend.body_inertias`), a host copy."""
        self._check_open()
        inertias = self._backend.body_inertias().numpy()
        return self.body_ordering.to_user(inertias, axis=1) if self.body_ordering else inertias.copy()

    def write_body_masses(self, masses: Any, env_ids: Any = None, body_ids: Any = None) -> None:
        """Set link masses (kg, > 0) of the selected environments and (public) bodies: ``(len(env_ids),
        len(body_ids))``. Each link's inertia scales with its mass (its density changes, its shape stays)."""
        self._check_open()
        envs = host_indices(env_ids, self.num_envs, "env_ids") if env_ids is not None else np.arange(self.num_envs)
        bodies = (
            host_indices(body_ids, self.num_bodies, "body_ids") if body_ids is not None else np.arange(self.num_bodies)
        )
        values = np.asarray(masses, dtype=np.float32)
        if values.shape != (len(envs), len(bodies)):
            raise ValueError(
                f"write_body_masses: got shape {values.shape}, expected {(len(envs), len(bodies))} = "
                "(len(env_ids), len(body_ids))"
            )
        if not (np.isfinite(values).all() and (values > 0).all()):
            raise ValueError(f"write_body_masses: masses must be finite and > 0 kg, got {values.tolist()}")
        public = self.body_masses()
        public[np.ix_(envs, bodies)] = values
        full = self.body_ordering.to_backend(public, axis=1) if self.body_ordering else public
        rows = None if env_ids is None else wp.array(envs.astype(np.int32), dtype=wp.int32, device=self.device)
        self._backend.write_body_masses(
            wp.array(np.ascontiguousarray(full), dtype=wp.float32, device=self.device), rows
        )
        self._steps.clear()  # re-record after the solver is told the model changed
        self._invalidate()

    # -- actuators -------------------------------------------------------------------------------------
    def set_actuators(self, actuators: Actuators | None) -> None:
        """Install explicit actuator models (:class:`~transfer.actuators.Actuators`, public order), or remove them.

        From then on every :meth:`step` first hands the actuators the position and velocity targets, the
        feed-forward efforts (what :meth:`set_joint_effort_target` now writes) and the joint state, and applies
        their output as joint effort: Isaac Lab's explicit actuators, computed every physics step. The engine's own
        drive of the explicit joints must be off (write stiffness and damping 0 for them): this does not do it."""
        if actuators is not None and (actuators.num_envs, actuators.num_joints) != (self.num_envs, self.num_joints):
            raise ValueError(
                f"set_actuators: built for {actuators.num_envs} envs x {actuators.num_joints} joints, the articulation "
                f"has {self.num_envs} x {self.num_joints}"
            )
        self._actuators = actuators
        self._feed_forward = None if actuators is None else wp.zeros_like(self._commands["effort"])
        if actuators is not None:
            self._armed.add("effort")
        self._steps.clear()

    @property
    def actuators(self) -> Actuators | None:
        """The installed explicit actuators (``None``: the engines' own drives only)."""
        return self._actuators

    @property
    def joint_position_target(self) -> wp.array:
        """``(num_envs, num_joints)`` public order: the position targets the joints are driven to now (what
        :meth:`set_joint_position_target` last wrote, the defaults before)."""
        return self._commands["position"]

    @property
    def joint_velocity_target(self) -> wp.array:
        """``(num_envs, num_joints)`` public order: the velocity targets the joints are driven to now."""
        return self._commands["velocity"]

    @property
    def applied_effort(self) -> wp.array:
        """``(num_envs, num_joints)`` public order: the efforts handed to the engine at the last step (the explicit
        actuators' output where installed, else the feed-forward efforts)."""
        return self._commands["effort"]

    def _actuate(self) -> None:
        """The actuators' efforts from the current public joint state (gathered now), scattered to the engine."""
        for key in ("joint_pos", "joint_vel"):
            self._readers[key]()
        self._plan.launch("joint_pos", "joint_vel")
        c = self._commands
        self._actuators.compute(  # type: ignore[union-attr]
            c["position"],
            c["velocity"],
            self._feed_forward,
            self._public["joint_pos"],
            self._public["joint_vel"],
            c["effort"],
        )

    # -- stepping --------------------------------------------------------------------------------------
    def step(self, dt: float, count: int = 1) -> None:
        """Advance the physics by ``count`` steps of ``dt`` seconds (applying the commands set since the last step;
        the same commands for all ``count``)."""
        if not self._backend.publish_on_step:
            if self._actuators is None:
                self._backend.steps(count, dt)  # nothing to compute between them: the backend's own loop
            else:
                for _ in range(count):
                    self._actuate()  # an actuator model's efforts, from the state of each physics step
                    self._plan.launch("effort")
                    self._setters["effort"](self._backend_commands["effort"])
                    self._backend.step(dt)
            self._invalidate()
            return
        self._last_step = self._step_call(float(dt))
        for _ in range(count):
            self._last_step()
        self._invalidate()
        self._feed.published()

    def _step_call(self, dt: float) -> Any:
        """Scatter the armed commands, step, republish: one callable per ``dt`` and set of armed commands; a CUDA
        graph when the backend supports capture, direct launches otherwise.

        The first call runs directly, so that every kernel module is loaded and every cached selector array is
        allocated before any capture, then records the graph (recording executes nothing); later calls replay it."""
        kinds = tuple(k for k in _COMMANDS if k in self._armed)
        key = (dt, kinds)
        call = self._steps.get(key)
        if call is not None:
            return call
        b, plan, public = self._backend, self._plan, tuple(self._public)

        actuators = self._actuators

        def physics() -> None:
            if actuators is not None:
                self._actuate()
            for kind in kinds:
                plan.launch(kind)
                self._setters[kind](self._backend_commands[kind])
            b.step(dt)
            b.publish()
            plan.launch(*public)

        def first() -> None:
            physics()
            capturable = b.supports_cuda_graph and (actuators is None or actuators.captures)
            self._steps[key] = capture(physics, b.device, enabled=capturable)

        first.graph = None  # type: ignore[attr-defined]
        if len(self._steps) >= 8:  # a few dts at most in practice; do not hoard graphs
            self._steps.clear()
        self._steps[key] = first
        return first

    @property
    def step_graph(self) -> Any:
        """The CUDA graph the last :meth:`step` replayed (``None`` on the CPU or when the backend cannot capture)."""
        return getattr(self._last_step, "graph", None)

    def reset(self, env_ids: Any = None) -> None:
        """Restore initial root state and default joint state (all environments, or those given); the actuators
        forget those environments' history."""
        self._backend.reset(self._env_selector(env_ids))
        if self._actuators is not None:
            self._actuators.reset(None if env_ids is None else host_indices(env_ids, self.num_envs, "env_ids"))
        self._invalidate()

    def _invalidate(self) -> None:
        self._feed.changed()

    def close(self) -> None:
        """Release the engine; the articulation cannot be used afterwards (closing twice is harmless)."""
        if not self._closed:
            self._closed = True
            self._backend.close()

    def __enter__(self) -> Articulation:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# -- helpers -------------------------------------------------------------------------------------------------
def _find(names: Sequence[str], pattern: str | Sequence[str], kind: str) -> tuple[list[int], list[str]]:
    patterns = [pattern] if isinstance(pattern, str) else list(pattern)
    matched = {n for p in patterns for n in full_matches(p, names, f"{kind} pattern")}
    ids = [i for i, n in enumerate(names) if n in matched]
    if not ids:
        raise ValueError(f"No {kind} name matches {patterns}; {kind} names: {list(names)}")
    return ids, [names[i] for i in ids]


def _check_finite(values: np.ndarray, what: str, joint_names: Sequence[str]) -> None:
    bad = ~np.isfinite(values)
    if bad.any():
        envs, cols = np.nonzero(bad)
        named = sorted({joint_names[c] for c in cols})
        raise ValueError(
            f"{what}: non-finite values (NaN or inf) for joints {named} in environments {sorted(set(envs.tolist()))[:8]}; "
            "an engine given them would diverge. Check the policy's output (or mark those environments as failed)."
        )


def _map_ids(ids: Any, nmap: ArticulationNameMap | None, n: int, name: str) -> list[int]:
    public = host_indices(ids, n, name).tolist()
    return nmap.map_user_ids_to_backend(public) if nmap is not None else public


def _host_copy(dst: wp.array, values: np.ndarray, shape: tuple[int, int], what: str, names: Any) -> None:
    """``values`` (every row and column, public = backend order) copied into the CPU buffer ``dst`` through its
    numpy view: no device array made, no launch. ``names``: the joints, to check the values are finite (``None``:
    not checked)."""
    rows = values[None] if values.ndim == 1 and shape[0] == 1 else values
    if rows.shape != shape:
        raise ValueError(f"{what}: got shape {tuple(rows.shape)}, expected {shape} = (len(env_ids), len(joint_ids))")
    if names is not None:
        _check_finite(rows, what, names)
    host(dst)[...] = rows


def _as_float_array(values: Any, shape: tuple[int, int], what: str, layout: str, device: str) -> wp.array:
    if isinstance(values, wp.array):
        if values.dtype != wp.float32:
            raise TypeError(f"{what}: expected float32 data, got {wp.types.type_repr(values.dtype)}")
        arr = values if str(values.device) == str(device) else values.to(device)
    elif is_torch(values):
        import torch

        if values.dtype != torch.float32:
            raise TypeError(f"{what}: expected a float32 tensor, got {values.dtype}")
        arr = wp.from_torch(values.contiguous())
    else:
        rows = np.asarray(values, dtype=np.float32)
        if rows.ndim == 1 and shape[0] == 1:
            rows = rows[None]
        arr = wp.array(rows, dtype=wp.float32, device=device)
    if tuple(arr.shape) != shape:
        raise ValueError(f"{what}: got shape {tuple(arr.shape)}, expected {shape} = {layout}")
    return arr
