"""``transfer validate``: the joint_movement test on each engine, the same-child check across engines, the profile.

The joint_movement test (``docs/validate.md``) certifies that an asset is genuinely articulated on an engine: at
least one joint produces measurable relative motion between its bodies.

1. Discovery, before any physics (:func:`transfer.robot.profile.scan_joints`): every joint's type, path, parent and child
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
from pathlib import Path
from typing import Any

import numpy as np

from transfer._rotations import quat_conj, quat_mul, rotate
from transfer.backends import movement_probe, probed_backends
from transfer.backends.probes import MovementCommand, MovementJoint, MovementPlan
from transfer.robot import Robot
from transfer.robot.profile import profile_findings, scan_joints, stage_contents
from transfer.runs.validate.loops import closed_loops, loop_note
from transfer.runs.validate.plot import plot
from transfer.runs.validate.results import (
    FALLBACK_DIAGONAL,
    REACH_FLOOR_DEG,
    REACH_FLOOR_PCT,
    REACH_FRACTION,
    ROTATION_DEG,
    TRANSLATION_PCT,
    JointResult,
    MovementResult,
    ValidateInputError,
    ValidateReport,
    compare_joints,
)

__all__ = [
    "REACH_FLOOR_DEG",
    "REACH_FLOOR_PCT",
    "REACH_FRACTION",
    "JointResult",
    "MovementResult",
    "ValidateInputError",
    "ValidateReport",
    "closed_loops",
    "compare_joints",
    "joint_coordinate",
    "joint_movement",
    "plot",
    "validate",
]

ANGULAR_SPEED = 45.0  # deg/s, the baseline
LINEAR_SPEED = 0.05  # m/s, the baseline
NUDGE_SPEED = 0.1  # stage units/s
DURATION = 2.0  # simulated seconds per attempt
ACCELERATION = (0.002, 0.05)  # m/s^2: the force-pair ramp of force-based probes (Newton), first attempt
RETRY_GAIN = 4.0  # the ramp's cap on attempts that retry still-idle joints (fewer joints loaded, a stronger push)
LIMIT_TOLERANCE_DEG = 5.0  # a revolute joint further than this beyond its authored limits fails the engine's verdict
LIMIT_TOLERANCE_PCT = 5.0  # prismatic: % of the child's bounding-box diagonal beyond its limits
ENGINE_LOGGER = "transfer.backends"  # the engines' warnings and errors (MuJoCo's, PhysX's) are logged under it
_NUDGES = [(s, a) for a in range(3) for s in (1, -1)]


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


# --- the test ------------------------------------------------------------------------------------------------------


def joint_movement(asset: str | Path, backend: str, *, duration: float = DURATION, scan: Any = None) -> MovementResult:
    """The joint_movement test of ``asset`` on ``backend`` (``"physx"`` or ``"newton"``): see the module docstring."""
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
    out.notes.extend(loop_note(loops, held))
    try:
        for k in range(max((len(c) for c in candidates.values()), default=0)):
            commands = [
                (p, *c[k])
                for p, c in candidates.items()
                if len(c) > k and not results[p].moved and not (k == 0 and p in held)
            ]
            if commands:
                attempt(
                    commands,
                    f"{'drives' if k == 0 else 'still-idle joints'}: "
                    + ", ".join(f"{by_path[p].name} {_label(kind, s, a, by_path[p])}" for p, kind, s, _, a in commands),
                    min(k, 1),
                )
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
        detail.append(
            {
                "joint": r.path,
                "parent": r.parent,
                "child": r.child,
                "same": same,
                **{res.backend: c for res, c in zip(results.values(), confirmed, strict=True)},
            }
        )
    return (all(d["same"] for d in detail) if detail else None), detail


def validate(
    asset: str | Path, backends: Sequence[str] | None = None, *, strict: bool = False, profile: bool = True
) -> ValidateReport:
    """joint_movement on each backend, ``same_child_bodies`` across them, and the robot profile findings.

    Raises :class:`ValidateInputError` for an empty stage (no rigid body, joint or geometry), naming the references
    that do not resolve when that is why."""

    given, asset = str(asset), str(Robot.of(asset).usd)  # an MJCF/URDF file: its converted USD
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

    results = {b: joint_movement(asset, b, scan=scan) for b in (probed_backends() if backends is None else backends)}
    same, detail = same_child_bodies(results)
    findings = profile_findings(asset) if profile else []
    return ValidateReport(given, results, same, detail, findings, strict, list(contents.unresolved))
