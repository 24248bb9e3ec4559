"""RSL-RL training checkpoints: every network's dict layout (first/last layers, observation normalizer), the action
std, and the optimizer's moments, so that training resumes as before."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from transfer.checkpoint import save_rsl_rl
from transfer.runs.convert.order import Reorder, _output_index, _refuse, _size_mismatch

_NETWORKS = (  # key in the checkpoint, MLP prefix, normalizer prefix, writes the action
    ("actor_state_dict", "mlp.", "obs_normalizer.", True),
    ("student_state_dict", "mlp.", "obs_normalizer.", True),
    ("teacher_state_dict", "mlp.", "obs_normalizer.", True),
    ("critic_state_dict", "mlp.", "obs_normalizer.", False),
)
_NORMALIZER_STATS = ("_mean", "_var", "_std")


class _RslRl:
    """An RSL-RL training checkpoint: every network's first/last layers and normalizer, the action std, and the
    optimizer's moments."""

    def __init__(self, path: Path, reorder: Reorder):
        from transfer.policy import _torch_load_safe

        self.path, self.reorder = path, reorder
        self.ckpt = _torch_load_safe(path)
        if not isinstance(self.ckpt, dict):
            raise _refuse(path.name, f"a torch checkpoint holding {type(self.ckpt).__name__}, not an RSL-RL dict")
        self.originals: dict[str, dict[str, Any]] = {}
        self._plans: dict[str, list[tuple[str, int, Sequence[int]]]] = {}
        self.notes: list[str] = []

    def _networks(self) -> list[tuple[str, str, str, bool]]:
        ckpt, name = self.ckpt, self.path.name
        if "model_state_dict" in ckpt:
            raise _refuse(
                name, "the older rsl_rl layout (model_state_dict) is not converted; re-save with rsl-rl-lib 5"
            )
        for key in ("rnd_state_dict",):
            if key in ckpt:
                raise _refuse(
                    name, f"it holds {key} (random network distillation), whose observation layout is unknown"
                )
        found = [n for n in _NETWORKS if n[0] in ckpt]
        if not any(n[3] for n in found):
            raise _refuse(name, f"no actor_state_dict or student_state_dict; found keys {sorted(map(str, ckpt))}")
        return found

    def edit(self) -> list[str]:
        import torch

        obs, act = self.reorder.observation, self.reorder.action
        edits: list[str] = []
        nets = self._networks()
        for key, mlp, norm, writes_action in nets:
            state = dict(self.ckpt[key])
            if any(k.startswith(("rnn.", "cnns.", "memory_")) for k in state):
                raise _refuse(self.path.name, f"{key} holds recurrent or CNN layers, which are not converted")
            indices = sorted(
                int(k[len(mlp) :].split(".")[0]) for k in state if k.startswith(mlp) and k.endswith(".weight")
            )
            if not indices:
                raise _refuse(self.path.name, f"{key} has no linear layers under {mlp!r}")
            first, last = f"{mlp}{indices[0]}.weight", f"{mlp}{indices[-1]}.weight"
            if state[first].shape[1] != len(obs) and key in ("actor_state_dict", "student_state_dict"):
                raise _size_mismatch(self.path.name, f"{key}'s first layer {first}", state[first].shape[1], len(obs))
            if state[first].shape[1] != len(obs):
                raise _refuse(
                    self.path.name,
                    f"{key}'s first layer {first} reads {state[first].shape[1]} entries, the task's observation has "
                    f"{len(obs)}: its observation (privileged terms?) has a layout the task does not describe",
                )
            self.originals[key] = {k: v.clone() for k, v in state.items()}
            plan: list[tuple[str, int, Sequence[int]]] = [(first, 1, obs)]
            plan += [(f"{norm}{s}", -1, obs) for s in _NORMALIZER_STATS if f"{norm}{s}" in state]
            if writes_action:
                rows = _output_index(act, state[last].shape[0], self.path.name)
                plan.append((last, 0, rows))
                if f"{mlp}{indices[-1]}.bias" in state:
                    plan.append((f"{mlp}{indices[-1]}.bias", 0, rows))
                plan += [(f"distribution.{s}", 0, act) for s in ("std_param", "log_std_param")
                         if f"distribution.{s}" in state]  # fmt: skip
            for k, axis, index in plan:
                t = state[k]
                state[k] = t.index_select(axis % t.dim(), torch.as_tensor(list(index), dtype=torch.long)).contiguous()
                edits.append(f"{key}[{k}] {tuple(t.shape)}")
            self.ckpt[key] = state
            self._plans[key] = plan
        self._edit_optimizer(nets)
        return edits + self.notes

    def _edit_optimizer(self, nets: list[tuple[str, str, str, bool]]) -> None:
        """Adam's moments follow their parameters: permute them the same way, matched by rsl_rl's parameter order
        (PPO: actor then critic; distillation: the student; each in state-dict order, normalizer buffers left out).
        If the shapes do not line up, the moments are cleared (training restarts them) and a note says so."""
        import torch

        opt = self.ckpt.get("optimizer_state_dict")
        if not isinstance(opt, dict) or "state" not in opt:
            return
        trained = (
            ("actor_state_dict", "critic_state_dict") if "actor_state_dict" in self.ckpt else ("student_state_dict",)
        )
        order = [
            (key, k) for key, _, norm, _ in nets if key in trained for k in self.ckpt[key] if not k.startswith(norm)
        ]
        params = [p for group in opt.get("param_groups", []) for p in group.get("params", [])]
        state = opt["state"]
        shapes_ok = len(params) == len(order) and all(
            all(t.shape == self.ckpt[key][k].shape for t in state.get(p, {}).values() if torch.is_tensor(t) and t.dim())
            for p, (key, k) in zip(params, order, strict=False)
        )
        if not shapes_ok:
            opt["state"] = {}
            self.notes.append("optimizer_state_dict: moments cleared (they could not be matched to the parameters)")
            return
        for p, (key, k) in zip(params, order, strict=True):
            for _, axis, index in (e for e in self._plans.get(key, []) if e[0] == k):
                idx = torch.as_tensor(list(index), dtype=torch.long)
                for name, t in list(state.get(p, {}).items()):
                    if torch.is_tensor(t) and t.dim():
                        state[p][name] = t.index_select(axis % t.dim(), idx).contiguous()
        self.notes.append("optimizer_state_dict: moments permuted with their parameters")

    def describe(self) -> str:
        return ", ".join(self.originals) or "no network"

    @staticmethod
    def _forward(state: Mapping[str, Any], x: np.ndarray) -> np.ndarray:
        """The raw MLP output (normalizer, linear layers, ELU between them): the permutation law holds for any
        elementwise activation, so checking with ELU checks the weights."""
        import torch
        import torch.nn.functional as F

        from transfer.policy import RSL_RL_NORMALIZER_EPS

        y = torch.from_numpy(x)
        if "obs_normalizer._mean" in state:
            y = (y - state["obs_normalizer._mean"]) / (state["obs_normalizer._std"] + RSL_RL_NORMALIZER_EPS)
        indices = sorted(int(k[4:].split(".")[0]) for k in state if k.startswith("mlp.") and k.endswith(".weight"))
        for j, i in enumerate(indices):
            y = F.linear(y, state[f"mlp.{i}.weight"].float(), state.get(f"mlp.{i}.bias"))
            if j < len(indices) - 1:
                y = F.elu(y)
        return y.detach().numpy()

    def compare(self, x: np.ndarray, x_new: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
        pairs = []
        act = self.reorder.action
        for key, *_, writes_action in _NETWORKS:
            if key not in self.originals:
                continue
            old, new = self.originals[key], self.ckpt[key]
            expected = self._forward(old, x)
            if writes_action:
                expected = expected[:, _output_index(act, expected.shape[1], self.path.name)]
                for s in ("distribution.std_param", "distribution.log_std_param"):
                    if s in old:
                        pairs.append((old[s].numpy()[list(act)], new[s].numpy()))
            pairs.append((expected, self._forward(new, x_new)))
        return pairs

    def save(self, out: Path, metadata: Mapping[str, Any]) -> None:
        save_rsl_rl(self.ckpt, out, metadata)
