"""``transfer traces A B``: two recorded traces lined up by name and time; where they part, a table and a plot."""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

import tyro

from transfer._console import aligned, print_error, printable
from transfer.cli._checks import PLOT, ROWS, InputFile

TRACE = InputFile("a trace (FILE.parquet) written by transfer replay --record")


@dataclass(frozen=True)
class Traces:
    """Line up two traces written by transfer replay --record (same checkpoint on two engines, or two settings)
    and say, per joint and for the base, how far they part and when.

    The traces are lined up by env and time; each quantity is reported with the time it first passed its threshold
    (position 0.1 rad, velocity 2 rad/s, effort 5 N·m, base height 0.05 m, ...). Columns only one holds, or with no
    finite value where both stand, are listed, not compared. Two traces sharing no joint (two robots), or no joint
    column with finite values, are refused (exit 2).

    Examples, from the repository root (the replay writes trace.native-physx.parquet and two more):
      transfer replay checkpoints/quadruped_flat_physx/exported/policy.pt --target newton --compare --seconds 4 --record trace.parquet
      transfer traces trace.native-physx.parquet trace.reordered-newton.parquet --plot traces.png
      transfer traces trace.native-physx.parquet trace.naive-newton.parquet --json

    Read docs/traces.md (the trace schema and the metrics)."""

    a: Annotated[Path, tyro.conf.Positional, tyro.conf.arg(metavar="A.parquet"), TRACE]
    """The first trace (the reference: usually the native run)."""
    b: Annotated[Path, tyro.conf.Positional, tyro.conf.arg(metavar="B.parquet"), TRACE]
    """The second trace."""
    top: Annotated[int, ROWS] = 12
    """Rows of the table: the quantities that parted first, then the largest RMS differences."""
    plot: Annotated[Path | None, tyro.conf.arg(metavar="FILE.png"), PLOT] = None
    """Write a PNG of the joints that part most (both traces and A's target), base height and forward velocity."""
    json: bool = False
    """Print one JSON object on stdout."""


def run_traces(cmd: Traces) -> int:
    from transfer.traces import TraceError
    from transfer.traces.compare import compare_traces, plot_traces

    try:
        found = compare_traces(cmd.a, cmd.b)
        if cmd.plot is not None:
            plot_traces(cmd.a, cmd.b, cmd.plot, found)
    except (TraceError, OSError) as exc:
        print_error(exc)
        return 2
    if cmd.json:
        print(json.dumps(found.to_dict(), indent=2))
    else:
        for side, meta in (("A", found.a), ("B", found.b)):
            print(
                f"{side}: {printable(meta.get('label'), 200)} on {printable(meta.get('engine'), 40)} ({meta['path']})"
            )
        first = found.first
        print(
            f"{found.rows} samples lined up; "
            + (
                f"first parted: {first.column} at {first.first_time:.2f} s (difference over {first.threshold:g})"
                if first
                else "no quantity passed its threshold"
            )
        )
        rows = [["quantity", "rms diff", "peak diff", "threshold", "first passed s"]]
        for d in found.divergences[: max(cmd.top, 0)]:
            rows.append(
                [
                    d.column,
                    f"{d.rms:.3g}",
                    f"{d.peak:.3g}",
                    "-" if d.threshold is None else f"{d.threshold:g}",
                    "-" if d.first_time is None else f"{d.first_time:.2f}",
                ]
            )
        for line in aligned(rows, left=1):
            print(line)
        for side, only in (("A", found.only_in_a), ("B", found.only_in_b)):
            if only:
                print(f"only in {side} (not compared): {', '.join(only[:8])}{' ...' if len(only) > 8 else ''}")
        for side, lost in found.not_finite.items():
            print(
                f"not compared, no finite value in {side.upper()} where both stand: {', '.join(lost[:8])}"
                f"{' ...' if len(lost) > 8 else ''}"
            )
    if cmd.plot is not None:
        sys.stdout.flush()
        print(f"plot: {cmd.plot}", file=sys.stderr)
    return 0
