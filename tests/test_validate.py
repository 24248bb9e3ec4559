"""``transfer validate``: the joint_movement test on both real engines, on real robots and on generated stages.

Real robots (from ``../shared``, skipped when absent): every revolute joint moves on PhysX and on Newton,
``same_child_bodies`` is true and the engines agree (each driven joint moves the same way and reaches within the
tolerance). Newton's Ant: PhysX stops a foot far short of where Newton (and the limits) take it, and validate says the
engines disagree. A generated Ant leg (nv_ant.xml's light links, armature and joint damping): its hip and ankle reach
their limits on both engines; authored with the ankle outside its range, Newton kicks it past the far limit and
fails. Generated stages (authored here with pxr): a two-link arm locked by its
limits (lower = upper = 10 deg) fails on both engines with the reason (non-finite, unstable, beyond its limits) and
leaves no MUJOCO_LOG.TXT; an empty stage exits 2; a seized joint fails with its cause, an all-fixed asset is skipped, a loose cabinet's drawer opens toward its far limit, french doors each open
their own way, a spherical joint moves on both engines, a D6 joint moves by the PhysX nudge and is skipped on Newton
with the capability message. The tracker math is checked on synthetic poses, without an engine.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import shared_asset
from transfer.runs.validate import (
    ANGULAR_SPEED,
    LINEAR_SPEED,
    _candidates,
    _open_direction,
    along_axis,
    track,
)

pytestmark = pytest.mark.filterwarnings("ignore")

BOTH = ("physx", "newton")


def _engines() -> None:
    pytest.importorskip("pxr")
    pytest.importorskip("ovphysx")
    pytest.importorskip("newton")


@functools.cache
def _report(asset: str, backends: tuple[str, ...] = BOTH):
    from transfer.runs.validate import validate

    return validate(asset, backends)


def report(asset: Path | str, backends: tuple[str, ...] = BOTH):
    _engines()
    return _report(str(asset), backends)


# --- generated stages ----------------------------------------------------------------------------------------------


def _new_stage(path: Path):
    from pxr import Usd, UsdGeom, UsdPhysics

    stage = Usd.Stage.CreateNew(str(path))
    UsdGeom.SetStageUpAxis(stage, UsdGeom.Tokens.z)
    UsdGeom.SetStageMetersPerUnit(stage, 1.0)
    UsdPhysics.Scene.Define(stage, "/physicsScene")
    stage.SetDefaultPrim(UsdGeom.Xform.Define(stage, "/cabinet").GetPrim())
    return stage


def _box(stage, path: str, position, size, mass: float) -> None:
    from pxr import Gf, UsdGeom, UsdPhysics

    xform = UsdGeom.Xform.Define(stage, path)
    xform.AddTranslateOp().Set(Gf.Vec3d(*position))
    UsdPhysics.RigidBodyAPI.Apply(xform.GetPrim())
    UsdPhysics.MassAPI.Apply(xform.GetPrim()).CreateMassAttr(mass)
    cube = UsdGeom.Cube.Define(stage, f"{path}/geom")
    cube.CreateSizeAttr(1.0)
    cube.AddScaleOp().Set(Gf.Vec3f(*size))
    UsdPhysics.CollisionAPI.Apply(cube.GetPrim())


def _joint(stage, kind: str, path: str, body0, body1, pos0, pos1, axis=None, limits=None):
    from pxr import Gf, Sdf, UsdPhysics

    cls = {
        "revolute": UsdPhysics.RevoluteJoint,
        "prismatic": UsdPhysics.PrismaticJoint,
        "fixed": UsdPhysics.FixedJoint,
        "spherical": UsdPhysics.SphericalJoint,
        "d6": UsdPhysics.Joint,
    }[kind]
    joint = cls.Define(stage, path)
    if body0:
        joint.CreateBody0Rel().SetTargets([Sdf.Path(body0)])
    joint.CreateBody1Rel().SetTargets([Sdf.Path(body1)])
    joint.CreateLocalPos0Attr(Gf.Vec3f(*pos0))
    joint.CreateLocalPos1Attr(Gf.Vec3f(*pos1))
    if axis:
        joint.CreateAxisAttr(axis)
    if limits:
        joint.CreateLowerLimitAttr(limits[0])
        joint.CreateUpperLimitAttr(limits[1])
    return joint


def _anchored(stage, body: str, position) -> None:
    """A fixed joint from the world to ``body`` carrying the articulation root: a fixed-base articulation."""
    from pxr import UsdPhysics

    anchor = _joint(stage, "fixed", "/cabinet/anchor", None, body, position, (0, 0, 0))
    UsdPhysics.ArticulationRootAPI.Apply(anchor.GetPrim())


def write_drawer(path: Path) -> Path:
    """A loose cabinet (no articulation root) with a drawer on a prismatic slide along x, limited -0.42..0.01 m."""
    stage = _new_stage(path)
    _box(stage, "/cabinet/body", (0, 0, 0.5), (0.6, 1.0, 1.0), 20.0)
    _box(stage, "/cabinet/drawer", (0, 0, 0.6), (0.56, 0.9, 0.2), 2.0)
    _joint(
        stage,
        "prismatic",
        "/cabinet/slide",
        "/cabinet/body",
        "/cabinet/drawer",
        (0, 0, 0.1),
        (0, 0, 0),
        "X",
        (-0.42, 0.01),
    )
    stage.GetRootLayer().Save()
    return path


def write_french_doors(path: Path) -> Path:
    """A loose cabinet with two doors meeting at a seam: left hinge limited 0..130 deg, right hinge -130..0 deg (both
    open outward, away from the cabinet; driving them one shared way would jam one into the cabinet)."""
    stage = _new_stage(path)
    _box(stage, "/cabinet/body", (0, 0, 0.5), (1.0, 1.0, 1.0), 20.0)
    for side, y, limits in (("left", 0.25, (0.0, 130.0)), ("right", -0.25, (-130.0, 0.0))):
        _box(stage, f"/cabinet/{side}_door", (0.51, y, 0.5), (0.02, 0.49, 1.0), 2.0)
        _joint(
            stage,
            "revolute",
            f"/cabinet/{side}_hinge",
            "/cabinet/body",
            f"/cabinet/{side}_door",
            (0.51, 2 * y, 0),
            (0, y, 0),
            "Z",
            limits,
        )
    stage.GetRootLayer().Save()
    return path


def write_spherical(path: Path) -> Path:
    """A fixed-base articulation: a rod hanging from a base on a spherical joint (axis z)."""
    stage = _new_stage(path)
    _box(stage, "/cabinet/base", (0, 0, 1.0), (0.2, 0.2, 0.2), 5.0)
    _box(stage, "/cabinet/rod", (0, 0, 0.55), (0.05, 0.05, 0.7), 1.0)
    _anchored(stage, "/cabinet/base", (0, 0, 1.0))
    _joint(stage, "spherical", "/cabinet/ball", "/cabinet/base", "/cabinet/rod", (0, 0, -0.1), (0, 0, 0.35), "Z")
    stage.GetRootLayer().Save()
    return path


def write_seized(path: Path) -> Path:
    """A fixed-base articulation whose one hinge has lower = upper = 0: locked."""
    stage = _new_stage(path)
    _box(stage, "/cabinet/body", (0, 0, 0.5), (1.0, 1.0, 1.0), 20.0)
    _box(stage, "/cabinet/door", (0.51, 0.0, 0.5), (0.02, 1.0, 1.0), 2.0)
    _anchored(stage, "/cabinet/body", (0, 0, 0.5))
    _joint(
        stage,
        "revolute",
        "/cabinet/hinge",
        "/cabinet/body",
        "/cabinet/door",
        (0.51, 0.5, 0),
        (0, 0.5, 0),
        "Z",
        (0.0, 0.0),
    )
    stage.GetRootLayer().Save()
    return path


def write_locked_arm(path: Path, lower: float = 10.0, upper: float = 10.0) -> Path:
    """A fixed-base two-link arm whose revolute joints j1, j2 (axis z) are locked by their limits (lower = upper =
    10 deg) while authored at 0 deg: outside the range they lock. MuJoCo went unstable on it and reported 175 deg of
    "motion"; PhysX's poses went non-finite."""
    stage = _new_stage(path)
    _box(stage, "/cabinet/base", (0, 0, 0.5), (0.2, 0.2, 0.2), 5.0)
    _box(stage, "/cabinet/link1", (0.3, 0, 0.5), (0.4, 0.05, 0.05), 1.0)
    _box(stage, "/cabinet/link2", (0.7, 0, 0.5), (0.4, 0.05, 0.05), 1.0)
    _anchored(stage, "/cabinet/base", (0, 0, 0.5))
    for name, body0, body1, pos0 in (("j1", "base", "link1", (0.1, 0, 0)), ("j2", "link1", "link2", (0.2, 0, 0))):
        _joint(
            stage,
            "revolute",
            f"/cabinet/{name}",
            f"/cabinet/{body0}",
            f"/cabinet/{body1}",
            pos0,
            (-0.2, 0, 0),
            "Z",
            (lower, upper),
        )
    stage.GetRootLayer().Save()
    return path


def write_all_fixed(path: Path) -> Path:
    stage = _new_stage(path)
    _box(stage, "/cabinet/body", (0, 0, 0.5), (0.6, 1.0, 1.0), 20.0)
    _box(stage, "/cabinet/top", (0, 0, 1.1), (0.3, 0.3, 0.1), 1.0)
    _joint(stage, "fixed", "/cabinet/weld", "/cabinet/body", "/cabinet/top", (0, 0, 0.6), (0, 0, 0))
    stage.GetRootLayer().Save()
    return path


def write_d6(path: Path) -> Path:
    """A loose tray on a D6 joint that leaves only translation along x free (-0.2..0.2 m)."""
    from pxr import UsdPhysics

    stage = _new_stage(path)
    _box(stage, "/cabinet/body", (0, 0, 0.5), (0.6, 1.0, 1.0), 20.0)
    _box(stage, "/cabinet/tray", (0, 0, 1.1), (0.3, 0.3, 0.1), 1.0)
    joint = _joint(stage, "d6", "/cabinet/slider", "/cabinet/body", "/cabinet/tray", (0, 0, 0.6), (0, 0, 0))
    for axis, low, high in (
        ("transX", -0.2, 0.2),
        *((a, 1.0, -1.0) for a in ("transY", "transZ", "rotX", "rotY", "rotZ")),
    ):
        limit = UsdPhysics.LimitAPI.Apply(joint.GetPrim(), axis)
        limit.CreateLowAttr(low)
        limit.CreateHighAttr(high)
    stage.GetRootLayer().Save()
    return path


def write_ant_leg(path: Path, ankle: tuple[float, float] = (30.0, 100.0)) -> Path:
    """nv_ant.xml's front-left leg on a fixed torso: a hip (z, -40..40 deg) and an ankle (axis (-1, 1, 0)), on links
    of 0.04 and 0.07 kg with Newton's joint armature (0.01 kg m^2, ten times the leg's own inertia) and damping
    (0.1 N m s/rad), as the MJCF converter writes them. The ankle is authored at 0 deg: outside its range with the
    default limits, 30..100 deg (nv_ant's), inside it with -30..100."""
    from pxr import Gf, Sdf

    stage = _new_stage(path)
    _box(stage, "/cabinet/torso", (0, 0, 0.75), (0.3, 0.3, 0.3), 0.48)
    _box(stage, "/cabinet/leg", (0.2, 0.2, 0.75), (0.2, 0.08, 0.08), 0.04)
    _box(stage, "/cabinet/foot", (0.4, 0.4, 0.75), (0.4, 0.08, 0.08), 0.07)
    _anchored(stage, "/cabinet/torso", (0, 0, 0.75))
    hip = _joint(
        stage,
        "revolute",
        "/cabinet/hip",
        "/cabinet/torso",
        "/cabinet/leg",
        (0.2, 0.2, 0),
        (0, 0, 0),
        "Z",
        (-40.0, 40.0),
    )
    foot = _joint(
        stage, "revolute", "/cabinet/ankle", "/cabinet/leg", "/cabinet/foot", (0.2, 0.2, 0), (0, 0, 0), "X", ankle
    )
    turn = Gf.Quatf(0.38268343, 0, 0, 0.9238795)  # x turned 135 deg about z: the axis (-1, 1, 0)
    foot.CreateLocalRot0Attr(turn)
    foot.CreateLocalRot1Attr(turn)
    for joint in (hip, foot):
        joint.GetPrim().CreateAttribute("newton:armature", Sdf.ValueTypeNames.Float).Set(0.01)
        joint.GetPrim().CreateAttribute("newton:damping", Sdf.ValueTypeNames.Float).Set(0.1 * math.pi / 180.0)
    stage.GetRootLayer().Save()
    return path


@pytest.fixture(scope="module")
def stages(tmp_path_factory) -> dict[str, Path]:
    pytest.importorskip("pxr")
    root = tmp_path_factory.mktemp("validate")
    writers = {
        "drawer": write_drawer,
        "french_doors": write_french_doors,
        "spherical": write_spherical,
        "seized": write_seized,
        "all_fixed": write_all_fixed,
        "d6": write_d6,
        "locked_arm": write_locked_arm,
    }
    return {name: write(root / f"{name}.usda") for name, write in writers.items()}


def _joint_result(result, name: str):
    return next(j for j in result.joints if j.name == name)


# --- real robots ---------------------------------------------------------------------------------------------------

ROBOTS = {
    "anymal_c": "anybotics_anymal_c/usd/anymal_c.usda",
    "anymal_d": "anybotics_anymal_d/usd/anymal_d.usda",
    "fourbar_pole": "fourbar_pole/usd/fourbar_pole.usda",
}


def _robot(name: str) -> Path:
    if name == "ant":
        from transfer.cli.inspect import default_asset

        return Path(default_asset())
    return shared_asset(ROBOTS[name])


@pytest.mark.parametrize("name", ROBOTS)
def test_robot_passes_on_both_engines_with_every_revolute_joint_moving(name):
    r = report(_robot(name))
    revolute = {
        engine: {j.name: (j.moved, j.rotation_deg) for j in result.joints if j.type == "revolute"}
        for engine, result in r.joint_movement.items()
    }
    for engine, result in r.joint_movement.items():
        assert result.status == "pass", (engine, result.reason)
        assert revolute[engine] and all(moved for moved, _ in revolute[engine].values()), (engine, revolute[engine])
    assert set(revolute["physx"]) == set(revolute["newton"])
    assert r.same_child_bodies is True, r.same_child_detail
    assert {d["joint"].rsplit("/", 1)[-1] for d in r.same_child_detail} == set(revolute["physx"])
    assert r.joint_disagreements == [] and r.engines_disagree is None, r.engines_disagree
    assert r.exit_code == 0


def test_engines_disagree_on_the_ants_feet_where_physx_stops_short():
    """Newton's ant.usda: PhysX drives a foot a fraction of the way Newton (and the 30..100 deg range) takes it, its
    light links jumping tens of degrees in one step; the legs agree. Both verdicts pass, so only the comparison says
    so: the line names the joint and both reaches, and the exit status is 1."""
    r = report(_robot("ant"))
    assert all(result.status == "pass" for result in r.joint_movement.values())
    feet = {d["joint"].rsplit("/", 1)[-1]: d for d in r.joint_disagreements}
    assert feet and all(name.endswith("_foot") and d["kind"] == "reach" for name, d in feet.items()), feet
    for name, d in feet.items():
        physx, newton = d["physx"]["reached"], d["newton"]["reached"]
        assert abs(physx - newton) > 25.0 and f"{name} reached apart: physx " in r.engines_disagree
        assert f"{physx:.4g} deg" in r.engines_disagree and f"{newton:.4g} deg" in r.engines_disagree
    assert r.to_dict()["joint_disagreements"] == r.joint_disagreements
    assert r.exit_code == 1


def test_articulation_joints_are_confirmed_by_each_engines_own_coordinate():
    r = report(_robot("anymal_c"))
    for engine, result in r.joint_movement.items():
        assert all(j.confirmed_by == "coordinate" for j in result.joints), (engine, result.joints)
        assert {j.child.rsplit("/", 1)[-1] for j in result.joints if j.name.endswith("KFE")} == {
            f"{leg}_SHANK" for leg in ("LF", "LH", "RF", "RH")
        }


def test_anymal_c_profile_reports_the_missing_robot_api_with_its_fix():
    r = report(_robot("anymal_c"))
    (finding,) = [f for f in r.profile if f.rule == "robot-api"]
    assert finding.prim == "/anymal" and "IsaacRobotAPI" in finding.message
    assert "IsaacRobotAPI" in finding.fix and "isaac:physics:robotJoints" in finding.fix
    assert r.exit_code == 0  # findings fail the run only with --strict
    r.strict = True
    try:
        assert r.exit_code == 1
    finally:
        r.strict = False


# --- generated stages ----------------------------------------------------------------------------------------------


def test_seized_joint_fails_with_its_cause(stages):
    r = report(stages["seized"])
    for engine, result in r.joint_movement.items():
        assert result.status == "fail", engine
        assert "0 of 1 joints responded" in result.reason
        assert "hinge (lower = upper = 0)" in result.reason and "seized" in result.reason
        assert len(result.attempts) == 2  # toward +, then the still-idle joint toward -
        assert not _joint_result(result, "hinge").moved
    assert r.exit_code == 1 and r.same_child_bodies is None


def test_all_fixed_is_skipped_before_any_engine_runs(stages):
    from transfer.runs.validate import joint_movement

    for engine in BOTH:
        result = joint_movement(stages["all_fixed"], engine)
        assert result.status == "skip" and "FixedJoint" in result.reason and not result.attempts


def test_loose_drawer_opens_toward_its_far_limit_on_both_engines(stages):
    r = report(stages["drawer"])
    for engine, result in r.joint_movement.items():
        assert result.status == "pass", (engine, result.reason)
        assert result.pinned == ("/cabinet/body",)  # the loose assembly's base body, pinned
        slide = _joint_result(result, "slide")
        assert slide.moved and slide.direction == "-" and slide.displacement < -0.02, (engine, slide)
        assert slide.commanded == "-" and slide.translation_pct >= 2.0
    physx = _joint_result(r.joint_movement["physx"], "slide")
    assert math.isclose(physx.displacement, -0.42, abs_tol=0.01) and physx.travel_fraction > 0.95
    assert r.same_child_bodies is True


def test_french_doors_both_open_without_jamming(stages):
    r = report(stages["french_doors"])
    for engine, result in r.joint_movement.items():
        left, right = _joint_result(result, "left_hinge"), _joint_result(result, "right_hinge")
        assert left.moved and right.moved, (engine, result.joints)
        assert (left.direction, right.direction) == ("+", "-")
        assert left.displacement > 5.0 and right.displacement < -5.0
        assert math.isclose(left.displacement, -right.displacement, rel_tol=0.05)  # mirror images: neither jammed
    physx = r.joint_movement["physx"]
    assert _joint_result(physx, "left_hinge").travel_fraction > 0.95
    assert r.same_child_bodies is True


def test_spherical_joint_moves_on_both_engines(stages):
    r = report(stages["spherical"])
    for engine, result in r.joint_movement.items():
        ball = _joint_result(result, "ball")
        assert result.status == "pass" and ball.moved and ball.rotation_deg >= 1.0, (engine, ball)
        assert ball.direction.startswith("swing ")
    assert r.same_child_bodies is True


def test_d6_moves_by_the_physx_nudge_and_is_skipped_on_newton(stages):
    r = report(stages["d6"])
    physx, newton = r.joint_movement["physx"], r.joint_movement["newton"]
    assert physx.status == "pass" and _joint_result(physx, "slider").direction.startswith("nudge ")
    assert newton.status == "skip" and "no verified articulation actuation path" in newton.reason
    assert r.same_child_bodies is None


def test_an_engine_that_refuses_the_asset_fails_it_with_the_engines_reason(tmp_path):
    from pxr import UsdGeom

    path = write_drawer(tmp_path / "drawer_with_a_hole.usda")
    stage = _open(path)
    UsdGeom.Xform.Define(stage, "/cabinet/drawer/handle").GetPrim().GetReferences().AddReference("missing_handle.usda")
    stage.GetRootLayer().Save()
    result = report(path, ("newton",)).joint_movement["newton"]
    assert result.status == "fail" and "newton could not load or simulate the asset" in result.reason
    assert "missing_handle.usda" in result.reason


def _open(path: Path):
    from pxr import Usd

    return Usd.Stage.Open(str(path))


def test_the_users_file_is_never_written(stages):
    path = stages["french_doors"]
    before = hashlib.sha256(path.read_bytes()).hexdigest(), path.stat().st_mtime_ns
    report(path)
    assert (hashlib.sha256(path.read_bytes()).hexdigest(), path.stat().st_mtime_ns) == before


def test_cli_exit_codes_and_json(stages, capsys):
    from transfer.cli import main

    _engines()
    assert main(["validate", str(stages["seized"]), "--backend", "physx", "--json"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert set(data["joint_movement"]) == {"physx"} and data["same_child_bodies"] is None
    (joint,) = data["joint_movement"]["physx"]["joints"]
    assert {
        "name",
        "type",
        "parent",
        "child",
        "moved",
        "rotation_deg",
        "translation_pct",
        "travel_fraction",
        "direction",
    } <= set(joint)
    assert all(set(f) == {"rule", "prim", "message", "fix", "severity"} for f in data["profile"])
    assert all(f["severity"] in ("error", "warning", "info") for f in data["profile"])
    assert main(["validate", str(stages["all_fixed"]), "--strict"]) == 1  # skipped, but profile findings
    out = capsys.readouterr().out
    assert "SKIP" in out and "profile:" in out
    assert main(["validate", str(stages["all_fixed"]) + ".missing"]) == 2


def test_locked_arm_fails_on_both_engines_with_the_reason_and_no_mujoco_log(stages, tmp_path, monkeypatch, capsys):
    """lower = upper = 10 deg, authored at 0: Newton (MuJoCo) went unstable and once passed it with 175 deg of
    "motion"; PhysX's poses go non-finite. Both must fail, saying why, and MuJoCo must not write MUJOCO_LOG.TXT."""
    from transfer.cli import main

    _engines()
    monkeypatch.chdir(tmp_path)
    r = report(stages["locked_arm"])
    for engine, result in r.joint_movement.items():
        assert result.status == "fail", (engine, result.reason)
        assert not any(j.moved for j in result.joints), (engine, result.joints)
        assert result.problems and "went unstable or beyond the authored limits" in result.reason, engine
    physx, newton = r.joint_movement["physx"], r.joint_movement["newton"]
    assert any("non-finite pose" in p for p in physx.problems), physx.problems
    assert physx.warnings  # the engine's own errors, captured
    assert any("beyond its authored limits" in p and "limits [10, 10] deg" in p for p in newton.problems) or any(
        "The simulation is unstable" in p for p in newton.problems
    ), newton.problems
    assert r.exit_code == 1 and r.engines_disagree is None
    assert main(["validate", str(stages["locked_arm"]), "--backend", "newton"]) == 1
    assert "newton  FAIL" in capsys.readouterr().out
    assert not list(tmp_path.glob("MUJOCO_LOG*")) and not list(Path.cwd().glob("MUJOCO_LOG*"))


def test_a_limited_joint_moving_inside_its_range_passes_on_both_engines(tmp_path):
    """The same arm with a real range (-10..10 deg): moving inside its limits is no problem on either engine."""
    r = report(write_locked_arm(tmp_path / "arm.usda", -10.0, 10.0))
    for engine, result in r.joint_movement.items():
        assert result.status == "pass" and not result.problems, (engine, result.reason)
        for j in result.joints:
            assert j.moved and j.rotation_deg <= 20.0 + 2.0, (engine, j)  # the whole range, within the tolerance


def test_a_light_leg_with_armature_and_damping_reaches_its_limits_on_both_engines(tmp_path):
    """The Ant leg inside its ranges: Newton's drive (a velocity servo scaled to the joint's inertia, armature
    included) takes the hip to its 40 deg limit as PhysX's does; Newton's former force pair, scaled to the link's mass
    alone, moved it 1 deg in 2 s against the armature and damping. The engines agree."""
    r = report(write_ant_leg(tmp_path / "leg.usda", ankle=(-30.0, 100.0)))
    for engine, result in r.joint_movement.items():
        assert result.status == "pass" and not result.problems, (engine, result.reason)
        hip, ankle = _joint_result(result, "hip"), _joint_result(result, "ankle")
        assert hip.commanded == hip.direction == "+" and abs(hip.reached - 40.0) < 5.0, (engine, hip)
        assert ankle.commanded == ankle.direction == "+" and ankle.reached > 75.0, (engine, ankle)
    assert r.joint_disagreements == [] and r.exit_code == 0, r.engines_disagree


def test_an_ankle_authored_outside_its_range_is_kicked_past_the_far_limit_on_newton(tmp_path):
    """nv_ant.xml's ankles are authored at 0 deg, outside 30..100: PhysX starts them at the near limit, Newton's
    limit (its default gains, underdamped on these light links) throws the foot through the range and beyond the far
    limit. validate once passed nv_ant on Newton (its foot at 130 deg, as far past 100 as 0 is short of 30); now
    Newton fails, naming the joint and the authored pose, and the engines disagree."""
    r = report(write_ant_leg(tmp_path / "leg.usda"))
    physx, newton = r.joint_movement["physx"], r.joint_movement["newton"]
    assert physx.status == "pass" and abs(_joint_result(physx, "ankle").reached - 100.0) < 2.0
    assert newton.status == "fail", newton.reason
    (problem,) = [p for p in newton.problems if p.startswith("ankle: moved beyond its authored limits")]
    assert "limits [30, 100] deg" in problem and "its first pose, 0 deg, is outside them" in problem
    assert r.engines_disagree == "engines disagree: physx PASS, newton FAIL" and r.exit_code == 1


def test_empty_stage_exits_2_and_unresolved_references_are_named(tmp_path, capsys):
    from pxr import Usd

    from transfer.cli import main

    empty = Usd.Stage.CreateNew(str(tmp_path / "empty.usda"))
    empty.GetRootLayer().Save()
    assert main(["validate", str(tmp_path / "empty.usda")]) == 2
    err = capsys.readouterr().err
    assert "the stage is empty" in err and "empty.usda" in err
    stage = Usd.Stage.CreateNew(str(tmp_path / "hole.usda"))
    stage.DefinePrim("/robot", "Xform").GetReferences().AddReference("missing_robot.usda")
    stage.GetRootLayer().Save()
    assert main(["validate", str(tmp_path / "hole.usda")]) == 2
    err = capsys.readouterr().err
    assert "missing_robot.usda" in err and "at </robot>" in err


def test_unresolved_references_are_listed_in_the_report(tmp_path):
    from pxr import UsdGeom

    path = write_drawer(tmp_path / "drawer_with_a_hole.usda")
    stage = _open(path)
    UsdGeom.Xform.Define(stage, "/cabinet/drawer/handle").GetPrim().GetReferences().AddReference("missing_handle.usda")
    stage.GetRootLayer().Save()
    r = report(path, ("physx",))
    assert any("missing_handle.usda" in u and "/cabinet/drawer/handle" in u for u in r.unresolved), r.unresolved
    assert r.to_dict()["unresolved"] == r.unresolved


def _result(backend: str, status: str, moved: dict[str, bool]):
    from transfer.runs.validate import JointResult, MovementResult

    joints = [JointResult(n, f"/a/{n}", "revolute", "/a/p", f"/a/{n}_c", moved=m) for n, m in moved.items()]
    return MovementResult(backend, status, "", joints)


def test_engines_disagree_is_one_line_naming_the_verdicts_or_the_joints():
    from transfer.runs.validate import ValidateReport

    def line(physx, newton):
        return ValidateReport("a.usda", {"physx": physx, "newton": newton}, None, [], []).engines_disagree

    assert line(_result("physx", "pass", {"a": True}), _result("newton", "pass", {"a": True})) is None
    text = line(_result("physx", "fail", {"a": False}), _result("newton", "pass", {"a": True}))
    assert text == "engines disagree: physx FAIL, newton PASS"
    text = line(_result("physx", "pass", {"a": True, "b": True}), _result("newton", "pass", {"a": True, "b": False}))
    assert text == "engines disagree: moved on physx only: b" and "\n" not in text
    assert line(_result("physx", "skip", {}), _result("newton", "pass", {"a": True})) is None


def _driven(backend: str, joints: dict[str, tuple[str, str, float]], kind: str = "revolute"):
    """A passing result whose joints moved: ``{name: (commanded, direction, reached)}``, from 0."""
    from transfer.runs.validate import JointResult, MovementResult

    rows = [
        JointResult(
            n,
            f"/a/{n}",
            kind,
            "/a/p",
            f"/a/{n}_c",
            moved=True,
            commanded=c,
            direction=d,
            reached=q,
            displacement=q,
            diagonal=1.0,
        )
        for n, (c, d, q) in joints.items()
    ]
    return MovementResult(backend, "pass", "", rows)


def test_engines_disagree_on_a_driven_joints_drive_direction_or_reach_and_exit_1():
    """nv_ant before the fixes: hip_1 moved 40 deg on PhysX's + drive, on Newton only on the retry (-3.8 deg); a
    reach a quarter of the travel apart; a joint moving opposite ways. Passive motion is not compared."""
    from transfer.runs.validate import ValidateReport

    physx = _driven(
        "physx",
        {
            "hip_1": ("+", "+", 40.0),
            "ankle": ("+", "+", 100.0),
            "knee": ("-", "-", -90.0),
            "elbow": ("+", "+", 80.0),
            "toe": ("passive", "passive", 5.0),
        },
    )
    newton = _driven(
        "newton",
        {
            "hip_1": ("-", "-", -3.8),
            "ankle": ("+", "+", 70.0),
            "knee": ("-", "+", 2.0),
            "elbow": ("+", "+", 71.0),
            "toe": ("passive", "passive", 60.0),
        },
    )
    r = ValidateReport("a.usda", {"physx": physx, "newton": newton}, None, [], [])
    kinds = {d["joint"]: d["kind"] for d in r.joint_disagreements}
    assert kinds == {"/a/hip_1": "drives", "/a/ankle": "reach", "/a/knee": "direction"}  # elbow: 9 deg, within
    assert r.engines_disagree.startswith("engines disagree: hip_1 moved on different drives: ")
    assert "hip_1 moved on different drives: physx 40 deg (+40, driven +), newton -3.8 deg (-3.8, driven -)" in (
        r.engines_disagree
    )
    assert "ankle reached apart: physx 100 deg (+100, driven +), newton 70 deg (+70, driven +)" in r.engines_disagree
    assert r.exit_code == 1 and "\n" not in r.engines_disagree
    same = ValidateReport("a.usda", {"physx": physx, "newton": _driven("newton", {})}, None, [], [])
    assert same.joint_disagreements == [] and same.exit_code == 0  # nothing moved on both: nothing to compare


reaches = st.floats(-170, 170).filter(lambda q: abs(q) >= 1.0)


@settings(max_examples=200, deadline=None)
@given(reached=reaches, other=st.floats(-170, 170), kind=st.sampled_from(["revolute", "prismatic"]))
def test_reach_comparison_laws(reached, other, kind):
    """Laws: an engine agrees with itself; the comparison is symmetric; opposite directions always disagree; reaches
    within the tolerance (a quarter of the larger travel, and at least 10 deg or 10 % of the diagonal) agree."""
    from transfer.runs.validate import REACH_FLOOR_DEG, REACH_FLOOR_PCT, REACH_FRACTION, compare_joints

    scale = 1.0 if kind == "revolute" else 0.01
    reached, other = reached * scale, other * scale
    sign = "+" if reached > 0 else "-"

    def result(backend, q, direction=None):
        return _driven(backend, {"j": (sign, direction or ("+" if q > 0 else "-"), q)}, kind)

    assert compare_joints([result("physx", reached), result("newton", reached)]) == []
    flipped = compare_joints([result("physx", reached), result("newton", -reached)])
    assert [d["kind"] for d in flipped] == ["direction"]
    pair = [result("physx", reached), result("newton", other, sign)]
    forward, backward = compare_joints(pair), compare_joints(pair[::-1])
    assert [d["kind"] for d in forward] == [d["kind"] for d in backward]
    floor = REACH_FLOOR_DEG if kind == "revolute" else REACH_FLOOR_PCT / 100.0
    within = abs(reached - other) <= max(floor, REACH_FRACTION * max(abs(reached), abs(other)))
    assert (forward == []) == within


def test_a_limit_is_judged_on_each_side():
    """nv_ant's ankle on Newton: authored at 0 deg (30 short of its 30..100 range) and thrown to 130 deg. Measured
    against the excess it started with on either side, that passed; each side on its own, it is 30 deg past 100."""
    from transfer.runs.validate import _problem

    ankle = _J("revolute", 30.0, 100.0, axis="Z")

    def problem(*angles):
        return _problem(np.array([[0, 0, 0, *_quat([0, 0, 1], a)] for a in angles]), ankle, 1 / 120, 1)

    assert "reached 130 deg" in problem(0, 60, 130) and "its first pose, 0 deg, is outside them" in problem(0, 130)
    assert problem(0, 30, 100, 104) is None  # into the range, then within the tolerance past it
    assert problem(0, 10, 20) is None  # still short of the range, never further from it
    assert "reached -10 deg" in problem(0, -10)  # further from it than it started


@settings(max_examples=100, deadline=None)
@given(data=st.data(), bodies=st.integers(2, 9))
def test_closed_loops_have_one_driver_each(data, bodies):
    """Laws on random trees with extra joints: a tree has no loop; each extra joint closes one, made of itself and
    the tree path between its bodies; loops that share a joint share a driver, which is one of their joints."""
    from transfer.runs.validate import closed_loops

    parents = [data.draw(st.integers(0, b - 1)) for b in range(1, bodies)]
    tree = [(f"/t{b}", f"/b{p}", f"/b{b}") for b, p in enumerate(parents, start=1)]
    tree.append(("/anchor", None, "/b0"))
    drivable = {j for j, _, _ in tree if j != "/anchor"}
    assert closed_loops(tree, drivable) == {}
    a, b = data.draw(st.integers(0, bodies - 1)), data.draw(st.integers(0, bodies - 1))
    if a == b:
        return
    extra = [*tree, ("/extra", f"/b{a}", f"/b{b}")]
    loops = closed_loops(extra, drivable | {"/extra"})

    def up(node):
        path = []
        while node:
            path.append(f"/t{node}")
            node = parents[node - 1]
        return path

    on_path = set(up(a)) ^ set(up(b))  # the tree path between a and b
    assert set(loops) == on_path | {"/extra"}
    assert len(set(loops.values())) == 1 and next(iter(loops.values())) in loops


# --- the plan and the tracker, without an engine --------------------------------------------------------------------


class _J:
    def __init__(
        self,
        type="revolute",
        lower=None,
        upper=None,
        axis="X",
        frame0=(0, 0, 0, 0, 0, 0, 1),
        frame1=(0, 0, 0, 0, 0, 0, 1),
    ):
        self.type, self.lower, self.upper, self.axis, self.frame0 = type, lower, upper, axis, frame0
        self.frame1 = frame1


@pytest.mark.parametrize(
    ("kind", "lower", "upper", "sign"),
    [
        ("revolute", 0.0, 130.0, 1),
        ("revolute", -130.0, 0.0, -1),
        ("prismatic", -0.42, 0.01, -1),
        ("revolute", -60.0, 60.0, 0),
        ("revolute", None, None, 0),
        ("revolute", 0.0, 0.0, 0),
        ("prismatic", 0.1, 0.3, 1),
    ],
)
def test_open_direction_is_the_limit_farthest_from_zero(kind, lower, upper, sign):
    assert _open_direction(_J(kind, lower, upper))[0] == sign
    commands = _candidates(_J(kind, lower, upper))
    assert [c[1] for c in commands] == ([sign, sign] if sign else [1, -1])
    baseline = LINEAR_SPEED if kind == "prismatic" else ANGULAR_SPEED
    assert all(c[2] >= baseline for c in commands)


def test_speed_scales_with_travel_and_spherical_swings_both_axes_both_ways():
    door = _candidates(_J("revolute", 0.0, 130.0))[0]
    assert door[2] > ANGULAR_SPEED and door[2] * 2.0 >= 130.0  # opens within the 2 s attempt
    assert _candidates(_J("prismatic", -0.42, 0.01))[0][2] * 2.0 >= 0.42
    swings = _candidates(_J("spherical"))
    assert {(c[0], c[1], c[3]) for c in swings} == {("swing", s, a) for s in (1, -1) for a in (1, 2)}
    assert _candidates(_J("d6")) == []


def _quat(axis, degrees):
    half = math.radians(degrees) / 2
    return [*(np.asarray(axis, dtype=float) * math.sin(half)), math.cos(half)]


def test_tracker_measures_rotation_angle_and_translation_percent():
    poses = np.array(
        [[0, 0, 0, *_quat([0, 0, 1], 0)], [0.03, 0.04, 0, *_quat([0, 0, 1], 30)], [0, 0, 0, *_quat([1, 0, 0], -2)]]
    )
    rotation, metres, pct = track(poses, diagonal=0.5)
    np.testing.assert_allclose(rotation, [0, 30, 2], atol=1e-9)
    np.testing.assert_allclose(metres, [0, 0.05, 0], atol=1e-12)
    np.testing.assert_allclose(pct, [0, 10, 0], atol=1e-9)


def _qmul(a, b):
    av, aw, bv, bw = np.asarray(a[:3]), a[3], np.asarray(b[:3]), b[3]
    return np.array([*(aw * bv + bw * av + np.cross(av, bv)), aw * bw - av @ bv])


def _qrot(q, v):
    u, w = np.asarray(q[:3]), q[3]
    return np.asarray(v) + 2.0 * np.cross(u, np.cross(u, v) + w * np.asarray(v))


def _qconj(q):
    return np.array([-q[0], -q[1], -q[2], q[3]])


unit_quats = (
    st.lists(st.floats(-1, 1), min_size=4, max_size=4)
    .filter(lambda v: np.linalg.norm(v) > 0.1)
    .map(lambda v: np.asarray(v) / np.linalg.norm(v))
)
vectors = st.lists(st.floats(-1, 1), min_size=3, max_size=3).map(np.asarray)


@settings(max_examples=200, deadline=None)
@given(
    f0q=unit_quats,
    f1q=unit_quats,
    p0=vectors,
    p1=vectors,
    axis=st.sampled_from("XYZ"),
    angles=st.lists(st.floats(-170, 170), min_size=1, max_size=5),
    kind=st.sampled_from(["revolute", "prismatic"]),
)
def test_joint_coordinate_inverts_the_joint_frames(f0q, f1q, p0, p1, axis, angles, kind):
    """Law: a child posed at joint coordinate q (child-in-parent = frame0 * J(q) * frame1^-1) reads back q, for any
    joint frames and axis: degrees about the axis (revolute) or units along it (prismatic)."""
    from transfer.runs.validate import joint_coordinate

    unit = np.eye(3)["XYZ".index(axis)]
    poses = []
    for q in [0.0, *angles]:
        if kind == "revolute":
            jq, jt = np.array([*(unit * math.sin(math.radians(q) / 2)), math.cos(math.radians(q) / 2)]), np.zeros(3)
        else:
            jq, jt = np.array([0.0, 0.0, 0.0, 1.0]), unit * q / 100.0
        rot = _qmul(_qmul(f0q, jq), _qconj(f1q))  # child orientation in the parent
        pos = p0 + _qrot(f0q, jt) - _qrot(rot, p1)  # the child's frame1 origin lands on frame0 moved by J
        poses.append([*pos, *rot])
    frame0, frame1 = (*p0, *f0q), (*p1, *f1q)
    got = joint_coordinate(np.array(poses), _J(kind, axis=axis, frame0=frame0, frame1=frame1))
    want = np.array([0.0, *angles]) / (1.0 if kind == "revolute" else 100.0)
    if kind == "revolute":  # unwrapped from the first sample: equal up to whole turns between far-apart samples
        np.testing.assert_allclose((got - want + 180.0) % 360.0 - 180.0, 0.0, atol=1e-6)
    else:
        np.testing.assert_allclose(got, want, atol=1e-9)


def test_signed_motion_along_the_joint_axis_follows_the_parent_joint_frame():
    turn = np.array([[0, 0, 0, *_quat([0, 0, 1], a)] for a in (0, 100, 200, 250)])  # unwrapped past 180 deg
    np.testing.assert_allclose(along_axis(turn, _J("revolute", axis="Z")), [0, 100, 200, 250], atol=1e-9)
    back = np.array([[0, 0, 0, *_quat([0, 0, 1], a)] for a in (0, -40)])
    np.testing.assert_allclose(along_axis(back, _J("revolute", axis="Z")), [0, -40], atol=1e-9)
    np.testing.assert_allclose(along_axis(turn, _J("revolute", axis="X")), [0, 0, 0, 0], atol=1e-9)
    rolled = _J("revolute", axis="X", frame0=(0, 0, 0, *_quat([0, 1, 0], -90)))  # joint x along parent z
    np.testing.assert_allclose(along_axis(turn[:2], rolled), [0, 100], atol=1e-9)
    slide = np.array([[0, 0, 0, 0, 0, 0, 1], [-0.3, 0.1, 0, 0, 0, 0, 1]])
    np.testing.assert_allclose(along_axis(slide, _J("prismatic", axis="X")), [0, -0.3], atol=1e-12)


def test_mujoco_warnings_go_to_logging_not_to_a_file_in_the_working_directory(tmp_path, monkeypatch, caplog):
    """Every Newton path imports transfer.backends.newton, which routes MuJoCo's warnings (replay, inspect, verify,
    train too): an unstable MuJoCo step logs at ERROR under transfer.backends and writes no MUJOCO_LOG.TXT."""
    pytest.importorskip("newton")
    import logging

    import mujoco

    import transfer.backends.newton  # noqa: F401  (installs the handler)
    from transfer.backends._mujoco_log import LOGGER

    monkeypatch.chdir(tmp_path)
    model = mujoco.MjModel.from_xml_string(
        '<mujoco><worldbody><body><joint type="hinge"/><geom size=".1"/></body></worldbody></mujoco>'
    )
    data = mujoco.MjData(model)
    data.qpos[:] = float("nan")
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        mujoco.mj_step(model, data)
    (record,) = [r for r in caplog.records if r.name == LOGGER]
    assert record.levelno == logging.ERROR and "The simulation is unstable" in record.getMessage()
    assert not list(tmp_path.iterdir())
