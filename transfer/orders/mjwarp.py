"""The ``mjwarp`` convention: the order Newton 1.8 gives an articulation, computed from the graph.

Newton's ``ModelBuilder.add_usd`` (default ``joint_ordering="dfs"``, bodies follow joints) numbers the
articulation's bodies in sorted path order, turns each non-excluded joint into a (parent, child) edge with the
world (-1) always the parent, and sorts the edges depth-first from the root, children by joint path. Bodies
are listed as the sorted joints first reach them. ``newton.selection.ArticulationView`` with FREE and FIXED
joints excluded then lists the DoFs. Newton refuses graphs that are not one tree in authored direction; those
refusals are reproduced as :class:`MjwarpRefusal` with Newton's reason.
"""

from __future__ import annotations

from collections import defaultdict

from transfer.ordering import dof_names
from transfer.orders.conventions import Convention
from transfer.orders.graph import (
    AXES,
    ArticulationGraph,
    Joint,
    JointType,
    OrderingError,
    ResolvedOrder,
    leaf,
    standard_dof_names,
)

__all__ = ["MjwarpRefusal", "mjwarp_dof_names", "mjwarp_order"]

_INF = float("inf")


class MjwarpRefusal(OrderingError):
    """Newton would refuse this articulation; the message is Newton's reason."""


def mjwarp_dof_names(joint: Joint) -> list[str]:
    """DoF names ``ArticulationView.joint_dof_names`` gives ``joint``."""
    name = joint.name
    standard = standard_dof_names(joint.type, name)
    if standard is not None:
        return standard
    if joint.type is JointType.D6:
        limits = {axis: (lo, hi) for axis, lo, hi in joint.limits}
        free = 0
        for axis in AXES:  # linear axes first, then angular
            if axis in limits:
                lo, hi = limits[axis]
                if (-_INF if lo is None else lo) < (_INF if hi is None else hi):
                    free += 1
        return dof_names(name, free)
    raise OrderingError(
        f"Joint {joint.path} has a type the mjwarp convention does not model ({joint.type.value}); "
        "pin the order with an explicit list of DoF names."
    )


def _group_dof_names(group: list[Joint]) -> list[str]:
    """DoF names of one joint, or of parallel joints Newton merges into a D6 named after the first."""
    if len(group) == 1:
        return mjwarp_dof_names(group[0])
    bad = [j for j in group if j.type not in (JointType.REVOLUTE, JointType.PRISMATIC)]
    if bad:
        raise MjwarpRefusal(
            f"Cannot merge joint {bad[0].path} of type {bad[0].type.value} into a D6 joint. "
            "Only RevoluteJoint and PrismaticJoint are supported for merging."
        )
    count = len(group)  # one DoF per member, linear (prismatic) first, then angular
    return dof_names(group[0].name, count)


def _sort(edges: list[tuple[int, int]], names: list[str], body_paths: list[str]) -> list[int]:
    """Depth-first order of edge indices; Newton's reasons on failure."""
    directed = _sort_directed(edges)
    if directed is not None:
        return directed
    adjacency: dict[int, list[tuple[int, int]]] = defaultdict(list)
    nodes: set[int] = set()
    for jid, (parent, child) in enumerate(edges):
        adjacency[parent].append((jid, child))
        adjacency[child].append((jid, parent))
        nodes.update((parent, child))
    order: list[int] = []
    reversed_ids: list[int] = []
    visited: set[int] = set()

    def visit(node: int, parent: int | None) -> None:
        visited.add(node)
        for jid, nbr in sorted(adjacency[node]):
            if nbr == parent:
                continue
            if nbr in visited:
                raise MjwarpRefusal(f"Joint graph contains a cycle at body {_body(nbr, body_paths)}")
            if edges[jid] != (node, nbr):
                reversed_ids.append(jid)
            order.append(jid)
            visit(nbr, node)

    roots = sorted(nodes)
    for root in roots:
        if root in visited:
            continue
        if visited:
            raise MjwarpRefusal("Multiple roots found in the joint graph.")
        visit(root, None)
    if reversed_ids:
        listed = ", ".join(names[j] for j in reversed_ids)
        raise MjwarpRefusal(
            f"Reversed joints are not supported: {listed}. Ensure that the joint parent body is defined as "
            "physics:body0 and the child is defined as physics:body1 in the joint prim."
        )
    return order


def _sort_directed(edges: list[tuple[int, int]]) -> list[int] | None:
    incoming: dict[int, int] = {}
    outgoing: dict[int, list[tuple[int, int]]] = defaultdict(list)
    nodes: set[int] = set()
    for jid, (parent, child) in enumerate(edges):
        if child in incoming:
            return None  # several joints lead to one body
        incoming[child] = jid
        outgoing[parent].append((jid, child))
        nodes.update((parent, child))
    roots = nodes - set(incoming)
    if len(roots) != 1:
        return None
    order: list[int] = []
    visited: set[int] = set()
    stack = [iter(sorted(outgoing[next(iter(roots))]))]
    visited.update(roots)
    while stack:
        for jid, child in stack[-1]:
            if child in visited:
                return None
            visited.add(child)
            order.append(jid)
            stack.append(iter(sorted(outgoing[child])))
            break
        else:
            stack.pop()
    return order


def _body(bid: int, body_paths: list[str]) -> str:
    return "world" if bid < 0 else body_paths[bid]


def mjwarp_order(g: ArticulationGraph) -> ResolvedOrder:
    """Joint (DoF) and body order Newton gives ``g``; raises :class:`MjwarpRefusal` where Newton refuses."""
    if g.composition_errors:
        listed = "\n".join(f"- {e}" for e in g.composition_errors[:5])
        more = len(g.composition_errors) - 5
        raise MjwarpRefusal(
            f"USD stage has composition errors while loading {g.source}:\n{listed}"
            + (f"\n(and {more} more)" if more > 0 else "")
            + "\nNewton refuses any composition error: fix the references (or use a flattened copy of the asset)."
        )
    body_paths = sorted(b.path for b in g.bodies)
    body_id = {p: i for i, p in enumerate(body_paths)}
    edges: list[tuple[int, int]] = []
    edge_joints: list[Joint] = []
    pairs: dict[tuple[int, int], Joint] = {}
    groups: dict[str, list[Joint]] = defaultdict(list)
    excluded = []
    for j in sorted(g.joints, key=lambda j: j.path):
        parent, child = body_id.get(j.body0 or "", -1), body_id.get(j.body1 or "", -1)
        if child == -1:
            if parent == -1:
                raise MjwarpRefusal(f"Unable to parse joint {j.path}: both bodies unresolved")
            parent, child = child, parent
        if j.excluded:
            excluded.append(j.path)
            continue
        if (parent, child) in pairs:
            groups[pairs[(parent, child)].path].append(j)  # parallel joints merge into one D6
            continue
        pairs[(parent, child)] = j
        groups[j.path].append(j)
        edges.append((parent, child))
        edge_joints.append(j)
    if not edges:
        raise OrderingError(f"Articulation {g.root} has no joints; there is nothing to order.")
    order = _sort(edges, [j.path for j in edge_joints], body_paths)

    bodies: list[int] = []
    for jid in order:
        for b in edges[jid]:
            if b >= 0 and b not in bodies:
                bodies.append(b)
    first_parent, first_child = edges[order[0]]
    root = first_child if first_parent == -1 else first_parent
    tree = {j.path for jid in order for j in groups[edge_joints[jid].path]}
    return ResolvedOrder(
        convention="mjwarp",
        root=g.root,
        joints=tuple(dof for jid in order for dof in _group_dof_names(groups[edge_joints[jid].path])),
        bodies=tuple(leaf(body_paths[b]) for b in bodies),
        fixed_base=first_parent == -1 and edge_joints[order[0]].type is JointType.FIXED,
        root_body=body_paths[root],
        loop_joints=tuple(sorted(p for p in (j.path for j in g.joints) if p not in tree)),
    )


def _mjwarp_holds_base(g: ArticulationGraph) -> bool:
    """Newton holds the root to the world: its first joint is a fixed joint from the world."""
    return mjwarp_order(g).fixed_base


CONVENTION = Convention(
    "mjwarp",
    "Newton / MuJoCo-Warp: depth-first (ModelBuilder.add_usd and ArticulationView)",
    order=mjwarp_order,
    holds_base=_mjwarp_holds_base,
)
"""The ``mjwarp`` convention (:mod:`transfer.orders.conventions`)."""
