"""``transfer export``: a checkpoint written as the files a robot's own controller reads (Unitree's deploy)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Literal

import tyro

from transfer._console import print_error
from transfer.cli._checks import OutputDir, Reads
from transfer.cli._help import DEFAULT_IN_TEXT
from transfer.cli._inputs import CheckpointInputs


@dataclass(frozen=True, kw_only=True)
class Export(CheckpointInputs):
    """Write CHECKPOINT as OUT/exported/policy.onnx and OUT/params/deploy.yaml, the files Unitree's deploy reads.

    The ONNX model is feed-forward with one input named obs and the normalizer inside, checked against the
    checkpoint on random observations; deploy.yaml is in the layout unitree_rl_lab's export_deploy_cfg.py writes
    (joint_ids_map to the robot's SDK motors, gains by motor, the action and every observation term). A recurrent
    actor and a term the robot cannot measure (base_lin_vel: --allow it if the controller estimates it) are
    refused; nothing is written then.

    Examples, from the repository root (the project quadruped is no Unitree robot: its motor order is a file):
      transfer export checkpoints/quadruped_flat_physx/exported/policy.pt --to unitree -o quadruped_unitree --motor-order presets/robots/quadruped_motors.txt --allow base_lin_vel
      transfer info quadruped_unitree/exported/policy.onnx
      transfer replay quadruped_unitree/exported/policy.onnx --target newton --seconds 2

    Read docs/export.md (what to check on the robot first)."""

    to: Annotated[Literal["unitree"], tyro.conf.arg(metavar="ROBOT")]
    """The robot's controller: unitree (unitree_rl_lab's C++ deploy: G1, Go2 built in; others by --motor-order)."""
    out: Annotated[Path, tyro.conf.arg(aliases=("-o",), metavar="OUT"), OutputDir()]
    """The folder written: OUT/exported/policy.onnx and OUT/params/deploy.yaml (an existing one only with --force)."""
    motor_order: Annotated[Path | None, tyro.conf.arg(metavar="FILE"), Reads("motor order"), DEFAULT_IN_TEXT] = None
    """The robot's SDK motor names in order, one a line (default: the run's joint_sdk_names, else the built-in G1 /
    Go2 order that holds the policy's joints)."""
    allow: Annotated[tuple[str, ...], tyro.conf.UseAppendAction, tyro.conf.arg(metavar="TERM")] = ()
    """An observation term the robot cannot measure that its controller estimates (base_lin_vel); repeatable."""
    force: bool = False
    """Replace the files in an existing OUT."""
    json: bool = False
    """Print one JSON object (folder, policy, deploy, robot, joint_names, motor_names, joint_ids_map, checked, ...)."""


def run_export(cmd: Export) -> int:
    from transfer.runs.export import export

    try:
        result = export(
            cmd.checkpoint,
            out=cmd.out,
            to=cmd.to,
            source=cmd.source,
            config=cmd.config,
            asset=cmd.asset,
            motor_order=cmd.motor_order,
            allow=cmd.allow,
            force=cmd.force,
        )
    except (FileNotFoundError, ValueError, NotImplementedError) as exc:
        print_error(exc)
        return 2
    if cmd.json:
        print(json.dumps(result.to_dict(), indent=2))
        return 0
    print(f"wrote {result.folder}: exported/policy.onnx and params/deploy.yaml for Unitree's deploy")
    print(f"  motors    {result.robot} ({len(result.motor_names)}); joint_ids_map {list(result.joint_ids_map)}")
    print(
        f"  checked   {result.checked} random observations: the ONNX model's actions equal the checkpoint's "
        f"(largest difference {result.max_error:.1e})"
    )
    if result.allowed:
        print(f"  allowed   {', '.join(result.allowed)}: the robot's controller must estimate them")
    for warning in result.warnings:
        print(f"warning: {warning}")
    print("  next      read docs/export.md: zero torque, default pose, then run (Unitree's order)")
    return 0
