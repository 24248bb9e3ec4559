"""What :func:`transfer.verify` reports: the result values (:class:`VerifyReport` and its parts), the verdict in
words, and the trace plot (:func:`plot_trace`)."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from transfer.traces.figures import pyplot, save

# ---------------------------------------------------------------------------------------------------- results


@dataclass(frozen=True)
class Largest:
    """Where a comparison differs most: the difference, the entry (a joint name, or a component such as ``z``)
    and the random state (``sample``, 0-based) it occurs in."""

    difference: float
    entry: str
    sample: int

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclass
class SizeCheck:
    """Check 1: the checkpoint, the config and the asset fit together."""

    ok: bool
    input_size: int
    output_size: int
    observation_size: int | None
    action_size: int | None
    terms: list[dict[str, Any]]
    """Each observation term: ``name``, ``axis``, ``start``, ``stop`` (its slice of the observation)."""
    missing_joints: list[str]
    """Joints (or patterns) the config or the ``--source`` list names that the asset does not have."""
    asset_joints: list[str]
    order: list[str]
    """The checkpoint's joint order resolved on the asset (empty when it cannot be)."""
    action_joints: list[str]
    """The joints the action drives, in the checkpoint's order."""
    problems: list[str]
    """What else does not fit (the config on the asset, the sizes), in words."""

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclass
class TermCheck:
    """Check 2 for one observation term (or ``action``): the largest difference between the backends and, per
    backend, from the value computed from the named state (``None`` where the term has no such reference)."""

    term: str
    axis: str
    start: int | None
    stop: int | None
    tolerance: float
    across: Largest
    """The first engine vs the second."""
    expected: dict[str, Largest | None]
    """backend -> its largest difference from the named state."""
    ok: bool

    def to_dict(self) -> dict[str, Any]:
        return {
            "term": self.term,
            "axis": self.axis,
            "start": self.start,
            "stop": self.stop,
            "tolerance": self.tolerance,
            "ok": self.ok,
            "across": self.across.to_dict(),
            "expected": {b: None if v is None else v.to_dict() for b, v in self.expected.items()},
        }


@dataclass
class TraceResult:
    """Check 3: both backends closed-loop from the same standing state; joint position differences by name."""

    seconds: float
    threshold: float
    joints: list[str]
    time: list[float]
    divergence: dict[str, list[float]] = field(repr=False)
    """joint -> |position on physx - position on newton| per policy step (rad or m)."""
    height: dict[str, list[float]] = field(repr=False)
    """backend -> base height per policy step (m)."""
    max_divergence: float
    joint: str
    at: float
    """The largest difference, the joint and the time (s) it occurs at."""
    first_over: float | None
    """First time the largest joint difference exceeds ``threshold`` (``None``: never)."""
    final: float
    """The largest joint difference at the end."""
    base_offset: float
    """Horizontal distance between the two bases at the end (m)."""
    fell: dict[str, float | None]
    """backend -> time its base fell (below half the spawn height, or tilted past 60°), or ``None``."""

    @property
    def diverges(self) -> bool:
        return self.max_divergence > self.threshold

    def to_dict(self, *, series: bool = False) -> dict[str, Any]:
        out = {
            "seconds": self.seconds,
            "threshold": self.threshold,
            "diverges": self.diverges,
            "max_divergence": self.max_divergence,
            "joint": self.joint,
            "at": self.at,
            "first_over": self.first_over,
            "final": self.final,
            "base_offset": self.base_offset,
            "fell": dict(self.fell),
            "per_joint_max": {j: max(v) for j, v in self.divergence.items()},
        }
        if series:
            out.update(time=self.time, divergence=self.divergence, height=self.height)
        return out


@dataclass
class VerifyReport:
    """What :func:`verify` found. ``ok``: checks 1 and 2 hold. ``verdict``: the finding in words."""

    ok: bool
    checkpoint: str
    asset: str
    source: str
    backends: tuple[str, ...]
    samples: int
    seed: int
    sizes: SizeCheck
    terms: list[TermCheck]
    """Check 2: the observation terms in order, then ``action`` (empty when check 1 failed)."""
    orders: dict[str, dict[str, list[str]]]
    """backend -> ``public`` (the order the policy was fed) and ``backend`` (the engine's own)."""
    trace: TraceResult | None
    verdict: str
    warnings: list[str] = field(default_factory=list)
    """What the inputs left to say (:attr:`transfer.runs.inputs.Inputs.warnings`): the checks ran regardless."""

    def largest(self) -> dict[str, dict[str, Any] | None]:
        """The largest observation difference and the largest action difference (between the backends, or of one
        backend from the named state): ``term``, ``entry`` (the joint the checkpoint reads there, or a component),
        ``sample``, ``difference``, the term's ``tolerance`` and ``comparison`` (``physx vs newton`` or
        ``<backend> vs named state``)."""
        out: dict[str, dict[str, Any] | None] = {"observation": None, "action": None}
        for t in self.terms:
            key = "action" if t.term == "action" else "observation"
            cands = [("physx vs newton", t.across)] + [
                (f"{b} vs named state", v) for b, v in t.expected.items() if v is not None
            ]
            for what, lg in cands:
                current = out[key]
                if current is None or lg.difference > current["difference"]:
                    out[key] = {"term": t.term, **lg.to_dict(), "tolerance": t.tolerance, "comparison": what}
        return out

    def to_dict(self, *, series: bool = False) -> dict[str, Any]:
        return _json_finite(
            {
                "ok": self.ok,
                "verdict": self.verdict,
                "checkpoint": self.checkpoint,
                "asset": self.asset,
                "source": self.source,
                "backends": list(self.backends),
                "samples": self.samples,
                "seed": self.seed,
                "largest": self.largest(),
                "sizes": self.sizes.to_dict(),
                "terms": [t.to_dict() for t in self.terms],
                "orders": self.orders,
                "trace": None if self.trace is None else self.trace.to_dict(series=series),
                "warnings": list(self.warnings),
            }
        )


def _json_finite(value: Any) -> Any:
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _json_finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_finite(v) for v in value]
    return value


# ---------------------------------------------------------------------------------------------------- verdict, plot


def _verdict(
    sizes: SizeCheck, terms: list[TermCheck], trace: TraceResult | None, orders: Mapping[str, Any] | None = None
) -> str:
    if not sizes.ok:
        found = list(sizes.problems)
        if sizes.missing_joints:
            found.insert(
                0,
                (
                    f"the config names joints the asset does not have: {', '.join(sizes.missing_joints)} (the asset's "
                    f"joints: {', '.join(sizes.asset_joints)}). Is this the checkpoint's robot and config?"
                ),
            )
        return "Check 1 failed: " + " ".join(found) + " Fix this first: nothing else can be checked."
    bad = [t for t in terms if not t.ok]
    obs = [t for t in terms if t.term != "action"]
    if bad:
        t = max(bad, key=lambda t: max([t.across.difference] + [v.difference for v in t.expected.values() if v]))
        where = f"{t.term}[{t.across.entry}]" if t.term != "action" else f"the action for {t.across.entry}"
        off = [
            f"{b} is {v.difference:.3g} off the named state (at {v.entry})"
            for b, v in t.expected.items()
            if v is not None and v.difference > t.tolerance
        ]
        text = (
            f"Check 2 failed: the same named state does not give the same vectors on both backends: {where} differs "
            f"by {t.across.difference:.3g} between physx and newton (tolerance {t.tolerance:g}, state "
            f"{t.across.sample})" + (f"; {'; '.join(off)}" if off else "") + "."
        )
        for backend, names in (orders or {}).items():
            fed = names["public"]
            diffs = [(i, a, b) for i, (a, b) in enumerate(zip(fed, sizes.order, strict=False)) if a != b]
            if diffs:
                i, a, b = diffs[0]
                more = f" (and {len(diffs) - 1} more positions)" if len(diffs) > 1 else ""
                text += (
                    f" {backend} feeds the policy another joint order than the checkpoint's: position {i} holds {a} "
                    f"where the checkpoint reads {b}{more}."
                )
        text += (
            " The vectors do not mean the same joints: check --source (the order the checkpoint was trained in) and "
            "the config's joint lists."
        )
        if trace is not None:
            text += " The trace is shown, but while check 2 fails its divergence says nothing about dynamics."
        return text
    worst = max(obs, key=lambda t: t.across.difference)
    act = terms[-1]
    text = (
        f"Checks 1-2 pass: both backends turn the same named state into the same observation (largest difference "
        f"{worst.across.difference:.2g} in {worst.term}[{worst.across.entry}]) and the policy into the same action "
        f"per joint (largest {act.across.difference:.2g}, {act.across.entry})."
    )
    if trace is None:
        return text
    if trace.diverges:
        first = f"{trace.first_over:.2f} s" if trace.first_over is not None else "n/a"
        fell = [f"{b} fell at {t:.2f} s" for b, t in trace.fell.items() if t is not None]
        return text + (
            f" Closed-loop, the trajectories drift apart: {trace.joint} differs by {trace.max_divergence:.2f} rad at "
            f"{trace.at:.2f} s (joints first differ by more than {trace.threshold:g} rad at {first}; bases "
            f"{trace.base_offset:.2f} m apart at {trace.seconds:.1f} s"
            + (f"; {', '.join(fell)}" if fell else "")
            + "). The ordering is right, so this is a dynamics difference (contacts, friction, actuator models, "
            "integration, solver settings), not an ordering error: compare the engines' settings, not the joint order."
            + (
                " A fall within the first second points at the set-up the config gives (spawn height, solver "
                "iterations) more than at the policy."
                if any(t is not None and t < 1.0 for t in trace.fell.values())
                else ""
            )
        )
    return text + (
        f" Closed-loop, the trajectories stay within {trace.threshold:g} rad of each other for {trace.seconds:.1f} s "
        f"(largest {trace.max_divergence:.3f} rad, {trace.joint})."
    )


def plot_trace(report: VerifyReport, path: str | Path) -> Path:
    """Per-joint divergence over time (thin), its maximum (thick) and the drift threshold, above both bases'
    heights; a PNG at ``path``."""

    plt = pyplot()

    tr = report.trace
    if tr is None:
        raise ValueError("plot_trace: the report has no trace (verify with trace=SECONDS)")
    fig, (ax_d, ax_h) = plt.subplots(2, 1, figsize=(11, 6.5), sharex=True, gridspec_kw={"height_ratios": [2, 1]})
    cmap = plt.get_cmap("tab20")
    for i, joint in enumerate(tr.joints):
        ax_d.plot(tr.time, tr.divergence[joint], linewidth=0.9, color=cmap(i % 20), label=joint)
    worst = np.max([tr.divergence[j] for j in tr.joints], axis=0)
    ax_d.plot(tr.time, worst, color="k", linewidth=2.2, label="max over joints")
    ax_d.axhline(tr.threshold, color="r", linestyle="--", linewidth=1, label=f"drift threshold {tr.threshold:g} rad")
    if tr.first_over is not None:
        ax_d.axvline(tr.first_over, color="r", linewidth=0.6, alpha=0.6)
    ax_d.set_ylabel("|q physx - q newton| (rad)\nper joint, by name")
    ax_d.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)
    for backend, heights in tr.height.items():
        ax_h.plot(tr.time, heights, label=backend)
    ax_h.set_ylabel("base height (m)")
    ax_h.set_xlabel("time (s)")
    ax_h.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)
    state = "ordering ok" if report.ok else "ordering checks FAILED"
    fig.suptitle(f"transfer verify {Path(report.checkpoint).name}: closed-loop divergence ({state})")
    fig.tight_layout()
    return save(fig, path)
