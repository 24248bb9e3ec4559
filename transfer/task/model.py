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
from typing import Any

from transfer.actuators.spec import ActuatorError, ActuatorGroup
from transfer.backends import backend_names, check_settings
from transfer.backends.scene import DEFAULT_GROUND, GroundMaterial, SceneDescription
from transfer.ordering import OrderingConvention, parse_ordering
from transfer.task._checks import (
    TaskError,
    _convention,
    _freeze,
    _integer,
    _is_pattern,
    _names,
    _number,
    _text,
    _values,
    convention_names,
)
from transfer.task.action import ACTION_KINDS, ActionTerm
from transfer.task.names import check_listed_order, expand_joint_values
from transfer.task.observation import ObsTerm
from transfer.task.terms import OBS_TERMS, KnownTerm, check_aliases

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

AXES: tuple[str, ...] = ("joint", "body", "none")


# ---------------------------------------------------------------------------------------------------- terms


FLAT_VELOCITY_OBSERVATION: tuple[ObsTerm, ...] = tuple(
    ObsTerm(n)
    for n in ("base_lin_vel", "base_ang_vel", "projected_gravity", "velocity_commands")
    + ("joint_pos_rel", "joint_vel_rel", "last_action")
)
"""Isaac Lab's flat-terrain velocity-tracking policy observation (48 entries for 12 joints), unscaled."""


# ---------------------------------------------------------------------------------------------------- task

_MAPPING_FIELDS = ("default_joint_pos", "stiffness", "damping", "armature", "friction")
_NON_NEGATIVE = ("stiffness", "damping", "armature", "friction")
PHYSICAL_BOUNDS: Mapping[str, tuple[float, str]] = MappingProxyType(
    {
        "default_joint_pos": (100.0, "rad or m: 16 turns, or 100 m of travel"),
        "stiffness": (1e8, "N·m/rad or N/m: a robot's joints hold 10 to 1e5; 1e12 makes efforts of 1e11 N·m"),
        "damping": (1e7, "N·m·s/rad or N·s/m: a robot's joints take 0.1 to 1e4"),
        "armature": (1e3, "kg·m² or kg: a motor's reflected inertia is 0.001 to 1"),
        "friction": (1e5, "N·m or N"),
    }
)
"""The largest magnitude each per-joint field may hold, and why: what a robot can be. A larger value is a unit or
typing slip (a default pose of 1e6 rad killed PhysX natively), refused naming the field and the joint before any
engine starts."""
MAX_COMMAND = 100.0
"""The largest velocity command component (m/s or rad/s)."""
_LIMITS = {
    "effort_limit": "an effort limit is > 0 (N·m or N)",
    "velocity_limit": "a velocity limit is > 0 (rad/s or m/s)",
}
"""The optional per-joint limits (``None``: the asset's), each positive."""
_REQUIRED = ("observation", "action", "default_joint_pos", "sim_dt", "decimation")
MAX_SIM_DT = 0.05
"""The longest physics step a task may ask for (s): 20 Hz; legged robots train at 200-1000 Hz."""
MIN_SIM_DT = 1e-4
"""The shortest physics step (s) a task may ask for: 10 kHz (a shorter one makes seconds of replay hours of
stepping)."""
MAX_POLICY_DT = 1.0
"""The longest policy step (``sim_dt * decimation``, s) a task may ask for: 1 Hz; legged robots act at 50 Hz."""
MAX_SPAWN_HEIGHT = 10.0
"""The highest base a task may spawn (m): a robot dropped from higher lands on its back, not its feet."""


def _check_clock(task: Task) -> None:
    """``sim_dt`` and ``decimation``: a physics step and a policy step this replays (set on ``task`` as numbers)."""
    put, self = object.__setattr__, task
    put(self, "sim_dt", _number(self.sim_dt, "sim_dt"))
    if not MIN_SIM_DT <= self.sim_dt <= MAX_SIM_DT:
        raise TaskError(
            f"sim_dt: {self.sim_dt} s is not a physics time step this replays (expected {MIN_SIM_DT} <= sim_dt "
            f"<= {MAX_SIM_DT} s; Isaac Lab's legged robots use 0.005 s)"
        )
    put(self, "decimation", _integer(self.decimation, "decimation", 1))
    if self.sim_dt * self.decimation > MAX_POLICY_DT:
        raise TaskError(
            f"decimation: {self.decimation} physics steps of {self.sim_dt} s make a policy step of "
            f"{self.sim_dt * self.decimation:g} s (at most {MAX_POLICY_DT:g} s; Isaac Lab's legged robots act every "
            "0.02 s: sim_dt 0.005, decimation 4)"
        )


def _bounded(values: Mapping[str, float], name: str) -> Mapping[str, float]:
    """``values`` when each is within :data:`PHYSICAL_BOUNDS` for ``name``; else one line naming the joint."""
    bound, why = PHYSICAL_BOUNDS[name]
    over = {k: v for k, v in values.items() if abs(v) > bound}
    if over:
        key, value = next(iter(over.items()))
        raise TaskError(
            f"{name}[{key!r}]: {value:g} is beyond what a robot's joint takes (at most {bound:g} {why}); "
            "a unit or typing slip? give the value the policy was trained with"
        )
    return values


def _command(value: Any, where: str) -> float:
    out = _number(value, where)
    if abs(out) > MAX_COMMAND:
        raise TaskError(
            f"{where}: {out:g} is faster than any robot moves (at most {MAX_COMMAND:g} m/s or rad/s); "
            "give the velocity command in m/s and rad/s"
        )
    return out


@dataclass(frozen=True)
class Task:
    """What a checkpoint needs from the world, named by joint and body, never by column.

    Mappings (``default_joint_pos``, gains, ``effort_limit``, ``velocity_limit``) are keyed by joint name or full-match
    pattern (:func:`expand_joint_values`); :meth:`with_joint_names` expands them for one asset. ``joint_names``: the order
    the checkpoint's joint vectors follow, when the source lists it; ``convention``: the named convention of
    that order (``physx`` / ``mjwarp`` / ``robot_schema``); ``joint_names_by_convention``: orders a source lists
    for several conventions (Newton's policy YAML lists two), chosen by :meth:`with_convention`.
    ``engines``: each engine's own settings by backend name, checked by that backend (a task file writes them
    as top-level sections named after the backend: ``physx:``, ``newton:``). ``command``: (vx, vy, wz). ``asset``: a path (USD, MJCF or URDF) or a ``newton:<name>`` token
    (:func:`transfer.task.resolve_asset`). ``source``: where the task was read from (for messages; not compared,
    not in :meth:`to_dict`).

    The simulation settings the checkpoint was trained under: ``sim_dt``, ``decimation``, ``gravity`` (m/s^2,
    ``None``: 9.81 down), ``engines`` (each engine's solver settings), ``ground`` (the ground plane's material,
    ``None``: :data:`~transfer.backends.scene.DEFAULT_GROUND`), ``self_collisions`` (``None``: the asset's), joint
    ``armature`` and ``friction`` (``{}``: the asset's); and ``actuators``, the actuator groups (joints in no group
    are driven by the engine's own PD: Isaac Lab's implicit actuator). :meth:`scene` turns them into the
    :class:`~transfer.backends.scene.SceneDescription` the backends build.

    ``observation_aliases``: observation terms by another project's name -> the term transfer builds
    (``{keyboard_velocity_commands: velocity_commands}``): a task file may list its observation by those names, and
    the deploy-config and Isaac Lab readers map a term of that name onto the term; the readers record here the
    names they mapped themselves (a renamed command observation).

    ``start_steps``: policy steps of zero action a run takes after its start, before the policy's first observation
    (legged_gym's ``reset()`` steps once with zero actions, so its first observation, and the gait clock's first
    time, come one policy step in: 1 there; Isaac Lab and mjlab observe the reset state: 0).
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
    friction: Mapping[str, float] = field(default_factory=dict)
    effort_limit: Mapping[str, float] | None = None
    velocity_limit: Mapping[str, float] | None = None
    sim_dt: float = 0.005
    decimation: int = 4
    engines: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    spawn_height: float | None = None
    command: tuple[float, float, float] = (0.0, 0.0, 0.0)
    asset: str | None = None
    trained_on: str | None = None
    joint_names_by_convention: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    gravity: tuple[float, float, float] | None = None
    ground: GroundMaterial | None = None
    self_collisions: bool | None = None
    actuators: tuple[ActuatorGroup, ...] = ()
    observation_aliases: Mapping[str, str] = field(default_factory=dict)
    start_steps: int = 0
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
            put(self, name, _bounded(_values(getattr(self, name), name), name))
        for name in _NON_NEGATIVE:
            negative = {k: v for k, v in getattr(self, name).items() if v < 0}
            if negative:
                raise TaskError(f"{name}: negative values {negative}; {name} values are >= 0")
        for name, rule in _LIMITS.items():
            if getattr(self, name) is not None:
                put(self, name, _values(getattr(self, name), name))
                bad = {k: v for k, v in getattr(self, name).items() if v <= 0}
                if bad:
                    raise TaskError(f"{name}: values {bad} are not positive; {rule}")
        _check_clock(self)
        put(self, "engines", _engines(self.engines))
        if self.spawn_height is not None:
            put(self, "spawn_height", _number(self.spawn_height, "spawn_height"))
            if not 0 < self.spawn_height <= MAX_SPAWN_HEIGHT:
                where = "at or below the ground" if self.spawn_height <= 0 else f"above {MAX_SPAWN_HEIGHT:g} m"
                raise TaskError(
                    f"spawn_height: {self.spawn_height} m puts the base {where}; give the base's height "
                    "above the ground in m (> 0), or null to compute it from the asset"
                )
        put(self, "gravity", _gravity(self.gravity))
        put(self, "ground", _ground(self.ground))
        if self.self_collisions is not None and not isinstance(self.self_collisions, bool):
            raise TaskError(f"self_collisions: expected true, false or null, got {self.self_collisions!r}")
        put(self, "actuators", _actuators(self.actuators))
        put(self, "observation_aliases", check_aliases(self.observation_aliases))
        put(self, "start_steps", _integer(self.start_steps, "start_steps", 0))
        cmd = self.command
        if isinstance(cmd, (str, bytes)) or not isinstance(cmd, Sequence) or len(cmd) != 3:
            raise TaskError(f"command: expected [vx, vy, wz], got {cmd!r}")
        put(self, "command", tuple(_command(c, f"command[{i}]") for i, c in enumerate(cmd)))
        for name in ("asset", "trained_on", "source"):
            if getattr(self, name) is not None:
                _text(getattr(self, name), name)
        if self.trained_on is not None:
            if self.trained_on not in backend_names():
                raise TaskError(
                    f"trained_on: {self.trained_on!r} is not a backend; expected one of {list(backend_names())} or null"
                )
        by = self.joint_names_by_convention
        if not isinstance(by, Mapping):
            raise TaskError(f"joint_names_by_convention: expected a mapping, got {by!r}")
        put(
            self,
            "joint_names_by_convention",
            MappingProxyType(
                {
                    _convention(k, "joint_names_by_convention key"): _names(v, f"joint_names_by_convention.{k}")
                    for k, v in by.items()
                }
            ),
        )

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
            raise TaskError(f"with_convention: expected one of {convention_names()}, got {convention!r}")
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
        for name in _LIMITS:
            if getattr(self, name) is not None:
                expanded[name] = expand_joint_values(getattr(self, name), names, field=name, source=src)
        expanded["actuators"] = _expand_actuators(self.actuators, names, src)
        action = self.action.expanded(names, src)
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
            **{f: None if getattr(self, f) is None else dict(getattr(self, f)) for f in _LIMITS},
            "sim_dt": self.sim_dt,
            "decimation": self.decimation,
            **{name: _plain(self.engines.get(name, {})) for name in backend_names()},
            "spawn_height": self.spawn_height,
            "command": list(self.command),
            "asset": self.asset,
            "trained_on": self.trained_on,
            "joint_names_by_convention": {k: list(v) for k, v in self.joint_names_by_convention.items()},
            "gravity": None if self.gravity is None else list(self.gravity),
            "ground": None if self.ground is None else self.ground.to_dict(),
            "self_collisions": self.self_collisions,
            "actuators": [g.to_dict() for g in self.actuators],
            "observation_aliases": dict(self.observation_aliases),
            "start_steps": self.start_steps,
        }

    # ------------------------------------------------------------------------------------------- settings

    def with_settings(self, settings: Mapping[str, Any], *, where: str = "settings") -> Task:
        """This task with some fields replaced, by dotted name (``{"physx.solver_position_iterations": 4,
        "ground.friction_combine": "multiply", "sim_dt": 0.005}``): the way to change the simulation settings
        without writing a task file. Values are checked as a task file's are; an unknown field is named."""
        data = self.to_dict()
        for key, value in settings.items():
            parts = str(key).split(".")
            if parts[0] in ("asset", "joint_names", "convention", "joint_names_by_convention"):
                flag = "--asset" if parts[0] == "asset" else "--source"
                raise TaskError(
                    f"{where}: {key!r} is not a simulation setting; the robot and the joint order are "
                    f"resolved before the run: give {flag} instead"
                )
            if parts[0] not in data or parts[0] == "format":
                raise TaskError(f"{where}: {key!r} names no task field; fields: {sorted(set(data) - {'format'})}")
            node = data
            for part in parts[:-1]:
                if node.get(part) is None and part in ("ground",):
                    node[part] = GroundMaterial().to_dict()
                elif node.get(part) is None and node is not data and parts[0] in backend_names():
                    node[part] = {}  # a mapping an engine's settings hold unset (newton.solver_options.iterations)
                if not isinstance(node.get(part), dict):
                    raise TaskError(f"{where}: {key!r}: {part!r} is not a mapping of settings")
                node = node[part]
            node[parts[-1]] = value
        changed = Task.from_dict(data, source=f"{where} (on {self.source or self.name})")  # errors name the flag
        return dataclasses.replace(changed, source=self.source)

    def simulation_settings(self) -> dict[str, Any]:
        """The settings the checkpoint was trained under, as plain data (what ``transfer info`` prints and a replay
        reports): timing, gravity, per-engine solver settings, ground material, self-collisions, joint armature and
        friction, and the actuator groups. Unset values read ``None`` (the asset's, or the documented default)."""
        d = self.to_dict()
        keys = (
            "sim_dt",
            "decimation",
            "gravity",
            *backend_names(),
            "ground",
            "self_collisions",
            "armature",
            "friction",
            "actuators",
        )
        out = {k: d[k] for k in keys}
        out["ground"] = out["ground"] or {**DEFAULT_GROUND.to_dict(), "default": True}
        return out

    def scene(self, spawn_height: float | None = None, authored_root_height: float = 0.0) -> SceneDescription:
        """The world the backends build for this task: a ground plane at 0 with the task's material, the robot's
        root link ``spawn_height`` up, gravity, self-collisions and each engine's own settings."""
        return SceneDescription(
            ground=self.ground or DEFAULT_GROUND,
            ground_height=0.0,
            spawn_height=spawn_height,
            authored_root_height=authored_root_height,
            gravity=self.gravity,
            self_collisions=self.self_collisions,
            engines=self.engines,
        )

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
            fields = {f.name for f in dataclasses.fields(cls)} - {"source", "engines"} | set(backend_names())
            unknown = sorted(set(data) - fields - {"format"})
            if unknown:
                raise TaskError(f"unknown fields {unknown}; known fields: {sorted(fields | {'format'})}")
            missing = [k for k in ("name", *_REQUIRED) if k not in data]
            if missing:
                raise TaskError(f"missing fields {missing} (see presets/tasks/README.md for the format)")
            kwargs = {k: v for k, v in data.items() if k != "format" and k not in backend_names()}
            kwargs["engines"] = {k: v for k, v in data.items() if k in backend_names()}
            kwargs["observation"] = _parse_observation(
                data["observation"], check_aliases(data.get("observation_aliases"))
            )
            kwargs["action"] = _parse_action(data["action"])
            if isinstance(kwargs.get("ground"), Mapping):
                kwargs["ground"] = _ground(kwargs["ground"])
            if "actuators" in kwargs:
                kwargs["actuators"] = _actuators(kwargs["actuators"])
            return cls(**kwargs, source=source)
        except TaskError as exc:
            raise TaskError(f"{where}: {exc}") from None


def _plain(value: Any) -> Any:
    return {k: _plain(v) for k, v in value.items()} if isinstance(value, Mapping) else value


def _engines(value: Any) -> Mapping[str, Mapping[str, Any]]:
    """Each engine's settings, checked by its backend (an unknown backend named)."""
    if not isinstance(value, Mapping):
        raise TaskError(f"engines: expected a mapping from backend name to settings, got {value!r}")
    unknown = sorted(set(map(str, value)) - set(backend_names()))
    if unknown:
        raise TaskError(f"settings for {unknown}, which is no backend; backends: {list(backend_names())}")
    try:
        return MappingProxyType({k: check_settings(k, v) for k, v in value.items() if v})
    except ValueError as exc:
        raise TaskError(str(exc)) from None


def _parse_observation(value: Any, aliases: Mapping[str, str]) -> tuple[ObsTerm, ...]:
    """The observation a task file lists, each entry a term name or a mapping; a name in ``aliases`` is the term it
    maps to."""
    if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Iterable):
        raise TaskError(f"observation: expected a list of terms, got {value!r}")
    terms = []
    allowed = {f.name for f in dataclasses.fields(ObsTerm)}
    for i, entry in enumerate(value):
        try:
            if isinstance(entry, str):
                terms.append(ObsTerm(aliases.get(entry, entry)))
                continue
            if not isinstance(entry, Mapping) or "name" not in entry:
                raise TaskError(f"expected a term name or a mapping with 'name', got {entry!r}")
            unknown = sorted(set(entry) - allowed)
            if unknown:
                raise TaskError(f"unknown keys {unknown}; known: {sorted(allowed)}")
            name = entry["name"]
            terms.append(ObsTerm(**{**entry, "name": aliases.get(name, name) if isinstance(name, str) else name}))
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


def _gravity(value: Any) -> tuple[float, float, float] | None:
    if value is None:
        return None
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence) or len(value) != 3:
        raise TaskError(f"gravity: expected [gx, gy, gz] (m/s^2) or null, got {value!r}")
    return tuple(_number(c, f"gravity[{i}]") for i, c in enumerate(value))  # type: ignore[return-value]


def _ground(value: Any) -> GroundMaterial | None:
    if value is None or isinstance(value, GroundMaterial):
        return value
    if not isinstance(value, Mapping):
        raise TaskError(f"ground: expected a mapping of material settings or null, got {value!r}")
    known = set(GroundMaterial.__dataclass_fields__)
    unknown = sorted(set(map(str, value)) - known)
    if unknown:
        raise TaskError(f"ground: unknown settings {unknown}; known: {sorted(known)}")
    try:
        return GroundMaterial(**dict(value))
    except ValueError as exc:
        raise TaskError(str(exc)) from None


def _actuators(value: Any) -> tuple[ActuatorGroup, ...]:
    if value is None:
        return ()
    if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Iterable):
        raise TaskError(f"actuators: expected a list of actuator groups, got {value!r}")
    groups = []
    for i, entry in enumerate(value):
        try:
            groups.append(
                entry if isinstance(entry, ActuatorGroup) else ActuatorGroup.from_dict(entry, f"actuators[{i}]")
            )
        except ActuatorError as exc:
            raise TaskError(str(exc)) from None
    names = [g.name for g in groups]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise TaskError(f"actuators: group names listed twice: {dup}")
    return tuple(groups)


def _expand_actuators(groups: Sequence[ActuatorGroup], names: Sequence[str], src: str) -> tuple[ActuatorGroup, ...]:
    """The groups with their joint patterns expanded to names (in ``names`` order); a joint in two groups is named."""
    out, owner = [], {}
    for g in groups:
        picked = expand_joint_values(
            dict.fromkeys(g.joints, 0.0), names, field=f"actuators.{g.name}.joints", source=src, require_all=False
        )
        for joint in picked:
            if joint in owner:
                raise TaskError(f"{src}: joint {joint!r} is in two actuator groups: {owner[joint]} and {g.name}")
            owner[joint] = g.name
        out.append(dataclasses.replace(g, joints=tuple(picked)))
    return tuple(out)
