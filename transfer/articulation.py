"""One articulation in public order, the same on every backend: :func:`open_articulation`.

The public (user) order is the order of the checkpoint or the config (``joint_ordering``/``body_ordering``);
the backend runs in its own order underneath. One :class:`~transfer.plan.ReorderPlan` per articulation holds the
gathers (backend -> public: joint positions and velocities, body poses and velocities) and the scatters (public
-> backend: position, velocity and effort targets). Identity orderings (``None``) launch no reorder at all.

When they run depends on the backend (:attr:`~transfer.backends.base.Backend.publish_on_step`):

- Newton: :meth:`Articulation.step` is one call that scatters the commands written since start-up, steps the
  solver and republishes the state in public order; on a CUDA device (``supports_cuda_graph``) that call is one
  CUDA graph, recorded once per ``dt`` and set of commands in use. Reads after a step are plain buffers.
- PhysX (reads and writes are host calls to the tensor bindings): reads gather on first access after a step,
  writes scatter and apply at once.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import warp as wp

from transfer import kernels
from transfer.name_map import ArticulationNameMap, build_name_map
from transfer.ordering import OrderingConvention, parse_ordering
from transfer.plan import ReorderPlan, capture
from transfer.presets import OrderingOverrideWarning

if TYPE_CHECKING:
    from transfer.backends.base import Backend

__all__ = ["BACKENDS", "Articulation", "ArticulationData", "open_articulation"]

BACKENDS = {
    "physx": ("transfer.backends.physx", "PhysxBackend", "physx"),
    "newton": ("transfer.backends.newton", "NewtonBackend", "newton"),
}
NATIVE = {"physx": OrderingConvention.PHYSX, "newton": OrderingConvention.MJWARP}
_COMMANDS = ("position", "velocity", "effort")


# -- kernels: split poses and velocities, body frame quantities --------------------------------------------------
@wp.kernel
def _root_kernel(
    pose: wp.array2d(dtype=wp.float32),
    vel: wp.array2d(dtype=wp.float32),
    gravity_dir: wp.vec3,
    pos_w: wp.array(dtype=wp.vec3),
    quat_w: wp.array(dtype=wp.quat),
    lin_w: wp.array(dtype=wp.vec3),
    ang_w: wp.array(dtype=wp.vec3),
    lin_b: wp.array(dtype=wp.vec3),
    ang_b: wp.array(dtype=wp.vec3),
    gravity_b: wp.array(dtype=wp.vec3),
):
    e = wp.tid()
    q = wp.normalize(wp.quat(pose[e, 3], pose[e, 4], pose[e, 5], pose[e, 6]))
    v = wp.vec3(vel[e, 0], vel[e, 1], vel[e, 2])
    w = wp.vec3(vel[e, 3], vel[e, 4], vel[e, 5])
    pos_w[e] = wp.vec3(pose[e, 0], pose[e, 1], pose[e, 2])
    quat_w[e] = q
    lin_w[e] = v
    ang_w[e] = w
    lin_b[e] = wp.quat_rotate_inv(q, v)
    ang_b[e] = wp.quat_rotate_inv(q, w)
    gravity_b[e] = wp.quat_rotate_inv(q, gravity_dir)


@wp.kernel
def _split_3_4(src: wp.array3d(dtype=wp.float32), a: wp.array2d(dtype=wp.vec3), b: wp.array2d(dtype=wp.quat)):
    e, i = wp.tid()
    a[e, i] = wp.vec3(src[e, i, 0], src[e, i, 1], src[e, i, 2])
    b[e, i] = wp.quat(src[e, i, 3], src[e, i, 4], src[e, i, 5], src[e, i, 6])


@wp.kernel
def _split_3_3(src: wp.array3d(dtype=wp.float32), a: wp.array2d(dtype=wp.vec3), b: wp.array2d(dtype=wp.vec3)):
    e, i = wp.tid()
    a[e, i] = wp.vec3(src[e, i, 0], src[e, i, 1], src[e, i, 2])
    b[e, i] = wp.vec3(src[e, i, 3], src[e, i, 4], src[e, i, 5])


@wp.kernel
def _copy_rows_2d(src: wp.array2d(dtype=wp.float32), rows: wp.array(dtype=wp.int32), dst: wp.array2d(dtype=wp.float32)):
    i, j = wp.tid()
    dst[rows[i], j] = src[i, j]


class ArticulationData:
    """Public-order state of an :class:`Articulation`, refreshed once per step.

    Every attribute is a ``wp.array`` shaped ``(num_envs, ...)``: ``.numpy()`` copies to the host and
    ``wp.to_torch(a)`` is a zero-copy torch view. Positions in m, angles in rad, quaternions xyzw, velocities in
    the world frame (``_w``) or the root body frame (``_b``). The arrays are the articulation's own buffers,
    updated in place each step: keep a reference, or copy what must outlive the step.
    """

    def __init__(self, art: Articulation) -> None:
        self._art = art
        self._stamp: dict[str, int] = {}
        b, e = art._backend, art.num_envs
        dev = b.device
        z = lambda *shape, dtype=wp.float32: wp.zeros(shape, dtype=dtype, device=dev)  # noqa: E731
        self._root = {k: z(e, dtype=wp.vec3) for k in ("pos_w", "lin_w", "ang_w", "lin_b", "ang_b", "gravity_b")}
        self._root_quat = z(e, dtype=wp.quat)
        self._root_src = (b.root_pose(), b.root_velocity())
        n = art.num_bodies
        # Derived quantities: launches recorded once over fixed buffers (a native call each, no argument packing).
        r = self._root
        self._gravity_dir = wp.vec3(*(float(c) for c in b.gravity_dir))
        self._root_launch = wp.launch(
            _root_kernel,
            dim=e,
            inputs=[*self._root_src, self._gravity_dir],
            outputs=[r["pos_w"], self._root_quat, r["lin_w"], r["ang_w"], r["lin_b"], r["ang_b"], r["gravity_b"]],
            device=dev,
            record_cmd=True,
        )
        self._split_outputs = {  # public body buffer -> (kernel, its two component arrays)
            "body_pose": (_split_3_4, (z(e, n, dtype=wp.vec3), z(e, n, dtype=wp.quat))),
            "body_vel": (_split_3_3, (z(e, n, dtype=wp.vec3), z(e, n, dtype=wp.vec3))),
        }
        self._split_launches = {
            key: wp.launch(
                kernel, dim=(e, n), inputs=[art._public[key]], outputs=list(outs), device=dev, record_cmd=True
            )
            for key, (kernel, outs) in self._split_outputs.items()
            if key in art._public
        }
        self._default_joint_pos = art._to_user(b.default_joint_pos, art.joint_ordering)
        self._props: dict[str, wp.array] = {}

    def _fresh(self, key: str) -> bool:
        if self._stamp.get(key) == self._art._step_count:
            return True
        self._stamp[key] = self._art._step_count
        return False

    def _published(self) -> None:
        """The step just republished every gathered quantity (and the backend's root buffers)."""
        for key in (*self._art._public, "root:src"):
            self._stamp[key] = self._art._step_count

    def _gathered(self, key: str) -> wp.array:
        """The public-order buffer ``key`` of the plan (the backend's own array for the identity ordering)."""
        art = self._art
        if not self._fresh(key):
            art._readers[key]()
            art._plan.launch(key)
        return art._public[key]

    # joints
    joint_pos = property(
        lambda self: self._gathered("joint_pos"), doc="Joint (DoF) positions ``(num_envs, num_joints)``."
    )
    joint_vel = property(
        lambda self: self._gathered("joint_vel"), doc="Joint (DoF) velocities ``(num_envs, num_joints)``."
    )

    @property
    def default_joint_pos(self) -> wp.array:
        """Initial joint positions from the asset, ``(num_envs, num_joints)``, public order."""
        return self._default_joint_pos

    # root
    def _refresh_root(self) -> None:
        if self._fresh("root"):
            return
        b = self._art._backend
        if not self._fresh("root:src"):
            b.root_pose()
            b.root_velocity()
        self._root_launch.launch()

    def _root_field(self, key: str) -> wp.array:
        self._refresh_root()
        return self._root[key]

    root_pos_w = property(lambda self: self._root_field("pos_w"), doc="Root link position ``(num_envs,)`` vec3.")
    root_lin_vel_w = property(lambda self: self._root_field("lin_w"), doc="Root COM linear velocity, world frame.")
    root_ang_vel_w = property(lambda self: self._root_field("ang_w"), doc="Root angular velocity, world frame.")
    root_lin_vel_b = property(lambda self: self._root_field("lin_b"), doc="Root COM linear velocity, root frame.")
    root_ang_vel_b = property(lambda self: self._root_field("ang_b"), doc="Root angular velocity, root frame.")
    projected_gravity_b = property(lambda self: self._root_field("gravity_b"), doc="Gravity direction, root frame.")

    @property
    def root_quat_w(self) -> wp.array:
        """Root orientation ``(num_envs,)`` ``wp.quat`` (xyzw), world frame."""
        self._refresh_root()
        return self._root_quat

    # bodies
    body_pose_w = property(
        lambda self: self._gathered("body_pose"),
        doc="Link poses ``(num_envs, num_bodies, 7)`` float32: ``x, y, z, qx, qy, qz, qw``, world frame.",
    )

    @property
    def body_vel_w(self) -> wp.array:
        """Link velocities ``(num_envs, num_bodies, 6)`` float32: COM linear, then angular, world frame."""
        return self._body_source("body_vel")

    def _body_source(self, key: str) -> wp.array:
        if key not in self._art._public:
            raise NotImplementedError(f"{type(self._art._backend).__name__} does not support body velocities")
        return self._gathered(key)

    def _split(self, key: str, which: int) -> wp.array:
        """Component ``which`` (0: position / linear, 1: rotation / angular) of the public body buffer ``key``."""
        self._body_source(key)
        if not self._fresh(f"split:{key}"):
            self._split_launches[key].launch()
        return self._split_outputs[key][1][which]

    body_pos_w = property(
        lambda self: self._split("body_pose", 0), doc="Link positions ``(num_envs, num_bodies)`` vec3."
    )
    body_quat_w = property(lambda self: self._split("body_pose", 1), doc="Link orientations, quat (xyzw), world frame.")
    body_lin_vel_w = property(lambda self: self._split("body_vel", 0), doc="Link COM linear velocities, vec3.")
    body_ang_vel_w = property(lambda self: self._split("body_vel", 1), doc="Link angular velocities, vec3.")

    # joint properties (read from the engine, public order)
    def _prop(self, name: str) -> wp.array:
        if not self._fresh(f"prop:{name}"):
            src = getattr(self._art._backend.joint_properties(), name)
            self._props[name] = self._art._to_user(src, self._art.joint_ordering, out=self._props.get(name))
        return self._props[name]

    joint_stiffness = property(lambda self: self._prop("stiffness"), doc="Drive stiffness (N·m/rad or N/m).")
    joint_damping = property(lambda self: self._prop("damping"), doc="Drive damping (N·m·s/rad or N·s/m).")
    joint_armature = property(lambda self: self._prop("armature"), doc="Armature (kg·m² or kg).")
    joint_friction = property(lambda self: self._prop("friction"), doc="Joint friction coefficient.")
    joint_pos_limit_lower = property(lambda self: self._prop("position_limit_lower"), doc="Lower limit (rad or m).")
    joint_pos_limit_upper = property(lambda self: self._prop("position_limit_upper"), doc="Upper limit (rad or m).")
    joint_vel_limits = property(lambda self: self._prop("velocity_limit"), doc="Velocity limit (rad/s or m/s).")
    joint_effort_limits = property(lambda self: self._prop("effort_limit"), doc="Effort limit (N·m or N).")


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
        self._step_count = 0
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
        self._steps: dict[tuple[float, tuple[str, ...]], Any] = {}
        self._last_step: Any = None
        self.data = ArticulationData(self)

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

    def map_joint_ids_to_backend(self, ids: Sequence[int]) -> list[int]:
        """Backend indices of public joint indices."""
        return (
            self.joint_ordering.map_user_ids_to_backend(ids)
            if self.joint_ordering
            else _checked(ids, self.num_joints, "joint")
        )

    def map_body_ids_to_backend(self, ids: Sequence[int]) -> list[int]:
        """Backend indices of public body indices."""
        return (
            self.body_ordering.map_user_ids_to_backend(ids)
            if self.body_ordering
            else _checked(ids, self.num_bodies, "body")
        )

    # -- reorder helpers ------------------------------------------------------------------------------
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
        ids = kernels.host_indices(env_ids, self.num_envs, "env_ids")
        return wp.array(ids, dtype=wp.int32, device=self.device)

    def _scatter_joints(
        self, dst: wp.array, values: Any, env_ids: Any, joint_ids: Any, what: str, *, public: bool = False
    ) -> None:
        """Write ``values`` (public order) into ``dst``: backend order, or public order when ``public``."""
        envs = kernels.host_indices(env_ids, self.num_envs, "env_ids") if env_ids is not None else None
        joints = kernels.host_indices(joint_ids, self.num_joints, "joint_ids") if joint_ids is not None else None
        rows = self.num_envs if envs is None else len(envs)
        cols = self.num_joints if joints is None else len(joints)
        src = _as_float_array(values, (rows, cols), what, "(len(env_ids), len(joint_ids))", self.device)
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
            self._scatter_joints(buf, value, env_ids, joint_ids, f"write_joint_properties: {name}")
            staged[name] = buf
        self._backend.write_joint_properties(self._env_selector(env_ids), **staged)
        self._steps.clear()  # conservative: re-record after the solver is told the model changed
        self._invalidate()

    def _write_rows(self, dst: wp.array, values: Any, env_ids: Any, width: int, what: str) -> wp.array | None:
        envs = kernels.host_indices(env_ids, self.num_envs, "env_ids") if env_ids is not None else None
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

    # -- stepping --------------------------------------------------------------------------------------
    def step(self, dt: float) -> None:
        """Advance the physics by ``dt`` seconds (applying the commands set since the last step)."""
        if not self._backend.publish_on_step:
            self._backend.step(dt)
            self._invalidate()
            return
        self._last_step = self._step_call(float(dt))
        self._last_step()
        self._invalidate()
        self.data._published()

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

        def physics() -> None:
            for kind in kinds:
                plan.launch(kind)
                self._setters[kind](self._backend_commands[kind])
            b.step(dt)
            b.publish()
            plan.launch(*public)

        def first() -> None:
            physics()
            self._steps[key] = capture(physics, b.device, enabled=b.supports_cuda_graph)

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
        """Restore initial root state and default joint state (all environments, or those given)."""
        self._backend.reset(self._env_selector(env_ids))
        self._invalidate()

    def _invalidate(self) -> None:
        self._step_count += 1

    def close(self) -> None:
        self._backend.close()


# -- helpers -------------------------------------------------------------------------------------------------
def _find(names: Sequence[str], pattern: str | Sequence[str], kind: str) -> tuple[list[int], list[str]]:
    patterns = [pattern] if isinstance(pattern, str) else list(pattern)
    ids = [i for i, n in enumerate(names) if any(re.fullmatch(p, n) for p in patterns)]
    if not ids:
        raise ValueError(f"No {kind} name matches {patterns}; {kind} names: {list(names)}")
    return ids, [names[i] for i in ids]


def _checked(ids: Sequence[int], n: int, kind: str) -> list[int]:
    out = [int(i) for i in ids]
    bad = [i for i in out if not 0 <= i < n]
    if bad:
        raise IndexError(f"{kind} ids {bad} out of range: the articulation has {n} {kind}s")
    return out


def _as_float_array(values: Any, shape: tuple[int, int], what: str, layout: str, device: str) -> wp.array:
    if isinstance(values, wp.array):
        if values.dtype != wp.float32:
            raise TypeError(f"{what}: expected float32 data, got {wp.types.type_repr(values.dtype)}")
        arr = values if str(values.device) == str(device) else values.to(device)
    elif type(values).__module__.startswith("torch"):
        import torch

        if values.dtype != torch.float32:
            raise TypeError(f"{what}: expected a float32 tensor, got {values.dtype}")
        arr = wp.from_torch(values.contiguous())
    else:
        host = np.asarray(values, dtype=np.float32)
        if host.ndim == 1 and shape[0] == 1:
            host = host[None]
        arr = wp.array(host, dtype=wp.float32, device=device)
    if tuple(arr.shape) != shape:
        raise ValueError(f"{what}: got shape {tuple(arr.shape)}, expected {shape} = {layout}")
    return arr


def _resolve_names(
    usd_path: Path, root: str | None, ordering: Any, backend_name: str, kind: str
) -> tuple[str, ...] | None:
    parsed = parse_ordering(ordering)
    if parsed is None or parsed is NATIVE[backend_name]:
        return None
    if isinstance(parsed, tuple):
        return parsed
    from transfer.orders import resolve_ordering

    order = resolve_ordering(usd_path, parsed, root)
    return order.joints if kind == "joint" else order.bodies


def open_articulation(
    usd_path: str | Path,
    backend: str = "physx",
    root: str | None = None,
    num_envs: int = 1,
    device: str = "cpu",
    joint_ordering: Any = None,
    body_ordering: Any = None,
    **backend_options: Any,
) -> Articulation:
    """Open ``usd_path`` on ``backend`` (``"physx"`` or ``"newton"``) in ``num_envs`` environments, public order.

    ``joint_ordering`` / ``body_ordering`` accept anything :func:`transfer.parse_ordering` accepts; conventions are
    resolved from the USD asset (a convention equal to the backend's own order becomes ``None``). Setting only
    one of the two warns (:class:`~transfer.OrderingOverrideWarning`). Extra keyword arguments go to the backend.
    """
    key = str(backend).lower()
    if key not in BACKENDS:
        raise ValueError(f"Unknown backend {backend!r}; valid backends: {sorted(BACKENDS)}")
    path = Path(usd_path)
    if not path.is_file():
        raise FileNotFoundError(f"USD file not found: {path}")
    if (joint_ordering is None) != (body_ordering is None):
        have, lack = (
            ("joint_ordering", "body_ordering") if body_ordering is None else ("body_ordering", "joint_ordering")
        )
        warnings.warn(
            f"Only {have} is set ({lack} is None): joint and body vectors will follow different orders. Set "
            f"{lack} too (transfer.apply_articulation_ordering_preset sets both) unless that is what you mean.",
            OrderingOverrideWarning,
            stacklevel=2,
        )
    module_name, class_name, extra = BACKENDS[key]
    try:
        from importlib import import_module

        cls = getattr(import_module(module_name), class_name)
    except ImportError as exc:
        raise ImportError(f"The {key} backend needs its engine: pip install 'transfer[{extra}]' ({exc})") from exc
    engine = cls(path, num_envs=num_envs, device=device, root=root, **backend_options)
    joint_names = _resolve_names(path, root, joint_ordering, key, "joint")
    body_names = _resolve_names(path, root, body_ordering, key, "body")
    jmap = build_name_map("joint", engine.joint_names, joint_names, device=engine.device)
    bmap = build_name_map("body", engine.body_names, body_names, device=engine.device)
    return Articulation(engine, jmap, bmap)
