"""The replay plot (:func:`plot`): forward speed and base height of each run over time, and a tracker's joint error to
its clip; the robot and its engines in the title, the warm-up marked above the data."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from transfer.env.measure import Measure
from transfer.traces.figures import pyplot, save

if TYPE_CHECKING:
    from transfer.runs.replay import ReplayResult

__all__ = ["plot"]


def _plot_tracking(ax: Any, results: Sequence[ReplayResult]) -> None:
    """Per run, the mean absolute joint position error to the reference (rad) over the envs still standing."""
    for r in results:
        rec = r.recording
        error, alive = rec.arrays["tracking"][..., 0], rec.arrays["alive"]
        count = alive.sum(axis=1)
        shown = np.where(count > 0, (error * alive).sum(axis=1) / np.maximum(count, 1), np.nan)
        ax.plot(rec.time, shown, label=f"{r.label}: {r.tracking['joint_pos_error']:.3f} rad mean")
    ax.set_ylabel("joint error to the clip (rad)\n(standing envs)")
    ax.set_xlabel("time (s)")
    ax.legend(fontsize=8, loc="upper left")


def plot(results: Sequence[ReplayResult], path: str | Path) -> Path:
    """Commanded vs measured forward velocity and base height over time, one line per run, as a PNG at ``path``."""
    return save(_plot_figure(results), path)


def _plot_figure(results: Sequence[ReplayResult]) -> Any:
    """:func:`plot`'s figure: the robot and its engines in the title, the warm-up named above the data (no line
    crosses it)."""
    tracked = [r for r in results if r.tracking and r.recording is not None]
    fig, axes = pyplot().subplots(3 if tracked else 2, 1, figsize=(9, 8.5 if tracked else 6), sharex=True)
    ax_v, ax_h = axes[:2]
    for r in results:
        t = r.trace["time"]
        speed = f"{r.forward_velocity:.2f} m/s" if np.isfinite(r.forward_velocity) else "fell, every env"
        if np.isfinite(r.forward_velocity) and r.fall_fraction > 0:
            speed += f", {r.fall_fraction:.0%} fell"
        ax_v.plot(t, r.trace["forward"], label=f"{r.label}: {speed}")
        ax_h.plot(t, r.trace["height"], label=r.label)
    for ax in axes:
        ax.axvspan(0.0, Measure.warmup, color="0.92", zorder=0)
    # in the margin above the data, from the start of the span it names: no line can cross it
    ax_v.annotate(
        f"shaded: warm-up, the first {Measure.warmup:g} s, not counted",
        (0.0, 1.0),
        xycoords=ax_v.get_xaxis_transform(),
        xytext=(0, 2),
        textcoords="offset points",
        ha="left",
        va="bottom",
        fontsize=7.5,
        color="0.3",
        gid="warm-up",
    )
    if results:
        commanded = float(np.linalg.norm(results[0].command[:2]))
        ax_v.axhline(commanded, color="k", linestyle="--", linewidth=1, label=f"commanded {commanded:.2f} m/s")
    ax_v.set_ylabel("forward velocity (m/s)\n(yaw frame, standing envs)")
    ax_h.set_ylabel("base height (m)")
    ax_h.set_xlabel("" if tracked else "time (s)")
    ax_v.legend(fontsize=8, loc="best")
    ax_h.legend(fontsize=8, loc="best")
    if tracked:  # a tracker: how far each run's joints are from the reference clip, step by step
        _plot_tracking(axes[2], tracked)
    fig.suptitle(_plot_title(results))
    fig.tight_layout()
    return fig


def _plot_title(results: Sequence[ReplayResult]) -> str:
    """``quadruped: trained on physx, replayed on newton`` (the robot file's name, the training engine, the engines
    replayed on), then the checkpoint's file name."""
    if not results:
        return "transfer replay: no runs"
    first = results[0]
    robot = Path(first.asset).name.split(".")[0] or "robot"
    trained = next((r.target for r in results if r.label.startswith("native")), None)
    if trained is None and first.recording is not None:  # one replay: the task says, where it was told
        trained = (first.recording.meta.get("task") or {}).get("trained_on")
    trained_on = f"trained on {trained}" if trained else f"trained in the {first.source} order"
    others = list(dict.fromkeys(r.target for r in results if r.target != trained)) or [first.target]
    return (
        f"{robot}: {trained_on}, replayed on {', '.join(others)}\n"
        f"transfer replay {Path(first.checkpoint).name}: commanded vs measured"
    )
