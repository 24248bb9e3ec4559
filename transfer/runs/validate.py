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
3. Attempts run through each engine's probe (:func:`transfer.backends.base.movement_probe`): directed joints toward
   their open end and undirected ones positive, then the still-idle ones negative, then the spherical swings; on
   PhysX the six-direction velocity nudge for D6 and other joints when nothing moved.
4. The tracker turns each probe's child-in-parent poses into the rotation angle of the relative quaternion and the
   translation as % of the child's bounding-box diagonal. A joint moved at >= 1.0 deg or >= 2.0 %; the test passes
   when one joint moved. The travel fraction is reported, not gated.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["JointResult", "MovementResult", "ValidateReport", "joint_movement", "plot", "validate"]

ROTATION_DEG = 1.0
TRANSLATION_PCT = 2.0
ANGULAR_SPEED = 45.0  # deg/s, the baseline
LINEAR_SPEED = 0.05  # m/s, the baseline
NUDGE_SPEED = 0.1  # stage units/s
DURATION = 2.0  # simulated seconds per attempt
ACCELERATION = (0.002, 0.05)  # m/s^2: the force-pair ramp of force-based probes (Newton), first attempt
RETRY_GAIN = 4.0  # the ramp's cap on attempts that retry still-idle joints (fewer joints loaded, a stronger push)
FALLBACK_DIAGONAL = 0.1  # m: the translation reference of a child without geometry
_NUDGES = [(s, a) for a in range(3) for s in (1, -1)]


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
    confirmed_by: str = "relationships"
    """``"coordinate"`` when the engine's own coordinate of this joint moved with its child (see same_child_bodies)."""
    skipped: str | None = None
    series: tuple[Any, ...] = field(default=(), repr=False)

    def to_dict(self) -> dict[str, Any]:
        keys = ("name", "path", "type", "parent", "child", "moved", "rotation_deg", "translation_pct")
        out = {k: getattr(self, k) for k in keys}
        out.update(travel_fraction=self.travel_fraction, direction=self.direction, displacement=self.displacement)
        out.update(commanded=self.commanded, confirmed_by=self.confirmed_by)
        if self.skipped:
            out["skipped"] = self.skipped
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

    def to_dict(self) -> dict[str, Any]:
        return {
            "status": self.status, "reason": self.reason, "joints": [j.to_dict() for j in self.joints],
            "attempts": self.attempts, "pinned": list(self.pinned), "notes": self.notes,
        }  # fmt: skip


@dataclass
class ValidateReport:
    asset: str
    joint_movement: dict[str, MovementResult]
    same_child_bodies: bool | None
    same_child_detail: list[dict[str, Any]]
    profile: list[Any]
    strict: bool = False

    @property
    def exit_code(self) -> int:
        failed = any(r.status == "fail" for r in self.joint_movement.values())
        return 1 if failed or (self.strict and self.profile) else 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "asset": self.asset,
            "joint_movement": {name: r.to_dict() for name, r in self.joint_movement.items()},
            "same_child_bodies": self.same_child_bodies,
            "same_child_detail": self.same_child_detail,
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


# --- the test ------------------------------------------------------------------------------------------------------


def joint_movement(asset: str | Path, backend: str, *, duration: float = DURATION, scan: Any = None) -> MovementResult:
    """The joint_movement test of ``asset`` on ``backend`` (``"physx"`` or ``"newton"``): see the module docstring."""
    from transfer.backends.base import MovementCommand, MovementJoint, MovementPlan, movement_probe
    from transfer.profile import scan_joints

    asset = str(asset)
    scan = scan if scan is not None else scan_joints(asset)
    skip = _skip_reason(scan)
    if skip:
        return MovementResult(backend, "skip", skip)
    movable = [j for j in scan.joints if j.type != "fixed" and j.child is not None and j.enabled]
    pinned = _pinned(scan, movable)
    results = {j.path: JointResult(j.name, j.path, j.type, j.parent, j.child) for j in movable}
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
        trace = probe(asset, probe_joints, plan)
        out.attempts.append(label)
        out.notes.extend(n for n in trace.notes if n not in out.notes)
        own = {p: _label(kind, sign, axis, by_path[p]) for p, kind, sign, _, axis in commands}
        for path, why in trace.skipped.items():
            results[path].skipped = why
        times = np.arange(len(next(iter(trace.poses.values()), []))) * plan.dt
        for path, poses in trace.poses.items():
            r, joint = results[path], by_path[path]
            if r.moved:
                continue
            rotation, metres, pct = track(poses, _diagonal(joint))
            r.rotation_deg, r.translation_pct = round(float(rotation.max()), 3), round(float(pct.max()), 3)
            r.moved = r.rotation_deg >= ROTATION_DEG or r.translation_pct >= TRANSLATION_PCT
            r.series = (times, rotation, pct)
            if r.moved:
                r.commanded = r.direction = own.get(path, "passive")
                if joint.type in ("revolute", "prismatic"):
                    signed = along_axis(poses, joint)
                    r.displacement = round(float(signed[np.argmax(np.abs(signed))]), 4)
                    r.direction = "+" if r.displacement > 0 else "-"
                    r.travel_fraction = _travel(joint, abs(r.displacement))
                coordinate = trace.coordinates.get(path)
                if coordinate is not None and joint.type in ("revolute", "prismatic"):
                    r.confirmed_by = _confirm(coordinate, rotation if joint.type == "revolute" else metres, joint)

    candidates = {j.path: _candidates(j) for j in movable}
    others = [j for j in movable if j.type not in ("revolute", "prismatic", "spherical")]
    try:
        for k in range(max((len(c) for c in candidates.values()), default=0)):
            commands = [(p, *c[k]) for p, c in candidates.items() if len(c) > k and not results[p].moved]
            if commands:
                attempt(commands, f"{'drives' if k == 0 else 'still-idle joints'}: " + ", ".join(
                    f"{by_path[p].name} {_label(kind, s, a, by_path[p])}" for p, kind, s, _, a in commands), min(k, 1))  # fmt: skip
        for sign, axis in _NUDGES if others and not any(r.moved for r in results.values()) else ():
            attempt([(j.path, "nudge", sign, NUDGE_SPEED, axis) for j in others], _label("nudge", sign, axis, None))
            if any(r.moved for r in results.values()) or all(results[j.path].skipped for j in others):
                break
    except (RuntimeError, ValueError, OSError) as exc:  # the engine refused or could not simulate the asset
        lines = str(exc).strip().splitlines() or [""]
        more = f" (+{len(lines) - 3} more lines; --verbose shows the engine output)" if len(lines) > 3 else ""
        out.reason = (
            f"{backend} could not load or simulate the asset: {type(exc).__name__}: " + " ".join(lines[:3]) + more
        )
        return out
    _verdict(out, movable, by_path)
    return out


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


def validate(
    asset: str | Path, backends: Sequence[str] = ("physx", "newton"), *, strict: bool = False, profile: bool = True
) -> ValidateReport:
    """joint_movement on each backend, ``same_child_bodies`` across them, and the robot profile findings."""
    from transfer.profile import profile_findings, scan_joints

    asset = str(asset)
    scan = scan_joints(asset)
    results = {b: joint_movement(asset, b, scan=scan) for b in backends}
    same, detail = same_child_bodies(results)
    findings = profile_findings(asset) if profile else []
    return ValidateReport(asset, results, same, detail, findings, strict)


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
