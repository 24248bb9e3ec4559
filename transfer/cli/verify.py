"""``transfer verify``: the transfer guide's troubleshooting checklist on a checkpoint, both backends, one report."""

from __future__ import annotations

import json
import logging
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import tyro

from transfer._console import aligned, engine_output, print_error
from transfer.cli._checks import PLOT, SAMPLES, SEED, TRACE, UsageError
from transfer.cli._help import DEFAULT_IN_TEXT
from transfer.cli._inputs import CheckpointInputs, MotionInputs


@dataclass(frozen=True, kw_only=True)
class Verify(CheckpointInputs, MotionInputs):
    """Check that CHECKPOINT sees the same thing on two engines (PhysX and Newton unless --engines names others).

    The checks: (1) its input/output sizes match the config on the asset and every joint the config names exists
    there; (2) the same named states (random joint configurations, root poses and velocities) written into both give
    the same observation term by term and the same action per joint; (3) with --trace, how far the two closed-loop
    trajectories drift apart by joint. Exit 0 when 1-2 hold, 1 when not, 2 for bad input.

    Examples, from the repository root:
      transfer verify checkpoints/quadruped_flat_physx/exported/policy.pt
      transfer verify checkpoints/quadruped_flat_physx/exported/policy.pt --trace 2 --plot verify.png
      transfer verify checkpoints/quadruped_flat_physx/exported/policy.pt --engines physx mujoco --asset transfer:quadruped.xml --json

    Read docs/verify.md."""

    engines: Annotated[tuple[str, str] | None, tyro.conf.arg(metavar="ENGINE ENGINE"), DEFAULT_IN_TEXT] = None
    """The two engines held against each other (any two registered: physx, newton, mujoco; default: physx newton)."""
    json: bool = False
    """Print one JSON object on stdout ({"ok": ..., "largest": ..., ...}) instead of the report."""
    trace: Annotated[float, tyro.conf.arg(metavar="SECONDS"), TRACE] = 0.0
    """Also run the policy closed-loop on both backends for SECONDS and report the per-joint divergence."""
    plot: Annotated[Path | None, tyro.conf.arg(metavar="FILE.png"), PLOT] = None
    """Write a PNG of the trace: per-joint divergence over time, its maximum, both base heights (needs --trace)."""
    samples: Annotated[int, SAMPLES] = 8
    """Random named states written into both backends (check 2)."""
    seed: Annotated[int, SEED] = 0
    """Seeds the random states."""
    verbose: bool = False
    """Show what the engines and Warp print (kept off the terminal by default)."""


def _g(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.1e}"


def _table(rows: list[list[str]], out: Any, indent: str = "   ") -> None:
    for line in aligned(rows):
        print(indent + line, file=out)


def print_report(report: Any, out: Any = None) -> None:
    """The report as text: one section per check, then the verdict."""
    out = out or sys.stdout
    s = report.sizes
    print(
        f"transfer verify {Path(report.checkpoint).name} (order: {report.source}) on {Path(report.asset).name}: "
        f"{' vs '.join(report.backends)}, {report.samples} random named states (seed {report.seed})",
        file=out,
    )
    print(f"\n1. sizes and names: {'ok' if s.ok else 'FAILED'}", file=out)
    print(
        f"   the policy reads {s.input_size} and writes {s.output_size}; the config on {Path(report.asset).name} "
        f"builds {s.observation_size if s.observation_size is not None else '?'} and drives "
        f"{s.action_size if s.action_size is not None else '?'} joints",
        file=out,
    )
    wrap = dict(width=112, initial_indent="   ", subsequent_indent="     ")
    if s.missing_joints:
        print(
            textwrap.fill(f"joints the config names that the asset lacks: {', '.join(s.missing_joints)}", **wrap),
            file=out,
        )
        print(textwrap.fill(f"the asset's joints: {', '.join(s.asset_joints)}", **wrap), file=out)
    if s.order:
        print(f"   the checkpoint's joint order: {' '.join(s.order)}", file=out)
    if s.terms:
        _table(
            [["term", "slice", "axis"]] + [[t["name"], f"{t['start']}:{t['stop']}", t["axis"]] for t in s.terms], out
        )
    for problem in s.problems:
        print(textwrap.fill(problem, 112, initial_indent="   problem: ", subsequent_indent="     "), file=out)
    if report.terms:
        ok = all(t.ok for t in report.terms)
        print(f"\n2. same named state, same observation, same action: {'ok' if ok else 'FAILED'}", file=out)
        a, b = report.backends
        rows = [["term", "tolerance", f"{a} vs {b}", "where (state)", f"{a} vs named", f"{b} vs named", ""]]
        for t in report.terms:
            exp = t.expected
            rows.append(
                [
                    t.term,
                    f"{t.tolerance:.0e}",
                    _g(t.across.difference),
                    f"{t.across.entry} ({t.across.sample})",
                    _g(exp[a].difference if exp.get(a) else None),
                    _g(exp[b].difference if exp.get(b) else None),
                    "" if t.ok else "FAILED",
                ]
            )
        _table(rows, out)
    tr = report.trace
    if tr is not None:
        state = "drifts apart" if tr.diverges else "stays together"
        print(f"\n3. trace, {tr.seconds:.1f} s closed-loop from the same standing state: {state}", file=out)
        first = f"{tr.first_over:.2f} s" if tr.first_over is not None else "never"
        line = (
            f"largest joint difference {tr.max_divergence:.3f} rad ({tr.joint} at {tr.at:.2f} s); over "
            f"{tr.threshold:g} rad first at {first}; {tr.final:.3f} rad at the end; bases {tr.base_offset:.2f} m apart"
        )
        print(textwrap.fill(line, **wrap), file=out)
        per = [f"{j} {max(v):.2f}" for j, v in tr.divergence.items()]
        print(
            textwrap.fill(
                "per joint, largest: " + ", ".join(per), 112, initial_indent="   ", subsequent_indent="     "
            ),
            file=out,
        )
        fell = [f"{k} at {v:.2f} s" for k, v in tr.fell.items() if v is not None]
        print(f"   fell: {', '.join(fell) if fell else 'neither'}", file=out)
    print("", file=out)
    print(textwrap.fill(report.verdict, 115), file=out)
    for warning in report.warnings:
        print(textwrap.fill(f"warning: {warning}", 115), file=out)
    print(f"\n{'ok' if report.ok else 'FAILED'}", file=out)


def run_verify(cmd: Verify) -> int:
    from transfer.runs.verify import verify

    if cmd.plot is not None and cmd.trace <= 0:
        raise UsageError(f"--plot {cmd.plot}: the plot draws the trace; give --trace SECONDS too")
    try:
        with engine_output(cmd.verbose) as terminal:
            if cmd.verbose:
                logging.basicConfig(level=logging.INFO, stream=terminal, format="[transfer] %(message)s")
            report = verify(
                cmd.checkpoint,
                source=cmd.source,
                config=cmd.config,
                asset=cmd.asset,
                samples=cmd.samples,
                seed=cmd.seed,
                trace=cmd.trace,
                plot=cmd.plot,
                progress=terminal,
                engines=cmd.engines,
                **cmd.motion_args(),
            )
    except (FileNotFoundError, ValueError, NotImplementedError) as exc:
        print_error(exc)
        return 2
    if cmd.json:
        print(json.dumps(report.to_dict(), indent=2))
    else:
        print_report(report)
    if cmd.plot is not None and report.trace is not None:
        sys.stdout.flush()
        print(f"plot: {cmd.plot}", file=sys.stderr)
    return 0 if report.ok else 1
