"""Checks 1 and 2 of :func:`transfer.verify`: sizes and names on the asset alone (:func:`check_sizes`), and the
same named state written into both backends giving the same observation and action (:func:`_compare`), with the
tolerances and sampling ranges they use.

The expected observation is computed here a second time, independently of the environment's builders
(:data:`transfer.task.terms.OBS_TERMS`), from the named state written: a check of the builders, not a copy of them.
Tolerances and entry labels come from that table."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from transfer._patterns import PatternError, full_matches
from transfer._rotations import quat_conj, quat_from_rpy, quat_mul, rotation_matrices
from transfer.backends import backend_names, reference_body_poses
from transfer.orders import OrderingError
from transfer.runs.inputs import Inputs
from transfer.runs.verify.report import Largest, SizeCheck, TermCheck
from transfer.task.terms import OBS_TERMS

BACKENDS: tuple[str, ...] = backend_names()[:2]
"""The two engines verify holds against each other: the first two registered."""

TOLERANCES: Mapping[str, float] = {name: term.tolerance for name, term in OBS_TERMS.items()}
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
    n: t.components for n, t in OBS_TERMS.items() if t.components and t.axis != "joint"
}
"""Entry labels of the observation terms that index no joint."""


# ---------------------------------------------------------------------------------------------------- check 1


def _unmatched(keys: Sequence[str], names: Sequence[str]) -> list[str]:
    """Keys that are neither a name in ``names`` nor a pattern full-matching one."""
    out = []
    for key in keys:
        if key in names:
            continue
        try:
            if not full_matches(key, names, "pattern"):
                out.append(key)
        except PatternError:
            out.append(key)
    return out


def _config_names(inputs: Inputs) -> list[str]:
    """Every joint name or pattern the config (and an explicit source list) names, each once, in order."""
    t = inputs.task
    names: list[str] = []
    for group in (
        t.joint_names or (),
        *t.joint_names_by_convention.values(),
        t.default_joint_pos,
        t.stiffness,
        t.damping,
        t.armature,
        t.effort_limit or {},
        t.action.joints or (),
        () if not isinstance(inputs.source, tuple) else inputs.source,
    ):
        names += [n for n in group if n not in names]
    return names


def size_mismatch(policy: Any, robot: str, observation_size: int, action_size: int, terms: dict[str, int]) -> str:
    """The sentence for a checkpoint whose sizes are not the task's on the robot (verify's check 1, replay's refusal)."""
    listed = ", ".join(f"{name} {size}" for name, size in terms.items())
    return (
        f"{policy.path.name} reads {policy.input_size} observations and writes {policy.output_size} actions, but "
        f"the task on {robot} builds {observation_size} and drives {action_size} joints (terms: {listed})"
    )


def check_sizes(inputs: Inputs) -> SizeCheck:
    """Check 1 on the asset alone (no engine): names, then the config expanded on the checkpoint's order, then
    the checkpoint's input/output sizes against the observation and action it describes."""

    policy, task = inputs.policy, inputs.task
    members = inputs.robot.members()  # every joint and body, in some order
    asset_joints = list(members.joints)
    missing = _unmatched(_config_names(inputs), asset_joints)
    problems: list[str] = []
    order: list[str] = []
    expanded = None
    if not missing:
        try:
            order = list(inputs.robot.order(inputs.source).joints)
            expanded = task.with_joint_names(order)
        except (OrderingError, ValueError) as exc:
            problems.append(str(exc))
    num_joints = len(order or asset_joints)
    terms: list[dict[str, Any]] = []
    obs_size = act_size = None
    try:
        slices = (expanded or task).term_slices(num_joints, len(members.bodies))
        terms = [
            {"name": t.name, "axis": t.axis, "start": slices[t.name].start, "stop": slices[t.name].stop}
            for t in task.observation
        ]
        obs_size = max(s.stop for s in slices.values())
        act_size = (expanded or task).action_size(num_joints)
    except ValueError as exc:
        problems.append(str(exc))
    if obs_size is not None and (policy.input_size != obs_size or policy.output_size != act_size):
        listed = {t["name"]: t["stop"] - t["start"] for t in terms}
        problems.append(size_mismatch(policy, inputs.asset_given.name, obs_size, act_size, listed))
    action_joints = list(expanded.action.joints or order) if expanded is not None else []
    return SizeCheck(
        ok=not missing and not problems,
        input_size=policy.input_size,
        output_size=policy.output_size,
        observation_size=obs_size,
        action_size=act_size,
        terms=terms,
        missing_joints=missing,
        asset_joints=asset_joints,
        order=order,
        action_joints=action_joints,
        problems=problems,
    )


# ---------------------------------------------------------------------------------------------------- check 2


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
    quat = quat_from_rpy(rp[:, 0], rp[:, 1], rng.uniform(-math.pi, math.pi, n))
    pos = np.column_stack(
        [rng.uniform(-s["root_xy"], s["root_xy"], (n, 2)), spawn + rng.uniform(-1, 1, n) * s["root_z"]]
    )
    lin, ang = s["root_lin_vel"], s["root_ang_vel"]
    vel = np.column_stack([rng.uniform(-lin, lin, (n, 3)), rng.uniform(-ang, ang, (n, 3))])
    command = rng.uniform(-s["command"], s["command"], (n, 3))
    last = {name: f32(rng.uniform(-s["last_action"], s["last_action"], n)) for name in action_joints}
    pose = f32(np.column_stack([pos, quat / np.linalg.norm(quat, axis=1, keepdims=True)]))
    return _States(joint_pos, joint_vel, pose, f32(vel), f32(command), last)


def _joint_block(values: Mapping[str, np.ndarray], names: Sequence[str]) -> np.ndarray:
    return np.column_stack([values[n] for n in names]).astype(np.float64)


REFERENCES: Mapping[str, Any] = {
    "base_lin_vel": lambda r: r.to_body(r.st.root_velocity[:, :3]),
    "base_link_lin_vel": lambda r: (
        r.to_body(r.st.root_velocity[:, :3]) - np.cross(r.to_body(r.st.root_velocity[:, 3:]), r.com)
    ),
    "base_ang_vel": lambda r: r.to_body(r.st.root_velocity[:, 3:]),
    "projected_gravity": lambda r: r.to_body(
        np.broadcast_to(np.asarray(r.gravity, np.float64), (len(r.st.command), 3))
    ),
    "velocity_commands": lambda r: r.st.command.astype(np.float64),
    "joint_pos_rel": lambda r: _joint_block(r.st.joint_pos, r.order) - r.default,
    "joint_vel_rel": lambda r: _joint_block(r.st.joint_vel, r.order),
    "last_action": lambda r: _joint_block(r.st.last_action, r.action_joints),
    "joint_pos": lambda r: _joint_block(r.st.joint_pos, r.order),
    "joint_vel": lambda r: _joint_block(r.st.joint_vel, r.order),
    "gait_phase": lambda r: np.column_stack(
        [
            np.sin(2 * math.pi * (r.time / r.params["period"] + r.params["offset"])),
            np.cos(2 * math.pi * (r.time / r.params["period"] + r.params["offset"])),
        ]
    ),
    "motion_command": lambda r: r.motion["motion_command"],
    "motion_anchor_ori_b": lambda r: r.motion["motion_anchor_ori_b"],
    "motion_anchor_pos_b": lambda r: r.motion["motion_anchor_pos_b"],
}
"""Verify's own derivation of every observation term from the named state written (independent of the builders of
:data:`~transfer.task.terms.OBS_TERMS`; a test holds the two tables to the same names)."""


@dataclass
class _Reference:
    """What a reference reads: the named states, the orders, the defaults, gravity, the episode time, the params."""

    st: _States
    order: Sequence[str]
    action_joints: Sequence[str]
    default: np.ndarray
    gravity: Any
    time: np.ndarray
    rot_t: np.ndarray
    params: Mapping[str, float]
    com: np.ndarray
    """The root's centre of mass in its frame (what the written COM velocity is turned into the frame's with)."""
    motion: Mapping[str, np.ndarray]
    """A tracker's motion terms re-derived from the clip and the written states (:func:`_motion_terms`), else empty."""

    def to_body(self, v: Any) -> np.ndarray:
        return np.einsum("nij,nj->ni", self.rot_t, np.asarray(v, np.float64))


def _expected(
    task: Any,
    st: _States,
    order: Sequence[str],
    action_joints: Sequence[str],
    gravity,
    time: float = 0.0,
    com: Any = (0.0, 0.0, 0.0),
    motion: Mapping[str, Any] | None = None,
) -> dict:
    """Each term's value computed from the named state (float64), in the checkpoint's order; clip, scale and history
    applied (a written state fills a term's whole history with its value)."""
    rot_t = np.transpose(rotation_matrices(st.root_pose[:, 3:]), (0, 2, 1))
    default = np.array([task.default_joint_pos.get(n, 0.0) for n in order])
    times = np.full(len(st.command), float(time))
    out = {}
    for term in task.observation:
        reference = REFERENCES.get(term.name)
        if reference is None:
            raise ValueError(f"verify has no reference for the observation term {term.name!r}: add one to REFERENCES")
        value = reference(
            _Reference(
                st,
                order,
                action_joints,
                default,
                gravity,
                times,
                rot_t,
                term.params,
                np.asarray(com, np.float64),
                motion or {},
            )
        )
        if term.clip is not None:
            value = np.clip(value, *term.clip)
        out[term.name] = np.tile(value * np.asarray(term.scale, np.float64), (1, term.steps))
    return out


def _largest(diff: np.ndarray, labels: Sequence[str]) -> Largest:
    if diff.size == 0:
        return Largest(0.0, "", 0)
    k, j = np.unravel_index(int(np.nanargmax(np.where(np.isnan(diff), np.inf, diff))), diff.shape)
    value = float(diff[k, j])
    return Largest(value if not math.isnan(value) else math.inf, str(labels[j]), int(k))


def _labels(term: Any, order: Sequence[str], action_joints: Sequence[str], start: int, stop: int) -> list[str]:
    if term.name == "last_action":
        labels = list(action_joints)
    elif term.axis == "joint":
        parts = OBS_TERMS[term.name].components or ("",)
        labels = [f"{name} {part}".strip() for part in parts for name in order]
    else:
        labels = list(COMPONENTS.get(term.name, [str(i) for i in range((stop - start) // term.steps)]))
    if term.steps == 1:
        return labels
    return [f"{label} (t-{k})" if k else f"{label} (t)" for k in range(term.steps - 1, -1, -1) for label in labels]


def _motion_terms(env: Any, motion: Any, st: _States, order: Sequence[str], asset: Any) -> dict[str, np.ndarray]:
    """A tracker's motion terms for the written states, re-derived here: the clip put on the policy's clock in the
    checkpoint's order, the frame mjlab's count gives (observation k reads frame k + 1), the reference anchor's and
    the robot anchor's poses by forward kinematics of the robot's file (the robot's from the named state written,
    not from an engine)."""

    if motion is None:
        return {}
    tracking, n = env.tracking, len(st.command)
    clip = motion.resampled(env.policy_dt)
    frame = min(int(env.episode_steps[0]) + 1, clip.frames - 1)
    public = clip.in_order(order)
    command = np.concatenate([public.joint_pos[frame], public.joint_vel[frame]])
    anchor = [tracking.anchor]
    sl = slice(frame, frame + 1)
    ref_pos, ref_quat = reference_body_poses(
        asset, clip.root_pos[sl], clip.root_quat[sl], clip.joint_names, clip.joint_pos[sl], anchor
    )
    pose = st.root_pose.astype(np.float64)
    pos, quat = reference_body_poses(asset, pose[:, :3], pose[:, 3:], order, _joint_block(st.joint_pos, order), anchor)
    relative = rotation_matrices(quat_mul(quat_conj(quat[:, 0]), np.tile(ref_quat[0, 0], (n, 1))))
    offset = ref_pos[0, 0] + np.asarray(tracking.origins, np.float64).reshape(-1, 3)[0] - pos[:, 0]
    return {
        "motion_command": np.tile(command, (n, 1)),
        "motion_anchor_ori_b": relative[..., :2].reshape(n, 6),
        "motion_anchor_pos_b": np.einsum("nji,nj->ni", rotation_matrices(quat[:, 0]), offset),
    }


def _compare(
    envs: Mapping[str, Any],
    inputs: Inputs,
    sizes: SizeCheck,
    samples: int,
    seed: int,
    tolerances: Mapping[str, float],
    motion: Any = None,
) -> list[TermCheck]:
    policy = inputs.policy
    order, action_joints = sizes.order, sizes.action_joints
    task = inputs.task.with_joint_names(order)
    st = _sample_states(envs, order, action_joints, samples, seed)
    obs: dict[str, np.ndarray] = {}
    for b, env in envs.items():
        rows = []
        for k in range(samples):
            rows.append(
                env.write_state(
                    {n: v[k] for n, v in st.joint_pos.items()},
                    {n: v[k] for n, v in st.joint_vel.items()},
                    st.root_pose[k : k + 1],
                    st.root_velocity[k : k + 1],
                    last_action={n: v[k] for n, v in st.last_action.items()},
                    command=st.command[k],
                ).copy()
            )
        obs[b] = np.concatenate(rows, axis=0)
    (a, b), slices = tuple(envs), {t["name"]: (t["start"], t["stop"]) for t in sizes.terms}
    first = envs[a]
    gravity = getattr(first.art.backend, "gravity_dir", (0.0, 0.0, -1.0))
    com = first.art.root_com_offset()[0] if any(t.name == "base_link_lin_vel" for t in task.observation) else None
    expected = _expected(
        task,
        st,
        order,
        action_joints,
        gravity,
        float(first.episode_time[0]),
        (0.0, 0.0, 0.0) if com is None else com,
        _motion_terms(first, motion, st, order, inputs.robot.given),
    )
    checks = []
    for term in task.observation:
        start, stop = slices[term.name]
        labels = _labels(term, order, action_joints, start, stop)
        tol = tolerances.get(term.name, DEFAULT_TOLERANCE) * (float(np.max(np.abs(term.scale))) or 1.0)
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
        by_name[name] = np.column_stack(
            [act[:, driven.index(j)] if j in driven else np.full(samples, np.nan) for j in action_joints]
        )
    across = _largest(np.abs(by_name[a] - by_name[b]), action_joints)
    from_ref = {name: _largest(np.abs(v - ref_act), action_joints) for name, v in by_name.items()}
    ok = across.difference <= act_tol and all(v.difference <= act_tol for v in from_ref.values())
    checks.append(TermCheck("action", "joint", None, None, act_tol, across, from_ref, ok))
    return checks
