"""Self-describing checkpoints: one JSON document inside the file says which order its vectors follow.

The document (:func:`build_metadata`) is the checkpoint's task, expanded for its joints, plus what only a
checkpoint knows. It is stored where each format keeps extra data:

- TorchScript: the archive's extra file ``transfer.json`` (``torch.jit.save(..., _extra_files=...)``);
- ONNX: the model's ``metadata_props`` entry ``transfer`` (a JSON string);
- RSL-RL training checkpoints: the dict's key ``transfer`` (a plain dict: ``torch.load(weights_only=True)`` reads
  it back).

Schema (``format: transfer-checkpoint/1``; docs/checkpoints.md has the table): the fields of
:meth:`transfer.Task.to_dict` (with ``sim_dt`` and ``decimation`` grouped as ``sim: {dt, decimation}``, and no
``format`` of their own), where ``joint_names`` is the order of every joint-indexed vector of the checkpoint,
mappings are keyed by those names, and observation terms carry their resolved sizes; plus ``format``,
``body_names`` (or null), ``history`` (what produced the file) and, for an MJCF/URDF asset only, ``asset_source``
(:func:`transfer.robot.assets.asset_source`: the file, its sha256, its references' sha256, the converter and its
version). :func:`metadata_to_task` gives the task back.

This module is the schema only: build, check, encode and decode the document, give its task back, merge it with a
config (:func:`merge_config`, :func:`task_contradictions`), and the output rules every writer follows
(:func:`check_output`, :func:`atomic_write`, :data:`SUFFIXES`). Reading and writing the document inside each
format's file is :mod:`transfer.formats`' (:func:`transfer.formats.read_metadata`,
:func:`transfer.formats.write_metadata`: a copy, written atomically, never over the input). No format module is
imported here.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import json
import os
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from transfer._files import DiskFullError, put_in_place, same_file, umask_mode
from transfer._files import disk_full as _disk_full
from transfer.errors import strict_json
from transfer.robot.assets import asset_source
from transfer.task import Task, TaskError

__all__ = [
    "CHECKPOINT_FORMAT",
    "METADATA_KEY",
    "TORCHSCRIPT_EXTRA_FILE",
    "SUFFIXES",
    "CheckpointError",
    "DiskFullError",
    "atomic_write",
    "new_output",
    "build_metadata",
    "check_metadata",
    "check_output",
    "decode_metadata",
    "encode_metadata",
    "merge_config",
    "metadata_to_task",
    "task_contradictions",
]

CHECKPOINT_FORMAT = "transfer-checkpoint/1"
"""The ``format`` of the metadata document (bump on an incompatible change; older readers then refuse it)."""
_FORMAT_PREFIX = "transfer-checkpoint/"
METADATA_KEY = "transfer"
"""ONNX ``metadata_props`` key and RSL-RL dict key of the document."""
TORCHSCRIPT_EXTRA_FILE = "transfer.json"
"""The TorchScript archive's extra file holding the document."""

_OWN_KEYS = ("format", "body_names", "sim", "history", "asset_source")
"""Keys of the document that are not :meth:`Task.to_dict` fields (``sim`` stands for ``sim_dt``/``decimation``)."""
_HEAD = (
    "format",
    "joint_names",
    "body_names",
    "convention",
    "trained_on",
    "asset",
    "observation",
    "action",
    "default_joint_pos",
    "stiffness",
    "damping",
    "armature",
    "effort_limit",
    "sim",
)
"""The document's first keys, in this order (the rest follow in :meth:`Task.to_dict`'s order)."""


class CheckpointError(ValueError):
    """Checkpoint metadata is malformed, of a format this version does not read, or an output path is refused."""


# ---------------------------------------------------------------------------------------------------- the document


def build_metadata(
    task: Task,
    joint_names: Sequence[str],
    *,
    body_names: Sequence[str] | None = None,
    convention: str | None = None,
    trained_on: str | None = None,
    asset: str | None = None,
    history: Sequence[Mapping[str, Any]] = (),
) -> dict[str, Any]:
    """The metadata document of a checkpoint whose joint vectors follow ``joint_names``.

    ``task`` is expanded for ``joint_names`` (its own listed order, if any, is dropped: ``joint_names`` is the
    checkpoint's order now): defaults and gains become per-joint values in that order, ``action.joints`` names,
    and every observation term gets its size. ``convention`` names the order when it is a convention's
    (``physx``, ``mjwarp``, ``robot_schema``), else ``None``; ``trained_on`` and ``asset`` default to the task's.
    ``body_names``: the checkpoint's body order, when known (needed when an observation term indexes bodies).
    """
    plain = dataclasses.replace(task, joint_names=None, convention=None, joint_names_by_convention={})
    expanded = plain.with_joint_names(tuple(joint_names))
    bodies = None if body_names is None else len(body_names)
    sizes = expanded.term_slices(len(expanded.joint_names), bodies)
    observation = tuple(
        dataclasses.replace(t, size=(sizes[t.name].stop - sizes[t.name].start) // t.steps) for t in task.observation
    )  # one step's entries (the history is the term's own field)
    final = dataclasses.replace(
        expanded,
        observation=observation,
        convention=convention,
        trained_on=task.trained_on if trained_on is None else trained_on,
        asset=task.asset if asset is None else str(asset),
    )
    data = final.to_dict()
    del data["format"]
    if data["velocity_limit"] is None:  # unset: left out, so that a reader older than the field opens the file
        del data["velocity_limit"]
    data["sim"] = {"dt": data.pop("sim_dt"), "decimation": data.pop("decimation")}
    data["format"] = CHECKPOINT_FORMAT
    data["body_names"] = None if body_names is None else list(body_names)
    data["history"] = [dict(h) for h in history]
    meta: dict[str, Any] = {}
    source = asset_source(final.asset)
    for key in _HEAD:
        meta[key] = data.pop(key)
        if key == "asset" and source is not None:  # an MJCF/URDF asset: the file, its hashes, the converter
            meta["asset_source"] = source
    meta.update(data)
    return check_metadata(meta)


def metadata_to_task(meta: Mapping[str, Any], *, source: str | None = None) -> Task:
    """The task a metadata document describes (``joint_names`` and ``convention`` set: the checkpoint's order)."""
    where = source or "checkpoint metadata"
    _check_format(meta, where)
    data = {k: v for k, v in meta.items() if k not in _OWN_KEYS}
    sim = meta.get("sim")
    if not isinstance(sim, Mapping) or set(sim) != {"dt", "decimation"}:
        raise CheckpointError(f"{where}: `sim` must be a mapping with exactly `dt` and `decimation`, got {sim!r}")
    data["sim_dt"], data["decimation"] = sim["dt"], sim["decimation"]
    try:
        return Task.from_dict(data, source=where)
    except TaskError as exc:
        raise CheckpointError(str(exc)) from None


def _check_format(meta: Any, where: str) -> None:
    if not isinstance(meta, Mapping):
        raise CheckpointError(f"{where}: expected a JSON object, got {type(meta).__name__}")
    fmt = meta.get("format")
    if fmt == CHECKPOINT_FORMAT:
        return
    if isinstance(fmt, str) and fmt.startswith(_FORMAT_PREFIX):
        raise CheckpointError(
            f"{where}: metadata format {fmt!r} is not one this version of transfer reads (it reads "
            f"{CHECKPOINT_FORMAT!r}); the checkpoint was written by another version. Upgrade transfer, or "
            "replay with explicit --source/--config/--asset."
        )
    raise CheckpointError(
        f"{where}: not transfer checkpoint metadata: `format` is {fmt!r}, expected {CHECKPOINT_FORMAT!r}"
    )


def check_metadata(meta: Any, where: str = "checkpoint metadata") -> dict[str, Any]:
    """Validate a metadata document; returns it as a plain dict. Raises :class:`CheckpointError` naming the field.

    Checks the format, the checkpoint's own keys, and the task part (:func:`metadata_to_task`): every mapping is
    keyed by ``joint_names``, defaults cover every joint, and the observation sizes fit the joint (and body) count.
    """
    task = metadata_to_task(meta, source=where)
    meta = dict(meta)
    if task.joint_names is None:
        raise CheckpointError(f"{where}: `joint_names` is null; the checkpoint's joint order is what it must say")
    bodies = meta.get("body_names")
    if bodies is not None and (
        isinstance(bodies, str) or not isinstance(bodies, Sequence) or not all(isinstance(b, str) for b in bodies)
    ):
        raise CheckpointError(f"{where}: `body_names` must be a list of names or null, got {bodies!r}")
    source = meta.get("asset_source")
    if source is not None and (
        not isinstance(source, Mapping) or not all(isinstance(v, str | None) for v in source.values())
    ):
        raise CheckpointError(f"{where}: `asset_source` must be an object of strings (or absent), got {source!r}")
    history = meta.get("history", [])
    if not isinstance(history, list) or not all(isinstance(h, Mapping) for h in history):
        raise CheckpointError(f"{where}: `history` must be a list of objects, got {history!r}")
    try:
        expanded = task.with_joint_names(task.joint_names)
        expanded.term_slices(len(task.joint_names), None if bodies is None else len(bodies))
    except (TaskError, ValueError) as exc:
        raise CheckpointError(f"{where}: {exc}") from None
    for field in ("default_joint_pos", "stiffness", "damping", "armature", "friction"):
        if dict(getattr(expanded, field)) != dict(getattr(task, field)):
            raise CheckpointError(f"{where}: `{field}` must be keyed by the joint names of `joint_names`")
    if isinstance(task.action.scale, Mapping) and dict(expanded.action.scale) != dict(task.action.scale):
        raise CheckpointError(f"{where}: `action.scale` must be keyed by the names of the action's joints")
    return meta


def encode_metadata(meta: Mapping[str, Any]) -> str:
    """The document as JSON text (keys in the document's order)."""
    return json.dumps(check_metadata(meta), allow_nan=False)


def decode_metadata(raw: Any, where: str) -> dict[str, Any]:
    """A stored document (JSON text, bytes, or a dict as an RSL-RL checkpoint holds it), validated."""
    if isinstance(raw, (bytes, bytearray)):
        raw = bytes(raw).decode("utf-8")
    try:
        if isinstance(raw, str):
            try:
                raw = strict_json(raw)
            except json.JSONDecodeError as exc:
                raise CheckpointError(f"{where}: the stored metadata is not valid JSON ({exc})") from None
            except ValueError as exc:  # a key given twice
                raise CheckpointError(
                    f"{where}: the stored metadata is not one document: {exc}; write it again with transfer convert"
                ) from None
        return check_metadata(raw, where)
    except RecursionError:  # in the JSON parser or in the checks
        raise CheckpointError(f"{where}: the stored metadata nests too deeply to be a metadata document") from None


# ---------------------------------------------------------------------------------------------------- comparing tasks

_NOT_COMPARED = frozenset({"name", "source", "asset", "joint_names", "convention", "joint_names_by_convention"})


def _unset(value: Any) -> bool:
    return value is None or (isinstance(value, (Mapping, list, tuple)) and len(value) == 0)


def _same_observation(a: list[dict[str, Any]], b: list[dict[str, Any]]) -> bool:
    if len(a) != len(b):
        return False
    for x, y in zip(a, b, strict=True):
        if any(x.get(k) != y.get(k) for k in ("name", "axis", "scale", "clip", "history_length", "params")):
            return False
        if x["size"] is not None and y["size"] is not None and x["size"] != y["size"]:
            return False
    return True


def _terms(terms: list[dict[str, Any]]) -> str:
    def one(t: dict[str, Any]) -> str:
        extra = [f"size {t['size']}"] if t["size"] is not None else []
        extra += (
            [f"scale {t['scale']:g}" if isinstance(t["scale"], float) else f"scale {t['scale']}"]
            if t["scale"] != 1.0
            else []
        )
        extra += [f"clip {t['clip']}"] if t["clip"] is not None else []
        extra += [f"history {t['history_length']}"] if t.get("history_length") else []
        extra += [f"params {t['params']}"] if t.get("params") else []
        return t["name"] + (f" ({', '.join(extra)})" if extra else "")

    return ", ".join(one(t) for t in terms)


def task_contradictions(checkpoint: Task, other: Task) -> list[tuple[str, Any, Any]]:
    """Fields set in both tasks with different values: ``[(field, checkpoint's value, other's value)]``.

    Both tasks must be expanded for the same joint names (:meth:`Task.with_joint_names`). A field unset on one
    side (null, an empty mapping) is no contradiction; mappings are compared key by key; observation terms
    compare sizes only where both give one. The task's name, asset and joint order are not compared here.
    """
    a, b = checkpoint.to_dict(), other.to_dict()
    out: list[tuple[str, Any, Any]] = []
    for key in a:
        if key in _NOT_COMPARED or key == "format" or _unset(a[key]) or _unset(b[key]):
            continue
        x, y = a[key], b[key]
        if key == "observation":
            if not _same_observation(x, y):
                out.append((key, _terms(x), _terms(y)))
        elif isinstance(x, Mapping) and isinstance(y, Mapping):
            out.extend((f"{key}[{k!r}]", x[k], y[k]) for k in x if k in y and x[k] != y[k])
        elif x != y:
            out.append((key, x, y))
    return out


def merge_config(checkpoint: Task, config: Task, *, where: str, config_name: str | None = None) -> Task:
    """The checkpoint's task (from its metadata, with ``joint_names`` set) completed by an explicit config's.

    Refuses (:class:`CheckpointError`, ``where`` names both sides) a config that contradicts the checkpoint: another
    convention, a listed joint order other than the checkpoint's, or a field set in both with different values
    (:func:`task_contradictions`, both values shown). Fields the metadata leaves unset are taken from the config.
    """
    names = checkpoint.joint_names
    if names is None:
        raise CheckpointError(f"{where}: the checkpoint's task has no joint_names")
    if (
        config.convention is not None
        and checkpoint.convention is not None
        and config.convention != checkpoint.convention
    ):
        raise CheckpointError(
            f"{where}: convention: checkpoint {checkpoint.convention!r}, config {config.convention!r}. The checkpoint "
            "says which order its vectors follow; drop the config's `convention` or use another checkpoint."
        )
    other = config
    if checkpoint.convention is not None and config.joint_names_by_convention:
        other = other.with_convention(checkpoint.convention)
    try:
        other = other.with_joint_names(names)
    except ValueError as exc:  # the config does not fit the checkpoint's joints (``config_name`` says which file)
        raise CheckpointError(f"{config_name or where}: {exc}") from None
    found = task_contradictions(checkpoint, other)
    if found:
        shown = "; ".join(f"{k}: checkpoint {a!r}, config {b!r}" for k, a, b in found[:6])
        more = f" (and {len(found) - 6} more)" if len(found) > 6 else ""
        raise CheckpointError(
            f"{where}: {len(found)} field(s) differ: {shown}{more}. The checkpoint describes the task it was trained "
            "on: drop the config, or fix the field."
        )
    updates: dict[str, Any] = {}
    for f in dataclasses.fields(Task):
        if f.name in _NOT_COMPARED:
            continue
        mine, theirs = getattr(checkpoint, f.name), getattr(other, f.name)
        if f.name == "engines":  # per engine, the config fills the settings the checkpoint leaves open
            merged = {k: {**dict(theirs.get(k, {})), **dict(mine.get(k, {}))} for k in {*mine, *theirs}}
            if merged != {k: dict(v) for k, v in mine.items()}:
                updates[f.name] = merged
        elif _unset(mine) and not _unset(theirs):
            updates[f.name] = theirs
    return dataclasses.replace(checkpoint, **updates) if updates else checkpoint


# ---------------------------------------------------------------------------------------------------- writing


SUFFIXES = {"torchscript": (".pt", ".pth"), "onnx": (".onnx",), "rsl_rl": (".pt", ".pth")}
"""The file suffixes an output of each format may carry: the suffix must not say another format than the bytes."""


OVER_AN_INPUT = "refusing to write over a file this command reads, even with --force; give the output another name"
"""What every refusal of an output that is one of the command's inputs ends with."""


def check_output(source: str | Path, out: str | Path, *, force: bool = False, format: str | None = None) -> Path:
    """Refuse an output that is the input (same resolved path or same file), a missing folder, an existing
    file unless ``force``, and (``format`` given) a suffix that names another format (:data:`SUFFIXES`): ONNX bytes
    under ``.pt`` would be a file nothing reads. Returns ``out`` as a path."""
    source, out = Path(source), Path(out)
    if format is not None and out.suffix.lower() not in SUFFIXES[format]:
        raise CheckpointError(
            f"-o {out}: the output is {format} (as the input {source.name} is), so its name must end in "
            f"{' or '.join(SUFFIXES[format])}, not {out.suffix or '(no suffix)'}; convert keeps the input's format"
        )
    if same_file(source, out):
        raise CheckpointError(
            f"-o {out} is the input checkpoint: refusing to write over it (the input stays byte-for-byte "
            "unchanged). Give another output path."
        )
    if not out.parent.is_dir():
        raise CheckpointError(f"-o {out}: the folder {out.parent} does not exist")
    if out.is_dir():
        raise CheckpointError(f"-o {out} is a folder; give the output file's path")
    if out.exists() and not force:
        raise CheckpointError(f"-o {out} exists; pass --force (force=True) to replace it")
    if out.is_symlink() and not out.exists():
        raise CheckpointError(f"-o {out} is a symbolic link that leads to no file; remove it, or give another path")
    return out


_NEW_OUTPUTS: contextvars.ContextVar[frozenset[str]] = contextvars.ContextVar("new_outputs", default=frozenset())


@contextlib.contextmanager
def new_output(out: str | Path, force: bool) -> Iterator[None]:
    """Within the block, :func:`atomic_write` puts ``out`` in place only where nothing is (unless ``force``): a file
    that appeared there after the command checked it (another run, the user) is never replaced."""
    if force:
        yield
        return
    token = _NEW_OUTPUTS.set(_NEW_OUTPUTS.get() | {os.path.abspath(out)})
    try:
        yield
    finally:
        _NEW_OUTPUTS.reset(token)


def _install(tmp: str, out: Path, replace: bool) -> None:
    try:
        put_in_place(tmp, out, replace)
    except FileExistsError:
        raise CheckpointError(
            f"{out}: a file appeared there while this one was being written (another run, or "
            "yours); it is kept: give another path, or --force to replace it"
        ) from None


def atomic_write(out: str | Path, write: Callable[[Path], None], *, replace: bool | None = None) -> Path:
    """Call ``write(tmp)`` on a temporary path in ``out``'s folder, then move it over ``out`` with ``os.replace``
    (readers see the old file or the new one, never half of one). The temporary file is removed on failure. The file
    gets the permissions the user's umask gives a new file (``mkstemp`` alone would leave it 0600). A full disk,
    however the writer reports it (``OSError`` ENOSPC, or torch's serializer failing mid-archive), raises
    :class:`DiskFullError` naming ``out`` and the space left; nothing is written. ``replace=False`` (or ``out``
    within :func:`new_output`) never replaces a file that is there by then."""
    out = Path(out)
    if out.exists() and not out.is_file():  # a device, a FIFO, /proc/self/fd/1: replacing it would destroy it
        raise CheckpointError(
            f"{out}: not a regular file (a folder, a device, a FIFO or a link to one); an output "
            "is only ever written over a file: give another path"
        )
    try:  # the temporary name stays within NAME_MAX however long the output's own name is
        fd, tmp = tempfile.mkstemp(dir=out.parent, prefix=f".{out.name[:200]}.", suffix=".tmp")
    except OSError as exc:
        raise _disk_full(out, exc) or exc from None
    os.close(fd)
    try:
        write(Path(tmp))
        with open(tmp, "rb+") as fh:
            os.fsync(fh.fileno())
        umask_mode(tmp)
        _install(tmp, out, os.path.abspath(out) not in _NEW_OUTPUTS.get() if replace is None else replace)
    except BaseException as exc:
        written = Path(tmp).stat().st_size if Path(tmp).exists() else 0
        Path(tmp).unlink(missing_ok=True)
        full = _disk_full(out, exc, written) if isinstance(exc, (OSError, RuntimeError)) else None
        if full is not None:
            raise full from None
        raise
    return out
