"""Random USD articulations for differential tests (hypothesis strategies + a pxr writer).

A spec is plain data, so hypothesis can shrink it; :func:`write_stage` authors it with pxr.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from hypothesis import strategies as st

JOINT_TYPES = ("revolute", "prismatic", "spherical", "fixed", "d6")
ROT_AXES = ("rotX", "rotY", "rotZ")
LIN_AXES = ("transX", "transY", "transZ")


@dataclass
class BodySpec:
    name: str
    nest_under: int | None = None  # index of the body whose prim holds this one (None: the asset prim)


@dataclass
class JointSpec:
    name: str
    type: str
    body0: int | None  # None = world
    body1: int | None
    excluded: bool = False
    under: int | None = None  # body prim that holds the joint prim (None: the asset prim)
    limits: tuple[tuple[str, float, float], ...] = ()  # D6 LimitAPI instances: (axis, low, high)


@dataclass
class ArticulationSpec:
    name: str
    bodies: list[BodySpec]
    joints: list[JointSpec]
    root_on: str  # "body" | "joint" | "ancestor"
    root_index: int = 0  # body index (root_on="body") or joint index (root_on="joint")

    def body_path(self, i: int) -> str:
        parts = []
        while i is not None:
            parts.append(self.bodies[i].name)
            i = self.bodies[i].nest_under
        return "/" + self.name + "/" + "/".join(reversed(parts))

    def joint_path(self, j: JointSpec) -> str:
        holder = f"/{self.name}" if j.under is None else self.body_path(j.under)
        return f"{holder}/{j.name}"

    @property
    def root_path(self) -> str:
        if self.root_on == "body":
            return self.body_path(self.root_index)
        if self.root_on == "joint":
            return self.joint_path(self.joints[self.root_index])
        return f"/{self.name}"


@dataclass
class StageSpec:
    articulations: list[ArticulationSpec] = field(default_factory=list)


# Few distinct letters so that leaf names repeat across parents (PhysX de-duplicates them).
idents = st.text(alphabet="abcAB_", min_size=1, max_size=3).map(lambda s: "n" + s)


@st.composite
def d6_limits(draw) -> tuple[tuple[str, float, float], ...]:
    out = []
    for axis in ROT_AXES + LIN_AXES:
        kind = draw(
            st.sampled_from(
                ["none", "locked", "free", "free", "equal"] if axis in ROT_AXES else ["none", "none", "locked", "free"]
            )
        )
        if kind == "locked":
            out.append((axis, 1.0, -1.0))
        elif kind == "free":
            out.append((axis, -0.5, 0.5))
        elif kind == "equal":
            out.append((axis, 0.0, 0.0))
    return tuple(out)


@st.composite
def articulations(draw, name: str = "robot", max_bodies: int = 40) -> ArticulationSpec:
    n = draw(st.integers(2, max_bodies))
    parents = [None] + [draw(st.integers(0, i - 1)) for i in range(1, n)]
    bodies: list[BodySpec] = []
    for i in range(n):
        nest = parents[i] if i and draw(st.integers(0, 5)) == 0 else None
        bodies.append(BodySpec("", nest))
    # unique sibling names (prims under one parent), repeats allowed elsewhere
    used: dict[int | None, set[str]] = {}

    def fresh(holder: int | None) -> str:
        taken = used.setdefault(holder, set())
        nm = draw(idents)
        if nm in taken:  # siblings need unique names; a digit suffix keeps it unique (idents have no digits)
            nm = f"{nm}{len(taken)}"
        taken.add(nm)
        return nm

    for b in bodies:
        b.name = fresh(b.nest_under)
    joints: list[JointSpec] = []

    def add_joint(b0: int | None, b1: int | None, jtype: str, excluded: bool = False) -> JointSpec:
        under = draw(st.sampled_from([None, b0] if b0 is not None else [None]))
        j = JointSpec(fresh(under), jtype, b0, b1, excluded, under, draw(d6_limits()) if jtype == "d6" else ())
        joints.append(j)
        return j

    # at most one reversed joint (body0 is the child), in a quarter of the articulations
    reversed_child = draw(st.integers(1, n - 1)) if draw(st.integers(0, 3)) == 0 else None
    for i in range(1, n):
        jtype = draw(st.sampled_from(JOINT_TYPES))
        p = parents[i]
        if i == reversed_child:
            add_joint(i, p, jtype)
        else:
            add_joint(p, i, jtype)
    for _ in range(draw(st.integers(0, 2))):  # loop-closing joints
        a, b = draw(st.integers(0, n - 1)), draw(st.integers(0, n - 1))
        if a != b and parents[a] != b and parents[b] != a:
            add_joint(a, b, draw(st.sampled_from(JOINT_TYPES)), excluded=draw(st.booleans()))

    anchors = st.one_of(st.just(0), st.integers(0, n - 1))  # mostly the tree's own root
    root_on = draw(st.sampled_from(["body", "joint", "ancestor"]))
    root_index = 0
    if root_on == "body":
        root_index = draw(st.integers(0, n - 1))
    elif root_on == "joint":
        add_joint(None, draw(anchors), "fixed")
        root_index = len(joints) - 1
    else:
        for _ in range(draw(st.integers(0, 2))):  # world anchors
            add_joint(None, draw(anchors), "fixed")
    # random authoring order
    order = draw(st.permutations(range(len(joints))))
    joints = [joints[k] for k in order]
    if root_on == "joint":
        root_index = order.index(root_index)
    return ArticulationSpec(name, bodies, joints, root_on, root_index)


@st.composite
def stages(draw, max_bodies: int = 40) -> StageSpec:
    count = draw(st.integers(1, 2))
    return StageSpec([draw(articulations(name=f"robot{k}", max_bodies=max_bodies)) for k in range(count)])


def write_stage(spec: StageSpec, path: Path) -> Path:
    """Author ``spec`` as a USD layer at ``path``."""
    from pxr import Gf, Sdf, Usd, UsdGeom, UsdPhysics

    stage = Usd.Stage.CreateNew(str(path))
    UsdGeom.SetStageUpAxis(stage, UsdGeom.Tokens.z)
    UsdGeom.SetStageMetersPerUnit(stage, 1.0)
    UsdPhysics.Scene.Define(stage, "/physicsScene")
    for k, art in enumerate(spec.articulations):
        top = UsdGeom.Xform.Define(stage, f"/{art.name}")
        top.AddTranslateOp().Set(Gf.Vec3d(3.0 * k, 0, 0))
        # parents first so nested prims have a holder
        for i in sorted(range(len(art.bodies)), key=lambda i: art.body_path(i).count("/")):
            prim = UsdGeom.Xform.Define(stage, art.body_path(i)).GetPrim()
            UsdPhysics.RigidBodyAPI.Apply(prim)
            mass = UsdPhysics.MassAPI.Apply(prim)
            mass.CreateMassAttr(1.0)
            mass.CreateDiagonalInertiaAttr(Gf.Vec3f(0.01, 0.01, 0.01))
        for j in art.joints:
            jpath = art.joint_path(j)
            cls = {
                "revolute": UsdPhysics.RevoluteJoint,
                "prismatic": UsdPhysics.PrismaticJoint,
                "spherical": UsdPhysics.SphericalJoint,
                "fixed": UsdPhysics.FixedJoint,
                "d6": UsdPhysics.Joint,
            }[j.type]
            joint = cls.Define(stage, jpath)
            if j.type in ("revolute", "prismatic", "spherical"):
                joint.CreateAxisAttr("X")
            if j.body0 is not None:
                joint.CreateBody0Rel().SetTargets([Sdf.Path(art.body_path(j.body0))])
            if j.body1 is not None:
                joint.CreateBody1Rel().SetTargets([Sdf.Path(art.body_path(j.body1))])
            if j.excluded:
                joint.CreateExcludeFromArticulationAttr(True)
            for axis, low, high in j.limits:
                limit = UsdPhysics.LimitAPI.Apply(joint.GetPrim(), axis)
                limit.CreateLowAttr(low)
                limit.CreateHighAttr(high)
        UsdPhysics.ArticulationRootAPI.Apply(stage.GetPrimAtPath(art.root_path))
    stage.GetRootLayer().Save()
    return path
