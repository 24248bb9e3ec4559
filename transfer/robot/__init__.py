"""The robot as read from its asset, once: :class:`Robot`.

A run names its robot once (``--asset``, a task's or a checkpoint's ``asset``); the input layer turns that into a
:class:`Robot` (:meth:`Robot.of`: located, an MJCF/URDF converted to the USD the engines open) and hands the value
down: :class:`transfer.env.PolicyEnv`, :func:`transfer.open_articulation` and the spawn rules read the
topology, orders, base and collision geometry from it, and each is read from the file at most once per value
(the composed stage itself is :func:`transfer.robot.usd.read_file`'s, shared by every value of the same file and
checked against the file's layers).

A :class:`Robot` is a path too (:func:`os.fspath` gives the USD), so every function that takes a robot file takes
one.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from transfer.orders import holds_base, read_topology, resolve_ordering
from transfer.orders.conventions import MEMBERS
from transfer.robot.assets import AssetError, locate_asset, resolve_asset
from transfer.robot.usd import collider_corners, collider_points, spawn_geometry, up_axis_conflict
from transfer.robot.usd_bodies import authored_mass
from transfer.robot.usd_files import url_references

__all__ = ["Robot"]


@dataclass(frozen=True, eq=False)
class Robot(os.PathLike):
    """One robot: the USD the engines open and the MJCF/URDF it was converted from (``None`` for a USD given)."""

    usd: Path
    file: Path | None = None
    """The robot's own MJCF/URDF (an engine that steps the robot's own file, MuJoCo, opens it)."""
    _memo: dict[Any, Any] = field(default_factory=dict, repr=False)
    """What each read returned, by what it was asked (an order, the base, the spawn geometry)."""

    @classmethod
    def of(cls, asset: Any) -> Robot:
        """The robot ``asset`` names: a :class:`Robot` as it is; a path or ``<package>:<name>`` located, an MJCF/URDF
        converted (:func:`transfer.robot.assets.resolve_asset`). Raises ``FileNotFoundError`` and
        :class:`~transfer.robot.assets.AssetError` naming the file."""
        if isinstance(asset, Robot):
            return asset

        located = locate_asset(asset)
        usd = resolve_asset(located)
        refuse_urls(usd)
        return cls(usd, None if usd == located else located)

    def __fspath__(self) -> str:
        return os.fspath(self.usd)

    def __str__(self) -> str:
        return str(self.usd)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Robot) and (self.usd, self.file) == (other.usd, other.file)

    def __hash__(self) -> int:
        return hash((self.usd, self.file))

    @property
    def given(self) -> Path:
        """The robot file as the user gave it: the MJCF/URDF source, else the USD."""
        return self.file or self.usd

    @cached_property
    def topology(self) -> Any:
        """Every articulation of the stage (:class:`~transfer.orders.graph.Topology`)."""
        return read_topology(self.usd)

    def order(self, convention: Any, root: str | None = None) -> Any:
        """The joint and body order under ``convention`` (:func:`transfer.resolve_ordering`), resolved once."""
        key = (tuple(convention) if isinstance(convention, list) else convention, root)
        if key not in self._memo:
            self._memo[key] = resolve_ordering(self.topology, convention, root)
        return self._memo[key]

    def members(self, root: str | None = None) -> Any:
        """Every joint and body of the robot and its root link, in one fixed order (the order of
        :data:`transfer.orders.conventions.MEMBERS`): what a check names joints against when any order will do (the
        spawn rules, the perturbations, verify's names)."""
        return self.order(MEMBERS, root)

    def holds_base(self, convention: Any) -> bool:
        """Whether the engine of ``convention`` holds the root link to the world (:func:`transfer.orders.holds_base`)."""
        key = ("holds_base", convention)
        if key not in self._memo:
            self._memo[key] = holds_base(self.topology, convention)
        return self._memo[key]

    def spawn_geometry(self, root_body: str) -> tuple[float, float | None]:
        """``(root_z, lowest_z)`` at the authored pose (:func:`transfer.robot.usd.spawn_geometry`)."""
        key = ("spawn", root_body)
        if key not in self._memo:
            self._memo[key] = spawn_geometry(self.usd, root_body)
        return self._memo[key]

    def base_mass(self, root_body: str) -> float | None:
        """The mass the asset authors on ``root_body`` (kg; ``None``: the engines compute it)."""
        key = ("mass", root_body)
        if key not in self._memo:
            self._memo[key] = authored_mass(self.usd, root_body)
        return self._memo[key]

    @cached_property
    def up_axis_warning(self) -> str | None:
        """A root layer without ``upAxis`` over a layer that says another (:func:`transfer.robot.usd.up_axis_conflict`)."""
        return up_axis_conflict(self.usd)

    @cached_property
    def collider_corners(self) -> dict[str, list[tuple[float, float, float]]]:
        """Each body's collision box corners in its frame (:func:`transfer.robot.usd.collider_corners`)."""
        return collider_corners(self.usd)

    @cached_property
    def collider_points(self) -> dict[str, list[tuple[float, float, float, float]]]:
        """Each body's colliders as points swept by a radius (:func:`transfer.robot.usd.collider_points`)."""
        return collider_points(self.usd, self.collider_corners)


def refuse_urls(usd: Path) -> None:
    """Refuse a robot whose USD names a layer by URL (an engine's resolver could fetch it; transfer fetches nothing)."""
    urls = url_references(usd)
    if urls:
        layer, url = urls[0]
        raise AssetError(
            f"{layer}: names {url!r} (a layer, value clip or asset) by a URL; transfer fetches nothing "
            "(nor lets an engine fetch it): download it beside the robot and name it by a relative path"
        )
