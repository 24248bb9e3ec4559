"""Position control on both backends, for every joint, driven in the asset or not.

The same public calls (``write_joint_properties(stiffness=, damping=)``, ``set_joint_position_target``) must move
joints on PhysX and Newton alike. PhysX builds no drive for a joint without ``PhysicsDriveAPI``, so the PhysX
backend adds one (stiffness 0, damping 0, ``drive_max_force``) in its in-memory layer; Newton makes every DoF
position-controlled. Without those, the doors below stay at 0 deg on that engine.

Scenes: two doors hinged to a frame that an articulation-root anchor joint fixes to the world (revolute hinges
about z with limits of +-150 deg and no drives; gravity along -z, the hinge axis, so it exerts no torque), and
ANYmal C from ``../shared`` (authors drives with zero gains; skipped when absent).
"""

from __future__ import annotations

import hashlib
import math
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import shared_asset

pytest.importorskip("pxr")
pytest.importorskip("warp")

import transfer  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore:ovphysx is in CPU-only mode:RuntimeWarning")

BACKENDS = ("physx", "newton")
DT = 0.005
TARGET = np.radians([[120.0, -120.0]]).astype(np.float32)  # left door, right door
STIFFNESS, DAMPING = 50.0, 10.0  # N·m/rad, N·m·s/rad: about critically damped for the doors (0.7 kg·m² each)
DOOR_MASS, DOOR_WIDTH = 2.0, 1.0
DOOR_INERTIA = (0.05, 0.2, 0.2)  # about the door's centre; about the hinge: 0.2 + 2 * 0.5² = 0.7 kg·m²
HINGE_INERTIA = DOOR_INERTIA[2] + DOOR_MASS * (DOOR_WIDTH / 2) ** 2


def _engine(backend: str) -> None:
    if backend == "physx":
        pytest.importorskip("ovphysx")
        pytest.importorskip("ovstage")
    else:
        pytest.importorskip("newton")


def write_doors(path: Path) -> Path:
    """Author the two-doors asset: ``/doors/frame`` fixed to the world by ``/doors/anchor`` (root API on the
    joint), ``left_hinge`` / ``right_hinge`` (revolute about z, +-150 deg, no ``PhysicsDriveAPI``) at y = +-0.5,
    each door's centre 0.5 m from its hinge along x."""
    from pxr import Gf, Sdf, Usd, UsdGeom, UsdPhysics

    stage = Usd.Stage.CreateNew(str(path))
    UsdGeom.SetStageUpAxis(stage, UsdGeom.Tokens.z)
    UsdGeom.SetStageMetersPerUnit(stage, 1.0)
    scene = UsdPhysics.Scene.Define(stage, "/physicsScene")
    scene.CreateGravityDirectionAttr(Gf.Vec3f(0, 0, -1))  # along the hinge axis: no torque on the doors
    scene.CreateGravityMagnitudeAttr(9.81)
    UsdGeom.Xform.Define(stage, "/doors")

    def body(name: str, position: tuple[float, float, float], mass: float, inertia: tuple[float, ...]) -> None:
        xform = UsdGeom.Xform.Define(stage, f"/doors/{name}")
        xform.AddTranslateOp().Set(Gf.Vec3d(*position))
        UsdPhysics.RigidBodyAPI.Apply(xform.GetPrim())
        mass_api = UsdPhysics.MassAPI.Apply(xform.GetPrim())
        mass_api.CreateMassAttr(mass)
        mass_api.CreateDiagonalInertiaAttr(Gf.Vec3f(*inertia))

    half = DOOR_WIDTH / 2
    body("frame", (0.0, 0.0, 0.0), 10.0, (1.0, 1.0, 1.0))
    anchor = UsdPhysics.FixedJoint.Define(stage, "/doors/anchor")
    anchor.CreateBody1Rel().SetTargets([Sdf.Path("/doors/frame")])
    UsdPhysics.ArticulationRootAPI.Apply(anchor.GetPrim())  # on the world joint: PhysX fixes the base
    for name, y in (("left", 0.5), ("right", -0.5)):
        body(name, (half, y, 0.0), DOOR_MASS, DOOR_INERTIA)
        hinge = UsdPhysics.RevoluteJoint.Define(stage, f"/doors/{name}_hinge")
        hinge.CreateAxisAttr("Z")
        hinge.CreateBody0Rel().SetTargets([Sdf.Path("/doors/frame")])
        hinge.CreateBody1Rel().SetTargets([Sdf.Path(f"/doors/{name}")])
        hinge.CreateLocalPos0Attr(Gf.Vec3f(0.0, y, 0.0))
        hinge.CreateLocalPos1Attr(Gf.Vec3f(-half, 0.0, 0.0))
        hinge.CreateLowerLimitAttr(-150.0)
        hinge.CreateUpperLimitAttr(150.0)
    stage.GetRootLayer().Save()
    return path


@pytest.fixture(scope="module")
def doors_path(tmp_path_factory) -> Path:
    return write_doors(tmp_path_factory.mktemp("doors") / "doors.usda")


def _open_doors(path: Path, backend: str, **options):
    _engine(backend)
    art = transfer.open_articulation(path, backend, **options)
    assert art.joint_names == ("left_hinge", "right_hinge") and art.fixed_base
    return art


def _swing(art, seconds: float = 1.5) -> np.ndarray:
    """Set the +-120 deg targets, step ``seconds``, return the door angles in degrees."""
    art.set_joint_position_target(TARGET)
    for _ in range(round(seconds / DT)):
        art.step(DT)
    return np.degrees(art.data.joint_pos.numpy()[0])


def _gains(art, **extra: float) -> dict[str, np.ndarray]:
    values = {"stiffness": STIFFNESS, "damping": DAMPING, **extra}
    return {name: np.full((art.num_envs, art.num_joints), v, np.float32) for name, v in values.items()}


@pytest.mark.parametrize("backend", BACKENDS)
def test_undriven_doors_follow_targets_with_gains_written_at_runtime(doors_path, backend):
    art = _open_doors(doors_path, backend)
    try:
        art.write_joint_properties(**_gains(art))
        angles = _swing(art)
    finally:
        art.close()
    np.testing.assert_allclose(angles, [120.0, -120.0], atol=3.0)


def test_undriven_doors_follow_targets_with_gains_at_open_on_physx(doors_path):
    art = _open_doors(doors_path, "physx", drive_stiffness=STIFFNESS, drive_damping=DAMPING)
    try:
        np.testing.assert_allclose(art.backend.joint_properties().stiffness.numpy(), STIFFNESS, rtol=1e-5)
        angles = _swing(art)
    finally:
        art.close()
    np.testing.assert_allclose(angles, [120.0, -120.0], atol=3.0)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_small_effort_limit_holds_the_doors_short_of_their_targets(doors_path, backend):
    """0.2 N·m against the ~100 N·m the gains ask for: the clamped drive is a constant torque, so after t = 1.5 s
    each door has turned 0.5 (tau / I) t² = 18.4 deg, far from 120 deg (and not 0: the drive does act)."""
    limit, seconds = 0.2, 1.5
    art = _open_doors(doors_path, backend)
    try:
        art.write_joint_properties(**_gains(art, effort_limit=limit))
        np.testing.assert_allclose(art.backend.joint_properties().effort_limit.numpy(), limit, rtol=1e-6)
        angles = _swing(art, seconds)
    finally:
        art.close()
    expected = math.degrees(0.5 * limit / HINGE_INERTIA * seconds**2)
    np.testing.assert_allclose(angles, [expected, -expected], atol=3.0)
    assert np.all(np.abs(angles) < 60.0)


def test_drives_added_by_physx_change_nothing_until_gains_are_written(doors_path):
    pytest.importorskip("ovphysx")
    pytest.importorskip("ovstage")
    before = hashlib.sha256(doors_path.read_bytes()).hexdigest()
    art = _open_doors(doors_path, "physx", drive_max_force=250.0)
    try:
        backend = art.backend
        assert backend.added_drives == ("/doors/left_hinge:angular", "/doors/right_hinge:angular")
        assert any("added 2 drive(s)" in note for note in backend.scene_notes)
        props = backend.joint_properties()
        np.testing.assert_array_equal(props.stiffness.numpy(), 0.0)
        np.testing.assert_array_equal(props.damping.numpy(), 0.0)
        np.testing.assert_allclose(props.effort_limit.numpy(), 250.0)  # N·m: max force is not per degree
        angles = _swing(art, 0.5)  # targets but zero gains: no force
    finally:
        art.close()
    np.testing.assert_allclose(angles, 0.0, atol=1e-3)
    assert hashlib.sha256(doors_path.read_bytes()).hexdigest() == before  # the asset is never written


def test_physx_default_drive_max_force_is_large_and_finite(doors_path):
    pytest.importorskip("ovphysx")
    from transfer.backends.physx import PhysxBackend
    from transfer.backends.physx.scene import DEFAULT_DRIVE_MAX_FORCE

    assert DEFAULT_DRIVE_MAX_FORCE == 1.0e6
    with PhysxBackend(doors_path) as backend:
        np.testing.assert_allclose(backend.joint_properties().effort_limit.numpy(), DEFAULT_DRIVE_MAX_FORCE)
    for bad in (0.0, -1.0, math.nan, "1e3", True):
        with pytest.raises(ValueError, match="drive_max_force must be a positive number"):
            PhysxBackend(doors_path, drive_max_force=bad)


def _write_multi_axis(path: Path) -> Path:
    """A fixed frame with a prismatic slider, a revolute joint that authors its own drive, a D6 joint with rotX
    and rotY free (everything else locked) and an excluded revolute joint, all undriven but the second."""
    from pxr import Gf, Sdf, Usd, UsdGeom, UsdPhysics

    stage = Usd.Stage.CreateNew(str(path))
    UsdGeom.SetStageUpAxis(stage, UsdGeom.Tokens.z)
    UsdGeom.SetStageMetersPerUnit(stage, 1.0)
    UsdPhysics.Scene.Define(stage, "/physicsScene").CreateGravityMagnitudeAttr(0.0)
    UsdGeom.Xform.Define(stage, "/rig")
    for name, x in (("frame", 0.0), ("slider", 0.0), ("arm", 1.0), ("ball", 2.0), ("loose", 3.0)):
        xform = UsdGeom.Xform.Define(stage, f"/rig/{name}")
        xform.AddTranslateOp().Set(Gf.Vec3d(x, 0.0, 0.0))
        UsdPhysics.RigidBodyAPI.Apply(xform.GetPrim())
        mass = UsdPhysics.MassAPI.Apply(xform.GetPrim())
        mass.CreateMassAttr(1.0)
        mass.CreateDiagonalInertiaAttr(Gf.Vec3f(0.1, 0.1, 0.1))
    anchor = UsdPhysics.FixedJoint.Define(stage, "/rig/anchor")
    anchor.CreateBody1Rel().SetTargets([Sdf.Path("/rig/frame")])
    UsdPhysics.ArticulationRootAPI.Apply(anchor.GetPrim())

    def joint(cls, name: str, body0: str, body1: str, offset: float):
        j = cls.Define(stage, f"/rig/{name}")
        j.CreateBody0Rel().SetTargets([Sdf.Path(f"/rig/{body0}")])
        j.CreateBody1Rel().SetTargets([Sdf.Path(f"/rig/{body1}")])
        j.CreateLocalPos0Attr(Gf.Vec3f(offset, 0.0, 0.0))
        return j

    joint(UsdPhysics.PrismaticJoint, "slide", "frame", "slider", 0.0).CreateAxisAttr("Y")
    hinge = joint(UsdPhysics.RevoluteJoint, "hinge", "slider", "arm", 1.0)
    hinge.CreateAxisAttr("Z")
    authored = UsdPhysics.DriveAPI.Apply(hinge.GetPrim(), "angular")
    authored.CreateStiffnessAttr(1.0)
    authored.CreateMaxForceAttr(80.0)
    d6 = joint(UsdPhysics.Joint, "gimbal", "arm", "ball", 1.0)
    for axis in ("transX", "transY", "transZ", "rotZ"):
        limit = UsdPhysics.LimitAPI.Apply(d6.GetPrim(), axis)
        limit.CreateLowAttr(1.0)
        limit.CreateHighAttr(-1.0)  # low > high: locked
    excluded = joint(UsdPhysics.RevoluteJoint, "tether", "ball", "loose", 1.0)
    excluded.CreateAxisAttr("Z")
    excluded.CreateExcludeFromArticulationAttr(True)
    stage.GetRootLayer().Save()
    return path


def test_physx_layer_adds_drives_only_where_missing_and_d6_axes_follow(tmp_path):
    pytest.importorskip("ovphysx")
    pytest.importorskip("ovstage")
    from pxr import Sdf, Usd, UsdPhysics

    from transfer.backends.physx import PhysxBackend
    from transfer.backends.physx.scene import compose_scene

    path = _write_multi_axis(tmp_path / "rig.usda")
    scene = compose_scene(str(path), None, 1, 2.5, None, None, None, False, drive_max_force=123.0)
    assert scene.added_drives == ["/rig/gimbal:rotX", "/rig/gimbal:rotY", "/rig/slide:linear"]  # joint path order
    layer = Sdf.Layer.CreateAnonymous(".usda")
    layer.ImportFromString(scene.usda)
    stage = Usd.Stage.Open(layer)
    for instance in scene.added_drives:
        joint, name = instance.rsplit(":", 1)
        drive = UsdPhysics.DriveAPI(stage.GetPrimAtPath(joint), name)
        assert (drive.GetStiffnessAttr().Get(), drive.GetDampingAttr().Get()) == (0.0, 0.0)
        assert drive.GetMaxForceAttr().Get() == 123.0 and drive.GetTypeAttr().Get() == "force"
    hinge = UsdPhysics.DriveAPI(stage.GetPrimAtPath("/rig/hinge"), "angular")  # authored: left as it is
    assert (hinge.GetStiffnessAttr().Get(), hinge.GetMaxForceAttr().Get()) == (1.0, 80.0)
    assert not hinge.GetDampingAttr().HasAuthoredValue()
    assert not stage.GetPrimAtPath("/rig/tether").HasAPI(UsdPhysics.DriveAPI, "angular")  # excluded: no DoF

    with PhysxBackend(path) as backend:
        names = backend.joint_names
        assert set(names) == {"slide", "hinge", "gimbal:0", "gimbal:1"}
        effort = dict(zip(names, backend.joint_properties().effort_limit.numpy()[0], strict=True))
        assert effort["hinge"] == pytest.approx(80.0) and effort["gimbal:0"] == pytest.approx(1.0e6)
        import warp as wp

        target = np.array([[{"slide": 0.1, "hinge": 0.3, "gimbal:0": -0.2, "gimbal:1": 0.3}[n] for n in names]])
        ones = np.ones((1, len(names)), np.float32)
        backend.write_joint_properties(
            stiffness=wp.array(100.0 * ones, dtype=wp.float32), damping=wp.array(30.0 * ones, dtype=wp.float32)
        )
        backend.set_joint_position_target(wp.array(target.astype(np.float32), dtype=wp.float32))
        for _ in range(400):
            backend.step(DT)
        np.testing.assert_allclose(backend.joint_positions().numpy(), target, atol=0.02)


ANYMAL_STANCE = {"HAA": (0.0, 0.0), "HFE": (0.4, -0.4), "KFE": (-0.8, 0.8)}  # (front legs, hind legs), rad
# Base height at spawn: feet clear of the ground in the authored (straight-leg) pose. At 0.62 the feet start
# ~1 cm inside the ground; PhysX then throws the robot up at the first step (1.3 m/s) even though the stance
# written before it lifts the feet clear, and it lands rolled (base at 0.39 m after 1 s, with or without the drive
# changes). From 0.64 up both engines settle standing at ~0.52 m.
ANYMAL_SPAWN_Z = 0.66


def _anymal_options(backend: str) -> dict:
    if backend == "physx":
        return {
            "ground_height": 0.0,
            "spawn_offset": (0.0, 0.0, ANYMAL_SPAWN_Z),
            "solver_position_iterations": 4,
            "solver_velocity_iterations": 0,
        }
    return {"ground_plane": True, "initial_root_pose": (0.0, 0.0, ANYMAL_SPAWN_Z, 0.0, 0.0, 0.0, 1.0)}


@pytest.mark.parametrize("backend", BACKENDS)
def test_anymal_stands_with_gains_written_at_runtime(backend):
    path = shared_asset("anybotics_anymal_c/usd/anymal_c.usda")
    _engine(backend)
    art = transfer.open_articulation(path, backend, **_anymal_options(backend))
    try:
        if backend == "physx":  # ANYmal authors its drives (zero gains, max force 80): kept as they are
            assert art.backend.added_drives == ()
            np.testing.assert_allclose(art.backend.joint_properties().effort_limit.numpy(), 80.0)
        stance = np.array(
            [[ANYMAL_STANCE[n[-3:]][0 if n.startswith(("LF", "RF")) else 1] for n in art.joint_names]], np.float32
        )
        ones = np.ones_like(stance)
        art.write_joint_properties(stiffness=300.0 * ones, damping=10.0 * ones)
        art.write_joint_state(stance, np.zeros_like(stance))
        art.set_joint_position_target(stance)
        heights = []
        for _ in range(round(1.0 / DT)):
            art.step(DT)
            heights.append(float(art.data.root_pos_w.numpy()[0, 2]))
        final_error = np.abs(art.data.joint_pos.numpy() - stance).max()
    finally:
        art.close()
    assert min(heights) > 0.4, f"{backend}: the base fell to {min(heights):.3f} m"
    assert final_error < 0.3
