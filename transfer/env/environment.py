"""One vectorized environment over :func:`~transfer.open_articulation`, in public order for all envs at once.

A :class:`PolicyEnv` puts a :class:`~transfer.task.Task` on an articulation: it opens the asset on a backend in the
checkpoint's order, stands the robot on a ground plane, writes the task's gains and defaults by joint name, builds
the policy observation term by term (the builders of :data:`transfer.task.terms.OBS_TERMS`), turns actions into joint position targets and steps the
physics ``decimation`` times per policy step. It also keeps the per-env measurements a replay reports
(:class:`Measure`): velocity along the command in the base's yaw frame, falls, survival. Replay, verify and
training run on this one environment; nothing here knows which backend is underneath.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from transfer._arrays import host
from transfer._rotations import yaw
from transfer.env.measure import BASE_CONTACT_HEIGHT, FALL_CAUSES, FALL_HEIGHT_FRACTION, FALL_TILT_COS, Measure, fallen
from transfer.env.perturbations import Perturbation
from transfer.env.spawn import SPAWN_MARGIN, default_pose, lowest, spawn_heights, training_base
from transfer.env.tracking import MotionTracking, check_motion
from transfer.robot import Robot
from transfer.task import Task
from transfer.task.observation import ObservationBuffer
from transfer.task.terms import OBS_TERMS

__all__ = ["EXPLICIT_EFFORT_LIMIT", "FALL_CAUSES", "Measure", "PolicyEnv", "fallen", "training_base"]

log = logging.getLogger("transfer")

EXPLICIT_EFFORT_LIMIT = 1.0e9
"""The engine's effort limit on joints driven by explicit actuators (N·m or N): the model clips, not the engine
(Isaac Lab's default ``effort_limit_sim`` for explicit actuators)."""


class PolicyEnv:
    """A task on ``num_envs`` copies of an asset on one backend, in the checkpoint's (public) order.

    Args:
        task: The task (observation terms, action, defaults and gains by name, dt, decimation, spawn height).
        asset: The USD file.
        backend: ``"physx"`` or ``"newton"``.
        joint_ordering: The checkpoint's joint order: a convention, an explicit name list, or ``None`` for the
            backend's own order (the naive control experiment). Bodies follow the same convention (an explicit
            list leaves bodies in the backend's order; no flat-terrain term indexes bodies).
        num_envs: Environments.
        command: ``(vx, vy, wz)``; default: the task's.
        seed: Seeds the initial joint-position noise (uniform, ``init_noise`` rad) that makes envs differ.
        backend_overrides: Extra :func:`~transfer.open_articulation` keyword arguments (they win over the task's
            scene description, :meth:`~transfer.Task.scene`).
        perturbation: Disturbances to run under (:class:`~transfer.env.perturbations.Perturbation`): each kind acts
            through its hooks (:mod:`transfer.env.perturbations`), called here in one place each: on the scene before the
            world is built, once the robot is up, on the joint gains, and during a run (:meth:`begin_run`,
            :meth:`before_policy_step`).
        motion: A reference motion (:class:`~transfer.task.motion.Motion`, in the robot file's joint order) for a
            motion-tracking policy (:mod:`transfer.env.tracking`): every env starts in its first frame, and the motion
            terms read it; ``motion_anchor``: its anchor body (default: ``torso_link`` where the robot has one).

    The world is the task's (:meth:`~transfer.Task.scene`: ground, spawn, gravity, self-collisions, solver
    settings), the same value on every backend, with the base the training engine builds (:func:`training_base`).
    Joints in explicit actuator groups (``task.actuators``) get their torque from :class:`~transfer.actuators.Actuators`
    every physics step, the engine's drive turned off for them.
    """

    def __init__(
        self,
        task: Task,
        asset: str | Path | Robot,
        backend: str,
        joint_ordering: Any,
        *,
        num_envs: int = 1,
        command: Sequence[float] | None = None,
        seed: int = 0,
        init_noise: float = 0.02,
        device: str = "cpu",
        backend_overrides: dict[str, Any] | None = None,
        perturbation: Perturbation | None = None,
        motion: Any = None,
        motion_anchor: str | None = None,
    ) -> None:
        from transfer.articulation import open_articulation

        self.backend = backend
        self._robot = asset = Robot.of(asset)  # read once: every reader below takes the value
        self.perturbation = perturbation or Perturbation()
        self._perturbing = self.perturbation.active()  # (kind, value) of each kind changed: the hooks called below
        fixed_base = training_base(task, asset)
        self.spawn_height, root_z = spawn_heights(task, asset, fixed_base)
        self.scene = dataclasses.replace(
            task.scene(self.spawn_height, root_z), fixed_base=fixed_base, joint_positions=default_pose(task, asset)
        )
        for kind, value in self._perturbing:  # the engine's side: the world every backend builds
            self.scene = kind.scene(value, self.scene)
        opts = {"scene": self.scene, **dict(backend_overrides or {})}
        body_ordering = joint_ordering if not isinstance(joint_ordering, (list, tuple)) else None
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", category=UserWarning)  # a joint list without a body list is meant here
            self.art = open_articulation(
                asset,
                backend,
                num_envs=num_envs,
                device=device,
                joint_ordering=joint_ordering,
                body_ordering=body_ordering,
                **opts,
            )
        try:
            self._setup(task, num_envs, command, seed, init_noise, motion, motion_anchor)
        except BaseException:
            self.art.close()
            raise

    def _setup(
        self,
        task: Task,
        num_envs: int,
        command: Sequence[float] | None,
        seed: int,
        noise: float,
        motion: Any = None,
        anchor: str | None = None,
    ) -> None:
        art = self.art
        self.task = task.with_joint_names(art.joint_names)
        t = self.task
        self.num_envs, names = num_envs, art.joint_names
        self.default_joint_pos = np.array([[t.default_joint_pos.get(n, 0.0) for n in names]] * num_envs, np.float32)
        self.tracking = self._tracking(t, motion, anchor)
        if art.backend.changes and not t.stiffness:  # actuators the backend added take the task's gains alone
            raise ValueError(
                f"{'; '.join(art.backend.changes)}; but the task gives no stiffness, so every joint would "
                "hang limp: give stiffness and damping (--config, or --set 'stiffness={.*: KP}')"
            )
        self._write_joint_properties(t, seed)
        action_joints = t.action.joints if t.action.joints is not None else names
        self.action_ids = [names.index(n) for n in action_joints]
        self.action_size = len(self.action_ids)
        # the joints each target write names: none when the action drives every joint in order (no selector to
        # validate and map every policy step)
        self._target_ids = None if self.action_ids == list(range(len(names))) else self.action_ids
        action_names = [names[i] for i in self.action_ids]
        self.action_scale = np.asarray(t.action.scale_vector(action_names), np.float32)
        self.action_offset = (
            self.default_joint_pos[:, self.action_ids]
            if t.action.use_default_offset
            else np.asarray(t.action.offset_vector(action_names), np.float32)
        )
        bounds = t.action.clip_vectors(action_names)
        self.action_clip = None if bounds is None else tuple(np.asarray(b, np.float32) for b in bounds)
        self.slices = t.term_slices(art.num_joints, art.num_bodies)
        self.observation_size = t.observation_size(art.num_joints, art.num_bodies)
        frames = {
            term.name: term.frame_size(art.num_joints, art.num_bodies, self.action_size) for term in t.observation
        }
        self._observation = ObservationBuffer(t.observation, frames, num_envs)
        self._fresh = True
        self.command = np.tile(np.asarray(command if command is not None else t.command, np.float32), (num_envs, 1))
        self.last_action = np.zeros((num_envs, self.action_size), np.float32)
        self.episode_steps = np.zeros(num_envs, np.int64)
        self._rng = np.random.default_rng(seed)
        self._noise = noise
        _check_memory({"the observation histories": self.observation_size}, num_envs)
        self._delayed: np.ndarray | None = None
        self._head = 0
        for kind, value in self._perturbing:  # the robot's side, once it is up
            kind.start(value, self)
        self.steps = 0
        self._spawn_pose: np.ndarray | None = None
        self._start_q = self.default_joint_pos.copy()
        """Where each env's joints start, and their first targets: the default pose, or a reference motion's first
        frame."""
        if self.tracking is not None:  # every env starts in the clip's first frame, at its own place
            pose, q = self.tracking.start_state()
            self._spawn_pose, self._start_q = np.tile(pose, (num_envs, 1)), np.tile(q, (num_envs, 1))
            origins = np.zeros((num_envs, 3))
            origins[:, :2] = host(art.data.root_pos_w)[:, :2]  # each env's place (envs may share one scene)
            self._spawn_pose[:, :3] += origins.astype(np.float32)
            self.tracking.origins = origins
        self._corners = self._body_corners()
        self._base_corners = self._corners.get(art.body_names.index(art.backend_body_names[0]))
        self._started = False  # the start pose is measured (warnings, the stand on the ground) before any step
        self.reset()
        self.warnings: list[str] = self._start_warnings(t)
        """What the start state gets wrong that the run goes ahead with (a replay prints each as ``warning:``)."""
        if t.spawn_height is None and not art.fixed_base and self._corners and self.tracking is None:
            self._stand_on_ground()
        self._started = True
        if t.start_steps:
            self._start()

    def _tracking(self, t: Task, motion: Any, anchor: str | None) -> Any:
        """The reference motion in this env (:class:`~transfer.env.tracking.MotionTracking`), ``None`` without one; a task
        whose observation reads a motion needs one."""
        check_motion(t, motion is not None)
        if motion is None:
            return None
        art = self.art
        return MotionTracking(motion, self._robot.given, art.joint_names, art.body_names, t.policy_dt, anchor)

    def _body_corners(self) -> dict[int, np.ndarray]:
        """Each link's collision-geometry box corners in its own frame (public body index -> ``(k, 3)``)."""
        names = self.art.body_names
        out = {}
        for path, corners in self._robot.collider_corners.items():
            name = path.rsplit("/", 1)[-1]
            if name in names:
                out[names.index(name)] = np.asarray(corners, np.float64)
        return out

    def _start_warnings(self, t: Task) -> list[str]:
        """Default positions outside the joints' limits, and a spawn height that puts collision geometry into the
        ground: the likely causes of a run that blows up at its first steps."""
        d, names, out = self.art.data, self.art.joint_names, []
        lo, hi = d.joint_pos_limit_lower.numpy()[0], d.joint_pos_limit_upper.numpy()[0]
        q = self.default_joint_pos[0]
        outside = [
            f"{n} {q[i]:.3g} not in [{lo[i]:.3g}, {hi[i]:.3g}]"
            for i, n in enumerate(names)
            if not lo[i] - 1e-4 <= q[i] <= hi[i] + 1e-4
        ]
        if outside:
            out.append(
                f"default_joint_pos lies outside the joints' limits ({'; '.join(outside[:4])}"
                f"{'; ...' if len(outside) > 4 else ''}): the engines push those joints back hard at the first "
                "step; give defaults inside the limits"
            )
        if t.spawn_height is not None and self._corners and not self.art.fixed_base:
            pos, quat = d.body_pos_w.numpy(), d.body_quat_w.numpy()
            low = min(float(lowest(c, pos[:1, i], quat[:1, i])[0]) for i, c in self._corners.items())
            if low < -0.005:
                out.append(
                    f"spawn_height {t.spawn_height:g} m puts the default pose's lowest collision geometry "
                    f"{-low:.3f} m into the ground (the base needs {t.spawn_height - low:.3f} m); the robot "
                    "is thrown out of it at the first step: raise spawn_height, or leave it null"
                )
        if self._robot.up_axis_warning:
            out.append(self._robot.up_axis_warning)
        out += self.art.backend.changes
        errors = list(dict.fromkeys(e for a in self._robot.topology for e in a.composition_errors))
        if errors:  # Newton refuses such a stage; PhysX builds what composed
            more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
            out.append(
                f"the asset's stage did not compose whole: {errors[0].rstrip('.')}{more}; the robot lacks what "
                "that layer holds: fix the reference"
            )
        if t.velocity_limit and not self.art.backend.enforces_velocity_limit:
            out.append(
                f"velocity_limit: {self.art.backend.name} enforces no joint velocity limit (the task's "
                f"{min(t.velocity_limit.values()):.3g} rad/s and up do not act in this run)"
            )
        return out

    def _stand_on_ground(self) -> None:
        """Put the base where the default pose's lowest collision geometry is :data:`SPAWN_MARGIN` above the ground
        (Isaac Lab spawns at ``init_state.pos`` in the default pose; without one, this is that height): the spawn
        every reset returns to."""
        d = self.art.data
        pos, quat = d.body_pos_w.numpy(), d.body_quat_w.numpy()
        low = np.min([lowest(c, pos[:, i], quat[:, i]) for i, c in self._corners.items()], axis=0)
        pose = np.concatenate([d.root_pos_w.numpy(), d.root_quat_w.numpy()], axis=1).astype(np.float32)
        pose[:, 2] += (SPAWN_MARGIN - low).astype(np.float32)
        self._spawn_pose = pose
        self.spawn_height = float(pose[0, 2])
        self.reset()

    def _write_joint_properties(self, t: Task, seed: int) -> None:
        """The task's gains, armature, friction, effort and velocity limits by joint name; explicit actuator groups get the
        engine's drive turned off (stiffness 0, damping 0, effort limit :data:`EXPLICIT_EFFORT_LIMIT`) and their
        model installed."""
        art, names, n = self.art, self.art.joint_names, self.num_envs
        values = {"stiffness": t.stiffness, "damping": t.damping, "armature": t.armature, "friction": t.friction}
        for limit in ("effort_limit", "velocity_limit"):
            if getattr(t, limit):
                values[limit] = getattr(t, limit)
        rows = {k: np.array([v[j] for j in names], np.float32) for k, v in values.items() if v}
        for kind, value in self._perturbing:
            rows = kind.gains(value, rows, self)
        explicit = [g for g in t.actuators if g.explicit]
        if explicit:
            from transfer.actuators import Actuators

            d = art.data  # the asset's values where the task gives none (Isaac Lab reads the USD drive then)
            engine = {"stiffness": d.joint_stiffness, "damping": d.joint_damping, "effort_limit": d.joint_effort_limits}
            gains = {k: rows[k] if k in rows else engine[k].numpy()[0].astype(np.float32) for k in engine}
            actuators = Actuators(
                explicit,
                names,
                num_envs=n,
                device=art.device,
                seed=seed,
                base_dir=Path(t.source).parent if t.source else None,
                **gains,
            )
            ids = [names.index(j) for j in actuators.explicit_joints]
            for key, value in (("stiffness", 0.0), ("damping", 0.0), ("effort_limit", EXPLICIT_EFFORT_LIMIT)):
                row = rows.get(key, gains[key]).copy()
                row[ids] = value
                rows[key] = row
            art.set_actuators(actuators)
        if rows:
            art.write_joint_properties(**{k: np.tile(v, (n, 1)) for k, v in rows.items()})

    def delay_actions(self, physics_steps: int) -> None:
        """Hold every target back ``physics_steps`` physics steps before it reaches the joints (the action delay)."""
        _check_memory({"the action delay": (physics_steps + 1) * self.action_size}, self.num_envs)
        self._delayed = np.zeros((physics_steps + 1, self.num_envs, self.action_size), np.float32)
        self._head = 0

    def begin_run(self, steps: int) -> None:
        """A run of ``steps`` policy steps begins: each perturbation refuses one it makes meaningless
        (``ValueError``)."""
        for kind, value in self._perturbing:
            kind.check_run(value, self.task, steps)

    def before_policy_step(self, step: int, steps: int) -> None:
        """Policy step ``step`` of ``steps`` is next: the perturbations that act during a run act (a push)."""
        for kind, value in self._perturbing:
            kind.step(value, self, step, steps)

    def push(self, velocity: Any) -> None:
        """Add ``velocity`` (m/s; ``(3,)`` or ``(num_envs, 3)``) to every env's base linear velocity at once, given in
        each base's yaw frame (x forward, y left, z up): a shove, taking effect at the next physics step."""
        d = self.art.data
        dv = np.broadcast_to(np.asarray(velocity, np.float64), (self.num_envs, 3))
        heading = yaw(host(d.root_quat_w))
        c, s = np.cos(heading), np.sin(heading)
        world = np.stack([c * dv[:, 0] - s * dv[:, 1], s * dv[:, 0] + c * dv[:, 1], dv[:, 2]], axis=1)
        velocity_w = np.concatenate([host(d.root_lin_vel_w) + world, host(d.root_ang_vel_w)], axis=1)
        self.art.write_root_velocity(velocity_w.astype(np.float32))

    @property
    def asset(self) -> Robot:
        """The robot this env was opened on (a path too: :func:`os.fspath` gives its USD)."""
        return self._robot

    @property
    def policy_dt(self) -> float:
        return self.task.policy_dt

    def fall_causes(self, state: Sequence[np.ndarray] | None = None) -> dict[str, np.ndarray]:
        """Per env, which fall rule holds now (:data:`FALL_CAUSES`): ``base_contact`` (the base's collision geometry,
        at the pose the engine reports, within :data:`BASE_CONTACT_HEIGHT` of the ground; a base without any: below
        :data:`FALL_HEIGHT_FRACTION` of the spawn height), ``bad_orientation`` (tilted past 60°), ``nonfinite``.
        ``state``: :meth:`root_state` when the caller read it already (this step's: not read again)."""
        pos, quat, lin_w, _, g_b = self.root_state() if state is None else state
        broken = ~np.isfinite(pos).all(1) | ~np.isfinite(lin_w).all(1)
        if self._base_corners is None:
            low = pos[:, 2] < FALL_HEIGHT_FRACTION * self.spawn_height
        else:
            low = lowest(self._base_corners, pos, quat) < BASE_CONTACT_HEIGHT
        with np.errstate(invalid="ignore"):
            return {
                "base_contact": low & ~broken,
                "bad_orientation": (g_b[:, 2] > -FALL_TILT_COS) & ~broken,
                "nonfinite": broken,
            }

    @property
    def time(self) -> float:
        """Simulated seconds since the last reset."""
        return round(self.steps * self.task.policy_dt, 9)

    def reset(self, env_ids: Sequence[int] | None = None) -> np.ndarray:
        """Envs (all, or ``env_ids``) back at their spawn pose and default joint state (plus the seeded noise);
        returns the observation of all envs. Resetting all restarts the clock."""
        art = self.art
        ids = np.arange(self.num_envs) if env_ids is None else np.asarray(env_ids, dtype=np.int64)
        if ids.size == 0:
            return self.observe()
        sel = None if env_ids is None else ids
        art.reset(sel)
        if self._spawn_pose is not None:
            art.write_root_pose(self._spawn_pose[ids], env_ids=sel)
        start = self._start_q[ids]
        q = (start + self._rng.uniform(-self._noise, self._noise, start.shape)).astype(np.float32)
        art.write_joint_state(q, np.zeros_like(q), env_ids=sel)
        art.set_joint_position_target(start, env_ids=sel)
        if self._delayed is not None:  # the held-back targets start where the joints do
            self._delayed[:, ids] = start[:, self.action_ids]
        self.last_action[ids] = 0.0
        self.episode_steps[ids] = 0
        self._observation.reset(sel)
        if env_ids is None:
            self.steps = 0
            self._fresh = True
            if self.task.start_steps and self._started:
                self._start()
        elif not self._fresh:  # the others keep this step's observation; the reset envs' is computed anew
            self._observation.push(self._frames(), env_ids=ids)
        return self.observe()

    def _start(self) -> None:
        """The task's ``start_steps`` policy steps of zero action after a start, before the policy's first observation
        (legged_gym's ``reset()``): the clock runs, the histories start anew from the first observation."""
        for _ in range(self.task.start_steps):
            self.step(np.zeros((self.num_envs, self.action_size), np.float32))
        self._observation.reset()
        self._fresh = True

    def _frames(self) -> dict[str, np.ndarray]:
        frames = {term.name: OBS_TERMS[term.name].build(self, term.params) for term in self.task.observation}
        for kind, value in self._perturbing:  # what the policy reads this step: sensor noise
            frames = kind.observation(value, self, frames)
        return frames

    @property
    def noise_source(self) -> np.random.Generator:
        """The env's random numbers for what a run draws (a spawn's noise, sensor noise), seeded by ``seed``."""
        return self._rng

    @property
    def episode_time(self) -> np.ndarray:
        """``(num_envs,)`` seconds since each env's last reset (what ``gait_phase`` reads)."""
        return self.episode_steps * self.task.policy_dt

    def observe(self) -> np.ndarray:
        """The policy observation ``(num_envs, observation_size)``, float32 (one buffer, refilled when the state
        changed: after a reset, a step or a written state; calling it again returns the same values, so a term's
        history takes one entry per policy step)."""
        if self._fresh:
            self._observation.push(self._frames())
            self._fresh = False
        return self._observation.values

    def step(self, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Apply ``actions`` ``(num_envs, action_size)``, run ``decimation`` physics steps; returns the observation
        and a mask of the envs whose action was not finite (their targets stay at the defaults)."""
        actions = np.asarray(actions, np.float32).reshape(self.num_envs, self.action_size)
        finite = np.isfinite(actions).all(axis=1)
        if not finite.all():
            actions = np.where(finite[:, None], actions, 0.0).astype(np.float32)
        t = self.task
        if t.action.clip_actions is not None:
            actions = np.clip(actions, -t.action.clip_actions, t.action.clip_actions)
        self.last_action[:] = actions
        targets = (self.action_offset + self.action_scale * actions).astype(np.float32)
        if self.action_clip is not None:
            targets = np.clip(targets, *self.action_clip).astype(np.float32)
        if self._delayed is None:
            self.art.set_joint_position_target(targets, joint_ids=self._target_ids)
            self.art.step(t.sim_dt, t.decimation)
        else:
            for _ in range(t.decimation):  # the target commanded action_delay physics steps ago reaches the joints
                self._delayed[self._head] = targets
                self._head = (self._head + 1) % len(self._delayed)
                self.art.set_joint_position_target(self._delayed[self._head], joint_ids=self._target_ids)
                self.art.step(t.sim_dt)
        self.steps += 1
        self.episode_steps += 1
        self._fresh = True
        return self.observe(), ~finite

    def write_state(
        self,
        joint_pos: Mapping[str, Any],
        joint_vel: Mapping[str, Any],
        root_pose: Any,
        root_velocity: Any,
        *,
        last_action: Mapping[str, Any] | None = None,
        command: Any = None,
    ) -> np.ndarray:
        """Put every env in a state given by joint name, without a physics step; returns the observation.

        ``joint_pos`` / ``joint_vel``: ``{joint name: value}`` for every joint (a scalar, or one value per env);
        ``root_pose`` ``(num_envs, 7)`` ``x, y, z, qx, qy, qz, qw`` and ``root_velocity`` ``(num_envs, 6)`` (COM
        linear, then angular, world frame); ``last_action``: ``{action joint name: value}`` (default: unchanged);
        ``command``: ``(num_envs, 3)`` or ``(3,)`` (default: unchanged). Whatever order the env was opened in,
        each value lands on the joint it names.
        """
        names = self.art.joint_names
        action_names = [names[i] for i in self.action_ids]
        q = _by_name(joint_pos, names, self.num_envs, "joint_pos")
        qd = _by_name(joint_vel, names, self.num_envs, "joint_vel")
        self.art.write_root_pose(np.asarray(root_pose, np.float32).reshape(self.num_envs, 7))
        self.art.write_root_velocity(np.asarray(root_velocity, np.float32).reshape(self.num_envs, 6))
        self.art.write_joint_state(q, qd)
        if last_action is not None:
            self.last_action[:] = _by_name(last_action, action_names, self.num_envs, "last_action")
        if command is not None:
            self.command[:] = np.broadcast_to(np.asarray(command, np.float32), self.command.shape)
        self._observation.reset()  # a written state starts every term's history anew
        self._fresh = True
        return self.observe()

    def root_state(self) -> tuple[np.ndarray, ...]:
        """``(position, quaternion xyzw, linear velocity w, angular velocity w, projected gravity b)`` per env."""
        d = self.art.data
        return (
            host(d.root_pos_w),
            host(d.root_quat_w),
            host(d.root_lin_vel_w),
            host(d.root_ang_vel_w),
            host(d.projected_gravity_b),
        )

    def close(self) -> None:
        self.art.close()

    def __enter__(self) -> PolicyEnv:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


MAX_BUFFER_BYTES = 2 << 30
"""The most memory (bytes) a run's delay line or observation histories may take: 2 GiB."""


def _check_memory(floats_per_env: Mapping[str, int], num_envs: int) -> None:
    """Refuse a buffer over :data:`MAX_BUFFER_BYTES` before it is allocated (a delay of 10^6 steps asked 14 GB)."""
    for what, n in floats_per_env.items():
        size = 4 * n * num_envs
        if size > MAX_BUFFER_BYTES:
            raise ValueError(
                f"{what} would take {size / 2**30:.1f} GiB for {num_envs} envs (at most "
                f"{MAX_BUFFER_BYTES / 2**30:g} GiB); use fewer envs, or a shorter delay or history"
            )


def _by_name(values: Mapping[str, Any], names: Sequence[str], num_envs: int, what: str) -> np.ndarray:
    """``(num_envs, len(names))`` float32 from ``{name: scalar or per-env values}`` covering every name."""
    missing = [n for n in names if n not in values]
    if missing:
        raise ValueError(f"write_state: {what} gives no value for {missing}; names: {list(names)}")
    columns = [np.broadcast_to(np.asarray(values[n], np.float32), (num_envs,)) for n in names]
    return np.stack(columns, axis=1) if columns else np.zeros((num_envs, 0), np.float32)
