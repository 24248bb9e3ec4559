"""What a checkpoint file says about itself (:func:`describe_file`): its format, sizes and metadata. ``transfer
info`` adds what its run folder or config says through the input layer (:mod:`transfer.runs.info`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from transfer.formats import load_policy
from transfer.formats.policy import PolicyError

__all__ = ["describe_file", "observation_size", "size_notes"]


def observation_size(meta: dict[str, Any]) -> int:
    """The observation a metadata document describes: each term's entries times the steps of history it stacks."""
    return sum(int(t["size"]) * max(1, int(t.get("history_length") or 0)) for t in meta["observation"])


def describe_file(path: str | Path, **options: Any) -> dict[str, Any]:
    """``checkpoint``, ``format``, ``input_size``, ``output_size``, ``metadata`` (the document or ``None``),
    ``observation_size`` (from the metadata, or ``None``) and ``notes`` of the checkpoint file ``path``, loaded with
    ``options`` (an RSL-RL actor's, from its run).

    An RSL-RL actor without a std parameter is sized from its last layer (its distribution cannot be told from the
    weights; a note says so). Raises ``FileNotFoundError``, :class:`~transfer.formats.policy.PolicyError`, and
    :class:`~transfer.formats.checkpoint.CheckpointError` for metadata of another format version.
    """
    notes: list[str] = []
    try:
        policy = load_policy(path, **options)
    except PolicyError as exc:
        if "distribution=" not in str(exc):
            raise
        policy = load_policy(path, **options, distribution="none")
        notes.append("no std parameter: output_size is the last layer's (the distribution is not in the weights)")
    meta = policy.metadata
    info = {
        "checkpoint": str(policy.path),
        "format": policy.format,
        "input_size": policy.input_size,
        "output_size": policy.output_size,
        "observation_size": None if meta is None else observation_size(meta),
        "metadata": meta,
        "notes": notes,
    }
    notes += size_notes(info)
    return info


def size_notes(info: dict[str, Any]) -> list[str]:
    """A note when ``info``'s metadata describes an observation of another size than the network reads."""
    size, reads = info["observation_size"], info["input_size"]
    if size is None or size == reads:
        return []
    return [f"the metadata's observation has {size} entries, the network reads {reads}"]
