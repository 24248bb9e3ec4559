"""TorchScript: the scripted module's parameters and buffers, permuted in place (its code untouched)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from transfer.checkpoint import save_torchscript
from transfer.runs.convert.order import Reorder, _output_index, _refuse, _size_mismatch

_STD_NAMES = ("std", "log_std", "std_param", "log_std_param")


class _TorchScript:
    """The scripted module's parameters and buffers, permuted in place (its code untouched)."""

    def __init__(self, path: Path, reorder: Reorder):
        import torch

        from transfer.checkpoint import _torchscript_extra_files

        self.path, self.reorder = path, reorder
        self.original = torch.jit.load(str(path), map_location="cpu").eval()
        self.module = torch.jit.load(str(path), map_location="cpu").eval()
        self.extra = _torchscript_extra_files(path)
        if any(n.endswith(("hidden_state", "cell_state")) for n, _ in self.module.named_buffers()):
            raise _refuse(
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
            raise _refuse(name, "the module has no 2-D weight, so no layer reading the observation was found")
        self.first, self.last = linear[0], linear[-1]
        if state[self.first].shape[1] != len(obs):
            raise _size_mismatch(name, f"its first layer {self.first}", state[self.first].shape[1], len(obs))
        rows = _output_index(act, state[self.last].shape[0], name)
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
        rows = _output_index(self.reorder.action, expected.shape[1], self.path.name)
        return [(expected[:, rows], self._run(self.module, x_new))]

    def save(self, out: Path, metadata: Mapping[str, Any]) -> None:
        save_torchscript(self.module, out, metadata, self.extra)
