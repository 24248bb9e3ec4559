"""``transfer task``: a starting task file for a robot asset (:mod:`transfer.runs.task_file`)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

import tyro

from transfer._console import print_error
from transfer.cli._checks import ROBOT, OutputFile, Reads

TASK_OUT = OutputFile((".yaml", ".yml"), "task file")


@dataclass(frozen=True)
class TaskFile:
    """Write a starting task file (format transfer-task/1) for ASSET, with '# DECIDE:' comments where a human
    must choose.

    It holds every joint in both engines' orders, defaults from the authored pose or drive targets, gains from the
    drives (per radian), Isaac Lab's flat-velocity observation and action sized for the robot and the simulation
    settings in effect. Exit 2 on bad input or sizes that disagree with --checkpoint.

    Examples, from the repository root:
      transfer task transfer:quadruped.usda -o quadruped_task.yaml
      transfer task transfer:quadruped.usda -o quadruped_task.yaml --checkpoint checkpoints/quadruped_flat_physx/exported/policy.pt --source physx --force

    Read docs/task.md (and presets/tasks/README.md for the format)."""

    asset: Annotated[tyro.conf.Positional[Path], tyro.conf.arg(metavar="ASSET"), ROBOT]
    """The robot's USD file, or its MJCF (.xml) or URDF (.urdf) file (converted; docs/import.md). Read only."""
    output: Annotated[Path, tyro.conf.arg(name="output", aliases=("-o",), metavar="TASK.yaml"), TASK_OUT]
    """The task file to write (refused when it exists, unless --force)."""
    checkpoint: Annotated[Path | None, tyro.conf.arg(metavar="CKPT"), Reads("checkpoint")] = None
    """A policy (.pt, .onnx, RSL-RL checkpoint): its input and output sizes are checked against the task's."""
    source: Annotated[str | None, tyro.conf.arg(metavar="CONVENTION")] = None
    """The checkpoint's joint order (physx, mjwarp, robot_schema): written as the task's convention."""
    force: bool = False
    """Overwrite an existing output file."""
    json: bool = False
    """Print what was written (path, sizes, fields to decide) as one JSON object."""


def run_task(cmd: TaskFile) -> int:
    from transfer.orders import OrderingError
    from transfer.runs.task_file import TaskFileError, write_task_file
    from transfer.task import TaskError

    try:
        result = write_task_file(cmd.asset, cmd.output, checkpoint=cmd.checkpoint, source=cmd.source, force=cmd.force)
    except (FileNotFoundError, OrderingError, TaskFileError, TaskError, ValueError) as exc:
        print_error(exc)
        return 2
    summary = {
        "output": str(cmd.output),
        "joints": len(result.joints),
        "observation_size": result.observation_size,
        "action_size": result.action_size,
        "checkpoint": result.checkpoint,
        "decide": result.decide,
    }
    if cmd.json:
        print(json.dumps(summary, indent=2))
        return 0
    print(
        f"wrote {cmd.output}: {len(result.joints)} joints, {result.observation_size} observations, "
        f"{result.action_size} actions" + (" (checked against the checkpoint)" if result.checkpoint else "")
    )
    print(f"decide (lines marked '# DECIDE:'): {', '.join(result.decide)}")
    return 0
