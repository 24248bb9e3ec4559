"""Import a USD asset into a Newton ``ModelBuilder``, optionally inferring articulation trees for rootless mechanisms.

Newton 1.8 imports rigid bodies that no ``PhysicsArticulationRootAPI`` covers as free bodies joined by plain
joints in authored order: ``ArticulationView`` cannot select them, ``SolverMuJoCo`` refuses them and ``eval_fk``
ignores them. :func:`import_usd` with ``rootless_articulation_policy="infer_tree"`` fixes that without touching
the user's file:

1. The stage is read with pxr (usd-core's UsdPhysics parse, the one both engines start from) into the engine-free
   graph values of :mod:`transfer.orders`; bodies of existing articulations are left alone.
2. Each connected rootless component gets a deterministic spanning tree: the root is the world when a joint
   anchors the component (the anchor with the smallest prim path), else the first body by prim path from which
   every body is reachable along authored joint directions (``physics:body0`` parent, ``physics:body1`` child;
   Newton refuses reversed joints). Bodies are reached breadth-first, each body's joints in prim-path order;
   every other joint of the component is a loop joint.
3. The edits are authored in a fresh anonymous session layer over the asset's root layer: the root API on the
   root body (floating) or on the anchor joint (fixed), ``physics:excludeFromArticulation = true`` on loop
   joints. Then ``ModelBuilder.add_usd`` imports that stage. Newton emits each tree's joints contiguously
   (depth-first), the loop joints right after them; ``articulation_end`` covers only the tree block, so
   ``ArticulationView`` and ``SolverMuJoCo`` accept the result and maximal-coordinate solvers still see the loops.

The :class:`ImportSummary` reports the inferred roots, tree and loop joints, the joints Newton added (the FREE
joint of a floating root) and every joint coordinate whose index moved relative to ``policy="none"``.
"""

from __future__ import annotations

import os
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from transfer.backends._mujoco_log import install as _install_mujoco_log
from transfer.errors import MissingPackageError
from transfer.orders.graph import Body, Joint, JointType, OrderingError
from transfer.robot.usd import compose, file_stage, read_physics

__all__ = [
    "OPTIONAL_PACKAGES",
    "CoordinateMove",
    "ImportSummary",
    "InferredTree",
    "RootlessPolicy",
    "add_usd",
    "import_usd",
    "infer_trees",
]

_install_mujoco_log()  # every Newton path imports this module: MuJoCo's warnings to logging, never MUJOCO_LOG.TXT

RootlessPolicy = Literal["none", "infer_tree"]


@dataclass(frozen=True)
class InferredTree:
    """The spanning tree chosen for one connected rootless component."""

    bodies: tuple[str, ...]
    """Body prim paths of the component, sorted."""
    root_body: str
    """Prim path of the root link."""
    root_prim: str
    """Prim that received ``PhysicsArticulationRootAPI``: the root body (floating) or the anchor joint (fixed)."""
    fixed: bool
    """Whether a joint to the world holds the root (its anchor joint is the first tree joint)."""
    tree_joints: tuple[str, ...]
    """Tree joint prim paths in the order Newton emitted them (contiguous)."""
    loop_joints: tuple[str, ...]
    """Loop-closing joint prim paths (excluded from the articulation, still in the model), in emitted order."""
    articulation: str = ""
    """The articulation label Newton gave the tree (the root prim path)."""


@dataclass(frozen=True)
class CoordinateMove:
    """A joint whose coordinates (``joint_q``) and DoFs (``joint_qd``) moved relative to ``policy="none"``.

    Ranges are ``[start, end)`` relative to the first joint coordinate / DoF of this import.
    """

    joint: str
    coords_before: tuple[int, int]
    coords_after: tuple[int, int]
    dofs_before: tuple[int, int]
    dofs_after: tuple[int, int]


@dataclass(frozen=True)
class ImportSummary:
    """What :func:`import_usd` did."""

    source: str
    policy: str
    articulations: tuple[str, ...]
    """Labels of the articulations this import added to the builder, in builder order."""
    rootless_components: int
    """Connected components of bodies outside any authored articulation that have joints."""
    trees: tuple[InferredTree, ...] = ()
    """One per rootless component with ``policy="infer_tree"``; empty with ``"none"``."""
    added_joints: tuple[str, ...] = ()
    """Labels of joints Newton added that are not prims (``joint_1``: the FREE joint of a floating root)."""
    reordered_coordinates: tuple[CoordinateMove, ...] = ()
    """Joints whose coordinate or DoF indices differ from a ``policy="none"`` import of the same asset."""
    joint_offset: int = 0
    """Builder index of the first joint of this import."""
    notes: tuple[str, ...] = field(default=())

    @property
    def inferred_roots(self) -> tuple[str, ...]:
        return tuple(t.root_body for t in self.trees)

    @property
    def tree_joints(self) -> tuple[str, ...]:
        return tuple(j for t in self.trees for j in t.tree_joints)

    @property
    def loop_joints(self) -> tuple[str, ...]:
        return tuple(j for t in self.trees for j in t.loop_joints)


# ---------------------------------------------------------------------------------------------------------------
# Reading the stage.
# ---------------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Physics:
    bodies: dict[str, Body]
    joints: dict[str, Joint]
    articulated: frozenset[str]
    articulations: tuple[str, ...]


def _open(source: Any):
    """A fresh stage over ``source``'s layers whose session layer we may edit (the user's layers stay untouched)."""
    from pxr import Sdf, Usd

    given = file_stage(source)  # read only: the edits go to a session layer of a stage of our own
    session = Sdf.Layer.CreateAnonymous("transfer-infer-tree.usda")
    user_session = given.GetSessionLayer()
    if user_session is not None and not user_session.empty:
        session.subLayerPaths.append(user_session.identifier)
    stage = compose(given.GetRootLayer(), session, Usd.Stage.LoadAll)
    stage.SetEditTarget(Usd.EditTarget(session))
    return stage, given


def _read_physics(stage) -> _Physics:
    physics = read_physics(stage)
    articulated = frozenset(b for _, members, _ in physics.articulations for b in members)
    roots = tuple(root for root, _, _ in physics.articulations)
    return _Physics(physics.bodies, physics.joints, articulated, roots)


# ---------------------------------------------------------------------------------------------------------------
# Choosing the trees (engine-free).
# ---------------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Plan:
    bodies: tuple[str, ...]
    root_body: str
    root_prim: str
    fixed: bool
    tree: tuple[str, ...]  # chosen tree joints (BFS order, the anchor first when fixed)
    loops: tuple[str, ...]  # sorted


def infer_trees(
    bodies: dict[str, Body], joints: dict[str, Joint], articulated: frozenset[str] = frozenset()
) -> list[_Plan]:
    """Deterministic spanning trees for the rootless components of a parsed stage (see the module docstring).

    Raises :class:`~transfer.orders.OrderingError` when no root reaches a component along authored joint
    directions (Newton would refuse the reversed joints), naming the joints to flip.
    """
    links = {p for p, b in bodies.items() if b.is_link and p not in articulated}

    def side(path: str | None) -> str | None:
        return path if path in links else None

    candidates: list[Joint] = []
    loops_forced: set[str] = set()
    for j in sorted(joints.values(), key=lambda j: j.path):
        if not j.enabled:
            continue
        b0, b1 = side(j.body0), side(j.body1)
        if b0 is None and b1 is None:
            continue  # nothing of a rootless component (an articulation's joint, or world-to-world)
        other = [p for p in (j.body0, j.body1) if p is not None and p not in links]
        if j.excluded or j.type is JointType.DISTANCE or other:
            loops_forced.add(j.path)  # authored loop, never a tree edge, or attached to a non-rootless body
        candidates.append(j)

    parent: dict[str, str] = {p: p for p in links}

    def find(p: str) -> str:
        while parent[p] != p:
            parent[p] = parent[parent[p]]
            p = parent[p]
        return p

    for j in candidates:
        if j.path in loops_forced:
            continue
        b0, b1 = side(j.body0), side(j.body1)
        if b0 is not None and b1 is not None:
            parent[find(b0)] = find(b1)

    components: dict[str, list[str]] = {}
    for p in sorted(links):
        components.setdefault(find(p), []).append(p)
    plans = []
    for members in sorted(components.values(), key=lambda m: m[0]):
        mset = set(members)
        comp_joints = [
            j
            for j in candidates
            if {side(j.body0), side(j.body1)} - {None} <= mset and ({side(j.body0), side(j.body1)} & mset)
        ]
        if not comp_joints:
            continue  # a lone body: Newton gives it its own FREE joint
        plans.append(_plan_component(members, comp_joints, loops_forced, side))
    return plans


def _plan_component(members: list[str], comp_joints: list[Joint], forced: set[str], side) -> _Plan:
    internal = [j for j in comp_joints if j.path not in forced and side(j.body0) and side(j.body1)]
    anchors = [j for j in comp_joints if j.path not in forced and (side(j.body0) is None or side(j.body1) is None)]
    out: dict[str, list[Joint]] = {}
    for j in internal:
        out.setdefault(j.body0, []).append(j)

    def grow(root: str) -> list[Joint]:
        reached, tree, queue = {root}, [], deque([root])
        while queue:
            b = queue.popleft()
            for j in out.get(b, []):  # already sorted by path
                if j.body1 not in reached:
                    reached.add(j.body1)
                    tree.append(j)
                    queue.append(j.body1)
        return tree if reached == set(members) else []

    def finish(root: str, anchor: Joint | None, tree: list[Joint]) -> _Plan:
        chosen = ([anchor] if anchor else []) + tree
        names = {j.path for j in chosen}
        return _Plan(
            bodies=tuple(members),
            root_body=root,
            root_prim=anchor.path if anchor else root,
            fixed=anchor is not None,
            tree=tuple(j.path for j in chosen),
            loops=tuple(sorted(j.path for j in comp_joints if j.path not in names)),
        )

    for anchor in anchors:
        root = side(anchor.body1) or side(anchor.body0)
        tree = grow(root)
        if tree or len(members) == 1:
            return finish(root, anchor, tree)
    if not anchors:
        incoming = {j.body1 for j in internal}
        order = [b for b in members if b not in incoming] + [b for b in members if b in incoming]
        for root in order:
            tree = grow(root)
            if tree or len(members) == 1:
                return finish(root, None, tree)
    start = side(anchors[0].body1) or side(anchors[0].body0) if anchors else members[0]
    reversed_joints = [j.path for j in internal if j.body1 == start]
    raise OrderingError(
        f"infer_tree: no root reaches every body of the rootless component {members[:6]} along authored joint "
        f"directions, and Newton refuses reversed joints. Joints pointing against a tree from {start}: "
        f"{reversed_joints[:6]}. Swap physics:body0/body1 of those joints, mark loop-closing ones with "
        "physics:excludeFromArticulation = true, or apply PhysicsArticulationRootAPI yourself."
    )


# ---------------------------------------------------------------------------------------------------------------
# Import.
# ---------------------------------------------------------------------------------------------------------------
def _source_name(source: Any) -> str:
    if isinstance(source, str | os.PathLike):
        return str(Path(source))
    layer = source.GetRootLayer()
    return layer.realPath or layer.identifier


OPTIONAL_PACKAGES: dict[str, tuple[str, str]] = {
    "scipy": ("scipy", "pip install 'transfer[newton]' (or: pip install scipy)"),
    "coacd": ("coacd", "pip install coacd"),
    "fast_simplification": ("fast-simplification", "pip install fast-simplification"),
    "trimesh": ("trimesh", "pip install trimesh"),
    "meshio": ("meshio", "pip install meshio"),
    "open3d": ("open3d", "pip install open3d"),
    "alphashape": ("alphashape", "pip install alphashape"),
    "pyfqmr": ("pyfqmr", "pip install pyfqmr"),
}
"""Packages Newton 1.8's USD importer imports only for some assets (``newton[importers]``), by module: the pip
name and the install command. ``transfer[newton]`` installs scipy, which builds the convex hulls of mesh
colliders (``physics:approximation = "convexHull"``, what the official MJCF/URDF converters author); the others
serve rarer approximations (``convexDecomposition``: coacd, ``meshSimplification``: fast-simplification)."""


def add_usd(builder: Any, source: Any, **options: Any) -> Any:
    """``builder.add_usd(source, **options)``: the one call through which the Newton backend imports USD.

    A package Newton imports only for some assets (:data:`OPTIONAL_PACKAGES`; any other missing module too) that
    is not installed ends here as :class:`~transfer.errors.MissingPackageError` naming the package, the asset and
    the install command, instead of a ``ModuleNotFoundError`` from deep inside Newton.
    """
    try:
        return builder.add_usd(source, **options)
    except ModuleNotFoundError as exc:
        module = (exc.name or "").split(".")[0]
        if not module or module in ("newton", "warp", "pxr"):
            raise
        package, install = OPTIONAL_PACKAGES.get(module, (module, f"pip install {module}"))
        raise MissingPackageError(package, f"Newton's USD importer (for {_file_name(source)})", install) from exc


def _file_name(source: Any) -> str:
    """The file a path or stage stands for: for a stage built over the user's file (an in-memory overlay), the
    first layer it uses that is a file."""
    if isinstance(source, str | os.PathLike):
        return str(Path(source))
    files = [layer.realPath for layer in source.GetUsedLayers() if not layer.anonymous and layer.realPath]
    return files[0] if files else _source_name(source)


def import_usd(
    source: str | os.PathLike | Any,
    rootless_articulation_policy: RootlessPolicy = "none",
    *,
    builder: Any = None,
    finalize: bool = False,
    device: Any = None,
    **newton_options: Any,
) -> tuple[Any, ImportSummary]:
    """Import a USD file (or ``Usd.Stage``) with ``ModelBuilder.add_usd``; return ``(builder, summary)``.

    Args:
        source: Path of a USD file, or a ``Usd.Stage`` (never modified: edits go to a private session layer).
        rootless_articulation_policy: ``"none"`` (default): Newton's own import; rootless bodies stay loose.
            ``"infer_tree"``: give every connected rootless component an articulation tree (module docstring).
        builder: The ``newton.ModelBuilder`` to add to (a new one by default).
        finalize: Return ``builder.finalize(device=device)`` instead of the builder. Rootless joints that remain
            need ``skip_validation_joints=True``, which is then passed.
        **newton_options: Forwarded to ``ModelBuilder.add_usd`` (``xform``, ``floating``, ``ignore_paths``, ...).

    Raises:
        ValueError: an unknown policy.
        transfer.orders.OrderingError: ``infer_tree`` cannot orient a component (the message names the joints).
        RuntimeError: Newton did not lay the inferred trees out as planned (the message says which).
    """
    import newton

    if rootless_articulation_policy not in ("none", "infer_tree"):
        raise ValueError(
            f"rootless_articulation_policy={rootless_articulation_policy!r}: expected 'none' or 'infer_tree'"
        )
    builder = newton.ModelBuilder() if builder is None else builder
    stage, given = _open(source)
    physics = _read_physics(stage)
    plans = infer_trees(physics.bodies, physics.joints, physics.articulated)
    if rootless_articulation_policy == "none" or not plans:
        summary = _import_as_authored(builder, source, given, rootless_articulation_policy, plans, newton_options)
        return _finish(builder, summary, finalize, device, rootless=bool(plans))
    summary = _import_inferred(builder, source, stage, given, plans, newton_options)
    return _finish(builder, summary, finalize, device, rootless=False)


def _import_as_authored(
    builder: Any, source: Any, given: Any, policy: str, plans: list[_Plan], options: dict[str, Any]
) -> ImportSummary:
    """Newton's own import (``policy="none"``, or nothing rootless): rootless components stay loose bodies (noted)."""
    name = _source_name(source)
    joint0, art0 = builder.joint_count, builder.articulation_count
    add_usd(builder, _usd_input(source, given), **options)
    notes = ()
    if plans:
        notes = (
            f"{len(plans)} rootless component(s) imported as loose bodies; pass "
            "rootless_articulation_policy='infer_tree' to give them articulation trees.",
        )
    return ImportSummary(
        source=name,
        policy=policy,
        articulations=tuple(builder.articulation_label[art0:]),
        rootless_components=len(plans),
        added_joints=_added(builder, joint0),
        joint_offset=joint0,
        notes=notes,
    )


def _import_inferred(
    builder: Any, source: Any, stage: Any, given: Any, plans: list[_Plan], options: dict[str, Any]
) -> ImportSummary:
    """The ``infer_tree`` import: the plans authored on ``stage`` (our session overlay), imported, checked against
    the plans and compared with a ``policy="none"`` import of ``given``."""
    name = _source_name(source)
    joint0, art0 = builder.joint_count, builder.articulation_count
    _author_trees(stage, plans)
    add_usd(builder, stage, **options)
    trees = _check_layout(builder, joint0, art0, plans)
    reference = _none_import(given, source, options)
    return ImportSummary(
        source=name,
        policy="infer_tree",
        articulations=tuple(builder.articulation_label[art0:]),
        rootless_components=len(plans),
        trees=trees,
        added_joints=_added(builder, joint0),
        reordered_coordinates=_moves(reference, builder, joint0),
        joint_offset=joint0,
    )


def _author_trees(stage: Any, plans: list[_Plan]) -> None:
    """Step 3 of the module docstring: the root API on each plan's root prim, ``physics:excludeFromArticulation``
    on its loop joints, authored in ``stage``'s edit target (the session layer)."""
    from pxr import UsdPhysics

    for plan in plans:
        prim = stage.GetPrimAtPath(plan.root_prim)
        if prim.IsInstanceProxy():
            raise OrderingError(
                f"infer_tree: {plan.root_prim} is inside an instance, where the root API cannot be applied; make "
                "the prim uninstanceable (instanceable = false) or apply PhysicsArticulationRootAPI yourself."
            )
        UsdPhysics.ArticulationRootAPI.Apply(prim)
        for loop in plan.loops:
            UsdPhysics.Joint(stage.GetPrimAtPath(loop)).CreateExcludeFromArticulationAttr(True)


def _usd_input(source: Any, given: Any) -> Any:
    """What a ``policy="none"`` import reads: the path as a string, or the caller's own stage ``given``."""
    return str(source) if isinstance(source, str | os.PathLike) else given


def _finish(
    builder: Any, summary: ImportSummary, finalize: bool, device: Any, rootless: bool
) -> tuple[Any, ImportSummary]:
    if not finalize:
        return builder, summary
    return builder.finalize(device=device, skip_validation_joints=rootless), summary


def _added(builder: Any, joint0: int) -> tuple[str, ...]:
    return tuple(label for label in builder.joint_label[joint0:] if not label.startswith("/"))


def _check_layout(builder: Any, joint0: int, art0: int, plans: list[_Plan]) -> tuple[InferredTree, ...]:
    labels = list(builder.joint_label)
    index = {label: i for i, label in enumerate(labels) if i >= joint0}
    trees = []
    for plan in plans:
        try:
            a = next(
                k for k in range(art0, builder.articulation_count) if builder.articulation_label[k] == plan.root_prim
            )
        except StopIteration:
            raise RuntimeError(
                f"infer_tree: Newton built no articulation rooted at {plan.root_prim} (articulations: "
                f"{builder.articulation_label[art0:]}). The asset may need collapse/ignore options that dropped it."
            ) from None
        start, end = builder.articulation_start[a], builder.articulation_end[a]
        block = [labels[j] for j in range(start, end)]
        tree_paths = [p for p in block if p.startswith("/")]
        if sorted(tree_paths) != sorted(plan.tree):
            raise RuntimeError(
                f"infer_tree: Newton's articulation {plan.root_prim} holds joints {tree_paths}, expected the planned "
                f"tree {list(plan.tree)}. Please report this with the asset."
            )
        loops_at = sorted(index[p] for p in plan.loops if p in index)
        after = list(range(end, end + len(loops_at)))
        if loops_at != after:
            raise RuntimeError(
                f"infer_tree: loop joints of {plan.root_prim} sit at joints {loops_at}, not right after the tree "
                f"block ending at {end}. Please report this with the asset."
            )
        trees.append(
            InferredTree(
                bodies=plan.bodies,
                root_body=plan.root_body,
                root_prim=plan.root_prim,
                fixed=plan.fixed,
                tree_joints=tuple(tree_paths),
                loop_joints=tuple(labels[j] for j in loops_at),
                articulation=builder.articulation_label[a],
            )
        )
    return tuple(trees)


def _none_import(given: Any, source: Any, options: dict[str, Any]) -> Any:
    """A scratch ``policy="none"`` import of the same stage (collision and visual geometry skipped)."""
    import newton

    scratch = newton.ModelBuilder()
    opts = dict(options)
    opts.update(load_visual_shapes=False, load_sites=False, skip_mesh_approximation=True)
    add_usd(scratch, _usd_input(source, given), **opts)
    return scratch


def _ranges(builder: Any, joint0: int) -> dict[str, tuple[tuple[int, int], tuple[int, int]]]:
    q, qd = list(builder.joint_q_start), list(builder.joint_qd_start)
    n = builder.joint_count
    q.append(builder.joint_coord_count)
    qd.append(builder.joint_dof_count)
    q0, qd0 = q[joint0] if joint0 < n else q[-1], qd[joint0] if joint0 < n else qd[-1]
    out = {}
    for j in range(joint0, n):
        label = builder.joint_label[j]
        if label.startswith("/"):
            out[label] = ((q[j] - q0, q[j + 1] - q0), (qd[j] - qd0, qd[j + 1] - qd0))
    return out


def _moves(reference: Any, builder: Any, joint0: int) -> tuple[CoordinateMove, ...]:
    before, after = _ranges(reference, 0), _ranges(builder, joint0)
    moves = []
    for joint in sorted(after, key=lambda p: after[p][0]):
        if joint in before and before[joint] != after[joint]:
            (cb, db), (ca, da) = before[joint], after[joint]
            moves.append(CoordinateMove(joint, cb, ca, db, da))
    return tuple(moves)
