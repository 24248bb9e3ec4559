"""TorchScript policies (``torch.jit.save``: Isaac Lab's and rsl_rl's exported ``policy.pt``).

Detect (:func:`detect`: the archive holds code), load (:class:`TorchScriptPolicy`), the metadata document in the
archive's extra file ``transfer.json`` (:func:`read_metadata`, :func:`save_torchscript`, :func:`write_metadata`),
and the weight permutation ``transfer convert`` applies (:class:`TorchScriptPermutation`: the scripted module's
parameters and buffers, permuted in place, its code untouched). torch is imported inside the functions only.
"""

from __future__ import annotations

import zipfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from transfer.checkpoint import TORCHSCRIPT_EXTRA_FILE, atomic_write, decode_metadata, encode_metadata
from transfer.formats.permutation import Permutation, output_index, refuse, size_mismatch
from transfer.policy import Policy, PolicyError

if TYPE_CHECKING:
    import torch

__all__ = [
    "TorchScriptPermutation",
    "TorchScriptPolicy",
    "detect",
    "extra_files",
    "read_metadata",
    "save_torchscript",
    "write_metadata",
]

FORMAT = "torchscript"


def detect(names: Sequence[str]) -> bool:
    """Whether a zip archive's member ``names`` are a TorchScript module's (it holds code or constants)."""
    return any("/code/" in n or n.endswith("/constants.pkl") for n in names)


# ---------------------------------------------------------------------------------------------------- loading


class TorchScriptPolicy(Policy):
    """A TorchScript module (``torch.jit.load``). The input size is the first 2-D weight's column count; the
    output size comes from one probe call on zeros. Modules exporting ``reset()`` (rsl_rl's recurrent exports)
    are reset after the probe and by :meth:`reset`."""

    format = "torchscript"
    native = "torch"

    def __init__(self, path: Path, device: str = "cpu"):
        import torch

        try:
            module = torch.jit.load(str(path), map_location=device)
        except Exception as exc:
            raise PolicyError(f"{path}: not a loadable TorchScript module ({type(exc).__name__}: {exc})") from None
        module.eval()
        weights = [p for _, p in module.named_parameters() if p.dim() == 2]
        if not weights:
            raise PolicyError(f"{path}: TorchScript module without a 2-D weight: cannot tell its input size")
        input_size = int(weights[0].shape[1])
        self.module = module
        self._has_reset = hasattr(module, "reset")
        recurrent = any(n.endswith(("hidden_state", "cell_state")) for n, _ in module.named_buffers())
        try:
            with torch.no_grad():
                out = module(torch.zeros(1, input_size, device=device))
        except Exception as exc:
            raise PolicyError(
                f"{path}: probing the module with zeros(1, {input_size}) failed ({type(exc).__name__}: {exc}); "
                "its first weight may not read the observation."
            ) from None
        super().__init__(path, input_size, int(out.shape[-1]), device, recurrent)
        self.reset()

    def read_metadata(self) -> dict[str, Any] | None:
        return read_metadata(self.path)

    def reset(self) -> None:
        if self._has_reset:
            self.module.reset()

    def _forward(self, x: Any) -> Any:
        return self.module(x)


# ---------------------------------------------------------------------------------------------------- metadata


def extra_files(path: Path) -> dict[str, bytes]:
    """The extra files of a TorchScript archive (``<archive>/extra/<name>``), by name."""
    out: dict[str, bytes] = {}
    with zipfile.ZipFile(path) as archive:
        for name in archive.namelist():
            parts = name.split("/")
            if len(parts) == 3 and parts[1] == "extra" and parts[2]:
                out[parts[2]] = archive.read(name)
    return out


def read_metadata(path: str | Path) -> dict[str, Any] | None:
    """The document in the archive's extra file ``transfer.json``, or ``None``."""
    path = Path(path)
    raw = extra_files(path).get(TORCHSCRIPT_EXTRA_FILE)
    return None if raw is None else decode_metadata(raw, f"{path.name} (metadata)")


def save_torchscript(
    module: torch.jit.ScriptModule, out: str | Path, metadata: Mapping[str, Any], extra_files: Mapping[str, bytes] = ()
) -> Path:
    """``torch.jit.save`` ``module`` to ``out`` atomically, with the document (and ``extra_files`` kept)."""
    import torch

    files = {**dict(extra_files), TORCHSCRIPT_EXTRA_FILE: encode_metadata(metadata)}
    return atomic_write(out, lambda tmp: torch.jit.save(module, str(tmp), _extra_files=files))


def write_metadata(checkpoint: Path, out: Path, metadata: Mapping[str, Any]) -> Path:
    """A copy of ``checkpoint`` with ``metadata`` at ``out`` (checked by the caller), its other extra files kept."""
    import torch

    module = torch.jit.load(str(checkpoint), map_location="cpu")
    return save_torchscript(module, out, metadata, extra_files(checkpoint))


# ---------------------------------------------------------------------------------------------------- convert


_STD_NAMES = ("std", "log_std", "std_param", "log_std_param")


class TorchScriptPermutation:
    """The scripted module's parameters and buffers, permuted in place (its code untouched)."""

    def __init__(self, path: Path, reorder: Permutation):
        import torch

        self.path, self.reorder = path, reorder
        self.original = torch.jit.load(str(path), map_location="cpu").eval()
        self.module = torch.jit.load(str(path), map_location="cpu").eval()
        self.extra = extra_files(path)
        if any(n.endswith(("hidden_state", "cell_state")) for n, _ in self.module.named_buffers()):
            raise refuse(
                path.name, "a recurrent module (it carries a hidden state); recurrent layers are not converted"
            )
        self.first = self.last = ""

    def edit(self) -> list[str]:
        import torch

        name, obs, act = self.path.name, self.reorder.observation, self.reorder.action
        state = self.module.state_dict()
        keys = list(state)
        linear = [k for k in keys if k.endswith("weight") and state[k].dim() == 2]
        if not linear:
            raise refuse(name, "the module has no 2-D weight, so no layer reading the observation was found")
        self.first, self.last = linear[0], linear[-1]
        if state[self.first].shape[1] != len(obs):
            raise size_mismatch(name, f"its first layer {self.first}", state[self.first].shape[1], len(obs))
        rows = output_index(act, state[self.last].shape[0], name)
        layers = {k.rsplit(".", 1)[0] for k in linear}
        edits: list[tuple[str, int, Sequence[int], str]] = [(self.first, 1, obs, "columns (observation)")]
        edits.append((self.last, 0, rows, "rows (action)"))
        bias = self.last.rsplit(".", 1)[0] + ".bias"
        if bias in state:
            edits.append((bias, 0, rows, "entries (action)"))
        first_pos, last_pos = keys.index(self.first), keys.index(self.last)
        for pos, key in enumerate(keys):
            t = state[key]
            if key.rsplit(".", 1)[0] in layers or t.dim() == 0:
                continue
            leaf = key.rsplit(".", 1)[-1].lower()
            if t.numel() == len(obs) and t.shape[-1] == len(obs) and (pos < first_pos or "norm" in key.lower()):
                edits.append((key, t.dim() - 1, obs, "entries (observation normalizer)"))
            elif t.numel() == len(act) and t.shape[-1] == len(act) and (pos > last_pos or leaf in _STD_NAMES):
                edits.append((key, t.dim() - 1, act, "entries (action)"))
        with torch.no_grad():
            for key, axis, index, _ in edits:
                t = state[key]
                t.copy_(t.index_select(axis, torch.as_tensor(list(index), dtype=torch.long)))
        return [f"{key} {tuple(state[key].shape)}: {what}" for key, _, _, what in edits]

    def describe(self) -> str:
        return f"first layer {self.first}, action layer {self.last}"

    def _run(self, module: Any, x: np.ndarray) -> np.ndarray:
        import torch

        with torch.no_grad():
            return module(torch.from_numpy(x)).numpy()

    def compare(self, x: np.ndarray, x_new: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
        expected = self._run(self.original, x)
        rows = output_index(self.reorder.action, expected.shape[1], self.path.name)
        return [(expected[:, rows], self._run(self.module, x_new))]

    def save(self, out: Path, metadata: Mapping[str, Any]) -> None:
        save_torchscript(self.module, out, metadata, self.extra)
