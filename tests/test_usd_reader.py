"""The USD topology reader (``read_topology``) and the ``robot_schema`` convention on small authored stages.

Stages are built with pxr in memory (or in tmp_path where composition or an engine needs files). Claims about
what the engines do are asked of the engines themselves (``transfer.backends.engine_orders``) in the tests marked
``engines``.
"""

from __future__ import annotations

import itertools
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.usdgen import stages, write_stage
from transfer import build_name_map
from transfer.orders import (
    JointType,
    MjwarpRefusal,
    OrderingError,
    mjwarp_order,
    physx_order,
    read_topology,
    resolve_ordering,
    robot_schema_order,
)
from transfer.robot.usd import read_physics

pxr = pytest.importorskip("pxr")
from pxr import Gf, Sdf, Usd, UsdGeom, UsdPhysics  # noqa: E402

pytestmark = [
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
    pytest.mark.filterwarnings("ignore::RuntimeWarning"),
]

ROBOT_JOINTS = "isaac:physics:robotJoints"
ROBOT_LINKS = "isaac:physics:robotLinks"

# (joint, body0, body1, type): a base with a camera on a fixed mount, an arm, and a leg ending in a ball joint.
EDGES = (
    ("hip", "base", "thigh", "revolute"),
    ("knee", "thigh", "shin", "prismatic"),
    ("ankle", "shin", "foot", "spherical"),
    ("mount", "base", "camera", "fixed"),
    ("arm", "base", "arm", "revolute"),
)
PHYSX_JOINTS = ("arm", "hip", "knee", "ankle:0", "ankle:1", "ankle:2")  # breadth-first, revolute 'arm' < 'hip'
PHYSX_BODIES = ("base", "camera", "arm", "thigh", "shin", "foot")  # the fixed child first
MJWARP_JOINTS = ("arm", "hip", "knee", "ankle:0", "ankle:1", "ankle:2")  # depth-first by joint path
MJWARP_BODIES = ("base", "arm", "thigh", "shin", "foot", "camera")

_CLASSES = {
    "revolute": UsdPhysics.RevoluteJoint,
    "prismatic": UsdPhysics.PrismaticJoint,
    "spherical": UsdPhysics.SphericalJoint,
    "fixed": UsdPhysics.FixedJoint,
    "d6": UsdPhysics.Joint,
}


# --- authoring helpers ------------------------------------------------------------------------------------


def new_stage(path: Path | None = None) -> Usd.Stage:
    stage = Usd.Stage.CreateNew(str(path)) if path is not None else Usd.Stage.CreateInMemory()
    UsdGeom.SetStageUpAxis(stage, UsdGeom.Tokens.z)
    UsdGeom.SetStageMetersPerUnit(stage, 1.0)
    UsdPhysics.Scene.Define(stage, "/physicsScene")
    return stage


def add_body(stage: Usd.Stage, path: str) -> Usd.Prim:
    prim = UsdGeom.Xform.Define(stage, path).GetPrim()
    UsdPhysics.RigidBodyAPI.Apply(prim)
    mass = UsdPhysics.MassAPI.Apply(prim)
    mass.CreateMassAttr(1.0)
    mass.CreateDiagonalInertiaAttr(Gf.Vec3f(0.01, 0.01, 0.01))
    return prim


def add_joint(stage: Usd.Stage, path: str, body0: str | None, body1: str | None, kind: str = "revolute"):
    joint = _CLASSES[kind].Define(stage, path)
    if kind in ("revolute", "prismatic", "spherical"):
        joint.CreateAxisAttr("X")
    if body0 is not None:
        joint.CreateBody0Rel().SetTargets([Sdf.Path(body0)])
    if body1 is not None:
        joint.CreateBody1Rel().SetTargets([Sdf.Path(body1)])
    return joint


def author_robot(
    stage: Usd.Stage,
    top: str = "/robot",
    edges=EDGES,
    root: str = "base",
    *,
    geometry: str | None = None,
) -> str:
    """Bodies ``{top}/<body>``, joints ``{top}/joints/<joint>``; the root API on ``{top}/<root>`` (a body or a
    joint path relative to ``top``, or ``""`` for ``top`` itself). Returns the root path.

    With ``geometry`` (a layer holding ``/geo``), each link references it and is instanceable, with the
    physics on the link prim (the instance) and only geometry in the prototype.
    """
    UsdGeom.Xform.Define(stage, top)
    UsdGeom.Xform.Define(stage, f"{top}/joints")
    for body in dict.fromkeys(b for _, b0, b1, *_ in edges for b in (b0, b1) if b is not None):
        prim = add_body(stage, f"{top}/{body}")
        if geometry is not None:
            prim.GetReferences().AddReference(geometry, "/geo")
            prim.SetInstanceable(True)
    for name, b0, b1, kind in edges:
        add_joint(stage, f"{top}/joints/{name}", b0 and f"{top}/{b0}", b1 and f"{top}/{b1}", kind)
    root_path = f"{top}/{root}" if root else top
    UsdPhysics.ArticulationRootAPI.Apply(stage.GetPrimAtPath(root_path))
    return root_path


def set_targets(stage: Usd.Stage, prim: str, rel: str, targets) -> None:
    stage.GetPrimAtPath(prim).CreateRelationship(rel, custom=True).SetTargets([Sdf.Path(t) for t in targets])


def author_schema(stage: Usd.Stage, on: str, joints, links, *, api: bool = True) -> None:
    prim = stage.GetPrimAtPath(on)
    if api:
        prim.AddAppliedSchema("IsaacRobotAPI")  # unregistered here: the reader reads the composed apiSchemas
    set_targets(stage, on, ROBOT_JOINTS, joints)
    set_targets(stage, on, ROBOT_LINKS, links)


def name_override(stage: Usd.Stage, prim: str, value: str, attr: str = "isaac:nameOverride") -> None:
    stage.GetPrimAtPath(prim).CreateAttribute(attr, Sdf.ValueTypeNames.String).Set(value)


def orders(graph) -> dict:
    """Every convention's (joints, bodies, fixed_base), or the refusal's type, for comparisons."""
    out = {}
    for name, fn in (("physx", physx_order), ("mjwarp", mjwarp_order), ("robot_schema", robot_schema_order)):
        try:
            o = fn(graph)
        except OrderingError as exc:
            out[name] = type(exc).__name__
            continue
        out[name] = None if o is None else (o.joints, o.bodies, o.fixed_base, o.joint_labels, o.body_labels)
    return out


def one(asset, root=None):
    topo = read_topology(asset, root)
    assert len(topo) == 1, topo.roots
    return topo.articulations[0]


@pytest.fixture(scope="module")
def truth():
    pytest.importorskip("ovphysx")
    pytest.importorskip("newton")
    return pytest.importorskip("transfer.backends").engine_orders


def engine_orders(truth, path: Path) -> tuple[dict, dict | str]:
    """{root: (joints, bodies, fixed_base)} from PhysX, and from Newton (or Newton's refusal reason)."""
    from transfer.backends.base import EngineRefusal

    px = {o.root: (o.joints, o.bodies, o.fixed_base) for o in truth("physx", path)}
    try:
        nw = {o.root: (o.joints, o.bodies, o.fixed_base) for o in truth("newton", path)}
    except EngineRefusal as exc:
        nw = exc.reason
    return px, nw


# --- the flat robot ---------------------------------------------------------------------------------------


def test_flat_robot_reads_bodies_joints_root_and_orders():
    stage = new_stage()
    author_robot(stage)
    g = one(stage)
    assert (g.root, g.root_kind) == ("/robot/base", "body")
    assert [b.path for b in g.bodies] == sorted(f"/robot/{b}" for b in PHYSX_BODIES)
    assert all(b.enabled and not b.kinematic for b in g.bodies)
    knee = next(j for j in g.joints if j.name == "knee")
    assert (knee.type, knee.body0, knee.body1, knee.axis) == (JointType.PRISMATIC, "/robot/thigh", "/robot/shin", "X")
    assert {j.name: j.type for j in g.joints}["ankle"] is JointType.SPHERICAL
    px, mj = physx_order(g), mjwarp_order(g)
    assert (px.joints, px.bodies, px.fixed_base) == (PHYSX_JOINTS, PHYSX_BODIES, False)
    assert (mj.joints, mj.bodies) == (MJWARP_JOINTS, MJWARP_BODIES)
    assert g.robot is None and robot_schema_order(g) is None


def test_reader_flags_excluded_disabled_and_kinematic():
    stage = new_stage()
    author_robot(stage)
    add_joint(stage, "/robot/joints/loop", "/robot/foot", "/robot/thigh").CreateExcludeFromArticulationAttr(True)
    UsdPhysics.Joint(stage.GetPrimAtPath("/robot/joints/arm")).CreateJointEnabledAttr(False)
    UsdPhysics.RigidBodyAPI(stage.GetPrimAtPath("/robot/camera")).CreateKinematicEnabledAttr(True)
    g = one(stage)
    joints = {j.name: j for j in g.joints}
    assert joints["loop"].excluded and not joints["hip"].excluded
    assert "arm" not in joints and "/robot/arm" not in {b.path for b in g.bodies}  # a disabled joint links nothing
    assert not read_physics(stage).joints["/robot/joints/arm"].enabled and joints["hip"].enabled
    assert g.body("/robot/camera").kinematic and not g.body("/robot/camera").is_link
    order = physx_order(g)
    assert order.loop_joints == ("/robot/joints/loop", "/robot/joints/mount")  # the mount now leads to no link
    assert order.bodies == ("base", "thigh", "shin", "foot")  # neither the kinematic camera nor the detached arm


# --- 1. composition ---------------------------------------------------------------------------------------


def _library(tmp_path: Path, *, schema: bool = True, geometry: str | None = None, name: str = "robot_lib") -> Path:
    path = tmp_path / f"{name}.usda"
    stage = new_stage(path)
    author_robot(stage, geometry=geometry)
    if schema:
        author_schema(
            stage,
            "/robot",
            ["/robot/joints/knee", "/robot/joints/ankle", "/robot/joints/hip", "/robot/joints/arm"],
            [f"/robot/{b}" for b in ("foot", "shin", "thigh", "base", "arm", "camera")],
        )
        name_override(stage, "/robot/shin", "lower_leg")
    stage.SetDefaultPrim(stage.GetPrimAtPath("/robot"))
    stage.Save()
    return path


def _geometry(tmp_path: Path) -> Path:
    path = tmp_path / "geo.usda"
    stage = Usd.Stage.CreateNew(str(path))
    UsdGeom.Xform.Define(stage, "/geo")
    UsdGeom.Cube.Define(stage, "/geo/mesh").CreateSizeAttr(0.1)
    UsdGeom.Xform.Define(stage, "/geo/frame")
    stage.Save()
    return path


def _compose(tmp_path: Path, lib: Path, mode: str) -> Path:
    path = tmp_path / f"{mode}.usda"
    stage = new_stage(path)
    prim = UsdGeom.Xform.Define(stage, "/World/robot").GetPrim()
    if mode == "payload":
        prim.GetPayloads().AddPayload(str(lib))
    else:
        prim.GetReferences().AddReference(str(lib))
    stage.Save()
    return path


@pytest.mark.parametrize("mode", ["reference", "payload", "instanceable_links"])
def test_composed_robot_orders_equal_the_flat_robot(tmp_path, mode):
    flat = one(_library(tmp_path, name="flat"))
    geometry = str(_geometry(tmp_path)) if mode == "instanceable_links" else None
    lib = _library(tmp_path, geometry=geometry)
    path = _compose(tmp_path, lib, "payload" if mode == "payload" else "reference")
    g = one(path)  # a path opens with every payload loaded
    assert g.root == "/World/robot/base" and g.instance_proxies == ()
    assert {b.path for b in g.bodies} == {b.path.replace("/robot", "/World/robot", 1) for b in flat.bodies}
    hip = next(j for j in g.joints if j.name == "hip")
    assert (hip.body0, hip.body1) == ("/World/robot/base", "/World/robot/thigh")  # targets remapped
    assert g.robot.prim == "/World/robot" and g.robot.joints[0] == "/World/robot/joints/knee"
    assert orders(g) == orders(flat)
    assert orders(g)["robot_schema"][0] == ("knee", "ankle:0", "ankle:1", "ankle:2", "hip", "arm")
    if mode == "instanceable_links":
        stage = Usd.Stage.Open(str(path))
        assert all(stage.GetPrimAtPath(b.path).IsInstance() for b in g.bodies)


def test_joint_targets_inside_instanceable_links_resolve_to_the_link(tmp_path):
    geometry = str(_geometry(tmp_path))
    stage = new_stage()
    author_robot(stage, geometry=geometry)
    # point the hip at prims inside the instances (instance proxies): they resolve to the enclosing links
    UsdPhysics.Joint(stage.GetPrimAtPath("/robot/joints/hip")).GetBody0Rel().SetTargets(["/robot/base/frame"])
    UsdPhysics.Joint(stage.GetPrimAtPath("/robot/joints/hip")).GetBody1Rel().SetTargets(["/robot/thigh/mesh"])
    assert stage.GetPrimAtPath("/robot/thigh/mesh").IsInstanceProxy()
    g = one(stage)
    hip = next(j for j in g.joints if j.name == "hip")
    assert (hip.body0, hip.body1) == ("/robot/base", "/robot/thigh")
    assert physx_order(g).joints == PHYSX_JOINTS


def test_unloaded_payload_is_reported_not_skipped(tmp_path):
    lib = _library(tmp_path)
    path = _compose(tmp_path, lib, "payload")
    with pytest.raises(OrderingError, match=r"not loaded \(/World/robot\)") as err:
        read_topology(Usd.Stage.Open(str(path), Usd.Stage.LoadNone))
    assert "No articulation" in str(err.value) and "stage.Load" in str(err.value)
    # a loaded robot next to an unloaded payload: the list of articulations may be incomplete
    stage = Usd.Stage.Open(str(path), Usd.Stage.LoadNone)
    stage.GetRootLayer().subLayerPaths.append(str(lib))  # /robot, loaded (no payload)
    with pytest.raises(OrderingError, match=r"may be incomplete.*pass root="):
        read_topology(stage)
    assert read_topology(stage, root="/robot/base").roots == ("/robot/base",)
    stage.Load("/World/robot")
    assert read_topology(stage).roots == ("/World/robot/base", "/robot/base")


def _instanced_robots(tmp_path: Path) -> Path:
    lib = _library(tmp_path, schema=False, name="instanced_lib")
    path = tmp_path / "instanced.usda"
    stage = new_stage(path)
    for k in (1, 2):
        prim = UsdGeom.Xform.Define(stage, f"/World/r{k}").GetPrim()
        prim.GetReferences().AddReference(str(lib))
        prim.SetInstanceable(True)  # the whole robot, physics included, lives in the prototype
        UsdGeom.XformCommonAPI(prim).SetTranslate(Gf.Vec3d(2.0 * k, 0, 0))
    stage.Save()
    return path


def test_physics_inside_instance_prototypes_is_read_and_flagged(tmp_path):
    g1, g2 = read_topology(_instanced_robots(tmp_path))
    assert (g1.root, g2.root) == ("/World/r1/base", "/World/r2/base")
    assert "/World/r1/base" in g1.instance_proxies and "/World/r1/joints/hip" in g1.instance_proxies
    assert mjwarp_order(g1).joints == MJWARP_JOINTS
    with pytest.raises(OrderingError, match=r"instance proxies.*PhysX ignores.*instanceable = false"):
        physx_order(g1)
    with pytest.raises(OrderingError, match="instance proxies"):
        resolve_ordering(g2, "physx")


@pytest.mark.engines
def test_engines_on_instanced_robots_and_instanceable_links(truth, tmp_path):
    # Whole robots inside instance prototypes: PhysX builds no articulation, Newton builds both.
    path = _instanced_robots(tmp_path)
    px, nw = engine_orders(truth, path)
    assert px == {}
    assert nw == {g.root: (MJWARP_JOINTS, MJWARP_BODIES, False) for g in read_topology(path)}
    # Instanceable links with the physics on the instance prims: both engines equal the emulation.
    path = _compose(tmp_path, _library(tmp_path, geometry=str(_geometry(tmp_path))), "reference")
    g = one(path)
    px, nw = engine_orders(truth, path)
    assert px == {g.root: (PHYSX_JOINTS, PHYSX_BODIES, False)} == {g.root: _triple(physx_order(g))}
    assert nw == {g.root: (MJWARP_JOINTS, MJWARP_BODIES, False)} == {g.root: _triple(mjwarp_order(g))}


def _triple(order) -> tuple:
    return (order.joints, order.bodies, order.fixed_base)


# --- 2. several articulations -----------------------------------------------------------------------------


def _two_robots() -> Usd.Stage:
    stage = new_stage()
    author_robot(stage, "/left")
    author_robot(stage, "/right", edges=(("j", "base", "link", "revolute"),))
    return stage


def test_several_articulations_and_root_selection():
    stage = _two_robots()
    topo = read_topology(stage)
    assert topo.roots == ("/left/base", "/right/base")
    assert physx_order(topo.articulations[0]).joints == PHYSX_JOINTS
    right = read_topology(stage, root="/right/base")
    assert right.roots == ("/right/base",)
    assert resolve_ordering(stage, "physx", root="/right/base").joints == ("j",)
    assert resolve_ordering(topo, "mjwarp", root="/left/base").bodies == MJWARP_BODIES


def test_several_articulations_need_a_root():
    stage = _two_robots()
    with pytest.raises(
        OrderingError, match=r"2 articulations \['/left/base', '/right/base'\].*a run takes one robot.*root= picks it"
    ):
        resolve_ordering(stage, "physx")
    with pytest.raises(OrderingError, match=r"No articulation root at /nope.*\['/left/base', '/right/base'\]"):
        read_topology(stage, root="/nope")
    with pytest.raises(OrderingError, match=r"No articulation at /nope.*\['/left/base', '/right/base'\]"):
        resolve_ordering(read_topology(stage), "physx", root="/nope")


@pytest.mark.parametrize("second", ["/robot", "/robot/thigh"], ids=["nested", "same-mechanism"])
def test_two_root_apis_on_one_mechanism_are_refused(second):
    stage = new_stage()
    author_robot(stage)
    UsdPhysics.ArticulationRootAPI.Apply(stage.GetPrimAtPath(second))
    with pytest.raises(OrderingError, match=rf"on {second}.*same bodies.*Remove the API from all but one"):
        read_topology(stage)


@pytest.mark.engines
def test_engines_disagree_on_two_root_apis_on_one_mechanism(truth, tmp_path):
    """Why the reader refuses: PhysX keeps one articulation, Newton builds one per root API."""
    path = tmp_path / "nested_roots.usda"
    stage = new_stage(path)
    author_robot(stage)
    UsdPhysics.ArticulationRootAPI.Apply(stage.GetPrimAtPath("/robot/thigh"))
    stage.Save()
    px, nw = engine_orders(truth, path)
    assert len(px) == 1 and len(nw) == 2


# --- 3. nested bodies and targets below a body ------------------------------------------------------------


def _nested_bodies(path: Path | None = None) -> Usd.Stage:
    stage = new_stage(path)
    UsdGeom.Xform.Define(stage, "/robot")
    add_body(stage, "/robot/base")
    add_body(stage, "/robot/base/arm")  # a body under another body's prim
    add_body(stage, "/robot/base/arm/hand")
    UsdGeom.Xform.Define(stage, "/robot/base/arm/visuals/mesh")
    UsdGeom.Xform.Define(stage, "/robot/base/frame")
    add_joint(stage, "/robot/base/shoulder", "/robot/base/frame", "/robot/base/arm/visuals/mesh")
    add_joint(stage, "/robot/base/arm/wrist", "/robot/base/arm", "/robot/base/arm/hand")
    UsdPhysics.ArticulationRootAPI.Apply(stage.GetPrimAtPath("/robot/base"))
    return stage


def test_nested_bodies_and_targets_below_a_body():
    g = one(_nested_bodies())
    assert [b.path for b in g.bodies] == ["/robot/base", "/robot/base/arm", "/robot/base/arm/hand"]
    shoulder = next(j for j in g.joints if j.name == "shoulder")
    assert (shoulder.body0, shoulder.body1) == ("/robot/base", "/robot/base/arm")  # the enclosing bodies
    assert physx_order(g).bodies == ("base", "arm", "hand")
    assert mjwarp_order(g).joints == ("shoulder", "wrist")


@pytest.mark.engines
def test_nested_bodies_match_the_engines(truth, tmp_path):
    path = tmp_path / "nested.usda"
    _nested_bodies(path).Save()
    g = one(path)
    assert engine_orders(truth, path) == ({g.root: _triple(physx_order(g))}, {g.root: _triple(mjwarp_order(g))})


# --- 4. reversed joints, joints to the world, base type ---------------------------------------------------


def test_reversed_joint_keeps_the_physx_order_and_newton_refuses_it():
    stage = new_stage()
    edges = tuple((j, b1, b0, k) if j == "knee" else (j, b0, b1, k) for j, b0, b1, k in EDGES)
    author_robot(stage, edges=edges)
    g = one(stage)
    knee = next(j for j in g.joints if j.name == "knee")
    assert (knee.body0, knee.body1) == ("/robot/shin", "/robot/thigh")  # body0 is the child
    assert physx_order(g).joints == PHYSX_JOINTS and physx_order(g).bodies == PHYSX_BODIES
    with pytest.raises(MjwarpRefusal, match=r"Reversed joints are not supported: .*/robot/joints/knee"):
        mjwarp_order(g)


@pytest.mark.parametrize("side", ["body0", "body1"])
def test_joint_to_the_world_on_either_side(side):
    stage = new_stage()
    world = ("anchor", None, "base", "fixed") if side == "body1" else ("anchor", "base", None, "fixed")
    author_robot(stage, edges=(world, *EDGES), root="joints/anchor")
    g = one(stage)
    anchor = next(j for j in g.joints if j.name == "anchor")
    assert (anchor.body0, anchor.body1) == ((None, "/robot/base") if side == "body1" else ("/robot/base", None))
    assert g.root_kind == "joint"
    order = physx_order(g)
    assert (order.joints, order.bodies, order.fixed_base, order.root_body) == (
        PHYSX_JOINTS,
        PHYSX_BODIES,
        True,
        "/robot/base",
    )


ANCHOR = ("anchor", None, "base", "fixed")
BASE_CASES = {  # name: (edges, root, root_kind, physx fixed_base)
    "root API on a body": (EDGES, "base", "body", False),
    "root API on a body that is also anchored": ((ANCHOR, *EDGES), "base", "body", False),
    "root API on the fixed joint to the world": ((ANCHOR, *EDGES), "joints/anchor", "joint", True),
    "root API on an ancestor, floating": (EDGES, "", "ancestor", False),
    "root API on an ancestor, anchored": ((ANCHOR, *EDGES), "", "ancestor", True),
}


@pytest.mark.parametrize("case", list(BASE_CASES))
def test_base_type_by_root_placement(case):
    edges, root, kind, fixed = BASE_CASES[case]
    stage = new_stage()
    author_robot(stage, edges=edges, root=root)
    g = one(stage)
    assert g.root_kind == kind
    assert physx_order(g).fixed_base is fixed
    assert mjwarp_order(g).fixed_base is (ANCHOR in edges)  # Newton: a fixed joint to the world at the root


@pytest.mark.engines
def test_base_type_matches_the_engines(truth, tmp_path):
    for k, (edges, root, _, _) in enumerate(BASE_CASES.values()):
        path = tmp_path / f"base_{k}.usda"
        stage = new_stage(path)
        author_robot(stage, edges=edges, root=root)
        stage.Save()
        g = one(path)
        px, nw = engine_orders(truth, path)
        assert px == {g.root: _triple(physx_order(g))}, path
        assert nw == {g.root: _triple(mjwarp_order(g))}, path


# --- 5. D6 limits and DoF names ---------------------------------------------------------------------------

D6_LIMITS = {
    "rotX": (1.0, -1.0),
    "rotY": (-0.5, 0.5),
    "rotZ": (None, None),
    "transX": (0.0, 0.0),
    "transY": (0.25, None),
}


def _d6_robot(stage: Usd.Stage) -> None:
    author_robot(stage, edges=(*EDGES, ("wrist", "arm", "hand", "d6")))
    prim = stage.GetPrimAtPath("/robot/joints/wrist")
    for axis, (low, high) in D6_LIMITS.items():
        limit = UsdPhysics.LimitAPI.Apply(prim, axis)
        if low is not None:
            limit.CreateLowAttr(low)
        if high is not None:
            limit.CreateHighAttr(high)


def test_d6_limits_are_read_per_axis():
    stage = new_stage()
    _d6_robot(stage)
    wrist = next(j for j in one(stage).joints if j.name == "wrist")
    assert wrist.type is JointType.D6
    assert wrist.limits == (
        ("rotX", 1.0, -1.0),  # locked
        ("rotY", -0.5, 0.5),
        ("rotZ", None, None),  # LimitAPI applied, no values authored
        ("transX", 0.0, 0.0),
        ("transY", 0.25, None),
    )
    assert all(j.limits == () for j in one(stage).joints if j.type is not JointType.D6)


def test_d6_dof_names_per_convention():
    stage = new_stage()
    _d6_robot(stage)
    g = one(stage)
    # PhysX: rotational axes not locked (low > high), by axis index. Newton: axes with low < high (unauthored
    # bounds are infinite), linear first, by ordinal.
    assert physx_order(g).joints == (*PHYSX_JOINTS[:2], "wrist:1", "wrist:2", *PHYSX_JOINTS[2:])
    assert mjwarp_order(g).joints == ("arm", "wrist:0", "wrist:1", "wrist:2", *MJWARP_JOINTS[1:])


@pytest.mark.engines
def test_d6_dof_names_match_the_engines(truth, tmp_path):
    path = tmp_path / "d6.usda"
    stage = new_stage(path)
    _d6_robot(stage)
    stage.Save()
    g = one(path)
    px, nw = engine_orders(truth, path)
    assert px == {g.root: _triple(physx_order(g))}
    assert nw == {g.root: _triple(mjwarp_order(g))}


# --- 6. bad inputs ----------------------------------------------------------------------------------------


def test_missing_file_names_the_path(tmp_path):
    missing = tmp_path / "nope" / "robot.usda"
    for call in (lambda: read_topology(missing), lambda: resolve_ordering(str(missing), "physx")):
        with pytest.raises(FileNotFoundError, match=str(missing)):
            call()


def test_unreadable_file_and_wrong_type(tmp_path):
    bad = tmp_path / "robot.usda"
    bad.write_text("this is not USD")
    with pytest.raises(OrderingError, match=f"Could not open USD file {bad}"):
        read_topology(bad)
    with pytest.raises(TypeError, match="USD file path or a Usd.Stage, got int"):
        read_topology(3)


def test_no_articulation_says_how_to_fix(tmp_path):
    path = tmp_path / "no_root.usda"
    stage = new_stage(path)
    author_robot(stage)
    UsdPhysics.ArticulationRootAPI(stage.GetPrimAtPath("/robot/base"))
    stage.GetPrimAtPath("/robot/base").RemoveAPI(UsdPhysics.ArticulationRootAPI)
    stage.Save()
    with pytest.raises(OrderingError, match=rf"No articulation in {path}\. Apply PhysicsArticulationRootAPI"):
        read_topology(path)


def test_missing_joint_target_names_joint_and_target():
    stage = new_stage()
    author_robot(stage)
    UsdPhysics.Joint(stage.GetPrimAtPath("/robot/joints/knee")).GetBody0Rel().SetTargets(["/robot/thgh"])
    with pytest.raises(OrderingError, match=r"Joint /robot/joints/knee: physics:body0 targets /robot/thgh, which"):
        read_topology(stage)


@pytest.mark.parametrize("body1", ["/robot/shin", "/robot/shin/visual"], ids=["same-prim", "below-the-body"])
def test_joint_connecting_a_body_to_itself(body1):
    stage = new_stage()
    author_robot(stage)
    UsdGeom.Xform.Define(stage, "/robot/shin/visual")
    joint = UsdPhysics.Joint(stage.GetPrimAtPath("/robot/joints/knee"))
    joint.GetBody0Rel().SetTargets(["/robot/shin"])
    joint.GetBody1Rel().SetTargets([body1])
    with pytest.raises(OrderingError, match="Joint /robot/joints/knee connects body /robot/shin to itself"):
        read_topology(stage)


def test_robot_schema_requested_without_one():
    stage = new_stage()
    author_robot(stage)
    with pytest.raises(OrderingError, match=r"/robot/base authors no robot schema.*Use physx, mjwarp"):
        resolve_ordering(stage, "robot_schema")


def test_explicit_list_that_is_not_a_permutation():
    stage = new_stage()
    author_robot(stage)
    order = resolve_ordering(stage, list(reversed(PHYSX_JOINTS)))
    assert order.convention == "explicit" and order.joints == tuple(reversed(PHYSX_JOINTS))
    assert resolve_ordering(stage, list(MJWARP_BODIES)).bodies == MJWARP_BODIES
    with pytest.raises(
        OrderingError, match=r"joint names of /robot/base.*missing.*'ankle:2'.*not in the backend.*'toe'"
    ):
        resolve_ordering(stage, [*PHYSX_JOINTS[:-1], "toe"])
    with pytest.raises(OrderingError, match=r"body names of /robot/base.*missing.*'camera'.*not in the backend.*'cam'"):
        resolve_ordering(stage, [*PHYSX_BODIES[:1], "cam", *PHYSX_BODIES[2:]])
    with pytest.raises(ValueError, match="needs a convention"):
        resolve_ordering(Path("/does/not/matter.usda"), None)


# --- 7. robot_schema --------------------------------------------------------------------------------------

SCHEMA_JOINTS = ("knee", "mount", "ankle", "arm", "hip")  # the fixed mount carries no DoF
SCHEMA_LINKS = ("foot", "base", "shin", "camera", "thigh", "arm")


def _schema_robot(on: str = "/robot", root: str = "base") -> Usd.Stage:
    stage = new_stage()
    author_robot(stage, root=root)
    author_schema(stage, on, [f"/robot/joints/{j}" for j in SCHEMA_JOINTS], [f"/robot/{b}" for b in SCHEMA_LINKS])
    return stage


@pytest.mark.parametrize(("on", "root"), [("/robot", "base"), ("/robot/base", "base"), ("/robot", "")])
def test_robot_schema_order_is_the_authored_order(on, root):
    g = one(_schema_robot(on, root))
    assert g.robot.prim == on
    order = resolve_ordering(g, "robot_schema")
    assert order.joints == ("knee", "ankle:0", "ankle:1", "ankle:2", "arm", "hip")  # the spherical ankle: 3 DoFs
    assert order.bodies == SCHEMA_LINKS
    assert order.joint_labels == order.joints and order.body_labels == order.bodies
    px = physx_order(g)
    assert (order.fixed_base, order.root_body) == (px.fixed_base, px.root_body)


def test_robot_schema_maps_against_the_physx_names():
    g = one(_schema_robot())
    px, rs = physx_order(g), robot_schema_order(g)
    joints = build_name_map("joint", px.joints, rs.joints)
    bodies = build_name_map("body", px.bodies, rs.bodies)
    assert tuple(joints.to_user(np.asarray(px.joints))) == rs.joints
    assert tuple(bodies.to_user(np.asarray(px.bodies))) == rs.bodies
    assert tuple(joints.to_backend(np.asarray(rs.joints))) == px.joints


def test_robot_schema_of_an_anchored_robot_follows_physx_base_type():
    stage = new_stage()
    author_robot(stage, edges=(ANCHOR, *EDGES))  # root API on the base body, which is also anchored
    author_schema(stage, "/robot", [f"/robot/joints/{j}" for j in ("anchor", *SCHEMA_JOINTS)], [])
    set_targets(stage, "/robot", ROBOT_LINKS, [f"/robot/{b}" for b in SCHEMA_LINKS])
    order = robot_schema_order(one(stage))
    assert order.joints[0] == "knee"  # the world anchor is no articulation DoF
    assert order.fixed_base is False  # as PhysX decides (test_base_type_matches_the_engines)


def test_name_overrides_label_the_order_and_keep_engine_names():
    stage = _schema_robot()
    name_override(stage, "/robot/joints/knee", "knee_pitch", "isaac:NameOverride")
    name_override(stage, "/robot/joints/ankle", "ankle_ball", "isaac:nameOverride")  # the other spelling
    name_override(stage, "/robot/joints/hip", "hip_lower", "isaac:nameOverride")
    name_override(stage, "/robot/joints/hip", "hip_joint", "isaac:NameOverride")  # the joint spelling wins
    name_override(stage, "/robot/shin", "lower_leg", "isaac:nameOverride")
    name_override(stage, "/robot/thigh", "upper_leg", "isaac:NameOverride")
    g = one(stage)
    order = robot_schema_order(g)
    assert order.joints == ("knee", "ankle:0", "ankle:1", "ankle:2", "arm", "hip")
    assert order.joint_labels == ("knee_pitch", "ankle_ball:0", "ankle_ball:1", "ankle_ball:2", "arm", "hip_joint")
    assert order.bodies == SCHEMA_LINKS
    assert order.body_labels == ("foot", "base", "lower_leg", "camera", "upper_leg", "arm")
    # not physx's order: the map moves joints, and it carries physx's names into the schema's order
    nmap = build_name_map("joint", physx_order(g).joints, order.joints)
    assert nmap is not None and nmap.to_user(np.array(physx_order(g).joints)).tolist() == list(order.joints)


def test_name_overrides_that_collide_are_refused():
    stage = _schema_robot()
    name_override(stage, "/robot/joints/knee", "hip", "isaac:NameOverride")
    with pytest.raises(OrderingError, match=r"several joints of articulation /robot/base are named \['hip'\]"):
        robot_schema_order(one(stage))


def test_repeated_leaf_names_get_physx_deduplicated_engine_names():
    stage = new_stage()
    edges = (("j", "base", "left/leg", "revolute"), ("k", "base", "right/leg", "revolute"))
    UsdGeom.Xform.Define(stage, "/robot/left")
    UsdGeom.Xform.Define(stage, "/robot/right")
    author_robot(stage, edges=edges)
    author_schema(stage, "/robot", ["/robot/joints/k", "/robot/joints/j"], ["/robot/right/leg", "/robot/left/leg"])
    set_targets(stage, "/robot", ROBOT_LINKS, ["/robot/right/leg", "/robot/base", "/robot/left/leg"])
    g = one(stage)
    assert physx_order(g).bodies == ("base", "leg", "leg_0")
    assert robot_schema_order(g).bodies == ("leg_0", "base", "leg")


def test_nested_robot_prims_are_expanded_in_place():
    stage = new_stage()
    author_robot(stage, root="")  # root API moves below
    stage.GetPrimAtPath("/robot").RemoveAPI(UsdPhysics.ArticulationRootAPI)
    # /robot/leg is a nested robot (its own schema) holding the leg's joints and links
    UsdGeom.Xform.Define(stage, "/robot/leg")
    author_schema(
        stage,
        "/robot/leg",
        ["/robot/joints/ankle", "/robot/joints/knee", "/robot/joints/hip"],
        ["/robot/thigh", "/robot/shin", "/robot/foot"],
    )
    author_schema(
        stage,
        "/robot",
        ["/robot/joints/arm", "/robot/leg", "/robot/joints/mount"],
        ["/robot/base", "/robot/leg", "/robot/camera", "/robot/arm"],
    )
    UsdPhysics.ArticulationRootAPI.Apply(stage.GetPrimAtPath("/robot/base"))
    order = robot_schema_order(one(stage))
    assert order.joints == ("arm", "ankle:0", "ankle:1", "ankle:2", "knee", "hip")
    assert order.bodies == ("base", "thigh", "shin", "foot", "camera", "arm")


def test_the_enclosing_robot_is_used_when_the_root_sits_in_a_nested_robot():
    stage = new_stage()
    UsdGeom.Xform.Define(stage, "/robot")
    author_robot(stage, "/robot/body")  # the root API sits on /robot/body/base, inside the nested robot
    author_schema(
        stage,
        "/robot/body",
        [f"/robot/body/joints/{j}" for j in SCHEMA_JOINTS],
        [f"/robot/body/{b}" for b in SCHEMA_LINKS],
    )
    add_body(stage, "/robot/gripper")
    add_joint(stage, "/robot/grip", "/robot/body/arm", "/robot/gripper")
    author_schema(stage, "/robot", ["/robot/grip", "/robot/body"], ["/robot/gripper", "/robot/body"])
    g = one(stage)
    assert g.root == "/robot/body/base" and g.robot.prim == "/robot"  # /robot lists /robot/body as nested
    order = robot_schema_order(g)
    assert order.joints == ("grip", "knee", "ankle:0", "ankle:1", "ankle:2", "arm", "hip")
    assert order.bodies == ("gripper", *SCHEMA_LINKS)


def test_nested_robot_cycle_is_refused():
    stage = _schema_robot()
    UsdGeom.Xform.Define(stage, "/robot/sub")
    author_schema(stage, "/robot/sub", ["/robot"], [])
    set_targets(stage, "/robot", ROBOT_JOINTS, ["/robot/sub", "/robot/joints/hip"])
    g = one(stage)
    assert physx_order(g).joints == PHYSX_JOINTS  # the other conventions are unaffected
    with pytest.raises(OrderingError, match=r"robot prim that .*lists itself"):
        robot_schema_order(g)


def test_unresolved_targets_are_reported_by_path():
    stage = _schema_robot()
    targets = [f"/robot/joints/{j}" for j in SCHEMA_JOINTS]
    set_targets(stage, "/robot", ROBOT_JOINTS, [*targets, "/robot/joints/toe", "/robot/joints/heel"])
    set_targets(stage, "/robot", ROBOT_LINKS, ["/robot/paw"])
    g = one(stage)  # reading succeeds; physx and mjwarp still resolve
    assert mjwarp_order(g).joints == MJWARP_JOINTS
    with pytest.raises(OrderingError) as err:
        resolve_ordering(g, "robot_schema")
    message = str(err.value)
    for missing in (
        "robotJoints -> /robot/joints/toe",
        "robotJoints -> /robot/joints/heel",
        "robotLinks -> /robot/paw",
    ):
        assert f"/robot.isaac:physics:{missing}" in message
    assert "Fix or remove" in message


def test_duplicate_targets_through_a_nested_robot_are_refused():
    stage = _schema_robot()
    UsdGeom.Xform.Define(stage, "/robot/leg")
    author_schema(stage, "/robot/leg", ["/robot/joints/knee"], [])
    set_targets(stage, "/robot", ROBOT_JOINTS, [*(f"/robot/joints/{j}" for j in SCHEMA_JOINTS), "/robot/leg"])
    with pytest.raises(OrderingError, match=r"robotJoints lists the same prim more than once: /robot/joints/knee"):
        robot_schema_order(one(stage))


def test_targets_outside_the_articulation_are_named():
    stage = _schema_robot()
    author_robot(stage, "/other", edges=(("j", "base", "link", "revolute"),))
    set_targets(stage, "/robot", ROBOT_LINKS, [*(f"/robot/{b}" for b in SCHEMA_LINKS), "/other/link"])
    with pytest.raises(OrderingError, match=r"not members of articulation /robot/base.*links \['/other/link'\]"):
        resolve_ordering(stage, "robot_schema", root="/robot/base")
    assert resolve_ordering(stage, "physx", root="/other/base").joints == ("j",)


def test_a_robot_schema_that_omits_a_dof_or_a_link_is_refused():
    stage = _schema_robot()
    set_targets(stage, "/robot", ROBOT_JOINTS, [f"/robot/joints/{j}" for j in ("knee", "ankle", "hip")])
    set_targets(stage, "/robot", ROBOT_LINKS, [f"/robot/{b}" for b in SCHEMA_LINKS if b != "camera"])
    with pytest.raises(
        OrderingError, match=r"robotJoints omits \['/robot/joints/arm'\].*robotLinks omits \['/robot/camera'\]"
    ):
        robot_schema_order(one(stage))


def test_robot_api_alone_is_a_robot_schema_with_nothing_listed():
    stage = new_stage()
    author_robot(stage)
    stage.GetPrimAtPath("/robot").AddAppliedSchema("IsaacRobotAPI")
    g = one(stage)
    assert g.robot is not None and g.robot.prim == "/robot" and g.robot.joints == ()
    with pytest.raises(OrderingError, match="robotJoints omits"):
        robot_schema_order(g)


@pytest.mark.engines
def test_robot_schema_maps_against_the_real_physx_names(truth, tmp_path):
    path = tmp_path / "schema.usda"
    stage = _schema_robot()
    stage.Export(str(path))
    (engine,) = truth("physx", path)
    rs = resolve_ordering(path, "robot_schema")
    joints = build_name_map("joint", engine.joints, rs.joints)
    bodies = build_name_map("body", engine.bodies, rs.bodies)
    assert tuple(joints.to_user(np.asarray(engine.joints))) == rs.joints
    assert tuple(bodies.to_user(np.asarray(engine.bodies))) == rs.bodies


# --- 8. properties ----------------------------------------------------------------------------------------

_DOFS = {"revolute": 1, "prismatic": 1, "spherical": 3, "fixed": 0}


@st.composite
def schema_robots(draw):
    """A random tree (unique names), its root placement, and a random authored order of joints and links."""
    n = draw(st.integers(2, 9))
    parents = [None] + [draw(st.integers(0, i - 1)) for i in range(1, n)]
    kinds = [draw(st.sampled_from(sorted(_DOFS))) for _ in range(1, n)]
    edges = tuple((f"j{i}", f"b{parents[i]}", f"b{i}", kinds[i - 1]) for i in range(1, n))
    root = draw(st.sampled_from(["b0", ""]))
    return edges, root, draw(st.permutations(range(n - 1))), draw(st.permutations(range(n)))


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(schema_robots())
def test_authored_orders_are_permutations_of_the_physx_order(robot):
    edges, root, joint_perm, link_perm = robot
    stage = new_stage()
    author_robot(stage, edges=edges, root=root)
    joints = [edges[k] for k in joint_perm]
    author_schema(stage, "/robot", [f"/robot/joints/{j[0]}" for j in joints], [f"/robot/b{k}" for k in link_perm])
    g = one(stage)
    px, rs = physx_order(g), robot_schema_order(g)
    expected = tuple(
        name if _DOFS[kind] == 1 else f"{name}:{i}" for name, _, _, kind in joints for i in range(_DOFS[kind])
    )
    assert rs.joints == expected
    assert rs.bodies == tuple(f"b{k}" for k in link_perm)
    assert sorted(rs.joints) == sorted(px.joints) and sorted(rs.bodies) == sorted(px.bodies)
    for kind, backend, user in (("joint", px.joints, rs.joints), ("body", px.bodies, rs.bodies)):
        nmap = build_name_map(kind, backend, user)
        permuted = np.asarray(backend) if nmap is None else nmap.to_user(np.asarray(backend))
        assert tuple(permuted) == user


_workdir = Path(tempfile.mkdtemp(prefix="transfer-usd-reader-"))
_counter = itertools.count()


def _summary(topo_roots_prefix: str, graph) -> dict:
    out = orders(graph)
    try:
        out["root_body"] = physx_order(graph).root_body.replace(topo_roots_prefix, "", 1)
    except OrderingError:
        out["root_body"] = None
    return out


@settings(deadline=None, suppress_health_check=list(HealthCheck))
@given(stages(max_bodies=12))
def test_a_reference_never_changes_the_order(spec):
    """Every generated articulation (nested bodies, loops, D6, reversed joints, two robots) referenced into
    another layer under /World gives the same orders as authored flat, refusals included."""
    k = next(_counter)
    flat = write_stage(spec, _workdir / f"flat_{k}.usda")
    path = _workdir / f"ref_{k}.usda"
    stage = new_stage(path)
    for art in spec.articulations:
        prim = UsdGeom.Xform.Define(stage, f"/World/{art.name}").GetPrim()
        prim.GetReferences().AddReference(str(flat), f"/{art.name}")
    stage.Save()
    flat_graphs, ref_graphs = read_topology(flat), read_topology(path)
    assert ref_graphs.roots == tuple("/World" + r for r in flat_graphs.roots)
    for a, b in zip(flat_graphs, ref_graphs, strict=True):
        assert _summary("", a) == _summary("/World", b)
    flat.unlink()
    path.unlink()


# --- 9. a file is read once: the read cache, resolve_orderings ----------------------------------------------

ANYMAL_C = Path(__file__).resolve().parents[2] / "shared/assets/anybotics_anymal_c/usd/anymal_c.usda"
CONVENTIONS = ("physx", "mjwarp", "robot_schema")


def _age(path: Path, seconds: float = 100.0) -> Path:
    """Date ``path`` back, so that the read cache trusts its (mtime, size): a file written in the last 2 s is
    not cached, as two quick writes may share an mtime."""
    import os
    import time

    then = time.time_ns() - int(seconds * 1e9)
    os.utime(path, ns=(then, then))
    return path


@pytest.fixture
def reads(monkeypatch):
    """The real path of every stage :func:`transfer.robot.usd.read_stage` reads during the test."""
    from transfer.robot import usd

    usd.clear_cache()
    seen: list[str] = []
    read_stage = usd.read_stage

    def counting(stage):
        seen.append(stage.GetRootLayer().realPath)
        return read_stage(stage)

    monkeypatch.setattr(usd, "read_stage", counting)
    yield seen
    usd.clear_cache()


def _drop_arm(path: Path) -> None:
    stage = Usd.Stage.Open(str(path))
    stage.RemovePrim("/robot/joints/arm")
    stage.RemovePrim("/robot/arm")
    stage.Save()


def test_every_convention_of_a_file_comes_from_one_read(tmp_path, reads):
    from transfer.orders import resolve_orderings

    path = _age(_library(tmp_path))
    link = tmp_path / "link.usda"
    link.symlink_to(path)
    px = resolve_ordering(path, "physx")
    mj = resolve_ordering(str(path), "mjwarp")
    rs = resolve_ordering(link, "robot_schema")  # another spelling of the same file
    both = resolve_orderings(path, CONVENTIONS)
    assert reads == [str(path)]
    assert both == {"physx": px, "mjwarp": mj, "robot_schema": rs}
    g = one(Usd.Stage.Open(str(path)))  # a stage is read every time: it may have been edited
    assert (physx_order(g), mjwarp_order(g), robot_schema_order(g)) == (px, mj, rs)
    assert len(reads) == 2


def test_resolve_orderings_keys_and_refusals():
    from transfer.orders import resolve_orderings

    stage = new_stage()
    author_robot(stage)
    out = resolve_orderings(stage, ["PhysX", list(MJWARP_JOINTS), "mjwarp"])
    assert list(out) == ["PhysX", MJWARP_JOINTS, "mjwarp"]
    assert out["PhysX"].joints == PHYSX_JOINTS and out[MJWARP_JOINTS].convention == "explicit"
    assert out["mjwarp"].bodies == MJWARP_BODIES
    assert list(resolve_orderings(stage, "mjwarp")) == ["mjwarp"]  # one convention, not its letters
    with pytest.raises(OrderingError, match="authors no robot schema"):
        resolve_orderings(stage, ("physx", "robot_schema"))
    with pytest.raises(ValueError, match="needs a convention"):
        resolve_orderings(Path("/does/not/matter.usda"), ("physx", None))


def test_an_edited_file_is_read_again(tmp_path, reads):
    path = _age(_library(tmp_path, schema=False), 100)
    before = resolve_ordering(path, "physx")
    assert resolve_ordering(path, "mjwarp").joints == MJWARP_JOINTS and len(reads) == 1
    _drop_arm(path)
    _age(path, 50)
    after = resolve_ordering(path, "physx")
    assert after.joints == tuple(j for j in before.joints if j != "arm") and len(reads) == 2
    assert resolve_ordering(path, "mjwarp").joints == tuple(j for j in MJWARP_JOINTS if j != "arm")
    assert len(reads) == 2


def test_an_edited_referenced_layer_is_read_again(tmp_path, reads):
    lib = _age(_library(tmp_path, schema=False))
    path = _age(_compose(tmp_path, lib, "reference"))
    assert "arm" in resolve_ordering(path, "physx").joints
    _drop_arm(lib)
    _age(lib, 50)
    assert "arm" not in resolve_ordering(path, "physx").joints
    assert len(reads) == 2


def test_a_file_replaced_by_a_copy_with_the_same_mtime_and_size_is_read_again(tmp_path, reads):
    import shutil
    import time

    path = _age(_library(tmp_path, schema=False))
    text = path.read_text()
    assert "ram" not in text
    renamed = tmp_path / "renamed.usda"
    renamed.write_text(text.replace("arm", "ram"))  # same size, the joint and body 'arm' renamed 'ram'
    mtime = path.stat().st_mtime_ns
    import os

    os.utime(renamed, ns=(mtime, mtime))
    assert "arm" in resolve_ordering(path, "physx").joints
    time.sleep(0.05)  # past the file system's clock tick, so that the ctime differs
    shutil.copy2(renamed, path)  # as `cp -p` does: new content, the old mtime and size
    assert path.stat().st_mtime_ns == mtime and path.stat().st_size == len(text)
    joints = resolve_ordering(path, "physx").joints
    assert "ram" in joints and "arm" not in joints and len(reads) == 2


def test_a_file_written_moments_ago_is_not_cached(tmp_path, reads):
    path = _library(tmp_path, schema=False)  # mtime: now
    first, second = resolve_ordering(path, "physx"), resolve_ordering(path, "physx")
    assert first == second and len(reads) == 2


def test_unsaved_edits_in_this_process_are_seen(tmp_path, reads):
    path = _age(_library(tmp_path, schema=False))
    assert "arm" in resolve_ordering(path, "physx").joints
    stage = Usd.Stage.Open(str(path))  # holds the layer USD will compose the file from
    stage.RemovePrim("/robot/joints/arm")
    stage.RemovePrim("/robot/arm")
    assert "arm" not in resolve_ordering(path, "physx").joints  # as a fresh Usd.Stage.Open(path) sees it
    stage.GetRootLayer().Reload()  # edits dropped
    assert "arm" in resolve_ordering(path, "physx").joints
    assert len(reads) == 3


def test_the_cache_is_a_bounded_lru(tmp_path, reads):
    import shutil

    from transfer.robot import usd

    lib = _age(_library(tmp_path, schema=False))
    paths = [tmp_path / f"copy_{i}.usda" for i in range(usd._CACHE_SIZE + 2)]
    for path in paths:
        shutil.copy2(lib, path)
        resolve_ordering(path, "physx")
    assert len(usd._CACHE) == usd._CACHE_SIZE and len(reads) == len(paths)
    resolve_ordering(paths[-1], "mjwarp")  # recent: a hit
    assert len(reads) == len(paths)
    resolve_ordering(paths[0], "mjwarp")  # evicted: read again
    assert len(reads) == len(paths) + 1 and len(usd._CACHE) == usd._CACHE_SIZE


@pytest.mark.skipif(not ANYMAL_C.is_file(), reason="ANYmal C asset not present")
def test_a_fresh_copy_of_anymal_c_gives_the_uncached_orders(tmp_path, reads):
    import shutil

    from transfer.orders import resolve_orderings

    shutil.copytree(ANYMAL_C.parent, tmp_path / "usd")  # with Props/instanceable_meshes.usd it references
    path = tmp_path / "usd" / ANYMAL_C.name
    both = resolve_orderings(path, ("physx", "mjwarp"))
    again = (resolve_ordering(path, "physx"), resolve_ordering(path, "mjwarp"))
    assert len(reads) == 1  # the copy keeps the files' old mtimes: the second resolve is a cache hit
    g = one(Usd.Stage.Open(str(path)))
    assert both == {"physx": physx_order(g), "mjwarp": mjwarp_order(g)} and again == tuple(both.values())
    assert len(both["physx"].joints) == 12 and sorted(both["physx"].joints) == sorted(both["mjwarp"].joints)


def _outcome(fn):
    try:
        return fn()
    except OrderingError as exc:
        return type(exc).__name__, str(exc)


@settings(deadline=None, max_examples=25, suppress_health_check=list(HealthCheck))
@given(stages(max_bodies=10))
def test_cached_file_reads_equal_uncached_stage_reads(spec):
    """Generated stages (refusals included) resolve alike from a cached file and from a stage read anew."""
    from transfer.robot import usd

    path = _age(write_stage(spec, _workdir / f"cached_{next(_counter)}.usda"))
    usd.clear_cache()
    with pytest.MonkeyPatch.context() as mp:
        count = itertools.count()
        read_stage = usd.read_stage
        mp.setattr(usd, "read_stage", lambda stage: (next(count), read_stage(stage))[1])
        roots = _outcome(lambda: read_topology(path).roots)
        if isinstance(roots, tuple) and roots and roots[0] == "OrderingError":
            roots = tuple(a.root_path for a in spec.articulations)
        cached = {(r, c): _outcome(lambda r=r, c=c: resolve_ordering(path, c, r)) for r in roots for c in CONVENTIONS}
        reads = next(count)
    uncached = {
        (r, c): _outcome(lambda r=r, c=c: resolve_ordering(Usd.Stage.Open(str(path)), c, r))
        for r in roots
        for c in CONVENTIONS
    }
    assert cached == uncached
    assert reads <= 1 or all(isinstance(v, tuple) and v[0] == "OrderingError" for v in cached.values())
    path.unlink()


# --- 10. unresolved references, payloads and sublayers -------------------------------------------------------

_ARCS = {
    "reference": ('(\n    defaultPrim = "robot"\n)', "(\n    prepend references = @./parts/robot_lib.usda@\n)"),
    "payload": ('(\n    defaultPrim = "robot"\n)', "(\n    prepend payload = @./parts/robot_lib.usda@\n)"),
    "sublayer": ("(\n    subLayers = [@./parts/robot_lib.usda@]\n)", ""),
}


def _asset_with_missing(tmp_path: Path, arc: str) -> Path:
    """``robot.usda`` that brings the robot in from ``parts/robot_lib.usda``, which is not there."""
    header, meta = _ARCS[arc]
    path = tmp_path / "robot.usda"
    path.write_text(f'#usda 1.0\n{header}\n\ndef Xform "robot" {meta}\n{{\n}}\n' if meta else f"#usda 1.0\n{header}\n")
    return path


@pytest.mark.parametrize("arc", sorted(_ARCS))
def test_unresolved_arc_names_the_file_the_asset_the_prim_and_the_fix(tmp_path, arc, reads):
    path = _age(_asset_with_missing(tmp_path, arc))
    missing = tmp_path / "parts" / "robot_lib.usda"
    with pytest.raises(OrderingError) as err:
        resolve_ordering(path, "physx")
    msg = str(err.value)
    assert msg.startswith(f"No articulation in {path}. The stage has 1 composition error")
    assert f"@{missing}@" in msg and ("sublayer" if arc == "sublayer" else f"for {arc}") in msg
    assert ("at </>:" if arc == "sublayer" else "at </robot>:") in msg
    assert "Make each listed asset path (and prim path) resolve" in msg and "Apply PhysicsArticulationRootAPI" in msg
    with pytest.raises(OrderingError, match=rf"No articulation root at /robot/base in {path}\. The stage has 1"):
        read_topology(path, "/robot/base")
    # once the file is where the asset expects it, the robot resolves: a failed read is never cached
    missing.parent.mkdir()
    _library(missing.parent)
    assert resolve_ordering(path, "physx").joints == PHYSX_JOINTS


def test_unresolved_reference_next_to_a_robot_is_named_by_the_mjwarp_refusal(tmp_path):
    lib = _library(tmp_path, schema=False)
    path = _compose(tmp_path, lib, "reference")
    stage = Usd.Stage.Open(str(path))
    UsdGeom.Xform.Define(stage, "/World/props").GetPrim().GetReferences().AddReference("./props/missing.usda")
    stage.Save()
    assert resolve_ordering(path, "physx").joints == PHYSX_JOINTS  # PhysX composes what resolves
    with pytest.raises(MjwarpRefusal, match=r"(?s)composition errors.*props/missing\.usda"):
        resolve_ordering(path, "mjwarp")
