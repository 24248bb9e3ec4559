"""``transfer diagnose``: the native and the transferred run, where they part, and the factor that closes the gap."""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

import tyro

from transfer._console import aligned, engine_output, print_error, shown
from transfer.cli._checks import (
    BACKEND_METAVAR,
    DURATION,
    ENVS,
    PLOT,
    SEED,
    VELOCITY,
    WORKERS,
    Backend,
    OutputDir,
)
from transfer.cli._help import DEFAULT_IN_TEXT
from transfer.cli._inputs import CheckpointInputs, MotionInputs
from transfer.env.perturbations import KINDS
from transfer.runs.diagnose.factors import FACTORS


@dataclass(frozen=True, kw_only=True)
class Diagnose(CheckpointInputs, MotionInputs):
    """Find why CHECKPOINT behaves differently on --target: where the two runs part, and the factor that closes
    the gap.

    It runs CHECKPOINT natively and on --target under the target's conditions (--set, --perturb: the target only),
    says where the two part (first joint and time, open loop from the same start and closed loop), then varies one
    factor at a time on the target (--factor lists them), one measured replay per value, and ranks the factors by
    how much of the gap to native each closes. Ends with the --set / --perturb lines that close it best.

    Examples, from the repository root (the quadruped policy with its stiffness set wrong; an action delay):
      transfer diagnose checkpoints/quadruped_flat_physx/exported/policy.pt --target physx --set 'stiffness={".*": 5}' --seconds 4
      transfer diagnose checkpoints/quadruped_flat_physx/exported/policy.pt --target newton --perturb action_delay=12 --factor action_delay --factor actuators --plot diagnose.png

    Read docs/diagnose.md (each factor and the values it tries)."""

    target: Annotated[Backend, tyro.conf.arg(metavar=BACKEND_METAVAR)]  # type: ignore[valid-type]
    """The backend the checkpoint misbehaves on."""
    num_envs: Annotated[int, ENVS] = 2
    """Environments per replay."""
    seconds: Annotated[float, DURATION] = 5.0
    """Simulated seconds per replay: over the 1 s warm-up before velocities count (a shorter run is refused)."""
    command: Annotated[
        tuple[float, float, float] | None, tyro.conf.arg(metavar="VX VY WZ"), VELOCITY, DEFAULT_IN_TEXT
    ] = None
    """Velocity command (m/s, m/s, rad/s); default: the task's."""
    seed: Annotated[int, SEED] = 0
    """Seeds the initial joint-position noise (the same in every replay)."""
    settings: Annotated[
        tuple[str, ...], tyro.conf.UseAppendAction, tyro.conf.arg(name="set", metavar="FIELD=VALUE")
    ] = ()
    """The target's conditions being diagnosed: a task field by dotted name (repeat the flag; values are YAML)."""
    perturb: Annotated[
        tuple[str, ...],
        tyro.conf.UseAppendAction,
        tyro.conf.arg(metavar="KIND=VALUE", help=f"A disturbance the target runs under ({KINDS}; repeat the flag)."),
    ] = ()
    native_set: Annotated[tuple[str, ...], tyro.conf.UseAppendAction, tyro.conf.arg(metavar="FIELD=VALUE")] = ()
    """A task field the native run needs (rarely: the checkpoint's task is the training condition)."""
    factor: Annotated[
        tuple[str, ...],
        tyro.conf.UseAppendAction,
        tyro.conf.arg(
            metavar="NAME", help=f"Vary only these factors (repeat the flag): {', '.join(FACTORS)}; default: all."
        ),
    ] = ()
    workers: Annotated[int, WORKERS] = 1
    """Run the candidate replays on a local Ray cluster of this many CPU slots (1: one after another, here)."""
    plot: Annotated[Path | None, tyro.conf.arg(metavar="FILE.png"), PLOT] = None
    """Write a PNG: the share of the gap each factor's best value closes."""
    video_dir: Annotated[Path | None, tyro.conf.arg(metavar="DIR"), OutputDir()] = None
    """Write videos into DIR (new or empty): native-and-target.mp4 and one per candidate value (docs/video.md)."""
    json: bool = False
    """Print one JSON object on stdout."""
    verbose: bool = False
    """Show what the engines print."""


def run_diagnose(cmd: Diagnose) -> int:
    from transfer.cli.replay import parse_perturbations, parse_settings
    from transfer.runs.diagnose import diagnose, plot

    try:
        settings, native = parse_settings(cmd.settings), parse_settings(cmd.native_set)
        perturbation = parse_perturbations(cmd.perturb)
        with engine_output(cmd.verbose) as terminal:
            found = diagnose(
                cmd.checkpoint,
                cmd.target,
                source=cmd.source,
                config=cmd.config,
                asset=cmd.asset,
                num_envs=cmd.num_envs,
                seconds=cmd.seconds,
                command=cmd.command,
                seed=cmd.seed,
                settings=settings,
                perturbation=perturbation,
                native_settings=native,
                factors=cmd.factor or None,
                workers=cmd.workers,
                motion=cmd.motion_args(),
                video_dir=cmd.video_dir,
                progress=terminal,
            )
        if cmd.plot is not None:
            plot(found, cmd.plot)
    except (FileNotFoundError, ValueError, NotImplementedError) as exc:
        print_error(exc)
        return 2
    if cmd.json:
        print(json.dumps(found.to_dict(), indent=2, default=str))
    else:
        print_diagnosis(found)
    if cmd.plot is not None:
        sys.stdout.flush()
        print(f"plot: {cmd.plot}", file=sys.stderr)
    if cmd.video_dir is not None:
        sys.stdout.flush()
        print(f"videos: {cmd.video_dir}", file=sys.stderr)
    return 0


def _speed(row: dict) -> str:
    v, fell = row.get("forward_velocity"), row.get("fall_fraction")
    if v is None and fell is not None and fell >= 1:
        return "fell, every env"
    if v is None:  # no standing sample after the warm-up
        return "speed not measured" + (f", {fell:.0%} fell" if fell else "")
    lat, yaw = row.get("lateral_velocity") or 0.0, row.get("yaw_rate") or 0.0
    return f"{v:.2f} m/s forward, {lat:.2f} lateral, {yaw:.2f} rad/s yaw" + (f", {fell:.0%} fell" if fell else "")


def print_diagnosis(d, out=None) -> None:
    """The diagnosis as text: the two runs, where they part, the ranked factors and the suggested flags."""
    from transfer.runs.diagnose import SMALL_GAP

    out = out or sys.stdout
    n, t = d.native, d.target
    print(f"{n['label']}: {_speed(n)}; {t['label']}: {_speed(t)}; gap {d.gap:.0%} of native", file=out)
    if d.baseline:
        print(f"warning: {shown(d.baseline)}", file=out)
    for name, parted in (
        ("open loop (native actions replayed on the target)", d.parted_open_loop),
        ("closed loop", d.parted_closed_loop),
    ):
        where = (
            f"{parted['joint']} first, at {parted['time']:.2f} s (position differs by over {parted['threshold']:g} rad)"
            if parted
            else "no joint parted past its threshold"
        )
        print(f"{name}: {where}", file=out)
    rows = [["rank", "factor", "best value", "closes", "fwd m/s", "lat m/s", "yaw rad/s", "fell"]]
    number = lambda x: "n/a" if x is None else f"{x:.2f}"  # noqa: E731
    for i, r in enumerate(d.ranking, 1):
        rows.append(
            [
                str(i),
                r.factor,
                r.label,
                f"{r.closes:.0%}",
                number(r.forward_velocity),
                number(r.lateral_velocity),
                number(r.yaw_rate),
                "n/a" if r.fall_fraction is None else f"{r.fall_fraction:.0%}",
            ]
        )
    for line in aligned(rows, left=3):
        print(line, file=out)
    failed = [x for x in d.tried if x.error]
    if failed:
        print(
            f"{len(failed)} value(s) could not run: "
            + "; ".join(f"{x.factor} {x.label}: {x.error[:120]}" for x in failed[:3]),
            file=out,
        )
    best = d.suggestion()
    if d.baseline:
        print("no factor varied: the native run is no baseline to close a gap to (set what training used)", file=out)
    elif d.gap < SMALL_GAP:
        print(f"the target already walks within {d.gap:.0%} of native: nothing much to close", file=out)
    if best:
        print(f"suggested ({best.factor}: {best.label}, closes {best.closes:.0%} of the gap):", file=out)
        print(f"  {d.replay_command()}", file=out)
    for w in d.warnings:
        print(f"warning: {shown(w)}", file=out)
