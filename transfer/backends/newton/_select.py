"""Model metadata and asset selection for the views: which joints and bodies form "the asset" in each world.

An asset is found by a pattern matched against articulation labels (the prim carrying the root API), or, when
none matches, against body prim paths and their ancestors (rootless mechanisms, or an articulated asset named by
its top prim). It must appear once in every world (or only in the global world). For an articulation the asset
holds its tree joints ``[articulation_start, articulation_end)`` and the loop joints Newton places right after
them (``joint_articulation == -1``, both sides inside the asset); a rootless asset holds every joint between its
bodies (and the world).
"""

from __future__ import annotations

import re
import weakref
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import newton
import numpy as np

from transfer.backends.newton._layout import Pattern, compile_matcher

__all__ = ["Asset", "ModelInfo", "check_same_names", "model_info", "select_asset"]


@dataclass(frozen=True, eq=False)
class ModelInfo:
    joint_label: list[str]
    joint_world: np.ndarray
    joint_type: np.ndarray
    joint_parent: np.ndarray
    joint_child: np.ndarray
    joint_q_start: np.ndarray  # joint_count + 1
    joint_qd_start: np.ndarray  # joint_count + 1
    joint_articulation: np.ndarray
    articulation_start: np.ndarray  # articulation_count + 1 (sentinel)
    articulation_end: np.ndarray
    articulation_label: list[str]
    articulation_world: np.ndarray
    body_label: list[str]
    body_world: np.ndarray
    body_shapes: dict[int, list[int]]
    shape_label: list[str]


_INFO: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _np(a: Any, dtype: Any = np.int64) -> np.ndarray:
    return np.zeros(0, dtype) if a is None else np.asarray(a.numpy(), dtype=dtype)


def model_info(model: newton.Model) -> ModelInfo:
    try:
        info = _INFO.get(model)
    except TypeError:
        info = None
    if info is not None:
        return info
    info = ModelInfo(
        joint_label=list(model.joint_label),
        joint_world=_np(model.joint_world),
        joint_type=_np(model.joint_type),
        joint_parent=_np(model.joint_parent),
        joint_child=_np(model.joint_child),
        joint_q_start=_np(model.joint_q_start),
        joint_qd_start=_np(model.joint_qd_start),
        joint_articulation=_np(model.joint_articulation),
        articulation_start=_np(model.articulation_start),
        articulation_end=_np(model.articulation_end),
        articulation_label=list(model.articulation_label),
        articulation_world=_np(model.articulation_world),
        body_label=list(model.body_label),
        body_world=_np(model.body_world),
        body_shapes={int(b): sorted(int(s) for s in shapes) for b, shapes in dict(model.body_shapes).items()},
        shape_label=list(model.shape_label),
    )
    try:
        _INFO[model] = info
    except TypeError:
        pass
    return info


@dataclass(frozen=True, eq=False)
class Asset:
    """One asset per view row (world): its tree joints, loop joints and bodies, all in model order."""

    pattern: str
    worlds: tuple[int, ...]
    articulations: tuple[int, ...] | None
    tree_joints: tuple[tuple[int, ...], ...]
    loop_joints: tuple[tuple[int, ...], ...]
    bodies: tuple[tuple[int, ...], ...]


def _describe(pattern: Pattern) -> str:
    if isinstance(pattern, re.Pattern):
        return f"re.compile({pattern.pattern!r})"
    return repr(pattern)


def _group_by_world(items: Iterable[int], world_of: np.ndarray) -> dict[int, list[int]]:
    groups: dict[int, list[int]] = {}
    for i in items:
        groups.setdefault(int(world_of[i]), []).append(int(i))
    return groups


def _check_worlds(groups: dict[int, list[int]], model: newton.Model, what: str, pattern: str) -> tuple[int, ...]:
    worlds = sorted(groups)
    if -1 in groups and len(worlds) > 1:
        raise ValueError(
            f"{what} {pattern} matches entities in the global world (-1) and in worlds {worlds[1:]}; select "
            "either the global copy or the per-world copies (make the pattern more specific)."
        )
    if worlds != [-1] and worlds != list(range(model.world_count)):
        missing = sorted(set(range(model.world_count)) - set(worlds))
        raise ValueError(
            f"{what} {pattern} matches nothing in worlds {missing[:8]} of {model.world_count}; a view needs the "
            "asset once in every world. Check the pattern, or build every world from the same sub-builder."
        )
    return tuple(worlds)


def select_asset(model: newton.Model, pattern: Pattern, what: str) -> Asset:
    """Find the asset matching ``pattern`` once per world (articulation label first, then body prim paths)."""
    info = model_info(model)
    desc = _describe(pattern)
    matcher = compile_matcher(pattern, f"{what}(pattern=...)")
    if matcher is None:
        raise TypeError(f"{what}: pattern is required (the asset prim path, e.g. '/anymal' or '/anymal/base')")
    arts = [a for a, label in enumerate(info.articulation_label) if matcher(label)]
    if not arts:
        # Rootless assets (and assets named by their top prim): match bodies by label or any ancestor path.
        def under(label: str) -> bool:
            parts = label.split("/")
            return any(matcher("/".join(parts[:k])) for k in range(2, len(parts) + 1)) or matcher(label)

        bodies = [b for b, label in enumerate(info.body_label) if under(label)]
        if not bodies:
            known = sorted(set(info.articulation_label))[:8]
            raise KeyError(
                f"{what}: pattern {desc} matches no articulation label and no body prim path. Articulations in "
                f"the model: {known}; bodies start with {sorted({'/'.join(lb.split('/')[:2]) for lb in info.body_label})[:8]}."
            )
        owner = _body_articulations(info)
        owned = {owner.get(b, -1) for b in bodies}
        if owned != {-1}:
            if -1 in owned:
                loose = [info.body_label[b] for b in bodies if owner.get(b, -1) == -1][:4]
                raise ValueError(
                    f"{what}: pattern {desc} selects articulated bodies and bodies outside any articulation "
                    f"({loose}); select one asset (an articulation, or one rootless mechanism)."
                )
            arts = sorted(owned)
        else:
            groups = _group_by_world(bodies, info.body_world)
            worlds = _check_worlds(groups, model, f"{what}: pattern", desc)
            body_sets = [tuple(groups[w]) for w in worlds]
            joints_per_world = []
            for w, bset in zip(worlds, body_sets, strict=True):
                members = set(bset)
                js = [
                    j
                    for j in range(len(info.joint_label))
                    if int(info.joint_world[j]) == w
                    and (int(info.joint_parent[j]) in members or int(info.joint_child[j]) in members)
                    and int(info.joint_parent[j]) in members | {-1}
                    and int(info.joint_child[j]) in members | {-1}
                ]
                joints_per_world.append(tuple(js))
            return Asset(desc, worlds, None, tuple(joints_per_world), tuple(() for _ in worlds), tuple(body_sets))
    groups = _group_by_world(arts, info.articulation_world)
    worlds = _check_worlds(groups, model, f"{what}: pattern", desc)
    many = {w: g for w, g in groups.items() if len(g) > 1}
    if many:
        w, g = next(iter(many.items()))
        raise ValueError(
            f"{what}: pattern {desc} matches {len(g)} articulations in world {w} "
            f"({[info.articulation_label[a] for a in g][:4]}); a view selects one asset per world. Make the "
            "pattern match one articulation label."
        )
    selected = tuple(groups[w][0] for w in worlds)
    trees, loops, bodies_out = [], [], []
    for a in selected:
        start, end, nxt = (
            int(info.articulation_start[a]),
            int(info.articulation_end[a]),
            int(info.articulation_start[a + 1]),
        )
        tree = tuple(range(start, end))
        members = sorted({int(info.joint_child[j]) for j in tree} | {int(info.joint_parent[j]) for j in tree} - {-1})
        mset = set(members)
        loop = tuple(
            j
            for j in range(end, nxt)
            if int(info.joint_articulation[j]) == -1
            and {int(info.joint_parent[j]), int(info.joint_child[j])} - {-1} <= mset
        )
        trees.append(tree)
        loops.append(loop)
        bodies_out.append(tuple(members))
    return Asset(desc, worlds, selected, tuple(trees), tuple(loops), tuple(bodies_out))


def _body_articulations(info: ModelInfo) -> dict[int, int]:
    owner: dict[int, int] = {}
    for j, a in enumerate(info.joint_articulation):
        if a >= 0:
            for b in (int(info.joint_child[j]), int(info.joint_parent[j])):
                if b >= 0:
                    owner[b] = int(a)
    return owner


def check_same_names(names_per_world: Sequence[Sequence[str]], what: str) -> None:
    first = list(names_per_world[0])
    for w, names in enumerate(names_per_world[1:], start=1):
        if list(names) != first:
            raise ValueError(
                f"{what}: world {w} holds {list(names)[:6]}..., world 0 holds {first[:6]}...; every world must hold "
                "the same asset in the same order (build the worlds with ModelBuilder.replicate())."
            )
