"""The perturbation plug-in point: one :class:`PerturbationKind` each, one entry in :data:`PERTURBATIONS`.

A kind says what it changes and when, through the hooks :class:`~transfer.env.PolicyEnv` calls in one place each:

- :meth:`~PerturbationKind.scene`: before the world is built (the engine's side of the contract: the scene
  description every backend builds, e.g. the ground's friction);
- :meth:`~PerturbationKind.start`: once the robot is up (the public-order API: masses, the action pipeline);
- :meth:`~PerturbationKind.gains`: on the joint gains the environment writes (the engines' drives and the explicit
  actuators alike);
- :meth:`~PerturbationKind.check_run` and :meth:`~PerturbationKind.step`: when a run of ``steps`` policy steps
  begins, and before each policy step (a shove at mid-run);
- :meth:`~PerturbationKind.observation`: on the observation terms' values every policy step (sensor noise).

Every run that drives :class:`~transfer.env.PolicyEnv` through :meth:`~transfer.env.PolicyEnv.begin_run` and
:meth:`~transfer.env.PolicyEnv.before_policy_step` honours every kind: replay, ``--compare``, a sweep's cells.
:class:`Perturbation` is the value a run is given: a neutral default for every kind, any of them changed.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from transfer._numbers import is_finite_number

if TYPE_CHECKING:
    from transfer.backends.scene import SceneDescription
    from transfer.env.environment import PolicyEnv
    from transfer.robot import Robot
    from transfer.task import Task

__all__ = ["PERTURBATIONS", "Perturbation", "PerturbationKind"]


class PerturbationKind:
    """One kind of disturbance. Subclasses set :attr:`name`, :attr:`meaning`, :attr:`neutral` (and :attr:`integer`,
    :attr:`minimum`) and override the hooks they need; every hook is called only for a value other than neutral."""

    name: ClassVar[str]
    meaning: ClassVar[str]
    """What a value means, in its unit (``transfer sweep``'s messages and docs/sweep.md)."""
    neutral: ClassVar[float] = 0.0
    integer: ClassVar[bool] = False
    minimum: ClassVar[float | None] = None
    why_minimum: ClassVar[str] = ""

    def __str__(self) -> str:
        return self.meaning

    def check(self, value: Any) -> float | int:
        """``value`` as this kind holds it; raises ``ValueError`` naming the kind and what it expects."""
        where = f"perturbation {self.name}"
        if self.integer:
            if isinstance(value, float) and value.is_integer():
                value = int(value)
            if isinstance(value, bool) or not isinstance(value, int) or value < (self.minimum or 0):
                raise ValueError(
                    f"{where}: expected a whole number >= {self.minimum or 0:g} ({self.meaning}), got {value!r}"
                )
            return int(value)
        if not is_finite_number(value):
            raise ValueError(f"{where}: expected a finite number ({self.meaning}), got {value!r}")
        if self.minimum is not None and value < self.minimum:
            raise ValueError(f"{where}: expected {self.why_minimum or f'a value >= {self.minimum:g}'}, got {value:g}")
        return float(value)

    def scene(self, value: float, scene: SceneDescription) -> SceneDescription:
        """The scene description the engines build, changed (before the world exists)."""
        return scene

    def start(self, value: float, env: PolicyEnv) -> None:
        """Change the robot once it is up (after the task's joint properties are written)."""

    def gains(self, value: float, rows: dict[str, np.ndarray], env: PolicyEnv) -> dict[str, np.ndarray]:
        """The joint property rows (public order, by property name) the environment writes, changed."""
        return rows

    def check_run(self, value: float, task: Task, steps: int) -> None:
        """Refuse a run of ``steps`` policy steps of ``task`` this value makes meaningless (``ValueError``): asked by
        the env when a run begins and by a sweep's spec before any cell runs."""

    def check_robot(self, value: float, robot: Robot) -> None:
        """Refuse a value ``robot`` cannot take (``ValueError``), before any engine starts: asked by a replay and by a
        sweep's spec for each checkpoint's robot."""

    def step(self, value: float, env: PolicyEnv, step: int, steps: int) -> None:
        """Act before policy step ``step`` of ``steps``."""

    def observation(self, value: float, env: PolicyEnv, frames: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """The observation terms' raw values (``{term: (num_envs, size)}``, before clip, scale and history) as the
        policy will read them this step."""
        return frames


class GroundFriction(PerturbationKind):
    name = "ground_friction"
    meaning = "scale of the friction at the ground contact (1: as the task says)"
    neutral, minimum, why_minimum = 1.0, 0.0, "a scale >= 0 (1 changes nothing)"

    def scene(self, value: float, scene: SceneDescription) -> SceneDescription:
        import dataclasses

        return dataclasses.replace(scene, friction_scale=value)


class AddedBaseMass(PerturbationKind):
    name = "added_base_mass"
    meaning = "kg added to the base (root link); its inertia scales with its mass"

    def check_robot(self, value: float, robot: Robot) -> None:
        root = robot.members().root_body  # the base: the root link the articulation elects
        mass = robot.base_mass(root)
        if mass is not None and mass + value <= 0:
            raise ValueError(_too_light(value, root.rsplit("/", 1)[-1], mass))

    def start(self, value: float, env: PolicyEnv) -> None:
        art = env.art
        root = art.body_names.index(art.backend_body_names[0])
        mass = art.body_masses()[:, [root]]
        if (mass + value <= 0).any():
            raise ValueError(_too_light(value, art.body_names[root], float(mass.min())))
        art.write_body_masses(mass + np.float32(value), body_ids=[root])


def _too_light(value: float, base: str, mass: float) -> str:
    return (
        f"perturbation added_base_mass {value:g} kg: the base ({base}) weighs {mass:g} kg; the sum must stay "
        f"above 0: give a value above {-mass:g}"
    )


class GainScale(PerturbationKind):
    name = "gain_scale"
    meaning = "scale of every joint's stiffness and damping (engine drives and explicit actuators alike)"
    neutral, minimum, why_minimum = 1.0, 0.0, "a scale >= 0 (1 changes nothing)"

    def gains(self, value: float, rows: dict[str, np.ndarray], env: PolicyEnv) -> dict[str, np.ndarray]:
        d = env.art.data  # the task's gains, else the asset's as the engine holds them
        for key, engine in (("stiffness", d.joint_stiffness), ("damping", d.joint_damping)):
            rows[key] = (rows[key] if key in rows else engine.numpy()[0].astype(np.float32)) * np.float32(value)
        return rows


class ActionDelay(PerturbationKind):
    name = "action_delay"
    meaning = "physics steps between the policy's action and its target reaching the joints"
    neutral, integer = 0, True

    def start(self, value: float, env: PolicyEnv) -> None:
        env.delay_actions(int(value))

    def check_run(self, value: float, task: Task, steps: int) -> None:
        if value >= steps * task.decimation:
            raise ValueError(
                f"perturbation action_delay: {value:g} physics steps, but the run has "
                f"{steps * task.decimation}: no action would ever reach the joints; give a shorter "
                "delay or a longer run"
            )


class Push(PerturbationKind):
    name = "push"
    meaning = "m/s added once to the base velocity, sideways (left of the command), at mid-run"

    def step(self, value: float, env: PolicyEnv, step: int, steps: int) -> None:
        if step == steps // 2:
            planar = np.asarray(env.command[0][:2], np.float64)
            norm = float(np.linalg.norm(planar))
            direction = planar / norm if norm > 1e-6 else np.array([1.0, 0.0])
            env.push((-direction[1] * value, direction[0] * value, 0.0))


class ObservationNoise(PerturbationKind):
    name = "obs_noise"
    meaning = (
        "scale of each observation term's training noise (Isaac Lab's uniform ranges, e.g. +-0.01 rad on "
        "joint positions, +-1.5 rad/s on joint velocities), drawn anew every policy step"
    )
    neutral, minimum, why_minimum = 0.0, 0.0, "a scale >= 0 (0 adds none, 1 the noise a policy is trained with)"

    def observation(self, value: float, env: PolicyEnv, frames: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        from transfer.task.terms import OBS_TERMS  # the task's table: the command line lists kinds without it

        out = dict(frames)
        for name, x in frames.items():
            noise = OBS_TERMS[name].noise * value
            if noise:
                out[name] = x + env.noise_source.uniform(-noise, noise, np.shape(x)).astype(np.float32)
        return out


PERTURBATIONS: Mapping[str, PerturbationKind] = MappingProxyType(
    {k.name: k for k in (GroundFriction(), AddedBaseMass(), GainScale(), ActionDelay(), Push(), ObservationNoise())}
)
"""Every kind of disturbance, by name (a new kind: one class, one entry)."""
KINDS = ", ".join(PERTURBATIONS)
"""The kinds by name, as every command's help lists them."""


class Perturbation(Mapping[str, float]):
    """The disturbances a run is put under: a value for every kind of :data:`PERTURBATIONS` (neutral unless given),
    read by name (``p["push"]``, ``p.push``). Immutable and hashable."""

    __slots__ = ("_values",)

    def __init__(self, **values: Any) -> None:
        unknown = sorted(set(values) - set(PERTURBATIONS))
        if unknown:
            raise ValueError(f"perturbation: unknown {unknown}; known: {', '.join(PERTURBATIONS)}")
        checked = {n: k.check(values[n]) if n in values else k.neutral for n, k in PERTURBATIONS.items()}
        object.__setattr__(self, "_values", MappingProxyType(checked))

    @classmethod
    def from_dict(cls, values: Mapping[str, Any] | None) -> Perturbation:
        """A perturbation from ``{name: value}`` (names of :data:`PERTURBATIONS`; missing ones neutral)."""
        return cls(**dict(values or {}))

    def to_dict(self) -> dict[str, Any]:
        return dict(self._values)

    def active(self) -> list[tuple[PerturbationKind, float]]:
        """``(kind, value)`` of every kind changed from neutral, in :data:`PERTURBATIONS` order."""
        return [(k, self._values[n]) for n, k in PERTURBATIONS.items() if self._values[n] != k.neutral]

    @property
    def neutral(self) -> bool:
        """Whether nothing is disturbed."""
        return not self.active()

    def __getattr__(self, name: str) -> Any:
        try:
            return object.__getattribute__(self, "_values")[name]
        except KeyError:
            raise AttributeError(name) from None

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("Perturbation is immutable")

    def __getitem__(self, name: str) -> float:
        return self._values[name]

    def __iter__(self):
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Perturbation) and dict(self._values) == dict(other._values)

    def __hash__(self) -> int:
        return hash(tuple(self._values.items()))

    def __repr__(self) -> str:
        changed = ", ".join(f"{k.name}={v!r}" for k, v in self.active())
        return f"Perturbation({changed})"
