"""The articulation graph: a small engine-free value the ordering conventions are computed from.

The USD reader (:mod:`transfer.robot.usd`) builds it from prims; tests build it from plain names and
edges with :func:`graph_from_edges`. Nothing here imports pxr or an engine.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from enum import Enum

__all__ = [
    "AXES",
    "ArticulationGraph",
    "Body",
    "Joint",
    "JointType",
    "OrderingError",
    "ResolvedOrder",
    "RobotSchema",
    "Topology",
    "graph_from_edges",
    "leaf",
    "standard_dof_names",
]

AXES = ("transX", "transY", "transZ", "rotX", "rotY", "rotZ")
"""D6 axis names as UsdPhysics spells them in ``PhysicsLimitAPI:<axis>``."""


class OrderingError(ValueError):
    """An order cannot be resolved (bad asset, or a case an engine itself refuses or leaves undecided)."""


class JointType(str, Enum):
    FIXED = "fixed"
    REVOLUTE = "revolute"
    PRISMATIC = "prismatic"
    SPHERICAL = "spherical"
    D6 = "d6"  # a plain UsdPhysics.Joint
    DISTANCE = "distance"
    OTHER = "other"  # custom joint types the conventions do not model


def leaf(path: str) -> str:
    """Last element of a prim path (``/a/b/c`` -> ``c``)."""
    return path.rsplit("/", 1)[-1]


@dataclass(frozen=True)
class Body:
    """A rigid body of the articulation. ``enabled`` is ``physics:rigidBodyEnabled``."""

    path: str
    enabled: bool = True
    kinematic: bool = False

    @property
    def is_link(self) -> bool:
        """Enabled, dynamic, non-kinematic: the bodies an articulation is made of."""
        return self.enabled and not self.kinematic


def standard_dof_names(joint_type: JointType, name: str) -> list[str] | None:
    """DoF names both engines give fixed, revolute, prismatic and spherical joints; ``None`` for other types."""
    if joint_type is JointType.FIXED:
        return []
    if joint_type in (JointType.REVOLUTE, JointType.PRISMATIC):
        return [name]
    if joint_type is JointType.SPHERICAL:
        return [f"{name}:{i}" for i in range(3)]
    return None


@dataclass(frozen=True)
class Joint:
    """A joint, with its bodies resolved to the enclosing rigid body (``None`` = the world).

    ``limits`` holds, for a D6 (plain ``PhysicsJoint``), one ``(axis, low, high)`` entry per applied
    ``PhysicsLimitAPI:<axis>``; ``low``/``high`` are ``None`` when unauthored.
    """

    path: str
    type: JointType
    body0: str | None
    body1: str | None
    excluded: bool = False
    enabled: bool = True
    axis: str | None = None
    limits: tuple[tuple[str, float | None, float | None], ...] = ()

    @property
    def name(self) -> str:
        return leaf(self.path)

    def other(self, body: str | None) -> str | None:
        return self.body1 if body == self.body0 else self.body0


@dataclass(frozen=True)
class RobotSchema:
    """The order authored with ``isaac:physics:robotJoints`` / ``robotLinks`` (nested robots expanded).

    ``prim`` is the robot prim that authors them; ``joints`` and ``links`` are target prim paths in
    authored order. ``names`` maps a target path to its ``isaac:NameOverride`` / ``isaac:nameOverride``
    where one is authored. ``error`` is set (and ``joints``/``links`` left empty) when the authored schema
    is unusable (a target that does not resolve, a duplicate, a nested-robot cycle); resolving the
    ``robot_schema`` convention raises it, while the other conventions are unaffected.
    """

    prim: str
    joints: tuple[str, ...]
    links: tuple[str, ...]
    names: tuple[tuple[str, str], ...] = ()
    error: str = ""

    def name(self, path: str) -> str:
        """The robot schema's name for ``path``: its name override, else its prim name."""
        return dict(self.names).get(path, leaf(path))


@dataclass(frozen=True)
class ArticulationGraph:
    """One articulation as the UsdPhysics parse delivers it.

    ``root`` is the prim carrying ``PhysicsArticulationRootAPI`` and ``root_kind`` says what it is
    (``"body"``, ``"joint"`` or ``"ancestor"``). ``bodies`` and ``joints`` are the articulation's members in
    sorted path order (joints include excluded and world-anchored ones).
    """

    root: str
    root_kind: str
    bodies: tuple[Body, ...]
    joints: tuple[Joint, ...]
    source: str = ""
    robot: RobotSchema | None = None
    composition_errors: tuple[str, ...] = ()
    """Messages of the stage's USD composition errors (missing referenced files, ...)."""
    instance_proxies: tuple[str, ...] = ()
    """Member prims (root, bodies, joints) that are instance proxies: physics authored inside an instanceable
    prim's prototype. Newton builds such articulations; PhysX (ovphysx 0.7) ignores that physics."""

    def body(self, path: str) -> Body:
        for b in self.bodies:
            if b.path == path:
                return b
        raise KeyError(path)


@dataclass(frozen=True)
class Topology:
    """Every articulation found in a stage (or under one root)."""

    articulations: tuple[ArticulationGraph, ...]
    source: str = ""

    def __iter__(self):
        return iter(self.articulations)

    def __len__(self) -> int:
        return len(self.articulations)

    @property
    def roots(self) -> tuple[str, ...]:
        return tuple(a.root for a in self.articulations)


@dataclass(frozen=True)
class ResolvedOrder:
    """An articulation's order under one convention.

    ``joints`` are DoF names in DoF order (as the engine spells them), ``bodies`` link names in link
    order. ``root_body`` is the path of the elected root link; ``loop_joints`` the joint paths left out
    of the tree (excluded, loop-closing or redundant).

    ``joint_labels`` and ``body_labels`` (``robot_schema`` only, else empty) run parallel to ``joints`` and
    ``bodies``: the robot schema's own names, i.e. the ``isaac:NameOverride`` / ``isaac:nameOverride`` where
    one is authored, else the engine name. ``joints``/``bodies`` always hold engine names, so that they can
    be mapped against a backend's names.
    """

    convention: str
    root: str
    joints: tuple[str, ...]
    bodies: tuple[str, ...]
    fixed_base: bool
    root_body: str = ""
    loop_joints: tuple[str, ...] = field(default=())
    joint_labels: tuple[str, ...] = field(default=())
    body_labels: tuple[str, ...] = field(default=())


def graph_from_edges(
    edges: Iterable[tuple[str, str | None, str | None] | tuple[str, str | None, str | None, str]],
    *,
    root: str,
    root_kind: str = "body",
    bodies: Sequence[str] = (),
    excluded: Iterable[str] = (),
    prefix: str = "/r",
) -> ArticulationGraph:
    """Build a graph from plain names: ``(joint, body0, body1[, type])`` with ``None`` for the world.

    Names become paths under ``prefix``; ``root`` is a body or joint name (or ``prefix`` for an ancestor).
    """
    ex = set(excluded)

    def p(name: str | None) -> str | None:
        return None if name is None else f"{prefix}/{name}"

    joints = []
    names = set(bodies)
    for edge in edges:
        jname, b0, b1 = edge[:3]
        jtype = JointType(edge[3]) if len(edge) > 3 else JointType.REVOLUTE
        names.update(n for n in (b0, b1) if n is not None)
        joints.append(Joint(p(jname), jtype, p(b0), p(b1), excluded=jname in ex))
    root_path = prefix if root_kind == "ancestor" else p(root)
    return ArticulationGraph(
        root=root_path,
        root_kind=root_kind,
        bodies=tuple(Body(p(n)) for n in sorted(names, key=lambda n: p(n))),
        joints=tuple(sorted(joints, key=lambda j: j.path)),
    )
