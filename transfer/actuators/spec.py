"""Actuator models as plain values: what a task says about how its joints were driven in training.

One :class:`ActuatorGroup` names a model (:data:`ACTUATOR_MODELS`, Isaac Lab's classes in our words) and the joints
it drives (names or full-match patterns). The PD gains and the effort limit are the task's per-joint ``stiffness``,
``damping`` and ``effort_limit``; the group carries only what its model adds (the DC motor's torque-speed curve, the
delay range, the network file and its input scaling). Joints no group names are implicit.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from types import MappingProxyType
from typing import Any

from transfer._numbers import is_finite_number

__all__ = ["ACTUATOR_MODELS", "EXPLICIT_MODELS", "ISAACLAB_CLASSES", "ActuatorError", "ActuatorGroup"]

ACTUATOR_MODELS: Mapping[str, str] = MappingProxyType(
    {
        "implicit": "the engine's own PD drive (Isaac Lab's ImplicitActuator)",
        "ideal_pd": "explicit PD + feed-forward, clipped to +-effort_limit (IdealPDActuator)",
        "dc_motor": "explicit PD, then the DC motor's torque-speed box (DCMotor)",
        "delayed_pd": "explicit PD on targets delayed by min_delay..max_delay physics steps (DelayedPDActuator)",
        "mlp": "an MLP actuator network on position-error and velocity history, DC-clipped (ActuatorNetMLP)",
        "lstm": "an LSTM actuator network on position error and velocity, DC-clipped (ActuatorNetLSTM)",
    }
)
"""The actuator models a task may name, and what each does every physics step."""

EXPLICIT_MODELS: tuple[str, ...] = tuple(m for m in ACTUATOR_MODELS if m != "implicit")
"""Models whose torque :class:`~transfer.actuators.Actuators` computes (the engine's drive is turned off)."""

ISAACLAB_CLASSES: Mapping[str, str] = MappingProxyType(
    {
        "ImplicitActuator": "implicit",
        "IdealPDActuator": "ideal_pd",
        "DCMotor": "dc_motor",
        "DelayedPDActuator": "delayed_pd",
        "ActuatorNetMLP": "mlp",
        "ActuatorNetLSTM": "lstm",
    }
)
"""Isaac Lab's actuator class names (``isaaclab.actuators``) -> our model names."""

_DC = ("dc_motor", "mlp", "lstm")
_NETS = ("mlp", "lstm")


class ActuatorError(ValueError):
    """An actuator group is malformed or names what cannot be replayed."""


def _number(value: Any, where: str, minimum: float | None = None, positive: bool = False) -> float:
    if not is_finite_number(value):
        raise ActuatorError(f"{where}: expected a finite number, got {value!r}")
    if minimum is not None and value < minimum:
        raise ActuatorError(f"{where}: expected a number >= {minimum}, got {value!r}")
    if positive and value <= 0:
        raise ActuatorError(f"{where}: expected a positive number, got {value!r}")
    return float(value)


def _steps(value: Any, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ActuatorError(f"{where}: expected a whole number of physics steps >= 0, got {value!r}")
    return int(value)


@dataclass(frozen=True)
class ActuatorGroup:
    """Joints driven by one actuator model.

    Attributes:
        name: The group's name (Isaac Lab's key in ``actuators``).
        model: One of :data:`ACTUATOR_MODELS`.
        joints: Joint names or full-match regular expressions (expanded on the asset with the task's rules).
        saturation_effort: ``dc_motor`` / nets: the stall torque (N·m) of the torque-speed curve.
        velocity_limit: ``dc_motor`` / nets: the no-load speed (rad/s) of the torque-speed curve.
        min_delay, max_delay: ``delayed_pd``: each env's delay is drawn in ``[min_delay, max_delay]`` physics steps
            at every reset.
        network_file: nets: a TorchScript file (Isaac Lab's ``network_file``), a local path.
        input_order, input_idx, pos_scale, vel_scale, torque_scale: ``mlp``: Isaac Lab's input layout and scaling.
    """

    name: str
    model: str
    joints: tuple[str, ...]
    saturation_effort: float | None = None
    velocity_limit: float | None = None
    min_delay: int = 0
    max_delay: int = 0
    network_file: str | None = None
    input_order: str = "pos_vel"
    input_idx: tuple[int, ...] = (0,)
    pos_scale: float = 1.0
    vel_scale: float = 1.0
    torque_scale: float = 1.0

    def __post_init__(self) -> None:
        where = f"actuators.{self.name}"
        if not isinstance(self.name, str) or not self.name:
            raise ActuatorError(f"actuators: a group needs a non-empty name, got {self.name!r}")
        if self.model not in ACTUATOR_MODELS:
            raise ActuatorError(
                f"{where}.model: unknown model {self.model!r}; known: "
                + ", ".join(f"{k} ({v})" for k, v in ACTUATOR_MODELS.items())
            )
        joints = self.joints
        if isinstance(joints, str):
            joints = (joints,)
        if not isinstance(joints, Sequence) or not joints or not all(isinstance(j, str) and j for j in joints):
            raise ActuatorError(f"{where}.joints: expected a non-empty list of joint names or patterns, got {joints!r}")
        put = object.__setattr__
        put(self, "joints", tuple(joints))
        if self.model in _DC:
            for name in ("saturation_effort", "velocity_limit"):
                if getattr(self, name) is None:
                    raise ActuatorError(f"{where}.{name}: the {self.model} model needs it (the torque-speed curve)")
            put(self, "saturation_effort", _number(self.saturation_effort, f"{where}.saturation_effort", positive=True))
            put(self, "velocity_limit", _number(self.velocity_limit, f"{where}.velocity_limit", positive=True))
        put(self, "min_delay", _steps(self.min_delay, f"{where}.min_delay"))
        put(self, "max_delay", _steps(self.max_delay, f"{where}.max_delay"))
        if self.min_delay > self.max_delay:
            raise ActuatorError(f"{where}: min_delay {self.min_delay} is above max_delay {self.max_delay}")
        if self.model in _NETS:
            if not isinstance(self.network_file, str) or not self.network_file:
                raise ActuatorError(f"{where}.network_file: the {self.model} model needs its network (a local file)")
        if self.input_order not in ("pos_vel", "vel_pos"):
            raise ActuatorError(f"{where}.input_order: expected 'pos_vel' or 'vel_pos', got {self.input_order!r}")
        idx = self.input_idx
        if isinstance(idx, int) or not isinstance(idx, Sequence) or not idx:
            raise ActuatorError(f"{where}.input_idx: expected a non-empty list of history indices, got {idx!r}")
        put(self, "input_idx", tuple(_steps(i, f"{where}.input_idx[{k}]") for k, i in enumerate(idx)))
        for name in ("pos_scale", "vel_scale", "torque_scale"):
            put(self, name, _number(getattr(self, name), f"{where}.{name}"))

        # Fields the model does not use are reset to their defaults: equal groups are equal values.
        for f in fields(self):
            if f.name not in self._used() and getattr(self, f.name) != f.default:
                put(self, f.name, f.default)

    def _used(self) -> set[str]:
        keep = {"name", "model", "joints"}
        if self.model in _DC:
            keep |= {"saturation_effort", "velocity_limit"}
        if self.model == "delayed_pd":
            keep |= {"min_delay", "max_delay"}
        if self.model in _NETS:
            keep |= {"network_file"}
        if self.model == "mlp":
            keep |= {"input_order", "input_idx", "pos_scale", "vel_scale", "torque_scale"}
        return keep

    @property
    def explicit(self) -> bool:
        """Whether the torque is computed here (the engine's drive is turned off for these joints)."""
        return self.model != "implicit"

    def network_path(self, base: str | Path | None = None) -> Path:
        """The network file as a path (relative paths against ``base``), checked to exist.

        Raises:
            ActuatorError: no network, or the file is not there (a URL or a Nucleus path is not fetched).
        """
        if self.network_file is None:
            raise ActuatorError(f"actuators.{self.name}: the {self.model} model has no network file")
        path = Path(self.network_file).expanduser()
        if base is not None and not path.is_absolute():
            path = Path(base) / path
        if not path.is_file():
            raise ActuatorError(
                f"actuators.{self.name}.network_file: {self.network_file} is not a local file (transfer never "
                "downloads one). Download the network and set network_file to its path (in a task file: actuators)."
            )
        return path

    def to_dict(self) -> dict[str, Any]:
        """The group's fields as plain data, only those its model uses (besides name, model and joints)."""
        keep = self._used()
        out = {f.name: getattr(self, f.name) for f in fields(self) if f.name in keep}
        out["joints"] = list(self.joints)
        if "input_idx" in out:
            out["input_idx"] = list(self.input_idx)
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], where: str = "actuators") -> ActuatorGroup:
        """A group from :meth:`to_dict`'s form; unknown keys are refused naming them."""
        if not isinstance(data, Mapping):
            raise ActuatorError(f"{where}: expected a mapping (name, model, joints, ...), got {data!r}")
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(map(str, data)) - known)
        if unknown:
            raise ActuatorError(f"{where}: unknown keys {unknown}; known: {sorted(known)}")
        missing = [k for k in ("name", "model", "joints") if k not in data]
        if missing:
            raise ActuatorError(f"{where}: missing {missing}")
        return cls(**dict(data))
