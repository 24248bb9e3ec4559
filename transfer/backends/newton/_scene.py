"""What the Newton backend takes from a scene description before the import: self-collisions and the base (fixed or
floating), read from the asset where the scene leaves them open; and how it imports mesh colliders (whole convex
hulls, :func:`_with_full_hulls`)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import warp as wp

from transfer.backends.scene import SceneDescription
from transfer.orders import holds_base
from transfer.robot.usd import file_stage

FULL_HULL: int = -1
"""``mesh_maxhullvert`` the backend imports with: no limit on the vertices of a mesh collider's convex hull, as MuJoCo
compiles an MJCF mesh (its ``maxhullvert`` default, -1) and as Newton's ``add_mjcf`` would need to be told. Newton
1.8's own default (``Mesh.MAX_HULL_VERTICES`` = 64) stops Qhull after 64 vertices (option ``TA60``): a *partial*
hull, not a simplified one. On legged_gym's H1-2 (2006-vertex foot meshes, 591 hull vertices) the 64-vertex hull
kept 5 sole vertices and 48 cm2 of the 199 cm2 sole, the outer half of the left foot and the inner half of the right
one, its underside up to 23 mm above the real sole elsewhere: the robot drifted sideways at 0.74 m/s and fell on
Newton where PhysX and MuJoCo walk (issue #42). -1 is the one value both engines read as "no limit" (Newton: any
value <= 0; MuJoCo: -1, while 0 makes its Qhull call fail)."""


def _with_full_hulls(import_options: Mapping[str, Any] | None) -> dict:
    """``import_options`` with ``mesh_maxhullvert`` = :data:`FULL_HULL` where not given (an authored
    ``newton:maxHullVertices`` on a shape still wins, as Newton reads it)."""
    import_options = dict(import_options or {})
    import_options.setdefault("mesh_maxhullvert", FULL_HULL)
    return import_options


def _with_self_collisions(import_options: Mapping[str, Any] | None, world: SceneDescription, usd_path: Any) -> dict:
    """``import_options`` with ``enable_self_collisions`` filled in where not given: the scene's setting, else what
    the asset authors (:func:`_authored_self_collisions`)."""
    import_options = dict(import_options or {})
    if "enable_self_collisions" not in import_options:
        collide = world.self_collisions
        import_options["enable_self_collisions"] = _authored_self_collisions(usd_path) if collide is None else collide
    return import_options


def _with_base(options: dict[str, Any], world: SceneDescription, usd_path: Any, root: str | None) -> bool:
    """Whether the root link will be held to the world (a FIXED root joint), after setting in ``options``:

    - ``floating`` (``ModelBuilder.add_usd``'s: it replaces the root joint to the world, or adds one, FREE or
      FIXED) where the scene asks for a base Newton would not build from the asset (:func:`transfer.orders.holds_base`
      with ``mjwarp``: Newton's own choice, emulated from the USD), unless the caller set ``floating`` or
      ``base_joint``;
    - ``xform`` lifting the whole asset by the scene's spawn lift when the base is fixed: a FIXED root joint has no
      pose to set, so the asset moves, its anchor with it (PhysX moves the environment prim the same way).
    """
    try:
        builds = holds_base(os.fspath(usd_path), "mjwarp", root)
    except ValueError:  # OrderingError: e.g. a rootless asset, articulated by infer_tree on import
        builds = None
    fixed = builds if world.fixed_base is None else world.fixed_base
    if (
        world.fixed_base is not None
        and builds is not world.fixed_base
        and not {"floating", "base_joint"} & set(options)
    ):
        options["floating"] = not world.fixed_base
    if options.get("floating") is not None:
        fixed = not options["floating"]
    if fixed and world.spawn_lift and "xform" not in options:
        options["xform"] = wp.transform((0.0, 0.0, world.spawn_lift), wp.quat_identity())
    return bool(fixed)


def _authored_self_collisions(usd_path: Any) -> bool:
    """Whether the asset's articulation root lets its links collide (``physxArticulation:enabledSelfCollisions``,
    what PhysX reads; Newton 1.8's importer does not read it and takes ``enable_self_collisions``, default on)."""
    from pxr import UsdPhysics

    stage = file_stage(os.fspath(usd_path))  # the stage the orders were read from (read only)
    for prim in stage.Traverse():
        if prim.HasAPI(UsdPhysics.ArticulationRootAPI):
            value = prim.GetAttribute("physxArticulation:enabledSelfCollisions").Get()
            if value is not None:
                return bool(value)
    return True
