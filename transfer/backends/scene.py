"""The scene description: the one value through which a backend learns the world around the articulation.

A :class:`SceneDescription` says what the training run's world was: a ground plane and its material, where the
robot spawns and whether its base is fixed, gravity, self-collisions, and each engine's solver settings. Every
backend constructor takes one (``scene=``) and translates it into its engine's terms; nothing above
``transfer/backends/`` names an engine to say the same things. Plain data, no engine imported: the task model
(:mod:`transfer.task`) builds one from a task.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any

from transfer._numbers import finite_number
from transfer.backends import check_settings

__all__ = ["COMBINE_MODES", "DEFAULT_GROUND", "GroundMaterial", "SceneDescription"]

COMBINE_MODES: tuple[str, ...] = ("average", "min", "multiply", "max")
"""How PhysX combines two touching materials' coefficients (``physxMaterial:frictionCombineMode``)."""

"""Newton solvers a scene may name (``auto``: MuJoCo C for one world, MuJoCo-Warp for several)."""


@dataclass(frozen=True)
class GroundMaterial:
    """The ground plane's contact material.

    ``static_friction`` / ``dynamic_friction`` / ``restitution`` as USD's ``PhysicsMaterialAPI``;
    ``friction_combine`` / ``restitution_combine``: how PhysX combines them with a body's material (one of
    :data:`COMBINE_MODES`; with ``multiply`` a body without a material meets PhysX's default 0.5). MuJoCo (Newton's
    MuJoCo solvers) has no combine mode: a contact takes the larger of the two geoms' sliding frictions, the
    ground's being ``dynamic_friction``.
    """

    static_friction: float = 1.0
    dynamic_friction: float = 1.0
    restitution: float = 0.0
    friction_combine: str = "max"
    restitution_combine: str = "max"

    def __post_init__(self) -> None:
        for name in ("static_friction", "dynamic_friction"):
            object.__setattr__(self, name, finite_number(getattr(self, name), f"ground.{name}", 0.0))
        restitution = finite_number(self.restitution, "ground.restitution", 0.0)
        if restitution > 1.0:
            raise ValueError(f"ground.restitution: expected a number in [0, 1], got {restitution}")
        object.__setattr__(self, "restitution", restitution)
        for name in ("friction_combine", "restitution_combine"):
            if getattr(self, name) not in COMBINE_MODES:
                raise ValueError(f"ground.{name}: expected one of {list(COMBINE_MODES)}, got {getattr(self, name)!r}")

    def to_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


DEFAULT_GROUND = GroundMaterial()
"""Friction 1, no bounce, ``max`` combine: what Newton's ground gives (MuJoCo takes the larger of two frictions), so a
robot without materials meets the same friction on both engines."""


@dataclass(frozen=True)
class SceneDescription:
    """What a backend builds around the articulation, as one value (every field optional: ``None`` = as authored).

    Attributes:
        ground: A ground plane at ``ground_height`` (along the stage's up axis) with this material; ``None``: none.
        ground_height: Height of the ground plane (m).
        spawn_height: Height (m) of the root link above the world origin at spawn and after reset, the robot
            upright and otherwise as authored; ``None``: where the asset authors it. ``authored_root_height`` is
            where the asset puts the root link (a backend that moves the whole asset needs the difference).
        gravity: The gravity vector (m/s^2, world frame); ``None``: the asset's scene, else 9.81 down the up axis.
        self_collisions: Whether the articulation's links collide with each other; ``None``: as the asset says
            (``physxArticulation:enabledSelfCollisions``, which both engines read).
        engines: Each engine's own settings, by backend name (``{"physx": {"solver_position_iterations": 4}}``),
            checked by that backend's settings module (:func:`transfer.backends.check_settings`); a backend reads
            its own with :meth:`settings_for`.
        friction_scale: Multiplies the sliding friction of every contact between the robot and the ground (``1``:
            as the materials say). Each engine scales the ground's static and dynamic friction and the robot's
            collision shapes' (under PhysX's ``multiply`` combine, the ground's only), so that whatever rule the
            engine combines two materials by (PhysX's average, min, max; MuJoCo's larger of the two), the contact
            friction is this times the unscaled one. Scaling the ground alone would not do: with Newton's robot
            shapes at friction 1 and MuJoCo taking the larger friction, a slippery ground would change nothing.
        fixed_base: Whether the root link is held to the world. ``True``: a fixed base (PhysX: a fixed-base
            articulation, rooted at a fixed joint from the world to the root link; Newton: a FIXED root joint).
            ``False``: a floating base (PhysX: the root API on the root link and no enabled joint from the world to
            it; Newton: a FREE root joint). ``None``: as the engine builds the asset. The two engines build different
            articulations from some converted MJCF/URDF robots (docs/import.md), so a replay asks for the training
            engine's base (docs/replay.md).
        joint_positions: The position each joint is created at, by DoF name (rad or m; the task's default pose,
            inside the joint's limits): the state the engine starts from, before any physics step and whatever pose
            the asset authors. PhysX creates an articulation in the pose its joint state attributes author, and an
            authored position outside a joint's limits (a Go2 whose calves are at 0 outside [-2.72, -0.84] rad)
            blows it apart at the first step even when the state is written inside the limits before it. ``{}``:
            as authored.
    """

    ground: GroundMaterial | None = None
    ground_height: float = 0.0
    spawn_height: float | None = None
    authored_root_height: float = 0.0
    gravity: tuple[float, float, float] | None = None
    self_collisions: bool | None = None
    engines: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    friction_scale: float = 1.0
    fixed_base: bool | None = None
    joint_positions: Mapping[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(
            self,
            "joint_positions",
            MappingProxyType(
                {
                    str(k): finite_number(v, f"scene.joint_positions[{k!r}]")
                    for k, v in dict(self.joint_positions).items()
                }
            ),
        )
        if self.ground is not None and not isinstance(self.ground, GroundMaterial):
            raise TypeError(f"scene.ground: expected a GroundMaterial or None, got {self.ground!r}")
        object.__setattr__(self, "ground_height", finite_number(self.ground_height, "scene.ground_height"))
        object.__setattr__(
            self, "authored_root_height", finite_number(self.authored_root_height, "scene.authored_root_height")
        )
        if self.spawn_height is not None:
            object.__setattr__(self, "spawn_height", finite_number(self.spawn_height, "scene.spawn_height"))
        if self.gravity is not None:
            g = tuple(finite_number(c, f"scene.gravity[{i}]") for i, c in enumerate(self.gravity))
            if len(g) != 3:
                raise ValueError(f"scene.gravity: expected three numbers (m/s^2), got {self.gravity!r}")
            object.__setattr__(self, "gravity", g)
        if self.self_collisions is not None and not isinstance(self.self_collisions, bool):
            raise TypeError(f"scene.self_collisions: expected true, false or None, got {self.self_collisions!r}")

        if not isinstance(self.engines, Mapping):
            raise TypeError(f"scene.engines: expected a mapping from backend name to settings, got {self.engines!r}")
        object.__setattr__(
            self,
            "engines",
            MappingProxyType({str(k): check_settings(k, v, f"scene.engines.{k}") for k, v in self.engines.items()}),
        )
        object.__setattr__(self, "friction_scale", finite_number(self.friction_scale, "scene.friction_scale", 0.0))
        if self.fixed_base is not None and not isinstance(self.fixed_base, bool):
            raise TypeError(f"scene.fixed_base: expected true, false or None, got {self.fixed_base!r}")

    def settings_for(self, backend: str) -> Mapping[str, Any]:
        """Backend ``backend``'s own settings in this scene (``{}``: its engine's defaults)."""
        return self.engines.get(backend, MappingProxyType({}))

    def scaled_ground(self) -> GroundMaterial | None:
        """The ground's material with :attr:`friction_scale` applied to its static and dynamic friction."""
        if self.ground is None or self.friction_scale == 1.0:
            return self.ground
        g, s = self.ground, self.friction_scale
        return replace(g, static_friction=g.static_friction * s, dynamic_friction=g.dynamic_friction * s)

    @property
    def scales_shape_friction(self) -> bool:
        """Whether an engine that combines materials by the ground's combine mode (PhysX) scales the robot's
        collision shapes' frictions too: :attr:`friction_scale` is not 1 and the mode is not ``multiply`` (where
        scaling the ground alone scales the product). MuJoCo takes the larger friction: Newton always scales both."""
        combine = (self.ground or DEFAULT_GROUND).friction_combine
        return self.friction_scale != 1.0 and combine != "multiply"

    @property
    def spawn_lift(self) -> float:
        """How far (m) the spawn raises the root link above where the asset authors it (0 without a spawn height)."""
        return 0.0 if self.spawn_height is None else self.spawn_height - self.authored_root_height
