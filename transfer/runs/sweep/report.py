"""What a sweep's records say: the summary (per checkpoint and target), the table and the heatmap.

Every cell is read against its native reference: the same checkpoint, seed, command and run size on the engine the
checkpoint was trained on, undisturbed. A cell's *ratio* is its forward velocity over the reference's; a row
(checkpoint x target) reports the mean and the worst ratio of its cells, their mean forward velocity and the
fraction of envs that fell. The heatmap shows the mean ratio of each row's cells at each perturbation value.
"""

from __future__ import annotations

import math
import statistics
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from transfer._console import aligned
from transfer._numbers import is_finite_number
from transfer.env.perturbations import PERTURBATIONS, Perturbation
from transfer.runs.replay import baseline_failure
from transfer.runs.sweep.spec import cell_key
from transfer.traces.figures import pyplot, save

__all__ = ["heatmap", "print_table", "ratio_of", "summarize"]


def ratio_of(record: Mapping[str, Any] | None, reference: Mapping[str, Any] | None) -> float | None:
    """Forward velocity of ``record`` over its native reference's; ``None`` where either is missing, failed or the
    reference did not move forward. A cell whose every env fell before the warm-up ended (no velocity to average)
    walked 0 x native."""
    if record is None or reference is None or record.get("error") or reference.get("error"):
        return None
    value, native = record.get("forward_velocity"), reference.get("forward_velocity")
    if value is None and record.get("fall_fraction") == 1.0:
        value = 0.0
    if not (is_finite_number(value) and is_finite_number(native)) or native <= 0:
        return None
    return float(value) / float(native)


def _reference_key(cell: Mapping[str, Any], native: str) -> str:
    return cell_key({**cell, "target": native, "perturbation": {}})


def _mean(values: Sequence[float]) -> float | None:
    return statistics.fmean(values) if values else None


def summarize(plan: Any, records: Mapping[str, Mapping[str, Any]], **facts: Any) -> dict[str, Any]:
    """The summary of ``plan``'s cells from ``records`` (key -> latest record): one row per checkpoint x target,
    the heatmap's tables, each checkpoint's baseline problem (its native reference falls or crawls), the counts.
    ``facts`` (wall time, workers, ran, skipped, files, ...) are added as they are."""
    checkpoints = {c.path: c for c in plan.checkpoints}
    grid = plan.cells[: len(plan.cells) - plan.references]
    groups: dict[tuple[str, str], list[tuple[dict, Mapping | None, Mapping | None]]] = {}
    for cell in grid:
        checkpoint = checkpoints[cell["checkpoint"]]
        reference = records.get(_reference_key(cell, checkpoint.native))
        groups.setdefault((checkpoint.path, cell["target"]), []).append((cell, records.get(cell["key"]), reference))
    rows = [_row(checkpoints[path], target, entries) for (path, target), entries in groups.items()]
    labels = [f"{checkpoints[path].label} -> {target}" for path, target in groups]
    baselines = {c.label: _baseline(c, plan.cells, records) for c in plan.checkpoints}
    counts = {"cells": len(plan.cells), "grid_cells": len(grid), "references": plan.references}
    table = _heatmap_table(plan.spec["perturbations"], labels, list(groups.values()))
    errors = [
        {"checkpoint": checkpoints[c["checkpoint"]].label, "target": c["target"], "key": c["key"], "error": r["error"]}
        for c in plan.cells
        if (r := records.get(c["key"])) is not None and r.get("error")
    ]
    return {**counts, **facts, "rows": rows, "heatmap": table, "baselines": baselines, "errors": errors}


def _row(checkpoint: Any, target: str, entries: list[tuple[dict, Mapping | None, Mapping | None]]) -> dict[str, Any]:
    """One checkpoint on one target: its cells' counts, mean forward velocity, mean and worst ratio, fall rate."""
    ok = [r for _, r, _ in entries if r is not None and not r.get("error")]
    ratios = [x for x in (ratio_of(r, ref) for _, r, ref in entries) if x is not None]
    natives = {
        ref["key"]: ref["forward_velocity"]
        for _, _, ref in entries
        if ref and is_finite_number(ref.get("forward_velocity"))
    }
    return {
        "checkpoint": checkpoint.label,
        "path": checkpoint.path,
        "target": target,
        "native": checkpoint.native,
        "cells": len(entries),
        "failed": sum(1 for _, r, _ in entries if r is not None and r.get("error")),
        "missing": sum(1 for _, r, _ in entries if r is None),
        "native_forward_velocity": _mean(list(natives.values())),
        "mean_forward_velocity": _mean(
            [r["forward_velocity"] for r in ok if is_finite_number(r.get("forward_velocity"))]
        ),
        "mean_ratio": _mean(ratios),
        "worst_ratio": min(ratios) if ratios else None,
        "fall_rate": _mean([r["fall_fraction"] for r in ok if is_finite_number(r.get("fall_fraction"))]),
    }


def _baseline(checkpoint: Any, cells: Sequence[Mapping[str, Any]], records: Mapping[str, Mapping]) -> str | None:
    """Why ``checkpoint``'s native references are no baseline (the first that falls or crawls), else ``None``."""
    neutral = Perturbation().to_dict()
    for cell in cells:
        if cell["checkpoint"] != checkpoint.path or cell["target"] != checkpoint.native:
            continue
        record = records.get(cell["key"])
        if cell["perturbation"] != neutral or record is None:
            continue
        if record.get("error"):
            return f"native reference failed: {record['error']}"
        numbers = {k: math.nan if record.get(k) is None else record[k] for k in ("forward_velocity", "fall_fraction")}
        problem = baseline_failure(SimpleNamespace(**{**record, **numbers, "settings": record.get("settings") or {}}))
        if problem:
            return problem
    return None


def _heatmap_table(perturbations: Mapping[str, list], rows: list[str], groups: list[list[tuple]]) -> dict[str, Any]:
    """Rows (checkpoint -> target) x columns (each perturbation's values; one column without perturbations): the
    mean ratio (``ratio``), the mean fall fraction (``fell``) and the failed cells (``failed``) of the row's cells at
    that value (``None``: no cell gave one)."""
    columns = [(name, value) for name, values in perturbations.items() for value in values] or [(None, None)]
    table: dict[str, list[list[Any]]] = {"ratio": [], "fell": [], "failed": []}
    for entries in groups:
        for line in table.values():
            line.append([])
        for name, value in columns:
            hits = [(r, ref) for cell, r, ref in entries if name is None or cell["perturbation"][name] == value]
            done = [r for r, _ in hits if r is not None and not r.get("error")]
            table["ratio"][-1].append(_mean([x for x in (ratio_of(r, ref) for r, ref in hits) if x is not None]))
            table["fell"][-1].append(
                _mean([r["fall_fraction"] for r in done if is_finite_number(r.get("fall_fraction"))])
            )
            table["failed"][-1].append(sum(1 for r, _ in hits if r is not None and r.get("error")))
    labels = [f"{name} {value:g}" if name else "all cells" for name, value in columns]
    return {"rows": rows, "columns": labels, **table}


def heatmap(summary: Mapping[str, Any], path: str | Path) -> Path:
    """Draw ``summary``'s heatmap (checkpoint -> target x perturbation value, colour = mean ratio to native) as a
    PNG at ``path``."""
    plt = pyplot()
    import numpy as np

    table = summary["heatmap"]
    rows, columns = table["rows"], table["columns"]
    data, fell = (
        np.array([[np.nan if v is None else v for v in line] for line in table[key]], float).reshape(
            len(rows), len(columns)
        )
        for key in ("ratio", "fell")
    )
    width = 2.5 + 0.065 * max(len(r) for r in rows) + 1.0 * len(columns)
    fig, ax = plt.subplots(figsize=(width, 2.0 + 0.55 * len(rows)))
    cmap = plt.get_cmap("RdYlGn").with_extremes(bad="0.85")
    image = ax.imshow(np.ma.masked_invalid(data), cmap=cmap, vmin=0.0, vmax=1.0, aspect="auto")
    for i in range(len(rows)):
        for j in range(len(columns)):
            text = f"{data[i, j]:.2f}"
            if np.isnan(data[i, j]):
                text = "failed" if table["failed"][i][j] else "n/a"
            elif fell[i, j] > 0:
                text += f"\n{fell[i, j]:.0%} fell"
            ax.text(j, i, text, ha="center", va="center", fontsize=8)
    groups = [c.rsplit(" ", 1)[0] for c in columns]
    for j in range(1, len(columns)):
        if groups[j] != groups[j - 1]:  # a white line between one perturbation's values and the next's
            ax.axvline(j - 0.5, color="white", linewidth=3)
    ax.set_xticks(range(len(columns)), columns, rotation=30, ha="right", fontsize=8)
    ax.set_yticks(range(len(rows)), rows, fontsize=8)
    fig.colorbar(image, ax=ax, label="x native (mean)")
    ax.set_title("transfer sweep: forward speed as a ratio of native\n(mean over the cells at each value)", fontsize=9)
    fig.tight_layout()
    return save(fig, path)  # atomic: a full disk is named, nothing half-written


COLUMNS = (
    ("checkpoint", "checkpoint", "{}"),
    ("target", "target", "{}"),
    ("trained on", "native", "{}"),
    ("cells", "cells", "{}"),
    ("fwd m/s", "mean_forward_velocity", "{:.2f}"),
    ("mean x native", "mean_ratio", "{:.2f}"),
    ("worst x native", "worst_ratio", "{:.2f}"),
    ("fell", "fall_rate", "{:.0%}"),
    ("failed", "failed", "{}"),
)


def print_table(summary: Mapping[str, Any], out: Any = None) -> None:
    """The summary's rows as an aligned text table, then a line for each broken baseline and failed cells."""
    out = out or sys.stdout
    cells = [[title for title, _, _ in COLUMNS]]
    cells += [["n/a" if row.get(k) is None else f.format(row[k]) for _, k, f in COLUMNS] for row in summary["rows"]]
    for line in aligned(cells, left=3):
        print(line, file=out)
    for label, problem in summary["baselines"].items():
        if problem:
            print(f"warning: {label}: {problem}", file=out)
    errors = summary.get("errors") or []
    for e in errors[:3]:
        print(f"failed: {e['checkpoint']} on {e['target']} (cell {e['key']}): {e['error'][:300]}", file=out)
    if len(errors) > 3:
        print(f"failed: {len(errors) - 3} more (each with its error in cells.jsonl)", file=out)
    perturbed = ", ".join(PERTURBATIONS)
    print(
        f"ratios: forward speed over the same checkpoint, seed and command on its training engine, undisturbed "
        f"({perturbed} at their neutral values)",
        file=out,
    )
