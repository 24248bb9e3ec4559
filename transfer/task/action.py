"""The action term of a task: how a policy's action becomes joint targets (Isaac Lab's ``JointPositionAction``),
by joint name (:class:`ActionTerm`)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from transfer.task._checks import TaskError, _freeze, _names, _number, _text, _values
from transfer.task.names import expand_joint_values

__all__ = ["ACTION_KINDS", "ActionTerm"]

ACTION_KINDS: tuple[str, ...] = ("joint_position",)
"""Action kinds a task may name. ``joint_position``: target = default (if offset) + scale * action."""
MAX_ACTION_SCALE = 100.0
"""The largest action scale a task may give (a joint target moves ``scale`` rad or m per unit of action)."""


@dataclass(frozen=True)
class ActionTerm:
    """The action term. ``joint_position``: target = ``clip(offset + scale * clip(action, ±clip_actions), *clip)``,
    where ``offset`` is the default joint positions when ``use_default_offset`` (Isaac Lab's ``JointPositionAction``).

    ``scale`` and ``offset``: one number for every joint, or a mapping by joint name or full-match pattern (Isaac Lab's
    and mjlab's per-joint values; :meth:`Task.with_joint_names` expands them to one value per action joint).
    ``clip``: ``[low, high]`` for every joint's target, or ``{joint or pattern: [low, high]}`` (Isaac Lab's
    ``JointPositionAction.clip``, on the processed action); ``None``: none. ``clip_actions``: the bound of the raw
    action before it is scaled (legged_gym's ``normalization.clip_actions``, the RSL-RL wrapper's ``clip_actions``);
    the clipped action is what ``last_action`` observes. ``joints``: the joints the action drives, by name or
    full-match pattern, in the task's joint order; ``None`` means every joint. Until :meth:`Task.with_joint_names`
    expands them, patterns do not say how many there are.
    """

    kind: str = "joint_position"
    scale: float | Mapping[str, float] = 1.0
    use_default_offset: bool = True
    joints: tuple[str, ...] | None = None
    offset: float | Mapping[str, float] = 0.0
    clip: tuple[float, float] | Mapping[str, tuple[float, float]] | None = None
    clip_actions: float | None = None

    def __post_init__(self) -> None:
        if self.kind not in ACTION_KINDS:
            raise TaskError(f"action.kind: unknown kind {self.kind!r}; known kinds: {list(ACTION_KINDS)}")
        if not isinstance(self.use_default_offset, bool):
            raise TaskError(f"action.use_default_offset: expected true or false, got {self.use_default_offset!r}")
        scale = _per_joint_or_number(self.scale, "action.scale")
        if not any(scale.values() if isinstance(scale, Mapping) else (scale,)):
            raise TaskError(
                f"action.scale: {dict(scale) if isinstance(scale, Mapping) else scale} makes every action a no-op (the "
                "target never leaves the defaults); give the scale the policy was trained with (Isaac Lab's legged "
                "robots: 0.25 or 0.5)"
            )
        values = scale.values() if isinstance(scale, Mapping) else (scale,)
        if any(v < 0 for v in values):
            raise TaskError(
                f"action.scale: {dict(scale) if isinstance(scale, Mapping) else scale} is negative: every action would "
                "drive its joint the other way (target = offset + scale x action); give the scale the policy was "
                "trained with, >= 0 (Isaac Lab's legged robots: 0.25 or 0.5)"
            )
        if any(abs(v) > MAX_ACTION_SCALE for v in values):
            raise TaskError(
                f"action.scale: {dict(scale) if isinstance(scale, Mapping) else scale} is more than {MAX_ACTION_SCALE:g} "
                "(rad or m of target per unit of action): no policy is trained so; give the scale it was trained "
                "with (Isaac Lab's legged robots: 0.25 or 0.5)"
            )
        object.__setattr__(self, "scale", scale)
        offset = _per_joint_or_number(self.offset, "action.offset")
        if self.use_default_offset and any(offset.values() if isinstance(offset, Mapping) else (offset,)):
            raise TaskError(
                f"action.offset {dict(offset) if isinstance(offset, Mapping) else offset} with "
                "use_default_offset: true; the default joint positions are the offset then (Isaac Lab "
                "ignores offset): set use_default_offset: false to add this offset instead"
            )
        object.__setattr__(self, "offset", offset)
        object.__setattr__(self, "clip", _action_clip(self.clip))
        if self.clip_actions is not None:
            bound = _number(self.clip_actions, "action.clip_actions")
            if bound <= 0:
                raise TaskError(f"action.clip_actions: {bound}; the raw-action bound is > 0 (legged_gym: 100), or null")
            object.__setattr__(self, "clip_actions", bound)
        if self.joints is not None:
            object.__setattr__(self, "joints", _names(self.joints, "action.joints"))

    def __hash__(self) -> int:
        return hash(
            (
                self.kind,
                _freeze(self.scale),
                self.use_default_offset,
                self.joints,
                _freeze(self.offset),
                _freeze(self.clip),
                self.clip_actions,
            )
        )

    def scale_vector(self, joint_names: Sequence[str]) -> float | tuple[float, ...]:
        """The scale for actions over ``joint_names`` (the action's joints, in action order): the number, or one
        value per joint read from the expanded mapping by name (:meth:`Task.with_joint_names` expands it)."""
        return _vector(self.scale, joint_names, "action.scale")

    def offset_vector(self, joint_names: Sequence[str]) -> float | tuple[float, ...]:
        """The constant offset over ``joint_names`` (used when not ``use_default_offset``), as :meth:`scale_vector`."""
        return _vector(self.offset, joint_names, "action.offset")

    def clip_vectors(self, joint_names: Sequence[str]) -> tuple[Any, Any] | None:
        """``(low, high)`` target bounds over ``joint_names`` (numbers, or one per joint: ±inf where a mapping names
        none), or ``None`` without a clip."""
        if self.clip is None:
            return None
        if not isinstance(self.clip, Mapping):
            return self.clip
        inf = float("inf")
        return (
            tuple(self.clip.get(n, (-inf, inf))[0] for n in joint_names),
            tuple(self.clip.get(n, (-inf, inf))[1] for n in joint_names),
        )

    def expanded(self, names: Sequence[str], src: str) -> ActionTerm:
        """This term with its joints and every per-joint mapping expanded on ``names`` (the task's joint order)."""
        action = self
        if action.joints is not None:
            picked = expand_joint_values(
                dict.fromkeys(action.joints, 0.0), names, field="action.joints", source=src, require_all=False
            )
            action = dataclasses.replace(action, joints=tuple(picked))
        driven = names if action.joints is None else action.joints
        changes: dict[str, Any] = {}
        for key in ("scale", "offset"):
            if isinstance(getattr(action, key), Mapping):
                changes[key] = expand_joint_values(getattr(action, key), driven, field=f"action.{key}", source=src)
        if isinstance(action.clip, Mapping):
            bounds = [
                expand_joint_values(
                    {k: v[i] for k, v in action.clip.items()},
                    driven,
                    field="action.clip",
                    source=src,
                    require_all=False,
                )
                for i in (0, 1)
            ]
            changes["clip"] = {n: (bounds[0][n], bounds[1][n]) for n in bounds[0]}
        return dataclasses.replace(action, **changes) if changes else action

    def to_dict(self) -> dict[str, Any]:
        plain = lambda v: dict(v) if isinstance(v, Mapping) else v  # noqa: E731
        clip = self.clip
        clip = (
            {k: list(v) for k, v in clip.items()} if isinstance(clip, Mapping) else None if clip is None else list(clip)
        )
        return {
            "kind": self.kind,
            "scale": plain(self.scale),
            "use_default_offset": self.use_default_offset,
            "joints": None if self.joints is None else list(self.joints),
            "offset": plain(self.offset),
            "clip": clip,
            "clip_actions": self.clip_actions,
        }


def _per_joint_or_number(value: Any, where: str) -> float | Mapping[str, float]:
    if isinstance(value, Mapping):
        out = _values(value, where)
        if not out:
            raise TaskError(f"{where}: an empty mapping; give a number or {{joint name or pattern: number}}")
        return out
    return _number(value, where)


def _vector(value: float | Mapping[str, float], joint_names: Sequence[str], where: str) -> float | tuple[float, ...]:
    if not isinstance(value, Mapping):
        return value
    missing = [n for n in joint_names if n not in value]
    if missing:
        raise TaskError(f"{where} names no value for {missing}: expand the task for its joints first")
    return tuple(value[n] for n in joint_names)


def _bounds(value: Any, where: str) -> tuple[float, float]:
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence) or len(value) != 2:
        raise TaskError(f"{where}: expected [low, high], got {value!r}")
    lo, hi = _number(value[0], f"{where}[0]"), _number(value[1], f"{where}[1]")
    if lo > hi:
        raise TaskError(f"{where}: low {lo} is above high {hi}")
    return lo, hi


def _action_clip(value: Any) -> Any:
    if value is None:
        return None
    if isinstance(value, Mapping):
        if not value:
            raise TaskError("action.clip: an empty mapping; give [low, high], {joint or pattern: [low, high]} or null")
        out = MappingProxyType(
            {_text(k, "action.clip key"): _bounds(v, f"action.clip[{k!r}]") for k, v in value.items()}
        )
        if all(lo == hi for lo, hi in out.values()):
            raise TaskError(
                f"action.clip: {dict(out)} holds every target it names at one value: the policy would "
                "move nothing; give [low, high] with low < high, or null"
            )
        return out
    lo, hi = _bounds(value, "action.clip")
    if lo == hi:
        raise TaskError(
            f"action.clip: [{lo:g}, {hi:g}] holds every joint's target at {lo:g}: the policy would move "
            "nothing; give [low, high] with low < high, or null"
        )
    return lo, hi
