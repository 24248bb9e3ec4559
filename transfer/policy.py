"""Policies: TorchScript, ONNX and RSL-RL training checkpoints behind one small interface.

``load_policy(path)`` returns a :class:`Policy`: call it on a ``(num_envs, input_size)`` float32 batch (numpy
array or torch tensor) and get ``(num_envs, output_size)`` actions of the same kind back. Formats:

- ``torchscript``: ``torch.jit.load`` (Isaac Lab's and rsl_rl's exported ``policy.pt``);
- ``onnx``: an onnxruntime ``InferenceSession`` on the CPU (sizes from the graph);
- ``rsl_rl``: a training checkpoint as rsl-rl-lib 5's ``OnPolicyRunner.save`` writes it (``actor_state_dict``,
  also ``student_state_dict`` from distillation, and the older ``model_state_dict`` layout), loaded with
  ``torch.load(weights_only=True)``: the actor MLP is rebuilt from the weights and the observation normalizer
  is applied as rsl_rl does.

Loading is safe by default: a checkpoint that would need arbitrary pickle code to load is refused. Metadata
inside the file (which task, which joint order: :mod:`transfer.checkpoint`) is read by
:meth:`Policy.read_metadata`. torch and onnxruntime are imported only when a policy of their kind is loaded.
"""

from __future__ import annotations

import zipfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from transfer._arrays import is_torch

__all__ = [
    "ACTIVATIONS",
    "POLICY_FORMATS",
    "RSL_RL_NORMALIZER_EPS",
    "OnnxPolicy",
    "Policy",
    "PolicyError",
    "RslRlPolicy",
    "TorchScriptPolicy",
    "detect_format",
    "load_policy",
]

POLICY_FORMATS: tuple[str, ...] = ("torchscript", "onnx", "rsl_rl")

RSL_RL_NORMALIZER_EPS = 1e-2
"""``rsl_rl.modules.EmpiricalNormalization``'s default ``eps``: normalized = (x - mean) / (std + eps)."""

ACTIVATIONS: dict[str, str] = {
    "elu": "ELU", "selu": "SELU", "relu": "ReLU", "crelu": "CELU", "lrelu": "LeakyReLU", "tanh": "Tanh",
    "sigmoid": "Sigmoid", "softplus": "Softplus", "gelu": "GELU", "swish": "SiLU", "mish": "Mish",
    "identity": "Identity",
}  # fmt: skip
"""rsl_rl's activation names (``rsl_rl.utils.resolve_nn_activation``) -> ``torch.nn`` module classes."""

_DISTRIBUTIONS = ("gaussian", "heteroscedastic_gaussian", "beta", "none")


class PolicyError(ValueError):
    """A policy file cannot be loaded: missing, corrupt, unsafe, or not a format this reads."""


class Policy:
    """One loaded policy. Call it on a ``(num_envs, input_size)`` batch; get ``(num_envs, output_size)`` back.

    Numpy in, numpy (float32) out; torch in, torch out on the input's device. ``format``: ``torchscript`` /
    ``onnx`` / ``rsl_rl``; ``path``: the file; ``device``: where the network runs; ``recurrent``: whether it
    keeps state between calls (cleared by :meth:`reset`).
    """

    format: ClassVar[str]
    native: ClassVar[str]  # "torch" or "numpy": what _forward takes and returns

    def __init__(self, path: Path, input_size: int, output_size: int, device: str = "cpu", recurrent: bool = False):
        self.path = Path(path)
        self.input_size = int(input_size)
        self.output_size = int(output_size)
        self.device = str(device)
        self.recurrent = bool(recurrent)
        self._metadata: dict[str, Any] | None = None
        self._metadata_read = False

    # ------------------------------------------------------------------------------------------ metadata seam

    def read_metadata(self) -> dict[str, Any] | None:
        """The metadata document stored inside the file (:mod:`transfer.checkpoint`), or ``None`` when it has none.

        TorchScript: the archive's extra file ``transfer.json``; ONNX: ``metadata_props["transfer"]``; RSL-RL: the
        dict's ``transfer`` key. Raises :class:`transfer.checkpoint.CheckpointError` for a malformed document or
        one of a format version this does not read.
        """
        from transfer.checkpoint import read_metadata

        return read_metadata(self.path, self.format)

    @property
    def metadata(self) -> dict[str, Any] | None:
        """:meth:`read_metadata`, read once."""
        if not self._metadata_read:
            self._metadata = self.read_metadata()
            self._metadata_read = True
        return self._metadata

    # ------------------------------------------------------------------------------------------ inference

    def reset(self) -> None:
        """Clear recurrent state (a no-op for feed-forward policies)."""

    def __call__(self, obs: Any) -> Any:
        """Actions for a batch of observations: ``(num_envs, input_size)`` -> ``(num_envs, output_size)``."""
        shape = tuple(obs.shape) if hasattr(obs, "shape") else np.shape(obs)
        if len(shape) != 2:
            raise ValueError(
                f"{self.path.name}: expected observations shaped (num_envs, {self.input_size}), got shape {shape}; "
                "add the env axis (obs[None]) for one environment."
            )
        if shape[1] != self.input_size:
            raise ValueError(
                f"{self.path.name}: observation size mismatch: got {shape[1]} entries per env, the policy expects "
                f"{self.input_size}. Check the task's observation terms and the joint count."
            )
        if is_torch(obs):
            import torch

            with torch.no_grad():
                if self.native == "torch":
                    out = self._forward(obs.detach().to(device=self.device, dtype=torch.float32))
                else:
                    out = torch.from_numpy(self._forward(obs.detach().cpu().numpy().astype(np.float32, copy=False)))
                return out.to(obs.device)
        x = np.ascontiguousarray(obs, dtype=np.float32)
        if self.native == "numpy":
            return np.asarray(self._forward(x), dtype=np.float32)
        import torch

        with torch.no_grad():
            out = self._forward(torch.from_numpy(x).to(self.device))
        return out.detach().cpu().numpy().astype(np.float32, copy=False)

    def _forward(self, x: Any) -> Any:
        raise NotImplementedError

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}({str(self.path)!r}, input_size={self.input_size}, output_size={self.output_size}, "
            f"device={self.device!r}{', recurrent' if self.recurrent else ''})"
        )


# ---------------------------------------------------------------------------------------------------- TorchScript


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

    def reset(self) -> None:
        if self._has_reset:
            self.module.reset()

    def _forward(self, x: Any) -> Any:
        return self.module(x)


# ---------------------------------------------------------------------------------------------------- ONNX


class OnnxPolicy(Policy):
    """An ONNX model run by onnxruntime on the CPU (whatever ``device`` says; torch outputs go back to the
    input's device). Sizes come from the graph's single input and first output. A graph with a fixed batch of
    1 (rsl_rl's exports) is run one environment at a time."""

    format = "onnx"
    native = "numpy"

    def __init__(self, path: Path, device: str = "cpu"):
        import onnxruntime as ort

        try:
            session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
        except Exception as exc:
            raise PolicyError(f"{path}: not a valid ONNX model ({type(exc).__name__}: {exc})") from None
        inputs, outputs = session.get_inputs(), session.get_outputs()
        if len(inputs) != 1:
            raise NotImplementedError(
                f"{path}: the graph has {len(inputs)} inputs ({[i.name for i in inputs]}); only single-input "
                "(feed-forward) ONNX policies are supported. Recurrent exports carry their hidden state as "
                "extra inputs: load the TorchScript export instead."
            )
        shape = list(inputs[0].shape)
        if len(shape) != 2 or not isinstance(shape[1], int):
            raise PolicyError(f"{path}: input {inputs[0].name!r} has shape {shape}; expected (batch, obs_dim)")
        if inputs[0].type != "tensor(float)":
            raise PolicyError(f"{path}: input {inputs[0].name!r} is {inputs[0].type}; expected tensor(float)")
        self.session = session
        self._input_name = inputs[0].name
        self._output_name = outputs[0].name
        self._batch = shape[0] if isinstance(shape[0], int) else None
        out_dim = outputs[0].shape[-1] if outputs[0].shape else None
        if not isinstance(out_dim, int):
            out_dim = session.run([self._output_name], {self._input_name: np.zeros((1, shape[1]), np.float32)})[0]
            out_dim = out_dim.shape[-1]
        super().__init__(path, shape[1], int(out_dim), "cpu")

    def read_metadata(self) -> dict[str, Any] | None:
        from transfer.checkpoint import onnx_props_metadata

        return onnx_props_metadata(self.session.get_modelmeta().custom_metadata_map, self.path)

    def _run(self, x: np.ndarray) -> np.ndarray:
        return self.session.run([self._output_name], {self._input_name: x})[0]

    def _forward(self, x: np.ndarray) -> np.ndarray:
        if self._batch is None or self._batch == x.shape[0]:
            return self._run(x)
        if self._batch == 1:
            return np.concatenate([self._run(x[i : i + 1]) for i in range(x.shape[0])], axis=0)
        raise ValueError(f"{self.path.name}: the graph takes exactly {self._batch} environments; got {x.shape[0]}")


# ---------------------------------------------------------------------------------------------------- RSL-RL


def _torch_load_safe(path: Path) -> Any:
    """``torch.load(weights_only=True)``, with errors that say what went wrong."""
    import pickle

    import torch

    try:
        return torch.load(str(path), map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as exc:
        text = str(exc)
        if "global" in text.lower():
            raise PolicyError(
                f"{path}: refused: loading this checkpoint would run arbitrary pickle code (it stores Python "
                "objects, not just tensors and plain containers). transfer loads checkpoints with "
                "torch.load(weights_only=True) deliberately. Re-save it as plain data (rsl_rl's "
                "OnPolicyRunner.save writes dicts of state dicts), or export TorchScript/ONNX. Detail: "
                + text.splitlines()[0]
            ) from None
        raise PolicyError(f"{path}: corrupt or not a torch checkpoint ({text.splitlines()[0]})") from None
    except Exception as exc:
        raise PolicyError(f"{path}: corrupt or not a torch checkpoint ({type(exc).__name__}: {exc})") from None


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

        ckpt = _torch_load_safe(path)
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
        self._stored_metadata = ckpt.get("transfer")  # transfer.checkpoint.METADATA_KEY
        super().__init__(path, int(layers[0][0].shape[1]), out, device)

    def read_metadata(self) -> dict[str, Any] | None:
        from transfer.checkpoint import decode_metadata

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


# ---------------------------------------------------------------------------------------------------- loading


def detect_format(path: str | Path) -> str:
    """The policy format of a file, from its content (and the ``.onnx`` suffix). Raises :class:`PolicyError`."""
    path = Path(path)
    with open(path, "rb") as fh:
        head = fh.read(4)
    if not head:
        raise PolicyError(f"{path}: an empty file (0 bytes), not a policy; was it written completely?")
    if zipfile.is_zipfile(path):
        try:
            names = zipfile.ZipFile(path).namelist()
        except (zipfile.BadZipFile, OSError) as exc:
            raise PolicyError(f"{path}: a damaged zip archive ({exc})") from None
        if any("/code/" in n or n.endswith("/constants.pkl") for n in names):
            return "torchscript"
        if any(n.endswith("/data.pkl") for n in names):
            return "rsl_rl"
        raise PolicyError(f"{path}: a zip archive, but neither a TorchScript module nor a torch.save checkpoint")
    if path.suffix.lower() == ".onnx":
        return "onnx"
    if head[:1] == b"\x80":  # a pickle stream: torch.save's legacy (non-zip) format
        return "rsl_rl"
    if head == b"PK\x03\x04":  # a zip archive's first entry without the directory at its end
        raise PolicyError(
            f"{path}: truncated or corrupt: it starts as a zip archive (TorchScript and torch.save write those) but "
            f"its end is missing or damaged ({path.stat().st_size} bytes). Copy or export the file again."
        )
    raise PolicyError(
        f"{path}: not a policy file this version reads. Expected a TorchScript module (.pt from torch.jit.save / "
        "Isaac Lab's export), an ONNX model (.onnx), or an RSL-RL training checkpoint (model_<iter>.pt)."
    )


def load_policy(path: str | Path, *, device: str = "cpu", format: str | None = None, **options: Any) -> Policy:
    """Load a policy file into a :class:`Policy`.

    Args:
        path: A TorchScript ``.pt``, an ``.onnx`` model, or an RSL-RL training checkpoint.
        device: Torch device the network runs on (ONNX always runs on the CPU).
        format: ``torchscript`` / ``onnx`` / ``rsl_rl``; ``None`` detects it from the content.
        options: For ``rsl_rl``: ``activation`` (rsl_rl's name, default ``"elu"``), ``distribution``,
            ``action_range`` (see :class:`RslRlPolicy`).

    Raises:
        FileNotFoundError: no such file.
        PolicyError: a corrupt or unrecognised file, or one that would need arbitrary pickle code.
        NotImplementedError: a recurrent or CNN RSL-RL actor, a multi-input ONNX graph.
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"Policy file not found: {path}")
    if path.is_dir():
        raise PolicyError(
            f"{path} is a folder without params/env.yaml, so not an Isaac Lab run folder; pass the checkpoint file "
            "(policy.pt, policy.onnx, model_<iter>.pt), or a run folder that holds params/env.yaml"
        )
    fmt = detect_format(path) if format is None else format
    if fmt not in POLICY_FORMATS:
        raise ValueError(f"Unknown policy format {format!r}; expected one of {list(POLICY_FORMATS)} or None")
    if options and fmt != "rsl_rl":
        raise TypeError(f"{path}: options {sorted(options)} apply to RSL-RL checkpoints only, not {fmt}")
    if fmt == "torchscript":
        return TorchScriptPolicy(path, device)
    if fmt == "onnx":
        return OnnxPolicy(path, device)
    return RslRlPolicy(path, device, **options)
