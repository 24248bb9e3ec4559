"""Isaac Lab run folders: ``params/env.yaml`` read safely and mapped to the same :class:`~transfer.task.Task`.

An Isaac Lab training run leaves ``logs/rsl_rl/<experiment>/<timestamp>/`` with ``params/env.yaml`` and
``params/agent.yaml`` (the whole configuration, written by ``isaaclab.utils.io.dump_yaml``: ``class_to_dict`` of
the config classes, then ``yaml.dump`` with PyYAML's default dumper), RSL-RL checkpoints ``model_<iter>.pt`` and
often ``exported/policy.pt`` / ``policy.onnx``. :func:`read_isaaclab_run` reads such a folder;
:func:`isaaclab_task` maps its ``env.yaml`` to a task on an asset's joint names.

Safety. The dump holds Python tags (``!!python/tuple``, ``!!python/object/apply:builtins.slice``, ...). They are
read with a :class:`yaml.SafeLoader` subclass that turns the known harmless ones (:data:`HARMLESS_TAGS`) into
plain values and refuses every other Python tag, naming it and its line: nothing is imported, constructed or
executed, and the ``.pkl`` files Isaac Lab writes beside the YAML are never opened.

What is read (everything else in the file is ignored):

- ``observations.policy``: the terms in order, by ``func`` (:data:`OBSERVATION_FUNCS`), with ``scale``, ``clip``
  and ``history_length`` (0 or 1; more is refused); ``noise`` is a training-time corruption and is not applied
  at replay; an unknown ``func`` is refused, naming it and saying how to describe the term in a task file;
- ``actions``: one ``JointPositionAction`` (``scale``, ``offset``, ``use_default_offset``, ``joint_names``,
  ``preserve_order``, ``clip``); the other action types are refused (none maps onto a position target around the
  defaults);
- ``scene.robot``: ``init_state.joint_pos`` / ``joint_vel`` and the ``actuators`` (``joint_names_expr``,
  ``stiffness``, ``damping``, ``armature``, ``effort_limit(_sim)``, ``velocity_limit(_sim)``) as full-match
  regular expressions on the asset's joint names, Isaac Lab's way (a pattern matching nothing, or a joint matched
  twice, is an error); ``spawn.usd_path`` (the asset the run names);
  ``spawn.articulation_props`` solver iterations; ``joint_ordering`` (Isaac Lab 3.0: the checkpoint's order when
  it is not the engine's own);
- ``sim.dt``, ``decimation``, ``commands.<name>.ranges`` (replay picks a fixed command: :func:`fixed_command`);
- which engine trained it (:func:`training_engine`): ``sim.physics`` with a Newton manager (or Isaac Lab's
  Newton branch ``sim.newton_cfg``) and a MuJoCo-Warp solver means Newton, ``mjwarp`` joint order; a PhysX
  physics config (or Isaac Lab 2's ``sim.physx``) means PhysX, ``physx`` order;
- ``params/agent.yaml``: ``experiment_name`` (the task's name), the actor's ``activation`` (RSL-RL checkpoints),
  ``clip_actions`` (refused when set) and ``obs_groups`` (the actor must read the ``policy`` group).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from transfer.task._checks import CONVENTIONS, TaskError
from transfer.task.model import ActionTerm, ObsTerm, Task
from transfer.task.names import expand_joint_values as _expand_joint_values

__all__ = [
    "ENV_YAML",
    "HARMLESS_TAGS",
    "OBSERVATION_FUNCS",
    "IsaacLabError",
    "IsaacLabRun",
    "find_run",
    "fixed_command",
    "isaaclab_task",
    "load_isaaclab_yaml",
    "read_isaaclab_run",
    "run_checkpoint",
    "training_engine",
]

ENV_YAML = Path("params/env.yaml")
AGENT_YAML = Path("params/agent.yaml")

_PYTHON_TAG = "tag:yaml.org,2002:python/"

HARMLESS_TAGS: Mapping[str, str] = MappingProxyType(
    {
        "!!python/tuple": "a tuple",
        "!!python/object/apply:builtins.slice": "a slice of integers or nulls (Isaac Lab's joint_ids: slice(None))",
        "!!python/none": "null",
        "!!python/bool": "a boolean",
        "!!python/int": "an integer",
        "!!python/long": "an integer",
        "!!python/float": "a number",
        "!!python/str": "a string",
        "!!python/unicode": "a string",
        "!!python/list": "a list",
        "!!python/dict": "a mapping",
    }
)
"""The Python tags read from a run's YAML, and what each becomes. Any other ``!!python/...`` tag is refused."""

OBSERVATION_FUNCS: Mapping[str, str] = MappingProxyType(
    {
        "base_lin_vel": "base_lin_vel",
        "base_ang_vel": "base_ang_vel",
        "projected_gravity": "projected_gravity",
        "generated_commands": "velocity_commands",
        "joint_pos_rel": "joint_pos_rel",
        "joint_vel_rel": "joint_vel_rel",
        "joint_pos": "joint_pos",
        "joint_vel": "joint_vel",
        "last_action": "last_action",
    }
)
"""Isaac Lab observation functions (``isaaclab.envs.mdp.observations``) -> the task's observation term."""

_FUNC_MODULES = ("isaaclab.", "isaaclab_tasks.", "omni.isaac.lab.", "omni.isaac.lab_tasks.")
"""Modules whose functions of those names are Isaac Lab's own (the task modules re-export them)."""

_JOINT_ACTIONS = {
    "JointPositionToLimitsAction": "scales the action to the joint limits",
    "EMAJointPositionToLimitsAction": "scales the action to the joint limits and smooths it",
    "RelativeJointPositionAction": "adds the action to the current joint position",
    "JointVelocityAction": "sets joint velocity targets",
    "JointEffortAction": "sets joint efforts",
}
_ACTUATORS = {"ImplicitActuator": None, "IdealPDActuator": "an explicit PD law; replayed with the engine's PD drive"}


class IsaacLabError(TaskError):
    """An Isaac Lab run folder cannot be read safely, or its configuration does not map onto a task."""


# ---------------------------------------------------------------------------------------------------- safe YAML


def _loader() -> type:
    import yaml

    class IsaacLabLoader(yaml.SafeLoader):
        """SafeLoader plus the harmless Python tags of an Isaac Lab dump; every other Python tag is refused."""

    def refuse(loader: Any, suffix: str, node: Any) -> Any:
        raise _Refused(f"!!python/{suffix}", node.start_mark.line + 1)

    def tuple_(loader: Any, node: Any) -> tuple:
        if not isinstance(node, yaml.SequenceNode):
            raise _Refused("!!python/tuple (not on a sequence)", node.start_mark.line + 1)
        return tuple(loader.construct_sequence(node, deep=True))

    def slice_(loader: Any, node: Any) -> slice:
        args = loader.construct_sequence(node, deep=True) if isinstance(node, yaml.SequenceNode) else None
        if args is None or not 1 <= len(args) <= 3 or not all(a is None or type(a) is int for a in args):
            raise _Refused("!!python/object/apply:builtins.slice (expected 1 to 3 integers or nulls)",
                           node.start_mark.line + 1)  # fmt: skip
        return slice(*args)

    safe = yaml.SafeLoader
    for tag, build in {
        "tuple": tuple_,
        "object/apply:builtins.slice": slice_,
        "none": safe.construct_yaml_null,
        "bool": safe.construct_yaml_bool,
        "int": safe.construct_yaml_int,
        "long": safe.construct_yaml_int,
        "float": safe.construct_yaml_float,
        "str": safe.construct_yaml_str,
        "unicode": safe.construct_yaml_str,
        "list": safe.construct_yaml_seq,
        "dict": safe.construct_yaml_map,
    }.items():
        IsaacLabLoader.add_constructor(_PYTHON_TAG + tag, build)
    IsaacLabLoader.add_multi_constructor(_PYTHON_TAG, refuse)
    return IsaacLabLoader


class _Refused(Exception):
    def __init__(self, tag: str, line: int):
        super().__init__(tag, line)
        self.tag, self.line = tag, line


def load_isaaclab_yaml(path: str | Path) -> dict[str, Any]:
    """The mapping an Isaac Lab ``params/*.yaml`` dump holds, read without constructing any Python object.

    :data:`HARMLESS_TAGS` become plain values (tuples, slices, numbers, strings, lists, mappings); any other
    Python tag (``!!python/object:...``, ``!!python/object/apply:...``, ``!!python/name:...``, ...) or unknown tag
    raises :class:`IsaacLabError` naming the tag and its line. Raises ``FileNotFoundError`` for a missing file.
    """
    import yaml

    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"Isaac Lab config not found: {path}")
    try:
        with open(path, encoding="utf-8") as fh:
            data = yaml.load(fh, Loader=_loader())  # noqa: S506 - a SafeLoader subclass
    except _Refused as exc:
        raise IsaacLabError(
            f"{path}, line {exc.line}: refused the YAML tag {exc.tag}. transfer reads a run's configuration as "
            f"plain data only: it accepts the harmless tags {', '.join(HARMLESS_TAGS)} and never imports, "
            "constructs or runs anything a file names (nor loads the .pkl files beside it). Remove that value "
            "from the file, or describe the task in a task file (--config)."
        ) from None
    except yaml.constructor.ConstructorError as exc:
        mark = exc.problem_mark
        line = f", line {mark.line + 1}" if mark is not None else ""
        raise IsaacLabError(f"{path}{line}: refused: {exc.problem}. Only plain YAML and the tags "
                            f"{', '.join(HARMLESS_TAGS)} are read.") from None  # fmt: skip
    except UnicodeDecodeError:
        raise IsaacLabError(f"{path}: not a text (UTF-8 YAML) file") from None
    except yaml.YAMLError as exc:
        raise IsaacLabError(f"{path}: not valid YAML: {exc}") from None
    if not isinstance(data, dict):
        raise IsaacLabError(f"{path}: expected a mapping at the top level, got {type(data).__name__}")
    return data


# ---------------------------------------------------------------------------------------------------- the folder


def find_run(path: str | Path) -> tuple[Path, Path | None] | None:
    """``(run folder, named checkpoint or None)`` when ``path`` is an Isaac Lab run folder (it holds
    ``params/env.yaml``) or a file inside one (``model_<iter>.pt``, ``exported/policy.onnx``); else ``None``.
    Reads nothing but the folder's listing."""
    path = Path(path)
    if path.is_dir():
        return (path, None) if (path / ENV_YAML).is_file() else None
    if path.is_file():
        for folder in (path.parent, path.parent.parent):
            if (folder / ENV_YAML).is_file():
                return folder, path
    return None


_MODEL = re.compile(r"model_(\d+)\.pt")


def run_checkpoint(folder: str | Path) -> Path:
    """The checkpoint a run folder is replayed with: the newest ``model_<iter>.pt`` (by iteration number), else
    ``exported/policy.pt``, else ``exported/policy.onnx``."""
    folder = Path(folder)
    models = [
        (int(m.group(1)), p) for p in folder.glob("model_*.pt") if (m := _MODEL.fullmatch(p.name)) and p.is_file()
    ]
    if models:
        return max(models)[1]
    for name in ("exported/policy.pt", "exported/policy.onnx"):
        if (folder / name).is_file():
            return folder / name
    raise FileNotFoundError(
        f"{folder}: an Isaac Lab run folder without a checkpoint: no model_<iter>.pt, exported/policy.pt or "
        "exported/policy.onnx. Name the checkpoint file instead of the folder."
    )


@dataclass(frozen=True)
class IsaacLabRun:
    """An Isaac Lab run folder as read (:func:`read_isaaclab_run`); the task needs the asset (:func:`isaaclab_task`).

    ``order``: the checkpoint's joint order: a convention (``physx``, ``mjwarp``, ``robot_schema``) or an explicit
    tuple of joint names (``scene.robot.joint_ordering``); by default the training engine's own.
    """

    folder: Path
    checkpoint: Path
    env: Mapping[str, Any] = field(repr=False)
    agent: Mapping[str, Any] | None = field(repr=False)
    trained_on: str
    order: str | tuple[str, ...]
    newton_solver: str | None
    usd_path: str | None
    notes: tuple[str, ...] = ()

    @property
    def env_yaml(self) -> Path:
        return self.folder / ENV_YAML

    @property
    def convention(self) -> str | None:
        return self.order if isinstance(self.order, str) else None

    @property
    def name(self) -> str:
        """The experiment's name (agent.yaml's ``experiment_name``, else the folder above the run's)."""
        name = (self.agent or {}).get("experiment_name")
        return name if isinstance(name, str) and name else (self.folder.resolve().parent.name or "isaaclab_run")

    def asset_path(self, asset: str | Path | None = None) -> Path:
        """The robot's USD file: ``asset`` when given (it must exist), else the run's ``usd_path`` when that is a
        local file. A URL or a missing file is an error naming the path the run records and asking for --asset."""
        if asset is not None:
            path = Path(asset)
            if not path.is_file():
                raise FileNotFoundError(f"Asset file not found: {path}")
            return path
        where = f"{self.env_yaml} (scene.robot.spawn.usd_path)"
        if not self.usd_path:
            raise IsaacLabError(f"--asset is needed: {where} names no USD file for the robot")
        local = "://" not in self.usd_path and Path(self.usd_path).is_file()
        if not local:
            raise IsaacLabError(
                f"--asset is needed: the run names the robot {self.usd_path!r} ({where}), which is not a local "
                "file (a Nucleus or web URL cannot be fetched offline). Pass --asset with a local copy of that USD."
            )
        return Path(self.usd_path)

    def policy_options(self) -> dict[str, Any]:
        """``load_policy`` options for an RSL-RL checkpoint of this run (the actor's activation in agent.yaml)."""
        agent = self.agent or {}
        for key in ("actor", "policy"):  # rsl-rl-lib 5 (actor: MLPModel), older (policy: ActorCritic)
            section = agent.get(key)
            if isinstance(section, Mapping) and isinstance(section.get("activation"), str):
                return {"activation": section["activation"]}
        return {}


def read_isaaclab_run(path: str | Path, *, checkpoint: str | Path | None = None) -> IsaacLabRun:
    """Read an Isaac Lab run folder (or the folder of a checkpoint file inside one): ``params/env.yaml`` and
    ``params/agent.yaml`` (safely, :func:`load_isaaclab_yaml`), the training engine, the checkpoint's joint order
    and the checkpoint file (``checkpoint``, the named file, else :func:`run_checkpoint`). Loads no checkpoint."""
    found = find_run(path)
    if found is None:
        raise IsaacLabError(f"{path}: not an Isaac Lab run folder (no {ENV_YAML} in it or above the file)")
    folder, named = found
    env = load_isaaclab_yaml(folder / ENV_YAML)
    agent = load_isaaclab_yaml(folder / AGENT_YAML) if (folder / AGENT_YAML).is_file() else None
    where = str(folder / ENV_YAML)
    notes: list[str] = []
    trained_on, solver = training_engine(env, where)
    robot = _robot(env, where)
    order = _joint_ordering(robot, trained_on, where)
    if trained_on == "newton" and solver != "mujoco_warp":
        notes.append(f"trained on Newton with the {solver or 'default'} solver; replays on Newton use MuJoCo-Warp")
    spawn = robot.get("spawn")
    usd = spawn.get("usd_path") if isinstance(spawn, Mapping) else None
    ckpt = Path(checkpoint) if checkpoint is not None else named or run_checkpoint(folder)
    if not ckpt.is_file():
        raise FileNotFoundError(f"Checkpoint not found: {ckpt}")
    return IsaacLabRun(
        folder=folder, checkpoint=ckpt, env=env, agent=agent, trained_on=trained_on, order=order,
        newton_solver=solver, usd_path=usd if isinstance(usd, str) else None, notes=tuple(notes),
    )  # fmt: skip


# ---------------------------------------------------------------------------------------------------- engine, order


def training_engine(env: Mapping[str, Any], where: str = "env.yaml") -> tuple[str, str | None]:
    """``(engine, Newton solver type)`` of the run: ``("newton", "mujoco_warp")`` for a Newton physics config with
    a MuJoCo-Warp solver (Isaac Lab 3.0 ``sim.physics`` with a Newton manager, or the Newton branch's
    ``sim.newton_cfg``), ``("physx", None)`` for a PhysX one (``sim.physics`` with a PhysX manager, or Isaac Lab
    2's ``sim.physx``)."""
    sim = env.get("sim")
    if not isinstance(sim, Mapping):
        raise IsaacLabError(f"{where}: no `sim` section; is this an Isaac Lab env.yaml?")
    physics = sim.get("physics")
    if isinstance(physics, Mapping):
        kind = str(physics.get("class_type") or "")
        solver_cfg = physics.get("solver_cfg")
        solver = solver_cfg.get("solver_type") if isinstance(solver_cfg, Mapping) else None
        low = kind.lower()
        if "newton" in low or "mjwarp" in low or "mujoco" in low or isinstance(solver_cfg, Mapping):
            if solver is None and ("mjwarp" in low or "mujoco" in low):
                solver = "mujoco_warp"
            return "newton", solver if isinstance(solver, str) else None
        if "physx" in low or physics.get("isaacsim_physx") is not None or physics.get("ovphysx") is not None:
            return "physx", None
        raise IsaacLabError(
            f"{where}: sim.physics.class_type {kind!r} is not a physics backend transfer knows (a PhysX manager "
            "trains in physx order, a Newton manager with the MuJoCo-Warp solver in mjwarp order). Pass --source "
            "with the checkpoint's joint order."
        )
    newton = sim.get("newton_cfg")
    if isinstance(newton, Mapping):
        solver_cfg = newton.get("solver_cfg")
        solver = solver_cfg.get("solver_type") if isinstance(solver_cfg, Mapping) else "mujoco_warp"
        return "newton", solver if isinstance(solver, str) else None
    if isinstance(sim.get("physx"), Mapping):
        return "physx", None
    raise IsaacLabError(
        f"{where}: sim names no physics backend (no sim.physics, sim.newton_cfg or sim.physx): cannot tell which "
        "engine trained the checkpoint. Pass --source with its joint order."
    )


def _robot(env: Mapping[str, Any], where: str) -> Mapping[str, Any]:
    scene = env.get("scene")
    robot = scene.get("robot") if isinstance(scene, Mapping) else None
    if not isinstance(robot, Mapping):
        raise IsaacLabError(f"{where}: no scene.robot (the articulation the policy drives)")
    return robot


def _joint_ordering(robot: Mapping[str, Any], trained_on: str, where: str) -> str | tuple[str, ...]:
    native = "physx" if trained_on == "physx" else "mjwarp"
    value = robot.get("joint_ordering")
    if value is None:
        return native
    if isinstance(value, str):
        if value not in CONVENTIONS:
            raise IsaacLabError(
                f"{where}: scene.robot.joint_ordering {value!r}: expected one of {list(CONVENTIONS)}, a list of "
                "joint names, or null"
            )
        return value
    if isinstance(value, (list, tuple)) and value and all(isinstance(n, str) for n in value):
        return tuple(value)
    raise IsaacLabError(f"{where}: scene.robot.joint_ordering: expected a convention, a list of names or null, "
                        f"got {value!r}")  # fmt: skip


# ---------------------------------------------------------------------------------------------------- the task


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
        lo, hi = (float(v) for v in value)
        return lo, hi

    def nearest_zero(key: str) -> float:
        b = bounds(key)
        return 0.0 if b is None else min(max(0.0, b[0]), b[1])

    x = bounds("lin_vel_x")
    return (0.0 if x is None else x[1], nearest_zero("lin_vel_y"), nearest_zero("ang_vel_z"))


def expand_joint_values(values: Mapping[str, float], names: Sequence[str], *, field: str, source: str | None = None,
                        require_all: bool = False) -> dict[str, float]:  # fmt: skip
    """:func:`transfer.task.expand_joint_values` (full match; a pattern matching nothing or a joint matched twice is
    an error) raising :class:`IsaacLabError`."""
    try:
        return _expand_joint_values(values, names, field=field, source=source, require_all=require_all)
    except TaskError as exc:
        raise IsaacLabError(str(exc)) from None


def _number(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
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
    for p in patterns:
        out += [n for n in names if (n == p or re.fullmatch(p, n)) and n not in out]
    return out


def _per_joint(value: Any, joints: Sequence[str], where: str) -> dict[str, float]:
    """A float (every joint of ``joints``) or ``{pattern: float}`` (the joints it matches) as per-joint values."""
    if isinstance(value, Mapping):
        return expand_joint_values(
            {str(k): _number(v, f"{where}[{k!r}]") for k, v in value.items()}, joints, field=where, require_all=False
        )
    number = _number(value, where)
    return dict.fromkeys(joints, number)


def _all_or_none(values: dict[str, float], names: Sequence[str], what: str, where: str) -> dict[str, float]:
    missing = [n for n in names if n not in values]
    if values and missing:
        raise IsaacLabError(
            f"{where}: {what} is set for {sorted(values)} but not for {missing} (Isaac Lab keeps the asset's value "
            f"there). transfer sets {what} on every joint or on none: describe the gains in a task file (--config)."
        )
    return {n: values[n] for n in names if n in values}


def _actuators(robot: Mapping[str, Any], names: Sequence[str], where: str, notes: list[str]) -> dict[str, dict]:
    actuators = robot.get("actuators") or {}
    if not isinstance(actuators, Mapping):
        raise IsaacLabError(f"{where}: scene.robot.actuators: expected a mapping of actuator groups")
    owner: dict[str, str] = {}
    fields: dict[str, dict[str, float]] = {k: {} for k in ("stiffness", "damping", "armature", "effort", "velocity")}
    for group, cfg in actuators.items():
        if cfg is None:
            continue
        at = f"scene.robot.actuators.{group}"
        if not isinstance(cfg, Mapping):
            raise IsaacLabError(f"{where}: {at}: expected an actuator configuration, got {cfg!r}")
        kind = str(cfg.get("class_type") or "").rpartition(":")[2]
        if kind not in _ACTUATORS:
            raise IsaacLabError(
                f"{where}: {at} is a {kind or 'class_type-less'} actuator; transfer drives the joints with the engines' "
                f"own PD drive and replays {', '.join(_ACTUATORS)} groups only (a learned actuator network or a "
                "motor model cannot be replayed by gains). Describe the gains to use in a task file (--config)."
            )
        if _ACTUATORS[kind]:
            notes.append(f"{at} is an {kind} ({_ACTUATORS[kind]})")
        joints = _match(_patterns(cfg.get("joint_names_expr"), f"{at}.joint_names_expr"), names,
                        f"{at}.joint_names_expr")  # fmt: skip
        for j in joints:
            if j in owner:
                raise IsaacLabError(f"{where}: joint {j!r} is driven by two actuator groups: {owner[j]} and {group}")
            owner[j] = group
        sim_effort = "effort_limit_sim" if kind == "ImplicitActuator" else "effort_limit"
        keys = {
            "stiffness": ("stiffness",), "damping": ("damping",), "armature": ("armature",),
            "effort": (sim_effort, "effort_limit", "effort_limit_sim"),
            "velocity": ("velocity_limit_sim", "velocity_limit"),
        }  # fmt: skip
        for name, candidates in keys.items():
            key = next((k for k in candidates if cfg.get(k) is not None), None)
            if key is not None:
                fields[name].update(_per_joint(cfg[key], joints, f"{at}.{key}"))
        friction = cfg.get("friction")
        if friction not in (None, 0, 0.0) and not (isinstance(friction, Mapping) and not any(friction.values())):
            notes.append(f"{at}.friction is not applied at replay (the asset's joint friction stands)")
    if fields["velocity"]:
        notes.append("actuator velocity limits are read but not applied at replay (the asset's stand)")
    return fields


def _observation(env: Mapping[str, Any], names: Sequence[str], action_name: str, where: str,
                 notes: list[str]) -> tuple[ObsTerm, ...]:  # fmt: skip
    obs = env.get("observations")
    group = obs.get("policy") if isinstance(obs, Mapping) else None
    if not isinstance(group, Mapping):
        raise IsaacLabError(f"{where}: no observations.policy group (the observation the actor reads)")
    if group.get("concatenate_terms") is False:
        raise IsaacLabError(f"{where}: observations.policy.concatenate_terms is false: the actor reads one "
                            "concatenated vector")  # fmt: skip
    if (group.get("history_length") or 0) > 1:
        raise IsaacLabError(
            f"{where}: observations.policy.history_length is {group['history_length']}: stacked observation "
            "history is not supported at replay yet"
        )
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
        module, _, fname = func.rpartition(":")
        term = OBSERVATION_FUNCS.get(fname) if (module + ".").startswith(_FUNC_MODULES) else None
        if term is None:
            raise IsaacLabError(
                f"{where}: {at}: unknown observation term func {func!r}. transfer builds these Isaac Lab terms: "
                f"{', '.join(OBSERVATION_FUNCS)}. If this term is one of them under another name, describe the "
                "observation in a task file (presets/tasks/README.md: `observation:` lists the terms in order, each "
                "with its scale and clip) and pass it with --config; the run folder still gives the checkpoint, the "
                "engine and the asset path."
            )
        params = cfg.get("params") if isinstance(cfg.get("params"), Mapping) else {}
        _check_params(term, params, names, action_name, commands, f"{where}: {at}")
        history = cfg.get("history_length") or 0
        if history > 1:
            raise IsaacLabError(f"{where}: {at}.history_length is {history}: observation history is not supported "
                                "at replay yet")  # fmt: skip
        if cfg.get("modifiers"):
            raise IsaacLabError(f"{where}: {at}.modifiers: observation modifiers are not supported at replay")
        noisy |= cfg.get("noise") is not None
        terms.append(
            ObsTerm(
                term,
                scale=_scale(cfg.get("scale"), f"{where}: {at}.scale"),
                clip=_clip(cfg.get("clip"), f"{where}: {at}.clip"),
            )
        )
    if not terms:
        raise IsaacLabError(f"{where}: observations.policy has no terms")
    if noisy:
        notes.append("observation noise is a training-time corruption and is not applied at replay")
    return tuple(terms)


def _scale(value: Any, where: str) -> float:
    if value is None:
        return 1.0
    if isinstance(value, (list, tuple)):
        values = {_number(v, where) for v in value}
        if len(values) != 1:
            raise IsaacLabError(f"{where}: a per-entry scale {list(value)} is not supported; only one scale per term")
        return values.pop()
    return _number(value, where)


def _clip(value: Any, where: str) -> tuple[float, float] | None:
    if value is None:
        return None
    if not isinstance(value, (list, tuple)) or len(value) != 2:
        raise IsaacLabError(f"{where}: expected (low, high) or null, got {value!r}")
    return (_number(value[0], where), _number(value[1], where))


def _check_params(term: str, params: Mapping[str, Any], names: Sequence[str], action_name: str,
                  commands: Mapping[str, Any], where: str) -> None:  # fmt: skip
    asset = params.get("asset_cfg")
    if isinstance(asset, Mapping):
        if asset.get("name", "robot") != "robot":
            raise IsaacLabError(f"{where}: reads the asset {asset.get('name')!r}; transfer replays scene.robot only")
        joints = asset.get("joint_names")
        if joints is not None and term.startswith("joint_"):
            picked = _match(_patterns(joints, f"{where}.params.asset_cfg.joint_names"), names,
                            f"{where}.params.asset_cfg.joint_names", preserve_order=bool(asset.get("preserve_order")))  # fmt: skip
            if picked != list(names):
                raise IsaacLabError(
                    f"{where} reads the joints {picked}, not every joint of the robot in its order; joint terms over "
                    "a subset of joints are not supported at replay"
                )
    if term == "velocity_commands":
        name = params.get("command_name")
        cmd = commands.get(name) if isinstance(name, str) else None
        kind = str(cmd.get("class_type") or "") if isinstance(cmd, Mapping) else ""
        if "VelocityCommand" not in kind:
            raise IsaacLabError(
                f"{where}: generated_commands reads the command {name!r}, which is {kind or 'not in commands'}; "
                "transfer replays a base velocity command (vx, vy, wz) only"
            )
    if term == "last_action" and params.get("action_name") not in (None, action_name):
        raise IsaacLabError(f"{where}: last_action of {params['action_name']!r}, not of the action term "
                            f"{action_name!r}")  # fmt: skip


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
    joints = _match(_patterns(cfg.get("joint_names", ".*"), f"{at}.joint_names"), names, f"{at}.joint_names",
                    preserve_order=bool(cfg.get("preserve_order")))  # fmt: skip
    ordered = [n for n in names if n in joints]
    if joints != ordered:
        raise IsaacLabError(
            f"{where}: {at} lists its joints in pattern order (preserve_order: true) as {joints}, which is not the "
            f"robot's order {ordered}; transfer's actions follow the checkpoint's joint order"
        )
    scales = set(_per_joint(cfg.get("scale", 1.0), joints, f"{at}.scale").values())
    if len(scales) != 1:
        raise IsaacLabError(f"{where}: {at}.scale differs between joints ({sorted(scales)}); one scale per action "
                            "is supported")  # fmt: skip
    offsets = set(_per_joint(cfg.get("offset", 0.0), joints, f"{at}.offset").values())
    if offsets != {0.0}:
        raise IsaacLabError(f"{where}: {at}.offset {sorted(offsets)}: a constant offset is not supported (only the "
                            "default joint positions, use_default_offset)")  # fmt: skip
    if cfg.get("clip") is not None:
        raise IsaacLabError(f"{where}: {at}.clip: clipped actions are not supported at replay")
    use_default = cfg.get("use_default_offset", True)
    if not isinstance(use_default, bool):
        raise IsaacLabError(f"{where}: {at}.use_default_offset: expected true or false, got {use_default!r}")
    action = ActionTerm(
        kind="joint_position", scale=scales.pop(), use_default_offset=use_default,
        joints=None if joints == list(names) else tuple(joints),
    )  # fmt: skip
    return key, action


def isaaclab_task(
    run: IsaacLabRun,
    joint_names: Sequence[str],
    *,
    order: str | tuple[str, ...] | None = None,
    asset: str | Path | None = None,
    notes: list[str] | None = None,
) -> Task:
    """The task ``run``'s ``env.yaml`` describes, on an asset whose joints, in the checkpoint's order, are
    ``joint_names`` (``transfer.resolve_ordering(asset, run.order).joints``).

    Patterns (defaults, actuators, action joints) are expanded on those names with Isaac Lab's semantics, so the
    task holds literal names only; ``joint_names`` and ``convention`` (``order``, default the run's) are set, as
    are ``trained_on``, ``asset`` and the fixed replay command (:func:`fixed_command`). Raises
    :class:`IsaacLabError` naming the field for anything that does not map. ``notes``: a list that receives what
    the mapping leaves out (noise, velocity limits, ...) after the run's own notes.
    """
    names = tuple(joint_names)
    env, where = run.env, str(run.env_yaml)
    notes = notes if notes is not None else []
    notes += [n for n in run.notes if n not in notes]
    robot = _robot(env, where)
    init = robot.get("init_state") if isinstance(robot.get("init_state"), Mapping) else {}
    at = "scene.robot.init_state"
    jp = init.get("joint_pos") or {}
    if not isinstance(jp, Mapping):
        jp = {".*": jp}
    values = {str(k): _number(v, f"{where}: {at}.joint_pos[{k!r}]") for k, v in jp.items()}
    found = expand_joint_values(values, names, field=f"{at}.joint_pos", source=where, require_all=False)
    defaults = {n: found.get(n, 0.0) for n in names}  # Isaac Lab starts the joints no pattern names at 0
    jv = init.get("joint_vel") or {}
    if not isinstance(jv, Mapping):
        jv = {".*": jv}
    vel = expand_joint_values({str(k): _number(v, f"{where}: {at}.joint_vel[{k!r}]") for k, v in jv.items()}, names,
                              field=f"{at}.joint_vel", source=where, require_all=False)  # fmt: skip
    if any(v != 0.0 for v in vel.values()):
        raise IsaacLabError(f"{where}: {at}.joint_vel: non-zero default joint velocities {vel} are not supported "
                            "(joint_vel_rel is read relative to 0)")  # fmt: skip
    gains = _actuators(robot, names, where, notes)
    action_key, action = _action(env, names, where)
    observation = _observation(env, names, action_key, where, notes)
    _agent_checks(run)
    sim = env.get("sim") or {}
    dt = _number(sim.get("dt"), f"{where}: sim.dt")
    decimation = env.get("decimation")
    if isinstance(decimation, bool) or not isinstance(decimation, int) or decimation < 1:
        raise IsaacLabError(f"{where}: decimation: expected a positive integer, got {decimation!r}")
    physx: dict[str, int] = {}
    spawn = robot.get("spawn") if isinstance(robot.get("spawn"), Mapping) else {}
    props = spawn.get("articulation_props") if isinstance(spawn.get("articulation_props"), Mapping) else {}
    for ours, theirs in (("solver_position_iterations", "solver_position_iteration_count"),
                         ("solver_velocity_iterations", "solver_velocity_iteration_count")):  # fmt: skip
        if isinstance(props.get(theirs), int) and not isinstance(props.get(theirs), bool):
            physx[ours] = props[theirs]
    pos = init.get("pos")
    if isinstance(pos, (list, tuple)) and len(pos) == 3:
        notes.append(
            f"{at}.pos z {_number(pos[2], f'{where}: {at}.pos[2]'):g} m is not the spawn height: Isaac Lab writes the "
            "default joint positions before the robot touches the ground, transfer's engines create it in the "
            "asset's authored pose first, so it spawns where that pose clears the ground (computed from the asset)"
        )
    command = (0.0, 0.0, 0.0)
    for term in observation:
        if term.name == "velocity_commands":
            commands = env.get("commands") or {}
            for cfg in commands.values():
                if isinstance(cfg, Mapping) and "VelocityCommand" in str(cfg.get("class_type") or ""):
                    command = fixed_command(cfg.get("ranges"))
                    break
    order = run.order if order is None else order
    solver = run.newton_solver if run.trained_on == "newton" else "mujoco_warp"
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
        effort_limit=_all_or_none(gains["effort"], names, "effort_limit", where) or None,
        sim_dt=dt,
        decimation=decimation,
        physx=physx,
        newton={"solver": solver} if solver in ("mujoco_warp", "mujoco_cpu", "xpbd", "semi_implicit") else {},
        spawn_height=None,
        command=command,
        asset=None if asset is None else str(Path(asset).resolve()),
        trained_on=run.trained_on,
        source=where,
    )
    notes[:] = list(dict.fromkeys(notes))
    return task


def _agent_checks(run: IsaacLabRun) -> None:
    agent = run.agent or {}
    where = str(run.folder / AGENT_YAML)
    if agent.get("clip_actions") is not None:
        raise IsaacLabError(
            f"{where}: clip_actions is {agent['clip_actions']}: the RSL-RL wrapper clipped the actions during "
            "training; clipped actions are not supported at replay"
        )
    groups = agent.get("obs_groups")
    if isinstance(groups, Mapping):
        actor = groups.get("actor", groups.get("policy"))
        if actor is not None and list(actor) != ["policy"]:
            raise IsaacLabError(f"{where}: obs_groups: the actor reads {list(actor)}; transfer feeds it the "
                                "observations.policy group only")  # fmt: skip
