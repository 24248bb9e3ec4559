"""Two traces lined up by name and time (``transfer traces A B``): where and by how much they part.

:func:`compare_traces` joins two trace files (:mod:`transfer.traces.parquet`) on env and time, and for every
quantity both hold by the same name (a joint's position, velocity, effort and action, the base's height and
velocity) gives the RMS and the largest difference over the samples where both envs stand, and the first time it
passed its threshold (:data:`THRESHOLDS`). Columns only one trace holds are listed, never compared by position.
:func:`plot_traces` draws the joints that part most, both traces over time.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from transfer._console import printable
from transfer.traces.figures import pyplot, save
from transfer.traces.parquet import TraceError, read_trace

__all__ = [
    "THRESHOLDS",
    "Divergence",
    "TraceComparison",
    "check_same_robot",
    "compare_traces",
    "first_divergence",
    "plot_traces",
]

THRESHOLDS: dict[str, float] = {
    "position": 0.1,
    "velocity": 2.0,
    "effort": 5.0,
    "action": 0.5,
    "target": 0.1,
    "base.pos.z": 0.05,
    "base.lin_vel.x": 0.25,
    "base.lin_vel.y": 0.25,
}
"""The difference at which a quantity counts as parted: rad (position, target), rad/s, N·m, action units, m and m/s
for the base. Change them with ``thresholds=``."""


@dataclass
class Divergence:
    """One quantity of two traces: ``column`` (e.g. ``position.LF_KFE``), its RMS and largest difference over the
    samples where both stand, and the first time (s) it passed ``threshold`` (``None``: it never did)."""

    column: str
    rms: float
    peak: float
    threshold: float | None
    first_time: float | None


@dataclass
class TraceComparison:
    """What :func:`compare_traces` found; ``divergences`` sorted by first time parted, then by RMS."""

    a: dict[str, Any]
    """Trace A's metadata (engine, label, checkpoint, ...)."""
    b: dict[str, Any]
    rows: int
    """Aligned samples (env x time) both traces hold."""
    divergences: list[Divergence]
    only_in_a: list[str] = field(default_factory=list)
    only_in_b: list[str] = field(default_factory=list)
    not_finite: dict[str, list[str]] = field(default_factory=dict)
    """Columns both hold that could not be compared, by the trace (``"a"``, ``"b"``) holding no finite value in
    them where both stand; they are not among :attr:`divergences`."""

    @property
    def first(self) -> Divergence | None:
        """The quantity that parted first (``None``: none passed its threshold)."""
        parted = [d for d in self.divergences if d.first_time is not None]
        return min(parted, key=lambda d: d.first_time) if parted else None

    def to_dict(self) -> dict[str, Any]:
        first = self.first
        clean = lambda v: None if isinstance(v, float) and not math.isfinite(v) else v  # noqa: E731
        return {
            "a": {k: self.a.get(k) for k in ("engine", "label", "checkpoint", "path")},
            "b": {k: self.b.get(k) for k in ("engine", "label", "checkpoint", "path")},
            "rows": self.rows,
            "first": None if first is None else first.column,
            "first_time": None if first is None else first.first_time,
            "divergences": [{k: clean(v) for k, v in d.__dict__.items()} for d in self.divergences],
            "only_in_a": self.only_in_a,
            "only_in_b": self.only_in_b,
            "not_finite": self.not_finite,
        }


def _threshold(column: str, thresholds: Mapping[str, float]) -> float | None:
    if column in thresholds:
        return thresholds[column]
    return thresholds.get(column.split(".", 1)[0]) if "." in column else None


COMPARED = ("position", "velocity", "effort", "action", "target")
BASE = ("base.pos.z", "base.lin_vel.x", "base.lin_vel.y", "base.ang_vel.z")


def _numeric(table: Any) -> dict[str, np.ndarray]:
    out = {}
    for name in table.column_names:
        if name.split(".", 1)[0] in COMPARED or name in BASE or name in ("step", "time", "env", "alive"):
            out[name] = table.column(name).to_numpy(zero_copy_only=False)
    return out


def _aligned(a: Mapping[str, np.ndarray], b: Mapping[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Indices into ``a`` and ``b`` of the samples both hold (same env, same time to the microsecond), and their
    times."""
    key_a = a["env"].astype(np.int64) * 10**12 + np.round(a["time"] * 1e6).astype(np.int64)
    key_b = b["env"].astype(np.int64) * 10**12 + np.round(b["time"] * 1e6).astype(np.int64)
    common, ia, ib = np.intersect1d(key_a, key_b, assume_unique=False, return_indices=True)
    order = np.argsort(a["time"][ia], kind="stable")
    return ia[order], ib[order], a["time"][ia][order]


def first_divergence(
    a: Mapping[str, np.ndarray], b: Mapping[str, np.ndarray], thresholds: Mapping[str, float] | None = None
) -> list[Divergence]:
    """Each quantity both column sets hold, compared on their aligned samples (see the module's text)."""
    thresholds = {**THRESHOLDS, **(thresholds or {})}
    ia, ib, t = _aligned(a, b)
    both = np.asarray(a["alive"])[ia] & np.asarray(b["alive"])[ib]
    out = []
    for column in a:
        if column in ("step", "time", "env", "alive") or column not in b:
            continue
        diff = np.abs(a[column][ia].astype(np.float64) - b[column][ib].astype(np.float64))
        diff = np.where(both, diff, np.nan)
        threshold = _threshold(column, thresholds)
        over = np.flatnonzero(np.nan_to_num(diff, nan=0.0) > threshold) if threshold is not None else []
        with np.errstate(invalid="ignore"):
            rms = float(np.sqrt(np.nanmean(diff**2))) if np.isfinite(diff).any() else float("nan")
            peak = float(np.nanmax(diff)) if np.isfinite(diff).any() else float("nan")
        out.append(Divergence(column, rms, peak, threshold, float(t[over[0]]) if len(over) else None))
    out.sort(key=lambda d: (d.first_time if d.first_time is not None else math.inf, -np.nan_to_num(d.rms)))
    return out


def _joints(cols: Mapping[str, np.ndarray]) -> set[str]:
    """The joints a trace's compared columns name (``position.LF_KFE``: ``LF_KFE``)."""
    return {name.split(".", 1)[1] for name in cols if "." in name and name.split(".", 1)[0] in COMPARED}


def _shown(names: list[str], most: int = 6) -> str:
    return ", ".join(names[:most]) + (f" and {len(names) - most} more" if len(names) > most else "")


def _not_finite(
    a: Mapping[str, np.ndarray], b: Mapping[str, np.ndarray], ia: np.ndarray, ib: np.ndarray, both: np.ndarray
) -> dict[str, list[str]]:
    """The data columns both traces hold that have no finite pair where both stand (``both``, over the aligned
    samples ``ia``, ``ib``), by the trace (``a``, ``b``) that holds no finite value there (both, when each has some
    but never at the same sample)."""
    out: dict[str, list[str]] = {"a": [], "b": []}
    for column in a:
        if column in ("step", "time", "env", "alive") or column not in b:
            continue
        fa, fb = np.isfinite(a[column][ia]) & both, np.isfinite(b[column][ib]) & both
        if not (fa & fb).any():
            for side, ok in (("a", fa), ("b", fb)):
                if not ok.any() or fa.any() and fb.any():
                    out[side].append(column)
    return {side: sorted(columns) for side, columns in out.items() if columns}


MASS_TOLERANCE = 0.02
"""How far two traces' robot masses may differ (relative) and still be one robot (the same robot through two engines
or two file formats weighs the same to 1e-6; ANYmal C and D, whose joints share names, differ by more)."""


def check_same_robot(a: Any, b: Any, meta_a: Mapping[str, Any], meta_b: Mapping[str, Any]) -> None:
    """Refuse two traces whose robots weigh differently (:data:`MASS_TOLERANCE`): two robots whose joints share names
    would otherwise be compared joint by joint."""
    ma, mb = meta_a.get("robot_mass"), meta_b.get("robot_mass")
    if not all(isinstance(m, (int, float)) and math.isfinite(m) and m > 0 for m in (ma, mb)):
        return  # a trace written before robots were weighed, or by an engine that does not say
    if abs(ma - mb) > MASS_TOLERANCE * max(ma, mb):
        robot = lambda meta: Path(str(meta.get("asset") or "?")).name  # noqa: E731
        raise TraceError(
            f"traces {a} and {b} are of different robots ({robot(meta_a)}: {ma:.2f} kg; "
            f"{robot(meta_b)}: {mb:.2f} kg), though their joints share names; compare two traces of "
            "the same robot"
        )


def compare_traces(a: str | Path, b: str | Path, thresholds: Mapping[str, float] | None = None) -> TraceComparison:
    """Line up the trace files ``a`` and ``b`` by env and time and compare every quantity both hold by name.

    Refuses (:class:`TraceError`) two traces that share no sample, no joint (two robots), or no joint column with a
    finite value in both where both stand (a run whose values are all NaN); other columns without one are left out
    of the comparison and listed in :attr:`TraceComparison.not_finite`."""
    table_a, meta_a = read_trace(a)
    table_b, meta_b = read_trace(b)
    cols_a, cols_b = _numeric(table_a), _numeric(table_b)
    joints_a, joints_b = _joints(cols_a), _joints(cols_b)
    if not [c for c in cols_a if c in cols_b and c.split(".", 1)[0] in COMPARED]:
        raise TraceError(
            f"traces {a} and {b} share no joint (A: {_shown(sorted(joints_a)) or 'none'}; B: "
            f"{_shown(sorted(joints_b)) or 'none'}): they are of different robots; compare two traces "
            "of the same robot"
        )
    check_same_robot(a, b, meta_a, meta_b)
    ia, ib, _ = _aligned(cols_a, cols_b)
    if not len(ia):
        raise TraceError(
            f"traces {a} and {b} share no sample (env and time): were they recorded with the same policy rate and envs?"
        )
    both = np.asarray(cols_a["alive"])[ia] & np.asarray(cols_b["alive"])[ib]
    if not both.any():
        raise TraceError(
            f"traces {a} and {b}: no sample where both stand (env and time): every env had fallen in "
            "one trace or the other; nothing to compare"
        )
    not_finite = _not_finite(cols_a, cols_b, ia, ib, both)
    lost = {c for columns in not_finite.values() for c in columns}
    if not [c for c in cols_a if c in cols_b and c not in lost and c.split(".", 1)[0] in COMPARED]:
        blamed = "; ".join(
            f"{path} holds no finite value in {len(not_finite[side])} column(s) where both stand: "
            f"{_shown(not_finite[side], 4)}"
            for side, path in (("a", a), ("b", b))
            if side in not_finite
        )
        raise TraceError(
            f"traces {a} and {b}: no joint column to compare: {blamed} (was its simulation "
            "non-finite? record the run again)"
        )
    names_a, names_b = set(table_a.column_names), set(table_b.column_names)
    return TraceComparison(
        a={**meta_a, "path": str(a)},
        b={**meta_b, "path": str(b)},
        rows=len(ia),
        divergences=first_divergence({k: v for k, v in cols_a.items() if k not in lost}, cols_b, thresholds),
        only_in_a=sorted(names_a - names_b),
        only_in_b=sorted(names_b - names_a),
        not_finite=not_finite,
    )


def plot_traces(
    a: str | Path,
    b: str | Path,
    path: str | Path,
    comparison: TraceComparison | None = None,
    joints: int = 3,
    env: int = 0,
) -> Path:
    """A PNG at ``path``: env ``env``'s position of the ``joints`` joints that part most (A solid, B dashed, target
    dotted), base height and forward velocity, both traces over time."""
    plt = pyplot()

    comparison = comparison or compare_traces(a, b)
    tables = [read_trace(p) for p in (a, b)]
    cols = [_numeric(t) for t, _ in tables]
    ranked = [d.column for d in comparison.divergences if d.column.startswith("position.")][:joints]
    panels = ranked + ["base.pos.z", "base.lin_vel.x"]
    fig, axes = plt.subplots(len(panels), 1, figsize=(9, 2.1 * len(panels)), sharex=True, squeeze=False)
    labels = [
        f"{side}: {printable(m.get('label') or m.get('engine'), 60)}"
        for side, m in (("A", comparison.a), ("B", comparison.b))
    ]
    for ax, column in zip(axes[:, 0], panels, strict=True):
        for c, label, style in zip(cols, labels, ("-", "--"), strict=True):
            if column not in c:
                continue
            rows = c["env"] == env
            ax.plot(c["time"][rows], c[column][rows], style, label=label)
            target = "target." + column.split(".", 1)[1] if column.startswith("position.") else None
            if target and target in c and style == "-":
                ax.plot(c["time"][rows], c[target][rows], ":", color="0.4", linewidth=1, label="A's target")
        ax.set_ylabel(column.replace("position.", "").replace("base.", "base "), fontsize=8)
        ax.legend(fontsize=7, loc="upper right")
    first = comparison.first
    if first is not None:
        for ax in axes[:, 0]:
            ax.axvline(first.first_time, color="r", linewidth=0.8)
    axes[-1, 0].set_xlabel("time (s)")
    parted = f"first parted: {first.column} at {first.first_time:.2f} s" if first else "never parted"
    fig.suptitle(f"transfer traces (env {env}): {parted}", fontsize=10)
    fig.tight_layout()
    return save(fig, path)
