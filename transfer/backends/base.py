"""The backend contract: one articulation, cloned into ``num_envs`` environments, in the engine's own order.

Everything here is in **backend order** (the engine's joint/DoF and body order), **SI units** (m, rad,
N, N·m, N·m/rad, ...), the **world frame**, and quaternions **xyzw** (Warp's convention). Arrays are
``wp.array(dtype=wp.float32)`` on :attr:`Backend.device`:

- poses: shape ``(num_envs, 7)`` (root) or ``(num_envs, num_bodies, 7)`` (bodies): ``x, y, z, qx, qy, qz, qw``
  of the body (link) frame, i.e. the authored body prim frame;
- velocities: ``(num_envs, 6)`` / ``(num_envs, num_bodies, 6)``: linear velocity of the centre of mass,
  then angular velocity, both in the world frame;
- joint quantities: ``(num_envs, num_joints)`` with one column per DoF.

Readers return arrays the backend owns and refreshes; each reader returns the same array on every call (the
public layer records launches that point into it); do not write into them. Writers take full-width
arrays (``num_envs`` rows) and an optional ``env_ids`` (1-D ``wp.int32``): only those rows are applied.
The public-order layer (:func:`transfer.open_articulation`) sits on top and never needs more than this.
"""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from transfer.ordering import OrderingConvention
from transfer.robot.assets import SOURCE_SUFFIXES, resolve_asset

if TYPE_CHECKING:
    import numpy as np
    import warp as wp

__all__ = [
    "UNLIMITED",
    "JOINT_PROPERTIES",
    "Backend",
    "EngineOrder",
    "EngineRefusal",
    "JointProperties",
    "asset_file",
    "select_root",
]

JOINT_PROPERTIES = (
    "stiffness",
    "damping",
    "armature",
    "friction",
    "position_limit_lower",
    "position_limit_upper",
    "velocity_limit",
    "effort_limit",
)


UNLIMITED = 3.4028234663852886e38
"""What a limit the engine does not enforce reads as (float32's largest value; also accepted as inf on writes)."""


@dataclass
class JointProperties:
    """Per-DoF properties, each ``(num_envs, num_joints)`` float32, SI (drive gains per rad or per m)."""

    stiffness: wp.array
    damping: wp.array
    armature: wp.array
    friction: wp.array
    position_limit_lower: wp.array
    position_limit_upper: wp.array
    velocity_limit: wp.array
    effort_limit: wp.array


@dataclass(frozen=True)
class EngineOrder:
    """One articulation as an engine orders it (the engine's own answer, not an emulation)."""

    engine: str
    """The convention the engine follows (its backend's :attr:`Backend.native_convention`)."""
    root: str
    """USD path of the prim carrying ``PhysicsArticulationRootAPI``, as the engine labels the articulation."""
    joints: tuple[str, ...]
    """DoF names in DoF order, spelled as the engine spells them (multi-DoF joints: ``name:0``, ``name:1``...)."""
    bodies: tuple[str, ...]
    """Link (body) names in the engine's link order."""
    fixed_base: bool | None
    """Whether the engine fixes the root link to the world; ``None`` if it does not say."""


class EngineRefusal(RuntimeError):
    """The engine refused the asset; :attr:`reason` is the engine's own message."""

    def __init__(self, engine: str, reason: str):
        self.engine = engine
        self.reason = reason
        super().__init__(f"{engine} refused the asset: {reason}")

    def __reduce__(self):  # keep engine and reason across pickling (e.g. multiprocessing workers)
        return (type(self), (self.engine, self.reason))


def asset_file(asset: str | os.PathLike) -> str:
    """The absolute path of an existing USD file, or ``FileNotFoundError`` naming it. An MJCF (``.xml``) or URDF
    (``.urdf``) file gives its converted USD (:func:`transfer.robot.assets.resolve_asset`)."""
    path = Path(os.fspath(asset)).expanduser().resolve()
    if not path.is_file():
        raise FileNotFoundError(f"USD asset not found: {path}")
    if path.suffix.lower() in SOURCE_SUFFIXES:
        path = resolve_asset(path).resolve()
    return str(path)


def select_root(orders: list[EngineOrder], root: str | None, engine: str, asset: str) -> list[EngineOrder]:
    """``orders`` sorted by root path (stable), or only those rooted at ``root`` (``LookupError`` if none)."""
    orders = sorted(orders, key=lambda order: order.root)
    if root is None:
        return orders
    chosen = [order for order in orders if order.root == root]
    if not chosen:
        found = ", ".join(sorted({order.root for order in orders})) or "none"
        raise LookupError(
            f"{engine} built no articulation rooted at {root!r} in {asset}; articulation roots found: {found}. "
            "Pass one of those as root, or root=None for all."
        )
    return chosen


class Backend(ABC):
    """A physics engine driving one articulation type in ``num_envs`` environments, in backend order."""

    name: ClassVar[str]
    """Backend name in :data:`transfer.backends.REGISTRY`."""
    native_convention: ClassVar[OrderingConvention]
    """The ordering convention the engine's own joint and body order follows."""

    @classmethod
    @abstractmethod
    def engine_orders(cls, asset: str | os.PathLike, root: str | None = None) -> list[EngineOrder]:
        """Ask the engine itself how it orders every articulation of the USD file ``asset`` (sorted by root;
        with ``root``, only that one). The ground truth the USD-only emulation is tested against.

        Raises:
            FileNotFoundError: ``asset`` is not a file.
            EngineRefusal: the engine refused the asset.
            LookupError: ``root`` is given and the engine built no articulation there.
        """

    # Capabilities: declared, never discovered by trial.
    supports_partial_reset: ClassVar[bool] = True
    """``reset(env_ids)`` resets only the given environments."""
    supports_body_velocities: ClassVar[bool] = True
    """:meth:`body_velocities` is available."""
    supports_body_mass: ClassVar[bool] = False
    """:meth:`body_masses`, :meth:`body_inertias` and :meth:`write_body_masses` are available."""
    supports_contact_forces: ClassVar[bool] = False
    """:meth:`contact_forces` reports the engine's own contact forces."""
    enforces_velocity_limit: ClassVar[bool] = False
    """A ``velocity_limit`` written with :meth:`write_joint_properties` bounds the joints' speeds while stepping
    (PhysX's max joint velocity). Where it is ``False`` the engine has no such limit (MuJoCo, Newton's MuJoCo
    solvers): the write is kept for the reads and a replay says the limit does not act."""
    supports_cuda_graph: bool = False
    """:meth:`step`, :meth:`publish` and full-width target writes (``env_ids=None``) make no host synchronization
    and keep their array pointers: they may be captured in one CUDA graph. Only ever true on a CUDA device."""
    publish_on_step: ClassVar[bool] = False
    """The public layer republishes state and applies commands inside each step (one CUDA graph on GPU) rather
    than reading lazily on access and applying commands when written. For engines whose reads are kernel
    launches (Newton); an engine whose reads are host calls (PhysX tensor bindings) keeps them lazy."""

    native_from_usd: ClassVar[bool] = True
    """Its own order can be read from the USD asset (the emulation of :attr:`native_convention` on the stage). An
    engine that steps the robot's source file instead (MuJoCo on the MJCF) says ``False``: the public layer then
    checks name lists against the engine once it is built, and opens it on the file given when no ordering needs
    the USD."""

    orders_natively: ClassVar[bool] = False
    """The constructor takes ``joint_order`` / ``body_order`` (public DoF and link names) and then lists
    :attr:`joint_names` / :attr:`body_names`, and lays out every array, in that order: the public layer then needs
    no reorder of its own. Backends that cannot (PhysX fixes its order) leave it ``False``."""

    device: str
    num_envs: int
    joint_names: tuple[str, ...]
    """DoF names in backend order."""
    body_names: tuple[str, ...]
    """Link names in backend order; index 0 is the root link."""
    fixed_base: bool
    gravity_dir: tuple[float, float, float]
    """Unit gravity direction in the world frame (for ``projected_gravity_b``)."""
    default_joint_pos: wp.array
    """Initial joint positions from the asset, ``(num_envs, num_joints)``."""
    changes: tuple[str, ...] = ()
    """What the backend made of the robot that its file does not say and the user should hear (a run says each
    once): the MuJoCo backend's position actuators added to an MJCF with none."""

    @property
    def num_joints(self) -> int:
        return len(self.joint_names)

    @property
    def num_bodies(self) -> int:
        return len(self.body_names)

    # -- reads -----------------------------------------------------------------------------------
    @abstractmethod
    def root_pose(self) -> wp.array:
        """Shape ``(num_envs, 7)``: root link position and quaternion (xyzw), world frame."""

    @abstractmethod
    def root_velocity(self) -> wp.array:
        """Shape ``(num_envs, 6)``: root COM linear velocity, then angular velocity, world frame."""

    @abstractmethod
    def joint_positions(self) -> wp.array:
        """Shape ``(num_envs, num_joints)``: rad or m."""

    @abstractmethod
    def joint_velocities(self) -> wp.array:
        """Shape ``(num_envs, num_joints)``: rad/s or m/s."""

    @abstractmethod
    def body_poses(self) -> wp.array:
        """Shape ``(num_envs, num_bodies, 7)``: link frames, world frame, xyzw."""

    def body_velocities(self) -> wp.array:
        """Shape ``(num_envs, num_bodies, 6)``: COM linear, then angular velocity, world frame."""
        raise NotImplementedError(f"{type(self).__name__} does not support body velocities")

    @abstractmethod
    def joint_properties(self) -> JointProperties:
        """Per-DoF properties as the engine holds them (converted to SI)."""

    def body_masses(self) -> wp.array:
        """Shape ``(num_envs, num_bodies)``: link masses (kg) as the engine holds them."""
        raise NotImplementedError(f"{type(self).__name__} does not support body masses")

    def contact_forces(self, bodies: Any) -> Any:
        """``(num_envs, len(bodies), 3)`` float64: the net contact force (N, world frame) the engine applied to each
        of the backend bodies ``bodies`` (an index array) at its last step, or ``None`` when the engine reports
        none (:attr:`supports_contact_forces`)."""
        return None

    def root_com_offset(self) -> np.ndarray:
        """``(num_envs, 3)`` float64: the root link's centre of mass in the root link's frame (m): what turns the
        root's centre-of-mass velocity (:meth:`root_velocity`) into its frame origin's."""
        raise NotImplementedError(f"{type(self).__name__} does not report the root's centre of mass")

    def body_inertias(self) -> wp.array:
        """Shape ``(num_envs, num_bodies, 9)``: link inertia tensors (kg·m²) about the centre of mass, row-major, in
        the frame the engine keeps them in (PhysX: the centre-of-mass frame; Newton: the link frame). Compare them
        with themselves (a write scales them), not across engines."""
        raise NotImplementedError(f"{type(self).__name__} does not support body inertias")

    def write_body_masses(self, masses: wp.array, env_ids: wp.array | None = None) -> None:
        """Set link masses (kg, each > 0), ``(num_envs, num_bodies)``. Each link's inertia tensor is scaled by the
        same factor as its mass: its density changes, its shape, centre of mass and principal axes stay (Isaac
        Lab's ``randomize_rigid_body_mass`` with ``recompute_inertia``)."""
        raise NotImplementedError(f"{type(self).__name__} does not support writing body masses")

    # -- writes ----------------------------------------------------------------------------------
    @abstractmethod
    def write_root_pose(self, pose: wp.array, env_ids: wp.array | None = None) -> None:
        """Teleport roots; ``pose`` is ``(num_envs, 7)``."""

    @abstractmethod
    def write_root_velocity(self, velocity: wp.array, env_ids: wp.array | None = None) -> None:
        """``velocity`` is ``(num_envs, 6)``: COM linear, angular, world frame."""

    @abstractmethod
    def write_joint_state(self, position: wp.array, velocity: wp.array, env_ids: wp.array | None = None) -> None:
        """Set joint positions and velocities, each ``(num_envs, num_joints)``."""

    @abstractmethod
    def set_joint_position_target(self, target: wp.array, env_ids: wp.array | None = None) -> None:
        """PD position targets, ``(num_envs, num_joints)``."""

    @abstractmethod
    def set_joint_velocity_target(self, target: wp.array, env_ids: wp.array | None = None) -> None:
        """PD velocity targets, ``(num_envs, num_joints)``."""

    @abstractmethod
    def set_joint_effort_target(self, effort: wp.array, env_ids: wp.array | None = None) -> None:
        """Feed-forward joint efforts (N·m or N), ``(num_envs, num_joints)``."""

    @abstractmethod
    def write_joint_properties(self, env_ids: wp.array | None = None, **values: wp.array) -> None:
        """Set some of :data:`JOINT_PROPERTIES` (keyword names), each ``(num_envs, num_joints)``."""

    # -- stepping --------------------------------------------------------------------------------
    @abstractmethod
    def step(self, dt: float) -> None:
        """Advance the simulation by ``dt`` seconds; readers reflect the new state afterwards."""

    def steps(self, count: int, dt: float) -> None:
        """``count`` steps of ``dt`` with the same commands (nothing in between reads or writes): what a policy
        step's ``decimation`` physics steps are when no actuator model computes efforts between them. A backend
        may do them in one call (MuJoCo: one dispatch to its threads instead of ``count``)."""
        for _ in range(count):
            self.step(dt)

    def publish(self) -> None:
        """Refresh every reader's array from the simulation state (what a step's republication reads)."""
        self.root_pose()
        self.root_velocity()
        self.joint_positions()
        self.joint_velocities()
        self.body_poses()
        if self.supports_body_velocities:
            self.body_velocities()

    @abstractmethod
    def reset(self, env_ids: wp.array | None = None) -> None:
        """Restore the initial root state and default joint state of the given environments (all if None)."""

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release engine resources."""
