"""The observation and action terms of a run's ``env.yaml`` (``observations.policy``, ``actions``), and the
readers of its values (numbers, joint-name patterns expanded Isaac Lab's way) the mapping shares.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from transfer._numbers import is_finite_number
from transfer._patterns import full_matches
from transfer.task._checks import TaskError
from transfer.task.isaaclab.yaml_safe import IsaacLabError
from transfer.task.model import ActionTerm, ObsTerm
from transfer.task.names import expand_joint_values as _expand_joint_values
from transfer.task.terms import OBS_TERMS, alias_hint, isaaclab_names

OBSERVATION_FUNCS: Mapping[str, str] = isaaclab_names()
"""Isaac Lab observation functions (``isaaclab.envs.mdp.observations``) -> the task's observation term (the
``isaaclab`` names of :data:`transfer.task.terms.OBS_TERMS`)."""

_FUNC_MODULES = (
    "isaaclab.",
    "isaaclab_tasks.",
    "omni.isaac.lab.",
    "omni.isaac.lab_tasks.",
    "unitree_rl_lab.",
    "whole_body_tracking.",
)
"""Modules whose functions of those names are Isaac Lab's own (the task modules re-export them; unitree_rl_lab's
``mdp`` re-exports Isaac Lab's and adds ``gait_phase``)."""

_JOINT_ACTIONS = {
    "JointPositionToLimitsAction": "scales the action to the joint limits",
    "EMAJointPositionToLimitsAction": "scales the action to the joint limits and smooths it",
    "RelativeJointPositionAction": "adds the action to the current joint position",
    "JointVelocityAction": "sets joint velocity targets",
    "JointEffortAction": "sets joint efforts",
}


# ---------------------------------------------------------------------------------------------------- values


def expand_joint_values(
    values: Mapping[str, float],
    names: Sequence[str],
    *,
    field: str,
    source: str | None = None,
    require_all: bool = False,
) -> dict[str, float]:
    """:func:`transfer.task.expand_joint_values` (full match; a pattern matching nothing or a joint matched twice is
    an error) raising :class:`IsaacLabError`."""
    try:
        return _expand_joint_values(values, names, field=field, source=source, require_all=require_all)
    except TaskError as exc:
        raise IsaacLabError(str(exc)) from None


def _number(value: Any, where: str) -> float:
    if not is_finite_number(value):
        raise IsaacLabError(f"{where}: expected a number, got {value!r}")
    return float(value)


def _patterns(value: Any, where: str) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
        return list(value)
    raise IsaacLabError(f"{where}: expected a regular expression or a list of them, got {value!r}")


def _match(patterns: Sequence[str], names: Sequence[str], where: str, *, preserve_order: bool = False) -> list[str]:
    """Joints the patterns full-match, Isaac Lab's way: each pattern must match a joint, no joint twice; in
    ``names`` order, or in pattern order with ``preserve_order``."""
    picked = expand_joint_values(dict.fromkeys(patterns, 0.0), names, field=where, require_all=False)
    if not preserve_order:
        return list(picked)
    out: list[str] = []
    for p in patterns:  # each compiled and bounded by expand_joint_values above already
        out += [n for n in (full_matches(p, names, where) if p not in names else [p]) if n not in out]
    return out


def _per_joint(value: Any, joints: Sequence[str], where: str) -> dict[str, float]:
    """A float (every joint of ``joints``) or ``{pattern: float}`` (the joints it matches) as per-joint values."""
    if isinstance(value, Mapping):
        return expand_joint_values(
            {str(k): _number(v, f"{where}[{k!r}]") for k, v in value.items()}, joints, field=where, require_all=False
        )
    number = _number(value, where)
    return dict.fromkeys(joints, number)


# ---------------------------------------------------------------------------------------------------- terms


def _term_name(
    key: str, func: str, params: Mapping[str, Any], commands: Mapping[str, Any], aliases: Mapping[str, str]
) -> str | None:
    """The term transfer builds for ``observations.policy.<key>`` (``func``: its ``module:function``): the user's
    alias of the key or the function, Isaac Lab's own function of a known name (``generated_commands`` of a
    ``MotionCommand``: the motion command), else the base velocity command's observation when
    ``params.command_name`` names a velocity command; ``None`` when none of these."""
    module, _, fname = func.rpartition(":")
    term = aliases.get(key) or aliases.get(fname)
    if term is None and (module + ".").startswith(_FUNC_MODULES):
        term = OBSERVATION_FUNCS.get(fname)
    cmd = commands.get(params.get("command_name")) if isinstance(params.get("command_name"), str) else None
    kind = str(cmd.get("class_type") or "") if isinstance(cmd, Mapping) else ""
    if term == "velocity_commands" and "MotionCommand" in kind:
        return "motion_command"  # a tracker's (BeyondMimic's, mjlab's)
    if term is None and "VelocityCommand" in kind:
        return "velocity_commands"
    return term


def _observation(
    env: Mapping[str, Any],
    names: Sequence[str],
    action_name: str,
    where: str,
    notes: list[str],
    aliases: Mapping[str, str],
    mapped: dict[str, str],
) -> tuple[ObsTerm, ...]:
    """The policy group's terms in order; ``mapped`` receives the keys read as another term (``{key: term}``)."""
    obs = env.get("observations")
    group = obs.get("policy") if isinstance(obs, Mapping) else None
    if not isinstance(group, Mapping):
        raise IsaacLabError(f"{where}: no observations.policy group (the observation the actor reads)")
    if group.get("concatenate_terms") is False:
        raise IsaacLabError(
            f"{where}: observations.policy.concatenate_terms is false: the actor reads one concatenated vector"
        )
    group_history = group.get("history_length")  # overrides every term's (Isaac Lab's ObservationGroupCfg)
    if group_history is not None:
        _history(group_history, group.get("flatten_history_dim", True), f"{where}: observations.policy")
    terms: list[ObsTerm] = []
    noisy = False
    commands = env.get("commands") if isinstance(env.get("commands"), Mapping) else {}
    for key, cfg in group.items():
        if not isinstance(cfg, Mapping):
            continue  # a group setting (concatenate_terms, enable_corruption, ...) or a disabled term (null)
        at = f"observations.policy.{key}"
        func = cfg.get("func")
        if not isinstance(func, str):
            raise IsaacLabError(f"{where}: {at}: no func (expected 'module:function')")
        params = cfg.get("params") if isinstance(cfg.get("params"), Mapping) else {}
        term = _term_name(str(key), func, params, commands, aliases)
        if term is None:
            raise IsaacLabError(
                f"{where}: {at}: unknown observation term func {func!r}. transfer builds these Isaac Lab terms: "
                f"{', '.join(OBSERVATION_FUNCS)}; {alias_hint(str(key))}. Or describe the observation in a task "
                "file (--config; the run folder still gives the checkpoint, the engine and the asset path)."
            )
        if term != key and OBSERVATION_FUNCS.get(func.rpartition(":")[2]) != term:
            mapped[str(key)] = term
        aliased = term in (aliases.get(str(key)), aliases.get(func.rpartition(":")[2]))
        _check_params(term, params, names, action_name, commands, f"{where}: {at}", aliased)
        if group_history is not None:
            history = _history(group_history, group.get("flatten_history_dim", True), f"{where}: observations.policy")
        else:
            history = _history(cfg.get("history_length") or 0, cfg.get("flatten_history_dim", True), f"{where}: {at}")
        if cfg.get("modifiers"):
            raise IsaacLabError(f"{where}: {at}.modifiers: observation modifiers are not supported at replay")
        noisy |= cfg.get("noise") is not None
        try:
            terms.append(
                ObsTerm(
                    term,
                    scale=_scale(cfg.get("scale"), f"{where}: {at}.scale"),
                    clip=_clip(cfg.get("clip"), f"{where}: {at}.clip"),
                    history_length=history,
                    params={k: params[k] for k in OBS_TERMS[term].params if k in params},
                )
            )
        except TaskError as exc:
            raise IsaacLabError(f"{where}: {at}: {exc}") from None
    if not terms:
        raise IsaacLabError(f"{where}: observations.policy has no terms")
    if noisy:
        notes.append("observation noise is a training-time corruption and is not applied at replay")
    return tuple(terms)


def _history(length: Any, flatten: Any, where: str) -> int:
    """A ``history_length`` (0: none) whose history is flattened into the term (``flatten_history_dim``)."""
    if isinstance(length, bool) or not isinstance(length, int) or length < 0:
        raise IsaacLabError(f"{where}.history_length: expected a whole number >= 0, got {length!r}")
    if length > 0 and flatten is False:
        raise IsaacLabError(
            f"{where}.flatten_history_dim is false: the history stays a separate axis, which a policy "
            "reading one flat vector cannot take"
        )
    return length


def _scale(value: Any, where: str) -> float | tuple[float, ...]:
    """One scale, or one per entry (a list: Isaac Lab's per-component ``scale``)."""
    if value is None:
        return 1.0
    if isinstance(value, (list, tuple)):
        return tuple(_number(v, f"{where}[{i}]") for i, v in enumerate(value))
    return _number(value, where)


def _clip(value: Any, where: str) -> tuple[float, float] | None:
    if value is None:
        return None
    if not isinstance(value, (list, tuple)) or len(value) != 2:
        raise IsaacLabError(f"{where}: expected (low, high) or null, got {value!r}")
    return (_number(value[0], where), _number(value[1], where))


def _check_params(
    term: str,
    params: Mapping[str, Any],
    names: Sequence[str],
    action_name: str,
    commands: Mapping[str, Any],
    where: str,
    aliased: bool = False,
) -> None:
    asset = params.get("asset_cfg")
    if isinstance(asset, Mapping):
        if asset.get("name", "robot") != "robot":
            raise IsaacLabError(f"{where}: reads the asset {asset.get('name')!r}; transfer replays scene.robot only")
        joints = asset.get("joint_names")
        if joints is not None and term.startswith("joint_"):
            picked = _match(
                _patterns(joints, f"{where}.params.asset_cfg.joint_names"),
                names,
                f"{where}.params.asset_cfg.joint_names",
                preserve_order=bool(asset.get("preserve_order")),
            )
            if picked != list(names):
                raise IsaacLabError(
                    f"{where} reads the joints {picked}, not every joint of the robot in its order; joint terms over "
                    "a subset of joints are not supported at replay"
                )
    if term == "velocity_commands" and not aliased:  # an alias is the user's word on what the term is
        name = params.get("command_name")
        cmd = commands.get(name) if isinstance(name, str) else None
        kind = str(cmd.get("class_type") or "") if isinstance(cmd, Mapping) else ""
        if "VelocityCommand" not in kind:
            raise IsaacLabError(
                f"{where}: generated_commands reads the command {name!r}, which is {kind or 'not in commands'}; "
                "transfer replays a base velocity command (vx, vy, wz) only"
            )
    if term == "last_action" and params.get("action_name") not in (None, action_name):
        raise IsaacLabError(
            f"{where}: last_action of {params['action_name']!r}, not of the action term {action_name!r}"
        )


def _action(env: Mapping[str, Any], names: Sequence[str], where: str) -> tuple[str, ActionTerm]:
    actions = env.get("actions")
    terms = {k: v for k, v in actions.items() if v is not None} if isinstance(actions, Mapping) else {}
    if len(terms) != 1:
        raise IsaacLabError(f"{where}: actions: expected one action term, found {sorted(terms) or 'none'}")
    ((key, cfg),) = terms.items()
    at = f"actions.{key}"
    if not isinstance(cfg, Mapping):
        raise IsaacLabError(f"{where}: {at}: expected an action configuration, got {cfg!r}")
    kind = str(cfg.get("class_type") or "").rpartition(":")[2]
    if kind != "JointPositionAction":
        why = _JOINT_ACTIONS.get(kind, "is not a joint position action")
        raise IsaacLabError(
            f"{where}: {at} is a {kind or 'class_type-less action'} ({why}); transfer replays JointPositionAction "
            "only (joint position target = default + scale x action, or scale x action + offset 0)"
        )
    if cfg.get("asset_name", "robot") != "robot":
        raise IsaacLabError(f"{where}: {at} drives {cfg.get('asset_name')!r}; transfer replays scene.robot only")
    joints = _match(
        _patterns(cfg.get("joint_names", ".*"), f"{at}.joint_names"),
        names,
        f"{at}.joint_names",
        preserve_order=bool(cfg.get("preserve_order")),
    )
    ordered = [n for n in names if n in joints]
    if joints != ordered:
        raise IsaacLabError(
            f"{where}: {at} lists its joints in pattern order (preserve_order: true) as {joints}, which is not the "
            f"robot's order {ordered}; transfer's actions follow the checkpoint's joint order"
        )
    per_joint = _per_joint(cfg.get("scale", 1.0), joints, f"{at}.scale")
    scales = set(per_joint.values())
    scale: float | dict[str, float] = scales.pop() if len(scales) == 1 else dict(per_joint)
    use_default = cfg.get("use_default_offset", True)
    if not isinstance(use_default, bool):
        raise IsaacLabError(f"{where}: {at}.use_default_offset: expected true or false, got {use_default!r}")
    offset: Any = 0.0
    if not use_default:  # Isaac Lab ignores offset when the defaults are the offset
        per = _per_joint(cfg.get("offset", 0.0), joints, f"{at}.offset")
        offset = per[joints[0]] if len(set(per.values())) == 1 else per
    clip = cfg.get("clip")
    if clip is not None:
        if not isinstance(clip, Mapping):
            raise IsaacLabError(f"{where}: {at}.clip: expected {{joint pattern: (low, high)}} or null, got {clip!r}")
        clip = {str(k): _clip(v, f"{where}: {at}.clip[{k!r}]") for k, v in clip.items()}
    try:
        action = ActionTerm(
            kind="joint_position",
            scale=scale,
            use_default_offset=use_default,
            joints=None if joints == list(names) else tuple(joints),
            offset=offset,
            clip=clip,
        )
    except TaskError as exc:
        raise IsaacLabError(f"{where}: {at}: {exc}") from None
    return key, action
