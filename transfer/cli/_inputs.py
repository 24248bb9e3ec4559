"""The one set of input arguments every command that opens a checkpoint takes (replay, verify, convert, info, diagnose): the
checkpoint and the three that complete or override what it says about itself (its joint order, its task, its
robot). A command's class inherits them and adds its own keyword-only arguments."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

import tyro

from transfer.cli._checks import ASSET, CONFIG, FRAME_RATE, ORDER, Reads
from transfer.cli._help import DEFAULT_IN_TEXT

__all__ = ["CheckpointInputs", "MotionInputs"]


@dataclass(frozen=True)
class CheckpointInputs:
    """A checkpoint and what completes it: ``--source``, ``--config``, ``--asset`` (docs/replay.md)."""

    checkpoint: Annotated[tyro.conf.Positional[Path], tyro.conf.arg(metavar="CHECKPOINT|RUN_DIR"), Reads("checkpoint")]
    """TorchScript (.pt), ONNX (.onnx), RSL-RL training checkpoint (model_<iter>.pt), or an Isaac Lab run folder
    (params/env.yaml gives the task, the training engine's joint order and the asset path; docs/isaaclab.md)."""
    source: Annotated[str | None, tyro.conf.arg(metavar="CONVENTION"), ORDER, DEFAULT_IN_TEXT] = None
    """The checkpoint's joint order: physx, mjwarp, robot_schema, mujoco (the MJCF's), or a file listing its joint
    names (default: the checkpoint's metadata, the config's, or a run folder's training engine)."""
    config: Annotated[Path | None, tyro.conf.arg(metavar="FILE.yaml"), CONFIG, DEFAULT_IN_TEXT] = None
    """Task file (presets/tasks/*.yaml), Newton policy YAML or deploy config (Unitree's deploy.yaml, legged_gym's
    deploy_mujoco YAML): observation, action, defaults and gains by name (default: the checkpoint's metadata)."""
    asset: Annotated[Path | None, tyro.conf.arg(metavar="ROBOT.usd"), ASSET, DEFAULT_IN_TEXT] = None
    """The robot's USD, MJCF (.xml) or URDF (.urdf) file (docs/import.md; default: the task's or the metadata's
    asset; for a run folder, its usd_path when that is a local file)."""


@dataclass(frozen=True, kw_only=True)
class MotionInputs:
    """A motion-tracking policy's reference clip (replay, diagnose): ``--motion``, ``--motion-fps``,
    ``--motion-anchor`` (docs/replay.md, Motion trackers)."""

    motion: Annotated[Path | None, tyro.conf.arg(metavar="CLIP"), Reads("motion clip")] = None
    """A motion-tracking policy's reference clip: a .csv (base position, base quaternion xyzw, joint positions in
    the robot file's order, one frame a row; give --motion-fps) or a .npz (mjlab's csv_to_npz). Every env starts
    in its first frame; the run ends with the clip; the report adds tracking errors (docs/replay.md)."""
    motion_fps: Annotated[float | None, tyro.conf.arg(metavar="HZ"), FRAME_RATE] = None
    """The CSV clip's frames per second (a CSV does not record it; unitree_rl_lab's and mjlab's retargets: 30)."""
    motion_anchor: Annotated[str | None, tyro.conf.arg(metavar="BODY"), DEFAULT_IN_TEXT] = None
    """The body whose pose the tracker's anchor terms compare (default: torso_link where the robot has one, else its
    root)."""

    def motion_args(self) -> dict[str, object]:
        """The three as :func:`transfer.runs.replay.replay`'s keyword arguments."""
        return {"motion": self.motion, "motion_fps": self.motion_fps, "motion_anchor": self.motion_anchor}
