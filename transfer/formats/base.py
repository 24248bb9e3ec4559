"""The checkpoint-format plug-in point: one :class:`CheckpointFormat` subclass per format, one registry line.

A format says, with one signature each, whether a file is one of its own (:meth:`CheckpointFormat.detect`, from a
:class:`Probe` of the file's first bytes and zip members), loads it into the :class:`~transfer.formats.policy.Policy`
interface, reads and writes the metadata document (:mod:`transfer.formats.checkpoint`) inside it, and names the class that
permutes its weights for ``transfer convert`` (:mod:`transfer.formats.permutation`). :data:`FORMATS` in
:mod:`transfer.formats` lists them in the order detection asks them.
"""

from __future__ import annotations

import zipfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from transfer.formats.policy import Policy, PolicyError

__all__ = ["CheckpointFormat", "Probe"]


@dataclass(frozen=True)
class Probe:
    """What detection reads of a file, once: its path, its first bytes and, for a zip archive, its member names
    (``None``: not a zip)."""

    path: Path
    head: bytes
    names: tuple[str, ...] | None

    @classmethod
    def of(cls, path: str | Path) -> Probe:
        """Read ``path``'s head and zip directory. Raises :class:`PolicyError` for an empty file or a damaged zip."""
        path = Path(path)
        if path.exists() and not path.is_file():  # a FIFO would block the read, a device never end it
            raise PolicyError(
                f"{path}: not a regular file (a folder, a FIFO or a device); give the checkpoint file itself"
            )
        with open(path, "rb") as fh:
            head = fh.read(4)
        if not head:
            raise PolicyError(f"{path}: an empty file (0 bytes), not a policy; was it written completely?")
        names = None
        if zipfile.is_zipfile(path):
            try:
                with zipfile.ZipFile(path) as archive:
                    members = archive.infolist()
            except (zipfile.BadZipFile, OSError) as exc:
                raise PolicyError(f"{path}: a damaged zip archive ({exc})") from None
            unpacked = sum(m.file_size for m in members)
            if unpacked > MAX_UNPACKED:  # a zip bomb: torch would unpack it all into memory
                raise PolicyError(
                    f"{path}: its zip archive unpacks to {unpacked / 2**30:.1f} GiB (at most "
                    f"{MAX_UNPACKED / 2**30:g} GiB; a policy checkpoint is megabytes): refused unread"
                )
            names = tuple(m.filename for m in members)
        return cls(path, head, names)


MAX_UNPACKED = 2 << 30
"""The most a checkpoint's zip archive (TorchScript, ``torch.save``) may unpack to, in bytes."""


class CheckpointFormat:
    """One checkpoint format. Subclasses set :attr:`name`, :attr:`policy` and :attr:`permutation` and implement
    :meth:`detect`, :meth:`read_metadata` and :meth:`write_metadata`; :meth:`load` builds :attr:`policy`."""

    name: ClassVar[str]
    """The format's name (``torchscript``, ``onnx``, ``rsl_rl``): what ``--json`` and the metadata say."""
    policy: ClassVar[type[Policy]]
    """The :class:`~transfer.formats.policy.Policy` subclass a file of this format loads into."""
    permutation: ClassVar[type]
    """The class that permutes its weights for ``transfer convert`` (``(checkpoint, permutation)``)."""
    options: ClassVar[frozenset[str]] = frozenset()
    """Keyword options :meth:`load` takes beyond the file (an RSL-RL actor's activation)."""

    @classmethod
    def detect(cls, probe: Probe) -> bool:
        """Whether the file ``probe`` describes is one of this format's."""
        raise NotImplementedError

    @classmethod
    def load(cls, path: Path, device: str = "cpu", **options: Any) -> Policy:
        """The policy in ``path``, loaded safely (no pickle code runs)."""
        unknown = sorted(set(options) - cls.options)
        if unknown:
            takes = f"it takes {sorted(cls.options)}" if cls.options else "it takes none"
            raise TypeError(
                f"{path}: options {unknown} do not apply to {cls.name} checkpoints ({takes}; RSL-RL "
                "checkpoints only take an actor's activation, distribution and action range)"
            )
        return cls.policy(path, device, **options)

    @classmethod
    def read_metadata(cls, path: Path) -> dict[str, Any] | None:
        """The metadata document ``path`` carries, else ``None``."""
        raise NotImplementedError

    @classmethod
    def write_metadata(cls, checkpoint: Path, out: Path, metadata: Mapping[str, Any]) -> Path:
        """A copy of ``checkpoint`` at ``out`` carrying ``metadata``, written atomically; the weights untouched."""
        raise NotImplementedError
