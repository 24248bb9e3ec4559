"""The Robot-Gripper-Isaac profile checks of ``transfer validate`` (:func:`transfer.robot.profile.profile_findings`), on
small stages authored here with pxr and on ANYmal C from ``../shared``. USD only: no engine runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import shared_asset

pytest.importorskip("pxr")

from transfer.robot.profile import ROBOT_SCHEMA_RULES, profile_findings, scan_joints  # noqa: E402


def _robot(
    path: Path,
    *,
    schema: bool = True,
    drop_joint: bool = False,
    namespace: bool = True,
    anchor_listed: bool = True,
    **meta,
):
    """A fixed-base arm: ``/arm/base`` anchored to the world, ``/arm/link`` on a driven revolute ``/arm/hinge``
    (drive with an effort limit, joint state, max joint velocity, limits), and with ``schema`` a complete
    ``IsaacRobotAPI`` on ``/arm`` (the world anchor listed in robotJoints only with ``anchor_listed``)."""
    from pxr import Sdf, Usd, UsdGeom, UsdPhysics

    stage = Usd.Stage.CreateNew(str(path))
    UsdGeom.SetStageUpAxis(stage, meta.get("up", UsdGeom.Tokens.z))
    UsdGeom.SetStageMetersPerUnit(stage, meta.get("mpu", 1.0))
    UsdPhysics.Scene.Define(stage, "/scene")
    arm = UsdGeom.Xform.Define(stage, "/arm").GetPrim()
    stage.SetDefaultPrim(arm)
    for name in ("base", "link"):
        UsdPhysics.RigidBodyAPI.Apply(UsdGeom.Xform.Define(stage, f"/arm/{name}").GetPrim())
    anchor = UsdPhysics.FixedJoint.Define(stage, "/arm/anchor")
    anchor.CreateBody1Rel().SetTargets([Sdf.Path("/arm/base")])
    UsdPhysics.ArticulationRootAPI.Apply(anchor.GetPrim())
    hinge = UsdPhysics.RevoluteJoint.Define(stage, "/arm/hinge")
    hinge.CreateBody0Rel().SetTargets([Sdf.Path("/arm/base")])
    hinge.CreateBody1Rel().SetTargets([Sdf.Path("/arm/link")])
    UsdPhysics.DriveAPI.Apply(hinge.GetPrim(), "angular").CreateMaxForceAttr(meta.get("max_force", 50.0))
    hinge.CreateLowerLimitAttr(-90.0)
    hinge.CreateUpperLimitAttr(90.0)
    hinge.GetPrim().AddAppliedSchema("PhysicsJointStateAPI:angular")
    hinge.GetPrim().AddAppliedSchema("PhysxJointAPI")
    hinge.GetPrim().CreateAttribute("physxJoint:maxJointVelocity", Sdf.ValueTypeNames.Float).Set(
        meta.get("max_velocity", 100.0)
    )
    if schema:
        arm.AddAppliedSchema("IsaacRobotAPI")
        if namespace:
            arm.CreateAttribute("isaac:namespace", Sdf.ValueTypeNames.String).Set("arm")
        joints = (["/arm/anchor"] if anchor_listed else []) + ([] if drop_joint else ["/arm/hinge"])
        arm.CreateRelationship("isaac:physics:robotJoints").SetTargets([Sdf.Path(p) for p in joints])
        arm.CreateRelationship("isaac:physics:robotLinks").SetTargets([Sdf.Path("/arm/base"), Sdf.Path("/arm/link")])
    stage.GetRootLayer().Save()
    return stage


def _rules(findings) -> dict[str, list]:
    out: dict[str, list] = {}
    for f in findings:
        out.setdefault(f.rule, []).append(f)
    return out


def _serious(findings) -> list:
    return [f for f in findings if f.severity != "info"]


def test_complete_robot_schema_has_no_robot_schema_findings(tmp_path):
    _robot(tmp_path / "arm.usda")
    findings = profile_findings(tmp_path / "arm.usda")
    assert not [f for f in findings if f.rule in ROBOT_SCHEMA_RULES], findings
    assert _serious(findings) == []  # the whole small arm conforms
    (base,) = findings  # and the base kind, for Isaac Lab
    assert (base.rule, base.severity, base.prim) == ("base-kind", "info", "/arm/anchor")
    assert "fixed base" in base.message and "/arm/anchor" in base.message and "fix_root_link=True" in base.fix


def test_a_world_anchor_is_not_required_in_robot_joints(tmp_path):
    """Seed 004 asks that robotJoints be populated; a joint whose body0 is the world is not one of the robot's."""
    findings = profile_findings(_robot(tmp_path / "arm.usda", anchor_listed=False))
    assert not [f for f in findings if f.rule in ROBOT_SCHEMA_RULES], findings
    assert _serious(findings) == []


def test_every_finding_has_a_severity_and_errors_come_first(tmp_path):
    from pxr import Sdf, UsdPhysics

    from transfer.robot.profile import SEVERITIES, SEVERITY

    stage = _robot(tmp_path / "arm.usda", schema=False, up="Y")
    UsdPhysics.RevoluteJoint(stage.GetPrimAtPath("/arm/hinge")).GetBody1Rel().SetTargets([Sdf.Path("/arm/nowhere")])
    findings = profile_findings(stage)
    assert {f.severity for f in findings} <= set(SEVERITIES) and set(SEVERITY.values()) <= set(SEVERITIES)
    ranks = [SEVERITIES.index(f.severity) for f in findings]
    assert ranks == sorted(ranks) and findings[0].severity == "error", findings
    assert all(f.to_dict()["severity"] == f.severity for f in findings)


def test_joints_without_limits_and_drives_without_an_effort_limit(tmp_path):
    stage = _robot(tmp_path / "arm.usda", max_force=float("inf"))
    hinge = stage.GetPrimAtPath("/arm/hinge")
    hinge.GetAttribute("physics:upperLimit").Set(float("inf"))
    rules = _rules(profile_findings(stage))
    assert set(_rules(_serious(profile_findings(stage)))) == {"joint-limits", "drive-max-force"}
    assert "hinge" in rules["joint-limits"][0].message and rules["joint-limits"][0].severity == "warning"
    assert (
        "maxForce" in rules["drive-max-force"][0].message
        and "drive:angular:physics:maxForce" in rules["drive-max-force"][0].fix
    )


@pytest.mark.parametrize(
    ("lower", "upper", "position", "rule"),
    [
        (0.0, 0.0, None, "joint-locked"),
        (10.0, -10.0, None, "joint-locked"),
        (30.0, 100.0, None, "pose-outside-limits"),
        (-90.0, 90.0, 120.0, "pose-outside-limits"),
        (-90.0, 90.0, 90.3, None),
        (30.0, 100.0, 45.0, None),
    ],
)
def test_a_joint_that_cannot_move_or_starts_outside_its_limits(tmp_path, lower, upper, position, rule):
    """Newton's quadruped.urdf gives no lower/upper (URDF: both 0), nv_ant.xml's ankles start at 0 outside [30, 100]:
    each engine then does its own thing at the first step. Within half a degree of a limit is inside."""
    stage = _robot(tmp_path / "arm.usda")
    hinge = stage.GetPrimAtPath("/arm/hinge")
    hinge.GetAttribute("physics:lowerLimit").Set(lower)
    hinge.GetAttribute("physics:upperLimit").Set(upper)
    if position is not None:
        from pxr import Sdf

        hinge.CreateAttribute("state:angular:physics:position", Sdf.ValueTypeNames.Float).Set(position)
    found = _rules(_serious(profile_findings(stage)))
    assert set(found) == ({rule} if rule else set()), found
    if rule:
        (finding,) = found[rule]
        assert (
            finding.severity == "warning" and "hinge" in finding.message and f"{lower:g}, {upper:g}" in finding.message
        )


def test_floating_base_links_without_collision_geometry(tmp_path):
    from pxr import UsdGeom, UsdPhysics

    stage = _robot(tmp_path / "arm.usda")
    stage.RemovePrim("/arm/anchor")
    UsdPhysics.ArticulationRootAPI.Apply(stage.GetPrimAtPath("/arm/base"))
    rules = _rules(profile_findings(stage))
    (bare,) = rules["collision-geometry"]
    assert bare.severity == "error" and "no link" in bare.message and "cannot stand" in bare.message
    assert "floating base" in rules["base-kind"][0].message and "fix_root_link=False" in rules["base-kind"][0].fix
    UsdPhysics.CollisionAPI.Apply(UsdGeom.Cube.Define(stage, "/arm/link/foot").GetPrim())
    (some,) = _rules(profile_findings(stage))["collision-geometry"]
    assert some.severity == "warning" and "1 of 2 links" in some.message and "base" in some.message


def test_missing_robot_api_names_the_default_prim_and_the_fix(tmp_path):
    (finding,) = _serious(profile_findings(_robot(tmp_path / "arm.usda", schema=False)))
    assert (finding.rule, finding.prim, finding.severity) == ("robot-api", "/arm", "warning")
    assert "IsaacRobotAPI" in finding.fix and "isaac:namespace" in finding.fix


def test_incomplete_robot_schema_lists_what_is_missing(tmp_path):
    rules = _rules(_serious(profile_findings(_robot(tmp_path / "arm.usda", drop_joint=True, namespace=False))))
    assert set(rules) == {"robot-joints", "robot-namespace"}
    assert "/arm/hinge" in rules["robot-joints"][0].message and "robotJoints" in rules["robot-joints"][0].fix


def test_unresolved_robot_targets_are_reported(tmp_path):
    from pxr import Sdf

    stage = _robot(tmp_path / "arm.usda")
    stage.GetPrimAtPath("/arm").GetRelationship("isaac:physics:robotLinks").AddTarget(Sdf.Path("/arm/gone"))
    (finding,) = _serious(profile_findings(stage))
    assert finding.rule == "robot-joints" and "/arm/gone" in finding.message


def test_stage_metadata(tmp_path):
    stage = _robot(tmp_path / "arm.usda", up="Y", mpu=0.01)
    stage.GetRootLayer().defaultPrim = ""
    rules = _rules(profile_findings(stage))
    assert {"up-axis", "meters-per-unit", "default-prim"} <= set(rules)
    assert "0.01" in rules["meters-per-unit"][0].message


def test_driven_joint_rules(tmp_path):
    stage = _robot(tmp_path / "arm.usda", max_velocity=0.0)
    prim = stage.GetPrimAtPath("/arm/hinge")
    prim.RemoveAppliedSchema("PhysicsDriveAPI:angular")
    prim.RemoveAppliedSchema("PhysicsJointStateAPI:angular")
    rules = _rules(_serious(profile_findings(stage)))
    assert set(rules) == {"driven-joint-drive", "driven-joint-state", "driven-joint-max-velocity"}
    assert all(f.prim == "/arm/hinge" for fs in rules.values() for f in fs)


def test_mimic_joint_rules(tmp_path):
    from pxr import Sdf

    stage = _robot(tmp_path / "arm.usda")
    prim = stage.GetPrimAtPath("/arm/hinge")
    prim.AddAppliedSchema("PhysxMimicJointAPI:rotZ")
    prim.CreateRelationship("physxMimicJoint:rotZ:referenceJoint").SetTargets(
        [Sdf.Path("/arm/anchor"), Sdf.Path("/arm/other")]
    )
    prim.CreateAttribute("drive:angular:physics:stiffness", Sdf.ValueTypeNames.Float).Set(10.0)
    rules = _rules(_serious(profile_findings(stage)))
    assert set(rules) == {"mimic-reference", "mimic-parameters", "mimic-drive-gains"}
    assert "gearing" in rules["mimic-parameters"][0].message


def test_gripper_site_rules(tmp_path):
    from pxr import Sdf, UsdGeom

    stage = _robot(tmp_path / "arm.usda")
    site = UsdGeom.Xform.Define(stage, "/arm/link/gripper").GetPrim()
    site.CreateAttribute("simready:attactment:socketType", Sdf.ValueTypeNames.Token).Set("Gripper")
    rules = _rules(_serious(profile_findings(stage)))
    assert set(rules) == {"gripper-max-opening", "gripper-forward-axis", "gripper-grip-line", "gripper-site-api"}
    site.CreateAttribute("custom:maxOpening", Sdf.ValueTypeNames.Float).Set(0.085)
    for name in ("forward_axis", "grip_line"):
        UsdGeom.BasisCurves.Define(stage, f"/arm/link/gripper/{name}").CreatePointsAttr([(0, -1, 0), (0, 1, 0)])
    site.AddAppliedSchema("IsaacSiteAPI")
    site.CreateAttribute("isaac:Description", Sdf.ValueTypeNames.String).Set("Grasp approach point")
    assert _serious(profile_findings(stage)) == []


def test_bodies_and_joint_targets(tmp_path):
    from pxr import Sdf, UsdPhysics

    stage = _robot(tmp_path / "arm.usda")
    UsdPhysics.RigidBodyAPI.Apply(stage.DefinePrim("/arm/ghost", "Scope"))
    UsdPhysics.RevoluteJoint(stage.GetPrimAtPath("/arm/hinge")).GetBody1Rel().SetTargets([Sdf.Path("/arm/nowhere")])
    rules = _rules(profile_findings(stage))
    assert rules["rigid-body-xformable"][0].prim == "/arm/ghost"
    assert "/arm/nowhere" in rules["joint-bodies"][0].message


def test_no_articulation_root(tmp_path):
    stage = _robot(tmp_path / "arm.usda")
    stage.GetPrimAtPath("/arm/anchor").RemoveAppliedSchema("PhysicsArticulationRootAPI")
    assert "articulation-root" in _rules(profile_findings(stage))


def test_naming_and_physics_layer_separation(tmp_path):
    from pxr import Usd, UsdGeom, UsdPhysics

    parts = Usd.Stage.CreateNew(str(tmp_path / "Parts.usda"))  # uppercase file name; geometry and physics together
    mesh = UsdGeom.Mesh.Define(parts, "/arm/link/visual")
    UsdPhysics.CollisionAPI.Apply(mesh.GetPrim())
    parts.SetDefaultPrim(parts.GetPrimAtPath("/arm"))
    parts.GetRootLayer().Save()
    stage = _robot(tmp_path / "arm.usda")
    stage.GetRootLayer().subLayerPaths.append("Parts.usda")
    UsdGeom.Xform.Define(stage, "/arm/leftGripper")  # camelCase beside snake_case names
    UsdGeom.Xform.Define(stage, "/arm/right_gripper")
    rules = _rules(profile_findings(stage))
    assert rules["file-naming"][0].prim.endswith("Parts.usda")
    assert rules["physics-layer"][0].prim.endswith("Parts.usda")
    assert "mixed" in rules["prim-naming"][0].message


def test_anymal_c_reports_the_missing_robot_api():
    findings = profile_findings(shared_asset("anybotics_anymal_c/usd/anymal_c.usda"))
    (api,) = [f for f in findings if f.rule == "robot-api"]
    assert api.prim == "/anymal" and "IsaacRobotAPI" in api.fix
    rules = {f.rule for f in findings}
    assert "driven-joint-state" not in rules and "driven-joint-drive" not in rules  # ANYmal C authors both
    assert "physics-layer" in rules  # collision meshes with PhysicsCollisionAPI in the instanceable mesh layer


def test_shared_go2_gets_the_collision_finding_and_anymal_c_its_bare_hips():
    go2 = _rules(profile_findings(shared_asset("unitree_go2/usd/go2_flat.usda")))
    (bare,) = go2["collision-geometry"]
    assert bare.severity == "error" and bare.prim == "/go2_description/base" and "19 links" in bare.message
    anymal = _rules(profile_findings(shared_asset("anybotics_anymal_c/usd/anymal_c.usda")))
    (hips,) = anymal["collision-geometry"]
    assert hips.severity == "warning" and "4 of 17 links" in hips.message and "LF_HIP" in hips.message
    assert "12 movable joint(s) without finite limits" in anymal["joint-limits"][0].message
    assert "drive-max-force" not in anymal  # maxForce 80 on every drive
    assert "floating base" in anymal["base-kind"][0].message


def test_read_asset_settings_converts_angular_gains_to_per_radian(tmp_path):
    from pxr import Sdf

    from transfer.robot.profile import read_asset_settings

    stage = _robot(tmp_path / "arm.usda")
    hinge = stage.GetPrimAtPath("/arm/hinge")
    hinge.GetAttribute("drive:angular:physics:maxForce").Set(40.0)
    for name, value in (("stiffness", 5.23599), ("damping", 0.174533), ("targetPosition", 30.0)):
        hinge.CreateAttribute(f"drive:angular:physics:{name}", Sdf.ValueTypeNames.Float).Set(value)
    hinge.CreateAttribute("state:angular:physics:position", Sdf.ValueTypeNames.Float).Set(-45.0)
    stage.GetRootLayer().Save()
    settings = read_asset_settings(tmp_path / "arm.usda")
    (joint,) = settings.joints.values()
    assert joint.name == "hinge" and joint.type == "revolute"
    assert joint.stiffness == pytest.approx(300.0, rel=1e-4) and joint.damping == pytest.approx(10.0, rel=1e-4)
    assert joint.target == pytest.approx(0.5235988) and joint.position == pytest.approx(-0.7853982)
    assert joint.max_force == 40.0 and joint.max_velocity == pytest.approx(100.0 * 3.14159265 / 180)
    assert (joint.lower, joint.upper) == (pytest.approx(-1.5707963), pytest.approx(1.5707963))


def test_scan_joints_reads_limits_frames_and_child_extents():
    scan = scan_joints(shared_asset("fourbar_pole/usd/fourbar_pole.usda"))
    joints = {j.name: j for j in scan.joints}
    assert (joints["ground_to_crank"].lower, joints["ground_to_crank"].upper) == (-60.0, 60.0)
    assert joints["root_joint"].type == "fixed" and joints["root_joint"].parent is None
    assert joints["rocker_to_ground"].excluded
    pole = joints["coupler_to_pole"]
    assert pole.child == "/fourbar_pole/coupler/pole" and pole.extent is not None
    coupler = joints["crank_to_coupler"].extent  # the nested pole's geometry is not the coupler's
    assert coupler[5] - coupler[2] < pole.extent[5] - pole.extent[2]
    assert scan.articulated == frozenset(scan.bodies)
