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
from pathlib import Path
from typing import Any, TextIO

import numpy as np

from transfer.ordering import OrderingConvention, parse_ordering

__all__ = [
    "ReplayError",
    "ReplayResult",
    "baseline_failure",
    "compare",
    "native_backend",
    "plot",
    "replay",
    "resolve_inputs",
]

_NATIVE_BACKEND = {OrderingConvention.PHYSX: "physx", OrderingConvention.MJWARP: "newton"}


class ReplayError(ValueError):
    """A replay's inputs do not fit together (missing asset or convention, sizes that do not match)."""


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
    env_steps_per_second: float
    nonfinite_envs: int
    checkpoint: str
    asset: str
    settings: dict[str, Any] = field(default_factory=dict)
    """The simulation settings in effect (:meth:`~transfer.Task.simulation_settings`)."""
    baseline: str | None = None
    """With :func:`compare`: why the native run is no baseline (it fell, or walked below half the command), else
    ``None``."""
    trace: dict[str, list[float]] = field(default_factory=dict, repr=False)

    def to_dict(self, *, trace: bool = False) -> dict[str, Any]:
        out = asdict(self)
        if not trace:
            out.pop("trace")
        out["command"] = list(self.command)
        return {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in out.items()}


@dataclass(frozen=True)
class Inputs:
    """A replay's resolved inputs: the policy, the task, the asset and the checkpoint's joint order."""

    policy: Any
    task: Any
    asset: Path
    source: Any
    """An :class:`~transfer.ordering.OrderingConvention` or a tuple of joint names."""
    source_label: str


def _parse_source(source: str | Sequence[str] | None) -> Any:
    if source is None or not isinstance(source, str):
        return parse_ordering(source)
    path = Path(source)
    if path.is_file():
        import yaml

        names = yaml.safe_load(path.read_text())
        if not isinstance(names, list):
            raise ReplayError(f"--source {path}: expected a list of joint names (YAML list or one name per line)")
        return parse_ordering(names)
    try:
        return parse_ordering(source)
    except ValueError:
        raise ReplayError(
            f"--source {source!r}: not a convention (physx, mjwarp, robot_schema) and not a file listing joint names"
        ) from None


def resolve_inputs(
    checkpoint: str | Path,
    *,
    source: str | Sequence[str] | None = None,
    config: str | Path | None = None,
    asset: str | Path | None = None,
) -> Inputs:
    """Load the checkpoint and the task, and settle the asset and the checkpoint's joint order.

    A checkpoint carrying metadata (:mod:`transfer.checkpoint`, written by ``transfer convert``) says all three:
    ``source``, ``config`` and ``asset`` are optional then. Given anyway, each is checked against it and refused
    when it contradicts it, showing both values: ``source`` must give the checkpoint's joint names on the asset,
    ``config`` must agree on every field both set (fields the metadata leaves unset are taken from it), and
    ``asset`` (or the asset the config or metadata names) must resolve the checkpoint's joint order.

    ``checkpoint`` may also be an Isaac Lab run folder (``params/env.yaml`` beside ``model_<iter>.pt`` or
    ``exported/policy.pt``), or a checkpoint file inside one: the task, the training engine (the default
    ``source``) and the asset path come from the run's ``env.yaml`` (docs/isaaclab.md).
    """
    from transfer.policy import load_policy
    from transfer.task import load_task, resolve_asset
    from transfer.task.isaaclab import find_run

    if find_run(checkpoint) is not None and (config is None or Path(checkpoint).is_dir()):
        return _inputs_from_run(checkpoint, source, config, asset)
    policy = load_policy(checkpoint)
    meta = policy.metadata
    if meta is not None:
        return _inputs_from_metadata(policy, meta, source, config, asset)
    if config is None:
        raise ReplayError(
            f"{checkpoint}: no task configuration. Pass --config with a task file (presets/tasks/*.yaml) or a Newton "
            "policy YAML describing the checkpoint's observation, action and defaults; or store them in the "
            "checkpoint once: transfer convert CHECKPOINT --source X --to X --config FILE.yaml --asset ROBOT.usd -o OUT."
        )
    task = load_task(config)
    parsed = _parse_source(source)
    if parsed is None and task.convention is not None:
        parsed = parse_ordering(task.convention)
    if parsed is None:
        raise ReplayError(
            f"--source is needed: the joint order of {Path(checkpoint).name} (physx, mjwarp, robot_schema, or a file "
            f"listing its joint names); {config} does not say."
        )
    if isinstance(parsed, OrderingConvention):
        task = task.with_convention(parsed)
        label = parsed.value
    else:
        label = "explicit list"
    if asset is None and task.asset is None:
        raise ReplayError(f"--asset is needed: {config} names no asset for the robot (a USD file)")
    path = Path(asset) if asset is not None else resolve_asset(task.asset)
    if not path.is_file():
        raise FileNotFoundError(f"Asset file not found: {path}")
    return Inputs(policy, task, path, parsed, label)


def _inputs_from_run(path: str | Path, source: Any, config: Any, asset: Any) -> Inputs:
    """:func:`resolve_inputs` for an Isaac Lab run folder (or a checkpoint file inside one, without ``config``).

    The run's ``params/env.yaml`` is read (safely) before anything else is loaded; the checkpoint is the named
    file, else the newest ``model_<iter>.pt``, else ``exported/policy.pt`` / ``.onnx``. The task is the env.yaml's
    (``config``, when given, replaces it: the way to describe what env.yaml cannot say), the order is ``source``
    or the one the training engine (or ``scene.robot.joint_ordering``) gives, the asset is ``asset`` or the run's
    ``usd_path`` when that is a local file. A checkpoint carrying metadata speaks for itself.
    """
    from transfer.orders import resolve_ordering
    from transfer.policy import detect_format, load_policy
    from transfer.task import load_task
    from transfer.task.isaaclab import isaaclab_task, read_isaaclab_run

    run = read_isaaclab_run(path)
    options = run.policy_options() if detect_format(run.checkpoint) == "rsl_rl" else {}
    policy = load_policy(run.checkpoint, **options)
    if policy.metadata is not None:
        return _inputs_from_metadata(policy, policy.metadata, source, config, asset)
    parsed = _parse_source(source) if source is not None else parse_ordering(run.order)
    if config is not None:
        task = load_task(config)
        if isinstance(parsed, OrderingConvention):
            task = task.with_convention(parsed)
        task = dataclasses.replace(task, trained_on=task.trained_on or run.trained_on)
        if asset is None and task.asset is not None:
            from transfer.task import resolve_asset

            asset = resolve_asset(task.asset)
    asset_path = run.asset_path(asset)
    if config is None:
        order = parsed.value if isinstance(parsed, OrderingConvention) else tuple(parsed)
        task = isaaclab_task(run, resolve_ordering(asset_path, parsed).joints, order=order, asset=asset_path)
    label = parsed.value if isinstance(parsed, OrderingConvention) else "explicit list"
    return Inputs(policy, task, asset_path, parsed, label)


def _inputs_from_metadata(policy: Any, meta: dict[str, Any], source: Any, config: Any, asset: Any) -> Inputs:
    """:func:`resolve_inputs` for a checkpoint that describes itself: the metadata's task, order and asset, each
    explicit argument checked against them."""
    from transfer.checkpoint import merge_config, metadata_to_task
    from transfer.orders import resolve_ordering
    from transfer.task import load_task, resolve_asset

    name = policy.path.name
    task = metadata_to_task(meta, source=f"{name} (metadata)")
    order: Any = parse_ordering(task.convention) if task.convention is not None else task.joint_names
    label = task.convention or "explicit list"
    config_task = None if config is None else load_task(config)
    if config_task is not None:
        task = merge_config(task, config_task, where=f"--config {config} contradicts {name}'s metadata")
    hint = asset or (config_task.asset if config_task is not None else None) or task.asset
    if hint is None:
        raise ReplayError(
            f"--asset is needed: {name}'s metadata names no asset for the robot (convert it with --asset to store one)"
        )
    if asset is not None:
        path = Path(asset)
        if not path.is_file():
            raise FileNotFoundError(f"Asset file not found: {path}")
    else:
        try:
            path = resolve_asset(str(hint))
        except FileNotFoundError as exc:
            raise FileNotFoundError(
                f"{exc} (named by {name}'s metadata); pass --asset with the robot's USD file"
            ) from None
    resolved = resolve_ordering(path, order).joints
    if resolved != task.joint_names:
        raise ReplayError(
            f"{name}'s metadata lists its joints in {label} order as {list(task.joint_names)}, but {path.name} resolves "
            f"that order to {list(resolved)}. Is this the checkpoint's robot? (--asset)"
        )
    if source is not None:
        parsed = _parse_source(source)
        given = resolve_ordering(path, parsed).joints
        if given != task.joint_names:
            shown = parsed.value if isinstance(parsed, OrderingConvention) else source
            raise ReplayError(
                f"--source {shown} contradicts {name}'s metadata: the checkpoint's joint order is {label} "
                f"{list(task.joint_names)}; --source {shown} gives {list(given)} on {path.name}. Drop --source: the "
                "checkpoint says its order."
            )
    return Inputs(policy, task, path, order, label)


def native_backend(inputs: Inputs) -> str:
    """The backend the checkpoint was trained on: the task's ``trained_on`` (a converted checkpoint's metadata keeps
    it), else its convention's engine."""
    trained = inputs.task.trained_on
    if trained in ("physx", "newton"):
        return trained
    if isinstance(inputs.source, OrderingConvention) and inputs.source in _NATIVE_BACKEND:
        return _NATIVE_BACKEND[inputs.source]
    raise ReplayError(
        f"Cannot tell which backend {inputs.policy.path.name} was trained on from a {inputs.source_label} order; "
        "set trained_on in the task file."
    )


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
    engines run (``"cpu"``, ``"cuda:0"``).
    """
    from transfer.env import Perturbation, PolicyEnv

    if not isinstance(perturbation, Perturbation):
        perturbation = Perturbation.from_dict(perturbation)

    inputs = inputs or resolve_inputs(checkpoint, source=source, config=config, asset=asset)
    if settings:
        inputs = dataclasses.replace(inputs, task=inputs.task.with_settings(settings, where="--set"))
    policy, task = inputs.policy, inputs.task
    ordering = inputs.source if reorder else None
    if not reorder:
        # the naive user: the checkpoint's vectors read in the target's order, by the task's names in that order
        task = _without_listed_order(task)
    env = PolicyEnv(
        task, inputs.asset, target, ordering, num_envs=num_envs, command=command, seed=seed, device=device,
        backend_overrides=backend_options, perturbation=perturbation,
    )  # fmt: skip
    try:
        return _run(env, policy, inputs, target, reorder, seconds, progress, label)
    finally:
        env.close()


def _without_listed_order(task: Any) -> Any:
    import dataclasses

    return dataclasses.replace(task, joint_names=None, convention=None, joint_names_by_convention={})


def _run(env: Any, policy: Any, inputs: Inputs, target: str, reorder: bool, seconds: float, progress: bool, label):
    from tqdm import tqdm

    from transfer.env import Measure

    if policy.input_size != env.observation_size or policy.output_size != env.action_size:
        raise ReplayError(
            f"{policy.path.name} reads {policy.input_size} observations and writes {policy.output_size} actions, but "
            f"the task on {inputs.asset.name} builds {env.observation_size} and drives {env.action_size} joints "
            f"(terms: {', '.join(f'{k} {s.stop - s.start}' for k, s in env.slices.items())}). Is this the "
            "checkpoint's robot and task?"
        )
    command = tuple(float(c) for c in env.command[0])
    planar = np.asarray(command[:2])
    norm = float(np.linalg.norm(planar))
    direction = planar / norm if norm > 1e-6 else np.array([1.0, 0.0])
    measure = Measure(env.num_envs, direction, env.fall_height)
    steps = max(1, round(seconds / env.policy_dt))
    policy.reset()
    obs = env.observe()
    _torch_threads()
    start = time.perf_counter()
    stream = progress if hasattr(progress, "write") else sys.stderr
    terminal = progress is not False and _is_terminal(stream)  # a bar on a terminal, one plain line elsewhere
    bar = tqdm(range(steps), desc=label or target, unit="step", file=stream, delay=2.0, disable=not terminal)
    push = env.perturbation.push
    for step in bar:
        if push and step == steps // 2:  # a shove sideways, left of the commanded direction
            env.push((-direction[1] * push, direction[0] * push, 0.0))
        actions = policy(obs)
        obs, nonfinite = env.step(actions)
        measure.nonfinite |= nonfinite
        measure.record(env.time, *env.root_state())
    wall = time.perf_counter() - start
    if progress is not False and not terminal:
        print(f"{label or target}: {steps} policy steps in {wall:.1f} s", file=stream)
    fallen = np.isfinite(measure.fallen_at)
    survival = np.where(fallen, measure.fallen_at, env.time)
    return ReplayResult(
        label=label or f"{_kind(inputs, target, reorder)} on {target}",
        target=target,
        source=inputs.source_label,
        reordered=reorder,
        order=inputs.source_label if reorder else f"{env.art.backend.native_convention.value} (target's own)",
        num_envs=env.num_envs,
        seconds=env.time,
        command=command,
        forward_velocity=measure.mean("forward"),
        lateral_velocity=measure.mean("lateral"),
        yaw_rate=measure.mean("yaw_rate"),
        fall_fraction=float(fallen.mean()),
        survival_seconds=float(survival.mean()),
        env_steps_per_second=env.num_envs * steps * env.task.decimation / wall,
        nonfinite_envs=int(measure.nonfinite.sum()),
        checkpoint=str(policy.path),
        asset=str(inputs.asset),
        settings=env.task.simulation_settings(),
        trace=measure.trace,
    )


def baseline_failure(native: ReplayResult) -> str | None:
    """Why a native run (the checkpoint on its training engine) is no baseline to read a transfer against: it fell
    in some env, or walked below half the commanded speed. ``None`` when it stands and walks."""
    wanted = float(np.linalg.norm(native.command[:2]))
    problems = []
    if native.fall_fraction > 0:
        problems.append(f"fell in {native.fall_fraction:.0%} of envs")
    speed = native.forward_velocity
    if wanted > 0 and not (math.isfinite(speed) and speed >= 0.5 * wanted):
        problems.append(f"walked {speed:.2f} m/s, below half the commanded {wanted:.2f} m/s")
    if not problems:
        return None
    s = native.settings
    shown = (f"physx {dict(s.get('physx') or {}) or 'as authored'}, newton {dict(s.get('newton') or {})}, ground "
             f"{s.get('ground')}, self-collisions {s.get('self_collisions')}, dt {s.get('sim_dt')} x "
             f"{s.get('decimation')}, actuators {[a['model'] for a in s.get('actuators') or []] or 'implicit'}")  # fmt: skip
    return (f"native run fails: the replay does not reproduce training ({'; '.join(problems)} on {native.target}). "
            f"Settings in effect: {shown}. Set what training used (--config, --set).")  # fmt: skip


def _kind(inputs: Inputs, target: str, reorder: bool) -> str:
    """``native`` (the checkpoint's order on its training engine), ``reordered`` or ``naive``."""
    if not reorder:
        return "naive"
    try:
        return "native" if native_backend(inputs) == target else "reordered"
    except ReplayError:
        return "reordered"


def _is_terminal(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def _torch_threads() -> None:
    """One torch thread: the simulator needs the other cores (measured: two threads fight on 2 cores)."""
    if "torch" in sys.modules:
        sys.modules["torch"].set_num_threads(1)


def compare(checkpoint: str | Path, target: str, **kwargs: Any) -> list[ReplayResult]:
    """Native (on the training backend), reordered on ``target``, naive on ``target``: three :func:`replay` runs."""
    progress = kwargs.pop("progress", True)
    settings = kwargs.pop("settings", None)
    inputs = resolve_inputs(
        checkpoint,
        source=kwargs.pop("source", None),
        config=kwargs.pop("config", None),
        asset=kwargs.pop("asset", None),
    )
    if settings:
        inputs = dataclasses.replace(inputs, task=inputs.task.with_settings(settings, where="--set"))
    native = native_backend(inputs)
    same = "native" if target == native else "reordered"  # on its training engine, the checkpoint's order is native
    runs = [("native", native, True), (same, target, True), ("naive", target, False)]
    results = [
        replay(
            checkpoint,
            backend,
            reorder=reorder,
            inputs=inputs,
            progress=progress,
            label=f"{name} ({backend})",
            **kwargs,
        )  # fmt: skip
        for name, backend, reorder in runs
    ]
    failure = baseline_failure(results[0])
    for r in results:
        r.baseline = failure
    return results


def plot(results: Sequence[ReplayResult], path: str | Path) -> Path:
    """Commanded vs measured forward velocity and base height over time, one line per run, as a PNG at ``path``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax_v, ax_h) = plt.subplots(2, 1, figsize=(9, 6), sharex=True)
    for r in results:
        t = r.trace["time"]
        ax_v.plot(t, r.trace["forward"], label=f"{r.label}: {r.forward_velocity:.2f} m/s")
        ax_h.plot(t, r.trace["height"], label=r.label)
    for ax in (ax_v, ax_h):
        ax.axvspan(0.0, 1.0, color="0.92", zorder=0)
    ax_v.text(0.5, 0.02, "warm-up\n(not counted)", transform=ax_v.get_xaxis_transform(), ha="center", fontsize=7)
    if results:
        commanded = float(np.linalg.norm(results[0].command[:2]))
        ax_v.axhline(commanded, color="k", linestyle="--", linewidth=1, label=f"commanded {commanded:.2f} m/s")
    ax_v.set_ylabel("forward velocity (m/s)\n(yaw frame, standing envs)")
    ax_h.set_ylabel("base height (m)")
    ax_h.set_xlabel("time (s)")
    ax_v.legend(fontsize=8, loc="lower right")
    ax_h.legend(fontsize=8, loc="lower right")
    name = Path(results[0].checkpoint).name if results else ""
    fig.suptitle(f"transfer replay {name}: commanded vs measured")
    fig.tight_layout()
    out = Path(path)
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out
