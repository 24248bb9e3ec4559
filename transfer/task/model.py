"""The task value: observation terms, action term, defaults, gains and simulation settings, by joint name.

Everything here is plain data and pure functions (numpy is not even needed): the readers in
:mod:`transfer.task.readers` build a :class:`Task`, and everything downstream (the environment, replay,
convert, checkpoint metadata) takes only that value.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Literal

from transfer.ordering import OrderingConvention, parse_ordering
from transfer.task._checks import (
    CONVENTIONS,
    TaskError,
    _convention,
    _freeze,
    _integer,
    _is_pattern,
    _names,
    _newton,
    _number,
    _physx,
    _text,
    _values,
)
from transfer.task.names import check_listed_order, expand_joint_values

__all__ = [
    "ACTION_KINDS",
    "FLAT_VELOCITY_OBSERVATION",
    "OBS_TERMS",
    "TASK_FORMAT",
    "ActionTerm",
    "KnownTerm",
    "ObsTerm",
    "Task",
]

TASK_FORMAT = "transfer-task/1"
"""The ``format`` marker of the project's task files and of :meth:`Task.to_dict` (bump on incompatible change)."""

Axis = Literal["joint", "body", "none"]
AXES: tuple[str, ...] = ("joint", "body", "none")
ACTION_KINDS: tuple[str, ...] = ("joint_position",)
"""Action kinds a task may name. ``joint_position``: target = default (if offset) + scale * action."""


@dataclass(frozen=True)
class KnownTerm:
    """What the registry knows about an observation term: the axis it indexes and, for ``none``, its size."""

    axis: Axis
    size: int | None
    doc: str


OBS_TERMS: Mapping[str, KnownTerm] = MappingProxyType(
    {
        "base_lin_vel": KnownTerm("none", 3, "root linear velocity in the base frame (m/s)"),
        "base_ang_vel": KnownTerm("none", 3, "root angular velocity in the base frame (rad/s)"),
        "projected_gravity": KnownTerm("none", 3, "unit gravity direction in the base frame"),
        "velocity_commands": KnownTerm("none", 3, "commanded vx, vy (m/s, base frame) and yaw rate wz (rad/s)"),
        "joint_pos_rel": KnownTerm("joint", None, "joint position minus the default joint position"),
        "joint_vel_rel": KnownTerm("joint", None, "joint velocity minus the default joint velocity (0)"),
        "last_action": KnownTerm("joint", None, "the previous raw action (action-sized: the action term's joints)"),
        "joint_pos": KnownTerm("joint", None, "joint position (absolute, rad or m)"),
        "joint_vel": KnownTerm("joint", None, "joint velocity (absolute)"),
    }
)
"""Observation terms by name (Isaac Lab's names). Joint terms follow the articulation's joint count, except
``last_action``, which follows the action term (all joints unless it names some)."""


def _known_terms() -> str:
    return ", ".join(f"{n} ({t.axis}{'' if t.size is None else f', {t.size}'})" for n, t in OBS_TERMS.items())


# ---------------------------------------------------------------------------------------------------- terms


@dataclass(frozen=True)
class ObsTerm:
    """One observation term, in the order the checkpoint reads them.

    ``axis``: what the term's entries index. ``joint`` and ``body`` terms follow the articulation (their size is
    resolved from the asset; a declared ``size`` is checked then); ``none`` terms have a fixed size. ``axis`` and
    ``size`` default to the registry's (:data:`OBS_TERMS`); an unknown name is an error listing the known ones.
    The value fed to the policy is ``clip(raw, *clip) * scale`` (Isaac Lab's order: clip, then scale).
    """

    name: str
    size: int | None = None
    axis: Axis | None = None
    scale: float = 1.0
    clip: tuple[float, float] | None = None

    def __post_init__(self) -> None:
        known = OBS_TERMS.get(self.name) if isinstance(self.name, str) else None
        if known is None:
            raise TaskError(f"unknown observation term {self.name!r}; known terms: {_known_terms()}")
        where = f"observation term {self.name!r}"
        axis = known.axis if self.axis is None else self.axis
        if axis != known.axis:
            raise TaskError(f"{where}: axis {self.axis!r} given, but this term indexes {known.axis!r}")
        size = self.size
        if size is not None:
            size = _integer(size, f"{where}: size", 1)
        if known.size is not None:
            if size is not None and size != known.size:
                raise TaskError(f"{where}: size {size} given, but this term has {known.size} entries")
            size = known.size
        clip = self.clip
        if clip is not None:
            if isinstance(clip, (str, bytes)) or not isinstance(clip, Sequence) or len(clip) != 2:
                raise TaskError(f"{where}: clip must be [low, high] or null, got {clip!r}")
            clip = (_number(clip[0], f"{where}: clip[0]"), _number(clip[1], f"{where}: clip[1]"))
            if clip[0] > clip[1]:
                raise TaskError(f"{where}: clip low {clip[0]} is above high {clip[1]}")
        object.__setattr__(self, "axis", axis)
        object.__setattr__(self, "size", size)
        object.__setattr__(self, "scale", _number(self.scale, f"{where}: scale"))
        object.__setattr__(self, "clip", clip)

    def resolved_size(self, num_joints: int, num_bodies: int | None, action_size: int) -> int:
        """The term's entry count on an articulation with ``num_joints`` joints and ``num_bodies`` bodies."""
        if self.axis == "none":
            return int(self.size)  # type: ignore[arg-type]
        if self.axis == "body":
            if num_bodies is None:
                raise TaskError(f"observation term {self.name!r} indexes bodies: pass num_bodies")
            n = num_bodies
        else:
            n = action_size if self.name == "last_action" else num_joints
        if self.size is not None and self.size != n:
            raise TaskError(f"observation term {self.name!r} declares {self.size} entries, the articulation gives {n}")
        return n

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "size": self.size, "axis": self.axis, "scale": self.scale,
                "clip": None if self.clip is None else list(self.clip)}  # fmt: skip


@dataclass(frozen=True)
class ActionTerm:
    """The action term. ``joint_position``: target = default (when ``use_default_offset``) + ``scale`` * action.

    ``joints``: the joints the action drives, by name or full-match pattern, in the task's joint order; ``None``
    means every joint. Until :meth:`Task.with_joint_names` expands them, patterns do not say how many there are.
    """

    kind: str = "joint_position"
    scale: float = 1.0
    use_default_offset: bool = True
    joints: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        if self.kind not in ACTION_KINDS:
            raise TaskError(f"action.kind: unknown kind {self.kind!r}; known kinds: {list(ACTION_KINDS)}")
        if not isinstance(self.use_default_offset, bool):
            raise TaskError(f"action.use_default_offset: expected true or false, got {self.use_default_offset!r}")
        object.__setattr__(self, "scale", _number(self.scale, "action.scale"))
        if self.joints is not None:
            object.__setattr__(self, "joints", _names(self.joints, "action.joints"))

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "scale": self.scale, "use_default_offset": self.use_default_offset,
                "joints": None if self.joints is None else list(self.joints)}  # fmt: skip


FLAT_VELOCITY_OBSERVATION: tuple[ObsTerm, ...] = tuple(
    ObsTerm(n)
    for n in ("base_lin_vel", "base_ang_vel", "projected_gravity", "velocity_commands")
    + ("joint_pos_rel", "joint_vel_rel", "last_action")
)
"""Isaac Lab's flat-terrain velocity-tracking policy observation (48 entries for 12 joints), unscaled."""


# ---------------------------------------------------------------------------------------------------- task

_MAPPING_FIELDS = ("default_joint_pos", "stiffness", "damping", "armature")
_REQUIRED = ("observation", "action", "default_joint_pos", "sim_dt", "decimation")


@dataclass(frozen=True)
class Task:
    """What a checkpoint needs from the world, named by joint and body, never by column.

    Mappings (``default_joint_pos``, gains, ``effort_limit``) are keyed by joint name or full-match pattern
    (:func:`expand_joint_values`); :meth:`with_joint_names` expands them for one asset. ``joint_names``: the order
    the checkpoint's joint vectors follow, when the source lists it; ``convention``: the named convention of
    that order (``physx`` / ``mjwarp`` / ``robot_schema``); ``joint_names_by_convention``: orders a source lists
    for several conventions (Newton's policy YAML lists two), chosen by :meth:`with_convention`.
    ``physx``: ``solver_position_iterations``, ``solver_velocity_iterations``; ``newton``: ``solver``,
    ``solver_options``. ``command``: (vx, vy, wz). ``asset``: a path or a ``newton:<name>`` token
    (:func:`transfer.task.resolve_asset`). ``source``: where the task was read from (for messages; not compared,
    not in :meth:`to_dict`).
    """

    name: str
    observation: tuple[ObsTerm, ...]
    action: ActionTerm
    joint_names: tuple[str, ...] | None = None
    convention: str | None = None
    default_joint_pos: Mapping[str, float] = field(default_factory=dict)
    stiffness: Mapping[str, float] = field(default_factory=dict)
    damping: Mapping[str, float] = field(default_factory=dict)
    armature: Mapping[str, float] = field(default_factory=dict)
    effort_limit: Mapping[str, float] | None = None
    sim_dt: float = 0.005
    decimation: int = 4
    physx: Mapping[str, int] = field(default_factory=dict)
    newton: Mapping[str, Any] = field(default_factory=dict)
    spawn_height: float | None = None
    command: tuple[float, float, float] = (0.0, 0.0, 0.0)
    asset: str | None = None
    trained_on: str | None = None
    joint_names_by_convention: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    source: str | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        put = object.__setattr__
        put(self, "name", _text(self.name, "name"))
        obs = self.observation
        if isinstance(obs, (str, bytes)) or not isinstance(obs, Iterable):
            raise TaskError(f"observation: expected a list of terms, got {obs!r}")
        obs = tuple(obs)
        if not obs or not all(isinstance(t, ObsTerm) for t in obs):
            raise TaskError("observation: expected a non-empty list of ObsTerm")
        dup = sorted({t.name for t in obs if [u.name for u in obs].count(t.name) > 1})
        if dup:
            raise TaskError(f"observation: terms listed twice: {dup}")
        put(self, "observation", obs)
        if not isinstance(self.action, ActionTerm):
            raise TaskError(f"action: expected an ActionTerm, got {self.action!r}")
        if self.joint_names is not None:
            put(self, "joint_names", _names(self.joint_names, "joint_names"))
        put(self, "convention", _convention(self.convention, "convention"))
        for name in _MAPPING_FIELDS:
            put(self, name, _values(getattr(self, name), name))
        if self.effort_limit is not None:
            put(self, "effort_limit", _values(self.effort_limit, "effort_limit"))
        put(self, "sim_dt", _number(self.sim_dt, "sim_dt"))
        if self.sim_dt <= 0:
            raise TaskError(f"sim_dt: expected a positive time step (s), got {self.sim_dt}")
        put(self, "decimation", _integer(self.decimation, "decimation", 1))
        put(self, "physx", _physx(self.physx, "physx"))
        put(self, "newton", _newton(self.newton, "newton"))
        if self.spawn_height is not None:
            put(self, "spawn_height", _number(self.spawn_height, "spawn_height"))
        cmd = self.command
        if isinstance(cmd, (str, bytes)) or not isinstance(cmd, Sequence) or len(cmd) != 3:
            raise TaskError(f"command: expected [vx, vy, wz], got {cmd!r}")
        put(self, "command", tuple(_number(c, f"command[{i}]") for i, c in enumerate(cmd)))
        for name in ("asset", "trained_on", "source"):
            if getattr(self, name) is not None:
                _text(getattr(self, name), name)
        by = self.joint_names_by_convention
        if not isinstance(by, Mapping):
            raise TaskError(f"joint_names_by_convention: expected a mapping, got {by!r}")
        put(self, "joint_names_by_convention", MappingProxyType(
            {_convention(k, "joint_names_by_convention key"): _names(v, f"joint_names_by_convention.{k}")
             for k, v in by.items()}
        ))  # fmt: skip

    def __hash__(self) -> int:  # a value: equal tasks hash equal (mappings hash as sets of items)
        return hash(tuple(_freeze(getattr(self, f.name)) for f in dataclasses.fields(self) if f.compare))

    # ------------------------------------------------------------------------------------------- sizes

    @property
    def policy_dt(self) -> float:
        """Seconds between policy steps: ``sim_dt * decimation``."""
        return self.sim_dt * self.decimation

    def action_size(self, num_joints: int) -> int:
        """Entries of the action vector on an articulation with ``num_joints`` joints."""
        joints = self.action.joints
        if joints is None:
            return num_joints
        known = set(self.joint_names or ())
        patterns = [j for j in joints if j not in known and _is_pattern(j)]
        if patterns:
            raise TaskError(
                f"action.joints holds patterns {patterns}: their count depends on the asset. Expand them first "
                "with task.with_joint_names(articulation.joint_names)."
            )
        return len(joints)

    def term_slices(self, num_joints: int, num_bodies: int | None = None) -> dict[str, slice]:
        """Where each observation term sits in the observation vector, in order."""
        action_size = self.action_size(num_joints)
        out: dict[str, slice] = {}
        start = 0
        for term in self.observation:
            size = term.resolved_size(num_joints, num_bodies, action_size)
            out[term.name] = slice(start, start + size)
            start += size
        return out

    def observation_size(self, num_joints: int, num_bodies: int | None = None) -> int:
        """Length of the observation vector (``num_bodies`` is needed only when a term indexes bodies)."""
        slices = self.term_slices(num_joints, num_bodies)
        return max((s.stop for s in slices.values()), default=0)

    # ------------------------------------------------------------------------------------------- resolution

    def listed_joint_names(self) -> tuple[str, ...] | None:
        """The checkpoint's joint order as the source lists it: ``joint_names``, else the convention's list."""
        if self.joint_names is not None:
            return self.joint_names
        if self.convention is not None:
            return self.joint_names_by_convention.get(self.convention)
        return None

    def with_convention(self, convention: str | OrderingConvention) -> Task:
        """This task for a checkpoint trained in ``convention`` order (takes the list the source gives for it)."""
        parsed = parse_ordering(convention)
        if not isinstance(parsed, OrderingConvention):
            raise TaskError(f"with_convention: expected one of {list(CONVENTIONS)}, got {convention!r}")
        listed = self.joint_names_by_convention.get(parsed.value, self.joint_names)
        return dataclasses.replace(self, convention=parsed.value, joint_names=listed)

    def with_joint_names(self, asset_joint_names: Sequence[str]) -> Task:
        """This task expanded for an asset whose public joint order is ``asset_joint_names``.

        Checks the listed order (:meth:`listed_joint_names`) against ``asset_joint_names``
        (:func:`check_listed_order`), expands every mapping to per-joint values in that order (defaults must
        cover every joint; gains and effort limits too when given) and ``action.joints`` to names. The result
        has ``joint_names == tuple(asset_joint_names)`` and only literal names as keys; applying it again with
        the same names returns an equal task.
        """
        names = _names(asset_joint_names, "asset joint names")
        src = self.source or f"task {self.name!r}"
        listed = self.listed_joint_names()
        if listed is not None:
            by_convention = (
                self.convention is not None and self.joint_names_by_convention.get(self.convention) == listed
            )
            what = f"the {self.convention} joint order it lists" if by_convention else "joint_names"
            check_listed_order(listed, names, f"{src} ({what})")
        expanded: dict[str, Any] = {
            f: expand_joint_values(getattr(self, f), names, field=f, source=src) for f in _MAPPING_FIELDS
        }
        if not expanded["default_joint_pos"] and self.action.use_default_offset:
            raise TaskError(f"default_joint_pos (from {src}): empty, but the action adds the default offset")
        if self.effort_limit is not None:
            expanded["effort_limit"] = expand_joint_values(self.effort_limit, names, field="effort_limit", source=src)
        action = self.action
        if action.joints is not None:
            picked = expand_joint_values(
                dict.fromkeys(action.joints, 0.0), names, field="action.joints", source=src, require_all=False
            )
            action = dataclasses.replace(action, joints=tuple(picked))
        return dataclasses.replace(self, joint_names=names, action=action, **expanded)

    # ------------------------------------------------------------------------------------------- dict form

    def to_dict(self) -> dict[str, Any]:
        """A JSON-able dict (``format`` first); :meth:`from_dict` of it gives an equal task."""
        return {
            "format": TASK_FORMAT,
            "name": self.name,
            "observation": [t.to_dict() for t in self.observation],
            "action": self.action.to_dict(),
            "joint_names": None if self.joint_names is None else list(self.joint_names),
            "convention": self.convention,
            **{f: dict(getattr(self, f)) for f in _MAPPING_FIELDS},
            "effort_limit": None if self.effort_limit is None else dict(self.effort_limit),
            "sim_dt": self.sim_dt,
            "decimation": self.decimation,
            "physx": dict(self.physx),
            "newton": {k: dict(v) if isinstance(v, Mapping) else v for k, v in self.newton.items()},
            "spawn_height": self.spawn_height,
            "command": list(self.command),
            "asset": self.asset,
            "trained_on": self.trained_on,
            "joint_names_by_convention": {k: list(v) for k, v in self.joint_names_by_convention.items()},
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, source: str | None = None) -> Task:
        """The task a dict (:meth:`to_dict`, a task file, checkpoint metadata) describes; strict.

        Required keys: ``observation``, ``action``, ``default_joint_pos``, ``sim_dt``, ``decimation`` (and
        ``name``); ``format``, when present, must be :data:`TASK_FORMAT`. Unknown keys, missing keys and wrong
        types raise :class:`TaskError` naming ``source`` and the field. Observation entries may be a term name
        alone or a mapping (``name``, ``scale``, ``clip``, ``axis``, ``size``).
        """
        where = source or "task"
        try:
            if not isinstance(data, Mapping):
                raise TaskError(f"expected a mapping of task fields, got {type(data).__name__}")
            fmt = data.get("format", TASK_FORMAT)
            if fmt != TASK_FORMAT:
                raise TaskError(f"format: {fmt!r} is not a format this version reads (expected {TASK_FORMAT!r})")
            fields = {f.name for f in dataclasses.fields(cls)} - {"source"}
            unknown = sorted(set(data) - fields - {"format"})
            if unknown:
                raise TaskError(f"unknown fields {unknown}; known fields: {sorted(fields | {'format'})}")
            missing = [k for k in ("name", *_REQUIRED) if k not in data]
            if missing:
                raise TaskError(f"missing fields {missing} (see presets/tasks/README.md for the format)")
            kwargs = {k: v for k, v in data.items() if k != "format"}
            kwargs["observation"] = _parse_observation(data["observation"])
            kwargs["action"] = _parse_action(data["action"])
            return cls(**kwargs, source=source)
        except TaskError as exc:
            raise TaskError(f"{where}: {exc}") from None


def _parse_observation(value: Any) -> tuple[ObsTerm, ...]:
    if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Iterable):
        raise TaskError(f"observation: expected a list of terms, got {value!r}")
    terms = []
    allowed = {f.name for f in dataclasses.fields(ObsTerm)}
    for i, entry in enumerate(value):
        try:
            if isinstance(entry, str):
                terms.append(ObsTerm(entry))
                continue
            if not isinstance(entry, Mapping) or "name" not in entry:
                raise TaskError(f"expected a term name or a mapping with 'name', got {entry!r}")
            unknown = sorted(set(entry) - allowed)
            if unknown:
                raise TaskError(f"unknown keys {unknown}; known: {sorted(allowed)}")
            terms.append(ObsTerm(**entry))
        except TaskError as exc:
            raise TaskError(f"observation[{i}]: {exc}") from None
    return tuple(terms)


def _parse_action(value: Any) -> ActionTerm:
    if not isinstance(value, Mapping):
        raise TaskError(f"action: expected a mapping (kind, scale, use_default_offset, joints), got {value!r}")
    allowed = {f.name for f in dataclasses.fields(ActionTerm)}
    unknown = sorted(set(value) - allowed)
    if unknown:
        raise TaskError(f"action: unknown keys {unknown}; known: {sorted(allowed)}")
    if "scale" not in value:
        raise TaskError("action: missing 'scale' (target = default + scale * action)")
    return ActionTerm(**value)
