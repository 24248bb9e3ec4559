"""The ordering conventions, one registry: each convention is declared once, in its own module, and everything that
lists, resolves or explains conventions (resolution, ``inspect``, ``--source``, presets, messages) reads them here.

A :class:`Convention` says how its order is found (from the robot's USD graph, or from the robot's own source file
a USD does not keep), whether the engine whose order it is holds the robot's base, and one line on what it is. The
built-in four are declared in :mod:`transfer.orders.physx`, :mod:`~transfer.orders.mjwarp`,
:mod:`~transfer.orders.robot_schema` and :mod:`~transfer.orders.mujoco`; a new one is one module calling
:func:`register`::

    from transfer.orders.conventions import Convention, register

    register(Convention("reversed", "PhysX's order backwards (an example)", order=my_order_of_a_graph))

after which ``parse_ordering("reversed")``, ``resolve_ordering(asset, "reversed")``, ``transfer inspect`` and
``--source reversed`` know it.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from transfer.ordering import OrderingConvention

__all__ = [
    "BUILTIN",
    "MEMBERS",
    "PLUGINS",
    "Convention",
    "conventions",
    "every_member",
    "get",
    "load",
    "register",
]

BUILTIN = ("transfer.orders.physx", "transfer.orders.mjwarp", "transfer.orders.robot_schema", "transfer.orders.mujoco")
"""The modules that declare the built-in conventions (each a ``CONVENTION``), in the order they are listed."""


@dataclass(frozen=True)
class Convention:
    """One ordering convention: ``name`` (what ``--source`` takes), ``summary`` (one line), and how its order is
    found."""

    name: str
    summary: str
    order: Callable[[Any], Any] | None = None
    """The order of an articulation graph (:class:`~transfer.orders.graph.ArticulationGraph` ->
    :class:`~transfer.orders.graph.ResolvedOrder`, or ``None`` where the asset does not author it: :attr:`absent`);
    ``None`` for a convention the USD does not keep."""
    absent: str = ""
    """What an asset lacks when :attr:`order` gives ``None`` ("authors no robot schema (...)")."""
    holds_base: Callable[[Any], bool] | None = None
    """Whether the engine whose order this is holds the graph's root link to the world; ``None``: no engine's."""
    source_file: str | None = None
    """``"module:function"`` giving the joint names in this order from the robot's own file (an MJCF or URDF),
    for a convention the USD does not keep (``mujoco``); ``None`` otherwise."""
    bodies_from_source: Callable[[Any], Any] | None = None
    """The body names in this order from the robot's own file (``None`` where the file does not say them)."""
    no_order: str = ""
    """What the order is, for a convention read from the source file: said when it is asked of a USD alone ("the
    joint order MuJoCo gives the robot's MJCF (or URDF)")."""

    @property
    def from_usd(self) -> bool:
        """Whether the robot's USD alone gives this order (``inspect`` shows it as a column)."""
        return self.order is not None

    def names_from_source(self, path: Any) -> tuple[str, ...]:
        """The joint names in this order, read from the robot's own file ``path`` (:attr:`source_file`)."""
        if self.source_file is None:
            raise ValueError(f"the {self.name} order is read from the USD, not from a source file")
        module, function = self.source_file.split(":")
        return tuple(getattr(importlib.import_module(module), function)(path))


_REGISTRY: dict[str, Convention] = {}
_LOADED = False


def register(convention: Convention) -> OrderingConvention:
    """Add ``convention`` (its name: lower case letters, digits and ``_``; a name taken is refused unless it is the
    same declaration again); returns the :class:`~transfer.ordering.OrderingConvention` of its name."""
    if not isinstance(convention, Convention):
        raise ValueError(f"register: expected a Convention, got {type(convention).__name__}")
    if not re.fullmatch(r"[a-z][a-z0-9_]*", convention.name):
        raise ValueError(f"convention name {convention.name!r}: lower case letters, digits and _, a letter first")
    if convention.order is None and convention.source_file is None:
        raise ValueError(f"convention {convention.name!r}: give its order (from a graph) or its source_file reader")
    load()  # the built-ins first: a plug-in may not take their names
    known = _REGISTRY.get(convention.name)
    if known is not None and known != convention:
        raise ValueError(f"convention {convention.name!r} is registered already ({known.summary})")
    _REGISTRY[convention.name] = convention
    return OrderingConvention._add(convention.name)


PLUGINS = "transfer.conventions"
"""The entry point group a package declares its conventions under (each entry a :class:`Convention`, or a module
holding one as ``CONVENTION``): ``[project.entry-points."transfer.conventions"] mine = "my_package.order:CONVENTION"``."""


def load() -> None:
    """Register the built-in conventions and the installed plug-ins, once (every listing asks it first)."""
    global _LOADED
    if _LOADED:
        return
    _LOADED = True
    for module in BUILTIN:
        register(importlib.import_module(module).CONVENTION)
    from importlib.metadata import entry_points

    for entry in entry_points(group=PLUGINS):
        try:
            found = entry.load()
            register(getattr(found, "CONVENTION", found))
        except Exception as exc:  # noqa: BLE001 - a broken plug-in is one line naming it
            raise ValueError(
                f"the convention plug-in {entry.name} ({entry.value}) cannot be registered: {type(exc).__name__}: {exc}"
            ) from None


def conventions() -> tuple[Convention, ...]:
    """Every registered convention, the built-in four first, then in the order registered."""
    load()
    order = {name: i for i, name in enumerate(OrderingConvention._names)}
    return tuple(sorted(_REGISTRY.values(), key=lambda c: order.get(c.name, len(order))))


def get(name: Any) -> Convention:
    """The convention ``name`` (a :class:`~transfer.ordering.OrderingConvention` or its name); ``ValueError``
    listing the registered ones otherwise."""
    load()
    found = _REGISTRY.get(str(name))
    if found is None:
        raise ValueError(f"{name!r} is not an ordering convention; known: {', '.join(_REGISTRY)}")
    return found


MEMBERS = "physx"
"""The convention whose order is :func:`every_member`'s: PhysX's lists every joint and body of any articulation, from
the root link PhysX elects (another may refuse a robot, or leave out what it does not simulate)."""


def every_member(graph: Any) -> Any:
    """Every joint and body of ``graph``, in one fixed order with its root link (:data:`MEMBERS`): what a check names
    joints and bodies against when any order will do."""
    return get(MEMBERS).order(graph)
