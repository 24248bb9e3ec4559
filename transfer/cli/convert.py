"""``transfer convert``: a checkpoint rewritten to another joint order, with the metadata that says so."""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

import tyro

from transfer.backends import native_backend
from transfer.cli._checks import ASSET, CONFIG, ORDER, OutputFile


@dataclass(frozen=True)
class Convert:
    """Write a copy of CHECKPOINT whose joint vectors follow --to instead of --source: the first layer's
    columns, the observation normalizer, the action layer's rows and the action std are permuted by joint name
    (the critic and optimizer too for RSL-RL checkpoints), checked on random observations, and saved with
    metadata naming the new order, the task and the asset. --to equal to --source stores the metadata only.
    The input is never written; OUT is written atomically."""

    checkpoint: Annotated[tyro.conf.Positional[Path], tyro.conf.arg(metavar="CHECKPOINT|RUN_DIR")]
    """TorchScript (.pt), ONNX (.onnx), RSL-RL training checkpoint (model_<iter>.pt), or an Isaac Lab run folder
    (params/env.yaml gives the task, the training engine's joint order and the asset path; docs/isaaclab.md)."""
    to: Annotated[str, tyro.conf.arg(metavar="CONVENTION"), ORDER]
    """The new joint order: physx, mjwarp, robot_schema, mujoco, or a file listing joint names."""
    out: Annotated[
        Path, tyro.conf.arg(aliases=("-o",), metavar="OUT"), OutputFile((".pt", ".pth", ".onnx"), "checkpoint")
    ]
    """The output file (never the input; an existing file only with --force)."""
    source: Annotated[str | None, tyro.conf.arg(metavar="CONVENTION"), ORDER] = None
    """The checkpoint's joint order (same forms); default: its metadata's, the config's, or a run folder's
    training engine's."""
    config: Annotated[Path | None, tyro.conf.arg(metavar="FILE.yaml"), CONFIG] = None
    """Task file (presets/tasks/*.yaml) or Newton policy YAML; default: the checkpoint's metadata."""
    asset: Annotated[Path | None, tyro.conf.arg(metavar="ROBOT.usd"), ASSET] = None
    """The robot's USD, MJCF (.xml) or URDF (.urdf) file (docs/import.md; default: the task's or the metadata's
    asset, or a run folder's local usd_path); both orders are resolved from it."""
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
        print(f"error: {exc}", file=sys.stderr)
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
