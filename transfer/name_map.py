"""The permutation between a backend's order and the public (user) order, as a frozen value."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from transfer._arrays import is_torch

if TYPE_CHECKING:
    import warp as wp

__all__ = ["ArticulationNameMap", "NameMapError", "build_name_map"]

Kind = Literal["joint", "body"]
Direction = Literal["backend_to_user", "user_to_backend"]


class NameMapError(ValueError):
    """A user order is not a permutation of the backend's names."""


@dataclass(frozen=True)
class ArticulationNameMap:
    """Mapping between the backend order and the public (user) order of joints or bodies.

    Index conventions (the direction is in the name):

    - ``user_to_backend_indices[u]`` is the backend index of user element ``u``; gathering
      ``backend_data[..., user_to_backend_indices]`` yields user order.
    - ``backend_to_user_indices[b]`` is the user index of backend element ``b``; gathering
      ``user_data[..., backend_to_user_indices]`` yields backend order.

    Build it with :func:`build_name_map`, which returns ``None`` for the identity.
    """

    kind: Kind
    backend_names: tuple[str, ...]
    user_names: tuple[str, ...]
    user_to_backend_indices: tuple[int, ...]
    backend_to_user_indices: tuple[int, ...]
    device: str = field(default="cpu", compare=False)

    def __post_init__(self) -> None:
        n = len(self.backend_names)
        u2b, b2u = self.user_to_backend_indices, self.backend_to_user_indices
        if not (len(self.user_names) == len(u2b) == len(b2u) == n):
            raise ValueError("ArticulationNameMap: names and index tuples must all have the same length")
        if sorted(u2b) != list(range(n)) or any(b2u[b] != u for u, b in enumerate(u2b)):
            raise ValueError("ArticulationNameMap: index tuples are not inverse permutations")

    def __len__(self) -> int:
        return len(self.backend_names)

    @classmethod
    def from_user_to_backend(
        cls,
        kind: Kind,
        backend_names: Sequence[str],
        user_to_backend: Sequence[int],
        user_names: Sequence[str] | None = None,
        device: Any = "cpu",
    ) -> ArticulationNameMap:
        """The map whose user element ``u`` is backend element ``user_to_backend[u]`` (the inverse is derived).

        ``user_names`` defaults to the backend names in that order. Unlike :func:`build_name_map`, an identity
        permutation gives a map, not ``None``.
        """
        u2b = tuple(int(b) for b in user_to_backend)
        b2u = [0] * len(u2b)
        for u, b in enumerate(u2b):
            b2u[b] = u
        backend = tuple(backend_names)
        user = tuple(user_names) if user_names is not None else tuple(backend[b] for b in u2b)
        return cls(kind, backend, user, u2b, tuple(b2u), device=str(device))

    # -- device maps -----------------------------------------------------------------------------
    @cached_property
    def user_to_backend(self) -> wp.array:
        """``wp.int32`` array on :attr:`device`: backend index of each user element."""
        return _wp_int32(self.user_to_backend_indices, self.device)

    @cached_property
    def backend_to_user(self) -> wp.array:
        """``wp.int32`` array on :attr:`device`: user index of each backend element."""
        return _wp_int32(self.backend_to_user_indices, self.device)

    def to_device(self, device: Any) -> ArticulationNameMap:
        """The same map with its device arrays on ``device`` (a Warp device or its name)."""
        return replace(self, device=str(device))

    # -- index lists ------------------------------------------------------------------------------
    def map_user_ids_to_backend(self, ids: Iterable[int]) -> list[int]:
        """Backend indices of the given user indices (same order as given)."""
        return [self.user_to_backend_indices[_check_index(i, len(self), "user")] for i in ids]

    def map_backend_ids_to_user(self, ids: Iterable[int]) -> list[int]:
        """User indices of the given backend indices (same order as given)."""
        return [self.backend_to_user_indices[_check_index(i, len(self), "backend")] for i in ids]

    # -- host arrays -------------------------------------------------------------------------------
    def to_user(self, data: Any, axis: int = -1) -> Any:
        """Permute a numpy array or torch tensor from backend order to user order along ``axis``."""
        return _take(data, self.user_to_backend_indices, axis, self)

    def to_backend(self, data: Any, axis: int = -1) -> Any:
        """Permute a numpy array or torch tensor from user order to backend order along ``axis``."""
        return _take(data, self.backend_to_user_indices, axis, self)

    def permute(self, data: Any, direction: Direction, axis: int = -1) -> Any:
        """:meth:`to_user` or :meth:`to_backend`, chosen by ``direction``."""
        if direction == "backend_to_user":
            return self.to_user(data, axis)
        if direction == "user_to_backend":
            return self.to_backend(data, axis)
        raise ValueError(f"direction must be 'backend_to_user' or 'user_to_backend', got {direction!r}")


def _wp_int32(indices: tuple[int, ...], device: str) -> wp.array:
    import warp as wp

    return wp.array(np.asarray(indices, dtype=np.int32), dtype=wp.int32, device=device)


def _check_index(i: int, n: int, side: str) -> int:
    j = int(i)
    if not -n <= j < n:
        raise IndexError(f"{side} index {i} is out of range for {n} elements")
    return j


def _take(data: Any, indices: tuple[int, ...], axis: int, nmap: ArticulationNameMap) -> Any:
    ndim = data.ndim
    if not -ndim <= axis < ndim:
        raise ValueError(f"axis {axis} is out of range for an array with {ndim} dimensions")
    if data.shape[axis] != len(indices):
        raise ValueError(
            f"axis {axis} has length {data.shape[axis]}, but the {nmap.kind} map has {len(indices)} elements"
        )
    if is_torch(data):
        import torch

        return data.index_select(axis, torch.as_tensor(indices, dtype=torch.long, device=data.device))
    return np.take(np.asarray(data), np.asarray(indices, dtype=np.intp), axis=axis)


def _canonical(name: str) -> str:
    """Spelling-insensitive key for multi-DoF names: ``ball:rot_x`` and ``ball_rot_x`` agree."""
    return name.replace(":", "_")


def _names_tuple(names: Sequence[str], what: str) -> tuple[str, ...]:
    if isinstance(names, str):
        raise TypeError(f"{what} must be a list or tuple of names, not a single string {names!r}")
    names = tuple(names)
    bad = [f"[{i}]={n!r}" for i, n in enumerate(names) if not isinstance(n, str)]
    if bad:
        raise TypeError(f"{what} must contain only strings; non-string entries: {', '.join(bad)}")
    dups = sorted(n for n, c in Counter(names).items() if c > 1)
    if dups:
        raise NameMapError(f"{what} contain duplicates: {dups}. Each name must appear exactly once.")
    return names


def build_name_map(
    kind: Kind,
    backend_names: Sequence[str],
    user_names: Sequence[str] | None,
    device: Any = "cpu",
) -> ArticulationNameMap | None:
    """Build the map between ``backend_names`` and ``user_names``, or ``None`` for the identity.

    ``user_names`` must be a permutation of ``backend_names``. A user name that differs from a backend
    name only by the multi-DoF separator (``ball_rot_x`` for ``ball:rot_x``) is matched when that match
    is unique. The resulting ``user_names`` are spelled as the user gave them.

    Raises:
        TypeError: non-string entries, or a bare string instead of a list.
        NameMapError (a ValueError): duplicates, or missing / extra names (all of them listed).
    """
    if kind not in ("joint", "body"):
        raise ValueError(f"kind must be 'joint' or 'body', got {kind!r}")
    backend = _names_tuple(backend_names, f"backend {kind} names")
    if user_names is None:
        return None
    user = _names_tuple(user_names, f"user {kind} names")
    if user == backend:
        return None

    index = {name: i for i, name in enumerate(backend)}
    by_canonical: dict[str, list[int]] = {}
    for i, name in enumerate(backend):
        by_canonical.setdefault(_canonical(name), []).append(i)
    exact = set(user) & set(index)

    u2b: list[int] = []
    extra: list[str] = []
    ambiguous: list[str] = []
    for name in user:
        if name in index:
            u2b.append(index[name])
            continue
        candidates = [i for i in by_canonical.get(_canonical(name), []) if backend[i] not in exact]
        if len(candidates) == 1:
            u2b.append(candidates[0])
        elif candidates:
            ambiguous.append(f"{name!r} (could be {[backend[i] for i in candidates]})")
        else:
            extra.append(name)
    claimed = Counter(u2b)
    twice = sorted({backend[i] for i, c in claimed.items() if c > 1})
    missing = [n for i, n in enumerate(backend) if i not in claimed]
    if extra or ambiguous or twice or missing:
        parts = []
        if missing:
            parts.append(f"missing from the user order: {missing}")
        if extra:
            parts.append(f"not in the backend: {extra}")
        if ambiguous:
            parts.append(f"ambiguous spellings: {', '.join(ambiguous)}")
        if twice:
            parts.append(f"matched twice through different spellings: {twice}")
        raise NameMapError(
            f"The user {kind} order is not a permutation of the backend's {len(backend)} {kind} names; "
            + "; ".join(parts)
            + f". Backend order: {list(backend)}."
        )
    if tuple(u2b) == tuple(range(len(backend))):
        return None
    return ArticulationNameMap.from_user_to_backend(kind, backend, u2b, user, device)
