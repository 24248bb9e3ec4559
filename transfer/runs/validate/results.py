"""What ``transfer validate`` reports: per joint, per engine and for the whole asset (:func:`transfer.runs.validate.validate`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "FALLBACK_DIAGONAL",
    "JointResult",
    "MovementResult",
    "ValidateInputError",
    "ValidateReport",
    "compare_joints",
]

FALLBACK_DIAGONAL = 0.1  # m: the translation reference of a child without geometry
REACH_FRACTION = 0.25  # engines disagree on a joint's reach beyond this part of its larger travel ...
REACH_FLOOR_DEG = 10.0  # ... and beyond this many degrees (revolute) ...
REACH_FLOOR_PCT = 10.0  # ... or this % of the child's bounding-box diagonal (prismatic)
ROTATION_DEG = 1.0
TRANSLATION_PCT = 2.0


class ValidateInputError(ValueError):
    """The asset cannot be validated at all (an empty stage): the command exits 2 with this message."""


@dataclass
class JointResult:
    name: str
    path: str
    type: str
    parent: str | None
    child: str
    moved: bool = False
    rotation_deg: float = 0.0
    translation_pct: float = 0.0
    travel_fraction: float | None = None
    direction: str | None = None
    """Revolute and prismatic: ``"+"`` / ``"-"``, the sign of the motion observed along the joint's axis; spherical
    and nudged joints: the swing or nudge that moved them."""
    displacement: float | None = None
    """Revolute (deg) and prismatic (stage units): the signed extreme of the motion along the joint's axis."""
    commanded: str | None = None
    """The command of the attempt in which the joint moved, or ``"passive"`` (moved by another joint)."""
    reached: float | None = None
    """Revolute (deg) and prismatic (stage units): the joint's own coordinate (:func:`joint_coordinate`) where its
    motion peaked, the position compared across engines."""
    against_command: bool = False
    """Driven ``+`` or ``-``, it moved the other way."""
    confirmed_by: str = "relationships"
    """``"coordinate"`` when the engine's own coordinate of this joint moved with its child (see same_child_bodies)."""
    skipped: str | None = None
    problem: str | None = None
    """Why this joint's motion does not count on this engine: a non-finite pose, or motion beyond its limits."""
    series: tuple[Any, ...] = field(default=(), repr=False)
    diagonal: float = field(default=FALLBACK_DIAGONAL, repr=False)
    """The child's bounding-box diagonal (stage units): the scale of a prismatic joint's tolerances."""

    def to_dict(self) -> dict[str, Any]:
        keys = ("name", "path", "type", "parent", "child", "moved", "rotation_deg", "translation_pct")
        out = {k: getattr(self, k) for k in keys}
        out.update(travel_fraction=self.travel_fraction, direction=self.direction, displacement=self.displacement)
        out.update(commanded=self.commanded, reached=self.reached, against_command=self.against_command)
        out.update(confirmed_by=self.confirmed_by)
        if self.skipped:
            out["skipped"] = self.skipped
        if self.problem:
            out["problem"] = self.problem
        return out


@dataclass
class MovementResult:
    backend: str
    status: str
    reason: str
    joints: list[JointResult] = field(default_factory=list)
    attempts: list[str] = field(default_factory=list)
    pinned: tuple[str, ...] = ()
    notes: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    """Why the engine's motion cannot be trusted (non-finite state, motion beyond limits, engine errors): any fails."""
    warnings: list[str] = field(default_factory=list)
    """The engine's own warnings and errors during the attempts, once each (``(xN)`` when repeated)."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "reason": self.reason,
            "joints": [j.to_dict() for j in self.joints],
            "attempts": self.attempts,
            "pinned": list(self.pinned),
            "notes": self.notes,
            "problems": self.problems,
            "warnings": self.warnings,
        }


@dataclass
class ValidateReport:
    asset: str
    joint_movement: dict[str, MovementResult]
    same_child_bodies: bool | None
    same_child_detail: list[dict[str, Any]]
    profile: list[Any]
    strict: bool = False
    unresolved: list[str] = field(default_factory=list)
    """The stage's composition errors (references, payloads, sublayers that do not resolve), one line each."""

    @property
    def exit_code(self) -> int:
        """1 when joint_movement fails on an engine or the engines disagree (or, ``strict``, on an error or warning
        finding), else 0."""
        failed = any(r.status == "fail" for r in self.joint_movement.values())
        serious = any(f.severity in ("error", "warning") for f in self.profile)
        return 1 if failed or self.engines_disagree or (self.strict and serious) else 0

    @property
    def joint_disagreements(self) -> list[dict[str, Any]]:
        """The joints both engines moved when driven, but differently: see :func:`compare_joints`."""
        results = [r for r in self.joint_movement.values() if r.status != "skip"]
        if len(results) < 2 or any(r.status != "pass" for r in results):
            return []
        return compare_joints(results)

    @property
    def engines_disagree(self) -> str | None:
        """One line when the engines' verdicts differ, a joint moved on one and stayed idle on the other, or a joint
        driven on both moved another way or reached elsewhere (:attr:`joint_disagreements`)."""
        results = {n: r for n, r in self.joint_movement.items() if r.status != "skip"}
        if len(results) < 2:
            return None
        parts = []
        if len({r.status for r in results.values()}) > 1:
            parts.append(", ".join(f"{n} {r.status.upper()}" for n, r in results.items()))
        moved = {n: {j.path for j in r.joints if j.moved} for n, r in results.items()}
        acted = set.intersection(*({j.path for j in r.joints if not j.skipped} for r in results.values()))
        for name in results:
            only = sorted(
                p.rsplit("/", 1)[-1]
                for p in (moved[name] & acted) - set.union(*(m for n, m in moved.items() if n != name))
            )
            if only and all(r.status == "pass" for r in results.values()):
                parts.append(f"moved on {name} only: {', '.join(only[:8])}{', ...' if len(only) > 8 else ''}")
        found = self.joint_disagreements
        parts += [d["line"] for d in found[:6]] + ([f"+{len(found) - 6} more (--json)"] if len(found) > 6 else [])
        return f"engines disagree: {'; '.join(parts)}" if parts else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "asset": self.asset,
            "joint_movement": {name: r.to_dict() for name, r in self.joint_movement.items()},
            "engines_disagree": self.engines_disagree,
            "joint_disagreements": self.joint_disagreements,
            "same_child_bodies": self.same_child_bodies,
            "same_child_detail": self.same_child_detail,
            "unresolved": self.unresolved,
            "profile": [f.to_dict() for f in self.profile],
        }


def compare_joints(results: Sequence[MovementResult]) -> list[dict[str, Any]]:
    """The joints every engine moved on a drive (``+`` or ``-``, not passively) but differently: ``"drives"`` (moved on
    different drives: one on the first, another only on the retry), ``"direction"`` (opposite ways), or ``"reach"``
    (the joint coordinates reached differ by more than :data:`REACH_FRACTION` of the larger travel and more than
    :data:`REACH_FLOOR_DEG`, or :data:`REACH_FLOOR_PCT` of the child's diagonal). Each: ``joint``, ``kind``, per
    engine its drive, direction, displacement and reach, and a ``line`` naming them."""
    first, *rest = results
    found = []
    for r in first.joints:
        rows = [r, *(next((o for o in res.joints if o.path == r.path), None) for res in rest)]
        if any(x is None or not x.moved or x.commanded not in ("+", "-") or x.reached is None for x in rows):
            continue
        kind = _disagreement(rows)
        if kind is None:
            continue
        unit = " deg" if r.type == "revolute" else ""
        cells = [
            f"{res.backend} {x.reached:.4g}{unit} ({x.displacement:+.4g}, driven {x.commanded})"
            for res, x in zip(results, rows, strict=True)
        ]
        what = {"drives": "moved on different drives", "direction": "moved opposite ways", "reach": "reached apart"}
        found.append(
            {
                "joint": r.path,
                "kind": kind,
                **{
                    res.backend: {
                        "commanded": x.commanded,
                        "direction": x.direction,
                        "displacement": x.displacement,
                        "reached": x.reached,
                    }
                    for res, x in zip(results, rows, strict=True)
                },
                "line": f"{r.name} {what[kind]}: {', '.join(cells)}",
            }
        )
    return found


def _disagreement(rows: Sequence[JointResult]) -> str | None:
    if len({x.commanded for x in rows}) > 1:
        return "drives"
    if len({x.direction for x in rows}) > 1:
        return "direction"
    reached = [x.reached for x in rows if x.reached is not None]
    travel = max(abs(x.displacement or 0.0) for x in rows)
    floor = REACH_FLOOR_DEG if rows[0].type == "revolute" else REACH_FLOOR_PCT / 100.0 * rows[0].diagonal
    return "reach" if max(reached) - min(reached) > max(floor, REACH_FRACTION * travel) else None
