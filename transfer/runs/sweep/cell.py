"""One sweep cell: a plain function of JSON-able parameters returning a JSON-able record.

:func:`run_cell` runs the replay a cell describes (:func:`transfer.runs.replay.replay` with the cell's
perturbation) and returns its record: the cell's parameters, the replay's ``--json`` fields, the wall time, and
``error`` (``None``, or what went wrong: a failing cell is a record, not an exception). It runs the same in this
process, in a local Ray worker or on a cluster node; nothing in it knows which.
"""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Mapping
from typing import Any

from transfer.env.perturbations import PERTURBATIONS
from transfer.runs.inputs import Inputs
from transfer.runs.replay import replay

__all__ = ["METRICS", "record_of", "run_cell"]

METRICS = ("forward_velocity", "lateral_velocity", "yaw_rate", "fall_fraction", "survival_seconds")
"""The replay's measurements a summary reads (``None`` in a failed cell's record)."""


def record_of(cell: Mapping[str, Any], error: str | None = None, wall: float = 0.0) -> dict[str, Any]:
    """A cell's record before (or without) a result: its key, its parameters flat (checkpoint, label, target,
    seed, command, each perturbation's value), the full parameters under ``cell``, ``error`` and the wall time."""
    params = {k: v for k, v in cell.items() if k not in ("key", "label", "inputs", "trace", "video")}
    return {
        "key": cell["key"],
        "checkpoint": cell["checkpoint"],
        "label": cell["label"],
        "target": cell["target"],
        "seed": cell["seed"],
        "command": list(cell["command"]),
        **{name: cell["perturbation"][name] for name in PERTURBATIONS},
        **{m: None for m in METRICS},
        "error": error,
        "trace": cell.get("trace"),
        "video": cell.get("video"),
        "wall_seconds": wall,
        "cell": params,
    }


def run_cell(cell: Mapping[str, Any]) -> dict[str, Any]:
    """Run one cell (a dict from :func:`transfer.runs.sweep.spec.expand`) and return its record. Every error is
    caught and recorded (``error``: its type and message); only the process dying loses a cell."""
    start = time.perf_counter()
    try:
        result = _replay(cell)
        if cell.get("video"):
            from transfer.runs.video import write_video

            write_video([result], cell["video"])
    except Exception as exc:  # noqa: BLE001 - a failing cell is recorded, the sweep goes on
        text = " ".join(str(exc).split()) or "(no message)"
        return record_of(cell, f"{type(exc).__name__}: {text}", time.perf_counter() - start) | _where()
    record = record_of(cell, None, time.perf_counter() - start)
    replayed = result.to_dict()
    replayed.pop("checkpoint")  # the cell's own path says it (a run folder's file is under policy_file)
    record["run"] = replayed.pop("label")  # native or reordered, as the replay calls it
    record.update({k: v for k, v in replayed.items() if k not in ("target", "command", "seed")})
    record["policy_file"] = result.checkpoint
    return record | _where()


def _replay(cell: Mapping[str, Any]) -> Any:
    import torch

    torch.set_num_threads(1)  # one core per cell: the engines are single-threaded here, torch must be too
    device = cell.get("device", "cpu")
    resolved = cell.get("inputs")  # resolved once by the spec (settings applied); else resolved here
    inputs = Inputs.from_dict(resolved, device=device) if resolved else None
    return replay(
        cell["checkpoint"],
        cell["target"],
        source=cell.get("source"),
        config=cell.get("config"),
        asset=cell.get("asset"),
        num_envs=int(cell["num_envs"]),
        seconds=float(cell["seconds"]),
        command=cell["command"],
        seed=int(cell["seed"]),
        progress=False,
        settings=None if inputs else cell.get("settings") or None,
        perturbation=cell["perturbation"],
        device=device,
        inputs=inputs,
        record=cell.get("trace"),
        **(cell.get("motion") or {}),
    )


def _where() -> dict[str, Any]:
    return {"host": socket.gethostname(), "pid": os.getpid()}
