"""``transfer.replay(...)``: run a checkpoint on a backend, in its own joint order or deliberately not, and measure it.

:func:`replay` opens a :class:`~transfer.env.PolicyEnv` in the checkpoint's convention (``reorder=True``) or in the
target backend's own order (``reorder=False``: the naive control experiment), runs the policy closed-loop for
``seconds`` and returns a :class:`ReplayResult`. :func:`compare` runs the three replays a user needs to see at
once: native (the backend the checkpoint was trained on), reordered on the target, naive on the target.
:func:`plot` draws them. The ``transfer replay`` command is a thin layer over these.
"""

from __future__ import annotations

import dataclasses
import math
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

import numpy as np

from transfer._console import is_terminal, progress_bar
from transfer.backends import describe_settings, native_convention, warm_robot
from transfer.env.environment import PolicyEnv
from transfer.env.measure import Measure
from transfer.env.perturbations import Perturbation
from transfer.env.tracking import check_motion
from transfer.formats.onnx import motion_from_onnx
from transfer.ordering import parse_ordering
from transfer.robot.assets.mjcf import mujoco_joint_names
from transfer.robot.assets.mjcf_checks import refuse_welded_walker
from transfer.runs.inputs import (
    Inputs,
    ReplayError,
    aliases_in,
    checkpoint_order,
    native_backend,
    one_torch_thread,
    resolve_inputs,
    without_listed_order,
)
from transfer.runs.replay_plot import plot  # noqa: F401 - the replay's API: replay, compare and plot
from transfer.task.motion import read_motion
from transfer.traces import Recorder, metrics, write_trace
from transfer.traces.parquet import check_destination, trace_paths

if TYPE_CHECKING:  # the main path's values, named for the reader
    from transfer.env.environment import PolicyEnv
    from transfer.env.measure import Measure
    from transfer.formats.policy import Policy
    from transfer.traces import Recorder, Recording

__all__ = [
    "ReplayError",
    "ReplayResult",
    "baseline_failure",
    "compare",
    "plot",
    "replay",
]


@dataclass
class ReplayResult:
    """What one replay measured. Velocities are means over envs and over the run after the first second, counting
    each env only while it stands; ``env_steps_per_second`` counts physics steps of all envs per wall second,
    policy included."""

    label: str
    target: str
    source: str
    """The checkpoint's joint order."""
    reordered: bool
    order: str
    """The order the checkpoint was fed: ``source`` when reordered, the target's own when not."""
    num_envs: int
    seconds: float
    command: tuple[float, float, float]
    forward_velocity: float
    lateral_velocity: float
    yaw_rate: float
    fall_fraction: float
    survival_seconds: float
    fall_causes: dict[str, int]
    """How many envs fell of each cause (:data:`~transfer.env.FALL_CAUSES`): their base touched the ground,
    they tilted past 60°, their state stopped being finite."""
    env_steps_per_second: float
    nonfinite_envs: int
    checkpoint: str
    asset: str
    settings: dict[str, Any] = field(default_factory=dict)
    """The simulation settings in effect (:meth:`~transfer.Task.simulation_settings`)."""
    warnings: list[str] = field(default_factory=list)
    """What the inputs left to say (:attr:`transfer.runs.inputs.Inputs.warnings`): the run went ahead."""
    baseline: str | None = None
    """With :func:`compare`: why the native run is no baseline (it fell, or walked below half the command), else
    ``None``."""
    metrics: dict[str, Any] = field(default_factory=dict, repr=False)
    """Control and gait metrics (:func:`transfer.traces.metrics`): per joint, per foot and a ``summary``."""
    record: str | None = None
    """The trace file written (``record=``), else ``None``."""
    no_control: str | None = None
    """With :func:`compare`: why no naive run was made (the target's own joint order is the checkpoint's, so the
    naive run would be the reordered one again), else ``None``."""
    trace: dict[str, list[float]] = field(default_factory=dict, repr=False)
    recording: Any = field(default=None, repr=False, compare=False)
    """The run's :class:`~transfer.traces.Recording` (arrays per policy step and env; not in :meth:`to_dict`)."""

    @property
    def tracking(self) -> dict[str, Any] | None:
        """A motion tracker's summary (:func:`transfer.traces.metrics.tracking`): ``joint_pos_error`` (rad),
        ``anchor_ori_error`` (deg), ``body_pos_error`` (m), ``completed``; ``None`` for a run without a reference
        motion."""
        return self.metrics.get("tracking")

    def to_dict(self, *, trace: bool = False) -> dict[str, Any]:
        out = asdict(dataclasses.replace(self, recording=None))
        out["tracking"] = self.tracking
        out.pop("recording")
        if not trace:
            out.pop("trace")
        out["command"] = list(self.command)
        return {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in out.items()}


def replay(
    checkpoint: str | Path,
    target: str,
    *,
    source: str | Sequence[str] | None = None,
    config: str | Path | None = None,
    asset: str | Path | None = None,
    num_envs: int = 1,
    seconds: float = 10.0,
    command: Sequence[float] | None = None,
    seed: int = 0,
    reorder: bool = True,
    progress: bool | TextIO = True,
    label: str | None = None,
    backend_options: dict[str, Any] | None = None,
    inputs: Inputs | None = None,
    settings: Mapping[str, Any] | None = None,
    perturbation: Any = None,
    device: str = "cpu",
    record: str | Path | None = None,
    motion: str | Path | None = None,
    motion_fps: float | None = None,
    motion_anchor: str | None = None,
) -> ReplayResult:
    """Run ``checkpoint`` on ``target`` (``"physx"`` or ``"newton"``) for ``seconds`` and measure it.

    ``source`` is the checkpoint's joint order (a convention, a list of names, or a file listing them; default: the
    task's); ``config`` the task (a task file or a Newton policy YAML); ``asset`` the robot's USD file (default:
    the task's asset hint). ``reorder=False`` feeds the checkpoint the target's own order instead (the control).
    ``progress``: show a progress bar (on stderr, or on the stream given) for replays longer than two seconds, on
    a terminal (one plain line per run elsewhere). ``settings``: task fields to change by dotted name, e.g.
    ``{"physx.solver_position_iterations": 8, "ground.friction_combine": "multiply"}``
    (:meth:`~transfer.Task.with_settings`): the simulation settings without writing a task file.
    ``perturbation``: disturbances to run under, a :class:`~transfer.env.Perturbation` or ``{name: value}``
    (:data:`~transfer.env.PERTURBATIONS`); the push is applied after half the policy steps. ``device``: where the
    engines run (``"cpu"``, ``"cuda:0"``). ``record``: write the run's trace there (Parquet,
    :mod:`transfer.traces.parquet`: every policy step and env by joint and body name). ``motion``: the reference
    clip a motion-tracking policy follows (a ``.csv`` at ``motion_fps`` frames a second, or a ``.npz``;
    :mod:`transfer.task.motion`), its anchor body ``motion_anchor``: every env starts in its first frame and the run
    ends with the clip (:mod:`transfer.env.tracking`).
    """

    if not isinstance(perturbation, Perturbation):
        perturbation = Perturbation.from_dict(perturbation)

    aliases = aliases_in(settings)
    inputs = inputs or resolve_inputs(
        checkpoint, source=source, config=config, asset=asset, aliases=aliases, warm=partial(warm_robot, [target])
    )
    inputs = with_settings(inputs, settings)
    policy, task = inputs.policy, inputs.task
    if record is not None:
        check_destination(record)
    _check_run(perturbation, task, seconds, inputs.robot)
    check_sizes_before_run(inputs)
    ordering = inputs.source if reorder else None
    if not reorder:
        # the naive user: the checkpoint's vectors read in the target's order, by the task's names in that order
        task = without_listed_order(task)
    env = PolicyEnv(
        task,
        inputs.robot,
        target,
        ordering,
        num_envs=num_envs,
        command=command,
        seed=seed,
        device=device,
        backend_overrides=backend_options,
        perturbation=perturbation,
        motion=read_clip(motion, motion_fps, inputs),
        motion_anchor=motion_anchor,
    )
    try:
        return _run(env, policy, inputs, target, reorder, seconds, progress, label, record)
    finally:
        env.close()


def read_clip(path: str | Path | None, fps: float | None, inputs: Inputs) -> Any:
    """The reference motion at ``path`` (:func:`transfer.task.motion.read_motion`), its joint columns in the robot
    file's order (MuJoCo's order of its MJCF or URDF; a USD robot's: the checkpoint's); without a path, the motion a
    tracking export carries (mjlab's, :func:`transfer.formats.onnx.motion_from_onnx`: one frame per policy step, in
    the checkpoint's joint order), else ``None``."""

    if path is None and fps is not None:
        raise ReplayError("--motion-fps without --motion: give the clip it is the rate of")
    check_motion(inputs.task, path is not None or inputs.policy.motion_export)  # before any engine starts
    if path is None:
        if not inputs.policy.motion_export:
            return None

        names = inputs.task.joint_names or inputs.robot.order(inputs.source).joints
        return motion_from_onnx(inputs.policy.path, names, 1.0 / inputs.task.policy_dt)

    file = inputs.robot.file
    names = mujoco_joint_names(file) if file is not None else inputs.robot.order(inputs.source).joints
    return read_motion(path, names, fps)


def run_steps(env: Any, seconds: float) -> int:
    """The policy steps of a run of ``seconds``: no more than a tracker's clip holds (the run ends with it)."""
    steps = max(1, round(seconds / env.policy_dt))
    return steps if env.tracking is None else max(1, min(steps, env.tracking.steps))


def _check_run(perturbation: Any, task: Any, seconds: float, robot: Any) -> None:
    """Each perturbation against the run (a delay longer than it, ...) and the robot (a base lighter than the mass
    taken off), before any engine starts (the env asks again when the run begins)."""
    steps = max(1, round(seconds / task.policy_dt))  # as _run counts them
    for group in task.actuators:
        if group.model == "delayed_pd" and group.min_delay >= steps * task.decimation:
            raise ReplayError(
                f"actuators.{group.name}: min_delay {group.min_delay} physics steps, but the run has "
                f"{steps * task.decimation}: no action would ever reach its joints; give the delay the "
                "policy was trained with (Isaac Lab's: 0 to a few steps) or a longer run"
            )
    for kind, value in perturbation.active():
        try:
            kind.check_run(value, task, steps)
            kind.check_robot(value, robot)
        except ValueError as exc:
            raise ReplayError(str(exc)) from None


def check_sizes_before_run(inputs: Inputs) -> None:
    """The checkpoint's input and output sizes against the task on the robot (its patterns expanded on the robot's
    joints), before any engine starts (the same check runs on the env once it is up: an engine's log must not bury
    the one line that says it); a sweep's spec asks it of each checkpoint before any cell."""
    from transfer.runs.verify.checks import check_sizes  # verify replays: a cycle at module level

    refuse_welded_walker(inputs.asset_file, [t.name for t in inputs.task.observation])  # an MJCF welded to the world
    names = inputs.task.joint_names or inputs.robot.order(inputs.source).joints
    inputs.task.with_joint_names(list(names))  # every per-joint field fits the joints (TaskError naming the field)
    sizes, policy = check_sizes(inputs), inputs.policy
    if sizes.observation_size is not None and (policy.input_size, policy.output_size) != (
        sizes.observation_size,
        sizes.action_size,
    ):
        terms = {t["name"]: t["stop"] - t["start"] for t in sizes.terms}
        _refuse_sizes(policy, inputs, sizes.observation_size, sizes.action_size, terms)


def _refuse_sizes(policy: Any, inputs: Inputs, observation_size: int, action_size: int, terms: dict[str, int]):
    from transfer.runs.verify.checks import size_mismatch  # verify replays: a cycle at module level

    raise ReplayError(
        f"{size_mismatch(policy, inputs.asset_given.name, observation_size, action_size, terms)}. Is "
        "this the checkpoint's robot and task?"
    )


def _run(
    env: PolicyEnv,
    policy: Policy,
    inputs: Inputs,
    target: str,
    reorder: bool,
    seconds: float,
    progress: bool | TextIO,
    label: str | None,
    record: str | Path | None = None,
) -> ReplayResult:

    if policy.input_size != env.observation_size or policy.output_size != env.action_size:
        terms = {k: s.stop - s.start for k, s in env.slices.items()}
        _refuse_sizes(policy, inputs, env.observation_size, env.action_size, terms)
    command = tuple(float(c) for c in env.command[0])
    planar = np.asarray(command[:2])
    norm = float(np.linalg.norm(planar))
    measure = Measure(env.num_envs, planar / norm if norm > 1e-6 else np.array([1.0, 0.0]))
    steps = run_steps(env, seconds)
    try:
        env.begin_run(steps)
    except ValueError as exc:
        raise ReplayError(str(exc)) from None
    recorder = Recorder(env, steps, observations=record is not None)
    wall = _step_through(env, policy, measure, recorder, steps, progress, label or target)
    label = label or f"{_kind(inputs, target, reorder)} on {target}"
    order = inputs.source_label if reorder else f"{env.art.backend.native_convention.value} (target's own)"
    recording = recorder.finish(
        {
            "label": label,
            "checkpoint": str(policy.path),
            "asset": str(inputs.asset_given),
            "order": order,
            "settings": env.task.simulation_settings(),
            "task": env.task.to_dict(),
            "command": list(command),
        }
    )
    if record is not None:
        write_trace(recording, record)
    return _result(
        env,
        inputs,
        measure,
        recording,
        steps * env.num_envs * env.task.decimation / wall,
        label=label,
        target=target,
        reorder=reorder,
        order=order,
        record=record,
    )


def _step_through(
    env: PolicyEnv, policy: Policy, measure: Measure, recorder: Recorder, steps: int, progress: bool | TextIO, name: str
) -> float:
    """Run ``steps`` policy steps, measuring and recording each; the wall time (s) they took."""
    policy.reset()
    obs = env.observe()
    one_torch_thread()
    start = time.perf_counter()
    stream = progress if hasattr(progress, "write") else sys.stderr
    terminal = progress is not False and is_terminal(stream)  # a bar on a terminal, one plain line elsewhere
    for step in progress_bar(range(steps), progress, name, "step", delay=2.0):
        env.before_policy_step(step, steps)  # the perturbations that act during a run (a push at mid-run)
        recorder.observe(obs)
        obs, nonfinite = env.step(policy(obs))
        measure.nonfinite |= nonfinite
        state = env.root_state()
        measure.record(env.time, state, env.fall_causes(state))
        recorder.sample(env.last_action, ~np.isfinite(measure.fallen_at))
    wall = time.perf_counter() - start
    if progress is not False and not terminal:
        print(f"{name}: {steps} policy steps in {wall:.1f} s", file=stream)
    return wall


def _result(
    env: PolicyEnv,
    inputs: Inputs,
    measure: Measure,
    recording: Recording,
    rate: float,
    *,
    label: str,
    target: str,
    reorder: bool,
    order: str,
    record: str | Path | None,
) -> ReplayResult:
    """The run's :class:`ReplayResult` from its measurements and recording (``rate``: env steps a second)."""

    fallen = np.isfinite(measure.fallen_at)
    command = tuple(float(c) for c in env.command[0])
    return ReplayResult(
        label=label,
        target=target,
        source=inputs.source_label,
        reordered=reorder,
        order=order,
        num_envs=env.num_envs,
        seconds=env.time,
        command=command,
        forward_velocity=measure.mean("forward"),
        lateral_velocity=measure.mean("lateral"),
        yaw_rate=measure.mean("yaw_rate"),
        fall_fraction=float(fallen.mean()),
        fall_causes=measure.causes(),
        survival_seconds=float(np.where(fallen, measure.fallen_at, env.time).mean()),
        env_steps_per_second=rate,
        nonfinite_envs=int(measure.nonfinite.sum()),
        checkpoint=str(recording.meta["checkpoint"]),
        asset=str(inputs.asset_given),
        settings=env.task.simulation_settings(),
        warnings=[*inputs.warnings, *env.warnings],
        metrics=metrics(recording, Measure.warmup),
        record=None if record is None else str(record),
        trace=measure.trace,
        recording=recording,
    )


def baseline_failure(native: ReplayResult) -> str | None:
    """Why a native run (the checkpoint on its training engine) is no baseline to read a transfer against: it fell
    in some env, or walked below half the commanded speed. ``None`` when it stands and walks."""
    wanted = float(np.linalg.norm(native.command[:2]))

    if native.fall_fraction == 0 and native.seconds <= Measure.warmup:
        return (
            f"the runs are {native.seconds:g} s long, no longer than the {Measure.warmup:g} s warm-up before "
            "velocities count: nothing was measured (give --seconds over it); not a sign of wrong settings"
        )
    problems = []
    if native.fall_fraction > 0:
        problems.append(f"fell in {native.fall_fraction:.0%} of envs")
    speed = native.forward_velocity
    if wanted > 0 and not (math.isfinite(speed) and speed >= 0.5 * wanted):
        problems.append(f"walked {speed:.2f} m/s, below half the commanded {wanted:.2f} m/s")
    if not problems:
        return None

    s, engine = native.settings, native.target  # the engine the native run ran on: its own settings, by its own words
    shown = (
        f"{engine} {describe_settings(engine, s.get(engine))}, ground {s.get('ground')}, self-collisions "
        f"{s.get('self_collisions')}, dt {s.get('sim_dt')} x {s.get('decimation')}, actuators "
        f"{[a['model'] for a in s.get('actuators') or []] or 'implicit'}"
    )
    return (
        f"native run fails: the replay does not reproduce training ({'; '.join(problems)} on {native.target}). "
        f"Settings in effect: {shown}. Set what training used (--config, --set)."
    )


def _kind(inputs: Inputs, target: str, reorder: bool) -> str:
    """``native`` (the checkpoint's order on its training engine), ``reordered`` or ``naive``."""
    if not reorder:
        return "naive"
    try:
        return "native" if native_backend(inputs) == target else "reordered"
    except ReplayError:
        return "reordered"


def with_settings(inputs: Inputs, settings: Mapping[str, Any] | None) -> Inputs:
    """``inputs`` with the task's simulation ``settings`` changed (``--set``). A ``trained_on`` that contradicts the
    engine the checkpoint (its metadata, run folder or task) says it was trained on is refused: the native run
    would be on another engine, under another name, and nothing would say so."""
    if not settings:
        return inputs
    said, asked = inputs.task.trained_on, settings.get("trained_on")
    if said is not None and asked is not None and asked != said:
        raise ReplayError(
            f"--set trained_on={asked} contradicts {inputs.policy.path.name}: {inputs.task.source or 'its task'} says it "
            f"was trained on {said}. Drop --set trained_on (the native run is on {said}), or replay with a task file "
            "that says otherwise (--config)"
        )
    return dataclasses.replace(inputs, task=inputs.task.with_settings(settings, where="--set"))


def compare(checkpoint: str | Path, target: str, **kwargs: Any) -> list[ReplayResult]:
    """Native (on the training backend), reordered on ``target``, naive on ``target``: three :func:`replay` runs; two
    when ``target`` is the training backend (reordered there would be native run again)."""
    progress = kwargs.pop("progress", True)
    settings = kwargs.pop("settings", None)
    inputs = resolve_inputs(
        checkpoint,
        source=kwargs.pop("source", None),
        config=kwargs.pop("config", None),
        asset=kwargs.pop("asset", None),
        aliases=aliases_in(settings),
        warm=partial(warm_robot, [target]),
    )
    inputs = with_settings(inputs, settings)
    native = native_backend(inputs)
    runs = [("native", native, True), ("reordered", target, True), ("naive", target, False)]
    if target == native:  # on its training engine, the checkpoint's order is native: run it once
        del runs[1]
    no_control = _no_control(inputs, target)
    if no_control is not None:  # the naive run would be the reordered one again, not a control
        runs = runs[:-1]
    record = kwargs.pop("record", None)
    names = [f"{name}-{backend}" for name, backend, _ in runs]
    names = [n if names.count(n) == 1 else f"{n}-{i + 1}" for i, n in enumerate(names)]
    records = [None] * len(runs) if record is None else trace_paths(record, names)
    results = [
        replay(
            checkpoint,
            backend,
            reorder=reorder,
            inputs=inputs,
            progress=progress,
            label=f"{name} ({backend})",
            record=path,
            **kwargs,
        )
        for (name, backend, reorder), path in zip(runs, records, strict=True)
    ]
    failure = baseline_failure(results[0])
    for r in results:
        r.baseline, r.no_control = failure, no_control
    return results


def _no_control(inputs: Inputs, target: str) -> str | None:
    """Why no naive run can be a control on ``target``: the engine's own joint order is the checkpoint's (legged_gym's
    H1 on MuJoCo or Newton: the MJCF's order is MuJoCo's and Newton's), else ``None``; also ``None`` when the
    target's order cannot be told before the run (a USD robot on MuJoCo)."""

    convention = native_convention(target)
    try:
        own = inputs.robot.order(checkpoint_order(parse_ordering(convention), inputs.robot.file)).joints
        fed = inputs.robot.order(inputs.source).joints
    except (ReplayError, ValueError):
        return None
    if tuple(own) != tuple(fed):
        return None
    return (
        f"no naive run: {target}'s own joint order ({convention}) is the checkpoint's ({inputs.source_label}), so "
        "feeding the target's order is the reordered run again, not a control"
    )
