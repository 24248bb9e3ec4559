"""The permutation of one conversion, by name (:class:`Reorder`). How a conversion is refused
(:class:`ConvertError`, :data:`RUNTIME_HINT`) is :mod:`transfer.formats.permutation`'s, shared with the per-format
weight edits.

Both joint orders are matched with :func:`transfer.build_name_map`; the task's observation layout
(:meth:`transfer.Task.term_slices`) says which observation entries are joint- (or body-) indexed.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from transfer.formats.permutation import RUNTIME_HINT, ConvertError
from transfer.name_map import build_name_map
from transfer.task import Task

# ---------------------------------------------------------------------------------------------------- the permutation


@dataclass(frozen=True)
class Reorder:
    """The index arrays of one conversion: ``new[..., j] = old[..., index[j]]``.

    ``observation`` has one entry per observation entry (identity outside joint- and body-indexed terms),
    ``action`` one per action entry. Build it by name with :meth:`from_names`.
    """

    observation: tuple[int, ...]
    action: tuple[int, ...]

    def __post_init__(self) -> None:
        for name in ("observation", "action"):
            index = tuple(int(i) for i in getattr(self, name))
            if sorted(index) != list(range(len(index))):
                raise ValueError(f"Reorder.{name} is not a permutation of 0..{len(index) - 1}: {index}")
            object.__setattr__(self, name, index)

    @property
    def identity(self) -> bool:
        return self.observation == tuple(range(len(self.observation))) and self.action == tuple(range(len(self.action)))

    def inverse(self) -> Reorder:
        """The conversion back."""
        return Reorder(tuple(np.argsort(self.observation).tolist()), tuple(np.argsort(self.action).tolist()))

    @classmethod
    def from_names(
        cls,
        task: Task,
        source_joints: Sequence[str],
        target_joints: Sequence[str],
        source_bodies: Sequence[str] | None = None,
        target_bodies: Sequence[str] | None = None,
    ) -> Reorder:
        """The conversion of a checkpoint of ``task`` from ``source_joints`` order to ``target_joints`` order.

        ``source_bodies``/``target_bodies`` are needed only when an observation term indexes bodies.
        """
        plain = dataclasses.replace(task, joint_names=None, convention=None, joint_names_by_convention={})
        expanded = plain.with_joint_names(tuple(source_joints))
        joints = _gather("joint", source_joints, target_joints)
        acting = expanded.action.joints
        if acting is None:
            action = joints
        else:
            chosen = set(acting)
            action = _gather(
                "joint", [n for n in source_joints if n in chosen], [n for n in target_joints if n in chosen]
            )
        nb = None if source_bodies is None else len(source_bodies)
        obs = list(range(expanded.observation_size(len(source_joints), nb)))
        for term in expanded.observation:
            where = expanded.term_slices(len(source_joints), nb)[term.name]
            if term.axis == "none":
                continue
            if term.axis == "body":
                if source_bodies is None or target_bodies is None:
                    raise ConvertError(
                        f"observation term {term.name!r} indexes bodies, but the body orders are unknown (an explicit "
                        "joint list gives none): convert between conventions, or use runtime reordering."
                    )
                index = _gather("body", source_bodies, target_bodies)
            else:
                index = action if term.name == "last_action" else joints
            frame = len(index)  # a stacked history: each step's block permuted alike
            for k in range(term.steps):
                start = where.start + k * frame
                obs[start : start + frame] = [start + i for i in index]
        return cls(tuple(obs), tuple(action))


def in_order(task: Task, source_joints: Sequence[str], target_joints: Sequence[str]) -> Task:
    """``task`` with its per-entry scales of joint-indexed terms (given by position, in the checkpoint's order) put
    in ``target_joints`` order, as the converted checkpoint reads them (every other value is by name already)."""
    plain = dataclasses.replace(task, joint_names=None, convention=None, joint_names_by_convention={})
    acting = plain.with_joint_names(tuple(source_joints)).action.joints
    joints = _gather("joint", source_joints, target_joints)
    chosen = set(acting or source_joints)
    action = _gather("joint", [n for n in source_joints if n in chosen], [n for n in target_joints if n in chosen])
    terms = []
    for term in task.observation:
        if term.axis == "joint" and isinstance(term.scale, tuple):
            index = action if term.name == "last_action" else joints
            term = dataclasses.replace(term, scale=tuple(term.scale[i] for i in index))
        terms.append(term)
    return dataclasses.replace(task, observation=tuple(terms))


def _gather(kind: str, source: Sequence[str], target: Sequence[str]) -> tuple[int, ...]:
    """``new[j] = old[index[j]]``: the source index of each target name."""
    nmap = build_name_map(kind, source, target)  # type: ignore[arg-type]
    return tuple(range(len(source))) if nmap is None else nmap.user_to_backend_indices


__all__ = ["RUNTIME_HINT", "ConvertError", "Reorder", "in_order"]
