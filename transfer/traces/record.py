"""What a replay records at every policy step, per env, by joint and body name (:class:`Recorder`).

One :class:`Recorder` samples a :class:`~transfer.env.PolicyEnv` after each policy step into preallocated arrays:
the observation the policy read, its action, the joint targets the engine drives to, joint positions and
velocities, the effort applied (and whether it hit its limit), the base pose and velocity, and per foot whether it
touches the ground, its lowest point's height and how fast the foot moves horizontally there: the travel of the
foot's material point at its lowest point since the previous policy step
(:func:`transfer.traces.metrics.contact_point_speed`), in contact the foot's slip (not the lowest point's own travel:
it jumps between a flat sole's corners as the foot tilts). Every engine is sampled through the same public-order
reads, so two engines' recordings hold the same columns (:mod:`transfer.traces.parquet` writes them).

The effort of a joint the engine drives itself (an implicit PD drive) is the one its drive computes,
``stiffness * (target - q) + damping * (velocity target - qd)`` clipped at the effort limit, from the state read at
the policy step (Isaac Lab reports ``applied_torque`` of its implicit actuators the same way); a joint under an
explicit actuator model reports the model's output. Foot contact is geometric: a foot's collision geometry within
:data:`CONTACT_HEIGHT` of the ground plane; the contact force on each foot (N, the norm of the net force) is the
engine's own where it reports one (``Backend.contact_forces``: MuJoCo, PhysX), NaN where it does not (Newton for
now) and in a recording made for the metrics alone (``observations=False``: a PhysX read costs ~0.5 ms), so every
engine's recording keeps the same columns.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from transfer._arrays import host
from transfer._rotations import rotation_matrices
from transfer.env.environment import MAX_BUFFER_BYTES
from transfer.traces.metrics import contact_point_speed

__all__ = ["CONTACT_HEIGHT", "FOOT_REACH", "TRACKING", "Recording", "Recorder", "feet_of"]

TRACKING = ("joint_pos_error", "anchor_ori_error", "body_pos_error")
"""What a tracker's recording holds of its errors, per step and env (``tracking``): the mean absolute joint position
error (rad) and the anchor orientation error (deg) against the reference at that time."""

CONTACT_HEIGHT = 0.01
"""A foot whose collision geometry's lowest point is below this height (m) touches the ground (exact for sphere and
capsule feet, :func:`transfer.robot.usd.collider_points`; other shapes are read by their bounding box's corners)."""
FOOT_REACH = 0.03
"""Feet are the links whose collision geometry reaches within this distance (m) of the robot's lowest point in its
spawn pose: what it stands on."""


def _points(env: Any) -> dict[int, np.ndarray]:
    """Each link's collision geometry as points swept by a radius, ``(k, 4)`` (x, y, z, r) in its frame, by public
    body index (:func:`transfer.robot.usd.collider_points`: exact for spheres and capsules)."""
    names = env.art.body_names
    return {
        names.index(path.rsplit("/", 1)[-1]): np.asarray(pts, np.float64)
        for path, pts in env.asset.collider_points.items()
        if path.rsplit("/", 1)[-1] in names
    }


def _lowest(points: np.ndarray, pos: np.ndarray, quat: np.ndarray) -> np.ndarray:
    """Per env, the lowest world height of one link's ``points`` ``(k, 4)`` at ``pos`` ``(n, 3)``, ``quat`` xyzw."""
    return (pos[:, 2:3] + rotation_matrices(quat)[:, 2, :] @ points[:, :3].T - points[:, 3]).min(axis=1)


def feet_of(env: Any, points: dict[int, np.ndarray] | None = None) -> list[int]:
    """Public body indices of the links the robot stands on in its spawn pose (see :data:`FOOT_REACH`), the base
    excluded; empty for a fixed-base robot or one without collision geometry."""
    art = env.art
    points = _points(env) if points is None else points
    if art.fixed_base or not points:
        return []
    d = art.data
    pos, quat = d.body_pos_w.numpy()[:1], d.body_quat_w.numpy()[:1]
    base = art.body_names.index(art.backend_body_names[0])
    low = {i: float(_lowest(p, pos[:, i], quat[:, i])[0]) for i, p in points.items() if i != base}
    if not low:
        return []
    floor = min(low.values())
    return sorted(i for i, z in low.items() if z <= floor + FOOT_REACH)


@dataclass
class Recording:
    """The arrays of one run, ``(steps, num_envs, ...)``; names say what each column of the last axis is."""

    engine: str
    policy_dt: float
    joint_names: list[str]
    action_names: list[str]
    foot_names: list[str]
    observation_names: list[str]
    time: np.ndarray
    """``(steps,)`` seconds after each policy step."""
    arrays: dict[str, np.ndarray]
    """``observation`` (steps, envs, obs), ``action`` (.., actions), ``target``/``position``/``velocity``/``effort``
    (.., joints) float32, ``saturated`` (.., joints) bool, ``base`` (.., 13: position, quaternion xyzw, linear and
    angular velocity in the world frame), ``contact`` bool / ``foot_height`` / ``foot_speed`` / ``contact_force`` (.., feet), ``alive``
    (steps, envs) bool: standing at that step; a tracker's ``reference_base`` (.., 7: the reference root pose, xyzw, at
    the env's place) and ``reference`` (.., joints: the reference joint positions
    at that time) and ``tracking`` (.., :data:`TRACKING`)."""
    meta: dict[str, Any]


class Recorder:
    """Samples ``env`` after each of ``steps`` policy steps (:meth:`sample`); :meth:`finish` returns the
    :class:`Recording`. ``observations=False`` leaves the observation out (the metrics do not need it)."""

    BASE = (
        "pos.x",
        "pos.y",
        "pos.z",
        "quat.x",
        "quat.y",
        "quat.z",
        "quat.w",
        "lin_vel.x",
        "lin_vel.y",
        "lin_vel.z",
        "ang_vel.x",
        "ang_vel.y",
        "ang_vel.z",
    )

    def __init__(self, env: Any, steps: int, *, observations: bool = True) -> None:
        art = self.art = env.art
        self.env, self.steps, self.k = env, int(steps), 0
        n, joints = env.num_envs, len(art.joint_names)
        points = _points(env)
        self.feet = feet_of(env, points)
        per_foot = [points[i] for i in self.feet]
        k = max((len(p) for p in per_foot), default=1)  # padded with a repeated point: no minimum changes
        self.points = (
            np.stack([np.concatenate([p, np.repeat(p[:1], k - len(p), 0)]) for p in per_foot])
            if per_foot
            else np.zeros((0, 1, 4))
        )  # (feet, k, 4)
        self._last_pose: tuple[np.ndarray, np.ndarray] | None = None  # the feet's (positions, rotations) last step
        widths = {
            "action": env.action_size,
            "target": joints,
            "position": joints,
            "velocity": joints,
            "effort": joints,
            "base": 13,
            "foot_height": len(self.feet),
            "foot_speed": len(self.feet),
        }
        if observations:
            widths["observation"] = env.observation_size
        size = 4 * self.steps * n * (sum(widths.values()) + 2 * joints + len(self.feet))
        if size > MAX_BUFFER_BYTES:  # the env's bound on any one buffer of a run
            raise ValueError(
                f"recording {self.steps} policy steps of {n} envs would take {size / 2**30:.1f} GiB (at "
                f"most {MAX_BUFFER_BYTES / 2**30:g} GiB): replay fewer envs or seconds"
            )
        self.arrays = {k: np.zeros((self.steps, n, w), np.float32) for k, w in widths.items()}
        self.arrays["saturated"] = np.zeros((self.steps, n, joints), bool)
        self.arrays["contact"] = np.zeros((self.steps, n, len(self.feet)), bool)
        self._forces = observations and bool(self.feet) and art.contact_forces(self.feet) is not None
        self.arrays["contact_force"] = np.full((self.steps, n, len(self.feet)), np.nan, np.float32)  # NaN: no report
        self.arrays["alive"] = np.zeros((self.steps, n), bool)
        if env.tracking is not None:  # a tracker: the reference it follows and how far it is from it
            self.arrays["reference"] = np.zeros((self.steps, n, joints), np.float32)
            self.arrays["reference_base"] = np.zeros((self.steps, n, 7), np.float32)
            self.arrays["tracking"] = np.zeros((self.steps, n, len(TRACKING)), np.float32)
        self.time = np.zeros(self.steps)
        d = art.data  # the gains the run was set up with: read once, not at every step
        self._kp, self._kd = d.joint_stiffness.numpy().copy(), d.joint_damping.numpy().copy()
        self._effort_limit = np.abs(d.joint_effort_limits.numpy())
        act = art.actuators
        self._explicit = np.zeros(joints, bool)
        self._limits = None
        if act is not None:
            self._explicit[[art.joint_names.index(j) for j in act.explicit_joints]] = True
            self._limits = np.asarray(act.effort_limits, np.float32)

    def observe(self, observation: np.ndarray) -> None:
        """Keep the ``observation`` the policy reads for the coming step (copied now: the env refills its buffer in
        place at the step)."""
        if "observation" in self.arrays and self.k < self.steps:
            self.arrays["observation"][self.k] = observation

    def sample(self, action: np.ndarray, alive: np.ndarray) -> None:
        """Record the step just taken: the policy's ``action`` and whether each env still stands (``alive``); the
        state is read from the env (the observation, from :meth:`observe`)."""
        if self.k >= self.steps:
            raise ValueError(f"the recorder was made for {self.steps} policy steps; step {self.k + 1} is one more")
        env, art, a, k = self.env, self.art, self.arrays, self.k
        d = art.data
        q, qd = host(d.joint_pos), host(d.joint_vel)
        target, vel_target = host(art.joint_position_target), host(art.joint_velocity_target)
        a["position"][k], a["velocity"][k], a["target"][k], a["action"][k] = q, qd, target, action
        limit = self._effort_limit
        raw = self._kp * (target - q) + self._kd * (vel_target - qd)
        effort = np.clip(raw, -limit, limit)
        saturated = np.abs(raw) >= limit * (1 - 1e-6)
        if self._explicit.any():
            applied = host(art.applied_effort)
            effort[:, self._explicit] = applied[:, self._explicit]
            saturated[:, self._explicit] = (np.abs(applied) >= self._limits * (1 - 1e-4))[:, self._explicit]
        a["effort"][k], a["saturated"][k] = effort, saturated
        a["base"][k] = np.concatenate(
            [host(d.root_pos_w), host(d.root_quat_w), host(d.root_lin_vel_w), host(d.root_ang_vel_w)], axis=1
        )
        if self.feet:
            feet, p = self.feet, self.points
            pos = host(d.body_pos_w)[:, feet].astype(np.float64)
            rot = rotation_matrices(host(d.body_quat_w)[:, feet])
            world = pos[:, :, None, :] + np.einsum("efij,fkj->efki", rot, p[..., :3])  # (envs, feet, k, 3)
            world[..., 2] -= p[..., 3]  # each point's lowest: its radius below it
            low = world[..., 2].argmin(axis=-1)  # (envs, feet)
            lowest_point = np.take_along_axis(world, low[..., None, None], axis=2)[:, :, 0]
            a["foot_height"][k] = lowest_point[..., 2]
            if k and self._last_pose is not None:  # the foot's material point at its lowest: its travel since then
                a["foot_speed"][k] = contact_point_speed(self._last_pose, (pos, rot), lowest_point, env.policy_dt)
            self._last_pose = (pos, rot)
            a["contact"][k] = a["foot_height"][k] < CONTACT_HEIGHT
            if self._forces:
                a["contact_force"][k] = np.linalg.norm(art.contact_forces(feet), axis=-1)
        a["alive"][k] = alive
        if env.tracking is not None:
            tracking = env.tracking
            now = tracking.now(env.episode_steps)
            a["reference"][k] = tracking.clip.joint_pos[now]
            a["reference_base"][k] = np.concatenate(
                [tracking.clip.root_pos[now] + np.asarray(tracking.origins), tracking.clip.root_quat[now]], axis=1
            )
            errors = tracking.errors(env.episode_steps, q, host(d.body_pos_w), host(d.body_quat_w))
            a["tracking"][k] = np.stack([errors[key] for key in TRACKING], axis=1)
        self.time[k] = env.time
        self.k += 1

    def finish(self, meta: dict[str, Any] | None = None) -> Recording:
        """The recording of the steps sampled so far; its metadata adds the robot's mass (``robot_mass``, kg, the
        engine's: what tells two robots with the same joint names apart)."""
        env, art, k = self.env, self.art, self.k
        masses = getattr(art, "body_masses", None)  # an articulation stand-in may have none
        try:
            meta = {"robot_mass": float(masses()[0].sum()), **(meta or {})} if masses else meta
        except NotImplementedError:  # an engine that does not report link masses
            pass
        names = list(art.joint_names)
        obs_names = [f"{term}.{i}" for term, s in env.slices.items() for i in range(s.stop - s.start)]
        return Recording(
            engine=env.backend,
            policy_dt=env.policy_dt,
            joint_names=names,
            action_names=[names[i] for i in env.action_ids],
            foot_names=[art.body_names[i] for i in self.feet],
            observation_names=obs_names if "observation" in self.arrays else [],
            time=self.time[:k],
            arrays={key: v[:k] for key, v in self.arrays.items()},
            meta=dict(meta or {}),
        )
