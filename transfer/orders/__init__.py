"""Resolve articulation orders from USD alone, by the registered conventions (:mod:`transfer.orders.conventions`:
``physx``, ``mjwarp``, ``robot_schema``; ``mujoco`` is read from the robot's source file)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from transfer.ordering import OrderingConvention, parse_ordering
from transfer.orders.conventions import Convention, conventions, every_member
from transfer.orders.conventions import get as get_convention
from transfer.orders.graph import (
    ArticulationGraph,
    Body,
    Joint,
    JointType,
    OrderingError,
    ResolvedOrder,
    RobotSchema,
    Topology,
    graph_from_edges,
)
from transfer.orders.mjwarp import MjwarpRefusal, mjwarp_order
from transfer.orders.physx import physx_order
from transfer.orders.robot_schema import robot_schema_order

__all__ = [
    "ArticulationGraph",
    "Body",
    "Convention",
    "Joint",
    "JointType",
    "MjwarpRefusal",
    "OrderingError",
    "ResolvedOrder",
    "RobotSchema",
    "Topology",
    "conventions",
    "every_member",
    "get_convention",
    "graph_from_edges",
    "holds_base",
    "mjwarp_order",
    "physx_order",
    "read_topology",
    "resolve_ordering",
    "resolve_orderings",
    "robot_schema_order",
]


def read_topology(asset: Any, root: str | None = None) -> Topology:
    """Read every articulation of a USD file or ``Usd.Stage`` (or only the one at ``root``) as graphs.

    A file's read is cached until one of its layers changes (:func:`transfer.robot.usd.read_file`).
    """
    from transfer.robot.usd import read_topology as _read

    return _read(asset, root)


def _one_graph(asset: Any, root: str | None) -> ArticulationGraph:
    if isinstance(asset, ArticulationGraph):
        if root is not None and root != asset.root:
            raise OrderingError(f"The given graph is rooted at {asset.root}, not {root}.")
        return asset
    topo = asset if isinstance(asset, Topology) else read_topology(asset, root)
    graphs = [g for g in topo if root is None or g.root == root]
    if len(graphs) != 1:
        roots = [g.root for g in topo]
        raise OrderingError(
            f"{topo.source or 'The asset'} holds {len(roots)} articulations {roots}; a run takes one robot: give a "
            "USD holding only the one you mean (in Python, root= picks it; transfer inspect --root PATH shows each)."
            if graphs
            else f"No articulation at {root} in {topo.source or 'the asset'}; articulation roots found: {roots}."
        )
    return graphs[0]


def resolve_ordering(asset: Any, convention: Any, root: str | None = None) -> ResolvedOrder:
    """The joint (DoF) and body order of one articulation under ``convention``.

    ``asset`` is a USD path, a ``Usd.Stage``, a :class:`Topology` or an :class:`ArticulationGraph`;
    ``convention`` anything :func:`transfer.parse_ordering` accepts. An explicit name list is validated
    against the articulation's DoF names (or its body names) in PhysX spelling and returned in that field.
    Raises :class:`OrderingError` (or :class:`MjwarpRefusal`) with the reason and the fix.

    A USD path is read once and cached until the file (or a layer it uses) changes, so asking for another
    convention of the same file does not read it again; :func:`resolve_orderings` asks for several at once.
    """
    parsed = _parse(convention)
    return _resolve(_one_graph(asset, root), parsed)


def resolve_orderings(asset: Any, conventions: Iterable[Any], root: str | None = None) -> dict[Any, ResolvedOrder]:
    """Several conventions of one articulation from a single read of ``asset``.

    ``conventions`` is an iterable of conventions, each anything :func:`resolve_ordering` accepts (an explicit
    name list is one item: ``[("hip", "knee"), "physx"]``). Returns ``{convention: order}`` keyed by the
    conventions as given (lists turned into tuples), in the order given:
    ``resolve_orderings(path, ("physx", "mjwarp"))["mjwarp"]``. Raises as :func:`resolve_ordering` does, for
    the first convention that cannot be resolved; call :func:`resolve_ordering` per convention to keep the
    others (the file is still read once).
    """
    if isinstance(conventions, (str, OrderingConvention)):
        conventions = (conventions,)
    items = [(tuple(c) if isinstance(c, list) else c, _parse(c)) for c in conventions]
    g = _one_graph(asset, root)
    return {key: _resolve(g, parsed) for key, parsed in items}


def holds_base(asset: Any, convention: Any, root: str | None = None) -> bool:
    """Whether the engine of ``convention`` (``physx``: PhysX, ``mjwarp``: Newton, ``mujoco``: MuJoCo) holds the
    articulation's root link to the world: a fixed base. ``asset`` as :func:`resolve_ordering` takes it.

    Newton: its articulation's first joint is a fixed joint from the world (``ResolvedOrder.fixed_base``). PhysX:
    a fixed-base articulation, or a floating one whose root link an enabled fixed joint from the world holds as a
    constraint (:func:`~transfer.orders.physx.physx_holds_base`), so that a robot held in place on both engines
    counts as fixed on both (docs/import.md, "The base"). MuJoCo on the MJCF: a root with a free joint floats, one
    without is welded to the world. Raises :class:`OrderingError` as :func:`resolve_ordering`, and
    :class:`ValueError` for a convention that is no engine's (:attr:`Convention.holds_base`).
    """
    conv = get_convention(_parse(convention))
    if conv.holds_base is None:
        engines = ", ".join(c.name for c in conventions() if c.holds_base is not None)
        raise ValueError(f"holds_base: {convention!r} is no engine's convention; expected one of {engines}")
    return conv.holds_base(_one_graph(asset, root))


def _parse(convention: Any):
    parsed = parse_ordering(convention)
    if parsed is None:
        raise ValueError("resolve_ordering needs a convention or a name list; None means 'the backend's own order'.")
    return parsed


def _resolve(g: ArticulationGraph, parsed) -> ResolvedOrder:
    if not isinstance(parsed, OrderingConvention):
        return _explicit(g, parsed)
    conv = get_convention(parsed)
    if conv.order is None:
        raise OrderingError(
            f"The {conv.name} order is {conv.no_order}, which a USD file ({g.source or g.root}) does not keep: give "
            "the robot's own file (--asset robot.xml), or an explicit list of names."
        )
    order = conv.order(g)
    if order is None:
        engines = ", ".join(c.name for c in conventions() if c.holds_base is not None and c.from_usd)
        raise OrderingError(f"The asset holding {g.root} {conv.absent}. Use {engines} or an explicit list instead.")
    return order


def _explicit(g: ArticulationGraph, names: tuple[str, ...]) -> ResolvedOrder:
    from transfer.name_map import build_name_map

    ref = every_member(g)
    errors = {}
    for kind, reference in (("joint", ref.joints), ("body", ref.bodies)):
        try:
            build_name_map(kind, reference, names)
        except ValueError as exc:
            errors[kind] = (len(set(names) & set(reference)), exc)
            continue
        fields = {"joints": names, "bodies": ()} if kind == "joint" else {"joints": (), "bodies": names}
        return ResolvedOrder("explicit", g.root, fixed_base=ref.fixed_base, root_body=ref.root_body, **fields)
    # Report against the kind the list resembles most (joints on a tie).
    kind = max(errors, key=lambda k: errors[k][0])
    other = "body" if kind == "joint" else "joint"
    raise OrderingError(
        f"The explicit order is not a permutation of the {kind} names of {g.root} (nor of its {other} names): "
        f"{errors[kind][1]}"
    )
