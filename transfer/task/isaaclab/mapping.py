"""A run's ``env.yaml`` mapped to the project's :class:`~transfer.task.Task` (:func:`isaaclab_task`): default
joint state, actuator gains, the observation and action terms (:mod:`transfer.task.isaaclab.terms`), sim, the
training engine's solver and the fixed replay command (:func:`fixed_command`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from transfer.actuators import ActuatorError, ActuatorGroup
from transfer.actuators.spec import ISAACLAB_CLASSES
from transfer.backends import training_settings
from transfer.backends.scene import GroundMaterial
from transfer.task._checks import TaskError
from transfer.task.isaaclab.run import AGENT_YAML, IsaacLabRun, _robot
from transfer.task.isaaclab.terms import (
    _action,
    _match,
    _number,
    _observation,
    _patterns,
    _per_joint,
    expand_joint_values,
)
from transfer.task.isaaclab.yaml_safe import IsaacLabError
from transfer.task.model import MAX_COMMAND, Task
from transfer.task.terms import check_aliases

_EXPLICIT_EFFORT = ("effort_limit", "effort_limit_sim")
"""Where an explicit actuator's clip comes from (Isaac Lab's ``effort_limit``; ``effort_limit_sim`` is the engine's)."""
_IMPLICIT_EFFORT = ("effort_limit_sim", "effort_limit")
_INIT_STATE = "scene.robot.init_state"


def fixed_command(ranges: Mapping[str, Any] | None) -> tuple[float, float, float]:
    """The fixed command a replay uses for a velocity command's ``ranges``: the fastest forward speed the run
    trained on (the top of ``lin_vel_x``), and no sideways or turning motion (0, or the value of ``lin_vel_y`` /
    ``ang_vel_z`` nearest 0 when 0 is outside the range). No ranges: standing still."""
    if not ranges:
        return (0.0, 0.0, 0.0)

    def bounds(key: str) -> tuple[float, float] | None:
        value = ranges.get(key)
        if value is None:
            return None
        if isinstance(value, (str, bytes)) or not isinstance(value, Sequence) or len(value) != 2:
            raise IsaacLabError(f"commands ranges.{key}: expected (low, high), got {value!r}")
        if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value):
            raise IsaacLabError(f"commands ranges.{key}: expected two numbers (low, high), got {value!r}")
        lo, hi = (float(v) for v in value)
        if not (math.isfinite(lo) and math.isfinite(hi)) or max(abs(lo), abs(hi)) > MAX_COMMAND or lo > hi:
            raise IsaacLabError(
                f"commands ranges.{key}: ({lo:g}, {hi:g}) is no velocity range a robot trains on "
                f"(finite, low <= high, within ±{MAX_COMMAND:g} m/s or rad/s)"
            )
        return lo, hi

    def nearest_zero(key: str) -> float:
        b = bounds(key)
        return 0.0 if b is None else min(max(0.0, b[0]), b[1])

    x = bounds("lin_vel_x")
    return (0.0 if x is None else x[1], nearest_zero("lin_vel_y"), nearest_zero("ang_vel_z"))


def _all_or_none(values: dict[str, float], names: Sequence[str], what: str, where: str) -> dict[str, float]:
    missing = [n for n in names if n not in values]
    if values and missing:
        raise IsaacLabError(
            f"{where}: {what} is set for {sorted(values)} but not for {missing} (Isaac Lab keeps the asset's value "
            f"there). transfer sets {what} on every joint or on none: describe the gains in a task file (--config)."
        )
    return {n: values[n] for n in names if n in values}


def _scalar(cfg: Mapping[str, Any], key: str, joints: Sequence[str], at: str) -> float | None:
    """One value for the group (Isaac Lab allows ``{pattern: value}``; transfer's groups carry one)."""
    value = cfg.get(key)
    if value is None:
        return None
    values = set(_per_joint(value, joints, f"{at}.{key}").values())
    if len(values) != 1:
        raise IsaacLabError(
            f"{at}.{key}: different values per joint {sorted(values)}; transfer's actuator groups carry "
            "one value: split the group in a task file (--config)"
        )
    return values.pop()


def _actuators(robot: Mapping[str, Any], names: Sequence[str], where: str, notes: list[str]) -> dict[str, Any]:
    """The robot's actuator groups: per-joint gains, armature, friction and effort limits, and the groups whose
    model is not the engine's PD (:class:`~transfer.actuators.ActuatorGroup`), as Isaac Lab applies them."""
    actuators = robot.get("actuators") or {}
    if not isinstance(actuators, Mapping):
        raise IsaacLabError(f"{where}: scene.robot.actuators: expected a mapping of actuator groups")
    owner: dict[str, str] = {}
    fields: dict[str, Any] = {k: {} for k in ("stiffness", "damping", "armature", "friction", "effort", "velocity")}
    fields["groups"] = []
    for group, cfg in actuators.items():
        if cfg is None:
            continue
        at = f"scene.robot.actuators.{group}"
        if not isinstance(cfg, Mapping):
            raise IsaacLabError(f"{where}: {at}: expected an actuator configuration, got {cfg!r}")
        kind = str(cfg.get("class_type") or "").rpartition(":")[2]
        if kind not in ISAACLAB_CLASSES:
            raise IsaacLabError(
                f"{where}: {at} is a {kind or 'class_type-less'} actuator; transfer replays {', '.join(ISAACLAB_CLASSES)} "
                "groups. Describe the joints' drive in a task file (--config: stiffness, damping, actuators)."
            )
        model = ISAACLAB_CLASSES[kind]
        joints = _match(
            _patterns(cfg.get("joint_names_expr"), f"{at}.joint_names_expr"), names, f"{at}.joint_names_expr"
        )
        for j in joints:
            if j in owner:
                raise IsaacLabError(f"{where}: joint {j!r} is driven by two actuator groups: {owner[j]} and {group}")
            owner[j] = group
        keys = {
            "stiffness": ("stiffness",),
            "damping": ("damping",),
            "armature": ("armature",),
            "friction": ("friction",),
            "effort": _IMPLICIT_EFFORT if model == "implicit" else _EXPLICIT_EFFORT,
            # the engine's joint speed limit. velocity_limit is not: an implicit group's alone is dropped (Isaac Lab's
            # test_implicit_actuator_init_velocity_limits: the asset's stands), an explicit one's shapes its torque
            "velocity": ("velocity_limit_sim",),
        }
        for name, candidates in keys.items():
            key = next((k for k in candidates if cfg.get(k) is not None), None)
            if key is not None:
                fields[name].update(_per_joint(cfg[key], joints, f"{at}.{key}"))
        if model == "implicit":
            continue
        extra: dict[str, Any] = {}
        if model in ("dc_motor", "mlp", "lstm"):
            extra["saturation_effort"] = _scalar(cfg, "saturation_effort", joints, at)
            extra["velocity_limit"] = _scalar(cfg, "velocity_limit", joints, at)
        if model == "delayed_pd":
            extra.update(min_delay=cfg.get("min_delay", 0), max_delay=cfg.get("max_delay", 0))
        if model in ("mlp", "lstm"):
            extra["network_file"] = cfg.get("network_file")
        if model == "mlp":
            extra.update(
                {
                    k: cfg[k]
                    for k in ("input_order", "input_idx", "pos_scale", "vel_scale", "torque_scale")
                    if cfg.get(k) is not None
                }
            )
            if isinstance(extra.get("input_idx"), (list, tuple)):
                extra["input_idx"] = tuple(extra["input_idx"])
        try:
            fields["groups"].append(ActuatorGroup(str(group), model, tuple(joints), **extra))
        except ActuatorError as exc:
            raise IsaacLabError(f"{where}: {at} ({kind}): {exc}") from None
        notes.append(f"{at} is an {kind}: replayed as explicit {model} torque on both engines")
    velocity = fields["velocity"]
    if velocity and set(velocity) != set(names):
        notes.append(
            f"actuator velocity limits (velocity_limit_sim) are set for {len(velocity)} of {len(names)} "
            "joints: not applied at replay (a task's velocity_limit covers every joint; the asset's stand)"
        )
        fields["velocity"] = {}
    return fields


def _material(env: Mapping[str, Any], where: str) -> Any:
    """The ground's material: the terrain's ``physics_material``, else ``sim.physics_material`` (what Isaac Lab
    gives prims without one), as a :class:`~transfer.backends.scene.GroundMaterial`; ``None`` when neither is set."""
    scene = env.get("scene") if isinstance(env.get("scene"), Mapping) else {}
    terrain = scene.get("terrain") if isinstance(scene.get("terrain"), Mapping) else {}
    sim = env.get("sim") if isinstance(env.get("sim"), Mapping) else {}
    for at, cfg in (
        ("scene.terrain.physics_material", terrain.get("physics_material")),
        ("sim.physics_material", sim.get("physics_material")),
    ):
        if not isinstance(cfg, Mapping):
            continue
        values = {
            "static_friction": cfg.get("static_friction"),
            "dynamic_friction": cfg.get("dynamic_friction"),
            "restitution": cfg.get("restitution"),
            "friction_combine": cfg.get("friction_combine_mode"),
            "restitution_combine": cfg.get("restitution_combine_mode"),
        }
        try:
            return GroundMaterial(**{k: v for k, v in values.items() if v is not None})
        except ValueError as exc:
            raise IsaacLabError(f"{where}: {at}: {exc}") from None
    return None


def _gravity(sim: Mapping[str, Any], where: str) -> tuple[float, float, float] | None:
    g = sim.get("gravity")
    if g is None:
        return None
    if isinstance(g, (str, bytes)) or not isinstance(g, Sequence) or len(g) != 3:
        raise IsaacLabError(f"{where}: sim.gravity: expected (gx, gy, gz), got {g!r}")
    return tuple(_number(c, f"{where}: sim.gravity[{i}]") for i, c in enumerate(g))  # type: ignore[return-value]


def isaaclab_task(
    run: IsaacLabRun,
    joint_names: Sequence[str],
    *,
    order: str | tuple[str, ...] | None = None,
    asset: str | Path | None = None,
    notes: list[str] | None = None,
    aliases: Mapping[str, str] | None = None,
) -> Task:
    """The task ``run``'s ``env.yaml`` describes, on an asset whose joints, in the checkpoint's order, are
    ``joint_names`` (``transfer.resolve_ordering(asset, run.order).joints``).

    Patterns (defaults, actuators, action joints) are expanded on those names with Isaac Lab's semantics, so the
    task holds literal names only; ``joint_names`` and ``convention`` (``order``, default the run's) are set, as
    are ``trained_on``, ``asset`` and the fixed replay command (:func:`fixed_command`). Raises
    :class:`IsaacLabError` naming the field for anything that does not map. ``notes``: a list that receives what
    the mapping leaves out (noise, velocity limits, ...) after the run's own notes. ``aliases``: observation terms
    the run names otherwise -> the term each is (``observation_aliases``; keys are term names or functions).
    """
    names = tuple(joint_names)
    env, where = run.env, str(run.env_yaml)
    notes = notes if notes is not None else []
    notes += [n for n in run.notes if n not in notes]
    robot = _robot(env, where)
    init = robot.get("init_state") if isinstance(robot.get("init_state"), Mapping) else {}
    defaults = _default_joint_pos(init, names, where)
    gains = _actuators(robot, names, where, notes)
    action_key, action = _action(env, names, where)
    mapped: dict[str, str] = {}
    aliases = check_aliases(aliases, "--set observation_aliases")
    observation = _observation(env, names, action_key, where, notes, aliases, mapped)
    _agent_checks(run)
    action = _clip_actions(run, action)
    sim = env.get("sim") or {}
    dt, decimation = _timing(env, sim, where)
    props, self_collisions = _articulation_props(robot, where)
    command = _replay_command(env, observation)
    order = run.order if order is None else order
    try:
        task = Task(
            name=run.name,
            observation=observation,
            action=action,
            joint_names=names,
            convention=order if isinstance(order, str) else None,
            default_joint_pos=defaults,
            stiffness=_all_or_none(gains["stiffness"], names, "stiffness", where),
            damping=_all_or_none(gains["damping"], names, "damping", where),
            armature=_all_or_none(gains["armature"], names, "armature", where),
            friction=_all_or_none(gains["friction"], names, "friction", where),
            effort_limit=_all_or_none(gains["effort"], names, "effort_limit", where) or None,
            velocity_limit=_all_or_none(gains["velocity"], names, "velocity_limit", where) or None,
            actuators=tuple(gains["groups"]),
            gravity=_gravity(sim, where),
            ground=_material(env, where),
            self_collisions=self_collisions,
            sim_dt=dt,
            decimation=decimation,
            engines=_engines(props, run, where),
            spawn_height=_spawn_height(init, where),
            command=command,
            asset=None if asset is None else str(Path(asset).resolve()),
            trained_on=run.trained_on,
            observation_aliases=mapped,
            source=where,
        )
    except TaskError as exc:  # a value out of range: named by the run's file and Isaac Lab's own field
        field = str(exc).split(":", 1)[0]
        theirs = _THEIR_FIELDS.get(field.split("[", 1)[0])
        raise IsaacLabError(f"{where}: {exc}" + (f" (the run's {theirs})" if theirs else "")) from None
    notes[:] = list(dict.fromkeys(notes))
    return task


_THEIR_FIELDS = {
    "sim_dt": "sim.dt",
    "decimation": "decimation",
    "stiffness": "scene.robot.actuators.*.stiffness",
    "damping": "scene.robot.actuators.*.damping",
    "armature": "scene.robot.actuators.*.armature",
    "friction": "scene.robot.actuators.*.friction",
    "effort_limit": "scene.robot.actuators.*.effort_limit_sim",
    "velocity_limit": "scene.robot.actuators.*.velocity_limit_sim",
    "default_joint_pos": "scene.robot.init_state.joint_pos",
    "spawn_height": "scene.robot.init_state.pos",
    "gravity": "sim.gravity",
}
"""The task fields an Isaac Lab run's ``env.yaml`` fills, by the run's own names (for the messages)."""


def _default_joint_pos(init: Mapping[str, Any], names: tuple[str, ...], where: str) -> dict[str, float]:
    """The default joint positions of ``init_state.joint_pos`` on ``names`` (0 where no pattern names a joint);
    refuses non-zero ``init_state.joint_vel`` (``joint_vel_rel`` is read relative to 0)."""
    at = _INIT_STATE
    jp = init.get("joint_pos") or {}
    if not isinstance(jp, Mapping):
        jp = {".*": jp}
    values = {str(k): _number(v, f"{where}: {at}.joint_pos[{k!r}]") for k, v in jp.items()}
    found = expand_joint_values(values, names, field=f"{at}.joint_pos", source=where, require_all=False)
    defaults = {n: found.get(n, 0.0) for n in names}  # Isaac Lab starts the joints no pattern names at 0
    jv = init.get("joint_vel") or {}
    if not isinstance(jv, Mapping):
        jv = {".*": jv}
    vel = expand_joint_values(
        {str(k): _number(v, f"{where}: {at}.joint_vel[{k!r}]") for k, v in jv.items()},
        names,
        field=f"{at}.joint_vel",
        source=where,
        require_all=False,
    )
    if any(v != 0.0 for v in vel.values()):
        raise IsaacLabError(
            f"{where}: {at}.joint_vel: non-zero default joint velocities {vel} are not supported "
            "(joint_vel_rel is read relative to 0)"
        )
    return defaults


def _timing(env: Mapping[str, Any], sim: Mapping[str, Any], where: str) -> tuple[float, int]:
    """``sim.dt`` and ``decimation`` (a positive integer)."""
    dt = _number(sim.get("dt"), f"{where}: sim.dt")
    decimation = env.get("decimation")
    if isinstance(decimation, bool) or not isinstance(decimation, int) or decimation < 1:
        raise IsaacLabError(f"{where}: decimation: expected a positive integer, got {decimation!r}")
    return dt, decimation


def _engines(props: Mapping[str, Any], run: IsaacLabRun, where: str) -> dict[str, Mapping[str, Any]]:
    """Each engine's settings for the run: the articulation's solver iterations, the Newton solver."""
    try:
        return training_settings("isaaclab", {"articulation_props": props, "newton_solver": run.newton_solver})
    except ValueError as exc:
        raise IsaacLabError(f"{where}: scene.robot.spawn.{exc}") from None


def _articulation_props(robot: Mapping[str, Any], where: str) -> tuple[Mapping[str, Any], bool | None]:
    """``spawn.articulation_props`` (its solver iterations become the engines' settings,
    :func:`transfer.backends.training_settings`) and its self-collision switch."""
    spawn = robot.get("spawn") if isinstance(robot.get("spawn"), Mapping) else {}
    props = spawn.get("articulation_props") if isinstance(spawn.get("articulation_props"), Mapping) else {}
    self_collisions = props.get("enabled_self_collisions")
    if self_collisions is not None and not isinstance(self_collisions, bool):
        raise IsaacLabError(
            f"{where}: scene.robot.spawn.articulation_props.enabled_self_collisions: "
            f"expected true, false or null, got {self_collisions!r}"
        )
    return props, self_collisions


def _spawn_height(init: Mapping[str, Any], where: str) -> float | None:
    """The root's height at reset, ``init_state.pos`` z: where Isaac Lab puts the base with the joints at their
    defaults, which the engines create the robot in too (``None``: computed from the default pose)."""
    at = _INIT_STATE
    pos = init.get("pos")
    if isinstance(pos, (list, tuple)) and len(pos) == 3:
        z = _number(pos[2], f"{where}: {at}.pos[2]")
        return z if z > 0 else None
    return None


def _replay_command(env: Mapping[str, Any], observation: Sequence[Any]) -> tuple[float, float, float]:
    """The fixed command of the run's velocity command (:func:`fixed_command`) when the policy observes
    ``velocity_commands``; standing still otherwise."""
    command = (0.0, 0.0, 0.0)
    for term in observation:
        if term.name == "velocity_commands":
            commands = env.get("commands") or {}
            for cfg in commands.values():
                if isinstance(cfg, Mapping) and "VelocityCommand" in str(cfg.get("class_type") or ""):
                    command = fixed_command(cfg.get("ranges"))
                    break
    return command


def _clip_actions(run: IsaacLabRun, action: Any) -> Any:
    """The action term with the RSL-RL wrapper's ``clip_actions`` (agent.yaml): the raw actions were clipped to
    ``±clip_actions`` before the environment saw them (``RslRlVecEnvWrapper``)."""
    import dataclasses

    bound = (run.agent or {}).get("clip_actions")
    if bound is None:
        return action
    try:
        return dataclasses.replace(action, clip_actions=bound)
    except TaskError as exc:
        raise IsaacLabError(f"{run.folder / AGENT_YAML}: clip_actions: {exc}") from None


def _agent_checks(run: IsaacLabRun) -> None:
    agent = run.agent or {}
    where = str(run.folder / AGENT_YAML)
    groups = agent.get("obs_groups")
    if isinstance(groups, Mapping):
        actor = groups.get("actor", groups.get("policy"))
        if actor is not None and list(actor) != ["policy"]:
            raise IsaacLabError(
                f"{where}: obs_groups: the actor reads {list(actor)}; transfer feeds it the "
                "observations.policy group only"
            )
