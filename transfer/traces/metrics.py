"""Control and gait metrics of one run, from its :class:`~transfer.traces.record.Recording`.

Every metric counts the samples after the warm-up (the first second, as the velocities do) of the envs standing at
that step. Per joint: ``tracking_error`` (RMS of target minus position, rad or m), ``effort_rms`` and
``effort_peak`` (N·m or N), ``saturation`` (fraction of samples at the effort limit), ``sign_changes`` (fraction of
policy steps at which the action's direction of change reverses: 1.0 is an action that zig-zags every step, a
smooth gait stays well below 0.5) and ``high_frequency`` (fraction of the action's variance above a quarter of the
policy rate, e.g. above 12.5 Hz at 50 Hz). Per foot: ``duty_factor`` (fraction of samples in contact),
``stride_period`` (s between touchdowns) and ``slip`` (:func:`slip`: the mean of the recorded ``foot_speed`` over
the policy steps that begin and end in contact, m/s; a touchdown or lift-off step does not count). ``summary`` holds
one number of each over joints and feet: means, except ``effort_peak`` (the largest) and ``saturation`` (the largest
of any joint). A metric with no sample is ``None``.

Slip is defined here once, for every engine, from the link poses every engine reports at the policy steps
(:func:`contact_point_speed`, which the recorder's ``foot_speed`` column is): the horizontal speed of the foot's
material point at its lowest point, i.e. of the sole where it touches the ground. Not the travel of "the lowest
point" from one step to the next: a flat foot's lowest point jumps between its sole's corners as the foot tilts by
a fraction of a degree (one foot length per policy step, ~13 m/s on H1-2), which read as slip (3.5 m/s on MuJoCo,
1.3 m/s on PhysX for the same gait). Not a body velocity either: engines report the COM's, at another point than
the link origin, and a rolling foot's centre moves while its contact point does not.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:  # the recorder imports contact_point_speed from here
    from transfer.traces.record import Recording

__all__ = ["METRICS", "contact_point_speed", "metrics", "slip", "tracking"]

WARMUP = 1.0
"""Seconds before samples count (:attr:`transfer.env.Measure.warmup`)."""
METRICS: dict[str, str] = {
    "tracking_error": "rad RMS",
    "effort_rms": "N·m",
    "effort_peak": "N·m",
    "saturation": "fraction",
    "sign_changes": "fraction",
    "high_frequency": "fraction",
    "duty_factor": "fraction",
    "stride_period": "s",
    "slip": "m/s",
}
"""Each metric and its unit (revolute joints; prismatic ones read m and N)."""


def _number(value: Any) -> float | None:
    value = float(value)
    return value if math.isfinite(value) else None


def _mean(values: np.ndarray) -> float:
    return float(values.mean()) if values.size else float("nan")


def _masked(values: np.ndarray, mask: np.ndarray, reduce: str) -> np.ndarray:
    """Per last-axis column, ``reduce`` (``rms``, ``mean``, ``peak``) of ``values`` ``(steps, envs, k)`` over the
    samples where ``mask`` ``(steps, envs)`` holds (nan where none does)."""
    m = mask[..., None]
    count = m.sum(axis=(0, 1))
    with np.errstate(invalid="ignore", divide="ignore"):
        if reduce == "peak":
            return np.where(count > 0, np.where(m, np.abs(values), 0.0).max(axis=(0, 1)), np.nan)
        x = np.where(m, values.astype(np.float64) ** (2 if reduce == "rms" else 1), 0.0).sum(axis=(0, 1)) / count
        return np.sqrt(x) if reduce == "rms" else x


def _smoothness(action: np.ndarray, steady: np.ndarray, policy_dt: float) -> tuple[np.ndarray, np.ndarray]:
    """Per action joint: the fraction of direction reversals and of variance above a quarter of the policy rate,
    over the envs that stood through the whole measured window (``steady``)."""
    k = action.shape[-1]
    if action.shape[0] < 8 or not steady.any():
        return np.full(k, np.nan), np.full(k, np.nan)
    a = action[:, steady].astype(np.float64)  # (steps, envs, k)
    delta = np.diff(a, axis=0)
    flips = (delta[1:] * delta[:-1]) < 0
    moving = (delta[1:] != 0) & (delta[:-1] != 0)
    with np.errstate(invalid="ignore", divide="ignore"):
        sign_changes = flips.sum(axis=(0, 1)) / np.maximum(moving.sum(axis=(0, 1)), 1)
        spectrum = np.abs(np.fft.rfft(a - a.mean(axis=0), axis=0)) ** 2
        freqs = np.fft.rfftfreq(a.shape[0], d=policy_dt)
        high = spectrum[freqs > 0.25 / policy_dt].sum(axis=(0, 1))
        total = spectrum[1:].sum(axis=(0, 1))
        fraction = np.where(total > 0, high / np.where(total > 0, total, 1), 0.0)
    return sign_changes, fraction


def contact_point_speed(
    before: tuple[np.ndarray, np.ndarray], after: tuple[np.ndarray, np.ndarray], point: np.ndarray, dt: float
) -> np.ndarray:
    """Horizontal speed (m/s) of the material point of a rigid body that is at world position ``point`` ``(..., 3)``
    when the body is at pose ``after`` (``(position (..., 3), rotation matrix (..., 3, 3))``, world frame): its
    horizontal travel since the body was at pose ``before``, over ``dt``. With ``point`` the foot's lowest point, the
    foot's slip: a foot that slides at v gives v, one that rolls or pivots about its contact point gives ~0 (to second
    order in the rotation per step), and which of a flat sole's equally low corners is the lowest does not matter
    to a sole that does not turn."""
    (pos0, rot0), (pos1, rot1) = before, after
    pos0, rot0, pos1, rot1, point = (np.asarray(x, np.float64) for x in (pos0, rot0, pos1, rot1, point))
    local = np.einsum("...ji,...j->...i", rot1, point - pos1)  # the point in the body's frame
    then = pos0 + np.einsum("...ij,...j->...i", rot0, local)  # where it was at the pose before
    travel = point[..., :2] - then[..., :2]
    return np.hypot(travel[..., 0], travel[..., 1]) / dt


def slip(foot_speed: np.ndarray, contact: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Per foot, the mean ``foot_speed`` ``(steps, envs, feet)`` (each step's speed over the step that ends there)
    over the steps that begin and end in ``contact`` ``(steps, envs, feet)`` and end where ``mask`` ``(steps,
    envs)`` holds; nan for a foot with no such step. A touchdown or lift-off step does not count, nor a foot in the
    air, however fast it moves."""
    both = contact[1:] & contact[:-1] & mask[1:, :, None]
    return np.asarray([_mean(foot_speed[1:, :, j][both[..., j]]) for j in range(contact.shape[-1])])


def _strides(contact: np.ndarray, steady: np.ndarray, policy_dt: float) -> np.ndarray:
    """Per foot, the mean time between touchdowns (contact rising edges) over the steady envs."""
    out = []
    for j in range(contact.shape[-1]):
        gaps = []
        for e in np.flatnonzero(steady):
            c = contact[:, e, j]
            downs = np.flatnonzero(c[1:] & ~c[:-1])
            gaps.extend(np.diff(downs))
        out.append(float(np.mean(gaps)) * policy_dt if gaps else np.nan)
    return np.asarray(out)


def metrics(rec: Recording, warmup: float = WARMUP) -> dict[str, Any]:
    """``{"joints": {name: {...}}, "feet": {name: {...}}, "summary": {...}}`` (see the module's text)."""
    a = rec.arrays
    window = rec.time > warmup
    mask = a["alive"] & window[:, None]
    steady = a["alive"][window].all(axis=0) if window.any() else np.zeros(a["alive"].shape[1], bool)
    action_ids = [rec.joint_names.index(n) for n in rec.action_names]
    per_joint = {
        "tracking_error": _masked(a["target"] - a["position"], mask, "rms"),
        "effort_rms": _masked(a["effort"], mask, "rms"),
        "effort_peak": _masked(a["effort"], mask, "peak"),
        "saturation": _masked(a["saturated"].astype(np.float32), mask, "mean"),
    }
    sign_changes, high = _smoothness(a["action"][window], steady, rec.policy_dt)
    per_action = {"sign_changes": sign_changes, "high_frequency": high}
    contact = a["contact"]
    per_foot = {
        "duty_factor": _masked(contact.astype(np.float32), mask, "mean"),
        "stride_period": _strides(contact[window], steady, rec.policy_dt),
        "slip": slip(a["foot_speed"], contact, mask),
    }
    joints: dict[str, dict[str, float | None]] = {}
    for i, name in enumerate(rec.joint_names):
        row = {key: _number(v[i]) for key, v in per_joint.items()}
        if i in action_ids:
            row.update({key: _number(v[action_ids.index(i)]) for key, v in per_action.items()})
        joints[name] = row
    feet = {name: {key: _number(v[j]) for key, v in per_foot.items()} for j, name in enumerate(rec.foot_names)}
    out = {"joints": joints, "feet": feet, "summary": _summary(joints, feet)}
    if "tracking" in a:
        out["tracking"] = tracking(a["tracking"], a["alive"])
    return out


def tracking(errors: np.ndarray, alive: np.ndarray) -> dict[str, float | None]:
    """A tracker's summary from its recorded ``errors`` ``(steps, envs, 3)`` (joint position error rad, anchor
    orientation error deg, body position error m) and ``alive`` ``(steps, envs)``: each error's mean over the steps
    each env stood (the whole clip counts: a tracker has no warm-up), and ``completed``, the share of envs standing at
    the last step."""
    means = [_mean(errors[..., i][alive]) for i in range(errors.shape[-1])]
    return {
        "joint_pos_error": _number(means[0]),
        "anchor_ori_error": _number(means[1]),
        "body_pos_error": _number(means[2]) if len(means) > 2 else None,
        "completed": float(alive[-1].mean()) if len(alive) else None,
    }


def _summary(joints: dict[str, dict], feet: dict[str, dict]) -> dict[str, float | None]:
    out: dict[str, float | None] = {}
    for key in METRICS:
        values = [row[key] for row in (*joints.values(), *feet.values()) if row.get(key) is not None]
        if not values:
            out[key] = None
        elif key in ("effort_peak", "saturation"):
            out[key] = max(values)
        else:
            out[key] = float(np.mean(values))
    return out
