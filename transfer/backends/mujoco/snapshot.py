"""Every env's ``qpos``/``qvel`` after its last step, and a floating root's pose and velocity computed from them.

The MuJoCo backend keeps one ``MjData`` per env; reading a quantity env by env costs a Python call each (~1-6 us),
more than the engine's own step at a few envs. Each stepping thread copies its envs' ``qpos`` and ``qvel`` here right
after their steps (``mj_getState``, ~0.4 us an env); the reads are then one pass over every env: a slice for the
joints, and for a free root one recorded Warp launch (:func:`_free_root`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import mujoco
import numpy as np
import warp as wp

__all__ = ["Snapshot"]

_QPOS_QVEL = int(mujoco.mjtState.mjSTATE_QPOS | mujoco.mjtState.mjSTATE_QVEL)
_MINVAL = wp.constant(wp.float64(mujoco.mjMINVAL))


@wp.kernel
def _free_root(
    state: wp.array2d(dtype=wp.float64),
    ipos: wp.array(dtype=wp.vec3d),
    f: int,
    v: int,
    pose: wp.array2d(dtype=wp.float32),
    velocity: wp.array2d(dtype=wp.float32),
):
    """The root's pose (frame origin, unit quaternion ``xyzw``) and velocity (linear at the centre of mass, angular;
    world frame) from its free joint: ``state[e, f:f+7]`` (``qpos``: origin, quaternion ``wxyz``) and
    ``state[e, v:v+6]`` (``qvel``: the origin's linear velocity in the world frame, the angular velocity in the body
    frame); ``ipos``: the centre of mass in the body frame. What ``mj_kinematics`` and ``mj_objectVelocity`` give,
    the quaternion normalised as ``mju_normalize4`` does (one too short becomes the identity)."""
    e = wp.tid()
    q = wp.quatd(state[e, f + 4], state[e, f + 5], state[e, f + 6], state[e, f + 3])
    norm = wp.length(q)
    if norm < _MINVAL:
        q = wp.quatd(wp.float64(0.0), wp.float64(0.0), wp.float64(0.0), wp.float64(1.0))
    else:
        q = q / norm
    w = wp.quat_rotate(q, wp.vec3d(state[e, v + 3], state[e, v + 4], state[e, v + 5]))
    lin = wp.vec3d(state[e, v], state[e, v + 1], state[e, v + 2]) + wp.cross(w, wp.quat_rotate(q, ipos[e]))
    for i in range(3):
        pose[e, i] = wp.float32(state[e, f + i])
        velocity[e, i] = wp.float32(lin[i])
        velocity[e, 3 + i] = wp.float32(w[i])
    for i in range(4):
        pose[e, 3 + i] = wp.float32(q[i])


class Snapshot:
    """Every env's ``qpos`` and ``qvel`` (``qpos`` then ``qvel`` in one float64 row per env), taken after its steps.

    Args:
        pairs: every env's ``(MjModel, MjData)``.
        com_offsets: every env's root centre of mass in the root's frame ``(E, 3)``, asked again after each write
            (the backend's :meth:`~transfer.backends.base.Backend.root_com_offset`).
        free: the root free joint's ``qpos`` address, or ``None`` (a fixed base: no root to compute here).
        free_dof: its ``qvel`` address.
    """

    def __init__(
        self,
        pairs: list[tuple[Any, Any]],
        com_offsets: Callable[[], np.ndarray],
        free: int | None,
        free_dof: int | None,
    ) -> None:
        self._pairs, self._com_offsets = pairs, com_offsets
        model = pairs[0][0]
        nq, envs = model.nq, len(pairs)
        self._state = wp.zeros((envs, nq + model.nv), dtype=wp.float64, device="cpu")
        state = self._state.numpy()  # a CPU array's numpy() is a view of it
        self._rows = list(state)
        self._qpos, self._qvel = state[:, :nq], state[:, nq:]
        self._taken = False  # False after a write: taken again, from every env, at the next read
        self._root_fresh = False
        self._xpos = np.zeros((envs, model.nbody, 3))
        self._xquat = np.zeros((envs, model.nbody, 4))
        self._frame_views = [(d.xpos, d.xquat) for _, d in pairs]  # an MjData's arrays stay where they are
        self._frames_read = False  # frames read since the last step: the threads compute them at the next
        self._kinematics = False  # the threads compute frames at this step (take)
        self._frames_fresh = False
        self._launch = None
        if free is not None:
            self._ipos = wp.zeros(envs, dtype=wp.vec3d, device="cpu")
            self.pose = wp.zeros((envs, 7), dtype=wp.float32, device="cpu")
            self.velocity = wp.zeros((envs, 6), dtype=wp.float32, device="cpu")
            self._launch = wp.launch(
                _free_root,
                dim=envs,
                inputs=[self._state, self._ipos, free, nq + free_dof],
                outputs=[self.pose, self.velocity],
                device="cpu",
                record_cmd=True,
            )

    def take(self, e: int, model: Any, data: Any) -> None:
        """Env ``e``'s state, now (called by the thread that stepped it); its bodies' frames too when they were read
        after the step before (:meth:`frames`)."""
        mujoco.mj_getState(model, data, self._rows[e], _QPOS_QVEL)
        if self._kinematics:
            self._frame(e, model, data)

    def _frame(self, e: int, model: Any, data: Any) -> None:
        """Env ``e``'s body frames from its ``qpos`` (``mj_kinematics``: after ``mj_step`` MuJoCo's frames are those
        of the state before the step's integration; the next step computes them again from ``qpos`` whatever they
        hold, so the run is the same)."""
        mujoco.mj_kinematics(model, data)
        xpos, xquat = self._frame_views[e]
        self._xpos[e] = xpos
        self._xquat[e] = xquat

    def stepped(self) -> None:
        """Every env is being stepped and taken: what is computed from the state is stale. The threads compute the
        frames with it when they were read since the step before (a loop that reads them after each policy step; one
        that steps one physics step at a time, as explicit actuators do, computes them once too many per policy
        step)."""
        self._root_fresh = False
        self._kinematics, self._frames_read = self._frames_read, False
        self._frames_fresh = self._kinematics

    def written(self) -> None:
        """A write changed the state (or a model) behind the snapshot: take it again at the next read."""
        self._taken = self._root_fresh = self._frames_fresh = False

    def _current(self) -> None:
        if self._taken:
            return
        for e, (m, d) in enumerate(self._pairs):
            self.take(e, m, d)
        if self._launch is not None:
            self._ipos.numpy()[...] = self._com_offsets()
        self._taken = True
        self._frames_fresh = self._kinematics

    def frames(self) -> tuple[np.ndarray, np.ndarray]:
        """Every body's position ``(E, nbody, 3)`` and quaternion ``(E, nbody, 4)`` (``wxyz``), world frame, at the
        current state (views: valid until the next step or write). Computed here, env by env, unless the stepping
        threads did with the state: they do at a step that follows a read (a policy loop that reads them after each
        policy step: the recorder's feet, a tracker's anchor)."""
        self._current()
        if not self._frames_fresh:
            for e, (m, d) in enumerate(self._pairs):
                self._frame(e, m, d)
            self._frames_fresh = True
        self._frames_read = True
        return self._xpos, self._xquat

    @property
    def qpos(self) -> np.ndarray:
        """``(E, nq)``, every env's ``qpos`` (a view: valid until the next step or write)."""
        self._current()
        return self._qpos

    @property
    def qvel(self) -> np.ndarray:
        """``(E, nv)``, every env's ``qvel`` (a view: valid until the next step or write)."""
        self._current()
        return self._qvel

    def root(self) -> tuple[wp.array, wp.array]:
        """The free root's poses ``(E, 7)`` and velocities ``(E, 6)`` (:func:`_free_root`), the same two buffers
        every call, updated in place."""
        self._current()
        if not self._root_fresh:
            self._launch.launch()
            self._root_fresh = True
        return self.pose, self.velocity
