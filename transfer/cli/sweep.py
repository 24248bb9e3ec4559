"""``transfer sweep``: many checkpoints x engines x seeds x perturbations, one replay per cell, on Ray."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

import tyro

from transfer._console import engine_output, print_error
from transfer.cli._checks import WORKERS, InputFile, OutputDir

"""CPU slots of the local Ray cluster (one cell each)."""


@dataclass(frozen=True)
class Sweep:
    """Replay every cell of SPEC.yaml (checkpoints x targets x seeds x commands x perturbation values) on Ray and
    report, per checkpoint and target, the mean and worst forward speed as a ratio of native and the fall rate.

    Each finished cell is appended to OUT/cells.jsonl at once; OUT/summary.json and OUT/heatmap.png come at the
    end. The spec is checked in full before anything runs (docs/sweep.md). Exit status: 0 when every cell ran, 1
    when any cell failed (recorded with its error: --resume runs it again), 2 for a bad spec or output folder.

    Examples, from the repository root (presets/sweeps/quadruped_push.yaml: the project's quadruped policy on PhysX
    and Newton, pushed and not: 4 cells):
      transfer sweep presets/sweeps/quadruped_push.yaml -o out/sweep-quadruped --workers 2
      transfer sweep presets/sweeps/quadruped_push.yaml -o out/sweep-quadruped --resume
      transfer sweep presets/sweeps/quadruped_push.yaml -o out/sweep-here --in-process --json

    Read docs/sweep.md (the spec's keys, the perturbations, a Ray cluster)."""

    spec: Annotated[
        tyro.conf.Positional[Path], tyro.conf.arg(metavar="SPEC.yaml"), InputFile("a sweep spec (docs/sweep.md)")
    ]
    """The sweep: checkpoints (path, source, config, asset, settings), targets, seeds, num_envs, seconds,
    commands, perturbations (every kind --perturb takes), device."""
    out: Annotated[Path, tyro.conf.arg(aliases=("-o",), metavar="OUT"), OutputDir()]
    """Output folder: new or empty, or an earlier sweep's with --resume. Nothing else there is overwritten."""
    workers: Annotated[int, WORKERS] = 1
    """CPU slots of the local Ray cluster: cells run at once (each cell is single-threaded)."""
    address: Annotated[str | None, tyro.conf.arg(metavar="ADDRESS")] = None
    """Join the Ray cluster at ADDRESS ('auto' for the one this machine belongs to, or ray://HOST:10001) instead
    of starting a local one (--workers is then the cluster's)."""
    resume: bool = False
    """Continue the sweep in OUT: cells recorded in OUT/cells.jsonl without an error are not run again. The spec
    must be the one OUT/spec.json records, or grown from it (more seeds, targets, values, ...)."""
    in_process: bool = False
    """Run the cells here, one after another, without Ray."""
    json: bool = False
    """Print the summary as one JSON object on stdout."""
    verbose: bool = False
    """Show what the engines print when cells run in this process (--in-process)."""


def run_sweep(cmd: Sweep) -> int:
    from transfer.runs.sweep import print_table, sweep

    if cmd.in_process and cmd.address is not None:
        print_error(
            f"--address {cmd.address} names a Ray cluster, and --in-process runs every cell here without "
            "Ray: give one of the two"
        )
        return 2
    try:
        with engine_output(cmd.verbose) as terminal:
            summary = sweep(
                cmd.spec,
                cmd.out,
                workers=cmd.workers,
                address=cmd.address,
                resume=cmd.resume,
                in_process=cmd.in_process,
                progress=terminal,
            )
    except (FileNotFoundError, ValueError, NotImplementedError) as exc:
        print_error(exc)
        return 2
    code = 1 if summary["failed"] else 0  # a failed cell is recorded, and the sweep says so in its status
    if cmd.json:
        print(json.dumps(summary, indent=2))
        return code
    print_table(summary)
    workers = summary["workers"]
    where = "in this process" if workers == "in-process" else f"on Ray ({workers} worker(s))"
    where = where if summary["ran"] else "(nothing to run)"
    print(
        f"{summary['cells']} cells: {summary['ran']} ran, {summary['skipped']} already in {Path(cmd.out) / 'cells.jsonl'}"
        f", {summary['failed']} failed; {summary['wall_seconds']:.0f} s {where}"
    )
    files = summary["files"]
    print(f"cells: {files['cells']}\nsummary: {files['summary']}\nheatmap: {files['heatmap']}")
    return code
