"""``transfer.sweep(spec, out, workers=...)``: the transfer matrix of many checkpoints, engines, seeds and
perturbations, one replay per cell, on Ray.

Layout: :mod:`~transfer.runs.sweep.spec` reads and checks a spec and expands it into cells;
:mod:`~transfer.runs.sweep.cell` runs one cell (a plain function of JSON-able parameters returning a JSON-able
record, so it runs in this process, on a local Ray or on a cluster); :mod:`~transfer.runs.sweep.run` runs them all
and writes the output folder; :mod:`~transfer.runs.sweep.report` summarizes (table, ``summary.json``, heatmap).
docs/sweep.md is the user's reference.
"""

from __future__ import annotations

from transfer.runs.sweep.cell import run_cell
from transfer.runs.sweep.report import heatmap, print_table, summarize
from transfer.runs.sweep.run import FILES, WORKER_CALLS, RayUnavailable, SweepError, read_records, sweep
from transfer.runs.sweep.spec import SpecError, cell_key, expand, load_spec

__all__ = [
    "FILES",
    "WORKER_CALLS",
    "RayUnavailable",
    "SpecError",
    "SweepError",
    "cell_key",
    "expand",
    "heatmap",
    "load_spec",
    "print_table",
    "read_records",
    "run_cell",
    "summarize",
    "sweep",
]
