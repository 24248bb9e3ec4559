"""The one set of input arguments every command that opens a checkpoint takes (replay, verify, convert, info, diagnose): the
checkpoint and the three that complete or override what it says about itself (its joint order, its task, its
robot). A command's class inherits them and adds its own keyword-only arguments."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

import tyro

from transfer.cli._checks import ASSET, CONFIG, ORDER, Reads

__all__ = ["CheckpointInputs"]


@dataclass(frozen=True)
class CheckpointInputs:
    """A checkpoint and what completes it: ``--source``, ``--config``, ``--asset`` (docs/replay.md)."""

    checkpoint: Annotated[tyro.conf.Positional[Path], tyro.conf.arg(metavar="CHECKPOINT|RUN_DIR"), Reads("checkpoint")]
    """TorchScript (.pt), ONNX (.onnx), RSL-RL training checkpoint (model_<iter>.pt), or an Isaac Lab run folder
    (params/env.yaml gives the task, the training engine's joint order and the asset path; docs/isaaclab.md)."""
    source: Annotated[str | None, tyro.conf.arg(metavar="CONVENTION"), ORDER] = None
    """The checkpoint's joint order: physx, mjwarp, robot_schema, mujoco (the MJCF's), or a file listing its joint
    names (default: the checkpoint's metadata, the config's, or a run folder's training engine)."""
    config: Annotated[Path | None, tyro.conf.arg(metavar="FILE.yaml"), CONFIG] = None
    """Task file (presets/tasks/*.yaml), Newton policy YAML or deploy config (Unitree's deploy.yaml, legged_gym's
    deploy_mujoco YAML): observation, action, defaults and gains by name (default: the checkpoint's metadata)."""
    asset: Annotated[Path | None, tyro.conf.arg(metavar="ROBOT.usd"), ASSET] = None
    """The robot's USD, MJCF (.xml) or URDF (.urdf) file (docs/import.md; default: the task's or the metadata's
    asset; for a run folder, its usd_path when that is a local file)."""
