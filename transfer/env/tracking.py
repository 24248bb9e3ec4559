"""A reference motion in a running environment: what a motion-tracking policy observes of it, and how closely the
robot follows it (:class:`MotionTracking`).

The clip (:class:`~transfer.task.motion.Motion`) is put on the policy's clock and in the articulation's public joint
order; the anchor body's reference orientation comes from forward kinematics of the robot itself at every frame.
As mjlab's ``MotionCommand`` counts them, an env is spawned in frame 0 and its k-th observation after a reset reads
frame k + 1 (the command advances once at the reset); the last frame holds once the clip has ended.

- ``motion_command``: the reference joint positions, then joint velocities, at the frame (``2 x joints``);
- ``motion_anchor_ori_b``: the reference anchor orientation in the robot anchor's frame, the first two columns of
  its rotation matrix row by row (``[m00, m01, m10, m11, m20, m21]``, mjlab's ``matrix_from_quat(q)[..., :2]``);
- ``motion_anchor_pos_b``: the reference anchor position in the robot anchor's frame (the clip in the world as it is,
  each env's copy at that env's place, as training keeps the reference in the world frame).

How closely the robot follows (:meth:`MotionTracking.errors`, mjlab's ``MotionCommand`` metrics): the joint position
error, the anchor's orientation error, and the tracked bodies' position error with the reference carried to the
robot's anchor in x, y and yaw (mjlab's ``body_pos_relative_w``), so a drift of the whole body is not counted.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from transfer._rotations import quat_conj, quat_from_rpy, quat_mul, rotate, rotation_matrices, yaw
from transfer.backends import reference_body_poses
from transfer.task.motion import Motion, MotionError
from transfer.task.terms import OBS_TERMS

__all__ = ["DEFAULT_ANCHOR", "MotionTracking", "check_motion"]

DEFAULT_ANCHOR = "torso_link"
"""The anchor body when none is named: the torso, as Unitree's G1 and H1 trackers anchor (mjlab, BeyondMimic)."""


def check_motion(task: Any, has_clip: bool) -> None:
    """Refuse a tracker without its clip, and a clip for a policy that observes none (:class:`MotionError`)."""
    reads = [term.name for term in task.observation if OBS_TERMS[term.name].motion]
    if reads and not has_clip:
        raise MotionError(
            f"the observation reads a reference motion ({', '.join(reads)}): a motion-tracking policy; "
            "give the clip it tracks with --motion CLIP (a .csv with --motion-fps, or a .npz)"
        )
    if has_clip and not reads:
        raise MotionError(
            "--motion: the policy's observation reads no reference motion (no motion_command or "
            "motion_anchor_* term): it tracks no clip; drop --motion"
        )


class MotionTracking:
    """``motion`` (in the robot file's joint order) for an environment whose public joints are ``joint_names`` and
    bodies ``body_names``, stepping every ``policy_dt`` s; ``asset``: the robot (its file gives the reference poses of
    the anchor and the tracked bodies); ``anchor``: the anchor body (default :data:`DEFAULT_ANCHOR` where the robot has
    one, else its root); the tracked bodies: the file's (a tracking export's ``body_names``), else every body."""

    def __init__(
        self,
        motion: Motion,
        asset: Any,
        joint_names: Sequence[str],
        body_names: Sequence[str],
        policy_dt: float,
        anchor: str | None = None,
    ) -> None:

        anchor = anchor or motion.anchor  # the flag, else the file's own word
        if anchor is None:
            anchor = DEFAULT_ANCHOR if DEFAULT_ANCHOR in body_names else body_names[0]
        names = list(body_names)
        for name, what in [(anchor, "--motion-anchor"), *((b, f"{motion.source}: body_names") for b in motion.bodies)]:
            if name not in names:
                raise MotionError(
                    f"{what} {name!r} is not a body of the robot; its bodies: "
                    f"{', '.join(names[:12])}{', ...' if len(names) > 12 else ''}"
                )
        self.bodies = tuple(motion.bodies) or tuple(names)
        """The tracked bodies (their position error is ``body_pos_error``)."""
        clip = motion.resampled(policy_dt)
        try:
            pos, quat = reference_body_poses(
                asset, clip.root_pos, clip.root_quat, clip.joint_names, clip.joint_pos, [anchor, *self.bodies]
            )
        except ValueError as exc:
            raise MotionError(f"{motion.source}: {exc}") from None
        self.anchor_pos, self.anchor_quat = pos[:, 0], quat[:, 0]
        self.body_pos = pos[:, 1:]
        """``(frames, bodies, 3)``: the tracked bodies' reference positions (the clip's world frame)."""
        self.body_index = np.array([names.index(b) for b in self.bodies], np.int64)
        self.clip = clip.in_order(joint_names)
        self.anchor, self.anchor_index = anchor, names.index(anchor)
        self.frames = self.clip.frames
        self.steps = self.frames - 1
        """Policy steps from the first frame to the last: how long a run tracks the whole clip."""
        self.origins = np.zeros(3)
        """``(envs, 3)`` (or one for all): where each env's reference stands, added to the clip's positions (the env
        starts in frame 0 at its own place; :class:`~transfer.env.PolicyEnv` sets it)."""

    def frame(self, episode_steps: np.ndarray) -> np.ndarray:
        """The frame each env's observation reads after ``episode_steps`` policy steps since its reset."""
        return self.now(np.asarray(episode_steps, np.int64) + 1)

    def now(self, episode_steps: np.ndarray) -> np.ndarray:
        """The frame of each env's time after ``episode_steps`` policy steps (the last once the clip has ended)."""
        return np.minimum(np.asarray(episode_steps, np.int64), self.frames - 1)

    def _relative(self, frame: np.ndarray, body_quat_w: np.ndarray) -> np.ndarray:
        """The reference anchor orientation at ``frame`` in the robot anchor's frame (xyzw)."""
        return quat_mul(quat_conj(body_quat_w), self.anchor_quat[frame])

    def start_state(self) -> tuple[np.ndarray, np.ndarray]:
        """``(root pose (7,) x y z qx qy qz qw, joint positions (joints,))`` of frame 0: where an env starts."""
        c = self.clip
        return np.concatenate([c.root_pos[0], c.root_quat[0]]).astype(np.float32), c.joint_pos[0].astype(np.float32)

    def command(self, episode_steps: np.ndarray) -> np.ndarray:
        """``(envs, 2 x joints)``: the reference joint positions, then velocities, at each env's frame."""
        f = self.frame(episode_steps)
        return np.concatenate([self.clip.joint_pos[f], self.clip.joint_vel[f]], axis=1).astype(np.float32)

    def anchor_ori_b(self, episode_steps: np.ndarray, body_quat_w: np.ndarray) -> np.ndarray:
        """``(envs, 6)``: the reference anchor orientation in the robot anchor's frame (``body_quat_w``: the robot's
        anchor orientation per env, xyzw), its rotation matrix's first two columns row by row."""
        relative = self._relative(self.frame(episode_steps), body_quat_w)
        return rotation_matrices(relative)[..., :2].reshape(len(relative), 6).astype(np.float32)

    def anchor_pos_b(self, episode_steps: np.ndarray, body_pos_w: np.ndarray, body_quat_w: np.ndarray) -> np.ndarray:
        """``(envs, 3)``: the reference anchor position in the robot anchor's frame (``body_pos_w`` / ``body_quat_w``:
        the robot's anchor per env), mjlab's ``subtract_frame_transforms``."""
        reference = self.anchor_pos[self.frame(episode_steps)] + self.origins
        offset = np.asarray(reference, np.float64) - np.asarray(body_pos_w, np.float64)
        return np.einsum("nji,nj->ni", rotation_matrices(body_quat_w), offset).astype(np.float32)

    def errors(
        self, episode_steps: np.ndarray, joint_pos: np.ndarray, body_pos_w: np.ndarray, body_quat_w: np.ndarray
    ) -> dict[str, np.ndarray]:
        """Per env, how far the robot (``joint_pos``; every body's ``body_pos_w`` / ``body_quat_w``, public order) is
        from the reference at its time (:meth:`now`): ``joint_pos_error`` (mean absolute, rad), ``anchor_ori_error``
        (deg) and ``body_pos_error`` (the tracked bodies' mean distance, m, the reference carried to the robot's anchor
        in x, y and yaw as mjlab's ``body_pos_relative_w``)."""
        f = self.now(episode_steps)
        joint = np.mean(np.abs(np.asarray(joint_pos, np.float64) - self.clip.joint_pos[f]), axis=1)
        robot_anchor = np.asarray(body_quat_w, np.float64)[:, self.anchor_index]
        relative = self._relative(f, robot_anchor)
        angle = 2.0 * np.degrees(np.arccos(np.clip(np.abs(relative[:, 3]), 0.0, 1.0)))
        return {
            "joint_pos_error": joint,
            "anchor_ori_error": angle,
            "body_pos_error": self._body_error(f, np.asarray(body_pos_w, np.float64), robot_anchor),
        }

    def _body_error(self, frame: np.ndarray, body_pos_w: np.ndarray, robot_anchor_quat: np.ndarray) -> np.ndarray:
        """The tracked bodies' mean distance from their reference moved onto the robot's anchor in x, y and yaw."""
        reference_anchor = self.anchor_pos[frame] + self.origins  # (envs, 3)
        shift = body_pos_w[:, self.anchor_index].copy()
        shift[:, 2] = reference_anchor[:, 2]
        heading = yaw(quat_mul(robot_anchor_quat, quat_conj(self.anchor_quat[frame])))
        turn = quat_from_rpy(np.zeros_like(heading), np.zeros_like(heading), heading)[:, None, :]
        offsets = self.body_pos[frame] + np.asarray(self.origins)[..., None, :] - reference_anchor[:, None, :]
        reference = shift[:, None, :] + rotate(np.broadcast_to(turn, offsets.shape[:-1] + (4,)), offsets)
        return np.linalg.norm(body_pos_w[:, self.body_index] - reference, axis=-1).mean(axis=1)
