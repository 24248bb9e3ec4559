"""Recorded traces as Parquet files: one row per policy step and env, one column per named quantity.

Columns (every engine writes the same ones for the same checkpoint and task):

- ``step`` (int32, 0-based policy step), ``time`` (float64, s after that step), ``env`` (int32), ``alive`` (bool)
- ``obs.<term>.<i>``: element ``i`` of observation term ``<term>``, as the policy read it (float32)
- ``action.<joint>``: the policy's action for that joint (float32)
- ``target.<joint>``, ``position.<joint>``, ``velocity.<joint>``, ``effort.<joint>`` (float32; rad, rad/s, N·m
  for revolute joints) and ``saturated.<joint>`` (bool: the effort at its limit)
- ``base.pos.{x,y,z}``, ``base.quat.{x,y,z,w}``, ``base.lin_vel.{x,y,z}``, ``base.ang_vel.{x,y,z}`` (world frame)
- ``contact.<foot>`` (bool), ``foot_height.<foot>`` (m), ``foot_speed.<foot>`` (horizontal, m/s),
  ``contact_force.<foot>`` (N, the engine's own; NaN where the engine reports none)

The file's key-value metadata ``transfer.trace`` holds one JSON object: ``schema`` (:data:`SCHEMA`), ``engine``,
``policy_dt``, ``joint_names``, ``action_names``, ``foot_names``, and what the run was (``label``, ``checkpoint``,
``asset``, ``order``, ``settings``: the simulation settings in effect, ``task``: the whole task). Read one with
:func:`read_trace` or with ``pandas.read_parquet``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from transfer._console import printable
from transfer.errors import strict_json
from transfer.formats.checkpoint import atomic_write
from transfer.traces.record import TRACKING, Recorder, Recording

__all__ = ["SCHEMA", "TraceError", "check_destination", "read_trace", "trace_paths", "write_trace"]

SCHEMA = "transfer.trace/1"
"""The schema name and version every trace file carries in its metadata."""
META_KEY = b"transfer.trace"


class TraceError(ValueError):
    """A trace file that cannot be written or read (named, with what to do)."""


def _pyarrow():
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise TraceError("recording traces needs pyarrow: pip install 'transfer[traces]'") from None
    return pa, pq


def columns(rec: Recording) -> dict[str, np.ndarray]:
    """The recording as flat columns, rows ordered by step then env."""
    steps, n = rec.arrays["alive"].shape
    flat = lambda x: x.reshape(steps * n, *x.shape[2:])  # noqa: E731
    out: dict[str, np.ndarray] = {
        "step": np.repeat(np.arange(steps, dtype=np.int32), n),
        "time": np.repeat(rec.time.astype(np.float64), n),
        "env": np.tile(np.arange(n, dtype=np.int32), steps),
        "alive": flat(rec.arrays["alive"]),
    }
    groups = [("obs", "observation", rec.observation_names), ("action", "action", rec.action_names)]
    groups += [(key, key, rec.joint_names) for key in ("target", "position", "velocity", "effort", "saturated")]
    groups += [("base", "base", list(Recorder.BASE))]
    groups += [(key, key, rec.foot_names) for key in ("contact", "foot_height", "foot_speed", "contact_force")]
    groups += [("reference", "reference", rec.joint_names), ("tracking", "tracking", list(TRACKING))]  # trackers
    groups += [("reference_base", "reference_base", list(Recorder.BASE[:7]))]
    for prefix, key, names in groups:
        if key not in rec.arrays or not names:
            continue
        values = flat(rec.arrays[key])
        for i, name in enumerate(names):
            out[f"{prefix}.{name}"] = np.ascontiguousarray(values[:, i])
    return out


def check_destination(path: str | Path) -> Path:
    """Refuse, before a run, a trace destination that cannot be written or must not be replaced: pyarrow missing, a
    folder, a missing folder, a name not ending in ``.parquet``, or an existing file that is no trace (a checkpoint,
    a task, anything of the user's: never overwritten). An earlier trace there is replaced."""
    pa, pq = _pyarrow()
    path = Path(path)
    if path.is_dir():
        raise TraceError(f"--record {path}: is a folder; give a file name such as {path / 'trace.parquet'}")
    if path.exists() and not path.is_file():  # reading a FIFO's schema would block, a device's never end
        raise TraceError(f"--record {path}: not a regular file (a FIFO, a device or a socket); give a file name")
    if path.exists():
        try:
            with open(path, "rb") as file:  # a Python file: whatever bytes the folder's name holds
                meta = (pq.read_schema(file).metadata or {}).get(META_KEY)
        except (pa.ArrowException, OSError):
            meta = None
        if meta is None:
            raise TraceError(
                f"--record {path}: exists and is not a transfer trace; it is never overwritten: give another file name"
            )
    if path.suffix != ".parquet":
        raise TraceError(
            f"--record {path}: a trace is a Parquet file; give a name ending in .parquet, such as "
            f"{path.with_suffix('.parquet')}"
        )
    if not path.parent.is_dir():
        raise TraceError(f"--record {path}: the folder {path.parent} does not exist; create it first")
    return path


def write_trace(rec: Recording, path: str | Path) -> Path:
    """Write ``rec`` to ``path`` (Parquet), atomically: a file there is replaced only once the new one is whole."""
    pa, pq = _pyarrow()
    path = check_destination(path)
    meta = {
        "schema": SCHEMA,
        "engine": rec.engine,
        "policy_dt": rec.policy_dt,
        "joint_names": rec.joint_names,
        "action_names": rec.action_names,
        "foot_names": rec.foot_names,
        **rec.meta,
    }
    cols = columns(rec)
    table = pa.table(cols).replace_schema_metadata({META_KEY: json.dumps(meta, default=str).encode()})

    return atomic_write(path, lambda tmp: _write_table(pq, table, tmp))


def _write_table(pq: Any, table: Any, path: Any) -> None:
    """Parquet written through a Python file: a folder name that is no UTF-8 (bytes the file system allows) would
    stop pyarrow's own path handling after the run."""
    with open(path, "wb") as out:
        pq.write_table(table, out, compression="zstd")


def read_trace(path: str | Path) -> tuple[Any, dict[str, Any]]:
    """``(table, metadata)``: the trace at ``path`` as a :class:`pyarrow.Table` and its ``transfer.trace``
    metadata. Refuses a file that is not a trace, naming it."""
    pa, pq = _pyarrow()
    path = Path(path)
    if path.is_dir():
        raise TraceError(f"trace {path}: is a folder; give a trace file (FILE.parquet)")
    if path.exists() and not path.is_file():
        raise TraceError(f"trace {path}: not a regular file (a FIFO, a device or a socket); give a trace file")
    if not path.is_file():
        raise TraceError(f"trace {path}: no such file (write one with transfer replay ... --record {path})")
    try:
        with open(path, "rb") as file:
            table = pq.read_table(file)
    except (pa.ArrowException, OSError) as exc:
        raise TraceError(f"trace {path}: not a Parquet file ({exc})") from None
    meta = _metadata(path, (table.schema.metadata or {}).get(META_KEY))
    _check_table(path, table, meta, pa)
    return table, meta


def _metadata(path: Path, raw: bytes | None) -> dict[str, Any]:
    """The trace metadata document of ``path``: present, one JSON object, of this schema version."""
    if not raw:
        raise TraceError(
            f"trace {path}: a Parquet file without transfer's trace metadata; was it written by "
            "transfer replay --record?"
        )
    try:
        meta = strict_json(raw)
    except ValueError as exc:  # not JSON, or a key given twice
        raise TraceError(
            f"trace {path}: its trace metadata ({META_KEY.decode()}) is not one JSON document: {printable(exc, 200)}"
        ) from None
    schema = meta.get("schema") if isinstance(meta, dict) else None
    if not isinstance(schema, str) or not schema.startswith("transfer.trace/"):
        raise TraceError(
            f"trace {path}: its metadata names no transfer trace schema; was it written by transfer replay --record?"
        )
    if schema != SCHEMA:
        raise TraceError(
            f"trace {path}: schema {printable(schema, 40)}, but this transfer reads {SCHEMA}; read it "
            "with the transfer that wrote it, or record it again"
        )
    return meta


def _check_table(path: Path, table: Any, meta: dict[str, Any], pa: Any) -> None:
    """The table is a whole trace: printable names, the index columns, numbers in every column, samples at all,
    finite times, each (env, step) once."""
    odd = next(
        (c for c in [*table.column_names, *map(str, meta.get("joint_names") or [])] if not c.isprintable()), None
    )
    if odd is not None:  # joint and body names come from the robot, which holds none: a name would reach the terminal
        raise TraceError(
            f"trace {path}: the name '{printable(odd, 80)}' holds control characters (escape sequences, "
            "line breaks); a trace transfer writes holds none"
        )
    for column in ("step", "time", "env", "alive"):
        if column not in table.column_names:
            raise TraceError(f"trace {path}: no '{column}' column; the file is not a whole transfer trace")
    for field in table.schema:
        kind = field.type
        if not (pa.types.is_integer(kind) or pa.types.is_floating(kind) or pa.types.is_boolean(kind)):
            raise TraceError(
                f"trace {path}: column '{printable(field.name, 80)}' holds {kind}, not numbers; the file "
                "is not a trace transfer wrote"
            )
    if table.num_rows == 0:
        raise TraceError(f"trace {path}: holds no sample (0 rows); record it again")
    time = table.column("time").to_numpy(zero_copy_only=False).astype(np.float64)
    if not np.isfinite(time).all():
        raise TraceError(f"trace {path}: its 'time' column holds NaN or infinite values; record it again")
    env = table.column("env").to_numpy(zero_copy_only=False).astype(np.int64)
    step = table.column("step").to_numpy(zero_copy_only=False).astype(np.int64)
    if len(np.unique(np.stack([env, step]), axis=1)[0]) != table.num_rows:
        raise TraceError(
            f"trace {path}: holds some (env, step) sample more than once (two traces joined?); give one recorded trace"
        )


def trace_paths(path: str | Path, labels: list[str]) -> list[Path]:
    """One file per run of a ``--compare`` given one ``--record`` path: ``trace.parquet`` becomes
    ``trace.native-physx.parquet``, ... (by ``labels``), each checked (:func:`check_destination`) before any runs."""
    path = check_destination(path)
    return [check_destination(path.with_name(f"{path.stem}.{label}.parquet")) for label in labels]
