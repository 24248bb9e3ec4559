"""TorchScript policies (``torch.jit.save``: Isaac Lab's and rsl_rl's exported ``policy.pt``).

Detect (:func:`detect`: the archive holds code), load (:class:`TorchScriptPolicy`), the metadata document in the
archive's extra file ``transfer.json`` (:func:`read_metadata`, :func:`save_torchscript`, :func:`write_metadata`),
and the weight permutation ``transfer convert`` applies (:class:`TorchScriptPermutation`: the scripted module's
parameters and buffers, permuted in place, its code untouched). torch is imported inside the functions only.
"""

from __future__ import annotations

import io
import zipfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from transfer.formats.base import CheckpointFormat, Probe
from transfer.formats.checkpoint import TORCHSCRIPT_EXTRA_FILE, atomic_write, decode_metadata, encode_metadata
from transfer.formats.permutation import Permutation, output_index, refuse, size_mismatch
from transfer.formats.policy import Policy, PolicyError

if TYPE_CHECKING:
    import torch

__all__ = [
    "TorchScriptFormat",
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


_STATE_BUFFERS = ("hidden_state", "cell_state")
"""Buffer names of the recurrent state the exporters keep in the module (rsl_rl's and Isaac Lab's
``_TorchPolicyExporter``, legged_gym's ``PolicyExporterLSTM``): ``(num_layers, 1, hidden_size)`` each, or
``(1, hidden_size)`` for a cell (``GRUCell`` / ``LSTMCell``): the batch is the middle axis, or the first."""


def _batch_axis(state: Any) -> int:
    """The axis of a recurrent state buffer that holds the envs: ``(layers, envs, hidden)`` or ``(envs, hidden)``."""
    return 1 if state.dim() == 3 else 0


def _input_size(module: Any, path: Path) -> int:
    """The observation size: a recurrent layer's ``weight_ih_l0`` columns (the exporters put the actor MLP first, whose
    weights read the hidden state), else the first 2-D weight's."""
    params = list(module.named_parameters())
    recurrent = [p for n, p in params if n.endswith("weight_ih_l0")]
    weights = recurrent or [p for _, p in params if p.dim() == 2]
    if not weights:
        raise PolicyError(f"{path}: TorchScript module without a 2-D weight: cannot tell its input size")
    return int(weights[0].shape[1])


def _frozen(module: Any, input_size: int, device: str) -> Any:
    """``module`` frozen for inference (``torch.jit.freeze``: its weights inlined as constants; a small MLP's call
    30 % faster, measured in docs/mujoco.md) when the frozen module gives bit-for-bit the actions ``module`` gives
    on random observations; else ``module`` itself. Only for feed-forward modules: freezing would fold a recurrent
    state into constants."""
    import torch

    try:
        frozen = torch.jit.freeze(module)
        x = torch.randn(16, input_size, generator=torch.Generator().manual_seed(0)).to(device)
        with torch.no_grad():
            same = torch.equal(frozen(x), module(x))
    except Exception:  # a module freezing cannot handle runs as it is
        return module
    return frozen if same else module


class TorchScriptPolicy(Policy):
    """A TorchScript module (``torch.jit.load``). The input size is the recurrent layer's input (``weight_ih_l0``) or
    the first 2-D weight's column count; the output size comes from one probe call on zeros.

    Recurrent exports (a ``hidden_state`` buffer, and ``cell_state`` for an LSTM, sized for one environment) run
    batched: the state buffers are resized to the batch on its first call and each env's state is kept in its own
    column; :meth:`reset` zeroes all of it or the envs named. A module whose forward does not take a batch with that
    state runs one env at a time with each env's state swapped in (:attr:`per_env`, said in a warning)."""

    format = "torchscript"
    native = "torch"

    def __init__(self, path: Path, device: str = "cpu"):
        import torch

        try:
            module = torch.jit.load(str(path), map_location=device)
        except Exception as exc:
            raise PolicyError(f"{path}: not a loadable TorchScript module ({type(exc).__name__}: {exc})") from None
        module.eval()
        input_size = _input_size(module, path)
        self.module = module
        buffers = dict(module.named_buffers())
        self._state_names = [n for n in _STATE_BUFFERS if n in buffers and buffers[n].dim() in (2, 3)]
        self._initial = {n: buffers[n].clone() for n in self._state_names}
        self._has_reset = hasattr(module, "reset") or hasattr(module, "reset_memory")
        self.per_env = False
        self._states: list[dict[str, Any]] | None = None
        try:
            with torch.no_grad():
                out = module(torch.zeros(1, input_size, device=device))
        except Exception as exc:
            detail = str(exc).strip().splitlines()
            raise PolicyError(
                f"{path}: probing the module with zeros(1, {input_size}) failed ({type(exc).__name__}: "
                f"{detail[-1] if detail else ''}); its first weight may not read the observation."
            ) from None
        recurrent = bool(self._state_names) or any(n.endswith(_STATE_BUFFERS) for n in buffers)
        self._run = module if recurrent else _frozen(module, input_size, device)
        super().__init__(path, input_size, int(out.shape[-1]), device, recurrent)
        self.reset()

    def read_metadata(self) -> dict[str, Any] | None:
        return read_metadata(self.path)

    def _state(self) -> dict[str, Any]:
        return {n: getattr(self.module, n) for n in self._state_names}

    def _set_state(self, state: dict[str, Any]) -> None:
        for name, value in state.items():
            setattr(self.module, name, value)

    def reset(self, env_ids: Any = None) -> None:
        """Zero the recurrent state of every env, or of ``env_ids`` only (the others keep theirs)."""
        if not self._state_names:
            if self._has_reset and env_ids is None:
                (self.module.reset if hasattr(self.module, "reset") else self.module.reset_memory)()
            return
        if self._states is not None:  # one state per env
            ids = range(len(self._states)) if env_ids is None else [int(i) for i in env_ids]
            for i in ids:
                self._states[i] = {n: t.zero_() for n, t in self._states[i].items()}
            return
        for tensor in self._state().values():
            if env_ids is None:
                tensor.zero_()
            else:
                tensor.index_fill_(_batch_axis(tensor), _index(env_ids, tensor.device), 0.0)

    def _batch(self, n: int) -> None:
        """Resize the state buffers to ``n`` envs (zeros), once per batch size."""
        import torch

        state = self._state()
        if not state or all(v.shape[_batch_axis(v)] == n for v in state.values()):
            return
        shaped = lambda v: [n if axis == _batch_axis(v) else size for axis, size in enumerate(v.shape)]  # noqa: E731
        self._set_state({k: torch.zeros(shaped(v), dtype=v.dtype, device=v.device) for k, v in state.items()})

    def _forward(self, x: Any) -> Any:
        import torch

        if not self._state_names:
            return self._run(x)
        n = int(x.shape[0])
        if not self.per_env:
            self._batch(n)
            try:
                return self.module(x)
            except (RuntimeError, torch.jit.Error):  # a shape error in eager ops, or one TorchScript raised
                if n == 1:
                    raise
                self._per_env(n)
        return self._forward_per_env(x)

    def _per_env(self, n: int) -> None:
        import warnings

        self.per_env = True
        self._states = None  # made by the first call, one zero state per env
        warnings.warn(
            f"{self.path.name}: the recurrent module does not take a batch of {n} envs with its state; "
            "running it one env at a time",
            stacklevel=3,
        )

    def _forward_per_env(self, x: Any) -> Any:
        import torch

        if self._states is None or len(self._states) != x.shape[0]:
            self._states = [{k: torch.zeros_like(v) for k, v in self._initial.items()} for _ in range(x.shape[0])]
        out = []
        for i, state in enumerate(self._states):
            self._set_state(state)
            out.append(self.module(x[i : i + 1]))
            self._states[i] = {k: v.clone() for k, v in self._state().items()}
        return torch.cat(out, dim=0)


def _index(env_ids: Any, device: Any) -> Any:
    import torch

    return torch.as_tensor([int(i) for i in env_ids], dtype=torch.long, device=device)


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
    archive = io.BytesIO()  # torch.jit.save into a file aborts the process (SIGABRT) when the disk fills mid-archive
    torch.jit.save(module, archive, _extra_files=files)
    return atomic_write(out, lambda tmp: tmp.write_bytes(archive.getbuffer()))


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


class TorchScriptFormat(CheckpointFormat):
    """TorchScript modules (``torch.jit.save``; Isaac Lab's and rsl_rl's ``policy.pt``, legged_gym's exports)."""

    name = "torchscript"
    policy = TorchScriptPolicy
    permutation = TorchScriptPermutation
    read_metadata = staticmethod(read_metadata)
    write_metadata = staticmethod(write_metadata)

    @classmethod
    def detect(cls, probe: Probe) -> bool:
        return probe.names is not None and detect(probe.names)
