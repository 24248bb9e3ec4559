"""Sweep throughput on Ray: cells per minute at 1 and 2 workers, and the cost per cell as the sweep grows.

Usage::

    .venv/bin/python benchmarks/bench_sweep.py                          # the Ant on both engines, 2 envs, 2 s
    .venv/bin/python benchmarks/bench_sweep.py --workers 1 2 --cells 8 16 32 --json
    .venv/bin/python benchmarks/bench_sweep.py --spec presets/sweeps/anymal_c_acceptance.yaml --cells   # 1 vs 2 only

Each measurement is one ``transfer.sweep(...)`` call into a fresh output folder, timed end to end (the spec's
checks, Ray's start, every cell, the summary and the heatmap: what a user waits for). The cells are the project's
Ant checkpoint (``checkpoints/ant_flat_physx``, no shared files needed), ``--num-envs`` envs for ``--seconds``
simulated seconds, on ``--targets``, one cell per seed (``--spec`` times a spec file instead, at each worker count).

- ``workers``: the same ``--grid`` cells at each worker count, ``--trials`` times interleaved (1, 2, 1, 2 workers:
  a change in the machine's load hits both alike), the best kept: cells per minute, and the wall time as a fraction
  of the first count's (the acceptance: 2 workers <= 0.65x of 1 on this 2-core machine);
- ``cells``: 8, 16, 32 cells at the largest worker count: wall seconds per cell (start-up shared by more cells),
  the marginal seconds per added cell, and the steady cell time (the mean of the cells' own wall times, each
  worker's first cell on each engine left out: that one pays the engine's import and start-up): flat when a worker
  process that runs many cells neither slows down nor leaks into the next one.

Prints the machine, its load before and after, and the figures (``--json``: one JSON object).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from _common import cpu_name, refuse_below_one, second_job  # noqa: E402

ANT = ROOT / "checkpoints/ant_flat_physx/exported/policy.pt"


def ant_spec(cells: int, targets: list[str], num_envs: int, seconds: float) -> dict:
    """``cells`` cells of the Ant: one per seed and target."""
    if cells % len(targets):
        raise SystemExit(f"--cells {cells}: give a multiple of the {len(targets)} target(s)")
    seeds = list(range(cells // len(targets)))
    return {"checkpoints": [str(ANT)], "targets": targets, "seeds": seeds, "num_envs": num_envs, "seconds": seconds}


def timed(spec: dict | str, workers: int, folder: Path) -> dict:
    """One sweep, timed end to end; its wall time, cells, failures and the cells' own mean wall time."""
    from transfer.runs.sweep import read_records, sweep

    start = time.perf_counter()
    summary = sweep(spec, folder, workers=workers, progress=False)
    wall = time.perf_counter() - start
    records, _ = read_records(folder / "cells.jsonl")
    if summary["failed"]:
        first = next(r["error"] for r in records.values() if r.get("error"))
        raise SystemExit(f"{summary['failed']} cell(s) failed (first: {first}); the timing would not mean much")
    firsts = {}
    for key, record in records.items():  # file order: each worker process's first cell on each engine
        firsts.setdefault((record.get("pid"), record["target"]), key)
    steady = [r["wall_seconds"] for k, r in records.items() if k not in firsts.values()]
    return {
        "workers": workers,
        "cells": summary["cells"],
        "wall_seconds": wall,
        "cells_per_minute": 60.0 * summary["cells"] / wall,
        "seconds_per_cell": wall / summary["cells"],
        "mean_cell_seconds": statistics.fmean(r["wall_seconds"] for r in records.values()),
        "steady_cell_seconds": statistics.fmean(steady) if steady else None,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--grid", type=int, default=16, help="cells of the worker comparison (the Ant)")
    parser.add_argument("--cells", type=int, nargs="*", default=[8, 16, 32], help="cell counts of the cost scan")
    parser.add_argument("--targets", nargs="+", default=["physx", "newton"])
    parser.add_argument("--num-envs", type=int, default=2)
    parser.add_argument("--seconds", type=float, default=2.0)
    parser.add_argument("--spec", type=Path, help="time this spec file at each worker count instead of the Ant")
    parser.add_argument("--trials", type=int, default=2, help="interleaved runs of the worker comparison (best kept)")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--busy", action="store_true", help="with a second job on one core (_common.SECOND_JOB)")
    args = parser.parse_args()
    refuse_below_one(parser, args, "trials", "grid")
    with second_job(args.busy) as machine:
        results = _measure(args)
    results["machine"] += f", {machine}"
    _print(results, args)


def _measure(args: argparse.Namespace) -> dict:
    load_before = os.getloadavg()
    results: dict = {"machine": f"{cpu_name()}, {os.cpu_count()} cores", "load_before": load_before}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        spec = str(args.spec) if args.spec else ant_spec(args.grid, args.targets, args.num_envs, args.seconds)
        trials = [[timed(spec, w, folder / f"workers-{w}-{t}") for w in args.workers] for t in range(args.trials)]
        results["workers"] = [min(runs, key=lambda r: r["wall_seconds"]) for runs in zip(*trials, strict=True)]
        results["workers_trials"] = [[r["wall_seconds"] for r in runs] for runs in zip(*trials, strict=True)]
        one = results["workers"][0]["wall_seconds"]
        for row in results["workers"]:
            row["fraction_of_first"] = row["wall_seconds"] / one
        most = max(args.workers)
        results["cells"] = [
            timed(ant_spec(n, args.targets, args.num_envs, args.seconds), most, folder / f"cells-{n}")
            for n in args.cells
        ]
    results["load_after"] = os.getloadavg()
    return results


def _print(results: dict, args: argparse.Namespace) -> None:
    if args.json:
        print(json.dumps(results, indent=2))
        return
    print(f"{results['machine']}; load {results['load_before'][0]:.2f} before, {results['load_after'][0]:.2f} after")
    print(f"{'workers':>7}  {'cells':>5}  {'wall s':>7}  {'cells/min':>9}  {'x first':>7}  {'cell s (mean)':>13}")
    for r, walls in zip(results["workers"], results["workers_trials"], strict=True):
        print(
            f"{r['workers']:>7}  {r['cells']:>5}  {r['wall_seconds']:>7.1f}  {r['cells_per_minute']:>9.1f}  "
            f"{r['fraction_of_first']:>7.2f}  {r['mean_cell_seconds']:>13.2f}  (trials: "
            f"{', '.join(f'{w:.1f}' for w in walls)} s)"
        )
    print(
        f"\n{'cells':>5}  {'workers':>7}  {'wall s':>7}  {'s per cell':>10}  {'marginal s':>10}  {'steady cell s':>13}"
    )
    previous = None
    for r in results["cells"]:
        marginal = (
            ""
            if previous is None
            else f"{(r['wall_seconds'] - previous['wall_seconds']) / (r['cells'] - previous['cells']):.2f}"
        )
        steady = "n/a" if r["steady_cell_seconds"] is None else f"{r['steady_cell_seconds']:.2f}"
        print(
            f"{r['cells']:>5}  {r['workers']:>7}  {r['wall_seconds']:>7.1f}  {r['seconds_per_cell']:>10.2f}  "
            f"{marginal:>10}  {steady:>13}"
        )
        previous = r


if __name__ == "__main__":
    main()
