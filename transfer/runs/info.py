"""What ``transfer info`` prints (:func:`checkpoint_info`): the checkpoint file's own description
(:func:`transfer.formats.info.describe_file`), and, for an Isaac Lab run folder or with ``--config``, the metadata
the input layer resolves (:func:`transfer.runs.inputs.resolve_inputs`, the checkpoint not loaded twice): the same
task, order and robot a replay of it would use."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from transfer.formats.checkpoint import build_metadata
from transfer.formats.info import describe_file, observation_size, size_notes
from transfer.runs.inputs import locate_checkpoint, resolve_inputs

__all__ = ["checkpoint_info"]


def checkpoint_info(
    path: str | Path,
    *,
    asset: str | Path | None = None,
    config: str | Path | None = None,
    source: str | None = None,
) -> dict[str, Any]:
    """:func:`~transfer.formats.info.describe_file`'s keys for ``path``, a checkpoint file or an Isaac Lab run folder.

    A run folder (or a checkpoint file inside one): the checkpoint is the run's (the newest ``model_<iter>.pt``, else
    ``exported/policy.pt`` / ``.onnx``) and unless it carries a document of its own, ``metadata`` is the one its
    ``params/env.yaml`` gives on ``asset`` (the run's ``usd_path`` when that is a local file); ``run`` says where it
    came from. With ``config`` (and ``source``): the metadata of the task read from it, and ``sources`` says which
    file or flag gave the task, the order and the robot. Raises what :func:`resolve_inputs` raises.
    """
    path = Path(path)
    if source is not None and config is None:
        raise ValueError("--source reads the checkpoint with --config: give the config it ships with")
    if config is None:
        file, options, run = locate_checkpoint(path)
        info = describe_file(file, **options)
        if run is None:
            if asset is not None:
                info["notes"].append(
                    f"--asset {asset} is not used: it names the robot of a run folder, and {path.name} is a file"
                )
            return info
        if info["metadata"] is not None:  # it speaks for itself: nothing of the run is resolved
            info["notes"].append(f"{file.name} carries its own metadata; params/env.yaml is not used")
            info["run"] = _run(run, info)
            return info
    inputs = resolve_inputs(path, source=source, config=config, asset=asset, load=False)
    if config is not None:
        info = describe_file(inputs.policy.path, **inputs.policy_options)
    info["notes"] += [*inputs.notes, *inputs.warnings]
    if inputs.policy.metadata is None:
        meta = _metadata(inputs)
        info.update(metadata=meta, observation_size=observation_size(meta))
        info["notes"] += size_notes(info)
    if config is not None:
        order = f"--source {source}" if source else f"{config} ({inputs.source_label})"
        info["sources"] = {
            "task": str(config),
            "joint order": f"{order} on {inputs.asset_given}",
            "asset": f"--asset {asset}" if asset else f"{config} ({inputs.asset_given})",
        }
    else:
        info["run"] = _run(inputs.run, info)
    return info


def _run(run: Any, info: dict[str, Any]) -> dict[str, Any]:
    return {
        "folder": str(run.folder),
        "env_yaml": str(run.env_yaml),
        "checkpoint": info["checkpoint"],
        "usd_path": run.usd_path,
        "trained_on": run.trained_on,
        "order": run.order,
    }


def _metadata(inputs: Any) -> dict[str, Any]:
    """The document of the resolved inputs, in the keys :func:`build_metadata` writes."""
    task = inputs.task
    names = inputs.robot.order(inputs.source).joints
    return build_metadata(
        task,
        names,
        convention=task.convention,
        trained_on=task.trained_on,
        asset=str(task.asset if inputs.run is not None else inputs.asset_given),
    )
