"""``transfer.export(...)``: a checkpoint written as the files Unitree's robot controller reads (issue 45).

Unitree's robots run a policy through unitree_rl_lab's C++ deploy (``deploy/``: ``ManagerBasedRLEnv`` reading
``params/deploy.yaml``, ``OrtRunner`` feeding one ``obs`` input to ``exported/policy.onnx``). unitree_rl_lab writes
that yaml with ``scripts/rsl_rl/.../export_deploy_cfg.py`` from an Isaac Lab run only; :func:`export` writes both
files for any checkpoint ``transfer`` reads (Newton, mjlab, converted), in the exporter's layout:

- ``joint_ids_map``: policy joint i drives SDK motor ``joint_ids_map[i]`` (``resolve_matching_names(asset joint
  names, joint_sdk_names, preserve_order=True)``); ``step_dt``; ``stiffness`` / ``damping`` by SDK motor (zero for a
  motor the policy does not drive); ``default_joint_pos`` in the policy's order; ``commands``; one
  ``actions.JointPositionAction`` (``clip``, ``joint_names``, ``scale``, ``offset``, ``joint_ids``); every observation
  term (``params``, ``clip``, ``scale`` per entry, ``history_length``: 1 for none), in the policy's order; every float
  to 3 significant digits (the exporter's ``format_value``; the values Isaac Lab holds in float32 tensors rounded
  from float32), dumped with ``yaml.dump(default_flow_style=None, sort_keys=False)``. From an Isaac Lab run folder
  the commands (``commands.base_velocity``'s ``limit_ranges``, else ``ranges``), the action's ``joint_names`` and the
  terms' ``params`` are the env.yaml's, as the exporter takes them from the env cfg.
- The ONNX model: feed-forward, one input named ``obs``, the observation normalizer inside (a torch checkpoint is
  traced through its loaded network; an ONNX one keeps its graph, its input renamed), checked against the source
  policy on random observations before anything is written, carrying transfer's metadata (the task as read back
  from the deploy.yaml written beside it) so that ``transfer info`` and ``transfer replay`` read it as a checkpoint.

The robot's SDK motor order: ``--motor-order FILE``, else an Isaac Lab run's ``scene.robot.joint_sdk_names``, else
the built-in table (:data:`UNITREE_MOTORS`) whose motors hold every joint of the policy. Terms the robot cannot
measure are refused (:data:`UNMEASURED`) unless allowed by name (the user provides an estimator).
"""

from __future__ import annotations

import dataclasses
import io
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from transfer import __version__
from transfer.formats.checkpoint import atomic_write, build_metadata, check_metadata
from transfer.formats.onnx import onnxruntime, save_onnx
from transfer.formats.policy import PolicyError
from transfer.ordering import OrderingConvention
from transfer.runs.inputs import ReplayError, native_backend, resolve_inputs
from transfer.task import TaskError
from transfer.task.deploy import read_deploy_config

__all__ = ["UNITREE_MOTORS", "UNMEASURED", "ExportError", "ExportResult", "export", "unitree_deploy"]

_G1_LEG = ("hip_pitch", "hip_roll", "hip_yaw", "knee", "ankle_pitch", "ankle_roll")
_G1_ARM = ("shoulder_pitch", "shoulder_roll", "shoulder_yaw", "elbow", "wrist_roll", "wrist_pitch", "wrist_yaw")
_GO2_LEG = ("hip", "thigh", "calf")
UNITREE_MOTORS: Mapping[str, tuple[str, ...]] = {
    # Unitree's SDK motor order (unitree_sdk2's G1 low-level example, and unitree_rl_lab's
    # source/unitree_rl_lab/assets/robots/unitree.py ``joint_sdk_names`` of UNITREE_G1_29DOF_CFG; the order of mjlab's
    # asset_zoo/robots/unitree_g1/xmls/g1.xml, whose deploy.yaml maps it one to one). The 23-DoF G1 keeps these motor
    # indices with the waist roll / pitch and wrist pitch / yaw motors absent, so its policies map onto this table.
    "g1": (
        *(f"left_{j}_joint" for j in _G1_LEG),
        *(f"right_{j}_joint" for j in _G1_LEG),
        "waist_yaw_joint",
        "waist_roll_joint",
        "waist_pitch_joint",
        *(f"left_{j}_joint" for j in _G1_ARM),
        *(f"right_{j}_joint" for j in _G1_ARM),
    ),
    # unitree_go2's SDK order: FR, FL, RR, RL legs, hip / thigh / calf each (unitree_rl_lab's UNITREE_GO2_CFG
    # ``joint_sdk_names``; unitree_sdk2's go2 low-level example).
    "go2": tuple(f"{leg}_{j}_joint" for leg in ("FR", "FL", "RR", "RL") for j in _GO2_LEG),
    # unitree_rl_lab's UNITREE_H1_CFG ``joint_sdk_names`` (source/unitree_rl_lab/assets/robots/unitree.py): 20 motors,
    # motor 9 unused ("" there: no joint drives it).
    "h1": (
        *("right_hip_roll_joint", "right_hip_pitch_joint", "right_knee_joint"),
        *("left_hip_roll_joint", "left_hip_pitch_joint", "left_knee_joint"),
        *("torso_joint", "left_hip_yaw_joint", "right_hip_yaw_joint", "", "left_ankle_joint", "right_ankle_joint"),
        *(f"right_{j}_joint" for j in ("shoulder_pitch", "shoulder_roll", "shoulder_yaw", "elbow")),
        *(f"left_{j}_joint" for j in ("shoulder_pitch", "shoulder_roll", "shoulder_yaw", "elbow")),
    ),
}
"""The SDK motor order of the Unitree robots ``export`` knows; others by ``--motor-order FILE``."""

UNMEASURED: Mapping[str, str] = {
    "base_lin_vel": "the robot has no sensor for the base's linear velocity (only the IMU's angular velocity)",
    "base_link_lin_vel": "the robot has no sensor for the base's linear velocity (only the IMU's angular velocity)",
    "motion_anchor_pos_b": "the robot does not measure its position in the world (the anchor's position error)",
    "height_scan": "the robot carries no height scanner Unitree's deploy reads",
}
"""Observation terms Unitree's deploy cannot build from the robot's sensors, and why."""

_COMMAND_PARAMS = {"velocity_commands": "base_velocity", "motion_command": "motion", "motion_anchor_ori_b": "motion"}
CHECK_SAMPLES = 256
TOLERANCE = 1e-5


class ExportError(ValueError):
    """The inputs cannot be written for the robot (nothing is written)."""


@dataclass(frozen=True)
class ExportResult:
    """What :func:`export` wrote: the folder, the two files, the robot's motor order and the ONNX check."""

    folder: Path
    policy: Path
    deploy: Path
    robot: str
    """The motor order's source: a built-in robot (``g1``, ``go2``), ``--motor-order FILE`` or the run's names."""
    joint_names: tuple[str, ...]
    motor_names: tuple[str, ...]
    joint_ids_map: tuple[int, ...]
    checked: int
    max_error: float
    allowed: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    metadata: dict[str, Any] = field(default_factory=dict, repr=False)

    def to_dict(self) -> dict[str, Any]:
        out = dataclasses.asdict(self)
        for key in ("folder", "policy", "deploy"):
            out[key] = str(out[key])
        for key in ("joint_names", "motor_names", "joint_ids_map", "allowed", "warnings"):
            out[key] = list(out[key])
        out.pop("metadata")
        return out


# ---------------------------------------------------------------------------------------------------- the API


def export(
    checkpoint: str | Path,
    *,
    out: str | Path,
    to: str = "unitree",
    source: str | Sequence[str] | None = None,
    config: str | Path | None = None,
    asset: str | Path | None = None,
    motor_order: str | Path | None = None,
    allow: Sequence[str] = (),
    force: bool = False,
) -> ExportResult:
    """Write ``out/exported/policy.onnx`` and ``out/params/deploy.yaml`` for Unitree's deploy.

    Args:
        checkpoint: TorchScript, ONNX or RSL-RL checkpoint, or an Isaac Lab run folder (never written).
        out: The folder written (an existing one only with ``force``; its two files are replaced then).
        to: The robot's controller: ``unitree`` (the only one).
        source, config, asset: As :func:`transfer.runs.inputs.resolve_inputs` takes them.
        motor_order: A file naming the robot's SDK motors in order, one a line (default: the run's
            ``joint_sdk_names``, else :data:`UNITREE_MOTORS`).
        allow: Observation terms the robot cannot measure (:data:`UNMEASURED`) the user provides an estimator for.
        force: Replace the files in an existing ``out``.

    Raises:
        ExportError: inputs that do not fit the robot (nothing is written).
    """
    if to != "unitree":
        raise ExportError(f"--to {to}: the controllers export writes for: unitree (unitree_rl_lab's C++ deploy)")
    out = Path(out)
    if out.exists() and not force:
        raise ExportError(f"-o {out} exists; pass --force to replace the files export writes in it")
    if out.exists() and not out.is_dir():
        raise ExportError(f"-o {out} is a file; give the folder to write exported/ and params/ into")
    inputs = _inputs(checkpoint, source, config, asset)
    policy = inputs.policy
    _refuse_recurrent(policy)
    names = tuple(inputs.robot.order(inputs.source).joints)
    try:
        task = inputs.task.with_joint_names(names)
    except ValueError as exc:
        raise ExportError(f"{config or checkpoint}: {exc}") from None
    robot, motors = _motors(names, motor_order, inputs.run)
    allowed = _check_sensors(task, allow)
    env = inputs.run.env if inputs.run is not None and config is None and policy.metadata is None else None
    deploy, warnings = unitree_deploy(task, names, motors, _commands(config), env=env)
    text = dump_deploy(deploy)
    readback = _read_back(out / "params" / "deploy.yaml", text, names, task.observation_aliases)
    model = _onnx_model(policy)
    error = _check_onnx(model, policy)
    metadata = _metadata(readback, names, inputs, asset, checkpoint)
    return _write(out, model, text, metadata, force, ExportResult(
        out, out / "exported" / "policy.onnx", out / "params" / "deploy.yaml", robot, names, motors,
        tuple(deploy["joint_ids_map"]), CHECK_SAMPLES, error, allowed, warnings, metadata,
    ))  # fmt: skip


def _inputs(checkpoint: Any, source: Any, config: Any, asset: Any) -> Any:
    """The input layer's resolution (the policy loaded: it is traced and checked), refusals as :class:`ExportError`."""
    try:
        return resolve_inputs(checkpoint, source=source, config=config, asset=asset)
    except NotImplementedError as exc:  # an RSL-RL recurrent or CNN actor
        raise ExportError(f"{exc} Unitree's runner feeds one obs input to a feed-forward network.") from None
    except (ReplayError, PolicyError) as exc:
        raise ExportError(str(exc)) from None


def _refuse_recurrent(policy: Any) -> None:
    if policy.recurrent:
        raise ExportError(
            f"{policy.path.name}: a recurrent actor (it keeps state between steps); Unitree's runner (OrtRunner) feeds "
            "one obs input to a feed-forward network: export a feed-forward policy"
        )
    if policy.motion_export:
        raise ExportError(
            f"{policy.path.name}: an mjlab tracking export (it reads the clip's time step as a second input); "
            "Unitree's runner feeds one obs input"
        )


# ---------------------------------------------------------------------------------------------------- motors


def read_motor_order(path: str | Path) -> tuple[str, ...]:
    """The motor names a ``--motor-order`` file lists, one a line (blank lines and ``#`` comments skipped)."""
    path = Path(path)
    try:
        lines = path.read_text().splitlines()
    except OSError as exc:
        raise ExportError(f"--motor-order {path}: {exc.strerror or exc}") from None
    names = tuple(s for s in (line.split("#", 1)[0].strip() for line in lines) if s)
    twice = sorted({n for n in names if names.count(n) > 1})
    if not names or twice:
        why = f"names {twice} twice" if twice else "names no motor"
        raise ExportError(f"--motor-order {path}: {why}; give the robot's SDK motor names in order, one a line")
    return names


def _motors(names: Sequence[str], motor_order: Any, run: Any) -> tuple[str, tuple[str, ...]]:
    """Where the motor order comes from and the order: ``--motor-order``, the run's ``joint_sdk_names``, a table."""
    if motor_order is not None:
        found, label = read_motor_order(motor_order), f"--motor-order {motor_order}"
    else:
        sdk = (((run.env if run is not None else {}).get("scene") or {}).get("robot") or {}).get("joint_sdk_names")
        if sdk:
            found, label = tuple(str(n) for n in sdk), f"{run.env_yaml} (scene.robot.joint_sdk_names)"
        else:
            robot = next((r for r, motors in UNITREE_MOTORS.items() if set(names) <= set(motors)), None)
            if robot is None:
                raise ExportError(
                    f"no built-in Unitree motor order ({', '.join(UNITREE_MOTORS)}) holds the policy's joints "
                    f"({', '.join(names[:4])}, ...): pass --motor-order FILE with the robot's SDK motor names, one a line"
                )
            found, label = UNITREE_MOTORS[robot], robot
    missing = [n for n in names if n not in found]
    if missing:
        raise ExportError(
            f"{label}: lists no motor for the policy's joint{'s' if len(missing) > 1 else ''} "
            f"{', '.join(missing[:6])}{', ...' if len(missing) > 6 else ''}; every joint the policy drives needs one"
        )
    return label, found


def _check_sensors(task: Any, allow: Sequence[str]) -> tuple[str, ...]:
    """Refuse the first term the robot cannot measure unless ``allow`` names it; the allowed ones used."""
    allowed = set(allow)
    for term in task.observation:
        if term.name in UNMEASURED and term.name not in allowed:
            raise ExportError(
                f"observation term {term.name}: {UNMEASURED[term.name]}; Unitree's deploy cannot feed it. Pass "
                f"--allow {term.name} if the robot's controller provides an estimate of it"
            )
    return tuple(t.name for t in task.observation if t.name in allowed)


# ---------------------------------------------------------------------------------------------------- deploy.yaml


def _g3(x: Any) -> Any:
    """unitree_rl_lab's ``format_value``: every float to 3 significant digits, lists and mappings through."""
    if isinstance(x, float):
        return float(f"{x:.3g}")
    if isinstance(x, (list, tuple)):
        return [_g3(v) for v in x]
    if isinstance(x, Mapping):
        return {k: _g3(v) for k, v in x.items()}
    return x


def _commands(config: Any) -> Mapping[str, Any] | None:
    """The ``commands:`` of a Unitree deploy.yaml given as ``--config`` (carried over as it is), else ``None``."""
    if config is None or Path(config).suffix.lower() not in (".yaml", ".yml"):
        return None
    import yaml

    try:
        data = yaml.safe_load(Path(config).read_text())
    except (OSError, yaml.YAMLError):
        return None
    return data.get("commands") if isinstance(data, Mapping) and "joint_ids_map" in data else None


def _f32(values: Any) -> list[Any]:
    """``values`` as the exporter reads them from Isaac Lab's float32 tensors (``tensor.tolist()``), before rounding:
    a value such as 0.1015 is 0.10149999... in float32 and rounds to 0.101, not 0.102."""
    return np.asarray(values, dtype=np.float32).tolist()


def unitree_deploy(
    task: Any,
    names: Sequence[str],
    motors: Sequence[str],
    commands: Mapping[str, Any] | None = None,
    *,
    env: Mapping[str, Any] | None = None,
) -> tuple[dict[str, Any], tuple[str, ...]]:
    """The deploy.yaml (a plain mapping, keys in the exporter's order) of ``task`` (expanded for ``names``, the
    policy's order) on a robot whose SDK motors are ``motors``, and what the user should know about it.

    ``env``: the Isaac Lab run's ``params/env.yaml`` the task was read from; what the task does not keep is taken
    from it as the exporter takes it from the env cfg: ``commands.base_velocity`` (its ``limit_ranges``, else its
    ``ranges``), the action's ``joint_names`` and ``preserve_order``, each observation term's ``params``."""
    ids = [list(motors).index(n) for n in names]
    warnings: list[str] = []
    missing = [k for k in ("stiffness", "damping") if any(n not in getattr(task, k) for n in names)]
    if missing:
        raise ExportError(
            f"the task gives no {' or '.join(missing)} for every joint; Unitree's deploy needs both per motor: "
            "give them in the config (--config)"
        )
    gains = {}
    for key in ("stiffness", "damping"):
        by_motor = np.zeros(len(motors))
        by_motor[ids] = _f32([getattr(task, key)[n] for n in names])
        gains[key] = by_motor.tolist()
    heading = None
    if commands is None and env is not None:
        commands, heading = _run_commands(env)
        if not commands and any(t.name == "velocity_commands" for t in task.observation):
            warnings.append(
                "the run has no commands.base_velocity, whose ranges Unitree's deploy reads for the joystick: set "
                "commands.base_velocity.ranges in params/deploy.yaml"
            )
    if commands is None:
        commands = {}
        if any(t.name == "velocity_commands" for t in task.observation):
            vx, vy, wz = task.command
            lims = lambda c: [min(0.0, float(c)), max(0.0, float(c))]  # noqa: E731
            ranges = {"lin_vel_x": lims(vx), "lin_vel_y": lims(vy), "ang_vel_z": lims(wz), "heading": None}
            commands = {"base_velocity": {"ranges": ranges}}
            warnings.append(
                "commands.base_velocity.ranges span only the task's fixed command and 0 (the task holds no training "
                "ranges): set the ranges the joystick may ask for in params/deploy.yaml"
            )
    cfg = {
        "joint_ids_map": ids,
        "step_dt": float(task.sim_dt * task.decimation),
        **gains,
        "default_joint_pos": _f32([float(task.default_joint_pos[n]) for n in names]),
        "commands": dict(commands),
        "actions": {"JointPositionAction": _action(task, names, _run_action(env))},
        "observations": _observations(task, len(names), _run_params(env)),
    }
    cfg = _g3(cfg)
    if heading is not None:  # the exporter leaves a tuple unrounded (format_value rounds lists only)
        cfg["commands"]["base_velocity"]["ranges"]["heading"] = heading
    return cfg, tuple(warnings)


def _run_commands(env: Mapping[str, Any]) -> tuple[dict[str, Any], Any]:
    """``(commands, heading)`` as the exporter writes them for a run: ``commands.base_velocity``'s ``limit_ranges``
    (unitree_rl_lab's level command), else its ``ranges``, with ``lin_vel_x``, ``lin_vel_y``, ``ang_vel_z`` as lists
    and ``heading`` as the run has it (unrounded); ``{}`` without a base velocity command."""
    commands = env.get("commands")
    command = commands.get("base_velocity") if isinstance(commands, Mapping) else None
    if not isinstance(command, Mapping):
        return {}, None
    ranges = command.get("limit_ranges") if command.get("limit_ranges") is not None else command.get("ranges")
    if not isinstance(ranges, Mapping):
        return {}, None
    plain = {str(k): list(v) if isinstance(v, (list, tuple)) else v for k, v in ranges.items()}
    missing = [k for k in ("lin_vel_x", "lin_vel_y", "ang_vel_z") if not isinstance(plain.get(k), list)]
    if missing:
        raise ExportError(f"commands.base_velocity ranges: no (low, high) for {', '.join(missing)}")
    heading = plain.get("heading")
    return {"base_velocity": {"ranges": plain}}, heading if isinstance(heading, list) else None


def _run_action(env: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    """The run's one action term (``actions.<name>``, as :mod:`transfer.task.isaaclab` read it), else ``None``."""
    actions = env.get("actions") if env is not None else None
    terms = [v for v in actions.values() if isinstance(v, Mapping)] if isinstance(actions, Mapping) else []
    return terms[0] if len(terms) == 1 else None


def _plain(value: Any) -> bool:
    """A value the deploy.yaml holds as it is (no Python object: a ``SceneEntityCfg``'s ``slice``, ...)."""
    if value is None or isinstance(value, (str, bool, int, float)):
        return True
    if isinstance(value, (list, tuple)):
        return all(_plain(v) for v in value)
    return isinstance(value, Mapping) and all(isinstance(k, str) and _plain(v) for k, v in value.items())


def _run_params(env: Mapping[str, Any] | None) -> list[Any] | None:
    """Each policy term's ``params`` in the run's order (the terms the task holds, one each), else ``None``."""
    observations = env.get("observations") if env is not None else None
    group = observations.get("policy") if isinstance(observations, Mapping) else None
    if not isinstance(group, Mapping):
        return None
    return [cfg.get("params") for cfg in group.values() if isinstance(cfg, Mapping)]


def _action(task: Any, names: Sequence[str], run: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The ``JointPositionAction`` entry; ``run``: the run's action cfg (its ``joint_names`` written as they are,
    and ``joint_ids`` listed when ``preserve_order`` is set, as the exporter does)."""
    action = task.action
    if action.kind != "joint_position":
        raise ExportError(f"action.kind {action.kind}: Unitree's deploy runs JointPositionAction only")
    if action.clip_actions is not None:
        raise ExportError(
            f"action.clip_actions {action.clip_actions}: the raw action is clipped before scaling, which Unitree's "
            "JointPositionAction does not do"
        )
    joints = tuple(action.joints) if action.joints is not None else tuple(names)
    per = lambda v: [float(v[j]) if isinstance(v, Mapping) else float(v) for j in joints]  # noqa: E731
    if action.use_default_offset:
        offset = _f32([float(task.default_joint_pos[j]) for j in joints])
    else:  # the exporter writes zeros here, which is not the offset the policy was trained with
        offset = per(action.offset)
    clip = action.clip
    if clip is not None:  # Isaac Lab's JointAction: (-inf, inf) for a joint the clip mapping names none of
        inf = float("inf")
        clip = _f32(
            [list(clip.get(j, (-inf, inf))) if isinstance(clip, Mapping) else [float(c) for c in clip] for j in joints]
        )
    every = joints == tuple(names) and not (run is not None and run.get("preserve_order"))
    written = run.get("joint_names") if run is not None else None
    if written is None:
        written = [".*"] if joints == tuple(names) else list(joints)
    return {
        "clip": clip,
        "joint_names": list(written) if isinstance(written, (list, tuple)) else written,
        "scale": _f32(per(action.scale)) if isinstance(action.scale, Mapping) else per(action.scale),
        "offset": offset,
        "joint_ids": None if every else [list(names).index(j) for j in joints],
    }


def _observations(task: Any, num_joints: int, run_params: Sequence[Any] | None = None) -> dict[str, Any]:
    """Every term, in order, under the name the source gave it (its alias, else its own name); ``run_params``: each
    term's ``params`` in an Isaac Lab run's env.yaml, written as they are where they are plain values."""
    back = {term: name for name, term in task.observation_aliases.items()}
    slices = task.term_slices(num_joints)
    if run_params is not None and len(run_params) != len(task.observation):
        run_params = None
    out = {}
    for i, term in enumerate(task.observation):
        steps = max(term.history_length, 1)
        size = (slices[term.name].stop - slices[term.name].start) // steps
        scale = list(term.scale) if isinstance(term.scale, (list, tuple)) else [float(term.scale)] * size
        params = {"command_name": _COMMAND_PARAMS[term.name]} if term.name in _COMMAND_PARAMS else {}
        params = {**params, **dict(term.params)}
        if run_params is not None and isinstance(run_params[i], Mapping) and _plain(run_params[i]):
            params = {str(k): v for k, v in run_params[i].items()}
        out[back.get(term.name, term.name)] = {
            "params": params,
            "clip": None if term.clip is None else [float(c) for c in term.clip],
            "scale": _f32([float(s) for s in scale]),
            "history_length": steps,
        }
    return out


def dump_deploy(cfg: Mapping[str, Any]) -> str:
    """The text unitree_rl_lab's exporter writes: ``yaml.dump(cfg, default_flow_style=None, sort_keys=False)``."""
    import yaml

    return yaml.dump(dict(cfg), default_flow_style=None, sort_keys=False)


def _read_back(path: Path, text: str, names: Sequence[str], aliases: Mapping[str, str]) -> Any:
    """The task transfer's own reader (:mod:`transfer.task.deploy`) reads from ``text``: the export's check, and the
    task its metadata carries."""
    import yaml

    try:
        return read_deploy_config(path, yaml.safe_load(text)).task(names, aliases)
    except TaskError as exc:
        raise ExportError(f"the deploy.yaml written does not read back: {exc}") from None


# ---------------------------------------------------------------------------------------------------- ONNX


def _onnx_model(policy: Any) -> Any:
    """The policy as one ONNX graph with one input ``obs``: an ONNX policy's own graph (input renamed), a torch
    policy's network traced (``torch.onnx.export``, the TorchScript exporter: no onnxscript needed)."""
    import onnx

    if policy.format == "onnx":
        model = onnx.load(str(policy.path))
        inputs = [i.name for i in model.graph.input if i.name not in {t.name for t in model.graph.initializer}]
        if len(inputs) != 1:
            raise ExportError(
                f"{policy.path.name}: {len(inputs)} inputs ({', '.join(inputs)}); Unitree's runner feeds one"
            )
        _rename(model.graph, inputs[0], "obs")
        return model
    import torch

    class Actor(torch.nn.Module):  # an RSL-RL actor: the loaded policy's own forward (normalizer, MLP, mean)
        def forward(self, obs: Any) -> Any:
            return policy._forward(obs)

    module = policy.module if policy.format == "torchscript" else Actor()
    buffer = io.BytesIO()
    import warnings

    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            module, (torch.zeros(1, policy.input_size),), buffer, input_names=["obs"], output_names=["actions"],
            dynamic_axes={"obs": {0: "batch"}, "actions": {0: "batch"}}, dynamo=False,
        )  # fmt: skip
    return onnx.load_from_string(buffer.getvalue())


def _rename(graph: Any, old: str, new: str) -> None:
    if old == new:
        return
    for value in graph.input:
        if value.name == old:
            value.name = new
    for node in graph.node:
        for i, name in enumerate(node.input):
            if name == old:
                node.input[i] = new
    for value in graph.output:
        if value.name == old:
            value.name = new


def _check_onnx(model: Any, policy: Any) -> float:
    """Largest |onnxruntime(model)(x) - policy(x)| on random observations; refused above :data:`TOLERANCE`."""
    ort = onnxruntime()
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    x = (np.random.default_rng(0).standard_normal((CHECK_SAMPLES, policy.input_size)) * 2.0).astype(np.float32)
    got = np.concatenate([session.run(None, {"obs": x[i : i + 1]})[0] for i in range(len(x))])
    expected = np.asarray(policy(x), dtype=np.float32)
    error = float(np.max(np.abs(got.reshape(expected.shape) - expected)))
    if not np.isfinite(error) or error > TOLERANCE * max(1.0, float(np.max(np.abs(expected)))):
        raise ExportError(
            f"{policy.path.name}: the exported ONNX model does not reproduce the policy (largest difference "
            f"{error:.3g} on {CHECK_SAMPLES} random observations); nothing written"
        )
    return error


# ---------------------------------------------------------------------------------------------------- writing


def _metadata(task: Any, names: Sequence[str], inputs: Any, asset: Any, checkpoint: Any) -> dict[str, Any]:

    try:
        trained_on = native_backend(inputs)
    except ReplayError:
        trained_on = None
    convention = inputs.source.value if isinstance(inputs.source, OrderingConvention) else None
    history = [*((inputs.policy.metadata or {}).get("history", []))]
    history.append({"export": "unitree", "input": Path(checkpoint).name, "transfer": __version__})
    return build_metadata(
        task, names, convention=convention, trained_on=trained_on, asset=inputs.asset_named(asset), history=history
    )


def _write(out: Path, model: Any, text: str, metadata: Any, force: bool, result: ExportResult) -> ExportResult:
    metadata = check_metadata(metadata)
    (out / "exported").mkdir(parents=True, exist_ok=True)
    (out / "params").mkdir(parents=True, exist_ok=True)
    save_onnx(model, result.policy, metadata)
    atomic_write(result.deploy, lambda tmp: Path(tmp).write_text(text))
    return result
