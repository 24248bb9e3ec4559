"""The deploy configs robot projects ship beside their policies, read into the same :class:`~transfer.task.Task`.

- **Unitree's ``deploy.yaml``** (``unitree_rl_lab``'s ``export_deploy_cfg``, written to ``<run>/params/deploy.yaml``;
  ``unitree_rl_mjlab`` ships the same layout): ``joint_ids_map`` (policy joint i drives SDK motor
  ``joint_ids_map[i]``), ``step_dt`` (the policy period), ``stiffness`` / ``damping`` in the SDK's motor order,
  ``default_joint_pos`` in the policy's order, ``commands.base_velocity.ranges``, one
  ``actions.JointPositionAction`` (``scale``, ``offset``, ``clip`` per joint, ``joint_ids``) and
  ``observations.<term>`` (``params``, ``clip``, ``scale`` per component, ``history_length``: 1 for none), term-major
  as Isaac Lab concatenates them. It names neither the joints nor the engine: the policy's order is the training
  engine's (``--source physx`` for Isaac Lab, ``mujoco`` for mjlab), resolved on the robot (``--asset``).
- **legged_gym / unitree_rl_gym's ``deploy/deploy_mujoco/configs/*.yaml``**: ``kps``, ``kds``, ``default_angles``
  (the policy's order: the MJCF's, which the URDF Isaac Gym trained on also has), ``*_scale``, ``cmd_scale``,
  ``num_obs``, ``num_actions``, ``simulation_dt``, ``control_decimation``, ``cmd_init``, and ``xml_path`` /
  ``policy_path`` with ``{LEGGED_GYM_ROOT_DIR}``. The observation is the one ``deploy_mujoco.py`` builds: base angular
  velocity, gravity, command, joint positions and velocities, last action, then the gait clock (sin, cos of
  ``2 pi (t % 0.8) / 0.8``) when ``num_obs`` leaves two entries for it (Unitree's humanoids). Its first observation
  comes one policy step of zero action in (legged_gym's ``reset()`` steps once; ``deploy_mujoco.py`` reads after
  ``control_decimation`` physics steps): the clock first reads t = 0.02 s (``start_steps``); ``lin_vel_scale``
  puts the base linear velocity first (their Go2). Trained on PhysX (Isaac Gym), at legged_gym's 4 / 0 solver
  iterations; Unitree's deploy.yaml at Isaac Lab's legged settings (PhysX 4 / 0, Newton's MuJoCo-Warp).

Both list per-joint values by position, so :class:`DeployConfig` turns into a task only once the joint names in the
policy's order are known (:meth:`DeployConfig.task`). Every value says where it came from (:attr:`Task.source`).
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from transfer.actuators.spec import ActuatorGroup
from transfer.backends import native_backend, training_settings
from transfer.ordering import MAX_NAMES, OrderingConvention
from transfer.task._checks import TaskError, _integer, _number
from transfer.task.isaaclab.mapping import fixed_command
from transfer.task.model import ActionTerm, ObsTerm, Task
from transfer.task.terms import (
    OBS_TERMS,
    alias_hint,
    check_aliases,
    isaaclab_names,
    mjlab_names,
)

__all__ = ["LEGGED_GYM_PERIOD", "DeployConfig", "is_deploy_config", "isaaclab_legged_settings", "read_deploy_config"]

UNITREE_KEYS = ("joint_ids_map", "step_dt", "default_joint_pos", "actions", "observations")
LEGGED_GYM_KEYS = ("kps", "kds", "default_angles", "num_obs", "num_actions", "simulation_dt", "control_decimation")
LEGGED_GYM_PERIOD = 0.8
"""The gait clock's period (s) of unitree_rl_gym's humanoids (``deploy_mujoco.py`` and ``g1_env.py``: 0.8)."""
ISAACLAB_SIM_DT = 0.005
"""The physics step a deploy.yaml does not record: Isaac Lab's and mjlab's legged robots step at 200 Hz."""
PLACEHOLDER = "{LEGGED_GYM_ROOT_DIR}"


def isaaclab_legged_settings() -> dict[str, Any]:
    """The simulation settings Isaac Lab trains its legged robots under, as :class:`Task` keyword arguments (each
    engine's settings: :func:`transfer.backends.training_settings` of ``isaaclab_legged``).

    Those of the velocity-tracking tasks and the robot configs of ANYmal, Unitree and others, where a file
    describing an Isaac Lab-trained checkpoint says nothing else: physics at 200 Hz, policy at 50 Hz, PhysX
    articulations at 4 position / 0 velocity solver iterations (assets often author more: ANYmal C authors 32 / 16,
    under which the PhysX-trained policy falls), Newton's MuJoCo-Warp. The ground keeps
    :data:`~transfer.backends.scene.DEFAULT_GROUND` and self-collisions the asset's (docs/replay.md).
    """
    return {"sim_dt": ISAACLAB_SIM_DT, "decimation": 4, "engines": training_settings("isaaclab_legged")}


def is_deploy_config(data: Mapping[str, Any]) -> str | None:
    """``"unitree"`` or ``"legged_gym"`` when ``data`` (a parsed YAML mapping) is one of the two layouts."""
    if all(k in data for k in UNITREE_KEYS):
        return "unitree"
    if all(k in data for k in LEGGED_GYM_KEYS):
        return "legged_gym"
    return None


@dataclass(frozen=True)
class DeployConfig:
    """A deploy config read, before the joint names are known: :meth:`task` gives the task for them.

    ``kind``: ``unitree`` / ``legged_gym``; ``num_joints``: how many joints the policy's vectors hold; ``asset``: the
    robot file it names (legged_gym's ``xml_path``, placeholders resolved), else ``None``; ``policy``: the policy file
    it names, else ``None``; ``trained_on``: the engine it says trained the policy (legged_gym: PhysX), else ``None``.
    """

    path: Path
    kind: str
    data: Mapping[str, Any]
    num_joints: int
    asset: Path | None = None
    policy: Path | None = None
    trained_on: str | None = None
    asset_problem: str | None = None
    """Why the robot file the config names was not found (``--asset`` is needed then), else ``None``."""

    def task(self, joint_names: Sequence[str], aliases: Mapping[str, str] | None = None) -> Task:
        """The task for a policy whose joints, in its order, are ``joint_names`` (as many as :attr:`num_joints`).
        ``aliases``: observation terms the file names otherwise -> the term each is (``observation_aliases``)."""
        names = tuple(joint_names)
        if len(names) != self.num_joints:
            raise TaskError(
                f"{self.path}: lists {self.num_joints} joints ({'joint_ids_map' if self.kind == 'unitree' else 'num_actions'}), "
                f"but the robot has {len(names)} in the policy's order ({', '.join(names[:6])}{', ...' if len(names) > 6 else ''}); "
                "is this the policy's robot?"
            )
        try:
            if self.kind == "unitree":
                return _unitree_task(self, names, check_aliases(aliases, "--set observation_aliases"))
            return _legged_gym_task(self, names)
        except TaskError as exc:
            raise TaskError(f"{self.path}: {exc}") from None


def read_deploy_config(path: str | Path, data: Mapping[str, Any], roots: Sequence[str | Path] = ()) -> DeployConfig:
    """Read a deploy config (``data``: its parsed YAML). ``roots``: folders ``{LEGGED_GYM_ROOT_DIR}`` may stand for
    (tried after ``$LEGGED_GYM_ROOT_DIR`` and the folders above the file)."""
    path = Path(path)
    kind = is_deploy_config(data)
    if kind is None:
        raise TaskError(f"{path}: neither a Unitree deploy.yaml nor a legged_gym deploy config")
    try:
        if kind == "unitree":
            ids = _ints(data["joint_ids_map"], "joint_ids_map")
            if len(set(ids)) != len(ids):
                raise TaskError(f"joint_ids_map: {ids} names a motor twice")
            return DeployConfig(path, kind, data, len(ids))
        n = _integer(data["num_actions"], "num_actions", 1)
        asset, problem = _placeholder(path, data.get("xml_path"), "xml_path", roots)
        if asset is not None and asset.suffix.lower() not in (".xml", ".urdf"):  # xml_path: /etc/passwd
            asset, problem = (
                None,
                (
                    f"xml_path: {str(data['xml_path'])!r} is no MJCF (.xml) or URDF (.urdf) file; "
                    "pass --asset with the robot's MJCF"
                ),
            )
        policy, _ = _placeholder(path, data.get("policy_path"), "policy_path", roots)
        trained_on = native_backend(OrderingConvention.PHYSX)  # Isaac Gym: PhysX, in PhysX's order
        return DeployConfig(path, kind, data, n, asset, policy, trained_on, problem and f"{path}: {problem}")
    except TaskError as exc:
        raise TaskError(f"{path}: {exc}") from None


# ---------------------------------------------------------------------------------------------------- values


def _ints(value: Any, where: str) -> list[int]:
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        raise TaskError(f"{where}: expected a list of integers, got {value!r}")
    return [_integer(v, f"{where}[{i}]", 0) for i, v in enumerate(value)]


def _floats(value: Any, where: str, n: int | None = None, each: str = "joint of the policy") -> list[float]:
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        raise TaskError(f"{where}: expected a list of numbers, got {value!r}")
    if len(value) > MAX_NAMES:  # before a million entries are each checked
        raise TaskError(f"{where}: {len(value)} entries, more than any robot has joints (at most {MAX_NAMES})")
    out = [_number(v, f"{where}[{i}]") for i, v in enumerate(value)]
    if n is not None and len(out) != n:
        raise TaskError(f"{where}: {len(out)} entries, expected {n} (one per {each})")
    return out


def _joint_ids(value: Any, where: str, n: int) -> list[int] | None:
    """The joint indices a deploy.yaml's ``joint_ids`` names among ``n`` joints: ``None`` (every joint, in order) for
    null or a slice covering them all (``slice(None)``, Isaac Lab's default, which Unitree's exporter writes as
    ``!!python/object/apply:builtins.slice [null, null, null]``); else the list, each index below ``n``."""
    ids = list(range(n))[value] if isinstance(value, slice) else None if value is None else _ints(value, where)
    if ids is not None and any(i >= n for i in ids):
        raise TaskError(f"{where}: {value} names a joint past the {n} the policy has")
    return None if ids is None or ids == list(range(n)) else ids


def _by_name(values: Sequence[float], names: Sequence[str]) -> dict[str, float]:
    return dict(zip(names, values, strict=True))


def _placeholder(path: Path, text: Any, field: str, roots: Sequence[str | Path]) -> tuple[Path | None, str | None]:
    """``(file, None)`` for a path the config names, with ``{LEGGED_GYM_ROOT_DIR}`` resolved against
    ``$LEGGED_GYM_ROOT_DIR``, ``roots`` and the folders above the config (unitree_rl_gym keeps it in
    ``deploy/deploy_mujoco/configs/``); ``(None, why)`` when no such file is found (``--asset`` may give it)."""
    if text is None:
        return None, None
    if not isinstance(text, str) or not text:
        raise TaskError(f"{field}: expected a path, got {text!r}")
    if PLACEHOLDER not in text:
        found = (path.parent / text).resolve()
        if found.is_dir():
            return None, _folder(field, text, found)
        return (
            (found, None)
            if found.is_file()
            else (None, f"{field}: {text!r} resolves to {found}, which does not exist; pass --asset")
        )
    env = os.environ.get("LEGGED_GYM_ROOT_DIR")
    candidates = [Path(p) for p in ([env] if env else [])] + [Path(r) for r in roots] + list(path.resolve().parents)
    for root in candidates:
        found = Path(text.replace(PLACEHOLDER, str(root)))
        if found.is_file():
            return found.resolve(), None
        if found.is_dir():  # the placeholder was found: what it names is the wrong kind of thing
            return None, _folder(field, text, found.resolve())
    tried = ", ".join(str(c) for c in candidates[:4]) + (", ..." if len(candidates) > 4 else "")
    return None, (
        f"{field}: {text!r}: no folder stands for {PLACEHOLDER} (tried $LEGGED_GYM_ROOT_DIR, then {tried}). Set "
        "LEGGED_GYM_ROOT_DIR to the unitree_rl_gym / legged_gym checkout, or pass --asset with the robot's MJCF"
    )


def _folder(field: str, text: str, found: Path) -> str:
    """What a path naming a folder where a file belongs says: the folder, and for ``xml_path`` the robot files in it."""
    if field != "xml_path":
        return f"{field}: {text!r} is the folder {found}, not a file: give the file in it"
    files = sorted(p.name for p in found.glob("*") if p.suffix.lower() in (".xml", ".urdf") and p.is_file())
    inside = f" ({', '.join(files[:6])}{', ...' if len(files) > 6 else ''})" if files else ""
    return f"{field}: {text!r} is the folder {found}, not a file: give the robot's XML file in it{inside}, or --asset"


# ---------------------------------------------------------------------------------------------------- Unitree


_TERM_NAMES: Mapping[str, str] = {**{n: n for n in OBS_TERMS}, **mjlab_names(), **isaaclab_names()}


def _is_velocity_command(command: Any, commands: Mapping[str, Any]) -> bool:
    """Whether the command a term's ``params.command_name`` names is a base velocity command: Isaac Lab's
    ``base_velocity``, or one the file's ``commands:`` gives ``lin_vel_x`` ranges."""
    found = commands.get(command) if isinstance(command, str) else None
    ranges = found.get("ranges") if isinstance(found, Mapping) else None
    return command == "base_velocity" or (isinstance(ranges, Mapping) and "lin_vel_x" in ranges)


def _term_name(
    name: str, params: Mapping[str, Any], commands: Mapping[str, Any], aliases: Mapping[str, str], where: str
) -> str:
    """The term transfer builds for the deploy.yaml term ``name``: the user's alias, the term of that name (or its
    Isaac Lab or mjlab name), else the base velocity command's observation when ``params.command_name`` names it."""
    term = aliases.get(name) or _TERM_NAMES.get(name)
    if term is None and _is_velocity_command(params.get("command_name"), commands):
        term = "velocity_commands"
    if term is None:
        raise TaskError(
            f"{where}: unknown observation term {name!r}; transfer builds {', '.join(OBS_TERMS)} (and their "
            f"Isaac Lab and mjlab names); {alias_hint(name)}"
        )
    return term


def _unitree_term(
    name: str, cfg: Any, where: str, num_joints: int, commands: Mapping[str, Any], aliases: Mapping[str, str]
) -> ObsTerm:
    if not isinstance(cfg, Mapping):
        raise TaskError(f"{where}: expected params, clip, scale, history_length; got {cfg!r}")
    params = cfg.get("params") or {}
    if not isinstance(params, Mapping):
        raise TaskError(f"{where}.params: expected a mapping, got {params!r}")
    term = _term_name(name, params, commands, aliases, where)
    size = OBS_TERMS[term].size
    scale = cfg.get("scale")
    if term != name and size is not None and isinstance(scale, (list, tuple)) and len(scale) != size:
        raise TaskError(
            f"{where}.scale: {len(scale)} entries, but {name!r} is read as {term} ({size} entries: "
            f"{', '.join(OBS_TERMS[term].components or ())}); is it that term?"
        )
    entity = params.get("asset_cfg") if isinstance(params.get("asset_cfg"), Mapping) else {}
    ids = _joint_ids(entity.get("joint_ids"), f"{where}.params.asset_cfg.joint_ids", num_joints)
    if ids is not None:
        raise TaskError(
            f"{where}.params.asset_cfg.joint_ids: {ids}; the term reads a subset or another order of the "
            "joints, which transfer does not replay: describe it in a task file (--config)"
        )
    command = params.get("command_name")
    said = aliases.get(name) == term  # the user's word on what the term is
    if term == "velocity_commands" and command is not None and not said and not _is_velocity_command(command, commands):
        raise TaskError(
            f"{where}.params.command_name: {command!r}; transfer replays a base velocity command "
            "(base_velocity, or one under commands: with lin_vel_x ranges)"
        )
    history = _integer(cfg.get("history_length", 1) or 1, f"{where}.history_length", 1)
    return ObsTerm(
        term,
        scale=1.0 if scale is None else (tuple(scale) if isinstance(scale, (list, tuple)) else scale),
        clip=cfg.get("clip"),
        history_length=0 if history == 1 else history,
        params={k: v for k, v in params.items() if k in OBS_TERMS[term].params},
    )


def _unitree_observation(
    data: Mapping[str, Any], num_joints: int, aliases: Mapping[str, str]
) -> tuple[tuple[ObsTerm, ...], dict[str, str]]:
    """The observation terms in order, and the names read as another term (``{file's name: term}``)."""
    obs = data["observations"]
    if not isinstance(obs, Mapping) or not obs:
        raise TaskError(f"observations: expected a mapping of terms, got {obs!r}")
    for flag in ("use_gym_history", "scale_first"):
        if obs.get(flag):
            raise TaskError(
                f"observations.{flag} is true: transfer builds Isaac Lab's layout (term by term, clip then "
                f"scale); describe this one in a task file (--config)"
            )
    terms = {k: v for k, v in obs.items() if k not in ("use_gym_history", "scale_first")}
    first = next(iter(terms.values()))
    if isinstance(first, Mapping) and "params" not in first and all(isinstance(v, Mapping) for v in first.values()):
        raise TaskError(f"observations: groups {sorted(terms)} (several policy inputs); transfer feeds one vector")
    commands = data.get("commands") if isinstance(data.get("commands"), Mapping) else {}
    out, mapped = [], {}
    for name, cfg in terms.items():
        try:
            out.append(_unitree_term(str(name), cfg, f"observations.{name}", num_joints, commands, aliases))
        except TaskError as exc:
            raise TaskError(
                str(exc) if str(exc).startswith("observations.") else f"observations.{name}: {exc}"
            ) from None
        if out[-1].name != name and _TERM_NAMES.get(str(name)) != out[-1].name:
            mapped[str(name)] = out[-1].name
    return tuple(out), mapped


def _unitree_action(data: Mapping[str, Any], names: tuple[str, ...]) -> ActionTerm:
    actions = data["actions"]
    if not isinstance(actions, Mapping) or len(actions) != 1:
        raise TaskError(
            f"actions: expected one action term, found {sorted(actions) if isinstance(actions, Mapping) else actions!r}"
        )
    ((kind, cfg),) = actions.items()
    if kind != "JointPositionAction":
        raise TaskError(f"actions.{kind}: transfer replays JointPositionAction only (target = offset + scale x action)")
    at = f"actions.{kind}"
    if not isinstance(cfg, Mapping):
        raise TaskError(f"{at}: expected scale, offset, clip, joint_ids; got {cfg!r}")
    ids = _joint_ids(cfg.get("joint_ids"), f"{at}.joint_ids", len(names))
    joints = names if ids is None else tuple(names[i] for i in ids)
    n = len(joints)
    scale = cfg.get("scale", 1.0)
    scale = _by_name(_floats(scale, f"{at}.scale", n), joints) if isinstance(scale, (list, tuple)) else scale
    offset = cfg.get("offset", 0.0)
    offset = _by_name(_floats(offset, f"{at}.offset", n), joints) if isinstance(offset, (list, tuple)) else offset
    clip = cfg.get("clip")
    if clip is not None:
        if isinstance(clip, (list, tuple)) and len(clip) == n and all(isinstance(c, (list, tuple)) for c in clip):
            unbounded = lambda c: len(c) == 2 and c[0] == -math.inf and c[1] == math.inf  # noqa: E731
            # [-inf, inf]: a joint Isaac Lab's clip mapping names none of (the exporter writes it so): no bound
            clip = {j: tuple(c) for j, c in zip(joints, clip, strict=True) if not unbounded(c)} or None
        elif not (isinstance(clip, (list, tuple)) and len(clip) == 2):
            raise TaskError(f"{at}.clip: expected null, [low, high] or one [low, high] per joint ({n}), got {clip!r}")
    return ActionTerm(
        scale=scale, use_default_offset=False, offset=offset, clip=clip, joints=None if joints == names else joints
    )


def _unitree_task(cfg: DeployConfig, names: tuple[str, ...], aliases: Mapping[str, str]) -> Task:
    data, n = cfg.data, cfg.num_joints
    ids = _ints(data["joint_ids_map"], "joint_ids_map")
    gains = {}
    for key in ("stiffness", "damping"):
        if data.get(key) is None:
            continue
        sdk = _floats(data[key], key)  # the SDK's motor order: policy joint i is motor ids[i]
        if max(ids) >= len(sdk):
            raise TaskError(f"{key}: {len(sdk)} entries, but joint_ids_map names motor {max(ids)}")
        gains[key] = {names[i]: sdk[ids[i]] for i in range(n)}
    step = _number(data["step_dt"], "step_dt")
    decimation = round(step / ISAACLAB_SIM_DT)
    if decimation < 1 or abs(decimation * ISAACLAB_SIM_DT - step) > 1e-9:
        raise TaskError(
            f"step_dt: {step} s is not a whole number of {ISAACLAB_SIM_DT} s physics steps; give sim_dt and "
            "decimation in a task file (--config)"
        )
    commands = data.get("commands") or {}
    ranges = (commands.get("base_velocity") or {}).get("ranges") if isinstance(commands, Mapping) else None
    observation, mapped = _unitree_observation(data, n, aliases)
    return Task(
        name=cfg.path.parent.parent.name if cfg.path.parent.name == "params" else cfg.path.stem,
        observation=observation,
        observation_aliases=mapped,
        action=_unitree_action(data, names),
        joint_names=names,
        default_joint_pos=_by_name(_floats(data["default_joint_pos"], "default_joint_pos", n), names),
        sim_dt=ISAACLAB_SIM_DT,
        decimation=decimation,
        command=fixed_command(ranges if isinstance(ranges, Mapping) else None),
        # what Isaac Lab trains legged robots under; the file says nothing
        engines=training_settings("isaaclab_legged"),
        source=str(cfg.path),
        **gains,
    )


# ---------------------------------------------------------------------------------------------------- legged_gym


def _legged_gym_task(cfg: DeployConfig, names: tuple[str, ...]) -> Task:
    data, n = cfg.data, cfg.num_joints
    num_obs = _integer(data["num_obs"], "num_obs", 1)
    scale = lambda key: _number(data.get(key, 1.0), key)  # noqa: E731
    cmd_scale = tuple(_floats(data.get("cmd_scale", [1.0, 1.0, 1.0]), "cmd_scale", 3, "command component: vx, vy, wz"))
    terms = [ObsTerm("base_lin_vel", scale=scale("lin_vel_scale"))] if "lin_vel_scale" in data else []
    terms += [
        ObsTerm("base_ang_vel", scale=scale("ang_vel_scale")),
        ObsTerm("projected_gravity"),
        ObsTerm("velocity_commands", scale=cmd_scale),
        ObsTerm("joint_pos_rel", scale=scale("dof_pos_scale")),
        ObsTerm("joint_vel_rel", scale=scale("dof_vel_scale")),
        ObsTerm("last_action"),
    ]
    base = 3 * len(terms[:-3]) + 3 * n
    if num_obs == base + 2:
        terms.append(ObsTerm("gait_phase", params={"period": LEGGED_GYM_PERIOD}))
    elif num_obs != base:
        raise TaskError(
            f"num_obs: {num_obs}, but deploy_mujoco.py's observation for {n} joints holds {base} entries "
            f"({', '.join(t.name for t in terms)}), or {base + 2} with the gait clock; describe this observation in a "
            "task file (--config)"
        )
    command = tuple(_floats(data.get("cmd_init", [0.0, 0.0, 0.0]), "cmd_init", 3))
    return Task(
        name=cfg.path.stem,
        observation=tuple(terms),
        action=ActionTerm(scale=_number(data.get("action_scale", 1.0), "action_scale"), use_default_offset=True),
        joint_names=names,
        default_joint_pos=_by_name(_floats(data["default_angles"], "default_angles", n), names),
        stiffness=_by_name(_floats(data["kps"], "kps", n), names),
        damping=_by_name(_floats(data["kds"], "kds", n), names),
        sim_dt=_number(data["simulation_dt"], "simulation_dt"),
        decimation=_integer(data["control_decimation"], "control_decimation", 1),
        command=command,  # type: ignore[arg-type]
        asset=None if cfg.asset is None else str(cfg.asset),
        trained_on=cfg.trained_on,
        actuators=(ActuatorGroup("legged_gym_pd", "ideal_pd", names),),  # the torque legged_gym computes each step
        start_steps=1,  # legged_gym's reset() steps once with zero actions: its first observation is one step in
        engines=training_settings("legged_gym"),  # legged_gym's LeggedRobotCfg.sim.physx (Isaac Gym)
        source=str(cfg.path),
    )
