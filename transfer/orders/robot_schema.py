"""The ``robot_schema`` convention: the order authored on the asset (``IsaacRobotAPI`` relationships)."""

from __future__ import annotations

from collections.abc import Callable

from transfer.orders.graph import ArticulationGraph, Joint, OrderingError, ResolvedOrder
from transfer.orders.physx import physx_dof_names

__all__ = ["robot_schema_order"]


def robot_schema_order(
    g: ArticulationGraph,
    dof_names: Callable[[Joint, str], list[str]] = physx_dof_names,
) -> ResolvedOrder | None:
    """Joint (DoF) and body order authored by ``isaac:physics:robotJoints`` / ``robotLinks``, or ``None``.

    Multi-DoF joints expand with ``dof_names`` (PhysX's spelling by default: ``name:0``, ``name:1``, ...).
    Targets that are not members of the articulation raise, naming them.
    """
    robot = g.robot
    if robot is None:
        return None
    joints = {j.path: j for j in g.joints}
    bodies = {b.path for b in g.bodies}
    stray_j = [p for p in robot.joints if p not in joints]
    stray_b = [p for p in robot.links if p not in bodies]
    if stray_j or stray_b:
        raise OrderingError(
            f"{robot.prim}: robot-schema targets are not members of articulation {g.root}: "
            f"joints {stray_j}, links {stray_b}. Point isaac:physics:robotJoints/robotLinks at this robot's prims."
        )
    dofs = tuple(d for p in robot.joints for d in dof_names(joints[p], robot.name(p)))
    world = any(j.body0 is None or j.body1 is None for j in g.joints if not j.excluded)
    return ResolvedOrder(
        convention="robot_schema",
        root=g.root,
        joints=dofs,
        bodies=tuple(robot.name(p) for p in robot.links),
        fixed_base=world,
        root_body=robot.links[0] if robot.links else "",
    )
