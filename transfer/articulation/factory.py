""":func:`open_articulation`: check every ordering against the asset, then build the engine in the public order.

The steps, in this order, so that a bad input fails before an engine exists and nothing is left open:

1. the backend is looked up in :data:`transfer.backends.REGISTRY` and the file is checked;
2. the orderings are resolved from one read of the asset's topology (conventions through the USD-only emulation,
   explicit lists checked to be permutations of the backend's own names, a fixed base kept at body 0);
3. the engine is built, in the public order where it can (:attr:`~transfer.backends.base.Backend.orders_natively`);
4. the name maps between the engine's names and the public ones; if anything fails here, the engine is closed.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

from transfer.articulation.core import Articulation
from transfer.backends import backend_class, default_backend
from transfer.name_map import build_name_map
from transfer.ordering import OrderingConvention, parse_ordering
from transfer.orders import OrderingError, read_topology, resolve_ordering
from transfer.presets import OrderingOverrideWarning
from transfer.robot import Robot
from transfer.robot.assets import resolve_asset

__all__ = ["PublicOrder", "open_articulation", "resolve_public_order"]

PublicOrder = tuple[tuple[str, ...] | None, tuple[str, ...] | None]
"""``(joint names, body names)`` of the public order; ``None`` where it is the backend's own."""


def resolve_public_order(
    usd_path: str | Path | Robot,
    native: OrderingConvention,
    joint_ordering: Any = None,
    body_ordering: Any = None,
    root: str | None = None,
    *,
    native_from_usd: bool = True,
) -> PublicOrder:
    """The public joint and body names that ``joint_ordering`` / ``body_ordering`` stand for on the asset, checked
    against the order of a backend whose own order follows ``native`` (``None`` where the public order is it).

    Reads the asset's topology once, and only when an ordering needs it.

    Raises:
        OrderingError: a convention the asset cannot give (e.g. no robot schema), or a fixed-base body order that
            does not keep the root link first.
        NameMapError: an explicit list that is not a permutation of the backend's names (missing and extra named).
    """
    wanted = {"joint": parse_ordering(joint_ordering), "body": parse_ordering(body_ordering)}
    if all(w is None or w is native for w in wanted.values()):
        return None, None

    if isinstance(usd_path, Robot):  # the value's orders, each resolved once

        def resolve(convention: Any) -> Any:
            return usd_path.order(convention, root)
    else:
        topology = read_topology(usd_path, root)

        def resolve(convention: Any) -> Any:
            return resolve_ordering(topology, convention, root)

    try:
        own = resolve(native) if native_from_usd else None
    except OrderingError:
        if any(isinstance(w, OrderingConvention) for w in wanted.values()):
            raise
        own = None  # e.g. a rootless asset only Newton's infer_tree articulates: lists are checked after building
    names: dict[str, tuple[str, ...] | None] = {}
    for kind, ordering in wanted.items():
        if ordering is None or ordering is native:
            names[kind] = None
        elif isinstance(ordering, tuple):
            if own is not None:
                build_name_map(kind, own.joints if kind == "joint" else own.bodies, ordering)
            names[kind] = ordering
        else:
            order = resolve(ordering)
            names[kind] = order.joints if kind == "joint" else order.bodies
    bodies = names["body"]
    if own is not None and own.fixed_base and bodies is not None and bodies and bodies[0] != own.bodies[0]:
        raise OrderingError(
            f"The body order puts {bodies[0]!r} first, but {own.root} has a fixed base whose root link "
            f"{own.bodies[0]!r} must stay at public index 0: Jacobians and mass matrices of a fixed-base "
            "articulation have no row for the root and rely on it coming first. Keep the root first (floating "
            "bases may move it)."
        )
    return names["joint"], bodies


def open_articulation(
    usd_path: str | Path | Robot,
    backend: str | None = None,
    root: str | None = None,
    num_envs: int = 1,
    device: str = "cpu",
    joint_ordering: Any = None,
    body_ordering: Any = None,
    **backend_options: Any,
) -> Articulation:
    """Open ``usd_path`` on ``backend`` (a name in :data:`transfer.backends.REGISTRY`; ``None``: the default, the
    first registered) in ``num_envs`` environments, public order.

    ``joint_ordering`` / ``body_ordering`` accept anything :func:`transfer.parse_ordering` accepts; conventions are
    resolved from the USD asset (a convention equal to the backend's own order becomes ``None``). Setting only
    one of the two warns (:class:`~transfer.OrderingOverrideWarning`). Every ordering is checked before the engine
    is built; an engine built is closed again if a later step fails. Extra keyword arguments go to the backend.
    """
    cls = backend_class(default_backend() if backend is None else backend)
    robot = usd_path if isinstance(usd_path, Robot) else None
    given = Path(usd_path)
    if not given.is_file():
        raise FileNotFoundError(f"USD file not found: {given}")
    wanted = (parse_ordering(joint_ordering), parse_ordering(body_ordering))
    own_file = not cls.native_from_usd and not any(isinstance(w, OrderingConvention) for w in wanted)
    if own_file:  # an engine on the robot's own file, and no convention to read from a USD: no conversion
        path = given if robot is None else robot.given
    else:  # an MJCF/URDF file: its converted USD (transfer.robot.assets); a Robot is one already
        path = robot if robot is not None else resolve_asset(given)
    if (joint_ordering is None) != (body_ordering is None):
        have, lack = (
            ("joint_ordering", "body_ordering") if body_ordering is None else ("body_ordering", "joint_ordering")
        )
        warnings.warn(
            f"Only {have} is set ({lack} is None): joint and body vectors will follow different orders. Set "
            f"{lack} too (transfer.apply_articulation_ordering_preset sets both) unless that is what you mean.",
            OrderingOverrideWarning,
            stacklevel=2,
        )
    if own_file:
        joints, bodies = (w if isinstance(w, tuple) else None for w in wanted)  # checked by the engine's names
    else:
        joints, bodies = resolve_public_order(
            path, cls.native_convention, joint_ordering, body_ordering, root, native_from_usd=cls.native_from_usd
        )
    options = dict(backend_options)
    if cls.orders_natively:
        options.update(joint_order=joints, body_order=bodies)
    if not cls.native_from_usd and not own_file:  # the robot's own file, not the one the cache converted it from first
        path = robot.given if robot is not None else given
    engine = cls(path, num_envs=num_envs, device=device, root=root, **options)
    try:
        jmap = build_name_map("joint", engine.joint_names, joints, device=engine.device)
        bmap = build_name_map("body", engine.body_names, bodies, device=engine.device)
        return Articulation(engine, jmap, bmap)
    except BaseException:
        engine.close()
        raise
