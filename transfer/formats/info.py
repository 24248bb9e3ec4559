"""What ``transfer info`` prints about a checkpoint (:func:`checkpoint_info`): its format, sizes and metadata."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from transfer.checkpoint import build_metadata
from transfer.formats import detect_format, load_policy
from transfer.policy import PolicyError

__all__ = ["checkpoint_info", "observation_size"]


def observation_size(meta: dict[str, Any]) -> int:
    """The observation a metadata document describes: each term's entries times the steps of history it stacks."""
    return sum(int(t["size"]) * max(1, int(t.get("history_length") or 0)) for t in meta["observation"])


def checkpoint_info(path: str | Path, *, asset: str | Path | None = None) -> dict[str, Any]:
    """What ``transfer info`` prints: ``checkpoint``, ``format``, ``input_size``, ``output_size``, ``metadata`` (the
    document or ``None``), ``observation_size`` (from the metadata, or ``None``) and ``notes``.

    ``path`` may be an Isaac Lab run folder (or a checkpoint file inside one): the checkpoint is the run's
    (:func:`transfer.task.isaaclab.run_checkpoint`), and unless it carries a document of its own, ``metadata`` is
    the document derived from the run's ``params/env.yaml`` on ``asset`` (the run's ``usd_path`` when that is a
    local file), in the keys :func:`build_metadata` writes; ``run`` says where it came from.

    An RSL-RL actor without a std parameter is sized from its last layer (its distribution cannot be told from the
    weights; a note says so). Raises ``FileNotFoundError``, :class:`~transfer.policy.PolicyError`, and
    :class:`~transfer.checkpoint.CheckpointError` for metadata of another format version.
    """
    from transfer.task.isaaclab import find_run, read_isaaclab_run

    path = Path(path)
    notes: list[str] = []
    run = read_isaaclab_run(path) if find_run(path) is not None else None
    file = run.checkpoint if run is not None else path
    options = run.policy_options() if run is not None and detect_format(file) == "rsl_rl" else {}
    try:
        policy = load_policy(file, **options)
    except PolicyError as exc:
        if "distribution=" not in str(exc):
            raise
        policy = load_policy(file, **options, distribution="none")
        notes.append("no std parameter: output_size is the last layer's (the distribution is not in the weights)")
    meta = policy.metadata
    run_info = None
    if run is not None:
        run_info = {"folder": str(run.folder), "env_yaml": str(run.env_yaml), "checkpoint": str(file),
                    "usd_path": run.usd_path, "trained_on": run.trained_on, "order": run.order}  # fmt: skip
        if meta is None:
            meta = _run_metadata(run, asset, notes)
        else:
            notes.append(f"{file.name} carries its own metadata; params/env.yaml is not used")
    if run is None and asset is not None:
        notes.append(f"--asset {asset} is not used: it names the robot of a run folder, and {path.name} is a file")
    obs_size = None
    if meta is not None:
        obs_size = observation_size(meta)
        if obs_size != policy.input_size:
            notes.append(f"the metadata's observation has {obs_size} entries, the network reads {policy.input_size}")
    out = {
        "checkpoint": str(file),
        "format": policy.format,
        "input_size": policy.input_size,
        "output_size": policy.output_size,
        "observation_size": obs_size,
        "metadata": meta,
        "notes": notes,
    }
    if run_info is not None:
        out["run"] = run_info
    return out


def _run_metadata(run: Any, asset: str | Path | None, notes: list[str]) -> dict[str, Any]:
    """The document of an Isaac Lab run's checkpoint, derived from its ``params/env.yaml`` on the asset."""
    from transfer.assets import resolve_asset
    from transfer.orders import resolve_ordering
    from transfer.task.isaaclab import isaaclab_task

    path = resolve_asset(run.asset_path(asset))  # an MJCF/URDF robot: its converted USD, as replay opens it
    joints = resolve_ordering(path, run.order).joints
    task = isaaclab_task(run, joints, asset=path, notes=notes)
    return build_metadata(task, joints, convention=run.convention, trained_on=run.trained_on, asset=task.asset)
