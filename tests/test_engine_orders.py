"""The engines' own orders (``transfer.backends.engine_orders``) from the real engines (ovphysx and Newton, CPU).

Tiny assets are authored with pxr into ``tmp_path``; the real robots come from ``../shared``.
The expected orders below are what ovphysx 0.7 and Newton 1.8 answered; a change means an engine changed.
"""

from __future__ import annotations

import functools
import pickle
import subprocess
import sys
from pathlib import Path

import pytest

from transfer.backends import backend_class, engine_orders
from transfer.backends.base import EngineOrder, EngineRefusal
from transfer.ordering import OrderingConvention
from transfer.orders import resolve_ordering

pytestmark = [
    pytest.mark.engines,
    # ovphysx's tensor bindings are deprecated but are what names links in link order (see transfer.backends.physx.probe).
    pytest.mark.filterwarnings("ignore:ovphysx tensor bindings are deprecated:DeprecationWarning"),
    pytest.mark.filterwarnings("ignore:ovphysx is in CPU-only mode:RuntimeWarning"),
]


@pytest.fixture
def physx():
    pytest.importorskip("ovphysx")
    return functools.partial(engine_orders, "physx")


@pytest.fixture
def newton():
    pytest.importorskip("newton")
    return functools.partial(engine_orders, "newton")


# --- tiny assets -------------------------------------------------------------------------------------


def _author(
    path: Path, bodies: list[str], joints: list[tuple], root: str | None, xforms: tuple[str, ...] = ("/robot",)
) -> str:
    """Write a stage: ``bodies`` get RigidBodyAPI + MassAPI (no colliders, no PhysicsScene);
    ``joints`` are ``(path, kind, body0, body1[, limits])`` with kind in revolute/prismatic/spherical/fixed/d6
    and limits ``{"rotX": (low, high), ...}`` for d6; ``root`` (if any) gets ArticulationRootAPI."""
    from pxr import Gf, Usd, UsdGeom, UsdPhysics

    stage = Usd.Stage.CreateInMemory()
    for xform in xforms:
        UsdGeom.Xform.Define(stage, xform)
    for index, body in enumerate(bodies):
        prim = UsdGeom.Xform.Define(stage, body).GetPrim()
        UsdGeom.Xformable(prim).AddTranslateOp().Set(Gf.Vec3d(0.2 * index, 0, 0))
        UsdPhysics.RigidBodyAPI.Apply(prim)
        mass = UsdPhysics.MassAPI.Apply(prim)
        mass.CreateMassAttr(1.0)
        mass.CreateDiagonalInertiaAttr(Gf.Vec3f(0.01, 0.01, 0.01))
    kinds = {
        "revolute": UsdPhysics.RevoluteJoint,
        "prismatic": UsdPhysics.PrismaticJoint,
        "spherical": UsdPhysics.SphericalJoint,
        "fixed": UsdPhysics.FixedJoint,
        "d6": UsdPhysics.Joint,
    }
    for joint_path, kind, body0, body1, *rest in joints:
        joint = kinds[kind].Define(stage, joint_path)
        if body0:
            joint.CreateBody0Rel().SetTargets([body0])
        if body1:
            joint.CreateBody1Rel().SetTargets([body1])
        if kind in ("revolute", "prismatic"):
            joint.CreateAxisAttr("Y")
        for axis, (low, high) in (rest[0] if rest else {}).items():
            limit = UsdPhysics.LimitAPI.Apply(joint.GetPrim(), axis)
            limit.CreateLowAttr(low)
            limit.CreateHighAttr(high)
    if root is not None:
        UsdPhysics.ArticulationRootAPI.Apply(stage.GetPrimAtPath(root))
    stage.Export(str(path))
    return str(path)


# base ─fixed "mount"→ foot, ─revolute "hip"→ a ─revolute "knee"→ b, ─prismatic "slide"→ c ─spherical "ball"→ d
LEGS = ["/robot/base", "/robot/a", "/robot/b", "/robot/c", "/robot/d", "/robot/foot"]
LEG_JOINTS = [
    ("/robot/joints/hip", "revolute", "/robot/base", "/robot/a"),
    ("/robot/joints/knee", "revolute", "/robot/a", "/robot/b"),
    ("/robot/joints/slide", "prismatic", "/robot/base", "/robot/c"),
    ("/robot/joints/ball", "spherical", "/robot/c", "/robot/d"),
    ("/robot/joints/mount", "fixed", "/robot/base", "/robot/foot"),
]
PHYSX_LEGS = EngineOrder(  # breadth-first; children by joint type (fixed < revolute < prismatic < spherical)
    "physx",
    "/robot/base",
    ("hip", "slide", "knee", "ball:0", "ball:1", "ball:2"),
    ("base", "foot", "a", "c", "b", "d"),
    False,
)
NEWTON_LEGS = EngineOrder(  # depth-first; children by joint path
    "mjwarp",
    "/robot/base",
    ("hip", "knee", "slide", "ball:0", "ball:1", "ball:2"),
    ("base", "a", "b", "foot", "c", "d"),
    False,
)


@pytest.fixture
def legs(tmp_path) -> str:
    pytest.importorskip("pxr")
    return _author(tmp_path / "legs.usda", LEGS, LEG_JOINTS, root="/robot/base")


def test_tiny_asset_physx(physx, legs):
    assert physx(legs) == [PHYSX_LEGS]
    assert physx(legs, root="/robot/base") == [PHYSX_LEGS]


def test_tiny_asset_newton(newton, legs):
    assert newton(legs) == [NEWTON_LEGS]
    assert newton(legs, root="/robot/base") == [NEWTON_LEGS]


def test_each_backend_answers_in_its_native_convention(physx, newton, legs):
    """The registry reaches each engine through its backend class; the class's native convention, resolved from
    the file, is the order its engine answers with (and ``engine`` names that convention)."""
    for name, expected in (("physx", PHYSX_LEGS), ("newton", NEWTON_LEGS)):
        cls = backend_class(name)
        (engine,) = cls.engine_orders(legs)
        assert engine == expected
        resolved = resolve_ordering(legs, cls.native_convention)
        assert (resolved.joints, resolved.bodies, resolved.fixed_base) == (
            engine.joints,
            engine.bodies,
            engine.fixed_base,
        )
        assert engine.engine == OrderingConvention(cls.native_convention).value


def test_root_on_fixed_joint_to_world_fixes_the_base(physx, newton, tmp_path):
    pytest.importorskip("pxr")
    anchor = ("/robot/joints/anchor", "fixed", None, "/robot/base")
    asset = _author(tmp_path / "anchored.usda", LEGS, [*LEG_JOINTS, anchor], root="/robot/joints/anchor")
    assert physx(asset) == [EngineOrder("physx", "/robot/joints/anchor", PHYSX_LEGS.joints, PHYSX_LEGS.bodies, True)]
    assert newton(asset) == [
        EngineOrder("mjwarp", "/robot/joints/anchor", NEWTON_LEGS.joints, NEWTON_LEGS.bodies, True)
    ]


def test_unknown_root_names_the_roots_found(physx, newton, legs):
    for order in (physx, newton):
        with pytest.raises(LookupError, match=r"'/robot/nope'.*/robot/base"):
            order(legs, root="/robot/nope")


def test_missing_file(physx, newton, tmp_path):
    for order in (physx, newton):
        with pytest.raises(FileNotFoundError):
            order(tmp_path / "absent.usda")


def test_reversed_joint_newton_refuses_physx_does_not_care(physx, newton, tmp_path):
    pytest.importorskip("pxr")
    joints = [
        ("/robot/joints/knee", "revolute", "/robot/b", "/robot/a") if j[0].endswith("knee") else j for j in LEG_JOINTS
    ]
    asset = _author(tmp_path / "reversed.usda", LEGS, joints, root="/robot/base")
    assert physx(asset) == [PHYSX_LEGS]
    with pytest.raises(EngineRefusal, match="Reversed joints are not supported") as refusal:
        newton(asset)
    assert refusal.value.engine == "mjwarp"
    assert "/robot/joints/knee" in refusal.value.reason


def test_d6_dofs_differ_between_engines(physx, newton, tmp_path):
    """Plain PhysicsJoint: rotX locked (low > high), rotY limited, rotZ without LimitAPI."""
    pytest.importorskip("pxr")
    d6 = ("/robot/d6", "d6", "/robot/base", "/robot/a", {"rotX": (1.0, -1.0), "rotY": (-0.5, 0.5)})
    asset = _author(tmp_path / "d6.usda", ["/robot/base", "/robot/a"], [d6], root="/robot/base")
    # PhysX: rotational axes free unless low > high, named by axis (rotY, rotZ -> :1, :2).
    assert physx(asset)[0].joints == ("d6:1", "d6:2")
    # Newton: one DoF per axis with a LimitAPI and low < high; a single DoF keeps the plain name.
    assert newton(asset)[0].joints == ("d6",)


def test_components_sharing_an_ancestor_root(physx, newton, tmp_path):
    """Two unconnected chains under one rooted Xform: two PhysX articulations with the same root."""
    pytest.importorskip("pxr")
    bodies = ["/robot/a0", "/robot/a1", "/robot/b0", "/robot/b1"]
    joints = [("/robot/ja", "revolute", "/robot/a0", "/robot/a1"), ("/robot/jb", "revolute", "/robot/b0", "/robot/b1")]
    asset = _author(tmp_path / "two.usda", bodies, joints, root="/robot")
    assert sorted(physx(asset), key=lambda order: order.joints) == [
        EngineOrder("physx", "/robot", ("ja",), ("a0", "a1"), False),
        EngineOrder("physx", "/robot", ("jb",), ("b0", "b1"), False),
    ]
    with pytest.raises(EngineRefusal, match="Multiple roots"):
        newton(asset)


def test_joints_without_articulation_root(physx, newton, tmp_path):
    pytest.importorskip("pxr")
    asset = _author(tmp_path / "rootless.usda", LEGS, LEG_JOINTS, root=None)
    assert physx(asset) == []  # plain rigid bodies and joints, no articulation
    with pytest.raises(EngineRefusal, match="not belonging to any articulation"):
        newton(asset)


def test_refusal_keeps_engine_and_reason_through_pickle():
    refusal = pickle.loads(pickle.dumps(EngineRefusal("mjwarp", "Joint graph contains a cycle at body 0")))
    assert (refusal.engine, refusal.reason) == ("mjwarp", "Joint graph contains a cycle at body 0")
    assert "Joint graph contains a cycle" in str(refusal)


def test_import_loads_no_engine():
    code = (
        "import sys, transfer.backends, transfer.backends.base\n"
        "print(sorted({'pxr', 'newton', 'ovphysx', 'ovstage', 'warp'} & set(sys.modules)))\n"
        "import transfer.backends.physx.probe\n"
        "print(sorted({'pxr', 'newton', 'ovphysx', 'ovstage'} & set(sys.modules)))"
    )
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert loaded.split() == ["[]", "[]"]


# --- real robots ---------------------------------------------------------------------------------------


def _anymal_yaml(shared: Path) -> dict:
    import yaml

    return yaml.safe_load((shared / "policies/anybotics_anymal_c/rl_policies/anymal.yaml").read_text())


ANYMAL_LEGS = ("LF", "LH", "RF", "RH")


def test_anymal_c_physx_matches_policy_yaml(physx, shared):
    (order,) = physx(shared / "assets/anybotics_anymal_c/usd/anymal_c.usda")
    assert order.joints == tuple(_anymal_yaml(shared)["physx_joint_names"])
    assert order.root == "/anymal/base"
    assert order.fixed_base is False
    part = ("HIP", "THIGH", "SHANK", "FOOT")
    assert order.bodies == ("base", *(f"{leg}_{p}" for p in part for leg in ANYMAL_LEGS))


def test_anymal_c_newton_matches_policy_yaml(newton, shared):
    (order,) = newton(shared / "assets/anybotics_anymal_c/usd/anymal_c.usda")
    assert order.joints == tuple(_anymal_yaml(shared)["mjw_joint_names"])
    assert order.root == "/anymal/base"
    assert order.fixed_base is False
    part = ("HIP", "THIGH", "SHANK", "FOOT")
    assert order.bodies == ("base", *(f"{leg}_{p}" for leg in ANYMAL_LEGS for p in part))


def test_go2_with_unresolved_references(physx, newton, shared):
    asset = shared / "assets/unitree_go2/usd/go2.usda"
    (order,) = physx(asset)  # ovphysx skips the unresolved mesh references
    assert order.bodies[:3] == ("base", "Head_upper", "FL_hip")  # fixed-joint child first
    with pytest.raises(EngineRefusal, match="composition errors") as refusal:
        newton(asset)
    assert refusal.value.engine == "mjwarp"


def test_fourbar_pole_both_engines(physx, newton, shared):
    asset = shared / "assets/fourbar_pole/usd/fourbar_pole.usda"
    joints = ("ground_to_crank", "crank_to_coupler", "coupler_to_pole", "coupler_to_rocker")
    bodies = ("ground_link", "crank", "coupler", "pole", "rocker")
    assert physx(asset) == [EngineOrder("physx", "/fourbar_pole", joints, bodies, True)]
    assert newton(asset) == [EngineOrder("mjwarp", "/fourbar_pole", joints, bodies, True)]


def test_demo_quadruped_orders_match_both_engines(physx, newton):
    """The project's own demo robot (transfer:quadruped): PhysX lists its joints breadth-first, Newton depth-first,
    and the emulated orders equal what each engine answers."""
    from transfer.task import resolve_asset

    asset = resolve_asset("transfer:quadruped")
    for engine, convention in ((physx, "physx"), (newton, "mjwarp")):
        (answer,) = engine(asset)
        resolved = resolve_ordering(asset, convention)
        assert (answer.joints, answer.bodies, answer.fixed_base) == (resolved.joints, resolved.bodies, False)
    assert resolve_ordering(asset, "physx").joints[:4] == ("LF_HAA", "LH_HAA", "RF_HAA", "RH_HAA")
    assert resolve_ordering(asset, "mjwarp").joints[:4] == ("LF_HAA", "LF_HFE", "LF_KFE", "LH_HAA")


def test_demo_quadruped_file_is_what_its_generator_writes(tmp_path):
    """transfer/data/quadruped.usda is presets/robots/make_quadruped.py's output, not a hand edit."""
    import importlib.util

    pytest.importorskip("pxr")
    root = Path(__file__).resolve().parents[1]
    spec = importlib.util.spec_from_file_location("make_quadruped", root / "presets" / "robots" / "make_quadruped.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    fresh = module.build(tmp_path / "quadruped.usda")
    assert fresh.read_text() == (root / "transfer" / "data" / "quadruped.usda").read_text()
    mjcf = module.build_mjcf(tmp_path / "quadruped.xml")  # the same robot as MJCF, for the MuJoCo backend
    assert mjcf.read_text() == (root / "transfer" / "data" / "quadruped.xml").read_text()


def test_the_registry_declares_what_each_backend_class_does():
    """Each registry entry (read above the backends without importing an engine) says what its backend class
    declares: its name and native convention; the convention-to-backend map follows from it."""
    from transfer.backends import REGISTRY, native_backend, native_convention

    pytest.importorskip("ovphysx")
    pytest.importorskip("newton")
    for name in REGISTRY:
        cls = backend_class(name)
        assert cls.name == name and str(cls.native_convention) == native_convention(name)
        assert native_backend(cls.native_convention) == name
    assert native_backend("mjwarp") == "newton" and native_backend("physx") == "physx"
    assert native_backend("mujoco") == "mujoco"  # MuJoCo on the MJCF: an mjlab policy's native engine
    assert native_backend("robot_schema") is None and native_backend("x") is None
