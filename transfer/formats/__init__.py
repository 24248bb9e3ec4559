"""Checkpoint formats, one module each, and the entry points that dispatch by format.

- :mod:`transfer.formats.torchscript`: TorchScript modules (``torch.jit.save``; Isaac Lab's ``policy.pt``);
- :mod:`transfer.formats.onnx`: ONNX models, run by onnxruntime;
- :mod:`transfer.formats.mjlab`: the ONNX policies mjlab exports, which describe their task in ``metadata_props``;
- :mod:`transfer.formats.rsl_rl`: RSL-RL training checkpoints (``OnPolicyRunner.save``).

Each format module holds one :class:`~transfer.formats.base.CheckpointFormat` subclass (the plug-in point: one
class, one entry in :data:`FORMATS`) and owns: ``detect``, safe load into the :class:`~transfer.formats.policy.Policy` interface, metadata
``read_metadata`` / ``write_metadata`` (the document's schema is :mod:`transfer.formats.checkpoint`'s), the atomic save,
and the weight permutation ``transfer convert`` applies (:mod:`transfer.formats.permutation` says what they share).
:mod:`transfer.formats.info` is what ``transfer info`` prints.

Here: :func:`detect_format`, :func:`load_policy`, :func:`read_metadata`, :func:`write_metadata` and
:func:`checkpoint_format`, :func:`permutation_class`. torch, onnx and onnxruntime load inside the functions that need them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

from transfer._console import printable
from transfer.formats import onnx, rsl_rl, torchscript
from transfer.formats.base import CheckpointFormat, Probe
from transfer.formats.checkpoint import check_metadata, check_output, new_output
from transfer.formats.policy import Policy, PolicyError

__all__ = [
    "FORMATS",
    "CheckpointFormat",
    "checkpoint_format",
    "detect_format",
    "CheckpointFile",
    "load_policy",
    "open_checkpoint",
    "permutation_class",
    "read_metadata",
    "write_metadata",
]

FORMATS: Mapping[str, type[CheckpointFormat]] = MappingProxyType(
    {f.name: f for f in (torchscript.TorchScriptFormat, rsl_rl.RslRlFormat, onnx.OnnxFormat)}
)
"""Every checkpoint format, in the order detection asks them (a new format: one class, one entry)."""


def checkpoint_format(fmt: str) -> type[CheckpointFormat]:
    """The :class:`~transfer.formats.base.CheckpointFormat` named ``fmt``. Raises ``ValueError`` for another."""
    try:
        return FORMATS[fmt]
    except KeyError:
        raise ValueError(f"Unknown checkpoint format {fmt!r}; expected one of {list(FORMATS)}") from None


def permutation_class(fmt: str) -> type:
    """The class that permutes the weights of a checkpoint of format ``fmt`` for ``transfer convert``
    (:mod:`transfer.formats.permutation` says its methods)."""
    return checkpoint_format(fmt).permutation


def detect_format(path: str | Path) -> str:
    """The policy format of a file, from its content (and the ``.onnx`` suffix): the first of :data:`FORMATS` whose
    ``detect`` says so. Raises :class:`PolicyError`."""
    path = Path(path)
    probe = Probe.of(path)
    for name, fmt in FORMATS.items():
        if fmt.detect(probe):
            return name
    if probe.names is not None:
        raise PolicyError(f"{path}: a zip archive, but neither a TorchScript module nor a torch.save checkpoint")
    if probe.head == b"PK\x03\x04":  # a zip archive's first entry without the directory at its end
        raise PolicyError(
            f"{path}: truncated or corrupt: it starts as a zip archive (TorchScript and torch.save write those) but "
            f"its end is missing or damaged ({path.stat().st_size} bytes). Copy or export the file again."
        )
    raise PolicyError(
        f"{path}: not a policy file this version reads. Expected a TorchScript module (.pt from torch.jit.save / "
        "Isaac Lab's export), an ONNX model (.onnx), or an RSL-RL training checkpoint (model_<iter>.pt)."
    )


def load_policy(path: str | Path, *, device: str = "cpu", format: str | None = None, **options: Any) -> Policy:
    """Load a policy file into a :class:`~transfer.formats.policy.Policy`.

    Args:
        path: A TorchScript ``.pt``, an ``.onnx`` model, or an RSL-RL training checkpoint.
        device: Torch device the network runs on (ONNX always runs on the CPU).
        format: ``torchscript`` / ``onnx`` / ``rsl_rl``; ``None`` detects it from the content.
        options: For ``rsl_rl``: ``activation`` (rsl_rl's name, default ``"elu"``), ``distribution``,
            ``action_range`` (see :class:`~transfer.formats.rsl_rl.RslRlPolicy`).

    Raises:
        FileNotFoundError: no such file.
        PolicyError: a corrupt or unrecognised file, or one that would need arbitrary pickle code.
        NotImplementedError: a recurrent or CNN RSL-RL actor, a multi-input ONNX graph.
    """
    path = _checkpoint_path(path)
    fmt = detect_format(path) if format is None else format
    if fmt not in FORMATS:
        raise ValueError(f"Unknown policy format {format!r}; expected one of {list(FORMATS)} or None")
    return FORMATS[fmt].load(path, device, **options)


@dataclass(frozen=True)
class CheckpointFile:
    """A checkpoint described but not loaded: its file, format and metadata (``None``: it carries none). What
    ``transfer convert`` and ``info`` resolve their inputs with (:func:`open_checkpoint`): converting edits the
    weights in the file and never runs the network."""

    path: Path
    format: str
    metadata: dict[str, Any] | None


def open_checkpoint(path: str | Path) -> CheckpointFile:
    """``path``'s format and metadata, the weights not loaded; the same refusals as :func:`load_policy`."""
    path = _checkpoint_path(path)
    fmt = detect_format(path)
    return CheckpointFile(path, fmt, read_metadata(path, fmt))


def _checkpoint_path(path: str | Path) -> Path:
    path = Path(path)
    if not path.exists():
        if path.is_symlink():  # a link to nothing, or a loop of links
            raise FileNotFoundError(
                f"Policy file not found: {printable(path, 400)} is a symbolic link that leads to no "
                "file (a dangling link, or a loop of links); give the checkpoint itself"
            )
        raise FileNotFoundError(f"Policy file not found: {printable(path, 400)}")
    if path.is_dir():
        raise PolicyError(
            f"{path} is a folder without params/env.yaml, so not an Isaac Lab run folder; pass the checkpoint file "
            "(policy.pt, policy.onnx, model_<iter>.pt), or a run folder that holds params/env.yaml"
        )
    if not path.is_file():
        raise PolicyError(f"{path}: not a regular file (a FIFO or a device); give the checkpoint file itself")
    return path


def read_metadata(path: str | Path, format: str | None = None) -> dict[str, Any] | None:
    """The metadata stored inside a checkpoint file (:mod:`transfer.formats.checkpoint`), or ``None`` when it holds none.

    ``format``: ``torchscript`` / ``onnx`` / ``rsl_rl``; ``None`` detects it. Raises
    :class:`~transfer.formats.checkpoint.CheckpointError` for a document that is malformed or of another format version.
    """
    path = Path(path)
    fmt = detect_format(path) if format is None else format
    return checkpoint_format(fmt).read_metadata(path)


def write_metadata(
    checkpoint: str | Path,
    out: str | Path,
    metadata: Mapping[str, Any],
    *,
    force: bool = False,
    format: str | None = None,
) -> Path:
    """Write a copy of ``checkpoint`` (any format) carrying ``metadata`` to ``out``; the weights are untouched.

    Refuses ``out`` equal to the input and an existing ``out`` unless ``force``
    (:func:`~transfer.formats.checkpoint.check_output`); writes atomically. Replaces metadata the input already holds.
    ``format``: the checkpoint's, when known (else detected).
    """
    checkpoint = Path(checkpoint)
    if not checkpoint.is_file():
        raise FileNotFoundError(f"Checkpoint not found: {checkpoint}")
    fmt = detect_format(checkpoint) if format is None else format
    out = check_output(checkpoint, out, force=force, format=fmt)
    check_metadata(metadata)
    with new_output(out, force):
        return checkpoint_format(fmt).write_metadata(checkpoint, out, metadata)
