"""Reference motions for motion-tracking policies (BeyondMimic-style "mimic" / dance policies): the clip read from
the files those projects ship, resampled to the policy's rate.

- **CSV** (unitree_rl_lab's and mjlab's retargeted clips, e.g. ``mjlab/motions/g1/dance1_subject2.csv``): no
  header, one row a frame: base position x, y, z (m), base quaternion x, y, z, w, then every joint's position in the
  robot file's order (MuJoCo's order of its MJCF or URDF, Unitree's SDK order). The file does not record its rate:
  ``fps`` must be given (their LAFAN1 retargets are 30 fps; mjlab's ``csv_to_npz.py`` defaults to 30).
- **NPZ** (mjlab's and BeyondMimic's ``csv_to_npz`` output): ``fps``, ``joint_pos`` ``(T, J)`` in the robot file's
  order, ``body_pos_w`` ``(T, B, 3)`` and ``body_quat_w`` ``(T, B, 4)`` (w, x, y, z) whose body 0 is the root.

:meth:`Motion.resampled` puts the clip on the policy's clock as mjlab's ``MotionLoader`` does: frames at ``k dt``
over the clip's duration, positions interpolated linearly and the base orientation by slerp (shorter arc), joint
velocities by central differences at the new rate (``numpy.gradient``).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from transfer._rotations import slerp
from transfer.task._checks import TaskError

__all__ = ["MAX_FRAMES", "Motion", "MotionError", "read_motion"]

MAX_FRAMES = 1_000_000
"""The longest clip read (frames): ten hours at 30 fps; a larger file is refused before it is parsed whole."""


class MotionError(TaskError):
    """A reference motion cannot be read, or does not fit the robot or the policy's clock."""


@dataclass(frozen=True, eq=False)
class Motion:
    """A reference motion: ``fps`` frames a second of the base pose (``root_pos`` ``(T, 3)`` m, ``root_quat``
    ``(T, 4)`` xyzw, world frame) and joint positions ``joint_pos`` ``(T, J)`` (rad or m), column ``j`` the joint
    ``joint_names[j]``. ``source`` names the file for messages."""

    fps: float
    joint_names: tuple[str, ...]
    root_pos: np.ndarray
    root_quat: np.ndarray
    joint_pos: np.ndarray
    source: str = ""
    joint_vel: np.ndarray = field(default=None, repr=False)  # type: ignore[assignment]
    """``(T, J)``: central differences of ``joint_pos`` at ``fps`` unless given."""
    anchor: str | None = None
    """The anchor body the file names (mjlab's tracking export: ``anchor_body_name``), else ``None``."""
    bodies: tuple[str, ...] = ()
    """The bodies the file says the policy tracks (mjlab's tracking export: ``body_names``), else none named."""

    def __post_init__(self) -> None:
        if self.joint_vel is None:
            vel = (
                np.gradient(self.joint_pos, 1.0 / self.fps, axis=0)
                if self.frames > 1
                else np.zeros_like(self.joint_pos)
            )
            object.__setattr__(self, "joint_vel", vel)

    @property
    def frames(self) -> int:
        return int(self.joint_pos.shape[0])

    @property
    def duration(self) -> float:
        """Seconds from the first frame to the last."""
        return (self.frames - 1) / self.fps

    def resampled(self, dt: float) -> Motion:
        """The clip at one frame every ``dt`` s (the policy step) from its first frame over its duration: positions
        linearly, the base orientation by slerp, joint velocities anew by central differences at ``1 / dt``."""
        if self.duration < dt:
            raise MotionError(
                f"{self.source}: {self.frames} frame(s) at {self.fps:g} fps last {self.duration:g} s, "
                f"less than one policy step ({dt:g} s): nothing to track"
            )
        times = np.arange(0.0, self.duration + 1e-9, dt)
        exact = times * self.fps
        i0 = np.minimum(np.floor(exact + 1e-9).astype(np.int64), self.frames - 1)
        i1 = np.minimum(i0 + 1, self.frames - 1)
        frac = np.clip(exact - i0, 0.0, 1.0)
        lerp = lambda a: a[i0] + (a[i1] - a[i0]) * frac[:, None]  # noqa: E731
        return Motion(
            1.0 / dt,
            self.joint_names,
            lerp(self.root_pos),
            slerp(self.root_quat[i0], self.root_quat[i1], frac),
            lerp(self.joint_pos),
            self.source,
            anchor=self.anchor,
        )

    def in_order(self, names: Sequence[str]) -> Motion:
        """The same clip with its joint columns in the order ``names`` (every joint of the clip, each once)."""
        missing = sorted(set(names) - set(self.joint_names))
        if missing or len(names) != len(self.joint_names):
            raise MotionError(
                f"{self.source}: the clip's joints do not match the robot's; the robot's "
                f"{sorted(missing)[:6]} are not in it"
            )
        idx = [self.joint_names.index(n) for n in names]
        return Motion(
            self.fps,
            tuple(names),
            self.root_pos,
            self.root_quat,
            self.joint_pos[:, idx],
            self.source,
            self.joint_vel[:, idx],
            self.anchor,
        )


def read_motion(path: str | Path, joint_names: Sequence[str], fps: float | None = None) -> Motion:
    """The clip at ``path`` (``.csv`` or ``.npz``) for a robot whose joints, in its file's order, are
    ``joint_names``. ``fps``: the CSV's rate (required there: a CSV does not record it); an NPZ records its own, and
    a different ``fps`` is refused. Raises :class:`MotionError` naming the file and what is wrong, ``FileNotFoundError``
    for a missing file."""
    path = Path(path)
    if path.is_dir():
        raise MotionError(f"--motion {path}: is a folder; give the clip file (.csv or .npz)")
    if not path.is_file():
        raise FileNotFoundError(f"motion clip not found: {path}")
    names = tuple(joint_names)
    if fps is not None and (isinstance(fps, bool) or not math.isfinite(fps) or fps <= 0):
        raise MotionError(f"{path}: --motion-fps {fps!r}: a clip's rate is a number of frames a second > 0")
    if path.suffix.lower() == ".npz":
        motion = _read_npz(path, names, fps)
    else:
        motion = _read_csv(path, names, fps)
    bad = np.flatnonzero(
        ~np.isfinite(np.concatenate([motion.root_pos, motion.root_quat, motion.joint_pos], axis=1)).all(axis=1)
    )
    if bad.size:
        raise MotionError(
            f"{path}: frame {int(bad[0])} (row {int(bad[0]) + 1}) holds NaN or inf; {bad.size} frame(s) like it"
        )
    norms = np.linalg.norm(motion.root_quat, axis=1)
    if np.any(norms < 1e-6):
        raise MotionError(f"{path}: frame {int(np.argmax(norms < 1e-6))}: the base quaternion is zero")
    return dataclasses.replace(motion, root_quat=motion.root_quat / norms[:, None])  # its velocities kept


def _read_csv(path: Path, names: tuple[str, ...], fps: float | None) -> Motion:
    if fps is None:
        raise MotionError(
            f"{path}: a CSV clip does not record its rate: give --motion-fps (unitree_rl_lab's and "
            "mjlab's LAFAN1 retargets are 30 fps)"
        )
    try:
        rows = np.loadtxt(path, delimiter=",", dtype=np.float64, ndmin=2, max_rows=MAX_FRAMES + 1)
    except (ValueError, UnicodeDecodeError) as exc:
        raise MotionError(f"{path}: not a CSV of numbers ({' '.join(str(exc).split())[:160]})") from None
    if rows.shape[0] > MAX_FRAMES:
        raise MotionError(f"{path}: over {MAX_FRAMES} frames; no clip is that long")
    expected = 7 + len(names)
    if rows.shape[1] != expected:
        raise MotionError(
            f"{path}: {rows.shape[1]} columns, but the robot's clip has {expected}: base position (3), "
            f"base quaternion xyzw (4) and its {len(names)} joints ({', '.join(names[:3])}, ...); a clip "
            "of another robot?"
        )
    return Motion(float(fps), names, rows[:, :3], rows[:, 3:7], rows[:, 7:], str(path))


def _read_npz(path: Path, names: tuple[str, ...], fps: float | None) -> Motion:
    try:
        with np.load(path, allow_pickle=False) as data:
            arrays: dict[str, Any] = {
                k: data[k] for k in ("fps", "joint_pos", "body_pos_w", "body_quat_w") if k in data
            }
    except (ValueError, OSError) as exc:
        raise MotionError(f"{path}: not an NPZ of arrays ({' '.join(str(exc).split())[:160]})") from None
    missing = [k for k in ("fps", "joint_pos", "body_pos_w", "body_quat_w") if k not in arrays]
    if missing:
        raise MotionError(
            f"{path}: missing arrays {missing} (mjlab's csv_to_npz writes fps, joint_pos, joint_vel, "
            "body_pos_w, body_quat_w, ...)"
        )
    rate = float(np.asarray(arrays["fps"]).reshape(-1)[0])
    if fps is not None and abs(rate - fps) > 1e-6:
        raise MotionError(f"{path}: records {rate:g} fps; --motion-fps {fps:g} contradicts it (drop --motion-fps)")
    joints, pos, quat = (np.asarray(arrays[k], np.float64) for k in ("joint_pos", "body_pos_w", "body_quat_w"))
    if joints.ndim != 2 or joints.shape[1] != len(names):
        raise MotionError(
            f"{path}: joint_pos has shape {joints.shape}, but the robot has {len(names)} joints "
            f"({', '.join(names[:3])}, ...); a clip of another robot?"
        )
    if pos.ndim != 3 or quat.ndim != 3 or pos.shape[0] != joints.shape[0] or quat.shape[:2] != pos.shape[:2]:
        raise MotionError(
            f"{path}: body_pos_w {pos.shape} and body_quat_w {quat.shape} do not fit joint_pos "
            f"{joints.shape} (expected (T, bodies, 3) and (T, bodies, 4))"
        )
    wxyz = quat[:, 0]
    return Motion(rate, names, pos[:, 0], np.concatenate([wxyz[:, 1:], wxyz[:, :1]], axis=1), joints, str(path))
