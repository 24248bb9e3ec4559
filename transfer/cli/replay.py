"""``transfer replay``: a checkpoint on a backend in its own joint order, its naive control, and the report."""

from __future__ import annotations

import json
import logging
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import tyro

from transfer._console import aligned, engine_output, print_error, shown
from transfer.cli._checks import (
    BACKEND_METAVAR,
    DURATION,
    ENVS,
    PLOT,
    SEED,
    VELOCITY,
    VIDEO,
    Backend,
    OutputFile,
)
from transfer.cli._help import DEFAULT_IN_TEXT
from transfer.cli._inputs import CheckpointInputs, MotionInputs
from transfer.env.perturbations import KINDS


@dataclass(frozen=True, kw_only=True)
class Replay(CheckpointInputs, MotionInputs):
    """Run CHECKPOINT closed-loop on --target in the checkpoint's own joint order and report how it walks.

    The order is found by name on the asset. The report: forward velocity along the command, falls, survival,
    throughput (env-steps/s), then the control and gait metrics (tracking, effort, saturation, duty, stride, slip;
    docs/traces.md). --compare runs three replays (native on the training backend, reordered and naive on the
    target) and prints both tables with a row for each.

    Examples, from the repository root (the project's own quadruped policy, trained on PhysX):
      transfer replay checkpoints/quadruped_flat_physx/exported/policy.pt --target newton --compare --num-envs 4 --plot replay.png
      transfer replay checkpoints/quadruped_flat_physx/exported/policy.pt --target mujoco --asset transfer:quadruped.xml --compare --seconds 4
      transfer replay checkpoints/quadruped_flat_physx/exported/policy.pt --target newton --perturb push=0.5 --json

    Read docs/replay.md (community checkpoints, deploy configs, motion trackers)."""

    target: Annotated[Backend, tyro.conf.arg(metavar=BACKEND_METAVAR)]  # type: ignore[valid-type]
    """The backend to run on."""
    num_envs: Annotated[int, ENVS] = 1
    """Environments run at once."""
    seconds: Annotated[float, DURATION] = 10.0
    """Simulated seconds per replay."""
    command: Annotated[
        tuple[float, float, float] | None, tyro.conf.arg(metavar="VX VY WZ"), VELOCITY, DEFAULT_IN_TEXT
    ] = None
    """Velocity command (m/s, m/s, rad/s); default: the task's."""
    seed: Annotated[int, SEED] = 0
    """Seeds the small initial joint-position noise that makes environments differ."""
    no_reorder: bool = False
    """The control experiment: feed the checkpoint the target's own joint order, as a naive user would."""
    compare: bool = False
    """Run native, reordered and naive replays and print them side by side, with the speed as a ratio of native."""
    json: bool = False
    """Print one JSON object on stdout (with --compare: {"runs": [...]})."""
    plot: Annotated[Path | None, tyro.conf.arg(metavar="FILE.png"), PLOT] = None
    """Write a PNG of commanded vs measured forward velocity and base height over time."""
    video: Annotated[Path | None, tyro.conf.arg(metavar="FILE.mp4"), VIDEO] = None
    """Write an MP4 of the runs side by side (with --compare: native, reordered, naive), each drawn by MuJoCo's
    renderer on the robot's own file from what the run recorded, whatever engine ran it (docs/video.md)."""
    record: Annotated[Path | None, tyro.conf.arg(metavar="FILE.parquet"), OutputFile((".parquet",), "trace")] = None
    """Write what every joint was asked and did, per policy step and env, as a Parquet trace (docs/traces.md);
    with --compare one file per run (FILE.native-physx.parquet, ...). Compare two with transfer traces A B."""
    settings: Annotated[
        tuple[str, ...], tyro.conf.UseAppendAction, tyro.conf.arg(name="set", metavar="FIELD=VALUE")
    ] = ()
    """Change a task field for this replay, by dotted name (repeat the flag): the simulation settings without a task
    file, e.g. --set physx.solver_position_iterations=8 --set ground.friction_combine=multiply --set
    self_collisions=true --set 'actuators=[{name: legs, model: ideal_pd, joints: [".*"]}]' (values are YAML; a field
    set twice takes the last value, so that diagnose's suggested lines can follow a command as they are)."""
    perturb: Annotated[
        tuple[str, ...],
        tyro.conf.UseAppendAction,
        tyro.conf.arg(
            metavar="KIND=VALUE",
            help=f"Run under a disturbance (repeat the flag): {KINDS}, as a sweep's "
            "perturbations (docs/sweep.md: what each value means).",
        ),
    ] = ()
    verbose: bool = False
    """Show what the engines and Warp print, and the solver choices (kept off the terminal by default)."""


COLUMNS = (
    ("run", "label", "{}"),
    ("order fed", "order", "{}"),
    ("fwd m/s", "forward_velocity", "{:.2f}"),
    ("x native", "ratio", "{:.2f}"),
    ("lat m/s", "lateral_velocity", "{:.2f}"),
    ("yaw rad/s", "yaw_rate", "{:.2f}"),
    ("fell", "fall_fraction", "{:.0%}"),
    ("survival s", "survival_seconds", "{:.1f}"),
    ("env-steps/s", "env_steps_per_second", "{:.0f}"),
)


CONTROL_COLUMNS = (
    ("run", "label", "{}"),
    ("track rad", "tracking_error", "{:.3f}"),
    ("effort rms", "effort_rms", "{:.1f}"),
    ("peak", "effort_peak", "{:.1f}"),
    ("saturated", "saturation", "{:.0%}"),
    ("reversals", "sign_changes", "{:.0%}"),
    ("hf energy", "high_frequency", "{:.0%}"),
    ("duty", "duty_factor", "{:.2f}"),
    ("stride s", "stride_period", "{:.2f}"),
    ("slip m/s", "slip", "{:.2f}"),
)
"""The control and gait metrics' table (:mod:`transfer.traces.metrics`): one summary per run."""


def _cell(fmt: str, value: Any) -> str:
    return "n/a" if value is None else fmt.format(value)


def print_table(rows: list[dict[str, Any]], out: Any = None) -> None:
    """The runs as an aligned text table (``ratio`` is forward velocity over the first run's), then a line for each
    run whose policy wrote NaN or inf (those envs count as fallen: the table alone would only say "fell")."""
    out = out or sys.stdout
    cells = [[title for title, _, _ in COLUMNS]] + [[_cell(f, r.get(k)) for _, k, f in COLUMNS] for r in rows]
    for line in aligned(cells, left=2):
        print(line, file=out)
    summaries = [{"label": r.get("label"), **((r.get("metrics") or {}).get("summary") or {})} for r in rows]
    if any(len(m) > 1 for m in summaries):
        print("control and gait (standing envs after the warm-up; docs/traces.md):", file=out)
        cells = [[t for t, _, _ in CONTROL_COLUMNS]] + [
            [_cell(f, m.get(k)) for _, k, f in CONTROL_COLUMNS] for m in summaries
        ]
        for line in aligned(cells, left=2):
            print(line, file=out)
    tracked = [r for r in rows if r.get("tracking")]
    if tracked:
        print("tracking (the reference clip, every step each env stood):", file=out)
        cells = [["run", "joint err rad", "anchor err deg", "body err m", "completed"]] + [
            [
                r.get("label"),
                _cell("{:.3f}", r["tracking"].get("joint_pos_error")),
                _cell("{:.1f}", r["tracking"].get("anchor_ori_error")),
                _cell("{:.3f}", r["tracking"].get("body_pos_error")),
                _cell("{:.0%}", r["tracking"].get("completed")),
            ]
            for r in tracked
        ]
        for line in aligned(cells, left=2):
            print(line, file=out)
    from transfer.env.measure import Measure

    short = [r for r in rows if r.get("forward_velocity") is None and (r.get("seconds") or 0.0) <= Measure.warmup]
    if short:
        print(
            f"n/a: velocities count after a {Measure.warmup:g} s warm-up; {short[0]['seconds']:.2f} s leaves none "
            f"(give --seconds over {Measure.warmup:g})",
            file=out,
        )
    fell = [r for r in rows if r.get("fall_causes")]
    if fell:
        words = {
            "base_contact": "base touched the ground",
            "bad_orientation": "tilted past 60 deg",
            "nonfinite": "state not finite",
        }
        print(
            "fell: "
            + "; ".join(
                f"{r['label']}: "
                + ", ".join(f"{words.get(k, k)} {v}" for k, v in r["fall_causes"].items())
                + f" (of {r['num_envs']})"
                for r in fell
            ),
            file=out,
        )
    for r in rows:
        if r.get("nonfinite_envs"):
            start = [w for w in r.get("warnings", ()) if "outside the joints' limits" in w or "into the ground" in w]
            cause = (
                "the start the warning below names is the likely cause: the engine blew up and the policy read "
                "its state"
                if start
                else "NaN weights or observations; check the checkpoint and the task's values"
            )
            print(
                f"non-finite: {r['label']}: the policy wrote NaN or inf actions in {r['nonfinite_envs']} of "
                f"{r['num_envs']} env(s), counted as fallen ({cause})",
                file=out,
            )


def _with_ratios(results: list[Any]) -> list[dict[str, Any]]:
    rows = [r.to_dict() for r in results]
    native = rows[0]["forward_velocity"]
    for row in rows:  # a tracker follows its clip, not a forward command: its speed is no ratio to native's
        value = row["forward_velocity"]
        row["ratio"] = None if value is None or not native or row.get("tracking") else value / native
    return rows


def parse_settings(pairs: tuple[str, ...] | list[str]) -> dict[str, Any]:
    """``FIELD=VALUE`` pairs (``--set``) as ``{field: value}``, each value read as YAML (numbers, true/false, lists)."""
    import yaml

    from transfer.errors import strict_loader

    out: dict[str, Any] = {}
    for pair in pairs:
        key, sep, text = pair.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"--set {pair!r}: expected FIELD=VALUE, e.g. --set physx.solver_position_iterations=4")
        try:
            value = yaml.load(text, Loader=strict_loader())  # noqa: S506 - a SafeLoader; 1e9 is a number
        except yaml.YAMLError as exc:
            raise ValueError(f"--set {key}: the value {text!r} is not YAML ({exc})") from None
        out[key.strip()] = _number_if_numeric(value)
    return out


def parse_perturbations(pairs: tuple[str, ...] | list[str]) -> dict[str, Any]:
    """``KIND=VALUE`` pairs (``--perturb``) as ``{kind: value}``, each kind one of
    :data:`transfer.env.perturbations.PERTURBATIONS` and its value checked by it."""
    from transfer.env.perturbations import PERTURBATIONS

    out: dict[str, Any] = {}
    for pair in pairs:
        key, sep, text = pair.partition("=")
        key = key.strip()
        if not sep or key not in PERTURBATIONS:
            raise ValueError(f"--perturb {pair!r}: expected KIND=VALUE with KIND one of {', '.join(PERTURBATIONS)}")
        try:
            out[key] = PERTURBATIONS[key].check(_number_if_numeric(text.strip()))
        except (TypeError, ValueError) as exc:
            raise ValueError(f"--perturb: {exc}") from None
    return out


def _number_if_numeric(value: Any) -> Any:
    """A top-level value Python reads as a number but YAML does not (``nan``, ``inf``), as that number (then refused
    by the field's own check); ``1e-3`` is a number already (:func:`transfer.errors.strict_loader`)."""
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return value
    return value


def run_replay(cmd: Replay) -> int:
    from transfer.runs.replay import compare, plot, replay

    if cmd.compare and cmd.no_reorder:
        print_error(
            "--compare runs the naive order itself (beside native and reordered); drop --no-reorder, or "
            "drop --compare to replay only the naive order"
        )
        return 2
    try:
        settings, perturbation = parse_settings(cmd.settings), parse_perturbations(cmd.perturb)
        if cmd.video is not None:
            from transfer.runs.video import check_video_destination

            check_video_destination(cmd.video)  # before any run: nothing is run for a video that cannot be written
    except ValueError as exc:
        print_error(exc)
        return 2
    kwargs = dict(
        source=cmd.source,
        config=cmd.config,
        asset=cmd.asset,
        num_envs=cmd.num_envs,
        seconds=cmd.seconds,
        command=cmd.command,
        seed=cmd.seed,
        settings=settings,
        record=cmd.record,
        perturbation=perturbation or None,
        **cmd.motion_args(),
    )
    try:
        with engine_output(cmd.verbose) as terminal:
            if cmd.verbose:
                logging.basicConfig(level=logging.INFO, stream=terminal, format="[transfer] %(message)s")
            if cmd.compare:
                results = compare(cmd.checkpoint, cmd.target, progress=terminal, **kwargs)
            else:
                results = [replay(cmd.checkpoint, cmd.target, reorder=not cmd.no_reorder, progress=terminal, **kwargs)]
            if cmd.plot is not None:
                plot(results, cmd.plot)
            if cmd.video is not None:
                from transfer.runs.video import write_video

                write_video(results, cmd.video)
    except (FileNotFoundError, ValueError, NotImplementedError, RuntimeError) as exc:
        print_error(exc)
        return 2
    rows = _with_ratios(results) if cmd.compare else [r.to_dict() for r in results]
    if cmd.json:
        compared = {"runs": rows, "baseline": rows[0]["baseline"], "no_control": rows[0]["no_control"]}
        print(json.dumps(compared if cmd.compare else rows[0], indent=2))
    elif cmd.compare:
        r = results[0]
        print(f"{Path(r.checkpoint).name} on {r.asset}: {r.num_envs} env(s), {r.seconds:.1f} s, command {r.command}")
        print_table(rows)
        if r.no_control:
            print(r.no_control)
    else:
        row = rows[0]
        print_table([row])
    warnings = [results[0].baseline] if cmd.compare and results[0].baseline else []
    warnings += dict.fromkeys(w for r in results for w in r.warnings)
    if warnings and not cmd.json:  # on stderr, after the table: stdout holds the results alone
        sys.stdout.flush()
        for warning in warnings:
            print(f"warning: {shown(warning)}", file=sys.stderr)
    if cmd.plot is not None:
        sys.stdout.flush()
        print(f"plot: {cmd.plot}", file=sys.stderr)
    if cmd.video is not None:
        sys.stdout.flush()
        print(f"video: {cmd.video}", file=sys.stderr)
    for r in results:
        if r.record:
            sys.stdout.flush()
            print(f"trace: {r.record}", file=sys.stderr)
    return 0
