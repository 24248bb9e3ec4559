"""The ``robot_schema`` convention: the order authored on the asset (``IsaacRobotAPI`` relationships).

``joints`` and ``bodies`` are engine names (PhysX's, de-duplicated as PhysX does) put in the authored
order, so they are a permutation of the ``physx`` order and map against a backend's names with
:func:`transfer.build_name_map`. The robot schema's own names (``isaac:NameOverride`` /
``isaac:nameOverride``) come alongside as ``joint_labels`` / ``body_labels``.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable

from transfer.orders.conventions import Convention
from transfer.orders.graph import ArticulationGraph, Joint, JointType, OrderingError, ResolvedOrder, leaf
from transfer.orders.physx import dedup, joint_priority, physx_dof_names, physx_order

__all__ = ["robot_schema_order"]


def _physx_tree(g: ArticulationGraph) -> tuple[ResolvedOrder, dict[str, str], dict[str, Joint], dict[str, str]]:
    """PhysX's tree of ``g``: its order, and the engine name of each link (path -> name) and tree joint.

    The tree joints are the enabled, non-excluded joints between two links of the root's component that
    PhysX did not leave out; renumbered breadth-first from the root with children in joint priority order
    they give PhysX's link order, which fixes the de-duplicated names. Checked against ``physx_order``.
    """
    px = physx_order(g)
    links = {b.path for b in g.bodies if b.is_link}
    loops = set(px.loop_joints)
    adj: dict[str, list[Joint]] = {}
    for j in g.joints:
        if not j.enabled or j.excluded or j.type is JointType.DISTANCE or j.path in loops:
            continue
        if j.body0 in links and j.body1 in links and j.body0 != j.body1:
            adj.setdefault(j.body0, []).append(j)
            adj.setdefault(j.body1, []).append(j)
    order, inbound = [px.root_body], []
    seen = {px.root_body}
    queue = deque([px.root_body])
    while queue:
        link = queue.popleft()
        for j in sorted(adj.get(link, []), key=joint_priority):
            child = j.other(link)
            if child is not None and child not in seen:
                seen.add(child)
                order.append(child)
                inbound.append(j)
                queue.append(child)
    body_names = dict(zip(order, dedup([leaf(p) for p in order]), strict=True))
    joint_names = dict(zip((j.path for j in inbound), dedup([j.name for j in inbound]), strict=True))
    dofs = tuple(d for j in inbound for d in physx_dof_names(j, joint_names[j.path]))
    if tuple(body_names.values()) != px.bodies or dofs != px.joints:
        raise OrderingError(
            f"Internal error: could not match PhysX's tree of {g.root} joint by joint (got {dofs} / "
            f"{tuple(body_names.values())}, PhysX order {px.joints} / {px.bodies}). Please report this asset."
        )
    return px, body_names, {j.path: j for j in inbound}, joint_names


def robot_schema_order(
    g: ArticulationGraph,
    dof_names: Callable[[Joint, str], list[str]] = physx_dof_names,
) -> ResolvedOrder | None:
    """Joint (DoF) and body order authored by ``isaac:physics:robotJoints`` / ``robotLinks``, or ``None``.

    Each listed joint contributes the DoFs it has in the articulation (``dof_names``, PhysX's spelling by
    default: ``name:0``, ``name:1``, ...), named by the engine; fixed, excluded and loop-closing joints and the
    joint anchoring the root to the world contribute none. Listed bodies that are not links (kinematic or
    disabled) are skipped. Raises :class:`OrderingError` when the schema could not be read (``robot.error``),
    names prims that are not members of the articulation, omits a joint that carries DoFs or a link, or
    gives two elements the same name override.
    """
    robot = g.robot
    if robot is None:
        return None
    if robot.error:
        raise OrderingError(robot.error)
    members_j = {j.path for j in g.joints}
    members_b = {b.path for b in g.bodies}
    stray_j = [p for p in robot.joints if p not in members_j]
    stray_b = [p for p in robot.links if p not in members_b]
    if stray_j or stray_b:
        raise OrderingError(
            f"{robot.prim}: robot-schema targets are not members of articulation {g.root}: "
            f"joints {stray_j}, links {stray_b}. Point isaac:physics:robotJoints/robotLinks at this robot's "
            "joint prims and rigid-body prims."
        )
    px, body_names, tree, joint_names = _physx_tree(g)

    missing_j = sorted(p for p, j in tree.items() if dof_names(j, joint_names[p]) and p not in robot.joints)
    missing_b = sorted(p for p in body_names if p not in robot.links)
    if missing_j or missing_b:
        raise OrderingError(
            f"{robot.prim}: the robot schema does not list every element of articulation {g.root}: "
            f"isaac:physics:robotJoints omits {missing_j}, isaac:physics:robotLinks omits {missing_b}. "
            "Add them where they belong in the order (an order must be a permutation of the articulation)."
        )

    overrides = dict(robot.names)
    joints, joint_labels = [], []
    for p in robot.joints:
        if p in tree:
            joints += dof_names(tree[p], joint_names[p])
            joint_labels += dof_names(tree[p], overrides.get(p, joint_names[p]))
    listed_links = [p for p in robot.links if p in body_names]
    bodies = [body_names[p] for p in listed_links]
    body_labels = [overrides.get(p, body_names[p]) for p in listed_links]
    for kind, labels in (("joint", joint_labels), ("link", body_labels)):
        dups = sorted({x for x in labels if labels.count(x) > 1})
        if dups:
            raise OrderingError(
                f"{robot.prim}: several {kind}s of articulation {g.root} are named {dups}: a name override "
                "(isaac:NameOverride / isaac:nameOverride) repeats another element's name. Give each a distinct name."
            )
    return ResolvedOrder(
        convention="robot_schema",
        root=g.root,
        joints=tuple(joints),
        bodies=tuple(bodies),
        fixed_base=px.fixed_base,
        root_body=px.root_body,
        loop_joints=px.loop_joints,
        joint_labels=tuple(joint_labels),
        body_labels=tuple(body_labels),
    )


CONVENTION = Convention(
    "robot_schema",
    "the order the asset authors (isaac:physics:robotJoints / robotLinks)",
    order=robot_schema_order,
    absent="authors no robot schema (isaac:physics:robotJoints / robotLinks on the asset prim or the articulation root)",
)
"""The ``robot_schema`` convention (:mod:`transfer.orders.conventions`): no engine's, so it holds no base."""
