"""The ``physx`` convention: the order ovphysx (PhysX) gives an articulation, computed from the graph.

Rules (see docs/conventions.md; verified against ovphysx by tests/test_differential.py):

- root election: the root API on a body makes it the floating root; on a joint to the world, the body on the
  other side is the fixed root; on an ancestor prim, the world-anchored link with the largest weight wins,
  else the seed when every link is nested under it, else the graph centre;
- links are created depth-first from the root with each link's joints in priority order (type rank, then
  path), then renumbered breadth-first; each non-root link contributes its inbound joint's DoFs.
"""

from __future__ import annotations

from collections import deque

from transfer.orders.conventions import Convention
from transfer.orders.graph import (
    ArticulationGraph,
    Joint,
    JointType,
    OrderingError,
    ResolvedOrder,
    leaf,
    standard_dof_names,
)

__all__ = ["physx_holds_base", "physx_order", "joint_priority", "physx_dof_names", "world_joints"]

_RANK = {
    JointType.FIXED: 0,
    JointType.REVOLUTE: 1,
    JointType.PRISMATIC: 2,
    JointType.SPHERICAL: 3,
    JointType.D6: 4,
    JointType.OTHER: 4,
}
_W_WORLD, _W_EXCLUDED, _W_OTHER = 100_000, 1_000, 100


def joint_priority(joint: Joint) -> tuple[int, str]:
    """PhysX visits a link's joints by type rank (fixed < revolute < prismatic < spherical < D6), then path."""
    return (_RANK[joint.type], joint.path)


def physx_dof_names(joint: Joint, name: str) -> list[str]:
    """DoF names PhysX gives ``joint`` (spelled with its de-duplicated ``name``)."""
    standard = standard_dof_names(joint.type, name)
    if standard is not None:
        return standard
    if joint.type is JointType.D6:
        limits = {axis: (lo, hi) for axis, lo, hi in joint.limits}
        names = []
        for i, axis in enumerate(("rotX", "rotY", "rotZ")):
            lo, hi = limits.get(axis, (None, None))
            if lo is not None and hi is not None and lo > hi:
                continue  # locked
            names.append(f"{name}:{i}")
        return names
    raise OrderingError(
        f"Joint {joint.path} has a type the physx convention does not model ({joint.type.value}); "
        "pin the order with an explicit list of DoF names."
    )


def dedup(names: list[str]) -> list[str]:
    """PhysX's renaming of repeated names: later repeats get ``_k`` with the smallest free ``k >= 0``."""
    taken: set[str] = set()
    out = []
    for name in names:
        new = name
        k = 0
        while new in taken:
            new = f"{name}_{k}"
            k += 1
        taken.add(new)
        out.append(new)
    return out


class _Graph:
    """Adjacency of links, with world sides folded to ``None``."""

    def __init__(self, g: ArticulationGraph) -> None:
        self.links = {b.path for b in g.bodies if b.is_link}
        self.adj: dict[str, list[Joint]] = {link: [] for link in self.links}
        self.joints: list[Joint] = []
        for j in g.joints:
            if not j.enabled or j.type is JointType.DISTANCE:
                continue
            s0 = j.body0 if j.body0 in self.links else None
            s1 = j.body1 if j.body1 in self.links else None
            if s0 is None and s1 is None:
                continue
            if s0 == s1:
                raise OrderingError(
                    f"Joint {j.path} connects body {s0} to itself; set physics:body0 and physics:body1 to two "
                    "different bodies."
                )
            j = Joint(j.path, j.type, s0, s1, j.excluded, j.enabled, j.axis, j.limits)
            self.joints.append(j)
            for side in (s0, s1):
                if side is not None:
                    self.adj[side].append(j)
        for lst in self.adj.values():
            lst.sort(key=joint_priority)

    def edges(self, link: str, *, include_excluded: bool = False):
        """(joint, neighbour) pairs between links in priority order; excluded joints only when asked."""
        for j in self.adj[link]:
            other = j.other(link)
            if other is not None and (include_excluded or not j.excluded):
                yield j, other

    def walk(self, root: str, *, include_excluded: bool = False) -> dict[str, tuple[str | None, Joint | None, int]]:
        """Depth-first walk from ``root``: each link (in discovery order) with parent, inbound joint, depth."""
        found: dict[str, tuple[str | None, Joint | None, int]] = {root: (None, None, 0)}
        stack = [(root, self.edges(root, include_excluded=include_excluded))]
        while stack:
            link, it = stack[-1]
            for joint, other in it:
                if other not in found:
                    found[other] = (link, joint, found[link][2] + 1)
                    stack.append((other, self.edges(other, include_excluded=include_excluded)))
                    break
            else:
                stack.pop()
        return found

    def weight(self, link: str) -> int:
        w = 0
        for j in self.adj[link]:
            if j.excluded:
                w += _W_EXCLUDED
            elif j.other(link) is None:
                w += _W_WORLD
            else:
                w += _W_OTHER
        return w

    def world_joints(self, link: str) -> list[Joint]:
        return [j for j in self.adj[link] if not j.excluded and j.other(link) is None]


def _elect(g: ArticulationGraph, G: _Graph) -> tuple[str, Joint | None]:
    if g.root_kind == "body":
        if g.root not in G.links:
            raise OrderingError(
                f"PhysicsArticulationRootAPI is on {g.root}, which is not an enabled dynamic rigid body; "
                "apply it to the base link (floating base) or to the fixed joint that anchors the robot."
            )
        return g.root, None
    if g.root_kind == "joint":
        joint = next((j for j in G.joints if j.path == g.root), None)
        if joint is None or (joint.body0 is not None and joint.body1 is not None):
            raise OrderingError(
                f"PhysicsArticulationRootAPI is on joint {g.root}, which does not connect a link to the world; "
                "move the API to the base link or to the joint that anchors the robot to the world."
            )
        return joint.other(None) or "", joint
    # Root API on an ancestor prim: an election among the links below it.
    seeds = sorted(link for link in G.links if link == g.root or link.startswith(g.root.rstrip("/") + "/"))
    if not seeds:
        raise OrderingError(f"No enabled dynamic rigid body lies under the articulation root prim {g.root}.")
    seed = seeds[0]
    order = list(G.walk(seed))
    comp = set(order)
    rest = [s for s in seeds if s not in comp]
    if rest:
        raise OrderingError(
            f"The articulation root {g.root} holds several disconnected mechanisms (e.g. {seed} and {rest[0]}); "
            "PhysX's choice among them is not modelled. Put PhysicsArticulationRootAPI on each mechanism's base."
        )
    anchors = [link for link in order if G.world_joints(link)]
    if anchors:
        best = max(anchors, key=lambda link: (G.weight(link), -order.index(link)))
        return best, G.world_joints(best)[0]
    if all(link == seed or link.startswith(seed + "/") for link in order):
        return seed, None
    ecc = {link: max(d for _, _, d in G.walk(link, include_excluded=True).values()) for link in order}
    best = min(order, key=lambda link: (ecc[link], -len(G.adj[link]), order.index(link)))
    return best, None


def physx_order(g: ArticulationGraph) -> ResolvedOrder:
    """Joint (DoF) and body order PhysX gives ``g``.

    Refuses articulations with members on instance proxies: ovphysx 0.7 builds no articulation from physics
    authored inside an instanceable prim's prototype (checked against the engine by tests/test_usd_reader.py).
    """
    if g.instance_proxies:
        listed = ", ".join(g.instance_proxies[:5]) + (", ..." if len(g.instance_proxies) > 5 else "")
        raise OrderingError(
            f"Articulation {g.root} has physics inside instanceable prims (instance proxies: {listed}). PhysX "
            "ignores physics authored in an instance's prototype and builds no articulation from it (Newton "
            "does). Set instanceable = false on the prims above them, or author the rigid bodies, joints and "
            "root API on the instanceable prims themselves (keep only geometry inside the prototype)."
        )
    G = _Graph(g)
    root, root_joint = _elect(g, G)
    created = G.walk(root)
    children: dict[str, list[str]] = {link: [] for link in created}
    for link, (parent, _, _) in created.items():
        if parent is not None:
            children[parent].append(link)
    bfs = []
    queue = deque([root])
    while queue:
        link = queue.popleft()
        bfs.append(link)
        queue.extend(children[link])

    body_names = dedup([leaf(link) for link in bfs])
    inbound = [created[link][1] for link in bfs[1:]]
    joint_names = dedup([j.name for j in inbound])
    dofs = [dof for j, name in zip(inbound, joint_names, strict=True) for dof in physx_dof_names(j, name)]

    used = {j.path for j in inbound} | ({root_joint.path} if root_joint else set())
    members = set(created)
    loops = sorted(
        j.path for j in G.joints if j.path not in used and all(s is None or s in members for s in (j.body0, j.body1))
    )
    return ResolvedOrder(
        convention="physx",
        root=g.root,
        joints=tuple(dofs),
        bodies=tuple(body_names),
        fixed_base=root_joint is not None,
        root_body=root,
        loop_joints=tuple(loops),
    )


def world_joints(g: ArticulationGraph, link: str, *, fixed_only: bool = True) -> tuple[str, ...]:
    """Paths of the enabled joints of ``g`` between the world and ``link`` (fixed joints only, unless
    ``fixed_only`` is false), sorted. A body a joint names that is no rigid body (the converters' default prim)
    is the world."""
    return tuple(
        j.path
        for j in g.joints
        if j.enabled and {j.body0, j.body1} == {None, link} and (j.type is JointType.FIXED or not fixed_only)
    )


def physx_holds_base(g: ArticulationGraph) -> bool:
    """Whether PhysX holds the root link of ``g`` to the world: the articulation has a fixed base, or an enabled
    fixed joint from the world to its root link, which PhysX keeps out of a floating articulation (the root API on
    the root link) as a constraint. The MJCF/URDF converters author that second case for every robot without a
    free joint; measured on ovphysx, the root link does not move under gravity (docs/import.md)."""
    order = physx_order(g)
    return order.fixed_base or bool(world_joints(g, order.root_body))


CONVENTION = Convention(
    "physx",
    "PhysX (ovphysx): breadth-first from the root link PhysX elects",
    order=physx_order,
    holds_base=physx_holds_base,
)
"""The ``physx`` convention (:mod:`transfer.orders.conventions`)."""
