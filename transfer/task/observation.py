"""The policy observation a task describes, assembled step by step: each term's value clipped, scaled and stacked
with its history, the way Isaac Lab's ``ObservationManager`` does it.

Per term, every policy step: ``value -> clip(value, *clip) -> value * scale`` (one number or one per entry), then,
for a term with ``history_length`` H > 0, pushed into a buffer of its last H values (Isaac Lab's
``CircularBuffer``): the observation holds them oldest first, flattened in place (``flatten_history_dim``), terms
kept in the task's order. The first value pushed after a reset fills the whole history (Isaac Lab's first push).
numpy only: the environment hands the values in (:class:`transfer.env.PolicyEnv`), nothing here reads an engine.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

__all__ = ["ObservationBuffer"]


class ObservationBuffer:
    """The observation of ``num_envs`` envs for ``terms`` (:class:`~transfer.task.ObsTerm`, resolved sizes
    ``frame_sizes`` per term name): :meth:`push` one step's values, :meth:`reset` envs whose history starts anew."""

    def __init__(self, terms: Sequence[Any], frame_sizes: Mapping[str, int], num_envs: int) -> None:
        self.terms = tuple(terms)
        self.num_envs = int(num_envs)
        self.slices: dict[str, slice] = {}
        self._scale: dict[str, Any] = {}
        self._history: dict[str, np.ndarray] = {}
        start = 0
        for term in self.terms:
            size = frame_sizes[term.name]
            self.slices[term.name] = slice(start, start + size * term.steps)
            start += size * term.steps
            scale = term.scale
            self._scale[term.name] = None if scale == 1.0 else np.asarray(scale, np.float32)
            if term.steps > 1:
                self._history[term.name] = np.zeros((self.num_envs, term.steps, size), np.float32)
        self.size = start
        self.values = np.zeros((self.num_envs, self.size), np.float32)
        """The observation, refilled by each :meth:`push`."""
        self._empty = np.ones(self.num_envs, bool)

    def reset(self, env_ids: Sequence[int] | np.ndarray | None = None) -> None:
        """The next push fills the whole history of these envs (all when ``None``)."""
        if env_ids is None:
            self._empty[:] = True
        else:
            self._empty[np.asarray(env_ids, np.int64)] = True

    def process(self, term: Any, value: Any) -> np.ndarray:
        """One step of ``term``: ``clip`` then ``scale`` applied to ``value`` ``(num_envs, frame size)``."""
        value = np.asarray(value, np.float32)
        if term.clip is not None:
            value = np.clip(value, *term.clip)
        scale = self._scale[term.name]
        return value if scale is None else value * scale

    def push(self, values: Mapping[str, Any], env_ids: Sequence[int] | np.ndarray | None = None) -> np.ndarray:
        """Append one step (``{term name: (num_envs, frame size)}``, raw) and return the observation. ``env_ids``:
        only these envs take the step (the others keep theirs: a reset within a policy step, as Isaac Lab computes
        the reset envs' observation once more)."""
        rows = slice(None) if env_ids is None else np.asarray(env_ids, np.int64)
        empty = self._empty.copy()
        if env_ids is not None:
            empty[np.setdiff1d(np.arange(self.num_envs), rows)] = False
        for term in self.terms:
            value = self.process(term, values[term.name])
            history = self._history.get(term.name)
            if history is None:
                self.values[rows, self.slices[term.name]] = value[rows]
                continue
            history[rows, :-1] = history[rows, 1:]
            history[rows, -1] = value[rows]
            if empty.any():
                history[empty] = value[empty][:, None, :]
            self.values[rows, self.slices[term.name]] = history[rows].reshape(len(history[rows]), -1)
        self._empty[rows] = False
        return self.values
