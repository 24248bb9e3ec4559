"""Newton's own answer: how Newton (and so MuJoCo-Warp) orders every articulation of a USD file.

:func:`engine_orders` imports the file with ``newton.ModelBuilder.add_usd`` (its defaults) and reads one
``ArticulationView`` per articulation, without FREE and FIXED joints. It is the ground truth the USD-only emulation
(:func:`transfer.orders.mjwarp_order`) is tested against, and what ``transfer inspect --truth`` prints. Reach it
through ``transfer.backends.engine_orders("newton", ...)``.

Engine behaviour worth knowing when reading the results (Newton 1.8): ``root`` is the path of the prim carrying
``PhysicsArticulationRootAPI`` (the articulation label). Newton refuses an asset whose root API sits on an ancestor
of several unconnected mechanisms (PhysX builds one articulation per component there), and it makes a one-body
articulation (root = the body's path) for every rigid body outside any articulation.
"""

from __future__ import annotations

import os
from typing import Any

import newton
from newton.selection import ArticulationView

from transfer._console import quiet_warp
from transfer.backends.base import EngineOrder, EngineRefusal, asset_file, select_root
from transfer.backends.newton.importer import add_usd
from transfer.errors import MissingPackageError

__all__ = ["engine_orders"]


def _flag(value: Any) -> bool | None:
    return None if value is None else bool(value)


def engine_orders(asset: str | os.PathLike, root: str | None = None) -> list[EngineOrder]:
    """Ask Newton for the articulations of the USD file ``asset``, as MuJoCo-Warp would order them.

    Imports with ``newton.ModelBuilder().add_usd(asset)`` (defaults: depth-first joint ordering, bodies
    follow joints), ``finalize(device="cpu")``, then one ``ArticulationView`` per articulation (selected
    by index) excluding FREE and FIXED joints: ``joints`` are its ``joint_dof_names``, ``bodies`` its
    ``link_names`` and ``fixed_base`` its ``is_fixed_base`` (``False`` also for a root on a revolute,
    prismatic, ball or D6 joint to the world, which Newton keeps as DoFs); ``engine`` is ``"mjwarp"``.
    Results are sorted by root path (the articulation label); with ``root``, only that articulation.

    Raises:
        FileNotFoundError: ``asset`` is not a file.
        EngineRefusal: Newton raised while importing the asset or building its views
            (``engine == "mjwarp"``; e.g. reversed joints, a joint cycle, composition errors).
        LookupError: ``root`` is given and Newton built no articulation there.
        transfer.errors.MissingPackageError: the asset needs a package Newton's importer lacks (scipy for the
            convex hulls of mesh colliders), named with its install command.
    """
    path = asset_file(asset)
    try:
        with quiet_warp():
            builder = newton.ModelBuilder()
            add_usd(builder, path)
            model = builder.finalize(device="cpu")
            orders = []
            excluded = [newton.JointType.FREE, newton.JointType.FIXED]
            for index, label in enumerate(model.articulation_label):
                view = ArticulationView(model, [index], exclude_joint_types=excluded)
                orders.append(
                    EngineOrder(
                        "mjwarp", label, tuple(view.joint_dof_names), tuple(view.link_names), _flag(view.is_fixed_base)
                    )
                )
    except MissingPackageError:
        raise  # not the engine refusing the asset: a package to install
    except Exception as exc:
        raise EngineRefusal("mjwarp", str(exc)) from exc
    return select_root(orders, root, "mjwarp", path)
