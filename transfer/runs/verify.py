"""``transfer.verify(...)``: the transfer guide's troubleshooting checklist, automated.

Three checks of one checkpoint on one asset (:func:`verify` returns a :class:`VerifyReport`):

1. **Sizes and names** (:func:`check_sizes`, no engine): every joint the config names (its listed orders,
   the keys of its defaults and gains, the action's joints, an explicit ``--source`` list) exists on the asset,
   the config fits the asset, and the checkpoint's input and output sizes match the observation and action
   the config describes there. Each observation term's slice is reported.
2. **Same named state, same observation, same action**: a :class:`~transfer.env.PolicyEnv` on PhysX and one
   on Newton, both in the checkpoint's order. Several seeded random states (joint positions inside the limits,
   joint velocities, root poses with a small roll and pitch and any yaw, root velocities, commands, last
   actions) are written by name into both, without a physics step; the observations are compared term by
   term, each entry labelled by the joint the checkpoint reads there, between the backends and against the
   observation computed directly from the named state. The policy's actions are compared by the joint each
   drives. :data:`TOLERANCES` says how close is the same (float32).
3. **Trace** (``trace=SECONDS``): both run the policy closed-loop from the same standing state; the per-joint
   divergence (joint position difference by name) over time is reported (:class:`TraceResult`) and, with
   ``plot``, drawn (:func:`plot_trace`). Right order but drifting trajectories is a dynamics difference, and the
   verdict says so.

``ok`` is checks 1 and 2; the trace informs, it does not fail. The ``transfer verify`` command is a thin layer.
"""

from __future__ import annotations

import dataclasses
import math
import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

import numpy as np

from transfer.runs.replay import FALL_HEIGHT_FRACTION, Inputs, ReplayError, resolve_inputs

__all__ = [
    "ACTION_TOLERANCE",
    "BACKENDS",
    "DEFAULT_TOLERANCE",
    "DRIFT_THRESHOLD",
    "SAMPLING",
    "TOLERANCES",
    "Largest",
    "SizeCheck",
    "TermCheck",
    "TraceResult",
    "VerifyReport",
    "check_sizes",
    "plot_trace",
    "verify",
]

BACKENDS: tuple[str, str] = ("physx", "newton")

TOLERANCES: Mapping[str, float] = {
    "base_lin_vel": 1e-3,
    "base_ang_vel": 1e-3,
    "projected_gravity": 1e-4,
    "velocity_commands": 1e-6,
    "joint_pos_rel": 1e-4,
    "joint_vel_rel": 1e-4,
    "last_action": 1e-6,
}
"""Largest difference per observation entry that still counts as the same, in the term's units before its scale
(a scaled term's tolerance is multiplied by ``|scale|``). float32 holds ~7 digits, so a value of a few units
round-trips through an engine to ~1e-6: positions and gravity get 1e-4 (PhysX keeps joint angles in degrees);
base velocities 1e-3 (a world-frame COM velocity rotated into the base frame); terms the environment copies
(command, last action) 1e-6. Measured differences are ~1e-7 (docs/verify.md)."""

DEFAULT_TOLERANCE = 1e-4
"""For an observation term :data:`TOLERANCES` does not list."""

ACTION_TOLERANCE = 1e-3
"""Largest difference between the actions the policy gives for the two observations, per joint: the network
amplifies the observation's float32 noise (measured ~1e-6 for the ANYmal C policies); an order mix-up moves
actions by ~0.1-1."""

DRIFT_THRESHOLD = 0.1
"""rad (or m): a joint whose positions on the two backends differ by more has drifted apart (check 3)."""

SAMPLING: Mapping[str, float] = {
    "unlimited_joint": math.pi,
    "joint_vel": 3.0,
    "root_xy": 1.0,
    "root_z": 0.1,
    "roll_pitch": 0.3,
    "root_lin_vel": 1.0,
    "root_ang_vel": 1.0,
    "command": 1.0,
    "last_action": 1.0,
}
"""Half-widths of the uniform random states of check 2: joint positions inside ``[lower, upper]`` of both
backends (clamped to ``±unlimited_joint`` rad where unlimited); joint velocities ``±joint_vel`` rad/s; root x, y
``±root_xy`` m, z the spawn height ``±root_z`` m; roll and pitch ``±roll_pitch`` rad, yaw anywhere; root linear
and angular velocities ``±root_lin_vel`` m/s and ``±root_ang_vel`` rad/s per axis; command ``±command`` per
entry; last action ``±last_action``."""

COMPONENTS: Mapping[str, tuple[str, ...]] = {
    "base_lin_vel": ("x", "y", "z"),
    "base_ang_vel": ("x", "y", "z"),
    "projected_gravity": ("x", "y", "z"),
    "velocity_commands": ("vx", "vy", "wz"),
}
"""Entry labels of the observation terms that index no joint."""


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
    """physx vs newton."""
    expected: dict[str, Largest | None]
    """backend -> its largest difference from the named state."""
    ok: bool

    def to_dict(self) -> dict[str, Any]:
        return {
            "term": self.term, "axis": self.axis, "start": self.start, "stop": self.stop,
            "tolerance": self.tolerance, "ok": self.ok, "across": self.across.to_dict(),
            "expected": {b: None if v is None else v.to_dict() for b, v in self.expected.items()},
        }  # fmt: skip


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
            "seconds": self.seconds, "threshold": self.threshold, "diverges": self.diverges,
            "max_divergence": self.max_divergence, "joint": self.joint, "at": self.at, "first_over": self.first_over,
            "final": self.final, "base_offset": self.base_offset, "fell": dict(self.fell),
            "per_joint_max": {j: max(v) for j, v in self.divergence.items()},
        }  # fmt: skip
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

    @property
    def observation_ok(self) -> bool:
        return bool(self.terms) and all(t.ok for t in self.terms)

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
        return _finite({
            "ok": self.ok, "verdict": self.verdict, "checkpoint": self.checkpoint, "asset": self.asset,
            "source": self.source, "backends": list(self.backends), "samples": self.samples, "seed": self.seed,
            "largest": self.largest(), "sizes": self.sizes.to_dict(), "terms": [t.to_dict() for t in self.terms],
            "orders": self.orders, "trace": None if self.trace is None else self.trace.to_dict(series=series),
        })  # fmt: skip


def _finite(value: Any) -> Any:
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


# ---------------------------------------------------------------------------------------------------- check 1


def _unmatched(keys: Sequence[str], names: Sequence[str]) -> list[str]:
    """Keys that are neither a name in ``names`` nor a pattern full-matching one."""
    out = []
    for key in keys:
        if key in names:
            continue
        try:
            rx = re.compile(key)
        except re.error:
            out.append(key)
            continue
        if not any(rx.fullmatch(n) for n in names):
            out.append(key)
    return out


def _config_names(inputs: Inputs) -> list[str]:
    """Every joint name or pattern the config (and an explicit source list) names, each once, in order."""
    t = inputs.task
    names: list[str] = []
    for group in (
        t.joint_names or (),
        *t.joint_names_by_convention.values(),
        t.default_joint_pos, t.stiffness, t.damping, t.armature, t.effort_limit or {},
        t.action.joints or (),
        () if not isinstance(inputs.source, tuple) else inputs.source,
    ):  # fmt: skip
        names += [n for n in group if n not in names]
    return names


def check_sizes(inputs: Inputs) -> SizeCheck:
    """Check 1 on the asset alone (no engine): names, then the config expanded on the checkpoint's order, then
    the checkpoint's input/output sizes against the observation and action it describes."""
    from transfer.orders import OrderingError, resolve_ordering

    policy, task = inputs.policy, inputs.task
    physx = resolve_ordering(inputs.asset, "physx")
    asset_joints = list(physx.joints)
    missing = _unmatched(_config_names(inputs), asset_joints)
    problems: list[str] = []
    order: list[str] = []
    expanded = None
    if not missing:
        try:
            order = list(resolve_ordering(inputs.asset, inputs.source).joints)
            expanded = task.with_joint_names(order)
        except (OrderingError, ValueError) as exc:
            problems.append(str(exc))
    num_joints = len(order or asset_joints)
    terms: list[dict[str, Any]] = []
    obs_size = act_size = None
    try:
        slices = (expanded or task).term_slices(num_joints, len(physx.bodies))
        terms = [
            {"name": t.name, "axis": t.axis, "start": slices[t.name].start, "stop": slices[t.name].stop}
            for t in task.observation
        ]
        obs_size = max(s.stop for s in slices.values())
        act_size = (expanded or task).action_size(num_joints)
    except ValueError as exc:
        problems.append(str(exc))
    if obs_size is not None and (policy.input_size != obs_size or policy.output_size != act_size):
        listed = ", ".join(f"{t['name']} {t['stop'] - t['start']}" for t in terms)
        problems.append(
            f"{policy.path.name} reads {policy.input_size} observations and writes {policy.output_size} actions, but "
            f"the config on {inputs.asset.name} builds {obs_size} and drives {act_size} joints (terms: "
            f"{listed})"
        )
    action_joints = list(expanded.action.joints or order) if expanded is not None else []
    return SizeCheck(
        ok=not missing and not problems, input_size=policy.input_size, output_size=policy.output_size, observation_size=obs_size,
        action_size=act_size, terms=terms, missing_joints=missing, asset_joints=asset_joints, order=order,
        action_joints=action_joints, problems=problems,
    )  # fmt: skip


# ---------------------------------------------------------------------------------------------------- check 2


def _quat_xyzw(roll: np.ndarray, pitch: np.ndarray, yaw: np.ndarray) -> np.ndarray:
    cr, sr, cp, sp = np.cos(roll / 2), np.sin(roll / 2), np.cos(pitch / 2), np.sin(pitch / 2)
    cy, sy = np.cos(yaw / 2), np.sin(yaw / 2)
    x, y = sr * cp * cy - cr * sp * sy, cr * sp * cy + sr * cp * sy
    z, w = cr * cp * sy - sr * sp * cy, cr * cp * cy + sr * sp * sy
    return np.stack([x, y, z, w], axis=-1)


def _rotation(q: np.ndarray) -> np.ndarray:
    """``(n, 3, 3)`` body-to-world rotations of unit quaternions ``(n, 4)`` xyzw."""
    x, y, z, w = np.asarray(q, np.float64).T
    return np.stack([
        np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)], -1),
        np.stack([2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)], -1),
        np.stack([2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)], -1),
    ], axis=1)  # fmt: skip


@dataclass
class _States:
    """``n`` random named states (float32, as written)."""

    joint_pos: dict[str, np.ndarray]
    joint_vel: dict[str, np.ndarray]
    root_pose: np.ndarray
    root_velocity: np.ndarray
    command: np.ndarray
    last_action: dict[str, np.ndarray]


def _sample_states(envs: Mapping[str, Any], order: Sequence[str], action_joints: Sequence[str], n: int, seed: int):
    rng = np.random.default_rng(seed)
    s = SAMPLING
    lower, upper = {}, {}
    for env in envs.values():
        names, d = env.art.joint_names, env.art.data
        for name, lo, hi in zip(
            names, d.joint_pos_limit_lower.numpy()[0], d.joint_pos_limit_upper.numpy()[0], strict=True
        ):
            lower[name] = max(lower.get(name, -math.inf), float(lo))
            upper[name] = min(upper.get(name, math.inf), float(hi))
    f32 = lambda a: np.asarray(a, np.float32)  # noqa: E731
    joint_pos = {}
    for name in order:
        lo, hi = max(lower[name], -s["unlimited_joint"]), min(upper[name], s["unlimited_joint"])
        joint_pos[name] = f32(rng.uniform(lo, hi, n) if lo < hi else np.full(n, lo))
    joint_vel = {name: f32(rng.uniform(-s["joint_vel"], s["joint_vel"], n)) for name in order}
    spawn = next(iter(envs.values())).spawn_height
    rp = rng.uniform(-s["roll_pitch"], s["roll_pitch"], (n, 2))
    quat = _quat_xyzw(rp[:, 0], rp[:, 1], rng.uniform(-math.pi, math.pi, n))
    pos = np.column_stack(
        [rng.uniform(-s["root_xy"], s["root_xy"], (n, 2)), spawn + rng.uniform(-1, 1, n) * s["root_z"]]
    )
    lin, ang = s["root_lin_vel"], s["root_ang_vel"]
    vel = np.column_stack([rng.uniform(-lin, lin, (n, 3)), rng.uniform(-ang, ang, (n, 3))])
    command = rng.uniform(-s["command"], s["command"], (n, 3))
    last = {name: f32(rng.uniform(-s["last_action"], s["last_action"], n)) for name in action_joints}
    pose = f32(np.column_stack([pos, quat / np.linalg.norm(quat, axis=1, keepdims=True)]))
    return _States(joint_pos, joint_vel, pose, f32(vel), f32(command), last)


def _expected(task: Any, st: _States, order: Sequence[str], action_joints: Sequence[str], gravity) -> dict:
    """Each term's value computed from the named state (float64), in the checkpoint's order; clip and scale applied."""
    rot_t = np.transpose(_rotation(st.root_pose[:, 3:]), (0, 2, 1))
    to_body = lambda v: np.einsum("nij,nj->ni", rot_t, np.asarray(v, np.float64))  # noqa: E731
    default = np.array([task.default_joint_pos.get(n, 0.0) for n in order])
    raw = {
        "base_lin_vel": to_body(st.root_velocity[:, :3]),
        "base_ang_vel": to_body(st.root_velocity[:, 3:]),
        "projected_gravity": to_body(np.broadcast_to(np.asarray(gravity, np.float64), st.root_velocity[:, :3].shape)),
        "velocity_commands": st.command.astype(np.float64),
        "joint_pos_rel": np.column_stack([st.joint_pos[n] for n in order]).astype(np.float64) - default,
        "joint_vel_rel": np.column_stack([st.joint_vel[n] for n in order]).astype(np.float64),
        "last_action": np.column_stack([st.last_action[n] for n in action_joints]).astype(np.float64),
    }
    out = {}
    for term in task.observation:
        if term.name not in raw:
            continue
        value = raw[term.name]
        if term.clip is not None:
            value = np.clip(value, *term.clip)
        out[term.name] = value * term.scale
    return out


def _largest(diff: np.ndarray, labels: Sequence[str]) -> Largest:
    if diff.size == 0:
        return Largest(0.0, "", 0)
    k, j = np.unravel_index(int(np.nanargmax(np.where(np.isnan(diff), np.inf, diff))), diff.shape)
    value = float(diff[k, j])
    return Largest(value if not math.isnan(value) else math.inf, str(labels[j]), int(k))


def _labels(term: Any, order: Sequence[str], action_joints: Sequence[str], start: int, stop: int) -> list[str]:
    if term.name == "last_action":
        return list(action_joints)
    if term.axis == "joint":
        return list(order)
    return list(COMPONENTS.get(term.name, [str(i) for i in range(stop - start)]))


def _compare(
    envs: Mapping[str, Any], inputs: Inputs, sizes: SizeCheck, samples: int, seed: int, tolerances: Mapping[str, float]
) -> list[TermCheck]:
    policy = inputs.policy
    order, action_joints = sizes.order, sizes.action_joints
    task = inputs.task.with_joint_names(order)
    st = _sample_states(envs, order, action_joints, samples, seed)
    obs: dict[str, np.ndarray] = {}
    for b, env in envs.items():
        rows = []
        for k in range(samples):
            rows.append(env.write_state(
                {n: v[k] for n, v in st.joint_pos.items()}, {n: v[k] for n, v in st.joint_vel.items()},
                st.root_pose[k : k + 1], st.root_velocity[k : k + 1],
                last_action={n: v[k] for n, v in st.last_action.items()}, command=st.command[k],
            ).copy())  # fmt: skip
        obs[b] = np.concatenate(rows, axis=0)
    gravity = getattr(envs[BACKENDS[0]].art.backend, "gravity_dir", (0.0, 0.0, -1.0))
    expected = _expected(task, st, order, action_joints, gravity)
    checks = []
    (a, b), slices = BACKENDS, {t["name"]: (t["start"], t["stop"]) for t in sizes.terms}
    for term in task.observation:
        start, stop = slices[term.name]
        labels = _labels(term, order, action_joints, start, stop)
        tol = tolerances.get(term.name, DEFAULT_TOLERANCE) * (abs(term.scale) or 1.0)
        across = _largest(np.abs(obs[a][:, start:stop] - obs[b][:, start:stop]), labels)
        ref = expected.get(term.name)
        from_ref = {
            name: None if ref is None else _largest(np.abs(obs[name][:, start:stop] - ref), labels) for name in envs
        }
        ok = across.difference <= tol and all(v is None or v.difference <= tol for v in from_ref.values())
        checks.append(TermCheck(term.name, term.axis, start, stop, tol, across, from_ref, ok))
    # the actions, by the joint each one drives on its backend
    act_tol = tolerances.get("action", ACTION_TOLERANCE)
    ref_obs = np.zeros_like(obs[a], dtype=np.float32)
    for term in task.observation:
        start, stop = slices[term.name]
        ref_obs[:, start:stop] = expected.get(term.name, obs[a][:, start:stop])
    policy.reset()
    ref_act = np.asarray(policy(ref_obs), np.float64)
    by_name = {}
    for name, env in envs.items():
        policy.reset()
        act = np.asarray(policy(obs[name]), np.float64)
        driven = [env.art.joint_names[i] for i in env.action_ids]
        by_name[name] = np.column_stack([act[:, driven.index(j)] if j in driven else np.full(samples, np.nan)
                                         for j in action_joints])  # fmt: skip
    across = _largest(np.abs(by_name[a] - by_name[b]), action_joints)
    from_ref = {name: _largest(np.abs(v - ref_act), action_joints) for name, v in by_name.items()}
    ok = across.difference <= act_tol and all(v.difference <= act_tol for v in from_ref.values())
    checks.append(TermCheck("action", "joint", None, None, act_tol, across, from_ref, ok))
    return checks


# ---------------------------------------------------------------------------------------------------- check 3


def _trace(envs: Mapping[str, Any], policy: Any, order: Sequence[str], seconds: float, progress: Any) -> TraceResult:
    from tqdm import tqdm

    from transfer.env import FALL_TILT_COS

    q: dict[str, np.ndarray] = {}
    height: dict[str, list[float]] = {}
    xy: dict[str, np.ndarray] = {}
    fell: dict[str, float | None] = {}
    times: list[float] = []
    for name, env in envs.items():
        env.reset()  # the spawn pose and the default joint state (no noise: both start in the same state)
        policy.reset()
        idx = [env.art.joint_names.index(n) for n in order]
        steps = max(1, round(seconds / env.policy_dt))
        rows, heights, fell[name] = [], [], None
        obs = env.observe()
        stream = progress if hasattr(progress, "write") else sys.stderr
        bar = tqdm(range(steps + 1), desc=f"trace {name}", unit="step", file=stream, delay=2.0,
                   disable=progress is False)  # fmt: skip
        times = []
        for k in bar:
            if k:
                obs, _ = env.step(policy(obs))
            pos, _, _, _, g_b = env.root_state()
            rows.append(env.art.data.joint_pos.numpy()[0, idx].astype(np.float64))
            heights.append(float(pos[0, 2]))
            times.append(env.time)
            down = pos[0, 2] < FALL_HEIGHT_FRACTION * env.spawn_height or g_b[0, 2] > -FALL_TILT_COS
            if fell[name] is None and (down or not np.isfinite(pos).all()):
                fell[name] = env.time
        q[name], height[name], xy[name] = np.array(rows), heights, pos[0, :2].astype(np.float64)
    a, b = BACKENDS
    div = np.abs(q[a] - q[b])
    div = np.where(np.isnan(div), np.inf, div)
    worst = div.max(axis=1)
    k, j = np.unravel_index(int(np.argmax(div)), div.shape)
    over = np.flatnonzero(worst > DRIFT_THRESHOLD)
    return TraceResult(
        seconds=times[-1], threshold=DRIFT_THRESHOLD, joints=list(order), time=times,
        divergence={n: div[:, i].tolist() for i, n in enumerate(order)}, height=height,
        max_divergence=float(div[k, j]), joint=order[j], at=times[k],
        first_over=None if not over.size else times[over[0]], final=float(worst[-1]),
        base_offset=float(np.linalg.norm(xy[a] - xy[b])), fell=fell,
    )  # fmt: skip


# ---------------------------------------------------------------------------------------------------- verify


def _resolve(checkpoint, source, config, asset) -> tuple[Inputs, Exception | None]:
    """The inputs; when only the checkpoint's order is unknown, inputs good for check 1 (names need no order) and
    the error to raise if check 1 passes."""
    try:
        return resolve_inputs(checkpoint, source=source, config=config, asset=asset), None
    except ReplayError as exc:
        if source is not None:
            raise
        try:  # is the order the only thing missing? names can be checked in any order
            return resolve_inputs(checkpoint, source="physx", config=config, asset=asset), exc
        except Exception:
            raise exc from None


def _without_listed_order(task: Any) -> Any:
    return dataclasses.replace(task, joint_names=None, convention=None, joint_names_by_convention={})


def verify(
    checkpoint: str | Path,
    *,
    source: str | Sequence[str] | None = None,
    config: str | Path | None = None,
    asset: str | Path | None = None,
    samples: int = 8,
    seed: int = 0,
    trace: float = 0.0,
    plot: str | Path | None = None,
    tolerances: Mapping[str, float] | None = None,
    backend_orders: Mapping[str, Any] | None = None,
    progress: bool | TextIO = False,
    inputs: Inputs | None = None,
) -> VerifyReport:
    """Check ``checkpoint`` on ``asset`` on both backends (see the module docstring) and report.

    ``source``, ``config``, ``asset``: as :func:`transfer.replay` takes them. ``samples`` random named states
    (seeded by ``seed``) for check 2; ``trace`` seconds of closed-loop divergence (0: no trace) and ``plot`` a PNG
    of it. ``tolerances``: per-term overrides of :data:`TOLERANCES` (key ``action`` for the actions).
    ``backend_orders``: ``{backend: order}`` opens that backend in another order than the checkpoint's (a
    convention, a name list, or ``None`` for the engine's own): the control experiment that shows check 2 catches
    a wrong order. Raises ``ValueError`` / ``FileNotFoundError`` for inputs that do not fit together enough to
    check (no config, no order, a missing file); a failed check is ``ok=False`` in the report.
    """
    from transfer.env import PolicyEnv

    if samples < 1:
        raise ValueError(f"samples: expected at least one random state, got {samples}")
    if trace < 0 or not math.isfinite(trace):
        raise ValueError(f"trace: expected a duration in seconds (0: no trace), got {trace}")
    if plot is not None and trace <= 0:
        raise ValueError("plot: the plot draws the trace; give trace SECONDS too")
    pending = None
    if inputs is None:
        inputs, pending = _resolve(checkpoint, source, config, asset)
    tol = {**TOLERANCES, **dict(tolerances or {})}
    sizes = check_sizes(inputs)
    if pending is not None and sizes.ok:
        raise pending
    label = "unknown" if pending is not None else inputs.source_label
    common = dict(checkpoint=str(inputs.policy.path), asset=str(inputs.asset), source=label, backends=BACKENDS,
                  samples=samples, seed=seed, sizes=sizes)  # fmt: skip
    if not sizes.ok:
        return VerifyReport(ok=False, terms=[], orders={}, trace=None, verdict=_verdict(sizes, [], None), **common)
    _torch_threads()
    overrides = dict(backend_orders or {})
    envs: dict[str, Any] = {}
    try:
        for name in BACKENDS:
            ordering, task = inputs.source, inputs.task
            if name in overrides:
                ordering, task = overrides[name], _without_listed_order(task)
            envs[name] = PolicyEnv(task, inputs.asset, name, ordering, seed=seed, init_noise=0.0)
        commands = {name: env.command.copy() for name, env in envs.items()}
        terms = _compare(envs, inputs, sizes, samples, seed, tol)
        for name, env in envs.items():
            env.command[:] = commands[name]
        traced = _trace(envs, inputs.policy, sizes.order, trace, progress) if trace > 0 else None
        orders = {
            n: {"public": list(e.art.joint_names), "backend": list(e.art.backend_joint_names)} for n, e in envs.items()
        }
    finally:
        for env in envs.values():
            env.close()
    ok = all(t.ok for t in terms)
    verdict = _verdict(sizes, terms, traced, orders)
    report = VerifyReport(ok=ok, terms=terms, orders=orders, trace=traced, verdict=verdict, **common)
    if plot is not None and traced is not None:
        plot_trace(report, plot)
    return report


def _torch_threads() -> None:
    """One torch thread: the simulators need the other cores."""
    if "torch" in sys.modules:
        sys.modules["torch"].set_num_threads(1)


def _verdict(
    sizes: SizeCheck, terms: list[TermCheck], trace: TraceResult | None, orders: Mapping[str, Any] | None = None
) -> str:
    if not sizes.ok:
        found = list(sizes.problems)
        if sizes.missing_joints:
            found.insert(0, (
                f"the config names joints the asset does not have: {', '.join(sizes.missing_joints)} (the asset's "
                f"joints: {', '.join(sizes.asset_joints)}). Is this the checkpoint's robot and config?"
            ))  # fmt: skip
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
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

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
    out = Path(path)
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out
