"""``transfer.diagnose(...)``: when a policy walks on its training engine and not on another, find out why.

:func:`diagnose` runs the checkpoint natively and on the target (under the target's conditions: ``settings`` and
``perturbation`` apply to the target only), finds where the two part (the first joint and time whose position
differs by more than :data:`~transfer.traces.compare.THRESHOLDS`: in an open-loop replay of the native run's actions
on the target from the same start, and in closed loop), then varies one factor at a time on the target
(:mod:`transfer.runs.diagnose.factors`), each value a measured replay (here, or on Ray with ``workers > 1``, as a
sweep runs its cells), and ranks the factors by how much of the gap to the native run the best of their values
closes. Every number in a :class:`Diagnosis` is a replay that ran.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

import numpy as np

from transfer.env.measure import Measure
from transfer.env.perturbations import Perturbation
from transfer.runs.diagnose.factors import FACTORS, Candidate, candidates, flag_lines
from transfer.runs.inputs import aliases_in, native_backend, resolve_inputs
from transfer.runs.replay import baseline_failure, replay
from transfer.runs.sweep.run import run_cells
from transfer.runs.verify import check_finite_actions
from transfer.runs.video import check_video_destination, write_video
from transfer.traces.compare import first_divergence
from transfer.traces.figures import pyplot, save
from transfer.traces.parquet import columns

__all__ = [
    "FACTORS",
    "SMALL_GAP",
    "SPEED_SCALE",
    "YAW_SCALE",
    "Diagnosis",
    "check_seconds",
    "diagnose",
    "plot",
    "quality",
]


SPEED_SCALE = 0.25
"""The smallest planar speed (m/s) a velocity error is measured against: a standing command's drift of 0.25 m/s is
as bad as walking at twice a 0.25 m/s command."""
YAW_SCALE = 0.5
"""The smallest yaw rate (rad/s) a yaw-rate error is measured against."""


TRACKING_SCALE = 0.05
"""The smallest joint error (rad) a tracker's extra error is measured against."""


def quality(result: Mapping[str, Any], native: Mapping[str, Any]) -> float:
    """How close a run comes to the native one, 0..1: ``(1 - error) x (1 - fall fraction)``, ``error`` the whole
    velocity error against the native run's, at most 1: the planar one, ``|(forward, lateral) - native's|`` over the
    commanded planar speed (at least :data:`SPEED_SCALE`), plus the yaw rate's, ``|yaw rate - native's|`` over the
    commanded yaw rate (at least :data:`YAW_SCALE`). A sideways drift or a turn the native run does not make is a gap
    as much as a slower walk; a run that measured no velocity scores 0. A motion tracker (the native run reports
    ``tracking``) is scored by its joint error to the clip instead (:func:`_tracking_quality`), times the same
    ``1 - fall fraction``."""
    fell = result.get("fall_fraction")
    if fell is None:
        return 0.0
    if native.get("tracking"):
        return _tracking_quality(result, native) * (1.0 - float(fell))
    keys = ("forward_velocity", "lateral_velocity", "yaw_rate")
    mine, theirs = [result.get(k) for k in keys], [native.get(k) for k in keys]
    if mine[0] is None or not math.isfinite(mine[0]):
        return 0.0
    mine = [0.0 if v is None or not math.isfinite(v) else float(v) for v in mine]
    theirs = [0.0 if v is None or not math.isfinite(v) else float(v) for v in theirs]
    command = [float(c) for c in (list(native.get("command") or []) + [0.0, 0.0, 0.0])[:3]]
    planar = math.hypot(mine[0] - theirs[0], mine[1] - theirs[1]) / max(math.hypot(*command[:2]), SPEED_SCALE)
    yaw = abs(mine[2] - theirs[2]) / max(abs(command[2]), YAW_SCALE)
    return (1.0 - min(planar + yaw, 1.0)) * (1.0 - float(fell))


def _tracking_quality(result: Mapping[str, Any], native: Mapping[str, Any]) -> float:
    """A tracker's: ``1 - extra / max(native's, TRACKING_SCALE)``, ``extra`` its joint error above native's (0..1)."""
    mine, theirs = (r.get("tracking") or {} for r in (result, native))
    error, reference = mine.get("joint_pos_error"), theirs.get("joint_pos_error")
    if error is None or reference is None:
        return 0.0
    return 1.0 - min(max(error - reference, 0.0) / max(reference, TRACKING_SCALE), 1.0)


@dataclass
class Tried:
    """One candidate value, as replayed: its quality and the share of the gap it closed (negative: it widened)."""

    factor: str
    label: str
    lines: list[str]
    forward_velocity: float | None
    fall_fraction: float | None
    quality: float
    closes: float
    error: str | None = None
    lateral_velocity: float | None = None
    yaw_rate: float | None = None


SMALL_GAP = 0.1
"""A gap to native below this (10 % of its quality) is not one to close: no factor is suggested for it."""


@dataclass
class Diagnosis:
    """What :func:`diagnose` measured."""

    checkpoint: str
    native: dict[str, Any]
    """The native run's replay (``--json`` fields)."""
    target: dict[str, Any]
    """The target run's replay under the conditions diagnosed."""
    gap: float
    """``1 - quality`` of the target run (0: it walks as natively)."""
    parted_open_loop: dict[str, Any] | None
    """``{"column", "time", "difference"}``: the first joint position to part when the native run's actions are
    replayed on the target from the same start; ``None`` if none passed its threshold."""
    parted_closed_loop: dict[str, Any] | None
    tried: list[Tried]
    ranking: list[Tried]
    """Each factor's best value, the factor that closes most of the gap first."""
    baseline: str | None = None
    """Why the native run is no baseline, else ``None``; then no factor is varied (there is nothing to close a gap
    to), ``tried`` and ``ranking`` are empty."""
    warnings: list[str] = field(default_factory=list)
    given: dict[str, Any] = field(default_factory=dict)
    """What the diagnosis was given, as a replay takes it: ``target``, ``source``, ``config``, ``asset``, the motion
    flags, the target's ``settings`` and ``perturbation`` (:meth:`replay_command` repeats them)."""

    def replay_command(self) -> str | None:
        """The ``transfer replay`` line that runs the suggestion (:meth:`suggestion`) as diagnosed: the same inputs
        and target conditions, the best value's flags replacing the conditions it changes; ``None`` without one."""
        import shlex

        best = self.suggestion()
        if best is None:
            return None
        g = self.given
        words = ["transfer replay", shlex.quote(self.checkpoint), "--target", str(g.get("target"))]
        for flag in ("source", "config", "asset", "motion", "motion_fps", "motion_anchor"):
            value = g.get(flag)
            if value is not None and not isinstance(value, (list, tuple)):
                words += [f"--{flag.replace('_', '-')}", shlex.quote(str(value))]
        changed = {line.split("=", 1)[0] for line in best.lines}  # "--set FIELD" / "--perturb KIND"
        kept = [
            line
            for line in flag_lines(g.get("settings") or {}, g.get("perturbation") or {})
            if line.split("=", 1)[0].replace("'", "") not in {c.replace("'", "") for c in changed}
        ]
        return " ".join([*words, *kept, *best.lines])

    def suggestion(self) -> Tried | None:
        """The best factor's best value, when it closes some of a gap worth closing (:data:`SMALL_GAP` or more: a
        1 % gap divided into noise ranked factors at -266 % and still suggested one)."""
        if self.gap < SMALL_GAP or not self.ranking or self.ranking[0].closes <= 0:
            return None
        return self.ranking[0]

    def to_dict(self) -> dict[str, Any]:
        out = dataclasses.asdict(self)
        best = self.suggestion()
        out["suggestion"] = None if best is None else dataclasses.asdict(best)
        return out


class _Playback:
    """A policy that replays recorded actions ``(steps, envs, actions)`` (the open-loop run), with the shape and
    name of the policy it stands in for."""

    def __init__(self, actions: np.ndarray, policy: Any) -> None:
        self.actions, self.path, self.k = actions, policy.path, 0
        self.input_size, self.output_size = policy.input_size, policy.output_size
        self.motion_export = policy.motion_export  # a tracking export's clip is read from its file

    def reset(self) -> None:
        self.k = 0

    def __call__(self, obs: Any) -> np.ndarray:
        action = self.actions[min(self.k, len(self.actions) - 1)]
        self.k += 1
        return action


def _parted(a: Any, b: Any) -> dict[str, Any] | None:
    def keep(cols: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in cols.items() if k in ("step", "time", "env", "alive") or k.startswith("position.")}

    found = [d for d in first_divergence(keep(columns(a)), keep(columns(b))) if d.first_time is not None]
    if not found:
        return None
    d = found[0]
    return {
        "column": d.column,
        "joint": d.column.split(".", 1)[1],
        "time": d.first_time,
        "rms": d.rms,
        "threshold": d.threshold,
    }


def diagnose(
    checkpoint: str | Path,
    target: str,
    *,
    source: Any = None,
    config: str | Path | None = None,
    asset: str | Path | None = None,
    num_envs: int = 2,
    seconds: float = 5.0,
    command: Sequence[float] | None = None,
    seed: int = 0,
    settings: Mapping[str, Any] | None = None,
    perturbation: Mapping[str, Any] | None = None,
    native_settings: Mapping[str, Any] | None = None,
    factors: Sequence[str] | None = None,
    workers: int = 1,
    address: str | None = None,
    progress: bool | TextIO = True,
    motion: Mapping[str, Any] | None = None,
    video_dir: str | Path | None = None,
) -> Diagnosis:
    """Diagnose ``checkpoint`` on ``target`` (see the module's text). ``settings`` / ``perturbation``: the
    target's conditions (task fields by dotted name, ``{kind: value}``); ``native_settings``: the native run's, if
    the checkpoint's task needs any. ``factors``: the names of :data:`FACTORS` to vary (default: all).
    ``workers > 1`` (or an ``address``) runs the candidates on Ray, one CPU each. ``seconds`` must be longer than
    the warm-up before velocities count (:func:`check_seconds`: refused before anything runs). ``motion``: a
    tracker's clip, :func:`~transfer.runs.replay.replay`'s ``motion``, ``motion_fps``, ``motion_anchor``; every run
    tracks it and the gap is its tracking error's (:func:`quality`). ``video_dir``: a new or empty folder that gets
    ``native-and-target.mp4`` and one video per candidate (``<key>.mp4``, docs/video.md)."""
    check_seconds(seconds)
    videos = _video_folder(video_dir)
    aliases = {**aliases_in(native_settings), **aliases_in(settings)}
    inputs = resolve_inputs(checkpoint, source=source, config=config, asset=asset, aliases=aliases)
    check_finite_actions(inputs.policy, 0)  # a policy that writes NaN has no setting to find: said before any run
    native_inputs, target_inputs = (
        _with_settings(inputs, native_settings, "--native-set"),
        _with_settings(inputs, settings, "--set"),
    )
    perturb = dict(Perturbation.from_dict(perturbation or {}))
    plan = candidates(native_inputs.task, target_inputs.task, target, perturb, tuple(factors) if factors else None)
    motion = {k: v for k, v in (motion or {}).items() if v is not None}
    common = dict(num_envs=num_envs, seconds=seconds, command=command, seed=seed, progress=progress, **motion)
    native, moved, open_loop = _three_runs(checkpoint, target, native_inputs, target_inputs, perturb, common)
    n, t = native.to_dict(), moved.to_dict()
    gap = 1.0 - quality(t, n)
    baseline = baseline_failure(native)
    _pair_video(videos, native, moved)
    common = {**common, "videos": videos}
    records = (
        [] if baseline else _run_candidates(plan, target_inputs, target, perturb, common, workers, address, progress)
    )
    tried = [_tried(c, r, n, gap) for c, r in zip(plan, records, strict=False)]
    return Diagnosis(
        checkpoint=str(checkpoint),
        native=n,
        target=t,
        gap=gap,
        parted_open_loop=_parted(native.recording, open_loop.recording),
        parted_closed_loop=_parted(native.recording, moved.recording),
        tried=tried,
        ranking=_rank(tried),
        baseline=baseline,
        warnings=list(dict.fromkeys([*native.warnings, *moved.warnings])),
        given={
            "target": target,
            "source": source,
            "config": config,
            "asset": asset,
            **motion,
            "settings": dict(settings or {}),
            "perturbation": dict(perturbation or {}),
        },
    )


def check_seconds(seconds: float) -> None:
    """Refuse a run too short to measure, before anything runs: velocities count after the warm-up
    (:attr:`transfer.env.Measure.warmup`), so a run no longer than it measures no speed, and every comparison of
    a diagnosis (the gap, each factor's share of it) would read nothing as a fall."""
    if not seconds > Measure.warmup:
        raise ValueError(
            f"--seconds {seconds:g}: a diagnosis needs runs longer than the {Measure.warmup:g} s warm-up before "
            f"velocities count (shorter ones measure no speed); give --seconds over {Measure.warmup:g} (the default "
            "is 5)"
        )


def _with_settings(inputs: Any, settings: Mapping[str, Any] | None, where: str) -> Any:
    """``inputs`` with its task's fields changed by dotted name (unchanged without ``settings``)."""
    if not settings:
        return inputs
    return dataclasses.replace(inputs, task=inputs.task.with_settings(settings, where=where))


def _tried(c: Candidate, record: Mapping[str, Any], native: Mapping[str, Any], gap: float) -> Tried:
    q = 0.0 if record.get("error") else quality(record, native)
    closes = (gap - (1.0 - q)) / gap if gap > 1e-9 else 0.0  # 1: as good as native; < 0: worse than before
    return Tried(
        c.factor,
        c.label,
        c.lines(),
        record.get("forward_velocity"),
        record.get("fall_fraction"),
        q,
        closes,
        record.get("error"),
        record.get("lateral_velocity"),
        record.get("yaw_rate"),
    )


def _rank(tried: list[Tried]) -> list[Tried]:
    best: dict[str, Tried] = {}
    for t in tried:
        if t.error is None and (t.factor not in best or t.closes > best[t.factor].closes):
            best[t.factor] = t
    return sorted(best.values(), key=lambda t: -t.closes)


def _three_runs(
    checkpoint: Any,
    target: str,
    native_inputs: Any,
    target_inputs: Any,
    perturb: Mapping[str, Any],
    common: Mapping[str, Any],
) -> tuple[Any, Any, Any]:
    """The native run, the target run under its conditions, and the native run's actions played on the target."""
    engine = native_backend(native_inputs)
    native = replay(checkpoint, engine, inputs=native_inputs, label=f"native ({engine})", **common)
    moved = replay(checkpoint, target, inputs=target_inputs, perturbation=perturb, label=f"target ({target})", **common)
    actions = _Playback(native.recording.arrays["action"], target_inputs.policy)
    playback = dataclasses.replace(target_inputs, policy=actions)
    label = f"open loop ({target})"
    return native, moved, replay(checkpoint, target, inputs=playback, perturbation=perturb, label=label, **common)


def _pair_video(videos: Path | None, native: Any, moved: Any) -> None:
    """``native-and-target.mp4``: the two runs side by side, into the videos folder where there is one."""
    if videos is not None:
        write_video([native, moved], videos / "native-and-target.mp4")


def _video_folder(folder: str | Path | None) -> Path | None:
    """``--video-dir``: a new folder (made) or an empty one: videos are never written over files already there."""
    if folder is None:
        return None
    folder = Path(folder)
    if folder.exists() and not folder.is_dir():
        raise ValueError(f"--video-dir {folder}: is a file; give a folder for the videos")
    if folder.is_dir() and any(folder.iterdir()):
        raise ValueError(f"--video-dir {folder}: holds files already; give a new or empty folder (none is replaced)")

    folder.mkdir(parents=True, exist_ok=True)
    check_video_destination(folder / "native-and-target.mp4")  # PyAV there, the folder writable
    return folder


def _run_candidates(
    plan: list[Candidate],
    inputs: Any,
    target: str,
    perturb: Mapping[str, Any],
    common: Mapping[str, Any],
    workers: int,
    address: str | None,
    progress: Any,
) -> list[dict]:
    """Each candidate as a sweep cell on the target (its task and perturbation changed), run here or on Ray."""
    cells = []
    for i, c in enumerate(plan):
        task = _with_settings(inputs, c.settings, f"diagnose {c.factor}").task
        cells.append(
            {
                "key": f"{i:03d}-{c.factor}",
                "label": f"{c.factor}: {c.label}",
                "checkpoint": str(inputs.policy.path),
                "target": target,
                "seed": common["seed"],
                "command": list(common["command"] or inputs.task.command),
                "num_envs": common["num_envs"],
                "seconds": common["seconds"],
                "device": "cpu",
                "perturbation": dict(Perturbation.from_dict({**perturb, **c.perturbation})),
                "inputs": dataclasses.replace(inputs, task=task).to_dict(),
                "motion": {k: str(v) if k == "motion" else v for k, v in common.items() if k.startswith("motion")},
            }
        )
        if common.get("videos") is not None:
            cells[-1]["video"] = str(common["videos"] / f"{cells[-1]['key']}.mp4")
    return run_cells(
        cells, workers=workers, address=address, in_process=workers <= 1 and address is None, progress=progress
    )


def plot(d: Diagnosis, path: str | Path) -> Path:
    """A PNG at ``path``: per factor, the share of the gap each value closed (a grey dot each, labelled with the value
    tried; a bar to the best one, named at the right), best first."""
    return save(_plot_figure(d), path)


_DRAWN_MIN = -1.0
"""A value's share of the gap is drawn at this at least (it can widen the gap without bound)."""


def _plot_figure(d: Diagnosis) -> Any:
    """:func:`plot`'s figure. The x axis covers what is drawn: from 0 (or the lowest value, where one widened the
    gap) to 1 (as native)."""
    order = [r.factor for r in d.ranking] + sorted({t.factor for t in d.tried} - {r.factor for r in d.ranking})
    rows = [[t for t in d.tried if t.factor == factor and t.error is None] for factor in order]
    drawn = lambda t: max(min(t.closes, 1.0), _DRAWN_MIN)  # noqa: E731
    lo = min([0.0] + [drawn(t) for values in rows for t in values])
    pad = 0.04 * (1.0 - lo)
    fig, ax = pyplot().subplots(figsize=(9, 0.75 * len(order) + 1.9))
    ax.set_xlim(lo - pad, 1.0 + pad)
    for y, values in enumerate(rows):
        xs = [drawn(t) for t in values]
        ax.scatter(xs, [y] * len(xs), color="0.45", s=18, zorder=3)
        if values:
            best = max(values, key=lambda t: t.closes)
            ax.barh(y, drawn(best), color="tab:green" if best.closes > 0 else "tab:red", alpha=0.45, zorder=1)
            ax.text(1.02, y, f"best: {best.label}", va="center", fontsize=7, transform=ax.get_yaxis_transform())
    ax.set_yticks(range(len(order)), order)
    ax.set_ylim(len(order) - 0.5, -0.5)  # best first, each row's labels inside the axes
    ax.axvline(0, color="k", linewidth=0.8)
    below = "; below 0: widened it" if lo < 0 else ""
    below += f"; values below {_DRAWN_MIN:g} drawn at {_DRAWN_MIN:g}" if lo <= _DRAWN_MIN else ""
    ax.set_xlabel(
        f"share of the gap to native closed (1: walks as natively{below})\ngrey dot: one value tried, "
        "labelled with it and its share; bar: the factor's best value",
        fontsize=8,
    )
    n, t = d.native, d.target
    ax.set_title(
        f"transfer diagnose {Path(d.checkpoint).name}: {t['label']} at {d.gap:.0%} gap from {n['label']}", fontsize=9
    )
    fig.tight_layout()
    for y, values in enumerate(rows):  # where the axes stand now: how wide a label is in x
        _plot_value_labels(ax, y, values, [drawn(t) for t in values])
    return fig


def _plot_value_labels(ax: Any, y: int, values: Sequence[Tried], xs: Sequence[float]) -> None:
    """Each dot of row ``y`` labelled with the value tried, above or below it: a label goes to the first of four
    tiers (above, below, higher, lower) where it overlaps no label already placed in the row."""
    left, right = ax.get_xlim()
    width_px = ax.figure.get_figwidth() * ax.figure.dpi * ax.get_position().width / (right - left)  # px per x unit
    placed: list[list[tuple[float, float]]] = [[], [], [], []]
    offsets = (7, -7, 15, -15)
    for i in sorted(range(len(values)), key=lambda i: xs[i]):
        x, text = xs[i], f"{values[i].label} ({values[i].closes:+.0%})"
        span = (len(text) * 3.6 + 4) * ax.figure.dpi / 72 / width_px  # 6.5 pt text: about 3.6 pt a character
        ha = "left" if x - span / 2 < left else "right" if x + span / 2 > right else "center"
        a = {"left": x, "right": x - span, "center": x - span / 2}[ha]
        tier = next((k for k, spans in enumerate(placed) if all(a + span <= s or a >= e for s, e in spans)), 0)
        placed[tier].append((a, a + span))
        nudge = {"left": 3, "right": -3, "center": 0}[ha]  # clear of the axis and the zero line
        ax.annotate(
            text,
            (x, y),
            xytext=(nudge, offsets[tier]),
            textcoords="offset points",
            ha=ha,
            va="center",
            fontsize=6.5,
            color="0.25",
            gid="value-label",
            zorder=4,
        )
