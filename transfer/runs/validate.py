"""``transfer validate``: the joint_movement test on each engine, the same-child check across engines, the profile.

The joint_movement test (``docs/validate.md``) certifies that an asset is genuinely articulated on an engine: at
least one joint produces measurable relative motion between its bodies.

1. Discovery, before any physics (:func:`transfer.profile.scan_joints`): every joint's type, path, parent and child
   bodies, limits and frames. Skipped when there are no joints, no joint with a child body, or only fixed joints.
2. A plan per joint: the open direction is the limit farthest from zero (a door limited 0..130 deg opens toward
   +130, a drawer limited -0.42..0.01 m toward -0.42); missing, infinite or symmetric limits leave it undirected
   (positive, then negative). The target speed scales with the travel, never below 45 deg/s or 0.05 m/s. Loose
   assemblies (no articulation root) have their base bodies (joint parents that are never children) pinned
   kinematic; articulations keep their authored base.
3. Attempts run through each engine's probe (:func:`transfer.backends.movement_probe`): directed joints toward
   their open end and undirected ones positive (of a closed loop, only the joint nearest a base: :func:`closed_loops`),
   then the still-idle ones negative, then the spherical swings; on PhysX the six-direction velocity nudge for D6 and
   other joints when nothing moved.
4. The tracker turns each probe's child-in-parent poses into the rotation angle of the relative quaternion and the
   translation as % of the child's bounding-box diagonal. A joint moved at >= 1.0 deg or >= 2.0 %; the test passes
   when one joint moved. The travel fraction is reported, not gated.
5. An engine that misbehaves fails its own verdict, whatever moved: a non-finite pose, a joint carried beyond its
   authored limits by more than the tolerance (5.0 deg, or 5.0 % of the child's diagonal, each side judged on its
   own; measured on the joint's own coordinate from the poses and the joint frames), or an error the engine reported
   while stepping (MuJoCo's "The simulation is unstable", PhysX's errors). A joint with finite limits counts as moved
   only by the motion inside its range (a locked joint, lower = upper, never moves). The engines' warnings and
   errors, collected from ``logging`` under ``transfer.backends`` during each attempt, are in the report.
6. Across engines (:func:`compare_joints`): a joint both moved on a drive but on different drives, opposite ways, or
   to joint coordinates further apart than the reach tolerance makes the engines disagree (exit 1), as differing
   verdicts and a joint moving on one engine only do. A joint moving against its drive is named in the reason.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from transfer._rotations import quat_conj, quat_mul, rotate

__all__ = [
    "JointResult",
    "MovementResult",
    "ValidateInputError",
    "ValidateReport",
    "joint_coordinate",
    "joint_movement",
    "plot",
    "validate",
]

ROTATION_DEG = 1.0
TRANSLATION_PCT = 2.0
ANGULAR_SPEED = 45.0  # deg/s, the baseline
LINEAR_SPEED = 0.05  # m/s, the baseline
NUDGE_SPEED = 0.1  # stage units/s
DURATION = 2.0  # simulated seconds per attempt
ACCELERATION = (0.002, 0.05)  # m/s^2: the force-pair ramp of force-based probes (Newton), first attempt
RETRY_GAIN = 4.0  # the ramp's cap on attempts that retry still-idle joints (fewer joints loaded, a stronger push)
FALLBACK_DIAGONAL = 0.1  # m: the translation reference of a child without geometry
LIMIT_TOLERANCE_DEG = 5.0  # a revolute joint further than this beyond its authored limits fails the engine's verdict
LIMIT_TOLERANCE_PCT = 5.0  # prismatic: % of the child's bounding-box diagonal beyond its limits
REACH_FRACTION = 0.25  # engines disagree on a joint's reach beyond this part of its larger travel ...
REACH_FLOOR_DEG = 10.0  # ... and beyond this many degrees (revolute) ...
REACH_FLOOR_PCT = 10.0  # ... or this % of the child's bounding-box diagonal (prismatic)
ENGINE_LOGGER = "transfer.backends"  # the engines' warnings and errors (MuJoCo's, PhysX's) are logged under it
_NUDGES = [(s, a) for a in range(3) for s in (1, -1)]


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
            "status": self.status, "reason": self.reason, "joints": [j.to_dict() for j in self.joints],
            "attempts": self.attempts, "pinned": list(self.pinned), "notes": self.notes,
            "problems": self.problems, "warnings": self.warnings,
        }  # fmt: skip


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
            only = sorted(p.rsplit("/", 1)[-1] for p in (moved[name] & acted) - set.union(*(
                m for n, m in moved.items() if n != name)))  # fmt: skip
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


# --- discovery and the plan ----------------------------------------------------------------------------------------


def _skip_reason(scan: Any) -> str | None:
    if not scan.joints:
        return "no joints found in the asset's prim hierarchy"
    with_child = [j for j in scan.joints if j.child is not None]
    if not with_child:
        return f"no joint has a child body ({len(scan.joints)} joint(s) without physics:body1)"
    if all(j.type == "fixed" for j in with_child):
        return f"all joints are FixedJoint ({len(with_child)}): intentionally rigid, nothing to move"
    return None


def _open_direction(joint: Any) -> tuple[int, float | None]:
    """``(sign, open limit)`` toward the limit farthest from zero; ``(0, None)`` when there is none."""
    lo, hi = joint.lower, joint.upper
    if joint.type not in ("revolute", "prismatic") or lo is None or hi is None or lo > hi:
        return 0, None
    if math.isclose(abs(lo), abs(hi)):
        return 0, None
    return (1, hi) if abs(hi) > abs(lo) else (-1, lo)


def _speed(joint: Any, open_limit: float | None) -> float:
    base = ANGULAR_SPEED if joint.type != "prismatic" else LINEAR_SPEED
    if open_limit is None:
        return base
    rest = min(max(0.0, joint.lower), joint.upper)
    return max(base, abs(open_limit - rest) / (0.75 * DURATION))


def _candidates(joint: Any) -> list[tuple[str, int, float, int]]:
    """The commands tried on ``joint``, in order: ``(kind, sign, speed, axis)``."""
    if joint.type in ("revolute", "prismatic"):
        sign, limit = _open_direction(joint)
        speed = _speed(joint, limit)
        # A directed joint that stayed idle is driven toward its open end again, with fewer joints loaded at once.
        return [("drive", sign or 1, speed, 0), ("drive", sign or -1, speed, 0)]
    if joint.type == "spherical":
        return [("swing", s, ANGULAR_SPEED, axis) for axis in (1, 2) for s in (1, -1)]
    return []


def _pinned(scan: Any, movable: Sequence[Any]) -> tuple[str, ...]:
    """Base bodies of loose assemblies: joint parents outside any articulation that are never a joint's child."""
    children = {j.child for j in scan.joints if j.child}
    loose = [j for j in movable if j.child not in scan.articulated]
    return tuple(sorted({j.parent for j in loose if j.parent and j.parent not in children} - scan.kinematic))


# --- the tracker ---------------------------------------------------------------------------------------------------


def track(poses: np.ndarray, diagonal: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Rotation (deg) and translation (m, % of ``diagonal``) of each sample relative to the first."""
    q = poses[:, 3:] / np.linalg.norm(poses[:, 3:], axis=1, keepdims=True)
    dots = np.clip(np.abs(q @ q[0]), 0.0, 1.0)
    rotation = np.degrees(2.0 * np.arccos(dots))
    translation = np.linalg.norm(poses[:, :3] - poses[0, :3], axis=1)
    return rotation, translation, 100.0 * translation / diagonal


def along_axis(poses: np.ndarray, joint: Any) -> np.ndarray:
    """Signed motion along the joint's axis in the parent's joint frame: degrees (revolute) or stage units."""
    f = np.asarray(joint.frame0, dtype=np.float64)
    unit = np.eye(3)[{"X": 0, "Y": 1, "Z": 2}.get(joint.axis, 0)]
    u, w = f[3:6], f[6]
    axis = unit + 2.0 * np.cross(u, np.cross(u, unit) + w * unit)  # the joint axis in the parent's frame
    if joint.type == "prismatic":
        return (poses[:, :3] - poses[0, :3]) @ axis
    q, q0 = poses[:, 3:], poses[0, 3:] * np.array([-1.0, -1.0, -1.0, 1.0])  # q(t) * conj(q(0))
    vec = q[:, 3:4] * q0[:3] + q0[3] * q[:, :3] + np.cross(q[:, :3], q0[:3])
    real = q[:, 3] * q0[3] - q[:, :3] @ q0[:3]
    sign = np.where(real < 0, -1.0, 1.0)
    return np.degrees(np.unwrap(2.0 * np.arctan2(sign * (vec @ axis), sign * real)))


def _diagonal(joint: Any) -> float:
    if joint.extent is None:
        return FALLBACK_DIAGONAL
    return float(np.linalg.norm(np.subtract(joint.extent[3:], joint.extent[:3]))) or FALLBACK_DIAGONAL


def _label(kind: str, sign: int, axis: int, joint: Any) -> str:
    s = "+" if sign > 0 else "-"
    if kind == "drive":
        return s
    if kind == "swing":
        return f"swing {({'X': 'YZ', 'Y': 'ZX', 'Z': 'XY'}.get(joint.axis, 'YZ'))[axis - 1]}{s}"
    return f"nudge {s}{'xyz'[axis]}"


def closed_loops(edges: Sequence[tuple[str, str | None, str]], drivable: set[str]) -> dict[str, str | None]:
    """``{joint: driver}`` for every joint on a closed loop of the body graph.

    ``edges`` are ``(joint, parent, child)`` (``None``: the world), fixed joints included. A joint is on a loop when
    its two bodies stay connected without it; loops that share a joint are one loop (a four-bar's four joints), loops
    that share only a body are not. Each loop has one driver: of its ``drivable`` joints, the one whose parent is
    nearest a base (the world, or a body that is no joint's child), then by path; ``None`` when none is drivable.
    Driving every joint of a loop at once over-constrains it (a four-bar has one degree of freedom): the others follow
    the driver."""
    graph: dict[str, list[tuple[str, str]]] = {}
    for joint, parent, child in edges:
        graph.setdefault(parent or "", []).append((joint, child))
        graph.setdefault(child, []).append((joint, parent or ""))

    def search(start: str, without: str | None = None) -> dict[str, tuple[str, str] | None]:
        """Breadth-first from ``start``: each node reached, with the joint and node it was reached from."""
        came: dict[str, tuple[str, str] | None] = {start: None}
        queue = [start]
        for node in queue:
            for joint, other in graph[node]:
                if joint != without and other not in came:
                    came[other] = (joint, node)
                    queue.append(other)
        return came

    loops: dict[str, set[str]] = {}  # each loop joint's cycle: itself and the shortest way round without it
    for joint, parent, child in edges:
        came = search(parent or "", without=joint)
        if child in came:
            cycle, node = {joint}, child
            while (step := came[node]) is not None:
                cycle.add(step[0])
                node = step[1]
            loops[joint] = cycle
    group = {j: j for j in loops}  # union-find: cycles that share a joint are one loop

    def find(j: str) -> str:
        while group[j] != j:
            j = group[j]
        return j

    for cycle in loops.values():
        first, *others = sorted(cycle & set(loops))
        for other in others:
            group[find(other)] = find(first)
    children = {c for _, _, c in edges}
    depth: dict[str, int] = {}
    for base in sorted(n for n in graph if n == "" or n not in children):
        came = search(base)
        for node in came:
            hops, at = 0, node
            while (step := came[at]) is not None:
                hops, at = hops + 1, step[1]
            depth[node] = min(hops, depth.get(node, hops))
    parents = {j: p or "" for j, p, _ in edges}
    out: dict[str, str | None] = {}
    for root in sorted({find(j) for j in loops}):
        members = sorted(j for j in loops if find(j) == root)
        driven = sorted((depth.get(parents[j], len(graph)), j) for j in members if j in drivable)
        out.update(dict.fromkeys(members, driven[0][1] if driven else None))
    return out


def _loop_note(loops: dict[str, str | None], held: set[str]) -> list[str]:
    drivers = sorted({d for d in loops.values() if d is not None})
    notes = []
    for driver in drivers:
        follow = sorted(p.rsplit("/", 1)[-1] for p, d in loops.items() if d == driver and p in held)
        if follow:
            notes.append(
                f"closed loop: {driver.rsplit('/', 1)[-1]} is driven first, {', '.join(follow)} follow it (driving "
                "every joint of a loop at once over-constrains it)"
            )
    return notes


# --- the test ------------------------------------------------------------------------------------------------------


def joint_movement(asset: str | Path, backend: str, *, duration: float = DURATION, scan: Any = None) -> MovementResult:
    """The joint_movement test of ``asset`` on ``backend`` (``"physx"`` or ``"newton"``): see the module docstring."""
    from transfer.backends import movement_probe
    from transfer.backends.probes import MovementCommand, MovementJoint, MovementPlan
    from transfer.profile import scan_joints

    asset = str(asset)
    scan = scan if scan is not None else scan_joints(asset)
    skip = _skip_reason(scan)
    if skip:
        return MovementResult(backend, "skip", skip)
    movable = [j for j in scan.joints if j.type != "fixed" and j.child is not None and j.enabled]
    pinned = _pinned(scan, movable)
    results = {j.path: JointResult(j.name, j.path, j.type, j.parent, j.child, diagonal=_diagonal(j)) for j in movable}
    by_path = {j.path: j for j in movable}
    probe_joints = [
        MovementJoint(j.path, j.type, j.parent, j.child, j.axis, j.frame0, j.frame1, j.extent) for j in movable
    ]
    probe = movement_probe(backend)
    out = MovementResult(backend, "fail", "", list(results.values()), pinned=pinned)

    def attempt(commands: list[tuple[str, str, int, float, int]], label: str, retry: int = 0) -> None:
        plan = MovementPlan(
            tuple(MovementCommand(p, kind, sign, speed, axis) for p, kind, sign, speed, axis in commands),
            pinned=pinned,
            duration=duration,
            acceleration=(ACCELERATION[0], ACCELERATION[1] * RETRY_GAIN**retry),
        )
        with _engine_records() as records:
            trace = probe(asset, probe_joints, plan)
        out.attempts.append(label)
        out.notes.extend(n for n in trace.notes if n not in out.notes)
        _collect_warnings(out, records)
        errors = list(dict.fromkeys(" ".join(r.getMessage().split()) for r in records if r.levelno >= logging.ERROR))
        if errors:  # the engine said its simulation went wrong: nothing it showed in this attempt counts
            more = f" (+{len(errors) - 1} more)" if len(errors) > 1 else ""
            out.problems.append(f"{backend} reported errors in attempt {len(out.attempts)}: {errors[0]}{more}")
        own = {p: _label(kind, sign, axis, by_path[p]) for p, kind, sign, _, axis in commands}
        for path, why in trace.skipped.items():
            results[path].skipped = why
        for path, poses in trace.poses.items():
            r, joint, coordinate = results[path], by_path[path], trace.coordinates.get(path)
            _score(out, r, joint, poses, coordinate, plan.dt, own.get(path, "passive"), bool(errors))

    candidates = {j.path: _candidates(j) for j in movable}
    others = [j for j in movable if j.type not in ("revolute", "prismatic", "spherical")]
    edges = [(j.path, j.parent, j.child) for j in scan.joints if j.child is not None and j.enabled]
    loops = closed_loops(edges, {p for p, c in candidates.items() if c})
    held = {p for p, driver in loops.items() if p != driver and p in candidates}  # they follow their loop's driver
    out.notes.extend(_loop_note(loops, held))
    try:
        for k in range(max((len(c) for c in candidates.values()), default=0)):
            commands = [(p, *c[k]) for p, c in candidates.items()
                        if len(c) > k and not results[p].moved and not (k == 0 and p in held)]  # fmt: skip
            if commands:
                attempt(commands, f"{'drives' if k == 0 else 'still-idle joints'}: " + ", ".join(
                    f"{by_path[p].name} {_label(kind, s, a, by_path[p])}" for p, kind, s, _, a in commands), min(k, 1))  # fmt: skip
        for sign, axis in _NUDGES if others and not any(r.moved for r in results.values()) else ():
            attempt([(j.path, "nudge", sign, NUDGE_SPEED, axis) for j in others], _label("nudge", sign, axis, None))
            if any(r.moved for r in results.values()) or all(results[j.path].skipped for j in others):
                break
    except (RuntimeError, ValueError, OSError) as exc:  # the engine refused or could not simulate the asset
        out.reason = _refusal(backend, exc)
        return out
    _verdict(out, movable, by_path)
    return out


def _score(
    out: MovementResult,
    r: JointResult,
    joint: Any,
    poses: Any,
    coordinate: Any,
    dt: float,
    commanded: str,
    errors: bool,
) -> None:
    """Score one joint's ``poses`` (one per step ``dt``) in one attempt into ``r``: its first problem (listed in
    ``out``) and, while it has not moved yet and the engine reported no ``errors``, how far it moved; when it moved,
    the command that moved it (``commanded``), its direction and travel, and whether the engine's own ``coordinate``
    confirms it."""
    poses = np.asarray(poses, dtype=np.float64)
    problem = _problem(poses, joint, dt, len(out.attempts))
    if problem and not r.problem:
        r.problem = problem
        out.problems.append(f"{joint.name}: {problem}")
    if r.moved or problem or errors:
        return
    times = np.arange(len(poses)) * dt
    rotation, metres, pct = track(poses, _diagonal(joint))
    r.rotation_deg, r.translation_pct = round(float(rotation.max()), 3), round(float(pct.max()), 3)
    r.moved = (r.rotation_deg >= ROTATION_DEG or r.translation_pct >= TRANSLATION_PCT) and _within_range(poses, joint)
    r.series = (times, rotation, pct)
    if r.moved:
        r.commanded = r.direction = commanded
        if joint.type in ("revolute", "prismatic"):
            signed = along_axis(poses, joint)
            peak = int(np.argmax(np.abs(signed)))
            r.displacement = round(float(signed[peak]), 4)
            r.direction = "+" if r.displacement > 0 else "-"
            r.against_command = commanded in ("+", "-") and r.direction != commanded
            r.reached = round(float(joint_coordinate(poses, joint)[peak]), 4)
            r.travel_fraction = _travel(joint, abs(r.displacement))
        if coordinate is not None and joint.type in ("revolute", "prismatic"):
            r.confirmed_by = _confirm(coordinate, rotation if joint.type == "revolute" else metres, joint)


def _refusal(backend: str, exc: Exception) -> str:
    """The reason of a joint_movement test whose engine refused or could not simulate the asset: the first three
    lines of ``exc``."""
    lines = str(exc).strip().splitlines() or [""]
    more = f" (+{len(lines) - 3} more lines; --verbose shows the engine output)" if len(lines) > 3 else ""
    return f"{backend} could not load or simulate the asset: {type(exc).__name__}: " + " ".join(lines[:3]) + more


@contextmanager
def _engine_records() -> Iterator[list[logging.LogRecord]]:
    """The log records (WARNING and up) the engines emit under :data:`ENGINE_LOGGER` for the duration."""
    records: list[logging.LogRecord] = []

    class _Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(record)

    handler = _Keep(logging.WARNING)
    logger = logging.getLogger(ENGINE_LOGGER)
    logger.addHandler(handler)
    try:
        yield records
    finally:
        logger.removeHandler(handler)


def _collect_warnings(out: MovementResult, records: list[logging.LogRecord]) -> None:
    counts: dict[str, int] = {}
    for record in records:
        text = " ".join(record.getMessage().split())
        counts[text] = counts.get(text, 0) + 1
    seen = {w.rsplit(" (x", 1)[0]: k for k, w in enumerate(out.warnings)}
    for text, n in counts.items():
        if text in seen:
            old = out.warnings[seen[text]]
            total = n + (int(old.rsplit(" (x", 1)[1][:-1]) if old.endswith(")") and " (x" in old else 1)
            out.warnings[seen[text]] = f"{text} (x{total})"
        elif len(out.warnings) < 50:
            out.warnings.append(text if n == 1 else f"{text} (x{n})")


def joint_coordinate(poses: np.ndarray, joint: Any) -> np.ndarray:
    """The joint's own coordinate at each sample, from the child-in-parent poses and the joint frames (``frame0``
    in the parent, ``frame1`` in the child): degrees about the axis (revolute, unwrapped) or stage units along it
    (prismatic), zero where the two joint frames coincide, as USD defines the joint's position."""
    f0, f1 = np.asarray(joint.frame0, dtype=np.float64), np.asarray(joint.frame1, dtype=np.float64)
    unit = np.eye(3)[{"X": 0, "Y": 1, "Z": 2}.get(joint.axis, 0)]
    q = poses[:, 3:] / np.linalg.norm(poses[:, 3:], axis=1, keepdims=True)
    if joint.type == "prismatic":
        origin = poses[:, :3] + rotate(q, f1[:3]) - f0[:3]  # the child's joint frame origin in the parent
        inverse = np.array([-f0[3], -f0[4], -f0[5], f0[6]])
        return rotate(np.broadcast_to(inverse, q.shape), origin) @ unit
    relative = quat_mul(quat_mul(quat_conj(f0[3:]), q), f1[3:])  # conj(frame0) * child * frame1
    twist = 2.0 * np.arctan2(relative[:, :3] @ unit, relative[:, 3])
    return np.degrees(np.unwrap(twist))


def _limits(joint: Any) -> tuple[float, float] | None:
    if joint.type not in ("revolute", "prismatic") or joint.lower is None or joint.upper is None:
        return None
    return (joint.lower, joint.upper) if joint.lower <= joint.upper else None


def _tolerance(joint: Any) -> float:
    return LIMIT_TOLERANCE_DEG if joint.type == "revolute" else LIMIT_TOLERANCE_PCT / 100.0 * _diagonal(joint)


def _problem(poses: np.ndarray, joint: Any, dt: float, attempt: int) -> str | None:
    """Why this trace of ``joint`` cannot count: a non-finite pose, or motion beyond its authored limits."""
    finite = np.isfinite(poses).all(axis=1)
    if not finite.all():
        step = int(np.argmin(finite))
        return f"non-finite pose from t = {step * dt:.3f} s (step {step} of attempt {attempt})"
    limits = _limits(joint)
    if limits is None:
        return None
    q = joint_coordinate(poses, joint)
    lower, upper = limits
    # Each side on its own: a joint authored below its lower limit may stay there, not go past the upper one.
    below, above = np.maximum(lower - q, 0.0), np.maximum(q - upper, 0.0)
    excess = np.maximum(below - below[0], above - above[0])
    tolerance = _tolerance(joint)
    if excess.max() <= tolerance:
        return None
    k = int(np.argmax(excess))
    unit = "deg" if joint.type == "revolute" else "stage units"
    start = f"; its first pose, {q[0]:.4g} {unit}, is outside them" if max(below[0], above[0]) > tolerance else ""
    return (
        f"moved beyond its authored limits in attempt {attempt}: reached {q[k]:.4g} {unit} at t = {k * dt:.3f} s, "
        f"limits [{lower:g}, {upper:g}] {unit} (tolerance {tolerance:.3g} {unit}){start}"
    )


def _within_range(poses: np.ndarray, joint: Any) -> bool:
    """Whether the motion inside the joint's authored range reaches the threshold (always, without limits): a joint
    pushed from outside its range onto it, or a locked one (lower = upper), has not moved."""
    limits = _limits(joint)
    if limits is None:
        return True
    span = float(np.ptp(np.clip(joint_coordinate(poses, joint), *limits)))
    if joint.type == "revolute":
        return span >= ROTATION_DEG
    return 100.0 * span / _diagonal(joint) >= TRANSLATION_PCT


def _confirm(coordinate: np.ndarray, measured: np.ndarray, joint: Any) -> str:
    """``"coordinate"`` when the engine's own coordinate of the joint moved as its child moved relative to its parent
    (sample by sample, up to 150 deg where the relative rotation angle wraps), else the mismatch."""
    moved = np.abs(coordinate - coordinate[0]).max(axis=1)
    keep = moved <= 150.0 if joint.type == "revolute" else np.ones_like(moved, dtype=bool)
    slack = 0.1 * measured[keep] + (0.5 if joint.type == "revolute" else 1e-3)
    worst = int(np.argmax(np.abs(moved[keep] - measured[keep]) - slack))
    if np.abs(moved[keep] - measured[keep])[worst] <= slack[worst]:
        return "coordinate"
    return f"mismatch: the engine's coordinate moved {moved[keep][worst]:.3g}, the child {measured[keep][worst]:.3g}"


def _travel(joint: Any, reached: float) -> float | None:
    if joint.lower is None or joint.upper is None or joint.upper <= joint.lower:
        return None
    return round(min(1.0, reached / (joint.upper - joint.lower)), 3)


def _verdict(out: MovementResult, movable: list[Any], by_path: dict[str, Any]) -> None:
    moved = [r for r in out.joints if r.moved]
    if out.problems:
        shown = "; ".join(out.problems[:3]) + (f"; +{len(out.problems) - 3} more" if len(out.problems) > 3 else "")
        out.status = "fail"
        out.reason = (
            f"{out.backend} went unstable or beyond the authored limits, so its motion does not count "
            f"({len(moved)} of {len(out.joints)} joints moved otherwise): {shown}"
        )
        return
    actuable = [r for r in out.joints if not r.skipped]
    if not actuable:
        out.status, out.reason = "skip", out.joints[0].skipped if out.joints else "nothing to move"
        return
    if moved:
        out.status = "pass"
        out.reason = (
            f"{len(moved)} of {len(out.joints)} joints moved (>= {ROTATION_DEG} deg or >= {TRANSLATION_PCT} % of "
            "the child's bounding-box diagonal)"
        )
        against = [f"{r.name} ({r.direction}, driven {r.commanded})" for r in moved if r.against_command]
        if against:
            shown = ", ".join(against[:6]) + (f", +{len(against) - 6} more" if len(against) > 6 else "")
            out.reason += f"; {len(against)} moved against their drive: {shown}"
        return
    types = {j.type for j in movable}
    tried = "drive degrees of freedom tried toward the open limits and in both directions"
    cause = "Joints are seized or have misconfigured limits that prevent any motion."
    if "prismatic" not in types:
        tried += "; only angular degrees of freedom tried, no linear"
        cause += " Revolute or spherical joints exist but are locked."
    if types - {"revolute", "prismatic"}:
        tried += "; external spherical driver or linear velocity nudge attempted"
        cause += " Joint limits may clamp the range to zero, or the connected bodies overlap."
    seized = [f"{j.name} (lower = upper = {j.lower:g})" for j in movable if j.lower is not None and j.lower == j.upper]
    if seized:
        cause += f" Locked by their limits: {', '.join(seized)}."
    out.reason = f"0 of {len(out.joints)} joints responded ({tried}). {cause}"


def same_child_bodies(results: dict[str, MovementResult]) -> tuple[bool | None, list[dict[str, Any]]]:
    """Whether every joint that moved on both engines moved the same child body relative to the same parent."""
    if len(results) < 2 or any(r.status != "pass" for r in results.values()):
        return None, []
    first, *rest = results.values()
    detail = []
    for r in first.joints:
        others = [next((o for o in res.joints if o.path == r.path), None) for res in rest]
        if not r.moved or not all(o is not None and o.moved for o in others):
            continue
        pairs = {(r.parent, r.child), *((o.parent, o.child) for o in others)}
        confirmed = [x.confirmed_by for x in (r, *others)]
        same = len(pairs) == 1 and not any(c.startswith("mismatch") for c in confirmed)
        detail.append({"joint": r.path, "parent": r.parent, "child": r.child, "same": same,
                       **{res.backend: c for res, c in zip(results.values(), confirmed, strict=True)}})  # fmt: skip
    return (all(d["same"] for d in detail) if detail else None), detail


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
        cells = [f"{res.backend} {x.reached:.4g}{unit} ({x.displacement:+.4g}, driven {x.commanded})"
                 for res, x in zip(results, rows, strict=True)]  # fmt: skip
        what = {"drives": "moved on different drives", "direction": "moved opposite ways", "reach": "reached apart"}
        found.append({
            "joint": r.path, "kind": kind,
            **{res.backend: {"commanded": x.commanded, "direction": x.direction, "displacement": x.displacement,
                             "reached": x.reached} for res, x in zip(results, rows, strict=True)},
            "line": f"{r.name} {what[kind]}: {', '.join(cells)}",
        })  # fmt: skip
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


def validate(
    asset: str | Path, backends: Sequence[str] | None = None, *, strict: bool = False, profile: bool = True
) -> ValidateReport:
    """joint_movement on each backend, ``same_child_bodies`` across them, and the robot profile findings.

    Raises :class:`ValidateInputError` for an empty stage (no rigid body, joint or geometry), naming the references
    that do not resolve when that is why."""
    from transfer.assets import resolve_asset
    from transfer.profile import profile_findings, scan_joints, stage_contents

    given, asset = str(asset), str(resolve_asset(asset))  # an MJCF/URDF file: its converted USD
    contents = stage_contents(asset)
    if contents.empty:
        missing = "".join(f"\n  - {e}" for e in contents.unresolved)
        why = (
            f" Its composition errors (references, payloads or sublayers that do not resolve) may be why:{missing}\n"
            "Make each listed asset path resolve (relative paths resolve against the layer that authors them)."
            if contents.unresolved
            else " Point validate at the robot's USD file (the one that defines or references its bodies and joints)."
        )
        raise ValidateInputError(
            f"{given}: the stage is empty: it defines no rigid body, joint or geometry ({contents.prims} prim(s))."
            + why
        )
    scan = scan_joints(asset)
    from transfer.backends import backend_names

    results = {b: joint_movement(asset, b, scan=scan) for b in (backend_names() if backends is None else backends)}
    same, detail = same_child_bodies(results)
    findings = profile_findings(asset) if profile else []
    return ValidateReport(given, results, same, detail, findings, strict, list(contents.unresolved))


def plot(report: ValidateReport, path: str | Path) -> Path:
    """Per joint, rotation (deg) and translation (% of the child's diagonal) over time, one row per backend."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

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
    out = Path(path)
    fig.savefig(out, dpi=100)
    plt.close(fig)
    return out
