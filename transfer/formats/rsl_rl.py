"""RSL-RL training checkpoints: the dict rsl-rl-lib 5's ``OnPolicyRunner.save`` writes (``actor_state_dict``, also
``student_state_dict`` from distillation, and the older ``model_state_dict`` layout).

Detect (:func:`detect`: a ``torch.save`` archive or pickle stream), safe load (:func:`torch_load_safe`:
``torch.load(weights_only=True)``; :class:`RslRlPolicy` rebuilds the actor MLP from the weights and applies the
observation normalizer as rsl_rl does), the metadata document under the dict's key ``transfer``
(:func:`read_metadata`, :func:`save_rsl_rl`, :func:`write_metadata`), and the weight permutation ``transfer convert``
applies (:class:`RslRlPermutation`: every network's first/last layers and normalizer, the action std, and the
optimizer's moments, so that training resumes as before). torch is imported inside the functions only.
"""

from __future__ import annotations

import io
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from transfer._console import printable
from transfer.formats.base import CheckpointFormat, Probe
from transfer.formats.checkpoint import METADATA_KEY, CheckpointError, atomic_write, decode_metadata, encode_metadata
from transfer.formats.permutation import Permutation, output_index, refuse, size_mismatch
from transfer.formats.policy import Policy, PolicyError

__all__ = [
    "RslRlFormat",
    "ACTIVATIONS",
    "RSL_RL_NORMALIZER_EPS",
    "RslRlPermutation",
    "RslRlPolicy",
    "detect",
    "read_metadata",
    "save_rsl_rl",
    "torch_load_safe",
    "write_metadata",
]

FORMAT = "rsl_rl"

RSL_RL_NORMALIZER_EPS = 1e-2
"""``rsl_rl.modules.EmpiricalNormalization``'s default ``eps``: normalized = (x - mean) / (std + eps)."""

ACTIVATIONS: dict[str, str] = {
    "elu": "ELU",
    "selu": "SELU",
    "relu": "ReLU",
    "crelu": "CELU",
    "lrelu": "LeakyReLU",
    "tanh": "Tanh",
    "sigmoid": "Sigmoid",
    "softplus": "Softplus",
    "gelu": "GELU",
    "swish": "SiLU",
    "mish": "Mish",
    "identity": "Identity",
}
"""rsl_rl's activation names (``rsl_rl.utils.resolve_nn_activation``) -> ``torch.nn`` module classes."""

_DISTRIBUTIONS = ("gaussian", "heteroscedastic_gaussian", "beta", "none")


def detect(names: Sequence[str] | None, head: bytes) -> bool:
    """Whether a file is a ``torch.save`` checkpoint: a zip archive whose member ``names`` hold ``data.pkl``, or
    (``names`` ``None``: not a zip) a legacy pickle stream starting with ``head``."""
    if names is not None:
        return any(n.endswith("/data.pkl") for n in names)
    return head[:1] == b"\x80"


# ---------------------------------------------------------------------------------------------------- loading


def torch_load_safe(path: Path) -> Any:
    """``torch.load(weights_only=True)``, with errors that say what went wrong (never torch's advice to load the
    file with ``weights_only=False``: that would run whatever code the file holds)."""
    import pickle
    import warnings

    import torch

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # torch's note on the pickle protocol: the error says what matters
            data = torch.load(str(path), map_location="cpu", weights_only=True)
        _check_tensors(path, data, torch)
        return data
    except pickle.UnpicklingError as exc:
        text = str(exc)
        reason = text.split("WeightsUnpickler error:", 1)[1] if "WeightsUnpickler error:" in text else text
        lines = [line.strip() for line in reason.splitlines() if line.strip()]
        # what the file asked for ("Trying to load unsupported GLOBAL posix.system ..."), never torch's advice to
        # load it with weights_only=False
        reason = next((line for line in lines if "GLOBAL" in line or "Unsupported" in line), None) or next(
            (line for line in lines if "weights_only" not in line and "Re-running" not in line), ""
        )
        if "global" in text.lower():
            head = (
                "refused: loading this checkpoint would run arbitrary pickle code (it stores Python objects, not "
                f"just tensors and plain containers: {reason}). transfer"
            )
        else:
            head = (
                f"not a checkpoint a safe load reads (torch's weights-only loader: {reason}); transfer never "
                "loads with weights_only=False, which would run whatever code the file holds, and"
            )
        raise PolicyError(
            f"{path}: {head} loads checkpoints with torch.load(weights_only=True) deliberately. Re-save it as plain "
            "data (rsl_rl's OnPolicyRunner.save writes dicts of state dicts), or export TorchScript/ONNX."
        ) from None
    except PolicyError:
        raise
    except Exception as exc:
        raise PolicyError(f"{path}: corrupt or not a torch checkpoint ({type(exc).__name__}: {exc})") from None


MAX_TENSOR_ELEMENTS = 10**8
"""The most elements one tensor of a checkpoint may hold (400 MB of float32; a legged robot's actor holds ~10^5)."""


def _check_tensors(path: Path, data: Any, torch: Any, where: str = "", depth: int = 0) -> None:
    """Refuse a tensor larger than :data:`MAX_TENSOR_ELEMENTS` or declaring more elements than its stored data holds
    (a stride-0 view of a few bytes as a 10^9 x 48 weight: permuting it asked 192 GB), before any use."""
    if depth > 32:
        return  # torch's own loader bounds the nesting; the tensors that matter sit a few levels down
    items = data.items() if isinstance(data, dict) else enumerate(data) if isinstance(data, (list, tuple)) else ()
    for key, value in items:
        name = f"{where}.{key}" if where else str(key)
        if isinstance(value, torch.Tensor):
            stored = value.untyped_storage().nbytes() // max(value.element_size(), 1)
            if value.numel() > MAX_TENSOR_ELEMENTS or value.numel() > stored:
                raise PolicyError(
                    f"{path}: tensor {printable(name, 120)} declares shape {tuple(value.shape)} "
                    f"({value.numel()} elements over {stored} stored); no policy holds such a tensor: "
                    "not a checkpoint transfer reads"
                )
        else:
            _check_tensors(path, value, torch, name, depth + 1)


def _layers(state: dict[str, Any], prefix: str, path: Path) -> list[tuple[Any, Any]]:
    indices = sorted(
        int(k[len(prefix) :].split(".")[0]) for k in state if k.startswith(prefix) and k.endswith(".weight")
    )
    if not indices:
        raise PolicyError(f"{path}: no linear layers under {prefix!r} in the actor's state dict")
    layers = []
    for i in indices:
        w, b = state[f"{prefix}{i}.weight"], state.get(f"{prefix}{i}.bias")
        if w.dim() != 2:
            raise NotImplementedError(
                f"{path}: layer {prefix}{i} is not a linear layer (weight shape {tuple(w.shape)})"
            )
        if layers and layers[-1][0].shape[0] != w.shape[1]:
            raise PolicyError(
                f"{path}: layer {prefix}{i} reads {w.shape[1]} entries but the layer before writes "
                f"{layers[-1][0].shape[0]}: not a plain MLP"
            )
        layers.append((w, b))
    return layers


class RslRlPolicy(Policy):
    """The actor of an RSL-RL training checkpoint, rebuilt as an MLP from its weights.

    Handled layouts (keys of the ``torch.save``'d dict):

    - rsl-rl-lib 5 (``OnPolicyRunner.save``): ``actor_state_dict`` (PPO; or ``student_state_dict`` from
      distillation) with ``mlp.<i>.weight/bias``, ``obs_normalizer._mean/_std`` when observation
      normalization was on, and ``distribution.std_param`` / ``distribution.log_std_param`` for a Gaussian;
      ``critic_state_dict``, ``optimizer_state_dict``, ``iter`` and ``infos`` are not needed;
    - older rsl_rl (``model_state_dict``): ``actor.<i>.*``, ``std`` / ``log_std``, ``actor_obs_normalizer.*``
      or a separate ``obs_norm_state_dict``.

    The action is the deterministic output: a Gaussian's mean (the MLP's output), the first half of a
    heteroscedastic Gaussian's output, a Beta's mean rescaled to ``action_range``. Without a std parameter
    the distribution cannot be told from the weights: pass ``distribution``. Recurrent and CNN actors raise
    ``NotImplementedError``.
    """

    format = "rsl_rl"
    native = "torch"

    def __init__(
        self,
        path: Path,
        device: str = "cpu",
        *,
        activation: str = "elu",
        distribution: str | None = None,
        action_range: Sequence[float] = (-1.0, 1.0),
    ):
        import torch

        ckpt = torch_load_safe(path)
        if not isinstance(ckpt, dict):
            raise PolicyError(f"{path}: a torch checkpoint holding {type(ckpt).__name__}, not an RSL-RL dict")
        if "actor_state_dict" in ckpt or "student_state_dict" in ckpt:
            state = dict(ckpt.get("actor_state_dict") or ckpt["student_state_dict"])
            mlp, norm, std_keys = "mlp.", "obs_normalizer.", ("distribution.std_param", "distribution.log_std_param")
            recurrent, cnn = any(k.startswith("rnn.") for k in state), any(k.startswith("cnns.") for k in state)
        elif "model_state_dict" in ckpt:
            state = dict(ckpt["model_state_dict"])
            mlp, norm, std_keys = "actor.", "actor_obs_normalizer.", ("std", "log_std")
            for k, v in (ckpt.get("obs_norm_state_dict") or {}).items():
                state[norm + k] = v
            recurrent, cnn = any(k.startswith("memory_a.") for k in state), False
        else:
            raise PolicyError(
                f"{path}: not an RSL-RL checkpoint: expected the key 'actor_state_dict' (rsl-rl-lib 5 "
                f"OnPolicyRunner.save), 'student_state_dict' or 'model_state_dict'; found {sorted(map(str, ckpt))}"
            )
        if recurrent:
            raise NotImplementedError(
                f"{path}: recurrent (LSTM/GRU) RSL-RL actors are not supported yet. Export the policy with "
                "OnPolicyRunner.export_policy_to_jit and load that TorchScript file (its reset() clears the state)."
            )
        if cnn:
            raise NotImplementedError(f"{path}: CNN RSL-RL actors are not supported; export TorchScript or ONNX")
        key = activation.lower()
        if key not in ACTIVATIONS:
            raise ValueError(f"Unknown activation {activation!r}; rsl_rl's names: {sorted(ACTIVATIONS)}")
        has_std = any(k in state for k in std_keys)
        if distribution is None:
            if not has_std:
                raise PolicyError(
                    f"{path}: the actor has no std parameter, so its output distribution is state-dependent "
                    "(heteroscedastic Gaussian or Beta) or absent, which the weights cannot tell apart. Pass "
                    "distribution='heteroscedastic_gaussian', 'beta' or 'none' (as the training config says)."
                )
            distribution = "gaussian"
        if distribution not in _DISTRIBUTIONS:
            raise ValueError(f"Unknown distribution {distribution!r}; expected one of {list(_DISTRIBUTIONS)}")
        layers = _layers(state, mlp, path)
        self.layers = [
            (w.to(device, torch.float32), None if b is None else b.to(device, torch.float32)) for w, b in layers
        ]
        self.activation = getattr(torch.nn, ACTIVATIONS[key])()
        self.mean = self.std = None
        if f"{norm}_mean" in state:
            self.mean = state[f"{norm}_mean"].reshape(1, -1).to(device, torch.float32)
            self.std = state[f"{norm}_std"].reshape(1, -1).to(device, torch.float32)
            if self.mean.shape[1] != layers[0][0].shape[1]:
                raise PolicyError(
                    f"{path}: the observation normalizer has {self.mean.shape[1]} entries, the first layer reads "
                    f"{layers[0][0].shape[1]}"
                )
        self.distribution = distribution
        self.action_range = (float(action_range[0]), float(action_range[1]))
        out = int(layers[-1][0].shape[0])
        if distribution in ("heteroscedastic_gaussian", "beta"):
            if out % 2:
                raise PolicyError(f"{path}: a {distribution} actor writes 2 x actions; its last layer writes {out}")
            out //= 2
        self.iteration = ckpt.get("iter")
        self._stored_metadata = ckpt.get(METADATA_KEY)
        super().__init__(path, int(layers[0][0].shape[1]), out, device)

    def read_metadata(self) -> dict[str, Any] | None:
        raw = self._stored_metadata
        return None if raw is None else decode_metadata(raw, f"{self.path.name} (metadata)")

    def _forward(self, x: Any) -> Any:
        import torch.nn.functional as F

        if self.mean is not None:
            x = (x - self.mean) / (self.std + RSL_RL_NORMALIZER_EPS)
        last = len(self.layers) - 1
        for i, (w, b) in enumerate(self.layers):
            x = F.linear(x, w, b)
            if i < last:
                x = self.activation(x)
        if self.distribution in ("gaussian", "none"):
            return x
        x = x.reshape(x.shape[0], 2, self.output_size)
        if self.distribution == "heteroscedastic_gaussian":
            return x[:, 0, :]
        alpha, beta = F.softplus(x[:, 0, :]) + 1.0, F.softplus(x[:, 1, :]) + 1.0
        low, high = self.action_range
        return alpha / (alpha + beta) * (high - low) + low


# ---------------------------------------------------------------------------------------------------- metadata


def read_metadata(path: str | Path) -> dict[str, Any] | None:
    """The document under the dict's key ``transfer``, or ``None``."""
    path = Path(path)
    ckpt = torch_load_safe(path)
    raw = ckpt.get(METADATA_KEY) if isinstance(ckpt, dict) else None
    return None if raw is None else decode_metadata(raw, f"{path.name} (metadata)")


def save_rsl_rl(checkpoint: Mapping[str, Any], out: str | Path, metadata: Mapping[str, Any]) -> Path:
    """``torch.save`` the RSL-RL dict to ``out`` atomically with the document under ``transfer``."""
    import torch

    data = {**dict(checkpoint), METADATA_KEY: json.loads(encode_metadata(metadata))}
    archive = io.BytesIO()  # as save_torchscript: a full disk is then Python's ENOSPC, never torch's serializer's
    torch.save(data, archive)
    return atomic_write(out, lambda tmp: tmp.write_bytes(archive.getbuffer()))


def write_metadata(checkpoint: Path, out: Path, metadata: Mapping[str, Any]) -> Path:
    """A copy of ``checkpoint`` with ``metadata`` at ``out`` (checked by the caller); every other key kept."""
    ckpt = torch_load_safe(checkpoint)
    if not isinstance(ckpt, dict):
        raise CheckpointError(f"{checkpoint}: a torch checkpoint holding {type(ckpt).__name__}, not an RSL-RL dict")
    return save_rsl_rl(ckpt, out, metadata)


# ---------------------------------------------------------------------------------------------------- convert


_NETWORKS = (  # key in the checkpoint, MLP prefix, normalizer prefix, writes the action
    ("actor_state_dict", "mlp.", "obs_normalizer.", True),
    ("student_state_dict", "mlp.", "obs_normalizer.", True),
    ("teacher_state_dict", "mlp.", "obs_normalizer.", True),
    ("critic_state_dict", "mlp.", "obs_normalizer.", False),
)
_NORMALIZER_STATS = ("_mean", "_var", "_std")


class RslRlPermutation:
    """An RSL-RL training checkpoint: every network's first/last layers and normalizer, the action std, and the
    optimizer's moments."""

    def __init__(self, path: Path, reorder: Permutation):
        self.path, self.reorder = path, reorder
        self.ckpt = torch_load_safe(path)
        if not isinstance(self.ckpt, dict):
            raise refuse(path.name, f"a torch checkpoint holding {type(self.ckpt).__name__}, not an RSL-RL dict")
        self.originals: dict[str, dict[str, Any]] = {}
        self._plans: dict[str, list[tuple[str, int, Sequence[int]]]] = {}
        self.notes: list[str] = []

    def _networks(self) -> list[tuple[str, str, str, bool]]:
        ckpt, name = self.ckpt, self.path.name
        if "model_state_dict" in ckpt:
            raise refuse(name, "the older rsl_rl layout (model_state_dict) is not converted; re-save with rsl-rl-lib 5")
        for key in ("rnd_state_dict",):
            if key in ckpt:
                raise refuse(name, f"it holds {key} (random network distillation), whose observation layout is unknown")
        found = [n for n in _NETWORKS if n[0] in ckpt]
        if not any(n[3] for n in found):
            raise refuse(name, f"no actor_state_dict or student_state_dict; found keys {sorted(map(str, ckpt))}")
        return found

    def edit(self) -> list[str]:
        import torch

        obs, act = self.reorder.observation, self.reorder.action
        edits: list[str] = []
        nets = self._networks()
        for key, mlp, norm, writes_action in nets:
            state = dict(self.ckpt[key])
            if any(k.startswith(("rnn.", "cnns.", "memory_")) for k in state):
                raise refuse(self.path.name, f"{key} holds recurrent or CNN layers, which are not converted")
            indices = sorted(
                int(k[len(mlp) :].split(".")[0]) for k in state if k.startswith(mlp) and k.endswith(".weight")
            )
            if not indices:
                raise refuse(self.path.name, f"{key} has no linear layers under {mlp!r}")
            first, last = f"{mlp}{indices[0]}.weight", f"{mlp}{indices[-1]}.weight"
            if state[first].shape[1] != len(obs) and key in ("actor_state_dict", "student_state_dict"):
                raise size_mismatch(self.path.name, f"{key}'s first layer {first}", state[first].shape[1], len(obs))
            if state[first].shape[1] != len(obs):
                raise refuse(
                    self.path.name,
                    f"{key}'s first layer {first} reads {state[first].shape[1]} entries, the task's observation has "
                    f"{len(obs)}: its observation (privileged terms?) has a layout the task does not describe",
                )
            self.originals[key] = {k: v.clone() for k, v in state.items()}
            plan: list[tuple[str, int, Sequence[int]]] = [(first, 1, obs)]
            plan += [(f"{norm}{s}", -1, obs) for s in _NORMALIZER_STATS if f"{norm}{s}" in state]
            if writes_action:
                rows = output_index(act, state[last].shape[0], self.path.name)
                plan.append((last, 0, rows))
                if f"{mlp}{indices[-1]}.bias" in state:
                    plan.append((f"{mlp}{indices[-1]}.bias", 0, rows))
                plan += [
                    (f"distribution.{s}", 0, act)
                    for s in ("std_param", "log_std_param")
                    if f"distribution.{s}" in state
                ]
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
                expected = expected[:, output_index(act, expected.shape[1], self.path.name)]
                for s in ("distribution.std_param", "distribution.log_std_param"):
                    if s in old:
                        pairs.append((old[s].numpy()[list(act)], new[s].numpy()))
            pairs.append((expected, self._forward(new, x_new)))
        return pairs

    def save(self, out: Path, metadata: Mapping[str, Any]) -> None:
        save_rsl_rl(self.ckpt, out, metadata)


class RslRlFormat(CheckpointFormat):
    """RSL-RL training checkpoints (``OnPolicyRunner.save``: ``model_<iter>.pt``), read with ``weights_only``."""

    name = "rsl_rl"
    policy = RslRlPolicy
    permutation = RslRlPermutation
    read_metadata = staticmethod(read_metadata)
    write_metadata = staticmethod(write_metadata)
    options = frozenset({"activation", "distribution", "action_range"})

    @classmethod
    def detect(cls, probe: Probe) -> bool:
        return detect(probe.names, probe.head)
