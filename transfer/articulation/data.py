"""Public-order state of an articulation: :class:`ArticulationData`, the kernels that derive it, and
:class:`StateFeed`, the one contract between an :class:`~transfer.articulation.core.Articulation` and its data."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

import warp as wp

if TYPE_CHECKING:
    from transfer.backends.base import Backend

__all__ = ["ArticulationData", "StateFeed"]


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


class StateFeed:
    """Everything :class:`ArticulationData` reads from its articulation, named in one place.

    The articulation owns the feed: it bumps :meth:`changed` whenever the state may have moved (a step, a reset,
    a write) and calls :meth:`published` after a step that republished every buffer. The data asks
    :meth:`gathered` for a public-order buffer and :meth:`fresh` whether a derived quantity is current.

    Args:
        backend: the engine underneath (backend order); the data reads its root buffers, gravity and properties.
        buffers: the public-order buffers of the reorder plan, by key (``joint_pos``, ``body_pose``, ...).
        refresh: ``refresh(key)`` re-reads ``key`` from the backend and gathers it into ``buffers[key]``.
        to_public_joints: ``to_public_joints(src, out=None)`` reorders a backend-order joint array to public order.
        check_open: raises when the articulation is closed.
        num_bodies: links per environment.
    """

    def __init__(
        self,
        backend: Backend,
        buffers: Mapping[str, wp.array],
        refresh: Callable[[str], None],
        to_public_joints: Callable[..., wp.array],
        check_open: Callable[[], None],
        num_bodies: int,
    ) -> None:
        self.backend = backend
        self.buffers = buffers
        self.refresh = refresh
        self.to_public_joints = to_public_joints
        self.check_open = check_open
        self.num_bodies = num_bodies
        self.version = 0  # bumped by every change of state
        self._stamp: dict[str, int] = {}

    def changed(self) -> None:
        """The state may have moved: every derived quantity is stale."""
        self.version += 1

    def published(self) -> None:
        """The step just republished every gathered buffer (and the backend's root buffers)."""
        for key in (*self.buffers, "root:src"):
            self._stamp[key] = self.version

    def fresh(self, key: str) -> bool:
        """Whether ``key`` is current; if not, it is marked current (the caller recomputes it now)."""
        self.check_open()
        if self._stamp.get(key) == self.version:
            return True
        self._stamp[key] = self.version
        return False

    def gathered(self, key: str) -> wp.array:
        """The public-order buffer ``key``, refreshed when stale."""
        if not self.fresh(key):
            self.refresh(key)
        return self.buffers[key]


class ArticulationData:
    """Public-order state of an :class:`Articulation`, refreshed once per step.

    Every attribute is a ``wp.array`` shaped ``(num_envs, ...)``: ``.numpy()`` copies to the host and
    ``wp.to_torch(a)`` is a zero-copy torch view. Positions in m, angles in rad, quaternions xyzw, velocities in
    the world frame (``_w``) or the root body frame (``_b``). The arrays are the articulation's own buffers,
    updated in place each step: keep a reference, or copy what must outlive the step.
    """

    def __init__(self, feed: StateFeed) -> None:
        self._feed = feed
        b, e = feed.backend, feed.backend.num_envs
        dev = b.device
        z = lambda *shape, dtype=wp.float32: wp.zeros(shape, dtype=dtype, device=dev)  # noqa: E731
        self._root = {k: z(e, dtype=wp.vec3) for k in ("pos_w", "lin_w", "ang_w", "lin_b", "ang_b", "gravity_b")}
        self._root_quat = z(e, dtype=wp.quat)
        self._root_src = (b.root_pose(), b.root_velocity())
        n = feed.num_bodies
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
                kernel, dim=(e, n), inputs=[feed.buffers[key]], outputs=list(outs), device=dev, record_cmd=True
            )
            for key, (kernel, outs) in self._split_outputs.items()
            if key in feed.buffers
        }
        self._default_joint_pos = feed.to_public_joints(b.default_joint_pos)
        self._props: dict[str, wp.array] = {}

    def _fresh(self, key: str) -> bool:
        return self._feed.fresh(key)

    def _gathered(self, key: str) -> wp.array:
        """The public-order buffer ``key`` of the plan (the backend's own array for the identity ordering)."""
        return self._feed.gathered(key)

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
        b = self._feed.backend
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
        if key not in self._feed.buffers:
            raise NotImplementedError(f"{type(self._feed.backend).__name__} does not support body velocities")
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
            src = getattr(self._feed.backend.joint_properties(), name)
            self._props[name] = self._feed.to_public_joints(src, out=self._props.get(name))
        return self._props[name]

    joint_stiffness = property(lambda self: self._prop("stiffness"), doc="Drive stiffness (N·m/rad or N/m).")
    joint_damping = property(lambda self: self._prop("damping"), doc="Drive damping (N·m·s/rad or N·s/m).")
    joint_armature = property(lambda self: self._prop("armature"), doc="Armature (kg·m² or kg).")
    joint_friction = property(lambda self: self._prop("friction"), doc="Joint friction coefficient.")
    joint_pos_limit_lower = property(lambda self: self._prop("position_limit_lower"), doc="Lower limit (rad or m).")
    joint_pos_limit_upper = property(lambda self: self._prop("position_limit_upper"), doc="Upper limit (rad or m).")
    joint_vel_limits = property(lambda self: self._prop("velocity_limit"), doc="Velocity limit (rad/s or m/s).")
    joint_effort_limits = property(lambda self: self._prop("effort_limit"), doc="Effort limit (N·m or N).")
