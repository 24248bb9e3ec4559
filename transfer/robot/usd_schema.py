"""The robot schema of a USD stage: ``IsaacRobotAPI`` with ``isaac:physics:robotJoints`` / ``robotLinks`` (and
Isaac's name overrides), read without any Isaac plugin. The order the ``robot_schema`` convention follows."""

from __future__ import annotations

from transfer.orders.graph import OrderingError, RobotSchema

__all__ = ["robot_schema", "robot_schema_or_error"]

_ROBOT_JOINTS = "isaac:physics:robotJoints"
_ROBOT_LINKS = "isaac:physics:robotLinks"


# --- robot schema ------------------------------------------------------------------------------------------

_ROBOT_API = "IsaacRobotAPI"
# Isaac's joint schema spells the override ``isaac:NameOverride``, its link schema ``isaac:nameOverride``;
# each kind reads its own spelling first and accepts the other.
_JOINT_NAME_OVERRIDES = ("isaac:NameOverride", "isaac:nameOverride")
_LINK_NAME_OVERRIDES = ("isaac:nameOverride", "isaac:NameOverride")


def _is_robot_prim(prim) -> bool:
    """Applies ``IsaacRobotAPI`` (read from the composed ``apiSchemas``, so no Isaac plugin is needed) or
    authors a robot relationship."""
    return (
        _ROBOT_API in prim.GetPrimTypeInfo().GetAppliedAPISchemas()
        or bool(prim.GetRelationship(_ROBOT_JOINTS))
        or bool(prim.GetRelationship(_ROBOT_LINKS))
    )


def _targets(prim) -> list:
    out = []
    for rel_name in (_ROBOT_JOINTS, _ROBOT_LINKS):
        rel = prim.GetRelationship(rel_name)
        out.extend(rel.GetTargets() if rel else [])
    return out


def _robot_prim(stage, start: str):
    """The robot prim of the articulation rooted at ``start``.

    The nearest robot prim at or above the root; when an enclosing robot prim lists that one as a nested
    robot (a target of its robotJoints/robotLinks), the enclosing one, and so on upwards.
    """
    chain = []
    prim = stage.GetPrimAtPath(start)
    while prim and prim.IsValid() and not prim.IsPseudoRoot():
        if _is_robot_prim(prim):
            chain.append(prim)
        prim = prim.GetParent()
    if not chain:
        return None
    robot = chain[0]
    for outer in chain[1:]:
        if robot.GetPath() in _targets(outer):
            robot = outer
    return robot


def robot_schema_or_error(stage, articulation_root: str) -> RobotSchema | None:
    robot = _robot_prim(stage, articulation_root)
    if robot is None:
        return None
    try:
        return _schema_of(stage, robot)
    except OrderingError as exc:
        return RobotSchema(str(robot.GetPath()), (), (), error=str(exc))


def robot_schema(stage, articulation_root: str) -> RobotSchema | None:
    """The robot schema of the opened ``stage`` holding ``articulation_root``, or ``None`` when none is authored.

    The robot prim is the nearest prim at or above the articulation root that applies ``IsaacRobotAPI`` or
    authors ``isaac:physics:robotJoints`` / ``robotLinks`` (climbing further while an enclosing robot prim
    lists it as a nested robot). Targets that are themselves robot prims (and not joints, resp. rigid
    bodies) are expanded in place. Raises :class:`OrderingError` listing every target that does not resolve
    (with the relationship that names it), duplicates (with the robot prims that list them) and nested-robot
    cycles. :func:`transfer.robot.usd.read_robot_schema` opens a file for it.
    """
    robot = _robot_prim(stage, articulation_root)
    return None if robot is None else _schema_of(stage, robot)


def _schema_of(stage, robot) -> RobotSchema:
    from pxr import UsdPhysics

    root_key = str(robot.GetPath())
    names: dict[str, str] = {}
    unresolved: list[str] = []

    def leaf_target(t, rel_name: str) -> bool:
        if rel_name == _ROBOT_JOINTS:
            return t.IsA(UsdPhysics.Joint)
        return t.HasAPI(UsdPhysics.RigidBodyAPI)

    def expand(p, rel_name: str, stack: tuple[str, ...]) -> list[tuple[str, str]]:
        """``(target, listed by)`` pairs in authored order, nested robots expanded."""
        rel = p.GetRelationship(rel_name)
        out: list[tuple[str, str]] = []
        for target in rel.GetTargets() if rel else []:
            key = str(target)
            t = stage.GetPrimAtPath(target)
            if not t.IsValid():
                unresolved.append(f"{p.GetPath()}.{rel_name} -> {key}")
                continue
            if not leaf_target(t, rel_name) and _is_robot_prim(t):
                if key in stack:
                    raise OrderingError(
                        f"{p.GetPath()}.{rel_name} targets {key}, a robot prim that (directly or through nested "
                        f"robots {' -> '.join(stack)}) lists itself. Remove the cycle."
                    )
                out.extend(expand(t, rel_name, (*stack, key)))  # nested robot assembly
                continue
            overrides = _JOINT_NAME_OVERRIDES if rel_name == _ROBOT_JOINTS else _LINK_NAME_OVERRIDES
            for attr_name in overrides:
                attr = t.GetAttribute(attr_name)
                value = attr.Get() if attr and attr.HasAuthoredValue() else None
                if value:
                    names[key] = str(value)
                    break
            out.append((key, str(p.GetPath())))
        return out

    joints = expand(robot, _ROBOT_JOINTS, (root_key,))
    links = expand(robot, _ROBOT_LINKS, (root_key,))
    if unresolved:
        raise OrderingError(
            f"Robot schema of {root_key}: relationship targets that do not exist in the stage: "
            f"{'; '.join(unresolved)}. Fix or remove these targets."
        )
    for what, items in (("robotJoints", joints), ("robotLinks", links)):
        listed: dict[str, list[str]] = {}
        for target, by in items:
            listed.setdefault(target, []).append(by)
        dups = {t: by for t, by in listed.items() if len(by) > 1}
        if dups:
            detail = "; ".join(f"{t} (listed by {', '.join(by)})" for t, by in sorted(dups.items()))
            raise OrderingError(
                f"Robot schema of {root_key}: isaac:physics:{what} lists the same prim more than once: {detail}. "
                "List each prim once (a nested robot's prims must not be listed again by the enclosing robot)."
            )
    return RobotSchema(root_key, tuple(t for t, _ in joints), tuple(t for t, _ in links), tuple(sorted(names.items())))
