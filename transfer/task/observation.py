"""The policy observation a task describes: its terms (:class:`ObsTerm`, what a task file lists) and, assembled step
by step, each term's value clipped, scaled and stacked with its history, the way Isaac Lab's ``ObservationManager``
does it (:class:`ObservationBuffer`).

Per term, every policy step: ``value -> clip(value, *clip) -> value * scale`` (one number or one per entry), then,
for a term with ``history_length`` H > 0, pushed into a buffer of its last H values (Isaac Lab's
``CircularBuffer``): the observation holds them oldest first, flattened in place (``flatten_history_dim``), terms
kept in the task's order. The first value pushed after a reset fills the whole history (Isaac Lab's first push).
numpy only: the environment hands the values in (:class:`transfer.env.PolicyEnv`), nothing here reads an engine.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import numpy as np

from transfer.task._checks import TaskError, _freeze, _integer, _number
from transfer.task.terms import OBS_TERMS, Axis, KnownTerm, alias_hint

__all__ = ["MAX_HISTORY", "ObsTerm", "ObservationBuffer"]


def _known_terms() -> str:
    return ", ".join(f"{n} ({t.axis}{'' if t.size is None else f', {t.size}'})" for n, t in OBS_TERMS.items())


MAX_HISTORY = 1000
"""The longest observation history a term may stack (policy steps): Isaac Lab's locomotion tasks stack 3-10."""


CRITIC_TERMS = {
    name: "a critic's term of mjlab's and BeyondMimic's tracking tasks (the tracked bodies' "
    f"{what} in the robot anchor's frame), which their policies do not observe; transfer builds the policy's "
    "observation only: read the policy group of the config (observations.policy), not the critic's"
    for name, what in (("robot_body_pos_b", "positions"), ("robot_body_ori_b", "orientations"))
}
"""Terms only a critic reads: a policy's observation naming one is refused with what it is."""


@dataclass(frozen=True)
class ObsTerm:
    """One observation term, in the order the checkpoint reads them.

    ``axis``: what the term's entries index. ``joint`` and ``body`` terms follow the articulation (their size is
    resolved from the asset; a declared ``size`` is checked then); ``none`` terms have a fixed size. ``axis`` and
    ``size`` default to the registry's (:data:`OBS_TERMS`); an unknown name is an error listing the known ones.
    The value fed to the policy is ``clip(raw, *clip) * scale`` (Isaac Lab's order: clip, then scale); ``scale`` is
    one number or one per entry (Isaac Lab's and Unitree's per-component scales: a command scaled ``[2, 2, 0.25]``).
    ``history_length``: how many policy steps of the term the policy reads (Isaac Lab's ``history_length``; 0: the
    current value only), oldest first, flattened in place (``flatten_history_dim``), filled with the first value
    after a reset. ``params``: what the term's builder reads (:attr:`KnownTerm.params`: ``gait_phase`` needs
    ``period``). ``size`` counts the entries of one step; :meth:`resolved_size` the stacked ones.
    """

    name: str
    size: int | None = None
    axis: Axis | None = None
    scale: float | tuple[float, ...] = 1.0
    clip: tuple[float, float] | None = None
    history_length: int = 0
    params: Mapping[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        known = OBS_TERMS.get(self.name) if isinstance(self.name, str) else None
        if known is None and self.name in CRITIC_TERMS:
            raise TaskError(f"observation term {self.name!r}: {CRITIC_TERMS[self.name]}")
        if known is None:
            raise TaskError(
                f"unknown observation term {self.name!r}; known terms: {_known_terms()}; " + alias_hint(str(self.name))
            )
        where = f"observation term {self.name!r}"
        axis = known.axis if self.axis is None else self.axis
        if axis != known.axis:
            raise TaskError(f"{where}: axis {self.axis!r} given, but this term indexes {known.axis!r}")
        size = self.size
        if size is not None:
            size = _integer(size, f"{where}: size", 1)
        if known.size is not None:
            if size is not None and size != known.size:
                raise TaskError(f"{where}: size {size} given, but this term has {known.size} entries")
            size = known.size
        clip = self.clip
        if clip is not None:
            if isinstance(clip, (str, bytes)) or not isinstance(clip, Sequence) or len(clip) != 2:
                raise TaskError(f"{where}: clip must be [low, high] or null, got {clip!r}")
            clip = (_number(clip[0], f"{where}: clip[0]"), _number(clip[1], f"{where}: clip[1]"))
            if clip[0] > clip[1]:
                raise TaskError(f"{where}: clip low {clip[0]} is above high {clip[1]}")
        object.__setattr__(self, "axis", axis)
        object.__setattr__(self, "size", size)
        object.__setattr__(self, "scale", _scale(self.scale, size, where))
        object.__setattr__(self, "clip", clip)
        history = _integer(self.history_length, f"{where}: history_length", 0)
        if history > MAX_HISTORY:
            raise TaskError(f"{where}: history_length {history} is more than {MAX_HISTORY} policy steps")
        object.__setattr__(self, "history_length", history)
        object.__setattr__(self, "params", _term_params(self.params, known, where))

    def __hash__(self) -> int:
        return hash((self.name, self.size, self.axis, self.scale, self.clip, self.history_length, _freeze(self.params)))

    @property
    def steps(self) -> int:
        """Policy steps of this term the observation holds (1 without history)."""
        return max(1, self.history_length)

    def frame_size(self, num_joints: int, num_bodies: int | None, action_size: int) -> int:
        """The term's entry count for one policy step on an articulation with ``num_joints`` joints and
        ``num_bodies`` bodies (a per-entry scale must have as many)."""
        if self.axis == "none":
            n = int(self.size)  # type: ignore[arg-type]
        elif self.axis == "body":
            if num_bodies is None:
                raise TaskError(f"observation term {self.name!r} indexes bodies: pass num_bodies")
            n = num_bodies
        else:
            n = action_size if self.name == "last_action" else num_joints * OBS_TERMS[self.name].per_joint
        if self.size is not None and self.size != n:
            raise TaskError(f"observation term {self.name!r} declares {self.size} entries, the articulation gives {n}")
        if isinstance(self.scale, tuple) and len(self.scale) != n:
            raise TaskError(
                f"observation term {self.name!r}: {len(self.scale)} scales for {n} entries; give one "
                "number, or one per entry"
            )
        return n

    def resolved_size(self, num_joints: int, num_bodies: int | None, action_size: int) -> int:
        """The term's entry count in the observation: :meth:`frame_size` times the history it stacks."""
        return self.frame_size(num_joints, num_bodies, action_size) * self.steps

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "size": self.size,
            "axis": self.axis,
            "scale": list(self.scale) if isinstance(self.scale, tuple) else self.scale,
            "clip": None if self.clip is None else list(self.clip),
            "history_length": self.history_length,
            "params": dict(self.params),
        }


def _scale(value: Any, size: int | None, where: str) -> float | tuple[float, ...]:
    """One number, or one per entry (a list; all equal collapses to the number)."""
    if isinstance(value, (str, bytes)) or not isinstance(value, (Sequence, int, float)) or isinstance(value, bool):
        raise TaskError(f"{where}: scale: expected a number or a list of numbers (one per entry), got {value!r}")
    if not isinstance(value, Sequence):
        return _number(value, f"{where}: scale")
    values = tuple(_number(v, f"{where}: scale[{i}]") for i, v in enumerate(value))
    if not values:
        raise TaskError(f"{where}: scale: an empty list; give a number or one per entry")
    if size is not None and len(values) != size:
        raise TaskError(
            f"{where}: {len(values)} scales for a term of {size} entries; give one number, or one per entry"
        )
    return values[0] if len(set(values)) == 1 else values


def _term_params(value: Any, known: KnownTerm, where: str) -> Mapping[str, float]:
    """The builder's parameters: every known one (defaults filled in), checked as numbers; an unknown or a missing
    required one is named."""
    if value is None:
        value = {}
    if not isinstance(value, Mapping):
        raise TaskError(f"{where}: params: expected a mapping of parameters, got {value!r}")
    unknown = sorted(set(map(str, value)) - set(known.params))
    if unknown:
        takes = f"takes {sorted(known.params)}" if known.params else "takes no parameters"
        raise TaskError(f"{where}: params: unknown {unknown}; this term {takes}")
    out = {}
    for key, default in known.params.items():
        given = value.get(key, default)
        if given is None:
            raise TaskError(f"{where}: params.{key} is required ({known.doc})")
        out[key] = _number(given, f"{where}: params.{key}")
    if "period" in out and out["period"] <= 0:
        raise TaskError(f"{where}: params.period: {out['period']} s; a period is > 0 (legged_gym's humanoids: 0.8)")
    return MappingProxyType(out)


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
