"""The plot of ``transfer validate --plot``: each joint's child motion over time, one row per engine."""

from __future__ import annotations

from pathlib import Path

from transfer.runs.validate.results import ROTATION_DEG, TRANSLATION_PCT, ValidateReport
from transfer.traces.figures import pyplot, save

__all__ = ["plot"]


def plot(report: ValidateReport, path: str | Path) -> Path:
    """Per joint, rotation (deg) and translation (% of the child's diagonal) over time, one row per backend."""
    plt = pyplot()

    rows = list(report.joint_movement.values())
    fig, axes = plt.subplots(max(len(rows), 1), 2, figsize=(11, 3.2 * max(len(rows), 1)), squeeze=False)
    for (ax_r, ax_t), result in zip(axes, rows, strict=False):
        for j in result.joints:
            if j.series:
                t, rotation, pct = j.series
                style = "-" if j.moved else ":"
                ax_r.plot(t, rotation, style, label=f"{j.name} {j.direction or ''}")
                ax_t.plot(t, pct, style, label=j.name)
        for ax, threshold in ((ax_r, ROTATION_DEG), (ax_t, TRANSLATION_PCT)):
            ax.axhline(threshold, color="k", linestyle="--", linewidth=1)
            ax.set_xlabel("time in the attempt (s)")
        ax_r.set_ylabel(f"{result.backend}: rotation (deg)")
        ax_t.set_ylabel("translation (% of diagonal)")
        ax_r.set_title(f"{result.backend}: {result.status}", fontsize=9)
        ax_r.legend(fontsize=6, ncol=2, loc="upper left")
    fig.suptitle(f"transfer validate {Path(report.asset).name}: child motion relative to its parent")
    fig.tight_layout()
    return save(fig, path, dpi=100)
