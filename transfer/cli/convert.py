"""``transfer convert``: a checkpoint rewritten to another joint order, with the metadata that says so."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

import tyro

from transfer._console import print_error
from transfer.backends import native_backend
from transfer.cli._checks import ORDER, OutputFile
from transfer.cli._inputs import CheckpointInputs


@dataclass(frozen=True, kw_only=True)
class Convert(CheckpointInputs):
    """Write a copy of CHECKPOINT whose joint vectors follow --to instead of --source.

    The first layer's columns, the observation normalizer, the action layer's rows and the action std are permuted
    by joint name
    (the critic and optimizer too for RSL-RL checkpoints), checked on random observations, and saved with
    metadata naming the new order, the task and the asset. --to equal to --source stores the metadata only.
    The input is never written; OUT is written atomically.

    Examples, from the repository root:
      transfer convert checkpoints/quadruped_flat_physx/exported/policy.pt --to mjwarp -o policy_mjwarp.pt
      transfer convert checkpoints/quadruped_flat_physx/model_999.pt --to mjwarp -o model_mjwarp.pt --json
      transfer replay policy_mjwarp.pt --target newton

    Read docs/checkpoints.md."""

    to: Annotated[str, tyro.conf.arg(metavar="CONVENTION"), ORDER]
    """The new joint order: physx, mjwarp, robot_schema, mujoco, or a file listing joint names."""
    out: Annotated[
        Path, tyro.conf.arg(aliases=("-o",), metavar="OUT"), OutputFile((".pt", ".pth", ".onnx"), "checkpoint")
    ]
    """The output file (never the input; an existing file only with --force)."""
    force: bool = False
    """Replace OUT if it exists."""
    json: bool = False
    """Print one JSON object (path, format, source, to, joint_names, edits, checked, max_error, metadata)."""


def run_convert(cmd: Convert) -> int:
    from transfer.runs.convert import convert

    try:
        result = convert(
            cmd.checkpoint, cmd.to, out=cmd.out, source=cmd.source, config=cmd.config, asset=cmd.asset, force=cmd.force
        )
    except (FileNotFoundError, ValueError, NotImplementedError) as exc:
        print_error(exc)
        return 2
    if cmd.json:
        print(json.dumps(result.to_dict(), indent=2))
        return 0
    meta = result.metadata
    print(f"wrote {result.path} ({result.format}): joint order {result.source} -> {result.to}")
    if result.edits:
        for i, edit in enumerate(result.edits):
            print(f"  {'permuted' if i == 0 else '':8}  {edit}")
        print(
            f"  checked   {result.checked} random observations: actions equal the original's under the runtime "
            f"permutation (largest difference {result.max_error:.1e})"
        )
    else:
        print("  weights   untouched (same order): metadata added")
    asset = Path(meta["asset"]).name if meta["asset"] else "none"
    print(f"  metadata  {meta['convention'] or 'explicit list'} order, trained on {meta['trained_on']}, asset {asset}")
    backend = native_backend(meta["convention"])
    if backend is not None:
        extra = "" if meta["asset"] else " --asset ROBOT.usd"
        print(f"  run it    transfer replay {result.path} --target {backend}{extra}")
    return 0
