"""``transfer task``: a starting task file (``format: transfer-task/1``) for a robot asset, with comments where a
human must decide.

:func:`starting_task` reads the asset with USD alone (no engine runs):

- every joint in both engines' orders (``joint_names_by_convention``: ``physx``, ``mjwarp``, and ``robot_schema``
  where the asset authors one), resolved by the emulations proven equal to the engines (:mod:`transfer.orders`);
- ``default_joint_pos`` from the authored pose (``PhysicsJointStateAPI`` positions), else the drive targets, else 0;
- ``stiffness`` / ``damping`` from the drives, per radian (USD authors angular gains per degree: x 180/pi),
  ``effort_limit`` from ``maxForce``, ``armature`` from ``physxJoint:armature``;
- Isaac Lab's flat-velocity observation and a joint-position action over every joint, sized for the robot (with a
  checkpoint, the sizes are checked against its input and output);
- the simulation settings in effect: the PhysicsScene's time step and gravity, the articulation's solver iterations
  and self-collisions (the task's defaults where the asset authors none).

:func:`render` writes the task as YAML through :meth:`Task.to_dict` (so whatever fields the task model has are
written), with a comment on each field and ``# DECIDE:`` where the asset cannot say what the policy was trained with.
The text reads back with :func:`transfer.task.load_task` to the same task.
"""

from __future__ import annotations

import dataclasses
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from transfer._files import same_file
from transfer.backends import backend_names, native_backend, starting_settings
from transfer.formats.checkpoint import atomic_write
from transfer.ordering import OrderingConvention, parse_ordering
from transfer.orders import OrderingError, conventions, get_convention, resolve_ordering
from transfer.orders.conventions import MEMBERS
from transfer.robot import Robot
from transfer.robot.assets import package_hint
from transfer.robot.profile import read_asset_settings
from transfer.runs.inputs import open_policy
from transfer.task import FLAT_VELOCITY_OBSERVATION, ActionTerm, Task

__all__ = ["DECIDE", "StartingTask", "TaskFileError", "render", "starting_task", "write_task_file"]

DECIDE = "# DECIDE:"
"""The marker of every comment where a human must choose a value the asset cannot give."""
ACTION_SCALE = 0.5  # Isaac Lab's velocity tasks: 0.5 (ANYmal), 0.25 (Unitree)


class TaskFileError(ValueError):
    """The task file cannot be written as asked (sizes that disagree with the checkpoint, an existing output)."""


@dataclass(frozen=True)
class StartingTask:
    """The generated task, the per-field comments, and what the generator could not decide (``decide``)."""

    task: Any
    comments: dict[str, list[str]]
    decide: list[str]
    joints: tuple[str, ...]
    observation_size: int
    action_size: int
    checkpoint: dict[str, Any] | None = None
    notes: list[str] = field(default_factory=list)


def _number(x: float) -> float:
    return float(f"{x:.6g}")


def _orders(asset: str) -> dict[str, tuple[str, ...]]:

    out = {}
    for conv in (c for c in conventions() if c.from_usd):  # the orders a USD keeps
        convention = conv.name
        try:
            order = resolve_ordering(asset, convention)
        except OrderingError:
            if conv.holds_base is not None:  # an engine's order: its refusal is the task's; one no engine's (the
                raise  # robot schema) may just not be authored
            continue
        if order is not None:
            out[convention] = tuple(order.joints)
    return out


def _per_joint(joints: list[str], values: dict[str, float | None]) -> dict[str, float] | None:
    """``{".*": v}`` when every joint has the same value, else one entry per joint; ``None`` if any is missing."""
    if any(values.get(j) is None for j in joints):
        return None
    picked = {j: _number(values[j]) for j in joints}  # type: ignore[arg-type]
    distinct = set(picked.values())
    return {".*": distinct.pop()} if len(distinct) == 1 else picked


@dataclass
class _Draft:
    """What the generator says about the task as it goes: per-field comments, the fields a human must decide (in
    the order met), and notes on the asset."""

    comments: dict[str, list[str]] = field(default_factory=dict)
    decide: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def ask(self, key: str, *lines: str) -> None:
        """Comment ``key`` with ``lines`` and list it among the fields a human must decide."""
        self.decide.append(key)
        self.comments[key] = list(lines)


def starting_task(
    asset: str | os.PathLike,
    *,
    checkpoint: str | os.PathLike | None = None,
    source: str | None = None,
    output: str | os.PathLike | None = None,
) -> StartingTask:
    """The starting task for ``asset`` (see the module docstring). ``source``: the convention the checkpoint was
    trained in (``physx``, ``mjwarp``, ``robot_schema``); ``output``: where the file will be written (the task's
    ``asset`` is then relative to it). Raises :class:`TaskFileError` when ``checkpoint``'s sizes disagree."""

    asset = str(asset)
    if package_hint(asset) is None and not Path(asset).is_file():
        raise FileNotFoundError(f"{asset}: no such USD file (the robot asset to write a task for)")
    usd = str(Robot.of(asset).usd)  # an MJCF/URDF file: its converted USD; the task names the file given
    orders = _orders(usd)
    settings = read_asset_settings(usd)
    _refuse_repeated_names(asset, orders)
    convention = _source_convention(source, orders)
    joints = list(orders[MEMBERS])
    drives = {n: settings.joints.get(n) for n in joints}
    draft = _Draft()
    defaults = _default_pose(joints, drives, draft)
    gains = _drive_gains(joints, drives, draft)
    _note_orders_and_velocities(orders, drives, draft)
    simulation = _simulation(settings, draft)
    action = _action(joints, draft)
    values: dict[str, Any] = dict(
        name=f"{Path(asset.split(':', 1)[1] if package_hint(asset) else asset).stem}_flat_velocity",
        observation=FLAT_VELOCITY_OBSERVATION,
        action=action,
        joint_names=None,
        convention=convention,
        default_joint_pos=defaults,
        **gains,
        **simulation,
        spawn_height=None,
        command=(1.0, 0.0, 0.0),
        asset=_relative(asset, output),
        trained_on=native_backend(convention),
        joint_names_by_convention={k: list(v) for k, v in orders.items()},
        gravity=None if settings.gravity is None else tuple(_number(g) for g in settings.gravity),
        self_collisions=settings.self_collisions,
    )
    known = {f.name for f in dataclasses.fields(Task)}
    task = Task(**{k: v for k, v in values.items() if k in known})
    size = task.observation_size(len(joints))
    _describe_the_rest(draft, size, len(joints), convention, settings)
    result = StartingTask(
        task, draft.comments, draft.decide, tuple(joints), size, task.action_size(len(joints)), notes=draft.notes
    )
    if checkpoint is not None:
        result = dataclasses.replace(result, checkpoint=_check_sizes(result, checkpoint))
    return result


def _refuse_repeated_names(asset: str, orders: dict[str, tuple[str, ...]]) -> None:
    """Refuse an order that names a joint twice: a task names joints by name."""
    for convention, names in orders.items():
        repeated = sorted({n for n in names if names.count(n) > 1})
        if repeated:
            raise TaskFileError(
                f"{asset}: the {convention} order names {', '.join(repeated)} more than once (joints with one name "
                "under different parents); a task names joints by name: rename them apart in the asset"
            )


def _source_convention(source: str | None, orders: dict[str, tuple[str, ...]]) -> str | None:
    """The convention ``--source`` names (``None`` without one); refused when unknown or when the asset authors no
    order of it."""

    if source is None:
        return None
    parsed = parse_ordering(source)
    if not isinstance(parsed, OrderingConvention) or not get_convention(parsed).from_usd:
        usd = ", ".join(c.name for c in conventions() if c.from_usd)
        raise TaskFileError(f"--source {source!r}: expected one of {usd} (an order the robot's USD keeps)")
    convention = parsed.value
    if convention not in orders:
        raise TaskFileError(f"--source {convention}: the asset authors no {convention} order (IsaacRobotAPI)")
    return convention


def _default_pose(joints: list[str], drives: dict[str, Any], draft: _Draft) -> dict[str, float]:
    """``default_joint_pos``: the authored pose, else the drive targets, else 0 (to decide when any is missing)."""
    pose = {n: _pose(drives[n]) for n in joints}
    authored = [n for n in joints if pose[n] is not None]
    defaults = {n: _number(pose[n] or 0.0) for n in joints}
    if len(authored) < len(joints):
        missing = "any joint" if not authored else f"{len(joints) - len(authored)} of the joints"
        draft.ask(
            "default_joint_pos",
            f"{DECIDE} the asset authors no pose or drive target for {missing} (written as 0.0: the pose the "
            "asset is drawn in): set the pose the policy was trained with (Isaac Lab: init_state.joint_pos), in rad/m.",
            'Keys are joint names or full-match patterns (".*_HFE").',
        )
    else:
        draft.comments["default_joint_pos"] = ["from the asset's authored pose (PhysicsJointStateAPI) or drive targets"]
    if len(set(defaults.values())) == 1:
        defaults = {".*": next(iter(defaults.values()))}
    return defaults


def _drive_gains(joints: list[str], drives: dict[str, Any], draft: _Draft) -> dict[str, Any]:
    """``stiffness`` and ``damping`` from the drives, per radian (to decide when no stiffness holds the pose),
    ``effort_limit`` from their maxForce and ``armature`` from physxJoint:armature."""
    stiffness = _per_joint(joints, {n: d.stiffness if d else None for n, d in drives.items()}) or {}
    damping = _per_joint(joints, {n: d.damping if d else None for n, d in drives.items()}) or {}
    gains = [*stiffness.values(), *damping.values()]
    if not stiffness or not any(stiffness.values()):
        draft.ask(
            "stiffness",
            f"{DECIDE} the asset's drives author stiffness {'0' if stiffness else 'nothing'}: nothing would hold the "
            "pose. Set the gains the policy was trained with (Isaac Lab's actuator stiffness / damping, N·m/rad).",
        )
    else:
        draft.comments["stiffness"] = [
            "from the asset's drives, converted to per radian (USD angular gains are per degree)"
        ]
    if not gains:
        stiffness = damping = {}
    max_force = _per_joint(joints, {n: d.max_force if d else None for n, d in drives.items()})
    armature = _per_joint(joints, {n: d.armature if d else None for n, d in drives.items()}) or {}
    draft.comments["effort_limit"] = (
        ["from the drives' maxForce (N·m or N)"] if max_force else ["null: the drives author no finite maxForce"]
    )
    draft.comments["armature"] = ["from physxJoint:armature" if armature else "{}: the asset's (it authors none)"]
    return dict(stiffness=stiffness, damping=damping, armature=armature, effort_limit=max_force)


def _note_orders_and_velocities(orders: dict[str, tuple[str, ...]], drives: dict[str, Any], draft: _Draft) -> None:
    """Note the orders that list other joints than physx's, and the fastest authored velocity limit."""
    physx_joints = orders[MEMBERS]
    only = {c: sorted(set(v) - set(physx_joints)) for c, v in orders.items() if set(v) != set(physx_joints)}
    for convention, names in only.items():
        draft.notes.append(
            f"the {convention} order lists other joints than physx's (only in {convention}: {', '.join(names) or '-'}; "
            f"only in physx: {', '.join(sorted(set(physx_joints) - set(orders[convention]))) or '-'})"
        )
    velocities = {n: d.max_velocity for n, d in drives.items() if d and d.max_velocity is not None}
    if velocities:
        fastest = max(velocities.values())
        draft.notes.append(f"velocity limits (physxJoint:maxJointVelocity) authored up to {fastest:.3g} rad/s")


def _simulation(settings: Any, draft: _Draft) -> dict[str, Any]:
    """The simulation settings in effect (each engine's, as its backend starts a task file: PhysX's solver
    iterations; ``sim_dt``, ``decimation``), the ones to decide marked."""
    engines = {}
    for name, (values, text, decide) in starting_settings(settings).items():
        engines[name] = dict(values)
        if decide:
            draft.ask(name, f"{DECIDE} {text}")
        else:
            draft.comments[name] = [text]
    sim_dt = settings.time_step or 0.005
    draft.ask(
        "sim_dt",
        f"{DECIDE} physics step (s): "
        + (
            f"the asset's PhysicsScene ({1 / sim_dt:.4g} Hz)"
            if settings.time_step
            else "the asset authors no PhysicsScene time step; 0.005 (200 Hz) is Isaac Lab's locomotion default"
        )
        + ". Use the training's sim.dt.",
    )
    draft.ask("decimation", f"{DECIDE} physics steps per policy step (policy at {1 / (sim_dt * 4):.4g} Hz)")
    return dict(engines=engines, sim_dt=_number(sim_dt), decimation=4)


def _action(joints: list[str], draft: _Draft) -> Any:
    """Isaac Lab's joint-position action over every joint, its scale to decide."""

    draft.ask(
        "action",
        f"{DECIDE} joint position target = default + scale * action, for every joint ({len(joints)} actions); "
        "scale as trained (Isaac Lab: 0.5 ANYmal, 0.25 Unitree)",
    )
    return ActionTerm(kind="joint_position", scale=ACTION_SCALE, use_default_offset=True, joints=None)


def _describe_the_rest(draft: _Draft, size: int, n_joints: int, convention: str | None, settings: Any) -> None:
    """The comments on the observation (``size`` entries), the convention, the command and the fields the asset
    fixes or leaves to their defaults."""
    draft.ask(
        "observation",
        f"Isaac Lab's flat-velocity policy observation: {size} entries for {n_joints} joints, in this order; joint "
        "blocks follow the checkpoint's joint order.",
        f"{DECIDE} the terms, scales and clips the policy was trained with (check against its input size).",
    )
    if convention is None:
        draft.ask(
            "convention",
            f"{DECIDE} the order the checkpoint's joint vectors follow: physx (trained on PhysX / Isaac Lab), mjwarp "
            "(Newton / MuJoCo-Warp) or robot_schema; or pass --source to replay. Both orders are listed below.",
        )
    else:
        draft.comments["convention"] = [f"the checkpoint's joint order (--source {convention})"]
    comments = draft.comments
    comments["joint_names_by_convention"] = [f"each engine's joint order for this asset ({n_joints} joints)"]
    comments["spawn_height"] = ["null: computed from the asset's collision geometry at its authored pose"]
    draft.ask("command", f"{DECIDE} the velocity command replayed: vx, vy (m/s), wz (rad/s)")
    comments["asset"] = ["the robot, relative to this file"]
    comments["joint_names"] = ["null: the checkpoint's order is the convention's list below"]
    comments["damping"] = ["from the asset's drives, per radian (set with the stiffness)"]
    comments["trained_on"] = [f"the engine the checkpoint was trained on ({', '.join(backend_names())}), from --source"]
    comments["friction"] = ["{}: the asset's joint friction"]
    comments["ground"] = ["null: the default ground material"]
    comments["actuators"] = ["[]: every joint driven by the engine's PD (Isaac Lab's implicit actuator)"]
    comments["self_collisions"] = ["the articulation's physxArticulation:enabledSelfCollisions"]
    comments["gravity"] = ["null: 9.81 m/s^2 down (the asset's PhysicsScene authors none)"]
    if settings.gravity is not None:
        comments["gravity"] = ["the asset's PhysicsScene gravity (m/s^2)"]


def _pose(drive: Any) -> float | None:
    if drive is None:
        return None
    return drive.position if drive.position is not None else drive.target


def _relative(asset: str, output: str | os.PathLike | None) -> str:

    if package_hint(asset) is not None:  # newton:<name>: found through the package wherever the task file lies
        return asset
    base = Path(output).resolve().parent if output is not None else Path.cwd()
    return Path(os.path.relpath(Path(asset).resolve(), base)).as_posix()


def _check_sizes(result: StartingTask, checkpoint: str | os.PathLike) -> dict[str, Any]:

    policy = open_policy(checkpoint)
    sizes = {"input_size": policy.input_size, "output_size": policy.output_size}
    wrong = []
    if policy.input_size != result.observation_size:
        wrong.append(
            f"it reads {policy.input_size} observations, the flat-velocity skeleton gives {result.observation_size} "
            f"for {len(result.joints)} joints"
        )
    if policy.output_size != result.action_size:
        wrong.append(f"it writes {policy.output_size} actions, the robot has {result.action_size} joints")
    if wrong:
        raise TaskFileError(
            f"{checkpoint} does not fit this robot's flat-velocity task: {'; '.join(wrong)}. The policy reads other "
            "observation terms, or belongs to another robot: write the file without --checkpoint and edit its "
            "observation and action to the training's."
        )
    return {"path": str(checkpoint), **sizes}


def _yaml_value(key: str, value: Any) -> str:
    import yaml

    if key == "joint_names_by_convention" and value:
        lines = [f"{key}:"]
        for name, joints in value.items():
            lines.append(f"  {name}: [{', '.join(joints)}]")
        return "\n".join(lines) + "\n"
    if key == "observation":
        lines = [f"{key}:"]
        for term in value:
            plain = term.get("scale") == 1.0 and term.get("clip") is None
            lines.append(f"  - {term['name']}" if plain else f"  - {yaml.safe_dump(term, default_flow_style=True)}")
        return "\n".join(line.rstrip() for line in lines) + "\n"
    if isinstance(value, dict) and value and all(isinstance(v, (int, float)) for v in value.values()):
        lines = [f"{key}:"] + [f"  {k if k.isidentifier() else json.dumps(k)}: {v}" for k, v in value.items()]
        return "\n".join(lines) + "\n"
    flow = None if isinstance(value, (list, dict)) else False  # leaf lists and mappings inline, scalars plain
    return yaml.safe_dump({key: value}, sort_keys=False, default_flow_style=flow, width=120)


def render(result: StartingTask, asset: str) -> str:
    """The task as a commented YAML task file (reads back with :func:`transfer.task.load_task` to ``result.task``)."""
    data = result.task.to_dict()
    lines = [
        f"format: {data.pop('format')}",
        f"# A starting task for {Path(asset).name}, written by `transfer task` from the asset alone. Every line",
        f"# marked '{DECIDE}' needs a value the asset cannot give: what the policy was trained with. Read",
        "# presets/tasks/README.md for the fields. Replay with:",
        f"#   transfer replay CHECKPOINT --target newton --config THIS.yaml{'' if result.task.convention else ' --source CONVENTION'}",
    ]
    if result.checkpoint:
        c = result.checkpoint
        lines.append(f"# Checked against {c['path']}: {c['input_size']} observations, {c['output_size']} actions.")
    for note in result.notes:
        lines.append(f"# Note: {note}.")
    for key, value in data.items():
        lines.append("")
        for comment in result.comments.get(key, []):
            prefix = "" if comment.startswith("#") else "# "
            lines += [prefix + line for line in _wrap(comment)]
        lines.append(_yaml_value(key, value).rstrip("\n"))
    return "\n".join(lines) + "\n"


def _wrap(text: str, width: int = 116) -> list[str]:
    import textwrap

    return textwrap.wrap(text, width=width, subsequent_indent="#   " if text.startswith("#") else "  ") or [""]


def write_task_file(
    asset: str | os.PathLike,
    output: str | os.PathLike,
    *,
    checkpoint: str | os.PathLike | None = None,
    source: str | None = None,
    force: bool = False,
) -> StartingTask:
    """Write the starting task of ``asset`` to ``output`` (refused when it exists, unless ``force``)."""
    out = Path(output)
    if out.is_dir():
        raise TaskFileError(f"-o {out}: is a folder; name the task file to write (e.g. {out / 'task.yaml'})")
    for what, given in (("the robot", asset), ("the checkpoint", checkpoint)):
        if given is not None and same_file(out, given):
            raise TaskFileError(
                f"-o {out} is {what} this command reads ({given}): refusing to write over it, even "
                "with --force; give the task file another name"
            )
    if out.exists() and not force:
        raise TaskFileError(f"-o {out}: the file exists; pass --force to overwrite it, or choose another name")
    if not out.parent.is_dir():
        raise TaskFileError(f"-o {out}: the folder {out.parent} does not exist; create it first")
    result = starting_task(asset, checkpoint=checkpoint, source=source, output=out)
    text = render(result, str(asset))
    _check_round_trip(text, result, out)

    # the old file stays whole if writing fails (a full disk); without --force, one that appeared meanwhile is kept
    atomic_write(out, lambda tmp: tmp.write_text(text), replace=force)
    return result


def _check_round_trip(text: str, result: StartingTask, out: Path) -> None:
    import yaml

    data = yaml.safe_load(text)
    read = Task.from_dict(data, source=str(out))
    if read != result.task:  # a bug here, not the user's: say what differs
        diff = [k for k, v in result.task.to_dict().items() if read.to_dict().get(k) != v]
        raise AssertionError(f"transfer task: the written YAML reads back differently in {diff}")
