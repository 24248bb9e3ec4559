"""The policy interface: TorchScript, ONNX and RSL-RL checkpoints behind one small class.

:func:`transfer.formats.load_policy` returns a :class:`Policy`: call it on a ``(num_envs, input_size)`` float32
batch (numpy array or torch tensor) and get ``(num_envs, output_size)`` actions of the same kind back. Each format's
subclass lives with its format (:mod:`transfer.formats.torchscript`, :mod:`transfer.formats.onnx`,
:mod:`transfer.formats.rsl_rl`) and reads the metadata its file holds (:meth:`Policy.read_metadata`). This module
imports no format module; torch is imported only when a torch tensor comes in.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from transfer._arrays import is_torch

__all__ = ["Policy", "PolicyError"]


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
        self.motion_export = False
        """Whether the file carries the motion a tracker was trained on (mjlab's tracking ONNX export)."""
        self._metadata: dict[str, Any] | None = None
        self._metadata_read = False

    # ------------------------------------------------------------------------------------------ metadata seam

    def read_metadata(self) -> dict[str, Any] | None:
        """The metadata document stored inside the file (:mod:`transfer.formats.checkpoint`), or ``None`` when it has none.

        TorchScript: the archive's extra file ``transfer.json``; ONNX: ``metadata_props["transfer"]``; RSL-RL: the
        dict's ``transfer`` key. Raises :class:`transfer.formats.checkpoint.CheckpointError` for a malformed document or
        one of a format version this does not read. Each format's subclass reads it from its own file.
        """
        raise NotImplementedError(f"{type(self).__name__} does not say where its file keeps metadata")

    @property
    def metadata(self) -> dict[str, Any] | None:
        """:meth:`read_metadata`, read once."""
        if not self._metadata_read:
            self._metadata = self.read_metadata()
            self._metadata_read = True
        return self._metadata

    # ------------------------------------------------------------------------------------------ inference

    def reset(self, env_ids: Any = None) -> None:
        """Clear recurrent state, of every env or of ``env_ids`` (a no-op for feed-forward policies)."""

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

            with torch.no_grad(), _threads_for(torch, shape[0] if self.native == "torch" else THREADED_BATCH):
                if self.native == "torch":
                    out = self._forward(obs.detach().to(device=self.device, dtype=torch.float32))
                else:
                    out = torch.from_numpy(self._forward(obs.detach().cpu().numpy().astype(np.float32, copy=False)))
                return out.to(obs.device)
        x = np.ascontiguousarray(obs, dtype=np.float32)
        if self.native == "numpy":
            return np.asarray(self._forward(x), dtype=np.float32)
        import torch

        with torch.no_grad(), _threads_for(torch, shape[0]):
            out = self._forward(torch.from_numpy(x).to(self.device))
        return out.detach().cpu().numpy().astype(np.float32, copy=False)

    def _forward(self, x: Any) -> Any:
        raise NotImplementedError

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}({str(self.path)!r}, input_size={self.input_size}, output_size={self.output_size}, "
            f"device={self.device!r}{', recurrent' if self.recurrent else ''})"
        )


THREADED_BATCH = 256
"""A batch smaller than this many envs runs on one torch thread (:func:`_threads_for`): a legged policy's network on a
few envs takes microseconds, and torch's thread pool spin-waiting for a core another process holds made a batch-1
call 7 ms instead of 17 us on a busy 2-core machine; larger batches run on the caller's thread count."""


@contextmanager
def _threads_for(torch: Any, batch: int) -> Iterator[None]:
    """One torch thread for a call of fewer than :data:`THREADED_BATCH` envs, wherever the policy was loaded (the
    command line, the API, an env, a sweep's worker, a benchmark); the caller's count is back afterwards (setting it
    costs nothing measurable: 20 us a call either way)."""
    before = torch.get_num_threads()
    if batch >= THREADED_BATCH or before == 1:
        yield
        return
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)
