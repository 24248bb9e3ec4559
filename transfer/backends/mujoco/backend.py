"""``MujocoBackend``: the MuJoCo C engine stepping the robot's own MJCF (or URDF), behind the :class:`Backend` contract.

The robot file is the one the user gave (a converted USD names its source; :func:`transfer.robot.assets.source_of`), read
with MuJoCo's own model-editing API (``mujoco.MjSpec``) and compiled as authored: its actuators, ``<option>``,
``<default>`` classes and contact parameters are what runs. The scene description adds only what it asks for: a
ground plane when the file has none, gravity, the training engine's base, the spawn height and pose, the ground
friction scale, self-collisions off. Each environment is one ``MjData``; the envs share one ``MjModel`` until a
write gives one masses or gains of its own (then it steps its own copy); environments are stepped on threads
(``mj_step`` releases the GIL), each on its own data, so a seed gives the same run whatever the thread count.

Drives: a joint driven by a position actuator keeps it (the task's stiffness and damping set its ``kp`` / ``kv``); a
joint driven by a motor gets a position actuator on the same joint instead, with the motor's force range
(``gear x ctrlrange``): MuJoCo then computes ``kp (target - q) - kv qdot`` every physics step, the ideal PD that
``deploy_mujoco.py`` computes in Python. A joint with neither is refused, naming it. Velocity targets and
feed-forward efforts go through ``qfrc_applied`` (``kv x velocity target + effort``).

Layouts: poses ``(E, 7)`` / ``(E, B, 7)`` are ``x, y, z, qx, qy, qz, qw`` of the link frame (MuJoCo's quaternions
are ``w`` first); velocities ``(E, 6)`` / ``(E, B, 6)`` COM linear then angular velocity, world frame (MuJoCo's
free joint holds the frame origin's linear velocity in world and the angular velocity in the body frame).
"""

from __future__ import annotations

import copy
import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, ClassVar

import mujoco
import numpy as np
import warp as wp

from transfer._arrays import host
from transfer.backends.base import JOINT_PROPERTIES, UNLIMITED, Backend, EngineOrder, JointProperties
from transfer.backends.mujoco.model import MujocoModel, build_model, dof_names
from transfer.backends.mujoco.snapshot import Snapshot
from transfer.backends.scene import SceneDescription
from transfer.ordering import OrderingConvention

__all__ = ["MujocoBackend"]


THREADED_ENVS = 4
"""Envs from which the default steps them on threads: below it the hand-off to a thread (tens of microseconds on
the 2-core host measured, docs/mujoco.md) costs more than the few ``mj_step`` of a policy step it would run
beside the others."""


def _default_threads(num_envs: int) -> int:
    return min(num_envs, os.cpu_count() or 1) if num_envs >= THREADED_ENVS else 1


def _xyzw(wxyz: np.ndarray) -> np.ndarray:
    return np.concatenate([wxyz[..., 1:], wxyz[..., :1]], axis=-1)


def _wxyz(xyzw: np.ndarray) -> np.ndarray:
    return np.concatenate([xyzw[..., 3:], xyzw[..., :3]], axis=-1)


class MujocoBackend(Backend):
    """One robot file in ``num_envs`` MuJoCo environments, laid out in the public order it is given.

    Args:
        usd_path: The robot: an MJCF (``.xml``) or URDF file, or the USD converted from one (its source is used).
        num_envs: Environments (one ``MjData`` each; one ``MjModel`` per set of alike envs).
        device: ``"cpu"`` only (MuJoCo C).
        root: Unused (an MJCF holds one robot); accepted for the contract.
        joint_order, body_order: Public DoF and link names (default: MuJoCo's own order).
        scene: What to build around the robot (:class:`~transfer.backends.scene.SceneDescription`).
        threads: Threads stepping the environments (default: one per core from :data:`THREADED_ENVS` envs, else
            this thread alone).
    """

    name: ClassVar[str] = "mujoco"
    native_convention: ClassVar[OrderingConvention] = OrderingConvention.MUJOCO
    orders_natively: ClassVar[bool] = True
    native_from_usd: ClassVar[bool] = False
    supports_body_mass: ClassVar[bool] = True
    supports_contact_forces: ClassVar[bool] = True

    @classmethod
    def engine_orders(cls, asset: str | os.PathLike, root: str | None = None) -> list[EngineOrder]:
        """MuJoCo's own order of the robot ``asset`` (an MJCF or URDF, or the USD converted from one): its compiled
        model's DoFs (:func:`~transfer.backends.mujoco.model.dof_names`) and its bodies (the world left out), in
        model order."""
        built = build_model(asset, SceneDescription(), drives=False)
        joints = dof_names(built.model, built.root_id)
        return [EngineOrder(cls.native_convention.value, built.root_body, joints, built.body_names, built.fixed_base)]

    def __init__(
        self,
        usd_path: str | os.PathLike,
        num_envs: int = 1,
        device: str = "cpu",
        root: str | None = None,
        *,
        joint_order: Sequence[str] | None = None,
        body_order: Sequence[str] | None = None,
        scene: SceneDescription | None = None,
        threads: int | None = None,
    ) -> None:
        del root
        if str(device) != "cpu":
            raise ValueError(f"MujocoBackend(device={device!r}): MuJoCo C runs on the CPU only; give device='cpu'")
        if isinstance(num_envs, bool) or not isinstance(num_envs, int) or num_envs < 1:
            raise ValueError(f"MujocoBackend(num_envs={num_envs!r}): expected an integer >= 1")
        self.device, self.num_envs = "cpu", num_envs
        built = build_model(usd_path, scene or SceneDescription())
        self.source = built.source
        self.notes: list[str] = list(built.notes)
        self.changes = built.changes
        self.models = [built.model] * num_envs  # shared until a write gives an env its own (_models_to_write)
        self.datas = [mujoco.MjData(built.model) for _ in range(num_envs)]
        self._ctrls = [d.ctrl for d in self.datas]  # views kept: each d.ctrl makes a new one (64 envs: 18 -> 12 us)
        self._buffers: dict[str, tuple[wp.array, np.ndarray]] = {}
        self._stale = False  # derived quantities (frames, COM velocities) behind qpos/qvel since the last mj_step
        self._layout(built, joint_order, body_order)
        self.fixed_base = built.fixed_base
        g = np.asarray(built.model.opt.gravity, np.float64)
        norm = float(np.linalg.norm(g))
        self.gravity_dir = tuple(float(c) for c in (g / norm if norm > 0 else (0.0, 0.0, -1.0)))
        self._initial = self._initial_state(built, scene or SceneDescription())
        self._velocity_target = np.zeros((num_envs, self.num_joints))
        self._effort = np.zeros((num_envs, self.num_joints))
        workers = threads or _default_threads(num_envs)
        self._pool = ThreadPoolExecutor(workers - 1) if workers > 1 and num_envs > 1 else None
        self._workers = workers if self._pool else 1
        self._pairs: list[tuple[Any, Any]] = []
        self._pair()
        self._snapshot = Snapshot(self._pairs, self.root_com_offset, self._free, self._free_dof)
        self.reset()
        self.default_joint_pos = wp.array(np.tile(self._initial[1], (num_envs, 1)), dtype=wp.float32)

    # -- layout ---------------------------------------------------------------------------------------------
    def _layout(self, built: MujocoModel, joint_order: Sequence[str] | None, body_order: Sequence[str] | None) -> None:
        m = built.model
        joints = tuple(joint_order) if joint_order is not None else built.joint_names
        bodies = tuple(body_order) if body_order is not None else built.body_names
        for kind, given, own in (("joint", joints, built.joint_names), ("body", bodies, built.body_names)):
            if sorted(given) != sorted(own):
                raise ValueError(
                    f"MujocoBackend: the public {kind} order does not name the {kind}s of {built.source.name}; "
                    f"missing {sorted(set(own) - set(given))}, not in the file {sorted(set(given) - set(own))}"
                )
        self.joint_names, self.body_names = joints, bodies
        jid = [mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_JOINT, n) for n in joints]
        self._qadr = np.array([m.jnt_qposadr[j] for j in jid], np.int64)
        self._dadr = np.array([m.jnt_dofadr[j] for j in jid], np.int64)
        self._jid = np.array(jid, np.int64)
        self._bid = np.array([mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, n) for n in bodies], np.int64)
        self._root = built.root_id
        self._act = np.array([built.actuator_of[n] for n in joints], np.int64)
        self._free = built.free_qpos  # qpos address of the root's free joint, or None (a fixed base)
        free = [j for j in range(m.njnt) if self._free is not None and m.jnt_qposadr[j] == self._free]
        self._free_dof = int(m.jnt_dofadr[free[0]]) if free else None

    def _pair(self) -> None:
        """Each env's ``(model, data)`` and the threads' shares of them, after :attr:`models` changed."""
        self._pairs[:] = zip(self.models, self.datas, strict=True)  # the snapshot holds this same list
        envs = list(enumerate(self._pairs))
        self._chunks = [envs[k :: self._workers] for k in range(self._workers)]

    def _models_to_write(self, ids: list[int], values: list[np.ndarray]) -> list[tuple[Any, list[int]]]:
        """The models a write of ``values`` (rows ``(num_envs, ...)`` each) to envs ``ids`` changes, with their envs.
        Envs share one model while they are alike (one model in cache for all keeps the stepping fast: 64 envs
        0.74x -> 0.79x bare ``mj_step``); a model is written in place when every env sharing it is written the same
        values (a task's gains), and an env given values of its own first gets its own copy."""
        chosen: dict[int, list[int]] = {}
        for e in ids:
            chosen.setdefault(id(self.models[e]), []).append(e)
        users: dict[int, int] = {}
        for m in self.models:
            users[id(m)] = users.get(id(m), 0) + 1
        out, copied = [], False
        for envs in chosen.values():
            alike = all((v[envs] == v[envs[0]]).all() for v in values)
            if alike and len(envs) == users[id(self.models[envs[0]])]:
                out.append((self.models[envs[0]], envs))
                continue
            for e in envs:
                if users[id(self.models[e])] > 1:
                    users[id(self.models[e])] -= 1
                    self.models[e] = copy.deepcopy(self.models[e])
                    copied = True
                out.append((self.models[e], [e]))
        if copied:
            self._pair()
        return out

    def _initial_state(self, built: MujocoModel, scene: SceneDescription) -> tuple[np.ndarray, np.ndarray]:
        """``(qpos0, joint positions in public order)``: the spawn pose the scene asks for."""
        qpos = np.array(built.model.qpos0, np.float64)
        for i, name in enumerate(self.joint_names):
            if name in scene.joint_positions:
                qpos[self._qadr[i]] = scene.joint_positions[name]
        if self._free is not None and scene.spawn_height is not None:
            qpos[self._free + 2] = scene.spawn_height
        return qpos, qpos[self._qadr].astype(np.float32)

    # -- reads ----------------------------------------------------------------------------------------------
    def _rows(self, fn: Any, key: str, derived: bool = False) -> wp.array:
        """The buffer ``key`` (one per reader, owned here and updated in place, as the contract has it), filled with
        ``fn(model, data)`` of every env; ``derived``: ``fn`` reads frames or COM velocities (:meth:`_refresh`), not
        ``qpos``/``qvel`` alone (an explicit actuator reads joints every physics step: no recomputation there)."""
        if derived:
            self._refresh()
        held = self._buffers.get(key)
        if held is None:  # the first read makes the buffer, of the shape fn gives
            return self._fill(key, np.stack([fn(m, d) for m, d in self._pairs]))
        buffer, view = held
        for e, (m, d) in enumerate(self._pairs):
            view[e] = fn(m, d)  # filled in place, no launch, no array made
        return buffer

    def _refresh(self) -> None:
        """After ``mj_step``, MuJoCo's derived quantities (``xpos``, ``xquat``, ``xmat``, ``cvel``) are those of the
        state before the step's integration, one physics step behind ``qpos``/``qvel``: they are computed again from
        the new state before anything reads them (kinematics and COM velocities only; the dynamics are untouched,
        each ``mj_step`` starts from ``qpos``/``qvel``)."""
        if not self._stale:
            return
        for m, d in self._pairs:
            mujoco.mj_kinematics(m, d)
            mujoco.mj_comPos(m, d)
            mujoco.mj_comVel(m, d)
        self._stale = False

    def root_com_offset(self) -> np.ndarray:
        """The root body's ``body_ipos`` (MuJoCo's centre of mass in the body frame) of every env's model."""
        return np.stack([m.body_ipos[self._root] for m in self.models]).astype(np.float64)

    def _fill(self, key: str, values: np.ndarray) -> wp.array:
        """The buffer ``key`` (as :meth:`_rows`) filled with ``values`` ``(E, ...)`` computed over every env at once."""
        held = self._buffers.get(key)
        if held is None:
            buffer = wp.zeros(values.shape, dtype=wp.float32, device="cpu")
            held = self._buffers[key] = (buffer, buffer.numpy())  # a CPU array's numpy() is a view of it
        held[1][...] = values
        return held[0]

    def root_pose(self) -> wp.array:
        if self._free is not None:  # a free joint's qpos is the root's frame: no kinematics to run first
            return self._snapshot.root()[0]
        r = self._root
        return self._rows(lambda m, d: np.concatenate([d.xpos[r], _xyzw(d.xquat[r])]), "root_pose", derived=True)

    def root_velocity(self) -> wp.array:
        if self._free is not None:
            return self._snapshot.root()[1]
        return self._rows(lambda m, d: self._body_velocity(m, d, self._root), "root_velocity", derived=True)

    @staticmethod
    def _body_velocity(m: Any, d: Any, body: int) -> np.ndarray:
        res = np.zeros(6)
        mujoco.mj_objectVelocity(m, d, mujoco.mjtObj.mjOBJ_BODY, body, res, 0)  # (angular, linear) at the COM
        return np.concatenate([res[3:], res[:3]])

    def joint_positions(self) -> wp.array:
        return self._fill("joint_positions", self._snapshot.qpos[:, self._qadr])

    def joint_velocities(self) -> wp.array:
        return self._fill("joint_velocities", self._snapshot.qvel[:, self._dadr])

    def body_poses(self) -> wp.array:
        xpos, xquat = self._snapshot.frames()
        b = self._bid
        return self._fill("body_poses", np.concatenate([xpos[:, b], _xyzw(xquat[:, b])], axis=-1))

    def body_velocities(self) -> wp.array:
        return self._rows(
            lambda m, d: np.stack([self._body_velocity(m, d, b) for b in self._bid]), "body_velocities", derived=True
        )

    def joint_position_targets(self) -> wp.array:
        return self._rows(lambda m, d: d.ctrl[self._act], "joint_position_targets")

    def joint_properties(self) -> JointProperties:
        values = {
            name: wp.clone(self._rows(lambda m, d, name=name: self._property(m, name), f"property {name}"))
            for name in JOINT_PROPERTIES
        }
        return JointProperties(**values)

    def _property(self, m: Any, name: str) -> np.ndarray:
        a, j, dof = self._act, self._jid, self._dadr
        if name == "stiffness":
            return m.actuator_gainprm[a, 0]
        if name == "damping":
            return -m.actuator_biasprm[a, 2]
        if name == "armature":
            return m.dof_armature[dof]
        if name == "friction":
            return m.dof_frictionloss[dof]
        if name in ("position_limit_lower", "position_limit_upper"):
            side = 0 if name.endswith("lower") else 1
            return np.where(m.jnt_limited[j].astype(bool), m.jnt_range[j, side], UNLIMITED * (2 * side - 1))
        if name == "velocity_limit":
            return np.full(len(j), UNLIMITED)  # MuJoCo enforces no joint velocity limit
        limited = m.actuator_forcelimited[a].astype(bool)
        return np.where(limited, np.abs(m.actuator_forcerange[a, 1]), UNLIMITED)

    def contact_forces(self, bodies: Any) -> np.ndarray:
        """The contact forces on ``bodies`` (MuJoCo's ``cfrc_ext`` force part after ``mj_rnePostConstraint``: the
        constraint forces the last step applied, world frame; nothing else pushes the bodies here)."""
        bid = self._bid[np.asarray(bodies, np.int64)]
        out = np.empty((self.num_envs, len(bid), 3))
        for e, (m, d) in enumerate(self._pairs):
            mujoco.mj_rnePostConstraint(m, d)
            out[e] = d.cfrc_ext[bid, 3:6]
        return out

    def body_masses(self) -> wp.array:
        return wp.clone(self._rows(lambda m, d: m.body_mass[self._bid], "body_masses"))

    def body_inertias(self) -> wp.array:
        """``(num_envs, num_bodies, 9)``: diagonal inertia about the COM in MuJoCo's principal inertial frame."""
        return wp.clone(
            self._rows(lambda m, d: np.stack([np.diag(m.body_inertia[b]).ravel() for b in self._bid]), "body_inertias")
        )

    # -- writes ---------------------------------------------------------------------------------------------
    def _envs(self, env_ids: Any) -> list[int]:
        if env_ids is None:
            return list(range(self.num_envs))
        ids = [int(i) for i in np.asarray(env_ids.numpy() if hasattr(env_ids, "numpy") else env_ids).ravel()]
        bad = [i for i in ids if not 0 <= i < self.num_envs]
        if bad:
            raise IndexError(f"MujocoBackend: env_ids {bad} out of range [0, {self.num_envs})")
        return ids

    def _values(self, array: Any, width: tuple[int, ...], what: str) -> np.ndarray:
        values = np.asarray(host(array) if isinstance(array, wp.array) else array, np.float64)
        if values.shape != (self.num_envs, *width):
            raise ValueError(f"MujocoBackend.{what}: expected shape {(self.num_envs, *width)}, got {values.shape}")
        return values

    def write_root_pose(self, pose: wp.array, env_ids: wp.array | None = None) -> None:
        self._snapshot.written()
        values = self._values(pose, (7,), "write_root_pose")
        if self._free is None:
            raise ValueError(f"MujocoBackend.write_root_pose: {self.source.name}'s root is fixed to the world")
        f = self._free
        for e in self._envs(env_ids):
            self.datas[e].qpos[f : f + 7] = np.concatenate([values[e, :3], _wxyz(values[e, 3:])])
            mujoco.mj_forward(self.models[e], self.datas[e])

    def write_root_velocity(self, velocity: wp.array, env_ids: wp.array | None = None) -> None:
        self._snapshot.written()
        values = self._values(velocity, (6,), "write_root_velocity")
        if self._free is None:
            raise ValueError(f"MujocoBackend.write_root_velocity: {self.source.name}'s root is fixed to the world")
        dof = self.models[0].jnt_dofadr[self.models[0].body_jntadr[self._root]]
        self._refresh()  # the root's frame of the state now
        for e in self._envs(env_ids):
            m, d = self.models[e], self.datas[e]
            omega = values[e, 3:]
            offset = d.xipos[self._root] - d.xpos[self._root]
            d.qvel[dof : dof + 3] = values[e, :3] - np.cross(omega, offset)  # the frame origin's linear velocity
            d.qvel[dof + 3 : dof + 6] = d.xmat[self._root].reshape(3, 3).T @ omega  # angular, in the body frame
            mujoco.mj_forward(m, d)

    def write_joint_state(self, position: wp.array, velocity: wp.array, env_ids: wp.array | None = None) -> None:
        self._snapshot.written()
        q = self._values(position, (self.num_joints,), "write_joint_state")
        v = self._values(velocity, (self.num_joints,), "write_joint_state")
        for e in self._envs(env_ids):
            self.datas[e].qpos[self._qadr] = q[e]
            self.datas[e].qvel[self._dadr] = v[e]
            mujoco.mj_forward(self.models[e], self.datas[e])

    def set_joint_position_target(self, target: wp.array, env_ids: wp.array | None = None) -> None:
        values = self._values(target, (self.num_joints,), "set_joint_position_target")
        ctrls, act = self._ctrls, self._act
        for e in self._envs(env_ids):
            ctrls[e][act] = values[e]

    def set_joint_velocity_target(self, target: wp.array, env_ids: wp.array | None = None) -> None:
        values = self._values(target, (self.num_joints,), "set_joint_velocity_target")
        for e in self._envs(env_ids):
            self._velocity_target[e] = values[e]
            self._apply_forces(e)

    def set_joint_effort_target(self, effort: wp.array, env_ids: wp.array | None = None) -> None:
        values = self._values(effort, (self.num_joints,), "set_joint_effort_target")
        for e in self._envs(env_ids):
            self._effort[e] = values[e]
            self._apply_forces(e)

    def _apply_forces(self, e: int) -> None:
        """``qfrc_applied``: the feed-forward effort plus ``kv x velocity target`` (the actuator's bias damps the
        joint velocity towards 0; this moves its rest to the target). An explicit actuator writes the effort every
        physics step, with no velocity target: the effort alone then."""
        force = self._effort[e]
        if self._velocity_target[e].any():
            force = force - self.models[e].actuator_biasprm[self._act, 2] * self._velocity_target[e]
        self.datas[e].qfrc_applied[self._dadr] = force

    def write_joint_properties(self, env_ids: wp.array | None = None, **values: wp.array) -> None:
        unknown = sorted(set(values) - set(JOINT_PROPERTIES))
        if unknown:
            raise KeyError(f"write_joint_properties: unknown properties {unknown}; known: {list(JOINT_PROPERTIES)}")
        rows = {k: self._values(v, (self.num_joints,), f"write_joint_properties({k})") for k, v in values.items()}
        for m, envs in self._models_to_write(self._envs(env_ids), list(rows.values())):
            for name, value in rows.items():
                self._set_property(m, name, value[envs[0]])
            for e in envs:
                self._apply_forces(e)

    def _set_property(self, m: Any, name: str, value: np.ndarray) -> None:
        a, j, dof = self._act, self._jid, self._dadr
        finite = np.abs(value) < UNLIMITED
        if name == "stiffness":
            m.actuator_gainprm[a, 0] = value
            m.actuator_biasprm[a, 1] = -value
        elif name == "damping":
            m.actuator_biasprm[a, 2] = -value
        elif name == "armature":
            m.dof_armature[dof] = value
        elif name == "friction":
            m.dof_frictionloss[dof] = value
        elif name in ("position_limit_lower", "position_limit_upper"):
            column = 0 if name.endswith("lower") else 1  # a value not finite keeps that side's own limit
            m.jnt_range[j, column] = np.where(finite, value, m.jnt_range[j, column])
        elif name == "effort_limit":
            m.actuator_forcelimited[a] = finite.astype(np.uint8)
            m.actuator_forcerange[a] = np.stack([-value, value], axis=1)
        # velocity_limit: MuJoCo has none to set; the contract's reads say unlimited

    def write_body_masses(self, masses: wp.array, env_ids: wp.array | None = None) -> None:
        self._snapshot.written()
        values = self._values(masses, (self.num_bodies,), "write_body_masses")
        if (values <= 0).any():
            raise ValueError("MujocoBackend.write_body_masses: every mass must be > 0 kg")
        for m, envs in self._models_to_write(self._envs(env_ids), [values]):
            scale = values[envs[0]] / m.body_mass[self._bid]
            m.body_mass[self._bid] = values[envs[0]]
            m.body_inertia[self._bid] *= scale[:, None]
            for e in envs:
                mujoco.mj_setConst(m, self.datas[e])

    # -- stepping -------------------------------------------------------------------------------------------
    def step(self, dt: float | None = None) -> None:
        self.steps(1, dt)

    def steps(self, count: int, dt: float | None = None) -> None:
        """``count`` ``mj_step`` of every env: in this thread, or one dispatch to the threads (each steps its envs
        ``count`` times; ``mj_step`` releases the GIL)."""
        if dt is not None and dt != self.models[0].opt.timestep:  # every model shares it: set once when it changes
            for m in self.models:
                m.opt.timestep = float(dt)
        self._stale = True
        self._snapshot.stepped()
        if self._pool is None:
            self._step_chunk(self._chunks[0], count)
            return
        futures = [self._pool.submit(self._step_chunk, chunk, count) for chunk in self._chunks[1:]]
        self._step_chunk(self._chunks[0], count)  # the first share in this thread: one hand-off fewer
        for future in futures:
            future.result()

    def _step_chunk(self, envs: list[tuple[int, tuple[Any, Any]]], count: int) -> None:
        """``count`` ``mj_step`` of each of ``envs`` (``(index, (model, data))``) in one call (``nstep``: the GIL is
        taken back once per env, not once per step; with two threads the 64-env stepping ran 1.61-1.77x one thread
        with a call per step, 1.80-1.86x with one per env, docs/mujoco.md), then its state into the snapshot while it
        is in this core's cache."""
        step, take = mujoco.mj_step, self._snapshot.take
        for e, (m, d) in envs:
            step(m, d, count)
            take(e, m, d)

    def reset(self, env_ids: wp.array | None = None) -> None:
        self._snapshot.written()
        qpos, _ = self._initial
        for e in self._envs(env_ids):
            m, d = self.models[e], self.datas[e]
            ctrl = d.ctrl.copy()
            mujoco.mj_resetData(m, d)
            d.qpos[:] = qpos
            d.ctrl[:] = ctrl
            d.ctrl[self._act] = qpos[self._qadr]
            self._apply_forces(e)
            mujoco.mj_forward(m, d)

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None

    def __repr__(self) -> str:
        return f"MujocoBackend({self.source.name!r}, num_envs={self.num_envs}, joints={self.num_joints})"
